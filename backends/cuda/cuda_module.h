/* The interface between liblithe (backends/cuda/cuda_backend.c, plain C) and the CUDA module
 * (liblithe_cuda.so, built by nvcc from the .cu files beside this header). liblithe never links
 * the CUDA runtime or cuBLAS: it dlopens the module when "cuda" is first asked for, so the
 * library loads, and every other backend works, on machines without CUDA. The module is built
 * from the same tree as the library, against the same core/internal.h, so the table layout
 * matches by construction; the sizes below are checked anyway at load.
 *
 * The module calls nothing in liblithe (its symbols are hidden, and a test executable links lithe
 * statically): the few services it needs come in lithe__cuda_host. Not installed. */
#ifndef LITHE_CUDA_MODULE_H
#define LITHE_CUDA_MODULE_H

#include "../../core/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LITHE__CUDA_ABI 2

/* What liblithe lends the module. */
typedef struct lithe__cuda_host {
    uint32_t abi;
    size_t sizeof_ops, sizeof_tensor, sizeof_storage, prim_count;
    lithe_status (*fail)(lithe_status status, const char *fmt, ...) LITHE__PRINTF(2, 3);
    /* the allocator hook (lithe_set_allocator), for the module's per-call host memory */
    void *(*malloc_fn)(size_t size);
    void (*free_fn)(void *ptr);
} lithe__cuda_host;

/* What the module offers. */
typedef struct lithe__cuda_module {
    uint32_t abi;
    size_t sizeof_ops, sizeof_tensor, sizeof_storage, prim_count;
    /* "device" (a real GPU through the CUDA runtime) or "host emulation" (LITHE_CUDA_EMULATE). */
    const char *kind;
    /* The number of CUDA devices; LITHE_ERR_UNSUPPORTED with the driver's message when the
     * runtime finds none (no driver, no GPU). */
    lithe_status (*device_count)(int *out);
    /* Opens device `index`: sets be->ops and be->ctx (one stream, one cuBLAS handle, one caching
     * allocator for this backend). */
    lithe_status (*open)(int index, lithe_backend *be);
    /* The device's name ("NVIDIA H100 80GB HBM3") and its stream (a cudaStream_t). */
    const char *(*device_name)(const lithe_backend *be);
    void *(*stream)(const lithe_backend *be);
    /* Which device (index) owns a device pointer; -1 when the runtime does not know it. */
    int (*pointer_device)(const void *ptr);
    /* Statistics: bytes held by the caching allocator (in use, cached) and device allocations. */
    void (*memory_stats)(const lithe_backend *be, size_t *in_use, size_t *cached, size_t *n_device_allocs);
} lithe__cuda_module;

/* liblithe's side (cuda_backend.c): "device" or "host emulation" once loaded, else "not loaded"
 * (for tests). Everything else core reaches through lithe__backend_cuda_desc. */
const char *lithe__cuda_module_kind(void);

/* The module's one exported symbol. */
typedef lithe_status (*lithe__cuda_entry_fn)(const lithe__cuda_host *host, const lithe__cuda_module **out);
#define LITHE__CUDA_ENTRY "lithe_cuda_module_v1"

#ifdef __cplusplus
}
#endif
#endif
