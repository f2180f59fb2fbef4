/* The npm package's core module (LITHE_IMPORTERS_SEPARATE, Emscripten builds only): the ONNX and
 * TF.js importers and the graph executor (core/io/onnx.c, tfjs/, core/graph/), with the CPU
 * backend's convolution and pooling that only imported graphs run (backends/cpu/conv/), are a
 * second module, lithe-importers.wasm (lithe-importers-simd.wasm beside the SIMD128 core;
 * bindings/js/src/importers.c), that the JS loader links into this module's memory and table when
 * a model needs it, then registers here. Until then the public entry points
 * and the .lithe loader's graph nodes fail with LITHE_ERR_UNSUPPORTED and raise a flag that the
 * loader reads to know that loading the second module and retrying will help. */
#include "importers.h"
#include "../../../backends/cpu/simd/simd.h"

static const lithe__importers *hooks;
static bool wanted;

static lithe_status absent(const char *fn) {
    wanted = true;
    return lithe__fail(LITHE_ERR_UNSUPPORTED,
                       "%s: ONNX / TF.js models need lithe-importers.wasm, which is not loaded (lithe.load() loads it)",
                       fn);
}

/* Stands for "onnx_graph.v1" in the layer registry until the module is registered, so that a .lithe
 * file with a graph node gets as far as the loader's attach call, which then says what is missing. */
static lithe_status placeholder_init(lithe_model *m, const lithe_value *X, const lithe_value *Y) {
    (void)m, (void)X, (void)Y;
    return absent("onnx_graph.v1");
}
static lithe_status placeholder_forward(lithe_model *m, const lithe_value *X, bool is_train, lithe_value **Y,
                                        lithe_backprop **bp) {
    (void)m, (void)X, (void)is_train, (void)Y, (void)bp;
    return absent("onnx_graph.v1");
}
static const lithe__layer_type placeholder = {"onnx_graph.v1", placeholder_init, placeholder_forward, NULL, 0, 0};
static const lithe__layer_type *const placeholder_types[] = {&placeholder, NULL};

void lithe__importers_set(const lithe__importers *h) { hooks = h; }

bool lithe__importers_wanted(void) {
    bool w = wanted;
    wanted = false;
    return w;
}

const lithe__layer_type *lithe__importers_graph_type(void) { return hooks ? hooks->onnx_graph_type : &placeholder; }
const lithe__layer_type *const *lithe__importers_graph_types(void) {
    return hooks ? hooks->graph_types : placeholder_types;
}

lithe_status lithe__onnx_attach(lithe_model *m) { return hooks ? hooks->onnx_attach(m) : absent("lithe_model_load"); }
lithe_status lithe__graph_prepare(lithe_model *m) {
    return hooks ? hooks->graph_prepare(m) : absent("lithe_model_prepare_inference");
}
lithe_tensor *lithe__graph_const(lithe_model *m, size_t i) { return hooks ? hooks->graph_const(m, i) : NULL; }
/* LoRA adapters: adding and merging them (core/lora_add.c, in the importers' module) */
lithe_status lithe_model_add_lora(lithe_model *m, const char *pattern, int64_t rank, float alpha, uint64_t seed) {
    return hooks ? hooks->add_lora(m, pattern, rank, alpha, seed) : absent("lithe_model_add_lora");
}

lithe_status lithe_model_merge_lora(lithe_model *m) {
    return hooks ? hooks->merge_lora(m) : absent("lithe_model_merge_lora");
}

lithe_status lithe_onnx_load_bytes(const uint8_t *data, size_t len, lithe_model **out) {
    if (out) *out = NULL;
    return hooks ? hooks->onnx_load_bytes(data, len, out) : absent("lithe_onnx_load_bytes");
}

lithe_status lithe_onnx_load(const char *path, lithe_model **out) {
    if (out) *out = NULL;
    return hooks ? hooks->onnx_load(path, out) : absent("lithe_onnx_load");
}

const char *const *lithe_onnx_op_names(size_t *n) {
    static const char *const none[] = {NULL};
    if (hooks) return hooks->onnx_op_names(n);
    if (n) *n = 0;
    return none;
}

bool lithe_onnx_op_has_backward(const char *op_type) {
    return hooks ? hooks->onnx_op_has_backward(op_type) : false;
}

lithe_status lithe_tfjs_load_bytes(const char *model_json, size_t json_len, const uint8_t *weights, size_t weights_len,
                                   lithe_model **out) {
    if (out) *out = NULL;
    return hooks ? hooks->tfjs_load_bytes(model_json, json_len, weights, weights_len, out) : absent("lithe_tfjs_load_bytes");
}

lithe_status lithe_tfjs_load(const char *path, lithe_model **out) {
    if (out) *out = NULL;
    return hooks ? hooks->tfjs_load(path, out) : absent("lithe_tfjs_load");
}

/* The writers (export): a model saved before the module is linked says so, and the loader links it
 * and retries (src/index.js's saveOnnx / saveTfjs). */
lithe_status lithe_model_save_onnx_bytes(lithe_model *m, uint8_t **out, size_t *len) {
    return hooks ? hooks->save_onnx_bytes(m, out, len) : absent("lithe_model_save_onnx_bytes");
}

lithe_status lithe_model_save_onnx(lithe_model *m, const char *path) {
    return hooks ? hooks->save_onnx(m, path) : absent("lithe_model_save_onnx");
}

lithe_status lithe_tfjs_save_bytes(lithe_model *m, char **json, size_t *json_len, uint8_t **weights,
                                   size_t *weights_len) {
    return hooks ? hooks->tfjs_save_bytes(m, json, json_len, weights, weights_len) : absent("lithe_tfjs_save_bytes");
}

lithe_status lithe_tfjs_save(lithe_model *m, const char *dir) {
    return hooks ? hooks->tfjs_save(m, dir) : absent("lithe_tfjs_save");
}

/* The CPU backend's conv2d / pool2d primitives (backends/cpu/cpu_backend.c) call these. Their only
 * callers are graph ops, which run in the importer module, so the hooks are set whenever they are
 * reached; without them every call fails with the error (LITHE_ERR_UNSUPPORTED). */
lithe_status lithe__cpu_conv2d(lithe_backend *be, const lithe__conv2d *g, const float *X, const float *W,
                               const float *b, const lithe__act *a, float *Y) {
    return hooks ? hooks->cpu_conv2d(be, g, X, W, b, a, Y) : absent("conv2d");
}

lithe_status lithe__cpu_conv2d_backward(lithe_backend *be, const lithe__conv2d *g, const float *X, const float *W,
                                        const float *dY, float *dX, float *dW, float *db) {
    return hooks ? hooks->cpu_conv2d_backward(be, g, X, W, dY, dX, dW, db) : absent("conv2d_backward");
}

lithe_status lithe__cpu_conv2d_packed(lithe_backend *be, const lithe__conv2d *g, const float *X, const float *W,
                                      const struct lithe__sgemm_packed_b *Wp, const float *b, const lithe__act *a,
                                      float *Y) {
    return hooks ? hooks->cpu_conv2d_packed(be, g, X, W, Wp, b, a, Y) : absent("conv2d_prepared");
}

lithe_status lithe__cpu_conv2d_add(lithe_backend *be, const lithe__conv2d *g, const float *X, const float *W,
                                   const struct lithe__sgemm_packed_b *Wp, const float *b, const float *R,
                                   bool res_first, float *Y) {
    return hooks ? hooks->cpu_conv2d_add(be, g, X, W, Wp, b, R, res_first, Y) : absent("conv2d_add");
}

/* The int8 convolution of quantized graphs (conv/qconv.c): its driver and kernels are the importer
 * module's, like the float convolution's */
lithe_status lithe__cpu_conv_q8(lithe_backend *be, const lithe__conv2d *g, const lithe_tensor *X, float xs, int32_t xz,
                                int32_t xmin, int32_t xmax, const lithe_tensor *W, const lithe_tensor *b,
                                const lithe__act *a, lithe_tensor *Y, bool *done) {
    *done = false;
    return hooks ? hooks->cpu_conv_q8(be, g, X, xs, xz, xmin, xmax, W, b, a, Y, done) : absent("conv_q8");
}

lithe_status lithe__cpu_pool2d(const lithe__pool2d *g, const float *X, float *Y, int32_t *which) {
    return hooks ? hooks->cpu_pool2d(g, X, Y, which) : absent("pool2d");
}

lithe_status lithe__cpu_pool2d_backward(const lithe__pool2d *g, const float *dY, const int32_t *which, float *dX) {
    return hooks ? hooks->cpu_pool2d_backward(g, dY, which, dX) : absent("pool2d_backward");
}

/* Making compact weights (core/quant_make.c, in the importers' module): the loader links it and
 * retries (src/index.js's compressWeights). */
lithe_status lithe_tensor_quantize(const lithe_tensor *t, lithe_dtype dtype, int axis, lithe_tensor **out) {
    if (out) *out = NULL;
    return hooks ? hooks->tensor_quantize(t, dtype, axis, out) : absent("lithe_tensor_quantize");
}

lithe_status lithe_model_compress_matching(lithe_model *m, lithe_dtype dtype, const char *pattern, size_t *n_converted) {
    if (n_converted) *n_converted = 0;
    return hooks ? hooks->compress_matching(m, dtype, pattern, n_converted) : absent("lithe_model_compress_weights");
}

/* Static quantization (core/graph/quantize_static.c, in the importers' module with the graph it
 * rewrites; src/index.js's quantizeStatic links it and retries). */
lithe_status lithe_model_quantize_static(lithe_model *m, const lithe_tensor *calib, size_t *n_quantized,
                                         lithe_model **out) {
    if (out) *out = NULL;
    if (n_quantized) *n_quantized = 0;
    return hooks ? hooks->quantize_static(m, calib, n_quantized, out) : absent("lithe_model_quantize_static");
}

lithe_status lithe_model_to_thinc_bytes(lithe_model *m, uint8_t **out, size_t *len) {
    if (out) *out = NULL;
    if (len) *len = 0;
    return hooks ? hooks->to_thinc_bytes(m, out, len) : absent("lithe_model_to_thinc_bytes");
}

lithe_status lithe_model_to_thinc_bytes_shims(lithe_model *m, size_t n_shim, const uint8_t *const *shim_bytes,
                                              const size_t *shim_lens, uint8_t **out, size_t *len) {
    if (out) *out = NULL;
    if (len) *len = 0;
    return hooks ? hooks->to_thinc_bytes_shims(m, n_shim, shim_bytes, shim_lens, out, len)
                 : absent("lithe_model_to_thinc_bytes_shims");
}

lithe_status lithe_model_from_thinc_bytes(lithe_model *m, const uint8_t *data, size_t len) {
    return hooks ? hooks->from_thinc_bytes(m, data, len) : absent("lithe_model_from_thinc_bytes");
}

lithe_status lithe_model_lora_base_hash(lithe_model *m, char *out, size_t cap) {
    if (out && cap) *out = 0;
    return hooks ? hooks->lora_base_hash(m, out, cap) : absent("lithe_model_lora_base_hash");
}

lithe_status lithe_model_save_lora(lithe_model *m, const char *path) {
    return hooks ? hooks->save_lora(m, path) : absent("lithe_model_save_lora");
}

lithe_status lithe_model_save_lora_bytes(lithe_model *m, uint8_t **out, size_t *len) {
    if (out) *out = NULL;
    if (len) *len = 0;
    return hooks ? hooks->save_lora_bytes(m, out, len) : absent("lithe_model_save_lora_bytes");
}

lithe_status lithe_model_load_lora(lithe_model *m, const char *path) {
    return hooks ? hooks->load_lora(m, path) : absent("lithe_model_load_lora");
}

lithe_status lithe_model_load_lora_bytes(lithe_model *m, const uint8_t *data, size_t len) {
    return hooks ? hooks->load_lora_bytes(m, data, len) : absent("lithe_model_load_lora_bytes");
}

lithe_status lithe_npy_load(const uint8_t *data, size_t len, lithe_tensor **out) {
    if (out) *out = NULL;
    return hooks ? hooks->npy_load(data, len, out) : absent("lithe_npy_load");
}

lithe_status lithe_npy_save(const lithe_tensor *t, uint8_t **out, size_t *len) {
    if (out) *out = NULL;
    if (len) *len = 0;
    return hooks ? hooks->npy_save(t, out, len) : absent("lithe_npy_save");
}

lithe_status lithe_npy_read_file(const char *path, lithe_tensor **out) {
    if (out) *out = NULL;
    return hooks ? hooks->npy_read_file(path, out) : absent("lithe_npy_read_file");
}

lithe_status lithe_npy_write_file(const lithe_tensor *t, const char *path) {
    return hooks ? hooks->npy_write_file(t, path) : absent("lithe_npy_write_file");
}

lithe_status lithe_model_plan_train(lithe_model *m, const lithe_value *X, int64_t batch, const lithe_optimizer *opt,
                                    lithe_train_memory *out) {
    return hooks ? hooks->plan_train(m, X, batch, opt, out) : absent("lithe_model_plan_train");
}

lithe_status lithe_model_set_memory_budget(lithe_model *m, size_t bytes, const lithe_optimizer *opt) {
    return hooks ? hooks->set_memory_budget(m, bytes, opt) : absent("lithe_model_set_memory_budget");
}

/* a budget is set only through the module (above), so it is there when a step checks one */
lithe_status lithe__budget_check(lithe_model *m, const lithe_value *X) {
    return hooks ? hooks->budget_check(m, X) : absent("lithe_model_set_memory_budget");
}
