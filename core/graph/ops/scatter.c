/* ONNX operators of the graph layer (core/graph/ops/): ScatterElements, ScatterND, Trilu, OneHot
 * (issue 23). Index arithmetic and 0 / 1 masks are made on the host (integers); the float data moves
 * by the backend's bcast_where, gather_rows and scatter_add_rows. */
#include "ops.h"

static lithe_status zero_scalar(lithe__gexec *x, lithe_tensor **out) {
    LITHE__TRY(new_f32(x, 1, (int64_t[]){1}, false, out));
    return lithe__op_fill(x->be, *out, 0.0f);
}

/* A host float mask (shape given) onto the backend. */
static lithe_status upload(lithe__gexec *x, lithe_tensor *h, lithe_tensor **out) {
    lithe_status s = lithe_tensor_to_backend(h, x->be, out);
    lithe_tensor_release(h);
    return s;
}

/* ---- ScatterElements / ScatterND: Y = data with the addressed rows replaced (reduction none) or
 * added to (add). saved[0] = the row ids, saved[1] = the keep mask (rows, 1): 0 where replaced. ---- */

static bool is_nd(lithe__gexec *x, size_t node) { return !strcmp(NODE(x, node)->op_type, "ScatterND"); }

static lithe_status scatter_ids(lithe__gexec *x, size_t node, lithe_tensor **in, size_t n_in, lithe_tensor **ids,
                                int64_t *inner, bool *add) {
    LITHE__TRY(need_inputs(x, node, in, n_in, 3));
    const lithe__onnx_attr *r = lithe__onnx_attr_get(NODE(x, node), "reduction");
    *add = r && r->s && !strcmp(r->s, "add");
    if (r && r->s && !*add && strcmp(r->s, "none"))
        return fail(x, node, LITHE_ERR_UNSUPPORTED, "reduction '%s' (lithe runs none and add)", r->s);
    int ond = 0;
    int64_t oshape[LITHE_MAX_DIMS];
    *inner = 1;
    if (is_nd(x, node)) {
        if (lithe__onnx_attr_get(NODE(x, node), "batch_dims")) return fail(x, node, LITHE_ERR_FORMAT, "ScatterND has no batch_dims");
        LITHE__TRY(gather_nd_ids(x, node, in, 2, ids, &ond, oshape, inner));
    } else {
        LITHE__TRY(gather_elements_ids(x, node, in, 2, ids));
        ond = in[1]->ndim;
        memcpy(oshape, in[1]->shape, sizeof(int64_t) * (size_t)ond);
    }
    bool same = in[2]->ndim == ond;
    for (int d = 0; same && d < ond; d++) same = in[2]->shape[d] == oshape[d];
    if (!same) {
        lithe_tensor_release(*ids);
        *ids = NULL;
        char su[LITHE__SHAPE_BUF];
        return fail(x, node, LITHE_ERR_SHAPE, "updates are %s; the indices address %d axes", lithe__shape_str(in[2], su, sizeof su), ond);
    }
    return LITHE_OK;
}

FWD(f_scatter) {
    (void)n_out;
    lithe_tensor *ids = NULL, *h = NULL, *mask = NULL, *zero = NULL, *D2 = NULL, *Y2 = NULL, *U2 = NULL;
    int64_t inner = 1;
    bool add = false;
    LITHE__TRY(scatter_ids(x, node, in, n_in, &ids, &inner, &add));
    lithe_tensor *D = in[0], *U = in[2];
    int64_t rows = inner ? D->numel / inner : 0;
    lithe_status s = LITHE_OK;
    /* the replaced rows, each once (reduction none: a row given twice has no defined result) */
    s = lithe__gexec_alloc(x, lithe__backend_host(), LITHE_F32, 2, (int64_t[]){rows, 1}, false, &h);
    for (int64_t i = 0; s == LITHE_OK && i < rows; i++) lithe__f32(h)[i] = 1.0f;
    for (int64_t i = 0; s == LITHE_OK && i < ids->numel; i++) {
        float *m = &lithe__f32(h)[ints(ids)[i]];
        if (*m == 0.0f && !add) s = fail(x, node, LITHE_ERR_VALUE, "an element is addressed twice (reduction none)");
        *m = add ? 1.0f : 0.0f;
    }
    if (s == LITHE_OK && (is_int(D) || is_int(U))) {
        if (!is_int(D) || !is_int(U)) s = fail(x, node, LITHE_ERR_DTYPE, "data and updates must both be integer or both float");
        if (s == LITHE_OK) s = new_i64(x, D->ndim, D->shape, &out[0]);
        if (s == LITHE_OK) memcpy(lithe__tdata(out[0]), ints(D), (size_t)D->numel * 8);
        for (int64_t i = 0; s == LITHE_OK && i < ids->numel; i++)
            for (int64_t j = 0; j < inner; j++) {
                int64_t *y = (int64_t *)lithe__tdata(out[0]) + ints(ids)[i] * inner + j, u = ints(U)[i * inner + j];
                *y = add ? (int64_t)((uint64_t)*y + (uint64_t)u) : u;
            }
        lithe_tensor_release(h);
        lithe_tensor_release(ids);
        return s;
    }
    if (s == LITHE_OK) s = need_float(x, node, D, 0);
    if (s == LITHE_OK) s = need_float(x, node, U, 2);
    if (s == LITHE_OK) s = upload(x, h, &mask);
    else lithe_tensor_release(h);
    if (s == LITHE_OK) s = zero_scalar(x, &zero);
    if (s == LITHE_OK) s = lithe__gexec_like(x, D, false, &out[0]);
    if (s == LITHE_OK && inner && rows) {
        s = lithe_tensor_reshape(D, 2, (int64_t[]){rows, inner}, &D2);
        if (s == LITHE_OK) s = lithe_tensor_reshape(out[0], 2, (int64_t[]){rows, inner}, &Y2);
        if (s == LITHE_OK) s = lithe_tensor_reshape(U, 2, (int64_t[]){ids->numel, inner}, &U2);
        if (s == LITHE_OK) s = lithe__op_bcast_where(x->be, mask, D2, zero, Y2);
        if (s == LITHE_OK && ids->numel) s = scatter_add_by_ids(x, Y2, ids, U2);
    }
    lithe_tensor_release(zero);
    lithe_tensor_release(D2);
    lithe_tensor_release(Y2);
    lithe_tensor_release(U2);
    if (s == LITHE_OK) {
        saved[0] = ids;
        saved[1] = mask;
    } else {
        lithe_tensor_release(ids);
        lithe_tensor_release(mask);
    }
    return s;
}
BWD(b_scatter) {
    UNUSED_BWD;
    lithe_tensor *dD = NULL, *dU = NULL, *ids = saved[0], *mask = saved[1];
    LITHE__TRY(lithe__gexec_grad(x, node, 0, &dD));
    LITHE__TRY(lithe__gexec_grad(x, node, 2, &dU));
    if ((!dD && !dU) || !ids || !dout[0]->numel) return LITHE_OK;
    int64_t rows = mask->shape[0], inner = dout[0]->numel / rows;
    lithe_tensor *g2 = NULL, *t = NULL, *zero = NULL, *u2 = NULL, *d2 = NULL;
    lithe_status s = lithe_tensor_reshape(dout[0], 2, (int64_t[]){rows, inner}, &g2);
    if (s == LITHE_OK && dD) { /* dY where kept */
        s = zero_scalar(x, &zero);
        if (s == LITHE_OK) s = new_f32(x, 2, (int64_t[]){rows, inner}, false, &t);
        if (s == LITHE_OK) s = lithe__op_bcast_where(x->be, mask, g2, zero, t);
        if (s == LITHE_OK) s = acc(x, dD, t);
    }
    if (s == LITHE_OK && dU && ids->numel) { /* dY at the addressed rows */
        s = lithe_tensor_reshape(dU, 2, (int64_t[]){ids->numel, inner}, &u2);
        if (s == LITHE_OK) s = new_f32(x, 2, (int64_t[]){ids->numel, inner}, false, &d2);
        if (s == LITHE_OK) s = gather_by_ids(x, g2, ids, d2);
        if (s == LITHE_OK) s = acc(x, u2, d2);
    }
    lithe_tensor_release(g2);
    lithe_tensor_release(t);
    lithe_tensor_release(zero);
    lithe_tensor_release(u2);
    lithe_tensor_release(d2);
    return s;
}

/* ---- Trilu: the last two axes (N, M) masked where j - i < k (upper) or j - i > k (lower) ---- */

static lithe_status trilu_mask(lithe__gexec *x, size_t node, lithe_tensor **in, size_t n_in, lithe_tensor **mask) {
    LITHE__TRY(need_inputs(x, node, in, n_in, 1));
    const lithe_tensor *X = in[0];
    if (X->ndim < 2) return fail(x, node, LITHE_ERR_SHAPE, "input must have rank >= 2");
    int64_t k = 0;
    if (n_in > 1 && in[1]) {
        LITHE__TRY(need_ints(x, node, in[1], 1));
        if (in[1]->numel != 1) return fail(x, node, LITHE_ERR_SHAPE, "k must be one value");
        k = ints(in[1])[0];
    }
    bool upper = attr_i(NODE(x, node), "upper", 1) != 0;
    int64_t N = X->shape[X->ndim - 2], M = X->shape[X->ndim - 1];
    LITHE__TRY(lithe__gexec_alloc(x, lithe__backend_host(), LITHE_F32, 2, (int64_t[]){N, M}, false, mask));
    for (int64_t i = 0; i < N; i++)
        for (int64_t j = 0; j < M; j++) {
            bool keep = upper ? j - i >= k : j - i <= k;
            lithe__f32(*mask)[i * M + j] = keep ? 1.0f : 0.0f;
        }
    return LITHE_OK;
}

FWD(f_trilu) {
    (void)n_out;
    lithe_tensor *h = NULL, *mask = NULL, *zero = NULL;
    LITHE__TRY(trilu_mask(x, node, in, n_in, &h));
    if (is_int(in[0])) {
        lithe_status s = new_i64(x, in[0]->ndim, in[0]->shape, &out[0]);
        int64_t nm = h->numel;
        for (int64_t i = 0; s == LITHE_OK && i < in[0]->numel; i++)
            ((int64_t *)lithe__tdata(out[0]))[i] = lithe__f32(h)[i % nm] != 0.0f ? ints(in[0])[i] : 0;
        lithe_tensor_release(h);
        return s;
    }
    lithe_status s = need_float(x, node, in[0], 0);
    if (s == LITHE_OK) s = upload(x, h, &mask);
    else lithe_tensor_release(h);
    if (s == LITHE_OK) s = zero_scalar(x, &zero);
    if (s == LITHE_OK) s = lithe__gexec_like(x, in[0], false, &out[0]);
    if (s == LITHE_OK && in[0]->numel) s = lithe__op_bcast_where(x->be, mask, in[0], zero, out[0]);
    lithe_tensor_release(zero);
    if (s == LITHE_OK) saved[0] = mask;
    else lithe_tensor_release(mask);
    return s;
}
BWD(b_trilu) {
    UNUSED_BWD;
    lithe_tensor *d = NULL, *t = NULL, *zero = NULL;
    LITHE__TRY(lithe__gexec_grad(x, node, 0, &d));
    if (!d || !saved[0] || !d->numel) return LITHE_OK;
    lithe_status s = zero_scalar(x, &zero);
    if (s == LITHE_OK) s = lithe__gexec_like(x, d, false, &t);
    if (s == LITHE_OK) s = lithe__op_bcast_where(x->be, saved[0], dout[0], zero, t);
    if (s == LITHE_OK) s = acc(x, d, t);
    lithe_tensor_release(t);
    lithe_tensor_release(zero);
    return s;
}

/* ---- OneHot(indices, depth, values = [off, on]): depth inserted at axis ---- */

FWD(f_one_hot) {
    UNUSED_FWD;
    LITHE__TRY(need_inputs(x, node, in, n_in, 3));
    lithe_tensor *I = in[0], *Ih = NULL, *V = in[2];
    if (in[1]->numel != 1) return fail(x, node, LITHE_ERR_SHAPE, "depth must be one value");
    if (V->numel != 2) return fail(x, node, LITHE_ERR_SHAPE, "values must hold [off, on], has %lld", (long long)V->numel);
    int64_t depth = 0;
    if (is_int(in[1])) depth = ints(in[1])[0];
    else {
        lithe_tensor *h = NULL;
        LITHE__TRY(lithe_tensor_to_backend(in[1], NULL, &h));
        depth = (int64_t)lithe__f32(h)[0];
        lithe_tensor_release(h);
    }
    if (depth < 1 || depth > ((int64_t)1 << 24)) return fail(x, node, LITHE_ERR_VALUE, "depth %lld", (long long)depth);
    int rank = I->ndim + 1;
    if (rank > LITHE_MAX_DIMS) return fail(x, node, LITHE_ERR_UNSUPPORTED, "output rank %d", rank);
    int64_t axis = 0;
    LITHE__TRY(norm_axis(x, node, attr_i(NODE(x, node), "axis", -1), rank, false, &axis));
    if (I->numel > ((int64_t)1 << 32) / depth) return fail(x, node, LITHE_ERR_VALUE, "output too large");
    int64_t shape[LITHE_MAX_DIMS], outer = 1, inner = 1;
    for (int d = 0, k = 0; d < rank; d++) {
        shape[d] = d == axis ? depth : I->shape[k++];
        if (d < axis) outer *= shape[d];
        if (d > axis) inner *= shape[d];
    }
    if (is_int(I)) Ih = lithe_tensor_retain(I);
    else LITHE__TRY(lithe_tensor_to_backend(I, NULL, &Ih));
    lithe_tensor *h = NULL, *mask = NULL, *on = NULL, *off = NULL, *Vc = NULL;
    lithe_status s = lithe__gexec_alloc(x, lithe__backend_host(), LITHE_F32, rank, shape, true, &h);
    for (int64_t o = 0; s == LITHE_OK && o < outer; o++)
        for (int64_t j = 0; j < inner; j++) {
            int64_t at = o * inner + j;
            int64_t v = is_int(Ih) ? ints(Ih)[at] : (int64_t)lithe__f32(Ih)[at];
            if (v < 0) v += depth;
            if (v >= 0 && v < depth) lithe__f32(h)[(o * depth + v) * inner + j] = 1.0f;
        }
    if (s == LITHE_OK) s = upload(x, h, &mask);
    else lithe_tensor_release(h);
    if (s == LITHE_OK && is_int(V)) { /* integer values: a float result (lithe's booleans and counts are float here) */
        lithe_tensor *hv = NULL;
        s = lithe__gexec_alloc(x, lithe__backend_host(), LITHE_F32, 1, (int64_t[]){2}, false, &hv);
        if (s == LITHE_OK) lithe__f32(hv)[0] = (float)ints(V)[0], lithe__f32(hv)[1] = (float)ints(V)[1];
        if (s == LITHE_OK) s = upload(x, hv, &Vc);
    } else if (s == LITHE_OK) {
        Vc = lithe_tensor_retain(V);
    }
    if (s == LITHE_OK) s = view(Vc, 1, (int64_t[]){1}, (int64_t[]){1}, 0, &off);
    if (s == LITHE_OK) s = view(Vc, 1, (int64_t[]){1}, (int64_t[]){1}, 1, &on);
    if (s == LITHE_OK) s = new_f32(x, rank, shape, false, &out[0]);
    if (s == LITHE_OK) s = lithe__op_bcast_where(x->be, mask, on, off, out[0]);
    lithe_tensor_release(Ih);
    lithe_tensor_release(mask);
    lithe_tensor_release(on);
    lithe_tensor_release(off);
    lithe_tensor_release(Vc);
    return s;
}
