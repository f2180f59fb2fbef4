/* The CPU backend's int8 GEMM (the gemm_q8 primitive): Y = act(A · dequant(W)ᵀ + b) with
 *   A (M, K) float32, quantized here per row to u7 (dynamic: qa = clamp(round(x / sa) + za, 0, 127),
 *     sa = (max(x, 0) - min(x, 0)) / 127, za = round(-min(x, 0) / sa); an all-zero row: sa 1, za 0);
 *   W (N, K) int8, symmetric (zero points 0), a scale per row sw[j] (or one for all), no -128;
 *   acc[i][j] = Σ_k qa[i][k] · W[j][k] in int32, exactly (K <= 131072: 127 · 127 · K < 2^31);
 *   y = (float)(acc - za[i] · Σ_k W[j][k]) * (sa[i] * sw[j]) (+ b[j]) (then act).
 * u7 × s8 keeps AVX2's vpmaddubsw exact (a pair sums to at most 2 · 127 · 127 < 2^15). Tiles of
 * MR x NR dot products over K in chunks of 16 (NEON, WebAssembly), 32 (AVX2) or 64 (VNNI) bytes; a microkernel per ISA with the scalar one as
 * its twin: every kernel's int32 sums are exact, so every kernel gives the same bits. The VNNI
 * kernel reads W packed instead (lithe__q8_pack, ptile below: a broadcast tile of PMR rows x PW
 * columns, no horizontal sums); so does the SIMD128 one (W widened to int16 once, its own layout). */
#ifndef LITHE_CPU_QGEMM_H
#define LITHE_CPU_QGEMM_H
#include <stddef.h>
#include <stdint.h>

#include "gemm.h"

enum { LITHE__Q8_MR = 4, LITHE__Q8_NR = 2, LITHE__Q8_KC = 32 };

/* acc[i * LITHE__Q8_NR + j] = Σ_{k < kw} a[i * lda + k] · w[j * ldw + k] for i < mr, j < nr
 * (mr <= MR, nr <= NR; a, w need no alignment; rows past mr / nr are not read). a's rows hold kw
 * rounded up to 64 bytes, zero past kw; w's rows are read only below kw (the last partial chunk
 * through a zeroed copy). */
typedef void (*lithe__q8_tile_fn)(size_t mr, size_t nr, size_t kw, const uint8_t *a, size_t lda, const int8_t *w,
                                  size_t ldw, int32_t *acc);
/* How a kernel reads a's bytes exactly: u7 codes only (0, the default: AVX2's vpmaddubsw sums a
 * pair into int16; relaxed SIMD's i7 operand), any u8 (scalar, VNNI, SIMD128's widening), or s8
 * (NEON's smull / sdot). The dynamic path writes u7 codes, which every kernel reads; static
 * activations (8-bit codes, lithe__q8_gemm_static) are shifted to s8 for an S8 kernel and split
 * in two u7 halves for a U7 one. */
enum { LITHE__Q8_A_U7 = 0, LITHE__Q8_A_U8 = 1, LITHE__Q8_A_S8 = 2 };
/* The epilogue of one row's n outputs (the driver's, after the tiles of up to LITHE__Q8_JC columns):
 *   y[c] = (float)(acc[c] - za · wsum[c]) * (sa * sw[per_col ? c : 0]) (+ bias[c] unless NULL)
 * in that order, each operation rounded to float32 (no fused multiply-add): every twin gives the
 * scalar one's bits (lithe__q8_epilogue_ref). */
typedef void (*lithe__q8_epi_fn)(size_t n, const int32_t *acc, int32_t za, const int32_t *wsum, float sa,
                                 const float *sw, bool per_col, const float *bias, float *y);
void lithe__q8_epilogue_ref(size_t n, const int32_t *acc, int32_t za, const int32_t *wsum, float sa, const float *sw,
                            bool per_col, const float *bias, float *y);
enum { LITHE__Q8_JC = 16 }; /* columns a row's epilogue covers at most (a multiple of NR) */
/* QuantizeLinear's codes of float activations, as u = code - (the dtype's lowest code):
 *   t = x / scale; t = t > hi ? hi : t; t = t >= lo ? t : lo (NaN to lo); u = round_even(t) + off
 * with lo = qmin - z, hi = qmax - z, off = z - (-128 for int8, 0 for uint8): each twin gives the
 * scalar one's bytes (lithe__q8_quant_ref) */
typedef struct lithe__q8_qx {
    float scale, lo, hi, off;
} lithe__q8_qx;
typedef void (*lithe__q8_quant_fn)(size_t n, const float *x, const lithe__q8_qx *q, uint8_t *u);
void lithe__q8_quant_ref(size_t n, const float *x, const lithe__q8_qx *q, uint8_t *u);
/* Targets whose best kernel reads W packed (x86-64: VNNI; WebAssembly SIMD128) */
#if defined(__x86_64__) || defined(_M_X64) || defined(__wasm_simd128__)
#define LITHE__Q8_PACKED 1
#endif
/* W packed ahead (lithe__q8_pack, once per weight): panels of LITHE__Q8_PW columns, panel p at
 * p * PW * lithe__q8_pack_col(K) bytes.
 *  - x86-64: each panel (the last one N % PW, rounded up to 16) K4 = ceil(K / 4) steps of nv =
 *    ceil(nc / 16) vectors of 16 columns x 4 consecutive k (64 bytes: column c's k..k+3 at 4c), zero
 *    past N and K: what one vpdpbusd takes against four bytes of a row of A broadcast;
 *  - WebAssembly SIMD128: W widened to int16 (what i32x4.dot_i16x8_s reads with no widening of its
 *    own), each panel groups of 4 columns (the last one zero past N), each group K8 = ceil(K / 8)
 *    steps of 4 columns x 8 consecutive k (64 bytes: column c's k..k+7 at 16c), zero past K. */
enum { LITHE__Q8_PW = 64, LITHE__Q8_PMR = 6 };
/* acc[i * LITHE__Q8_PW + c] = Σ_{k < 4 k4} a[i * lda + k] · W[c][k] for i < mr (<= PMR), c < nv · 16
 * (x86-64) or c < 4 ceil(nc / 4) (WebAssembly; nc <= PW: the panel's columns), W the panel wp; a's
 * rows zero from K to 4 k4 (WebAssembly: to 8 ceil(k4 / 2)) */
typedef void (*lithe__q8_ptile_fn)(size_t mr, size_t nc, size_t k4, const uint8_t *a, size_t lda, const int8_t *wp,
                                   int32_t *acc);
typedef struct lithe__q8_kernel {
    const char *isa;
    lithe__q8_tile_fn tile; /* NULL in a U8 kernel with a ptile (SIMD128's): the driver never takes it */
    int a_codes; /* LITHE__Q8_A_* */
    lithe__q8_epi_fn epi; /* its epilogue; NULL: lithe__q8_epilogue_ref */
    lithe__q8_quant_fn quant; /* its quantize pass (static activations from float); NULL: lithe__q8_quant_ref */
#if defined(LITHE__Q8_PACKED)
    /* its tile over W packed (lithe__q8_pack; a U8 kernel), which the driver takes instead of tile
     * where set; NULL: tile only (targets with LITHE__Q8_PACKED only) */
    lithe__q8_ptile_fn ptile;
#define LITHE__Q8_NO_PTILE , NULL /* the end of an initializer of a kernel without one, any target */
#else
#define LITHE__Q8_NO_PTILE
#endif
} lithe__q8_kernel;
#if defined(LITHE__Q8_PACKED)
/* the bytes of one column of W (N, K) packed */
static inline size_t lithe__q8_pack_col(int64_t K) {
#if defined(__wasm_simd128__)
    return (size_t)(K + 7) / 8 * 16;
#else
    return (size_t)(K + 3) / 4 * 4;
#endif
}
/* lithe__q8_pack's bytes for W (N, K), and the packing; the packed tile's scalar twin (the tests') */
size_t lithe__q8_pack_size(int64_t N, int64_t K);
void lithe__q8_pack(int64_t N, int64_t K, const int8_t *W, int64_t ldw, int8_t *wp);
void lithe__q8_ptile_ref(size_t mr, size_t nc, size_t k4, const uint8_t *a, size_t lda, const int8_t *wp, int32_t *acc);
#endif
const lithe__q8_kernel *lithe__q8_kernel_scalar(void);
const lithe__q8_kernel *lithe__q8_kernel_avx2(void); /* NULL where the CPU (or the build) lacks AVX2 */
const lithe__q8_kernel *lithe__q8_kernel_vnni(void); /* AVX-512 VNNI; NULL where it is missing */
const lithe__q8_kernel *lithe__q8_kernel_neon(void);    /* aarch64 (qgemm_neon.c); NULL elsewhere */
const lithe__q8_kernel *lithe__q8_kernel_neondot(void); /* aarch64 + dotprod (HWCAP_ASIMDDP); NULL without */
/* WebAssembly SIMD128 (isa "wasmsimd"), or relaxed SIMD in -mrelaxed-simd builds ("wasmrelaxed");
 * NULL in other builds (qgemm_wasmsimd.c) */
const lithe__q8_kernel *lithe__q8_kernel_wasmsimd(void);
/* The SIMD128 tile (codes widened: any u8) in -mrelaxed-simd builds too, where static codes take it
 * (lithe__q8_gemm_static: the relaxed tile's i7 operand would read them in two halves); the same as
 * lithe__q8_kernel_wasmsimd() in SIMD128 builds; NULL in other builds (qgemm_wasmsimd.c) */
const lithe__q8_kernel *lithe__q8_kernel_wasmsimd_u8(void);
/* Follows the float GEMM's ISA (LITHE_CPU_ISA): AVX-512 VNNI, AVX2, NEON dot product, NEON,
 * WebAssembly SIMD128 / relaxed SIMD, scalar; NULL in WebAssembly builds without SIMD128
 * (lithe__q8_gemm then answers 1: the float path). */
const lithe__q8_kernel *lithe__q8_kernel_best(void);

/* W's row sums (N of them, for the activations' zero points); false when W holds -128 (outside
 * the symmetric range: the caller runs the float path). */
bool lithe__q8_row_sums(int64_t N, int64_t K, const int8_t *W, int64_t ldw, int32_t *wsum);
/* Whether every adjacent pair of W's codes (k even, k + 1 of a row) has positive parts summing to
 * at most 128 and negative parts summing to at most 128 (onnxruntime's reduce_range weights, |w| <=
 * 64, always do): then 8-bit codes u <= 255 pair with them into int16 without saturation
 * (255 · 128 < 2^15), so AVX2's u7 kernel (vpmaddubsw: any u8 read, only a pair's sum saturates)
 * takes static codes whole, in one pass, instead of in two halves (not relaxed SIMD's, whose i7
 * operand is undefined past 127). Stops at the first pair that does not fit (AVX2 where the CPU has it). */
bool lithe__q8_pairs_fit(int64_t N, int64_t K, const int8_t *W, int64_t ldw);
bool lithe__q8_pairs_fit_ref(int64_t N, int64_t K, const int8_t *W, int64_t ldw); /* its scalar twin */
#if defined(__x86_64__) || defined(_M_X64)
bool lithe__q8_pairs_fit_avx2(int64_t N, int64_t K, const int8_t *W, int64_t ldw); /* qgemm_avx2.c */
/* the epilogue's AVX2 twin (qgemm_avx2.c; the AVX2 and VNNI kernels' epi) */
void lithe__q8_epilogue_avx2(size_t n, const int32_t *acc, int32_t za, const int32_t *wsum, float sa, const float *sw,
                             bool per_col, const float *bias, float *y);
void lithe__q8_quant_avx2(size_t n, const float *x, const lithe__q8_qx *q, uint8_t *u); /* its quantize pass */
#endif
/* The product with kernel k (NULL: the best). W (N, K) row stride ldw, its row sums wsum, W
 * packed (lithe__q8_pack: what a kernel with a ptile reads; NULL: packed here, per call, where the
 * kernel has one; other kernels read W), scales sw (n_scales = N or 1). Returns 0 done, 1 not
 * applicable (K too large, a non-finite input: the caller runs the float path), -1 out of memory. */
int lithe__q8_gemm(const lithe__q8_kernel *k, bool use_threads, int64_t M, int64_t N, int64_t K, const float *A,
                   int64_t lda, const int8_t *W, int64_t ldw, const int32_t *wsum, const int8_t *wp, const float *sw,
                   int64_t n_scales, const float *bias,
                   const lithe__act *act, lithe__act_fn act_fn, float *Z, float *Y, int64_t ldy);
/* The same with static activations (issue 24 item 3): A (M, K) given as 8-bit codes at row stride
 * lda (int8 when a_signed, else uint8) whose value is sa * (code - za), one scale and zero point
 * for the whole tensor (calibrated ahead: no per-row quantization here). Every kernel's int32 sums
 * stay exact (see a_codes; a u7 kernel takes the codes whole where lithe__q8_pairs_fit holds for W,
 * else in two halves). pairs_fit: lithe__q8_pairs_fit(N, K, W, ldw) when the caller keeps it with W
 * (1 or 0), or -1: computed here when the kernel needs it. Returns as lithe__q8_gemm. */
int lithe__q8_gemm_static(const lithe__q8_kernel *k, bool use_threads, int64_t M, int64_t N, int64_t K,
                          const uint8_t *A, bool a_signed, int64_t lda, float sa, int32_t za, const int8_t *W,
                          int64_t ldw, const int32_t *wsum, const int8_t *wp, int pairs_fit, const float *sw,
                          int64_t n_scales, const float *bias, const lithe__act *act, lithe__act_fn act_fn, float *Z,
                          float *Y, int64_t ldy);
/* The same with A (M, K) float32 at row stride lda, quantized here as QuantizeLinear computes it
 * (codes clamp(rint(x / sa) + za, qmin, qmax), NaN to qmin; int8 codes when a_signed, else uint8)
 * by the kernel's quantize pass, straight into the kernel's rows: the product of those codes, as
 * lithe__q8_gemm_static gives it. Returns as lithe__q8_gemm (1 also for a bad sa, za, qmin, qmax). */
int lithe__q8_gemm_static_f32(const lithe__q8_kernel *k, bool use_threads, int64_t M, int64_t N, int64_t K,
                              const float *A, int64_t lda, float sa, int32_t za, int32_t qmin, int32_t qmax,
                              bool a_signed, const int8_t *W, int64_t ldw, const int32_t *wsum, const int8_t *wp,
                              int pairs_fit, const float *sw, int64_t n_scales, const float *bias,
                              const lithe__act *act, lithe__act_fn act_fn, float *Z, float *Y, int64_t ldy);
#endif
