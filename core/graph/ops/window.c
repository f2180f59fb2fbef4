/* ONNX operators of the graph layer (core/graph/ops/): Conv, ConvTranspose, the pools, LeakyRelu. */
#include "ops.h"

/* ---- Conv, pooling ---- */

/* How a windowed node's pads are given (its auto_pad). */
typedef enum { PADS_GIVEN, PADS_SAME_UPPER, PADS_SAME_LOWER, PADS_VALID } pad_mode;

static lithe_status refuse(char *why, size_t cap, lithe_status st, const char *fmt, ...) LITHE__PRINTF(4, 5);
static lithe_status refuse(char *why, size_t cap, lithe_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, cap, fmt, ap);
    va_end(ap);
    return st;
}

/* A windowed node's (Conv, the pools) strides, dilations, pads and auto_pad for `rank` spatial axes
 * (1 .. 3), parsed and checked: LITHE_OK, or what is wrong written to why. Needs no input shape, so
 * the prepared Conv operator's key (lithe__graph_prep_op, at prepare time) reads them through here
 * too. pad: [begin of each axis, end of each axis] as ONNX lists them. */
lithe_status window_nd(const lithe__onnx_node *n, int rank, int64_t *stride, int64_t *pad, int64_t *dil, int *mode,
                       char *why, size_t cap) {
    size_t k;
    const int64_t *v;
    for (int i = 0; i < rank; i++) stride[i] = dil[i] = 1, pad[i] = pad[i + rank] = 0;
    if ((v = attr_ints(n, "strides", &k))) {
        if (k != (size_t)rank) return refuse(why, cap, LITHE_ERR_UNSUPPORTED, "%zu strides for a %d-D window", k, rank);
        memcpy(stride, v, k * sizeof *v);
    }
    if ((v = attr_ints(n, "dilations", &k))) {
        if (k != (size_t)rank) return refuse(why, cap, LITHE_ERR_UNSUPPORTED, "%zu dilations for a %d-D window", k, rank);
        memcpy(dil, v, k * sizeof *v);
    }
    if ((v = attr_ints(n, "pads", &k))) {
        if (k != 2 * (size_t)rank) return refuse(why, cap, LITHE_ERR_UNSUPPORTED, "%zu pads for a %d-D window", k, rank);
        memcpy(pad, v, k * sizeof *v);
    }
    for (int i = 0; i < rank; i++)
        if (stride[i] < 1 || dil[i] < 1 || stride[i] > (1 << 20) || dil[i] > (1 << 20))
            return refuse(why, cap, LITHE_ERR_VALUE, "strides and dilations must be 1 .. 2^20");
    for (int i = 0; i < 2 * rank; i++)
        if (pad[i] < 0 || pad[i] > (1 << 20)) return refuse(why, cap, LITHE_ERR_VALUE, "pads must be 0 .. 2^20");
    const lithe__onnx_attr *ap = lithe__onnx_attr_get(n, "auto_pad");
    *mode = PADS_GIVEN;
    if (ap && ap->s && !strcmp(ap->s, "SAME_UPPER")) *mode = PADS_SAME_UPPER;
    else if (ap && ap->s && !strcmp(ap->s, "SAME_LOWER")) *mode = PADS_SAME_LOWER;
    else if (ap && ap->s && !strcmp(ap->s, "VALID")) *mode = PADS_VALID;
    else if (ap && ap->s && strcmp(ap->s, "NOTSET"))
        return refuse(why, cap, LITHE_ERR_UNSUPPORTED, "auto_pad '%s'", ap->s);
    if (*mode == PADS_VALID)
        for (int i = 0; i < 2 * rank; i++) pad[i] = 0; /* VALID: no padding, whatever pads says */
    return LITHE_OK;
}

/* The 2-D form (stride[2], pad[4], dil[2]) of a 1-D or 2-D window: a 1-D one is a 2-D one of height 1. */
static lithe_status window_params(const lithe__onnx_node *n, int rank, int64_t *stride, int64_t *pad, int64_t *dil,
                                  pad_mode *mode, char *why, size_t cap) {
    int64_t s[2], p[4], d[2];
    int m = PADS_GIVEN;
    lithe_status st = window_nd(n, rank, s, p, d, &m, why, cap);
    *mode = (pad_mode)m;
    if (st != LITHE_OK || rank == 2) {
        memcpy(stride, s, sizeof s), memcpy(pad, p, sizeof p), memcpy(dil, d, sizeof d);
        return st;
    }
    stride[0] = dil[0] = 1, pad[0] = pad[2] = 0;
    stride[1] = s[0], dil[1] = d[0], pad[1] = p[0], pad[3] = p[1];
    return LITHE_OK;
}

/* One axis of a window: its output extent o and (for SAME) its pads, from the input extent, kernel,
 * stride and dilation; ceil_mode for the pools. Fails with a message when the window does not fit. */
lithe_status window_axis(lithe__gexec *x, size_t node, int mode, bool ceil_mode, int64_t in, int64_t k, int64_t stride,
                         int64_t dil, int64_t *pb, int64_t *pe, int64_t *o) {
    int64_t span = dil * (k - 1) + 1;
    if (mode == PADS_SAME_UPPER || mode == PADS_SAME_LOWER) {
        *o = (in + stride - 1) / stride;
        int64_t total = (*o - 1) * stride + span - in;
        if (total < 0) total = 0;
        *pb = mode == PADS_SAME_UPPER ? total / 2 : total - total / 2;
        *pe = total - *pb;
        return LITHE_OK;
    }
    int64_t room = in + *pb + *pe - span;
    if (room < 0)
        return fail(x, node, LITHE_ERR_SHAPE, "the %lld-wide window does not fit the padded extent %lld", (long long)span,
                    (long long)(in + *pb + *pe));
    *o = (ceil_mode ? (room + stride - 1) / stride : room / stride) + 1;
    if (ceil_mode && (*o - 1) * stride >= in + *pb) (*o)--; /* the last window must start inside */
    return LITHE_OK;
}

static lithe_status window_attrs(lithe__gexec *x, size_t node, int rank, int64_t H, int64_t W, int64_t KH, int64_t KW,
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
        lithe_status st = window_params(n, rank, stride, pad, dil, &mode, why, sizeof why);
        if (st != LITHE_OK) return fail(x, node, st, "%s", why);
        memcpy(wc->stride, stride, sizeof wc->stride);
        memcpy(wc->pad, pad, sizeof wc->pad);
        memcpy(wc->dil, dil, sizeof wc->dil);
        wc->mode = (int)mode;
        wc->ok = true;
    }
    bool ceil_mode = pool && attr_i(n, "ceil_mode", 0);
    int64_t in[2] = {H, W}, ks[2] = {KH, KW}, o[2];
    for (int i = 0; i < 2; i++)
        LITHE__TRY(window_axis(x, node, mode, ceil_mode, in[i], ks[i], stride[i], dil[i], &pad[i], &pad[i + 2], &o[i]));
    *OH = o[0];
    *OW = o[1];
    return LITHE_OK;
}

/* A 4-D view (N, C, 1, L) of a 1-D window's (N, C, L) tensor (the tensor itself when 4-D; NULL for
 * NULL): the 2-D primitives run 1-D windows with a height of 1, no copy. */
lithe_status view4(const lithe_tensor *t, lithe_tensor **v) {
    *v = NULL;
    if (!t) return LITHE_OK;
    if (t->ndim == 4) {
        *v = lithe_tensor_retain((lithe_tensor *)t);
        return LITHE_OK;
    }
    if (t->ndim != 3) return lithe__fail(LITHE_ERR_SHAPE, "a window's tensor must be 3-D or 4-D, got %d-D", t->ndim);
    return lithe_tensor_reshape((lithe_tensor *)t, 4, (int64_t[]){t->shape[0], t->shape[1], 1, t->shape[2]}, v);
}

lithe_status conv_geometry(lithe__gexec *x, size_t node, lithe_tensor **in, lithe__conv2d *g) {
    const lithe_tensor *X = in[0], *W = in[1];
    if (x->g->node_fuse[node].kind == LITHE__FUSE_CONV || x->g->node_fuse[node].kind == LITHE__FUSE_CONV_ADD)
        node = x->g->node_fuse[node].first; /* the Conv's attrs */
    if ((X->ndim != 4 && X->ndim != 3) || W->ndim != X->ndim)
        return fail(x, node, LITHE_ERR_SHAPE, "X and W must both be 3-D (1-D Conv), 4-D or 5-D, got %d-D and %d-D",
                    X->ndim, W->ndim);
    bool one = X->ndim == 3; /* 1-D: a 2-D convolution of height 1 */
    g->N = X->shape[0];
    g->C = X->shape[1];
    g->H = one ? 1 : X->shape[2];
    g->W = X->shape[X->ndim - 1];
    g->M = W->shape[0];
    g->KH = one ? 1 : W->shape[2];
    g->KW = W->shape[W->ndim - 1];
    lithe__gwin *wc = &x->g->node_win[node];
    if (!wc->group_ok) wc->group = attr_i(NODE(x, node), "group", 1), wc->group_ok = true;
    g->group = wc->group;
    if (g->group < 1 || g->C % g->group || g->M % g->group || W->shape[1] != g->C / g->group)
        return fail(x, node, LITHE_ERR_SHAPE, "group %lld does not fit %lld input channels, %lld filters of %lld channels",
                    (long long)g->group, (long long)g->C, (long long)g->M, (long long)W->shape[1]);
    return window_attrs(x, node, one ? 1 : 2, g->H, g->W, g->KH, g->KW, g->stride, g->pad, g->dil, &g->OH, &g->OW, false);
}

/* Y = act(conv) (a NULL: Conv alone). */
static lithe_status conv_forward_w(lithe__gexec *x, size_t node, lithe_tensor **in, size_t n_in, const lithe__act *a,
                                   lithe_tensor **out, bool lora);

/* With a LoRA adapter on W: the node runs on a temporary W + s·B·A (core/graph/graph_lora.c). */
lithe_status conv_forward(lithe__gexec *x, size_t node, lithe_tensor **in, size_t n_in, const lithe__act *a,
                          lithe_tensor **out) {
    LITHE__TRY(need_inputs(x, node, in, n_in, 2));
    for (size_t k = 0; k < n_in && k < 3; k++)
        if (in[k]) LITHE__TRY(need_float(x, node, in[k], k));
    lithe__lora_ad ad;
    bool lora = false;
    LITHE__TRY(lithe__graph_lora_of(x, node, 1, &ad, &lora));
    if (!lora) return conv_forward_w(x, node, in, n_in, a, out, false);
    if (in[0]->ndim == 5) return fail(x, node, LITHE_ERR_UNSUPPORTED, "a LoRA adapter on a 3-D Conv");
    lithe_tensor *in2[3] = {in[0], NULL, n_in > 2 ? in[2] : NULL};
    LITHE__TRY(lithe__graph_lora_weight(x, &ad, in[1], &in2[1]));
    lithe_status s = conv_forward_w(x, node, in2, n_in < 3 ? n_in : 3, a, out, true);
    lithe_tensor_release(in2[1]);
    return s;
}

static lithe_status conv_forward_w(lithe__gexec *x, size_t node, lithe_tensor **in, size_t n_in, const lithe__act *a,
                                   lithe_tensor **out, bool lora) {
    if (in[0]->ndim == 5) return conv3d_forward(x, node, in, n_in, a, out);
    lithe__conv2d g = {0};
    LITHE__TRY(conv_geometry(x, node, in, &g));
    lithe_tensor *b = n_in > 2 ? in[2] : NULL;
    if (b && b->numel != g.M) return fail(x, node, LITHE_ERR_SHAPE, "bias has %lld values for %lld filters", (long long)b->numel, (long long)g.M);
    if (in[0]->ndim == 3) { /* 1-D: the 2-D convolution of height 1, on 4-D views */
        LITHE__TRY(new_f32(x, 3, (int64_t[]){g.N, g.M, g.OW}, false, &out[0]));
        lithe_tensor *X4 = NULL, *W4 = NULL, *Y4 = NULL;
        lithe_status s = view4(in[0], &X4);
        if (s == LITHE_OK) s = view4(in[1], &W4);
        if (s == LITHE_OK) s = view4(out[0], &Y4);
        if (s == LITHE_OK) s = lithe__conv2d_w(x->be, x->is_train, &g, X4, W4, b, a, Y4);
        lithe_tensor_release(X4);
        lithe_tensor_release(W4);
        lithe_tensor_release(Y4);
        return s;
    }
    LITHE__TRY(new_f32(x, 4, (int64_t[]){g.N, g.M, g.OH, g.OW}, false, &out[0]));
    if (!x->is_train && !lora) {
        /* a backend's own operator, prepared for W and b (LITHE_XNNPACK), the activation as its clamp
         * (another one, a fused HardSwish or Sigmoid: the act primitive after it, as the unfused pair) */
        bool clamp = !a || lithe__act_clamp(a, NULL, NULL);
        lithe__prep_op op = {.kind = LITHE__PREP_CONV2D, .out_min = -INFINITY, .out_max = INFINITY, .conv = g};
        if (a && clamp) lithe__act_clamp(a, &op.out_min, &op.out_max);
        bool done = false;
        LITHE__TRY(lithe__run_prepared_op(x->be, x->is_train, &op, in[1], b, in[0], out[0], &done));
        if (done) return clamp ? LITHE_OK : lithe__op_act(x->be, a, out[0], out[0]);
    }
    return lithe__conv2d_w(x->be, x->is_train || lora, &g, in[0], in[1], b, a, out[0]); /* W prepared at inference */
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
    if (window_params(n, 2, g->stride, g->pad, g->dil, &mode, why, sizeof why) != LITHE_OK ||
        (mode != PADS_GIVEN && mode != PADS_VALID))
        return false;
    g->group = attr_i(n, "group", 1);
    g->M = W->shape[0];
    if (g->group < 1 || g->M < g->group || g->M % g->group) return false; /* group <= M: C below fits */
    g->C = W->shape[1] * g->group;
    g->KH = W->shape[2];
    g->KW = W->shape[3];
    return !bias || bias->numel == g->M;
}
/* The data gradient for conv2d_backward / pool2d_backward: made now (fresh) it is left unzeroed for
 * the op to write (*assign) where the backend does so (ops.grad_assign), else zeroed for its adds. */
static lithe_status grad_dx(lithe__gexec *x, size_t node, bool can, lithe_tensor **d, bool *assign) {
    bool fresh = false;
    *assign = false;
    LITHE__TRY(lithe__gexec_grad_fresh(x, node, 0, d, &fresh));
    if (!fresh) return LITHE_OK;
    *assign = can && x->be->ops->grad_assign;
    return *assign ? LITHE_OK : lithe__op_fill(x->be, *d, 0.0f);
}

BWD(b_conv) {
    UNUSED_BWD;
    if (in[0]->ndim == 5) return conv3d_backward(x, node, in, n_in, dout[0]);
    lithe__conv2d g = {0};
    LITHE__TRY(conv_geometry(x, node, in, &g));
    lithe_tensor *dX = NULL, *dW = NULL, *db = NULL;
    LITHE__TRY(grad_dx(x, node, true, &dX, &g.assign_dx));
    LITHE__TRY(lithe__gexec_grad(x, node, 1, &dW));
    if (n_in > 2 && in[2]) LITHE__TRY(lithe__gexec_grad(x, node, 2, &db));
    if (g.assign_dx && (dX == dW || dX == db)) { /* X is also W or b (one gradient): the op adds into zeros */
        g.assign_dx = false;
        LITHE__TRY(lithe__op_fill(x->be, dX, 0.0f));
    }
    /* a LoRA adapter: W + s·B·A again, and its gradient in a temporary, then into A's and B's */
    lithe__lora_ad ad;
    bool lora = false;
    lithe_tensor *Wt = NULL, *dWt = NULL;
    LITHE__TRY(lithe__graph_lora_of(x, node, 1, &ad, &lora));
    lithe_status s = lora ? lithe__graph_lora_weight(x, &ad, in[1], &Wt) : LITHE_OK;
    if (s == LITHE_OK && lora) s = lithe__gexec_like(x, in[1], true, &dWt);
    lithe_tensor *v[5] = {0}; /* X, W, dY, dX, dW as 4-D views (1-D: height 1) */
    const lithe_tensor *t[5] = {in[0], lora ? Wt : in[1], dout[0], dX, lora ? dWt : dW};
    for (int k = 0; k < 5 && s == LITHE_OK; k++) s = view4(t[k], &v[k]);
    if (s == LITHE_OK) s = lithe__op_conv2d_backward(x->be, &g, v[0], v[1], v[2], v[3], v[4], db);
    for (int k = 0; k < 5; k++) lithe_tensor_release(v[k]);
    if (s == LITHE_OK && lora) s = lithe__graph_lora_fold(x, &ad, dWt);
    if (s == LITHE_OK && lora && dW) s = lithe__op_axpby(x->be, 1.0f, dWt, 1.0f, dW); /* a thawed base trains too */
    lithe_tensor_release(Wt);
    lithe_tensor_release(dWt);
    return s;
}

lithe_status pool_geometry(lithe__gexec *x, size_t node, const lithe_tensor *X, lithe__pool2d *g) {
    const lithe__onnx_node *n = NODE(x, node);
    if (X->ndim != 4 && X->ndim != 3)
        return fail(x, node, LITHE_ERR_SHAPE, "lithe pools (N, C, L), (N, C, H, W) or (N, C, D, H, W) inputs, got %d-D", X->ndim);
    memset(g, 0, sizeof *g);
    bool one = X->ndim == 3; /* 1-D: a 2-D pool of height 1 */
    g->N = X->shape[0];
    g->C = X->shape[1];
    g->H = one ? 1 : X->shape[2];
    g->W = X->shape[X->ndim - 1];
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
    if (!ks || k != (size_t)X->ndim - 2)
        return fail(x, node, LITHE_ERR_SHAPE, "kernel_shape must have %d entries for a %d-D input", X->ndim - 2, X->ndim);
    for (size_t i = 0; i < k; i++)
        if (ks[i] < 1 || ks[i] > (1 << 20)) return fail(x, node, LITHE_ERR_VALUE, "kernel_shape outside 1 .. 2^20");
    g->KH = one ? 1 : ks[0];
    g->KW = ks[k - 1];
    g->max = !strcmp(n->op_type, "MaxPool");
    g->count_include_pad = attr_i(n, "count_include_pad", 0) != 0;
    LITHE__TRY(window_attrs(x, node, one ? 1 : 2, g->H, g->W, g->KH, g->KW, g->stride, g->pad, g->dil, &g->OH, &g->OW, true));
    for (int i = 0; i < 2; i++)
        if (g->pad[i] >= (i ? g->KW : g->KH) * g->dil[i] && g->max)
            return fail(x, node, LITHE_ERR_VALUE, "padding %lld is not smaller than the window", (long long)g->pad[i]);
    return LITHE_OK;
}

/* Whether node's backward (a fused Conv + Relu, or the max pool alone reading its output, as fuse.c
 * marked them; Y the Conv's output, the pool's X) leaves the Relu's backward to the pool: the pool
 * writes the index -1 where its output is <= 0, which routes no dY there, exactly where the Relu's
 * backward would zero the routed one (its output is Y at the index: the same test, NaN passing), and
 * 0 stays at the positions no output chose either way. Only on a backend that has relu_pool, and
 * for the 2-D pools (pool3d keeps every index). */
bool lithe__pool_relu(const lithe__gexec *x, size_t node, const lithe_tensor *Y) {
    return x->g->node_win[node].relu_pool && x->be->ops->relu_pool && Y->ndim != 5;
}

FWD(f_pool) {
    UNUSED_FWD;
    LITHE__TRY(need_inputs(x, node, in, n_in, 1));
    LITHE__TRY(need_float(x, node, in[0], 0));
    if (n_out > 1) return fail(x, node, LITHE_ERR_UNSUPPORTED, "MaxPool's Indices output");
    if (in[0]->ndim == 5) return pool3d_forward(x, node, in[0], out, saved);
    lithe__pool2d g = {0};
    LITHE__TRY(pool_geometry(x, node, in[0], &g));
    int64_t shape[4] = {g.N, g.C, g.OH, g.OW};
    if (in[0]->ndim == 3) LITHE__TRY(new_f32(x, 3, (int64_t[]){g.N, g.C, g.OW}, false, &out[0]));
    else LITHE__TRY(new_f32(x, 4, shape, false, &out[0]));
    /* the argmax indices only when a backward may read them (inference skips writing them) */
    if (g.max && x->keep_all) LITHE__TRY(lithe__gexec_alloc(x, x->be, LITHE_I32, 4, shape, false, &saved[0]));
    g.relu = saved[0] && lithe__pool_relu(x, node, in[0]);
    lithe_tensor *X4 = NULL, *Y4 = NULL;
    lithe_status s = view4(in[0], &X4);
    if (s == LITHE_OK) s = view4(out[0], &Y4);
    if (s == LITHE_OK) s = lithe__op_pool2d(x->be, &g, X4, Y4, saved[0]);
    lithe_tensor_release(X4);
    lithe_tensor_release(Y4);
    return s;
}
BWD(b_pool) {
    UNUSED_BWD;
    lithe_tensor *d = NULL;
    bool assign = false;
    LITHE__TRY(grad_dx(x, node, in[0]->ndim != 5, &d, &assign));
    if (!d) return LITHE_OK;
    if (in[0]->ndim == 5) return pool3d_backward(x, node, in[0], dout[0], saved, d);
    lithe__pool2d g = {0};
    LITHE__TRY(pool_geometry(x, node, in[0], &g));
    g.assign = assign;
    lithe_tensor *dY4 = NULL, *dX4 = NULL;
    lithe_status s = view4(dout[0], &dY4);
    if (s == LITHE_OK) s = view4(d, &dX4);
    if (s == LITHE_OK) s = lithe__op_pool2d_backward(x->be, &g, dY4, saved[0], dX4);
    lithe_tensor_release(dY4);
    lithe_tensor_release(dX4);
    return s;
}

/* ConvTranspose: the adjoint of a Conv whose input has Y's shape and whose output has X's, so it
 * runs on the conv2d primitives: forward = conv2d_backward's dX, backward dX = conv2d, dW =
 * conv2d_backward's dW with the roles of input and output swapped. X (N, C, H, W), W (C, M / group,
 * KH, KW) -> Y (N, M, OH, OW), OH = stride (H - 1) + output_padding + dil (KH - 1) + 1 - pads. */
static lithe_status convt_geometry(lithe__gexec *x, size_t node, lithe_tensor **in, lithe__conv2d *g) {
    const lithe__onnx_node *n = NODE(x, node);
    const lithe_tensor *X = in[0], *W = in[1];
    if ((X->ndim != 4 && X->ndim != 3) || W->ndim != X->ndim)
        return fail(x, node, LITHE_ERR_UNSUPPORTED, "lithe runs 1-D and 2-D transposed convolutions: X and W must both be 3-D or 4-D, got %d-D and %d-D",
                    X->ndim, W->ndim);
    int rank = X->ndim - 2;
    int64_t group = attr_i(n, "group", 1);
    if (group < 1 || X->shape[1] != W->shape[0] || W->shape[0] % group)
        return fail(x, node, LITHE_ERR_SHAPE, "W (%lld, %lld, ...) does not fit %lld input channels in %lld groups",
                    (long long)W->shape[0], (long long)W->shape[1], (long long)X->shape[1], (long long)group);
    size_t k = 0;
    const int64_t *v;
    int64_t stride[2], dil[2], pad[4], opad[2] = {0, 0};
    pad_mode mode;
    char why[128];
    lithe_status st = window_params(n, rank, stride, pad, dil, &mode, why, sizeof why); /* Conv's checks */
    if (st != LITHE_OK) return fail(x, node, st, "%s", why);
    if ((mode != PADS_GIVEN && mode != PADS_VALID) || attr_ints(n, "output_shape", &k))
        return fail(x, node, LITHE_ERR_UNSUPPORTED, "output_shape / SAME auto_pad (give pads and output_padding)");
    if ((v = attr_ints(n, "output_padding", &k))) {
        if (k != (size_t)rank) return fail(x, node, LITHE_ERR_UNSUPPORTED, "%zu output_padding for a %d-D window", k, rank);
        opad[0] = rank == 1 ? 0 : v[0], opad[1] = v[k - 1];
    }
    for (int i = 0; i < 2; i++)
        if (opad[i] < 0 || opad[i] >= stride[i])
            return fail(x, node, LITHE_ERR_VALUE, "output_padding must be 0 .. stride - 1");
    memset(g, 0, sizeof *g);
    g->N = X->shape[0];
    g->M = X->shape[1]; /* the adjoint conv's filters: X's channels */
    g->C = W->shape[1] * group;
    g->KH = rank == 1 ? 1 : W->shape[2];
    g->KW = W->shape[W->ndim - 1];
    g->group = group;
    g->OH = rank == 1 ? 1 : X->shape[2];
    g->OW = X->shape[X->ndim - 1];
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
    if (in[0]->ndim == 5) return convt3d_forward(x, node, in, n_in, out);
    lithe__conv2d g = {0};
    LITHE__TRY(convt_geometry(x, node, in, &g));
    lithe_tensor *b = n_in > 2 ? in[2] : NULL;
    if (b && b->numel != g.C) return fail(x, node, LITHE_ERR_SHAPE, "bias has %lld values for %lld outputs", (long long)b->numel, (long long)g.C);
    if (in[0]->ndim == 3) LITHE__TRY(new_f32(x, 3, (int64_t[]){g.N, g.C, g.W}, true, &out[0]));
    else LITHE__TRY(new_f32(x, 4, (int64_t[]){g.N, g.C, g.H, g.W}, true, &out[0]));
    lithe_tensor *X4 = NULL, *W4 = NULL, *Y4 = NULL, *b4 = NULL;
    lithe_status s = view4(in[0], &X4);
    if (s == LITHE_OK) s = view4(in[1], &W4);
    if (s == LITHE_OK) s = view4(out[0], &Y4);
    if (s == LITHE_OK && b) s = lithe_tensor_reshape(b, 4, (int64_t[]){1, g.C, 1, 1}, &b4);
    if (s == LITHE_OK && b) s = lithe__op_broadcast_to(x->be, b4, 1.0f, 0.0f, Y4);
    if (s == LITHE_OK) s = lithe__op_conv2d_backward(x->be, &g, Y4, W4, X4, Y4, NULL, NULL);
    lithe_tensor_release(X4);
    lithe_tensor_release(W4);
    lithe_tensor_release(Y4);
    lithe_tensor_release(b4);
    return s;
}
BWD(b_convt) {
    UNUSED_BWD;
    if (in[0]->ndim == 5) return convt3d_backward(x, node, in, n_in, dout[0]);
    lithe__conv2d g = {0};
    LITHE__TRY(convt_geometry(x, node, in, &g));
    lithe_tensor *dX = NULL, *dW = NULL, *db = NULL;
    LITHE__TRY(lithe__gexec_grad(x, node, 0, &dX));
    LITHE__TRY(lithe__gexec_grad(x, node, 1, &dW));
    if (n_in > 2 && in[2]) LITHE__TRY(lithe__gexec_grad(x, node, 2, &db));
    lithe_tensor *v[5] = {0}, *t = NULL, *t4 = NULL, *d4 = NULL; /* X, W, dY, dW, dX as 4-D views (1-D: height 1) */
    const lithe_tensor *src[5] = {in[0], in[1], dout[0], dW, dX};
    lithe_status s = LITHE_OK;
    for (int k = 0; k < 5 && s == LITHE_OK; k++) s = view4(src[k], &v[k]);
    if (s == LITHE_OK && dX) { /* dX += conv2d(dY, W) */
        s = lithe__gexec_like(x, dX, false, &t);
        if (s == LITHE_OK) s = view4(t, &t4);
        if (s == LITHE_OK) s = lithe__op_conv2d(x->be, &g, v[2], v[1], NULL, NULL, t4);
        if (s == LITHE_OK) s = acc(x, dX, t);
    }
    if (s == LITHE_OK && dW) s = lithe__op_conv2d_backward(x->be, &g, v[2], v[1], v[0], NULL, v[3], NULL);
    if (s == LITHE_OK && db) s = lithe_tensor_reshape(db, 4, (int64_t[]){1, g.C, 1, 1}, &d4);
    if (s == LITHE_OK && db) s = lithe__op_reduce_to(x->be, v[2], 1.0f, 1.0f, d4);
    for (int k = 0; k < 5; k++) lithe_tensor_release(v[k]);
    lithe_tensor_release(t);
    lithe_tensor_release(t4);
    lithe_tensor_release(d4);
    return s;
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
