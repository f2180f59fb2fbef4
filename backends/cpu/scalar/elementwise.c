/* Scalar elementwise and reduction kernels. */
#include "../kernels.h"
#include "../../common/rows.h"

#include <math.h>

void lithe_f32_add_row__scalar(int64_t M, int64_t N, float *Y, const float *b) {
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) Y[i * N + j] += b[j];
}

void lithe_f32_sum_rows__scalar(int64_t M, int64_t N, const float *X, float beta, float *y) {
    for (int64_t j = 0; j < N; j++) y[j] = beta == 0.0f ? 0.0f : beta * y[j];
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) y[j] += X[i * N + j];
}

void lithe_f32_axpby__scalar(int64_t n, float alpha, const float *X, float beta, float *Y) {
    if (beta == 1.0f)
        for (int64_t i = 0; i < n; i++) Y[i] += alpha * X[i];
    else if (beta == 0.0f)
        for (int64_t i = 0; i < n; i++) Y[i] = alpha * X[i];
    else
        for (int64_t i = 0; i < n; i++) Y[i] = alpha * X[i] + beta * Y[i];
}

void lithe_f32_mul__scalar(int64_t n, const float *A, const float *B, float *Y) {
    for (int64_t i = 0; i < n; i++) Y[i] = A[i] * B[i];
}

double lithe_f32_sum_squares__scalar(int64_t n, const float *X) {
    double s = 0.0;
    for (int64_t i = 0; i < n; i++) s += (double)X[i] * X[i];
    return s;
}

int lithe_f32_any_outside__scalar(int64_t n, const float *X, float lo, float hi) {
    for (int64_t i = 0; i < n; i++)
        if (!(X[i] >= lo && X[i] <= hi)) return 1;
    return 0;
}

void lithe_f32_softmax__scalar(int64_t M, int64_t N, const float *X, float temperature, float *Y) {
    for (int64_t i = 0; i < M; i++) lithe__softmax_row(N, X + i * N, temperature, Y + i * N);
}

void lithe_f32_softmax_backward__scalar(int64_t M, int64_t N, const float *Y, const float *dY,
                                        float temperature, float *dX) {
    for (int64_t i = 0; i < M; i++) lithe__softmax_backward_row(N, Y + i * N, dY + i * N, temperature, dX + i * N);
}

void lithe_f32_dropout_mask__scalar(uint64_t key, uint64_t counter, float rate, int64_t n, float *Y) {
    lithe_rng rng = {key, counter};
    float keep = 1.0f / (1.0f - rate);
    float buf[256];
    for (int64_t i = 0; i < n; i += 256) {
        int64_t m = n - i < 256 ? n - i : 256;
        lithe_rng_uniform(&rng, buf, (size_t)m);
        for (int64_t j = 0; j < m; j++) Y[i + j] = buf[j] >= rate ? keep : 0.0f;
        /* 256 is a multiple of 4, so the stream continues exactly where it stopped */
    }
}

void lithe_f32_adam__scalar(int64_t n, float *W, const float *G, float *m1, float *m2, float beta1,
                            float beta2, float eps, float lr) {
    /* The order of operations of Thinc's NumpyOps.adam (_adam_momentum), in float32. */
    float omb1 = 1.0f - beta1, omb2 = 1.0f - beta2;
    for (int64_t i = 0; i < n; i++) {
        float g = G[i];
        m1[i] *= beta1;
        m1[i] += g * omb1;
        m2[i] *= beta2;
        m2[i] += omb2 * (g * g);
        float step = m1[i] / (sqrtf(m2[i]) + eps);
        W[i] += -lr * step;
    }
}

void lithe_f32_radam__scalar(int64_t n, float *W, const float *G, float *m1, float *m2, float beta1, float omb1,
                             float beta2, float omb2, float eps, float coef, bool rectified) {
    for (int64_t i = 0; i < n; i++) {
        float g = G[i];
        m2[i] *= beta2;
        m2[i] += omb2 * (g * g);
        m1[i] *= beta1;
        m1[i] += omb1 * g;
        if (rectified) W[i] += coef * (m1[i] / (sqrtf(m2[i]) + eps));
        else if (coef != 0.0f) W[i] += coef * m1[i];
    }
}

void lithe_f32_update_averages__scalar(int64_t n, float *ema, const float *W, float decay) {
    float omd = 1.0f - decay;
    for (int64_t i = 0; i < n; i++) ema[i] -= omd * (ema[i] - W[i]);
}

void lithe_f32_adam_step__scalar(int64_t n, float *W, float *G, float *m1, float *m2, float *avg, float gscale,
                                 float beta1, float beta2, float eps, float lr, float wscale, float decay) {
    /* lithe_optimizer_step's passes, element by element in the same order: clip (the scale is
     * applied as 0 * g + gscale * g is, which equals gscale * g), adam, G = 0, weight decay,
     * averages */
    float omb1 = 1.0f - beta1, omb2 = 1.0f - beta2, omd = 1.0f - decay;
    for (int64_t i = 0; i < n; i++) {
        lithe__adam_elem(i, W, G, m1, m2, avg, gscale, beta1, beta2, eps, lr, wscale, omb1, omb2, omd);
    }
}

void lithe_f32_cce_labels__scalar(int64_t B, int64_t C, const float *G, const int32_t *labels32,
                                  const int64_t *labels64, float smoothing, bool has_missing,
                                  int64_t missing, float divisor, float *D) {
    float off = C > 1 ? smoothing / (float)(C - 1) : 0.0f, on = 1.0f - smoothing;
    for (int64_t i = 0; i < B; i++) {
        int64_t label = labels64 ? labels64[i] : labels32[i];
        bool masked = has_missing && label == missing;
        for (int64_t j = 0; j < C; j++) {
            float t = j == label ? on : off;
            float d = masked ? 0.0f : G[i * C + j] - t;
            D[i * C + j] = d / divisor;
        }
    }
}
