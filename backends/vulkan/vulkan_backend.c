/* The Vulkan backend's machinery: the loader (dlopen'd, so lithe loads on machines without
 * Vulkan), instance and device selection, staging (pooled device memory: vulkan_memory.c), for uploads and
 * downloads, the recorded command stream and the pipeline cache. The primitives themselves are
 * in the family files (elementwise.c, gemm.c, act.c, ...; the table: table.c), one compute shader family per file in shaders/.
 *
 * Command stream: dispatches and copies are recorded into the current frame's command buffer,
 * each preceded by a global memory barrier (compute/transfer writes before -> reads and writes
 * after), and submitted only at synchronisation points (a download, an explicit sync, a
 * reduction read back to the host) or when a frame grows large, never one submit per op. */
#include "vulkan_internal.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>


#define STAGE_CHUNK ((VkDeviceSize)16 << 20)

/* ---------------------------------------------------------------------------------------------
 * Loading and device selection
 * ------------------------------------------------------------------------------------------- */

/* The loader: $LITHE_VULKAN_LOADER (a file name or path for dlopen) when set and not empty, the
 * only one tried then (a loader outside the library path, or a missing one, as the tests do to see
 * the no-loader error); else the usual names. */
static lithe_status load_loader(lithe__vk *vk) {
    const char *names[] = {"libvulkan.so.1", "libvulkan.so", "libvulkan.1.dylib", "libMoltenVK.dylib"};
    const char *env = getenv("LITHE_VULKAN_LOADER");
    if (env && *env) {
        vk->lib = dlopen(env, RTLD_NOW | RTLD_LOCAL);
        if (!vk->lib) {
            const char *why = dlerror();
            return lithe__fail(LITHE_ERR_UNSUPPORTED, "vulkan: no Vulkan loader at LITHE_VULKAN_LOADER=%s (%s)", env,
                               why ? why : "dlopen failed");
        }
    }
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !vk->lib; i++) vk->lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!vk->lib)
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "vulkan: no Vulkan loader (libvulkan.so.1) on this machine; "
                                                  "install one (Debian: libvulkan1 and mesa-vulkan-drivers)");
    /* dlsym returns void *; the conversion to a function pointer goes through memcpy (ISO C). */
    void *sym = dlsym(vk->lib, "vkGetInstanceProcAddr");
    if (!sym) return lithe__fail(LITHE_ERR_UNSUPPORTED, "vulkan: the loader lacks vkGetInstanceProcAddr");
    memcpy(&vk->fn.vkGetInstanceProcAddr, &sym, sizeof sym);
#define VK_GLOBAL(f)                                                                               \
    vk->fn.f = (PFN_##f)vk->fn.vkGetInstanceProcAddr(NULL, #f);                                   \
    if (!vk->fn.f) return lithe__fail(LITHE_ERR_UNSUPPORTED, "vulkan: the loader lacks %s", #f);
#define VK_INSTANCE(f)
#define VK_DEVICE(f)
#include "vk_functions.def"
#undef VK_GLOBAL
#undef VK_INSTANCE
#undef VK_DEVICE
    return LITHE_OK;
}

static lithe_status load_instance_fns(lithe__vk *vk) {
#define VK_GLOBAL(f)
#define VK_INSTANCE(f)                                                                             \
    vk->fn.f = (PFN_##f)vk->fn.vkGetInstanceProcAddr(vk->instance, #f);                           \
    if (!vk->fn.f) return lithe__fail(LITHE_ERR_UNSUPPORTED, "vulkan: the instance lacks %s", #f);
#define VK_DEVICE(f)
#include "vk_functions.def"
#undef VK_GLOBAL
#undef VK_INSTANCE
#undef VK_DEVICE
    return LITHE_OK;
}

static lithe_status load_device_fns(lithe__vk *vk) {
#define VK_GLOBAL(f)
#define VK_INSTANCE(f)
#define VK_DEVICE(f)                                                                               \
    vk->fn.f = (PFN_##f)vk->fn.vkGetDeviceProcAddr(vk->device, #f);                               \
    if (!vk->fn.f) return lithe__fail(LITHE_ERR_UNSUPPORTED, "vulkan: the device lacks %s", #f);
#include "vk_functions.def"
#undef VK_GLOBAL
#undef VK_INSTANCE
#undef VK_DEVICE
    return LITHE_OK;
}

/* Preference among device types: discrete GPUs first, CPU implementations (lavapipe) last. */
static int type_rank(VkPhysicalDeviceType t) {
    switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 0;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 1;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return 3;
    default: return 4;
    }
}

static bool compute_family(lithe__vk *vk, VkPhysicalDevice pd, uint32_t *family) {
    uint32_t n = 0;
    vk->fn.vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, NULL);
    VkQueueFamilyProperties q[16];
    if (n > 16) n = 16;
    vk->fn.vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, q);
    /* a compute family without graphics (an async compute queue) first, then any with compute */
    for (int pass = 0; pass < 2; pass++)
        for (uint32_t i = 0; i < n; i++)
            if ((q[i].queueFlags & VK_QUEUE_COMPUTE_BIT) && (pass || !(q[i].queueFlags & VK_QUEUE_GRAPHICS_BIT))) {
                *family = i;
                return true;
            }
    return false;
}

/* Picks the physical device for `sel` (NULL/"": the best by type; digits: that index; else the
 * first whose name contains it). */
static lithe_status pick_device(lithe__vk *vk, const char *sel) {
    uint32_t n = 0;
    VkResult r = vk->fn.vkEnumeratePhysicalDevices(vk->instance, &n, NULL);
    if (r != VK_SUCCESS) return VKFAIL("vkEnumeratePhysicalDevices", r);
    if (n == 0)
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "vulkan: the loader found no Vulkan device (no driver installed? "
                                                  "Debian: mesa-vulkan-drivers gives lavapipe on the CPU)");
    VkPhysicalDevice pds[16];
    if (n > 16) n = 16;
    r = vk->fn.vkEnumeratePhysicalDevices(vk->instance, &n, pds);
    if (r != VK_SUCCESS && r != VK_INCOMPLETE) return VKFAIL("vkEnumeratePhysicalDevices", r);
    int best = -1, best_rank = 99;
    bool by_index = sel && *sel && strspn(sel, "0123456789") == strlen(sel);
    for (uint32_t i = 0; i < n; i++) {
        VkPhysicalDeviceProperties p;
        vk->fn.vkGetPhysicalDeviceProperties(pds[i], &p);
        uint32_t fam;
        if (!compute_family(vk, pds[i], &fam)) continue;
        if (by_index) {
            if ((uint32_t)atoi(sel) == i) best = (int)i;
        } else if (sel && *sel) {
            if (strstr(p.deviceName, sel) && best < 0) best = (int)i;
        } else if (type_rank(p.deviceType) < best_rank) {
            best = (int)i;
            best_rank = type_rank(p.deviceType);
        }
    }
    if (best < 0)
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "vulkan: no device with a compute queue matches '%s' (%u devices)",
                           sel && *sel ? sel : "(any)", n);
    vk->phys = pds[best];
    vk->phys_index = best;
    vk->fn.vkGetPhysicalDeviceProperties(vk->phys, &vk->props);
    vk->fn.vkGetPhysicalDeviceMemoryProperties(vk->phys, &vk->memprops);
    compute_family(vk, vk->phys, &vk->queue_family);
    snprintf(vk->device_name, sizeof vk->device_name, "%s", vk->props.deviceName);
    /* subgroups (core in Vulkan 1.1): only what the compute stage supports counts */
    if (vk->props.apiVersion >= VK_API_VERSION_1_1) {
        VkPhysicalDeviceSubgroupProperties sg = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
        VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &sg};
        vk->fn.vkGetPhysicalDeviceProperties2(vk->phys, &p2);
        if (sg.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) {
            vk->subgroup_size = sg.subgroupSize;
            vk->subgroup_ops = sg.supportedOperations;
        }
    }
    uint32_t n_ext = 0;
    if (vk->fn.vkEnumerateDeviceExtensionProperties(vk->phys, NULL, &n_ext, NULL) == VK_SUCCESS && n_ext) {
        VkExtensionProperties *ext = lithe__malloc(n_ext * sizeof *ext);
        if (ext && vk->fn.vkEnumerateDeviceExtensionProperties(vk->phys, NULL, &n_ext, ext) == VK_SUCCESS)
            for (uint32_t i = 0; i < n_ext; i++) {
                if (!strcmp(ext[i].extensionName, "VK_KHR_cooperative_matrix")) vk->coopmat = true;
                if (!strcmp(ext[i].extensionName, VK_KHR_SHADER_FLOAT_CONTROLS_EXTENSION_NAME)) vk->nan_preserve = true;
            }
        lithe__free(ext);
    }
    const char *nf = getenv("LITHE_VULKAN_NO_FLOAT_CONTROLS"); /* tests: the path of a device without it */
    if (nf && *nf && strcmp(nf, "0")) vk->nan_preserve = false;
    if (vk->nan_preserve) { /* the extension is there: does it keep NaN for 32-bit floats? */
        VkPhysicalDeviceFloatControlsPropertiesKHR fc = {
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FLOAT_CONTROLS_PROPERTIES_KHR};
        VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &fc};
        vk->fn.vkGetPhysicalDeviceProperties2(vk->phys, &p2);
        vk->nan_preserve = fc.shaderSignedZeroInfNanPreserveFloat32 == VK_TRUE;
    }
    return LITHE_OK;
}


/* ---------------------------------------------------------------------------------------------
 * Frames, recording and submission
 * ------------------------------------------------------------------------------------------- */

static void barrier(lithe__vk *vk, VkCommandBuffer cmd) {
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                                           VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT};
    VkPipelineStageFlags st = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
    vk->fn.vkCmdPipelineBarrier(cmd, st, st, 0, 1, &mb, 0, NULL, 0, NULL);
}

/* Waits for frame f's submission and recycles its descriptor pool and staging arena. */
static lithe_status frame_wait(lithe__vk *vk, vk_frame *f) {
    if (!f->submitted) return LITHE_OK;
    VkResult r = vk->fn.vkWaitForFences(vk->device, 1, &f->fence, VK_TRUE, UINT64_MAX);
    if (r != VK_SUCCESS) return VKFAIL("vkWaitForFences", r);
    vk->fn.vkResetFences(vk->device, 1, &f->fence);
    f->submitted = false;
    vk->fn.vkResetDescriptorPool(vk->device, f->pool, 0);
    for (size_t i = 0; i < f->n_chunks; i++) f->chunks[i].used = 0;
    return LITHE_OK;
}

lithe_status lithe__vk_wait_all(lithe__vk *vk) {
    lithe_status first = LITHE_OK;
    for (unsigned i = 0; i < LITHE__VK_FRAMES; i++) {
        lithe_status s = frame_wait(vk, &vk->frames[i]);
        if (first == LITHE_OK) first = s;
    }
    return first;
}

/* The command buffer being recorded, beginning one (on a free frame) when none is. */
static lithe_status current_cmd(lithe__vk *vk, VkCommandBuffer *out) {
    vk_frame *f = &vk->frames[vk->frame];
    if (!f->recording) {
        LITHE__TRY(frame_wait(vk, f));
        vk->fn.vkResetCommandBuffer(f->cmd, 0);
        VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                       .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
        VkResult r = vk->fn.vkBeginCommandBuffer(f->cmd, &bi);
        if (r != VK_SUCCESS) return VKFAIL("vkBeginCommandBuffer", r);
        f->recording = true;
        f->n_dispatches = 0;
        /* orders this frame after earlier submissions on the queue (host writes to staging are
         * made visible by the submission itself) */
        barrier(vk, f->cmd);
    }
    *out = f->cmd;
    return LITHE_OK;
}

/* Submits the frame being recorded (if any) and moves on to the next frame; no wait. */
static lithe_status submit(lithe__vk *vk) {
    vk_frame *f = &vk->frames[vk->frame];
    if (!f->recording) return LITHE_OK;
    f->recording = false;
    VkResult r = vk->fn.vkEndCommandBuffer(f->cmd);
    if (r != VK_SUCCESS) return VKFAIL("vkEndCommandBuffer", r);
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &f->cmd};
    r = vk->fn.vkQueueSubmit(vk->queue, 1, &si, f->fence);
    if (r != VK_SUCCESS) return VKFAIL("vkQueueSubmit", r);
    f->submitted = true;
    vk->n_submits++;
    vk->frame = (vk->frame + 1) % LITHE__VK_FRAMES;
    return LITHE_OK;
}

lithe_status lithe__vk_finish(lithe_backend *be) {
    lithe__vk *vk = lithe__vk_of(be);
    LITHE__TRY(submit(vk));
    return lithe__vk_wait_all(vk);
}

/* Staging space of n bytes in the current frame's arena. */
static lithe_status stage(lithe__vk *vk, VkDeviceSize n, vk_stage_chunk **chunk, VkDeviceSize *off) {
    vk_frame *f = &vk->frames[vk->frame];
    n = (n + 15) & ~(VkDeviceSize)15;
    for (size_t i = 0; i < f->n_chunks; i++)
        if (f->chunks[i].size - f->chunks[i].used >= n) {
            *chunk = &f->chunks[i];
            *off = f->chunks[i].used;
            f->chunks[i].used += n;
            return LITHE_OK;
        }
    vk_stage_chunk *v = lithe__realloc(f->chunks, (f->n_chunks + 1) * sizeof *v);
    if (!v) return lithe__oom("vulkan staging list", (f->n_chunks + 1) * sizeof *v);
    f->chunks = v;
    vk_stage_chunk *c = &f->chunks[f->n_chunks];
    memset(c, 0, sizeof *c);
    c->size = n > STAGE_CHUNK ? n : STAGE_CHUNK;
    LITHE__TRY(lithe__vk_make_buffer(vk, c->size, true, &c->buf, &c->mem, &c->map));
    f->n_chunks++;
    c->used = n;
    *chunk = c;
    *off = 0;
    return LITHE_OK;
}

static lithe_status vk_upload(lithe_backend *be, void *dst, size_t dst_off, const void *src, size_t n) {
    lithe__vk *vk = lithe__vk_of(be);
    lithe__vk_alloc *a = dst;
    if (!n) return LITHE_OK;
    if (!a->block || dst_off + n > a->size)
        return lithe__fail(LITHE_ERR_INVALID_ARG, "vulkan upload: %zu bytes at %zu outside an allocation of %llu",
                           n, dst_off, (unsigned long long)a->size);
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    LITHE__TRY(current_cmd(vk, &cmd)); /* first: it may recycle this frame's arena */
    vk_stage_chunk *c;
    VkDeviceSize off;
    LITHE__TRY(stage(vk, n, &c, &off));
    memcpy((char *)c->map + off, src, n);
    barrier(vk, cmd);
    VkBufferCopy region = {off, a->off + dst_off, n};
    vk->fn.vkCmdCopyBuffer(cmd, c->buf, a->block->buf, 1, &region);
    return LITHE_OK;
}

static lithe_status vk_download(lithe_backend *be, void *dst, const void *src, size_t src_off, size_t n) {
    lithe__vk *vk = lithe__vk_of(be);
    const lithe__vk_alloc *a = src;
    if (!n) return LITHE_OK;
    if (!a->block || src_off + n > a->size)
        return lithe__fail(LITHE_ERR_INVALID_ARG, "vulkan download: %zu bytes at %zu outside an allocation of %llu",
                           n, src_off, (unsigned long long)a->size);
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    LITHE__TRY(current_cmd(vk, &cmd));
    vk_stage_chunk *c;
    VkDeviceSize off;
    LITHE__TRY(stage(vk, n, &c, &off));
    barrier(vk, cmd);
    VkBufferCopy region = {a->off + src_off, off, n};
    vk->fn.vkCmdCopyBuffer(cmd, a->block->buf, c->buf, 1, &region);
    /* the copy's writes reach the host once the fence signals (submission and fence wait make
     * device writes to coherent memory visible) */
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_HOST_READ_BIT};
    vk->fn.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, NULL,
                                0, NULL);
    unsigned frame = vk->frame;
    LITHE__TRY(submit(vk));
    LITHE__TRY(frame_wait(vk, &vk->frames[frame]));
    /* frame_wait recycled the arena, but nothing else has written to it since */
    memcpy(dst, (const char *)c->map + off, n);
    return LITHE_OK;
}

static lithe_status vk_sync(lithe_backend *be) { return lithe__vk_finish(be); }

lithe_status lithe__vk_copy_bytes(lithe_backend *be, lithe__vk_alloc *dst, VkDeviceSize dst_off,
                                  const lithe__vk_alloc *src, VkDeviceSize src_off, VkDeviceSize nbytes) {
    lithe__vk *vk = lithe__vk_of(be);
    if (!nbytes) return LITHE_OK;
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    LITHE__TRY(current_cmd(vk, &cmd));
    barrier(vk, cmd);
    VkBufferCopy region = {src->off + src_off, dst->off + dst_off, nbytes};
    vk->fn.vkCmdCopyBuffer(cmd, src->block->buf, dst->block->buf, 1, &region);
    return LITHE_OK;
}

lithe_status lithe__vk_fill_words(lithe_backend *be, lithe__vk_alloc *dst, VkDeviceSize off, VkDeviceSize nbytes,
                                  uint32_t pattern) {
    lithe__vk *vk = lithe__vk_of(be);
    if (!nbytes) return LITHE_OK;
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    LITHE__TRY(current_cmd(vk, &cmd));
    barrier(vk, cmd);
    vk->fn.vkCmdFillBuffer(cmd, dst->block->buf, dst->off + off, nbytes, pattern);
    return LITHE_OK;
}

lithe_status lithe__vk_scratch(lithe_backend *be, size_t nbytes, lithe_tensor **out) {
    int64_t n = (int64_t)((nbytes + 3) / 4);
    return lithe__tensor_alloc(be, LITHE_U32, 1, &n, false, out);
}

/* ---------------------------------------------------------------------------------------------
 * Pipelines: one per (shader, specialization constants), created on first use.
 * ------------------------------------------------------------------------------------------- */

/* The shaders ask for SignedZeroInfNanPreserve (shaders/common.glsl); on a device that cannot keep
 * NaN that request is invalid, so a copy of the module without it (its OpCapability, OpExtension and
 * OpExecutionMode: SPIR-V's instructions carry their word count) is what such a device gets. NULL when
 * out of memory. */
static uint32_t *spirv_without_nan_mode(const uint32_t *code, size_t words, size_t *out_words) {
    enum { OP_EXTENSION = 10, OP_EXECUTION_MODE = 16, OP_CAPABILITY = 17, CAP_NAN = 4466, MODE_NAN = 4461 };
    uint32_t *out = lithe__malloc(words * sizeof *out);
    if (!out) return NULL;
    size_t n = words < 5 ? words : 5, i = 5; /* the header's 5 words */
    memcpy(out, code, n * sizeof *out);
    while (i < words) {
        uint32_t wc = code[i] >> 16, op = code[i] & 0xffffu;
        if (!wc || i + wc > words) break; /* malformed: copy the rest; the driver will say */
        bool drop = (op == OP_CAPABILITY && wc == 2 && code[i + 1] == CAP_NAN) ||
                    (op == OP_EXECUTION_MODE && wc >= 3 && code[i + 2] == MODE_NAN) ||
                    (op == OP_EXTENSION && wc >= 2 &&
                     !strncmp((const char *)&code[i + 1], "SPV_KHR_float_controls", (wc - 1) * 4));
        if (!drop) memcpy(out + n, code + i, wc * sizeof *out), n += wc;
        i += wc;
    }
    if (i < words) memcpy(out + n, code + i, (words - i) * sizeof *out), n += words - i;
    *out_words = n;
    return out;
}

static lithe_status get_pipeline(lithe__vk *vk, const char *shader, const uint32_t spec[LITHE__VK_SPEC],
                                 VkPipeline *out) {
    static const uint32_t zero[LITHE__VK_SPEC] = {0};
    if (!spec) spec = zero;
    for (size_t i = 0; i < vk->n_pipes; i++)
        if (vk->pipes[i].shader == shader && !memcmp(vk->pipes[i].spec, spec, sizeof zero)) {
            *out = vk->pipes[i].pipe;
            return LITHE_OK;
        }
    const lithe__vk_shader *sh = NULL;
    for (size_t i = 0; i < lithe__vk_shader_count; i++)
        if (!strcmp(lithe__vk_shaders[i].name, shader)) sh = &lithe__vk_shaders[i];
    if (!sh) return lithe__fail(LITHE_ERR_UNSUPPORTED, "vulkan: no shader '%s' in this build", shader);
    if (vk->n_pipes == vk->cap_pipes) {
        size_t cap = vk->cap_pipes ? vk->cap_pipes * 2 : 32;
        vk_pipeline *v = lithe__realloc(vk->pipes, cap * sizeof *v);
        if (!v) return lithe__oom("vulkan pipeline list", cap * sizeof *v);
        vk->pipes = v;
        vk->cap_pipes = cap;
    }
    VkShaderModuleCreateInfo mi = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                   .codeSize = sh->size,
                                   .pCode = sh->code};
    uint32_t *stripped = NULL;
    if (!vk->nan_preserve) {
        size_t words = 0;
        stripped = spirv_without_nan_mode(sh->code, sh->size / 4, &words);
        if (!stripped) return lithe__oom("vulkan shader module", sh->size);
        mi.codeSize = words * 4;
        mi.pCode = stripped;
    }
    VkShaderModule mod;
    VkResult r = vk->fn.vkCreateShaderModule(vk->device, &mi, NULL, &mod);
    lithe__free(stripped);
    if (r != VK_SUCCESS) return VKFAIL("vkCreateShaderModule", r);
    VkSpecializationMapEntry me[LITHE__VK_SPEC];
    for (uint32_t i = 0; i < LITHE__VK_SPEC; i++) me[i] = (VkSpecializationMapEntry){i, i * 4, 4};
    VkSpecializationInfo si = {LITHE__VK_SPEC, me, sizeof zero, spec};
    VkComputePipelineCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                  .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                  .module = mod,
                  .pName = "main",
                  .pSpecializationInfo = &si},
        .layout = vk->layout};
    VkPipeline p;
    r = vk->fn.vkCreateComputePipelines(vk->device, vk->cache, 1, &ci, NULL, &p);
    vk->fn.vkDestroyShaderModule(vk->device, mod, NULL);
    if (r != VK_SUCCESS)
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "vulkan: creating the pipeline of shader '%s' failed (VkResult %d)",
                           shader, (int)r);
    vk_pipeline *e = &vk->pipes[vk->n_pipes++];
    e->shader = shader;
    memcpy(e->spec, spec, sizeof zero);
    e->pipe = p;
    *out = p;
    return LITHE_OK;
}

lithe_status lithe__vk_dispatch(lithe_backend *be, const char *op, const char *shader,
                                const uint32_t spec[LITHE__VK_SPEC], lithe__vk_push *push,
                                const lithe_tensor *const *bind, size_t n_bind, uint32_t gx, uint32_t gy) {
    lithe__vk *vk = lithe__vk_of(be);
    if (gx == 0 || gy == 0) return LITHE_OK;
    /* every binding must live in this device's memory: a host tensor's pointer is no allocation */
    for (size_t b = 0; b < n_bind; b++)
        if (bind[b] && bind[b]->storage->backend != be)
            return lithe__fail(LITHE_ERR_INVALID_ARG, "vulkan %s: operand %zu is on the %s backend, not this one "
                                                      "(move it with lithe_tensor_to_backend first)",
                               op, b, lithe_backend_name(bind[b]->storage->backend));
    uint32_t maxg = vk->props.limits.maxComputeWorkGroupCount[0] < vk->props.limits.maxComputeWorkGroupCount[1]
                        ? vk->props.limits.maxComputeWorkGroupCount[0]
                        : vk->props.limits.maxComputeWorkGroupCount[1];
    if (gx > maxg || gy > maxg)
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "vulkan %s: %u x %u workgroups exceed the device's limit %u", op,
                           gx, gy, maxg);
    VkPipeline pipe = VK_NULL_HANDLE;
    LITHE__TRY(get_pipeline(vk, shader, spec, &pipe));
    if (vk->frames[vk->frame].recording && vk->frames[vk->frame].n_dispatches >= LITHE__VK_FRAME_DISPATCHES)
        LITHE__TRY(submit(vk));
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    LITHE__TRY(current_cmd(vk, &cmd));
    vk_frame *f = &vk->frames[vk->frame];
    VkDescriptorSetAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                      .descriptorPool = f->pool,
                                      .descriptorSetCount = 1,
                                      .pSetLayouts = &vk->dsl};
    VkDescriptorSet set;
    VkResult r = vk->fn.vkAllocateDescriptorSets(vk->device, &ai, &set);
    if (r != VK_SUCCESS) return VKFAIL("vkAllocateDescriptorSets", r);
    VkDescriptorBufferInfo bi[LITHE__VK_BINDINGS];
    VkWriteDescriptorSet w[LITHE__VK_BINDINGS];
    for (uint32_t b = 0; b < LITHE__VK_BINDINGS; b++) {
        const lithe_tensor *t = b < n_bind ? bind[b] : NULL;
        const lithe__vk_alloc *a = t ? lithe__vk_mem(t) : NULL;
        if (a && a->block) {
            bi[b] = (VkDescriptorBufferInfo){a->block->buf, a->off, a->size};
            push->u[10 + b] = (uint32_t)(((size_t)t->offset * lithe_dtype_size(t->dtype)) / 4);
        } else {
            bi[b] = (VkDescriptorBufferInfo){vk->dummy_buf, vk->dummy->off, vk->dummy->size};
            push->u[10 + b] = 0;
        }
        w[b] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                      .dstSet = set,
                                      .dstBinding = b,
                                      .descriptorCount = 1,
                                      .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                      .pBufferInfo = &bi[b]};
    }
    vk->fn.vkUpdateDescriptorSets(vk->device, LITHE__VK_BINDINGS, w, 0, NULL);
    barrier(vk, cmd);
    vk->fn.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipe);
    vk->fn.vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, vk->layout, 0, 1, &set, 0, NULL);
    vk->fn.vkCmdPushConstants(cmd, vk->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof *push, push);
    vk->fn.vkCmdDispatch(cmd, gx, gy, 1);
    f->n_dispatches++;
    vk->n_dispatches++;
    return LITHE_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Creation
 * ------------------------------------------------------------------------------------------- */

static lithe_status create_context(lithe__vk *vk, const char *sel) {
    LITHE__TRY(load_loader(vk));
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                             .pApplicationName = "lithe",
                             .pEngineName = "lithe",
                             .apiVersion = VK_API_VERSION_1_1};
    VkInstanceCreateInfo ii = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pApplicationInfo = &app};
    VkResult r = vk->fn.vkCreateInstance(&ii, NULL, &vk->instance);
    if (r == VK_ERROR_INCOMPATIBLE_DRIVER)
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "vulkan: no Vulkan 1.1 driver found (VK_ERROR_INCOMPATIBLE_DRIVER)");
    if (r != VK_SUCCESS) return VKFAIL("vkCreateInstance", r);
    LITHE__TRY(load_instance_fns(vk));
    LITHE__TRY(pick_device(vk, sel));
    float prio = 1.0f;
    VkDeviceQueueCreateInfo qi = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                  .queueFamilyIndex = vk->queue_family,
                                  .queueCount = 1,
                                  .pQueuePriorities = &prio};
    const char *const exts[] = {VK_KHR_SHADER_FLOAT_CONTROLS_EXTENSION_NAME};
    VkDeviceCreateInfo di = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                             .queueCreateInfoCount = 1,
                             .pQueueCreateInfos = &qi,
                             .enabledExtensionCount = vk->nan_preserve ? 1 : 0,
                             .ppEnabledExtensionNames = exts};
    r = vk->fn.vkCreateDevice(vk->phys, &di, NULL, &vk->device);
    if (r != VK_SUCCESS) return VKFAIL("vkCreateDevice", r);
    LITHE__TRY(load_device_fns(vk));
    vk->fn.vkGetDeviceQueue(vk->device, vk->queue_family, 0, &vk->queue);

    const VkPhysicalDeviceLimits *L = &vk->props.limits;
    if (L->maxComputeWorkGroupInvocations < 256 || L->maxComputeSharedMemorySize < 16384 ||
        L->maxPushConstantsSize < sizeof(lithe__vk_push))
        return lithe__fail(LITHE_ERR_UNSUPPORTED,
                           "vulkan: device %s is too small (workgroup %u invocations, %u bytes shared, %u bytes push "
                           "constants; lithe needs 256, 16384, 128)",
                           vk->device_name, L->maxComputeWorkGroupInvocations, L->maxComputeSharedMemorySize,
                           L->maxPushConstantsSize);
    vk->align = L->minStorageBufferOffsetAlignment > 256 ? L->minStorageBufferOffsetAlignment : 256;
    vk->max_range = L->maxStorageBufferRange;
    vk->block_size = (VkDeviceSize)64 << 20;
    if (vk->block_size > vk->max_range) vk->block_size = vk->max_range / vk->align * vk->align;

    VkDescriptorSetLayoutBinding lb[LITHE__VK_BINDINGS];
    for (uint32_t b = 0; b < LITHE__VK_BINDINGS; b++)
        lb[b] = (VkDescriptorSetLayoutBinding){b, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, NULL};
    VkDescriptorSetLayoutCreateInfo li = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
                                          .bindingCount = LITHE__VK_BINDINGS,
                                          .pBindings = lb};
    r = vk->fn.vkCreateDescriptorSetLayout(vk->device, &li, NULL, &vk->dsl);
    if (r != VK_SUCCESS) return VKFAIL("vkCreateDescriptorSetLayout", r);
    VkPushConstantRange pr = {VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(lithe__vk_push)};
    VkPipelineLayoutCreateInfo pli = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                      .setLayoutCount = 1,
                                      .pSetLayouts = &vk->dsl,
                                      .pushConstantRangeCount = 1,
                                      .pPushConstantRanges = &pr};
    r = vk->fn.vkCreatePipelineLayout(vk->device, &pli, NULL, &vk->layout);
    if (r != VK_SUCCESS) return VKFAIL("vkCreatePipelineLayout", r);
    VkPipelineCacheCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
    r = vk->fn.vkCreatePipelineCache(vk->device, &pci, NULL, &vk->cache);
    if (r != VK_SUCCESS) return VKFAIL("vkCreatePipelineCache", r);

    VkCommandPoolCreateInfo cpi = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                   .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                   .queueFamilyIndex = vk->queue_family};
    r = vk->fn.vkCreateCommandPool(vk->device, &cpi, NULL, &vk->cmd_pool);
    if (r != VK_SUCCESS) return VKFAIL("vkCreateCommandPool", r);
    for (unsigned i = 0; i < LITHE__VK_FRAMES; i++) {
        vk_frame *f = &vk->frames[i];
        VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                          .commandPool = vk->cmd_pool,
                                          .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                          .commandBufferCount = 1};
        r = vk->fn.vkAllocateCommandBuffers(vk->device, &ai, &f->cmd);
        if (r != VK_SUCCESS) return VKFAIL("vkAllocateCommandBuffers", r);
        VkFenceCreateInfo fi = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
        r = vk->fn.vkCreateFence(vk->device, &fi, NULL, &f->fence);
        if (r != VK_SUCCESS) return VKFAIL("vkCreateFence", r);
        VkDescriptorPoolSize ps = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, LITHE__VK_FRAME_DISPATCHES * LITHE__VK_BINDINGS};
        VkDescriptorPoolCreateInfo dpi = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                          .maxSets = LITHE__VK_FRAME_DISPATCHES,
                                          .poolSizeCount = 1,
                                          .pPoolSizes = &ps};
        r = vk->fn.vkCreateDescriptorPool(vk->device, &dpi, NULL, &f->pool);
        if (r != VK_SUCCESS) return VKFAIL("vkCreateDescriptorPool", r);
    }
    return LITHE_OK;
}

void lithe__vk_describe(lithe_backend *be, char *buf, size_t cap) {
    const lithe__vk *vk = lithe__vk_of(be);
    static const char *const types[] = {"other", "integrated GPU", "discrete GPU", "virtual GPU", "CPU"};
    static const char *const ops[] = {"basic", "vote", "arithmetic", "ballot", "shuffle", "shuffle_relative",
                                      "clustered", "quad"};
    int n = snprintf(buf, cap, "%s (%s, Vulkan %u.%u), compute subgroups: size %u, operations", vk->device_name,
                     vk->props.deviceType < 5 ? types[vk->props.deviceType] : "other",
                     VK_API_VERSION_MAJOR(vk->props.apiVersion), VK_API_VERSION_MINOR(vk->props.apiVersion),
                     vk->subgroup_size);
    for (unsigned i = 0; i < 8 && n > 0 && (size_t)n < cap; i++)
        if (vk->subgroup_ops & (1u << i)) n += snprintf(buf + n, cap - (size_t)n, " %s", ops[i]);
    if (n > 0 && (size_t)n < cap)
        snprintf(buf + n, cap - (size_t)n, "; VK_KHR_cooperative_matrix: %s; NaN kept in shaders: %s",
                 vk->coopmat ? "exposed" : "absent", vk->nan_preserve ? "yes" : "no (the driver may drop it)");
}

static lithe_backend_ops vk_ops_storage;
static void init_ops(void) {
    vk_ops_storage.alloc = lithe__vk_mem_alloc;
    vk_ops_storage.free = lithe__vk_mem_free;
    vk_ops_storage.upload = vk_upload;
    vk_ops_storage.download = vk_download;
    vk_ops_storage.sync = vk_sync;
    lithe__vk_fill_ops(&vk_ops_storage);
}

/* The table is the same for every device; filled once. */
static const lithe_backend_ops *vk_ops_table(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, init_ops);
    return &vk_ops_storage;
}

/* Backends made so far, one per selection string; never freed (the library owns them). */
#define MAX_VK_BACKENDS 8
static struct {
    char sel[64];
    lithe_backend *be;
} made[MAX_VK_BACKENDS];
static size_t n_made;
static pthread_mutex_t made_lock = PTHREAD_MUTEX_INITIALIZER;

static void destroy_context(lithe__vk *vk) {
    if (!vk) return;
    if (vk->device) {
        vk->fn.vkDeviceWaitIdle(vk->device);
        for (unsigned i = 0; i < LITHE__VK_FRAMES; i++) {
            vk_frame *f = &vk->frames[i];
            for (size_t c = 0; c < f->n_chunks; c++) {
                vk->fn.vkDestroyBuffer(vk->device, f->chunks[c].buf, NULL);
                vk->fn.vkFreeMemory(vk->device, f->chunks[c].mem, NULL);
            }
            lithe__free(f->chunks);
            if (f->fence) vk->fn.vkDestroyFence(vk->device, f->fence, NULL);
            if (f->pool) vk->fn.vkDestroyDescriptorPool(vk->device, f->pool, NULL);
        }
        if (vk->cmd_pool) vk->fn.vkDestroyCommandPool(vk->device, vk->cmd_pool, NULL);
        for (size_t i = 0; i < vk->n_pipes; i++) vk->fn.vkDestroyPipeline(vk->device, vk->pipes[i].pipe, NULL);
        if (vk->cache) vk->fn.vkDestroyPipelineCache(vk->device, vk->cache, NULL);
        if (vk->layout) vk->fn.vkDestroyPipelineLayout(vk->device, vk->layout, NULL);
        if (vk->dsl) vk->fn.vkDestroyDescriptorSetLayout(vk->device, vk->dsl, NULL);
        for (size_t i = 0; i < vk->n_blocks; i++) lithe__vk_block_destroy(vk, vk->blocks[i]);
        vk->fn.vkDestroyDevice(vk->device, NULL);
    }
    if (vk->instance && vk->fn.vkDestroyInstance) vk->fn.vkDestroyInstance(vk->instance, NULL);
    lithe__free(vk->pipes);
    lithe__free(vk->blocks);
    lithe__free(vk->dummy);
    /* the loader stays loaded: drivers may have registered atexit handlers */
    lithe__free(vk);
}

extern const lithe_backend_desc lithe__backend_vulkan_desc;

/* "vulkan" (device from $LITHE_VULKAN_DEVICE or the best by type; NULL too) or
 * "vulkan:<index|name>" */
static lithe_status vk_get(const char *name, lithe_backend **out) {
    *out = NULL;
    if (!name) name = "vulkan";
    const char *sel = NULL;
    if (name[6] == ':') sel = name + 7;
    else if (name[6] == '\0') sel = getenv("LITHE_VULKAN_DEVICE");
    else return lithe__fail(LITHE_ERR_NOT_FOUND, "no backend named '%s' (vulkan, vulkan:<index>, vulkan:<name>)", name);
    if (!sel) sel = "";
    if (strlen(sel) >= sizeof made[0].sel)
        return lithe__fail(LITHE_ERR_INVALID_ARG, "vulkan: device selection '%s' is too long", sel);
    pthread_mutex_lock(&made_lock);
    for (size_t i = 0; i < n_made; i++)
        if (!strcmp(made[i].sel, sel)) {
            *out = made[i].be;
            pthread_mutex_unlock(&made_lock);
            return LITHE_OK;
        }
    lithe_status s = LITHE_OK;
    lithe__vk *vk = NULL;
    lithe_backend *be = NULL;
    if (n_made == MAX_VK_BACKENDS) {
        s = lithe__fail(LITHE_ERR_UNSUPPORTED, "vulkan: at most %d device selections per process", MAX_VK_BACKENDS);
        goto done;
    }
    vk = lithe__calloc(1, sizeof *vk);
    be = lithe__calloc(1, sizeof *be);
    if (!vk || !be) {
        s = lithe__oom("vulkan backend", sizeof *vk + sizeof *be);
        goto done;
    }
    s = create_context(vk, sel);
    if (s != LITHE_OK) goto done;
    if (name[6] == ':') snprintf(vk->name, sizeof vk->name, "vulkan:%.24s", sel);
    else snprintf(vk->name, sizeof vk->name, "vulkan");
    be->name = vk->name;
    be->host_memory = false;
    be->dl_device_type = 7; /* kDLVulkan: what __dlpack_device__ reports; export refuses it */
    be->dl_device_id = vk->phys_index;
    be->ops = vk_ops_table();
    be->ctx = vk;
    be->desc = &lithe__backend_vulkan_desc;
    s = lithe__vk_mem_alloc(be, 256, (void **)&vk->dummy);
    if (s != LITHE_OK) goto done;
    vk->dummy_buf = vk->dummy->block->buf;
    snprintf(made[n_made].sel, sizeof made[n_made].sel, "%s", sel);
    made[n_made++].be = be;
    *out = be;
done:
    if (s != LITHE_OK) {
        /* keep the message: destroying may call into the driver */
        destroy_context(vk);
        lithe__free(be);
    }
    pthread_mutex_unlock(&made_lock);
    return s;
}

static const char *vk_device_name(const lithe_backend *be) { return ((const lithe__vk *)be->ctx)->device_name; }

const lithe_backend_desc lithe__backend_vulkan_desc = {
    .api_version = LITHE_BACKEND_API_VERSION,
    .name = "vulkan",
    .dl_device_type = 7, /* kDLVulkan: what __dlpack_device__ reports; export refuses it (no get_device) */
    .get = vk_get,
    .device_name = vk_device_name,
};
