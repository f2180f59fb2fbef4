/* The .lithe file: one safetensors file (docs/format.md) — weights as named tensors, the
 * architecture as JSON in the header's __metadata__, optionally the optimizer state as a byte
 * tensor. Loading never trusts the bytes: every length, offset, shape product, dtype, index and
 * name is checked before use, and the tree is checked to be acyclic and in walk order. */
#if !defined(_WIN32) && !defined(__wasi__) && !defined(__EMSCRIPTEN__)
#define _POSIX_C_SOURCE 200809L
#define LITHE_HAVE_MMAP 1
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#endif
#include "json.h"
#include "lithe_file.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LITHE_FORMAT_VERSION 1
#define MAX_HEADER ((uint64_t)100 << 20) /* 100 MiB of JSON is far beyond any real model */

static const char *const WHAT = ".lithe";
/* The largest file read whole when it cannot be mapped (load_mapped). */
#define LITHE__READ_FALLBACK_MAX ((uint64_t)1 << 30)

static const struct {
    const char *name;
    lithe_dtype dtype;
} st_dtypes[] = {{"F32", LITHE_F32}, {"F16", LITHE_F16}, {"BF16", LITHE_BF16}, {"I32", LITHE_I32},
                 {"I64", LITHE_I64}, {"U64", LITHE_U64}, {"U8", LITHE_U8},     {"U32", LITHE_U32},
                 {"I8", LITHE_I8}};

/* ---- saving ---- */

static void arch_attr(js_buf *b, const lithe__attr *a) {
    switch (a->type) {
    case LITHE_ATTR_NULL: js_raw(b, "null"); return;
    case LITHE_ATTR_INT: js_raw(b, "{\"int\":"); js_int(b, a->v.i); js_raw(b, "}"); return;
    case LITHE_ATTR_FLOAT: js_raw(b, "{\"float\":"); js_double(b, a->v.f); js_raw(b, "}"); return;
    case LITHE_ATTR_BOOL: js_raw(b, a->v.b ? "{\"bool\":true}" : "{\"bool\":false}"); return;
    case LITHE_ATTR_STR: js_raw(b, "{\"str\":"); js_str(b, a->v.s); js_raw(b, "}"); return;
    case LITHE_ATTR_TENSOR: {
        const lithe_tensor *t = a->v.t;
        if (t->dtype == LITHE_U8) { /* Thinc's msgpack bytes of a dict attr, as hex */
            static const char hx[] = "0123456789abcdef";
            js_raw(b, "{\"msgpack\":\"");
            for (int64_t i = 0; i < t->numel; i++) {
                uint8_t c = ((const uint8_t *)lithe__tdata(t))[i];
                char two[3] = {hx[c >> 4], hx[c & 15], 0};
                js_raw(b, two);
            }
            js_raw(b, "\"}");
            return;
        }
        js_raw(b, "{\"ints\":[");
        for (int64_t i = 0; i < t->numel; i++) {
            if (i) js_raw(b, ",");
            js_int(b, ((const int64_t *)lithe__tdata(t))[i]);
        }
        js_raw(b, "]}");
        return;
    }
    case LITHE_ATTR_NONE: js_raw(b, "null"); return;
    }
}

/* An imported graph's `onnx` attr (core/graph/): saved as the byte tensor "<node>.attr.onnx" beside
 * the weights, not as hex in the JSON header. */
static bool graph_bytes_attr(const lithe_model *m, const lithe__attr *at) {
    return m->type == LITHE__ONNX_GRAPH_TYPE && at->type == LITHE_ATTR_TENSOR && at->v.t->dtype == LITHE_U8 &&
           !strcmp(at->name, "onnx");
}

static lithe_status architecture(lithe_model **nodes, size_t n, js_buf *b) {
    js_raw(b, "{\"root\":0,\"nodes\":[");
    for (size_t i = 0; i < n; i++) {
        const lithe_model *m = nodes[i];
        if (i) js_raw(b, ",");
        js_raw(b, "{\"layer\":");
        js_str(b, m->type->registered_name);
        js_raw(b, ",\"name\":");
        js_str(b, m->name);
        js_raw(b, ",\"dims\":{");
        for (size_t d = 0; d < m->n_dims; d++) {
            if (d) js_raw(b, ",");
            js_str(b, m->dims[d].name);
            js_raw(b, ":");
            if (m->dims[d].value) js_int(b, m->dims[d].value);
            else js_raw(b, "null");
        }
        js_raw(b, "},\"attrs\":{");
        for (size_t a = 0; a < m->n_attrs; a++) {
            const lithe__attr *at = &m->attrs[a];
            if (at->type == LITHE_ATTR_TENSOR && ((at->v.t->dtype != LITHE_I64 && at->v.t->dtype != LITHE_U8) ||
                                                  at->v.t->ndim != 1 || !lithe_tensor_is_contiguous(at->v.t) ||
                                                  !at->v.t->storage->backend->host_memory))
                return lithe__fail(LITHE_ERR_UNSUPPORTED, "%s: attr '%s': only 1-D int64 tensor attrs are saved",
                                   m->name, at->name);
            if (a) js_raw(b, ",");
            js_str(b, at->name);
            js_raw(b, ":");
            if (graph_bytes_attr(m, at)) { /* an ONNX graph's bytes: a U8 tensor of the file */
                char ref[64];
                snprintf(ref, sizeof ref, "{\"bytes\":\"%zu.attr.%s\"}", i, at->name);
                js_raw(b, ref);
                continue;
            }
            arch_attr(b, at);
        }
        js_raw(b, "},\"params\":[");
        for (size_t p = 0; p < m->n_params; p++) {
            if (p) js_raw(b, ",");
            js_str(b, m->params[p].name);
        }
        js_raw(b, "],\"frozen\":[");
        bool first = true;
        for (size_t p = 0; p < m->n_params; p++)
            if (m->params[p].frozen) {
                if (!first) js_raw(b, ",");
                first = false;
                js_str(b, m->params[p].name);
            }
        js_raw(b, "],\"layers\":[");
        for (size_t c = 0; c < m->n_layers; c++) {
            size_t k = 0;
            while (k < n && nodes[k] != m->layers[c]) k++;
            if (c) js_raw(b, ",");
            js_int(b, (int64_t)k);
        }
        js_raw(b, "],\"refs\":{");
        for (size_t r = 0; r < m->n_refs; r++) {
            if (r) js_raw(b, ",");
            js_str(b, m->refs[r].name);
            js_raw(b, ":");
            if (!m->refs[r].node) {
                js_raw(b, "null");
                continue;
            }
            size_t k = 0;
            while (k < n && nodes[k] != m->refs[r].node) k++;
            if (k == n)
                return lithe__fail(LITHE_ERR_VALUE, "%s: ref '%s' points outside the tree", m->name, m->refs[r].name);
            js_int(b, (int64_t)k);
        }
        js_raw(b, "},\"init_W\":");
        js_int(b, m->init_W);
        js_raw(b, ",\"init_b\":");
        js_int(b, m->init_b);
        js_raw(b, ",\"cfg\":[");
        js_double(b, m->cfg[0]);
        js_raw(b, ",");
        js_double(b, m->cfg[1]);
        js_raw(b, "]}");
        /* an ONNX graph's shim is rebuilt from its `onnx` attr at load; other shims cannot be saved */
        if (m->n_shims && m->type != LITHE__ONNX_GRAPH_TYPE)
            return lithe__fail(LITHE_ERR_UNSUPPORTED, "%s: nodes with shims cannot be saved yet", m->name);
    }
    js_raw(b, "]}");
    return LITHE_OK;
}

static lithe_status model_save_bytes_body(lithe_model *m, const lithe_optimizer *opt, uint8_t **out, size_t *len) {
    LITHE__CHECK_ARG(out && len, "lithe_model_save_bytes", "out or len is NULL");
    *out = NULL;
    *len = 0;
    LITHE__CHECK_ARG(m, "lithe_model_save_bytes", "model is NULL");
    size_t n = 0;
    LITHE__TRY(lithe_model_walk(m, NULL, 0, &n));
    lithe_model **nodes = lithe__malloc((n ? n : 1) * sizeof *nodes);
    if (!nodes) return lithe__oom("save", n * sizeof *nodes);
    lithe_status s = lithe_model_walk(m, nodes, n, &n);
    js_buf arch = {0}, head = {0};
    out_tensor *ts = NULL;
    size_t nt = 0;
    uint8_t *state = NULL, *file = NULL;
    size_t state_len = 0;
    if (s == LITHE_OK) s = architecture(nodes, n, &arch);
    if (s == LITHE_OK && arch.oom) s = lithe__oom("save", arch.n);
    size_t cap = 1;
    for (size_t i = 0; s == LITHE_OK && i < n; i++) cap += 3 * nodes[i]->n_params + nodes[i]->n_attrs; /* nodes unset when walk failed; a quantized param's scale and zero point */
    if (s == LITHE_OK) {
        ts = lithe__calloc(cap, sizeof *ts);
        if (!ts) s = lithe__oom("save", cap * sizeof *ts);
    }
    for (size_t i = 0; s == LITHE_OK && i < n; i++)
        for (size_t p = 0; p < nodes[i]->n_params; p++) {
            const lithe_tensor *t = nodes[i]->params[p].value;
            if (!t) continue;
            snprintf(ts[nt].name, sizeof ts[nt].name, "%zu.%s", i, nodes[i]->params[p].name);
            ts[nt].t = t;
            ts[nt].nbytes = (size_t)t->numel * lithe_dtype_size(t->dtype);
            nt++;
        }
    js_buf quant = {0}; /* lithe.quantization: how each quantized param decodes */
    if (s == LITHE_OK) lithe__lf_quant_out(ts, &nt, &quant);
    if (s == LITHE_OK && quant.oom) s = lithe__oom("save", quant.n);
    for (size_t i = 0; s == LITHE_OK && i < n; i++)
        for (size_t a = 0; a < nodes[i]->n_attrs; a++) {
            const lithe__attr *at = &nodes[i]->attrs[a];
            if (!graph_bytes_attr(nodes[i], at)) continue;
            snprintf(ts[nt].name, sizeof ts[nt].name, "%zu.attr.%s", i, at->name);
            ts[nt].t = at->v.t;
            ts[nt].nbytes = (size_t)at->v.t->numel;
            nt++;
        }
    if (s == LITHE_OK && opt) {
        s = lithe_optimizer_save_state(opt, m, &state, &state_len);
        if (s == LITHE_OK) {
            snprintf(ts[nt].name, sizeof ts[nt].name, "optimizer.state");
            ts[nt].bytes = state;
            ts[nt].nbytes = state_len;
            nt++;
        }
    }
    /* the header: __metadata__ then the tensors in data order, padded with spaces so that the data
     * starts 64-byte aligned in the file: a memory-mapped load then hands the kernels aligned
     * weights (at 8 bytes past a line, AVX-512 loads straddle cache lines: batch-1 predicts of
     * the bench's MLP took 0.083 ms mapped against 0.060 ms read into aligned memory) */
    if (s == LITHE_OK) {
        js_raw(&head, "{\"__metadata__\":{\"format\":\"lithe\",\"lithe.format_version\":\"1\",\"lithe.architecture\":");
        js_str(&head, arch.p);
        if (quant.n > 2) {
            js_raw(&head, ",\"lithe.quantization\":");
            js_str(&head, quant.p);
        }
        js_raw(&head, "}");
        size_t off = 0;
        for (size_t k = 0; k < nt; k++) {
            js_raw(&head, ",");
            js_str(&head, ts[k].name);
            char buf[96];
            if (ts[k].t) {
                const lithe_tensor *t = ts[k].t;
                const char *dt = "F32";
                for (size_t d = 0; d < sizeof st_dtypes / sizeof st_dtypes[0]; d++)
                    if (st_dtypes[d].dtype == t->dtype) dt = st_dtypes[d].name;
                snprintf(buf, sizeof buf, ":{\"dtype\":\"%s\",\"shape\":[", dt);
                js_raw(&head, buf);
                for (int d = 0; d < t->ndim; d++) {
                    if (d) js_raw(&head, ",");
                    js_int(&head, t->shape[d]);
                }
            } else if (!ts[k].typed) {
                js_raw(&head, ":{\"dtype\":\"U8\",\"shape\":[");
                js_int(&head, (int64_t)ts[k].nbytes);
            } else { /* a quantized param's scale (F32) or zero point (I32) */
                js_raw(&head, ts[k].bytes_dtype == LITHE_F32 ? ":{\"dtype\":\"F32\",\"shape\":[" : ":{\"dtype\":\"I32\",\"shape\":[");
                js_int(&head, ts[k].bytes_numel);
            }
            snprintf(buf, sizeof buf, "],\"data_offsets\":[%zu,%zu]}", off, off + ts[k].nbytes);
            js_raw(&head, buf);
            off += ts[k].nbytes;
        }
        js_raw(&head, "}");
        while (!head.oom && (8 + head.n) % 64) js_raw(&head, " ");
        if (head.oom) s = lithe__oom("save", head.n);
        size_t total = 8 + head.n + off;
        if (s == LITHE_OK) {
            file = lithe__malloc(total);
            if (!file) s = lithe__oom("save", total);
        }
        if (s == LITHE_OK) {
            for (int k = 0; k < 8; k++) file[k] = (uint8_t)((uint64_t)head.n >> (8 * k));
            memcpy(file + 8, head.p, head.n);
            size_t at = 8 + head.n;
            for (size_t k = 0; s == LITHE_OK && k < nt; k++) {
                if (ts[k].t) s = lithe_tensor_read(ts[k].t, file + at, ts[k].nbytes);
                else memcpy(file + at, ts[k].bytes, ts[k].nbytes);
                at += ts[k].nbytes;
            }
            if (s == LITHE_OK) {
                *out = file;
                *len = total;
                file = NULL;
            }
        }
    }
    lithe__free(file);
    lithe__free(nodes);
    lithe__free(ts);
    lithe__free(arch.p);
    lithe__free(head.p);
    lithe__free(quant.p);
    lithe_buffer_free(state);
    return s;
}

lithe_status lithe_model_save_bytes(lithe_model *m, const lithe_optimizer *opt, uint8_t **out, size_t *len) {
    if (out) *out = NULL;
    if (len) *len = 0;
    if (m) LITHE__TRY(lithe__enter_tree(m, "lithe_model_save_bytes"));
    lithe_status s = model_save_bytes_body(m, opt, out, len);
    if (m) lithe__leave_tree(m);
    return s;
}

lithe_status lithe_model_save(lithe_model *m, const lithe_optimizer *opt, const char *path) {
    LITHE__CHECK_ARG(path, "lithe_model_save", "path is NULL");
    uint8_t *b = NULL;
    size_t n = 0;
    LITHE__TRY(lithe_model_save_bytes(m, opt, &b, &n));
    lithe_status s = lithe__write_file_atomic(path, b, n);
    lithe__free(b);
    return s;
}

/* ---- loading ---- */

static void parsed_free(parsed *p) {
    js_doc_free(&p->head);
    js_doc_free(&p->arch);
    js_doc_free(&p->quant);
    lithe__free(p->ts);
}

static lithe_status fmt(const char *fmt_, const char *a, const char *b) {
    return lithe__fail(LITHE_ERR_FORMAT, fmt_, WHAT, a ? a : "", b ? b : "");
}

static lithe_status parse_file(const uint8_t *data, size_t len, parsed *p) {
    memset(p, 0, sizeof *p);
    if (len < 8) return lithe__fail(LITHE_ERR_FORMAT, "%s: %zu bytes: too short for a safetensors header", WHAT, len);
    uint64_t hn = 0;
    for (int k = 7; k >= 0; k--) hn = hn << 8 | data[k];
    if (hn > len - 8 || hn > MAX_HEADER || hn < 2)
        return lithe__fail(LITHE_ERR_FORMAT, "%s: header length %llu in a file of %zu bytes", WHAT,
                           (unsigned long long)hn, len);
    LITHE__TRY(js_parse((const char *)data + 8, (size_t)hn, ".lithe header", &p->head));
    p->data = data + 8 + hn;
    p->data_len = len - 8 - hn;
    const js_val *root = &p->head.root;
    if (root->type != JS_OBJ) return fmt("%s: the header is not a JSON object%s%s", NULL, NULL);
    const js_val *meta = js_get(root, "__metadata__");
    const js_val *format = meta ? js_get(meta, "format") : NULL, *ver = meta ? js_get(meta, "lithe.format_version") : NULL,
                 *arch = meta ? js_get(meta, "lithe.architecture") : NULL;
    if (!format || format->type != JS_STR || strcmp(format->str, "lithe") || !arch || arch->type != JS_STR)
        return lithe__fail(LITHE_ERR_FORMAT, "%s: a safetensors file without lithe's architecture (its __metadata__ "
                                             "needs format \"lithe\" and lithe.architecture)", WHAT);
    if (!ver || ver->type != JS_STR || strcmp(ver->str, "1"))
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "%s: format version %s; this lithe reads version %d", WHAT,
                           ver && ver->type == JS_STR ? ver->str : "(missing)", LITHE_FORMAT_VERSION);
    p->ts = lithe__calloc(root->len ? root->len : 1, sizeof *p->ts);
    if (!p->ts) return lithe__oom(WHAT, root->len * sizeof *p->ts);
    for (size_t i = 0; i < root->len; i++) {
        const js_val *k = &root->items[2 * i], *v = &root->items[2 * i + 1];
        if (!strcmp(k->str, "__metadata__")) continue;
        in_tensor *t = &p->ts[p->nt];
        t->name = k->str;
        const js_val *dt = js_get(v, "dtype"), *sh = js_get(v, "shape"), *off = js_get(v, "data_offsets");
        if (!dt || dt->type != JS_STR || !sh || sh->type != JS_ARR || !off || off->type != JS_ARR || off->len != 2)
            return fmt("%s: tensor '%s' needs dtype, shape and data_offsets%s", k->str, NULL);
        size_t d = 0;
        while (d < sizeof st_dtypes / sizeof st_dtypes[0] && strcmp(st_dtypes[d].name, dt->str)) d++;
        if (d == sizeof st_dtypes / sizeof st_dtypes[0])
            return lithe__fail(LITHE_ERR_DTYPE, "%s: tensor '%s' has dtype %s, which lithe does not hold", WHAT, k->str,
                               dt->str);
        t->dtype = st_dtypes[d].dtype;
        if (sh->len > LITHE_MAX_DIMS) return fmt("%s: tensor '%s' has too many dims%s", k->str, NULL);
        t->ndim = (int)sh->len;
        uint64_t count = 1;
        for (size_t e = 0; e < sh->len; e++) {
            const js_val *x = &sh->items[e];
            if (x->type != JS_NUM || !x->is_int || x->i < 0 || x->i > ((int64_t)1 << 40))
                return fmt("%s: tensor '%s' has a bad extent%s", k->str, NULL);
            t->shape[e] = x->i;
            if (x->i && count > ((uint64_t)1 << 60) / (uint64_t)x->i) return fmt("%s: tensor '%s' is too large%s", k->str, NULL);
            count *= (uint64_t)x->i;
        }
        const js_val *b0 = &off->items[0], *b1 = &off->items[1];
        if (b0->type != JS_NUM || !b0->is_int || b1->type != JS_NUM || !b1->is_int || b0->i < 0 || b1->i < b0->i ||
            (uint64_t)b1->i > p->data_len)
            return lithe__fail(LITHE_ERR_FORMAT, "%s: tensor '%s' has data offsets outside the %llu data bytes", WHAT,
                               k->str, (unsigned long long)p->data_len);
        t->begin = (uint64_t)b0->i;
        t->end = (uint64_t)b1->i;
        t->src = p->data + t->begin;
        if (t->end - t->begin != count * lithe_dtype_size(t->dtype))
            return lithe__fail(LITHE_ERR_FORMAT, "%s: tensor '%s' spans %llu bytes, its shape and dtype need %llu", WHAT,
                               k->str, (unsigned long long)(t->end - t->begin),
                               (unsigned long long)(count * lithe_dtype_size(t->dtype)));
        p->nt++;
    }
    /* no two tensors may share bytes (the safetensors rule) */
    for (size_t a = 0; a < p->nt; a++)
        for (size_t b = a + 1; b < p->nt; b++) {
            if (!strcmp(p->ts[a].name, p->ts[b].name)) return fmt("%s: tensor '%s' appears twice%s", p->ts[a].name, NULL);
            if (p->ts[a].begin < p->ts[b].end && p->ts[b].begin < p->ts[a].end && p->ts[a].begin != p->ts[a].end &&
                p->ts[b].begin != p->ts[b].end)
                return fmt("%s: tensors '%s' and '%s' overlap", p->ts[a].name, p->ts[b].name);
        }
    LITHE__TRY(lithe__lf_quant_parse(p, js_get(meta, "lithe.quantization")));
    return js_parse(arch->str, arch->len, ".lithe architecture", &p->arch);
}

static const in_tensor *find_tensor(const parsed *p, const char *name) {
    for (size_t i = 0; i < p->nt; i++)
        if (!strcmp(p->ts[i].name, name)) return &p->ts[i];
    return NULL;
}

static lithe_status bad_node(size_t i, const char *why) {
    return lithe__fail(LITHE_ERR_FORMAT, "%s: architecture node %zu: %s", WHAT, i, why);
}

/* Cycle check by depth-first search over the child links (0 new, 1 on the stack, 2 done). */
static bool acyclic(size_t i, const size_t *const *children, const size_t *nchild, uint8_t *color, int depth) {
    if (depth > 10000) return false;
    color[i] = 1;
    for (size_t c = 0; c < nchild[i]; c++) {
        size_t k = children[i][c];
        if (color[k] == 1) return false;
        if (color[k] == 0 && !acyclic(k, children, nchild, color, depth + 1)) return false;
    }
    color[i] = 2;
    return true;
}

static lithe_status set_attr(lithe_model *m, size_t i, const char *name, const js_val *v) {
    if (v->type == JS_NULL) return lithe_model_set_attr_null(m, name);
    if (v->type != JS_OBJ || v->len != 1) return bad_node(i, "an attr must be null or {type: value}");
    const char *kind = v->items[0].str;
    const js_val *x = &v->items[1];
    if (!strcmp(kind, "int") && x->type == JS_NUM && x->is_int) return lithe_model_set_attr_int(m, name, x->i);
    if (!strcmp(kind, "float")) {
        if (x->type == JS_NUM) return lithe_model_set_attr_float(m, name, x->num);
        if (x->type == JS_STR && (!strcmp(x->str, "inf") || !strcmp(x->str, "-inf") || !strcmp(x->str, "nan")))
            return lithe_model_set_attr_float(m, name, x->str[0] == 'n' ? NAN : x->str[0] == '-' ? -INFINITY : INFINITY);
    }
    if (!strcmp(kind, "bool") && x->type == JS_BOOL) return lithe_model_set_attr_bool(m, name, x->b);
    if (!strcmp(kind, "str") && x->type == JS_STR) return lithe_model_set_attr_str(m, name, x->str);
    if (!strcmp(kind, "ints") && x->type == JS_ARR) {
        lithe_tensor *t = NULL;
        LITHE__TRY(lithe__tensor_alloc(lithe__backend_host(), LITHE_I64, 1, (int64_t[]){(int64_t)x->len}, false, &t));
        for (size_t e = 0; e < x->len; e++) {
            if (x->items[e].type != JS_NUM || !x->items[e].is_int) {
                lithe_tensor_release(t);
                return bad_node(i, "an ints attr holds a non-integer");
            }
            ((int64_t *)lithe__tdata(t))[e] = x->items[e].i;
        }
        lithe_status s = lithe_model_set_attr_tensor(m, name, t);
        lithe_tensor_release(t);
        return s;
    }
    if (!strcmp(kind, "msgpack") && x->type == JS_STR) { /* a dict attr as Thinc's msgpack bytes, hex */
        size_t n = strlen(x->str);
        if (n % 2) return bad_node(i, "a msgpack attr has an odd number of hex digits");
        lithe_tensor *t = NULL;
        LITHE__TRY(lithe__tensor_alloc(lithe__backend_host(), LITHE_U8, 1, (int64_t[]){(int64_t)(n / 2)}, false, &t));
        uint8_t *o = lithe__tdata(t);
        for (size_t e = 0; e < n; e++) {
            char c = x->str[e];
            int dv = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
            if (dv < 0) {
                lithe_tensor_release(t);
                return bad_node(i, "a msgpack attr holds a non-hex digit");
            }
            o[e / 2] = (uint8_t)(e % 2 ? (o[e / 2] | dv) : dv << 4);
        }
        lithe_status s = lithe_model_set_attr_tensor(m, name, t);
        lithe_tensor_release(t);
        return s;
    }
    return bad_node(i, "an attr of unknown type");
}

/* A memory-mapped file shared by the tensors that view it; unmapped with the last of them. */
typedef struct mapping {
    int refcount;
    void *addr;
    size_t len;
} mapping;

static void mapping_release(void *ctx) {
    mapping *m = ctx;
    if (__atomic_sub_fetch(&m->refcount, 1, __ATOMIC_ACQ_REL) > 0) return;
#ifdef LITHE_HAVE_MMAP
    munmap(m->addr, m->len);
#endif
    lithe__free(m);
}

static lithe_status build(const parsed *p, mapping *map, lithe_model **out) {
    const js_val *root = &p->arch.root, *nodes = js_get(root, "nodes"), *r0 = js_get(root, "root");
    if (!nodes || nodes->type != JS_ARR || nodes->len == 0 || !r0 || r0->type != JS_NUM || !r0->is_int || r0->i != 0)
        return lithe__fail(LITHE_ERR_FORMAT, "%s: the architecture needs a non-empty nodes array and root 0", WHAT);
    size_t n = nodes->len;
    lithe_model **ms = lithe__calloc(n, sizeof *ms);
    size_t **children = lithe__calloc(n, sizeof *children), *nchild = lithe__calloc(n, sizeof *nchild);
    uint8_t *color = lithe__calloc(n, 1);
    lithe_status s = ms && children && nchild && color ? LITHE_OK : lithe__oom(WHAT, n * 32);
    /* pass 1: the nodes, their dims, attrs, settings and params */
    for (size_t i = 0; s == LITHE_OK && i < n; i++) {
        const js_val *nd = &nodes->items[i];
        const js_val *layer = js_get(nd, "layer"), *name = js_get(nd, "name"), *dims = js_get(nd, "dims"),
                     *attrs = js_get(nd, "attrs"), *params = js_get(nd, "params"), *layers = js_get(nd, "layers"),
                     *refs = js_get(nd, "refs"), *iw = js_get(nd, "init_W"), *ib = js_get(nd, "init_b"),
                     *cfg = js_get(nd, "cfg"), *frozen = js_get(nd, "frozen");
        if (!layer || layer->type != JS_STR || !name || name->type != JS_STR || !dims || dims->type != JS_OBJ ||
            !attrs || attrs->type != JS_OBJ || !params || params->type != JS_ARR || !layers ||
            layers->type != JS_ARR || !refs || refs->type != JS_OBJ) {
            s = bad_node(i, "needs layer, name, dims, attrs, params, layers and refs");
            break;
        }
        const lithe__layer_type *type = lithe__layer_type_by_name(layer->str);
        if (!type) {
            s = lithe__fail(LITHE_ERR_UNSUPPORTED, "%s: node %zu (%s) is a '%s' layer, which this lithe does not have",
                            WHAT, i, name->str, layer->str);
            break;
        }
        const char **dn = lithe__calloc(dims->len + 1, sizeof *dn), **pn = lithe__calloc(params->len + 1, sizeof *pn);
        if (!dn || !pn) s = lithe__oom(WHAT, (dims->len + params->len) * sizeof *dn);
        for (size_t d = 0; s == LITHE_OK && d < dims->len; d++) dn[d] = dims->items[2 * d].str;
        for (size_t q = 0; s == LITHE_OK && q < params->len; q++) {
            if (params->items[q].type != JS_STR) s = bad_node(i, "a param name is not a string");
            else pn[q] = params->items[q].str;
        }
        if (s == LITHE_OK) s = lithe__model_new(type, name->str, dn, pn, &ms[i]);
        lithe__free(dn);
        lithe__free(pn);
        if (s != LITHE_OK) break;
        lithe_model *m = ms[i];
        for (size_t d = 0; s == LITHE_OK && d < dims->len; d++) {
            const js_val *v = &dims->items[2 * d + 1];
            if (v->type == JS_NULL) continue;
            if (v->type != JS_NUM || !v->is_int || v->i <= 0 || v->i > ((int64_t)1 << 40)) s = bad_node(i, "a dim is not a positive int");
            else m->dims[d].value = v->i;
        }
        for (size_t a = 0; s == LITHE_OK && a < attrs->len; a++) {
            const js_val *v = &attrs->items[2 * a + 1];
            if (v->type == JS_OBJ && v->len == 1 && !strcmp(v->items[0].str, "bytes")) { /* a byte tensor of the file */
                const in_tensor *t = v->items[1].type == JS_STR ? find_tensor(p, v->items[1].str) : NULL;
                if (!t || t->dtype != LITHE_U8 || t->ndim != 1) {
                    s = bad_node(i, "a bytes attr names no 1-D U8 tensor of the file");
                    break;
                }
                lithe_tensor *bt = NULL;
                s = lithe__tensor_alloc(lithe__backend_host(), LITHE_U8, 1, t->shape, false, &bt);
                if (s == LITHE_OK && t->end > t->begin) memcpy(lithe__tdata(bt), t->src, (size_t)(t->end - t->begin));
                if (s == LITHE_OK) s = lithe_model_set_attr_tensor(m, attrs->items[2 * a].str, bt);
                lithe_tensor_release(bt);
                continue;
            }
            s = set_attr(m, i, attrs->items[2 * a].str, v);
        }
        if (s == LITHE_OK && iw && ib) {
            if (iw->type != JS_NUM || !iw->is_int || iw->i < LITHE_INIT_DEFAULT || iw->i > LITHE_INIT_NORMAL ||
                ib->type != JS_NUM || !ib->is_int || ib->i < LITHE_INIT_DEFAULT || ib->i > LITHE_INIT_NORMAL)
                s = bad_node(i, "init_W / init_b out of range");
            else {
                m->init_W = (lithe_init)iw->i;
                m->init_b = (lithe_init)ib->i;
            }
        }
        if (s == LITHE_OK && cfg) {
            if (cfg->type != JS_ARR || cfg->len != 2 || cfg->items[0].type != JS_NUM || cfg->items[1].type != JS_NUM)
                s = bad_node(i, "cfg must be two numbers");
            else {
                m->cfg[0] = cfg->items[0].num;
                m->cfg[1] = cfg->items[1].num;
            }
        }
        for (size_t q = 0; s == LITHE_OK && q < params->len; q++) {
            char tname[256];
            snprintf(tname, sizeof tname, "%zu.%s", i, params->items[q].str);
            const in_tensor *t = find_tensor(p, tname);
            if (!t) continue; /* an unset param */
            const bool compact = t->dtype == LITHE_F16 || t->dtype == LITHE_BF16 || t->dtype == LITHE_I8 ||
                                 t->dtype == LITHE_U8;
            if (t->dtype != LITHE_F32 && !compact) {
                s = lithe__fail(LITHE_ERR_DTYPE, "%s: param %s must be F32 (or a dense layer's compact W)", WHAT, tname);
                break;
            }
            if (compact && !m->backend->host_memory) {
                s = lithe__fail(LITHE_ERR_UNSUPPORTED, "%s: param %s is %s: compact weights load on the CPU only", WHAT,
                                tname, lithe_dtype_name(t->dtype));
                break;
            }
            lithe_tensor *v = NULL;
            const uint8_t *src = t->src;
            if (map && ((uintptr_t)src % lithe_dtype_size(t->dtype)) == 0 && m->backend->host_memory) {
                /* a view of the mapped file (copy-on-write pages): no copy at load; compact stays compact */
                __atomic_add_fetch(&map->refcount, 1, __ATOMIC_ACQ_REL);
                s = lithe__tensor_wrap_host(t->dtype, t->ndim, t->shape, (void *)src, mapping_release, map, &v);
                if (s != LITHE_OK) mapping_release(map);
            } else {
                /* a weight lives as long as the model: a persistent block, its exact size (the CPU
                 * cache rounds others up to a size class: the MLP's 784x512 W took 1.75 MiB for
                 * 1.53 in WebAssembly, where every load copies) */
                lithe__persistent(m->backend, true);
                s = lithe__tensor_alloc(m->backend, t->dtype, t->ndim, t->shape, false, &v);
                lithe__persistent(m->backend, false);
                if (s == LITHE_OK) s = lithe_tensor_write(v, src, (size_t)(t->end - t->begin));
            }
            if (s == LITHE_OK && compact) s = lithe__lf_compact_param(p, m, t, tname, v);
            if (s == LITHE_OK) s = lithe_model_set_param(m, params->items[q].str, v);
            lithe_tensor_release(v);
        }
        if (s == LITHE_OK) s = lithe__check_loaded_node(m, WHAT);
        for (size_t q = 0; s == LITHE_OK && frozen && frozen->type == JS_ARR && q < frozen->len; q++) {
            if (frozen->items[q].type != JS_STR) s = bad_node(i, "a frozen name is not a string");
            else s = lithe_model_set_frozen(m, frozen->items[q].str, true);
        }
        /* combinators need their children (the forward passes reach for them); leaves have none */
        if (s == LITHE_OK && (layers->len < type->min_layers || layers->len > type->max_layers))
            s = bad_node(i, layers->len ? "the wrong number of children for its layer" : "a combinator without its children");
        if (s == LITHE_OK && layers->len) {
            children[i] = lithe__calloc(layers->len, sizeof **children);
            if (!children[i]) s = lithe__oom(WHAT, layers->len * sizeof **children);
        }
        for (size_t c = 0; s == LITHE_OK && c < layers->len; c++) {
            const js_val *v = &layers->items[c];
            if (v->type != JS_NUM || !v->is_int || v->i < 0 || (uint64_t)v->i >= n) s = bad_node(i, "a child index is out of range");
            else children[i][nchild[i]++] = (size_t)v->i;
        }
    }
    for (size_t i = 0; s == LITHE_OK && i < n; i++)
        if (color[i] == 0 && !acyclic(i, (const size_t *const *)children, nchild, color, 0))
            s = lithe__fail(LITHE_ERR_FORMAT, "%s: the architecture's child links form a cycle (or nest deeper than "
                                              "10000)", WHAT);
    /* pass 2: links */
    for (size_t i = 0; s == LITHE_OK && i < n; i++) {
        for (size_t c = 0; s == LITHE_OK && c < nchild[i]; c++)
            s = lithe__model_add_layer(ms[i], lithe_model_retain(ms[children[i][c]]));
        const js_val *refs = js_get(&nodes->items[i], "refs");
        for (size_t r = 0; s == LITHE_OK && r < refs->len; r++) {
            const js_val *v = &refs->items[2 * r + 1];
            if (v->type == JS_NULL) s = lithe_model_set_ref(ms[i], refs->items[2 * r].str, NULL);
            else if (v->type != JS_NUM || !v->is_int || v->i < 0 || (uint64_t)v->i >= n) s = bad_node(i, "a ref index is out of range");
            else s = lithe_model_set_ref(ms[i], refs->items[2 * r].str, ms[v->i]);
        }
    }
    /* the indices must be the walk order (Thinc's bytes and the tensor names rely on it) */
    if (s == LITHE_OK) {
        lithe_model **w = lithe__malloc(n * sizeof *w);
        size_t nw = 0;
        s = w ? lithe_model_walk(ms[0], w, n, &nw) : lithe__oom(WHAT, n * sizeof *w);
        if (s == LITHE_OK && nw != n) s = lithe__fail(LITHE_ERR_FORMAT, "%s: %zu nodes, %zu reachable from the root", WHAT, n, nw);
        for (size_t i = 0; s == LITHE_OK && i < n; i++)
            if (w[i] != ms[i]) s = lithe__fail(LITHE_ERR_FORMAT, "%s: node %zu is not in walk order", WHAT, i);
        lithe__free(w);
    }
    /* imported graphs: parse each graph node's bytes now, so a broken graph fails the load */
    for (size_t i = 0; s == LITHE_OK && i < n; i++)
        if (ms[i]->type == LITHE__ONNX_GRAPH_TYPE) s = lithe__onnx_attach(ms[i]);
    if (s == LITHE_OK) *out = lithe_model_retain(ms[0]);
    for (size_t i = 0; ms && i < n; i++) lithe_model_free(ms[i]);
    for (size_t i = 0; children && i < n; i++) lithe__free(children[i]);
    lithe__free(ms);
    lithe__free(children);
    lithe__free(nchild);
    lithe__free(color);
    return s;
}

lithe_status lithe_model_load_bytes(const uint8_t *data, size_t len, lithe_model **out) {
    LITHE__CHECK_ARG(out, "lithe_model_load_bytes", "out is NULL");
    *out = NULL;
    LITHE__CHECK_ARG(data || !len, "lithe_model_load_bytes", "data is NULL");
    /* ONNX bytes (a ModelProto starts with field 1, ir_version: 0x08) rather than safetensors (an
     * 8-byte header length, then '{'): one graph node, so every caller of this function (the JS
     * package, the Python shim) takes .onnx models too */
    if (len > 0 && data[0] == 0x08 && !(len >= 9 && data[8] == '{')) return lithe_onnx_load_bytes(data, len, out);
    parsed p;
    lithe_status s = parse_file(data, len, &p);
    if (s == LITHE_OK) s = build(&p, NULL, out);
    parsed_free(&p);
    return s;
}

lithe_status lithe_model_from_architecture(const char *architecture, size_t len, size_t n, const char *const *names,
                                           lithe_tensor *const *tensors, lithe_model **out) {
    LITHE__CHECK_ARG(out, "lithe_model_from_architecture", "out is NULL");
    *out = NULL;
    LITHE__CHECK_ARG(architecture, "lithe_model_from_architecture", "architecture is NULL");
    LITHE__CHECK_ARG((names && tensors) || !n, "lithe_model_from_architecture", "names or tensors is NULL");
    parsed p;
    memset(&p, 0, sizeof p);
    p.ts = lithe__calloc(n ? n : 1, sizeof *p.ts);
    lithe_status s = p.ts ? LITHE_OK : lithe__oom("lithe_model_from_architecture", n * sizeof *p.ts);
    for (size_t i = 0; s == LITHE_OK && i < n; i++) {
        const lithe_tensor *t = tensors[i];
        if (!names[i] || !t) {
            s = lithe__fail(LITHE_ERR_INVALID_ARG, "lithe_model_from_architecture: tensor %zu or its name is NULL", i);
            break;
        }
        if ((t->dtype != LITHE_F32 && t->dtype != LITHE_U8) || !lithe_tensor_is_contiguous(t) ||
            !t->storage->backend->host_memory) {
            s = lithe__fail(LITHE_ERR_INVALID_ARG, "lithe_model_from_architecture: tensor '%s' must be a contiguous "
                                                   "float32 (param) or uint8 (bytes attr) array in host memory", names[i]);
            break;
        }
        for (size_t j = 0; j < i; j++)
            if (!strcmp(names[j], names[i])) s = fmt("%s: tensor '%s' appears twice%s", names[i], NULL);
        in_tensor *d = &p.ts[p.nt++];
        d->name = names[i];
        d->dtype = t->dtype;
        d->ndim = t->ndim;
        memcpy(d->shape, t->shape, sizeof(int64_t) * (size_t)t->ndim);
        d->end = (uint64_t)t->numel * lithe_dtype_size(t->dtype);
        d->src = lithe__tdata(t);
    }
    if (s == LITHE_OK) s = js_parse(architecture, len, "lithe_model_from_architecture", &p.arch);
    if (s == LITHE_OK) s = build(&p, NULL, out);
    parsed_free(&p);
    return s;
}

#ifdef LITHE_HAVE_MMAP
/* Maps the file copy-on-write and loads it with the params viewing the mapping. Returns
 * LITHE_ERR_UNSUPPORTED (quietly) when the file cannot be mapped, so the caller reads it. */
static lithe_status load_mapped(const char *path, lithe_model **out) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) return LITHE_ERR_UNSUPPORTED;
    struct stat st;
    void *addr = MAP_FAILED;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0)
        addr = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    int map_errno = errno;
    close(fd);
    /* a file too large to map is not read whole instead (a 100 GB sparse file would fill memory
     * for minutes before the header's sizes were ever checked) */
    if (addr == MAP_FAILED && S_ISREG(st.st_mode) && (uint64_t)st.st_size > LITHE__READ_FALLBACK_MAX)
        return lithe__fail(LITHE_ERR_OOM, "%s: cannot map its %llu bytes (%s), and a file over %llu bytes is not read "
                                          "whole instead",
                           WHAT, (unsigned long long)st.st_size, strerror(map_errno),
                           (unsigned long long)LITHE__READ_FALLBACK_MAX);
    if (addr == MAP_FAILED) return LITHE_ERR_UNSUPPORTED;
    mapping *map = lithe__calloc(1, sizeof *map);
    if (!map) {
        munmap(addr, (size_t)st.st_size);
        return lithe__oom(path, sizeof *map);
    }
    map->refcount = 1; /* the loader's */
    map->addr = addr;
    map->len = (size_t)st.st_size;
    parsed p;
    lithe_status s = parse_file(addr, map->len, &p);
    if (s == LITHE_OK) s = build(&p, map, out);
    parsed_free(&p);
    mapping_release(map);
    return s;
}
#endif

lithe_status lithe_model_load(const char *path, lithe_model **out) {
    LITHE__CHECK_ARG(out, "lithe_model_load", "out is NULL");
    *out = NULL;
    LITHE__CHECK_ARG(path, "lithe_model_load", "path is NULL");
    size_t plen = strlen(path);
    if (plen >= 5 && !strcmp(path + plen - 5, ".onnx")) return lithe_onnx_load(path, out);
    if (plen >= 5 && !strcmp(path + plen - 5, ".json")) return lithe_tfjs_load(path, out); /* TF.js's model.json */
    lithe_status s = LITHE_ERR_UNSUPPORTED;
#ifdef LITHE_HAVE_MMAP
    if (!lithe__knob(LITHE__KNOB_no_mmap)) s = load_mapped(path, out);
#endif
    if (s == LITHE_ERR_UNSUPPORTED && !*out) {
        uint8_t *b = NULL;
        size_t n = 0;
        LITHE__TRY(lithe__read_file(path, &b, &n));
        s = lithe_model_load_bytes(b, n, out);
        lithe__free(b);
    }
    if (s != LITHE_OK) {
        char why[512];
        snprintf(why, sizeof why, "%s", lithe_last_error());
        return lithe__fail(s, "%s: %s", path, why);
    }
    return LITHE_OK;
}

lithe_status lithe_optimizer_load_from_file_bytes(lithe_optimizer *opt, lithe_model *m, const uint8_t *data,
                                                  size_t len) {
    LITHE__CHECK_ARG(opt && m, "lithe_optimizer_load_from_file_bytes", "optimizer or model is NULL");
    parsed p;
    lithe_status s = parse_file(data, len, &p);
    const in_tensor *t = s == LITHE_OK ? find_tensor(&p, "optimizer.state") : NULL;
    if (s == LITHE_OK && !t) s = lithe__fail(LITHE_ERR_NOT_FOUND, "%s: the file holds no optimizer state", WHAT);
    if (s == LITHE_OK) s = lithe_optimizer_load_state(opt, m, p.data + t->begin, (size_t)(t->end - t->begin));
    parsed_free(&p);
    return s;
}
