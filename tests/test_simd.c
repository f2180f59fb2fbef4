/* The CPU backend's vectorised kernels (backends/cpu/simd/) against their scalar twins, on every
 * ISA table this machine runs, and the thread split (backends/cpu/elem.c) for 1, 2 and 3 threads.
 *
 * Oracles, never the code under test:
 *   - the scalar twins (backends/cpu/scalar): bit for bit where simd.h says exact (lengths 0, 1, 3, 15, 16,
 *     17, 31, 32, 33, 63, 64, 65, 100, 257, 1000, at aligned and misaligned addresses);
 *     |simd - twin| <= 4e-6 |twin| + atol for the kernels that call exp;
 *   - exp, tanh and erf in double (libm) for the vector exp and tanh: the ulp bounds simd.h states;
 *   - 1 thread's output for 2 and 3 threads, bit for bit. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lithe.h"
#include "../backends/cpu/simd/simd.h"

#define OK(expr) assert_int_equal((expr), LITHE_OK)

static const int64_t lengths[] = {0, 1, 3, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 257, 1000};
#define NLEN (sizeof lengths / sizeof lengths[0])
#define CAP 4096

static uint64_t rng_state = 12345;
static double urand(void) { return (double)(lithe__splitmix64(&rng_state) >> 11) * 0x1p-53; }
static void fill(float *p, int64_t n, double lo, double hi) {
    for (int64_t i = 0; i < n; i++) p[i] = (float)(lo + (hi - lo) * urand());
}

/* Buffers with one float of slack in front, so the kernels also see misaligned pointers. */
typedef struct bufs {
    float *in[6], *out_s[4], *out_v[4];
} bufs;
static float *alloc_f(void) {
    float *p = malloc(sizeof(float) * (CAP + 64));
    assert_non_null(p);
    return p;
}

static void same_bits(const char *isa, const char *what, int64_t n, const float *want, const float *got) {
    if (n && memcmp(want, got, (size_t)n * sizeof(float)) != 0) {
        for (int64_t i = 0; i < n; i++)
            if (memcmp(&want[i], &got[i], sizeof(float)))
                print_error("%s %s n=%lld: [%lld] got %.9g, want %.9g (bit-identical expected)\n", isa, what,
                            (long long)n, (long long)i, got[i], want[i]);
        fail();
    }
}
static double worst_rel; /* reported: the largest relative difference seen in the bounded checks */
static void close_to(const char *isa, const char *what, int64_t n, const float *want, const float *got, double rtol,
                     double atol) {
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - want[i]);
        if (!(d <= rtol * fabs(want[i]) + atol) && !(isnan(want[i]) && isnan(got[i]))) {
            print_error("%s %s n=%lld: [%lld] got %.9g, want %.9g (rtol %g atol %g)\n", isa, what, (long long)n,
                        (long long)i, got[i], want[i], rtol, atol);
            fail();
        }
        if (fabs(want[i]) > 1e-6 && d / fabs(want[i]) > worst_rel) worst_rel = d / fabs(want[i]);
    }
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

static const lithe__act act_kinds[] = {
    {.kind = LITHE__ACT_RELU},
    {.kind = LITHE__ACT_SIGMOID},
    {.kind = LITHE__ACT_TANH},
    {.kind = LITHE__ACT_SWISH},
    {.kind = LITHE__ACT_GELU},
    {.kind = LITHE__ACT_MISH, .threshold = 20.0f},
    {.kind = LITHE__ACT_DISH},
    {.kind = LITHE__ACT_HARD_SIGMOID},
    {.kind = LITHE__ACT_HARD_TANH},
    {.kind = LITHE__ACT_HARD_SWISH},
    {.kind = LITHE__ACT_HARD_SWISH_MOBILENET},
    {.kind = LITHE__ACT_CLIPPED_LINEAR, .slope = 1.5f, .offset = 0.25f, .min_val = -0.5f, .max_val = 2.0f},
};
static bool act_exact(lithe__act_kind k, bool backward) {
    switch (k) {
    case LITHE__ACT_SIGMOID: case LITHE__ACT_TANH: return backward;
    case LITHE__ACT_SWISH: case LITHE__ACT_GELU: return false;
    default: return true; /* mish and dish's backward are the twins themselves */
    }
}

/* Every kernel of table k against the scalar table on the same inputs. */
static void compare_table(const lithe__simd_kernels *k) {
    const lithe__simd_kernels *s = &lithe__simd_scalar;
    float *in[6], *os[4], *ov[4];
    for (int i = 0; i < 6; i++) in[i] = alloc_f();
    for (int i = 0; i < 4; i++) {
        os[i] = alloc_f();
        ov[i] = alloc_f();
    }
    const char *isa = k->isa;
    for (int mis = 0; mis < 2; mis++)
        for (size_t li = 0; li < NLEN; li++) {
            int64_t n = lengths[li];
            float *X = in[0] + mis, *A = in[1] + mis, *B = in[2] + mis, *C = in[3] + mis;
            float *S0 = os[0] + mis, *S1 = os[1] + mis, *S2 = os[2] + mis, *V0 = ov[0] + mis, *V1 = ov[1] + mis,
                  *V2 = ov[2] + mis;
            fill(X, n, -6, 6);
            fill(A, n, -2, 2);
            fill(B, n, 0.1, 3);
            fill(C, n, -1, 1);
            if (n > 4) {
                X[0] = 0.0f, X[1] = -0.0f, X[2] = 2.5f, X[3] = -3.0f; /* kinks and thresholds */
            }
            /* activations and backprops */
            for (size_t ai = 0; ai < sizeof act_kinds / sizeof act_kinds[0]; ai++) {
                const lithe__act *a = &act_kinds[ai];
                s->act(a, n, X, S0);
                k->act(a, n, X, V0);
                if (act_exact(a->kind, false)) same_bits(isa, "act", n, S0, V0);
                else close_to(isa, "act", n, S0, V0, 4e-6, a->kind == LITHE__ACT_GELU ? 5e-7 : 1e-30);
                s->act_backward(a, n, A, X, S0, S1);
                k->act_backward(a, n, A, X, S0, V1);
                if (act_exact(a->kind, true)) same_bits(isa, "act_backward", n, S1, V1);
                else close_to(isa, "act_backward", n, S1, V1, 4e-6, 2e-6);
            }
            /* elementwise */
            float betas[3] = {1.0f, 0.0f, 0.7f};
            for (int bi = 0; bi < 3; bi++) {
                memcpy(S0, C, sizeof(float) * (size_t)n);
                memcpy(V0, C, sizeof(float) * (size_t)n);
                s->axpby(n, 0.3f, X, betas[bi], S0);
                k->axpby(n, 0.3f, X, betas[bi], V0);
                same_bits(isa, "axpby", n, S0, V0);
            }
            s->mul(n, X, A, S0);
            k->mul(n, X, A, V0);
            same_bits(isa, "mul", n, S0, V0);
            double ss = s->sum_squares(n, X), sv = k->sum_squares(n, X);
            assert_true(fabs(ss - sv) <= 1e-12 * ss + 1e-300);
            /* optimizers */
            for (int v = 0; v < 4; v++) {
                memcpy(S0, C, sizeof(float) * (size_t)n), memcpy(V0, C, sizeof(float) * (size_t)n);
                memcpy(S1, A, sizeof(float) * (size_t)n), memcpy(V1, A, sizeof(float) * (size_t)n);
                memcpy(S2, B, sizeof(float) * (size_t)n), memcpy(V2, B, sizeof(float) * (size_t)n);
                if (v == 0) {
                    s->adam(n, S0, X, S1, S2, 0.9f, 0.999f, 1e-8f, 1e-3f);
                    k->adam(n, V0, X, V1, V2, 0.9f, 0.999f, 1e-8f, 1e-3f);
                } else if (v == 3) {
                    s->update_averages(n, S0, X, 0.999f);
                    k->update_averages(n, V0, X, 0.999f);
                } else {
                    float coef = v == 1 ? -1e-3f : 0.0f;
                    s->radam(n, S0, X, S1, S2, 0.9f, 0.1f, 0.999f, 0.001f, 1e-8f, coef, v == 1);
                    k->radam(n, V0, X, V1, V2, 0.9f, 0.1f, 0.999f, 0.001f, 1e-8f, coef, v == 1);
                }
                same_bits(isa, "optimizer W", n, S0, V0);
                same_bits(isa, "optimizer m1", n, S1, V1);
                same_bits(isa, "optimizer m2", n, S2, V2);
            }
            /* unary ops (imported graphs) and their backwards */
            for (int op = 0; op < LITHE__UN_COUNT; op++) {
                const float *in_x = op == LITHE__UN_LOG || op == LITHE__UN_SQRT || op == LITHE__UN_RECIPROCAL ? B : X;
                s->unary(op, n, in_x, S0);
                k->unary(op, n, in_x, V0);
                if (op == LITHE__UN_EXP) close_to(isa, "unary exp", n, S0, V0, 4e-6, 1e-37);
                else same_bits(isa, "unary", n, S0, V0);
                memcpy(S1, C, sizeof(float) * (size_t)n), memcpy(V1, C, sizeof(float) * (size_t)n);
                s->unary_backward(op, n, in_x, S0, A, S1);
                k->unary_backward(op, n, in_x, S0, A, V1);
                if (op == LITHE__UN_ERF) close_to(isa, "unary_backward erf", n, S1, V1, 4e-6, 2e-6);
                else same_bits(isa, "unary_backward", n, S1, V1);
            }
            /* maxout, P pieces of rows */
            for (int64_t P = 1; P <= 5; P++) {
                int64_t R = n / P;
                int32_t ws[CAP], wv[CAP];
                s->maxout(R, P, X, S0, ws);
                k->maxout(R, P, X, V0, wv);
                same_bits(isa, "maxout", R, S0, V0);
                assert_memory_equal(ws, wv, sizeof(int32_t) * (size_t)R);
            }
            /* row-wise: rows of n columns (M rows as fits) */
            int64_t N = n ? n : 1, M = n ? (CAP - 64) / N : 0;
            if (M > 5) M = 5;
            fill(in[4], M * N, -4, 4);
            fill(in[5], M * N, -1, 1);
            const float *RX = in[4], *RG = in[5];
            s->add_row(M, n, memcpy(S0, RX, sizeof(float) * (size_t)(M * n)), A);
            k->add_row(M, n, memcpy(V0, RX, sizeof(float) * (size_t)(M * n)), A);
            same_bits(isa, "add_row", M * n, S0, V0);
            for (int bi = 0; bi < 3; bi++) {
                memcpy(S1, C, sizeof(float) * (size_t)n), memcpy(V1, C, sizeof(float) * (size_t)n);
                s->sum_rows(M, n, n, RX, betas[bi], S1);
                k->sum_rows(M, n, n, RX, betas[bi], V1);
                same_bits(isa, "sum_rows", n, S1, V1);
            }
            float temps[2] = {1.0f, 0.7f};
            for (int ti = 0; ti < 2; ti++) {
                s->softmax(M, n, RX, temps[ti], S0);
                k->softmax(M, n, RX, temps[ti], V0);
                close_to(isa, "softmax", M * n, S0, V0, 4e-6, 1e-37);
                s->softmax_backward(M, n, S0, RG, temps[ti], S1);
                k->softmax_backward(M, n, S0, RG, temps[ti], V1);
                close_to(isa, "softmax_backward", M * n, S1, V1, 4e-6, 1e-7);
            }
            s->log_softmax(M, n, RX, S0);
            k->log_softmax(M, n, RX, V0);
            close_to(isa, "log_softmax", M * n, S0, V0, 4e-6, 4e-6);
            memcpy(S1, RX, sizeof(float) * (size_t)(M * n)), memcpy(V1, RX, sizeof(float) * (size_t)(M * n));
            s->log_softmax_backward(M, n, S0, RG, S1);
            k->log_softmax_backward(M, n, S0, RG, V1);
            close_to(isa, "log_softmax_backward", M * n, S1, V1, 4e-6, 4e-6);
            float ms[8], is[8], mv[8], iv[8];
            s->layernorm(M, n, RX, A, B, 1e-5f, S0, ms, is);
            k->layernorm(M, n, RX, A, B, 1e-5f, V0, mv, iv);
            close_to(isa, "layernorm", M * n, S0, V0, 4e-6, 1e-6);
            close_to(isa, "layernorm mean", M, ms, mv, 4e-7, 1e-7);
            close_to(isa, "layernorm inv_std", M, is, iv, 4e-7, 0);
            s->layernorm_backward_dx(M, n, RG, RX, A, ms, is, S1);
            k->layernorm_backward_dx(M, n, RG, RX, A, ms, is, V1);
            close_to(isa, "layernorm_backward dX", M * n, S1, V1, 4e-6, 1e-6);
            memcpy(S1, C, sizeof(float) * (size_t)n), memcpy(V1, C, sizeof(float) * (size_t)n);
            memcpy(S2, A, sizeof(float) * (size_t)n), memcpy(V2, A, sizeof(float) * (size_t)n);
            s->layernorm_backward_dgb(M, n, n, RG, RX, ms, is, S1, S2);
            k->layernorm_backward_dgb(M, n, n, RG, RX, ms, is, V1, V2);
            same_bits(isa, "layernorm_backward dG", n, S1, V1);
            same_bits(isa, "layernorm_backward db", n, S2, V2);
            /* scatter-add with duplicate ids into a table of 3 rows */
            int32_t ids[5] = {2, 0, 2, 1, 2};
            memcpy(S0, RX, sizeof(float) * (size_t)(3 * n)), memcpy(V0, RX, sizeof(float) * (size_t)(3 * n));
            if (M >= 5) {
                s->scatter_add_rows(5, n, n, S0, ids, NULL, RG);
                k->scatter_add_rows(5, n, n, V0, ids, NULL, RG);
                same_bits(isa, "scatter_add_rows", 3 * n, S0, V0);
            }
        }
    for (int i = 0; i < 6; i++) free(in[i]);
    for (int i = 0; i < 4; i++) free(os[i]), free(ov[i]);
}

static void test_every_table_matches_scalar(void **state) {
    (void)state;
    for (int t = 1; t < ntables; t++) compare_table(tables[t]);
    fprintf(stderr, "test_simd: largest relative difference in the bounded kernels: %.3g\n", worst_rel);
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
}

static void test_threads_bit_identical(void **state) {
    (void)state;
    lithe_backend *cpu;
    OK(lithe_backend_get("cpu", &cpu));
    size_t cap = (size_t)TN * 2 + (size_t)TM * TC * 12;
    float *X = malloc(sizeof(float) * TN), *A = malloc(sizeof(float) * TN), *B = malloc(sizeof(float) * TN),
          *RX = malloc(sizeof(float) * TM * TC);
    outs r[3];
    for (int t = 0; t < 3; t++)
        for (int i = 0; i < 4; i++) {
            r[t].o[i] = calloc(cap, sizeof(float));
            assert_non_null(r[t].o[i]);
        }
    fill(X, TN, -5, 5), fill(A, TN, -1, 1), fill(B, TN, 0.1, 2), fill(RX, TM * TC, -4, 4);
    for (int t = 0; t < 3; t++) {
        lithe_status st = lithe_backend_set_threads(cpu, t + 1);
        if (st == LITHE_ERR_UNSUPPORTED) skip(); /* a build without threads */
        OK(st);
        run_entries(X, A, B, RX, &r[t]);
    }
    OK(lithe_backend_set_threads(cpu, 0));
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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vector_exp_tanh_accuracy),
        cmocka_unit_test(test_every_table_matches_scalar),
        cmocka_unit_test(test_scalar_adapters),
        cmocka_unit_test(test_threads_bit_identical),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
