/* Linear.v1: Y = X·Wᵀ + b. X: (B, nI), W: (nO, nI), b: (nO,) -> Y: (B, nO). */
#include "dense.h"

typedef struct linear_bp {
    lithe_backprop base;
    lithe_tensor *X;
    int64_t B, nO;
} linear_bp;

static lithe_status linear_backward(lithe_backprop *self, const lithe_value *dYv, lithe_value **dX) {
    linear_bp *r = (linear_bp *)self;
    lithe_tensor *dY, *dXt = NULL;
    LITHE__TRY(lithe__check_dY(self->model, dYv, r->B, r->nO, &dY));
    LITHE__TRY(lithe__affine_backward(self->model, r->X, dY, dX ? &dXt : NULL));
    return lithe__emit(dXt, dX);
}

static void linear_destroy(lithe_backprop *self) { lithe_tensor_release(((linear_bp *)self)->X); }

static lithe_status linear_forward(lithe_model *m, const lithe_value *Xv, bool is_train, lithe_value **Yv,
                                   lithe_backprop **bp) {
    (void)is_train;
    lithe_tensor *X = NULL, *Y = NULL;
    LITHE__TRY(lithe__dense_input(m, Xv, &X));
    LITHE__TRY(lithe__affine_forward(m, X, &Y));
    if (bp) {
        lithe_status s = lithe__backprop_new(m, sizeof(linear_bp), linear_backward, linear_destroy, bp);
        if (s != LITHE_OK) {
            lithe_tensor_release(Y);
            return s;
        }
        linear_bp *r = (linear_bp *)*bp;
        r->X = lithe_tensor_retain(X);
        r->B = Y->shape[0];
        r->nO = Y->shape[1];
    }
    lithe_status s = lithe__value_wrap(Y, Yv);
    if (s != LITHE_OK && bp) {
        lithe_backprop_free(*bp);
        *bp = NULL;
    }
    return s;
}

static lithe_status linear_init(lithe_model *m, const lithe_value *X, const lithe_value *Y) {
    return lithe__affine_init(m, X, Y, true);
}

const lithe__layer_type lithe__linear_type = {"Linear.v1", linear_init, linear_forward};

static const char *const dense_dims[] = {"nO", "nI", NULL};
static const char *const dense_params[] = {"W", "b", NULL};

static lithe_status dense_new(const lithe__layer_type *type, const char *name, const lithe_dense_opts *o,
                              lithe_model **out) {
    if (o && (o->nO < 0 || o->nI < 0))
        return lithe__fail(LITHE_ERR_VALUE, "%s: nO and nI must be >= 0 (0 = unset), got %lld and %lld", name,
                           (long long)o->nO, (long long)o->nI);
    LITHE__TRY(lithe__model_new(type, name, dense_dims, dense_params, out));
    if (o) {
        (*out)->dims[0].value = o->nO;
        (*out)->dims[1].value = o->nI;
    }
    return LITHE_OK;
}

lithe_status lithe_linear(const lithe_dense_opts *opts, lithe_model **out) {
    LITHE__CHECK_ARG(out, "lithe_linear", "out is NULL");
    *out = NULL;
    return dense_new(&lithe__linear_type, "linear", opts, out);
}

/* Relu.v1 is built here too: the same node with a different forward. */
lithe_status lithe__relu_node(const lithe_dense_opts *opts, lithe_model **out);
lithe_status lithe__relu_node(const lithe_dense_opts *opts, lithe_model **out) {
    return dense_new(&lithe__relu_type, "relu", opts, out);
}
