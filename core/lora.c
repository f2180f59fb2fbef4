/* LoRA adapters, the training step's half (issue 26 item 2; adding, merging and the walk over the
 * weights that take one: core/lora_add.c; the adapter file: core/lora_file.c).
 *
 * The adapters live on the activations. An adapted weight W (the frozen base, left as it is)
 * reads as a matrix D (out, in) (core/layers.h, layouts); its node carries params "lora_A:W"
 * (r, in) and "lora_B:W" (out, r) and the attr "lora_alpha:W", and the layer computes
 *   Y = X·Dᵀ (the layer's own product with W, unchanged) + s·(X·Aᵀ)·Bᵀ,   s = alpha / r
 * with X (N, in) and Y (N, out) its input and pre-activation output as rows. Backward, from dY:
 *   G = dY·B (N, r),  dB += s·dYᵀ·(X·Aᵀ),  dA += s·Gᵀ·X,  dX += s·G·A
 * (X·Aᵀ recomputed from the X the layer keeps anyway: N·r floats, never held between forward and
 * backward). W is frozen: no gradient buffer, no optimizer state, no copy; the step keeps A, B,
 * their gradients and state, and two (N, r) temporaries. Everything runs through gemm, so every
 * backend trains adapters with the primitives it has. The dense layers (core/layers/affine.c,
 * maxout.c) and the graph's Gemm, MatMul and fused Linear call these; a graph's Conv adds B·A to a
 * temporary copy of its weight for the node's own call (core/graph/graph_lora.c). */
#include "internal.h"

#include <math.h>
#include <string.h>

#define PRE_A "lora_A:"
#define PRE_B "lora_B:"
#define PRE_ALPHA "lora_alpha:"

/* "<pre><param>" into buf, or false when it does not fit. */
static bool key(char *buf, size_t cap, const char *pre, const char *param) {
    size_t a = strlen(pre), b = strlen(param);
    if (a + b + 1 > cap) return false;
    memcpy(buf, pre, a);
    memcpy(buf + a, param, b + 1);
    return true;
}

lithe_status lithe__lora_of(lithe_model *m, const lithe__param *P, lithe__lora_ad *ad, bool *on) {
    *on = false;
    memset(ad, 0, sizeof *ad);
    if (!P || !m->n_attrs) return LITHE_OK;
    const lithe__attr *al = NULL;
    for (size_t a = 0; a < m->n_attrs && !al; a++) {
        const char *an = m->attrs[a].name;
        if (!strncmp(an, PRE_ALPHA, sizeof PRE_ALPHA - 1) && !strcmp(an + sizeof PRE_ALPHA - 1, P->name))
            al = &m->attrs[a];
    }
    if (!al) return LITHE_OK;
    char k[256];
    if (key(k, sizeof k, PRE_A, P->name)) ad->A = lithe__model_find_param(m, k);
    if (key(k, sizeof k, PRE_B, P->name)) ad->B = lithe__model_find_param(m, k);
    const lithe_tensor *A = ad->A ? ad->A->value : NULL, *B = ad->B ? ad->B->value : NULL;
    if (!A || !B || al->type != LITHE_ATTR_FLOAT || !isfinite(al->v.f))
        return lithe__fail(LITHE_ERR_STATE, "%s: LoRA adapter of '%s' is incomplete (its params lora_A:, lora_B: and "
                           "attr lora_alpha: go together)", m->name, P->name);
    if (A->ndim != 2 || B->ndim != 2 || A->shape[0] < 1 || B->shape[1] != A->shape[0] || A->dtype != LITHE_F32 ||
        B->dtype != LITHE_F32)
        return lithe__fail(LITHE_ERR_SHAPE, "%s: LoRA adapter of '%s': A must be float32 (r, in) and B (out, r)", m->name,
                           P->name);
    ad->s = (float)(al->v.f / (double)A->shape[0]);
    *on = true;
    return LITHE_OK;
}

/* X (N, in) and Y (N, out) against A (r, in), B (out, r). */
static lithe_status check_rows(const lithe_model *m, const lithe__lora_ad *ad, const lithe_tensor *X,
                               const lithe_tensor *Y, const char *what) {
    const lithe_tensor *A = ad->A->value, *B = ad->B->value;
    if (X->ndim != 2 || Y->ndim != 2 || X->shape[0] != Y->shape[0] || X->shape[1] != A->shape[1] ||
        Y->shape[1] != B->shape[0])
        return lithe__fail(LITHE_ERR_SHAPE, "%s: LoRA adapter %s: rows of width %lld in, %lld out; the adapter is (%lld "
                           "in, %lld out)", m->name, what, (long long)(X->ndim == 2 ? X->shape[1] : -1),
                           (long long)(Y->ndim == 2 ? Y->shape[1] : -1), (long long)A->shape[1], (long long)B->shape[0]);
    return LITHE_OK;
}

lithe_status lithe__lora_forward(lithe_model *m, const lithe__lora_ad *ad, const lithe_tensor *X, lithe_tensor *Y,
                                 float scale) {
    LITHE__TRY(check_rows(m, ad, X, Y, "forward"));
    lithe_tensor *H = NULL;
    LITHE__TRY(lithe__tensor_alloc(m->backend, LITHE_F32, 2, (int64_t[]){X->shape[0], ad->A->value->shape[0]}, false, &H));
    /* H = X·Aᵀ (N, r); Y += s·H·Bᵀ */
    lithe_status s = lithe__op_gemm(m->backend, false, true, 1.0f, X, ad->A->value, 0.0f, H);
    if (s == LITHE_OK) s = lithe__op_gemm(m->backend, false, true, scale * ad->s, H, ad->B->value, 1.0f, Y);
    lithe_tensor_release(H);
    return s;
}

lithe_status lithe__lora_backward(lithe_model *m, const lithe__lora_ad *ad, const lithe_tensor *X, const lithe_tensor *dY,
                                  lithe_tensor *dX, float scale) {
    LITHE__TRY(check_rows(m, ad, X, dY, "backward"));
    if (dX && (dX->ndim != 2 || !lithe__same_shape(dX, X)))
        return lithe__fail(LITHE_ERR_SHAPE, "%s: LoRA adapter backward: dX is not shaped as X", m->name);
    lithe_tensor *gA = NULL, *gB = NULL, *H = NULL, *G = NULL;
    LITHE__TRY(lithe__grad_acc(m, ad->A->name, &gA));
    LITHE__TRY(lithe__grad_acc(m, ad->B->name, &gB));
    const int64_t shape[2] = {X->shape[0], ad->A->value->shape[0]};
    float s = scale * ad->s;
    lithe_status st = lithe__tensor_alloc(m->backend, LITHE_F32, 2, shape, false, &H);
    if (st == LITHE_OK) st = lithe__tensor_alloc(m->backend, LITHE_F32, 2, shape, false, &G);
    if (st == LITHE_OK) st = lithe__op_gemm(m->backend, false, true, 1.0f, X, ad->A->value, 0.0f, H); /* H = X·Aᵀ */
    if (st == LITHE_OK) st = lithe__op_gemm(m->backend, false, false, 1.0f, dY, ad->B->value, 0.0f, G); /* G = dY·B */
    if (st == LITHE_OK) st = lithe__op_gemm(m->backend, true, false, s, dY, H, 1.0f, gB);               /* dB += s dYᵀ H */
    if (st == LITHE_OK) st = lithe__op_gemm(m->backend, true, false, s, G, X, 1.0f, gA);                /* dA += s Gᵀ X */
    if (st == LITHE_OK && dX) st = lithe__op_gemm(m->backend, false, false, s, G, ad->A->value, 1.0f, dX); /* dX += s G A */
    lithe_tensor_release(H);
    lithe_tensor_release(G);
    return st;
}

static bool is_alpha_attr(const lithe__attr *a) {
    return !strncmp(a->name, PRE_ALPHA, sizeof PRE_ALPHA - 1);
}

lithe_status lithe__lora_any(lithe_model *m, bool *any) {
    *any = false;
    lithe__walk_buf w;
    LITHE__TRY(lithe__walk_collect(m, &w));
    for (size_t i = 0; i < w.n && !*any; i++)
        for (size_t a = 0; a < w.v[i]->n_attrs && !*any; a++) *any = is_alpha_attr(&w.v[i]->attrs[a]);
    lithe__free(w.v);
    return LITHE_OK;
}

size_t lithe_model_lora_count(const lithe_model *m) {
    if (!m) return 0;
    lithe__walk_buf w;
    if (lithe__walk_collect((lithe_model *)m, &w) != LITHE_OK) return 0;
    size_t n = 0;
    for (size_t i = 0; i < w.n; i++)
        for (size_t a = 0; a < w.v[i]->n_attrs; a++) n += is_alpha_attr(&w.v[i]->attrs[a]);
    lithe__free(w.v);
    return n;
}
