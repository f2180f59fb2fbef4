/* Every int8 GEMM microkernel this build has (backends/cpu/gemm/qgemm.h: scalar, AVX2, AVX-512
 * VNNI, NEON, NEON dot product, WebAssembly SIMD128 or relaxed SIMD) against int64 sums, bit for
 * bit: random codes and the extremes (u7 127 x s8 +-127: the int16 pair bounds of vpmaddubsw,
 * smlal and dot_i16x8; the i7 operand of relaxed_dot at its top), every edge tile (mr 1..4,
 * nr 1..2), kw with a partial last chunk of 16, 32 and 64 bytes. Then the whole int8 GEMM
 * (lithe__q8_gemm: activation quantization, tiles, epilogue) with each kernel against the scalar
 * kernel's output, bit for bit (the int32 sums are exact, so every kernel gives the same bits), and
 * against a float64 product of the dequantized operands.
 *
 * Plain C (no cmocka), so the wasi preset builds it too: tests/wasm runs it under node:wasi with the
 * SIMD128 kernel. Ends with "q8_ukernels: N passed, M failed" and exits non-zero on a failure. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime for --bench */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lithe.h"
#include "../backends/cpu/gemm/qgemm.h"

#include "count_check.h"

static uint64_t rng = 0x9E3779B97F4A7C15u;
static uint32_t next(void) {
    rng ^= rng >> 12, rng ^= rng << 25, rng ^= rng >> 27;
    return (uint32_t)((rng * 0x2545F4914F6CDD1Du) >> 32);
}

static void check_tiles(const lithe__q8_kernel *k) {
    if (!k->tile) return; /* (a packed tile only: check_ptiles) */
    enum { KC = 1024 + 64 };
    static uint8_t a[4 * KC];
    static int8_t w[2 * KC];
    const size_t kws[] = {1, 7, 15, 16, 17, 31, 33, 64, 100, 1000, 1024};
    for (int trial = 0; trial < 4; trial++)
        for (size_t q = 0; q < sizeof kws / sizeof *kws; q++) {
            const size_t kw = kws[q];
            for (size_t i = 0; i < 4 * KC; i++)
                a[i] = (uint8_t)(trial == 1 || trial == 2 ? 127 : trial == 3 ? (next() % 2) * 127 : next() % 128);
            for (size_t i = 0; i < 2 * KC; i++)
                w[i] = (int8_t)(trial == 1 ? 127 : trial == 2 ? -127 : trial == 3 ? (next() % 2 ? 127 : -127)
                                                                                : (int)(next() % 255) - 127);
            for (size_t i = 0; i < 4; i++) memset(a + i * KC + kw, 0, KC - kw); /* a is zero past kw */
            /* w past kw is never read: poison it (-128 is outside every kernel's exact range) */
            for (size_t j = 0; j < 2; j++) memset(w + j * KC + kw, 0x80, KC - kw);
            for (size_t mr = 1; mr <= 4; mr++)
                for (size_t nr = 1; nr <= 2; nr++) {
                    int32_t acc[8];
                    for (int e = 0; e < 8; e++) acc[e] = 0x5A5A5A5A;
                    k->tile(mr, nr, kw, a, KC, w, KC, acc);
                    for (size_t i = 0; i < mr; i++)
                        for (size_t j = 0; j < nr; j++) {
                            int64_t want = 0;
                            for (size_t kk = 0; kk < kw; kk++) want += (int64_t)a[i * KC + kk] * w[j * KC + kk];
                            CHECK(acc[i * 2 + j] == want, "%s %zux%zu kw %zu trial %d: acc[%zu][%zu] = %d, want %lld",
                                  k->isa, mr, nr, kw, trial, i, j, acc[i * 2 + j], (long long)want);
                        }
                }
        }
}

#if defined(LITHE__Q8_PACKED)
/* A kernel's packed tile (qgemm.h's ptile, over lithe__q8_pack's W) against int64 sums and the
 * scalar twin lithe__q8_ptile_ref, bit for bit: random codes and the extremes (u8 255 x s8 +-127),
 * every row count (1..PMR) and panel width (nc 1..PW: one to four vectors, partial ones), K not a
 * multiple of 4; columns past nc (the panel's padding) sum to 0 */
static void check_ptiles(const lithe__q8_kernel *k) {
    if (!k->ptile) return;
    enum { KMAX = 200, LDA = 256 };
    static uint8_t a[LITHE__Q8_PMR * LDA];
    static int8_t W[LITHE__Q8_PW * KMAX];
    _Alignas(64) static int8_t wp[2 * LITHE__Q8_PW * (KMAX + 8)]; /* (WebAssembly's: int16) */
    _Alignas(64) static int32_t acc[LITHE__Q8_PMR * LITHE__Q8_PW], ref[LITHE__Q8_PMR * LITHE__Q8_PW];
    const int64_t Ks[] = {1, 3, 4, 5, 63, 64, 65, 199};
    const int64_t ncs[] = {1, 10, 15, 16, 17, 31, 33, 48, 50, 63, 64};
    for (int trial = 0; trial < 3; trial++)
        for (size_t q = 0; q < sizeof Ks / sizeof *Ks; q++)
            for (size_t t = 0; t < sizeof ncs / sizeof *ncs; t++) {
                const int64_t K = Ks[q], nc = ncs[t], k4 = (K + 3) / 4;
                for (size_t i = 0; i < sizeof a; i++)
                    a[i] = (uint8_t)(trial == 1 ? 255 : trial == 2 ? (next() % 2) * 255 : next() % 256);
                for (size_t i = 0; i < LITHE__Q8_PMR; i++) memset(a + i * LDA + K, 0, (size_t)(LDA - K)); /* zero past K */
                for (int64_t i = 0; i < nc * K; i++)
                    W[i] = (int8_t)(trial == 1 ? (i % 3 ? 127 : -127) : trial == 2 ? -127 : (int)(next() % 255) - 127);
                CHECK(lithe__q8_pack_size(nc, K) == LITHE__Q8_PW * lithe__q8_pack_col(K) &&
                          lithe__q8_pack_size(nc, K) <= sizeof wp, "pack size %lld x %lld", (long long)nc, (long long)K);
                lithe__q8_pack(nc, K, W, K, wp);
                for (size_t mr = 1; mr <= LITHE__Q8_PMR; mr++) {
                    for (size_t e = 0; e < sizeof acc / sizeof *acc; e++) acc[e] = ref[e] = 0x5A5A5A5A;
                    k->ptile(mr, (size_t)nc, (size_t)k4, a, LDA, wp, acc);
                    lithe__q8_ptile_ref(mr, (size_t)nc, (size_t)k4, a, LDA, wp, ref);
#if defined(__wasm_simd128__)
                    const int64_t nv16 = (nc + 3) / 4 * 4; /* (groups of 4 columns) */
#else
                    const int64_t nv16 = (nc + 15) / 16 * 16;
#endif
                    for (size_t i = 0; i < mr; i++)
                        for (int64_t c = 0; c < nv16; c++) {
                            int64_t want = 0;
                            for (int64_t kk = 0; c < nc && kk < K; kk++) want += (int64_t)a[i * LDA + kk] * W[c * K + kk];
                            const size_t e = i * LITHE__Q8_PW + (size_t)c;
                            CHECK(acc[e] == want && ref[e] == want, "%s ptile %zux%lld K %lld trial %d: acc[%zu][%lld] = %d, twin %d, want %lld",
                                  k->isa, mr, (long long)nc, (long long)K, trial, i, (long long)c, acc[e], ref[e], (long long)want);
                        }
                }
            }
}
#endif

/* the whole product: Y = A · dequant(W)ᵀ + b, per-row weight scales */
static void check_gemm(const lithe__q8_kernel *k, const lithe__q8_kernel *ref) {
    /* shapes 5 and 6: reduce_range weights (|w| <= 64), which a u7 kernel takes with the codes whole
     * (lithe__q8_pairs_fit): random, and every code at its top against 64s (pairs of 255 · 64 · 2) */
    const int64_t shapes[][3] = {{1, 10, 784}, {3, 7, 33}, {64, 67, 700}, {5, 128, 16}, {9, 3, 1}, {13, 9, 101}, {4, 3, 67}};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        const int64_t M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
        float *A = malloc((size_t)(M * K) * sizeof *A), *b = malloc((size_t)N * sizeof *b), *sw = malloc((size_t)N * sizeof *sw);
        float *Y = malloc((size_t)(M * N) * sizeof *Y), *Yr = malloc((size_t)(M * N) * sizeof *Yr);
        int8_t *W = malloc((size_t)(N * K));
        int32_t *wsum = malloc((size_t)N * sizeof *wsum);
        for (int64_t i = 0; i < M * K; i++) A[i] = (float)((int)(next() % 2001) - 1000) / (s == 3 ? 10.0f : 500.0f) + (s == 3 ? 50.0f : 0.0f);
        for (int64_t i = 0; i < N * K; i++) W[i] = (int8_t)((int)(next() % 255) - 127);
        for (int64_t j = 0; j < N; j++) b[j] = (float)(next() % 100) / 100.0f, sw[j] = 0.001f * (float)(1 + next() % 10);
        CHECK(lithe__q8_row_sums(N, K, W, K, wsum), "row sums");
        int rc = lithe__q8_gemm(k, false, M, N, K, A, K, W, K, wsum, NULL, sw, N, b, NULL, NULL, NULL, Y, N);
        int rr = lithe__q8_gemm(ref, false, M, N, K, A, K, W, K, wsum, NULL, sw, N, b, NULL, NULL, NULL, Yr, N);
        CHECK(rc == 0 && rr == 0, "%s gemm %lldx%lldx%lld: rc %d / %d", k->isa, (long long)M, (long long)N, (long long)K, rc, rr);
        double worst = 0.0;
        for (int64_t i = 0; i < M; i++) {
            double amax = 0.0, amin = 0.0;
            for (int64_t kk = 0; kk < K; kk++) amax = fmax(amax, A[i * K + kk]), amin = fmin(amin, A[i * K + kk]);
            const double sa = (amax - amin) / 127.0;
            for (int64_t j = 0; j < N; j++) {
                double want = b[j], wabs = 0.0, awabs = 0.0;
                for (int64_t kk = 0; kk < K; kk++) {
                    want += (double)A[i * K + kk] * sw[j] * W[j * K + kk];
                    wabs += fabs(sw[j] * W[j * K + kk]);
                    awabs += fabs(A[i * K + kk] * sw[j] * W[j * K + kk]);
                }
                /* activation rounding: at most sa / 2 per element; the float32 epilogue's roundings */
                double err = fabs(Y[i * N + j] - want) / (0.5 * sa * wabs + 1e-6 * (awabs + sa * wabs * 127.0) + 1e-6 * fabs(b[j]));
                worst = fmax(worst, err);
                CHECK(memcmp(&Y[i * N + j], &Yr[i * N + j], sizeof(float)) == 0, "%s gemm %lldx%lldx%lld: Y[%lld][%lld] %.9g, scalar %.9g",
                      k->isa, (long long)M, (long long)N, (long long)K, (long long)i, (long long)j, Y[i * N + j], Yr[i * N + j]);
            }
        }
        CHECK(worst <= 1.0, "%s gemm %lldx%lldx%lld: error %.3g of its bound", k->isa, (long long)M, (long long)N, (long long)K, worst);
        free(A), free(b), free(sw), free(Y), free(Yr), free(W), free(wsum);
    }
}

/* static activations (lithe__q8_gemm_static): int8 and uint8 codes over their whole range (the
 * extremes -128 / 127, 0 / 255 included: a u7 kernel takes them in two halves, an s8 one shifted),
 * every kernel against the scalar kernel bit for bit and against the exact int64 sum */
static void check_gemm_static(const lithe__q8_kernel *k, const lithe__q8_kernel *ref) {
    /* shapes 5 and 6: reduce_range weights (|w| <= 64), which a u7 kernel takes with the codes whole
     * (lithe__q8_pairs_fit): random, and every code at its top against 64s (pairs of 255 · 64 · 2) */
    const int64_t shapes[][3] = {{1, 10, 784}, {3, 7, 33}, {64, 67, 700}, {5, 128, 16}, {9, 3, 1}, {13, 9, 101}, {4, 3, 67}};
    for (int sgn = 0; sgn < 2; sgn++)
        for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
            const int64_t M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
            uint8_t *A = malloc((size_t)(M * K));
            float *b = malloc((size_t)N * sizeof *b), *sw = malloc((size_t)N * sizeof *sw);
            float *Y = malloc((size_t)(M * N) * sizeof *Y), *Yr = malloc((size_t)(M * N) * sizeof *Yr);
            int8_t *W = malloc((size_t)(N * K));
            int32_t *wsum = malloc((size_t)N * sizeof *wsum);
            for (int64_t i = 0; i < M * K; i++) A[i] = (uint8_t)(s == 3 ? (next() % 2 ? 0x7f : 0x80) : s == 4 ? 0xff : next() % 256);
            for (int64_t i = 0; i < N * K; i++) W[i] = (int8_t)(s == 3 || s == 4 ? (next() % 2 ? 127 : -127) : (int)(next() % 255) - 127);
            for (int64_t i = 0; s >= 5 && i < N * K; i++) W[i] = (int8_t)(s == 5 ? (int)(next() % 129) - 64 : i % 3 ? 64 : -64);
            for (int64_t i = 0; s == 6 && i < M * K; i++) A[i] = sgn ? 0x7f : 0xff;
            CHECK(lithe__q8_pairs_fit(N, K, W, K) == (s >= 4), "pairs_fit on shape %zu", s); /* K = 1: one code a pair */
            for (int64_t j = 0; j < N; j++) b[j] = (float)(next() % 100) / 100.0f, sw[j] = 0.001f * (float)(1 + next() % 10);
            const float sa = 0.0123f;
            const int32_t za = sgn ? (int32_t)(next() % 256) - 128 : (int32_t)(next() % 256);
            CHECK(lithe__q8_row_sums(N, K, W, K, wsum), "row sums");
            int rc = lithe__q8_gemm_static(k, false, M, N, K, A, sgn, K, sa, za, W, K, wsum, NULL, -1, sw, N, b, NULL, NULL, NULL, Y, N);
            int rr = lithe__q8_gemm_static(ref, false, M, N, K, A, sgn, K, sa, za, W, K, wsum, NULL, -1, sw, N, b, NULL, NULL, NULL, Yr, N);
            CHECK(rc == 0 && rr == 0, "%s static gemm: rc %d / %d", k->isa, rc, rr);
            for (int64_t i = 0; i < M; i++)
                for (int64_t j = 0; j < N; j++) {
                    int64_t acc = 0;
                    for (int64_t kk = 0; kk < K; kk++)
                        acc += ((sgn ? (int64_t)(int8_t)A[i * K + kk] : (int64_t)A[i * K + kk]) - za) * W[j * K + kk];
                    double want = (double)acc * sa * sw[j] + b[j];
                    CHECK(fabs(Y[i * N + j] - want) <= 1e-6 * (fabs(want) + fabs((double)acc * sa * sw[j])) + 1e-6,
                          "%s static gemm %s %lldx%lldx%lld: Y[%lld][%lld] %.9g, want %.9g", k->isa, sgn ? "s8" : "u8",
                          (long long)M, (long long)N, (long long)K, (long long)i, (long long)j, Y[i * N + j], want);
                    CHECK(memcmp(&Y[i * N + j], &Yr[i * N + j], sizeof(float)) == 0, "%s static gemm: Y[%lld][%lld] %.9g, scalar %.9g",
                          k->isa, (long long)i, (long long)j, Y[i * N + j], Yr[i * N + j]);
                }
            free(A), free(b), free(sw), free(Y), free(Yr), free(W), free(wsum);
        }
}

/* QuantizeLinear's codes of x (the graph's quant_codes, written out here as ONNX states it): the
 * test's own oracle for the kernels' quantize passes */
static uint8_t code_u(float x, float s, int32_t z, int32_t qmin, int32_t qmax, int32_t base) {
    if (isnan(x)) return (uint8_t)(qmin - base);
    float t = x / s;
    double r = nearbyint((double)t) + z; /* t is a float: rint of it, ties to even */
    r = r < qmin ? qmin : r > qmax ? qmax : r;
    return (uint8_t)((int32_t)r - base);
}

/* each kernel's quantize pass against the oracle and the scalar twin, byte for byte: ties (k + 0.5
 * times the scale), NaN, ±inf, ±0, values past both ends, lengths around the 16 / 32 steps; then its
 * epilogue against the scalar twin, bit for bit (per-column and one scale, with and without bias) */
static void check_passes(const lithe__q8_kernel *k) {
    enum { NX = 100 };
    static const struct {
        float s;
        int32_t z, qmin, qmax, base;
    } P[] = {{0.05f, 0, 0, 255, 0}, {0.0123f, 103, 0, 255, 0}, {0.02f, -5, -128, 127, -128}, {0.5f, 10, 0, 127, 0}, {1.0f, 0, -127, 127, -128}};
    const size_t ns[] = {1, 15, 16, 17, 31, 32, 33, 64, 99, NX};
    float x[NX];
    uint8_t u[NX + 1], ur[NX + 1];
    for (size_t p = 0; p < sizeof P / sizeof *P; p++) {
        const lithe__q8_qx q = {P[p].s, (float)(P[p].qmin - P[p].z), (float)(P[p].qmax - P[p].z), (float)(P[p].z - P[p].base)};
        for (int trial = 0; trial < 20; trial++) {
            for (int i = 0; i < NX; i++) {
                int r = (int)(next() % 400) - 200;
                x[i] = trial % 2 ? ((float)r + 0.5f) * P[p].s : (float)((int)(next() % 20001) - 10000) / 10000.0f * 8.0f;
            }
            x[3] = NAN, x[7] = INFINITY, x[11] = -INFINITY, x[13] = -0.0f, x[17] = 0.0f, x[19] = 1e30f, x[23] = -1e30f;
            x[NX - 1] = NAN;
            for (size_t t = 0; t < sizeof ns / sizeof *ns; t++) {
                const size_t n = ns[t];
                memset(u, 0xA5, sizeof u), memset(ur, 0xA5, sizeof ur);
                (k->quant ? k->quant : lithe__q8_quant_ref)(n, x, &q, u);
                lithe__q8_quant_ref(n, x, &q, ur);
                CHECK(u[n] == 0xA5, "%s quant wrote past n %zu", k->isa, n);
                for (size_t i = 0; i < n; i++) {
                    uint8_t want = code_u(x[i], P[p].s, P[p].z, P[p].qmin, P[p].qmax, P[p].base);
                    CHECK(u[i] == want && ur[i] == want, "%s quant %zu of %zu: x %.9g -> %u, twin %u, want %u", k->isa, i, n,
                          (double)x[i], u[i], ur[i], want);
                }
            }
        }
    }
    enum { NE = 37 };
    int32_t acc[NE], wsum[NE];
    float sw[NE], b[NE], y[NE + 1], yr[NE + 1];
    for (int trial = 0; trial < 8; trial++) {
        for (int c = 0; c < NE; c++) {
            acc[c] = (int32_t)(next() % 2000001) - 1000000, wsum[c] = (int32_t)(next() % 20001) - 10000;
            sw[c] = 0.0001f * (float)(1 + next() % 1000), b[c] = (float)((int)(next() % 2001) - 1000) / 7.0f;
        }
        const int32_t za = (int32_t)(next() % 256);
        const float sa = 0.0037f * (float)(1 + trial);
        for (size_t n = 1; n <= NE; n += (n < 17 ? 1 : 10)) {
            memset(y, 0xA5, sizeof y), memset(yr, 0xA5, sizeof yr);
            const bool pc = trial % 2, wb = trial % 4 < 2;
            (k->epi ? k->epi : lithe__q8_epilogue_ref)(n, acc, za, wsum, sa, sw, pc, wb ? b : NULL, y);
            lithe__q8_epilogue_ref(n, acc, za, wsum, sa, sw, pc, wb ? b : NULL, yr);
            CHECK(memcmp(y, yr, sizeof y) == 0, "%s epilogue n %zu (per column %d, bias %d): not the twin's bits", k->isa, n, pc, wb);
            double want = (double)(float)(acc[n - 1] - za * wsum[n - 1]) * (double)(sa * sw[pc ? n - 1 : 0]);
            CHECK(fabs(yr[n - 1] - (want + (wb ? b[n - 1] : 0.0))) <= 1e-6 * fabs(want) + 1e-5 * fabs(wb ? b[n - 1] : 0.0) + 1e-30,
                  "%s epilogue: %.9g, want %.9g", k->isa, (double)yr[n - 1], want);
        }
    }
}

/* lithe__q8_gemm_static_f32 (float activations quantized by the kernel's pass) against the oracle's
 * codes through lithe__q8_gemm_static with the same kernel, bit for bit (int8 and uint8 codes, a
 * zero point inside, the clamp at both ends) */
static void check_gemm_static_f32(const lithe__q8_kernel *k) {
    const int64_t shapes[][3] = {{1, 10, 784}, {3, 7, 33}, {64, 20, 512}, {9, 3, 1}, {13, 9, 101}};
    for (int sgn = 0; sgn < 2; sgn++)
        for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
            const int64_t M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
            float *A = malloc((size_t)(M * K) * sizeof *A), *b = malloc((size_t)N * sizeof *b), *sw = malloc((size_t)N * sizeof *sw);
            float *Y = malloc((size_t)(M * N) * sizeof *Y), *Yr = malloc((size_t)(M * N) * sizeof *Yr);
            uint8_t *C = malloc((size_t)(M * K));
            int8_t *W = malloc((size_t)(N * K));
            int32_t *wsum = malloc((size_t)N * sizeof *wsum);
            const float sa = 0.02f;
            const int32_t qmin = sgn ? -128 : 0, qmax = sgn ? 127 : 255, za = sgn ? -7 : 31, base = sgn ? -128 : 0;
            for (int64_t i = 0; i < M * K; i++) {
                A[i] = (float)((int)(next() % 4001) - 2000) / 500.0f; /* [-4, 4]: past both ends of [-0.62, 4.48] */
                C[i] = (uint8_t)(code_u(A[i], sa, za, qmin, qmax, base) + base); /* the code's byte */
            }
            for (int64_t i = 0; i < N * K; i++) W[i] = (int8_t)(s % 2 ? (int)(next() % 129) - 64 : (int)(next() % 255) - 127);
            for (int64_t j = 0; j < N; j++) b[j] = (float)(next() % 100) / 100.0f, sw[j] = 0.001f * (float)(1 + next() % 10);
            CHECK(lithe__q8_row_sums(N, K, W, K, wsum), "row sums");
            int rc = lithe__q8_gemm_static_f32(k, false, M, N, K, A, K, sa, za, qmin, qmax, sgn, W, K, wsum, NULL, -1, sw, N, b,
                                               NULL, NULL, NULL, Y, N);
            int rr = lithe__q8_gemm_static(k, false, M, N, K, C, sgn, K, sa, za, W, K, wsum, NULL, -1, sw, N, b, NULL, NULL, NULL, Yr, N);
            CHECK(rc == 0 && rr == 0, "%s static f32 gemm: rc %d / %d", k->isa, rc, rr);
            CHECK(memcmp(Y, Yr, (size_t)(M * N) * sizeof *Y) == 0, "%s static f32 gemm %s %lldx%lldx%lld: not the codes' bits",
                  k->isa, sgn ? "s8" : "u8", (long long)M, (long long)N, (long long)K);
            free(A), free(b), free(sw), free(Y), free(Yr), free(C), free(W), free(wsum);
        }
    /* bad quantization parameters: 1, the caller's float path */
    float a = 1.0f, y = 0.0f, sw1 = 1.0f;
    int8_t w1 = 1;
    int32_t ws1 = 1;
    CHECK(lithe__q8_gemm_static_f32(k, false, 1, 1, 1, &a, 1, 0.0f, 0, 0, 255, false, &w1, 1, &ws1, NULL, -1, &sw1, 1, NULL, NULL, NULL, NULL, &y, 1) == 1 &&
              lithe__q8_gemm_static_f32(k, false, 1, 1, 1, &a, 1, NAN, 0, 0, 255, false, &w1, 1, &ws1, NULL, -1, &sw1, 1, NULL, NULL, NULL, NULL, &y, 1) == 1 &&
              lithe__q8_gemm_static_f32(k, false, 1, 1, 1, &a, 1, 1.0f, 300, 0, 255, false, &w1, 1, &ws1, NULL, -1, &sw1, 1, NULL, NULL, NULL, NULL, &y, 1) == 1 &&
              lithe__q8_gemm_static_f32(k, false, 1, 1, 1, &a, 1, 1.0f, 0, -128, 127, false, &w1, 1, &ws1, NULL, -1, &sw1, 1, NULL, NULL, NULL, NULL, &y, 1) == 1,
          "%s static f32 gemm: bad parameters taken", k->isa);
}

/* lithe__q8_pairs_fit at its bound: a pair placed at k0 of row 2 of an otherwise fitting W (past
 * the AVX2 check's 32-code steps and in its scalar tail), the answer of the AVX2 check and the scalar
 * one alike (the dispatch picks AVX2 where the CPU has it) */
static void check_pairs_fit(void) {
    static const struct {
        int a, b;
        bool fit;
    } P[] = {{64, 64, true},   {65, 64, false}, {-64, -64, true}, {-65, -64, false}, {127, -128, true},
             {-128, 0, true},  {-128, -1, false}, {0, 127, true}, {1, 127, true},    {2, 127, false}};
    const int64_t N = 3, K = 71;
    int8_t W[3 * 71];
    for (size_t i = 0; i < sizeof P / sizeof *P; i++)
        for (int64_t k0 = 0; k0 < K - 1; k0 += 34) { /* k0 0, 34 (a 32-code step), 68 (the tail) */
            for (int64_t t = 0; t < N * K; t++) W[t] = (int8_t)(t % 2 ? -60 : 60);
            W[2 * K + k0] = (int8_t)P[i].a, W[2 * K + k0 + 1] = (int8_t)P[i].b;
            CHECK(lithe__q8_pairs_fit(N, K, W, K) == P[i].fit, "pairs_fit (%d, %d) at k %lld", P[i].a, P[i].b, (long long)k0);
            CHECK(lithe__q8_pairs_fit_ref(N, K, W, K) == P[i].fit, "pairs_fit_ref (%d, %d) at k %lld", P[i].a, P[i].b,
                  (long long)k0);
        }
}

/* a tile that reads a as s8 (what NEON's smull / sdot do), to run the static path's s8 shift on every host */
static void tile_s8(size_t mr, size_t nr, size_t kw, const uint8_t *a, size_t lda, const int8_t *w, size_t ldw, int32_t *acc) {
    for (size_t i = 0; i < mr; i++)
        for (size_t j = 0; j < nr; j++) {
            int32_t t = 0;
            for (size_t kk = 0; kk < kw; kk++) t += (int32_t)(int8_t)a[i * lda + kk] * w[j * ldw + kk];
            acc[i * LITHE__Q8_NR + j] = t;
        }
}
static const lithe__q8_kernel s8_kernel = {"s8 (test)", tile_s8, LITHE__Q8_A_S8, NULL, NULL LITHE__Q8_NO_PTILE};

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

/* --bench M N K: the best kernel's int8 GEMM, one thread, min over 200 runs: the dynamic product
 * (activations quantized per row), the static one from float32 (what a QDQ graph's fused:QLinear
 * runs) with W packed ahead where the kernel packs, and its tiles alone (packed or not) */
static int bench(int64_t M, int64_t N, int64_t K) {
    const lithe__q8_kernel *k = lithe__q8_kernel_best();
    if (!k || M < 1 || N < 1 || K < 1 || K > 32768) return 2;
    const int64_t Kp = (K + 63) / 64 * 64;
    float *A = malloc((size_t)(M * K) * sizeof *A), *Y = malloc((size_t)(M * N) * sizeof *Y), *sw = malloc((size_t)N * sizeof *sw);
    int8_t *W = malloc((size_t)(N * K)), *wp = NULL;
    uint8_t *qa = calloc((size_t)(M * Kp), 1);
    int32_t *wsum = malloc((size_t)N * sizeof *wsum);
    for (int64_t i = 0; i < M * K; i++) A[i] = (float)(next() % 1000) / 1000.0f;
    for (int64_t i = 0; i < N * K; i++) W[i] = (int8_t)((int)(next() % 255) - 127);
    for (int64_t j = 0; j < N; j++) sw[j] = 0.01f;
    lithe__q8_row_sums(N, K, W, K, wsum);
#if defined(LITHE__Q8_PACKED)
    if (k->ptile) {
        wp = malloc(lithe__q8_pack_size(N, K));
        lithe__q8_pack(N, K, W, K, wp);
    }
#endif
    double best = 1e30, stat = 1e30, tiles = 1e30, quant = 1e30;
    for (int r = 0; r < 200; r++) {
        double t0 = now_ms();
        (void)lithe__q8_gemm(k, false, M, N, K, A, K, W, K, wsum, wp, sw, N, NULL, NULL, NULL, NULL, Y, N);
        double t1 = now_ms();
        (void)lithe__q8_gemm_static_f32(k, false, M, N, K, A, K, 0.004f, 3, 0, 255, false, W, K, wsum, wp, -1, sw, N,
                                        NULL, NULL, NULL, NULL, Y, N);
        double t2 = now_ms();
#if defined(LITHE__Q8_PACKED)
        if (wp) {
            _Alignas(64) int32_t acc[LITHE__Q8_PMR * LITHE__Q8_PW];
            for (int64_t j = 0; j < N; j += LITHE__Q8_PW)
                for (int64_t i = 0; i < M; i += LITHE__Q8_PMR)
                    k->ptile((size_t)(M - i < LITHE__Q8_PMR ? M - i : LITHE__Q8_PMR), (size_t)(N - j < LITHE__Q8_PW ? N - j : LITHE__Q8_PW),
                             (size_t)(K + 3) / 4, qa + i * Kp, (size_t)Kp, wp + (size_t)j * lithe__q8_pack_col(K), acc);
        } else
#endif
        {
            int32_t acc[8];
            for (int64_t j = 0; j < N; j += 2)
                for (int64_t i = 0; i < M; i += 4)
                    k->tile((size_t)(M - i < 4 ? M - i : 4), (size_t)(N - j < 2 ? N - j : 2), (size_t)K, qa + i * Kp, (size_t)Kp, W + j * K, (size_t)K, acc);
        }
        double t3 = now_ms();
        const lithe__q8_qx qx = {0.004f, -3.0f, 252.0f, 3.0f};
        for (int64_t i = 0; i < M; i++) (k->quant ? k->quant : lithe__q8_quant_ref)((size_t)K, A + i * K, &qx, qa + i * Kp);
        double t4 = now_ms();
        best = fmin(best, t1 - t0), stat = fmin(stat, t2 - t1), tiles = fmin(tiles, t3 - t2), quant = fmin(quant, t4 - t3);
    }
    printf("q8_ukernels: %s %lldx%lldx%lld: gemm %.4f ms, static from f32 %.4f ms (%.2f GOP/s), %stiles %.4f ms, "
           "quantize pass %.4f ms\n", k->isa, (long long)M, (long long)N, (long long)K, best, stat,
           2e-6 * (double)(M * N * K) / stat, wp ? "packed " : "", tiles, quant);
    free(A), free(Y), free(sw), free(W), free(wp), free(qa), free(wsum);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 5 && strcmp(argv[1], "--bench") == 0) return bench(atoll(argv[2]), atoll(argv[3]), atoll(argv[4]));
    const lithe__q8_kernel *ks[] = {lithe__q8_kernel_scalar(), lithe__q8_kernel_avx2(),    lithe__q8_kernel_vnni(),
                                    lithe__q8_kernel_neon(),   lithe__q8_kernel_neondot(), lithe__q8_kernel_wasmsimd()};
    const lithe__q8_kernel *best = lithe__q8_kernel_best();
    int n = 0;
    for (size_t i = 0; i < sizeof ks / sizeof *ks; i++) {
        if (!ks[i]) continue;
        n++;
        printf("q8_ukernels: %s%s\n", ks[i]->isa, ks[i] == best ? ", the default" : "");
        check_tiles(ks[i]);
#if defined(LITHE__Q8_PACKED)
        check_ptiles(ks[i]);
#endif
        check_gemm(ks[i], ks[0]);
        check_gemm_static(ks[i], ks[0]);
        check_passes(ks[i]);
        check_gemm_static_f32(ks[i]);
    }
    check_pairs_fit();
    if (ks[0]) check_gemm_static(&s8_kernel, ks[0]);
    CHECK(n >= 1 && best, "no int8 kernel (best %s)", best ? best->isa : "none");
#if defined(__wasm_simd128__) || defined(__aarch64__) || defined(__x86_64__)
    CHECK(n >= 2, "only the scalar int8 kernel on a SIMD target");
#endif
    printf("q8_ukernels: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
