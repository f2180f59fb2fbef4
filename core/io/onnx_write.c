/* lithe_model_save_onnx: a model as an ONNX ModelProto.
 * - A graph node (an imported ONNX / TF.js model, "onnx_graph.v1") is written back as the model it
 *   was loaded from — the bytes its `onnx` attr keeps: the original nodes (never the fused ones the
 *   graph layer runs), names, opset, attributes, inputs, outputs and metadata — with every
 *   initializer that is a param replaced by the param's current (fine-tuned) value, in the
 *   initializer's own data type (float32, float64, float16, bfloat16). The other initializers
 *   (int64 shapes, constants) are copied byte for byte. lithe folds no BatchNorm at load: a Conv +
 *   BatchNormalization stays two nodes, and the running statistics are written as they are.
 * - A native tree is lowered to standard operators at opset 17 (onnx_lower.c).
 * The file is written atomically (temporary file, fsync, rename), as .lithe files are. */
#include "onnx_write.h"

#include <stdio.h>
#include <string.h>

#define WHAT "lithe_model_save_onnx"

/* ---- a field walker over the node's own bytes (parsed at load, still checked here) ---- */

static bool rd_varint(rd *r, uint64_t *v) {
    *v = 0;
    for (int sh = 0; sh < 64 && r->p < r->end; sh += 7) {
        uint8_t c = *r->p++;
        *v |= (uint64_t)(c & 0x7f) << sh;
        if (!(c & 0x80)) return true;
    }
    return false;
}

/* The next field: its number, wire type, where it starts (key included) and, for a
 * length-delimited one, its payload. */
lithe_status lithe__ox_field(rd *r, uint32_t *field, uint32_t *wt, const uint8_t **start, const uint8_t **d,
                             size_t *n) {
    *start = r->p;
    uint64_t key = 0, v = 0;
    if (!rd_varint(r, &key)) goto bad;
    *field = (uint32_t)(key >> 3);
    *wt = (uint32_t)(key & 7);
    *d = NULL;
    *n = 0;
    switch (*wt) {
    case 0: if (!rd_varint(r, &v)) goto bad; return LITHE_OK;
    case 1: if (r->end - r->p < 8) goto bad; r->p += 8; return LITHE_OK;
    case 5: if (r->end - r->p < 4) goto bad; r->p += 4; return LITHE_OK;
    case 2:
        if (!rd_varint(r, &v) || v > (uint64_t)(r->end - r->p)) goto bad;
        *d = r->p;
        *n = (size_t)v;
        r->p += v;
        return LITHE_OK;
    default: break;
    }
bad:
    return lithe__fail(LITHE_ERR_FORMAT, "%s: the graph node's ONNX bytes are malformed", WHAT);
}

/* ---- float32 to the initializer's own type ---- */

static uint16_t f32_to_half(float f) { /* round to nearest even; overflow to inf; NaN kept */
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u, a = x & 0x7fffffffu;
    if (a >= 0x7f800000u) return (uint16_t)(sign | 0x7c00u | (a > 0x7f800000u ? 0x200u : 0));
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds past 65504 */
    if (a < 0x38800000u) { /* a half subnormal (or zero): a * 2^24 rounded */
        if (a < 0x33000000u) return (uint16_t)sign;
        uint32_t mant = (a & 0x7fffffu) | 0x800000u, shift = 126u - (a >> 23); /* 14..24 */
        uint32_t q = mant >> shift, rem = mant & ((1u << shift) - 1u), half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (q & 1u))) q++;
        return (uint16_t)(sign | q);
    }
    uint32_t e = (a >> 23) - 112u, mant = a & 0x7fffffu, q = e << 10 | mant >> 13, rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (q & 1u))) q++;
    return (uint16_t)(sign | q);
}
static uint16_t f32_to_bf16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
    return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

/* raw_data for values v[0..n) in ONNX data_type dt (FLOAT, DOUBLE, FLOAT16, BFLOAT16), little-endian. */
static void raw_values(wb *t, int64_t dt, const float *v, int64_t n) {
    size_t es = dt == LITHE__ONNX_DOUBLE ? 8 : dt == LITHE__ONNX_FLOAT ? 4 : 2;
    wb_varint(t, (uint64_t)(9u << 3 | 2u));
    wb_varint(t, (uint64_t)n * es);
    for (int64_t k = 0; k < n && !t->oom; k++) {
        uint8_t o[8];
        uint64_t u = 0;
        if (dt == LITHE__ONNX_DOUBLE) {
            double d = v[k];
            memcpy(&u, &d, 8);
        } else if (dt == LITHE__ONNX_FLOAT) {
            uint32_t w;
            memcpy(&w, &v[k], 4);
            u = w;
        } else {
            u = dt == LITHE__ONNX_FLOAT16 ? f32_to_half(v[k]) : f32_to_bf16(v[k]);
        }
        for (size_t i = 0; i < es; i++) o[i] = (uint8_t)(u >> (8 * i));
        wb_put(t, o, es);
    }
}

/* ---- a graph node: its model bytes with the params' current values ---- */

lithe_status lithe__ox_tensor(lithe_model *m, const uint8_t *d, size_t n, const char *prefix, bool *written, wb *out) {
    const uint8_t *nm = NULL;
    size_t nl = 0;
    int64_t dt = 0, numel = 1;
    rd r = {d, d + n};
    while (r.p < r.end) {
        uint32_t f = 0, wt = 0;
        const uint8_t *st = NULL, *pd = NULL;
        size_t pn = 0;
        LITHE__TRY(lithe__ox_field(&r, &f, &wt, &st, &pd, &pn));
        if (f == 8 && wt == 2) nm = pd, nl = pn;
        rd v = {st, r.p};
        uint64_t x = 0;
        if ((f == 2 || f == 1) && wt == 0 && rd_varint(&v, &x) && rd_varint(&v, &x)) {
            if (f == 2) dt = (int64_t)x;
            else numel *= (int64_t)x;
        }
    }
    size_t pl = prefix ? strlen(prefix) : 0;
    char *name = lithe__malloc(pl + nl + 1);
    if (!name) return lithe__oom(WHAT, pl + nl + 1);
    memcpy(name, prefix ? prefix : "", pl);
    if (nl) memcpy(name + pl, nm, nl);
    name[pl + nl] = '\0';
    lithe__param *p = nl ? lithe__model_find_param(m, name + pl) : NULL;
    bool floaty = dt == LITHE__ONNX_FLOAT || dt == LITHE__ONNX_DOUBLE || dt == LITHE__ONNX_FLOAT16 ||
                  dt == LITHE__ONNX_BFLOAT16;
    bool fresh = p && p->value && floaty;
    lithe_status s = LITHE_OK;
    lithe_tensor *h = NULL;
    if (!fresh && !prefix) {
        wb_bytes(out, 5, d, n);
        goto done;
    }
    if (fresh && (p->value->numel != numel || p->value->dtype != LITHE_F32)) {
        s = lithe__fail(LITHE_ERR_SHAPE, "%s: param '%s' of %s holds %lld values, its initializer %lld", WHAT, name + pl,
                        m->name, (long long)p->value->numel, (long long)numel);
        goto done;
    }
    if (fresh && (s = lithe_tensor_to_backend(p->value, NULL, &h)) != LITHE_OK) goto done; /* a host copy */
    if (fresh && written) written[p - m->params] = true;
    wb t = {0};
    if (prefix) wb_str(&t, 8, name);
    for (rd q = {d, d + n}; s == LITHE_OK && q.p < q.end;) {
        uint32_t f = 0, wt = 0;
        const uint8_t *st = NULL, *pd = NULL;
        size_t pn = 0;
        s = lithe__ox_field(&q, &f, &wt, &st, &pd, &pn);
        if (s != LITHE_OK || (f == 8 && prefix)) continue;
        /* a param's values go in raw_data: keep dims 1, data_type 2, segment 3, name 8, doc_string
         * 12; drop the data and external data fields (4-7, 9-11, 13, 14) */
        if (!fresh || f == 1 || f == 2 || f == 3 || f == 8 || f == 12) wb_put(&t, st, (size_t)(q.p - st));
    }
    if (fresh) raw_values(&t, dt, lithe_tensor_data(h), numel);
    if (s == LITHE_OK) wb_sub(out, 5, &t);
    else wb_free(&t);
done:
    lithe_tensor_release(h);
    lithe__free(name);
    return s;
}
/* Every param written? A param with no initializer of its name in the bytes (a Loop / Scan body
 * that the load unrolled keeps one copy per iteration) would be left at its loaded value: refused. */
lithe_status lithe__ox_all_written(const lithe_model *m, const bool *written) {
    for (size_t i = 0; i < m->n_params; i++)
        if (!written[i] && m->params[i].value)
            return lithe__fail(LITHE_ERR_UNSUPPORTED, "%s: %s: param '%s' has no initializer of that name in the graph's "
                                                      "bytes (a Loop or Scan body unrolled at load keeps a copy per "
                                                      "iteration): its trained value cannot be written back", WHAT,
                               m->name, m->params[i].name);
    return LITHE_OK;
}

/* ModelProto, GraphProto (subgraphs of If / Loop / Scan included), NodeProto, AttributeProto. */
enum { K_MODEL, K_GRAPH, K_NODE, K_ATTR };

/* Copies message d[0..n) of kind into out, every initializer of every graph in it through
 * lithe__ox_tensor. */
static lithe_status walk_msg(lithe_model *m, bool *written, int kind, int depth, const uint8_t *d, size_t n, wb *out) {
    if (depth > 64) return lithe__fail(LITHE_ERR_FORMAT, "%s: %s: graphs nested over 64 deep", WHAT, m->name);
    for (rd r = {d, d + n}; r.p < r.end;) {
        uint32_t f = 0, wt = 0;
        const uint8_t *st = NULL, *pd = NULL;
        size_t pn = 0;
        LITHE__TRY(lithe__ox_field(&r, &f, &wt, &st, &pd, &pn));
        int sub = -1;
        if (wt == 2 && kind == K_GRAPH && f == 5) { /* initializer */
            LITHE__TRY(lithe__ox_tensor(m, pd, pn, NULL, written, out));
            continue;
        }
        if (wt == 2) {
            if (kind == K_MODEL && f == 7) sub = K_GRAPH;                   /* graph */
            else if (kind == K_GRAPH && f == 1) sub = K_NODE;               /* node */
            else if (kind == K_NODE && f == 5) sub = K_ATTR;                /* attribute */
            else if (kind == K_ATTR && (f == 6 || f == 11)) sub = K_GRAPH;  /* g, graphs */
        }
        if (sub < 0) {
            wb_put(out, st, (size_t)(r.p - st));
            continue;
        }
        wb inner = {0};
        lithe_status s = walk_msg(m, written, sub, depth + 1, pd, pn, &inner);
        if (s != LITHE_OK) {
            wb_free(&inner);
            return s;
        }
        wb_sub(out, f, &inner);
    }
    return out->oom ? lithe__oom(WHAT, out->n) : LITHE_OK;
}

static lithe_status graph_node_bytes(lithe_model *m, wb *out) {
    lithe_tensor *bytes = NULL;
    LITHE__TRY(lithe_model_get_attr_tensor(m, "onnx", &bytes));
    if (bytes->dtype != LITHE_U8 || bytes->ndim != 1 || !lithe_tensor_is_contiguous(bytes))
        return lithe__fail(LITHE_ERR_FORMAT, "%s: %s: the 'onnx' attr must be a 1-D uint8 tensor", WHAT, m->name);
    bool *written = lithe__calloc(m->n_params ? m->n_params : 1, sizeof *written);
    if (!written) return lithe__oom(WHAT, m->n_params);
    lithe_status s = walk_msg(m, written, K_MODEL, 0, lithe_tensor_data(bytes), (size_t)bytes->numel, out);
    if (s == LITHE_OK) s = lithe__ox_all_written(m, written);
    lithe__free(written);
    return s;
}

/* ---- a native tree: its lowered graph in a ModelProto ---- */

void lithe__ox_free(lithe__ox *o) {
    wb_free(&o->nodes);
    wb_free(&o->inits);
    wb_free(&o->inputs);
    wb_free(&o->outputs);
    lithe__free(o->seen);
    lithe__free(o->walk);
    wb_free(&o->in_type);
    wb_free(&o->out_type);
    memset(o, 0, sizeof *o);
}

static lithe_status native_bytes(lithe_model *m, wb *out) {
    lithe__ox o = {0};
    lithe_status s = lithe__onnx_lower(&o, m);
    if (s == LITHE_OK) {
        wb g = {0}, opset = {0};
        wb_put(&g, o.nodes.p, o.nodes.n);
        wb_str(&g, 2, "lithe");
        wb_put(&g, o.inits.p, o.inits.n);
        wb_put(&g, o.inputs.p, o.inputs.n);
        wb_put(&g, o.outputs.p, o.outputs.n);
        if (o.nodes.oom || o.inits.oom || o.inputs.oom || o.outputs.oom) g.oom = true;
        wb_int(out, 1, 8); /* ir_version 8: opset 17's */
        wb_str(out, 2, "lithe");
        wb_str(out, 3, lithe_version());
        wb_sub(out, 7, &g);
        wb_str(&opset, 1, "");
        wb_int(&opset, 2, LITHE__ONNX_EXPORT_OPSET);
        wb_sub(out, 8, &opset);
        if (out->oom) s = lithe__oom(WHAT, out->n);
    }
    lithe__ox_free(&o);
    return s;
}

static lithe_status save_bytes_body(lithe_model *m, uint8_t **out, size_t *len) {
    wb b = {0};
    const char *layer = lithe_model_layer_type(m);
    lithe_status s = layer && !strcmp(layer, "onnx_graph.v1") ? graph_node_bytes(m, &b) : native_bytes(m, &b);
    if (s == LITHE_OK && b.oom) s = lithe__oom(WHAT, b.n);
    if (s != LITHE_OK) {
        wb_free(&b);
        return s;
    }
    if (!b.p) b.p = lithe__malloc(1); /* an empty model still owns a buffer */
    if (!b.p) return lithe__oom(WHAT, 1);
    *out = b.p;
    *len = b.n;
    return LITHE_OK;
}

lithe_status lithe_model_save_onnx_bytes(lithe_model *m, uint8_t **out, size_t *len) {
    LITHE__CHECK_ARG(out && len, "lithe_model_save_onnx_bytes", "out or len is NULL");
    *out = NULL;
    *len = 0;
    LITHE__CHECK_ARG(m, "lithe_model_save_onnx_bytes", "model is NULL");
    bool adapted = false;
    LITHE__TRY(lithe__lora_any(m, &adapted));
    if (adapted) /* the adapters live on the activations: the file's weights would be the base alone */
        return lithe__fail(LITHE_ERR_STATE, "lithe_model_save_onnx_bytes: the model has LoRA adapters; merge them first "
                           "(lithe_model_merge_lora)");
    LITHE__TRY(lithe__enter_tree(m, "lithe_model_save_onnx_bytes"));
    lithe_status s = save_bytes_body(m, out, len);
    lithe__leave_tree(m);
    return s;
}

lithe_status lithe_model_save_onnx(lithe_model *m, const char *path) {
    LITHE__CHECK_ARG(path, "lithe_model_save_onnx", "path is NULL");
    uint8_t *b = NULL;
    size_t n = 0;
    LITHE__TRY(lithe_model_save_onnx_bytes(m, &b, &n));
    lithe_status s = lithe__write_file_atomic(path, b, n);
    lithe__free(b);
    return s;
}
