/* The CUDA module's machinery: device selection, one stream and one cuBLAS handle per backend
 * instance, the caching device allocator, copies, GEMM (cuBLAS) and the module's entry point.
 * The primitives live one family per file (elementwise.cu, act.cu, norm.cu, index.cu, seq.cu,
 * graph.cu). Built twice: for the GPU (liblithe_cuda.so, CUDA runtime + cuBLAS) and, with
 * LITHE_CUDA_EMULATE, for the host (liblithe_cuda_emu.so: host memory, kernels emulated thread by
 * thread, GEMM by a column-major reference with cuBLAS's argument checks). */
#include "common.cuh"

#include <stdio.h>

const lithe__cuda_host *lc_host;
#ifdef LITHE_CUDA_EMULATE
const char *lc_emu_misuse;
#endif

#ifndef LITHE_CUDA_EMULATE
static lithe_status cuda_fail(cudaError_t e, const char *what) {
    lithe_status s = e == cudaErrorMemoryAllocation ? LITHE_ERR_OOM : LITHE_ERR_UNSUPPORTED;
    return LC_FAIL(s, "cuda: %s: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
}
#define CU_TRY(expr, what)                                                                         \
    do {                                                                                           \
        cudaError_t e_ = (expr);                                                                   \
        if (e_ != cudaSuccess) return cuda_fail(e_, what);                                         \
    } while (0)

static thread_local int current_device = -1;
void lc_use(lc_ctx *c) {
    if (current_device != c->device && cudaSetDevice(c->device) == cudaSuccess) current_device = c->device;
}

lithe_status lc_check_launch(const char *what) {
    cudaError_t e = cudaGetLastError();
    return e == cudaSuccess ? LITHE_OK : cuda_fail(e, what);
}
#else
lithe_status lc_check_launch(const char *what) {
    (void)what;
    return LITHE_OK;
}
#endif

/* ---------------------------------------------------------------------------------------------
 * Caching allocator. Sizes are rounded (512 B granules below 1 MiB, 2 MiB above) and a freed
 * block waits in the cache for a request of the same rounded size; cudaMalloc runs only when none
 * waits, and on its failure the cache is returned to the driver and the request retried. Blocks
 * are reused in stream order: every kernel and copy of a backend goes to its one stream, so a
 * block handed out again is only touched after the work that used it before.
 * ------------------------------------------------------------------------------------------- */

static size_t round_size(size_t n) {
    if (n == 0) n = 1;
#ifdef LITHE_CUDA_EMULATE
    return n; /* exact blocks: under AddressSanitizer (the asan preset) a kernel's stray index is caught */
#endif
    size_t g = n < ((size_t)1 << 20) ? 512 : ((size_t)2 << 20);
    return (n + g - 1) / g * g;
}

static size_t hash_ptr(const void *p, size_t cap) { return ((uintptr_t)p >> 8) * 0x9E3779B97F4A7C15ull & (cap - 1); }

static bool live_put(lc_ctx *c, void *p, size_t size) {
    if ((c->live_n + 1) * 2 > c->live_cap) {
        size_t cap = c->live_cap ? c->live_cap * 2 : 256;
        lc_cached *v = (lc_cached *)calloc(cap, sizeof *v);
        if (!v) return false;
        for (size_t i = 0; i < c->live_cap; i++)
            if (c->live[i].ptr) {
                size_t h = hash_ptr(c->live[i].ptr, cap);
                while (v[h].ptr) h = (h + 1) & (cap - 1);
                v[h] = c->live[i];
            }
        free(c->live);
        c->live = v;
        c->live_cap = cap;
    }
    size_t h = hash_ptr(p, c->live_cap);
    while (c->live[h].ptr) h = (h + 1) & (c->live_cap - 1);
    c->live[h].ptr = p;
    c->live[h].size = size;
    c->live_n++;
    return true;
}

/* Removes p from the live table and returns its size (0: unknown pointer). */
static size_t live_take(lc_ctx *c, void *p) {
    if (!c->live_cap) return 0;
    size_t h = hash_ptr(p, c->live_cap);
    while (c->live[h].ptr && c->live[h].ptr != p) h = (h + 1) & (c->live_cap - 1);
    if (!c->live[h].ptr) return 0;
    size_t size = c->live[h].size;
    /* backward-shift deletion keeps every probe chain intact */
    size_t i = h;
    for (;;) {
        c->live[i].ptr = NULL;
        size_t j = i;
        for (;;) {
            j = (j + 1) & (c->live_cap - 1);
            if (!c->live[j].ptr) {
                c->live_n--;
                return size;
            }
            size_t k = hash_ptr(c->live[j].ptr, c->live_cap);
            if ((i <= j) ? (i < k && k <= j) : (i < k || k <= j)) continue;
            c->live[i] = c->live[j];
            i = j;
            break;
        }
    }
}

static void *raw_alloc(lc_ctx *c, size_t size) {
#ifdef LITHE_CUDA_EMULATE
    /* LITHE_CUDA_EMU_MEMORY=<bytes>: the emulated device's memory size. A request that would take
     * the bytes the allocator holds (in use + cached) past it fails as cudaMalloc would, so the
     * out-of-memory path (the cache returned to the driver, then one retry) runs in CI. */
    const char *cap = getenv("LITHE_CUDA_EMU_MEMORY");
    if (cap && *cap && c->bytes_in_use + c->bytes_cached + size > strtoull(cap, NULL, 10)) return NULL;
    void *p = NULL;
    if (posix_memalign(&p, 256, size)) return NULL;
    /* device memory starts with garbage: so does the emulation's (lithe zero-fills explicitly) */
    memset(p, 0xA5, size);
    return p;
#else
    void *p = NULL;
    if (cudaMalloc(&p, size) != cudaSuccess) {
        (void)cudaGetLastError();
        return NULL;
    }
    return p;
#endif
}

static void raw_free(void *p) {
#ifdef LITHE_CUDA_EMULATE
    free(p);
#else
    cudaFree(p);
#endif
}

static void release_cache(lc_ctx *c) {
#ifndef LITHE_CUDA_EMULATE
    lc_use(c);
    cudaStreamSynchronize(c->stream);
#endif
    for (size_t i = 0; i < c->cache_n; i++) raw_free(c->cache[i].ptr);
    c->cache_n = 0;
    c->bytes_cached = 0;
}

lithe_status lc_alloc(lc_ctx *c, size_t nbytes, void **out) {
    *out = NULL;
    lc_use(c);
    size_t size = round_size(nbytes);
    for (size_t i = c->cache_n; i-- > 0;)
        if (c->cache[i].size == size) {
            void *p = c->cache[i].ptr;
            c->cache[i] = c->cache[--c->cache_n];
            if (!live_put(c, p, size)) {
                c->cache[c->cache_n++] = {p, size};
                return LC_FAIL(LITHE_ERR_OOM, "cuda: out of host memory for the allocator's table");
            }
            c->bytes_cached -= size;
            c->bytes_in_use += size;
            *out = p;
            return LITHE_OK;
        }
    void *p = raw_alloc(c, size);
    if (!p && c->cache_n) {
        release_cache(c);
        p = raw_alloc(c, size);
    }
    if (!p)
        return LC_FAIL(LITHE_ERR_OOM, "cuda: out of device memory allocating %zu bytes on %s (%zu in use)", nbytes,
                       c->device_name, c->bytes_in_use);
    if (!live_put(c, p, size)) {
        raw_free(p);
        return LC_FAIL(LITHE_ERR_OOM, "cuda: out of host memory for the allocator's table");
    }
    c->n_device_allocs++;
    c->bytes_in_use += size;
    *out = p;
    return LITHE_OK;
}

void lc_free(lc_ctx *c, void *p) {
    if (!p) return;
    size_t size = live_take(c, p);
    if (!size) return; /* not ours (cannot happen: DLPack-borrowed storage never reaches here) */
    c->bytes_in_use -= size;
    if (c->cache_n == c->cache_cap) {
        size_t cap = c->cache_cap ? c->cache_cap * 2 : 64;
        lc_cached *v = (lc_cached *)realloc(c->cache, cap * sizeof *v);
        if (!v) {
#ifndef LITHE_CUDA_EMULATE
            cudaStreamSynchronize(c->stream);
#endif
            raw_free(p);
            return;
        }
        c->cache = v;
        c->cache_cap = cap;
    }
    c->cache[c->cache_n++] = {p, size};
    c->bytes_cached += size;
}

/* ---------------------------------------------------------------------------------------------
 * Copies
 * ------------------------------------------------------------------------------------------- */

lithe_status lc_h2d(lc_ctx *c, void *dst, const void *src, size_t n) {
    if (!n) return LITHE_OK;
    lc_use(c);
#ifdef LITHE_CUDA_EMULATE
    (void)c;
    memcpy(dst, src, n);
#else
    /* from pageable memory: returns once src has been staged, so the caller may reuse it */
    CU_TRY(cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, c->stream), "host-to-device copy");
#endif
    return LITHE_OK;
}

lithe_status lc_d2h(lc_ctx *c, void *dst, const void *src, size_t n) {
    if (!n) return LITHE_OK;
    lc_use(c);
#ifdef LITHE_CUDA_EMULATE
    (void)c;
    memcpy(dst, src, n);
#else
    CU_TRY(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToHost, c->stream), "device-to-host copy");
    CU_TRY(cudaStreamSynchronize(c->stream), "waiting for the stream");
#endif
    return LITHE_OK;
}

lithe_status lc_d2d(lc_ctx *c, void *dst, const void *src, size_t n) {
    if (!n) return LITHE_OK;
    lc_use(c);
#ifdef LITHE_CUDA_EMULATE
    (void)c;
    memmove(dst, src, n);
#else
    CU_TRY(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, c->stream), "device-to-device copy");
#endif
    return LITHE_OK;
}

lithe_status lc_memset0(lc_ctx *c, void *dst, size_t n) {
    if (!n) return LITHE_OK;
    lc_use(c);
#ifdef LITHE_CUDA_EMULATE
    (void)c;
    memset(dst, 0, n);
#else
    CU_TRY(cudaMemsetAsync(dst, 0, n, c->stream), "memset");
#endif
    return LITHE_OK;
}

lithe_status lc_upload_scratch(lc_ctx *c, const void *src, size_t n, void **out) {
    LITHE__TRY(lc_alloc(c, n, out));
    lithe_status s = lc_h2d(c, *out, src, n);
    if (s != LITHE_OK) {
        lc_free(c, *out);
        *out = NULL;
    }
    return s;
}

/* ---- the memory half of the backend table ---- */
static lithe_status cu_alloc(lithe_backend *be, size_t nbytes, void **out) { return lc_alloc(lc_of(be), nbytes, out); }
static void cu_free(lithe_backend *be, void *p) { lc_free(lc_of(be), p); }
static lithe_status cu_upload(lithe_backend *be, void *dst, size_t off, const void *src, size_t n) {
    return lc_h2d(lc_of(be), (char *)dst + off, src, n);
}
static lithe_status cu_download(lithe_backend *be, void *dst, const void *src, size_t off, size_t n) {
    return lc_d2h(lc_of(be), dst, (const char *)src + off, n);
}
static lithe_status cu_sync(lithe_backend *be) {
#ifdef LITHE_CUDA_EMULATE
    (void)be;
#else
    CU_TRY(cudaStreamSynchronize(lc_of(be)->stream), "waiting for the stream");
#endif
    return LITHE_OK;
}

/* ---------------------------------------------------------------------------------------------
 * GEMM. lithe's matrices are row-major; cuBLAS's are column-major. A row-major (R, C) matrix
 * with row stride ld is, read column-major, its transpose (C, R) with leading dimension ld. So
 *   C = alpha op(A) op(B) + beta C     (row-major, C: M x N)
 * is, column-major,
 *   Cᵀ = alpha op(B)ᵀ op(A)ᵀ + beta Cᵀ (Cᵀ: N x M),
 * i.e. cublasSgemm(opB, opA, N, M, K, B, ldb, A, lda, C, ldc) with opX = transX ? T : N.
 * fp32 throughout: the handle's math mode is CUBLAS_DEFAULT_MATH, which never uses TF32
 * (CUBLAS_TF32_TENSOR_OP_MATH would), so results stay IEEE single precision.
 * ------------------------------------------------------------------------------------------- */

#ifdef LITHE_CUDA_EMULATE
/* Column-major reference with cuBLAS's documented checks (CUBLAS_STATUS_INVALID_VALUE when
 * m, n, k < 0 or lda < max(1, opA == N ? m : k), ldb < max(1, opB == N ? k : n), ldc < max(1, m)),
 * so an argument mapping that real cuBLAS would refuse fails here too. beta == 0: C is not read. */
static int ref_sgemm(bool tA, bool tB, int64_t m, int64_t n, int64_t k, float alpha, const float *A, int64_t lda,
                     const float *B, int64_t ldb, float beta, float *C, int64_t ldc) {
    int64_t ra = tA ? k : m, rb = tB ? n : k;
    if (m < 0 || n < 0 || k < 0 || lda < (ra > 1 ? ra : 1) || ldb < (rb > 1 ? rb : 1) || ldc < (m > 1 ? m : 1))
        return 7; /* CUBLAS_STATUS_INVALID_VALUE */
    for (int64_t j = 0; j < n; j++)
        for (int64_t i = 0; i < m; i++) {
            double acc = 0.0;
            for (int64_t p = 0; p < k; p++) {
                float a = tA ? A[p + i * lda] : A[i + p * lda];
                float b = tB ? B[j + p * ldb] : B[p + j * ldb];
                acc += (double)a * b;
            }
            float r = alpha * (float)acc;
            C[i + j * ldc] = beta == 0.0f ? r : r + beta * C[i + j * ldc];
        }
    return 0;
}
#endif

lithe_status lc_gemm_rm(lc_ctx *c, bool tA, bool tB, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                        int64_t lda, int64_t sA, const float *B, int64_t ldb, int64_t sB, float beta, float *C,
                        int64_t ldc, int64_t sC, int64_t batch) {
    if (M == 0 || N == 0 || batch == 0) return LITHE_OK;
    if (M > INT32_MAX || N > INT32_MAX || K > INT32_MAX || lda > INT32_MAX || ldb > INT32_MAX || ldc > INT32_MAX ||
        batch > INT32_MAX)
        return LC_FAIL(LITHE_ERR_UNSUPPORTED, "cuda gemm: (%lld x %lld x %lld) exceeds cuBLAS's 32-bit sizes",
                       (long long)M, (long long)N, (long long)K);
#ifdef LITHE_CUDA_EMULATE
    (void)c;
    for (int64_t i = 0; i < batch; i++) {
        int st = ref_sgemm(tB, tA, N, M, K, alpha, B + i * sB, ldb, A + i * sA, lda, beta, C + i * sC, ldc);
        if (st)
            return LC_FAIL(LITHE_ERR_UNSUPPORTED, "cuda gemm (emulated cuBLAS): invalid arguments (status %d)", st);
    }
#else
    lc_use(c);
    cublasOperation_t oa = tA ? CUBLAS_OP_T : CUBLAS_OP_N, ob = tB ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasStatus_t st =
        batch == 1 ? cublasSgemm(c->blas, ob, oa, (int)N, (int)M, (int)K, &alpha, B, (int)ldb, A, (int)lda, &beta, C,
                                 (int)ldc)
                   : cublasSgemmStridedBatched(c->blas, ob, oa, (int)N, (int)M, (int)K, &alpha, B, (int)ldb, sB, A,
                                               (int)lda, sA, &beta, C, (int)ldc, sC, (int)batch);
    if (st != CUBLAS_STATUS_SUCCESS)
        return LC_FAIL(LITHE_ERR_UNSUPPORTED, "cuda gemm: cuBLAS failed (%s)", cublasGetStatusString(st));
#endif
    return LITHE_OK;
}

lithe_status cu_gemm(lithe_backend *be, bool tA, bool tB, float alpha, const lithe_tensor *A,
                            const lithe_tensor *B, float beta, lithe_tensor *C) {
    int64_t M = C->shape[0], N = C->shape[1], K = tA ? A->shape[0] : A->shape[1];
    /* a single row's stride is never used: cuBLAS still wants ld >= the row length */
    int64_t lda = A->shape[0] > 1 ? A->strides[0] : A->shape[1], ldb = B->shape[0] > 1 ? B->strides[0] : B->shape[1],
            ldc = M > 1 ? C->strides[0] : N;
    if (lda < 1) lda = 1;
    if (ldb < 1) ldb = 1;
    if (ldc < 1) ldc = 1;
    return lc_gemm_rm(lc_of(be), tA, tB, M, N, K, alpha, lc_f(A), lda, 0, lc_f(B), ldb, 0, beta, lc_f(C), ldc, 0, 1);
}

/* ---------------------------------------------------------------------------------------------
 * Devices and the module's entry point
 * ------------------------------------------------------------------------------------------- */

static lithe_backend_ops table;

static lithe_status device_count(int *out) {
    *out = 0;
#ifdef LITHE_CUDA_EMULATE
    *out = 1;
#else
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return LC_FAIL(LITHE_ERR_UNSUPPORTED, "cuda: no usable CUDA device: %s (%s)", cudaGetErrorString(e),
                       cudaGetErrorName(e));
    }
    *out = n;
#endif
    return LITHE_OK;
}

static lithe_status open_device(int index, lithe_backend *be) {
    lc_ctx *c = (lc_ctx *)calloc(1, sizeof *c);
    if (!c) return LC_FAIL(LITHE_ERR_OOM, "cuda: out of host memory for a backend");
    c->device = index;
#ifdef LITHE_CUDA_EMULATE
    /* one emulated multiprocessor: 16 blocks of 256 threads, so a 4099-element test already
     * takes the grid-stride loops' second pass */
    c->sms = 1;
    snprintf(c->device_name, sizeof c->device_name, "host emulation of the CUDA kernels");
#else
    cudaDeviceProp p;
    cudaError_t e = cudaSetDevice(index);
    if (e == cudaSuccess) e = cudaGetDeviceProperties(&p, index);
    if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking);
    if (e != cudaSuccess) {
        free(c);
        return cuda_fail(e, "opening the device");
    }
    c->sms = p.multiProcessorCount;
    snprintf(c->device_name, sizeof c->device_name, "%s", p.name);
    cublasStatus_t bs = cublasCreate(&c->blas);
    if (bs == CUBLAS_STATUS_SUCCESS) bs = cublasSetStream(c->blas, c->stream);
    if (bs == CUBLAS_STATUS_SUCCESS) bs = cublasSetMathMode(c->blas, CUBLAS_DEFAULT_MATH); /* no TF32 */
    if (bs != CUBLAS_STATUS_SUCCESS) {
        cudaStreamDestroy(c->stream);
        free(c);
        return LC_FAIL(LITHE_ERR_UNSUPPORTED, "cuda: cuBLAS initialisation failed (%s)", cublasGetStatusString(bs));
    }
#endif
    c->max_grid = (int64_t)c->sms * 16;
    be->ops = &table;
    be->ctx = c;
    be->host_memory = false;
    return LITHE_OK;
}

static const char *device_name(const lithe_backend *be) { return ((const lc_ctx *)be->ctx)->device_name; }

static void *stream_of(const lithe_backend *be) {
#ifdef LITHE_CUDA_EMULATE
    (void)be;
    return NULL;
#else
    return (void *)((const lc_ctx *)be->ctx)->stream;
#endif
}

static int pointer_device(const void *ptr) {
#ifdef LITHE_CUDA_EMULATE
    (void)ptr;
    return 0;
#else
    cudaPointerAttributes a;
    if (cudaPointerGetAttributes(&a, ptr) != cudaSuccess) {
        (void)cudaGetLastError();
        return -1;
    }
    return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged ? a.device : -1;
#endif
}

static void memory_stats(const lithe_backend *be, size_t *in_use, size_t *cached, size_t *n_allocs) {
    const lc_ctx *c = (const lc_ctx *)be->ctx;
    if (in_use) *in_use = c->bytes_in_use;
    if (cached) *cached = c->bytes_cached;
    if (n_allocs) *n_allocs = c->n_device_allocs;
}

static const lithe__cuda_module module = {
    LITHE__CUDA_ABI,
    sizeof(lithe_backend_ops),
    sizeof(lithe_tensor),
    sizeof(lithe__storage),
    0,
#ifdef LITHE_CUDA_EMULATE
    "host emulation",
#else
    "device",
#endif
    device_count,
    open_device,
    device_name,
    stream_of,
    pointer_device,
    memory_stats,
};

extern "C" __attribute__((visibility("default"))) lithe_status lithe_cuda_module_v1(const lithe__cuda_host *host,
                                                                                    const lithe__cuda_module **out) {
    *out = NULL;
    if (!host || host->abi != LITHE__CUDA_ABI || host->sizeof_ops != sizeof(lithe_backend_ops) ||
        host->sizeof_tensor != sizeof(lithe_tensor) || host->sizeof_storage != sizeof(lithe__storage))
        return LITHE_ERR_UNSUPPORTED; /* built from another tree: the caller says so */
    lc_host = host;
    table.alloc = cu_alloc;
    table.free = cu_free;
    table.upload = cu_upload;
    table.download = cu_download;
    table.sync = cu_sync;
#define LITHE_PRIM(name, params, args) LITHE__PRIM_ASSIGN(table, cu_, name)
#include "../../core/primitives.def"
#undef LITHE_PRIM
    *out = &module;
    return LITHE_OK;
}
