/*
 * lithe.h — Thinc's model in portable C. This header is the reference manual.
 *
 * Conventions that hold for every function below unless its comment says otherwise:
 *
 *  - Fallible calls return a lithe_status. LITHE_OK is 0. On failure, lithe_last_error()
 *    returns a message naming the layer and the numbers involved, and every out-pointer is
 *    left set to NULL (or untouched for plain scalars). Nothing is half-done: a failed call
 *    leaves its inputs as they were, except for three calls that walk a tree and say so
 *    (initialize, forward, backprop_run): after their failure the tree is valid and can be used
 *    or freed, but some nodes may already have done their part.
 *  - Statuses every call may return besides those listed: LITHE_ERR_INVALID_ARG for a NULL
 *    pointer where an object is required, and LITHE_ERR_OOM when the allocator fails.
 *  - Objects returned through an out-pointer are owned by the caller and released with the
 *    matching _free / _release function. Every _free / _release accepts NULL.
 *    Pointers returned directly ("borrowed") stay valid as long as their owner does.
 *  - Thread safety: distinct objects may be used from distinct threads at once. One object
 *    (a model and its tree, an optimizer, a tensor's data) must not be used from two threads
 *    at once: serialise the calls (a mutex, one owning thread). lithe_set_allocator is the one
 *    exception: call it before anything else. lithe_last_error() is per thread. References
 *    count atomically: lithe_*_retain / _release / _free of a tensor, value, backprop record or
 *    model may run on any thread while others use other references to the object (a tensor read
 *    by several threads at once is fine; written while read is not).
 *    lithe DETECTS two threads in one model where it is cheap: every node records, by an atomic
 *    compare-and-swap, the thread inside a call on it; a second thread entering a call on that
 *    node is refused with LITHE_ERR_STATE "model used from two threads at once" before anything is
 *    read or written (the first call goes on undisturbed; nobody waits: retry later, or
 *    serialise). The same thread nesting calls (a debug hook calling into its model) is no
 *    conflict. The calls that check: lithe_model_forward and the calls made of it (predict,
 *    begin_update, predict_tensor; each node as the forward reaches it), lithe_backprop_run (its
 *    node), lithe_model_initialize and lithe_model_set_param (the node), and, over the whole tree
 *    (the node and its layers, recursively), lithe_model_finish_update, prepare_inference,
 *    release_prepared (void: refused, it does nothing and sets lithe_last_error), prepared_bytes
 *    (0 when refused), set_backend / to_backend, set_seed, set_dropout_rate, save / save_bytes,
 *    to_thinc_bytes / from_thinc_bytes, lithe_resize_model and lithe_optimizer_swap_averages.
 *    Other calls (the getters, set_dim / set_attr_*, replace_node, an optimizer shared by two
 *    models, a tensor's data) are not checked: using them from two threads at once is undefined.
 *    Serialised use never sees the error (a release / acquire pair hands each node over).
 *  - Lifetimes: a handle never keeps its owner alive unless its comment says it holds a
 *    reference. Borrowed: the nodes of lithe_model_walk / lithe_model_layer / get_ref, a
 *    lithe_model_get_param / get_grad / get_attr_tensor tensor (retain it to keep it), names and
 *    strings — all dangle once the model is freed (lithe_model_free of the last reference frees
 *    the tree). Owned references: a backprop record retains the nodes it will update (free the
 *    model first and backprop_run still works), a value retains its tensors, a tensor its
 *    storage (a param tensor retained outlives its model). The Python package and the npm package
 *    enforce this: their handles keep what they point into alive, or fail cleanly after an
 *    explicit free (Python's Model.close(), JavaScript's dispose()).
 *  - No function calls abort() or exit() on bad input; assertions guard internal invariants
 *    only.
 *
 * Shapes are given in one vocabulary: X: (B, nI), W: (nO, nI) -> Y: (B, nO).
 */
#ifndef LITHE_H
#define LITHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(LITHE_STATIC)
#define LITHE_API
#elif defined(_WIN32)
#ifdef LITHE_BUILDING
#define LITHE_API __declspec(dllexport)
#else
#define LITHE_API __declspec(dllimport)
#endif
#else
#define LITHE_API __attribute__((visibility("default")))
#endif

#define LITHE_VERSION_MAJOR 0
#define LITHE_VERSION_MINOR 1
#define LITHE_VERSION_PATCH 0

/* "0.1.0". Thread-safe. */
LITHE_API const char *lithe_version(void);

/* ------------------------------------------------------------------------------------------
 * Errors
 * ---------------------------------------------------------------------------------------- */

typedef enum lithe_status {
    LITHE_OK = 0,
    LITHE_ERR_INVALID_ARG = 1, /* NULL object, bad enum, negative size, out-of-range index  */
    LITHE_ERR_SHAPE = 2,       /* shapes that do not fit together                             */
    LITHE_ERR_DTYPE = 3,       /* a dtype the operation does not take                         */
    LITHE_ERR_OOM = 4,         /* the allocator returned NULL                                 */
    LITHE_ERR_NOT_FOUND = 5,   /* unknown name: dim, param, attr, ref, layer, backend         */
    LITHE_ERR_STATE = 6,       /* right call at the wrong time: unset dim, missing param, ... */
    LITHE_ERR_UNSUPPORTED = 7, /* backend or feature not built or not available here          */
    LITHE_ERR_IO = 8,          /* a file could not be opened, read or written                 */
    LITHE_ERR_FORMAT = 9,      /* malformed or hostile input data                             */
    LITHE_ERR_VALUE = 10,      /* a number outside its domain (rate > 1, temperature < 0)     */
    LITHE_ERR_INTERNAL = 11    /* a bug in lithe; please report it with the message           */
} lithe_status;

/* A constant name for a status ("LITHE_ERR_SHAPE"); "LITHE_ERR_UNKNOWN" for values outside the
 * enum. Thread-safe; never NULL. */
LITHE_API const char *lithe_status_str(lithe_status status);

/* The message of the last failed call on this thread ("" if none). The text stays valid until
 * the next lithe call on this thread. Thread-safe (per-thread storage). */
LITHE_API const char *lithe_last_error(void);

/* Clears this thread's last error. */
LITHE_API void lithe_clear_error(void);

/* ------------------------------------------------------------------------------------------
 * Memory: one allocator hook for every byte lithe allocates on the host, with two exceptions:
 * the CPU thread pool's bookkeeping (made once, when the pool is built; its threads' stacks come
 * from the C library in any case) and the CUDA backend's per-device bookkeeping (its context and
 * the index of its device-block cache, which live with the device; docs/options.md, "State").
 * ---------------------------------------------------------------------------------------- */

typedef struct lithe_allocator {
    void *(*malloc_fn)(void *user, size_t size);            /* NULL on failure     */
    void *(*realloc_fn)(void *user, void *ptr, size_t size); /* NULL on failure     */
    void (*free_fn)(void *user, void *ptr);                  /* must accept NULL    */
    void *user;
} lithe_allocator;

/* Installs `alloc` (copied) or, with NULL, restores the C library's allocator. Call it while no
 * lithe object exists: memory must be freed by the allocator that made it.
 * With the C library's allocator the CPU backend keeps freed tensor blocks (bounded, 256 MiB
 * natively, 32 MiB in WebAssembly) for reuse by later tensors of their size, and the GEMM keeps
 * its packing workspaces; with an allocator installed here it keeps neither, so that allocator
 * sees every allocation and free (tests/test_alloc_hook.c). This call first gives the kept blocks
 * back to the allocator that made them.
 * Returns LITHE_ERR_INVALID_ARG if one of the three functions is NULL. Not thread-safe. */
LITHE_API lithe_status lithe_set_allocator(const lithe_allocator *alloc);

/* ------------------------------------------------------------------------------------------
 * Tuning knobs: options of the runtime and its backends, each also an environment variable that
 * overrides it (docs/options.md has the one table of variables, their values and what they are
 * for). NULL or "": the built-in choice. Values are copied (at most 31 characters).
 * ---------------------------------------------------------------------------------------- */
typedef struct lithe_options {
    size_t size;                /* sizeof(lithe_options): lithe_options_defaults() sets it       */
    const char *cpu_isa;        /* LITHE_CPU_ISA: the CPU kernels' ISA, "scalar", "sse2", "avx2",
                                 * "avx512" (x86-64); read at the first operation                 */
    const char *graph_fuse;     /* LITHE_GRAPH_FUSE: "0" runs imported graphs node by node        */
    const char *graph_profile;  /* LITHE_GRAPH_PROFILE: "1" times every graph node (at load)     */
    const char *conv_rows;      /* LITHE_CONV_ROWS: "filters" | "pixels", the CPU conv's GEMM rows */
    const char *gemm_avx512_mr; /* LITHE_GEMM_AVX512_MR: "14" | "12" | "8" | "7" | "4" | "2"      */
    const char *vulkan_gemm;    /* LITHE_VULKAN_GEMM: "auto", "basic", "basic-64", "basic-128",
                                 * "tiled", "subgroup[:N]"                                        */
    const char *xnnpack;        /* LITHE_XNNPACK: "0" prepares no XNNPACK operator               */
    const char *no_mmap;        /* LITHE_NO_MMAP: set: lithe_model_load reads instead of mapping */
} lithe_options;

LITHE_API lithe_options lithe_options_defaults(void);
/* Sets every knob (copied). Call it before anything else, as lithe_set_allocator. Statuses:
 * LITHE_ERR_INVALID_ARG (NULL, or a size this lithe does not know), LITHE_ERR_VALUE (a value too
 * long). Not thread-safe. */
LITHE_API lithe_status lithe_set_options(const lithe_options *options);

/* ------------------------------------------------------------------------------------------
 * Backends ("Ops"): a table of primitives plus its context, found by name.
 * ---------------------------------------------------------------------------------------- */

typedef struct lithe_backend lithe_backend;

/* Finds a backend by name: "cpu" is always present. Names of backends lithe knows but that are
 * not built into this library, or whose device is absent, give LITHE_ERR_UNSUPPORTED with a
 * message that says why; other names give LITHE_ERR_NOT_FOUND listing the available ones.
 * "vulkan" is the device named by the environment variable LITHE_VULKAN_DEVICE (an index in the
 * loader's order, or part of the device's name), else the first discrete GPU, then integrated,
 * virtual and CPU devices (Mesa's lavapipe); "vulkan:<index>" or "vulkan:<name part>" picks one
 * explicitly. The Vulkan loader is libvulkan.so.1 (or the platform's usual name), or the file
 * named by the environment variable LITHE_VULKAN_LOADER when set. No Vulkan loader, no device, or
 * a device lacking what lithe needs is LITHE_ERR_UNSUPPORTED saying which. Tensors on a Vulkan backend live in device memory:
 * lithe_tensor_data gives NULL and DLPack export refuses them; lithe_tensor_read / write copy
 * (and synchronise). Its work is recorded and submitted at reads and syncs, so one thread at a
 * time may use a Vulkan backend's tensors and models.
 * "webgpu" exists only in the npm package's WebGPU module (lithe-webgpu.wasm: init({ device:
 * 'webgpu' })), whose JavaScript side holds the GPUDevice; elsewhere, or without a device, it is
 * LITHE_ERR_UNSUPPORTED saying why. Its tensors live in GPU buffers (read / write copy); a read
 * waits for the GPU asynchronously, so a call that reads back must come through the package's
 * asynchronous API (docs/backends.md, "WebGPU").
 * "cuda" is the CUDA device numbered by the environment variable LITHE_CUDA_DEVICE (default 0);
 * "cuda:<index>" picks one explicitly; either way the backend's name is "cuda:<index>", one
 * instance per device, with its own stream, cuBLAS handle and caching device allocator. The CUDA
 * code lives in a module, liblithe_cuda.so, loaded on the first request (beside this library, in
 * its build tree, on the loader's path, or the file named by LITHE_CUDA_MODULE): a missing
 * module, CUDA runtime or cuBLAS, no driver or no GPU is LITHE_ERR_UNSUPPORTED with the loader's or
 * the driver's message. Every primitive runs on the device (no silent CPU fall-back); GEMM is
 * cuBLAS in IEEE fp32 (never TF32). Work is queued on the backend's stream and waited for at reads
 * (lithe_tensor_read), syncs and the reductions the host needs; lithe_tensor_data gives NULL, and
 * DLPack exchanges kDLCUDA tensors without a copy. One thread at a time may use a CUDA backend's
 * tensors and models.
 * The backend is owned by the library (never freed). Thread-safe. */
LITHE_API lithe_status lithe_backend_get(const char *name, lithe_backend **out);

/* Sets how many threads the "cpu" backend computes with: n >= 1 threads in all (the calling thread
 * and n - 1 workers), or 0 for the default: the LITHE_NUM_THREADS environment variable when set,
 * else every core. Until this is called the default applies (its workers start at the first large
 * operation). Results are bit-identical for every thread count: work is split by output, never
 * inside a sum. Builds without threads (the WASI command, the npm package's one-thread modules)
 * accept only 0 and 1; the npm package's threads module has as many threads as the JavaScript
 * loader started workers for, plus the caller (lithe.init({ threads })), and refuses more.
 * Call it while no other thread computes on the CPU backend. Statuses: LITHE_ERR_INVALID_ARG (n < 0
 * or > 1024), LITHE_ERR_UNSUPPORTED (another backend, or threads this build lacks; a worker that
 * could not start), LITHE_ERR_OOM. The CPU backend's kernels use this CPU's widest vector
 * instructions (x86-64: AVX-512, AVX2 or SSE2, chosen at the first operation); lithe_options'
 * cpu_isa (LITHE_CPU_ISA=scalar|sse2|avx2|avx512) forces one, e.g. to compare with the scalar
 * kernels: results then differ from the default in the last bits, as FMA and plain multiply-add
 * do (which activations and reductions then match bit for bit is in docs/performance.md). */
LITHE_API lithe_status lithe_backend_set_threads(lithe_backend *backend, int n);

/* The number of threads the backend computes with (1 for backends without a thread count). */
LITHE_API int lithe_backend_threads(const lithe_backend *backend);

/* Waits until the work queued on `backend` (its stream, for "cuda") has finished. A no-op on the
 * CPU. Statuses: LITHE_ERR_INVALID_ARG, the backend's errors. */
LITHE_API lithe_status lithe_backend_sync(lithe_backend *backend);

/* The native stream the backend queues its work on (a cudaStream_t for "cuda"), for DLPack's
 * stream protocol: a producer handing lithe a kDLCUDA tensor makes its data ready on this stream.
 * LITHE_ERR_UNSUPPORTED for backends without one (cpu, vulkan). */
LITHE_API lithe_status lithe_backend_stream(const lithe_backend *backend, void **stream);

/* The backend's registered name ("cpu"). Thread-safe. */
LITHE_API const char *lithe_backend_name(const lithe_backend *backend);

/* A backend's tensor memory: bytes handed out to live tensors now, their high-water mark (since
 * the last lithe_backend_reset_peak), bytes kept for reuse (the CPU backend's caching allocator),
 * and how many blocks it has taken from the allocator so far (a count that stays put while every
 * tensor comes from reused blocks: tests/test_train_memory.c). The CPU backend answers every field
 * (for all CPU instances together); CUDA all but peak; others LITHE_ERR_UNSUPPORTED. */
typedef struct lithe_backend_memory_info {
    size_t in_use, peak, cached, n_allocs;
} lithe_backend_memory_info;
LITHE_API lithe_status lithe_backend_memory(const lithe_backend *backend, lithe_backend_memory_info *out);
/* Restarts the peak from the bytes in use now. */
LITHE_API lithe_status lithe_backend_reset_peak(const lithe_backend *backend);

/* Writes the names of the backends compiled into this library, comma-separated, to buf
 * (truncated to cap bytes, always NUL-terminated when cap > 0). Returns the full length. */
LITHE_API size_t lithe_backend_list(char *buf, size_t cap);

/* ------------------------------------------------------------------------------------------
 * Tensors
 * ---------------------------------------------------------------------------------------- */

typedef enum lithe_dtype {
    LITHE_F32 = 0,
    LITHE_F16 = 1,  /* storage; the dense layers compute with F16 / BF16 / quantized I8 / U8 W */
    LITHE_BF16 = 2, /* storage (see lithe_model_compress_weights)                                */
    LITHE_I32 = 3,
    LITHE_I64 = 4,
    LITHE_U64 = 5,
    LITHE_U8 = 6,
    LITHE_U32 = 7,  /* hash keys (Thinc's ops.hash returns uint32)               */
    LITHE_I8 = 8    /* quantized weights (lithe_tensor_quantize)                 */
} lithe_dtype;

#define LITHE_MAX_DIMS 8

/* An n-dimensional array: a DLTensor-shaped descriptor (device, dtype, shape, strides in
 * elements, offset) over refcounted storage. Views share storage. Opaque. */
typedef struct lithe_tensor lithe_tensor;

/* Size of one element in bytes (f32: 4, bf16: 2, u8: 1); 0 for values outside the enum. */
LITHE_API size_t lithe_dtype_size(lithe_dtype dtype);
/* "float32", "float16", "bfloat16", "int32", "int64", "uint64", "uint8", "uint32", "int8"; "?"
 * otherwise. */
LITHE_API const char *lithe_dtype_name(lithe_dtype dtype);

/* A new zero-filled, contiguous tensor on `backend` (NULL: "cpu"). ndim is 0..LITHE_MAX_DIMS;
 * every extent must be >= 0 and the byte size must fit in size_t.
 * Statuses: LITHE_ERR_INVALID_ARG (ndim, negative extent, bad dtype), LITHE_ERR_VALUE (size
 * overflow), LITHE_ERR_OOM. The caller owns *out (release with lithe_tensor_release). */
LITHE_API lithe_status lithe_tensor_new(lithe_backend *backend, lithe_dtype dtype, int ndim,
                                        const int64_t *shape, lithe_tensor **out);

/* A new CPU tensor holding a copy of `data` (contiguous, row-major, numel * dtype size bytes).
 * Same statuses as lithe_tensor_new. */
LITHE_API lithe_status lithe_tensor_from_data(lithe_dtype dtype, int ndim, const int64_t *shape,
                                              const void *data, lithe_tensor **out);

/* Adds a reference and returns `t`. NULL gives NULL. Not thread-safe for one tensor. */
LITHE_API lithe_tensor *lithe_tensor_retain(lithe_tensor *t);
/* Drops a reference; the last one frees the descriptor, and the storage when no view is left
 * (running a borrowed DLPack tensor's deleter exactly once). Accepts NULL. */
LITHE_API void lithe_tensor_release(lithe_tensor *t);

LITHE_API lithe_dtype lithe_tensor_dtype(const lithe_tensor *t);
LITHE_API int lithe_tensor_ndim(const lithe_tensor *t);
/* Borrowed arrays of ndim extents / strides (strides in elements, like DLPack). */
LITHE_API const int64_t *lithe_tensor_shape(const lithe_tensor *t);
LITHE_API const int64_t *lithe_tensor_strides(const lithe_tensor *t);
LITHE_API int64_t lithe_tensor_numel(const lithe_tensor *t);
LITHE_API bool lithe_tensor_is_contiguous(const lithe_tensor *t);
/* The backend whose memory holds the data. */
LITHE_API lithe_backend *lithe_tensor_backend(const lithe_tensor *t);
/* Pointer to the first element when the data lives in host memory, else NULL. Borrowed. */
LITHE_API void *lithe_tensor_data(const lithe_tensor *t);

/* Copies the tensor's elements, in row-major order, into `dst` (`cap` bytes), from any backend.
 * Statuses: LITHE_ERR_VALUE if cap is smaller than numel * dtype size. */
LITHE_API lithe_status lithe_tensor_read(const lithe_tensor *t, void *dst, size_t cap);
/* Copies `nbytes` (= numel * dtype size, row-major) from `src` into the tensor, any backend. */
LITHE_API lithe_status lithe_tensor_write(lithe_tensor *t, const void *src, size_t nbytes);

/* A view of elements [start, stop) along `axis`: no copy, shares storage.
 * Statuses: LITHE_ERR_INVALID_ARG for an axis or a range out of bounds (0 <= start <= stop <=
 * extent). */
LITHE_API lithe_status lithe_tensor_slice(lithe_tensor *t, int axis, int64_t start, int64_t stop,
                                          lithe_tensor **out);
/* A view with a new shape and the same number of elements; one extent may be -1 (inferred).
 * Requires a contiguous tensor. Statuses: LITHE_ERR_SHAPE (numel differs, or not contiguous),
 * LITHE_ERR_INVALID_ARG (ndim, more than one -1). */
LITHE_API lithe_status lithe_tensor_reshape(lithe_tensor *t, int ndim, const int64_t *shape,
                                            lithe_tensor **out);
/* A new contiguous tensor of dtype `dtype` on the same backend, converting values (f16/bf16
 * storage to f32 exactly; f32 to f16/bf16 with round-to-nearest-even on the bits, overflow to
 * +-inf, f16 subnormals kept, NaN kept; ints to f32 with C's conversion; f32 to ints truncating
 * toward zero and saturating: NaN gives 0, out-of-range values the nearest end of the range).
 * uint64 and uint32 (ids, hash keys) do not convert. Statuses: LITHE_ERR_DTYPE for conversions not
 * listed. */
LITHE_API lithe_status lithe_tensor_cast(const lithe_tensor *t, lithe_dtype dtype,
                                         lithe_tensor **out);

/* --- Quantized tensors ------------------------------------------------------------------
 * An int8 / uint8 tensor may carry quantization parameters: value = scale[c] * (q - zero_point[c]),
 * c the index along `axis` (-1: one scale and zero point for the whole tensor; 0: one per row,
 * i.e. per output channel of a (nO, nI) weight). lithe_tensor_cast to float32 applies them. */

/* A new CPU tensor of dtype LITHE_I8 (symmetric: zero points 0, q = round(x / scale) clamped to
 * [-127, 127], scale = max|x| / 127 per row for axis 0 or over the whole tensor for axis -1; an
 * all-zero row gets scale 1) or LITHE_U8 (asymmetric: the range [min(x, 0), max(x, 0)] onto
 * [0, 255], zero point round(-min / scale)) from a contiguous float32 host tensor t. Statuses:
 * LITHE_ERR_DTYPE (t not float32, dtype not I8 / U8), LITHE_ERR_INVALID_ARG (axis not -1 or 0,
 * t 0-d with axis 0), LITHE_ERR_VALUE (a NaN or infinite value). */
LITHE_API lithe_status lithe_tensor_quantize(const lithe_tensor *t, lithe_dtype dtype, int axis,
                                             lithe_tensor **out);
/* The quantization parameters of t: *axis (-1 or 0), *n (1, or t's extent along axis 0), and
 * borrowed arrays of n scales and n zero points (valid while t lives). LITHE_ERR_NOT_FOUND when t
 * carries none. */
LITHE_API lithe_status lithe_tensor_quant_params(const lithe_tensor *t, int *axis, int64_t *n,
                                                 const float **scale, const int32_t **zero_point);
/* Sets t's quantization parameters (copied) on an I8 or U8 CPU tensor: every scale finite and
 * > 0, zero points inside the dtype's range ([-128, 127] / [0, 255]), n equal to 1 (axis -1) or to
 * t's extent along axis 0. Statuses: LITHE_ERR_DTYPE, LITHE_ERR_INVALID_ARG, LITHE_ERR_VALUE
 * (naming the bad scale or zero point), LITHE_ERR_SHAPE (n). */
LITHE_API lithe_status lithe_tensor_set_quant_params(lithe_tensor *t, int axis, int64_t n, const float *scale,
                                                     const int32_t *zero_point);

/* A new contiguous copy of t (any backend, any strides) on `backend` (NULL: the CPU, i.e. a host
 * copy — what DLPack export of a device tensor needs). Synchronises when t is on a device. An I8 /
 * U8 tensor's quantization parameters come along (they live on the host beside the storage, so an
 * int8 weight moved to a device keeps its scales; a view of part of a quantized tensor is refused).
 * The caller owns the result. Statuses: LITHE_ERR_INVALID_ARG, LITHE_ERR_OOM, the backends' errors. */
LITHE_API lithe_status lithe_tensor_to_backend(const lithe_tensor *t, lithe_backend *backend, lithe_tensor **out);

/* --- DLPack, zero-copy both ways ---------------------------------------------------------
 * `managed` is a `DLManagedTensor *` (legacy, dlpack <= 0.8) or, with versioned = true, a
 * `DLManagedTensorVersioned *` (dlpack 1.x; declared in lithe_dlpack.h for headers that lack
 * it). from_dlpack takes ownership of `managed` on success only: its deleter runs once when the
 * last view of the storage is released; on failure the caller still owns it. Supported:
 * kDLCPU memory, and kDLCUDA memory (on the "cuda:<device_id>" backend, in a library built with
 * CUDA; LITHE_ERR_UNSUPPORTED otherwise), dtypes matching lithe_dtype, any strides. Stream
 * semantics (DLPack's protocol): the producer must have made a CUDA tensor's data ready for work
 * on the backend's stream (lithe_backend_stream; Python's __dlpack__(stream=...) does it).
 * A versioned tensor with a major version other than 1 is refused (LITHE_ERR_UNSUPPORTED), as is
 * a read-only one (lithe writes to parameters and gradients in place).
 * to_dlpack returns a new managed tensor that keeps `t` alive until its deleter is called; its
 * data pointer equals lithe_tensor_data(t) for host memory, and is the device pointer of a
 * "cuda" tensor (device kDLCUDA, id = the device index); a consumer on another stream first waits
 * for lithe's work (lithe_backend_sync). Tensors in a "vulkan" backend's memory are refused with
 * LITHE_ERR_UNSUPPORTED naming the backend: export a host copy instead
 * (lithe_tensor_to_backend(t, NULL, &copy)). */
LITHE_API lithe_status lithe_tensor_from_dlpack(void *managed, bool versioned, lithe_tensor **out);
LITHE_API lithe_status lithe_tensor_to_dlpack(lithe_tensor *t, bool versioned, void **managed_out);
/* The DLPack device of t's memory (DLDeviceType, device id), what Python's __dlpack_device__
 * reports: (kDLCPU = 1, 0) for host memory, (kDLCUDA = 2, the device index) for "cuda",
 * (kDLVulkan = 7, the device's index in the Vulkan loader's order, as "vulkan:<index>" names it)
 * for "vulkan" -- also where lithe_tensor_to_dlpack refuses the memory (Vulkan's). Both outputs are
 * 0 on failure. Statuses: LITHE_ERR_INVALID_ARG (NULLs), LITHE_ERR_UNSUPPORTED (a backend without
 * a DLPack device type). Thread-safe. */
LITHE_API lithe_status lithe_tensor_dlpack_device(const lithe_tensor *t, int32_t *device_type, int32_t *device_id);

/* ------------------------------------------------------------------------------------------
 * Values: what flows between layers.
 * ---------------------------------------------------------------------------------------- */

typedef enum lithe_value_kind {
    LITHE_VALUE_TENSOR = 0,
    LITHE_VALUE_RAGGED = 1, /* Thinc's Ragged: data (N, ...), lengths int32 (B,), sum = N       */
    LITHE_VALUE_PADDED = 2, /* Thinc's Padded: data (T, B, ...), size_at_t int32 (T,),
                               lengths int32 (B,), indices int32 (B,)                        */
    LITHE_VALUE_LIST = 3,
    LITHE_VALUE_TUPLE = 4,
    LITHE_VALUE_STRINGS = 5 /* n UTF-8 strings (one of Thinc's Sequence[str]), host memory        */
} lithe_value_kind;

typedef struct lithe_value lithe_value;

/* Each constructor retains what it is given (the caller keeps its own references); a strided
 * (non-contiguous) lengths, size_at_t or indices vector is copied into a contiguous one.
 * Statuses: LITHE_ERR_DTYPE / LITHE_ERR_SHAPE when Ragged or Padded fields disagree (lengths
 * not int32 1-D, lengths not summing to the rows of data, size_at_t longer than data, ...). */
LITHE_API lithe_status lithe_value_tensor(lithe_tensor *t, lithe_value **out);
LITHE_API lithe_status lithe_value_ragged(lithe_tensor *data, lithe_tensor *lengths,
                                          lithe_value **out);
LITHE_API lithe_status lithe_value_padded(lithe_tensor *data, lithe_tensor *size_at_t,
                                          lithe_tensor *lengths, lithe_tensor *indices,
                                          lithe_value **out);
/* A list or tuple of n items (n may be 0; items may be NULL only if n is 0). */
LITHE_API lithe_status lithe_value_list(size_t n, lithe_value *const *items, lithe_value **out);
LITHE_API lithe_status lithe_value_tuple(size_t n, lithe_value *const *items, lithe_value **out);

LITHE_API lithe_value *lithe_value_retain(lithe_value *v);
LITHE_API void lithe_value_release(lithe_value *v);

LITHE_API lithe_value_kind lithe_value_kind_of(const lithe_value *v);
/* Borrowed: the tensor of a TENSOR value, the data of a RAGGED or PADDED value; else NULL. */
LITHE_API lithe_tensor *lithe_value_get_tensor(const lithe_value *v);
/* Borrowed fields by Thinc's names: "data", "lengths" (Ragged, Padded), "size_at_t",
 * "indices" (Padded). NULL for a field the kind lacks. */
LITHE_API lithe_tensor *lithe_value_field(const lithe_value *v, const char *name);
/* Number of items of a LIST or TUPLE, of strings of a STRINGS value (0 for other kinds), and a
 * borrowed item (NULL for STRINGS: see lithe_value_string). */
LITHE_API size_t lithe_value_len(const lithe_value *v);
LITHE_API lithe_value *lithe_value_item(const lithe_value *v, size_t i);

/* A STRINGS value: copies of n NUL-terminated UTF-8 strings (n may be 0; s may be NULL only if n
 * is 0), the input of strings2arrays and remap_ids (a LIST of STRINGS values is Thinc's
 * Sequence[Sequence[str]]). The bytes are kept as given (not validated as UTF-8); they live in
 * host memory. Statuses: LITHE_ERR_INVALID_ARG (NULLs), LITHE_ERR_OOM. */
LITHE_API lithe_status lithe_value_strings(size_t n, const char *const *s, lithe_value **out);
/* Borrowed: string i of a STRINGS value (NUL-terminated, valid while the value lives), and its
 * length in bytes in *len (may be NULL); NULL for another kind or i out of range. */
LITHE_API const char *lithe_value_string(const lithe_value *v, size_t i, size_t *len);

/* ------------------------------------------------------------------------------------------
 * Random numbers: Philox4x32-10, counter-based, the same bits on every platform and backend.
 * ---------------------------------------------------------------------------------------- */

typedef struct lithe_rng {
    uint64_t key;     /* the seed        */
    uint64_t counter; /* blocks consumed */
} lithe_rng;

/* One Philox4x32-10 block: four 32-bit words for (counter, key). Pure; thread-safe. */
LITHE_API void lithe_philox4x32(const uint32_t counter[4], const uint32_t key[2], uint32_t out[4]);
/* n uniform floats in [0, 1) with 24 random bits each: word i of the stream is word i % 4 of
 * the block at counter (rng->counter + i / 4); the counter advances past the blocks used. */
LITHE_API void lithe_rng_uniform(lithe_rng *rng, float *out, size_t n);
/* n standard-normal floats by Box-Muller over pairs of the uniform stream (u1, u2 from words
 * 2k and 2k+1; cos for the first of a pair, sin for the second), advancing as lithe_rng_uniform
 * does for 2 * ceil(n / 2) uniforms. */
LITHE_API void lithe_rng_normal(lithe_rng *rng, float *out, size_t n);

/* ------------------------------------------------------------------------------------------
 * Models: Thinc's node.
 * ---------------------------------------------------------------------------------------- */

typedef struct lithe_model lithe_model;
typedef struct lithe_backprop lithe_backprop;
typedef struct lithe_optimizer lithe_optimizer;

/* Thinc's tri-state has_dim / has_param / has_ref: the name is not registered (NO), registered
 * with a value (YES), registered but unset (UNSET; Thinc's None). */
/* A node's foreign graph (Thinc's shims: an imported ONNX / TF.js graph, which arrives with the
 * graph-import work). Opaque; owned by its node. Every layer of this release has none. */
typedef struct lithe_shim lithe_shim;
typedef enum lithe_has { LITHE_HAS_NO = 0, LITHE_HAS_YES = 1, LITHE_HAS_UNSET = 2 } lithe_has;

typedef enum lithe_attr_type {
    LITHE_ATTR_NONE = 0, /* not present */
    LITHE_ATTR_INT = 1,
    LITHE_ATTR_FLOAT = 2,
    LITHE_ATTR_BOOL = 3,
    LITHE_ATTR_STR = 4,
    LITHE_ATTR_TENSOR = 5,
    LITHE_ATTR_NULL = 6 /* present, with Thinc's value None */
} lithe_attr_type;

/* --- Layers. A dim of 0 means "unset" (Thinc's None): initialize infers it. ---------------- */

/* Weight initializers, Thinc's (thinc/initializers.py), drawn from the node's Philox stream.
 * For a shape (d0, d1, ...) Thinc's fan formulas read d0 and d1 only: glorot scale
 * sqrt(6 / (d0 + d1)) (uniform) or sqrt(2 / (d0 + d1)) (normal std), he sqrt(6 / d1) /
 * sqrt(2 / d1), lecun sqrt(3 / d1) / sqrt(1 / d1). Maxout's W (nO, nP, nI) therefore gets
 * glorot's scale from nO and nP, as in Thinc. UNIFORM is U(-0.1, 0.1). NORMAL reproduces Thinc's
 * normal_init quirk: Thinc passes its `mean` argument as numpy's *scale*, so with its default
 * (mean 0) every weight is 0 — and so is every weight here. */
typedef enum lithe_init {
    LITHE_INIT_DEFAULT = 0, /* the layer's own default (Thinc's init_W / init_b = None) */
    LITHE_INIT_GLOROT_UNIFORM,
    LITHE_INIT_GLOROT_NORMAL,
    LITHE_INIT_HE_UNIFORM,
    LITHE_INIT_HE_NORMAL,
    LITHE_INIT_LECUN_UNIFORM,
    LITHE_INIT_LECUN_NORMAL,
    LITHE_INIT_UNIFORM,
    LITHE_INIT_ZERO,
    LITHE_INIT_NORMAL
} lithe_init;

/* Fills out[n] for an array of shape `shape` (ndim >= 1; the fan dims are shape[0] and
 * shape[1], or shape[0] twice for 1-D) by `kind`, advancing rng. LITHE_INIT_DEFAULT is
 * LITHE_ERR_VALUE here. Statuses: LITHE_ERR_INVALID_ARG for NULL pointers or ndim < 1. */
LITHE_API lithe_status lithe_init_fill(lithe_init kind, lithe_rng *rng, int ndim, const int64_t *shape,
                                       float *out);

typedef struct lithe_dense_opts {
    int64_t nO, nI;
    /* > 0 chains Dropout(rate) after the layer, as Thinc's `dropout=` does. 0 means Thinc's
     * None (no Dropout node). Not for Linear, Sigmoid (Thinc has no such argument). */
    float dropout;
    /* Thinc's normalize=True: chain(layer, LayerNorm(nI=nO)) (before any Dropout). */
    bool normalize;
    /* Maxout only: pieces; 0 is Thinc's default 3. */
    int64_t nP;
    /* LITHE_INIT_DEFAULT: the layer's Thinc default (see lithe_dense). */
    lithe_init init_W, init_b;
} lithe_dense_opts;

typedef struct lithe_softmax_opts {
    int64_t nO, nI;
    bool unnormalized_outputs; /* Thinc's normalize_outputs=False: predict returns logits */
    float temperature;         /* 0 means Thinc's default 1.0; negative is LITHE_ERR_VALUE  */
    bool version1;             /* "Softmax.v1": no normalize_outputs / temperature arguments */
} lithe_softmax_opts;

/* "Linear.v1": Y = X·Wᵀ + b. W (nO, nI) glorot-uniform, b (nO,) zeros. opts may be NULL. */
LITHE_API lithe_status lithe_linear(const lithe_dense_opts *opts, lithe_model **out);
/* "Relu.v1": Y = relu(X·Wᵀ + b); with opts->dropout > 0, chain(relu, Dropout). */
LITHE_API lithe_status lithe_relu(const lithe_dense_opts *opts, lithe_model **out);
/* "Softmax.v2": Y = softmax((X·Wᵀ + b) / temperature). W and b zero-initialized, as Thinc's.
 * Backprop takes dY as the gradient of the loss with respect to the logits times temperature
 * (Thinc's convention: pair it with CategoricalCrossentropy). Statuses: LITHE_ERR_VALUE for
 * temperature < 0. */
LITHE_API lithe_status lithe_softmax(const lithe_softmax_opts *opts, lithe_model **out);
/* "Dropout.v1": at training, Y = X * mask, mask = (u >= rate) / (1 - rate); identity at
 * predict time. attrs: dropout_rate (float), is_enabled (bool). Statuses: LITHE_ERR_VALUE for
 * rate outside [0, 1]. */
LITHE_API lithe_status lithe_dropout(float rate, lithe_model **out);
/* "chain.v1": Y = layers[n-1](...layers[0](X)). Takes ownership of the n >= 1 layers, also on
 * failure. A layer may appear twice or in two trees (Thinc's shared layers). The node is named
 * by joining the layer names with ">>", as Thinc does.
 * Recomputation (trading time for memory): with the bool attr "recompute" set to true
 * (lithe_model_set_attr_bool; saved with the model), a training forward keeps only the chain's
 * input and runs its layers as at training but without records, so their activations are freed
 * as it goes; backprop runs the layers' forward again (the dropout layers' random streams rewound,
 * so the masks are the same) and then their backprops. Gradients are identical; the forward's
 * cost is paid twice. A model split into k recomputing chains keeps about 1/k of the activations
 * (tests/test_train_memory.c). An imported graph node takes the same attr and recomputes by
 * segment itself (see lithe_onnx_load_bytes below). */
LITHE_API lithe_status lithe_chain(size_t n, lithe_model *const *layers, lithe_model **out);

/* Any affine layer by its registered name: Y = act(X·Wᵀ + b), W (nO, nI), b (nO,), with
 * Thinc's node name, defaults and dims:
 *   "Linear.v1" (linear, no act), "Relu.v1" (relu), "Mish.v1" (mish), "Swish.v1" (swish),
 *   "Gelu.v1" (gelu), "Dish.v1" (dish), "HardSwish.v1" (hardswish), "HardSwishMobilenet.v1"
 *   (hardswishmobilenet), "ClippedLinear.v1" (clipped_linear: slope 1, offset 0, [0, 1]),
 *   "HardSigmoid.v1" (clipped_linear: slope 0.2, offset 0.5, [0, 1]), "HardTanh.v1"
 *   (clipped_linear: [-1, 1]), "ReluK.v1" (clipped_linear: [0, 6]), "Sigmoid.v1" (sigmoid),
 *   "Maxout.v1" (maxout: W (nO, nP, nI), b (nO, nP), Y = max over the nP pieces).
 * Default init_W: glorot-uniform for Linear, Relu, Mish, Maxout and the clipped_linear family;
 * he-normal for Swish, Gelu, Dish, HardSwish, HardSwishMobilenet; zeros for Sigmoid. init_b:
 * zeros. clipped_linear nodes carry Thinc's attrs slope, offset, min_val, max_val (floats).
 * Statuses: LITHE_ERR_VALUE for an unknown name (the message lists the known ones), negative
 * dims, dropout outside [0, 1], dropout or normalize where Thinc's layer has no such argument. */
LITHE_API lithe_status lithe_dense(const char *layer, const lithe_dense_opts *opts, lithe_model **out);
/* "ClippedLinear.v1" with explicit parameters: Y = clip(slope * (X·Wᵀ + b) + offset, min_val,
 * max_val). Statuses: as lithe_dense, and LITHE_ERR_VALUE for slope == 0 or min_val > max_val. */
LITHE_API lithe_status lithe_clipped_linear(const lithe_dense_opts *opts, float slope, float offset, float min_val,
                                            float max_val, lithe_model **out);
/* "MultiSoftmax.v1": one affine layer (W (sum nOs, nI), b zeros); attr nOs (an int64 tensor:
 * Thinc's tuple). As Thinc 8.1.7 has it, Y is the LOGITS: Thinc's forward applies ops.softmax to
 * each column slice with inplace=True, which 8.1.7 ignores, so the group softmax is lost and a
 * Thinc model predicts logits; lithe keeps that, so Thinc's models predict the same here. The
 * corrected form, a softmax over each group of nOs[i] columns, is the bool attr "softmax_groups"
 * set to true (lithe_model_set_attr_bool; saved with the model; absent means false). Backprop, as
 * Softmax's, takes dY as the loss gradient wrt the logits, either way (Thinc's). */
LITHE_API lithe_status lithe_multisoftmax(size_t n, const int64_t *nOs, int64_t nI, lithe_model **out);
/* "LayerNorm.v1": Y = G * (X - mean) / sqrt(var + 1e-8) + b over each row; G (nI,) ones, b (nI,)
 * zeros; nO = nI (inferred from the sample X). nI 0 means unset. */
LITHE_API lithe_status lithe_layernorm(int64_t nI, lithe_model **out);
/* Parameter-free activations by registered name: "sigmoid_activation.v1", "Logistic.v1"
 * (node "logistic"; Thinc's deprecated alias), "softmax_activation.v1", and any other layer
 * lithe_layer_new builds without arguments ("tanh_activation.v1"). Any float32 array for the
 * sigmoids and tanh, (B, N) for the softmax. Statuses: LITHE_ERR_VALUE for an unknown name. */
LITHE_API lithe_status lithe_activation(const char *layer, lithe_model **out);
/* A layer that takes no arguments, by registered name: the parameter-free activations, among them
 * "tanh_activation.v1" (node "tanh_activation"; Y = tanh(X) on any float32 array: lithe's own,
 * the native twin of ONNX's Tanh, as Thinc 8.1.7 registers no tanh layer). Statuses:
 * LITHE_ERR_NOT_FOUND (no such layer), LITHE_ERR_UNSUPPORTED (the layer takes arguments: use its
 * constructor above). */
LITHE_API lithe_status lithe_layer_new(const char *layer, lithe_model **out);

typedef struct lithe_embed_opts {
    int64_t nO, nV;     /* 0: unset (Embed's nO may come from a sample Y); HashEmbed needs both */
    bool has_column;    /* Thinc's column=: chain(ints-getitem(column), layer) over (B, k) ids */
    int64_t column;
    float dropout;      /* > 0: Thinc's dropout=, one mask over the nO columns for every row */
    lithe_init init;    /* LITHE_INIT_DEFAULT: Thinc's uniform_init (U(-0.1, 0.1)) */
    bool has_seed;      /* HashEmbed: the `seed` attr; without it, the node id as in Thinc */
    uint32_t seed;
} lithe_embed_opts;

/* "Embed.v1": Y (B, nO) = E[ids], ids (B,) int32 / int64 / uint64, E (nV, nO). An id outside
 * [0, nV) is LITHE_ERR_VALUE naming it (numpy would wrap negatives; lithe refuses them). The
 * backprop accumulates into dE and returns zeros for the ids, as Thinc. */
LITHE_API lithe_status lithe_embed(const lithe_embed_opts *opts, lithe_model **out);
/* "HashEmbed.v1": Y = sum over the 4 keys of Thinc's ops.hash(ids as uint64, seed) % nV of E's
 * rows, bit-exact buckets with Thinc. attrs: seed (int), column, dropout_rate when given. */
LITHE_API lithe_status lithe_hash_embed(const lithe_embed_opts *opts, lithe_model **out);

/* "concatenate.v1": Y = hstack(layer_i(X)) over 2-D outputs with equal rows; dX sums the
 * layers' dX, each fed its own (contiguous) slice of dY. Named by joining the layer names with
 * "|". As Thinc: 0 layers give noop, 1 layer is returned as is, and a concatenate node given
 * first is extended. Takes ownership of the layers, also on failure. Arrays only for now. */
LITHE_API lithe_status lithe_concatenate(size_t n, lithe_model *const *layers, lithe_model **out);
/* "add.v1": Y = sum of layer_i(X) (n >= 2, equal shapes), dX = sum of their dX. An add node
 * given first is extended, as Thinc. Takes ownership of the layers, also on failure. */
LITHE_API lithe_status lithe_add(size_t n, lithe_model *const *layers, lithe_model **out);
/* "residual.v1": Y = X + layer(X), dX = dY + layer's dX; named "residual(<layer>)". Takes
 * ownership of layer, also on failure. */
LITHE_API lithe_status lithe_residual(lithe_model *layer, lithe_model **out);
/* "noop.v1": Y = X, dX = dY; holds the given layers (n may be 0) without calling them. */
LITHE_API lithe_status lithe_noop(size_t n, lithe_model *const *layers, lithe_model **out);
/* "clone.v1": chain(orig, copy of orig, ...) with n nodes and distinct weights (Thinc's clone;
 * n 0 gives noop, 1 gives orig). Takes ownership of orig, also on failure. */
LITHE_API lithe_status lithe_clone(lithe_model *orig, size_t n, lithe_model **out);
/* "tuplify.v1": Y = (layer_0(X), layer_1(X), ...) as a TUPLE value (n >= 2), dX = sum of the
 * layers' dX for a tuple gradient; named "tuple(a, b)". Takes ownership of the layers. */
LITHE_API lithe_status lithe_tuplify(size_t n, lithe_model *const *layers, lithe_model **out);
/* map_list (not registered by Thinc 8.1.7): the layer applied to each item of a LIST value; gradients item by item. */
LITHE_API lithe_status lithe_map_list(lithe_model *layer, lithe_model **out);

/* --- Sequences: Thinc's containers and the layers that move between them. --------------------
 * A list of arrays is a LIST value; Ragged and Padded are their value kinds (Thinc's fields).
 * The conversions are NumpyOps': flatten stacks rows (with `pad` zero rows around each non-empty
 * item), unflatten splits rows into views, list2padded sorts by length (longest first, ties by
 * the larger index first) into time-major (T, B, n) data. No params; each backprop is the
 * inverse conversion. A value of the wrong kind is LITHE_ERR_INVALID_ARG naming the layer. */
/* "list2ragged.v1": list -> Ragged.  "ragged2list.v1": Ragged -> list of views. */
LITHE_API lithe_status lithe_list2ragged(lithe_model **out);
LITHE_API lithe_status lithe_ragged2list(lithe_model **out);
/* "list2padded.v1": list of 2-d arrays -> Padded.  "padded2list.v1": Padded -> list. */
LITHE_API lithe_status lithe_list2padded(lithe_model **out);
LITHE_API lithe_status lithe_padded2list(lithe_model **out);
/* "list2array.v1": list -> the stacked rows (lengths kept for the backprop). */
LITHE_API lithe_status lithe_list2array(lithe_model **out);
/* The with_* combinators feed `layer` the container it takes from whichever the caller has, and
 * return the caller's kind (Thinc's conversions both ways, the backprop through the same pair).
 * Each takes ownership of layer, also on failure, and is named "<combinator>(<layer>)".
 * "with_array.v1": the layer sees the data array (lists flattened with `pad` rows between
 * items; Ragged and Padded data as is; a plain array passes straight through).
 * "with_array2d.v1": the same, Padded data reshaped to (T*B, n) and back. */
LITHE_API lithe_status lithe_with_array(lithe_model *layer, int64_t pad, lithe_model **out);
LITHE_API lithe_status lithe_with_array2d(lithe_model *layer, int64_t pad, lithe_model **out);
/* "with_ragged.v1" (from lists, Padded and (data, lengths) tuples), "with_padded.v1" (from lists,
 * Ragged, (T, B, n) arrays and 4-tuples), "with_list.v1" (from Ragged and Padded). */
LITHE_API lithe_status lithe_with_ragged(lithe_model *layer, lithe_model **out);
LITHE_API lithe_status lithe_with_padded(lithe_model *layer, lithe_model **out);
LITHE_API lithe_status lithe_with_list(lithe_model *layer, lithe_model **out);
/* "with_flatten.v1" / "with_flatten.v2" (version 1 or 2): a list of lists of items, the layer run
 * once on the flat list of items and its output nested back (v1: the layer returns one array,
 * split by rows; v2: it returns a list). The gradient goes back nested the same way (Thinc 8.1.7's
 * v1 splits it along the last axis, a bug lithe does not copy). */
LITHE_API lithe_status lithe_with_flatten(lithe_model *layer, int version, lithe_model **out);
/* "with_getitem.v1": on a TUPLE value, the layer replaces item idx (dX likewise). */
LITHE_API lithe_status lithe_with_getitem(int64_t idx, lithe_model *layer, lithe_model **out);
/* "with_reshape.v1": (B, T, n) arrays through a layer on (B*T, n) rows, output (B, T, nO). The
 * gradient is reshaped the same way (Thinc 8.1.7 reshapes it to the input's shape, which only
 * works when nO == nI). */
LITHE_API lithe_status lithe_with_reshape(lithe_model *layer, lithe_model **out);
/* "with_cpu.v1": the layer runs on the CPU backend whatever the model runs on; its inputs and
 * gradients are copied to the host and its outputs and dX back to the model's backend.
 * lithe_model_set_backend leaves the subtree under a with_cpu node on the CPU. */
LITHE_API lithe_status lithe_with_cpu(lithe_model *layer, lithe_model **out);
/* Thinc's array_getitem / floats_getitem / ints_getitem (variant "array", "floats", "ints"; nodes
 * "array-getitem", "floats-getitem", "ints-getitem"): Y = X[index] with `index` in numpy's syntax,
 * e.g. "[:, 3]", "[1::2]", "[[0, 2, 5]]", "[::-1, 1:4]" — per axis an int, a slice or one list of
 * ints; missing axes whole. dX puts dY back in zeros shaped like X (repeated list entries add,
 * where numpy's assignment, Thinc's, keeps the last); integer inputs get zeros. An empty X
 * passes through. LITHE_ERR_VALUE for other index text; an index out of bounds is
 * LITHE_ERR_SHAPE at forward. */
LITHE_API lithe_status lithe_array_getitem(const char *variant, const char *index, lithe_model **out);
/* Thinc's with_debug: callbacks run when the layer initializes, runs forward and runs its
 * backprop (each gets `user`, the node and what the call got; any may be NULL). As in Thinc no
 * node is added: the hooks are set on `layer` itself and *out is `layer` (hooks NULL removes
 * them). Hooks are never saved to files and not carried by lithe_model_copy. */
typedef struct lithe_debug_hooks {
    void *user;
    void (*on_init)(void *user, lithe_model *m, const lithe_value *X, const lithe_value *Y);
    void (*on_forward)(void *user, lithe_model *m, const lithe_value *X, bool is_train);
    void (*on_backprop)(void *user, lithe_model *m, const lithe_value *dY);
} lithe_debug_hooks;
LITHE_API lithe_status lithe_with_debug(lithe_model *layer, const lithe_debug_hooks *hooks, lithe_model **out);
/* Ragged (N, O) -> (B, O), a row per sequence: "reduce_sum.v1", "reduce_mean.v1" (zero-length
 * sequences give zero rows), "reduce_max.v1" (first maximum gets the gradient), "reduce_first.v1",
 * "reduce_last.v1" (those three refuse a zero-length sequence with LITHE_ERR_SHAPE naming it). */
LITHE_API lithe_status lithe_reduce_sum(lithe_model **out);
LITHE_API lithe_status lithe_reduce_mean(lithe_model **out);
LITHE_API lithe_status lithe_reduce_max(lithe_model **out);
LITHE_API lithe_status lithe_reduce_first(lithe_model **out);
LITHE_API lithe_status lithe_reduce_last(lithe_model **out);
/* "expand_window.v1": (N, I) -> (N, (2 window_size + 1) I), each row with its window_size
 * neighbours on either side within its sequence (one sequence for a 2-d array, the Ragged
 * value's lengths otherwise), zeros past the ends; Thinc's seq2col. window_size 0..1024. */
LITHE_API lithe_status lithe_expand_window(int64_t window_size, lithe_model **out);
/* Thinc's model.copy(): a deep copy — every node new (new ids), params, grads, dims and attrs
 * copied; a node shared inside the tree stays shared in the copy. Refs are not carried over,
 * as in Thinc 8.1. Statuses: LITHE_ERR_UNSUPPORTED for nodes with shims (no shim copies yet),
 * LITHE_ERR_OOM. */
LITHE_API lithe_status lithe_model_copy(const lithe_model *m, lithe_model **out);

/* Thinc's model.replace_node(old, new): every link to `old` from the other nodes of m's tree
 * (children and refs) now points to `new`, which gains a reference per child link; the
 * caller keeps its own reference to `new`. *replaced (may be NULL) says whether `old` was in the
 * tree. Names of the parents are not changed (as in Thinc). Statuses: LITHE_ERR_INVALID_ARG
 * (NULLs, old is the root), LITHE_ERR_OOM. */
LITHE_API lithe_status lithe_model_replace_node(lithe_model *m, lithe_model *old, lithe_model *replacement,
                                                bool *replaced);
/* Thinc's model.remove_node(node): removes it from every layers list of m's tree (dropping those
 * references), then clears refs that no longer point inside the tree. */
LITHE_API lithe_status lithe_model_remove_node(lithe_model *m, lithe_model *node);

/* --- Sparse, hashed and string inputs (Thinc's sparselinear, remap_ids, strings2arrays,
 * uniqued; spaCy's StaticVectors). -------------------------------------------------------- */
typedef struct lithe_sparse_linear_opts {
    int64_t nO;     /* 0: unset (taken from a sample Y at initialize) */
    int64_t length; /* hash slots per class (Thinc's length); 0: Thinc's 2^18; 1 .. 2^32 */
    bool v1;        /* "SparseLinear.v1": Thinc's old indexing, kept for models trained with it */
} lithe_sparse_linear_opts;
/* "SparseLinear.v2" (or .v1): X = TUPLE (keys uint64 (N,) (int64 bits accepted), values float32
 * (N,), lengths int32 (B,) host, summing to N) -> Y (B, nO) = b + sum over row b's keys of
 * value * (W[at(h0)] + W[at(h1)]), h0 / h1 the key's MurmurHash3_x86_32 with seeds 0 / 1,
 * bit-exact with Thinc. W (nO * length,) and b (nO,) start at zeros. v2: at(h) = class * length
 * + h % length; v1 (Thinc's bug #752): at(h) = (h & (length - 1)) + class, which only touches the
 * first length + nO - 1 weights. The attr v1_indexing (bool) chooses, as in Thinc. Backprop adds
 * into dW and db and returns the input tuple (as Thinc). Statuses: LITHE_ERR_VALUE (nO < 0,
 * length out of range); at forward LITHE_ERR_INVALID_ARG / _DTYPE / _SHAPE for a wrong tuple. */
LITHE_API lithe_status lithe_sparse_linear(const lithe_sparse_linear_opts *opts, lithe_model **out);
/* "strings2arrays.v1": a LIST of STRINGS values (Thinc's Sequence[Sequence[str]]; an empty LIST
 * item counts as no strings) -> a LIST of
 * (n_i, 1) uint64 arrays, each string's murmurhash hash_unicode (MurmurHash3_x86_32 of its UTF-8
 * bytes, seed 0, a signed int32 widened to uint64 as numpy does: negatives wrap). Backprop
 * returns an empty LIST (Thinc returns []). Runs on the host. */
LITHE_API lithe_status lithe_strings2arrays(lithe_model **out);
typedef struct lithe_remap_ids_opts {
    int version;                 /* 1 ("remap_ids.v1") or 2 ("remap_ids.v2"); 0 means 2 */
    size_t n;                    /* entries of the mapping table (Thinc's mapping_table dict) */
    const int64_t *int_keys;     /* the keys: ints or ... (one of the two when n > 0) */
    const char *const *str_keys; /* ... UTF-8 strings */
    const int64_t *values;       /* n values */
    bool no_table;               /* v2: mapping_table None (forward refuses, as Thinc) */
    int64_t default_value;       /* Thinc's default= (0) */
    bool has_column;             /* v2: column= picks X[:, column] of (B, k) ids */
    int64_t column;
    lithe_dtype dtype;           /* v1's dtype=: LITHE_I32 (Thinc's "i", the default; 0 means it),
                                    LITHE_I64 or LITHE_U64 */
} lithe_remap_ids_opts;
/* "remap_ids.v1" / "remap_ids.v2": each input id or string -> table.get(x, default), as a
 * (n, 1) array (v2 and v1's default: int32). Input: a STRINGS value or a 1-d int array (v1 and
 * v2), or (B, k) ids with column (v2). The mapping table is the attr mapping_table: a uint8
 * tensor holding Thinc's msgpack bytes of the dict (so Thinc's bytes and .lithe files carry it
 * exactly as Thinc stores it; any msgpack map of int or str keys to ints is accepted). Other
 * attrs as Thinc: v1 {mapping_table, dtype ("i"), default}, v2 {mapping_table, default, column}.
 * Backprop: an empty LIST for strings, zeros shaped like dY for arrays (Thinc: uninitialised). */
LITHE_API lithe_status lithe_remap_ids(const lithe_remap_ids_opts *opts, lithe_model **out);
/* "uniqued.v1": X (N, k) integer ids; the layer runs only on the rows whose X[:, column] is
 * unique (sorted, first occurrence, as numpy.unique), its output rows copied back to every
 * duplicate; the backprop sums dY over duplicates into the layer's backprop and returns its dX
 * divided by the counts, scattered back (float32). Inputs with fewer than 2 elements go straight
 * to the layer (as Thinc). dims nO, nI copied from the layer; attr column. Named
 * "uniqued(<layer>)". Takes ownership of layer, also on failure. */
LITHE_API lithe_status lithe_uniqued(lithe_model *layer, int64_t column, lithe_model **out);
typedef struct lithe_static_vectors_opts {
    int64_t nO;            /* 0: unset (from a sample Y at initialize) */
    lithe_tensor *vectors; /* the frozen table V (nV, nM) float32 (retained); nM becomes a dim */
    float dropout;         /* > 0: one mask over the nO columns (spaCy's dropout=) */
    lithe_init init_W;     /* LITHE_INIT_DEFAULT: glorot_uniform, as spaCy */
} lithe_static_vectors_opts;
/* "StaticVectors.v2": spaCy's StaticVectors (Thinc 8.1.7 has none): a LIST of 1-d int arrays
 * (rows of V, one array per document; a negative id is a word without a vector) or a Ragged of
 * such ids -> Ragged Y (N, nO) = V[ids] · Wᵀ (no bias), rows of negative ids zero, lengths per
 * document. V is a param marked frozen (saved with the model, never updated); W (nO, nM) is
 * trained: dW += dYᵀ · V[ids] (negative ids contribute nothing: spaCy gathers V[-1] there, a
 * quirk not kept). Backprop returns an empty LIST (spaCy returns []). dims nO, nM; attrs key_attr
 * ("ORTH") and dropout_rate (None without dropout). */
LITHE_API lithe_status lithe_static_vectors(const lithe_static_vectors_opts *opts, lithe_model **out);
/* Freezing, for fine-tuning only part of a model (docs/training.md, "Fine-tuning on a memory
 * budget"). A frozen param is not trained: finish_update gives it no optimizer state and no step.
 * The dense family (Linear, Relu, ..., Softmax), Maxout, HashEmbed / Embed and imported graphs
 * (ONNX, TF.js) make NO gradient buffer for it; LayerNorm, LSTM, SparseLinear, attention and the
 * other layers still accumulate one, which finish_update zeroes. chain's backprop stops below its
 * last child whose subtree holds a trainable param when the caller passes dX NULL (no input
 * gradient wanted), and an imported graph runs the backward of no node whose inputs need no
 * gradient (frozen weights, and the graph's input when dX is NULL).
 * `param` NULL freezes (or thaws) every param of m's whole subtree — freezing "by node"; otherwise
 * one param of m. Saved in .lithe files ("frozen"), not in Thinc's bytes (Thinc has no such flag).
 * Statuses: LITHE_ERR_NOT_FOUND for an unknown param. */
LITHE_API lithe_status lithe_model_set_frozen(lithe_model *m, const char *param, bool frozen);
LITHE_API bool lithe_model_is_frozen(const lithe_model *m, const char *param);
/* Freezes (or thaws) every param of m's subtree whose name matches the glob `pattern` ('*' any
 * run of characters, '?' one character, '[' ']' none special): for an imported graph the names are
 * the ONNX initializer names ("features.*", "*.bias", "classifier.1.weight"). A param matches by its
 * name, or by "<node name>/<param name>" ("linear/W"). *n_matched (may be NULL) counts the params
 * set. Statuses: LITHE_ERR_INVALID_ARG (m or pattern NULL), LITHE_ERR_NOT_FOUND when nothing matches
 * (nothing changes). */
LITHE_API lithe_status lithe_model_freeze_matching(lithe_model *m, const char *pattern, bool frozen,
                                                   size_t *n_matched);
/* Whether some param of m's subtree (children, recursively) is set and not frozen. */
LITHE_API bool lithe_model_has_trainable(const lithe_model *m);
/* LoRA adapters (docs/api.md, "LoRA adapters"): Y = X·Wᵀ + (alpha / rank) · (X·Aᵀ)·Bᵀ on a frozen
 * base W, with A (rank, in) drawn as U(-1/sqrt(in), 1/sqrt(in)) (PyTorch's kaiming_uniform_(a=sqrt(5)),
 * the reference LoRA's init) from a Philox stream keyed by `seed` (adapters in walk order), and B
 * (out, rank) zero, so the model computes what it did until a step moves B. Adapted weights: the W
 * of the dense layers (Linear, Relu, ... — lithe_dense's — Maxout.v1: W (nO, nP, nI) as (nO·nP, nI),
 * Softmax), and an imported graph's Gemm and MatMul weights and 1-D / 2-D Conv weights (W (out,
 * in/group, kh, kw) flattened to (out, in/group·kh·kw)). `pattern` is a glob ('*', '?'; NULL: every
 * such weight) matched, as lithe_model_freeze_matching's, against the param's name ("W", a graph's
 * initializer name "fc.weight") or "<node name>/<param>" ("relu/W"). Every param of m's tree is
 * frozen (lithe_model_set_frozen), the adapters' A and B are not. The model must be initialized.
 * Training then runs as usual (begin_update, backprop, finish_update): the adapters act on the
 * activations (a graph's Conv on a temporary W + s·B·A, made for the node's own call), the base
 * weight keeps its value and gets no gradient buffer, optimizer state or copy, and only A and B
 * train. A weight's param keeps its name and value; the node gains params "lora_A:<W>" and
 * "lora_B:<W>" and attrs "lora_alpha:<W>", "lora_layout:<W>". Float32 weights, and the compact W
 * (int8 / uint8, float16, bfloat16: lithe_model_compress_weights) of the dense layers that compute
 * with compact weights: a compact frozen base (such an adapter is saved alone; merging it is
 * LITHE_ERR_DTYPE). Statuses: LITHE_ERR_VALUE (rank outside [1, 2^20], alpha not finite),
 * LITHE_ERR_NOT_FOUND (no weight matches), LITHE_ERR_DTYPE (a matching weight is compact where only
 * float32 takes one: a graph's, Maxout's), LITHE_ERR_STATE (a weight not allocated, or adapted
 * already); on any of these nothing is changed. */
LITHE_API lithe_status lithe_model_add_lora(lithe_model *m, const char *pattern, int64_t rank, float alpha,
                                            uint64_t seed);
/* How many adapted weights m's tree has. */
LITHE_API size_t lithe_model_lora_count(const lithe_model *m);
/* Merges every adapter into its weight (W = base + (alpha / rank) · B·A, from A and B as they are
 * now) and drops the adapters' params and attrs: the model is then an ordinary model (saves,
 * exports to Thinc bytes and ONNX as any). Freezing is left as it is (lithe_model_set_frozen(m,
 * NULL, false) thaws all). Optimizer state kept for A and B stays in the optimizer. An adapter on a
 * compact weight does not merge: LITHE_ERR_DTYPE (lithe_model_compress_weights(m, LITHE_F32) first). */
LITHE_API lithe_status lithe_model_merge_lora(lithe_model *m);
/* The hash naming a base model in an adapter file: FNV-1a 64 over every base weight of the tree
 * (node index, name, dtype, shape, values; an adapted weight holds its base), as 16 hex digits
 * and a NUL in out (cap >= 17). */
LITHE_API lithe_status lithe_model_lora_base_hash(lithe_model *m, char *out, size_t cap);
/* The adapters alone, as a small .lithe file (docs/format.md, "LoRA adapters"): A, B, alpha and
 * layout of each, and the base's hash. _bytes: *out is freed with lithe_buffer_free. Statuses:
 * LITHE_ERR_STATE (no adapters), LITHE_ERR_UNSUPPORTED (a weight name over 64 bytes), I/O. */
LITHE_API lithe_status lithe_model_save_lora(lithe_model *m, const char *path);
LITHE_API lithe_status lithe_model_save_lora_bytes(lithe_model *m, uint8_t **out, size_t *len);
/* Applies saved adapters to m, a model without adapters whose weights hash as the file's base
 * (lithe_model_lora_base_hash): freezes m's tree and attaches each adapter as
 * lithe_model_add_lora would, with the file's A and B. Statuses: LITHE_ERR_VALUE
 * ("trained on a base whose weights hash to ..., this model's hash to ...": a different base; or a
 * weight the file names that m lacks), LITHE_ERR_STATE (m has adapters), LITHE_ERR_FORMAT (not an
 * adapter file), and the .lithe reader's. On failure m keeps no adapter. */
LITHE_API lithe_status lithe_model_load_lora(lithe_model *m, const char *path);
LITHE_API lithe_status lithe_model_load_lora_bytes(lithe_model *m, const uint8_t *data, size_t len);
/* Thinc's `with model.use_params(optimizer.averages): fn(model)`: swaps the averages in, calls
 * fn(m, user), swaps them back — also when fn fails — and returns fn's status (its message stays
 * lithe_last_error()). */
LITHE_API lithe_status lithe_model_use_averages(lithe_model *m, lithe_optimizer *opt,
                                                lithe_status (*fn)(lithe_model *m, void *user), void *user);

/* "resizable.v1": a node named "resizable(<layer>)" holding one leaf layer with params W and b
 * (Linear, Softmax, Maxout, the affine family) whose output width can grow: Thinc's resizable
 * with resize_linear_weighted. fill_W / fill_b are the values of new rows (Thinc's
 * fill_defaults; 0 by default there). Takes ownership of layer, also on failure.
 * Statuses: LITHE_ERR_UNSUPPORTED for a layer with children, refs, shims or without W and b. */
LITHE_API lithe_status lithe_resizable(lithe_model *layer, float fill_W, float fill_b, lithe_model **out);
/* Thinc's resize_model: replaces the held layer by a new node (a new id, so optimizer state
 * starts fresh for it, as in Thinc) with nO = new_nO whose params keep the old rows (axis 0)
 * and fill the new ones. Same nO: nothing changes; a layer not yet initialized just takes the
 * new nO. Backprop records made before keep the old layer alive and consistent. The resizable
 * node's own dims stay as they were, as in Thinc (whose bytes carry them so). Statuses: LITHE_ERR_INVALID_ARG (not a
 * resizable node), LITHE_ERR_VALUE (new_nO <= 0, or smaller than nO: Thinc only grows),
 * LITHE_ERR_OOM. */
LITHE_API lithe_status lithe_resize_model(lithe_model *resizable, int64_t new_nO);

/* Every registered layer name, versioned as Thinc registers it ("Relu.v1", ...), in a fixed
 * order. *n receives the count; the array is static and immutable. Thread-safe. */
LITHE_API const char *const *lithe_layer_names(size_t *n);
/* The layer name lithe gives a Thinc node whose forward is `thinc_forward` (its function's
 * module and name, "thinc.layers.relu.forward"): what the Python exporter writes for the node
 * (the same list as lithe_layer_names, core/layers/layers.def); may be a node type Thinc does not
 * register ("map_list"). NULL: lithe has no such layer. Static; thread-safe. */
LITHE_API const char *lithe_layer_for_thinc(const char *thinc_forward);

/* Adds a reference to a model node (shared layers) / drops one. The last reference frees the
 * node, its params and grads, and drops its references to its children. Accepts NULL. */
LITHE_API lithe_model *lithe_model_retain(lithe_model *m);
LITHE_API void lithe_model_free(lithe_model *m);

/* Thinc's model.name ("relu", "relu>>dropout") and model.id (unique per process). Borrowed. */
LITHE_API const char *lithe_model_name(const lithe_model *m);
LITHE_API uint64_t lithe_model_id(const lithe_model *m);
/* The registered layer name this node was built by ("Relu.v1", "chain.v1"). */
LITHE_API const char *lithe_model_layer_type(const lithe_model *m);

/* Children (Thinc's model.layers), borrowed. i out of range gives NULL. */
LITHE_API size_t lithe_model_n_layers(const lithe_model *m);
LITHE_API lithe_model *lithe_model_layer(const lithe_model *m, size_t i);

/* Thinc's model.walk() in breadth-first order, each node once. Writes up to cap borrowed
 * pointers to nodes (nodes may be NULL when cap is 0) and the full count to *n. */
LITHE_API lithe_status lithe_model_walk(lithe_model *m, lithe_model **nodes, size_t cap,
                                        size_t *n);

/* The backend the tree computes on (lithe_model_set_backend below moves it). */
LITHE_API lithe_backend *lithe_model_backend(const lithe_model *m);
/* The node's shims, in order (Thinc's model.shims): a count, the i-th (borrowed; NULL when i is
 * out of range or m is NULL) and a shim's name. finish_update updates every shim of the tree
 * before the params. Thread-safe on a model no one is modifying. */
LITHE_API size_t lithe_model_n_shims(const lithe_model *m);
LITHE_API lithe_shim *lithe_model_shim(const lithe_model *m, size_t i);
LITHE_API const char *lithe_shim_name(const lithe_shim *shim);
/* Moves the whole tree to `backend`: every node's params and grads are copied into the backend's
 * memory and the nodes compute there from then on (inputs must then live there too:
 * lithe_tensor_to_backend); the subtree under a with_cpu node stays on the CPU. Moving to the
 * backend the tree is on is a no-op. lithe_model_to_backend is the same function under a second
 * name (read as PyTorch's module.to(device)): the two names are interchangeable, and a message
 * about the arguments names the one called (each tensor moves by lithe_tensor_to_backend). Not thread-safe: no other thread may use the model meanwhile.
 * Statuses: LITHE_ERR_INVALID_ARG (m or backend NULL), LITHE_ERR_OOM and the backends' errors; on
 * failure the nodes already moved stay on `backend` (each node whole) and the rest where they
 * were, so a second call can finish the move. */
LITHE_API lithe_status lithe_model_set_backend(lithe_model *m, lithe_backend *backend);
LITHE_API lithe_status lithe_model_to_backend(lithe_model *m, lithe_backend *backend);

/* Seeds every node of the tree: node k in walk order gets key seed + k and counter 0, so
 * initialization and dropout masks are the same on every platform for the same seed.
 * Statuses: LITHE_ERR_OOM (no node reseeded). */
LITHE_API lithe_status lithe_model_set_seed(lithe_model *m, uint64_t seed);

/* --- Recurrent layers, attention and similarity (Thinc's lstm, bidirectional,
 * parametricattention, cauchysimilarity, siamese). ------------------------------------------ */
typedef struct lithe_lstm_opts {
    int64_t nO, nI;      /* 0: unset (from sample data at initialize) */
    bool bi;             /* two directions, each nO / 2 wide (nO must be even) */
    int64_t depth;       /* stacked layers, 1 .. 64; 0 means 1 */
    float dropout;       /* [0, 1): at training, one mask over the whole flat weight vector */
    lithe_init init_W;   /* LITHE_INIT_DEFAULT: glorot_uniform per (H, nI) gate block, as Thinc */
    lithe_init init_b;   /* LITHE_INIT_DEFAULT: zeros */
} lithe_lstm_opts;
/* "LSTM.v1": Padded (T, B, nI) -> Padded (T, B, nO) (size_at_t non-increasing, as list2padded
 * makes it; padding rows of the output are zeros). Thinc's params exactly: "LSTM", one flat vector
 * of (Wx (4H, nI_i), bx (4H), Wh (4H, H), bh (4H)) per layer and direction, gates (f, i, o, c), H =
 * nO / dirs; "HC0" (2, depth, dirs, H), read as Thinc reads it: HC0[0] the initial cell, HC0[1]
 * the initial hidden state; it receives no gradient. dims nO, nI, depth, dirs; attrs registry_name
 * ("LSTM.v1"), dropout_rate. The gradient is the exact one (Thinc 8.1.7's NumpyOps.backprop_lstm
 * is not: docs/api.md). Backend primitives lstm_scan / lstm_scan_backward with gemm around them.
 * Statuses: LITHE_ERR_VALUE for bad options; at forward LITHE_ERR_INVALID_ARG (not Padded),
 * LITHE_ERR_SHAPE (width, dtype), LITHE_ERR_VALUE (size_at_t unsorted or out of range). */
LITHE_API lithe_status lithe_lstm(const lithe_lstm_opts *opts, lithe_model **out);
/* "bidirectional.v1" over two Padded -> Padded layers (r2l NULL: a copy of l2r), taking over both.
 * Thinc 8.1.7's as it is: the input is NOT reversed for r2l (its _reverse is data[::1]), the output
 * concatenates both along the last axis, and the backward gives BOTH children the first half of
 * dZ (its _split uses slice(half)) and sums their input gradients. */
LITHE_API lithe_status lithe_bidirectional(lithe_model *l2r, lithe_model *r2l, lithe_model **out);
/* "ParametricAttention.v1": Ragged (N, nO) -> Ragged (N, nO); row r scaled by A[r], the softmax
 * over its sequence of clip(X[r] · Q, -20, 20). Param Q (nO,), U(-0.1, 0.1) at initialize; nO 0:
 * from X. Zero-length sequences and an empty batch are fine. Primitives para_attention(_backward). */
LITHE_API lithe_status lithe_parametric_attention(int64_t nO, lithe_model **out);
/* "CauchySimilarity.v1": TUPLE (X1, X2) of (B, nI) float32 arrays -> (B,) = 1 / (1 + sum_j W[j]
 * (X1 - X2)[:, j]^2); W (nI,) starts at ones; dims nI (0: from X), nO = 1. Backprop: a TUPLE
 * (dX1, dX2 = -dX1). Primitives cauchy_similarity(_backward). */
LITHE_API lithe_status lithe_cauchy_similarity(int64_t nI, lithe_model **out);
/* "siamese.v1": TUPLE (X1, X2) -> similarity(TUPLE (layer(X1), layer(X2))), the same layer node run
 * twice (its grads accumulate from both); backprop a TUPLE (dX1, dX2). Takes over both models. */
LITHE_API lithe_status lithe_siamese(lithe_model *layer, lithe_model *similarity, lithe_model **out);

/* --- Dims: names registered at construction. ----------------------------------------------- */
LITHE_API lithe_has lithe_model_has_dim(const lithe_model *m, const char *name);
/* The number of dims a node declares and the i-th name, in declaration order (Thinc's). */
LITHE_API size_t lithe_model_n_dims(const lithe_model *m);
LITHE_API const char *lithe_model_dim_name(const lithe_model *m, size_t i);
/* Statuses: LITHE_ERR_NOT_FOUND (not registered), LITHE_ERR_STATE (unset). */
LITHE_API lithe_status lithe_model_get_dim(const lithe_model *m, const char *name, int64_t *out);
/* Sets a dim (value >= 1, or 0 to unset it). Like Thinc, changing a set dim to another value is
 * LITHE_ERR_STATE. Statuses: LITHE_ERR_NOT_FOUND, LITHE_ERR_STATE, LITHE_ERR_VALUE. */
LITHE_API lithe_status lithe_model_set_dim(lithe_model *m, const char *name, int64_t value);

/* --- Params and grads: named float32 tensors (or compact weights, below). ------------------ */
LITHE_API lithe_has lithe_model_has_param(const lithe_model *m, const char *name);
/* Borrowed tensor (retain it to keep it past the next set_param), in the dtype it is stored in.
 * Statuses: LITHE_ERR_NOT_FOUND (not registered), LITHE_ERR_STATE (not allocated yet). */
LITHE_API lithe_status lithe_model_get_param(const lithe_model *m, const char *name,
                                             lithe_tensor **out);
/* Sets a param (retained; NULL unsets it). A param name not registered is registered, as in
 * Thinc. The tensor must be float32, or a compact weight: float16 / bfloat16, or int8 / uint8
 * carrying quantization parameters (lithe_tensor_quantize); and on the model's backend
 * (LITHE_ERR_DTYPE, LITHE_ERR_INVALID_ARG). Only the dense layers' `W` (Linear, Relu, ...,
 * Softmax) computes with a compact weight (on the CPU backend; elsewhere, and in other layers,
 * using one is LITHE_ERR_DTYPE naming it); a compact weight gets no gradient (it is frozen: the
 * float32 bias and other layers still train). An existing grad of another shape is dropped. */
LITHE_API lithe_status lithe_model_set_param(lithe_model *m, const char *name, lithe_tensor *value);
/* Stores the 2-D `W` of every dense layer of m's tree (Linear, Relu, Mish, Swish, HardSwish, ...,
 * Softmax: the layers that compute with compact weights) as `dtype`: LITHE_F16 / LITHE_BF16
 * (rounded to nearest even), or LITHE_I8 (symmetric per-row: lithe_tensor_quantize with axis 0,
 * the dynamic int8 quantization — activations are not quantized ahead). Biases and every other
 * tensor stay float32; the compact weights are marked frozen. LITHE_F32 turns compact weights
 * back to float32. *n_converted (may be NULL) receives the number of weights changed.
 * Statuses: LITHE_ERR_DTYPE (another dtype), LITHE_ERR_VALUE (a NaN / infinite weight). */
LITHE_API lithe_status lithe_model_compress_weights(lithe_model *m, lithe_dtype dtype, size_t *n_converted);
/* lithe_model_compress_weights for the dense layers whose W matches the glob `pattern` (matched as
 * lithe_model_freeze_matching's: "W" or "<node name>/W"; NULL: every dense layer's), so that the last
 * layers can stay float32 and train on a compact, frozen base (docs/training.md, "Training on compact
 * weights"). Statuses as lithe_model_compress_weights's, and LITHE_ERR_NOT_FOUND when a pattern
 * matches no dense layer's W (nothing changes). */
LITHE_API lithe_status lithe_model_compress_matching(lithe_model *m, lithe_dtype dtype, const char *pattern,
                                                     size_t *n_converted);
/* Static int8 quantization with calibration (docs/quantization.md): *out is a new model, m's
 * computation as a QDQ ONNX graph node ("onnx_graph.v1") in the form onnxruntime's quantizer writes
 * (QuantFormat.QDQ, activations QInt8, weights QInt8 per channel): m is written as a float ONNX
 * graph (lithe_model_save_onnx_bytes: a graph node as imported, with its current weights; a native
 * tree lowered to Gemm and activations), run over the rows of `calib` (float32, (rows, ...) as m's
 * input, 64 rows a forward) recording the range of the float input of every MatMul / Gemm with a
 * constant 2-D weight and every Conv with a constant weight (MinMax: min and max over all rows,
 * widened to hold 0); each such node then reads QuantizeLinear -> DequantizeLinear of its input
 * (int8, scale (max - min) / 255, zero point round(-128 - min / scale)), its weight as int8 codes
 * (symmetric, scale max|W[c]| / 127 per output channel) and its bias as int32 codes (scale s_x *
 * s_w[c]). Loaded, the graph runs those nodes as int8 kernels on the activations' static codes
 * (no per-row quantization at run time); the rest stays float32. *n_quantized (may be NULL): the
 * nodes quantized. m is not changed. Statuses: LITHE_ERR_INVALID_ARG (NULL), LITHE_ERR_DTYPE
 * (calib not float32), LITHE_ERR_SHAPE (calib empty, or not m's input shape: the forward's
 * message), LITHE_ERR_VALUE (a NaN / infinite calibration value or activation), LITHE_ERR_NOT_FOUND
 * (nothing to quantize), LITHE_ERR_UNSUPPORTED (a graph below opset 13; a tree that does not lower
 * to ONNX), LITHE_ERR_OOM. */
LITHE_API lithe_status lithe_model_quantize_static(lithe_model *m, const lithe_tensor *calib, size_t *n_quantized,
                                                   lithe_model **out);
/* Whether a gradient has been accumulated (Thinc: present in the param server). */
LITHE_API bool lithe_model_has_grad(const lithe_model *m, const char *name);
/* Borrowed. LITHE_ERR_NOT_FOUND when there is no grad. */
LITHE_API lithe_status lithe_model_get_grad(const lithe_model *m, const char *name,
                                            lithe_tensor **out);
LITHE_API lithe_status lithe_model_set_grad(lithe_model *m, const char *name, lithe_tensor *value);
/* grad += value (the first call allocates the grad). The value must have the param's shape
 * (LITHE_ERR_SHAPE). */
LITHE_API lithe_status lithe_model_inc_grad(lithe_model *m, const char *name,
                                            const lithe_tensor *value);
/* Param names in registration order; borrowed, NULL when i is out of range. */
LITHE_API size_t lithe_model_n_params(const lithe_model *m);
LITHE_API const char *lithe_model_param_name(const lithe_model *m, size_t i);

/* --- Refs: named pointers to nodes of the same tree. --------------------------------------- */
LITHE_API lithe_has lithe_model_has_ref(const lithe_model *m, const char *name);
/* Borrowed. LITHE_ERR_NOT_FOUND / LITHE_ERR_STATE (unset). */
LITHE_API lithe_status lithe_model_get_ref(const lithe_model *m, const char *name,
                                           lithe_model **out);
/* `node` must be in m's tree (LITHE_ERR_VALUE otherwise); NULL unsets. */
LITHE_API lithe_status lithe_model_set_ref(lithe_model *m, const char *name, lithe_model *node);

/* --- Attrs: typed, named values. ------------------------------------------------------------ */
LITHE_API lithe_attr_type lithe_model_attr_type(const lithe_model *m, const char *name);
/* Getters: LITHE_ERR_NOT_FOUND when absent, LITHE_ERR_DTYPE when of another type (an int attr
 * may be read as a float). The string and the tensor are borrowed. */
LITHE_API lithe_status lithe_model_get_attr_int(const lithe_model *m, const char *name, int64_t *out);
LITHE_API lithe_status lithe_model_get_attr_float(const lithe_model *m, const char *name, double *out);
LITHE_API lithe_status lithe_model_get_attr_bool(const lithe_model *m, const char *name, bool *out);
LITHE_API lithe_status lithe_model_get_attr_str(const lithe_model *m, const char *name,
                                                const char **out);
LITHE_API lithe_status lithe_model_get_attr_tensor(const lithe_model *m, const char *name,
                                                   lithe_tensor **out);
/* Setters create or replace (the type may change, as in a Python dict). */
LITHE_API lithe_status lithe_model_set_attr_int(lithe_model *m, const char *name, int64_t v);
LITHE_API lithe_status lithe_model_set_attr_float(lithe_model *m, const char *name, double v);
LITHE_API lithe_status lithe_model_set_attr_bool(lithe_model *m, const char *name, bool v);
LITHE_API lithe_status lithe_model_set_attr_str(lithe_model *m, const char *name, const char *v);
LITHE_API lithe_status lithe_model_set_attr_tensor(lithe_model *m, const char *name, lithe_tensor *v);
/* An attr whose value is None in Thinc (e.g. Embed's column when not given). */
LITHE_API lithe_status lithe_model_set_attr_null(lithe_model *m, const char *name);
/* The number of attrs of a node and the i-th name, in insertion order (Thinc's attrs dict order). */
LITHE_API size_t lithe_model_n_attrs(const lithe_model *m);
LITHE_API const char *lithe_model_attr_name(const lithe_model *m, size_t i);

/* Thinc's set_dropout_rate: every node of the tree with a "dropout_rate" attr gets `rate`.
 * LITHE_ERR_VALUE for a rate outside [0, 1]. */
LITHE_API lithe_status lithe_model_set_dropout_rate(lithe_model *m, float rate);

/* --- Running. -------------------------------------------------------------------------------- */

/* Thinc's initialize(X, Y): infers unset dims from sample data (X and Y may be NULL) and
 * allocates and initializes params. On failure, layers before the failing one may already be
 * initialized (call it again to finish). Statuses: LITHE_ERR_STATE when a dim is still unknown
 * ("relu: cannot initialize W: dim nI unset; pass sample X"), LITHE_ERR_SHAPE when sample data
 * disagrees with a set dim, plus the layer's own. */
LITHE_API lithe_status lithe_model_initialize(lithe_model *m, const lithe_value *X,
                                              const lithe_value *Y);

/* forward(X, is_train) -> Y and, when bp is not NULL, the backprop record. The record owns
 * what backward needs (it keeps the tree alive) and may be run several times; each run
 * accumulates into the grads again. A value of the wrong kind (a list where a layer takes an
 * array) is LITHE_ERR_INVALID_ARG. On failure, dropout layers before the failing one may have
 * consumed random numbers. Statuses: LITHE_ERR_STATE (not initialized),
 * LITHE_ERR_SHAPE / LITHE_ERR_DTYPE for input the layer cannot take (the message names the
 * layer and the numbers: "linear: input width 783 does not match nI=784"). */
LITHE_API lithe_status lithe_model_forward(lithe_model *m, const lithe_value *X, bool is_train,
                                           lithe_value **Y, lithe_backprop **bp);
/* forward with is_train = true and a record. */
LITHE_API lithe_status lithe_model_begin_update(lithe_model *m, const lithe_value *X,
                                                lithe_value **Y, lithe_backprop **bp);
/* forward with is_train = false, no record. */
LITHE_API lithe_status lithe_model_predict(lithe_model *m, const lithe_value *X, lithe_value **Y);

/* backprop(dY) -> dX: accumulates into the grads of the tree; dX may be NULL when the caller
 * does not need it, and then no layer computes the input's gradient (chain and the other
 * combinators pass the NULL on, so a dense first layer skips its dY·W GEMM; a training loop that
 * discards dX should pass NULL). On failure, layers after the failing one (in forward order) may already
 * have accumulated their grads. Statuses: LITHE_ERR_SHAPE when dY's shape differs from Y's. */
LITHE_API lithe_status lithe_backprop_run(lithe_backprop *bp, const lithe_value *dY,
                                          lithe_value **dX);
LITHE_API void lithe_backprop_free(lithe_backprop *bp);

/* Thinc's finish_update: for every node in walk order and every param with a grad, calls the
 * optimizer, which updates the param and zeroes the grad (Adam: one fused pass per param after
 * the gradient norm's, on backends with the adam_step primitive). All optimizer state is allocated
 * before the first param changes, so LITHE_ERR_OOM leaves the tree as it was. */
LITHE_API lithe_status lithe_model_finish_update(lithe_model *m, lithe_optimizer *opt);

/* Training memory, planned before a step (docs/training.md, "Fine-tuning on a memory budget").
 * Bytes of one training step (forward, backprop, finish_update) of m at `batch` rows:
 *   params       every param's value;
 *   grads        a gradient buffer per param that gets one (trainable params; see set_frozen);
 *   opt_state    the optimizer's state for the trainable params (Adam/RAdam: two moments; averages
 *                when use_averages: one more copy; plain SGD: none);
 *   activations  the high-water mark of the tensors alive during forward + backprop beyond the
 *                above (activations kept for backprop, their gradients, temporaries);
 *   workspace    scratch the kernels keep between calls (the CPU GEMM's packing panels): 0 today,
 *                as it is not tensor memory the backend counts (it is a few hundred KiB);
 *   total        their sum.
 * How: params, grads and opt_state are counted from the tree; activations by a DRY RUN — forward
 * and backprop of the first row, then of the first two rows, of X (a float32 tensor of at least
 * one row; the other axes as in training) with the backend's high-water mark read
 * (lithe_backend_memory), extrapolated linearly to `batch` rows (activations are affine in the
 * batch). The dry run leaves the model as it was: grads that existed are put back untouched, the
 * random streams of dropout layers restored, no optimizer state made. The estimate is within ~10%
 * of the measured peak (tests/test_train_memory.c checks 25%). opt NULL: Adam's defaults.
 * Statuses: LITHE_ERR_INVALID_ARG, LITHE_ERR_UNSUPPORTED (X not a tensor, or a backend that
 * keeps no high-water mark), and the dry run's own. */
typedef struct lithe_train_memory {
    size_t params, grads, opt_state, activations, workspace, total;
    int64_t batch;
} lithe_train_memory;
LITHE_API lithe_status lithe_model_plan_train(lithe_model *m, const lithe_value *X, int64_t batch,
                                              const lithe_optimizer *opt, lithe_train_memory *out);
/* A memory budget for training steps of m (0: none). While one is set, lithe_model_begin_update
 * on m plans the step (lithe_model_plan_train, at X's batch, once per shape of one row; opt as
 * given here, NULL: Adam's defaults) and refuses a step whose total is over the budget with
 * LITHE_ERR_OOM before allocating anything, the message naming the figures ("training step needs
 * 61.2 MiB (params 13.6, grads 13.6, optimizer state 27.2, activations 6.8) over the budget of
 * 48.0 MiB"). opt must outlive the budget (or set it again). */
LITHE_API lithe_status lithe_model_set_memory_budget(lithe_model *m, size_t bytes, const lithe_optimizer *opt);
/* The optimizer's state: how many (node, param) entries it has and their bytes. */
LITHE_API size_t lithe_optimizer_state_count(const lithe_optimizer *opt, size_t *bytes);
/* The gradient buffers m's tree holds: how many, and (bytes not NULL) their bytes. */
LITHE_API size_t lithe_model_grad_count(const lithe_model *m, size_t *bytes);

/* Convenience for a float32 tensor value: wraps, runs forward with is_train=false, unwraps. */
LITHE_API lithe_status lithe_model_predict_tensor(lithe_model *m, lithe_tensor *X,
                                                  lithe_tensor **Y);

/* Weights prepared for inference (opt-in). Prepares, once, a backend-private form of the weights
 * m's tree multiplies by — on the CPU the packed Wᵀ panels its GEMM would otherwise build on
 * every call: the W of the dense layers (Linear, Relu, Mish, ..., Softmax), Maxout's W, an
 * imported ONNX graph's Gemm / MatMul B when it is an initializer, and its Conv W (one group) when
 * it is one (as the Wᵀ its GEMM reads with the output pixels as rows). A forward with is_train false
 * (lithe_model_predict and friends) then reads the prepared form; results are bit-identical to the
 * unprepared call (the same kernel, blocking and summation order), and faster (at batch 1 a
 * one-row kernel streams the packed panels). A Conv's packed Wᵀ is read by the convolutions that
 * run with output pixels as the GEMM's rows, an orientation chosen by the layer's geometry; the
 * others (filters as rows) read W where it lies, so the copy costs memory without use there, and
 * they see a raw write to W that the former do not. A forward with is_train true never reads it.
 *
 * It is a SNAPSHOT of the weights' values. lithe drops a prepared form itself whenever it writes
 * the weight's memory (a version counter on the storage): lithe_model_finish_update,
 * lithe_optimizer_swap_averages (the swapped-in tensors have none), lithe_tensor_write,
 * lithe_model_set_param, loading, resizing, lithe_model_set_backend, and any other write lithe
 * performs — the forward then takes the normal path until the next prepare call. lithe cannot
 * see writes made through a pointer from lithe_tensor_data or through a DLPack view
 * (lithe_tensor_to_dlpack / lithe_tensor_from_dlpack): after such a write, call this again (or
 * lithe_model_release_prepared), or predictions use the old weights.
 *
 * Each call takes a fresh snapshot (every form re-made from the current values). Backends without a
 * prepared form (Vulkan, CUDA today) make nothing and return LITHE_OK. Memory: about one extra
 * copy of each prepared weight (lithe_model_prepared_bytes), freed when the weight is written or
 * freed, or by lithe_model_release_prepared. Statuses: LITHE_ERR_INVALID_ARG (m NULL),
 * LITHE_ERR_OOM (then no weight of the tree keeps a prepared form: the model works as before).
 * Not thread-safe: do not run it while the tree is in use on another thread (lithe refuses it
 * then, LITHE_ERR_STATE "model used from two threads at once": see "Thread safety" at the top).
 *
 * Built with -DLITHE_XNNPACK=ON (off by default; docs/performance.md), prepare also creates
 * XNNPACK operators (weights and bias packed in) for the ops where XNNPACK measured faster on the
 * CPU, by lithe's kernel table (the CPU's, or LITHE_CPU_ISA): where lithe would run four-lane or
 * scalar kernels (a CPU without AVX2, aarch64, or LITHE_CPU_ISA=sse2 / scalar) depthwise 3x3 / 5x5
 * convolutions and every one-group convolution; under AVX2 one-group convolutions with a kernel
 * larger than 1x1 and C·KH·KW < 100; under AVX-512 none; and everywhere fully-connected layers (no
 * activation or relu, ONNX Gemm) of at most 16 outputs at 16 rows or more — and only
 * while the CPU backend has one thread
 * (lithe_backend_set_threads; with more, lithe's threaded kernels run). Such predictions are NOT
 * bit-identical to the unprepared path (XNNPACK adds in its own order; within float tolerance, as
 * close to PyTorch as lithe's own), and a batch and its rows one at a time may differ in the last
 * bits. Writing the bias drops the operator as writing W does. XNNPACK failures are statuses with
 * a message (LITHE_ERR_OOM for its out-of-memory). */
LITHE_API lithe_status lithe_model_prepare_inference(lithe_model *m);
/* Drops every prepared form of m's tree (its weights' memory is back to one copy). NULL: no-op.
 * While another thread is inside a call on the tree it does nothing and sets lithe_last_error. */
LITHE_API void lithe_model_release_prepared(lithe_model *m);
/* Bytes held by the valid prepared forms of m's tree (0: none, or all dropped by writes). */
LITHE_API size_t lithe_model_prepared_bytes(lithe_model *m);

/* ------------------------------------------------------------------------------------------
 * Training: Thinc's Optimizer and losses.
 * ---------------------------------------------------------------------------------------- */

typedef struct lithe_optimizer_opts {
    double learn_rate;
    double L2;
    double beta1, beta2, eps; /* beta1 = beta2 = 0: plain SGD, as in Thinc */
    double grad_clip;         /* 0: no clipping */
    bool L2_is_weight_decay;
    bool use_averages;
    bool use_radam; /* Thinc's RAdam (its step counter and all), in place of Adam/SGD */
} lithe_optimizer_opts;

/* The layout of a public option struct ("lithe_optimizer_opts"), for bindings that mirror it (the
 * Python package builds its ctypes struct from this): sizeof (0: unknown struct), and the i-th
 * field's name (NULL past the last), offset and kind ('d' double, 'f' float, '?' bool,
 * 'q' int64_t, 'i' int, 'z' size_t). */
LITHE_API size_t lithe_struct_size(const char *type);
LITHE_API const char *lithe_struct_field(const char *type, size_t i, size_t *offset, char *kind);

/* Thinc's ADAM_DEFAULTS: learn_rate 0.001, beta1 0.9, beta2 0.999, eps 1e-8, L2 0,
 * grad_clip 1.0, L2_is_weight_decay true, use_averages true. */
LITHE_API lithe_optimizer_opts lithe_adam_defaults(void);
/* Thinc's SGD(learn_rate) defaults: L2 0, grad_clip 1.0, L2_is_weight_decay true, no betas. */
LITHE_API lithe_optimizer_opts lithe_sgd_defaults(double learn_rate);

/* A new optimizer. Statuses: LITHE_ERR_VALUE for a negative rate, eps or clip, or betas outside
 * [0, 1); LITHE_ERR_UNSUPPORTED for beta2 > 0 with beta1 == 0 (Thinc raises too). */
LITHE_API lithe_status lithe_optimizer_new(const lithe_optimizer_opts *opts, lithe_optimizer **out);
LITHE_API void lithe_optimizer_free(lithe_optimizer *opt);
/* Current hyper-parameters (a copy), and a new learning rate (for schedules). */
LITHE_API lithe_optimizer_opts lithe_optimizer_get_opts(const lithe_optimizer *opt);
LITHE_API lithe_status lithe_optimizer_set_learn_rate(lithe_optimizer *opt, double learn_rate);

/* --- Schedules: Thinc 8.1's generators (thinc/schedules.py). Each lithe_schedule_next is one
 * next() of Thinc's generator. Constructors return LITHE_ERR_INVALID_ARG for a NULL out. Not
 * thread-safe for one schedule. ------------------------------------------------------------- */
typedef struct lithe_schedule lithe_schedule;
/* rate forever */
LITHE_API lithe_status lithe_schedule_constant(double rate, lithe_schedule **out);
/* rate for `steps` values, then `then`'s (taken over, also on failure) */
LITHE_API lithe_status lithe_schedule_constant_then(double rate, int64_t steps, lithe_schedule *then,
                                                    lithe_schedule **out);
/* base_rate / (1 + decay * t), t = t0, t0 + 1, ... (Thinc's keyword t, default 0) */
LITHE_API lithe_status lithe_schedule_decaying(double base_rate, double decay, double t0, lithe_schedule **out);
/* start, start * compound, ... clipped at stop (from above or below, as start < or > stop) */
LITHE_API lithe_status lithe_schedule_compounding(double start, double stop, double compound, lithe_schedule **out);
/* linear warm-up from 0 over warmup_steps, then linear decline to 0 at total_steps */
LITHE_API lithe_status lithe_schedule_warmup_linear(double initial_rate, int64_t warmup_steps, int64_t total_steps,
                                                    lithe_schedule **out);
/* Howard and Ruder's slanted triangular rate (Thinc's defaults: cut_frac 0.1, ratio 32, t 0).
 * Thinc's `decay` argument is unused there and left out here. LITHE_ERR_VALUE where Thinc would
 * divide by zero (int(num_steps * cut_frac) == 0). */
LITHE_API lithe_status lithe_schedule_slanted_triangular(double max_rate, int64_t num_steps, double cut_frac,
                                                         double ratio, double t0, lithe_schedule **out);
/* triangle waves between min_lr and max_lr with half-period `period` (>= 1) */
LITHE_API lithe_status lithe_schedule_cyclic_triangular(double min_lr, double max_lr, int64_t period,
                                                        lithe_schedule **out);
/* plateau (Thinc 9's plateau.v1; Thinc 8.1.7 has none, so there is no oracle for it here): the
 * wrapped schedule's values times scale^hits, where a hit is max_patience reported evaluations in
 * a row without a better score. Takes over `inner`, also on failure. */
LITHE_API lithe_status lithe_schedule_plateau(int64_t max_patience, double scale, lithe_schedule *inner,
                                              lithe_schedule **out);
/* Reports an evaluation (Thinc 9's last_score=(step, score)): higher is better; the same step
 * reported twice counts once. Schedules other than plateau ignore it. */
LITHE_API lithe_status lithe_schedule_report_score(lithe_schedule *s, int64_t step, double score);
/* The next value (NaN for NULL). */
LITHE_API double lithe_schedule_next(lithe_schedule *s);
LITHE_API void lithe_schedule_free(lithe_schedule *s);

/* Thinc's Optimizer(learn_rate=<schedule>, ...): the hyper-parameter `name` ("learn_rate", "b1",
 * "b2", "eps", "L2", "grad_clip" — Thinc's attribute names) takes the schedule's next value now,
 * and a new one at each lithe_optimizer_step_schedules. The optimizer owns the schedule (also on
 * failure); a second schedule for the same name replaces the first. Statuses:
 * LITHE_ERR_INVALID_ARG (NULL, unknown name), LITHE_ERR_VALUE (a value the optimizer refuses). */
LITHE_API lithe_status lithe_optimizer_set_schedule(lithe_optimizer *opt, const char *name, lithe_schedule *s);
/* Thinc's optimizer.step_schedules(): every schedule yields its next value. */
LITHE_API lithe_status lithe_optimizer_step_schedules(lithe_optimizer *opt);

/* The non-finite check (off by default; Thinc has none and trains on through NaN): with it on,
 * lithe_model_finish_update first reads every gradient of the tree, and lithe_optimizer_step its
 * one, and a NaN or infinity in any answers LITHE_ERR_VALUE ("finish_update: gradient of
 * relu1.W has 3 non-finite values (first NaN at [7]); nothing was updated") before any param,
 * optimizer state or gradient changes. A non-finite loss reaches the gradients through its
 * d_scores, so this catches it too. Costs one read of each gradient (a device-to-host copy on a
 * GPU) per update. Statuses: LITHE_ERR_INVALID_ARG for a NULL optimizer. */
LITHE_API lithe_status lithe_optimizer_set_check_finite(lithe_optimizer *opt, bool on);

/* Thinc's Optimizer.__call__ for one parameter, keyed by (node, name): L2 (added to the
 * gradient, or decoupled weight decay after the step), clipping by the gradient's L2 norm,
 * Adam with bias correction (or SGD), grad zeroed, averages updated with Thinc's decay.
 * Statuses: LITHE_ERR_SHAPE when weights and gradient differ in size. */
LITHE_API lithe_status lithe_optimizer_step(lithe_optimizer *opt, const lithe_model *node,
                                            const char *name, lithe_tensor *weights,
                                            lithe_tensor *gradient);
/* The number of updates made for a (node, param), Thinc's nr_update; 0 if none. */
LITHE_API int64_t lithe_optimizer_nr_update(const lithe_optimizer *opt, const lithe_model *node,
                                            const char *name);
/* The parameter average kept for (node, name) (borrowed), LITHE_ERR_NOT_FOUND if none. */
LITHE_API lithe_status lithe_optimizer_get_average(const lithe_optimizer *opt,
                                                   const lithe_model *node, const char *name,
                                                   lithe_tensor **out);

/* --- The .lithe file (docs/format.md): one safetensors file holding the weights as named
 * tensors ("<node index>.<param>"), the architecture as JSON under __metadata__ (each node's
 * registered layer, name, dims, attrs, children, refs), a format version, and optionally the
 * optimizer state as the byte tensor "optimizer.state". Any safetensors reader lists its
 * weights. ------------------------------------------------------------------------------------ */

/* The model (and opt's state when opt is not NULL) as .lithe bytes (*out: lithe_buffer_free).
 * Tensor attrs are saved when 1-D int64 ({"ints": [...]}) or 1-D uint8 (a dict attr kept as Thinc's
 * msgpack bytes, {"msgpack": "<hex>"}: remap_ids' mapping_table).
 * An ONNX graph node's `onnx` attr is saved as the byte tensor "<node>.attr.onnx"; its parsed
 * graph (a shim) is rebuilt at load.
 * Statuses: LITHE_ERR_UNSUPPORTED (other shims, other tensor attrs), LITHE_ERR_VALUE (a
 * ref outside the tree), LITHE_ERR_OOM. */
LITHE_API lithe_status lithe_model_save_bytes(lithe_model *m, const lithe_optimizer *opt, uint8_t **out, size_t *len);
/* The same into a file, atomically (temporary file "<path>.tmp-<pid>", fsync, rename): never a
 * half-written model. A save that was killed leaves its temporary file; the next successful save
 * of the same path removes those whose process no longer exists. */
LITHE_API lithe_status lithe_model_save(lithe_model *m, const lithe_optimizer *opt, const char *path);
/* A new model from .lithe bytes or a file, on the CPU backend. Nothing in the bytes is trusted:
 * lengths, offsets, shape products, dtypes, indices, acyclicity and walk order are checked.
 * Statuses: LITHE_ERR_FORMAT (malformed, naming the byte or the node), LITHE_ERR_UNSUPPORTED (a
 * layer this lithe lacks, named; another format version), LITHE_ERR_DTYPE, LITHE_ERR_IO. Bytes
 * that are an ONNX model (they start with ir_version's tag, 0x08, where a .lithe file has its
 * header length) load as one graph node (lithe_onnx_load_bytes). */
LITHE_API lithe_status lithe_model_load_bytes(const uint8_t *data, size_t len, lithe_model **out);
/* A model from its description, as the .lithe loader builds it (no file involved): the
 * architecture JSON (docs/format.md, "lithe.architecture": nodes in walk order with their
 * registered layer names, dims, attrs, param names, children and refs) and the named tensors it
 * refers to ("<node>.<param>": float32; "<node>.attr.<name>": a uint8 bytes attr), contiguous host
 * tensors that are copied. Every check of lithe_model_load applies. The Python exporter builds a
 * Thinc model's description and saves it with lithe_model_save. Statuses: LITHE_ERR_FORMAT,
 * LITHE_ERR_UNSUPPORTED (an unknown layer), LITHE_ERR_INVALID_ARG, LITHE_ERR_OOM. */
LITHE_API lithe_status lithe_model_from_architecture(const char *architecture, size_t len, size_t n,
                                                     const char *const *names, lithe_tensor *const *tensors,
                                                     lithe_model **out);
/* From a file: memory-mapped copy-on-write where the platform allows (POSIX; not WASI or the
 * browser), the params viewing the mapping — no copy at load, pages private once written by
 * training; unmapped when the last param goes. Set LITHE_NO_MMAP=1 to read the file instead (a
 * file truncated by another process while mapped would fault on access). A path ending in
 * ".onnx" loads an ONNX model as one graph node (lithe_onnx_load); one ending in ".json" a TF.js
 * layers model (model.json and its weight shards, lithe_tfjs_load). */
LITHE_API lithe_status lithe_model_load(const char *path, lithe_model **out);
/* The optimizer state stored in .lithe bytes, into opt for model m (LITHE_ERR_NOT_FOUND if the
 * file holds none); see lithe_optimizer_load_state. */
LITHE_API lithe_status lithe_optimizer_load_from_file_bytes(lithe_optimizer *opt, lithe_model *m, const uint8_t *data,
                                                            size_t len);

/* --- ONNX graphs (docs/onnx.md) --------------------------------------------------------------
 * An ONNX model (torch.onnx.export, tf2onnx, MXNet's exporter; opsets 11-17 tested, 7-18 read)
 * becomes one node, layer "onnx_graph.v1", name "onnx_graph": its `onnx` attr keeps the model's
 * bytes (so lithe_model_save embeds the graph and lithe_model_load restores it), every float
 * initializer is a param named as in the graph (trainable, but BatchNormalization's running
 * statistics are frozen; the exporter's own one-element "onnx::..." constants stay constants), and
 * forward / backprop run the graph on the node's
 * backend, so an imported model predicts, fine-tunes and saves like any lithe layer. Input: one
 * tensor, or a tuple of tensors in the graph's input order; output likewise. Dropout runs as at
 * inference. The operators lithe runs, forward and backward: lithe_onnx_op_names. Shape arithmetic
 * (Shape, Gather, Unsqueeze, Concat, ... over integers) runs on the host; nodes over constants are
 * folded once at load. Control flow (If on a condition that folds, Loop with a constant trip
 * count, Scan over a length known at load) is expanded into plain nodes at load; other control
 * flow is refused at load, naming the node (docs/onnx.md). The node can sit inside any tree
 * (chain(graph, Linear, Softmax)).
 * Memory: the node plans once per input signature (each input's dtype and shape; the four most
 * recently used are kept): the first run computes the shape arithmetic, which later runs of that
 * signature reuse, and every buffer a run allocates (values, temporaries, gradients) comes from
 * the plan's pool and goes back to it when the last reference goes — a repeated predict or
 * training step takes no fresh memory for them. A buffer the caller (an output Y, a dX) or a live
 * backprop record still holds is never handed out again; a predict without a backprop record
 * returns each value to the pool after its last reader. The pools go when the model is freed
 * and the tensors the caller holds are released.
 * Recomputation by segment (as chain's "recompute", trading time for memory): with the bool attr
 * "recompute" set (lithe_model_set_attr_bool; saved with the model), a training forward whose
 * backprop record is kept splits the nodes (file order) into segments and keeps only the values
 * that cross a segment boundary (besides the inputs, weights and outputs); backprop runs each
 * segment's forward again, last segment first, then its backward. Gradients and dX are
 * bit-identical to the plain step (the same kernels on the same inputs; an imported graph has no
 * random op). The int attr "recompute_segments" k > 0 cuts k segments of about equal bytes; absent
 * or 0, the cuts are chosen: the plan's first recomputing forward runs the graph once more, keeping
 * nothing, to measure each node's bytes, and the least byte budget whose segments fit it is found,
 * each cut placed where the values handed on are fewest (a block's narrow output). Between
 * segments the plan's pool and the backend's cache give their idle blocks back to the allocator,
 * so a recomputing step takes fresh blocks every step (the plain step takes none after the first).
 * The int attr "recompute_rows" r > 0 runs each segment's backward (its forward again, then its
 * backwards) r rows of the batch at a time where every node of the segment treats rows independently
 * (Conv and its fused forms, the elementwise activations, the pools; eval-mode BatchNormalization is
 * folded into the Conv by exporters), and cuts a segment boundary too where such nodes end; the wide
 * values inside a segment then exist for r rows only. dX is the same; a weight's gradient sums the
 * slices in turn, so it may differ from the whole-batch step in the last bits.
 * mobilenet_v2, batch 16, LoRA rank 8: the CPU backend's high-water mark 985 -> 299 MB, and by 4
 * rows ~205 MB (docs/training.md).
 * Fusion: at load, the patterns exporters decompose — LayerNorm below opset 17, MatMul / Gemm +
 * bias (+ Relu or GELU), GELU's Erf form — run as one backend call each, forward and backward
 * (docs/onnx.md lists them and their numerics). Environment, read at load: LITHE_GRAPH_FUSE=0
 * runs every node as the file has it; LITHE_GRAPH_PROFILE=1 times each node's forward and prints
 * the table to stderr when the graph is freed. */

/* A graph node from ONNX ModelProto bytes (copied). Nothing is trusted: every length, offset and
 * element count is checked. Statuses: LITHE_ERR_FORMAT (malformed, naming the message and
 * field), LITHE_ERR_UNSUPPORTED (an opset outside 7-18, a tensor type lithe does not hold,
 * external data (bytes have no folder: use lithe_onnx_load), and operators lithe lacks: all of
 * them listed in one message, at load),
 * LITHE_ERR_SHAPE / LITHE_ERR_VALUE (constants that do not fit their nodes), LITHE_ERR_OOM. */
LITHE_API lithe_status lithe_onnx_load_bytes(const uint8_t *data, size_t len, lithe_model **out);
/* The same from a file (lithe_model_load also takes a path ending in ".onnx"). Initializers kept
 * in external data files (onnx.save_model(..., save_as_external_data=True)) are read from the
 * model file's folder and stored inline in the node's bytes. Statuses as above, and
 * LITHE_ERR_FORMAT for an external location that is absolute or has a ".." part, or an offset /
 * length outside its file or not the tensor's size; LITHE_ERR_IO for a file that cannot be read. */
LITHE_API lithe_status lithe_onnx_load(const char *path, lithe_model **out);
/* The ONNX operator types the graph layer runs (NULL-terminated, static; *n the count). */
LITHE_API const char *const *lithe_onnx_op_names(size_t *n);
/* Whether the graph layer runs op_type's backward too: false for an operator without a gradient
 * (integer or boolean results: Shape, Equal, ...) and for one lithe does not run (or NULL).
 * scripts/onnx_coverage.py reads these two into docs/onnx.md's coverage table. */
LITHE_API bool lithe_onnx_op_has_backward(const char *op_type);

/* --- ONNX export (docs/onnx.md, "Export"; docs/scale-out.md) ----------------------------------
 * The model as an ONNX ModelProto that onnxruntime (and Triton's onnxruntime backend) runs, with
 * its current — fine-tuned — weights:
 * - a graph node ("onnx_graph.v1": an imported ONNX or TF.js model, as the root) is written back
 *   as the model it was loaded from: its original nodes (never the fused ones lithe runs), value and
 *   node names, opset, attributes, inputs and outputs, with every initializer that is a param
 *   holding the param's current value in the initializer's own data type (float32, float64,
 *   float16, bfloat16), If / Loop / Scan subgraphs included; the other initializers (int64 shapes,
 *   constants) are copied unchanged. A param with no initializer of its name (a Loop body that the
 *   load unrolled keeps a copy per iteration) is LITHE_ERR_UNSUPPORTED, never written back stale.
 *   lithe folds no BatchNorm, so nothing is unfolded.
 * - a native tree is lowered to standard operators at opset 17 (ir_version 8), input "X" (float32
 *   (batch, nI); int64 ids (batch,) for Embed, (batch, k) for its column getter), output "Y"
 *   (batch, nO), the batch axis dynamic: Linear and the dense activations -> Gemm (transB) and the
 *   activation's operators, Softmax -> Gemm, [Div by temperature,] Softmax (logits with
 *   normalize_outputs false), MultiSoftmax -> Gemm [+ Split, Softmax, Concat], Maxout -> Gemm,
 *   Reshape, ReduceMax, LayerNorm -> LayerNormalization (epsilon 1e-8), Embed -> Gather,
 *   concatenate -> Concat, add / residual -> Add, noop and Dropout -> nothing (inference). A node
 *   used twice (tied weights) writes its initializers once. Initializers are named
 *   "<node name>_<walk index>.<param>" ("relu_1.W"; the index as in lithe_model_walk), so the same
 *   tree always exports the same bytes. A graph node inside the tree (chain(graph, Softmax), as the
 *   Python exporter builds PyTorchWrapper models) is inlined: its nodes, attributes and
 *   initializers (params at their current values) under the prefix "<node name>_<walk index>/",
 *   from graphs of one input and one output at opsets 13-17 (whose operators mean the same at 17).
 * Statuses: LITHE_ERR_UNSUPPORTED naming the first node with no standard ONNX equivalent
 * (HashEmbed's MurmurHash, the ragged / padded / list sequence layers; a graph node inside a
 * tree at another opset, with several inputs or outputs or another operator domain), LITHE_ERR_STATE (params unset: initialize first;
 * live LoRA adapters: merge them first, lithe_model_merge_lora), LITHE_ERR_INVALID_ARG, LITHE_ERR_OOM;
 * and LITHE_ERR_IO naming the path. The file is written atomically (temporary file, fsync, rename).
 * *out: lithe_buffer_free. Not thread-safe for m: no other thread may use the model meanwhile. */
LITHE_API lithe_status lithe_model_save_onnx_bytes(lithe_model *m, uint8_t **out, size_t *len);
LITHE_API lithe_status lithe_model_save_onnx(lithe_model *m, const char *path);

/* --- TensorFlow.js layers models (docs/tfjs.md) ------------------------------------------------
 * A model saved by TF.js (`model.save`, or tensorflowjs_converter from Keras): `model.json` with
 * format "layers-model" (the Keras topology under modelTopology, the shards' manifest under
 * weightsManifest) and its binary weight shards. lithe lowers the topology to an ONNX graph and
 * loads it as lithe_onnx_load_bytes does: the result is one "onnx_graph.v1" node that predicts,
 * trains and saves like an imported ONNX model. Its params are TF.js's weights under their
 * manifest names ("dense_Dense1/kernel"), in TF.js's layouts (a Conv2D kernel is (KH, KW, C, F)),
 * all trainable but BatchNormalization's moving mean and variance and the weights of layers saved
 * with "trainable": false (frozen: lithe_model_set_frozen changes that). Input and output are
 * TF.js's: channels-last (N, H, W, C) for images; several inputs / outputs as tuples in the
 * model's order. Layers: InputLayer, Dense, Conv2D, DepthwiseConv2D, SeparableConv2D
 * (channels_last; padding valid or same; strides, dilation), MaxPooling2D, AveragePooling2D,
 * GlobalAveragePooling2D, GlobalMaxPooling2D, GlobalAveragePooling1D, UpSampling2D (nearest), Conv1D,
 * MaxPooling1D, AveragePooling1D, GlobalMaxPooling1D,
 * BatchNormalization (inference: moving statistics), LayerNormalization, Embedding, Flatten, Reshape,
 * ZeroPadding2D, Activation, ReLU, LeakyReLU, ELU, Softmax, Add, Subtract, Multiply, Average,
 * Concatenate; Dropout and the noise layers are identities. Activations: linear, relu, relu6,
 * sigmoid, hard_sigmoid, tanh, softmax, log_softmax, elu, selu, softplus, softsign, swish / silu,
 * mish, gelu, gelu_new. Weights: float32, int32, and uint8 / uint16 / float16 quantization. A
 * model using layers or activations lithe lacks is refused at load, all of them listed. Nothing
 * is trusted: every shape, count, shard size and offset is checked. Statuses: LITHE_ERR_FORMAT
 * (malformed JSON or manifest, a short or long shard, a weight whose shape does not fit its layer,
 * naming the layer and the numbers), LITHE_ERR_UNSUPPORTED (layers, activations or options lithe
 * lacks; a "graph-model": convert SavedModels with tf2onnx instead), LITHE_ERR_IO, LITHE_ERR_OOM. */

/* From model.json's text and the weight shards' bytes: every shard of every manifest group,
 * concatenated in manifest order (the `paths` are not read). Both are copied. */
LITHE_API lithe_status lithe_tfjs_load_bytes(const char *model_json, size_t json_len, const uint8_t *weights,
                                             size_t weights_len, lithe_model **out);
/* From the path of model.json: the shards are read relative to its folder; absolute paths and
 * '..' in the manifest's paths are refused (lithe_model_load also takes a path ending in ".json"). */
LITHE_API lithe_status lithe_tfjs_load(const char *path, lithe_model **out);
/* TF.js out: a model loaded by lithe_tfjs_load / lithe_tfjs_load_bytes (and fine-tuned, saved to
 * .lithe and loaded again: the graph node keeps model.json as its `tfjs_json` attr) written back
 * as TF.js layers format that @tensorflow/tfjs's loadLayersModel reads: model.json with every
 * member of the original (modelTopology, trainingConfig, ...) as it was and a new weightsManifest
 * (one group, one shard "group1-shard1of1.bin", every weight float32 — quantized ones written
 * dequantized — in the original order) holding the node's current params. Manifest weights that
 * are not params (never read by lithe's lowering, e.g. optimizer state) are left out. m is the
 * graph node or a tree holding exactly one. *json (not NUL-terminated; json_len bytes) and
 * *weights are freed with lithe_buffer_free. Statuses: LITHE_ERR_UNSUPPORTED (not from TF.js),
 * LITHE_ERR_FORMAT (a damaged tfjs_json attr), LITHE_ERR_STATE (live LoRA adapters: merge them first,
 * lithe_model_merge_lora), LITHE_ERR_OOM. */
LITHE_API lithe_status lithe_tfjs_save_bytes(lithe_model *m, char **json, size_t *json_len, uint8_t **weights,
                                             size_t *weights_len);
/* The same into the folder dir (made if missing, one level): dir/group1-shard1of1.bin, then
 * dir/model.json, each written atomically (a temporary file, then a rename), so an interrupted
 * save never leaves a half-written file. LITHE_ERR_IO names the path and the system's reason. */
LITHE_API lithe_status lithe_tfjs_save(lithe_model *m, const char *dir);

/* --- NumPy .npy files (format 1.0-3.0; dtypes <f4 <f2 <i4 <i8 <u8 <u4 |u1, C order) -------- */

/* A new CPU tensor from .npy bytes. Every header byte and size is checked: malformed input is
 * LITHE_ERR_FORMAT, another dtype or a big-endian array LITHE_ERR_DTYPE, a Fortran-ordered one
 * LITHE_ERR_UNSUPPORTED. */
LITHE_API lithe_status lithe_npy_load(const uint8_t *data, size_t len, lithe_tensor **out);
/* The tensor as .npy bytes, exactly as numpy.save writes them (*out: lithe_buffer_free). */
LITHE_API lithe_status lithe_npy_save(const lithe_tensor *t, uint8_t **out, size_t *len);
/* The same with files; the write is atomic (temporary file, fsync, rename): a failure never
 * leaves a half-written file. LITHE_ERR_IO names the path and the system's reason. */
LITHE_API lithe_status lithe_npy_read_file(const char *path, lithe_tensor **out);
LITHE_API lithe_status lithe_npy_write_file(const lithe_tensor *t, const char *path);

/* --- Thinc's bytes (Model.to_bytes / from_bytes, Thinc 8.x) ---------------------------------- */

/* m's tree as Thinc 8's to_bytes writes it (one msgpack map: nodes, attrs, params in srsly's numpy
 * encoding, shims), byte for byte, so Thinc's from_bytes loads it. *out is freed with
 * lithe_buffer_free. Statuses: LITHE_ERR_VALUE (a ref outside the tree), LITHE_ERR_UNSUPPORTED
 * (shims: see lithe_model_to_thinc_bytes_shims; an attr Thinc cannot hold), LITHE_ERR_STATE (live LoRA
 * adapters: merge them first, lithe_model_merge_lora), LITHE_ERR_OOM. */
LITHE_API lithe_status lithe_model_to_thinc_bytes(lithe_model *m, uint8_t **out, size_t *len);
/* The same for a tree with wrapped-framework graphs (a Thinc PyTorchWrapper exported by
 * lithe.export: an "onnx_graph.v1" node, whose weights Thinc keeps in the node's shim, not its
 * params). shim_bytes[k] (shim_lens[k] bytes) is the Thinc shim bytes of the k-th node holding a
 * shim in walk order (for PyTorchShim: msgpack {"config", "state": torch.save(state_dict)}, which
 * the caller makes with torch from the node's params — lithe.Model.to_thinc_bytes(thinc_model)
 * does); those nodes are written with no params and no attrs, and shims [shim_bytes[k]]. n_shim
 * must equal the number of such nodes (else LITHE_ERR_VALUE); 0 with such nodes is
 * LITHE_ERR_UNSUPPORTED, as from lithe_model_to_thinc_bytes. Other statuses as there. */
LITHE_API lithe_status lithe_model_to_thinc_bytes_shims(lithe_model *m, size_t n_shim,
                                                        const uint8_t *const *shim_bytes, const size_t *shim_lens,
                                                        uint8_t **out, size_t *len);
/* Loads bytes written by Thinc's to_bytes (or by lithe) into m, a tree built the same way (as
 * Thinc rebuilds the architecture from config, then calls from_bytes). The bytes are checked
 * whole before anything changes, as Thinc's can_from_bytes(strict=True) does: the node count,
 * each node's name, its dims (present, and equal where set), its params (known names, float32,
 * shapes equal to those already set, data lengths), its attrs (decodable) and its shims. A
 * mismatch is LITHE_ERR_VALUE / LITHE_ERR_SHAPE naming the node index, its name and what
 * differs; malformed bytes are LITHE_ERR_FORMAT with the byte offset; an attr of lithe's LoRA
 * adapters ("lora_alpha:*", "lora_layout:*": Thinc has none, and lithe_model_to_thinc_bytes
 * would refuse the model) is LITHE_ERR_UNSUPPORTED. Then dims, refs, attrs (overwritten, as
 * from_bytes does) and params are set. */
LITHE_API lithe_status lithe_model_from_thinc_bytes(lithe_model *m, const uint8_t *data, size_t len);

/* The optimizer's state for the params of m's tree — step counts, Adam/RAdam moments,
 * averages — as a byte blob (*out, freed with lithe_buffer_free), keyed by each node's walk
 * index and param name so it loads into the same architecture in another process. Hyper-
 * parameters and schedules are not included: build the optimizer the same way. */
LITHE_API lithe_status lithe_optimizer_save_state(const lithe_optimizer *opt, lithe_model *m, uint8_t **out,
                                                  size_t *len);
/* Replaces opt's state with a blob from lithe_optimizer_save_state, for the params of m's tree:
 * training then resumes exactly. Never trusts the bytes: a truncated or foreign blob is
 * LITHE_ERR_FORMAT, one for another tree LITHE_ERR_VALUE / LITHE_ERR_SHAPE, naming the entry; opt
 * is then unchanged. */
LITHE_API lithe_status lithe_optimizer_load_state(lithe_optimizer *opt, lithe_model *m, const uint8_t *data,
                                                  size_t len);
/* Frees a buffer lithe allocated for the caller. Accepts NULL. */
LITHE_API void lithe_buffer_free(void *p);

/* Thinc's `with model.use_params(optimizer.averages)`: exchanges every param of m's tree that has
 * an average in `opt` with that average (pointer swap, no copy). Call it again to restore: the
 * two calls bracket evaluation with averaged weights. Params without an average are untouched.
 * Do not run finish_update while swapped. Statuses: LITHE_ERR_OOM (nothing swapped). */
LITHE_API lithe_status lithe_optimizer_swap_averages(lithe_optimizer *opt, lithe_model *m);

typedef struct lithe_cce_opts {
    bool unnormalized;     /* Thinc's normalize=False: no division by the batch size */
    bool has_missing_value; /* with missing_value: rows whose label equals it get no gradient */
    int64_t missing_value;
    float label_smoothing; /* int labels only, as in Thinc */
} lithe_cce_opts;

/* Thinc's CategoricalCrossentropy: guesses (B, C) float32 in [0, 1]; truths either int32/int64
 * labels (B,) or float32 (B, C) targets. *d_guesses = (guesses - target) * mask / B (a new
 * tensor); *loss = sum(d_guesses**2), which is what Thinc 8.1 reports. opts may be NULL. Either
 * output may be NULL. Statuses: LITHE_ERR_SHAPE, LITHE_ERR_DTYPE, LITHE_ERR_VALUE (a guess or
 * target outside [0, 1], a label outside [0, C), bad smoothing). */
LITHE_API lithe_status lithe_categorical_crossentropy(const lithe_cce_opts *opts,
                                                      const lithe_tensor *guesses,
                                                      const lithe_tensor *truths,
                                                      lithe_tensor **d_guesses, float *loss);

/* String targets for CategoricalCrossentropy, Thinc's names= / missing_value= / neg_prefix=. */
typedef struct lithe_cce_names {
    const char *const *names; /* one per class (C) */
    size_t n_names;
    const char *const *truths; /* one per row (B) */
    size_t n_truths;
    const char *missing_label; /* a row with this label gets no gradient (NULL: none) */
    const char *neg_prefix;    /* "!dog": the row is known not to be "dog"; only that column is
                                  pushed down (NULL: none) */
} lithe_cce_names;

/* Thinc's CategoricalCrossentropy with string labels (opts as above; label_smoothing applies).
 * An unknown label is LITHE_ERR_VALUE naming it; a negative label with smoothing too (Thinc
 * raises on the negative target it makes). */
LITHE_API lithe_status lithe_categorical_crossentropy_names(const lithe_cce_opts *opts, const lithe_tensor *guesses,
                                                            const lithe_cce_names *labels, lithe_tensor **d_guesses,
                                                            float *loss);
/* Thinc's SequenceCategoricalCrossentropy: CategoricalCrossentropy(normalize=False) on each of
 * the n (guesses[i], truths[i]) pairs, each gradient divided by n unless opts->unnormalized;
 * d_guesses (n slots, may be NULL) receives n new tensors; *loss = the sum of their squares. */
LITHE_API lithe_status lithe_sequence_categorical_crossentropy(const lithe_cce_opts *opts, size_t n,
                                                               const lithe_tensor *const *guesses,
                                                               const lithe_tensor *const *truths,
                                                               lithe_tensor **d_guesses, float *loss);
/* The true cross-entropy -sum target * log(guess), averaged over the counted rows (summed with
 * opts->unnormalized), for the same targets as lithe_categorical_crossentropy (int labels with
 * smoothing and missing rows, or float targets). Thinc reports sum(d**2) instead; lithe exposes
 * both. log is floored at 1e-30. */
LITHE_API lithe_status lithe_cross_entropy(const lithe_cce_opts *opts, const lithe_tensor *guesses,
                                           const lithe_tensor *truths, double *out);

/* Thinc's L2Distance(normalize=): guesses and truths float32 of any equal shape (rank >= 1: (B, N),
 * (B, T, N) sequences, ...), as Thinc; *d_guesses = (guesses - truths) / shape[0] (or not divided),
 * *loss = sum(d_guesses**2) (Thinc's get_loss). Either output may be NULL. Statuses:
 * LITHE_ERR_INVALID_ARG, LITHE_ERR_DTYPE, LITHE_ERR_SHAPE (names the shapes). */
LITHE_API lithe_status lithe_l2_distance(bool normalize, const lithe_tensor *guesses, const lithe_tensor *truths,
                                         lithe_tensor **d_guesses, float *loss);
/* The mean squared error, mean((guesses - truths)**2) over every element (computed in double):
 * the figure PyTorch's MSELoss and tfjs's meanSquaredError report, where Thinc's L2Distance
 * reports sum(d_guesses**2). The same shapes as lithe_l2_distance. Statuses: as
 * lithe_l2_distance. */
LITHE_API lithe_status lithe_mean_squared_error(const lithe_tensor *guesses, const lithe_tensor *truths,
                                                double *out);
/* Thinc's CosineDistance(normalize=, ignore_zeros=): per row, cosine of (guesses + 1e-8,
 * truths + 1e-8); *d_guesses = -(y / (|yh| |y|) - cos * yh / |yh|^2) (/ B), *loss = sum |cos - 1|
 * (/ B); with ignore_zeros, rows whose truth is all zeros count for nothing. Same statuses. */
LITHE_API lithe_status lithe_cosine_distance(bool normalize, bool ignore_zeros, const lithe_tensor *guesses,
                                             const lithe_tensor *truths, lithe_tensor **d_guesses, float *loss);

#ifdef __cplusplus
}
#endif

#endif /* LITHE_H */
