/* Load-time checks of issue 23's spatial operators (the windows' are check.c's): Resize and
 * Upsample's modes, DepthToSpace / SpaceToDepth's blocksize and mode, LRN's size, the
 * normalizations' attributes — so a model that names a mode lithe does not run is refused when
 * loaded ("lithe info" included), not at the first predict. */
#include "graph.h"

#include <stdio.h>
#include <string.h>

static lithe_status refuse(const lithe__onnx_node *n, size_t i, lithe_status st, const char *why) {
    return lithe__fail(st, "onnx_graph: %s node '%s' (#%zu): %s", n->op_type, n->name ? n->name : "", i, why);
}

/* A string attr, if given, is one of the NULL-terminated list. */
static lithe_status one_of(const lithe__onnx_node *n, size_t i, const char *name, const char *const *ok) {
    const lithe__onnx_attr *a = lithe__onnx_attr_get(n, name);
    if (!a || !a->s) return LITHE_OK;
    for (size_t k = 0; ok[k]; k++)
        if (!strcmp(a->s, ok[k])) return LITHE_OK;
    char why[200];
    snprintf(why, sizeof why, "%s '%.60s' is not one lithe runs", name, a->s);
    return refuse(n, i, LITHE_ERR_UNSUPPORTED, why);
}

/* An int attr, if given, in [lo, hi]. */
static lithe_status int_in(const lithe__onnx_node *n, size_t i, const char *name, int64_t lo, int64_t hi) {
    const lithe__onnx_attr *a = lithe__onnx_attr_get(n, name);
    if (!a || (a->i >= lo && a->i <= hi)) return LITHE_OK;
    char why[200];
    snprintf(why, sizeof why, "%s %lld is outside %lld .. %lld", name, (long long)a->i, (long long)lo, (long long)hi);
    return refuse(n, i, LITHE_ERR_VALUE, why);
}

static lithe_status required(const lithe__onnx_node *n, size_t i, const char *name, int64_t lo, int64_t hi) {
    if (!lithe__onnx_attr_get(n, name)) {
        char why[120];
        snprintf(why, sizeof why, "the attribute %s is required", name);
        return refuse(n, i, LITHE_ERR_FORMAT, why);
    }
    return int_in(n, i, name, lo, hi);
}

#define IS(t) (!strcmp(n->op_type, t))

lithe_status lithe__graph_check_node_more(const lithe__onnx_model *o, size_t i) {
    const lithe__onnx_node *n = &o->nodes[i];
    if (IS("Resize") || IS("Upsample")) {
        static const char *const modes[] = {"nearest", "linear", "bilinear", "cubic", NULL};
        static const char *const coords[] = {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
                                             "tf_crop_and_resize", "tf_half_pixel_for_nn", "half_pixel_symmetric", NULL};
        static const char *const rounding[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil", NULL};
        static const char *const policies[] = {"stretch", NULL};
        LITHE__TRY(one_of(n, i, "mode", modes));
        LITHE__TRY(one_of(n, i, "coordinate_transformation_mode", coords));
        LITHE__TRY(one_of(n, i, "nearest_mode", rounding));
        LITHE__TRY(one_of(n, i, "keep_aspect_ratio_policy", policies));
        LITHE__TRY(int_in(n, i, "exclude_outside", 0, 1));
        LITHE__TRY(int_in(n, i, "antialias", 0, 0));
        if (lithe__onnx_attr_get(n, "axes")) return refuse(n, i, LITHE_ERR_UNSUPPORTED, "the axes attribute (give every axis's scale or size)");
        return LITHE_OK;
    }
    if (IS("DepthToSpace") || IS("SpaceToDepth")) {
        static const char *const modes[] = {"DCR", "CRD", NULL};
        LITHE__TRY(required(n, i, "blocksize", 1, 1 << 16));
        return IS("DepthToSpace") ? one_of(n, i, "mode", modes) : LITHE_OK;
    }
    if (IS("LRN")) return required(n, i, "size", 1, 1 << 16);
    if (IS("LpPool")) {
        const lithe__onnx_attr *ks = lithe__onnx_attr_get(n, "kernel_shape");
        if (ks && ks->n_ints == 3) return refuse(n, i, LITHE_ERR_UNSUPPORTED, "a 3-D LpPool (lithe runs 1-D and 2-D ones)");
        const lithe__onnx_attr *p = lithe__onnx_attr_get(n, "p");
        if (p && p->i != 1 && p->i != 2) return refuse(n, i, LITHE_ERR_UNSUPPORTED, "p other than 1 and 2");
        return LITHE_OK;
    }
    if (IS("GroupNormalization")) return required(n, i, "num_groups", 1, 1 << 24);
    if (IS("LpNormalization")) return int_in(n, i, "p", 1, 2);
    if (IS("BatchNormalization")) { /* exported from a model in training mode: batch statistics */
        const lithe__onnx_attr *tm = lithe__onnx_attr_get(n, "training_mode");
        bool running = false; /* the running mean / variance outputs (opsets before 14 and training_mode=1) */
        for (size_t k = 1; k < n->n_outputs; k++) running = running || (n->outputs[k] && *n->outputs[k]);
        if ((tm && tm->i != 0) || running)
            return refuse(n, i, LITHE_ERR_UNSUPPORTED, "training_mode=1 (batch statistics and running-average outputs): "
                                                       "lithe runs BatchNormalization as at inference; export the model "
                                                       "after model.eval()");
        return LITHE_OK;
    }
    return LITHE_OK;
}
