/* LoRA adapters, adding and merging (issue 26 item 2): which weights take one, attaching and
 * detaching an adapter's params and attrs, lithe_model_add_lora and lithe_model_merge_lora. The
 * training step's half (the adapters on the activations) is core/lora.c; this half is not on any
 * step's path, so the npm build puts it in the importer module (docs/wasm.md).
 *
 * An adapted param P keeps its name and tensor (the frozen base); the node gains params
 * "lora_A:P" (r, in) and "lora_B:P" (out, r) and attrs "lora_alpha:P" (float) and "lora_layout:P"
 * (int: how P's values read as the matrix D (out, in) that B·A adds to; see layout_dims). */
#include "internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define PRE_A "lora_A:"
#define PRE_B "lora_B:"
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
    return !strncmp(name, PRE_A, sizeof PRE_A - 1) || !strncmp(name, PRE_B, sizeof PRE_B - 1);
}

bool lithe__lora_attr(const char *name) {
    return !strncmp(name, PRE_ALPHA, sizeof PRE_ALPHA - 1) || !strncmp(name, PRE_LAYOUT, sizeof PRE_LAYOUT - 1);
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

static bool is_alpha_attr(const lithe__attr *a) {
    return !strncmp(a->name, PRE_ALPHA, sizeof PRE_ALPHA - 1);
}

/* ---- adding ---- */

void lithe__lora_freeze_base(lithe_model *const *nodes, size_t n) {
    /* a frozen base: every param of the tree but the adapters already there (lithe__lora_attach
     * adds the new ones unfrozen; an adapted weight stays frozen: its adapter trains instead) */
    for (size_t i = 0; i < n; i++)
        for (size_t p = 0; p < nodes[i]->n_params; p++) {
            lithe__param *pr = &nodes[i]->params[p];
            if (!lithe__lora_param(pr->name)) pr->frozen = true;
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

/* A weight that can take an adapter: float32, or (issue 26 item 2: a compact frozen base) a compact
 * 2-D W (int8 / uint8 with its scales, float16, bfloat16) of a native dense layer that computes with
 * compact weights (core/layers/affine.c: the layer's own product reads W as stored; the adapter's
 * A and B are float32 and never touch W). A graph's weights (a Conv adds B·A to a float32 copy)
 * and Maxout's stay float32 only. Merging an adapter into a compact W is refused (fold). */
lithe_status lithe__lora_base_ok(const lithe_model *m, const lithe__param *P) {
    const lithe_tensor *W = P->value;
    if (W->dtype == LITHE_F32) return LITHE_OK;
    bool dense = !lithe__lora_is_graph(m) && dense_like(m) && strcmp(m->type->registered_name, "Maxout.v1");
    if (dense && W->ndim == 2 && lithe__is_compact(W)) return LITHE_OK;
    return lithe__fail(LITHE_ERR_DTYPE, "%s: weight '%s' is %s; LoRA adapts float32 weights%s", m->name, P->name,
                       lithe_dtype_name(W->dtype), dense ? "" : " (compact ones on the dense layers only)");
}

lithe_status lithe__lora_attach(lithe_model *m, const char *pn, int64_t rank, double alpha, int layout,
                                lithe_tensor *A_init, lithe_tensor *B_init, lithe_rng *rng) {
    lithe__param *P = lithe__model_find_param(m, pn);
    if (!P || !P->value)
        return lithe__fail(LITHE_ERR_STATE, "%s: weight '%s' is not allocated: initialize the model first", m->name, pn);
    if (lithe__lora_owned(m, pn))
        return lithe__fail(LITHE_ERR_STATE, "%s: weight '%s' has a LoRA adapter already", m->name, pn);
    LITHE__TRY(lithe__lora_base_ok(m, P));
    if (!(layout == LITHE__LORA_T ? P->value->ndim == 2 : layout >= 1 && layout < P->value->ndim) || rank < 1)
        return lithe__fail(LITHE_ERR_VALUE, "%s: weight '%s' (%d-d) cannot take a rank-%lld adapter in layout %d",
                           m->name, pn, P->value->ndim, (long long)rank, layout);
    int64_t rows, cols;
    layout_dims(P->value, layout, &rows, &cols);
    char kA[256], kB[256], kAl[256], kL[256];
    LITHE__TRY(key(kA, sizeof kA, PRE_A, pn));
    LITHE__TRY(key(kB, sizeof kB, PRE_B, pn));
    LITHE__TRY(key(kAl, sizeof kAl, PRE_ALPHA, pn));
    LITHE__TRY(key(kL, sizeof kL, PRE_LAYOUT, pn));
    if ((A_init && (A_init->ndim != 2 || A_init->shape[0] != rank || A_init->shape[1] != cols)) ||
        (B_init && (B_init->ndim != 2 || B_init->shape[0] != rows || B_init->shape[1] != rank)))
        return lithe__fail(LITHE_ERR_SHAPE, "%s: LoRA adapter of '%s' must have A (%lld, %lld) and B (%lld, %lld)",
                           m->name, pn, (long long)rank, (long long)cols, (long long)rows, (long long)rank);
    lithe_tensor *A = NULL, *B = NULL;
    float *host = NULL;
    lithe_status s = lithe__tensor_alloc(m->backend, LITHE_F32, 2, (int64_t[]){rank, cols}, false, &A);
    if (s == LITHE_OK) s = lithe__tensor_alloc(m->backend, LITHE_F32, 2, (int64_t[]){rows, rank}, true, &B);
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
    if (s == LITHE_OK) s = lithe_model_set_attr_int(m, kL, layout);
    if (s == LITHE_OK) s = lithe_model_set_attr_float(m, kAl, alpha);
    lithe__free(host);
    lithe_tensor_release(A);
    lithe_tensor_release(B);
    if (s != LITHE_OK) {
        lithe__lora_detach(m, pn);
        return s;
    }
    /* the base stays put (frozen: no gradient, no state, no copy); A and B train */
    lithe__model_find_param(m, kA)->frozen = false;
    lithe__model_find_param(m, kB)->frozen = false;
    lithe__model_find_param(m, pn)->frozen = true;
    return LITHE_OK;
}

void lithe__lora_detach(lithe_model *m, const char *pn) {
    char k[2][256];
    bool ok = key(k[0], sizeof k[0], PRE_A, pn) == LITHE_OK && key(k[1], sizeof k[1], PRE_B, pn) == LITHE_OK;
    if (!ok) return;
    size_t kept = 0;
    for (size_t p = 0; p < m->n_params; p++) {
        lithe__param *pr = &m->params[p];
        if (!strcmp(pr->name, k[0]) || !strcmp(pr->name, k[1])) {
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
        LITHE__TRY(lithe__lora_base_ok(m, P)); /* before the base is frozen: a refusal changes nothing */
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

/* P += s · B·A (or its transpose), D read as the layout says. */
static lithe_status fold(lithe_model *m, lithe__param *P, int layout) {
    lithe__lora_ad ad;
    bool on = false;
    LITHE__TRY(lithe__lora_of(m, P, &ad, &on));
    if (!on) return lithe__fail(LITHE_ERR_STATE, "%s: LoRA adapter of '%s' is incomplete", m->name, P->name);
    if (P->value->dtype != LITHE_F32 || !(layout == LITHE__LORA_T ? P->value->ndim == 2 : layout >= 1 && layout < P->value->ndim))
        return lithe__fail(LITHE_ERR_STATE, "%s: weight '%s' (%s, %d-d) cannot take its adapter's layout %d", m->name,
                           P->name, lithe_dtype_name(P->value->dtype), P->value->ndim, layout);
    int64_t rows, cols;
    layout_dims(P->value, layout, &rows, &cols);
    const lithe_tensor *A = ad.A->value, *B = ad.B->value;
    if (A->shape[1] != cols || B->shape[0] != rows)
        return lithe__fail(LITHE_ERR_SHAPE, "%s: LoRA adapter of '%s': A must be (r, %lld) and B (%lld, r)", m->name,
                           P->name, (long long)cols, (long long)rows);
    lithe_tensor *P2 = NULL;
    int64_t shape[2] = {layout == LITHE__LORA_T ? cols : rows, layout == LITHE__LORA_T ? rows : cols};
    LITHE__TRY(lithe_tensor_reshape(P->value, 2, shape, &P2));
    lithe_status st = layout == LITHE__LORA_T ? lithe__op_gemm(m->backend, true, true, ad.s, A, B, 1.0f, P2) /* Aᵀ·Bᵀ */
                                              : lithe__op_gemm(m->backend, false, false, ad.s, B, A, 1.0f, P2);
    lithe_tensor_release(P2);
    return st;
}

static lithe_status merge(lithe_model *m) {
    lithe__walk_buf w;
    LITHE__TRY(lithe__walk_collect(m, &w));
    lithe_status s = LITHE_OK;
    /* first: no adapted weight is compact (fold refuses one; the merge would stop halfway) */
    for (size_t i = 0; i < w.n && s == LITHE_OK; i++)
        for (size_t a = 0; a < w.v[i]->n_attrs && s == LITHE_OK; a++) {
            if (!is_alpha_attr(&w.v[i]->attrs[a])) continue;
            const lithe__param *P = lithe__model_find_param(w.v[i], w.v[i]->attrs[a].name + sizeof PRE_ALPHA - 1);
            if (P && P->value && P->value->dtype != LITHE_F32)
                s = lithe__fail(LITHE_ERR_DTYPE, "%s: weight '%s' is %s: an adapter merges into a float32 weight only "
                                "(lithe_model_compress_weights(m, LITHE_F32) first, or save the adapters alone)",
                                w.v[i]->name, P->name, lithe_dtype_name(P->value->dtype));
        }
    for (size_t i = 0; i < w.n && s == LITHE_OK; i++) {
        lithe_model *node = w.v[i];
        for (size_t a = 0; a < node->n_attrs && s == LITHE_OK;) {
            if (!is_alpha_attr(&node->attrs[a])) {
                a++;
                continue;
            }
            char pn[256], k[300];
            snprintf(pn, sizeof pn, "%s", node->attrs[a].name + sizeof PRE_ALPHA - 1);
            lithe__param *P = lithe__model_find_param(node, pn);
            int64_t layout = 0;
            snprintf(k, sizeof k, "%s%s", PRE_LAYOUT, pn);
            if (!P || !P->value || lithe_model_get_attr_int(node, k, &layout) != LITHE_OK)
                s = lithe__fail(LITHE_ERR_STATE, "%s: LoRA adapter of '%s' has no weight or layout", node->name, pn);
            if (s == LITHE_OK) s = fold(node, P, (int)layout);
            if (s != LITHE_OK) break;
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
