/* Load-time checks of an imported graph's windowed nodes (issue 30): Conv, ConvTranspose and the
 * pools' kernel_shape, strides, dilations, pads and group, in their ranges and against the weight
 * initializer they describe — so a model whose Conv says kernel_shape [0, 0] (or [2^31, 2^31]), or
 * stride 0, is refused when loaded ("lithe info" included) rather than run as if valid or
 * failing only at predict. The graph ops (ops.c) keep their own checks at run time. */
#include "graph.h"

#include <stdio.h>
#include <string.h>

#define LAYER "onnx_graph"
#define WIN_MAX ((int64_t)1 << 20)

/* The load-time checks of issue 23's spatial operators (check_spatial.c): Resize, Upsample,
 * DepthToSpace, SpaceToDepth, LRN, the normalizations. */
lithe_status lithe__graph_check_node_more(const lithe__onnx_model *o, size_t i);

static lithe_status refuse(const lithe__onnx_node *n, size_t i, lithe_status st, const char *why) {
    return lithe__fail(st, "%s: %s node '%s' (#%zu): %s", LAYER, n->op_type, n->name ? n->name : "", i, why);
}

/* An ints attr, if given: exactly `want` entries in [lo, hi]. */
static lithe_status ints_in(const lithe__onnx_node *n, size_t i, const char *name, size_t want, int64_t lo, int64_t hi,
                            const int64_t **out) {
    const lithe__onnx_attr *a = lithe__onnx_attr_get(n, name);
    *out = NULL;
    if (!a) return LITHE_OK;
    char why[160];
    if (a->n_ints != want) {
        snprintf(why, sizeof why, "%s has %zu entries; a %zu-D window takes %zu", name, a->n_ints,
                 !strcmp(name, "pads") ? want / 2 : want, want);
        return refuse(n, i, LITHE_ERR_UNSUPPORTED, why);
    }
    for (size_t k = 0; k < want; k++)
        if (a->ints[k] < lo || a->ints[k] > hi) {
            snprintf(why, sizeof why, "%s[%zu] = %lld is outside %lld .. %lld", name, k, (long long)a->ints[k],
                     (long long)lo, (long long)hi);
            return refuse(n, i, LITHE_ERR_VALUE, why);
        }
    *out = a->ints;
    return LITHE_OK;
}

static const lithe__onnx_tensor *find_init(const lithe__onnx_model *o, const char *name) {
    for (size_t k = 0; name && *name && k < o->n_inits; k++)
        if (o->inits[k].name && !strcmp(o->inits[k].name, name)) return &o->inits[k];
    return NULL;
}

static lithe_status check_issue23(const lithe__onnx_model *o, size_t i);
/* The spatial rank of a windowed node (1 .. 3): kernel_shape's length, else its weight
 * initializer's axes less two, else what strides / dilations / pads say; 0: none says. */
static lithe_status window_rank(const lithe__onnx_model *o, const lithe__onnx_node *n, size_t i, int *rank) {
    static const char *const names[] = {"kernel_shape", "strides", "dilations", "output_padding", "pads"};
    const lithe__onnx_tensor *W = n->n_inputs > 1 ? find_init(o, n->inputs[1]) : NULL;
    const lithe__onnx_attr *ks = lithe__onnx_attr_get(n, "kernel_shape");
    *rank = ks ? (int)(ks->n_ints < 8 ? ks->n_ints : 8) : W ? W->ndim - 2 : 0;
    for (size_t k = 1; !*rank && k < sizeof names / sizeof names[0]; k++) {
        const lithe__onnx_attr *a = lithe__onnx_attr_get(n, names[k]);
        if (a) *rank = (int)((k == 4 ? a->n_ints / 2 : a->n_ints) < 8 ? (k == 4 ? a->n_ints / 2 : a->n_ints) : 8);
    }
    if (!*rank && !W) *rank = 2; /* nothing says: checked when the node runs, as a 2-D one by default */
    char why[200];
    if (*rank < 1 || *rank > 3) {
        snprintf(why, sizeof why, "a %d-D window (lithe runs 1-D, 2-D and 3-D ones)", *rank);
        return refuse(n, i, LITHE_ERR_UNSUPPORTED, why);
    }
    const lithe__onnx_attr *ap = lithe__onnx_attr_get(n, "auto_pad");
    if (ap && ap->s && strcmp(ap->s, "NOTSET") && strcmp(ap->s, "VALID") && strcmp(ap->s, "SAME_UPPER") &&
        strcmp(ap->s, "SAME_LOWER")) {
        snprintf(why, sizeof why, "auto_pad '%.40s' is not NOTSET, VALID, SAME_UPPER or SAME_LOWER", ap->s);
        return refuse(n, i, LITHE_ERR_VALUE, why);
    }
    static const char *const flags[] = {"ceil_mode", "count_include_pad"};
    for (size_t k = 0; k < 2; k++) {
        const lithe__onnx_attr *f = lithe__onnx_attr_get(n, flags[k]);
        if (f && f->i != 0 && f->i != 1) {
            snprintf(why, sizeof why, "%s %lld is not 0 or 1", flags[k], (long long)f->i);
            return refuse(n, i, LITHE_ERR_VALUE, why);
        }
    }
    return LITHE_OK;
}

lithe_status lithe__graph_check_node(const lithe__onnx_model *o, size_t i) {
    const lithe__onnx_node *n = &o->nodes[i];
    /* recurrent nodes (issue 23 item 6) */
    LITHE__TRY(lithe__graph_check_recurrent(o, i));
    LITHE__TRY(check_issue23(o, i)); /* issue 23 items 1-2: reductions, indexing, elementwise */
    LITHE__TRY(lithe__graph_check_quant(o, i)); /* issue 24: quantization parameters (check_quant.c) */
    bool conv = !strcmp(n->op_type, "Conv"), convt = !strcmp(n->op_type, "ConvTranspose");
    bool pool = !strcmp(n->op_type, "MaxPool") || !strcmp(n->op_type, "AveragePool") || !strcmp(n->op_type, "LpPool");
    if (!conv && !convt && !pool) return lithe__graph_check_node_more(o, i);
    int r = 2;
    LITHE__TRY(window_rank(o, n, i, &r));
    const int64_t *ks, *v;
    LITHE__TRY(ints_in(n, i, "kernel_shape", (size_t)r, 1, WIN_MAX, &ks));
    LITHE__TRY(ints_in(n, i, "strides", (size_t)r, 1, WIN_MAX, &v));
    LITHE__TRY(ints_in(n, i, "dilations", (size_t)r, 1, WIN_MAX, &v));
    LITHE__TRY(ints_in(n, i, "pads", 2 * (size_t)r, 0, WIN_MAX, &v));
    if (convt) LITHE__TRY(ints_in(n, i, "output_padding", (size_t)r, 0, WIN_MAX, &v));
    if (pool && !ks) return refuse(n, i, LITHE_ERR_FORMAT, "kernel_shape is required");
    if (pool) return lithe__graph_check_node_more(o, i); /* LpPool's p and rank */
    const lithe__onnx_attr *ga = lithe__onnx_attr_get(n, "group");
    int64_t group = ga ? ga->i : 1;
    char why[200];
    if (group < 1 || group > WIN_MAX) {
        snprintf(why, sizeof why, "group %lld is outside 1 .. 2^20", (long long)group);
        return refuse(n, i, LITHE_ERR_VALUE, why);
    }
    const lithe__onnx_tensor *W = n->n_inputs > 1 ? find_init(o, n->inputs[1]) : NULL;
    if (!W) return LITHE_OK; /* a weight computed in the graph: checked when the node runs */
    if (W->ndim != r + 2) {
        snprintf(why, sizeof why, "its weight '%s' has %d axes; a %d-D convolution's has %d", W->name, W->ndim, r, r + 2);
        return refuse(n, i, LITHE_ERR_SHAPE, why);
    }
    for (int k = 0; ks && k < r; k++)
        if (ks[k] != W->dims[2 + k]) {
            snprintf(why, sizeof why, "kernel_shape[%d] = %lld does not match its weight '%s''s extent %lld", k,
                     (long long)ks[k], W->name, (long long)W->dims[2 + k]);
            return refuse(n, i, LITHE_ERR_SHAPE, why);
        }
    /* Conv's W is (M, C / group, kH, kW): group divides M; ConvTranspose's (C, M / group, kH, kW) */
    if (W->dims[0] % group) {
        snprintf(why, sizeof why, "group %lld does not divide its weight '%s''s %lld %s", (long long)group, W->name,
                 (long long)W->dims[0], conv ? "output channels" : "input channels");
        return refuse(n, i, LITHE_ERR_SHAPE, why);
    }
    const lithe__onnx_tensor *B = n->n_inputs > 2 ? find_init(o, n->inputs[2]) : NULL;
    int64_t M = conv ? W->dims[0] : W->dims[1] * group;
    if (B && (B->ndim != 1 || B->dims[0] != M)) {
        snprintf(why, sizeof why, "its bias '%s' has %lld values for %lld output channels", B->name,
                 (long long)B->numel, (long long)M);
        return refuse(n, i, LITHE_ERR_SHAPE, why);
    }
    return LITHE_OK;
}

/* ---- issue 23 items 1-2 (ops/reduce2.c, index.c, elemwise2.c): flags in {0, 1}, axes within the
 * rank where the input's rank is known at load (a graph input or an initializer), index /
 * repeats / axis initializers of an integer type and in range. ---- */

static int rank_of(const lithe__onnx_model *o, const char *name) {
    const lithe__onnx_tensor *t = find_init(o, name);
    if (t) return t->ndim;
    for (size_t k = 0; name && k < o->n_inputs; k++)
        if (o->inputs[k].name && !strcmp(o->inputs[k].name, name)) return o->inputs[k].ndim;
    return -1;
}

static lithe_status flag_ok(const lithe__onnx_node *n, size_t i, const char *name) {
    const lithe__onnx_attr *a = lithe__onnx_attr_get(n, name);
    char why[120];
    if (!a || a->i == 0 || a->i == 1) return LITHE_OK;
    snprintf(why, sizeof why, "%s is %lld; it must be 0 or 1", name, (long long)a->i);
    return refuse(n, i, LITHE_ERR_VALUE, why);
}

static lithe_status axes_ok(const lithe__onnx_node *n, size_t i, const char *what, const int64_t *ax, size_t na, int rank) {
    char why[160];
    for (size_t k = 0; k < na; k++) {
        if (rank >= 0 && (ax[k] < -rank || ax[k] >= (rank ? rank : 1))) {
            snprintf(why, sizeof why, "%s %lld is outside [-%d, %d) for its rank-%d input", what, (long long)ax[k], rank,
                     rank, rank);
            return refuse(n, i, LITHE_ERR_VALUE, why);
        }
        for (size_t j = 0; j < k; j++)
            if (rank >= 0 && (ax[j] + (ax[j] < 0 ? rank : 0)) == (ax[k] + (ax[k] < 0 ? rank : 0))) {
                snprintf(why, sizeof why, "%s %lld is given twice", what, (long long)ax[k]);
                return refuse(n, i, LITHE_ERR_VALUE, why);
            }
    }
    return LITHE_OK;
}

/* Input k, when an initializer, must be integer (an index, axes, repeats). */
static lithe_status int_init(const lithe__onnx_model *o, const lithe__onnx_node *n, size_t i, size_t k, const char *what,
                             const lithe__onnx_tensor **out) {
    const lithe__onnx_tensor *t = n->n_inputs > k ? find_init(o, n->inputs[k]) : NULL;
    char why[160];
    *out = NULL;
    if (!t) return LITHE_OK;
    if (t->data_type != LITHE__ONNX_INT64 && t->data_type != LITHE__ONNX_INT32) {
        snprintf(why, sizeof why, "its %s '%s' has ONNX element type %d; it must be int64 or int32", what, t->name,
                 (int)t->data_type);
        return refuse(n, i, LITHE_ERR_DTYPE, why);
    }
    *out = t;
    return LITHE_OK;
}

static lithe_status check_issue23(const lithe__onnx_model *o, size_t i) {
    const lithe__onnx_node *n = &o->nodes[i];
    const char *op = n->op_type;
    int rank = n->n_inputs ? rank_of(o, n->inputs[0]) : -1;
    const lithe__onnx_tensor *t = NULL;
    const lithe__onnx_attr *a;
    char why[300];
    if (!strncmp(op, "Reduce", 6)) {
        LITHE__TRY(flag_ok(n, i, "keepdims"));
        LITHE__TRY(flag_ok(n, i, "noop_with_empty_axes"));
        if ((a = lithe__onnx_attr_get(n, "axes"))) LITHE__TRY(axes_ok(n, i, "axis", a->ints, a->n_ints, rank));
        LITHE__TRY(int_init(o, n, i, 1, "axes", &t));
        if (t) LITHE__TRY(axes_ok(n, i, "axis", (const int64_t *)t->data, (size_t)t->numel, rank));
    } else if (!strcmp(op, "ArgMax") || !strcmp(op, "ArgMin") || !strcmp(op, "Hardmax") || !strcmp(op, "GatherElements")) {
        LITHE__TRY(flag_ok(n, i, "keepdims"));
        LITHE__TRY(flag_ok(n, i, "select_last_index"));
        if ((a = lithe__onnx_attr_get(n, "axis"))) LITHE__TRY(axes_ok(n, i, "axis", &a->i, 1, rank));
        if (!strcmp(op, "GatherElements")) LITHE__TRY(int_init(o, n, i, 1, "indices", &t));
        int64_t ax = a ? a->i : 0, ext = -1; /* indices against a known extent of the data's axis */
        for (size_t k = 0; t && rank > 0 && k < o->n_inputs; k++)
            if (o->inputs[k].name && !strcmp(o->inputs[k].name, n->inputs[0])) ext = o->inputs[k].dims[ax < 0 ? ax + rank : ax];
        for (int64_t k = 0; t && ext > 0 && k < t->numel; k++) {
            int64_t v = ((const int64_t *)t->data)[k];
            if (v < -ext || v >= ext) {
                snprintf(why, sizeof why, "index %lld is outside an axis of %lld", (long long)v, (long long)ext);
                return refuse(n, i, LITHE_ERR_VALUE, why);
            }
        }
    } else if (!strcmp(op, "CumSum")) {
        LITHE__TRY(flag_ok(n, i, "exclusive"));
        LITHE__TRY(flag_ok(n, i, "reverse"));
        LITHE__TRY(int_init(o, n, i, 1, "axis", &t));
        if (t && t->numel != 1) return refuse(n, i, LITHE_ERR_SHAPE, "its axis must be one value");
        if (t) LITHE__TRY(axes_ok(n, i, "axis", (const int64_t *)t->data, 1, rank));
    } else if (!strcmp(op, "GatherND")) {
        LITHE__TRY(int_init(o, n, i, 1, "indices", &t));
        a = lithe__onnx_attr_get(n, "batch_dims");
        if (a && (a->i < 0 || (rank >= 0 && a->i >= rank))) {
            snprintf(why, sizeof why, "batch_dims %lld is outside 0 .. rank - 1", (long long)a->i);
            return refuse(n, i, LITHE_ERR_VALUE, why);
        }
    } else if (!strcmp(op, "Tile")) {
        LITHE__TRY(int_init(o, n, i, 1, "repeats", &t));
        for (int64_t k = 0; t && k < t->numel; k++)
            if (((const int64_t *)t->data)[k] < 0) return refuse(n, i, LITHE_ERR_VALUE, "a repeat is negative");
        if (t && rank >= 0 && t->numel != rank) return refuse(n, i, LITHE_ERR_SHAPE, "repeats must hold one value per input axis");
    } else if (!strcmp(op, "Mod")) {
        LITHE__TRY(flag_ok(n, i, "fmod"));
    } else if (!strcmp(op, "Einsum")) {
        a = lithe__onnx_attr_get(n, "equation");
        char what[96];
        if (!a || !a->s) return refuse(n, i, LITHE_ERR_FORMAT, "equation is required");
        if (!lithe__einsum_supported(a->s, n->n_inputs, what, sizeof what)) {
            snprintf(why, sizeof why, "equation '%.40s': %s (lithe runs transposes and batched matrix products)", a->s, what);
            return refuse(n, i, LITHE_ERR_UNSUPPORTED, why);
        }
    } else if (!strcmp(op, "TopK")) {
        LITHE__TRY(flag_ok(n, i, "largest"));
        LITHE__TRY(flag_ok(n, i, "sorted"));
        if ((a = lithe__onnx_attr_get(n, "axis"))) LITHE__TRY(axes_ok(n, i, "axis", &a->i, 1, rank));
        LITHE__TRY(int_init(o, n, i, 1, "K", &t));
        int64_t ax = a ? a->i : -1, ext = -1;
        for (size_t k = 0; t && rank > 0 && k < o->n_inputs; k++)
            if (o->inputs[k].name && !strcmp(o->inputs[k].name, n->inputs[0])) ext = o->inputs[k].dims[ax < 0 ? ax + rank : ax];
        if (t && (t->numel != 1 || ((const int64_t *)t->data)[0] < 0 || (ext >= 0 && ((const int64_t *)t->data)[0] > ext))) {
            snprintf(why, sizeof why, "k %lld is outside 0 .. %lld (the axis' length)", t->numel == 1 ? (long long)((const int64_t *)t->data)[0] : -1LL, (long long)ext);
            return refuse(n, i, LITHE_ERR_VALUE, why);
        }
    } else if (!strcmp(op, "ScatterElements") || !strcmp(op, "ScatterND")) {
        LITHE__TRY(int_init(o, n, i, 1, "indices", &t));
        a = lithe__onnx_attr_get(n, "reduction");
        if (a && a->s && strcmp(a->s, "none") && strcmp(a->s, "add")) {
            snprintf(why, sizeof why, "reduction '%.20s' (lithe runs none and add)", a->s);
            return refuse(n, i, LITHE_ERR_UNSUPPORTED, why);
        }
        if ((a = lithe__onnx_attr_get(n, "axis"))) LITHE__TRY(axes_ok(n, i, "axis", &a->i, 1, rank));
    } else if (!strcmp(op, "NonZero")) { /* its output shape must fold at load: not a float graph input */
        for (size_t k = 0; n->n_inputs && k < o->n_inputs; k++)
            if (o->inputs[k].name && !strcmp(o->inputs[k].name, n->inputs[0]) && o->inputs[k].elem_type == LITHE__ONNX_FLOAT)
                return refuse(n, i, LITHE_ERR_UNSUPPORTED,
                              "NonZero of a float graph input (its output shape is known only at run time)");
    } else if (!strcmp(op, "Trilu")) {
        LITHE__TRY(flag_ok(n, i, "upper"));
        if (rank >= 0 && rank < 2) return refuse(n, i, LITHE_ERR_SHAPE, "its input must have rank >= 2");
    } else if (!strcmp(op, "OneHot")) {
        LITHE__TRY(int_init(o, n, i, 1, "depth", &t));
        if (t && (t->numel != 1 || ((const int64_t *)t->data)[0] < 1)) return refuse(n, i, LITHE_ERR_VALUE, "depth must be one value >= 1");
        if ((a = lithe__onnx_attr_get(n, "axis")) && rank >= 0) LITHE__TRY(axes_ok(n, i, "axis", &a->i, 1, rank + 1));
    } else if (!strcmp(op, "IsInf")) {
        LITHE__TRY(flag_ok(n, i, "detect_positive"));
        LITHE__TRY(flag_ok(n, i, "detect_negative"));
    }
    return LITHE_OK;
}
