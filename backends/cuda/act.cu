/* Activations and their backprops (Thinc 8.1's formulas, as backends/cpu/scalar/act.c), softmax,
 * log-softmax and the imported graphs' unary maths. Elementwise: one thread per element; row
 * softmaxes: one thread per row, in the CPU's order (sums in double where the CPU's are). */
#include "common.cuh"
#include "../common/rows.h"

static LC_HD inline float sigmoid_clipped(float x) {
    x = x < -20.0f ? -20.0f : (x > 20.0f ? 20.0f : x);
    return 1.0f / (1.0f + expf(-x));
}
/* Thinc's erf (Abramowitz & Stegun 7.1.26), not libm's */
static LC_HD inline float thinc_erf(float x) {
    const float a1 = 0.254829592f, a2 = -0.284496736f, a3 = 1.421413741f, a4 = -1.453152027f, a5 = 1.061405429f,
                p = 0.3275911f;
    float sign = x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : 0.0f);
    float ax = fabsf(x);
    float t = 1.0f / (1.0f + p * ax);
    float y = 1.0f - (((((a5 * t + a4) * t) + a3) * t + a2) * t + a1) * t * expf(-ax * ax);
    return sign * y;
}
static LC_HD inline float gaussian_cdf(float x) { return 0.5f * (1.0f + thinc_erf(x * 0.70710678118654752f)); }
static LC_HD inline float gaussian_pdf(float x) { return 0.3989422804014327f * expf(-0.5f * x * x); }
static LC_HD inline float clipf(float x, float lo, float hi) { return x < lo ? lo : (x > hi ? hi : x); }

static LC_HD inline float act_fwd(const lithe__act &a, float x) {
    switch (a.kind) {
    case LITHE__ACT_RELU: return x <= 0.0f ? 0.0f : x; /* Thinc: NaN stays NaN */
    case LITHE__ACT_SIGMOID: return sigmoid_clipped(x);
    case LITHE__ACT_TANH: return tanhf(x);
    case LITHE__ACT_SWISH: return x * sigmoid_clipped(x);
    case LITHE__ACT_GELU: return x * gaussian_cdf(x);
    case LITHE__ACT_MISH: return x < a.threshold ? (float)((double)x * tanh(log(1.0 + (double)expf(x)))) : x;
    case LITHE__ACT_DISH: return x * (0.5f * (x / sqrtf(x * x + 1.0f) + 1.0f));
    case LITHE__ACT_HARD_SIGMOID: return clipf(x * 0.2f + 0.5f, 0.0f, 1.0f);
    case LITHE__ACT_HARD_TANH: return clipf(x, -1.0f, 1.0f);
    case LITHE__ACT_HARD_SWISH: return x * clipf(x * 0.2f + 0.5f, 0.0f, 1.0f);
    case LITHE__ACT_HARD_SWISH_MOBILENET: return x * (clipf(x + 3.0f, 0.0f, 6.0f) / 6.0f);
    case LITHE__ACT_CLIPPED_LINEAR: return clipf(x * a.slope + a.offset, a.min_val, a.max_val);
    default: return NAN;
    }
}

static LC_HD inline float act_bwd(const lithe__act &a, float dy, const float *X, const float *Y, int64_t i) {
    switch (a.kind) {
    case LITHE__ACT_RELU: return Y[i] <= 0.0f ? 0.0f : dy;
    case LITHE__ACT_SIGMOID: return dy * (Y[i] * (1.0f - Y[i]));
    case LITHE__ACT_TANH: return dy * (1.0f - Y[i] * Y[i]);
    case LITHE__ACT_SWISH: return dy * (Y[i] + sigmoid_clipped(X[i]) * (1.0f - Y[i]));
    case LITHE__ACT_GELU: return dy * (gaussian_cdf(X[i]) + X[i] * gaussian_pdf(X[i]));
    case LITHE__ACT_MISH: {
        float x = X[i];
        if (!(x < a.threshold)) return dy;
        float e1 = expf(x), e2 = expf(2.0f * x), e3 = expf(3.0f * x);
        float omega = (float)(4.0 * (double)(x + 1.0f)) + 4.0f * e2 + e3 + (float)((double)e1 * (4.0 * (double)x + 6.0));
        float delta = (float)(2.0 * (double)e1) + e2 + 2.0f;
        return dy * ((e1 * omega) / (delta * delta));
    }
    case LITHE__ACT_DISH: {
        float x = X[i], sq1 = x * x + 1.0f;
        float d = x / sqrtf(sq1) - (0.5f * x * (x * x)) / powf(sq1, 1.5f) + 0.5f;
        return dy * d;
    }
    case LITHE__ACT_HARD_SIGMOID: return dy * ((X[i] > -2.5f && X[i] < 2.5f) ? 0.2f : 0.0f);
    case LITHE__ACT_HARD_TANH: return dy * ((X[i] > -1.0f && X[i] < 1.0f) ? 1.0f : 0.0f);
    case LITHE__ACT_HARD_SWISH: {
        float x = X[i];
        return dy * (x > 2.5f ? 1.0f : (x < -2.5f ? 0.0f : x * 0.4f + 0.5f));
    }
    case LITHE__ACT_HARD_SWISH_MOBILENET: {
        float x = X[i];
        float d = x > 3.0f ? 1.0f : (x < -3.0f ? 0.0f : (1.0f / 6.0f) * (x * 2.0f + 3.0f));
        return d * dy;
    }
    case LITHE__ACT_CLIPPED_LINEAR: {
        float low = (a.min_val - a.offset) / a.slope, high = (a.max_val - a.offset) / a.slope;
        return dy * ((low < X[i] && X[i] < high) ? a.slope : 0.0f);
    }
    default: return NAN;
    }
}

LC_KERNEL(k_act, (const lc_thread &t, lithe__act a, int64_t n, const float *X, float *Y)) {
    LC_FOR(t, i, n) Y[i] = act_fwd(a, X[i]);
}
LC_KERNEL(k_act_backward,
          (const lc_thread &t, lithe__act a, int64_t n, const float *dY, const float *X, const float *Y, float *dX)) {
    LC_FOR(t, i, n) dX[i] = act_bwd(a, dY[i], X, Y, i);
}

lithe_status cu_act(lithe_backend *be, const lithe__act *a, const lithe_tensor *X, lithe_tensor *Y) {
    return lc_launch<k_act>(lc_of(be), Y->numel, *a, Y->numel, (const float *)lc_f(X), lc_f(Y));
}
lithe_status cu_act_backward(lithe_backend *be, const lithe__act *a, const lithe_tensor *dY,
                                    const lithe_tensor *X, const lithe_tensor *Y, lithe_tensor *dX) {
    return lc_launch<k_act_backward>(lc_of(be), dX->numel, *a, dX->numel, (const float *)lc_f(dY),
                                     (const float *)lc_f(X), (const float *)lc_f(Y), lc_f(dX));
}

/* ---- softmax rows ---- */

LC_KERNEL(k_softmax, (const lc_thread &t, int64_t M, int64_t N, const float *X, float temperature, float *Y)) {
    LC_FOR(t, i, M) lithe__softmax_row(N, X + i * N, temperature, Y + i * N);
}
LC_KERNEL(k_softmax_backward,
          (const lc_thread &t, int64_t M, int64_t N, const float *Y, const float *dY, float temperature, float *dX)) {
    LC_FOR(t, i, M) lithe__softmax_backward_row(N, Y + i * N, dY + i * N, temperature, dX + i * N);
}
LC_KERNEL(k_log_softmax, (const lc_thread &t, int64_t M, int64_t N, const float *X, float *Y)) {
    LC_FOR(t, r, M) lithe__log_softmax_row(N, X + r * N, Y + r * N);
}
LC_KERNEL(k_log_softmax_backward, (const lc_thread &t, int64_t M, int64_t N, const float *Y, const float *dY, float *dX)) {
    LC_FOR(t, r, M) lithe__log_softmax_backward_row(N, Y + r * N, dY + r * N, dX + r * N);
}

lithe_status cu_softmax(lithe_backend *be, const lithe_tensor *X, float temperature, lithe_tensor *Y) {
    return lc_launch<k_softmax>(lc_of(be), X->shape[0], X->shape[0], X->shape[1], (const float *)lc_f(X), temperature,
                                lc_f(Y));
}
lithe_status cu_softmax_backward(lithe_backend *be, const lithe_tensor *Y, const lithe_tensor *dY,
                                        float temperature, lithe_tensor *dX) {
    return lc_launch<k_softmax_backward>(lc_of(be), Y->shape[0], Y->shape[0], Y->shape[1], (const float *)lc_f(Y),
                                         (const float *)lc_f(dY), temperature, lc_f(dX));
}
lithe_status cu_log_softmax(lithe_backend *be, const lithe_tensor *X, lithe_tensor *Y) {
    return lc_launch<k_log_softmax>(lc_of(be), X->shape[0], X->shape[0], X->shape[1], (const float *)lc_f(X), lc_f(Y));
}
lithe_status cu_log_softmax_backward(lithe_backend *be, const lithe_tensor *Y, const lithe_tensor *dY,
                                            lithe_tensor *dX) {
    return lc_launch<k_log_softmax_backward>(lc_of(be), Y->shape[0], Y->shape[0], Y->shape[1], (const float *)lc_f(Y),
                                             (const float *)lc_f(dY), lc_f(dX));
}

/* ---- unary maths of imported graphs ---- */

LC_KERNEL(k_unary, (const lc_thread &t, int op, int64_t n, const float *X, float *Y)) {
    LC_FOR(t, k, n) Y[k] = lithe__unary_fwd(op, X[k]);
}
LC_KERNEL(k_unary_backward,
          (const lc_thread &t, int op, int64_t n, const float *X, const float *Y, const float *dY, float *dX)) {
    LC_FOR(t, k, n) lithe__unary_bwd(op, X[k], Y[k], dY[k], &dX[k]);
}
lithe_status cu_unary(lithe_backend *be, int op, const lithe_tensor *X, lithe_tensor *Y) {
    return lc_launch<k_unary>(lc_of(be), X->numel, op, X->numel, (const float *)lc_f(X), lc_f(Y));
}
lithe_status cu_unary_backward(lithe_backend *be, int op, const lithe_tensor *X, const lithe_tensor *Y,
                                      const lithe_tensor *dY, lithe_tensor *dX) {
    return lc_launch<k_unary_backward>(lc_of(be), X->numel, op, X->numel, (const float *)lc_f(X),
                                       (const float *)lc_f(Y), (const float *)lc_f(dY), lc_f(dX));
}

/* ---- the dense layers' fused forward: cuBLAS into Y (or Z), then bias and activation in one
 * elementwise pass: Z = pre + b (kept when asked), Y = act(pre + b) ---- */

LC_KERNEL(k_bias_act, (const lc_thread &t, int64_t M, int64_t N, const float *pre, int64_t ldp, const float *b,
                       bool has_act, lithe__act a, float *Z, int64_t ldz, float *Y, int64_t ldy)) {
    LC_FOR(t, q, M * N) {
        int64_t i = q / N, j = q % N;
        float v = pre[i * ldp + j];
        if (b) v += b[j];
        if (Z) Z[i * ldz + j] = v;
        Y[i * ldy + j] = has_act ? act_fwd(a, v) : v;
    }
}

lithe_status cu_gemm_bias_act(lithe_backend *be, bool tA, bool tB, const lithe_tensor *A, const lithe_tensor *B,
                                     const lithe_tensor *b, const lithe__act *a, lithe_tensor *Z, lithe_tensor *Y) {
    lc_ctx *c = lc_of(be);
    int64_t M = Y->shape[0], N = Y->shape[1], K = tA ? A->shape[0] : A->shape[1];
    if (M == 0 || N == 0) return LITHE_OK;
    int64_t lda = A->shape[0] > 1 ? A->strides[0] : A->shape[1], ldb = B->shape[0] > 1 ? B->strides[0] : B->shape[1];
    int64_t ldy = M > 1 ? Y->strides[0] : N, ldz = Z ? (M > 1 ? Z->strides[0] : N) : 0;
    lithe_tensor *pre = Z ? Z : Y;
    int64_t ldp = Z ? ldz : ldy;
    LITHE__TRY(lc_gemm_rm(c, tA, tB, M, N, K, 1.0f, lc_f(A), lda > 0 ? lda : 1, 0, lc_f(B), ldb > 0 ? ldb : 1, 0, 0.0f,
                          lc_f(pre), ldp > 0 ? ldp : 1, 0, 1));
    if (!b && !a) return Z ? lc_launch<k_bias_act>(c, M * N, M, N, (const float *)lc_f(Z), ldp, (const float *)NULL,
                                                   false, lithe__act{}, (float *)NULL, (int64_t)0, lc_f(Y), ldy)
                           : LITHE_OK;
    lithe__act none = {};
    return lc_launch<k_bias_act>(c, M * N, M, N, (const float *)lc_f(pre), ldp, (const float *)lc_f(b), a != NULL,
                                 a ? *a : none, Z ? lc_f(Z) : (float *)NULL, ldz, lc_f(Y), ldy);
}

