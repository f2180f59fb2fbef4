/* The CPU backend's SGEMM: a packed, cache-blocked driver (gemm.c) around one register-tiled
 * microkernel per ISA. This header is the contract between the driver and the microkernels; an
 * ISA port (NEON, WebAssembly SIMD128, ...) supplies one lithe__sgemm_kernel and nothing else.
 *
 *   C (M, N) = alpha * op(A) (M, K) · op(B) (K, N) + beta * C      [+ bias (N) on every row] [act]
 *
 * Blocking (BLIS's loop nest, row-major):
 *   for jc over N in steps of nc            B panel  kc x nc  packed once per (jc, pc)   (L3)
 *     for pc over K in steps of kc
 *       pack op(B)[pc:pc+kc, jc:jc+nc]      into NR-wide slivers, zero-padded to NR
 *       for ic over M in steps of mc        A block  mc x kc  packed once per (ic, pc)   (L2)
 *         pack op(A)[ic:ic+mc, pc:pc+kc]    into MR-tall slivers, zero-padded to MR
 *         for jr over nc in steps of NR     B sliver kc x NR                             (L1)
 *           for ir over mc in steps of MR   ukernel(mr, nr, kc, A sliver, B sliver, C tile)
 *   (the jr and ir loops swap where the B panel is small, kc x nc <= 512 KB: short K, as in
 *   convolutions; C is then written MR rows at a time, run_range's rows_outer)
 * The first K block applies the caller's beta, later ones beta = 1; the last applies the
 * epilogue (bias, activation). Transposes are absorbed by the packing: no operand is copied
 * whole. Packed panels live in per-thread workspaces the backend keeps across calls.
 *
 * Packed layouts (what a microkernel reads):
 *   A sliver: kc x MR floats, a[k * MR + i] = op(A)[ir + i, pc + k]  (rows past M are 0)
 *   B sliver: kc x NR floats, b[k * NR + j] = op(B)[pc + k, jr + j]  (columns past N are 0)
 * Consecutive slivers follow each other (A: MR * kc floats apart, B: NR * kc) from 64-byte
 * aligned panels, so a B sliver is 64-byte aligned when NR is a multiple of 16 (AVX2's and
 * AVX-512's aligned loads rely on it); A slivers are read by broadcasts and carry no alignment.
 *
 * Threads split C's columns (or, when N is narrow, its rows) into ranges at multiples of NR
 * (MR); never K. A C element is computed by the same operations in the same order whatever its
 * range, tile or position in a tile, so results are bit-identical for every thread count. */
#ifndef LITHE_CPU_GEMM_H
#define LITHE_CPU_GEMM_H

#include "../../../core/backend.h"

#include <stddef.h>

/* What the microkernel does with its accumulator acc (mr x nr) when it writes the C tile:
 *   t = alpha * acc[i][j];  if (beta != 0) t += beta * c[i * ldc + j];  if (bias) t += bias[j];
 *   c[i * ldc + j] = t
 * beta == 0 never reads C (NaN or garbage there is ignored). The scalar twin rounds every step;
 * an ISA may fuse `t += beta * c` into one FMA. */
typedef struct lithe__sgemm_ukparams {
    float alpha;
    float beta;
    const float *bias; /* NULL, or nr floats (already offset to the tile's first column) */
    /* Optional (kernels with clamp_ok only; 0 elsewhere): the value t of the write rule is clamped
     * before the store, with the act kernel's exact bits (relu and a clipped linear of slope 1 and
     * offset 0, backends/cpu/scalar/act.c), so that a fused relu / ReLU6 costs no pass over C:
     *   LITHE__SGEMM_CLAMP_RELU:  c = t <= 0 ? 0 : t             (Thinc's relu: NaN stays NaN, -0 -> +0)
     *   LITHE__SGEMM_CLAMP_CLIP:  y = t * 1 + 0 (-0 -> +0);  c = y < lo ? lo : (y > hi ? hi : y)
     *                             only with lo <= hi (neither NaN): then max(lo, min(hi, y)).
     *   LITHE__SGEMM_CLAMP_HSWISH: c = t * (clip(t + 3, 0, 6) / 6)   (the act kernel's HardSwish,
     *                             LITHE__ACT_HARD_SWISH_MOBILENET: clip(u) = max(0, min(6, u)), NaN
     *                             kept; an IEEE division by 6; lo and hi unused) */
    int clamp;
    float lo, hi;
    /* Optional (kernels with bias_rows_ok only; NULL elsewhere): mr floats, row i's added to the row's values
     * after the column bias and before the clamp, one rounding each (t + bias_rows[i]): gemm.c's
     * bias_after in the store instead of add_tile's pass over the stored tile, the same bits. */
    const float *bias_rows;
} lithe__sgemm_ukparams;
enum { LITHE__SGEMM_CLAMP_NONE = 0, LITHE__SGEMM_CLAMP_RELU, LITHE__SGEMM_CLAMP_CLIP, LITHE__SGEMM_CLAMP_HSWISH };

/* The microkernel: C tile (mr x nr, row stride ldc) from kc >= 1 steps of a packed A sliver and
 * a packed B sliver. 1 <= mr <= MR, 1 <= nr <= NR; a partial tile (mr < MR or nr < NR) must
 * compute each element exactly as a full tile does (compute the full tile, store the corner),
 * because which elements land in partial tiles depends on the thread split.
 * acc[i][j] is accumulated over k = 0, 1, ..., kc - 1 in that order, one multiply-add per step
 * (an FMA, or a rounded multiply then a rounded add: one choice per kernel). */
typedef void (*lithe__sgemm_ukernel_fn)(size_t mr, size_t nr, size_t kc, const float *a, const float *b, float *c,
                                        size_t ldc, const lithe__sgemm_ukparams *p);

/* Optional: the microkernel reading its B sliver where it lies in an untransposed op(B) instead of
 * packed: step k's NR floats at b + k * ldb (B's row stride; unaligned), otherwise ukernel's
 * contract and bits exactly. The driver uses it (run_range's in_place) for whole slivers (nr = NR)
 * of every K block without a bias step (or whose row bias can be added after the store: gemm.c's
 * bias_after) when op(B) = B is read as given (no packed-ahead panels, no row pointers, no
 * transposed store), one A block meets each sliver (M within mc) or the B panel stays in L2
 * (gemm.c's ROWS_OUTER_FLOATS), B is 64-byte
 * aligned and its row stride a multiple of 16 floats but not of 1024; such a product packs only A.
 * It also adds p->bias_rows where given (bias_rows_ok: the bias_after row bias, in its store). */
typedef void (*lithe__sgemm_ukernel_b_fn)(size_t mr, size_t nr, size_t kc, const float *a, const float *b, size_t ldb,
                                          float *c, size_t ldc, const lithe__sgemm_ukparams *p);

/* Optional: the microkernel reading its A sliver where it lies instead of packed: step k's MR
 * values at rows[k] + off (contiguous; all MR of them must be readable, also where mr < MR),
 * otherwise ukernel's contract and bits exactly. lithe__sgemm_pixels uses it for whole A slivers
 * (MR pixels inside one output row) of a product whose N fits one B sliver (N <= NR: each A
 * sliver is read once either way) or whose pixels are all one row (a pointwise convolution's input
 * planes, slivers of 12 rows or more), so a convolution's taps are broadcast straight from its padded
 * input: such a product packs no A (LeNet's second convolution, 196 x 32 x 400 per image). The
 * driver also reads a small transposed op(A) with it (run_range's a_read: rows[k] = A's row k, off
 * the sliver's first column; whole slivers only). */
typedef void (*lithe__sgemm_ukernel_ap_fn)(size_t mr, size_t nr, size_t kc, const float *const *rows, int64_t off,
                                           const float *b, float *c, size_t ldc, const lithe__sgemm_ukparams *p);

/* Optional: the microkernel reading its B sliver where it lies: step k's NR values at rows[k] + off
 * (contiguous; all NR of them must be readable, also where nr < NR), otherwise ukernel's contract
 * and bits exactly (lithe__sgemm_rows_direct). */
typedef void (*lithe__sgemm_ukernel_bp_fn)(size_t mr, size_t nr, size_t kc, const float *a, const float *const *rows,
                                           int64_t off, float *c, size_t ldc, const lithe__sgemm_ukparams *p);

/* Optional: the microkernel reading its A sliver where it lies in an untransposed op(A) instead of
 * packed: step k of the tile's row i at a[i * lda + k], only rows i < mr read (the missing rows of
 * a partial tile repeat row 0: computed, never stored), otherwise ukernel's contract and bits
 * exactly. The driver uses it for X·Wᵀ with few rows X (a dense layer's forward at a training
 * batch, where W changes every step): it computes the product's transpose W·Xᵀ with W as this A,
 * read where it lies, Xᵀ packed as B and C stored transposed (lithe__sgemm's "swapped" path), so
 * Wᵀ is never packed; and for a small op(A) or one whose product has one B sliver (run_range's
 * a_read: attention's per-head products), where packing A would only copy it. */
typedef void (*lithe__sgemm_ukernel_a_fn)(size_t mr, size_t nr, size_t kc, const float *a, size_t lda, const float *b,
                                          float *c, size_t ldc, const lithe__sgemm_ukparams *p);

/* Optional packing of one sliver (NULL: the driver's portable loops). lanes <= R valid lanes
 * (R = MR for A, NR for B; the rest zero-filled), kc steps:
 *   rows: lane l, step k at src[l * ld + k]  (op(A) not transposed, op(B) transposed)
 *   else: lane l, step k at src[k * ld + l]  (op(A) transposed, op(B) not transposed)
 * into dst[k * R + l]. */
typedef void (*lithe__sgemm_pack_fn)(size_t lanes, size_t kc, const float *src, size_t ld, bool rows, float *dst);

/* Optional matrix-vector kernels for M = 1, reading W where it lies (no packing):
 *   gemv_t: y[j] = x · W[j, :]  (w[j * ldw + k]: x · Wᵀ, the dense layers' forward)
 *   gemv_n: y[j] = x · W[:, j]  (w[k * ldw + j]: x · W, their dX)
 * Each y[j] must have the bits the microkernel gives C[i][j] for the same row of op(A):
 * the sum over k in blocks of kc (the kernel's kc), each block accumulated from 0 in k order
 * with the microkernel's multiply-add, then per block the write rule with beta for the first
 * block and 1 after it, and bias (NULL or n floats) after the last. (lithe promises that a
 * batch and its rows one at a time give the same bits; test_gemm and test_layers check it.)
 * Threads split j. NULL: M = 1 runs through the packed path. With op(B) packed ahead
 * (lithe__sgemm_prepacked), M = 1 streams the packed slivers instead (the kernel's urow; a
 * kernel without one keeps this GEMV, reading B where it lies), which beats the shuffle-bound
 * GEMV. */
typedef void (*lithe__sgemv_fn)(size_t n, size_t k, size_t kc, float alpha, const float *x, const float *w,
                                size_t ldw, float beta, float *y, const float *bias);

/* Optional: gemv_t for 2 <= m <= LITHE__SGEMV_ROWS rows of x at once (row i at x + i * ldx, its
 * y at y + i * ldy): each y row gets gemv_t's bits (so the microkernel's), W read where it lies
 * and each block of it transposed once for the m rows. The driver uses it for X·Wᵀ with 2 to 4
 * rows X (batch 2-4 inference, W not packed ahead), where packing Wᵀ in every call cost more than
 * the product (1.6 MB of W for 2-4 rows). NULL: such products run through the packed path. */
#define LITHE__SGEMV_ROWS 4
typedef void (*lithe__sgemv_rows_fn)(size_t m, size_t n, size_t k, size_t kc, float alpha, const float *x, size_t ldx,
                                     const float *w, size_t ldw, float beta, float *y, size_t ldy, const float *bias);

/* Optional one-row microkernel for op(B) packed ahead (M = 1 of a prepared weight): x (kc
 * contiguous floats: one row of op(A), one K block) against ns >= 1 consecutive packed B slivers
 * (b: sliver s at b + s * kc * NR), writing ns * NR columns of C (c: one row; the last sliver
 * nr_last <= NR wide; p->bias NULL or offset to c's first column). Each C element must have the
 * bits the microkernel gives it in a row of a tile: accumulated from 0 over k in order with its
 * multiply-add, then its write rule. It exists to keep enough accumulators busy with one row
 * (the microkernel would compute MR rows for one). */
typedef void (*lithe__sgemm_urow_fn)(size_t ns, size_t nr_last, size_t kc, const float *x, const float *b, float *c,
                                     const lithe__sgemm_ukparams *p);

/* A kernel: its tile, its cache blocking, the microkernel and the optional helpers. Blocking
 * must satisfy mc % mr == 0 and nc % nr == 0. */
typedef struct lithe__sgemm_kernel {
    const char *isa; /* "scalar", "avx2", "avx512", "neon", "wasmsimd", ... (LITHE_CPU_ISA names) */
    int mr, nr;
    int mc, kc, nc;
    lithe__sgemm_ukernel_fn ukernel;
    lithe__sgemm_pack_fn pack_a, pack_b; /* optional */
    lithe__sgemv_fn gemv_t, gemv_n;      /* optional */
    lithe__sgemv_rows_fn gemv_tm;        /* optional: gemv_t for 2..LITHE__SGEMV_ROWS rows */
    /* Optional: the kernel of the same ISA and NR to run a product of M rows with (several MR
     * cut M's last sliver differently). Every variant must give the same bits per element. */
    const struct lithe__sgemm_kernel *(*for_rows)(int64_t M);
    lithe__sgemm_urow_fn urow; /* optional: M = 1 with op(B) packed ahead (NULL: the microkernel) */
    lithe__sgemm_ukernel_b_fn ukernel_b; /* optional: op(B) untransposed, read in place (NULL: packed) */
    lithe__sgemm_ukernel_ap_fn ukernel_ap; /* optional: lithe__sgemm_pixels' A read in place (NULL: packed) */
    lithe__sgemm_ukernel_bp_fn ukernel_bp; /* optional: lithe__sgemm_rows_direct's B read in place */
    lithe__sgemm_ukernel_a_fn ukernel_a; /* optional: op(A) untransposed, read in place (NULL: packed) */
    /* Optional helpers of lithe__sgemm_pixels (NULL: the driver's portable loops):
     *   pack_a_ptrs: an A sliver whose step k's lanes are contiguous at rows[k] + off:
     *     dst[k * MR + l] = rows[k][off + l] for l < lanes, 0 for lanes <= l < MR;
     *   transpose: dst[j * ldd + i] = src[i * lds + j] for i < rows, j < cols (a C tile into a
     *     transposed C and back; rows, cols <= 64). */
    void (*pack_a_ptrs)(size_t lanes, size_t kc, const float *const *rows, int64_t off, float *dst);
    /*   pack_segs: a sliver (R = MR or NR lanes) of pixels across output rows, in nseg chunks, each
     *     inside one group of 16 lanes (lane[s] / 16 == (lane[s] + len[s] - 1) / 16):
     *     dst[k * R + lane[s] + l] = rows[k][off[s] + l] for l < len[s], every lane no chunk covers 0; */
    void (*pack_segs)(size_t R, size_t kc, const float *const *rows, size_t nseg, const int64_t *off,
                      const size_t *lane, const size_t *len, float *dst);
    void (*transpose)(size_t rows, size_t cols, const float *src, size_t lds, float *dst, size_t ldd);
    /* Optional (conv/backward.c's dW, col's A slivers from the taps' shifted rows; NULL: its scalar
     * loop): dst[k * MR + l] = rows[l][off + k] for k < kc and l < lanes, 0 for lanes <= l < MR;
     * reads nothing past rows[l] + off + kc - 1 and writes nothing past dst + kc * MR. */
    void (*pack_a_taps)(size_t lanes, size_t kc, const float *const *rows, int64_t off, float *dst);
    /* Optional (NULL: conv/backward.c keeps taps as A's lanes): pack_a_taps with NR lanes, B's
     * sliver (dW with the filters as the tile's rows, where they fill fewer lanes than the taps). */
    void (*pack_b_taps)(size_t lanes, size_t kc, const float *const *rows, int64_t off, float *dst);
    /* ukernel, ukernel_b and urow apply lithe__sgemm_ukparams' clamp: the driver then passes a
     * relu / clip epilogue act in the last K block instead of the act kernel over each stored tile
     * row (false: they ignore it and the act runs after the store, the same bits). */
    bool clamp_ok;
    /* ukernel and ukernel_b add lithe__sgemm_ukparams' bias_rows in their store: the driver then
     * drops a single K block's bias step (a row bias with alpha 1, beta 0, no column bias: the bias
     * step's fma(b, 1, acc) is acc + b, one rounding, the store's add); false: they ignore it. The
     * driver uses it only in builds whose LITHE__SGEMM_FORM_ukernel_b is nonzero (x86-64). */
    bool bias_rows_ok;
    /* Optional (NULL: the driver's portable loop): one rounded add of a residual block
     * (lithe__sgemm_epilogue's res) into a stored C block in L1,
     *   c[i * ldc + j] = first ? r + c : c + r,  r = rv[i * ldr + j]  (i < rows, j < cols). */
    void (*add_tile)(size_t rows, size_t cols, float *c, size_t ldc, const float *rv, size_t ldr, bool first);
} lithe__sgemm_kernel;

/* The epilogue of a fused GEMM (gemm_bias_act): after the last K block of a tile,
 *   Z = tile + bias (through the microkernel's bias), stored in Z when Z is not C;
 *   C = act(Z) when act is set (act_fn over each tile row, in L1; or, when the kernel has
 *       clamp_ok, Z is NULL and act is a relu or a clamp (lithe__sgemm_act_clamp), inside the
 *       microkernel's store of the last K block: the same bits, C written once).
 * bias NULL: none; act NULL: none; Z NULL: the pre-activation is not kept. */
typedef void (*lithe__act_fn)(const lithe__act *a, int64_t n, const float *X, float *Y);
typedef struct lithe__sgemm_epilogue {
    const float *bias;      /* (N,) or NULL */
    const lithe__act *act;  /* or NULL */
    lithe__act_fn act_fn;   /* the backend's act kernel (required with act) */
    float *Z;               /* (M, N), row stride ldz, or NULL */
    int64_t ldz;
    /* (M,) or NULL: bias_row[i] added to every element of row i (a convolution's per-filter bias)
     * before Z and act: on the packed path as one more product step after the K real ones (A's
     * column K = bias_row, B's row K = ones: one multiply-add per element in the microkernel), or,
     * with one K block and a kernel with bias_rows_ok, added in the kernel's store (the same bits);
     * M = 1 (GEMV) and K = 0 add it after the store. Within the rounding of adding it once. Only
     * with alpha = 1 and beta = 0 (as convolutions call it): the product step would scale it by
     * alpha where the after-store paths do not. */
    const float *bias_row;
    /* Optional residual (NULL: none; not with act or Z): after everything above, each element of C
     * gets one more rounded add, c = res_first ? r + c : c + r, r at res with C's layout and row
     * stride ldr (lithe__sgemm_pixels: transposed like its C, r of element (i, j) at res[j · ldr + i]),
     * while the tile is in L1: the bits of storing C and then adding the residual in a separate pass
     * (a graph's Conv then Add, fused; core/graph/fuse.c). */
    const float *res;
    int64_t ldr;
    bool res_first;
} lithe__sgemm_epilogue;

/* The microkernel clamp (ukparams' clamp, lo, hi) giving act's bits, when it has one: relu, and a
 * clipped linear of slope 1, offset 0 and min <= max, neither bound -0 (ReLU6, ONNX Clip). False
 * otherwise (NULL outputs: not written). */
bool lithe__sgemm_act_clamp(const lithe__act *act, int *clamp, float *lo, float *hi);
/* That clamp on one value, as the act kernel writes relu and clip (backends/cpu/scalar/act.c): the
 * scalar twins' (gemm_kernel.c, conv/qconv.c). */
static inline float lithe__sgemm_clamp1(int clamp, float lo, float hi, float t) {
    if (clamp == LITHE__SGEMM_CLAMP_RELU) return t <= 0.0f ? 0.0f : t; /* NaN stays NaN */
    if (clamp == LITHE__SGEMM_CLAMP_HSWISH) {
        float u = t + 3.0f;
        return t * ((u < 0.0f ? 0.0f : (u > 6.0f ? 6.0f : u)) / 6.0f);
    }
    float y = t * 1.0f + 0.0f;
    return y < lo ? lo : (y > hi ? hi : y);
}

/* Which optional members the kernels compiled into this build have, as constants: 0 where no
 * kernel of the build sets the member, 1 where some may, 2 where every one does. The driver tests
 * LITHE__SGEMM_HAS(k, member) rather than the pointer alone, so that its paths for a form no kernel
 * has, and its portable fall-backs for a helper every kernel has, compile away: WebAssembly's
 * SIMD128 and scalar kernels (and NEON) have none of the operand forms read in place (7.2 KB of the
 * npm package's SIMD128 module), and that module (LITHE_SIMD_ONLY: the SIMD128 kernel alone, which
 * packs its own slivers) needs no portable packing (3.2 KB; docs/wasm.md). An ISA port that fills
 * one in sets it here too (test_gemm_ukernels fails a kernel whose members the build's values deny). */
#if defined(__x86_64__) || defined(_M_X64) /* gemm_avx2.c: ukernel_a, ukernel_bp, transpose; gemm_avx512.c: all */
#define LITHE__SGEMM_FORM_ukernel_b 1
#define LITHE__SGEMM_FORM_ukernel_ap 1
#define LITHE__SGEMM_FORM_ukernel_bp 1
#define LITHE__SGEMM_FORM_ukernel_a 1
#define LITHE__SGEMM_FORM_pack_a_ptrs 1
#define LITHE__SGEMM_FORM_pack_segs 1
#define LITHE__SGEMM_FORM_transpose 1
#define LITHE__SGEMM_FORM_add_tile 1
#define LITHE__SGEMM_FORM_pack_a_taps 1
#define LITHE__SGEMM_FORM_pack_b_taps 1 /* gemm_avx512.c */
#define LITHE__SGEMM_FORM_gemv_tm 1 /* gemm_avx2.c */
#else /* scalar, NEON, WebAssembly SIMD128 */
#define LITHE__SGEMM_FORM_gemv_tm 0
#define LITHE__SGEMM_FORM_ukernel_b 0
#define LITHE__SGEMM_FORM_ukernel_ap 0
#define LITHE__SGEMM_FORM_ukernel_bp 0
#define LITHE__SGEMM_FORM_ukernel_a 0
#define LITHE__SGEMM_FORM_pack_a_ptrs 0
#define LITHE__SGEMM_FORM_pack_segs 0
#define LITHE__SGEMM_FORM_transpose 0
#define LITHE__SGEMM_FORM_add_tile 0
#define LITHE__SGEMM_FORM_pack_a_taps 0
#define LITHE__SGEMM_FORM_pack_b_taps 0
#endif
#if defined(LITHE_SIMD_ONLY) && defined(__wasm_simd128__) /* gemm_wasmsimd.c's kernels alone (gemm.c) */
#define LITHE__SGEMM_FORM_pack_a 2
#define LITHE__SGEMM_FORM_pack_b 2
#else /* the scalar and NEON kernels pack through the driver's loops */
#define LITHE__SGEMM_FORM_pack_a 1
#define LITHE__SGEMM_FORM_pack_b 1
#endif
#define LITHE__SGEMM_HAS(k, member)                                                                               \
    (LITHE__SGEMM_FORM_##member == 2 || (LITHE__SGEMM_FORM_##member && (k)->member != NULL))

/* Kernels, per ISA. Each returns NULL where the ISA is not compiled in or the CPU lacks it. */
const lithe__sgemm_kernel *lithe__sgemm_kernel_scalar(void);
const lithe__sgemm_kernel *lithe__sgemm_kernel_avx2(void);   /* gemm_avx2.c, x86-64 */
const lithe__sgemm_kernel *lithe__sgemm_kernel_avx512(void); /* gemm_avx512.c, x86-64 */
const lithe__sgemm_kernel *lithe__sgemm_kernel_neon(void);   /* gemm_neon.c, aarch64 (8 x 12) */
const lithe__sgemm_kernel *lithe__sgemm_kernel_wasmsimd(void); /* gemm_wasmsimd.c, -msimd128 builds (4 x 8) */

/* The kernel for an ISA name ("scalar", "avx2", "avx512", ...), NULL if this build or CPU lacks it. */
const lithe__sgemm_kernel *lithe__sgemm_kernel_named(const char *isa);
/* The kernel the backend uses: LITHE_CPU_ISA if set (and available; else the best below it),
 * else the best this CPU runs. Decided once. */
const lithe__sgemm_kernel *lithe__sgemm_kernel_best(void);

/* C = alpha * op(A) · op(B) + beta * C, then the epilogue (epi may be NULL), with kernel k
 * (NULL: the best) and the CPU pool's threads when use_threads. Row strides in elements.
 * Returns false only when a packing workspace cannot be allocated (C is then unspecified). */
bool lithe__sgemm(const lithe__sgemm_kernel *k, bool use_threads, bool transA, bool transB, int64_t M, int64_t N,
                  int64_t K, float alpha, const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                  float *C, int64_t ldc, const lithe__sgemm_epilogue *epi);

/* P products at once, each lithe__sgemm's (no epilogue), its bits too:
 *   C + p·sc = alpha · op(A + p·sa) · op(B + p·sb) + (p == 0 ? beta0 : beta) · (C + p·sc)
 * for p = 0 .. P - 1 (strides in elements; sa or sb 0: an operand every product shares). sc 0
 * writes every product into the one C, in p order (beta 1: their sum); otherwise the products' Cs
 * must not overlap. One set-up for all of them (the kernel for M's rows, a workspace per thread)
 * instead of one per product, and with threads the products split among them (each product on one
 * thread) where there are enough of them: attention's per-head products (core/graph/ops/matmul.c's
 * fused MatMulT: 32 of 64 x 64 x 32 per node at batch 8). Returns false as lithe__sgemm does.
 * (Not in the npm package's one-thread cores, LITHE_IMPORTERS_SEPARATE: gemm.c.) */
bool lithe__sgemm_batched(const lithe__sgemm_kernel *k, bool use_threads, bool transA, bool transB, int64_t P, int64_t M,
                          int64_t N, int64_t K, float alpha, const float *A, int64_t lda, int64_t sa, const float *B,
                          int64_t ldb, int64_t sb, float beta0, float beta, float *C, int64_t ldc, int64_t sc);

/* op(B) packed once, for products that reuse one B many times (weights prepared for inference,
 * lithe_model_prepare_inference): every K block's panel over all of N, in the B sliver layout
 * above. Panel pc (pc = 0, kc, 2 kc, ...) starts at data + pc * round_up(N, nr); in it, the
 * sliver of columns [j, j + nr) starts at j * kb (kb = that block's depth). So the driver reads
 * a (jc, pc) panel at data + pc * Npad + jc * kb and skips its packing; the bits are those of the
 * unpacked call (same kernel, same blocking, same order). Made for one kernel's nr and kc: a call
 * whose kernel differs (another ISA) packs as usual. 64-byte aligned. */
typedef struct lithe__sgemm_packed_b {
    int nr, kc;
    bool transB;
    int64_t K, N;
    size_t floats;
    float *data;
} lithe__sgemm_packed_b;

/* Packs op(B) (K, N; B's row stride ldb) for kernel k (NULL: the best). NULL when out of memory
 * (memory from lithe__aligned_alloc, the allocator hook). Free with lithe__sgemm_packed_b_free. */
lithe__sgemm_packed_b *lithe__sgemm_pack_b(const lithe__sgemm_kernel *k, bool transB, int64_t K, int64_t N,
                                           const float *B, int64_t ldb);
void lithe__sgemm_packed_b_free(lithe__sgemm_packed_b *p);
/* The most floats a compact GEMM packs of op(B) at once (gemm_compact.c: by blocks of columns). */
#define LITHE__COMPACT_PANEL_FLOATS ((size_t)65536)
/* gemm_compact.c: op(B) from a compact 2-D host tensor (float16, bfloat16, quantized int8 / uint8;
 * core/quant.c), decoded to float32 as it is packed for kernel k (the same panels as
 * lithe__sgemm_pack_b of the decoded floats); and lithe__sgemm with such a B (false: out of memory).
 * The products equal lithe__sgemm's on the decoded B, bit for bit. */
struct lithe_tensor;
lithe__sgemm_packed_b *lithe__sgemm_pack_b_compact(const lithe__sgemm_kernel *k, bool transB, int64_t K, int64_t N,
                                                   const struct lithe_tensor *B);
bool lithe__sgemm_compact(bool use_threads, bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha,
                          const float *A, int64_t lda, const struct lithe_tensor *B, float beta, float *C, int64_t ldc,
                          const lithe__sgemm_epilogue *epi);
/* Gives the packing workspaces the GEMM keeps between calls back to the allocator (those no call
 * holds now); lithe__cpu_cache_flush runs it, so lithe_set_allocator returns them to the allocator
 * that made them. */
void lithe__sgemm_release_workspaces(void);

/* lithe__sgemm with op(B) already packed (Bp NULL, or one made from this B with this transB, K
 * and N: then B is still read where the kernel reads it in place, the M = 1 GEMV). */
bool lithe__sgemm_prepacked(const lithe__sgemm_kernel *k, bool use_threads, bool transA, bool transB, int64_t M,
                            int64_t N, int64_t K, float alpha, const float *A, int64_t lda, const float *B,
                            int64_t ldb, const lithe__sgemm_packed_b *Bp, float beta, float *C, int64_t ldc,
                            const lithe__sgemm_epilogue *epi);

/* C = A · B with op(B) given row by row: element (k, j) at B_rows[k][(j / ow) · b_row + j % ow]
 * (K rows, anywhere: a convolution passes its taps' shifted views of its padded input, and ow,
 * b_row its output rows' width and their stride there, so that only the kept columns are packed;
 * ow = N: row k's N floats at B_rows[k]). A (M, K) row-major, not transposed, and beta = 0.
 * Packing, blocking, threads and the bits of every C element are lithe__sgemm's for the same op(B);
 * A is packed per call like there. */
bool lithe__sgemm_rows(const lithe__sgemm_kernel *k, bool use_threads, int64_t M, int64_t N, int64_t K, const float *A,
                       int64_t lda, const float *const *B_rows, int64_t ow, int64_t b_row, float *C, int64_t ldc,
                       const lithe__sgemm_epilogue *epi);

/* lithe__sgemm_rows (N = OH·ow: OH output rows of ow pixels, b_row apart in B's rows) with op(B) read
 * where it lies by the kernel's ukernel_bp, nothing of it packed: per output row, slivers of NR
 * pixels (the last one nr = what is left), B's step k at B_rows[k] + r·b_row + c0. The caller makes
 * NR - 1 floats past every pixel a tap reads readable (their lanes are computed and dropped), and
 * with epi->bias_row passes K + 1 row pointers, the last one ones wherever a pixel is read (the
 * bias step: A's column K = bias_row). Single-threaded. The bits of lithe__sgemm_rows for the same
 * operands. false (nothing written) where it does not apply: no ukernel_bp, K + 1 past the
 * kernel's kc or M past its mc, an epilogue other than bias_row and a clamp act (no Z, bias or res) the kernel applies
 * in its store, or no workspace. */
bool lithe__sgemm_rows_direct(const lithe__sgemm_kernel *k, int64_t M, int64_t OH, int64_t ow, int64_t K,
                              const float *A, int64_t lda, const float *const *B_rows, int64_t b_row, float *C,
                              int64_t ldc, const lithe__sgemm_epilogue *epi);

/* A convolution's output pixels as the product's rows (conv/gemm.c's "pixel rows" orientation):
 *   Cᵀ (M pixels, N filters) = op(A) (M, K) · op(B) (K, N) [+ bias (N)] [act],  beta = 0
 * op(A) is gathered from row pointers with the pixels' 2-D layout: element (i, k) at
 *   A_rows[k][(i / ow) · a_row + i % ow]
 * (output row i / ow, column i % ow of the tap's shifted view; pointwise: ow = M, A_rows[k] the
 * input's channel k). C is written transposed, element (i, j) at C[j · ldc + i] (NCHW: filter j's
 * plane): each microkernel tile goes to a small per-thread buffer (its rows being pixels), gets
 * the activation there while it is in L1, and is transposed into C (a later K block reads it back
 * first). op(B) may be packed ahead (Bp: lithe__sgemm_pack_b of this B, transB, K, N). epi: bias,
 * act and res only (Z and bias_row unsupported). Blocking, threads and the bits of each element are
 * lithe__sgemm's for the same operands. */
bool lithe__sgemm_pixels(const lithe__sgemm_kernel *k, bool use_threads, int64_t M, int64_t N, int64_t K,
                         const float *const *A_rows, int64_t ow, int64_t a_row, bool transB, const float *B, int64_t ldb,
                         const lithe__sgemm_packed_b *Bp, float *C, int64_t ldc, const lithe__sgemm_epilogue *epi);

#if defined(__wasm_simd128__)
#include <wasm_simd128.h>
/* LITHE__SGEMM_CLAMP_HSWISH on four lanes (gemm_wasmsimd.c's stores, conv_wasm_simd128.c's):
 * pmin(u, 6) = 6 < u ? 6 : u and pmax(v, 0) = v < 0 ? 0 : v of u = t + 3 keep NaN and -0, as the act
 * kernel's clip; then t * (u / 6). Inline in every store (+1.1 KB of the npm core): out of line
 * (issue 29), each call made V8 spill the tile's live accumulators, and the importer module's
 * direct convolution called it across into the core, a call per vector; the WASI build's wasm-opt
 * -O3 link had inlined it, emcc's -Os link did not (docs/wasm.md). */
static inline __attribute__((always_inline)) v128_t lithe__wasm_hswish(v128_t t) {
    v128_t u = wasm_f32x4_add(t, wasm_f32x4_splat(3.0f));
    u = wasm_f32x4_pmax(wasm_f32x4_pmin(u, wasm_f32x4_splat(6.0f)), wasm_f32x4_splat(0.0f));
    return wasm_f32x4_mul(t, wasm_f32x4_div(u, wasm_f32x4_splat(6.0f)));
}
/* lithe__sgemm_clamp1 on four lanes with the act kernel's selections (qconv_wasm.c's tile and
 * epilogue; gemm_wasmsimd.c's store through clampv): relu t <= 0 ? 0 : t is pmax(t, 0) + 0 (NaN stays
 * NaN, -0 to +0); clip y < lo ? lo : (y > hi ? hi : y) of y = t + 0 (the twin's t·1 + 0: -0 to +0)
 * is pmax(pmin(y, hi), lo) for lo <= hi, the bounds neither NaN nor -0 (lithe__sgemm_act_clamp):
 * two or three instructions where compares and bitselects took ten. */
static inline __attribute__((always_inline)) v128_t lithe__wasm_clamp(int clamp, float lo, float hi, v128_t t) {
    if (clamp == LITHE__SGEMM_CLAMP_RELU)
        return wasm_f32x4_add(wasm_f32x4_pmax(t, wasm_f32x4_splat(0.0f)), wasm_f32x4_splat(0.0f));
    if (clamp == LITHE__SGEMM_CLAMP_HSWISH) return lithe__wasm_hswish(t);
    v128_t y = wasm_f32x4_add(t, wasm_f32x4_splat(0.0f));
    return wasm_f32x4_pmax(wasm_f32x4_pmin(y, wasm_f32x4_splat(hi)), wasm_f32x4_splat(lo));
}
#endif

#endif
