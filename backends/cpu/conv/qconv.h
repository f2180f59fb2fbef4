/* The int8 convolution of quantized graphs (fused:QConv, core/graph/ops/qfused.c), on the CPU:
 *
 *   Y (N, M, OH, OW) = act(sx·sw[m] · Σ (x - zx)·(w - zw[m]) + b[m])
 *
 * X float32, quantized here as QuantizeLinear does (one scale sx and zero point zx), W int8 with a
 * scale and zero point per output channel (or one). The sums are exact int32, so every kernel gives
 * the bits of its scalar twin, and the same values as the int8 GEMM (qgemm.c) computes for them:
 * (float)acc · (sx·sw) (+ b), then the activation.
 *
 * Group 1 (any window, stride, padding): per image the columns (K = C·KH·KW, P = OH·OW) are packed
 * once, quantized, as int16 pairs along K (Xp[k/2][p][2], x - zx, 0 outside the image and past
 * K / P), the weight once per weight version (lithe__quant's cache) as int32 pairs (w - zw) in panels
 * of MR filters; a tile is MR filters × 8 or 16 pixels of int16 pair products (AVX2 vpmaddwd,
 * exact for any 8-bit codes: no u7 split), written straight into Y's NCHW rows — no transpose. For
 * a 1x1 stride-1 unpadded window the packing is two rows interleaved (no im2col).
 * Depthwise (group = C = M, at most 256 taps): the float depthwise kernel on the integers x - zx and
 * w - zw (taps decoded once per weight version): every partial sum is an integer below 2^24, exact
 * in float, so the sum is the int32 one bit for bit; then (float)acc · scale (+ b) per channel. */
#ifndef LITHE_CPU_CONV_QCONV_H
#define LITHE_CPU_CONV_QCONV_H

#include <stdbool.h>
#include <stdint.h>

enum { LITHE__QC_MR = 4 };

typedef struct lithe__qconv {
    int64_t M, Kp, P, P8;  /* filters, K pairs, pixels, pixels rounded up to 8 */
    const int16_t *X;      /* (Kp, P8, 2) */
    const int32_t *W;      /* (ceil(M / MR), Kp, MR) pairs of int16 (k even in the low half) */
    const float *scale;    /* (M,) sx·sw[m] */
    const float *b;        /* (M,) or NULL */
    float *Y;              /* (M, P) */
} lithe__qconv;

/* Filters [m0, m1) (multiples of MR, m1 may pass M: rows past M are not written), every pixel. */
typedef void (*lithe__qconv_fn)(const lithe__qconv *c, int64_t m0, int64_t m1);
void lithe__qconv_ref(const lithe__qconv *c, int64_t m0, int64_t m1); /* the scalar twin */
#if defined(__x86_64__) || defined(_M_X64)
void lithe__qconv_avx2(const lithe__qconv *c, int64_t m0, int64_t m1);
#endif
#if defined(__wasm_simd128__) /* qconv_wasm.c: i32x4.dot_i16x8_s on the same packing */
void lithe__qconv_wasm(const lithe__qconv *c, int64_t m0, int64_t m1);
#endif
/* The kernel the CPU runs (LITHE_CPU_ISA=scalar: the twin). */
lithe__qconv_fn lithe__qconv_best(void);

/* The activation's quantization: x - zx = clamp(round_even(X / scale), lo, hi) with lo = xmin - zx,
 * hi = xmax - zx (NaN to lo): QuantizeLinear's code less its zero point. */
typedef struct lithe__qx {
    float scale, lo, hi;
} lithe__qx;
/* Packing, shared by the driver and the tests: Xp (Kp, P8, 2) of one image X (C, H, W) for the
 * window of g (group 1; tmp: C·H·W int16 of scratch, unused for 1x1); Wp of W (M, K) int8 with zero
 * points zw (n_zw = M or 1). */
struct lithe__conv2d;
void lithe__qconv_pack_x(const struct lithe__conv2d *g, const float *X, const lithe__qx *q, int16_t *tmp, int16_t *Xp);
void lithe__qconv_pack_w(int64_t M, int64_t K, const int8_t *W, const int32_t *zw, int64_t n_zw, int32_t *Wp);
#endif
