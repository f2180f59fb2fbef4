/* The graph layer ("onnx_graph.v1"): an imported ONNX graph as one lithe node. The node keeps the
 * model's bytes as its `onnx` attr (so a .lithe file carries the graph) and every float
 * initializer as a param named as in the graph (so optimizers, files and Thinc-style trees see
 * them as they see any layer's weights); the parsed graph, bound to value slots, hangs off the node
 * as its shim. forward runs the nodes in file order (ONNX requires a topological order) through the
 * backend's primitives and keeps every value for backward, which runs them in reverse. */
#include "graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LAYER "onnx_graph"

/* ---- the shim ---- */

static lithe_status shim_update(lithe_shim *shim, lithe_optimizer *opt) {
    (void)shim; /* the weights are the node's params: finish_update steps them like any layer's */
    (void)opt;
    return LITHE_OK;
}
static void shim_free(lithe_shim *shim) {
    if (!shim) return;
    lithe__graph_free(shim->state);
    lithe__free(shim);
}
static const lithe__shim_type onnx_shim_type = {"onnx", shim_update, shim_free};

static lithe__graph *graph_of(const lithe_model *m) {
    for (size_t i = 0; i < m->n_shims; i++)
        if (m->shims[i] && m->shims[i]->type == &onnx_shim_type) return m->shims[i]->state;
    return NULL;
}

/* Parses the node's `onnx` attr, hangs the graph on it as its shim, and makes sure every weight is
 * a param of the right shape (set from the initializer when the node has none yet: a fresh import;
 * kept when it has: a .lithe file's fine-tuned weights). */
lithe_status lithe__onnx_attach(lithe_model *m) {
    if (graph_of(m)) return LITHE_OK;
    lithe_tensor *bytes = NULL;
    if (lithe_model_attr_type(m, "onnx") != LITHE_ATTR_TENSOR)
        return lithe__fail(LITHE_ERR_STATE, "%s: the node has no 'onnx' attr holding the model's bytes", m->name);
    LITHE__TRY(lithe_model_get_attr_tensor(m, "onnx", &bytes));
    if (bytes->dtype != LITHE_U8 || bytes->ndim != 1 || !lithe_tensor_is_contiguous(bytes) ||
        !bytes->storage->backend->host_memory)
        return lithe__fail(LITHE_ERR_FORMAT, "%s: the 'onnx' attr must be a 1-D uint8 host tensor", m->name);
    lithe__graph *g = NULL;
    LITHE__TRY(lithe__graph_build(lithe__tdata(bytes), (size_t)bytes->numel, &g));
    lithe_status s = LITHE_OK;
    for (size_t i = 0; s == LITHE_OK && i < g->onnx.n_inits; i++) {
        if (g->slot_kind[i] != SLOT_PARAM) continue;
        const lithe__onnx_tensor *t = &g->onnx.inits[i];
        lithe__param *p = lithe__model_find_param(m, t->name);
        if (p && p->value) {
            bool same = p->value->ndim == t->ndim;
            for (int d = 0; same && d < t->ndim; d++) same = p->value->shape[d] == t->dims[d];
            if (!same) {
                char b[LITHE__SHAPE_BUF];
                s = lithe__fail(LITHE_ERR_SHAPE, "%s: param '%s' has shape %s, the graph's initializer has %d dims "
                                                 "(first %lld)", m->name, t->name,
                                lithe__shape_str(p->value, b, sizeof b), t->ndim, (long long)(t->ndim ? t->dims[0] : 0));
            }
            continue;
        }
        lithe_tensor *c = NULL, *v = NULL;
        s = lithe__graph_const_tensor(t, &c);
        if (s == LITHE_OK) s = lithe_tensor_to_backend(c, m->backend, &v);
        if (s == LITHE_OK) s = lithe_model_set_param(m, t->name, v);
        lithe_tensor_release(c);
        lithe_tensor_release(v);
    }
    /* BatchNormalization's running mean and variance are statistics, not weights (torch keeps
     * them as buffers): frozen, so an optimizer never moves them */
    for (size_t i = 0; s == LITHE_OK && i < g->onnx.n_nodes; i++) {
        if (strcmp(g->onnx.nodes[i].op_type, "BatchNormalization")) continue;
        for (size_t k = 3; s == LITHE_OK && k < 5 && k < g->onnx.nodes[i].n_inputs; k++) {
            int64_t sl = g->node_in[i][k];
            if (sl >= 0 && g->slot_kind[sl] == SLOT_PARAM) s = lithe_model_set_frozen(m, g->slot_name[sl], true);
        }
    }
    lithe_shim *shim = NULL;
    if (s == LITHE_OK) {
        shim = lithe__calloc(1, sizeof *shim);
        lithe_shim **arr = lithe__realloc(m->shims, (m->n_shims + 1) * sizeof *arr);
        if (arr) m->shims = arr;
        if (!shim || !arr) s = lithe__oom(m->name, sizeof *shim);
    }
    if (s != LITHE_OK) {
        lithe__free(shim);
        lithe__graph_free(g);
        return s;
    }
    shim->type = &onnx_shim_type;
    shim->state = g;
    m->shims[m->n_shims++] = shim;
    return LITHE_OK;
}

/* ---- running ---- */

/* The slot of node's input k when a gradient flows to it (else -1). */
static int64_t grad_slot(lithe__gexec *x, size_t node, size_t k) {
    if (!x->grads) return -1;
    int64_t s = x->g->node_in[node][k];
    if (s < 0 || !x->needs[s] || !x->vals[s]) return -1;
    if (x->g->slot_kind[s] == SLOT_PARAM) { /* a frozen weight needs a gradient only for its LoRA adapter: none of its own */
        size_t i = x->g->slot_param[s];
        const lithe__param *p = x->m && i && i <= x->m->n_params && x->m->params[i - 1].name == x->g->slot_pname[s]
                                    ? &x->m->params[i - 1] : x->m ? lithe__model_find_param(x->m, x->g->slot_name[s]) : NULL;
        if (p && p->frozen) return -1;
    }
    return s;
}

lithe_status lithe__gexec_grad(lithe__gexec *x, size_t node, size_t k, lithe_tensor **out) {
    *out = NULL;
    int64_t s = grad_slot(x, node, k);
    if (s < 0) return LITHE_OK;
    if (x->n_pend) LITHE__TRY(lithe__gexec_grad_settle(x, s));
    if (!x->grads[s]) LITHE__TRY(lithe__gexec_like(x, x->vals[s], true, &x->grads[s]));
    *out = x->grads[s];
    return LITHE_OK;
}

lithe_status lithe__gexec_grad_fresh(lithe__gexec *x, size_t node, size_t k, lithe_tensor **out, bool *fresh) {
    *out = NULL;
    *fresh = false;
    int64_t s = grad_slot(x, node, k);
    if (s < 0) return LITHE_OK;
    if (x->n_pend) LITHE__TRY(lithe__gexec_grad_settle(x, s));
    if (!x->grads[s]) {
        LITHE__TRY(lithe__gexec_like(x, x->vals[s], false, &x->grads[s]));
        *fresh = true;
    }
    *out = x->grads[s];
    return LITHE_OK;
}

/* ---- gradients written region by region ---- */

static lithe__gpend *pend_of(lithe__gexec *x, int64_t slot) {
    for (int i = 0; i < x->n_pend; i++)
        if (x->pend[i].slot == slot) return &x->pend[i];
    return NULL;
}
static void pend_drop(lithe__gexec *x, lithe__gpend *p) { *p = x->pend[--x->n_pend]; }

/* Zeros into [a, b) along axis of d: in place when the view is one block, else copied from a
 * zeroed temporary (fill writes contiguous tensors only). */
static lithe_status zero_range(lithe__gexec *x, lithe_tensor *d, int axis, int64_t a, int64_t b) {
    lithe_tensor *v = NULL, *z = NULL;
    LITHE__TRY(lithe_tensor_slice(d, axis, a, b, &v));
    lithe_status s = LITHE_OK;
    if (lithe_tensor_is_contiguous(v)) {
        s = lithe__op_fill(x->be, v, 0.0f);
    } else {
        s = lithe__gexec_like(x, v, true, &z);
        if (s == LITHE_OK) s = lithe__op_copy(x->be, v, z);
    }
    lithe_tensor_release(z);
    lithe_tensor_release(v);
    return s;
}

lithe_status lithe__gexec_grad_settle(lithe__gexec *x, int64_t slot) {
    for (int i = x->n_pend; i-- > 0;) {
        if (slot >= 0 && x->pend[i].slot != slot) continue;
        lithe__gpend p = x->pend[i];
        pend_drop(x, &x->pend[i]);
        lithe_tensor *d = x->grads[p.slot];
        if (!d) continue;
        for (int a = 1; a < p.n; a++) /* the ranges by start (a few) */
            for (int b = a; b > 0 && p.range[b][0] < p.range[b - 1][0]; b--) {
                int64_t t0 = p.range[b][0], t1 = p.range[b][1];
                p.range[b][0] = p.range[b - 1][0];
                p.range[b][1] = p.range[b - 1][1];
                p.range[b - 1][0] = t0;
                p.range[b - 1][1] = t1;
            }
        int64_t at = 0;
        for (int r = 0; r < p.n; r++) {
            if (p.range[r][0] > at) LITHE__TRY(zero_range(x, d, p.axis, at, p.range[r][0]));
            if (p.range[r][1] > at) at = p.range[r][1];
        }
        if (at < d->shape[p.axis]) LITHE__TRY(zero_range(x, d, p.axis, at, d->shape[p.axis]));
    }
    return LITHE_OK;
}

lithe_status lithe__gexec_grad_region(lithe__gexec *x, size_t node, size_t k, int axis, int64_t start, int64_t len,
                                      lithe_tensor **out, bool *fresh) {
    *out = NULL;
    *fresh = false;
    int64_t s = grad_slot(x, node, k);
    if (s < 0) return LITHE_OK;
    const lithe_tensor *v = x->vals[s];
    if (axis < 0 || axis >= v->ndim || start < 0 || len < 0 || start > v->shape[axis] - len)
        return lithe__fail(LITHE_ERR_INVALID_ARG, "gradient region [%lld, %lld + %lld) on axis %d of a %d-dim value",
                           (long long)start, (long long)start, (long long)len, axis, v->ndim);
    lithe__gpend *p = pend_of(x, s);
    if (!x->grads[s]) {
        if (p) pend_drop(x, p); /* a gradient released unread */
        bool track = x->n_pend < LITHE__GPEND_SLOTS; /* else zeroed now, as lithe__gexec_grad's */
        LITHE__TRY(lithe__gexec_like(x, v, !track, &x->grads[s]));
        if (track) {
            p = &x->pend[x->n_pend++];
            p->slot = s;
            p->axis = axis;
            p->n = 1;
            p->range[0][0] = start;
            p->range[0][1] = start + len;
        }
        *fresh = true;
    } else if (p) {
        bool apart = p->axis == axis && p->n < LITHE__GPEND_RANGES;
        for (int r = 0; apart && r < p->n; r++) apart = start + len <= p->range[r][0] || start >= p->range[r][1];
        if (apart) {
            p->range[p->n][0] = start;
            p->range[p->n][1] = start + len;
            p->n++;
            *fresh = true;
        } else {
            LITHE__TRY(lithe__gexec_grad_settle(x, s));
        }
    }
    return lithe_tensor_slice(x->grads[s], axis, start, start + len, out);
}

lithe_status lithe__gexec_grad_add(lithe__gexec *x, size_t node, size_t k, lithe_tensor *t) {
    int64_t s = grad_slot(x, node, k);
    if (s < 0 || !t) return LITHE_OK;
    if (x->n_pend) LITHE__TRY(lithe__gexec_grad_settle(x, s));
    const lithe_tensor *v = x->vals[s];
    if (x->grads[s]) {
        if (lithe__same_shape(t, x->grads[s])) return lithe__op_axpby(x->be, 1.0f, t, 1.0f, x->grads[s]);
        lithe_tensor *r = NULL;
        LITHE__TRY(lithe_tensor_reshape(t, x->grads[s]->ndim, x->grads[s]->shape, &r));
        lithe_status st = lithe__op_axpby(x->be, 1.0f, r, 1.0f, x->grads[s]);
        lithe_tensor_release(r);
        return st;
    }
    if (!lithe_tensor_is_contiguous(t) || t->numel != v->numel || t->dtype != LITHE_F32) { /* not adoptable: the sum */
        LITHE__TRY(lithe__gexec_like(x, v, false, &x->grads[s]));
        lithe_tensor *r = NULL;
        LITHE__TRY(lithe_tensor_reshape(x->grads[s], t->ndim, t->shape, &r));
        lithe_status st = lithe__op_copy(x->be, r, t);
        lithe_tensor_release(r);
        return st;
    }
    if (lithe__same_shape(t, v)) {
        x->grads[s] = lithe_tensor_retain(t);
        return LITHE_OK;
    }
    return lithe_tensor_reshape(t, v->ndim, v->shape, &x->grads[s]);
}

static void exec_destroy(lithe_backprop *self) {
    lithe__gexec *x = (lithe__gexec *)self;
    size_t n = x->g ? x->g->n_slots : 0, nn = x->g ? x->g->onnx.n_nodes : 0;
    for (size_t i = 0; x->vals && i < n; i++) lithe_tensor_release(x->vals[i]);
    for (size_t i = 0; x->grads && i < n; i++) lithe_tensor_release(x->grads[i]);
    for (size_t i = 0; x->saved && i < 2 * nn; i++) lithe_tensor_release(x->saved[i]);
    if (x->plan && !x->plan->spare) x->plan->spare = x->arrays; /* for the next run */
    else lithe__free(x->arrays);
    lithe__gplan_unref(x->plan);
}

static lithe_status take_input(lithe__gexec *x, size_t k, lithe_tensor *t) {
    const lithe__graph *g = x->g;
    size_t slot = g->in_slots[k];
    const lithe__onnx_value_info *vi = NULL;
    for (size_t i = 0; i < g->onnx.n_inputs; i++)
        if (!strcmp(g->onnx.inputs[i].name, g->slot_name[slot])) vi = &g->onnx.inputs[i];
    bool want_float = !vi || vi->elem_type == LITHE__ONNX_FLOAT;
    char b[LITHE__SHAPE_BUF];
    if (vi && vi->ndim >= 0) {
        bool ok = t->ndim == vi->ndim;
        for (int d = 0; ok && d < t->ndim; d++) ok = vi->dims[d] < 0 || vi->dims[d] == t->shape[d];
        if (!ok) {
            char decl[LITHE__SHAPE_BUF] = "(";
            for (int d = 0; d < vi->ndim; d++) {
                size_t l = strlen(decl);
                if (vi->dims[d] < 0) snprintf(decl + l, sizeof decl - l, "%s?", d ? ", " : "");
                else snprintf(decl + l, sizeof decl - l, "%s%lld", d ? ", " : "", (long long)vi->dims[d]);
            }
            strncat(decl, ")", sizeof decl - strlen(decl) - 1);
            return lithe__fail(LITHE_ERR_SHAPE, "%s: input '%s' has shape %s; the graph declares %s", x->m->name,
                               g->slot_name[slot], lithe__shape_str(t, b, sizeof b), decl);
        }
    }
    if (want_float) {
        if (t->dtype != LITHE_F32)
            return lithe__fail(LITHE_ERR_DTYPE, "%s: input '%s' must be float32, got %s", x->m->name, g->slot_name[slot],
                               lithe_dtype_name(t->dtype));
        if (t->storage->backend != x->be)
            return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: input '%s' lives on backend '%s', the model on '%s'",
                               x->m->name, g->slot_name[slot], t->storage->backend->name, x->be->name);
        if (lithe_tensor_is_contiguous(t)) {
            x->vals[slot] = lithe_tensor_retain(t);
        } else {
            LITHE__TRY(lithe__gexec_alloc(x, x->be, LITHE_F32, t->ndim, t->shape, false, &x->vals[slot]));
            LITHE__TRY(lithe__op_copy(x->be, x->vals[slot], t));
        }
        x->needs[slot] = !x->no_input_grad;
        return LITHE_OK;
    }
    if (t->dtype != LITHE_I64 && t->dtype != LITHE_I32)
        return lithe__fail(LITHE_ERR_DTYPE, "%s: input '%s' must be int64 or int32, got %s", x->m->name,
                           g->slot_name[slot], lithe_dtype_name(t->dtype));
    lithe_tensor *h = NULL;
    LITHE__TRY(lithe_tensor_to_backend(t, NULL, &h));
    lithe_status s = lithe__gexec_alloc(x, lithe__backend_host(), LITHE_I64, t->ndim, t->shape, false, &x->vals[slot]);
    if (s == LITHE_OK) {
        int64_t *o = lithe__tdata(x->vals[slot]);
        for (int64_t i = 0; i < h->numel; i++)
            o[i] = h->dtype == LITHE_I64 ? ((const int64_t *)lithe__tdata(h))[i] : ((const int32_t *)lithe__tdata(h))[i];
    }
    lithe_tensor_release(h);
    return s;
}

/* Node i's backward in run x (skipped nodes and nodes no gradient passes do nothing); the gradients
 * of its outputs are spent after it. */
lithe_status lithe__gexec_backward_node(lithe__gexec *x, size_t i) {
    lithe__graph *g = x->g;
    if (lithe__gnode_skipped(g, i) || !g->node_op[i]->backward) return LITHE_OK;
    lithe_tensor *in[64] = {0}, *out[16] = {0}, *dout[16] = {0};
    if (g->node_nin[i] > 64 || g->node_nout[i] > 16) return LITHE_OK; /* refused by forward already */
    bool any = false;
    for (size_t k = 0; k < g->node_nout[i]; k++) {
        int64_t o = g->node_out[i][k];
        if (o >= 0 && x->n_pend) LITHE__TRY(lithe__gexec_grad_settle(x, o)); /* read whole now */
        out[k] = o >= 0 ? x->vals[o] : NULL;
        dout[k] = o >= 0 ? x->grads[o] : NULL;
        any = any || dout[k];
    }
    bool wants = false;
    for (size_t k = 0; k < g->node_nin[i]; k++) {
        int64_t s = g->node_in[i][k];
        in[k] = s >= 0 ? x->vals[s] : NULL;
        wants = wants || (s >= 0 && x->needs[s]);
    }
    double t0 = g->profile ? lithe__graph_prof_now() : 0.0;
    if (any && wants) LITHE__TRY(g->node_op[i]->backward(x, i, in, g->node_nin[i], out, dout, &x->saved[2 * i]));
    if (g->profile && any && wants) lithe__graph_prof_add(g, g->onnx.n_nodes + i, lithe__graph_prof_now() - t0);
    /* the gradients of node i's outputs are spent (every reader comes after i and has run):
     * freed now, the backward holds one wave of them rather than a copy of every activation */
    for (size_t k = 0; k < g->node_nout[i]; k++) {
        int64_t o = g->node_out[i][k];
        if (o >= 0 && g->slot_kind[o] != SLOT_PARAM) {
            lithe__gpend *p = x->n_pend ? pend_of(x, o) : NULL;
            if (p) pend_drop(x, p); /* (no backward read it: left unsettled) */
            lithe_tensor_release(x->grads[o]);
            x->grads[o] = NULL;
        }
    }
    return LITHE_OK;
}

static lithe_status graph_backward(lithe_backprop *self, const lithe_value *dYv, lithe_value **dXv) {
    lithe__gexec *x = (lithe__gexec *)self;
    lithe__graph *g = x->g;
    lithe_model *m = self->model;
    for (size_t i = 0; i < g->n_slots; i++) { /* a second call starts from zero again */
        lithe_tensor_release(x->grads[i]);
        x->grads[i] = NULL;
    }
    x->n_pend = 0;
    /* Which values need a gradient, now that the caller has said whether it wants dX: from the
     * float inputs only then, and from the trainable params (x->needs[param] was set at forward),
     * forward through the nodes. With dX NULL and a frozen base, no node before the first trainable
     * weight runs its backward. */
    if (dXv && x->no_input_grad)
        return lithe__fail(LITHE_ERR_STATE, "%s: dX asked of a graph whose attr no_input_grad is set", m->name);
    for (size_t k = 0; k < g->n_in; k++) {
        size_t slot = g->in_slots[k];
        x->needs[slot] = dXv && x->vals[slot] && x->vals[slot]->dtype == LITHE_F32;
    }
    for (size_t i = 0; i < g->onnx.n_nodes; i++) {
        if (g->node_nin[i] > 64 || g->node_nout[i] > 16) continue;
        bool needs = false;
        for (size_t k = 0; k < g->node_nin[i]; k++) {
            int64_t sl = g->node_in[i][k];
            needs = needs || (sl >= 0 && x->needs[sl]);
        }
        for (size_t k = 0; k < g->node_nout[i]; k++) {
            int64_t o = g->node_out[i][k];
            if (o >= 0) x->needs[o] = needs && x->f32[o]; /* recompute: most values are gone by now */
        }
    }
    size_t ndy = g->n_out == 1 ? 1 : lithe_value_len(dYv);
    if (ndy != g->n_out || (g->n_out > 1 && lithe_value_kind_of(dYv) != LITHE_VALUE_TUPLE &&
                            lithe_value_kind_of(dYv) != LITHE_VALUE_LIST))
        return lithe__fail(LITHE_ERR_VALUE, "%s: backprop needs %zu gradient%s (a tuple for several outputs)", m->name,
                           g->n_out, g->n_out == 1 ? "" : "s");
    for (size_t k = 0; k < g->n_out; k++) {
        const lithe_value *v = g->n_out == 1 ? dYv : lithe_value_item(dYv, k);
        lithe_tensor *dy = lithe_value_get_tensor(v), *y = x->vals[g->out_slots[k]];
        size_t slot = g->out_slots[k];
        char a[LITHE__SHAPE_BUF], b[LITHE__SHAPE_BUF];
        if (!dy || dy->dtype != LITHE_F32 || !y || y->dtype != LITHE_F32 || !lithe__same_shape(dy, y))
            return lithe__fail(LITHE_ERR_SHAPE, "%s: gradient %zu has shape %s, output '%s' has %s", m->name, k,
                               dy ? lithe__shape_str(dy, a, sizeof a) : "(none)", g->slot_name[slot],
                               y ? lithe__shape_str(y, b, sizeof b) : "(int)");
        if (!x->needs[slot]) continue;
        if (!x->grads[slot]) LITHE__TRY(lithe__gexec_like(x, y, true, &x->grads[slot]));
        if (lithe_tensor_is_contiguous(dy)) {
            LITHE__TRY(lithe__op_axpby(x->be, 1.0f, dy, 1.0f, x->grads[slot]));
        } else {
            lithe_tensor *c = NULL;
            LITHE__TRY(lithe__gexec_like(x, y, false, &c));
            lithe_status s = lithe__op_copy(x->be, c, dy);
            if (s == LITHE_OK) s = lithe__op_axpby(x->be, 1.0f, c, 1.0f, x->grads[slot]);
            lithe_tensor_release(c);
            LITHE__TRY(s);
        }
    }
    if (x->recompute) {
        LITHE__TRY(lithe__grecompute_backward(x));
    } else {
        for (size_t i = g->onnx.n_nodes; i-- > 0;) LITHE__TRY(lithe__gexec_backward_node(x, i));
    }
    LITHE__TRY(lithe__gexec_grad_settle(x, -1)); /* the params' and inputs' gradients are read whole */
    for (size_t i = 0; i < g->n_slots; i++) {
        if (g->slot_kind[i] != SLOT_PARAM || !x->grads[i]) continue;
        lithe_tensor *acc = NULL;
        LITHE__TRY(lithe__grad_acc(m, g->slot_name[i], &acc));
        LITHE__TRY(lithe__op_axpby(x->be, 1.0f, x->grads[i], 1.0f, acc));
    }
    if (!dXv) return LITHE_OK;
    lithe_value *items[64] = {0};
    if (g->n_in > 64) return lithe__fail(LITHE_ERR_UNSUPPORTED, "%s: more than 64 graph inputs", m->name);
    lithe_status s = LITHE_OK;
    for (size_t k = 0; s == LITHE_OK && k < g->n_in; k++) {
        size_t slot = g->in_slots[k];
        lithe_tensor *d = NULL;
        if (x->grads[slot]) d = lithe_tensor_retain(x->grads[slot]);
        else if (x->vals[slot]->dtype == LITHE_F32) s = lithe__gexec_like(x, x->vals[slot], true, &d);
        else s = lithe__gexec_alloc(x, x->be, LITHE_F32, x->vals[slot]->ndim, x->vals[slot]->shape, true, &d);
        if (s == LITHE_OK) s = lithe__value_wrap(d, &items[k]);
    }
    if (s == LITHE_OK && !x->tuple_in) {
        *dXv = items[0];
        return LITHE_OK;
    }
    if (s == LITHE_OK) s = lithe_value_tuple(g->n_in, items, dXv);
    for (size_t k = 0; k < g->n_in; k++) lithe_value_release(items[k]);
    return s;
}

/* Node i's forward in run x: its outputs into x->vals (and, but while recomputing, whether a
 * gradient flows to them into x->needs); *needs: whether one flows through it. Values the plan
 * fixed are taken from it. */
lithe_status lithe__gexec_forward_node(lithe__gexec *x, size_t i, bool recording, bool *needs_out) {
    lithe__graph *g = x->g;
    lithe__gplan *plan = x->plan;
    lithe_model *m = x->m;
    const lithe__onnx_node *n = &g->onnx.nodes[i];
    lithe_tensor *in[64] = {0}, *out[16] = {0};
    lithe_status s = LITHE_OK;
    *needs_out = false;
    if (g->node_nin[i] > 64 || g->node_nout[i] > 16)
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "%s: %s node '%s' has %zu inputs and %zu outputs (at most 64, 16)",
                           m->name, n->op_type, n->name ? n->name : "", g->node_nin[i], g->node_nout[i]);
    if (lithe__gplan_cached(g, plan, i)) { /* shape arithmetic this signature has computed before */
        for (size_t k = 0; k < g->node_nout[i]; k++) {
            int64_t o = g->node_out[i][k];
            if (o < 0) continue;
            lithe_tensor_release(x->vals[o]);
            x->vals[o] = lithe_tensor_retain(plan->vals[o]);
        }
        *needs_out = true; /* kept as a backward may read it (released by a run without backward) */
        return LITHE_OK;
    }
    bool needs = false;
    for (size_t k = 0; k < g->node_nin[i]; k++) {
        int64_t sl = g->node_in[i][k];
        in[k] = sl >= 0 ? x->vals[sl] : NULL;
        if (sl >= 0 && !in[k]) return lithe__fail(LITHE_ERR_INTERNAL, "%s: slot %lld has no value", m->name, (long long)sl);
        needs = needs || (sl >= 0 && x->needs[sl]);
    }
    if (g->calib && !x->recomputing) g->calib->observe(g->calib, g, i, in);
    double t0 = g->profile ? lithe__graph_prof_now() : 0.0;
    s = g->node_op[i]->forward(x, i, in, g->node_nin[i], out, g->node_nout[i], &x->saved[2 * i]);
    if (g->profile) lithe__graph_prof_add(g, i, lithe__graph_prof_now() - t0);
    for (size_t k = g->node_nout[i]; k < 16; k++) lithe_tensor_release(out[k]); /* a node naming fewer outputs */
    for (size_t k = 0; k < g->node_nout[i]; k++) {
        int64_t o = g->node_out[i][k];
        if (o < 0 || s != LITHE_OK) {
            lithe_tensor_release(out[k]);
            continue;
        }
        if (!out[k]) {
            s = lithe__fail(LITHE_ERR_INTERNAL, "%s: %s node '%s' left output %zu unset", m->name, n->op_type,
                            n->name ? n->name : "", k);
            continue;
        }
        lithe_tensor_release(x->vals[o]); /* recomputing: the value the forward kept (the same) */
        x->vals[o] = out[k];
        x->f32[o] = out[k]->dtype == LITHE_F32;
        if (!x->recomputing) x->needs[o] = needs && x->f32[o];
    }
    if (s == LITHE_OK && recording) s = lithe__gplan_record(x, plan, i);
    *needs_out = needs;
    return s;
}

static lithe_status graph_forward(lithe_model *m, const lithe_value *X, bool is_train, lithe_value **Yv,
                                  lithe_backprop **bp) {
    /* Dropout runs as at inference (exported graphs are traced in eval mode); is_train only says
     * whether Gemm / MatMul may read prepared weights */
    LITHE__TRY(lithe__onnx_attach(m));
    lithe__graph *g = graph_of(m);
    /* the inputs: one tensor, or a tuple / list of them in the graph's input order */
    lithe_value_kind kind = X ? lithe_value_kind_of(X) : LITHE_VALUE_TENSOR;
    bool tuple_in = kind == LITHE_VALUE_TUPLE || kind == LITHE_VALUE_LIST;
    size_t nx = tuple_in ? lithe_value_len(X) : 1;
    if (!X || (!tuple_in && kind != LITHE_VALUE_TENSOR) || nx != g->n_in)
        return lithe__fail(LITHE_ERR_VALUE, "%s: the graph takes %zu input%s (%s), got %zu", m->name, g->n_in,
                           g->n_in == 1 ? "" : "s", g->n_in == 1 ? "a tensor" : "a tuple of tensors", X ? nx : 0);
    lithe_tensor *ts[64];
    if (g->n_in > 64) return lithe__fail(LITHE_ERR_UNSUPPORTED, "%s: more than 64 graph inputs", m->name);
    for (size_t k = 0; k < g->n_in; k++) {
        ts[k] = lithe_value_get_tensor(tuple_in ? lithe_value_item(X, k) : X);
        if (!ts[k]) return lithe__fail(LITHE_ERR_VALUE, "%s: input %zu is not a tensor", m->name, k);
    }
    lithe__gplan *plan = NULL;
    LITHE__TRY(lithe__gplan_for(g, m->backend, ts, &plan));
    lithe_backprop *rec = NULL;
    LITHE__TRY(lithe__backprop_new(m, sizeof(lithe__gexec), graph_backward, exec_destroy, &rec));
    lithe__gexec *x = (lithe__gexec *)rec;
    x->g = g;
    x->m = m;
    x->be = m->backend;
    for (size_t i = 0; bp && i < m->n_attrs; i++)
        if (!strcmp(m->attrs[i].name, "no_input_grad") && m->attrs[i].type == LITHE_ATTR_BOOL)
            x->no_input_grad = m->attrs[i].v.b;
    x->plan = plan;
    plan->refs++;
    x->pool = plan->pool;
    lithe__bufpool_epoch(x->pool);
    x->tuple_in = tuple_in;
    x->keep_all = bp != NULL;
    x->recompute = bp && is_train && lithe__grecompute_on(m);
    x->is_train = is_train;
    /* vals, grads (n_slots + 1 each), saved (2 per node + 1), needs (n_slots + 1): one block, the
     * previous run's when it is free */
    size_t nv = g->n_slots + 1, ns = 2 * g->onnx.n_nodes + 1;
    size_t bytes = (2 * nv + ns) * sizeof(lithe_tensor *) + 2 * nv * sizeof(bool);
    lithe_status s = LITHE_OK;
    if (plan->spare) {
        x->arrays = plan->spare;
        plan->spare = NULL;
        memset(x->arrays, 0, bytes);
    } else if (!(x->arrays = lithe__calloc(1, bytes))) {
        s = lithe__oom(m->name, bytes);
    }
    if (s == LITHE_OK) {
        x->vals = x->arrays;
        x->grads = x->vals + nv;
        x->saved = x->grads + nv;
        x->needs = (bool *)(x->saved + ns);
        x->f32 = x->needs + nv;
    }
    for (size_t k = 0; s == LITHE_OK && k < g->n_in; k++) s = take_input(x, k, ts[k]);
    for (size_t i = 0; s == LITHE_OK && i < g->n_slots; i++) {
        if (g->slot_kind[i] == SLOT_PARAM) {
            /* at the index found in an earlier run (a model's params are only ever added, and their
             * names live as long as the model: the same name pointer there is the same param), else
             * looked up by name: mobilenet_v2's ~100 lookups read ~100 names, out of cache after the
             * weights went through, per run */
            size_t k = g->slot_param[i];
            lithe__param *p = k && k <= m->n_params && m->params[k - 1].name == g->slot_pname[i]
                                  ? &m->params[k - 1] : lithe__model_find_param(m, g->slot_name[i]);
            if (p) g->slot_param[i] = (size_t)(p - m->params) + 1, g->slot_pname[i] = p->name;
            if (!p || !p->value) {
                s = lithe__fail(LITHE_ERR_STATE, "%s: param '%s' is not set", m->name, g->slot_name[i]);
                break;
            }
            x->vals[i] = lithe_tensor_retain(p->value);
            x->needs[i] = !p->frozen || (m->n_attrs > 1 && lithe__lora_owned(m, p->name)); /* an adapter trains through it */
        } else if (g->slot_kind[i] == SLOT_CONST && g->slot_const[i]) {
            if (g->slot_const[i]->dtype == LITHE_F32 && x->be != lithe__backend_host())
                s = lithe_tensor_to_backend(g->slot_const[i], x->be, &x->vals[i]);
            else x->vals[i] = lithe_tensor_retain(g->slot_const[i]);
        }
    }
    bool recording = !plan->recorded;
    if (s == LITHE_OK && x->recompute) {
        s = lithe__grecompute_forward(x, recording);
    } else {
        for (size_t i = 0; s == LITHE_OK && i < g->onnx.n_nodes; i++) {
            if (lithe__gnode_skipped(g, i)) continue;
            bool needs = false;
            s = lithe__gexec_forward_node(x, i, recording, &needs);
            /* a node no gradient flows through (a frozen base before the first trainable weight, when
             * the input needs none) keeps nothing for a backward that will not run */
            if (s == LITHE_OK && (!x->keep_all || !needs)) lithe__gexec_release_after(x, i);
        }
    }
    if (recording) {
        if (s == LITHE_OK) plan->recorded = true;
        else lithe__gplan_forget(plan);
    }
    lithe_value *items[16] = {0};
    if (s == LITHE_OK && g->n_out > 16) s = lithe__fail(LITHE_ERR_UNSUPPORTED, "%s: more than 16 graph outputs", m->name);
    for (size_t k = 0; s == LITHE_OK && k < g->n_out; k++)
        s = lithe__value_wrap(lithe_tensor_retain(x->vals[g->out_slots[k]]), &items[k]);
    if (s == LITHE_OK) {
        if (g->n_out == 1) {
            *Yv = items[0];
            items[0] = NULL;
        } else {
            s = lithe_value_tuple(g->n_out, items, Yv);
        }
    }
    for (size_t k = 0; k < 16; k++) lithe_value_release(items[k]);
    if (s != LITHE_OK || !bp) {
        lithe_backprop_free(rec);
        return s;
    }
    *bp = rec;
    return LITHE_OK;
}

static lithe_status graph_init(lithe_model *m, const lithe_value *X, const lithe_value *Y) {
    (void)X; /* the weights come with the graph */
    (void)Y;
    return lithe__onnx_attach(m);
}

/* ---- weights prepared for inference (core/prepare.c) ---- */

/* The initializer a node input reads (a param's or a constant's tensor), or NULL. */
static lithe_tensor *init_tensor(lithe_model *m, const lithe__graph *g, int64_t slot) {
    if (slot < 0) return NULL;
    if (g->slot_kind[slot] == SLOT_PARAM) {
        lithe__param *p = lithe__model_find_param(m, g->slot_name[slot]);
        return p ? p->value : NULL;
    }
    if (g->slot_kind[slot] == SLOT_CONST && m->backend == lithe__backend_host()) return g->slot_const[slot];
    return NULL; /* a constant is copied to another backend on every run: nothing to keep */
}

lithe_status lithe__graph_prepare(lithe_model *m) {
    LITHE__TRY(lithe__onnx_attach(m));
    lithe__graph *g = graph_of(m);
    for (size_t i = 0; i < g->onnx.n_nodes; i++) {
        const lithe__onnx_node *n = &g->onnx.nodes[i];
        if (lithe__gnode_skipped(g, i) || g->node_nin[i] < 2) continue;
        /* a fused Linear (core/graph/fuse.c) reads its weight as the fused node says (a Transpose
         * it absorbed flips transB); a plain Gemm / MatMul as the file says */
        bool linear = g->node_fuse[i].kind == LITHE__FUSE_LINEAR;
        bool plain = g->node_fuse[i].kind == LITHE__FUSE_NONE;
        bool gemm = plain && !strcmp(n->op_type, "Gemm");
        bool matmul = plain && !strcmp(n->op_type, "MatMul");
        bool conv_act = g->node_fuse[i].kind == LITHE__FUSE_CONV; /* Conv + Relu / Clip: the Conv's attrs */
        bool conv_add = g->node_fuse[i].kind == LITHE__FUSE_CONV_ADD; /* Conv + Add: the Conv's too */
        if (conv_act || conv_add) n = &g->onnx.nodes[g->node_fuse[i].first];
        if (linear || gemm || (plain && !strcmp(n->op_type, "Conv")) || conv_add ||
            (conv_act && lithe__act_clamp(&g->node_fuse[i].act, NULL, NULL))) {
            /* a backend's own operator for W and its bias (LITHE_XNNPACK): a fused Linear as
             * clamp(A·Wᵀ + bias) (no act or relu), a Gemm as A·Bᵀ + C, a Conv */
            lithe_tensor *W = init_tensor(m, g, g->node_in[i][1]), *bias = NULL;
            bool ok = W && W->dtype == LITHE_F32 && lithe_tensor_is_contiguous(W);
            if (ok && g->node_nin[i] > 2 && g->node_in[i][2] >= 0) {
                bias = init_tensor(m, g, g->node_in[i][2]);
                ok = bias && bias->dtype == LITHE_F32;
            }
            lithe__prep_op op;
            const lithe__gfuse *f = &g->node_fuse[i];
            if (linear) ok = ok && f->transB && W->ndim == 2 && (!bias || bias->numel == W->shape[0]) &&
                             lithe__affine_prep_op(f->has_act ? &f->act : NULL, &op);
            else ok = ok && lithe__graph_prep_op(n, W, bias, &op);
            if (ok && conv_act) lithe__act_clamp(&g->node_fuse[i].act, &op.out_min, &op.out_max);
            if (ok) LITHE__TRY(lithe__prepare_op(m->backend, &op, W, bias));
        }
        if ((plain && !strcmp(n->op_type, "Conv")) || conv_act || conv_add) { /* W as the GEMM's Wᵀ (group 1) */
            lithe_tensor *W = init_tensor(m, g, g->node_in[i][1]);
            int64_t group = 1;
            for (size_t k = 0; k < n->n_attrs; k++)
                if (!strcmp(n->attrs[k].name, "group")) group = n->attrs[k].i;
            if (W) LITHE__TRY(lithe__prepare_conv_w(W, group, m->backend));
        }
        if (!linear && !gemm && !matmul) continue;
        lithe_tensor *B = init_tensor(m, g, g->node_in[i][1]);
        if (!B || B->ndim != 2 || B->dtype != LITHE_F32 || !lithe_tensor_is_contiguous(B)) continue;
        bool tB = linear && g->node_fuse[i].transB;
        if (gemm)
            for (size_t k = 0; k < n->n_attrs; k++)
                if (!strcmp(n->attrs[k].name, "transB")) tB = n->attrs[k].i != 0;
        LITHE__TRY(lithe__prepare_b(B, tB, m->backend));
    }
    return LITHE_OK;
}

lithe_tensor *lithe__graph_const(lithe_model *m, size_t i) {
    lithe__graph *g = m->n_shims ? graph_of(m) : NULL;
    size_t n = 0;
    for (size_t s = 0; g && g->slot_const && s < g->n_slots; s++)
        if (g->slot_const[s] && g->slot_const[s]->dtype == LITHE_F32 && n++ == i) return g->slot_const[s];
    return NULL;
}

const lithe__layer_type lithe__onnx_graph_type = {"onnx_graph.v1", graph_init, graph_forward, NULL, 0, 0};
const lithe__layer_type *const lithe__graph_types[] = {&lithe__onnx_graph_type, NULL};

/* ---- public ---- */

lithe_status lithe_onnx_load_bytes(const uint8_t *data, size_t len, lithe_model **out) {
    LITHE__CHECK_ARG(out, "lithe_onnx_load_bytes", "out is NULL");
    *out = NULL;
    LITHE__CHECK_ARG(data || !len, "lithe_onnx_load_bytes", "data is NULL");
    if ((uint64_t)len > ((uint64_t)1 << 40)) return /* 64-bit: size_t is 32 bits in WebAssembly */ lithe__fail(LITHE_ERR_VALUE, "lithe_onnx_load_bytes: %zu bytes is too many", len);
    lithe_model *m = NULL;
    LITHE__TRY(lithe__model_new(&lithe__onnx_graph_type, LAYER, NULL, NULL, &m));
    lithe_tensor *b = NULL;
    lithe_status s = lithe__tensor_alloc(lithe__backend_host(), LITHE_U8, 1, (int64_t[]){(int64_t)len}, false, &b);
    if (s == LITHE_OK && len) memcpy(lithe__tdata(b), data, len);
    if (s == LITHE_OK) s = lithe_model_set_attr_tensor(m, "onnx", b);
    lithe_tensor_release(b);
    if (s == LITHE_OK) s = lithe__onnx_attach(m);
    if (s != LITHE_OK) {
        lithe_model_free(m);
        return s;
    }
    *out = m;
    return LITHE_OK;
}

lithe_status lithe_onnx_load(const char *path, lithe_model **out) {
    LITHE__CHECK_ARG(out, "lithe_onnx_load", "out is NULL");
    *out = NULL;
    LITHE__CHECK_ARG(path, "lithe_onnx_load", "path is NULL");
    uint8_t *b = NULL, *in = NULL;
    size_t n = 0, in_n = 0;
    LITHE__TRY(lithe__read_file(path, &b, &n));
    /* external data lives beside the model: inline it, so the node's bytes (and .lithe files
     * made from it) hold every tensor */
    size_t dl = strlen(path);
    while (dl > 0 && path[dl - 1] != '/' && path[dl - 1] != '\\') dl--;
    char *dir = lithe__malloc(dl + 2);
    lithe_status s = dir ? LITHE_OK : lithe__oom(LAYER, dl + 2);
    if (s == LITHE_OK) { /* "a/b.onnx" -> "a", "/b.onnx" -> "/", "b.onnx" -> "." */
        size_t k = dl == 0 ? 1 : dl == 1 ? 1 : dl - 1;
        memcpy(dir, dl ? path : ".", k);
        dir[k] = '\0';
        s = lithe__onnx_inline_external(b, n, dir, &in, &in_n);
    }
    if (s == LITHE_OK) s = lithe_onnx_load_bytes(in, in_n, out);
    lithe__free(dir);
    lithe__free(in);
    lithe__free(b);
    if (s != LITHE_OK) {
        char why[512];
        snprintf(why, sizeof why, "%s", lithe_last_error());
        return lithe__fail(s, "%s: %s", path, why);
    }
    return LITHE_OK;
}

const char *const *lithe_onnx_op_names(size_t *n) {
    size_t k = 0;
    while (lithe__graph_op_names[k]) k++;
    if (n) *n = k;
    return lithe__graph_op_names;
}

bool lithe_onnx_op_has_backward(const char *op_type) {
    const lithe__graph_op *op = op_type ? lithe__graph_op_find(op_type) : NULL;
    return op && op->backward;
}
