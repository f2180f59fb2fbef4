/* The Vulkan backend's shared declarations: the device context, the pooled buffer memory, the
 * command stream and the pipeline cache (vulkan_backend.c), used by the primitives
 * (elementwise.c, gemm.c, act.c, norm.c, index.c, seq.c, graph.c; table.c). Not installed. */
#ifndef LITHE_VULKAN_INTERNAL_H
#define LITHE_VULKAN_INTERNAL_H

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include "../../core/backend.h"

/* ---- entry points, loaded at run time ---- */
typedef struct lithe__vk_fns {
    PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr;
#define VK_GLOBAL(f) PFN_##f f;
#define VK_INSTANCE(f) PFN_##f f;
#define VK_DEVICE(f) PFN_##f f;
#include "vk_functions.def"
#undef VK_GLOBAL
#undef VK_INSTANCE
#undef VK_DEVICE
} lithe__vk_fns;

/* ---- memory: big device buffers ("blocks") carved by a first-fit free list ---- */
typedef struct vk_range {
    VkDeviceSize off, size;
} vk_range;

typedef struct vk_block {
    VkBuffer buf;
    VkDeviceMemory mem;
    VkDeviceSize size;
    vk_range *free; /* sorted by offset, coalesced */
    size_t n_free, cap_free;
    bool dedicated; /* one allocation bigger than the pool's block size: released when freed */
} vk_block;

/* What a tensor's storage->data points to on this backend. */
typedef struct lithe__vk_alloc {
    vk_block *block; /* NULL for a zero-byte allocation */
    VkDeviceSize off, size;
} lithe__vk_alloc;

/* ---- host-visible staging memory, one linear arena per frame ---- */
typedef struct vk_stage_chunk {
    VkBuffer buf;
    VkDeviceMemory mem;
    void *map;
    VkDeviceSize size, used;
} vk_stage_chunk;

/* A frame: a command buffer with its fence, descriptor pool and staging arena. Frames are used
 * round-robin, so the host records frame k+1 while the device runs frame k. */
#define LITHE__VK_FRAMES 3
/* A frame holds at most this many dispatches before it is submitted (without waiting), so the
 * descriptor pool is bounded and the device starts work early on long chains. */
#define LITHE__VK_FRAME_DISPATCHES 512
typedef struct vk_frame {
    VkCommandBuffer cmd;
    VkFence fence;
    VkDescriptorPool pool;
    vk_stage_chunk *chunks;
    size_t n_chunks;
    bool recording, submitted;
    uint32_t n_dispatches;
} vk_frame;

/* ---- shaders and pipelines ---- */
typedef struct lithe__vk_shader {
    const char *name;
    const uint32_t *code;
    size_t size; /* bytes */
} lithe__vk_shader;
extern const lithe__vk_shader lithe__vk_shaders[];
extern const size_t lithe__vk_shader_count;

#define LITHE__VK_SPEC 8 /* specialization constants 0..7 (uint) */
typedef struct vk_pipeline {
    const char *shader;
    uint32_t spec[LITHE__VK_SPEC];
    VkPipeline pipe;
} vk_pipeline;

/* Push constants every shader declares (shaders/common.glsl): u[0..9] and f[0..15] are the
 * op's own arguments; u[10 + b] is the word offset of the tensor bound at binding b inside its
 * allocation (views start mid-allocation). 128 bytes: the minimum every device supports. */
#define LITHE__VK_BINDINGS 6
typedef struct lithe__vk_push {
    uint32_t u[16];
    float f[16];
} lithe__vk_push;

typedef struct lithe__vk {
    lithe__vk_fns fn;
    void *lib;
    VkInstance instance;
    VkPhysicalDevice phys;
    VkPhysicalDeviceProperties props;
    VkPhysicalDeviceMemoryProperties memprops;
    VkDevice device;
    VkQueue queue;
    uint32_t queue_family;
    uint32_t device_mem_type, host_mem_type;
    VkDeviceSize align, block_size, max_range;
    vk_block **blocks;
    size_t n_blocks;
    VkCommandPool cmd_pool;
    vk_frame frames[LITHE__VK_FRAMES];
    unsigned frame; /* the frame being recorded */
    VkDescriptorSetLayout dsl;
    VkPipelineLayout layout;
    VkPipelineCache cache;
    vk_pipeline *pipes;
    size_t n_pipes, cap_pipes;
    VkBuffer dummy_buf; /* bound to unused bindings */
    lithe__vk_alloc *dummy;
    char name[32];      /* "vulkan" or "vulkan:<index>" */
    char device_name[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE];
    int phys_index;     /* the device's index in the loader's order (DLPack's device id) */
    /* Statistics for the benchmark and tests (tests/test_device.c asserts on them with n_blocks
     * and n_pipes): queue submissions (each a synchronisation point or a full frame) and
     * dispatches recorded, since creation. */
    uint64_t n_submits, n_dispatches;
    /* What the GEMM variant choice reads (gemm.c, gemm_plan_for): the compute stage's
     * subgroup size and operations (VkPhysicalDeviceSubgroupProperties; 0 when the device is
     * Vulkan 1.0 or its compute stage has none), and whether VK_KHR_cooperative_matrix is exposed. */
    uint32_t subgroup_size;
    VkSubgroupFeatureFlags subgroup_ops;
    bool coopmat;
    bool nan_preserve; /* VK_KHR_shader_float_controls with shaderSignedZeroInfNanPreserveFloat32 */
} lithe__vk;

/* The context of a Vulkan backend. */
static inline lithe__vk *lithe__vk_of(lithe_backend *be) { return (lithe__vk *)be->ctx; }
static inline lithe__vk_alloc *lithe__vk_mem(const lithe_tensor *t) {
    return (lithe__vk_alloc *)t->storage->data;
}

/* A bound argument of a dispatch: the tensor (NULL: unused) and whether the shader writes it. */
typedef struct lithe__vk_arg {
    const lithe_tensor *t;
} lithe__vk_arg;

/* Records one dispatch of `shader` (with spec constants) over groups (gx, gy, 1), binding up to
 * LITHE__VK_BINDINGS tensors in order; fills push->u[10 + b] with each tensor's word offset.
 * Adds the barrier that orders it after everything recorded before. `op` names the primitive for
 * messages. */
lithe_status lithe__vk_dispatch(lithe_backend *be, const char *op, const char *shader,
                                const uint32_t spec[LITHE__VK_SPEC], lithe__vk_push *push,
                                const lithe_tensor *const *bind, size_t n_bind, uint32_t gx,
                                uint32_t gy);
/* Records a buffer copy of nbytes between two allocations (with barriers). */
lithe_status lithe__vk_copy_bytes(lithe_backend *be, lithe__vk_alloc *dst, VkDeviceSize dst_off,
                                  const lithe__vk_alloc *src, VkDeviceSize src_off,
                                  VkDeviceSize nbytes);
/* Records a fill of nbytes (a multiple of 4 at a 4-aligned offset) with a 32-bit pattern. */
lithe_status lithe__vk_fill_words(lithe_backend *be, lithe__vk_alloc *dst, VkDeviceSize off,
                                  VkDeviceSize nbytes, uint32_t pattern);
/* Submits what was recorded and waits for the device: a synchronisation point. */
#define VKFAIL(what, r) lithe__fail(LITHE_ERR_BACKEND_VK(r), "vulkan: %s failed (VkResult %d)", what, (int)(r))
/* Out-of-memory results become LITHE_ERR_OOM; everything else is a backend failure. */
#define LITHE_ERR_BACKEND_VK(r)                                                                    \
    (((r) == VK_ERROR_OUT_OF_HOST_MEMORY || (r) == VK_ERROR_OUT_OF_DEVICE_MEMORY) ? LITHE_ERR_OOM \
                                                                                   : LITHE_ERR_UNSUPPORTED)
/* Device memory (vulkan_memory.c): a buffer (host-visible and mapped when host), the pooled
 * sub-allocator behind the backend's alloc / free, a pool block's teardown; wait_all waits for
 * every frame in flight (vulkan_backend.c). */
lithe_status lithe__vk_make_buffer(lithe__vk *vk, VkDeviceSize size, bool host, VkBuffer *buf, VkDeviceMemory *mem,
                                   void **map);
lithe_status lithe__vk_mem_alloc(lithe_backend *be, size_t nbytes, void **out);
void lithe__vk_mem_free(lithe_backend *be, void *ptr);
void lithe__vk_block_destroy(lithe__vk *vk, vk_block *b);
lithe_status lithe__vk_wait_all(lithe__vk *vk);
lithe_status lithe__vk_finish(lithe_backend *be);
/* A scratch allocation on the device (for reductions' partial results); free with
 * lithe__vk_free_scratch. */
lithe_status lithe__vk_scratch(lithe_backend *be, size_t nbytes, lithe_tensor **out);

/* The GEMM variant vk_gemm runs for C (M, N) = op(A) (M, K) · op(B) (K, N) with aligned
 * untransposed operands on this backend, given $LITHE_VULKAN_GEMM and the device's subgroup
 * properties: "basic-64", "basic-128", "tiled", "subgroup-<size>", or "none" when a forced variant
 * is unavailable. For the benchmark's report; the string is static (not thread-safe). */
const char *lithe__vk_gemm_variant(lithe_backend *be, int64_t M, int64_t N, int64_t K);
/* One line on what the GEMM choice reads: device name and type, subgroup size and operations of the
 * compute stage, VK_KHR_cooperative_matrix. For the benchmark. */
void lithe__vk_describe(lithe_backend *be, char *buf, size_t cap);

/* The primitives (elementwise.c, gemm.c, act.c, norm.c, index.c, seq.c, graph.c): vk_<name> for
 * every line of core/primitives.def but those unsupported.h lists; the table (table.c) is
 * generated from the same list, so a primitive neither written nor listed fails the build. */
#include "unsupported.h"
#define LITHE_PRIM(name, params, args) LITHE__PRIM_DECL(vk_, name, params)
#include "../../core/primitives.def"
#undef LITHE_PRIM

/* The table of primitives (table.c); memory ops come from vulkan_backend.c. */
void lithe__vk_fill_ops(lithe_backend_ops *ops);

#endif
