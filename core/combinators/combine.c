/* Thinc's combinators over arrays: concatenate (hstack of the layers' outputs), add (their sum),
 * residual (X + layer(X)), noop (identity) and clone (n copies chained). Ragged and list inputs
 * arrive with the sequence layers; until then they are LITHE_ERR_UNSUPPORTED. */
#include "../internal.h"

#include <stdio.h>

/* ---- shared helpers ---- */

static lithe_status float_tensor(const lithe_model *m, const lithe_value *v, const char *what, lithe_tensor **out) {
    const lithe_tensor *t = lithe_value_get_tensor(v);
    if (!t)
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "%s: %s is not an array (Ragged and lists arrive with the "
                                                  "sequence layers)", m->name, what);
    if (t->dtype != LITHE_F32)
        return lithe__fail(LITHE_ERR_DTYPE, "%s: %s must be float32, got %s", m->name, what, lithe_dtype_name(t->dtype));
    *out = (lithe_tensor *)t;
    return LITHE_OK;
}

static lithe_status same_shape(const lithe_model *m, const lithe_tensor *a, const lithe_tensor *b, const char *what) {
    bool same = a->ndim == b->ndim;
    for (int d = 0; same && d < a->ndim; d++) same = a->shape[d] == b->shape[d];
    if (same) return LITHE_OK;
    char sa[96], sb[96];
    return lithe__fail(LITHE_ERR_SHAPE, "%s: %s: shape %s does not match %s", m->name, what,
                       lithe__shape_str(a, sa, sizeof sa), lithe__shape_str(b, sb, sizeof sb));
}

/* A contiguous float32 copy of t (a new reference to t itself when already contiguous). */
static lithe_status contiguous(lithe_backend *be, lithe_tensor *t, lithe_tensor **out) {
    if (lithe_tensor_is_contiguous(t)) {
        *out = lithe_tensor_retain(t);
        return LITHE_OK;
    }
    LITHE__TRY(lithe__tensor_like(t, false, out));
    lithe_status s = lithe__op_copy(be, *out, t);
    if (s != LITHE_OK) {
        lithe_tensor_release(*out);
        *out = NULL;
    }
    return s;
}

/* A combinator's record: one backprop per child. */
typedef struct multi_bp {
    lithe_backprop base;
    size_t n;
    lithe_backprop **steps;
    int64_t *widths; /* concatenate: each child's output width */
} multi_bp;

static void multi_destroy(lithe_backprop *self) {
    multi_bp *r = (multi_bp *)self;
    for (size_t i = 0; i < r->n; i++) lithe_backprop_free(r->steps[i]);
    lithe__free(r->steps);
    lithe__free(r->widths);
}

/* A record for n children's backprops (n: the node's layers, or map_list's items). */
static lithe_status multi_new_n(lithe_model *m, size_t n,
                                lithe_status (*run)(lithe_backprop *, const lithe_value *, lithe_value **),
                                multi_bp **out) {
    lithe_backprop *bp = NULL;
    LITHE__TRY(lithe__backprop_new(m, sizeof(multi_bp), run, multi_destroy, &bp));
    multi_bp *r = (multi_bp *)bp;
    r->steps = lithe__calloc(n ? n : 1, sizeof *r->steps);
    r->widths = lithe__calloc(n ? n : 1, sizeof *r->widths);
    if (!r->steps || !r->widths) {
        lithe_backprop_free(bp);
        return lithe__oom(m->name, n * (sizeof *r->steps + sizeof *r->widths));
    }
    *out = r;
    return LITHE_OK;
}

static lithe_status multi_new(lithe_model *m, lithe_status (*run)(lithe_backprop *, const lithe_value *, lithe_value **),
                              multi_bp **out) {
    return multi_new_n(m, m->n_layers, run, out);
}

/* A combinator forward's end: on success the output tensor (if any) wrapped into *Y and the record
 * handed over; on failure both dropped. */
static lithe_status multi_finish(lithe_status s, lithe_tensor *out, lithe_value **Y, multi_bp *r, lithe_backprop **bp) {
    if (s == LITHE_OK && out) s = lithe__value_wrap(out, Y);
    else lithe_tensor_release(out);
    if (s != LITHE_OK) {
        if (r) lithe_backprop_free(&r->base);
        return s;
    }
    if (bp) *bp = &r->base;
    return LITHE_OK;
}

/* acc += the tensor of v (both float32, same shape); takes over v. */
static lithe_status accumulate(lithe_model *m, lithe_tensor *acc, lithe_value *v, const char *what) {
    lithe_tensor *t = NULL;
    lithe_status s = float_tensor(m, v, what, &t);
    if (s == LITHE_OK) s = same_shape(m, t, acc, what);
    if (s == LITHE_OK) s = lithe__op_axpby(m->backend, 1.0f, t, 1.0f, acc);
    lithe_value_release(v);
    return s;
}

/* Wraps a tensor into *out (or drops it when the caller wants no dX). */
static lithe_status emit(lithe_tensor *t, lithe_value **out) {
    if (!out) {
        lithe_tensor_release(t);
        return LITHE_OK;
    }
    return lithe__value_wrap(t, out);
}

static int64_t value_width(const lithe_value *v) {
    const lithe_tensor *t = lithe_value_get_tensor(v);
    return t && t->ndim >= 1 ? t->shape[t->ndim - 1] : 0;
}

/* Thinc's init for concatenate and add: nI from X where the node and each child have an nI dim. */
static lithe_status set_nI_from_X(lithe_model *m, const lithe_value *X) {
    if (!X) return LITHE_OK;
    int64_t w = value_width(X);
    if (w <= 0) return LITHE_OK;
    if (lithe_model_has_dim(m, "nI") != LITHE_HAS_NO) LITHE__TRY(lithe__infer_dim(m, "nI", w, "sample X"));
    for (size_t i = 0; i < m->n_layers; i++)
        if (lithe_model_has_dim(m->layers[i], "nI") != LITHE_HAS_NO)
            LITHE__TRY(lithe__infer_dim(m->layers[i], "nI", w, "sample X"));
    return LITHE_OK;
}

/* ---- concatenate ---- */

static lithe_status concat_backward(lithe_backprop *self, const lithe_value *dYv, lithe_value **dX) {
    multi_bp *r = (multi_bp *)self;
    lithe_model *m = self->model;
    lithe_tensor *dY = NULL, *acc = NULL;
    LITHE__TRY(float_tensor(m, dYv, "gradient", &dY));
    int64_t total = 0;
    for (size_t i = 0; i < r->n; i++) total += r->widths[i];
    if (dY->ndim != 2 || dY->shape[1] != total)
        return lithe__fail(LITHE_ERR_SHAPE, "%s: gradient must be (B, %lld)", m->name, (long long)total);
    lithe_status s = LITHE_OK;
    int64_t start = 0;
    for (size_t i = 0; s == LITHE_OK && i < r->n; i++) {
        lithe_tensor *view = NULL, *part = NULL;
        lithe_value *pv = NULL, *g = NULL;
        s = lithe_tensor_slice(dY, 1, start, start + r->widths[i], &view);
        if (s == LITHE_OK) s = contiguous(m->backend, view, &part); /* Thinc: as_contig */
        if (s == LITHE_OK) s = lithe_value_tensor(part, &pv);
        if (s == LITHE_OK) s = lithe_backprop_run(r->steps[i], pv, dX ? &g : NULL);
        if (s == LITHE_OK && dX) {
            if (!acc) { /* a private accumulator: the child's dX may be shared */
                lithe_tensor *t = NULL;
                s = float_tensor(m, g, "dX", &t);
                if (s == LITHE_OK) s = lithe__tensor_like(t, false, &acc);
                if (s == LITHE_OK) s = lithe__op_copy(m->backend, acc, t);
                lithe_value_release(g);
            } else {
                s = accumulate(m, acc, g, "dX");
            }
        }
        lithe_value_release(pv);
        lithe_tensor_release(part);
        lithe_tensor_release(view);
        start += r->widths[i];
    }
    if (s != LITHE_OK) {
        lithe_tensor_release(acc);
        return s;
    }
    return dX ? emit(acc, dX) : LITHE_OK;
}

static lithe_status concat_forward(lithe_model *m, const lithe_value *X, bool is_train, lithe_value **Y,
                                   lithe_backprop **bp) {
    size_t n = m->n_layers;
    lithe_value **Ys = lithe__calloc(n, sizeof *Ys);
    if (!Ys) return lithe__oom(m->name, n * sizeof *Ys);
    multi_bp *r = NULL;
    lithe_status s = bp ? multi_new(m, concat_backward, &r) : LITHE_OK;
    int64_t total = 0, B = -1;
    for (size_t i = 0; s == LITHE_OK && i < n; i++) {
        s = lithe_model_forward(m->layers[i], X, is_train, &Ys[i], r ? &r->steps[i] : NULL);
        if (s != LITHE_OK) break;
        if (r) r->n = i + 1;
        lithe_tensor *t = NULL;
        s = float_tensor(m, Ys[i], "a layer's output", &t);
        if (s == LITHE_OK && t->ndim != 2)
            s = lithe__fail(LITHE_ERR_SHAPE, "%s: layer %zu (%s) gave a %d-D output; concatenate needs 2-D", m->name,
                            i, m->layers[i]->name, t->ndim);
        if (s == LITHE_OK && B >= 0 && t->shape[0] != B)
            s = lithe__fail(LITHE_ERR_SHAPE, "%s: layer %zu (%s) gave %lld rows, layer 0 gave %lld", m->name, i,
                            m->layers[i]->name, (long long)t->shape[0], (long long)B);
        if (s == LITHE_OK) {
            B = t->shape[0];
            total += t->shape[1];
            if (r) r->widths[i] = t->shape[1];
        }
    }
    lithe_tensor *out = NULL;
    if (s == LITHE_OK) s = lithe__tensor_alloc(m->backend, LITHE_F32, 2, (int64_t[]){B, total}, false, &out);
    int64_t start = 0;
    for (size_t i = 0; s == LITHE_OK && i < n; i++) {
        lithe_tensor *t = (lithe_tensor *)lithe_value_get_tensor(Ys[i]), *view = NULL;
        s = lithe_tensor_slice(out, 1, start, start + t->shape[1], &view);
        if (s == LITHE_OK) s = lithe__op_copy(m->backend, view, t);
        lithe_tensor_release(view);
        start += t->shape[1];
    }
    for (size_t i = 0; i < n; i++) lithe_value_release(Ys[i]);
    lithe__free(Ys);
    return multi_finish(s, out, Y, r, bp);
}

static lithe_status concat_init(lithe_model *m, const lithe_value *X, const lithe_value *Y) {
    LITHE__TRY(set_nI_from_X(m, X));
    for (size_t i = 0; i < m->n_layers; i++) LITHE__TRY(lithe_model_initialize(m->layers[i], X, Y));
    int64_t total = 0;
    for (size_t i = 0; i < m->n_layers; i++) {
        int64_t w = lithe__dim_value(m->layers[i], "nO");
        if (!w) return LITHE_OK; /* Thinc sets nO only when every layer has one */
        total += w;
    }
    return lithe__infer_dim(m, "nO", total, "the layers' nO");
}

/* ---- add ---- */

/* dX = the sum of the children's dX: each child gets dY, or item i of a tuple dY. */
static lithe_status sum_backprops(lithe_backprop *self, const lithe_value *dY, bool per_item, lithe_value **dX) {
    multi_bp *r = (multi_bp *)self;
    lithe_model *m = self->model;
    lithe_tensor *acc = NULL;
    lithe_status s = LITHE_OK;
    for (size_t i = 0; s == LITHE_OK && i < r->n; i++) {
        lithe_value *g = NULL;
        s = lithe_backprop_run(r->steps[i], per_item ? lithe_value_item(dY, i) : dY, dX ? &g : NULL);
        if (s != LITHE_OK || !dX) continue;
        if (!acc) {
            lithe_tensor *t = NULL;
            s = float_tensor(m, g, "dX", &t);
            if (s == LITHE_OK) s = lithe__tensor_like(t, false, &acc);
            if (s == LITHE_OK) s = lithe__op_copy(m->backend, acc, t);
            lithe_value_release(g);
        } else {
            s = accumulate(m, acc, g, "dX");
        }
    }
    if (s != LITHE_OK) {
        lithe_tensor_release(acc);
        return s;
    }
    return dX ? emit(acc, dX) : LITHE_OK;
}

static lithe_status add_backward(lithe_backprop *self, const lithe_value *dY, lithe_value **dX) {
    return sum_backprops(self, dY, false, dX);
}

static lithe_status add_forward(lithe_model *m, const lithe_value *X, bool is_train, lithe_value **Y,
                                lithe_backprop **bp) {
    multi_bp *r = NULL;
    LITHE__TRY(bp ? multi_new(m, add_backward, &r) : LITHE_OK);
    lithe_tensor *acc = NULL;
    lithe_status s = LITHE_OK;
    for (size_t i = 0; s == LITHE_OK && i < m->n_layers; i++) {
        lithe_value *Yi = NULL;
        s = lithe_model_forward(m->layers[i], X, is_train, &Yi, r ? &r->steps[i] : NULL);
        if (s != LITHE_OK) break;
        if (r) r->n = i + 1;
        if (!acc) {
            lithe_tensor *t = NULL;
            s = float_tensor(m, Yi, "a layer's output", &t);
            if (s == LITHE_OK) s = lithe__tensor_like(t, false, &acc);
            if (s == LITHE_OK) s = lithe__op_copy(m->backend, acc, t);
            lithe_value_release(Yi);
        } else {
            s = accumulate(m, acc, Yi, "a layer's output");
        }
    }
    return multi_finish(s, acc, Y, r, bp);
}

static lithe_status add_init(lithe_model *m, const lithe_value *X, const lithe_value *Y) {
    LITHE__TRY(set_nI_from_X(m, X));
    if (Y && value_width(Y) > 0) {
        int64_t w = value_width(Y);
        if (lithe_model_has_dim(m, "nO") != LITHE_HAS_NO) LITHE__TRY(lithe__infer_dim(m, "nO", w, "sample Y"));
        for (size_t i = 0; i < m->n_layers; i++)
            if (lithe_model_has_dim(m->layers[i], "nO") != LITHE_HAS_NO)
                LITHE__TRY(lithe__infer_dim(m->layers[i], "nO", w, "sample Y"));
    }
    for (size_t i = 0; i < m->n_layers; i++) LITHE__TRY(lithe_model_initialize(m->layers[i], X, Y));
    int64_t nO = lithe__dim_value(m->layers[0], "nO");
    return nO ? lithe__infer_dim(m, "nO", nO, "the first layer's nO") : LITHE_OK;
}

/* ---- residual ---- */

static lithe_status residual_backward(lithe_backprop *self, const lithe_value *dYv, lithe_value **dX) {
    multi_bp *r = (multi_bp *)self;
    lithe_model *m = self->model;
    lithe_tensor *dY = NULL, *acc = NULL;
    LITHE__TRY(float_tensor(m, dYv, "gradient", &dY));
    lithe_value *g = NULL;
    LITHE__TRY(lithe_backprop_run(r->steps[0], dYv, dX ? &g : NULL));
    if (!dX) return LITHE_OK;
    lithe_status s = lithe__tensor_like(dY, false, &acc);
    if (s == LITHE_OK) s = lithe__op_copy(m->backend, acc, dY);
    if (s == LITHE_OK) s = accumulate(m, acc, g, "the layer's dX");
    else lithe_value_release(g);
    if (s != LITHE_OK) {
        lithe_tensor_release(acc);
        return s;
    }
    return emit(acc, dX);
}

static lithe_status residual_forward(lithe_model *m, const lithe_value *X, bool is_train, lithe_value **Y,
                                     lithe_backprop **bp) {
    lithe_tensor *x = NULL, *acc = NULL;
    LITHE__TRY(float_tensor(m, X, "input", &x));
    multi_bp *r = NULL;
    LITHE__TRY(bp ? multi_new(m, residual_backward, &r) : LITHE_OK);
    lithe_value *Yi = NULL;
    lithe_status s = lithe_model_forward(m->layers[0], X, is_train, &Yi, r ? &r->steps[0] : NULL);
    if (s == LITHE_OK && r) r->n = 1;
    if (s == LITHE_OK) s = lithe__tensor_like(x, false, &acc);
    if (s == LITHE_OK) s = lithe__op_copy(m->backend, acc, x);
    if (s == LITHE_OK) {
        s = accumulate(m, acc, Yi, "the layer's output");
        Yi = NULL;
    }
    lithe_value_release(Yi);
    return multi_finish(s, acc, Y, r, bp);
}

static lithe_status residual_init(lithe_model *m, const lithe_value *X, const lithe_value *Y) {
    lithe_model *first = m->layers[0];
    bool unset = lithe_model_has_dim(first, "nO") == LITHE_HAS_UNSET;
    LITHE__TRY(lithe_model_initialize(first, X, unset ? Y : NULL));
    int64_t nO = lithe__dim_value(first, "nO"), nI = lithe__dim_value(first, "nI");
    if (nO) LITHE__TRY(lithe__infer_dim(m, "nO", nO, "the layer's nO"));
    if (nI) LITHE__TRY(lithe__infer_dim(m, "nI", nI, "the layer's nI"));
    return LITHE_OK;
}

/* ---- noop ---- */

static lithe_status noop_forward(lithe_model *m, const lithe_value *X, bool is_train, lithe_value **Y,
                                 lithe_backprop **bp) {
    (void)is_train;
    if (bp) LITHE__TRY(lithe__backprop_identity(m, bp));
    *Y = lithe_value_retain((lithe_value *)X);
    return LITHE_OK;
}

static const lithe__layer_type concat_type = {"concatenate.v1", concat_init, concat_forward, NULL, 1, SIZE_MAX};
static const lithe__layer_type add_type = {"add.v1", add_init, add_forward, NULL, 1, SIZE_MAX};
static const lithe__layer_type residual_type = {"residual.v1", residual_init, residual_forward, NULL, 1, 1};
static const lithe__layer_type noop_type = {"noop.v1", NULL, noop_forward, NULL, 0, SIZE_MAX};

/* ---- constructors ---- */

static void free_all(size_t n, lithe_model *const *layers) {
    for (size_t i = 0; layers && i < n; i++) lithe_model_free(layers[i]);
}

/* A node of `type` over the n layers (taking them over), name given, dims nO (+ nI when every
 * layer has or may have one, as Thinc decides). */
static lithe_status combinator_new(const lithe__layer_type *type, const char *name, size_t n,
                                   lithe_model *const *layers, bool with_nI_rule, lithe_model **out) {
    bool nI = true;
    for (size_t i = 0; with_nI_rule && i < n; i++) nI &= lithe_model_has_dim(layers[i], "nI") != LITHE_HAS_NO;
    const char *dims_nI[] = {"nO", "nI", NULL}, *dims_nO[] = {"nO", NULL};
    lithe_model *m = NULL;
    lithe_status s = lithe__model_new(type, name, nI ? dims_nI : dims_nO, NULL, &m);
    if (s != LITHE_OK) {
        free_all(n, layers);
        return s;
    }
    size_t i = 0;
    for (; s == LITHE_OK && i < n; i++) s = lithe__model_add_layer(m, layers[i]); /* frees on failure */
    if (s != LITHE_OK) {
        for (; i < n; i++) lithe_model_free(layers[i]);
        lithe_model_free(m);
        return s;
    }
    *out = m;
    return LITHE_OK;
}

static lithe_status check_layers(const char *fn, size_t n, size_t min, lithe_model *const *layers, lithe_model **out) {
    if (out) *out = NULL;
    lithe_status s = LITHE_OK;
    if (!out || (n && !layers) || n < min)
        s = lithe__fail(LITHE_ERR_INVALID_ARG, "%s: needs out and at least %zu layer%s", fn, min, min == 1 ? "" : "s");
    for (size_t i = 0; s == LITHE_OK && i < n; i++)
        if (!layers[i]) s = lithe__fail(LITHE_ERR_INVALID_ARG, "%s: layer %zu is NULL", fn, i);
    if (s != LITHE_OK) free_all(n, layers);
    return s;
}

/* "a|b|c" or "a>>b": names joined; NULL on OOM. */
static char *joined(size_t n, lithe_model *const *layers, const char *sep) {
    size_t len = 1;
    for (size_t i = 0; i < n; i++) len += strlen(layers[i]->name) + strlen(sep);
    char *name = lithe__malloc(len);
    if (!name) return NULL;
    name[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        if (i) strcat(name, sep);
        strcat(name, layers[i]->name);
    }
    return name;
}

/* m (made with status s) takes layers[i..n) as its children; on failure every layer it has not
 * taken is freed with it, as every combinator frees its inputs on failure. */
static lithe_status adopt_layers(lithe_status s, lithe_model *m, size_t i, size_t n, lithe_model *const *layers,
                                 lithe_model **out) {
    for (; s == LITHE_OK && i < n; i++) s = lithe__model_add_layer(m, layers[i]);
    for (; i < n; i++) lithe_model_free(layers[i]);
    if (s != LITHE_OK) {
        lithe_model_free(m);
        return s;
    }
    *out = m;
    return LITHE_OK;
}

lithe_status lithe_concatenate(size_t n, lithe_model *const *layers, lithe_model **out) {
    LITHE__TRY(check_layers("concatenate", n, 0, layers, out));
    if (n == 0) return lithe_noop(0, NULL, out);
    if (n == 1) {
        *out = layers[0];
        return LITHE_OK;
    }
    if (layers[0]->type == &concat_type) /* Thinc extends a concatenate given first */
        return adopt_layers(LITHE_OK, layers[0], 1, n, layers, out);
    char *name = joined(n, layers, "|");
    if (!name) {
        free_all(n, layers);
        return lithe__oom("concatenate", 64);
    }
    lithe_status s = combinator_new(&concat_type, name, n, layers, true, out);
    lithe__free(name);
    return s;
}

lithe_status lithe_add(size_t n, lithe_model *const *layers, lithe_model **out) {
    LITHE__TRY(check_layers("add", n, 2, layers, out));
    if (layers[0]->type == &add_type) return adopt_layers(LITHE_OK, layers[0], 1, n, layers, out);
    return combinator_new(&add_type, "add", n, layers, true, out);
}

lithe_status lithe_residual(lithe_model *layer, lithe_model **out) {
    LITHE__TRY(check_layers("residual", layer ? 1 : 0, 1, &layer, out));
    char name[256];
    snprintf(name, sizeof name, "residual(%s)", layer->name);
    int64_t nO = lithe__dim_value(layer, "nO"), nI = lithe__dim_value(layer, "nI");
    lithe_model *m = NULL;
    LITHE__TRY(combinator_new(&residual_type, name, 1, &layer, false, &m));
    m->dims[0].value = nO;
    m->dims[1].value = nI;
    *out = m;
    return LITHE_OK;
}

lithe_status lithe_noop(size_t n, lithe_model *const *layers, lithe_model **out) {
    LITHE__TRY(check_layers("noop", n, 0, layers, out));
    lithe_model *m = NULL;
    lithe_status s = lithe__model_new(&noop_type, "noop", NULL, NULL, &m);
    return adopt_layers(s, m, 0, n, layers, out);
}

lithe_status lithe_clone(lithe_model *orig, size_t n, lithe_model **out) {
    LITHE__TRY(check_layers("clone", orig ? 1 : 0, 1, &orig, out));
    if (n == 0) {
        lithe_model_free(orig);
        return lithe_noop(0, NULL, out);
    }
    if (n == 1) {
        *out = orig;
        return LITHE_OK;
    }
    lithe_model **copies = lithe__calloc(n, sizeof *copies);
    if (!copies) {
        lithe_model_free(orig);
        return lithe__oom("clone", n * sizeof *copies);
    }
    copies[0] = orig;
    lithe_status s = LITHE_OK;
    size_t made = 1;
    for (; s == LITHE_OK && made < n; made++) {
        s = lithe_model_copy(orig, &copies[made]);
        if (s != LITHE_OK) break;
    }
    if (s != LITHE_OK) {
        free_all(made, copies);
        lithe__free(copies);
        return s;
    }
    s = lithe_chain(n, copies, out);
    lithe__free(copies);
    return s;
}

/* ---- tuplify: (layer_0(X), layer_1(X), ...) ; dX = sum of the layers' dX ---- */

static lithe_status tuplify_backward(lithe_backprop *self, const lithe_value *dYs, lithe_value **dX) {
    multi_bp *r = (multi_bp *)self;
    if (lithe_value_kind_of(dYs) != LITHE_VALUE_TUPLE || lithe_value_len(dYs) != r->n)
        return lithe__fail(LITHE_ERR_SHAPE, "%s: the gradient must be a tuple of %zu items", self->model->name, r->n);
    return sum_backprops(self, dYs, true, dX);
}

/* n children's outputs as a tuple (tuplify: layer i on X) or a list (map_list: the one layer on
 * item i of X), with their backprops in one record. */
static lithe_status multi_forward(lithe_model *m, size_t n, bool over_items, const lithe_value *X, bool is_train,
                                  lithe_status (*run)(lithe_backprop *, const lithe_value *, lithe_value **),
                                  lithe_value **Y, lithe_backprop **bp) {
    lithe_value **Ys = lithe__calloc(n ? n : 1, sizeof *Ys);
    if (!Ys) return lithe__oom(m->name, n * sizeof *Ys);
    multi_bp *r = NULL;
    lithe_status s = bp ? multi_new_n(m, n, run, &r) : LITHE_OK;
    for (size_t i = 0; s == LITHE_OK && i < n; i++) {
        lithe_model *layer = over_items ? m->layers[0] : m->layers[i];
        const lithe_value *x = over_items ? lithe_value_item(X, i) : X;
        s = lithe_model_forward(layer, x, is_train, &Ys[i], r ? &r->steps[i] : NULL);
        if (s == LITHE_OK && r) r->n = i + 1;
    }
    if (s == LITHE_OK) s = over_items ? lithe_value_list(n, Ys, Y) : lithe_value_tuple(n, Ys, Y);
    for (size_t i = 0; i < n; i++) lithe_value_release(Ys[i]);
    lithe__free(Ys);
    return multi_finish(s, NULL, NULL, r, bp);
}

static lithe_status tuplify_forward(lithe_model *m, const lithe_value *X, bool is_train, lithe_value **Y,
                                    lithe_backprop **bp) {
    return multi_forward(m, m->n_layers, false, X, is_train, tuplify_backward, Y, bp);
}

static lithe_status tuplify_init(lithe_model *m, const lithe_value *X, const lithe_value *Y) {
    bool y_tuple = Y && lithe_value_kind_of(Y) == LITHE_VALUE_TUPLE && lithe_value_len(Y) == m->n_layers;
    for (size_t i = 0; i < m->n_layers; i++) {
        lithe_model *layer = m->layers[i];
        bool pass_y = y_tuple && lithe_model_has_dim(layer, "nO") == LITHE_HAS_UNSET;
        LITHE__TRY(lithe_model_initialize(layer, X, pass_y ? lithe_value_item(Y, i) : NULL));
    }
    int64_t nI = lithe__dim_value(m->layers[0], "nI");
    return nI ? lithe__infer_dim(m, "nI", nI, "the first layer's nI") : LITHE_OK;
}

/* ---- map_list: the layer over each item of a list ---- */

static lithe_status map_list_backward(lithe_backprop *self, const lithe_value *dYs, lithe_value **dX) {
    multi_bp *r = (multi_bp *)self;
    lithe_model *m = self->model;
    if (lithe_value_kind_of(dYs) != LITHE_VALUE_LIST || lithe_value_len(dYs) != r->n)
        return lithe__fail(LITHE_ERR_SHAPE, "%s: the gradient must be a list of %zu items", m->name, r->n);
    lithe_value **dXs = lithe__calloc(r->n ? r->n : 1, sizeof *dXs);
    if (!dXs) return lithe__oom(m->name, r->n * sizeof *dXs);
    lithe_status s = LITHE_OK;
    for (size_t i = 0; s == LITHE_OK && i < r->n; i++)
        s = lithe_backprop_run(r->steps[i], lithe_value_item(dYs, i), dX ? &dXs[i] : NULL);
    if (s == LITHE_OK && dX) s = lithe_value_list(r->n, dXs, dX);
    for (size_t i = 0; i < r->n; i++) lithe_value_release(dXs[i]);
    lithe__free(dXs);
    return s;
}

static lithe_status map_list_forward(lithe_model *m, const lithe_value *X, bool is_train, lithe_value **Y,
                                     lithe_backprop **bp) {
    if (lithe_value_kind_of(X) != LITHE_VALUE_LIST)
        return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: expected a list", m->name);
    return multi_forward(m, lithe_value_len(X), true, X, is_train, map_list_backward, Y, bp);
}

static lithe_status map_list_init(lithe_model *m, const lithe_value *X, const lithe_value *Y) {
    const lithe_value *x0 = X && lithe_value_len(X) ? lithe_value_item(X, 0) : NULL;
    const lithe_value *y0 = Y && lithe_value_len(Y) ? lithe_value_item(Y, 0) : NULL;
    return lithe_model_initialize(m->layers[0], x0, y0);
}

static const lithe__layer_type tuplify_type = {"tuplify.v1", tuplify_init, tuplify_forward, NULL, 1, SIZE_MAX};
/* Thinc 8.1.7 does not register map_list under a name */
static const lithe__layer_type map_list_type = {"map_list", map_list_init, map_list_forward, NULL, 1, 1};

const lithe__layer_type *const lithe__combine_types[] = {&concat_type, &add_type, &residual_type, &noop_type,
                                                         &tuplify_type, &map_list_type, NULL};

lithe_status lithe_tuplify(size_t n, lithe_model *const *layers, lithe_model **out) {
    LITHE__TRY(check_layers("tuplify", n, 2, layers, out));
    char *names = joined(n, layers, ", ");
    char *name = names ? lithe__malloc(strlen(names) + 8) : NULL;
    if (!name) {
        lithe__free(names);
        free_all(n, layers);
        return lithe__oom("tuplify", 64);
    }
    sprintf(name, "tuple(%s)", names);
    lithe__free(names);
    const char *dims[] = {"nI", NULL};
    lithe_model *m = NULL;
    lithe_status s = lithe__model_new(&tuplify_type, name, dims, NULL, &m);
    lithe__free(name);
    size_t i = 0;
    for (; s == LITHE_OK && i < n; i++) s = lithe__model_add_layer(m, layers[i]);
    if (s != LITHE_OK) {
        for (; i < n; i++) lithe_model_free(layers[i]);
        lithe_model_free(m);
        return s;
    }
    *out = m;
    return LITHE_OK;
}

lithe_status lithe_map_list(lithe_model *layer, lithe_model **out) {
    LITHE__TRY(check_layers("map_list", layer ? 1 : 0, 1, &layer, out));
    lithe_model *m = NULL;
    lithe_status s = lithe__model_new(&map_list_type, "map_list", NULL, NULL, &m);
    if (s == LITHE_OK) s = lithe__model_add_layer(m, layer);
    else lithe_model_free(layer);
    if (s != LITHE_OK) {
        lithe_model_free(m);
        return s;
    }
    *out = m;
    return LITHE_OK;
}
