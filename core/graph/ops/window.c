/* ONNX operators of the graph layer (core/graph/ops/): Conv, ConvTranspose, the pools, LeakyRelu. */
#include "ops.h"

/* ---- Conv, pooling ---- */

/* How a windowed node's pads are given (its auto_pad). */
typedef enum { PADS_GIVEN, PADS_SAME_UPPER, PADS_SAME_LOWER } pad_mode;

static lithe_status refuse(char *why, size_t cap, lithe_status st, const char *fmt, ...) LITHE__PRINTF(4, 5);
static lithe_status refuse(char *why, size_t cap, lithe_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, cap, fmt, ap);
    va_end(ap);
    return st;
}

/* A windowed node's (Conv, the pools) strides, dilations, pads and auto_pad, parsed and checked:
 * LITHE_OK, or what is wrong written to why. Needs no input shape, so the prepared Conv operator's
 * key (lithe__graph_prep_op, at prepare time) reads them through here too. */
static lithe_status window_params(const lithe__onnx_node *n, int64_t *stride, int64_t *pad, int64_t *dil,
                                  pad_mode *mode, char *why, size_t cap) {
    size_t k;
    const int64_t *v;
    stride[0] = stride[1] = dil[0] = dil[1] = 1;
    pad[0] = pad[1] = pad[2] = pad[3] = 0;
    if ((v = attr_ints(n, "strides", &k))) {
        if (k != 2) return refuse(why, cap, LITHE_ERR_UNSUPPORTED, "%zu strides (lithe runs 2-D windows)", k);
        stride[0] = v[0];
        stride[1] = v[1];
    }
    if ((v = attr_ints(n, "dilations", &k))) {
        if (k != 2) return refuse(why, cap, LITHE_ERR_UNSUPPORTED, "%zu dilations (lithe runs 2-D windows)", k);
        dil[0] = v[0];
        dil[1] = v[1];
    }
    if ((v = attr_ints(n, "pads", &k))) {
        if (k != 4) return refuse(why, cap, LITHE_ERR_UNSUPPORTED, "%zu pads (lithe runs 2-D windows)", k);
        for (int i = 0; i < 4; i++) pad[i] = v[i];
    }
    for (int i = 0; i < 2; i++)
        if (stride[i] < 1 || dil[i] < 1 || stride[i] > (1 << 20) || dil[i] > (1 << 20))
            return refuse(why, cap, LITHE_ERR_VALUE, "strides and dilations must be 1 .. 2^20");
    for (int i = 0; i < 4; i++)
        if (pad[i] < 0 || pad[i] > (1 << 20)) return refuse(why, cap, LITHE_ERR_VALUE, "pads must be 0 .. 2^20");
    const lithe__onnx_attr *ap = lithe__onnx_attr_get(n, "auto_pad");
    *mode = PADS_GIVEN;
    if (ap && ap->s && !strcmp(ap->s, "SAME_UPPER")) *mode = PADS_SAME_UPPER;
    else if (ap && ap->s && !strcmp(ap->s, "SAME_LOWER")) *mode = PADS_SAME_LOWER;
    else if (ap && ap->s && strcmp(ap->s, "NOTSET") && strcmp(ap->s, "VALID"))
        return refuse(why, cap, LITHE_ERR_UNSUPPORTED, "auto_pad '%s'", ap->s);
    return LITHE_OK;
}

static lithe_status window_attrs(lithe__gexec *x, size_t node, int64_t H, int64_t W, int64_t KH, int64_t KW,
                                 int64_t *stride, int64_t *pad, int64_t *dil, int64_t *OH, int64_t *OW, bool pool) {
    const lithe__onnx_node *n = NODE(x, node);
    pad_mode mode;
    lithe__gwin *wc = &x->g->node_win[node]; /* parsed in an earlier run (the attributes never change) */
    if (wc->ok) {
        memcpy(stride, wc->stride, sizeof wc->stride);
        memcpy(pad, wc->pad, sizeof wc->pad);
        memcpy(dil, wc->dil, sizeof wc->dil);
        mode = (pad_mode)wc->mode;
    } else {
        char why[128];
        lithe_status st = window_params(n, stride, pad, dil, &mode, why, sizeof why);
        if (st != LITHE_OK) return fail(x, node, st, "%s", why);
        memcpy(wc->stride, stride, sizeof wc->stride);
        memcpy(wc->pad, pad, sizeof wc->pad);
        memcpy(wc->dil, dil, sizeof wc->dil);
        wc->mode = (int)mode;
        wc->ok = true;
    }
    bool same = mode != PADS_GIVEN;
    bool ceil_mode = pool && attr_i(n, "ceil_mode", 0);
    int64_t in[2] = {H, W}, ks[2] = {KH, KW}, o[2];
    for (int i = 0; i < 2; i++) {
        int64_t span = dil[i] * (ks[i] - 1) + 1;
        if (same) {
            o[i] = (in[i] + stride[i] - 1) / stride[i];
            int64_t total = (o[i] - 1) * stride[i] + span - in[i];
            if (total < 0) total = 0;
            bool upper = mode == PADS_SAME_UPPER;
            pad[i] = upper ? total / 2 : total - total / 2;
            pad[i + 2] = total - pad[i];
            continue;
        }
        int64_t room = in[i] + pad[i] + pad[i + 2] - span;
        if (room < 0) return fail(x, node, LITHE_ERR_SHAPE, "the %lld-wide window does not fit the padded extent %lld", (long long)span, (long long)(in[i] + pad[i] + pad[i + 2]));
        o[i] = (ceil_mode ? (room + stride[i] - 1) / stride[i] : room / stride[i]) + 1;
        if (ceil_mode && (o[i] - 1) * stride[i] >= in[i] + pad[i]) o[i]--; /* the last window must start inside */
    }
    *OH = o[0];
    *OW = o[1];
    return LITHE_OK;
}

lithe_status conv_geometry(lithe__gexec *x, size_t node, lithe_tensor **in, lithe__conv2d *g) {
    const lithe_tensor *X = in[0], *W = in[1];
    if (x->g->node_fuse[node].kind == LITHE__FUSE_CONV || x->g->node_fuse[node].kind == LITHE__FUSE_CONV_ADD)
        node = x->g->node_fuse[node].first; /* the Conv's attrs */
    if (X->ndim != 4 || W->ndim != 4)
        return fail(x, node, LITHE_ERR_UNSUPPORTED, "lithe runs 2-D convolutions: X and W must be 4-D, got %d-D and %d-D",
                    X->ndim, W->ndim);
    g->N = X->shape[0];
    g->C = X->shape[1];
    g->H = X->shape[2];
    g->W = X->shape[3];
    g->M = W->shape[0];
    g->KH = W->shape[2];
    g->KW = W->shape[3];
    lithe__gwin *wc = &x->g->node_win[node];
    if (!wc->group_ok) wc->group = attr_i(NODE(x, node), "group", 1), wc->group_ok = true;
    g->group = wc->group;
    if (g->group < 1 || g->C % g->group || g->M % g->group || W->shape[1] != g->C / g->group)
        return fail(x, node, LITHE_ERR_SHAPE, "group %lld does not fit %lld input channels, %lld filters of %lld channels",
                    (long long)g->group, (long long)g->C, (long long)g->M, (long long)W->shape[1]);
    return window_attrs(x, node, g->H, g->W, g->KH, g->KW, g->stride, g->pad, g->dil, &g->OH, &g->OW, false);
}

/* Y = act(conv) (a NULL: Conv alone). */
lithe_status conv_forward(lithe__gexec *x, size_t node, lithe_tensor **in, size_t n_in, const lithe__act *a,
                          lithe_tensor **out) {
    LITHE__TRY(need_inputs(x, node, in, n_in, 2));
    for (size_t k = 0; k < n_in && k < 3; k++)
        if (in[k]) LITHE__TRY(need_float(x, node, in[k], k));
    lithe__conv2d g = {0};
    LITHE__TRY(conv_geometry(x, node, in, &g));
    lithe_tensor *b = n_in > 2 ? in[2] : NULL;
    if (b && b->numel != g.M) return fail(x, node, LITHE_ERR_SHAPE, "bias has %lld values for %lld filters", (long long)b->numel, (long long)g.M);
    LITHE__TRY(new_f32(x, 4, (int64_t[]){g.N, g.M, g.OH, g.OW}, false, &out[0]));
    if (!x->is_train && (!a || lithe__act_clamp(a, NULL, NULL))) {
        /* a backend's own operator, prepared for W and b (LITHE_XNNPACK), the activation as its clamp */
        lithe__prep_op op = {.kind = LITHE__PREP_CONV2D, .out_min = -INFINITY, .out_max = INFINITY, .conv = g};
        if (a) lithe__act_clamp(a, &op.out_min, &op.out_max);
        bool done = false;
        LITHE__TRY(lithe__run_prepared_op(x->be, x->is_train, &op, in[1], b, in[0], out[0], &done));
        if (done) return LITHE_OK;
    }
    return lithe__conv2d_w(x->be, x->is_train, &g, in[0], in[1], b, a, out[0]); /* W prepared at inference */
}
FWD(f_conv) {
    UNUSED_FWD;
    return conv_forward(x, node, in, n_in, NULL, out);
}

bool lithe__graph_prep_op(const lithe__onnx_node *n, const lithe_tensor *W, const lithe_tensor *bias, lithe__prep_op *op) {
    memset(op, 0, sizeof *op);
    op->out_min = -INFINITY;
    op->out_max = INFINITY;
    if (!strcmp(n->op_type, "Gemm")) { /* Y = A · Bᵀ + C, C (N,) */
        op->kind = LITHE__PREP_FC;
        return W->ndim == 2 && !attr_i(n, "transA", 0) && attr_i(n, "transB", 0) && attr_f(n, "alpha", 1.0f) == 1.0f &&
               (!bias || (attr_f(n, "beta", 1.0f) == 1.0f && bias->ndim == 1 && bias->shape[0] == W->shape[0]));
    }
    if (strcmp(n->op_type, "Conv") || W->ndim != 4) return false;
    op->kind = LITHE__PREP_CONV2D;
    lithe__conv2d *g = &op->conv;
    /* the attributes as conv_geometry will read them when the node runs (window_params' checks):
     * a node it refuses gets no operator; pads that depend on the input's size (SAME) none either */
    pad_mode mode;
    char why[128];
    if (window_params(n, g->stride, g->pad, g->dil, &mode, why, sizeof why) != LITHE_OK || mode != PADS_GIVEN)
        return false;
    g->group = attr_i(n, "group", 1);
    g->M = W->shape[0];
    if (g->group < 1 || g->M < g->group || g->M % g->group) return false; /* group <= M: C below fits */
    g->C = W->shape[1] * g->group;
    g->KH = W->shape[2];
    g->KW = W->shape[3];
    return !bias || bias->numel == g->M;
}
BWD(b_conv) {
    UNUSED_BWD;
    lithe__conv2d g = {0};
    LITHE__TRY(conv_geometry(x, node, in, &g));
    lithe_tensor *dX = NULL, *dW = NULL, *db = NULL;
    LITHE__TRY(lithe__gexec_grad(x, node, 0, &dX));
    LITHE__TRY(lithe__gexec_grad(x, node, 1, &dW));
    if (n_in > 2 && in[2]) LITHE__TRY(lithe__gexec_grad(x, node, 2, &db));
    return lithe__op_conv2d_backward(x->be, &g, in[0], in[1], dout[0], dX, dW, db);
}

static lithe_status pool_geometry(lithe__gexec *x, size_t node, const lithe_tensor *X, lithe__pool2d *g) {
    const lithe__onnx_node *n = NODE(x, node);
    if (X->ndim != 4) return fail(x, node, LITHE_ERR_UNSUPPORTED, "lithe pools 4-D (N, C, H, W) inputs, got %d-D", X->ndim);
    memset(g, 0, sizeof *g);
    g->N = X->shape[0];
    g->C = X->shape[1];
    g->H = X->shape[2];
    g->W = X->shape[3];
    if (!strcmp(n->op_type, "GlobalAveragePool") || !strcmp(n->op_type, "GlobalMaxPool")) {
        g->KH = g->H;
        g->KW = g->W;
        g->OH = g->OW = 1;
        g->stride[0] = g->stride[1] = g->dil[0] = g->dil[1] = 1;
        g->max = !strcmp(n->op_type, "GlobalMaxPool");
        if (!g->H || !g->W) return fail(x, node, LITHE_ERR_SHAPE, "empty spatial extent");
        return LITHE_OK;
    }
    size_t k;
    const int64_t *ks = attr_ints(n, "kernel_shape", &k);
    if (!ks || k != 2) return fail(x, node, LITHE_ERR_UNSUPPORTED, "kernel_shape must have 2 entries");
    if (ks[0] < 1 || ks[1] < 1 || ks[0] > (1 << 20) || ks[1] > (1 << 20)) return fail(x, node, LITHE_ERR_VALUE, "kernel_shape");
    g->KH = ks[0];
    g->KW = ks[1];
    g->max = !strcmp(n->op_type, "MaxPool");
    g->count_include_pad = attr_i(n, "count_include_pad", 0) != 0;
    LITHE__TRY(window_attrs(x, node, g->H, g->W, g->KH, g->KW, g->stride, g->pad, g->dil, &g->OH, &g->OW, true));
    for (int i = 0; i < 2; i++)
        if (g->pad[i] >= (i ? g->KW : g->KH) * g->dil[i] && g->max)
            return fail(x, node, LITHE_ERR_VALUE, "padding %lld is not smaller than the window", (long long)g->pad[i]);
    return LITHE_OK;
}

FWD(f_pool) {
    UNUSED_FWD;
    LITHE__TRY(need_inputs(x, node, in, n_in, 1));
    LITHE__TRY(need_float(x, node, in[0], 0));
    lithe__pool2d g = {0};
    LITHE__TRY(pool_geometry(x, node, in[0], &g));
    int64_t shape[4] = {g.N, g.C, g.OH, g.OW};
    LITHE__TRY(new_f32(x, 4, shape, false, &out[0]));
    /* the argmax indices only when a backward may read them (inference skips writing them) */
    if (g.max && x->keep_all) LITHE__TRY(lithe__gexec_alloc(x, x->be, LITHE_I32, 4, shape, false, &saved[0]));
    if (n_out > 1) return fail(x, node, LITHE_ERR_UNSUPPORTED, "MaxPool's Indices output");
    return lithe__op_pool2d(x->be, &g, in[0], out[0], saved[0]);
}
BWD(b_pool) {
    UNUSED_BWD;
    lithe_tensor *d = NULL;
    LITHE__TRY(lithe__gexec_grad(x, node, 0, &d));
    if (!d) return LITHE_OK;
    lithe__pool2d g = {0};
    LITHE__TRY(pool_geometry(x, node, in[0], &g));
    return lithe__op_pool2d_backward(x->be, &g, dout[0], saved[0], d);
}

/* ConvTranspose: the adjoint of a Conv whose input has Y's shape and whose output has X's, so it
 * runs on the conv2d primitives: forward = conv2d_backward's dX, backward dX = conv2d, dW =
 * conv2d_backward's dW with the roles of input and output swapped. X (N, C, H, W), W (C, M / group,
 * KH, KW) -> Y (N, M, OH, OW), OH = stride (H - 1) + output_padding + dil (KH - 1) + 1 - pads. */
static lithe_status convt_geometry(lithe__gexec *x, size_t node, lithe_tensor **in, lithe__conv2d *g) {
    const lithe__onnx_node *n = NODE(x, node);
    const lithe_tensor *X = in[0], *W = in[1];
    if (X->ndim != 4 || W->ndim != 4)
        return fail(x, node, LITHE_ERR_UNSUPPORTED, "lithe runs 2-D transposed convolutions: X and W must be 4-D");
    int64_t group = attr_i(n, "group", 1);
    if (group < 1 || X->shape[1] != W->shape[0] || W->shape[0] % group)
        return fail(x, node, LITHE_ERR_SHAPE, "W (%lld, %lld, ...) does not fit %lld input channels in %lld groups",
                    (long long)W->shape[0], (long long)W->shape[1], (long long)X->shape[1], (long long)group);
    size_t k = 0;
    const int64_t *v;
    int64_t stride[2], dil[2], pad[4], opad[2] = {0, 0};
    pad_mode mode;
    char why[128];
    lithe_status st = window_params(n, stride, pad, dil, &mode, why, sizeof why); /* Conv's checks */
    if (st != LITHE_OK) return fail(x, node, st, "%s", why);
    if (mode != PADS_GIVEN || attr_ints(n, "output_shape", &k))
        return fail(x, node, LITHE_ERR_UNSUPPORTED, "output_shape / SAME auto_pad (give pads and output_padding)");
    if ((v = attr_ints(n, "output_padding", &k))) {
        if (k != 2) return fail(x, node, LITHE_ERR_UNSUPPORTED, "%zu output_padding (lithe runs 2-D windows)", k);
        opad[0] = v[0], opad[1] = v[1];
    }
    for (int i = 0; i < 2; i++)
        if (opad[i] < 0 || opad[i] >= stride[i])
            return fail(x, node, LITHE_ERR_VALUE, "output_padding must be 0 .. stride - 1");
    memset(g, 0, sizeof *g);
    g->N = X->shape[0];
    g->M = X->shape[1]; /* the adjoint conv's filters: X's channels */
    g->C = W->shape[1] * group;
    g->KH = W->shape[2];
    g->KW = W->shape[3];
    g->group = group;
    g->OH = X->shape[2];
    g->OW = X->shape[3];
    g->H = stride[0] * (g->OH - 1) + opad[0] + dil[0] * (g->KH - 1) + 1 - pad[0] - pad[2];
    g->W = stride[1] * (g->OW - 1) + opad[1] + dil[1] * (g->KW - 1) + 1 - pad[1] - pad[3];
    if (g->H < 1 || g->W < 1 || g->OH < 1 || g->OW < 1) return fail(x, node, LITHE_ERR_SHAPE, "the output would be empty");
    memcpy(g->stride, stride, sizeof stride);
    memcpy(g->dil, dil, sizeof dil);
    memcpy(g->pad, pad, sizeof pad);
    return LITHE_OK;
}

FWD(f_convt) {
    UNUSED_FWD;
    LITHE__TRY(need_inputs(x, node, in, n_in, 2));
    for (size_t k = 0; k < n_in && k < 3; k++)
        if (in[k]) LITHE__TRY(need_float(x, node, in[k], k));
    lithe__conv2d g = {0};
    LITHE__TRY(convt_geometry(x, node, in, &g));
    lithe_tensor *b = n_in > 2 ? in[2] : NULL;
    if (b && b->numel != g.C) return fail(x, node, LITHE_ERR_SHAPE, "bias has %lld values for %lld outputs", (long long)b->numel, (long long)g.C);
    LITHE__TRY(new_f32(x, 4, (int64_t[]){g.N, g.C, g.H, g.W}, true, &out[0]));
    if (b) {
        lithe_tensor *b4 = NULL;
        LITHE__TRY(lithe_tensor_reshape(b, 4, (int64_t[]){1, g.C, 1, 1}, &b4));
        lithe_status s = lithe__op_broadcast_to(x->be, b4, 1.0f, 0.0f, out[0]);
        lithe_tensor_release(b4);
        LITHE__TRY(s);
    }
    return lithe__op_conv2d_backward(x->be, &g, out[0], in[1], in[0], out[0], NULL, NULL);
}
BWD(b_convt) {
    UNUSED_BWD;
    lithe__conv2d g = {0};
    LITHE__TRY(convt_geometry(x, node, in, &g));
    lithe_tensor *dX = NULL, *dW = NULL, *db = NULL;
    LITHE__TRY(lithe__gexec_grad(x, node, 0, &dX));
    LITHE__TRY(lithe__gexec_grad(x, node, 1, &dW));
    if (n_in > 2 && in[2]) LITHE__TRY(lithe__gexec_grad(x, node, 2, &db));
    if (dX) { /* dX += conv2d(dY, W) */
        lithe_tensor *t = NULL;
        LITHE__TRY(lithe__gexec_like(x, dX, false, &t));
        lithe_status s = lithe__op_conv2d(x->be, &g, dout[0], in[1], NULL, NULL, t);
        if (s == LITHE_OK) s = acc(x, dX, t);
        lithe_tensor_release(t);
        LITHE__TRY(s);
    }
    if (dW) LITHE__TRY(lithe__op_conv2d_backward(x->be, &g, dout[0], in[1], in[0], NULL, dW, NULL));
    if (db) {
        lithe_tensor *d4 = NULL;
        LITHE__TRY(lithe_tensor_reshape(db, 4, (int64_t[]){1, g.C, 1, 1}, &d4));
        lithe_status s = lithe__op_reduce_to(x->be, dout[0], 1.0f, 1.0f, d4);
        lithe_tensor_release(d4);
        LITHE__TRY(s);
    }
    return LITHE_OK;
}

/* LeakyRelu: Y = relu(X) - alpha relu(-X); saved[0] = relu(X), saved[1] = relu(-X). */
FWD(f_leaky) {
    UNUSED_FWD;
    LITHE__TRY(need_inputs(x, node, in, n_in, 1));
    LITHE__TRY(need_float(x, node, in[0], 0));
    lithe__act a = {0};
    a.kind = LITHE__ACT_RELU;
    float alpha = attr_f(NODE(x, node), "alpha", 0.01f);
    LITHE__TRY(lithe__gexec_like(x, in[0], false, &saved[0]));
    LITHE__TRY(lithe__gexec_like(x, in[0], false, &saved[1]));
    LITHE__TRY(lithe__op_act(x->be, &a, in[0], saved[0]));
    LITHE__TRY(lithe__op_unary(x->be, LITHE__UN_NEG, in[0], saved[1]));
    LITHE__TRY(lithe__op_act(x->be, &a, saved[1], saved[1]));
    LITHE__TRY(lithe__gexec_like(x, in[0], false, &out[0]));
    LITHE__TRY(lithe__op_copy(x->be, out[0], saved[0]));
    return lithe__op_axpby(x->be, -alpha, saved[1], 1.0f, out[0]);
}
BWD(b_leaky) {
    (void)n_in;
    (void)out;
    lithe_tensor *d = NULL, *t = NULL;
    LITHE__TRY(lithe__gexec_grad(x, node, 0, &d));
    if (!d) return LITHE_OK;
    lithe__act a = {0};
    a.kind = LITHE__ACT_RELU;
    float alpha = attr_f(NODE(x, node), "alpha", 0.01f);
    LITHE__TRY(lithe__gexec_like(x, d, false, &t));
    lithe_status s = lithe__op_act_backward(x->be, &a, dout[0], in[0], saved[0], t); /* dY (X > 0) */
    if (s == LITHE_OK) s = acc(x, d, t);
    if (s == LITHE_OK) s = lithe__op_act_backward(x->be, &a, dout[0], in[0], saved[1], t); /* dY (X < 0) */
    if (s == LITHE_OK) s = lithe__op_axpby(x->be, alpha, t, 1.0f, d);
    lithe_tensor_release(t);
    return s;
}
