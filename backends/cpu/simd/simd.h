/* The CPU backend's vectorised elementwise, row-wise and optimizer kernels: one table per
 * instruction set, filled from one source (simd/elem.c) compiled once per ISA with GCC/clang vector
 * extensions, so every ISA runs the same arithmetic in the same order.
 *
 *   x86-64:      avx512 (64-byte vectors), avx2 (+FMA, 32), sse2 (16): chosen at run time by CPU
 *                features, or forced by LITHE_CPU_ISA=scalar|sse2|avx2|avx512;
 *   aarch64:     neon (16 bytes); WebAssembly with -msimd128: wasm_simd128 (16), at build time;
 *   elsewhere:   the scalar twins (scalar/) behind the same table.
 *
 * Exactness against the scalar twins (tests/simd_tables.h, run by test_simd and, as plain C natively
 * and under WASI for wasm_simd128, test_simd_tables, checks every variant the build has):
 *   - bit-identical: binary (add, sub, mul, div), add_row, sum_rows, axpby, mul, adam, radam, update_averages, adam_step, relu and the
 *     hard / clipped activations and every activation backward that reads only Y (relu, sigmoid,
 *     tanh), dish forward, maxout, gather / scatter-add, the exact unary ops (sqrt, neg, abs,
 *     reciprocal) and their backwards; layernorm_backward's dG / db; the depthwise-convolution plane (dwconv_taps), its channels-in-lanes blocks (dwconv_lanes), the 3x3 read in place (dwconv3x3), copy_rows and split_rows;
 *   - within a bound: kernels that call exp. The vector exp (lithe__vexp) is within 2 ulp of the
 *     correctly rounded expf over [-87.3, 88.7] (normal results; subnormal results within 1e-45
 *     absolute), its tanh within 8 ulp or 1e-9 absolute; sigmoid, swish, gelu (and backwards),
 *     softmax, log_softmax and unary exp / erf-backward follow with relative error <= 2e-6 of the
 *     scalar twin (tests use 4e-6 + 1e-37 absolute), but gelu (and its backward), whose 1 + erf
 *     cancels for negative inputs, within 5e-7 absolute (2e-6 for the backward);
 *   - row sums kept in double as the scalar twins keep them (softmax, layernorm), in lane order
 *     rather than element order: within 1 float ulp of the scalar twin.
 * mish and dish's backward, and the unary log / erf, have no vector form: the tables call the
 * scalar twins for them. */
#ifndef LITHE_CPU_SIMD_H
#define LITHE_CPU_SIMD_H

#include "../kernels.h"

#define LITHE__DWCONV_MAX_TAPS 64

/* dwconv_lanes' buffer: Hb x Wb padded pixels of `lanes` floats (every pixel a tap reads and every
 * input pixel; padded (i, j) = input (i - pad[0], j - pad[1])) and the plane's OH·OW output pixels
 * of `lanes` floats, where both take at most LITHE__DW_LANES_FLAT_BYTES; else a ring of
 * nr = (KH - 1)·dil[0] + 1 padded rows (one output row's taps) and one output row. */
#define LITHE__DW_LANES_FLAT_BYTES (96 * 1024)
static inline void lithe__dw_lanes_dims(const lithe__conv2d *g, int lanes, int64_t *Hb, int64_t *Wb, int64_t *nr) {
    int64_t hr = (g->OH - 1) * g->stride[0] + (g->KH - 1) * g->dil[0] + 1, h = g->pad[0] + g->H;
    int64_t wr = (g->OW - 1) * g->stride[1] + (g->KW - 1) * g->dil[1] + 1, w = g->pad[1] + g->W;
    *Hb = hr > h ? hr : h;
    *Wb = wr > w ? wr : w;
    int64_t ring = (g->KH - 1) * g->dil[0] + 1;
    bool flat = (*Hb * *Wb + g->OH * g->OW) * lanes * (int64_t)sizeof(float) <= LITHE__DW_LANES_FLAT_BYTES;
    *nr = flat || ring >= *Hb ? *Hb : ring;
}
static inline size_t lithe__dw_lanes_ws(const lithe__conv2d *g, int lanes) {
    int64_t Hb, Wb, nr;
    lithe__dw_lanes_dims(g, lanes, &Hb, &Wb, &nr);
    int64_t out = nr == Hb ? g->OH * g->OW : g->OW;
    return (size_t)((nr * Wb + (out > lanes ? out : lanes)) * lanes);
}

typedef struct lithe__simd_kernels {
    const char *isa; /* "scalar", "sse2", "avx2", "avx512", "neon", "wasm_simd128" */
    int lanes;       /* float lanes per vector (1 for scalar) */
    void (*act)(const lithe__act *a, int64_t n, const float *X, float *Y);
    void (*act_backward)(const lithe__act *a, int64_t n, const float *dY, const float *X, const float *Y, float *dX);
    void (*add_row)(int64_t M, int64_t N, float *Y, const float *b);
    /* y[j] = beta y[j] + sum_i X[i * ld + j] for j < n (a column range of a (M, ld) matrix). */
    void (*sum_rows)(int64_t M, int64_t n, int64_t ld, const float *X, float beta, float *y);
    void (*axpby)(int64_t n, float alpha, const float *X, float beta, float *Y);
    void (*mul)(int64_t n, const float *A, const float *B, float *Y);
    double (*sum_squares)(int64_t n, const float *X);
    void (*adam)(int64_t n, float *W, const float *G, float *m1, float *m2, float beta1, float beta2, float eps,
                 float lr);
    void (*radam)(int64_t n, float *W, const float *G, float *m1, float *m2, float beta1, float omb1, float beta2,
                  float omb2, float eps, float coef, bool rectified);
    void (*update_averages)(int64_t n, float *ema, const float *W, float decay);
    void (*adam_step)(int64_t n, float *W, float *G, float *m1, float *m2, float *avg, float gscale, float beta1,
                      float beta2, float eps, float lr, float wscale, float decay);
    void (*softmax)(int64_t M, int64_t N, const float *X, float temperature, float *Y);
    void (*softmax_backward)(int64_t M, int64_t N, const float *Y, const float *dY, float temperature, float *dX);
    void (*log_softmax)(int64_t M, int64_t N, const float *X, float *Y);
    void (*log_softmax_backward)(int64_t M, int64_t N, const float *Y, const float *dY, float *dX);
    void (*layernorm)(int64_t M, int64_t N, const float *X, const float *G, const float *b, float eps, float *Y,
                      float *mean, float *inv_std);
    /* layernorm_backward split so threads own their outputs: dX by rows ... */
    void (*layernorm_backward_dx)(int64_t M, int64_t N, const float *dY, const float *X, const float *G,
                                  const float *mean, const float *inv_std, float *dX);
    /* ... and dG, db by columns j < n of (M, ld) rows: dG[j] += sum_i dY * xhat, db[j] += sum_i dY, in
     * row order, in float (as the scalar twin). */
    void (*layernorm_backward_dgb)(int64_t M, int64_t n, int64_t ld, const float *dY, const float *X,
                                   const float *mean, const float *inv_std, float *dG, float *db);
    /* table[ids[i] * ld + j] += X[i * ld + j] for j < n, rows in order (duplicates accumulate). */
    void (*scatter_add_rows)(int64_t B, int64_t n, int64_t ld, float *table, const int32_t *ids32,
                             const uint64_t *ids64, const float *X);
    void (*unary)(int op, int64_t n, const float *X, float *Y);
    void (*unary_backward)(int op, int64_t n, const float *X, const float *Y, const float *dY, float *dX);
    void (*maxout)(int64_t R, int64_t P, const float *X, float *Y, int32_t *which);
    /* A depthwise-convolution plane laid out as long rows (conv/depthwise.c): for r < R, q < n,
     * y[r * ldy + q] = act(bias + sum over t < T (in that order) of x[r * ldx + q + off[t]] * w[t]),
     * T at most LITHE__DWCONV_MAX_TAPS; a NULL: no activation (else the act kernel's bits). Reads no
     * x past a row's x[r * ldx + n - 1 + off[t]], writes no y past y[r * ldy + n - 1]. */
    void (*dwconv_taps)(int64_t R, int64_t n, int64_t ldx, float *y, int64_t ldy, const float *x,
                        const int64_t *off, const float *w, int64_t T, float bias, const lithe__act *a);
    /* dst[r * ldd + i] = src[r * lds + i * s] for r < R, i < n (reads nothing past src[(R-1) * lds +
     * (n-1) * s]). */
    void (*copy_rows)(int64_t R, int64_t n, float *dst, int64_t ldd, const float *src, int64_t lds, int64_t s);
    /* Rows split into even and odd columns: e[r * ldd + i] = src[r * lds + 2i] for i < ceil(m / 2),
     * o[r * ldd + i] = src[r * lds + 2i + 1] for i < m / 2 (reads nothing past a row's m floats). */
    void (*split_rows)(int64_t R, int64_t m, float *e, float *o, int64_t ldd, const float *src, int64_t lds);
    /* Depthwise planes with channels in the lanes: Y's planes l < nch (<= lanes, at Y + l·OH·OW) of
     * the depthwise g (C = M = group) from X's planes (X + l·H·W), taps w + l·KH·KW, bias b[l] (b
     * NULL: 0), act a (NULL: none; else the act kernel's bits), each the scalar twin's sum with the
     * padding's taps added as 0·w (so the twin's bits where dw_plane_padded_ok holds, conv/depthwise.c);
     * KH·KW <= LITHE__DWCONV_MAX_TAPS. ws: lithe__dw_lanes_ws(g, lanes) floats, zero before the first
     * call for g (the kernel writes only the buffer's interior and leaves the padding zero, so calls
     * for further blocks of g reuse it as it is). NULL in tables without it (scalar and the four-lane ones). */
    void (*dwconv_lanes)(const lithe__conv2d *g, int64_t nch, const float *X, const float *w, const float *b,
                         const lithe__act *a, float *Y, float *ws);
    /* n 3x3 depthwise planes read in place (no copy): y + i·OH·OW (OH x OW) from x + i·H·W (H x W),
     * taps w + 9i, bias b[i] (b NULL: 0), act a as dwconv_taps; padding 1 at the top and left, stride
     * s both ways: s = 1 with OH = H, OW = W (padding 1 all round); s = 2 with 2·OH <= H, 2·OW <= W (no
     * bottom or right padding read); OW >= dwconv3x3_min_width. The twin's sum with the padding rows'
     * taps skipped and the padding columns' added as 0·w (conv/depthwise.c's dw_plane_padded_ok rule). NULL in
     * tables without it (scalar, SSE2 and NEON; WebAssembly SIMD128's four lanes have it). */
    void (*dwconv3x3)(int64_t n, int64_t H, int64_t W, int64_t s, int64_t OH, int64_t OW, const float *x, float *y,
                      const float *w, const float *b, const lithe__act *a);
    int dwconv3x3_min_width;
    /* One output row of 2x2 stride-2 max pooling (no padding) from input rows r0, r1 of a W-wide
     * plane: y[o] = the first maximum of r0[2o], r0[2o+1], r1[2o], r1[2o+1] (`>`, the twin's order),
     * which[o] = its index in the plane, base + 2o (+1, +W, +W+1); which NULL: y only (inference). */
    void (*maxpool2x2_row)(int64_t n, const float *r0, const float *r1, int64_t W, int32_t base, float *y,
                           int32_t *which);
    /* R output rows of it at once, no which (inference): y[r * n + o] = the first maximum of
     * x[2rW + 2o], x[2rW + 2o + 1], x[(2r+1)W + 2o], x[(2r+1)W + 2o + 1] (a plane's rows, or the
     * rows of consecutive planes whose height is even: their row pairs follow each other). */
    void (*maxpool2x2_rows)(int64_t R, int64_t n, const float *x, int64_t W, float *y);
    /* An imported graph's add / sub / mul / div (lithe__bin_op <= LITHE__BIN_DIV) over one row:
     * Y[i] = A[a1 ? 0 : i] op B[b1 ? 0 : i] for i < n (a1 / b1: that operand is one value). */
    void (*binary)(int op, int64_t n, const float *A, bool a1, const float *B, bool b1, float *Y);
    /* The depthwise backward of nch <= lanes channels in the lanes, over g's whole batch: dX (or NULL)
     * +=, dW (or NULL) += and db (or NULL; only with dW) +=. Channel l's planes: X's and dX's at
     * + n·C·H·W + l·H·W, dY's at dY + n·C·OH·OW + l·OH·OW; its taps at w + l·KH·KW, dW + l·KH·KW; per
     * channel the scalar twin's chains in its order (bit for bit: the padding's taps skipped). ws:
     * lithe__dw_backward_ws(g, lanes) floats; KH·KW <= LITHE__DWCONV_MAX_TAPS. NULL in tables
     * without it (scalar and the four-lane ones; conv/depthwise.c's loop then). */
    void (*dwconv_backward_lanes)(const lithe__conv2d *g, int64_t nch, const float *X, const float *w,
                                  const float *dY, float *dX, float *dW, float *db, float *ws);
} lithe__simd_kernels;

/* dwconv_backward_lanes' workspace: X's, dY's and dX's planes as pixel vectors, and room for the
 * last VW x VW transpose's reads past dX's. */
static inline int64_t lithe__dw_backward_ws(const lithe__conv2d *g, int64_t lanes) {
    return (2 * g->H * g->W + g->OH * g->OW + lanes) * lanes;
}

extern const lithe__simd_kernels lithe__simd_scalar;
#if defined(__x86_64__) && !defined(LITHE_NO_SIMD)
extern const lithe__simd_kernels lithe__simd_sse2, lithe__simd_avx2, lithe__simd_avx512;
#elif defined(__aarch64__) && !defined(LITHE_NO_SIMD)
extern const lithe__simd_kernels lithe__simd_neon;
#elif defined(__wasm_simd128__) && !defined(LITHE_NO_SIMD)
extern const lithe__simd_kernels lithe__simd_wasm_simd128;
#endif

/* The table for this machine: LITHE_CPU_ISA if set (and supported; otherwise the best), else the
 * best this CPU runs. Decided once. */
const lithe__simd_kernels *lithe__simd(void);
/* The table backends/cpu/conv/ calls: lithe__simd()'s, with its convolution-only kernels filled in
 * where the npm package's core leaves them to the importer module (simd/conv_kernels.c). */
const lithe__simd_kernels *lithe__simd_conv(void);
/* Every table this machine can run, scalar first; returns how many (at most 8). For tests. */
int lithe__simd_available(const lithe__simd_kernels **out, int max);
/* Forces a table for this process (tests); NULL: back to the default. */
void lithe__simd_force(const lithe__simd_kernels *k);

/* The CPU backend's entries (elem.c): the scalar twins' signatures, run on lithe__simd()'s table
 * and split over the CPU backend's thread pool by output (bit-identical for any thread count). */
void lithe__cpu_act(const lithe__act *a, int64_t n, const float *X, float *Y);
void lithe__cpu_act_backward(const lithe__act *a, int64_t n, const float *dY, const float *X, const float *Y,
                             float *dX);
void lithe__cpu_add_row(int64_t M, int64_t N, float *Y, const float *b);
void lithe__cpu_sum_rows(int64_t M, int64_t N, const float *X, float beta, float *y);
void lithe__cpu_axpby(int64_t n, float alpha, const float *X, float beta, float *Y);
void lithe__cpu_mul(int64_t n, const float *A, const float *B, float *Y);
double lithe__cpu_sum_squares(int64_t n, const float *X);
void lithe__cpu_adam(int64_t n, float *W, const float *G, float *m1, float *m2, float beta1, float beta2, float eps,
                     float lr);
void lithe__cpu_radam(int64_t n, float *W, const float *G, float *m1, float *m2, float beta1, float omb1, float beta2,
                      float omb2, float eps, float coef, bool rectified);
void lithe__cpu_update_averages(int64_t n, float *ema, const float *W, float decay);
void lithe__cpu_adam_step(int64_t n, float *W, float *G, float *m1, float *m2, float *avg, float gscale, float beta1,
                          float beta2, float eps, float lr, float wscale, float decay);
void lithe__cpu_softmax(int64_t M, int64_t N, const float *X, float temperature, float *Y);
void lithe__cpu_softmax_backward(int64_t M, int64_t N, const float *Y, const float *dY, float temperature,
                                 float *dX);
void lithe__cpu_log_softmax(int64_t M, int64_t N, const float *X, float *Y);
void lithe__cpu_log_softmax_backward(int64_t M, int64_t N, const float *Y, const float *dY, float *dX);
void lithe__cpu_layernorm(int64_t M, int64_t N, const float *X, const float *G, const float *b, float eps, float *Y,
                          float *mean, float *inv_std);
void lithe__cpu_layernorm_backward(int64_t M, int64_t N, const float *dY, const float *X, const float *G,
                                   const float *mean, const float *inv_std, float *dX, float *dG, float *db);
void lithe__cpu_gather_rows(int64_t B, int64_t N, const float *table, const int32_t *ids32, const uint64_t *ids64,
                            float *Y);
void lithe__cpu_scatter_add_rows(int64_t B, int64_t N, float *table, const int32_t *ids32, const uint64_t *ids64,
                                 const float *X);
void lithe__cpu_unary(int op, int64_t n, const float *X, float *Y);
/* Y (R, n) rows: Y[r, i] = A[r * lda + (a1 ? 0 : i)] op B[r * ldb + (b1 ? 0 : i)], op add / sub /
 * mul / div; bit-identical to lithe__bin_fwd per element, split by rows (or elements when R = 1). */
void lithe__cpu_binary_rows(int op, int64_t R, int64_t n, const float *A, int64_t lda, bool a1, const float *B,
                            int64_t ldb, bool b1, float *Y);
void lithe__cpu_unary_backward(int op, int64_t n, const float *X, const float *Y, const float *dY, float *dX);
/* The caching allocator behind the CPU backend's alloc / free (cache.c): 64-byte aligned blocks,
 * reused by size class; lithe__cpu_cache_flush gives every waiting block back. */
void *lithe__cpu_cache_alloc(size_t nbytes);
void lithe__cpu_cache_free(void *p);
size_t lithe__cpu_cache_bytes(void);
/* lithe_backend_memory's figures for the CPU backend (cache.c): bytes in use, cached, blocks made
 * fresh; and the high-water mark of the bytes in use (reset: from now on). */
void lithe__cpu_memory_stats(const lithe_backend *be, size_t *in_use, size_t *cached, size_t *n_allocs);
size_t lithe__cpu_memory_peak(const lithe_backend *be, bool reset);
void lithe__cpu_persistent_allocs(bool on);

/* Convolution (conv/): depthwise directly, the rest as GEMMs (lithe__sgemm, _rows, _pixels); a (or
 * NULL): the activation, with the act kernel's bits — in registers (depthwise relu / clip), in the
 * GEMM's store (a kernel with clamp_ok), in the pixel-rows tile buffer, or by the act kernel after. */
lithe_status lithe__cpu_conv2d(lithe_backend *be, const lithe__conv2d *g, const float *X, const float *W,
                               const float *b, const lithe__act *a, float *Y);
/* The same with W packed ahead (Wp: lithe__sgemm_pack_b of W read as (M, C·KH·KW), transB; NULL:
 * none; used by the pixel-rows orientation at group 1): the same bits as without it. */
struct lithe__sgemm_packed_b;
lithe_status lithe__cpu_conv2d_packed(lithe_backend *be, const lithe__conv2d *g, const float *X, const float *W,
                                      const struct lithe__sgemm_packed_b *Wp, const float *b, const lithe__act *a,
                                      float *Y);
lithe_status lithe__cpu_conv2d_backward(lithe_backend *be, const lithe__conv2d *g, const float *X, const float *W,
                                        const float *dY, float *dX, float *dW, float *db);
/* Y = conv2d_packed(X, W, Wp, b) (no activation), then Y = R + Y (res_first) or Y + R, R contiguous
 * and shaped as Y: the residual added in the GEMM's store while each tile is in L1 (pointwise and
 * im2col filter rows, pixel rows), after the convolution elsewhere; the bits of the two passes. */
lithe_status lithe__cpu_conv2d_add(lithe_backend *be, const lithe__conv2d *g, const float *X, const float *W,
                                   const struct lithe__sgemm_packed_b *Wp, const float *b, const float *R,
                                   bool res_first, float *Y);
/* The backend's conv_q8 (core/backend.h): the int8 convolution of a fused:QConv (conv/qconv.c). */
lithe_status lithe__cpu_conv_q8(lithe_backend *be, const lithe__conv2d *g, const lithe_tensor *X, float xs, int32_t xz,
                                int32_t xmin, int32_t xmax, const lithe_tensor *W, const lithe_tensor *b,
                                const lithe__act *a, lithe_tensor *Y, bool *done);
/* Pooling (conv/pool.c): the twins over (image, channel) planes split by the pool, 2x2/2 max pooling
 * by its own loop; bit-identical to the twins. LITHE_OK (the npm core without the importer module:
 * LITHE_ERR_UNSUPPORTED, bindings/js/src/importers_hooks.c). */
lithe_status lithe__cpu_pool2d(const lithe__pool2d *g, const float *X, float *Y, int32_t *which);
lithe_status lithe__cpu_pool2d_backward(const lithe__pool2d *g, const float *dY, const int32_t *which, float *dX);
/* The dropout mask (the scalar kernel: Philox), split in ranges that start at multiples of 4, so the
 * stream is the same for any thread count. */
void lithe__cpu_dropout_mask(uint64_t key, uint64_t counter, float rate, int64_t n, float *Y);
void lithe__cpu_maxout(int64_t B, int64_t O, int64_t P, const float *X, float *Y, int32_t *which);

#endif
