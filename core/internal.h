/* Internal declarations shared across lithe's source files (prefix lithe__). Not installed. */
#ifndef LITHE_INTERNAL_H
#define LITHE_INTERNAL_H

#include "lithe.h"

#include <stdarg.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------
 * Errors: every failure path goes through lithe__fail, which records the message for
 * lithe_last_error() and returns the status, so `return lithe__fail(...)` reads naturally.
 * ---------------------------------------------------------------------------------------- */
#if defined(__GNUC__)
#define LITHE__PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define LITHE__PRINTF(a, b)
#endif

lithe_status lithe__fail(lithe_status status, const char *fmt, ...) LITHE__PRINTF(2, 3);
lithe_status lithe__oom(const char *what, size_t bytes);

#define LITHE__TRY(expr)                                                                          \
    do {                                                                                          \
        lithe_status lithe__st_ = (expr);                                                         \
        if (lithe__st_ != LITHE_OK) return lithe__st_;                                            \
    } while (0)

#define LITHE__CHECK_ARG(cond, fn, what)                                                          \
    do {                                                                                          \
        if (!(cond)) return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: %s", fn, what);               \
    } while (0)

/* ------------------------------------------------------------------------------------------
 * Allocation: everything on the host goes through the hook.
 * ---------------------------------------------------------------------------------------- */
void *lithe__malloc(size_t size);
void *lithe__calloc(size_t n, size_t size);
void *lithe__realloc(void *p, size_t size);
void lithe__free(void *p);
char *lithe__strdup(const char *s);
/* 64-byte aligned blocks (SIMD and cache lines); free with lithe__aligned_free. */
void *lithe__aligned_alloc(size_t size);
void lithe__aligned_free(void *p);
/* Whether lithe's own allocator is installed (no lithe_set_allocator): the CPU backend caches
 * freed blocks only then (backends/cpu/cache.c), and gives them all back before a switch. */
bool lithe__default_allocator(void);
void lithe__cpu_cache_flush(void);
/* a * b without overflow; false on overflow. */
bool lithe__mul_size(size_t a, size_t b, size_t *out);

/* A name -> index table (core/names.c), for lookups by name that would otherwise scan a list
 * inside a loop over it (a graph's slots, a node's params: thousands in an imported model). It
 * holds the key pointers it is given (they must outlive it); a zeroed struct is an empty table.
 * put replaces the value of a key already there (LITHE_ERR_OOM: the table as it was). */
typedef struct lithe__names_entry {
    const char *key; /* NULL: empty */
    size_t val;
} lithe__names_entry;
typedef struct lithe__names {
    size_t cap, n; /* cap: a power of two (0: none yet), at least 2 n */
    lithe__names_entry *e;
} lithe__names;
lithe_status lithe__names_put(lithe__names *t, const char *key, size_t val);
bool lithe__names_get(const lithe__names *t, const char *key, size_t *val);
void lithe__names_free(lithe__names *t);

/* ------------------------------------------------------------------------------------------
 * Tensors.
 * ---------------------------------------------------------------------------------------- */
typedef struct lithe__prepared lithe__prepared;
struct lithe__act;
typedef struct lithe__storage {
    int refcount;
    /* Counts the writes lithe performs itself (lithe__storage_touch); backends' prepared forms
     * of views of this storage (weights prepared for inference, core/prepare.c) are dropped when
     * it moves on, and a prepared op whose bias lives here records it (bias_version). */
    uint64_t version;
    lithe__prepared *prepared;
    void *data; /* backend pointer (host pointer for "cpu") */
    size_t nbytes;
    lithe_backend *backend;
    /* borrowed from DLPack: run the producer's deleter when the last view goes */
    void *dl_managed;
    bool dl_versioned;
    /* external host memory (a memory-mapped file): release(ctx) when the last view goes */
    void (*release)(void *ctx);
    void *release_ctx;
} lithe__storage;

/* A CPU tensor over external host memory (contiguous), calling release(ctx) when the last view
 * goes; on failure release is not called. */
lithe_status lithe__tensor_wrap_host(lithe_dtype dtype, int ndim, const int64_t *shape, void *data,
                                     void (*release)(void *ctx), void *ctx, lithe_tensor **out);

struct lithe_tensor {
    int refcount;
    lithe__storage *storage;
    lithe_dtype dtype;
    int ndim;
    int64_t shape[LITHE_MAX_DIMS];
    int64_t strides[LITHE_MAX_DIMS]; /* elements */
    int64_t offset;                  /* elements from storage->data */
    int64_t numel;
};

/* Weights prepared for inference (core/prepare.c, lithe_model_prepare_inference): a backend's
 * form of one view of a storage used as GEMM operand op(B) (the CPU: its packed panels). Found by
 * the view (offset, 2-D shape and strides), transB and backend. Every form on a storage's list is
 * of its current version: the one write that moves the version on (lithe__storage_touch) drops
 * the list. */
struct lithe__prepared {
    lithe__prepared *next;
    lithe_backend *backend;
    bool transB;
    int64_t offset, shape[2], strides[2];
    void *data;   /* the backend's (its prepared_free releases it) */
    size_t bytes; /* what it holds */
    /* A prepared op (kind != LITHE__PREP_GEMM_B; lithe__prepare_op): the op's key, and the bias it
     * baked in (retained unless it lives in this storage; valid while its version holds). */
    int kind;
    struct lithe__prep_op *op;
    lithe_tensor *bias; /* a reference, when not in this storage */
    const lithe__storage *bias_storage;
    int64_t bias_offset, bias_numel;
    uint64_t bias_version;
};
/* A write by lithe itself: bumps the version and drops the prepared forms (every dispatcher does
 * it for the tensors a primitive may write; lithe_tensor_write too). */
void lithe__storage_drop_prepared(lithe__storage *st);
static inline void lithe__storage_touch(lithe__storage *st) {
    st->version++;
    if (st->prepared) lithe__storage_drop_prepared(st);
}
/* B's prepared form as op(B) (transB) for be, when one is valid; else NULL. */
const void *lithe__prepared_find(const lithe_tensor *B, bool transB, const lithe_backend *be);
/* Makes (or keeps, when valid) B's prepared form for be. LITHE_OK also when be has none to make. */
lithe_status lithe__prepare_b(lithe_tensor *B, bool transB, lithe_backend *be);
/* gemm / gemm_bias_act (primitives.def) through B's prepared form when is_train is false and one
 * is valid (the same bits); otherwise the primitive itself. */
lithe_status lithe__gemm_w(lithe_backend *be, bool is_train, bool transA, bool transB, float alpha,
                           const lithe_tensor *A, const lithe_tensor *B, float beta, lithe_tensor *C);
lithe_status lithe__gemm_bias_act_w(lithe_backend *be, bool is_train, bool transA, bool transB, const lithe_tensor *A,
                                    const lithe_tensor *B, const lithe_tensor *b, const struct lithe__act *a,
                                    lithe_tensor *Z, lithe_tensor *Y);

/* Pointer to the first element, valid for host-memory backends. */
static inline void *lithe__tdata(const lithe_tensor *t) {
    return (char *)t->storage->data + (size_t)t->offset * lithe_dtype_size(t->dtype);
}
static inline float *lithe__f32(const lithe_tensor *t) { return (float *)lithe__tdata(t); }

/* New contiguous tensor on be, uninitialised (zeroed when zero is true). */
lithe_status lithe__tensor_alloc(lithe_backend *be, lithe_dtype dtype, int ndim,
                                 const int64_t *shape, bool zero, lithe_tensor **out);
/* New tensor with the same dtype, shape and backend as t. */
lithe_status lithe__tensor_like(const lithe_tensor *t, bool zero, lithe_tensor **out);
bool lithe__same_shape(const lithe_tensor *a, const lithe_tensor *b);

/* A buffer pool (core/tensor.c): tensors whose memory goes back to the pool when their last
 * view goes, so repeated work of the same shapes (an imported graph's forward and backward, run
 * again for the same input shape) takes the same blocks again instead of fresh memory — on these
 * machines the first touch of a new page costs ~10 us. A block is reused only for the same
 * backend and byte size (or a request down to a quarter of its size when it came back in the
 * current epoch, below), and only once nothing refers to it: a tensor kept by a backprop record
 * or by the caller keeps its block. The pool lives until it is closed and its last block has
 * come back. Not thread-safe (one pool per model, like the model). */
typedef struct lithe__bufpool lithe__bufpool;
typedef struct lithe__bufpool_stats {
    size_t fresh;  /* blocks allocated from the backend, ever */
    size_t reused; /* requests served by an idle block */
    size_t blocks, bytes; /* blocks held now (idle or in use) and their bytes */
    size_t in_use;
} lithe__bufpool_stats;
lithe_status lithe__bufpool_new(lithe__bufpool **out);
/* The owner is done: idle blocks are freed now, blocks in use when they come back. NULL: no-op. */
void lithe__bufpool_close(lithe__bufpool *p);
/* As lithe__tensor_alloc (be NULL: cpu), from the pool; p NULL: lithe__tensor_alloc itself. */
lithe_status lithe__bufpool_tensor(lithe__bufpool *p, lithe_backend *be, lithe_dtype dtype, int ndim,
                                   const int64_t *shape, bool zero, lithe_tensor **out);
lithe__bufpool_stats lithe__bufpool_get_stats(const lithe__bufpool *p);
/* A run begins (an imported graph's forward): blocks that come back from now on may serve
 * requests down to a quarter of their size (warm in cache); earlier ones only their own size.
 * NULL: no-op. */
void lithe__bufpool_epoch(lithe__bufpool *p);
/* "(64, 784)" into buf. */
const char *lithe__shape_str(const lithe_tensor *t, char *buf, size_t cap);
#define LITHE__SHAPE_BUF 96

/* ------------------------------------------------------------------------------------------
 * Values.
 * ---------------------------------------------------------------------------------------- */
struct lithe_value {
    int refcount;
    lithe_value_kind kind;
    lithe_tensor *t[4]; /* TENSOR: t[0]; RAGGED: data, lengths; PADDED: data, size_at_t,
                           lengths, indices */
    size_t n;
    lithe_value **items;
};

/* The float32 2-D tensor of a TENSOR value, or a clear error naming the layer. */
lithe_status lithe__value_f32_2d(const lithe_value *v, const char *layer, lithe_tensor **out);
/* Wraps t (taking over the caller's reference, also on failure) into a new value. */
lithe_status lithe__value_wrap(lithe_tensor *t, lithe_value **out);

/* Sequence containers (core/sequence.c), converted as Thinc's NumpyOps does. `who` names the
 * layer in errors; lengths, size_at_t and indices are host int32. */
/* A new host int32 vector of n entries (values NULL: zeros). */
lithe_status lithe__host_i32(int64_t n, const int32_t *values, lithe_tensor **out);
/* A LIST of n TENSOR values, taking over the tensors (also on failure). */
lithe_status lithe__list_of_tensors(size_t n, lithe_tensor **ts, lithe_value **out);
/* The row count of each array of a LIST. */
lithe_status lithe__seq_lengths(const char *who, const lithe_value *list, lithe_tensor **lengths);
/* ops.flatten(Xs, pad): the arrays stacked by rows, `pad` zero rows before each non-empty one
 * and after the last; an empty list gives a (0, 0) float32 array. */
lithe_status lithe__seq_flatten(lithe_backend *be, const char *who, const lithe_value *list, int64_t pad,
                                lithe_tensor **out);
/* ops.unflatten(X, lengths, pad): views of X's rows (no copy); the row count must match. */
lithe_status lithe__seq_unflatten(const char *who, lithe_tensor *X, const lithe_tensor *lengths, int64_t pad,
                                  lithe_value **out);
/* ops.list2padded / ops.padded2list (2-d sequences; Padded data (T, B, nO)). */
lithe_status lithe__seq_list2padded(lithe_backend *be, const char *who, const lithe_value *list, lithe_value **out);
lithe_status lithe__seq_padded2list(lithe_backend *be, const char *who, const lithe_value *padded, lithe_value **out);
/* To the container a with_* layer's child takes (the value itself when it already is one)... */
lithe_status lithe__seq_to_list(lithe_backend *be, const char *who, const lithe_value *v, lithe_value **out);
lithe_status lithe__seq_to_ragged(lithe_backend *be, const char *who, const lithe_value *v, lithe_value **out);
lithe_status lithe__seq_to_padded(lithe_backend *be, const char *who, const lithe_value *v, lithe_value **out);
/* ...and back to the kind of `outer`, the value the conversion started from. */
lithe_status lithe__seq_from_list(lithe_backend *be, const char *who, const lithe_value *Ys, const lithe_value *outer,
                                  lithe_value **out);
lithe_status lithe__seq_from_ragged(lithe_backend *be, const char *who, const lithe_value *Yr, const lithe_value *outer,
                                    lithe_value **out);
lithe_status lithe__seq_from_padded(lithe_backend *be, const char *who, const lithe_value *Yp, const lithe_value *outer,
                                    lithe_value **out);

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
                               LITHE__UN_ABS, LITHE__UN_RECIPROCAL, LITHE__UN_COUNT } lithe__unary_op;
/* 2-D convolution geometry, ONNX's Conv: X (N, C, H, W), W (M, C / group, KH, KW) -> Y (N, M, OH, OW),
 * OH = (H + pad[0] + pad[2] - dil[0] (KH - 1) - 1) / stride[0] + 1 (likewise OW with [1], [3]);
 * pad: top, left, bottom, right. */
typedef struct lithe__conv2d {
    int64_t N, C, H, W, M, KH, KW, OH, OW, group;
    int64_t stride[2], pad[4], dil[2];
} lithe__conv2d;
/* 2-D pooling geometry: X (N, C, H, W) -> Y (N, C, OH, OW), windows as in lithe__conv2d (OH, OW
 * given by the caller, ceil_mode already applied). max: MaxPool (padding never wins); else
 * AveragePool, dividing by the window's in-bounds count, or by KH * KW when count_include_pad. */
typedef struct lithe__pool2d {
    int64_t N, C, H, W, KH, KW, OH, OW;
    int64_t stride[2], pad[4], dil[2];
    bool max, count_include_pad;
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

struct lithe_backend {
    const char *name;
    bool host_memory; /* tensors' data pointers are host pointers */
    const lithe_backend_ops *ops;
    void *ctx;
    /* DLPack device of non-host memory (kDLCUDA = 2 for "cuda", kDLVulkan = 7 for "vulkan") and
     * its id (lithe_tensor_dlpack_device); only kDLCUDA memory is exported zero-copy */
    int dl_device_type, dl_device_id;
};

/* Checked dispatchers: lithe__op_gemm(be, transA, ...). */
#define LITHE_PRIM(name, params, args) lithe_status lithe__op_##name LITHE__PARAMS params;
#include "primitives.def"
#undef LITHE_PRIM

extern const char *const lithe__prim_names[];
extern const size_t lithe__prim_count;

lithe_backend *lithe__backend_cpu(void);
#ifdef LITHE_HAVE_CUDA
/* backends/cuda/cuda_backend.c: "cuda" / "cuda:<index>", the backend of a device index (DLPack
 * import), and what the module knows of an instance. */
lithe_status lithe__backend_cuda(const char *name, lithe_backend **out);
lithe_status lithe__backend_cuda_device(int index, lithe_backend **out);
void *lithe__cuda_stream(const lithe_backend *be);
const char *lithe__cuda_device_name(const lithe_backend *be);
const char *lithe__cuda_module_kind(void);
void lithe__cuda_memory_stats(const lithe_backend *be, size_t *in_use, size_t *cached, size_t *n_allocs);
#endif
/* Whether the backend's table has primitive number i (primitives.def order). */
bool lithe__backend_has_prim(const lithe_backend *be, size_t i);

/* ------------------------------------------------------------------------------------------
 * RNG.
 * ---------------------------------------------------------------------------------------- */
uint64_t lithe__splitmix64(uint64_t *state);

/* ------------------------------------------------------------------------------------------
 * Models.
 * ---------------------------------------------------------------------------------------- */

/* The backprop record: a layer allocates a struct that starts with this header. `run`
 * computes dX from dY (dX NULL: the caller does not want it, but grads still accumulate). */
struct lithe_backprop {
    lithe_status (*run)(lithe_backprop *self, const lithe_value *dY, lithe_value **dX);
    void (*destroy)(lithe_backprop *self); /* frees what the record owns, not self */
    lithe_model *model;                    /* retained */
};

typedef struct lithe__layer_type {
    const char *registered_name; /* "Relu.v1" */
    lithe_status (*init)(lithe_model *m, const lithe_value *X, const lithe_value *Y);
    lithe_status (*forward)(lithe_model *m, const lithe_value *X, bool is_train,
                            lithe_value **Y, lithe_backprop **bp);
    const void *info; /* per-type constants for a family sharing init/forward (dense.c) */
    /* How many children a node of this type has: the .lithe loader refuses a node tree that
     * disagrees, since forward passes reach for them. Leaves: 0, 0. */
    size_t min_layers, max_layers;
} lithe__layer_type;

/* Allocates a record of `size` bytes (>= sizeof(lithe_backprop)), zeroed, retaining m. */
lithe_status lithe__backprop_new(lithe_model *m, size_t size,
                                 lithe_status (*run)(lithe_backprop *, const lithe_value *,
                                                     lithe_value **),
                                 void (*destroy)(lithe_backprop *), lithe_backprop **out);
/* The identity record (Dropout at predict, Dropout rate 0). */
lithe_status lithe__backprop_identity(lithe_model *m, lithe_backprop **out);

typedef struct lithe__dim {
    char *name;
    int64_t value; /* 0: unset */
} lithe__dim;

typedef struct lithe__param {
    char *name;
    lithe_tensor *value; /* NULL: registered but unset */
    lithe_tensor *grad;  /* NULL: no grad yet */
    bool frozen;         /* finish_update skips it (and drops its grad) */
} lithe__param;

typedef struct lithe__ref {
    char *name;
    lithe_model *node; /* not owned; NULL: unset */
} lithe__ref;

typedef struct lithe__attr {
    char *name;
    lithe_attr_type type;
    union {
        int64_t i;
        double f;
        bool b;
        char *s;
        lithe_tensor *t;
    } v;
} lithe__attr;

struct lithe_model {
    int refcount; /* atomic (__atomic builtins): a reference may be dropped on any thread */
    /* Concurrent-use detection (core/guard.c): the token of the thread inside a call on this node
     * (0: none), and how deeply that thread is nested in calls on it (only that thread touches it). */
    uintptr_t owner;
    int owner_depth;
    uint64_t id;
    char *name;
    const lithe__layer_type *type;
    lithe_backend *backend;
    lithe_rng rng;
    size_t n_dims, n_params, n_refs, n_attrs, n_layers;
    lithe__dim *dims;
    lithe__param *params;
    lithe__names param_index; /* name -> params[] index, kept once there are many (core/model.c) */
    lithe__ref *refs;
    lithe__attr *attrs;
    lithe_model **layers; /* owned references */
    size_t n_shims;
    lithe_shim **shims; /* owned; empty for every layer so far */
    /* construction choices that Thinc binds into the layer's init, not attrs (never saved) */
    lithe_init init_W, init_b;
    double cfg[2]; /* layer-private constants (resizable: the fill of new W and b rows) */
    lithe_debug_hooks *debug; /* lithe_with_debug's callbacks (owned; never saved or copied) */
};

/* A shim: a foreign graph a node holds (an imported ONNX / TF.js graph, core/graph/, arriving
 * with the graph-import work). finish_update runs every shim's update before the params', as
 * Thinc's Model.finish_update does; free releases its state. */
typedef struct lithe__shim_type {
    const char *name;
    lithe_status (*finish_update)(lithe_shim *shim, lithe_optimizer *opt);
    void (*free)(lithe_shim *shim);
} lithe__shim_type;

struct lithe_shim {
    const lithe__shim_type *type;
    void *state;
};

/* A new node. dim_names / param_names are NULL-terminated lists (may be NULL). */
lithe_status lithe__model_new(const lithe__layer_type *type, const char *name,
                              const char *const *dim_names, const char *const *param_names,
                              lithe_model **out);
/* A new node (new id) of src's type, name, dims, attrs and private settings, with copies of its
 * params; no grads, children, refs or shims. */
lithe_status lithe__node_clone(const lithe_model *src, lithe_model **out);
/* One thread at a time per node (core/guard.c, include/lithe.h "Thread safety"): enter claims m for
 * this thread (nested claims by the same thread count up), or fails with LITHE_ERR_STATE "model used
 * from two threads at once" naming fn, when another thread is inside a call on m; leave drops one
 * claim. enter_tree / leave_tree do the same for every node of m's tree (layers, recursively). */
lithe_status lithe__enter(lithe_model *m, const char *fn);
void lithe__leave(lithe_model *m);
lithe_status lithe__enter_tree(lithe_model *m, const char *fn);
void lithe__leave_tree(lithe_model *m);
/* A number unique to the calling thread while it runs (core/error.c). */
uintptr_t lithe__thread_token(void);
/* Atomic reference counts: add one; drop one and say whether it was the last. */
#define LITHE__REF_INC(rc) ((void)__atomic_add_fetch(&(rc), 1, __ATOMIC_RELAXED))
#define LITHE__REF_DEC_LAST(rc) (__atomic_sub_fetch(&(rc), 1, __ATOMIC_ACQ_REL) == 0)
/* Appends a child, taking over the caller's reference. */
lithe_status lithe__model_add_layer(lithe_model *m, lithe_model *child);
lithe__param *lithe__model_find_param(const lithe_model *m, const char *name);
/* Dim value or 0 when unset/unknown. */
int64_t lithe__dim_value(const lithe_model *m, const char *name);
/* Sets a dim, or checks it against the current value: "relu: dim nI is 784, got 783 from X". */
lithe_status lithe__infer_dim(lithe_model *m, const char *name, int64_t value, const char *from);
/* The f32 param tensor (must be allocated), or an error naming the layer. */
lithe_status lithe__param_get(const lithe_model *m, const char *name, lithe_tensor **out);
/* grad += value, allocating a zeroed grad on first use; accumulating with alpha scale. */
lithe_status lithe__grad_acc(lithe_model *m, const char *name, lithe_tensor **grad_out);

/* Thinc's Adam doing the work torch.optim.Adam's defaults do: lithe_adam_defaults() less gradient
 * clipping, parameter averages and L2 (lithe bench --train --adam torch; test_thinc_golden checks
 * it against Thinc's Adam(grad_clip=0, L2=0, use_averages=False)). Thinc's eps placement stays. */
static inline lithe_optimizer_opts lithe__adam_as_torch(void) {
    lithe_optimizer_opts o = lithe_adam_defaults();
    o.grad_clip = 0.0;
    o.use_averages = false;
    o.L2 = 0.0;
    return o;
}

/* Allocates the optimizer's state for (node, name) ahead of a step (finish_update does this for
 * the whole tree first, so an OOM changes no param). */
lithe_status lithe__optimizer_prepare(lithe_optimizer *opt, const lithe_model *node, const char *name,
                                      const lithe_tensor *W);
/* lithe_optimizer_set_check_finite's flag, and its check of one gradient (LITHE_ERR_VALUE). */
bool lithe__optimizer_checks_finite(const lithe_optimizer *opt);
/* A node read from a file against itself (core/io/load_check.c): each param's shape against the
 * dims naming its axes, attrs in their ranges (dropout_rate in [0, 1]); `what` starts messages. */
lithe_status lithe__check_loaded_node(const lithe_model *m, const char *what);
lithe_status lithe__grad_check_finite(const char *who, const lithe_model *node, const char *name, const lithe_tensor *G);

/* Files (core/io/): a whole file into a new buffer (lithe__free), and an atomic write (temp file,
 * fsync, rename). */
lithe_status lithe__read_file(const char *path, uint8_t **out, size_t *len);
lithe_status lithe__write_file_atomic(const char *path, const uint8_t *data, size_t len);

/* A new param tensor `name` of `shape`, filled by `kind` from the node's stream, set on m. */
lithe_status lithe__param_init(lithe_model *m, const char *name, lithe_init kind, int ndim, const int64_t *shape);

/* Shared dense machinery (core/layers/affine.c). */
/* nI / nO from the samples: strict (Thinc's set_dim: a conflicting value is an error) or only
 * where unset (Softmax, Sigmoid); then both must be known. */
lithe_status lithe__affine_dims(lithe_model *m, const lithe_value *X, const lithe_value *Y, bool strict);
/* affine_dims, then W (nO, nI) by init_W and b (nO,) by init_b. */
lithe_status lithe__affine_init(lithe_model *m, const lithe_value *X, const lithe_value *Y,
                                lithe_init init_W, lithe_init init_b, bool strict);
/* Y = X·Wᵀ + b, checking X against nI. */
lithe_status lithe__affine_forward(lithe_model *m, lithe_tensor *X, bool is_train, lithe_tensor **Y);
/* Y = act(X·Wᵀ + b) through the fused gemm_bias_act (a NULL: none); Z non-NULL: also returns the
 * pre-activation X·Wᵀ + b (a new tensor). is_train false: through W's prepared form when valid. */
lithe_status lithe__affine_forward_act(lithe_model *m, lithe_tensor *X, bool is_train, const lithe__act *a, lithe_tensor **Z,
                                       lithe_tensor **Y);
/* Whether activation a is a clamp to [lo, hi] (Relu: [0, inf); a CLIPPED_LINEAR of slope 1 and
 * offset 0: [min_val, max_val], which is ClippedLinear's, HardTanh's, ReluK's and an ONNX Clip's),
 * as a prepared op's out_min / out_max, and lo < hi (XNNPACK refuses min >= max; crossed, equal and
 * NaN bounds run the act kernel after the product); lo, hi may be NULL. */
bool lithe__act_clamp(const lithe__act *a, float *lo, float *hi);
/* The prepared-op key (lithe__prepare_op) of Y = act(X·Wᵀ + b): false when act (NULL: none) has
 * no backend operator form (only none and a clamp, lithe__act_clamp, have one). */
bool lithe__affine_prep_op(const lithe__act *a, lithe__prep_op *op);
/* The same for a dense-family node (its type's activation). */
bool lithe__dense_prep_op(lithe_model *m, lithe__prep_op *op);
/* db += sum(dY), dW += dYᵀ·X, *dX = dY·W (dX NULL: skipped). */
lithe_status lithe__affine_backward(lithe_model *m, lithe_tensor *X, const lithe_tensor *dY,
                                    lithe_tensor **dX);

/* Layer types (core/layers, core/combinators). */
extern const lithe__layer_type lithe__softmax_type;
extern const lithe__layer_type lithe__dropout_type;
extern const lithe__layer_type lithe__chain_type;

/* Checks dense opts for `layer`; norm_dropout: whether Thinc's layer takes those arguments. */
lithe_status lithe__dense_check_opts(const char *layer, const lithe_dense_opts *o, bool norm_dropout);
lithe_status lithe__maxout_new(const lithe_dense_opts *o, lithe_model **out);
const char *lithe__dense_type_name(size_t i);

/* Every layer type, by family (NULL-terminated), and the lookup by registered name. */
extern const lithe__layer_type *const lithe__combine_types[], *const lithe__resizable_types[],
    *const lithe__embed_types[], *const lithe__layernorm_types[], *const lithe__softmax_types[],
    *const lithe__maxout_types[], *const lithe__dense_types[], *const lithe__activation_types[];
/* Sparse, hashed and string inputs (core/layers/sparselinear.c, remap_ids.c, strings2arrays.c,
 * staticvectors.c, core/combinators/uniqued.c). */
extern const lithe__layer_type *const lithe__sparse_types[], *const lithe__remap_types[],
    *const lithe__strings_types[], *const lithe__static_vectors_types[], *const lithe__uniqued_types[];
/* The sequence layers (issue 5): transfers, with_* combinators, reductions, expand_window. */
extern const lithe__layer_type *const lithe__transfer_types[], *const lithe__with_types[], *const lithe__reduce_types[],
    *const lithe__window_types[], *const lithe__getitem_types[];
/* One dropout mask over nO columns (the node's dropout_rate attr, its Philox stream), repeated
 * for B rows: Thinc's Embed / HashEmbed and spaCy's StaticVectors; NULL when no dropout applies. */
lithe_status lithe__dropout_rows(lithe_model *m, int64_t B, int64_t nO, lithe_tensor **mask);
/* Y = X[index] for the getitem layers (core/layers/getitem.c): the node's `index` string attr. */
lithe_status lithe__getitem_forward(lithe_model *m, const lithe_value *X, bool is_train, lithe_value **Y,
                                    lithe_backprop **bp);
/* Recurrent, attention and similarity layers (core/layers/lstm.c, attention.c). */
extern const lithe__layer_type *const lithe__lstm_types[], *const lithe__attention_types[];
/* Imported graphs (core/graph/): the "onnx_graph.v1" layer, and the call that parses a node's
 * `onnx` attr into its shim (the .lithe loader runs it for every graph node it builds). */
extern const lithe__layer_type lithe__onnx_graph_type;
extern const lithe__layer_type *const lithe__graph_types[];
lithe_status lithe__onnx_attach(lithe_model *m);
/* lithe_model_prepare_inference for a graph node: prepares the initializers its Gemm and MatMul
 * nodes read as B (core/prepare.c); and the node's i-th float constant (NULL past the last). */
lithe_status lithe__graph_prepare(lithe_model *m);
lithe_tensor *lithe__graph_const(lithe_model *m, size_t i);
/* The prepared-op key of a graph node whose weight W and bias (NULL: none) are initializers: a
 * Gemm as A · Wᵀ + bias or a Conv with pads fixed by its attributes; false for anything else. */
struct lithe__onnx_node;
bool lithe__graph_prep_op(const struct lithe__onnx_node *n, const lithe_tensor *W, const lithe_tensor *bias,
                          lithe__prep_op *op);
/* The npm package's modules (LITHE_IMPORTERS_SEPARATE) leave core/graph/, onnx.c, tfjs.c and the
 * CPU backend's convolution and pooling (backends/cpu/conv.c) out of the core module: they are a
 * second module (bindings/js/src/importers.c) that the JS loader links into the same memory and
 * registers with lithe__importers_set. The core reaches the graph type, the importers and the
 * conv / pool kernels through core/io/importers.c, which fails with LITHE_ERR_UNSUPPORTED (and
 * raises lithe__importers_wanted) until then. */
struct lithe__sgemm_packed_b; /* (backends/cpu/gemm/gemm.h) */
typedef struct lithe__importers {
    const lithe__layer_type *onnx_graph_type;
    const lithe__layer_type *const *graph_types;
    lithe_status (*onnx_attach)(lithe_model *m);
    lithe_status (*onnx_load_bytes)(const uint8_t *data, size_t len, lithe_model **out);
    lithe_status (*onnx_load)(const char *path, lithe_model **out);
    const char *const *(*onnx_op_names)(size_t *n);
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
} lithe__importers;
#ifdef LITHE_IMPORTERS_SEPARATE
void lithe__importers_set(const lithe__importers *h);
bool lithe__importers_wanted(void); /* a call since the last query needed the missing module */
const lithe__layer_type *lithe__importers_graph_type(void);
const lithe__layer_type *const *lithe__importers_graph_types(void);
#define LITHE__ONNX_GRAPH_TYPE (lithe__importers_graph_type())
#define LITHE__GRAPH_TYPES (lithe__importers_graph_types())
#else
#define LITHE__ONNX_GRAPH_TYPE (&lithe__onnx_graph_type)
#define LITHE__GRAPH_TYPES lithe__graph_types
#endif
const lithe__layer_type *lithe__layer_type_by_name(const char *registered_name);

/* chain(node, LayerNorm(nI=nO)) when o->normalize, then chain(.., Dropout) when o->dropout > 0,
 * as Thinc's layers build them. Takes over node, also on failure. */
lithe_status lithe__norm_dropout(const char *layer, lithe_model *node, const lithe_dense_opts *o, lithe_model **out);

#endif /* LITHE_INTERNAL_H */
