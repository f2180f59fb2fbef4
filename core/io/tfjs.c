/* The TensorFlow.js layers format: a `model.json` ("layers-model": the Keras topology under
 * modelTopology, the weight shards' manifest under weightsManifest) and its binary shards, lowered
 * to an ONNX graph (opset 13) that the graph layer runs. One mechanism: the lowered ModelProto
 * bytes go to lithe_onnx_load_bytes, so the result is an ordinary `onnx_graph.v1` node that
 * predicts, trains, saves to .lithe and runs on every backend as an imported ONNX model does.
 *
 * Layout. TF.js is channels-last (NHWC); lithe's Conv and pooling are NCHW. Each Keras tensor of
 * rank 4 is kept in whichever layout its producer made, and a Transpose is emitted (once per
 * tensor) where a consumer needs the other one: Conv2D / pooling / BatchNormalization take NCHW,
 * Dense, Flatten, Softmax, Reshape and the graph's inputs and outputs NHWC, so Dense weights after
 * a Flatten keep TF.js's NHWC order. Weights keep their Keras layout and names (a Conv2D kernel
 * is (KH, KW, C, F), transposed to ONNX's (F, C, KH, KW) by a Transpose node in the graph), so the
 * params of the lithe node are TF.js's weights, element for element.
 *
 * Hostile input: the JSON reader bounds everything; here every shape, count, shard size and
 * offset is checked, and a malformed model is LITHE_ERR_FORMAT (or LITHE_ERR_UNSUPPORTED for
 * layers lithe lacks: all of them listed at once) naming the layer and the numbers. */
#include "json.h"
#include "onnx.h" /* lithe__half_to_f32 */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WHAT "tfjs"
#define NAME_MAX_LEN 200 /* longest layer / weight name taken: value names are built from them */
#define MAX_LAYERS 4096
#define MAX_TENSORS 8192

/* ---- a protobuf writer (the wire format onnx.c reads) ---- */

typedef struct wb {
    uint8_t *p;
    size_t n, cap;
    bool oom;
} wb;

static void wb_put(wb *b, const void *d, size_t n) {
    if (b->oom || !n) return;
    if (n > SIZE_MAX / 4 - b->n) { /* far above what a checked model reaches; no doubling below wraps */
        b->oom = true;
        return;
    }
    if (b->n + n > b->cap) {
        size_t nc = b->cap ? b->cap : 64;
        while (nc < b->n + n) nc *= 2;
        uint8_t *p = lithe__realloc(b->p, nc);
        if (!p) {
            b->oom = true;
            return;
        }
        b->p = p;
        b->cap = nc;
    }
    memcpy(b->p + b->n, d, n);
    b->n += n;
}
static void wb_free(wb *b) {
    lithe__free(b->p);
    memset(b, 0, sizeof *b);
}
static void wb_varint(wb *b, uint64_t v) {
    uint8_t t[10];
    size_t k = 0;
    do {
        t[k] = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (v) t[k] |= 0x80;
        k++;
    } while (v);
    wb_put(b, t, k);
}
static void wb_key(wb *b, unsigned field, unsigned wt) { wb_varint(b, (uint64_t)field << 3 | wt); }
static void wb_int(wb *b, unsigned field, int64_t v) {
    wb_key(b, field, 0);
    wb_varint(b, (uint64_t)v);
}
static void wb_bytes(wb *b, unsigned field, const void *d, size_t n) {
    wb_key(b, field, 2);
    wb_varint(b, n);
    wb_put(b, d, n);
}
static void wb_str(wb *b, unsigned field, const char *s) { wb_bytes(b, field, s, strlen(s)); }
/* Appends sub as a length-delimited field and frees it. */
static void wb_sub(wb *b, unsigned field, wb *sub) {
    if (sub->oom) b->oom = true;
    wb_bytes(b, field, sub->p, sub->n);
    wb_free(sub);
}

/* AttributeProto: name 1, f 2, i 3, s 4, t 5, floats 7, ints 8, type 20. */
static void at_int(wb *attrs, const char *name, int64_t v) {
    wb a = {0};
    wb_str(&a, 1, name);
    wb_int(&a, 3, v);
    wb_int(&a, 20, 2);
    wb_sub(attrs, 5, &a);
}
static void at_ints(wb *attrs, const char *name, const int64_t *v, size_t n) {
    wb a = {0}, packed = {0};
    wb_str(&a, 1, name);
    for (size_t i = 0; i < n; i++) wb_varint(&packed, (uint64_t)v[i]);
    wb_sub(&a, 8, &packed);
    wb_int(&a, 20, 7);
    wb_sub(attrs, 5, &a);
}
static void le32(uint8_t *o, uint32_t u) {
    for (int i = 0; i < 4; i++) o[i] = (uint8_t)(u >> (8 * i));
}
static void at_float(wb *attrs, const char *name, float f) {
    wb a = {0};
    uint32_t u;
    uint8_t o[4];
    memcpy(&u, &f, 4);
    le32(o, u);
    wb_str(&a, 1, name);
    wb_key(&a, 2, 5);
    wb_put(&a, o, 4);
    wb_int(&a, 20, 1);
    wb_sub(attrs, 5, &a);
}
static void at_str(wb *attrs, const char *name, const char *s) {
    wb a = {0};
    wb_str(&a, 1, name);
    wb_str(&a, 4, s);
    wb_int(&a, 20, 3);
    wb_sub(attrs, 5, &a);
}

/* TensorProto: dims 1, data_type 2, name 8, raw_data 9. float32 (1) or int64 (7). */
static void tensor_proto(wb *t, const char *name, int ndim, const int64_t *dims, const float *f, const int64_t *iv,
                         int64_t numel) {
    for (int d = 0; d < ndim; d++) wb_int(t, 1, dims[d]);
    wb_int(t, 2, f ? 1 : 7);
    if (name) wb_str(t, 8, name);
    size_t es = f ? 4 : 8;
    wb_key(t, 9, 2);
    wb_varint(t, (uint64_t)numel * es);
    for (int64_t k = 0; k < numel && !t->oom; k++) {
        uint8_t o[8];
        if (f) {
            uint32_t u;
            memcpy(&u, &f[k], 4);
            le32(o, u);
        } else {
            uint64_t u = (uint64_t)iv[k];
            for (int i = 0; i < 8; i++) o[i] = (uint8_t)(u >> (8 * i));
        }
        wb_put(t, o, es);
    }
}

/* ---- the weights ---- */

typedef struct weight {
    char name[NAME_MAX_LEN + 1];
    int ndim;
    int64_t shape[LITHE_MAX_DIMS];
    int64_t numel;
    float *data; /* numel values, dequantized */
    bool emitted;
} weight;

static bool is_str(const js_val *v, const char *s) { return v && v->type == JS_STR && !strcmp(v->str, s); }

/* A number as a finite double: JS_NUM only. */
static bool num_of(const js_val *v, double *out) {
    if (!v || v->type != JS_NUM || !isfinite(v->num)) return false;
    *out = v->num;
    return true;
}

/* The weights of the manifest, decoded from `data` (the shards of every group concatenated in
 * manifest order). Every size is checked: the bytes the entries need must be exactly the bytes. */
static lithe_status read_weights(const js_val *manifest, const uint8_t *data, size_t len, const size_t *group_bytes,
                                 size_t n_groups, weight **out, size_t *n_out) {
    *out = NULL;
    *n_out = 0;
    if (!manifest || manifest->type != JS_ARR)
        return lithe__fail(LITHE_ERR_FORMAT, "%s: model.json has no weightsManifest array", WHAT);
    size_t total = 0;
    for (size_t g = 0; g < manifest->len; g++) {
        const js_val *ws = js_get(&manifest->items[g], "weights");
        if (!ws || ws->type != JS_ARR)
            return lithe__fail(LITHE_ERR_FORMAT, "%s: weightsManifest[%zu] has no weights array", WHAT, g);
        if (ws->len > MAX_TENSORS || total + ws->len > MAX_TENSORS)
            return lithe__fail(LITHE_ERR_FORMAT, "%s: more than %d weights", WHAT, MAX_TENSORS);
        total += ws->len;
    }
    weight *w = lithe__calloc(total + 1, sizeof *w);
    if (!w) return lithe__oom(WHAT, (total + 1) * sizeof *w);
    size_t nw = 0, off = 0, group_end = 0;
    lithe_status s = LITHE_OK;
    if (group_bytes && n_groups != manifest->len)
        s = lithe__fail(LITHE_ERR_FORMAT, "%s: %zu shard groups for %zu manifest groups", WHAT, n_groups, manifest->len);
    for (size_t g = 0; s == LITHE_OK && g < manifest->len; g++) {
        const js_val *ws = js_get(&manifest->items[g], "weights");
        size_t group_start = off;
        if (group_bytes) group_end += group_bytes[g];
        for (size_t i = 0; s == LITHE_OK && i < ws->len; i++) {
            const js_val *e = &ws->items[i], *name = js_get(e, "name"), *shape = js_get(e, "shape"),
                         *dtype = js_get(e, "dtype"), *q = js_get(e, "quantization");
            weight *t = &w[nw];
            if (!name || name->type != JS_STR || !name->len || name->len > NAME_MAX_LEN || strlen(name->str) != name->len) {
                s = lithe__fail(LITHE_ERR_FORMAT, "%s: weight %zu of group %zu has no name (or one longer than %d bytes)",
                                WHAT, i, g, NAME_MAX_LEN);
                break;
            }
            snprintf(t->name, sizeof t->name, "%s", name->str);
            for (size_t j = 0; j < nw; j++)
                if (!strcmp(w[j].name, t->name)) s = lithe__fail(LITHE_ERR_FORMAT, "%s: weight '%s' appears twice", WHAT, t->name);
            if (s != LITHE_OK) break;
            if (!shape || shape->type != JS_ARR || shape->len > LITHE_MAX_DIMS) {
                s = lithe__fail(LITHE_ERR_FORMAT, "%s: weight '%s' has no shape array of at most %d extents", WHAT, t->name,
                                LITHE_MAX_DIMS);
                break;
            }
            t->ndim = (int)shape->len;
            t->numel = 1;
            for (int d = 0; d < t->ndim; d++) {
                const js_val *x = &shape->items[d];
                if (x->type != JS_NUM || !x->is_int || x->i < 0 || x->i > ((int64_t)1 << 32) ||
                    (x->i && t->numel > (((int64_t)1 << 32) / x->i))) {
                    s = lithe__fail(LITHE_ERR_FORMAT, "%s: weight '%s' has a bad extent at axis %d (or more than 2^32 "
                                                      "elements)", WHAT, t->name, d);
                    break;
                }
                t->shape[d] = x->i;
                t->numel *= x->i;
            }
            if (s != LITHE_OK) break;
            const char *dt = dtype && dtype->type == JS_STR ? dtype->str : "float32";
            const char *qdt = NULL;
            double scale = 1, qmin = 0;
            if (q && q->type != JS_NULL) {
                const js_val *qd = js_get(q, "dtype");
                qdt = qd && qd->type == JS_STR ? qd->str : "";
                if (strcmp(qdt, "float16") && (!num_of(js_get(q, "scale"), &scale) || !num_of(js_get(q, "min"), &qmin))) {
                    s = lithe__fail(LITHE_ERR_FORMAT, "%s: weight '%s' is quantized without a numeric scale and min", WHAT,
                                    t->name);
                    break;
                }
            }
            size_t es;
            if (qdt) es = !strcmp(qdt, "uint8") ? 1 : !strcmp(qdt, "uint16") || !strcmp(qdt, "float16") ? 2 : 0;
            else es = !strcmp(dt, "float32") || !strcmp(dt, "int32") ? 4 : !strcmp(dt, "bool") ? 1 : 0;
            if (!es) {
                s = lithe__fail(LITHE_ERR_UNSUPPORTED, "%s: weight '%s' has dtype '%s'%s%s; lithe reads float32, int32, "
                                                       "bool and uint8 / uint16 / float16 quantization", WHAT, t->name,
                                dt, qdt ? ", quantized as " : "", qdt ? qdt : "");
                break;
            }
            uint64_t need = (uint64_t)t->numel * es;
            if (need > len - off) {
                s = lithe__fail(LITHE_ERR_FORMAT, "%s: weight '%s' needs %llu bytes at offset %zu, the shards hold %zu "
                                                  "bytes in all (a short or missing shard?)", WHAT, t->name,
                                (unsigned long long)need, off, len);
                break;
            }
            if ((uint64_t)t->numel > (SIZE_MAX - 1) / sizeof(float)) { /* 32-bit size_t (WebAssembly) */
                s = lithe__fail(LITHE_ERR_FORMAT, "%s: weight '%s' has more elements than this platform addresses", WHAT,
                                t->name);
                break;
            }
            t->data = lithe__malloc((size_t)t->numel * sizeof(float) + 1);
            if (!t->data) {
                s = lithe__oom(WHAT, (size_t)t->numel * sizeof(float));
                break;
            }
            nw++;
            const uint8_t *b = data + off;
            for (int64_t k = 0; k < t->numel; k++) {
                const uint8_t *p = b + (size_t)k * es;
                float v;
                if (qdt && !strcmp(qdt, "float16")) v = lithe__half_to_f32((uint16_t)(p[0] | p[1] << 8));
                else if (qdt) v = (float)((es == 1 ? p[0] : (p[0] | p[1] << 8)) * scale + qmin);
                else if (es == 1) v = p[0] ? 1.0f : 0.0f;
                else {
                    uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
                    if (!strcmp(dt, "int32")) v = (float)(int32_t)u;
                    else memcpy(&v, &u, 4);
                }
                t->data[k] = v;
            }
            off += (size_t)need;
        }
        if (s == LITHE_OK && group_bytes && off != group_end)
            s = lithe__fail(LITHE_ERR_FORMAT, "%s: the weights of weightsManifest[%zu] take %zu bytes, its shards hold %zu", WHAT,
                            g, off - group_start, group_bytes[g]);
    }
    if (s == LITHE_OK && off != len)
        s = lithe__fail(LITHE_ERR_FORMAT, "%s: the manifest's weights take %zu bytes, the shards hold %zu", WHAT, off, len);
    if (s != LITHE_OK) {
        for (size_t i = 0; i < nw; i++) lithe__free(w[i].data);
        lithe__free(w);
        return s;
    }
    *out = w;
    *n_out = nw;
    return LITHE_OK;
}

/* ---- lowering the Keras topology ---- */

/* A Keras tensor: its value in the NHWC (Keras) layout and / or, for rank 4, in NCHW ("" until
 * made); its shape in Keras order, -1 where unknown. */
typedef struct ktensor {
    char layer[NAME_MAX_LEN + 1];
    int64_t node, index;
    char nhwc[NAME_MAX_LEN + 48], nchw[NAME_MAX_LEN + 48];
    int rank;
    int64_t shape[LITHE_MAX_DIMS];
} ktensor;

typedef struct lower {
    wb nodes, inits, inputs, outputs;
    weight *w;
    size_t n_w;
    ktensor *kt;
    size_t n_kt;
    size_t counter;
    const char *layer, *cls; /* the layer being lowered, for errors */
    bool layer_frozen;       /* its config says "trainable": false */
    bool one_d;              /* a 1-D layer lowered as its 2-D twin over (N, 1, T, C) */
    wb frozen;               /* the names of its weights, each NUL-terminated: frozen after the load */
} lower;

static lithe_status lfail(const lower *L, lithe_status s, const char *fmt, ...) LITHE__PRINTF(3, 4);
static lithe_status lfail(const lower *L, lithe_status s, const char *fmt, ...) {
    char why[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    return lithe__fail(s, "%s: layer '%s' (%s): %s", WHAT, L->layer ? L->layer : "", L->cls ? L->cls : "", why);
}

/* A fresh value name "<layer>/<what>:<n>". */
static void fresh(lower *L, const char *what, char *buf, size_t cap) {
    snprintf(buf, cap, "%s/%s:%zu", L->layer ? L->layer : "", what, ++L->counter);
}

/* A node: op over ins, one output; attrs (NULL or a buffer of AttributeProto fields) consumed. */
static void node(lower *L, const char *op, const char *const *ins, size_t nin, const char *out, wb *attrs) {
    wb n = {0};
    for (size_t i = 0; i < nin; i++) wb_str(&n, 1, ins[i]);
    wb_str(&n, 2, out);
    wb_str(&n, 3, out);
    wb_str(&n, 4, op);
    if (attrs) {
        if (attrs->oom) n.oom = true;
        wb_put(&n, attrs->p, attrs->n);
        wb_free(attrs);
    }
    wb_sub(&L->nodes, 1, &n);
}

/* A one-input node into a fresh value, written to out. */
static void unary(lower *L, const char *op, const char *in, char *out, size_t cap, wb *attrs) {
    char o[NAME_MAX_LEN + 48];
    fresh(L, op, o, sizeof o);
    node(L, op, &in, 1, o, attrs);
    snprintf(out, cap, "%s", o);
}
static void binary(lower *L, const char *op, const char *a, const char *b, char *out, size_t cap) {
    char o[NAME_MAX_LEN + 48];
    const char *ins[2] = {a, b};
    fresh(L, op, o, sizeof o);
    node(L, op, ins, 2, o, NULL);
    snprintf(out, cap, "%s", o);
}

/* A Constant node holding a float (ndim 0: a scalar) or int64 tensor; its name into out. */
static void constant(lower *L, int ndim, const int64_t *dims, const float *f, const int64_t *iv, int64_t numel, char *out,
                     size_t cap) {
    wb t = {0}, a = {0}, attrs = {0};
    tensor_proto(&t, NULL, ndim, dims, f, iv, numel);
    wb_str(&a, 1, "value");
    wb_sub(&a, 5, &t);
    wb_int(&a, 20, 4);
    wb_sub(&attrs, 5, &a);
    fresh(L, "const", out, cap);
    node(L, "Constant", NULL, 0, out, &attrs);
}
static void scalar(lower *L, float v, char *out, size_t cap) { constant(L, 0, NULL, &v, NULL, 1, out, cap); }

static void transpose(lower *L, const char *in, const int64_t *perm, int n, char *out, size_t cap) {
    wb attrs = {0};
    at_ints(&attrs, "perm", perm, (size_t)n);
    unary(L, "Transpose", in, out, cap, &attrs);
}

static const char *as_nchw(lower *L, ktensor *t) {
    if (!t->nchw[0]) transpose(L, t->nhwc, (const int64_t[]){0, 3, 1, 2}, 4, t->nchw, sizeof t->nchw);
    return t->nchw;
}
static const char *as_nhwc(lower *L, ktensor *t) {
    if (!t->nhwc[0]) transpose(L, t->nchw, (const int64_t[]){0, 2, 3, 1}, 4, t->nhwc, sizeof t->nhwc);
    return t->nhwc;
}

/* The weight "<layer>/<suffix>" (or ".../<layer>/<suffix>" in a nested scope), emitted as an
 * initializer on first use; NULL when the manifest lacks it. */
static weight *find_weight(lower *L, const char *suffix) {
    char want[2 * NAME_MAX_LEN + 8];
    snprintf(want, sizeof want, "%s/%s", L->layer, suffix);
    size_t wl = strlen(want);
    weight *hit = NULL;
    for (size_t i = 0; i < L->n_w && !hit; i++)
        if (!strcmp(L->w[i].name, want)) hit = &L->w[i];
    for (size_t i = 0; i < L->n_w && !hit; i++) {
        size_t nl = strlen(L->w[i].name);
        if (nl > wl && L->w[i].name[nl - wl - 1] == '/' && !strcmp(L->w[i].name + nl - wl, want)) hit = &L->w[i];
    }
    if (hit && L->layer_frozen) wb_put(&L->frozen, hit->name, strlen(hit->name) + 1);
    if (hit && !hit->emitted) {
        wb t = {0};
        tensor_proto(&t, hit->name, hit->ndim, hit->shape, hit->data, NULL, hit->numel);
        wb_sub(&L->inits, 5, &t);
        hit->emitted = true;
    }
    return hit;
}

static void shape_str(char *buf, size_t cap, int n, const int64_t *s) {
    size_t l = (size_t)snprintf(buf, cap, "(");
    for (int d = 0; d < n && l < cap; d++) {
        if (s[d] < 0) l += (size_t)snprintf(buf + l, cap - l, "%s?", d ? ", " : "");
        else l += (size_t)snprintf(buf + l, cap - l, "%s%lld", d ? ", " : "", (long long)s[d]);
    }
    if (l < cap) snprintf(buf + l, cap - l, ")");
}

/* The weight named, required, with the shape given (-1: any extent). */
static lithe_status need_weight(lower *L, const char *suffix, int ndim, const int64_t *shape, weight **out) {
    weight *w = find_weight(L, suffix);
    *out = w;
    char want[160], got[160];
    shape_str(want, sizeof want, ndim, shape);
    if (!w) return lfail(L, LITHE_ERR_FORMAT, "the manifest has no weight '%s/%s' %s", L->layer, suffix, want);
    bool ok = w->ndim == ndim;
    for (int d = 0; ok && d < ndim; d++) ok = shape[d] < 0 || w->shape[d] == shape[d];
    if (!ok) {
        shape_str(got, sizeof got, w->ndim, w->shape);
        return lfail(L, LITHE_ERR_FORMAT, "weight '%s' has shape %s; the layer needs %s", w->name, got, want);
    }
    return LITHE_OK;
}

/* ---- config values ---- */

static lithe_status cfg_int(lower *L, const js_val *cfg, const char *key, int64_t def, int64_t lo, int64_t hi, int64_t *out) {
    const js_val *v = js_get(cfg, key);
    if (!v || v->type == JS_NULL) {
        *out = def;
        return LITHE_OK;
    }
    if (v->type != JS_NUM || !v->is_int || v->i < lo || v->i > hi)
        return lfail(L, LITHE_ERR_FORMAT, "config '%s' must be an integer in %lld .. %lld", key, (long long)lo, (long long)hi);
    *out = v->i;
    return LITHE_OK;
}
/* A pair (kernel_size, strides, dilation_rate, pool_size): an integer or a list of two. */
static lithe_status cfg_pair(lower *L, const js_val *cfg, const char *key, const int64_t *def, int64_t *out) {
    const js_val *v = js_get(cfg, key);
    if (!v || v->type == JS_NULL) {
        if (!def) return lfail(L, LITHE_ERR_FORMAT, "config '%s' is missing", key);
        out[0] = L->one_d ? 1 : def[0];
        out[1] = def[1];
        return LITHE_OK;
    }
    if (L->one_d) { /* Conv1D / pooling 1-D: an integer or a list of one, the height is 1 */
        const js_val *x = v->type == JS_ARR ? (v->len == 1 ? &v->items[0] : NULL) : v;
        if (!x || x->type != JS_NUM || !x->is_int || x->i < 1 || x->i > (1 << 16))
            return lfail(L, LITHE_ERR_FORMAT, "config '%s' must be an integer or a list of one, 1 .. 65536", key);
        out[0] = 1;
        out[1] = x->i;
        return LITHE_OK;
    }
    for (int i = 0; i < 2; i++) {
        const js_val *x = v->type == JS_ARR ? (v->len == 2 ? &v->items[i] : NULL) : v;
        if (!x || x->type != JS_NUM || !x->is_int || x->i < 1 || x->i > (1 << 16))
            return lfail(L, LITHE_ERR_FORMAT, "config '%s' must be an integer or a list of two, each 1 .. 65536", key);
        out[i] = x->i;
    }
    return LITHE_OK;
}
static lithe_status cfg_bool(lower *L, const js_val *cfg, const char *key, bool def, bool *out) {
    const js_val *v = js_get(cfg, key);
    if (!v || v->type == JS_NULL) *out = def;
    else if (v->type == JS_BOOL) *out = v->b;
    else return lfail(L, LITHE_ERR_FORMAT, "config '%s' must be true or false", key);
    return LITHE_OK;
}
static lithe_status cfg_float(lower *L, const js_val *cfg, const char *key, double def, double *out) {
    const js_val *v = js_get(cfg, key);
    if (!v || v->type == JS_NULL) *out = def;
    else if (!num_of(v, out) || fabs(*out) > 1e30) return lfail(L, LITHE_ERR_FORMAT, "config '%s' must be a finite number", key);
    return LITHE_OK;
}
static const char *cfg_str(const js_val *cfg, const char *key, const char *def) {
    const js_val *v = js_get(cfg, key);
    return v && v->type == JS_STR ? v->str : def;
}
static lithe_status channels_last(lower *L, const js_val *cfg) {
    const char *df = cfg_str(cfg, "data_format", "channels_last");
    if (strcmp(df, "channels_last"))
        return lfail(L, LITHE_ERR_UNSUPPORTED, "data_format '%s' (lithe reads channels_last, TF.js's default)", df);
    return LITHE_OK;
}

/* ---- activations ---- */

static const char *const activation_names[] = {"linear", "relu", "relu6", "sigmoid", "hard_sigmoid", "hardSigmoid", "tanh",
                                               "softmax", "log_softmax", "logSoftmax", "elu", "selu", "softplus",
                                               "softsign", "swish", "silu", "mish", "gelu", "gelu_new", "geluNew", NULL};

static bool activation_known(const char *a) {
    for (size_t i = 0; activation_names[i]; i++)
        if (!strcmp(a, activation_names[i])) return true;
    return false;
}

/* exp(min(x, 0)) - 1, the negative half of elu: written with Relu so that neither side overflows. */
static void expm1_neg(lower *L, const char *x, char *out, size_t cap) {
    char a[NAME_MAX_LEN + 48], one[NAME_MAX_LEN + 48];
    unary(L, "Neg", x, a, sizeof a, NULL);
    unary(L, "Relu", a, a, sizeof a, NULL);
    unary(L, "Neg", a, a, sizeof a, NULL);
    unary(L, "Exp", a, a, sizeof a, NULL);
    scalar(L, 1.0f, one, sizeof one);
    binary(L, "Sub", a, one, out, cap);
}
/* log(1 + exp(x)) = relu(x) + log(1 + exp(-|x|)) */
static void softplus(lower *L, const char *x, char *out, size_t cap) {
    char a[NAME_MAX_LEN + 48], r[NAME_MAX_LEN + 48], one[NAME_MAX_LEN + 48];
    unary(L, "Abs", x, a, sizeof a, NULL);
    unary(L, "Neg", a, a, sizeof a, NULL);
    unary(L, "Exp", a, a, sizeof a, NULL);
    scalar(L, 1.0f, one, sizeof one);
    binary(L, "Add", a, one, a, sizeof a);
    unary(L, "Log", a, a, sizeof a, NULL);
    unary(L, "Relu", x, r, sizeof r, NULL);
    binary(L, "Add", r, a, out, cap);
}

/* Applies activation `a` to t in place (its value names change). */
static lithe_status activate(lower *L, ktensor *t, const char *a) {
    if (!a || !strcmp(a, "linear")) return LITHE_OK;
    bool last_axis = !strcmp(a, "softmax") || !strcmp(a, "log_softmax") || !strcmp(a, "logSoftmax");
    const char *x = last_axis || !t->nchw[0] ? as_nhwc(L, t) : t->nchw;
    bool in_nchw = x == t->nchw;
    char y[NAME_MAX_LEN + 48], c0[NAME_MAX_LEN + 48], c1[NAME_MAX_LEN + 48], tmp[NAME_MAX_LEN + 48];
    if (!strcmp(a, "relu")) unary(L, "Relu", x, y, sizeof y, NULL);
    else if (!strcmp(a, "sigmoid")) unary(L, "Sigmoid", x, y, sizeof y, NULL);
    else if (!strcmp(a, "tanh")) unary(L, "Tanh", x, y, sizeof y, NULL);
    else if (!strcmp(a, "gelu")) unary(L, "Gelu", x, y, sizeof y, NULL);
    else if (last_axis) {
        if (t->rank < 2) return lfail(L, LITHE_ERR_UNSUPPORTED, "%s over a %d-D tensor", a, t->rank);
        wb attrs = {0};
        at_int(&attrs, "axis", -1);
        unary(L, !strcmp(a, "softmax") ? "Softmax" : "LogSoftmax", x, y, sizeof y, &attrs);
    } else if (!strcmp(a, "relu6") || !strcmp(a, "hard_sigmoid") || !strcmp(a, "hardSigmoid")) {
        const char *src = x;
        if (strcmp(a, "relu6")) { /* TF.js: clip(0.2 x + 0.5, 0, 1) */
            scalar(L, 0.2f, c0, sizeof c0);
            binary(L, "Mul", x, c0, tmp, sizeof tmp);
            scalar(L, 0.5f, c1, sizeof c1);
            binary(L, "Add", tmp, c1, tmp, sizeof tmp);
            src = tmp;
        }
        scalar(L, 0.0f, c0, sizeof c0);
        scalar(L, strcmp(a, "relu6") ? 1.0f : 6.0f, c1, sizeof c1);
        const char *ins[3] = {src, c0, c1};
        fresh(L, "Clip", y, sizeof y);
        node(L, "Clip", ins, 3, y, NULL);
    } else if (!strcmp(a, "elu") || !strcmp(a, "selu")) {
        bool selu = !strcmp(a, "selu");
        const float alpha = selu ? 1.6732632423543772f : 1.0f, scale = selu ? 1.0507009873554805f : 1.0f;
        char r[NAME_MAX_LEN + 48], e[NAME_MAX_LEN + 48];
        unary(L, "Relu", x, r, sizeof r, NULL);
        expm1_neg(L, x, e, sizeof e);
        if (alpha != 1.0f) {
            scalar(L, alpha, c0, sizeof c0);
            binary(L, "Mul", e, c0, e, sizeof e);
        }
        binary(L, "Add", r, e, y, sizeof y);
        if (scale != 1.0f) {
            scalar(L, scale, c1, sizeof c1);
            binary(L, "Mul", y, c1, y, sizeof y);
        }
    } else if (!strcmp(a, "softplus")) {
        softplus(L, x, y, sizeof y);
    } else if (!strcmp(a, "softsign")) { /* x / (1 + |x|) */
        unary(L, "Abs", x, tmp, sizeof tmp, NULL);
        scalar(L, 1.0f, c0, sizeof c0);
        binary(L, "Add", tmp, c0, tmp, sizeof tmp);
        binary(L, "Div", x, tmp, y, sizeof y);
    } else if (!strcmp(a, "swish") || !strcmp(a, "silu")) {
        unary(L, "Sigmoid", x, tmp, sizeof tmp, NULL);
        binary(L, "Mul", x, tmp, y, sizeof y);
    } else if (!strcmp(a, "mish")) { /* x tanh(softplus(x)) */
        softplus(L, x, tmp, sizeof tmp);
        unary(L, "Tanh", tmp, tmp, sizeof tmp, NULL);
        binary(L, "Mul", x, tmp, y, sizeof y);
    } else if (!strcmp(a, "gelu_new") || !strcmp(a, "geluNew")) { /* 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) */
        char x3[NAME_MAX_LEN + 48];
        binary(L, "Mul", x, x, x3, sizeof x3);
        binary(L, "Mul", x3, x, x3, sizeof x3);
        scalar(L, 0.044715f, c0, sizeof c0);
        binary(L, "Mul", x3, c0, x3, sizeof x3);
        binary(L, "Add", x, x3, tmp, sizeof tmp);
        scalar(L, (float)sqrt(2.0 / 3.14159265358979323846), c1, sizeof c1);
        binary(L, "Mul", tmp, c1, tmp, sizeof tmp);
        unary(L, "Tanh", tmp, tmp, sizeof tmp, NULL);
        scalar(L, 1.0f, c0, sizeof c0);
        binary(L, "Add", tmp, c0, tmp, sizeof tmp);
        binary(L, "Mul", x, tmp, tmp, sizeof tmp);
        scalar(L, 0.5f, c1, sizeof c1);
        binary(L, "Mul", tmp, c1, y, sizeof y);
    } else {
        return lfail(L, LITHE_ERR_UNSUPPORTED, "activation '%s'", a);
    }
    if (in_nchw) {
        snprintf(t->nchw, sizeof t->nchw, "%s", y);
        t->nhwc[0] = '\0';
    } else {
        snprintf(t->nhwc, sizeof t->nhwc, "%s", y);
        t->nchw[0] = '\0';
    }
    return LITHE_OK;
}

static lithe_status activation_of(lower *L, const js_val *cfg, const char **out) {
    const js_val *v = js_get(cfg, "activation");
    *out = NULL;
    if (!v || v->type == JS_NULL) return LITHE_OK;
    if (v->type != JS_STR) return lfail(L, LITHE_ERR_UNSUPPORTED, "an activation that is not a name");
    *out = v->str;
    return LITHE_OK;
}

/* ---- the layers ---- */

static const char *const identity_layers[] = {"Dropout", "SpatialDropout1D", "SpatialDropout2D", "GaussianNoise",
                                              "GaussianDropout", "AlphaDropout", NULL};
static const char *const layer_names[] = {"InputLayer", "Dense", "Conv2D", "DepthwiseConv2D", "MaxPooling2D",
                                          "AveragePooling2D", "GlobalAveragePooling2D", "GlobalMaxPooling2D",
                                          "BatchNormalization", "Flatten", "Activation", "ReLU", "LeakyReLU", "ELU",
                                          "Softmax", "Reshape", "ZeroPadding2D", "Add", "Subtract", "Multiply",
                                          "Average", "Concatenate", "Embedding", "GlobalAveragePooling1D",
                                          "LayerNormalization", "SeparableConv2D", "UpSampling2D", "Conv1D",
                                          "MaxPooling1D", "AveragePooling1D", "GlobalMaxPooling1D", NULL};

static bool in_list(const char *const *l, const char *s) {
    for (size_t i = 0; l[i]; i++)
        if (!strcmp(l[i], s)) return true;
    return false;
}

/* Output extent of a window along one axis (Keras's conv_output_length). */
static lithe_status window_out(lower *L, int64_t in, int64_t k, int64_t stride, int64_t dil, bool same, int64_t *out) {
    if (in < 0) {
        *out = -1;
        return LITHE_OK;
    }
    if (same) {
        *out = (in + stride - 1) / stride;
        return LITHE_OK;
    }
    int64_t span = dil * (k - 1) + 1;
    if (in < span) return lfail(L, LITHE_ERR_SHAPE, "the %lld-wide window does not fit the extent %lld", (long long)span, (long long)in);
    *out = (in - span) / stride + 1;
    return LITHE_OK;
}

static lithe_status padding_of(lower *L, const js_val *cfg, bool *same) {
    const char *p = cfg_str(cfg, "padding", "valid");
    if (!strcmp(p, "same")) *same = true;
    else if (!strcmp(p, "valid")) *same = false;
    else return lfail(L, LITHE_ERR_UNSUPPORTED, "padding '%s' (lithe reads valid and same)", p);
    return LITHE_OK;
}

static lithe_status need_rank(lower *L, const ktensor *t, int rank) {
    if (t->rank != rank)
        return lfail(L, LITHE_ERR_SHAPE, "takes a %d-D input (batch first), got %d-D", rank, t->rank);
    return LITHE_OK;
}

/* BatchNormalization's and LayerNormalization's config: axis (an int, or the [axis] Keras writes as
 * often), which must be x's last ("lithe normalizes the last<last> axis" otherwise), center, scale
 * and a positive epsilon. */
static lithe_status norm_config(lower *L, const js_val *cfg, const ktensor *x, const char *last, bool *center,
                                bool *scale, double *eps) {
    int64_t axis = -1;
    const js_val *av = js_get(cfg, "axis");
    if (av && av->type == JS_ARR && av->len == 1 && av->items[0].type == JS_NUM && av->items[0].is_int &&
        av->items[0].i >= -LITHE_MAX_DIMS && av->items[0].i <= LITHE_MAX_DIMS)
        axis = av->items[0].i;
    else LITHE__TRY(cfg_int(L, cfg, "axis", -1, -LITHE_MAX_DIMS, LITHE_MAX_DIMS, &axis));
    if (axis < 0) axis += x->rank;
    if (x->rank < 2 || axis != x->rank - 1)
        return lfail(L, LITHE_ERR_UNSUPPORTED, "axis %lld of a %d-D input (lithe normalizes the last%s axis)",
                     (long long)axis, x->rank, last);
    LITHE__TRY(cfg_bool(L, cfg, "center", true, center));
    LITHE__TRY(cfg_bool(L, cfg, "scale", true, scale));
    LITHE__TRY(cfg_float(L, cfg, "epsilon", 1e-3, eps));
    if (!(*eps > 0)) return lfail(L, LITHE_ERR_FORMAT, "epsilon %g must be positive", *eps);
    return LITHE_OK;
}

/* A normalization layer without gamma (scale: false) or beta (center: false): constants of C ones
 * into g1 and of C zeros into b0 (cap bytes each) for the ones missing. */
static lithe_status default_affine(lower *L, int64_t C, const weight *gamma, const weight *beta, char *g1, char *b0,
                                   size_t cap) {
    if (gamma && beta) return LITHE_OK;
    if (C < 0) return lfail(L, LITHE_ERR_SHAPE, "without gamma or beta the feature count must be known");
    float *v = lithe__malloc((size_t)(C ? C : 1) * sizeof(float));
    if (!v) return lithe__oom(WHAT, (size_t)C * sizeof(float));
    for (int64_t i = 0; i < C; i++) v[i] = 1.0f;
    if (!gamma) constant(L, 1, &C, v, NULL, C, g1, cap);
    for (int64_t i = 0; i < C; i++) v[i] = 0.0f;
    if (!beta) constant(L, 1, &C, v, NULL, C, b0, cap);
    lithe__free(v);
    return LITHE_OK;
}

/* Lowers one call of a layer: ins (n_in tensors) -> *o. */
static lithe_status lower_layer2d(lower *L, const char *cls, const js_val *cfg, ktensor **ins, size_t n_in, ktensor *o) {
    ktensor *x = ins[0];
    o->rank = x->rank;
    memcpy(o->shape, x->shape, sizeof o->shape);
    char y[NAME_MAX_LEN + 48];
    bool merge = !strcmp(cls, "Add") || !strcmp(cls, "Subtract") || !strcmp(cls, "Multiply") || !strcmp(cls, "Average") ||
                 !strcmp(cls, "Concatenate");
    if (!merge && n_in != 1) return lfail(L, LITHE_ERR_FORMAT, "called on %zu inputs; it takes one", n_in);
    if (in_list(identity_layers, cls) || !strcmp(cls, "InputLayer")) { /* identity at inference */
        memcpy(o->nhwc, x->nhwc, sizeof o->nhwc);
        memcpy(o->nchw, x->nchw, sizeof o->nchw);
        return LITHE_OK;
    }
    if (!strcmp(cls, "Dense")) {
        int64_t units = -1, k = x->shape[x->rank - 1];
        bool bias = true;
        const char *act;
        LITHE__TRY(cfg_int(L, cfg, "units", -1, 1, (int64_t)1 << 30, &units));
        if (units < 0) return lfail(L, LITHE_ERR_FORMAT, "config 'units' is missing");
        LITHE__TRY(cfg_bool(L, cfg, "use_bias", true, &bias));
        LITHE__TRY(activation_of(L, cfg, &act));
        if (x->rank < 2) return lfail(L, LITHE_ERR_SHAPE, "takes a 2-D or higher input, got %d-D", x->rank);
        weight *W, *b = NULL;
        LITHE__TRY(need_weight(L, "kernel", 2, (int64_t[]){k, units}, &W));
        if (bias) LITHE__TRY(need_weight(L, "bias", 1, (int64_t[]){units}, &b));
        binary(L, "MatMul", as_nhwc(L, x), W->name, y, sizeof y);
        if (b) binary(L, "Add", y, b->name, y, sizeof y);
        snprintf(o->nhwc, sizeof o->nhwc, "%s", y);
        o->shape[o->rank - 1] = units;
        return activate(L, o, act);
    }
    if (!strcmp(cls, "Conv2D") || !strcmp(cls, "DepthwiseConv2D") || !strcmp(cls, "SeparableConv2D")) {
        bool separable = !strcmp(cls, "SeparableConv2D"), depthwise = separable || !strcmp(cls, "DepthwiseConv2D");
        bool bias = true, same = false;
        int64_t ks[2], st[2], dil[2], filters = -1, mult = 1, groups = 1, pw_filters = -1;
        weight *PW = NULL; /* SeparableConv2D's 1x1 pointwise kernel */
        const char *act;
        LITHE__TRY(need_rank(L, x, 4));
        LITHE__TRY(channels_last(L, cfg));
        LITHE__TRY(cfg_pair(L, cfg, "kernel_size", NULL, ks));
        LITHE__TRY(cfg_pair(L, cfg, "strides", (const int64_t[]){1, 1}, st));
        LITHE__TRY(cfg_pair(L, cfg, "dilation_rate", (const int64_t[]){1, 1}, dil));
        LITHE__TRY(padding_of(L, cfg, &same));
        LITHE__TRY(cfg_bool(L, cfg, "use_bias", true, &bias));
        LITHE__TRY(activation_of(L, cfg, &act));
        LITHE__TRY(cfg_int(L, cfg, "groups", 1, 1, 1, &groups)); /* Keras's grouped Conv2D: not read */
        int64_t C = x->shape[3];
        weight *W, *b = NULL;
        char wk[NAME_MAX_LEN + 48];
        if (depthwise) {
            /* TF.js leaves depth_multiplier out of a SeparableConv2D's config: the kernel says it */
            LITHE__TRY(cfg_int(L, cfg, "depth_multiplier", -1, 1, 1 << 16, &mult));
            if (C < 0) return lfail(L, LITHE_ERR_SHAPE, "the input's channel count must be known");
            LITHE__TRY(need_weight(L, "depthwise_kernel", 4, (int64_t[]){ks[0], ks[1], C, mult}, &W));
            mult = W->shape[3];
            if (mult < 1 || mult > (1 << 16)) return lfail(L, LITHE_ERR_FORMAT, "depth multiplier %lld", (long long)mult);
            filters = C * mult;
            if (separable) LITHE__TRY(cfg_int(L, cfg, "filters", -1, 1, (int64_t)1 << 30, &pw_filters));
            if (separable && pw_filters < 0) return lfail(L, LITHE_ERR_FORMAT, "config 'filters' is missing");
            if (separable) LITHE__TRY(need_weight(L, "pointwise_kernel", 4, (int64_t[]){1, 1, filters, pw_filters}, &PW));
            if (bias) LITHE__TRY(need_weight(L, "bias", 1, (int64_t[]){separable ? pw_filters : filters}, &b));
            /* (KH, KW, C, mult) -> (KH, KW, 1, C mult): output channel c mult + m, as TF orders them */
            int64_t shp[4] = {ks[0], ks[1], 1, filters};
            char sh[NAME_MAX_LEN + 48];
            constant(L, 1, (const int64_t[]){4}, NULL, shp, 4, sh, sizeof sh);
            binary(L, "Reshape", W->name, sh, wk, sizeof wk);
        } else {
            LITHE__TRY(cfg_int(L, cfg, "filters", -1, 1, (int64_t)1 << 30, &filters));
            if (filters < 0) return lfail(L, LITHE_ERR_FORMAT, "config 'filters' is missing");
            if (L->one_d) { /* a Conv1D kernel (K, C, F) is the (1, K, C, F) of its 2-D twin */
                LITHE__TRY(need_weight(L, "kernel", 3, (int64_t[]){ks[1], C, filters}, &W));
                char sh[NAME_MAX_LEN + 48];
                constant(L, 1, (const int64_t[]){4}, NULL, (const int64_t[]){1, ks[1], W->shape[1], filters}, 4, sh, sizeof sh);
                binary(L, "Reshape", W->name, sh, wk, sizeof wk);
            } else {
                LITHE__TRY(need_weight(L, "kernel", 4, (int64_t[]){ks[0], ks[1], C, filters}, &W));
                snprintf(wk, sizeof wk, "%s", W->name);
            }
            if (bias) LITHE__TRY(need_weight(L, "bias", 1, (int64_t[]){filters}, &b));
        }
        transpose(L, wk, (const int64_t[]){3, 2, 0, 1}, 4, wk, sizeof wk); /* HWIO -> OIHW */
        wb attrs = {0};
        at_ints(&attrs, "kernel_shape", ks, 2);
        at_ints(&attrs, "strides", st, 2);
        at_ints(&attrs, "dilations", dil, 2);
        if (depthwise) at_int(&attrs, "group", C);
        if (same) at_str(&attrs, "auto_pad", "SAME_UPPER");
        const char *cin[3] = {as_nchw(L, x), wk, b && !PW ? b->name : ""};
        fresh(L, "Conv", y, sizeof y);
        node(L, "Conv", cin, b && !PW ? 3 : 2, y, &attrs);
        if (PW) { /* then the pointwise 1x1 convolution, with the bias */
            transpose(L, PW->name, (const int64_t[]){3, 2, 0, 1}, 4, wk, sizeof wk);
            wb pa = {0};
            at_ints(&pa, "kernel_shape", (const int64_t[]){1, 1}, 2);
            const char *pin[3] = {y, wk, b ? b->name : ""};
            char z[NAME_MAX_LEN + 48];
            fresh(L, "Conv", z, sizeof z);
            node(L, "Conv", pin, b ? 3 : 2, z, &pa);
            snprintf(y, sizeof y, "%s", z);
            filters = pw_filters;
        }
        snprintf(o->nchw, sizeof o->nchw, "%s", y);
        LITHE__TRY(window_out(L, x->shape[1], ks[0], st[0], dil[0], same, &o->shape[1]));
        LITHE__TRY(window_out(L, x->shape[2], ks[1], st[1], dil[1], same, &o->shape[2]));
        o->shape[3] = filters;
        return activate(L, o, act);
    }
    if (!strcmp(cls, "MaxPooling2D") || !strcmp(cls, "AveragePooling2D")) {
        int64_t ps[2], st[2];
        bool same = false;
        LITHE__TRY(need_rank(L, x, 4));
        LITHE__TRY(channels_last(L, cfg));
        LITHE__TRY(cfg_pair(L, cfg, "pool_size", (const int64_t[]){2, 2}, ps));
        LITHE__TRY(cfg_pair(L, cfg, "strides", ps, st));
        LITHE__TRY(padding_of(L, cfg, &same));
        wb attrs = {0};
        at_ints(&attrs, "kernel_shape", ps, 2);
        at_ints(&attrs, "strides", st, 2);
        if (same) at_str(&attrs, "auto_pad", "SAME_UPPER"); /* TF leaves the padding out of averages, as count_include_pad 0 */
        unary(L, cls[0] == 'M' ? "MaxPool" : "AveragePool", as_nchw(L, x), o->nchw, sizeof o->nchw, &attrs);
        LITHE__TRY(window_out(L, x->shape[1], ps[0], st[0], 1, same, &o->shape[1]));
        LITHE__TRY(window_out(L, x->shape[2], ps[1], st[1], 1, same, &o->shape[2]));
        return LITHE_OK;
    }
    if (!strcmp(cls, "GlobalAveragePooling2D") || !strcmp(cls, "GlobalMaxPooling2D")) {
        bool keep = false;
        LITHE__TRY(need_rank(L, x, 4));
        LITHE__TRY(channels_last(L, cfg));
        LITHE__TRY(cfg_bool(L, cfg, "keepdims", false, &keep));
        unary(L, cls[6] == 'A' ? "GlobalAveragePool" : "GlobalMaxPool", as_nchw(L, x), y, sizeof y, NULL);
        o->shape[1] = o->shape[2] = 1;
        if (keep) {
            snprintf(o->nchw, sizeof o->nchw, "%s", y);
            return LITHE_OK;
        }
        wb attrs = {0};
        at_int(&attrs, "axis", 1);
        unary(L, "Flatten", y, o->nhwc, sizeof o->nhwc, &attrs);
        o->rank = 2;
        o->shape[1] = x->shape[3];
        return LITHE_OK;
    }
    if (!strcmp(cls, "BatchNormalization")) {
        bool center, scale;
        double eps;
        LITHE__TRY(norm_config(L, cfg, x, ", channels,", &center, &scale, &eps));
        int64_t C = x->shape[x->rank - 1];
        weight *gamma = NULL, *beta = NULL, *mean, *var;
        if (scale) LITHE__TRY(need_weight(L, "gamma", 1, (int64_t[]){C}, &gamma));
        if (center) LITHE__TRY(need_weight(L, "beta", 1, (int64_t[]){C}, &beta));
        LITHE__TRY(need_weight(L, "moving_mean", 1, (int64_t[]){C}, &mean));
        LITHE__TRY(need_weight(L, "moving_variance", 1, (int64_t[]){mean->shape[0]}, &var));
        if ((gamma && gamma->shape[0] != mean->shape[0]) || (beta && beta->shape[0] != mean->shape[0]))
            return lfail(L, LITHE_ERR_FORMAT, "gamma, beta and the moving statistics differ in length");
        C = mean->shape[0];
        char g1[NAME_MAX_LEN + 48] = "", b0[NAME_MAX_LEN + 48] = "";
        LITHE__TRY(default_affine(L, C, gamma, beta, g1, b0, sizeof g1));
        const char *src;
        int64_t perm[LITHE_MAX_DIMS];
        if (x->rank == 4) src = as_nchw(L, x);
        else if (x->rank == 2) src = x->nhwc;
        else { /* (N, ..., C) -> (N, C, ...) and back */
            perm[0] = 0;
            perm[1] = x->rank - 1;
            for (int d = 2; d < x->rank; d++) perm[d] = d - 1;
            char t[NAME_MAX_LEN + 48];
            transpose(L, x->nhwc, perm, x->rank, t, sizeof t);
            snprintf(y, sizeof y, "%s", t);
            src = y;
        }
        wb attrs = {0};
        at_float(&attrs, "epsilon", (float)eps);
        const char *bin[5] = {src, gamma ? gamma->name : g1, beta ? beta->name : b0, mean->name, var->name};
        char z[NAME_MAX_LEN + 48];
        fresh(L, "BatchNormalization", z, sizeof z);
        node(L, "BatchNormalization", bin, 5, z, &attrs);
        if (x->rank == 4) snprintf(o->nchw, sizeof o->nchw, "%s", z);
        else if (x->rank == 2) snprintf(o->nhwc, sizeof o->nhwc, "%s", z);
        else {
            for (int d = 1; d < x->rank; d++) perm[d] = d == x->rank - 1 ? 1 : d + 1;
            transpose(L, z, perm, x->rank, o->nhwc, sizeof o->nhwc);
        }
        return LITHE_OK;
    }
    if (!strcmp(cls, "Embedding")) { /* ids (float in TF.js) -> Cast to int64 -> rows of the table */
        int64_t vocab = -1, dim = -1;
        LITHE__TRY(cfg_int(L, cfg, "input_dim", -1, 1, (int64_t)1 << 32, &vocab));
        LITHE__TRY(cfg_int(L, cfg, "output_dim", -1, 1, (int64_t)1 << 30, &dim));
        if (vocab < 0 || dim < 0) return lfail(L, LITHE_ERR_FORMAT, "config 'input_dim' and 'output_dim' are needed");
        if (x->rank + 1 > LITHE_MAX_DIMS) return lfail(L, LITHE_ERR_SHAPE, "a %d-D input is too many dims", x->rank);
        weight *E;
        LITHE__TRY(need_weight(L, "embeddings", 2, (int64_t[]){vocab, dim}, &E));
        wb attrs = {0};
        at_int(&attrs, "to", 7); /* INT64 */
        char ids[NAME_MAX_LEN + 48];
        unary(L, "Cast", as_nhwc(L, x), ids, sizeof ids, &attrs);
        binary(L, "Gather", E->name, ids, o->nhwc, sizeof o->nhwc);
        o->rank = x->rank + 1;
        o->shape[x->rank] = dim;
        return LITHE_OK;
    }
    if (!strcmp(cls, "GlobalAveragePooling1D")) { /* (N, T, C) -> (N, C): the mean over T */
        LITHE__TRY(need_rank(L, x, 3));
        LITHE__TRY(channels_last(L, cfg));
        bool keep = false;
        LITHE__TRY(cfg_bool(L, cfg, "keepdims", false, &keep));
        wb attrs = {0};
        at_ints(&attrs, "axes", (const int64_t[]){1}, 1);
        at_int(&attrs, "keepdims", keep);
        unary(L, "ReduceMean", x->nhwc, o->nhwc, sizeof o->nhwc, &attrs);
        if (keep) {
            o->shape[1] = 1;
        } else {
            o->rank = 2;
            o->shape[1] = x->shape[2];
        }
        return LITHE_OK;
    }
    if (!strcmp(cls, "LayerNormalization")) {
        bool center, scale;
        double eps;
        LITHE__TRY(norm_config(L, cfg, x, "", &center, &scale, &eps));
        int64_t C = x->shape[x->rank - 1];
        weight *gamma = NULL, *beta = NULL;
        if (scale) LITHE__TRY(need_weight(L, "gamma", 1, (int64_t[]){C}, &gamma));
        if (center) LITHE__TRY(need_weight(L, "beta", 1, (int64_t[]){gamma ? gamma->shape[0] : C}, &beta));
        char g1[NAME_MAX_LEN + 48] = "", b0[NAME_MAX_LEN + 48] = "";
        LITHE__TRY(default_affine(L, C, gamma, beta, g1, b0, sizeof g1));
        wb attrs = {0};
        at_int(&attrs, "axis", -1);
        at_float(&attrs, "epsilon", (float)eps);
        const char *lin[3] = {as_nhwc(L, x), gamma ? gamma->name : g1, beta ? beta->name : b0};
        fresh(L, "LayerNormalization", y, sizeof y);
        node(L, "LayerNormalization", lin, 3, y, &attrs);
        snprintf(o->nhwc, sizeof o->nhwc, "%s", y);
        o->nchw[0] = '\0';
        return LITHE_OK;
    }
    if (!strcmp(cls, "UpSampling2D")) { /* nearest: (N, C, H, W) -> (N, C, H, 1, W, 1) -> expand -> merge */
        int64_t sz[2];
        LITHE__TRY(need_rank(L, x, 4));
        LITHE__TRY(channels_last(L, cfg));
        LITHE__TRY(cfg_pair(L, cfg, "size", (const int64_t[]){2, 2}, sz));
        const char *interp = cfg_str(cfg, "interpolation", "nearest");
        if (strcmp(interp, "nearest")) return lfail(L, LITHE_ERR_UNSUPPORTED, "interpolation '%s' (lithe: nearest)", interp);
        if (x->shape[1] < 0 || x->shape[2] < 0) return lfail(L, LITHE_ERR_SHAPE, "the input's height and width must be known");
        char sh[NAME_MAX_LEN + 48], t[NAME_MAX_LEN + 48];
        constant(L, 1, (const int64_t[]){6}, NULL, (const int64_t[]){0, 0, x->shape[1], 1, x->shape[2], 1}, 6, sh, sizeof sh);
        binary(L, "Reshape", as_nchw(L, x), sh, t, sizeof t);
        constant(L, 1, (const int64_t[]){6}, NULL, (const int64_t[]){1, 1, 1, sz[0], 1, sz[1]}, 6, sh, sizeof sh);
        binary(L, "Expand", t, sh, t, sizeof t);
        o->shape[1] = x->shape[1] * sz[0];
        o->shape[2] = x->shape[2] * sz[1];
        constant(L, 1, (const int64_t[]){4}, NULL, (const int64_t[]){0, 0, o->shape[1], o->shape[2]}, 4, sh, sizeof sh);
        binary(L, "Reshape", t, sh, o->nchw, sizeof o->nchw);
        o->nhwc[0] = '\0';
        return LITHE_OK;
    }
    if (!strcmp(cls, "Flatten")) {
        LITHE__TRY(channels_last(L, cfg));
        if (x->rank < 2) return lfail(L, LITHE_ERR_SHAPE, "takes a 2-D or higher input, got %d-D", x->rank);
        wb attrs = {0};
        at_int(&attrs, "axis", 1);
        unary(L, "Flatten", as_nhwc(L, x), o->nhwc, sizeof o->nhwc, &attrs);
        int64_t p = 1;
        for (int d = 1; d < x->rank; d++) p = p < 0 || x->shape[d] < 0 ? -1 : p * x->shape[d];
        o->rank = 2;
        o->shape[1] = p;
        return LITHE_OK;
    }
    if (!strcmp(cls, "Activation")) {
        const char *act;
        LITHE__TRY(activation_of(L, cfg, &act));
        memcpy(o->nhwc, x->nhwc, sizeof o->nhwc);
        memcpy(o->nchw, x->nchw, sizeof o->nchw);
        return activate(L, o, act);
    }
    if (!strcmp(cls, "ReLU") || !strcmp(cls, "LeakyReLU") || !strcmp(cls, "ELU") || !strcmp(cls, "Softmax")) {
        memcpy(o->nhwc, x->nhwc, sizeof o->nhwc);
        memcpy(o->nchw, x->nchw, sizeof o->nchw);
        double alpha = 0, maxv = -1;
        if (!strcmp(cls, "Softmax")) {
            int64_t axis = -1;
            LITHE__TRY(cfg_int(L, cfg, "axis", -1, -LITHE_MAX_DIMS, LITHE_MAX_DIMS, &axis));
            if (axis != -1 && axis != x->rank - 1) return lfail(L, LITHE_ERR_UNSUPPORTED, "softmax over axis %lld (lithe: the last)", (long long)axis);
            return activate(L, o, "softmax");
        }
        if (!strcmp(cls, "ELU")) {
            LITHE__TRY(cfg_float(L, cfg, "alpha", 1.0, &alpha));
            if (alpha != 1.0) return lfail(L, LITHE_ERR_UNSUPPORTED, "alpha %g (lithe: 1)", alpha);
            return activate(L, o, "elu");
        }
        if (!strcmp(cls, "LeakyReLU")) {
            LITHE__TRY(cfg_float(L, cfg, "alpha", 0.3, &alpha));
            const js_val *ns = js_get(cfg, "negative_slope"); /* Keras 3's name */
            if (ns) LITHE__TRY(cfg_float(L, cfg, "negative_slope", 0.3, &alpha));
            const char *src = o->nchw[0] ? o->nchw : o->nhwc;
            bool nchw = src == o->nchw;
            wb attrs = {0};
            at_float(&attrs, "alpha", (float)alpha);
            unary(L, "LeakyRelu", src, y, sizeof y, &attrs);
            snprintf(nchw ? o->nchw : o->nhwc, sizeof o->nhwc, "%s", y);
            (nchw ? o->nhwc : o->nchw)[0] = '\0';
            return LITHE_OK;
        }
        /* ReLU: max_value, negative_slope 0, threshold 0 */
        double slope = 0, thr = 0;
        LITHE__TRY(cfg_float(L, cfg, "max_value", -1, &maxv));
        LITHE__TRY(cfg_float(L, cfg, "negative_slope", 0, &slope));
        LITHE__TRY(cfg_float(L, cfg, "threshold", 0, &thr));
        if (slope != 0 || thr != 0)
            return lfail(L, LITHE_ERR_UNSUPPORTED, "negative_slope %g / threshold %g (lithe: 0)", slope, thr);
        const js_val *mv = js_get(cfg, "max_value");
        if (!mv || mv->type == JS_NULL) return activate(L, o, "relu");
        if (maxv < 0) return lfail(L, LITHE_ERR_FORMAT, "max_value %g is negative", maxv);
        const char *src = o->nchw[0] ? o->nchw : o->nhwc;
        bool nchw = src == o->nchw;
        char c0[NAME_MAX_LEN + 48], c1[NAME_MAX_LEN + 48];
        scalar(L, 0.0f, c0, sizeof c0);
        scalar(L, (float)maxv, c1, sizeof c1);
        const char *cin[3] = {src, c0, c1};
        fresh(L, "Clip", y, sizeof y);
        node(L, "Clip", cin, 3, y, NULL);
        snprintf(nchw ? o->nchw : o->nhwc, sizeof o->nhwc, "%s", y);
        (nchw ? o->nhwc : o->nchw)[0] = '\0';
        return LITHE_OK;
    }
    if (!strcmp(cls, "Reshape")) {
        const js_val *ts = js_get(cfg, "target_shape");
        if (!ts || ts->type != JS_ARR || ts->len < 1 || ts->len >= LITHE_MAX_DIMS)
            return lfail(L, LITHE_ERR_FORMAT, "config 'target_shape' must be a list of 1 to %d extents", LITHE_MAX_DIMS - 1);
        int64_t shp[LITHE_MAX_DIMS], known = 1, in_known = 1;
        int unknown = 0;
        shp[0] = 0; /* the batch extent, copied */
        for (size_t d = 0; d < ts->len; d++) {
            const js_val *e = &ts->items[d];
            if (e->type != JS_NUM || !e->is_int || e->i < -1 || e->i == 0 || e->i > ((int64_t)1 << 32))
                return lfail(L, LITHE_ERR_FORMAT, "target_shape[%zu] must be -1 or 1 .. 2^32", d);
            shp[d + 1] = e->i;
            if (e->i < 0) unknown++;
            else if (known <= ((int64_t)1 << 40) / e->i) known *= e->i;
            else return lfail(L, LITHE_ERR_FORMAT, "target_shape has more than 2^40 elements");
        }
        if (unknown > 1) return lfail(L, LITHE_ERR_FORMAT, "target_shape has %d unknown (-1) extents", unknown);
        for (int d = 1; d < x->rank; d++) in_known = in_known < 0 || x->shape[d] < 0 ? -1 : in_known * x->shape[d];
        char sh[NAME_MAX_LEN + 48];
        constant(L, 1, (const int64_t[]){(int64_t)ts->len + 1}, NULL, shp, (int64_t)ts->len + 1, sh, sizeof sh);
        binary(L, "Reshape", as_nhwc(L, x), sh, o->nhwc, sizeof o->nhwc);
        o->rank = (int)ts->len + 1;
        o->shape[0] = x->shape[0];
        for (size_t d = 0; d < ts->len; d++) o->shape[d + 1] = shp[d + 1];
        if (in_known >= 0 && ((unknown && in_known % known) || (!unknown && in_known != known)))
            return lfail(L, LITHE_ERR_SHAPE, "target_shape does not hold the input's %lld elements", (long long)in_known);
        for (size_t d = 0; d < ts->len; d++)
            if (shp[d + 1] < 0) o->shape[d + 1] = in_known >= 0 ? in_known / known : -1;
        return LITHE_OK;
    }
    if (!strcmp(cls, "ZeroPadding2D")) {
        LITHE__TRY(need_rank(L, x, 4));
        LITHE__TRY(channels_last(L, cfg));
        int64_t p[4]; /* top, bottom, left, right */
        const js_val *v = js_get(cfg, "padding");
        bool ok = true;
        if (!v || v->type == JS_NULL) p[0] = p[1] = p[2] = p[3] = 1;
        else if (v->type == JS_NUM) ok = v->is_int && v->i >= 0 && v->i <= (1 << 16), p[0] = p[1] = p[2] = p[3] = v->i;
        else if (v->type == JS_ARR && v->len == 2) {
            for (int i = 0; ok && i < 2; i++) {
                const js_val *e = &v->items[i];
                if (e->type == JS_NUM) {
                    ok = e->is_int && e->i >= 0 && e->i <= (1 << 16);
                    p[2 * i] = p[2 * i + 1] = e->i;
                } else if (e->type == JS_ARR && e->len == 2) {
                    for (int j = 0; ok && j < 2; j++) {
                        ok = e->items[j].type == JS_NUM && e->items[j].is_int && e->items[j].i >= 0 && e->items[j].i <= (1 << 16);
                        p[2 * i + j] = e->items[j].i;
                    }
                } else {
                    ok = false;
                }
            }
        } else {
            ok = false;
        }
        if (!ok) return lfail(L, LITHE_ERR_FORMAT, "config 'padding' must be n, (h, w) or ((top, bottom), (left, right)), each 0 .. 65536");
        int64_t pads[8] = {0, 0, p[0], p[2], 0, 0, p[1], p[3]};
        char pc[NAME_MAX_LEN + 48];
        constant(L, 1, (const int64_t[]){8}, NULL, pads, 8, pc, sizeof pc);
        binary(L, "Pad", as_nchw(L, x), pc, o->nchw, sizeof o->nchw);
        o->nhwc[0] = '\0';
        if (x->shape[1] >= 0) o->shape[1] = x->shape[1] + p[0] + p[1];
        if (x->shape[2] >= 0) o->shape[2] = x->shape[2] + p[2] + p[3];
        return LITHE_OK;
    }
    /* merges */
    if (n_in < 2 || n_in > 64) return lfail(L, LITHE_ERR_FORMAT, "a merge of %zu inputs (it takes 2 to 64)", n_in);
    for (size_t i = 1; i < n_in; i++)
        if (ins[i]->rank != x->rank) return lfail(L, LITHE_ERR_SHAPE, "merges a %d-D and a %d-D tensor", x->rank, ins[i]->rank);
    bool nchw = x->rank == 4 && x->nchw[0];
    const char *v[64];
    for (size_t i = 0; i < n_in; i++) v[i] = nchw ? as_nchw(L, ins[i]) : as_nhwc(L, ins[i]);
    if (!strcmp(cls, "Concatenate")) {
        int64_t axis = -1;
        LITHE__TRY(cfg_int(L, cfg, "axis", -1, -LITHE_MAX_DIMS, LITHE_MAX_DIMS, &axis));
        if (axis < 0) axis += x->rank;
        if (axis < 1 || axis >= x->rank) return lfail(L, LITHE_ERR_FORMAT, "axis %lld of a %d-D tensor", (long long)axis, x->rank);
        int64_t sum = 0;
        for (size_t i = 0; i < n_in; i++) sum = sum < 0 || ins[i]->shape[axis] < 0 ? -1 : sum + ins[i]->shape[axis];
        wb attrs = {0};
        at_int(&attrs, "axis", nchw ? (axis == 3 ? 1 : axis + 1) : axis);
        fresh(L, "Concat", y, sizeof y);
        node(L, "Concat", v, n_in, y, &attrs);
        o->shape[axis] = sum;
    } else {
        const char *op = !strcmp(cls, "Subtract") ? "Sub" : !strcmp(cls, "Multiply") ? "Mul" : "Add";
        if (!strcmp(cls, "Subtract") && n_in != 2) return lfail(L, LITHE_ERR_FORMAT, "Subtract takes 2 inputs, got %zu", n_in);
        binary(L, op, v[0], v[1], y, sizeof y);
        for (size_t i = 2; i < n_in; i++) binary(L, op, y, v[i], y, sizeof y);
        if (!strcmp(cls, "Average")) {
            char c[NAME_MAX_LEN + 48];
            scalar(L, 1.0f / (float)n_in, c, sizeof c);
            binary(L, "Mul", y, c, y, sizeof y);
        }
    }
    snprintf(nchw ? o->nchw : o->nhwc, sizeof o->nhwc, "%s", y);
    return LITHE_OK;
}

/* The 1-D layers run as their 2-D twins: (N, T, C) -> Unsqueeze -> (N, 1, T, C) -> the 2-D layer
 * (a Conv1D kernel (K, C, F) reshaped to (1, K, C, F)) -> Squeeze -> (N, T', F). */
static const char *const one_d_layers[][2] = {{"Conv1D", "Conv2D"}, {"MaxPooling1D", "MaxPooling2D"},
                                              {"AveragePooling1D", "AveragePooling2D"},
                                              {"GlobalMaxPooling1D", "GlobalMaxPooling2D"}};

static lithe_status lower_layer(lower *L, const char *cls, const js_val *cfg, ktensor **ins, size_t n_in, ktensor *o) {
    const char *twin = NULL;
    for (size_t i = 0; i < sizeof one_d_layers / sizeof one_d_layers[0]; i++)
        if (!strcmp(cls, one_d_layers[i][0])) twin = one_d_layers[i][1];
    if (!twin) return lower_layer2d(L, cls, cfg, ins, n_in, o);
    if (n_in != 1) return lfail(L, LITHE_ERR_FORMAT, "called on %zu inputs; it takes one", n_in);
    ktensor *x = ins[0];
    LITHE__TRY(need_rank(L, x, 3));
    ktensor x4 = *x, o4 = {0};
    char ax[NAME_MAX_LEN + 48];
    constant(L, 1, (const int64_t[]){1}, NULL, (const int64_t[]){1}, 1, ax, sizeof ax);
    binary(L, "Unsqueeze", x->nhwc, ax, x4.nhwc, sizeof x4.nhwc);
    x4.nchw[0] = '\0';
    x4.rank = 4;
    x4.shape[0] = x->shape[0];
    x4.shape[1] = 1;
    x4.shape[2] = x->shape[1];
    x4.shape[3] = x->shape[2];
    ktensor *in4 = &x4;
    L->one_d = true;
    lithe_status s = lower_layer2d(L, twin, cfg, &in4, 1, &o4);
    L->one_d = false;
    LITHE__TRY(s);
    if (o4.rank == 2) { /* GlobalMaxPooling1D */
        memcpy(o->nhwc, o4.nhwc, sizeof o->nhwc);
        o->rank = 2;
        o->shape[0] = o4.shape[0];
        o->shape[1] = o4.shape[1];
        return LITHE_OK;
    }
    constant(L, 1, (const int64_t[]){1}, NULL, (const int64_t[]){1}, 1, ax, sizeof ax);
    binary(L, "Squeeze", as_nhwc(L, &o4), ax, o->nhwc, sizeof o->nhwc);
    o->nchw[0] = '\0';
    o->rank = 3;
    o->shape[0] = o4.shape[0];
    o->shape[1] = o4.shape[2];
    o->shape[2] = o4.shape[3];
    return LITHE_OK;
}

/* ---- the topology ---- */

static ktensor *find_kt(lower *L, const char *layer, int64_t node_i, int64_t index) {
    for (size_t i = 0; i < L->n_kt; i++)
        if (!strcmp(L->kt[i].layer, layer) && L->kt[i].node == node_i && L->kt[i].index == index) return &L->kt[i];
    return NULL;
}

static lithe_status new_kt(lower *L, const char *layer, int64_t node_i, ktensor **out) {
    if (L->n_kt >= MAX_TENSORS) return lithe__fail(LITHE_ERR_FORMAT, "%s: more than %d tensors", WHAT, MAX_TENSORS);
    ktensor *t = &L->kt[L->n_kt++];
    memset(t, 0, sizeof *t);
    snprintf(t->layer, sizeof t->layer, "%s", layer);
    t->node = node_i;
    *out = t;
    return LITHE_OK;
}

/* A graph input from a layer's batch_input_shape (or Keras 3's batch_shape). */
static lithe_status make_input(lower *L, const char *layer, const js_val *cfg, ktensor **out) {
    const js_val *bis = js_get(cfg, "batch_input_shape");
    if (!bis) bis = js_get(cfg, "batch_shape");
    if (!bis || bis->type != JS_ARR || bis->len < 1 || bis->len > LITHE_MAX_DIMS)
        return lithe__fail(LITHE_ERR_FORMAT, "%s: input layer '%s' declares no batch_input_shape of 1 to %d extents", WHAT,
                           layer, LITHE_MAX_DIMS);
    const char *dt = cfg_str(cfg, "dtype", "float32");
    if (strcmp(dt, "float32"))
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "%s: input layer '%s' takes %s (lithe: float32 inputs)", WHAT, layer, dt);
    ktensor *t = NULL;
    LITHE__TRY(new_kt(L, layer, 0, &t));
    t->rank = (int)bis->len;
    wb shape = {0};
    for (int d = 0; d < t->rank; d++) {
        const js_val *e = &bis->items[d];
        wb dim = {0};
        if (e->type == JS_NULL) {
            t->shape[d] = -1;
            wb_str(&dim, 2, d ? "?" : "batch");
        } else if (e->type == JS_NUM && e->is_int && e->i >= 1 && e->i <= ((int64_t)1 << 32)) {
            t->shape[d] = e->i;
            wb_int(&dim, 1, e->i);
        } else {
            wb_free(&dim);
            wb_free(&shape);
            return lithe__fail(LITHE_ERR_FORMAT, "%s: input layer '%s': batch_input_shape[%d] must be null or 1 .. 2^32", WHAT,
                               layer, d);
        }
        wb_sub(&shape, 1, &dim);
    }
    snprintf(t->nhwc, sizeof t->nhwc, "%s", layer);
    wb tt = {0}, ty = {0}, vi = {0};
    wb_int(&tt, 1, 1); /* FLOAT */
    wb_sub(&tt, 2, &shape);
    wb_sub(&ty, 1, &tt);
    wb_str(&vi, 1, layer);
    wb_sub(&vi, 2, &ty);
    wb_sub(&L->inputs, 11, &vi);
    *out = t;
    return LITHE_OK;
}

static lithe_status make_output(lower *L, ktensor *t, size_t k) {
    char name[NAME_MAX_LEN + 48];
    bool is_input = !strcmp(t->nhwc, t->layer); /* a graph input passed straight through */
    if (k || is_input) snprintf(name, sizeof name, "%s:%zu", t->layer, k);
    else snprintf(name, sizeof name, "%s", t->layer);
    const char *src = t->rank == 4 ? as_nhwc(L, t) : t->nhwc;
    L->layer = t->layer;
    node(L, "Identity", &src, 1, name, NULL);
    wb vi = {0}, ty = {0}, tt = {0};
    wb_int(&tt, 1, 1);
    wb_sub(&ty, 1, &tt);
    wb_str(&vi, 1, name);
    wb_sub(&vi, 2, &ty);
    wb_sub(&L->outputs, 12, &vi);
    return LITHE_OK;
}

static lithe_status layer_name(const js_val *layer, size_t i, const char **name, const char **cls, const js_val **cfg) {
    const js_val *c = js_get(layer, "class_name"), *config = js_get(layer, "config");
    const js_val *n = js_get(layer, "name");
    if (!n || n->type != JS_STR) n = js_get(config, "name");
    if (!c || c->type != JS_STR || !config || config->type != JS_OBJ)
        return lithe__fail(LITHE_ERR_FORMAT, "%s: layer %zu has no class_name and config", WHAT, i);
    if (!n || n->type != JS_STR || !n->len || n->len > NAME_MAX_LEN || strlen(n->str) != n->len)
        return lithe__fail(LITHE_ERR_FORMAT, "%s: layer %zu (%s) has no name (or one longer than %d bytes)", WHAT, i, c->str,
                           NAME_MAX_LEN);
    *name = n->str;
    *cls = c->str;
    *cfg = config;
    return LITHE_OK;
}

/* Every layer class and activation the model uses that lithe lacks, listed at once. */
lithe_status lithe__tfjs_check_layers(const js_val *layers); /* tfjs_check.c */
static lithe_status check_supported(const js_val *layers) {
    char missing[1024] = "", seen[32][NAME_MAX_LEN + 64];
    size_t nmiss = 0;
    LITHE__TRY(lithe__tfjs_check_layers(layers));
    for (size_t i = 0; i < layers->len; i++) {
        const char *name, *cls;
        const js_val *cfg;
        LITHE__TRY(layer_name(&layers->items[i], i, &name, &cls, &cfg));
        char item[NAME_MAX_LEN + 64] = "";
        bool known = in_list(layer_names, cls) || in_list(identity_layers, cls);
        const js_val *act = js_get(cfg, "activation");
        if (!known) snprintf(item, sizeof item, "%s", cls);
        else if (act && act->type == JS_STR && !activation_known(act->str)) snprintf(item, sizeof item, "activation '%s'", act->str);
        else if (act && act->type != JS_STR && act->type != JS_NULL) snprintf(item, sizeof item, "a non-string activation");
        bool dup = false;
        for (size_t j = 0; j < nmiss && j < 32 && !dup; j++) dup = !strcmp(seen[j], item);
        if (!item[0] || dup) continue;
        if (nmiss < 32) memcpy(seen[nmiss], item, sizeof item);
        size_t l = strlen(missing);
        snprintf(missing + l, sizeof missing - l, "%s%s", nmiss ? ", " : "", item);
        nmiss++;
    }
    if (nmiss)
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "%s: the model uses %zu layer type%s or activation%s lithe lacks: %s", WHAT,
                           nmiss, nmiss == 1 ? "" : "s", nmiss == 1 ? "" : "s", missing);
    return LITHE_OK;
}

static lithe_status lower_sequential(lower *L, const js_val *layers, const char *model_name) {
    ktensor *cur = NULL;
    for (size_t i = 0; i < layers->len; i++) {
        const char *name, *cls;
        const js_val *cfg;
        LITHE__TRY(layer_name(&layers->items[i], i, &name, &cls, &cfg));
        L->layer = name;
        L->cls = cls;
        if (!cur) {
            LITHE__TRY(make_input(L, !strcmp(cls, "InputLayer") ? name : "input", cfg, &cur));
            if (!strcmp(cls, "InputLayer")) continue;
        } else if (!strcmp(cls, "InputLayer")) {
            return lithe__fail(LITHE_ERR_FORMAT, "%s: InputLayer '%s' in the middle of a Sequential model", WHAT, name);
        }
        ktensor *o = NULL;
        LITHE__TRY(new_kt(L, name, 0, &o));
        LITHE__TRY(cfg_bool(L, cfg, "trainable", true, &L->layer_frozen));
        L->layer_frozen = !L->layer_frozen;
        LITHE__TRY(lower_layer(L, cls, cfg, &cur, 1, o));
        cur = o;
    }
    if (!cur) return lithe__fail(LITHE_ERR_FORMAT, "%s: Sequential model '%s' has no layers", WHAT, model_name);
    return make_output(L, cur, 0);
}

/* [name, node_index, tensor_index, ...] */
static lithe_status ref_of(const js_val *v, const char **name, int64_t *node_i, int64_t *index) {
    if (!v || v->type != JS_ARR || v->len < 3 || v->items[0].type != JS_STR || v->items[1].type != JS_NUM ||
        !v->items[1].is_int || v->items[2].type != JS_NUM || !v->items[2].is_int || v->items[1].i < 0 || v->items[2].i != 0 ||
        v->items[1].i > MAX_TENSORS)
        return lithe__fail(LITHE_ERR_FORMAT, "%s: a layer reference is not [name, node_index, 0, ...] (lithe's layers have one output)", WHAT);
    *name = v->items[0].str;
    *node_i = v->items[1].i;
    *index = v->items[2].i;
    return LITHE_OK;
}

static lithe_status lower_functional(lower *L, const js_val *config) {
    const js_val *layers = js_get(config, "layers"), *ins = js_get(config, "input_layers"),
                 *outs = js_get(config, "output_layers");
    if (!layers || layers->type != JS_ARR || !ins || ins->type != JS_ARR || !outs || outs->type != JS_ARR || !ins->len ||
        !outs->len || ins->len > 64 || outs->len > 16)
        return lithe__fail(LITHE_ERR_FORMAT, "%s: a functional model needs layers, 1 to 64 input_layers and 1 to 16 output_layers", WHAT);
    /* inputs, in input_layers order */
    for (size_t k = 0; k < ins->len; k++) {
        const char *name;
        int64_t ni, ti;
        LITHE__TRY(ref_of(&ins->items[k], &name, &ni, &ti));
        const js_val *cfg = NULL;
        for (size_t i = 0; i < layers->len && !cfg; i++) {
            const char *n, *c;
            const js_val *cf;
            LITHE__TRY(layer_name(&layers->items[i], i, &n, &c, &cf));
            if (!strcmp(n, name) && !strcmp(c, "InputLayer")) cfg = cf;
        }
        if (!cfg) return lithe__fail(LITHE_ERR_FORMAT, "%s: input '%s' is not an InputLayer of the model", WHAT, name);
        if (find_kt(L, name, 0, 0)) return lithe__fail(LITHE_ERR_FORMAT, "%s: input '%s' listed twice", WHAT, name);
        ktensor *t;
        L->layer = name;
        L->cls = "InputLayer";
        LITHE__TRY(make_input(L, name, cfg, &t));
    }
    /* every call (inbound node) of every layer, in dependency order: sweep until nothing is left */
    bool progress = true;
    size_t left = 1;
    while (progress && left) {
        progress = false;
        left = 0;
        for (size_t i = 0; i < layers->len; i++) {
            const char *name, *cls;
            const js_val *cfg;
            LITHE__TRY(layer_name(&layers->items[i], i, &name, &cls, &cfg));
            if (!strcmp(cls, "InputLayer")) continue;
            const js_val *nodes = js_get(&layers->items[i], "inbound_nodes");
            if (!nodes || nodes->type != JS_ARR || !nodes->len)
                return lithe__fail(LITHE_ERR_FORMAT, "%s: layer '%s' has no inbound_nodes", WHAT, name);
            if (nodes->len > 64) return lithe__fail(LITHE_ERR_FORMAT, "%s: layer '%s' is called %zu times", WHAT, name, nodes->len);
            for (size_t k = 0; k < nodes->len; k++) {
                if (find_kt(L, name, (int64_t)k, 0)) continue;
                const js_val *call = &nodes->items[k];
                if (call->type != JS_ARR || !call->len || call->len > 64)
                    return lithe__fail(LITHE_ERR_FORMAT, "%s: layer '%s': inbound node %zu is not a list of 1 to 64 references "
                                                         "(Keras 3's format is not read)", WHAT, name, k);
                ktensor *in[64];
                bool ready = true;
                for (size_t j = 0; j < call->len; j++) {
                    const char *src;
                    int64_t ni, ti;
                    LITHE__TRY(ref_of(&call->items[j], &src, &ni, &ti));
                    in[j] = find_kt(L, src, ni, ti);
                    ready = ready && in[j];
                }
                if (!ready) {
                    left++;
                    continue;
                }
                ktensor *o = NULL;
                LITHE__TRY(new_kt(L, name, (int64_t)k, &o));
                L->layer = name;
                L->cls = cls;
                LITHE__TRY(cfg_bool(L, cfg, "trainable", true, &L->layer_frozen));
                L->layer_frozen = !L->layer_frozen;
                LITHE__TRY(lower_layer(L, cls, cfg, in, call->len, o));
                progress = true;
            }
        }
    }
    if (left) return lithe__fail(LITHE_ERR_FORMAT, "%s: %zu layer calls read tensors nothing computes (a cycle or a missing layer)", WHAT, left);
    for (size_t k = 0; k < outs->len; k++) {
        const char *name;
        int64_t ni, ti;
        LITHE__TRY(ref_of(&outs->items[k], &name, &ni, &ti));
        ktensor *t = find_kt(L, name, ni, ti);
        if (!t) return lithe__fail(LITHE_ERR_FORMAT, "%s: output '%s' is never computed", WHAT, name);
        LITHE__TRY(make_output(L, t, k));
    }
    return LITHE_OK;
}

static void lower_free(lower *L) {
    wb_free(&L->nodes);
    wb_free(&L->inits);
    wb_free(&L->inputs);
    wb_free(&L->outputs);
    wb_free(&L->frozen);
    for (size_t i = 0; i < L->n_w; i++) lithe__free(L->w[i].data);
    lithe__free(L->w);
    lithe__free(L->kt);
}

/* The model's topology object: {class_name, config} itself, or Keras's {model_config: ...}. */
static const js_val *topology_of(const js_val *root) {
    const js_val *t = js_get(root, "modelTopology");
    const js_val *mc = js_get(t, "model_config");
    return mc && mc->type == JS_OBJ ? mc : t;
}

/* The ONNX ModelProto bytes of a TF.js model (*out: lithe__free). group_bytes, when not NULL, the
 * bytes each manifest group's shards hold (the file loader checks them group by group). */
static lithe_status tfjs_to_onnx(const char *json, size_t json_len, const uint8_t *weights, size_t weights_len,
                                 const size_t *group_bytes, size_t n_groups, uint8_t **out, size_t *out_len,
                                 wb *frozen) {
    *out = NULL;
    *out_len = 0;
    js_doc doc;
    LITHE__TRY(js_parse(json, json_len, "tfjs model.json", &doc));
    lower L = {0};
    lithe_status s = LITHE_OK;
    const js_val *root = &doc.root, *fmt = js_get(root, "format"), *topo = topology_of(root);
    if (root->type != JS_OBJ) s = lithe__fail(LITHE_ERR_FORMAT, "%s: model.json is not a JSON object", WHAT);
    else if (fmt && fmt->type == JS_STR && !strcmp(fmt->str, "graph-model"))
        s = lithe__fail(LITHE_ERR_UNSUPPORTED, "%s: a TF.js graph model (a converted SavedModel) is not read: convert the "
                                               "SavedModel to ONNX with tf2onnx and load the .onnx file", WHAT);
    else if (fmt && !is_str(fmt, "layers-model"))
        s = lithe__fail(LITHE_ERR_UNSUPPORTED, "%s: model.json has format %s%s%s; lithe reads \"layers-model\"", WHAT,
                        fmt->type == JS_STR ? "\"" : "", fmt->type == JS_STR ? fmt->str : "(not a string)",
                        fmt->type == JS_STR ? "\"" : "");
    else if (!topo || topo->type != JS_OBJ)
        s = lithe__fail(LITHE_ERR_FORMAT, "%s: model.json has no modelTopology object", WHAT);
    const js_val *cls = js_get(topo, "class_name"), *config = js_get(topo, "config");
    const js_val *layers = config && config->type == JS_ARR ? config : js_get(config, "layers"); /* old Sequential: a list */
    if (s == LITHE_OK && (!cls || cls->type != JS_STR || !layers || layers->type != JS_ARR))
        s = lithe__fail(LITHE_ERR_FORMAT, "%s: modelTopology has no class_name and config.layers", WHAT);
    bool sequential = s == LITHE_OK && !strcmp(cls->str, "Sequential");
    if (s == LITHE_OK && !sequential && strcmp(cls->str, "Model") && strcmp(cls->str, "Functional"))
        s = lithe__fail(LITHE_ERR_UNSUPPORTED, "%s: a model of class '%s' (lithe reads Sequential, Model and Functional)", WHAT,
                        cls->str);
    if (s == LITHE_OK && layers->len > MAX_LAYERS) s = lithe__fail(LITHE_ERR_FORMAT, "%s: more than %d layers", WHAT, MAX_LAYERS);
    if (s == LITHE_OK) s = check_supported(layers);
    if (s == LITHE_OK) s = read_weights(js_get(root, "weightsManifest"), weights, weights_len, group_bytes, n_groups, &L.w, &L.n_w);
    if (s == LITHE_OK) {
        L.kt = lithe__calloc(MAX_TENSORS, sizeof *L.kt);
        if (!L.kt) s = lithe__oom(WHAT, MAX_TENSORS * sizeof *L.kt);
    }
    if (s == LITHE_OK) {
        const js_val *mn = js_get(config, "name");
        s = sequential ? lower_sequential(&L, layers, mn && mn->type == JS_STR ? mn->str : "") : lower_functional(&L, config);
    }
    if (s == LITHE_OK) {
        wb graph = {0}, model = {0}, opset = {0};
        wb_put(&graph, L.nodes.p, L.nodes.n);
        wb_str(&graph, 2, "tfjs");
        wb_put(&graph, L.inits.p, L.inits.n);
        wb_put(&graph, L.inputs.p, L.inputs.n);
        wb_put(&graph, L.outputs.p, L.outputs.n);
        if (L.nodes.oom || L.inits.oom || L.inputs.oom || L.outputs.oom) graph.oom = true;
        wb_int(&model, 1, 8); /* ir_version */
        wb_str(&model, 2, "lithe-tfjs");
        wb_sub(&model, 7, &graph);
        wb_str(&opset, 1, "");
        wb_int(&opset, 2, 13);
        wb_sub(&model, 8, &opset);
        if (model.oom || L.frozen.oom) {
            wb_free(&model);
            s = lithe__oom(WHAT, L.inits.n);
        } else {
            *out = model.p;
            *out_len = model.n;
            *frozen = L.frozen; /* handed over */
            memset(&L.frozen, 0, sizeof L.frozen);
        }
    }
    lower_free(&L);
    js_doc_free(&doc);
    return s;
}

/* ---- public ---- */

static lithe_status load_lowered(const char *json, size_t json_len, const uint8_t *weights, size_t weights_len,
                                 const size_t *group_bytes, size_t n_groups, lithe_model **out) {
    uint8_t *onnx = NULL;
    size_t n = 0;
    wb frozen = {0};
    LITHE__TRY(tfjs_to_onnx(json, json_len, weights, weights_len, group_bytes, n_groups, &onnx, &n, &frozen));
    lithe_status s = lithe_onnx_load_bytes(onnx, n, out);
    lithe__free(onnx);
    /* the weights of layers saved with "trainable": false stay frozen, as in TF.js */
    for (size_t at = 0; s == LITHE_OK && at < frozen.n; at += strlen((const char *)frozen.p + at) + 1)
        s = lithe_model_set_frozen(*out, (const char *)frozen.p + at, true);
    wb_free(&frozen);
    if (s != LITHE_OK && *out) {
        lithe_model_free(*out);
        *out = NULL;
    }
    if (s != LITHE_OK && s != LITHE_ERR_OOM) {
        char why[512];
        snprintf(why, sizeof why, "%s", lithe_last_error());
        return lithe__fail(s, "%s: the lowered graph: %s", WHAT, why);
    }
    return s;
}

lithe_status lithe_tfjs_load_bytes(const char *model_json, size_t json_len, const uint8_t *weights, size_t weights_len,
                                   lithe_model **out) {
    LITHE__CHECK_ARG(out, "lithe_tfjs_load_bytes", "out is NULL");
    *out = NULL;
    LITHE__CHECK_ARG(model_json || !json_len, "lithe_tfjs_load_bytes", "model_json is NULL");
    LITHE__CHECK_ARG(weights || !weights_len, "lithe_tfjs_load_bytes", "weights is NULL");
    static const uint8_t empty[1];
    return load_lowered(model_json ? model_json : "", json_len, weights ? weights : empty, weights_len, NULL, 0, out);
}

/* A shard path from the manifest: relative, no "..", no backslashes or NULs. */
static bool safe_path(const js_val *p) {
    if (!p || p->type != JS_STR || !p->len || strlen(p->str) != p->len || p->len > 4096) return false;
    const char *s = p->str;
    if (s[0] == '/' || strchr(s, '\\') || strchr(s, ':')) return false;
    for (const char *seg = s; seg;) {
        const char *e = strchr(seg, '/');
        size_t l = e ? (size_t)(e - seg) : strlen(seg);
        if (l == 2 && seg[0] == '.' && seg[1] == '.') return false;
        seg = e ? e + 1 : NULL;
    }
    return true;
}

lithe_status lithe_tfjs_load(const char *path, lithe_model **out) {
    LITHE__CHECK_ARG(out, "lithe_tfjs_load", "out is NULL");
    *out = NULL;
    LITHE__CHECK_ARG(path, "lithe_tfjs_load", "path is NULL");
    uint8_t *json = NULL, *all = NULL;
    size_t json_n = 0, all_n = 0, all_cap = 0, *groups = NULL, n_groups = 0;
    LITHE__TRY(lithe__read_file(path, &json, &json_n));
    js_doc doc;
    lithe_status s = js_parse((const char *)json, json_n, "tfjs model.json", &doc);
    if (s != LITHE_OK) {
        lithe__free(json);
        char why[512];
        snprintf(why, sizeof why, "%s", lithe_last_error());
        return lithe__fail(s, "%s: %s", path, why);
    }
    const js_val *man = js_get(&doc.root, "weightsManifest");
    if (!man || man->type != JS_ARR) s = lithe__fail(LITHE_ERR_FORMAT, "%s: %s has no weightsManifest array", WHAT, path);
    const char *slash = strrchr(path, '/');
    size_t dir_n = slash ? (size_t)(slash - path) + 1 : 0;
    if (s == LITHE_OK && !(groups = lithe__calloc(man->len + 1, sizeof *groups))) s = lithe__oom(WHAT, man->len * 8);
    for (size_t g = 0; s == LITHE_OK && g < man->len; g++) {
        size_t before = all_n;
        const js_val *paths = js_get(&man->items[g], "paths");
        if (!paths || paths->type != JS_ARR || paths->len > 4096) {
            s = lithe__fail(LITHE_ERR_FORMAT, "%s: weightsManifest[%zu] has no paths array", WHAT, g);
            break;
        }
        for (size_t k = 0; s == LITHE_OK && k < paths->len; k++) {
            const js_val *p = &paths->items[k];
            if (!safe_path(p)) {
                s = lithe__fail(LITHE_ERR_FORMAT, "%s: weightsManifest[%zu].paths[%zu] is not a relative path inside the "
                                                  "model's folder (absolute paths and '..' are refused)", WHAT, g, k);
                break;
            }
            char *full = lithe__malloc(dir_n + p->len + 1);
            if (!full) {
                s = lithe__oom(WHAT, dir_n + p->len + 1);
                break;
            }
            memcpy(full, path, dir_n);
            memcpy(full + dir_n, p->str, p->len + 1);
            uint8_t *b = NULL;
            size_t n = 0;
            s = lithe__read_file(full, &b, &n);
            lithe__free(full);
            if (s != LITHE_OK) break;
            if (n > all_cap - all_n) {
                size_t nc = all_cap ? all_cap : 4096;
                while (nc - all_n < n && nc < SIZE_MAX / 4) nc *= 2;
                uint8_t *np = n <= SIZE_MAX / 4 - all_n && nc - all_n >= n ? lithe__realloc(all, nc) : NULL;
                if (!np) {
                    lithe__free(b);
                    s = lithe__oom(WHAT, all_n + n);
                    break;
                }
                all = np;
                all_cap = nc;
            }
            if (n) memcpy(all + all_n, b, n);
            all_n += n;
            lithe__free(b);
        }
        groups[n_groups++] = all_n - before;
    }
    js_doc_free(&doc);
    static const uint8_t empty[1];
    if (s == LITHE_OK) s = load_lowered((const char *)json, json_n, all ? all : empty, all_n, groups, n_groups, out);
    lithe__free(json);
    lithe__free(all);
    lithe__free(groups);
    if (s != LITHE_OK) {
        char why[512];
        snprintf(why, sizeof why, "%s", lithe_last_error());
        return lithe__fail(s, "%s: %s", path, why);
    }
    return LITHE_OK;
}
