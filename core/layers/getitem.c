/* array-getitem, floats-getitem, ints-getitem: Y = X[index] with a numpy index, as Thinc's
 * array_getitem / floats_getitem / ints_getitem. The index is a string attr in numpy's syntax,
 * "[:, 3]", "[1:5:2]", "[[0, 2, 2]]", "[-1]": per axis an int (the axis goes away), a slice
 * start:stop:step (any part omitted; negative step allowed), a list of ints (at most one list,
 * so numpy's broadcasting of several lists never arises) or ":". Axes left out are taken whole.
 * Thinc's index objects (ints, slices, lists, tuples) map one to one onto this syntax.
 *
 * The backprop puts dY back where X's elements came from, in zeros shaped like X. numpy's
 * `dX[index] = dY` (Thinc's) keeps only the last of repeated list entries; lithe adds them, which
 * is the gradient. An empty X passes through unchanged, as in Thinc. */
#include "../internal.h"

#include <stdio.h>
#include <stdlib.h>

typedef enum { AX_ALL, AX_INT, AX_SLICE, AX_LIST } ax_kind;

typedef struct ax {
    ax_kind kind;
    int64_t start, stop, step; /* AX_INT: start; AX_SLICE: as given */
    bool has_start, has_stop;
    int64_t *ids; /* AX_LIST */
    size_t n_ids;
} ax;

typedef struct index_spec {
    size_t n;
    ax axes[LITHE_MAX_DIMS];
} index_spec;

static void spec_free(index_spec *x) {
    for (size_t i = 0; i < x->n; i++) lithe__free(x->axes[i].ids);
    x->n = 0;
}

static void skip_ws(const char **p) {
    while (**p == ' ') (*p)++;
}

static bool parse_int(const char **p, int64_t *v) {
    skip_ws(p);
    const char *s = *p;
    bool neg = *s == '-';
    if (neg || *s == '+') s++;
    if (*s < '0' || *s > '9') return false;
    uint64_t acc = 0;
    while (*s >= '0' && *s <= '9') {
        if (acc > (uint64_t)INT64_MAX / 10) return false;
        acc = acc * 10 + (uint64_t)(*s++ - '0');
        if (acc > (uint64_t)INT64_MAX) return false;
    }
    *v = neg ? -(int64_t)acc : (int64_t)acc;
    *p = s;
    return true;
}

/* Parses "[a, b:c, [d, e]]" into spec; false (with spec freed) on any other text. */
static bool parse_index(const char *text, index_spec *spec) {
    memset(spec, 0, sizeof *spec);
    const char *p = text;
    skip_ws(&p);
    if (*p++ != '[') return false;
    skip_ws(&p);
    if (*p == ']') return p[1] == '\0';
    for (;;) {
        if (spec->n == LITHE_MAX_DIMS) goto bad;
        ax *a = &spec->axes[spec->n++];
        skip_ws(&p);
        if (*p == '[') { /* a list of ints */
            p++;
            size_t cap = 0;
            for (;;) {
                int64_t v;
                if (!parse_int(&p, &v)) goto bad;
                if (a->n_ids == cap) {
                    cap = cap ? cap * 2 : 8;
                    if (cap > ((size_t)1 << 24)) goto bad;
                    int64_t *more = lithe__malloc(cap * sizeof *more);
                    if (!more) goto bad;
                    if (a->n_ids) memcpy(more, a->ids, a->n_ids * sizeof *more);
                    lithe__free(a->ids);
                    a->ids = more;
                }
                a->ids[a->n_ids++] = v;
                skip_ws(&p);
                if (*p == ',') {
                    p++;
                    continue;
                }
                if (*p++ != ']') goto bad;
                break;
            }
            a->kind = AX_LIST;
        } else {
            int64_t v;
            a->has_start = parse_int(&p, &v);
            if (a->has_start) a->start = v;
            skip_ws(&p);
            if (*p == ':') {
                p++;
                a->kind = AX_SLICE;
                a->step = 1;
                a->has_stop = parse_int(&p, &a->stop);
                skip_ws(&p);
                if (*p == ':') {
                    p++;
                    int64_t st = 1;
                    if (parse_int(&p, &st) && st == 0) goto bad;
                    a->step = st;
                }
                if (!a->has_start && !a->has_stop && a->step == 1) a->kind = AX_ALL;
            } else if (a->has_start) {
                a->kind = AX_INT;
            } else {
                goto bad;
            }
        }
        skip_ws(&p);
        if (*p == ',') {
            p++;
            continue;
        }
        if (*p++ != ']') goto bad;
        skip_ws(&p);
        if (*p != '\0') goto bad;
        break;
    }
    size_t lists = 0;
    for (size_t i = 0; i < spec->n; i++) lists += spec->axes[i].kind == AX_LIST;
    if (lists > 1) goto bad;
    return true;
bad:
    spec_free(spec);
    return false;
}

/* The source offset (in elements) of every element of Y, and Y's shape. */
static lithe_status plan(const lithe_model *m, const lithe_tensor *X, const index_spec *spec, int *ndim_out,
                         int64_t *shape_out, int64_t **offsets, int64_t *count) {
    if (spec->n > (size_t)X->ndim)
        return lithe__fail(LITHE_ERR_SHAPE, "%s: an index of %zu axes for a %d-d array", m->name, spec->n, X->ndim);
    /* per input axis: the list of source positions it contributes (or one, for AX_INT) */
    int64_t *pos[LITHE_MAX_DIMS] = {0}, npos[LITHE_MAX_DIMS] = {0};
    bool keeps[LITHE_MAX_DIMS];
    lithe_status s = LITHE_OK;
    for (int d = 0; d < X->ndim && s == LITHE_OK; d++) {
        const ax *a = (size_t)d < spec->n ? &spec->axes[d] : NULL;
        int64_t n = X->shape[d];
        keeps[d] = !a || a->kind != AX_INT;
        int64_t cnt = 0;
        if (!a || a->kind == AX_ALL) cnt = n;
        else if (a->kind == AX_INT) cnt = 1;
        else if (a->kind == AX_LIST) cnt = (int64_t)a->n_ids;
        else { /* numpy's slice.indices */
            int64_t step = a->step, lo, hi;
            if (step > 0) {
                lo = a->has_start ? (a->start < 0 ? (a->start + n < 0 ? 0 : a->start + n) : (a->start > n ? n : a->start)) : 0;
                hi = a->has_stop ? (a->stop < 0 ? (a->stop + n < 0 ? 0 : a->stop + n) : (a->stop > n ? n : a->stop)) : n;
                cnt = hi > lo ? (hi - lo + step - 1) / step : 0;
            } else {
                lo = a->has_start ? (a->start < 0 ? (a->start + n < 0 ? -1 : a->start + n) : (a->start >= n ? n - 1 : a->start)) : n - 1;
                hi = a->has_stop ? (a->stop < 0 ? (a->stop + n < 0 ? -1 : a->stop + n) : (a->stop >= n ? n - 1 : a->stop)) : -1;
                cnt = lo > hi ? (lo - hi + (-step) - 1) / (-step) : 0;
            }
            pos[d] = cnt ? lithe__malloc((size_t)cnt * sizeof **pos) : NULL;
            if (cnt && !pos[d]) s = lithe__oom(m->name, (size_t)cnt * sizeof **pos);
            for (int64_t i = 0; s == LITHE_OK && i < cnt; i++) pos[d][i] = lo + i * step;
            npos[d] = cnt;
            continue;
        }
        npos[d] = cnt;
        pos[d] = cnt ? lithe__malloc((size_t)cnt * sizeof **pos) : NULL;
        if (cnt && !pos[d]) {
            s = lithe__oom(m->name, (size_t)cnt * sizeof **pos);
            break;
        }
        for (int64_t i = 0; i < cnt; i++) {
            int64_t v = !a || a->kind == AX_ALL ? i : a->kind == AX_INT ? a->start : a->ids[i];
            if (v < -n || v >= n)
                s = lithe__fail(LITHE_ERR_SHAPE, "%s: index %lld is out of bounds for axis %d of size %lld", m->name,
                                (long long)v, d, (long long)n);
            pos[d][i] = v < 0 ? v + n : v;
        }
    }
    int nd = 0;
    int64_t total = 1;
    for (int d = 0; d < X->ndim && s == LITHE_OK; d++) {
        if (keeps[d]) shape_out[nd++] = npos[d];
        total *= npos[d];
    }
    *ndim_out = nd;
    *count = total;
    *offsets = NULL;
    if (s == LITHE_OK && total) {
        *offsets = lithe__malloc((size_t)total * sizeof **offsets);
        if (!*offsets) s = lithe__oom(m->name, (size_t)total * sizeof **offsets);
    }
    if (s == LITHE_OK && total) { /* odometer over the output, row-major */
        int64_t at[LITHE_MAX_DIMS] = {0};
        for (int64_t k = 0; k < total; k++) {
            int64_t off = 0;
            for (int d = 0; d < X->ndim; d++) off += pos[d][at[d]] * X->strides[d];
            (*offsets)[k] = off;
            for (int d = X->ndim - 1; d >= 0 && ++at[d] == npos[d]; d--) at[d] = 0;
        }
    }
    for (int d = 0; d < X->ndim; d++) lithe__free(pos[d]);
    return s;
}

typedef struct getitem_bp {
    lithe_backprop base;
    lithe_dtype dtype;
    int ndim;
    int64_t shape[LITHE_MAX_DIMS], strides[LITHE_MAX_DIMS];
    int64_t *offsets, count, numel; /* offsets into a contiguous X of `shape` */
} getitem_bp;

static void getitem_destroy(lithe_backprop *self) { lithe__free(((getitem_bp *)self)->offsets); }

static lithe_status getitem_backward(lithe_backprop *self, const lithe_value *dYv, lithe_value **dX) {
    getitem_bp *r = (getitem_bp *)self;
    lithe_model *m = self->model;
    if (dYv->kind != LITHE_VALUE_TENSOR || dYv->t[0]->numel != r->count)
        return lithe__fail(LITHE_ERR_SHAPE, "%s: the gradient must be an array of %lld elements", m->name, (long long)r->count);
    if (!dX) return LITHE_OK;
    lithe_tensor *d = NULL;
    LITHE__TRY(lithe__tensor_alloc(lithe__backend_host(), r->dtype, r->ndim, r->shape, true, &d));
    lithe_status s = LITHE_OK;
    if (r->dtype == LITHE_F32 && dYv->t[0]->dtype == LITHE_F32 && r->count) {
        float *g = lithe__malloc((size_t)r->count * sizeof *g);
        s = g ? lithe_tensor_read(dYv->t[0], g, (size_t)r->count * sizeof *g) : lithe__oom(m->name, (size_t)r->count * 4);
        float *dx = lithe__f32(d);
        for (int64_t k = 0; s == LITHE_OK && k < r->count; k++) dx[r->offsets[k]] += g[k];
        lithe__free(g);
    } /* integer inputs: zeros, as Thinc returns for ids */
    lithe_tensor *out = NULL;
    if (s == LITHE_OK && m->backend != lithe__backend_host()) {
        s = lithe__tensor_alloc(m->backend, r->dtype, r->ndim, r->shape, false, &out);
        if (s == LITHE_OK) s = lithe_tensor_write(out, lithe__tdata(d), (size_t)r->numel * lithe_dtype_size(r->dtype));
        lithe_tensor_release(d);
        d = out;
    }
    if (s != LITHE_OK) {
        lithe_tensor_release(d);
        return s;
    }
    return lithe__value_wrap(d, dX);
}

lithe_status lithe__getitem_forward(lithe_model *m, const lithe_value *Xv, bool is_train, lithe_value **Yv,
                                    lithe_backprop **bp) {
    (void)is_train;
    const char *text = NULL;
    LITHE__TRY(lithe_model_get_attr_str(m, "index", &text));
    if (Xv->kind != LITHE_VALUE_TENSOR) return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: expected an array", m->name);
    lithe_tensor *X = Xv->t[0];
    if (X->ndim >= 1 && X->shape[0] == 0) { /* Thinc: len(X) == 0 passes through */
        if (bp) {
            LITHE__TRY(lithe__backprop_new(m, sizeof(getitem_bp), getitem_backward, getitem_destroy, bp));
            getitem_bp *r = (getitem_bp *)*bp;
            r->dtype = X->dtype;
            r->ndim = X->ndim;
            memcpy(r->shape, X->shape, sizeof r->shape);
        }
        *Yv = lithe_value_retain((lithe_value *)Xv);
        return LITHE_OK;
    }
    index_spec spec;
    if (!parse_index(text, &spec))
        return lithe__fail(LITHE_ERR_VALUE, "%s: index '%s' is not numpy index syntax lithe takes", m->name, text);
    /* work on a contiguous host copy: indices land anywhere */
    lithe_tensor *host = NULL, *Y = NULL;
    int64_t *offsets = NULL, count = 0, shape[LITHE_MAX_DIMS];
    int nd = 0;
    lithe_status s = lithe__tensor_alloc(lithe__backend_host(), X->dtype, X->ndim, X->shape, false, &host);
    if (s == LITHE_OK) s = lithe_tensor_read(X, lithe__tdata(host), (size_t)X->numel * lithe_dtype_size(X->dtype));
    if (s == LITHE_OK) s = plan(m, host, &spec, &nd, shape, &offsets, &count);
    spec_free(&spec);
    size_t es = lithe_dtype_size(X->dtype);
    uint8_t *buf = NULL;
    if (s == LITHE_OK && count) {
        buf = lithe__malloc((size_t)count * es);
        if (!buf) s = lithe__oom(m->name, (size_t)count * es);
        for (int64_t k = 0; buf && k < count; k++) memcpy(buf + k * es, (uint8_t *)lithe__tdata(host) + offsets[k] * (int64_t)es, es);
    }
    if (s == LITHE_OK) s = lithe__tensor_alloc(m->backend, X->dtype, nd, shape, false, &Y);
    if (s == LITHE_OK && count) s = lithe_tensor_write(Y, buf, (size_t)count * es);
    lithe__free(buf);
    if (s == LITHE_OK && bp) {
        s = lithe__backprop_new(m, sizeof(getitem_bp), getitem_backward, getitem_destroy, bp);
        if (s == LITHE_OK) {
            getitem_bp *r = (getitem_bp *)*bp;
            r->dtype = X->dtype;
            r->ndim = X->ndim;
            memcpy(r->shape, X->shape, sizeof r->shape);
            r->offsets = offsets;
            r->count = count;
            r->numel = X->numel;
            offsets = NULL;
        }
    }
    lithe__free(offsets);
    lithe_tensor_release(host);
    if (s != LITHE_OK) {
        lithe_tensor_release(Y);
        if (bp && *bp) {
            lithe_backprop_free(*bp);
            *bp = NULL;
        }
        return s;
    }
    s = lithe__value_wrap(Y, Yv);
    if (s != LITHE_OK && bp) {
        lithe_backprop_free(*bp);
        *bp = NULL;
    }
    return s;
}

static const lithe__layer_type array_type = {"array-getitem", NULL, lithe__getitem_forward, NULL, 0, 0};
static const lithe__layer_type floats_type = {"floats-getitem", NULL, lithe__getitem_forward, NULL, 0, 0};
const lithe__layer_type *const lithe__getitem_types[] = {&array_type, &floats_type, NULL};

lithe_status lithe_array_getitem(const char *variant, const char *index, lithe_model **out) {
    LITHE__CHECK_ARG(out, "array_getitem", "out is NULL");
    *out = NULL;
    LITHE__CHECK_ARG(index, "array_getitem", "index is NULL");
    const lithe__layer_type *type = NULL;
    if (!variant || !strcmp(variant, "array")) type = &array_type;
    else if (!strcmp(variant, "floats")) type = &floats_type;
    else if (!strcmp(variant, "ints")) type = lithe__layer_type_by_name("ints-getitem");
    if (!type) return lithe__fail(LITHE_ERR_VALUE, "array_getitem: variant '%s' is not array, floats or ints", variant);
    index_spec spec;
    if (!parse_index(index, &spec))
        return lithe__fail(LITHE_ERR_VALUE, "array_getitem: index '%s' is not numpy index syntax lithe takes", index);
    spec_free(&spec);
    lithe_model *m = NULL;
    LITHE__TRY(lithe__model_new(type, type->registered_name, NULL, NULL, &m));
    lithe_status s = lithe_model_set_attr_str(m, "index", index);
    if (s != LITHE_OK) {
        lithe_model_free(m);
        return s;
    }
    *out = m;
    return LITHE_OK;
}
