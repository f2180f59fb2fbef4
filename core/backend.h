/* What a backend author needs (docs/backends.md): the primitives' settings (activations,
 * elementwise ops, convolution and pooling geometry), the table (struct lithe_backend_ops, one
 * field per line of primitives.def), prepared forms, the backend and its description
 * (lithe_backend_desc), the registry and the macros that generate a table. Not installed */
#ifndef LITHE_CORE_BACKEND_H
#define LITHE_CORE_BACKEND_H

#include "tensor.h"

/* ------------------------------------------------------------------------------------------
 * Backends.
 * ---------------------------------------------------------------------------------------- */

/* Activation kinds for the act / act_backward primitives. `needs` says which of X and Y the
 * backward kernel reads, so layers keep only what is needed. */
typedef enum lithe__act_kind {
    LITHE__ACT_RELU = 0,  /* backward from Y: dY * (Y > 0) (Thinc: Y <= 0 -> 0)            */
    LITHE__ACT_SIGMOID,   /* backward from Y: dY * Y * (1 - Y)                             */
    LITHE__ACT_TANH,      /* backward from Y: dY * (1 - Y^2)                               */
    LITHE__ACT_SWISH,     /* X * sigmoid(X); backward from X and Y                         */
    LITHE__ACT_GELU,      /* X * Phi(X) (erf form); backward from X                        */
    LITHE__ACT_MISH,      /* X * tanh(softplus(X)) with Thinc's threshold; backward from X */
    LITHE__ACT_DISH,      /* Thinc's Dish; backward from X                                 */
    LITHE__ACT_HARD_SIGMOID,
    LITHE__ACT_HARD_TANH,
    LITHE__ACT_HARD_SWISH,
    LITHE__ACT_HARD_SWISH_MOBILENET,
    LITHE__ACT_CLIPPED_LINEAR, /* clip(slope * X + offset, min, max); ReluK is (1, 0, 0, k) */
    LITHE__ACT_COUNT
} lithe__act_kind;

typedef struct lithe__act {
    lithe__act_kind kind;
    float slope, offset, min_val, max_val; /* CLIPPED_LINEAR */
    float threshold;                       /* MISH (Thinc: 20) */
} lithe__act;

/* Whether activation a is a clamp to [lo, hi] (Relu: [0, inf); a CLIPPED_LINEAR of slope 1 and
 * offset 0: [min_val, max_val], which is ClippedLinear's, HardTanh's, ReluK's and an ONNX Clip's),
 * as a prepared op's out_min / out_max, and lo < hi (XNNPACK refuses min >= max; crossed, equal and
 * NaN bounds run the act kernel after the product); lo, hi may be NULL. */
bool lithe__act_clamp(const lithe__act *a, float *lo, float *hi);
/* Which inputs act_backward reads for a kind: X (the pre-activation) and/or Y (the output). */
enum { LITHE__ACT_NEEDS_X = 1, LITHE__ACT_NEEDS_Y = 2 };
static inline int lithe__act_needs(lithe__act_kind k) {
    switch (k) {
    case LITHE__ACT_RELU: case LITHE__ACT_SIGMOID: case LITHE__ACT_TANH: return LITHE__ACT_NEEDS_Y;
    case LITHE__ACT_SWISH: return LITHE__ACT_NEEDS_X | LITHE__ACT_NEEDS_Y;
    default: return LITHE__ACT_NEEDS_X;
    }
}

/* Imported graphs (core/graph/): the elementwise, convolution and pooling primitives' settings. */
/* LESS, GREATER, EQUAL give 1.0f / 0.0f (ONNX's bool, as a float mask on the backend); their
 * backward is zero. */
typedef enum lithe__bin_op { LITHE__BIN_ADD = 0, LITHE__BIN_SUB, LITHE__BIN_MUL, LITHE__BIN_DIV, LITHE__BIN_POW,
                             LITHE__BIN_LESS, LITHE__BIN_GREATER, LITHE__BIN_EQUAL, LITHE__BIN_COUNT } lithe__bin_op;
typedef enum lithe__unary_op { LITHE__UN_EXP = 0, LITHE__UN_LOG, LITHE__UN_SQRT, LITHE__UN_NEG, LITHE__UN_ERF,
                               LITHE__UN_ABS, LITHE__UN_RECIPROCAL,
                               /* issue 23: zero gradient for floor / ceil / round (half to even) */
                               LITHE__UN_FLOOR, LITHE__UN_CEIL, LITHE__UN_ROUND, LITHE__UN_SIN, LITHE__UN_COS,
                               LITHE__UN_COUNT } lithe__unary_op;
/* 2-D convolution geometry, ONNX's Conv: X (N, C, H, W), W (M, C / group, KH, KW) -> Y (N, M, OH, OW),
 * OH = (H + pad[0] + pad[2] - dil[0] (KH - 1) - 1) / stride[0] + 1 (likewise OW with [1], [3]);
 * pad: top, left, bottom, right. */
typedef struct lithe__conv2d {
    int64_t N, C, H, W, M, KH, KW, OH, OW, group;
    int64_t stride[2], pad[4], dil[2];
    bool assign_dx; /* conv2d_backward: dX = (not +=) the data gradient (set only for a backend with grad_assign) */
} lithe__conv2d;
/* 2-D pooling geometry: X (N, C, H, W) -> Y (N, C, OH, OW), windows as in lithe__conv2d (OH, OW
 * given by the caller, ceil_mode already applied). max: MaxPool (padding never wins); else
 * AveragePool, dividing by the window's in-bounds count, or by KH * KW when count_include_pad. */
typedef struct lithe__pool2d {
    int64_t N, C, H, W, KH, KW, OH, OW;
    int64_t stride[2], pad[4], dil[2];
    bool max, count_include_pad;
    bool assign; /* pool2d_backward: dX = (not +=) the routed dY (set only for a backend with grad_assign) */
    /* pool2d (max, indices kept): the index -1 where the output is <= 0, so pool2d_backward routes no
     * dY there: a Relu's backward before the pool folded in (set only for a backend with relu_pool) */
    bool relu;
} lithe__pool2d;

typedef struct lithe_backend_ops lithe_backend_ops;

/* Every primitive takes the backend first: (lithe_backend *be, <params of primitives.def>). */
#define LITHE__PARAMS(...) (lithe_backend * be, __VA_ARGS__)

struct lithe_backend_ops {
    /* memory */
    lithe_status (*alloc)(lithe_backend *be, size_t nbytes, void **out);
    void (*free)(lithe_backend *be, void *ptr);
    lithe_status (*upload)(lithe_backend *be, void *dst, size_t dst_offset, const void *src,
                           size_t nbytes);
    lithe_status (*download)(lithe_backend *be, void *dst, const void *src, size_t src_offset,
                             size_t nbytes);
    lithe_status (*sync)(lithe_backend *be);
    /* compute: one field per line of primitives.def */
#define LITHE_PRIM(name, params, args) lithe_status(*name) LITHE__PARAMS params;
#include "primitives.def"
#undef LITHE_PRIM
    /* conv2d_backward and pool2d_backward honor assign_dx / assign: the graph hands a fresh (unzeroed)
     * gradient to its first writer; else (false) it zeroes it and they add */
    bool grad_assign;
    /* pool2d honors relu, and pool2d_backward routes nothing for a negative index: the graph then skips
     * the Relu backward of a fused Conv + Relu whose output a max pool alone reads (ops/window.c) */
    bool relu_pool;
    /* Optional (NULL: the backend prepares nothing, lithe_model_prepare_inference is a no-op on it):
     * weights prepared for inference (core/prepare.c).
     *   prepare_b: a private form of op(B) (B 2-D f32, unit column stride, transB as in gemm),
     *     *out NULL when it has none for this B; *bytes what it holds.
     *   prepared_free: releases one.
     *   gemm_prepared: C = act(alpha op(A) · op(B) + beta C + b) with op(B) read from P, a form
     *     prepare_b made from this B; b, a, Z as in gemm_bias_act (NULL: none). Bits equal to
     *     gemm's (b, a, Z NULL) or gemm_bias_act's (alpha 1, beta 0). */
    lithe_status (*prepare_b)(lithe_backend *be, bool transB, const lithe_tensor *B, void **out, size_t *bytes);
    void (*prepared_free)(lithe_backend *be, void *p);
    lithe_status (*gemm_prepared)(lithe_backend *be, bool transA, bool transB, float alpha, const lithe_tensor *A,
                                  const lithe_tensor *B, const void *P, float beta, lithe_tensor *C,
                                  const lithe_tensor *b, const struct lithe__act *a, lithe_tensor *Z);
    /* Optional (NULL: the graph calls gemm once a product): P products of gemm's (float32 operands),
     * each gemm's bits, C[p] = alpha op(A[p]) · op(B[p]) + (p == 0 ? beta0 : beta) C[p], where A[p] is the 2-D
     * view A (gemm's operand, product 0) moved on by p·sa elements in its storage (likewise B, C; sa
     * or sb 0: shared). sc 0 sums the products into one C in p order; else their Cs do not overlap.
     * The graph's batched products (core/graph/ops/matmul.c: attention's per-head ones). */
    lithe_status (*gemm_batched)(lithe_backend *be, bool transA, bool transB, int64_t P, float alpha,
                                 const lithe_tensor *A, int64_t sa, const lithe_tensor *B, int64_t sb, float beta0,
                                 float beta, lithe_tensor *C, int64_t sc);
    /* Optional: conv2d (primitives.def) with W's prepared form P (prepare_b of W's (M, K) view,
     * transB; core/prepare.c, lithe__prepare_conv_w). Bits equal to conv2d's. */
    lithe_status (*conv2d_prepared)(lithe_backend *be, const lithe__conv2d *g, const lithe_tensor *X,
                                    const lithe_tensor *W, const void *P, const lithe_tensor *b,
                                    const struct lithe__act *a, lithe_tensor *Y);    /* Optional (NULL: none): a backend's prepared form of a whole op (struct lithe__prep_op: a
     * fully-connected layer or a Conv with its weight W and bias), for backends that bake weights
     * into their own operators (LITHE_XNNPACK: backends/cpu/xnnpack.c).
     *   prepare_op: *out NULL when the backend's rule keeps lithe's kernels for this op.
     *   prepared_op_free: releases one.
     *   run_prepared_op: Y = op(X) through P (a form prepare_op made for this op, W and bias);
     *     *done false (nothing written) when the rule keeps lithe's kernels for this X. */
    lithe_status (*prepare_op)(lithe_backend *be, const struct lithe__prep_op *op, const lithe_tensor *W,
                               const lithe_tensor *bias, void **out, size_t *bytes);
    void (*prepared_op_free)(lithe_backend *be, void *p);
    lithe_status (*run_prepared_op)(lithe_backend *be, const void *P, const struct lithe__prep_op *op,
                                    const lithe_tensor *X, lithe_tensor *Y, bool *done);
    /* Optional (NULL: the graph runs conv2d, then bcast_binary's add): a graph's Conv (no
     * activation) and the residual Add after it in one pass (core/graph/fuse.c): Y = R + conv2d(X,
     * W, b) when res_first, else conv2d(X, W, b) + R; R contiguous, shaped as Y. P: W's prepared
     * form (as conv2d_prepared) or NULL. Bits equal to conv2d, then bcast_binary(LITHE__BIN_ADD)
     * with the operands in that order. */
    lithe_status (*conv2d_add)(lithe_backend *be, const lithe__conv2d *g, const lithe_tensor *X, const lithe_tensor *W,
                               const void *P, const lithe_tensor *b, const lithe_tensor *R, bool res_first,
                               lithe_tensor *Y);
    /* Optional (NULL, or *done false: the graph's float path): the int8 convolution of a fused:QConv
     * (issue 24; core/graph/ops/qfused.c). X (N, C, H, W) float32, quantized here as its
     * QuantizeLinear computes it (x = clamp(rint(X / xs) + xz, xmin, xmax), NaN to xmin), W (M,
     * C/group, KH, KW) int8 with per-channel (or one) scales and zero points, b (M,) float32 or
     * NULL, a the activation or NULL, Y (N, M, OH, OW) float32: Y = act(xs·sw[m]·Σ (x - xz)(w -
     * zw[m]) + b[m]) with exact int32 sums. The CPU: group 1 and depthwise (backends/cpu/conv/qconv.h).
     * There X may also be the codes themselves (int8 where xmin = -128, uint8 where xmin = 0, with
     * xs, xz as their quantization parameters), and Y an int8 / uint8 tensor with one scale and zero
     * point: Y's values quantized as QuantizeLinear (a fused:QConv feeding another, fuse_qdq.c). */
    lithe_status (*conv_q8)(lithe_backend *be, const lithe__conv2d *g, const lithe_tensor *X, float xs, int32_t xz,
                            int32_t xmin, int32_t xmax, const lithe_tensor *W, const lithe_tensor *b,
                            const struct lithe__act *a, lithe_tensor *Y, bool *done);
    /* Optional (NULL, or *done false: the graph quantizes X to codes and runs gemm_q8): a
     * fused:QLinear's product (issue 24; core/graph/ops/qfused.c) with X (M, K) float32 quantized
     * here as its QuantizeLinear computes it (codes clamp(rint(X / xs) + xz, xmin, xmax), NaN to
     * xmin; int8 codes when xmin < 0, else uint8), W, b, a and Y as gemm_q8's: the bits of gemm_q8
     * on those codes, without the codes' tensor. The CPU (backends/cpu/gemm/qgemm.h). */
    lithe_status (*gemm_q8x)(lithe_backend *be, const lithe_tensor *X, float xs, int32_t xz, int32_t xmin, int32_t xmax,
                             const lithe_tensor *W, const lithe_tensor *b, const struct lithe__act *a, lithe_tensor *Y,
                             bool *done);
    /* Optional (NULL: the loss reads its checks and figures back one by one): the figures of Thinc's
     * CategoricalCrossentropy over int labels in one pass on the device, so that a training step
     * reads its loss back once (core/train/loss_device.c; WebGPU). G (B, C) the guesses, labels (B,)
     * int32/int64 already checked on the host, D cce_labels' gradient (smoothing, has_missing and
     * missing as there); out (4,) float32 = {1 if a guess is outside [0, 1] or NaN else 0, the sum of
     * D's squares, the sum over the counted rows of -sum_c target_c log(max(G, 1e-30)), the number
     * of counted rows (those whose label is not the missing value)}. */
    lithe_status (*cce_stats)(lithe_backend *be, const lithe_tensor *G, const lithe_tensor *labels,
                              const lithe_tensor *D, float smoothing, bool has_missing, int64_t missing,
                              lithe_tensor *out);
};

/* A prepared op (core/prepare.c, lithe__prepare_op): what the backend's form computes.
 *   LITHE__PREP_FC: Y (M, N) = clamp(X (M, K) · Wᵀ + bias, out_min, out_max), W (N, K), bias (N,)
 *     or NULL; a dense layer (Linear: no clamp, Relu: [0, inf)) or an ONNX Gemm.
 *   LITHE__PREP_CONV2D: ONNX Conv, Y (N, M, OH, OW) = conv(X (N, C, H, W), W (M, C/group, KH, KW))
 *     + bias (M,) or NULL, with conv's C, M, KH, KW, group, stride, pad, dil (N, H, W, OH, OW are
 *     the run's, not part of the key). */
enum { LITHE__PREP_GEMM_B = 0, LITHE__PREP_FC, LITHE__PREP_CONV2D };
typedef struct lithe__prep_op {
    int kind;
    float out_min, out_max;
    lithe__conv2d conv;
} lithe__prep_op;
/* Makes (or keeps, when valid) W's prepared form of op for be (bias: the op's, or NULL). LITHE_OK
 * also when be makes none (no prepare_op, or its rule keeps lithe's kernels). */
lithe_status lithe__prepare_op(lithe_backend *be, const lithe__prep_op *op, lithe_tensor *W, lithe_tensor *bias);
/* Y = op(X) through W's valid prepared form of op with this bias when is_train is false: *done
 * true when it ran (Y written), false when there is none or the backend's rule declines X. */
lithe_status lithe__run_prepared_op(lithe_backend *be, bool is_train, const lithe__prep_op *op, const lithe_tensor *W,
                                    const lithe_tensor *bias, const lithe_tensor *X, lithe_tensor *Y, bool *done);
/* Whether W has a valid prepared form of op with this bias for be (one lithe__run_prepared_op may
 * run): a fused node whose own path has no such form to offer (Conv + Add) keeps it otherwise. */
bool lithe__has_prepared_op(const lithe_backend *be, const lithe__prep_op *op, const lithe_tensor *W,
                            const lithe_tensor *bias);
/* A convolution's weight W (M, C/group, KH, KW) prepared as the GEMM operand Wᵀ: its (M, K) view
 * (K = C/group·KH·KW) through lithe__prepare_b with transB, when group is 1 and be has
 * conv2d_prepared. LITHE_OK also when nothing is made. */
lithe_status lithe__prepare_conv_w(lithe_tensor *W, int64_t group, lithe_backend *be);
/* conv2d (primitives.def) through W's prepared form when is_train is false and one is valid (the
 * same bits); otherwise the primitive itself. */
lithe_status lithe__conv2d_w(lithe_backend *be, bool is_train, const lithe__conv2d *g, const lithe_tensor *X,
                             const lithe_tensor *W, const lithe_tensor *b, const struct lithe__act *a, lithe_tensor *Y);
/* be's conv2d_add (which it must have), through W's prepared form as lithe__conv2d_w finds it. */
lithe_status lithe__conv2d_add_w(lithe_backend *be, bool is_train, const lithe__conv2d *g, const lithe_tensor *X,
                                 const lithe_tensor *W, const lithe_tensor *b, const lithe_tensor *R, bool res_first,
                                 lithe_tensor *Y);

/* A backend's description, the same for all its instances: what core/backend.c looks it up by
 * and calls outside the primitive table. Each backend defines one, `const lithe_backend_desc
 * lithe__backend_<name>_desc`, and registers it with one line in backends/backends.cmake (which writes
 * the build's lithe_backends.def); core includes nothing of backends/. docs/backends.md. */
#define LITHE_BACKEND_API_VERSION 1
typedef struct lithe_backend_desc {
    uint32_t api_version; /* LITHE_BACKEND_API_VERSION: the registry refuses another */
    const char *name;     /* "cpu": lithe_backend_get answers it for "<name>" and "<name>:<selector>" */
    /* DLPack device type of its memory (kDLCPU 1: host memory; kDLCUDA 2, kDLVulkan 7). */
    int dl_device_type;
    /* The instance for `name` as asked ("vulkan", "vulkan:1"; the part after ':' is the
     * backend's to read), or the default instance for NULL. Instances live as long as the process. */
    lithe_status (*get)(const char *name, lithe_backend **out);
    /* Optional (NULL: none): the instance of DLPack device id `index`, when the backend's memory
     * pointers are DLPack data pointers of dl_device_type (lithe_tensor_from_dlpack and
     * lithe_tensor_to_dlpack share its memory without a copy; backends without it are exported
     * through a host copy). */
    lithe_status (*get_device)(int index, lithe_backend **out);
    /* Optional (NULL: lithe_backend_set_threads refuses, lithe_backend_threads answers 1). */
    lithe_status (*set_threads)(lithe_backend *be, int n);
    int (*threads)(const lithe_backend *be);
    /* Optional (NULL: lithe_backend_stream refuses): the native stream work is queued on (a
     * cudaStream_t). Waiting for the queue is the table's sync (lithe_backend_sync). */
    void *(*stream)(const lithe_backend *be);
    /* Optional: gives back blocks the backend caches from the allocator hook (core/error.c calls
     * every backend's before lithe_set_allocator switches allocators). */
    void (*cache_flush)(void);
    /* Optional: bytes held in use and cached, and the device allocations made so far. */
    void (*memory_stats)(const lithe_backend *be, size_t *in_use, size_t *cached, size_t *n_allocs);
    /* Optional: the high-water mark of the bytes in use (reset: restarts it from the bytes in use
     * now). lithe_backend_memory, and the training plan's dry run (core/train/memory.c). */
    size_t (*memory_peak)(const lithe_backend *be, bool reset);
    /* Optional: while on (this thread), allocations take no block kept for reuse (long-lived
     * tensors: gradient buffers, optimizer state; core/train/memory.c). */
    void (*persistent_allocs)(bool on);
    /* Optional: the device's name ("NVIDIA H200", "llvmpipe (LLVM 15.0.6, 256 bits)"). */
    const char *(*device_name)(const lithe_backend *be);
} lithe_backend_desc;

struct lithe_backend {
    const char *name; /* the instance's: "cpu", "vulkan", "cuda:1" */
    bool host_memory; /* tensors' data pointers are host pointers */
    const lithe_backend_ops *ops;
    void *ctx;
    /* DLPack device of its memory (its desc's dl_device_type) and the device id
     * (lithe_tensor_dlpack_device) */
    int dl_device_type, dl_device_id;
    const lithe_backend_desc *desc;
};

/* Checked dispatchers: lithe__op_gemm(be, transA, ...). */
#define LITHE_PRIM(name, params, args) lithe_status lithe__op_##name LITHE__PARAMS params;
#include "primitives.def"
#undef LITHE_PRIM

extern const char *const lithe__prim_names[];
extern const size_t lithe__prim_count;

/* The registry (core/backend.c). The host backend: the registry's first backend ("cpu"), where
 * core keeps host data (lengths, ids, bytes) and tensors made without a backend. */
lithe_backend *lithe__backend_host(void);
/* The registered backend named `name` (no selector), or NULL. */
const lithe_backend_desc *lithe__backend_desc(const char *name);
/* The instance of a DLPack device (type, id) from the backend whose get_device shares it;
 * LITHE_ERR_NOT_FOUND when none does. */
lithe_status lithe__backend_for_dl_device(int device_type, int device_id, lithe_backend **out);
/* Every backend's cache_flush (lithe_set_allocator). */
void lithe__backends_cache_flush(void);

/* A backend's table from primitives.def (backends/<name>/, docs/backends.md). Every primitive is
 * `<prefix><name>` (vk_gemm, cu_gemm), except those the backend lists as unsupported: each such
 * primitive has a line `#define LITHE_LACKS_<prefix><name> LITHE__LACKS` in the backend's list,
 * and its table entry is NULL (the dispatcher answers LITHE_ERR_UNSUPPORTED, "backend 'x' lacks
 * primitive 'y'"). A primitive neither implemented nor listed is a build error: an undeclared
 * identifier in the table (LITHE__PRIM_INIT, C designated initializers), or an undefined symbol
 * at link (LITHE__PRIM_DECL's declarations, LITHE__PRIM_ASSIGN's table); a primitive listed and
 * written anyway is an error too (a static function nothing uses under LITHE__PRIM_INIT; under
 * LITHE__PRIM_DECL its name is a typedef). */
#define LITHE__LACKS ~, 1
#define LITHE__SECOND_(a, b, ...) b
#define LITHE__SECOND(...) LITHE__SECOND_(__VA_ARGS__)
#define LITHE__IS_LACKING(x) LITHE__SECOND(x, 0, ~)
#define LITHE__IF_0(yes, no) no
#define LITHE__IF_1(yes, no) yes
#define LITHE__IF__(c) LITHE__IF_##c
#define LITHE__IF_(c) LITHE__IF__(c)
/* `yes` when prefix##name is listed as unsupported, else `no`. */
#define LITHE__IF_LACKS(prefix, name, yes, no) LITHE__IF_(LITHE__IS_LACKING(LITHE_LACKS_##prefix##name))(yes, no)
/* Inside `#define LITHE_PRIM(name, params, args)`: */
#define LITHE__PRIM_INIT(prefix, name) .name = LITHE__IF_LACKS(prefix, name, NULL, prefix##name),
#define LITHE__PRIM_ASSIGN(table, prefix, name) (table).name = LITHE__IF_LACKS(prefix, name, NULL, prefix##name);
/* (a listed primitive's name is taken by a typedef, so a function of that name is an error) */
#define LITHE__PRIM_DECL(prefix, name, params)                                                     \
    LITHE__IF_LACKS(prefix, name, typedef struct lithe__listed_unsupported prefix##name;,                \
                    lithe_status prefix##name LITHE__PARAMS params;)
/* Whether the backend's table has primitive number i (primitives.def order). */
bool lithe__backend_has_prim(const lithe_backend *be, size_t i);

#endif /* LITHE_CORE_BACKEND_H */
