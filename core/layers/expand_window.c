/* expand_window.v1: each row concatenated with the `window_size` rows before and after it in its
 * own sequence (Thinc's seq2col): (N, I) -> (N, (2 nW + 1) I), zeros past a sequence's ends.
 * Takes a 2-d array (one sequence) or a Ragged value (sequence boundaries from its lengths). */
#include "../internal.h"

typedef struct window_bp {
    lithe_backprop base;
    lithe_tensor *lengths; /* host int32 */
    bool ragged;
    int64_t N, I;
} window_bp;

static lithe_status window_size(const lithe_model *m, int64_t *nW) {
    LITHE__TRY(lithe_model_get_attr_int(m, "window_size", nW));
    if (*nW < 0 || *nW > 1024)
        return lithe__fail(LITHE_ERR_VALUE, "%s: window_size %lld outside 0..1024", m->name, (long long)*nW);
    return LITHE_OK;
}

static lithe_status contiguous(lithe_model *m, lithe_tensor *X, lithe_tensor **out) {
    if (lithe_tensor_is_contiguous(X)) {
        *out = lithe_tensor_retain(X);
        return LITHE_OK;
    }
    LITHE__TRY(lithe__tensor_like(X, false, out));
    lithe_status s = lithe__op_copy(m->backend, *out, X);
    if (s != LITHE_OK) {
        lithe_tensor_release(*out);
        *out = NULL;
    }
    return s;
}

static lithe_status wrap(bool ragged, lithe_tensor *T, lithe_tensor *lengths, lithe_value **out) {
    lithe_status s = ragged ? lithe_value_ragged(T, lengths, out) : lithe_value_tensor(T, out);
    lithe_tensor_release(T);
    return s;
}

static lithe_status window_backward(lithe_backprop *self, const lithe_value *dYv, lithe_value **dX) {
    lithe_model *m = self->model;
    window_bp *r = (window_bp *)self;
    int64_t nW = 0;
    LITHE__TRY(window_size(m, &nW));
    if (dYv->kind != (r->ragged ? LITHE_VALUE_RAGGED : LITHE_VALUE_TENSOR))
        return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: the gradient is not of the output's kind", m->name);
    lithe_tensor *dY = dYv->t[0];
    int64_t cols = (2 * nW + 1) * r->I;
    if (dY->dtype != LITHE_F32 || dY->ndim != 2 || dY->shape[0] != r->N || dY->shape[1] != cols)
        return lithe__fail(LITHE_ERR_SHAPE, "%s: expected a (%lld, %lld) float32 gradient", m->name, (long long)r->N,
                           (long long)cols);
    if (!dX) return LITHE_OK;
    lithe_tensor *c = NULL, *d = NULL;
    LITHE__TRY(contiguous(m, dY, &c));
    lithe_status s = lithe__tensor_alloc(m->backend, LITHE_F32, 2, (int64_t[]){r->N, r->I}, true, &d);
    if (s == LITHE_OK && r->N && r->I) s = lithe__op_seq2col_backward(m->backend, c, nW, r->lengths, d);
    lithe_tensor_release(c);
    if (s != LITHE_OK) {
        lithe_tensor_release(d);
        return s;
    }
    return wrap(r->ragged, d, r->lengths, dX);
}

static void window_destroy(lithe_backprop *self) { lithe_tensor_release(((window_bp *)self)->lengths); }

static lithe_status window_forward(lithe_model *m, const lithe_value *X, bool is_train, lithe_value **Y,
                                   lithe_backprop **bp) {
    (void)is_train;
    int64_t nW = 0;
    LITHE__TRY(window_size(m, &nW));
    if (X->kind != LITHE_VALUE_TENSOR && X->kind != LITHE_VALUE_RAGGED)
        return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: expected a 2-d array or a Ragged value", m->name);
    bool ragged = X->kind == LITHE_VALUE_RAGGED;
    lithe_tensor *data = X->t[0];
    if (data->dtype != LITHE_F32 || data->ndim != 2) {
        char a[LITHE__SHAPE_BUF];
        return lithe__fail(LITHE_ERR_SHAPE, "%s: expected 2-d float32 data, got %s %s", m->name,
                           lithe_dtype_name(data->dtype), lithe__shape_str(data, a, sizeof a));
    }
    int64_t N = data->shape[0], I = data->shape[1];
    if (!ragged && N > INT32_MAX) return lithe__fail(LITHE_ERR_SHAPE, "%s: %lld rows are too many", m->name, (long long)N);
    lithe_tensor *lengths = NULL, *c = NULL, *out = NULL;
    lithe_status s = ragged ? LITHE_OK : lithe__host_i32(1, (const int32_t[]){(int32_t)N}, &lengths);
    if (ragged) lengths = lithe_tensor_retain(X->t[1]);
    if (s == LITHE_OK) s = contiguous(m, data, &c);
    if (s == LITHE_OK) s = lithe__tensor_alloc(m->backend, LITHE_F32, 2, (int64_t[]){N, (2 * nW + 1) * I}, true, &out);
    if (s == LITHE_OK && N && I) s = lithe__op_seq2col(m->backend, c, nW, lengths, out);
    lithe_tensor_release(c);
    if (s == LITHE_OK && bp) {
        s = lithe__backprop_new(m, sizeof(window_bp), window_backward, window_destroy, bp);
        if (s == LITHE_OK) {
            window_bp *r = (window_bp *)*bp;
            r->lengths = lithe_tensor_retain(lengths);
            r->ragged = ragged;
            r->N = N;
            r->I = I;
        }
    }
    if (s == LITHE_OK) {
        s = wrap(ragged, out, lengths, Y);
        out = NULL;
        if (s != LITHE_OK && bp) {
            lithe_backprop_free(*bp);
            *bp = NULL;
        }
    }
    lithe_tensor_release(out);
    lithe_tensor_release(lengths);
    return s;
}

static const lithe__layer_type window_type = {"expand_window.v1", NULL, window_forward, NULL, 0, 0};
const lithe__layer_type *const lithe__window_types[] = {&window_type, NULL};

lithe_status lithe_expand_window(int64_t window_size, lithe_model **out) {
    LITHE__CHECK_ARG(out, "expand_window", "out is NULL");
    *out = NULL;
    if (window_size < 0 || window_size > 1024)
        return lithe__fail(LITHE_ERR_VALUE, "expand_window: window_size %lld outside 0..1024", (long long)window_size);
    lithe_model *m = NULL;
    LITHE__TRY(lithe__model_new(&window_type, "expand_window", NULL, NULL, &m));
    lithe_status s = lithe_model_set_attr_int(m, "window_size", window_size);
    if (s != LITHE_OK) {
        lithe_model_free(m);
        return s;
    }
    *out = m;
    return LITHE_OK;
}
