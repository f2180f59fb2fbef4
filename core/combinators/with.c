/* The with_* combinators: a child that takes one sequence container, fed from whichever the
 * caller has. Thinc 8.1.7's with_array, with_array2d, with_ragged, with_padded and with_list all
 * follow one pattern, written once here:
 *
 *   forward:  Xi = to_inner(X);  Yi, bp = child(Xi);  Y  = from_inner(Yi, like X)
 *   backward: dYi = to_inner(dY); dXi = bp(dYi);      dX = from_inner(dXi, like dY)
 *
 * The conversions are Thinc's (core/sequence.c). with_flatten (v1, v2), with_getitem and
 * with_reshape have their own shapes of the same idea. */
#include "../internal.h"

#include <stdio.h>

typedef enum with_kind { W_ARRAY, W_ARRAY2D, W_RAGGED, W_PADDED, W_LIST, W_FLATTEN1, W_FLATTEN2, W_GETITEM, W_RESHAPE, W_CPU } with_kind;

static with_kind kind_of(const lithe_model *m) { return (with_kind)(intptr_t)m->type->info; }

static lithe_status child_of(const lithe_model *m, lithe_model **out) {
    if (m->n_layers != 1 || !m->layers[0]) return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: needs exactly one child layer", m->name);
    *out = m->layers[0];
    return LITHE_OK;
}

/* with_array's `pad` attr (0 when absent); a file may hold anything, so it is bounded. */
static lithe_status pad_of(const lithe_model *m, int64_t *pad) {
    *pad = 0;
    if (lithe_model_attr_type(m, "pad") == LITHE_ATTR_INT) LITHE__TRY(lithe_model_get_attr_int(m, "pad", pad));
    if (*pad < 0 || *pad > (1 << 20))
        return lithe__fail(LITHE_ERR_VALUE, "%s: pad %lld outside 0..%d", m->name, (long long)*pad, 1 << 20);
    return LITHE_OK;
}

/* ---- with_array / with_array2d: the child takes the data array ------------------------------ */

static lithe_status array_in(lithe_model *m, const lithe_value *v, int64_t pad, lithe_value **out) {
    bool flat2d = kind_of(m) == W_ARRAY2D;
    lithe_tensor *data = NULL;
    lithe_status s = LITHE_OK;
    switch (v->kind) {
    case LITHE_VALUE_TENSOR: *out = lithe_value_retain((lithe_value *)v); return LITHE_OK;
    case LITHE_VALUE_LIST:
        LITHE__TRY(lithe__seq_flatten(m->backend, m->name, v, pad, &data));
        return lithe__value_wrap(data, out);
    case LITHE_VALUE_RAGGED:
    case LITHE_VALUE_PADDED: {
        lithe_tensor *X = v->t[0];
        if (!flat2d || (v->kind == LITHE_VALUE_RAGGED && X->ndim == 2)) return lithe_value_tensor(X, out);
        if (v->kind == LITHE_VALUE_RAGGED && X->ndim != 2) {
            char a[LITHE__SHAPE_BUF];
            return lithe__fail(LITHE_ERR_SHAPE, "%s: Ragged data must be 2-d, got %s", m->name, lithe__shape_str(X, a, sizeof a));
        }
        if (X->ndim != 3) {
            char a[LITHE__SHAPE_BUF];
            return lithe__fail(LITHE_ERR_SHAPE, "%s: Padded data must be (T, B, n), got %s", m->name,
                               lithe__shape_str(X, a, sizeof a));
        }
        /* (T, B, n) -> (T*B, n) */
        lithe_tensor *c = NULL;
        if (lithe_tensor_is_contiguous(X)) c = lithe_tensor_retain(X);
        else {
            s = lithe__tensor_like(X, false, &c);
            if (s == LITHE_OK) s = lithe__op_copy(m->backend, c, X);
        }
        if (s == LITHE_OK) s = lithe_tensor_reshape(c, 2, (int64_t[]){X->shape[0] * X->shape[1], X->shape[2]}, &data);
        lithe_tensor_release(c);
        if (s != LITHE_OK) return s;
        return lithe__value_wrap(data, out);
    }
    default: return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: expected an array, list, Ragged or Padded value", m->name);
    }
}

static lithe_status array_out(lithe_model *m, const lithe_value *Yi, const lithe_value *like, int64_t pad,
                              lithe_value **out) {
    if (Yi->kind != LITHE_VALUE_TENSOR)
        return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: the child layer must return an array", m->name);
    lithe_tensor *Y = Yi->t[0];
    switch (like->kind) {
    case LITHE_VALUE_TENSOR: *out = lithe_value_retain((lithe_value *)Yi); return LITHE_OK;
    case LITHE_VALUE_LIST: {
        lithe_tensor *lengths = NULL;
        LITHE__TRY(lithe__seq_lengths(m->name, like, &lengths));
        lithe_status s = lithe__seq_unflatten(m->name, Y, lengths, pad, out);
        lithe_tensor_release(lengths);
        return s;
    }
    case LITHE_VALUE_RAGGED: return lithe_value_ragged(Y, like->t[1], out);
    case LITHE_VALUE_PADDED: {
        if (kind_of(m) != W_ARRAY2D) return lithe_value_padded(Y, like->t[1], like->t[2], like->t[3], out);
        const lithe_tensor *X = like->t[0];
        if (Y->ndim != 2 || Y->shape[0] != X->shape[0] * X->shape[1]) {
            char a[LITHE__SHAPE_BUF];
            return lithe__fail(LITHE_ERR_SHAPE, "%s: the child returned %s for %lld rows", m->name,
                               lithe__shape_str(Y, a, sizeof a), (long long)(X->shape[0] * X->shape[1]));
        }
        lithe_tensor *c = NULL, *Y3 = NULL;
        lithe_status s = LITHE_OK;
        if (lithe_tensor_is_contiguous(Y)) c = lithe_tensor_retain(Y);
        else {
            s = lithe__tensor_like(Y, false, &c);
            if (s == LITHE_OK) s = lithe__op_copy(m->backend, c, Y);
        }
        if (s == LITHE_OK) s = lithe_tensor_reshape(c, 3, (int64_t[]){X->shape[0], X->shape[1], Y->shape[1]}, &Y3);
        if (s == LITHE_OK) s = lithe_value_padded(Y3, like->t[1], like->t[2], like->t[3], out);
        lithe_tensor_release(c);
        lithe_tensor_release(Y3);
        return s;
    }
    default: return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: expected an array, list, Ragged or Padded value", m->name);
    }
}

/* ---- with_cpu: the child on the CPU backend (lithe_model_set_backend leaves it there) -------- */

/* v with every data tensor not already on `be` copied there (lengths and the like are host). */
static lithe_status value_on(const lithe_value *v, lithe_backend *be, lithe_value **out) {
    *out = NULL;
    switch (v->kind) {
    case LITHE_VALUE_TENSOR:
    case LITHE_VALUE_RAGGED:
    case LITHE_VALUE_PADDED: {
        lithe_tensor *t = v->t[0], *moved = NULL;
        if (t->storage->backend == be) {
            *out = lithe_value_retain((lithe_value *)v);
            return LITHE_OK;
        }
        LITHE__TRY(lithe_tensor_to_backend(t, be, &moved));
        lithe_status s = v->kind == LITHE_VALUE_TENSOR ? lithe_value_tensor(moved, out)
                         : v->kind == LITHE_VALUE_RAGGED ? lithe_value_ragged(moved, v->t[1], out)
                                                          : lithe_value_padded(moved, v->t[1], v->t[2], v->t[3], out);
        lithe_tensor_release(moved);
        return s;
    }
    case LITHE_VALUE_LIST:
    case LITHE_VALUE_TUPLE: {
        lithe_value **items = v->n ? lithe__calloc(v->n, sizeof *items) : NULL;
        if (v->n && !items) return lithe__oom("with_cpu", v->n * sizeof *items);
        lithe_status s = LITHE_OK;
        for (size_t i = 0; i < v->n && s == LITHE_OK; i++) s = value_on(v->items[i], be, &items[i]);
        if (s == LITHE_OK) s = (v->kind == LITHE_VALUE_LIST ? lithe_value_list : lithe_value_tuple)(v->n, items, out);
        for (size_t i = 0; i < v->n; i++) lithe_value_release(items[i]);
        lithe__free(items);
        return s;
    }
    default: *out = lithe_value_retain((lithe_value *)v); return LITHE_OK; /* strings live on the host */
    }
}

/* ---- the shared pattern -------------------------------------------------------------------- */

static lithe_status to_inner(lithe_model *m, const lithe_value *v, int64_t pad, lithe_value **out) {
    *out = NULL;
    switch (kind_of(m)) {
    case W_ARRAY:
    case W_ARRAY2D: return array_in(m, v, pad, out);
    case W_RAGGED: return lithe__seq_to_ragged(m->backend, m->name, v, out);
    case W_PADDED: return lithe__seq_to_padded(m->backend, m->name, v, out);
    case W_LIST: return lithe__seq_to_list(m->backend, m->name, v, out);
    case W_CPU: return value_on(v, lithe__backend_host(), out);
    default: return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: not a container conversion", m->name);
    }
}

static lithe_status from_inner(lithe_model *m, const lithe_value *Yi, const lithe_value *like, int64_t pad,
                               lithe_value **out) {
    *out = NULL;
    switch (kind_of(m)) {
    case W_ARRAY:
    case W_ARRAY2D: return array_out(m, Yi, like, pad, out);
    case W_RAGGED: return lithe__seq_from_ragged(m->backend, m->name, Yi, like, out);
    case W_PADDED: return lithe__seq_from_padded(m->backend, m->name, Yi, like, out);
    case W_LIST: return lithe__seq_from_list(m->backend, m->name, Yi, like, out);
    case W_CPU: (void)like; return value_on(Yi, m->backend, out);
    default: return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: not a container conversion", m->name);
    }
}

typedef struct with_bp {
    lithe_backprop base;
    lithe_backprop *inner;
    lithe_value *X;    /* the forward input (with_flatten: its nesting; with_getitem: the tuple) */
    lithe_tensor *aux; /* with_flatten: the inner lengths; with_reshape: none */
    int64_t shape[3];  /* with_reshape: the input's (B, T, n) */
} with_bp;

static void with_destroy(lithe_backprop *self) {
    with_bp *r = (with_bp *)self;
    lithe_backprop_free(r->inner);
    lithe_value_release(r->X);
    lithe_tensor_release(r->aux);
}

static lithe_status convert_backward(lithe_backprop *self, const lithe_value *dY, lithe_value **dX) {
    lithe_model *m = self->model;
    with_bp *r = (with_bp *)self;
    int64_t pad = 0;
    LITHE__TRY(pad_of(m, &pad));
    if (kind_of(m) != W_CPU && dY->kind != LITHE_VALUE_TUPLE && r->X->kind != LITHE_VALUE_TUPLE && dY->kind != r->X->kind)
        return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: the gradient is not of the output's kind", m->name);
    lithe_value *dYi = NULL, *dXi = NULL;
    LITHE__TRY(to_inner(m, dY, pad, &dYi));
    lithe_status s = lithe_backprop_run(r->inner, dYi, dX ? &dXi : NULL);
    lithe_value_release(dYi);
    if (s == LITHE_OK && dX) s = from_inner(m, dXi, dY, pad, dX);
    lithe_value_release(dXi);
    return s;
}

static lithe_status record(lithe_model *m, lithe_status (*run)(lithe_backprop *, const lithe_value *, lithe_value **),
                           lithe_backprop *inner, const lithe_value *X, lithe_backprop **bp) {
    lithe_status s = lithe__backprop_new(m, sizeof(with_bp), run, with_destroy, bp);
    if (s != LITHE_OK) {
        lithe_backprop_free(inner);
        return s;
    }
    ((with_bp *)*bp)->inner = inner;
    ((with_bp *)*bp)->X = lithe_value_retain((lithe_value *)X);
    return LITHE_OK;
}

static lithe_status convert_forward(lithe_model *m, const lithe_value *X, bool is_train, lithe_value **Y,
                                    lithe_backprop **bp) {
    lithe_model *child = NULL;
    LITHE__TRY(child_of(m, &child));
    int64_t pad = 0;
    LITHE__TRY(pad_of(m, &pad));
    lithe_value *Xi = NULL, *Yi = NULL;
    lithe_backprop *inner = NULL;
    LITHE__TRY(to_inner(m, X, pad, &Xi));
    lithe_status s = lithe_model_forward(child, Xi, is_train, &Yi, bp ? &inner : NULL);
    lithe_value_release(Xi);
    if (s == LITHE_OK) s = from_inner(m, Yi, X, pad, Y);
    lithe_value_release(Yi);
    if (s == LITHE_OK && bp) {
        s = record(m, convert_backward, inner, X, bp);
        inner = NULL;
        if (s != LITHE_OK) {
            lithe_value_release(*Y);
            *Y = NULL;
        }
    }
    lithe_backprop_free(inner);
    return s;
}

/* Thinc: the child is initialized with the converted samples, then its dims are copied up. */
static lithe_status copy_child_dims(lithe_model *m, const lithe_model *child) {
    for (size_t d = 0; d < m->n_dims; d++) {
        int64_t v = lithe__dim_value(child, m->dims[d].name);
        if (v) LITHE__TRY(lithe_model_set_dim(m, m->dims[d].name, v));
    }
    return LITHE_OK;
}

static lithe_status convert_init(lithe_model *m, const lithe_value *X, const lithe_value *Y) {
    lithe_model *child = NULL;
    LITHE__TRY(child_of(m, &child));
    lithe_value *Xi = NULL, *Yi = NULL;
    lithe_status s = X ? to_inner(m, X, 0, &Xi) : LITHE_OK;
    if (s == LITHE_OK && Y) s = to_inner(m, Y, 0, &Yi);
    if (s == LITHE_OK) s = lithe_model_initialize(child, Xi, Yi);
    lithe_value_release(Xi);
    lithe_value_release(Yi);
    if (s == LITHE_OK) s = copy_child_dims(m, child);
    return s;
}

/* ---- with_flatten: a list of lists of items, the child run once on all items ---------------- */

/* The items of a list of lists, in order, and the length of each inner list. */
static lithe_status flatten_nested(const lithe_model *m, const lithe_value *X, lithe_value **flat, lithe_tensor **lens) {
    *flat = NULL;
    *lens = NULL;
    if (X->kind != LITHE_VALUE_LIST) return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: expected a list of lists", m->name);
    size_t total = 0;
    for (size_t i = 0; i < X->n; i++) {
        if (X->items[i]->kind != LITHE_VALUE_LIST)
            return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: item %zu is not a list", m->name, i);
        if (X->items[i]->n > INT32_MAX) return lithe__fail(LITHE_ERR_SHAPE, "%s: item %zu is too long", m->name, i);
        total += X->items[i]->n;
    }
    LITHE__TRY(lithe__host_i32((int64_t)X->n, NULL, lens));
    lithe_value **items = total ? lithe__calloc(total, sizeof *items) : NULL;
    if (total && !items) {
        lithe_tensor_release(*lens);
        *lens = NULL;
        return lithe__oom(m->name, total * sizeof *items);
    }
    size_t k = 0;
    for (size_t i = 0; i < X->n; i++) {
        ((int32_t *)lithe__tdata(*lens))[i] = (int32_t)X->items[i]->n;
        for (size_t j = 0; j < X->items[i]->n; j++) items[k++] = X->items[i]->items[j];
    }
    lithe_status s = lithe_value_list(total, items, flat);
    lithe__free(items);
    if (s != LITHE_OK) {
        lithe_tensor_release(*lens);
        *lens = NULL;
    }
    return s;
}

/* The inverse: a flat list (or, for v1, an array split by rows) nested by `lens`. */
static lithe_status nest(const lithe_model *m, const lithe_value *flat, const lithe_tensor *lens, lithe_value **out) {
    *out = NULL;
    const int32_t *l = lithe__tdata(lens);
    int64_t n = lens->shape[0], total = 0;
    for (int64_t i = 0; i < n; i++) total += l[i];
    if (flat->kind == LITHE_VALUE_TENSOR) { /* v1: the child returned one array */
        /* Thinc splits its rows at the running item counts of all but the last inner list; the
         * last piece takes the remaining rows (one row per item is the case it is made for). */
        lithe_tensor *Yf = flat->t[0], *cut = NULL;
        if (Yf->ndim < 1) return lithe__fail(LITHE_ERR_SHAPE, "%s: the child returned a 0-d array", m->name);
        int64_t before_last = n ? total - l[n - 1] : 0;
        if (before_last > Yf->shape[0] || (n == 0 && Yf->shape[0] != 0))
            return lithe__fail(LITHE_ERR_SHAPE, "%s: the child returned %lld rows for %lld items", m->name,
                               (long long)Yf->shape[0], (long long)total);
        LITHE__TRY(lithe__host_i32(n, l, &cut));
        if (n) ((int32_t *)lithe__tdata(cut))[n - 1] = (int32_t)(Yf->shape[0] - before_last);
        lithe_status s = lithe__seq_unflatten(m->name, Yf, cut, 0, out);
        lithe_tensor_release(cut);
        return s;
    }
    if (flat->kind != LITHE_VALUE_LIST || (int64_t)flat->n != total)
        return lithe__fail(LITHE_ERR_SHAPE, "%s: the child returned %s%zu items for %lld inputs", m->name,
                           flat->kind == LITHE_VALUE_LIST ? "" : "a non-list of ", flat->n, (long long)total);
    lithe_value **outer = n ? lithe__calloc((size_t)n, sizeof *outer) : NULL;
    if (n && !outer) return lithe__oom(m->name, (size_t)n * sizeof *outer);
    lithe_status s = LITHE_OK;
    size_t k = 0;
    for (int64_t i = 0; i < n && s == LITHE_OK; i++) {
        s = lithe_value_list((size_t)l[i], flat->items + k, &outer[i]);
        k += (size_t)l[i];
    }
    if (s == LITHE_OK) s = lithe_value_list((size_t)n, outer, out);
    for (int64_t i = 0; i < n; i++) lithe_value_release(outer[i]);
    lithe__free(outer);
    return s;
}

static lithe_status flatten_backward(lithe_backprop *self, const lithe_value *dY, lithe_value **dX) {
    lithe_model *m = self->model;
    with_bp *r = (with_bp *)self;
    lithe_value *dYi = NULL, *dXi = NULL;
    lithe_status s;
    if (kind_of(m) == W_FLATTEN1) { /* Thinc v1: the gradient list is stacked into one array */
        lithe_tensor *flat = NULL;
        s = lithe__seq_flatten(m->backend, m->name, dY, 0, &flat);
        if (s == LITHE_OK) s = lithe__value_wrap(flat, &dYi);
    } else {
        lithe_tensor *lens = NULL;
        s = flatten_nested(m, dY, &dYi, &lens);
        lithe_tensor_release(lens);
    }
    if (s == LITHE_OK) s = lithe_backprop_run(r->inner, dYi, dX ? &dXi : NULL);
    lithe_value_release(dYi);
    if (s == LITHE_OK && dX) s = nest(m, dXi, r->aux, dX);
    lithe_value_release(dXi);
    return s;
}

static lithe_status flatten_forward(lithe_model *m, const lithe_value *X, bool is_train, lithe_value **Y,
                                    lithe_backprop **bp) {
    lithe_model *child = NULL;
    LITHE__TRY(child_of(m, &child));
    lithe_value *flat = NULL, *Yf = NULL;
    lithe_tensor *lens = NULL;
    lithe_backprop *inner = NULL;
    LITHE__TRY(flatten_nested(m, X, &flat, &lens));
    lithe_status s = lithe_model_forward(child, flat, is_train, &Yf, bp ? &inner : NULL);
    lithe_value_release(flat);
    if (s == LITHE_OK && kind_of(m) == W_FLATTEN1 && Yf->kind != LITHE_VALUE_TENSOR)
        s = lithe__fail(LITHE_ERR_INVALID_ARG, "%s: with_flatten.v1's child must return an array", m->name);
    if (s == LITHE_OK) s = nest(m, Yf, lens, Y);
    lithe_value_release(Yf);
    if (s == LITHE_OK && bp) {
        s = record(m, flatten_backward, inner, X, bp);
        inner = NULL;
        if (s == LITHE_OK) {
            ((with_bp *)*bp)->aux = lens;
            lens = NULL;
        } else {
            lithe_value_release(*Y);
            *Y = NULL;
        }
    }
    lithe_backprop_free(inner);
    lithe_tensor_release(lens);
    return s;
}

static lithe_status flatten_init(lithe_model *m, const lithe_value *X, const lithe_value *Y) {
    lithe_model *child = NULL;
    LITHE__TRY(child_of(m, &child));
    lithe_value *flat = NULL, *Yf = NULL;
    lithe_tensor *lens = NULL, *ystack = NULL;
    lithe_status s = X ? flatten_nested(m, X, &flat, &lens) : LITHE_OK;
    /* Thinc: Y is hstack'ed (rows of a list of arrays stacked) */
    if (s == LITHE_OK && Y && Y->kind == LITHE_VALUE_LIST) {
        s = lithe__seq_flatten(m->backend, m->name, Y, 0, &ystack);
        if (s == LITHE_OK) s = lithe__value_wrap(ystack, &Yf);
    } else if (s == LITHE_OK && Y) {
        Yf = lithe_value_retain((lithe_value *)Y);
    }
    if (s == LITHE_OK) s = lithe_model_initialize(child, flat, Yf);
    lithe_value_release(flat);
    lithe_value_release(Yf);
    lithe_tensor_release(lens);
    return s;
}

/* ---- with_getitem: the child sees item idx of a tuple --------------------------------------- */

static lithe_status getitem_idx(const lithe_model *m, const lithe_value *v, size_t *idx) {
    int64_t i = 0;
    LITHE__TRY(lithe_model_get_attr_int(m, "idx", &i));
    if (v->kind != LITHE_VALUE_TUPLE) return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: expected a tuple", m->name);
    if (i < 0 || (uint64_t)i >= v->n)
        return lithe__fail(LITHE_ERR_SHAPE, "%s: idx %lld outside a tuple of %zu items", m->name, (long long)i, v->n);
    *idx = (size_t)i;
    return LITHE_OK;
}

/* A copy of the tuple with item idx replaced. */
static lithe_status tuple_with(const lithe_value *t, size_t idx, lithe_value *item, lithe_value **out) {
    lithe_value **items = lithe__calloc(t->n, sizeof *items);
    if (!items) return lithe__oom("with_getitem", t->n * sizeof *items);
    for (size_t i = 0; i < t->n; i++) items[i] = i == idx ? item : t->items[i];
    lithe_status s = lithe_value_tuple(t->n, items, out);
    lithe__free(items);
    return s;
}

static lithe_status getitem_backward(lithe_backprop *self, const lithe_value *dY, lithe_value **dX) {
    lithe_model *m = self->model;
    with_bp *r = (with_bp *)self;
    size_t idx = 0;
    LITHE__TRY(getitem_idx(m, dY, &idx));
    lithe_value *dXi = NULL;
    LITHE__TRY(lithe_backprop_run(r->inner, dY->items[idx], dX ? &dXi : NULL));
    lithe_status s = LITHE_OK;
    if (dX) s = tuple_with(dY, idx, dXi, dX);
    lithe_value_release(dXi);
    return s;
}

static lithe_status getitem_forward(lithe_model *m, const lithe_value *X, bool is_train, lithe_value **Y,
                                    lithe_backprop **bp) {
    lithe_model *child = NULL;
    size_t idx = 0;
    LITHE__TRY(child_of(m, &child));
    LITHE__TRY(getitem_idx(m, X, &idx));
    lithe_value *Yi = NULL;
    lithe_backprop *inner = NULL;
    LITHE__TRY(lithe_model_forward(child, X->items[idx], is_train, &Yi, bp ? &inner : NULL));
    lithe_status s = tuple_with(X, idx, Yi, Y);
    lithe_value_release(Yi);
    if (s == LITHE_OK && bp) {
        s = record(m, getitem_backward, inner, X, bp);
        inner = NULL;
        if (s != LITHE_OK) {
            lithe_value_release(*Y);
            *Y = NULL;
        }
    }
    lithe_backprop_free(inner);
    return s;
}

static lithe_status getitem_init(lithe_model *m, const lithe_value *X, const lithe_value *Y) {
    lithe_model *child = NULL;
    size_t xi = 0, yi = 0;
    LITHE__TRY(child_of(m, &child));
    if (X) LITHE__TRY(getitem_idx(m, X, &xi));
    if (Y) LITHE__TRY(getitem_idx(m, Y, &yi));
    return lithe_model_initialize(child, X ? X->items[xi] : NULL, Y ? Y->items[yi] : NULL);
}

/* ---- with_reshape: (B, T, n) arrays through a child on (B*T, n) ---------------------------- */

static lithe_status reshape_to(lithe_model *m, const lithe_value *v, int ndim, const int64_t *shape, lithe_value **out) {
    if (v->kind != LITHE_VALUE_TENSOR) return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: expected an array", m->name);
    lithe_tensor *X = v->t[0], *c = NULL, *R = NULL;
    lithe_status s = LITHE_OK;
    if (lithe_tensor_is_contiguous(X)) c = lithe_tensor_retain(X);
    else {
        s = lithe__tensor_like(X, false, &c);
        if (s == LITHE_OK) s = lithe__op_copy(m->backend, c, X);
    }
    if (s == LITHE_OK) s = lithe_tensor_reshape(c, ndim, shape, &R);
    lithe_tensor_release(c);
    if (s != LITHE_OK) return s;
    return lithe__value_wrap(R, out);
}

static lithe_status reshape_backward(lithe_backprop *self, const lithe_value *dY, lithe_value **dX) {
    lithe_model *m = self->model;
    with_bp *r = (with_bp *)self;
    lithe_value *d2 = NULL, *dX2 = NULL;
    if (dY->kind != LITHE_VALUE_TENSOR || dY->t[0]->ndim != 3 || dY->t[0]->shape[0] != r->shape[0] ||
        dY->t[0]->shape[1] != r->shape[1])
        return lithe__fail(LITHE_ERR_SHAPE, "%s: expected a (%lld, %lld, nO) gradient", m->name, (long long)r->shape[0],
                           (long long)r->shape[1]);
    LITHE__TRY(reshape_to(m, dY, 2, (int64_t[]){r->shape[0] * r->shape[1], -1}, &d2));
    lithe_status s = lithe_backprop_run(r->inner, d2, dX ? &dX2 : NULL);
    lithe_value_release(d2);
    /* Thinc 8.1.7 reshapes dY to the *input's* shape before the child's backprop (which only
     * works when nO == nI) and returns the child's 2-d dX; lithe feeds the child (B*T, nO) and
     * returns dX in the input's (B, T, nI) shape, what the layer means. */
    if (s == LITHE_OK && dX) s = reshape_to(m, dX2, 3, r->shape, dX);
    lithe_value_release(dX2);
    return s;
}

static lithe_status reshape_forward(lithe_model *m, const lithe_value *X, bool is_train, lithe_value **Y,
                                    lithe_backprop **bp) {
    lithe_model *child = NULL;
    LITHE__TRY(child_of(m, &child));
    if (X->kind != LITHE_VALUE_TENSOR || X->t[0]->ndim != 3) {
        return lithe__fail(LITHE_ERR_SHAPE, "%s: expected a 3-d array, got %s", m->name,
                           X->kind == LITHE_VALUE_TENSOR ? "another rank" : "another kind of value");
    }
    const lithe_tensor *x = X->t[0];
    int64_t B = x->shape[0], T = x->shape[1];
    lithe_value *X2 = NULL, *Y2 = NULL;
    lithe_backprop *inner = NULL;
    LITHE__TRY(reshape_to(m, X, 2, (int64_t[]){B * T, x->shape[2]}, &X2));
    lithe_status s = lithe_model_forward(child, X2, is_train, &Y2, bp ? &inner : NULL);
    lithe_value_release(X2);
    if (s == LITHE_OK) s = reshape_to(m, Y2, 3, (int64_t[]){B, T, -1}, Y);
    lithe_value_release(Y2);
    if (s == LITHE_OK && bp) {
        s = record(m, reshape_backward, inner, X, bp);
        inner = NULL;
        if (s == LITHE_OK) memcpy(((with_bp *)*bp)->shape, x->shape, sizeof(int64_t[3]));
        else {
            lithe_value_release(*Y);
            *Y = NULL;
        }
    }
    lithe_backprop_free(inner);
    return s;
}

static lithe_status reshape_init(lithe_model *m, const lithe_value *X, const lithe_value *Y) {
    lithe_model *child = NULL;
    LITHE__TRY(child_of(m, &child));
    lithe_value *X2 = NULL, *Y2 = NULL;
    lithe_status s = LITHE_OK;
    if (X && X->kind == LITHE_VALUE_TENSOR && X->t[0]->ndim >= 1)
        s = reshape_to(m, X, 2, (int64_t[]){-1, X->t[0]->shape[X->t[0]->ndim - 1]}, &X2);
    if (s == LITHE_OK && Y && Y->kind == LITHE_VALUE_TENSOR && Y->t[0]->ndim >= 1)
        s = reshape_to(m, Y, 2, (int64_t[]){-1, Y->t[0]->shape[Y->t[0]->ndim - 1]}, &Y2);
    if (s == LITHE_OK) s = lithe_model_initialize(child, X2, Y2);
    lithe_value_release(X2);
    lithe_value_release(Y2);
    if (s == LITHE_OK) s = copy_child_dims(m, child);
    return s;
}

/* ---- types and constructors ---------------------------------------------------------------- */

#define WITH_TYPE(var, reg, init, fwd, kind) \
    static const lithe__layer_type var = {reg, init, fwd, (const void *)(intptr_t)(kind), 1, 1};
WITH_TYPE(with_array_type, "with_array.v1", convert_init, convert_forward, W_ARRAY)
WITH_TYPE(with_array2d_type, "with_array2d.v1", convert_init, convert_forward, W_ARRAY2D)
WITH_TYPE(with_ragged_type, "with_ragged.v1", convert_init, convert_forward, W_RAGGED)
WITH_TYPE(with_padded_type, "with_padded.v1", convert_init, convert_forward, W_PADDED)
WITH_TYPE(with_list_type, "with_list.v1", convert_init, convert_forward, W_LIST)
WITH_TYPE(with_flatten1_type, "with_flatten.v1", flatten_init, flatten_forward, W_FLATTEN1)
WITH_TYPE(with_flatten2_type, "with_flatten.v2", flatten_init, flatten_forward, W_FLATTEN2)
WITH_TYPE(with_getitem_type, "with_getitem.v1", getitem_init, getitem_forward, W_GETITEM)
WITH_TYPE(with_reshape_type, "with_reshape.v1", reshape_init, reshape_forward, W_RESHAPE)
WITH_TYPE(with_cpu_type, "with_cpu.v1", convert_init, convert_forward, W_CPU)

const lithe__layer_type *const lithe__with_types[] = {
    &with_array_type,    &with_array2d_type,  &with_ragged_type,  &with_padded_type,  &with_list_type,
    &with_flatten1_type, &with_flatten2_type, &with_getitem_type, &with_reshape_type, &with_cpu_type, NULL};

/* A node named "<prefix>(<child name>)" holding the child; dims: the child's dim names (with their
 * values) when copy_dims, else `dims`. Takes over the child (frees it on failure). */
static lithe_status with_new(const lithe__layer_type *type, const char *prefix, lithe_model *layer, bool copy_dims,
                             const char *const *dims, lithe_model **out) {
    LITHE__CHECK_ARG(out, prefix, "out is NULL");
    *out = NULL;
    if (!layer) return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: layer is NULL", prefix);
    char name[256];
    snprintf(name, sizeof name, "%s(%s)", prefix, layer->name);
    const char **dn = NULL;
    lithe_status s = LITHE_OK;
    if (copy_dims) {
        dn = lithe__calloc(layer->n_dims + 1, sizeof *dn);
        if (!dn) s = lithe__oom(prefix, (layer->n_dims + 1) * sizeof *dn);
        for (size_t d = 0; dn && d < layer->n_dims; d++) dn[d] = layer->dims[d].name;
    }
    lithe_model *m = NULL;
    if (s == LITHE_OK) s = lithe__model_new(type, name, copy_dims ? dn : dims, NULL, &m);
    lithe__free(dn);
    if (s != LITHE_OK) {
        lithe_model_free(layer);
        return s;
    }
    for (size_t d = 0; copy_dims && d < layer->n_dims; d++) m->dims[d].value = layer->dims[d].value;
    s = lithe__model_add_layer(m, layer);
    if (s != LITHE_OK) {
        lithe_model_free(m);
        return s;
    }
    *out = m;
    return LITHE_OK;
}

static lithe_status with_pad(const lithe__layer_type *type, lithe_model *layer, int64_t pad, lithe_model **out) {
    if (pad < 0 || pad > (1 << 20)) {
        lithe_model_free(layer);
        if (out) *out = NULL;
        return lithe__fail(LITHE_ERR_VALUE, "with_array: pad %lld outside 0..%d", (long long)pad, 1 << 20);
    }
    LITHE__TRY(with_new(type, "with_array", layer, true, NULL, out));
    lithe_status s = lithe_model_set_attr_int(*out, "pad", pad);
    if (s != LITHE_OK) {
        lithe_model_free(*out);
        *out = NULL;
    }
    return s;
}

lithe_status lithe_with_array(lithe_model *layer, int64_t pad, lithe_model **out) {
    return with_pad(&with_array_type, layer, pad, out);
}
lithe_status lithe_with_array2d(lithe_model *layer, int64_t pad, lithe_model **out) {
    return with_pad(&with_array2d_type, layer, pad, out);
}
lithe_status lithe_with_ragged(lithe_model *layer, lithe_model **out) {
    return with_new(&with_ragged_type, "with_ragged", layer, false, NULL, out);
}
lithe_status lithe_with_padded(lithe_model *layer, lithe_model **out) {
    return with_new(&with_padded_type, "with_padded", layer, true, NULL, out);
}
lithe_status lithe_with_list(lithe_model *layer, lithe_model **out) {
    return with_new(&with_list_type, "with_list", layer, true, NULL, out);
}
lithe_status lithe_with_flatten(lithe_model *layer, int version, lithe_model **out) {
    if (version != 1 && version != 2) {
        lithe_model_free(layer);
        if (out) *out = NULL;
        return lithe__fail(LITHE_ERR_VALUE, "with_flatten: version %d is neither 1 nor 2", version);
    }
    return with_new(version == 1 ? &with_flatten1_type : &with_flatten2_type, "with_flatten", layer, false, NULL, out);
}
lithe_status lithe_with_getitem(int64_t idx, lithe_model *layer, lithe_model **out) {
    LITHE__TRY(with_new(&with_getitem_type, "with_getitem", layer, false, NULL, out));
    lithe_status s = lithe_model_set_attr_int(*out, "idx", idx);
    if (s != LITHE_OK) {
        lithe_model_free(*out);
        *out = NULL;
    }
    return s;
}
lithe_status lithe_with_reshape(lithe_model *layer, lithe_model **out) {
    static const char *const dims[] = {"nO", "nI", NULL};
    return with_new(&with_reshape_type, "with_reshape", layer, false, dims, out);
}
lithe_status lithe_with_cpu(lithe_model *layer, lithe_model **out) {
    LITHE__TRY(with_new(&with_cpu_type, "with_cpu", layer, true, NULL, out));
    lithe_model *m = *out;
    lithe_status s = lithe_model_set_backend(m->layers[0], lithe__backend_host());
    if (s != LITHE_OK) {
        lithe_model_free(m);
        *out = NULL;
    }
    return s;
}
