/* The CPU backend's GEMM entries (backend.h): gemm, gemm_batched, gemm_bias_act and the prepared
 * weights' gemm on float32 or compact weights (gemm/gemm.c, gemm_compact.c), and the int8 entries
 * gemm_q8 / gemm_q8x (gemm/qgemm.c) with the weight row sums and packed panels they keep with W's
 * quantization parameters. cpu_backend.c's table points at them (kernels.h declares them). */
#include "kernels.h"
#include "simd/simd.h"
#include "gemm/gemm.h"
#include "gemm/qgemm.h"

#define F(t) lithe__f32(t)

lithe_status lithe__cpu_gemm(lithe_backend *be, bool tA, bool tB, float alpha, const lithe_tensor *A,
                             const lithe_tensor *B, float beta, lithe_tensor *C) {
    (void)be;
    int64_t M = C->shape[0], N = C->shape[1], K = tA ? A->shape[0] : A->shape[1];
    if (B->dtype != LITHE_F32) { /* compact weights: decoded while packed (gemm_compact.c) */
        if (!lithe__sgemm_compact(true, tA, tB, M, N, K, alpha, F(A), A->strides[0], B, beta, F(C), C->strides[0], NULL))
            return lithe__oom("gemm with compact weights", (size_t)K * (size_t)N * sizeof(float));
        return LITHE_OK;
    }
    if (!lithe__sgemm(NULL, true, tA, tB, M, N, K, alpha, F(A), A->strides[0], F(B), B->strides[0], beta, F(C),
                      C->strides[0], NULL))
        return lithe__oom("gemm packing workspace", (size_t)K * 4096 * sizeof(float));
    return LITHE_OK;
}

#ifndef LITHE_IMPORTERS_SEPARATE /* (the npm one-thread cores: gemm.c's lithe__sgemm_batched) */
/* backend.h's gemm_batched: one lithe__sgemm_batched */
lithe_status lithe__cpu_gemm_batched(lithe_backend *be, bool tA, bool tB, int64_t P, float alpha, const lithe_tensor *A,
                                     int64_t sa, const lithe_tensor *B, int64_t sb, float beta0, float beta,
                                     lithe_tensor *C, int64_t sc) {
    (void)be;
    int64_t M = C->shape[0], N = C->shape[1], K = tA ? A->shape[0] : A->shape[1];
    if (A->dtype != LITHE_F32 || B->dtype != LITHE_F32 || C->dtype != LITHE_F32)
        return lithe__fail(LITHE_ERR_DTYPE, "gemm_batched: float32 operands only");
    if (!lithe__sgemm_batched(NULL, true, tA, tB, P, M, N, K, alpha, F(A), A->strides[0], sa, F(B), B->strides[0], sb,
                              beta0, beta, F(C), C->strides[0], sc))
        return lithe__oom("gemm packing workspace", (size_t)K * 4096 * sizeof(float));
    return LITHE_OK;
}
#endif

lithe_status lithe__cpu_gemm_bias_act(lithe_backend *be, bool tA, bool tB, const lithe_tensor *A,
                                      const lithe_tensor *B, const lithe_tensor *b, const lithe__act *a,
                                      lithe_tensor *Z, lithe_tensor *Y) {
    (void)be;
    int64_t M = Y->shape[0], N = Y->shape[1], K = tA ? A->shape[0] : A->shape[1];
    lithe__sgemm_epilogue e = {.bias = b ? F(b) : NULL, .act = a, .act_fn = lithe__simd()->act, .Z = Z ? F(Z) : NULL,
                               .ldz = Z ? Z->strides[0] : 0};
    if (B->dtype != LITHE_F32) {
        if (!lithe__sgemm_compact(true, tA, tB, M, N, K, 1.0f, F(A), A->strides[0], B, 0.0f, F(Y), Y->strides[0], &e))
            return lithe__oom("gemm with compact weights", (size_t)K * (size_t)N * sizeof(float));
        return LITHE_OK;
    }
    if (!lithe__sgemm(NULL, true, tA, tB, M, N, K, 1.0f, F(A), A->strides[0], F(B), B->strides[0], 0.0f, F(Y),
                      Y->strides[0], &e))
        return lithe__oom("gemm packing workspace", (size_t)K * 4096 * sizeof(float));
    return LITHE_OK;
}

/* gemm_q8 with A static codes where no int8 kernel takes them: A decoded, the float GEMM */
static lithe_status gemm_q8_decoded(lithe_backend *be, const lithe_tensor *A, const lithe_tensor *W, const lithe_tensor *b,
                                    const lithe__act *a, lithe_tensor *Z, lithe_tensor *Y) {
    lithe_tensor *Af = NULL;
    LITHE__TRY(lithe__dequantize(A, &Af));
    lithe_status s = lithe__cpu_gemm_bias_act(be, false, true, Af, W, b, a, Z, Y);
    lithe_tensor_release(Af);
    return s;
}

#if !(defined(__wasm__) && !defined(__wasm_simd128__)) /* the scalar wasm core has no int8 kernel (qgemm.c) */
/* W's row sums and pairs_fit, cached with its quantization parameters (lithe__quant); false when W is
 * not symmetric int8 (the float path) */
static bool q8_weight(const lithe_tensor *W, int64_t N, int64_t K, bool pairs, lithe_status *st) {
    lithe__quant *q = W->storage->quant;
    bool sym = W->dtype == LITHE_I8 && q && lithe_tensor_is_contiguous(W) && W->offset == 0;
    for (int64_t c = 0; sym && c < q->n; c++) sym = q->zero[c] == 0;
    *st = LITHE_OK;
    if (sym && (!q->wsum || q->wsum_n != N || q->wsum_version != W->storage->version)) { /* W's row sums, once */
        int32_t *ws = q->wsum_n == N ? q->wsum : lithe__realloc(q->wsum, (size_t)N * sizeof *ws);
        if (!ws) {
            *st = lithe__oom("int8 gemm row sums", (size_t)N * sizeof *ws);
            return false;
        }
        q->wsum = ws;
        q->wsum_n = N;
        q->wsum_ok = lithe__q8_row_sums(N, K, (const int8_t *)lithe__tdata(W), K, ws);
        q->wsum_version = W->storage->version;
        q->wsum_pairs = -1; /* lithe__q8_pairs_fit: on the first static call */
    }
#if defined(__x86_64__) || defined(_M_X64)
    if (sym && q->wsum_ok && pairs && q->wsum_pairs < 0)
        q->wsum_pairs = (int8_t)lithe__q8_pairs_fit(N, K, (const int8_t *)lithe__tdata(W), K);
#else
    (void)pairs;
#endif
    return sym && q->wsum_ok;
}

/* W packed for the packed tile of the kernel the product takes (static codes: the relaxed-SIMD
 * build's SIMD128 one, qgemm.c's q8_static), kept with W's quantization parameters (NULL where
 * the kernel has none, or out of memory: the driver packs per call, or fails) */
static const int8_t *q8_wpack(const lithe_tensor *W, int64_t N, int64_t K, bool codes) {
#if defined(LITHE__Q8_PACKED)
    const lithe__q8_kernel *k = lithe__q8_kernel_best();
#if defined(__wasm_relaxed_simd__)
    if (codes) k = lithe__q8_kernel_wasmsimd_u8();
#else
    (void)codes;
#endif
    lithe__quant *q = W->storage->quant;
    if (!k || !k->ptile) return NULL;
    if (q->wpack && q->wpack_n == N * K && q->wpack_version == W->storage->version) return q->wpack;
    int8_t *p = lithe__malloc(lithe__q8_pack_size(N, K));
    if (!p) return NULL;
    lithe__q8_pack(N, K, (const int8_t *)lithe__tdata(W), K, p);
    lithe__free(q->wpack);
    q->wpack = p;
    q->wpack_n = N * K;
    q->wpack_version = W->storage->version;
    return p;
#else
    (void)W, (void)N, (void)K, (void)codes;
    return NULL;
#endif
}
#endif

lithe_status lithe__cpu_gemm_q8(lithe_backend *be, const lithe_tensor *A, const lithe_tensor *W, const lithe_tensor *b,
                                const lithe__act *a, lithe_tensor *Z, lithe_tensor *Y) {
    /* A float32 (dynamic: quantized per row here), or int8 / uint8 codes with one scale and zero
     * point (static: calibrated ahead, lithe_model_quantize_static) */
    const lithe__quant *qa = A->dtype != LITHE_F32 ? A->storage->quant : NULL;
    if (A->dtype != LITHE_F32 && (!qa || qa->n != 1 || (A->dtype != LITHE_I8 && A->dtype != LITHE_U8)))
        return lithe__fail(LITHE_ERR_DTYPE, "gemm_q8: A must be float32, or int8 / uint8 codes with one scale and zero point");
#if defined(__wasm__) && !defined(__wasm_simd128__) /* no int8 kernel there (qgemm.c): the float GEMM, W decoded while packed */
    if (qa) return gemm_q8_decoded(be, A, W, b, a, Z, Y);
    return lithe__cpu_gemm_bias_act(be, false, true, A, W, b, a, Z, Y);
#else
    int64_t M = Y->shape[0], N = Y->shape[1], K = A->shape[1];
    lithe__quant *q = W->storage->quant;
    lithe_status st;
    const bool sym = q8_weight(W, N, K, qa != NULL, &st);
    if (st != LITHE_OK) return st;
    int rc = !sym ? 1
             : qa ? lithe__q8_gemm_static(NULL, true, M, N, K, (const uint8_t *)lithe__tdata(A), A->dtype == LITHE_I8,
                                          A->strides[0], qa->scale[0], qa->zero[0], (const int8_t *)lithe__tdata(W), K,
                                          q->wsum, q8_wpack(W, N, K, true), q->wsum_pairs, q->scale, q->n, b ? F(b) : NULL, a,
                                          lithe__simd()->act, Z ? F(Z) : NULL, F(Y), Y->strides[0])
                  : lithe__q8_gemm(NULL, true, M, N, K, F(A), A->strides[0], (const int8_t *)lithe__tdata(W), K, q->wsum,
                                   q8_wpack(W, N, K, false), q->scale, q->n, b ? F(b) : NULL, a, lithe__simd()->act,
                                   Z ? F(Z) : NULL, F(Y), Y->strides[0]);
    if (rc < 0) return lithe__oom("int8 gemm workspace", (size_t)(M * (K + 32) + 8 * M));
    if (rc == 0) return LITHE_OK;
    if (qa) return gemm_q8_decoded(be, A, W, b, a, Z, Y);
    return lithe__cpu_gemm_bias_act(be, false, true, A, W, b, a, Z, Y); /* W decoded while packed */
#endif
}

/* backend.h's gemm_q8x: X float32 quantized by the int8 GEMM's own pass (lithe__q8_gemm_static_f32) */
lithe_status lithe__cpu_gemm_q8x(lithe_backend *be, const lithe_tensor *X, float xs, int32_t xz, int32_t xmin,
                                 int32_t xmax, const lithe_tensor *W, const lithe_tensor *b, const lithe__act *a,
                                 lithe_tensor *Y, bool *done) {
    (void)be;
    *done = false;
#if defined(__wasm__) && !defined(__wasm_simd128__)
    (void)X, (void)xs, (void)xz, (void)xmin, (void)xmax, (void)W, (void)b, (void)a, (void)Y;
    return LITHE_OK;
#else
    if (X->dtype != LITHE_F32 || X->ndim != 2 || X->strides[1] != 1 || W->ndim != 2 || Y->ndim != 2 ||
        !lithe_tensor_is_contiguous(Y) || X->shape[1] != W->shape[1] || Y->shape[0] != X->shape[0] ||
        Y->shape[1] != W->shape[0])
        return LITHE_OK;
    const int64_t M = Y->shape[0], N = Y->shape[1], K = X->shape[1];
    lithe_status st;
    if (!q8_weight(W, N, K, true, &st)) return st;
    const lithe__quant *q = W->storage->quant;
    int rc = lithe__q8_gemm_static_f32(NULL, true, M, N, K, F(X), X->strides[0], xs, xz, xmin, xmax, xmin < 0,
                                       (const int8_t *)lithe__tdata(W), K, q->wsum, q8_wpack(W, N, K, true), q->wsum_pairs,
                                       q->scale, q->n, b ? F(b) : NULL, a, lithe__simd()->act, NULL, F(Y), Y->strides[0]);
    if (rc < 0) return lithe__oom("int8 gemm workspace", (size_t)(M * (K + 64) + 8 * M));
    *done = rc == 0;
    return LITHE_OK;
#endif
}

/* Weights prepared for inference: op(B) packed once into the GEMM driver's panels (gemm.h), for
 * the kernel this machine runs. */
lithe_status lithe__cpu_prepare_b(lithe_backend *be, bool tB, const lithe_tensor *B, void **out, size_t *bytes) {
    (void)be;
    int64_t K = tB ? B->shape[1] : B->shape[0], N = tB ? B->shape[0] : B->shape[1];
    lithe__sgemm_packed_b *p = lithe__sgemm_pack_b(NULL, tB, K, N, F(B), B->strides[0]);
    if (!p) return lithe__oom("packed weights", (size_t)K * (size_t)N * sizeof(float));
    *out = p;
    *bytes = p->floats * sizeof(float) + sizeof *p;
    return LITHE_OK;
}
void lithe__cpu_prepared_free(lithe_backend *be, void *p) {
    (void)be;
    lithe__sgemm_packed_b_free(p);
}
lithe_status lithe__cpu_gemm_prepared(lithe_backend *be, bool tA, bool tB, float alpha, const lithe_tensor *A,
                                      const lithe_tensor *B, const void *P, float beta, lithe_tensor *C,
                                      const lithe_tensor *b, const lithe__act *a, lithe_tensor *Z) {
    (void)be;
    int64_t M = C->shape[0], N = C->shape[1], K = tA ? A->shape[0] : A->shape[1];
    lithe__sgemm_epilogue e = {.bias = b ? F(b) : NULL, .act = a, .act_fn = lithe__simd()->act, .Z = Z ? F(Z) : NULL,
                               .ldz = Z ? Z->strides[0] : 0};
    if (!lithe__sgemm_prepacked(NULL, true, tA, tB, M, N, K, alpha, F(A), A->strides[0], F(B), B->strides[0], P, beta,
                                F(C), C->strides[0], b || a || Z ? &e : NULL))
        return lithe__oom("gemm packing workspace", (size_t)K * 4096 * sizeof(float));
    return LITHE_OK;
}
