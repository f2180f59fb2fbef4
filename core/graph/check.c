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
