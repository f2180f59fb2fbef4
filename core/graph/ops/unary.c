/* ONNX operators of the graph layer (core/graph/ops/): activations, unary maths, Softmax, LogSoftmax. */
#include "ops.h"

/* ---- activations and unary maths ---- */

static bool act_of(lithe__gexec *x, size_t node, lithe_tensor **in, size_t n_in, lithe__act *a) {
    const lithe__onnx_node *n = NODE(x, node);
    memset(a, 0, sizeof *a);
    const char *op = n->op_type;
    if (!strcmp(op, "Relu")) a->kind = LITHE__ACT_RELU;
    else if (!strcmp(op, "Sigmoid")) a->kind = LITHE__ACT_SIGMOID;
    else if (!strcmp(op, "Tanh")) a->kind = LITHE__ACT_TANH;
    else if (!strcmp(op, "Gelu")) a->kind = LITHE__ACT_GELU;
    else if (!strcmp(op, "HardSwish")) a->kind = LITHE__ACT_HARD_SWISH_MOBILENET; /* x * clip(x / 6 + 1/2, 0, 1) */
    else if (!strcmp(op, "Mish")) { /* x * tanh(softplus(x)); past 20 tanh(softplus(x)) is 1 in float32 */
        a->kind = LITHE__ACT_MISH;
        a->threshold = 20.0f;
    } else if (!strcmp(op, "HardSigmoid")) { /* clip(alpha x + beta, 0, 1); torch's Hardsigmoid: alpha 1/6 */
        a->kind = LITHE__ACT_CLIPPED_LINEAR;
        a->slope = attr_f(n, "alpha", 0.2f);
        a->offset = attr_f(n, "beta", 0.5f);
        a->min_val = 0.0f;
        a->max_val = 1.0f;
        /* clipped_linear's backward finds the linear stretch as (min - offset) / slope .. (max -
         * offset) / slope, which a negative slope turns around */
        return a->slope >= 0.0f;
    } else { /* Clip: min / max from the attrs (opset < 11) or inputs 1, 2 */
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
    if (!act_of(x, node, in, n_in, &a)) {
        if (!strcmp(NODE(x, node)->op_type, "HardSigmoid"))
            return fail(x, node, LITHE_ERR_UNSUPPORTED, "alpha %g < 0 (lithe runs HardSigmoid with alpha >= 0)", (double)a.slope);
        return fail(x, node, LITHE_ERR_UNSUPPORTED, "min and max must be scalars on the host");
    }
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

/* ---- Softplus: log(1 + exp(x)) as relu(x) + log(1 + exp(-|x|)) (no overflow: torch's threshold-20
 * cut-off to x gives the same float32 values) from the backends' unary / act primitives;
 * backward dY * sigmoid(x). ---- */

FWD(f_softplus) {
    UNUSED_FWD;
    LITHE__TRY(need_inputs(x, node, in, n_in, 1));
    LITHE__TRY(need_float(x, node, in[0], 0));
    lithe_tensor *t = NULL, *one = NULL;
    const lithe__act relu = {.kind = LITHE__ACT_RELU};
    LITHE__TRY(lithe__gexec_like(x, in[0], false, &out[0]));
    lithe_status s = lithe__gexec_like(x, in[0], false, &t);
    if (s == LITHE_OK) s = new_f32(x, 1, (int64_t[]){1}, false, &one);
    if (s == LITHE_OK) s = lithe__op_fill(x->be, one, 1.0f);
    if (s == LITHE_OK) s = lithe__op_unary(x->be, LITHE__UN_ABS, in[0], t);
    if (s == LITHE_OK) s = lithe__op_unary(x->be, LITHE__UN_NEG, t, t);
    if (s == LITHE_OK) s = lithe__op_unary(x->be, LITHE__UN_EXP, t, t);
    if (s == LITHE_OK) s = lithe__op_broadcast_to(x->be, one, 1.0f, 1.0f, t);
    if (s == LITHE_OK) s = lithe__op_unary(x->be, LITHE__UN_LOG, t, t);
    if (s == LITHE_OK) s = lithe__op_act(x->be, &relu, in[0], out[0]);
    if (s == LITHE_OK) s = acc(x, out[0], t);
    lithe_tensor_release(t);
    lithe_tensor_release(one);
    return s;
}
BWD(b_softplus) {
    UNUSED_BWD;
    lithe_tensor *d = NULL, *t = NULL;
    LITHE__TRY(lithe__gexec_grad(x, node, 0, &d));
    if (!d) return LITHE_OK;
    const lithe__act sig = {.kind = LITHE__ACT_SIGMOID};
    LITHE__TRY(lithe__gexec_like(x, d, false, &t));
    lithe_status s = lithe__op_act(x->be, &sig, in[0], t);
    if (s == LITHE_OK) s = lithe__op_mul(x->be, t, dout[0], t);
    if (s == LITHE_OK) s = acc(x, d, t);
    lithe_tensor_release(t);
    return s;
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
    int64_t M = 0, N = 0;
    LITHE__TRY(softmax_rows(x, node, in[0], &M, &N));
    lithe_tensor *Y2 = NULL, *dY2 = NULL, *d = NULL, *d2 = NULL, *t = NULL;
    lithe_status s = as_rows(out[0], M, N, &Y2);
    if (s == LITHE_OK) s = as_rows(dout[0], M, N, &dY2);
    if (s == LITHE_OK && !strcmp(NODE(x, node)->op_type, "LogSoftmax")) { /* dX += ... into the accumulator */
        s = lithe__gexec_grad(x, node, 0, &d);
        if (s == LITHE_OK && d) s = as_rows(d, M, N, &d2);
        if (s == LITHE_OK && d) s = lithe__op_log_softmax_backward(x->be, Y2, dY2, d2);
    } else if (s == LITHE_OK) { /* dX = ... into t, which becomes the gradient when there is none yet */
        s = lithe__gexec_like(x, Y2, false, &t);
        if (s == LITHE_OK) s = lithe__op_softmax_backward(x->be, Y2, dY2, 1.0f, t);
        if (s == LITHE_OK) s = lithe__gexec_grad_add(x, node, 0, t);
    }
    lithe_tensor_release(Y2);
    lithe_tensor_release(dY2);
    lithe_tensor_release(d2);
    lithe_tensor_release(t);
    return s;
}
