/* An imported graph node inside a native tree (chain(PyTorchWrapper's graph, Softmax), as the
 * Python exporter builds them) inlined into the tree's ONNX graph (lithe_model_save_onnx): its
 * nodes, attributes and initializers as they are — the params with their current values — its
 * value, node and initializer names under the prefix "<node name>_<walk index>/", its input read
 * from the value before it, its output feeding the value after it. The tree is written at opset 17,
 * so a graph is inlined only from opsets 13-17, where the operators torch exports mean the same as
 * at 17 (Softmax's axis, Squeeze's and Split's inputs changed at 13; Reduce*'s axes move to inputs
 * at 18); others are refused naming the node and its opset. A graph with several inputs or outputs,
 * or another operator domain, is refused too. */
#include "onnx_write.h"

#include <stdio.h>
#include <string.h>

#define WHAT "lithe_model_save_onnx"
#define VN LITHE__OX_VN

typedef struct span {
    const uint8_t *p;
    size_t n;
} span;

typedef struct inl {
    span *inits;
    size_t n_inits, cap_inits;
    span input, in_type, output, out_type;
    int n_in, n_out;
    const char *x, *ipre, *vpre; /* the value read; the initializers' and values' prefixes */
    bool *written;               /* per param of the node: written */
} inl;

static bool span_is(span a, const uint8_t *p, size_t n) { return a.n == n && (!n || !memcmp(a.p, p, n)); }
static bool is_init(const inl *c, const uint8_t *p, size_t n) {
    for (size_t i = 0; i < c->n_inits; i++)
        if (span_is(c->inits[i], p, n)) return true;
    return false;
}

/* A string field holding a value name, renamed: "" stays "" (an input left out), the graph's
 * input becomes x, an initializer gets ipre, any other value vpre. */
static void put_name(wb *b, unsigned field, const inl *c, const uint8_t *p, size_t n) {
    if (n && span_is(c->input, p, n)) {
        wb_str(b, field, c->x);
        return;
    }
    const char *pre = !n ? "" : is_init(c, p, n) ? c->ipre : c->vpre;
    size_t pl = strlen(pre);
    wb_varint(b, (uint64_t)field << 3 | 2);
    wb_varint(b, pl + n);
    wb_put(b, pre, pl);
    wb_put(b, p, n);
}

/* The string field `field` of message d[0..n) (the first), or an empty span. */
static lithe_status str_field(const uint8_t *d, size_t n, uint32_t field, span *out) {
    *out = (span){NULL, 0};
    for (rd r = {d, d + n}; r.p < r.end;) {
        uint32_t f = 0, wt = 0;
        const uint8_t *st = NULL, *pd = NULL;
        size_t pn = 0;
        LITHE__TRY(lithe__ox_field(&r, &f, &wt, &st, &pd, &pn));
        if (f == field && wt == 2 && !out->p) *out = (span){pd, pn};
    }
    return LITHE_OK;
}

/* The value of a varint field that starts (key included) at st and ends at end. */
static uint64_t field_varint(const uint8_t *st, const uint8_t *end) {
    const uint8_t *c = st;
    while (c < end && (*c & 0x80)) c++; /* the key */
    uint64_t v = 0;
    c++;
    for (int sh = 0; c < end && sh < 64; c++, sh += 7) {
        v |= (uint64_t)(*c & 0x7f) << sh;
        if (!(*c & 0x80)) break;
    }
    return v;
}

/* The default domain's opset of ModelProto d[0..n), and its graph; another domain is refused. */
static lithe_status model_parts(lithe_model *m, const uint8_t *d, size_t n, int64_t *opset, span *graph) {
    *opset = 0;
    *graph = (span){NULL, 0};
    for (rd r = {d, d + n}; r.p < r.end;) {
        uint32_t f = 0, wt = 0;
        const uint8_t *st = NULL, *pd = NULL;
        size_t pn = 0;
        LITHE__TRY(lithe__ox_field(&r, &f, &wt, &st, &pd, &pn));
        if (f == 7 && wt == 2) *graph = (span){pd, pn};
        if (f != 8 || wt != 2) continue;
        span dom = {NULL, 0};
        uint64_t v = 0;
        for (rd q = {pd, pd + pn}; q.p < q.end;) { /* OperatorSetIdProto: domain 1, version 2 */
            uint32_t g = 0, gw = 0;
            const uint8_t *gs = NULL, *gd = NULL;
            size_t gn = 0;
            LITHE__TRY(lithe__ox_field(&q, &g, &gw, &gs, &gd, &gn));
            if (g == 1 && gw == 2) dom = (span){gd, gn};
            if (g == 2 && gw == 0) v = field_varint(gs, q.p);
        }
        if (dom.n && !span_is(dom, (const uint8_t *)"ai.onnx", 7))
            return lithe__fail(LITHE_ERR_UNSUPPORTED, "%s: node '%s' (onnx_graph.v1) imports operator domain '%.*s': "
                                                      "only the default domain inlines into a tree", WHAT, m->name,
                               (int)dom.n, (const char *)dom.p);
        *opset = (int64_t)v;
    }
    return LITHE_OK;
}

/* The graph's initializer names, its one real input (and its type) and its one output. */
static lithe_status graph_names(lithe_model *m, span g, inl *c) {
    span ins[8];
    span types[8];
    int n_ins = 0;
    for (int pass = 0; pass < 2; pass++)
        for (rd r = {g.p, g.p + g.n}; r.p < r.end;) {
            uint32_t f = 0, wt = 0;
            const uint8_t *st = NULL, *pd = NULL;
            size_t pn = 0;
            LITHE__TRY(lithe__ox_field(&r, &f, &wt, &st, &pd, &pn));
            if (wt != 2) continue;
            span name = {NULL, 0};
            if (pass == 0 && f == 5) { /* initializer: TensorProto.name 8 */
                LITHE__TRY(str_field(pd, pn, 8, &name));
                if (c->n_inits == c->cap_inits) {
                    size_t nc = c->cap_inits ? 2 * c->cap_inits : 16;
                    span *a = lithe__realloc(c->inits, nc * sizeof *a);
                    if (!a) return lithe__oom(WHAT, nc * sizeof *a);
                    c->inits = a;
                    c->cap_inits = nc;
                }
                c->inits[c->n_inits++] = name;
            } else if (pass == 1 && (f == 11 || f == 12)) { /* input / output: ValueInfoProto name 1, type 2 */
                LITHE__TRY(str_field(pd, pn, 1, &name));
                if (f == 12) {
                    LITHE__TRY(str_field(pd, pn, 2, &c->out_type));
                    c->output = name;
                    c->n_out++;
                } else if (!is_init(c, name.p, name.n)) {
                    if (n_ins < 8) {
                        LITHE__TRY(str_field(pd, pn, 2, &types[n_ins]));
                        ins[n_ins] = name;
                    }
                    n_ins++;
                }
            }
        }
    if (n_ins != 1 || c->n_out != 1)
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "%s: node '%s' (onnx_graph.v1) has %d inputs and %d outputs: only a "
                                                  "graph of one input and one output inlines into a tree (export the "
                                                  "graph node on its own)", WHAT, m->name, n_ins, c->n_out);
    c->input = ins[0];
    c->in_type = types[0];
    return LITHE_OK;
}

/* NodeProto d[0..n) renamed into o's nodes. */
static lithe_status put_node(lithe__ox *o, lithe_model *m, const inl *c, const uint8_t *d, size_t n) {
    span op;
    LITHE__TRY(str_field(d, n, 4, &op));
    if (span_is(op, (const uint8_t *)"If", 2) || span_is(op, (const uint8_t *)"Loop", 4) ||
        span_is(op, (const uint8_t *)"Scan", 4))
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "%s: node '%s' (onnx_graph.v1) has control flow (%.*s): its subgraphs "
                                                  "do not inline into a tree; export the graph node on its own", WHAT,
                           m->name, (int)op.n, (const char *)op.p);
    wb nd = {0};
    for (rd r = {d, d + n}; r.p < r.end;) {
        uint32_t f = 0, wt = 0;
        const uint8_t *st = NULL, *pd = NULL;
        size_t pn = 0;
        lithe_status s = lithe__ox_field(&r, &f, &wt, &st, &pd, &pn);
        if (s != LITHE_OK) {
            wb_free(&nd);
            return s;
        }
        if ((f == 1 || f == 2) && wt == 2) { /* input, output */
            put_name(&nd, f, c, pd, pn);
        } else if (f == 3 && wt == 2) { /* name */
            size_t pl = strlen(c->vpre);
            wb_varint(&nd, 3u << 3 | 2);
            wb_varint(&nd, pl + pn);
            wb_put(&nd, c->vpre, pl);
            wb_put(&nd, pd, pn);
        } else {
            wb_put(&nd, st, (size_t)(r.p - st));
        }
    }
    wb_sub(&o->nodes, 1, &nd);
    return LITHE_OK;
}

static lithe_status inline_body(lithe__ox *o, lithe_model *m, bool first, inl *c, char *y) {
    lithe_tensor *bytes = NULL;
    LITHE__TRY(lithe_model_get_attr_tensor(m, "onnx", &bytes));
    if (bytes->dtype != LITHE_U8 || bytes->ndim != 1 || !lithe_tensor_is_contiguous(bytes))
        return lithe__fail(LITHE_ERR_FORMAT, "%s: %s: the 'onnx' attr must be a 1-D uint8 tensor", WHAT, m->name);
    int64_t opset = 0;
    span g;
    LITHE__TRY(model_parts(m, lithe_tensor_data(bytes), (size_t)bytes->numel, &opset, &g));
    if (opset < 13 || opset > LITHE__ONNX_EXPORT_OPSET)
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "%s: node '%s' (onnx_graph.v1) is at opset %lld: a graph inlines into "
                                                  "a tree (written at opset %d) from opsets 13-%d only; export the graph "
                                                  "node on its own, or re-export it at opset 13-17", WHAT, m->name,
                           (long long)opset, LITHE__ONNX_EXPORT_OPSET, LITHE__ONNX_EXPORT_OPSET);
    LITHE__TRY(graph_names(m, g, c));
    if (!strcmp(c->x, "X") && !o->in_type.n) wb_put(&o->in_type, c->in_type.p, c->in_type.n);
    for (rd r = {g.p, g.p + g.n}; r.p < r.end;) {
        uint32_t f = 0, wt = 0;
        const uint8_t *st = NULL, *pd = NULL;
        size_t pn = 0;
        LITHE__TRY(lithe__ox_field(&r, &f, &wt, &st, &pd, &pn));
        if (f == 5 && wt == 2 && first) LITHE__TRY(lithe__ox_tensor(m, pd, pn, c->ipre, c->written, &o->inits));
        if (f == 1 && wt == 2) LITHE__TRY(put_node(o, m, c, pd, pn));
    }
    if (first) LITHE__TRY(lithe__ox_all_written(m, c->written));
    const span out = c->output;
    if (span_is(c->input, out.p, out.n)) snprintf(y, VN, "%s", c->x);
    else snprintf(y, VN, "%s%.*s", is_init(c, out.p, out.n) ? c->ipre : c->vpre, (int)out.n, (const char *)out.p);
    if (strlen(y) + 1 >= VN)
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "%s: node '%s': output name '%.*s' is too long to inline", WHAT,
                           m->name, (int)out.n, (const char *)out.p);
    o->out_type.n = 0;
    wb_put(&o->out_type, c->out_type.p, c->out_type.n);
    snprintf(o->out_name, sizeof o->out_name, "%s", y);
    return LITHE_OK;
}

lithe_status lithe__onnx_inline(lithe__ox *o, lithe_model *m, size_t index, bool first, const char *x, char *y) {
    char ipre[VN], vpre[VN + 24];
    snprintf(ipre, sizeof ipre, "%.60s_%zu/", m->name, index);
    if (first) snprintf(vpre, sizeof vpre, "%s", ipre);
    else snprintf(vpre, sizeof vpre, "%.60s_%zu/%zu/", m->name, index, o->counter++); /* a later use: own values */
    inl c = {0};
    c.written = lithe__calloc(m->n_params ? m->n_params : 1, sizeof *c.written);
    if (!c.written) return lithe__oom(WHAT, m->n_params);
    c.x = x;
    c.ipre = ipre;
    c.vpre = vpre;
    lithe_status s = inline_body(o, m, first, &c, y);
    lithe__free(c.inits);
    lithe__free(c.written);
    return s;
}
