/* Scalar activation kernels and their backprops, with Thinc 8.1's formulas
 * (thinc/backends/ops.py and, for Mish, cpu_kernels.hh of NumpyOps). Where Thinc computes in
 * the array's float32, so do these; where its C++ kernel widens to double (Mish), so do these. */
#include "../kernels.h"

#include <math.h>

/* Thinc's sigmoid clips its input to [-20, 20] first. */
static inline float sigmoid_clipped(float x) {
    x = x < -20.0f ? -20.0f : (x > 20.0f ? 20.0f : x);
    return 1.0f / (1.0f + expf(-x));
}

/* Thinc's erf (Abramowitz & Stegun 7.1.26, as ops.erf writes it), so Gelu gives Thinc's numbers
 * rather than libm's. */
static inline float thinc_erf(float x) {
    const float a1 = 0.254829592f, a2 = -0.284496736f, a3 = 1.421413741f, a4 = -1.453152027f,
                a5 = 1.061405429f, p = 0.3275911f;
    float sign = x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : 0.0f);
    float ax = fabsf(x);
    float t = 1.0f / (1.0f + p * ax);
    float y = 1.0f - (((((a5 * t + a4) * t) + a3) * t + a2) * t + a1) * t * expf(-ax * ax);
    return sign * y;
}

static inline float gaussian_cdf(float x) {
    return 0.5f * (1.0f + thinc_erf(x * 0.70710678118654752f));
}

static inline float gaussian_pdf(float x) {
    return 0.3989422804014327f * expf(-0.5f * x * x);
}

static inline float clip(float x, float lo, float hi) {
    return x < lo ? lo : (x > hi ? hi : x);
}

void lithe_f32_act__scalar(const lithe__act *a, int64_t n, const float *X, float *Y) {
    switch (a->kind) {
    case LITHE__ACT_RELU:
        /* Thinc's cpu_relu zeroes X <= 0 only: NaN stays NaN, -0 becomes +0 */
        for (int64_t i = 0; i < n; i++) Y[i] = X[i] <= 0.0f ? 0.0f : X[i];
        return;
    case LITHE__ACT_SIGMOID:
        for (int64_t i = 0; i < n; i++) Y[i] = sigmoid_clipped(X[i]);
        return;
    case LITHE__ACT_TANH:
        for (int64_t i = 0; i < n; i++) Y[i] = tanhf(X[i]);
        return;
    case LITHE__ACT_SWISH:
        for (int64_t i = 0; i < n; i++) Y[i] = X[i] * sigmoid_clipped(X[i]);
        return;
    case LITHE__ACT_GELU:
        for (int64_t i = 0; i < n; i++) Y[i] = X[i] * gaussian_cdf(X[i]);
        return;
    case LITHE__ACT_MISH:
        /* NumpyOps' cpu_mish: exp in float, log and tanh in double */
        for (int64_t i = 0; i < n; i++) {
            float x = X[i];
            Y[i] = x < a->threshold ? (float)((double)x * tanh(log(1.0 + (double)expf(x)))) : x;
        }
        return;
    case LITHE__ACT_DISH:
        for (int64_t i = 0; i < n; i++) {
            float x = X[i];
            Y[i] = x * (0.5f * (x / sqrtf(x * x + 1.0f) + 1.0f));
        }
        return;
    case LITHE__ACT_HARD_SIGMOID:
        for (int64_t i = 0; i < n; i++) Y[i] = clip(X[i] * 0.2f + 0.5f, 0.0f, 1.0f);
        return;
    case LITHE__ACT_HARD_TANH:
        for (int64_t i = 0; i < n; i++) Y[i] = clip(X[i], -1.0f, 1.0f);
        return;
    case LITHE__ACT_HARD_SWISH:
        for (int64_t i = 0; i < n; i++) Y[i] = X[i] * clip(X[i] * 0.2f + 0.5f, 0.0f, 1.0f);
        return;
    case LITHE__ACT_HARD_SWISH_MOBILENET:
        for (int64_t i = 0; i < n; i++) Y[i] = X[i] * (clip(X[i] + 3.0f, 0.0f, 6.0f) / 6.0f);
        return;
    case LITHE__ACT_CLIPPED_LINEAR:
        for (int64_t i = 0; i < n; i++)
            Y[i] = clip(X[i] * a->slope + a->offset, a->min_val, a->max_val);
        return;
    case LITHE__ACT_COUNT:
        break;
    }
    for (int64_t i = 0; i < n; i++) Y[i] = NAN; /* unreachable: kinds are checked by layers */
}

void lithe_f32_act_backward__scalar(const lithe__act *a, int64_t n, const float *dY, const float *X,
                                    const float *Y, float *dX) {
    switch (a->kind) {
    case LITHE__ACT_RELU:
        /* Thinc: dX = dY where Y > 0; Y <= 0 gives 0 */
        for (int64_t i = 0; i < n; i++) dX[i] = Y[i] <= 0.0f ? 0.0f : dY[i];
        return;
    case LITHE__ACT_SIGMOID:
        for (int64_t i = 0; i < n; i++) dX[i] = dY[i] * (Y[i] * (1.0f - Y[i]));
        return;
    case LITHE__ACT_TANH:
        for (int64_t i = 0; i < n; i++) dX[i] = dY[i] * (1.0f - Y[i] * Y[i]);
        return;
    case LITHE__ACT_SWISH:
        /* Thinc: dY * (Y + sigmoid(X) * (1 - Y)) */
        for (int64_t i = 0; i < n; i++)
            dX[i] = dY[i] * (Y[i] + sigmoid_clipped(X[i]) * (1.0f - Y[i]));
        return;
    case LITHE__ACT_GELU:
        for (int64_t i = 0; i < n; i++)
            dX[i] = dY[i] * (gaussian_cdf(X[i]) + X[i] * gaussian_pdf(X[i]));
        return;
    case LITHE__ACT_MISH:
        /* NumpyOps' cpu_backprop_mish, in float as its float32 instantiation does; above the
         * threshold the gradient passes through unchanged. */
        for (int64_t i = 0; i < n; i++) {
            float x = X[i];
            if (x < a->threshold) {
                float e1 = expf(x), e2 = expf(2.0f * x), e3 = expf(3.0f * x);
                float omega = (float)(4.0 * (double)(x + 1.0f)) + 4.0f * e2 + e3 +
                              (float)((double)e1 * (4.0 * (double)x + 6.0));
                float delta = (float)(2.0 * (double)e1) + e2 + 2.0f;
                dX[i] = dY[i] * ((e1 * omega) / (delta * delta));
            } else {
                dX[i] = dY[i];
            }
        }
        return;
    case LITHE__ACT_DISH:
        for (int64_t i = 0; i < n; i++) {
            float x = X[i], sq1 = x * x + 1.0f;
            float d = x / sqrtf(sq1) - (0.5f * x * (x * x)) / powf(sq1, 1.5f) + 0.5f;
            dX[i] = dY[i] * d;
        }
        return;
    case LITHE__ACT_HARD_SIGMOID:
        /* Thinc's backprop_clipped_linear: slope where low < X < high, else 0 */
        for (int64_t i = 0; i < n; i++)
            dX[i] = dY[i] * ((X[i] > -2.5f && X[i] < 2.5f) ? 0.2f : 0.0f);
        return;
    case LITHE__ACT_HARD_TANH:
        for (int64_t i = 0; i < n; i++)
            dX[i] = dY[i] * ((X[i] > -1.0f && X[i] < 1.0f) ? 1.0f : 0.0f);
        return;
    case LITHE__ACT_HARD_SWISH:
        for (int64_t i = 0; i < n; i++) {
            float x = X[i];
            float d = x > 2.5f ? 1.0f : (x < -2.5f ? 0.0f : x * 0.4f + 0.5f);
            dX[i] = dY[i] * d;
        }
        return;
    case LITHE__ACT_HARD_SWISH_MOBILENET:
        for (int64_t i = 0; i < n; i++) {
            float x = X[i];
            float d = x > 3.0f ? 1.0f : (x < -3.0f ? 0.0f : (1.0f / 6.0f) * (x * 2.0f + 3.0f));
            dX[i] = d * dY[i];
        }
        return;
    case LITHE__ACT_CLIPPED_LINEAR: {
        float low = (a->min_val - a->offset) / a->slope;
        float high = (a->max_val - a->offset) / a->slope;
        for (int64_t i = 0; i < n; i++)
            dX[i] = dY[i] * ((low < X[i] && X[i] < high) ? a->slope : 0.0f);
        return;
    }
    case LITHE__ACT_COUNT:
        break;
    }
    for (int64_t i = 0; i < n; i++) dX[i] = NAN;
}
