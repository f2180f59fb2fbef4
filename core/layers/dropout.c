/* Dropout.v1: at training, Y = X * mask with mask = (u >= rate) / (1 - rate), u from the node's
 * Philox stream; identity at predict time, at rate 0, or when is_enabled is false.
 * Arrays, Ragged and Padded (the mask covers their data), as Thinc. */
#include "../internal.h"

typedef struct dropout_bp {
    lithe_backprop base;
    lithe_tensor *mask;
    lithe_value_kind kind;
} dropout_bp;

static lithe_status apply_mask(lithe_model *m, const lithe_value *v, lithe_tensor *mask, lithe_value **out) {
    lithe_tensor *data = v->t[0], *y;
    if (!lithe__same_shape(data, mask)) {
        char a[LITHE__SHAPE_BUF], b[LITHE__SHAPE_BUF];
        return lithe__fail(LITHE_ERR_SHAPE, "%s: gradient shape %s does not match output shape %s", m->name,
                           lithe__shape_str(data, a, sizeof a), lithe__shape_str(mask, b, sizeof b));
    }
    if (!lithe_tensor_is_contiguous(data))
        return lithe__fail(LITHE_ERR_SHAPE, "%s: data must be contiguous", m->name);
    LITHE__TRY(lithe__tensor_like(data, false, &y));
    lithe_status s = lithe__op_mul(m->backend, data, mask, y);
    if (s == LITHE_OK) {
        switch (v->kind) {
        case LITHE_VALUE_RAGGED: s = lithe_value_ragged(y, v->t[1], out); break;
        case LITHE_VALUE_PADDED: s = lithe_value_padded(y, v->t[1], v->t[2], v->t[3], out); break;
        default: s = lithe_value_tensor(y, out); break;
        }
    }
    lithe_tensor_release(y);
    return s;
}

static lithe_status dropout_backward(lithe_backprop *self, const lithe_value *dY, lithe_value **dX) {
    dropout_bp *r = (dropout_bp *)self;
    if (dY->kind != r->kind)
        return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: gradient is not of the output's kind", self->model->name);
    lithe_value *out = NULL;
    LITHE__TRY(apply_mask(self->model, dY, r->mask, &out));
    if (dX) *dX = out;
    else lithe_value_release(out);
    return LITHE_OK;
}

static void dropout_destroy(lithe_backprop *self) { lithe_tensor_release(((dropout_bp *)self)->mask); }

static lithe_status dropout_forward(lithe_model *m, const lithe_value *X, bool is_train, lithe_value **Y,
                                    lithe_backprop **bp) {
    double rate = 0.0;
    bool enabled = false;
    LITHE__TRY(lithe_model_get_attr_float(m, "dropout_rate", &rate));
    LITHE__TRY(lithe_model_get_attr_bool(m, "is_enabled", &enabled));
    if (!(rate >= 0.0 && rate <= 1.0))
        return lithe__fail(LITHE_ERR_VALUE, "%s: dropout_rate %g outside [0, 1]", m->name, rate);
    if (rate == 0.0 || !enabled || !is_train) {
        if (bp) LITHE__TRY(lithe__backprop_identity(m, bp));
        *Y = lithe_value_retain((lithe_value *)X);
        return LITHE_OK;
    }
    if (X->kind == LITHE_VALUE_LIST || X->kind == LITHE_VALUE_TUPLE)
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "%s: lists arrive with the sequence layers", m->name);
    lithe_tensor *data = X->t[0], *mask;
    if (data->dtype != LITHE_F32)
        return lithe__fail(LITHE_ERR_DTYPE, "%s: expected float32 data, got %s", m->name, lithe_dtype_name(data->dtype));
    LITHE__TRY(lithe__tensor_alloc(m->backend, LITHE_F32, data->ndim, data->shape, false, &mask));
    lithe_status s = lithe__op_dropout_mask(m->backend, m->rng.key, m->rng.counter, (float)rate, mask);
    if (s == LITHE_OK) s = apply_mask(m, X, mask, Y);
    if (s == LITHE_OK && bp) {
        s = lithe__backprop_new(m, sizeof(dropout_bp), dropout_backward, dropout_destroy, bp);
        if (s == LITHE_OK) {
            ((dropout_bp *)*bp)->mask = lithe_tensor_retain(mask);
            ((dropout_bp *)*bp)->kind = X->kind;
        } else {
            lithe_value_release(*Y);
            *Y = NULL;
        }
    }
    if (s == LITHE_OK) m->rng.counter += ((uint64_t)mask->numel + 3) / 4; /* only a completed call consumes */
    lithe_tensor_release(mask);
    return s;
}

const lithe__layer_type lithe__dropout_type = {"Dropout.v1", NULL, dropout_forward, NULL, 0, 0};
const lithe__layer_type *const lithe__dropout_types[] = {&lithe__dropout_type, NULL};

lithe_status lithe_dropout(float rate, lithe_model **out) {
    LITHE__CHECK_ARG(out, "lithe_dropout", "out is NULL");
    *out = NULL;
    if (!(rate >= 0.0f && rate <= 1.0f))
        return lithe__fail(LITHE_ERR_VALUE, "dropout: rate %g outside [0, 1]", (double)rate);
    lithe_model *m = NULL;
    LITHE__TRY(lithe__model_new(&lithe__dropout_type, "dropout", NULL, NULL, &m));
    lithe_status s = lithe_model_set_attr_float(m, "dropout_rate", rate);
    if (s == LITHE_OK) s = lithe_model_set_attr_bool(m, "is_enabled", true);
    if (s != LITHE_OK) {
        lithe_model_free(m);
        return s;
    }
    *out = m;
    return LITHE_OK;
}
