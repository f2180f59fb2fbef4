/* pointwise.h's convolution with AVX2 + FMA (compiled with -mavx2 -mfma on x86-64 only; chosen at
 * run time): tiles of 6 filters x 16 pixels (twelve ymm accumulators, two X registers, one
 * broadcast of W), 6 x 8 for a plane's last 1..8 pixels; X's last partial vector read and Y's
 * written with masks. Each element's operations are the twin's (lithe__conv_pw_ref), so its bits. */
#include "pointwise.h"
#include "../gemm/gemm.h"

#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

typedef struct clampv {
    int cl;
    __m256 lo, hi;
} clampv;

/* gemm_avx2.c's clamp (the act kernel's bits): maxps / minps return their second operand when
 * either is NaN or both are zeros. */
static inline __attribute__((always_inline)) __m256 clamp_v(__m256 t, clampv cv) {
    if (cv.cl == LITHE__SGEMM_CLAMP_RELU) return _mm256_add_ps(_mm256_max_ps(_mm256_setzero_ps(), t), _mm256_setzero_ps());
    if (cv.cl == LITHE__SGEMM_CLAMP_HSWISH) {
        __m256 six = _mm256_set1_ps(6.0f), u = _mm256_add_ps(t, _mm256_set1_ps(3.0f));
        return _mm256_mul_ps(t, _mm256_div_ps(_mm256_max_ps(_mm256_setzero_ps(), _mm256_min_ps(six, u)), six));
    }
    return _mm256_max_ps(cv.lo, _mm256_min_ps(cv.hi, _mm256_add_ps(t, _mm256_setzero_ps())));
}

static inline __attribute__((always_inline)) __m256 ld(const float *p, bool full, __m256i mask) {
    return full ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, mask);
}

/* One output vector: bias, clamp, residual, store (masked where not full). */
static inline __attribute__((always_inline)) void st(__m256 t, float *y, const float *bm, const float *r, bool first,
                                                     clampv cv, bool full, __m256i mask) {
    if (bm) t = _mm256_add_ps(t, _mm256_broadcast_ss(bm));
    if (cv.cl) t = clamp_v(t, cv);
    if (r) {
        __m256 rv = ld(r, full, mask);
        t = first ? _mm256_add_ps(rv, t) : _mm256_add_ps(t, rv);
    }
    if (full) _mm256_storeu_ps(y, t);
    else _mm256_maskstore_ps(y, mask, t);
}

/* A tile of mr <= 6 filters from m and NV vectors of pixels from p (the last one full or masked):
 * rows past mr read filter m again (computed, never stored). */
static inline __attribute__((always_inline)) void tile(const lithe__conv_pw *c, int NV, bool full, __m256i mask,
                                                       int64_t m, size_t mr, int64_t p, clampv cv) {
    const int64_t K = c->K, P = c->P;
    const float *w = c->W + m * K, *x = c->X + p;
    const int64_t o1 = mr > 1 ? K : 0, o2 = mr > 2 ? 2 * K : 0, o3 = mr > 3 ? 3 * K : 0, o4 = mr > 4 ? 4 * K : 0,
                  o5 = mr > 5 ? 5 * K : 0;
    const bool f0 = NV == 2 || full; /* the first vector is whole unless it is the only, partial one */
    __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00,
           c40 = c00, c41 = c00, c50 = c00, c51 = c00;
    for (int64_t k = 0; k < K; k++, x += P, w++) {
        __m256 b0 = ld(x, f0, mask), b1 = NV == 2 ? ld(x + 8, full, mask) : b0, a;
#define STEP(i, o)                                                                                                \
    a = _mm256_broadcast_ss(w + o);                                                                               \
    c##i##0 = _mm256_fmadd_ps(a, b0, c##i##0);                                                                    \
    if (NV == 2) c##i##1 = _mm256_fmadd_ps(a, b1, c##i##1);
        STEP(0, 0) STEP(1, o1) STEP(2, o2) STEP(3, o3) STEP(4, o4) STEP(5, o5)
#undef STEP
    }
    const float *b = c->b ? c->b + m : NULL;
#define ROW(i)                                                                                                    \
    if (mr > i) {                                                                                                 \
        int64_t at = (m + i) * P + p;                                                                             \
        const float *r = c->R ? c->R + at : NULL;                                                                 \
        st(c##i##0, c->Y + at, b ? b + i : NULL, r, c->res_first, cv, f0, mask);                                 \
        if (NV == 2) st(c##i##1, c->Y + at + 8, b ? b + i : NULL, r ? r + 8 : NULL, c->res_first, cv, full, mask); \
    }
    ROW(0) ROW(1) ROW(2) ROW(3) ROW(4) ROW(5)
#undef ROW
}

/* Every filter over the pixels [p, p + n), n <= 16: the tile shapes picked once per column. */
static void column(const lithe__conv_pw *c, int64_t p, int64_t n, clampv cv) {
    const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(n & 7)), lanes); /* the last vector's lanes */
    for (int64_t m = 0; m < c->M; m += 6) {
        size_t mr = (size_t)(c->M - m < 6 ? c->M - m : 6);
        if (n == 16) tile(c, 2, true, mask, m, mr, p, cv);
        else if (n > 8) tile(c, 2, false, mask, m, mr, p, cv);
        else if (n == 8) tile(c, 1, true, mask, m, mr, p, cv);
        else tile(c, 1, false, mask, m, mr, p, cv);
    }
}

void lithe__conv_pw_avx2(const lithe__conv_pw *c, int64_t p0, int64_t p1) {
    clampv cv = {c->clamp, _mm256_set1_ps(c->lo), _mm256_set1_ps(c->hi)};
    for (int64_t p = p0; p < p1; p += 16) column(c, p, p1 - p < 16 ? p1 - p : 16, cv);
}

#elif defined(__x86_64__)
#error "pointwise_avx2.c must be compiled with -mavx2 -mfma"
#endif
