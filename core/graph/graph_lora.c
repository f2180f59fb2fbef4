/* Which of an imported graph's initializers take a LoRA adapter (core/lora_add.c), and how their
 * values read as a matrix D (out, in): the weight W of a Gemm, a MatMul or a Conv (fused or not;
 * a 3-D Conv refuses one when it runs, core/graph/fuse.c). Gemm's W is (out, in) with transB = 1 and (in, out) without; MatMul's
 * second input is (in, out); a Conv's W (out, in/group, kh, kw) flattens to (out, in/group*kh*kw)
 * (split 1: rows = shape[0], cols = the rest).
 *
 * In a step, Gemm, MatMul and the fused Linear add the adapter on the activations (core/lora.c).
 * A Conv runs on W + s·B·A made in a temporary for the node's own forward (and again for its
 * backward, whose weight gradient, also a temporary, turns into A's and B's at once): the
 * convolution primitives take one weight, and a Conv's weight is small beside its activations
 * (mobilenet_v2's largest, 320x960, is 1.2 MB; its activations at batch 16, hundreds of MB), while
 * the activation form's X·Aᵀ would be a (N, r·group, OH, OW) tensor — eight times a depthwise
 * layer's output at rank 8. Nothing is kept between steps: no W_eff, no W gradient, no base copy. */
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

/* ---- the training step (core/lora.c has the adapters' math) ---- */

lithe_status lithe__graph_lora_of(lithe__gexec *x, size_t node, size_t k, lithe__lora_ad *ad, bool *on) {
    *on = false;
    const lithe__graph *g = x->g;
    lithe_model *m = x->m;
    if (!m || k >= g->node_nin[node] || m->n_attrs < 2) return LITHE_OK; /* an adapter brings two attrs */
    int64_t slot = g->node_in[node][k];
    if (slot < 0 || g->slot_kind[slot] != SLOT_PARAM) return LITHE_OK;
    size_t i = g->slot_param[slot];
    const lithe__param *p = i && i <= m->n_params && m->params[i - 1].name == g->slot_pname[slot]
                                ? &m->params[i - 1] : lithe__model_find_param(m, g->slot_name[slot]);
    return lithe__lora_of(m, p, ad, on);
}

/* W's (M, rest) view and the adapter's shapes against it. */
static lithe_status conv_rows(lithe__gexec *x, const lithe__lora_ad *ad, lithe_tensor *W, lithe_tensor **W2) {
    int64_t cols = W->shape[0] ? W->numel / W->shape[0] : 0;
    if (ad->A->value->shape[1] != cols || ad->B->value->shape[0] != W->shape[0])
        return lithe__fail(LITHE_ERR_SHAPE, "%s: LoRA adapter on a Conv weight of %lld filters x %lld: A must be (r, %lld) "
                           "and B (%lld, r)", x->m->name, (long long)W->shape[0], (long long)cols, (long long)cols,
                           (long long)W->shape[0]);
    return lithe_tensor_reshape(W, 2, (int64_t[]){W->shape[0], cols}, W2);
}

lithe_status lithe__graph_lora_weight(lithe__gexec *x, const lithe__lora_ad *ad, lithe_tensor *W, lithe_tensor **Wt) {
    *Wt = NULL;
    lithe_tensor *t = NULL, *t2 = NULL;
    LITHE__TRY(lithe__gexec_like(x, W, false, &t));
    lithe_status s = conv_rows(x, ad, t, &t2);
    if (s == LITHE_OK) s = lithe__op_copy(x->be, t, W);
    if (s == LITHE_OK) s = lithe__op_gemm(x->be, false, false, ad->s, ad->B->value, ad->A->value, 1.0f, t2); /* + s·B·A */
    lithe_tensor_release(t2);
    if (s != LITHE_OK) {
        lithe_tensor_release(t);
        return s;
    }
    *Wt = t;
    return LITHE_OK;
}

lithe_status lithe__graph_lora_fold(lithe__gexec *x, const lithe__lora_ad *ad, lithe_tensor *dW) {
    lithe_tensor *gA = NULL, *gB = NULL, *d2 = NULL;
    LITHE__TRY(lithe__grad_acc(x->m, ad->A->name, &gA));
    LITHE__TRY(lithe__grad_acc(x->m, ad->B->name, &gB));
    LITHE__TRY(conv_rows(x, ad, dW, &d2));
    /* dA (r, cols) += s·Bᵀ·dW;  dB (M, r) += s·dW·Aᵀ */
    lithe_status s = lithe__op_gemm(x->be, true, false, ad->s, ad->B->value, d2, 1.0f, gA);
    if (s == LITHE_OK) s = lithe__op_gemm(x->be, false, true, ad->s, d2, ad->A->value, 1.0f, gB);
    lithe_tensor_release(d2);
    return s;
}
