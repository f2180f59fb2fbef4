/* The pointwise convolution read in place (backends/cpu/conv/pointwise.h): the AVX2 kernel against
 * its scalar twin bit for bit (every tile shape: M across 6-filter tiles, P across 16- and 8-pixel
 * columns and their masked tails, short and long K, bias, each clamp, the residual in both
 * orders, NaN and infinities, any split of the pixels into ranges; one-pixel planes, whose filters
 * run in the lanes, across blocks of 8 and 16 filters and 8 K steps), no write past Y, and the twin
 * against a float64 sum within K+2 roundings of sum |w||x| per element. The kernel's blocking (K
 * steps and filters per block, pixel chunks with the filter tiles outer) is run at its own sizes and
 * forced small, across every block boundary: a later K block continues the chains from Y, so every
 * blocking must give the twin's bits.
 *
 * Plain C with its own CHECK (no cmocka). Ends with "conv_pointwise: N passed, M failed" and exits
 * non-zero on any failure; on a CPU without AVX2 (or off x86-64) only the twin's checks run. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lithe.h"
#include "../backends/cpu/gemm/gemm.h"
#if defined(__x86_64__) || defined(_M_X64)
#include "../backends/cpu/conv/pointwise.h"
#endif

#include "count_check.h"

#if defined(__x86_64__) || defined(_M_X64)
static uint64_t rng = 0x9E3779B97F4A7C15u;
static float urand(void) { /* in [-1, 1), xorshift64* */
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return (float)((double)((rng * 0x2545F4914F6CDD1Du) >> 40) / (double)(1u << 23) - 1.0);
}
static float *frand(int64_t n, float scale) {
    float *p = malloc((size_t)n * sizeof(float) + 64);
    for (int64_t i = 0; i < n; i++) p[i] = scale * urand();
    return p;
}

enum { GUARD = 24 };
static const float SENTINEL = 12345.5f;

static double clamp_ref(int cl, double t, double lo, double hi) {
    if (cl == LITHE__SGEMM_CLAMP_RELU) return t > 0 ? t : 0;
    if (cl == LITHE__SGEMM_CLAMP_HSWISH) return t * fmin(6.0, fmax(0.0, t + 3.0)) / 6.0;
    if (cl == LITHE__SGEMM_CLAMP_CLIP) return fmax(lo, fmin(hi, t));
    return t;
}

static int nan_case;
/* the kernel's blocking for the next cases (0: its own; blk_pc < 0: columns outer) */
static int64_t blk_kc, blk_mc, blk_pc;

/* One case: the twin against float64, then AVX2 (when the CPU has it) against the twin, bit for bit,
 * over the whole plane and over ranges split at a 16-pixel boundary. */
static void one(int64_t M, int64_t K, int64_t P, bool bias, int cl, int res) {
    lithe__conv_pw c = {.M = M, .K = K, .P = P, .res_first = res == 2, .clamp = cl, .lo = -0.25f, .hi = 0.5f,
                        .kc = blk_kc, .mc = blk_mc, .pc = blk_pc};
    float *W = frand(M * K, 1.0f), *X = frand(K * P, 1.0f), *b = bias ? frand(M, 1.0f) : NULL;
    float *R = res ? frand(M * P, 1.0f) : NULL;
    if (nan_case && M * P > 3 && P > 1) { /* NaN and infinities through the accumulator, the clamp and the store */
        X[(K - 1) * P + 1] = NAN;
        X[(K - 1) * P + P - 1] = INFINITY;
        W[(M - 1) * K] = -INFINITY;
        if (K > 2 && P > 2) X[P + 2] = NAN, X[2 * P] = -INFINITY; /* early in the chain: through a K block's store */
    } else if (nan_case && P == 1) { /* one pixel (the filters in the lanes): a NaN, infinities of both signs */
        X[K - 1] = NAN;
        W[(M - 1) * K] = -INFINITY;
        if (K > 2) X[1] = INFINITY, W[K + 1] = 0.0f; /* filter 1: inf·0 = NaN; the others ±inf */
    }
    float *Yt = malloc((size_t)(M * P + GUARD) * sizeof(float)), *Yk = malloc((size_t)(M * P + GUARD) * sizeof(float));
    for (int64_t i = 0; i < M * P + GUARD; i++) Yt[i] = Yk[i] = SENTINEL;
    c.W = W, c.X = X, c.b = b, c.R = R;
    c.Y = Yt;
    lithe__conv_pw_ref(&c, 0, P);
    if (!nan_case) { /* the twin against float64 */
        int bad = 0;
        for (int64_t m = 0; m < M && !bad; m++)
            for (int64_t p = 0; p < P && !bad; p++) {
                double acc = 0, mag = 0;
                for (int64_t k = 0; k < K; k++) {
                    acc += (double)W[m * K + k] * X[k * P + p];
                    mag += fabs((double)W[m * K + k] * X[k * P + p]);
                }
                if (b) acc += b[m], mag += fabs(b[m]);
                double t = clamp_ref(cl, acc, -0.25, 0.5);
                if (R) t += R[m * P + p], mag += fabs(R[m * P + p]);
                double tol = 2.0 * (double)(K + 3) * FLT_EPSILON * (mag + 1e-30);
                if (fabs(t - Yt[m * P + p]) > tol) {
                    bad = 1;
                    CHECK(0, "twin vs float64 M=%lld K=%lld P=%lld cl=%d: [%lld,%lld] %g vs %.9g", (long long)M,
                          (long long)K, (long long)P, cl, (long long)m, (long long)p, Yt[m * P + p], t);
                }
            }
        if (!bad) CHECK(1, "twin");
    }
    if (lithe__conv_pw_best()) {
        for (int split = 0; split < 2; split++) {
            for (int64_t i = 0; i < M * P + GUARD; i++) Yk[i] = SENTINEL;
            c.Y = Yk;
            if (split && P > 16) {
                int64_t s = (P / 2 + 15) / 16 * 16 < P ? (P / 2 + 15) / 16 * 16 : 16;
                lithe__conv_pw_avx2(&c, s, P);
                lithe__conv_pw_avx2(&c, 0, s);
            } else {
                lithe__conv_pw_avx2(&c, 0, P);
            }
            CHECK(!memcmp(Yt, Yk, (size_t)(M * P) * sizeof(float)),
                  "avx2 vs twin M=%lld K=%lld P=%lld bias=%d cl=%d res=%d split=%d nan=%d kc=%lld mc=%lld pc=%lld",
                  (long long)M, (long long)K, (long long)P, bias, cl, res, split, nan_case, (long long)blk_kc,
                  (long long)blk_mc, (long long)blk_pc);
            int over = 0;
            for (int64_t i = M * P; i < M * P + GUARD; i++) over |= Yk[i] != SENTINEL;
            CHECK(!over, "avx2 wrote past Y: M=%lld P=%lld", (long long)M, (long long)P);
        }
    }
    free(W), free(X), free(b), free(R), free(Yt), free(Yk);
}
#endif

int main(void) {
#if defined(__x86_64__) || defined(_M_X64)
    if (!lithe__conv_pw_best()) printf("conv_pointwise: this CPU runs no AVX2 kernel: the twin alone\n");
    static const int64_t Ms[] = {1, 5, 6, 7, 12, 13, 16, 40};
    static const int64_t Ps[] = {1, 3, 7, 8, 9, 15, 16, 17, 24, 31, 32, 33, 49, 196};
    static const int64_t Ks[] = {1, 2, 16, 27, 96};
    for (size_t mi = 0; mi < sizeof Ms / sizeof *Ms; mi++)
        for (size_t pi = 0; pi < sizeof Ps / sizeof *Ps; pi++)
            for (size_t ki = 0; ki < sizeof Ks / sizeof *Ks; ki++) {
                int v = (int)(mi + pi + ki);
                one(Ms[mi], Ks[ki], Ps[pi], v % 2 == 0, v % 4, v % 3);
            }
    for (int cl = 0; cl < 4; cl++)
        for (int res = 0; res < 3; res++) one(13, 300, 49, true, cl, res); /* K past the GEMM's kc */
    one(72, 16, 3136, true, LITHE__SGEMM_CLAMP_RELU, 0);      /* mobilenet_v3_small's 16 -> 72 at 56x56 */
    one(96, 576, 49, true, LITHE__SGEMM_CLAMP_NONE, 1);       /* its 576 -> 96 + Add at 7x7 */
    /* the kernel's own blocks: K around its 256-step blocks, W past its L2 block, short K over a
     * large plane (filter tiles outer) */
    static const int64_t Kb[] = {255, 256, 257, 512, 513, 672, 960};
    for (size_t ki = 0; ki < sizeof Kb / sizeof *Kb; ki++) one(13, Kb[ki], 33, ki % 2 == 0, (int)(ki % 4), (int)(ki % 3));
    one(160, 960, 49, true, LITHE__SGEMM_CLAMP_NONE, 1);      /* lraspp's 960 -> 160 + Add (at 7x7 here) */
    one(400, 160, 20, true, LITHE__SGEMM_CLAMP_HSWISH, 0);    /* 160 -> 400: W over one L2 block */
    one(64, 16, 4100, true, LITHE__SGEMM_CLAMP_RELU, 2);      /* K 16 over 4100 pixels: filter tiles outer */
    /* forced small blocks: every K / filter / pixel-chunk boundary, with the tails */
    static const int64_t kcs[] = {1, 3, 7, 16}, mcs[] = {6, 12}, pcs[] = {-1, 16, 48};
    for (size_t a = 0; a < 4; a++)
        for (size_t bb = 0; bb < 2; bb++)
            for (size_t d = 0; d < 3; d++) {
                blk_kc = kcs[a], blk_mc = mcs[bb], blk_pc = pcs[d];
                int v = (int)(a + bb + d);
                one(13, 17, 57, v % 2 == 0, v % 4, v % 3);
                one(19, 8, 100, v % 2 == 1, (v + 1) % 4, (v + 1) % 3);
                one(6, 40, 7, true, LITHE__SGEMM_CLAMP_HSWISH, 1);
            }
    /* one pixel (squeeze-excitation's 1x1 convolutions, the filters in the lanes): M across blocks of
     * 8 and 16 and their tails, K across 8-step transposes and single steps */
    static const int64_t M1[] = {1, 7, 8, 9, 15, 16, 17, 23, 24, 33, 144, 576}, K1[] = {1, 3, 7, 8, 9, 17, 144, 240};
    for (size_t mi = 0; mi < sizeof M1 / sizeof *M1; mi++)
        for (size_t ki = 0; ki < sizeof K1 / sizeof *K1; ki++) {
            int v = (int)(mi + ki);
            one(M1[mi], K1[ki], 1, v % 2 == 0, v % 4, v % 3);
        }
    one(960, 240, 1, true, LITHE__SGEMM_CLAMP_CLIP, 0); /* lraspp's 240 -> 960 */
    one(144, 576, 1, true, LITHE__SGEMM_CLAMP_RELU, 0);  /* mobilenet_v3_small's 576 -> 144 (one K chain) */
    one(240, 960, 1, true, LITHE__SGEMM_CLAMP_RELU, 2);  /* lraspp's 960 -> 240 */
    nan_case = 1;
    for (int cl = 0; cl < 4; cl++) one(7, 5, 19, true, cl, 1);
    for (int cl = 0; cl < 4; cl++) one(19, 11, 1, cl % 2 == 0, cl, cl % 3); /* one pixel */
    blk_kc = 2, blk_mc = 6, blk_pc = 16; /* NaN / inf stored and reloaded between K blocks */
    for (int cl = 0; cl < 4; cl++) one(13, 9, 35, true, cl, 1 + cl % 2);
    blk_kc = blk_mc = blk_pc = 0;
    nan_case = 0;
    { /* a residual in Y's own memory (not made by the graph, which gives the output its own tensor):
       * the kernel keeps one K block so R is read before it is overwritten */
        int64_t M = 7, K = 300, P = 21;
        float *W = frand(M * K, 1.0f), *X = frand(K * P, 1.0f), *Yr = frand(M * P, 1.0f);
        float *Yt = malloc((size_t)(M * P) * sizeof(float));
        lithe__conv_pw c = {.M = M, .K = K, .P = P, .W = W, .X = X, .R = Yr, .Y = Yt, .kc = 5};
        lithe__conv_pw_ref(&c, 0, P);
        if (lithe__conv_pw_best()) {
            c.Y = Yr;
            lithe__conv_pw_avx2(&c, 0, P);
            CHECK(!memcmp(Yt, Yr, (size_t)(M * P) * sizeof(float)), "avx2 with R == Y vs twin");
        }
        free(W), free(X), free(Yr), free(Yt);
    }
    { /* the same at one pixel (the filters in the lanes: each bias / residual vector read before its store) */
        int64_t M = 21, K = 19, P = 1;
        float *W = frand(M * K, 1.0f), *X = frand(K * P, 1.0f), *Yr = frand(M * P, 1.0f), *b = frand(M, 1.0f);
        float *Yt = malloc((size_t)(M * P) * sizeof(float));
        lithe__conv_pw c = {.M = M, .K = K, .P = P, .W = W, .X = X, .b = b, .R = Yr, .Y = Yt, .res_first = true,
                            .clamp = LITHE__SGEMM_CLAMP_HSWISH};
        lithe__conv_pw_ref(&c, 0, P);
        if (lithe__conv_pw_best()) {
            c.Y = Yr;
            lithe__conv_pw_avx2(&c, 0, P);
            CHECK(!memcmp(Yt, Yr, (size_t)(M * P) * sizeof(float)), "avx2 with R == Y vs twin, one pixel");
        }
        free(W), free(X), free(Yr), free(Yt), free(b);
    }
#endif
    printf("conv_pointwise: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
