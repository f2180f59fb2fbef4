/* Thinc 8.x's Model.to_bytes / from_bytes layout (thinc/model.py, srsly's msgpack with its numpy
 * encoding):
 *   {"nodes":  [{"index": i, "name": str, "dims": {dim: int | nil}, "refs": {ref: int | nil}}],
 *    "attrs":  [{attr: bin(msgpack(value))}],
 *    "params": [{param: {b"nd": true, b"type": "<f4", b"kind": b"", b"shape": [..], b"data": bin}
 *               | nil}],
 *    "shims":  [[bin, ...]]}
 * with one entry per node of model.walk() (breadth first). The writer reproduces srsly's bytes
 * exactly; the reader checks everything before it changes the model. */
#include "msgpack.h"

#include <stdio.h>
#include <string.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "Thinc's arrays are little-endian: a big-endian target needs byte swaps here"
#endif

typedef struct node_list {
    lithe_model **v;
    size_t n;
} node_list;

static lithe_status walk(lithe_model *m, node_list *nl) {
    nl->v = NULL;
    nl->n = 0;
    size_t n = 0;
    LITHE__TRY(lithe_model_walk(m, NULL, 0, &n));
    nl->v = lithe__malloc((n ? n : 1) * sizeof *nl->v);
    if (!nl->v) return lithe__oom("walk", n * sizeof *nl->v);
    lithe_status s = lithe_model_walk(m, nl->v, n, &nl->n);
    if (s != LITHE_OK) { /* the callers free nl->v again: leave nothing behind */
        lithe__free(nl->v);
        nl->v = NULL;
        nl->n = 0;
    }
    return s;
}

static long node_index(const node_list *nl, const lithe_model *node) {
    for (size_t i = 0; i < nl->n; i++)
        if (nl->v[i] == node) return (long)i;
    return -1;
}

/* ---- writing ---- */

/* An attr's value as msgpack (srsly.msgpack_dumps(value)). */
static lithe_status encode_attr(const lithe_model *node, const lithe__attr *a, mp_buf *b) {
    switch (a->type) {
    case LITHE_ATTR_NULL: mp_nil(b); return LITHE_OK;
    case LITHE_ATTR_INT: mp_int(b, a->v.i); return LITHE_OK;
    case LITHE_ATTR_FLOAT: mp_double(b, a->v.f); return LITHE_OK;
    case LITHE_ATTR_BOOL: mp_bool(b, a->v.b); return LITHE_OK;
    case LITHE_ATTR_STR: mp_str(b, a->v.s); return LITHE_OK;
    case LITHE_ATTR_TENSOR: {
        /* a tuple of numbers in Thinc (MultiSoftmax's nOs): a msgpack array */
        const lithe_tensor *t = a->v.t;
        if (t->dtype == LITHE_U8 && t->ndim == 1 && t->storage->backend->host_memory && lithe_tensor_is_contiguous(t)) {
            /* a value lithe keeps as Thinc's msgpack bytes (remap_ids' mapping_table dict) */
            mp_raw(b, lithe__tdata(t), (size_t)t->numel);
            return LITHE_OK;
        }
        if (t->ndim != 1 || !t->storage->backend->host_memory || !lithe_tensor_is_contiguous(t) ||
            (t->dtype != LITHE_I64 && t->dtype != LITHE_I32 && t->dtype != LITHE_F32))
            return lithe__fail(LITHE_ERR_UNSUPPORTED, "%s: attr '%s' is a tensor Thinc bytes cannot hold", node->name,
                               a->name);
        mp_array(b, (size_t)t->numel);
        for (int64_t i = 0; i < t->numel; i++) {
            if (t->dtype == LITHE_I64) mp_int(b, ((const int64_t *)lithe__tdata(t))[i]);
            else if (t->dtype == LITHE_I32) mp_int(b, ((const int32_t *)lithe__tdata(t))[i]);
            else mp_double(b, ((const float *)lithe__tdata(t))[i]);
        }
        return LITHE_OK;
    }
    case LITHE_ATTR_NONE: break;
    }
    return lithe__fail(LITHE_ERR_UNSUPPORTED, "%s: attr '%s' has no value", node->name, a->name);
}

static lithe_status encode_param(const lithe_tensor *t0, mp_buf *b) {
    lithe_tensor *t = NULL; /* a compact weight (docs/format.md) as its float32 values: Thinc's are <f4 */
    LITHE__TRY(lithe__as_f32(t0, &t));
    size_t nbytes = (size_t)t->numel * sizeof(float);
    float *host = lithe__malloc(nbytes ? nbytes : 1);
    if (!host) {
        lithe_tensor_release(t);
        return lithe__oom("to_thinc_bytes", nbytes);
    }
    lithe_status s = lithe_tensor_read(t, host, nbytes);
    if (s == LITHE_OK) {
        mp_map(b, 5);
        mp_bin(b, "nd", 2);
        mp_bool(b, true);
        mp_bin(b, "type", 4);
        mp_str(b, "<f4");
        mp_bin(b, "kind", 4);
        mp_bin(b, "", 0);
        mp_bin(b, "shape", 5);
        mp_array(b, (size_t)t->ndim);
        for (int d = 0; d < t->ndim; d++) mp_int(b, t->shape[d]);
        mp_bin(b, "data", 4);
        mp_bin(b, host, nbytes);
    }
    lithe_tensor_release(t);
    lithe__free(host);
    return s;
}

/* shim_bytes (n_shim of them, or none): the Thinc shim bytes of the nodes holding a shim, in walk
 * order; those nodes' weights live in the shim on Thinc's side, so their params and attrs (the
 * graph's bytes) are written empty. */
static lithe_status model_to_thinc_bytes_body(lithe_model *m, size_t n_shim, const uint8_t *const *shim_bytes,
                                              const size_t *shim_lens, uint8_t **out, size_t *len) {
    LITHE__CHECK_ARG(out && len, "lithe_model_to_thinc_bytes", "out or len is NULL");
    *out = NULL;
    *len = 0;
    LITHE__CHECK_ARG(m, "lithe_model_to_thinc_bytes", "model is NULL");
    LITHE__CHECK_ARG(!n_shim || (shim_bytes && shim_lens), "lithe_model_to_thinc_bytes_shims",
                     "shim_bytes or shim_lens is NULL");
    bool adapted = false;
    LITHE__TRY(lithe__lora_any(m, &adapted));
    if (adapted) /* Thinc has no adapters: its bytes would carry their params and attrs */
        return lithe__fail(LITHE_ERR_STATE, "lithe_model_to_thinc_bytes: the model has LoRA adapters; merge them "
                                            "first (lithe_model_merge_lora)");
    node_list nl;
    LITHE__TRY(walk(m, &nl));
    mp_buf b = {0};
    lithe_status s = LITHE_OK;
    size_t holders = 0;
    for (size_t i = 0; i < nl.n; i++) holders += nl.v[i]->n_shims ? 1 : 0;
    if (holders && !n_shim)
        s = lithe__fail(LITHE_ERR_UNSUPPORTED, "%s: nodes with shims (wrapped-framework graphs) need their Thinc shim "
                                               "bytes: lithe_model_to_thinc_bytes_shims", m->name);
    else if (n_shim != holders)
        s = lithe__fail(LITHE_ERR_VALUE, "lithe_model_to_thinc_bytes_shims: %zu shim bytes given, the tree has %zu "
                                         "nodes holding a shim", n_shim, holders);
    mp_map(&b, 4);
    mp_str(&b, "nodes");
    mp_array(&b, nl.n);
    for (size_t i = 0; s == LITHE_OK && i < nl.n; i++) {
        const lithe_model *node = nl.v[i];
        mp_map(&b, 4);
        mp_str(&b, "index");
        mp_int(&b, (int64_t)i);
        mp_str(&b, "name");
        mp_str(&b, node->name);
        mp_str(&b, "dims");
        mp_map(&b, node->n_dims);
        for (size_t d = 0; d < node->n_dims; d++) {
            mp_str(&b, node->dims[d].name);
            if (node->dims[d].value) mp_int(&b, node->dims[d].value);
            else mp_nil(&b);
        }
        mp_str(&b, "refs");
        mp_map(&b, node->n_refs);
        for (size_t r = 0; s == LITHE_OK && r < node->n_refs; r++) {
            mp_str(&b, node->refs[r].name);
            if (!node->refs[r].node) {
                mp_nil(&b);
                continue;
            }
            long k = node_index(&nl, node->refs[r].node);
            if (k < 0)
                s = lithe__fail(LITHE_ERR_VALUE, "%s: ref '%s' points outside the tree (Thinc cannot save it)",
                                node->name, node->refs[r].name);
            else mp_int(&b, k);
        }
    }
    mp_str(&b, "attrs");
    mp_array(&b, nl.n);
    for (size_t i = 0; s == LITHE_OK && i < nl.n; i++) {
        const lithe_model *node = nl.v[i];
        size_t n_attrs = node->n_shims ? 0 : node->n_attrs;
        mp_map(&b, n_attrs);
        for (size_t a = 0; s == LITHE_OK && a < n_attrs; a++) {
            mp_buf v = {0};
            s = encode_attr(node, &node->attrs[a], &v);
            if (s == LITHE_OK && v.oom) s = lithe__oom(node->name, v.n);
            if (s == LITHE_OK) {
                mp_str(&b, node->attrs[a].name);
                mp_bin(&b, v.p, v.n);
            }
            lithe__free(v.p);
        }
    }
    mp_str(&b, "params");
    mp_array(&b, nl.n);
    for (size_t i = 0; s == LITHE_OK && i < nl.n; i++) {
        const lithe_model *node = nl.v[i];
        size_t n_params = node->n_shims ? 0 : node->n_params;
        mp_map(&b, n_params);
        for (size_t p = 0; s == LITHE_OK && p < n_params; p++) {
            mp_str(&b, node->params[p].name);
            if (node->params[p].value) s = encode_param(node->params[p].value, &b);
            else mp_nil(&b);
        }
    }
    mp_str(&b, "shims");
    mp_array(&b, nl.n);
    for (size_t i = 0, k = 0; s == LITHE_OK && i < nl.n; i++) {
        if (!nl.v[i]->n_shims) {
            mp_array(&b, 0);
            continue;
        }
        mp_array(&b, 1);
        mp_bin(&b, shim_bytes[k], shim_lens[k]);
        k++;
    }
    lithe__free(nl.v);
    if (s == LITHE_OK && b.oom) s = lithe__oom("to_thinc_bytes", b.n);
    if (s != LITHE_OK) {
        lithe__free(b.p);
        return s;
    }
    *out = b.p;
    *len = b.n;
    return LITHE_OK;
}

lithe_status lithe_model_to_thinc_bytes(lithe_model *m, uint8_t **out, size_t *len) {
    if (out) *out = NULL;
    if (len) *len = 0;
    if (m) LITHE__TRY(lithe__enter_tree(m, "lithe_model_to_thinc_bytes"));
    lithe_status s = model_to_thinc_bytes_body(m, 0, NULL, NULL, out, len);
    if (m) lithe__leave_tree(m);
    return s;
}

lithe_status lithe_model_to_thinc_bytes_shims(lithe_model *m, size_t n_shim, const uint8_t *const *shim_bytes,
                                              const size_t *shim_lens, uint8_t **out, size_t *len) {
    if (out) *out = NULL;
    if (len) *len = 0;
    if (m) LITHE__TRY(lithe__enter_tree(m, "lithe_model_to_thinc_bytes_shims"));
    lithe_status s = model_to_thinc_bytes_body(m, n_shim, shim_bytes, shim_lens, out, len);
    if (m) lithe__leave_tree(m);
    return s;
}

/* ---- reading ---- */

static const char *WHAT = "Thinc bytes";

static lithe_status need(const mp_obj *o, mp_type t, const char *where, size_t node) {
    static const char *const names[] = {"nil", "bool", "int", "float", "str", "bin", "array", "map", "ext"};
    if (o && o->type == t) return LITHE_OK;
    return lithe__fail(LITHE_ERR_FORMAT, "%s: node %zu: %s must be a msgpack %s, found %s", WHAT, node, where, names[t],
                       o ? names[o->type] : "nothing");
}

/* A key string of the bytes as a C string, for messages and lookups (truncated at 127). */
static void key_str(const mp_obj *k, char *buf, size_t cap) {
    size_t n = k->len < cap - 1 ? k->len : cap - 1;
    memcpy(buf, k->data, n);
    buf[n] = '\0';
}

/* A decoded float32 array of a param entry: shape and data checked. */
static lithe_status decode_param(const mp_obj *v, size_t node, const char *pname, int *ndim, int64_t *shape,
                                 const uint8_t **data) {
    LITHE__TRY(need(v, MP_MAP, "a param value", node));
    const mp_obj *nd = mp_get_bin(v, "nd"), *type = mp_get_bin(v, "type"), *kind = mp_get_bin(v, "kind"),
                 *shp = mp_get_bin(v, "shape"), *dat = mp_get_bin(v, "data");
    if (!nd || nd->type != MP_BOOL || !nd->v.b || !type || !shp || shp->type != MP_ARRAY || !dat || dat->type != MP_BIN)
        return lithe__fail(LITHE_ERR_FORMAT, "%s: node %zu: param '%s' is not a numpy array record", WHAT, node, pname);
    if (!mp_str_eq(type, "<f4") || (kind && kind->len))
        return lithe__fail(LITHE_ERR_DTYPE, "%s: node %zu: param '%s' has dtype '%.*s'; lithe params are float32 ('<f4')",
                           WHAT, node, pname, (int)(type->len < 16 ? type->len : 16), (const char *)type->data);
    if (shp->len > LITHE_MAX_DIMS)
        return lithe__fail(LITHE_ERR_FORMAT, "%s: node %zu: param '%s' has %u dims (max %d)", WHAT, node, pname, shp->len,
                           LITHE_MAX_DIMS);
    uint64_t count = 1;
    for (uint32_t d = 0; d < shp->len; d++) {
        const mp_obj *e = &shp->items[d];
        if (e->type != MP_INT || e->is_unsigned || e->v.i < 0 || e->v.i > (int64_t)1 << 40)
            return lithe__fail(LITHE_ERR_FORMAT, "%s: node %zu: param '%s' has a bad extent", WHAT, node, pname);
        shape[d] = e->v.i;
        /* overflow-checked, and small enough that its byte count (x 4) cannot wrap either: a
         * product of 2^62 once wrapped to "its shape needs 0" */
        if (__builtin_mul_overflow(count, (uint64_t)shape[d], &count) || count > ((uint64_t)1 << 60))
            return lithe__fail(LITHE_ERR_FORMAT, "%s: node %zu: param '%s' is too large (more than 2^60 elements)", WHAT,
                               node, pname);
    }
    if ((uint64_t)dat->len != count * 4)
        return lithe__fail(LITHE_ERR_FORMAT, "%s: node %zu: param '%s' holds %u bytes, its shape needs %llu", WHAT, node,
                           pname, dat->len, (unsigned long long)(count * 4));
    *ndim = (int)shp->len;
    *data = dat->data;
    return LITHE_OK;
}

/* Checks one node's entries against the model node (no change). */
static lithe_status check_node(const node_list *nl, size_t i, const mp_obj *info, const mp_obj *attrs,
                               const mp_obj *params, const mp_obj *shims) {
    const lithe_model *node = nl->v[i];
    char k[128];
    LITHE__TRY(need(info, MP_MAP, "the node record", i));
    const mp_obj *name = mp_get(info, "name"), *dims = mp_get(info, "dims"), *refs = mp_get(info, "refs");
    LITHE__TRY(need(name, MP_STR, "name", i));
    LITHE__TRY(need(dims, MP_MAP, "dims", i));
    LITHE__TRY(need(refs, MP_MAP, "refs", i));
    if (!mp_str_eq(name, node->name)) {
        key_str(name, k, sizeof k);
        return lithe__fail(LITHE_ERR_VALUE, "%s: node %zu is '%s' in the bytes but '%s' in the model", WHAT, i, k,
                           node->name);
    }
    for (uint32_t d = 0; d < dims->len; d++) {
        const mp_obj *dk = &dims->items[2 * d], *dv = &dims->items[2 * d + 1];
        LITHE__TRY(need(dk, MP_STR, "a dim name", i));
        key_str(dk, k, sizeof k);
        lithe_has has = lithe_model_has_dim(node, k);
        if (has == LITHE_HAS_NO)
            return lithe__fail(LITHE_ERR_VALUE, "%s: node %zu (%s) has no dim '%s'", WHAT, i, node->name, k);
        if (dv->type == MP_NIL) continue;
        if (dv->type != MP_INT || dv->is_unsigned || dv->v.i <= 0)
            return lithe__fail(LITHE_ERR_FORMAT, "%s: node %zu (%s): dim '%s' must be a positive int or nil", WHAT, i,
                               node->name, k);
        int64_t cur = lithe__dim_value(node, k);
        if (has == LITHE_HAS_YES && cur != dv->v.i)
            return lithe__fail(LITHE_ERR_SHAPE, "%s: node %zu (%s): dim '%s' is %lld in the bytes, %lld in the model", WHAT,
                               i, node->name, k, (long long)dv->v.i, (long long)cur);
    }
    for (uint32_t r = 0; r < refs->len; r++) {
        const mp_obj *rk = &refs->items[2 * r], *rv = &refs->items[2 * r + 1];
        LITHE__TRY(need(rk, MP_STR, "a ref name", i));
        if (rv->type == MP_NIL) continue;
        if (rv->type != MP_INT || rv->is_unsigned || rv->v.i < 0 || (uint64_t)rv->v.i >= nl->n)
            return lithe__fail(LITHE_ERR_FORMAT, "%s: node %zu (%s): a ref points outside the %zu nodes", WHAT, i,
                               node->name, nl->n);
    }
    LITHE__TRY(need(attrs, MP_MAP, "attrs", i));
    for (uint32_t a = 0; a < attrs->len; a++) {
        LITHE__TRY(need(&attrs->items[2 * a], MP_STR, "an attr name", i));
        LITHE__TRY(need(&attrs->items[2 * a + 1], MP_BIN, "an attr value", i));
        mp_doc d;
        key_str(&attrs->items[2 * a], k, sizeof k);
        if (lithe__lora_attr(k)) /* Thinc has no adapters: what loaded could not be saved back */
            return lithe__fail(LITHE_ERR_UNSUPPORTED, "%s: node %zu (%s): attr '%s' is a LoRA adapter's; Thinc bytes "
                               "carry none (an adapter file loads with lithe_model_load_lora)", WHAT, i, node->name, k);
        char what[192];
        snprintf(what, sizeof what, "%s: node %zu (%s) attr '%s'", WHAT, i, node->name, k);
        LITHE__TRY(mp_parse(attrs->items[2 * a + 1].data, attrs->items[2 * a + 1].len, what, &d));
        mp_type t = d.root.type;
        bool ok = t == MP_NIL || t == MP_BOOL || (t == MP_INT && !d.root.is_unsigned) || t == MP_FLOAT || t == MP_STR;
        if (t == MP_MAP) ok = true; /* kept as its msgpack bytes (a uint8 tensor attr) */
        if (t == MP_ARRAY) {
            ok = true;
            for (uint32_t e = 0; e < d.root.len; e++)
                ok &= d.root.items[e].type == MP_INT && !d.root.items[e].is_unsigned;
        }
        mp_doc_free(&d);
        if (!ok)
            return lithe__fail(LITHE_ERR_UNSUPPORTED, "%s: node %zu (%s): attr '%s' has a type lithe does not hold", WHAT,
                               i, node->name, k);
    }
    LITHE__TRY(need(params, MP_MAP, "params", i));
    for (uint32_t p = 0; p < params->len; p++) {
        const mp_obj *pk = &params->items[2 * p], *pv = &params->items[2 * p + 1];
        LITHE__TRY(need(pk, MP_STR, "a param name", i));
        key_str(pk, k, sizeof k);
        const lithe__param *mp = NULL;
        for (size_t q = 0; q < node->n_params && !mp; q++)
            if (!strcmp(node->params[q].name, k)) mp = &node->params[q];
        if (!mp) return lithe__fail(LITHE_ERR_VALUE, "%s: node %zu (%s) has no param '%s'", WHAT, i, node->name, k);
        if (pv->type == MP_NIL) continue;
        int ndim;
        int64_t shape[LITHE_MAX_DIMS];
        const uint8_t *data;
        LITHE__TRY(decode_param(pv, i, k, &ndim, shape, &data));
        if (mp->value) {
            bool same = mp->value->ndim == ndim;
            for (int d = 0; same && d < ndim; d++) same = mp->value->shape[d] == shape[d];
            if (!same) {
                char a[LITHE__SHAPE_BUF];
                return lithe__fail(LITHE_ERR_SHAPE, "%s: node %zu (%s): param '%s' has another shape than the model's %s",
                                   WHAT, i, node->name, k, lithe__shape_str(mp->value, a, sizeof a));
            }
        }
    }
    LITHE__TRY(need(shims, MP_ARRAY, "shims", i));
    if (shims->len != node->n_shims)
        return lithe__fail(LITHE_ERR_VALUE, "%s: node %zu (%s) has %u shims in the bytes, %zu in the model", WHAT, i,
                           node->name, shims->len, node->n_shims);
    return LITHE_OK;
}

static lithe_status apply_attr(lithe_model *node, const char *name, const mp_obj *bin) {
    mp_doc d;
    LITHE__TRY(mp_parse(bin->data, bin->len, WHAT, &d));
    const mp_obj *v = &d.root;
    lithe_status s = LITHE_OK;
    switch (v->type) {
    case MP_NIL: s = lithe_model_set_attr_null(node, name); break;
    case MP_BOOL: s = lithe_model_set_attr_bool(node, name, v->v.b); break;
    case MP_INT: s = lithe_model_set_attr_int(node, name, v->v.i); break;
    case MP_FLOAT: s = lithe_model_set_attr_float(node, name, v->v.f); break;
    case MP_STR: {
        char *str = lithe__malloc((size_t)v->len + 1);
        if (!str) {
            s = lithe__oom(node->name, v->len);
            break;
        }
        memcpy(str, v->data, v->len);
        str[v->len] = '\0';
        s = lithe_model_set_attr_str(node, name, str);
        lithe__free(str);
        break;
    }
    case MP_ARRAY: {
        lithe_tensor *t = NULL;
        s = lithe__tensor_alloc(lithe__backend_host(), LITHE_I64, 1, (int64_t[]){v->len}, false, &t);
        for (uint32_t e = 0; s == LITHE_OK && e < v->len; e++) ((int64_t *)lithe__tdata(t))[e] = v->items[e].v.i;
        if (s == LITHE_OK) s = lithe_model_set_attr_tensor(node, name, t);
        lithe_tensor_release(t);
        break;
    }
    case MP_MAP: { /* a dict (remap_ids' mapping_table): its msgpack bytes as a uint8 tensor */
        lithe_tensor *t = NULL;
        s = lithe__tensor_alloc(lithe__backend_host(), LITHE_U8, 1, (int64_t[]){(int64_t)bin->len}, false, &t);
        if (s == LITHE_OK && bin->len) memcpy(lithe__tdata(t), bin->data, bin->len);
        if (s == LITHE_OK) s = lithe_model_set_attr_tensor(node, name, t);
        lithe_tensor_release(t);
        break;
    }
    default: s = lithe__fail(LITHE_ERR_UNSUPPORTED, "%s: attr '%s'", node->name, name); break;
    }
    mp_doc_free(&d);
    return s;
}

static lithe_status apply_node(const node_list *nl, size_t i, const mp_obj *info, const mp_obj *attrs,
                               const mp_obj *params) {
    lithe_model *node = nl->v[i];
    char k[128];
    const mp_obj *dims = mp_get(info, "dims"), *refs = mp_get(info, "refs");
    for (uint32_t d = 0; d < dims->len; d++) {
        if (dims->items[2 * d + 1].type == MP_NIL) continue;
        key_str(&dims->items[2 * d], k, sizeof k);
        LITHE__TRY(lithe_model_set_dim(node, k, dims->items[2 * d + 1].v.i));
    }
    for (uint32_t r = 0; r < refs->len; r++) {
        key_str(&refs->items[2 * r], k, sizeof k);
        const mp_obj *rv = &refs->items[2 * r + 1];
        LITHE__TRY(lithe_model_set_ref(node, k, rv->type == MP_NIL ? NULL : nl->v[rv->v.i]));
    }
    for (uint32_t a = 0; a < attrs->len; a++) {
        key_str(&attrs->items[2 * a], k, sizeof k);
        LITHE__TRY(apply_attr(node, k, &attrs->items[2 * a + 1]));
    }
    for (uint32_t p = 0; p < params->len; p++) {
        const mp_obj *pv = &params->items[2 * p + 1];
        if (pv->type == MP_NIL) continue;
        key_str(&params->items[2 * p], k, sizeof k);
        int ndim;
        int64_t shape[LITHE_MAX_DIMS];
        const uint8_t *data;
        LITHE__TRY(decode_param(pv, i, k, &ndim, shape, &data));
        lithe_tensor *t = NULL;
        LITHE__TRY(lithe__tensor_alloc(node->backend, LITHE_F32, ndim, shape, false, &t));
        lithe_status s = lithe_tensor_write(t, data, (size_t)t->numel * sizeof(float));
        if (s == LITHE_OK) s = lithe_model_set_param(node, k, t);
        lithe_tensor_release(t);
        LITHE__TRY(s);
    }
    return LITHE_OK;
}

static lithe_status model_from_thinc_bytes_body(lithe_model *m, const uint8_t *data, size_t len) {
    LITHE__CHECK_ARG(m && (data || !len), "lithe_model_from_thinc_bytes", "model or data is NULL");
    mp_doc doc;
    LITHE__TRY(mp_parse(data, len, WHAT, &doc));
    node_list nl = {0};
    lithe_status s = walk(m, &nl);
    const mp_obj *root = &doc.root, *nodes = NULL, *attrs = NULL, *params = NULL, *shims = NULL;
    if (s == LITHE_OK && root->type != MP_MAP)
        s = lithe__fail(LITHE_ERR_FORMAT, "%s: not a Thinc model (the top level is not a map)", WHAT);
    if (s == LITHE_OK) {
        nodes = mp_get(root, "nodes");
        attrs = mp_get(root, "attrs");
        params = mp_get(root, "params");
        shims = mp_get(root, "shims");
        if (!nodes || !attrs || !params || !shims || nodes->type != MP_ARRAY || attrs->type != MP_ARRAY ||
            params->type != MP_ARRAY || shims->type != MP_ARRAY)
            s = lithe__fail(LITHE_ERR_FORMAT, "%s: not a Thinc 8 model: needs arrays nodes, attrs, params and shims", WHAT);
    }
    if (s == LITHE_OK && (nodes->len != nl.n || attrs->len != nl.n || params->len != nl.n || shims->len != nl.n))
        s = lithe__fail(LITHE_ERR_VALUE, "%s: mismatched structure: the bytes hold %u nodes, the model has %zu", WHAT,
                        nodes->len, nl.n);
    for (size_t i = 0; s == LITHE_OK && i < nl.n; i++)
        s = check_node(&nl, i, &nodes->items[i], &attrs->items[i], &params->items[i], &shims->items[i]);
    /* everything checked: now apply (only an allocation failure can stop it part-way) */
    for (size_t i = 0; s == LITHE_OK && i < nl.n; i++)
        s = apply_node(&nl, i, &nodes->items[i], &attrs->items[i], &params->items[i]);
    lithe__free(nl.v);
    mp_doc_free(&doc);
    return s;
}

lithe_status lithe_model_from_thinc_bytes(lithe_model *m, const uint8_t *data, size_t len) {
    if (m) LITHE__TRY(lithe__enter_tree(m, "lithe_model_from_thinc_bytes"));
    lithe_status s = model_from_thinc_bytes_body(m, data, len);
    if (m) lithe__leave_tree(m);
    return s;
}
