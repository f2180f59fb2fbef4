/* Conversions between Thinc's sequence containers, as NumpyOps does them: flatten / unflatten
 * (a list of arrays <-> one array with per-item lengths, optionally with `pad` zero rows around
 * each item), list2padded / padded2list (Thinc's Padded: time-major, sorted by length), and the
 * to_* / from_* pairs the with_* combinators and the transfer layers are written with.
 *
 * Data moves through the backend's copy primitive, so the containers work on any backend;
 * lengths, size_at_t and indices are host int32 (as lithe_value_ragged / _padded require). */
#include "internal.h"

#include <stdlib.h>

static int32_t ival(const lithe_tensor *t, int64_t i) { return ((const int32_t *)lithe__tdata(t))[i * t->strides[0]]; }

lithe_status lithe__host_i32(int64_t n, const int32_t *values, lithe_tensor **out) {
    LITHE__TRY(lithe__tensor_alloc(lithe__backend_host(), LITHE_I32, 1, &n, true, out));
    if (n && values) memcpy(lithe__tdata(*out), values, (size_t)n * sizeof *values);
    return LITHE_OK;
}

/* Wraps n tensors (taking over the caller's references, also on failure) into a LIST value. */
lithe_status lithe__list_of_tensors(size_t n, lithe_tensor **ts, lithe_value **out) {
    *out = NULL;
    lithe_value **items = n ? lithe__calloc(n, sizeof *items) : NULL;
    lithe_status s = (n && !items) ? lithe__oom("list", n * sizeof *items) : LITHE_OK;
    size_t made = 0;
    for (size_t i = 0; i < n; i++) {
        if (s == LITHE_OK) {
            s = lithe_value_tensor(ts[i], &items[i]);
            if (s == LITHE_OK) made = i + 1;
        }
        lithe_tensor_release(ts[i]);
        ts[i] = NULL;
    }
    if (s == LITHE_OK) s = lithe_value_list(n, items, out);
    for (size_t i = 0; i < made; i++) lithe_value_release(items[i]);
    lithe__free(items);
    return s;
}

/* The tensors of a LIST value, each with at least `min_ndim` dimensions. */
static lithe_status list_tensor(const char *who, const lithe_value *list, size_t i, int min_ndim, lithe_tensor **out) {
    const lithe_value *item = list->items[i];
    if (item->kind != LITHE_VALUE_TENSOR)
        return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: list item %zu is not an array", who, i);
    if (item->t[0]->ndim < min_ndim)
        return lithe__fail(LITHE_ERR_SHAPE, "%s: list item %zu has %d dimensions, expected at least %d", who, i,
                           item->t[0]->ndim, min_ndim);
    *out = item->t[0];
    return LITHE_OK;
}

static lithe_status expect_list(const char *who, const lithe_value *v) {
    if (!v || v->kind != LITHE_VALUE_LIST)
        return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: expected a list of arrays", who);
    return LITHE_OK;
}

lithe_status lithe__seq_lengths(const char *who, const lithe_value *list, lithe_tensor **lengths) {
    *lengths = NULL;
    LITHE__TRY(expect_list(who, list));
    LITHE__TRY(lithe__host_i32((int64_t)list->n, NULL, lengths));
    int32_t *l = lithe__tdata(*lengths);
    for (size_t i = 0; i < list->n; i++) {
        lithe_tensor *t = NULL;
        lithe_status s = list_tensor(who, list, i, 1, &t);
        if (s == LITHE_OK && t->shape[0] > INT32_MAX)
            s = lithe__fail(LITHE_ERR_SHAPE, "%s: list item %zu has %lld rows, more than int32 lengths hold", who, i,
                            (long long)t->shape[0]);
        if (s != LITHE_OK) {
            lithe_tensor_release(*lengths);
            *lengths = NULL;
            return s;
        }
        l[i] = (int32_t)t->shape[0];
    }
    return LITHE_OK;
}

/* Copies X into rows [row, row + X.shape[0]) of Y (same trailing shape). */
static lithe_status copy_rows(lithe_backend *be, lithe_tensor *Y, int64_t row, lithe_tensor *X) {
    if (X->numel == 0) return LITHE_OK;
    lithe_tensor *dst = NULL;
    LITHE__TRY(lithe_tensor_slice(Y, 0, row, row + X->shape[0], &dst));
    lithe_status s = lithe__op_copy(be, dst, X);
    lithe_tensor_release(dst);
    return s;
}

lithe_status lithe__seq_flatten(lithe_backend *be, const char *who, const lithe_value *list, int64_t pad,
                                lithe_tensor **out) {
    *out = NULL;
    LITHE__TRY(expect_list(who, list));
    if (pad < 0) return lithe__fail(LITHE_ERR_VALUE, "%s: pad %lld is negative", who, (long long)pad);
    if (list->n == 0) /* Thinc: alloc((0,) * 2, "f") */
        return lithe__tensor_alloc(be, LITHE_F32, 2, (int64_t[]){0, 0}, true, out);
    lithe_tensor *first = NULL;
    LITHE__TRY(list_tensor(who, list, 0, 1, &first));
    /* Every item agrees with the first on dtype and trailing shape; empty items are skipped (so
     * they get no padding), as Thinc's flatten drops size-0 arrays before padding. */
    int64_t rows = 0, nonempty = 0;
    for (size_t i = 0; i < list->n; i++) {
        lithe_tensor *t = NULL;
        LITHE__TRY(list_tensor(who, list, i, 1, &t));
        bool same = t->dtype == first->dtype && t->ndim == first->ndim;
        for (int d = 1; same && d < t->ndim; d++) same = t->shape[d] == first->shape[d];
        if (!same) {
            char a[LITHE__SHAPE_BUF], b[LITHE__SHAPE_BUF];
            return lithe__fail(LITHE_ERR_SHAPE, "%s: list item %zu is %s %s, but item 0 is %s %s", who, i,
                               lithe_dtype_name(t->dtype), lithe__shape_str(t, a, sizeof a),
                               lithe_dtype_name(first->dtype), lithe__shape_str(first, b, sizeof b));
        }
        if (t->numel) {
            rows += t->shape[0];
            nonempty++;
        }
    }
    if (nonempty) rows += pad * (nonempty + 1);
    int64_t shape[LITHE_MAX_DIMS];
    memcpy(shape, first->shape, sizeof shape);
    shape[0] = nonempty ? rows : first->shape[0]; /* all empty: Thinc's alloc(X[0].shape) */
    LITHE__TRY(lithe__tensor_alloc(be, first->dtype, first->ndim, shape, pad > 0 || !nonempty, out));
    int64_t row = pad;
    for (size_t i = 0; i < list->n; i++) {
        lithe_tensor *t = list->items[i]->t[0];
        if (!t->numel) continue;
        lithe_status s = copy_rows(be, *out, row, t);
        if (s != LITHE_OK) {
            lithe_tensor_release(*out);
            *out = NULL;
            return s;
        }
        row += t->shape[0] + pad;
    }
    return LITHE_OK;
}

lithe_status lithe__seq_unflatten(const char *who, lithe_tensor *X, const lithe_tensor *lengths, int64_t pad,
                                  lithe_value **out) {
    *out = NULL;
    if (X->ndim < 1) return lithe__fail(LITHE_ERR_SHAPE, "%s: cannot split a 0-d array into sequences", who);
    int64_t n = lengths->shape[0], sum = 0, nonempty = 0;
    for (int64_t i = 0; i < n; i++) {
        int32_t l = ival(lengths, i);
        if (l < 0) return lithe__fail(LITHE_ERR_VALUE, "%s: lengths[%lld] = %d is negative", who, (long long)i, l);
        sum += l;
        nonempty += l > 0;
    }
    int64_t expect = sum + (nonempty ? pad * (nonempty + 1) : 0);
    if (X->shape[0] != expect)
        return lithe__fail(LITHE_ERR_SHAPE, "%s: %lld rows do not split into sequences of lengths summing to %lld%s",
                           who, (long long)X->shape[0], (long long)sum, pad ? " with padding" : "");
    lithe_tensor **ts = n ? lithe__calloc((size_t)n, sizeof *ts) : NULL;
    if (n && !ts) return lithe__oom(who, (size_t)n * sizeof *ts);
    lithe_status s = LITHE_OK;
    int64_t row = pad;
    for (int64_t i = 0; i < n && s == LITHE_OK; i++) {
        int32_t l = ival(lengths, i);
        s = lithe_tensor_slice(X, 0, l ? row : 0, l ? row + l : 0, &ts[i]);
        if (l) row += l + pad;
    }
    if (s != LITHE_OK) {
        for (int64_t i = 0; i < n; i++) lithe_tensor_release(ts[i]);
        lithe__free(ts);
        return s;
    }
    s = lithe__list_of_tensors((size_t)n, ts, out);
    lithe__free(ts);
    return s;
}

typedef struct len_idx {
    int64_t len, idx;
} len_idx;

/* Thinc sorts (length, index) pairs in reverse: longest first, and among equal lengths the
 * larger index first. */
static int cmp_desc(const void *a, const void *b) {
    const len_idx *x = a, *y = b;
    if (x->len != y->len) return x->len < y->len ? 1 : -1;
    return x->idx < y->idx ? 1 : (x->idx > y->idx ? -1 : 0);
}

lithe_status lithe__seq_list2padded(lithe_backend *be, const char *who, const lithe_value *list, lithe_value **out) {
    *out = NULL;
    LITHE__TRY(expect_list(who, list));
    size_t nB = list->n;
    lithe_tensor *data = NULL, *size_at_t = NULL, *lengths = NULL, *indices = NULL;
    lithe_status s = LITHE_OK;
    if (nB == 0) {
        s = lithe__tensor_alloc(be, LITHE_F32, 3, (int64_t[]){0, 0, 0}, true, &data);
        if (s == LITHE_OK) s = lithe__host_i32(0, NULL, &size_at_t);
        if (s == LITHE_OK) s = lithe__host_i32(0, NULL, &lengths);
        if (s == LITHE_OK) s = lithe__host_i32(0, NULL, &indices);
        goto done;
    }
    lithe_tensor *first = NULL;
    for (size_t i = 0; i < nB; i++) {
        lithe_tensor *t = NULL;
        LITHE__TRY(list_tensor(who, list, i, 2, &t));
        if (t->ndim != 2 || t->shape[1] != list->items[0]->t[0]->shape[1] || t->dtype != list->items[0]->t[0]->dtype) {
            char a[LITHE__SHAPE_BUF], b[LITHE__SHAPE_BUF];
            return lithe__fail(LITHE_ERR_SHAPE, "%s: Padded needs 2-d sequences of one width and dtype; item %zu is %s %s, item 0 %s %s",
                               who, i, lithe_dtype_name(t->dtype), lithe__shape_str(t, a, sizeof a),
                               lithe_dtype_name(list->items[0]->t[0]->dtype),
                               lithe__shape_str(list->items[0]->t[0], b, sizeof b));
        }
        if (t->shape[0] > INT32_MAX) return lithe__fail(LITHE_ERR_SHAPE, "%s: item %zu is too long", who, i);
    }
    first = list->items[0]->t[0];
    len_idx *order = lithe__calloc(nB, sizeof *order);
    if (!order) return lithe__oom(who, nB * sizeof *order);
    int64_t nS = 0;
    for (size_t i = 0; i < nB; i++) {
        order[i].len = list->items[i]->t[0]->shape[0];
        order[i].idx = (int64_t)i;
        if (order[i].len > nS) nS = order[i].len;
    }
    if (nB > 1) qsort(order, nB, sizeof *order, cmp_desc);
    int64_t nO = first->shape[1];
    s = lithe__tensor_alloc(be, first->dtype, 3, (int64_t[]){nS, (int64_t)nB, nO}, true, &data);
    if (s == LITHE_OK) s = lithe__host_i32(nS, NULL, &size_at_t);
    if (s == LITHE_OK) s = lithe__host_i32((int64_t)nB, NULL, &lengths);
    if (s == LITHE_OK) s = lithe__host_i32((int64_t)nB, NULL, &indices);
    for (size_t b = 0; b < nB && s == LITHE_OK; b++) {
        ((int32_t *)lithe__tdata(lengths))[b] = (int32_t)order[b].len;
        ((int32_t *)lithe__tdata(indices))[b] = (int32_t)order[b].idx;
        lithe_tensor *seq = list->items[order[b].idx]->t[0];
        if (!seq->numel) continue;
        /* data[:len, b, :] is a strided (len, 1, nO) view; copy walks both in row-major order */
        lithe_tensor *col = NULL, *dst = NULL;
        s = lithe_tensor_slice(data, 1, (int64_t)b, (int64_t)b + 1, &col);
        if (s == LITHE_OK) s = lithe_tensor_slice(col, 0, 0, seq->shape[0], &dst);
        if (s == LITHE_OK) s = lithe__op_copy(be, dst, seq);
        lithe_tensor_release(dst);
        lithe_tensor_release(col);
    }
    for (int64_t t = 0; t < nS && s == LITHE_OK; t++) {
        int32_t c = 0;
        for (size_t b = 0; b < nB; b++) c += order[b].len > t;
        ((int32_t *)lithe__tdata(size_at_t))[t] = c;
    }
    lithe__free(order);
done:
    if (s == LITHE_OK) s = lithe_value_padded(data, size_at_t, lengths, indices, out);
    lithe_tensor_release(data);
    lithe_tensor_release(size_at_t);
    lithe_tensor_release(lengths);
    lithe_tensor_release(indices);
    return s;
}

static lithe_status expect_padded(const char *who, const lithe_value *v) {
    if (!v || v->kind != LITHE_VALUE_PADDED) return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: expected a Padded value", who);
    if (v->t[0]->ndim != 3) {
        char a[LITHE__SHAPE_BUF];
        return lithe__fail(LITHE_ERR_SHAPE, "%s: Padded data must be (T, B, nO), got %s", who,
                           lithe__shape_str(v->t[0], a, sizeof a));
    }
    return LITHE_OK;
}

lithe_status lithe__seq_padded2list(lithe_backend *be, const char *who, const lithe_value *padded, lithe_value **out) {
    *out = NULL;
    LITHE__TRY(expect_padded(who, padded));
    lithe_tensor *data = padded->t[0], *lengths = padded->t[2], *indices = padded->t[3];
    int64_t B = data->shape[1], nO = data->shape[2];
    lithe_tensor **ts = B ? lithe__calloc((size_t)B, sizeof *ts) : NULL;
    if (B && !ts) return lithe__oom(who, (size_t)B * sizeof *ts);
    lithe_status s = LITHE_OK;
    for (int64_t b = 0; b < B && s == LITHE_OK; b++) {
        int32_t idx = ival(indices, b), len = ival(lengths, b); /* ranges checked by lithe_value_padded */
        if (ts[idx]) {
            s = lithe__fail(LITHE_ERR_VALUE, "%s: Padded indices repeat %d", who, idx);
            break;
        }
        lithe_tensor *col = NULL, *src = NULL;
        s = lithe__tensor_alloc(be, data->dtype, 2, (int64_t[]){len, nO}, false, &ts[idx]);
        if (s == LITHE_OK) s = lithe_tensor_slice(data, 1, b, b + 1, &col);
        if (s == LITHE_OK) s = lithe_tensor_slice(col, 0, 0, len, &src);
        if (s == LITHE_OK && len) s = lithe__op_copy(be, ts[idx], src);
        lithe_tensor_release(src);
        lithe_tensor_release(col);
    }
    if (s != LITHE_OK) {
        for (int64_t b = 0; b < B; b++) lithe_tensor_release(ts[b]);
        lithe__free(ts);
        return s;
    }
    s = lithe__list_of_tensors((size_t)B, ts, out);
    lithe__free(ts);
    return s;
}

/* ---- the with_* conversions: to the inner container, and back given the outer value --------- */

lithe_status lithe__seq_to_list(lithe_backend *be, const char *who, const lithe_value *v, lithe_value **out) {
    switch (v->kind) {
    case LITHE_VALUE_LIST: *out = lithe_value_retain((lithe_value *)v); return LITHE_OK;
    case LITHE_VALUE_RAGGED: return lithe__seq_unflatten(who, v->t[0], v->t[1], 0, out);
    case LITHE_VALUE_PADDED: return lithe__seq_padded2list(be, who, v, out);
    default: return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: expected a list, Ragged or Padded value", who);
    }
}

static lithe_status ragged_of_list(lithe_backend *be, const char *who, const lithe_value *list, lithe_value **out) {
    lithe_tensor *data = NULL, *lengths = NULL;
    lithe_status s = lithe__seq_lengths(who, list, &lengths);
    if (s == LITHE_OK) s = lithe__seq_flatten(be, who, list, 0, &data);
    if (s == LITHE_OK) s = lithe_value_ragged(data, lengths, out);
    lithe_tensor_release(data);
    lithe_tensor_release(lengths);
    return s;
}

lithe_status lithe__seq_to_ragged(lithe_backend *be, const char *who, const lithe_value *v, lithe_value **out) {
    *out = NULL;
    switch (v->kind) {
    case LITHE_VALUE_RAGGED: *out = lithe_value_retain((lithe_value *)v); return LITHE_OK;
    case LITHE_VALUE_LIST: return ragged_of_list(be, who, v, out);
    case LITHE_VALUE_PADDED: {
        lithe_value *list = NULL;
        LITHE__TRY(lithe__seq_padded2list(be, who, v, &list));
        lithe_status s = ragged_of_list(be, who, list, out);
        lithe_value_release(list);
        return s;
    }
    case LITHE_VALUE_TUPLE: /* Thinc's RaggedData: (data, lengths) */
        if (v->n == 2 && v->items[0]->kind == LITHE_VALUE_TENSOR && v->items[1]->kind == LITHE_VALUE_TENSOR)
            return lithe_value_ragged(v->items[0]->t[0], v->items[1]->t[0], out);
        /* fall through */
    default: return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: expected a Ragged, Padded, list or (data, lengths) value", who);
    }
}

lithe_status lithe__seq_to_padded(lithe_backend *be, const char *who, const lithe_value *v, lithe_value **out) {
    *out = NULL;
    switch (v->kind) {
    case LITHE_VALUE_PADDED: *out = lithe_value_retain((lithe_value *)v); return LITHE_OK;
    case LITHE_VALUE_LIST: return lithe__seq_list2padded(be, who, v, out);
    case LITHE_VALUE_RAGGED: {
        lithe_value *list = NULL;
        LITHE__TRY(lithe__seq_unflatten(who, v->t[0], v->t[1], 0, &list));
        lithe_status s = lithe__seq_list2padded(be, who, list, out);
        lithe_value_release(list);
        return s;
    }
    case LITHE_VALUE_TENSOR: { /* a (T, B, nO) array: every sequence full length, in order */
        lithe_tensor *X = v->t[0], *st = NULL, *ln = NULL, *ix = NULL;
        if (X->ndim != 3) {
            char a[LITHE__SHAPE_BUF];
            return lithe__fail(LITHE_ERR_SHAPE, "%s: an array input must be (T, B, nO), got %s", who,
                               lithe__shape_str(X, a, sizeof a));
        }
        if (X->shape[0] > INT32_MAX || X->shape[1] > INT32_MAX)
            return lithe__fail(LITHE_ERR_SHAPE, "%s: array too large for Padded", who);
        int64_t T = X->shape[0], B = X->shape[1];
        lithe_status s = lithe__host_i32(T, NULL, &st);
        if (s == LITHE_OK) s = lithe__host_i32(B, NULL, &ln);
        if (s == LITHE_OK) s = lithe__host_i32(B, NULL, &ix);
        if (s == LITHE_OK) {
            for (int64_t t = 0; t < T; t++) ((int32_t *)lithe__tdata(st))[t] = (int32_t)B;
            for (int64_t b = 0; b < B; b++) {
                ((int32_t *)lithe__tdata(ln))[b] = (int32_t)T;
                ((int32_t *)lithe__tdata(ix))[b] = (int32_t)b;
            }
            s = lithe_value_padded(X, st, ln, ix, out);
        }
        lithe_tensor_release(st);
        lithe_tensor_release(ln);
        lithe_tensor_release(ix);
        return s;
    }
    case LITHE_VALUE_TUPLE: /* Thinc's PaddedData: (data, size_at_t, lengths, indices) */
        if (v->n == 4) {
            bool all = true;
            for (int i = 0; i < 4; i++) all = all && v->items[i]->kind == LITHE_VALUE_TENSOR;
            if (all)
                return lithe_value_padded(v->items[0]->t[0], v->items[1]->t[0], v->items[2]->t[0], v->items[3]->t[0],
                                          out);
        }
        /* fall through */
    default:
        return lithe__fail(LITHE_ERR_INVALID_ARG,
                           "%s: expected a Padded, Ragged, list, (T, B, nO) array or (data, size_at_t, lengths, indices) value",
                           who);
    }
}

/* Back to the outer container: `outer` is the value of the outer kind the conversion started
 * from (its kind, and for a TENSOR input nothing else, is all that is used). */
lithe_status lithe__seq_from_list(lithe_backend *be, const char *who, const lithe_value *Ys, const lithe_value *outer,
                                  lithe_value **out) {
    *out = NULL;
    LITHE__TRY(expect_list(who, Ys));
    switch (outer->kind) {
    case LITHE_VALUE_LIST: *out = lithe_value_retain((lithe_value *)Ys); return LITHE_OK;
    case LITHE_VALUE_RAGGED: return ragged_of_list(be, who, Ys, out);
    case LITHE_VALUE_PADDED: return lithe__seq_list2padded(be, who, Ys, out);
    default: return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: cannot return a list as this kind", who);
    }
}

static lithe_status expect_ragged(const char *who, const lithe_value *v) {
    if (!v || v->kind != LITHE_VALUE_RAGGED) return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: the layer must return a Ragged value", who);
    return LITHE_OK;
}

lithe_status lithe__seq_from_ragged(lithe_backend *be, const char *who, const lithe_value *Yr, const lithe_value *outer,
                                    lithe_value **out) {
    *out = NULL;
    LITHE__TRY(expect_ragged(who, Yr));
    switch (outer->kind) {
    case LITHE_VALUE_RAGGED: *out = lithe_value_retain((lithe_value *)Yr); return LITHE_OK;
    case LITHE_VALUE_LIST: return lithe__seq_unflatten(who, Yr->t[0], Yr->t[1], 0, out);
    case LITHE_VALUE_PADDED: {
        lithe_value *list = NULL;
        LITHE__TRY(lithe__seq_unflatten(who, Yr->t[0], Yr->t[1], 0, &list));
        lithe_status s = lithe__seq_list2padded(be, who, list, out);
        lithe_value_release(list);
        return s;
    }
    case LITHE_VALUE_TUPLE: {
        lithe_value *items[2] = {NULL, NULL};
        lithe_status s = lithe_value_tensor(Yr->t[0], &items[0]);
        if (s == LITHE_OK) s = lithe_value_tensor(Yr->t[1], &items[1]);
        if (s == LITHE_OK) s = lithe_value_tuple(2, items, out);
        lithe_value_release(items[0]);
        lithe_value_release(items[1]);
        return s;
    }
    default: return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: cannot return a Ragged value as this kind", who);
    }
}

lithe_status lithe__seq_from_padded(lithe_backend *be, const char *who, const lithe_value *Yp, const lithe_value *outer,
                                    lithe_value **out) {
    *out = NULL;
    LITHE__TRY(expect_padded(who, Yp));
    switch (outer->kind) {
    case LITHE_VALUE_PADDED: *out = lithe_value_retain((lithe_value *)Yp); return LITHE_OK;
    case LITHE_VALUE_LIST: return lithe__seq_padded2list(be, who, Yp, out);
    case LITHE_VALUE_RAGGED: {
        lithe_value *list = NULL;
        LITHE__TRY(lithe__seq_padded2list(be, who, Yp, &list));
        lithe_status s = ragged_of_list(be, who, list, out);
        lithe_value_release(list);
        return s;
    }
    case LITHE_VALUE_TENSOR: return lithe_value_tensor(Yp->t[0], out);
    case LITHE_VALUE_TUPLE: {
        lithe_value *items[4] = {NULL, NULL, NULL, NULL};
        lithe_status s = LITHE_OK;
        for (int i = 0; i < 4 && s == LITHE_OK; i++) s = lithe_value_tensor(Yp->t[i], &items[i]);
        if (s == LITHE_OK) s = lithe_value_tuple(4, items, out);
        for (int i = 0; i < 4; i++) lithe_value_release(items[i]);
        return s;
    }
    default: return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: cannot return a Padded value as this kind", who);
    }
}
