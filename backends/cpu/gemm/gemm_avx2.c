/* AVX2 + FMA SGEMM microkernel (compiled with -mavx2 -mfma on x86-64 only; chosen at run time):
 * 6 x 16, twelve ymm accumulators, two B registers and one broadcast of 16. Packing and GEMV
 * are the driver's portable loops. */
#include "gemm.h"

#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

#define MR 6
#define NR 16

static inline __attribute__((always_inline)) void store_row(__m256 acc, float *c, const float *bias, __m256 valpha,
                                                            float beta, size_t n) {
    __m256 t = _mm256_mul_ps(valpha, acc);
    if (n >= 8) {
        if (beta != 0.0f) t = _mm256_fmadd_ps(_mm256_set1_ps(beta), _mm256_loadu_ps(c), t);
        if (bias) t = _mm256_add_ps(t, _mm256_loadu_ps(bias));
        _mm256_storeu_ps(c, t);
    } else {
        /* a partial row: the same operations on a copy */
        float cb[8] = {0}, bb[8] = {0}, out[8];
        for (size_t j = 0; j < n; j++) cb[j] = c[j];
        if (bias)
            for (size_t j = 0; j < n; j++) bb[j] = bias[j];
        if (beta != 0.0f) t = _mm256_fmadd_ps(_mm256_set1_ps(beta), _mm256_loadu_ps(cb), t);
        if (bias) t = _mm256_add_ps(t, _mm256_loadu_ps(bb));
        _mm256_storeu_ps(out, t);
        for (size_t j = 0; j < n; j++) c[j] = out[j];
    }
}

static void lithe_f32_gemm_ukernel_6x16__avx2(size_t mr, size_t nr, size_t kc, const float *a, const float *b, float *c, size_t ldc,
                               const lithe__sgemm_ukparams *p) {
    __m256 c0[MR], c1[MR];
    for (int i = 0; i < MR; i++) c0[i] = c1[i] = _mm256_setzero_ps();
    for (size_t k = 0; k < kc; k++) {
        __m256 b0 = _mm256_load_ps(b), b1 = _mm256_load_ps(b + 8);
        for (int i = 0; i < MR; i++) {
            __m256 x = _mm256_broadcast_ss(a + i);
            c0[i] = _mm256_fmadd_ps(x, b0, c0[i]);
            c1[i] = _mm256_fmadd_ps(x, b1, c1[i]);
        }
        a += MR;
        b += NR;
    }
    __m256 va = _mm256_set1_ps(p->alpha);
    const float *bias = p->bias;
    for (int i = 0; i < MR; i++) {
        if ((size_t)i >= mr) break;
        float *ci = c + (size_t)i * ldc;
        store_row(c0[i], ci, bias, va, p->beta, nr);
        if (nr > 8) store_row(c1[i], ci + 8, bias ? bias + 8 : NULL, va, p->beta, nr - 8);
    }
}

static const lithe__sgemm_kernel kernel = {
    .isa = "avx2", .mr = MR, .nr = NR, .mc = 120, .kc = 256, .nc = 4096, .ukernel = lithe_f32_gemm_ukernel_6x16__avx2,
};

const lithe__sgemm_kernel *lithe__sgemm_kernel_avx2(void) {
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return NULL;
    return &kernel;
}

#elif defined(__x86_64__)
#error "gemm_avx2.c must be compiled with -mavx2 -mfma"
#endif
