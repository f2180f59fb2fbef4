/* The CPU SGEMM (backends/cpu/gemm/gemm.h): every kernel this machine runs (scalar, AVX2, each
 * AVX-512 tile height, and whatever an ISA port adds to lithe__sgemm_kernel_named) against a
 * float64 reference at tile edges and odd sizes, all four transposes, strided rows, alpha / beta
 * (beta = 0 ignores NaN in C), M = 1 (the GEMV kernels), K = 0 and K past the kc block; the GEMV
 * giving a batched row's bits exactly; 1, 2 and 3 threads giving the same bits; a batch of
 * products (lithe__sgemm_batched) giving each product's bits; X·Wᵀ run swapped
 * (W read in place) giving the unswapped bits; and the fused gemm_bias_act against gemm, add_row
 * and act on the backend. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "check.h"

#include "lithe.h"
#include "internal.h"
#include "../backends/cpu/gemm/gemm.h"
#include "../backends/cpu/threadpool.h"
#include "../backends/cpu/simd/simd.h"
#include "../backends/cpu/kernels.h"

static const char *const isas[] = {"scalar", "avx2", "avx512", "neon", "wasmsimd"};
#define N_ISAS (sizeof isas / sizeof isas[0])

/* AVX-512 tile heights selectable through LITHE_GEMM_AVX512_MR (all must agree bit for bit). */
static const char *const avx512_mr[] = {"14", "12", "8", "4", "2", "7"};

static uint64_t rng = 12345;
static float frand(void) { /* uniform in [-1, 1) */
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)((double)(rng >> 40) / (double)(1ULL << 24) * 2.0 - 1.0);
}

typedef struct mats {
    int64_t M, N, K, lda, ldb, ldc;
    bool tA, tB;
    float *A, *B, *C;
} mats;

/* Operands with row strides padded by `pad` (A: M x K or K x M stored, etc.). */
static mats make(bool tA, bool tB, int64_t M, int64_t N, int64_t K, int64_t pad) {
    mats m = {M, N, K, (tA ? M : K) + pad, (tB ? K : N) + pad, N + pad, tA, tB, NULL, NULL, NULL};
    int64_t ar = tA ? K : M, br = tB ? N : K;
    m.A = malloc(sizeof(float) * (size_t)(ar * m.lda + 1));
    m.B = malloc(sizeof(float) * (size_t)(br * m.ldb + 1));
    m.C = malloc(sizeof(float) * (size_t)(M * m.ldc + 1));
    assert_true(m.A && m.B && m.C);
    for (int64_t i = 0; i < ar * m.lda; i++) m.A[i] = frand();
    for (int64_t i = 0; i < br * m.ldb; i++) m.B[i] = frand();
    for (int64_t i = 0; i < M * m.ldc; i++) m.C[i] = frand();
    return m;
}
static void drop(mats *m) {
    free(m->A);
    free(m->B);
    free(m->C);
}
static double a_at(const mats *m, int64_t i, int64_t k) { return m->tA ? m->A[k * m->lda + i] : m->A[i * m->lda + k]; }
static double b_at(const mats *m, int64_t k, int64_t j) { return m->tB ? m->B[j * m->ldb + k] : m->B[k * m->ldb + j]; }

/* got (M x N, row stride ldc) against alpha op(A)op(B) + beta C0 in float64, with a bound of
 * (K + 3) float32 roundings of the magnitudes involved. */
static void check(const char *isa, const mats *m, float alpha, float beta, const float *C0, const float *got) {
    for (int64_t i = 0; i < m->M; i++)
        for (int64_t j = 0; j < m->N; j++) {
            double acc = 0, mag = 0;
            for (int64_t k = 0; k < m->K; k++) {
                double p = a_at(m, i, k) * b_at(m, k, j);
                acc += p;
                mag += fabs(p);
            }
            double c0 = beta == 0.0f ? 0.0 : C0[i * m->ldc + j];
            double want = alpha * acc + beta * c0;
            double tol = ((double)m->K + 3) * 6e-8 * (fabs(alpha) * mag + fabs(beta * c0)) + 1e-30;
            double g = got[i * m->ldc + j];
            if (!(fabs(g - want) <= tol)) {
                print_error("%s: M=%lld N=%lld K=%lld tA=%d tB=%d alpha=%g beta=%g C[%lld,%lld] = %.9g, want %.9g\n",
                            isa, (long long)m->M, (long long)m->N, (long long)m->K, m->tA, m->tB, (double)alpha,
                            (double)beta, (long long)i, (long long)j, g, want);
                fail();
            }
        }
}

/* Runs every kernel this build and CPU have (each AVX-512 height too) through fn. */
static void each_kernel(void (*fn)(const lithe__sgemm_kernel *k, const char *name)) {
    int ran = 0;
    for (size_t i = 0; i < N_ISAS; i++) {
        const lithe__sgemm_kernel *k = lithe__sgemm_kernel_named(isas[i]);
        if (!k) continue;
        if (strcmp(isas[i], "avx512") == 0) {
            for (size_t v = 0; v < sizeof avx512_mr / sizeof avx512_mr[0]; v++) {
                char name[32];
                snprintf(name, sizeof name, "avx512 MR=%s", avx512_mr[v]);
                setenv("LITHE_GEMM_AVX512_MR", avx512_mr[v], 1);
                fn(k, name);
            }
            unsetenv("LITHE_GEMM_AVX512_MR");
        } else {
            fn(k, isas[i]);
        }
        ran++;
    }
    assert_true(ran >= 1); /* scalar at least */
}

static void sizes_one(const lithe__sgemm_kernel *k, const char *name) {
    /* tile edges of 4x8, 6x16, 8/12/14x32; M = 1 (GEMV); K past kc (256 / 512); M past mc */
    static const int64_t mnk[][3] = {{1, 1, 1},    {1, 37, 5},    {1, 70, 400},  {2, 3, 4},    {3, 16, 7},
                                     {5, 31, 9},   {7, 33, 17},   {8, 32, 16},   {13, 47, 3},  {14, 64, 2},
                                     {15, 65, 31}, {29, 97, 130}, {33, 17, 800}, {130, 20, 5}, {4, 4100, 3}};
    static const float ab[][2] = {{1.0f, 0.0f}, {0.5f, 1.0f}, {-2.0f, 0.25f}, {1.0f, 1.0f}};
    for (size_t z = 0; z < sizeof mnk / sizeof mnk[0]; z++)
        for (int t = 0; t < 4; t++) {
            bool tA = t & 1, tB = t & 2;
            int64_t pad = (int64_t)((z + (size_t)t) % 3);
            mats m = make(tA, tB, mnk[z][0], mnk[z][1], mnk[z][2], pad);
            float alpha = ab[(z + (size_t)t) % 4][0], beta = ab[(z + (size_t)t) % 4][1];
            size_t cn = (size_t)(m.M * m.ldc);
            float *C0 = malloc(sizeof(float) * cn);
            assert_non_null(C0);
            if (beta == 0.0f)
                for (size_t i = 0; i < cn; i++) m.C[i] = NAN; /* beta = 0 never reads C */
            memcpy(C0, m.C, sizeof(float) * cn);
            assert_true(lithe__sgemm(k, false, tA, tB, m.M, m.N, m.K, alpha, m.A, m.lda, m.B, m.ldb, beta, m.C, m.ldc,
                                     NULL));
            check(name, &m, alpha, beta, C0, m.C);
            /* the padding between rows is never written */
            for (int64_t i = 0; i + 1 < m.M; i++)
                for (int64_t j = m.N; j < m.ldc; j++)
                    if (memcmp(&m.C[i * m.ldc + j], &C0[i * m.ldc + j], sizeof(float)) != 0) {
                        print_error("%s: wrote C's row padding at [%lld,%lld]\n", name, (long long)i, (long long)j);
                        fail();
                    }
            free(C0);
            drop(&m);
        }
}

static void test_kernels_against_float64(void **state) {
    (void)state;
    each_kernel(sizes_one);
}

static void k_zero_one(const lithe__sgemm_kernel *k, const char *name) {
    (void)name;
    float C[6] = {1, 2, 3, 4, 5, 6}, A[1] = {7}, B[1] = {8};
    assert_true(lithe__sgemm(k, false, false, false, 2, 3, 0, 1.0f, A, 1, B, 3, 0.5f, C, 3, NULL));
    for (int i = 0; i < 6; i++) assert_true(C[i] == 0.5f * (float)(i + 1));
    for (int i = 0; i < 6; i++) C[i] = NAN;
    assert_true(lithe__sgemm(k, false, true, true, 2, 3, 0, 1.0f, A, 1, B, 1, 0.0f, C, 3, NULL));
    for (int i = 0; i < 6; i++) assert_true(C[i] == 0.0f);
    /* M = 0 or N = 0: nothing happens */
    assert_true(lithe__sgemm(k, false, false, false, 0, 3, 4, 1.0f, A, 4, B, 3, 0.0f, C, 3, NULL));
    assert_true(lithe__sgemm(k, false, false, false, 2, 0, 4, 1.0f, A, 4, B, 3, 0.0f, C, 3, NULL));
}

static void test_k_zero_and_empty(void **state) {
    (void)state;
    each_kernel(k_zero_one);
}

/* A row alone (M = 1, the GEMV kernels) has the bits it has inside a batch (the packed path),
 * for both layouts of B, alpha / beta, and a K past the kc block. */
static void rows_one(const lithe__sgemm_kernel *k, const char *name) {
    static const int64_t nk[][2] = {{1, 1}, {17, 5}, {70, 33}, {200, 400}, {64, 800}, {100, 1000}, {40, 515}};
    for (size_t z = 0; z < sizeof nk / sizeof nk[0]; z++)
        for (int tB = 0; tB < 2; tB++)
            for (int tA = 0; tA < 2; tA++) {
                int64_t M = 9, N = nk[z][0], K = nk[z][1];
                mats m = make(tA, tB, M, N, K, 1);
                float alpha = z % 2 ? 0.75f : 1.0f, beta = z % 3 == 1 ? 0.5f : 0.0f;
                float *bias = malloc(sizeof(float) * (size_t)N);
                assert_non_null(bias);
                for (int64_t j = 0; j < N; j++) bias[j] = frand();
                lithe__sgemm_epilogue e = {.bias = bias};
                float *C1 = malloc(sizeof(float) * (size_t)(M * m.ldc));
                assert_non_null(C1);
                memcpy(C1, m.C, sizeof(float) * (size_t)(M * m.ldc));
                assert_true(lithe__sgemm(k, false, tA, tB, M, N, K, alpha, m.A, m.lda, m.B, m.ldb, beta, m.C, m.ldc,
                                         z % 2 ? &e : NULL));
                for (int64_t r = 0; r < M; r++) {
                    const float *a = tA ? m.A + r : m.A + r * m.lda;
                    assert_true(lithe__sgemm(k, false, tA, tB, 1, N, K, alpha, a, m.lda, m.B, m.ldb, beta,
                                             C1 + r * m.ldc, m.ldc, z % 2 ? &e : NULL));
                    if (memcmp(C1 + r * m.ldc, m.C + r * m.ldc, sizeof(float) * (size_t)N) != 0) {
                        print_error("%s: N=%lld K=%lld tA=%d tB=%d: row %lld alone differs from the batch\n", name,
                                    (long long)N, (long long)K, tA, tB, (long long)r);
                        fail();
                    }
                }
                /* 2..4 rows (X·Wᵀ: the multi-row GEMV where the kernel has one): rows 3.. of the batch */
                for (int64_t mm = 2; mm <= 4; mm++) {
                    const float *a = tA ? m.A + 3 : m.A + 3 * m.lda;
                    for (int64_t i = 0; i < M * m.ldc; i++) C1[i] = m.C[i] + 1.0f;
                    assert_true(lithe__sgemm(k, false, tA, tB, mm, N, K, alpha, a, m.lda, m.B, m.ldb, 0.0f,
                                             C1 + 3 * m.ldc, m.ldc, z % 2 ? &e : NULL));
                    for (int64_t r = 3; r < 3 + mm && beta == 0.0f; r++) /* (beta != 0: the batch read C) */
                        if (memcmp(C1 + r * m.ldc, m.C + r * m.ldc, sizeof(float) * (size_t)N) != 0) {
                            print_error("%s: N=%lld K=%lld tA=%d tB=%d: row %lld of %lld rows differs from the batch\n",
                                        name, (long long)N, (long long)K, tA, tB, (long long)r, (long long)mm);
                            fail();
                        }
                }
                free(C1);
                free(bias);
                drop(&m);
            }
}

static void test_row_alone_equals_batch(void **state) {
    (void)state;
    each_kernel(rows_one);
}

/* 1, 2 and 3 threads (and each AVX-512 tile height) give the same bits; 150 x 200 x 1030: a column
 * split with rows past mc and K past kc. */
static void threads_one(const lithe__sgemm_kernel *k, const char *name) {
    static const int64_t mnk[][3] = {{64, 512, 78}, {300, 40, 50},  {1, 700, 300},
                                     {33, 95, 200}, {200, 10, 400}, {150, 200, 1030}};
    for (size_t z = 0; z < sizeof mnk / sizeof mnk[0]; z++)
        for (int t = 0; t < 4; t++) {
            bool tA = t & 1, tB = t & 2;
            mats m = make(tA, tB, mnk[z][0], mnk[z][1], mnk[z][2], 2);
            size_t cn = (size_t)(m.M * m.ldc);
            float *ref = malloc(sizeof(float) * cn), *got = malloc(sizeof(float) * cn);
            assert_true(ref && got);
            OK(lithe__cpu_set_threads(1));
            memcpy(ref, m.C, sizeof(float) * cn);
            assert_true(lithe__sgemm(k, true, tA, tB, m.M, m.N, m.K, 1.5f, m.A, m.lda, m.B, m.ldb, 0.5f, ref, m.ldc,
                                     NULL));
            for (int nt = 2; nt <= 3 && LITHE_HAVE_THREADS; nt++) {
                OK(lithe__cpu_set_threads(nt));
                memcpy(got, m.C, sizeof(float) * cn);
                assert_true(lithe__sgemm(k, true, tA, tB, m.M, m.N, m.K, 1.5f, m.A, m.lda, m.B, m.ldb, 0.5f, got,
                                         m.ldc, NULL));
                if (memcmp(ref, got, sizeof(float) * cn) != 0) {
                    print_error("%s: M=%lld N=%lld K=%lld tA=%d tB=%d: %d threads differ from 1\n", name,
                                (long long)m.M, (long long)m.N, (long long)m.K, tA, tB, nt);
                    fail();
                }
            }
            free(ref);
            free(got);
            drop(&m);
        }
    OK(lithe__cpu_set_threads(0));
}

static void test_threads_bit_identical(void **state) {
    (void)state;
    each_kernel(threads_one);
}

/* lithe__sgemm_batched: each product the bits of lithe__sgemm on its matrices, and nothing else of
 * C written, with the products stacked (each matrix after the last, a few floats between) or
 * interleaved (attention's heads: the batch stride one matrix's columns, the rows P of them apart
 * and more), shared operands (batch stride 0), every product summed into one C (sc 0: beta0,
 * then beta 1 in p order), the GEMV-sized M <= 4 and swapped X·Wᵀ paths, K = 0, at 1 and 3 threads. */
typedef struct bgeo {
    int64_t rows, cols, ld, s; /* one matrix as stored (op's transpose included), its batch stride */
} bgeo;
static bgeo bgeo_of(int64_t P, int64_t rows, int64_t cols, int layout, int64_t pad) {
    if (layout == 0) return (bgeo){rows, cols, cols + pad, rows * (cols + pad) + 2 * pad + 1}; /* stacked */
    if (layout == 1) return (bgeo){rows, cols, P * cols + pad, cols};                           /* interleaved */
    return (bgeo){rows, cols, cols + pad, 0};                                                   /* shared */
}
static size_t bgeo_floats(bgeo g, int64_t P) { /* (K = 0: one float, never read) */
    return (size_t)((g.s ? (P - 1) * g.s : 0) + (g.rows ? g.rows - 1 : 0) * g.ld + g.cols + 1);
}

static void batched_one(const lithe__sgemm_kernel *k, const char *name) {
    /* P, M, N, K: attention's 64 x 64 x 32 and 64 x 32 x 64, odd edges, M <= 4, X·Wᵀ swapped, K = 0 */
    static const int64_t pmnk[][4] = {{6, 64, 64, 32}, {5, 64, 32, 64}, {7, 13, 37, 19}, {8, 29, 65, 70},
                                      {4, 3, 17, 9},   {3, 40, 200, 24}, {9, 33, 1, 5},  {2, 5, 4, 0}};
    for (size_t z = 0; z < sizeof pmnk / sizeof pmnk[0]; z++)
        for (int t = 0; t < 4; t++)
            for (int lay = 0; lay < 5; lay++) {
                const int64_t P = pmnk[z][0], M = pmnk[z][1], N = pmnk[z][2], K = pmnk[z][3];
                const bool tA = t & 1, tB = t & 2;
                /* lay: 0 stacked, 1 interleaved, 2 A shared, 3 B shared, 4 C shared (the products summed) */
                bgeo ga = bgeo_of(P, tA ? K : M, tA ? M : K, lay == 2 ? 2 : lay & 1, 3);
                bgeo gb = bgeo_of(P, tB ? N : K, tB ? K : N, lay == 3 ? 2 : lay & 1, 5);
                bgeo gc = bgeo_of(P, M, N, lay == 4 ? 2 : lay & 1, 1);
                size_t na = bgeo_floats(ga, P), nb = bgeo_floats(gb, P), nc = bgeo_floats(gc, P);
                float *A = malloc(sizeof(float) * na), *B = malloc(sizeof(float) * nb);
                float *C0 = malloc(sizeof(float) * nc), *ref = malloc(sizeof(float) * nc), *got = malloc(sizeof(float) * nc);
                assert_true(A && B && C0 && ref && got);
                for (size_t i = 0; i < na; i++) A[i] = frand();
                for (size_t i = 0; i < nb; i++) B[i] = frand();
                for (size_t i = 0; i < nc; i++) C0[i] = frand();
                const float alpha = lay == 3 ? -1.5f : 1.0f, beta0 = t == 1 ? 0.5f : 0.0f, beta = lay == 4 ? 1.0f : beta0;
                memcpy(ref, C0, sizeof(float) * nc);
                for (int64_t p = 0; p < P; p++)
                    assert_true(lithe__sgemm(k, false, tA, tB, M, N, K, alpha, A + p * ga.s, ga.ld, B + p * gb.s, gb.ld,
                                             p == 0 ? beta0 : beta, ref + p * gc.s, gc.ld, NULL));
                for (int nt = 1; nt <= (LITHE_HAVE_THREADS ? 3 : 1); nt += 2) {
                    OK(lithe__cpu_set_threads(nt));
                    memcpy(got, C0, sizeof(float) * nc);
                    assert_true(lithe__sgemm_batched(k, true, tA, tB, P, M, N, K, alpha, A, ga.ld, ga.s, B, gb.ld, gb.s,
                                                     beta0, beta, got, gc.ld, gc.s));
                    if (memcmp(ref, got, sizeof(float) * nc) != 0) {
                        size_t i = 0;
                        while (i < nc && memcmp(ref + i, got + i, sizeof(float)) == 0) i++;
                        print_error("%s: P=%lld M=%lld N=%lld K=%lld tA=%d tB=%d layout %d, %d threads: C[%zu] = %.9g, "
                                    "per product %.9g\n", name, (long long)P, (long long)M, (long long)N, (long long)K,
                                    tA, tB, lay, nt, i, (double)got[i], (double)ref[i]);
                        fail();
                    }
                }
                free(A);
                free(B);
                free(C0);
                free(ref);
                free(got);
            }
    OK(lithe__cpu_set_threads(0));
}

static void test_batched_equals_per_product(void **state) {
    (void)state;
    each_kernel(batched_one);
}

/* A kernel that reads an untransposed B in place (gemm.h's ukernel_b: B 64-byte aligned, rows a
 * multiple of 16 floats apart, M within one A block) gives the bits of the packed path, which the
 * same product takes when B sits one float off a line; against float64 too, and with 2 threads. */
static void b_in_place_one(const lithe__sgemm_kernel *k, const char *name) {
    if (!k->ukernel_b) return;
    static const int64_t mnk[][4] = {/* M, N, K, ldb */ {64, 512, 78, 512}, {7, 96, 600, 112},
                                     {64, 100, 33, 112}, {130, 64, 20, 80}, {1, 64, 9, 64}, {20, 40, 1100, 48}};
    for (size_t z = 0; z < sizeof mnk / sizeof mnk[0]; z++) {
        int64_t M = mnk[z][0], N = mnk[z][1], K = mnk[z][2], ldb = mnk[z][3];
        mats m = make(false, false, M, N, K, 0);
        size_t bn = (size_t)(K * ldb), cn = (size_t)(M * m.ldc);
        /* Ba: B 64-byte aligned (read in place); Bx + 1: the same values one float off (packed) */
        float *Ba = lithe__aligned_alloc(sizeof(float) * (bn + 16)), *Bx = lithe__aligned_alloc(sizeof(float) * (bn + 16));
        float *ref = malloc(sizeof(float) * cn), *got = malloc(sizeof(float) * cn);
        assert_true(Ba && Bx && ref && got);
        for (int64_t r = 0; r < K; r++)
            for (int64_t j = 0; j < ldb; j++) Ba[r * ldb + j] = Bx[1 + r * ldb + j] = j < N ? m.B[r * N + j] : NAN;
        float alpha = z % 2 ? 1.0f : -0.5f, beta = z % 3 ? 1.0f : 0.0f;
        for (int nt = 1; nt <= (LITHE_HAVE_THREADS ? 2 : 1); nt++) {
            OK(lithe__cpu_set_threads(nt));
            memcpy(ref, m.C, sizeof(float) * cn);
            memcpy(got, m.C, sizeof(float) * cn);
            assert_true(lithe__sgemm(k, true, false, false, M, N, K, alpha, m.A, m.lda, Bx + 1, ldb, beta, ref, m.ldc,
                                     NULL));
            assert_true(lithe__sgemm(k, true, false, false, M, N, K, alpha, m.A, m.lda, Ba, ldb, beta, got, m.ldc,
                                     NULL));
            if (memcmp(ref, got, sizeof(float) * cn) != 0) {
                print_error("%s: M=%lld N=%lld K=%lld ldb=%lld, %d threads: B read in place differs from packed\n",
                            name, (long long)M, (long long)N, (long long)K, (long long)ldb, nt);
                fail();
            }
            check(name, &m, alpha, beta, m.C, got);
        }
        OK(lithe__cpu_set_threads(0));
        lithe__aligned_free(Ba);
        lithe__aligned_free(Bx);
        free(ref);
        free(got);
        drop(&m);
    }
}

static void test_b_in_place(void **state) {
    (void)state;
    each_kernel(b_in_place_one);
}

/* A small op(A) read where it lies (gemm.c's run_range a_read: ukernel_a for A untransposed,
 * ukernel_ap with a row pointer per step for A transposed, a partial sliver packed): the fused
 * MatMulT's per-head products (64 x 32 x 64, 64 x 64 x 32 on rows 1024 floats apart), partial
 * slivers, one B sliver with a large A. Against float64, and bit for bit against the same values
 * in a product too large for it (M' K past A_READ_FLOATS, N' past one sliver: A packed), whose
 * first M x N block must be the same bits (gemm.h: an element's bits do not depend on the path). */
static void a_read_one(const lithe__sgemm_kernel *k, const char *name) {
    static const int64_t c[][7] = {/* M, N, K, tA, tB, lda, ldb */
                                   {64, 32, 64, 0, 0, 64, 1024}, {64, 32, 64, 1, 0, 64, 1024}, {64, 32, 64, 1, 0, 64, 32},
                                   {64, 64, 32, 0, 1, 1024, 1024}, {64, 64, 32, 0, 1, 32, 1024}, {61, 45, 37, 1, 0, 70, 50},
                                   {13, 20, 300, 0, 1, 301, 300}, {100, 16, 200, 0, 0, 203, 16}, {30, 100, 50, 1, 1, 33, 50},
                                   {3, 70, 20, 1, 0, 3, 70}};
    for (size_t z = 0; z < sizeof c / sizeof c[0]; z++) {
        const int64_t M = c[z][0], N = c[z][1], K = c[z][2], lda = c[z][5], ldb = c[z][6];
        const bool tA = c[z][3], tB = c[z][4];
        const int64_t M2 = M + 8192 / K + 8, N2 = N + 40; /* the reference product: A packed */
        mats m = {M, N, K, lda, ldb, N + 3, tA, tB, NULL, NULL, NULL};
        const int64_t lda2 = tA ? M2 : K, ldb2 = tB ? K : N2, an = (tA ? K : M) * lda, bn = (tB ? N : K) * ldb;
        m.A = malloc(sizeof(float) * (size_t)an), m.B = malloc(sizeof(float) * (size_t)bn);
        m.C = malloc(sizeof(float) * (size_t)(M * m.ldc));
        float *A2 = malloc(sizeof(float) * (size_t)((tA ? K : M2) * lda2)), *B2 = malloc(sizeof(float) * (size_t)((tB ? N2 : K) * ldb2));
        float *C2 = malloc(sizeof(float) * (size_t)(M2 * N2)), *got = malloc(sizeof(float) * (size_t)(M * m.ldc));
        assert_true(m.A && m.B && m.C && A2 && B2 && C2 && got);
        for (int64_t i = 0; i < an; i++) m.A[i] = frand();
        for (int64_t i = 0; i < bn; i++) m.B[i] = frand();
        for (int64_t i = 0; i < M * m.ldc; i++) m.C[i] = frand();
        for (int64_t i = 0; i < M2; i++) /* op(A2)[i, kk] = op(A)[i, kk] for i < M, else anything */
            for (int64_t kk = 0; kk < K; kk++) *(tA ? &A2[kk * lda2 + i] : &A2[i * lda2 + kk]) = i < M ? (float)a_at(&m, i, kk) : frand();
        for (int64_t kk = 0; kk < K; kk++)
            for (int64_t j = 0; j < N2; j++) *(tB ? &B2[j * ldb2 + kk] : &B2[kk * ldb2 + j]) = j < N ? (float)b_at(&m, kk, j) : frand();
        for (int v = 0; v < 2; v++) {
            float alpha = v ? -0.5f : 1.0f, beta = v ? 1.0f : 0.0f;
            for (int64_t i = 0; i < M2; i++)
                for (int64_t j = 0; j < N2; j++) C2[i * N2 + j] = i < M && j < N ? m.C[i * m.ldc + j] : 0.0f;
            assert_true(lithe__sgemm(k, false, tA, tB, M2, N2, K, alpha, A2, lda2, B2, ldb2, beta, C2, N2, NULL));
            for (int nt = 1; nt <= (LITHE_HAVE_THREADS ? 2 : 1); nt++) {
                OK(lithe__cpu_set_threads(nt));
                memcpy(got, m.C, sizeof(float) * (size_t)(M * m.ldc));
                assert_true(lithe__sgemm(k, nt > 1, tA, tB, M, N, K, alpha, m.A, lda, m.B, ldb, beta, got, m.ldc, NULL));
                check(name, &m, alpha, beta, m.C, got);
                for (int64_t i = 0; i < M; i++)
                    if (memcmp(got + i * m.ldc, C2 + i * N2, sizeof(float) * (size_t)N) != 0) {
                        print_error("%s: M=%lld N=%lld K=%lld tA=%d tB=%d lda=%lld, %d threads: row %lld differs from "
                                    "the packed product's\n", name, (long long)M, (long long)N, (long long)K, tA, tB,
                                    (long long)lda, nt, (long long)i);
                        fail();
                    }
            }
            OK(lithe__cpu_set_threads(0));
        }
        free(A2), free(B2), free(C2), free(got);
        drop(&m);
    }
}

static void test_a_read_in_place(void **state) {
    (void)state;
    each_kernel(a_read_one);
}

/* X·Wᵀ with few rows X runs swapped where the kernel reads A in place (gemm.c's run_swapped: W·Xᵀ
 * with W unpacked, C stored transposed, the bias per row of the swapped product): the bits of the
 * unswapped product, which the same values take as X·(Wᵀ materialized) with B untransposed; with
 * bias and relu, beta 0 and 1, alpha -0.5, K past kc, partial tiles, rows past mc, 1 and 3 threads
 * (split by W's rows, or by X's when it is wide), and against float64. */
static void swapped_one(const lithe__sgemm_kernel *k, const char *name) {
    static const int64_t mnk[][3] = {{64, 512, 784}, {16, 40, 9}, {48, 301, 520}, {100, 260, 33}, {256, 600, 70},
                                     {32, 64, 1}};
    const lithe__simd_kernels *sk = lithe__simd();
    lithe__act relu = {.kind = LITHE__ACT_RELU};
    for (size_t z = 0; z < sizeof mnk / sizeof mnk[0]; z++) {
        int64_t M = mnk[z][0], N = mnk[z][1], K = mnk[z][2];
        mats m = make(false, true, M, N, K, z % 2 ? 3 : 0);
        size_t cn = (size_t)(M * m.ldc);
        float *Bt = malloc(sizeof(float) * (size_t)(K * N)), *bias = malloc(sizeof(float) * (size_t)N);
        float *ref = malloc(sizeof(float) * cn), *got = malloc(sizeof(float) * cn);
        assert_true(Bt && bias && ref && got);
        for (int64_t kk = 0; kk < K; kk++)
            for (int64_t j = 0; j < N; j++) Bt[kk * N + j] = m.B[j * m.ldb + kk];
        for (int64_t j = 0; j < N; j++) bias[j] = frand();
        for (int v = 0; v < 4; v++) {
            /* 0: plain, alpha 1 beta 0; 1: alpha -0.5, beta 1; 2: bias + relu; 3: bias, beta 1 */
            float alpha = v == 1 ? -0.5f : 1.0f, beta = v == 1 || v == 3 ? 1.0f : 0.0f;
            lithe__sgemm_epilogue e = {.bias = v >= 2 ? bias : NULL, .act = v == 2 ? &relu : NULL, .act_fn = sk->act};
            for (int nt = 1; nt <= (LITHE_HAVE_THREADS ? 3 : 1); nt += 2) {
                OK(lithe__cpu_set_threads(nt));
                memcpy(ref, m.C, sizeof(float) * cn);
                memcpy(got, m.C, sizeof(float) * cn);
                assert_true(lithe__sgemm(k, true, false, false, M, N, K, alpha, m.A, m.lda, Bt, N, beta, ref, m.ldc,
                                         v ? &e : NULL));
                assert_true(lithe__sgemm(k, true, false, true, M, N, K, alpha, m.A, m.lda, m.B, m.ldb, beta, got,
                                         m.ldc, v ? &e : NULL));
                if (memcmp(ref, got, sizeof(float) * cn) != 0) {
                    size_t at = 0;
                    while (!memcmp(&ref[at], &got[at], sizeof(float))) at++;
                    print_error("%s: M=%lld N=%lld K=%lld case %d, %d threads: X·Wᵀ differs from X·(Wᵀ) at %zu: %.9g, "
                                "want %.9g\n", name, (long long)M, (long long)N, (long long)K, v, nt, at,
                                (double)got[at], (double)ref[at]);
                    fail();
                }
                if (v < 2) check(name, &m, alpha, beta, m.C, got);
            }
        }
        OK(lithe__cpu_set_threads(0));
        free(Bt), free(bias), free(ref), free(got);
        drop(&m);
    }
}

static void test_swapped(void **state) {
    (void)state;
    each_kernel(swapped_one);
}

/* Every AVX-512 tile height computes each element the same way. */
static void test_avx512_heights_agree(void **state) {
    (void)state;
    const lithe__sgemm_kernel *k = lithe__sgemm_kernel_named("avx512");
    if (!k) skip();
    mats m = make(false, true, 57, 45, 500, 0);
    size_t cn = (size_t)(m.M * m.ldc);
    float *ref = malloc(sizeof(float) * cn), *got = malloc(sizeof(float) * cn);
    assert_true(ref && got);
    for (size_t v = 0; v < sizeof avx512_mr / sizeof avx512_mr[0]; v++) {
        setenv("LITHE_GEMM_AVX512_MR", avx512_mr[v], 1);
        assert_true(lithe__sgemm(k, false, false, true, m.M, m.N, m.K, 1.0f, m.A, m.lda, m.B, m.ldb, 0.0f,
                                 v ? got : ref, m.ldc, NULL));
        if (v) assert_memory_equal(ref, got, sizeof(float) * cn);
    }
    unsetenv("LITHE_GEMM_AVX512_MR");
    free(ref);
    free(got);
    drop(&m);
}

/* gemm_bias_act on the CPU backend against gemm, add_row and act, for every activation kind,
 * with and without bias, keeping Z or not, at M = 1 and M > 1, for every kernel (LITHE_CPU_ISA
 * picks the backend's once per process, so here each kernel runs through lithe__sgemm with the
 * backend's epilogue and the backend op is checked with the kernel it chose). */
static lithe_backend *cpu;
static lithe_tensor *tensor(int64_t r, int64_t c, const float *v) {
    lithe_tensor *t = NULL;
    OK(lithe_tensor_new(cpu, LITHE_F32, 2, (int64_t[]){r, c}, &t));
    if (v) OK(lithe_tensor_write(t, v, sizeof(float) * (size_t)(r * c)));
    return t;
}

static void test_fused_equals_unfused(void **state) {
    (void)state;
    OK(lithe_backend_get("cpu", &cpu));
    lithe_backend *be = cpu;
    static const int64_t mnk[][3] = {{1, 50, 70}, {37, 45, 300}, {64, 130, 33}};
    for (size_t z = 0; z < sizeof mnk / sizeof mnk[0]; z++)
        for (int kind = -1; kind < (int)LITHE__ACT_COUNT; kind++)
            for (int with_b = 0; with_b < 2; with_b++) {
                int64_t M = mnk[z][0], N = mnk[z][1], K = mnk[z][2];
                float *x = malloc(sizeof(float) * (size_t)(M * K)), *w = malloc(sizeof(float) * (size_t)(N * K)),
                      *bv = malloc(sizeof(float) * (size_t)N);
                assert_true(x && w && bv);
                for (int64_t i = 0; i < M * K; i++) x[i] = frand();
                for (int64_t i = 0; i < N * K; i++) w[i] = frand() * 0.2f;
                for (int64_t i = 0; i < N; i++) bv[i] = frand();
                lithe_tensor *X = tensor(M, K, x), *W = tensor(N, K, w), *b = with_b ? tensor(1, N, bv) : NULL;
                lithe_tensor *b1 = NULL;
                if (b) OK(lithe_tensor_reshape(b, 1, (int64_t[]){N}, &b1));
                lithe_tensor *Y = tensor(M, N, NULL), *Z = tensor(M, N, NULL), *R = tensor(M, N, NULL),
                             *RA = tensor(M, N, NULL);
                lithe__act a = {.kind = kind < 0 ? LITHE__ACT_RELU : (lithe__act_kind)kind, .slope = 0.5f,
                                .offset = 0.1f, .min_val = -0.5f, .max_val = 0.7f, .threshold = 20.0f};
                const lithe__act *ap = kind < 0 ? NULL : &a;
                OK(lithe__op_gemm_bias_act(be, false, true, X, W, b1, ap, Z, Y));
                OK(lithe__op_gemm(be, false, true, 1.0f, X, W, 0.0f, R));
                if (b1) OK(lithe__op_add_row(be, R, b1));
                if (ap) OK(lithe__op_act(be, ap, R, RA));
                else OK(lithe__op_copy(be, RA, R));
                const float *y = lithe_tensor_data(Y), *zz = lithe_tensor_data(Z), *r = lithe_tensor_data(R),
                            *ra = lithe_tensor_data(RA);
                /* the same kernels on the same values: equal bits (the activation may be a
                 * vector kernel whose tail differs from its body by an ulp: allow 2) */
                assert_memory_equal(zz, r, sizeof(float) * (size_t)(M * N));
                for (int64_t i = 0; i < M * N; i++)
                    if (!(fabsf(y[i] - ra[i]) <= 2.4e-7f * fmaxf(1.0f, fabsf(ra[i])))) {
                        print_error("gemm_bias_act M=%lld N=%lld K=%lld act=%d bias=%d: Y[%lld] = %.9g, unfused %.9g\n",
                                    (long long)M, (long long)N, (long long)K, kind, with_b, (long long)i, (double)y[i],
                                    (double)ra[i]);
                        fail();
                    }
                /* without Z, in one buffer */
                OK(lithe__op_gemm_bias_act(be, false, true, X, W, b1, ap, NULL, Z));
                assert_memory_equal(lithe_tensor_data(Z), y, sizeof(float) * (size_t)(M * N));
                lithe_tensor *ts[] = {X, W, b, b1, Y, Z, R, RA};
                for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) lithe_tensor_release(ts[i]);
                free(x);
                free(w);
                free(bv);
            }
}

/* lithe__sgemm_rows (B given by row pointers, as convolutions pass shifted views of their input)
 * gives lithe__sgemm's bits for the same B; a row bias (bias_row: one more k-step on the packed
 * path, a pass after the GEMV) is within the rounding of adding it once, agrees between the two
 * entries, and between 1 and 3 threads. K around the kc blocks (256, 384): the bias step alone in
 * the last block at K = kc. */
static void rows_bias_one(const lithe__sgemm_kernel *k, const char *name) {
    static const int64_t mnk[][3] = {{1, 45, 5},    {7, 3, 1},     {7, 45, 255},  {33, 100, 256}, {13, 70, 383},
                                     {9, 33, 384},  {20, 31, 385}, {30, 64, 800}, {130, 20, 24}};
    for (size_t z = 0; z < sizeof mnk / sizeof mnk[0]; z++) {
        int64_t M = mnk[z][0], N = mnk[z][1], K = mnk[z][2];
        mats m = make(false, false, M, N, K, 3);
        size_t cn = (size_t)(M * m.ldc);
        /* B's rows in a shuffled buffer: row k at rows[k], evenly spaced in runs of 5 and not between */
        float *store = malloc(sizeof(float) * (size_t)(K * m.ldb + 1));
        const float **rows = malloc(sizeof(float *) * (size_t)K);
        float *bias = malloc(sizeof(float) * (size_t)M), *C0 = malloc(sizeof(float) * cn),
              *C1 = malloc(sizeof(float) * cn), *C2 = malloc(sizeof(float) * cn);
        assert_true(store && rows && bias && C0 && C1 && C2);
        for (int64_t kk = 0; kk < K; kk++) {
            int64_t slot = (kk / 5 * 5 * 7919 % K / 5 * 5 + kk % 5) % K; /* whole runs of 5 moved together */
            if (K % 5) slot = (kk * 7919) % K;                            /* (a permutation: 7919 is prime) */
            memcpy(store + slot * m.ldb, m.B + kk * m.ldb, sizeof(float) * (size_t)N);
            rows[kk] = store + slot * m.ldb;
        }
        for (int64_t i = 0; i < M; i++) bias[i] = frand();
        for (size_t i = 0; i < cn; i++) C0[i] = C1[i] = C2[i] = NAN; /* beta = 0: C is never read */
        assert_true(lithe__sgemm(k, false, false, false, M, N, K, 1.0f, m.A, m.lda, m.B, m.ldb, 0.0f, C0, m.ldc, NULL));
        assert_true(lithe__sgemm_rows(k, false, M, N, K, m.A, m.lda, rows, N, 0, C1, m.ldc, NULL));
        for (int64_t i = 0; i < M; i++)
            if (memcmp(C0 + i * m.ldc, C1 + i * m.ldc, sizeof(float) * (size_t)N)) {
                print_error("%s: M=%lld N=%lld K=%lld: sgemm_rows row %lld differs from sgemm\n", name, (long long)M,
                            (long long)N, (long long)K, (long long)i);
                fail();
            }
        /* one K block (the bias step in it, or in the kernel's store: bias_rows_ok): each element is
         * the product without the bias plus the row's value, one rounding, whichever path runs */
        float *N0 = malloc(sizeof(float) * cn), *N1 = malloc(sizeof(float) * cn);
        assert_true(N0 && N1);
        memcpy(N0, C0, sizeof(float) * cn);
        memcpy(N1, C1, sizeof(float) * cn);
        lithe__sgemm_epilogue e = {.bias_row = bias};
        assert_true(lithe__sgemm(k, false, false, false, M, N, K, 1.0f, m.A, m.lda, m.B, m.ldb, 0.0f, C0, m.ldc, &e));
        assert_true(lithe__sgemm_rows(k, false, M, N, K, m.A, m.lda, rows, N, 0, C1, m.ldc, &e));
        const lithe__sgemm_kernel *kn = k ? k : lithe__sgemm_kernel_best();
        for (int64_t i = 0; K + 1 <= kn->kc && i < M; i++)
            for (int64_t j = 0; j < N; j++)
                for (int w = 0; w < 2; w++) {
                    float want = (w ? N1 : N0)[i * m.ldc + j] + bias[i], got = (w ? C1 : C0)[i * m.ldc + j];
                    if (memcmp(&want, &got, sizeof want)) {
                        print_error("%s: M=%lld N=%lld K=%lld: bias_row (%s) C[%lld,%lld] = %.9g, not the product "
                                    "plus the bias, %.9g\n", name, (long long)M, (long long)N, (long long)K,
                                    w ? "rows" : "sgemm", (long long)i, (long long)j, got, want);
                        fail();
                    }
                }
        free(N0), free(N1);
        OK(lithe_backend_set_threads(cpu, 3));
        assert_true(lithe__sgemm_rows(k, true, M, N, K, m.A, m.lda, rows, N, 0, C2, m.ldc, &e));
        OK(lithe_backend_set_threads(cpu, 0));
        for (int64_t i = 0; i < M; i++) {
            if (M > 1 && memcmp(C0 + i * m.ldc, C1 + i * m.ldc, sizeof(float) * (size_t)N)) {
                print_error("%s: M=%lld N=%lld K=%lld: with bias_row, sgemm_rows row %lld differs from sgemm\n", name,
                            (long long)M, (long long)N, (long long)K, (long long)i);
                fail();
            }
            assert_memory_equal(C1 + i * m.ldc, C2 + i * m.ldc, sizeof(float) * (size_t)N);
            for (int64_t j = 0; j < N; j++) {
                double acc = bias[i], mag = fabs(bias[i]);
                for (int64_t kk = 0; kk < K; kk++) {
                    double p = (double)m.A[i * m.lda + kk] * m.B[kk * m.ldb + j];
                    acc += p;
                    mag += fabs(p);
                }
                double tol = ((double)K + 3) * 6e-8 * mag + 1e-30;
                for (int w = 0; w < 2; w++) {
                    double g = (w ? C1 : C0)[i * m.ldc + j];
                    if (!(fabs(g - acc) <= tol)) {
                        print_error("%s: M=%lld N=%lld K=%lld bias_row (%s): C[%lld,%lld] = %.9g, want %.9g\n", name,
                                    (long long)M, (long long)N, (long long)K, w ? "rows" : "sgemm", (long long)i,
                                    (long long)j, g, acc);
                        fail();
                    }
                }
            }
        }
        free(store), free(rows), free(bias), free(C0), free(C1), free(C2);
        drop(&m);
    }
}

static void test_rows_and_row_bias(void **state) {
    (void)state;
    OK(lithe_backend_get("cpu", &cpu));
    lithe_status st = lithe_backend_set_threads(cpu, 3);
    if (st == LITHE_ERR_UNSUPPORTED) skip(); /* a build without threads */
    OK(st);
    each_kernel(rows_bias_one);
    OK(lithe_backend_set_threads(cpu, 0));
}

/* lithe__sgemm_pixels (a convolution's pixels as rows: A gathered from row pointers with an output
 * row width ow, C stored transposed, bias per column and act in the store) gives lithe__sgemm's
 * bits for the same A, Wᵀ and epilogue, packing W in the call or ahead, with 1 or 3 threads. Shapes
 * around the tiles (partial slivers, rows across output rows: ow not a multiple of MR) and the kc
 * blocks (K = 600: a later block reads the transposed C back). */
static void leaky(const lithe__act *a, int64_t n, const float *X, float *Y) {
    (void)a;
    for (int64_t i = 0; i < n; i++) Y[i] = X[i] > 0.0f ? X[i] : 0.25f * X[i];
}

static void pixels_one(const lithe__sgemm_kernel *k, const char *name) {
    static const int64_t mnko[][4] = {{196, 32, 400, 14}, {49, 70, 320, 49}, {63, 33, 27, 9},  {7, 5, 600, 7},
                                      {30, 40, 600, 6},   {1, 3, 5, 1},      {100, 64, 16, 25}, {80, 16, 25, 28},
                                      {70, 20, 9, 2},     {60, 20, 9, 40}};
    for (size_t z = 0; z < sizeof mnko / sizeof mnko[0]; z++) {
        int64_t M = mnko[z][0], N = mnko[z][1], K = mnko[z][2], ow = mnko[z][3], a_row = ow + 3;
        int64_t oh = (M + ow - 1) / ow;
        /* the taps' rows in one buffer, each an (oh, a_row) plane read at (i / ow, i % ow) */
        /* 64 floats of slack: lithe__sgemm_rows_direct's dropped lanes read past a tap's last pixel */
        float *store = malloc(sizeof(float) * (size_t)(K * oh * a_row + 64)), *A = malloc(sizeof(float) * (size_t)(M * K));
        float *W = malloc(sizeof(float) * (size_t)(N * K)), *bias = malloc(sizeof(float) * (size_t)N);
        float *C0 = malloc(sizeof(float) * (size_t)(M * N)), *C1 = malloc(sizeof(float) * (size_t)(M * N)),
              *C2 = malloc(sizeof(float) * (size_t)(M * N));
        const float **rows = malloc(sizeof(float *) * (size_t)K);
        assert_true(store && A && W && bias && C0 && C1 && C2 && rows);
        for (int64_t i = 0; i < K * oh * a_row + 64; i++) store[i] = frand();
        for (int64_t i = 0; i < N * K; i++) W[i] = frand();
        for (int64_t j = 0; j < N; j++) bias[j] = frand();
        for (int64_t kk = 0; kk < K; kk++) { /* shuffled, in runs of 3 evenly spaced rows */
            int64_t slot = K % 3 ? (kk * 7919) % K : (kk / 3 * 7919 % (K / 3)) * 3 + kk % 3;
            rows[kk] = store + slot * oh * a_row;
            for (int64_t i = 0; i < M; i++) A[i * K + kk] = rows[kk][i / ow * a_row + i % ow];
        }
        /* a kind the microkernels do not clamp (gemm.h's clamp_ok), so leaky runs as act_fn everywhere */
        lithe__act act = {.kind = LITHE__ACT_DISH};
        lithe__sgemm_packed_b *Wp = lithe__sgemm_pack_b(k, true, K, N, W, K);
        assert_non_null(Wp);
        for (int v = 0; v < 4; v++) { /* bias and act, bias, act, neither */
            lithe__sgemm_epilogue e = {.bias = v == 0 || v == 1 ? bias : NULL, .act = v == 0 || v == 2 ? &act : NULL,
                                       .act_fn = leaky};
            const lithe__sgemm_epilogue *ep = e.bias || e.act ? &e : NULL;
            assert_true(lithe__sgemm(k, false, false, true, M, N, K, 1.0f, A, K, W, K, 0.0f, C0, N, ep));
            for (int pre = 0; pre < 2; pre++) {
                for (int64_t i = 0; i < M * N; i++) C1[i] = C2[i] = NAN;
                assert_true(lithe__sgemm_pixels(k, false, M, N, K, rows, ow, a_row, true, W, K, pre ? Wp : NULL, C1, M, ep));
                OK(lithe_backend_set_threads(cpu, 3));
                assert_true(lithe__sgemm_pixels(k, true, M, N, K, rows, ow, a_row, true, W, K, pre ? Wp : NULL, C2, M, ep));
                OK(lithe_backend_set_threads(cpu, 0));
                for (int64_t i = 0; i < M; i++)
                    for (int64_t j = 0; j < N; j++)
                        if (memcmp(&C0[i * N + j], &C1[j * M + i], sizeof(float)) ||
                            memcmp(&C0[i * N + j], &C2[j * M + i], sizeof(float))) {
                            print_error("%s: M=%lld N=%lld K=%lld ow=%lld epilogue %d packed %d: C[%lld,%lld] = %.9g "
                                        "(1 thread) %.9g (3), sgemm %.9g\n",
                                        name, (long long)M, (long long)N, (long long)K, (long long)ow, v, pre,
                                        (long long)i, (long long)j, (double)C1[j * M + i], (double)C2[j * M + i],
                                        (double)C0[i * N + j]);
                            fail();
                        }
            }
        }
        /* the same gathered pixels as lithe__sgemm_rows' B (filters as rows): W · op(B), its slivers
         * across output rows packed in chunks */
        float *At = malloc(sizeof(float) * (size_t)(M * K));
        assert_non_null(At);
        for (int64_t i = 0; i < M; i++)
            for (int64_t kk = 0; kk < K; kk++) At[kk * M + i] = A[i * K + kk];
        lithe__sgemm_epilogue e = {.bias_row = bias};
        for (int v = 0; v < 2; v++) {
            assert_true(lithe__sgemm(k, false, false, false, N, M, K, 1.0f, W, K, At, M, 0.0f, C0, M, v ? &e : NULL));
            assert_true(lithe__sgemm_rows(k, false, N, M, K, W, K, rows, ow, a_row, C1, M, v ? &e : NULL));
            if (memcmp(C0, C1, sizeof(float) * (size_t)(M * N))) {
                print_error("%s: M=%lld N=%lld K=%lld ow=%lld: sgemm_rows with pixel rows differs from sgemm\n", name,
                            (long long)N, (long long)M, (long long)K, (long long)ow);
                fail();
            }
            /* B read in place (whole output rows only; the bias step's B row: ones as wide as read),
             * with a relu in the store too: sgemm_rows' bits, or false where it does not apply */
            if (M % ow) continue;
            float *ones = malloc(sizeof(float) * (size_t)(oh * a_row + 64));
            const float **rows1 = malloc(sizeof(float *) * (size_t)(K + 1));
            assert_true(ones && rows1);
            for (int64_t i = 0; i < oh * a_row + 64; i++) ones[i] = 1.0f;
            memcpy(rows1, rows, sizeof(float *) * (size_t)K);
            rows1[K] = ones;
            lithe__act relu = {.kind = LITHE__ACT_RELU};
            for (int r = 0; r < 2; r++) {
                lithe__sgemm_epilogue er = {.bias_row = v ? bias : NULL, .act = r ? &relu : NULL, .act_fn = lithe__simd()->act};
                const lithe__sgemm_epilogue *ep = v || r ? &er : NULL;
                assert_true(lithe__sgemm_rows(k, false, N, M, K, W, K, rows, ow, a_row, C1, M, ep));
                for (int64_t i = 0; i < M * N; i++) C2[i] = NAN;
                if (!lithe__sgemm_rows_direct(k, N, M / ow, ow, K, W, K, rows1, a_row, C2, M, ep)) {
                    /* where it applies: the kernel has ukernel_bp, K + 1 <= kc, N <= mc, the relu clamps */
                    const lithe__sgemm_kernel *kk = k->for_rows ? k->for_rows(N) : k;
                    assert_false(kk->ukernel_bp && K + 1 <= kk->kc && N <= kk->mc && kk->clamp_ok);
                    continue;
                }
                if (memcmp(C1, C2, sizeof(float) * (size_t)(M * N))) {
                    print_error("%s: M=%lld N=%lld K=%lld ow=%lld bias %d relu %d: sgemm_rows_direct differs from "
                                "sgemm_rows\n", name, (long long)N, (long long)M, (long long)K, (long long)ow, v, r);
                    fail();
                }
            }
            free(ones), free(rows1);
        }
        free(At);
        lithe__sgemm_packed_b_free(Wp);
        free(store), free(A), free(W), free(bias), free(C0), free(C1), free(C2), free(rows);
    }
}

static void test_pixels(void **state) {
    (void)state;
    OK(lithe_backend_get("cpu", &cpu));
    lithe_status st = lithe_backend_set_threads(cpu, 3);
    if (st == LITHE_ERR_UNSUPPORTED) skip(); /* a build without threads */
    OK(st);
    each_kernel(pixels_one);
    OK(lithe_backend_set_threads(cpu, 0));
}

/* A relu or clamp epilogue act (inside the microkernel's store where the kernel has clamp_ok) gives
 * the bits of the product without it followed by the act kernel (the SIMD one and its scalar
 * twin), for every entry: lithe__sgemm (packed, B in place, M = 1's GEMV), op(B) packed ahead (M = 1:
 * urow), lithe__sgemm_rows with a row bias, lithe__sgemm_pixels (the transposed store). Inputs
 * carry NaN, +-inf and zero rows under alpha = -1 (t = -0); bounds include lo = -0, lo = hi,
 * infinite ones and crossed ones (lo > hi: the act kernel's answer, not a clamp); and mobilenet's
 * HardSwish (its h / 6 by FMAs in the AVX2 store, the act kernel's division's bits). K = 600 crosses
 * the kc blocks (the clamp only in the last). */
static void clamp_one(const lithe__sgemm_kernel *k, const char *name) {
    static const int64_t mnk[][3] = {{37, 70, 19}, {1, 45, 33}, {16, 32, 600}, {5, 9, 3}, {3, 100, 1}};
    static const float bounds[][2] = {{0.0f, 6.0f}, {-0.0f, 0.0f}, {-0.5f, 0.25f}, {0.1f, 0.1f},
                                      {-INFINITY, INFINITY}, {0.5f, -0.5f}, {-0.0f, -0.0f}};
    const lithe__simd_kernels *sk = lithe__simd();
    for (size_t z = 0; z < sizeof mnk / sizeof mnk[0]; z++) {
        int64_t M = mnk[z][0], N = mnk[z][1], K = mnk[z][2];
        float *A = malloc(sizeof(float) * (size_t)(M * K)), *B = malloc(sizeof(float) * (size_t)(K * N));
        float *bias = malloc(sizeof(float) * (size_t)N), *brow = malloc(sizeof(float) * (size_t)M);
        float *C0 = malloc(sizeof(float) * (size_t)(M * N)), *C1 = malloc(sizeof(float) * (size_t)(M * N));
        float *C2 = malloc(sizeof(float) * (size_t)(M * N)), *Bt = malloc(sizeof(float) * (size_t)(K * N));
        const float **rows = malloc(sizeof(float *) * (size_t)K), **arows = malloc(sizeof(float *) * (size_t)K);
        float *At = malloc(sizeof(float) * (size_t)(M * K));
        assert_true(A && B && bias && brow && C0 && C1 && C2 && Bt && rows && arows && At);
        for (int64_t i = 0; i < M * K; i++) A[i] = frand() * 4.0f;
        for (int64_t i = 0; i < K * N; i++) B[i] = frand();
        for (int64_t j = 0; j < N; j++) bias[j] = frand();
        for (int64_t i = 0; i < M; i++) brow[i] = frand();
        if (M > 1) { /* row 0 zeros (t = -0 under alpha -1), row 1 a NaN, row 2 an inf */
            for (int64_t kk = 0; kk < K; kk++) A[kk] = 0.0f;
            A[K] = NAN;
            if (M > 2) A[2 * K + K / 2] = INFINITY;
        } else {
            A[K / 2] = INFINITY; /* half the columns +inf, half -inf */
        }
        for (int64_t kk = 0; kk < K; kk++)
            for (int64_t j = 0; j < N; j++) Bt[j * K + kk] = B[kk * N + j];
        for (int64_t i = 0; i < M; i++)
            for (int64_t kk = 0; kk < K; kk++) At[kk * M + i] = A[i * K + kk];
        for (int64_t kk = 0; kk < K; kk++) rows[kk] = B + kk * N, arows[kk] = At + kk * M;
        lithe__sgemm_packed_b *Bp = lithe__sgemm_pack_b(k, true, K, N, Bt, K);
        assert_non_null(Bp);
        const size_t nb = sizeof bounds / sizeof bounds[0];
        for (size_t bi = 0; bi <= nb + 1; bi++) { /* relu, the clips, mobilenet's HardSwish */
            lithe__act act = {.kind = LITHE__ACT_RELU};
            if (bi > nb) act = (lithe__act){.kind = LITHE__ACT_HARD_SWISH_MOBILENET};
            else if (bi) act = (lithe__act){.kind = LITHE__ACT_CLIPPED_LINEAR, .slope = 1.0f, .offset = 0.0f,
                                            .min_val = bounds[bi - 1][0], .max_val = bounds[bi - 1][1]};
            for (int fn = 0; fn < 2; fn++) {
                lithe__act_fn act_fn = fn ? lithe_f32_act__scalar : sk->act;
                for (int v = 0; v < 5; v++) {
                    /* 0: sgemm alpha -1 with bias; 1: alpha 1 no bias, B transposed; 2: op(B) packed ahead;
                     * 3: sgemm_rows with a row bias; 4: sgemm_pixels with bias (transposed C) */
                    float alpha = v == 0 ? -1.0f : 1.0f;
                    lithe__sgemm_epilogue e0 = {.bias = v == 0 || v == 2 || v == 4 ? bias : NULL,
                                                .bias_row = v == 3 ? brow : NULL};
                    lithe__sgemm_epilogue e1 = e0;
                    e1.act = &act;
                    e1.act_fn = act_fn;
                    bool ok0, ok1;
                    if (v == 3) {
                        ok0 = lithe__sgemm_rows(k, false, M, N, K, A, K, rows, N, 0, C0, N, &e0);
                        ok1 = lithe__sgemm_rows(k, true, M, N, K, A, K, rows, N, 0, C1, N, &e1);
                    } else if (v == 4) {
                        ok0 = lithe__sgemm(k, false, false, false, M, N, K, 1.0f, A, K, B, N, 0.0f, C0, N, &e0);
                        ok1 = lithe__sgemm_pixels(k, true, M, N, K, arows, M, 0, true, Bt, K, NULL, C2, M, &e1);
                        for (int64_t i = 0; i < M; i++)
                            for (int64_t j = 0; j < N; j++) C1[i * N + j] = C2[j * M + i];
                    } else {
                        bool tB = v != 0;
                        const float *Bop = tB ? Bt : B;
                        int64_t ldb = tB ? K : N;
                        ok0 = lithe__sgemm(k, false, false, tB, M, N, K, alpha, A, K, Bop, ldb, 0.0f, C0, N, &e0);
                        ok1 = lithe__sgemm_prepacked(k, true, false, tB, M, N, K, alpha, A, K, Bop, ldb,
                                                     v == 2 ? Bp : NULL, 0.0f, C1, N, &e1);
                    }
                    assert_true(ok0 && ok1);
                    act_fn(&act, M * N, C0, C0);
                    size_t bad = 0, first = 0;
                    for (int64_t i = 0; i < M * N; i++)
                        if (memcmp(&C0[i], &C1[i], sizeof(float)) && !bad++) first = (size_t)i;
                    if (bad) {
                        print_error("%s: M=%lld N=%lld K=%lld act %zu (%s) entry %d: %zu elements differ from the "
                                    "act after, first C[%zu] = %.9g, after %.9g\n",
                                    name, (long long)M, (long long)N, (long long)K, bi, fn ? "scalar" : "simd", v,
                                    bad, first, (double)C1[first], (double)C0[first]);
                        fail();
                    }
                }
            }
        }
        lithe__sgemm_packed_b_free(Bp);
        free(A), free(B), free(bias), free(brow), free(C0), free(C1), free(C2), free(Bt), free(rows), free(arows), free(At);
    }
}

static void test_clamp(void **state) {
    (void)state;
    OK(lithe_backend_get("cpu", &cpu));
    lithe_status st = lithe_backend_set_threads(cpu, 3);
    if (st == LITHE_ERR_UNSUPPORTED) skip();
    OK(st);
    each_kernel(clamp_one);
    OK(lithe_backend_set_threads(cpu, 0));
}

/* The epilogue's residual (gemm.h: res, ldr, res_first) gives the bits of the product stored
 * without it and the residual added after, in either operand order, for every entry: lithe__sgemm
 * (packed, B in place, M = 1's GEMV), op(B) packed ahead (M = 1: urow), lithe__sgemm_rows with a
 * row bias, lithe__sgemm_pixels (the transposed store, the residual transposed too), X·Wᵀ at a
 * shape the driver would run swapped, K = 0; the
 * residual's row stride wider than C's. The residual carries NaN, inf and -0, the product a NaN
 * row; K = 600 crosses the kc blocks (the residual in the last only). */
static void res_one(const lithe__sgemm_kernel *k, const char *name) {
    static const int64_t mnk[][3] = {{37, 70, 19}, {1, 45, 33}, {16, 32, 600}, {5, 9, 3}, {3, 100, 1}, {50, 21, 0}, {32, 512, 64}};
    for (size_t z = 0; z < sizeof mnk / sizeof mnk[0]; z++) {
        int64_t M = mnk[z][0], N = mnk[z][1], K = mnk[z][2], Kc = K ? K : 1, ldr = (M > N ? M : N) + 3;
        float *A = malloc(sizeof(float) * (size_t)(M * Kc)), *B = malloc(sizeof(float) * (size_t)(Kc * N));
        float *bias = malloc(sizeof(float) * (size_t)N), *brow = malloc(sizeof(float) * (size_t)M);
        float *C0 = malloc(sizeof(float) * (size_t)(M * N)), *C1 = malloc(sizeof(float) * (size_t)(M * N));
        float *Bt = malloc(sizeof(float) * (size_t)(Kc * N)), *At = malloc(sizeof(float) * (size_t)(M * Kc));
        float *Rs = malloc(sizeof(float) * (size_t)(ldr * ldr));
        const float **rows = malloc(sizeof(float *) * (size_t)Kc), **arows = malloc(sizeof(float *) * (size_t)Kc);
        assert_true(A && B && bias && brow && C0 && C1 && Bt && At && Rs && rows && arows);
        for (int64_t i = 0; i < M * Kc; i++) A[i] = frand() * 4.0f;
        for (int64_t i = 0; i < Kc * N; i++) B[i] = frand();
        for (int64_t j = 0; j < N; j++) bias[j] = frand();
        for (int64_t i = 0; i < M; i++) brow[i] = frand();
        for (int64_t i = 0; i < ldr * ldr; i++) Rs[i] = frand() * 8.0f;
        Rs[2 * ldr + 3] = NAN; /* never meets the product's NaN: which payload a NaN + NaN keeps is
                                * the compiler's choice (C's + commutes), in the Add as here */
        Rs[ldr + 2] = INFINITY;
        Rs[2 * ldr + 1] = -0.0f;
        if (M > 1 && K) A[K] = NAN; /* row 1 of the product a NaN (the default one) */
        for (int64_t kk = 0; kk < K; kk++)
            for (int64_t j = 0; j < N; j++) Bt[j * K + kk] = B[kk * N + j];
        for (int64_t i = 0; i < M; i++)
            for (int64_t kk = 0; kk < K; kk++) At[kk * M + i] = A[i * K + kk];
        for (int64_t kk = 0; kk < K; kk++) rows[kk] = B + kk * N, arows[kk] = At + kk * M;
        lithe__sgemm_packed_b *Bp = K ? lithe__sgemm_pack_b(k, true, K, N, Bt, K) : NULL;
        assert_true(Bp || !K);
        for (int first = 0; first < 2; first++)
            for (int v = 0; v < 5; v++) {
                /* 0: sgemm with bias; 1: op(B) packed ahead, bias; 2: sgemm_rows with a row bias;
                 * 3: sgemm_pixels with bias (C and the residual transposed); 4: sgemm X·Wᵀ with bias
                 * (32 x 512 x 64: a shape gemm.c would run swapped, which has no residual form) */
                lithe__sgemm_epilogue e0 = {.bias = v != 2 ? bias : NULL, .bias_row = v == 2 ? brow : NULL};
                lithe__sgemm_epilogue e1 = e0;
                e1.res = Rs;
                e1.ldr = ldr;
                e1.res_first = first;
                bool ok0, ok1;
                if (v == 2) {
                    ok0 = lithe__sgemm_rows(k, false, M, N, K, A, K, rows, N, 0, C0, N, &e0);
                    ok1 = lithe__sgemm_rows(k, true, M, N, K, A, K, rows, N, 0, C1, N, &e1);
                } else if (v == 3) {
                    ok0 = lithe__sgemm_pixels(k, false, M, N, K, arows, M, 0, true, Bt, K, NULL, C0, M, &e0);
                    ok1 = lithe__sgemm_pixels(k, true, M, N, K, arows, M, 0, true, Bt, K, Bp, C1, M, &e1);
                } else if (v == 4) {
                    ok0 = lithe__sgemm(k, false, false, true, M, N, K, 1.0f, A, K, Bt, Kc, 0.0f, C0, N, &e0);
                    ok1 = lithe__sgemm(k, true, false, true, M, N, K, 1.0f, A, K, Bt, Kc, 0.0f, C1, N, &e1);
                } else {
                    ok0 = lithe__sgemm(k, false, false, false, M, N, K, 1.0f, A, K, B, N, 0.0f, C0, N, &e0);
                    ok1 = lithe__sgemm_prepacked(k, true, false, v == 1, M, N, K, 1.0f, A, K, v == 1 ? Bt : B,
                                                 v == 1 ? K : N, v == 1 ? Bp : NULL, 0.0f, C1, N, &e1);
                }
                assert_true(ok0 && ok1);
                /* the separate pass: C (M x N, or N x M transposed) + its residual */
                int64_t rws = v == 3 ? N : M, cols = v == 3 ? M : N;
                for (int64_t i = 0; i < rws; i++)
                    for (int64_t j = 0; j < cols; j++) {
                        float c = C0[i * cols + j], r = Rs[i * ldr + j];
                        C0[i * cols + j] = first ? r + c : c + r;
                    }
                size_t bad = 0, at = 0;
                for (int64_t i = 0; i < M * N; i++)
                    if (memcmp(&C0[i], &C1[i], sizeof(float)) && !bad++) at = (size_t)i;
                if (bad) {
                    print_error("%s: M=%lld N=%lld K=%lld entry %d res_first %d: %zu elements differ from the add "
                                "after, first C[%zu] = %.9g, after %.9g\n",
                                name, (long long)M, (long long)N, (long long)K, v, first, bad, at, (double)C1[at],
                                (double)C0[at]);
                    fail();
                }
            }
        lithe__sgemm_packed_b_free(Bp);
        free(A), free(B), free(bias), free(brow), free(C0), free(C1), free(Bt), free(At), free(Rs), free(rows),
            free(arows);
    }
}

static void test_residual(void **state) {
    (void)state;
    OK(lithe_backend_get("cpu", &cpu));
    lithe_status st = lithe_backend_set_threads(cpu, 3);
    if (st == LITHE_ERR_UNSUPPORTED) skip();
    OK(st);
    each_kernel(res_one);
    OK(lithe_backend_set_threads(cpu, 0));
}

/* A row bias (a pointwise convolution's) with B read in place (64-byte aligned, row stride a
 * multiple of 16 floats, one K block: the bias added to the stored tile, gemm.c's bias_after) gives
 * the bits of the packed path (the same B one float off alignment), which adds it as the product's
 * last step; with the residual epilogue too, with 1 and 3 threads; and with a ReLU6 (one K block: clamped
 * in the store where the kernel can) the act of the product plus the bias once. Bias and B carry -0,
 * NaN and inf. */
static void row_bias_in_place_one(const lithe__sgemm_kernel *k, const char *name) {
    /* K = 16, 24: the short-K pointwise convolutions (mobilenet's 16 -> 64 at 112x112), in place from 16 steps */
    static const int64_t mnk[][3] = {{16, 96, 32}, {24, 80, 96}, {37, 64, 7}, {5, 48, 1}, {64, 160, 500}, {30, 32, 700},
                                     {64, 96, 16}, {20, 48, 24}};
    for (size_t z = 0; z < sizeof mnk / sizeof mnk[0]; z++) {
        int64_t M = mnk[z][0], N = mnk[z][1], K = mnk[z][2];
        float *A = malloc(sizeof(float) * (size_t)(M * K)), *bias = malloc(sizeof(float) * (size_t)M);
        float *Ba = aligned_alloc(64, sizeof(float) * (size_t)(K * N + 16)), *Bu = malloc(sizeof(float) * (size_t)(K * N + 1));
        float *C0 = malloc(sizeof(float) * (size_t)(M * N)), *C1 = malloc(sizeof(float) * (size_t)(M * N));
        float *R = malloc(sizeof(float) * (size_t)(M * N));
        assert_true(A && bias && Ba && Bu && C0 && C1 && R);
        for (int64_t i = 0; i < M * K; i++) A[i] = frand();
        for (int64_t i = 0; i < M; i++) bias[i] = frand();
        for (int64_t i = 0; i < K * N; i++) Ba[i] = frand();
        for (int64_t i = 0; i < M * N; i++) R[i] = frand();
        bias[0] = -0.0f;
        if (M > 2) bias[2] = NAN;
        Ba[1] = INFINITY;
        if (K > 1) { /* row 0 of A zero: column sums of -0 * 0 and the -0 bias */
            for (int64_t kk = 0; kk < K; kk++) A[kk] = -0.0f;
        }
        const float *B = Ba, *Boff = Bu + 1; /* Bu + 1: never 64-byte aligned with Bu from malloc (16-aligned) */
        memcpy(Bu + 1, Ba, sizeof(float) * (size_t)(K * N));
        for (int r = 0; r < 2; r++)
            for (int t = 0; t < 2; t++) {
                lithe__sgemm_epilogue e = {.bias_row = bias};
                if (r) e.res = R, e.ldr = N, e.res_first = true;
                OK(lithe_backend_set_threads(cpu, t ? 3 : 0));
                assert_true(lithe__sgemm(k, t, false, false, M, N, K, 1.0f, A, K, B, N, 0.0f, C0, N, &e));
                assert_true(lithe__sgemm(k, t, false, false, M, N, K, 1.0f, A, K, Boff, N, 0.0f, C1, N, &e));
                if (memcmp(C0, C1, sizeof(float) * (size_t)(M * N))) {
                    print_error("%s: M=%lld N=%lld K=%lld res %d threads %d: the row bias with B in place differs "
                                "from B packed\n", name, (long long)M, (long long)N, (long long)K, r, t ? 3 : 1);
                    fail();
                }
                /* one K block: both are the product without the bias, plus the bias once (since the
                 * AVX-512 kernel adds it in its store on the packed path too, the comparison above
                 * alone would not see a bias added twice or dropped) */
                if (!r && K <= (int64_t)k->kc) {
                    float *C2 = malloc(sizeof(float) * (size_t)(M * N));
                    assert_non_null(C2);
                    lithe__sgemm_epilogue e0 = {0};
                    assert_true(lithe__sgemm(k, t, false, false, M, N, K, 1.0f, A, K, Boff, N, 0.0f, C2, N, &e0));
                    for (int64_t i = 0; i < M; i++)
                        for (int64_t j = 0; j < N; j++) {
                            float want = C2[i * N + j] + bias[i], got0 = C0[i * N + j];
                            if (memcmp(&want, &got0, sizeof want) && !(isnan(want) && isnan(got0))) {
                                print_error("%s: M=%lld N=%lld K=%lld threads %d: C[%lld][%lld] = %.9g, the product "
                                            "plus the row bias once is %.9g\n", name, (long long)M, (long long)N,
                                            (long long)K, t ? 3 : 1, (long long)i, (long long)j, (double)got0, (double)want);
                                fail();
                            }
                        }
                    /* and with a ReLU6 (clamped in the store where the kernel has clamp_ok, else the
                     * act pass): the scalar act of the product plus the bias once */
                    lithe__act relu6 = {.kind = LITHE__ACT_CLIPPED_LINEAR, .slope = 1.0f, .min_val = 0.0f, .max_val = 6.0f};
                    lithe__sgemm_epilogue e6 = {.bias_row = bias, .act = &relu6, .act_fn = lithe__simd()->act};
                    for (int64_t i = 0; i < M * N; i++) C0[i] = NAN;
                    assert_true(lithe__sgemm(k, t, false, false, M, N, K, 1.0f, A, K, B, N, 0.0f, C0, N, &e6));
                    for (int64_t i = 0; i < M; i++)
                        for (int64_t j = 0; j < N; j++) {
                            float want = C2[i * N + j] + bias[i], got0 = C0[i * N + j];
                            lithe_f32_act__scalar(&relu6, 1, &want, &want);
                            if (memcmp(&want, &got0, sizeof want) && !(isnan(want) && isnan(got0))) {
                                print_error("%s: M=%lld N=%lld K=%lld threads %d: relu6 C[%lld][%lld] = %.9g, the act of "
                                            "the product plus the row bias once is %.9g\n", name, (long long)M, (long long)N,
                                            (long long)K, t ? 3 : 1, (long long)i, (long long)j, (double)got0, (double)want);
                                fail();
                            }
                        }
                    free(C2);
                }
            }
        OK(lithe_backend_set_threads(cpu, 0));
        free(A), free(bias), free(Ba), free(Bu), free(C0), free(C1), free(R);
    }
}

static void test_row_bias_in_place(void **state) {
    (void)state;
    OK(lithe_backend_get("cpu", &cpu));
    lithe_status st = lithe_backend_set_threads(cpu, 3);
    if (st == LITHE_ERR_UNSUPPORTED) skip();
    OK(st);
    each_kernel(row_bias_in_place_one);
    OK(lithe_backend_set_threads(cpu, 0));
}

/* lithe__sgemm_pixels with op(A)'s rows evenly spaced planes of one output row each (a pointwise
 * convolution's input channels: whole A slivers read where they lie, the kernel's ukernel_ap) gives
 * lithe__sgemm's bits for the same A, with bias, act and residual epilogues, W packed in the call
 * or ahead, 1 and 3 threads; M around the tile heights (partial slivers stay packed), K across the
 * kc blocks. */
static void pixels_in_place_one(const lithe__sgemm_kernel *k, const char *name) {
    static const int64_t mnk[][3] = {{196, 96, 64}, {49, 40, 600}, {63, 33, 27}, {30, 5, 3}, {14, 70, 520}, {2, 32, 9},
                                     {168, 40, 600}, {36, 33, 27}};
    for (size_t z = 0; z < sizeof mnk / sizeof mnk[0]; z++) {
        int64_t M = mnk[z][0], N = mnk[z][1], K = mnk[z][2], ld = M + 5;
        float *X = malloc(sizeof(float) * (size_t)(K * ld)), *A = malloc(sizeof(float) * (size_t)(M * K));
        float *W = malloc(sizeof(float) * (size_t)(N * K)), *bias = malloc(sizeof(float) * (size_t)N);
        float *R = malloc(sizeof(float) * (size_t)(M * N)), *C0 = malloc(sizeof(float) * (size_t)(M * N));
        float *C1 = malloc(sizeof(float) * (size_t)(M * N));
        const float **rows = malloc(sizeof(float *) * (size_t)K);
        assert_true(X && A && W && bias && R && C0 && C1 && rows);
        for (int64_t i = 0; i < K * ld; i++) X[i] = frand();
        for (int64_t i = 0; i < N * K; i++) W[i] = frand();
        for (int64_t j = 0; j < N; j++) bias[j] = frand();
        for (int64_t i = 0; i < M * N; i++) R[i] = frand();
        X[3] = NAN;
        for (int64_t kk = 0; kk < K; kk++) {
            rows[kk] = X + kk * ld;
            for (int64_t i = 0; i < M; i++) A[i * K + kk] = rows[kk][i];
        }
        lithe__act act = {.kind = LITHE__ACT_DISH};
        lithe__sgemm_packed_b *Wp = lithe__sgemm_pack_b(k, true, K, N, W, K);
        assert_non_null(Wp);
        for (int v = 0; v < 4; v++) { /* bias and act, bias, residual, nothing */
            lithe__sgemm_epilogue e = {.bias = v < 3 ? bias : NULL, .act = v == 0 ? &act : NULL, .act_fn = leaky};
            const lithe__sgemm_epilogue *ep = v < 3 ? &e : NULL;
            assert_true(lithe__sgemm(k, false, false, true, M, N, K, 1.0f, A, K, W, K, 0.0f, C0, N, ep));
            if (v == 2) { /* the residual: C0 + R after, against the epilogue's (transposed C and R) */
                for (int64_t i = 0; i < M; i++)
                    for (int64_t j = 0; j < N; j++) C0[i * N + j] = C0[i * N + j] + R[j * M + i];
                e.res = R, e.ldr = M;
            }
            for (int t = 0; t < 4; t++) { /* threads 1 / 3, W packed here / ahead */
                OK(lithe_backend_set_threads(cpu, t & 1 ? 3 : 0));
                for (int64_t i = 0; i < M * N; i++) C1[i] = NAN;
                assert_true(lithe__sgemm_pixels(k, t & 1, M, N, K, rows, M, 0, true, W, K, t & 2 ? Wp : NULL, C1, M, ep));
                for (int64_t i = 0; i < M; i++)
                    for (int64_t j = 0; j < N; j++)
                        if (memcmp(&C0[i * N + j], &C1[j * M + i], sizeof(float))) {
                            print_error("%s: M=%lld N=%lld K=%lld epilogue %d run %d: A in place C[%lld,%lld] = %.9g, "
                                        "sgemm %.9g\n", name, (long long)M, (long long)N, (long long)K, v, t,
                                        (long long)i, (long long)j, (double)C1[j * M + i], (double)C0[i * N + j]);
                            fail();
                        }
            }
        }
        OK(lithe_backend_set_threads(cpu, 0));
        lithe__sgemm_packed_b_free(Wp);
        free(X), free(A), free(W), free(bias), free(R), free(C0), free(C1), free(rows);
    }
}

static void test_pixels_in_place(void **state) {
    (void)state;
    OK(lithe_backend_get("cpu", &cpu));
    lithe_status st = lithe_backend_set_threads(cpu, 3);
    if (st == LITHE_ERR_UNSUPPORTED) skip();
    OK(st);
    each_kernel(pixels_in_place_one);
    OK(lithe_backend_set_threads(cpu, 0));
}

/* LITHE_CPU_ISA names a kernel; unknown names fall back to the best one. */
static void test_isa_names(void **state) {
    (void)state;
    assert_non_null(lithe__sgemm_kernel_named("scalar"));
    assert_null(lithe__sgemm_kernel_named("no-such-isa"));
    const lithe__sgemm_kernel *best = lithe__sgemm_kernel_best();
    assert_non_null(best);
    const char *want = getenv("LITHE_CPU_ISA");
    if (want && lithe__sgemm_kernel_named(want)) assert_string_equal(best->isa, want);
    printf("gemm kernel in use: %s %dx%d\n", best->isa, best->mr, best->nr);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_isa_names),
        cmocka_unit_test(test_kernels_against_float64),
        cmocka_unit_test(test_k_zero_and_empty),
        cmocka_unit_test(test_row_alone_equals_batch),
        cmocka_unit_test(test_threads_bit_identical),
        cmocka_unit_test(test_batched_equals_per_product),
        cmocka_unit_test(test_b_in_place),
        cmocka_unit_test(test_a_read_in_place),
        cmocka_unit_test(test_swapped),
        cmocka_unit_test(test_avx512_heights_agree),
        cmocka_unit_test(test_fused_equals_unfused),
        cmocka_unit_test(test_rows_and_row_bias),
        cmocka_unit_test(test_pixels),
        cmocka_unit_test(test_clamp),
        cmocka_unit_test(test_residual),
        cmocka_unit_test(test_row_bias_in_place),
        cmocka_unit_test(test_pixels_in_place),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
