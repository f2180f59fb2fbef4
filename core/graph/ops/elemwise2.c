/* ONNX operators of the graph layer (core/graph/ops/): Floor, Ceil, Round, Sin, Cos, variadic Max /
 * Min / Sum / Mean, Mod, And / Or / Xor, IsNaN, IsInf, Hardmax (issue 23). Booleans are float 0 / 1
 * masks on the backend (as Less / Greater / Equal give them) or host int64 (from shape arithmetic). */
#include "ops.h"

static lithe_status scalar(lithe__gexec *x, float v, lithe_tensor **out) {
    LITHE__TRY(new_f32(x, 1, (int64_t[]){1}, false, out));
    return lithe__op_fill(x->be, *out, v);
}

/* ---- Floor, Ceil, Round (half to even), Sin, Cos: the unary primitive ---- */

static int unary2_of(const char *op) {
    if (!strcmp(op, "Floor")) return LITHE__UN_FLOOR;
    if (!strcmp(op, "Ceil")) return LITHE__UN_CEIL;
    if (!strcmp(op, "Round")) return LITHE__UN_ROUND;
    if (!strcmp(op, "Sin")) return LITHE__UN_SIN;
    return LITHE__UN_COS;
}

FWD(f_unary2) {
    UNUSED_FWD;
    LITHE__TRY(need_inputs(x, node, in, n_in, 1));
    int op = unary2_of(NODE(x, node)->op_type);
    if (is_int(in[0]) && op != LITHE__UN_SIN && op != LITHE__UN_COS) {
        out[0] = lithe_tensor_retain(in[0]); /* integers round to themselves */
        return LITHE_OK;
    }
    LITHE__TRY(need_float(x, node, in[0], 0));
    LITHE__TRY(lithe__gexec_like(x, in[0], false, &out[0]));
    return lithe__op_unary(x->be, op, in[0], out[0]);
}
BWD(b_unary2) {
    UNUSED_BWD;
    lithe_tensor *d = NULL;
    LITHE__TRY(lithe__gexec_grad(x, node, 0, &d));
    if (!d) return LITHE_OK;
    int op = unary2_of(NODE(x, node)->op_type);
    if (op != LITHE__UN_SIN && op != LITHE__UN_COS) return LITHE_OK; /* zero almost everywhere */
    return lithe__op_unary_backward(x->be, op, in[0], out[0], dout[0], d);
}

/* ---- host int64 elementwise with broadcasting ---- */

static lithe_status int_bcast(lithe__gexec *x, size_t node, lithe_tensor *A, lithe_tensor *B, lithe_tensor **a,
                              lithe_tensor **b) {
    int nd = 0;
    int64_t shape[LITHE_MAX_DIMS];
    lithe_tensor *zero = NULL;
    LITHE__TRY(bcast_shape(x, node, A, B, &nd, shape));
    LITHE__TRY(new_i64(x, nd, shape, &zero));
    memset(lithe__tdata(zero), 0, (size_t)zero->numel * 8);
    lithe_status s = int_binary(x, node, LITHE__BIN_ADD, A, zero, a);
    if (s == LITHE_OK) s = int_binary(x, node, LITHE__BIN_ADD, B, zero, b);
    lithe_tensor_release(zero);
    return s;
}

enum { I_MAX, I_MIN, I_AND, I_OR, I_XOR, I_MOD, I_FMOD };
static lithe_status int_op(lithe__gexec *x, size_t node, int op, lithe_tensor *A, lithe_tensor *B, lithe_tensor **out) {
    lithe_tensor *a = NULL, *b = NULL;
    lithe_status s = int_bcast(x, node, A, B, &a, &b);
    if (s == LITHE_OK) s = new_i64(x, a->ndim, a->shape, out);
    for (int64_t i = 0; s == LITHE_OK && i < a->numel; i++) {
        int64_t u = ints(a)[i], v = ints(b)[i], *y = (int64_t *)lithe__tdata(*out) + i;
        switch (op) {
        case I_MAX: *y = u > v ? u : v; break;
        case I_MIN: *y = u < v ? u : v; break;
        case I_AND: *y = u && v; break;
        case I_OR: *y = u || v; break;
        case I_XOR: *y = !u != !v; break;
        default:
            if (v == 0 || (u == INT64_MIN && v == -1)) {
                s = fail(x, node, LITHE_ERR_VALUE, "integer Mod %lld %% %lld", (long long)u, (long long)v);
                break;
            }
            *y = u % v;
            if (op == I_MOD && *y != 0 && ((*y < 0) != (v < 0))) *y += v; /* the divisor's sign */
        }
    }
    lithe_tensor_release(a);
    lithe_tensor_release(b);
    if (s != LITHE_OK) {
        lithe_tensor_release(*out);
        *out = NULL;
    }
    return s;
}

/* A float 0 / 1 mask of a host boolean, on the backend; a float stays as it is. */
static lithe_status float_of(lithe__gexec *x, lithe_tensor *t, lithe_tensor **out) {
    if (!is_int(t)) {
        *out = lithe_tensor_retain(t);
        return LITHE_OK;
    }
    lithe_tensor *h = NULL;
    LITHE__TRY(lithe__gexec_alloc(x, lithe__backend_host(), LITHE_F32, t->ndim, t->shape, false, &h));
    for (int64_t i = 0; i < t->numel; i++) lithe__f32(h)[i] = (float)ints(t)[i];
    lithe_status s = lithe_tensor_to_backend(h, x->be, out);
    lithe_tensor_release(h);
    return s;
}

static lithe_status bshape(lithe__gexec *x, size_t node, lithe_tensor *A, lithe_tensor *B, int *nd, int64_t *shape) {
    return bcast_shape(x, node, A, B, nd, shape);
}

/* ---- variadic Max / Min / Sum / Mean ---- */

enum { V_MAX, V_MIN, V_SUM, V_MEAN };
static int vkind(const char *op) {
    return !strcmp(op, "Max") ? V_MAX : !strcmp(op, "Min") ? V_MIN : !strcmp(op, "Sum") ? V_SUM : V_MEAN;
}

/* Y = the pair's max (min): B where B > A (B < A) or B is NaN, else A, so a NaN stays NaN. */
static lithe_status pick(lithe__gexec *x, size_t node, bool mx, lithe_tensor *A, lithe_tensor *B, lithe_tensor **Y) {
    int nd = 0;
    int64_t shape[LITHE_MAX_DIMS];
    LITHE__TRY(bshape(x, node, A, B, &nd, shape));
    lithe_tensor *m = NULL, *e = NULL, *eb = NULL;
    lithe_status s = new_f32(x, nd, shape, false, &m);
    if (s == LITHE_OK) s = lithe__gexec_like(x, B, false, &eb);
    if (s == LITHE_OK) s = new_f32(x, nd, shape, false, &e);
    if (s == LITHE_OK) s = new_f32(x, nd, shape, false, Y);
    if (s == LITHE_OK) s = lithe__op_bcast_binary(x->be, mx ? LITHE__BIN_GREATER : LITHE__BIN_LESS, B, A, m);
    if (s == LITHE_OK) s = lithe__op_bcast_binary(x->be, LITHE__BIN_EQUAL, B, B, eb); /* 0 where B is NaN */
    if (s == LITHE_OK) s = lithe__op_broadcast_to(x->be, eb, -1.0f, 0.0f, e);
    if (s == LITHE_OK) s = lithe__op_axpby(x->be, 1.0f, e, 1.0f, m);
    if (s == LITHE_OK) s = lithe__op_fill(x->be, e, 1.0f);
    if (s == LITHE_OK) s = lithe__op_axpby(x->be, 1.0f, e, 1.0f, m); /* m = (B > A) + 1 - (B == B) */
    if (s == LITHE_OK) s = lithe__op_bcast_where(x->be, m, B, A, *Y);
    lithe_tensor_release(m);
    lithe_tensor_release(e);
    lithe_tensor_release(eb);
    return s;
}

FWD(f_variadic) {
    UNUSED_FWD;
    if (n_in < 1) return fail(x, node, LITHE_ERR_FORMAT, "needs at least one input");
    LITHE__TRY(need_inputs(x, node, in, n_in, n_in));
    int k = vkind(NODE(x, node)->op_type);
    bool all_int = true;
    for (size_t i = 0; i < n_in; i++) all_int = all_int && is_int(in[i]);
    lithe_tensor *Y = lithe_tensor_retain(in[0]);
    lithe_status s = LITHE_OK;
    if (all_int && k != V_MEAN) {
        for (size_t i = 1; s == LITHE_OK && i < n_in; i++) {
            lithe_tensor *t = NULL;
            s = k == V_SUM ? int_binary(x, node, LITHE__BIN_ADD, Y, in[i], &t) : int_op(x, node, k == V_MAX ? I_MAX : I_MIN, Y, in[i], &t);
            lithe_tensor_release(Y);
            Y = t;
        }
        out[0] = Y;
        return s;
    }
    for (size_t i = 0; i < n_in; i++)
        if ((s = need_float(x, node, in[i], i)) != LITHE_OK) break;
    for (size_t i = 1; s == LITHE_OK && i < n_in; i++) {
        lithe_tensor *t = NULL;
        if (k == V_MAX || k == V_MIN) s = pick(x, node, k == V_MAX, Y, in[i], &t);
        else {
            int nd = 0;
            int64_t shape[LITHE_MAX_DIMS];
            s = bshape(x, node, Y, in[i], &nd, shape);
            if (s == LITHE_OK) s = new_f32(x, nd, shape, false, &t);
            if (s == LITHE_OK) s = lithe__op_bcast_binary(x->be, LITHE__BIN_ADD, Y, in[i], t);
        }
        lithe_tensor_release(Y);
        Y = t;
    }
    if (s == LITHE_OK && (k == V_MEAN || n_in == 1)) { /* a fresh tensor (Y may be the input itself) */
        lithe_tensor *c = NULL, *t = NULL;
        s = scalar(x, k == V_MEAN ? 1.0f / (float)n_in : 1.0f, &c);
        if (s == LITHE_OK) s = lithe__gexec_like(x, Y, false, &t);
        if (s == LITHE_OK) s = lithe__op_bcast_binary(x->be, LITHE__BIN_MUL, Y, c, t);
        lithe_tensor_release(c);
        lithe_tensor_release(Y);
        Y = t;
    }
    if (s != LITHE_OK) lithe_tensor_release(Y);
    else out[0] = Y;
    return s;
}

/* Sum / Mean: dY (/ n) reduced to each input's shape. Max / Min: dY to the first input equal to Y. */
BWD(b_variadic) {
    UNUSED_BWD;
    int k = vkind(NODE(x, node)->op_type);
    lithe_tensor *Y = out[0], *dY = dout[0], *free_m = NULL, *e = NULL, *g = NULL;
    lithe_status s = LITHE_OK;
    if (k == V_MAX || k == V_MIN) {
        s = lithe__gexec_like(x, Y, false, &free_m);
        if (s == LITHE_OK) s = lithe__op_fill(x->be, free_m, 1.0f);
        if (s == LITHE_OK) s = lithe__gexec_like(x, Y, false, &e);
        if (s == LITHE_OK) s = lithe__gexec_like(x, Y, false, &g);
    }
    for (size_t i = 0; s == LITHE_OK && i < n_in; i++) {
        lithe_tensor *d = NULL;
        s = lithe__gexec_grad(x, node, i, &d);
        if (s != LITHE_OK) break;
        if (k == V_SUM || k == V_MEAN) {
            if (d) s = lithe__op_reduce_to(x->be, dY, k == V_MEAN ? 1.0f / (float)n_in : 1.0f, 1.0f, d);
            continue;
        }
        s = lithe__op_bcast_binary(x->be, LITHE__BIN_EQUAL, in[i], Y, e);
        if (s == LITHE_OK) s = lithe__op_mul(x->be, e, free_m, e);
        if (s == LITHE_OK) s = lithe__op_axpby(x->be, -1.0f, e, 1.0f, free_m);
        if (s == LITHE_OK && d) s = lithe__op_mul(x->be, e, dY, g);
        if (s == LITHE_OK && d) s = lithe__op_reduce_to(x->be, g, 1.0f, 1.0f, d);
    }
    lithe_tensor_release(free_m);
    lithe_tensor_release(e);
    lithe_tensor_release(g);
    return s;
}

/* ---- Mod: A - q B, q = floor(A / B) (fmod 0) or trunc(A / B) (fmod 1); saved[0] = q ---- */

FWD(f_mod) {
    (void)n_out;
    LITHE__TRY(need_inputs(x, node, in, n_in, 2));
    int64_t fm = attr_i(NODE(x, node), "fmod", 0);
    if (fm != 0 && fm != 1) return fail(x, node, LITHE_ERR_VALUE, "fmod %lld (0 or 1)", (long long)fm);
    if (is_int(in[0]) && is_int(in[1])) return int_op(x, node, fm ? I_FMOD : I_MOD, in[0], in[1], &out[0]);
    for (size_t k = 0; k < 2; k++) LITHE__TRY(need_float(x, node, in[k], k));
    int nd = 0;
    int64_t shape[LITHE_MAX_DIMS];
    LITHE__TRY(bshape(x, node, in[0], in[1], &nd, shape));
    lithe_tensor *q = NULL, *f = NULL, *c = NULL, *neg = NULL, *zero = NULL, *t = NULL;
    lithe_status s = new_f32(x, nd, shape, false, &q);
    if (s == LITHE_OK) s = new_f32(x, nd, shape, false, &f);
    if (s == LITHE_OK) s = new_f32(x, nd, shape, false, &out[0]);
    if (s == LITHE_OK) s = lithe__op_bcast_binary(x->be, LITHE__BIN_DIV, in[0], in[1], q);
    if (s == LITHE_OK) s = lithe__op_unary(x->be, LITHE__UN_FLOOR, q, f);
    if (s == LITHE_OK && fm) { /* trunc: ceil below zero */
        s = new_f32(x, nd, shape, false, &c);
        if (s == LITHE_OK) s = new_f32(x, nd, shape, false, &neg);
        if (s == LITHE_OK) s = scalar(x, 0.0f, &zero);
        if (s == LITHE_OK) s = lithe__op_unary(x->be, LITHE__UN_CEIL, q, c);
        if (s == LITHE_OK) s = lithe__op_bcast_binary(x->be, LITHE__BIN_LESS, q, zero, neg);
        if (s == LITHE_OK) s = lithe__op_bcast_where(x->be, neg, c, f, q);
    } else if (s == LITHE_OK) {
        s = lithe__op_copy(x->be, q, f);
    }
    if (s == LITHE_OK) s = new_f32(x, nd, shape, false, &t);
    if (s == LITHE_OK) s = lithe__op_bcast_binary(x->be, LITHE__BIN_MUL, q, in[1], t);
    if (s == LITHE_OK) s = lithe__op_bcast_binary(x->be, LITHE__BIN_SUB, in[0], t, out[0]);
    lithe_tensor_release(f);
    lithe_tensor_release(c);
    lithe_tensor_release(neg);
    lithe_tensor_release(zero);
    lithe_tensor_release(t);
    if (s == LITHE_OK) saved[0] = q;
    else lithe_tensor_release(q);
    return s;
}
BWD(b_mod) {
    UNUSED_BWD;
    lithe_tensor *dA = NULL, *dB = NULL, *t = NULL;
    LITHE__TRY(lithe__gexec_grad(x, node, 0, &dA));
    LITHE__TRY(lithe__gexec_grad(x, node, 1, &dB));
    lithe_status s = LITHE_OK;
    if (dA) s = lithe__op_reduce_to(x->be, dout[0], 1.0f, 1.0f, dA);
    if (s == LITHE_OK && dB && saved[0]) {
        s = lithe__gexec_like(x, dout[0], false, &t);
        if (s == LITHE_OK) s = lithe__op_mul(x->be, dout[0], saved[0], t);
        if (s == LITHE_OK) s = lithe__op_reduce_to(x->be, t, -1.0f, 1.0f, dB);
    }
    lithe_tensor_release(t);
    return s;
}

/* ---- And, Or, Xor ---- */

FWD(f_logic) {
    UNUSED_FWD;
    LITHE__TRY(need_inputs(x, node, in, n_in, 2));
    const char *op = NODE(x, node)->op_type;
    int k = !strcmp(op, "And") ? I_AND : !strcmp(op, "Or") ? I_OR : I_XOR;
    if (is_int(in[0]) && is_int(in[1])) return int_op(x, node, k, in[0], in[1], &out[0]);
    lithe_tensor *a = NULL, *b = NULL, *ab = NULL;
    int nd = 0;
    int64_t shape[LITHE_MAX_DIMS];
    lithe_status s = float_of(x, in[0], &a);
    if (s == LITHE_OK) s = float_of(x, in[1], &b);
    if (s == LITHE_OK) s = bshape(x, node, a, b, &nd, shape);
    if (s == LITHE_OK) s = new_f32(x, nd, shape, false, &out[0]);
    if (s == LITHE_OK) s = lithe__op_bcast_binary(x->be, LITHE__BIN_MUL, a, b, out[0]);
    if (s == LITHE_OK && k != I_AND) { /* Or: a + b - ab; Xor: a + b - 2ab */
        s = new_f32(x, nd, shape, false, &ab);
        if (s == LITHE_OK) s = lithe__op_bcast_binary(x->be, LITHE__BIN_ADD, a, b, ab);
        if (s == LITHE_OK) s = lithe__op_axpby(x->be, 1.0f, ab, k == I_OR ? -1.0f : -2.0f, out[0]);
    }
    lithe_tensor_release(a);
    lithe_tensor_release(b);
    lithe_tensor_release(ab);
    return s;
}

/* ---- IsNaN: 1 - (X == X); IsInf: X == +inf, X == -inf, or |X| == inf ---- */

FWD(f_isnan) {
    UNUSED_FWD;
    LITHE__TRY(need_inputs(x, node, in, n_in, 1));
    const lithe__onnx_node *n = NODE(x, node);
    if (is_int(in[0])) { /* integers are finite */
        LITHE__TRY(new_i64(x, in[0]->ndim, in[0]->shape, &out[0]));
        memset(lithe__tdata(out[0]), 0, (size_t)out[0]->numel * 8);
        return LITHE_OK;
    }
    LITHE__TRY(need_float(x, node, in[0], 0));
    LITHE__TRY(lithe__gexec_like(x, in[0], false, &out[0]));
    if (!strcmp(n->op_type, "IsNaN")) {
        lithe_tensor *one = NULL;
        lithe_status s = scalar(x, 1.0f, &one);
        if (s == LITHE_OK) s = lithe__op_bcast_binary(x->be, LITHE__BIN_EQUAL, in[0], in[0], out[0]);
        if (s == LITHE_OK) s = lithe__op_bcast_binary(x->be, LITHE__BIN_SUB, one, out[0], out[0]);
        lithe_tensor_release(one);
        return s;
    }
    bool pos = attr_i(n, "detect_positive", 1) != 0, neg = attr_i(n, "detect_negative", 1) != 0;
    if (!pos && !neg) return lithe__op_fill(x->be, out[0], 0.0f);
    lithe_tensor *inf = NULL, *a = NULL;
    lithe_status s = scalar(x, neg && !pos ? -INFINITY : INFINITY, &inf);
    if (s == LITHE_OK && pos && neg) s = lithe__gexec_like(x, in[0], false, &a);
    if (s == LITHE_OK && a) s = lithe__op_unary(x->be, LITHE__UN_ABS, in[0], a);
    if (s == LITHE_OK) s = lithe__op_bcast_binary(x->be, LITHE__BIN_EQUAL, a ? a : in[0], inf, out[0]);
    lithe_tensor_release(inf);
    lithe_tensor_release(a);
    return s;
}

/* ---- Hardmax: 1 at the first maximum along axis (opset < 13: of the input coerced to 2-D at axis) ---- */

FWD(f_hardmax) {
    UNUSED_FWD;
    LITHE__TRY(need_inputs(x, node, in, n_in, 1));
    LITHE__TRY(need_float(x, node, in[0], 0));
    lithe_tensor *X = in[0];
    if (X->ndim < 1) return fail(x, node, LITHE_ERR_SHAPE, "input must have rank >= 1");
    bool old = x->g->onnx.opset < 13;
    int64_t axis = 0, B = 1, R = 1, O = 1;
    LITHE__TRY(norm_axis(x, node, attr_i(NODE(x, node), "axis", old ? 1 : -1), X->ndim, false, &axis));
    for (int d = 0; d < X->ndim; d++) *(d < axis ? &B : (d == axis || old) ? &R : &O) *= X->shape[d];
    LITHE__TRY(lithe__gexec_like(x, X, false, &out[0]));
    if (!X->numel) return LITHE_OK;
    if (R > INT32_MAX) return fail(x, node, LITHE_ERR_UNSUPPORTED, "an axis of %lld", (long long)R);
    lithe_tensor *len = NULL, *Y = NULL, *which = NULL, *wh = NULL, *X2 = NULL, *h = NULL, *o = NULL;
    lithe_status s = lithe__gexec_alloc(x, lithe__backend_host(), LITHE_I32, 1, &B, false, &len);
    for (int64_t b = 0; s == LITHE_OK && b < B; b++) ((int32_t *)lithe__tdata(len))[b] = (int32_t)R;
    if (s == LITHE_OK) s = new_f32(x, 2, (int64_t[]){B, O}, false, &Y);
    if (s == LITHE_OK) s = lithe__gexec_alloc(x, x->be, LITHE_I32, 2, (int64_t[]){B, O}, false, &which);
    if (s == LITHE_OK) s = lithe_tensor_reshape(X, 2, (int64_t[]){B * R, O}, &X2);
    if (s == LITHE_OK) s = lithe__op_reduce_max(x->be, X2, len, Y, which);
    if (s == LITHE_OK) s = lithe_tensor_to_backend(which, NULL, &wh);
    if (s == LITHE_OK) s = lithe__gexec_alloc(x, lithe__backend_host(), LITHE_F32, X->ndim, X->shape, true, &h);
    for (int64_t b = 0; s == LITHE_OK && b < B; b++)
        for (int64_t j = 0; j < O; j++) lithe__f32(h)[(b * R + ((const int32_t *)lithe__tdata(wh))[b * O + j]) * O + j] = 1.0f;
    if (s == LITHE_OK) s = lithe_tensor_to_backend(h, x->be, &o);
    if (s == LITHE_OK) s = lithe__op_copy(x->be, out[0], o);
    lithe_tensor_release(len);
    lithe_tensor_release(Y);
    lithe_tensor_release(which);
    lithe_tensor_release(wh);
    lithe_tensor_release(X2);
    lithe_tensor_release(h);
    lithe_tensor_release(o);
    return s;
}
