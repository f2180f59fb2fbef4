/* ONNX operators of the graph layer (core/graph/ops/): LayerNormalization, BatchNormalization. */
#include "ops.h"

/* ---- LayerNormalization (last axis), BatchNormalization (inference) ---- */

static lithe_status ln_rows(lithe__gexec *x, size_t node, const lithe_tensor *X, int64_t *M, int64_t *N) {
    int64_t axis = 0; /* a fused LayerNorm (fuse.c) normalises the last axis */
    bool fused = x->g->node_fuse && x->g->node_fuse[node].kind == LITHE__FUSE_LAYERNORM;
    LITHE__TRY(norm_axis(x, node, fused ? -1 : attr_i(NODE(x, node), "axis", -1), X->ndim, false, &axis));
    if (axis != X->ndim - 1)
        return fail(x, node, LITHE_ERR_UNSUPPORTED, "normalising from axis %lld of a rank-%d input (lithe takes the last axis)",
                    (long long)axis, X->ndim);
    *N = X->shape[X->ndim - 1];
    *M = *N ? X->numel / *N : 0;
    return LITHE_OK;
}

FWD(f_layernorm) {
    (void)n_out;
    LITHE__TRY(need_inputs(x, node, in, n_in, 2));
    for (size_t k = 0; k < n_in && k < 3; k++)
        if (in[k]) LITHE__TRY(need_float(x, node, in[k], k));
    int64_t M = 0, N = 0;
    LITHE__TRY(ln_rows(x, node, in[0], &M, &N));
    if (in[1]->numel != N || (n_in > 2 && in[2] && in[2]->numel != N))
        return fail(x, node, LITHE_ERR_SHAPE, "scale and bias need %lld values", (long long)N);
    lithe_tensor *bias = n_in > 2 ? in[2] : NULL, *zero = NULL, *X2 = NULL, *Y2 = NULL;
    lithe_status s = LITHE_OK;
    if (!bias) s = new_f32(x, 1, (int64_t[]){N}, true, &zero);
    if (s == LITHE_OK) s = lithe__gexec_like(x, in[0], false, &out[0]);
    if (s == LITHE_OK) s = new_f32(x, 1, (int64_t[]){M}, false, &saved[0]);
    if (s == LITHE_OK) s = new_f32(x, 1, (int64_t[]){M}, false, &saved[1]);
    if (s == LITHE_OK) s = as_rows(in[0], M, N, &X2);
    if (s == LITHE_OK) s = as_rows(out[0], M, N, &Y2);
    bool fused = x->g->node_fuse && x->g->node_fuse[node].kind == LITHE__FUSE_LAYERNORM;
    float eps = fused ? x->g->node_fuse[node].eps : attr_f(NODE(x, node), "epsilon", 1e-5f);
    if (s == LITHE_OK) s = lithe__op_layernorm(x->be, X2, in[1], bias ? bias : zero, eps, Y2, saved[0], saved[1]);
    lithe_tensor_release(zero);
    lithe_tensor_release(X2);
    lithe_tensor_release(Y2);
    return s;
}
BWD(b_layernorm) {
    (void)out;
    int64_t M = 0, N = 0;
    LITHE__TRY(ln_rows(x, node, in[0], &M, &N));
    lithe_tensor *t = NULL, *tg = NULL, *tb = NULL, *X2 = NULL, *dY2 = NULL;
    lithe_status s = new_f32(x, 2, (int64_t[]){M, N}, false, &t);
    if (s == LITHE_OK) s = new_f32(x, 1, (int64_t[]){N}, true, &tg);
    if (s == LITHE_OK) s = new_f32(x, 1, (int64_t[]){N}, true, &tb);
    if (s == LITHE_OK) s = as_rows(in[0], M, N, &X2);
    if (s == LITHE_OK) s = as_rows(dout[0], M, N, &dY2);
    if (s == LITHE_OK) s = lithe__op_layernorm_backward(x->be, dY2, X2, in[1], saved[0], saved[1], t, tg, tb);
    /* each becomes its input's gradient when that has none yet (no zeroing, no add) */
    if (s == LITHE_OK) s = lithe__gexec_grad_add(x, node, 0, t);
    if (s == LITHE_OK) s = lithe__gexec_grad_add(x, node, 1, tg);
    if (s == LITHE_OK && n_in > 2 && in[2]) s = lithe__gexec_grad_add(x, node, 2, tb);
    lithe_tensor_release(t);
    lithe_tensor_release(tg);
    lithe_tensor_release(tb);
    lithe_tensor_release(X2);
    lithe_tensor_release(dY2);
    return s;
}

/* BatchNormalization at inference: Y = (X - mean) * scale / sqrt(var + eps) + B over channel axis 1.
 * saved[0] = inv_std (1, C, 1, ...), saved[1] = xhat. Gradients flow to X, scale and B (mean and
 * var are running statistics, as in torch's eval mode). */
FWD(f_batchnorm) {
    (void)n_out;
    LITHE__TRY(need_inputs(x, node, in, n_in, 5));
    for (size_t k = 0; k < 5; k++) LITHE__TRY(need_float(x, node, in[k], k));
    lithe_tensor *X = in[0];
    if (X->ndim < 2) return fail(x, node, LITHE_ERR_SHAPE, "input must have a channel axis");
    int64_t C = X->shape[1], cshape[LITHE_MAX_DIMS];
    for (size_t k = 1; k < 5; k++)
        if (in[k]->numel != C) return fail(x, node, LITHE_ERR_SHAPE, "input %zu has %lld values for %lld channels", k, (long long)in[k]->numel, (long long)C);
    for (int d = 0; d < X->ndim; d++) cshape[d] = d == 1 ? C : 1;
    lithe_tensor *sc = NULL, *b = NULL, *mu = NULL, *var = NULL, *eps = NULL, *t = NULL;
    lithe_status s = lithe_tensor_reshape(in[1], X->ndim, cshape, &sc);
    if (s == LITHE_OK) s = lithe_tensor_reshape(in[2], X->ndim, cshape, &b);
    if (s == LITHE_OK) s = lithe_tensor_reshape(in[3], X->ndim, cshape, &mu);
    if (s == LITHE_OK) s = lithe_tensor_reshape(in[4], X->ndim, cshape, &var);
    if (s == LITHE_OK) s = new_f32(x, 1, (int64_t[]){1}, false, &eps);
    if (s == LITHE_OK) s = lithe__op_fill(x->be, eps, attr_f(NODE(x, node), "epsilon", 1e-5f));
    if (s == LITHE_OK) s = new_f32(x, X->ndim, cshape, false, &saved[0]);
    if (s == LITHE_OK) s = lithe__op_bcast_binary(x->be, LITHE__BIN_ADD, var, eps, saved[0]);
    if (s == LITHE_OK) s = lithe__op_unary(x->be, LITHE__UN_SQRT, saved[0], saved[0]);
    if (s == LITHE_OK) s = lithe__op_unary(x->be, LITHE__UN_RECIPROCAL, saved[0], saved[0]);
    if (s == LITHE_OK) s = lithe__gexec_like(x, X, false, &saved[1]);
    if (s == LITHE_OK) s = lithe__op_bcast_binary(x->be, LITHE__BIN_SUB, X, mu, saved[1]);
    if (s == LITHE_OK) s = lithe__op_bcast_binary(x->be, LITHE__BIN_MUL, saved[1], saved[0], saved[1]);
    if (s == LITHE_OK) s = lithe__gexec_like(x, X, false, &t);
    if (s == LITHE_OK) s = lithe__op_bcast_binary(x->be, LITHE__BIN_MUL, saved[1], sc, t);
    if (s == LITHE_OK) s = lithe__gexec_like(x, X, false, &out[0]);
    if (s == LITHE_OK) s = lithe__op_bcast_binary(x->be, LITHE__BIN_ADD, t, b, out[0]);
    lithe_tensor_release(sc);
    lithe_tensor_release(b);
    lithe_tensor_release(mu);
    lithe_tensor_release(var);
    lithe_tensor_release(eps);
    lithe_tensor_release(t);
    return s;
}
BWD(b_batchnorm) {
    UNUSED_BWD;
    lithe_tensor *dX = NULL, *dS = NULL, *dB = NULL, *sc = NULL, *ds4 = NULL, *db4 = NULL, *t = NULL;
    LITHE__TRY(lithe__gexec_grad(x, node, 0, &dX));
    LITHE__TRY(lithe__gexec_grad(x, node, 1, &dS));
    LITHE__TRY(lithe__gexec_grad(x, node, 2, &dB));
    lithe_tensor *X = in[0], *inv = saved[0], *xhat = saved[1];
    lithe_status s = lithe_tensor_reshape(in[1], X->ndim, inv->shape, &sc);
    /* dB += sum dY; dscale += sum dY * xhat; dX += dY * scale * inv_std */
    if (s == LITHE_OK && dB) s = lithe_tensor_reshape(dB, X->ndim, inv->shape, &db4);
    if (s == LITHE_OK && db4) s = lithe__op_reduce_to(x->be, dout[0], 1.0f, 1.0f, db4);
    if (s == LITHE_OK && dS) s = lithe_tensor_reshape(dS, X->ndim, inv->shape, &ds4);
    if (s == LITHE_OK && ds4) s = lithe__op_bcast_binary_backward(x->be, LITHE__BIN_MUL, xhat, ds4, NULL, dout[0], NULL, ds4);
    if (s == LITHE_OK && dX) {
        lithe_tensor *k = NULL;
        s = lithe__gexec_like(x, inv, false, &k);
        if (s == LITHE_OK) s = lithe__op_bcast_binary(x->be, LITHE__BIN_MUL, sc, inv, k);
        if (s == LITHE_OK) s = lithe__op_bcast_binary_backward(x->be, LITHE__BIN_MUL, X, k, NULL, dout[0], dX, NULL);
        lithe_tensor_release(k);
    }
    lithe_tensor_release(sc);
    lithe_tensor_release(ds4);
    lithe_tensor_release(db4);
    lithe_tensor_release(t);
    return s;
}
