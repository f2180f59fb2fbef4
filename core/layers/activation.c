/* Parameter-free activation layers: sigmoid_activation.v1, Logistic.v1 (Thinc's deprecated
 * alias, node "logistic") and tanh_activation.v1 on any float32 array, softmax_activation.v1 on
 * (B, N) rows. tanh_activation.v1 is lithe's own (Thinc 8.1.7 registers no tanh layer): the native
 * twin of an ONNX Tanh, Y = tanh(X), dX = dY (1 - Y²). Each type's `info` is its kind. */
#include "dense.h"

#include <string.h>

typedef struct act_bp {
    lithe_backprop base;
    lithe_tensor *Y;
} act_bp;

typedef struct act_kind {
    bool softmax;    /* rows of a (B, N) array; else elementwise `act` */
    lithe__act act;  /* its kind, read by the backend's act / act_backward */
} act_kind;

static const act_kind *kind_of(const lithe_model *m) { return m->type->info; }

static lithe_status act_backward(lithe_backprop *self, const lithe_value *dYv, lithe_value **dX) {
    act_bp *r = (act_bp *)self;
    lithe_model *m = self->model;
    const lithe_tensor *dY = lithe_value_get_tensor(dYv);
    if (!dY || dY->dtype != LITHE_F32 || dY->ndim != r->Y->ndim || dY->numel != r->Y->numel ||
        !lithe_tensor_is_contiguous(dY))
        return lithe__fail(LITHE_ERR_SHAPE, "%s: the gradient must be a contiguous float32 array shaped like the "
                                            "output (%lld elements)", m->name, (long long)r->Y->numel);
    for (int d = 0; d < dY->ndim; d++)
        if (dY->shape[d] != r->Y->shape[d])
            return lithe__fail(LITHE_ERR_SHAPE, "%s: gradient dim %d is %lld, output's is %lld", m->name, d,
                               (long long)dY->shape[d], (long long)r->Y->shape[d]);
    lithe_tensor *out = NULL;
    LITHE__TRY(lithe__tensor_like(dY, false, &out));
    const act_kind *k = kind_of(m);
    lithe_status s = k->softmax ? lithe__op_softmax_backward(m->backend, r->Y, dY, 1.0f, out)
                                : lithe__op_act_backward(m->backend, &k->act, dY, NULL, r->Y, out);
    if (s != LITHE_OK || !dX) {
        lithe_tensor_release(out);
        return s;
    }
    return lithe__emit(out, dX);
}

static void act_destroy(lithe_backprop *self) { lithe_tensor_release(((act_bp *)self)->Y); }

static lithe_status act_forward(lithe_model *m, const lithe_value *Xv, bool is_train, lithe_value **Yv,
                                lithe_backprop **bp) {
    (void)is_train;
    const lithe_tensor *X = lithe_value_get_tensor(Xv);
    if (!X || X->dtype != LITHE_F32)
        return lithe__fail(LITHE_ERR_DTYPE, "%s: expected a float32 array", m->name);
    const act_kind *k = kind_of(m);
    if (k->softmax && X->ndim != 2)
        return lithe__fail(LITHE_ERR_SHAPE, "%s: expected a 2-D array, got %d-D", m->name, X->ndim);
    if (!lithe_tensor_is_contiguous(X))
        return lithe__fail(LITHE_ERR_SHAPE, "%s: input must be contiguous (copy the view first)", m->name);
    if (X->storage->backend != m->backend)
        return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: input lives on backend '%s', the model on '%s'", m->name,
                           X->storage->backend->name, m->backend->name);
    lithe_tensor *Y = NULL;
    LITHE__TRY(lithe__tensor_like(X, false, &Y));
    lithe_status s = k->softmax ? lithe__op_softmax(m->backend, X, 1.0f, Y) : lithe__op_act(m->backend, &k->act, X, Y);
    if (s == LITHE_OK && bp) {
        s = lithe__backprop_new(m, sizeof(act_bp), act_backward, act_destroy, bp);
        if (s == LITHE_OK) ((act_bp *)*bp)->Y = lithe_tensor_retain(Y);
    }
    return lithe__emit_output(s, Y, Yv, bp);
}

static const act_kind sigmoid = {false, {.kind = LITHE__ACT_SIGMOID}}, tanh_ = {false, {.kind = LITHE__ACT_TANH}},
                      softmax = {true, {0}};
static const struct {
    lithe__layer_type type;
    const char *node;
} acts[] = {
    {{"sigmoid_activation.v1", NULL, act_forward, &sigmoid, 0, 0}, "sigmoid_activation"},
    {{"Logistic.v1", NULL, act_forward, &sigmoid, 0, 0}, "logistic"},
    {{"softmax_activation.v1", NULL, act_forward, &softmax, 0, 0}, "softmax_activation"},
    {{"tanh_activation.v1", NULL, act_forward, &tanh_, 0, 0}, "tanh_activation"},
};

const lithe__layer_type *const lithe__activation_types[] = {&acts[0].type, &acts[1].type, &acts[2].type,
                                                            &acts[3].type, NULL};

/* lithe_layer_new's constructor for the types without one of their own (tanh_activation.v1) */
lithe_status lithe__activation_new(const lithe__layer_type *type, lithe_model **out) {
    for (size_t i = 0; i < sizeof acts / sizeof acts[0]; i++)
        if (&acts[i].type == type) return lithe__model_new(type, acts[i].node, NULL, NULL, out);
    return lithe__fail(LITHE_ERR_VALUE, "lithe__activation_new: '%s' is not an activation", type->registered_name);
}

lithe_status lithe_activation(const char *layer, lithe_model **out) {
    LITHE__CHECK_ARG(out, "lithe_activation", "out is NULL");
    *out = NULL;
    LITHE__CHECK_ARG(layer, "lithe_activation", "layer is NULL");
    for (size_t i = 0; i < sizeof acts / sizeof acts[0]; i++)
        if (strcmp(acts[i].type.registered_name, layer) == 0)
            return lithe__model_new(&acts[i].type, acts[i].node, NULL, NULL, out);
    return lithe__fail(LITHE_ERR_VALUE,
                       "lithe_activation: unknown layer '%s' (known: sigmoid_activation.v1, Logistic.v1, "
                       "softmax_activation.v1, tanh_activation.v1)",
                       layer);
}
