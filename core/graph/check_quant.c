/* Load-time checks of quantized operators (issue 24 item 4): QuantizeLinear, DequantizeLinear,
 * QLinearMatMul, QLinearConv, MatMulInteger, ConvInteger. Where a scale or zero point is an
 * initializer: scales float, scalar or 1-D, every one finite and > 0; zero points int8 / uint8 (int32
 * for a DequantizeLinear, as onnxruntime's int32 biases), as many as the scales, each inside its
 * type's range; a per-axis array as long as the axis it runs along (where that extent is known at
 * load: an initializer or a graph input); the axis inside the data's rank; no blocked quantization.
 * Values computed in the graph are checked when the node runs (ops/quant.c, ops/qlinear.c). */
#include "graph.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define LAYER "onnx_graph"

static lithe_status refuse(const lithe__onnx_node *n, size_t i, lithe_status st, const char *why) {
    return lithe__fail(st, "%s: %s node '%s' (#%zu): %s", LAYER, n->op_type, n->name ? n->name : "", i, why);
}

static const lithe__onnx_tensor *init_of(const lithe__onnx_model *o, const lithe__onnx_node *n, size_t k) {
    const char *name = k < n->n_inputs ? n->inputs[k] : NULL;
    for (size_t j = 0; name && *name && j < o->n_inits; j++)
        if (o->inits[j].name && !strcmp(o->inits[j].name, name)) return &o->inits[j];
    return NULL;
}

/* The shape of input k when known at load (an initializer, a graph input): its rank, or -1. */
static int dims_of(const lithe__onnx_model *o, const lithe__onnx_node *n, size_t k, int64_t *dims) {
    const lithe__onnx_tensor *t = init_of(o, n, k);
    if (t) {
        memcpy(dims, t->dims, sizeof(int64_t) * (size_t)t->ndim);
        return t->ndim;
    }
    for (size_t j = 0; k < n->n_inputs && j < o->n_inputs; j++)
        if (o->inputs[j].name && !strcmp(o->inputs[j].name, n->inputs[k]) && o->inputs[j].ndim >= 0) {
            memcpy(dims, o->inputs[j].dims, sizeof(int64_t) * (size_t)o->inputs[j].ndim);
            return o->inputs[j].ndim;
        }
    return -1;
}

/* Scale input k (what: its role); want: the per-axis length (-1: not known); *count: its length
 * (-1: not an initializer). */
static lithe_status scale_ok(const lithe__onnx_model *o, const lithe__onnx_node *n, size_t i, size_t k, const char *what,
                             int64_t want, int64_t *count) {
    const lithe__onnx_tensor *t = init_of(o, n, k);
    char why[256];
    *count = -1;
    if (!t) return LITHE_OK;
    if (!t->is_float) {
        snprintf(why, sizeof why, "its %s scale '%s' has ONNX element type %d; it must be float", what, t->name,
                 (int)t->data_type);
        return refuse(n, i, LITHE_ERR_DTYPE, why);
    }
    if (t->ndim > 1 || t->numel < 1) {
        snprintf(why, sizeof why, "its %s scale '%s' must be a scalar or 1-D, has %d axes and %lld values", what,
                 t->name, t->ndim, (long long)t->numel);
        return refuse(n, i, LITHE_ERR_SHAPE, why);
    }
    for (int64_t c = 0; c < t->numel; c++) {
        float v = ((const float *)t->data)[c];
        if (!isfinite(v) || !(v > 0.0f)) {
            snprintf(why, sizeof why, "its %s scale '%s'[%lld] is %g; scales must be finite and > 0", what, t->name,
                     (long long)c, (double)v);
            return refuse(n, i, LITHE_ERR_VALUE, why);
        }
    }
    if (t->numel > 1 && want >= 0 && t->numel != want) {
        snprintf(why, sizeof why, "its %s scale '%s' has %lld values for an axis of %lld (per axis: one each)", what,
                 t->name, (long long)t->numel, (long long)want);
        return refuse(n, i, LITHE_ERR_SHAPE, why);
    }
    *count = t->numel;
    return LITHE_OK;
}

/* Zero point input k: int8 / uint8 (int32 too when wide), as many as the scale (count, or 1 or
 * want when count is -1), inside its type's range. */
static lithe_status zero_ok(const lithe__onnx_model *o, const lithe__onnx_node *n, size_t i, size_t k, const char *what,
                            int64_t count, int64_t want, bool wide) {
    const lithe__onnx_tensor *t = init_of(o, n, k);
    char why[256];
    if (!t) return LITHE_OK;
    int64_t lo, hi;
    switch (t->data_type) {
    case LITHE__ONNX_INT8: lo = -128, hi = 127; break;
    case LITHE__ONNX_UINT8: lo = 0, hi = 255; break;
    case LITHE__ONNX_INT32: lo = INT32_MIN, hi = INT32_MAX; if (wide) break; /* fall through */
    default:
        snprintf(why, sizeof why, "its %s zero point '%s' has ONNX element type %d; it must be int8 or uint8%s", what,
                 t->name, (int)t->data_type, wide ? " (or int32)" : "");
        return refuse(n, i, LITHE_ERR_DTYPE, why);
    }
    if (t->ndim > 1 || (count >= 0 && t->numel != count) || (count < 0 && t->numel != 1 && (want < 0 || t->numel != want))) {
        if (count >= 0)
            snprintf(why, sizeof why, "its %s zero point '%s' has %lld values for %lld scales", what, t->name,
                     (long long)t->numel, (long long)count);
        else
            snprintf(why, sizeof why, "its %s zero point '%s' has %lld values; it takes 1 or %lld", what, t->name,
                     (long long)t->numel, (long long)want);
        return refuse(n, i, LITHE_ERR_SHAPE, why);
    }
    for (int64_t c = 0; c < t->numel; c++) {
        int64_t v = ((const int64_t *)t->data)[c];
        if (v < lo || v > hi) {
            snprintf(why, sizeof why, "its %s zero point '%s'[%lld] = %lld is outside its type's range [%lld, %lld]",
                     what, t->name, (long long)c, (long long)v, (long long)lo, (long long)hi);
            return refuse(n, i, LITHE_ERR_VALUE, why);
        }
    }
    return LITHE_OK;
}

/* A scale / zero point pair at inputs ks, kz of data whose per-axis extent is want (-1 unknown). */
static lithe_status pair_ok(const lithe__onnx_model *o, const lithe__onnx_node *n, size_t i, size_t ks, size_t kz,
                            const char *what, int64_t want, bool wide) {
    int64_t count = -1;
    LITHE__TRY(scale_ok(o, n, i, ks, what, want, &count));
    return zero_ok(o, n, i, kz, what, count, want, wide);
}

/* QuantizeLinear / DequantizeLinear: axis in the data's rank, per-axis arrays of its extent. */
static lithe_status qdq_ok(const lithe__onnx_model *o, const lithe__onnx_node *n, size_t i, bool dq) {
    char why[200];
    const lithe__onnx_attr *bs = lithe__onnx_attr_get(n, "block_size"), *ax = lithe__onnx_attr_get(n, "axis");
    if (bs && bs->i) return refuse(n, i, LITHE_ERR_UNSUPPORTED, "blocked quantization (block_size) is not supported");
    if (n->n_inputs < 2 || !*n->inputs[1]) return refuse(n, i, LITHE_ERR_FORMAT, "its scale (input 1) is required");
    int64_t dims[LITHE_MAX_DIMS], want = -1, axis = ax ? ax->i : 1;
    int rank = dims_of(o, n, 0, dims);
    const lithe__onnx_tensor *S = init_of(o, n, 1);
    if (rank >= 0 && S && S->numel > 1) {
        if (axis < -rank || axis >= rank) {
            snprintf(why, sizeof why, "axis %lld is outside [-%d, %d) for its rank-%d input", (long long)axis, rank,
                     rank, rank);
            return refuse(n, i, LITHE_ERR_VALUE, why);
        }
        want = dims[axis < 0 ? axis + rank : axis];
        if (want < 0) want = -1; /* symbolic */
    }
    return pair_ok(o, n, i, 1, 2, dq ? "x" : "y", want, dq);
}

lithe_status lithe__graph_check_quant(const lithe__onnx_model *o, size_t i) {
    const lithe__onnx_node *n = &o->nodes[i];
    const char *op = n->op_type;
    int64_t dims[LITHE_MAX_DIMS];
    int r;
    if (!strcmp(op, "QuantizeLinear") || !strcmp(op, "DequantizeLinear")) return qdq_ok(o, n, i, op[0] == 'D');
    if (!strcmp(op, "QLinearMatMul") || !strcmp(op, "QLinearConv")) {
        bool conv = op[7] == 'C';
        if (n->n_inputs < 8) return refuse(n, i, LITHE_ERR_FORMAT, "needs 8 inputs (x, scale, zero point for a, b and y)");
        r = dims_of(o, n, 3, dims);
        int64_t want = r >= 2 ? (conv ? dims[0] : dims[r - 1]) : -1;
        LITHE__TRY(pair_ok(o, n, i, 1, 2, conv ? "x" : "a", 1, false));
        LITHE__TRY(pair_ok(o, n, i, 4, 5, conv ? "w" : "b", want, false));
        LITHE__TRY(pair_ok(o, n, i, 6, 7, "y", 1, false));
        const lithe__onnx_tensor *B = conv ? init_of(o, n, 8) : NULL;
        if (B && (B->is_float || B->ndim != 1 || (want >= 0 && B->numel != want))) {
            char why[160];
            snprintf(why, sizeof why, "its bias '%s' must be %lld int32 values", B->name, (long long)want);
            return refuse(n, i, LITHE_ERR_SHAPE, why);
        }
        return LITHE_OK;
    }
    if (!strcmp(op, "MatMulInteger")) {
        r = dims_of(o, n, 0, dims);
        LITHE__TRY(zero_ok(o, n, i, 2, "A", -1, r >= 2 ? dims[r - 2] : -1, false));
        r = dims_of(o, n, 1, dims);
        return zero_ok(o, n, i, 3, "B", -1, r >= 2 ? dims[r - 1] : -1, false);
    }
    if (!strcmp(op, "ConvInteger")) {
        LITHE__TRY(zero_ok(o, n, i, 2, "x", 1, 1, false));
        r = dims_of(o, n, 1, dims);
        return zero_ok(o, n, i, 3, "w", -1, r >= 1 ? dims[0] : -1, false);
    }
    return LITHE_OK;
}

bool lithe__graph_quant_const(const lithe__onnx_model *o, const char *name) {
    for (size_t i = 0; i < o->n_nodes; i++) {
        const lithe__onnx_node *n = &o->nodes[i];
        const char *op = n->op_type;
        bool qdq = !strcmp(op, "QuantizeLinear") || !strcmp(op, "DequantizeLinear");
        bool ql = !strcmp(op, "QLinearMatMul") || !strcmp(op, "QLinearConv");
        if (!qdq && !ql) continue;
        if (!name) return true; /* NULL: whether the model has any */
        for (size_t k = 1; k < n->n_inputs; k++)
            if ((k == 1 || (ql && (k == 4 || k == 6))) && !strcmp(n->inputs[k], name)) return true;
    }
    return false;
}
