/* Every SGEMM microkernel this build has (scalar, AVX2, AVX-512, NEON, WebAssembly SIMD128; see
 * backends/cpu/gemm/gemm.h) against its scalar twin, and the whole packed GEMM with each kernel
 * against a float64 reference.
 *
 * The twin is the microkernel contract written out in plain C for any MR x NR: acc[i][j] over
 * k = 0..kc-1 with one multiply-add per step, then t = alpha*acc, t += beta*c (beta != 0), t +=
 * bias. A kernel either fuses (FMA: fmaf in the twin) or rounds the product then the sum, so
 * the twin gives the kernel's bits exactly: the check is bit for bit, at every partial tile
 * (mr = 1..MR, nr = 1..NR), kc from 1 up, with and without beta, bias and NaN in an unread C.
 * The whole GEMM is checked against double sums within 4 ulps of sum |a||b| per element,
 * for the four transposes, K across the kernel's kc block, bias, strided C; then 1 thread
 * against N threads and a batch against its rows one at a time, bit for bit; and op(B) packed
 * ahead (prepared weights: at M = 1 the one-row kernel urow) against packing as it goes, bit for bit.
 *
 * Plain C with its own CHECK (no cmocka), so the same file also builds for WASI (the wasi
 * preset: tests/wasm runs it under node:wasi with the SIMD128 kernel). Ends with
 * "gemm_ukernels: N passed, M failed" and exits non-zero on any failure. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime for --bench */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lithe.h"
#include "../backends/cpu/gemm/gemm.h"
#include "../backends/cpu/kernels.h"
#include "../backends/cpu/simd/simd.h"

#include "count_check.h"

/* Which kernels fuse the multiply-add (FMA) and which round the product first. */
static const struct {
    const char *isa;
    bool fused;
} isas[] = {{"scalar", false}, {"avx2", true}, {"avx512", true}, {"neon", true}, {"wasmsimd", false}};
#define N_ISAS (sizeof isas / sizeof isas[0])

static uint64_t rng = 0x9E3779B97F4A7C15u;
static float urand(void) { /* in [-1, 1), xorshift64* */
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return (float)((double)((rng * 0x2545F4914F6CDD1Du) >> 40) / (double)(1u << 23) - 1.0);
}
static float *frand(size_t n) {
    float *p = lithe__aligned_alloc(n * sizeof(float) + 64);
    if (!p) {
        printf("out of memory\n");
        exit(2);
    }
    for (size_t i = 0; i < n; i++) p[i] = urand();
    return p;
}
static bool same_bits(float x, float y) { return memcmp(&x, &y, sizeof x) == 0; }
/* n floats bit for bit, any NaN matching any NaN (WebAssembly leaves a NaN's sign and payload open) */
static bool same_floats(const float *x, const float *y, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!same_bits(x[i], y[i]) && !(isnan(x[i]) && isnan(y[i]))) return false;
    return true;
}

/* The scalar twin of an MR x NR microkernel (see the top of the file). */
static void twin(bool fused, size_t MR, size_t NR, size_t mr, size_t nr, size_t kc, const float *a, const float *b,
                 float *c, size_t ldc, const lithe__sgemm_ukparams *p) {
    for (size_t i = 0; i < mr; i++)
        for (size_t j = 0; j < nr; j++) {
            float acc = 0.0f;
            for (size_t k = 0; k < kc; k++) {
                if (fused) {
                    acc = fmaf(a[k * MR + i], b[k * NR + j], acc);
                } else {
                    float prod = a[k * MR + i] * b[k * NR + j];
                    acc = acc + prod;
                }
            }
            float t = p->alpha * acc;
            if (p->beta != 0.0f) {
                if (fused) {
                    t = fmaf(p->beta, c[i * ldc + j], t);
                } else {
                    float bc = p->beta * c[i * ldc + j];
                    t = t + bc;
                }
            }
            if (p->bias) t = t + p->bias[j];
            c[i * ldc + j] = t;
        }
}

static void check_ukernel(const lithe__sgemm_kernel *k, bool fused) {
    const size_t MR = (size_t)k->mr, NR = (size_t)k->nr, ldc = NR + 3;
    static const size_t kcs[] = {1, 2, 7, 64, 300};
    static const float alphas[] = {1.0f, -0.75f}, betas[] = {0.0f, 1.0f, 0.3f};
    for (size_t ki = 0; ki < sizeof kcs / sizeof kcs[0]; ki++) {
        size_t kc = kcs[ki];
        float *a = frand(kc * MR), *b = frand(kc * NR), *bias = frand(NR), *c0 = frand(MR * ldc);
        float *bs = frand(kc * (NR + 16)); /* b's rows (NR + 16) floats apart, for ukernel_b */
        for (size_t kk = 0; kk < kc; kk++) memcpy(bs + kk * (NR + 16), b + kk * NR, NR * sizeof(float));
        /* a's steps as rows of their own, in reverse order, each at offset 5 of it (for ukernel_ap) */
        float *as = frand(kc * (MR + 7));
        const float **arows = malloc(kc * sizeof *arows);
        for (size_t kk = 0; kk < kc; kk++) {
            arows[kk] = as + (kc - 1 - kk) * (MR + 7);
            memcpy(as + (kc - 1 - kk) * (MR + 7) + 5, a + kk * MR, MR * sizeof(float));
        }
        /* b's steps likewise (for ukernel_bp), at offset 3 */
        float *bsr = frand(kc * (NR + 5));
        const float **brows = malloc(kc * sizeof *brows);
        for (size_t kk = 0; kk < kc; kk++) {
            brows[kk] = bsr + (kc - 1 - kk) * (NR + 5);
            memcpy(bsr + (kc - 1 - kk) * (NR + 5) + 3, b + kk * NR, NR * sizeof(float));
        }
        float *c1 = lithe__aligned_alloc(MR * ldc * sizeof(float)), *c2 = lithe__aligned_alloc(MR * ldc * sizeof(float));
        for (size_t ai = 0; ai < 2; ai++)
            for (size_t bi = 0; bi < 3; bi++)
                for (int with_bias = 0; with_bias < 2; with_bias++)
                    for (size_t mr = 1; mr <= MR; mr++)
                        for (size_t nr = 1; nr <= NR; nr++) {
                            lithe__sgemm_ukparams p = {.alpha = alphas[ai], .beta = betas[bi], .bias = with_bias ? bias : NULL};
                            memcpy(c1, c0, MR * ldc * sizeof(float));
                            if (p.beta == 0.0f) /* C is not read: NaN there must not leak */
                                for (size_t i = 0; i < MR * ldc; i++) c1[i] = NAN;
                            memcpy(c2, c1, MR * ldc * sizeof(float));
                            k->ukernel(mr, nr, kc, a, b, c1, ldc, &p);
                            twin(fused, MR, NR, mr, nr, kc, a, b, c2, ldc, &p);
                            if (k->ukernel_b) { /* B in place, rows ldb apart: the same bits as packed */
                                float *c3 = lithe__aligned_alloc(MR * ldc * sizeof(float));
                                memcpy(c3, c0, MR * ldc * sizeof(float));
                                if (p.beta == 0.0f)
                                    for (size_t i = 0; i < MR * ldc; i++) c3[i] = NAN;
                                k->ukernel_b(mr, nr, kc, a, bs, NR + 16, c3, ldc, &p);
                                size_t nb = 0, at = 0;
                                for (size_t i = 0; i < MR * ldc; i++)
                                    if (!same_bits(c1[i], c3[i]) && !(isnan(c1[i]) && isnan(c3[i])) && !nb++) at = i;
                                CHECK(nb == 0, "%s ukernel_b %zux%zu: tile %zux%zu kc=%zu: %zu elements differ from "
                                      "the packed call, first C[%zu][%zu] = %.9g, packed %.9g",
                                      k->isa, MR, NR, mr, nr, kc, nb, at / ldc, at % ldc, c3[at], c1[at]);
                                lithe__aligned_free(c3);
                            }
                            if (k->ukernel_bp) { /* B from row pointers, step k's NR lanes at rows[k] + off */
                                float *c5 = lithe__aligned_alloc(MR * ldc * sizeof(float));
                                memcpy(c5, c0, MR * ldc * sizeof(float));
                                if (p.beta == 0.0f)
                                    for (size_t i = 0; i < MR * ldc; i++) c5[i] = NAN;
                                k->ukernel_bp(mr, nr, kc, a, brows, 3, c5, ldc, &p);
                                size_t nb = 0, at = 0;
                                for (size_t i = 0; i < MR * ldc; i++)
                                    if (!same_bits(c1[i], c5[i]) && !(isnan(c1[i]) && isnan(c5[i])) && !nb++) at = i;
                                CHECK(nb == 0, "%s ukernel_bp %zux%zu: tile %zux%zu kc=%zu: %zu elements differ from "
                                      "the packed call, first C[%zu][%zu] = %.9g, packed %.9g",
                                      k->isa, MR, NR, mr, nr, kc, nb, at / ldc, at % ldc, c5[at], c1[at]);
                                lithe__aligned_free(c5);
                            }
                            if (k->ukernel_ap) { /* A from row pointers, step k's MR lanes at rows[k] + off */
                                float *c4 = lithe__aligned_alloc(MR * ldc * sizeof(float));
                                memcpy(c4, c0, MR * ldc * sizeof(float));
                                if (p.beta == 0.0f)
                                    for (size_t i = 0; i < MR * ldc; i++) c4[i] = NAN;
                                k->ukernel_ap(mr, nr, kc, arows, 5, b, c4, ldc, &p);
                                size_t nb = 0, at = 0;
                                for (size_t i = 0; i < MR * ldc; i++)
                                    if (!same_bits(c1[i], c4[i]) && !(isnan(c1[i]) && isnan(c4[i])) && !nb++) at = i;
                                CHECK(nb == 0, "%s ukernel_ap %zux%zu: tile %zux%zu kc=%zu: %zu elements differ from "
                                      "the packed call, first C[%zu][%zu] = %.9g, packed %.9g",
                                      k->isa, MR, NR, mr, nr, kc, nb, at / ldc, at % ldc, c4[at], c1[at]);
                                lithe__aligned_free(c4);
                            }
                            if (k->ukernel_a) { /* A in place, rows lda apart (NaN past mr: never stored) */
                                const size_t lda = kc + 5;
                                float *ar = lithe__aligned_alloc(MR * lda * sizeof(float));
                                float *c4 = lithe__aligned_alloc(MR * ldc * sizeof(float));
                                for (size_t i = 0; i < MR; i++)
                                    for (size_t kk = 0; kk < lda; kk++)
                                        ar[i * lda + kk] = i < mr && kk < kc ? a[kk * MR + i] : NAN;
                                memcpy(c4, c0, MR * ldc * sizeof(float));
                                if (p.beta == 0.0f)
                                    for (size_t i = 0; i < MR * ldc; i++) c4[i] = NAN;
                                k->ukernel_a(mr, nr, kc, ar, lda, b, c4, ldc, &p);
                                size_t nb = 0, at = 0;
                                for (size_t i = 0; i < MR * ldc; i++)
                                    if (!same_bits(c1[i], c4[i]) && !(isnan(c1[i]) && isnan(c4[i])) && !nb++) at = i;
                                CHECK(nb == 0, "%s ukernel_a %zux%zu: tile %zux%zu kc=%zu: %zu elements differ from "
                                      "the packed call, first C[%zu][%zu] = %.9g, packed %.9g",
                                      k->isa, MR, NR, mr, nr, kc, nb, at / ldc, at % ldc, c4[at], c1[at]);
                                lithe__aligned_free(ar);
                                lithe__aligned_free(c4);
                            }
                            size_t bad = 0, first = 0;
                            for (size_t i = 0; i < MR * ldc; i++)
                                if (!same_bits(c1[i], c2[i]) && !(isnan(c1[i]) && isnan(c2[i])) && !bad++) first = i;
                            CHECK(bad == 0,
                                  "%s ukernel %zux%zu: tile %zux%zu kc=%zu alpha=%g beta=%g bias=%d: %zu elements differ "
                                  "from the scalar twin, first C[%zu][%zu] = %.9g, twin %.9g",
                                  k->isa, MR, NR, mr, nr, kc, p.alpha, p.beta, with_bias, bad, first / ldc,
                                  first % ldc, c1[first], c2[first]);
                        }
        lithe__aligned_free(a);
        lithe__aligned_free(b);
        lithe__aligned_free(as);
        free(arows);
        lithe__aligned_free(bsr);
        free(brows);
        lithe__aligned_free(bs);
        lithe__aligned_free(bias);
        lithe__aligned_free(c0);
        lithe__aligned_free(c1);
        lithe__aligned_free(c2);
    }
}

/* A kernel with clamp_ok (gemm.h): its tile with ukparams' clamp against the twin's tile followed by
 * the act kernel (the scalar one, the oracle, and the SIMD one that runs today: bits), relu and
 * clip bounds (lithe__sgemm_act_clamp's) and HardSwish at every partial tile, the B-in-place variant and the
 * one-row kernel (urow) too. A's row 0 is zeros (t = -0 under alpha < 0, beta 0, no bias), row 1
 * holds a NaN, row 2 an inf, B's column 3 an inf (inf - inf: NaN where they meet). */
static void check_clamp(const lithe__sgemm_kernel *k, bool fused) {
    if (!k->clamp_ok) return;
    const size_t MR = (size_t)k->mr, NR = (size_t)k->nr, ldc = NR + 3;
    static const size_t kcs[] = {1, 70};
    static const float alphas[] = {1.0f, -0.75f}, betas[] = {0.0f, 0.3f};
    static const float bounds[][2] = {{0.0f, 6.0f}, {-0.25f, 0.25f}, {0.1f, 0.1f}, {-INFINITY, INFINITY},
                                      {0.0f, 0.0f}, {-INFINITY, 0.0f}};
    const size_t n_acts = 2 + sizeof bounds / sizeof bounds[0]; /* relu, the clips, HardSwish */
    for (size_t ki = 0; ki < sizeof kcs / sizeof kcs[0]; ki++) {
        size_t kc = kcs[ki];
        float *a = frand(kc * MR), *b = frand(kc * NR), *bias = frand(NR), *c0 = frand(MR * ldc);
        for (size_t kk = 0; kk < kc; kk++) a[kk * MR] = 0.0f;
        if (MR > 1) a[MR + 1 < kc * MR ? MR + 1 : 1] = NAN;
        if (MR > 2) a[(kc - 1) * MR + 2] = INFINITY;
        if (NR > 3) b[(kc / 2) * NR + 3] = -INFINITY;
        float *bs = frand(kc * (NR + 16));
        for (size_t kk = 0; kk < kc; kk++) memcpy(bs + kk * (NR + 16), b + kk * NR, NR * sizeof(float));
        const float **brows = malloc(kc * sizeof *brows); /* bs's rows as ukernel_bp's row pointers */
        for (size_t kk = 0; kk < kc; kk++) brows[kk] = bs + kk * (NR + 16);
        float *c1 = lithe__aligned_alloc(MR * ldc * sizeof(float)), *c2 = lithe__aligned_alloc(MR * ldc * sizeof(float));
        float *c3 = lithe__aligned_alloc(MR * ldc * sizeof(float)), *c4 = lithe__aligned_alloc(MR * ldc * sizeof(float));
        for (size_t ai = 0; ai < 2; ai++)
            for (size_t bi = 0; bi < 2; bi++)
                for (int with_bias = 0; with_bias < 2; with_bias++)
                    for (size_t ci = 0; ci < n_acts; ci++) {
                        lithe__act act = {.kind = LITHE__ACT_RELU};
                        if (ci + 1 == n_acts) act = (lithe__act){.kind = LITHE__ACT_HARD_SWISH_MOBILENET};
                        else if (ci) act = (lithe__act){.kind = LITHE__ACT_CLIPPED_LINEAR, .slope = 1.0f,
                                                   .min_val = bounds[ci - 1][0], .max_val = bounds[ci - 1][1]};
                        lithe__sgemm_ukparams p = {.alpha = alphas[ai], .beta = betas[bi], .bias = with_bias ? bias : NULL};
                        CHECK(lithe__sgemm_act_clamp(&act, &p.clamp, &p.lo, &p.hi), "act %zu has a clamp", ci);
                        lithe__sgemm_ukparams p0 = p;
                        p0.clamp = 0;
                        for (size_t mr = 1; mr <= MR; mr++)
                            for (size_t nr = 1; nr <= NR; nr++) {
                                memcpy(c1, c0, MR * ldc * sizeof(float));
                                if (p.beta == 0.0f)
                                    for (size_t i = 0; i < MR * ldc; i++) c1[i] = NAN;
                                memcpy(c2, c1, MR * ldc * sizeof(float));
                                memcpy(c3, c1, MR * ldc * sizeof(float));
                                k->ukernel(mr, nr, kc, a, b, c1, ldc, &p);
                                twin(fused, MR, NR, mr, nr, kc, a, b, c2, ldc, &p0);
                                memcpy(c4, c2, MR * ldc * sizeof(float));
                                for (size_t i = 0; i < mr; i++) {
                                    lithe_f32_act__scalar(&act, (int64_t)nr, c2 + i * ldc, c2 + i * ldc);
                                    lithe__simd()->act(&act, (int64_t)nr, c4 + i * ldc, c4 + i * ldc);
                                }
                                if (k->ukernel_b) k->ukernel_b(mr, nr, kc, a, bs, NR + 16, c3, ldc, &p);
                                else memcpy(c3, c1, MR * ldc * sizeof(float));
                                size_t bad = 0, first = 0;
                                for (size_t i = 0; i < MR * ldc; i++) {
                                    bool nan = isnan(c1[i]) && isnan(c2[i]) && isnan(c3[i]) && isnan(c4[i]);
                                    if (!nan && (!same_bits(c1[i], c2[i]) || !same_bits(c1[i], c3[i]) ||
                                                 !same_bits(c1[i], c4[i])) && !bad++)
                                        first = i;
                                }
                                CHECK(bad == 0,
                                      "%s ukernel %zux%zu clamp %d [%g, %g]: tile %zux%zu kc=%zu alpha=%g beta=%g "
                                      "bias=%d: %zu elements differ from the twin + act, first C[%zu][%zu] = %.9g "
                                      "(in place %.9g), twin + act %.9g (SIMD act %.9g)",
                                      k->isa, MR, NR, p.clamp, p.lo, p.hi, mr, nr, kc, p.alpha, p.beta, with_bias, bad,
                                      first / ldc, first % ldc, c1[first], c3[first], c2[first], c4[first]);
                                if (k->ukernel_bp) { /* B from row pointers (a convolution read in place; AVX2's
                                                      * full tiles store through a constant clamp): c1's bits */
                                    memcpy(c3, c0, MR * ldc * sizeof(float));
                                    if (p.beta == 0.0f)
                                        for (size_t i = 0; i < MR * ldc; i++) c3[i] = NAN;
                                    k->ukernel_bp(mr, nr, kc, a, brows, 0, c3, ldc, &p);
                                    size_t nb = 0, at = 0;
                                    for (size_t i = 0; i < MR * ldc; i++)
                                        if (!same_bits(c1[i], c3[i]) && !(isnan(c1[i]) && isnan(c3[i])) && !nb++) at = i;
                                    CHECK(nb == 0, "%s ukernel_bp clamp %d [%g, %g]: tile %zux%zu kc=%zu alpha=%g "
                                          "beta=%g bias=%d: %zu elements differ from ukernel, first C[%zu][%zu] = "
                                          "%.9g, ukernel %.9g", k->isa, p.clamp, p.lo, p.hi, mr, nr, kc, p.alpha,
                                          p.beta, with_bias, nb, at / ldc, at % ldc, c3[at], c1[at]);
                                }
                            }
                        if (k->urow) /* one row (a's row 0 or 1 as x) against one sliver of each width */
                            for (size_t row = 0; row < 2 && row < MR; row++)
                                for (size_t nr = 1; nr <= NR; nr++) {
                                    float x[70], want[64], got[64];
                                    for (size_t kk = 0; kk < kc; kk++) x[kk] = a[kk * MR + row];
                                    for (size_t j = 0; j < NR; j++) want[j] = got[j] = c0[j];
                                    k->urow(1, nr, kc, x, b, got, &p);
                                    k->urow(1, nr, kc, x, b, want, &p0);
                                    lithe_f32_act__scalar(&act, (int64_t)nr, want, want);
                                    size_t bad = 0;
                                    for (size_t j = 0; j < NR; j++)
                                        bad += !same_bits(got[j], want[j]) && !(isnan(got[j]) && isnan(want[j]));
                                    CHECK(bad == 0, "%s urow clamp %d [%g, %g]: row %zu nr=%zu kc=%zu: %zu differ",
                                          k->isa, p.clamp, p.lo, p.hi, row, nr, kc, bad);
                                }
                    }
        lithe__aligned_free(a);
        lithe__aligned_free(b);
        lithe__aligned_free(bs);
        free(brows);
        lithe__aligned_free(bias);
        lithe__aligned_free(c0);
        lithe__aligned_free(c1);
        lithe__aligned_free(c2);
        lithe__aligned_free(c3);
        lithe__aligned_free(c4);
    }
    /* bounds the clamp leaves to the act kernel: crossed, NaN, -0 */
    static const float no[][2] = {{0.5f, -0.5f}, {NAN, 1.0f}, {0.0f, NAN}, {-0.0f, 6.0f}, {-1.0f, -0.0f}};
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++) {
        lithe__act act = {.kind = LITHE__ACT_CLIPPED_LINEAR, .slope = 1.0f, .min_val = no[i][0], .max_val = no[i][1]};
        CHECK(!lithe__sgemm_act_clamp(&act, NULL, NULL, NULL), "bounds [%g, %g] must not clamp", no[i][0], no[i][1]);
    }
    lithe__act other = {.kind = LITHE__ACT_CLIPPED_LINEAR, .slope = 2.0f, .min_val = 0.0f, .max_val = 6.0f};
    CHECK(!lithe__sgemm_act_clamp(&other, NULL, NULL, NULL), "slope 2 must not clamp");
}

/* ukernel_b's bias_rows (gemm.h): each row's value added in the store, after the column bias and
 * before the clamp, must give the bits of the plain kernel's tile plus the row's value, one rounding
 * per element (what gemm.c's bias_after added after the store before), then the act kernel; every
 * tile shape, so partial tiles (the masked store) are covered as well as whole ones. */
static void check_bias_rows(const lithe__sgemm_kernel *k) {
    if (!k->ukernel_b) return;
    const size_t MR = (size_t)k->mr, NR = (size_t)k->nr, ldc = NR + 3;
    static const size_t kcs[] = {1, 33};
    for (size_t ki = 0; ki < sizeof kcs / sizeof kcs[0]; ki++) {
        size_t kc = kcs[ki];
        float *a = frand(kc * MR), *bs = frand(kc * (NR + 16)), *bias = frand(NR), *rows = frand(MR);
        float *b = lithe__aligned_alloc(kc * NR * sizeof(float));
        for (size_t kk = 0; kk < kc; kk++) memcpy(b + kk * NR, bs + kk * (NR + 16), NR * sizeof(float));
        rows[0] = -0.0f;
        if (MR > 2) rows[2] = INFINITY;
        float *got = lithe__aligned_alloc(MR * ldc * sizeof(float)), *want = lithe__aligned_alloc(MR * ldc * sizeof(float));
        for (int with_bias = 0; with_bias < 2; with_bias++)
            for (int relu6 = 0; relu6 < 2 && (relu6 == 0 || k->clamp_ok); relu6++) {
                lithe__act act = {.kind = LITHE__ACT_CLIPPED_LINEAR, .slope = 1.0f, .min_val = 0.0f, .max_val = 6.0f};
                lithe__sgemm_ukparams p = {.alpha = 1.0f, .beta = 0.0f, .bias = with_bias ? bias : NULL};
                if (relu6) CHECK(lithe__sgemm_act_clamp(&act, &p.clamp, &p.lo, &p.hi), "relu6 clamps");
                lithe__sgemm_ukparams pr = p;
                pr.bias_rows = rows;
                p.clamp = 0;
                for (size_t mr = 1; mr <= MR; mr++)
                    for (size_t nr = 1; nr <= NR; nr++) {
                        for (size_t i = 0; i < MR * ldc; i++) got[i] = want[i] = (float)i;
                        k->ukernel(mr, nr, kc, a, b, want, ldc, &p);
                        for (size_t i = 0; i < mr; i++) {
                            for (size_t j = 0; j < nr; j++) want[i * ldc + j] = want[i * ldc + j] + rows[i];
                            if (relu6) lithe_f32_act__scalar(&act, (int64_t)nr, want + i * ldc, want + i * ldc);
                        }
                        k->ukernel_b(mr, nr, kc, a, bs, NR + 16, got, ldc, &pr);
                        size_t bad = 0, first = 0;
                        for (size_t i = 0; i < MR * ldc; i++)
                            if (!same_bits(got[i], want[i]) && !(isnan(got[i]) && isnan(want[i])) && !bad++) first = i;
                        CHECK(bad == 0,
                              "%s ukernel_b %zux%zu bias_rows: tile %zux%zu kc=%zu bias=%d relu6=%d: %zu elements "
                              "differ, first C[%zu][%zu] = %.9g, kernel + row %.9g",
                              k->isa, MR, NR, mr, nr, kc, with_bias, relu6, bad, first / ldc, first % ldc, got[first],
                              want[first]);
                    }
            }
        lithe__aligned_free(a);
        lithe__aligned_free(b);
        lithe__aligned_free(bs);
        lithe__aligned_free(bias);
        lithe__aligned_free(rows);
        lithe__aligned_free(got);
        lithe__aligned_free(want);
    }
}

/* C = alpha op(A) op(B) + beta C + bias, with kernel k, against float64 sums. */
static void check_gemm(const lithe__sgemm_kernel *k, bool tA, bool tB, int64_t M, int64_t N, int64_t K, float alpha,
                       float beta, bool with_bias) {
    int64_t lda = tA ? M + 1 : K + 2, ldb = tB ? K + 3 : N + 1, ldc = N + 5;
    float *A = frand((size_t)((tA ? K : M) * lda)), *B = frand((size_t)((tB ? N : K) * ldb));
    float *C = frand((size_t)(M * ldc)), *C0 = frand((size_t)(M * ldc)), *bias = frand((size_t)N);
    memcpy(C0, C, (size_t)(M * ldc) * sizeof(float));
    lithe__sgemm_epilogue epi = {.bias = bias};
    bool ok = lithe__sgemm(k, false, tA, tB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, with_bias ? &epi : NULL);
    CHECK(ok, "%s gemm returned false", k->isa);
    double worst = 0;
    int64_t wi = 0, wj = 0;
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double s = 0, mag = 0;
            for (int64_t q = 0; q < K; q++) {
                double x = tA ? A[q * lda + i] : A[i * lda + q], y = tB ? B[j * ldb + q] : B[q * ldb + j];
                s += x * y;
                mag += fabs(x * y);
            }
            double ref = alpha * s + (beta != 0.0f ? beta * (double)C0[i * ldc + j] : 0.0) +
                         (with_bias ? bias[j] : 0.0);
            double scale = fabs(alpha) * mag + fabs(beta * C0[i * ldc + j]) + (with_bias ? fabs(bias[j]) : 0) + 1e-30;
            double err = fabs((double)C[i * ldc + j] - ref) / scale;
            if (!(err <= worst)) worst = err, wi = i, wj = j;
        }
    /* float32 sums over K terms in blocks: a few ulps of the magnitude, far below any indexing error */
    CHECK(worst <= 4 * 1.2e-7 * sqrt((double)K + 1) + 1e-7,
          "%s gemm tA=%d tB=%d M=%lld N=%lld K=%lld alpha=%g beta=%g bias=%d: C[%lld][%lld] off by %.3g of its "
          "magnitude",
          k->isa, tA, tB, (long long)M, (long long)N, (long long)K, alpha, beta, with_bias, (long long)wi,
          (long long)wj, worst);
    /* columns past N untouched */
    bool pad_ok = true;
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = N; j < ldc && (i < M - 1 || j < N); j++)
            if (!same_bits(C[i * ldc + j], C0[i * ldc + j])) pad_ok = false;
    CHECK(pad_ok, "%s gemm M=%lld N=%lld: wrote outside C", k->isa, (long long)M, (long long)N);
    lithe__aligned_free(A);
    lithe__aligned_free(B);
    lithe__aligned_free(C);
    lithe__aligned_free(C0);
    lithe__aligned_free(bias);
}

/* One thread vs the pool's threads, and a batch vs its rows one at a time: the same bits. */
static void check_bits_stable(const lithe__sgemm_kernel *k, bool tB, int64_t M, int64_t N, int64_t K) {
    int64_t ldb = tB ? K : N;
    float *A = frand((size_t)(M * K)), *B = frand((size_t)((tB ? N : K) * ldb)), *bias = frand((size_t)N);
    float *C1 = frand((size_t)(M * N)), *C2 = lithe__aligned_alloc((size_t)(M * N) * sizeof(float) + 64),
          *C3 = lithe__aligned_alloc((size_t)(M * N) * sizeof(float) + 64);
    lithe__sgemm_epilogue epi = {.bias = bias};
    lithe__sgemm(k, false, false, tB, M, N, K, 1.0f, A, K, B, ldb, 0.0f, C1, N, &epi);
    lithe__sgemm(k, true, false, tB, M, N, K, 1.0f, A, K, B, ldb, 0.0f, C2, N, &epi);
    for (int64_t i = 0; i < M; i++)
        lithe__sgemm(k, true, false, tB, 1, N, K, 1.0f, A + i * K, K, B, ldb, 0.0f, C3 + i * N, N, &epi);
    CHECK(memcmp(C1, C2, (size_t)(M * N) * sizeof(float)) == 0, "%s gemm %lldx%lldx%lld tB=%d: threads change bits",
          k->isa, (long long)M, (long long)N, (long long)K, tB);
    CHECK(memcmp(C1, C3, (size_t)(M * N) * sizeof(float)) == 0,
          "%s gemm %lldx%lldx%lld tB=%d: rows one at a time differ from the batch", k->isa, (long long)M,
          (long long)N, (long long)K, tB);
    lithe__aligned_free(A);
    lithe__aligned_free(B);
    lithe__aligned_free(bias);
    lithe__aligned_free(C1);
    lithe__aligned_free(C2);
    lithe__aligned_free(C3);
}

/* op(B) packed ahead (lithe__sgemm_pack_b, the weights prepared for inference) against the same
 * call packing as it goes, bit for bit: M = 1 (the one-row kernel, or the microkernel, against
 * the GEMV) and M > 1 at several tile heights; alpha, beta (NaN in an unread C), bias and an
 * activation-free epilogue keeping Z; 1 and 2 threads. */
static void check_prepacked(const lithe__sgemm_kernel *k, bool tB, int64_t M, int64_t N, int64_t K, float alpha,
                            float beta, bool threads) {
    int64_t ldb = tB ? K : N;
    float *A = frand((size_t)(M * K)), *B = frand((size_t)((tB ? N : K) * ldb)), *bias = frand((size_t)N);
    float *C0 = frand((size_t)(M * N)), *C1 = lithe__aligned_alloc((size_t)(M * N) * sizeof(float) + 64),
          *C2 = lithe__aligned_alloc((size_t)(M * N) * sizeof(float) + 64),
          *Z1 = lithe__aligned_alloc((size_t)(M * N) * sizeof(float) + 64),
          *Z2 = lithe__aligned_alloc((size_t)(M * N) * sizeof(float) + 64);
    if (beta == 0.0f)
        for (int64_t i = 0; i < M * N; i++) C0[i] = NAN;
    memcpy(C1, C0, (size_t)(M * N) * sizeof(float));
    memcpy(C2, C0, (size_t)(M * N) * sizeof(float));
    lithe__sgemm_packed_b *P = lithe__sgemm_pack_b(k, tB, K, N, B, ldb);
    CHECK(P != NULL, "%s: pack_b failed", k->isa);
    if (P) {
        lithe__sgemm_epilogue e1 = {.bias = bias, .Z = Z1, .ldz = N}, e2 = {.bias = bias, .Z = Z2, .ldz = N};
        lithe__sgemm(k, threads, false, tB, M, N, K, alpha, A, K, B, ldb, beta, C1, N, &e1);
        lithe__sgemm_prepacked(k, threads, false, tB, M, N, K, alpha, A, K, B, ldb, P, beta, C2, N, &e2);
        size_t bad = 0, first = 0;
        for (size_t i = 0; i < (size_t)(M * N); i++)
            if ((!same_bits(C1[i], C2[i]) || !same_bits(Z1[i], Z2[i])) && !bad++) first = i;
        CHECK(bad == 0,
              "%s gemm %lldx%lldx%lld tB=%d alpha=%g beta=%g threads=%d: packed ahead differs in %zu elements, first "
              "C[%zu] = %.9g, packed as it goes %.9g",
              k->isa, (long long)M, (long long)N, (long long)K, tB, alpha, beta, threads, bad, first, C2[first],
              C1[first]);
    }
    lithe__sgemm_packed_b_free(P);
    lithe__aligned_free(A);
    lithe__aligned_free(B);
    lithe__aligned_free(bias);
    lithe__aligned_free(C0);
    lithe__aligned_free(C1);
    lithe__aligned_free(C2);
    lithe__aligned_free(Z1);
    lithe__aligned_free(Z2);
}

/* ---- the convolution forward (backends/cpu/conv/) on this build's path: with -msimd128 the
 * SIMD128 direct kernel (4 x 8 tiles of output pixels x filters) for every shifted-rows geometry.
 * Against float64 within the rounding of a K-term float sum; in SIMD128 builds also bit for bit
 * against the kernel's order written out (acc from 0 over every tap k in (c, kh, kw) order, the
 * padding's taps included as 0·w, a rounded product and a rounded add each, then + bias, then the
 * clamp); and everywhere an image alone against the batch and W prepared (packed ahead) against
 * not, bit for bit. Geometries: LeNet's two layers, filters not a multiple of 8, output rows
 * narrower than a tile (tiles across rows), stride 2 with uneven padding, dilation and groups,
 * K across the 256 block. */
typedef struct conv_geom {
    int64_t N, C, H, W, M, KH, KW, s0, s1, p0, p1, p2, p3, d0, d1, group;
} conv_geom;

static double act_ref(const lithe__act *a, double v) {
    if (!a) return v;
    if (a->kind == LITHE__ACT_RELU) return v > 0 ? v : 0;
    if (a->kind == LITHE__ACT_CLIPPED_LINEAR) return v < a->min_val ? a->min_val : v > a->max_val ? a->max_val : v;
    return tanh(v);
}

/* specials: NaN, ±inf and -0 among X, W and the bias (float64 not compared; NaN matches any NaN:
 * WebAssembly leaves a NaN's sign and payload open) */
static void check_conv(const conv_geom *cg, const lithe__act *a, bool specials) {
    lithe_backend *cpu = NULL;
    if (lithe_backend_get("cpu", &cpu) != LITHE_OK) {
        CHECK(false, "no cpu backend");
        return;
    }
    lithe__conv2d g = {.N = cg->N, .C = cg->C, .H = cg->H, .W = cg->W, .M = cg->M, .KH = cg->KH, .KW = cg->KW,
                       .group = cg->group, .stride = {cg->s0, cg->s1}, .pad = {cg->p0, cg->p1, cg->p2, cg->p3},
                       .dil = {cg->d0, cg->d1}};
    g.OH = (g.H + g.pad[0] + g.pad[2] - g.dil[0] * (g.KH - 1) - 1) / g.stride[0] + 1;
    g.OW = (g.W + g.pad[1] + g.pad[3] - g.dil[1] * (g.KW - 1) - 1) / g.stride[1] + 1;
    int64_t Cg = g.C / g.group, Mg = g.M / g.group, K = Cg * g.KH * g.KW, P = g.OH * g.OW;
    size_t xi = (size_t)(g.C * g.H * g.W), yi = (size_t)(g.M * P);
    float *X = frand(xi * (size_t)g.N), *W = frand((size_t)(g.M * K)), *b = frand((size_t)g.M);
    float *Y = frand(yi * (size_t)g.N), *Y1 = frand(yi), *Yp = frand(yi * (size_t)g.N);
    if (specials) { /* NaN and infinities through the accumulators, the clamp and the store; -0 weights */
        size_t nx = xi * (size_t)g.N, nw = (size_t)(g.M * K);
        X[nx / 3] = NAN, X[nx / 2] = INFINITY, X[nx - 1] = -INFINITY, X[1] = -0.0f;
        W[nw / 2] = -INFINITY, W[0] = -0.0f, W[nw - 1] = -0.0f, b[g.M - 1] = -0.0f;
    }
    CHECK(lithe__cpu_conv2d(cpu, &g, X, W, b, a, Y) == LITHE_OK, "conv2d failed");
    double worst = 0;
    bool twin_ok = true;
    for (int64_t n = 0; n < g.N; n++)
        for (int64_t m = 0; m < g.M; m++)
            for (int64_t oh = 0; oh < g.OH; oh++)
                for (int64_t ow = 0; ow < g.OW; ow++) {
                    int64_t gi = m / Mg;
                    double s = b[m], mag = fabs(b[m]);
                    float acc = 0.0f;
                    for (int64_t c = 0; c < Cg; c++)
                        for (int64_t kh = 0; kh < g.KH; kh++)
                            for (int64_t kw = 0; kw < g.KW; kw++) {
                                int64_t h = oh * g.stride[0] - g.pad[0] + kh * g.dil[0];
                                int64_t w = ow * g.stride[1] - g.pad[1] + kw * g.dil[1];
                                float wt = W[(m * Cg + c) * g.KH * g.KW + kh * g.KW + kw];
                                float x = h >= 0 && h < g.H && w >= 0 && w < g.W
                                              ? X[((n * g.C + gi * Cg + c) * g.H + h) * g.W + w]
                                              : 0.0f;
                                float prod = x * wt;
                                acc = acc + prod;
                                s += (double)x * wt;
                                mag += fabs((double)x * wt);
                            }
                    float got = Y[((n * g.M + m) * g.OH + oh) * g.OW + ow];
                    double err = fabs(got - act_ref(a, s)) / (mag + (a && a->kind == LITHE__ACT_TANH ? 1.0 : 1e-30));
                    if (!(err <= worst)) worst = err;
#if defined(__wasm_simd128__)
                    float t = acc + b[m];
                    if (a && a->kind == LITHE__ACT_RELU) t = t <= 0.0f ? 0.0f : t; /* NaN stays NaN */
                    if (a && a->kind == LITHE__ACT_CLIPPED_LINEAR) {
                        t = t + 0.0f;
                        t = t < a->min_val ? a->min_val : t > a->max_val ? a->max_val : t;
                    }
                    if (!a || a->kind == LITHE__ACT_RELU || a->kind == LITHE__ACT_CLIPPED_LINEAR)
                        twin_ok = twin_ok && (same_bits(t, got) || (isnan(t) && isnan(got)));
#endif
                }
    (void)twin_ok;
    CHECK(specials || worst <= 4 * 1.2e-7 * sqrt((double)K + 1) + 1e-7,
          "conv2d C=%lld M=%lld %lldx%lld k%lldx%lld s%lld p%lld d%lld g%lld act=%d: off by %.3g of the magnitude",
          (long long)g.C, (long long)g.M, (long long)g.H, (long long)g.W, (long long)g.KH, (long long)g.KW,
          (long long)g.stride[0], (long long)g.pad[0], (long long)g.dil[0], (long long)g.group, a ? (int)a->kind : -1,
          worst);
#if defined(__wasm_simd128__)
    CHECK(twin_ok, "conv2d C=%lld M=%lld %lldx%lld k%lldx%lld: not the direct kernel's order bit for bit",
          (long long)g.C, (long long)g.M, (long long)g.H, (long long)g.W, (long long)g.KH, (long long)g.KW);
#endif
    /* an image alone: its bits in the batch; W packed ahead (group 1): the same bits */
    lithe__conv2d g1 = g;
    g1.N = 1;
    bool alone = true;
    for (int64_t n = 0; n < g.N; n++) {
        CHECK(lithe__cpu_conv2d(cpu, &g1, X + (size_t)n * xi, W, b, a, Y1) == LITHE_OK, "conv2d failed");
        alone = alone && same_floats(Y1, Y + (size_t)n * yi, yi);
    }
    CHECK(alone, "conv2d C=%lld M=%lld: an image alone differs from the batch", (long long)g.C, (long long)g.M);
    if (g.group == 1) {
        lithe__sgemm_packed_b *Wp = lithe__sgemm_pack_b(NULL, true, K, g.M, W, K);
        CHECK(Wp && lithe__cpu_conv2d_packed(cpu, &g, X, W, Wp, b, a, Yp) == LITHE_OK, "prepared conv2d failed");
        CHECK(same_floats(Yp, Y, yi * (size_t)g.N),
              "conv2d C=%lld M=%lld: W prepared gives other bits", (long long)g.C, (long long)g.M);
        /* a residual after it (lithe__cpu_conv2d_add, a graph's fused Conv + Add; no act): the
         * convolution's bits, then one rounded add in either operand order */
        for (int first = 0; first < 2 && !a; first++) {
            float *R = frand(yi * (size_t)g.N);
            if (specials) R[0] = NAN, R[yi / 2] = -0.0f;
            CHECK(lithe__cpu_conv2d_add(cpu, &g, X, W, first ? Wp : NULL, b, R, first, Yp) == LITHE_OK,
                  "conv2d_add failed");
            bool res_ok = true;
            for (size_t i = 0; i < yi * (size_t)g.N; i++) {
                float t = first ? R[i] + Y[i] : Y[i] + R[i];
                res_ok = res_ok && (same_bits(t, Yp[i]) || (isnan(t) && isnan(Yp[i])));
            }
            CHECK(res_ok, "conv2d_add C=%lld M=%lld first=%d: not the convolution's bits plus the residual",
                  (long long)g.C, (long long)g.M, first);
            lithe__aligned_free(R);
        }
        lithe__sgemm_packed_b_free(Wp);
    }
    lithe__aligned_free(X), lithe__aligned_free(W), lithe__aligned_free(b);
    lithe__aligned_free(Y), lithe__aligned_free(Y1), lithe__aligned_free(Yp);
}

static void check_convs(void) {
    const conv_geom cs[] = {
        {2, 1, 28, 28, 16, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, 1},  /* LeNet conv1 */
        {2, 16, 14, 14, 32, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, 1}, /* LeNet conv2 */
        {3, 3, 5, 3, 13, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},    /* 3-wide rows: tiles across rows; 13 filters */
        {2, 4, 9, 11, 6, 3, 3, 2, 2, 1, 0, 1, 1, 1, 1, 2},    /* stride 2, uneven padding, 2 groups */
        {2, 3, 12, 10, 9, 3, 2, 1, 1, 2, 1, 0, 2, 2, 1, 1},   /* dilation 2 down, 3x2 kernel */
        {2, 30, 7, 7, 9, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},    /* K = 270: two K blocks */
        {1, 2, 1, 1, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},     /* one output pixel */
        /* pointwise (1x1, stride 1; SIMD128: the direct kernel where K + 1 <= 256 and 16+ pixels) */
        {2, 16, 12, 12, 13, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1}, /* 144 pixels, 13 filters (a last sliver of 5) */
        {1, 5, 7, 7, 9, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1},     /* 49 pixels: a last tile of 1 */
        {1, 7, 3, 6, 8, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1},     /* 18 pixels: a last tile of 2 */
        {1, 3, 3, 5, 4, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1},     /* 15 pixels: the GEMM */
        {1, 16, 56, 56, 24, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1}, /* mobilenet_v2's 16 -> 24 shape: many chunks */
        {1, 255, 5, 4, 11, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1},  /* K = 255 + the bias step: one GEMM block */
        {1, 256, 4, 5, 9, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1},   /* K = 256: the GEMM */
        {2, 8, 6, 6, 6, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 2},     /* 2 groups */
        {1, 6, 9, 9, 10, 1, 1, 2, 2, 0, 0, 0, 0, 1, 1, 1},    /* 1x1 at stride 2: shifted rows */
    };
    lithe__act relu = {.kind = LITHE__ACT_RELU};
    lithe__act clip = {.kind = LITHE__ACT_CLIPPED_LINEAR, .slope = 1.0f, .min_val = -0.25f, .max_val = 0.5f};
    lithe__act th = {.kind = LITHE__ACT_TANH};
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        check_conv(&cs[i], NULL, false);
        check_conv(&cs[i], i % 3 == 0 ? &relu : i % 3 == 1 ? &clip : &th, false);
    }
    const conv_geom sp[] = {{1, 9, 5, 7, 11, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1}, /* pointwise, 35 pixels */
                            {1, 3, 6, 6, 10, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1}}; /* 3x3, padding 1 */
    for (size_t i = 0; i < sizeof sp / sizeof sp[0]; i++) {
        check_conv(&sp[i], NULL, true);
        check_conv(&sp[i], &relu, true);
        check_conv(&sp[i], &clip, true);
    }
}

/* test_gemm_ukernels --bench M N K [ISA]: GFLOP/s of C = A·Bᵀ (a dense layer's forward), one
 * thread, the best of 30 timed runs after a warm-up, by the process's CPU time (on a shared
 * machine the wall clock also counts the time other processes hold the core). Not part of the
 * checks: a figure for docs/. */
static int bench(int64_t M, int64_t N, int64_t K, const char *isa) {
    const lithe__sgemm_kernel *k = isa ? lithe__sgemm_kernel_named(isa) : lithe__sgemm_kernel_best();
    if (!k || M < 1 || N < 1 || K < 1) {
        printf("bench: no kernel %s, or a bad shape\n", isa ? isa : "");
        return 2;
    }
    float *A = frand((size_t)(M * K)), *B = frand((size_t)(N * K)), *C = frand((size_t)(M * N));
    double best = 1e30;
    int reps = 2.0 * (double)M * N * K < 1e8 ? 5 : 1;
    for (int r = 0; r < 31; r++) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
        for (int i = 0; i < reps; i++) lithe__sgemm(k, false, false, true, M, N, K, 1.0f, A, K, B, K, 0.0f, C, N, NULL);
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
        double s = ((double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec)) / reps;
        if (r > 0 && s < best) best = s;
    }
    printf("gemm %s %lldx%lldx%lld: %.3f ms of CPU time, gflops=%.2f\n", k->isa, (long long)M, (long long)N, (long long)K,
           best * 1e3, 2.0 * (double)M * N * K / best * 1e-9);
    lithe__aligned_free(A);
    lithe__aligned_free(B);
    lithe__aligned_free(C);
    return 0;
}

/* The build's gemm.h constants (LITHE__SGEMM_FORM_*) agree with the kernel: a member no kernel of
 * the build is said to have is NULL (else the driver would ignore it), one every kernel is said to
 * have is set (else the driver would call NULL). */
static void check_forms(const lithe__sgemm_kernel *k) {
#define FORM(m)                                                                                                   \
    CHECK((LITHE__SGEMM_FORM_##m || !k->m) && (LITHE__SGEMM_FORM_##m != 2 || k->m),                              \
          "%s %dx%d: has %s = %s, but gemm.h's LITHE__SGEMM_FORM_%s is %d", k->isa, k->mr, k->nr, #m,             \
          k->m ? "set" : "NULL", #m, LITHE__SGEMM_FORM_##m);
    FORM(pack_a) FORM(pack_b) FORM(ukernel_b) FORM(ukernel_ap) FORM(ukernel_bp) FORM(ukernel_a) FORM(pack_a_ptrs)
    FORM(pack_segs) FORM(transpose) FORM(add_tile) FORM(gemv_tm) FORM(pack_a_taps) FORM(pack_b_taps)
#undef FORM
}

int main(int argc, char **argv) {
    if (argc >= 5 && strcmp(argv[1], "--bench") == 0)
        return bench(atoll(argv[2]), atoll(argv[3]), atoll(argv[4]), argc > 5 ? argv[5] : NULL);
    lithe_backend *cpu = NULL;
    if (lithe_backend_get("cpu", &cpu) == LITHE_OK && lithe_backend_threads(cpu) < 2)
        (void)lithe_backend_set_threads(cpu, 2); /* a pool of one without threads (WebAssembly) */
    int kernels = 0;
    for (size_t s = 0; s < N_ISAS; s++) {
        const lithe__sgemm_kernel *k = lithe__sgemm_kernel_named(isas[s].isa);
        if (!k) {
            printf("gemm_ukernels: %s not in this build or CPU\n", isas[s].isa);
            continue;
        }
        kernels++;
        printf("gemm_ukernels: %s %dx%d (mc %d, kc %d, nc %d)%s\n", k->isa, k->mr, k->nr, k->mc, k->kc, k->nc,
               k == lithe__sgemm_kernel_best() ? ", the default" : "");
        CHECK(strcmp(k->isa, isas[s].isa) == 0 && k->mc % k->mr == 0 && k->nc % k->nr == 0,
              "%s: blocking mc %d / nc %d not multiples of the tile %dx%d", isas[s].isa, k->mc, k->nc, k->mr, k->nr);
        check_forms(k);
        check_ukernel(k, isas[s].fused);
        check_clamp(k, isas[s].fused);
        check_bias_rows(k);
        /* the other tile heights a kernel runs for some row counts (for_rows), each once */
        const lithe__sgemm_kernel *seen[16] = {k};
        size_t n_seen = 1;
        for (int64_t M = 1; k->for_rows && M <= 64; M++) {
            const lithe__sgemm_kernel *v = k->for_rows(M);
            bool is_new = true;
            for (size_t i = 0; i < n_seen; i++) is_new = is_new && seen[i] != v;
            if (!is_new || n_seen == 16) continue;
            seen[n_seen++] = v;
            CHECK(v->nr == k->nr && v->kc == k->kc && v->mc % v->mr == 0, "%s: the %dx%d variant's nr, kc or mc",
                  k->isa, v->mr, v->nr);
            printf("gemm_ukernels: %s %dx%d (mc %d) for some row counts\n", v->isa, v->mr, v->nr, v->mc);
            check_forms(v);
            check_ukernel(v, isas[s].fused);
            check_clamp(v, isas[s].fused);
            check_bias_rows(v);
        }
        int64_t mr = k->mr, nr = k->nr, kc = k->kc;
        const int64_t shapes[][3] = {{1, 1, 1},          {mr, nr, 1},         {mr - 1, nr + 1, 5},
                                     {mr + 1, nr - 1, kc}, {2 * mr + 3, 3 * nr + 1, kc + 1}, {1, 2 * nr + 5, 2 * kc + 3},
                                     {37, 29, 3},        {3 * mr, 64, 2 * kc}};
        for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
            for (int t = 0; t < 4; t++) {
                int64_t M = shapes[si][0] > 0 ? shapes[si][0] : 1, N = shapes[si][1] > 0 ? shapes[si][1] : 1;
                check_gemm(k, t & 1, t & 2, M, N, shapes[si][2], 1.0f, 0.0f, false);
                check_gemm(k, t & 1, t & 2, M, N, shapes[si][2], -0.5f, 0.75f, t == 3);
            }
        check_gemm(k, false, true, 64, 100, 784, 1.0f, 0.0f, true); /* a dense layer's X·Wᵀ + b */
        check_bits_stable(k, true, 33, 2 * nr * 3 + 7, kc + 9);
        check_bits_stable(k, false, 7, 130, 2 * kc + 1);
        const int64_t pm[] = {1, 2, mr, mr + 1, 2 * mr + 3, 64};
        const int64_t pn[] = {1, nr - 1, 4 * nr, 4 * nr + 3, 9 * nr + 1, 130};
        for (size_t i = 0; i < sizeof pm / sizeof pm[0]; i++)
            for (size_t j = 0; j < sizeof pn / sizeof pn[0]; j++) {
                int64_t N = pn[j] > 0 ? pn[j] : 1, K = j % 3 == 0 ? 5 : j % 3 == 1 ? kc : 2 * kc + 3;
                check_prepacked(k, true, pm[i], N, K, 1.0f, 0.0f, (i + j) % 2 == 0);
                check_prepacked(k, (i + j) % 2 == 1, pm[i], N, K + 1, -0.5f, 0.75f, (i + j) % 2 == 1);
            }
    }
    CHECK(kernels >= 1, "no kernel at all");
    check_convs();
#if defined(__aarch64__)
    CHECK(strcmp(lithe__sgemm_kernel_best()->isa, "neon") == 0, "aarch64 build: the default kernel is %s, not neon",
          lithe__sgemm_kernel_best()->isa);
#endif
#if defined(__wasm_simd128__)
    CHECK(strcmp(lithe__sgemm_kernel_best()->isa, "wasmsimd") == 0,
          "SIMD128 build: the default kernel is %s, not wasmsimd", lithe__sgemm_kernel_best()->isa);
#endif
    printf("gemm_ukernels: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
