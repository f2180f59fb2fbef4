/* The WebGPU backend's GEMM (shaders/gemm.wgsl: 64 x 64 tiles through workgroup memory, a
 * pipeline per transpose case; shaders/gemm_sg.wgsl, 8 x 256 tiles through subgroup shuffles,
 * where the adapter has subgroups; shaders/gemm_v4.wgsl, 4 x 4 per invocation with vec4 loads and
 * no barrier, where the adapter runs on the CPU) and the dense layers' fused forward gemm_bias_act: bias, the
 * pre-activation Z and the activation in the GEMM's epilogue, one dispatch (the CPU's one pass). */
#include "webgpu_internal.h"

static lithe_status gemm_dispatch(lithe_backend *be, const char *name, bool tA, bool tB, float alpha,
                                  const lithe_tensor *A, const lithe_tensor *B, float beta, lithe_tensor *C,
                                  const lithe_tensor *bias, const lithe__act *a, lithe_tensor *Z, bool row_bias) {
    LITHE__TRY(lithe__wg_f32(name, A));
    LITHE__TRY(lithe__wg_f32(name, B));
    LITHE__TRY(lithe__wg_f32(name, C));
    int64_t M = C->shape[0], N = C->shape[1], K = tA ? A->shape[0] : A->shape[1];
    if (M == 0 || N == 0) return LITHE_OK;
    int64_t lda = A->shape[0] > 1 ? A->strides[0] : A->shape[1], ldb = B->shape[0] > 1 ? B->strides[0] : B->shape[1],
            ldc = C->shape[0] > 1 ? C->strides[0] : C->shape[1], ldz = Z && Z->shape[0] > 1 ? Z->strides[0] : N;
    if ((A->shape[1] > 1 && A->strides[1] != 1) || (B->shape[1] > 1 && B->strides[1] != 1) ||
        (C->shape[1] > 1 && C->strides[1] != 1) || (Z && Z->shape[1] > 1 && Z->strides[1] != 1))
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "webgpu %s: columns must be contiguous (row strides only)", name);
    int64_t gx = (N + 63) / 64, gy = (M + 63) / 64;
    if (gx > 65535 || gy > 65535)
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "webgpu %s: %lld x %lld output is too large", name, (long long)M,
                           (long long)N);
    if (a && (unsigned)a->kind >= LITHE__ACT_COUNT)
        return lithe__fail(LITHE_ERR_INVALID_ARG, "webgpu %s: unknown activation kind %d", name, (int)a->kind);
    lithe__wg_params p = {.u = {(uint32_t)M, (uint32_t)N, (uint32_t)K, (uint32_t)lda, (uint32_t)ldb, (uint32_t)ldc,
                                (bias ? 1u : 0u) | (a ? 2u : 0u) | (Z ? 4u : 0u) | (row_bias ? 8u : 0u), a ? (uint32_t)a->kind : 0u,
                                (uint32_t)ldz},
                          .f = {alpha, beta}};
    if (a) {
        p.f[8] = a->slope;
        p.f[9] = a->offset;
        p.f[10] = a->min_val;
        p.f[11] = a->max_val;
        p.f[12] = a->threshold;
    }
    uint32_t op = (tA ? 1u : 0u) | (tB ? 2u : 0u);
    lithe__wg *wg = lithe__wg_of(be);
    /* On an adapter that runs on the CPU (SwiftShader): the barrier-free vec4 kernel wherever A's and
     * B's row strides and offsets are multiples of 4 floats (vec4 bindings). There a barrier costs a
     * coroutine switch per 4 invocations and workgroup memory stages nothing the caches do not:
     * 784-512-512-10 at batch 64, its GEMMs took 1.4-4.4x less time than the tiled kernel's. */
    bool v4 = lda % 4 == 0 && ldb % 4 == 0 && A->offset % 4 == 0 && B->offset % 4 == 0;
    if (row_bias && !v4) /* only the vec4 kernel has a bias per row (lithe__wg_gemm_v4_rowbias) */
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "webgpu %s: a bias per row needs the vec4 GEMM", name);
    if (wg->cpu_gemm == 2 || (wg->cpu_gemm == 1 && v4) || row_bias) {
        if (!v4) return lithe__fail(LITHE_ERR_UNSUPPORTED, "webgpu %s: the vec4 GEMM needs strides and offsets in 4s", name);
        return WG_DISPATCH(name, gemm_v4, op, &p, 1u | 16u, (uint32_t)((N + 31) / 32), (uint32_t)((M + 31) / 32), C, A,
                           B, bias, Z);
    }
    /* 8 x 256 tiles, A through subgroup shuffles, where the adapter has subgroups and op(A) has at
     * most 32 rows: there the tiled kernel's 64-row tiles would compute mostly padding (batch-1
     * predictions, small batches); on larger M the tiled kernel is as fast or faster (SwiftShader) */
    int sg = wg->subgroups;
    /* on the CPU adapter the unaligned cases take the barrier-free subgroup kernel at every M */
    if (sg == 2 || (sg == 1 && (M <= 32 || wg->cpu_gemm)))
        return WG_DISPATCH(name, gemm_sg, op, &p, 1u | 16u, (uint32_t)((N + 255) / 256), (uint32_t)((M + 7) / 8), C, A, B,
                           bias, Z);
    return WG_DISPATCH(name, gemm, op, &p, 1u | 16u, (uint32_t)gx, (uint32_t)gy, C, A, B, bias, Z);
}

lithe_status wg_gemm(lithe_backend *be, bool tA, bool tB, float alpha, const lithe_tensor *A, const lithe_tensor *B,
                     float beta, lithe_tensor *C) {
    return gemm_dispatch(be, "gemm", tA, tB, alpha, A, B, beta, C, NULL, NULL, NULL, false);
}

lithe_status wg_gemm_bias_act(lithe_backend *be, bool tA, bool tB, const lithe_tensor *A, const lithe_tensor *B,
                              const lithe_tensor *b, const lithe__act *a, lithe_tensor *Z, lithe_tensor *Y) {
    return gemm_dispatch(be, "gemm_bias_act", tA, tB, 1.0f, A, B, 0.0f, Y, b, a, Z, false);
}

lithe_status lithe__wg_gemm_v4_rowbias(lithe_backend *be, const char *name, const lithe_tensor *A, const lithe_tensor *B,
                                       const lithe_tensor *b, const lithe__act *a, lithe_tensor *Y) {
    return gemm_dispatch(be, name, false, false, 1.0f, A, B, 0.0f, Y, b, a, NULL, b != NULL);
}
