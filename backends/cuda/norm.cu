/* Maxout and layer normalisation (Thinc's NumpyOps.maxout and LayerNorm, as
 * backends/cpu/scalar/norm.c): one thread per output unit, per row for the row statistics, and
 * per column for the parameter gradients, whose sums run down the rows in the CPU's order. */
#include "common.cuh"
#include "../common/rows.h"

LC_KERNEL(k_maxout, (const lc_thread &t, int64_t R, int64_t P, const float *X, float *Y, int32_t *which)) {
    LC_FOR(t, r, R) {
        int32_t best = lithe__maxout_row(P, X + r * P);
        Y[r] = X[r * P + best];
        which[r] = best;
    }
}
LC_KERNEL(k_maxout_backward, (const lc_thread &t, int64_t R, int64_t P, const float *dY, const int32_t *which, float *dX)) {
    LC_FOR(t, k, R * P) {
        int64_t r = k / P;
        dX[k] = which[r] == (int32_t)(k % P) ? dY[r] : 0.0f;
    }
}
lithe_status cu_maxout(lithe_backend *be, const lithe_tensor *X, lithe_tensor *Y, lithe_tensor *which) {
    int64_t R = X->shape[0] * X->shape[1];
    return lc_launch<k_maxout>(lc_of(be), R, R, X->shape[2], (const float *)lc_f(X), lc_f(Y), (int32_t *)lc_ptr(which));
}
lithe_status cu_maxout_backward(lithe_backend *be, const lithe_tensor *dY, const lithe_tensor *which,
                                       lithe_tensor *dX) {
    int64_t R = dX->shape[0] * dX->shape[1];
    return lc_launch<k_maxout_backward>(lc_of(be), dX->numel, R, dX->shape[2], (const float *)lc_f(dY),
                                        (const int32_t *)lc_ptr(which), lc_f(dX));
}

/* Row statistics in double, as the CPU's. */
LC_KERNEL(k_layernorm, (const lc_thread &t, int64_t M, int64_t N, const float *X, const float *G, const float *b,
                        float eps, float *Y, float *mean, float *inv_std)) {
    LC_FOR(t, i, M) lithe__layernorm_row(N, X + i * N, G, b, eps, Y + i * N, &mean[i], &inv_std[i]);
}
/* dX per row (it may alias dY: each row reads its dY before writing) */
LC_KERNEL(k_layernorm_dx, (const lc_thread &t, int64_t M, int64_t N, const float *dY, const float *X, const float *G,
                           const float *mean, const float *inv_std, float *dX)) {
    LC_FOR(t, i, M) lithe__layernorm_dx_row(N, X + i * N, dY + i * N, G, mean[i], inv_std[i], dX + i * N);
}
/* dG, db per column, rows in order */
LC_KERNEL(k_layernorm_dg, (const lc_thread &t, int64_t M, int64_t N, const float *dY, const float *X, const float *mean,
                           const float *inv_std, float *dG, float *db)) {
    LC_FOR(t, j, N) {
        float g = dG[j], bb = db[j];
        for (int64_t i = 0; i < M; i++) {
            double xhat = ((double)X[i * N + j] - (double)mean[i]) * (double)inv_std[i];
            g += (float)((double)dY[i * N + j] * xhat);
            bb += dY[i * N + j];
        }
        dG[j] = g;
        db[j] = bb;
    }
}
lithe_status cu_layernorm(lithe_backend *be, const lithe_tensor *X, const lithe_tensor *G, const lithe_tensor *b,
                                 float eps, lithe_tensor *Y, lithe_tensor *mean, lithe_tensor *inv_std) {
    return lc_launch<k_layernorm>(lc_of(be), X->shape[0], X->shape[0], X->shape[1], (const float *)lc_f(X),
                                  (const float *)lc_f(G), (const float *)lc_f(b), eps, lc_f(Y), lc_f(mean),
                                  lc_f(inv_std));
}
lithe_status cu_layernorm_backward(lithe_backend *be, const lithe_tensor *dY, const lithe_tensor *X,
                                          const lithe_tensor *G, const lithe_tensor *mean, const lithe_tensor *inv_std,
                                          lithe_tensor *dX, lithe_tensor *dG, lithe_tensor *db) {
    lc_ctx *c = lc_of(be);
    int64_t M = X->shape[0], N = X->shape[1];
    /* the parameter sums first: dX may overwrite dY */
    LITHE__TRY(lc_launch<k_layernorm_dg>(c, N, M, N, (const float *)lc_f(dY), (const float *)lc_f(X),
                                         (const float *)lc_f(mean), (const float *)lc_f(inv_std), lc_f(dG), lc_f(db)));
    return lc_launch<k_layernorm_dx>(c, M, M, N, (const float *)lc_f(dY), (const float *)lc_f(X), (const float *)lc_f(G),
                                     (const float *)lc_f(mean), (const float *)lc_f(inv_std), lc_f(dX));
}

