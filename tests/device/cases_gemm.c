/* Device conformance (cases.h), GEMM: the plain product at tile edges with strided outputs
 * and alpha / beta, the dense layers' fused gemm_bias_act, and gemm_q8. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cases.h"

static void gemm_cases(void) {
    /* tile edges of the 64 x 64 x 16, 128 x 128 x 8 and subgroup (K steps of the subgroup size)
     * blockings, thin shapes, multiples of 4 (the vec4 loads and stores) next to odd sizes, and
     * big products (the run-time choice's big-product variant) */
    static const int64_t mnk[][3] = {{1, 1, 1},     {63, 65, 17},   {64, 64, 16},   {65, 63, 15},  {128, 129, 127},
                                     {3, 200, 64},  {200, 3, 33},   {130, 70, 0},   {257, 300, 129}, {256, 256, 8},
                                     {128, 128, 32}, {260, 132, 36}, {256, 384, 68}, {4, 4, 4},     {33, 8, 100}};
    static const float ab[][2] = {{1, 0}, {0.5f, 1}, {-1.5f, 0.25f}};
    for (size_t z = 0; z < sizeof mnk / sizeof mnk[0]; z++)
        for (int tA = 0; tA < 2; tA++)
            for (int tB = 0; tB < 2; tB++) {
                int64_t M = mnk[z][0], N = mnk[z][1], K = mnk[z][2];
                float alpha = ab[(z + (size_t)tA) % 3][0], beta = ab[(z + (size_t)tA) % 3][1];
                pair A = pair_rand(2, tA ? (int64_t[]){K, M} : (int64_t[]){M, K}, -1, 1);
                pair B = pair_rand(2, tB ? (int64_t[]){N, K} : (int64_t[]){K, N}, -1, 1);
                /* C a column slice of a wider matrix: a row stride != N; starting at column 2 of
                 * N + 5 (no vec4 access) or, for odd cases, at column 4 of N + 8 (16-byte aligned
                 * rows when N is a multiple of 4) */
                int64_t c0 = z % 2 ? 4 : 2;
                pair Cw = pair_rand(2, (int64_t[]){M, N + 2 * c0 + (z % 2 ? 0 : 1)}, -1, 1);
                lithe_tensor *cc = NULL, *cv = NULL;
                OK(lithe_tensor_slice(Cw.c, 1, c0, N + c0, &cc));
                OK(lithe_tensor_slice(Cw.v, 1, c0, N + c0, &cv));
                OK(lithe__op_gemm(cpu, tA, tB, alpha, A.c, B.c, beta, cc));
                OK(lithe__op_gemm(dev, tA, tB, alpha, A.v, B.v, beta, cv));
                char what[128];
                snprintf(what, sizeof what, "gemm M=%lld N=%lld K=%lld tA=%d tB=%d", (long long)M, (long long)N,
                         (long long)K, tA, tB);
                /* sums of K products of magnitude <= 1 in another order */
                expect_pair(what, Cw, 1e-5 * (double)(K + 1), 1e-5);
                lithe_tensor_release(cc);
                lithe_tensor_release(cv);
                pair_free(A);
                pair_free(B);
                pair_free(Cw);
            }
}

/* odd sizes with alpha 0.75, beta 0.5 on contiguous outputs, and the fused forward with each
 * transposition (bias, ReLU or GELU, Z; then neither) */
static void gemm_transposed_fused_cases(void) {
    static const int64_t mnk[][3] = {{1, 1, 1}, {3, 5, 7}, {64, 64, 64}, {65, 63, 17}, {50, 48, 20}, {128, 10, 300}, {7, 130, 1},
                                         /* gemm_v4's edges: ragged M and N (tB), ragged K (tA) */ {13, 9, 8}, {12, 40, 7}};
    char w[128];
    for (size_t k = 0; k < sizeof mnk / sizeof mnk[0]; k++) {
        int64_t M = mnk[k][0], N = mnk[k][1], K = mnk[k][2];
        for (int t = 0; t < 4; t++) {
            bool tA = t & 1, tB = t & 2;
            int64_t sa[2] = {tA ? K : M, tA ? M : K}, sb[2] = {tB ? N : K, tB ? K : N}, sc[2] = {M, N};
            pair A = pair_rand(2, sa, -1, 1), B = pair_rand(2, sb, -1, 1), C = pair_rand(2, sc, -1, 1), Z = pair_rand(2, sc, 0, 1);
            pair bias = pair_rand(1, &N, -1, 1);
            double tol = 1e-6 * (double)K + 1e-6;
            BOTH(lithe__op_gemm(cpu, tA, tB, 0.75f, A.c, B.c, 0.5f, C.c), lithe__op_gemm(dev, tA, tB, 0.75f, A.v, B.v, 0.5f, C.v));
            snprintf(w, sizeof w, "gemm %lldx%lldx%lld tA=%d tB=%d", (long long)M, (long long)N, (long long)K, tA, tB);
            expect_pair(w, C, tol, 1e-5);
            lithe__act relu = {.kind = LITHE__ACT_RELU}, gelu = {.kind = LITHE__ACT_GELU};
            BOTH(lithe__op_gemm_bias_act(cpu, tA, tB, A.c, B.c, bias.c, t % 2 ? &gelu : &relu, Z.c, C.c),
                 lithe__op_gemm_bias_act(dev, tA, tB, A.v, B.v, bias.v, t % 2 ? &gelu : &relu, Z.v, C.v));
            snprintf(w, sizeof w, "gemm_bias_act Y %lldx%lldx%lld tA=%d tB=%d", (long long)M, (long long)N, (long long)K, tA, tB);
            expect_pair(w, C, tol, 1e-5);
            snprintf(w, sizeof w, "gemm_bias_act Z %lldx%lldx%lld tA=%d tB=%d", (long long)M, (long long)N, (long long)K, tA, tB);
            expect_pair(w, Z, tol, 1e-5);
            BOTH(lithe__op_gemm_bias_act(cpu, tA, tB, A.c, B.c, NULL, NULL, NULL, C.c),
                 lithe__op_gemm_bias_act(dev, tA, tB, A.v, B.v, NULL, NULL, NULL, C.v));
            snprintf(w, sizeof w, "gemm_bias_act plain %lldx%lldx%lld tA=%d tB=%d", (long long)M, (long long)N, (long long)K, tA, tB);
            expect_pair(w, C, tol, 1e-5);
            pair_free(A);
            pair_free(B);
            pair_free(C);
            pair_free(Z);
            pair_free(bias);
        }
    }
}

/* Every GEMM case: the tile edges of the device's blockings with strided outputs, then the odd and
 * ragged (vec4) sizes with every transposition fused. The Vulkan runner also runs it once per GEMM
 * variant (test_device.c), WebGPU's once per WGSL variant (wgt_gemm_variants). */
void dc_gemm(void) {
    gemm_cases();
    gemm_transposed_fused_cases();
}

/* the dense layers' fused forward: X (M, K) · Wᵀ + b, then an activation, with and without
 * the pre-activation Z, bias and activation */
void dc_gemm_bias_act(void) {
    static const int64_t mnk[][3] = {{1, 1, 1}, {7, 5, 3}, {128, 10, 512}, {33, 65, 17}};
    lithe__act relu = {.kind = LITHE__ACT_RELU}, gelu = {.kind = LITHE__ACT_GELU};
    const lithe__act *acts[] = {&relu, &gelu, NULL};
    for (size_t i = 0; i < sizeof mnk / sizeof mnk[0]; i++) {
        int64_t M = mnk[i][0], N = mnk[i][1], K = mnk[i][2];
        pair X = pair_rand(2, (int64_t[]){M, K}, -1, 1), W = pair_rand(2, (int64_t[]){N, K}, -1, 1),
             b = pair_rand(1, &N, -1, 1), Z = pair_new(LITHE_F32, 2, (int64_t[]){M, N}, NULL),
             Y = pair_new(LITHE_F32, 2, (int64_t[]){M, N}, NULL);
        for (size_t a = 0; a < 3; a++)
            for (int bias = 0; bias < 2; bias++)
                for (int withz = 0; withz < 2; withz++) {
                    OK(lithe__op_gemm_bias_act(cpu, false, true, X.c, W.c, bias ? b.c : NULL, acts[a],
                                               withz ? Z.c : NULL, Y.c));
                    OK(lithe__op_gemm_bias_act(dev, false, true, X.v, W.v, bias ? b.v : NULL, acts[a],
                                               withz ? Z.v : NULL, Y.v));
                    expect_pair("gemm_bias_act Y", Y, 2e-4, 1e-4); /* GEMMs sum in other orders (K <= 512) */
                    if (withz) expect_pair("gemm_bias_act Z", Z, 2e-4, 1e-4);
                }
        pair_free(X), pair_free(W), pair_free(b), pair_free(Z), pair_free(Y);
    }
}

/* gemm_q8: W int8 (N, K) with per-row and per-tensor scales, zero points 0 (and one non-zero
 * case), bias and activations; the WebGPU W is the same bytes with the CPU tensor's parameters. */
void dc_gemm_q8(void) {
    if (!devt_has_prim("gemm_q8")) { /* int8 is CPU-only on Vulkan and CUDA (primitives.def): refused by name */
        pair W = pair_new(LITHE_I8, 2, (int64_t[]){2, 3}, NULL);
        pair A = pair_rand(2, (int64_t[]){1, 3}, -1, 1), Y = pair_new(LITHE_F32, 2, (int64_t[]){1, 2}, NULL);
        lithe_status st = lithe__op_gemm_q8(dev, A.v, W.v, NULL, NULL, NULL, Y.v);
        CHECK(st == LITHE_ERR_UNSUPPORTED && strstr(lithe_last_error(), "gemm_q8"), "gemm_q8 on %s: got %s: %s",
              devt_name, lithe_status_str(st), lithe_last_error());
        pair_free(W), pair_free(A), pair_free(Y);
        return;
    }
    static const int64_t mnk[][3] = {{1, 1, 1}, {3, 5, 7}, {33, 17, 64}, {50, 48, 20}, {7, 130, 300}};
    char w[128];
    for (size_t c = 0; c < sizeof mnk / sizeof mnk[0]; c++) {
        int64_t M = mnk[c][0], N = mnk[c][1], K = mnk[c][2];
        for (int v = 0; v < 3; v++) {
            int8_t *q = malloc((size_t)(N * K));
            for (int64_t i = 0; i < N * K; i++) q[i] = (int8_t)((int)(uni() * 255) - 127);
            float *sc = malloc(sizeof(float) * (size_t)N);
            int32_t *zp = calloc((size_t)N, sizeof(int32_t));
            for (int64_t i = 0; i < N; i++) sc[i] = (float)(0.001 + 0.02 * uni()), zp[i] = v == 2 ? (int32_t)(i % 5) - 2 : 0;
            int64_t ws[2] = {N, K}, nq = v == 1 ? 1 : N;
            /* W on the CPU with its parameters, then moved: lithe_tensor_to_backend carries them */
            pair W = {NULL, NULL};
            OK(lithe_tensor_from_data(LITHE_I8, 2, ws, q, &W.c));
            free(q);
            OK(lithe_tensor_set_quant_params(W.c, v == 1 ? -1 : 0, nq, sc, zp));
            OK(lithe_tensor_to_backend(W.c, dev, &W.v));
            free(sc);
            free(zp);
            pair A = pair_rand(2, (int64_t[]){M, K}, -1, 1), b = pair_rand(1, &N, -1, 1),
                 Y = pair_new(LITHE_F32, 2, (int64_t[]){M, N}, NULL), Z = pair_new(LITHE_F32, 2, (int64_t[]){M, N}, NULL);
            lithe__act relu = {.kind = LITHE__ACT_RELU}, gelu = {.kind = LITHE__ACT_GELU};
            const lithe__act *acts[3] = {NULL, &relu, &gelu};
            double tol = 2e-6 * (double)K + 1e-6;
            /* The CPU side is gemm_q8's exact value, the float GEMM on W decoded (the primitive's
             * fallback): the WGSL kernel dequantizes W and keeps A in float32, while the CPU's int8
             * kernels (AVX2, NEON, and SIMD128 in this module) quantize A's rows to 7-bit codes and
             * differ from it by that rounding (tests/test_q8_ukernels.c checks those kernels). */
            lithe_tensor *Wf = NULL;
            OK(lithe__dequantize(W.c, &Wf));
            lithe_status st = lithe__op_gemm_bias_act(cpu, false, true, A.c, Wf, v ? b.c : NULL, acts[v], v ? Z.c : NULL, Y.c);
            lithe_tensor_release(Wf);
            BOTH(st, lithe__op_gemm_q8(dev, A.v, W.v, v ? b.v : NULL, acts[v], v ? Z.v : NULL, Y.v));
            snprintf(w, sizeof w, "gemm_q8 Y %lldx%lldx%lld case %d", (long long)M, (long long)N, (long long)K, v);
            expect_pair(w, Y, tol, 1e-5);
            if (v) {
                snprintf(w, sizeof w, "gemm_q8 Z %lldx%lldx%lld case %d", (long long)M, (long long)N, (long long)K, v);
                expect_pair(w, Z, tol, 1e-5);
            }
            pair_free(W), pair_free(A), pair_free(b), pair_free(Y), pair_free(Z);
        }
    }
    /* an int8 tensor without quantization parameters: refused with a clear error */
    pair W = pair_new(LITHE_I8, 2, (int64_t[]){2, 3}, NULL);
    pair A = pair_rand(2, (int64_t[]){1, 3}, -1, 1), Y = pair_new(LITHE_F32, 2, (int64_t[]){1, 2}, NULL);
    lithe_status st = lithe__op_gemm_q8(dev, A.v, W.v, NULL, NULL, NULL, Y.v);
    if (st != LITHE_ERR_DTYPE || !strstr(lithe_last_error(), "quantization"))
        FAIL("gemm_q8 without quantization parameters: got %s: %s", lithe_status_str(st), lithe_last_error());
    pair_free(W), pair_free(A), pair_free(Y);
}
