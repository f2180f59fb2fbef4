/* Maxout.v1: Z = X·W'ᵀ + b' with W (nO, nP, nI) read as (nO*nP, nI) and b (nO, nP) as (nO*nP,);
 * Y (B, nO) = max over the nP pieces of Z viewed as (B, nO, nP); the first maximum wins. */
#include "dense.h"

typedef struct maxout_bp {
    lithe_backprop base;
    lithe_tensor *X, *which;
    int64_t B, nO, nP;
} maxout_bp;

/* W and b as the 2-D / 1-D views the affine machinery expects (shared storage). */
static lithe_status flat_params(lithe_model *m, lithe_tensor **W2, lithe_tensor **b1) {
    lithe_tensor *W = NULL, *b = NULL;
    LITHE__TRY(lithe__param_get(m, "W", &W));
    LITHE__TRY(lithe__param_get(m, "b", &b));
    if (W->ndim != 3 || b->ndim != 2 || b->shape[0] != W->shape[0] || b->shape[1] != W->shape[1])
        return lithe__fail(LITHE_ERR_SHAPE, "%s: W must be (nO, nP, nI) and b (nO, nP)", m->name);
    LITHE__TRY(lithe_tensor_reshape(W, 2, (int64_t[]){W->shape[0] * W->shape[1], W->shape[2]}, W2));
    lithe_status s = lithe_tensor_reshape(b, 1, (int64_t[]){b->numel}, b1);
    if (s != LITHE_OK) lithe_tensor_release(*W2);
    return s;
}

static lithe_status maxout_backward(lithe_backprop *self, const lithe_value *dYv, lithe_value **dX) {
    maxout_bp *r = (maxout_bp *)self;
    lithe_model *m = self->model;
    lithe_tensor *dY, *dZ = NULL, *W2 = NULL, *b1 = NULL, *gW = NULL, *gb = NULL, *gW2 = NULL, *gb1 = NULL,
                      *out = NULL;
    LITHE__TRY(lithe__check_dY(m, dYv, r->B, r->nO, &dY));
    LITHE__TRY(flat_params(m, &W2, &b1));
    lithe_status s = lithe__tensor_alloc(m->backend, LITHE_F32, 3, (int64_t[]){r->B, r->nO, r->nP}, false, &dZ);
    if (s == LITHE_OK) s = lithe__op_maxout_backward(m->backend, dY, r->which, dZ);
    /* NULL when frozen: no buffer, no work */
    if (s == LITHE_OK) s = lithe__grad_acc_trainable(m, "b", &gb);
    if (s == LITHE_OK) s = lithe__grad_acc_trainable(m, "W", &gW);
    if (s == LITHE_OK && gW) s = lithe_tensor_reshape(gW, 2, W2->shape, &gW2);
    if (s == LITHE_OK && gb) s = lithe_tensor_reshape(gb, 1, b1->shape, &gb1);
    lithe_tensor *dZ2 = NULL;
    if (s == LITHE_OK) s = lithe_tensor_reshape(dZ, 2, (int64_t[]){r->B, r->nO * r->nP}, &dZ2);
    if (s == LITHE_OK && gb1) s = lithe__op_sum_rows(m->backend, dZ2, 1.0f, gb1);
    if (s == LITHE_OK && gW2) s = lithe__op_gemm(m->backend, true, false, 1.0f, dZ2, r->X, 1.0f, gW2);
    if (s == LITHE_OK && dX) {
        s = lithe__tensor_alloc(m->backend, LITHE_F32, 2, r->X->shape, false, &out);
        if (s == LITHE_OK) s = lithe__op_gemm(m->backend, false, false, 1.0f, dZ2, W2, 0.0f, out);
    }
    lithe__lora_ad ad;
    bool lora = false;
    if (s == LITHE_OK) s = lithe__lora_of(m, lithe__model_find_param(m, "W"), &ad, &lora);
    if (s == LITHE_OK && lora) s = lithe__lora_backward(m, &ad, r->X, dZ2, out, 1.0f); /* W read as (nO·nP, nI) */
    lithe_tensor *tmp[] = {dZ, dZ2, W2, b1, gW2, gb1};
    for (size_t i = 0; i < sizeof tmp / sizeof tmp[0]; i++) lithe_tensor_release(tmp[i]);
    if (s != LITHE_OK) {
        lithe_tensor_release(out);
        return s;
    }
    return dX ? lithe__emit(out, dX) : LITHE_OK;
}

static void maxout_destroy(lithe_backprop *self) {
    maxout_bp *r = (maxout_bp *)self;
    lithe_tensor_release(r->X);
    lithe_tensor_release(r->which);
}

static lithe_status maxout_forward(lithe_model *m, const lithe_value *Xv, bool is_train, lithe_value **Yv,
                                   lithe_backprop **bp) {
    lithe_tensor *X = NULL, *W2 = NULL, *b1 = NULL, *Z = NULL, *Z3 = NULL, *Y = NULL, *which = NULL;
    LITHE__TRY(lithe__dense_input(m, Xv, &X));
    LITHE__TRY(flat_params(m, &W2, &b1));
    int64_t nO = lithe__dim_value(m, "nO"), nP = lithe__dim_value(m, "nP"), nI = W2->shape[1], B = X->shape[0];
    lithe_status s = LITHE_OK;
    if (nO <= 0 || nP <= 0 || nO > INT64_MAX / nP || nO * nP != W2->shape[0])
        s = lithe__fail(LITHE_ERR_SHAPE, "%s: W holds %lld rows, dims nO=%lld x nP=%lld", m->name,
                        (long long)W2->shape[0], (long long)nO, (long long)nP);
    if (s == LITHE_OK && X->shape[1] != nI)
        s = lithe__fail(LITHE_ERR_SHAPE, "%s: input width %lld does not match nI=%lld", m->name, (long long)X->shape[1],
                        (long long)nI);
    if (s == LITHE_OK && X->storage->backend != m->backend)
        s = lithe__fail(LITHE_ERR_INVALID_ARG, "%s: input lives on backend '%s', the model on '%s'", m->name,
                        X->storage->backend->name, m->backend->name);
    if (s == LITHE_OK) s = lithe__tensor_alloc(m->backend, LITHE_F32, 2, (int64_t[]){B, nO * nP}, false, &Z);
    /* Z = X·W2ᵀ + b1, the bias added as each tile is written */
    if (s == LITHE_OK) s = lithe__gemm_bias_act_w(m->backend, is_train, false, true, X, W2, b1, NULL, NULL, Z);
    lithe__lora_ad ad;
    bool lora = false;
    if (s == LITHE_OK) s = lithe__lora_of(m, lithe__model_find_param(m, "W"), &ad, &lora);
    if (s == LITHE_OK && lora) s = lithe__lora_forward(m, &ad, X, Z, 1.0f); /* Z += s·(X·Aᵀ)·Bᵀ */
    if (s == LITHE_OK) s = lithe_tensor_reshape(Z, 3, (int64_t[]){B, nO, nP}, &Z3);
    if (s == LITHE_OK) s = lithe__tensor_alloc(m->backend, LITHE_F32, 2, (int64_t[]){B, nO}, false, &Y);
    if (s == LITHE_OK) s = lithe__tensor_alloc(m->backend, LITHE_I32, 2, (int64_t[]){B, nO}, false, &which);
    if (s == LITHE_OK) s = lithe__op_maxout(m->backend, Z3, Y, which);
    if (s == LITHE_OK && bp) {
        s = lithe__backprop_new(m, sizeof(maxout_bp), maxout_backward, maxout_destroy, bp);
        if (s == LITHE_OK) {
            maxout_bp *r = (maxout_bp *)*bp;
            r->X = lithe_tensor_retain(X);
            r->which = lithe_tensor_retain(which);
            r->B = B;
            r->nO = nO;
            r->nP = nP;
        }
    }
    lithe_tensor *tmp[] = {W2, b1, Z, Z3, which};
    for (size_t i = 0; i < sizeof tmp / sizeof tmp[0]; i++) lithe_tensor_release(tmp[i]);
    return lithe__emit_output(s, Y, Yv, bp);
}

static lithe_status maxout_init(lithe_model *m, const lithe_value *X, const lithe_value *Y) {
    LITHE__TRY(lithe__affine_dims(m, X, Y, true));
    int64_t nO = lithe__dim_value(m, "nO"), nP = lithe__dim_value(m, "nP"), nI = lithe__dim_value(m, "nI");
    if (nP <= 0) return lithe__fail(LITHE_ERR_STATE, "%s: dim nP is unset", m->name);
    /* Thinc passes the 3-D shape to init_W: glorot's fan is nO + nP (its quirk, kept) */
    LITHE__TRY(lithe__param_init(m, "W", m->init_W ? m->init_W : LITHE_INIT_GLOROT_UNIFORM, 3,
                                 (int64_t[]){nO, nP, nI}));
    return lithe__param_init(m, "b", m->init_b ? m->init_b : LITHE_INIT_ZERO, 2, (int64_t[]){nO, nP});
}

static const lithe__layer_type maxout_type = {"Maxout.v1", maxout_init, maxout_forward, NULL, 0, 0};
const lithe__layer_type *const lithe__maxout_types[] = {&maxout_type, NULL};

lithe_status lithe__maxout_new(const lithe_dense_opts *o, lithe_model **out) {
    LITHE__TRY(lithe__dense_check_opts("Maxout.v1", o, true));
    if (o && o->nP < 0)
        return lithe__fail(LITHE_ERR_VALUE, "Maxout.v1: nP must be >= 0 (0 = Thinc's default 3), got %lld",
                           (long long)o->nP);
    static const char *const dims[] = {"nO", "nI", "nP", NULL};
    static const char *const params[] = {"W", "b", NULL};
    lithe_model *m = NULL;
    LITHE__TRY(lithe__model_new(&maxout_type, "maxout", dims, params, &m));
    m->dims[0].value = o ? o->nO : 0;
    m->dims[1].value = o ? o->nI : 0;
    m->dims[2].value = o && o->nP ? o->nP : 3;
    if (o) {
        m->init_W = o->init_W;
        m->init_b = o->init_b;
    }
    return lithe__norm_dropout("Maxout.v1", m, o, out);
}
