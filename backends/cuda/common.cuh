/* Shared by the CUDA module's .cu files: the backend context, the launcher and the helpers.
 *
 * Every kernel is a struct with a static `run(const lc_thread &t, args...)` marked LC_HD
 * (__host__ __device__): the per-thread body, written against an explicit lc_thread (block and
 * thread indices, block and grid sizes) instead of CUDA's built-in variables. lc_launch runs it:
 *   - on a GPU, as the __global__ lc_kernel<K> over a 1-D grid of LC_BLOCK-thread blocks on the
 *     backend's stream;
 *   - in the host-emulation build (LITHE_CUDA_EMULATE, liblithe_cuda_emu.so), by calling the same
 *     body for every (block, thread) of the same grid, one after another on the CPU.
 * So the index math, the grid-stride loops, the bounds and the argument plumbing of every kernel
 * run in CI without a GPU (tests/test_vulkan.c built as test_cuda, against the emulated module).
 * Kernels never use shared memory or __syncthreads (a serial emulation could not honour them):
 * reductions give one thread a whole row / column / sequence, in the CPU kernel's order. */
#ifndef LITHE_CUDA_COMMON_CUH
#define LITHE_CUDA_COMMON_CUH

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_module.h"

#ifdef LITHE_CUDA_EMULATE
#define LC_HD
#else
#include <cublas_v2.h>
#include <cuda_runtime.h>
#define LC_HD __host__ __device__
#endif

#define LC_BLOCK 256

/* One thread's coordinates in a 1-D launch. */
struct lc_thread {
    uint32_t block, thread, block_dim, grid_dim;
    LC_HD int64_t first() const { return (int64_t)block * block_dim + thread; }
    LC_HD int64_t stride() const { return (int64_t)grid_dim * block_dim; }
};
/* for (i = this thread's first index; i < n; i += the grid's width) */
#define LC_FOR(t, i, n) for (int64_t i = (t).first(); i < (int64_t)(n); i += (t).stride())

extern const lithe__cuda_host *lc_host;
#define LC_FAIL(...) lc_host->fail(__VA_ARGS__)
/* per-call host memory through liblithe's allocator hook */
#define LC_MALLOC(n) lc_host->malloc_fn(n)
#define LC_FREE(p) lc_host->free_fn(p)

/* ---- the caching allocator: exact-size reuse of rounded blocks ---- */
struct lc_cached {
    void *ptr;
    size_t size;
};

/* A backend instance's context. */
struct lc_ctx {
    int device;
    char name[32];
    char device_name[256];
    int sms;
    int64_t max_grid; /* blocks per launch, at most (grid-stride loops cover the rest) */
#ifndef LITHE_CUDA_EMULATE
    cudaStream_t stream;
    cublasHandle_t blas;
#endif
    /* live allocations: open addressing, ptr -> rounded size */
    lc_cached *live;
    size_t live_cap, live_n;
    /* freed blocks kept for reuse */
    lc_cached *cache;
    size_t cache_n, cache_cap;
    size_t bytes_in_use, bytes_cached, n_device_allocs;
};

static inline lc_ctx *lc_of(lithe_backend *be) { return (lc_ctx *)be->ctx; }

/* ---- raw device memory of the context (device.cu) ---- */
lithe_status lc_alloc(lc_ctx *c, size_t nbytes, void **out);
void lc_free(lc_ctx *c, void *p);
/* host -> device / device -> host (the latter waits for the stream) / device -> device. */
lithe_status lc_h2d(lc_ctx *c, void *dst, const void *src, size_t n);
lithe_status lc_d2h(lc_ctx *c, void *dst, const void *src, size_t n);
lithe_status lc_d2d(lc_ctx *c, void *dst, const void *src, size_t n);
lithe_status lc_memset0(lc_ctx *c, void *dst, size_t n);
/* A device copy of n bytes of host data (scratch: lc_free it after the launches that read it;
 * reuse is ordered after them on the one stream). */
lithe_status lc_upload_scratch(lc_ctx *c, const void *src, size_t n, void **out);
/* Row-major C = alpha op(A) op(B) + beta C on raw pointers (cuBLAS, device.cu), `batch` times with
 * element strides sA, sB, sC between the matrices (0: the same one). */
lithe_status lc_gemm_rm(lc_ctx *c, bool tA, bool tB, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                        int64_t lda, int64_t sA, const float *B, int64_t ldb, int64_t sB, float beta, float *C,
                        int64_t ldc, int64_t sC, int64_t batch);
/* The error of the last launch, named after `what`. */
lithe_status lc_check_launch(const char *what);

/* ---- tensors (the module may not call liblithe, so these mirror internal.h's inlines) ---- */
static inline size_t lc_dsize(lithe_dtype d) {
    switch (d) {
    case LITHE_F32: case LITHE_I32: case LITHE_U32: return 4;
    case LITHE_F16: case LITHE_BF16: return 2;
    case LITHE_I64: case LITHE_U64: return 8;
    case LITHE_U8: case LITHE_I8: return 1;
    }
    return 0;
}
/* The emulation's device memory is host memory, so it checks what a GPU would fault on: a
 * kernel argument taken from a tensor that is not in this backend's memory. */
#ifdef LITHE_CUDA_EMULATE
extern const char *lc_emu_misuse;
#endif
/* A host tensor's data (lengths, size_at_t, strings: read by the host). */
static inline void *lc_host_ptr(const lithe_tensor *t) {
    return (char *)t->storage->data + (size_t)t->offset * lc_dsize(t->dtype);
}
/* A device tensor's data (a kernel argument). */
static inline void *lc_ptr(const lithe_tensor *t) {
    if (!t) return NULL;
#ifdef LITHE_CUDA_EMULATE
    if (t->storage->backend->host_memory) lc_emu_misuse = t->storage->backend->name;
#endif
    return lc_host_ptr(t);
}
static inline float *lc_f(const lithe_tensor *t) { return (float *)lc_ptr(t); }
static inline bool lc_contiguous(const lithe_tensor *t) {
    int64_t s = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        if (t->shape[d] != 1 && t->strides[d] != s) return false;
        s *= t->shape[d];
    }
    return true;
}

/* ---- kernels ----
 * LC_KERNEL(k_name, (params)) { body }  defines the struct k_name with a static per-thread body
 * run(const lc_thread &t, params) (params written with t first). */
#define LC_KERNEL(kname, params)                                                                  \
    struct kname {                                                                                \
        static constexpr const char *name = #kname;                                              \
        static LC_HD void run params;                                                             \
    };                                                                                            \
    LC_HD void kname::run params

/* ---- the launcher ---- */
#ifndef LITHE_CUDA_EMULATE
template <class K, class... A> __global__ void __launch_bounds__(LC_BLOCK) lc_kernel(A... a) {
    lc_thread t = {blockIdx.x, threadIdx.x, blockDim.x, gridDim.x};
    K::run(t, a...);
}
#endif

/* Makes c's device the calling thread's current one (launches, allocations and cuBLAS calls go
 * to the current device; two "cuda:<i>" backends may be used from one thread). */
#ifdef LITHE_CUDA_EMULATE
static inline void lc_use(lc_ctx *c) { (void)c; }
#else
void lc_use(lc_ctx *c);
#endif

/* Runs K over enough threads for n work items (at most c->max_grid blocks). */
template <class K, class... A> static lithe_status lc_launch(lc_ctx *c, int64_t n, A... a) {
    if (n <= 0) return LITHE_OK;
    int64_t g = (n + LC_BLOCK - 1) / LC_BLOCK;
    if (g > c->max_grid) g = c->max_grid;
#ifdef LITHE_CUDA_EMULATE
    if (lc_emu_misuse) {
        const char *where = lc_emu_misuse;
        lc_emu_misuse = NULL;
        return LC_FAIL(LITHE_ERR_INVALID_ARG, "cuda %s (emulated): an argument lives in the memory of backend '%s', "
                       "not the device's", K::name, where);
    }
    for (uint32_t b = 0; b < (uint32_t)g; b++)
        for (uint32_t th = 0; th < LC_BLOCK; th++) {
            lc_thread t = {b, th, LC_BLOCK, (uint32_t)g};
            K::run(t, a...);
        }
    return LITHE_OK;
#else
    lc_use(c);
    lc_kernel<K><<<(unsigned)g, LC_BLOCK, 0, c->stream>>>(a...);
    return lc_check_launch(K::name);
#endif
}

/* ---- device-side helpers ---- */
static LC_HD inline void lc_atomic_add(float *p, float v) {
#ifdef __CUDA_ARCH__
    atomicAdd(p, v);
#else
    *p += v; /* the emulation runs one thread at a time */
#endif
}

/* Broadcast operands in an output index space (see backends/cpu/scalar/graph.c): up to three
 * operands' strides, 0 along broadcast axes. */
struct lc_bcast {
    int nd;
    int64_t shape[LITHE_MAX_DIMS];
    int64_t s[3][LITHE_MAX_DIMS];
};
/* The offsets of operands 0..k-1 of flat output index i. */
static LC_HD inline void lc_bcast_offsets(const lc_bcast &b, int k, int64_t i, int64_t *off) {
    for (int o = 0; o < k; o++) off[o] = 0;
    for (int d = b.nd - 1; d >= 0; d--) {
        int64_t c = i % b.shape[d];
        i /= b.shape[d];
        for (int o = 0; o < k; o++) off[o] += c * b.s[o][d];
    }
}
/* Strides of contiguous t seen from an index space of nd axes `shape`, aligned at the last axis,
 * 0 where t's extent is 1 (or missing) and the space's is not. */
static inline void lc_bcast_strides(const lithe_tensor *t, int nd, const int64_t *shape, int64_t *out) {
    int64_t s = 1;
    for (int d = nd - 1, k = t->ndim - 1; d >= 0; d--, k--) {
        if (k < 0) {
            out[d] = 0;
            continue;
        }
        out[d] = t->shape[k] == 1 && shape[d] != 1 ? 0 : s;
        s *= t->shape[k];
    }
}

/* ---- the primitives: cu_<name> for every line of core/primitives.def but those unsupported.h
 * lists, each in its family's file; device.cu's table is generated from the same list, so a
 * primitive neither written nor listed is an undefined symbol when the module links ---- */
#include "unsupported.h"
#define LITHE_PRIM(name, params, args) LITHE__PRIM_DECL(cu_, name, params)
#include "../../core/primitives.def"
#undef LITHE_PRIM

/* Host int32 lengths (B,) -> device arrays: starts (B + 1) int64 and, when `row_seq`, the
 * sequence of every row (N,) int32. Free both with lc_free. */
lithe_status lc_seq_index(lc_ctx *c, const lithe_tensor *lengths, int64_t **starts, int32_t **row_seq, int64_t *N);

#endif
