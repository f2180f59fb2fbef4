/* Tensors, their storage and prepared forms, the buffer pool, values and sequence containers
 * (core/tensor.c, prepare.c, value.c, sequence.c). Not installed */
#ifndef LITHE_CORE_TENSOR_H
#define LITHE_CORE_TENSOR_H

#include "base.h"

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
    /* an I8 / U8 tensor's quantization parameters (core/quant.c), freed with the storage */
    struct lithe__quant *quant;
} lithe__storage;

/* value = scale[c] * (q - zero[c]), c the index along axis 0 (axis 0, n = extent) or 0 (axis -1,
 * n = 1). Scales are finite and > 0, zero points inside the dtype's range (checked on entry). */
typedef struct lithe__quant {
    int axis;
    int64_t n;
    float *scale;
    int32_t *zero;
    /* the CPU int8 GEMM's cache of W's row sums (wsum_n of them; wsum_ok: no -128), valid while
     * the storage's version is wsum_version (a write drops it) */
    int32_t *wsum;
    int64_t wsum_n;
    uint64_t wsum_version;
    bool wsum_ok;
    int8_t wsum_pairs; /* lithe__q8_pairs_fit of W (1 / 0) under the same version, -1 not known */
    /* its cache of W packed for the kernel's packed tile (lithe__q8_pack of W as (N, K), wpack_n =
     * N * K), valid while the storage's version is wpack_version */
    int8_t *wpack;
    int64_t wpack_n;
    uint64_t wpack_version;
    /* the CPU int8 convolution's cache of W's packed (or decoded) form (backends/cpu/conv/qconv.c):
     * cpack_kind / cpack_n say which, valid while the storage's version is cpack_version */
    void *cpack;
    int64_t cpack_kind, cpack_n;
    uint64_t cpack_version;
} lithe__quant;
void lithe__quant_free(lithe__quant *q);
/* A compact weight: F16 / BF16, or I8 / U8 carrying quant. */
bool lithe__is_compact(const lithe_tensor *t);
/* Row r of a 2-D quantized (I8 / U8) host tensor (K elements from element offset `off`) decoded to
 * float32 into dst: scale * (q - zero_point) with the row's (axis 0) or the tensor's parameters.
 * (F16 / BF16 rows decode with the CPU backend's cast kernel.) */
void lithe__decode_row(const lithe_tensor *t, int64_t row, int64_t off, int64_t K, float *dst);
/* t itself (retained) when float32, else its float32 values (a new tensor): how the exporters
 * (Thinc bytes, ONNX, TF.js) write a compact weight. */
lithe_status lithe__as_f32(const lithe_tensor *t, lithe_tensor **out);
/* dst (the same dtype and numel, any backend) gets src's quantization parameters, if it has any
 * (lithe_tensor_to_backend: they live beside the storage, on the host, wherever the bytes are). A
 * view of part of a quantized storage is refused (its per-row parameters would not line up). */
lithe_status lithe__quant_copy(const lithe_tensor *src, lithe_tensor *dst);
/* A quantized host tensor's float32 values (a new tensor). */
lithe_status lithe__dequantize(const lithe_tensor *t, lithe_tensor **out);

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
/* The idle blocks go back to the backend now (a recomputing graph's backward, between segments whose
 * sizes differ: the pool then holds what one segment uses, not every size's most). NULL: no-op. */
void lithe__bufpool_trim(lithe__bufpool *p);
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

#endif /* LITHE_CORE_TENSOR_H */
