/* The vector abstraction simd/elem.c and its kernel families (simd/elem/) are written against:
 * vf / vi of LITHE_SIMD_BYTES, loads and stores, and the vector maths (sqrt, exp, tanh, sigmoid, erf);
 * vsqrt's ISA branches live here (sum_squares' accumulators, the 3x3's max / min and the AVX-512 max pool keep
 * theirs in their family files). Included once per ISA by simd/elem.c only. */
#include "simd.h"

#include <math.h>
#include <string.h>

/* Every vector helper here is static inline: the psABI note about passing vectors wider than the
 * ISA's registers (the double accumulators) concerns calls across files, which never happen. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

#if !defined(LITHE_SIMD_ISA) || !defined(LITHE_SIMD_BYTES)
#error "compile simd/elem.c with LITHE_SIMD_ISA and LITHE_SIMD_BYTES (see CMakeLists.txt)"
#endif

#if defined(__SSE2__) || defined(__AVX__) || defined(__AVX512F__)
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#elif defined(__wasm_simd128__)
#include <wasm_simd128.h>
#endif

#define VB LITHE_SIMD_BYTES
#define VW (VB / 4)
typedef float vf __attribute__((vector_size(VB)));
typedef int32_t vi __attribute__((vector_size(VB)));

#define CAT3(a, b, c) a##b##c
#define XCAT3(a, b, c) CAT3(a, b, c)
#define K(name) XCAT3(lithe_f32_##name, __, LITHE_SIMD_ISA) /* K(add_row) -> lithe_f32_add_row__avx2 */
#define STR_(x) #x
#define STR(x) STR_(x)
#define TABLE XCAT3(lithe__simd_, , LITHE_SIMD_ISA)

static inline vf ld(const float *p) {
    vf v;
    memcpy(&v, p, sizeof v);
    return v;
}
static inline void st(float *p, vf v) { memcpy(p, &v, sizeof v); }
static inline vf ld_part(const float *p, int64_t n) {
    float t[VW] = {0};
    memcpy(t, p, (size_t)n * sizeof(float));
    return ld(t);
}
static inline void st_part(float *p, vf v, int64_t n) {
    float t[VW];
    st(t, v);
    memcpy(p, t, (size_t)n * sizeof(float));
}
static inline vf splat(float x) { return (vf){0} + x; }
static inline vi splati(int32_t x) { return (vi){0} + x; }
/* m ? a : b, m a lane mask (all ones / zeros) as comparisons give it */
static inline vf sel(vi m, vf a, vf b) { return (vf)((m & (vi)a) | (~m & (vi)b)); }
static inline vf vabs(vf x) { return (vf)((vi)x & splati(0x7fffffff)); }

static inline vf vsqrt(vf x) {
#if VB == 64 && defined(__AVX512F__)
    return (vf)_mm512_sqrt_ps((__m512)x);
#elif VB == 32 && defined(__AVX__)
    return (vf)_mm256_sqrt_ps((__m256)x);
#elif VB == 16 && defined(__SSE2__)
    return (vf)_mm_sqrt_ps((__m128)x);
#elif VB == 16 && defined(__aarch64__)
    float32x4_t t;
    memcpy(&t, &x, sizeof t);
    t = vsqrtq_f32(t);
    memcpy(&x, &t, sizeof t);
    return x;
#elif VB == 16 && defined(__wasm_simd128__)
    v128_t t;
    memcpy(&t, &x, sizeof t);
    t = wasm_f32x4_sqrt(t);
    memcpy(&x, &t, sizeof t);
    return x;
#else
    for (int i = 0; i < VW; i++) x[i] = sqrtf(x[i]);
    return x;
#endif
}

/* e^x: n = round(x / ln 2), r = x - n ln 2 (Cody-Waite, two parts), e^r by its degree-7 Taylor
 * polynomial on |r| <= ln 2 / 2 (truncation < 6e-9 relative), times 2^n as two exact powers of two
 * so that n from -150 to 128 stays in range. Within 2 ulp of expf for normal results (tests check
 * against exp in double); x > 88.7228 gives +inf, x < -103.97 gives 0, NaN stays NaN. */
static inline vf vexp(vf x) {
    const vf hi = splat(88.72283935546875f), lo = splat(-103.972084045410156f);
    vi over = x > hi, under = x < lo;
    vf xc = sel(over, hi, sel(under, lo, x));
    vf t = xc * 1.44269504088896341f + 12582912.0f; /* 1.5 * 2^23: round to the nearest integer */
    vf n = t - 12582912.0f;
    vi ni = (vi)t - splati(0x4B400000);
    vf r = xc - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    vf p = splat(1.0f / 5040.0f);
    p = p * r + (1.0f / 720.0f);
    p = p * r + (1.0f / 120.0f);
    p = p * r + (1.0f / 24.0f);
    p = p * r + (1.0f / 6.0f);
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    vi n1 = ni >> 1, n2 = ni - n1;
    vf s1 = (vf)((n1 + 127) << 23), s2 = (vf)((n2 + 127) << 23);
    vf y = (p * s1) * s2;
    y = sel(over, splat(INFINITY), y);
    return sel(under, splat(0.0f), y);
}

/* tanh: an odd Taylor polynomial below 0.3 (truncation < 1e-8 relative), else
 * 1 - 2 / (e^(2|x|) + 1) with the sign put back. */
static inline vf vtanh(vf x) {
    vf ax = vabs(x);
    vf x2 = ax * ax;
    vf p = splat(-1382.0f / 155925.0f);
    p = p * x2 + (62.0f / 2835.0f);
    p = p * x2 + (-17.0f / 315.0f);
    p = p * x2 + (2.0f / 15.0f);
    p = p * x2 + (-1.0f / 3.0f);
    vf small = ax + ax * (x2 * p);
    vf big = 1.0f - 2.0f / (vexp(ax + ax) + 1.0f);
    vf t = sel(ax < 0.3f, small, big);
    return (vf)((vi)t | ((vi)x & splati((int32_t)0x80000000u)));
}

/* x in every lane, its sign kept (splat adds it to +0, which turns -0 into +0) */
static inline vf bcast(float x) {
    int32_t b;
    memcpy(&b, &x, sizeof b);
    return (vf)splati(b);
}

/* A clipped element gets the bound's bits (a -0 bound stays -0, as in the twin). */
static inline vf vclip(vf x, float lo, float hi) { return sel(x < lo, bcast(lo), sel(x > hi, bcast(hi), x)); }

/* Thinc's sigmoid: the input clipped to [-20, 20] first. */
static inline vf vsigmoid(vf x) {
    x = vclip(x, -20.0f, 20.0f);
    return 1.0f / (1.0f + vexp(-x));
}

/* Thinc's erf (Abramowitz & Stegun 7.1.26), as scalar/act.c writes it. */
static inline vf verf_thinc(vf x) {
    vf sign = sel(x > 0.0f, splat(1.0f), sel(x < 0.0f, splat(-1.0f), splat(0.0f)));
    vf ax = vabs(x);
    vf t = 1.0f / (1.0f + 0.3275911f * ax);
    vf y = 1.0f - (((((1.061405429f * t + -1.453152027f) * t) + 1.421413741f) * t + -0.284496736f) * t +
                   0.254829592f) * t * vexp(-ax * ax);
    return sign * y;
}
static inline vf vgauss_cdf(vf x) { return 0.5f * (1.0f + verf_thinc(x * 0.70710678118654752f)); }
static inline vf vgauss_pdf(vf x) { return 0.3989422804014327f * vexp(-0.5f * x * x); }
