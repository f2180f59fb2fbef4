/* The Vulkan backend's primitives: each unpacks its tensors into bindings and push constants
 * and records one or two dispatches of a shader family (shaders/<family>.comp); nothing runs on
 * the CPU except the final double-precision sum of sum_squares' per-workgroup partials. Shapes
 * were checked by the layer, as for every backend; what only this backend limits (sizes past
 * 32-bit indexing, dtypes a shader lacks) is refused with LITHE_ERR_UNSUPPORTED. */
#include "vulkan_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define WG 256u
#define MAX_GROUPS 65535u

/* Workgroups for a grid-stride loop over n items (the shaders loop past the cap). */
static uint32_t groups_for(int64_t n) {
    int64_t g = (n + WG - 1) / WG;
    return g > (int64_t)MAX_GROUPS ? MAX_GROUPS : (uint32_t)g;
}

/* Every index a shader computes is a 32-bit word index. */
static lithe_status check_size(const char *op, const lithe_tensor *t) {
    if (t && (uint64_t)t->numel * lithe_dtype_size(t->dtype) / 4 + (uint64_t)t->offset >= UINT32_MAX)
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "vulkan %s: a tensor of %lld elements exceeds 32-bit indexing", op,
                           (long long)t->numel);
    return LITHE_OK;
}

static lithe_status need_f32(const char *op, const lithe_tensor *t) {
    if (t->dtype != LITHE_F32)
        return lithe__fail(LITHE_ERR_DTYPE, "vulkan %s: expects float32, got %s", op, lithe_dtype_name(t->dtype));
    return check_size(op, t);
}

#define DISPATCH(op, shader, spec, push, gx, gy, ...)                                              \
    lithe__vk_dispatch(be, op, shader, spec, push, (const lithe_tensor *const[]){__VA_ARGS__},     \
                       sizeof((const lithe_tensor *const[]){__VA_ARGS__}) / sizeof(const lithe_tensor *), gx, gy)

static const uint32_t SPEC0[LITHE__VK_SPEC] = {0}, SPEC1[LITHE__VK_SPEC] = {1}, SPEC2[LITHE__VK_SPEC] = {2};

static size_t byte_offset(const lithe_tensor *t) { return (size_t)t->offset * lithe_dtype_size(t->dtype); }

/* ---- memory-shaped primitives ---- */

static lithe_status vk_fill(lithe_backend *be, lithe_tensor *Y, float value) {
    if (value != 0.0f && Y->dtype != LITHE_F32)
        return lithe__fail(LITHE_ERR_DTYPE, "fill: non-zero fill needs float32");
    LITHE__TRY(check_size("fill", Y));
    if (!Y->numel) return LITHE_OK;
    if (!lithe_tensor_is_contiguous(Y))
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "vulkan fill: strided tensors are not supported");
    size_t first = byte_offset(Y), nbytes = (size_t)Y->numel * lithe_dtype_size(Y->dtype);
    uint32_t pattern;
    memcpy(&pattern, &value, 4);
    if (first % 4 == 0 && nbytes % 4 == 0) /* the transfer engine's fill: no shader needed */
        return lithe__vk_fill_words(be, lithe__vk_mem(Y), first, nbytes, pattern);
    lithe__vk_push p = {.u = {(uint32_t)first, (uint32_t)(first + nbytes), pattern}};
    return DISPATCH("fill", "fill", SPEC0, &p, groups_for((int64_t)(nbytes / 4 + 2)), 1, Y);
}

/* The layout block of copy.comp: [ndim, shape[8], strides[8]] for X then Y. */
static lithe_status vk_copy(lithe_backend *be, lithe_tensor *Y, const lithe_tensor *X) {
    size_t es = lithe_dtype_size(X->dtype);
    LITHE__TRY(check_size("copy", X));
    LITHE__TRY(check_size("copy", Y));
    if (!X->numel) return LITHE_OK;
    if (lithe_tensor_is_contiguous(X) && lithe_tensor_is_contiguous(Y))
        return lithe__vk_copy_bytes(be, lithe__vk_mem(Y), byte_offset(Y), lithe__vk_mem(X), byte_offset(X),
                                    (size_t)X->numel * es);
    if (es != 4 && es != 8)
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "vulkan copy: strided views of %s (%zu-byte elements) are not supported",
                           lithe_dtype_name(X->dtype), es);
    int32_t lay[34] = {0};
    const lithe_tensor *ts[2] = {X, Y};
    for (int s = 0; s < 2; s++) {
        const lithe_tensor *t = ts[s];
        lay[s * 17] = t->ndim;
        for (int d = 0; d < t->ndim; d++) {
            if (t->shape[d] > INT32_MAX || t->strides[d] > INT32_MAX || t->strides[d] < 0)
                return lithe__fail(LITHE_ERR_UNSUPPORTED, "vulkan copy: extent %lld or stride %lld outside 32 bits",
                                   (long long)t->shape[d], (long long)t->strides[d]);
            lay[s * 17 + 1 + d] = (int32_t)t->shape[d];
            lay[s * 17 + 9 + d] = (int32_t)t->strides[d];
        }
    }
    lithe_tensor *L = NULL;
    LITHE__TRY(lithe__vk_scratch(be, sizeof lay, &L));
    lithe_status s = be->ops->upload(be, L->storage->data, 0, lay, sizeof lay);
    lithe__vk_push p = {.u = {(uint32_t)(es / 4), (uint32_t)X->numel}};
    if (s == LITHE_OK) s = DISPATCH("copy", "copy", SPEC0, &p, groups_for(X->numel), 1, Y, X, L);
    lithe_tensor_release(L); /* safe: later commands are ordered after this dispatch */
    return s;
}

static lithe_status vk_cast(lithe_backend *be, lithe_tensor *Y, const lithe_tensor *X) {
    LITHE__TRY(check_size("cast", X));
    LITHE__TRY(check_size("cast", Y));
    if (!X->numel) return LITHE_OK;
    if (X->dtype == Y->dtype)
        return lithe__vk_copy_bytes(be, lithe__vk_mem(Y), byte_offset(Y), lithe__vk_mem(X), byte_offset(X),
                                    (size_t)X->numel * lithe_dtype_size(X->dtype));
    if (X->dtype == LITHE_U64 || Y->dtype == LITHE_U64 || X->dtype == LITHE_U32 || Y->dtype == LITHE_U32)
        return lithe__fail(LITHE_ERR_DTYPE, "vulkan cast: %s to %s is not a conversion lithe makes",
                           lithe_dtype_name(X->dtype), lithe_dtype_name(Y->dtype));
    lithe__vk_push p = {.u = {(uint32_t)X->dtype, (uint32_t)Y->dtype, (uint32_t)X->numel, (uint32_t)byte_offset(X),
                              (uint32_t)byte_offset(Y)}};
    size_t es = lithe_dtype_size(Y->dtype);
    int64_t items = es < 4 ? (int64_t)(((size_t)X->numel * es + 7) / 4) : X->numel;
    return DISPATCH("cast", "cast", SPEC0, &p, groups_for(items), 1, Y, X);
}

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

static lithe_status vk_gemm(lithe_backend *be, bool tA, bool tB, float alpha, const lithe_tensor *A,
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
static lithe_status vk_add_row(lithe_backend *be, lithe_tensor *Y, const lithe_tensor *b);
static lithe_status vk_act(lithe_backend *be, const lithe__act *a, const lithe_tensor *X, lithe_tensor *Y);
static lithe_status vk_gemm_bias_act(lithe_backend *be, bool tA, bool tB, const lithe_tensor *A,
                                     const lithe_tensor *B, const lithe_tensor *b, const lithe__act *a,
                                     lithe_tensor *Z, lithe_tensor *Y) {
    lithe_tensor *pre = Z ? Z : Y;
    LITHE__TRY(vk_gemm(be, tA, tB, 1.0f, A, B, 0.0f, pre));
    if (b) LITHE__TRY(vk_add_row(be, pre, b));
    if (a) return vk_act(be, a, pre, Y);
    if (Z) return vk_copy(be, Y, Z);
    return LITHE_OK;
}

/* ---- rows and elementwise ---- */

static lithe_status vk_add_row(lithe_backend *be, lithe_tensor *Y, const lithe_tensor *b) {
    LITHE__TRY(need_f32("add_row", Y));
    lithe__vk_push p = {.u = {(uint32_t)Y->shape[0], (uint32_t)Y->shape[1]}};
    return DISPATCH("add_row", "rows", SPEC0, &p, groups_for(Y->shape[1]), 1, Y, b);
}

static lithe_status vk_sum_rows(lithe_backend *be, const lithe_tensor *X, float beta, lithe_tensor *y) {
    LITHE__TRY(need_f32("sum_rows", X));
    lithe__vk_push p = {.u = {(uint32_t)X->shape[0], (uint32_t)X->shape[1]}, .f = {beta}};
    return DISPATCH("sum_rows", "rows", SPEC1, &p, groups_for(X->shape[1]), 1, y, X);
}

static lithe_status vk_axpby(lithe_backend *be, float alpha, const lithe_tensor *X, float beta, lithe_tensor *Y) {
    LITHE__TRY(need_f32("axpby", Y));
    lithe__vk_push p = {.u = {(uint32_t)Y->numel}, .f = {alpha, beta}};
    return DISPATCH("axpby", "elementwise", SPEC0, &p, groups_for(Y->numel), 1, Y, X);
}

static lithe_status vk_mul(lithe_backend *be, const lithe_tensor *A, const lithe_tensor *B, lithe_tensor *Y) {
    LITHE__TRY(need_f32("mul", Y));
    lithe__vk_push p = {.u = {(uint32_t)Y->numel}};
    return DISPATCH("mul", "elementwise", SPEC1, &p, groups_for(Y->numel), 1, Y, A, B);
}

static lithe_status vk_update_averages(lithe_backend *be, lithe_tensor *ema, const lithe_tensor *W, float decay) {
    LITHE__TRY(need_f32("update_averages", ema));
    lithe__vk_push p = {.u = {(uint32_t)W->numel}, .f = {1.0f - decay}};
    return DISPATCH("update_averages", "elementwise", SPEC2, &p, groups_for(W->numel), 1, ema, W);
}

/* ---- reductions read back by the host ---- */

static lithe_status vk_sum_squares(lithe_backend *be, const lithe_tensor *X, double *out) {
    LITHE__TRY(need_f32("sum_squares", X));
    *out = 0.0;
    if (!X->numel) return LITHE_OK;
    uint32_t g = groups_for(X->numel);
    if (g > 1024) g = 1024; /* partials stay few: the host adds them in double */
    lithe_tensor *P = NULL;
    LITHE__TRY(lithe__vk_scratch(be, g * sizeof(float), &P));
    lithe__vk_push p = {.u = {(uint32_t)X->numel}};
    lithe_status s = DISPATCH("sum_squares", "reduce", SPEC0, &p, g, 1, P, X);
    float part[1024];
    if (s == LITHE_OK) s = be->ops->download(be, part, P->storage->data, 0, g * sizeof(float));
    lithe_tensor_release(P);
    if (s != LITHE_OK) return s;
    double acc = 0.0;
    for (uint32_t i = 0; i < g; i++) acc += part[i];
    *out = acc;
    return LITHE_OK;
}

/* Gradient clipping without a read-back: sum_squares' per-workgroup partials, then one
 * invocation's decision (factor, apply) from their compensated sum, into *F (2 floats, the
 * caller's reference): the scaling pass (clip_gradient) or adam_step reads it. */
static lithe_status vk_clip_factor(lithe_backend *be, const lithe_tensor *G, double threshold, lithe_tensor **F) {
    uint32_t g = groups_for(G->numel);
    if (g > 1024) g = 1024;
    lithe_tensor *P = NULL;
    LITHE__TRY(lithe__vk_scratch(be, g * sizeof(float), &P));
    lithe_status s = lithe__vk_scratch(be, 2 * sizeof(float), F);
    lithe__vk_push p = {.u = {(uint32_t)G->numel}};
    if (s == LITHE_OK) s = DISPATCH("clip_gradient", "reduce", SPEC0, &p, g, 1, P, G);
    lithe__vk_push d = {.u = {g}, .f = {(float)threshold}};
    if (s == LITHE_OK) s = DISPATCH("clip_gradient", "reduce", SPEC2, &d, 1, 1, *F, P);
    lithe_tensor_release(P); /* safe: later commands are ordered after these dispatches */
    if (s != LITHE_OK) {
        lithe_tensor_release(*F);
        *F = NULL;
    }
    return s;
}

static lithe_status vk_clip_gradient(lithe_backend *be, lithe_tensor *G, double threshold) {
    LITHE__TRY(need_f32("clip_gradient", G));
    if (!G->numel) return LITHE_OK;
    lithe_tensor *F = NULL;
    LITHE__TRY(vk_clip_factor(be, G, threshold, &F));
    static const uint32_t SPEC3[LITHE__VK_SPEC] = {3};
    lithe__vk_push p = {.u = {(uint32_t)G->numel}};
    lithe_status s = DISPATCH("clip_gradient", "reduce", SPEC3, &p, groups_for(G->numel), 1, G, F);
    lithe_tensor_release(F);
    return s;
}

static lithe_status vk_any_outside(lithe_backend *be, const lithe_tensor *X, float lo, float hi, int *out) {
    LITHE__TRY(need_f32("any_outside", X));
    *out = 0;
    if (!X->numel) return LITHE_OK;
    lithe_tensor *F = NULL;
    LITHE__TRY(lithe__vk_scratch(be, 4, &F));
    lithe_status s = lithe__vk_fill_words(be, lithe__vk_mem(F), 0, 4, 0);
    lithe__vk_push p = {.u = {(uint32_t)X->numel}, .f = {lo, hi}};
    if (s == LITHE_OK) s = DISPATCH("any_outside", "reduce", SPEC1, &p, groups_for(X->numel), 1, F, X);
    float flag = 0.0f;
    if (s == LITHE_OK) s = be->ops->download(be, &flag, F->storage->data, 0, sizeof flag);
    lithe_tensor_release(F);
    if (s != LITHE_OK) return s;
    *out = flag != 0.0f;
    return LITHE_OK;
}

/* ---- activations, softmax ---- */

static void act_push(lithe__vk_push *p, const lithe__act *a, int64_t n) {
    p->u[0] = (uint32_t)n;
    p->u[1] = (uint32_t)a->kind;
    p->f[0] = a->slope;
    p->f[1] = a->offset;
    p->f[2] = a->min_val;
    p->f[3] = a->max_val;
    p->f[4] = a->threshold;
}

static lithe_status vk_act(lithe_backend *be, const lithe__act *a, const lithe_tensor *X, lithe_tensor *Y) {
    LITHE__TRY(need_f32("act", Y));
    if ((unsigned)a->kind >= LITHE__ACT_COUNT)
        return lithe__fail(LITHE_ERR_INVALID_ARG, "vulkan act: unknown activation kind %d", (int)a->kind);
    lithe__vk_push p = {{0}, {0}};
    act_push(&p, a, Y->numel);
    return DISPATCH("act", "act", SPEC0, &p, groups_for(Y->numel), 1, Y, X);
}

static lithe_status vk_act_backward(lithe_backend *be, const lithe__act *a, const lithe_tensor *dY,
                                    const lithe_tensor *X, const lithe_tensor *Y, lithe_tensor *dX) {
    LITHE__TRY(need_f32("act_backward", dX));
    if ((unsigned)a->kind >= LITHE__ACT_COUNT)
        return lithe__fail(LITHE_ERR_INVALID_ARG, "vulkan act_backward: unknown activation kind %d", (int)a->kind);
    lithe__vk_push p = {{0}, {0}};
    act_push(&p, a, dX->numel);
    p.u[2] = X != NULL;
    p.u[3] = Y != NULL;
    return DISPATCH("act_backward", "act", SPEC1, &p, groups_for(dX->numel), 1, dX, dY, X, Y);
}

static lithe_status vk_softmax(lithe_backend *be, const lithe_tensor *X, float temperature, lithe_tensor *Y) {
    LITHE__TRY(need_f32("softmax", Y));
    lithe__vk_push p = {.u = {(uint32_t)X->shape[0], (uint32_t)X->shape[1]}, .f = {temperature}};
    uint32_t g = X->shape[0] > (int64_t)MAX_GROUPS ? MAX_GROUPS : (uint32_t)X->shape[0];
    return DISPATCH("softmax", "softmax", SPEC0, &p, g, 1, Y, X);
}

static lithe_status vk_softmax_backward(lithe_backend *be, const lithe_tensor *Y, const lithe_tensor *dY,
                                        float temperature, lithe_tensor *dX) {
    LITHE__TRY(need_f32("softmax_backward", dX));
    lithe__vk_push p = {.u = {(uint32_t)Y->shape[0], (uint32_t)Y->shape[1]}, .f = {temperature}};
    uint32_t g = Y->shape[0] > (int64_t)MAX_GROUPS ? MAX_GROUPS : (uint32_t)Y->shape[0];
    return DISPATCH("softmax_backward", "softmax", SPEC1, &p, g, 1, dX, Y, dY);
}

/* ---- training ---- */

static lithe_status vk_dropout_mask(lithe_backend *be, uint64_t key, uint64_t counter, float rate, lithe_tensor *Y) {
    LITHE__TRY(need_f32("dropout_mask", Y));
    lithe__vk_push p = {.u = {(uint32_t)key, (uint32_t)(key >> 32), (uint32_t)counter, (uint32_t)(counter >> 32),
                              (uint32_t)Y->numel},
                        .f = {rate, 1.0f / (1.0f - rate)}};
    return DISPATCH("dropout_mask", "dropout", SPEC0, &p, groups_for((Y->numel + 3) / 4), 1, Y);
}

static lithe_status vk_adam(lithe_backend *be, lithe_tensor *W, const lithe_tensor *G, lithe_tensor *m1,
                            lithe_tensor *m2, float beta1, float beta2, float eps, float lr) {
    LITHE__TRY(need_f32("adam", W));
    lithe__vk_push p = {.u = {(uint32_t)W->numel}, .f = {beta1, beta2, eps, lr}};
    return DISPATCH("adam", "optim", SPEC0, &p, groups_for(W->numel), 1, W, G, m1, m2);
}

static lithe_status vk_adam_step(lithe_backend *be, lithe_tensor *W, lithe_tensor *G, lithe_tensor *m1, lithe_tensor *m2,
                                 lithe_tensor *avg, double grad_clip, float beta1, float beta2, float eps, float lr,
                                 float wscale, float decay) {
    LITHE__TRY(need_f32("adam_step", W));
    /* the clipping decided on the device (clip_gradient's decision), its factor read by the one
     * pass as the CPU applies its own: no separate pass scaling G */
    lithe_tensor *F = NULL;
    if (grad_clip > 0.0 && W->numel) LITHE__TRY(vk_clip_factor(be, G, grad_clip, &F));
    lithe__vk_push p = {.u = {(uint32_t)W->numel, avg != NULL, F != NULL},
                        .f = {1.0f, beta1, beta2, eps, lr, wscale, decay}};
    /* avg or F NULL: binding 4 or 5 gets the dummy buffer, which the shader then never touches */
    lithe_status s = DISPATCH("adam_step", "optim", SPEC2, &p, groups_for(W->numel), 1, W, G, m1, m2, avg, F);
    lithe_tensor_release(F); /* safe: later commands are ordered after this dispatch */
    return s;
}

static lithe_status vk_radam(lithe_backend *be, lithe_tensor *W, const lithe_tensor *G, lithe_tensor *m1,
                             lithe_tensor *m2, float beta1, float omb1, float beta2, float omb2, float eps, float coef,
                             bool rectified) {
    LITHE__TRY(need_f32("radam", W));
    lithe__vk_push p = {.u = {(uint32_t)W->numel, rectified}, .f = {beta1, omb1, beta2, omb2, eps, coef}};
    return DISPATCH("radam", "optim", SPEC1, &p, groups_for(W->numel), 1, W, G, m1, m2);
}

static lithe_status vk_cce_labels(lithe_backend *be, const lithe_tensor *G, const lithe_tensor *labels,
                                  float smoothing, bool has_missing, int64_t missing, float divisor, lithe_tensor *D) {
    LITHE__TRY(need_f32("cce_labels", D));
    int64_t B = G->shape[0], C = G->shape[1];
    if (labels->dtype != LITHE_I32 && labels->dtype != LITHE_I64)
        return lithe__fail(LITHE_ERR_DTYPE, "vulkan cce_labels: labels must be int32 or int64, got %s",
                           lithe_dtype_name(labels->dtype));
    float off = C > 1 ? smoothing / (float)(C - 1) : 0.0f, on = 1.0f - smoothing;
    uint64_t mu = (uint64_t)missing;
    lithe__vk_push p = {.u = {(uint32_t)B, (uint32_t)C, labels->dtype == LITHE_I64, has_missing, (uint32_t)mu,
                              (uint32_t)(mu >> 32)},
                        .f = {on, off, divisor}};
    return DISPATCH("cce_labels", "cce", SPEC0, &p, groups_for(B * C), 1, D, G, labels);
}

/* ---- maxout, layernorm ---- */

static lithe_status vk_maxout(lithe_backend *be, const lithe_tensor *X, lithe_tensor *Y, lithe_tensor *which) {
    LITHE__TRY(need_f32("maxout", X));
    int64_t R = X->shape[0] * X->shape[1];
    lithe__vk_push p = {.u = {(uint32_t)R, (uint32_t)X->shape[2]}};
    return DISPATCH("maxout", "maxout", SPEC0, &p, groups_for(R), 1, Y, which, X);
}

static lithe_status vk_maxout_backward(lithe_backend *be, const lithe_tensor *dY, const lithe_tensor *which,
                                       lithe_tensor *dX) {
    LITHE__TRY(need_f32("maxout_backward", dX));
    int64_t R = dX->shape[0] * dX->shape[1];
    lithe__vk_push p = {.u = {(uint32_t)R, (uint32_t)dX->shape[2]}};
    return DISPATCH("maxout_backward", "maxout", SPEC1, &p, groups_for(R), 1, dX, which, dY);
}

static lithe_status vk_layernorm(lithe_backend *be, const lithe_tensor *X, const lithe_tensor *G,
                                 const lithe_tensor *b, float eps, lithe_tensor *Y, lithe_tensor *mean,
                                 lithe_tensor *inv_std) {
    LITHE__TRY(need_f32("layernorm", X));
    int64_t M = X->shape[0];
    lithe__vk_push p = {.u = {(uint32_t)M, (uint32_t)X->shape[1]}, .f = {eps}};
    uint32_t g = M > (int64_t)MAX_GROUPS ? MAX_GROUPS : (uint32_t)M;
    return DISPATCH("layernorm", "layernorm", SPEC0, &p, g, 1, Y, X, G, b, mean, inv_std);
}

static lithe_status vk_layernorm_backward(lithe_backend *be, const lithe_tensor *dY, const lithe_tensor *X,
                                          const lithe_tensor *G, const lithe_tensor *mean, const lithe_tensor *inv_std,
                                          lithe_tensor *dX, lithe_tensor *dG, lithe_tensor *db) {
    LITHE__TRY(need_f32("layernorm_backward", X));
    int64_t M = X->shape[0], N = X->shape[1];
    lithe__vk_push p = {.u = {(uint32_t)M, (uint32_t)N}};
    /* dG and db first: dX may overwrite dY */
    LITHE__TRY(DISPATCH("layernorm_backward", "layernorm", SPEC2, &p, groups_for(N), 1, dG, dY, X, db, mean, inv_std));
    uint32_t g = M > (int64_t)MAX_GROUPS ? MAX_GROUPS : (uint32_t)M;
    return DISPATCH("layernorm_backward", "layernorm", SPEC1, &p, g, 1, dX, dY, X, G, mean, inv_std);
}

/* ---- ids ---- */

static lithe_status ids_kind(const char *op, const lithe_tensor *ids, uint32_t *wide) {
    if (ids->dtype == LITHE_I32) *wide = 0;
    else if (ids->dtype == LITHE_I64 || ids->dtype == LITHE_U64) *wide = 1;
    else return lithe__fail(LITHE_ERR_DTYPE, "vulkan %s: ids must be int32, int64 or uint64, got %s", op,
                            lithe_dtype_name(ids->dtype));
    return check_size(op, ids);
}

static lithe_status vk_gather_rows(lithe_backend *be, const lithe_tensor *table, const lithe_tensor *ids,
                                   lithe_tensor *Y) {
    LITHE__TRY(need_f32("gather_rows", table));
    uint32_t wide = 0;
    LITHE__TRY(ids_kind("gather_rows", ids, &wide));
    lithe__vk_push p = {.u = {(uint32_t)Y->shape[0], (uint32_t)Y->shape[1], wide}};
    return DISPATCH("gather_rows", "index", SPEC0, &p, groups_for(Y->numel), 1, Y, table, ids);
}

static lithe_status vk_scatter_add_rows(lithe_backend *be, lithe_tensor *table, const lithe_tensor *ids,
                                        const lithe_tensor *X) {
    LITHE__TRY(need_f32("scatter_add_rows", table));
    uint32_t wide = 0;
    LITHE__TRY(ids_kind("scatter_add_rows", ids, &wide));
    lithe__vk_push p = {.u = {(uint32_t)X->shape[0], (uint32_t)X->shape[1], wide}};
    return DISPATCH("scatter_add_rows", "index", SPEC1, &p, groups_for(X->shape[1]), 1, table, X, ids);
}

static lithe_status vk_hash_ids(lithe_backend *be, const lithe_tensor *ids, uint32_t seed, lithe_tensor *out) {
    LITHE__TRY(check_size("hash_ids", out));
    if (ids->dtype != LITHE_U64 && ids->dtype != LITHE_I64)
        return lithe__fail(LITHE_ERR_DTYPE, "vulkan hash_ids: ids must be uint64, got %s", lithe_dtype_name(ids->dtype));
    lithe__vk_push p = {.u = {(uint32_t)ids->numel, seed}};
    return DISPATCH("hash_ids", "hash", SPEC0, &p, groups_for(ids->numel), 1, out, ids);
}


/* ---- sequences (Ragged rows grouped by host-side lengths) ---- */

/* Uploads what seq.comp needs from the host lengths (B,) int32: starts (B + 1) then B scales
 * (1 / length computed as the CPU's kernels do). Lengths may also live on this device. */
static lithe_status seq_meta(lithe_backend *be, const char *op, const lithe_tensor *lengths, bool with_scales,
                             int64_t *rows, lithe_tensor **out) {
    *out = NULL;
    if (lengths->dtype != LITHE_I32)
        return lithe__fail(LITHE_ERR_DTYPE, "vulkan %s: lengths must be int32, got %s", op, lithe_dtype_name(lengths->dtype));
    int64_t B = lengths->numel;
    if (B >= INT32_MAX / 2) return lithe__fail(LITHE_ERR_UNSUPPORTED, "vulkan %s: %lld sequences", op, (long long)B);
    size_t words = (size_t)(B + 1) + (with_scales ? (size_t)B : 0);
    int32_t *meta = lithe__malloc(words * 4 + (size_t)B * 4 + 4);
    if (!meta) return lithe__oom(op, words * 4);
    int32_t *len = meta + words;
    lithe_status s = lithe_tensor_read(lengths, len, (size_t)B * 4);
    int64_t start = 0;
    for (int64_t b = 0; s == LITHE_OK && b < B; b++) {
        meta[b] = (int32_t)start;
        start += len[b];
        if (len[b] < 0 || start > INT32_MAX)
            s = lithe__fail(LITHE_ERR_UNSUPPORTED, "vulkan %s: length %d of sequence %lld (or the total) outside 32 bits",
                            op, len[b], (long long)b);
        if (with_scales) {
            float sc = len[b] ? (float)(1.0 / len[b]) : 0.0f;
            memcpy(&meta[B + 1 + b], &sc, 4);
        }
    }
    if (s == LITHE_OK) {
        meta[B] = (int32_t)start;
        *rows = start;
        s = lithe__vk_scratch(be, words * 4, out);
    }
    if (s == LITHE_OK) s = be->ops->upload(be, (*out)->storage->data, 0, meta, words * 4);
    lithe__free(meta);
    if (s != LITHE_OK) {
        lithe_tensor_release(*out);
        *out = NULL;
    }
    return s;
}

static lithe_status seq_run(lithe_backend *be, const char *op, uint32_t which_op, const lithe_tensor *lengths,
                            int64_t O, int64_t nW, bool mean, int64_t items_per_row, lithe_tensor *out,
                            const lithe_tensor *in, const lithe_tensor *which) {
    LITHE__TRY(need_f32(op, out));
    LITHE__TRY(need_f32(op, in));
    lithe_tensor *meta = NULL;
    int64_t N = 0, B = lengths->numel;
    LITHE__TRY(seq_meta(be, op, lengths, true, &N, &meta));
    lithe__vk_push p = {.u = {(uint32_t)B, (uint32_t)O, (uint32_t)nW, mean}};
    uint32_t spec[LITHE__VK_SPEC] = {which_op};
    int64_t items = items_per_row > 0 ? N * items_per_row : B * O;
    lithe_status s = lithe__vk_dispatch(be, op, "seq", spec, &p, (const lithe_tensor *const[]){out, in, meta, which}, 4,
                                        groups_for(items), 1);
    lithe_tensor_release(meta);
    return s;
}

static lithe_status vk_reduce_sum(lithe_backend *be, const lithe_tensor *X, const lithe_tensor *lengths, bool mean,
                                  lithe_tensor *Y) {
    return seq_run(be, "reduce_sum", 0, lengths, Y->shape[1], 0, mean, 0, Y, X, NULL);
}
static lithe_status vk_reduce_sum_backward(lithe_backend *be, const lithe_tensor *dY, const lithe_tensor *lengths,
                                           bool mean, lithe_tensor *dX) {
    return seq_run(be, "reduce_sum_backward", 1, lengths, dY->shape[1], 0, mean, 0, dX, dY, NULL);
}
static lithe_status vk_reduce_max(lithe_backend *be, const lithe_tensor *X, const lithe_tensor *lengths, lithe_tensor *Y,
                                  lithe_tensor *which) {
    return seq_run(be, "reduce_max", 2, lengths, Y->shape[1], 0, false, 0, Y, X, which);
}
static lithe_status vk_reduce_max_backward(lithe_backend *be, const lithe_tensor *dY, const lithe_tensor *which,
                                           const lithe_tensor *lengths, lithe_tensor *dX) {
    return seq_run(be, "reduce_max_backward", 3, lengths, dY->shape[1], 0, false, 0, dX, dY, which);
}
static lithe_status vk_seq2col(lithe_backend *be, const lithe_tensor *X, int64_t nW, const lithe_tensor *lengths,
                               lithe_tensor *Y) {
    if (nW < 0 || nW > 1 << 20) return lithe__fail(LITHE_ERR_VALUE, "vulkan seq2col: window %lld", (long long)nW);
    return seq_run(be, "seq2col", 4, lengths, X->shape[1], nW, false, (2 * nW + 1) * X->shape[1], Y, X, NULL);
}
static lithe_status vk_seq2col_backward(lithe_backend *be, const lithe_tensor *dY, int64_t nW,
                                        const lithe_tensor *lengths, lithe_tensor *dX) {
    if (nW < 0 || nW > 1 << 20) return lithe__fail(LITHE_ERR_VALUE, "vulkan seq2col_backward: window %lld", (long long)nW);
    return seq_run(be, "seq2col_backward", 5, lengths, dX->shape[1], nW, false, dX->shape[1], dX, dY, NULL);
}

/* ---- sparse, hashed and string inputs ---- */

static lithe_status vk_sparse_linear(lithe_backend *be, const lithe_tensor *keys, const lithe_tensor *values,
                                     const lithe_tensor *lengths, const lithe_tensor *W, int64_t length, bool v1,
                                     lithe_tensor *Y) {
    LITHE__TRY(need_f32("sparse_linear", Y));
    LITHE__TRY(check_size("sparse_linear", W));
    if (length <= 0 || length > UINT32_MAX)
        return lithe__fail(LITHE_ERR_VALUE, "vulkan sparse_linear: length %lld", (long long)length);
    lithe_tensor *meta = NULL;
    int64_t N = 0;
    LITHE__TRY(seq_meta(be, "sparse_linear", lengths, false, &N, &meta));
    lithe__vk_push p = {.u = {(uint32_t)Y->shape[0], (uint32_t)Y->shape[1], (uint32_t)length, v1}};
    lithe_status s = lithe__vk_dispatch(be, "sparse_linear", "sparse", SPEC0, &p,
                                        (const lithe_tensor *const[]){Y, keys, values, W, meta}, 5,
                                        groups_for(Y->numel), 1);
    lithe_tensor_release(meta);
    return s;
}

static lithe_status vk_sparse_linear_backward(lithe_backend *be, const lithe_tensor *keys, const lithe_tensor *values,
                                              const lithe_tensor *lengths, const lithe_tensor *dY, int64_t length,
                                              bool v1, lithe_tensor *dW) {
    LITHE__TRY(need_f32("sparse_linear_backward", dW));
    if (length <= 0 || length > UINT32_MAX)
        return lithe__fail(LITHE_ERR_VALUE, "vulkan sparse_linear_backward: length %lld", (long long)length);
    lithe_tensor *meta = NULL;
    int64_t N = 0;
    LITHE__TRY(seq_meta(be, "sparse_linear_backward", lengths, false, &N, &meta));
    lithe__vk_push p = {.u = {(uint32_t)dY->shape[0], (uint32_t)dY->shape[1], (uint32_t)length, v1}};
    lithe_status s = lithe__vk_dispatch(be, "sparse_linear_backward", "sparse", SPEC1, &p,
                                        (const lithe_tensor *const[]){dW, keys, values, dY, meta}, 5,
                                        v1 ? 1 : groups_for(dY->shape[1]), 1);
    lithe_tensor_release(meta);
    return s;
}

/* Strings live in host memory (a STRINGS value's bytes and offsets): uploaded, then hashed on
 * the device so the keys land where the model computes. */
static lithe_status vk_hash_strings(lithe_backend *be, const lithe_tensor *bytes, const lithe_tensor *offsets,
                                    uint32_t seed, lithe_tensor *out) {
    LITHE__TRY(check_size("hash_strings", out));
    int64_t n = out->numel, nb = bytes->numel;
    if (!n) return LITHE_OK;
    if (nb >= INT32_MAX || offsets->numel != n + 1 || offsets->dtype != LITHE_I64 || bytes->dtype != LITHE_U8)
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "vulkan hash_strings: %lld bytes, %lld offsets (%s)", (long long)nb,
                           (long long)offsets->numel, lithe_dtype_name(offsets->dtype));
    int64_t *off64 = lithe__malloc((size_t)(n + 1) * 8);
    int32_t *off32 = lithe__malloc((size_t)(n + 1) * 4);
    uint8_t *raw = lithe__malloc((size_t)nb + 4);
    lithe_tensor *O = NULL, *Bt = NULL;
    lithe_status s = off64 && off32 && raw ? LITHE_OK : lithe__oom("hash_strings", (size_t)(n + 1) * 12 + (size_t)nb);
    if (s == LITHE_OK) s = lithe_tensor_read(offsets, off64, (size_t)(n + 1) * 8);
    if (s == LITHE_OK) s = lithe_tensor_read(bytes, raw, (size_t)nb);
    for (int64_t i = 0; s == LITHE_OK && i <= n; i++) off32[i] = (int32_t)off64[i]; /* < nb < 2^31 */
    if (s == LITHE_OK) s = lithe__vk_scratch(be, (size_t)(n + 1) * 4, &O);
    if (s == LITHE_OK) s = lithe__vk_scratch(be, (size_t)nb + 4, &Bt);
    if (s == LITHE_OK) s = be->ops->upload(be, O->storage->data, 0, off32, (size_t)(n + 1) * 4);
    if (s == LITHE_OK && nb) s = be->ops->upload(be, Bt->storage->data, 0, raw, (size_t)nb);
    lithe__vk_push p = {.u = {(uint32_t)n, 0, 0, 0, seed}};
    if (s == LITHE_OK)
        s = lithe__vk_dispatch(be, "hash_strings", "sparse", SPEC2, &p,
                               (const lithe_tensor *const[]){out, Bt, NULL, NULL, O}, 5, groups_for(n), 1);
    lithe_tensor_release(O);
    lithe_tensor_release(Bt);
    lithe__free(off64);
    lithe__free(off32);
    lithe__free(raw);
    return s;
}

/* ---- recurrent, attention and similarity (shaders/recur.comp) ---- */

#define RECUR(op, code, p, groups, ...)                                                            \
    lithe__vk_dispatch(be, op, "recur", (const uint32_t[LITHE__VK_SPEC]){code}, p,                \
                       (const lithe_tensor *const[]){__VA_ARGS__},                                 \
                       sizeof((const lithe_tensor *const[]){__VA_ARGS__}) / sizeof(const lithe_tensor *), groups, 1)

/* size_at_t (T,) int32, read on the host, into steps (T,) and row starts (T,); T = 0 allowed. */
static lithe_status lstm_steps(const char *op, const lithe_tensor *size_at_t, int32_t **steps, int64_t **start) {
    int64_t T = size_at_t->numel;
    *steps = NULL;
    *start = NULL;
    if (size_at_t->dtype != LITHE_I32)
        return lithe__fail(LITHE_ERR_DTYPE, "vulkan %s: size_at_t must be int32, got %s", op,
                           lithe_dtype_name(size_at_t->dtype));
    *steps = lithe__malloc((size_t)T * 4 + 4);
    *start = lithe__malloc((size_t)T * 8 + 8);
    if (!*steps || !*start) return lithe__oom(op, (size_t)T * 12);
    LITHE__TRY(lithe_tensor_read(size_at_t, *steps, (size_t)T * 4));
    int64_t s = 0;
    for (int64_t t = 0; t < T; t++) {
        (*start)[t] = s;
        s += (*steps)[t];
        if ((*steps)[t] < 0 || s > INT32_MAX)
            return lithe__fail(LITHE_ERR_UNSUPPORTED, "vulkan %s: step size %d at %lld", op, (*steps)[t], (long long)t);
    }
    return LITHE_OK;
}

/* The push block of step t (see recur.comp): H, rows, first row, previous step's first row and
 * how many rows have a previous step (l2r: t - 1, all rows; r2l: t + 1, its size). */
static lithe__vk_push lstm_step_push(int64_t T, int64_t H, const int32_t *steps, const int64_t *start, bool reverse,
                                     int64_t t) {
    int64_t pt = reverse ? t + 1 : t - 1;
    bool has = pt >= 0 && pt < T;
    int64_t np = !has ? 0 : reverse ? (steps[pt] < steps[t] ? steps[pt] : steps[t]) : steps[t];
    lithe__vk_push p = {.u = {(uint32_t)H, (uint32_t)steps[t], (uint32_t)start[t], has ? (uint32_t)start[pt] : 0u,
                              (uint32_t)np}};
    return p;
}

static lithe_status vk_lstm_scan(lithe_backend *be, const lithe_tensor *Wh, const lithe_tensor *bx,
                                 const lithe_tensor *bh, const lithe_tensor *h0, const lithe_tensor *c0,
                                 const lithe_tensor *size_at_t, bool reverse, lithe_tensor *G, lithe_tensor *C,
                                 lithe_tensor *Y) {
    const lithe_tensor *fs[] = {Wh, bx, bh, h0, c0, G, C, Y};
    for (size_t i = 0; i < sizeof fs / sizeof *fs; i++) LITHE__TRY(need_f32("lstm_scan", fs[i]));
    int32_t *steps = NULL;
    int64_t *start = NULL, T = size_at_t->numel, H = C->shape[1];
    lithe_status s = lstm_steps("lstm_scan", size_at_t, &steps, &start);
    for (int64_t k = 0; s == LITHE_OK && k < T; k++) {
        int64_t t = reverse ? T - 1 - k : k;
        if (!steps[t]) continue;
        lithe__vk_push p = lstm_step_push(T, H, steps, start, reverse, t);
        s = RECUR("lstm_scan", 0u, &p, groups_for(steps[t] * 4 * H), G, Wh, bx, bh, Y, h0);
        if (s == LITHE_OK) s = RECUR("lstm_scan", 1u, &p, groups_for(steps[t] * H), G, C, Y, c0);
    }
    lithe__free(steps);
    lithe__free(start);
    return s;
}

static lithe_status vk_lstm_scan_backward(lithe_backend *be, const lithe_tensor *Wh, const lithe_tensor *h0,
                                          const lithe_tensor *c0, const lithe_tensor *size_at_t, bool reverse,
                                          const lithe_tensor *G, const lithe_tensor *C, const lithe_tensor *Y,
                                          lithe_tensor *dY, lithe_tensor *dC, lithe_tensor *dG, lithe_tensor *dWh) {
    const lithe_tensor *fs[] = {Wh, h0, c0, G, C, Y, dY, dC, dG, dWh};
    for (size_t i = 0; i < sizeof fs / sizeof *fs; i++) LITHE__TRY(need_f32("lstm_scan_backward", fs[i]));
    int32_t *steps = NULL;
    int64_t *start = NULL, T = size_at_t->numel, H = C->shape[1];
    lithe_status s = lstm_steps("lstm_scan_backward", size_at_t, &steps, &start);
    if (s == LITHE_OK) s = vk_fill(be, dC, 0.0f);
    /* the reverse of processing order, as the CPU walks it */
    for (int64_t k = T - 1; s == LITHE_OK && k >= 0; k--) {
        int64_t t = reverse ? T - 1 - k : k;
        if (!steps[t]) continue;
        lithe__vk_push p = lstm_step_push(T, H, steps, start, reverse, t);
        s = RECUR("lstm_scan_backward", 2u, &p, groups_for(steps[t] * H), dG, G, C, c0, dY, dC);
        if (s == LITHE_OK && p.u[4])
            s = RECUR("lstm_scan_backward", 3u, &p, groups_for((int64_t)p.u[4] * H), dY, dG, Wh);
        if (s == LITHE_OK) s = RECUR("lstm_scan_backward", 4u, &p, groups_for(4 * H * H), dWh, dG, Y, h0);
    }
    lithe__free(steps);
    lithe__free(start);
    return s;
}

static lithe_status vk_para_attention(lithe_backend *be, const lithe_tensor *X, const lithe_tensor *Q,
                                      const lithe_tensor *lengths, lithe_tensor *A, lithe_tensor *Y) {
    const lithe_tensor *fs[] = {X, Q, A, Y};
    for (size_t i = 0; i < sizeof fs / sizeof *fs; i++) LITHE__TRY(need_f32("para_attention", fs[i]));
    lithe_tensor *meta = NULL, *Tot = NULL;
    int64_t N = 0, B = lengths->numel, O = X->shape[1];
    LITHE__TRY(seq_meta(be, "para_attention", lengths, false, &N, &meta));
    if (!N) {
        lithe_tensor_release(meta);
        return LITHE_OK;
    }
    lithe__vk_push p = {.u = {(uint32_t)B, (uint32_t)O, (uint32_t)N, 0}};
    /* Tot (B,): each sequence's sum of exponentials */
    lithe_status s = lithe__vk_scratch(be, (size_t)B * 4 + 4, &Tot);
    if (s == LITHE_OK) s = RECUR("para_attention", 5u, &p, groups_for(N), A, X, Q, NULL, NULL, meta);
    if (s == LITHE_OK) s = RECUR("para_attention", 13u, &p, groups_for(B), Tot, A, NULL, NULL, NULL, meta);
    if (s == LITHE_OK) s = RECUR("para_attention", 14u, &p, groups_for(N), A, Tot, NULL, NULL, NULL, meta);
    if (s == LITHE_OK && O) s = RECUR("para_attention", 6u, &p, groups_for(N * O), Y, X, A, NULL, NULL, meta);
    lithe_tensor_release(Tot);
    lithe_tensor_release(meta);
    return s;
}

static lithe_status vk_para_attention_backward(lithe_backend *be, const lithe_tensor *X, const lithe_tensor *Q,
                                               const lithe_tensor *A, const lithe_tensor *lengths,
                                               const lithe_tensor *dY, lithe_tensor *dX, lithe_tensor *dQ) {
    const lithe_tensor *fs[] = {X, Q, A, dY, dX, dQ};
    for (size_t i = 0; i < sizeof fs / sizeof *fs; i++) LITHE__TRY(need_f32("para_attention_backward", fs[i]));
    lithe_tensor *meta = NULL, *S = NULL, *Tot = NULL;
    int64_t N = 0, B = lengths->numel, O = X->shape[1];
    LITHE__TRY(seq_meta(be, "para_attention_backward", lengths, false, &N, &meta));
    if (!N) {
        lithe_tensor_release(meta);
        return LITHE_OK;
    }
    lithe__vk_push p = {.u = {(uint32_t)B, (uint32_t)O, (uint32_t)N, 1}};
    /* S (N,): da per row, then ds; Tot (B,): each sequence's sum of A * da */
    lithe_status s = lithe__vk_scratch(be, (size_t)N * 4, &S);
    if (s == LITHE_OK) s = lithe__vk_scratch(be, (size_t)B * 4 + 4, &Tot);
    if (s == LITHE_OK) s = RECUR("para_attention_backward", 7u, &p, groups_for(N), S, X, NULL, dY, NULL, meta);
    if (s == LITHE_OK) s = RECUR("para_attention_backward", 13u, &p, groups_for(B), Tot, A, S, NULL, NULL, meta);
    if (s == LITHE_OK) s = RECUR("para_attention_backward", 15u, &p, groups_for(N), S, Tot, A, NULL, NULL, meta);
    if (s == LITHE_OK && O)
        s = RECUR("para_attention_backward", 8u, &p, groups_for(N * O), dX, dY, A, S, Q, meta);
    if (s == LITHE_OK && O) s = RECUR("para_attention_backward", 9u, &p, groups_for(O), dQ, X, S);
    lithe_tensor_release(Tot);
    lithe_tensor_release(S);
    lithe_tensor_release(meta);
    return s;
}

static lithe_status vk_cauchy_similarity(lithe_backend *be, const lithe_tensor *X1, const lithe_tensor *X2,
                                         const lithe_tensor *W, lithe_tensor *sim) {
    const lithe_tensor *fs[] = {X1, X2, W, sim};
    for (size_t i = 0; i < sizeof fs / sizeof *fs; i++) LITHE__TRY(need_f32("cauchy_similarity", fs[i]));
    int64_t B = X1->shape[0], I = X1->shape[1];
    if (!B) return LITHE_OK;
    lithe__vk_push p = {.u = {(uint32_t)B, (uint32_t)I}};
    return RECUR("cauchy_similarity", 10u, &p, groups_for(B), sim, X1, X2, W);
}

static lithe_status vk_cauchy_similarity_backward(lithe_backend *be, const lithe_tensor *X1, const lithe_tensor *X2,
                                                  const lithe_tensor *W, const lithe_tensor *sim,
                                                  const lithe_tensor *dsim, lithe_tensor *dX1, lithe_tensor *dX2,
                                                  lithe_tensor *dW) {
    const lithe_tensor *fs[] = {X1, X2, W, sim, dsim, dX1, dX2, dW};
    for (size_t i = 0; i < sizeof fs / sizeof *fs; i++) LITHE__TRY(need_f32("cauchy_similarity_backward", fs[i]));
    int64_t B = X1->shape[0], I = X1->shape[1];
    if (!B) return LITHE_OK;
    if (!lithe_tensor_is_contiguous(sim) || !lithe_tensor_is_contiguous(dsim))
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "vulkan cauchy_similarity_backward: strided sim / dsim");
    /* sim then dsim in one scratch (B * 2,): the shader has six bindings */
    lithe_tensor *SD = NULL;
    LITHE__TRY(lithe__vk_scratch(be, (size_t)B * 8, &SD));
    lithe_status s = lithe__vk_copy_bytes(be, lithe__vk_mem(SD), byte_offset(SD), lithe__vk_mem(sim), byte_offset(sim),
                                          (size_t)B * 4);
    if (s == LITHE_OK)
        s = lithe__vk_copy_bytes(be, lithe__vk_mem(SD), byte_offset(SD) + (size_t)B * 4, lithe__vk_mem(dsim),
                                 byte_offset(dsim), (size_t)B * 4);
    lithe__vk_push p = {.u = {(uint32_t)B, (uint32_t)I}};
    if (s == LITHE_OK && I)
        s = RECUR("cauchy_similarity_backward", 11u, &p, groups_for(B * I), dX1, dX2, X1, X2, W, SD);
    if (s == LITHE_OK && I)
        s = RECUR("cauchy_similarity_backward", 12u, &p, groups_for(I), dW, X1, X2, NULL, NULL, SD);
    lithe_tensor_release(SD);
    return s;
}

/* ---- 2-D convolution of imported graphs (shaders/conv.comp) ---- */

/* The geometry as conv.comp reads it; refused when an index could pass 32 bits. */
static lithe_status conv_push(const char *op, const lithe__conv2d *g, bool bias, lithe__vk_push *p) {
    int64_t big = g->N * (g->C > g->M ? g->C : g->M) * (g->H * g->W > g->OH * g->OW ? g->H * g->W : g->OH * g->OW);
    if (big >= INT32_MAX || g->M * g->C * g->KH * g->KW >= INT32_MAX || g->group <= 0)
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "vulkan %s: the convolution exceeds 32-bit indexing", op);
    memset(p, 0, sizeof *p);
    const int64_t u[10] = {g->N, g->C, g->H, g->W, g->M, g->KH, g->KW, g->OH, g->OW, g->group};
    for (int i = 0; i < 10; i++) p->u[i] = (uint32_t)u[i];
    const int32_t f[7] = {(int32_t)g->stride[0], (int32_t)g->stride[1], (int32_t)g->pad[0], (int32_t)g->pad[1],
                          (int32_t)g->dil[0], (int32_t)g->dil[1], bias};
    memcpy(p->f, f, sizeof f); /* ints carried as float bits */
    return LITHE_OK;
}

static lithe_status vk_conv2d(lithe_backend *be, const lithe__conv2d *g, const lithe_tensor *X, const lithe_tensor *W,
                              const lithe_tensor *b, const lithe__act *a, lithe_tensor *Y) {
    LITHE__TRY(need_f32("conv2d", X));
    LITHE__TRY(need_f32("conv2d", W));
    LITHE__TRY(need_f32("conv2d", Y));
    if (b) LITHE__TRY(need_f32("conv2d", b));
    if (!Y->numel) return LITHE_OK;
    lithe__vk_push p;
    LITHE__TRY(conv_push("conv2d", g, b != NULL, &p));
    LITHE__TRY(DISPATCH("conv2d", "conv", SPEC0, &p, groups_for(Y->numel), 1, Y, X, W, b));
    /* the fused activation: the act primitive over Y in place (Conv then Relu / Clip's bits) */
    return a ? vk_act(be, a, Y, Y) : LITHE_OK;
}

static lithe_status vk_conv2d_backward(lithe_backend *be, const lithe__conv2d *g, const lithe_tensor *X,
                                       const lithe_tensor *W, const lithe_tensor *dY, lithe_tensor *dX,
                                       lithe_tensor *dW, lithe_tensor *db) {
    const lithe_tensor *fs[] = {X, W, dY, dX, dW, db};
    for (size_t i = 0; i < sizeof fs / sizeof *fs; i++)
        if (fs[i]) LITHE__TRY(need_f32("conv2d_backward", fs[i]));
    lithe__vk_push p;
    LITHE__TRY(conv_push("conv2d_backward", g, false, &p));
    static const uint32_t SPEC3[LITHE__VK_SPEC] = {3};
    lithe_status s = LITHE_OK;
    if (dX && dX->numel) s = DISPATCH("conv2d_backward", "conv", SPEC1, &p, groups_for(dX->numel), 1, dX, dY, W);
    if (s == LITHE_OK && dW && dW->numel)
        s = DISPATCH("conv2d_backward", "conv", SPEC2, &p, groups_for(dW->numel), 1, dW, dY, X);
    if (s == LITHE_OK && db && db->numel)
        s = DISPATCH("conv2d_backward", "conv", SPEC3, &p, groups_for(db->numel), 1, db, dY);
    return s;
}

/* Pooling geometry as conv.comp reads it (u9: 1 = max, 2 = count_include_pad). */
static lithe_status pool_push(const char *op, const lithe__pool2d *g, lithe__vk_push *p) {
    int64_t big = g->N * g->C * (g->H * g->W > g->OH * g->OW ? g->H * g->W : g->OH * g->OW);
    if (big >= INT32_MAX)
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "vulkan %s: the pooling exceeds 32-bit indexing", op);
    memset(p, 0, sizeof *p);
    const int64_t u[10] = {g->N, g->C, g->H, g->W, g->C, g->KH, g->KW, g->OH, g->OW,
                           (g->max ? 1 : 0) | (g->count_include_pad ? 2 : 0)};
    for (int i = 0; i < 10; i++) p->u[i] = (uint32_t)u[i];
    const int32_t f[6] = {(int32_t)g->stride[0], (int32_t)g->stride[1], (int32_t)g->pad[0], (int32_t)g->pad[1],
                          (int32_t)g->dil[0], (int32_t)g->dil[1]};
    memcpy(p->f, f, sizeof f);
    return LITHE_OK;
}

static const uint32_t SPEC4[LITHE__VK_SPEC] = {4}, SPEC5[LITHE__VK_SPEC] = {5};

static lithe_status vk_pool2d(lithe_backend *be, const lithe__pool2d *g, const lithe_tensor *X, lithe_tensor *Y,
                              lithe_tensor *which) {
    LITHE__TRY(need_f32("pool2d", X));
    LITHE__TRY(need_f32("pool2d", Y));
    if (g->max && which && which->dtype != LITHE_I32)
        return lithe__fail(LITHE_ERR_DTYPE, "vulkan pool2d: max pooling's which must be int32, got %s",
                           lithe_dtype_name(which->dtype));
    if (!Y->numel) return LITHE_OK;
    lithe__vk_push p;
    LITHE__TRY(pool_push("pool2d", g, &p));
    if (g->max && !which) p.u[9] |= 4u; /* inference: the shader writes Y only */
    return DISPATCH("pool2d", "conv", SPEC4, &p, groups_for(Y->numel), 1, Y, X, NULL, NULL, g->max ? which : NULL);
}

static lithe_status vk_pool2d_backward(lithe_backend *be, const lithe__pool2d *g, const lithe_tensor *dY,
                                       const lithe_tensor *which, lithe_tensor *dX) {
    LITHE__TRY(need_f32("pool2d_backward", dY));
    LITHE__TRY(need_f32("pool2d_backward", dX));
    if (g->max && (!which || which->dtype != LITHE_I32))
        return lithe__fail(LITHE_ERR_DTYPE, "vulkan pool2d_backward: max pooling needs an int32 which");
    if (!dX->numel) return LITHE_OK;
    lithe__vk_push p;
    LITHE__TRY(pool_push("pool2d_backward", g, &p));
    return DISPATCH("pool2d_backward", "conv", SPEC5, &p, groups_for(dX->numel), 1, dX, dY, NULL, NULL,
                    g->max ? which : NULL);
}

/* ---- elementwise maths and log-softmax of imported graphs (shaders/graph.comp) ---- */

static lithe_status need_f32_dense(const char *op, const lithe_tensor *t) {
    LITHE__TRY(need_f32(op, t));
    if (!lithe_tensor_is_contiguous(t))
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "vulkan %s: strided tensors are not supported", op);
    return LITHE_OK;
}

static lithe_status vk_unary(lithe_backend *be, int op, const lithe_tensor *X, lithe_tensor *Y) {
    LITHE__TRY(need_f32_dense("unary", X));
    LITHE__TRY(need_f32_dense("unary", Y));
    if (op < 0 || op >= LITHE__UN_COUNT) return lithe__fail(LITHE_ERR_VALUE, "vulkan unary: op %d", op);
    if (!X->numel) return LITHE_OK;
    lithe__vk_push p = {.u = {(uint32_t)op, (uint32_t)X->numel}};
    return DISPATCH("unary", "graph", SPEC0, &p, groups_for(X->numel), 1, Y, X);
}

static lithe_status vk_unary_backward(lithe_backend *be, int op, const lithe_tensor *X, const lithe_tensor *Y,
                                      const lithe_tensor *dY, lithe_tensor *dX) {
    const lithe_tensor *fs[] = {X, Y, dY, dX};
    for (size_t i = 0; i < sizeof fs / sizeof *fs; i++) LITHE__TRY(need_f32_dense("unary_backward", fs[i]));
    if (op < 0 || op >= LITHE__UN_COUNT) return lithe__fail(LITHE_ERR_VALUE, "vulkan unary_backward: op %d", op);
    if (!X->numel) return LITHE_OK;
    lithe__vk_push p = {.u = {(uint32_t)op, (uint32_t)X->numel}};
    return DISPATCH("unary_backward", "graph", SPEC1, &p, groups_for(X->numel), 1, dX, X, Y, dY);
}

static lithe_status vk_log_softmax(lithe_backend *be, const lithe_tensor *X, lithe_tensor *Y) {
    LITHE__TRY(need_f32_dense("log_softmax", X));
    LITHE__TRY(need_f32_dense("log_softmax", Y));
    if (!X->numel) return LITHE_OK;
    lithe__vk_push p = {.u = {(uint32_t)X->shape[0], (uint32_t)X->shape[1]}};
    return DISPATCH("log_softmax", "graph", SPEC2, &p, groups_for(X->shape[0]), 1, Y, X);
}

static lithe_status vk_log_softmax_backward(lithe_backend *be, const lithe_tensor *Y, const lithe_tensor *dY,
                                            lithe_tensor *dX) {
    LITHE__TRY(need_f32_dense("log_softmax_backward", Y));
    LITHE__TRY(need_f32_dense("log_softmax_backward", dY));
    LITHE__TRY(need_f32_dense("log_softmax_backward", dX));
    if (!Y->numel) return LITHE_OK;
    static const uint32_t SPEC3[LITHE__VK_SPEC] = {3};
    lithe__vk_push p = {.u = {(uint32_t)Y->shape[0], (uint32_t)Y->shape[1]}};
    return DISPATCH("log_softmax_backward", "graph", SPEC3, &p, groups_for(Y->shape[0]), 1, dX, Y, dY);
}

/* ---- broadcasting ops of imported graphs (shaders/bcast.comp) ---- */

/* Operand t's element strides in the index space `shape` (nd axes), as the CPU's bcast_strides:
 * aligned at the last axis, 0 along an axis t broadcasts (extent 1, or missing). */
static void bcast_strides(const lithe_tensor *t, int nd, const int64_t *shape, int32_t *out) {
    int64_t s = 1;
    for (int d = nd - 1, k = t->ndim - 1; d >= 0; d--, k--) {
        if (k < 0) {
            out[d] = 0;
            continue;
        }
        out[d] = t->shape[k] == 1 && shape[d] != 1 ? 0 : (int32_t)s;
        s *= t->shape[k];
    }
}

/* Uploads bcast.comp's layout [nd, shape[8], s0[8], s1[8], s2[8]] for up to three operands. */
static lithe_status bcast_layout(lithe_backend *be, const char *op, int nd, const int64_t *shape,
                                 const lithe_tensor *const ops3[3], lithe_tensor **out) {
    *out = NULL;
    if (nd > 8) return lithe__fail(LITHE_ERR_UNSUPPORTED, "vulkan %s: %d axes", op, nd);
    int32_t lay[33] = {nd};
    for (int d = 0; d < nd; d++) lay[1 + d] = (int32_t)shape[d];
    for (int o = 0; o < 3; o++) {
        if (!ops3[o]) continue;
        LITHE__TRY(need_f32(op, ops3[o]));
        if (!lithe_tensor_is_contiguous(ops3[o]))
            return lithe__fail(LITHE_ERR_UNSUPPORTED, "vulkan %s: strided tensors are not supported", op);
        bcast_strides(ops3[o], nd, shape, lay + 9 + 8 * o);
    }
    LITHE__TRY(lithe__vk_scratch(be, sizeof lay, out));
    lithe_status s = be->ops->upload(be, (*out)->storage->data, 0, lay, sizeof lay);
    if (s != LITHE_OK) {
        lithe_tensor_release(*out);
        *out = NULL;
    }
    return s;
}

static const uint32_t SPEC_B0[LITHE__VK_SPEC] = {0}, SPEC_B1[LITHE__VK_SPEC] = {1}, SPEC_B2[LITHE__VK_SPEC] = {2},
                      SPEC_B3[LITHE__VK_SPEC] = {3}, SPEC_B4[LITHE__VK_SPEC] = {4};

static lithe_status vk_bcast_binary(lithe_backend *be, int op, const lithe_tensor *A, const lithe_tensor *B,
                                    lithe_tensor *Y) {
    LITHE__TRY(need_f32_dense("bcast_binary", Y));
    if (!Y->numel) return LITHE_OK;
    lithe_tensor *L = NULL;
    LITHE__TRY(bcast_layout(be, "bcast_binary", Y->ndim, Y->shape, (const lithe_tensor *const[3]){A, B, NULL}, &L));
    lithe__vk_push p = {.u = {(uint32_t)op, (uint32_t)Y->numel}};
    lithe_status s = DISPATCH("bcast_binary", "bcast", SPEC_B0, &p, groups_for(Y->numel), 1, Y, A, B, NULL, NULL, L);
    lithe_tensor_release(L);
    return s;
}

static lithe_status vk_bcast_binary_backward(lithe_backend *be, int op, const lithe_tensor *A, const lithe_tensor *B,
                                             const lithe_tensor *Y, const lithe_tensor *dY, lithe_tensor *dA,
                                             lithe_tensor *dB) {
    LITHE__TRY(need_f32_dense("bcast_binary_backward", dY));
    if (Y) LITHE__TRY(need_f32_dense("bcast_binary_backward", Y));
    if (!dY->numel) return LITHE_OK;
    lithe_tensor *L = NULL;
    LITHE__TRY(bcast_layout(be, "bcast_binary_backward", dY->ndim, dY->shape,
                            (const lithe_tensor *const[3]){A, B, NULL}, &L));
    lithe_status s = LITHE_OK;
    lithe_tensor *grads[2] = {dA, dB};
    for (uint32_t side = 0; side < 2 && s == LITHE_OK; side++) {
        lithe_tensor *g = grads[side];
        if (!g || !g->numel) continue;
        s = need_f32_dense("bcast_binary_backward", g);
        lithe__vk_push p = {.u = {(uint32_t)op, (uint32_t)g->numel, side, Y != NULL}};
        if (s == LITHE_OK)
            s = DISPATCH("bcast_binary_backward", "bcast", SPEC_B4, &p, groups_for(g->numel), 1, g, A, B, Y, dY, L);
    }
    lithe_tensor_release(L);
    return s;
}

static lithe_status vk_bcast_where(lithe_backend *be, const lithe_tensor *C, const lithe_tensor *A,
                                   const lithe_tensor *B, lithe_tensor *Y) {
    LITHE__TRY(need_f32_dense("bcast_where", Y));
    if (!Y->numel) return LITHE_OK;
    lithe_tensor *L = NULL;
    LITHE__TRY(bcast_layout(be, "bcast_where", Y->ndim, Y->shape, (const lithe_tensor *const[3]){C, A, B}, &L));
    lithe__vk_push p = {.u = {0, (uint32_t)Y->numel}};
    lithe_status s = DISPATCH("bcast_where", "bcast", SPEC_B1, &p, groups_for(Y->numel), 1, Y, C, A, B, NULL, L);
    lithe_tensor_release(L);
    return s;
}

static lithe_status vk_broadcast_to(lithe_backend *be, const lithe_tensor *X, float alpha, float beta,
                                    lithe_tensor *Y) {
    LITHE__TRY(need_f32_dense("broadcast_to", Y));
    if (!Y->numel) return LITHE_OK;
    lithe_tensor *L = NULL;
    LITHE__TRY(bcast_layout(be, "broadcast_to", Y->ndim, Y->shape, (const lithe_tensor *const[3]){X, NULL, NULL}, &L));
    lithe__vk_push p = {.u = {0, (uint32_t)Y->numel}, .f = {alpha, beta}};
    lithe_status s = DISPATCH("broadcast_to", "bcast", SPEC_B2, &p, groups_for(Y->numel), 1, Y, X, NULL, NULL, NULL, L);
    lithe_tensor_release(L);
    return s;
}

static lithe_status vk_reduce_to(lithe_backend *be, const lithe_tensor *X, float alpha, float beta, lithe_tensor *Y) {
    LITHE__TRY(need_f32_dense("reduce_to", X));
    if (!Y->numel) return LITHE_OK;
    lithe_tensor *L = NULL;
    LITHE__TRY(bcast_layout(be, "reduce_to", X->ndim, X->shape, (const lithe_tensor *const[3]){Y, NULL, NULL}, &L));
    lithe__vk_push p = {.u = {0, (uint32_t)Y->numel}, .f = {alpha, beta}};
    lithe_status s = DISPATCH("reduce_to", "bcast", SPEC_B3, &p, groups_for(Y->numel), 1, Y, X, NULL, NULL, NULL, L);
    lithe_tensor_release(L);
    return s;
}

/* Listed by name rather than generated from primitives.def, so a primitive added to the table
 * before its shader exists leaves a NULL field: the dispatcher then answers
 * LITHE_ERR_UNSUPPORTED ("backend 'vulkan' lacks primitive ..."), never a silent CPU run, and
 * test_vulkan lists what is missing. */
void lithe__vk_fill_ops(lithe_backend_ops *ops) {
    ops->fill = vk_fill;
    ops->copy = vk_copy;
    ops->gemm_bias_act = vk_gemm_bias_act;
    ops->cast = vk_cast;
    ops->gemm = vk_gemm;
    ops->add_row = vk_add_row;
    ops->sum_rows = vk_sum_rows;
    ops->axpby = vk_axpby;
    ops->mul = vk_mul;
    ops->sum_squares = vk_sum_squares;
    ops->clip_gradient = vk_clip_gradient;
    ops->act = vk_act;
    ops->act_backward = vk_act_backward;
    ops->softmax = vk_softmax;
    ops->softmax_backward = vk_softmax_backward;
    ops->dropout_mask = vk_dropout_mask;
    ops->adam = vk_adam;
    ops->radam = vk_radam;
    ops->adam_step = vk_adam_step;
    ops->update_averages = vk_update_averages;
    ops->cce_labels = vk_cce_labels;
    ops->any_outside = vk_any_outside;
    ops->maxout = vk_maxout;
    ops->maxout_backward = vk_maxout_backward;
    ops->layernorm = vk_layernorm;
    ops->layernorm_backward = vk_layernorm_backward;
    ops->gather_rows = vk_gather_rows;
    ops->scatter_add_rows = vk_scatter_add_rows;
    ops->hash_ids = vk_hash_ids;
    ops->reduce_sum = vk_reduce_sum;
    ops->reduce_sum_backward = vk_reduce_sum_backward;
    ops->reduce_max = vk_reduce_max;
    ops->reduce_max_backward = vk_reduce_max_backward;
    ops->seq2col = vk_seq2col;
    ops->seq2col_backward = vk_seq2col_backward;
    ops->sparse_linear = vk_sparse_linear;
    ops->sparse_linear_backward = vk_sparse_linear_backward;
    ops->hash_strings = vk_hash_strings;
    ops->lstm_scan = vk_lstm_scan;
    ops->lstm_scan_backward = vk_lstm_scan_backward;
    ops->para_attention = vk_para_attention;
    ops->para_attention_backward = vk_para_attention_backward;
    ops->cauchy_similarity = vk_cauchy_similarity;
    ops->cauchy_similarity_backward = vk_cauchy_similarity_backward;
    ops->conv2d = vk_conv2d;
    ops->conv2d_backward = vk_conv2d_backward;
    ops->pool2d = vk_pool2d;
    ops->pool2d_backward = vk_pool2d_backward;
    ops->unary = vk_unary;
    ops->unary_backward = vk_unary_backward;
    ops->log_softmax = vk_log_softmax;
    ops->log_softmax_backward = vk_log_softmax_backward;
    ops->bcast_binary = vk_bcast_binary;
    ops->bcast_binary_backward = vk_bcast_binary_backward;
    ops->bcast_where = vk_bcast_where;
    ops->broadcast_to = vk_broadcast_to;
    ops->reduce_to = vk_reduce_to;
}
