/* The npm package's second module, lithe-importers.wasm: the ONNX and TF.js importers and the graph
 * executor (core/io/onnx.c, tfjs.c, core/graph/) and the ONNX / TF.js writers, with the CPU backend's convolution and pooling
 * that only graphs run (backends/cpu/conv/), built as an Emscripten side module (position-
 * independent, importing the core module's memory, table, stack pointer and the functions it
 * calls). src/loader.js links it into a running core module when a model needs it and hands this
 * table to lithe_js_importers_set; the core then reaches the importers through it
 * (importers_hooks.c). Nothing here is new behaviour: the same functions native builds link. */
#include "importers.h"
#include "../../../backends/cpu/simd/simd.h"

__attribute__((visibility("default"))) const lithe__importers *lithe_importers(void) {
    static const lithe__importers table = {
        &lithe__onnx_graph_type, lithe__graph_types,    lithe__onnx_attach,    lithe_onnx_load_bytes,
        lithe_onnx_load,         lithe_onnx_op_names,   lithe_onnx_op_has_backward, lithe_tfjs_load_bytes, lithe_tfjs_load,
        lithe__graph_prepare,    lithe__graph_const,    lithe__cpu_conv2d,     lithe__cpu_conv2d_backward,
        lithe__cpu_conv2d_packed, lithe__cpu_pool2d,   lithe__cpu_pool2d_backward, lithe__cpu_conv2d_add,
        lithe_model_save_onnx_bytes, lithe_model_save_onnx, lithe_tfjs_save_bytes, lithe_tfjs_save,
        lithe_tensor_quantize,   lithe_model_compress_matching,
        lithe_model_add_lora, lithe_model_merge_lora,
        lithe_model_to_thinc_bytes, lithe_model_to_thinc_bytes_shims, lithe_model_from_thinc_bytes,
        lithe_model_lora_base_hash, lithe_model_save_lora, lithe_model_save_lora_bytes, lithe_model_load_lora,
        lithe_model_load_lora_bytes,
        lithe_npy_load, lithe_npy_save, lithe_npy_read_file, lithe_npy_write_file,
        lithe_model_plan_train, lithe_model_set_memory_budget, lithe__budget_check,
        lithe_model_quantize_static,
        lithe__cpu_conv_q8,
    };
    return &table;
}
