/* ONNX operators of the graph layer (core/graph/ops/): InstanceNormalization, GroupNormalization,
 * LpNormalization, MeanVarianceNormalization, LRN — composed from the layernorm, broadcast,
 * reduce and pool2d primitives, so every backend that has those runs them. */
#include "ops.h"

/* ---- InstanceNormalization, GroupNormalization: layernorm over rows of (N G, C / G x spatial),
 * then a per-channel (or, GroupNormalization-18, per-group) scale and bias. saved[0] = xhat (X's
 * shape), saved[1] = (2, N G): each row's mean, then its inverse std. ---- */

typedef struct {
    int64_t N, C, G, S, M, L; /* rows M = N G of L = C / G x S; S the spatial size */
    bool per_group;           /* the affine has G values (GroupNormalization-18), else C */
} gn_plan;

static lithe_status gn_plan_of(lithe__gexec *x, size_t node, lithe_tensor **in, size_t n_in, gn_plan *p) {
    const lithe__onnx_node *n = NODE(x, node);
    LITHE__TRY(need_inputs(x, node, in, n_in, 3));
    for (size_t k = 0; k < 3; k++) LITHE__TRY(need_float(x, node, in[k], k));
    const lithe_tensor *X = in[0];
    if (X->ndim < 2) return fail(x, node, LITHE_ERR_SHAPE, "the input needs a channel axis, got %d-D", X->ndim);
    p->N = X->shape[0], p->C = X->shape[1];
    p->S = p->N * p->C > 0 ? X->numel / (p->N * p->C) : 0;
    bool inst = !strcmp(n->op_type, "InstanceNormalization");
    p->G = inst ? p->C : attr_i(n, "num_groups", 0);
    if (p->G < 1 || p->C % p->G)
        return fail(x, node, LITHE_ERR_SHAPE, "num_groups %lld does not divide %lld channels", (long long)p->G, (long long)p->C);
    p->per_group = !inst && in[1]->numel == p->G && p->G != p->C;
    int64_t want = p->per_group ? p->G : p->C;
    if (in[1]->numel != want || in[2]->numel != want)
        return fail(x, node, LITHE_ERR_SHAPE, "scale and bias have %lld and %lld values for %lld channels in %lld groups",
                    (long long)in[1]->numel, (long long)in[2]->numel, (long long)p->C, (long long)p->G);
    p->M = p->N * p->G;
    p->L = (p->C / p->G) * p->S;
    if (!p->M || !p->L) return fail(x, node, LITHE_ERR_SHAPE, "empty input");
    return LITHE_OK;
}

/* 3-D views for the affine: t as (N, A, rest) and a parameter as (1, A, 1), A = C or G. */
static lithe_status affine_views(const gn_plan *p, lithe_tensor *t, lithe_tensor *param, lithe_tensor **t3, lithe_tensor **p3) {
    int64_t A = p->per_group ? p->G : p->C;
    LITHE__TRY(lithe_tensor_reshape(t, 3, (int64_t[]){p->N, A, t->numel / (p->N * A)}, t3));
    return param ? lithe_tensor_reshape(param, 3, (int64_t[]){1, A, 1}, p3) : LITHE_OK;
}

static lithe_status stats_views(lithe_tensor *st, lithe_tensor **mean, lithe_tensor **inv) {
    int64_t M = st->shape[1];
    LITHE__TRY(view(st, 1, &M, (int64_t[]){1}, 0, mean));
    return view(st, 1, &M, (int64_t[]){1}, M, inv);
}

FWD(f_groupnorm) {
    (void)n_out;
    gn_plan p;
    LITHE__TRY(gn_plan_of(x, node, in, n_in, &p));
    float eps = attr_f(NODE(x, node), "epsilon", 1e-5f);
    lithe_tensor *ones = NULL, *zeros = NULL, *X2 = NULL, *H2 = NULL, *mean = NULL, *inv = NULL;
    lithe_tensor *h3 = NULL, *s3 = NULL, *y3 = NULL, *b3 = NULL, *t = NULL;
    lithe_status s = new_f32(x, 1, &p.L, false, &ones);
    if (s == LITHE_OK) s = lithe__op_fill(x->be, ones, 1.0f);
    if (s == LITHE_OK) s = new_f32(x, 1, &p.L, true, &zeros);
    if (s == LITHE_OK) s = lithe__gexec_like(x, in[0], false, &saved[0]);
    if (s == LITHE_OK) s = new_f32(x, 2, (int64_t[]){2, p.M}, false, &saved[1]);
    if (s == LITHE_OK) s = stats_views(saved[1], &mean, &inv);
    if (s == LITHE_OK) s = lithe_tensor_reshape(in[0], 2, (int64_t[]){p.M, p.L}, &X2);
    if (s == LITHE_OK) s = lithe_tensor_reshape(saved[0], 2, (int64_t[]){p.M, p.L}, &H2);
    if (s == LITHE_OK) s = lithe__op_layernorm(x->be, X2, ones, zeros, eps, H2, mean, inv);
    if (s == LITHE_OK) s = lithe__gexec_like(x, in[0], false, &out[0]);
    if (s == LITHE_OK) s = lithe__gexec_like(x, in[0], false, &t);
    if (s == LITHE_OK) s = affine_views(&p, saved[0], in[1], &h3, &s3);
    if (s == LITHE_OK) s = lithe_tensor_reshape(t, 3, h3->shape, &y3);
    if (s == LITHE_OK) s = lithe__op_bcast_binary(x->be, LITHE__BIN_MUL, h3, s3, y3);
    lithe_tensor_release(h3), lithe_tensor_release(s3);
    h3 = s3 = NULL;
    if (s == LITHE_OK) s = affine_views(&p, out[0], in[2], &h3, &b3);
    if (s == LITHE_OK) s = lithe__op_bcast_binary(x->be, LITHE__BIN_ADD, y3, b3, h3);
    lithe_tensor_release(ones), lithe_tensor_release(zeros), lithe_tensor_release(X2), lithe_tensor_release(H2);
    lithe_tensor_release(mean), lithe_tensor_release(inv), lithe_tensor_release(h3), lithe_tensor_release(s3);
    lithe_tensor_release(y3), lithe_tensor_release(b3), lithe_tensor_release(t);
    return s;
}
BWD(b_groupnorm) {
    (void)out;
    gn_plan p;
    LITHE__TRY(gn_plan_of(x, node, in, n_in, &p));
    lithe_tensor *dX = NULL, *dS = NULL, *dB = NULL;
    LITHE__TRY(lithe__gexec_grad(x, node, 0, &dX));
    LITHE__TRY(lithe__gexec_grad(x, node, 1, &dS));
    LITHE__TRY(lithe__gexec_grad(x, node, 2, &dB));
    lithe_tensor *dy3 = NULL, *s3 = NULL, *h3 = NULL, *ds3 = NULL, *db3 = NULL, *dh = NULL, *dh3 = NULL;
    lithe_status s = affine_views(&p, dout[0], in[1], &dy3, &s3);
    if (s == LITHE_OK) s = affine_views(&p, saved[0], NULL, &h3, NULL);
    if (s == LITHE_OK && dS) s = lithe_tensor_reshape(dS, 3, s3->shape, &ds3);
    if (s == LITHE_OK && dS) s = lithe__op_bcast_binary_backward(x->be, LITHE__BIN_MUL, h3, s3, NULL, dy3, NULL, ds3);
    if (s == LITHE_OK && dB) s = lithe_tensor_reshape(dB, 3, s3->shape, &db3);
    if (s == LITHE_OK && dB) s = lithe__op_reduce_to(x->be, dy3, 1.0f, 1.0f, db3);
    if (s == LITHE_OK && dX) {
        lithe_tensor *ones = NULL, *gd = NULL, *bd = NULL, *X2 = NULL, *dh2 = NULL, *t = NULL, *t2 = NULL, *mean = NULL, *inv = NULL;
        s = lithe__gexec_like(x, in[0], false, &dh); /* dxhat = dY scale */
        if (s == LITHE_OK) s = lithe_tensor_reshape(dh, 3, dy3->shape, &dh3);
        if (s == LITHE_OK) s = lithe__op_bcast_binary(x->be, LITHE__BIN_MUL, dy3, s3, dh3);
        if (s == LITHE_OK) s = new_f32(x, 1, &p.L, false, &ones);
        if (s == LITHE_OK) s = lithe__op_fill(x->be, ones, 1.0f);
        if (s == LITHE_OK) s = new_f32(x, 1, &p.L, true, &gd);
        if (s == LITHE_OK) s = new_f32(x, 1, &p.L, true, &bd);
        if (s == LITHE_OK) s = stats_views(saved[1], &mean, &inv);
        if (s == LITHE_OK) s = lithe_tensor_reshape(in[0], 2, (int64_t[]){p.M, p.L}, &X2);
        if (s == LITHE_OK) s = lithe_tensor_reshape(dh, 2, (int64_t[]){p.M, p.L}, &dh2);
        if (s == LITHE_OK) s = new_f32(x, 2, (int64_t[]){p.M, p.L}, false, &t2);
        if (s == LITHE_OK) s = lithe__op_layernorm_backward(x->be, dh2, X2, ones, mean, inv, t2, gd, bd);
        if (s == LITHE_OK) s = lithe_tensor_reshape(t2, dX->ndim, dX->shape, &t);
        if (s == LITHE_OK) s = acc(x, dX, t);
        lithe_tensor_release(ones), lithe_tensor_release(gd), lithe_tensor_release(bd), lithe_tensor_release(X2);
        lithe_tensor_release(dh2), lithe_tensor_release(t), lithe_tensor_release(t2), lithe_tensor_release(mean);
        lithe_tensor_release(inv);
    }
    lithe_tensor_release(dy3), lithe_tensor_release(s3), lithe_tensor_release(h3), lithe_tensor_release(ds3);
    lithe_tensor_release(db3), lithe_tensor_release(dh), lithe_tensor_release(dh3);
    return s;
}

/* X's shape with the reduced axes set to 1: LpNormalization's one axis, or MVN's axes. */
static lithe_status reduced_shape(lithe__gexec *x, size_t node, const lithe_tensor *X, int64_t *shape, int64_t *K) {
    const lithe__onnx_node *n = NODE(x, node);
    memcpy(shape, X->shape, sizeof(int64_t) * (size_t)X->ndim);
    *K = 1;
    if (!strcmp(n->op_type, "LpNormalization")) {
        int64_t a = 0;
        LITHE__TRY(norm_axis(x, node, attr_i(n, "axis", -1), X->ndim, false, &a));
        *K = shape[a], shape[a] = 1;
        return LITHE_OK;
    }
    size_t k = 0;
    const int64_t *axes = attr_ints(n, "axes", &k);
    static const int64_t dflt[3] = {0, 2, 3};
    if (!axes) {
        if (X->ndim != 4) return fail(x, node, LITHE_ERR_SHAPE, "without axes the input must be 4-D, got %d-D", X->ndim);
        axes = dflt, k = 3;
    }
    for (size_t i = 0; i < k; i++) {
        int64_t a = 0;
        LITHE__TRY(norm_axis(x, node, axes[i], X->ndim, false, &a));
        if (shape[a] == 1 && X->shape[a] != 1) return fail(x, node, LITHE_ERR_VALUE, "axis %lld repeated", (long long)a);
        *K *= shape[a], shape[a] = 1;
    }
    if (*K == 0) return fail(x, node, LITHE_ERR_SHAPE, "empty input");
    return LITHE_OK;
}

/* ---- LpNormalization: Y = X / ||X||_p along axis (p 1 or 2); saved[0] = the norms ---- */
FWD(f_lpnorm) {
    UNUSED_FWD;
    LITHE__TRY(need_inputs(x, node, in, n_in, 1));
    LITHE__TRY(need_float(x, node, in[0], 0));
    int64_t p = attr_i(NODE(x, node), "p", 2), shape[LITHE_MAX_DIMS], K;
    if (p != 1 && p != 2) return fail(x, node, LITHE_ERR_UNSUPPORTED, "p %lld (lithe runs 1 and 2)", (long long)p);
    LITHE__TRY(reduced_shape(x, node, in[0], shape, &K));
    lithe_tensor *a = NULL;
    lithe_status s = lithe__gexec_like(x, in[0], false, &a);
    if (s == LITHE_OK) s = p == 2 ? lithe__op_mul(x->be, in[0], in[0], a) : lithe__op_unary(x->be, LITHE__UN_ABS, in[0], a);
    if (s == LITHE_OK) s = new_f32(x, in[0]->ndim, shape, false, &saved[0]);
    if (s == LITHE_OK) s = lithe__op_reduce_to(x->be, a, 1.0f, 0.0f, saved[0]);
    if (s == LITHE_OK && p == 2) s = lithe__op_unary(x->be, LITHE__UN_SQRT, saved[0], saved[0]);
    if (s == LITHE_OK) s = lithe__gexec_like(x, in[0], false, &out[0]);
    if (s == LITHE_OK) s = lithe__op_bcast_binary(x->be, LITHE__BIN_DIV, in[0], saved[0], out[0]);
    lithe_tensor_release(a);
    return s;
}
BWD(b_lpnorm) {
    UNUSED_BWD;
    lithe_tensor *dX = NULL, *dn = NULL, *t = NULL;
    LITHE__TRY(lithe__gexec_grad(x, node, 0, &dX));
    if (!dX) return LITHE_OK;
    int64_t p = attr_i(NODE(x, node), "p", 2);
    /* Y = X / n: dX += dY / n, dn = -sum(dY X) / n^2; then n's own: dX += dn X / n (p 2), dn sign(X) (p 1) */
    lithe_status s = lithe__gexec_like(x, saved[0], true, &dn);
    if (s == LITHE_OK) s = lithe__op_bcast_binary_backward(x->be, LITHE__BIN_DIV, in[0], saved[0], out[0], dout[0], dX, dn);
    if (s == LITHE_OK) s = lithe__gexec_like(x, in[0], false, &t);
    if (s == LITHE_OK && p == 2) s = lithe__op_bcast_binary(x->be, LITHE__BIN_MUL, out[0], dn, t);
    if (s == LITHE_OK && p == 2) s = acc(x, dX, t);
    if (s == LITHE_OK && p == 1) s = lithe__op_broadcast_to(x->be, dn, 1.0f, 0.0f, t);
    if (s == LITHE_OK && p == 1) s = lithe__op_unary_backward(x->be, LITHE__UN_ABS, in[0], in[0], t, dX);
    lithe_tensor_release(dn), lithe_tensor_release(t);
    return s;
}

/* ---- MeanVarianceNormalization: Y = (X - mean) / (sqrt(mean((X - mean)^2)) + 1e-9) over axes
 * (ONNX's function body); saved[0] = X - mean, saved[1] = the denominator ---- */
#define MVN_EPS 1e-9f
FWD(f_mvn) {
    UNUSED_FWD;
    LITHE__TRY(need_inputs(x, node, in, n_in, 1));
    LITHE__TRY(need_float(x, node, in[0], 0));
    int64_t shape[LITHE_MAX_DIMS], K;
    LITHE__TRY(reduced_shape(x, node, in[0], shape, &K));
    lithe_tensor *m = NULL, *sq = NULL, *eps = NULL;
    lithe_status s = new_f32(x, in[0]->ndim, shape, false, &m);
    if (s == LITHE_OK) s = lithe__op_reduce_to(x->be, in[0], 1.0f / (float)K, 0.0f, m);
    if (s == LITHE_OK) s = lithe__gexec_like(x, in[0], false, &saved[0]);
    if (s == LITHE_OK) s = lithe__op_bcast_binary(x->be, LITHE__BIN_SUB, in[0], m, saved[0]);
    if (s == LITHE_OK) s = lithe__gexec_like(x, in[0], false, &sq);
    if (s == LITHE_OK) s = lithe__op_mul(x->be, saved[0], saved[0], sq);
    if (s == LITHE_OK) s = new_f32(x, in[0]->ndim, shape, false, &saved[1]);
    if (s == LITHE_OK) s = lithe__op_reduce_to(x->be, sq, 1.0f / (float)K, 0.0f, saved[1]);
    if (s == LITHE_OK) s = lithe__op_unary(x->be, LITHE__UN_SQRT, saved[1], saved[1]);
    if (s == LITHE_OK) s = new_f32(x, 1, (int64_t[]){1}, false, &eps);
    if (s == LITHE_OK) s = lithe__op_fill(x->be, eps, MVN_EPS);
    if (s == LITHE_OK) s = lithe__op_bcast_binary(x->be, LITHE__BIN_ADD, saved[1], eps, saved[1]);
    if (s == LITHE_OK) s = lithe__gexec_like(x, in[0], false, &out[0]);
    if (s == LITHE_OK) s = lithe__op_bcast_binary(x->be, LITHE__BIN_DIV, saved[0], saved[1], out[0]);
    lithe_tensor_release(m), lithe_tensor_release(sq), lithe_tensor_release(eps);
    return s;
}
BWD(b_mvn) {
    UNUSED_BWD;
    lithe_tensor *dX = NULL;
    LITHE__TRY(lithe__gexec_grad(x, node, 0, &dX));
    if (!dX) return LITHE_OK;
    int64_t shape[LITHE_MAX_DIMS], K;
    LITHE__TRY(reduced_shape(x, node, in[0], shape, &K));
    lithe_tensor *xc = saved[0], *d = saved[1], *dxc = NULL, *dd = NULL, *sd = NULL, *eps = NULL, *dm = NULL;
    /* Y = xc / d: dxc, dd; d = sqrt(v) + eps: dv = dd / (2 (d - eps)); v = mean(xc^2): dxc += 2 xc dv / K;
     * xc = X - mean(X): dX += dxc - mean(dxc) */
    lithe_status s = lithe__gexec_like(x, in[0], true, &dxc);
    if (s == LITHE_OK) s = new_f32(x, in[0]->ndim, shape, true, &dd);
    if (s == LITHE_OK) s = lithe__op_bcast_binary_backward(x->be, LITHE__BIN_DIV, xc, d, out[0], dout[0], dxc, dd);
    if (s == LITHE_OK) s = new_f32(x, in[0]->ndim, shape, false, &sd);
    if (s == LITHE_OK) s = new_f32(x, 1, (int64_t[]){1}, false, &eps);
    if (s == LITHE_OK) s = lithe__op_fill(x->be, eps, MVN_EPS);
    if (s == LITHE_OK) s = lithe__op_bcast_binary(x->be, LITHE__BIN_SUB, d, eps, sd); /* the std */
    if (s == LITHE_OK) s = lithe__op_bcast_binary(x->be, LITHE__BIN_DIV, dd, sd, dd);  /* 2 dv */
    if (s == LITHE_OK) s = lithe__op_axpby(x->be, 0.0f, dd, 1.0f / (float)K, dd);     /* 2 dv / K */
    if (s == LITHE_OK) { /* dxc += xc (2 dv / K), broadcast */
        lithe_tensor *t = NULL;
        s = lithe__gexec_like(x, in[0], false, &t);
        if (s == LITHE_OK) s = lithe__op_bcast_binary(x->be, LITHE__BIN_MUL, xc, dd, t);
        if (s == LITHE_OK) s = acc(x, dxc, t);
        lithe_tensor_release(t);
    }
    if (s == LITHE_OK) s = new_f32(x, in[0]->ndim, shape, false, &dm);
    if (s == LITHE_OK) s = lithe__op_reduce_to(x->be, dxc, -1.0f / (float)K, 0.0f, dm);
    if (s == LITHE_OK) s = lithe__op_broadcast_to(x->be, dm, 1.0f, 1.0f, dxc);
    if (s == LITHE_OK) s = acc(x, dX, dxc);
    lithe_tensor_release(dxc), lithe_tensor_release(dd), lithe_tensor_release(sd), lithe_tensor_release(eps);
    lithe_tensor_release(dm);
    return s;
}

/* ---- LRN: Y = X / (bias + alpha / size * sum over a window of size channels of X^2)^beta. The
 * window sum is an average pool (count_include_pad) over X^2 viewed as (N, 1, C, H W); saved[0]
 * = D = bias + alpha avg, saved[1] = D^-beta. Backward: dX = dY D^-beta - 2 alpha beta X
 * avgpool_adjoint(dY X D^-beta / D). ---- */
static lithe_status lrn_pool(lithe__gexec *x, size_t node, const lithe_tensor *X, lithe__pool2d *g) {
    const lithe__onnx_node *n = NODE(x, node);
    if (X->ndim < 3) return fail(x, node, LITHE_ERR_SHAPE, "the input must be (N, C, ...), got %d-D", X->ndim);
    int64_t size = attr_i(n, "size", 0);
    if (size < 1) return fail(x, node, LITHE_ERR_VALUE, "size %lld", (long long)size);
    int64_t N = X->shape[0], C = X->shape[1], S = N * C > 0 ? X->numel / (N * C) : 0;
    *g = (lithe__pool2d){.N = N, .C = 1, .H = C, .W = S, .KH = size, .KW = 1, .OH = C, .OW = S, .stride = {1, 1},
                         .pad = {(size - 1) / 2, 0, size - 1 - (size - 1) / 2, 0}, .dil = {1, 1}, .max = false,
                         .count_include_pad = true};
    return LITHE_OK;
}

FWD(f_lrn) {
    UNUSED_FWD;
    LITHE__TRY(need_inputs(x, node, in, n_in, 1));
    LITHE__TRY(need_float(x, node, in[0], 0));
    const lithe__onnx_node *n = NODE(x, node);
    lithe__pool2d g;
    LITHE__TRY(lrn_pool(x, node, in[0], &g));
    float alpha = attr_f(n, "alpha", 1e-4f), beta = attr_f(n, "beta", 0.75f), bias = attr_f(n, "bias", 1.0f);
    lithe_tensor *sq = NULL, *sq4 = NULL, *d4 = NULL, *e = NULL;
    lithe_status s = lithe__gexec_like(x, in[0], false, &sq);
    if (s == LITHE_OK) s = lithe__op_mul(x->be, in[0], in[0], sq);
    if (s == LITHE_OK) s = lithe__gexec_like(x, in[0], false, &saved[0]);
    if (s == LITHE_OK) s = lithe_tensor_reshape(sq, 4, (int64_t[]){g.N, 1, g.H, g.W}, &sq4);
    if (s == LITHE_OK) s = lithe_tensor_reshape(saved[0], 4, (int64_t[]){g.N, 1, g.H, g.W}, &d4);
    if (s == LITHE_OK) s = lithe__op_pool2d(x->be, &g, sq4, d4, NULL);
    if (s == LITHE_OK) s = lithe__op_fill(x->be, sq, bias); /* sq reused: bias */
    if (s == LITHE_OK) s = lithe__op_axpby(x->be, 1.0f, sq, alpha, saved[0]);
    if (s == LITHE_OK) s = new_f32(x, 1, (int64_t[]){1}, false, &e);
    if (s == LITHE_OK) s = lithe__op_fill(x->be, e, -beta);
    if (s == LITHE_OK) s = lithe__gexec_like(x, in[0], false, &saved[1]);
    if (s == LITHE_OK) s = lithe__op_bcast_binary(x->be, LITHE__BIN_POW, saved[0], e, saved[1]);
    if (s == LITHE_OK) s = lithe__gexec_like(x, in[0], false, &out[0]);
    if (s == LITHE_OK) s = lithe__op_mul(x->be, in[0], saved[1], out[0]);
    lithe_tensor_release(sq), lithe_tensor_release(sq4), lithe_tensor_release(d4), lithe_tensor_release(e);
    return s;
}
BWD(b_lrn) {
    UNUSED_BWD;
    lithe_tensor *dX = NULL;
    LITHE__TRY(lithe__gexec_grad(x, node, 0, &dX));
    if (!dX) return LITHE_OK;
    const lithe__onnx_node *n = NODE(x, node);
    lithe__pool2d g;
    LITHE__TRY(lrn_pool(x, node, in[0], &g));
    float alpha = attr_f(n, "alpha", 1e-4f), beta = attr_f(n, "beta", 0.75f);
    lithe_tensor *t = NULL, *u = NULL, *t4 = NULL, *u4 = NULL;
    lithe_status s = lithe__gexec_like(x, in[0], false, &t);
    if (s == LITHE_OK) s = lithe__op_mul(x->be, dout[0], saved[1], t); /* dY D^-beta */
    if (s == LITHE_OK) s = acc(x, dX, t);
    if (s == LITHE_OK) s = lithe__op_mul(x->be, t, in[0], t); /* dY X D^-beta */
    if (s == LITHE_OK) s = lithe__op_bcast_binary(x->be, LITHE__BIN_DIV, t, saved[0], t);
    if (s == LITHE_OK) s = lithe__gexec_like(x, in[0], true, &u);
    if (s == LITHE_OK) s = lithe_tensor_reshape(t, 4, (int64_t[]){g.N, 1, g.H, g.W}, &t4);
    if (s == LITHE_OK) s = lithe_tensor_reshape(u, 4, (int64_t[]){g.N, 1, g.H, g.W}, &u4);
    if (s == LITHE_OK) s = lithe__op_pool2d_backward(x->be, &g, t4, NULL, u4);
    if (s == LITHE_OK) s = lithe__op_mul(x->be, u, in[0], u);
    if (s == LITHE_OK) s = lithe__op_axpby(x->be, -2.0f * alpha * beta, u, 1.0f, dX);
    lithe_tensor_release(t), lithe_tensor_release(u), lithe_tensor_release(t4), lithe_tensor_release(u4);
    return s;
}
