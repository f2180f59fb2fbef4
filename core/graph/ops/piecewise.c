/* ONNX operators of the graph layer (core/graph/ops/): the piecewise activations with a parameter —
 * Elu, Selu, Celu, Softsign, PRelu — composed from the backends' act / unary / broadcast
 * primitives (no kernel of their own), so every backend runs them. */
#include "ops.h"

/* A 1-element float tensor holding v on the model's backend (for broadcast_to's constant terms). */
static lithe_status scalar(lithe__gexec *x, float v, lithe_tensor **out) {
    LITHE__TRY(new_f32(x, 1, (int64_t[]){1}, false, out));
    lithe_status s = lithe__op_fill(x->be, *out, v);
    if (s != LITHE_OK) {
        lithe_tensor_release(*out);
        *out = NULL;
    }
    return s;
}

/* min(x, 0) * slope: clipped_linear with max 0 (its backward: slope where x < 0). */
static lithe__act neg_part(float slope) {
    return (lithe__act){.kind = LITHE__ACT_CLIPPED_LINEAR, .slope = slope, .min_val = -INFINITY, .max_val = 0.0f};
}
static const lithe__act relu = {.kind = LITHE__ACT_RELU};

/* ---- Elu, Selu, Celu: gamma (relu(x) + alpha (exp(min(x, 0) / k) - 1)); Elu: gamma 1, k 1; Selu:
 * k 1; Celu: gamma 1, k alpha ---- */

static lithe_status elu_params(lithe__gexec *x, size_t node, float *alpha, float *gamma, float *k) {
    const lithe__onnx_node *n = NODE(x, node);
    const char *op = n->op_type;
    *gamma = 1.0f;
    *k = 1.0f;
    if (!strcmp(op, "Selu")) {
        *alpha = attr_f(n, "alpha", 1.67326319217681884765625f);
        *gamma = attr_f(n, "gamma", 1.05070102214813232421875f);
    } else {
        *alpha = attr_f(n, "alpha", 1.0f);
        if (!strcmp(op, "Celu")) *k = *alpha;
    }
    if (!(*k > 0.0f) || !isfinite(*alpha) || !isfinite(*gamma))
        return fail(x, node, LITHE_ERR_VALUE, "alpha %g, gamma %g: Celu's alpha must be > 0, both finite", (double)*alpha,
                    (double)*gamma);
    return LITHE_OK;
}

FWD(f_elu) {
    UNUSED_FWD;
    LITHE__TRY(need_inputs(x, node, in, n_in, 1));
    LITHE__TRY(need_float(x, node, in[0], 0));
    float alpha = 0, gamma = 0, k = 0;
    LITHE__TRY(elu_params(x, node, &alpha, &gamma, &k));
    lithe_tensor *t = NULL, *one = NULL;
    const lithe__act neg = neg_part(1.0f / k);
    LITHE__TRY(lithe__gexec_like(x, in[0], false, &out[0]));
    lithe_status s = lithe__gexec_like(x, in[0], false, &t);
    if (s == LITHE_OK) s = scalar(x, 1.0f, &one);
    if (s == LITHE_OK) s = lithe__op_act(x->be, &neg, in[0], t);       /* min(x, 0) / k */
    if (s == LITHE_OK) s = lithe__op_unary(x->be, LITHE__UN_EXP, t, t); /* exp(...) */
    if (s == LITHE_OK) s = lithe__op_act(x->be, &relu, in[0], out[0]);
    if (s == LITHE_OK) s = lithe__op_axpby(x->be, alpha * gamma, t, gamma, out[0]);
    if (s == LITHE_OK) s = lithe__op_broadcast_to(x->be, one, -alpha * gamma, 1.0f, out[0]);
    lithe_tensor_release(t);
    lithe_tensor_release(one);
    return s;
}
/* dX += gamma dY (x > 0) + gamma alpha / k exp(x / k) dY (x < 0) */
BWD(b_elu) {
    UNUSED_BWD;
    lithe_tensor *d = NULL, *t = NULL, *e = NULL;
    LITHE__TRY(lithe__gexec_grad(x, node, 0, &d));
    if (!d) return LITHE_OK;
    float alpha = 0, gamma = 0, k = 0;
    LITHE__TRY(elu_params(x, node, &alpha, &gamma, &k));
    const lithe__act neg = neg_part(1.0f / k);
    LITHE__TRY(lithe__gexec_like(x, d, false, &t));
    lithe_status s = lithe__gexec_like(x, d, false, &e);
    if (s == LITHE_OK) s = lithe__op_act(x->be, &relu, in[0], e); /* relu's backward reads its output */
    if (s == LITHE_OK) s = lithe__op_act_backward(x->be, &relu, dout[0], in[0], e, t);
    if (s == LITHE_OK) s = lithe__op_axpby(x->be, gamma, t, 1.0f, d);
    if (s == LITHE_OK) s = lithe__op_act(x->be, &neg, in[0], e);
    if (s == LITHE_OK) s = lithe__op_unary(x->be, LITHE__UN_EXP, e, e);
    /* dY / k where x < 0 (clipped_linear reads X only; X stands in for Y, which GPU backends bind) */
    if (s == LITHE_OK) s = lithe__op_act_backward(x->be, &neg, dout[0], in[0], in[0], t);
    if (s == LITHE_OK) s = lithe__op_mul(x->be, t, e, t);
    if (s == LITHE_OK) s = lithe__op_axpby(x->be, gamma * alpha, t, 1.0f, d);
    lithe_tensor_release(t);
    lithe_tensor_release(e);
    return s;
}

/* ---- Softsign: x / (1 + |x|); backward dY / (1 + |x|)^2 ---- */

static lithe_status one_plus_abs(lithe__gexec *x, const lithe_tensor *X, lithe_tensor **out) {
    lithe_tensor *one = NULL;
    LITHE__TRY(lithe__gexec_like(x, X, false, out));
    lithe_status s = scalar(x, 1.0f, &one);
    if (s == LITHE_OK) s = lithe__op_unary(x->be, LITHE__UN_ABS, X, *out);
    if (s == LITHE_OK) s = lithe__op_broadcast_to(x->be, one, 1.0f, 1.0f, *out);
    lithe_tensor_release(one);
    return s;
}

FWD(f_softsign) {
    UNUSED_FWD;
    LITHE__TRY(need_inputs(x, node, in, n_in, 1));
    LITHE__TRY(need_float(x, node, in[0], 0));
    lithe_tensor *t = NULL;
    LITHE__TRY(one_plus_abs(x, in[0], &t));
    lithe_status s = lithe__gexec_like(x, in[0], false, &out[0]);
    if (s == LITHE_OK) s = lithe__op_bcast_binary(x->be, LITHE__BIN_DIV, in[0], t, out[0]);
    lithe_tensor_release(t);
    return s;
}
BWD(b_softsign) {
    UNUSED_BWD;
    lithe_tensor *d = NULL, *t = NULL;
    LITHE__TRY(lithe__gexec_grad(x, node, 0, &d));
    if (!d) return LITHE_OK;
    LITHE__TRY(one_plus_abs(x, in[0], &t));
    lithe_status s = lithe__op_unary(x->be, LITHE__UN_RECIPROCAL, t, t);
    if (s == LITHE_OK) s = lithe__op_mul(x->be, t, t, t);
    if (s == LITHE_OK) s = lithe__op_mul(x->be, t, dout[0], t);
    if (s == LITHE_OK) s = acc(x, d, t);
    lithe_tensor_release(t);
    return s;
}

/* ---- PRelu: relu(x) + slope * min(x, 0), slope broadcast to X (torch's nn.PReLU(C): (C, 1, 1)); a
 * gradient to the slope (a trainable param) through bcast_binary's backward ---- */

static lithe_status prelu_check(lithe__gexec *x, size_t node, lithe_tensor **in, size_t n_in) {
    LITHE__TRY(need_inputs(x, node, in, n_in, 2));
    for (size_t k = 0; k < 2; k++) LITHE__TRY(need_float(x, node, in[k], k));
    int nd = 0;
    int64_t shape[LITHE_MAX_DIMS];
    LITHE__TRY(bcast_shape(x, node, in[0], in[1], &nd, shape));
    bool same = nd == in[0]->ndim;
    for (int d = 0; same && d < nd; d++) same = shape[d] == in[0]->shape[d];
    if (!same) {
        char sx[LITHE__SHAPE_BUF], ss[LITHE__SHAPE_BUF];
        return fail(x, node, LITHE_ERR_SHAPE, "slope %s does not broadcast to X %s", lithe__shape_str(in[1], ss, sizeof ss),
                    lithe__shape_str(in[0], sx, sizeof sx));
    }
    return LITHE_OK;
}

FWD(f_prelu) {
    UNUSED_FWD;
    LITHE__TRY(prelu_check(x, node, in, n_in));
    lithe_tensor *m = NULL;
    const lithe__act neg = neg_part(1.0f);
    LITHE__TRY(lithe__gexec_like(x, in[0], false, &out[0]));
    lithe_status s = lithe__gexec_like(x, in[0], false, &m);
    if (s == LITHE_OK) s = lithe__op_act(x->be, &neg, in[0], m);
    if (s == LITHE_OK) s = lithe__op_bcast_binary(x->be, LITHE__BIN_MUL, m, in[1], out[0]);
    if (s == LITHE_OK) s = lithe__op_act(x->be, &relu, in[0], m);
    if (s == LITHE_OK) s = acc(x, out[0], m);
    lithe_tensor_release(m);
    return s;
}
BWD(b_prelu) {
    UNUSED_BWD;
    lithe_tensor *dX = NULL, *dS = NULL, *m = NULL, *dm = NULL, *p = NULL;
    LITHE__TRY(lithe__gexec_grad(x, node, 0, &dX));
    LITHE__TRY(lithe__gexec_grad(x, node, 1, &dS));
    if (!dX && !dS) return LITHE_OK;
    const lithe__act neg = neg_part(1.0f);
    LITHE__TRY(lithe__gexec_like(x, in[0], false, &m));
    lithe_status s = lithe__gexec_like(x, in[0], true, &dm);
    if (s == LITHE_OK) s = lithe__op_act(x->be, &neg, in[0], m); /* min(x, 0) */
    /* dm += dY * slope, dS += sum of dY * min(x, 0) over the broadcast axes (mul reads no Y: dY
     * stands in for it, GPU backends bind one) */
    if (s == LITHE_OK) s = lithe__op_bcast_binary_backward(x->be, LITHE__BIN_MUL, m, in[1], dout[0], dout[0], dm, dS);
    if (s == LITHE_OK && dX) s = lithe__gexec_like(x, in[0], false, &p);
    if (s == LITHE_OK && dX) s = lithe__op_act_backward(x->be, &neg, dm, in[0], in[0], dm); /* where x < 0 */
    if (s == LITHE_OK && dX) s = acc(x, dX, dm);
    if (s == LITHE_OK && dX) s = lithe__op_act(x->be, &relu, in[0], p);
    if (s == LITHE_OK && dX) s = lithe__op_act_backward(x->be, &relu, dout[0], in[0], p, p);
    if (s == LITHE_OK && dX) s = acc(x, dX, p);
    lithe_tensor_release(m);
    lithe_tensor_release(dm);
    lithe_tensor_release(p);
    return s;
}

/* ---- ThresholdedRelu: x where x > alpha, else 0 (x * mask, mask = Greater(x, alpha)); backward
 * dY * mask ---- */

static lithe_status above(lithe__gexec *x, const lithe_tensor *X, float alpha, lithe_tensor **mask) {
    lithe_tensor *a = NULL;
    LITHE__TRY(scalar(x, alpha, &a));
    lithe_status s = lithe__gexec_like(x, X, false, mask);
    if (s == LITHE_OK) s = lithe__op_bcast_binary(x->be, LITHE__BIN_GREATER, X, a, *mask);
    lithe_tensor_release(a);
    return s;
}

FWD(f_thresholded_relu) {
    UNUSED_FWD;
    LITHE__TRY(need_inputs(x, node, in, n_in, 1));
    LITHE__TRY(need_float(x, node, in[0], 0));
    lithe_tensor *mask = NULL;
    LITHE__TRY(above(x, in[0], attr_f(NODE(x, node), "alpha", 1.0f), &mask));
    lithe_status s = lithe__gexec_like(x, in[0], false, &out[0]);
    if (s == LITHE_OK) s = lithe__op_mul(x->be, in[0], mask, out[0]);
    lithe_tensor_release(mask);
    return s;
}
BWD(b_thresholded_relu) {
    UNUSED_BWD;
    lithe_tensor *d = NULL, *mask = NULL;
    LITHE__TRY(lithe__gexec_grad(x, node, 0, &d));
    if (!d) return LITHE_OK;
    LITHE__TRY(above(x, in[0], attr_f(NODE(x, node), "alpha", 1.0f), &mask));
    lithe_status s = lithe__op_mul(x->be, mask, dout[0], mask);
    if (s == LITHE_OK) s = acc(x, d, mask);
    lithe_tensor_release(mask);
    return s;
}

/* ---- Sign: Greater(x, 0) - Less(x, 0) (a NaN gives 0, not NaN); no gradient (zero almost
 * everywhere) ---- */

FWD(f_sign) {
    UNUSED_FWD;
    LITHE__TRY(need_inputs(x, node, in, n_in, 1));
    if (is_int(in[0])) {
        LITHE__TRY(new_i64(x, in[0]->ndim, in[0]->shape, &out[0]));
        for (int64_t i = 0; i < in[0]->numel; i++)
            ((int64_t *)lithe__tdata(out[0]))[i] = (ints(in[0])[i] > 0) - (ints(in[0])[i] < 0);
        return LITHE_OK;
    }
    LITHE__TRY(need_float(x, node, in[0], 0));
    lithe_tensor *zero = NULL, *neg = NULL;
    LITHE__TRY(scalar(x, 0.0f, &zero));
    lithe_status s = lithe__gexec_like(x, in[0], false, &out[0]);
    if (s == LITHE_OK) s = lithe__gexec_like(x, in[0], false, &neg);
    if (s == LITHE_OK) s = lithe__op_bcast_binary(x->be, LITHE__BIN_GREATER, in[0], zero, out[0]);
    if (s == LITHE_OK) s = lithe__op_bcast_binary(x->be, LITHE__BIN_LESS, in[0], zero, neg);
    if (s == LITHE_OK) s = lithe__op_axpby(x->be, -1.0f, neg, 1.0f, out[0]);
    lithe_tensor_release(zero);
    lithe_tensor_release(neg);
    return s;
}
