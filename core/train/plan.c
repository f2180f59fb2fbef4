/* The training memory plan (a dry run at one and two rows, extrapolated to the batch) and the
 * budget that refuses a step over it (issue 26 item 4; docs/training.md). In the npm package this
 * lives in the importer module (planning is rare): setting a budget loads it first. */
#include "../internal.h"

#include <stdio.h>
#include <string.h>

/* ---- the plan: a dry run ---- */

/* Forward + backprop of X's first `rows` rows (dY ones); the high-water mark above what was in use
 * before, and the bytes of the gradient buffers the run made (they are freed again here). */
static lithe_status dry_run(lithe_model *m, lithe__walk_buf *w, lithe_tensor *X, int64_t rows, size_t *act,
                            size_t *grads) {
    const lithe_backend *be = m->backend;
    lithe_tensor *Xr = NULL, *dy = NULL;
    lithe_value *xv = NULL, *yv = NULL, *dyv = NULL;
    lithe_backprop *bp = NULL;
    lithe_backend_memory_info a, b;
    LITHE__TRY(lithe_tensor_slice(X, 0, 0, rows, &Xr));
    lithe_status s = lithe_value_tensor(Xr, &xv);
    lithe_tensor_release(Xr);
    if (s == LITHE_OK) s = lithe_backend_memory(be, &a);
    if (s == LITHE_OK) be->desc->memory_peak(be, true);
    if (s == LITHE_OK) s = lithe_model_forward(m, xv, true, &yv, &bp);
    lithe_tensor *Y = s == LITHE_OK ? lithe_value_get_tensor(yv) : NULL;
    if (s == LITHE_OK && (!Y || Y->dtype != LITHE_F32))
        s = lithe__fail(LITHE_ERR_UNSUPPORTED, "lithe_model_plan_train: %s's output is not a float32 array", m->name);
    if (s == LITHE_OK) s = lithe__tensor_like(Y, false, &dy);
    if (s == LITHE_OK) s = lithe__op_fill(m->backend, dy, 1.0f);
    if (s == LITHE_OK) s = lithe_value_tensor(dy, &dyv);
    if (s == LITHE_OK) s = lithe_backprop_run(bp, dyv, NULL);
    lithe_tensor_release(dy);
    lithe_value_release(dyv);
    lithe_value_release(yv);
    lithe_backprop_free(bp);
    lithe_value_release(xv);
    size_t g = 0;
    for (size_t i = 0; i < w->n; i++)
        for (size_t p = 0; p < w->v[i]->n_params; p++) {
            lithe__param *pr = &w->v[i]->params[p];
            g += lithe__tensor_nbytes(pr->grad);
            lithe_tensor_release(pr->grad);
            pr->grad = NULL;
        }
    if (s == LITHE_OK) s = lithe_backend_memory(be, &b);
    size_t peak = s == LITHE_OK && b.peak > a.in_use ? b.peak - a.in_use : 0;
    *grads = g;
    *act = peak > g ? peak - g : 0;
    return s;
}

lithe_status lithe_model_plan_train(lithe_model *m, const lithe_value *X, int64_t batch, const lithe_optimizer *opt,
                                    lithe_train_memory *out) {
    LITHE__CHECK_ARG(m && X && out, "lithe_model_plan_train", "model, X or out is NULL");
    memset(out, 0, sizeof *out);
    lithe_tensor *Xt = lithe_value_get_tensor(X);
    if (!Xt || Xt->ndim < 1 || Xt->shape[0] < 1)
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "lithe_model_plan_train: X must be an array of at least one row");
    if (batch <= 0) batch = Xt->shape[0];
    if (!m->backend || !m->backend->desc->memory_peak || !m->backend->desc->memory_stats)
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "lithe_model_plan_train: backend '%s' keeps no high-water mark",
                           m->backend ? m->backend->name : "(none)");
    lithe__walk_buf w;
    LITHE__TRY(lithe__walk_collect(m, &w));
    size_t np = 0;
    for (size_t i = 0; i < w.n; i++) np += w.v[i]->n_params;
    lithe_tensor **kept = lithe__calloc(np ? np : 1, sizeof *kept);
    lithe_rng *rngs = lithe__calloc(w.n ? w.n : 1, sizeof *rngs);
    lithe_status s = kept && rngs ? LITHE_OK : lithe__oom("lithe_model_plan_train", np * sizeof *kept);
    size_t k = 0, params = 0, trainable = 0;
    for (size_t i = 0; s == LITHE_OK && i < w.n; i++) {
        rngs[i] = w.v[i]->rng;
        for (size_t p = 0; p < w.v[i]->n_params; p++, k++) {
            lithe__param *pr = &w.v[i]->params[p];
            kept[k] = pr->grad; /* put aside: the dry run accumulates into fresh buffers */
            pr->grad = NULL;
            params += lithe__tensor_nbytes(pr->value);
            if (pr->value && !pr->frozen) trainable += lithe__tensor_nbytes(pr->value);
        }
    }
    size_t act1 = 0, act2 = 0, grads = 0;
    if (s == LITHE_OK) s = dry_run(m, &w, Xt, 1, &act1, &grads);
    act2 = act1;
    if (s == LITHE_OK && Xt->shape[0] >= 2) {
        for (size_t i = 0; i < w.n; i++) w.v[i]->rng = rngs[i];
        s = dry_run(m, &w, Xt, 2, &act2, &grads);
    }
    k = 0;
    for (size_t i = 0; kept && rngs && i < w.n; i++) {
        w.v[i]->rng = rngs[i];
        for (size_t p = 0; p < w.v[i]->n_params; p++, k++) w.v[i]->params[p].grad = kept[k];
    }
    /* what the dry runs' graph plans keep (their pools, at one and two rows) and what the backend
     * cached goes back: a step at the batch uses neither, and they held ~140 MiB of mobilenet_v2's */
    for (size_t i = 0; i < w.n; i++) lithe__graph_trim_pools(w.v[i]);
    if (m->backend->desc->cache_flush) m->backend->desc->cache_flush();
    lithe__free(kept);
    lithe__free(rngs);
    lithe__free(w.v);
    if (s != LITHE_OK) return s;
    /* activations are affine in the batch: a + b * rows, from rows 1 and 2 (one row: proportional) */
    double slope = Xt->shape[0] >= 2 ? (double)act2 - (double)act1 : (double)act1;
    double at_batch = (double)act1 + slope * (double)(batch - 1);
    out->params = params;
    out->grads = grads;
    out->opt_state = trainable * lithe__optimizer_state_copies(opt);
    out->activations = at_batch > 0 ? (size_t)at_batch : 0;
    out->workspace = 0;
    out->total = out->params + out->grads + out->opt_state + out->activations + out->workspace;
    out->batch = batch;
    return LITHE_OK;
}

/* ---- the budget ---- */

struct lithe__mem_budget {
    size_t bytes;
    const lithe_optimizer *opt;
    bool planned;
    int ndim;
    int64_t row_shape[8];      /* the shape of one row the plan was made for */
    lithe_train_memory at1, at2; /* the plan at batch 1 and 2 (activations affine in between) */
};

lithe_status lithe_model_set_memory_budget(lithe_model *m, size_t bytes, const lithe_optimizer *opt) {
    LITHE__CHECK_ARG(m, "lithe_model_set_memory_budget", "model is NULL");
    if (!bytes) {
        lithe__free(m->budget);
        m->budget = NULL;
        return LITHE_OK;
    }
    if (!m->budget && !(m->budget = lithe__calloc(1, sizeof *m->budget)))
        return lithe__oom("lithe_model_set_memory_budget", sizeof *m->budget);
    memset(m->budget, 0, sizeof *m->budget);
    m->budget->bytes = bytes;
    m->budget->opt = opt;
    return LITHE_OK;
}

static double mib(size_t b) { return (double)b / (1024.0 * 1024.0); }

lithe_status lithe__budget_check(lithe_model *m, const lithe_value *X) {
    struct lithe__mem_budget *bg = m->budget;
    if (!bg || !bg->bytes) return LITHE_OK;
    lithe_tensor *Xt = lithe_value_get_tensor(X);
    if (!Xt || Xt->ndim < 1 || Xt->ndim > 8)
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "%s: a memory budget needs an array input (plan the step with "
                           "lithe_model_plan_train)", m->name);
    bool same = bg->planned && bg->ndim == Xt->ndim;
    for (int d = 1; same && d < Xt->ndim; d++) same = bg->row_shape[d] == Xt->shape[d];
    if (!same) { /* plan once per row shape: a dry run at 1 and 2 rows, far below the batch */
        lithe_train_memory a, b;
        LITHE__TRY(lithe_model_plan_train(m, X, 1, bg->opt, &a));
        LITHE__TRY(lithe_model_plan_train(m, X, 2, bg->opt, &b));
        bg->at1 = a, bg->at2 = b, bg->planned = true, bg->ndim = Xt->ndim;
        for (int d = 0; d < Xt->ndim; d++) bg->row_shape[d] = Xt->shape[d];
    }
    double slope = (double)bg->at2.activations - (double)bg->at1.activations;
    double act = (double)bg->at1.activations + slope * (double)(Xt->shape[0] - 1);
    lithe_train_memory t = bg->at1;
    t.activations = act > 0 ? (size_t)act : 0;
    t.total = t.params + t.grads + t.opt_state + t.activations + t.workspace;
    if (t.total <= bg->bytes) return LITHE_OK;
    return lithe__fail(LITHE_ERR_OOM,
                       "%s: a training step at batch %lld needs %.1f MiB (params %.1f, grads %.1f, optimizer state "
                       "%.1f, activations %.1f, workspace %.1f) over the memory budget of %.1f MiB; nothing was run",
                       m->name, (long long)Xt->shape[0], mib(t.total), mib(t.params), mib(t.grads), mib(t.opt_state),
                       mib(t.activations), mib(t.workspace), mib(bg->bytes));
}
