/* Scalar activation kernels and their backprops, with Thinc's formulas (thinc/backends/ops.py). */
#include "../kernels.h"

#include <math.h>

void lithe_f32_act__scalar(const lithe__act *a, int64_t n, const float *X, float *Y) {
    switch (a->kind) {
    case LITHE__ACT_RELU:
        for (int64_t i = 0; i < n; i++) Y[i] = X[i] > 0.0f ? X[i] : 0.0f;
        return;
    case LITHE__ACT_SIGMOID:
        for (int64_t i = 0; i < n; i++) Y[i] = 1.0f / (1.0f + expf(-X[i]));
        return;
    case LITHE__ACT_TANH:
        for (int64_t i = 0; i < n; i++) Y[i] = tanhf(X[i]);
        return;
    default:
        for (int64_t i = 0; i < n; i++) Y[i] = NAN; /* kinds of the dense catalogue: not yet */
        return;
    }
}

void lithe_f32_act_backward__scalar(const lithe__act *a, int64_t n, const float *dY, const float *X,
                                    const float *Y, float *dX) {
    (void)X;
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
    default:
        for (int64_t i = 0; i < n; i++) dX[i] = NAN;
        return;
    }
}
