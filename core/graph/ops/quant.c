/* ONNX operators of the graph layer (core/graph/ops/), issue 24 item 4: QuantizeLinear,
 * DequantizeLinear (per tensor and per axis, int8 / uint8 / int32 codes; opset 10's scalar form and
 * 13's axis attribute), DynamicQuantizeLinear. Codes travel as host int64 tensors, as every integer
 * value of the graph layer does; the arithmetic is onnxruntime's (MLAS): q = clamp(rint(x / scale)
 * + zero_point), x = (q - zero_point) * scale, in float32, rounding half to even. Forward only: a
 * QuantizeLinear has no gradient (QDQ training is not supported). */
#include "ops.h"

#include <limits.h>

/* ---- the types of codes ---- */

static bool range_of(int32_t type, int32_t *lo, int32_t *hi) {
    switch (type) {
    case LITHE__ONNX_INT8: *lo = -128, *hi = 127; return true;
    case LITHE__ONNX_UINT8: *lo = 0, *hi = 255; return true;
    case LITHE__ONNX_INT16: *lo = -32768, *hi = 32767; return true;
    case LITHE__ONNX_UINT16: *lo = 0, *hi = 65535; return true;
    case LITHE__ONNX_INT32: *lo = INT32_MIN, *hi = INT32_MAX; return true;
    default: return false;
    }
}

/* The node writing slot s, its output index in *k; -1 (an initializer, an input, not yet bound). */
static int64_t producer(const lithe__graph *g, int64_t s, size_t *k) {
    for (size_t i = 0; i < g->onnx.n_nodes; i++)
        for (size_t j = 0; g->node_out && g->node_out[i] && j < g->node_nout[i]; j++)
            if (g->node_out[i][j] == s) {
                *k = j;
                return (int64_t)i;
            }
    return -1;
}

int32_t lithe__graph_slot_type(const lithe__graph *g, int64_t s) {
    for (int hops = 0; s >= 0 && hops < 64; hops++) {
        if ((size_t)s < g->onnx.n_inits) return g->onnx.inits[s].data_type; /* the first slots, in order */
        size_t k = 0;
        int64_t p = producer(g, s, &k);
        if (p < 0) return 0;
        const lithe__onnx_node *n = &g->onnx.nodes[p];
        const char *op = n->op_type;
        if (!strcmp(op, "Constant")) {
            const lithe__onnx_attr *v = lithe__onnx_attr_get(n, "value");
            return v && v->t ? v->t->data_type : lithe__onnx_attr_get(n, "value_int") ? LITHE__ONNX_INT64 : 0;
        }
        if (!strcmp(op, "DynamicQuantizeLinear")) return k == 1 ? LITHE__ONNX_FLOAT : LITHE__ONNX_UINT8;
        size_t zk = !strcmp(op, "QuantizeLinear") ? 2 : !strncmp(op, "QLinear", 7) ? 7 : 0;
        if (zk) {
            const lithe__onnx_attr *od = lithe__onnx_attr_get(n, "output_dtype");
            if (od && od->i) return (int32_t)od->i;
            if (g->node_nin[p] <= zk || g->node_in[p][zk] < 0) return LITHE__ONNX_UINT8;
            s = g->node_in[p][zk];
            continue;
        }
        if (strcmp(op, "Identity") || g->node_nin[p] < 1) return 0;
        s = g->node_in[p][0];
    }
    return 0;
}

/* ---- parameters ---- */

lithe_status host_f32(const lithe_tensor *t, lithe_tensor **hold, const float **out) {
    *hold = NULL;
    if (t->storage->backend->host_memory && lithe_tensor_is_contiguous(t)) {
        *out = lithe__f32(t);
        return LITHE_OK;
    }
    LITHE__TRY(lithe_tensor_to_backend(t, lithe__backend_host(), hold));
    *out = lithe__f32(*hold);
    return LITHE_OK;
}

void gq_release(lithe__gq *q) {
    lithe_tensor_release(q->hold);
    q->hold = NULL;
}

lithe_status gq_params(lithe__gexec *x, size_t node, lithe_tensor **in, size_t n_in, size_t ks, size_t kz,
                       int32_t dflt_type, int64_t axis, int64_t extent, const char *what, lithe__gq *q) {
    memset(q, 0, sizeof *q);
    if (ks >= n_in || !in[ks]) return fail(x, node, LITHE_ERR_FORMAT, "its %s scale (input %zu) is required", what, ks);
    const lithe_tensor *S = in[ks], *Z = kz < n_in ? in[kz] : NULL;
    LITHE__TRY(need_float(x, node, S, ks));
    if (S->ndim > 1 || S->numel < 1)
        return fail(x, node, LITHE_ERR_SHAPE, "its %s scale must be a scalar or 1-D, got %d-D of %lld values", what,
                    S->ndim, (long long)S->numel);
    q->n = S->numel;
    q->axis = axis;
    if (q->n > 1 && q->n != extent)
        return fail(x, node, LITHE_ERR_SHAPE, "its %s scale has %lld values for an axis of %lld (per axis: one each)",
                    what, (long long)q->n, (long long)extent);
    if (Z && !is_int(Z)) return fail(x, node, LITHE_ERR_DTYPE, "its %s zero point must be an integer tensor", what);
    if (Z && Z->numel != q->n)
        return fail(x, node, LITHE_ERR_SHAPE, "its %s zero point has %lld values, its scale %lld", what,
                    (long long)Z->numel, (long long)q->n);
    int32_t type = Z ? lithe__graph_slot_type(x->g, x->g->node_in[node][kz]) : 0;
    if (!range_of(type, &q->qmin, &q->qmax)) {
        type = dflt_type;
        range_of(type, &q->qmin, &q->qmax);
    }
    LITHE__TRY(host_f32(S, &q->hold, &q->scale));
    for (int64_t c = 0; c < q->n; c++)
        if (!isfinite(q->scale[c]) || !(q->scale[c] > 0.0f)) {
            float v = q->scale[c];
            gq_release(q);
            return fail(x, node, LITHE_ERR_VALUE, "its %s scale[%lld] is %g; scales must be finite and > 0", what,
                        (long long)c, (double)v);
        }
    q->zero = Z ? ints(Z) : NULL;
    for (int64_t c = 0; q->zero && c < q->n; c++)
        if (q->zero[c] < q->qmin || q->zero[c] > q->qmax) {
            int64_t v = q->zero[c];
            gq_release(q);
            return fail(x, node, LITHE_ERR_VALUE, "its %s zero point[%lld] = %lld is outside [%d, %d]", what,
                        (long long)c, (long long)v, (int)q->qmin, (int)q->qmax);
        }
    return LITHE_OK;
}

/* The axis a per-axis scale runs along (ONNX default 1), normalized, and the data's extent there. */
static lithe_status q_axis(lithe__gexec *x, size_t node, const lithe_tensor *X, const lithe_tensor *S, int64_t *axis,
                           int64_t *extent) {
    const lithe__onnx_node *n = NODE(x, node);
    *axis = 0;
    *extent = 1;
    if (attr_i(n, "block_size", 0)) return fail(x, node, LITHE_ERR_UNSUPPORTED, "blocked quantization (block_size)");
    if (!S || S->numel <= 1) return LITHE_OK;
    LITHE__TRY(norm_axis(x, node, attr_i(n, "axis", 1), X->ndim, false, axis));
    *extent = X->shape[*axis];
    return LITHE_OK;
}

/* Element i's channel along axis (inner: the product of the extents after it). Always inlined: at
 * -Oz (WebAssembly's non-kernel code) clang kept it a call per element, which the WASI link's
 * wasm-opt -O3 inlined back and the npm importer module's -Oz link did not (DequantizeLinear in the
 * QDQ MLP: ~0.7 M instructions per predict, 2 %). */
static inline __attribute__((always_inline)) int64_t chan(int64_t i, int64_t inner, int64_t ext, int64_t n) { return n > 1 ? (i / inner) % ext : 0; }

static int64_t inner_of(const lithe_tensor *X, int64_t axis) {
    int64_t in = 1;
    for (int d = (int)axis + 1; d < X->ndim; d++) in *= X->shape[d];
    return in;
}

static inline int64_t quantize1(float v, float s, int64_t z, int32_t lo, int32_t hi) {
    float r = rintf(v / s) + (float)z;
    if (!(r >= (float)lo)) return lo; /* NaN too */
    if (r > (float)hi) return hi;
    return (int64_t)r;
}

/* A float32 output on x's backend written on the host: *host is where to write (the output itself
 * on a host backend, else a staging copy moved by to_backend). */
static lithe_status host_out(lithe__gexec *x, int nd, const int64_t *shape, lithe_tensor **t) {
    if (x->be->host_memory) return new_f32(x, nd, shape, false, t);
    return lithe__tensor_alloc(lithe__backend_host(), LITHE_F32, nd, shape, false, t);
}
static lithe_status to_be(lithe__gexec *x, lithe_tensor *t, lithe_tensor **out) {
    if (x->be->host_memory) {
        *out = t;
        return LITHE_OK;
    }
    lithe_status s = lithe_tensor_to_backend(t, x->be, out);
    lithe_tensor_release(t);
    return s;
}

/* ---- QuantizeLinear (x, y_scale, [y_zero_point]) -> y ---- */
FWD(f_quantize) {
    UNUSED_FWD;
    LITHE__TRY(need_inputs(x, node, in, n_in, 2));
    lithe_tensor *X = in[0];
    LITHE__TRY(need_float(x, node, X, 0));
    int64_t axis, ext;
    LITHE__TRY(q_axis(x, node, X, in[1], &axis, &ext));
    int32_t od = (int32_t)attr_i(NODE(x, node), "output_dtype", 0);
    lithe__gq q;
    LITHE__TRY(gq_params(x, node, in, n_in, 1, 2, od ? od : LITHE__ONNX_UINT8, axis, ext, "y", &q));
    lithe_tensor *hx = NULL;
    const float *xs = NULL;
    lithe_status s = host_f32(X, &hx, &xs);
    if (s == LITHE_OK) s = new_i64(x, X->ndim, X->shape, &out[0]);
    if (s == LITHE_OK) {
        int64_t *y = (int64_t *)lithe__tdata(out[0]), inner = inner_of(X, axis);
        for (int64_t i = 0; i < X->numel; i++) {
            int64_t c = chan(i, inner, ext, q.n);
            y[i] = quantize1(xs[i], q.scale[c], q.zero ? q.zero[c] : 0, q.qmin, q.qmax);
        }
    }
    lithe_tensor_release(hx);
    gq_release(&q);
    return s;
}

/* ---- DequantizeLinear (x, x_scale, [x_zero_point]) -> y float ---- */
FWD(f_dequantize) {
    UNUSED_FWD;
    LITHE__TRY(need_inputs(x, node, in, n_in, 2));
    lithe_tensor *X = in[0];
    if (!is_int(X))
        return fail(x, node, LITHE_ERR_DTYPE, "input 0 must hold integer codes, got %s", lithe_dtype_name(X->dtype));
    int64_t axis, ext;
    LITHE__TRY(q_axis(x, node, X, in[1], &axis, &ext));
    lithe__gq q;
    LITHE__TRY(gq_params(x, node, in, n_in, 1, 2, LITHE__ONNX_INT32, axis, ext, "x", &q));
    lithe_tensor *Y = NULL;
    lithe_status s = host_out(x, X->ndim, X->shape, &Y);
    if (s == LITHE_OK) {
        const int64_t *c8 = ints(X), inner = inner_of(X, axis);
        float *y = lithe__f32(Y);
        for (int64_t i = 0; i < X->numel; i++) {
            int64_t c = chan(i, inner, ext, q.n);
            y[i] = (float)(c8[i] - (q.zero ? q.zero[c] : 0)) * q.scale[c];
        }
        s = to_be(x, Y, &out[0]);
    }
    gq_release(&q);
    return s;
}

/* ---- DynamicQuantizeLinear (x) -> y uint8, y_scale, y_zero_point: onnxruntime's parameters
 * (the range widened to hold 0; scale 1 when it is empty) ---- */
FWD(f_dyn_quantize) {
    UNUSED_FWD;
    LITHE__TRY(need_inputs(x, node, in, n_in, 1));
    LITHE__TRY(need_float(x, node, in[0], 0));
    if (n_out < 1) return fail(x, node, LITHE_ERR_FORMAT, "has no output");
    lithe_tensor *hx = NULL, *S = NULL;
    const float *xs = NULL;
    LITHE__TRY(host_f32(in[0], &hx, &xs));
    float lo = 0.0f, hi = 0.0f;
    for (int64_t i = 0; i < in[0]->numel; i++) {
        if (xs[i] < lo) lo = xs[i];
        if (xs[i] > hi) hi = xs[i];
    }
    lithe_status s = LITHE_OK;
    if (!isfinite(lo) || !isfinite(hi)) s = fail(x, node, LITHE_ERR_VALUE, "its input holds an infinity");
    float scale = hi == lo ? 1.0f : (hi - lo) / 255.0f, z0 = 0.0f - lo / scale;
    int64_t zp = (int64_t)rintf(z0 < 0.0f ? 0.0f : z0 > 255.0f ? 255.0f : z0);
    if (s == LITHE_OK) s = new_i64(x, in[0]->ndim, in[0]->shape, &out[0]);
    for (int64_t i = 0; s == LITHE_OK && i < in[0]->numel; i++)
        ((int64_t *)lithe__tdata(out[0]))[i] = quantize1(xs[i], scale, zp, 0, 255);
    if (s == LITHE_OK && n_out > 1) s = host_out(x, 0, (int64_t[]){1}, &S);
    if (s == LITHE_OK && n_out > 1) {
        lithe__f32(S)[0] = scale;
        s = to_be(x, S, &out[1]);
    }
    if (s == LITHE_OK && n_out > 2) s = new_i64(x, 0, (int64_t[]){1}, &out[2]);
    if (s == LITHE_OK && n_out > 2) ((int64_t *)lithe__tdata(out[2]))[0] = zp;
    lithe_tensor_release(hx);
    return s;
}
