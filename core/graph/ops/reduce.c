/* ONNX operators of the graph layer (core/graph/ops/): Expand, ReduceMean, ReduceSum. */
#include "ops.h"

/* ---- Expand, ReduceMean / ReduceSum ---- */

FWD(f_expand) {
    UNUSED_FWD;
    LITHE__TRY(need_inputs(x, node, in, n_in, 2));
    LITHE__TRY(need_ints(x, node, in[1], 1));
    if (in[1]->numel > LITHE_MAX_DIMS) return fail(x, node, LITHE_ERR_UNSUPPORTED, "rank %lld", (long long)in[1]->numel);
    lithe_tensor shp = {0};
    shp.ndim = (int)in[1]->numel;
    for (int d = 0; d < shp.ndim; d++) shp.shape[d] = ints(in[1])[d];
    int nd = 0;
    int64_t shape[LITHE_MAX_DIMS];
    LITHE__TRY(bcast_shape(x, node, in[0], &shp, &nd, shape));
    if (is_int(in[0])) {
        lithe_tensor *zero = NULL;
        LITHE__TRY(new_i64(x, nd, shape, &zero));
        memset(lithe__tdata(zero), 0, (size_t)zero->numel * 8);
        lithe_status s = int_binary(x, node, LITHE__BIN_ADD, in[0], zero, &out[0]);
        lithe_tensor_release(zero);
        return s;
    }
    LITHE__TRY(new_f32(x, nd, shape, false, &out[0]));
    return lithe__op_broadcast_to(x->be, in[0], 1.0f, 0.0f, out[0]);
}
BWD(b_expand) {
    UNUSED_BWD;
    lithe_tensor *d = NULL;
    LITHE__TRY(lithe__gexec_grad(x, node, 0, &d));
    if (!d) return LITHE_OK;
    return lithe__op_reduce_to(x->be, dout[0], 1.0f, 1.0f, d);
}

/* The kept-dims shape of a reduction and its element count per output. */
static lithe_status reduce_geometry(lithe__gexec *x, size_t node, lithe_tensor **in, size_t n_in, int64_t *kshape,
                                    int64_t *oshape, int *ond, int64_t *count) {
    const lithe__onnx_node *n = NODE(x, node);
    const lithe_tensor *X = in[0];
    size_t na = 0;
    const int64_t *axes = attr_ints(n, "axes", &na);
    if (n_in > 1 && in[1]) {
        LITHE__TRY(need_ints(x, node, in[1], 1));
        axes = ints(in[1]);
        na = (size_t)in[1]->numel;
    }
    bool mark[LITHE_MAX_DIMS] = {0};
    if (na == 0 && !attr_i(n, "noop_with_empty_axes", 0))
        for (int d = 0; d < X->ndim; d++) mark[d] = true;
    for (size_t k = 0; k < na; k++) {
        int64_t a = 0;
        LITHE__TRY(norm_axis(x, node, axes[k], X->ndim, false, &a));
        mark[a] = true;
    }
    bool keep = attr_i(n, "keepdims", 1) != 0;
    *ond = 0;
    *count = 1;
    for (int d = 0; d < X->ndim; d++) {
        kshape[d] = mark[d] ? 1 : X->shape[d];
        if (mark[d]) *count *= X->shape[d];
        if (!mark[d] || keep) oshape[(*ond)++] = kshape[d];
    }
    return LITHE_OK;
}

FWD(f_reduce) {
    UNUSED_FWD;
    LITHE__TRY(need_inputs(x, node, in, n_in, 1));
    LITHE__TRY(need_float(x, node, in[0], 0));
    int64_t kshape[LITHE_MAX_DIMS] = {0}, oshape[LITHE_MAX_DIMS] = {0}, count = 0;
    int ond = 0;
    LITHE__TRY(reduce_geometry(x, node, in, n_in, kshape, oshape, &ond, &count));
    bool mean = !strcmp(NODE(x, node)->op_type, "ReduceMean");
    lithe_tensor *k = NULL;
    LITHE__TRY(new_f32(x, in[0]->ndim, kshape, false, &k));
    lithe_status s = lithe__op_reduce_to(x->be, in[0], mean && count ? 1.0f / (float)count : 1.0f, 0.0f, k);
    if (s == LITHE_OK) s = lithe_tensor_reshape(k, ond, oshape, &out[0]);
    lithe_tensor_release(k);
    return s;
}
BWD(b_reduce) {
    UNUSED_BWD;
    lithe_tensor *d = NULL, *k = NULL;
    LITHE__TRY(lithe__gexec_grad(x, node, 0, &d));
    if (!d) return LITHE_OK;
    int64_t kshape[LITHE_MAX_DIMS] = {0}, oshape[LITHE_MAX_DIMS] = {0}, count = 0;
    int ond = 0;
    LITHE__TRY(reduce_geometry(x, node, in, n_in, kshape, oshape, &ond, &count));
    bool mean = !strcmp(NODE(x, node)->op_type, "ReduceMean");
    LITHE__TRY(lithe_tensor_reshape(dout[0], in[0]->ndim, kshape, &k));
    lithe_status s = lithe__op_broadcast_to(x->be, k, mean && count ? 1.0f / (float)count : 1.0f, 1.0f, d);
    lithe_tensor_release(k);
    return s;
}
