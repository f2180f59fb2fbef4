/* DLPack for lithe: includes the system's dlpack.h and declares the versioned 1.x managed
 * tensor where that header (Debian's is 0.6) predates it. The layout follows the DLPack 1.0
 * specification: version, manager_ctx, deleter, flags, then the DLTensor. */
#ifndef LITHE_DLPACK_H
#define LITHE_DLPACK_H

#include <dlpack/dlpack.h>
#include <stdint.h>

#ifndef DLPACK_MAJOR_VERSION
#define LITHE_DLPACK_DECLARES_VERSIONED 1
#define DLPACK_MAJOR_VERSION 1
#define DLPACK_MINOR_VERSION 0

typedef struct DLPackVersion {
    uint32_t major;
    uint32_t minor;
} DLPackVersion;

#define DLPACK_FLAG_BITMASK_READ_ONLY (UINT64_C(1) << 0)
#define DLPACK_FLAG_BITMASK_IS_COPIED (UINT64_C(1) << 1)

typedef struct DLManagedTensorVersioned {
    DLPackVersion version;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensorVersioned *self);
    uint64_t flags;
    DLTensor dl_tensor;
} DLManagedTensorVersioned;
#endif

#endif /* LITHE_DLPACK_H */
