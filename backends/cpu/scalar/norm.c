/* Scalar maxout and layer-normalisation kernels (Thinc's NumpyOps.maxout and LayerNorm). */
#include "../kernels.h"
#include "../../common/rows.h"

#include <math.h>
#include <string.h>

void lithe_f32_maxout__scalar(int64_t B, int64_t O, int64_t P, const float *X, float *Y,
                              int32_t *which) {
    for (int64_t r = 0; r < B * O; r++) {
        int32_t best = lithe__maxout_row(P, X + r * P); /* Thinc's argmax rule */
        Y[r] = X[r * P + best];
        which[r] = best;
    }
}

void lithe_f32_maxout_backward__scalar(int64_t B, int64_t O, int64_t P, const float *dY,
                                       const int32_t *which, float *dX) {
    memset(dX, 0, (size_t)(B * O * P) * sizeof(float));
    for (int64_t r = 0; r < B * O; r++) dX[r * P + which[r]] = dY[r];
}

/* Row statistics in double, so rows of any width keep float32 accuracy. */
void lithe_f32_layernorm__scalar(int64_t M, int64_t N, const float *X, const float *G, const float *b,
                                 float eps, float *Y, float *mean, float *inv_std) {
    for (int64_t i = 0; i < M; i++) lithe__layernorm_row(N, X + i * N, G, b, eps, Y + i * N, &mean[i], &inv_std[i]);
}

/* With xhat = (X - mu) * inv_std and g = dY * G:
 *   dX = inv_std * (g - mean(g) - xhat * mean(g * xhat)),  dG += sum dY * xhat,  db += sum dY,
 * which is Thinc's  (N g - sum g - dist / var * sum(g dist)) * var^-1/2 / N. dX may alias dY. */
void lithe_f32_layernorm_backward__scalar(int64_t M, int64_t N, const float *dY, const float *X,
                                          const float *G, const float *mean, const float *inv_std,
                                          float *dX, float *dG, float *db) {
    for (int64_t i = 0; i < M; i++) {
        const float *x = X + i * N, *dy = dY + i * N;
        double mu = mean[i], is = inv_std[i];
        double sum_g = 0.0, sum_gx = 0.0;
        for (int64_t j = 0; j < N; j++) {
            double xhat = ((double)x[j] - mu) * is;
            double g = (double)dy[j] * G[j];
            sum_g += g;
            sum_gx += g * xhat;
            dG[j] += (float)((double)dy[j] * xhat);
            db[j] += dy[j];
        }
        double mg = sum_g / (double)N, mgx = sum_gx / (double)N;
        for (int64_t j = 0; j < N; j++) {
            double xhat = ((double)x[j] - mu) * is;
            dX[i * N + j] = (float)(is * ((double)dy[j] * G[j] - mg - xhat * mgx));
        }
    }
}
