/* The SIMD kernel tables (backends/cpu/simd/simd.h) against the scalar table, entry by entry: the
 * checks tests/test_simd.c (cmocka, native) and tests/test_simd_tables.c (plain C, built natively
 * and by the wasi preset, so the WebAssembly SIMD128 table is checked too) share. Included once by
 * each, which first defines
 *   SIMD_CMP_PRINT(...)  prints a failure's line (printf's arguments);
 *   SIMD_CMP_FAIL()      records a failed check (cmocka: fail(), which ends the test);
 *   SIMD_CMP_PASS()      records a passed one.
 * The oracle is always the scalar twin (backends/cpu/scalar, through lithe__simd_scalar): bit for bit
 * where simd.h says exact, |simd - twin| <= 4e-6 |twin| + atol for the kernels that call exp (and
 * the row sums kept in double); lengths 0, 1, 3, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 257, 1000 at
 * aligned and misaligned addresses. The specials passes put -0, ±inf and NaN among the inputs (in
 * the vector tails too); there a NaN matches any NaN, since IEEE 754 and WebAssembly leave a NaN
 * result's sign and payload open, and everything else still matches bit for bit. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lithe.h"
#include "../backends/cpu/simd/simd.h"

static const int64_t lengths[] = {0, 1, 3, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 257, 1000};
#define NLEN (sizeof lengths / sizeof lengths[0])
#define CAP 4096

static uint64_t rng_state = 12345;
static double urand(void) { return (double)(lithe__splitmix64(&rng_state) >> 11) * 0x1p-53; }
static void fill(float *p, int64_t n, double lo, double hi) {
    for (int64_t i = 0; i < n; i++) p[i] = (float)(lo + (hi - lo) * urand());
}

static void simd_check(bool ok, const char *isa, const char *what, int64_t n) {
    if (ok) {
        SIMD_CMP_PASS();
    } else {
        SIMD_CMP_PRINT("%s %s n=%lld: failed\n", isa, what, (long long)n);
        SIMD_CMP_FAIL();
    }
}

/* Buffers with slack in front, so the kernels also see misaligned pointers. */
static float *alloc_f(void) {
    float *p = malloc(sizeof(float) * (CAP + 64));
    if (!p) abort(); /* a test's own buffer */
    return p;
}

static bool nan_any; /* the specials passes: a NaN matches any NaN */
static bool same_float(float a, float b) { return !memcmp(&a, &b, sizeof a) || (nan_any && isnan(a) && isnan(b)); }
static void same_bits(const char *isa, const char *what, int64_t n, const float *want, const float *got) {
    if (!n || !memcmp(want, got, (size_t)n * sizeof(float))) {
        SIMD_CMP_PASS();
        return;
    }
    bool ok = true;
    for (int64_t i = 0; i < n; i++)
        if (!same_float(want[i], got[i])) {
            ok = false;
            SIMD_CMP_PRINT("%s %s n=%lld: [%lld] got %.9g, want %.9g (bit-identical expected)\n", isa, what,
                           (long long)n, (long long)i, got[i], want[i]);
        }
    if (ok) SIMD_CMP_PASS();
    else SIMD_CMP_FAIL();
}
static double worst_rel; /* reported: the largest relative difference seen in the bounded checks */
static void close_to(const char *isa, const char *what, int64_t n, const float *want, const float *got, double rtol,
                     double atol) {
    bool ok = true;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - want[i]);
        if (got[i] != want[i] && !(d <= rtol * fabs(want[i]) + atol) && !(isnan(want[i]) && isnan(got[i]))) {
            SIMD_CMP_PRINT("%s %s n=%lld: [%lld] got %.9g, want %.9g (rtol %g atol %g)\n", isa, what, (long long)n,
                           (long long)i, got[i], want[i], rtol, atol);
            ok = false;
        }
        if (fabs(want[i]) > 1e-6 && d / fabs(want[i]) > worst_rel) worst_rel = d / fabs(want[i]);
    }
    if (ok) SIMD_CMP_PASS();
    else SIMD_CMP_FAIL();
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
    /* -0 bounds: a clipped element gets the bound's bits, its sign included (the twin returns it) */
    {.kind = LITHE__ACT_CLIPPED_LINEAR, .slope = 1, .offset = 0, .min_val = -0.0f, .max_val = 0.5f},
    {.kind = LITHE__ACT_CLIPPED_LINEAR, .slope = 1, .offset = 0, .min_val = -1.0f, .max_val = -0.0f},
};
static bool act_exact(lithe__act_kind k, bool backward) {
    switch (k) {
    case LITHE__ACT_SIGMOID: case LITHE__ACT_TANH: return backward;
    case LITHE__ACT_SWISH: case LITHE__ACT_GELU: return false;
    default: return true; /* mish and dish's backward are the twins themselves */
    }
}

/* Every kernel of table k against the scalar table on the same inputs; specials: -0, ±inf and NaN
 * among the inputs, in the tails too (same_bits then takes any NaN for a NaN, below). */
static void compare_table(const lithe__simd_kernels *k, bool specials) {
    const lithe__simd_kernels *s = &lithe__simd_scalar;
    float *in[6], *os[10], *ov[10];
    for (int i = 0; i < 6; i++) in[i] = alloc_f();
    for (int i = 0; i < 10; i++) {
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
            if (specials && n > 6) { /* the last elements run through the tail code */
                X[n - 1] = NAN, X[n - 2] = INFINITY, X[n - 3] = -INFINITY, X[n / 2] = -0.0f;
                A[n - 1] = -INFINITY, A[n - 4] = NAN, A[n / 2 + 1] = -0.0f;
                B[n - 2] = INFINITY, B[n / 2] = 0.0f, C[n - 1] = -0.0f, C[n - 3] = NAN;
            }
            nan_any = specials;
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
            for (int op = LITHE__BIN_ADD; op <= LITHE__BIN_DIV; op++) /* a graph's binary ops, each operand a row or one value */
                for (int bc = 0; bc < 3; bc++) {
                    s->binary(op, n, X, bc == 1, B, bc == 2, S0);
                    k->binary(op, n, X, bc == 1, B, bc == 2, V0);
                    same_bits(isa, "binary", n, S0, V0);
                }
            double ss = s->sum_squares(n, X), sv = k->sum_squares(n, X);
            simd_check(ss == sv || fabs(ss - sv) <= 1e-12 * ss + 1e-300 || (isnan(ss) && isnan(sv)), isa,
                       "sum_squares", n);
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
            /* the fused Adam step against the scalar passes lithe_optimizer_step ran before it
             * (clip scale, adam, zeroing G, weight decay, averages), and the ISA's against both, in
             * every combination; v = 4 is torch.optim.Adam's work (lithe bench --adam torch: no clip
             * scale, no weight decay, no averages) */
            for (int v = 0; v < 8; v++) {
                float gscale = v & 1 ? 0.37f : 1.0f, wscale = v & 2 ? 0.9995f : 1.0f, decay = 0.75f;
                bool avg = !(v & 4);
                float *SG = os[3] + mis, *VG = ov[3] + mis, *SA = os[4] + mis, *VA = ov[4] + mis;
                float *RW = os[5] + mis, *RG = os[6] + mis, *R1 = os[7] + mis, *R2 = os[8] + mis, *RA = os[9] + mis;
                memcpy(RW, C, sizeof(float) * (size_t)n), memcpy(R1, A, sizeof(float) * (size_t)n);
                memcpy(R2, B, sizeof(float) * (size_t)n), memcpy(RG, X, sizeof(float) * (size_t)n);
                for (int64_t i = 0; i < n; i++) RA[i] = C[i] * 0.5f;
                memcpy(S0, RW, sizeof(float) * (size_t)n), memcpy(V0, RW, sizeof(float) * (size_t)n);
                memcpy(S1, R1, sizeof(float) * (size_t)n), memcpy(V1, R1, sizeof(float) * (size_t)n);
                memcpy(S2, R2, sizeof(float) * (size_t)n), memcpy(V2, R2, sizeof(float) * (size_t)n);
                memcpy(SG, RG, sizeof(float) * (size_t)n), memcpy(VG, RG, sizeof(float) * (size_t)n);
                memcpy(SA, RA, sizeof(float) * (size_t)n), memcpy(VA, RA, sizeof(float) * (size_t)n);
                if (gscale != 1.0f) lithe_f32_axpby__scalar(n, 0.0f, RG, gscale, RG);
                lithe_f32_adam__scalar(n, RW, RG, R1, R2, 0.9f, 0.999f, 1e-8f, 1e-3f);
                for (int64_t i = 0; i < n; i++) RG[i] = 0.0f;
                if (wscale != 1.0f) lithe_f32_axpby__scalar(n, 0.0f, RW, wscale, RW);
                if (avg) lithe_f32_update_averages__scalar(n, RA, RW, decay);
                s->adam_step(n, S0, SG, S1, S2, avg ? SA : NULL, gscale, 0.9f, 0.999f, 1e-8f, 1e-3f, wscale, decay);
                k->adam_step(n, V0, VG, V1, V2, avg ? VA : NULL, gscale, 0.9f, 0.999f, 1e-8f, 1e-3f, wscale, decay);
                if (!specials) { /* (the passes' clip scale, axpby with alpha 0, turns an inf into a NaN) */
                    same_bits(isa, "adam_step W (scalar vs passes)", n, RW, S0);
                    same_bits(isa, "adam_step m1 (scalar vs passes)", n, R1, S1);
                    same_bits(isa, "adam_step m2 (scalar vs passes)", n, R2, S2);
                    same_bits(isa, "adam_step G (scalar vs passes)", n, RG, SG);
                    same_bits(isa, "adam_step avg (scalar vs passes)", n, RA, SA);
                }
                same_bits(isa, "adam_step W", n, S0, V0);
                same_bits(isa, "adam_step m1", n, S1, V1);
                same_bits(isa, "adam_step m2", n, S2, V2);
                same_bits(isa, "adam_step G", n, SG, VG);
                same_bits(isa, "adam_step avg", n, SA, VA);
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
                simd_check(!R || !memcmp(ws, wv, sizeof(int32_t) * (size_t)R), isa, "maxout which", R);
            }
            /* row-wise: rows of n columns (M rows as fits) */
            int64_t N = n ? n : 1, M = n ? (CAP - 64) / N : 0;
            if (M > 5) M = 5;
            fill(in[4], M * N, -4, 4);
            fill(in[5], M * N, -1, 1);
            if (specials && M >= 4) { /* a masked (-inf) entry, a +inf row (all NaN), a NaN, a -0 */
                in[4][N - 1] = -INFINITY, in[4][N + N / 2] = INFINITY, in[4][3 * N - 1] = NAN;
                in[4][3 * N] = -0.0f, in[5][2 * N - 1] = NAN, in[5][3 * N + N / 2] = INFINITY;
            }
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
    nan_any = false;
    for (int i = 0; i < 6; i++) free(in[i]);
    for (int i = 0; i < 10; i++) free(os[i]), free(ov[i]);
}

/* The depthwise kernels themselves against the scalar table: dwconv_taps on runs of every length
 * around the vector widths, as one run and as rows (3x3 and a 2x2; no act, clip, relu),
 * copy_rows at strides 1, 2, 3, and split_rows on odd and even widths. */
static void compare_dwconv(const lithe__simd_kernels *k, bool specials) {
    enum { PQ = 21, ROWS = 8 };
    float x[PQ * (ROWS + 3)], w[9], ys[PQ * ROWS], yv[PQ * ROWS];
    fill(x, PQ * (ROWS + 3), -2, 2), fill(w, 9, -1, 1);
    if (specials) x[5] = NAN, x[PQ + 3] = INFINITY, x[2 * PQ + 7] = -INFINITY, x[3 * PQ + 1] = -0.0f, x[60] = -0.0f;
    nan_any = specials;
    int64_t off9[9], off4[4] = {0, 1, PQ, PQ + 1};
    for (int t = 0; t < 9; t++) off9[t] = t / 3 * PQ + t % 3;
    const lithe__act clip = {.kind = LITHE__ACT_CLIPPED_LINEAR, .slope = 1, .offset = 0, .min_val = 0, .max_val = 1},
                     relu = {.kind = LITHE__ACT_RELU};
    for (int64_t n = 1; n <= PQ * ROWS; n++)
        for (int v = 0; v < 6; v++) { /* no act, clip, relu; 3x3 and 2x2 taps */
            const lithe__act *a = v % 3 == 1 ? &clip : v % 3 == 2 ? &relu : NULL;
            const int64_t *off = v >= 3 ? off4 : off9;
            int64_t T = v >= 3 ? 4 : 9;
            memset(ys, 0x7f, sizeof ys), memset(yv, 0x7f, sizeof yv);
            lithe__simd_scalar.dwconv_taps(1, n, 0, ys, 0, x, off, w, T, 0.5f, a);
            k->dwconv_taps(1, n, 0, yv, 0, x, off, w, T, 0.5f, a);
            same_bits(k->isa, "dwconv_taps", PQ * ROWS, ys, yv); /* nothing past n written */
            if (n > PQ - 2) continue;
            /* rows: n of each PQ-wide row into rows n + 1 apart (the gap never written) */
            memset(ys, 0x7f, sizeof ys), memset(yv, 0x7f, sizeof yv);
            lithe__simd_scalar.dwconv_taps(ROWS, n, PQ, ys, n + 1, x, off, w, T, -0.5f, a);
            k->dwconv_taps(ROWS, n, PQ, yv, n + 1, x, off, w, T, -0.5f, a);
            same_bits(k->isa, "dwconv_taps rows", PQ * ROWS, ys, yv);
        }
    float dst_s[64 * 3], dst_v[64 * 3];
    for (int64_t s = 1; s <= 3; s++)
        for (int64_t n = 0; n <= 40; n++) {
            memset(dst_s, 0, sizeof dst_s), memset(dst_v, 0, sizeof dst_v);
            int64_t lds = (n - 1) * s + 1 > 0 ? (n - 1) * s + 1 : 1; /* rows packed: no slack to read */
            if (3 * lds > PQ * (ROWS + 3)) continue;
            lithe__simd_scalar.copy_rows(3, n, dst_s, 64, x, lds, s);
            k->copy_rows(3, n, dst_v, 64, x, lds, s);
            same_bits(k->isa, "copy_rows", 64 * 3, dst_s, dst_v);
        }
    /* split_rows: rows of m packed back to back (nothing past them to read), even and odd halves
     * into rows 40 apart, the untouched floats compared too */
    for (int64_t m = 0; m <= 70; m++) {
        if (3 * m > PQ * (ROWS + 3)) break;
        float sp_s[240] = {0}, sp_v[240] = {0}; /* e rows at 0, 40, 80; o rows at 120, 160, 200 */
        lithe__simd_scalar.split_rows(3, m, sp_s, sp_s + 120, 40, x, m);
        k->split_rows(3, m, sp_v, sp_v + 120, 40, x, m);
        same_bits(k->isa, "split_rows", 240, sp_s, sp_v);
    }
    nan_any = false;
}

/* 2x2 stride-2 max pooling rows (maxpool2x2_row with and without which, maxpool2x2_rows) on every
 * width from 2 to 41, with ties (the first maximum wins) and, in the specials pass, ±0 pairs, -inf
 * and NaN; the floats past the outputs compared too (nothing written there). */
static void compare_maxpool(const lithe__simd_kernels *k, bool specials) {
    enum { WMAX = 41, RMAX = 4 };
    float x[2 * RMAX * WMAX], ys[RMAX * WMAX], yv[RMAX * WMAX];
    int32_t ws[WMAX], wv[WMAX];
    nan_any = specials;
    for (int64_t W = 2; W <= WMAX; W++) {
        int64_t n = W / 2, nx = 2 * RMAX * W;
        fill(x, nx, -1, 1);
        for (int64_t q = 3; q < nx; q += 11) x[q] = x[q - 1]; /* ties */
        if (specials)
            for (int64_t q = 5; q < nx; q += 7)
                x[q] = q % 4 == 0 ? NAN : q % 4 == 1 ? -INFINITY : q % 4 == 2 ? -0.0f : 0.0f;
        memset(ys, 0x7f, sizeof ys), memset(yv, 0x7f, sizeof yv);
        memset(ws, 0x7f, sizeof ws), memset(wv, 0x7f, sizeof wv);
        lithe__simd_scalar.maxpool2x2_row(n, x, x + W, W, 100, ys, ws);
        k->maxpool2x2_row(n, x, x + W, W, 100, yv, wv);
        same_bits(k->isa, "maxpool2x2_row", RMAX * WMAX, ys, yv);
        simd_check(!memcmp(ws, wv, sizeof ws), k->isa, "maxpool2x2_row which", n);
        memset(yv, 0x7f, sizeof yv);
        k->maxpool2x2_row(n, x, x + W, W, 100, yv, NULL);
        same_bits(k->isa, "maxpool2x2_row without which", RMAX * WMAX, ys, yv);
        memset(ys, 0x7f, sizeof ys), memset(yv, 0x7f, sizeof yv);
        lithe__simd_scalar.maxpool2x2_rows(RMAX, n, x, W, ys);
        k->maxpool2x2_rows(RMAX, n, x, W, yv);
        same_bits(k->isa, "maxpool2x2_rows", RMAX * WMAX, ys, yv);
    }
    nan_any = false;
}

/* The CPU backend's entries (backends/cpu/elem.c: the table's kernels behind the thread split, and
 * gather_rows, layernorm_backward, binary_rows, which are entries only) on one thread, with table k
 * forced against the scalar table forced: the same rules as above, on an odd length and odd rows.
 * Leaves the CPU backend at one thread. */
static void compare_entries(const lithe__simd_kernels *k) {
    enum { EN = 1037, EM = 9, EC = 37, ET = 5 };
    lithe_backend *cpu = NULL;
    if (lithe_backend_get("cpu", &cpu) != LITHE_OK) abort();
    (void)lithe_backend_set_threads(cpu, 1);
    float *X = malloc(sizeof(float) * EN), *A = malloc(sizeof(float) * EN), *B = malloc(sizeof(float) * EN);
    float *o[2][16];
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < 16; i++) o[r][i] = calloc(EN, sizeof(float));
    fill(X, EN, -5, 5), fill(A, EN, -1, 1), fill(B, EN, 0.1, 2);
    X[EN - 1] = -0.0f, X[EN - 2] = 0.0f;
    int32_t ids[EM], wh[2][EM * EC];
    for (int i = 0; i < EM; i++) ids[i] = (i * 3) % ET; /* duplicates accumulate */
    const lithe__act relu = {.kind = LITHE__ACT_RELU}, hsw = {.kind = LITHE__ACT_HARD_SWISH},
                     sig = {.kind = LITHE__ACT_SIGMOID};
    for (int r = 0; r < 2; r++) {
        float **y = o[r];
        lithe__simd_force(r ? k : &lithe__simd_scalar);
        lithe__cpu_act(&relu, EN, X, y[0]);
        lithe__cpu_act(&hsw, EN, X, y[1]);
        lithe__cpu_act(&sig, EN, X, y[2]);
        lithe__cpu_act_backward(&sig, EN, A, X, o[0][2], y[3]); /* the same Y: the scalar one */
        memcpy(y[4], X, sizeof(float) * EN), memcpy(y[5], A, sizeof(float) * EN);
        memcpy(y[6], B, sizeof(float) * EN), memcpy(y[7], A, sizeof(float) * EN);
        lithe__cpu_adam_step(EN, y[4], y[5], y[6], y[7], y[8], 0.5f, 0.9f, 0.999f, 1e-8f, 1e-3f, 0.999f, 0.8f);
        lithe__cpu_axpby(EN, 0.5f, X, 0.25f, y[9]);
        lithe__cpu_mul(EN, X, B, y[10]);
        /* rows (EM, EC) */
        lithe__cpu_binary_rows(LITHE__BIN_DIV, EM, EC, X, EC, false, B, 0, true, y[11]);
        lithe__cpu_softmax(EM, EC, X, 1.0f, y[12]);
        float *mean = y[13], *is = mean + EM, *LY = is + EM, *dX = LY + EM * EC, *dG = dX + EM * EC, *db = dG + EC;
        lithe__cpu_layernorm(EM, EC, X, B, A, 1e-5f, LY, mean, is);
        lithe__cpu_layernorm_backward(EM, EC, A, X, B, mean, is, dX, dG, db);
        float *table = y[14], *sum = table + ET * EC, *mo = sum + EC, *g = mo + EM * EC / 3;
        memcpy(table, A, sizeof(float) * ET * EC);
        lithe__cpu_scatter_add_rows(EM, EC, table, ids, NULL, X);
        lithe__cpu_sum_rows(EM, EC, X, 0.5f, sum);
        lithe__cpu_maxout(EM, EC / 3, 3, X, mo, wh[r]);
        lithe__cpu_gather_rows(EM, EC, table, ids, NULL, g);
        lithe__cpu_add_row(EM, EC, memcpy(y[15], X, sizeof(float) * EM * EC), A);
    }
    lithe__simd_force(NULL);
    const char *isa = k->isa;
    static const char *exact[16] = {"relu", "hard_swish", NULL, "sigmoid backward", "adam_step W", "adam_step G",
                                    "adam_step m1", "adam_step m2", "adam_step avg", "axpby", "mul", "binary_rows",
                                    NULL, NULL, "scatter_add_rows, sum_rows, maxout, gather_rows", "add_row"};
    for (int i = 0; i < 16; i++)
        if (exact[i]) same_bits(isa, exact[i], EN, o[0][i], o[1][i]);
    close_to(isa, "sigmoid", EN, o[0][2], o[1][2], 4e-6, 1e-30);
    close_to(isa, "softmax", EM * EC, o[0][12], o[1][12], 4e-6, 1e-37);
    float *m0 = o[0][13], *m1 = o[1][13];
    close_to(isa, "layernorm mean, inv_std", 2 * EM, m0, m1, 4e-7, 1e-7);
    close_to(isa, "layernorm", EM * EC, m0 + 2 * EM, m1 + 2 * EM, 4e-6, 1e-6);
    close_to(isa, "layernorm_backward dX", EM * EC, m0 + 2 * EM + EM * EC, m1 + 2 * EM + EM * EC, 4e-6, 1e-6);
    /* dG, db: sums over rows in float in row order, but of dY * xhat from each side's own mean and
     * inv_std (within 4e-7 of each other): within the dX tolerance */
    close_to(isa, "layernorm_backward dG, db", 2 * EC, m0 + 2 * EM + 2 * EM * EC, m1 + 2 * EM + 2 * EM * EC, 4e-6, 1e-6);
    simd_check(!memcmp(wh[0], wh[1], sizeof(int32_t) * EM * (EC / 3)), isa, "maxout which", EM * (EC / 3));
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < 16; i++) free(o[r][i]);
    free(X), free(A), free(B);
}
