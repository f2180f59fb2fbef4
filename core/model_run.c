/* The Model node's running: moving a tree between backends, backprop callbacks, initialize,
 * predict, the debug wrapper and finish_update. */
#include "internal.h"

#include <stdio.h>

/* ---- moving between backends ---- */

/* A copy of t in be's memory in *out (lithe_tensor_to_backend), or NULL in *out when there is
 * nothing to move (t NULL or already there). */
static lithe_status copy_to_backend(const lithe_tensor *t, lithe_backend *be, lithe_tensor **out) {
    *out = NULL;
    if (!t || t->storage->backend == be) return LITHE_OK;
    return lithe_tensor_to_backend(t, be, out);
}

/* Moves one node's params and grads, all or none: the copies are made first and swapped in only
 * when every one succeeded. */
static lithe_status move_node(lithe_model *node, lithe_backend *to, const char *fn) {
    size_t k = 2 * node->n_params;
    lithe_tensor **fresh = k ? lithe__calloc(k, sizeof *fresh) : NULL;
    if (k && !fresh) return lithe__oom(fn, k * sizeof *fresh);
    lithe_status s = LITHE_OK;
    for (size_t p = 0; p < node->n_params && s == LITHE_OK; p++) {
        s = copy_to_backend(node->params[p].value, to, &fresh[2 * p]);
        if (s == LITHE_OK) s = copy_to_backend(node->params[p].grad, to, &fresh[2 * p + 1]);
    }
    for (size_t p = 0; p < node->n_params; p++) {
        lithe_tensor **slot[2] = {&node->params[p].value, &node->params[p].grad};
        for (int j = 0; j < 2; j++) {
            lithe_tensor *f = fresh[2 * p + (size_t)j];
            if (!f) continue;
            if (s != LITHE_OK) lithe_tensor_release(f);
            else {
                lithe_tensor_release(*slot[j]);
                *slot[j] = f;
            }
        }
    }
    lithe__free(fresh);
    if (s == LITHE_OK) node->backend = to;
    return s;
}

static lithe_status move_model_body(lithe_model *m, lithe_backend *backend, const char *fn) {
    LITHE__CHECK_ARG(m && backend, fn, "model or backend is NULL");
    lithe__walk_buf w;
    LITHE__TRY(lithe__walk_collect(m, &w));
    /* Thinc's with_cpu keeps its layer on the CPU whatever the rest runs on: its subtree stays. */
    lithe_model **pinned = NULL;
    size_t n_pinned = 0;
    lithe_status s = LITHE_OK;
    for (size_t i = 0; i < w.n && s == LITHE_OK; i++)
        if (!strcmp(w.v[i]->type->registered_name, "with_cpu.v1")) {
            lithe__walk_buf sub;
            s = w.v[i]->n_layers ? lithe__walk_collect(w.v[i]->layers[0], &sub) : LITHE_OK;
            if (s != LITHE_OK || !w.v[i]->n_layers) continue;
            lithe_model **more = lithe__realloc(pinned, (n_pinned + sub.n) * sizeof *more);
            if (!more) s = lithe__oom(fn, (n_pinned + sub.n) * sizeof *more);
            else {
                pinned = more;
                memcpy(pinned + n_pinned, sub.v, sub.n * sizeof *sub.v);
                n_pinned += sub.n;
            }
            lithe__free(sub.v);
        }
    for (size_t i = 0; i < w.n && s == LITHE_OK; i++) {
        lithe_model *node = w.v[i];
        lithe_backend *to = backend;
        for (size_t k = 0; k < n_pinned; k++)
            if (pinned[k] == node) to = lithe__backend_host();
        s = move_node(node, to, fn);
    }
    lithe__free(pinned);
    lithe__free(w.v);
    return s;
}

static lithe_status move_model(lithe_model *m, lithe_backend *backend, const char *fn) {
    LITHE__CHECK_ARG(m && backend, fn, "model or backend is NULL");
    LITHE__TRY(lithe__enter_tree(m, fn));
    lithe_status s = move_model_body(m, backend, fn);
    lithe__leave_tree(m);
    return s;
}

lithe_status lithe_model_set_backend(lithe_model *m, lithe_backend *backend) {
    return move_model(m, backend, "lithe_model_set_backend");
}

/* the same move under its second name (include/lithe.h) */
lithe_status lithe_model_to_backend(lithe_model *m, lithe_backend *backend) {
    return move_model(m, backend, "lithe_model_to_backend");
}

/* ---- running ---- */

lithe_status lithe__backprop_new(lithe_model *m, size_t size,
                                 lithe_status (*run)(lithe_backprop *, const lithe_value *, lithe_value **),
                                 void (*destroy)(lithe_backprop *), lithe_backprop **out) {
    lithe_backprop *bp = lithe__calloc(1, size);
    if (!bp) return lithe__oom(m->name, size);
    bp->run = run;
    bp->destroy = destroy;
    bp->model = lithe_model_retain(m);
    *out = bp;
    return LITHE_OK;
}

static lithe_status identity_run(lithe_backprop *self, const lithe_value *dY, lithe_value **dX) {
    (void)self;
    if (dX) *dX = lithe_value_retain((lithe_value *)dY);
    return LITHE_OK;
}

lithe_status lithe__backprop_identity(lithe_model *m, lithe_backprop **out) {
    return lithe__backprop_new(m, sizeof(lithe_backprop), identity_run, NULL, out);
}

void lithe_backprop_free(lithe_backprop *bp) {
    if (!bp) return;
    if (bp->destroy) bp->destroy(bp);
    lithe_model_free(bp->model);
    lithe__free(bp);
}

static lithe_status backprop_run(lithe_backprop *bp, const lithe_value *dY, lithe_value **dX) {
    if (dX) *dX = NULL;
    LITHE__CHECK_ARG(bp && dY, "lithe_backprop_run", "record or dY is NULL");
    return bp->run(bp, dY, dX);
}

lithe_status lithe_backprop_run(lithe_backprop *bp, const lithe_value *dY, lithe_value **dX) {
    if (dX) *dX = NULL;
    LITHE__CHECK_ARG(bp && dY, "lithe_backprop_run", "record or dY is NULL");
    LITHE__TRY(lithe__enter(bp->model, "lithe_backprop_run"));
    lithe_status s = backprop_run(bp, dY, dX);
    lithe__leave(bp->model);
    return s;
}

static lithe_status initialize(lithe_model *m, const lithe_value *X, const lithe_value *Y) {
    LITHE__CHECK_ARG(m, "lithe_model_initialize", "model is NULL");
    if (m->debug && m->debug->on_init) m->debug->on_init(m->debug->user, m, X, Y);
    if (!m->type->init) return LITHE_OK;
    return m->type->init(m, X, Y);
}

lithe_status lithe_model_initialize(lithe_model *m, const lithe_value *X, const lithe_value *Y) {
    LITHE__CHECK_ARG(m, "lithe_model_initialize", "model is NULL");
    LITHE__TRY(lithe__enter(m, "lithe_model_initialize"));
    lithe_status s = initialize(m, X, Y);
    lithe__leave(m);
    return s;
}

/* with_debug's backprop: the hook sees dY, then the layer's own record runs. */
typedef struct debug_bp {
    lithe_backprop base;
    lithe_backprop *inner;
} debug_bp;

static lithe_status debug_backward(lithe_backprop *self, const lithe_value *dY, lithe_value **dX) {
    lithe_model *m = self->model;
    if (m->debug && m->debug->on_backprop) m->debug->on_backprop(m->debug->user, m, dY);
    return lithe_backprop_run(((debug_bp *)self)->inner, dY, dX);
}

static void debug_destroy(lithe_backprop *self) { lithe_backprop_free(((debug_bp *)self)->inner); }

static lithe_status forward(lithe_model *m, const lithe_value *X, bool is_train, lithe_value **Y,
                                 lithe_backprop **bp) {
    if (Y) *Y = NULL;
    if (bp) *bp = NULL;
    LITHE__CHECK_ARG(m && X && Y, "lithe_model_forward", "model, X or Y is NULL");
    if (!m->debug) return m->type->forward(m, X, is_train, Y, bp);
    if (m->debug->on_forward) m->debug->on_forward(m->debug->user, m, X, is_train);
    lithe_backprop *inner = NULL;
    LITHE__TRY(m->type->forward(m, X, is_train, Y, bp ? &inner : NULL));
    if (!bp) return LITHE_OK;
    lithe_status s = lithe__backprop_new(m, sizeof(debug_bp), debug_backward, debug_destroy, bp);
    if (s != LITHE_OK) {
        lithe_backprop_free(inner);
        lithe_value_release(*Y);
        *Y = NULL;
        return s;
    }
    ((debug_bp *)*bp)->inner = inner;
    return LITHE_OK;
}

lithe_status lithe_model_forward(lithe_model *m, const lithe_value *X, bool is_train, lithe_value **Y,
                                 lithe_backprop **bp) {
    if (Y) *Y = NULL;
    if (bp) *bp = NULL;
    LITHE__CHECK_ARG(m && X && Y, "lithe_model_forward", "model, X or Y is NULL");
    LITHE__TRY(lithe__enter(m, "lithe_model_forward"));
    lithe_status s = forward(m, X, is_train, Y, bp);
    lithe__leave(m);
    return s;
}

lithe_status lithe_with_debug(lithe_model *layer, const lithe_debug_hooks *hooks, lithe_model **out) {
    if (out) *out = NULL;
    LITHE__CHECK_ARG(layer && out, "lithe_with_debug", "layer or out is NULL");
    lithe_debug_hooks *h = NULL;
    if (hooks) {
        h = lithe__malloc(sizeof *h);
        if (!h) return lithe__oom("with_debug", sizeof *h);
        *h = *hooks;
    }
    lithe__free(layer->debug);
    layer->debug = h;
    *out = layer;
    return LITHE_OK;
}

lithe_status lithe_model_begin_update(lithe_model *m, const lithe_value *X, lithe_value **Y,
                                      lithe_backprop **bp) {
    if (bp) *bp = NULL;
    if (Y) *Y = NULL;
    LITHE__CHECK_ARG(bp, "lithe_model_begin_update", "bp is NULL");
    if (m && X && m->budget) LITHE__TRY(lithe__budget_check(m, X)); /* refused before anything runs */
    return lithe_model_forward(m, X, true, Y, bp);
}

lithe_status lithe_model_predict(lithe_model *m, const lithe_value *X, lithe_value **Y) {
    return lithe_model_forward(m, X, false, Y, NULL);
}

lithe_status lithe_model_predict_tensor(lithe_model *m, lithe_tensor *X, lithe_tensor **Y) {
    LITHE__CHECK_ARG(Y, "lithe_model_predict_tensor", "Y is NULL");
    *Y = NULL;
    lithe_value *xv = NULL, *yv = NULL;
    LITHE__TRY(lithe_value_tensor(X, &xv));
    lithe_status s = lithe_model_predict(m, xv, &yv);
    lithe_value_release(xv);
    if (s != LITHE_OK) return s;
    if (yv->kind != LITHE_VALUE_TENSOR) {
        lithe_value_release(yv);
        return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: output is not an array", m->name);
    }
    *Y = lithe_tensor_retain(yv->t[0]);
    lithe_value_release(yv);
    return LITHE_OK;
}

static lithe_status finish_update(lithe_model *m, lithe_optimizer *opt) {
    LITHE__CHECK_ARG(m && opt, "lithe_model_finish_update", "model or optimizer is NULL");
    lithe__walk_buf w;
    LITHE__TRY(lithe__walk_collect(m, &w));
    lithe_status s = LITHE_OK;
    /* the optional non-finite check: every gradient before anything changes */
    if (lithe__optimizer_checks_finite(opt))
        for (size_t i = 0; i < w.n && s == LITHE_OK; i++)
            for (size_t p = 0; p < w.v[i]->n_params && s == LITHE_OK; p++) {
                lithe__param *pr = &w.v[i]->params[p];
                if (pr->value && pr->grad && !pr->frozen)
                    s = lithe__grad_check_finite("finish_update", w.v[i], pr->name, pr->grad);
            }
    /* Thinc updates every shim of the tree first, then the params */
    for (size_t i = 0; i < w.n && s == LITHE_OK; i++)
        for (size_t k = 0; k < w.v[i]->n_shims && s == LITHE_OK; k++)
            s = w.v[i]->shims[k]->type->finish_update(w.v[i]->shims[k], opt);
    /* two passes: allocate all optimizer state, then step — an OOM changes no param */
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < w.n && s == LITHE_OK; i++) {
            lithe_model *node = w.v[i];
            for (size_t p = 0; p < node->n_params && s == LITHE_OK; p++) {
                lithe__param *pr = &node->params[p];
                if (!pr->value || !pr->grad) continue;
                if (pr->frozen) { /* the optimizer skips it; its gradient is consumed all the same */
                    if (pass == 1) s = lithe__op_fill(node->backend, pr->grad, 0.0f);
                    continue;
                }
                if (pass == 0) lithe__persistent(node->backend, true);
                s = pass == 0 ? lithe__optimizer_prepare(opt, node, pr->name, pr->value)
                              : lithe_optimizer_step(opt, node, pr->name, pr->value, pr->grad);
                if (pass == 0) lithe__persistent(node->backend, false);
            }
        }
    lithe__free(w.v);
    return s;
}

lithe_status lithe_model_finish_update(lithe_model *m, lithe_optimizer *opt) {
    LITHE__CHECK_ARG(m && opt, "lithe_model_finish_update", "model or optimizer is NULL");
    LITHE__TRY(lithe__enter_tree(m, "lithe_model_finish_update"));
    lithe_status s = finish_update(m, opt);
    lithe__leave_tree(m);
    return s;
}
