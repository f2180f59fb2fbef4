/* LayerNorm.v1: Y = G * (X - mean) / sqrt(var + 1e-8) + b over each row of X (B, nI); G (nI,)
 * ones and b (nI,) zeros at init; nO = nI. The backward is Thinc's (layernorm.py). */
#include "dense.h"

typedef struct layernorm_bp {
    lithe_backprop base;
    lithe_tensor *X, *mean, *inv_std;
} layernorm_bp;

#define LAYERNORM_EPS 1e-8f /* Thinc adds 1e-08 to the variance */

static lithe_status layernorm_backward(lithe_backprop *self, const lithe_value *dYv, lithe_value **dX) {
    layernorm_bp *r = (layernorm_bp *)self;
    lithe_model *m = self->model;
    lithe_tensor *dY, *G = NULL, *gG = NULL, *gb = NULL, *out = NULL;
    LITHE__TRY(lithe__check_dY(m, dYv, r->X->shape[0], r->X->shape[1], &dY));
    LITHE__TRY(lithe__param_get(m, "G", &G));
    LITHE__TRY(lithe__grad_acc(m, "G", &gG));
    LITHE__TRY(lithe__grad_acc(m, "b", &gb));
    LITHE__TRY(lithe__tensor_like(dY, false, &out));
    lithe_status s = lithe__op_layernorm_backward(m->backend, dY, r->X, G, r->mean, r->inv_std, out, gG, gb);
    if (s != LITHE_OK || !dX) {
        lithe_tensor_release(out);
        return s;
    }
    return lithe__emit(out, dX);
}

static void layernorm_destroy(lithe_backprop *self) {
    layernorm_bp *r = (layernorm_bp *)self;
    lithe_tensor_release(r->X);
    lithe_tensor_release(r->mean);
    lithe_tensor_release(r->inv_std);
}

static lithe_status layernorm_forward(lithe_model *m, const lithe_value *Xv, bool is_train, lithe_value **Yv,
                                      lithe_backprop **bp) {
    (void)is_train;
    lithe_tensor *X = NULL, *G = NULL, *b = NULL, *Y = NULL, *mean = NULL, *inv_std = NULL;
    LITHE__TRY(lithe__dense_input(m, Xv, &X));
    LITHE__TRY(lithe__param_get(m, "G", &G));
    LITHE__TRY(lithe__param_get(m, "b", &b));
    if (G->ndim != 1 || b->ndim != 1 || b->shape[0] != G->shape[0])
        return lithe__fail(LITHE_ERR_SHAPE, "%s: params G and b must both be (nI,)", m->name);
    if (X->shape[1] != G->shape[0])
        return lithe__fail(LITHE_ERR_SHAPE, "%s: input width %lld does not match nI=%lld", m->name,
                           (long long)X->shape[1], (long long)G->shape[0]);
    if (X->storage->backend != m->backend)
        return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: input lives on backend '%s', the model on '%s'", m->name,
                           X->storage->backend->name, m->backend->name);
    int64_t B = X->shape[0];
    lithe_status s = lithe__tensor_like(X, false, &Y);
    if (s == LITHE_OK) s = lithe__tensor_alloc(m->backend, LITHE_F32, 1, &B, false, &mean);
    if (s == LITHE_OK) s = lithe__tensor_alloc(m->backend, LITHE_F32, 1, &B, false, &inv_std);
    if (s == LITHE_OK) s = lithe__op_layernorm(m->backend, X, G, b, LAYERNORM_EPS, Y, mean, inv_std);
    if (s == LITHE_OK && bp) {
        s = lithe__backprop_new(m, sizeof(layernorm_bp), layernorm_backward, layernorm_destroy, bp);
        if (s == LITHE_OK) {
            layernorm_bp *r = (layernorm_bp *)*bp;
            r->X = lithe_tensor_retain(X);
            r->mean = lithe_tensor_retain(mean);
            r->inv_std = lithe_tensor_retain(inv_std);
        }
    }
    lithe_tensor_release(mean);
    lithe_tensor_release(inv_std);
    return lithe__emit_output(s, Y, Yv, bp);
}

/* Thinc: nI and nO from X (else Y), set_dim semantics; nO defaults to nI. */
static lithe_status layernorm_init(lithe_model *m, const lithe_value *X, const lithe_value *Y) {
    const lithe_value *sample = X ? X : Y;
    if (sample) {
        const lithe_tensor *t = lithe_value_get_tensor(sample);
        int64_t w = t && t->ndim >= 1 ? t->shape[t->ndim - 1] : 0;
        if (w <= 0) return lithe__fail(LITHE_ERR_SHAPE, "%s: sample %s has no width", m->name, X ? "X" : "Y");
        LITHE__TRY(lithe__infer_dim(m, "nI", w, X ? "sample X" : "sample Y"));
        LITHE__TRY(lithe__infer_dim(m, "nO", w, X ? "sample X" : "sample Y"));
    }
    int64_t nI = lithe__dim_value(m, "nI");
    if (!nI) return lithe__fail(LITHE_ERR_STATE, "%s: cannot initialize: dim nI unset; pass sample X", m->name);
    if (!lithe__dim_value(m, "nO")) LITHE__TRY(lithe__infer_dim(m, "nO", nI, "nI"));
    lithe_tensor *G = NULL;
    LITHE__TRY(lithe__tensor_alloc(m->backend, LITHE_F32, 1, &nI, false, &G));
    lithe_status s = lithe__op_fill(m->backend, G, 1.0f);
    if (s == LITHE_OK) s = lithe_model_set_param(m, "G", G);
    lithe_tensor_release(G);
    if (s != LITHE_OK) return s;
    return lithe__param_init(m, "b", LITHE_INIT_ZERO, 1, &nI);
}

static const lithe__layer_type layernorm_type = {"LayerNorm.v1", layernorm_init, layernorm_forward, NULL, 0, 0};
const lithe__layer_type *const lithe__layernorm_types[] = {&layernorm_type, NULL};

lithe_status lithe_layernorm(int64_t nI, lithe_model **out) {
    LITHE__CHECK_ARG(out, "lithe_layernorm", "out is NULL");
    *out = NULL;
    if (nI < 0) return lithe__fail(LITHE_ERR_VALUE, "LayerNorm.v1: nI must be >= 0 (0 = unset), got %lld", (long long)nI);
    static const char *const dims[] = {"nI", "nO", NULL};
    static const char *const params[] = {"G", "b", NULL};
    LITHE__TRY(lithe__model_new(&layernorm_type, "layernorm", dims, params, out));
    (*out)->dims[0].value = nI;
    return LITHE_OK;
}
