/* Values: tensor, Ragged, Padded (Thinc's fields), list, tuple. */
#include "internal.h"

static lithe_status value_alloc(lithe_value_kind kind, lithe_value **out) {
    lithe_value *v = lithe__calloc(1, sizeof *v);
    if (!v) return lithe__oom("value", sizeof *v);
    v->refcount = 1;
    v->kind = kind;
    *out = v;
    return LITHE_OK;
}

lithe_status lithe_value_tensor(lithe_tensor *t, lithe_value **out) {
    LITHE__CHECK_ARG(out, "lithe_value_tensor", "out is NULL");
    *out = NULL;
    LITHE__CHECK_ARG(t, "lithe_value_tensor", "tensor is NULL");
    LITHE__TRY(value_alloc(LITHE_VALUE_TENSOR, out));
    (*out)->t[0] = lithe_tensor_retain(t);
    return LITHE_OK;
}

lithe_status lithe__value_wrap(lithe_tensor *t, lithe_value **out) {
    lithe_status s = lithe_value_tensor(t, out);
    lithe_tensor_release(t);
    return s;
}

static lithe_status check_int_vector(const char *fn, const char *field, const lithe_tensor *t) {
    if (!t) return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: %s is NULL", fn, field);
    if (t->dtype != LITHE_I32 || t->ndim != 1)
        return lithe__fail(LITHE_ERR_DTYPE, "%s: %s must be a 1-d int32 array, got %d-d %s", fn, field,
                           t->ndim, lithe_dtype_name(t->dtype));
    if (!t->storage->backend->host_memory)
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "%s: %s must live in host memory", fn, field);
    return LITHE_OK;
}

/* The int vector itself when contiguous, else a contiguous host copy: the layers and kernels
 * read lengths, size_at_t and indices as plain int32 arrays. */
static lithe_status packed_ints(lithe_tensor *t, lithe_tensor **out) {
    if (lithe_tensor_is_contiguous(t)) {
        *out = lithe_tensor_retain(t);
        return LITHE_OK;
    }
    LITHE__TRY(lithe__tensor_alloc(lithe__backend_host(), LITHE_I32, 1, t->shape, false, out));
    int32_t *dst = lithe__tdata(*out);
    const int32_t *src = lithe__tdata(t);
    for (int64_t i = 0; i < t->shape[0]; i++) dst[i] = src[i * t->strides[0]];
    return LITHE_OK;
}

static int32_t ival(const lithe_tensor *t, int64_t i) {
    return ((const int32_t *)lithe__tdata(t))[i * t->strides[0]];
}

lithe_status lithe_value_ragged(lithe_tensor *data, lithe_tensor *lengths, lithe_value **out) {
    const char *fn = "lithe_value_ragged";
    LITHE__CHECK_ARG(out, fn, "out is NULL");
    *out = NULL;
    LITHE__CHECK_ARG(data, fn, "data is NULL");
    LITHE__TRY(check_int_vector(fn, "lengths", lengths));
    if (data->ndim < 1) return lithe__fail(LITHE_ERR_SHAPE, "%s: data must have at least 1 dimension", fn);
    int64_t sum = 0;
    for (int64_t i = 0; i < lengths->shape[0]; i++) {
        int32_t l = ival(lengths, i);
        if (l < 0) return lithe__fail(LITHE_ERR_VALUE, "%s: lengths[%lld] = %d is negative", fn, (long long)i, l);
        sum += l;
    }
    if (sum != data->shape[0])
        return lithe__fail(LITHE_ERR_SHAPE, "%s: lengths sum to %lld but data has %lld rows", fn,
                           (long long)sum, (long long)data->shape[0]);
    lithe_tensor *packed = NULL;
    LITHE__TRY(packed_ints(lengths, &packed));
    lithe_status s = value_alloc(LITHE_VALUE_RAGGED, out);
    if (s != LITHE_OK) {
        lithe_tensor_release(packed);
        return s;
    }
    (*out)->t[0] = lithe_tensor_retain(data);
    (*out)->t[1] = packed;
    return LITHE_OK;
}

lithe_status lithe_value_padded(lithe_tensor *data, lithe_tensor *size_at_t, lithe_tensor *lengths,
                                lithe_tensor *indices, lithe_value **out) {
    const char *fn = "lithe_value_padded";
    LITHE__CHECK_ARG(out, fn, "out is NULL");
    *out = NULL;
    LITHE__CHECK_ARG(data, fn, "data is NULL");
    LITHE__TRY(check_int_vector(fn, "size_at_t", size_at_t));
    LITHE__TRY(check_int_vector(fn, "lengths", lengths));
    LITHE__TRY(check_int_vector(fn, "indices", indices));
    if (data->ndim < 2)
        return lithe__fail(LITHE_ERR_SHAPE, "%s: data must be (T, B, ...), got %d dimensions", fn, data->ndim);
    int64_t T = data->shape[0], B = data->shape[1];
    if (size_at_t->shape[0] != T)
        return lithe__fail(LITHE_ERR_SHAPE, "%s: size_at_t has %lld entries, data has T=%lld", fn,
                           (long long)size_at_t->shape[0], (long long)T);
    if (lengths->shape[0] != B || indices->shape[0] != B)
        return lithe__fail(LITHE_ERR_SHAPE, "%s: lengths (%lld) and indices (%lld) must both have B=%lld entries",
                           fn, (long long)lengths->shape[0], (long long)indices->shape[0], (long long)B);
    for (int64_t t = 0; t < T; t++)
        if (ival(size_at_t, t) < 0 || ival(size_at_t, t) > B)
            return lithe__fail(LITHE_ERR_VALUE, "%s: size_at_t[%lld] = %d outside 0..%lld", fn, (long long)t,
                               ival(size_at_t, t), (long long)B);
    for (int64_t b = 0; b < B; b++) {
        if (ival(lengths, b) < 0 || ival(lengths, b) > T)
            return lithe__fail(LITHE_ERR_VALUE, "%s: lengths[%lld] = %d outside 0..%lld", fn, (long long)b,
                               ival(lengths, b), (long long)T);
        if (ival(indices, b) < 0 || ival(indices, b) >= B)
            return lithe__fail(LITHE_ERR_VALUE, "%s: indices[%lld] = %d outside 0..%lld", fn, (long long)b,
                               ival(indices, b), (long long)B - 1);
    }
    lithe_tensor *packed[3] = {NULL, NULL, NULL};
    lithe_status s = packed_ints(size_at_t, &packed[0]);
    if (s == LITHE_OK) s = packed_ints(lengths, &packed[1]);
    if (s == LITHE_OK) s = packed_ints(indices, &packed[2]);
    if (s == LITHE_OK) s = value_alloc(LITHE_VALUE_PADDED, out);
    if (s != LITHE_OK) {
        for (int i = 0; i < 3; i++) lithe_tensor_release(packed[i]);
        return s;
    }
    (*out)->t[0] = lithe_tensor_retain(data);
    for (int i = 0; i < 3; i++) (*out)->t[1 + i] = packed[i];
    return LITHE_OK;
}

static lithe_status value_seq(lithe_value_kind kind, size_t n, lithe_value *const *items,
                              lithe_value **out) {
    const char *fn = kind == LITHE_VALUE_LIST ? "lithe_value_list" : "lithe_value_tuple";
    LITHE__CHECK_ARG(out, fn, "out is NULL");
    *out = NULL;
    LITHE__CHECK_ARG(n == 0 || items, fn, "items is NULL");
    for (size_t i = 0; i < n; i++)
        if (!items[i]) return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: item %zu is NULL", fn, i);
    lithe_value *v = NULL;
    LITHE__TRY(value_alloc(kind, &v));
    if (n) {
        v->items = lithe__calloc(n, sizeof *v->items);
        if (!v->items) {
            lithe__free(v);
            return lithe__oom(fn, n * sizeof *v->items);
        }
    }
    v->n = n;
    for (size_t i = 0; i < n; i++) v->items[i] = lithe_value_retain(items[i]);
    *out = v;
    return LITHE_OK;
}

lithe_status lithe_value_list(size_t n, lithe_value *const *items, lithe_value **out) {
    return value_seq(LITHE_VALUE_LIST, n, items, out);
}
lithe_status lithe_value_tuple(size_t n, lithe_value *const *items, lithe_value **out) {
    return value_seq(LITHE_VALUE_TUPLE, n, items, out);
}

/* STRINGS: t[0] holds the strings' bytes, each followed by a NUL (uint8), t[1] the n + 1 byte
 * offsets where they start (int64); n stays 0 (no items), so release needs nothing new. */
lithe_status lithe_value_strings(size_t n, const char *const *s, lithe_value **out) {
    const char *fn = "lithe_value_strings";
    LITHE__CHECK_ARG(out, fn, "out is NULL");
    *out = NULL;
    LITHE__CHECK_ARG(n == 0 || s, fn, "strings is NULL");
    int64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (!s[i]) return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: string %zu is NULL", fn, i);
        total += (int64_t)strlen(s[i]) + 1;
    }
    lithe_tensor *bytes = NULL, *offsets = NULL;
    lithe_backend *cpu = lithe__backend_host();
    lithe_status st = lithe__tensor_alloc(cpu, LITHE_U8, 1, &total, false, &bytes);
    if (st == LITHE_OK) st = lithe__tensor_alloc(cpu, LITHE_I64, 1, (int64_t[]){(int64_t)n + 1}, false, &offsets);
    if (st == LITHE_OK) st = value_alloc(LITHE_VALUE_STRINGS, out);
    if (st != LITHE_OK) {
        lithe_tensor_release(bytes);
        lithe_tensor_release(offsets);
        return st;
    }
    char *b = lithe__tdata(bytes);
    int64_t *o = lithe__tdata(offsets), at = 0;
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(s[i]) + 1;
        o[i] = at;
        memcpy(b + at, s[i], len);
        at += (int64_t)len;
    }
    o[n] = at;
    (*out)->t[0] = bytes;
    (*out)->t[1] = offsets;
    return LITHE_OK;
}

const char *lithe_value_string(const lithe_value *v, size_t i, size_t *len) {
    if (!v || v->kind != LITHE_VALUE_STRINGS || i + 1 >= (size_t)v->t[1]->numel) return NULL;
    const int64_t *o = lithe__tdata(v->t[1]);
    if (len) *len = (size_t)(o[i + 1] - o[i] - 1);
    return (const char *)lithe__tdata(v->t[0]) + o[i];
}

lithe_value *lithe_value_retain(lithe_value *v) {
    if (v) LITHE__REF_INC(v->refcount);
    return v;
}

void lithe_value_release(lithe_value *v) {
    if (!v || !LITHE__REF_DEC_LAST(v->refcount)) return;
    for (int i = 0; i < 4; i++) lithe_tensor_release(v->t[i]);
    for (size_t i = 0; i < v->n; i++) lithe_value_release(v->items[i]);
    lithe__free(v->items);
    lithe__free(v);
}

lithe_value_kind lithe_value_kind_of(const lithe_value *v) { return v ? v->kind : LITHE_VALUE_TENSOR; }
lithe_tensor *lithe_value_get_tensor(const lithe_value *v) {
    if (!v || v->kind == LITHE_VALUE_LIST || v->kind == LITHE_VALUE_TUPLE || v->kind == LITHE_VALUE_STRINGS)
        return NULL;
    return v->t[0];
}
lithe_tensor *lithe_value_field(const lithe_value *v, const char *name) {
    if (!v || !name) return NULL;
    if (v->kind == LITHE_VALUE_RAGGED) {
        if (!strcmp(name, "data")) return v->t[0];
        if (!strcmp(name, "lengths")) return v->t[1];
    } else if (v->kind == LITHE_VALUE_PADDED) {
        if (!strcmp(name, "data")) return v->t[0];
        if (!strcmp(name, "size_at_t")) return v->t[1];
        if (!strcmp(name, "lengths")) return v->t[2];
        if (!strcmp(name, "indices")) return v->t[3];
    } else if (v->kind == LITHE_VALUE_TENSOR && !strcmp(name, "data")) {
        return v->t[0];
    }
    return NULL;
}
size_t lithe_value_len(const lithe_value *v) {
    if (v && v->kind == LITHE_VALUE_STRINGS) return (size_t)v->t[1]->numel - 1;
    return v ? v->n : 0;
}
lithe_value *lithe_value_item(const lithe_value *v, size_t i) {
    return v && i < v->n ? v->items[i] : NULL;
}

static const char *kind_name(lithe_value_kind k) {
    switch (k) {
    case LITHE_VALUE_TENSOR: return "array";
    case LITHE_VALUE_RAGGED: return "Ragged";
    case LITHE_VALUE_PADDED: return "Padded";
    case LITHE_VALUE_LIST: return "list";
    case LITHE_VALUE_TUPLE: return "tuple";
    case LITHE_VALUE_STRINGS: return "strings";
    }
    return "?";
}

lithe_status lithe__value_f32_2d(const lithe_value *v, const char *layer, lithe_tensor **out) {
    if (!v) return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: input is NULL", layer);
    if (v->kind != LITHE_VALUE_TENSOR)
        return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: expected a 2-d float32 array, got a %s", layer,
                           kind_name(v->kind));
    lithe_tensor *t = v->t[0];
    if (t->dtype != LITHE_F32)
        return lithe__fail(LITHE_ERR_DTYPE, "%s: expected float32 input, got %s", layer, lithe_dtype_name(t->dtype));
    if (t->ndim != 2) {
        char b[LITHE__SHAPE_BUF];
        return lithe__fail(LITHE_ERR_SHAPE, "%s: expected a 2-d array (batch, width), got shape %s", layer,
                           lithe__shape_str(t, b, sizeof b));
    }
    if (t->shape[1] > 1 && t->strides[1] != 1)
        return lithe__fail(LITHE_ERR_SHAPE, "%s: input rows must be contiguous", layer);
    *out = t;
    return LITHE_OK;
}
