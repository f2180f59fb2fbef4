/* ONNX operators of the graph layer (core/graph/ops/): ReduceMax, ReduceMin, ReduceProd, ReduceL1,
 * ReduceL2, ReduceLogSumExp, ReduceSumSquare, ArgMax, ArgMin (issue 23).
 *
 * Max / Min / ArgMax / ArgMin run on the reduce_max primitive (groups of rows): the input seen as
 * (B, R, O) with the reduced axes one block of R rows, read in place when those axes are adjacent,
 * else copied with them first (B 1, O the kept count). Prod walks the reduced rows with mul. The
 * norms and LogSumExp are mul / unary / reduce_to / broadcast_to. A NaN in a reduced group makes
 * ReduceMax / ReduceMin NaN (reduce_max itself keeps the first maximum). */
#include "ops.h"

/* ---- geometry ---- */

typedef struct rgeom {
    bool mark[LITHE_MAX_DIMS]; /* the reduced axes */
    int64_t kshape[LITHE_MAX_DIMS], oshape[LITHE_MAX_DIMS];
    int ond;
    bool noop; /* axes empty with noop_with_empty_axes: the identity */
} rgeom;

/* axes from the attribute (opset < 18) or input 1 (opset 18; ReduceSum from 13); ArgMax / ArgMin:
 * the one axis attribute. */
static lithe_status rgeom_of(lithe__gexec *x, size_t node, lithe_tensor **in, size_t n_in, bool arg, rgeom *g) {
    const lithe__onnx_node *n = NODE(x, node);
    const lithe_tensor *X = in[0];
    memset(g, 0, sizeof *g);
    int64_t one = attr_i(n, "axis", 0);
    size_t na = 0;
    const int64_t *axes = arg ? &one : attr_ints(n, "axes", &na);
    if (arg) na = 1;
    if (!arg && n_in > 1 && in[1]) {
        LITHE__TRY(need_ints(x, node, in[1], 1));
        if (in[1]->ndim > 1) return fail(x, node, LITHE_ERR_SHAPE, "axes must be 1-D");
        axes = ints(in[1]);
        na = (size_t)in[1]->numel;
    }
    if (arg && X->ndim == 0) return fail(x, node, LITHE_ERR_SHAPE, "input must have rank >= 1");
    if (na == 0 && attr_i(n, "noop_with_empty_axes", 0)) g->noop = true;
    if (na == 0)
        for (int d = 0; d < X->ndim; d++) g->mark[d] = true;
    for (size_t k = 0; k < na; k++) {
        int64_t a = 0;
        LITHE__TRY(norm_axis(x, node, axes[k], X->ndim, false, &a));
        if (g->mark[a]) return fail(x, node, LITHE_ERR_VALUE, "axis %lld given twice", (long long)axes[k]);
        g->mark[a] = true;
    }
    bool keep = attr_i(n, "keepdims", 1) != 0;
    for (int d = 0; d < X->ndim; d++) {
        g->kshape[d] = g->mark[d] ? 1 : X->shape[d];
        if (!g->mark[d] || keep) g->oshape[g->ond++] = g->kshape[d];
    }
    return LITHE_OK;
}

/* X as (B, R, O): the layout reduce_max reads. lead: the reduced axes must come first (B 1). */
typedef struct rlay {
    int64_t B, R, O;
    bool permuted;
    int64_t perm[LITHE_MAX_DIMS], pshape[LITHE_MAX_DIMS];
} rlay;

static lithe_status layout(lithe__gexec *x, lithe_tensor *X, const bool *mark, bool lead, rlay *L, lithe_tensor **Xg) {
    int lo = -1, hi = -1;
    memset(L, 0, sizeof *L);
    for (int d = 0; d < X->ndim; d++)
        if (mark[d]) {
            if (lo < 0) lo = d;
            hi = d;
        }
    bool block = lo >= 0;
    for (int d = lo; block && d <= hi; d++) block = mark[d];
    L->B = L->R = L->O = 1;
    if (lo < 0) { /* nothing reduced (a rank-0 input) */
        L->O = X->numel;
        *Xg = lithe_tensor_retain(X);
        return LITHE_OK;
    }
    if (block && (!lead || lo == 0)) {
        for (int d = 0; d < X->ndim; d++) *(d < lo ? &L->B : d <= hi ? &L->R : &L->O) *= X->shape[d];
        *Xg = lithe_tensor_retain(X);
        return LITHE_OK;
    }
    int k = 0;
    for (int d = 0; d < X->ndim; d++)
        if (mark[d]) L->perm[k++] = d, L->R *= X->shape[d];
    for (int d = 0; d < X->ndim; d++)
        if (!mark[d]) L->perm[k++] = d, L->O *= X->shape[d];
    for (int d = 0; d < X->ndim; d++) L->pshape[d] = X->shape[L->perm[d]];
    L->permuted = true;
    return perm_copy(x, X, L->perm, Xg);
}

/* d (X's shape) += G, G in the layout L (numel as X). */
static lithe_status unlayout_acc(lithe__gexec *x, lithe_tensor *G, const rlay *L, lithe_tensor *d) {
    lithe_tensor *g = NULL, *t = NULL;
    if (!L->permuted) {
        LITHE__TRY(lithe_tensor_reshape(G, d->ndim, d->shape, &g));
        lithe_status s = acc(x, d, g);
        lithe_tensor_release(g);
        return s;
    }
    int64_t inv[LITHE_MAX_DIMS];
    for (int k = 0; k < d->ndim; k++) inv[L->perm[k]] = k;
    lithe_status s = lithe_tensor_reshape(G, d->ndim, L->pshape, &g);
    if (s == LITHE_OK) s = perm_copy(x, g, inv, &t);
    if (s == LITHE_OK) s = acc(x, d, t);
    lithe_tensor_release(g);
    lithe_tensor_release(t);
    return s;
}

static lithe_status scalar_f32(lithe__gexec *x, float v, lithe_tensor **out) {
    LITHE__TRY(new_f32(x, 1, (int64_t[]){1}, false, out));
    return lithe__op_fill(x->be, *out, v);
}

static lithe_status lengths_of(lithe__gexec *x, const rlay *L, lithe_tensor **out) {
    if (L->R > INT32_MAX) return lithe__fail(LITHE_ERR_UNSUPPORTED, "a reduction over %lld values", (long long)L->R);
    LITHE__TRY(lithe__gexec_alloc(x, lithe__backend_host(), LITHE_I32, 1, (int64_t[]){L->B}, false, out));
    for (int64_t b = 0; b < L->B; b++) ((int32_t *)lithe__tdata(*out))[b] = (int32_t)L->R;
    return LITHE_OK;
}

/* The maximum (neg: minimum) of X over g's axes, shaped kshape, and which (B, O) int32: the first
 * maximum's row within its group. */
static lithe_status max_of(lithe__gexec *x, size_t node, lithe_tensor *X, const bool *mark, const int64_t *kshape, bool neg,
                           lithe_tensor **Y, lithe_tensor **which, rlay *L) {
    lithe_tensor *Xn = NULL, *Xg = NULL, *X2 = NULL, *Y2 = NULL, *len = NULL;
    if (neg) {
        LITHE__TRY(lithe__gexec_like(x, X, false, &Xn));
        lithe_status s = lithe__op_unary(x->be, LITHE__UN_NEG, X, Xn);
        if (s != LITHE_OK) {
            lithe_tensor_release(Xn);
            return s;
        }
    } else {
        Xn = lithe_tensor_retain(X);
    }
    lithe_status s = layout(x, Xn, mark, false, L, &Xg);
    lithe_tensor_release(Xn);
    if (s == LITHE_OK && L->R == 0) s = fail(x, node, LITHE_ERR_SHAPE, "reduces an empty axis (no maximum)");
    if (s == LITHE_OK) s = lengths_of(x, L, &len);
    if (s == LITHE_OK) s = new_f32(x, X->ndim, kshape, false, Y);
    if (s == LITHE_OK) s = lithe__gexec_alloc(x, x->be, LITHE_I32, 2, (int64_t[]){L->B, L->O}, false, which);
    if (s == LITHE_OK) s = lithe_tensor_reshape(Xg, 2, (int64_t[]){L->B * L->R, L->O}, &X2);
    if (s == LITHE_OK) s = lithe_tensor_reshape(*Y, 2, (int64_t[]){L->B, L->O}, &Y2);
    if (s == LITHE_OK && L->B * L->O > 0) s = lithe__op_reduce_max(x->be, X2, len, Y2, *which);
    if (s == LITHE_OK && neg) s = lithe__op_unary(x->be, LITHE__UN_NEG, *Y, *Y);
    lithe_tensor_release(Xg);
    lithe_tensor_release(X2);
    lithe_tensor_release(Y2);
    lithe_tensor_release(len);
    return s;
}

/* Y (kshape) = NaN where X's group holds a NaN: the count of X == X per group below the group size. */
static lithe_status nan_through(lithe__gexec *x, lithe_tensor *X, int64_t R, lithe_tensor *Y) {
    lithe_tensor *eq = NULL, *cnt = NULL, *lim = NULL, *nan = NULL, *t = NULL;
    lithe_status s = lithe__gexec_like(x, X, false, &eq);
    if (s == LITHE_OK) s = lithe__gexec_like(x, Y, false, &cnt);
    if (s == LITHE_OK) s = lithe__gexec_like(x, Y, false, &t);
    if (s == LITHE_OK) s = scalar_f32(x, (float)R - 0.5f, &lim);
    if (s == LITHE_OK) s = scalar_f32(x, NAN, &nan);
    if (s == LITHE_OK) s = lithe__op_bcast_binary(x->be, LITHE__BIN_EQUAL, X, X, eq);
    if (s == LITHE_OK) s = lithe__op_reduce_to(x->be, eq, 1.0f, 0.0f, cnt);
    if (s == LITHE_OK) s = lithe__op_bcast_binary(x->be, LITHE__BIN_LESS, cnt, lim, cnt);
    if (s == LITHE_OK) s = lithe__op_bcast_where(x->be, cnt, nan, Y, t);
    if (s == LITHE_OK) s = lithe__op_copy(x->be, Y, t);
    lithe_tensor_release(eq);
    lithe_tensor_release(cnt);
    lithe_tensor_release(lim);
    lithe_tensor_release(nan);
    lithe_tensor_release(t);
    return s;
}

/* ---- Prod over the reduced axes laid first, (R, K) ---- */

static lithe_status row(lithe_tensor *T, int64_t r, int64_t K, lithe_tensor **out) {
    return view(T, 1, (int64_t[]){K}, (int64_t[]){1}, r * K, out);
}

static lithe_status prod_fwd(lithe__gexec *x, lithe_tensor *X, const rgeom *g, lithe_tensor **Y) {
    rlay L;
    lithe_tensor *Xg = NULL, *y1 = NULL;
    LITHE__TRY(layout(x, X, g->mark, true, &L, &Xg));
    int64_t K = L.O;
    lithe_status s = new_f32(x, X->ndim, g->kshape, false, Y);
    if (s == LITHE_OK) s = lithe_tensor_reshape(*Y, 1, (int64_t[]){K}, &y1);
    if (s == LITHE_OK) s = lithe__op_fill(x->be, y1, 1.0f);
    for (int64_t r = 0; s == LITHE_OK && r < L.R; r++) {
        lithe_tensor *xr = NULL;
        s = row(Xg, r, K, &xr);
        if (s == LITHE_OK) s = lithe__op_mul(x->be, y1, xr, y1);
        lithe_tensor_release(xr);
    }
    lithe_tensor_release(Xg);
    lithe_tensor_release(y1);
    return s;
}

/* dX_r = dY * (product of the rows before r) * (product of the rows after r): no division, so zeros are exact. */
static lithe_status prod_bwd(lithe__gexec *x, lithe_tensor *X, const rgeom *g, lithe_tensor *dY, lithe_tensor *d) {
    rlay L;
    lithe_tensor *Xg = NULL, *G = NULL, *run = NULL, *dy1 = NULL;
    LITHE__TRY(layout(x, X, g->mark, true, &L, &Xg));
    int64_t K = L.O;
    lithe_status s = new_f32(x, 1, (int64_t[]){L.R * K}, false, &G);
    if (s == LITHE_OK) s = new_f32(x, 1, (int64_t[]){K}, false, &run);
    if (s == LITHE_OK) s = lithe_tensor_reshape(dY, 1, (int64_t[]){K}, &dy1);
    if (s == LITHE_OK) s = lithe__op_copy(x->be, run, dy1);
    for (int64_t r = 0; s == LITHE_OK && r < L.R; r++) { /* G_r = dY * prefix_r */
        lithe_tensor *xr = NULL, *gr = NULL;
        s = row(Xg, r, K, &xr);
        if (s == LITHE_OK) s = row(G, r, K, &gr);
        if (s == LITHE_OK) s = lithe__op_copy(x->be, gr, run);
        if (s == LITHE_OK) s = lithe__op_mul(x->be, run, xr, run);
        lithe_tensor_release(xr);
        lithe_tensor_release(gr);
    }
    if (s == LITHE_OK) s = lithe__op_fill(x->be, run, 1.0f);
    for (int64_t r = L.R - 1; s == LITHE_OK && r >= 0; r--) { /* G_r *= suffix_r */
        lithe_tensor *xr = NULL, *gr = NULL;
        s = row(Xg, r, K, &xr);
        if (s == LITHE_OK) s = row(G, r, K, &gr);
        if (s == LITHE_OK) s = lithe__op_mul(x->be, gr, run, gr);
        if (s == LITHE_OK) s = lithe__op_mul(x->be, run, xr, run);
        lithe_tensor_release(xr);
        lithe_tensor_release(gr);
    }
    if (s == LITHE_OK) s = unlayout_acc(x, G, &L, d);
    lithe_tensor_release(Xg);
    lithe_tensor_release(G);
    lithe_tensor_release(run);
    lithe_tensor_release(dy1);
    return s;
}

/* ---- the reductions ---- */

enum { R_MAX, R_MIN, R_PROD, R_L1, R_L2, R_LSE, R_SUMSQ };
static int rkind(const char *op) {
    if (!strcmp(op, "ReduceMax")) return R_MAX;
    if (!strcmp(op, "ReduceMin")) return R_MIN;
    if (!strcmp(op, "ReduceProd")) return R_PROD;
    if (!strcmp(op, "ReduceL1")) return R_L1;
    if (!strcmp(op, "ReduceL2")) return R_L2;
    if (!strcmp(op, "ReduceLogSumExp")) return R_LSE;
    return R_SUMSQ;
}

/* Y (kshape) = sum over the axes of f(X): |X| (L1), X^2 (SumSquare, L2 before its sqrt), exp(X - m) (LSE). */
static lithe_status sum_of(lithe__gexec *x, int kind, lithe_tensor *X, const rgeom *g, lithe_tensor *m, lithe_tensor **Y) {
    lithe_tensor *t = NULL;
    LITHE__TRY(lithe__gexec_like(x, X, false, &t));
    lithe_status s = LITHE_OK;
    if (kind == R_L1) s = lithe__op_unary(x->be, LITHE__UN_ABS, X, t);
    else if (kind == R_LSE) {
        s = lithe__op_broadcast_to(x->be, m, -1.0f, 0.0f, t);
        if (s == LITHE_OK) s = lithe__op_axpby(x->be, 1.0f, X, 1.0f, t);
        if (s == LITHE_OK) s = lithe__op_unary(x->be, LITHE__UN_EXP, t, t);
    } else s = lithe__op_mul(x->be, X, X, t);
    if (s == LITHE_OK) s = new_f32(x, X->ndim, g->kshape, false, Y);
    if (s == LITHE_OK) s = lithe__op_reduce_to(x->be, t, 1.0f, 0.0f, *Y);
    lithe_tensor_release(t);
    return s;
}

/* Max / Min / Prod of host integers (shape arithmetic), each output the fold of its group. */
static lithe_status int_reduce(lithe__gexec *x, size_t node, int kind, lithe_tensor *X, const rgeom *g, lithe_tensor **out) {
    if (kind != R_MAX && kind != R_MIN && kind != R_PROD)
        return fail(x, node, LITHE_ERR_DTYPE, "input 0 must be float, got %s", lithe_dtype_name(X->dtype));
    lithe_tensor *Y = NULL;
    int64_t idx[LITHE_MAX_DIMS] = {0}, kst[LITHE_MAX_DIMS] = {0};
    LITHE__TRY(new_i64(x, X->ndim, g->kshape, &Y));
    contiguous_strides(X->ndim, g->kshape, kst);
    int64_t *y = (int64_t *)lithe__tdata(Y);
    bool *seen = lithe__malloc((size_t)(Y->numel ? Y->numel : 1));
    if (!seen) {
        lithe_tensor_release(Y);
        return lithe__fail(LITHE_ERR_OOM, "ReduceMax");
    }
    memset(seen, 0, (size_t)(Y->numel ? Y->numel : 1));
    for (int64_t i = 0; i < X->numel; i++) {
        int64_t o = 0, v = ints(X)[i];
        for (int d = 0; d < X->ndim; d++) o += (g->mark[d] ? 0 : idx[d]) * kst[d];
        if (!seen[o]) y[o] = v;
        else if (kind == R_MAX) y[o] = v > y[o] ? v : y[o];
        else if (kind == R_MIN) y[o] = v < y[o] ? v : y[o];
        else y[o] = (int64_t)((uint64_t)y[o] * (uint64_t)v);
        seen[o] = true;
        for (int d = X->ndim - 1; d >= 0 && ++idx[d] == X->shape[d]; d--) idx[d] = 0;
    }
    for (int64_t o = 0; o < Y->numel; o++)
        if (!seen[o] && kind == R_PROD) y[o] = 1;
        else if (!seen[o]) {
            lithe__free(seen);
            lithe_tensor_release(Y);
            return fail(x, node, LITHE_ERR_SHAPE, "reduces an empty axis (no maximum)");
        }
    lithe__free(seen);
    lithe_status s = lithe_tensor_reshape(Y, g->ond, g->oshape, out);
    lithe_tensor_release(Y);
    return s;
}

FWD(f_reduce2) {
    (void)n_out;
    LITHE__TRY(need_inputs(x, node, in, n_in, 1));
    rgeom g;
    LITHE__TRY(rgeom_of(x, node, in, n_in, false, &g));
    if (g.noop) {
        out[0] = lithe_tensor_retain(in[0]);
        return LITHE_OK;
    }
    int kind = rkind(NODE(x, node)->op_type);
    if (is_int(in[0])) return int_reduce(x, node, kind, in[0], &g, &out[0]);
    LITHE__TRY(need_float(x, node, in[0], 0));
    lithe_tensor *X = in[0], *Y = NULL, *m = NULL, *which = NULL;
    rlay L;
    lithe_status s = LITHE_OK;
    if (kind == R_MAX || kind == R_MIN) {
        s = max_of(x, node, X, g.mark, g.kshape, kind == R_MIN, &Y, &which, &L);
        if (s == LITHE_OK) s = nan_through(x, X, L.R, Y);
        saved[0] = which;
    } else if (kind == R_PROD) {
        s = prod_fwd(x, X, &g, &Y);
    } else if (kind == R_LSE) { /* log(sum(exp(X - m))) + m, m the maximum (a constant to the gradient) */
        lithe_tensor *t = NULL;
        s = max_of(x, node, X, g.mark, g.kshape, false, &m, &which, &L);
        lithe_tensor_release(which);
        if (s == LITHE_OK) s = sum_of(x, kind, X, &g, m, &Y);
        if (s == LITHE_OK) s = lithe__op_unary(x->be, LITHE__UN_LOG, Y, Y);
        if (s == LITHE_OK) s = lithe__op_axpby(x->be, 1.0f, m, 1.0f, Y);
        lithe_tensor_release(t);
    } else {
        s = sum_of(x, kind, X, &g, NULL, &Y);
        if (s == LITHE_OK && kind == R_L2) s = lithe__op_unary(x->be, LITHE__UN_SQRT, Y, Y);
    }
    if (s == LITHE_OK) s = lithe_tensor_reshape(Y, g.ond, g.oshape, &out[0]);
    lithe_tensor_release(Y);
    lithe_tensor_release(m);
    return s;
}

BWD(b_reduce2) {
    (void)n_in;
    lithe_tensor *d = NULL;
    LITHE__TRY(lithe__gexec_grad(x, node, 0, &d));
    if (!d) return LITHE_OK;
    rgeom g;
    LITHE__TRY(rgeom_of(x, node, in, n_in, false, &g));
    if (g.noop) return acc(x, d, dout[0]);
    int kind = rkind(NODE(x, node)->op_type);
    lithe_tensor *X = in[0], *dk = NULL, *t = NULL, *Yk = NULL, *G = NULL, *len = NULL, *dy2 = NULL;
    lithe_status s = lithe_tensor_reshape(dout[0], X->ndim, g.kshape, &dk);
    if (s != LITHE_OK) return s;
    if (kind == R_MAX || kind == R_MIN) {
        rlay L;
        lithe_tensor *Xg = NULL;
        s = layout(x, X, g.mark, false, &L, &Xg); /* only L is needed */
        lithe_tensor_release(Xg);
        if (s == LITHE_OK) s = lengths_of(x, &L, &len);
        if (s == LITHE_OK) s = new_f32(x, 2, (int64_t[]){L.B * L.R, L.O}, false, &G);
        if (s == LITHE_OK) s = lithe_tensor_reshape(dk, 2, (int64_t[]){L.B, L.O}, &dy2);
        if (s == LITHE_OK && L.B * L.O > 0) s = lithe__op_reduce_max_backward(x->be, dy2, saved[0], len, G);
        if (s == LITHE_OK) s = unlayout_acc(x, G, &L, d);
    } else if (kind == R_PROD) {
        s = prod_bwd(x, X, &g, dk, d);
    } else {
        s = lithe__gexec_like(x, X, false, &t);
        if (s == LITHE_OK) s = lithe__op_broadcast_to(x->be, dk, 1.0f, 0.0f, t); /* dY on X's shape */
        if (kind == R_L1) {
            if (s == LITHE_OK) s = lithe__op_unary_backward(x->be, LITHE__UN_ABS, X, X, t, d);
        } else if (kind == R_SUMSQ) {
            if (s == LITHE_OK) s = lithe__op_mul(x->be, t, X, t);
            if (s == LITHE_OK) s = lithe__op_axpby(x->be, 2.0f, t, 1.0f, d);
        } else { /* L2: X dY / Y; LSE: exp(X - Y) dY */
            lithe_tensor *u = NULL;
            s = s == LITHE_OK ? lithe__gexec_like(x, X, false, &u) : s;
            if (s == LITHE_OK) s = lithe_tensor_reshape(out[0], X->ndim, g.kshape, &Yk);
            if (kind == R_L2) {
                if (s == LITHE_OK) s = lithe__op_broadcast_to(x->be, Yk, 1.0f, 0.0f, u);
                if (s == LITHE_OK) s = lithe__op_bcast_binary(x->be, LITHE__BIN_DIV, X, u, u);
            } else {
                if (s == LITHE_OK) s = lithe__op_broadcast_to(x->be, Yk, -1.0f, 0.0f, u);
                if (s == LITHE_OK) s = lithe__op_axpby(x->be, 1.0f, X, 1.0f, u);
                if (s == LITHE_OK) s = lithe__op_unary(x->be, LITHE__UN_EXP, u, u);
            }
            if (s == LITHE_OK) s = lithe__op_mul(x->be, t, u, t);
            if (s == LITHE_OK) s = acc(x, d, t);
            lithe_tensor_release(u);
        }
    }
    lithe_tensor_release(dk);
    lithe_tensor_release(t);
    lithe_tensor_release(Yk);
    lithe_tensor_release(G);
    lithe_tensor_release(len);
    lithe_tensor_release(dy2);
    return s;
}

/* M = 1 where X is NaN, else 0. */
static lithe_status nan_mask(lithe__gexec *x, lithe_tensor *X, lithe_tensor *M) {
    lithe_tensor *one = NULL;
    lithe_status s = scalar_f32(x, 1.0f, &one);
    if (s == LITHE_OK) s = lithe__op_bcast_binary(x->be, LITHE__BIN_EQUAL, X, X, M);
    if (s == LITHE_OK) s = lithe__op_bcast_binary(x->be, LITHE__BIN_SUB, one, M, M);
    lithe_tensor_release(one);
    return s;
}

/* ---- ArgMax / ArgMin: reduce_max's which, read back to host int64; select_last_index reverses
 * the axis first (a gather of rows). A NaN in a group is its result (the first NaN; the last with
 * select_last_index), as torch.argmax / argmin and numpy give it. ---- */

FWD(f_argmax) {
    UNUSED_FWD;
    LITHE__TRY(need_inputs(x, node, in, n_in, 1));
    LITHE__TRY(need_float(x, node, in[0], 0));
    const lithe__onnx_node *n = NODE(x, node);
    rgeom g;
    LITHE__TRY(rgeom_of(x, node, in, 1, true, &g));
    bool last = attr_i(n, "select_last_index", 0) != 0, neg = !strcmp(n->op_type, "ArgMin");
    lithe_tensor *X = lithe_tensor_retain(in[0]), *Y = NULL, *which = NULL, *wh = NULL;
    rlay L;
    lithe_status s = LITHE_OK;
    if (last) { /* X with the axis reversed: rows o R + (R - 1 - r) of (B R, O) */
        lithe_tensor *Xg = NULL, *tab = NULL, *ids = NULL, *Xr = NULL, *Y2 = NULL;
        s = layout(x, X, g.mark, false, &L, &Xg);
        if (s == LITHE_OK) s = lithe_tensor_reshape(Xg, 2, (int64_t[]){L.B * L.R, L.O}, &tab);
        if (s == LITHE_OK) s = new_i64(x, 1, (int64_t[]){L.B * L.R}, &ids);
        for (int64_t b = 0; s == LITHE_OK && b < L.B; b++)
            for (int64_t r = 0; r < L.R; r++) ((int64_t *)lithe__tdata(ids))[b * L.R + r] = b * L.R + (L.R - 1 - r);
        if (s == LITHE_OK) s = lithe__gexec_like(x, X, false, &Xr);
        if (s == LITHE_OK) s = lithe_tensor_reshape(Xr, 2, (int64_t[]){L.B * L.R, L.O}, &Y2);
        if (s == LITHE_OK && Y2->numel) s = gather_by_ids(x, tab, ids, Y2);
        lithe_tensor_release(Xg);
        lithe_tensor_release(tab);
        lithe_tensor_release(ids);
        lithe_tensor_release(Y2);
        lithe_tensor_release(X);
        X = Xr;
    }
    lithe_tensor *nm = NULL, *nY = NULL, *nw = NULL, *nwh = NULL, *nYh = NULL;
    if (s == LITHE_OK) s = max_of(x, node, X, g.mark, g.kshape, neg, &Y, &which, &L);
    if (s == LITHE_OK) s = lithe_tensor_to_backend(which, NULL, &wh);
    /* a NaN wins, as in torch and numpy: the first NaN's row, found as the maximum of the NaN mask */
    if (s == LITHE_OK) s = lithe__gexec_like(x, X, false, &nm);
    if (s == LITHE_OK) s = nan_mask(x, X, nm);
    if (s == LITHE_OK) s = max_of(x, node, nm, g.mark, g.kshape, false, &nY, &nw, &L);
    if (s == LITHE_OK) s = lithe_tensor_to_backend(nw, NULL, &nwh);
    if (s == LITHE_OK) s = lithe_tensor_to_backend(nY, NULL, &nYh);
    if (s == LITHE_OK) s = new_i64(x, g.ond, g.oshape, &out[0]);
    for (int64_t i = 0; s == LITHE_OK && i < out[0]->numel; i++) {
        bool nan = lithe__f32(nYh)[i] > 0.0f;
        int64_t w = ((const int32_t *)lithe__tdata(nan ? nwh : wh))[i];
        ((int64_t *)lithe__tdata(out[0]))[i] = last ? L.R - 1 - w : w;
    }
    lithe_tensor_release(X);
    lithe_tensor_release(Y);
    lithe_tensor_release(which);
    lithe_tensor_release(wh);
    lithe_tensor_release(nm);
    lithe_tensor_release(nY);
    lithe_tensor_release(nw);
    lithe_tensor_release(nwh);
    lithe_tensor_release(nYh);
    return s;
}
