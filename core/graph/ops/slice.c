/* ONNX operators of the graph layer (core/graph/ops/): Concat, Split, Slice, Pad. */
#include "ops.h"

/* ---- Concat, Split, Slice: strided views and copies ---- */

/* A view of t restricted to [start, start + len) along axis with step. */
static lithe_status axis_view(lithe_tensor *t, int axis, int64_t start, int64_t len, int64_t step, lithe_tensor **out) {
    int64_t st[LITHE_MAX_DIMS] = {0}, shape[LITHE_MAX_DIMS];
    contiguous_strides(t->ndim, t->shape, st);
    for (int d = 0; d < t->ndim; d++) shape[d] = t->shape[d];
    shape[axis] = len;
    int64_t off = start * st[axis];
    st[axis] *= step;
    return view(t, t->ndim, shape, st, off, out);
}

static lithe_backend *be_of(lithe__gexec *x, const lithe_tensor *t) {
    return t->dtype == LITHE_F32 ? x->be : lithe__backend_host();
}

FWD(f_concat) {
    UNUSED_FWD;
    LITHE__TRY(need_inputs(x, node, in, n_in, 1));
    lithe_tensor *A = in[0];
    int64_t axis = 0;
    LITHE__TRY(norm_axis(x, node, attr_i(NODE(x, node), "axis", 0), A->ndim, false, &axis));
    int64_t shape[LITHE_MAX_DIMS];
    for (int d = 0; d < A->ndim; d++) shape[d] = A->shape[d];
    shape[axis] = 0;
    for (size_t k = 0; k < n_in; k++) {
        if (!in[k] || in[k]->ndim != A->ndim || in[k]->dtype != A->dtype)
            return fail(x, node, LITHE_ERR_SHAPE, "input %zu differs in rank or type from input 0", k);
        for (int d = 0; d < A->ndim; d++)
            if (d != axis && in[k]->shape[d] != A->shape[d])
                return fail(x, node, LITHE_ERR_SHAPE, "input %zu has extent %lld on axis %d, input 0 has %lld", k,
                            (long long)in[k]->shape[d], d, (long long)A->shape[d]);
        shape[axis] += in[k]->shape[axis];
    }
    LITHE__TRY(lithe__gexec_alloc(x, be_of(x, A), A->dtype, A->ndim, shape, false, &out[0]));
    int64_t at = 0;
    for (size_t k = 0; k < n_in; k++) {
        lithe_tensor *v = NULL;
        LITHE__TRY(axis_view(out[0], (int)axis, at, in[k]->shape[axis], 1, &v));
        lithe_status s = in[k]->numel ? lithe__op_copy(be_of(x, A), v, in[k]) : LITHE_OK;
        lithe_tensor_release(v);
        LITHE__TRY(s);
        at += in[k]->shape[axis];
    }
    return LITHE_OK;
}

/* d (accumulator shaped as view v's extents) += the strided view v. */
static lithe_status acc_from_view(lithe__gexec *x, lithe_tensor *d, lithe_tensor *v) {
    lithe_tensor *t = NULL;
    LITHE__TRY(lithe__gexec_like(x, d, false, &t));
    lithe_status s = d->numel ? lithe__op_copy(x->be, t, v) : LITHE_OK;
    if (s == LITHE_OK) s = acc(x, d, t);
    lithe_tensor_release(t);
    return s;
}

BWD(b_concat) {
    UNUSED_BWD;
    int64_t axis = 0;
    LITHE__TRY(norm_axis(x, node, attr_i(NODE(x, node), "axis", 0), in[0]->ndim, false, &axis));
    int64_t at = 0;
    for (size_t k = 0; k < n_in; k++) {
        lithe_tensor *d = NULL, *v = NULL;
        LITHE__TRY(lithe__gexec_grad(x, node, k, &d));
        if (d) {
            LITHE__TRY(axis_view(dout[0], (int)axis, at, in[k]->shape[axis], 1, &v));
            lithe_status s = acc_from_view(x, d, v);
            lithe_tensor_release(v);
            LITHE__TRY(s);
        }
        at += in[k]->shape[axis];
    }
    return LITHE_OK;
}

static lithe_status split_sizes(lithe__gexec *x, size_t node, lithe_tensor **in, size_t n_in, size_t n_out, int64_t *axis,
                                int64_t *sizes) {
    const lithe__onnx_node *n = NODE(x, node);
    LITHE__TRY(norm_axis(x, node, attr_i(n, "axis", 0), in[0]->ndim, false, axis));
    int64_t total = in[0]->shape[*axis];
    size_t ns = 0;
    const int64_t *sp = attr_ints(n, "split", &ns);
    if (n_in > 1 && in[1]) {
        LITHE__TRY(need_ints(x, node, in[1], 1));
        sp = ints(in[1]);
        ns = (size_t)in[1]->numel;
    }
    if (sp) {
        if (ns != n_out) return fail(x, node, LITHE_ERR_VALUE, "%zu split sizes for %zu outputs", ns, n_out);
        int64_t sum = 0;
        for (size_t k = 0; k < ns; k++) {
            if (sp[k] < 0 || sp[k] > total) return fail(x, node, LITHE_ERR_VALUE, "split size %lld", (long long)sp[k]);
            sizes[k] = sp[k];
            sum += sp[k];
        }
        if (sum != total) return fail(x, node, LITHE_ERR_VALUE, "split sizes sum to %lld, the axis has %lld", (long long)sum, (long long)total);
        return LITHE_OK;
    }
    int64_t each = (total + (int64_t)n_out - 1) / (int64_t)n_out; /* the last part may be smaller (opset 18) */
    for (size_t k = 0; k < n_out; k++) {
        int64_t left = total - each * (int64_t)k;
        sizes[k] = left < each ? (left > 0 ? left : 0) : each;
    }
    return LITHE_OK;
}

FWD(f_split) {
    (void)saved;
    LITHE__TRY(need_inputs(x, node, in, n_in, 1));
    int64_t axis = 0, sizes[16] = {0};
    if (n_out == 0 || n_out > 16) return fail(x, node, LITHE_ERR_UNSUPPORTED, "%zu outputs", n_out);
    LITHE__TRY(split_sizes(x, node, in, n_in, n_out, &axis, sizes));
    int64_t at = 0;
    for (size_t k = 0; k < n_out; k++) {
        lithe_tensor *v = NULL;
        LITHE__TRY(axis_view(in[0], (int)axis, at, sizes[k], 1, &v));
        lithe_status s = lithe__gexec_alloc(x, be_of(x, in[0]), in[0]->dtype, v->ndim, v->shape, false, &out[k]);
        if (s == LITHE_OK && v->numel) s = lithe__op_copy(be_of(x, in[0]), out[k], v);
        lithe_tensor_release(v);
        LITHE__TRY(s);
        at += sizes[k];
    }
    return LITHE_OK;
}
/* The view v of a gradient += dy, through a copy of v alone (out, the add, back): copy cannot add. */
static lithe_status acc_into_view(lithe__gexec *x, lithe_tensor *v, lithe_tensor *dy) {
    lithe_tensor *t = NULL;
    lithe_status s = lithe__gexec_alloc(x, x->be, LITHE_F32, v->ndim, v->shape, false, &t);
    if (s == LITHE_OK) s = lithe__op_copy(x->be, t, v);
    if (s == LITHE_OK) s = acc(x, t, dy);
    if (s == LITHE_OK) s = lithe__op_copy(x->be, v, t);
    lithe_tensor_release(t);
    return s;
}

/* dy into region [start, start + len) along axis of the gradient of node's input 0: written in place
 * while no other backward has written there (lithe__gexec_grad_region), else added. */
static lithe_status grad_into_region(lithe__gexec *x, size_t node, int axis, int64_t start, int64_t len, lithe_tensor *dy) {
    lithe_tensor *v = NULL;
    bool fresh = false;
    LITHE__TRY(lithe__gexec_grad_region(x, node, 0, axis, start, len, &v, &fresh));
    if (!v) return LITHE_OK;
    lithe_status s = !v->numel ? LITHE_OK : fresh ? lithe__op_copy(x->be, v, dy) : acc_into_view(x, v, dy);
    lithe_tensor_release(v);
    return s;
}

BWD(b_split) {
    (void)saved;
    (void)out;
    size_t n_out = NODE(x, node)->n_outputs;
    int64_t axis = 0, sizes[16] = {0};
    LITHE__TRY(split_sizes(x, node, in, n_in, n_out, &axis, sizes));
    /* each output's dY into its part; the parts no gradient reached are zeroed when dX is read */
    int64_t at = 0;
    for (size_t k = 0; k < n_out; k++) {
        if (dout[k]) LITHE__TRY(grad_into_region(x, node, (int)axis, at, sizes[k], dout[k]));
        at += sizes[k];
    }
    return LITHE_OK;
}

/* Slice (opset >= 10: starts, ends, axes, steps as inputs; before: attrs). */
typedef struct slice_geo {
    int64_t start[LITHE_MAX_DIMS], len[LITHE_MAX_DIMS], step[LITHE_MAX_DIMS];
} slice_geo;

static lithe_status slice_geometry(lithe__gexec *x, size_t node, lithe_tensor **in, size_t n_in, slice_geo *g) {
    const lithe__onnx_node *n = NODE(x, node);
    const lithe_tensor *X = in[0];
    const int64_t *st, *en, *ax = NULL, *sp = NULL;
    size_t ns, ne, na = 0, nsp = 0;
    if (n_in >= 3) {
        for (size_t k = 1; k < n_in; k++)
            if (in[k]) LITHE__TRY(need_ints(x, node, in[k], k));
        if (!in[1] || !in[2]) return fail(x, node, LITHE_ERR_FORMAT, "starts and ends are required");
        st = ints(in[1]);
        ns = (size_t)in[1]->numel;
        en = ints(in[2]);
        ne = (size_t)in[2]->numel;
        if (n_in > 3 && in[3]) {
            ax = ints(in[3]);
            na = (size_t)in[3]->numel;
        }
        if (n_in > 4 && in[4]) {
            sp = ints(in[4]);
            nsp = (size_t)in[4]->numel;
        }
    } else {
        st = attr_ints(n, "starts", &ns);
        en = attr_ints(n, "ends", &ne);
        ax = attr_ints(n, "axes", &na);
    }
    if (ns != ne || (ax && na != ns) || (sp && nsp != ns) || (int64_t)ns > X->ndim)
        return fail(x, node, LITHE_ERR_VALUE, "starts, ends, axes and steps disagree in length (%zu, %zu, %zu, %zu)", ns,
                    ne, na, nsp);
    for (int d = 0; d < X->ndim; d++) {
        g->start[d] = 0;
        g->len[d] = X->shape[d];
        g->step[d] = 1;
    }
    for (size_t k = 0; k < ns; k++) {
        int64_t a = 0;
        LITHE__TRY(norm_axis(x, node, ax ? ax[k] : (int64_t)k, X->ndim, false, &a));
        int64_t dim = X->shape[a], step = sp ? sp[k] : 1, s = st[k], e = en[k];
        if (step == 0) return fail(x, node, LITHE_ERR_VALUE, "step 0");
        /* a step beyond the extent takes one element at most: clamp it, so neither the length
         * arithmetic nor the view's stride * step can overflow (|step| <= dim keeps it <= numel) */
        int64_t big = dim > 0 ? dim : 1;
        if (step > big) step = big;
        if (step < -big) step = -big;
        if (s < 0) s += dim;
        if (e < 0 && e > INT64_MIN + dim) e += dim;
        int64_t len;
        if (step > 0) {
            s = s < 0 ? 0 : s > dim ? dim : s;
            e = e < 0 ? 0 : e > dim ? dim : e;
            len = e > s ? (e - s - 1) / step + 1 : 0;
        } else {
            s = s < 0 ? -1 : s > dim - 1 ? dim - 1 : s;
            e = e < -1 ? -1 : e > dim - 1 ? dim - 1 : e;
            len = s > e ? (s - e - 1) / (-step) + 1 : 0;
        }
        g->start[a] = len ? s : 0;
        g->len[a] = len;
        g->step[a] = step;
    }
    return LITHE_OK;
}

static lithe_status slice_view(lithe_tensor *t, const slice_geo *g, lithe_tensor **out) {
    int64_t st[LITHE_MAX_DIMS] = {0}, vst[LITHE_MAX_DIMS], off = 0;
    contiguous_strides(t->ndim, t->shape, st);
    for (int d = 0; d < t->ndim; d++) {
        off += g->start[d] * st[d];
        vst[d] = st[d] * g->step[d];
    }
    return view(t, t->ndim, g->len, vst, off, out);
}

FWD(f_slice) {
    UNUSED_FWD;
    LITHE__TRY(need_inputs(x, node, in, n_in, 1));
    slice_geo g = {0};
    LITHE__TRY(slice_geometry(x, node, in, n_in, &g));
    lithe_tensor *v = NULL;
    LITHE__TRY(slice_view(in[0], &g, &v));
    lithe_status s = lithe__gexec_alloc(x, be_of(x, in[0]), in[0]->dtype, v->ndim, v->shape, false, &out[0]);
    if (s == LITHE_OK && v->numel) s = lithe__op_copy(be_of(x, in[0]), out[0], v);
    lithe_tensor_release(v);
    return s;
}
BWD(b_slice) {
    UNUSED_BWD;
    slice_geo g = {0};
    LITHE__TRY(slice_geometry(x, node, in, n_in, &g));
    /* one axis sliced with step 1 (the transformer's Q / K / V of one (tokens, 3 d_model) product):
     * dY is written into its region of dX once, the Q / K / V slices together write each element
     * once (lithe__gexec_grad_region), nothing zeroed, copied out or added */
    int axis = -1;
    bool one = in[0]->ndim > 0;
    for (int d = 0; d < in[0]->ndim; d++) {
        if (g.step[d] == 1 && g.start[d] == 0 && g.len[d] == in[0]->shape[d]) continue;
        one = one && axis < 0 && g.step[d] == 1;
        axis = d;
    }
    if (one) {
        if (axis < 0) return grad_into_region(x, node, 0, 0, in[0]->shape[0], dout[0]);
        return grad_into_region(x, node, axis, g.start[axis], g.len[axis], dout[0]);
    }
    lithe_tensor *d = NULL;
    bool fresh = false;
    LITHE__TRY(lithe__gexec_grad_fresh(x, node, 0, &d, &fresh));
    if (!d) return LITHE_OK;
    if (fresh) LITHE__TRY(lithe__op_fill(x->be, d, 0.0f));
    if (!dout[0]->numel) return LITHE_OK;
    lithe_tensor *v = NULL;
    LITHE__TRY(slice_view(d, &g, &v));
    /* a new gradient: zeros, dY copied into its slice; else d's slice += dY through a copy of the
     * slice alone, the same adds as d += (dY scattered into zeros) */
    lithe_status s = fresh ? lithe__op_copy(x->be, v, dout[0]) : acc_into_view(x, v, dout[0]);
    lithe_tensor_release(v);
    return s;
}

/* Pad, constant mode: Y = value everywhere, X copied into the interior view; pads (2 * rank) =
 * begins then ends, from input 1 (opset >= 11) or the attr. Negative pads (cropping) and the
 * reflect / edge modes are refused. */
static lithe_status pad_geometry(lithe__gexec *x, size_t node, lithe_tensor **in, size_t n_in, int64_t *begin,
                                 int64_t *shape, float *value) {
    const lithe__onnx_node *n = NODE(x, node);
    const lithe_tensor *X = in[0];
    const lithe__onnx_attr *mode = lithe__onnx_attr_get(n, "mode");
    if (mode && mode->s && strcmp(mode->s, "constant"))
        return fail(x, node, LITHE_ERR_UNSUPPORTED, "mode '%s' (lithe pads with a constant)", mode->s);
    size_t np = 0;
    const int64_t *pads = attr_ints(n, "pads", &np);
    *value = attr_f(n, "value", 0.0f);
    if (n_in > 1 && in[1]) {
        LITHE__TRY(need_ints(x, node, in[1], 1));
        pads = ints(in[1]);
        np = (size_t)in[1]->numel;
    }
    if (n_in > 2 && in[2]) {
        if (in[2]->dtype != LITHE_F32 || in[2]->numel != 1 || !in[2]->storage->backend->host_memory)
            return fail(x, node, LITHE_ERR_UNSUPPORTED, "constant_value must be one float on the host");
        *value = lithe__f32(in[2])[0];
    }
    if (n_in > 3 && in[3]) return fail(x, node, LITHE_ERR_UNSUPPORTED, "the axes input");
    if (!pads || np != 2 * (size_t)X->ndim) return fail(x, node, LITHE_ERR_VALUE, "%zu pads for rank %d", np, X->ndim);
    for (int d = 0; d < X->ndim; d++) {
        int64_t b = pads[d], e = pads[d + X->ndim];
        if (b < 0 || e < 0 || b > (1 << 20) || e > (1 << 20))
            return fail(x, node, LITHE_ERR_UNSUPPORTED, "pads %lld, %lld on axis %d (lithe pads by 0 .. 2^20)", (long long)b,
                        (long long)e, d);
        begin[d] = b;
        shape[d] = X->shape[d] + b + e;
    }
    return LITHE_OK;
}

static lithe_status pad_interior(lithe_tensor *Y, const lithe_tensor *X, const int64_t *begin, lithe_tensor **out) {
    int64_t st[LITHE_MAX_DIMS] = {0}, off = 0;
    contiguous_strides(Y->ndim, Y->shape, st);
    for (int d = 0; d < Y->ndim; d++) off += begin[d] * st[d];
    return view(Y, Y->ndim, X->shape, st, off, out);
}

FWD(f_pad) {
    UNUSED_FWD;
    LITHE__TRY(need_inputs(x, node, in, n_in, 1));
    LITHE__TRY(need_float(x, node, in[0], 0));
    int64_t begin[LITHE_MAX_DIMS] = {0}, shape[LITHE_MAX_DIMS] = {0};
    float value = 0.0f;
    LITHE__TRY(pad_geometry(x, node, in, n_in, begin, shape, &value));
    LITHE__TRY(new_f32(x, in[0]->ndim, shape, false, &out[0]));
    LITHE__TRY(lithe__op_fill(x->be, out[0], value));
    if (!in[0]->numel) return LITHE_OK;
    lithe_tensor *v = NULL;
    LITHE__TRY(pad_interior(out[0], in[0], begin, &v));
    lithe_status s = lithe__op_copy(x->be, v, in[0]);
    lithe_tensor_release(v);
    return s;
}
BWD(b_pad) {
    UNUSED_BWD;
    lithe_tensor *d = NULL, *v = NULL;
    LITHE__TRY(lithe__gexec_grad(x, node, 0, &d));
    if (!d || !d->numel) return LITHE_OK;
    int64_t begin[LITHE_MAX_DIMS] = {0}, shape[LITHE_MAX_DIMS] = {0};
    float value = 0.0f;
    LITHE__TRY(pad_geometry(x, node, in, n_in, begin, shape, &value));
    LITHE__TRY(pad_interior(dout[0], in[0], begin, &v));
    lithe_status s = acc_from_view(x, d, v);
    lithe_tensor_release(v);
    return s;
}
