/* The Vulkan backend's primitives: GEMM (variant plans by device) and the fused dense forward.
 * Each unpacks its tensors into bindings and push constants and records dispatches of a shader
 * family (shaders/<family>.comp); shapes were checked by the layer; what only this backend limits
 * (sizes past 32-bit indexing, dtypes a shader lacks) is refused with LITHE_ERR_UNSUPPORTED. The
 * table: table.c. */
#include "ops.h"

/* ---- GEMM ----
 * Three shaders, one per variant, each with its tiling in specialization constants (one pipeline
 * per transpose case, tiling and alignment, created on first use and cached):
 *   basic     gemm.comp: scalar loads, TM x TN outputs per invocation spaced 16 apart; built as
 *             64 x 64 tiles (4 x 4, K steps of 16: small and thin products) and 128 x 128 (8 x 8,
 *             K steps of 8);
 *   tiled     gemm_tiled.comp: 128 x 128 tiles, 8 x 8 consecutive outputs per invocation in vec4
 *             registers, vec4 loads from global and shared memory;
 *   subgroup  gemm_subgroup.comp: op(A) passed between lanes by subgroupShuffle, op(B) through
 *             shared memory; the tile follows the device's subgroup size.
 * The choice is made per call from the shape and the device's VkPhysicalDeviceSubgroupProperties
 * (read at device creation); LITHE_VULKAN_GEMM=basic|64|128|tiled|subgroup forces one (tests,
 * benchmarks), "subgroup:<n>" with a subgroup size other than the device's (its lanes then read A
 * from memory: the layout check's fall-back). VK_KHR_cooperative_matrix is detected
 * (vk->coopmat) but no variant uses it yet: it would be a fourth shader (coopMatLoad / MulAdd on
 * 16 x 16 fp32 tiles where the device lists fp32 among vkGetPhysicalDeviceCooperativeMatrix-
 * PropertiesKHR's types, which few do) chosen here before the subgroup one. */

typedef struct gemm_plan {
    const char *shader;
    uint32_t spec[LITHE__VK_SPEC]; /* 0 transA, 1 transB, 2 TM, 3 TN, 4 BK, 5 VEC, 6 SG */
    uint32_t bm, bn;               /* the tile of C per workgroup */
    char name[24];
} gemm_plan;

/* The subgroup variant needs shuffles and votes in compute shaders and a power-of-two size whose
 * B panel (SG x SG TN floats) fits the 16 KiB of shared memory every device lithe takes has. */
static bool subgroup_usable(const lithe__vk *vk, uint32_t sg) {
    VkSubgroupFeatureFlags need =
        VK_SUBGROUP_FEATURE_BASIC_BIT | VK_SUBGROUP_FEATURE_VOTE_BIT | VK_SUBGROUP_FEATURE_SHUFFLE_BIT;
    return (vk->subgroup_ops & need) == need && sg >= 4 && sg <= 64 && !(sg & (sg - 1));
}

static void plan_basic(gemm_plan *p, int tile) {
    p->shader = "gemm";
    p->spec[2] = p->spec[3] = tile == 128 ? 8 : 4;
    p->spec[4] = tile == 128 ? 8 : 16;
    p->bm = p->bn = (uint32_t)tile;
    snprintf(p->name, sizeof p->name, "basic-%d", tile);
}
static void plan_tiled(gemm_plan *p, uint32_t vec) {
    p->shader = "gemm_tiled";
    p->spec[2] = p->spec[3] = p->spec[4] = 8;
    p->spec[5] = vec;
    p->bm = p->bn = 128;
    snprintf(p->name, sizeof p->name, "tiled");
}
static void plan_subgroup(gemm_plan *p, uint32_t sg, uint32_t vec) {
    p->shader = "gemm_subgroup";
    p->spec[2] = sg == 64 ? 16 : 8; /* TM: rows per subgroup */
    p->spec[3] = sg == 64 ? 1 : 4;  /* TN: columns per lane (the B panel: SG SG TN floats <= 16 KiB) */
    p->spec[5] = vec;
    p->spec[6] = sg;
    p->bm = (256 / sg) * p->spec[2];
    p->bn = sg * p->spec[3];
    snprintf(p->name, sizeof p->name, "subgroup-%u", sg);
}

/* The variant for C (M, N) = op(A) (M, K) · op(B) (K, N); vec: gemm_io.glsl's alignment bits. */
static lithe_status gemm_plan_for(const lithe__vk *vk, int64_t M, int64_t N, int64_t K, bool tA, bool tB,
                                  uint32_t vec, gemm_plan *p) {
    memset(p, 0, sizeof *p);
    p->spec[0] = tA;
    p->spec[1] = tB;
    bool big = M >= 256 && N >= 256 && K >= 32;
    const char *force = lithe__knob(LITHE__KNOB_vulkan_gemm);
    if (!force || !*force || !strcmp(force, "auto")) {
        /* Small and thin products: 64 x 64 tiles keep more of the device busy. Big ones: the
         * vec4 register tiling, whose k step costs TM / 4 + TN / 4 = 4 shared vec4 reads per 64
         * multiply-adds; the subgroup variant's costs TN shared reads and TM shuffles per TM TN
         * = 32, a trade that pays only where shuffles are cheap next to shared memory: Intel GPUs
         * (register-file shuffles, the layout of Intel's own subgroup GEMMs), at their 8 .. 32
         * lanes. On lavapipe (llvmpipe, 8 lanes) tiled is ~3x the subgroup variant and ~2x basic.
         * Unmeasured on GPUs so far: bench/vulkan_bench.sh prints every variant's GFLOP/s. */
        if (!big) plan_basic(p, 64);
        else if (vk->props.vendorID == 0x8086 && vk->props.deviceType != VK_PHYSICAL_DEVICE_TYPE_CPU &&
                 vk->subgroup_size >= 8 && vk->subgroup_size <= 32 && subgroup_usable(vk, vk->subgroup_size))
            plan_subgroup(p, vk->subgroup_size, vec);
        else plan_tiled(p, vec);
    } else if (!strcmp(force, "basic")) plan_basic(p, big ? 128 : 64);
    else if (!strcmp(force, "64") || !strcmp(force, "basic-64")) plan_basic(p, 64);
    else if (!strcmp(force, "128") || !strcmp(force, "basic-128")) plan_basic(p, 128);
    else if (!strcmp(force, "tiled")) plan_tiled(p, vec);
    else if (!strncmp(force, "subgroup", 8) && (!force[8] || force[8] == ':')) {
        uint32_t sg = force[8] ? (uint32_t)strtoul(force + 9, NULL, 10) : vk->subgroup_size;
        if (!subgroup_usable(vk, vk->subgroup_size) || !subgroup_usable(vk, sg))
            return lithe__fail(LITHE_ERR_UNSUPPORTED,
                               "vulkan gemm: LITHE_VULKAN_GEMM=%s, but device %s's compute subgroups (size %u, "
                               "operations 0x%x) lack shuffle / vote, or the size is not a power of two in 4..64",
                               force, vk->device_name, vk->subgroup_size, (unsigned)vk->subgroup_ops);
        plan_subgroup(p, sg, vec);
    } else
        return lithe__fail(LITHE_ERR_VALUE,
                           "vulkan gemm: LITHE_VULKAN_GEMM=%s is not a variant (auto, basic, 64, 128, tiled, "
                           "subgroup, subgroup:<size>)", force);
    return LITHE_OK;
}

const char *lithe__vk_gemm_variant(lithe_backend *be, int64_t M, int64_t N, int64_t K) {
    static char name[24]; /* for the benchmark's report: not thread-safe */
    gemm_plan p;
    if (gemm_plan_for(lithe__vk_of(be), M, N, K, false, false, 7, &p) != LITHE_OK) return "none";
    memcpy(name, p.name, sizeof name);
    return name;
}

/* vec4 access to a matrix is safe when its first element and every row start on 16 bytes. */
static bool vec4_ok(const lithe_tensor *t, int64_t rows, int64_t ld) {
    return t->offset % 4 == 0 && (rows <= 1 || ld % 4 == 0);
}

lithe_status vk_gemm(lithe_backend *be, bool tA, bool tB, float alpha, const lithe_tensor *A,
                            const lithe_tensor *B, float beta, lithe_tensor *C) {
    LITHE__TRY(need_f32("gemm", A));
    LITHE__TRY(need_f32("gemm", B));
    LITHE__TRY(need_f32("gemm", C));
    int64_t M = C->shape[0], N = C->shape[1], K = tA ? A->shape[0] : A->shape[1];
    if (M == 0 || N == 0) return LITHE_OK;
    /* one-row tensors may carry any row stride; the kernel only needs it for rows > 0 */
    int64_t lda = A->shape[0] > 1 ? A->strides[0] : A->shape[1], ldb = B->shape[0] > 1 ? B->strides[0] : B->shape[1],
            ldc = C->shape[0] > 1 ? C->strides[0] : C->shape[1];
    if ((A->ndim == 2 && A->shape[1] > 1 && A->strides[1] != 1) || (B->ndim == 2 && B->shape[1] > 1 && B->strides[1] != 1) ||
        (C->shape[1] > 1 && C->strides[1] != 1))
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "vulkan gemm: columns must be contiguous (row strides only)");
    uint32_t vec = (vec4_ok(A, A->shape[0], lda) ? 1u : 0u) | (vec4_ok(B, B->shape[0], ldb) ? 2u : 0u) |
                   (vec4_ok(C, M, ldc) ? 4u : 0u);
    gemm_plan plan;
    LITHE__TRY(gemm_plan_for(lithe__vk_of(be), M, N, K, tA, tB, vec, &plan));
    int64_t gx = (N + plan.bn - 1) / plan.bn, gy = (M + plan.bm - 1) / plan.bm;
    if (gx > (int64_t)MAX_GROUPS || gy > (int64_t)MAX_GROUPS)
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "vulkan gemm: %lld x %lld output is too large", (long long)M,
                           (long long)N);
    lithe__vk_push p = {.u = {(uint32_t)M, (uint32_t)N, (uint32_t)K, (uint32_t)lda, (uint32_t)ldb, (uint32_t)ldc},
                        .f = {alpha, beta}};
    return DISPATCH("gemm", plan.shader, plan.spec, &p, (uint32_t)gx, (uint32_t)gy, C, A, B);
}

/* The dense layers' fused forward: no shader of its own, the three passes it fuses on the CPU
 * recorded back to back (gemm into Z or Y, add_row, act into Y). */
lithe_status vk_gemm_bias_act(lithe_backend *be, bool tA, bool tB, const lithe_tensor *A,
                                     const lithe_tensor *B, const lithe_tensor *b, const lithe__act *a,
                                     lithe_tensor *Z, lithe_tensor *Y) {
    lithe_tensor *pre = Z ? Z : Y;
    LITHE__TRY(vk_gemm(be, tA, tB, 1.0f, A, B, 0.0f, pre));
    if (b) LITHE__TRY(vk_add_row(be, pre, b));
    if (a) return vk_act(be, a, pre, Y);
    if (Z) return vk_copy(be, Y, Z);
    return LITHE_OK;
}
