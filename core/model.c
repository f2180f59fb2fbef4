/* The Model node: Thinc's tree of layers with dims, params, grads, refs and attrs. */
#include "internal.h"

#include <stdio.h>

static uint64_t next_id = 1; /* Thinc's Model.global_id; guarded by an atomic increment */

static uint64_t take_id(void) {
#if defined(__GNUC__)
    return __atomic_fetch_add(&next_id, 1, __ATOMIC_RELAXED);
#else
    return next_id++;
#endif
}

/* The params' name index (lithe__model_find_param), once a node has enough params for a scan to
 * cost (an imported graph's thousands): brought up to date after params were added. Without
 * memory for it the node goes on without one (find_param scans), and a later call tries again. */
enum { PARAM_INDEX_MIN = 16 };
static void index_params(lithe_model *m) {
    if (m->n_params < PARAM_INDEX_MIN) return;
    for (size_t i = m->param_index.n; i < m->n_params; i++)
        if (lithe__names_put(&m->param_index, m->params[i].name, i) != LITHE_OK) {
            lithe__names_free(&m->param_index);
            return;
        }
}

lithe_status lithe__model_new(const lithe__layer_type *type, const char *name,
                              const char *const *dim_names, const char *const *param_names,
                              lithe_model **out) {
    *out = NULL;
    lithe_model *m = lithe__calloc(1, sizeof *m);
    if (!m) return lithe__oom(type->registered_name, sizeof *m);
    m->refcount = 1;
    m->id = take_id();
    m->type = type;
    m->backend = lithe__backend_host();
    uint64_t s = m->id;
    m->rng.key = lithe__splitmix64(&s);
    m->name = lithe__strdup(name);
    size_t nd = 0, np = 0;
    while (dim_names && dim_names[nd]) nd++;
    while (param_names && param_names[np]) np++;
    m->dims = nd ? lithe__calloc(nd, sizeof *m->dims) : NULL;
    m->params = np ? lithe__calloc(np, sizeof *m->params) : NULL;
    if (!m->name || (nd && !m->dims) || (np && !m->params)) goto oom;
    for (; m->n_dims < nd; m->n_dims++)
        if (!(m->dims[m->n_dims].name = lithe__strdup(dim_names[m->n_dims]))) goto oom;
    for (; m->n_params < np; m->n_params++)
        if (!(m->params[m->n_params].name = lithe__strdup(param_names[m->n_params]))) goto oom;
    index_params(m);
    *out = m;
    return LITHE_OK;
oom:
    lithe_model_free(m);
    return lithe__oom(type->registered_name, sizeof *m);
}

lithe_status lithe__model_add_layer(lithe_model *m, lithe_model *child) {
    lithe_model **l = lithe__realloc(m->layers, (m->n_layers + 1) * sizeof *l);
    if (!l) {
        lithe_model_free(child);
        return lithe__oom(m->name, (m->n_layers + 1) * sizeof *l);
    }
    m->layers = l;
    m->layers[m->n_layers++] = child;
    return LITHE_OK;
}

lithe_model *lithe_model_retain(lithe_model *m) {
    if (m) LITHE__REF_INC(m->refcount);
    return m;
}

void lithe__attr_clear(lithe__attr *a) {
    if (a->type == LITHE_ATTR_STR) lithe__free(a->v.s);
    if (a->type == LITHE_ATTR_TENSOR) lithe_tensor_release(a->v.t);
    a->type = LITHE_ATTR_NONE;
}

void lithe_model_free(lithe_model *m) {
    if (!m || !LITHE__REF_DEC_LAST(m->refcount)) return;
    for (size_t i = 0; i < m->n_dims; i++) lithe__free(m->dims[i].name);
    for (size_t i = 0; i < m->n_params; i++) {
        lithe__free(m->params[i].name);
        lithe_tensor_release(m->params[i].value);
        lithe_tensor_release(m->params[i].grad);
    }
    for (size_t i = 0; i < m->n_refs; i++) lithe__free(m->refs[i].name);
    for (size_t i = 0; i < m->n_attrs; i++) {
        lithe__attr_clear(&m->attrs[i]);
        lithe__free(m->attrs[i].name);
    }
    for (size_t i = 0; i < m->n_layers; i++) lithe_model_free(m->layers[i]);
    for (size_t i = 0; i < m->n_shims; i++)
        if (m->shims[i]) m->shims[i]->type->free(m->shims[i]);
    lithe__free(m->shims);
    lithe__free(m->dims);
    lithe__free(m->params);
    lithe__names_free(&m->param_index);
    lithe__free(m->refs);
    lithe__free(m->attrs);
    lithe__free(m->layers);
    lithe__free(m->debug);
    lithe__free(m->budget);
    lithe__free(m->name);
    lithe__free(m);
}

const char *lithe_model_name(const lithe_model *m) { return m ? m->name : NULL; }
uint64_t lithe_model_id(const lithe_model *m) { return m ? m->id : 0; }
const char *lithe_model_layer_type(const lithe_model *m) { return m ? m->type->registered_name : NULL; }
size_t lithe_model_n_layers(const lithe_model *m) { return m ? m->n_layers : 0; }
lithe_model *lithe_model_layer(const lithe_model *m, size_t i) {
    return m && i < m->n_layers ? m->layers[i] : NULL;
}
lithe_backend *lithe_model_backend(const lithe_model *m) { return m ? m->backend : NULL; }
size_t lithe_model_n_shims(const lithe_model *m) { return m ? m->n_shims : 0; }
lithe_shim *lithe_model_shim(const lithe_model *m, size_t i) { return m && i < m->n_shims ? m->shims[i] : NULL; }
const char *lithe_shim_name(const lithe_shim *shim) { return shim ? shim->type->name : NULL; }

lithe_status lithe__walk_collect(lithe_model *root, lithe__walk_buf *w) {
    w->v = NULL;
    w->n = w->cap = 0;
    size_t qcap = 16, qn = 0;
    lithe_model **queue = lithe__malloc(qcap * sizeof *queue);
    if (!queue) return lithe__oom("walk", qcap * sizeof *queue);
    queue[qn++] = root;
    lithe_status s = LITHE_OK;
    for (size_t qi = 0; qi < qn; qi++) {
        lithe_model *node = queue[qi];
        bool seen = false;
        for (size_t j = 0; j < w->n && !seen; j++) seen = w->v[j] == node;
        if (seen) continue;
        if (w->n == w->cap) {
            size_t nc = w->cap ? w->cap * 2 : 16;
            lithe_model **nv = lithe__realloc(w->v, nc * sizeof *nv);
            if (!nv) { s = lithe__oom("walk", nc * sizeof *nv); break; }
            w->v = nv;
            w->cap = nc;
        }
        w->v[w->n++] = node;
        if (qn + node->n_layers > qcap) {
            size_t nc = (qn + node->n_layers) * 2;
            lithe_model **nq = lithe__realloc(queue, nc * sizeof *nq);
            if (!nq) { s = lithe__oom("walk", nc * sizeof *nq); break; }
            queue = nq;
            qcap = nc;
        }
        for (size_t c = 0; c < node->n_layers; c++) queue[qn++] = node->layers[c];
    }
    lithe__free(queue);
    if (s != LITHE_OK) {
        lithe__free(w->v);
        w->v = NULL;
        w->n = 0;
    }
    return s;
}

lithe_status lithe_model_walk(lithe_model *m, lithe_model **nodes, size_t cap, size_t *n) {
    LITHE__CHECK_ARG(m && n, "lithe_model_walk", "model or n is NULL");
    LITHE__CHECK_ARG(nodes || cap == 0, "lithe_model_walk", "nodes is NULL with cap > 0");
    lithe__walk_buf w;
    LITHE__TRY(lithe__walk_collect(m, &w));
    for (size_t i = 0; i < w.n && i < cap; i++) nodes[i] = w.v[i];
    *n = w.n;
    lithe__free(w.v);
    return LITHE_OK;
}

static lithe_status set_seed(lithe_model *m, uint64_t seed) {
    LITHE__CHECK_ARG(m, "lithe_model_set_seed", "model is NULL");
    lithe__walk_buf w;
    LITHE__TRY(lithe__walk_collect(m, &w)); /* on failure no node is reseeded */
    for (size_t i = 0; i < w.n; i++) w.v[i]->rng = (lithe_rng){seed + i, 0};
    lithe__free(w.v);
    return LITHE_OK;
}

lithe_status lithe_model_set_seed(lithe_model *m, uint64_t seed) {
    LITHE__CHECK_ARG(m, "lithe_model_set_seed", "model is NULL");
    LITHE__TRY(lithe__enter_tree(m, "lithe_model_set_seed"));
    lithe_status s = set_seed(m, seed);
    lithe__leave_tree(m);
    return s;
}

/* ---- dims ---- */

static lithe__dim *find_dim(const lithe_model *m, const char *name) {
    for (size_t i = 0; i < m->n_dims; i++)
        if (!strcmp(m->dims[i].name, name)) return &m->dims[i];
    return NULL;
}

int64_t lithe__dim_value(const lithe_model *m, const char *name) {
    lithe__dim *d = find_dim(m, name);
    return d ? d->value : 0;
}

lithe_has lithe_model_has_dim(const lithe_model *m, const char *name) {
    if (!m || !name) return LITHE_HAS_NO;
    lithe__dim *d = find_dim(m, name);
    return !d ? LITHE_HAS_NO : d->value ? LITHE_HAS_YES : LITHE_HAS_UNSET;
}

lithe_status lithe_model_get_dim(const lithe_model *m, const char *name, int64_t *out) {
    LITHE__CHECK_ARG(m && name && out, "lithe_model_get_dim", "model, name or out is NULL");
    lithe__dim *d = find_dim(m, name);
    if (!d) return lithe__fail(LITHE_ERR_NOT_FOUND, "%s: cannot get dimension '%s': no such dimension", m->name, name);
    if (!d->value) return lithe__fail(LITHE_ERR_STATE, "%s: cannot get dimension '%s': value unset", m->name, name);
    *out = d->value;
    return LITHE_OK;
}

lithe_status lithe_model_set_dim(lithe_model *m, const char *name, int64_t value) {
    LITHE__CHECK_ARG(m && name, "lithe_model_set_dim", "model or name is NULL");
    lithe__dim *d = find_dim(m, name);
    if (!d) return lithe__fail(LITHE_ERR_NOT_FOUND, "%s: cannot set unknown dimension '%s'", m->name, name);
    if (value < 0) return lithe__fail(LITHE_ERR_VALUE, "%s: dimension '%s' must be >= 1 (0 unsets), got %lld",
                                      m->name, name, (long long)value);
    if (d->value && value && d->value != value)
        return lithe__fail(LITHE_ERR_STATE, "%s: attempt to change dimension '%s' from %lld to %lld", m->name, name,
                           (long long)d->value, (long long)value);
    d->value = value;
    return LITHE_OK;
}

lithe_status lithe__infer_dim(lithe_model *m, const char *name, int64_t value, const char *from) {
    lithe__dim *d = find_dim(m, name);
    if (!d) return lithe__fail(LITHE_ERR_INTERNAL, "%s: no dimension '%s'", m->name, name);
    if (d->value && d->value != value)
        return lithe__fail(LITHE_ERR_SHAPE, "%s: dimension %s is %lld but %s has width %lld", m->name, name,
                           (long long)d->value, from, (long long)value);
    d->value = value;
    return LITHE_OK;
}

/* ---- params and grads ---- */

lithe__param *lithe__model_find_param(const lithe_model *m, const char *name) {
    size_t k;
    if (m->param_index.n == m->n_params && m->n_params) /* indexed (params are only ever added) */
        return lithe__names_get(&m->param_index, name, &k) ? &m->params[k] : NULL;
    for (size_t i = 0; i < m->n_params; i++)
        if (!strcmp(m->params[i].name, name)) return &m->params[i];
    return NULL;
}

lithe_has lithe_model_has_param(const lithe_model *m, const char *name) {
    if (!m || !name) return LITHE_HAS_NO;
    lithe__param *p = lithe__model_find_param(m, name);
    return !p ? LITHE_HAS_NO : p->value ? LITHE_HAS_YES : LITHE_HAS_UNSET;
}

lithe_status lithe__param_get(const lithe_model *m, const char *name, lithe_tensor **out) {
    lithe__param *p = lithe__model_find_param(m, name);
    if (!p) return lithe__fail(LITHE_ERR_NOT_FOUND, "%s: unknown param '%s'", m->name, name);
    if (!p->value)
        return lithe__fail(LITHE_ERR_STATE, "%s: param '%s' has not been allocated yet; call lithe_model_initialize",
                           m->name, name);
    if (p->value->dtype != LITHE_F32)
        return lithe__fail(LITHE_ERR_DTYPE, "%s: param '%s' is stored as %s; this layer computes with float32 weights "
                           "only (lithe_model_compress_weights(m, LITHE_F32), or `lithe convert --weights f32`)",
                           m->name, name, lithe_dtype_name(p->value->dtype));
    *out = p->value;
    return LITHE_OK;
}

lithe_status lithe__param_get_any(const lithe_model *m, const char *name, lithe_tensor **out) {
    lithe__param *p = lithe__model_find_param(m, name);
    if (p && p->value) {
        *out = p->value;
        return LITHE_OK;
    }
    return lithe__param_get(m, name, out);
}

lithe_status lithe_model_get_param(const lithe_model *m, const char *name, lithe_tensor **out) {
    LITHE__CHECK_ARG(out, "lithe_model_get_param", "out is NULL");
    *out = NULL;
    LITHE__CHECK_ARG(m && name, "lithe_model_get_param", "model or name is NULL");
    return lithe__param_get_any(m, name, out);
}

static lithe_status add_param(lithe_model *m, const char *name, lithe__param **out) {
    lithe__param *np = lithe__realloc(m->params, (m->n_params + 1) * sizeof *np);
    if (!np) return lithe__oom(m->name, (m->n_params + 1) * sizeof *np);
    m->params = np;
    lithe__param *p = &m->params[m->n_params];
    memset(p, 0, sizeof *p);
    if (!(p->name = lithe__strdup(name))) return lithe__oom(m->name, strlen(name) + 1);
    m->n_params++;
    index_params(m);
    *out = p;
    return LITHE_OK;
}

static lithe_status check_param_tensor(const lithe_model *m, const char *fn, const char *name,
                                       const lithe_tensor *t) {
    if (t->dtype != LITHE_F32 && !(!strcmp(fn, "param") && lithe__is_compact(t)))
        return lithe__fail(LITHE_ERR_DTYPE, "%s: %s '%s' must be float32%s, got %s%s", m->name, fn, name,
                           !strcmp(fn, "param") ? " (or float16 / bfloat16, or int8 / uint8 with quantization "
                                                  "parameters)" : "",
                           lithe_dtype_name(t->dtype),
                           (t->dtype == LITHE_I8 || t->dtype == LITHE_U8) && !t->storage->quant
                               ? " without quantization parameters" : "");
    if (t->storage->backend != m->backend)
        return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: %s '%s' lives on backend '%s', the model on '%s'", m->name, fn,
                           name, t->storage->backend->name, m->backend->name);
    if (!lithe_tensor_is_contiguous(t))
        return lithe__fail(LITHE_ERR_SHAPE, "%s: %s '%s' must be contiguous", m->name, fn, name);
    return LITHE_OK;
}

static lithe_status set_param(lithe_model *m, const char *name, lithe_tensor *value) {
    LITHE__CHECK_ARG(m && name, "lithe_model_set_param", "model or name is NULL");
    if (value) LITHE__TRY(check_param_tensor(m, "param", name, value));
    lithe__param *p = lithe__model_find_param(m, name);
    if (!p) LITHE__TRY(add_param(m, name, &p));
    lithe_tensor_retain(value);
    lithe_tensor_release(p->value);
    p->value = value;
    if (p->grad && (!value || !lithe__same_shape(p->grad, value))) {
        lithe_tensor_release(p->grad);
        p->grad = NULL;
    }
    return LITHE_OK;
}

lithe_status lithe_model_set_param(lithe_model *m, const char *name, lithe_tensor *value) {
    LITHE__CHECK_ARG(m && name, "lithe_model_set_param", "model or name is NULL");
    LITHE__TRY(lithe__enter(m, "lithe_model_set_param"));
    lithe_status s = set_param(m, name, value);
    lithe__leave(m);
    return s;
}

bool lithe_model_has_grad(const lithe_model *m, const char *name) {
    if (!m || !name) return false;
    lithe__param *p = lithe__model_find_param(m, name);
    return p && p->grad;
}

lithe_status lithe_model_get_grad(const lithe_model *m, const char *name, lithe_tensor **out) {
    LITHE__CHECK_ARG(out, "lithe_model_get_grad", "out is NULL");
    *out = NULL;
    LITHE__CHECK_ARG(m && name, "lithe_model_get_grad", "model or name is NULL");
    lithe__param *p = lithe__model_find_param(m, name);
    if (!p || !p->grad) return lithe__fail(LITHE_ERR_NOT_FOUND, "%s: no gradient for '%s'", m->name, name);
    *out = p->grad;
    return LITHE_OK;
}

lithe_status lithe_model_set_grad(lithe_model *m, const char *name, lithe_tensor *value) {
    LITHE__CHECK_ARG(m && name, "lithe_model_set_grad", "model or name is NULL");
    lithe__param *p = lithe__model_find_param(m, name);
    if (!p) return lithe__fail(LITHE_ERR_NOT_FOUND, "%s: cannot set gradient of unknown param '%s'", m->name, name);
    if (value) {
        LITHE__TRY(check_param_tensor(m, "grad", name, value));
        if (p->value && !lithe__same_shape(p->value, value)) {
            char a[LITHE__SHAPE_BUF], b[LITHE__SHAPE_BUF];
            return lithe__fail(LITHE_ERR_SHAPE, "%s: gradient for '%s' has shape %s, param has %s", m->name, name,
                               lithe__shape_str(value, a, sizeof a), lithe__shape_str(p->value, b, sizeof b));
        }
    }
    lithe_tensor_retain(value);
    lithe_tensor_release(p->grad);
    p->grad = value;
    return LITHE_OK;
}

lithe_status lithe__grad_acc(lithe_model *m, const char *name, lithe_tensor **grad_out) {
    lithe__param *p = lithe__model_find_param(m, name);
    if (!p || !p->value)
        return lithe__fail(LITHE_ERR_STATE, "%s: cannot accumulate a gradient for '%s': param not allocated",
                           m->name, name);
    if (!p->grad) {
        lithe__persistent(m->backend, true);
        lithe_status s = lithe__tensor_like(p->value, true, &p->grad);
        lithe__persistent(m->backend, false);
        LITHE__TRY(s);
    }
    *grad_out = p->grad;
    return LITHE_OK;
}

lithe_status lithe_model_inc_grad(lithe_model *m, const char *name, const lithe_tensor *value) {
    LITHE__CHECK_ARG(m && name && value, "lithe_model_inc_grad", "model, name or value is NULL");
    lithe__param *p = lithe__model_find_param(m, name);
    if (!p) return lithe__fail(LITHE_ERR_NOT_FOUND, "%s: unknown param '%s'", m->name, name);
    if (!p->value) return lithe__fail(LITHE_ERR_STATE, "%s: param '%s' has not been allocated yet", m->name, name);
    LITHE__TRY(check_param_tensor(m, "gradient increment", name, value));
    if (!lithe__same_shape(p->value, value)) {
        char a[LITHE__SHAPE_BUF], b[LITHE__SHAPE_BUF];
        return lithe__fail(LITHE_ERR_SHAPE, "%s: gradient increment for '%s' has shape %s, param has %s", m->name,
                           name, lithe__shape_str(value, a, sizeof a), lithe__shape_str(p->value, b, sizeof b));
    }
    lithe_tensor *g = NULL;
    LITHE__TRY(lithe__grad_acc(m, name, &g));
    return lithe__op_axpby(m->backend, 1.0f, value, 1.0f, g);
}

size_t lithe_model_n_params(const lithe_model *m) { return m ? m->n_params : 0; }
const char *lithe_model_param_name(const lithe_model *m, size_t i) {
    return m && i < m->n_params ? m->params[i].name : NULL;
}

/* ---- refs ---- */

static lithe__ref *find_ref(const lithe_model *m, const char *name) {
    for (size_t i = 0; i < m->n_refs; i++)
        if (!strcmp(m->refs[i].name, name)) return &m->refs[i];
    return NULL;
}

lithe_has lithe_model_has_ref(const lithe_model *m, const char *name) {
    if (!m || !name) return LITHE_HAS_NO;
    lithe__ref *r = find_ref(m, name);
    return !r ? LITHE_HAS_NO : r->node ? LITHE_HAS_YES : LITHE_HAS_UNSET;
}

lithe_status lithe_model_get_ref(const lithe_model *m, const char *name, lithe_model **out) {
    LITHE__CHECK_ARG(out, "lithe_model_get_ref", "out is NULL");
    *out = NULL;
    LITHE__CHECK_ARG(m && name, "lithe_model_get_ref", "model or name is NULL");
    lithe__ref *r = find_ref(m, name);
    if (!r) return lithe__fail(LITHE_ERR_NOT_FOUND, "%s: cannot get reference '%s'", m->name, name);
    if (!r->node) return lithe__fail(LITHE_ERR_STATE, "%s: cannot get reference '%s': value unset", m->name, name);
    *out = r->node;
    return LITHE_OK;
}

lithe_status lithe_model_set_ref(lithe_model *m, const char *name, lithe_model *node) {
    LITHE__CHECK_ARG(m && name, "lithe_model_set_ref", "model or name is NULL");
    if (node) {
        lithe__walk_buf w;
        LITHE__TRY(lithe__walk_collect(m, &w));
        bool in_tree = false;
        for (size_t i = 0; i < w.n && !in_tree; i++) in_tree = w.v[i] == node;
        lithe__free(w.v);
        if (!in_tree)
            return lithe__fail(LITHE_ERR_VALUE, "%s: cannot add reference '%s' to node '%s': not in the tree", m->name,
                               name, node->name);
    }
    lithe__ref *r = find_ref(m, name);
    if (!r) {
        lithe__ref *nr = lithe__realloc(m->refs, (m->n_refs + 1) * sizeof *nr);
        if (!nr) return lithe__oom(m->name, (m->n_refs + 1) * sizeof *nr);
        m->refs = nr;
        char *nm = lithe__strdup(name);
        if (!nm) return lithe__oom(m->name, strlen(name) + 1);
        r = &m->refs[m->n_refs++];
        r->name = nm;
    }
    r->node = node;
    return LITHE_OK;
}
