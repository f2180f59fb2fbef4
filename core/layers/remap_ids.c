/* remap_ids.v1 and remap_ids.v2 (thinc/layers/remap_ids.py): ids or strings through a mapping
 * table, table.get(x, default), as an (n, 1) array — a preprocessing step before embeddings.
 * Thinc keeps the table as the attr mapping_table, a Python dict, which its to_bytes writes as
 * msgpack; lithe keeps exactly those msgpack bytes (a uint8 tensor attr), so Thinc's bytes and
 * .lithe files carry the table unchanged, and parses them at forward into sorted arrays for
 * lookups. Keys may be ints (signed or unsigned 64-bit; Python's True/False are 1/0) or UTF-8
 * strings, values ints. v1: attrs {mapping_table, dtype, default}, input a sequence (STRINGS or
 * a 1-d int array), output of dtype (Thinc's "i" = int32). v2: attrs {mapping_table (None: an
 * error at forward), default, column}, input a sequence, a 1-d int array or (B, k) ids with
 * column; output int32. */
#include "dense.h"
#include "../io/msgpack.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct ikey {
    uint64_t ord; /* signed keys: bits with the sign flipped; unsigned beyond INT64_MAX: above */
    int hi;       /* 1 for unsigned keys above INT64_MAX (they sort after every int64) */
    int64_t value;
} ikey;

typedef struct skey {
    const uint8_t *p;
    uint32_t len;
    int64_t value;
} skey;

typedef struct table {
    mp_doc doc;
    ikey *ints;
    skey *strs;
    size_t n_ints, n_strs;
} table;

static int cmp_ikey(const void *a, const void *b) {
    const ikey *x = a, *y = b;
    if (x->hi != y->hi) return x->hi < y->hi ? -1 : 1;
    return x->ord < y->ord ? -1 : x->ord > y->ord;
}

static int cmp_bytes(const uint8_t *a, uint32_t na, const uint8_t *b, uint32_t nb) {
    int c = memcmp(a, b, na < nb ? na : nb);
    if (c) return c;
    return na < nb ? -1 : na > nb;
}

static int cmp_skey(const void *a, const void *b) {
    const skey *x = a, *y = b;
    return cmp_bytes(x->p, x->len, y->p, y->len);
}

static ikey signed_key(int64_t v) { return (ikey){(uint64_t)v ^ ((uint64_t)1 << 63), 0, 0}; }
static ikey unsigned_key(uint64_t u) {
    if (u <= (uint64_t)INT64_MAX) return signed_key((int64_t)u);
    return (ikey){u, 1, 0};
}

static void table_free(table *t) {
    mp_doc_free(&t->doc);
    lithe__free(t->ints);
    lithe__free(t->strs);
}

/* The attr mapping_table parsed: LITHE_ERR_VALUE when None (Thinc: "'mapping table' not set"). */
static lithe_status table_load(const lithe_model *m, table *t) {
    memset(t, 0, sizeof *t);
    lithe_attr_type at = lithe_model_attr_type(m, "mapping_table");
    if (at == LITHE_ATTR_NULL || at == LITHE_ATTR_NONE)
        return lithe__fail(LITHE_ERR_VALUE, "%s: 'mapping table' not set", m->name);
    lithe_tensor *blob = NULL;
    if (at != LITHE_ATTR_TENSOR || lithe_model_get_attr_tensor(m, "mapping_table", &blob) != LITHE_OK ||
        blob->dtype != LITHE_U8 || blob->ndim != 1 || !lithe_tensor_is_contiguous(blob) ||
        !blob->storage->backend->host_memory)
        return lithe__fail(LITHE_ERR_VALUE, "%s: attr mapping_table must hold msgpack bytes of a dict (uint8 tensor)",
                           m->name);
    char what[160];
    snprintf(what, sizeof what, "%s: mapping_table", m->name);
    LITHE__TRY(mp_parse(lithe__tdata(blob), (size_t)blob->numel, what, &t->doc));
    const mp_obj *map = &t->doc.root;
    lithe_status s = LITHE_OK;
    if (map->type != MP_MAP) s = lithe__fail(LITHE_ERR_VALUE, "%s: mapping_table is not a dict", m->name);
    size_t n = s == LITHE_OK ? map->len : 0;
    if (s == LITHE_OK && n) {
        t->ints = lithe__malloc(n * sizeof *t->ints);
        t->strs = lithe__malloc(n * sizeof *t->strs);
        if (!t->ints || !t->strs) s = lithe__oom(m->name, n * (sizeof *t->ints + sizeof *t->strs));
    }
    for (size_t i = 0; s == LITHE_OK && i < n; i++) {
        const mp_obj *k = &map->items[2 * i], *v = &map->items[2 * i + 1];
        if (v->type != MP_INT || v->is_unsigned) {
            s = lithe__fail(LITHE_ERR_VALUE, "%s: mapping_table value %zu is not an int64", m->name, i);
            break;
        }
        if (k->type == MP_STR) {
            t->strs[t->n_strs++] = (skey){k->data, k->len, v->v.i};
        } else if (k->type == MP_INT || k->type == MP_BOOL) {
            ikey key = k->type == MP_BOOL ? signed_key(k->v.b) : k->is_unsigned ? unsigned_key(k->v.u) : signed_key(k->v.i);
            key.value = v->v.i;
            t->ints[t->n_ints++] = key;
        } else {
            s = lithe__fail(LITHE_ERR_UNSUPPORTED, "%s: mapping_table key %zu is neither an int nor a string", m->name, i);
        }
    }
    if (s == LITHE_OK) {
        if (t->n_ints) qsort(t->ints, t->n_ints, sizeof *t->ints, cmp_ikey);
        if (t->n_strs) qsort(t->strs, t->n_strs, sizeof *t->strs, cmp_skey);
    }
    if (s != LITHE_OK) table_free(t);
    return s;
}

static int64_t lookup_int(const table *t, ikey k, int64_t dflt) {
    const ikey *f = t->n_ints ? bsearch(&k, t->ints, t->n_ints, sizeof k, cmp_ikey) : NULL;
    return f ? f->value : dflt;
}

static int64_t lookup_str(const table *t, const char *s, size_t len, int64_t dflt) {
    skey k = {(const uint8_t *)s, (uint32_t)len, 0};
    const skey *f = t->n_strs ? bsearch(&k, t->strs, t->n_strs, sizeof k, cmp_skey) : NULL;
    return f ? f->value : dflt;
}

/* v1's dtype attr as a lithe dtype (numpy's names for the int types Thinc allows). */
static lithe_status out_dtype(const lithe_model *m, lithe_dtype *out) {
    *out = LITHE_I32;
    if (lithe_model_attr_type(m, "dtype") != LITHE_ATTR_STR) return LITHE_OK;
    const char *d = NULL;
    LITHE__TRY(lithe_model_get_attr_str(m, "dtype", &d));
    if (!strcmp(d, "i") || !strcmp(d, "int32") || !strcmp(d, "i4")) *out = LITHE_I32;
    else if (!strcmp(d, "int64") || !strcmp(d, "i8") || !strcmp(d, "l") || !strcmp(d, "q")) *out = LITHE_I64;
    else if (!strcmp(d, "uint64") || !strcmp(d, "u8") || !strcmp(d, "Q")) *out = LITHE_U64;
    else return lithe__fail(LITHE_ERR_UNSUPPORTED, "%s: dtype '%s' is not an int dtype lithe holds", m->name, d);
    return LITHE_OK;
}

typedef struct remap_bp {
    lithe_backprop base;
    bool array_input; /* v2 returns zeros shaped like dY for arrays, [] otherwise */
} remap_bp;

static lithe_status remap_backward(lithe_backprop *self, const lithe_value *dY, lithe_value **dX) {
    remap_bp *r = (remap_bp *)self;
    if (!dX) return LITHE_OK;
    if (!r->array_input) return lithe_value_list(0, NULL, dX);
    const lithe_tensor *d = lithe_value_get_tensor(dY);
    if (!d || lithe_value_kind_of(dY) != LITHE_VALUE_TENSOR)
        return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: expected an array gradient", self->model->name);
    lithe_tensor *z = NULL;
    LITHE__TRY(lithe__tensor_alloc(self->model->backend, LITHE_F32, d->ndim, d->shape, true, &z));
    return lithe__emit(z, dX);
}

static void remap_destroy(lithe_backprop *self) { (void)self; }

static bool is_v1(const lithe_model *m) { return m->type->info != NULL; }

static lithe_status remap_forward(lithe_model *m, const lithe_value *X, bool is_train, lithe_value **Yv,
                                  lithe_backprop **bp) {
    (void)is_train;
    if (!X) return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: input is NULL", m->name);
    lithe_value_kind k = lithe_value_kind_of(X);
    const lithe_tensor *ids = k == LITHE_VALUE_TENSOR ? lithe_value_get_tensor(X) : NULL;
    bool empty_list = k == LITHE_VALUE_LIST && lithe_value_len(X) == 0; /* [] from a binding */
    if (k != LITHE_VALUE_STRINGS && !ids && !empty_list)
        return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: expected a strings value or an array of ids", m->name);
    int64_t column = -1, dflt = 0;
    if (!is_v1(m) && lithe_model_attr_type(m, "column") == LITHE_ATTR_INT)
        LITHE__TRY(lithe_model_get_attr_int(m, "column", &column));
    if (lithe_model_attr_type(m, "default") == LITHE_ATTR_INT) LITHE__TRY(lithe_model_get_attr_int(m, "default", &dflt));
    lithe_dtype dt = LITHE_I32;
    if (is_v1(m)) LITHE__TRY(out_dtype(m, &dt));
    int64_t n = 0;
    if (ids) {
        if (ids->dtype != LITHE_I32 && ids->dtype != LITHE_I64 && ids->dtype != LITHE_U64)
            return lithe__fail(LITHE_ERR_DTYPE, "%s: ids must be int32, int64 or uint64, got %s", m->name,
                               lithe_dtype_name(ids->dtype));
        if (column >= 0 && ids->ndim == 2) {
            if (column >= ids->shape[1])
                return lithe__fail(LITHE_ERR_SHAPE, "%s: column %lld outside the %lld columns of the ids", m->name,
                                   (long long)column, (long long)ids->shape[1]);
        } else if (ids->ndim != 1) {
            return lithe__fail(LITHE_ERR_SHAPE, "%s: ids must be 1-d%s, got %d-d", m->name,
                               is_v1(m) ? "" : " (or 2-d with column)", ids->ndim);
        }
        n = ids->shape[0];
    } else {
        n = (int64_t)lithe_value_len(X);
    }
    table t;
    LITHE__TRY(table_load(m, &t));
    int64_t *vals = lithe__malloc((size_t)(n ? n : 1) * sizeof *vals);
    void *raw = NULL;
    lithe_status s = vals ? LITHE_OK : lithe__oom(m->name, (size_t)n * sizeof *vals);
    if (s == LITHE_OK && ids) {
        size_t es = lithe_dtype_size(ids->dtype);
        raw = lithe__malloc((size_t)(ids->numel ? ids->numel : 1) * es);
        if (!raw) s = lithe__oom(m->name, (size_t)ids->numel * es);
        if (s == LITHE_OK) s = lithe_tensor_read(ids, raw, (size_t)ids->numel * es);
        int64_t stride = ids->ndim == 2 ? ids->shape[1] : 1, off = ids->ndim == 2 ? column : 0;
        for (int64_t i = 0; s == LITHE_OK && i < n; i++) {
            int64_t at = i * stride + off;
            ikey key = ids->dtype == LITHE_I32   ? signed_key(((const int32_t *)raw)[at])
                       : ids->dtype == LITHE_I64 ? signed_key(((const int64_t *)raw)[at])
                                                 : unsigned_key(((const uint64_t *)raw)[at]);
            vals[i] = lookup_int(&t, key, dflt);
        }
    } else {
        for (int64_t i = 0; s == LITHE_OK && i < n; i++) {
            size_t len = 0;
            const char *str = lithe_value_string(X, (size_t)i, &len);
            vals[i] = lookup_str(&t, str, len, dflt);
        }
    }
    table_free(&t);
    lithe__free(raw);
    lithe_tensor *Y = NULL;
    for (int64_t i = 0; s == LITHE_OK && i < n; i++)
        if ((dt == LITHE_I32 && (vals[i] < INT32_MIN || vals[i] > INT32_MAX)) || (dt == LITHE_U64 && vals[i] < 0))
            s = lithe__fail(LITHE_ERR_VALUE, "%s: mapped value %lld does not fit %s", m->name, (long long)vals[i],
                            lithe_dtype_name(dt));
    if (s == LITHE_OK) s = lithe__tensor_alloc(m->backend, dt, 2, (int64_t[]){n, 1}, false, &Y);
    if (s == LITHE_OK && dt == LITHE_I32) {
        int32_t *v32 = lithe__malloc((size_t)(n ? n : 1) * sizeof *v32);
        if (!v32) s = lithe__oom(m->name, (size_t)n * sizeof *v32);
        for (int64_t i = 0; s == LITHE_OK && i < n; i++) v32[i] = (int32_t)vals[i];
        if (s == LITHE_OK) s = lithe_tensor_write(Y, v32, (size_t)n * 4);
        lithe__free(v32);
    } else if (s == LITHE_OK) {
        s = lithe_tensor_write(Y, vals, (size_t)n * 8);
    }
    lithe__free(vals);
    if (s == LITHE_OK && bp) {
        s = lithe__backprop_new(m, sizeof(remap_bp), remap_backward, remap_destroy, bp);
        if (s == LITHE_OK) ((remap_bp *)*bp)->array_input = ids && !is_v1(m);
    }
    return lithe__emit_output(s, Y, Yv, bp);
}

static const char v1_info = 1;
static const lithe__layer_type remap_v1_type = {"remap_ids.v1", NULL, remap_forward, &v1_info, 0, 0};
static const lithe__layer_type remap_v2_type = {"remap_ids.v2", NULL, remap_forward, NULL, 0, 0};
const lithe__layer_type *const lithe__remap_types[] = {&remap_v1_type, &remap_v2_type, NULL};

/* The mapping as Thinc's to_bytes writes a dict: a msgpack map in insertion order. */
static lithe_status table_blob(const lithe_remap_ids_opts *o, lithe_tensor **out) {
    mp_buf b = {0};
    mp_map(&b, o->n);
    for (size_t i = 0; i < o->n; i++) {
        if (o->int_keys) mp_int(&b, o->int_keys[i]);
        else mp_str(&b, o->str_keys[i]);
        mp_int(&b, o->values[i]);
    }
    lithe_status s = b.oom ? lithe__oom("remap_ids", b.n) : LITHE_OK;
    if (s == LITHE_OK) s = lithe__tensor_alloc(lithe__backend_host(), LITHE_U8, 1, (int64_t[]){(int64_t)b.n}, false, out);
    if (s == LITHE_OK) memcpy(lithe__tdata(*out), b.p, b.n);
    lithe__free(b.p);
    return s;
}

lithe_status lithe_remap_ids(const lithe_remap_ids_opts *opts, lithe_model **out) {
    lithe_remap_ids_opts d = {0};
    if (!opts) opts = &d;
    int version = opts->version ? opts->version : 2;
    const char *layer = version == 1 ? "remap_ids.v1" : "remap_ids.v2";
    LITHE__CHECK_ARG(out, layer, "out is NULL");
    *out = NULL;
    if (version != 1 && version != 2)
        return lithe__fail(LITHE_ERR_VALUE, "remap_ids: version must be 1 or 2, got %d", opts->version);
    if (opts->n && (!opts->values || (!opts->int_keys == !opts->str_keys)))
        return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: a table of %zu entries needs values and one of int_keys / str_keys",
                           layer, opts->n);
    for (size_t i = 0; opts->str_keys && i < opts->n; i++)
        if (!opts->str_keys[i]) return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: str_keys[%zu] is NULL", layer, i);
    if (version == 1 && opts->no_table)
        return lithe__fail(LITHE_ERR_VALUE, "%s: v1's table cannot be None (Thinc's default is {})", layer);
    if (version == 1 && opts->has_column) return lithe__fail(LITHE_ERR_VALUE, "%s: column= is v2's", layer);
    if (opts->has_column && opts->column < 0)
        return lithe__fail(LITHE_ERR_VALUE, "%s: column must be >= 0, got %lld", layer, (long long)opts->column);
    const char *dtype = "i";
    if (version == 1 && opts->dtype != LITHE_F32 /* 0: the default */) {
        if (opts->dtype == LITHE_I32) dtype = "i";
        else if (opts->dtype == LITHE_I64) dtype = "int64";
        else if (opts->dtype == LITHE_U64) dtype = "uint64";
        else return lithe__fail(LITHE_ERR_VALUE, "%s: dtype must be int32, int64 or uint64", layer);
    }
    lithe_model *m = NULL;
    LITHE__TRY(lithe__model_new(version == 1 ? &remap_v1_type : &remap_v2_type, "remap_ids", NULL, NULL, &m));
    lithe_tensor *blob = NULL;
    lithe_status s = LITHE_OK;
    /* Thinc's attrs, in its dict order */
    if (opts->no_table) {
        s = lithe_model_set_attr_null(m, "mapping_table");
    } else {
        s = table_blob(opts, &blob);
        if (s == LITHE_OK) s = lithe_model_set_attr_tensor(m, "mapping_table", blob);
    }
    lithe_tensor_release(blob);
    if (s == LITHE_OK && version == 1) s = lithe_model_set_attr_str(m, "dtype", dtype);
    if (s == LITHE_OK) s = lithe_model_set_attr_int(m, "default", opts->default_value);
    if (s == LITHE_OK && version == 2)
        s = opts->has_column ? lithe_model_set_attr_int(m, "column", opts->column) : lithe_model_set_attr_null(m, "column");
    if (s != LITHE_OK) {
        lithe_model_free(m);
        return s;
    }
    *out = m;
    return LITHE_OK;
}
