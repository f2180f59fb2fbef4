/* The pointwise (1x1, stride 1, unpadded, one group) convolution read in place (x86-64 builds):
 *
 *   Y (M, P) = W (M, K) · X (K, P)  [+ b (M) per row]  [clamp]  [+ R (M, P)]
 *
 * for one image, P = H·W pixels. Neither operand is packed: X's rows are the B slivers (16 pixels
 * of row k at X + k·P + p, the last sliver of a row read with masked loads), W's rows are broadcast
 * where they lie (6 filters a tile). The packed GEMM spent most of its time at mobilenet_v3's short
 * K (16..96 channels) and narrow planes (14x14, 7x7) on what surrounds the microkernel: packing X
 * in every call, the per-tile driver, the tile transposes of pixel rows and the idle lanes of a
 * 16-wide sliver over 7x7 = 49 pixels (here a tail of 1..8 pixels runs a 6 x 8 tile).
 *
 * Each y[m][p] is acc = Σ_k W[m][k]·X[k][p] with one FMA per k, k = 0, 1, ..., K - 1 from 0; then
 * t = acc + b[m] (one rounding), the clamp (gemm.h's LITHE__SGEMM_CLAMP_*, the act kernel's bits),
 * then the residual (first ? r + t : t + r). Where K fits the GEMM's one K block (AVX2: 256) that is
 * the packed filter-rows product's value bit for bit (its bias step is fma(b, 1, acc) = acc + b).
 * Longer K runs in blocks (W and X slices that stay in L2 / L1), each continuing the chain from the
 * sums the previous block left in Y: the same one chain, the same bits for any blocking.
 * lithe__conv_pw_ref is the scalar twin (fmaf), the oracle of tests/test_conv_pointwise.c. */
#ifndef LITHE_CPU_CONV_POINTWISE_H
#define LITHE_CPU_CONV_POINTWISE_H

#include <stdbool.h>
#include <stdint.h>

typedef struct lithe__conv_pw {
    int64_t M, K, P;
    const float *W; /* (M, K) */
    const float *X; /* (K, P) */
    const float *b; /* (M,) or NULL */
    float *Y;       /* (M, P) */
    const float *R; /* (M, P) or NULL */
    bool res_first; /* R + t (else t + R) */
    int clamp;      /* LITHE__SGEMM_CLAMP_* */
    float lo, hi;   /* LITHE__SGEMM_CLAMP_CLIP's bounds */
    /* blocking (tests force small blocks; 0: the kernel's own): K steps and filters per block, and
     * pixels per chunk with the filter tiles outer (> 0), or columns outer (< 0) */
    int64_t kc, mc, pc;
} lithe__conv_pw;

/* Pixels [p0, p1) of every output row (p0 a multiple of 16). */
typedef void (*lithe__conv_pw_fn)(const lithe__conv_pw *c, int64_t p0, int64_t p1);

void lithe__conv_pw_ref(const lithe__conv_pw *c, int64_t p0, int64_t p1);
#if defined(__x86_64__) || defined(_M_X64)
void lithe__conv_pw_avx2(const lithe__conv_pw *c, int64_t p0, int64_t p1);
#endif
/* The kernel this CPU runs (AVX2 + FMA), or NULL (then the GEMM path). */
lithe__conv_pw_fn lithe__conv_pw_best(void);

/* GlobalAveragePool of eight planes of HW floats (x: plane l at x + l·HW) into y[l·ys], each the
 * twin's sum in order then its division (pool_avx2.c); lithe__pool_gap8_best: it, or NULL where
 * the CPU (or LITHE_CPU_ISA) runs no AVX2. */
typedef void (*lithe__pool_gap8_fn)(const float *x, int64_t HW, float div, float *y, int64_t ys);
lithe__pool_gap8_fn lithe__pool_gap8_best(void);
#if defined(__x86_64__) || defined(_M_X64)
void lithe__pool_gap8_avx2(const float *x, int64_t HW, float div, float *y, int64_t ys);
#endif

/* 2x2 stride-2 max pooling's backward of one plane (OH x OW outputs, rows W wide): dx[which[o]] +=
 * dy[o] (nothing for a negative index), the twin's bits (pool_avx2.c); assign: rows 0 .. 2·OH - 1 of dx written as if zeroed first,
 * false (nothing promised) where an index lies outside its window. lithe__pool_max2x2_back_best: it,
 * or NULL as above. */
typedef bool (*lithe__pool_max2x2_back_fn)(int64_t OH, int64_t OW, int64_t W, const float *dy, const int32_t *which,
                                           bool assign, float *dx);
lithe__pool_max2x2_back_fn lithe__pool_max2x2_back_best(void);
#if defined(__x86_64__) || defined(_M_X64)
bool lithe__pool_max2x2_back_avx2(int64_t OH, int64_t OW, int64_t W, const float *dy, const int32_t *which, bool assign,
                                  float *dx);
#endif

#endif
