/* Compact weights (float16, bfloat16, quantized int8 / uint8: core/quant.c) as the GEMM's op(B):
 * decoded to float32 while they are packed into the driver's panels (gemm.h's B layout), one row
 * of B at a time, so the model keeps only the compact form; the panels are the call's workspace
 * and are freed after it. A call packs op(B) a block of columns at a time (at most
 * LITHE__COMPACT_PANEL_FLOATS floats, 256 KiB, unless one NR-wide sliver is more): a float32 copy
 * of the whole weight per call (the 784x512 MLP layer: 1.5 MiB) was the peak of a LoRA step on a
 * compact frozen base (issue 26; bench/memory). Splitting C by columns leaves every element's sum
 * over K as it was: the same bits. float16 rows decode with F16C where the CPU has it (the same bits as the
 * scalar decoder: the conversion is exact). */
#include "gemm_internal.h"

#include "../../../core/internal.h"
#include "../kernels.h"

#include <string.h>

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
#define HAVE_F16C_PATH 1
/* F16C (CPUID.1:ECX bit 29) with the OS saving YMM state (AVX2's check covers that; every AVX2
 * CPU has F16C) */
static int has_f16c(void) {
    unsigned a, b, c, d;
    return __builtin_cpu_supports("avx2") && __get_cpuid(1, &a, &b, &c, &d) && (c >> 29 & 1u);
}
__attribute__((target("f16c,avx"))) static void f16_row_f16c(const uint16_t *src, int64_t K, float *dst) {
    int64_t k = 0;
    for (; k + 8 <= K; k += 8) _mm256_storeu_ps(dst + k, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(src + k))));
    for (; k < K; k++) {
        __m128 v = _mm_cvtph_ps(_mm_cvtsi32_si128(src[k]));
        dst[k] = _mm_cvtss_f32(v);
    }
}
#endif

/* Row `row` (K elements from element offset off) of compact B, as floats. */
static void decode(const lithe_tensor *B, int64_t row, int64_t off, int64_t K, float *dst) {
#ifdef HAVE_F16C_PATH
    static int f16c = -1;
    if (f16c < 0) f16c = has_f16c();
    if (B->dtype == LITHE_F16 && f16c) {
        f16_row_f16c((const uint16_t *)B->storage->data + B->offset + off, K, dst);
        return;
    }
#endif
    if (B->dtype == LITHE_F16 || B->dtype == LITHE_BF16) /* exact: the cast kernel's decoding */
        lithe_cast__scalar(LITHE_F32, dst, B->dtype, (const uint16_t *)B->storage->data + B->offset + off, K);
    else lithe__decode_row(B, row, off, K, dst);
}

/* op(B)'s columns j0 .. j0 + N - 1 packed (a block of them: lithe__sgemm_compact). */
static lithe__sgemm_packed_b *pack_cols(const lithe__sgemm_kernel *k, bool tB, int64_t K, int64_t j0, int64_t N,
                                        const lithe_tensor *B) {
    if (K <= 0 || N <= 0) return NULL;
    const size_t NR = (size_t)k->nr, KC = (size_t)k->kc, Npad = (size_t)(N + (int64_t)NR - 1) / NR * NR;
    size_t floats;
    if (!lithe__mul_size((size_t)K, Npad, &floats) || floats > SIZE_MAX / sizeof(float)) return NULL;
    /* tB: B's rows j0.. are op(B)'s columns, each K long; else each of B's K rows gives N elements
     * from column j0 */
    const int64_t rows = tB ? N : K, len = tB ? K : N, ld = B->strides[0], r0 = tB ? j0 : 0, c0 = tB ? 0 : j0;
    lithe__sgemm_packed_b *p = lithe__malloc(sizeof *p);
    float *data = lithe__aligned_alloc(floats * sizeof(float)), *row = lithe__malloc((size_t)len * sizeof(float));
    if (!p || !data || !row) {
        lithe__free(p);
        lithe__aligned_free(data);
        lithe__free(row);
        return NULL;
    }
    memset(data, 0, floats * sizeof(float)); /* the lanes past N */
    *p = (lithe__sgemm_packed_b){.nr = k->nr, .kc = k->kc, .transB = tB, .K = K, .N = N, .floats = floats, .data = data};
    for (int64_t r = 0; r < rows; r++) {
        decode(B, r0 + r, (r0 + r) * ld + c0, len, row);
        if (tB) { /* B row r is op(B)'s column j = r: lane j % NR of sliver j / NR, every K step */
            const size_t jr = (size_t)r / NR * NR, l = (size_t)r % NR;
            for (int64_t pc = 0; pc < K; pc += (int64_t)KC) {
                size_t kb = (size_t)(K - pc < (int64_t)KC ? K - pc : (int64_t)KC);
                float *d = data + (size_t)pc * Npad + jr * kb + l;
                for (size_t kk = 0; kk < kb; kk++) d[kk * NR] = row[pc + (int64_t)kk];
            }
        } else { /* B row r is op(B)'s step k = r: its N floats across the slivers */
            const int64_t pc = r / (int64_t)KC * (int64_t)KC;
            size_t kb = (size_t)(K - pc < (int64_t)KC ? K - pc : (int64_t)KC), kk = (size_t)(r - pc);
            float *panel = data + (size_t)pc * Npad;
            for (size_t jr = 0; jr < (size_t)N; jr += NR) {
                size_t lanes = (size_t)N - jr < NR ? (size_t)N - jr : NR;
                memcpy(panel + jr * kb + kk * NR, row + jr, lanes * sizeof(float));
            }
        }
    }
    lithe__free(row);
    return p;
}

lithe__sgemm_packed_b *lithe__sgemm_pack_b_compact(const lithe__sgemm_kernel *k, bool tB, int64_t K, int64_t N,
                                                   const lithe_tensor *B) {
    return pack_cols(k, tB, K, 0, N, B);
}

/* A few rows of A against op(B) = Bᵀ (the dense layers' forward at batch <= 4): B's rows decoded
 * CHUNK at a time into an L2-sized buffer, each chunk a float product (the GEMV at one row) over
 * those columns of C; the whole W is never decoded at once, and nothing is packed. */
enum { CHUNK = 32 };
static bool few_rows(bool use_threads, bool tA, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                     int64_t lda, const lithe_tensor *B, float beta, float *C, int64_t ldc,
                     const lithe__sgemm_epilogue *epi) {
    float *buf = lithe__malloc((size_t)CHUNK * (size_t)K * sizeof(float));
    if (!buf) return false;
    bool ok = true;
    for (int64_t j0 = 0; ok && j0 < N; j0 += CHUNK) {
        int64_t nb = N - j0 < CHUNK ? N - j0 : CHUNK;
        for (int64_t r = 0; r < nb; r++) decode(B, j0 + r, (j0 + r) * B->strides[0], K, buf + r * K);
        lithe__sgemm_epilogue e;
        if (epi) {
            e = *epi;
            if (e.bias) e.bias += j0;
            if (e.Z) e.Z += j0;
        }
        ok = lithe__sgemm(NULL, use_threads, tA, true, M, nb, K, alpha, A, lda, buf, K, beta, C + j0, ldc, epi ? &e : NULL);
    }
    lithe__free(buf);
    return ok;
}

bool lithe__sgemm_compact(bool use_threads, bool tA, bool tB, int64_t M, int64_t N, int64_t K, float alpha,
                          const float *A, int64_t lda, const lithe_tensor *B, float beta, float *C, int64_t ldc,
                          const lithe__sgemm_epilogue *epi) {
    if (M <= 0 || N <= 0) return true;
    if (tB && M <= 4 && K > 0 && (!epi || (!epi->bias_row && !epi->res)))
        return few_rows(use_threads, tA, M, N, K, alpha, A, lda, B, beta, C, ldc, epi);
    const lithe__sgemm_kernel *k = lithe__sgemm_kernel_best();
    const lithe__sgemm_kernel *kr = k->for_rows ? k->for_rows(M) : k;
    if (K <= 0 || (M == 1 && !kr->urow)) { /* the GEMV reads B where it lies: decode it whole */
        const int64_t rows = tB ? N : K, len = tB ? K : N;
        float *f = lithe__malloc((size_t)(rows * len > 0 ? rows * len : 1) * sizeof(float));
        if (!f) return false;
        for (int64_t r = 0; r < rows; r++) decode(B, r, r * B->strides[0], len, f + r * len);
        bool ok = lithe__sgemm(k, use_threads, tA, tB, M, N, K, alpha, A, lda, f, len, beta, C, ldc, epi);
        lithe__free(f);
        return ok;
    }
    /* columns per block: the panel budget over K, whole slivers, at least one */
    const int64_t NR = kr->nr, per = (int64_t)(LITHE__COMPACT_PANEL_FLOATS / (size_t)K) / NR * NR;
    const int64_t cw = per < NR ? NR : per;
    bool ok = true;
    for (int64_t j0 = 0; ok && j0 < N; j0 += cw) {
        int64_t nb = N - j0 < cw ? N - j0 : cw;
        lithe__sgemm_packed_b *P = pack_cols(kr, tB, K, j0, nb, B);
        if (!P) return false;
        lithe__sgemm_epilogue e;
        if (epi) { /* the block's columns of bias, Z and the residual (bias_row is per row: as it is) */
            e = *epi;
            if (e.bias) e.bias += j0;
            if (e.Z) e.Z += j0;
            if (e.res) e.res += j0;
        }
        ok = lithe__sgemm_prepacked(k, use_threads, tA, tB, M, nb, K, alpha, A, lda, NULL, 0, P, beta, C + j0, ldc,
                                    epi ? &e : NULL);
        lithe__sgemm_packed_b_free(P);
    }
    return ok;
}
