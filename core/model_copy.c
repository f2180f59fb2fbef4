/* The Model node's copies (lithe__node_clone, lithe_model_copy), tree surgery (replace_node,
 * remove_node), freezing and use_averages. */
#include "internal.h"

#include <stdio.h>

/* ---- copies ---- */

lithe_status lithe__node_clone(const lithe_model *src, lithe_model **out) {
    *out = NULL;
    const char **dn = lithe__calloc(src->n_dims + 1, sizeof *dn), **pn = lithe__calloc(src->n_params + 1, sizeof *pn);
    lithe_status s = (dn && pn) ? LITHE_OK : lithe__oom(src->name, (src->n_dims + src->n_params + 2) * sizeof *dn);
    for (size_t i = 0; s == LITHE_OK && i < src->n_dims; i++) dn[i] = src->dims[i].name;
    for (size_t i = 0; s == LITHE_OK && i < src->n_params; i++) pn[i] = src->params[i].name;
    lithe_model *m = NULL;
    if (s == LITHE_OK) s = lithe__model_new(src->type, src->name, dn, pn, &m);
    lithe__free(dn);
    lithe__free(pn);
    if (s != LITHE_OK) return s;
    m->backend = src->backend;
    m->init_W = src->init_W;
    m->init_b = src->init_b;
    memcpy(m->cfg, src->cfg, sizeof m->cfg);
    for (size_t i = 0; i < src->n_dims; i++) m->dims[i].value = src->dims[i].value;
    for (size_t i = 0; s == LITHE_OK && i < src->n_params; i++)
        if (src->params[i].value) {
            lithe_tensor *t = NULL;
            const lithe__quant *q = src->params[i].value->storage->quant;
            s = lithe__tensor_like(src->params[i].value, false, &t);
            if (s == LITHE_OK) s = lithe__op_copy(m->backend, t, src->params[i].value);
            if (s == LITHE_OK && q) s = lithe_tensor_set_quant_params(t, q->axis, q->n, q->scale, q->zero); /* int8 W */
            if (s == LITHE_OK) m->params[i].value = t;
            else lithe_tensor_release(t);
        }
    for (size_t i = 0; s == LITHE_OK && i < src->n_attrs; i++) {
        const lithe__attr *a = &src->attrs[i];
        switch (a->type) {
        case LITHE_ATTR_INT: s = lithe_model_set_attr_int(m, a->name, a->v.i); break;
        case LITHE_ATTR_FLOAT: s = lithe_model_set_attr_float(m, a->name, a->v.f); break;
        case LITHE_ATTR_BOOL: s = lithe_model_set_attr_bool(m, a->name, a->v.b); break;
        case LITHE_ATTR_STR: s = lithe_model_set_attr_str(m, a->name, a->v.s); break;
        case LITHE_ATTR_TENSOR: s = lithe_model_set_attr_tensor(m, a->name, a->v.t); break;
        case LITHE_ATTR_NULL: s = lithe_model_set_attr_null(m, a->name); break;
        case LITHE_ATTR_NONE: break;
        }
    }
    if (s != LITHE_OK) {
        lithe_model_free(m);
        return s;
    }
    *out = m;
    return LITHE_OK;
}

/* Thinc's Model.copy: every node copied (new ids) with its params, grads, dims and attrs; a child
 * shared inside the tree stays shared in the copy; refs are not carried over (Thinc 8.1 leaves
 * them out of the copy too). */
typedef struct copy_memo {
    size_t n, cap;
    const lithe_model **from;
    lithe_model **to;
} copy_memo;

static lithe_status copy_rec(const lithe_model *src, copy_memo *memo, lithe_model **out) {
    if (src->n_shims)
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "%s: copying a node with shims is not supported yet", src->name);
    lithe_model *m = NULL;
    LITHE__TRY(lithe__node_clone(src, &m));
    lithe_status s = LITHE_OK;
    for (size_t i = 0; s == LITHE_OK && i < src->n_params; i++)
        if (src->params[i].grad) {
            lithe_tensor *g = NULL;
            s = lithe__tensor_like(src->params[i].grad, false, &g);
            if (s == LITHE_OK) s = lithe__op_copy(m->backend, g, src->params[i].grad);
            if (s == LITHE_OK) m->params[i].grad = g;
            else lithe_tensor_release(g);
        }
    for (size_t i = 0; s == LITHE_OK && i < src->n_layers; i++) {
        const lithe_model *child = src->layers[i];
        lithe_model *c = NULL;
        for (size_t k = 0; k < memo->n && !c; k++)
            if (memo->from[k] == child) c = lithe_model_retain(memo->to[k]);
        if (!c) {
            s = copy_rec(child, memo, &c);
            if (s != LITHE_OK) break;
            if (memo->n == memo->cap) {
                size_t cap = memo->cap ? 2 * memo->cap : 16;
                const lithe_model **f = lithe__realloc(memo->from, cap * sizeof *f);
                if (f) memo->from = f;
                lithe_model **t = f ? lithe__realloc(memo->to, cap * sizeof *t) : NULL;
                if (t) memo->to = t;
                if (!f || !t) {
                    lithe_model_free(c);
                    s = lithe__oom(src->name, cap * sizeof *t);
                    break;
                }
                memo->cap = cap;
            }
            memo->from[memo->n] = child;
            memo->to[memo->n++] = c; /* borrowed: the copy tree owns it */
        }
        s = lithe__model_add_layer(m, c);
    }
    if (s != LITHE_OK) {
        lithe_model_free(m);
        return s;
    }
    *out = m;
    return LITHE_OK;
}

lithe_status lithe_model_copy(const lithe_model *m, lithe_model **out) {
    LITHE__CHECK_ARG(out, "lithe_model_copy", "out is NULL");
    *out = NULL;
    LITHE__CHECK_ARG(m, "lithe_model_copy", "model is NULL");
    copy_memo memo = {0};
    lithe_status s = copy_rec(m, &memo, out);
    lithe__free(memo.from);
    lithe__free(memo.to);
    return s;
}

/* ---- tree surgery (Thinc's replace_node / remove_node), freezing, use_params ---- */

/* The walk with a reference held on every node, so releasing links cannot free a node the loop
 * still visits. */
static lithe_status walk_retained(lithe_model *m, lithe__walk_buf *w) {
    LITHE__TRY(lithe__walk_collect(m, w));
    for (size_t i = 0; i < w->n; i++) lithe_model_retain(w->v[i]);
    return LITHE_OK;
}

static void walk_release(lithe__walk_buf *w) {
    for (size_t i = 0; i < w->n; i++) lithe_model_free(w->v[i]);
    lithe__free(w->v);
}

lithe_status lithe_model_replace_node(lithe_model *m, lithe_model *old, lithe_model *replacement, bool *replaced) {
    if (replaced) *replaced = false;
    LITHE__CHECK_ARG(m && old && replacement, "lithe_model_replace_node", "model, old or new is NULL");
    if (old == m) return lithe__fail(LITHE_ERR_INVALID_ARG, "lithe_model_replace_node: cannot replace the root itself");
    lithe__walk_buf w;
    LITHE__TRY(walk_retained(m, &w));
    bool seen = false;
    for (size_t i = 0; i < w.n; i++) {
        lithe_model *node = w.v[i];
        if (node == old) {
            seen = true;
            continue;
        }
        for (size_t c = 0; c < node->n_layers; c++)
            if (node->layers[c] == old) {
                node->layers[c] = lithe_model_retain(replacement);
                lithe_model_free(old);
            }
        for (size_t r = 0; r < node->n_refs; r++)
            if (node->refs[r].node == old) node->refs[r].node = replacement;
    }
    walk_release(&w);
    if (replaced) *replaced = seen;
    return LITHE_OK;
}

lithe_status lithe_model_remove_node(lithe_model *m, lithe_model *node) {
    LITHE__CHECK_ARG(m && node, "lithe_model_remove_node", "model or node is NULL");
    if (node == m) return lithe__fail(LITHE_ERR_INVALID_ARG, "lithe_model_remove_node: cannot remove the root itself");
    lithe__walk_buf w;
    LITHE__TRY(walk_retained(m, &w));
    for (size_t i = 0; i < w.n; i++) {
        lithe_model *p = w.v[i];
        size_t k = 0;
        for (size_t c = 0; c < p->n_layers; c++) {
            if (p->layers[c] == node) lithe_model_free(node);
            else p->layers[k++] = p->layers[c];
        }
        p->n_layers = k;
    }
    walk_release(&w);
    /* refs that no longer point inside the tree are cleared, as Thinc sets them to None */
    lithe__walk_buf t;
    LITHE__TRY(lithe__walk_collect(m, &t));
    for (size_t i = 0; i < t.n; i++)
        for (size_t r = 0; r < t.v[i]->n_refs; r++) {
            lithe_model *ref = t.v[i]->refs[r].node;
            bool inside = false;
            for (size_t j = 0; ref && j < t.n && !inside; j++) inside = t.v[j] == ref;
            if (ref && !inside) t.v[i]->refs[r].node = NULL;
        }
    lithe__free(t.v);
    return LITHE_OK;
}

lithe_status lithe_model_set_frozen(lithe_model *m, const char *param, bool frozen) {
    LITHE__CHECK_ARG(m, "lithe_model_set_frozen", "model is NULL");
    if (param) {
        lithe__param *p = lithe__model_find_param(m, param);
        if (!p) return lithe__fail(LITHE_ERR_NOT_FOUND, "%s: no param '%s' to freeze", m->name, param);
        p->frozen = frozen;
        return LITHE_OK;
    }
    lithe__walk_buf w;
    LITHE__TRY(lithe__walk_collect(m, &w));
    for (size_t i = 0; i < w.n; i++)
        for (size_t p = 0; p < w.v[i]->n_params; p++) w.v[i]->params[p].frozen = frozen;
    lithe__free(w.v);
    return LITHE_OK;
}

bool lithe_model_is_frozen(const lithe_model *m, const char *param) {
    if (!m || !param) return false;
    const lithe__param *p = lithe__model_find_param(m, param);
    return p && p->frozen;
}

lithe_status lithe_model_use_averages(lithe_model *m, lithe_optimizer *opt,
                                      lithe_status (*fn)(lithe_model *m, void *user), void *user) {
    LITHE__CHECK_ARG(m && opt && fn, "lithe_model_use_averages", "model, optimizer or fn is NULL");
    LITHE__TRY(lithe_optimizer_swap_averages(opt, m));
    lithe_status s = fn(m, user);
    /* restore also when fn failed; the swap back needs no allocation that can fail after the
     * first one succeeded for the same tree, but report it if it does */
    char why[512];
    snprintf(why, sizeof why, "%s", lithe_last_error());
    lithe_status r = lithe_optimizer_swap_averages(opt, m);
    if (s != LITHE_OK) {
        lithe__fail(s, "%s", why); /* fn's message stays the last error */
        return s;
    }
    return r;
}
