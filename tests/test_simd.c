/* The CPU backend's vectorised kernels (backends/cpu/simd/) against their scalar twins, on every
 * ISA table this machine runs, and the thread split (backends/cpu/elem.c) for 1, 2 and 3 threads.
 *
 * Oracles, never the code under test:
 *   - the scalar twins (backends/cpu/scalar): bit for bit where simd.h says exact (lengths 0, 1, 3, 15, 16,
 *     17, 31, 32, 33, 63, 64, 65, 100, 257, 1000, at aligned and misaligned addresses, and again with
 *     -0, ±inf and NaN among the inputs); |simd - twin| <= 4e-6 |twin| + atol for the kernels that call
 *     exp. These table checks live in simd_tables.h, shared with test_simd_tables.c (plain C, which
 *     the WASI build runs on the WebAssembly SIMD128 table);
 *   - exp, tanh and erf in double (libm) for the vector exp and tanh: the ulp bounds simd.h states;
 *   - 1 thread's output for 2 and 3 threads, bit for bit;
 *   - convolution: the scalar twins (bit for bit for depthwise, which keeps their order; within
 *     the GEMM's rounding otherwise), forward and backward, on every table;
 *   - the caching allocator: reuse within a size class, the bound, the flush, and no caching under
 *     a user's allocator (which sees every block come back). */
#define _POSIX_C_SOURCE 200809L /* setenv: LITHE_CONV_ROWS */
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
#include "../backends/cpu/simd/simd.h"
#include "../backends/cpu/gemm/gemm.h"

#define SIMD_CMP_PRINT(...) print_error(__VA_ARGS__)
#define SIMD_CMP_FAIL() fail()
#define SIMD_CMP_PASS() ((void)0)
#include "simd_tables.h"

/* close_to with an allowance for the sum's size: mag[i] is the same sum over |terms| (the scalar
 * kernel on absolute values), so a GEMM that sums in another order (and with FMA, as AVX2,
 * AVX-512 and NEON do) may differ by a few ulps of mag[i] even where the result cancels to a
 * small number; an indexing error is off by the order of mag[i] itself. */
static void close_mag(const char *isa, const char *what, int64_t n, const float *want, const float *got,
                      const float *mag) {
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - want[i]), tol = 1e-5 * fabs(want[i]) + 2e-5 + 1e-6 * mag[i];
        if (!(d <= tol) && !(isnan(want[i]) && isnan(got[i]))) {
            print_error("%s %s n=%lld: [%lld] got %.9g, want %.9g (sum of |terms| %.4g, tolerance %.3g)\n", isa, what,
                        (long long)n, (long long)i, got[i], want[i], mag[i], tol);
            fail();
        }
        if (fabs(want[i]) > 1e-6 && d / fabs(want[i]) > worst_rel) worst_rel = d / fabs(want[i]);
    }
}

static float *abs_copy(const float *x, size_t n) {
    float *y = malloc(n * sizeof(float));
    assert_non_null(y);
    for (size_t i = 0; i < n; i++) y[i] = fabsf(x[i]);
    return y;
}

static const lithe__simd_kernels *tables[8];
static int ntables;

static int setup(void **state) {
    (void)state;
    ntables = lithe__simd_available(tables, 8);
    fprintf(stderr, "test_simd: ISA tables on this machine:");
    for (int i = 0; i < ntables; i++) fprintf(stderr, " %s", tables[i]->isa);
    fprintf(stderr, " (default %s)\n", lithe__simd()->isa);
    return 0;
}

/* ulps between a float and the correctly rounded value of a double */
static double ulps(float got, double want) {
    float w = (float)want;
    if (isinf(w) || isinf(got)) return got == w ? 0 : INFINITY;
    double u = nextafterf(fabsf(w), INFINITY) - fabsf(w);
    if (fabsf(w) < 0x1p-126f) u = 0x1p-149;
    return fabs((double)got - want) / u;
}

static void test_vector_exp_tanh_accuracy(void **state) {
    (void)state;
    enum { NPTS = 200000 };
    float *x = malloc(sizeof(float) * NPTS), *y = malloc(sizeof(float) * NPTS);
    assert_non_null(x);
    assert_non_null(y);
    for (int t = 1; t < ntables; t++) {
        const lithe__simd_kernels *k = tables[t];
        /* exp over its whole finite range */
        for (int i = 0; i < NPTS; i++) x[i] = (float)(-103.9 + (88.72 + 103.9) * i / (NPTS - 1));
        k->unary(LITHE__UN_EXP, NPTS, x, y);
        double worst = 0, worst_sub = 0;
        for (int i = 0; i < NPTS; i++) {
            double want = exp((double)x[i]);
            if (want >= 0x1p-126) {
                double e = ulps(y[i], want);
                if (e > worst) worst = e;
            } else {
                double e = fabs((double)y[i] - want);
                if (e > worst_sub) worst_sub = e;
            }
        }
        fprintf(stderr, "test_simd: %s exp: max %.2f ulp (normal results), max abs %.3g (subnormal)\n", k->isa, worst,
                worst_sub);
        assert_true(worst <= 2.0);
        assert_true(worst_sub <= 2.0 * 0x1p-149);
        /* the edges: overflow, underflow, NaN, zeros */
        float sx[8] = {89.0f, 1000.0f, INFINITY, -104.0f, -INFINITY, NAN, 0.0f, -0.0f}, sy[8];
        k->unary(LITHE__UN_EXP, 8, sx, sy);
        assert_true(isinf(sy[0]) && isinf(sy[1]) && isinf(sy[2]));
        assert_true(sy[3] == 0.0f && sy[4] == 0.0f && isnan(sy[5]) && sy[6] == 1.0f && sy[7] == 1.0f);
        /* tanh */
        for (int i = 0; i < NPTS; i++) x[i] = (float)(-12.0 + 24.0 * i / (NPTS - 1));
        lithe__act a = {.kind = LITHE__ACT_TANH};
        k->act(&a, NPTS, x, y);
        worst = 0;
        for (int i = 0; i < NPTS; i++) {
            double want = tanh((double)x[i]);
            if (fabs((double)y[i] - want) <= 1e-9) continue;
            double e = ulps(y[i], want);
            if (e > worst) worst = e;
        }
        fprintf(stderr, "test_simd: %s tanh: max %.2f ulp (or within 1e-9)\n", k->isa, worst);
        assert_true(worst <= 8.0);
    }
    free(x);
    free(y);
}

/* The checks shared with test_simd_tables (simd_tables.h, which the WASI build runs on SIMD128). */
static void test_every_table_matches_scalar(void **state) {
    (void)state;
    for (int t = 1; t < ntables; t++)
        for (int sp = 0; sp < 2; sp++) {
            compare_table(tables[t], sp);
            compare_maxpool(tables[t], sp);
        }
    for (int t = 1; t < ntables; t++) compare_entries(tables[t]);
    fprintf(stderr, "test_simd: largest relative difference in the bounded kernels: %.3g\n", worst_rel);
}

/* The row kernels that take several rows at once (softmax at temperature 1, layernorm and its dX:
 * four rows interleaved where the rows are whole vectors) give each row the bits it gets alone
 * (M = 1: the one-row loop), on every table, rows of 16 to 128 (whole vectors on every ISA) and 20
 * (a tail on the wide ones), 7 rows (4 + 3), with a masked (-inf) entry, an inf row and a NaN among
 * them. */
static void test_row_kernels_rows_at_once(void **state) {
    (void)state;
    enum { M = 7, NMAX = 128 };
    static const int64_t widths[] = {16, 20, 32, 64, 128};
    float X[M * NMAX], D[M * NMAX], G[NMAX], b[NMAX], Y1[M * NMAX], Y2[M * NMAX], m1[M], m2[M], s1[M], s2[M];
    for (int t = 0; t < ntables; t++)
        for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++) {
            const lithe__simd_kernels *k = tables[t];
            int64_t N = widths[w];
            fill(X, M * N, -4, 4), fill(D, M * N, -1, 1), fill(G, N, 0.5, 2), fill(b, N, -1, 1);
            X[N - 1] = -INFINITY, X[2 * N + 3] = INFINITY, X[5 * N + 1] = NAN, D[6 * N] = NAN;
            k->softmax(M, N, X, 1.0f, Y1);
            for (int r = 0; r < M; r++) k->softmax(1, N, X + r * N, 1.0f, Y2 + r * N);
            same_bits(k->isa, "softmax, rows at once", M * N, Y2, Y1);
            k->layernorm(M, N, X, G, b, 1e-5f, Y1, m1, s1);
            for (int r = 0; r < M; r++) k->layernorm(1, N, X + r * N, G, b, 1e-5f, Y2 + r * N, m2 + r, s2 + r);
            same_bits(k->isa, "layernorm, rows at once", M * N, Y2, Y1);
            same_bits(k->isa, "layernorm mean, rows at once", M, m2, m1);
            same_bits(k->isa, "layernorm inv_std, rows at once", M, s2, s1);
            fill(m1, M, -0.5, 0.5), fill(s1, M, 0.5, 3); /* finite statistics: dX's rows */
            k->layernorm_backward_dx(M, N, D, X, G, m1, s1, Y1);
            for (int r = 0; r < M; r++)
                k->layernorm_backward_dx(1, N, D + r * N, X + r * N, G, m1 + r, s1 + r, Y2 + r * N);
            same_bits(k->isa, "layernorm_backward dX, rows at once", M * N, Y2, Y1);
        }
}

/* The CPU backend's bcast_binary: the broadcasts its wrapper sends to the vector row kernel (same
 * shapes, a bias row, a per-row statistic, a scalar, on either side, with unit axes) and the ones it
 * leaves to the odometer loop give the scalar odometer's bits, on every op, 1 and 2 threads. */
static void test_bcast_binary_rows(void **state) {
    (void)state;
    lithe_backend *cpu = NULL;
    assert_int_equal(lithe_backend_get("cpu", &cpu), LITHE_OK);
    static const int64_t cases[][2][5] = { /* {ndim, extents...} of A and B */
        {{2, 64, 128}, {2, 64, 128}}, {{2, 64, 128}, {1, 128}}, {{2, 64, 128}, {2, 64, 1}}, {{2, 64, 128}, {1, 1}},
        {{1, 1}, {3, 4, 64, 33}},     {{3, 1, 64, 33}, {1, 33}}, {{3, 4, 5, 7}, {3, 4, 1, 7}}, {{3, 4, 5, 7}, {2, 5, 1}},
        {{3, 2, 1, 9}, {2, 1, 9}},     {{3, 1, 3, 17}, {3, 4, 3, 17}}, {{4, 2, 3, 4, 5}, {3, 3, 1, 5}},
        {{2, 512, 130}, {1, 130}},    {{2, 300, 257}, {2, 300, 257}}, /* split over threads */
    };
    for (int threads = 1; threads <= 2; threads++) {
        assert_int_equal(lithe_backend_set_threads(cpu, threads), LITHE_OK);
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            int na = (int)cases[c][0][0], nb = (int)cases[c][1][0], ny = na > nb ? na : nb;
            int64_t ys[5], as[5], bs[5];
            for (int d = 0; d < ny; d++) {
                int ka = d - (ny - na), kb = d - (ny - nb);
                int64_t ea = ka >= 0 ? cases[c][0][1 + ka] : 1, eb = kb >= 0 ? cases[c][1][1 + kb] : 1;
                ys[d] = ea > eb ? ea : eb;
            }
            lithe_tensor *A = NULL, *B = NULL, *Y = NULL;
            assert_int_equal(lithe_tensor_new(cpu, LITHE_F32, na, &cases[c][0][1], &A), LITHE_OK);
            assert_int_equal(lithe_tensor_new(cpu, LITHE_F32, nb, &cases[c][1][1], &B), LITHE_OK);
            assert_int_equal(lithe_tensor_new(cpu, LITHE_F32, ny, ys, &Y), LITHE_OK);
            float *pa = lithe_tensor_data(A), *pb = lithe_tensor_data(B), *py = lithe_tensor_data(Y);
            fill(pa, lithe_tensor_numel(A), -2, 2);
            fill(pb, lithe_tensor_numel(B), 0.25, 2);
            /* the reference: the scalar odometer with the backend's broadcast strides */
            for (int side = 0; side < 2; side++) {
                const lithe_tensor *t = side ? B : A;
                int64_t *st = side ? bs : as, s = 1;
                for (int d = ny - 1, k = t->ndim - 1; d >= 0; d--, k--) {
                    st[d] = k < 0 || (t->shape[k] == 1 && ys[d] != 1) ? 0 : s;
                    if (k >= 0) s *= t->shape[k];
                }
            }
            int64_t n = lithe_tensor_numel(Y);
            float *want = malloc((size_t)n * sizeof *want);
            for (int op = 0; op < LITHE__BIN_COUNT; op++) {
                lithe_f32_bcast_binary__scalar(op, ny, ys, pa, as, pb, bs, want);
                assert_int_equal(lithe__op_bcast_binary(cpu, op, A, B, Y), LITHE_OK);
                assert_memory_equal(want, py, (size_t)n * sizeof *want);
                /* the adjoint (cpu_bcast_binary_backward's rows for add / sub / mul, the odometer
                 * otherwise): the scalar twin's bits, accumulating onto prefilled gradients */
                if (op > LITHE__BIN_DIV) continue;
                int64_t nA = lithe_tensor_numel(A), nB = lithe_tensor_numel(B);
                lithe_tensor *dY = NULL, *dA = NULL, *dB = NULL;
                assert_int_equal(lithe_tensor_new(cpu, LITHE_F32, ny, ys, &dY), LITHE_OK);
                assert_int_equal(lithe_tensor_new(cpu, LITHE_F32, na, &cases[c][0][1], &dA), LITHE_OK);
                assert_int_equal(lithe_tensor_new(cpu, LITHE_F32, nb, &cases[c][1][1], &dB), LITHE_OK);
                float *pdy = lithe_tensor_data(dY), *pda = lithe_tensor_data(dA), *pdb = lithe_tensor_data(dB);
                float *wa = malloc((size_t)nA * sizeof *wa), *wb = malloc((size_t)nB * sizeof *wb);
                fill(pdy, n, -1, 1), fill(wa, nA, -1, 1), fill(wb, nB, -1, 1);
                memcpy(pda, wa, (size_t)nA * sizeof *wa), memcpy(pdb, wb, (size_t)nB * sizeof *wb);
                lithe_f32_bcast_binary_backward__scalar(op, ny, ys, pa, as, pb, bs, want, pdy, wa, wb);
                assert_int_equal(lithe__op_bcast_binary_backward(cpu, op, A, B, Y, dY, dA, dB), LITHE_OK);
                assert_memory_equal(wa, pda, (size_t)nA * sizeof *wa);
                assert_memory_equal(wb, pdb, (size_t)nB * sizeof *wb);
                free(wa), free(wb);
                lithe_tensor_release(dY), lithe_tensor_release(dA), lithe_tensor_release(dB);
            }
            free(want);
            lithe_tensor_release(A), lithe_tensor_release(B), lithe_tensor_release(Y);
        }
    }
    assert_int_equal(lithe_backend_set_threads(cpu, 1), LITHE_OK);
}

/* The table's own twins: the scalar table must be the scalar kernels bit for bit (its adapters
 * re-express sum_rows, layernorm_backward, scatter-add and maxout by ranges). */
static void test_scalar_adapters(void **state) {
    (void)state;
    enum { M = 7, N = 33 };
    float X[M * N], dY[M * N], G[N], b[N], Y[M * N], mean[M], is[M];
    fill(X, M * N, -3, 3), fill(dY, M * N, -1, 1), fill(G, N, 0.5, 1.5), fill(b, N, -1, 1);
    lithe_f32_layernorm__scalar(M, N, X, G, b, 1e-5f, Y, mean, is);
    float dX1[M * N], dG1[N] = {0}, db1[N] = {0}, dX2[M * N], dG2[N] = {0}, db2[N] = {0};
    lithe_f32_layernorm_backward__scalar(M, N, dY, X, G, mean, is, dX1, dG1, db1);
    lithe__simd_scalar.layernorm_backward_dgb(M, N, N, dY, X, mean, is, dG2, db2);
    lithe__simd_scalar.layernorm_backward_dx(M, N, dY, X, G, mean, is, dX2);
    assert_memory_equal(dX1, dX2, sizeof dX1);
    assert_memory_equal(dG1, dG2, sizeof dG1);
    assert_memory_equal(db1, db2, sizeof db1);
    float y1[N], y2[N];
    lithe_f32_sum_rows__scalar(M, N, X, 0.0f, y1);
    lithe__simd_scalar.sum_rows(M, N, N, X, 0.0f, y2);
    assert_memory_equal(y1, y2, sizeof y1);
}

/* ---- threads: the lithe__cpu_* entries give the same bits for 1, 2 and 3 threads ---- */

typedef struct outs {
    float *o[4];
} outs;

enum { TN = 150001, TM = 301, TC = 517 };

static void run_entries(const float *X, const float *A, const float *B, const float *RX, outs *r) {
    float *o0 = r->o[0], *o1 = r->o[1], *o2 = r->o[2], *o3 = r->o[3];
    lithe__act gelu = {.kind = LITHE__ACT_GELU}, relu = {.kind = LITHE__ACT_RELU};
    lithe__cpu_act(&gelu, TN, X, o0);
    lithe__cpu_act_backward(&relu, TN, A, NULL, X, o0 + TN);
    memcpy(o1, B, sizeof(float) * TN);
    memcpy(o2, A, sizeof(float) * TN);
    memcpy(o3, X, sizeof(float) * TN);
    lithe__cpu_adam(TN, o3, A, o1, o2, 0.9f, 0.999f, 1e-8f, 1e-3f);
    lithe__cpu_axpby(TN, 0.5f, X, 0.25f, o3);
    lithe__cpu_mul(TN, o3, B, o3 + TN);
    lithe__cpu_unary(LITHE__UN_EXP, TN, A, o2 + TN);
    memcpy(o0 + 2 * TN, A, sizeof(float) * TN); /* the fused Adam step: G (zeroed), avg */
    memcpy(o2 + 2 * TN, X, sizeof(float) * TN);
    lithe__cpu_adam_step(TN, o3, o0 + 2 * TN, o1, o2, o2 + 2 * TN, 0.5f, 0.9f, 0.999f, 1e-8f, 1e-3f, 0.999f, 0.8f);
    float *R = o1 + TN; /* row ops on (TM, TC) */
    lithe__cpu_softmax(TM, TC, RX, 1.0f, R);
    lithe__cpu_log_softmax(TM, TC, RX, R + TM * TC);
    memcpy(R + 2 * TM * TC, RX, sizeof(float) * TM * TC);
    lithe__cpu_add_row(TM, TC, R + 2 * TM * TC, A);
    lithe__cpu_sum_rows(TM, TC, RX, 0.5f, R + 3 * TM * TC);
    float *mean = R + 3 * TM * TC + TC, *is = mean + TM, *LY = is + TM;
    lithe__cpu_layernorm(TM, TC, RX, B, A, 1e-5f, LY, mean, is);
    float *dX = LY + TM * TC, *dG = dX + TM * TC, *db = dG + TC;
    memset(dG, 0, sizeof(float) * 2 * TC);
    lithe__cpu_layernorm_backward(TM, TC, A, RX, B, mean, is, dX, dG, db);
    int32_t ids[TM];
    for (int i = 0; i < TM; i++) ids[i] = (i * 7) % 13;
    float *table = db + TC;
    memset(table, 0, sizeof(float) * 13 * TC);
    lithe__cpu_scatter_add_rows(TM, TC, table, ids, NULL, RX);
    lithe__cpu_gather_rows(TM, TC, table, ids, NULL, table + 13 * TC);
    lithe__cpu_dropout_mask(77, 5, 0.3f, TN, o3 + 2 * TN);
}

static void test_threads_bit_identical(void **state) {
    (void)state;
    lithe_backend *cpu;
    OK(lithe_backend_get("cpu", &cpu));
    size_t cap = (size_t)TN * 3 + (size_t)TM * TC * 12;
    /* A is also layernorm_backward's dY (TM, TC), so it holds the larger of the two sizes */
    size_t big = (size_t)(TN > TM * TC ? TN : TM * TC);
    float *X = malloc(sizeof(float) * TN), *A = malloc(sizeof(float) * big), *B = malloc(sizeof(float) * TN),
          *RX = malloc(sizeof(float) * TM * TC);
    outs r[3];
    for (int t = 0; t < 3; t++)
        for (int i = 0; i < 4; i++) {
            r[t].o[i] = calloc(cap, sizeof(float));
            assert_non_null(r[t].o[i]);
        }
    fill(X, TN, -5, 5), fill(A, (int64_t)big, -1, 1), fill(B, TN, 0.1, 2), fill(RX, TM * TC, -4, 4);
    for (int t = 0; t < 3; t++) {
        lithe_status st = lithe_backend_set_threads(cpu, t + 1);
        if (st == LITHE_ERR_UNSUPPORTED) skip(); /* a build without threads */
        OK(st);
        run_entries(X, A, B, RX, &r[t]);
    }
    OK(lithe_backend_set_threads(cpu, 0));
    float *mask = malloc(sizeof(float) * TN);
    lithe_f32_dropout_mask__scalar(77, 5, 0.3f, TN, mask);
    assert_memory_equal(mask, r[2].o[3] + 2 * TN, sizeof(float) * TN); /* 3 threads = one scalar call */
    free(mask);
    for (int t = 1; t < 3; t++)
        for (int i = 0; i < 4; i++) {
            if (memcmp(r[0].o[i], r[t].o[i], sizeof(float) * cap)) {
                print_error("%d threads differ from 1 thread in output block %d\n", t + 1, i);
                fail();
            }
        }
    for (int t = 0; t < 3; t++)
        for (int i = 0; i < 4; i++) free(r[t].o[i]);
    free(X), free(A), free(B), free(RX);
}


/* The CPU backend's Ragged reduce_sum / reduce_mean and their backprops (run on each table's sum_rows
 * and axpby, 1 and 3 threads) give the scalar twins' bits: zero-length sequences, long ones, odd
 * widths, -0, NaN and inf in X. */
static void test_seq_reduce_matches_scalar(void **state) {
    (void)state;
    lithe_backend *cpu;
    OK(lithe_backend_get("cpu", &cpu));
    static const int32_t lens[] = {3, 0, 1, 70, 2, 0, 300, 5};
    enum { B = sizeof lens / sizeof lens[0] };
    static const int64_t widths[] = {1, 5, 33, 130};
    for (size_t wi = 0; wi < sizeof widths / sizeof widths[0]; wi++) {
        int64_t O = widths[wi], Nr = 0;
        for (int b = 0; b < B; b++) Nr += lens[b];
        float *X = malloc(sizeof(float) * (size_t)(Nr * O)), *dY = malloc(sizeof(float) * (size_t)(B * O));
        float *want = malloc(sizeof(float) * (size_t)(Nr * O));
        assert_true(X && dY && want);
        fill(X, Nr * O, -3, 3), fill(dY, B * O, -1, 1);
        X[0] = -0.0f, X[O] = NAN, X[2 * O] = INFINITY, dY[0] = -0.0f;
        int64_t lshape = B, yshape[2] = {B, O}, xshape[2] = {Nr, O};
        lithe_tensor *L = NULL, *tX = NULL, *tdY = NULL, *Y = NULL, *dX = NULL;
        OK(lithe_tensor_from_data(LITHE_I32, 1, &lshape, lens, &L));
        OK(lithe_tensor_from_data(LITHE_F32, 2, xshape, X, &tX));
        OK(lithe_tensor_from_data(LITHE_F32, 2, yshape, dY, &tdY));
        OK(lithe_tensor_from_data(LITHE_F32, 2, yshape, dY, &Y));
        OK(lithe_tensor_from_data(LITHE_F32, 2, xshape, X, &dX));
        for (int t = 0; t < ntables; t++)
            for (int th = 0; th < 2; th++) {
                lithe__simd_force(tables[t]);
                lithe_status st = lithe_backend_set_threads(cpu, th ? 3 : 1);
                if (st == LITHE_ERR_UNSUPPORTED) continue; /* a build without threads */
                OK(st);
                for (int mean = 0; mean < 2; mean++) {
                    OK(lithe__op_reduce_sum(cpu, tX, L, mean, Y));
                    lithe_f32_reduce_sum__scalar(B, O, lens, X, mean, want);
                    if (memcmp(want, lithe_tensor_data(Y), sizeof(float) * (size_t)(B * O))) {
                        print_error("%s, %d threads, O=%lld: reduce_%s differs from the scalar twin\n", tables[t]->isa,
                                    th ? 3 : 1, (long long)O, mean ? "mean" : "sum");
                        fail();
                    }
                    OK(lithe__op_reduce_sum_backward(cpu, tdY, L, mean, dX));
                    lithe_f32_reduce_sum_backward__scalar(B, O, lens, dY, mean, want);
                    if (memcmp(want, lithe_tensor_data(dX), sizeof(float) * (size_t)(Nr * O))) {
                        print_error("%s, %d threads, O=%lld: reduce_%s backward differs from the scalar twin\n",
                                    tables[t]->isa, th ? 3 : 1, (long long)O, mean ? "mean" : "sum");
                        fail();
                    }
                }
            }
        lithe__simd_force(NULL);
        OK(lithe_backend_set_threads(cpu, 0));
        lithe_tensor_release(L), lithe_tensor_release(tX), lithe_tensor_release(tdY), lithe_tensor_release(Y);
        lithe_tensor_release(dX);
        free(X), free(dY), free(want);
    }
}

/* ---- the optimizer: lithe_optimizer_step's fused Adam (the adam_step primitive) against the same
 * step taken by the separate primitives (a copy of the CPU backend whose table lacks adam_step),
 * bit for bit, over three steps of each of Thinc's Adam configurations ---- */

static void test_optimizer_fused_matches_passes(void **state) {
    (void)state;
    lithe_backend *cpu = lithe__backend_cpu();
    lithe_backend_ops ops = *cpu->ops;
    ops.adam_step = NULL;
    lithe_backend plain = *cpu;
    plain.ops = &ops;
    lithe_model *node = NULL;
    OK(lithe_linear(NULL, &node));
    enum { NP = 1037 };
    for (int c = 0; c < 6; c++) {
        lithe_optimizer_opts o = lithe_adam_defaults();
        if (c == 1) o.L2 = 0.01;                                      /* decoupled weight decay */
        if (c == 2) o.L2 = 0.01, o.L2_is_weight_decay = false;       /* L2 into the gradient */
        if (c == 3) o.grad_clip = 0.0, o.use_averages = false; /* torch.optim.Adam's work (bench --adam torch) */
        if (c == 4) o.grad_clip = 100.0;                              /* norms below the clip */
        if (c == 5) o.learn_rate = 0.01, o.beta1 = 0.8, o.beta2 = 0.99, o.eps = 1e-6, o.grad_clip = 0.1;
        lithe_optimizer *opt[2];
        lithe_tensor *W[2], *G[2];
        for (int b = 0; b < 2; b++) {
            OK(lithe_optimizer_new(&o, &opt[b]));
            OK(lithe__tensor_alloc(b ? &plain : cpu, LITHE_F32, 1, (int64_t[]){NP}, false, &W[b]));
            OK(lithe__tensor_alloc(b ? &plain : cpu, LITHE_F32, 1, (int64_t[]){NP}, false, &G[b]));
        }
        rng_state = 99;
        fill(lithe__f32(W[0]), NP, -1, 1);
        memcpy(lithe__f32(W[1]), lithe__f32(W[0]), sizeof(float) * NP);
        for (int step = 0; step < 3; step++) {
            fill(lithe__f32(G[0]), NP, -0.2, 0.2);
            memcpy(lithe__f32(G[1]), lithe__f32(G[0]), sizeof(float) * NP);
            for (int b = 0; b < 2; b++) OK(lithe_optimizer_step(opt[b], node, "W", W[b], G[b]));
            assert_memory_equal(lithe__f32(W[0]), lithe__f32(W[1]), sizeof(float) * NP);
            assert_memory_equal(lithe__f32(G[0]), lithe__f32(G[1]), sizeof(float) * NP);
            if (o.use_averages) {
                lithe_tensor *a0 = NULL, *a1 = NULL;
                OK(lithe_optimizer_get_average(opt[0], node, "W", &a0));
                OK(lithe_optimizer_get_average(opt[1], node, "W", &a1));
                assert_memory_equal(lithe__f32(a0), lithe__f32(a1), sizeof(float) * NP);
            }
        }
        for (int b = 0; b < 2; b++) {
            lithe_optimizer_free(opt[b]);
            lithe_tensor_release(W[b]);
            lithe_tensor_release(G[b]);
        }
    }
    lithe_model_free(node);
}

/* ---- convolution (backends/cpu/conv/) against the scalar twins ---- */

typedef struct conv_case {
    int64_t N, C, H, W, M, KH, KW, s0, s1, p0, p1, p2, p3, d0, d1, group;
} conv_case;

static const conv_case conv_cases[] = {
    {2, 5, 9, 23, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 5},    /* depthwise 3x3, a row wider than 16 */
    {1, 3, 7, 7, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 3},     /* depthwise on 7-wide rows */
    {2, 4, 11, 40, 4, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 4},   /* depthwise stride 2 */
    {1, 2, 12, 30, 2, 5, 5, 1, 1, 4, 4, 4, 4, 2, 2, 2},   /* depthwise 5x5, dilation 2 */
    {1, 3, 20, 56, 3, 5, 5, 2, 2, 2, 2, 2, 2, 1, 1, 3},   /* depthwise 5x5 stride 2 (lraspp's 56 -> 28) */
    {2, 3, 9, 28, 3, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, 3},    /* depthwise 5x5 on 28-wide rows: one step of four */
    {1, 2, 11, 18, 2, 5, 5, 2, 2, 2, 2, 2, 2, 1, 1, 2},   /* depthwise 5x5 stride 2 to 9 wide: runs of rows */
    {1, 2, 10, 37, 2, 3, 3, 2, 1, 0, 2, 1, 0, 1, 1, 2},   /* depthwise, uneven padding and strides */
    /* the depthwise long rows (conv/depthwise.c dw_layout): phase planes, runs across row ends, the twin's
     * fall-backs */
    {1, 3, 7, 7, 3, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 3},     /* depthwise stride 2 on an odd 7x7 plane */
    {2, 5, 14, 14, 5, 3, 3, 2, 2, 0, 0, 1, 1, 1, 1, 5},   /* stride 2, padding at the end only (TF's SAME) */
    {1, 4, 13, 11, 4, 3, 3, 1, 1, 0, 0, 0, 0, 1, 1, 4},   /* no padding, stride 1: reads X itself */
    {1, 3, 15, 17, 3, 3, 3, 2, 2, 0, 0, 0, 0, 1, 1, 3},   /* no padding, stride 2 */
    {1, 3, 16, 19, 3, 3, 3, 3, 2, 2, 1, 0, 2, 2, 3, 3},   /* stride 3 down, 2 across, dilations 2, 3, uneven pads */
    {2, 3, 4, 5, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 3},     /* a plane shorter than a vector */
    {1, 2, 9, 9, 2, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1, 2},     /* 1x1 depthwise, padded */
    {1, 2, 50, 61, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2},   /* several runs per plane (ext's rows) */
    {1, 2, 41, 70, 2, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 2},   /* several runs, stride 2 */
    {1, 1, 3, 2100, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},  /* a row wider than a run: one row per run */
    {1, 2, 12, 11, 2, 9, 8, 1, 1, 4, 4, 4, 3, 1, 1, 2},   /* 72 taps, past the long rows' limit: the twin */
    {1, 2, 6, 32, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2},    /* rows a whole number of vectors wide: straight into Y */
    {2, 3, 10, 10, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},   /* plain 3x3 */
    {2, 4, 9, 8, 6, 3, 2, 2, 1, 1, 0, 0, 1, 1, 1, 2},     /* grouped, strided, uneven padding */
    {1, 3, 12, 12, 4, 3, 3, 1, 1, 0, 0, 0, 0, 2, 2, 1},   /* dilated */
    {3, 8, 5, 7, 5, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1},     /* pointwise */
    {2, 1, 28, 28, 16, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, 1},  /* LeNet's first layer */
    /* stride 1 reads shifted rows of a zero-bordered copy (conv/gemm.c), K past the GEMM's kc block */
    {2, 20, 9, 13, 7, 5, 5, 1, 1, 2, 1, 2, 3, 1, 1, 1},   /* uneven padding, K = 500 */
    {1, 6, 7, 11, 4, 3, 3, 1, 1, 0, 0, 0, 0, 1, 3, 2},    /* grouped; dilation 3 drops more than it keeps: im2col */
    {2, 3, 6, 9, 5, 1, 1, 1, 1, 1, 2, 0, 1, 1, 1, 1},     /* 1x1 with padding */
    {1, 4, 10, 12, 6, 3, 3, 2, 1, 1, 1, 1, 1, 1, 1, 2},   /* stride 2 down, 1 across: im2col */
    {2, 3, 16, 16, 6, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1},   /* the stem's shape: shifted rows, stride 2 (split_rows) */
    {1, 3, 15, 17, 8, 3, 3, 2, 2, 1, 0, 1, 1, 1, 1, 1},   /* stride 2, odd width, no left padding: phases swap */
    {1, 2, 13, 20, 5, 3, 3, 2, 3, 1, 2, 0, 1, 1, 1, 1},   /* stride 3 across: copy_rows with a stride */
    {1, 16, 14, 14, 32, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, 1}, /* LeNet's second layer */
    {2, 6, 11, 13, 4, 3, 3, 1, 1, 2, 0, 1, 1, 2, 1, 2},   /* dX as a convolution: dilation, uneven pads, groups */
    {1, 2, 6, 7, 3, 3, 3, 1, 1, 3, 0, 0, 0, 1, 1, 1},     /* a pad past the kernel's reach: dX through col2im */
    /* other strides read phase planes (conv/gemm.c) */
    {2, 3, 17, 19, 5, 3, 3, 3, 3, 1, 2, 0, 1, 2, 2, 1},   /* stride 3, dilation 2, uneven padding */
    {1, 4, 9, 21, 6, 3, 5, 1, 2, 1, 2, 1, 2, 1, 1, 2},    /* stride 1 down, 2 across, grouped */
    {2, 8, 10, 11, 6, 1, 1, 2, 2, 0, 0, 0, 0, 1, 1, 1},   /* 1x1 stride 2 (a residual downsample) */
    {1, 3, 32, 32, 8, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1},   /* mobilenet's first layer, smaller */
    /* pixel rows (conv/gemm.c's orientation: the GEMM's tiles transposed into Y) */
    {1, 600, 7, 7, 40, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1},  /* pointwise, K = 600: a second K block reads Y back */
    {2, 40, 7, 9, 70, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},   /* shifted rows, 9-wide: slivers across output rows */
    {1, 24, 9, 9, 33, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1},   /* phase planes; 33 filters: a partial column tile */
    /* the depthwise channels in lanes (conv/depthwise.c dw_use_lanes): planes under 16 wide, big stride-2 planes */
    {3, 37, 7, 7, 37, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 37},  /* batch 3, 37 channels: blocks of fewer */
    {2, 19, 13, 11, 19, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 19}, /* stride 2, odd sizes */
    {1, 17, 100, 98, 17, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 17}, /* phase planes past L1: a ring of rows */
    /* the in-place 3x3 (conv/depthwise.c dw_use_3x3) */
    {2, 3, 6, 37, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 3},    /* stride 1, odd width, several strips */
    {1, 3, 10, 16, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 3},   /* rows exactly 16 wide */
    {2, 3, 8, 40, 3, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 3},    /* stride 2, even sizes: no bottom / right padding read */
    {1, 3, 10, 66, 3, 3, 3, 2, 2, 1, 1, 0, 0, 1, 1, 3},   /* stride 2, no bottom / right padding */
};

static lithe__conv2d geom(const conv_case *c) {
    lithe__conv2d g = {.N = c->N, .C = c->C, .H = c->H, .W = c->W, .M = c->M, .KH = c->KH, .KW = c->KW,
                       .group = c->group, .stride = {c->s0, c->s1}, .pad = {c->p0, c->p1, c->p2, c->p3},
                       .dil = {c->d0, c->d1}};
    g.OH = (c->H + c->p0 + c->p2 - c->d0 * (c->KH - 1) - 1) / c->s0 + 1;
    g.OW = (c->W + c->p1 + c->p3 - c->d1 * (c->KW - 1) - 1) / c->s1 + 1;
    return g;
}

static void conv_check(const conv_case *c, lithe_backend *cpu, const char *isa) {
    lithe__conv2d g = geom(c);
    bool dw = c->group == c->C && c->group == c->M;
    size_t nx = (size_t)(g.N * g.C * g.H * g.W), nw = (size_t)(g.M * (g.C / g.group) * g.KH * g.KW),
           ny = (size_t)(g.N * g.M * g.OH * g.OW);
    float *X = malloc(nx * 4), *W = malloc(nw * 4), *b = malloc((size_t)g.M * 4), *Ys = malloc(ny * 4),
          *Yv = malloc(ny * 4), *dY = malloc(ny * 4), *dXs = malloc(nx * 4), *dXv = malloc(nx * 4),
          *dWs = malloc(nw * 4), *dWv = malloc(nw * 4), *dbs = malloc((size_t)g.M * 4), *dbv = malloc((size_t)g.M * 4);
    fill(X, (int64_t)nx, -1, 1), fill(W, (int64_t)nw, -1, 1), fill(b, g.M, -1, 1), fill(dY, (int64_t)ny, -1, 1);
    fill(dXs, (int64_t)nx, -1, 1), fill(dWs, (int64_t)nw, -1, 1), fill(dbs, g.M, -1, 1);
    memcpy(dXv, dXs, nx * 4), memcpy(dWv, dWs, nw * 4), memcpy(dbv, dbs, (size_t)g.M * 4);
    /* the sums over |terms| (prefilled gradients included) for close_mag */
    float *aX = abs_copy(X, nx), *aW = abs_copy(W, nw), *ab = abs_copy(b, (size_t)g.M), *adY = abs_copy(dY, ny),
          *mY = malloc(ny * 4), *mY0 = malloc(ny * 4), *mdX = abs_copy(dXs, nx), *mdW = abs_copy(dWs, nw),
          *mdb = abs_copy(dbs, (size_t)g.M), *mdW0 = calloc(nw, 4);
    lithe_f32_conv2d__scalar(&g, aX, aW, ab, mY);
    lithe_f32_conv2d__scalar(&g, aX, aW, NULL, mY0);
    lithe_f32_conv2d_backward__scalar(&g, aX, aW, adY, mdX, mdW, mdb);
    lithe_f32_conv2d_backward__scalar(&g, aX, aW, adY, NULL, mdW0, NULL);
    lithe_f32_conv2d__scalar(&g, X, W, b, Ys);
    OK(lithe__cpu_conv2d(cpu, &g, X, W, b, NULL, Yv));
    lithe_f32_conv2d_backward__scalar(&g, X, W, dY, dXs, dWs, dbs);
    OK(lithe__cpu_conv2d_backward(cpu, &g, X, W, dY, dXv, dWv, dbv));
    if (dw) { /* the twin's order: bit for bit */
        same_bits(isa, "depthwise conv2d", (int64_t)ny, Ys, Yv);
        same_bits(isa, "depthwise conv2d dX", (int64_t)nx, dXs, dXv);
        same_bits(isa, "depthwise conv2d dW", (int64_t)nw, dWs, dWv);
        same_bits(isa, "depthwise conv2d db", g.M, dbs, dbv);
    } else { /* GEMM order: sums of up to ~1,600 products of magnitude <= 1 (LeNet's dW) */
        close_mag(isa, "conv2d", (int64_t)ny, Ys, Yv, mY);
        close_mag(isa, "conv2d dX", (int64_t)nx, dXs, dXv, mdX);
        close_mag(isa, "conv2d dW", (int64_t)nw, dWs, dWv, mdW);
        close_mag(isa, "conv2d db", g.M, dbs, dbv, mdb);
    }
    /* without bias, and with only some gradients wanted */
    lithe_f32_conv2d__scalar(&g, X, W, NULL, Ys);
    OK(lithe__cpu_conv2d(cpu, &g, X, W, NULL, NULL, Yv));
    close_mag(isa, "conv2d without bias", (int64_t)ny, Ys, Yv, mY0);
    lithe_f32_conv2d_backward__scalar(&g, X, W, dY, NULL, dWs, NULL);
    OK(lithe__cpu_conv2d_backward(cpu, &g, X, W, dY, NULL, dWv, NULL));
    /* dW already held the first pass's sum: its magnitude plus one more pass */
    for (size_t i = 0; i < nw; i++) mdW0[i] += mdW[i];
    close_mag(isa, "conv2d dW only", (int64_t)nw, dWs, dWv, mdW0);
    free(aX), free(aW), free(ab), free(adY), free(mY), free(mY0), free(mdX), free(mdW), free(mdb), free(mdW0);
    free(X), free(W), free(b), free(Ys), free(Yv), free(dY), free(dXs), free(dXv), free(dWs), free(dWv), free(dbs),
        free(dbv);
}

static void test_conv2d_matches_scalar(void **state) {
    (void)state;
    lithe_backend *cpu;
    OK(lithe_backend_get("cpu", &cpu));
    for (int t = 0; t < ntables; t++) {
        lithe__simd_force(tables[t]);
        for (size_t i = 0; i < sizeof conv_cases / sizeof conv_cases[0]; i++) conv_check(&conv_cases[i], cpu, tables[t]->isa);
    }
    lithe__simd_force(NULL);
}

static void test_conv2d_threads_bit_identical(void **state) {
    (void)state;
    lithe_backend *cpu;
    OK(lithe_backend_get("cpu", &cpu));
    const conv_case cs[] = {{4, 24, 20, 33, 24, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 24},
                            {6, 3, 14, 14, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},
                            {1, 16, 14, 14, 32, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, 1},  /* batch 1: the GEMM splits */
                            {1, 24, 15, 17, 40, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1},  /* pointwise */
                            {2, 6, 15, 17, 40, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 2},   /* im2col */
                            {3, 6, 11, 13, 4, 3, 3, 1, 1, 2, 0, 1, 1, 2, 1, 2},   /* dX as a convolution */
                            {1, 160, 7, 7, 96, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1},   /* pixel rows at batch 1 */
                            {3, 40, 14, 14, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 40}}; /* depthwise, lanes */
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        lithe__conv2d g = geom(&cs[i]);
        size_t nx = (size_t)(g.N * g.C * g.H * g.W), nw = (size_t)(g.M * (g.C / g.group) * g.KH * g.KW),
               ny = (size_t)(g.N * g.M * g.OH * g.OW), nm = (size_t)g.M;
        /* [0]: 1 thread, [1]: 2 or 3: Y, dX, dW, db */
        float *X = malloc(nx * 4), *W = malloc(nw * 4), *dY = malloc(ny * 4), *Y[2], *dX[2], *dW[2], *db[2],
              *b = i % 2 ? malloc(nm * 4) : NULL; /* with and without bias */
        for (int r = 0; r < 2; r++)
            Y[r] = malloc(ny * 4), dX[r] = calloc(nx, 4), dW[r] = calloc(nw, 4), db[r] = calloc(nm, 4);
        fill(X, (int64_t)nx, -1, 1), fill(W, (int64_t)nw, -1, 1), fill(dY, (int64_t)ny, -1, 1);
        if (b) fill(b, g.M, -1, 1);
        lithe_status st = lithe_backend_set_threads(cpu, 1);
        OK(st);
        OK(lithe__cpu_conv2d(cpu, &g, X, W, b, NULL, Y[0]));
        OK(lithe__cpu_conv2d_backward(cpu, &g, X, W, dY, dX[0], dW[0], db[0]));
        for (int th = 2; th <= 3; th++) {
            st = lithe_backend_set_threads(cpu, th);
            if (st == LITHE_ERR_UNSUPPORTED) break;
            OK(st);
            memset(dX[1], 0, nx * 4), memset(dW[1], 0, nw * 4), memset(db[1], 0, nm * 4);
            OK(lithe__cpu_conv2d(cpu, &g, X, W, b, NULL, Y[1]));
            OK(lithe__cpu_conv2d_backward(cpu, &g, X, W, dY, dX[1], dW[1], db[1]));
            assert_memory_equal(Y[0], Y[1], ny * 4);
            assert_memory_equal(dX[0], dX[1], nx * 4);
            assert_memory_equal(dW[0], dW[1], nw * 4);
            assert_memory_equal(db[0], db[1], nm * 4);
        }
        OK(lithe_backend_set_threads(cpu, 0));
        for (int r = 0; r < 2; r++) free(Y[r]), free(dX[r]), free(dW[r]), free(db[r]);
        free(X), free(W), free(dY), free(b);
    }
}

/* Depthwise planes run from a zero-bordered copy of the input when that cannot change a bit: the
 * twin skips padding taps, the copy adds 0·w for them, so a -0 sum (a -0 bias, all taps -0) or a
 * non-finite weight (0·inf = NaN) must take the edge loop. Each case differs from the twin when
 * sent down the padded path (the fall-back checks removed, this test fails). */
static void test_conv2d_depthwise_padding_exact(void **state) {
    (void)state;
    lithe_backend *cpu;
    OK(lithe_backend_get("cpu", &cpu));
    const conv_case cs[] = {{1, 4, 6, 9, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 4},
                            {1, 4, 9, 9, 4, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 4},  /* stride 2 */
                            {1, 4, 7, 10, 4, 3, 3, 1, 1, 0, 2, 1, 0, 1, 1, 4}, /* uneven padding */
                            /* no padding: the long rows add no padding tap, so they take these planes */
                            {1, 4, 6, 9, 4, 3, 3, 1, 1, 0, 0, 0, 0, 1, 1, 4},
                            {1, 4, 9, 9, 4, 3, 3, 2, 2, 0, 0, 0, 0, 1, 1, 4},
                            /* the in-place 3x3 (dwconv3x3): bad planes among good ones in a run */
                            {1, 7, 6, 9, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 7},
                            {1, 7, 7, 7, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 7},
                            {1, 6, 8, 16, 6, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 6},
                            {1, 6, 14, 14, 6, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 6}};
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        lithe__conv2d g = geom(&cs[i]);
        size_t nx = (size_t)(g.C * g.H * g.W), ny = (size_t)(g.M * g.OH * g.OW), nw = (size_t)(g.M * 9);
        float *X = malloc(nx * 4), *W = malloc(nw * 4), *b = malloc((size_t)g.M * 4), *Ys = malloc(ny * 4),
              *Yv = malloc(ny * 4);
        fill(X, (int64_t)nx, -1, 1), fill(W, (int64_t)nw, 0.1, 1), fill(b, g.M, -1, 1);
        for (size_t k = 0; k < (size_t)(g.H * g.W); k++) X[k] = -0.0f; /* plane 0: -0 inputs, w > 0, bias -0 */
        b[0] = -0.0f;
        W[9 + 0] = INFINITY; /* plane 1: an infinite corner tap */
        W[18 + 8] = NAN;     /* plane 2: a NaN corner tap */
        b[3] = -0.0f;        /* plane 3: -0 weights and bias (their signs decide the sum's) */
        for (int k = 0; k < 9; k++) W[27 + k] = -0.0f;
        for (size_t k = 3 * (size_t)(g.H * g.W); k < nx; k++) X[k] = fabsf(X[k]);
        for (int t = 0; t < ntables; t++) {
            lithe__simd_force(tables[t]);
            lithe_f32_conv2d__scalar(&g, X, W, b, Ys);
            OK(lithe__cpu_conv2d(cpu, &g, X, W, b, NULL, Yv));
            same_bits(tables[t]->isa, "depthwise conv2d, -0 and non-finite", (int64_t)ny, Ys, Yv);
        }
        free(X), free(W), free(b), free(Ys), free(Yv);
    }
    lithe__simd_force(NULL);
}

/* A fused activation (conv2d's a) on the depthwise path: relu and clip (ReLU6) run in the kernel's
 * registers (by max / min where the ISA's operand order allows), other kinds and a clip whose
 * bounds cross by the act kernel after; either way the twin's sum then that table's act kernel,
 * bit for bit (inputs include -0, NaN, ±inf and values past the clip). */
static void test_conv2d_depthwise_fused_act(void **state) {
    (void)state;
    lithe_backend *cpu;
    OK(lithe_backend_get("cpu", &cpu));
    const conv_case cs[] = {{1, 3, 14, 14, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 3},
                            {1, 3, 15, 13, 3, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 3},
                            {1, 2, 7, 7, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2},
                            {1, 2, 11, 12, 2, 5, 5, 2, 2, 2, 2, 2, 2, 1, 1, 2},
                            {1, 2, 9, 10, 2, 3, 3, 1, 1, 0, 0, 0, 0, 1, 1, 2},
                            {1, 2, 5, 32, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2},  /* rows straight into Y */
                            {1, 2, 5, 35, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2},  /* in place (dwconv3x3) */
                            {1, 2, 8, 36, 2, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 2},  /* in place, stride 2 */
                            /* other windows on the long rows (dwt_impl: four vectors per step, the act
                             * in registers where VW > 4): rows of 28 (one step), 41 (a step of 32, then
                             * one whose vectors all end at 41), 17 (three of four at 9), runs of rows
                             * (ext: 14 wide read from X itself; the stride-2 ones take the lanes on
                             * AVX2, the long rows elsewhere), dilation 2, a 3x5 window */
                            {1, 2, 6, 28, 2, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, 2},
                            {1, 2, 6, 41, 2, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, 2},
                            {1, 2, 12, 17, 2, 5, 5, 1, 1, 4, 4, 4, 4, 2, 2, 2},
                            {1, 2, 9, 18, 2, 5, 5, 2, 2, 2, 2, 2, 2, 1, 1, 2},
                            {1, 2, 9, 18, 2, 5, 5, 1, 1, 0, 0, 0, 0, 1, 1, 2},
                            {1, 2, 20, 56, 2, 5, 5, 2, 2, 2, 2, 2, 2, 1, 1, 2},
                            {1, 2, 7, 19, 2, 3, 5, 1, 1, 1, 2, 1, 2, 1, 1, 2}};
    const lithe__act acts[] = {{.kind = LITHE__ACT_RELU},
                               {.kind = LITHE__ACT_CLIPPED_LINEAR, .slope = 1, .offset = 0, .min_val = 0, .max_val = 6},
                               {.kind = LITHE__ACT_CLIPPED_LINEAR, .slope = 0.5f, .offset = 0.25f, .min_val = -1, .max_val = 1},
                               {.kind = LITHE__ACT_CLIPPED_LINEAR, .slope = 1, .offset = 0, .min_val = 1, .max_val = -1},
                               {.kind = LITHE__ACT_CLIPPED_LINEAR, .slope = -2, .offset = 0, .min_val = -0.0f, .max_val = 0.5f},
                               {.kind = LITHE__ACT_HARD_SWISH_MOBILENET},
                               {.kind = LITHE__ACT_SIGMOID}};
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        lithe__conv2d g = geom(&cs[i]);
        size_t nx = (size_t)(g.C * g.H * g.W), ny = (size_t)(g.M * g.OH * g.OW), nw = (size_t)(g.M * g.KH * g.KW);
        float *X = malloc(nx * 4), *W = malloc(nw * 4), *b = malloc((size_t)g.M * 4), *Ys = malloc(ny * 4),
              *Yv = malloc(ny * 4);
        fill(X, (int64_t)nx, -4, 4), fill(W, (int64_t)nw, -1, 1), fill(b, g.M, -1, 1);
        for (size_t k = 0; k < nx; k += 7) X[k] = -0.0f;
        X[nx / 3] = NAN, X[nx / 2] = INFINITY, X[nx - 5] = -INFINITY; /* NaN sums: relu 0, clip NaN */
        for (size_t a = 0; a < sizeof acts / sizeof acts[0]; a++)
            for (int t = 0; t < ntables; t++) {
                lithe__simd_force(tables[t]);
                lithe_f32_conv2d__scalar(&g, X, W, b, Ys);
                tables[t]->act(&acts[a], (int64_t)ny, Ys, Ys);
                OK(lithe__cpu_conv2d(cpu, &g, X, W, b, &acts[a], Yv));
                same_bits(tables[t]->isa, "depthwise conv2d with a fused act", (int64_t)ny, Ys, Yv);
            }
        free(X), free(W), free(b), free(Ys), free(Yv);
    }
    lithe__simd_force(NULL);
}

/* The channels-in-lanes kernel (dwconv_lanes) called directly, on every table that has one, against
 * the twin's sum then that table's act kernel, bit for bit: tiny planes (fewer pixels than lanes),
 * channel counts past a multiple of the lanes (blocks of fewer channels), odd sizes at stride 2,
 * uneven and TF-style paddings, dilations and 5x5, planes past the whole-plane buffer (a ring of
 * rows), every act kind class (relu, clip in registers with and without the slope, a clip whose
 * bounds cross, others by act1), and a -0 bias on an unpadded plane whose sum is -0 (relu6 may not
 * drop its + 0 there). Inputs with -0, NaN and ±inf. */
static void test_conv2d_depthwise_lanes(void **state) {
    (void)state;
    const conv_case cs[] = {{1, 16, 7, 7, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 16},
                            {1, 21, 7, 7, 21, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 21},    /* a block of 5 (AVX-512) */
                            {1, 19, 14, 14, 19, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 19},  /* 14 -> 7 at stride 2 */
                            {1, 9, 13, 11, 9, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 9},     /* odd sizes, stride 2 */
                            {1, 5, 3, 2, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 5},       /* 6 pixels */
                            {1, 3, 1, 1, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 3},       /* one pixel */
                            {1, 10, 14, 14, 10, 3, 3, 2, 2, 0, 0, 1, 1, 1, 1, 10},  /* TF's SAME at stride 2 */
                            {1, 6, 12, 9, 6, 3, 3, 1, 1, 0, 2, 1, 0, 1, 1, 6},      /* uneven padding */
                            {1, 8, 10, 11, 8, 3, 3, 1, 1, 0, 0, 0, 0, 1, 1, 8},     /* no padding */
                            {1, 7, 16, 19, 7, 5, 5, 3, 2, 2, 1, 0, 2, 2, 3, 7},     /* 5x5, strides 3, 2, dilations */
                            {1, 11, 14, 14, 11, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, 11}, /* mobilenet_v3's 5x5 (4 pixels at once) */
                            {1, 3, 70, 90, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 3},     /* a ring of rows */
                            {1, 17, 61, 37, 17, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 17},  /* a ring, stride 2, odd */
                            {1, 5, 40, 33, 5, 3, 3, 1, 1, 2, 0, 0, 1, 2, 2, 5}};    /* a ring, dilated */
    const lithe__act acts[] = {{.kind = LITHE__ACT_RELU},
                               {.kind = LITHE__ACT_CLIPPED_LINEAR, .slope = 1, .offset = 0, .min_val = 0, .max_val = 6},
                               {.kind = LITHE__ACT_CLIPPED_LINEAR, .slope = 1, .offset = 0.25f, .min_val = -1, .max_val = 1},
                               {.kind = LITHE__ACT_CLIPPED_LINEAR, .slope = 0.5f, .offset = 0, .min_val = -1, .max_val = 1},
                               {.kind = LITHE__ACT_CLIPPED_LINEAR, .slope = 1, .offset = 0, .min_val = 1, .max_val = -1},
                               {.kind = LITHE__ACT_HARD_SWISH_MOBILENET},
                               {.kind = LITHE__ACT_SIGMOID}};
    int tested = 0;
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        lithe__conv2d g = geom(&cs[i]);
        int64_t T = g.KH * g.KW, P = g.H * g.W, OP = g.OH * g.OW;
        size_t nx = (size_t)(g.C * P), ny = (size_t)(g.C * OP), nw = (size_t)(g.C * T);
        float *X = malloc(nx * 4), *W = malloc(nw * 4), *b = malloc((size_t)g.C * 4), *Ys = malloc(ny * 4),
              *Yv = malloc(ny * 4);
        fill(X, (int64_t)nx, -4, 4), fill(W, (int64_t)nw, -1, 1), fill(b, g.C, -1, 1);
        for (size_t k = 0; k < nx; k += 7) X[k] = -0.0f;
        bool padded = g.pad[0] || g.pad[1] || g.pad[2] || g.pad[3];
        if (!padded) { /* channel 1: -0 inputs, positive taps, a -0 bias: a -0 sum */
            for (int64_t k = 0; k < P; k++) X[P + k] = -0.0f;
            for (int64_t t = 0; t < T; t++) W[T + t] = 0.5f;
            b[1] = -0.0f;
        }
        X[nx / 3] = NAN, X[nx / 2] = INFINITY, X[nx - 1] = -INFINITY;
        for (size_t a = 0; a <= sizeof acts / sizeof acts[0]; a++) {
            const lithe__act *act = a ? &acts[a - 1] : NULL;
            for (int t = 0; t < ntables; t++) {
                const lithe__simd_kernels *k = tables[t];
                if (!k->dwconv_lanes) continue;
                lithe_f32_conv2d__scalar(&g, X, W, b, Ys);
                if (act) k->act(act, (int64_t)ny, Ys, Ys);
                size_t nws = lithe__dw_lanes_ws(&g, k->lanes);
                float *ws = calloc(nws, sizeof(float));
                memset(Yv, 0x7f, ny * 4);
                for (int64_t c0 = 0; c0 < g.C; c0 += k->lanes) /* one ws for every block, zeroed once */
                    k->dwconv_lanes(&g, g.C - c0 < k->lanes ? g.C - c0 : k->lanes, X + c0 * P, W + c0 * T, b + c0,
                                    act, Yv + c0 * OP, ws);
                same_bits(k->isa, "dwconv_lanes", (int64_t)ny, Ys, Yv);
                /* without bias */
                lithe_f32_conv2d__scalar(&g, X, W, NULL, Ys);
                if (act) k->act(act, (int64_t)ny, Ys, Ys);
                for (int64_t c0 = 0; c0 < g.C; c0 += k->lanes)
                    k->dwconv_lanes(&g, g.C - c0 < k->lanes ? g.C - c0 : k->lanes, X + c0 * P, W + c0 * T, NULL, act,
                                    Yv + c0 * OP, ws);
                same_bits(k->isa, "dwconv_lanes without bias", (int64_t)ny, Ys, Yv);
                free(ws);
                tested++;
            }
        }
        free(X), free(W), free(b), free(Ys), free(Yv);
    }
#if defined(__x86_64__) && !defined(LITHE_NO_SIMD)
    assert_true(tested > 0);
#endif
}

/* A fused activation on the GEMM paths (pointwise, shifted rows, im2col; filter rows and pixel rows
 * forced by LITHE_CONV_ROWS): relu and clip (ReLU6) in the microkernel's store where the kernel
 * clamps (gemm.h's clamp_ok), other kinds after; either way the unfused conv then that table's act
 * kernel, bit for bit (inputs with -0, NaN, ±inf). */
static void test_conv2d_gemm_fused_act(void **state) {
    (void)state;
    lithe_backend *cpu;
    OK(lithe_backend_get("cpu", &cpu));
    const conv_case cs[] = {{2, 16, 12, 12, 40, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1},  /* pointwise */
                            {1, 6, 14, 14, 20, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},   /* shifted rows */
                            {1, 4, 9, 23, 9, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1},     /* im2col */
                            {1, 8, 10, 10, 12, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 2},  /* groups */
                            {2, 1, 28, 28, 16, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, 1}}; /* filter rows in place */
    const lithe__act acts[] = {{.kind = LITHE__ACT_RELU},
                               {.kind = LITHE__ACT_CLIPPED_LINEAR, .slope = 1, .offset = 0, .min_val = 0, .max_val = 6},
                               {.kind = LITHE__ACT_CLIPPED_LINEAR, .slope = 1, .offset = 0, .min_val = -0.5f, .max_val = 0.5f},
                               {.kind = LITHE__ACT_CLIPPED_LINEAR, .slope = 1, .offset = 0, .min_val = 1, .max_val = -1},
                               {.kind = LITHE__ACT_CLIPPED_LINEAR, .slope = 1, .offset = 0, .min_val = -0.0f, .max_val = 0.5f},
                               {.kind = LITHE__ACT_HARD_SWISH_MOBILENET}};
    static const char *rows[] = {"filters", "pixels"};
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        lithe__conv2d g = geom(&cs[i]);
        size_t nx = (size_t)(g.N * g.C * g.H * g.W), ny = (size_t)(g.N * g.M * g.OH * g.OW),
               nw = (size_t)(g.M * g.C / g.group * g.KH * g.KW);
        float *X = malloc(nx * 4), *W = malloc(nw * 4), *b = malloc((size_t)g.M * 4), *Ys = malloc(ny * 4),
              *Yv = malloc(ny * 4);
        fill(X, (int64_t)nx, -4, 4), fill(W, (int64_t)nw, -1, 1), fill(b, g.M, -1, 1);
        for (size_t k = 0; k < nw; k += 5) W[k] = 0.0f; /* -0 sums where the input is -0 */
        for (size_t k = 0; k < nx; k += 7) X[k] = -0.0f;
        X[nx / 3] = NAN, X[nx / 2] = INFINITY, X[nx - 5] = -INFINITY;
        for (int r = 0; r < 2; r++) {
            setenv("LITHE_CONV_ROWS", rows[r], 1);
            for (size_t a = 0; a < sizeof acts / sizeof acts[0]; a++)
                for (int t = 0; t < ntables; t++) {
                    lithe__simd_force(tables[t]);
                    OK(lithe__cpu_conv2d(cpu, &g, X, W, b, NULL, Ys));
                    tables[t]->act(&acts[a], (int64_t)ny, Ys, Ys);
                    OK(lithe__cpu_conv2d(cpu, &g, X, W, b, &acts[a], Yv));
                    same_bits(tables[t]->isa, rows[r], (int64_t)ny, Ys, Yv);
                }
        }
        unsetenv("LITHE_CONV_ROWS");
        free(X), free(W), free(b), free(Ys), free(Yv);
    }
    lithe__simd_force(NULL);
}

/* The in-place 3x3 kernel (dwconv3x3) called directly, on every table that has one, against the
 * twin's sum then that table's act kernel, bit for bit: stride 1 on rows exactly a vector wide (both
 * edges in one vector), odd widths (the last strip overlapping), more strips than one pass holds,
 * one- and two-row planes; stride 2 with and without the bottom / right padding, output rows exactly
 * a vector wide and odd; planes under 8 wide (AVX-512 pairs them), odd plane counts; bands of rows
 * (stride 1 and 2, the last band short); all planes in one call and one by one; every act class (none, relu, ReLU6 by min / max, a clip with slope and
 * offset, bounds that cross, others after the sum); with and without bias. Inputs with -0, NaN, ±inf. */
static void test_dwconv3x3_matches_twin(void **state) {
    (void)state;
    const conv_case cs[] = {{1, 2, 1, 16, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2},  {1, 2, 2, 8, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2},
                            {1, 2, 5, 16, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2},  {1, 2, 4, 17, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2},
                            {1, 2, 3, 33, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2},  {1, 2, 6, 70, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2},
                            {1, 2, 7, 9, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2},   {1, 2, 3, 130, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2},
                            {1, 2, 2, 32, 2, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 2},  {1, 2, 4, 34, 2, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 2},
                            {1, 2, 12, 16, 2, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 2}, {1, 2, 6, 64, 2, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 2},
                            {1, 2, 8, 130, 2, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 2}, {1, 2, 4, 18, 2, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 2},
                            {1, 2, 6, 36, 2, 3, 3, 2, 2, 1, 1, 0, 0, 1, 1, 2},  {1, 2, 7, 33, 2, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 2},
                            /* planes under 8 wide (AVX-512: two planes per vector), odd plane counts */
                            {1, 3, 7, 7, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 3},   {1, 4, 3, 5, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 4},
                            {1, 3, 1, 1, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 3},   {1, 5, 14, 14, 5, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 5},
                            {1, 3, 4, 6, 3, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 3},   {1, 3, 2, 2, 3, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 3},
                            {1, 3, 15, 15, 3, 3, 3, 2, 2, 1, 1, 0, 0, 1, 1, 3}, {1, 2, 9, 8, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2},
                            /* bands of rows (more than two strip groups across) */
                            {1, 2, 30, 40, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2}, {1, 2, 50, 80, 2, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 2},
                            {1, 1, 26, 150, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1}, {1, 1, 24, 300, 1, 3, 3, 2, 2, 1, 1, 0, 0, 1, 1, 1}};
    const lithe__act acts[] = {{.kind = LITHE__ACT_RELU},
                               {.kind = LITHE__ACT_CLIPPED_LINEAR, .slope = 1, .offset = 0, .min_val = 0, .max_val = 6},
                               {.kind = LITHE__ACT_CLIPPED_LINEAR, .slope = 0.5f, .offset = 0.25f, .min_val = -1, .max_val = 1},
                               {.kind = LITHE__ACT_CLIPPED_LINEAR, .slope = 1, .offset = 0, .min_val = 1, .max_val = -1},
                               {.kind = LITHE__ACT_HARD_SWISH_MOBILENET},
                               {.kind = LITHE__ACT_SIGMOID}};
    int tested = 0;
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        lithe__conv2d g = geom(&cs[i]);
        int64_t P = g.H * g.W, OP = g.OH * g.OW, s = g.stride[0];
        size_t nx = (size_t)(g.C * P), ny = (size_t)(g.C * OP);
        float *X = malloc(nx * 4), *W = malloc((size_t)g.C * 9 * 4), *b = malloc((size_t)g.C * 4), *Ys = malloc(ny * 4),
              *Yv = malloc(ny * 4);
        fill(X, (int64_t)nx, -4, 4), fill(W, g.C * 9, -1, 1), fill(b, g.C, -1, 1);
        for (size_t k = 0; k < nx; k += 7) X[k] = -0.0f;
        X[nx / 3] = NAN, X[nx / 2] = INFINITY, X[nx - 1] = -INFINITY;
        for (size_t a = 0; a <= sizeof acts / sizeof acts[0]; a++)
            for (int bias = 0; bias < 2; bias++)
                for (int t = 0; t < ntables; t++) {
                    const lithe__simd_kernels *k = tables[t];
                    const lithe__act *act = a ? &acts[a - 1] : NULL;
                    if (!k->dwconv3x3 || (s == 2 && (2 * g.OH > g.H || 2 * g.OW > g.W)) ||
                        g.OW < k->dwconv3x3_min_width)
                        continue;
                    lithe_f32_conv2d__scalar(&g, X, W, bias ? b : NULL, Ys);
                    if (act) k->act(act, (int64_t)ny, Ys, Ys);
                    memset(Yv, 0x7f, ny * 4);
                    k->dwconv3x3(g.C, g.H, g.W, s, g.OH, g.OW, X, Yv, W, bias ? b : NULL, act); /* all at once */
                    same_bits(k->isa, "dwconv3x3", (int64_t)ny, Ys, Yv);
                    memset(Yv, 0x7f, ny * 4);
                    for (int64_t c = 0; c < g.C; c++) /* one plane at a time */
                        k->dwconv3x3(1, g.H, g.W, s, g.OH, g.OW, X + c * P, Yv + c * OP, W + c * 9, bias ? b + c : NULL,
                                     act);
                    same_bits(k->isa, "dwconv3x3 plane by plane", (int64_t)ny, Ys, Yv);
                    tested++;
                }
        free(X), free(W), free(b), free(Ys), free(Yv);
    }
    bool any = false;
    for (int t = 0; t < ntables; t++) any |= tables[t]->dwconv3x3 != NULL;
    if (any) assert_true(tested > 0);
}


/* An image's output does not depend on the batch around it: each image alone gives the bits it has
 * in the batch, on every forward path (shifted rows, im2col, pointwise, depthwise). */
static void test_conv2d_image_alone_equals_batch(void **state) {
    (void)state;
    lithe_backend *cpu;
    OK(lithe_backend_get("cpu", &cpu));
    const conv_case cs[] = {{4, 16, 14, 14, 32, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, 1},
                            {3, 20, 9, 13, 7, 5, 5, 1, 1, 2, 1, 2, 3, 1, 1, 1},
                            {3, 4, 9, 8, 6, 3, 2, 2, 1, 1, 0, 0, 1, 1, 1, 2},
                            {3, 8, 5, 7, 5, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1},
                            {3, 5, 9, 23, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 5},
                            {3, 3, 17, 19, 5, 3, 3, 3, 3, 1, 2, 0, 1, 2, 2, 1},
                            {3, 160, 7, 7, 96, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1},  /* pixel rows, 7x7 */
                            /* LeNet's first layer: filter rows read in place in the batch, packed for an
                             * image alone on 3 threads (conv/gemm.c's direct) */
                            {3, 1, 28, 28, 16, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, 1}};
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        lithe__conv2d g = geom(&cs[i]), g1 = g;
        g1.N = 1;
        size_t xi = (size_t)(g.C * g.H * g.W), yi = (size_t)(g.M * g.OH * g.OW),
               nw = (size_t)(g.M * (g.C / g.group) * g.KH * g.KW);
        float *X = malloc(xi * (size_t)g.N * 4), *W = malloc(nw * 4), *b = malloc((size_t)g.M * 4),
              *Y = malloc(yi * (size_t)g.N * 4), *Y1 = malloc(yi * 4);
        fill(X, (int64_t)xi * g.N, -1, 1), fill(W, (int64_t)nw, -1, 1), fill(b, g.M, -1, 1);
        OK(lithe__cpu_conv2d(cpu, &g, X, W, b, NULL, Y));
        for (int64_t n = 0; n < g.N; n++) {
            lithe_status st = lithe_backend_set_threads(cpu, n == 1 ? 3 : 1); /* one image: the GEMM splits */
            assert_true(st == LITHE_OK || st == LITHE_ERR_UNSUPPORTED);
            OK(lithe__cpu_conv2d(cpu, &g1, X + (size_t)n * xi, W, b, NULL, Y1));
            assert_memory_equal(Y + (size_t)n * yi, Y1, yi * 4);
        }
        lithe_status st = lithe_backend_set_threads(cpu, 0);
        assert_true(st == LITHE_OK || st == LITHE_ERR_UNSUPPORTED);
        /* with W packed ahead (prepared weights, group 1): the same bits, alone and in the batch */
        int64_t K = (g.C / g.group) * g.KH * g.KW;
        lithe__sgemm_packed_b *Wp = g.group == 1 ? lithe__sgemm_pack_b(NULL, true, K, g.M, W, K) : NULL;
        if (g.group == 1) assert_non_null(Wp);
        float *Yp = malloc(yi * (size_t)g.N * 4);
        OK(lithe__cpu_conv2d_packed(cpu, &g, X, W, Wp, b, NULL, Yp));
        assert_memory_equal(Y, Yp, yi * (size_t)g.N * 4);
        OK(lithe__cpu_conv2d_packed(cpu, &g1, X, W, Wp, b, NULL, Y1));
        assert_memory_equal(Y, Y1, yi * 4);
        lithe__sgemm_packed_b_free(Wp);
        free(Yp);
        free(X), free(W), free(b), free(Y), free(Y1);
    }
}

/* The depthwise kernels themselves against the scalar table (simd_tables.h's compare_dwconv), with
 * and without -0, ±inf and NaN among the inputs. */
static void test_dwconv_kernels_match_scalar(void **state) {
    (void)state;
    for (int t = 1; t < ntables; t++) /* tables[0] is the scalar table itself */
        for (int sp = 0; sp < 2; sp++) compare_dwconv(tables[t], sp);
}

/* ---- the caching allocator (backends/cpu/cache.c) ---- */

static long counted_live;
static void *c_malloc(void *u, size_t n) { (void)u; counted_live++; return malloc(n); }
static void *c_realloc(void *u, void *p, size_t n) { (void)u; if (!p) counted_live++; return realloc(p, n); }
static void c_free(void *u, void *p) { (void)u; if (p) { counted_live--; free(p); } }

static void test_cache_reuses_and_bounds(void **state) {
    (void)state;
    lithe_backend *cpu;
    OK(lithe_backend_get("cpu", &cpu));
    lithe__cpu_cache_flush();
    assert_int_equal(lithe__cpu_cache_bytes(), 0);
    void *a = NULL, *b = NULL;
    OK(cpu->ops->alloc(cpu, 1000, &a));
    assert_int_equal((uintptr_t)a % 64, 0);
    memset(a, 1, 1000);
    cpu->ops->free(cpu, a);
    assert_true(lithe__cpu_cache_bytes() >= 1000);
    OK(cpu->ops->alloc(cpu, 1020, &b)); /* the same size class: the same block */
    assert_ptr_equal(a, b);
    assert_int_equal(lithe__cpu_cache_bytes(), 0);
    cpu->ops->free(cpu, b);
    /* sizes across the classes, each block as large as asked */
    size_t sizes[] = {1, 255, 256, 257, 4095, 4096, 4097, 100000, 1 << 20, (1 << 20) + 1};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        OK(cpu->ops->alloc(cpu, sizes[i], &a));
        memset(a, 0xab, sizes[i]);
        cpu->ops->free(cpu, a);
    }
    /* bounded: 40 live blocks of 16 MiB freed at once keep at most 256 MiB */
    void *big[40];
    for (int i = 0; i < 40; i++) OK(cpu->ops->alloc(cpu, (size_t)16 << 20, &big[i]));
    for (int i = 0; i < 40; i++) cpu->ops->free(cpu, big[i]);
    assert_true(lithe__cpu_cache_bytes() <= ((size_t)256 << 20));
    assert_true(lithe__cpu_cache_bytes() >= ((size_t)128 << 20));
    lithe__cpu_cache_flush();
    assert_int_equal(lithe__cpu_cache_bytes(), 0);

    /* a user's allocator: nothing is kept, every block goes back (and set_allocator flushed first) */
    OK(cpu->ops->alloc(cpu, 5000, &a));
    cpu->ops->free(cpu, a);
    assert_true(lithe__cpu_cache_bytes() > 0);
    OK(lithe_set_allocator(&(lithe_allocator){c_malloc, c_realloc, c_free, NULL}));
    assert_int_equal(lithe__cpu_cache_bytes(), 0);
    counted_live = 0;
    OK(cpu->ops->alloc(cpu, 5000, &a));
    assert_int_equal(counted_live, 1);
    cpu->ops->free(cpu, a);
    assert_int_equal(counted_live, 0);
    assert_int_equal(lithe__cpu_cache_bytes(), 0);
    OK(lithe_set_allocator(NULL));
}

/* ---- pooling (conv/pool.c) against the scalar twins, bit for bit; max pooling without which (inference)
 * gives the same Y; average pooling also against a float64 mean; relu's indices (-1 where the output
 * is <= 0) and their backward ---- */
static void test_pool2d_matches_scalar(void **state) {
    (void)state;
    typedef struct { int64_t N, C, H, W, K, s, p; bool max, cip; int64_t KW, d; } pc; /* KW, d 0: K, 1 */
    const pc cases[] = {{3, 5, 28, 28, 2, 2, 0, true, false, 0, 0}, {2, 3, 9, 11, 2, 2, 0, true, false, 0, 0},
                        {2, 4, 13, 10, 3, 2, 1, true, false, 0, 0}, {1, 6, 8, 9, 3, 1, 1, false, false, 0, 0},
                        {2, 2, 7, 7, 3, 2, 1, false, true, 0, 0},
                        {1, 3, 6, 39, 2, 2, 0, true, false, 0, 0}, /* 19 columns: the 8-, 4- and 1-wide blocks */
                        {1, 2, 30, 30, 2, 2, 0, true, false, 0, 0},
                        {2, 3, 6, 7, 2, 2, 0, true, false, 0, 0},   /* 3 columns: one at a time */
                        {1, 2, 4, 3, 2, 2, 0, true, false, 0, 0},   /* 1 column */
                        {1, 2, 4, 24, 2, 2, 0, true, false, 0, 0},  /* 12 columns: 8 + 4 */
                        /* assign (issue 29): 7 and 4 outputs a row, rows stored whole (their spill
                         * rewritten by the next row), the last row pair masked */
                        {2, 5, 14, 14, 2, 2, 0, true, false, 0, 0}, {1, 3, 10, 8, 2, 2, 0, true, false, 0, 0},
                        /* windows inside the plane: eight planes at a time, then the twin for the rest */
                        {3, 7, 7, 7, 7, 1, 0, false, false, 0, 0},      /* GlobalAveragePool, 21 planes */
                        {2, 9, 5, 9, 5, 1, 0, false, false, 9, 0},   /* global, not square, 18 planes */
                        {2, 9, 5, 9, 5, 1, 0, true, false, 9, 0},    /* GlobalMaxPool */
                        {1, 17, 11, 10, 3, 2, 0, false, true, 0, 0},    /* AveragePool 3x3 / 2 */
                        {1, 17, 11, 10, 3, 2, 0, true, false, 0, 0},    /* MaxPool 3x3 / 2 */
                        {2, 5, 12, 13, 3, 1, 0, true, false, 2, 2}, /* dilated 3x2 */
                        {2, 5, 12, 13, 2, 3, 0, false, false, 3, 2},
                        {1, 8, 1, 1, 1, 1, 0, false, false, 0, 0},      /* 1x1 planes */
                        /* GlobalAveragePool with the planes in the lanes (pool_avx2.c): 8-float blocks, tails */
                        {1, 16, 14, 14, 14, 1, 0, false, false, 0, 0}, {1, 9, 56, 56, 56, 1, 0, false, false, 0, 0},
                        {2, 12, 3, 5, 3, 1, 0, false, false, 5, 0}};
    lithe_backend *cpu;
    OK(lithe_backend_get("cpu", &cpu));
    size_t dropped = 0; /* relu: indices made -1 */
    for (int tt = 0; tt < 2 * ntables; tt++) { /* every table at 1 and 3 threads */
        int th = tt % 2 ? 3 : 1;
        lithe__simd_force(tables[tt / 2]);
        lithe_status st = lithe_backend_set_threads(cpu, th);
        if (st == LITHE_ERR_UNSUPPORTED) continue;
        OK(st);
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            const pc *c = &cases[i];
            int64_t d = c->d ? c->d : 1;
            lithe__pool2d g = {.N = c->N, .C = c->C, .H = c->H, .W = c->W, .KH = c->K, .KW = c->KW ? c->KW : c->K,
                               .stride = {c->s, c->s}, .pad = {c->p, c->p, c->p, c->p}, .dil = {d, d},
                               .max = c->max, .count_include_pad = c->cip};
            g.OH = (c->H + 2 * c->p - d * (g.KH - 1) - 1) / c->s + 1;
            g.OW = (c->W + 2 * c->p - d * (g.KW - 1) - 1) / c->s + 1;
            size_t nx = (size_t)(g.N * g.C * g.H * g.W), ny = (size_t)(g.N * g.C * g.OH * g.OW);
            float *X = malloc(nx * 4), *Ys = malloc(ny * 4), *Yv = malloc(ny * 4), *Yn = malloc(ny * 4),
                  *dY = malloc(ny * 4), *dXs = calloc(nx, 4), *dXv = calloc(nx, 4);
            int32_t *ws = malloc(ny * 4), *wv = malloc(ny * 4);
            fill(X, (int64_t)nx, -1, 1), fill(dY, (int64_t)ny, -1, 1);
            /* the backward adds into dX: start both from the same values, some -0 (an element no
             * output chose keeps its bits) */
            fill(dXs, (int64_t)nx, -1, 1);
            for (size_t q = 0; q < nx; q += 7) dXs[q] = -0.0f;
            memcpy(dXv, dXs, nx * 4);
            if (!c->max) { /* the float64 mean first, on finite data */
                lithe__cpu_pool2d(&g, X, Yv, NULL);
                for (int64_t nc = 0; nc < g.N * g.C; nc++)
                    for (int64_t oh = 0; oh < g.OH; oh++)
                        for (int64_t ow = 0; ow < g.OW; ow++) {
                            double sum = 0.0;
                            int64_t cnt = 0;
                            for (int64_t kh = 0; kh < g.KH; kh++)
                                for (int64_t kw = 0; kw < g.KW; kw++) {
                                    int64_t h = oh * c->s - c->p + kh * d, w = ow * c->s - c->p + kw * d;
                                    if (h < 0 || h >= g.H || w < 0 || w >= g.W) continue;
                                    sum += X[(nc * g.H + h) * g.W + w], cnt++;
                                }
                            double ref = sum / (double)(c->cip ? g.KH * g.KW : cnt);
                            /* |x| <= 1: the float sum of cnt terms is within (cnt - 1) u cnt, its mean
                             * within (cnt - 1) u, u = 2^-24, plus the division's rounding */
                            assert_true(fabs(Yv[(nc * g.OH + oh) * g.OW + ow] - ref) <= (double)cnt * 0x1p-24);
                        }
            }
            X[0] = X[1]; /* a tie: the first maximum wins */
            for (size_t q = 5; q < nx; q += 37) X[q] = (q / 37) % 3 ? X[q - 1] : NAN; /* ties and NaNs inside */
            lithe_f32_pool2d__scalar(&g, X, Ys, c->max ? ws : NULL);
            lithe__cpu_pool2d(&g, X, Yv, c->max ? wv : NULL);
            same_bits("pool", "pool2d", (int64_t)ny, Ys, Yv);
            if (c->max) assert_memory_equal(ws, wv, ny * 4);
            if (c->max) { /* inference: no which, the same Y from the twin and the backend */
                lithe__cpu_pool2d(&g, X, Yn, NULL);
                same_bits("pool", "maxpool2d without which", (int64_t)ny, Ys, Yn);
                lithe_f32_pool2d__scalar(&g, X, Yn, NULL);
                same_bits("pool", "maxpool2d twin without which", (int64_t)ny, Ys, Yn);
            }
            lithe_f32_pool2d_backward__scalar(&g, dY, c->max ? ws : NULL, dXs);
            lithe__cpu_pool2d_backward(&g, dY, c->max ? wv : NULL, dXv);
            same_bits("pool", "pool2d backward", (int64_t)nx, dXs, dXv);
            /* assign (issue 29): dX's old values (NaN here) unread, every element written: the
             * twin's adds into zeros, bit for bit */
            lithe__pool2d ga = g;
            ga.assign = true;
            for (size_t q = 0; q < nx; q++) dXs[q] = 0.0f, dXv[q] = NAN;
            lithe_f32_pool2d_backward__scalar(&g, dY, c->max ? ws : NULL, dXs);
            lithe__cpu_pool2d_backward(&ga, dY, c->max ? wv : NULL, dXv);
            same_bits("pool", "pool2d backward, assign", (int64_t)nx, dXs, dXv);
            if (c->max) { /* relu (issue 29): the twin's indices, -1 where its output is <= 0 (NaN keeps
                           * its index); the backward routes nothing for those, as the twin skips them */
                lithe__pool2d gr = g;
                gr.relu = true;
                lithe__cpu_pool2d(&gr, X, Yv, wv);
                same_bits("pool", "maxpool2d, relu", (int64_t)ny, Ys, Yv);
                for (size_t q = 0; q < ny; q++) {
                    ws[q] = Ys[q] <= 0.0f ? -1 : ws[q];
                    dropped += ws[q] < 0;
                }
                assert_memory_equal(ws, wv, ny * 4);
                for (size_t q = 0; q < nx; q++) dXs[q] = 0.0f, dXv[q] = NAN;
                lithe_f32_pool2d_backward__scalar(&g, dY, ws, dXs);
                lithe__cpu_pool2d_backward(&ga, dY, wv, dXv);
                same_bits("pool", "pool2d backward, relu indices", (int64_t)nx, dXs, dXv);
            }
            free(X), free(Ys), free(Yv), free(Yn), free(dY), free(dXs), free(dXv), free(ws), free(wv);
        }
    }
    assert_true(dropped > 0);
    lithe__simd_force(NULL);
    OK(lithe_backend_set_threads(cpu, 0));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vector_exp_tanh_accuracy),
        cmocka_unit_test(test_every_table_matches_scalar),
        cmocka_unit_test(test_scalar_adapters),
        cmocka_unit_test(test_row_kernels_rows_at_once),
        cmocka_unit_test(test_bcast_binary_rows),
        cmocka_unit_test(test_conv2d_matches_scalar),
        cmocka_unit_test(test_conv2d_image_alone_equals_batch),
        cmocka_unit_test(test_conv2d_depthwise_padding_exact),
        cmocka_unit_test(test_dwconv3x3_matches_twin),
        cmocka_unit_test(test_conv2d_depthwise_fused_act),
        cmocka_unit_test(test_conv2d_depthwise_lanes),
        cmocka_unit_test(test_conv2d_gemm_fused_act),
        cmocka_unit_test(test_dwconv_kernels_match_scalar),
        cmocka_unit_test(test_cache_reuses_and_bounds),
        /* the tests that start worker threads last */
        cmocka_unit_test(test_pool2d_matches_scalar),
        cmocka_unit_test(test_threads_bit_identical),
        cmocka_unit_test(test_seq_reduce_matches_scalar),
        cmocka_unit_test(test_optimizer_fused_matches_passes),
        cmocka_unit_test(test_conv2d_threads_bit_identical),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
