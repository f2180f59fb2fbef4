/* ONNX operators of the graph layer (core/graph/ops/): the elementwise binary ops and comparisons,
 * Not, Where. */
#include "ops.h"

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
lithe_status int_binary(lithe__gexec *x, size_t node, int op, lithe_tensor *A, lithe_tensor *B, lithe_tensor **out) {
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
    int op = bin_op_of(NODE(x, node)->op_type);
    if (op == LITHE__BIN_ADD && lithe__same_shape(in[0], out[0]) && lithe__same_shape(in[1], out[0])) {
        /* a residual Add: dY becomes A's gradient when A has none yet, B's is written or added to */
        bool fresh = false;
        LITHE__TRY(lithe__gexec_grad_add(x, node, 0, dout[0]));
        LITHE__TRY(lithe__gexec_grad_fresh(x, node, 1, &dB, &fresh));
        return !dB ? LITHE_OK : fresh ? lithe__op_copy(x->be, dB, dout[0]) : acc(x, dB, dout[0]);
    }
    /* X / c, X * c or c * X with c one element that takes no gradient (attention's scaling by
     * 1 / sqrt(d)): dX = dY / c (dY * c) written by the forward op when dX is new (da = g / b, g * b:
     * the adds into zeros' values, but -0 stays -0 as every first writer's), instead of zeroing dX and adding */
    int k = in[1]->numel == 1 ? 0 : op == LITHE__BIN_MUL && in[0]->numel == 1 ? 1 : -1;
    if ((op == LITHE__BIN_DIV || op == LITHE__BIN_MUL) && k >= 0 && lithe__same_shape(in[k], out[0])) {
        LITHE__TRY(lithe__gexec_grad(x, node, 1 - k, &dB));
        if (!dB) {
            bool fresh = false;
            LITHE__TRY(lithe__gexec_grad_fresh(x, node, (size_t)k, &dA, &fresh));
            if (dA && fresh) return lithe__op_bcast_binary(x->be, op, dout[0], in[1 - k], dA);
            if (!dA) return LITHE_OK;
            return k == 0 ? lithe__op_bcast_binary_backward(x->be, op, in[0], in[1], out[0], dout[0], dA, NULL)
                          : lithe__op_bcast_binary_backward(x->be, op, in[0], in[1], out[0], dout[0], NULL, dA);
        }
        dB = NULL; /* (c takes a gradient: the general path below) */
    }
    LITHE__TRY(lithe__gexec_grad(x, node, 0, &dA));
    LITHE__TRY(lithe__gexec_grad(x, node, 1, &dB));
    if (!dA && !dB) return LITHE_OK;
    return lithe__op_bcast_binary_backward(x->be, op, in[0], in[1], out[0], dout[0], dA, dB);
}

/* Not: 1 - x on a float mask, !x on host booleans. */
/* GreaterOrEqual / LessOrEqual: (a > b) + (a == b), each 0 or 1 and never both, so a NaN operand
 * gives 0 as IEEE's >= does (Not(Less) would give 1). */
FWD(f_compare_eq) {
    UNUSED_FWD;
    LITHE__TRY(need_inputs(x, node, in, n_in, 2));
    int op = NODE(x, node)->op_type[0] == 'G' ? LITHE__BIN_GREATER : LITHE__BIN_LESS;
    lithe_tensor *eq = NULL;
    if (is_int(in[0]) && is_int(in[1])) {
        LITHE__TRY(int_binary(x, node, op, in[0], in[1], &out[0]));
        lithe_status s = int_binary(x, node, LITHE__BIN_EQUAL, in[0], in[1], &eq);
        for (int64_t i = 0; s == LITHE_OK && i < eq->numel; i++) ((int64_t *)lithe__tdata(out[0]))[i] += ints(eq)[i];
        lithe_tensor_release(eq);
        return s;
    }
    for (size_t k = 0; k < 2; k++) LITHE__TRY(need_float(x, node, in[k], k));
    int nd = 0;
    int64_t shape[LITHE_MAX_DIMS];
    LITHE__TRY(bcast_shape(x, node, in[0], in[1], &nd, shape));
    LITHE__TRY(new_f32(x, nd, shape, false, &out[0]));
    lithe_status s = new_f32(x, nd, shape, false, &eq);
    if (s == LITHE_OK) s = lithe__op_bcast_binary(x->be, op, in[0], in[1], out[0]);
    if (s == LITHE_OK) s = lithe__op_bcast_binary(x->be, LITHE__BIN_EQUAL, in[0], in[1], eq);
    if (s == LITHE_OK) s = lithe__op_axpby(x->be, 1.0f, eq, 1.0f, out[0]);
    lithe_tensor_release(eq);
    return s;
}

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
    int64_t s1[LITHE_MAX_DIMS] = {0}, shape[LITHE_MAX_DIMS]; /* (zeroed: the copy below reads all of it) */
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
