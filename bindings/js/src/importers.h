/* The npm package's two modules (Emscripten; docs/wasm.md): what the importer module
 * (importers.c) hands the core module (importers_hooks.c, lithe_js.c). Not installed. */
#ifndef LITHE_JS_IMPORTERS_H
#define LITHE_JS_IMPORTERS_H

#include "../../../core/internal.h"

/* The npm package's modules (LITHE_IMPORTERS_SEPARATE) leave core/graph/, onnx.c, tfjs.c and the
 * CPU backend's convolution and pooling (backends/cpu/conv.c) out of the core module: they are a
 * second module (bindings/js/src/importers.c) that the JS loader links into the same memory and
 * registers with lithe__importers_set. The core reaches the graph type, the importers and the
 * conv / pool kernels through bindings/js/src/importers_hooks.c, which fails with LITHE_ERR_UNSUPPORTED (and
 * raises lithe__importers_wanted) until then. */
struct lithe__sgemm_packed_b; /* (backends/cpu/gemm/gemm.h) */
typedef struct lithe__importers {
    const lithe__layer_type *onnx_graph_type;
    const lithe__layer_type *const *graph_types;
    lithe_status (*onnx_attach)(lithe_model *m);
    lithe_status (*onnx_load_bytes)(const uint8_t *data, size_t len, lithe_model **out);
    lithe_status (*onnx_load)(const char *path, lithe_model **out);
    const char *const *(*onnx_op_names)(size_t *n);
    bool (*onnx_op_has_backward)(const char *op_type);
    lithe_status (*tfjs_load_bytes)(const char *model_json, size_t json_len, const uint8_t *weights,
                                    size_t weights_len, lithe_model **out);
    lithe_status (*tfjs_load)(const char *path, lithe_model **out);
    lithe_status (*graph_prepare)(lithe_model *m);
    lithe_tensor *(*graph_const)(lithe_model *m, size_t i);
    /* The CPU backend's convolution and pooling (backends/cpu/conv.c, declared in
     * backends/cpu/simd/simd.h): only imported graphs run them, so they live in the same module
     * as the graph executor, and the core's conv2d / pool2d primitives reach them through here. */
    lithe_status (*cpu_conv2d)(lithe_backend *be, const lithe__conv2d *g, const float *X, const float *W,
                               const float *b, const lithe__act *a, float *Y);
    lithe_status (*cpu_conv2d_backward)(lithe_backend *be, const lithe__conv2d *g, const float *X, const float *W,
                                        const float *dY, float *dX, float *dW, float *db);
    lithe_status (*cpu_conv2d_packed)(lithe_backend *be, const lithe__conv2d *g, const float *X, const float *W,
                                      const struct lithe__sgemm_packed_b *Wp, const float *b, const lithe__act *a,
                                      float *Y);
    lithe_status (*cpu_pool2d)(const lithe__pool2d *g, const float *X, float *Y, int32_t *which);
    lithe_status (*cpu_pool2d_backward)(const lithe__pool2d *g, const float *dY, const int32_t *which, float *dX);
    lithe_status (*cpu_conv2d_add)(lithe_backend *be, const lithe__conv2d *g, const float *X, const float *W,
                                   const struct lithe__sgemm_packed_b *Wp, const float *b, const float *R,
                                   bool res_first, float *Y);
    /* The ONNX and TF.js writers (core/io/onnx_write.c, onnx_lower.c, tfjs/save.c): export is rare,
     * so they live here too, and saving loads this module first. */
    lithe_status (*save_onnx_bytes)(lithe_model *m, uint8_t **out, size_t *len);
    lithe_status (*save_onnx)(lithe_model *m, const char *path);
    lithe_status (*tfjs_save_bytes)(lithe_model *m, char **json, size_t *json_len, uint8_t **weights,
                                    size_t *weights_len);
    lithe_status (*tfjs_save)(lithe_model *m, const char *dir);
    /* Making compact weights (core/quant_make.c): rare, so here too. */
    lithe_status (*tensor_quantize)(const lithe_tensor *t, lithe_dtype dtype, int axis, lithe_tensor **out);
    lithe_status (*compress_matching)(lithe_model *m, lithe_dtype dtype, const char *pattern, size_t *n_converted);
    /* LoRA adapters: adding and merging them (core/lora_add.c; the step's half, core/lora.c, is the
     * core's) */
    lithe_status (*add_lora)(lithe_model *m, const char *pattern, int64_t rank, float alpha, uint64_t seed);
    lithe_status (*merge_lora)(lithe_model *m);
    /* Thinc's bytes (core/io/thinc_bytes.c): no npm API reads or writes them; C callers of the
     * WebAssembly build load this module first. */
    lithe_status (*to_thinc_bytes)(lithe_model *m, uint8_t **out, size_t *len);
    lithe_status (*to_thinc_bytes_shims)(lithe_model *m, size_t n_shim, const uint8_t *const *shim_bytes,
                                         const size_t *shim_lens, uint8_t **out, size_t *len);
    lithe_status (*from_thinc_bytes)(lithe_model *m, const uint8_t *data, size_t len);
    /* LoRA adapters' files and base hash (core/lora_file.c). */
    lithe_status (*lora_base_hash)(lithe_model *m, char *out, size_t cap);
    lithe_status (*save_lora)(lithe_model *m, const char *path);
    lithe_status (*save_lora_bytes)(lithe_model *m, uint8_t **out, size_t *len);
    lithe_status (*load_lora)(lithe_model *m, const char *path);
    lithe_status (*load_lora_bytes)(lithe_model *m, const uint8_t *data, size_t len);
    /* .npy arrays (core/io/npy.c): no npm API uses them. */
    lithe_status (*npy_load)(const uint8_t *data, size_t len, lithe_tensor **out);
    lithe_status (*npy_save)(const lithe_tensor *t, uint8_t **out, size_t *len);
    lithe_status (*npy_read_file)(const char *path, lithe_tensor **out);
    lithe_status (*npy_write_file)(const lithe_tensor *t, const char *path);
    /* The training memory plan and budget (core/train/plan.c). */
    lithe_status (*plan_train)(lithe_model *m, const lithe_value *X, int64_t batch, const lithe_optimizer *opt,
                               lithe_train_memory *out);
    lithe_status (*set_memory_budget)(lithe_model *m, size_t bytes, const lithe_optimizer *opt);
    lithe_status (*budget_check)(lithe_model *m, const lithe_value *X);
    /* Static int8 quantization with calibration (core/graph/quantize_static.c, issue 24 item 3) */
    lithe_status (*quantize_static)(lithe_model *m, const lithe_tensor *calib, size_t *n_quantized, lithe_model **out);
    /* The int8 convolution (backends/cpu/conv/qconv.c, the CPU backend's conv_q8): only quantized
     * graphs run it, so it lives beside the float convolution; the core's conv_q8 reaches it here. */
    lithe_status (*cpu_conv_q8)(lithe_backend *be, const lithe__conv2d *g, const lithe_tensor *X, float xs, int32_t xz,
                                int32_t xmin, int32_t xmax, const lithe_tensor *W, const lithe_tensor *b,
                                const lithe__act *a, lithe_tensor *Y, bool *done);
} lithe__importers;
void lithe__importers_set(const lithe__importers *h);
bool lithe__importers_wanted(void); /* a call since the last query needed the missing module */

#endif
