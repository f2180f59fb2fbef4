/* ONNX operators of the graph layer (core/graph/ops/): CumSum, Tile, Range, GatherElements,
 * GatherND (issue 23). Index arithmetic is host int64 (the ids the gather_rows / scatter_add_rows
 * primitives read, element by element: the data seen as (numel, 1) rows); float data stays on the
 * backend. */
#include "ops.h"

static lithe_status scalar_of(lithe__gexec *x, size_t node, lithe_tensor *t, size_t k, double *v) {
    if (t->numel != 1) return fail(x, node, LITHE_ERR_SHAPE, "input %zu must be a scalar, has %lld values", k, (long long)t->numel);
    if (is_int(t)) {
        *v = (double)ints(t)[0];
        return LITHE_OK;
    }
    LITHE__TRY(need_float(x, node, t, k));
    lithe_tensor *h = NULL;
    LITHE__TRY(lithe_tensor_to_backend(t, NULL, &h));
    *v = lithe__f32(h)[0];
    lithe_tensor_release(h);
    return LITHE_OK;
}

/* ---- CumSum: the axis laid first ((R, K), a copy unless it is axis 0), a running sum of rows;
 * backward the same scan of dY in the other direction. ---- */

static lithe_status axis_first(lithe__gexec *x, lithe_tensor *X, int64_t axis, int64_t *perm, lithe_tensor **out) {
    int k = 0;
    perm[k++] = axis;
    for (int d = 0; d < X->ndim; d++)
        if (d != axis) perm[k++] = d;
    if (axis == 0) {
        *out = lithe_tensor_retain(X);
        return LITHE_OK;
    }
    return perm_copy(x, X, perm, out);
}
/* X (like, rows first) back to the shape `shape` with axis at its place. */
static lithe_status axis_back(lithe__gexec *x, lithe_tensor *T, int ndim, const int64_t *shape, int64_t axis,
                              const int64_t *perm, lithe_tensor **out) {
    if (axis == 0) return lithe_tensor_reshape(T, ndim, shape, out);
    int64_t pshape[LITHE_MAX_DIMS], st[LITHE_MAX_DIMS] = {0}, vst[LITHE_MAX_DIMS], inv[LITHE_MAX_DIMS];
    for (int d = 0; d < ndim; d++) pshape[d] = shape[perm[d]];
    contiguous_strides(ndim, pshape, st);
    for (int d = 0; d < ndim; d++) inv[perm[d]] = d;
    for (int d = 0; d < ndim; d++) vst[d] = st[inv[d]];
    lithe_tensor *v = NULL;
    LITHE__TRY(view(T, ndim, shape, vst, 0, &v));
    lithe_status s = new_f32(x, ndim, shape, false, out);
    if (s == LITHE_OK) s = lithe__op_copy(x->be, *out, v);
    lithe_tensor_release(v);
    return s;
}

static lithe_status rowv(lithe_tensor *T, int64_t r, int64_t K, lithe_tensor **out) {
    return view(T, 1, (int64_t[]){K}, (int64_t[]){1}, r * K, out);
}

/* Y (R, K) = the running sum of X's rows (reverse: from the last; exclusive: without the row itself). */
static lithe_status scan_rows(lithe__gexec *x, lithe_tensor *X, int64_t R, int64_t K, bool reverse, bool exclusive,
                              lithe_tensor *Y) {
    lithe_tensor *run = NULL;
    LITHE__TRY(new_f32(x, 1, (int64_t[]){K}, false, &run));
    lithe_status s = lithe__op_fill(x->be, run, 0.0f);
    for (int64_t i = 0; s == LITHE_OK && i < R; i++) {
        int64_t r = reverse ? R - 1 - i : i;
        lithe_tensor *xr = NULL, *yr = NULL;
        s = rowv(X, r, K, &xr);
        if (s == LITHE_OK) s = rowv(Y, r, K, &yr);
        if (s == LITHE_OK && exclusive) s = lithe__op_copy(x->be, yr, run);
        if (s == LITHE_OK) s = lithe__op_axpby(x->be, 1.0f, xr, 1.0f, run);
        if (s == LITHE_OK && !exclusive) s = lithe__op_copy(x->be, yr, run);
        lithe_tensor_release(xr);
        lithe_tensor_release(yr);
    }
    lithe_tensor_release(run);
    return s;
}

static lithe_status cumsum_axis(lithe__gexec *x, size_t node, lithe_tensor **in, size_t n_in, int64_t *axis) {
    LITHE__TRY(need_inputs(x, node, in, n_in, 2));
    LITHE__TRY(need_ints(x, node, in[1], 1));
    if (in[1]->numel != 1) return fail(x, node, LITHE_ERR_SHAPE, "axis must be a scalar, has %lld values", (long long)in[1]->numel);
    if (in[0]->ndim < 1) return fail(x, node, LITHE_ERR_SHAPE, "input must have rank >= 1");
    return norm_axis(x, node, ints(in[1])[0], in[0]->ndim, false, axis);
}

static lithe_status cumsum_run(lithe__gexec *x, size_t node, lithe_tensor *X, int64_t axis, bool flip, lithe_tensor **out) {
    const lithe__onnx_node *n = NODE(x, node);
    bool reverse = (attr_i(n, "reverse", 0) != 0) != flip, excl = attr_i(n, "exclusive", 0) != 0;
    int64_t perm[LITHE_MAX_DIMS];
    lithe_tensor *Xf = NULL, *Yf = NULL;
    int64_t R = X->shape[axis], K = R ? X->numel / R : 0;
    LITHE__TRY(axis_first(x, X, axis, perm, &Xf));
    lithe_status s = lithe__gexec_like(x, Xf, false, &Yf);
    if (s == LITHE_OK) s = scan_rows(x, Xf, R, K, reverse, excl, Yf);
    if (s == LITHE_OK) s = axis_back(x, Yf, X->ndim, X->shape, axis, perm, out);
    lithe_tensor_release(Xf);
    lithe_tensor_release(Yf);
    return s;
}

FWD(f_cumsum) {
    UNUSED_FWD;
    int64_t axis = 0;
    LITHE__TRY(cumsum_axis(x, node, in, n_in, &axis));
    if (is_int(in[0])) { /* host integers (positions, masks) */
        lithe_tensor *X = in[0];
        const lithe__onnx_node *n = NODE(x, node);
        bool reverse = attr_i(n, "reverse", 0) != 0, excl = attr_i(n, "exclusive", 0) != 0;
        LITHE__TRY(new_i64(x, X->ndim, X->shape, &out[0]));
        int64_t R = X->shape[axis], inner = 1, *y = (int64_t *)lithe__tdata(out[0]);
        for (int d = (int)axis + 1; d < X->ndim; d++) inner *= X->shape[d];
        int64_t outer = R * inner > 0 ? X->numel / (R * inner) : 0;
        for (int64_t o = 0; o < outer; o++)
            for (int64_t j = 0; j < inner; j++) {
                uint64_t run = 0;
                for (int64_t i = 0; i < R; i++) {
                    int64_t r = reverse ? R - 1 - i : i, at = (o * R + r) * inner + j;
                    if (excl) y[at] = (int64_t)run;
                    run += (uint64_t)ints(X)[at];
                    if (!excl) y[at] = (int64_t)run;
                }
            }
        return LITHE_OK;
    }
    LITHE__TRY(need_float(x, node, in[0], 0));
    return cumsum_run(x, node, in[0], axis, false, &out[0]);
}
BWD(b_cumsum) {
    UNUSED_BWD;
    lithe_tensor *d = NULL, *t = NULL;
    LITHE__TRY(lithe__gexec_grad(x, node, 0, &d));
    if (!d) return LITHE_OK;
    int64_t axis = 0;
    LITHE__TRY(cumsum_axis(x, node, in, 2, &axis));
    LITHE__TRY(cumsum_run(x, node, dout[0], axis, true, &t));
    lithe_status s = acc(x, d, t);
    lithe_tensor_release(t);
    return s;
}

/* ---- Tile: X viewed with a unit axis before each repeated one, broadcast to (r_i, d_i) ---- */

static lithe_status tile_shapes(lithe__gexec *x, size_t node, lithe_tensor **in, size_t n_in, int *nd, int64_t *xs,
                                int64_t *ys, int64_t *oshape) {
    LITHE__TRY(need_inputs(x, node, in, n_in, 2));
    LITHE__TRY(need_ints(x, node, in[1], 1));
    const lithe_tensor *X = in[0], *R = in[1];
    if (R->ndim != 1 || R->numel != X->ndim)
        return fail(x, node, LITHE_ERR_SHAPE, "repeats has %lld values for a rank-%d input", (long long)R->numel, X->ndim);
    int k = 0;
    int64_t total = 1;
    for (int d = 0; d < X->ndim; d++) {
        int64_t r = ints(R)[d];
        if (r < 0 || r > ((int64_t)1 << 31)) return fail(x, node, LITHE_ERR_VALUE, "repeats[%d] = %lld", d, (long long)r);
        oshape[d] = r * X->shape[d];
        if (X->shape[d] && oshape[d] / X->shape[d] != r) return fail(x, node, LITHE_ERR_VALUE, "repeats overflow");
        if (oshape[d] && total > ((int64_t)1 << 40) / oshape[d]) return fail(x, node, LITHE_ERR_VALUE, "output too large");
        total *= oshape[d];
        if (r != 1) {
            if (k == LITHE_MAX_DIMS) return fail(x, node, LITHE_ERR_UNSUPPORTED, "too many repeated axes (rank %d)", X->ndim);
            xs[k] = 1;
            ys[k++] = r;
        }
        if (k == LITHE_MAX_DIMS) return fail(x, node, LITHE_ERR_UNSUPPORTED, "too many repeated axes (rank %d)", X->ndim);
        xs[k] = X->shape[d];
        ys[k++] = X->shape[d];
    }
    *nd = k;
    return LITHE_OK;
}

FWD(f_tile) {
    UNUSED_FWD;
    int nd = 0;
    int64_t xs[LITHE_MAX_DIMS], ys[LITHE_MAX_DIMS], oshape[LITHE_MAX_DIMS];
    LITHE__TRY(tile_shapes(x, node, in, n_in, &nd, xs, ys, oshape));
    lithe_tensor *X = in[0];
    if (is_int(X)) {
        LITHE__TRY(new_i64(x, X->ndim, oshape, &out[0]));
        int64_t idx[LITHE_MAX_DIMS] = {0}, st[LITHE_MAX_DIMS] = {0};
        contiguous_strides(X->ndim, X->shape, st);
        for (int64_t i = 0; i < out[0]->numel; i++) {
            int64_t off = 0;
            for (int d = 0; d < X->ndim; d++) off += (idx[d] % X->shape[d]) * st[d];
            ((int64_t *)lithe__tdata(out[0]))[i] = ints(X)[off];
            for (int d = X->ndim - 1; d >= 0 && ++idx[d] == oshape[d]; d--) idx[d] = 0;
        }
        return LITHE_OK;
    }
    LITHE__TRY(need_float(x, node, X, 0));
    lithe_tensor *xv = NULL, *yv = NULL;
    LITHE__TRY(new_f32(x, X->ndim, oshape, false, &out[0]));
    if (!out[0]->numel) return LITHE_OK;
    lithe_status s = lithe_tensor_reshape(X, nd, xs, &xv);
    if (s == LITHE_OK) s = lithe_tensor_reshape(out[0], nd, ys, &yv);
    if (s == LITHE_OK) s = lithe__op_broadcast_to(x->be, xv, 1.0f, 0.0f, yv);
    lithe_tensor_release(xv);
    lithe_tensor_release(yv);
    return s;
}
BWD(b_tile) {
    UNUSED_BWD;
    lithe_tensor *d = NULL, *dv = NULL, *gv = NULL;
    LITHE__TRY(lithe__gexec_grad(x, node, 0, &d));
    if (!d || !dout[0]->numel) return LITHE_OK;
    int nd = 0;
    int64_t xs[LITHE_MAX_DIMS], ys[LITHE_MAX_DIMS], oshape[LITHE_MAX_DIMS];
    LITHE__TRY(tile_shapes(x, node, in, 2, &nd, xs, ys, oshape));
    lithe_status s = lithe_tensor_reshape(d, nd, xs, &dv);
    if (s == LITHE_OK) s = lithe_tensor_reshape(dout[0], nd, ys, &gv);
    if (s == LITHE_OK) s = lithe__op_reduce_to(x->be, gv, 1.0f, 1.0f, dv);
    lithe_tensor_release(dv);
    lithe_tensor_release(gv);
    return s;
}

/* ---- Range: computed on the host from three scalars (ints stay host ints; floats go to the backend) ---- */

FWD(f_range) {
    UNUSED_FWD;
    LITHE__TRY(need_inputs(x, node, in, n_in, 3));
    bool all_int = is_int(in[0]) && is_int(in[1]) && is_int(in[2]);
    double v[3];
    for (size_t k = 0; k < 3; k++) LITHE__TRY(scalar_of(x, node, in[k], k, &v[k]));
    if (v[2] == 0.0 || v[2] != v[2]) return fail(x, node, LITHE_ERR_VALUE, "delta is %g", v[2]);
    double cnt = ceil((v[1] - v[0]) / v[2]);
    if (!(cnt <= (double)((int64_t)1 << 31))) return fail(x, node, LITHE_ERR_VALUE, "%g values", cnt);
    int64_t n = cnt > 0 ? (int64_t)cnt : 0;
    if (all_int) {
        LITHE__TRY(new_i64(x, 1, &n, &out[0]));
        for (int64_t i = 0; i < n; i++) ((int64_t *)lithe__tdata(out[0]))[i] = ints(in[0])[0] + i * ints(in[2])[0];
        return LITHE_OK;
    }
    lithe_tensor *h = NULL;
    LITHE__TRY(lithe__gexec_alloc(x, lithe__backend_host(), LITHE_F32, 1, &n, false, &h));
    float st = (float)v[0], de = (float)v[2];
    for (int64_t i = 0; i < n; i++) lithe__f32(h)[i] = st + (float)i * de;
    lithe_status s = lithe_tensor_to_backend(h, x->be, &out[0]);
    lithe_tensor_release(h);
    return s;
}

/* ---- GatherElements, GatherND: the element ids into data's flat (numel, 1) rows ---- */

/* ids[i] = the flat offset into data (in[0]) of element i of the index tensor in[1] along axis (the
 * other coordinates its own); shared with ScatterElements (scatter.c, updates shaped as indices). */
lithe_status gather_elements_ids(lithe__gexec *x, size_t node, lithe_tensor **in, size_t n_in, lithe_tensor **ids) {
    LITHE__TRY(need_inputs(x, node, in, n_in, 2));
    LITHE__TRY(need_ints(x, node, in[1], 1));
    const lithe_tensor *D = in[0], *I = in[1];
    int64_t axis = 0;
    if (D->ndim < 1) return fail(x, node, LITHE_ERR_SHAPE, "data must have rank >= 1");
    LITHE__TRY(norm_axis(x, node, attr_i(NODE(x, node), "axis", 0), D->ndim, false, &axis));
    if (I->ndim != D->ndim) return fail(x, node, LITHE_ERR_SHAPE, "indices have rank %d, data %d", I->ndim, D->ndim);
    for (int d = 0; d < D->ndim; d++)
        if (d != axis && I->shape[d] > D->shape[d])
            return fail(x, node, LITHE_ERR_SHAPE, "indices' axis %d (%lld) is longer than data's (%lld)", d,
                        (long long)I->shape[d], (long long)D->shape[d]);
    int64_t st[LITHE_MAX_DIMS] = {0}, idx[LITHE_MAX_DIMS] = {0}, ax = D->shape[axis];
    contiguous_strides(D->ndim, D->shape, st);
    LITHE__TRY(new_i64(x, 1, (int64_t[]){I->numel}, ids));
    int64_t *o = (int64_t *)lithe__tdata(*ids);
    for (int64_t i = 0; i < I->numel; i++) {
        int64_t v = ints(I)[i];
        if (v < -ax || v >= ax) {
            lithe_tensor_release(*ids);
            *ids = NULL;
            return fail(x, node, LITHE_ERR_VALUE, "index %lld outside an axis of %lld", (long long)v, (long long)ax);
        }
        int64_t off = 0;
        for (int d = 0; d < D->ndim; d++) off += (d == axis ? (v < 0 ? v + ax : v) : idx[d]) * st[d];
        o[i] = off;
        for (int d = D->ndim - 1; d >= 0 && ++idx[d] == I->shape[d]; d--) idx[d] = 0;
    }
    return LITHE_OK;
}

/* GatherND (batch_dims b): indices (..., k) address data's axes b .. b + k; the output is
 * indices' leading shape then data's remaining axes. ids index rows of data as (numel / inner, inner). */
lithe_status gather_nd_ids(lithe__gexec *x, size_t node, lithe_tensor **in, size_t n_in, lithe_tensor **ids, int *ond,
                           int64_t *oshape, int64_t *inner) {
    LITHE__TRY(need_inputs(x, node, in, n_in, 2));
    LITHE__TRY(need_ints(x, node, in[1], 1));
    const lithe_tensor *D = in[0], *I = in[1];
    int64_t b = attr_i(NODE(x, node), "batch_dims", 0);
    if (I->ndim < 1) return fail(x, node, LITHE_ERR_SHAPE, "indices must have rank >= 1");
    int64_t k = I->shape[I->ndim - 1];
    if (b < 0 || b >= I->ndim || b >= D->ndim) return fail(x, node, LITHE_ERR_VALUE, "batch_dims %lld", (long long)b);
    if (k < 1 || b + k > D->ndim) return fail(x, node, LITHE_ERR_SHAPE, "indices' last axis %lld for data of rank %d", (long long)k, D->ndim);
    for (int d = 0; d < b; d++)
        if (I->shape[d] != D->shape[d]) return fail(x, node, LITHE_ERR_SHAPE, "batch axis %d differs", d);
    *ond = 0;
    for (int d = 0; d < I->ndim - 1; d++) oshape[(*ond)++] = I->shape[d];
    *inner = 1;
    for (int d = (int)(b + k); d < D->ndim; d++) {
        if (*ond == LITHE_MAX_DIMS) return fail(x, node, LITHE_ERR_UNSUPPORTED, "output rank");
        oshape[(*ond)++] = D->shape[d];
        *inner *= D->shape[d];
    }
    int64_t nb = 1, per = 1; /* batches, index tuples per batch */
    for (int d = 0; d < b; d++) nb *= I->shape[d];
    for (int d = (int)b; d < I->ndim - 1; d++) per *= I->shape[d];
    int64_t bstride = 1; /* rows per batch of data */
    for (int d = (int)b; d < (int)(b + k); d++) bstride *= D->shape[d];
    LITHE__TRY(new_i64(x, 1, (int64_t[]){nb * per}, ids));
    int64_t *o = (int64_t *)lithe__tdata(*ids);
    for (int64_t t = 0; t < nb * per; t++) {
        int64_t row = 0;
        for (int64_t j = 0; j < k; j++) {
            int64_t s = D->shape[b + j], v = ints(I)[t * k + j];
            if (v < -s || v >= s) {
                lithe_tensor_release(*ids);
                *ids = NULL;
                return fail(x, node, LITHE_ERR_VALUE, "index %lld outside an axis of %lld", (long long)v, (long long)s);
            }
            row = row * s + (v < 0 ? v + s : v);
        }
        o[t] = (t / per) * bstride + row;
    }
    return LITHE_OK;
}

static bool is_nd(lithe__gexec *x, size_t node) { return !strcmp(NODE(x, node)->op_type, "GatherND"); }

FWD(f_gather_elements) {
    (void)n_out;
    lithe_tensor *ids = NULL, *tab = NULL, *y2 = NULL;
    int ond = 0;
    int64_t oshape[LITHE_MAX_DIMS], inner = 1;
    if (is_nd(x, node)) LITHE__TRY(gather_nd_ids(x, node, in, n_in, &ids, &ond, oshape, &inner));
    else {
        LITHE__TRY(gather_elements_ids(x, node, in, n_in, &ids));
        ond = in[1]->ndim;
        memcpy(oshape, in[1]->shape, sizeof(int64_t) * (size_t)ond);
    }
    lithe_tensor *D = in[0];
    lithe_status s = LITHE_OK;
    if (is_int(D)) {
        s = new_i64(x, ond, oshape, &out[0]);
        for (int64_t i = 0; s == LITHE_OK && i < ids->numel; i++)
            memcpy((int64_t *)lithe__tdata(out[0]) + i * inner, ints(D) + ints(ids)[i] * inner, (size_t)inner * 8);
        lithe_tensor_release(ids);
        return s;
    }
    s = need_float(x, node, D, 0);
    if (s == LITHE_OK) s = new_f32(x, ond, oshape, false, &out[0]);
    if (s == LITHE_OK && inner) s = lithe_tensor_reshape(D, 2, (int64_t[]){D->numel / inner, inner}, &tab);
    if (s == LITHE_OK && inner) s = lithe_tensor_reshape(out[0], 2, (int64_t[]){ids->numel, inner}, &y2);
    if (s == LITHE_OK && inner && ids->numel) s = gather_by_ids(x, tab, ids, y2);
    lithe_tensor_release(tab);
    lithe_tensor_release(y2);
    if (s == LITHE_OK) saved[0] = ids;
    else lithe_tensor_release(ids);
    return s;
}
BWD(b_gather_elements) {
    UNUSED_BWD;
    lithe_tensor *d = NULL, *t2 = NULL, *g2 = NULL, *ids = saved[0];
    LITHE__TRY(lithe__gexec_grad(x, node, 0, &d));
    if (!d || !ids || !ids->numel || !dout[0]->numel) return LITHE_OK;
    int64_t inner = dout[0]->numel / ids->numel;
    lithe_status s = lithe_tensor_reshape(d, 2, (int64_t[]){d->numel / inner, inner}, &t2);
    if (s == LITHE_OK) s = lithe_tensor_reshape(dout[0], 2, (int64_t[]){ids->numel, inner}, &g2);
    if (s == LITHE_OK) s = scatter_add_by_ids(x, t2, ids, g2);
    lithe_tensor_release(t2);
    lithe_tensor_release(g2);
    return s;
}
