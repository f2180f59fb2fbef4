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

static void attr_clear(lithe__attr *a) {
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
        attr_clear(&m->attrs[i]);
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

/* Breadth-first walk, each node once (Thinc's _walk_bfs). The queue owns no references. */
typedef struct walk_buf {
    lithe_model **v;
    size_t n, cap;
} walk_buf;

static lithe_status walk_collect(lithe_model *root, walk_buf *w) {
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
    walk_buf w;
    LITHE__TRY(walk_collect(m, &w));
    for (size_t i = 0; i < w.n && i < cap; i++) nodes[i] = w.v[i];
    *n = w.n;
    lithe__free(w.v);
    return LITHE_OK;
}

static lithe_status set_seed(lithe_model *m, uint64_t seed) {
    LITHE__CHECK_ARG(m, "lithe_model_set_seed", "model is NULL");
    walk_buf w;
    LITHE__TRY(walk_collect(m, &w)); /* on failure no node is reseeded */
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
    *out = p->value;
    return LITHE_OK;
}

lithe_status lithe_model_get_param(const lithe_model *m, const char *name, lithe_tensor **out) {
    LITHE__CHECK_ARG(out, "lithe_model_get_param", "out is NULL");
    *out = NULL;
    LITHE__CHECK_ARG(m && name, "lithe_model_get_param", "model or name is NULL");
    return lithe__param_get(m, name, out);
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
    if (t->dtype != LITHE_F32)
        return lithe__fail(LITHE_ERR_DTYPE, "%s: %s '%s' must be float32, got %s", m->name, fn, name,
                           lithe_dtype_name(t->dtype));
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
    if (!p->grad) LITHE__TRY(lithe__tensor_like(p->value, true, &p->grad));
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
        walk_buf w;
        LITHE__TRY(walk_collect(m, &w));
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

/* ---- attrs ---- */

static lithe__attr *find_attr(const lithe_model *m, const char *name) {
    for (size_t i = 0; i < m->n_attrs; i++)
        if (!strcmp(m->attrs[i].name, name)) return &m->attrs[i];
    return NULL;
}

lithe_attr_type lithe_model_attr_type(const lithe_model *m, const char *name) {
    if (!m || !name) return LITHE_ATTR_NONE;
    lithe__attr *a = find_attr(m, name);
    return a ? a->type : LITHE_ATTR_NONE;
}

static lithe_status get_attr(const lithe_model *m, const char *name, lithe_attr_type want, const void *out,
                             lithe__attr **a) {
    LITHE__CHECK_ARG(m && name && out, "lithe_model_get_attr", "model, name or out is NULL");
    *a = find_attr(m, name);
    if (!*a) return lithe__fail(LITHE_ERR_NOT_FOUND, "%s: no attr '%s'", m->name, name);
    static const char *const type_names[] = {"none", "int", "float", "bool", "str", "tensor", "None"};
    if ((*a)->type != want && !(want == LITHE_ATTR_FLOAT && (*a)->type == LITHE_ATTR_INT))
        return lithe__fail(LITHE_ERR_DTYPE, "%s: attr '%s' is a %s, not a %s", m->name, name,
                           type_names[(*a)->type], type_names[want]);
    return LITHE_OK;
}

lithe_status lithe_model_get_attr_int(const lithe_model *m, const char *name, int64_t *out) {
    lithe__attr *a = NULL;
    LITHE__TRY(get_attr(m, name, LITHE_ATTR_INT, out, &a));
    *out = a->v.i;
    return LITHE_OK;
}
lithe_status lithe_model_get_attr_float(const lithe_model *m, const char *name, double *out) {
    lithe__attr *a = NULL;
    LITHE__TRY(get_attr(m, name, LITHE_ATTR_FLOAT, out, &a));
    *out = a->type == LITHE_ATTR_INT ? (double)a->v.i : a->v.f;
    return LITHE_OK;
}
lithe_status lithe_model_get_attr_bool(const lithe_model *m, const char *name, bool *out) {
    lithe__attr *a = NULL;
    LITHE__TRY(get_attr(m, name, LITHE_ATTR_BOOL, out, &a));
    *out = a->v.b;
    return LITHE_OK;
}
lithe_status lithe_model_get_attr_str(const lithe_model *m, const char *name, const char **out) {
    if (out) *out = NULL;
    lithe__attr *a = NULL;
    LITHE__TRY(get_attr(m, name, LITHE_ATTR_STR, out, &a));
    *out = a->v.s;
    return LITHE_OK;
}
lithe_status lithe_model_get_attr_tensor(const lithe_model *m, const char *name, lithe_tensor **out) {
    if (out) *out = NULL;
    lithe__attr *a = NULL;
    LITHE__TRY(get_attr(m, name, LITHE_ATTR_TENSOR, out, &a));
    *out = a->v.t;
    return LITHE_OK;
}

/* Finds or appends the attr slot; the caller fills it after attr_clear. */
static lithe_status attr_slot(lithe_model *m, const char *name, lithe__attr **out) {
    LITHE__CHECK_ARG(m && name, "lithe_model_set_attr", "model or name is NULL");
    lithe__attr *a = find_attr(m, name);
    if (!a) {
        lithe__attr *na = lithe__realloc(m->attrs, (m->n_attrs + 1) * sizeof *na);
        if (!na) return lithe__oom(m->name, (m->n_attrs + 1) * sizeof *na);
        m->attrs = na;
        char *nm = lithe__strdup(name);
        if (!nm) return lithe__oom(m->name, strlen(name) + 1);
        a = &m->attrs[m->n_attrs++];
        a->name = nm;
        a->type = LITHE_ATTR_NONE;
    }
    *out = a;
    return LITHE_OK;
}

lithe_status lithe_model_set_attr_int(lithe_model *m, const char *name, int64_t v) {
    lithe__attr *a = NULL;
    LITHE__TRY(attr_slot(m, name, &a));
    attr_clear(a);
    a->type = LITHE_ATTR_INT;
    a->v.i = v;
    return LITHE_OK;
}
lithe_status lithe_model_set_attr_float(lithe_model *m, const char *name, double v) {
    lithe__attr *a = NULL;
    LITHE__TRY(attr_slot(m, name, &a));
    attr_clear(a);
    a->type = LITHE_ATTR_FLOAT;
    a->v.f = v;
    return LITHE_OK;
}
lithe_status lithe_model_set_attr_bool(lithe_model *m, const char *name, bool v) {
    lithe__attr *a = NULL;
    LITHE__TRY(attr_slot(m, name, &a));
    attr_clear(a);
    a->type = LITHE_ATTR_BOOL;
    a->v.b = v;
    return LITHE_OK;
}
lithe_status lithe_model_set_attr_str(lithe_model *m, const char *name, const char *v) {
    LITHE__CHECK_ARG(v, "lithe_model_set_attr_str", "value is NULL");
    char *copy = lithe__strdup(v);
    if (!copy) return lithe__oom("lithe_model_set_attr_str", strlen(v) + 1);
    lithe__attr *a = NULL;
    lithe_status s = attr_slot(m, name, &a);
    if (s != LITHE_OK) {
        lithe__free(copy);
        return s;
    }
    attr_clear(a);
    a->type = LITHE_ATTR_STR;
    a->v.s = copy;
    return LITHE_OK;
}
lithe_status lithe_model_set_attr_null(lithe_model *m, const char *name) {
    lithe__attr *a = NULL;
    LITHE__TRY(attr_slot(m, name, &a));
    attr_clear(a);
    a->type = LITHE_ATTR_NULL;
    return LITHE_OK;
}

size_t lithe_model_n_dims(const lithe_model *m) { return m ? m->n_dims : 0; }

const char *lithe_model_dim_name(const lithe_model *m, size_t i) {
    return m && i < m->n_dims ? m->dims[i].name : NULL;
}

size_t lithe_model_n_attrs(const lithe_model *m) { return m ? m->n_attrs : 0; }

const char *lithe_model_attr_name(const lithe_model *m, size_t i) {
    return m && i < m->n_attrs ? m->attrs[i].name : NULL;
}

lithe_status lithe_model_set_attr_tensor(lithe_model *m, const char *name, lithe_tensor *v) {
    LITHE__CHECK_ARG(v, "lithe_model_set_attr_tensor", "value is NULL");
    lithe__attr *a = NULL;
    LITHE__TRY(attr_slot(m, name, &a));
    lithe_tensor_retain(v);
    attr_clear(a);
    a->type = LITHE_ATTR_TENSOR;
    a->v.t = v;
    return LITHE_OK;
}

static lithe_status set_dropout_rate(lithe_model *m, float rate) {
    LITHE__CHECK_ARG(m, "lithe_model_set_dropout_rate", "model is NULL");
    if (!(rate >= 0.0f && rate <= 1.0f))
        return lithe__fail(LITHE_ERR_VALUE, "%s: dropout rate %g outside [0, 1]", m->name, (double)rate);
    walk_buf w;
    LITHE__TRY(walk_collect(m, &w));
    for (size_t i = 0; i < w.n; i++) {
        lithe__attr *a = find_attr(w.v[i], "dropout_rate");
        if (a) {
            attr_clear(a);
            a->type = LITHE_ATTR_FLOAT;
            a->v.f = rate;
        }
    }
    lithe__free(w.v);
    return LITHE_OK;
}

lithe_status lithe_model_set_dropout_rate(lithe_model *m, float rate) {
    LITHE__CHECK_ARG(m, "lithe_model_set_dropout_rate", "model is NULL");
    LITHE__TRY(lithe__enter_tree(m, "lithe_model_set_dropout_rate"));
    lithe_status s = set_dropout_rate(m, rate);
    lithe__leave_tree(m);
    return s;
}

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
    walk_buf w;
    LITHE__TRY(walk_collect(m, &w));
    /* Thinc's with_cpu keeps its layer on the CPU whatever the rest runs on: its subtree stays. */
    lithe_model **pinned = NULL;
    size_t n_pinned = 0;
    lithe_status s = LITHE_OK;
    for (size_t i = 0; i < w.n && s == LITHE_OK; i++)
        if (!strcmp(w.v[i]->type->registered_name, "with_cpu.v1")) {
            walk_buf sub;
            s = w.v[i]->n_layers ? walk_collect(w.v[i]->layers[0], &sub) : LITHE_OK;
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
    walk_buf w;
    LITHE__TRY(walk_collect(m, &w));
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
                s = pass == 0 ? lithe__optimizer_prepare(opt, node, pr->name, pr->value)
                              : lithe_optimizer_step(opt, node, pr->name, pr->value, pr->grad);
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
            s = lithe__tensor_like(src->params[i].value, false, &t);
            if (s == LITHE_OK) s = lithe__op_copy(m->backend, t, src->params[i].value);
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
static lithe_status walk_retained(lithe_model *m, walk_buf *w) {
    LITHE__TRY(walk_collect(m, w));
    for (size_t i = 0; i < w->n; i++) lithe_model_retain(w->v[i]);
    return LITHE_OK;
}

static void walk_release(walk_buf *w) {
    for (size_t i = 0; i < w->n; i++) lithe_model_free(w->v[i]);
    lithe__free(w->v);
}

lithe_status lithe_model_replace_node(lithe_model *m, lithe_model *old, lithe_model *replacement, bool *replaced) {
    if (replaced) *replaced = false;
    LITHE__CHECK_ARG(m && old && replacement, "lithe_model_replace_node", "model, old or new is NULL");
    if (old == m) return lithe__fail(LITHE_ERR_INVALID_ARG, "lithe_model_replace_node: cannot replace the root itself");
    walk_buf w;
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
    walk_buf w;
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
    walk_buf t;
    LITHE__TRY(walk_collect(m, &t));
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
    walk_buf w;
    LITHE__TRY(walk_collect(m, &w));
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
