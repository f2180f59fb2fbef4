/* LoRA adapters (issue 26 item 2): W_eff = W + (alpha / r) · B·A on a frozen base, for the dense
 * layers' W (Linear, Relu, ..., Maxout, Softmax) and an imported graph's Gemm / MatMul / Conv
 * weights.
 *
 * The weight-level form. The adapted param P keeps its name and tensor and holds W_eff; the node
 * gains three params: "lora_A:P" (r, in), "lora_B:P" (out, r) and "lora_base:P" (the base W,
 * frozen), and two attrs: "lora_alpha:P" (float) and "lora_layout:P" (int: how P's values read as
 * the matrix D (out, in) that B·A adds to; see layout_dims). Forward and backward of every layer
 * run unchanged on W_eff, so every layer and every backend trains adapters through the primitives
 * it already has; the layer's backward accumulates dW_eff into P's gradient, and finish_update
 * turns that into the adapters' gradients before the optimizer runs:
 *   dA += s · Bᵀ·dD,  dB += s · dD·Aᵀ   (s = alpha / r; dD = dP, or dPᵀ for a (in, out) P)
 * then skips P (no optimizer state), steps A and B, and recomputes P = base + s · B·A (one GEMM).
 * The cost over an activation-level form: P's gradient buffer and the base copy (3 weights' worth,
 * against 4 for full fine-tuning with Adam); what it buys: one implementation for every layer,
 * fused op and backend, and a base that can later be stored compact (int8 / F16, issue 24) while
 * W_eff stays the float32 the kernels read. */
#include "internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define PRE_A "lora_A:"
#define PRE_B "lora_B:"
#define PRE_BASE "lora_base:"
#define PRE_ALPHA "lora_alpha:"
#define PRE_LAYOUT "lora_layout:"

/* ---- names ---- */

static lithe_status key(char *buf, size_t cap, const char *pre, const char *param) {
    int n = snprintf(buf, cap, "%s%s", pre, param);
    if (n < 0 || (size_t)n >= cap)
        return lithe__fail(LITHE_ERR_VALUE, "LoRA: param name '%s' is too long (at most %zu bytes)", param,
                           cap - strlen(pre) - 1);
    return LITHE_OK;
}

bool lithe__lora_owned(const lithe_model *m, const char *param) {
    for (size_t a = 0; a < m->n_attrs; a++)
        if (!strncmp(m->attrs[a].name, PRE_ALPHA, sizeof PRE_ALPHA - 1) &&
            !strcmp(m->attrs[a].name + sizeof PRE_ALPHA - 1, param))
            return true;
    return false;
}

bool lithe__lora_param(const char *name) {
    return !strncmp(name, PRE_A, sizeof PRE_A - 1) || !strncmp(name, PRE_B, sizeof PRE_B - 1) ||
           !strncmp(name, PRE_BASE, sizeof PRE_BASE - 1);
}

/* D's (rows, cols) from P's shape: layout k >= 1: rows = prod(shape[:k]), cols = the rest; LITHE__LORA_T:
 * a 2-D (in, out) P, so D = Pᵀ. */
static void layout_dims(const lithe_tensor *P, int layout, int64_t *rows, int64_t *cols) {
    if (layout == LITHE__LORA_T) {
        *rows = P->shape[1];
        *cols = P->shape[0];
        return;
    }
    int64_t r = 1, c = 1;
    for (int d = 0; d < P->ndim; d++) {
        if (d < layout) r *= P->shape[d];
        else c *= P->shape[d];
    }
    *rows = r;
    *cols = c;
}

/* P's values as a 2-D view (its own (rows, cols), or (cols, rows) for LITHE__LORA_T). */
static lithe_status view2(lithe_tensor *t, int layout, int64_t rows, int64_t cols, lithe_tensor **out) {
    int64_t shape[2] = {layout == LITHE__LORA_T ? cols : rows, layout == LITHE__LORA_T ? rows : cols};
    return lithe_tensor_reshape(t, 2, shape, out);
}

typedef struct adapter {
    lithe__param *P, *A, *B, *base;
    int layout;
    double alpha;
    int64_t rows, cols, rank;
} adapter;

/* The adapter on m's param named by attr a ("lora_alpha:P"), found and checked. */
static lithe_status adapter_of(lithe_model *m, const lithe__attr *a, adapter *ad) {
    const char *pn = a->name + sizeof PRE_ALPHA - 1;
    char k[256];
    int64_t layout = 0;
    memset(ad, 0, sizeof *ad);
    ad->P = lithe__model_find_param(m, pn);
    LITHE__TRY(key(k, sizeof k, PRE_A, pn));
    ad->A = lithe__model_find_param(m, k);
    LITHE__TRY(key(k, sizeof k, PRE_B, pn));
    ad->B = lithe__model_find_param(m, k);
    LITHE__TRY(key(k, sizeof k, PRE_BASE, pn));
    ad->base = lithe__model_find_param(m, k);
    LITHE__TRY(key(k, sizeof k, PRE_LAYOUT, pn));
    lithe_status s = lithe_model_get_attr_int(m, k, &layout);
    ad->alpha = a->type == LITHE_ATTR_FLOAT ? a->v.f : NAN;
    ad->layout = (int)layout;
    if (s != LITHE_OK || !ad->P || !ad->A || !ad->B || !ad->base || !ad->P->value || !ad->A->value ||
        !ad->B->value || !ad->base->value || !isfinite(ad->alpha) ||
        !(layout == LITHE__LORA_T ? ad->P->value->ndim == 2 : layout >= 1 && layout < ad->P->value->ndim))
        return lithe__fail(LITHE_ERR_STATE, "%s: LoRA adapter of '%s' is incomplete (its params lora_A:, lora_B:, "
                           "lora_base: and attrs lora_alpha:, lora_layout: go together)", m->name, pn);
    layout_dims(ad->P->value, ad->layout, &ad->rows, &ad->cols);
    const lithe_tensor *A = ad->A->value, *B = ad->B->value;
    ad->rank = A->ndim == 2 ? A->shape[0] : 0;
    if (A->ndim != 2 || B->ndim != 2 || A->shape[1] != ad->cols || B->shape[0] != ad->rows || B->shape[1] != ad->rank ||
        ad->rank < 1 || !lithe__same_shape(ad->base->value, ad->P->value))
        return lithe__fail(LITHE_ERR_SHAPE, "%s: LoRA adapter of '%s': A must be (r, %lld) and B (%lld, r), the base "
                           "shaped as the weight", m->name, pn, (long long)ad->cols, (long long)ad->rows);
    return LITHE_OK;
}

/* P = base + s · B·A (or its transpose). */
static lithe_status refresh(lithe_model *m, const adapter *ad) {
    lithe_tensor *P2 = NULL;
    LITHE__TRY(lithe__op_copy(m->backend, ad->P->value, ad->base->value));
    LITHE__TRY(view2(ad->P->value, ad->layout, ad->rows, ad->cols, &P2));
    float s = (float)(ad->alpha / (double)ad->rank);
    lithe_status st = ad->layout == LITHE__LORA_T
                          ? lithe__op_gemm(m->backend, true, true, s, ad->A->value, ad->B->value, 1.0f, P2) /* Aᵀ·Bᵀ */
                          : lithe__op_gemm(m->backend, false, false, s, ad->B->value, ad->A->value, 1.0f, P2);
    lithe_tensor_release(P2);
    return st;
}

/* P's gradient into A's and B's, then zeroed (finish_update skips P). */
static lithe_status grads(lithe_model *m, const adapter *ad) {
    if (!ad->P->grad) return LITHE_OK;
    lithe_tensor *gA = NULL, *gB = NULL, *dP = NULL;
    LITHE__TRY(lithe__grad_acc(m, ad->A->name, &gA));
    LITHE__TRY(lithe__grad_acc(m, ad->B->name, &gB));
    LITHE__TRY(view2(ad->P->grad, ad->layout, ad->rows, ad->cols, &dP));
    float s = (float)(ad->alpha / (double)ad->rank);
    bool T = ad->layout == LITHE__LORA_T; /* dD = dPᵀ */
    /* dA (r, in) += s · Bᵀ·dD;  dB (out, r) += s · dD·Aᵀ */
    lithe_status st = lithe__op_gemm(m->backend, true, T, s, ad->B->value, dP, 1.0f, gA);
    if (st == LITHE_OK) st = lithe__op_gemm(m->backend, T, true, s, dP, ad->A->value, 1.0f, gB);
    lithe_tensor_release(dP);
    if (st == LITHE_OK) st = lithe__op_fill(m->backend, ad->P->grad, 0.0f);
    return st;
}

static bool is_alpha_attr(const lithe__attr *a) {
    return !strncmp(a->name, PRE_ALPHA, sizeof PRE_ALPHA - 1);
}

lithe_status lithe__lora_before_update(lithe_model *const *nodes, size_t n) {
    for (size_t i = 0; i < n; i++)
        for (size_t a = 0; a < nodes[i]->n_attrs; a++) {
            if (!is_alpha_attr(&nodes[i]->attrs[a])) continue;
            adapter ad;
            LITHE__TRY(adapter_of(nodes[i], &nodes[i]->attrs[a], &ad));
            LITHE__TRY(grads(nodes[i], &ad));
        }
    return LITHE_OK;
}

lithe_status lithe__lora_after_update(lithe_model *const *nodes, size_t n) {
    for (size_t i = 0; i < n; i++)
        for (size_t a = 0; a < nodes[i]->n_attrs; a++) {
            if (!is_alpha_attr(&nodes[i]->attrs[a])) continue;
            adapter ad;
            LITHE__TRY(adapter_of(nodes[i], &nodes[i]->attrs[a], &ad));
            LITHE__TRY(refresh(nodes[i], &ad));
        }
    return LITHE_OK;
}

/* ---- adding ---- */

void lithe__lora_freeze_base(lithe_model *const *nodes, size_t n) {
    /* a frozen base: every param of the tree but the adapters and adapted weights already there;
     * lithe__lora_attach thaws the new ones */
    for (size_t i = 0; i < n; i++)
        for (size_t p = 0; p < nodes[i]->n_params; p++) {
            lithe__param *pr = &nodes[i]->params[p];
            bool own = lithe__lora_param(pr->name) && strncmp(pr->name, PRE_BASE, sizeof PRE_BASE - 1);
            if (!own && !lithe__lora_owned(nodes[i], pr->name)) pr->frozen = true; /* adapted weights: not frozen */
        }
}

/* The dense layers whose W takes an adapter: (out..., in), so the split is ndim - 1. */
static bool dense_like(const lithe_model *m) {
    for (size_t i = 0; lithe__dense_types[i]; i++)
        if (lithe__dense_types[i] == m->type) return true;
    const char *t = m->type->registered_name;
    return !strcmp(t, "Maxout.v1") || !strcmp(t, "Softmax.v1") || !strcmp(t, "Softmax.v2");
}

bool lithe__lora_is_graph(const lithe_model *m) {
    return lithe_model_attr_type(m, "onnx") == LITHE_ATTR_TENSOR;
}

lithe_status lithe__lora_attach(lithe_model *m, const char *pn, int64_t rank, double alpha, int layout,
                                lithe_tensor *A_init, lithe_tensor *B_init, lithe_rng *rng) {
    lithe__param *P = lithe__model_find_param(m, pn);
    if (!P || !P->value)
        return lithe__fail(LITHE_ERR_STATE, "%s: weight '%s' is not allocated: initialize the model first", m->name, pn);
    if (lithe__lora_owned(m, pn))
        return lithe__fail(LITHE_ERR_STATE, "%s: weight '%s' has a LoRA adapter already", m->name, pn);
    if (P->value->dtype != LITHE_F32)
        return lithe__fail(LITHE_ERR_DTYPE, "%s: weight '%s' is %s; LoRA adapts float32 weights", m->name, pn,
                           lithe_dtype_name(P->value->dtype));
    if (!(layout == LITHE__LORA_T ? P->value->ndim == 2 : layout >= 1 && layout < P->value->ndim) || rank < 1)
        return lithe__fail(LITHE_ERR_VALUE, "%s: weight '%s' (%d-d) cannot take a rank-%lld adapter in layout %d",
                           m->name, pn, P->value->ndim, (long long)rank, layout);
    int64_t rows, cols;
    layout_dims(P->value, layout, &rows, &cols);
    char kA[256], kB[256], kBase[256], kAl[256], kL[256];
    LITHE__TRY(key(kA, sizeof kA, PRE_A, pn));
    LITHE__TRY(key(kB, sizeof kB, PRE_B, pn));
    LITHE__TRY(key(kBase, sizeof kBase, PRE_BASE, pn));
    LITHE__TRY(key(kAl, sizeof kAl, PRE_ALPHA, pn));
    LITHE__TRY(key(kL, sizeof kL, PRE_LAYOUT, pn));
    if ((A_init && (A_init->ndim != 2 || A_init->shape[0] != rank || A_init->shape[1] != cols)) ||
        (B_init && (B_init->ndim != 2 || B_init->shape[0] != rows || B_init->shape[1] != rank)))
        return lithe__fail(LITHE_ERR_SHAPE, "%s: LoRA adapter of '%s' must have A (%lld, %lld) and B (%lld, %lld)",
                           m->name, pn, (long long)rank, (long long)cols, (long long)rows, (long long)rank);
    lithe_tensor *A = NULL, *B = NULL, *base = NULL;
    float *host = NULL;
    lithe_status s = lithe__tensor_alloc(m->backend, LITHE_F32, 2, (int64_t[]){rank, cols}, false, &A);
    if (s == LITHE_OK) s = lithe__tensor_alloc(m->backend, LITHE_F32, 2, (int64_t[]){rows, rank}, true, &B);
    if (s == LITHE_OK) s = lithe__tensor_like(P->value, false, &base);
    if (s == LITHE_OK) s = lithe__op_copy(m->backend, base, P->value);
    if (s == LITHE_OK && A_init) s = lithe__op_copy(m->backend, A, A_init);
    if (s == LITHE_OK && B_init) s = lithe__op_copy(m->backend, B, B_init);
    if (s == LITHE_OK && !A_init) {
        /* A ~ U(-1/sqrt(in), 1/sqrt(in)): PyTorch's kaiming_uniform_(A, a=sqrt(5)), loralib's init */
        size_t n = (size_t)(rank * cols);
        if (!(host = lithe__malloc(n * sizeof *host))) s = lithe__oom(m->name, n * sizeof *host);
        if (s == LITHE_OK) {
            lithe_rng_uniform(rng, host, n);
            float bound = (float)(1.0 / sqrt((double)cols));
            for (size_t i = 0; i < n; i++) host[i] = (2.0f * host[i] - 1.0f) * bound;
            s = lithe_tensor_write(A, host, n * sizeof *host);
        }
    }
    /* all allocated: now the node changes (a failure below removes what was added) */
    if (s == LITHE_OK) s = lithe_model_set_param(m, kA, A);
    if (s == LITHE_OK) s = lithe_model_set_param(m, kB, B);
    if (s == LITHE_OK) s = lithe_model_set_param(m, kBase, base);
    if (s == LITHE_OK) s = lithe_model_set_attr_int(m, kL, layout);
    if (s == LITHE_OK) s = lithe_model_set_attr_float(m, kAl, alpha);
    lithe__free(host);
    lithe_tensor_release(A);
    lithe_tensor_release(B);
    lithe_tensor_release(base);
    if (s != LITHE_OK) {
        lithe__lora_detach(m, pn);
        return s;
    }
    /* the base and every other weight stay put; P's gradient trains A and B */
    lithe__model_find_param(m, kBase)->frozen = true;
    lithe__model_find_param(m, kA)->frozen = false;
    lithe__model_find_param(m, kB)->frozen = false;
    lithe__model_find_param(m, pn)->frozen = false;
    if (A_init || B_init) { /* B·A need not be 0: W_eff follows */
        const lithe__attr *al = NULL;
        for (size_t a = 0; a < m->n_attrs; a++)
            if (!strcmp(m->attrs[a].name, kAl)) al = &m->attrs[a];
        adapter ad;
        s = al ? adapter_of(m, al, &ad) : LITHE_ERR_STATE;
        if (s == LITHE_OK) s = refresh(m, &ad);
    }
    return s;
}

void lithe__lora_detach(lithe_model *m, const char *pn) {
    char k[3][256];
    bool ok = key(k[0], sizeof k[0], PRE_A, pn) == LITHE_OK && key(k[1], sizeof k[1], PRE_B, pn) == LITHE_OK &&
              key(k[2], sizeof k[2], PRE_BASE, pn) == LITHE_OK;
    if (!ok) return;
    size_t kept = 0;
    for (size_t p = 0; p < m->n_params; p++) {
        lithe__param *pr = &m->params[p];
        if (!strcmp(pr->name, k[0]) || !strcmp(pr->name, k[1]) || !strcmp(pr->name, k[2])) {
            lithe__free(pr->name);
            lithe_tensor_release(pr->value);
            lithe_tensor_release(pr->grad);
        } else {
            m->params[kept++] = *pr;
        }
    }
    if (kept != m->n_params) {
        m->n_params = kept;
        lithe__names_free(&m->param_index); /* rebuilt on the next add; scans until then */
    }
    kept = 0;
    for (size_t a = 0; a < m->n_attrs; a++) {
        lithe__attr *at = &m->attrs[a];
        const char *n = at->name;
        bool mine = (!strncmp(n, PRE_ALPHA, sizeof PRE_ALPHA - 1) && !strcmp(n + sizeof PRE_ALPHA - 1, pn)) ||
                    (!strncmp(n, PRE_LAYOUT, sizeof PRE_LAYOUT - 1) && !strcmp(n + sizeof PRE_LAYOUT - 1, pn));
        if (mine) {
            lithe__attr_clear(at);
            lithe__free(at->name);
        } else {
            m->attrs[kept++] = *at;
        }
    }
    m->n_attrs = kept;
}

typedef struct add_ctx {
    const char *pattern;
    int64_t rank;
    double alpha;
    lithe_rng rng;
    size_t added;
    bool dry; /* first pass: check every match before anything changes */
} add_ctx;

static lithe_status add_one(lithe_model *m, const char *pn, int layout, void *user) {
    add_ctx *c = user;
    /* the param's name or "<node name>/<param>", as lithe_model_freeze_matching matches */
    char full[512];
    int n = snprintf(full, sizeof full, "%s/%s", m->name, pn);
    const char *name = n > 0 && (size_t)n < sizeof full ? full : pn;
    if (c->pattern && !lithe__glob(c->pattern, pn) && !lithe__glob(c->pattern, name)) return LITHE_OK;
    if (c->dry) {
        const lithe__param *P = lithe__model_find_param(m, pn);
        if (!P || !P->value)
            return lithe__fail(LITHE_ERR_STATE, "lithe_model_add_lora: %s is not allocated: initialize the model first",
                               name);
        if (lithe__lora_owned(m, pn))
            return lithe__fail(LITHE_ERR_STATE, "lithe_model_add_lora: %s has a LoRA adapter already", name);
        c->added++;
        return LITHE_OK;
    }
    LITHE__TRY(lithe__lora_attach(m, pn, c->rank, c->alpha, layout, NULL, NULL, &c->rng));
    c->added++;
    return LITHE_OK;
}

/* Every weight of the tree that can take an adapter, in walk order, through fn. */
lithe_status lithe__lora_each_weight(lithe_model *const *nodes, size_t n, lithe__lora_found fn, void *user) {
    for (size_t i = 0; i < n; i++) {
        lithe_model *m = nodes[i];
        if (lithe__lora_is_graph(m)) {
            LITHE__TRY(lithe__graph_lora_weights(m, fn, user));
        } else if (dense_like(m)) {
            const lithe__param *W = lithe__model_find_param(m, "W");
            if (W && W->value && W->value->ndim >= 2) LITHE__TRY(fn(m, "W", W->value->ndim - 1, user));
            else if (W) LITHE__TRY(fn(m, "W", 1, user)); /* unallocated: the dry pass says so */
        }
    }
    return LITHE_OK;
}

static lithe_status add_lora(lithe_model *m, const char *pattern, int64_t rank, float alpha, uint64_t seed) {
    if (rank < 1 || rank > (1 << 20))
        return lithe__fail(LITHE_ERR_VALUE, "lithe_model_add_lora: rank %lld outside [1, 2^20]", (long long)rank);
    if (!isfinite(alpha)) return lithe__fail(LITHE_ERR_VALUE, "lithe_model_add_lora: alpha %g is not finite", (double)alpha);
    lithe__walk_buf w;
    LITHE__TRY(lithe__walk_collect(m, &w));
    add_ctx c = {pattern, rank, alpha, {seed, 0}, 0, true};
    lithe_status s = lithe__lora_each_weight(w.v, w.n, add_one, &c);
    if (s == LITHE_OK && !c.added)
        s = lithe__fail(LITHE_ERR_NOT_FOUND, "lithe_model_add_lora: no weight matches '%s' (a weight matches by its "
                        "param name, \"W\" or a graph's initializer name, or as \"<node name>/<param>\")",
                        pattern ? pattern : "*");
    if (s == LITHE_OK) {
        lithe__lora_freeze_base(w.v, w.n);
        c.dry = false;
        c.added = 0;
        s = lithe__lora_each_weight(w.v, w.n, add_one, &c);
    }
    lithe__free(w.v);
    return s;
}

lithe_status lithe_model_add_lora(lithe_model *m, const char *pattern, int64_t rank, float alpha, uint64_t seed) {
    LITHE__CHECK_ARG(m, "lithe_model_add_lora", "model is NULL");
    LITHE__TRY(lithe__enter_tree(m, "lithe_model_add_lora"));
    lithe_status s = add_lora(m, pattern, rank, alpha, seed);
    lithe__leave_tree(m);
    return s;
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

static lithe_status merge(lithe_model *m) {
    lithe__walk_buf w;
    LITHE__TRY(lithe__walk_collect(m, &w));
    lithe_status s = LITHE_OK;
    for (size_t i = 0; i < w.n && s == LITHE_OK; i++) {
        lithe_model *node = w.v[i];
        for (size_t a = 0; a < node->n_attrs && s == LITHE_OK;) {
            if (!is_alpha_attr(&node->attrs[a])) {
                a++;
                continue;
            }
            adapter ad;
            s = adapter_of(node, &node->attrs[a], &ad);
            if (s == LITHE_OK) s = refresh(node, &ad); /* A or B may have been set by hand */
            if (s != LITHE_OK) break;
            char pn[256];
            snprintf(pn, sizeof pn, "%s", ad.P->name);
            if (ad.P->grad) {
                lithe_tensor_release(ad.P->grad);
                ad.P->grad = NULL;
            }
            lithe__lora_detach(node, pn); /* attrs shift down: look at index a again */
        }
    }
    lithe__free(w.v);
    return s;
}

lithe_status lithe_model_merge_lora(lithe_model *m) {
    LITHE__CHECK_ARG(m, "lithe_model_merge_lora", "model is NULL");
    LITHE__TRY(lithe__enter_tree(m, "lithe_model_merge_lora"));
    lithe_status s = merge(m);
    lithe__leave_tree(m);
    return s;
}
