/* TF.js out: a model loaded from the TF.js layers format, saved back as model.json + one weight
 * shard that @tensorflow/tfjs's loadLayersModel reads. The loader keeps model.json's text on the
 * graph node (its `tfjs_json` attr, so a .lithe file carries it too); the weights are the node's
 * params, which keep TF.js's names and Keras layouts (tfjs.c), so saving is: every member of the
 * original model.json as it was (modelTopology, format, generatedBy, trainingConfig, ...), and a
 * new weightsManifest — one group, one shard "group1-shard1of1.bin", every weight float32 in the
 * original manifest's order (quantized weights are written dequantized) — with the params' current
 * (fine-tuned) values. Manifest weights that are not params of the node (lithe's lowering never
 * read them, e.g. saved optimizer state) are left out; TF.js then names any the model needs. */
#include "../json.h"

#include "../../model.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* (in the core, not the importers: the npm package's core module saves without the importer module) */
#define WHAT "tfjs"
#define ATTR "tfjs_json"
#define SHARD "group1-shard1of1.bin"

lithe_status lithe__tfjs_keep_json(lithe_model *m, const char *json, size_t len) {
    int64_t n = (int64_t)len;
    lithe_tensor *t = NULL;
    LITHE__TRY(lithe_tensor_from_data(LITHE_U8, 1, &n, json, &t));
    lithe_status s = lithe_model_set_attr_tensor(m, ATTR, t);
    lithe_tensor_release(t);
    return s;
}

/* A JSON number as the shortest text that reads back to the same double. */
static void put_num(js_buf *b, const js_val *v) {
    if (v->is_int) return js_int(b, v->i);
    char t[40];
    for (int digits = 15; digits <= 17; digits++) {
        snprintf(t, sizeof t, "%.*g", digits, v->num);
        if (strtod(t, NULL) == v->num) break;
    }
    js_raw(b, t);
}

static lithe_status put_val(js_buf *b, const js_val *v, int depth) {
    if (depth > 64) return lithe__fail(LITHE_ERR_FORMAT, "%s: model.json nests too deep", WHAT);
    switch (v->type) {
    case JS_NULL: js_raw(b, "null"); break;
    case JS_BOOL: js_raw(b, v->b ? "true" : "false"); break;
    case JS_NUM: put_num(b, v); break;
    case JS_STR:
        if (strlen(v->str) != v->len) return lithe__fail(LITHE_ERR_UNSUPPORTED, "%s: a string in model.json holds a NUL", WHAT);
        js_str(b, v->str);
        break;
    case JS_ARR:
        js_raw(b, "[");
        for (size_t i = 0; i < v->len; i++) {
            if (i) js_raw(b, ",");
            LITHE__TRY(put_val(b, &v->items[i], depth + 1));
        }
        js_raw(b, "]");
        break;
    case JS_OBJ:
        js_raw(b, "{");
        for (size_t i = 0; i < v->len; i++) {
            if (i) js_raw(b, ",");
            LITHE__TRY(put_val(b, &v->items[2 * i], depth + 1));
            js_raw(b, ":");
            LITHE__TRY(put_val(b, &v->items[2 * i + 1], depth + 1));
        }
        js_raw(b, "}");
        break;
    }
    return LITHE_OK;
}

/* The node holding the TF.js model.json: m, or the one node of m's tree that does. */
static lithe_status find_holder(lithe_model *m, lithe_model **out) {
    size_t n = 0;
    LITHE__TRY(lithe_model_walk(m, NULL, 0, &n));
    lithe_model **v = lithe__malloc((n ? n : 1) * sizeof *v);
    if (!v) return lithe__oom("tfjs save", n * sizeof *v);
    lithe_status s = lithe_model_walk(m, v, n, &n);
    size_t found = 0;
    for (size_t i = 0; s == LITHE_OK && i < n; i++)
        if (lithe_model_attr_type(v[i], ATTR) == LITHE_ATTR_TENSOR && found++ == 0) *out = v[i];
    lithe__free(v);
    if (s == LITHE_OK && found != 1)
        s = lithe__fail(LITHE_ERR_UNSUPPORTED, "lithe_tfjs_save: %s", found ? "the tree holds more than one TF.js model" :
                        "the model was not loaded from the TF.js layers format (it keeps no model.json)");
    return s;
}

/* One manifest weight: appended to the shard (the param's values as float32) and to the manifest. */
static lithe_status put_weight(lithe_model *h, const js_val *w, js_buf *man, size_t *n_out, uint8_t **bin,
                               size_t *bin_n, size_t *bin_cap) {
    const js_val *name = js_get(w, "name");
    if (!name || name->type != JS_STR) return lithe__fail(LITHE_ERR_FORMAT, "%s: a manifest weight has no name", WHAT);
    lithe_tensor *t0 = NULL, *t = NULL;
    if (lithe_model_has_param(h, name->str) != LITHE_HAS_YES) return LITHE_OK; /* never read by lithe: left out */
    LITHE__TRY(lithe_model_get_param(h, name->str, &t0));
    LITHE__TRY(lithe__as_f32(t0, &t)); /* a compact weight: its float32 values */
    size_t bytes = (size_t)lithe_tensor_numel(t) * sizeof(float);
    if (bytes > *bin_cap - *bin_n) {
        size_t cap = *bin_cap ? *bin_cap : 4096;
        while (cap - *bin_n < bytes && cap < SIZE_MAX / 4) cap *= 2;
        uint8_t *p = cap - *bin_n >= bytes ? lithe__realloc(*bin, cap) : NULL;
        if (!p) {
            lithe_tensor_release(t);
            return lithe__oom(WHAT, *bin_n + bytes);
        }
        *bin = p;
        *bin_cap = cap;
    }
    lithe_status s = lithe_tensor_read(t, *bin + *bin_n, bytes);
    lithe_tensor_release(t);
    LITHE__TRY(s);
    *bin_n += bytes;
    js_raw(man, (*n_out)++ ? ",{\"name\":" : "{\"name\":");
    js_str(man, name->str);
    js_raw(man, ",\"shape\":[");
    for (int d = 0; d < lithe_tensor_ndim(t0); d++) { /* t0: the param (t, its float32 values, is released) */
        if (d) js_raw(man, ",");
        js_int(man, lithe_tensor_shape(t0)[d]);
    }
    js_raw(man, "],\"dtype\":\"float32\"}");
    return LITHE_OK;
}

static lithe_status save_body(lithe_model *m, char **json, size_t *json_len, uint8_t **weights, size_t *weights_len) {
    lithe_model *h = NULL;
    LITHE__TRY(find_holder(m, &h));
    lithe_tensor *text = NULL;
    LITHE__TRY(lithe_model_get_attr_tensor(h, ATTR, &text));
    if (lithe_tensor_dtype(text) != LITHE_U8 || lithe_tensor_ndim(text) != 1 || !lithe_tensor_is_contiguous(text) ||
        !lithe_tensor_data(text))
        return lithe__fail(LITHE_ERR_FORMAT, "lithe_tfjs_save: the '%s' attr must be a 1-D uint8 host tensor", ATTR);
    js_doc doc;
    LITHE__TRY(js_parse(lithe_tensor_data(text), (size_t)lithe_tensor_numel(text), "tfjs model.json", &doc));
    const js_val *root = &doc.root, *man = js_get(root, "weightsManifest");
    lithe_status s = LITHE_OK;
    if (root->type != JS_OBJ || !man || man->type != JS_ARR)
        s = lithe__fail(LITHE_ERR_FORMAT, "%s: the kept model.json has no weightsManifest array", WHAT);
    js_buf out = {0}, mb = {0};
    uint8_t *bin = NULL;
    size_t bin_n = 0, bin_cap = 0, n_w = 0;
    for (size_t g = 0; s == LITHE_OK && g < man->len; g++) {
        const js_val *ws = js_get(&man->items[g], "weights");
        if (!ws || ws->type != JS_ARR) s = lithe__fail(LITHE_ERR_FORMAT, "%s: weightsManifest[%zu] has no weights", WHAT, g);
        for (size_t k = 0; s == LITHE_OK && k < ws->len; k++) s = put_weight(h, &ws->items[k], &mb, &n_w, &bin, &bin_n, &bin_cap);
    }
    if (s == LITHE_OK) {
        js_raw(&out, "{");
        for (size_t i = 0; s == LITHE_OK && i < root->len; i++) {
            if (i) js_raw(&out, ",");
            s = put_val(&out, &root->items[2 * i], 1);
            js_raw(&out, ":");
            if (s != LITHE_OK) break;
            if (root->items[2 * i + 1].type == JS_ARR && &root->items[2 * i + 1] == man) {
                js_raw(&out, "[{\"paths\":[\"" SHARD "\"],\"weights\":[");
                if (mb.p) js_raw(&out, mb.p);
                js_raw(&out, "]}]");
            } else {
                s = put_val(&out, &root->items[2 * i + 1], 1);
            }
        }
        js_raw(&out, "}");
    }
    if (s == LITHE_OK && (out.oom || mb.oom)) s = lithe__oom(WHAT, out.n + mb.n);
    js_doc_free(&doc);
    lithe__free(mb.p);
    if (s != LITHE_OK) {
        lithe__free(out.p);
        lithe__free(bin);
        return s;
    }
    *json = out.p;
    *json_len = out.n;
    *weights = bin ? bin : lithe__malloc(1);
    *weights_len = bin_n;
    if (!*weights) {
        lithe__free(out.p);
        return lithe__oom(WHAT, 1);
    }
    return LITHE_OK;
}

lithe_status lithe_tfjs_save_bytes(lithe_model *m, char **json, size_t *json_len, uint8_t **weights,
                                   size_t *weights_len) {
    LITHE__CHECK_ARG(json && json_len && weights && weights_len, "lithe_tfjs_save_bytes", "an out pointer is NULL");
    *json = NULL;
    *weights = NULL;
    *json_len = *weights_len = 0;
    LITHE__CHECK_ARG(m, "lithe_tfjs_save_bytes", "model is NULL");
    bool adapted = false;
    LITHE__TRY(lithe__lora_any(m, &adapted));
    if (adapted) /* the adapters live on the activations: the file's weights would be the base alone */
        return lithe__fail(LITHE_ERR_STATE, "lithe_tfjs_save_bytes: the model has LoRA adapters; merge them first "
                           "(lithe_model_merge_lora)");
    LITHE__TRY(lithe__enter_tree(m, "lithe_tfjs_save_bytes"));
    lithe_status s = save_body(m, json, json_len, weights, weights_len);
    lithe__leave_tree(m);
    return s;
}

lithe_status lithe_tfjs_save(lithe_model *m, const char *dir) {
    LITHE__CHECK_ARG(dir && *dir, "lithe_tfjs_save", "dir is NULL or empty");
    char *json = NULL;
    uint8_t *bin = NULL;
    size_t jn = 0, bn = 0;
    LITHE__TRY(lithe_tfjs_save_bytes(m, &json, &jn, &bin, &bn));
    lithe_status s = LITHE_OK;
    struct stat st;
    if (stat(dir, &st) != 0 && mkdir(dir, 0777) != 0 && errno != EEXIST)
        s = lithe__fail(LITHE_ERR_IO, "lithe_tfjs_save: cannot create the folder %s: %s", dir, strerror(errno));
    size_t dn = strlen(dir);
    char *path = s == LITHE_OK ? lithe__malloc(dn + sizeof SHARD + 2) : NULL;
    if (s == LITHE_OK && !path) s = lithe__oom(WHAT, dn + sizeof SHARD + 2);
    if (s == LITHE_OK) { /* the shard first, then the model.json that names it: each file atomic */
        snprintf(path, dn + sizeof SHARD + 2, "%s/%s", dir, SHARD);
        s = lithe__write_file_atomic(path, bin, bn);
    }
    if (s == LITHE_OK) {
        snprintf(path, dn + sizeof SHARD + 2, "%s/model.json", dir);
        s = lithe__write_file_atomic(path, (const uint8_t *)json, jn);
    }
    lithe__free(path);
    lithe__free(json);
    lithe__free(bin);
    return s;
}
