/* The WebGPU backend's internals (docs/backends.md, "WebGPU"): the context, the imports of the
 * JavaScript command recorder (bindings/js/src/webgpu.js) and what the primitive files share.
 *
 * The wasm core never calls WebGPU itself. It records work through a few imported functions of
 * module "lithe_webgpu": buffers are JS-side GPUBuffers named by a 32-bit id; a dispatch names its
 * shader (an id and its WGSL source, compiled by JS on first use: lazy, cached), its storage
 * buffers and a 128-byte parameter block; JS queues it and encodes everything queued into one
 * command encoder, submitted once at the next synchronisation point (a read-back, an upload over
 * queued work, lithe_backend_sync). The only asynchronous import is `read` (mapAsync): the module
 * is instrumented with Binaryen's Asyncify for it alone, so C keeps its synchronous table. */
#ifndef LITHE_WEBGPU_INTERNAL_H
#define LITHE_WEBGPU_INTERNAL_H

#include "../../core/backend.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define WG_IMPORT(name) __attribute__((import_module("lithe_webgpu"), import_name(#name)))
/* 1 when the host gave the module a GPUDevice, else 0 (then *why* names the reason: up to cap bytes). */
WG_IMPORT(available) int32_t lithe__wg_available(char *why, uint32_t cap);
/* A new storage buffer of `bytes` (a multiple of 256) zero-filled; 0 when the device refuses. */
WG_IMPORT(buffer_create) uint32_t lithe__wg_buffer_create(uint32_t bytes);
WG_IMPORT(buffer_destroy) void lithe__wg_buffer_destroy(uint32_t id);
/* queue.writeBuffer of n bytes at off (after submitting queued work); 0 on success. */
WG_IMPORT(write) int32_t lithe__wg_write(uint32_t id, uint32_t off, const void *src, uint32_t n);
/* Submits queued work, copies n bytes at off to a mapped staging buffer and into dst (async: the
 * module unwinds through Asyncify until mapAsync resolves); 0 on success. */
WG_IMPORT(read) int32_t lithe__wg_read(uint32_t id, uint32_t off, void *dst, uint32_t n);
/* Queues a buffer-to-buffer copy (offsets and size multiples of 4). */
WG_IMPORT(copy) void lithe__wg_copy(uint32_t src, uint32_t src_off, uint32_t dst, uint32_t dst_off, uint32_t n);
/* Queues a dispatch: shader `shader` specialised with override OP = op (source src of src_len
 * bytes, read by JS only the first time it meets this (shader, op)); nbuf storage buffers at
 * bindings 1..nbuf (bufs[i] ids, read_write where bit i of writable is set, else read-only), the
 * 128-byte params at binding 0; gx x gy workgroups. 0 on success, else the WGSL compile failed. */
WG_IMPORT(dispatch) int32_t lithe__wg_dispatch(uint32_t shader, const char *src, uint32_t src_len, uint32_t op,
                                               const uint32_t *bufs, uint32_t nbuf, uint32_t writable,
                                               const void *params, uint32_t gx, uint32_t gy);
/* Queues a zero fill of n bytes at off (multiples of 4): a clear command, not a dispatch. */
WG_IMPORT(clear) void lithe__wg_clear(uint32_t id, uint32_t off, uint32_t n);
/* What the adapter offers the shaders: bit 0 subgroups; bit 1 the adapter runs on the CPU
 * (SwiftShader, a fallback adapter); bits 8..15 / 16..23 its smallest and largest subgroup size
 * (0: unknown). */
WG_IMPORT(features) uint32_t lithe__wg_features(void);
/* Submits queued work (nothing when none is queued). */
WG_IMPORT(flush) void lithe__wg_flush(void);
/* The message of the last failed import call into buf (cap bytes, NUL-terminated). */
WG_IMPORT(last_error) void lithe__wg_last_error(char *buf, uint32_t cap);
#undef WG_IMPORT

/* A buffer: its JS id and capacity. A tensor's storage->data points to one. */
typedef struct lithe__wg_buf {
    uint32_t id, bytes;
} lithe__wg_buf;

#define LITHE__WG_CLASSES 32
typedef struct lithe__wg {
    /* The buffer pool: freed buffers wait here by size class (bytes 256 << k) for reuse; later
     * work may take one at once (the queue orders it after the work that used it). */
    lithe__wg_buf **pool[LITHE__WG_CLASSES];
    uint32_t pool_n[LITHE__WG_CLASSES], pool_cap[LITHE__WG_CLASSES];
    uint32_t dummy[6]; /* one per binding slot: an unused binding never aliases another */
    uint64_t n_buffers; /* buffers created, for tests (repeated steps create none) */
    /* the adapter has subgroups of 4..64: 1, GEMMs of up to 32 rows take shaders/gemm_sg.wgsl;
     * 2 (tests), every GEMM does; 0 none */
    int subgroups;
    /* the adapter runs on the CPU (SwiftShader, a fallback adapter: features() bit 1): 1, GEMMs whose
     * operands allow vec4 loads take shaders/gemm_v4.wgsl; 2 (tests) every GEMM does; 0 never */
    int cpu_gemm;
    /* the adapter runs on the CPU: 1, softmax and layernorm (forward, dX) take one invocation per
     * row and no barrier (shaders/<op>_cpu.wgsl); 0 (real GPUs), a workgroup per row */
    int cpu_rows;
} lithe__wg;

static inline lithe__wg *lithe__wg_of(lithe_backend *be) { return (lithe__wg *)be->ctx; }
static inline lithe__wg_buf *lithe__wg_mem(const lithe_tensor *t) { return (lithe__wg_buf *)t->storage->data; }

typedef struct lithe__wg_params {
    uint32_t u[16]; /* u[0..9]: the op's arguments; u[10 + b]: binding b's word offset */
    float f[16];
} lithe__wg_params;

/* The imported graphs' shaders (ops_conv.c, ops_bcast.c, ops_norm.c, ops_copy.c) */
#define LITHE__WG_SHADERS_GRAPH(X)                                                                                  \
    X(conv) X(pool) X(bcast) X(unary) X(layernorm) X(layernorm_dx) X(layernorm_dg) X(seqreduce) X(cast) X(copy_nd)
/* The row kernels of adapters that run on the CPU (one invocation per row, no barrier) */
#define LITHE__WG_SHADERS_CPU(X) X(softmax_cpu) X(layernorm_cpu) X(layernorm_dx_cpu)
/* The shaders (shaders/<name>.wgsl, embedded by embed_wgsl.cmake into lithe_wg_shaders.c). */
#define LITHE__WG_SHADERS(X) X(fill) X(elementwise) X(rows) X(act) X(softmax) X(reduce) X(optim) X(cce) X(gemm) X(copy) \
    X(ids) X(maxout) X(seq2col) X(sparse) X(lstm_mat) X(lstm_cell) X(attention) X(gemm_q8) \
    X(gemm_sg) X(gemm_v4) X(optim_clip) \
    LITHE__WG_SHADERS_GRAPH(X) LITHE__WG_SHADERS_CPU(X)
enum {
#define X(n) LITHE__WG_SH_##n,
    LITHE__WG_SHADERS(X)
#undef X
    LITHE__WG_SH_COUNT
};
extern const char *const lithe__wg_shader_src[LITHE__WG_SH_COUNT];

/* Queues one dispatch of `shader` with override OP = op over gx x gy workgroups, binding the
 * tensors in order (NULL: unused) at 1..n; bit b of writable: the shader writes binding b (it is
 * declared read_write). Fills p->u[10 + b] with each tensor's word offset. A written tensor whose
 * buffer another binding shares (WebGPU refuses such aliasing) goes through a scratch copy of its
 * buffer, copied back over the tensor's bytes after. `op_name` names the primitive in messages. */
lithe_status lithe__wg_dispatch_(lithe_backend *be, const char *op_name, int shader, uint32_t op, lithe__wg_params *p,
                                 const lithe_tensor *const *bind, size_t n, uint32_t writable, uint32_t gx,
                                 uint32_t gy);
/* ops_gemm.c: Y = act(A B + b), b (M,) one value per ROW of Y (NULL: none), through the vec4 GEMM
 * (A's and B's row strides and offsets multiples of 4 floats, else LITHE_ERR_UNSUPPORTED): the
 * CPU adapters' 1x1 convolution (ops_conv.c). */
lithe_status lithe__wg_gemm_v4_rowbias(lithe_backend *be, const char *name, const lithe_tensor *A, const lithe_tensor *B,
                                       const lithe_tensor *b, const lithe__act *a, lithe_tensor *Y);
/* ops_copy.c: N-D strided copies of 4- / 8-byte elements. */
lithe_status lithe__wg_copy_nd(lithe_backend *be, lithe_tensor *Y, const lithe_tensor *X);
/* A device tensor of n float32 (scratch for reductions); release with lithe_tensor_release. */
lithe_status lithe__wg_scratch(lithe_backend *be, size_t n, lithe_tensor **out);
/* Reads n bytes of t's buffer from t's first element (a synchronisation point). */
lithe_status lithe__wg_read_tensor(lithe_backend *be, const lithe_tensor *t, void *dst, size_t n);

/* adam_step with gradient clipping in one workgroup (norm, decision and step in one dispatch) up
 * to this many elements; larger params take partials, the decision and the step (three). */
#define LITHE__WG_FUSED_CLIP_MAX 16384
#define WG_SIZE 256u
/* The most workgroups of a grid-stride dispatch: 1024, or 64 where the adapter runs on the CPU
 * (webgpu_backend.c): SwiftShader pays per workgroup (a 401,408-element Adam step took ~2x as long
 * in 1024 workgroups as in 64), and 64 x 256 invocations keep every core busy. */
extern uint32_t lithe__wg_max_groups;
static inline uint32_t lithe__wg_groups(int64_t n) {
    int64_t g = (n + WG_SIZE - 1) / WG_SIZE;
    return g < 1 ? 1u : (g > (int64_t)lithe__wg_max_groups ? lithe__wg_max_groups : (uint32_t)g);
}
/* Workgroups of the CPU adapters' row kernels: 16 invocations, one row each, grid-stride past
 * lithe__wg_max_groups (several workgroups, so SwiftShader spreads the rows over its threads). */
static inline uint32_t lithe__wg_row_groups(int64_t rows) {
    int64_t g = (rows + 15) / 16;
    return g < 1 ? 1u : (g > (int64_t)lithe__wg_max_groups ? lithe__wg_max_groups : (uint32_t)g);
}
static inline lithe_status lithe__wg_f32(const char *op, const lithe_tensor *t) {
    if (t->dtype != LITHE_F32)
        return lithe__fail(LITHE_ERR_DTYPE, "webgpu %s: expects float32, got %s", op, lithe_dtype_name(t->dtype));
    if ((uint64_t)t->numel + (uint64_t)t->offset >= (1u << 30))
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "webgpu %s: a tensor of %lld elements exceeds the buffer limit", op,
                           (long long)t->numel);
    return LITHE_OK;
}
static inline lithe_status lithe__wg_dense(const char *op, const lithe_tensor *t) {
    LITHE__TRY(lithe__wg_f32(op, t));
    if (!lithe_tensor_is_contiguous(t))
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "webgpu %s: strided tensors are not supported yet", op);
    return LITHE_OK;
}

#define WG_DISPATCH(op_name, shader, op, params, writable, gx, gy, ...)                                            \
    lithe__wg_dispatch_(be, op_name, LITHE__WG_SH_##shader, op, params, (const lithe_tensor *const[]){__VA_ARGS__}, \
                        sizeof((const lithe_tensor *const[]){__VA_ARGS__}) / sizeof(const lithe_tensor *), writable,  \
                        gx, gy)

/* The primitives: wg_<name> for every line of core/primitives.def but those unsupported.h lists. */
#include "unsupported.h"
#define LITHE_PRIM(name, params, args) LITHE__PRIM_DECL(wg_, name, params)
#include "../../core/primitives.def"
#undef LITHE_PRIM

void lithe__wg_fill_ops(lithe_backend_ops *ops);
/* The optional cce_stats op (core/backend.h; ops_train.c). */
lithe_status lithe__wg_cce_stats(lithe_backend *be, const lithe_tensor *G, const lithe_tensor *labels,
                                 const lithe_tensor *D, float smoothing, bool has_missing, int64_t missing,
                                 lithe_tensor *out);

#endif
