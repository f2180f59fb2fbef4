/* ONNX operators of the graph layer (core/graph/ops/): the 3-D forms of Conv, MaxPool,
 * AveragePool, GlobalMaxPool and GlobalAveragePool, on the 2-D primitives (window.c's 2-D and 1-D
 * forms dispatch here for 5-D inputs).
 *
 * Conv 3-D is a sum over the kernel's depth of 2-D convolutions: Y[:, :, od] = sum over kd of
 * conv2d(X[:, :, od sd - pd + kd dd], W[:, :, kd]) (+ b). The depth slices are made contiguous by
 * one transposed copy of X to (D, N, C, H, W) and of W to (KD, M, C / group, KH, KW), so each term
 * is one conv2d call on a slice and each backward term one conv2d_backward (which accumulates).
 * Chosen over an im2col lowering because it reuses the backends' tuned 2-D convolution (and its
 * backward) unchanged and needs no KD-times-larger column buffer; the cost is OD x KD calls.
 *
 * The pools are separable: a max (average) over a D x H x W window is the max (average) over D
 * of the max (average) over H x W, and the in-bounds count that divides an average factorises per
 * axis, so a 3-D pool is pool2d over (H, W) on X viewed as (N, C D, H, W), then pool2d over D on
 * that viewed as (N C, 1, D, OH OW): two calls, no copies. */
#include "ops.h"

/* The depth, height, width of a 3-D window: kernel k, stride s, dilation d, pads p (ONNX order:
 * begins, then ends), and the output extents o, from the node's attributes. */
typedef struct {
    int64_t k[3], s[3], d[3], p[6], o[3];
} win3;

static lithe_status win3_of(lithe__gexec *x, size_t node, const int64_t *in, const int64_t *ks, bool pool, win3 *w) {
    char why[128];
    int mode = 0;
    lithe_status st = window_nd(NODE(x, node), 3, w->s, w->p, w->d, &mode, why, sizeof why);
    if (st != LITHE_OK) return fail(x, node, st, "%s", why);
    bool ceil_mode = pool && attr_i(NODE(x, node), "ceil_mode", 0);
    for (int i = 0; i < 3; i++) {
        w->k[i] = ks[i];
        LITHE__TRY(window_axis(x, node, mode, ceil_mode, in[i], ks[i], w->s[i], w->d[i], &w->p[i], &w->p[i + 3], &w->o[i]));
    }
    return LITHE_OK;
}

/* t (5-D, contiguous) copied with its axes permuted: out[i0, .., i4] = t[i_perm...], out's axis a
 * being t's axis perm[a]; out is a new contiguous tensor. */
static lithe_status permuted(lithe__gexec *x, lithe_tensor *t, const int *perm, lithe_tensor **out) {
    int64_t st[5], shape[5], vst[5];
    contiguous_strides(5, t->shape, st);
    for (int a = 0; a < 5; a++) shape[a] = t->shape[perm[a]], vst[a] = st[perm[a]];
    lithe_tensor *v = NULL;
    LITHE__TRY(view(t, 5, shape, vst, 0, &v));
    lithe_status s = new_f32(x, 5, shape, false, out);
    if (s == LITHE_OK) s = lithe__op_copy(x->be, *out, v);
    lithe_tensor_release(v);
    return s;
}
static const int TO_DEPTH_FIRST[5] = {2, 0, 1, 3, 4}; /* (N, C, D, H, W) -> (D, N, C, H, W) */
static const int FROM_DEPTH_FIRST[5] = {1, 2, 0, 3, 4};

/* The 4-D slice i of a contiguous (A, N, C, H, W) tensor: (N, C, H, W). */
static lithe_status slice4(lithe_tensor *t, int64_t i, lithe_tensor **out) {
    int64_t st[4], per = t->numel / t->shape[0];
    contiguous_strides(4, t->shape + 1, st);
    return view(t, 4, t->shape + 1, st, i * per, out);
}

static lithe_status conv3d_geometry(lithe__gexec *x, size_t node, lithe_tensor **in, lithe__conv2d *g, win3 *w) {
    const lithe_tensor *X = in[0], *W = in[1];
    if (x->g->node_fuse[node].kind == LITHE__FUSE_CONV || x->g->node_fuse[node].kind == LITHE__FUSE_CONV_ADD)
        node = x->g->node_fuse[node].first; /* the Conv's attrs */
    if (W->ndim != 5) return fail(x, node, LITHE_ERR_SHAPE, "a 3-D Conv's X and W must be 5-D, W is %d-D", W->ndim);
    int64_t group = attr_i(NODE(x, node), "group", 1);
    if (group < 1 || X->shape[1] % group || W->shape[0] % group || W->shape[1] != X->shape[1] / group)
        return fail(x, node, LITHE_ERR_SHAPE, "group %lld does not fit %lld input channels, %lld filters of %lld channels",
                    (long long)group, (long long)X->shape[1], (long long)W->shape[0], (long long)W->shape[1]);
    LITHE__TRY(win3_of(x, node, X->shape + 2, W->shape + 2, false, w));
    *g = (lithe__conv2d){.N = X->shape[0], .C = X->shape[1], .H = X->shape[3], .W = X->shape[4], .M = W->shape[0],
                         .KH = W->shape[3], .KW = W->shape[4], .OH = w->o[1], .OW = w->o[2], .group = group,
                         .stride = {w->s[1], w->s[2]}, .pad = {w->p[1], w->p[2], w->p[4], w->p[5]},
                         .dil = {w->d[1], w->d[2]}};
    return LITHE_OK;
}

/* The input depth that output depth od reads at kernel depth kd, or -1 (padding). */
static int64_t depth_in(const win3 *w, int64_t D, int64_t od, int64_t kd) {
    int64_t id = od * w->s[0] - w->p[0] + kd * w->d[0];
    return id >= 0 && id < D ? id : -1;
}

lithe_status conv3d_forward(lithe__gexec *x, size_t node, lithe_tensor **in, size_t n_in, const lithe__act *a,
                            lithe_tensor **out) {
    lithe__conv2d g;
    win3 w;
    LITHE__TRY(conv3d_geometry(x, node, in, &g, &w));
    lithe_tensor *b = n_in > 2 ? in[2] : NULL;
    if (b && b->numel != g.M) return fail(x, node, LITHE_ERR_SHAPE, "bias has %lld values for %lld filters", (long long)b->numel, (long long)g.M);
    int64_t D = in[0]->shape[2], OD = w.o[0];
    lithe_tensor *XT = NULL, *WT = NULL, *YT = NULL, *tmp = NULL, *xs = NULL, *ws = NULL, *ys = NULL, *b5 = NULL;
    lithe_status s = permuted(x, in[0], TO_DEPTH_FIRST, &XT);
    if (s == LITHE_OK) s = permuted(x, in[1], TO_DEPTH_FIRST, &WT);
    if (s == LITHE_OK) s = new_f32(x, 5, (int64_t[]){OD, g.N, g.M, g.OH, g.OW}, true, &YT);
    if (s == LITHE_OK) s = new_f32(x, 4, (int64_t[]){g.N, g.M, g.OH, g.OW}, false, &tmp);
    for (int64_t od = 0; od < OD && s == LITHE_OK; od++)
        for (int64_t kd = 0; kd < w.k[0] && s == LITHE_OK; kd++) {
            int64_t id = depth_in(&w, D, od, kd);
            if (id < 0) continue;
            s = slice4(XT, id, &xs);
            if (s == LITHE_OK) s = slice4(WT, kd, &ws);
            if (s == LITHE_OK) s = slice4(YT, od, &ys);
            if (s == LITHE_OK) s = lithe__op_conv2d(x->be, &g, xs, ws, NULL, NULL, tmp);
            if (s == LITHE_OK) s = lithe__op_axpby(x->be, 1.0f, tmp, 1.0f, ys);
            lithe_tensor_release(xs), lithe_tensor_release(ws), lithe_tensor_release(ys);
            xs = ws = ys = NULL;
        }
    lithe_tensor_release(tmp);
    tmp = NULL;
    if (s == LITHE_OK) s = permuted(x, YT, FROM_DEPTH_FIRST, &out[0]);
    if (s == LITHE_OK && b) s = lithe_tensor_reshape(b, 5, (int64_t[]){1, g.M, 1, 1, 1}, &b5);
    if (s == LITHE_OK && b) s = lithe__op_broadcast_to(x->be, b5, 1.0f, 1.0f, out[0]);
    if (s == LITHE_OK && a) s = lithe__op_act(x->be, a, out[0], out[0]);
    lithe_tensor_release(XT), lithe_tensor_release(WT), lithe_tensor_release(YT), lithe_tensor_release(b5);
    return s;
}

/* dst += src permuted back from depth-first (src (D, N, C, H, W), dst (N, C, D, H, W)). */
static lithe_status acc_from_depth_first(lithe__gexec *x, lithe_tensor *dst, lithe_tensor *src) {
    if (!dst) return LITHE_OK;
    lithe_tensor *t = NULL;
    lithe_status s = permuted(x, src, FROM_DEPTH_FIRST, &t);
    if (s == LITHE_OK) s = acc(x, dst, t);
    lithe_tensor_release(t);
    return s;
}

lithe_status conv3d_backward(lithe__gexec *x, size_t node, lithe_tensor **in, size_t n_in, lithe_tensor *dY) {
    lithe__conv2d g;
    win3 w;
    LITHE__TRY(conv3d_geometry(x, node, in, &g, &w));
    lithe_tensor *dX = NULL, *dW = NULL, *db = NULL;
    LITHE__TRY(lithe__gexec_grad(x, node, 0, &dX));
    LITHE__TRY(lithe__gexec_grad(x, node, 1, &dW));
    if (n_in > 2 && in[2]) LITHE__TRY(lithe__gexec_grad(x, node, 2, &db));
    int64_t D = in[0]->shape[2], OD = w.o[0];
    lithe_tensor *XT = NULL, *WT = NULL, *dYT = NULL, *dXT = NULL, *dWT = NULL, *b5 = NULL;
    lithe_tensor *xs = NULL, *ws = NULL, *ys = NULL, *dxs = NULL, *dws = NULL;
    lithe_status s = permuted(x, in[0], TO_DEPTH_FIRST, &XT);
    if (s == LITHE_OK) s = permuted(x, in[1], TO_DEPTH_FIRST, &WT);
    if (s == LITHE_OK) s = permuted(x, dY, TO_DEPTH_FIRST, &dYT);
    if (s == LITHE_OK && dX) s = lithe__gexec_like(x, XT, true, &dXT);
    if (s == LITHE_OK && dW) s = lithe__gexec_like(x, WT, true, &dWT);
    for (int64_t od = 0; od < OD && s == LITHE_OK && (dX || dW); od++)
        for (int64_t kd = 0; kd < w.k[0] && s == LITHE_OK; kd++) {
            int64_t id = depth_in(&w, D, od, kd);
            if (id < 0) continue;
            s = slice4(XT, id, &xs);
            if (s == LITHE_OK) s = slice4(WT, kd, &ws);
            if (s == LITHE_OK) s = slice4(dYT, od, &ys);
            if (s == LITHE_OK && dXT) s = slice4(dXT, id, &dxs);
            if (s == LITHE_OK && dWT) s = slice4(dWT, kd, &dws);
            if (s == LITHE_OK) s = lithe__op_conv2d_backward(x->be, &g, xs, ws, ys, dxs, dws, NULL);
            lithe_tensor_release(xs), lithe_tensor_release(ws), lithe_tensor_release(ys);
            lithe_tensor_release(dxs), lithe_tensor_release(dws);
            xs = ws = ys = dxs = dws = NULL;
        }
    if (s == LITHE_OK) s = acc_from_depth_first(x, dX, dXT);
    if (s == LITHE_OK) s = acc_from_depth_first(x, dW, dWT);
    if (s == LITHE_OK && db) s = lithe_tensor_reshape(db, 5, (int64_t[]){1, g.M, 1, 1, 1}, &b5);
    if (s == LITHE_OK && db) s = lithe__op_reduce_to(x->be, dY, 1.0f, 1.0f, b5);
    lithe_tensor_release(XT), lithe_tensor_release(WT), lithe_tensor_release(dYT);
    lithe_tensor_release(dXT), lithe_tensor_release(dWT), lithe_tensor_release(b5);
    return s;
}

/* ---- pools: (H, W) then D, or one window over D H W for the global pools ---- */

typedef struct {
    lithe__pool2d hw, d; /* the two passes; a global pool uses hw only, over (N, C, 1, D H W) */
    int64_t OD;
    bool global;
} pool3;

static lithe_status pool3d_geometry(lithe__gexec *x, size_t node, const lithe_tensor *X, pool3 *p) {
    const lithe__onnx_node *n = NODE(x, node);
    memset(p, 0, sizeof *p);
    int64_t N = X->shape[0], C = X->shape[1], D = X->shape[2], H = X->shape[3], W = X->shape[4];
    bool max = !strcmp(n->op_type, "MaxPool") || !strcmp(n->op_type, "GlobalMaxPool");
    if (!strcmp(n->op_type, "GlobalAveragePool") || !strcmp(n->op_type, "GlobalMaxPool")) {
        if (!D || !H || !W) return fail(x, node, LITHE_ERR_SHAPE, "empty spatial extent");
        p->global = true;
        p->hw = (lithe__pool2d){.N = N, .C = C, .H = 1, .W = D * H * W, .KH = 1, .KW = D * H * W, .OH = 1, .OW = 1,
                                .stride = {1, 1}, .dil = {1, 1}, .max = max};
        return LITHE_OK;
    }
    size_t k;
    const int64_t *ks = attr_ints(n, "kernel_shape", &k);
    if (!ks || k != 3) return fail(x, node, LITHE_ERR_SHAPE, "kernel_shape must have 3 entries for a 5-D input");
    for (size_t i = 0; i < 3; i++)
        if (ks[i] < 1 || ks[i] > (1 << 20)) return fail(x, node, LITHE_ERR_VALUE, "kernel_shape outside 1 .. 2^20");
    win3 w;
    LITHE__TRY(win3_of(x, node, X->shape + 2, ks, true, &w));
    for (int i = 0; i < 3; i++)
        if (max && (w.p[i] >= w.k[i] * w.d[i] || w.p[i + 3] >= w.k[i] * w.d[i]))
            return fail(x, node, LITHE_ERR_VALUE, "padding %lld is not smaller than the window", (long long)w.p[i]);
    bool cip = attr_i(n, "count_include_pad", 0) != 0;
    p->OD = w.o[0];
    p->hw = (lithe__pool2d){.N = N, .C = C * D, .H = H, .W = W, .KH = w.k[1], .KW = w.k[2], .OH = w.o[1], .OW = w.o[2],
                            .stride = {w.s[1], w.s[2]}, .pad = {w.p[1], w.p[2], w.p[4], w.p[5]}, .dil = {w.d[1], w.d[2]},
                            .max = max, .count_include_pad = cip};
    p->d = (lithe__pool2d){.N = N * C, .C = 1, .H = D, .W = w.o[1] * w.o[2], .KH = w.k[0], .KW = 1, .OH = w.o[0],
                           .OW = w.o[1] * w.o[2], .stride = {w.s[0], 1}, .pad = {w.p[0], 0, w.p[3], 0}, .dil = {w.d[0], 1},
                           .max = max, .count_include_pad = cip};
    return LITHE_OK;
}

static lithe_status as4(lithe_tensor *t, const lithe__pool2d *g, bool out, lithe_tensor **v) {
    return lithe_tensor_reshape(t, 4, (int64_t[]){g->N, g->C, out ? g->OH : g->H, out ? g->OW : g->W}, v);
}

lithe_status pool3d_forward(lithe__gexec *x, size_t node, lithe_tensor *X, lithe_tensor **out, lithe_tensor **saved) {
    pool3 p;
    LITHE__TRY(pool3d_geometry(x, node, X, &p));
    int64_t N = X->shape[0], C = X->shape[1];
    int64_t yshape[5] = {N, C, p.global ? 1 : p.OD, p.global ? 1 : p.hw.OH, p.global ? 1 : p.hw.OW};
    LITHE__TRY(new_f32(x, 5, yshape, false, &out[0]));
    bool keep = p.hw.max && x->keep_all; /* the argmax indices only when a backward may read them */
    lithe_tensor *X4 = NULL, *T4 = NULL, *Y4 = NULL, *T = NULL;
    lithe_status s = as4(X, &p.hw, false, &X4);
    int64_t tshape[4] = {p.hw.N, p.hw.C, p.hw.OH, p.hw.OW};
    if (s == LITHE_OK && keep) s = lithe__gexec_alloc(x, x->be, LITHE_I32, 4, tshape, false, &saved[0]);
    if (p.global) {
        if (s == LITHE_OK) s = as4(out[0], &p.hw, true, &Y4);
        if (s == LITHE_OK) s = lithe__op_pool2d(x->be, &p.hw, X4, Y4, saved[0]);
    } else {
        if (s == LITHE_OK) s = new_f32(x, 4, tshape, false, &T);
        if (s == LITHE_OK) s = as4(T, &p.d, false, &T4);
        if (s == LITHE_OK) s = as4(out[0], &p.d, true, &Y4);
        if (s == LITHE_OK && keep)
            s = lithe__gexec_alloc(x, x->be, LITHE_I32, 4, (int64_t[]){p.d.N, 1, p.d.OH, p.d.OW}, false, &saved[1]);
        if (s == LITHE_OK) s = lithe__op_pool2d(x->be, &p.hw, X4, T, saved[0]);
        if (s == LITHE_OK) s = lithe__op_pool2d(x->be, &p.d, T4, Y4, saved[1]);
    }
    lithe_tensor_release(X4), lithe_tensor_release(T4), lithe_tensor_release(Y4), lithe_tensor_release(T);
    return s;
}

lithe_status pool3d_backward(lithe__gexec *x, size_t node, lithe_tensor *X, lithe_tensor *dY, lithe_tensor **saved,
                             lithe_tensor *dX) {
    pool3 p;
    LITHE__TRY(pool3d_geometry(x, node, X, &p));
    lithe_tensor *dX4 = NULL, *dY4 = NULL, *dT = NULL, *dT4 = NULL;
    lithe_status s = as4(dX, &p.hw, false, &dX4);
    if (p.global) {
        if (s == LITHE_OK) s = as4(dY, &p.hw, true, &dY4);
        if (s == LITHE_OK) s = lithe__op_pool2d_backward(x->be, &p.hw, dY4, saved[0], dX4);
    } else {
        if (s == LITHE_OK) s = new_f32(x, 4, (int64_t[]){p.hw.N, p.hw.C, p.hw.OH, p.hw.OW}, true, &dT);
        if (s == LITHE_OK) s = as4(dT, &p.d, false, &dT4);
        if (s == LITHE_OK) s = as4(dY, &p.d, true, &dY4);
        if (s == LITHE_OK) s = lithe__op_pool2d_backward(x->be, &p.d, dY4, saved[1], dT4);
        if (s == LITHE_OK) s = lithe__op_pool2d_backward(x->be, &p.hw, dT, saved[0], dX4);
    }
    lithe_tensor_release(dX4), lithe_tensor_release(dY4), lithe_tensor_release(dT), lithe_tensor_release(dT4);
    return s;
}

/* ---- LpPool (1-D, 2-D; p 1 or 2): Y = (sum over the window of |X|^p)^(1/p), the sum an average
 * pool that counts the padding, times the window's size; the backward routes dY through the
 * same pool's adjoint. ---- */
static lithe_status lppool_geometry(lithe__gexec *x, size_t node, const lithe_tensor *X, lithe__pool2d *g, int64_t *p) {
    *p = attr_i(NODE(x, node), "p", 2);
    if (*p != 1 && *p != 2) return fail(x, node, LITHE_ERR_UNSUPPORTED, "p %lld (lithe runs 1 and 2)", (long long)*p);
    if (X->ndim == 5) return fail(x, node, LITHE_ERR_UNSUPPORTED, "a 3-D LpPool (lithe runs 1-D and 2-D ones)");
    LITHE__TRY(pool_geometry(x, node, X, g));
    g->max = false;
    g->count_include_pad = true; /* the divisor is the whole window: times KH KW, the sum */
    return LITHE_OK;
}

FWD(f_lppool) {
    UNUSED_FWD;
    LITHE__TRY(need_inputs(x, node, in, n_in, 1));
    LITHE__TRY(need_float(x, node, in[0], 0));
    lithe__pool2d g;
    int64_t p;
    LITHE__TRY(lppool_geometry(x, node, in[0], &g, &p));
    int64_t y4[4] = {g.N, g.C, g.OH, g.OW}, y3[3] = {g.N, g.C, g.OW};
    lithe_tensor *a = NULL, *a4 = NULL, *Y4 = NULL;
    lithe_status s = in[0]->ndim == 3 ? new_f32(x, 3, y3, false, &out[0]) : new_f32(x, 4, y4, false, &out[0]);
    if (s == LITHE_OK) s = lithe__gexec_like(x, in[0], false, &a);
    if (s == LITHE_OK) s = p == 2 ? lithe__op_mul(x->be, in[0], in[0], a) : lithe__op_unary(x->be, LITHE__UN_ABS, in[0], a);
    if (s == LITHE_OK) s = view4(a, &a4);
    if (s == LITHE_OK) s = view4(out[0], &Y4);
    if (s == LITHE_OK) s = lithe__op_pool2d(x->be, &g, a4, Y4, NULL);
    if (s == LITHE_OK) s = lithe__op_axpby(x->be, 0.0f, out[0], (float)(g.KH * g.KW), out[0]);
    if (s == LITHE_OK && p == 2) s = lithe__op_unary(x->be, LITHE__UN_SQRT, out[0], out[0]);
    lithe_tensor_release(a), lithe_tensor_release(a4), lithe_tensor_release(Y4);
    return s;
}
BWD(b_lppool) {
    UNUSED_BWD;
    lithe_tensor *dX = NULL;
    LITHE__TRY(lithe__gexec_grad(x, node, 0, &dX));
    if (!dX) return LITHE_OK;
    lithe__pool2d g;
    int64_t p;
    LITHE__TRY(lppool_geometry(x, node, in[0], &g, &p));
    lithe_tensor *dS = NULL, *dS4 = NULL, *da = NULL, *da4 = NULL;
    lithe_status s = lithe__gexec_like(x, dout[0], true, &dS);
    /* p 2: dS = dY / (2 Y); p 1: dS = dY; then the window's size, which the average's adjoint divides out */
    if (s == LITHE_OK) s = p == 2 ? lithe__op_unary_backward(x->be, LITHE__UN_SQRT, out[0], out[0], dout[0], dS)
                                  : lithe__op_copy(x->be, dS, dout[0]);
    if (s == LITHE_OK) s = lithe__op_axpby(x->be, 0.0f, dS, (float)(g.KH * g.KW), dS);
    if (s == LITHE_OK) s = lithe__gexec_like(x, in[0], true, &da);
    if (s == LITHE_OK) s = view4(dS, &dS4);
    if (s == LITHE_OK) s = view4(da, &da4);
    if (s == LITHE_OK) s = lithe__op_pool2d_backward(x->be, &g, dS4, NULL, da4);
    if (s == LITHE_OK && p == 2) s = lithe__op_mul(x->be, da, in[0], da);
    if (s == LITHE_OK && p == 2) s = lithe__op_axpby(x->be, 2.0f, da, 1.0f, dX);
    if (s == LITHE_OK && p == 1) s = lithe__op_unary_backward(x->be, LITHE__UN_ABS, in[0], in[0], da, dX);
    lithe_tensor_release(dS), lithe_tensor_release(dS4), lithe_tensor_release(da), lithe_tensor_release(da4);
    return s;
}

/* ---- ConvTranspose 3-D: the adjoint of a 3-D Conv from Y's shape to X's, per depth pair: Y[od]
 * += conv2d_backward's dX of X[d] with W[kd], od = d sd - pd + kd dd (the Conv's depth map read
 * backwards); its backward dX[d] += conv2d(dY[od], W[kd]), dW[kd] += the correlation. ---- */
typedef struct {
    lithe__conv2d g; /* the adjoint 2-D conv: C = Y's channels, M = X's, (H, W) = Y's, (OH, OW) = X's */
    win3 w;          /* the depth axis: w.k[0], w.s[0], w.d[0], w.p[0] */
    int64_t D, OD;   /* X's depth, Y's depth */
} convt3;

static lithe_status convt3d_geometry(lithe__gexec *x, size_t node, lithe_tensor **in, convt3 *c) {
    const lithe__onnx_node *n = NODE(x, node);
    const lithe_tensor *X = in[0], *W = in[1];
    if (W->ndim != 5) return fail(x, node, LITHE_ERR_SHAPE, "a 3-D ConvTranspose's X and W must be 5-D, W is %d-D", W->ndim);
    int64_t group = attr_i(n, "group", 1);
    if (group < 1 || X->shape[1] != W->shape[0] || W->shape[0] % group)
        return fail(x, node, LITHE_ERR_SHAPE, "W (%lld, %lld, ...) does not fit %lld input channels in %lld groups",
                    (long long)W->shape[0], (long long)W->shape[1], (long long)X->shape[1], (long long)group);
    char why[128];
    int mode = 0;
    win3 *w = &c->w;
    lithe_status st = window_nd(n, 3, w->s, w->p, w->d, &mode, why, sizeof why);
    if (st != LITHE_OK) return fail(x, node, st, "%s", why);
    size_t k = 0;
    if ((mode != 0 && mode != 3) || attr_ints(n, "output_shape", &k)) /* PADS_GIVEN, PADS_VALID */
        return fail(x, node, LITHE_ERR_UNSUPPORTED, "output_shape / SAME auto_pad (give pads and output_padding)");
    int64_t opad[3] = {0, 0, 0}, out[3];
    const int64_t *v = attr_ints(n, "output_padding", &k);
    if (v && k != 3) return fail(x, node, LITHE_ERR_UNSUPPORTED, "%zu output_padding for a 3-D window", k);
    for (int i = 0; i < 3; i++) {
        if (v) opad[i] = v[i];
        if (opad[i] < 0 || opad[i] >= w->s[i]) return fail(x, node, LITHE_ERR_VALUE, "output_padding must be 0 .. stride - 1");
        w->k[i] = W->shape[2 + i];
        out[i] = w->s[i] * (X->shape[2 + i] - 1) + opad[i] + w->d[i] * (w->k[i] - 1) + 1 - w->p[i] - w->p[i + 3];
        if (out[i] < 1 || X->shape[2 + i] < 1) return fail(x, node, LITHE_ERR_SHAPE, "the output would be empty");
    }
    c->D = X->shape[2], c->OD = out[0];
    c->g = (lithe__conv2d){.N = X->shape[0], .C = W->shape[1] * group, .H = out[1], .W = out[2], .M = X->shape[1],
                           .KH = w->k[1], .KW = w->k[2], .OH = X->shape[3], .OW = X->shape[4], .group = group,
                           .stride = {w->s[1], w->s[2]}, .pad = {w->p[1], w->p[2], w->p[4], w->p[5]},
                           .dil = {w->d[1], w->d[2]}};
    return LITHE_OK;
}

/* Y's depth that X's depth d feeds at kernel depth kd, or -1. */
static int64_t depth_out(const convt3 *c, int64_t d, int64_t kd) {
    int64_t od = d * c->w.s[0] - c->w.p[0] + kd * c->w.d[0];
    return od >= 0 && od < c->OD ? od : -1;
}

lithe_status convt3d_forward(lithe__gexec *x, size_t node, lithe_tensor **in, size_t n_in, lithe_tensor **out) {
    convt3 c;
    LITHE__TRY(convt3d_geometry(x, node, in, &c));
    lithe_tensor *b = n_in > 2 ? in[2] : NULL;
    if (b && b->numel != c.g.C) return fail(x, node, LITHE_ERR_SHAPE, "bias has %lld values for %lld outputs", (long long)b->numel, (long long)c.g.C);
    lithe_tensor *XT = NULL, *WT = NULL, *YT = NULL, *xs = NULL, *ws = NULL, *ys = NULL, *b5 = NULL;
    lithe_status s = permuted(x, in[0], TO_DEPTH_FIRST, &XT);
    if (s == LITHE_OK) s = permuted(x, in[1], TO_DEPTH_FIRST, &WT);
    if (s == LITHE_OK) s = new_f32(x, 5, (int64_t[]){c.OD, c.g.N, c.g.C, c.g.H, c.g.W}, true, &YT);
    for (int64_t d = 0; d < c.D && s == LITHE_OK; d++)
        for (int64_t kd = 0; kd < c.w.k[0] && s == LITHE_OK; kd++) {
            int64_t od = depth_out(&c, d, kd);
            if (od < 0) continue;
            s = slice4(XT, d, &xs);
            if (s == LITHE_OK) s = slice4(WT, kd, &ws);
            if (s == LITHE_OK) s = slice4(YT, od, &ys);
            if (s == LITHE_OK) s = lithe__op_conv2d_backward(x->be, &c.g, ys, ws, xs, ys, NULL, NULL);
            lithe_tensor_release(xs), lithe_tensor_release(ws), lithe_tensor_release(ys);
            xs = ws = ys = NULL;
        }
    if (s == LITHE_OK) s = permuted(x, YT, FROM_DEPTH_FIRST, &out[0]);
    if (s == LITHE_OK && b) s = lithe_tensor_reshape(b, 5, (int64_t[]){1, c.g.C, 1, 1, 1}, &b5);
    if (s == LITHE_OK && b) s = lithe__op_broadcast_to(x->be, b5, 1.0f, 1.0f, out[0]);
    lithe_tensor_release(XT), lithe_tensor_release(WT), lithe_tensor_release(YT), lithe_tensor_release(b5);
    return s;
}

lithe_status convt3d_backward(lithe__gexec *x, size_t node, lithe_tensor **in, size_t n_in, lithe_tensor *dY) {
    convt3 c;
    LITHE__TRY(convt3d_geometry(x, node, in, &c));
    lithe_tensor *dX = NULL, *dW = NULL, *db = NULL;
    LITHE__TRY(lithe__gexec_grad(x, node, 0, &dX));
    LITHE__TRY(lithe__gexec_grad(x, node, 1, &dW));
    if (n_in > 2 && in[2]) LITHE__TRY(lithe__gexec_grad(x, node, 2, &db));
    lithe_tensor *XT = NULL, *WT = NULL, *dYT = NULL, *dXT = NULL, *dWT = NULL, *tmp = NULL, *b5 = NULL;
    lithe_tensor *xs = NULL, *ws = NULL, *ys = NULL, *dxs = NULL, *dws = NULL;
    lithe_status s = permuted(x, in[0], TO_DEPTH_FIRST, &XT);
    if (s == LITHE_OK) s = permuted(x, in[1], TO_DEPTH_FIRST, &WT);
    if (s == LITHE_OK) s = permuted(x, dY, TO_DEPTH_FIRST, &dYT);
    if (s == LITHE_OK && dX) s = lithe__gexec_like(x, XT, true, &dXT);
    if (s == LITHE_OK && dW) s = lithe__gexec_like(x, WT, true, &dWT);
    if (s == LITHE_OK && dX) s = new_f32(x, 4, (int64_t[]){c.g.N, c.g.M, c.g.OH, c.g.OW}, false, &tmp);
    for (int64_t d = 0; d < c.D && s == LITHE_OK && (dX || dW); d++)
        for (int64_t kd = 0; kd < c.w.k[0] && s == LITHE_OK; kd++) {
            int64_t od = depth_out(&c, d, kd);
            if (od < 0) continue;
            s = slice4(XT, d, &xs);
            if (s == LITHE_OK) s = slice4(WT, kd, &ws);
            if (s == LITHE_OK) s = slice4(dYT, od, &ys);
            if (s == LITHE_OK && dXT) s = slice4(dXT, d, &dxs);
            if (s == LITHE_OK && dWT) s = slice4(dWT, kd, &dws);
            if (s == LITHE_OK && dXT) s = lithe__op_conv2d(x->be, &c.g, ys, ws, NULL, NULL, tmp);
            if (s == LITHE_OK && dXT) s = lithe__op_axpby(x->be, 1.0f, tmp, 1.0f, dxs);
            if (s == LITHE_OK && dWT) s = lithe__op_conv2d_backward(x->be, &c.g, ys, ws, xs, NULL, dws, NULL);
            lithe_tensor_release(xs), lithe_tensor_release(ws), lithe_tensor_release(ys);
            lithe_tensor_release(dxs), lithe_tensor_release(dws);
            xs = ws = ys = dxs = dws = NULL;
        }
    if (s == LITHE_OK) s = acc_from_depth_first(x, dX, dXT);
    if (s == LITHE_OK) s = acc_from_depth_first(x, dW, dWT);
    if (s == LITHE_OK && db) s = lithe_tensor_reshape(db, 5, (int64_t[]){1, c.g.C, 1, 1, 1}, &b5);
    if (s == LITHE_OK && db) s = lithe__op_reduce_to(x->be, dY, 1.0f, 1.0f, b5);
    lithe_tensor_release(XT), lithe_tensor_release(WT), lithe_tensor_release(dYT), lithe_tensor_release(dXT);
    lithe_tensor_release(dWT), lithe_tensor_release(tmp), lithe_tensor_release(b5);
    return s;
}
