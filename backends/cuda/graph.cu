/* Imported graphs' primitives: numpy-broadcast binary ops and Where, broadcast_to / reduce_to, and
 * 2-D convolution and pooling, forward and backward (backends/cpu/scalar/graph.c). Gradients that
 * sum over broadcast axes, and every convolution / pooling gradient, give one thread each output
 * element, which walks its contributions in the CPU's order: bit-identical sums, no atomics. */
#include "common.cuh"
#include "../common/rows.h"

/* ---- broadcasting ---- */

LC_KERNEL(k_bcast_binary, (const lc_thread &t, int op, lc_bcast g, int64_t n, const float *A, const float *B, float *Y)) {
    LC_FOR(t, k, n) {
        int64_t off[2];
        lc_bcast_offsets(g, 2, k, off);
        Y[k] = lithe__bin_fwd(op, A[off[0]], B[off[1]]);
    }
}
LC_KERNEL(k_bcast_where, (const lc_thread &t, lc_bcast g, int64_t n, const float *C, const float *A, const float *B, float *Y)) {
    LC_FOR(t, k, n) {
        int64_t off[3];
        lc_bcast_offsets(g, 3, k, off);
        Y[k] = C[off[0]] != 0.0f ? A[off[1]] : B[off[2]];
    }
}
LC_KERNEL(k_broadcast_to, (const lc_thread &t, lc_bcast g, int64_t n, const float *X, float alpha, float beta, float *Y)) {
    LC_FOR(t, k, n) {
        int64_t off[1];
        lc_bcast_offsets(g, 1, k, off);
        Y[k] = (beta == 0.0f ? 0.0f : beta * Y[k]) + alpha * X[off[0]];
    }
}

/* The flat indices k (ascending) of an index space `shape` whose operand offset (strides s, 0
 * along broadcast axes) is e: the operand's coordinates are fixed, the broadcast axes run as an
 * odometer, last axis fastest. */
struct lc_reduced {
    int nd;
    int64_t ostr[LITHE_MAX_DIMS], ext[LITHE_MAX_DIMS], idx[LITHE_MAX_DIMS];
    int64_t k;
    bool done;
    LC_HD void init(int nd_, const int64_t *shape, const int64_t *s, int64_t e) {
        nd = nd_;
        k = 0;
        done = false;
        int64_t st = 1;
        for (int d = nd - 1; d >= 0; d--) {
            ostr[d] = st;
            st *= shape[d];
            idx[d] = 0;
            if (shape[d] == 0) done = true;
            if (s[d] == 0) {
                ext[d] = shape[d];
            } else {
                ext[d] = 1;
                k += ((e / s[d]) % shape[d]) * ostr[d];
            }
        }
    }
    LC_HD void next() {
        for (int d = nd - 1; d >= 0; d--) {
            if (ext[d] <= 1) continue;
            k += ostr[d];
            if (++idx[d] < ext[d]) return;
            k -= ostr[d] * ext[d];
            idx[d] = 0;
        }
        done = true;
    }
};

static LC_HD inline void bin_grads(int op, float a, float b, float y, float g, float *da, float *db) {
    switch (op) {
    case LITHE__BIN_ADD: *da = g; *db = g; break;
    case LITHE__BIN_SUB: *da = g; *db = -g; break;
    case LITHE__BIN_MUL: *da = g * b; *db = g * a; break;
    case LITHE__BIN_DIV: *da = g / b; *db = -g * y / b; break;
    case LITHE__BIN_LESS: case LITHE__BIN_GREATER: case LITHE__BIN_EQUAL: *da = *db = 0.0f; break;
    default:
        *da = g * b * powf(a, b - 1.0f);
        *db = a > 0.0f ? g * y * logf(a) : 0.0f;
        break;
    }
}
/* dX (operand `which` of A, B: n_x elements) += its share of every output it fed */
LC_KERNEL(k_bcast_binary_backward, (const lc_thread &t, int op, lc_bcast g, int which, int64_t n_x, const float *A,
                                    const float *B, const float *Y, const float *dY, float *dX)) {
    LC_FOR(t, e, n_x) {
        lc_reduced it;
        it.init(g.nd, g.shape, g.s[which], e);
        float acc = dX[e];
        for (; !it.done; it.next()) {
            int64_t off[2];
            lc_bcast_offsets(g, 2, it.k, off);
            float da, db;
            bin_grads(op, A[off[0]], B[off[1]], Y ? Y[it.k] : 0.0f, dY[it.k], &da, &db);
            acc += which == 0 ? da : db;
        }
        dX[e] = acc;
    }
}
/* Y (n_y) = beta Y + alpha * (X summed over the axes Y broadcasts along); g: X's space, s[0]: Y's strides */
LC_KERNEL(k_reduce_to, (const lc_thread &t, lc_bcast g, int64_t n_y, const float *X, float alpha, float beta, float *Y)) {
    LC_FOR(t, e, n_y) {
        lc_reduced it;
        it.init(g.nd, g.shape, g.s[0], e);
        float acc = beta == 0.0f ? 0.0f : beta * Y[e];
        for (; !it.done; it.next()) acc += alpha * X[it.k];
        Y[e] = acc;
    }
}

static lc_bcast space_of(const lithe_tensor *out) {
    lc_bcast g;
    memset(&g, 0, sizeof g);
    g.nd = out->ndim;
    for (int d = 0; d < out->ndim; d++) g.shape[d] = out->shape[d];
    return g;
}

lithe_status cu_bcast_binary(lithe_backend *be, int op, const lithe_tensor *A, const lithe_tensor *B,
                                    lithe_tensor *Y) {
    lc_bcast g = space_of(Y);
    lc_bcast_strides(A, g.nd, g.shape, g.s[0]);
    lc_bcast_strides(B, g.nd, g.shape, g.s[1]);
    return lc_launch<k_bcast_binary>(lc_of(be), Y->numel, op, g, Y->numel, (const float *)lc_f(A),
                                     (const float *)lc_f(B), lc_f(Y));
}
lithe_status cu_bcast_binary_backward(lithe_backend *be, int op, const lithe_tensor *A, const lithe_tensor *B,
                                             const lithe_tensor *Y, const lithe_tensor *dY, lithe_tensor *dA,
                                             lithe_tensor *dB) {
    lc_ctx *c = lc_of(be);
    lc_bcast g = space_of(dY);
    lc_bcast_strides(A, g.nd, g.shape, g.s[0]);
    lc_bcast_strides(B, g.nd, g.shape, g.s[1]);
    if (dA)
        LITHE__TRY(lc_launch<k_bcast_binary_backward>(c, A->numel, op, g, 0, A->numel, (const float *)lc_f(A),
                                                      (const float *)lc_f(B), (const float *)lc_f(Y),
                                                      (const float *)lc_f(dY), lc_f(dA)));
    if (dB)
        LITHE__TRY(lc_launch<k_bcast_binary_backward>(c, B->numel, op, g, 1, B->numel, (const float *)lc_f(A),
                                                      (const float *)lc_f(B), (const float *)lc_f(Y),
                                                      (const float *)lc_f(dY), lc_f(dB)));
    return LITHE_OK;
}
lithe_status cu_bcast_where(lithe_backend *be, const lithe_tensor *C, const lithe_tensor *A, const lithe_tensor *B,
                                   lithe_tensor *Y) {
    lc_bcast g = space_of(Y);
    lc_bcast_strides(C, g.nd, g.shape, g.s[0]);
    lc_bcast_strides(A, g.nd, g.shape, g.s[1]);
    lc_bcast_strides(B, g.nd, g.shape, g.s[2]);
    return lc_launch<k_bcast_where>(lc_of(be), Y->numel, g, Y->numel, (const float *)lc_f(C), (const float *)lc_f(A),
                                    (const float *)lc_f(B), lc_f(Y));
}
lithe_status cu_broadcast_to(lithe_backend *be, const lithe_tensor *X, float alpha, float beta, lithe_tensor *Y) {
    lc_bcast g = space_of(Y);
    lc_bcast_strides(X, g.nd, g.shape, g.s[0]);
    return lc_launch<k_broadcast_to>(lc_of(be), Y->numel, g, Y->numel, (const float *)lc_f(X), alpha, beta, lc_f(Y));
}
lithe_status cu_reduce_to(lithe_backend *be, const lithe_tensor *X, float alpha, float beta, lithe_tensor *Y) {
    lc_bcast g = space_of(X);
    lc_bcast_strides(Y, g.nd, g.shape, g.s[0]);
    return lc_launch<k_reduce_to>(lc_of(be), Y->numel, g, Y->numel, (const float *)lc_f(X), alpha, beta, lc_f(Y));
}

/* ---- convolution ---- */

static LC_HD inline int64_t src_at(int64_t o, int64_t k, int64_t stride, int64_t pad, int64_t dil) {
    return o * stride - pad + k * dil;
}
/* The output position o and tap k with o * stride - pad + k * dil == x, for o ascending: the tap of
 * o is unique; -1 when o has none in [0, K). */
static LC_HD inline int64_t tap_of(int64_t x, int64_t o, int64_t stride, int64_t pad, int64_t dil, int64_t K) {
    int64_t r = x + pad - o * stride;
    if (r < 0 || r % dil) return -1;
    r /= dil;
    return r < K ? r : -1;
}

LC_KERNEL(k_conv2d, (const lc_thread &t, lithe__conv2d g, const float *X, const float *W, const float *b, float *Y)) {
    int64_t Cg = g.C / g.group, Mg = g.M / g.group;
    LC_FOR(t, q, g.N * g.M * g.OH * g.OW) {
        int64_t ow = q % g.OW, oh = (q / g.OW) % g.OH, m = (q / (g.OW * g.OH)) % g.M, n = q / (g.OW * g.OH * g.M);
        int64_t c0 = (m / Mg) * Cg;
        float acc = b ? b[m] : 0.0f;
        for (int64_t c = 0; c < Cg; c++) {
            const float *x = X + (n * g.C + c0 + c) * g.H * g.W;
            const float *w = W + (m * Cg + c) * g.KH * g.KW;
            for (int64_t kh = 0; kh < g.KH; kh++) {
                int64_t h = src_at(oh, kh, g.stride[0], g.pad[0], g.dil[0]);
                if (h < 0 || h >= g.H) continue;
                for (int64_t kw = 0; kw < g.KW; kw++) {
                    int64_t ww = src_at(ow, kw, g.stride[1], g.pad[1], g.dil[1]);
                    if (ww < 0 || ww >= g.W) continue;
                    acc += x[h * g.W + ww] * w[kh * g.KW + kw];
                }
            }
        }
        Y[q] = acc;
    }
}
/* dX[n, c, h, w] += sum over the group's m, then oh, ow (the CPU's order) of dY * W at the tap */
LC_KERNEL(k_conv2d_dx, (const lc_thread &t, lithe__conv2d g, const float *W, const float *dY, float *dX)) {
    int64_t Cg = g.C / g.group, Mg = g.M / g.group;
    LC_FOR(t, q, g.N * g.C * g.H * g.W) {
        int64_t w = q % g.W, h = (q / g.W) % g.H, cc = (q / (g.W * g.H)) % g.C, n = q / (g.W * g.H * g.C);
        int64_t grp = cc / Cg, c = cc % Cg;
        float acc = dX[q];
        for (int64_t m = grp * Mg; m < (grp + 1) * Mg; m++) {
            const float *gy = dY + (n * g.M + m) * g.OH * g.OW;
            const float *wk = W + (m * Cg + c) * g.KH * g.KW;
            for (int64_t oh = 0; oh < g.OH; oh++) {
                int64_t kh = tap_of(h, oh, g.stride[0], g.pad[0], g.dil[0], g.KH);
                if (kh < 0) continue;
                for (int64_t ow = 0; ow < g.OW; ow++) {
                    int64_t kw = tap_of(w, ow, g.stride[1], g.pad[1], g.dil[1], g.KW);
                    if (kw < 0) continue;
                    acc += gy[oh * g.OW + ow] * wk[kh * g.KW + kw];
                }
            }
        }
        dX[q] = acc;
    }
}
/* dW[m, c, kh, kw] += sum over n, oh, ow of dY * X at the tap */
LC_KERNEL(k_conv2d_dw, (const lc_thread &t, lithe__conv2d g, const float *X, const float *dY, float *dW)) {
    int64_t Cg = g.C / g.group, Mg = g.M / g.group;
    LC_FOR(t, q, g.M * Cg * g.KH * g.KW) {
        int64_t kw = q % g.KW, kh = (q / g.KW) % g.KH, c = (q / (g.KW * g.KH)) % Cg, m = q / (g.KW * g.KH * Cg);
        int64_t c0 = (m / Mg) * Cg;
        float acc = dW[q];
        for (int64_t n = 0; n < g.N; n++) {
            const float *x = X + (n * g.C + c0 + c) * g.H * g.W, *gy = dY + (n * g.M + m) * g.OH * g.OW;
            for (int64_t oh = 0; oh < g.OH; oh++) {
                int64_t h = src_at(oh, kh, g.stride[0], g.pad[0], g.dil[0]);
                if (h < 0 || h >= g.H) continue;
                for (int64_t ow = 0; ow < g.OW; ow++) {
                    int64_t ww = src_at(ow, kw, g.stride[1], g.pad[1], g.dil[1]);
                    if (ww < 0 || ww >= g.W) continue;
                    acc += gy[oh * g.OW + ow] * x[h * g.W + ww];
                }
            }
        }
        dW[q] = acc;
    }
}
LC_KERNEL(k_conv2d_db, (const lc_thread &t, lithe__conv2d g, const float *dY, float *db)) {
    LC_FOR(t, m, g.M) {
        float acc = db[m];
        for (int64_t n = 0; n < g.N; n++)
            for (int64_t o = 0; o < g.OH * g.OW; o++) acc += dY[(n * g.M + m) * g.OH * g.OW + o];
        db[m] = acc;
    }
}

/* col (nb images, Kc = Cg KH KW, P = OH OW) of group gi, images n0 ..: zero where the tap is padding */
LC_KERNEL(k_im2col, (const lc_thread &t, lithe__conv2d g, int64_t gi, int64_t n0, int64_t nb, const float *X, float *col)) {
    int64_t Cg = g.C / g.group, KK = g.KH * g.KW, Kc = Cg * KK, P = g.OH * g.OW;
    LC_FOR(t, q, nb * Kc * P) {
        int64_t p = q % P, kc = (q / P) % Kc, n = n0 + q / (P * Kc);
        int64_t c = kc / KK, kh = (kc % KK) / g.KW, kw = kc % g.KW, oh = p / g.OW, ow = p % g.OW;
        int64_t h = src_at(oh, kh, g.stride[0], g.pad[0], g.dil[0]), w = src_at(ow, kw, g.stride[1], g.pad[1], g.dil[1]);
        col[q] = h >= 0 && h < g.H && w >= 0 && w < g.W ? X[((n * g.C + gi * Cg + c) * g.H + h) * g.W + w] : 0.0f;
    }
}
LC_KERNEL(k_channel_bias, (const lc_thread &t, int64_t n, int64_t M, int64_t P, const float *b, float *Y)) {
    LC_FOR(t, q, n) Y[q] += b[(q / P) % M];
}

/* The im2col scratch's budget in floats: 64 Mi (256 MiB), or $LITHE_CUDA_IM2COL_FLOATS (the tests
 * set a small one so the batching over images takes several passes). */
static int64_t im2col_floats(void) {
    const char *e = getenv("LITHE_CUDA_IM2COL_FLOATS");
    long long v = e ? atoll(e) : 0;
    return v > 0 ? (int64_t)v : (int64_t)64 << 20;
}

LC_KERNEL(k_ones, (const lc_thread &t, int64_t n, float *Y)) {
    LC_FOR(t, i, n) Y[i] = 1.0f;
}
/* dst (rows, nb P): row r holds images i = 0 .. nb - 1's (P) rows r, src image i at src + i stride */
LC_KERNEL(k_gather_rows, (const lc_thread &t, int64_t rows, int64_t nb, int64_t P, const float *src, int64_t stride,
                          float *dst)) {
    LC_FOR(t, q, rows * nb * P) {
        int64_t p = q % P, i = (q / P) % nb, r = q / (P * nb);
        dst[q] = src[i * stride + r * P + p];
    }
}
/* col (Kc, nb P) of group gi, images n0 ..: col[kc][i P + p], zero where the tap is padding */
LC_KERNEL(k_im2col_wide, (const lc_thread &t, lithe__conv2d g, int64_t gi, int64_t n0, int64_t nb, const float *X,
                          float *col)) {
    int64_t Cg = g.C / g.group, KK = g.KH * g.KW, Kc = Cg * KK, P = g.OH * g.OW;
    LC_FOR(t, q, Kc * nb * P) {
        int64_t p = q % P, n = n0 + (q / P) % nb, kc = q / (P * nb);
        int64_t c = kc / KK, kh = (kc % KK) / g.KW, kw = kc % g.KW, oh = p / g.OW, ow = p % g.OW;
        int64_t h = src_at(oh, kh, g.stride[0], g.pad[0], g.dil[0]), w = src_at(ow, kw, g.stride[1], g.pad[1], g.dil[1]);
        col[q] = h >= 0 && h < g.H && w >= 0 && w < g.W ? X[((n * g.C + gi * Cg + c) * g.H + h) * g.W + w] : 0.0f;
    }
}
/* dX[n0 + i, group gi's channel c, h, w] += the sum, over taps (kh, kw) in order whose output
 * position (oh, ow) reads (h, w), of dcol[(c, kh, kw)][i P + oh OW + ow]; dcol (Kc, nb P) */
LC_KERNEL(k_col2im, (const lc_thread &t, lithe__conv2d g, int64_t gi, int64_t n0, int64_t nb, const float *dcol,
                     float *dX)) {
    int64_t Cg = g.C / g.group, KK = g.KH * g.KW, P = g.OH * g.OW, wide = nb * P;
    LC_FOR(t, q, nb * Cg * g.H * g.W) {
        int64_t w = q % g.W, h = (q / g.W) % g.H, c = (q / (g.W * g.H)) % Cg, i = q / (g.W * g.H * Cg);
        float acc = 0.0f;
        for (int64_t kh = 0; kh < g.KH; kh++) {
            int64_t rh = h + g.pad[0] - kh * g.dil[0];
            if (rh < 0 || rh % g.stride[0] || rh / g.stride[0] >= g.OH) continue;
            for (int64_t kw = 0; kw < g.KW; kw++) {
                int64_t rw = w + g.pad[1] - kw * g.dil[1];
                if (rw < 0 || rw % g.stride[1] || rw / g.stride[1] >= g.OW) continue;
                acc += dcol[((c * KK) + kh * g.KW + kw) * wide + i * P + (rh / g.stride[0]) * g.OW + rw / g.stride[1]];
            }
        }
        dX[(((n0 + i) * g.C + gi * Cg + c) * g.H + h) * g.W + w] += acc;
    }
}

/* Forward as GEMMs (cuBLAS), per group and batch of images: Y[n, group's M] (Mg, P) =
 * W_g (Mg, Kc) · col_n (Kc, P), col_n the image's im2col (a 1x1, stride-1, unpadded convolution reads
 * X itself), then + b. The direct kernel (k_conv2d, the CPU scalar twin's order) serves when the
 * product would be tiny. */
static lithe_status conv2d_plain(lithe_backend *be, const lithe__conv2d *g, const lithe_tensor *X, const lithe_tensor *W,
                                 const lithe_tensor *b, lithe_tensor *Y) {
    lc_ctx *c = lc_of(be);
    int64_t Cg = g->C / g->group, Mg = g->M / g->group, Kc = Cg * g->KH * g->KW, P = g->OH * g->OW;
    if (Y->numel == 0) return LITHE_OK;
    if (Kc * Mg * P < 4096)
        return lc_launch<k_conv2d>(c, Y->numel, *g, (const float *)lc_f(X), (const float *)lc_f(W),
                                   (const float *)lc_f(b), lc_f(Y));
    const float *x = lc_f(X), *w = lc_f(W);
    float *y = lc_f(Y);
    bool direct = g->KH == 1 && g->KW == 1 && g->stride[0] == 1 && g->stride[1] == 1 && g->pad[0] == 0 &&
                  g->pad[1] == 0 && g->pad[2] == 0 && g->pad[3] == 0;
    int64_t per_image = Kc * P, nb = direct ? g->N : im2col_floats() / (per_image ? per_image : 1);
    if (nb < 1) nb = 1;
    if (nb > g->N) nb = g->N;
    void *col = NULL;
    lithe_status s = direct ? LITHE_OK : lc_alloc(c, (size_t)(nb * per_image) * sizeof(float), &col);
    for (int64_t gi = 0; s == LITHE_OK && gi < g->group; gi++)
        for (int64_t n0 = 0; s == LITHE_OK && n0 < g->N; n0 += nb) {
            int64_t cnt = g->N - n0 < nb ? g->N - n0 : nb;
            const float *B = NULL;
            int64_t sB = 0;
            if (direct) {
                B = x + (n0 * g->C + gi * Cg) * g->H * g->W;
                sB = g->C * g->H * g->W;
            } else {
                s = lc_launch<k_im2col>(c, cnt * per_image, *g, gi, n0, cnt, x, (float *)col);
                B = (const float *)col;
                sB = per_image;
            }
            if (s == LITHE_OK)
                s = lc_gemm_rm(c, false, false, Mg, P, Kc, 1.0f, w + gi * Mg * Kc, Kc, 0, B, P, sB, 0.0f,
                               y + (n0 * g->M + gi * Mg) * P, P, g->M * P, cnt);
        }
    lc_free(c, col);
    if (s == LITHE_OK && b) s = lc_launch<k_channel_bias>(c, Y->numel, Y->numel, g->M, P, (const float *)lc_f(b), y);
    return s;
}
/* Backward as GEMMs, per group and batch of nb images, with the images side by side along the
 * GEMM's inner dimension (one product per batch, not one per image):
 *   dYt (Mg, nb P)  = the batch's dY rows of the group's channels (k_gather_rows),
 *   col (Kc, nb P)  = the batch's im2col (k_im2col_wide: col[kc][i P + p]),
 *   dW_g (Mg, Kc)  += dYt · colᵀ                       (cuBLAS, beta 1),
 *   dcol (Kc, nb P) = W_gᵀ · dYt                        (cuBLAS, beta 0, into col's scratch),
 *   dX             += col2im(dcol)                      (k_col2im: per dX element, its taps
 *                                                        gathered in (kh, kw) order: no atomics),
 *   db_g (Mg)      += dYt · ones (nb P)                 (cuBLAS, beta 1).
 * Tiny products (and db alone) take the direct kernels, as in the forward. */
lithe_status cu_conv2d_backward(lithe_backend *be, const lithe__conv2d *g, const lithe_tensor *X,
                                       const lithe_tensor *W, const lithe_tensor *dY, lithe_tensor *dX, lithe_tensor *dW,
                                       lithe_tensor *db) {
    lc_ctx *c = lc_of(be);
    int64_t Cg = g->C / g->group, Mg = g->M / g->group, Kc = Cg * g->KH * g->KW, P = g->OH * g->OW;
    if (g->N * P == 0) return LITHE_OK;
    if ((!dX && !dW) || Kc * Mg * P < 4096) {
        if (dX) LITHE__TRY(lc_launch<k_conv2d_dx>(c, dX->numel, *g, (const float *)lc_f(W), (const float *)lc_f(dY), lc_f(dX)));
        if (dW) LITHE__TRY(lc_launch<k_conv2d_dw>(c, dW->numel, *g, (const float *)lc_f(X), (const float *)lc_f(dY), lc_f(dW)));
        if (db) LITHE__TRY(lc_launch<k_conv2d_db>(c, g->M, *g, (const float *)lc_f(dY), lc_f(db)));
        return LITHE_OK;
    }
    const float *x = lc_f(X), *w = lc_f(W), *dy = lc_f(dY);
    float *dx = dX ? lc_f(dX) : NULL, *dw = dW ? lc_f(dW) : NULL, *dbp = db ? lc_f(db) : NULL;
    int64_t per_image = (Mg + Kc + 1) * P, nb = im2col_floats() / per_image;
    if (nb < 1) nb = 1;
    if (nb > g->N) nb = g->N;
    void *scratch = NULL;
    lithe_status s = lc_alloc(c, (size_t)(nb * per_image) * sizeof(float), &scratch);
    float *dyt = (float *)scratch, *col = dyt + Mg * nb * P, *ones = col + Kc * nb * P;
    if (s == LITHE_OK && dbp) s = lc_launch<k_ones>(c, nb * P, nb * P, ones);
    for (int64_t gi = 0; s == LITHE_OK && gi < g->group; gi++)
        for (int64_t n0 = 0; s == LITHE_OK && n0 < g->N; n0 += nb) {
            int64_t cnt = g->N - n0 < nb ? g->N - n0 : nb, wide = cnt * P;
            s = lc_launch<k_gather_rows>(c, Mg * wide, Mg, cnt, P, dy + (n0 * g->M + gi * Mg) * P, g->M * P, dyt);
            if (s == LITHE_OK && dbp)
                s = lc_gemm_rm(c, false, false, Mg, 1, wide, 1.0f, dyt, wide, 0, ones, 1, 0, 1.0f, dbp + gi * Mg, 1, 0, 1);
            if (s == LITHE_OK && dw) {
                s = lc_launch<k_im2col_wide>(c, Kc * wide, *g, gi, n0, cnt, x, col);
                if (s == LITHE_OK)
                    s = lc_gemm_rm(c, false, true, Mg, Kc, wide, 1.0f, dyt, wide, 0, col, wide, 0, 1.0f,
                                   dw + gi * Mg * Kc, Kc, 0, 1);
            }
            if (s == LITHE_OK && dx) {
                s = lc_gemm_rm(c, true, false, Kc, wide, Mg, 1.0f, w + gi * Mg * Kc, Kc, 0, dyt, wide, 0, 0.0f, col,
                               wide, 0, 1);
                if (s == LITHE_OK) s = lc_launch<k_col2im>(c, cnt * Cg * g->H * g->W, *g, gi, n0, cnt, (const float *)col, dx);
            }
        }
    lc_free(c, scratch);
    return s;
}

/* ---- pooling ---- */

LC_KERNEL(k_pool2d, (const lc_thread &t, lithe__pool2d g, const float *X, float *Y, int32_t *which)) {
    LC_FOR(t, o, g.N * g.C * g.OH * g.OW) {
        int64_t ow = o % g.OW, oh = (o / g.OW) % g.OH, nc = o / (g.OW * g.OH);
        const float *x = X + nc * g.H * g.W;
        float best = -INFINITY, sum = 0.0f;
        int64_t arg = -1, count = 0;
        for (int64_t kh = 0; kh < g.KH; kh++) {
            int64_t h = src_at(oh, kh, g.stride[0], g.pad[0], g.dil[0]);
            for (int64_t kw = 0; kw < g.KW; kw++) {
                int64_t w = src_at(ow, kw, g.stride[1], g.pad[1], g.dil[1]);
                if (h < 0 || h >= g.H || w < 0 || w >= g.W) continue;
                float v = x[h * g.W + w];
                count++;
                sum += v;
                if (arg < 0 || v > best) {
                    best = v;
                    arg = h * g.W + w;
                }
            }
        }
        if (g.max) {
            Y[o] = best;
            if (which) which[o] = (int32_t)arg; /* NULL: inference, no backward reads it */
        } else {
            int64_t div = g.count_include_pad ? g.KH * g.KW : count;
            Y[o] = div ? sum / (float)div : 0.0f;
        }
    }
}
static LC_HD inline int64_t pool_count(const lithe__pool2d &g, int64_t oh, int64_t ow) {
    int64_t count = 0;
    for (int64_t kh = 0; kh < g.KH; kh++) {
        int64_t h = src_at(oh, kh, g.stride[0], g.pad[0], g.dil[0]);
        for (int64_t kw = 0; kw < g.KW; kw++) {
            int64_t w = src_at(ow, kw, g.stride[1], g.pad[1], g.dil[1]);
            if (h >= 0 && h < g.H && w >= 0 && w < g.W) count++;
        }
    }
    return count;
}
/* dX[nc, h, w] += the shares of the windows (oh, ow ascending) that cover it */
LC_KERNEL(k_pool2d_backward, (const lc_thread &t, lithe__pool2d g, const float *dY, const int32_t *which, float *dX)) {
    LC_FOR(t, q, g.N * g.C * g.H * g.W) {
        int64_t w = q % g.W, h = (q / g.W) % g.H, nc = q / (g.W * g.H);
        float acc = dX[q];
        for (int64_t oh = 0; oh < g.OH; oh++) {
            if (tap_of(h, oh, g.stride[0], g.pad[0], g.dil[0], g.KH) < 0) continue;
            for (int64_t ow = 0; ow < g.OW; ow++) {
                if (tap_of(w, ow, g.stride[1], g.pad[1], g.dil[1], g.KW) < 0) continue;
                int64_t o = nc * g.OH * g.OW + oh * g.OW + ow;
                if (g.max) {
                    if (which[o] == (int32_t)(h * g.W + w)) acc += dY[o];
                } else {
                    int64_t div = g.count_include_pad ? g.KH * g.KW : pool_count(g, oh, ow);
                    if (div) acc += dY[o] / (float)div;
                }
            }
        }
        dX[q] = acc;
    }
}
lithe_status cu_pool2d(lithe_backend *be, const lithe__pool2d *g, const lithe_tensor *X, lithe_tensor *Y,
                              lithe_tensor *which) {
    return lc_launch<k_pool2d>(lc_of(be), Y->numel, *g, (const float *)lc_f(X), lc_f(Y), (int32_t *)lc_ptr(which));
}
lithe_status cu_pool2d_backward(lithe_backend *be, const lithe__pool2d *g, const lithe_tensor *dY,
                                       const lithe_tensor *which, lithe_tensor *dX) {
    return lc_launch<k_pool2d_backward>(lc_of(be), dX->numel, *g, (const float *)lc_f(dY),
                                        (const int32_t *)lc_ptr(which), lc_f(dX));
}


/* The fused activation (primitives.def: conv2d's a) runs as the backend's act primitive over Y in
 * place, after the convolution: the same bits as Conv then Relu / Clip as two nodes. */
lithe_status cu_conv2d(lithe_backend *be, const lithe__conv2d *g, const lithe_tensor *X, const lithe_tensor *W,
                              const lithe_tensor *b, const lithe__act *a, lithe_tensor *Y) {
    LITHE__TRY(conv2d_plain(be, g, X, W, b, Y));
    return a && Y->numel ? be->ops->act(be, a, Y, Y) : LITHE_OK;
}

