/* Relu.v1: Y = relu(X·Wᵀ + b); with dropout, chain(relu, Dropout(rate)) as Thinc builds it. */
#include "dense.h"

typedef struct relu_bp {
    lithe_backprop base;
    lithe_tensor *X, *Y;
} relu_bp;

static const lithe__act relu_act = {.kind = LITHE__ACT_RELU};

static lithe_status relu_backward(lithe_backprop *self, const lithe_value *dYv, lithe_value **dX) {
    relu_bp *r = (relu_bp *)self;
    lithe_model *m = self->model;
    lithe_tensor *dY, *dZ, *dXt = NULL;
    LITHE__TRY(lithe__check_dY(m, dYv, r->Y->shape[0], r->Y->shape[1], &dY));
    LITHE__TRY(lithe__tensor_like(dY, false, &dZ));
    lithe_status s = lithe__op_act_backward(m->backend, &relu_act, dY, NULL, r->Y, dZ);
    if (s == LITHE_OK) s = lithe__affine_backward(m, r->X, dZ, dX ? &dXt : NULL);
    lithe_tensor_release(dZ);
    if (s != LITHE_OK) return s;
    return lithe__emit(dXt, dX);
}

static void relu_destroy(lithe_backprop *self) {
    relu_bp *r = (relu_bp *)self;
    lithe_tensor_release(r->X);
    lithe_tensor_release(r->Y);
}

static lithe_status relu_forward(lithe_model *m, const lithe_value *Xv, bool is_train, lithe_value **Yv,
                                 lithe_backprop **bp) {
    (void)is_train;
    lithe_tensor *X = NULL, *Y = NULL;
    LITHE__TRY(lithe__dense_input(m, Xv, &X));
    LITHE__TRY(lithe__affine_forward(m, X, &Y));
    lithe_status s = lithe__op_act(m->backend, &relu_act, Y, Y);
    if (s == LITHE_OK && bp) {
        s = lithe__backprop_new(m, sizeof(relu_bp), relu_backward, relu_destroy, bp);
        if (s == LITHE_OK) {
            relu_bp *r = (relu_bp *)*bp;
            r->X = lithe_tensor_retain(X);
            r->Y = lithe_tensor_retain(Y);
        }
    }
    if (s != LITHE_OK) {
        lithe_tensor_release(Y);
        return s;
    }
    s = lithe__value_wrap(Y, Yv);
    if (s != LITHE_OK && bp) {
        lithe_backprop_free(*bp);
        *bp = NULL;
    }
    return s;
}

static lithe_status relu_init(lithe_model *m, const lithe_value *X, const lithe_value *Y) {
    return lithe__affine_init(m, X, Y, true);
}

const lithe__layer_type lithe__relu_type = {"Relu.v1", relu_init, relu_forward};

lithe_status lithe__relu_node(const lithe_dense_opts *opts, lithe_model **out);

lithe_status lithe_relu(const lithe_dense_opts *opts, lithe_model **out) {
    LITHE__CHECK_ARG(out, "lithe_relu", "out is NULL");
    *out = NULL;
    if (opts && !(opts->dropout >= 0.0f && opts->dropout <= 1.0f))
        return lithe__fail(LITHE_ERR_VALUE, "relu: dropout %g outside [0, 1]", (double)opts->dropout);
    lithe_model *relu = NULL;
    LITHE__TRY(lithe__relu_node(opts, &relu));
    if (!opts || opts->dropout <= 0.0f) {
        *out = relu;
        return LITHE_OK;
    }
    lithe_model *drop = NULL;
    lithe_status s = lithe_dropout(opts->dropout, &drop);
    if (s != LITHE_OK) {
        lithe_model_free(relu);
        return s;
    }
    return lithe_chain(2, (lithe_model *[]){relu, drop}, out);
}
