/* The affine machinery that Linear, Relu and Softmax share: Y = act(X·Wᵀ + b) and its backward.
 * X: (B, nI), W: (nO, nI), b: (nO,) -> Y: (B, nO). */
#include "../internal.h"

#include <math.h>
#include <string.h>

static int64_t value_width(const lithe_value *v) {
    const lithe_tensor *t = lithe_value_get_tensor(v);
    return t && t->ndim >= 1 ? t->shape[t->ndim - 1] : 0;
}

lithe_status lithe__affine_dims(lithe_model *m, const lithe_value *X, const lithe_value *Y, bool strict) {
    if (X) {
        int64_t w = value_width(X);
        if (w <= 0) return lithe__fail(LITHE_ERR_SHAPE, "%s: sample X has no width", m->name);
        if (strict || !lithe__dim_value(m, "nI")) LITHE__TRY(lithe__infer_dim(m, "nI", w, "sample X"));
    }
    if (Y) {
        int64_t w = value_width(Y);
        if (w <= 0) return lithe__fail(LITHE_ERR_SHAPE, "%s: sample Y has no width", m->name);
        if (strict || !lithe__dim_value(m, "nO")) LITHE__TRY(lithe__infer_dim(m, "nO", w, "sample Y"));
    }
    int64_t nO = lithe__dim_value(m, "nO"), nI = lithe__dim_value(m, "nI");
    if (!nO || !nI)
        return lithe__fail(LITHE_ERR_STATE, "%s: cannot initialize W: dim %s unset; pass sample %s", m->name,
                           !nI ? "nI" : "nO", !nI ? "X" : "Y");
    return LITHE_OK;
}

lithe_status lithe__affine_init(lithe_model *m, const lithe_value *X, const lithe_value *Y, lithe_init init_W,
                                lithe_init init_b, bool strict) {
    LITHE__TRY(lithe__affine_dims(m, X, Y, strict));
    int64_t nO = lithe__dim_value(m, "nO"), nI = lithe__dim_value(m, "nI");
    LITHE__TRY(lithe__param_init(m, "W", init_W, 2, (int64_t[]){nO, nI}));
    return lithe__param_init(m, "b", init_b, 1, (int64_t[]){nO});
}

bool lithe__act_clamp(const lithe__act *a, float *lo, float *hi) {
    float l = -INFINITY, h = INFINITY;
    if (a->kind == LITHE__ACT_RELU) l = 0.0f; /* max(x, 0) */
    else if (a->kind == LITHE__ACT_CLIPPED_LINEAR && a->slope == 1.0f && a->offset == 0.0f) l = a->min_val, h = a->max_val;
    else return false;
    if (!(l < h)) return false; /* crossed, equal or NaN bounds: XNNPACK refuses min >= max */
    if (lo) *lo = l;
    if (hi) *hi = h;
    return true;
}

bool lithe__affine_prep_op(const lithe__act *a, lithe__prep_op *op) {
    memset(op, 0, sizeof *op);
    op->kind = LITHE__PREP_FC;
    op->out_min = -INFINITY;
    op->out_max = INFINITY;
    return !a || lithe__act_clamp(a, &op->out_min, &op->out_max);
}

/* W, float32 or (on the CPU backend, whose GEMM decodes it while packing) compact. */
static lithe_status lithe__affine_w(lithe_model *m, lithe_tensor **W) {
    LITHE__TRY(lithe__param_get_any(m, "W", W));
    if ((*W)->dtype == LITHE_F32) return LITHE_OK;
    if (!lithe__is_compact(*W) || m->backend != lithe__backend_host() || (*W)->storage->backend != m->backend)
        return lithe__fail(LITHE_ERR_DTYPE, "%s: W is stored as %s%s; compact weights compute on the CPU backend only "
                           "(this model is on '%s'): lithe_model_compress_weights(m, LITHE_F32) first", m->name,
                           lithe_dtype_name((*W)->dtype), lithe__is_compact(*W) ? "" : " without quantization parameters",
                           m->backend->name);
    return LITHE_OK;
}

/* With a LoRA adapter on W (core/lora.c): Z = X·Wᵀ + b + s·(X·Aᵀ)·Bᵀ, then Y = act(Z), in three
 * calls (the fused one computes X·Wᵀ + b; a backend's prepared operator, which would apply the
 * activation first, is not used). */
static lithe_status lora_forward(lithe_model *m, lithe_tensor *X, bool is_train, const lithe__lora_ad *ad, lithe_tensor *W,
                                 lithe_tensor *b, const lithe__act *a, lithe_tensor **Z, lithe_tensor **Y) {
    const int64_t shape[2] = {X->shape[0], W->shape[0]};
    lithe_tensor *out = NULL, *pre = NULL;
    lithe_status s = lithe__tensor_alloc(m->backend, LITHE_F32, 2, shape, false, &out);
    if (s == LITHE_OK && Z && a) s = lithe__tensor_alloc(m->backend, LITHE_F32, 2, shape, false, &pre);
    lithe_tensor *t = pre ? pre : out; /* Z, or Y computed in place */
    if (s == LITHE_OK && W->dtype == LITHE_I8) s = lithe__op_gemm_q8(m->backend, X, W, b, NULL, NULL, t);
    else if (s == LITHE_OK) s = lithe__gemm_bias_act_w(m->backend, is_train, false, true, X, W, b, NULL, NULL, t);
    if (s == LITHE_OK) s = lithe__lora_forward(m, ad, X, t, 1.0f);
    if (s == LITHE_OK && a) s = lithe__op_act(m->backend, a, t, out);
    if (s != LITHE_OK) {
        lithe_tensor_release(out);
        lithe_tensor_release(pre);
        return s;
    }
    if (Z) *Z = pre ? pre : lithe_tensor_retain(out);
    *Y = out;
    return LITHE_OK;
}

lithe_status lithe__affine_forward_act(lithe_model *m, lithe_tensor *X, bool is_train, const lithe__act *a, lithe_tensor **Z,
                                       lithe_tensor **Y) {
    lithe_tensor *W = NULL, *b = NULL;
    LITHE__TRY(lithe__affine_w(m, &W));
    LITHE__TRY(lithe__param_get(m, "b", &b));
    if (W->ndim != 2 || b->ndim != 1 || b->shape[0] != W->shape[0])
        return lithe__fail(LITHE_ERR_SHAPE, "%s: params W (%d-d) and b (%d-d) do not fit together: W must be (nO, nI) "
                           "and b (nO,)", m->name, W->ndim, b->ndim);
    int64_t nO = W->shape[0], nI = W->shape[1];
    if (X->shape[1] != nI)
        return lithe__fail(LITHE_ERR_SHAPE, "%s: input width %lld does not match nI=%lld", m->name,
                           (long long)X->shape[1], (long long)nI);
    if (X->storage->backend != m->backend)
        return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: input lives on backend '%s', the model on '%s'", m->name,
                           X->storage->backend->name, m->backend->name);
    lithe__lora_ad ad;
    bool lora = false;
    LITHE__TRY(lithe__lora_of(m, lithe__model_find_param(m, "W"), &ad, &lora));
    if (lora) return lora_forward(m, X, is_train, &ad, W, b, a, Z, Y);
    lithe_tensor *out = NULL, *pre = NULL;
    const int64_t shape[2] = {X->shape[0], nO};
    LITHE__TRY(lithe__tensor_alloc(m->backend, LITHE_F32, 2, shape, false, &out));
    lithe__prep_op op;
    if (!is_train && !Z && W->dtype == LITHE_F32 && lithe__affine_prep_op(a, &op)) { /* a backend's own operator (LITHE_XNNPACK) */
        bool done = false;
        lithe_status s = lithe__run_prepared_op(m->backend, is_train, &op, W, b, X, out, &done);
        if (s != LITHE_OK || done) {
            if (s == LITHE_OK) *Y = out;
            else lithe_tensor_release(out);
            return s;
        }
    }
    lithe_status s = Z ? lithe__tensor_alloc(m->backend, LITHE_F32, 2, shape, false, &pre) : LITHE_OK;
    /* Y = act(X·Wᵀ + b) in one pass over Y (Z: also the pre-activation); at inference through
     * W's prepared form when lithe_model_prepare_inference made one */
    if (s == LITHE_OK && W->dtype == LITHE_I8) /* int8 weights: the int8 GEMM, activations quantized per row */
        s = lithe__op_gemm_q8(m->backend, X, W, b, a, pre, out);
    else if (s == LITHE_OK) s = lithe__gemm_bias_act_w(m->backend, is_train, false, true, X, W, b, a, pre, out);
    if (s != LITHE_OK) {
        lithe_tensor_release(out);
        lithe_tensor_release(pre);
        return s;
    }
    if (Z) *Z = pre;
    *Y = out;
    return LITHE_OK;
}

lithe_status lithe__affine_forward(lithe_model *m, lithe_tensor *X, bool is_train, lithe_tensor **Y) {
    return lithe__affine_forward_act(m, X, is_train, NULL, NULL, Y);
}

lithe_status lithe__affine_backward(lithe_model *m, lithe_tensor *X, const lithe_tensor *dY, lithe_tensor **dX) {
    lithe_tensor *W = NULL, *gW = NULL, *gb = NULL;
    LITHE__TRY(lithe__affine_w(m, &W));
    LITHE__TRY(lithe__grad_acc_trainable(m, "b", &gb)); /* NULL: frozen, no buffer, no work */
    if (W->dtype == LITHE_F32) LITHE__TRY(lithe__grad_acc_trainable(m, "W", &gW)); /* a compact W: frozen */
    if (gb) LITHE__TRY(lithe__op_sum_rows(m->backend, dY, 1.0f, gb));          /* db += Σ_rows dY  */
    if (gW) LITHE__TRY(lithe__op_gemm(m->backend, true, false, 1.0f, dY, X, 1.0f, gW)); /* dW += dYᵀ·X */
    lithe__lora_ad ad;
    bool lora = false;
    LITHE__TRY(lithe__lora_of(m, lithe__model_find_param(m, "W"), &ad, &lora));
    if (!dX) return lora ? lithe__lora_backward(m, &ad, X, dY, NULL, 1.0f) : LITHE_OK;
    lithe_tensor *out = NULL;
    LITHE__TRY(lithe__tensor_alloc(m->backend, LITHE_F32, 2, X->shape, false, &out));
    lithe_status s = lithe__op_gemm(m->backend, false, false, 1.0f, dY, W, 0.0f, out); /* dX = dY·W */
    if (s == LITHE_OK && lora) s = lithe__lora_backward(m, &ad, X, dY, out, 1.0f); /* + s·(dY·B)·A */
    if (s != LITHE_OK) {
        lithe_tensor_release(out);
        return s;
    }
    *dX = out;
    return LITHE_OK;
}
