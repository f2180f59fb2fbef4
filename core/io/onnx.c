/* The ONNX reader: protobuf wire format decoded by hand (no protobuf library), field numbers from
 * onnx.proto. Hostile input is the normal case: every read is bounded by the message's own end,
 * every length by what is left, every count and element product checked for overflow, and a
 * malformed file is LITHE_ERR_FORMAT naming the message, never a crash. Unknown fields are
 * skipped (newer writers add them); wire types are checked before a field is read. */
#include "onnx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WHAT "onnx"
#include "pb_read.h"

/* ---- TensorProto ---- */

size_t lithe__onnx_type_bytes(int32_t t) {
    switch (t) {
    case LITHE__ONNX_FLOAT: case LITHE__ONNX_INT32: case LITHE__ONNX_UINT32: return 4;
    case LITHE__ONNX_DOUBLE: case LITHE__ONNX_INT64: case LITHE__ONNX_UINT64: return 8;
    case LITHE__ONNX_FLOAT16: case LITHE__ONNX_BFLOAT16: case LITHE__ONNX_INT16: case LITHE__ONNX_UINT16: return 2;
    case LITHE__ONNX_INT8: case LITHE__ONNX_UINT8: case LITHE__ONNX_BOOL: return 1;
    default: return 0;
    }
}

static bool type_is_float(int32_t t) {
    return t == LITHE__ONNX_FLOAT || t == LITHE__ONNX_DOUBLE || t == LITHE__ONNX_FLOAT16 || t == LITHE__ONNX_BFLOAT16;
}

float lithe__half_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 31, man = h & 1023, u;
    if (exp == 0) {
        if (man == 0) u = sign;
        else { /* subnormal: normalise */
            int e = -1;
            do {
                e++;
                man <<= 1;
            } while (!(man & 1024));
            u = sign | (uint32_t)(127 - 15 - e) << 23 | (man & 1023) << 13;
        }
    } else if (exp == 31) {
        u = sign | 0x7f800000u | man << 13;
    } else {
        u = sign | (exp + 127 - 15) << 23 | man << 13;
    }
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* One element of raw little-endian bytes of type t, into the canonical float or int64. */
static void decode_raw(int32_t t, const uint8_t *b, float *f, int64_t *i) {
    switch (t) {
    case LITHE__ONNX_FLOAT: *f = f32_of(b); return;
    case LITHE__ONNX_DOUBLE: {
        uint64_t u = u64_of(b);
        double d;
        memcpy(&d, &u, 8);
        *f = (float)d;
        return;
    }
    case LITHE__ONNX_FLOAT16: *f = lithe__half_to_f32((uint16_t)(b[0] | b[1] << 8)); return;
    case LITHE__ONNX_BFLOAT16: {
        uint32_t u = (uint32_t)(b[0] | b[1] << 8) << 16;
        memcpy(f, &u, 4);
        return;
    }
    case LITHE__ONNX_INT64: case LITHE__ONNX_UINT64: *i = (int64_t)u64_of(b); return;
    case LITHE__ONNX_INT32: *i = (int32_t)((uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24); return;
    case LITHE__ONNX_UINT32: *i = (int64_t)((uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24); return;
    case LITHE__ONNX_INT16: *i = (int16_t)(uint16_t)(b[0] | b[1] << 8); return;
    case LITHE__ONNX_UINT16: *i = (uint16_t)(b[0] | b[1] << 8); return;
    case LITHE__ONNX_INT8: *i = (int8_t)b[0]; return;
    default: *i = b[0]; return; /* UINT8, BOOL */
    }
}

static void tensor_free(lithe__onnx_tensor *t) {
    if (!t) return;
    lithe__free(t->name);
    lithe__free(t->data);
    lithe__free(t->ext_location);
    memset(t, 0, sizeof *t);
}

static lithe_status parse_kv(const uint8_t *d, size_t n, char **key, char **value) {
    pb r = {d, d + n, "StringStringEntryProto"};
    while (r.p < r.end) {
        uint32_t f = 0, wt = 0;
        size_t vn = 0;
        LITHE__TRY(rd_key(&r, &f, &wt));
        if (f == 1) LITHE__TRY(rd_str(&r, wt, "key", key, NULL));
        else if (f == 2) LITHE__TRY(rd_str(&r, wt, "value", value, &vn));
        else LITHE__TRY(skip(&r, wt));
        if (f == 2 && strlen(*value) != vn) return bad(&r, "a value with a NUL byte inside");
    }
    return LITHE_OK;
}

static lithe_status parse_tensor_inner(const uint8_t *d, size_t n, lithe__onnx_tensor *t, vec *dims, vec *fdata,
                                       vec *idata, vec *ddata, vec *udata, int *which_typed) {
    pb r = {d, d + n, "TensorProto"};
    const uint8_t *raw = NULL;
    size_t raw_n = 0;
    bool has_raw = false;
    int64_t location = 0;
    while (r.p < r.end) {
        uint32_t f = 0, wt = 0;
        LITHE__TRY(rd_key(&r, &f, &wt));
        int64_t v = 0;
        switch (f) {
        case 1: LITHE__TRY(rd_repeated(&r, wt, 0, "dims", dims)); break;
        case 2:
            LITHE__TRY(rd_int(&r, wt, "data_type", &v));
            if (v < 0 || v > 64) return bad(&r, "data_type outside the DataType enum");
            t->data_type = (int32_t)v;
            break;
        case 4: LITHE__TRY(rd_repeated(&r, wt, 1, "float_data", fdata)); *which_typed |= 1; break;
        case 5: LITHE__TRY(rd_repeated(&r, wt, 0, "int32_data", idata)); *which_typed |= 2; break;
        case 7: LITHE__TRY(rd_repeated(&r, wt, 0, "int64_data", idata)); *which_typed |= 4; break;
        case 10: LITHE__TRY(rd_repeated(&r, wt, 2, "double_data", ddata)); *which_typed |= 8; break;
        case 11: LITHE__TRY(rd_repeated(&r, wt, 0, "uint64_data", udata)); *which_typed |= 16; break;
        case 8: LITHE__TRY(rd_str(&r, wt, "name", &t->name, NULL)); break;
        case 9:
            LITHE__TRY(want(&r, wt, WT_LEN, "raw_data"));
            LITHE__TRY(rd_len(&r, &raw, &raw_n));
            has_raw = true;
            break;
        case 13: {
            LITHE__TRY(want(&r, wt, WT_LEN, "external_data"));
            const uint8_t *kd = NULL;
            size_t kn = 0;
            LITHE__TRY(rd_len(&r, &kd, &kn));
            char *key = NULL, *value = NULL;
            lithe_status s = parse_kv(kd, kn, &key, &value);
            if (s == LITHE_OK && key && value) {
                if (!strcmp(key, "location")) {
                    lithe__free(t->ext_location);
                    t->ext_location = value;
                    value = NULL;
                } else if (!strcmp(key, "offset") || !strcmp(key, "length")) {
                    char *end = NULL;
                    long long x = strtoll(value, &end, 10);
                    if (!*value || *end || x < 0) s = bad(&r, "external_data offset/length is not a non-negative integer");
                    else if (!strcmp(key, "offset")) t->ext_offset = x;
                    else t->ext_length = x;
                }
            }
            lithe__free(key);
            lithe__free(value);
            LITHE__TRY(s);
            break;
        }
        case 14: LITHE__TRY(rd_int(&r, wt, "data_location", &location)); break;
        case 3: case 6: return bad(&r, "segmented or string tensors are not supported");
        default: LITHE__TRY(skip(&r, wt));
        }
    }
    size_t es = lithe__onnx_type_bytes(t->data_type);
    if (!es)
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "%s: tensor '%s' has data type %d, which lithe does not hold "
                                                  "(it holds float, double, float16, bfloat16, integers and bool)",
                           WHAT, t->name ? t->name : "", (int)t->data_type);
    if (dims->n > LITHE_MAX_DIMS)
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "%s: tensor '%s' has %zu dims; lithe holds at most %d", WHAT,
                           t->name ? t->name : "", dims->n, LITHE_MAX_DIMS);
    t->ndim = (int)dims->n;
    t->is_float = type_is_float(t->data_type);
    uint64_t numel = 1;
    for (int i = 0; i < t->ndim; i++) {
        int64_t e = ((int64_t *)dims->v)[i];
        if (e < 0 || e > ((int64_t)1 << 40))
            return lithe__fail(LITHE_ERR_FORMAT, "%s: tensor '%s' has extent %lld", WHAT, t->name ? t->name : "",
                               (long long)e);
        t->dims[i] = e;
        if (e && numel > ((uint64_t)1 << 40) / (uint64_t)e)
            return lithe__fail(LITHE_ERR_FORMAT, "%s: tensor '%s' has more than 2^40 elements", WHAT,
                               t->name ? t->name : "");
        numel *= (uint64_t)e;
    }
    t->numel = (int64_t)numel;
    if (location == 1) { /* EXTERNAL: lithe__onnx_inline_external reads the bytes from the file named */
        if (!t->ext_location) return bad(&r, "an external tensor without a location");
        return LITHE_OK;
    }
    lithe__free(t->ext_location); /* entries without data_location EXTERNAL: the data is inline */
    t->ext_location = NULL;
    size_t vs = t->is_float ? sizeof(float) : sizeof(int64_t);
    if (numel > (uint64_t)SIZE_MAX / vs) /* 32-bit size_t (WebAssembly): the product would wrap */
        return lithe__fail(LITHE_ERR_FORMAT, "%s: tensor '%s' has %llu elements, more than this platform addresses", WHAT,
                           t->name ? t->name : "", (unsigned long long)numel);
    /* the values present against the extents, before anything is allocated: a tensor declaring
     * 25e9 floats over 288 raw bytes is refused here, not after a 100 GB malloc */
    if (has_raw && ((uint64_t)raw_n / es != numel || raw_n % es))
        return lithe__fail(LITHE_ERR_FORMAT, "%s: tensor '%s' has %zu raw bytes, its %llu elements of %zu bytes need %llu",
                           WHAT, t->name ? t->name : "", raw_n, (unsigned long long)numel, es,
                           (unsigned long long)(numel * es));
    const vec *src;
    switch (t->data_type) { /* typed fields: the one onnx.proto assigns to the type */
    case LITHE__ONNX_FLOAT: src = fdata; break;
    case LITHE__ONNX_DOUBLE: src = ddata; break;
    case LITHE__ONNX_INT64: src = idata; break;
    case LITHE__ONNX_UINT32: case LITHE__ONNX_UINT64: src = udata; break;
    default: src = idata; break; /* int32_data holds every narrower type, float16 bits included */
    }
    if (!has_raw && src->n != numel)
        return lithe__fail(LITHE_ERR_FORMAT, "%s: tensor '%s' holds %zu values for %llu elements", WHAT,
                           t->name ? t->name : "", src->n, (unsigned long long)numel);
    if (numel) {
        t->data = lithe__malloc((size_t)numel * vs); /* fits size_t, checked above */
        if (!t->data) return lithe__oom(WHAT, (size_t)numel * vs);
    }
    float *fo = t->data;
    int64_t *io = t->data;
    if (has_raw) {
        for (uint64_t k = 0; k < numel; k++) {
            float fv = 0;
            int64_t iv = 0;
            decode_raw(t->data_type, raw + k * es, &fv, &iv);
            if (t->is_float) fo[k] = fv;
            else io[k] = iv;
        }
        return LITHE_OK;
    }
    for (uint64_t k = 0; k < numel; k++) {
        switch (t->data_type) {
        case LITHE__ONNX_FLOAT: fo[k] = ((const float *)src->v)[k]; break;
        case LITHE__ONNX_DOUBLE: {
            double dv;
            memcpy(&dv, (const uint64_t *)src->v + k, 8);
            fo[k] = (float)dv;
            break;
        }
        case LITHE__ONNX_FLOAT16: fo[k] = lithe__half_to_f32((uint16_t)((const uint64_t *)src->v)[k]); break;
        case LITHE__ONNX_BFLOAT16: {
            uint32_t u = (uint32_t)(uint16_t)((const uint64_t *)src->v)[k] << 16;
            memcpy(&fo[k], &u, 4);
            break;
        }
        case LITHE__ONNX_INT32: io[k] = (int32_t)((const uint64_t *)src->v)[k]; break;
        default: io[k] = (int64_t)((const uint64_t *)src->v)[k]; break;
        }
    }
    return LITHE_OK;
}

lithe_status lithe__onnx_parse_tensor(const uint8_t *d, size_t n, lithe__onnx_tensor *t) {
    memset(t, 0, sizeof *t);
    t->ext_offset = t->ext_length = -1;
    vec dims = {0}, fdata = {0}, idata = {0}, ddata = {0}, udata = {0};
    int which = 0;
    lithe_status s = parse_tensor_inner(d, n, t, &dims, &fdata, &idata, &ddata, &udata, &which);
    lithe__free(dims.v);
    lithe__free(fdata.v);
    lithe__free(idata.v);
    lithe__free(ddata.v);
    lithe__free(udata.v);
    if (s != LITHE_OK) tensor_free(t);
    return s;
}

/* ---- AttributeProto, NodeProto ---- */

static void attr_free(lithe__onnx_attr *a) {
    lithe__free(a->name);
    lithe__free(a->s);
    if (a->t) {
        tensor_free(a->t);
        lithe__free(a->t);
    }
    lithe__free(a->floats);
    lithe__free(a->ints);
    for (size_t k = 0; k < a->n_strings; k++) lithe__free(a->strings[k]);
    lithe__free(a->strings);
    lithe__free(a->graph);
}

/* One more entry of a STRINGS attribute. */
static lithe_status rd_strings(pb *r, uint32_t wt, lithe__onnx_attr *a) {
    if (a->n_strings >= 4096) return bad(r, "more than 4096 strings in one attribute");
    char **ns = lithe__realloc(a->strings, (a->n_strings + 1) * sizeof *ns);
    if (!ns) return lithe__oom(WHAT, (a->n_strings + 1) * sizeof *ns);
    a->strings = ns;
    a->strings[a->n_strings] = NULL;
    LITHE__TRY(rd_str(r, wt, "strings", &a->strings[a->n_strings], NULL));
    a->n_strings++;
    return LITHE_OK;
}

static lithe_status parse_attr(const uint8_t *d, size_t n, lithe__onnx_attr *a) {
    pb r = {d, d + n, "AttributeProto"};
    vec fl = {0}, in = {0};
    lithe_status s = LITHE_OK;
    while (s == LITHE_OK && r.p < r.end) {
        uint32_t f = 0, wt = 0;
        s = rd_key(&r, &f, &wt);
        if (s != LITHE_OK) break;
        int64_t v = 0;
        switch (f) {
        case 1: s = rd_str(&r, wt, "name", &a->name, NULL); break;
        case 20:
            s = rd_int(&r, wt, "type", &v);
            if (s == LITHE_OK) a->type = v >= 0 && v < 64 ? (int32_t)v : -1;
            break;
        case 2:
            s = want(&r, wt, WT_I32, "f");
            if (s == LITHE_OK && r.end - r.p < 4) s = bad(&r, "f runs past the end");
            if (s == LITHE_OK) {
                a->f = f32_of(r.p);
                r.p += 4;
            }
            break;
        case 3: s = rd_int(&r, wt, "i", &a->i); break;
        case 4: s = rd_str(&r, wt, "s", &a->s, &a->s_len); break;
        case 5: {
            const uint8_t *td = NULL;
            size_t tn = 0;
            s = want(&r, wt, WT_LEN, "t");
            if (s == LITHE_OK) s = rd_len(&r, &td, &tn);
            if (s == LITHE_OK && a->t) {
                tensor_free(a->t);
                lithe__free(a->t);
                a->t = NULL;
            }
            if (s == LITHE_OK) {
                a->t = lithe__calloc(1, sizeof *a->t);
                s = a->t ? lithe__onnx_parse_tensor(td, tn, a->t) : lithe__oom(WHAT, sizeof *a->t);
                if (s != LITHE_OK) {
                    lithe__free(a->t);
                    a->t = NULL;
                }
            }
            break;
        }
        case 7: s = rd_repeated(&r, wt, 1, "floats", &fl); break;
        case 8: s = rd_repeated(&r, wt, 0, "ints", &in); break;
        case 9: s = rd_strings(&r, wt, a); break;
        case 6: { /* g: kept as bytes, parsed if the graph layer expands the node */
            const uint8_t *gd = NULL;
            size_t gn = 0;
            s = want(&r, wt, WT_LEN, "g");
            if (s == LITHE_OK) s = rd_len(&r, &gd, &gn);
            if (s == LITHE_OK) {
                uint8_t *c = lithe__malloc(gn ? gn : 1);
                if (!c) {
                    s = lithe__oom(WHAT, gn);
                    break;
                }
                if (gn) memcpy(c, gd, gn);
                lithe__free(a->graph);
                a->graph = c;
                a->graph_len = gn;
            }
            break;
        }
        default: s = skip(&r, wt); /* graph and tensor lists: no supported op reads them */
        }
    }
    a->floats = fl.v;
    a->n_floats = fl.n;
    a->ints = in.v;
    a->n_ints = in.n;
    if (s == LITHE_OK && !a->name) s = bad(&r, "an attribute without a name");
    return s;
}

static void node_free(lithe__onnx_node *nd) {
    lithe__free(nd->name);
    lithe__free(nd->op_type);
    lithe__free(nd->domain);
    for (size_t i = 0; i < nd->n_inputs; i++) lithe__free(nd->inputs[i]);
    for (size_t i = 0; i < nd->n_outputs; i++) lithe__free(nd->outputs[i]);
    lithe__free(nd->inputs);
    lithe__free(nd->outputs);
    for (size_t i = 0; i < nd->n_attrs; i++) attr_free(&nd->attrs[i]);
    lithe__free(nd->attrs);
}

static lithe_status push_str(pb *r, uint32_t wt, const char *field, char ***arr, size_t *n, size_t *cap) {
    LITHE__TRY(grow((void **)arr, cap, *n, sizeof **arr));
    (*arr)[*n] = NULL;
    LITHE__TRY(rd_str(r, wt, field, &(*arr)[*n], NULL));
    (*n)++;
    return LITHE_OK;
}

static lithe_status parse_node(const uint8_t *d, size_t n, lithe__onnx_node *nd) {
    pb r = {d, d + n, "NodeProto"};
    size_t cin = 0, cout = 0, cat = 0;
    lithe_status s = LITHE_OK;
    while (s == LITHE_OK && r.p < r.end) {
        uint32_t f = 0, wt = 0;
        s = rd_key(&r, &f, &wt);
        if (s != LITHE_OK) break;
        switch (f) {
        case 1: s = push_str(&r, wt, "input", &nd->inputs, &nd->n_inputs, &cin); break;
        case 2: s = push_str(&r, wt, "output", &nd->outputs, &nd->n_outputs, &cout); break;
        case 3: s = rd_str(&r, wt, "name", &nd->name, NULL); break;
        case 4: s = rd_str(&r, wt, "op_type", &nd->op_type, NULL); break;
        case 7: s = rd_str(&r, wt, "domain", &nd->domain, NULL); break;
        case 5: {
            const uint8_t *ad = NULL;
            size_t an = 0;
            s = want(&r, wt, WT_LEN, "attribute");
            if (s == LITHE_OK) s = rd_len(&r, &ad, &an);
            if (s == LITHE_OK) s = grow((void **)&nd->attrs, &cat, nd->n_attrs, sizeof *nd->attrs);
            if (s == LITHE_OK) {
                memset(&nd->attrs[nd->n_attrs], 0, sizeof *nd->attrs);
                s = parse_attr(ad, an, &nd->attrs[nd->n_attrs]);
                nd->n_attrs++; /* freed with the node either way */
            }
            break;
        }
        default: s = skip(&r, wt);
        }
    }
    if (s == LITHE_OK && !nd->op_type) s = bad(&r, "a node without an op_type");
    return s;
}

/* ---- ValueInfoProto (TypeProto.Tensor, TensorShapeProto) ---- */

static lithe_status parse_shape(const uint8_t *d, size_t n, lithe__onnx_value_info *vi) {
    pb r = {d, d + n, "TensorShapeProto"};
    vi->ndim = 0;
    while (r.p < r.end) {
        uint32_t f = 0, wt = 0;
        LITHE__TRY(rd_key(&r, &f, &wt));
        if (f != 1) {
            LITHE__TRY(skip(&r, wt));
            continue;
        }
        LITHE__TRY(want(&r, wt, WT_LEN, "dim"));
        const uint8_t *dd = NULL;
        size_t dn = 0;
        LITHE__TRY(rd_len(&r, &dd, &dn));
        if (vi->ndim >= LITHE_MAX_DIMS)
            return lithe__fail(LITHE_ERR_UNSUPPORTED, "%s: value '%s' has more than %d dims", WHAT,
                               vi->name ? vi->name : "", LITHE_MAX_DIMS);
        int64_t e = -1;
        pb dr = {dd, dd + dn, "TensorShapeProto.Dimension"};
        while (dr.p < dr.end) {
            uint32_t df = 0, dwt = 0;
            LITHE__TRY(rd_key(&dr, &df, &dwt));
            if (df == 1) {
                LITHE__TRY(rd_int(&dr, dwt, "dim_value", &e));
                /* -1 is what some exporters (tf2onnx) write for a dynamic extent; below it is no shape */
                if (e < -1)
                    return lithe__fail(LITHE_ERR_FORMAT, "%s: value '%s' has dim_value %lld (extents are >= 0, or -1 "
                                                         "for a dynamic one)", WHAT, vi->name ? vi->name : "", (long long)e);
            } else {
                LITHE__TRY(skip(&dr, dwt)); /* dim_param: symbolic */
            }
        }
        vi->dims[vi->ndim++] = e;
    }
    return LITHE_OK;
}

static lithe_status parse_value_info(const uint8_t *d, size_t n, lithe__onnx_value_info *vi) {
    pb r = {d, d + n, "ValueInfoProto"};
    vi->ndim = -1;
    while (r.p < r.end) {
        uint32_t f = 0, wt = 0;
        LITHE__TRY(rd_key(&r, &f, &wt));
        if (f == 1) {
            LITHE__TRY(rd_str(&r, wt, "name", &vi->name, NULL));
        } else if (f == 2) { /* TypeProto */
            LITHE__TRY(want(&r, wt, WT_LEN, "type"));
            const uint8_t *td = NULL;
            size_t tn = 0;
            LITHE__TRY(rd_len(&r, &td, &tn));
            pb tr = {td, td + tn, "TypeProto"};
            while (tr.p < tr.end) {
                uint32_t tf = 0, twt = 0;
                LITHE__TRY(rd_key(&tr, &tf, &twt));
                if (tf != 1) { /* sequences, maps: the graph layer refuses them by elem_type 0 */
                    LITHE__TRY(skip(&tr, twt));
                    continue;
                }
                LITHE__TRY(want(&tr, twt, WT_LEN, "tensor_type"));
                const uint8_t *xd = NULL;
                size_t xn = 0;
                LITHE__TRY(rd_len(&tr, &xd, &xn));
                pb xr = {xd, xd + xn, "TypeProto.Tensor"};
                while (xr.p < xr.end) {
                    uint32_t xf = 0, xwt = 0;
                    LITHE__TRY(rd_key(&xr, &xf, &xwt));
                    if (xf == 1) {
                        int64_t v = 0;
                        LITHE__TRY(rd_int(&xr, xwt, "elem_type", &v));
                        vi->elem_type = v >= 0 && v < 64 ? (int32_t)v : 0;
                    } else if (xf == 2) {
                        LITHE__TRY(want(&xr, xwt, WT_LEN, "shape"));
                        const uint8_t *sd = NULL;
                        size_t sn = 0;
                        LITHE__TRY(rd_len(&xr, &sd, &sn));
                        LITHE__TRY(parse_shape(sd, sn, vi));
                    } else {
                        LITHE__TRY(skip(&xr, xwt));
                    }
                }
            }
        } else {
            LITHE__TRY(skip(&r, wt));
        }
    }
    if (!vi->name) return bad(&r, "a value without a name");
    return LITHE_OK;
}

/* ---- GraphProto, ModelProto ---- */

static lithe_status parse_graph(const uint8_t *d, size_t n, lithe__onnx_model *m) {
    pb r = {d, d + n, "GraphProto"};
    size_t cn = 0, ci = 0, cin = 0, cout = 0;
    while (r.p < r.end) {
        uint32_t f = 0, wt = 0;
        LITHE__TRY(rd_key(&r, &f, &wt));
        if (f != 1 && f != 5 && f != 11 && f != 12) {
            if (f == 15) return bad(&r, "sparse initializers are not supported");
            LITHE__TRY(skip(&r, wt));
            continue;
        }
        LITHE__TRY(want(&r, wt, WT_LEN, f == 1 ? "node" : f == 5 ? "initializer" : f == 11 ? "input" : "output"));
        const uint8_t *sd = NULL;
        size_t sn = 0;
        LITHE__TRY(rd_len(&r, &sd, &sn));
        if (f == 1) {
            LITHE__TRY(grow((void **)&m->nodes, &cn, m->n_nodes, sizeof *m->nodes));
            memset(&m->nodes[m->n_nodes], 0, sizeof *m->nodes);
            m->n_nodes++;
            LITHE__TRY(parse_node(sd, sn, &m->nodes[m->n_nodes - 1]));
        } else if (f == 5) {
            LITHE__TRY(grow((void **)&m->inits, &ci, m->n_inits, sizeof *m->inits));
            LITHE__TRY(lithe__onnx_parse_tensor(sd, sn, &m->inits[m->n_inits]));
            m->n_inits++;
            if (!m->inits[m->n_inits - 1].name) return bad(&r, "an initializer without a name");
        } else {
            lithe__onnx_value_info **arr = f == 11 ? &m->inputs : &m->outputs;
            size_t *cnt = f == 11 ? &m->n_inputs : &m->n_outputs, *cap = f == 11 ? &cin : &cout;
            LITHE__TRY(grow((void **)arr, cap, *cnt, sizeof **arr));
            memset(&(*arr)[*cnt], 0, sizeof **arr);
            (*cnt)++;
            LITHE__TRY(parse_value_info(sd, sn, &(*arr)[*cnt - 1]));
        }
    }
    return LITHE_OK;
}

lithe_status lithe__onnx_parse_graph(const uint8_t *data, size_t len, lithe__onnx_model *out) {
    memset(out, 0, sizeof *out);
    static const uint8_t empty[1];
    lithe_status s = parse_graph(data ? data : empty, data ? len : 0, out);
    if (s != LITHE_OK) lithe__onnx_model_free(out);
    return s;
}
void lithe__onnx_node_free(lithe__onnx_node *n) { node_free(n); }
void lithe__onnx_tensor_free(lithe__onnx_tensor *t) { tensor_free(t); }

void lithe__onnx_model_free(lithe__onnx_model *m) {
    if (!m) return;
    lithe__free(m->producer);
    for (size_t i = 0; i < m->n_nodes; i++) node_free(&m->nodes[i]);
    lithe__free(m->nodes);
    for (size_t i = 0; i < m->n_inits; i++) tensor_free(&m->inits[i]);
    lithe__free(m->inits);
    for (size_t i = 0; i < m->n_inputs; i++) lithe__free(m->inputs[i].name);
    for (size_t i = 0; i < m->n_outputs; i++) lithe__free(m->outputs[i].name);
    lithe__free(m->inputs);
    lithe__free(m->outputs);
    memset(m, 0, sizeof *m);
}

lithe_status lithe__onnx_parse(const uint8_t *data, size_t len, lithe__onnx_model *out) {
    memset(out, 0, sizeof *out);
    if (!data && len) return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: data is NULL", WHAT);
    static const uint8_t empty[1];
    if (!data) data = empty; /* len is 0: no pointer arithmetic on NULL */
    pb r = {data, data + len, "ModelProto"};
    lithe_status s = LITHE_OK;
    bool has_graph = false;
    while (s == LITHE_OK && r.p < r.end) {
        uint32_t f = 0, wt = 0;
        s = rd_key(&r, &f, &wt);
        if (s != LITHE_OK) break;
        if (f == 1) {
            s = rd_int(&r, wt, "ir_version", &out->ir_version);
        } else if (f == 2) {
            s = rd_str(&r, wt, "producer_name", &out->producer, NULL);
        } else if (f == 7) {
            const uint8_t *gd = NULL;
            size_t gn = 0;
            if (has_graph) s = bad(&r, "two graphs");
            if (s == LITHE_OK) s = want(&r, wt, WT_LEN, "graph");
            if (s == LITHE_OK) s = rd_len(&r, &gd, &gn);
            if (s == LITHE_OK) s = parse_graph(gd, gn, out);
            has_graph = true;
        } else if (f == 8) { /* OperatorSetIdProto: domain 1, version 2 */
            const uint8_t *od = NULL;
            size_t on = 0;
            s = want(&r, wt, WT_LEN, "opset_import");
            if (s == LITHE_OK) s = rd_len(&r, &od, &on);
            pb orr = {od, od ? od + on : od, "OperatorSetIdProto"}; /* od NULL: s already failed */
            char *domain = NULL;
            int64_t version = 0;
            while (s == LITHE_OK && orr.p < orr.end) {
                uint32_t of = 0, owt = 0;
                s = rd_key(&orr, &of, &owt);
                if (s != LITHE_OK) break;
                if (of == 1) s = rd_str(&orr, owt, "domain", &domain, NULL);
                else if (of == 2) s = rd_int(&orr, owt, "version", &version);
                else s = skip(&orr, owt);
            }
            if (s == LITHE_OK && (!domain || !*domain || !strcmp(domain, "ai.onnx"))) out->opset = version;
            lithe__free(domain);
        } else {
            s = skip(&r, wt);
        }
    }
    if (s == LITHE_OK && !has_graph) s = lithe__fail(LITHE_ERR_FORMAT, "%s: the ModelProto holds no graph", WHAT);
    if (s != LITHE_OK) lithe__onnx_model_free(out);
    return s;
}

const lithe__onnx_attr *lithe__onnx_attr_get(const lithe__onnx_node *n, const char *name) {
    for (size_t i = n->n_attrs; i-- > 0;) /* the last of duplicates wins */
        if (!strcmp(n->attrs[i].name, name)) return &n->attrs[i];
    return NULL;
}

