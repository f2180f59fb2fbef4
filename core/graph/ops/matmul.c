/* ONNX operators of the graph layer (core/graph/ops/): Gemm, MatMul. */
#include "ops.h"

/* ---- Gemm, MatMul ---- */

/* A LoRA adapter on input 1 (core/lora.c): Y (R, N) += scale·s·(X·Aᵀ)·Bᵀ for X (R, K) as rows. */
static lithe_status lora_rows(lithe__gexec *x, size_t node, lithe_tensor *X, lithe_tensor *Y, float scale, bool tA) {
    lithe__lora_ad ad;
    bool on = false;
    LITHE__TRY(lithe__graph_lora_of(x, node, 1, &ad, &on));
    if (!on) return LITHE_OK;
    if (tA) return fail(x, node, LITHE_ERR_UNSUPPORTED, "a LoRA adapter on a Gemm with transA");
    int64_t K = X->shape[X->ndim - 1], N = Y->shape[Y->ndim - 1];
    lithe_tensor *X2 = NULL, *Y2 = NULL;
    lithe_status s = as_rows(X, K ? X->numel / K : 0, K, &X2);
    if (s == LITHE_OK) s = as_rows(Y, N ? Y->numel / N : 0, N, &Y2);
    if (s == LITHE_OK) s = lithe__lora_forward(x->m, &ad, X2, Y2, scale);
    lithe_tensor_release(X2);
    lithe_tensor_release(Y2);
    return s;
}
/* Its backward: A's and B's gradients, and dX (NULL: not wanted) += scale·s·(dY·B)·A. */
static lithe_status lora_rows_backward(lithe__gexec *x, size_t node, lithe_tensor *X, lithe_tensor *dY, lithe_tensor *dX,
                                       float scale) {
    lithe__lora_ad ad;
    bool on = false;
    LITHE__TRY(lithe__graph_lora_of(x, node, 1, &ad, &on));
    if (!on) return LITHE_OK;
    int64_t K = X->shape[X->ndim - 1], N = dY->shape[dY->ndim - 1], R = K ? X->numel / K : 0;
    lithe_tensor *X2 = NULL, *dY2 = NULL, *dX2 = NULL;
    lithe_status s = as_rows(X, R, K, &X2);
    if (s == LITHE_OK) s = as_rows(dY, R, N, &dY2);
    if (s == LITHE_OK && dX) s = as_rows(dX, R, K, &dX2);
    if (s == LITHE_OK) s = lithe__lora_backward(x->m, &ad, X2, dY2, dX2, scale);
    lithe_tensor_release(X2);
    lithe_tensor_release(dY2);
    lithe_tensor_release(dX2);
    return s;
}

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
        if (done) return lora_rows(x, node, A, out[0], alpha, tA); /* the base's operator, then the adapter */
    }
    /* B's prepared form at inference (an initializer lithe_model_prepare_inference packed) */
    LITHE__TRY(lithe__gemm_w(x->be, x->is_train, tA, tB, alpha, A, B, C ? 1.0f : 0.0f, out[0]));
    return lora_rows(x, node, A, out[0], alpha, tA);
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
    return lora_rows_backward(x, node, in[0], dY, tA ? NULL : dA, alpha);
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
 * fwd: a forward product, which may read B's prepared form when the run is not training. Several
 * batches go to the backend's gemm_batched in one call where it has one (smm below). */
static lithe_status batched_gemm(lithe__gexec *x, int64_t P, bool tA, bool tB, lithe_tensor *A, int64_t ar, int64_t ac,
                                 bool a_shared, lithe_tensor *B, int64_t br, int64_t bc, bool b_shared, lithe_tensor *C,
                                 int64_t cr, int64_t cc, float beta, bool fwd) {
    lithe_status s = LITHE_OK;
    if (P > 1 && x->be->ops->gemm_batched && (x->is_train || !fwd)) { /* one call (the CPU; not where B may
                                                                       * have a prepared form) */
        lithe_tensor *a = NULL, *b = NULL, *c = NULL;
        s = rows_view(A, 0, ar, ac, &a);
        if (s == LITHE_OK) s = rows_view(B, 0, br, bc, &b);
        if (s == LITHE_OK) s = rows_view(C, 0, cr, cc, &c);
        if (s == LITHE_OK) {
            lithe__storage_touch(c->storage);
            s = x->be->ops->gemm_batched(x->be, tA, tB, P, 1.0f, a, a_shared ? 0 : ar * ac, b, b_shared ? 0 : br * bc,
                                         beta, beta, c, cr * cc);
        }
        lithe_tensor_release(a);
        lithe_tensor_release(b);
        lithe_tensor_release(c);
        return s;
    }
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
    if (g.b2d) { /* stack A's rows: one GEMM */
        LITHE__TRY(batched_gemm(x, 1, false, false, in[0], g.P * g.M, g.K, true, in[1], g.K, g.N, true, out[0], g.P * g.M,
                                g.N, 0.0f, true));
        return lora_rows(x, node, in[0], out[0], 1.0f, false);
    }
    return batched_gemm(x, g.P, false, false, in[0], g.M, g.K, false, in[1], g.K, g.N, false, out[0], g.M, g.N, 0.0f, true);
}
BWD(b_matmul) {
    UNUSED_BWD;
    mm_geo g = {0};
    int nd = 0;
    int64_t shape[LITHE_MAX_DIMS];
    LITHE__TRY(mm_geometry(x, node, in[0], in[1], &g, &nd, shape));
    lithe_tensor *dA = NULL, *dB = NULL;
    bool fa = false, fb = false; /* a new gradient is written (beta 0), asked for just before it is */
    if (g.b2d) {
        int64_t R = g.P * g.M;
        LITHE__TRY(lithe__gexec_grad_fresh(x, node, 0, &dA, &fa));
        if (dA) LITHE__TRY(batched_gemm(x, 1, false, true, dout[0], R, g.N, true, in[1], g.K, g.N, true, dA, R, g.K, fa ? 0.0f : 1.0f, false));
        LITHE__TRY(lithe__gexec_grad_fresh(x, node, 1, &dB, &fb));
        if (dB) LITHE__TRY(batched_gemm(x, 1, true, false, in[0], R, g.K, true, dout[0], R, g.N, true, dB, g.K, g.N, fb ? 0.0f : 1.0f, false));
        return lora_rows_backward(x, node, in[0], dout[0], dA, 1.0f);
    }
    LITHE__TRY(lithe__gexec_grad_fresh(x, node, 0, &dA, &fa));
    if (dA) LITHE__TRY(batched_gemm(x, g.P, false, true, dout[0], g.M, g.N, false, in[1], g.K, g.N, false, dA, g.M, g.K, fa ? 0.0f : 1.0f, false));
    LITHE__TRY(lithe__gexec_grad_fresh(x, node, 1, &dB, &fb));
    if (dB) LITHE__TRY(batched_gemm(x, g.P, true, false, in[0], g.M, g.K, false, dout[0], g.M, g.N, false, dB, g.K, g.N, fb ? 0.0f : 1.0f, false));
    return LITHE_OK;
}

/* ---- fused: MatMul with rank-3 Transposes folded in (fuse.c's try_matmul_t) ----
 * Each operand is a batch of matrices read where it lies: element (p, i, j) at
 * t[off + p sp + i sr + j sc], with sc == 1 (rows) or sr == 1 (columns: the GEMM's transposed
 * operand); a 2-D operand is shared by every batch (sp 0). The output Transpose's layout gives the
 * product's strides. The GEMMs are the unfused ones' (op(A) · op(B) per batch, same k order), so
 * the bits are the unfused graph's; only the copies are gone. */
typedef struct smat {
    lithe_tensor *t;
    int64_t sp, sr, sc, P, R, C;
} smat;

/* t's (P, R, C) as seen through perm (NULL / perm[0] < 0: t itself): strides of the source axes. */
static bool smat_of(lithe_tensor *t, const int8_t *perm, smat *m) {
    int64_t sh[3], st[3];
    if (perm && perm[0] >= 0) {
        if (t->ndim != 3) return false;
        for (int d = 0; d < 3; d++) sh[d] = t->shape[perm[d]], st[d] = t->strides[perm[d]];
    } else if (t->ndim == 3) {
        for (int d = 0; d < 3; d++) sh[d] = t->shape[d], st[d] = t->strides[d];
    } else if (t->ndim == 2) {
        sh[0] = 1, st[0] = 0, sh[1] = t->shape[0], sh[2] = t->shape[1], st[1] = t->strides[0], st[2] = t->strides[1];
    } else {
        return false;
    }
    *m = (smat){t, st[0], st[1], st[2], sh[0], sh[1], sh[2]};
    if (m->C == 1) m->sc = 1; /* an extent of 1: its stride is never stepped */
    if (m->R == 1 && m->sc != 1) m->sr = 1;
    if (m->P == 1) m->sp = 0;
    return m->sc == 1 || m->sr == 1;
}
static smat smat_t(smat m) { /* the transposed matrices */
    int64_t s = m.sr, e = m.R;
    m.sr = m.sc, m.sc = s, m.R = m.C, m.C = e;
    return m;
}

/* C[p] = op(A[p]) · op(B[p]) for every batch p, beta0 for p = 0 and beta for the others (1: added
 * to C[p]); C with unit row steps (sr == 1) is computed as Cᵀ = Bᵀ · Aᵀ. Three 2-D views made once,
 * moved from batch to batch by their offsets: by the backend's gemm_batched in one call where it has
 * one (the CPU: one set-up for attention's 32 per-head products of a node, not 32), else by one gemm
 * a batch. */
static lithe_status smm(lithe__gexec *x, int64_t P, smat C, smat A, smat B, float beta0, float beta) {
    if (C.sc != 1) {
        smat t = smat_t(A);
        A = smat_t(B), B = t, C = smat_t(C);
    }
    int64_t M = C.R, N = C.C, K = A.C;
    bool tA = A.sc != 1, tB = B.sc != 1;
    lithe_tensor *a = NULL, *b = NULL, *c = NULL;
    lithe_status s = view(A.t, 2, tA ? (int64_t[]){K, M} : (int64_t[]){M, K}, (int64_t[]){tA ? A.sc : A.sr, 1}, 0, &a);
    if (s == LITHE_OK) s = view(B.t, 2, tB ? (int64_t[]){N, K} : (int64_t[]){K, N}, (int64_t[]){tB ? B.sc : B.sr, 1}, 0, &b);
    if (s == LITHE_OK) s = view(C.t, 2, (int64_t[]){M, N}, (int64_t[]){C.sr, 1}, 0, &c);
    if (s == LITHE_OK && P > 1 && x->be->ops->gemm_batched) { /* one call for all of them (the CPU) */
        lithe__storage_touch(c->storage);
        s = x->be->ops->gemm_batched(x->be, tA, tB, P, 1.0f, a, A.sp, b, B.sp, beta0, beta, c, C.sp);
        P = 0;
    }
    int64_t a0 = a ? a->offset : 0, b0 = b ? b->offset : 0, c0 = c ? c->offset : 0;
    for (int64_t p = 0; s == LITHE_OK && p < P; p++) {
        a->offset = a0 + p * A.sp, b->offset = b0 + p * B.sp, c->offset = c0 + p * C.sp;
        s = lithe__op_gemm(x->be, tA, tB, 1.0f, a, b, p ? beta : beta0, c);
    }
    lithe_tensor_release(a);
    lithe_tensor_release(b);
    lithe_tensor_release(c);
    return s;
}

/* The operands and the product's layout (Y: the node's output, its shape known; else *shape gets it). */
static lithe_status mmt_geometry(lithe__gexec *x, size_t node, lithe_tensor **in, smat *A, smat *B, int64_t *P,
                                 int64_t *shape) {
    const lithe__gfuse *f = &x->g->node_fuse[node];
    LITHE__TRY(need_inputs(x, node, in, 2, 2));
    for (size_t k = 0; k < 2; k++) LITHE__TRY(need_float(x, node, in[k], k));
    if (!smat_of(in[0], f->perm_a, A) || !smat_of(in[1], f->perm_b, B) || (A->P != B->P && A->P != 1 && B->P != 1) ||
        (in[0]->ndim != 3 && in[1]->ndim != 3))
        return fail(x, node, LITHE_ERR_UNSUPPORTED, "fused MatMul: operands of rank 3 with one batch extent, or rank 2 "
                    "(LITHE_GRAPH_FUSE=0 runs the nodes as the file has them)");
    if (A->C != B->R)
        return fail(x, node, LITHE_ERR_SHAPE, "A's last extent %lld does not match B's rows %lld", (long long)A->C,
                    (long long)B->R);
    *P = A->P > B->P ? A->P : B->P;
    int64_t c[3] = {*P, A->R, B->C};
    for (int d = 0; d < 3; d++) shape[d] = f->perm_y[0] >= 0 ? c[f->perm_y[d]] : c[d];
    return LITHE_OK;
}

/* The product's (P, M, N) inside Y (contiguous, shape as mmt_geometry gave): through the output perm. */
static smat mmt_out(const lithe__gfuse *f, lithe_tensor *Y, int64_t P, int64_t M, int64_t N) {
    smat C = {Y, 0, 0, 0, P, M, N};
    int64_t st[3] = {0, 0, 0};
    for (int d = 0; d < 3; d++) st[f->perm_y[0] >= 0 ? f->perm_y[d] : d] = Y->strides[d];
    C.sp = P == 1 ? 0 : st[0], C.sr = st[1], C.sc = st[2];
    return C;
}

static FWD(f_fused_matmul_t) {
    UNUSED_FWD;
    smat A, B;
    int64_t P, shape[3];
    LITHE__TRY(mmt_geometry(x, node, in, &A, &B, &P, shape));
    LITHE__TRY(new_f32(x, 3, shape, false, &out[0]));
    smat C = mmt_out(&x->g->node_fuse[node], out[0], P, A.R, B.C);
    return smm(x, P, C, A, B, 0.0f, 0.0f);
}

/* dA[p] = dC[p] · B[p]ᵀ, dB[p] = A[p]ᵀ · dC[p], each into its gradient's layout (that of its input,
 * through the same perm); a shared (2-D) operand's gradient sums over the batches. */
static BWD(b_fused_matmul_t) {
    UNUSED_BWD;
    const lithe__gfuse *f = &x->g->node_fuse[node];
    smat A, B;
    int64_t P, shape[3];
    LITHE__TRY(mmt_geometry(x, node, in, &A, &B, &P, shape));
    smat dC = mmt_out(f, dout[0], P, A.R, B.C);
    for (int k = 0; k < 2; k++) {
        lithe_tensor *d = NULL;
        bool fresh = false;
        LITHE__TRY(lithe__gexec_grad_fresh(x, node, (size_t)k, &d, &fresh));
        if (!d) continue;
        smat dm;
        if (!smat_of(d, k ? f->perm_b : f->perm_a, &dm))
            return fail(x, node, LITHE_ERR_STATE, "fused MatMul: a gradient's layout");
        if (fresh && P == 0) LITHE__TRY(lithe__op_fill(x->be, d, 0.0f)); /* a shared operand, no batch */
        float beta0 = fresh ? 0.0f : 1.0f, beta = fresh && dm.sp != 0 ? 0.0f : 1.0f; /* a shared one sums */
        LITHE__TRY(k ? smm(x, P, dm, smat_t(A), dC, beta0, beta) : smm(x, P, dm, dC, smat_t(B), beta0, beta));
    }
    return LITHE_OK;
}
const lithe__graph_op lithe__fused_matmul_t_op = {"fused:MatMulT", f_fused_matmul_t, b_fused_matmul_t};
