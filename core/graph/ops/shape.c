/* ONNX operators of the graph layer (core/graph/ops/): Identity, Dropout, Reshape, Flatten, Squeeze, Unsqueeze, Transpose. */
#include "ops.h"

/* ---- pass-through and reshaping ---- */

FWD(f_identity) {
    UNUSED_FWD;
    LITHE__TRY(need_inputs(x, node, in, n_in, 1));
    out[0] = lithe_tensor_retain(in[0]);
    if (n_out > 1) { /* Dropout's mask: all ones at inference (bool, kept as int64) */
        LITHE__TRY(new_i64(x, in[0]->ndim, in[0]->shape, &out[1]));
        for (int64_t i = 0; i < out[1]->numel; i++) ((int64_t *)lithe__tdata(out[1]))[i] = 1;
    }
    return LITHE_OK;
}
BWD(b_identity) {
    UNUSED_BWD;
    return lithe__gexec_grad_add(x, node, 0, dout[0]); /* dY itself when X has no gradient yet */
}

static lithe_status reshape_to(lithe__gexec *x, size_t node, lithe_tensor *t, int nd, const int64_t *shape,
                               lithe_tensor **out) {
    int64_t n = 1;
    for (int d = 0; d < nd; d++) {
        if (shape[d] < 0 || (shape[d] && n > INT64_MAX / shape[d]))
            return fail(x, node, LITHE_ERR_SHAPE, "bad target extent %lld", (long long)shape[d]);
        n *= shape[d];
    }
    if (n != t->numel) {
        char b[LITHE__SHAPE_BUF];
        return fail(x, node, LITHE_ERR_SHAPE, "cannot reshape %s (%lld elements) to %lld elements",
                    lithe__shape_str(t, b, sizeof b), (long long)t->numel, (long long)n);
    }
    return lithe_tensor_reshape(t, nd, shape, out);
}

/* Reshape, Flatten, Squeeze, Unsqueeze: a new shape over the same contiguous data. */
FWD(f_reshape) {
    UNUSED_FWD;
    const lithe__onnx_node *n = NODE(x, node);
    LITHE__TRY(need_inputs(x, node, in, n_in, 1));
    lithe_tensor *X = in[0];
    int64_t shape[LITHE_MAX_DIMS];
    int nd = 0;
    const char *op = n->op_type;
    if (!strcmp(op, "Reshape")) {
        LITHE__TRY(need_inputs(x, node, in, n_in, 2));
        LITHE__TRY(need_ints(x, node, in[1], 1));
        if (in[1]->numel > LITHE_MAX_DIMS) return fail(x, node, LITHE_ERR_UNSUPPORTED, "target rank %lld > %d", (long long)in[1]->numel, LITHE_MAX_DIMS);
        nd = (int)in[1]->numel;
        bool allowzero = attr_i(n, "allowzero", 0) != 0;
        int infer = -1;
        int64_t known = 1;
        for (int d = 0; d < nd; d++) {
            int64_t e = ints(in[1])[d];
            if (e == 0 && !allowzero) {
                if (d >= X->ndim) return fail(x, node, LITHE_ERR_SHAPE, "extent 0 copies axis %d of a rank-%d input", d, X->ndim);
                e = X->shape[d];
            }
            if (e == -1) {
                if (infer >= 0) return fail(x, node, LITHE_ERR_SHAPE, "two -1 extents");
                infer = d;
                e = 1;
            } else if (e < 0) {
                return fail(x, node, LITHE_ERR_SHAPE, "extent %lld", (long long)e);
            }
            shape[d] = e;
            if (e && known > INT64_MAX / e) return fail(x, node, LITHE_ERR_SHAPE, "the target's element count overflows");
            known *= e;
        }
        if (infer >= 0) {
            if (known == 0 || X->numel % known)
                return fail(x, node, LITHE_ERR_SHAPE, "cannot infer -1: %lld elements into blocks of %lld",
                            (long long)X->numel, (long long)known);
            shape[infer] = X->numel / known;
        }
    } else if (!strcmp(op, "Flatten")) {
        int64_t axis = 0;
        LITHE__TRY(norm_axis(x, node, attr_i(n, "axis", 1), X->ndim, true, &axis));
        shape[0] = shape[1] = 1;
        for (int d = 0; d < X->ndim; d++) shape[d < axis ? 0 : 1] *= X->shape[d];
        nd = 2;
    } else { /* Squeeze / Unsqueeze: axes from the attr (opset < 13) or input 1 */
        size_t na = 0;
        const int64_t *axes = attr_ints(n, "axes", &na);
        if (n_in > 1 && in[1]) {
            LITHE__TRY(need_ints(x, node, in[1], 1));
            axes = ints(in[1]);
            na = (size_t)in[1]->numel;
        }
        bool sq = !strcmp(op, "Squeeze");
        int rank = sq ? X->ndim : X->ndim + (int)na;
        if (rank > LITHE_MAX_DIMS) return fail(x, node, LITHE_ERR_UNSUPPORTED, "rank %d > %d", rank, LITHE_MAX_DIMS);
        bool mark[LITHE_MAX_DIMS] = {0};
        for (size_t k = 0; k < na; k++) {
            int64_t a = 0;
            LITHE__TRY(norm_axis(x, node, axes[k], rank, false, &a));
            if (mark[a]) return fail(x, node, LITHE_ERR_VALUE, "axis %lld given twice", (long long)axes[k]);
            mark[a] = true;
        }
        if (sq) {
            for (int d = 0; d < X->ndim; d++) {
                if (na == 0 && X->shape[d] == 1) continue;
                if (mark[d]) {
                    if (X->shape[d] != 1)
                        return fail(x, node, LITHE_ERR_SHAPE, "cannot squeeze axis %d of extent %lld", d,
                                    (long long)X->shape[d]);
                    continue;
                }
                shape[nd++] = X->shape[d];
            }
        } else {
            int k = 0;
            for (int d = 0; d < rank; d++) shape[nd++] = mark[d] ? 1 : X->shape[k++];
        }
    }
    return reshape_to(x, node, X, nd, shape, &out[0]);
}
BWD(b_reshape) {
    UNUSED_BWD;
    return lithe__gexec_grad_add(x, node, 0, dout[0]); /* dY reshaped when X has no gradient yet */
}

/* ---- Transpose ---- */

static lithe_status get_perm(lithe__gexec *x, size_t node, int rank, int64_t *perm) {
    size_t np = 0;
    const int64_t *p = attr_ints(NODE(x, node), "perm", &np);
    bool seen[LITHE_MAX_DIMS] = {0};
    if (!p) {
        for (int d = 0; d < rank; d++) perm[d] = rank - 1 - d;
        return LITHE_OK;
    }
    if ((int)np != rank) return fail(x, node, LITHE_ERR_VALUE, "perm has %zu entries for rank %d", np, rank);
    for (int d = 0; d < rank; d++) {
        if (p[d] < 0 || p[d] >= rank || seen[p[d]]) return fail(x, node, LITHE_ERR_VALUE, "perm is not a permutation");
        seen[p[d]] = true;
        perm[d] = p[d];
    }
    return LITHE_OK;
}

FWD(f_transpose) {
    UNUSED_FWD;
    LITHE__TRY(need_inputs(x, node, in, n_in, 1));
    int64_t perm[LITHE_MAX_DIMS];
    LITHE__TRY(get_perm(x, node, in[0]->ndim, perm));
    return perm_copy(x, in[0], perm, &out[0]);
}
BWD(b_transpose) {
    UNUSED_BWD;
    lithe_tensor *t = NULL;
    int64_t perm[LITHE_MAX_DIMS], inv[LITHE_MAX_DIMS];
    LITHE__TRY(get_perm(x, node, in[0]->ndim, perm));
    for (int k = 0; k < in[0]->ndim; k++) inv[perm[k]] = k;
    LITHE__TRY(perm_copy(x, dout[0], inv, &t));
    lithe_status s = lithe__gexec_grad_add(x, node, 0, t); /* t itself when X has no gradient yet */
    lithe_tensor_release(t);
    return s;
}
