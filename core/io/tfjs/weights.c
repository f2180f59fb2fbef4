/* The TF.js importer's weights: the manifest's entries read from the shards, dequantized to float. */
#include "tfjs.h"

/* ---- the weights ---- */

bool is_str(const js_val *v, const char *s) { return v && v->type == JS_STR && !strcmp(v->str, s); }

/* A number as a finite double: JS_NUM only. */
bool num_of(const js_val *v, double *out) {
    if (!v || v->type != JS_NUM || !isfinite(v->num)) return false;
    *out = v->num;
    return true;
}

/* The weights of the manifest, decoded from `data` (the shards of every group concatenated in
 * manifest order). Every size is checked: the bytes the entries need must be exactly the bytes. */
lithe_status read_weights(const js_val *manifest, const uint8_t *data, size_t len, const size_t *group_bytes,
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
