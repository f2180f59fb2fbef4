/* The CPU backend's elementwise, row-wise and optimizer primitives: the kernel table for this
 * machine (simd/simd.h) and the thread split. Every job is split by output — elements, rows, or
 * columns for the column sums — into contiguous ranges, each output owned by one range and every
 * sum kept in one range in its own order, so results are bit-identical for any thread count. A
 * grain keeps small jobs (batch-1 inference) in the caller. */
#include "simd/simd.h"
#include "threadpool.h"
#include "../common/rows.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* ---- the scalar table: the twins, with range adapters where a table entry takes a stride ---- */

static void scalar_sum_rows(int64_t M, int64_t n, int64_t ld, const float *X, float beta, float *y) {
    for (int64_t j = 0; j < n; j++) y[j] = beta == 0.0f ? 0.0f : beta * y[j];
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < n; j++) y[j] += X[i * ld + j];
}
static void scalar_layernorm_backward_dx(int64_t M, int64_t N, const float *dY, const float *X, const float *G,
                                         const float *mean, const float *inv_std, float *dX) {
    for (int64_t i = 0; i < M; i++) lithe__layernorm_dx_row(N, X + i * N, dY + i * N, G, mean[i], inv_std[i], dX + i * N);
}
static void scalar_layernorm_backward_dgb(int64_t M, int64_t n, int64_t ld, const float *dY, const float *X,
                                          const float *mean, const float *inv_std, float *dG, float *db) {
    for (int64_t i = 0; i < M; i++) {
        double mu = mean[i], is = inv_std[i];
        for (int64_t j = 0; j < n; j++) {
            float dy = dY[i * ld + j];
            double xhat = ((double)X[i * ld + j] - mu) * is;
            dG[j] += (float)((double)dy * xhat);
            db[j] += dy;
        }
    }
}
static void scalar_scatter_add_rows(int64_t B, int64_t n, int64_t ld, float *table, const int32_t *ids32,
                                    const uint64_t *ids64, const float *X) {
    for (int64_t i = 0; i < B; i++) {
        int64_t id = ids32 ? (int64_t)ids32[i] : (int64_t)ids64[i];
        for (int64_t j = 0; j < n; j++) table[id * ld + j] += X[i * ld + j];
    }
}
static void scalar_maxout(int64_t R, int64_t P, const float *X, float *Y, int32_t *which) {
    lithe_f32_maxout__scalar(R, 1, P, X, Y, which);
}

static void scalar_dwconv_taps(int64_t R, int64_t n, int64_t ldx, float *y, int64_t ldy, const float *x,
                               const int64_t *off, const float *w, int64_t T, float bias, const lithe__act *a) {
    for (int64_t r = 0; r < R; r++) {
        for (int64_t q = 0; q < n; q++) {
            float acc = bias;
            for (int64_t t = 0; t < T; t++) acc += x[r * ldx + q + off[t]] * w[t];
            y[r * ldy + q] = acc;
        }
        if (a) lithe_f32_act__scalar(a, n, y + r * ldy, y + r * ldy);
    }
}

static void scalar_copy_rows(int64_t R, int64_t n, float *dst, int64_t ldd, const float *src, int64_t lds, int64_t s) {
    for (int64_t r = 0; r < R; r++)
        for (int64_t i = 0; i < n; i++) dst[r * ldd + i] = src[r * lds + i * s];
}

static void scalar_split_rows(int64_t R, int64_t m, float *e, float *o, int64_t ldd, const float *src, int64_t lds) {
    for (int64_t r = 0; r < R; r++)
        for (int64_t i = 0; i < m; i++) {
            if (i % 2) o[r * ldd + i / 2] = src[r * lds + i];
            else e[r * ldd + i / 2] = src[r * lds + i];
        }
}

static void scalar_maxpool2x2_row(int64_t n, const float *r0, const float *r1, int64_t W, int32_t base, float *y,
                                  int32_t *which) {
    for (int64_t o = 0; o < n; o++) {
        float best = r0[2 * o];
        int32_t arg = base + (int32_t)(2 * o);
        if (r0[2 * o + 1] > best) best = r0[2 * o + 1], arg = base + (int32_t)(2 * o + 1);
        if (r1[2 * o] > best) best = r1[2 * o], arg = base + (int32_t)(W + 2 * o);
        if (r1[2 * o + 1] > best) best = r1[2 * o + 1], arg = base + (int32_t)(W + 2 * o + 1);
        y[o] = best;
        if (which) which[o] = arg;
    }
}

static void scalar_maxpool2x2_rows(int64_t R, int64_t n, const float *x, int64_t W, float *y) {
    for (int64_t r = 0; r < R; r++) scalar_maxpool2x2_row(n, x + 2 * r * W, x + (2 * r + 1) * W, W, 0, y + r * n, NULL);
}

static void scalar_binary(int op, int64_t n, const float *A, bool a1, const float *B, bool b1, float *Y) {
    for (int64_t i = 0; i < n; i++) Y[i] = lithe__bin_fwd(op, A[a1 ? 0 : i], B[b1 ? 0 : i]);
}

const lithe__simd_kernels lithe__simd_scalar = {
    .isa = "scalar",
    .lanes = 1,
    .act = lithe_f32_act__scalar,
    .act_backward = lithe_f32_act_backward__scalar,
    .add_row = lithe_f32_add_row__scalar,
    .sum_rows = scalar_sum_rows,
    .axpby = lithe_f32_axpby__scalar,
    .mul = lithe_f32_mul__scalar,
    .sum_squares = lithe_f32_sum_squares__scalar,
    .adam = lithe_f32_adam__scalar,
    .radam = lithe_f32_radam__scalar,
    .update_averages = lithe_f32_update_averages__scalar,
    .adam_step = lithe_f32_adam_step__scalar,
    .softmax = lithe_f32_softmax__scalar,
    .softmax_backward = lithe_f32_softmax_backward__scalar,
    .log_softmax = lithe_f32_log_softmax__scalar,
    .log_softmax_backward = lithe_f32_log_softmax_backward__scalar,
    .layernorm = lithe_f32_layernorm__scalar,
    .layernorm_backward_dx = scalar_layernorm_backward_dx,
    .layernorm_backward_dgb = scalar_layernorm_backward_dgb,
    .scatter_add_rows = scalar_scatter_add_rows,
    .unary = lithe_f32_unary__scalar,
    .unary_backward = lithe_f32_unary_backward__scalar,
    .maxout = scalar_maxout,
    .dwconv_taps = scalar_dwconv_taps,
    .copy_rows = scalar_copy_rows,
    .split_rows = scalar_split_rows,
    .maxpool2x2_row = scalar_maxpool2x2_row,
    .maxpool2x2_rows = scalar_maxpool2x2_rows,
    .binary = scalar_binary,
};

/* ---- choosing a table ---- */

int lithe__simd_available(const lithe__simd_kernels **out, int max) {
    int n = 0;
#if !(defined(LITHE_SIMD_ONLY) && defined(__wasm_simd128__))
    /* (left out of the npm package's SIMD128 module, LITHE_SIMD_ONLY: it has no environment to
     * name it in, so the table and the twins only it calls would be dead code) */
    if (n < max) out[n++] = &lithe__simd_scalar;
#endif
#if defined(__x86_64__) && !defined(LITHE_NO_SIMD)
    __builtin_cpu_init();
    if (n < max) out[n++] = &lithe__simd_sse2; /* every x86-64 has SSE2 */
    if (n < max && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) out[n++] = &lithe__simd_avx2;
    if (n < max && __builtin_cpu_supports("avx512f")) out[n++] = &lithe__simd_avx512;
#elif defined(__aarch64__) && !defined(LITHE_NO_SIMD)
    if (n < max) out[n++] = &lithe__simd_neon;
#elif defined(__wasm_simd128__) && !defined(LITHE_NO_SIMD)
    if (n < max) out[n++] = &lithe__simd_wasm_simd128;
#endif
    return n;
}

static _Atomic(const lithe__simd_kernels *) chosen, forced;

static const lithe__simd_kernels *pick(void) {
#if defined(LITHE_SIMD_ONLY) && defined(__wasm_simd128__)
    return &lithe__simd_wasm_simd128; /* the one table (LITHE_SIMD_ONLY, above) */
#endif
    const lithe__simd_kernels *all[8];
    int n = lithe__simd_available(all, 8);
    const char *want = lithe__knob(LITHE__KNOB_cpu_isa);
    if (want && *want)
        for (int i = 0; i < n; i++)
            if (!strcmp(all[i]->isa, want)) return all[i];
    return all[n - 1]; /* the widest this CPU runs (an unknown or unsupported LITHE_CPU_ISA too) */
}

const lithe__simd_kernels *lithe__simd(void) {
    const lithe__simd_kernels *k = atomic_load_explicit(&forced, memory_order_acquire);
    if (k) return k;
    k = atomic_load_explicit(&chosen, memory_order_acquire);
    if (!k) {
        k = pick();
        atomic_store_explicit(&chosen, k, memory_order_release);
    }
    return k;
}

void lithe__simd_force(const lithe__simd_kernels *k) { atomic_store(&forced, k); }

/* ---- the thread split ---- */

/* Items per range: cheap elementwise ops, ops that call exp, and row ops (in elements). */
enum { GRAIN_CHEAP = 1 << 14, GRAIN_EXP = 1 << 12, GRAIN_ROWS = 1 << 13 };

typedef enum job_op {
    J_ACT, J_ACT_BWD, J_ADD_ROW, J_SUM_ROWS, J_AXPBY, J_MUL, J_ADAM, J_RADAM, J_AVG, J_ADAM_STEP, J_SOFTMAX, J_SOFTMAX_BWD,
    J_LOGSM, J_LOGSM_BWD, J_LN, J_LN_DX, J_LN_DGB, J_SCATTER, J_GATHER, J_UNARY, J_UNARY_BWD, J_MAXOUT,
    J_DROPOUT, J_BINARY, J_BINARY_ROWS
} job_op;

typedef struct job {
    job_op op;
    const lithe__simd_kernels *k;
    const lithe__act *a;
    int iop;
    int64_t N, P;
    const float *x0, *x1, *x2, *x3, *x4;
    float *y0, *y1, *y2, *y3, *y4;
    float f0, f1, f2, f3, f4, f5, f6;
    bool flag, flag2;
    int64_t lda, ldb;
    const int32_t *i32;
    const uint64_t *u64;
    int32_t *w32;
    uint64_t key, counter;
} job;

#define OFF(p, o) ((p) ? (p) + (o) : NULL)

static void run_range(void *ctx, int64_t b, int64_t e) {
    const job *j = ctx;
    const lithe__simd_kernels *k = j->k;
    int64_t n = e - b, N = j->N, rb = b * N; /* row jobs: b, e are rows */
    switch (j->op) {
    case J_ACT: k->act(j->a, n, j->x0 + b, j->y0 + b); break;
    case J_ACT_BWD: k->act_backward(j->a, n, j->x0 + b, OFF(j->x1, b), OFF(j->x2, b), j->y0 + b); break;
    case J_ADD_ROW: k->add_row(n, N, j->y0 + rb, j->x0); break;
    case J_SUM_ROWS: k->sum_rows(j->P, n, N, j->x0 + b, j->f0, j->y0 + b); break; /* b, e: columns */
    case J_AXPBY: k->axpby(n, j->f0, j->x0 + b, j->f1, j->y0 + b); break;
    case J_MUL: k->mul(n, j->x0 + b, j->x1 + b, j->y0 + b); break;
    case J_ADAM: k->adam(n, j->y0 + b, j->x0 + b, j->y1 + b, j->y2 + b, j->f0, j->f1, j->f2, j->f3); break;
    case J_RADAM:
        k->radam(n, j->y0 + b, j->x0 + b, j->y1 + b, j->y2 + b, j->f0, j->f1, j->f2, j->f3, j->f4, j->f5, j->flag);
        break;
    case J_AVG: k->update_averages(n, j->y0 + b, j->x0 + b, j->f0); break;
    case J_ADAM_STEP:
        k->adam_step(n, j->y0 + b, j->y4 + b, j->y1 + b, j->y2 + b, OFF(j->y3, b), j->f0, j->f1, j->f2, j->f3, j->f4,
                     j->f5, j->f6);
        break;
    case J_SOFTMAX: k->softmax(n, N, j->x0 + rb, j->f0, j->y0 + rb); break;
    case J_SOFTMAX_BWD: k->softmax_backward(n, N, j->x0 + rb, j->x1 + rb, j->f0, j->y0 + rb); break;
    case J_LOGSM: k->log_softmax(n, N, j->x0 + rb, j->y0 + rb); break;
    case J_LOGSM_BWD: k->log_softmax_backward(n, N, j->x0 + rb, j->x1 + rb, j->y0 + rb); break;
    case J_LN: k->layernorm(n, N, j->x0 + rb, j->x1, j->x2, j->f0, j->y0 + rb, j->y1 + b, j->y2 + b); break;
    case J_LN_DX: k->layernorm_backward_dx(n, N, j->x0 + rb, j->x1 + rb, j->x2, j->x3 + b, j->x4 + b, j->y0 + rb); break;
    case J_LN_DGB: /* b, e: columns */
        k->layernorm_backward_dgb(j->P, n, N, j->x0 + b, j->x1 + b, j->x3, j->x4, j->y1 + b, j->y2 + b);
        break;
    case J_SCATTER: k->scatter_add_rows(j->P, n, N, j->y0 + b, j->i32, j->u64, j->x0 + b); break; /* columns */
    case J_GATHER:
        for (int64_t i = b; i < e; i++) {
            int64_t id = j->i32 ? (int64_t)j->i32[i] : (int64_t)j->u64[i];
            memcpy(j->y0 + i * N, j->x0 + id * N, (size_t)N * sizeof(float));
        }
        break;
    case J_UNARY: k->unary(j->iop, n, j->x0 + b, j->y0 + b); break;
    case J_UNARY_BWD: k->unary_backward(j->iop, n, j->x0 + b, j->x1 + b, j->x2 + b, j->y0 + b); break;
    case J_MAXOUT: k->maxout(n, j->P, j->x0 + b * j->P, j->y0 + b, j->w32 + b); break;
    case J_BINARY: k->binary(j->iop, n, j->flag ? j->x0 : j->x0 + b, j->flag, j->flag2 ? j->x1 : j->x1 + b, j->flag2, j->y0 + b); break;
    case J_BINARY_ROWS:
        for (int64_t r = b; r < e; r++)
            k->binary(j->iop, N, j->x0 + r * j->lda, j->flag, j->x1 + r * j->ldb, j->flag2, j->y0 + r * N);
        break;
    case J_DROPOUT: /* ranges start at multiples of 4: the Philox block of element b is b / 4 */
        lithe_f32_dropout_mask__scalar(j->key, j->counter + (uint64_t)b / 4, j->f0, n, j->y0 + b);
        break;
    }
}

static void run(job *j, int64_t n, int64_t grain) {
    j->k = lithe__simd();
    if (grain < 1) grain = 1;
    if (n < 2 * grain) {
        if (n > 0) run_range(j, 0, n);
        return;
    }
    lithe__pool_for(lithe__cpu_pool(), n, grain, run_range, j);
}

static int64_t row_grain(int64_t N) { return N > 0 ? (GRAIN_ROWS + N - 1) / N : 1; }
static int64_t col_grain(int64_t M) {
    int64_t g = M > 0 ? (GRAIN_ROWS + M - 1) / M : GRAIN_ROWS;
    return g < 64 ? 64 : (g + 15) / 16 * 16; /* whole cache lines per range */
}
static bool act_is_cheap(lithe__act_kind k) {
    return k != LITHE__ACT_SIGMOID && k != LITHE__ACT_TANH && k != LITHE__ACT_SWISH && k != LITHE__ACT_GELU &&
           k != LITHE__ACT_MISH;
}

void lithe__cpu_act(const lithe__act *a, int64_t n, const float *X, float *Y) {
    job j = {.op = J_ACT, .a = a, .x0 = X, .y0 = Y};
    run(&j, n, act_is_cheap(a->kind) ? GRAIN_CHEAP : GRAIN_EXP);
}
void lithe__cpu_act_backward(const lithe__act *a, int64_t n, const float *dY, const float *X, const float *Y,
                             float *dX) {
    job j = {.op = J_ACT_BWD, .a = a, .x0 = dY, .x1 = X, .x2 = Y, .y0 = dX};
    run(&j, n, act_is_cheap(a->kind) ? GRAIN_CHEAP : GRAIN_EXP);
}
void lithe__cpu_add_row(int64_t M, int64_t N, float *Y, const float *b) {
    job j = {.op = J_ADD_ROW, .N = N, .x0 = b, .y0 = Y};
    run(&j, M, row_grain(N) * 2);
}
void lithe__cpu_sum_rows(int64_t M, int64_t N, const float *X, float beta, float *y) {
    job j = {.op = J_SUM_ROWS, .N = N, .P = M, .x0 = X, .y0 = y, .f0 = beta};
    run(&j, N, col_grain(M));
}
void lithe__cpu_axpby(int64_t n, float alpha, const float *X, float beta, float *Y) {
    job j = {.op = J_AXPBY, .x0 = X, .y0 = Y, .f0 = alpha, .f1 = beta};
    run(&j, n, GRAIN_CHEAP);
}
void lithe__cpu_mul(int64_t n, const float *A, const float *B, float *Y) {
    job j = {.op = J_MUL, .x0 = A, .x1 = B, .y0 = Y};
    run(&j, n, GRAIN_CHEAP);
}
double lithe__cpu_sum_squares(int64_t n, const float *X) { return lithe__simd()->sum_squares(n, X); }
void lithe__cpu_adam(int64_t n, float *W, const float *G, float *m1, float *m2, float beta1, float beta2, float eps,
                     float lr) {
    job j = {.op = J_ADAM, .x0 = G, .y0 = W, .y1 = m1, .y2 = m2, .f0 = beta1, .f1 = beta2, .f2 = eps, .f3 = lr};
    run(&j, n, GRAIN_CHEAP / 2);
}
void lithe__cpu_radam(int64_t n, float *W, const float *G, float *m1, float *m2, float beta1, float omb1, float beta2,
                      float omb2, float eps, float coef, bool rectified) {
    job j = {.op = J_RADAM, .x0 = G, .y0 = W, .y1 = m1, .y2 = m2, .f0 = beta1, .f1 = omb1, .f2 = beta2,
             .f3 = omb2, .f4 = eps, .f5 = coef, .flag = rectified};
    run(&j, n, GRAIN_CHEAP / 2);
}
void lithe__cpu_update_averages(int64_t n, float *ema, const float *W, float decay) {
    job j = {.op = J_AVG, .x0 = W, .y0 = ema, .f0 = decay};
    run(&j, n, GRAIN_CHEAP);
}
void lithe__cpu_adam_step(int64_t n, float *W, float *G, float *m1, float *m2, float *avg, float gscale, float beta1,
                          float beta2, float eps, float lr, float wscale, float decay) {
    job j = {.op = J_ADAM_STEP, .y0 = W, .y4 = G, .y1 = m1, .y2 = m2, .y3 = avg, .f0 = gscale, .f1 = beta1,
             .f2 = beta2, .f3 = eps, .f4 = lr, .f5 = wscale, .f6 = decay};
    run(&j, n, GRAIN_CHEAP / 2);
}
void lithe__cpu_softmax(int64_t M, int64_t N, const float *X, float temperature, float *Y) {
    job j = {.op = J_SOFTMAX, .N = N, .x0 = X, .y0 = Y, .f0 = temperature};
    run(&j, M, row_grain(N));
}
void lithe__cpu_softmax_backward(int64_t M, int64_t N, const float *Y, const float *dY, float temperature,
                                 float *dX) {
    job j = {.op = J_SOFTMAX_BWD, .N = N, .x0 = Y, .x1 = dY, .y0 = dX, .f0 = temperature};
    run(&j, M, row_grain(N));
}
void lithe__cpu_log_softmax(int64_t M, int64_t N, const float *X, float *Y) {
    job j = {.op = J_LOGSM, .N = N, .x0 = X, .y0 = Y};
    run(&j, M, row_grain(N));
}
void lithe__cpu_log_softmax_backward(int64_t M, int64_t N, const float *Y, const float *dY, float *dX) {
    job j = {.op = J_LOGSM_BWD, .N = N, .x0 = Y, .x1 = dY, .y0 = dX};
    run(&j, M, row_grain(N));
}
void lithe__cpu_layernorm(int64_t M, int64_t N, const float *X, const float *G, const float *b, float eps, float *Y,
                          float *mean, float *inv_std) {
    job j = {.op = J_LN, .N = N, .x0 = X, .x1 = G, .x2 = b, .y0 = Y, .y1 = mean, .y2 = inv_std, .f0 = eps};
    run(&j, M, row_grain(N));
}
void lithe__cpu_layernorm_backward(int64_t M, int64_t N, const float *dY, const float *X, const float *G,
                                   const float *mean, const float *inv_std, float *dX, float *dG, float *db) {
    /* dG / db first: dX may alias dY */
    job j = {.op = J_LN_DGB, .N = N, .P = M, .x0 = dY, .x1 = X, .x2 = G, .x3 = mean, .x4 = inv_std, .y0 = dX,
             .y1 = dG, .y2 = db};
    run(&j, N, col_grain(M));
    j.op = J_LN_DX;
    run(&j, M, row_grain(N));
}
void lithe__cpu_gather_rows(int64_t B, int64_t N, const float *table, const int32_t *ids32, const uint64_t *ids64,
                            float *Y) {
    job j = {.op = J_GATHER, .N = N, .x0 = table, .i32 = ids32, .u64 = ids64, .y0 = Y};
    run(&j, B, row_grain(N) * 2);
}
void lithe__cpu_scatter_add_rows(int64_t B, int64_t N, float *table, const int32_t *ids32, const uint64_t *ids64,
                                 const float *X) {
    job j = {.op = J_SCATTER, .N = N, .P = B, .x0 = X, .i32 = ids32, .u64 = ids64, .y0 = table};
    run(&j, N, col_grain(B));
}
void lithe__cpu_unary(int op, int64_t n, const float *X, float *Y) {
    job j = {.op = J_UNARY, .iop = op, .x0 = X, .y0 = Y};
    run(&j, n, op == LITHE__UN_EXP || op == LITHE__UN_LOG || op == LITHE__UN_ERF ? GRAIN_EXP : GRAIN_CHEAP);
}
void lithe__cpu_unary_backward(int op, int64_t n, const float *X, const float *Y, const float *dY, float *dX) {
    job j = {.op = J_UNARY_BWD, .iop = op, .x0 = X, .x1 = Y, .x2 = dY, .y0 = dX};
    run(&j, n, op == LITHE__UN_ERF ? GRAIN_EXP : GRAIN_CHEAP);
}
void lithe__cpu_binary_rows(int op, int64_t R, int64_t n, const float *A, int64_t lda, bool a1, const float *B,
                            int64_t ldb, bool b1, float *Y) {
    job j = {.op = R == 1 ? J_BINARY : J_BINARY_ROWS, .iop = op, .N = n, .x0 = A, .x1 = B, .y0 = Y, .flag = a1,
             .flag2 = b1, .lda = lda, .ldb = ldb};
    if (R == 1) run(&j, n, op == LITHE__BIN_DIV ? GRAIN_EXP : GRAIN_CHEAP);
    else run(&j, R, (op == LITHE__BIN_DIV ? GRAIN_EXP : GRAIN_CHEAP) / (n > 0 ? n : 1));
}
void lithe__cpu_maxout(int64_t B, int64_t O, int64_t P, const float *X, float *Y, int32_t *which) {
    job j = {.op = J_MAXOUT, .P = P, .x0 = X, .y0 = Y, .w32 = which};
    run(&j, B * O, GRAIN_CHEAP / (P > 0 ? P : 1));
}
void lithe__cpu_dropout_mask(uint64_t key, uint64_t counter, float rate, int64_t n, float *Y) {
    job j = {.op = J_DROPOUT, .key = key, .counter = counter, .f0 = rate, .y0 = Y};
    run(&j, n, GRAIN_EXP); /* a multiple of 4 */
}
