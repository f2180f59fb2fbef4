/* LoRA adapters alone in a file (issue 26 item 2; core/lora.c holds the adapters themselves): a
 * .lithe file (docs/format.md) of one noop node named "lora_adapters" whose params are each
 * adapter's A and B, named "<walk index>/lora_A:<weight>" and "<walk index>/lora_B:<weight>", with
 * attrs "<walk index>/lora_alpha:<weight>" and "<walk index>/lora_layout:<weight>", and the attr
 * "lora.base": the hash of the base model's weights (lithe_model_lora_base_hash). Written and read
 * by the .lithe writer and reader, so the file gets their checks; applying it checks the hash and
 * then every shape against the model it is applied to. */
#include "internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CONTAINER "lora_adapters"

/* FNV-1a 64 over (node index, param name, dtype, shape, values) of every base weight in walk
 * order: an adapted weight holds its base, the adapters do not count. */
static void fnv(uint64_t *h, const void *p, size_t n) {
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++) *h = (*h ^ b[i]) * 0x100000001b3ull;
}

static lithe_status base_hash(lithe_model *const *nodes, size_t n, char out[17]) {
    uint64_t h = 0xcbf29ce484222325ull;
    uint8_t *buf = NULL;
    size_t cap = 0;
    lithe_status s = LITHE_OK;
    for (size_t i = 0; i < n && s == LITHE_OK; i++) {
        const lithe_model *m = nodes[i];
        for (size_t p = 0; p < m->n_params && s == LITHE_OK; p++) {
            const lithe__param *pr = &m->params[p];
            if (lithe__lora_param(pr->name) || !pr->value) continue;
            const lithe_tensor *t = pr->value; /* an adapted weight holds its base */
            uint64_t idx = i;
            int32_t meta[2] = {(int32_t)t->dtype, t->ndim};
            fnv(&h, &idx, sizeof idx);
            fnv(&h, pr->name, strlen(pr->name) + 1);
            fnv(&h, meta, sizeof meta);
            fnv(&h, t->shape, (size_t)t->ndim * sizeof t->shape[0]);
            size_t nb = (size_t)t->numel * lithe_dtype_size(t->dtype);
            if (nb > cap) {
                uint8_t *nbuf = lithe__realloc(buf, nb);
                if (!nbuf) {
                    s = lithe__oom("lora base hash", nb);
                    break;
                }
                buf = nbuf;
                cap = nb;
            }
            s = lithe_tensor_read(t, buf, nb);
            if (s == LITHE_OK) fnv(&h, buf, nb);
        }
    }
    lithe__free(buf);
    if (s == LITHE_OK) snprintf(out, 17, "%016llx", (unsigned long long)h);
    return s;
}

lithe_status lithe_model_lora_base_hash(lithe_model *m, char *out, size_t cap) {
    LITHE__CHECK_ARG(m && out, "lithe_model_lora_base_hash", "model or out is NULL");
    LITHE__CHECK_ARG(cap >= 17, "lithe_model_lora_base_hash", "out needs 17 bytes");
    lithe__walk_buf w;
    LITHE__TRY(lithe__walk_collect(m, &w));
    lithe_status s = base_hash(w.v, w.n, out);
    lithe__free(w.v);
    return s;
}

/* ---- saving ---- */

static lithe_status put_param(lithe_model *c, const char *name, const lithe_tensor *t) {
    lithe_tensor *h = NULL;
    LITHE__TRY(lithe_tensor_to_backend(t, lithe__backend_host(), &h));
    lithe_status s = lithe_model_set_param(c, name, h);
    lithe_tensor_release(h);
    return s;
}

static lithe_status build_container(lithe_model *const *nodes, size_t n, lithe_model *c) {
    char hash[17], k[320];
    LITHE__TRY(base_hash(nodes, n, hash));
    LITHE__TRY(lithe_model_set_attr_str(c, "lora.base", hash));
    size_t found = 0;
    for (size_t i = 0; i < n; i++) {
        const lithe_model *m = nodes[i];
        for (size_t a = 0; a < m->n_attrs; a++) {
            const char *an = m->attrs[a].name;
            if (strncmp(an, "lora_alpha:", 11)) continue;
            const char *pn = an + 11;
            /* the .lithe writer's tensor names hold 95 bytes: "<i>.<i>/lora_A:<weight>" */
            if (strlen(pn) > 64)
                return lithe__fail(LITHE_ERR_UNSUPPORTED, "lithe_model_save_lora: weight name '%s' is longer than 64 "
                                   "bytes", pn);
            const char *parts[2] = {"lora_A:", "lora_B:"};
            for (int q = 0; q < 2; q++) {
                char src[256];
                snprintf(src, sizeof src, "%s%s", parts[q], pn);
                const lithe__param *p = lithe__model_find_param(m, src);
                if (!p || !p->value) return lithe__fail(LITHE_ERR_STATE, "%s: LoRA adapter of '%s' lacks %s", m->name, pn, src);
                snprintf(k, sizeof k, "%zu/%s", i, src);
                LITHE__TRY(put_param(c, k, p->value));
            }
            int64_t layout = 0;
            snprintf(k, sizeof k, "lora_layout:%s", pn);
            LITHE__TRY(lithe_model_get_attr_int(m, k, &layout));
            snprintf(k, sizeof k, "%zu/lora_layout:%s", i, pn);
            LITHE__TRY(lithe_model_set_attr_int(c, k, layout));
            snprintf(k, sizeof k, "%zu/%s", i, an);
            LITHE__TRY(lithe_model_set_attr_float(c, k, m->attrs[a].v.f));
            found++;
        }
    }
    if (!found) return lithe__fail(LITHE_ERR_STATE, "lithe_model_save_lora: the model has no LoRA adapters");
    return LITHE_OK;
}

lithe_status lithe_model_save_lora_bytes(lithe_model *m, uint8_t **out, size_t *len) {
    LITHE__CHECK_ARG(out && len, "lithe_model_save_lora_bytes", "out or len is NULL");
    *out = NULL;
    *len = 0;
    LITHE__CHECK_ARG(m, "lithe_model_save_lora_bytes", "model is NULL");
    const lithe__layer_type *noop = lithe__layer_type_by_name("noop.v1");
    lithe_model *c = NULL;
    LITHE__TRY(lithe__model_new(noop, CONTAINER, NULL, NULL, &c));
    lithe__walk_buf w;
    lithe_status s = lithe__enter_tree(m, "lithe_model_save_lora");
    if (s != LITHE_OK) {
        lithe_model_free(c);
        return s;
    }
    s = lithe__walk_collect(m, &w);
    if (s == LITHE_OK) {
        s = build_container(w.v, w.n, c);
        lithe__free(w.v);
    }
    lithe__leave_tree(m);
    if (s == LITHE_OK) s = lithe_model_save_bytes(c, NULL, out, len);
    lithe_model_free(c);
    return s;
}

lithe_status lithe_model_save_lora(lithe_model *m, const char *path) {
    LITHE__CHECK_ARG(path, "lithe_model_save_lora", "path is NULL");
    uint8_t *b = NULL;
    size_t n = 0;
    LITHE__TRY(lithe_model_save_lora_bytes(m, &b, &n));
    lithe_status s = lithe__write_file_atomic(path, b, n);
    lithe_buffer_free(b);
    return s;
}

/* ---- applying ---- */

/* "<i>/<rest>": i and rest, or false. */
static bool split_name(const char *name, size_t *i, const char **rest) {
    char *end = NULL;
    if (name[0] < '0' || name[0] > '9') return false;
    unsigned long long v = strtoull(name, &end, 10);
    if (*end != '/' || v > SIZE_MAX) return false;
    *i = (size_t)v;
    *rest = end + 1;
    return true;
}

typedef struct layout_query {
    const lithe_model *node;
    const char *param;
    int layout; /* 0: not a weight that takes an adapter */
} layout_query;

static lithe_status find_layout(lithe_model *m, const char *pn, int layout, void *user) {
    layout_query *q = user;
    if (m == q->node && !strcmp(pn, q->param)) q->layout = layout;
    return LITHE_OK;
}

static lithe_status apply_one(lithe_model *const *nodes, size_t n, lithe_model *c, const lithe__attr *at) {
    size_t i = 0;
    const char *rest = NULL;
    if (!split_name(at->name, &i, &rest) || strncmp(rest, "lora_alpha:", 11))
        return LITHE_OK; /* not an adapter's alpha */
    const char *pn = rest + 11;
    if (at->type != LITHE_ATTR_FLOAT || !isfinite(at->v.f))
        return lithe__fail(LITHE_ERR_FORMAT, "LoRA adapters: '%s' has no finite alpha", pn);
    if (i >= n) return lithe__fail(LITHE_ERR_FORMAT, "LoRA adapters: node %zu is past the model's %zu nodes", i, n);
    char k[256];
    int64_t layout = 0;
    snprintf(k, sizeof k, "%zu/lora_layout:%s", i, pn);
    if (lithe_model_get_attr_int(c, k, &layout) != LITHE_OK)
        return lithe__fail(LITHE_ERR_FORMAT, "LoRA adapters: '%s' has no layout attr", pn);
    layout_query q = {nodes[i], pn, 0};
    LITHE__TRY(lithe__lora_each_weight(&nodes[i], 1, find_layout, &q));
    if (!q.layout || q.layout != layout)
        return lithe__fail(LITHE_ERR_VALUE, "LoRA adapters: node %zu (%s) has no weight '%s' that takes an adapter "
                           "laid out as the file's", i, nodes[i]->name, pn);
    lithe_tensor *A = NULL, *B = NULL, *Ad = NULL, *Bd = NULL;
    snprintf(k, sizeof k, "%zu/lora_A:%s", i, pn);
    lithe_status s = lithe_model_get_param(c, k, &A);
    snprintf(k, sizeof k, "%zu/lora_B:%s", i, pn);
    if (s == LITHE_OK) s = lithe_model_get_param(c, k, &B);
    if (s != LITHE_OK) return lithe__fail(LITHE_ERR_FORMAT, "LoRA adapters: '%s' lacks its A or B", pn);
    if (A->ndim != 2 || A->shape[0] < 1)
        return lithe__fail(LITHE_ERR_FORMAT, "LoRA adapters: '%s': A is not (r, in) with r >= 1", pn);
    lithe_model *node = nodes[i];
    s = lithe_tensor_to_backend(A, node->backend, &Ad);
    if (s == LITHE_OK) s = lithe_tensor_to_backend(B, node->backend, &Bd);
    if (s == LITHE_OK) s = lithe__lora_attach(node, pn, A->shape[0], at->v.f, (int)layout, Ad, Bd, NULL);
    lithe_tensor_release(Ad);
    lithe_tensor_release(Bd);
    return s;
}

static lithe_status apply(lithe_model *m, lithe_model *c) {
    char want[17] = {0}, have[17];
    const char *h = NULL;
    if (strcmp(c->name, CONTAINER) || lithe_model_get_attr_str(c, "lora.base", &h) != LITHE_OK || strlen(h) != 16)
        return lithe__fail(LITHE_ERR_FORMAT, "LoRA adapters: the file is a .lithe model, not LoRA adapters "
                           "(lithe_model_save_lora writes those)");
    memcpy(want, h, 16);
    bool adapted = false;
    LITHE__TRY(lithe__lora_any(m, &adapted));
    if (adapted)
        return lithe__fail(LITHE_ERR_STATE, "LoRA adapters: the model has adapters already (merge them first: "
                           "lithe_model_merge_lora)");
    lithe__walk_buf w;
    LITHE__TRY(lithe__walk_collect(m, &w));
    lithe_status s = base_hash(w.v, w.n, have);
    if (s == LITHE_OK && strcmp(want, have))
        s = lithe__fail(LITHE_ERR_VALUE, "LoRA adapters: trained on a base whose weights hash to %s; this model's "
                        "hash to %s (a different base model)", want, have);
    if (s == LITHE_OK) lithe__lora_freeze_base(w.v, w.n);
    for (size_t a = 0; s == LITHE_OK && a < c->n_attrs; a++) s = apply_one(w.v, w.n, c, &c->attrs[a]);
    if (s != LITHE_OK) /* leave the model as it was */
        for (size_t i = 0; i < w.n; i++)
            for (size_t a = w.v[i]->n_attrs; a-- > 0;)
                if (a < w.v[i]->n_attrs && !strncmp(w.v[i]->attrs[a].name, "lora_alpha:", 11)) {
                    char pn[256];
                    snprintf(pn, sizeof pn, "%s", w.v[i]->attrs[a].name + 11);
                    lithe__lora_detach(w.v[i], pn);
                }
    lithe__free(w.v);
    return s;
}

lithe_status lithe_model_load_lora_bytes(lithe_model *m, const uint8_t *data, size_t len) {
    LITHE__CHECK_ARG(m && data, "lithe_model_load_lora_bytes", "model or data is NULL");
    lithe_model *c = NULL;
    LITHE__TRY(lithe_model_load_bytes(data, len, &c));
    lithe_status s = lithe__enter_tree(m, "lithe_model_load_lora");
    if (s == LITHE_OK) {
        s = apply(m, c);
        lithe__leave_tree(m);
    }
    lithe_model_free(c);
    return s;
}

lithe_status lithe_model_load_lora(lithe_model *m, const char *path) {
    LITHE__CHECK_ARG(m && path, "lithe_model_load_lora", "model or path is NULL");
    uint8_t *b = NULL;
    size_t n = 0;
    LITHE__TRY(lithe__read_file(path, &b, &n));
    lithe_status s = lithe_model_load_lora_bytes(m, b, n);
    lithe__free(b);
    return s;
}
