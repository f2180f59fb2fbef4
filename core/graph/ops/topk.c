/* ONNX operators of the graph layer (core/graph/ops/): TopK, NonZero (issue 23). Both produce
 * integer indices, so the order is found on the host (TopK reads its input back: a synchronisation
 * point); TopK's values are then gathered on the backend from those indices, so they are X's own
 * elements, and its backward scatters dY back to them. */
#include "ops.h"

#include <stdlib.h>

/* Sort keys: the value and its position; NaN counts as the largest (as torch.topk); equal values
 * keep the lower index first (ONNX). */
typedef struct tk_item {
    float v;
    int64_t i;
} tk_item;
static int tk_cmp_large(const void *pa, const void *pb) {
    const tk_item *a = pa, *b = pb;
    bool na = a->v != a->v, nb = b->v != b->v;
    if (na != nb) return na ? -1 : 1;
    if (!na && a->v != b->v) return a->v > b->v ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
}
static int tk_cmp_small(const void *pa, const void *pb) {
    const tk_item *a = pa, *b = pb;
    bool na = a->v != a->v, nb = b->v != b->v;
    if (na != nb) return na ? 1 : -1;
    if (!na && a->v != b->v) return a->v < b->v ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
}

/* out[0] values (float), out[1] indices (host int64); saved[0] = the flat element ids of the values. */
FWD(f_topk) {
    LITHE__TRY(need_inputs(x, node, in, n_in, 2));
    LITHE__TRY(need_ints(x, node, in[1], 1));
    LITHE__TRY(need_float(x, node, in[0], 0));
    const lithe__onnx_node *n = NODE(x, node);
    lithe_tensor *X = in[0];
    if (X->ndim < 1) return fail(x, node, LITHE_ERR_SHAPE, "input must have rank >= 1");
    if (in[1]->numel != 1) return fail(x, node, LITHE_ERR_SHAPE, "K must be one value, has %lld", (long long)in[1]->numel);
    int64_t axis = 0, K = ints(in[1])[0];
    LITHE__TRY(norm_axis(x, node, attr_i(n, "axis", -1), X->ndim, false, &axis));
    int64_t R = X->shape[axis], outer = 1, inner = 1;
    if (K < 0 || K > R) return fail(x, node, LITHE_ERR_VALUE, "k %lld is outside 0 .. %lld (the axis' length)", (long long)K, (long long)R);
    bool largest = attr_i(n, "largest", 1) != 0;
    int64_t shape[LITHE_MAX_DIMS];
    for (int d = 0; d < X->ndim; d++) {
        shape[d] = d == axis ? K : X->shape[d];
        if (d < axis) outer *= X->shape[d];
        if (d > axis) inner *= X->shape[d];
    }
    lithe_tensor *h = NULL, *ids = NULL, *tab = NULL, *y2 = NULL;
    tk_item *items = NULL;
    lithe_status s = lithe_tensor_to_backend(X, NULL, &h);
    if (s == LITHE_OK) s = new_i64(x, X->ndim, shape, &out[1]);
    if (s == LITHE_OK) s = new_i64(x, 1, (int64_t[]){outer * K * inner}, &ids);
    if (s == LITHE_OK && R && !(items = lithe__malloc((size_t)R * sizeof *items))) s = lithe__fail(LITHE_ERR_OOM, "TopK");
    for (int64_t o = 0; s == LITHE_OK && o < outer; o++)
        for (int64_t j = 0; j < inner; j++) {
            for (int64_t r = 0; r < R; r++) items[r] = (tk_item){lithe__f32(h)[(o * R + r) * inner + j], r};
            qsort(items, (size_t)R, sizeof *items, largest ? tk_cmp_large : tk_cmp_small);
            for (int64_t k = 0; k < K; k++) {
                int64_t at = (o * K + k) * inner + j;
                ((int64_t *)lithe__tdata(out[1]))[at] = items[k].i;
                ((int64_t *)lithe__tdata(ids))[at] = (o * R + items[k].i) * inner + j;
            }
        }
    lithe__free(items);
    if (s == LITHE_OK) s = new_f32(x, X->ndim, shape, false, &out[0]);
    if (s == LITHE_OK && ids->numel) {
        s = lithe_tensor_reshape(X, 2, (int64_t[]){X->numel, 1}, &tab);
        if (s == LITHE_OK) s = lithe_tensor_reshape(out[0], 2, (int64_t[]){ids->numel, 1}, &y2);
        if (s == LITHE_OK) s = gather_by_ids(x, tab, ids, y2);
    }
    (void)n_out;
    lithe_tensor_release(h);
    lithe_tensor_release(tab);
    lithe_tensor_release(y2);
    if (s == LITHE_OK) saved[0] = ids;
    else lithe_tensor_release(ids);
    return s;
}
BWD(b_topk) {
    UNUSED_BWD;
    lithe_tensor *d = NULL, *t2 = NULL, *g2 = NULL, *ids = saved[0];
    LITHE__TRY(lithe__gexec_grad(x, node, 0, &d));
    if (!d || !ids || !ids->numel || !dout[0]) return LITHE_OK;
    lithe_status s = lithe_tensor_reshape(d, 2, (int64_t[]){d->numel, 1}, &t2);
    if (s == LITHE_OK) s = lithe_tensor_reshape(dout[0], 2, (int64_t[]){ids->numel, 1}, &g2);
    if (s == LITHE_OK) s = scatter_add_by_ids(x, t2, ids, g2);
    lithe_tensor_release(t2);
    lithe_tensor_release(g2);
    return s;
}

/* NonZero: (rank, count) host int64 of the non-zero elements' coordinates, in row-major order. Its
 * shape depends on the values, so lithe runs it on integers (shape arithmetic) and on float constants
 * (folded at load) or initializers; a float computed at run time is refused (at load when it is a graph
 * input: check.c). */
FWD(f_nonzero) {
    UNUSED_FWD;
    LITHE__TRY(need_inputs(x, node, in, n_in, 1));
    lithe_tensor *X = in[0], *h = NULL;
    if (!is_int(X)) {
        LITHE__TRY(need_float(x, node, X, 0));
        int64_t sl = x->g->node_in[node][0];
        bool init = sl >= 0 && (x->g->slot_kind[sl] == SLOT_CONST || x->g->slot_kind[sl] == SLOT_PARAM);
        if (x->plan && !init) /* neither folding at load nor an initializer's values */
            return fail(x, node, LITHE_ERR_UNSUPPORTED,
                        "NonZero of a float computed at run time (its output shape is not known at load)");
        LITHE__TRY(lithe_tensor_to_backend(X, NULL, &h));
    } else {
        h = lithe_tensor_retain(X);
    }
    int64_t cnt = 0, st[LITHE_MAX_DIMS] = {0}, rank = X->ndim ? X->ndim : 1;
    for (int64_t i = 0; i < X->numel; i++) cnt += is_int(X) ? ints(h)[i] != 0 : lithe__f32(h)[i] != 0.0f;
    contiguous_strides(X->ndim, X->shape, st);
    lithe_status s = new_i64(x, 2, (int64_t[]){rank, cnt}, &out[0]);
    for (int64_t i = 0, c = 0; s == LITHE_OK && i < X->numel; i++) {
        if (is_int(X) ? ints(h)[i] == 0 : lithe__f32(h)[i] == 0.0f) continue;
        for (int d = 0; d < X->ndim; d++) ((int64_t *)lithe__tdata(out[0]))[d * cnt + c] = (i / st[d]) % X->shape[d];
        if (X->ndim == 0) ((int64_t *)lithe__tdata(out[0]))[c] = 0;
        c++;
    }
    lithe_tensor_release(h);
    return s;
}
