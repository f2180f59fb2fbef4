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
#include "tfjs.h"

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
static lithe_status check_supported(const js_val *layers) {
    char missing[1024] = "", seen[32][NAME_MAX_LEN + 64];
    size_t nmiss = 0;
    LITHE__TRY(lithe__tfjs_check_layers(layers)); /* names unique, rates in range (check.c) */
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
    if (s == LITHE_OK) s = lithe__tfjs_keep_json(*out, json, json_len); /* for lithe_tfjs_save */
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
