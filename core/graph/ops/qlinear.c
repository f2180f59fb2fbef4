/* ONNX operators of the graph layer (core/graph/ops/), issue 24 item 4: the QOperator form of
 * quantized graphs — MatMulInteger, ConvInteger (int32 results), QLinearMatMul, QLinearConv
 * (requantized codes). Codes are host int64 tensors; sums are exact (int64); requantization is
 * onnxruntime's: y = clamp(rint((float)acc * (scale_a * scale_b / scale_y)) + zero_y), rounding half
 * to even. These run on the host (a plain loop): the fast int8 path is the QDQ form's fusion
 * (fuse_qdq.c, qfused.c). Forward only. */
#include "ops.h"

/* ---- integer products ---- */

typedef struct imm {
    int64_t P, M, K, N;
    bool b2d;
} imm;

/* A (..., M, K) · B (K, N), or B (..., K, N) with A's leading extents. */
static lithe_status imm_geometry(lithe__gexec *x, size_t node, const lithe_tensor *A, const lithe_tensor *B, imm *g,
                                 int *nd, int64_t *shape) {
    if (A->ndim < 2 || B->ndim < 2)
        return fail(x, node, LITHE_ERR_UNSUPPORTED, "1-D operands are not supported (got %d-D and %d-D)", A->ndim, B->ndim);
    g->M = A->shape[A->ndim - 2];
    g->K = A->shape[A->ndim - 1];
    g->N = B->shape[B->ndim - 1];
    g->b2d = B->ndim == 2;
    if (B->shape[B->ndim - 2] != g->K)
        return fail(x, node, LITHE_ERR_SHAPE, "inner extents differ: A's %lld, B's %lld", (long long)g->K,
                    (long long)B->shape[B->ndim - 2]);
    g->P = 1;
    for (int d = 0; d < A->ndim - 2; d++) g->P *= A->shape[d];
    if (!g->b2d) {
        bool same = A->ndim == B->ndim;
        for (int d = 0; same && d < A->ndim - 2; d++) same = A->shape[d] == B->shape[d];
        if (!same) return fail(x, node, LITHE_ERR_UNSUPPORTED, "batched operands must have equal leading extents");
    }
    *nd = A->ndim;
    for (int d = 0; d < A->ndim - 1; d++) shape[d] = A->shape[d];
    shape[A->ndim - 1] = g->N;
    return LITHE_OK;
}

/* acc[p][i][j] = Σ_k (A[p][i][k] - za[i]) (B[p][k][j] - zb[j]) (za, zb: one value, or one per row /
 * column; NULL: 0). */
static void imm_run(const imm *g, const int64_t *A, const int64_t *B, const int64_t *za, int64_t nza, const int64_t *zb,
                    int64_t nzb, int64_t *acc) {
    for (int64_t p = 0; p < g->P; p++) {
        const int64_t *Ap = A + p * g->M * g->K, *Bp = g->b2d ? B : B + p * g->K * g->N;
        for (int64_t i = 0; i < g->M; i++) {
            int64_t zi = za ? za[nza > 1 ? i : 0] : 0, *row = acc + (p * g->M + i) * g->N;
            memset(row, 0, (size_t)g->N * sizeof *row);
            for (int64_t k = 0; k < g->K; k++) {
                int64_t a = Ap[i * g->K + k] - zi;
                const int64_t *b = Bp + k * g->N;
                if (!a) continue;
                for (int64_t j = 0; j < g->N; j++) row[j] += a * (b[j] - (zb ? zb[nzb > 1 ? j : 0] : 0));
            }
        }
    }
}

/* Y (N, M, OH, OW) = Σ (X - zx) (W - zw[m]) over each window (groups, strides, pads, dilations). */
static void iconv_run(const lithe__conv2d *g, const int64_t *X, int64_t zx, const int64_t *W, const int64_t *zw,
                      int64_t nzw, int64_t *Y) {
    int64_t Cg = g->C / g->group, Mg = g->M / g->group;
    for (int64_t n = 0; n < g->N; n++)
        for (int64_t m = 0; m < g->M; m++) {
            int64_t grp = m / Mg, z = zw ? zw[nzw > 1 ? m : 0] : 0;
            for (int64_t oh = 0; oh < g->OH; oh++)
                for (int64_t ow = 0; ow < g->OW; ow++) {
                    int64_t acc = 0;
                    for (int64_t c = 0; c < Cg; c++) {
                        const int64_t *xc = X + (n * g->C + grp * Cg + c) * g->H * g->W;
                        const int64_t *wc = W + (m * Cg + c) * g->KH * g->KW;
                        for (int64_t kh = 0; kh < g->KH; kh++) {
                            int64_t ih = oh * g->stride[0] - g->pad[0] + kh * g->dil[0];
                            if (ih < 0 || ih >= g->H) continue;
                            for (int64_t kw = 0; kw < g->KW; kw++) {
                                int64_t iw = ow * g->stride[1] - g->pad[1] + kw * g->dil[1];
                                if (iw >= 0 && iw < g->W) acc += (xc[ih * g->W + iw] - zx) * (wc[kh * g->KW + kw] - z);
                            }
                        }
                    }
                    Y[((n * g->M + m) * g->OH + oh) * g->OW + ow] = acc;
                }
        }
}

/* A zero-point input of MatMulInteger / ConvInteger: left out (NULL), or integers, 1 or `want`
 * of them, inside the range of their type (int8 / uint8 when not known at load). */
static lithe_status zp_in(lithe__gexec *x, size_t node, lithe_tensor **in, size_t n_in, size_t k, int64_t want,
                          const char *what, const int64_t **z, int64_t *nz) {
    *z = NULL;
    *nz = 1;
    if (k >= n_in || !in[k]) return LITHE_OK;
    LITHE__TRY(need_ints(x, node, in[k], k));
    const lithe_tensor *Z = in[k];
    if (Z->numel != 1 && Z->numel != want)
        return fail(x, node, LITHE_ERR_SHAPE, "its %s zero point has %lld values; it takes 1 or %lld", what,
                    (long long)Z->numel, (long long)want);
    int32_t t = lithe__graph_slot_type(x->g, x->g->node_in[node][k]);
    int64_t lo = t == LITHE__ONNX_INT8 ? -128 : t == LITHE__ONNX_UINT8 ? 0 : -128, hi = t == LITHE__ONNX_INT8 ? 127 : 255;
    for (int64_t c = 0; c < Z->numel; c++)
        if (ints(Z)[c] < lo || ints(Z)[c] > hi)
            return fail(x, node, LITHE_ERR_VALUE, "its %s zero point[%lld] = %lld is outside [%lld, %lld]", what,
                        (long long)c, (long long)ints(Z)[c], (long long)lo, (long long)hi);
    *z = ints(Z);
    *nz = Z->numel;
    return LITHE_OK;
}

static lithe_status need_codes(lithe__gexec *x, size_t node, lithe_tensor **in, size_t n_in, const size_t *ks, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (ks[i] >= n_in || !in[ks[i]]) return fail(x, node, LITHE_ERR_FORMAT, "input %zu is required but left out", ks[i]);
        if (!is_int(in[ks[i]]))
            return fail(x, node, LITHE_ERR_DTYPE, "input %zu must hold integer codes, got %s", ks[i],
                        lithe_dtype_name(in[ks[i]]->dtype));
    }
    return LITHE_OK;
}

/* ---- MatMulInteger (A, B, [a_zero_point], [b_zero_point]) -> int32 ---- */
FWD(f_matmul_integer) {
    UNUSED_FWD;
    LITHE__TRY(need_codes(x, node, in, n_in, (size_t[]){0, 1}, 2));
    imm g;
    int nd = 0;
    int64_t shape[LITHE_MAX_DIMS];
    LITHE__TRY(imm_geometry(x, node, in[0], in[1], &g, &nd, shape));
    const int64_t *za, *zb;
    int64_t nza, nzb;
    LITHE__TRY(zp_in(x, node, in, n_in, 2, g.M, "A", &za, &nza));
    LITHE__TRY(zp_in(x, node, in, n_in, 3, g.N, "B", &zb, &nzb));
    LITHE__TRY(new_i64(x, nd, shape, &out[0]));
    imm_run(&g, ints(in[0]), ints(in[1]), za, nza, zb, nzb, (int64_t *)lithe__tdata(out[0]));
    return LITHE_OK;
}

/* Conv's geometry for integer X (3-D or 4-D) and W. */
static lithe_status iconv_geometry(lithe__gexec *x, size_t node, lithe_tensor *X, lithe_tensor *W, lithe__conv2d *g,
                                   int *nd, int64_t *shape) {
    if (X->ndim == 5) return fail(x, node, LITHE_ERR_UNSUPPORTED, "3-D integer convolutions are not supported");
    LITHE__TRY(conv_geometry(x, node, (lithe_tensor *[]){X, W}, g));
    *nd = X->ndim;
    shape[0] = g->N;
    shape[1] = g->M;
    shape[2] = X->ndim == 3 ? g->OW : g->OH;
    shape[3] = g->OW;
    return LITHE_OK;
}

/* ---- ConvInteger (x, w, [x_zero_point], [w_zero_point]) -> int32 ---- */
FWD(f_conv_integer) {
    UNUSED_FWD;
    LITHE__TRY(need_codes(x, node, in, n_in, (size_t[]){0, 1}, 2));
    lithe__conv2d g = {0};
    int nd = 0;
    int64_t shape[4];
    LITHE__TRY(iconv_geometry(x, node, in[0], in[1], &g, &nd, shape));
    const int64_t *zx, *zw;
    int64_t nzx, nzw;
    LITHE__TRY(zp_in(x, node, in, n_in, 2, 1, "x", &zx, &nzx));
    LITHE__TRY(zp_in(x, node, in, n_in, 3, g.M, "w", &zw, &nzw));
    LITHE__TRY(new_i64(x, nd, shape, &out[0]));
    iconv_run(&g, ints(in[0]), zx ? zx[0] : 0, ints(in[1]), zw, nzw, (int64_t *)lithe__tdata(out[0]));
    return LITHE_OK;
}

/* Requantizes acc (rows of `cols` values; per-column multipliers when nb > 1, or per outer block of
 * `inner` values for a convolution's channels) in place. */
static void requant(int64_t *acc, int64_t n, int64_t inner, int64_t ext, const lithe__gq *a, const lithe__gq *b,
                    const lithe__gq *y) {
    for (int64_t i = 0; i < n; i++) {
        int64_t c = b->n > 1 ? (i / inner) % ext : 0;
        float mult = a->scale[0] * b->scale[c] / y->scale[0];
        float r = rintf((float)acc[i] * mult) + (float)(y->zero ? y->zero[0] : 0);
        acc[i] = !(r >= (float)y->qmin) ? y->qmin : r > (float)y->qmax ? y->qmax : (int64_t)r;
    }
}

/* ---- QLinearMatMul (a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp) -> codes ---- */
FWD(f_qlinear_matmul) {
    UNUSED_FWD;
    LITHE__TRY(need_codes(x, node, in, n_in, (size_t[]){0, 3}, 2));
    imm g;
    int nd = 0;
    int64_t shape[LITHE_MAX_DIMS];
    LITHE__TRY(imm_geometry(x, node, in[0], in[3], &g, &nd, shape));
    lithe__gq qa, qb, qy;
    LITHE__TRY(gq_params(x, node, in, n_in, 1, 2, LITHE__ONNX_UINT8, 0, 1, "a", &qa));
    lithe_status s = gq_params(x, node, in, n_in, 4, 5, LITHE__ONNX_UINT8, 0, g.N, "b", &qb);
    if (s == LITHE_OK) s = gq_params(x, node, in, n_in, 6, 7, LITHE__ONNX_UINT8, 0, 1, "y", &qy);
    else qy.hold = NULL;
    if (s == LITHE_OK) s = new_i64(x, nd, shape, &out[0]);
    if (s == LITHE_OK) {
        int64_t *acc = (int64_t *)lithe__tdata(out[0]);
        imm_run(&g, ints(in[0]), ints(in[3]), qa.zero, 1, qb.zero, qb.n, acc);
        requant(acc, out[0]->numel, 1, g.N, &qa, &qb, &qy);
    }
    gq_release(&qa);
    gq_release(&qb);
    gq_release(&qy);
    return s;
}

/* ---- QLinearConv (x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, [B int32]) -> codes ---- */
FWD(f_qlinear_conv) {
    UNUSED_FWD;
    LITHE__TRY(need_codes(x, node, in, n_in, (size_t[]){0, 3}, 2));
    lithe__conv2d g = {0};
    int nd = 0;
    int64_t shape[4];
    LITHE__TRY(iconv_geometry(x, node, in[0], in[3], &g, &nd, shape));
    lithe_tensor *B = n_in > 8 ? in[8] : NULL;
    if (B && (!is_int(B) || B->numel != g.M))
        return fail(x, node, LITHE_ERR_SHAPE, "its bias B must hold %lld int32 values", (long long)g.M);
    lithe__gq qx, qw, qy;
    LITHE__TRY(gq_params(x, node, in, n_in, 1, 2, LITHE__ONNX_UINT8, 0, 1, "x", &qx));
    lithe_status s = gq_params(x, node, in, n_in, 4, 5, LITHE__ONNX_INT8, 0, g.M, "w", &qw);
    if (s == LITHE_OK) s = gq_params(x, node, in, n_in, 6, 7, LITHE__ONNX_UINT8, 0, 1, "y", &qy);
    else qy.hold = NULL;
    if (s == LITHE_OK) s = new_i64(x, nd, shape, &out[0]);
    if (s == LITHE_OK) {
        int64_t *acc = (int64_t *)lithe__tdata(out[0]), inner = g.OH * g.OW;
        iconv_run(&g, ints(in[0]), qx.zero ? qx.zero[0] : 0, ints(in[3]), qw.zero, qw.n, acc);
        for (int64_t i = 0; B && i < out[0]->numel; i++) acc[i] += ints(B)[(i / inner) % g.M];
        requant(acc, out[0]->numel, inner, g.M, &qx, &qw, &qy);
    }
    gq_release(&qx);
    gq_release(&qw);
    gq_release(&qy);
    return s;
}
