/* Fine-tuning on a memory budget (issue 26): freezing by name pattern, the trainable test that lets
 * chain's backprop stop early, the gradient-buffer and backend-memory counts (the training memory
 * plan and the budget: plan.c). docs/training.md, "Fine-tuning on a memory budget". */
#include "../internal.h"

#include <stdio.h>

/* ---- freezing ---- */

/* Glob (core/layers.h; freezing and LoRA's patterns): '*' any run (also empty), '?' one character;
 * everything else literal. Iterative with one backtrack point, so linear-ish and no recursion on
 * hostile patterns. */
bool lithe__glob(const char *p, const char *s) {
    const char *star = NULL, *resume = NULL;
    while (*s) {
        if (*p == '*') {
            star = p++;
            resume = s;
        } else if (*p == '?' || *p == *s) {
            p++;
            s++;
        } else if (star) {
            p = star + 1;
            s = ++resume;
        } else {
            return false;
        }
    }
    while (*p == '*') p++;
    return !*p;
}

bool lithe__param_matches(const lithe_model *node, const char *param, const char *pattern) {
    if (lithe__glob(pattern, param)) return true;
    char full[512];
    int n = snprintf(full, sizeof full, "%s/%s", node->name, param);
    return n > 0 && (size_t)n < sizeof full && lithe__glob(pattern, full);
}

lithe_status lithe_model_freeze_matching(lithe_model *m, const char *pattern, bool frozen, size_t *n_matched) {
    if (n_matched) *n_matched = 0;
    LITHE__CHECK_ARG(m && pattern, "lithe_model_freeze_matching", "model or pattern is NULL");
    lithe__walk_buf w;
    LITHE__TRY(lithe__walk_collect(m, &w));
    size_t n = 0;
    for (int pass = 0; pass < 2; pass++) /* count first: no match changes nothing */
        for (size_t i = 0; i < w.n; i++)
            for (size_t p = 0; p < w.v[i]->n_params; p++)
                if (lithe__param_matches(w.v[i], w.v[i]->params[p].name, pattern)) {
                    if (pass == 0) n++;
                    else if (n) w.v[i]->params[p].frozen = frozen;
                }
    lithe__free(w.v);
    if (!n) return lithe__fail(LITHE_ERR_NOT_FOUND, "lithe_model_freeze_matching: no param of %s matches '%s'", m->name, pattern);
    if (n_matched) *n_matched = n;
    return LITHE_OK;
}

bool lithe__subtree_trainable(const lithe_model *m) {
    if (!m) return false;
    for (size_t p = 0; p < m->n_params; p++)
        if (m->params[p].value && !m->params[p].frozen) return true;
    for (size_t i = 0; i < m->n_layers; i++)
        if (lithe__subtree_trainable(m->layers[i])) return true;
    return false;
}

bool lithe_model_has_trainable(const lithe_model *m) { return lithe__subtree_trainable(m); }

lithe_status lithe__grad_acc_trainable(lithe_model *m, const char *name, lithe_tensor **grad_out) {
    *grad_out = NULL;
    lithe__param *p = lithe__model_find_param(m, name);
    if (p && p->frozen && !p->grad) return LITHE_OK; /* no buffer for a frozen param */
    return lithe__grad_acc(m, name, grad_out);
}

size_t lithe__tensor_nbytes(const lithe_tensor *t) { return t ? (size_t)t->numel * lithe_dtype_size(t->dtype) : 0; }

void lithe__persistent(lithe_backend *be, bool on) {
    if (be && be->desc->persistent_allocs) be->desc->persistent_allocs(on);
}

size_t lithe_model_grad_count(const lithe_model *m, size_t *bytes) {
    if (bytes) *bytes = 0;
    lithe__walk_buf w;
    if (!m || lithe__walk_collect((lithe_model *)m, &w) != LITHE_OK) return 0;
    size_t n = 0, b = 0;
    for (size_t i = 0; i < w.n; i++)
        for (size_t p = 0; p < w.v[i]->n_params; p++)
            if (w.v[i]->params[p].grad) n++, b += lithe__tensor_nbytes(w.v[i]->params[p].grad);
    lithe__free(w.v);
    if (bytes) *bytes = b;
    return n;
}

/* ---- backend memory ---- */

lithe_status lithe_backend_memory(const lithe_backend *be, lithe_backend_memory_info *out) {
    LITHE__CHECK_ARG(be && out, "lithe_backend_memory", "backend or out is NULL");
    memset(out, 0, sizeof *out);
    if (!be->desc->memory_stats)
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "lithe_backend_memory: backend '%s' keeps no memory figures", be->name);
    be->desc->memory_stats(be, &out->in_use, &out->cached, &out->n_allocs);
    if (be->desc->memory_peak) out->peak = be->desc->memory_peak(be, false);
    return LITHE_OK;
}

lithe_status lithe_backend_reset_peak(const lithe_backend *be) {
    LITHE__CHECK_ARG(be, "lithe_backend_reset_peak", "backend is NULL");
    if (!be->desc->memory_peak)
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "lithe_backend_reset_peak: backend '%s' keeps no high-water mark", be->name);
    be->desc->memory_peak(be, true);
    return LITHE_OK;
}
