/* The Model node's attrs (typed values by name) and the dropout rate set through the tree. */
#include "internal.h"

#include <stdio.h>

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

/* Finds or appends the attr slot, clears its old value and gives it the type; the caller fills the
 * value (anything the new value needs, a copy or a reference, is taken before: the old value may be
 * the same object). */
static lithe_status attr_slot(lithe_model *m, const char *name, lithe_attr_type type, lithe__attr **out) {
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
    lithe__attr_clear(a);
    a->type = type;
    *out = a;
    return LITHE_OK;
}

lithe_status lithe_model_set_attr_int(lithe_model *m, const char *name, int64_t v) {
    lithe__attr *a = NULL;
    LITHE__TRY(attr_slot(m, name, LITHE_ATTR_INT, &a));
    a->v.i = v;
    return LITHE_OK;
}
lithe_status lithe_model_set_attr_float(lithe_model *m, const char *name, double v) {
    lithe__attr *a = NULL;
    LITHE__TRY(attr_slot(m, name, LITHE_ATTR_FLOAT, &a));
    a->v.f = v;
    return LITHE_OK;
}
lithe_status lithe_model_set_attr_bool(lithe_model *m, const char *name, bool v) {
    lithe__attr *a = NULL;
    LITHE__TRY(attr_slot(m, name, LITHE_ATTR_BOOL, &a));
    a->v.b = v;
    return LITHE_OK;
}
lithe_status lithe_model_set_attr_str(lithe_model *m, const char *name, const char *v) {
    LITHE__CHECK_ARG(v, "lithe_model_set_attr_str", "value is NULL");
    char *copy = lithe__strdup(v);
    if (!copy) return lithe__oom("lithe_model_set_attr_str", strlen(v) + 1);
    lithe__attr *a = NULL;
    lithe_status s = attr_slot(m, name, LITHE_ATTR_STR, &a);
    if (s != LITHE_OK) {
        lithe__free(copy);
        return s;
    }
    a->v.s = copy;
    return LITHE_OK;
}
lithe_status lithe_model_set_attr_null(lithe_model *m, const char *name) {
    lithe__attr *a = NULL;
    return attr_slot(m, name, LITHE_ATTR_NULL, &a);
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
    lithe_tensor_retain(v);
    lithe_status s = attr_slot(m, name, LITHE_ATTR_TENSOR, &a);
    if (s != LITHE_OK) {
        lithe_tensor_release(v);
        return s;
    }
    a->v.t = v;
    return LITHE_OK;
}

static lithe_status set_dropout_rate(lithe_model *m, float rate) {
    LITHE__CHECK_ARG(m, "lithe_model_set_dropout_rate", "model is NULL");
    if (!(rate >= 0.0f && rate <= 1.0f))
        return lithe__fail(LITHE_ERR_VALUE, "%s: dropout rate %g outside [0, 1]", m->name, (double)rate);
    lithe__walk_buf w;
    LITHE__TRY(lithe__walk_collect(m, &w));
    for (size_t i = 0; i < w.n; i++) {
        lithe__attr *a = find_attr(w.v[i], "dropout_rate");
        if (a) {
            lithe__attr_clear(a);
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
