# The WebGPU backend (registered in backends/backends.cmake): only in Emscripten builds with
# LITHE_WEBGPU=ON (preset wasm-webgpu: the npm package's lithe-webgpu.wasm, loaded only when a page
# asks for device 'webgpu'; the CPU-only modules never contain it). The WGSL shaders are embedded
# as strings and compiled by the JS recorder on first use.
option(LITHE_WEBGPU "The WebGPU backend (Emscripten builds only: preset wasm-webgpu)" OFF)
set(LITHE_WEBGPU_ENABLED OFF)
set(LITHE_WEBGPU_WHY_OFF "this library was built without the WebGPU backend (only the npm package's lithe-webgpu.wasm has it: preset wasm-webgpu)")
if(LITHE_WEBGPU AND EMSCRIPTEN)
  set(LITHE_WEBGPU_ENABLED ON)
  set(LITHE_WG_DIR ${CMAKE_CURRENT_SOURCE_DIR}/backends/webgpu)
  set(LITHE_WG_SHADERS fill elementwise rows act softmax reduce optim cce gemm copy) # LITHE__WG_SHADERS' order
  list(APPEND LITHE_WG_SHADERS ids maxout seq2col sparse lstm_mat lstm_cell attention gemm_q8)
  list(APPEND LITHE_WG_SHADERS gemm_sg gemm_v4 optim_clip) # issue 27's subgroup GEMM and the CPU adapter's vec4 GEMM
  list(APPEND LITHE_WG_SHADERS conv pool bcast unary layernorm layernorm_dx layernorm_dg seqreduce cast copy_nd) # LITHE__WG_SHADERS_GRAPH
  list(APPEND LITHE_WG_SHADERS softmax_cpu layernorm_cpu layernorm_dx_cpu) # LITHE__WG_SHADERS_CPU: CPU adapters' row kernels
  file(GLOB LITHE_WG_WGSL ${LITHE_WG_DIR}/shaders/*.wgsl)
  set(LITHE_WG_EMBED ${CMAKE_CURRENT_BINARY_DIR}/lithe_wg_shaders.c)
  add_custom_command(
    OUTPUT ${LITHE_WG_EMBED}
    COMMAND ${CMAKE_COMMAND} -DOUT=${LITHE_WG_EMBED} "-DNAMES=${LITHE_WG_SHADERS}" -DDIR=${LITHE_WG_DIR}/shaders
            -P ${LITHE_WG_DIR}/embed_wgsl.cmake
    DEPENDS ${LITHE_WG_WGSL} ${LITHE_WG_DIR}/embed_wgsl.cmake
    COMMENT "embedding WGSL shaders" VERBATIM)
  set_source_files_properties(${LITHE_WG_EMBED} PROPERTIES INCLUDE_DIRECTORIES ${LITHE_WG_DIR})
  list(APPEND LITHE_SOURCES backends/webgpu/webgpu_backend.c backends/webgpu/table.c backends/webgpu/ops_elementwise.c
       backends/webgpu/ops_gemm.c ${LITHE_WG_EMBED})
  list(APPEND LITHE_SOURCES backends/webgpu/ops_ids.c backends/webgpu/ops_seq.c backends/webgpu/ops_recur.c)
  list(APPEND LITHE_SOURCES backends/webgpu/ops_train.c)
  list(APPEND LITHE_SOURCES backends/webgpu/ops_conv.c backends/webgpu/ops_bcast.c backends/webgpu/ops_norm.c
       backends/webgpu/ops_copy.c)
elseif(LITHE_WEBGPU)
  message(FATAL_ERROR "LITHE_WEBGPU=ON needs an Emscripten build (preset wasm-webgpu)")
endif()
