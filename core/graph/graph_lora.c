/* Which of an imported graph's initializers take a LoRA adapter (core/lora.c), and how their
 * values read as a matrix D (out, in): the weight W of a Gemm, a MatMul or a Conv (fused or not,
 * core/graph/fuse.c). Gemm's W is (out, in) with transB = 1 and (in, out) without; MatMul's
 * second input is (in, out); a Conv's W (out, in/group, kh, kw) flattens to (out, in/group*kh*kw)
 * (split 1: rows = shape[0], cols = the rest). */
#include "graph.h"

#include <string.h>

static lithe__graph *graph_of(const lithe_model *m) {
    for (size_t i = 0; i < m->n_shims; i++)
        if (m->shims[i] && m->shims[i]->type && !strcmp(m->shims[i]->type->name, "onnx")) return m->shims[i]->state;
    return NULL;
}

bool lithe__graph_is(const lithe_model *m) {
    return lithe_model_attr_type(m, "onnx") == LITHE_ATTR_TENSOR;
}

/* The layout of node i's weight: 0 none, else LITHE__LORA_T (a (in, out) matrix) or the split. */
static int node_weight(const lithe__graph *g, size_t i, int64_t *slot) {
    const lithe__onnx_node *n = &g->onnx.nodes[i];
    if (g->node_nin[i] < 2) return 0;
    *slot = g->node_in[i][1];
    switch (g->node_fuse[i].kind) {
    case LITHE__FUSE_LINEAR: return g->node_fuse[i].transB ? 1 : LITHE__LORA_T;
    case LITHE__FUSE_CONV:
    case LITHE__FUSE_CONV_ADD: return 1;
    case LITHE__FUSE_NONE: break;
    default: return 0;
    }
    if (!strcmp(n->op_type, "Gemm")) {
        const lithe__onnx_attr *a = lithe__onnx_attr_get(n, "transB");
        return a && a->i ? 1 : LITHE__LORA_T;
    }
    if (!strcmp(n->op_type, "MatMul")) return LITHE__LORA_T;
    if (!strcmp(n->op_type, "Conv")) return 1;
    return 0;
}

lithe_status lithe__graph_lora_weights(lithe_model *m, lithe__lora_found fn, void *user) {
    LITHE__TRY(lithe__onnx_attach(m));
    lithe__graph *g = graph_of(m);
    if (!g) return lithe__fail(LITHE_ERR_STATE, "%s: no graph attached", m->name);
    for (size_t i = 0; i < g->onnx.n_nodes; i++) {
        if (lithe__gnode_skipped(g, i)) continue;
        int64_t slot = -1;
        int layout = node_weight(g, i, &slot);
        if (!layout || slot < 0 || g->slot_kind[slot] != SLOT_PARAM) continue;
        /* a weight read by two nodes in different layouts has no one matrix to adapt */
        for (size_t j = 0; j < i; j++) {
            int64_t other = -1;
            int l2 = lithe__gnode_skipped(g, j) ? 0 : node_weight(g, j, &other);
            if (other == slot && l2 && l2 != layout)
                return lithe__fail(LITHE_ERR_UNSUPPORTED, "%s: initializer '%s' is read as a weight in two layouts "
                                   "(nodes %zu and %zu): no LoRA adapter for it", m->name, g->slot_name[slot], j, i);
            if (other == slot && l2) layout = 0; /* reported once */
        }
        if (layout) LITHE__TRY(fn(m, g->slot_name[slot], layout, user));
    }
    return LITHE_OK;
}
