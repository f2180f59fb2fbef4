/* ONNX operators of the graph layer (core/graph/ops/): Constant, Shape, Gather, Cast, ConstantOfShape. */
#include "ops.h"

/* ---- Constant, Shape, Gather, Cast, ConstantOfShape ---- */

FWD(f_constant) {
    (void)in;
    (void)n_in;
    UNUSED_FWD;
    const lithe__onnx_node *n = NODE(x, node);
    const lithe__onnx_attr *a;
    if ((a = lithe__onnx_attr_get(n, "value")) && a->t) {
        if (a->t->ext_location) return fail(x, node, LITHE_ERR_UNSUPPORTED, "external data in a Constant");
        LITHE__TRY(lithe__gexec_alloc(x, lithe__backend_host(), a->t->is_float ? LITHE_F32 : LITHE_I64, a->t->ndim, a->t->dims,
                                       false, &out[0]));
        if (a->t->numel) memcpy(lithe__tdata(out[0]), a->t->data, (size_t)a->t->numel * (a->t->is_float ? 4 : 8));
    } else if ((a = lithe__onnx_attr_get(n, "value_float"))) {
        LITHE__TRY(lithe__gexec_alloc(x, lithe__backend_host(), LITHE_F32, 0, NULL, false, &out[0]));
        lithe__f32(out[0])[0] = a->f;
    } else if ((a = lithe__onnx_attr_get(n, "value_int"))) {
        LITHE__TRY(new_i64(x, 0, NULL, &out[0]));
        ((int64_t *)lithe__tdata(out[0]))[0] = a->i;
    } else if ((a = lithe__onnx_attr_get(n, "value_ints"))) {
        LITHE__TRY(new_i64(x, 1, (int64_t[]){(int64_t)a->n_ints}, &out[0]));
        if (a->n_ints) memcpy(lithe__tdata(out[0]), a->ints, a->n_ints * 8);
    } else if ((a = lithe__onnx_attr_get(n, "value_floats"))) {
        LITHE__TRY(lithe__gexec_alloc(x, lithe__backend_host(), LITHE_F32, 1, (int64_t[]){(int64_t)a->n_floats}, false, &out[0]));
        if (a->n_floats) memcpy(lithe__tdata(out[0]), a->floats, a->n_floats * 4);
    } else {
        return fail(x, node, LITHE_ERR_UNSUPPORTED, "a Constant without a tensor, float(s) or int(s) value");
    }
    if (out[0]->dtype == LITHE_F32 && x->be != lithe__backend_host()) {
        lithe_tensor *t = NULL;
        LITHE__TRY(lithe_tensor_to_backend(out[0], x->be, &t));
        lithe_tensor_release(out[0]);
        out[0] = t;
    }
    return LITHE_OK;
}

FWD(f_shape) {
    UNUSED_FWD;
    LITHE__TRY(need_inputs(x, node, in, n_in, 1));
    const lithe__onnx_node *n = NODE(x, node);
    int r = in[0]->ndim;
    int64_t st = attr_i(n, "start", 0), en = attr_i(n, "end", r);
    if (st < 0) st += r;
    if (en < 0) en += r;
    st = st < 0 ? 0 : st > r ? r : st;
    en = en < 0 ? 0 : en > r ? r : en;
    int64_t len = en > st ? en - st : 0;
    LITHE__TRY(new_i64(x, 1, &len, &out[0]));
    for (int64_t k = 0; k < len; k++) ((int64_t *)lithe__tdata(out[0]))[k] = in[0]->shape[st + k];
    return LITHE_OK;
}

/* The rows a float Gather reads from its data seen as a (outer * ax, inner) table: for each of the
 * `outer` blocks before the axis, the block's start plus each index of I, ONNX's negative indices
 * (counted from the end of the axis of ax) made non-negative. I itself (retained) for axis 0
 * without negative indices. */
static lithe_status gather_rows_of(lithe__gexec *x, lithe_tensor *I, int64_t outer, int64_t ax, lithe_tensor **out) {
    bool neg = false;
    for (int64_t i = 0; i < I->numel; i++) neg = neg || ints(I)[i] < 0;
    if (!neg && outer == 1) {
        *out = lithe_tensor_retain(I);
        return LITHE_OK;
    }
    LITHE__TRY(new_i64(x, 1, (int64_t[]){outer * I->numel}, out));
    int64_t *r = (int64_t *)lithe__tdata(*out);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < I->numel; i++) {
            int64_t v = ints(I)[i];
            r[o * I->numel + i] = o * ax + (v < 0 ? v + ax : v);
        }
    return LITHE_OK;
}

/* Gather: integer data on the host (shape arithmetic), or float rows on the backend (any axis:
 * axis 0 is an embedding's rows; x[:, 0], a vision transformer's class token, reads one row of
 * each block before the axis). */
FWD(f_gather) {
    UNUSED_FWD;
    LITHE__TRY(need_inputs(x, node, in, n_in, 2));
    LITHE__TRY(need_ints(x, node, in[1], 1));
    lithe_tensor *D = in[0], *I = in[1];
    int64_t axis = 0;
    if (D->ndim < 1) return fail(x, node, LITHE_ERR_SHAPE, "data must have rank >= 1");
    LITHE__TRY(norm_axis(x, node, attr_i(NODE(x, node), "axis", 0), D->ndim, false, &axis));
    int nd = D->ndim - 1 + I->ndim;
    if (nd > LITHE_MAX_DIMS) return fail(x, node, LITHE_ERR_UNSUPPORTED, "output rank %d", nd);
    int64_t shape[LITHE_MAX_DIMS], outer = 1, inner = 1, ax = D->shape[axis];
    int k = 0;
    for (int d = 0; d < axis; d++) outer *= (shape[k++] = D->shape[d]);
    for (int d = 0; d < I->ndim; d++) shape[k++] = I->shape[d];
    for (int d = (int)axis + 1; d < D->ndim; d++) inner *= (shape[k++] = D->shape[d]);
    for (int64_t i = 0; i < I->numel; i++) {
        int64_t v = ints(I)[i];
        if (v < -ax || v >= ax) return fail(x, node, LITHE_ERR_VALUE, "index %lld outside an axis of %lld", (long long)v, (long long)ax);
    }
    if (is_int(D)) {
        LITHE__TRY(new_i64(x, nd, shape, &out[0]));
        int64_t *y = (int64_t *)lithe__tdata(out[0]);
        for (int64_t o = 0; o < outer; o++)
            for (int64_t i = 0; i < I->numel; i++) {
                int64_t v = ints(I)[i];
                if (v < 0) v += ax;
                memcpy(y + (o * I->numel + i) * inner, ints(D) + (o * ax + v) * inner, (size_t)inner * 8);
            }
        return LITHE_OK;
    }
    LITHE__TRY(need_float(x, node, D, 0));
    lithe_tensor *table = NULL, *y2 = NULL, *Iw = NULL;
    LITHE__TRY(new_f32(x, nd, shape, false, &out[0]));
    lithe_status s = lithe_tensor_reshape(D, 2, (int64_t[]){outer * ax, inner}, &table);
    if (s == LITHE_OK) s = lithe_tensor_reshape(out[0], 2, (int64_t[]){outer * I->numel, inner}, &y2);
    if (s == LITHE_OK) s = gather_rows_of(x, I, outer, ax, &Iw); /* h[-1]: a GRU's last state */
    if (s == LITHE_OK && I->numel) s = gather_by_ids(x, table, Iw, y2); /* ids moved to a GPU backend */
    lithe_tensor_release(table);
    lithe_tensor_release(y2);
    lithe_tensor_release(Iw);
    return s;
}
BWD(b_gather) {
    UNUSED_BWD;
    lithe_tensor *d = NULL, *t2 = NULL, *g2 = NULL, *Iw = NULL;
    LITHE__TRY(lithe__gexec_grad(x, node, 0, &d));
    if (!d || !in[1]->numel) return LITHE_OK;
    int64_t axis = 0, outer = 1;
    LITHE__TRY(norm_axis(x, node, attr_i(NODE(x, node), "axis", 0), in[0]->ndim, false, &axis));
    for (int a = 0; a < axis; a++) outer *= in[0]->shape[a];
    int64_t ax = in[0]->shape[axis], rows = outer * ax, inner = rows ? in[0]->numel / rows : 0;
    lithe_status s = lithe_tensor_reshape(d, 2, (int64_t[]){rows, inner}, &t2);
    if (s == LITHE_OK) s = lithe_tensor_reshape(dout[0], 2, (int64_t[]){outer * in[1]->numel, inner}, &g2);
    if (s == LITHE_OK) s = gather_rows_of(x, in[1], outer, ax, &Iw);
    if (s == LITHE_OK) s = scatter_add_by_ids(x, t2, Iw, g2);
    lithe_tensor_release(t2);
    lithe_tensor_release(g2);
    lithe_tensor_release(Iw);
    return s;
}

FWD(f_cast) {
    UNUSED_FWD;
    LITHE__TRY(need_inputs(x, node, in, n_in, 1));
    int64_t to = attr_i(NODE(x, node), "to", LITHE__ONNX_FLOAT);
    bool to_float = to == LITHE__ONNX_FLOAT || to == LITHE__ONNX_DOUBLE || to == LITHE__ONNX_FLOAT16 || to == LITHE__ONNX_BFLOAT16;
    lithe_tensor *X = in[0];
    if (to_float == (X->dtype == LITHE_F32)) {
        out[0] = lithe_tensor_retain(X); /* float stays float32 in lithe; ints stay int64 */
        if (!to_float && to == LITHE__ONNX_BOOL) { /* normalise to 0 / 1 */
            lithe_tensor_release(out[0]);
            LITHE__TRY(new_i64(x, X->ndim, X->shape, &out[0]));
            for (int64_t i = 0; i < X->numel; i++) ((int64_t *)lithe__tdata(out[0]))[i] = ints(X)[i] != 0;
        }
        return LITHE_OK;
    }
    if (to_float) { /* host ints -> float on the backend: no gradient flows back */
        lithe_tensor *h = NULL;
        LITHE__TRY(lithe__gexec_alloc(x, lithe__backend_host(), LITHE_F32, X->ndim, X->shape, false, &h));
        for (int64_t i = 0; i < X->numel; i++) lithe__f32(h)[i] = (float)ints(X)[i];
        lithe_status s = lithe_tensor_to_backend(h, x->be, &out[0]);
        lithe_tensor_release(h);
        return s;
    }
    lithe_tensor *h = NULL; /* float -> ints, on the host (truncating, as C and ONNX do) */
    LITHE__TRY(lithe_tensor_to_backend(X, NULL, &h));
    lithe_status s = new_i64(x, X->ndim, X->shape, &out[0]);
    for (int64_t i = 0; s == LITHE_OK && i < X->numel; i++) {
        float v = lithe__f32(h)[i];
        int64_t *y = (int64_t *)lithe__tdata(out[0]);
        y[i] = to == LITHE__ONNX_BOOL ? v != 0.0f : v != v ? 0 : v >= 9.2e18f ? INT64_MAX : v <= -9.2e18f ? INT64_MIN : (int64_t)v;
    }
    lithe_tensor_release(h);
    return s;
}
BWD(b_cast) {
    UNUSED_BWD;
    if (in[0]->dtype != LITHE_F32 || dout[0] == NULL) return LITHE_OK;
    lithe_tensor *d = NULL;
    LITHE__TRY(lithe__gexec_grad(x, node, 0, &d));
    return d && out[0]->dtype == LITHE_F32 ? acc(x, d, dout[0]) : LITHE_OK;
}

FWD(f_constant_of_shape) {
    UNUSED_FWD;
    LITHE__TRY(need_inputs(x, node, in, n_in, 1));
    LITHE__TRY(need_ints(x, node, in[0], 0));
    if (in[0]->numel > LITHE_MAX_DIMS) return fail(x, node, LITHE_ERR_UNSUPPORTED, "rank %lld", (long long)in[0]->numel);
    int64_t shape[LITHE_MAX_DIMS], n = 1;
    for (int64_t d = 0; d < in[0]->numel; d++) {
        shape[d] = ints(in[0])[d];
        if (shape[d] < 0 || (shape[d] && n > ((int64_t)1 << 40) / shape[d])) return fail(x, node, LITHE_ERR_VALUE, "shape");
        n *= shape[d];
    }
    const lithe__onnx_attr *a = lithe__onnx_attr_get(NODE(x, node), "value");
    bool fl = !a || !a->t || a->t->is_float;
    if (a && a->t && a->t->numel != 1) return fail(x, node, LITHE_ERR_VALUE, "value must hold one element");
    if (!fl) {
        LITHE__TRY(new_i64(x, (int)in[0]->numel, shape, &out[0]));
        for (int64_t i = 0; i < n; i++) ((int64_t *)lithe__tdata(out[0]))[i] = ((const int64_t *)a->t->data)[0];
        return LITHE_OK;
    }
    LITHE__TRY(new_f32(x, (int)in[0]->numel, shape, false, &out[0]));
    return lithe__op_fill(x->be, out[0], a && a->t ? ((const float *)a->t->data)[0] : 0.0f);
}
