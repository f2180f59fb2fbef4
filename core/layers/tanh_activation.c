/* tanh_activation.v1: Y = tanh(X) on any float32 array, parameter-free, with dX = dY (1 - Y²).
 * lithe's own (Thinc 8.1.7 registers no tanh layer): the native twin of an ONNX Tanh. */
#include "dense.h"

typedef struct tanh_bp {
    lithe_backprop base;
    lithe_tensor *Y;
} tanh_bp;

static const lithe__act tanh_act = {.kind = LITHE__ACT_TANH};

static lithe_status tanh_backward(lithe_backprop *self, const lithe_value *dYv, lithe_value **dX) {
    tanh_bp *r = (tanh_bp *)self;
    const lithe_tensor *dY = lithe_value_get_tensor(dYv);
    bool same = dY && dY->dtype == LITHE_F32 && dY->ndim == r->Y->ndim && lithe_tensor_is_contiguous(dY);
    for (int d = 0; same && d < dY->ndim; d++) same = dY->shape[d] == r->Y->shape[d];
    if (!same)
        return lithe__fail(LITHE_ERR_SHAPE, "%s: the gradient must be a contiguous float32 array shaped like the "
                                            "output", self->model->name);
    lithe_tensor *out = NULL;
    LITHE__TRY(lithe__tensor_like(dY, false, &out));
    lithe_status s = lithe__op_act_backward(self->model->backend, &tanh_act, dY, NULL, r->Y, out);
    if (s != LITHE_OK || !dX) {
        lithe_tensor_release(out);
        return s;
    }
    return lithe__emit(out, dX);
}

static void tanh_destroy(lithe_backprop *self) { lithe_tensor_release(((tanh_bp *)self)->Y); }

static lithe_status tanh_forward(lithe_model *m, const lithe_value *Xv, bool is_train, lithe_value **Yv,
                                 lithe_backprop **bp) {
    (void)is_train;
    const lithe_tensor *X = lithe_value_get_tensor(Xv);
    if (!X || X->dtype != LITHE_F32) return lithe__fail(LITHE_ERR_DTYPE, "%s: expected a float32 array", m->name);
    if (!lithe_tensor_is_contiguous(X))
        return lithe__fail(LITHE_ERR_SHAPE, "%s: input must be contiguous (copy the view first)", m->name);
    if (X->storage->backend != m->backend)
        return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: input lives on backend '%s', the model on '%s'", m->name,
                           X->storage->backend->name, m->backend->name);
    lithe_tensor *Y = NULL;
    LITHE__TRY(lithe__tensor_like(X, false, &Y));
    lithe_status s = lithe__op_act(m->backend, &tanh_act, X, Y);
    if (s == LITHE_OK && bp) {
        s = lithe__backprop_new(m, sizeof(tanh_bp), tanh_backward, tanh_destroy, bp);
        if (s == LITHE_OK) ((tanh_bp *)*bp)->Y = lithe_tensor_retain(Y);
    }
    return lithe__emit_output(s, Y, Yv, bp);
}

lithe_status lithe__tanh_activation_new(const lithe__layer_type *type, lithe_model **out) {
    return lithe__model_new(type, "tanh_activation", NULL, NULL, out);
}

static const lithe__layer_type tanh_type = {"tanh_activation.v1", NULL, tanh_forward, NULL, 0, 0};
const lithe__layer_type *const lithe__tanh_activation_types[] = {&tanh_type, NULL};
