/* What the Vulkan backend's primitive files (elementwise.c, gemm.c, act.c, norm.c, index.c, seq.c,
 * graph.c; the table: table.c) share: the grid size, the 32-bit and dtype checks, and DISPATCH. */
#ifndef LITHE_VK_OPS_H
#define LITHE_VK_OPS_H

#include "vulkan_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define WG 256u
#define MAX_GROUPS 65535u

/* Workgroups for a grid-stride loop over n items (the shaders loop past the cap). */
static inline uint32_t groups_for(int64_t n) {
    int64_t g = (n + WG - 1) / WG;
    return g > (int64_t)MAX_GROUPS ? MAX_GROUPS : (uint32_t)g;
}

/* Every index a shader computes is a 32-bit word index. */
static inline lithe_status check_size(const char *op, const lithe_tensor *t) {
    if (t && (uint64_t)t->numel * lithe_dtype_size(t->dtype) / 4 + (uint64_t)t->offset >= UINT32_MAX)
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "vulkan %s: a tensor of %lld elements exceeds 32-bit indexing", op,
                           (long long)t->numel);
    return LITHE_OK;
}

static inline lithe_status need_f32(const char *op, const lithe_tensor *t) {
    if (t->dtype != LITHE_F32)
        return lithe__fail(LITHE_ERR_DTYPE, "vulkan %s: expects float32, got %s", op, lithe_dtype_name(t->dtype));
    return check_size(op, t);
}

#define DISPATCH(op, shader, spec, push, gx, gy, ...)                                              \
    lithe__vk_dispatch(be, op, shader, spec, push, (const lithe_tensor *const[]){__VA_ARGS__},     \
                       sizeof((const lithe_tensor *const[]){__VA_ARGS__}) / sizeof(const lithe_tensor *), gx, gy)

static const uint32_t SPEC0[LITHE__VK_SPEC] = {0}, SPEC1[LITHE__VK_SPEC] = {1}, SPEC2[LITHE__VK_SPEC] = {2};

static inline size_t byte_offset(const lithe_tensor *t) { return (size_t)t->offset * lithe_dtype_size(t->dtype); }

/* float32, within 32-bit indexing, and contiguous (the graph shaders read flat arrays). */
static inline lithe_status need_f32_dense(const char *op, const lithe_tensor *t) {
    LITHE__TRY(need_f32(op, t));
    if (!lithe_tensor_is_contiguous(t))
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "vulkan %s: strided tensors are not supported", op);
    return LITHE_OK;
}

#endif
