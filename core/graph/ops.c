/* The ONNX operators the graph layer runs: forward and backward for each, through the backend's
 * primitives. Float values are contiguous float32 tensors on the model's backend; integer values
 * (shapes, axes, indices) are host int64 tensors, computed eagerly so the shape arithmetic around
 * Shape / Gather / Unsqueeze / Concat is plain C on the host. Every backward accumulates into the
 * gradients lithe__gexec_grad hands out (a value may feed several nodes). */
#include "graph.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define NODE(x, i) (&(x)->g->onnx.nodes[i])
#define FWD(name) static lithe_status name(lithe__gexec *x, size_t node, lithe_tensor **in, size_t n_in, \
                                           lithe_tensor **out, size_t n_out, lithe_tensor **saved)
#define BWD(name) static lithe_status name(lithe__gexec *x, size_t node, lithe_tensor **in, size_t n_in, \
                                           lithe_tensor **out, lithe_tensor **dout, lithe_tensor **saved)
#define UNUSED_FWD (void)n_in; (void)n_out; (void)saved
#define UNUSED_BWD (void)n_in; (void)out; (void)saved

/* ---- helpers ---- */

static lithe_status fail(lithe__gexec *x, size_t node, lithe_status st, const char *fmt, ...) LITHE__PRINTF(4, 5);
static lithe_status fail(lithe__gexec *x, size_t node, lithe_status st, const char *fmt, ...) {
    char head[256], msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return lithe__fail(st, "%s: %s", lithe__gnode_str(x, node, head, sizeof head), msg);
}

static int64_t attr_i(const lithe__onnx_node *n, const char *name, int64_t dflt) {
    const lithe__onnx_attr *a = lithe__onnx_attr_get(n, name);
    return a ? a->i : dflt;
}
static float attr_f(const lithe__onnx_node *n, const char *name, float dflt) {
    const lithe__onnx_attr *a = lithe__onnx_attr_get(n, name);
    return a ? a->f : dflt;
}
static const int64_t *attr_ints(const lithe__onnx_node *n, const char *name, size_t *count) {
    const lithe__onnx_attr *a = lithe__onnx_attr_get(n, name);
    *count = a ? a->n_ints : 0;
    return a ? a->ints : NULL;
}

static bool is_int(const lithe_tensor *t) { return t && t->dtype == LITHE_I64; }
static const int64_t *ints(const lithe_tensor *t) { return (const int64_t *)lithe__tdata(t); }

static lithe_status need_inputs(lithe__gexec *x, size_t node, lithe_tensor **in, size_t n_in, size_t need) {
    if (n_in < need) return fail(x, node, LITHE_ERR_FORMAT, "needs %zu inputs, has %zu", need, n_in);
    for (size_t k = 0; k < need; k++)
        if (!in[k]) return fail(x, node, LITHE_ERR_FORMAT, "input %zu is required but left out", k);
    return LITHE_OK;
}
static lithe_status need_float(lithe__gexec *x, size_t node, const lithe_tensor *t, size_t k) {
    if (t->dtype != LITHE_F32)
        return fail(x, node, LITHE_ERR_DTYPE, "input %zu must be float, got %s", k, lithe_dtype_name(t->dtype));
    return LITHE_OK;
}
static lithe_status need_ints(lithe__gexec *x, size_t node, const lithe_tensor *t, size_t k) {
    if (!is_int(t))
        return fail(x, node, LITHE_ERR_DTYPE, "input %zu must be an integer tensor (a shape, axes or indices), got %s",
                    k, lithe_dtype_name(t->dtype));
    return LITHE_OK;
}

static lithe_status new_f32(lithe__gexec *x, int ndim, const int64_t *shape, bool zero, lithe_tensor **out) {
    return lithe__gexec_alloc(x, x->be, LITHE_F32, ndim, shape, zero, out);
}
static lithe_status new_i64(lithe__gexec *x, int ndim, const int64_t *shape, lithe_tensor **out) {
    return lithe__gexec_alloc(x, lithe__backend_host(), LITHE_I64, ndim, shape, false, out);
}

/* A new descriptor over t's storage with the given shape and strides (elements). */
static lithe_status view(lithe_tensor *t, int ndim, const int64_t *shape, const int64_t *strides, int64_t offset,
                         lithe_tensor **out) {
    LITHE__TRY(lithe_tensor_reshape(t, 1, (int64_t[]){t->numel}, out)); /* a fresh descriptor */
    lithe_tensor *v = *out;
    v->ndim = ndim;
    v->numel = 1;
    for (int d = 0; d < ndim; d++) {
        v->shape[d] = shape[d];
        v->strides[d] = strides[d];
        v->numel *= shape[d];
    }
    v->offset += offset;
    return LITHE_OK;
}

static void contiguous_strides(int ndim, const int64_t *shape, int64_t *st) {
    int64_t s = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        st[d] = s;
        s *= shape[d];
    }
}

/* dst (a gradient accumulator) += src, equal element counts. */
static lithe_status acc(lithe__gexec *x, lithe_tensor *dst, const lithe_tensor *src) {
    if (!dst || !src) return LITHE_OK;
    return lithe__op_axpby(x->be, 1.0f, src, 1.0f, dst);
}

static lithe_status norm_axis(lithe__gexec *x, size_t node, int64_t axis, int rank, bool allow_end, int64_t *out) {
    int64_t hi = allow_end ? rank : rank - 1;
    if (axis < -rank || axis > hi)
        return fail(x, node, LITHE_ERR_VALUE, "axis %lld outside [-%d, %lld] for rank %d", (long long)axis, rank,
                    (long long)hi, rank);
    *out = axis < 0 ? axis + rank : axis;
    return LITHE_OK;
}

/* numpy broadcast of two shapes. */
static lithe_status bcast_shape(lithe__gexec *x, size_t node, const lithe_tensor *a, const lithe_tensor *b, int *nd,
                                int64_t *shape) {
    *nd = a->ndim > b->ndim ? a->ndim : b->ndim;
    for (int d = 0; d < *nd; d++) {
        int ka = d - (*nd - a->ndim), kb = d - (*nd - b->ndim);
        int64_t ea = ka >= 0 ? a->shape[ka] : 1, eb = kb >= 0 ? b->shape[kb] : 1;
        if (ea != eb && ea != 1 && eb != 1) {
            char sa[LITHE__SHAPE_BUF], sb[LITHE__SHAPE_BUF];
            return fail(x, node, LITHE_ERR_SHAPE, "shapes %s and %s do not broadcast", lithe__shape_str(a, sa, sizeof sa),
                        lithe__shape_str(b, sb, sizeof sb));
        }
        shape[d] = ea == 1 ? eb : ea;
    }
    return LITHE_OK;
}

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
    lithe_tensor *d = NULL;
    LITHE__TRY(lithe__gexec_grad(x, node, 0, &d));
    return acc(x, d, dout[0]);
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
    lithe_tensor *d = NULL, *v = NULL;
    LITHE__TRY(lithe__gexec_grad(x, node, 0, &d));
    if (!d) return LITHE_OK;
    LITHE__TRY(lithe_tensor_reshape(dout[0], d->ndim, d->shape, &v));
    lithe_status s = acc(x, d, v);
    lithe_tensor_release(v);
    return s;
}

/* ---- Transpose ---- */

static lithe_status permute_copy(lithe__gexec *x, lithe_tensor *X, const int64_t *perm, lithe_tensor **out) {
    int64_t st[LITHE_MAX_DIMS] = {0}, shape[LITHE_MAX_DIMS], vst[LITHE_MAX_DIMS];
    contiguous_strides(X->ndim, X->shape, st);
    for (int d = 0; d < X->ndim; d++) {
        shape[d] = X->shape[perm[d]];
        vst[d] = st[perm[d]];
    }
    lithe_tensor *v = NULL;
    LITHE__TRY(view(X, X->ndim, shape, vst, 0, &v));
    lithe_status s = lithe__gexec_alloc(x, X->dtype == LITHE_F32 ? x->be : lithe__backend_host(), X->dtype, X->ndim, shape,
                                         false, out);
    if (s == LITHE_OK) s = lithe__op_copy(X->dtype == LITHE_F32 ? x->be : lithe__backend_host(), *out, v);
    lithe_tensor_release(v);
    return s;
}

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
    return permute_copy(x, in[0], perm, &out[0]);
}
BWD(b_transpose) {
    UNUSED_BWD;
    lithe_tensor *d = NULL, *t = NULL;
    LITHE__TRY(lithe__gexec_grad(x, node, 0, &d));
    if (!d) return LITHE_OK;
    int64_t perm[LITHE_MAX_DIMS], inv[LITHE_MAX_DIMS];
    LITHE__TRY(get_perm(x, node, in[0]->ndim, perm));
    for (int k = 0; k < in[0]->ndim; k++) inv[perm[k]] = k;
    LITHE__TRY(permute_copy(x, dout[0], inv, &t));
    lithe_status s = acc(x, d, t);
    lithe_tensor_release(t);
    return s;
}

/* ---- Gemm, MatMul ---- */

FWD(f_gemm) {
    UNUSED_FWD;
    const lithe__onnx_node *n = NODE(x, node);
    LITHE__TRY(need_inputs(x, node, in, n_in, 2));
    lithe_tensor *A = in[0], *B = in[1], *C = n_in > 2 ? in[2] : NULL;
    for (size_t k = 0; k < 2; k++) LITHE__TRY(need_float(x, node, in[k], k));
    if (A->ndim != 2 || B->ndim != 2) return fail(x, node, LITHE_ERR_SHAPE, "A and B must be 2-D, got %d-D and %d-D", A->ndim, B->ndim);
    bool tA = attr_i(n, "transA", 0), tB = attr_i(n, "transB", 0);
    float alpha = attr_f(n, "alpha", 1.0f), beta = attr_f(n, "beta", 1.0f);
    int64_t M = tA ? A->shape[1] : A->shape[0], K = tA ? A->shape[0] : A->shape[1];
    int64_t KB = tB ? B->shape[1] : B->shape[0], N = tB ? B->shape[0] : B->shape[1];
    if (K != KB)
        return fail(x, node, LITHE_ERR_SHAPE, "A gives (%lld, %lld), B gives (%lld, %lld): inner extents differ",
                    (long long)M, (long long)K, (long long)KB, (long long)N);
    LITHE__TRY(new_f32(x, 2, (int64_t[]){M, N}, C == NULL, &out[0]));
    if (C) {
        LITHE__TRY(need_float(x, node, C, 2));
        int nd = 0;
        int64_t sh[LITHE_MAX_DIMS];
        LITHE__TRY(bcast_shape(x, node, C, out[0], &nd, sh));
        if (nd != 2 || sh[0] != M || sh[1] != N) return fail(x, node, LITHE_ERR_SHAPE, "C does not broadcast to (%lld, %lld)", (long long)M, (long long)N);
        LITHE__TRY(lithe__op_broadcast_to(x->be, C, beta, 0.0f, out[0]));
    }
    if (!x->is_train && !tA && tB && alpha == 1.0f && (!C || (beta == 1.0f && C->ndim == 1))) {
        /* a backend's own operator, prepared for B and C (LITHE_XNNPACK): out written anew */
        lithe__prep_op op = {.kind = LITHE__PREP_FC, .out_min = -INFINITY, .out_max = INFINITY};
        bool done = false;
        LITHE__TRY(lithe__run_prepared_op(x->be, x->is_train, &op, B, C, A, out[0], &done));
        if (done) return LITHE_OK;
    }
    /* B's prepared form at inference (an initializer lithe_model_prepare_inference packed) */
    return lithe__gemm_w(x->be, x->is_train, tA, tB, alpha, A, B, C ? 1.0f : 0.0f, out[0]);
}
BWD(b_gemm) {
    UNUSED_BWD;
    const lithe__onnx_node *n = NODE(x, node);
    bool tA = attr_i(n, "transA", 0), tB = attr_i(n, "transB", 0);
    float alpha = attr_f(n, "alpha", 1.0f), beta = attr_f(n, "beta", 1.0f);
    lithe_tensor *dA = NULL, *dB = NULL, *dC = NULL, *dY = dout[0];
    LITHE__TRY(lithe__gexec_grad(x, node, 0, &dA));
    LITHE__TRY(lithe__gexec_grad(x, node, 1, &dB));
    if (n_in > 2 && in[2]) LITHE__TRY(lithe__gexec_grad(x, node, 2, &dC));
    /* Y = alpha op(A) op(B): d op(A) = dY op(B)ᵀ, d op(B) = op(A)ᵀ dY */
    if (dA) {
        if (!tA) LITHE__TRY(lithe__op_gemm(x->be, false, !tB, alpha, dY, in[1], 1.0f, dA));
        else LITHE__TRY(lithe__op_gemm(x->be, tB, true, alpha, in[1], dY, 1.0f, dA));
    }
    if (dB) {
        if (!tB) LITHE__TRY(lithe__op_gemm(x->be, !tA, false, alpha, in[0], dY, 1.0f, dB));
        else LITHE__TRY(lithe__op_gemm(x->be, true, tA, alpha, dY, in[0], 1.0f, dB));
    }
    if (dC) LITHE__TRY(lithe__op_reduce_to(x->be, dY, beta, 1.0f, dC));
    return LITHE_OK;
}

/* A 2-D view of rows [r0, r0 + rows) of a contiguous tensor read as (total_rows, cols). */
static lithe_status rows_view(lithe_tensor *t, int64_t r0, int64_t rows, int64_t cols, lithe_tensor **out) {
    return view(t, 2, (int64_t[]){rows, cols}, (int64_t[]){cols, 1}, r0 * cols, out);
}

/* MatMul: A (..., M, K) · B (K, N) as one GEMM over the stacked rows, or batched A (P..., M, K) ·
 * B (P..., K, N) with equal leading extents, one GEMM per batch. */
typedef struct mm_geo {
    int64_t P, M, K, N;
    bool b2d;
} mm_geo;

static lithe_status mm_geometry(lithe__gexec *x, size_t node, const lithe_tensor *A, const lithe_tensor *B,
                                mm_geo *g, int *nd, int64_t *shape) {
    if (A->ndim < 2 || B->ndim < 2)
        return fail(x, node, LITHE_ERR_UNSUPPORTED, "1-D operands are not supported (got %d-D and %d-D)", A->ndim, B->ndim);
    g->M = A->shape[A->ndim - 2];
    g->K = A->shape[A->ndim - 1];
    g->N = B->shape[B->ndim - 1];
    if (B->shape[B->ndim - 2] != g->K)
        return fail(x, node, LITHE_ERR_SHAPE, "A's last extent %lld does not match B's rows %lld", (long long)g->K,
                    (long long)B->shape[B->ndim - 2]);
    g->b2d = B->ndim == 2;
    g->P = 1;
    for (int d = 0; d < A->ndim - 2; d++) g->P *= A->shape[d];
    if (!g->b2d) {
        bool same = A->ndim == B->ndim;
        for (int d = 0; same && d < A->ndim - 2; d++) same = A->shape[d] == B->shape[d];
        if (!same) return fail(x, node, LITHE_ERR_UNSUPPORTED, "batched MatMul needs equal batch extents (no broadcasting)");
    }
    *nd = A->ndim;
    for (int d = 0; d < A->ndim - 2; d++) shape[d] = A->shape[d];
    shape[*nd - 2] = g->M;
    shape[*nd - 1] = g->N;
    return LITHE_OK;
}

/* C[p] (+)= op(A[p]) · op(B[p]) for every batch p; a 2-D operand (P == 1 side) is shared.
 * fwd: a forward product, which may read B's prepared form when the run is not training. */
static lithe_status batched_gemm(lithe__gexec *x, int64_t P, bool tA, bool tB, lithe_tensor *A, int64_t ar, int64_t ac,
                                 bool a_shared, lithe_tensor *B, int64_t br, int64_t bc, bool b_shared, lithe_tensor *C,
                                 int64_t cr, int64_t cc, float beta, bool fwd) {
    lithe_status s = LITHE_OK;
    for (int64_t p = 0; s == LITHE_OK && p < P; p++) {
        lithe_tensor *a = NULL, *b = NULL, *c = NULL;
        s = rows_view(A, a_shared ? 0 : p * ar, ar, ac, &a);
        if (s == LITHE_OK) s = rows_view(B, b_shared ? 0 : p * br, br, bc, &b);
        if (s == LITHE_OK) s = rows_view(C, p * cr, cr, cc, &c);
        if (s == LITHE_OK) s = lithe__gemm_w(x->be, x->is_train || !fwd, tA, tB, 1.0f, a, b, beta, c);
        lithe_tensor_release(a);
        lithe_tensor_release(b);
        lithe_tensor_release(c);
    }
    return s;
}

FWD(f_matmul) {
    UNUSED_FWD;
    LITHE__TRY(need_inputs(x, node, in, n_in, 2));
    for (size_t k = 0; k < 2; k++) LITHE__TRY(need_float(x, node, in[k], k));
    mm_geo g = {0};
    int nd = 0;
    int64_t shape[LITHE_MAX_DIMS];
    LITHE__TRY(mm_geometry(x, node, in[0], in[1], &g, &nd, shape));
    LITHE__TRY(new_f32(x, nd, shape, false, &out[0]));
    if (g.b2d) /* stack A's rows: one GEMM */
        return batched_gemm(x, 1, false, false, in[0], g.P * g.M, g.K, true, in[1], g.K, g.N, true, out[0], g.P * g.M, g.N,
                            0.0f, true);
    return batched_gemm(x, g.P, false, false, in[0], g.M, g.K, false, in[1], g.K, g.N, false, out[0], g.M, g.N, 0.0f, true);
}
BWD(b_matmul) {
    UNUSED_BWD;
    mm_geo g = {0};
    int nd = 0;
    int64_t shape[LITHE_MAX_DIMS];
    LITHE__TRY(mm_geometry(x, node, in[0], in[1], &g, &nd, shape));
    lithe_tensor *dA = NULL, *dB = NULL;
    LITHE__TRY(lithe__gexec_grad(x, node, 0, &dA));
    LITHE__TRY(lithe__gexec_grad(x, node, 1, &dB));
    if (g.b2d) {
        int64_t R = g.P * g.M;
        if (dA) LITHE__TRY(batched_gemm(x, 1, false, true, dout[0], R, g.N, true, in[1], g.K, g.N, true, dA, R, g.K, 1.0f, false));
        if (dB) LITHE__TRY(batched_gemm(x, 1, true, false, in[0], R, g.K, true, dout[0], R, g.N, true, dB, g.K, g.N, 1.0f, false));
        return LITHE_OK;
    }
    if (dA) LITHE__TRY(batched_gemm(x, g.P, false, true, dout[0], g.M, g.N, false, in[1], g.K, g.N, false, dA, g.M, g.K, 1.0f, false));
    if (dB) LITHE__TRY(batched_gemm(x, g.P, true, false, in[0], g.M, g.K, false, dout[0], g.M, g.N, false, dB, g.K, g.N, 1.0f, false));
    return LITHE_OK;
}

/* ---- elementwise binary ---- */

static int bin_op_of(const char *op) {
    if (!strcmp(op, "Add")) return LITHE__BIN_ADD;
    if (!strcmp(op, "Sub")) return LITHE__BIN_SUB;
    if (!strcmp(op, "Mul")) return LITHE__BIN_MUL;
    if (!strcmp(op, "Div")) return LITHE__BIN_DIV;
    if (!strcmp(op, "Less")) return LITHE__BIN_LESS;
    if (!strcmp(op, "Greater")) return LITHE__BIN_GREATER;
    if (!strcmp(op, "Equal")) return LITHE__BIN_EQUAL;
    return LITHE__BIN_POW;
}

/* Integer arithmetic on host shapes (torch.onnx emits it around Shape). */
static lithe_status int_binary(lithe__gexec *x, size_t node, int op, lithe_tensor *A, lithe_tensor *B, lithe_tensor **out) {
    int nd = 0;
    int64_t shape[LITHE_MAX_DIMS], as[LITHE_MAX_DIMS], bs[LITHE_MAX_DIMS], idx[LITHE_MAX_DIMS] = {0};
    LITHE__TRY(bcast_shape(x, node, A, B, &nd, shape));
    LITHE__TRY(new_i64(x, nd, shape, out));
    int64_t sa = 1, sb = 1; /* <= the operands' element counts */
    for (int d = nd - 1, ka = A->ndim - 1, kb = B->ndim - 1; d >= 0; d--, ka--, kb--) {
        as[d] = ka >= 0 && A->shape[ka] != 1 ? sa : 0;
        bs[d] = kb >= 0 && B->shape[kb] != 1 ? sb : 0;
        if (ka >= 0) sa *= A->shape[ka];
        if (kb >= 0) sb *= B->shape[kb];
    }
    int64_t *y = (int64_t *)lithe__tdata(*out);
    for (int64_t i = 0; i < (*out)->numel; i++) {
        int64_t oa = 0, ob = 0;
        for (int d = 0; d < nd; d++) {
            oa += idx[d] * as[d];
            ob += idx[d] * bs[d];
        }
        int64_t a = ints(A)[oa], b = ints(B)[ob];
        switch (op) {
        case LITHE__BIN_ADD: y[i] = (int64_t)((uint64_t)a + (uint64_t)b); break;
        case LITHE__BIN_SUB: y[i] = (int64_t)((uint64_t)a - (uint64_t)b); break;
        case LITHE__BIN_MUL: y[i] = (int64_t)((uint64_t)a * (uint64_t)b); break;
        case LITHE__BIN_DIV:
            if (b == 0 || (a == INT64_MIN && b == -1)) {
                lithe_tensor_release(*out);
                *out = NULL;
                return fail(x, node, LITHE_ERR_VALUE, "integer division %lld / %lld", (long long)a, (long long)b);
            }
            y[i] = a / b;
            break;
        case LITHE__BIN_LESS: y[i] = a < b; break;
        case LITHE__BIN_GREATER: y[i] = a > b; break;
        case LITHE__BIN_EQUAL: y[i] = a == b; break;
        default: {
            int64_t r = 1;
            for (int64_t e = 0; e < b && e < 64; e++) r = (int64_t)((uint64_t)r * (uint64_t)a);
            y[i] = r;
        }
        }
        for (int d = nd - 1; d >= 0 && ++idx[d] == shape[d]; d--) idx[d] = 0;
    }
    return LITHE_OK;
}

FWD(f_binary) {
    UNUSED_FWD;
    LITHE__TRY(need_inputs(x, node, in, n_in, 2));
    int op = bin_op_of(NODE(x, node)->op_type);
    if (is_int(in[0]) && is_int(in[1])) return int_binary(x, node, op, in[0], in[1], &out[0]);
    for (size_t k = 0; k < 2; k++) LITHE__TRY(need_float(x, node, in[k], k));
    int nd = 0;
    int64_t shape[LITHE_MAX_DIMS];
    LITHE__TRY(bcast_shape(x, node, in[0], in[1], &nd, shape));
    LITHE__TRY(new_f32(x, nd, shape, false, &out[0]));
    return lithe__op_bcast_binary(x->be, op, in[0], in[1], out[0]);
}
BWD(b_binary) {
    UNUSED_BWD;
    lithe_tensor *dA = NULL, *dB = NULL;
    LITHE__TRY(lithe__gexec_grad(x, node, 0, &dA));
    LITHE__TRY(lithe__gexec_grad(x, node, 1, &dB));
    if (!dA && !dB) return LITHE_OK;
    return lithe__op_bcast_binary_backward(x->be, bin_op_of(NODE(x, node)->op_type), in[0], in[1], out[0], dout[0], dA, dB);
}

/* Not: 1 - x on a float mask, !x on host booleans. */
FWD(f_not) {
    UNUSED_FWD;
    LITHE__TRY(need_inputs(x, node, in, n_in, 1));
    if (is_int(in[0])) {
        LITHE__TRY(new_i64(x, in[0]->ndim, in[0]->shape, &out[0]));
        for (int64_t i = 0; i < in[0]->numel; i++) ((int64_t *)lithe__tdata(out[0]))[i] = !ints(in[0])[i];
        return LITHE_OK;
    }
    LITHE__TRY(lithe__gexec_like(x, in[0], false, &out[0]));
    LITHE__TRY(lithe__op_fill(x->be, out[0], 1.0f));
    return lithe__op_axpby(x->be, -1.0f, in[0], 1.0f, out[0]);
}

/* A float 0 / 1 mask on the backend from a condition: a float mask already, or host booleans. */
static lithe_status mask_of(lithe__gexec *x, lithe_tensor *c, lithe_tensor **out) {
    if (c->dtype == LITHE_F32) {
        *out = lithe_tensor_retain(c);
        return LITHE_OK;
    }
    lithe_tensor *h = NULL;
    LITHE__TRY(lithe__gexec_alloc(x, lithe__backend_host(), LITHE_F32, c->ndim, c->shape, false, &h));
    for (int64_t i = 0; i < c->numel; i++) lithe__f32(h)[i] = ints(c)[i] != 0 ? 1.0f : 0.0f;
    lithe_status s = lithe_tensor_to_backend(h, x->be, out);
    lithe_tensor_release(h);
    return s;
}

/* Where(C, A, B): a select with broadcasting; integers on the host, floats by bcast_where.
 * saved[0] = the float mask; backward: dA += dY C, dB += dY (1 - C), each reduced to its shape. */
FWD(f_where) {
    (void)n_out;
    LITHE__TRY(need_inputs(x, node, in, n_in, 3));
    int nd = 0, nd2 = 0;
    int64_t s1[LITHE_MAX_DIMS], shape[LITHE_MAX_DIMS];
    LITHE__TRY(bcast_shape(x, node, in[1], in[2], &nd, s1));
    lithe_tensor ab = {0};
    ab.ndim = nd;
    memcpy(ab.shape, s1, sizeof s1);
    LITHE__TRY(bcast_shape(x, node, in[0], &ab, &nd2, shape));
    if (is_int(in[1]) && is_int(in[2]) && is_int(in[0])) { /* shape arithmetic: all on the host */
        lithe_tensor *t = NULL, *zero = NULL;
        LITHE__TRY(new_i64(x, nd2, shape, &zero));
        memset(lithe__tdata(zero), 0, (size_t)zero->numel * 8);
        lithe_tensor *c = NULL, *a = NULL, *b = NULL;
        lithe_status s = int_binary(x, node, LITHE__BIN_ADD, in[0], zero, &c);
        if (s == LITHE_OK) s = int_binary(x, node, LITHE__BIN_ADD, in[1], zero, &a);
        if (s == LITHE_OK) s = int_binary(x, node, LITHE__BIN_ADD, in[2], zero, &b);
        if (s == LITHE_OK) s = new_i64(x, nd2, shape, &t);
        for (int64_t i = 0; s == LITHE_OK && i < t->numel; i++)
            ((int64_t *)lithe__tdata(t))[i] = ints(c)[i] ? ints(a)[i] : ints(b)[i];
        lithe_tensor_release(zero);
        lithe_tensor_release(c);
        lithe_tensor_release(a);
        lithe_tensor_release(b);
        if (s != LITHE_OK) lithe_tensor_release(t);
        else out[0] = t;
        return s;
    }
    LITHE__TRY(need_float(x, node, in[1], 1));
    LITHE__TRY(need_float(x, node, in[2], 2));
    LITHE__TRY(mask_of(x, in[0], &saved[0]));
    LITHE__TRY(new_f32(x, nd2, shape, false, &out[0]));
    return lithe__op_bcast_where(x->be, saved[0], in[1], in[2], out[0]);
}
BWD(b_where) {
    (void)n_in;
    lithe_tensor *dA = NULL, *dB = NULL, *t = NULL;
    LITHE__TRY(lithe__gexec_grad(x, node, 1, &dA));
    LITHE__TRY(lithe__gexec_grad(x, node, 2, &dB));
    if (!dA && !dB) return LITHE_OK;
    LITHE__TRY(lithe__gexec_like(x, out[0], false, &t));
    lithe_status s = lithe__op_bcast_binary(x->be, LITHE__BIN_MUL, dout[0], saved[0], t); /* dY C */
    if (s == LITHE_OK && dA) s = lithe__op_reduce_to(x->be, t, 1.0f, 1.0f, dA);
    if (s == LITHE_OK && dB) s = lithe__op_axpby(x->be, 1.0f, dout[0], -1.0f, t); /* dY (1 - C) */
    if (s == LITHE_OK && dB) s = lithe__op_reduce_to(x->be, t, 1.0f, 1.0f, dB);
    lithe_tensor_release(t);
    return s;
}

/* ---- activations and unary maths ---- */

static bool act_of(lithe__gexec *x, size_t node, lithe_tensor **in, size_t n_in, lithe__act *a) {
    const lithe__onnx_node *n = NODE(x, node);
    memset(a, 0, sizeof *a);
    const char *op = n->op_type;
    if (!strcmp(op, "Relu")) a->kind = LITHE__ACT_RELU;
    else if (!strcmp(op, "Sigmoid")) a->kind = LITHE__ACT_SIGMOID;
    else if (!strcmp(op, "Tanh")) a->kind = LITHE__ACT_TANH;
    else if (!strcmp(op, "Gelu")) a->kind = LITHE__ACT_GELU;
    else { /* Clip: min / max from the attrs (opset < 11) or inputs 1, 2 */
        a->kind = LITHE__ACT_CLIPPED_LINEAR;
        a->slope = 1.0f;
        a->min_val = attr_f(n, "min", -INFINITY);
        a->max_val = attr_f(n, "max", INFINITY);
        if (n_in > 1 && in[1] && in[1]->numel == 1 && in[1]->dtype == LITHE_F32 && in[1]->storage->backend->host_memory)
            a->min_val = lithe__f32(in[1])[0];
        if (n_in > 2 && in[2] && in[2]->numel == 1 && in[2]->dtype == LITHE_F32 && in[2]->storage->backend->host_memory)
            a->max_val = lithe__f32(in[2])[0];
        return (n_in <= 1 || !in[1] || (in[1]->numel == 1 && in[1]->storage->backend->host_memory)) &&
               (n_in <= 2 || !in[2] || (in[2]->numel == 1 && in[2]->storage->backend->host_memory));
    }
    return true;
}

FWD(f_act) {
    UNUSED_FWD;
    LITHE__TRY(need_inputs(x, node, in, n_in, 1));
    LITHE__TRY(need_float(x, node, in[0], 0));
    lithe__act a = {0};
    if (!act_of(x, node, in, n_in, &a)) return fail(x, node, LITHE_ERR_UNSUPPORTED, "min and max must be scalars on the host");
    LITHE__TRY(lithe__gexec_like(x, in[0], false, &out[0]));
    return lithe__op_act(x->be, &a, in[0], out[0]);
}
BWD(b_act) {
    UNUSED_BWD;
    lithe_tensor *d = NULL, *t = NULL;
    LITHE__TRY(lithe__gexec_grad(x, node, 0, &d));
    if (!d) return LITHE_OK;
    lithe__act a = {0};
    act_of(x, node, in, n_in, &a);
    LITHE__TRY(lithe__gexec_like(x, d, false, &t));
    lithe_status s = lithe__op_act_backward(x->be, &a, dout[0], in[0], out[0], t);
    if (s == LITHE_OK) s = acc(x, d, t);
    lithe_tensor_release(t);
    return s;
}

static int unary_of(const char *op) {
    if (!strcmp(op, "Exp")) return LITHE__UN_EXP;
    if (!strcmp(op, "Log")) return LITHE__UN_LOG;
    if (!strcmp(op, "Sqrt")) return LITHE__UN_SQRT;
    if (!strcmp(op, "Neg")) return LITHE__UN_NEG;
    if (!strcmp(op, "Erf")) return LITHE__UN_ERF;
    if (!strcmp(op, "Abs")) return LITHE__UN_ABS;
    return LITHE__UN_RECIPROCAL;
}

FWD(f_unary) {
    UNUSED_FWD;
    LITHE__TRY(need_inputs(x, node, in, n_in, 1));
    int op = unary_of(NODE(x, node)->op_type);
    if (is_int(in[0]) && (op == LITHE__UN_NEG || op == LITHE__UN_ABS)) {
        LITHE__TRY(new_i64(x, in[0]->ndim, in[0]->shape, &out[0]));
        for (int64_t i = 0; i < in[0]->numel; i++) {
            int64_t v = ints(in[0])[i];
            ((int64_t *)lithe__tdata(out[0]))[i] = op == LITHE__UN_NEG || v < 0 ? (int64_t)(0 - (uint64_t)v) : v;
        }
        return LITHE_OK;
    }
    LITHE__TRY(need_float(x, node, in[0], 0));
    LITHE__TRY(lithe__gexec_like(x, in[0], false, &out[0]));
    return lithe__op_unary(x->be, op, in[0], out[0]);
}
BWD(b_unary) {
    UNUSED_BWD;
    lithe_tensor *d = NULL;
    LITHE__TRY(lithe__gexec_grad(x, node, 0, &d));
    if (!d) return LITHE_OK;
    return lithe__op_unary_backward(x->be, unary_of(NODE(x, node)->op_type), in[0], out[0], dout[0], d);
}

/* ---- Softmax, LogSoftmax: rows of (outer, inner) ---- */

static lithe_status softmax_rows(lithe__gexec *x, size_t node, const lithe_tensor *X, int64_t *M, int64_t *N) {
    const lithe__onnx_node *n = NODE(x, node);
    bool old = x->g->onnx.opset < 13; /* before 13: the input is coerced to 2-D at axis (default 1) */
    int64_t axis = 0;
    LITHE__TRY(norm_axis(x, node, attr_i(n, "axis", old ? 1 : -1), X->ndim, false, &axis));
    if (!old && axis != X->ndim - 1)
        return fail(x, node, LITHE_ERR_UNSUPPORTED, "softmax over axis %lld of a rank-%d input (lithe takes the last axis)",
                    (long long)axis, X->ndim);
    *M = 1;
    *N = 1;
    for (int d = 0; d < X->ndim; d++) *(d < axis ? M : N) *= X->shape[d];
    return LITHE_OK;
}

static lithe_status as_rows(lithe_tensor *t, int64_t M, int64_t N, lithe_tensor **out) {
    /* already (M, N) and contiguous (a Linear's 2-D input and output): the tensor itself, not a
     * view made and freed per call */
    if (t->ndim == 2 && t->shape[0] == M && t->shape[1] == N && lithe_tensor_is_contiguous(t)) {
        *out = lithe_tensor_retain(t);
        return LITHE_OK;
    }
    return lithe_tensor_reshape(t, 2, (int64_t[]){M, N}, out);
}

FWD(f_softmax) {
    UNUSED_FWD;
    LITHE__TRY(need_inputs(x, node, in, n_in, 1));
    LITHE__TRY(need_float(x, node, in[0], 0));
    int64_t M = 0, N = 0;
    LITHE__TRY(softmax_rows(x, node, in[0], &M, &N));
    bool log = !strcmp(NODE(x, node)->op_type, "LogSoftmax");
    lithe_tensor *X2 = NULL, *Y2 = NULL;
    LITHE__TRY(lithe__gexec_like(x, in[0], false, &out[0]));
    lithe_status s = as_rows(in[0], M, N, &X2);
    if (s == LITHE_OK) s = as_rows(out[0], M, N, &Y2);
    if (s == LITHE_OK) s = log ? lithe__op_log_softmax(x->be, X2, Y2) : lithe__op_softmax(x->be, X2, 1.0f, Y2);
    lithe_tensor_release(X2);
    lithe_tensor_release(Y2);
    return s;
}
BWD(b_softmax) {
    UNUSED_BWD;
    lithe_tensor *d = NULL;
    LITHE__TRY(lithe__gexec_grad(x, node, 0, &d));
    if (!d) return LITHE_OK;
    int64_t M = 0, N = 0;
    LITHE__TRY(softmax_rows(x, node, in[0], &M, &N));
    bool log = !strcmp(NODE(x, node)->op_type, "LogSoftmax");
    lithe_tensor *Y2 = NULL, *dY2 = NULL, *d2 = NULL, *t = NULL;
    lithe_status s = as_rows(out[0], M, N, &Y2);
    if (s == LITHE_OK) s = as_rows(dout[0], M, N, &dY2);
    if (s == LITHE_OK) s = as_rows(d, M, N, &d2);
    if (s == LITHE_OK && log) s = lithe__op_log_softmax_backward(x->be, Y2, dY2, d2);
    if (s == LITHE_OK && !log) s = lithe__gexec_like(x, d2, false, &t);
    if (s == LITHE_OK && !log) s = lithe__op_softmax_backward(x->be, Y2, dY2, 1.0f, t);
    if (s == LITHE_OK && !log) s = acc(x, d2, t);
    lithe_tensor_release(Y2);
    lithe_tensor_release(dY2);
    lithe_tensor_release(d2);
    lithe_tensor_release(t);
    return s;
}

/* ---- Concat, Split, Slice: strided views and copies ---- */

/* A view of t restricted to [start, start + len) along axis with step. */
static lithe_status axis_view(lithe_tensor *t, int axis, int64_t start, int64_t len, int64_t step, lithe_tensor **out) {
    int64_t st[LITHE_MAX_DIMS] = {0}, shape[LITHE_MAX_DIMS];
    contiguous_strides(t->ndim, t->shape, st);
    for (int d = 0; d < t->ndim; d++) shape[d] = t->shape[d];
    shape[axis] = len;
    int64_t off = start * st[axis];
    st[axis] *= step;
    return view(t, t->ndim, shape, st, off, out);
}

static lithe_backend *be_of(lithe__gexec *x, const lithe_tensor *t) {
    return t->dtype == LITHE_F32 ? x->be : lithe__backend_host();
}

FWD(f_concat) {
    UNUSED_FWD;
    LITHE__TRY(need_inputs(x, node, in, n_in, 1));
    lithe_tensor *A = in[0];
    int64_t axis = 0;
    LITHE__TRY(norm_axis(x, node, attr_i(NODE(x, node), "axis", 0), A->ndim, false, &axis));
    int64_t shape[LITHE_MAX_DIMS];
    for (int d = 0; d < A->ndim; d++) shape[d] = A->shape[d];
    shape[axis] = 0;
    for (size_t k = 0; k < n_in; k++) {
        if (!in[k] || in[k]->ndim != A->ndim || in[k]->dtype != A->dtype)
            return fail(x, node, LITHE_ERR_SHAPE, "input %zu differs in rank or type from input 0", k);
        for (int d = 0; d < A->ndim; d++)
            if (d != axis && in[k]->shape[d] != A->shape[d])
                return fail(x, node, LITHE_ERR_SHAPE, "input %zu has extent %lld on axis %d, input 0 has %lld", k,
                            (long long)in[k]->shape[d], d, (long long)A->shape[d]);
        shape[axis] += in[k]->shape[axis];
    }
    LITHE__TRY(lithe__gexec_alloc(x, be_of(x, A), A->dtype, A->ndim, shape, false, &out[0]));
    int64_t at = 0;
    for (size_t k = 0; k < n_in; k++) {
        lithe_tensor *v = NULL;
        LITHE__TRY(axis_view(out[0], (int)axis, at, in[k]->shape[axis], 1, &v));
        lithe_status s = in[k]->numel ? lithe__op_copy(be_of(x, A), v, in[k]) : LITHE_OK;
        lithe_tensor_release(v);
        LITHE__TRY(s);
        at += in[k]->shape[axis];
    }
    return LITHE_OK;
}

/* d (accumulator shaped as view v's extents) += the strided view v. */
static lithe_status acc_from_view(lithe__gexec *x, lithe_tensor *d, lithe_tensor *v) {
    lithe_tensor *t = NULL;
    LITHE__TRY(lithe__gexec_like(x, d, false, &t));
    lithe_status s = d->numel ? lithe__op_copy(x->be, t, v) : LITHE_OK;
    if (s == LITHE_OK) s = acc(x, d, t);
    lithe_tensor_release(t);
    return s;
}

BWD(b_concat) {
    UNUSED_BWD;
    int64_t axis = 0;
    LITHE__TRY(norm_axis(x, node, attr_i(NODE(x, node), "axis", 0), in[0]->ndim, false, &axis));
    int64_t at = 0;
    for (size_t k = 0; k < n_in; k++) {
        lithe_tensor *d = NULL, *v = NULL;
        LITHE__TRY(lithe__gexec_grad(x, node, k, &d));
        if (d) {
            LITHE__TRY(axis_view(dout[0], (int)axis, at, in[k]->shape[axis], 1, &v));
            lithe_status s = acc_from_view(x, d, v);
            lithe_tensor_release(v);
            LITHE__TRY(s);
        }
        at += in[k]->shape[axis];
    }
    return LITHE_OK;
}

static lithe_status split_sizes(lithe__gexec *x, size_t node, lithe_tensor **in, size_t n_in, size_t n_out, int64_t *axis,
                                int64_t *sizes) {
    const lithe__onnx_node *n = NODE(x, node);
    LITHE__TRY(norm_axis(x, node, attr_i(n, "axis", 0), in[0]->ndim, false, axis));
    int64_t total = in[0]->shape[*axis];
    size_t ns = 0;
    const int64_t *sp = attr_ints(n, "split", &ns);
    if (n_in > 1 && in[1]) {
        LITHE__TRY(need_ints(x, node, in[1], 1));
        sp = ints(in[1]);
        ns = (size_t)in[1]->numel;
    }
    if (sp) {
        if (ns != n_out) return fail(x, node, LITHE_ERR_VALUE, "%zu split sizes for %zu outputs", ns, n_out);
        int64_t sum = 0;
        for (size_t k = 0; k < ns; k++) {
            if (sp[k] < 0 || sp[k] > total) return fail(x, node, LITHE_ERR_VALUE, "split size %lld", (long long)sp[k]);
            sizes[k] = sp[k];
            sum += sp[k];
        }
        if (sum != total) return fail(x, node, LITHE_ERR_VALUE, "split sizes sum to %lld, the axis has %lld", (long long)sum, (long long)total);
        return LITHE_OK;
    }
    int64_t each = (total + (int64_t)n_out - 1) / (int64_t)n_out; /* the last part may be smaller (opset 18) */
    for (size_t k = 0; k < n_out; k++) {
        int64_t left = total - each * (int64_t)k;
        sizes[k] = left < each ? (left > 0 ? left : 0) : each;
    }
    return LITHE_OK;
}

FWD(f_split) {
    (void)saved;
    LITHE__TRY(need_inputs(x, node, in, n_in, 1));
    int64_t axis = 0, sizes[16] = {0};
    if (n_out == 0 || n_out > 16) return fail(x, node, LITHE_ERR_UNSUPPORTED, "%zu outputs", n_out);
    LITHE__TRY(split_sizes(x, node, in, n_in, n_out, &axis, sizes));
    int64_t at = 0;
    for (size_t k = 0; k < n_out; k++) {
        lithe_tensor *v = NULL;
        LITHE__TRY(axis_view(in[0], (int)axis, at, sizes[k], 1, &v));
        lithe_status s = lithe__gexec_alloc(x, be_of(x, in[0]), in[0]->dtype, v->ndim, v->shape, false, &out[k]);
        if (s == LITHE_OK && v->numel) s = lithe__op_copy(be_of(x, in[0]), out[k], v);
        lithe_tensor_release(v);
        LITHE__TRY(s);
        at += sizes[k];
    }
    return LITHE_OK;
}
BWD(b_split) {
    (void)saved;
    lithe_tensor *d = NULL;
    LITHE__TRY(lithe__gexec_grad(x, node, 0, &d));
    if (!d) return LITHE_OK;
    size_t n_out = NODE(x, node)->n_outputs;
    int64_t axis = 0, sizes[16] = {0};
    LITHE__TRY(split_sizes(x, node, in, n_in, n_out, &axis, sizes));
    int64_t at = 0;
    for (size_t k = 0; k < n_out; k++) {
        if (dout[k] && sizes[k]) {
            lithe_tensor *v = NULL;
            LITHE__TRY(axis_view(d, (int)axis, at, sizes[k], 1, &v));
            /* the view of the accumulator: add through a temporary (copy cannot add) */
            lithe_tensor *t = NULL;
            lithe_status s = lithe__gexec_alloc(x, x->be, LITHE_F32, v->ndim, v->shape, false, &t);
            if (s == LITHE_OK) s = lithe__op_copy(x->be, t, v);
            if (s == LITHE_OK) s = acc(x, t, dout[k]);
            if (s == LITHE_OK) s = lithe__op_copy(x->be, v, t);
            lithe_tensor_release(t);
            lithe_tensor_release(v);
            LITHE__TRY(s);
        }
        (void)out;
        at += sizes[k];
    }
    return LITHE_OK;
}

/* Slice (opset >= 10: starts, ends, axes, steps as inputs; before: attrs). */
typedef struct slice_geo {
    int64_t start[LITHE_MAX_DIMS], len[LITHE_MAX_DIMS], step[LITHE_MAX_DIMS];
} slice_geo;

static lithe_status slice_geometry(lithe__gexec *x, size_t node, lithe_tensor **in, size_t n_in, slice_geo *g) {
    const lithe__onnx_node *n = NODE(x, node);
    const lithe_tensor *X = in[0];
    const int64_t *st, *en, *ax = NULL, *sp = NULL;
    size_t ns, ne, na = 0, nsp = 0;
    if (n_in >= 3) {
        for (size_t k = 1; k < n_in; k++)
            if (in[k]) LITHE__TRY(need_ints(x, node, in[k], k));
        if (!in[1] || !in[2]) return fail(x, node, LITHE_ERR_FORMAT, "starts and ends are required");
        st = ints(in[1]);
        ns = (size_t)in[1]->numel;
        en = ints(in[2]);
        ne = (size_t)in[2]->numel;
        if (n_in > 3 && in[3]) {
            ax = ints(in[3]);
            na = (size_t)in[3]->numel;
        }
        if (n_in > 4 && in[4]) {
            sp = ints(in[4]);
            nsp = (size_t)in[4]->numel;
        }
    } else {
        st = attr_ints(n, "starts", &ns);
        en = attr_ints(n, "ends", &ne);
        ax = attr_ints(n, "axes", &na);
    }
    if (ns != ne || (ax && na != ns) || (sp && nsp != ns) || (int64_t)ns > X->ndim)
        return fail(x, node, LITHE_ERR_VALUE, "starts, ends, axes and steps disagree in length (%zu, %zu, %zu, %zu)", ns,
                    ne, na, nsp);
    for (int d = 0; d < X->ndim; d++) {
        g->start[d] = 0;
        g->len[d] = X->shape[d];
        g->step[d] = 1;
    }
    for (size_t k = 0; k < ns; k++) {
        int64_t a = 0;
        LITHE__TRY(norm_axis(x, node, ax ? ax[k] : (int64_t)k, X->ndim, false, &a));
        int64_t dim = X->shape[a], step = sp ? sp[k] : 1, s = st[k], e = en[k];
        if (step == 0) return fail(x, node, LITHE_ERR_VALUE, "step 0");
        /* a step beyond the extent takes one element at most: clamp it, so neither the length
         * arithmetic nor the view's stride * step can overflow (|step| <= dim keeps it <= numel) */
        int64_t big = dim > 0 ? dim : 1;
        if (step > big) step = big;
        if (step < -big) step = -big;
        if (s < 0) s += dim;
        if (e < 0 && e > INT64_MIN + dim) e += dim;
        int64_t len;
        if (step > 0) {
            s = s < 0 ? 0 : s > dim ? dim : s;
            e = e < 0 ? 0 : e > dim ? dim : e;
            len = e > s ? (e - s - 1) / step + 1 : 0;
        } else {
            s = s < 0 ? -1 : s > dim - 1 ? dim - 1 : s;
            e = e < -1 ? -1 : e > dim - 1 ? dim - 1 : e;
            len = s > e ? (s - e - 1) / (-step) + 1 : 0;
        }
        g->start[a] = len ? s : 0;
        g->len[a] = len;
        g->step[a] = step;
    }
    return LITHE_OK;
}

static lithe_status slice_view(lithe_tensor *t, const slice_geo *g, lithe_tensor **out) {
    int64_t st[LITHE_MAX_DIMS] = {0}, vst[LITHE_MAX_DIMS], off = 0;
    contiguous_strides(t->ndim, t->shape, st);
    for (int d = 0; d < t->ndim; d++) {
        off += g->start[d] * st[d];
        vst[d] = st[d] * g->step[d];
    }
    return view(t, t->ndim, g->len, vst, off, out);
}

FWD(f_slice) {
    UNUSED_FWD;
    LITHE__TRY(need_inputs(x, node, in, n_in, 1));
    slice_geo g = {0};
    LITHE__TRY(slice_geometry(x, node, in, n_in, &g));
    lithe_tensor *v = NULL;
    LITHE__TRY(slice_view(in[0], &g, &v));
    lithe_status s = lithe__gexec_alloc(x, be_of(x, in[0]), in[0]->dtype, v->ndim, v->shape, false, &out[0]);
    if (s == LITHE_OK && v->numel) s = lithe__op_copy(be_of(x, in[0]), out[0], v);
    lithe_tensor_release(v);
    return s;
}
BWD(b_slice) {
    UNUSED_BWD;
    lithe_tensor *d = NULL;
    LITHE__TRY(lithe__gexec_grad(x, node, 0, &d));
    if (!d || !dout[0]->numel) return LITHE_OK;
    slice_geo g = {0};
    LITHE__TRY(slice_geometry(x, node, in, n_in, &g));
    lithe_tensor *full = NULL, *v = NULL;
    LITHE__TRY(lithe__gexec_like(x, d, true, &full));
    lithe_status s = slice_view(full, &g, &v);
    if (s == LITHE_OK) s = lithe__op_copy(x->be, v, dout[0]);
    if (s == LITHE_OK) s = acc(x, d, full);
    lithe_tensor_release(v);
    lithe_tensor_release(full);
    return s;
}

/* Pad, constant mode: Y = value everywhere, X copied into the interior view; pads (2 * rank) =
 * begins then ends, from input 1 (opset >= 11) or the attr. Negative pads (cropping) and the
 * reflect / edge modes are refused. */
static lithe_status pad_geometry(lithe__gexec *x, size_t node, lithe_tensor **in, size_t n_in, int64_t *begin,
                                 int64_t *shape, float *value) {
    const lithe__onnx_node *n = NODE(x, node);
    const lithe_tensor *X = in[0];
    const lithe__onnx_attr *mode = lithe__onnx_attr_get(n, "mode");
    if (mode && mode->s && strcmp(mode->s, "constant"))
        return fail(x, node, LITHE_ERR_UNSUPPORTED, "mode '%s' (lithe pads with a constant)", mode->s);
    size_t np = 0;
    const int64_t *pads = attr_ints(n, "pads", &np);
    *value = attr_f(n, "value", 0.0f);
    if (n_in > 1 && in[1]) {
        LITHE__TRY(need_ints(x, node, in[1], 1));
        pads = ints(in[1]);
        np = (size_t)in[1]->numel;
    }
    if (n_in > 2 && in[2]) {
        if (in[2]->dtype != LITHE_F32 || in[2]->numel != 1 || !in[2]->storage->backend->host_memory)
            return fail(x, node, LITHE_ERR_UNSUPPORTED, "constant_value must be one float on the host");
        *value = lithe__f32(in[2])[0];
    }
    if (n_in > 3 && in[3]) return fail(x, node, LITHE_ERR_UNSUPPORTED, "the axes input");
    if (!pads || np != 2 * (size_t)X->ndim) return fail(x, node, LITHE_ERR_VALUE, "%zu pads for rank %d", np, X->ndim);
    for (int d = 0; d < X->ndim; d++) {
        int64_t b = pads[d], e = pads[d + X->ndim];
        if (b < 0 || e < 0 || b > (1 << 20) || e > (1 << 20))
            return fail(x, node, LITHE_ERR_UNSUPPORTED, "pads %lld, %lld on axis %d (lithe pads by 0 .. 2^20)", (long long)b,
                        (long long)e, d);
        begin[d] = b;
        shape[d] = X->shape[d] + b + e;
    }
    return LITHE_OK;
}

static lithe_status pad_interior(lithe_tensor *Y, const lithe_tensor *X, const int64_t *begin, lithe_tensor **out) {
    int64_t st[LITHE_MAX_DIMS] = {0}, off = 0;
    contiguous_strides(Y->ndim, Y->shape, st);
    for (int d = 0; d < Y->ndim; d++) off += begin[d] * st[d];
    return view(Y, Y->ndim, X->shape, st, off, out);
}

FWD(f_pad) {
    UNUSED_FWD;
    LITHE__TRY(need_inputs(x, node, in, n_in, 1));
    LITHE__TRY(need_float(x, node, in[0], 0));
    int64_t begin[LITHE_MAX_DIMS] = {0}, shape[LITHE_MAX_DIMS] = {0};
    float value = 0.0f;
    LITHE__TRY(pad_geometry(x, node, in, n_in, begin, shape, &value));
    LITHE__TRY(new_f32(x, in[0]->ndim, shape, false, &out[0]));
    LITHE__TRY(lithe__op_fill(x->be, out[0], value));
    if (!in[0]->numel) return LITHE_OK;
    lithe_tensor *v = NULL;
    LITHE__TRY(pad_interior(out[0], in[0], begin, &v));
    lithe_status s = lithe__op_copy(x->be, v, in[0]);
    lithe_tensor_release(v);
    return s;
}
BWD(b_pad) {
    UNUSED_BWD;
    lithe_tensor *d = NULL, *v = NULL;
    LITHE__TRY(lithe__gexec_grad(x, node, 0, &d));
    if (!d || !d->numel) return LITHE_OK;
    int64_t begin[LITHE_MAX_DIMS] = {0}, shape[LITHE_MAX_DIMS] = {0};
    float value = 0.0f;
    LITHE__TRY(pad_geometry(x, node, in, n_in, begin, shape, &value));
    LITHE__TRY(pad_interior(dout[0], in[0], begin, &v));
    lithe_status s = acc_from_view(x, d, v);
    lithe_tensor_release(v);
    return s;
}

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

/* ---- LayerNormalization (last axis), BatchNormalization (inference) ---- */

static lithe_status ln_rows(lithe__gexec *x, size_t node, const lithe_tensor *X, int64_t *M, int64_t *N) {
    int64_t axis = 0; /* a fused LayerNorm (fuse.c) normalises the last axis */
    bool fused = x->g->node_fuse && x->g->node_fuse[node].kind == LITHE__FUSE_LAYERNORM;
    LITHE__TRY(norm_axis(x, node, fused ? -1 : attr_i(NODE(x, node), "axis", -1), X->ndim, false, &axis));
    if (axis != X->ndim - 1)
        return fail(x, node, LITHE_ERR_UNSUPPORTED, "normalising from axis %lld of a rank-%d input (lithe takes the last axis)",
                    (long long)axis, X->ndim);
    *N = X->shape[X->ndim - 1];
    *M = *N ? X->numel / *N : 0;
    return LITHE_OK;
}

FWD(f_layernorm) {
    (void)n_out;
    LITHE__TRY(need_inputs(x, node, in, n_in, 2));
    for (size_t k = 0; k < n_in && k < 3; k++)
        if (in[k]) LITHE__TRY(need_float(x, node, in[k], k));
    int64_t M = 0, N = 0;
    LITHE__TRY(ln_rows(x, node, in[0], &M, &N));
    if (in[1]->numel != N || (n_in > 2 && in[2] && in[2]->numel != N))
        return fail(x, node, LITHE_ERR_SHAPE, "scale and bias need %lld values", (long long)N);
    lithe_tensor *bias = n_in > 2 ? in[2] : NULL, *zero = NULL, *X2 = NULL, *Y2 = NULL;
    lithe_status s = LITHE_OK;
    if (!bias) s = new_f32(x, 1, (int64_t[]){N}, true, &zero);
    if (s == LITHE_OK) s = lithe__gexec_like(x, in[0], false, &out[0]);
    if (s == LITHE_OK) s = new_f32(x, 1, (int64_t[]){M}, false, &saved[0]);
    if (s == LITHE_OK) s = new_f32(x, 1, (int64_t[]){M}, false, &saved[1]);
    if (s == LITHE_OK) s = as_rows(in[0], M, N, &X2);
    if (s == LITHE_OK) s = as_rows(out[0], M, N, &Y2);
    bool fused = x->g->node_fuse && x->g->node_fuse[node].kind == LITHE__FUSE_LAYERNORM;
    float eps = fused ? x->g->node_fuse[node].eps : attr_f(NODE(x, node), "epsilon", 1e-5f);
    if (s == LITHE_OK) s = lithe__op_layernorm(x->be, X2, in[1], bias ? bias : zero, eps, Y2, saved[0], saved[1]);
    lithe_tensor_release(zero);
    lithe_tensor_release(X2);
    lithe_tensor_release(Y2);
    return s;
}
BWD(b_layernorm) {
    (void)out;
    lithe_tensor *dX = NULL, *dG = NULL, *db = NULL;
    LITHE__TRY(lithe__gexec_grad(x, node, 0, &dX));
    LITHE__TRY(lithe__gexec_grad(x, node, 1, &dG));
    if (n_in > 2 && in[2]) LITHE__TRY(lithe__gexec_grad(x, node, 2, &db));
    int64_t M = 0, N = 0;
    LITHE__TRY(ln_rows(x, node, in[0], &M, &N));
    lithe_tensor *t = NULL, *tg = NULL, *tb = NULL, *X2 = NULL, *dY2 = NULL;
    lithe_status s = new_f32(x, 2, (int64_t[]){M, N}, false, &t);
    if (s == LITHE_OK) s = new_f32(x, 1, (int64_t[]){N}, true, &tg);
    if (s == LITHE_OK) s = new_f32(x, 1, (int64_t[]){N}, true, &tb);
    if (s == LITHE_OK) s = as_rows(in[0], M, N, &X2);
    if (s == LITHE_OK) s = as_rows(dout[0], M, N, &dY2);
    if (s == LITHE_OK) s = lithe__op_layernorm_backward(x->be, dY2, X2, in[1], saved[0], saved[1], t, tg, tb);
    if (s == LITHE_OK) s = acc(x, dX, t);
    if (s == LITHE_OK) s = acc(x, dG, tg);
    if (s == LITHE_OK) s = acc(x, db, tb);
    lithe_tensor_release(t);
    lithe_tensor_release(tg);
    lithe_tensor_release(tb);
    lithe_tensor_release(X2);
    lithe_tensor_release(dY2);
    return s;
}

/* BatchNormalization at inference: Y = (X - mean) * scale / sqrt(var + eps) + B over channel axis 1.
 * saved[0] = inv_std (1, C, 1, ...), saved[1] = xhat. Gradients flow to X, scale and B (mean and
 * var are running statistics, as in torch's eval mode). */
FWD(f_batchnorm) {
    (void)n_out;
    LITHE__TRY(need_inputs(x, node, in, n_in, 5));
    for (size_t k = 0; k < 5; k++) LITHE__TRY(need_float(x, node, in[k], k));
    lithe_tensor *X = in[0];
    if (X->ndim < 2) return fail(x, node, LITHE_ERR_SHAPE, "input must have a channel axis");
    int64_t C = X->shape[1], cshape[LITHE_MAX_DIMS];
    for (size_t k = 1; k < 5; k++)
        if (in[k]->numel != C) return fail(x, node, LITHE_ERR_SHAPE, "input %zu has %lld values for %lld channels", k, (long long)in[k]->numel, (long long)C);
    for (int d = 0; d < X->ndim; d++) cshape[d] = d == 1 ? C : 1;
    lithe_tensor *sc = NULL, *b = NULL, *mu = NULL, *var = NULL, *eps = NULL, *t = NULL;
    lithe_status s = lithe_tensor_reshape(in[1], X->ndim, cshape, &sc);
    if (s == LITHE_OK) s = lithe_tensor_reshape(in[2], X->ndim, cshape, &b);
    if (s == LITHE_OK) s = lithe_tensor_reshape(in[3], X->ndim, cshape, &mu);
    if (s == LITHE_OK) s = lithe_tensor_reshape(in[4], X->ndim, cshape, &var);
    if (s == LITHE_OK) s = new_f32(x, 1, (int64_t[]){1}, false, &eps);
    if (s == LITHE_OK) s = lithe__op_fill(x->be, eps, attr_f(NODE(x, node), "epsilon", 1e-5f));
    if (s == LITHE_OK) s = new_f32(x, X->ndim, cshape, false, &saved[0]);
    if (s == LITHE_OK) s = lithe__op_bcast_binary(x->be, LITHE__BIN_ADD, var, eps, saved[0]);
    if (s == LITHE_OK) s = lithe__op_unary(x->be, LITHE__UN_SQRT, saved[0], saved[0]);
    if (s == LITHE_OK) s = lithe__op_unary(x->be, LITHE__UN_RECIPROCAL, saved[0], saved[0]);
    if (s == LITHE_OK) s = lithe__gexec_like(x, X, false, &saved[1]);
    if (s == LITHE_OK) s = lithe__op_bcast_binary(x->be, LITHE__BIN_SUB, X, mu, saved[1]);
    if (s == LITHE_OK) s = lithe__op_bcast_binary(x->be, LITHE__BIN_MUL, saved[1], saved[0], saved[1]);
    if (s == LITHE_OK) s = lithe__gexec_like(x, X, false, &t);
    if (s == LITHE_OK) s = lithe__op_bcast_binary(x->be, LITHE__BIN_MUL, saved[1], sc, t);
    if (s == LITHE_OK) s = lithe__gexec_like(x, X, false, &out[0]);
    if (s == LITHE_OK) s = lithe__op_bcast_binary(x->be, LITHE__BIN_ADD, t, b, out[0]);
    lithe_tensor_release(sc);
    lithe_tensor_release(b);
    lithe_tensor_release(mu);
    lithe_tensor_release(var);
    lithe_tensor_release(eps);
    lithe_tensor_release(t);
    return s;
}
BWD(b_batchnorm) {
    UNUSED_BWD;
    lithe_tensor *dX = NULL, *dS = NULL, *dB = NULL, *sc = NULL, *ds4 = NULL, *db4 = NULL, *t = NULL;
    LITHE__TRY(lithe__gexec_grad(x, node, 0, &dX));
    LITHE__TRY(lithe__gexec_grad(x, node, 1, &dS));
    LITHE__TRY(lithe__gexec_grad(x, node, 2, &dB));
    lithe_tensor *X = in[0], *inv = saved[0], *xhat = saved[1];
    lithe_status s = lithe_tensor_reshape(in[1], X->ndim, inv->shape, &sc);
    /* dB += sum dY; dscale += sum dY * xhat; dX += dY * scale * inv_std */
    if (s == LITHE_OK && dB) s = lithe_tensor_reshape(dB, X->ndim, inv->shape, &db4);
    if (s == LITHE_OK && db4) s = lithe__op_reduce_to(x->be, dout[0], 1.0f, 1.0f, db4);
    if (s == LITHE_OK && dS) s = lithe_tensor_reshape(dS, X->ndim, inv->shape, &ds4);
    if (s == LITHE_OK && ds4) s = lithe__op_bcast_binary_backward(x->be, LITHE__BIN_MUL, xhat, ds4, NULL, dout[0], NULL, ds4);
    if (s == LITHE_OK && dX) {
        lithe_tensor *k = NULL;
        s = lithe__gexec_like(x, inv, false, &k);
        if (s == LITHE_OK) s = lithe__op_bcast_binary(x->be, LITHE__BIN_MUL, sc, inv, k);
        if (s == LITHE_OK) s = lithe__op_bcast_binary_backward(x->be, LITHE__BIN_MUL, X, k, NULL, dout[0], dX, NULL);
        lithe_tensor_release(k);
    }
    lithe_tensor_release(sc);
    lithe_tensor_release(ds4);
    lithe_tensor_release(db4);
    lithe_tensor_release(t);
    return s;
}

/* ---- Conv, pooling ---- */

/* How a windowed node's pads are given (its auto_pad). */
typedef enum { PADS_GIVEN, PADS_SAME_UPPER, PADS_SAME_LOWER } pad_mode;

static lithe_status refuse(char *why, size_t cap, lithe_status st, const char *fmt, ...) LITHE__PRINTF(4, 5);
static lithe_status refuse(char *why, size_t cap, lithe_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, cap, fmt, ap);
    va_end(ap);
    return st;
}

/* A windowed node's (Conv, the pools) strides, dilations, pads and auto_pad, parsed and checked:
 * LITHE_OK, or what is wrong written to why. Needs no input shape, so the prepared Conv operator's
 * key (lithe__graph_prep_op, at prepare time) reads them through here too. */
static lithe_status window_params(const lithe__onnx_node *n, int64_t *stride, int64_t *pad, int64_t *dil,
                                  pad_mode *mode, char *why, size_t cap) {
    size_t k;
    const int64_t *v;
    stride[0] = stride[1] = dil[0] = dil[1] = 1;
    pad[0] = pad[1] = pad[2] = pad[3] = 0;
    if ((v = attr_ints(n, "strides", &k))) {
        if (k != 2) return refuse(why, cap, LITHE_ERR_UNSUPPORTED, "%zu strides (lithe runs 2-D windows)", k);
        stride[0] = v[0];
        stride[1] = v[1];
    }
    if ((v = attr_ints(n, "dilations", &k))) {
        if (k != 2) return refuse(why, cap, LITHE_ERR_UNSUPPORTED, "%zu dilations (lithe runs 2-D windows)", k);
        dil[0] = v[0];
        dil[1] = v[1];
    }
    if ((v = attr_ints(n, "pads", &k))) {
        if (k != 4) return refuse(why, cap, LITHE_ERR_UNSUPPORTED, "%zu pads (lithe runs 2-D windows)", k);
        for (int i = 0; i < 4; i++) pad[i] = v[i];
    }
    for (int i = 0; i < 2; i++)
        if (stride[i] < 1 || dil[i] < 1 || stride[i] > (1 << 20) || dil[i] > (1 << 20))
            return refuse(why, cap, LITHE_ERR_VALUE, "strides and dilations must be 1 .. 2^20");
    for (int i = 0; i < 4; i++)
        if (pad[i] < 0 || pad[i] > (1 << 20)) return refuse(why, cap, LITHE_ERR_VALUE, "pads must be 0 .. 2^20");
    const lithe__onnx_attr *ap = lithe__onnx_attr_get(n, "auto_pad");
    *mode = PADS_GIVEN;
    if (ap && ap->s && !strcmp(ap->s, "SAME_UPPER")) *mode = PADS_SAME_UPPER;
    else if (ap && ap->s && !strcmp(ap->s, "SAME_LOWER")) *mode = PADS_SAME_LOWER;
    else if (ap && ap->s && strcmp(ap->s, "NOTSET") && strcmp(ap->s, "VALID"))
        return refuse(why, cap, LITHE_ERR_UNSUPPORTED, "auto_pad '%s'", ap->s);
    return LITHE_OK;
}

static lithe_status window_attrs(lithe__gexec *x, size_t node, int64_t H, int64_t W, int64_t KH, int64_t KW,
                                 int64_t *stride, int64_t *pad, int64_t *dil, int64_t *OH, int64_t *OW, bool pool) {
    const lithe__onnx_node *n = NODE(x, node);
    pad_mode mode;
    lithe__gwin *wc = &x->g->node_win[node]; /* parsed in an earlier run (the attributes never change) */
    if (wc->ok) {
        memcpy(stride, wc->stride, sizeof wc->stride);
        memcpy(pad, wc->pad, sizeof wc->pad);
        memcpy(dil, wc->dil, sizeof wc->dil);
        mode = (pad_mode)wc->mode;
    } else {
        char why[128];
        lithe_status st = window_params(n, stride, pad, dil, &mode, why, sizeof why);
        if (st != LITHE_OK) return fail(x, node, st, "%s", why);
        memcpy(wc->stride, stride, sizeof wc->stride);
        memcpy(wc->pad, pad, sizeof wc->pad);
        memcpy(wc->dil, dil, sizeof wc->dil);
        wc->mode = (int)mode;
        wc->ok = true;
    }
    bool same = mode != PADS_GIVEN;
    bool ceil_mode = pool && attr_i(n, "ceil_mode", 0);
    int64_t in[2] = {H, W}, ks[2] = {KH, KW}, o[2];
    for (int i = 0; i < 2; i++) {
        int64_t span = dil[i] * (ks[i] - 1) + 1;
        if (same) {
            o[i] = (in[i] + stride[i] - 1) / stride[i];
            int64_t total = (o[i] - 1) * stride[i] + span - in[i];
            if (total < 0) total = 0;
            bool upper = mode == PADS_SAME_UPPER;
            pad[i] = upper ? total / 2 : total - total / 2;
            pad[i + 2] = total - pad[i];
            continue;
        }
        int64_t room = in[i] + pad[i] + pad[i + 2] - span;
        if (room < 0) return fail(x, node, LITHE_ERR_SHAPE, "the %lld-wide window does not fit the padded extent %lld", (long long)span, (long long)(in[i] + pad[i] + pad[i + 2]));
        o[i] = (ceil_mode ? (room + stride[i] - 1) / stride[i] : room / stride[i]) + 1;
        if (ceil_mode && (o[i] - 1) * stride[i] >= in[i] + pad[i]) o[i]--; /* the last window must start inside */
    }
    *OH = o[0];
    *OW = o[1];
    return LITHE_OK;
}

static lithe_status conv_geometry(lithe__gexec *x, size_t node, lithe_tensor **in, lithe__conv2d *g) {
    const lithe_tensor *X = in[0], *W = in[1];
    if (x->g->node_fuse[node].kind == LITHE__FUSE_CONV || x->g->node_fuse[node].kind == LITHE__FUSE_CONV_ADD)
        node = x->g->node_fuse[node].first; /* the Conv's attrs */
    if (X->ndim != 4 || W->ndim != 4)
        return fail(x, node, LITHE_ERR_UNSUPPORTED, "lithe runs 2-D convolutions: X and W must be 4-D, got %d-D and %d-D",
                    X->ndim, W->ndim);
    g->N = X->shape[0];
    g->C = X->shape[1];
    g->H = X->shape[2];
    g->W = X->shape[3];
    g->M = W->shape[0];
    g->KH = W->shape[2];
    g->KW = W->shape[3];
    lithe__gwin *wc = &x->g->node_win[node];
    if (!wc->group_ok) wc->group = attr_i(NODE(x, node), "group", 1), wc->group_ok = true;
    g->group = wc->group;
    if (g->group < 1 || g->C % g->group || g->M % g->group || W->shape[1] != g->C / g->group)
        return fail(x, node, LITHE_ERR_SHAPE, "group %lld does not fit %lld input channels, %lld filters of %lld channels",
                    (long long)g->group, (long long)g->C, (long long)g->M, (long long)W->shape[1]);
    return window_attrs(x, node, g->H, g->W, g->KH, g->KW, g->stride, g->pad, g->dil, &g->OH, &g->OW, false);
}

/* Y = act(conv) (a NULL: Conv alone). */
static lithe_status conv_forward(lithe__gexec *x, size_t node, lithe_tensor **in, size_t n_in, const lithe__act *a,
                                 lithe_tensor **out) {
    LITHE__TRY(need_inputs(x, node, in, n_in, 2));
    for (size_t k = 0; k < n_in && k < 3; k++)
        if (in[k]) LITHE__TRY(need_float(x, node, in[k], k));
    lithe__conv2d g = {0};
    LITHE__TRY(conv_geometry(x, node, in, &g));
    lithe_tensor *b = n_in > 2 ? in[2] : NULL;
    if (b && b->numel != g.M) return fail(x, node, LITHE_ERR_SHAPE, "bias has %lld values for %lld filters", (long long)b->numel, (long long)g.M);
    LITHE__TRY(new_f32(x, 4, (int64_t[]){g.N, g.M, g.OH, g.OW}, false, &out[0]));
    if (!x->is_train && (!a || lithe__act_clamp(a, NULL, NULL))) {
        /* a backend's own operator, prepared for W and b (LITHE_XNNPACK), the activation as its clamp */
        lithe__prep_op op = {.kind = LITHE__PREP_CONV2D, .out_min = -INFINITY, .out_max = INFINITY, .conv = g};
        if (a) lithe__act_clamp(a, &op.out_min, &op.out_max);
        bool done = false;
        LITHE__TRY(lithe__run_prepared_op(x->be, x->is_train, &op, in[1], b, in[0], out[0], &done));
        if (done) return LITHE_OK;
    }
    return lithe__conv2d_w(x->be, x->is_train, &g, in[0], in[1], b, a, out[0]); /* W prepared at inference */
}
FWD(f_conv) {
    UNUSED_FWD;
    return conv_forward(x, node, in, n_in, NULL, out);
}

bool lithe__graph_prep_op(const lithe__onnx_node *n, const lithe_tensor *W, const lithe_tensor *bias, lithe__prep_op *op) {
    memset(op, 0, sizeof *op);
    op->out_min = -INFINITY;
    op->out_max = INFINITY;
    if (!strcmp(n->op_type, "Gemm")) { /* Y = A · Bᵀ + C, C (N,) */
        op->kind = LITHE__PREP_FC;
        return W->ndim == 2 && !attr_i(n, "transA", 0) && attr_i(n, "transB", 0) && attr_f(n, "alpha", 1.0f) == 1.0f &&
               (!bias || (attr_f(n, "beta", 1.0f) == 1.0f && bias->ndim == 1 && bias->shape[0] == W->shape[0]));
    }
    if (strcmp(n->op_type, "Conv") || W->ndim != 4) return false;
    op->kind = LITHE__PREP_CONV2D;
    lithe__conv2d *g = &op->conv;
    /* the attributes as conv_geometry will read them when the node runs (window_params' checks):
     * a node it refuses gets no operator; pads that depend on the input's size (SAME) none either */
    pad_mode mode;
    char why[128];
    if (window_params(n, g->stride, g->pad, g->dil, &mode, why, sizeof why) != LITHE_OK || mode != PADS_GIVEN)
        return false;
    g->group = attr_i(n, "group", 1);
    g->M = W->shape[0];
    if (g->group < 1 || g->M < g->group || g->M % g->group) return false; /* group <= M: C below fits */
    g->C = W->shape[1] * g->group;
    g->KH = W->shape[2];
    g->KW = W->shape[3];
    return !bias || bias->numel == g->M;
}
BWD(b_conv) {
    UNUSED_BWD;
    lithe__conv2d g = {0};
    LITHE__TRY(conv_geometry(x, node, in, &g));
    lithe_tensor *dX = NULL, *dW = NULL, *db = NULL;
    LITHE__TRY(lithe__gexec_grad(x, node, 0, &dX));
    LITHE__TRY(lithe__gexec_grad(x, node, 1, &dW));
    if (n_in > 2 && in[2]) LITHE__TRY(lithe__gexec_grad(x, node, 2, &db));
    return lithe__op_conv2d_backward(x->be, &g, in[0], in[1], dout[0], dX, dW, db);
}

static lithe_status pool_geometry(lithe__gexec *x, size_t node, const lithe_tensor *X, lithe__pool2d *g) {
    const lithe__onnx_node *n = NODE(x, node);
    if (X->ndim != 4) return fail(x, node, LITHE_ERR_UNSUPPORTED, "lithe pools 4-D (N, C, H, W) inputs, got %d-D", X->ndim);
    memset(g, 0, sizeof *g);
    g->N = X->shape[0];
    g->C = X->shape[1];
    g->H = X->shape[2];
    g->W = X->shape[3];
    if (!strcmp(n->op_type, "GlobalAveragePool") || !strcmp(n->op_type, "GlobalMaxPool")) {
        g->KH = g->H;
        g->KW = g->W;
        g->OH = g->OW = 1;
        g->stride[0] = g->stride[1] = g->dil[0] = g->dil[1] = 1;
        g->max = !strcmp(n->op_type, "GlobalMaxPool");
        if (!g->H || !g->W) return fail(x, node, LITHE_ERR_SHAPE, "empty spatial extent");
        return LITHE_OK;
    }
    size_t k;
    const int64_t *ks = attr_ints(n, "kernel_shape", &k);
    if (!ks || k != 2) return fail(x, node, LITHE_ERR_UNSUPPORTED, "kernel_shape must have 2 entries");
    if (ks[0] < 1 || ks[1] < 1 || ks[0] > (1 << 20) || ks[1] > (1 << 20)) return fail(x, node, LITHE_ERR_VALUE, "kernel_shape");
    g->KH = ks[0];
    g->KW = ks[1];
    g->max = !strcmp(n->op_type, "MaxPool");
    g->count_include_pad = attr_i(n, "count_include_pad", 0) != 0;
    LITHE__TRY(window_attrs(x, node, g->H, g->W, g->KH, g->KW, g->stride, g->pad, g->dil, &g->OH, &g->OW, true));
    for (int i = 0; i < 2; i++)
        if (g->pad[i] >= (i ? g->KW : g->KH) * g->dil[i] && g->max)
            return fail(x, node, LITHE_ERR_VALUE, "padding %lld is not smaller than the window", (long long)g->pad[i]);
    return LITHE_OK;
}

FWD(f_pool) {
    UNUSED_FWD;
    LITHE__TRY(need_inputs(x, node, in, n_in, 1));
    LITHE__TRY(need_float(x, node, in[0], 0));
    lithe__pool2d g = {0};
    LITHE__TRY(pool_geometry(x, node, in[0], &g));
    int64_t shape[4] = {g.N, g.C, g.OH, g.OW};
    LITHE__TRY(new_f32(x, 4, shape, false, &out[0]));
    /* the argmax indices only when a backward may read them (inference skips writing them) */
    if (g.max && x->keep_all) LITHE__TRY(lithe__gexec_alloc(x, x->be, LITHE_I32, 4, shape, false, &saved[0]));
    if (n_out > 1) return fail(x, node, LITHE_ERR_UNSUPPORTED, "MaxPool's Indices output");
    return lithe__op_pool2d(x->be, &g, in[0], out[0], saved[0]);
}
BWD(b_pool) {
    UNUSED_BWD;
    lithe_tensor *d = NULL;
    LITHE__TRY(lithe__gexec_grad(x, node, 0, &d));
    if (!d) return LITHE_OK;
    lithe__pool2d g = {0};
    LITHE__TRY(pool_geometry(x, node, in[0], &g));
    return lithe__op_pool2d_backward(x->be, &g, dout[0], saved[0], d);
}

/* ConvTranspose: the adjoint of a Conv whose input has Y's shape and whose output has X's, so it
 * runs on the conv2d primitives: forward = conv2d_backward's dX, backward dX = conv2d, dW =
 * conv2d_backward's dW with the roles of input and output swapped. X (N, C, H, W), W (C, M / group,
 * KH, KW) -> Y (N, M, OH, OW), OH = stride (H - 1) + output_padding + dil (KH - 1) + 1 - pads. */
static lithe_status convt_geometry(lithe__gexec *x, size_t node, lithe_tensor **in, lithe__conv2d *g) {
    const lithe__onnx_node *n = NODE(x, node);
    const lithe_tensor *X = in[0], *W = in[1];
    if (X->ndim != 4 || W->ndim != 4)
        return fail(x, node, LITHE_ERR_UNSUPPORTED, "lithe runs 2-D transposed convolutions: X and W must be 4-D");
    int64_t group = attr_i(n, "group", 1);
    if (group < 1 || X->shape[1] != W->shape[0] || W->shape[0] % group)
        return fail(x, node, LITHE_ERR_SHAPE, "W (%lld, %lld, ...) does not fit %lld input channels in %lld groups",
                    (long long)W->shape[0], (long long)W->shape[1], (long long)X->shape[1], (long long)group);
    size_t k = 0;
    const int64_t *v;
    int64_t stride[2], dil[2], pad[4], opad[2] = {0, 0};
    pad_mode mode;
    char why[128];
    lithe_status st = window_params(n, stride, pad, dil, &mode, why, sizeof why); /* Conv's checks */
    if (st != LITHE_OK) return fail(x, node, st, "%s", why);
    if (mode != PADS_GIVEN || attr_ints(n, "output_shape", &k))
        return fail(x, node, LITHE_ERR_UNSUPPORTED, "output_shape / SAME auto_pad (give pads and output_padding)");
    if ((v = attr_ints(n, "output_padding", &k))) {
        if (k != 2) return fail(x, node, LITHE_ERR_UNSUPPORTED, "%zu output_padding (lithe runs 2-D windows)", k);
        opad[0] = v[0], opad[1] = v[1];
    }
    for (int i = 0; i < 2; i++)
        if (opad[i] < 0 || opad[i] >= stride[i])
            return fail(x, node, LITHE_ERR_VALUE, "output_padding must be 0 .. stride - 1");
    memset(g, 0, sizeof *g);
    g->N = X->shape[0];
    g->M = X->shape[1]; /* the adjoint conv's filters: X's channels */
    g->C = W->shape[1] * group;
    g->KH = W->shape[2];
    g->KW = W->shape[3];
    g->group = group;
    g->OH = X->shape[2];
    g->OW = X->shape[3];
    g->H = stride[0] * (g->OH - 1) + opad[0] + dil[0] * (g->KH - 1) + 1 - pad[0] - pad[2];
    g->W = stride[1] * (g->OW - 1) + opad[1] + dil[1] * (g->KW - 1) + 1 - pad[1] - pad[3];
    if (g->H < 1 || g->W < 1 || g->OH < 1 || g->OW < 1) return fail(x, node, LITHE_ERR_SHAPE, "the output would be empty");
    memcpy(g->stride, stride, sizeof stride);
    memcpy(g->dil, dil, sizeof dil);
    memcpy(g->pad, pad, sizeof pad);
    return LITHE_OK;
}

FWD(f_convt) {
    UNUSED_FWD;
    LITHE__TRY(need_inputs(x, node, in, n_in, 2));
    for (size_t k = 0; k < n_in && k < 3; k++)
        if (in[k]) LITHE__TRY(need_float(x, node, in[k], k));
    lithe__conv2d g = {0};
    LITHE__TRY(convt_geometry(x, node, in, &g));
    lithe_tensor *b = n_in > 2 ? in[2] : NULL;
    if (b && b->numel != g.C) return fail(x, node, LITHE_ERR_SHAPE, "bias has %lld values for %lld outputs", (long long)b->numel, (long long)g.C);
    LITHE__TRY(new_f32(x, 4, (int64_t[]){g.N, g.C, g.H, g.W}, true, &out[0]));
    if (b) {
        lithe_tensor *b4 = NULL;
        LITHE__TRY(lithe_tensor_reshape(b, 4, (int64_t[]){1, g.C, 1, 1}, &b4));
        lithe_status s = lithe__op_broadcast_to(x->be, b4, 1.0f, 0.0f, out[0]);
        lithe_tensor_release(b4);
        LITHE__TRY(s);
    }
    return lithe__op_conv2d_backward(x->be, &g, out[0], in[1], in[0], out[0], NULL, NULL);
}
BWD(b_convt) {
    UNUSED_BWD;
    lithe__conv2d g = {0};
    LITHE__TRY(convt_geometry(x, node, in, &g));
    lithe_tensor *dX = NULL, *dW = NULL, *db = NULL;
    LITHE__TRY(lithe__gexec_grad(x, node, 0, &dX));
    LITHE__TRY(lithe__gexec_grad(x, node, 1, &dW));
    if (n_in > 2 && in[2]) LITHE__TRY(lithe__gexec_grad(x, node, 2, &db));
    if (dX) { /* dX += conv2d(dY, W) */
        lithe_tensor *t = NULL;
        LITHE__TRY(lithe__gexec_like(x, dX, false, &t));
        lithe_status s = lithe__op_conv2d(x->be, &g, dout[0], in[1], NULL, NULL, t);
        if (s == LITHE_OK) s = acc(x, dX, t);
        lithe_tensor_release(t);
        LITHE__TRY(s);
    }
    if (dW) LITHE__TRY(lithe__op_conv2d_backward(x->be, &g, dout[0], in[1], in[0], NULL, dW, NULL));
    if (db) {
        lithe_tensor *d4 = NULL;
        LITHE__TRY(lithe_tensor_reshape(db, 4, (int64_t[]){1, g.C, 1, 1}, &d4));
        lithe_status s = lithe__op_reduce_to(x->be, dout[0], 1.0f, 1.0f, d4);
        lithe_tensor_release(d4);
        LITHE__TRY(s);
    }
    return LITHE_OK;
}

/* LeakyRelu: Y = relu(X) - alpha relu(-X); saved[0] = relu(X), saved[1] = relu(-X). */
FWD(f_leaky) {
    UNUSED_FWD;
    LITHE__TRY(need_inputs(x, node, in, n_in, 1));
    LITHE__TRY(need_float(x, node, in[0], 0));
    lithe__act a = {0};
    a.kind = LITHE__ACT_RELU;
    float alpha = attr_f(NODE(x, node), "alpha", 0.01f);
    LITHE__TRY(lithe__gexec_like(x, in[0], false, &saved[0]));
    LITHE__TRY(lithe__gexec_like(x, in[0], false, &saved[1]));
    LITHE__TRY(lithe__op_act(x->be, &a, in[0], saved[0]));
    LITHE__TRY(lithe__op_unary(x->be, LITHE__UN_NEG, in[0], saved[1]));
    LITHE__TRY(lithe__op_act(x->be, &a, saved[1], saved[1]));
    LITHE__TRY(lithe__gexec_like(x, in[0], false, &out[0]));
    LITHE__TRY(lithe__op_copy(x->be, out[0], saved[0]));
    return lithe__op_axpby(x->be, -alpha, saved[1], 1.0f, out[0]);
}
BWD(b_leaky) {
    (void)n_in;
    (void)out;
    lithe_tensor *d = NULL, *t = NULL;
    LITHE__TRY(lithe__gexec_grad(x, node, 0, &d));
    if (!d) return LITHE_OK;
    lithe__act a = {0};
    a.kind = LITHE__ACT_RELU;
    float alpha = attr_f(NODE(x, node), "alpha", 0.01f);
    LITHE__TRY(lithe__gexec_like(x, d, false, &t));
    lithe_status s = lithe__op_act_backward(x->be, &a, dout[0], in[0], saved[0], t); /* dY (X > 0) */
    if (s == LITHE_OK) s = acc(x, d, t);
    if (s == LITHE_OK) s = lithe__op_act_backward(x->be, &a, dout[0], in[0], saved[1], t); /* dY (X < 0) */
    if (s == LITHE_OK) s = lithe__op_axpby(x->be, alpha, t, 1.0f, d);
    lithe_tensor_release(t);
    return s;
}

/* ---- Constant, Shape, Gather, Cast, ConstantOfShape ---- */

FWD(f_constant) {
    (void)in;
    (void)n_in;
    UNUSED_FWD;
    const lithe__onnx_node *n = NODE(x, node);
    const lithe__onnx_attr *a;
    if ((a = lithe__onnx_attr_get(n, "value")) && a->t) {
        if (a->t->ext_location) return fail(x, node, LITHE_ERR_UNSUPPORTED, "external data in a Constant");
        LITHE__TRY(lithe__gexec_alloc(x, lithe__backend_host(), a->t->is_float ? LITHE_F32 : LITHE_I64, a->t->ndim, a->t->dims,
                                       false, &out[0]));
        if (a->t->numel) memcpy(lithe__tdata(out[0]), a->t->data, (size_t)a->t->numel * (a->t->is_float ? 4 : 8));
    } else if ((a = lithe__onnx_attr_get(n, "value_float"))) {
        LITHE__TRY(lithe__gexec_alloc(x, lithe__backend_host(), LITHE_F32, 0, NULL, false, &out[0]));
        lithe__f32(out[0])[0] = a->f;
    } else if ((a = lithe__onnx_attr_get(n, "value_int"))) {
        LITHE__TRY(new_i64(x, 0, NULL, &out[0]));
        ((int64_t *)lithe__tdata(out[0]))[0] = a->i;
    } else if ((a = lithe__onnx_attr_get(n, "value_ints"))) {
        LITHE__TRY(new_i64(x, 1, (int64_t[]){(int64_t)a->n_ints}, &out[0]));
        if (a->n_ints) memcpy(lithe__tdata(out[0]), a->ints, a->n_ints * 8);
    } else if ((a = lithe__onnx_attr_get(n, "value_floats"))) {
        LITHE__TRY(lithe__gexec_alloc(x, lithe__backend_host(), LITHE_F32, 1, (int64_t[]){(int64_t)a->n_floats}, false, &out[0]));
        if (a->n_floats) memcpy(lithe__tdata(out[0]), a->floats, a->n_floats * 4);
    } else {
        return fail(x, node, LITHE_ERR_UNSUPPORTED, "a Constant without a tensor, float(s) or int(s) value");
    }
    if (out[0]->dtype == LITHE_F32 && x->be != lithe__backend_host()) {
        lithe_tensor *t = NULL;
        LITHE__TRY(lithe_tensor_to_backend(out[0], x->be, &t));
        lithe_tensor_release(out[0]);
        out[0] = t;
    }
    return LITHE_OK;
}

FWD(f_shape) {
    UNUSED_FWD;
    LITHE__TRY(need_inputs(x, node, in, n_in, 1));
    const lithe__onnx_node *n = NODE(x, node);
    int r = in[0]->ndim;
    int64_t st = attr_i(n, "start", 0), en = attr_i(n, "end", r);
    if (st < 0) st += r;
    if (en < 0) en += r;
    st = st < 0 ? 0 : st > r ? r : st;
    en = en < 0 ? 0 : en > r ? r : en;
    int64_t len = en > st ? en - st : 0;
    LITHE__TRY(new_i64(x, 1, &len, &out[0]));
    for (int64_t k = 0; k < len; k++) ((int64_t *)lithe__tdata(out[0]))[k] = in[0]->shape[st + k];
    return LITHE_OK;
}

/* Gather: integer data on the host (shape arithmetic), or float rows (axis 0, an embedding). */
FWD(f_gather) {
    UNUSED_FWD;
    LITHE__TRY(need_inputs(x, node, in, n_in, 2));
    LITHE__TRY(need_ints(x, node, in[1], 1));
    lithe_tensor *D = in[0], *I = in[1];
    int64_t axis = 0;
    if (D->ndim < 1) return fail(x, node, LITHE_ERR_SHAPE, "data must have rank >= 1");
    LITHE__TRY(norm_axis(x, node, attr_i(NODE(x, node), "axis", 0), D->ndim, false, &axis));
    int nd = D->ndim - 1 + I->ndim;
    if (nd > LITHE_MAX_DIMS) return fail(x, node, LITHE_ERR_UNSUPPORTED, "output rank %d", nd);
    int64_t shape[LITHE_MAX_DIMS], outer = 1, inner = 1, ax = D->shape[axis];
    int k = 0;
    for (int d = 0; d < axis; d++) outer *= (shape[k++] = D->shape[d]);
    for (int d = 0; d < I->ndim; d++) shape[k++] = I->shape[d];
    for (int d = (int)axis + 1; d < D->ndim; d++) inner *= (shape[k++] = D->shape[d]);
    for (int64_t i = 0; i < I->numel; i++) {
        int64_t v = ints(I)[i];
        if (v < -ax || v >= ax) return fail(x, node, LITHE_ERR_VALUE, "index %lld outside an axis of %lld", (long long)v, (long long)ax);
    }
    if (is_int(D)) {
        LITHE__TRY(new_i64(x, nd, shape, &out[0]));
        int64_t *y = (int64_t *)lithe__tdata(out[0]);
        for (int64_t o = 0; o < outer; o++)
            for (int64_t i = 0; i < I->numel; i++) {
                int64_t v = ints(I)[i];
                if (v < 0) v += ax;
                memcpy(y + (o * I->numel + i) * inner, ints(D) + (o * ax + v) * inner, (size_t)inner * 8);
            }
        return LITHE_OK;
    }
    LITHE__TRY(need_float(x, node, D, 0));
    if (axis != 0) return fail(x, node, LITHE_ERR_UNSUPPORTED, "float Gather along axis %lld (lithe gathers rows, axis 0)", (long long)axis);
    for (int64_t i = 0; i < I->numel; i++)
        if (ints(I)[i] < 0) return fail(x, node, LITHE_ERR_UNSUPPORTED, "negative row index %lld in a float Gather", (long long)ints(I)[i]);
    lithe_tensor *table = NULL, *y2 = NULL;
    LITHE__TRY(new_f32(x, nd, shape, false, &out[0]));
    lithe_status s = lithe_tensor_reshape(D, 2, (int64_t[]){ax, inner}, &table);
    if (s == LITHE_OK) s = lithe_tensor_reshape(out[0], 2, (int64_t[]){I->numel, inner}, &y2);
    if (s == LITHE_OK && I->numel) s = lithe__op_gather_rows(x->be, table, I, y2);
    lithe_tensor_release(table);
    lithe_tensor_release(y2);
    return s;
}
BWD(b_gather) {
    UNUSED_BWD;
    lithe_tensor *d = NULL, *t2 = NULL, *g2 = NULL;
    LITHE__TRY(lithe__gexec_grad(x, node, 0, &d));
    if (!d || !in[1]->numel) return LITHE_OK;
    int64_t ax = in[0]->shape[0], inner = ax ? in[0]->numel / ax : 0;
    lithe_status s = lithe_tensor_reshape(d, 2, (int64_t[]){ax, inner}, &t2);
    if (s == LITHE_OK) s = lithe_tensor_reshape(dout[0], 2, (int64_t[]){in[1]->numel, inner}, &g2);
    if (s == LITHE_OK) s = lithe__op_scatter_add_rows(x->be, t2, in[1], g2);
    lithe_tensor_release(t2);
    lithe_tensor_release(g2);
    return s;
}

FWD(f_cast) {
    UNUSED_FWD;
    LITHE__TRY(need_inputs(x, node, in, n_in, 1));
    int64_t to = attr_i(NODE(x, node), "to", LITHE__ONNX_FLOAT);
    bool to_float = to == LITHE__ONNX_FLOAT || to == LITHE__ONNX_DOUBLE || to == LITHE__ONNX_FLOAT16 || to == LITHE__ONNX_BFLOAT16;
    lithe_tensor *X = in[0];
    if (to_float == (X->dtype == LITHE_F32)) {
        out[0] = lithe_tensor_retain(X); /* float stays float32 in lithe; ints stay int64 */
        if (!to_float && to == LITHE__ONNX_BOOL) { /* normalise to 0 / 1 */
            lithe_tensor_release(out[0]);
            LITHE__TRY(new_i64(x, X->ndim, X->shape, &out[0]));
            for (int64_t i = 0; i < X->numel; i++) ((int64_t *)lithe__tdata(out[0]))[i] = ints(X)[i] != 0;
        }
        return LITHE_OK;
    }
    if (to_float) { /* host ints -> float on the backend: no gradient flows back */
        lithe_tensor *h = NULL;
        LITHE__TRY(lithe__gexec_alloc(x, lithe__backend_host(), LITHE_F32, X->ndim, X->shape, false, &h));
        for (int64_t i = 0; i < X->numel; i++) lithe__f32(h)[i] = (float)ints(X)[i];
        lithe_status s = lithe_tensor_to_backend(h, x->be, &out[0]);
        lithe_tensor_release(h);
        return s;
    }
    lithe_tensor *h = NULL; /* float -> ints, on the host (truncating, as C and ONNX do) */
    LITHE__TRY(lithe_tensor_to_backend(X, NULL, &h));
    lithe_status s = new_i64(x, X->ndim, X->shape, &out[0]);
    for (int64_t i = 0; s == LITHE_OK && i < X->numel; i++) {
        float v = lithe__f32(h)[i];
        int64_t *y = (int64_t *)lithe__tdata(out[0]);
        y[i] = to == LITHE__ONNX_BOOL ? v != 0.0f : v != v ? 0 : v >= 9.2e18f ? INT64_MAX : v <= -9.2e18f ? INT64_MIN : (int64_t)v;
    }
    lithe_tensor_release(h);
    return s;
}
BWD(b_cast) {
    UNUSED_BWD;
    if (in[0]->dtype != LITHE_F32 || dout[0] == NULL) return LITHE_OK;
    lithe_tensor *d = NULL;
    LITHE__TRY(lithe__gexec_grad(x, node, 0, &d));
    return d && out[0]->dtype == LITHE_F32 ? acc(x, d, dout[0]) : LITHE_OK;
}

FWD(f_constant_of_shape) {
    UNUSED_FWD;
    LITHE__TRY(need_inputs(x, node, in, n_in, 1));
    LITHE__TRY(need_ints(x, node, in[0], 0));
    if (in[0]->numel > LITHE_MAX_DIMS) return fail(x, node, LITHE_ERR_UNSUPPORTED, "rank %lld", (long long)in[0]->numel);
    int64_t shape[LITHE_MAX_DIMS], n = 1;
    for (int64_t d = 0; d < in[0]->numel; d++) {
        shape[d] = ints(in[0])[d];
        if (shape[d] < 0 || (shape[d] && n > ((int64_t)1 << 40) / shape[d])) return fail(x, node, LITHE_ERR_VALUE, "shape");
        n *= shape[d];
    }
    const lithe__onnx_attr *a = lithe__onnx_attr_get(NODE(x, node), "value");
    bool fl = !a || !a->t || a->t->is_float;
    if (a && a->t && a->t->numel != 1) return fail(x, node, LITHE_ERR_VALUE, "value must hold one element");
    if (!fl) {
        LITHE__TRY(new_i64(x, (int)in[0]->numel, shape, &out[0]));
        for (int64_t i = 0; i < n; i++) ((int64_t *)lithe__tdata(out[0]))[i] = ((const int64_t *)a->t->data)[0];
        return LITHE_OK;
    }
    LITHE__TRY(new_f32(x, (int)in[0]->numel, shape, false, &out[0]));
    return lithe__op_fill(x->be, out[0], a && a->t ? ((const float *)a->t->data)[0] : 0.0f);
}

/* ---- fused nodes (fuse.c) ---- */

/* LayerNorm from its decomposition: f_layernorm / b_layernorm with the fused node's eps. */
const lithe__graph_op lithe__fused_layernorm_op = {"fused:LayerNorm", f_layernorm, b_layernorm};

/* Linear: Y (..., N) = act(A (..., K) · op(W) + bias) by gemm_bias_act over A's stacked rows.
 * saved[0] = the pre-activation Z when a backward may follow and there is an activation. */
typedef struct lin_geo {
    int64_t R, K, N;
} lin_geo;

static lithe_status lin_geometry(lithe__gexec *x, size_t node, lithe_tensor **in, size_t n_in, lin_geo *g) {
    const lithe__gfuse *f = &x->g->node_fuse[node];
    LITHE__TRY(need_inputs(x, node, in, n_in, 2));
    for (size_t k = 0; k < n_in && k < 3; k++)
        if (in[k]) LITHE__TRY(need_float(x, node, in[k], k));
    const lithe_tensor *A = in[0], *W = in[1], *b = n_in > 2 ? in[2] : NULL;
    char sa[LITHE__SHAPE_BUF], sw[LITHE__SHAPE_BUF];
    if (W->ndim != 2) return fail(x, node, LITHE_ERR_SHAPE, "W must be 2-D, got %s", lithe__shape_str(W, sw, sizeof sw));
    g->K = f->transB ? W->shape[1] : W->shape[0];
    g->N = f->transB ? W->shape[0] : W->shape[1];
    if (A->ndim < 2 || A->shape[A->ndim - 1] != g->K)
        return fail(x, node, LITHE_ERR_SHAPE, "A %s does not match W %s (inner extent %lld)", lithe__shape_str(A, sa, sizeof sa),
                    lithe__shape_str(W, sw, sizeof sw), (long long)g->K);
    if (!strcmp(NODE(x, f->first)->op_type, "Gemm") && A->ndim != 2)
        return fail(x, node, LITHE_ERR_SHAPE, "A and B must be 2-D, got %d-D and 2-D", A->ndim);
    if (b && b->numel != g->N) return fail(x, node, LITHE_ERR_SHAPE, "the bias needs %lld values, has %lld", (long long)g->N, (long long)b->numel);
    g->R = g->K ? A->numel / g->K : 0;
    return LITHE_OK;
}

FWD(f_fused_linear) {
    (void)n_out;
    const lithe__gfuse *f = &x->g->node_fuse[node];
    lin_geo g = {0};
    LITHE__TRY(lin_geometry(x, node, in, n_in, &g));
    int64_t shape[LITHE_MAX_DIMS];
    for (int d = 0; d < in[0]->ndim; d++) shape[d] = in[0]->shape[d];
    shape[in[0]->ndim - 1] = g.N;
    LITHE__TRY(new_f32(x, in[0]->ndim, shape, false, &out[0]));
    lithe_tensor *A2 = NULL, *Y2 = NULL;
    lithe_status s = as_rows(in[0], g.R, g.K, &A2);
    if (s == LITHE_OK) s = as_rows(out[0], g.R, g.N, &Y2);
    if (s == LITHE_OK && f->has_act && x->keep_all) s = new_f32(x, 2, (int64_t[]){g.R, g.N}, false, &saved[0]);
    const lithe__act *act = f->has_act ? &f->act : NULL;
    lithe__prep_op op;
    bool done = false;
    if (s == LITHE_OK && !x->is_train && f->transB && !saved[0] && lithe__affine_prep_op(act, &op))
        /* a backend's own operator, prepared for W and the bias (LITHE_XNNPACK) */
        s = lithe__run_prepared_op(x->be, x->is_train, &op, in[1], n_in > 2 ? in[2] : NULL, A2, Y2, &done);
    if (s == LITHE_OK && !done) /* W's prepared form at inference (lithe_model_prepare_inference) */
        s = lithe__gemm_bias_act_w(x->be, x->is_train, false, f->transB, A2, in[1], n_in > 2 ? in[2] : NULL, act, saved[0],
                                   Y2);
    lithe_tensor_release(A2);
    lithe_tensor_release(Y2);
    return s;
}
BWD(b_fused_linear) {
    const lithe__gfuse *f = &x->g->node_fuse[node];
    lin_geo g = {0};
    LITHE__TRY(lin_geometry(x, node, in, n_in, &g));
    lithe_tensor *dA = NULL, *dW = NULL, *db = NULL;
    LITHE__TRY(lithe__gexec_grad(x, node, 0, &dA));
    LITHE__TRY(lithe__gexec_grad(x, node, 1, &dW));
    if (n_in > 2 && in[2]) LITHE__TRY(lithe__gexec_grad(x, node, 2, &db));
    lithe_tensor *A2 = NULL, *dZ = NULL, *Y2 = NULL, *dA2 = NULL;
    lithe_status s = as_rows(in[0], g.R, g.K, &A2);
    if (s == LITHE_OK && f->has_act) { /* dZ = dY act'(Z) */
        if (!saved[0]) s = fail(x, node, LITHE_ERR_STATE, "the forward kept no pre-activation");
        if (s == LITHE_OK) s = new_f32(x, 2, (int64_t[]){g.R, g.N}, false, &dZ);
        if (s == LITHE_OK) s = as_rows(out[0], g.R, g.N, &Y2);
        lithe_tensor *dY2 = NULL;
        if (s == LITHE_OK) s = as_rows(dout[0], g.R, g.N, &dY2);
        if (s == LITHE_OK) s = lithe__op_act_backward(x->be, &f->act, dY2, saved[0], Y2, dZ);
        lithe_tensor_release(dY2);
    } else if (s == LITHE_OK) {
        s = as_rows(dout[0], g.R, g.N, &dZ);
    }
    /* !transB: W (K, N): dA += dZ Wᵀ, dW += Aᵀ dZ;  transB: W (N, K): dA += dZ W, dW += dZᵀ A */
    if (s == LITHE_OK && dA) s = as_rows(dA, g.R, g.K, &dA2);
    if (s == LITHE_OK && dA) s = lithe__op_gemm(x->be, false, !f->transB, 1.0f, dZ, in[1], 1.0f, dA2);
    if (s == LITHE_OK && dW && !f->transB) s = lithe__op_gemm(x->be, true, false, 1.0f, A2, dZ, 1.0f, dW);
    if (s == LITHE_OK && dW && f->transB) s = lithe__op_gemm(x->be, true, false, 1.0f, dZ, A2, 1.0f, dW);
    if (s == LITHE_OK && db) s = lithe__op_sum_rows(x->be, dZ, 1.0f, db);
    lithe_tensor_release(A2);
    lithe_tensor_release(dZ);
    lithe_tensor_release(Y2);
    lithe_tensor_release(dA2);
    return s;
}
const lithe__graph_op lithe__fused_linear_op = {"fused:Linear", f_fused_linear, b_fused_linear};

/* An activation from its decomposition (GELU's Erf form): the act primitive with the fused node's
 * act. */
FWD(f_fused_act) {
    UNUSED_FWD;
    LITHE__TRY(need_inputs(x, node, in, n_in, 1));
    LITHE__TRY(need_float(x, node, in[0], 0));
    LITHE__TRY(lithe__gexec_like(x, in[0], false, &out[0]));
    return lithe__op_act(x->be, &x->g->node_fuse[node].act, in[0], out[0]);
}
BWD(b_fused_act) {
    UNUSED_BWD;
    lithe_tensor *d = NULL, *t = NULL;
    LITHE__TRY(lithe__gexec_grad(x, node, 0, &d));
    if (!d) return LITHE_OK;
    LITHE__TRY(lithe__gexec_like(x, d, false, &t));
    lithe_status s = lithe__op_act_backward(x->be, &x->g->node_fuse[node].act, dout[0], in[0], out[0], t);
    if (s == LITHE_OK) s = acc(x, d, t);
    lithe_tensor_release(t);
    return s;
}
const lithe__graph_op lithe__fused_act_op = {"fused:Gelu", f_fused_act, b_fused_act};

/* Conv + Relu / Clip (fuse.c): conv2d with the activation applied as each output is written. A
 * forward that a backward may follow (keep_all) keeps the pre-activation Z in saved[0]: Z = conv,
 * then Y = act(Z) (the same bits); the backward is dZ = dY act'(Z, Y), then Conv's. Inputs and
 * attributes are the Conv node's (f->first). */
FWD(f_fused_conv) {
    (void)n_out;
    const lithe__act *a = &x->g->node_fuse[node].act;
    if (!x->keep_all) return conv_forward(x, node, in, n_in, a, out);
    LITHE__TRY(conv_forward(x, node, in, n_in, NULL, saved));
    LITHE__TRY(lithe__gexec_like(x, saved[0], false, &out[0]));
    return lithe__op_act(x->be, a, saved[0], out[0]);
}
BWD(b_fused_conv) {
    (void)n_in;
    if (!saved[0]) return fail(x, node, LITHE_ERR_STATE, "the forward kept no pre-activation");
    lithe_tensor *dZ = NULL;
    LITHE__TRY(lithe__gexec_like(x, saved[0], false, &dZ));
    lithe_status s = lithe__op_act_backward(x->be, &x->g->node_fuse[node].act, dout[0], saved[0], out[0], dZ);
    if (s == LITHE_OK) s = b_conv(x, node, in, n_in, out, &dZ, saved);
    lithe_tensor_release(dZ);
    return s;
}
const lithe__graph_op lithe__fused_conv_op = {"fused:Conv", f_fused_conv, b_fused_conv};

/* Conv + residual Add (fuse.c): inputs X, W, b (NULL: none), R. At inference, when the backend has
 * conv2d_add and R is contiguous and shaped as the Conv's output, one call adds R as each output is
 * stored; otherwise (training keeps the Conv's output Z in saved[0]; a broadcast residual; Vulkan,
 * CUDA; a Conv with a backend operator prepared for it, LITHE_XNNPACK, which runs it) Z = Conv, then
 * the Add's bcast_binary in the file's operand order. The same bits either way;
 * the backward is the Add's (dZ, dR from dY), then Conv's on dZ. */
FWD(f_fused_conv_add) {
    (void)n_out;
    const lithe__gfuse *f = &x->g->node_fuse[node];
    LITHE__TRY(need_inputs(x, node, in, n_in, 2));
    if (n_in < 4 || !in[3]) return fail(x, node, LITHE_ERR_VALUE, "the residual input is missing");
    LITHE__TRY(need_float(x, node, in[3], 3));
    lithe_tensor *R = in[3];
    if (!x->keep_all && x->be->ops->conv2d_add && R->storage->backend == x->be &&
        lithe_tensor_is_contiguous(R) &&
        R->ndim == 4 && in[0]->ndim == 4 && in[1]->ndim == 4) {
        for (size_t k = 0; k < 3; k++)
            if (in[k]) LITHE__TRY(need_float(x, node, in[k], k));
        lithe__conv2d g = {0};
        LITHE__TRY(conv_geometry(x, node, in, &g));
        const int64_t shape[4] = {g.N, g.M, g.OH, g.OW};
        lithe__prep_op op = {.kind = LITHE__PREP_CONV2D, .out_min = -INFINITY, .out_max = INFINITY, .conv = g};
        /* a backend's own operator prepared for this Conv (LITHE_XNNPACK) runs it: Conv, then Add */
        if (!memcmp(R->shape, shape, sizeof shape) && !lithe__has_prepared_op(x->be, &op, in[1], in[2])) {
            lithe_tensor *b = in[2];
            if (b && b->numel != g.M)
                return fail(x, node, LITHE_ERR_SHAPE, "bias has %lld values for %lld filters", (long long)b->numel, (long long)g.M);
            LITHE__TRY(new_f32(x, 4, shape, false, &out[0]));
            return lithe__conv2d_add_w(x->be, x->is_train, &g, in[0], in[1], b, R, f->res_first, out[0]);
        }
    }
    lithe_tensor *Z = NULL;
    LITHE__TRY(conv_forward(x, node, in, 3, NULL, &Z));
    int nd = 0;
    int64_t shape[LITHE_MAX_DIMS];
    const lithe_tensor *A = f->res_first ? R : Z, *B = f->res_first ? Z : R;
    lithe_status s = bcast_shape(x, node, A, B, &nd, shape);
    if (s == LITHE_OK) s = new_f32(x, nd, shape, false, &out[0]);
    if (s == LITHE_OK) s = lithe__op_bcast_binary(x->be, LITHE__BIN_ADD, A, B, out[0]);
    if (s == LITHE_OK && x->keep_all) saved[0] = Z;
    else lithe_tensor_release(Z);
    return s;
}
BWD(b_fused_conv_add) {
    if (!saved[0]) return fail(x, node, LITHE_ERR_STATE, "the forward kept no convolution output");
    const lithe__gfuse *f = &x->g->node_fuse[node];
    lithe_tensor *dZ = NULL, *dR = NULL;
    LITHE__TRY(lithe__gexec_grad(x, node, 3, &dR));
    LITHE__TRY(lithe__gexec_like(x, saved[0], true, &dZ));
    const lithe_tensor *A = f->res_first ? in[3] : saved[0], *B = f->res_first ? saved[0] : in[3];
    lithe_status s = lithe__op_bcast_binary_backward(x->be, LITHE__BIN_ADD, A, B, out[0], dout[0],
                                                     f->res_first ? dR : dZ, f->res_first ? dZ : dR);
    if (s == LITHE_OK) s = b_conv(x, node, in, 3, out, &dZ, saved);
    lithe_tensor_release(dZ);
    return s;
}
const lithe__graph_op lithe__fused_conv_add_op = {"fused:ConvAdd", f_fused_conv_add, b_fused_conv_add};
/* ---- the table ---- */

static const lithe__graph_op ops[] = {
    {"Identity", f_identity, b_identity},
    {"Dropout", f_identity, b_identity},
    {"Reshape", f_reshape, b_reshape},
    {"Flatten", f_reshape, b_reshape},
    {"Squeeze", f_reshape, b_reshape},
    {"Unsqueeze", f_reshape, b_reshape},
    {"Transpose", f_transpose, b_transpose},
    {"Gemm", f_gemm, b_gemm},
    {"MatMul", f_matmul, b_matmul},
    {"Add", f_binary, b_binary},
    {"Sub", f_binary, b_binary},
    {"Mul", f_binary, b_binary},
    {"Div", f_binary, b_binary},
    {"Pow", f_binary, b_binary},
    {"Less", f_binary, NULL},
    {"Greater", f_binary, NULL},
    {"Equal", f_binary, NULL},
    {"Not", f_not, NULL},
    {"Where", f_where, b_where},
    {"Relu", f_act, b_act},
    {"Sigmoid", f_act, b_act},
    {"Tanh", f_act, b_act},
    {"Gelu", f_act, b_act},
    {"Clip", f_act, b_act},
    {"Exp", f_unary, b_unary},
    {"Log", f_unary, b_unary},
    {"Sqrt", f_unary, b_unary},
    {"Neg", f_unary, b_unary},
    {"Erf", f_unary, b_unary},
    {"Abs", f_unary, b_unary},
    {"Reciprocal", f_unary, b_unary},
    {"Softmax", f_softmax, b_softmax},
    {"LogSoftmax", f_softmax, b_softmax},
    {"Concat", f_concat, b_concat},
    {"Split", f_split, b_split},
    {"Slice", f_slice, b_slice},
    {"Pad", f_pad, b_pad},
    {"Expand", f_expand, b_expand},
    {"ReduceMean", f_reduce, b_reduce},
    {"ReduceSum", f_reduce, b_reduce},
    {"LayerNormalization", f_layernorm, b_layernorm},
    {"BatchNormalization", f_batchnorm, b_batchnorm},
    {"Conv", f_conv, b_conv},
    {"ConvTranspose", f_convt, b_convt},
    {"LeakyRelu", f_leaky, b_leaky},
    {"MaxPool", f_pool, b_pool},
    {"AveragePool", f_pool, b_pool},
    {"GlobalAveragePool", f_pool, b_pool},
    {"GlobalMaxPool", f_pool, b_pool},
    {"Constant", f_constant, NULL},
    {"Shape", f_shape, NULL},
    {"Gather", f_gather, b_gather},
    {"Cast", f_cast, b_cast},
    {"ConstantOfShape", f_constant_of_shape, NULL},
};
#define N_OPS (sizeof ops / sizeof ops[0])

const char *const lithe__graph_op_names[] = {
    "Identity", "Dropout", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Gemm", "MatMul", "Add", "Sub",
    "Mul", "Div", "Pow", "Less", "Greater", "Equal", "Not", "Where", "Relu", "Sigmoid", "Tanh", "Gelu", "Clip", "Exp", "Log", "Sqrt", "Neg", "Erf", "Abs",
    "Reciprocal", "Softmax", "LogSoftmax", "Concat", "Split", "Slice", "Pad", "Expand", "ReduceMean", "ReduceSum",
    "LayerNormalization", "BatchNormalization", "Conv", "ConvTranspose", "LeakyRelu", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool",
    "Constant", "Shape", "Gather", "Cast", "ConstantOfShape", NULL,
};
_Static_assert(sizeof lithe__graph_op_names / sizeof lithe__graph_op_names[0] == N_OPS + 1,
               "list every op of the table in lithe__graph_op_names");

const lithe__graph_op *lithe__graph_op_find(const char *op_type) {
    for (size_t i = 0; i < N_OPS; i++)
        if (!strcmp(ops[i].op_type, op_type)) return &ops[i];
    return NULL;
}
