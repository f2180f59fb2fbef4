/* ONNX operators of the graph layer (core/graph/ops/): the fused nodes fuse.c makes. */
#include "ops.h"

/* ---- fused nodes (fuse.c) ---- */

/* LayerNorm from its decomposition: f_layernorm / b_layernorm with the fused node's eps. */
const lithe__graph_op lithe__fused_layernorm_op = {"fused:LayerNorm", f_layernorm, b_layernorm};

/* Linear: Y (..., N) = act(A (..., K) · op(W) + bias) by gemm_bias_act over A's stacked rows.
 * saved[0] = the pre-activation Z when a backward may follow and the activation's backward reads
 * it (lithe__act_needs: Gelu; not Relu, whose backward reads Y alone). Without Z the product
 * writes Y alone, the activation in the microkernel as at inference: a Relu's (tokens, 512) Z
 * was written row by row after each tile (a copy and an act call per row) and never read. */
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
    if (s == LITHE_OK && f->has_act && x->keep_all && (lithe__act_needs(f->act.kind) & LITHE__ACT_NEEDS_X))
        s = new_f32(x, 2, (int64_t[]){g.R, g.N}, false, &saved[0]);
    const lithe__act *act = f->has_act ? &f->act : NULL;
    lithe__lora_ad ad;
    bool lora = false, done = false;
    if (s == LITHE_OK) s = lithe__graph_lora_of(x, node, 1, &ad, &lora);
    if (s == LITHE_OK && lora) { /* Z = A·op(W) + bias + s·(A·Aᵀ)·Bᵀ, then the activation (core/lora.c) */
        lithe_tensor *Z = saved[0] ? saved[0] : Y2;
        s = lithe__gemm_bias_act_w(x->be, x->is_train, false, f->transB, A2, in[1], n_in > 2 ? in[2] : NULL, NULL, NULL, Z);
        if (s == LITHE_OK) s = lithe__lora_forward(x->m, &ad, A2, Z, 1.0f);
        if (s == LITHE_OK && act) s = lithe__op_act(x->be, act, Z, Y2);
        done = true;
    }
    lithe__prep_op op;
    if (s == LITHE_OK && !done && !x->is_train && f->transB && !saved[0] && lithe__affine_prep_op(act, &op))
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
    bool fresh = false; /* each gradient is asked for just before it is written: a new one is written, not added to */
    lithe_tensor *A2 = NULL, *dZ = NULL, *Y2 = NULL, *dA2 = NULL;
    lithe_status s = as_rows(in[0], g.R, g.K, &A2);
    if (s == LITHE_OK && f->has_act) { /* dZ = dY act'(Z) */
        if (!saved[0] && (lithe__act_needs(f->act.kind) & LITHE__ACT_NEEDS_X))
            s = fail(x, node, LITHE_ERR_STATE, "the forward kept no pre-activation");
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
    if (s == LITHE_OK) s = lithe__gexec_grad_fresh(x, node, 0, &dA, &fresh);
    if (s == LITHE_OK && dA) s = as_rows(dA, g.R, g.K, &dA2);
    if (s == LITHE_OK && dA) s = lithe__op_gemm(x->be, false, !f->transB, 1.0f, dZ, in[1], fresh ? 0.0f : 1.0f, dA2);
    if (s == LITHE_OK) s = lithe__gexec_grad_fresh(x, node, 1, &dW, &fresh);
    if (s == LITHE_OK && dW && !f->transB) s = lithe__op_gemm(x->be, true, false, 1.0f, A2, dZ, fresh ? 0.0f : 1.0f, dW);
    if (s == LITHE_OK && dW && f->transB) s = lithe__op_gemm(x->be, true, false, 1.0f, dZ, A2, fresh ? 0.0f : 1.0f, dW);
    if (s == LITHE_OK && n_in > 2 && in[2]) s = lithe__gexec_grad_fresh(x, node, 2, &db, &fresh);
    if (s == LITHE_OK && db) s = lithe__op_sum_rows(x->be, dZ, fresh ? 0.0f : 1.0f, db);
    lithe__lora_ad ad;
    bool lora = false;
    if (s == LITHE_OK) s = lithe__graph_lora_of(x, node, 1, &ad, &lora);
    if (s == LITHE_OK && lora) s = lithe__lora_backward(x->m, &ad, A2, dZ, dA2, 1.0f);
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
 * forward that a backward may follow (keep_all) keeps the pre-activation Z in saved[0] (but for Relu
 * and the clamps, act_from_y): Z = conv,
 * then Y = act(Z) (the same bits); the backward is dZ = dY act'(Z, Y), then Conv's. Inputs and
 * attributes are the Conv node's (f->first). */
/* Relu and the clamps (Clip, ReluK, HardTanh) read only where Y lies: Y in (lo, hi) exactly where
 * Z does, so their backward runs on Y and a training forward keeps no Z (half of a MobileNet's
 * activations: bench/memory). */
static bool act_from_y(const lithe__act *a) {
    float lo, hi;
    return a->kind == LITHE__ACT_RELU || lithe__act_clamp(a, &lo, &hi);
}
FWD(f_fused_conv) {
    (void)n_out;
    const lithe__act *a = &x->g->node_fuse[node].act;
    if (!x->keep_all || act_from_y(a)) return conv_forward(x, node, in, n_in, a, out);
    LITHE__TRY(conv_forward(x, node, in, n_in, NULL, saved));
    LITHE__TRY(lithe__gexec_like(x, saved[0], false, &out[0]));
    return lithe__op_act(x->be, a, saved[0], out[0]);
}
BWD(b_fused_conv) {
    (void)n_in;
    const lithe__act *a = &x->g->node_fuse[node].act;
    lithe_tensor *Z = saved[0] ? saved[0] : act_from_y(a) ? out[0] : NULL;
    if (!Z) return fail(x, node, LITHE_ERR_STATE, "the forward kept no pre-activation");
    if (lithe__pool_relu(x, node, out[0])) /* the max pool reading Y routed dY only where Y > 0: dY is dZ */
        return b_conv(x, node, in, n_in, out, dout, saved);
    lithe_tensor *dZ = NULL;
    /* dY is spent after this node (graph.c frees it): when nothing else holds it, dZ overwrites it
     * (elementwise), one activation-sized buffer less at the widest layer's backward */
    if (dout[0]->refcount == 1 && dout[0]->storage->refcount == 1 && lithe_tensor_is_contiguous(dout[0]) &&
        lithe__same_shape(dout[0], Z))
        dZ = lithe_tensor_retain(dout[0]);
    else LITHE__TRY(lithe__gexec_like(x, Z, false, &dZ));
    lithe_status s = lithe__op_act_backward(x->be, a, dout[0], Z, out[0], dZ);
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
    lithe__lora_ad ad;
    bool lora = false;
    LITHE__TRY(lithe__graph_lora_of(x, node, 1, &ad, &lora)); /* adapted: conv_forward's path */
    if (!lora && !x->keep_all && x->be->ops->conv2d_add && R->storage->backend == x->be &&
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
