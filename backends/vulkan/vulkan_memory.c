/* The Vulkan backend's device memory: buffers, and pooled blocks each with a sorted, coalesced
 * free list that lithe__vk_mem_alloc / lithe__vk_mem_free sub-allocate. */
#include "vulkan_internal.h"

#include <string.h>

static bool find_mem_type(const lithe__vk *vk, uint32_t bits, VkMemoryPropertyFlags want, uint32_t *out) {
    for (uint32_t i = 0; i < vk->memprops.memoryTypeCount; i++)
        if ((bits & (1u << i)) && (vk->memprops.memoryTypes[i].propertyFlags & want) == want) {
            *out = i;
            return true;
        }
    return false;
}

/* A buffer with its own memory: device-local (preferred) or host-visible coherent (staging). */
lithe_status lithe__vk_make_buffer(lithe__vk *vk, VkDeviceSize size, bool host, VkBuffer *buf, VkDeviceMemory *mem,
                                void **map) {
    VkBufferCreateInfo bi = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                             .size = size,
                             .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                      VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                             .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
    VkResult r = vk->fn.vkCreateBuffer(vk->device, &bi, NULL, buf);
    if (r != VK_SUCCESS) return VKFAIL("vkCreateBuffer", r);
    VkMemoryRequirements req;
    vk->fn.vkGetBufferMemoryRequirements(vk->device, *buf, &req);
    uint32_t type;
    bool ok = host ? find_mem_type(vk, req.memoryTypeBits,
                                   VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, &type)
                   : (find_mem_type(vk, req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, &type) ||
                      find_mem_type(vk, req.memoryTypeBits, 0, &type));
    if (!ok) {
        vk->fn.vkDestroyBuffer(vk->device, *buf, NULL);
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "vulkan: no %s memory type for a buffer",
                           host ? "host-visible coherent" : "device");
    }
    VkMemoryAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                               .allocationSize = req.size,
                               .memoryTypeIndex = type};
    r = vk->fn.vkAllocateMemory(vk->device, &ai, NULL, mem);
    if (r != VK_SUCCESS) {
        vk->fn.vkDestroyBuffer(vk->device, *buf, NULL);
        return r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY
                   ? lithe__fail(LITHE_ERR_OOM, "vulkan: out of %s memory allocating %llu bytes",
                                 host ? "staging" : "device", (unsigned long long)size)
                   : VKFAIL("vkAllocateMemory", r);
    }
    vk->fn.vkBindBufferMemory(vk->device, *buf, *mem, 0);
    if (map) {
        r = vk->fn.vkMapMemory(vk->device, *mem, 0, VK_WHOLE_SIZE, 0, map);
        if (r != VK_SUCCESS) {
            vk->fn.vkDestroyBuffer(vk->device, *buf, NULL);
            vk->fn.vkFreeMemory(vk->device, *mem, NULL);
            return VKFAIL("vkMapMemory", r);
        }
    }
    return LITHE_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Pooled device memory: blocks of block_size bytes, each with a sorted, coalesced free list.
 * Allocations are aligned to `align` (>= minStorageBufferOffsetAlignment), so every allocation
 * can be bound at its own offset; views inside it are reached through push-constant offsets.
 * ------------------------------------------------------------------------------------------- */

static bool range_insert(vk_block *b, size_t at, vk_range r) {
    if (b->n_free == b->cap_free) {
        size_t cap = b->cap_free ? b->cap_free * 2 : 16;
        vk_range *v = lithe__realloc(b->free, cap * sizeof *v);
        if (!v) return false;
        b->free = v;
        b->cap_free = cap;
    }
    memmove(b->free + at + 1, b->free + at, (b->n_free - at) * sizeof *b->free);
    b->free[at] = r;
    b->n_free++;
    return true;
}

static void range_remove(vk_block *b, size_t at) {
    memmove(b->free + at, b->free + at + 1, (b->n_free - at - 1) * sizeof *b->free);
    b->n_free--;
}

static bool block_take(vk_block *b, VkDeviceSize size, VkDeviceSize *off) {
    for (size_t i = 0; i < b->n_free; i++)
        if (b->free[i].size >= size) {
            *off = b->free[i].off;
            b->free[i].off += size;
            b->free[i].size -= size;
            if (b->free[i].size == 0) range_remove(b, i);
            return true;
        }
    return false;
}

static bool block_give(vk_block *b, VkDeviceSize off, VkDeviceSize size) {
    size_t i = 0;
    while (i < b->n_free && b->free[i].off < off) i++;
    bool join_prev = i > 0 && b->free[i - 1].off + b->free[i - 1].size == off;
    bool join_next = i < b->n_free && off + size == b->free[i].off;
    if (join_prev && join_next) {
        b->free[i - 1].size += size + b->free[i].size;
        range_remove(b, i);
    } else if (join_prev) {
        b->free[i - 1].size += size;
    } else if (join_next) {
        b->free[i].off = off;
        b->free[i].size += size;
    } else {
        return range_insert(b, i, (vk_range){off, size});
    }
    return true;
}

void lithe__vk_block_destroy(lithe__vk *vk, vk_block *b) {
    if (!b) return;
    vk->fn.vkDestroyBuffer(vk->device, b->buf, NULL);
    vk->fn.vkFreeMemory(vk->device, b->mem, NULL);
    lithe__free(b->free);
    lithe__free(b);
}

static lithe_status block_new(lithe__vk *vk, VkDeviceSize size, bool dedicated, vk_block **out) {
    vk_block *b = lithe__calloc(1, sizeof *b);
    if (!b) return lithe__oom("vulkan block", sizeof *b);
    lithe_status s = lithe__vk_make_buffer(vk, size, false, &b->buf, &b->mem, NULL);
    if (s != LITHE_OK) {
        lithe__free(b);
        return s;
    }
    b->size = size;
    b->dedicated = dedicated;
    if (!dedicated && !range_insert(b, 0, (vk_range){0, size})) {
        lithe__vk_block_destroy(vk, b);
        return lithe__oom("vulkan free list", 16 * sizeof(vk_range));
    }
    vk_block **v = lithe__realloc(vk->blocks, (vk->n_blocks + 1) * sizeof *v);
    if (!v) {
        lithe__vk_block_destroy(vk, b);
        return lithe__oom("vulkan block list", (vk->n_blocks + 1) * sizeof *v);
    }
    vk->blocks = v;
    vk->blocks[vk->n_blocks++] = b;
    *out = b;
    return LITHE_OK;
}

lithe_status lithe__vk_mem_alloc(lithe_backend *be, size_t nbytes, void **out) {
    lithe__vk *vk = lithe__vk_of(be);
    *out = NULL;
    lithe__vk_alloc *a = lithe__calloc(1, sizeof *a);
    if (!a) return lithe__oom("vulkan allocation", sizeof *a);
    if (nbytes == 0) {
        *out = a;
        return LITHE_OK;
    }
    if (nbytes > vk->max_range) {
        lithe__free(a);
        return lithe__fail(LITHE_ERR_UNSUPPORTED,
                           "vulkan: a tensor of %zu bytes exceeds the device's largest storage buffer (%llu bytes, %s)",
                           nbytes, (unsigned long long)vk->max_range, vk->device_name);
    }
    /* round up to the alignment (and to 4 bytes, so shaders address whole words) */
    VkDeviceSize size = ((VkDeviceSize)nbytes + vk->align - 1) / vk->align * vk->align;
    a->size = size;
    if (size > vk->block_size / 2) {
        lithe_status s = block_new(vk, size, true, &a->block);
        if (s != LITHE_OK) {
            lithe__free(a);
            return s;
        }
        a->off = 0;
        *out = a;
        return LITHE_OK;
    }
    for (size_t i = 0; i < vk->n_blocks; i++)
        if (!vk->blocks[i]->dedicated && block_take(vk->blocks[i], size, &a->off)) {
            a->block = vk->blocks[i];
            *out = a;
            return LITHE_OK;
        }
    vk_block *b = NULL;
    lithe_status s = block_new(vk, vk->block_size, false, &b);
    if (s != LITHE_OK) {
        lithe__free(a);
        return s;
    }
    block_take(b, size, &a->off);
    a->block = b;
    *out = a;
    return LITHE_OK;
}

/* Wait for pending work before a dedicated block's memory goes back to the driver. */

void lithe__vk_mem_free(lithe_backend *be, void *ptr) {
    lithe__vk *vk = lithe__vk_of(be);
    lithe__vk_alloc *a = ptr;
    if (!a) return;
    if (a->block && a->block->dedicated) {
        /* the device may still read it: finish what was recorded first (an error here has no
         * caller to go to; the block is released regardless once the device is idle) */
        lithe_status s = lithe__vk_finish(be);
        if (s != LITHE_OK) lithe__vk_wait_all(vk);
        for (size_t i = 0; i < vk->n_blocks; i++)
            if (vk->blocks[i] == a->block) {
                vk->blocks[i] = vk->blocks[--vk->n_blocks];
                break;
            }
        lithe__vk_block_destroy(vk, a->block);
    } else if (a->block) {
        /* Memory returned to the pool may be handed out again while recorded commands still use
         * it: safe, because every later command is ordered after them by the barrier that
         * precedes it. If the free list cannot grow, the range is lost (never reused). */
        block_give(a->block, a->off, a->size);
    }
    lithe__free(a);
}
