/* Vectorised kernels, one source for every ISA (see simd.h for what is exact and what is bounded).
 * CMake compiles this file once per ISA with LITHE_SIMD_ISA (the suffix) and LITHE_SIMD_BYTES (the
 * vector width) defined and that ISA's flags (-mavx512f ..., -mavx2 -mfma, -msimd128); the
 * arithmetic is GCC/clang vector extensions, so the same expressions run on every ISA. No FMA
 * contraction (-ffp-contract=off is global): the vector and scalar kernels round alike.
 *
 * Tails: an elementwise kernel loads the last partial vector into a zero-padded buffer and runs the
 * same vector code on it, so an element's result never depends on where a range starts or ends —
 * which keeps the thread split (elem.c) bit-identical for any thread count. */
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

/* act1's body, inlined where the kind is a constant (act_loop, for the kinds without exp: one case
 * is left; left to the inliner, wasm's relu loop called act1 once per vector, some 2 % of an MLP's
 * batch-1 predict). */
static inline __attribute__((always_inline)) vf act1_inl(const lithe__act *a, vf x) {
    switch (a->kind) {
    case LITHE__ACT_RELU: return sel(x <= 0.0f, splat(0.0f), x); /* Thinc's cpu_relu: NaN stays NaN */
    case LITHE__ACT_SIGMOID: return vsigmoid(x);
    case LITHE__ACT_TANH: return vtanh(x);
    case LITHE__ACT_SWISH: return x * vsigmoid(x);
    case LITHE__ACT_GELU: return x * vgauss_cdf(x);
    case LITHE__ACT_DISH: return x * (0.5f * (x / vsqrt(x * x + 1.0f) + 1.0f));
    case LITHE__ACT_HARD_SIGMOID: return vclip(x * 0.2f + 0.5f, 0.0f, 1.0f);
    case LITHE__ACT_HARD_TANH: return vclip(x, -1.0f, 1.0f);
    case LITHE__ACT_HARD_SWISH: return x * vclip(x * 0.2f + 0.5f, 0.0f, 1.0f);
    case LITHE__ACT_HARD_SWISH_MOBILENET: return x * (vclip(x + 3.0f, 0.0f, 6.0f) / 6.0f);
    default: return vclip(x * a->slope + a->offset, a->min_val, a->max_val); /* CLIPPED_LINEAR */
    }
}

static inline vf act1(const lithe__act *a, vf x) { return act1_inl(a, x); }

/* One loop per kind (the switch hoisted out of it): act1_inl inlines with a constant kind. */
static inline __attribute__((always_inline)) void act_loop(const lithe__act *a, lithe__act_kind kind, int64_t n,
                                                           const float *X, float *Y) {
    lithe__act c = *a;
    c.kind = kind;
    int64_t i = 0;
    /* (the exp kinds keep the call: inlining their polynomials would grow the module ~4 KB) */
    const bool inl = kind != LITHE__ACT_SIGMOID && kind != LITHE__ACT_TANH && kind != LITHE__ACT_SWISH &&
                     kind != LITHE__ACT_GELU;
    for (; i + VW <= n; i += VW) st(Y + i, inl ? act1_inl(&c, ld(X + i)) : act1(&c, ld(X + i)));
}

/* act and act_backward run n - n % VW floats through their kind's loop, then a partial last vector
 * through the same loop again, zero-padded (ld_part's padding: the same bits), instead of a second
 * copy of every kind's body for the tail (7 KB of the npm SIMD core). false:
 * the kind has no loop here (the caller runs the scalar twin). */
static __attribute__((noinline)) bool act_vec(const lithe__act *a, int64_t n, const float *X, float *Y) {
    switch (a->kind) {
#define ACT_CASE(k)                                                                                \
    case k: act_loop(a, k, n, X, Y); return true;
        ACT_CASE(LITHE__ACT_RELU)
        ACT_CASE(LITHE__ACT_SIGMOID)
        ACT_CASE(LITHE__ACT_TANH)
        ACT_CASE(LITHE__ACT_SWISH)
        ACT_CASE(LITHE__ACT_GELU)
        ACT_CASE(LITHE__ACT_DISH)
        ACT_CASE(LITHE__ACT_HARD_SIGMOID)
        ACT_CASE(LITHE__ACT_HARD_TANH)
        ACT_CASE(LITHE__ACT_HARD_SWISH)
        ACT_CASE(LITHE__ACT_HARD_SWISH_MOBILENET)
        ACT_CASE(LITHE__ACT_CLIPPED_LINEAR)
#undef ACT_CASE
    default: return false;
    }
}

static void K(act)(const lithe__act *a, int64_t n, const float *X, float *Y) {
    const int64_t nv = n - n % VW;
    if (!act_vec(a, nv, X, Y)) {
        lithe_f32_act__scalar(a, n, X, Y); /* mish: the twin */
        return;
    }
    if (nv < n) {
        float t[VW] = {0};
        memcpy(t, X + nv, (size_t)(n - nv) * sizeof(float));
        act_vec(a, VW, t, t);
        memcpy(Y + nv, t, (size_t)(n - nv) * sizeof(float));
    }
}

static inline vf act_bwd1(const lithe__act *a, float low, float high, vf g, vf x, vf y) {
    switch (a->kind) {
    case LITHE__ACT_RELU: return sel(y <= 0.0f, splat(0.0f), g);
    case LITHE__ACT_SIGMOID: return g * (y * (1.0f - y));
    case LITHE__ACT_TANH: return g * (1.0f - y * y);
    case LITHE__ACT_SWISH: return g * (y + vsigmoid(x) * (1.0f - y));
    case LITHE__ACT_GELU: return g * (vgauss_cdf(x) + x * vgauss_pdf(x));
    case LITHE__ACT_HARD_SIGMOID: return g * sel((x > -2.5f) & (x < 2.5f), splat(0.2f), splat(0.0f));
    case LITHE__ACT_HARD_TANH: return g * sel((x > -1.0f) & (x < 1.0f), splat(1.0f), splat(0.0f));
    case LITHE__ACT_HARD_SWISH:
        return g * sel(x > 2.5f, splat(1.0f), sel(x < -2.5f, splat(0.0f), x * 0.4f + 0.5f));
    case LITHE__ACT_HARD_SWISH_MOBILENET:
        return sel(x > 3.0f, splat(1.0f), sel(x < -3.0f, splat(0.0f), (1.0f / 6.0f) * (x * 2.0f + 3.0f))) * g;
    default: /* CLIPPED_LINEAR */
        return g * sel((x > low) & (x < high), splat(a->slope), splat(0.0f));
    }
}

static inline __attribute__((always_inline)) void act_bwd_loop(const lithe__act *a, lithe__act_kind kind,
                                                               int64_t n, const float *dY, const float *X,
                                                               const float *Y, float *dX) {
    lithe__act c = *a;
    c.kind = kind;
    float low = 0.0f, high = 0.0f;
    if (kind == LITHE__ACT_CLIPPED_LINEAR) {
        low = (a->min_val - a->offset) / a->slope;
        high = (a->max_val - a->offset) / a->slope;
    }
    int needs = lithe__act_needs(kind);
    const vf zero = splat(0.0f);
    int64_t i = 0;
    for (; i + VW <= n; i += VW) {
        vf x = needs & LITHE__ACT_NEEDS_X ? ld(X + i) : zero, y = needs & LITHE__ACT_NEEDS_Y ? ld(Y + i) : zero;
        st(dX + i, act_bwd1(&c, low, high, ld(dY + i), x, y));
    }
}

static __attribute__((noinline)) bool act_bwd_vec(const lithe__act *a, int64_t n, const float *dY, const float *X,
                                                  const float *Y, float *dX) {
    switch (a->kind) {
#define ACT_CASE(k)                                                                                \
    case k: act_bwd_loop(a, k, n, dY, X, Y, dX); return true;
        ACT_CASE(LITHE__ACT_RELU)
        ACT_CASE(LITHE__ACT_SIGMOID)
        ACT_CASE(LITHE__ACT_TANH)
        ACT_CASE(LITHE__ACT_SWISH)
        ACT_CASE(LITHE__ACT_GELU)
        ACT_CASE(LITHE__ACT_HARD_SIGMOID)
        ACT_CASE(LITHE__ACT_HARD_TANH)
        ACT_CASE(LITHE__ACT_HARD_SWISH)
        ACT_CASE(LITHE__ACT_HARD_SWISH_MOBILENET)
        ACT_CASE(LITHE__ACT_CLIPPED_LINEAR)
#undef ACT_CASE
    default: return false;
    }
}

static void K(act_backward)(const lithe__act *a, int64_t n, const float *dY, const float *X, const float *Y,
                            float *dX) {
    const int64_t nv = n - n % VW;
    if (!act_bwd_vec(a, nv, dY, X, Y, dX)) {
        lithe_f32_act_backward__scalar(a, n, dY, X, Y, dX); /* mish, dish: the twins */
        return;
    }
    if (nv < n) { /* X and Y only where the kind reads them (either may be NULL otherwise) */
        const size_t m = (size_t)(n - nv) * sizeof(float);
        const int needs = lithe__act_needs(a->kind);
        float g[VW] = {0}, x[VW] = {0}, y[VW] = {0};
        memcpy(g, dY + nv, m);
        if (needs & LITHE__ACT_NEEDS_X) memcpy(x, X + nv, m);
        if (needs & LITHE__ACT_NEEDS_Y) memcpy(y, Y + nv, m);
        act_bwd_vec(a, VW, g, x, y, g);
        memcpy(dX + nv, g, m);
    }
}

static void K(add_row)(int64_t M, int64_t N, float *Y, const float *b) {
    for (int64_t r = 0; r < M; r++) {
        float *y = Y + r * N;
        int64_t j = 0;
        for (; j + VW <= N; j += VW) st(y + j, ld(y + j) + ld(b + j));
        for (; j < N; j++) y[j] += b[j];
    }
}

static void K(sum_rows)(int64_t M, int64_t n, int64_t ld_, const float *X, float beta, float *y) {
    /* per column: beta * y (or 0), then + row 0, + row 1, ... as the scalar twin; columns in blocks
     * of 4 vectors held in registers across the rows */
    int64_t j = 0;
    for (; j + 4 * VW <= n; j += 4 * VW) {
        vf acc[4];
        for (int u = 0; u < 4; u++) acc[u] = beta == 0.0f ? splat(0.0f) : beta * ld(y + j + u * VW);
        for (int64_t r = 0; r < M; r++)
            for (int u = 0; u < 4; u++) acc[u] += ld(X + r * ld_ + j + u * VW);
        for (int u = 0; u < 4; u++) st(y + j + u * VW, acc[u]);
    }
    for (; j + VW <= n; j += VW) {
        vf acc = beta == 0.0f ? splat(0.0f) : beta * ld(y + j);
        for (int64_t r = 0; r < M; r++) acc += ld(X + r * ld_ + j);
        st(y + j, acc);
    }
    for (; j < n; j++) {
        float acc = beta == 0.0f ? 0.0f : beta * y[j];
        for (int64_t r = 0; r < M; r++) acc += X[r * ld_ + j];
        y[j] = acc;
    }
}

static void K(axpby)(int64_t n, float alpha, const float *X, float beta, float *Y) {
    int64_t i = 0;
    if (beta == 1.0f) {
        for (; i + VW <= n; i += VW) st(Y + i, ld(Y + i) + alpha * ld(X + i));
        for (; i < n; i++) Y[i] += alpha * X[i];
    } else if (beta == 0.0f) {
        for (; i + VW <= n; i += VW) st(Y + i, alpha * ld(X + i));
        for (; i < n; i++) Y[i] = alpha * X[i];
    } else {
        for (; i + VW <= n; i += VW) st(Y + i, alpha * ld(X + i) + beta * ld(Y + i));
        for (; i < n; i++) Y[i] = alpha * X[i] + beta * Y[i];
    }
}

static void K(mul)(int64_t n, const float *A, const float *B, float *Y) {
    int64_t i = 0;
    for (; i + VW <= n; i += VW) st(Y + i, ld(A + i) * ld(B + i));
    for (; i < n; i++) Y[i] = A[i] * B[i];
}

/* Whole vectors, then the tail through the zero-padded buffer (a division there runs on padding
 * zeros too, harmlessly). */
static inline __attribute__((always_inline)) vf bin1(int op, vf a, vf b) {
    switch (op) {
    case LITHE__BIN_ADD: return a + b;
    case LITHE__BIN_SUB: return a - b;
    case LITHE__BIN_MUL: return a * b;
    default: return a / b;
    }
}
static inline __attribute__((always_inline)) void bin_loop(int op, int64_t n, const float *A, bool a1, const float *B,
                                                           bool b1, float *Y) {
    vf sa = splat(A[0]), sb = splat(B[0]);
    int64_t i = 0;
    for (; i + VW <= n; i += VW) st(Y + i, bin1(op, a1 ? sa : ld(A + i), b1 ? sb : ld(B + i)));
    if (i < n) {
        int64_t m = n - i;
        st_part(Y + i, bin1(op, a1 ? sa : ld_part(A + i, m), b1 ? sb : ld_part(B + i, m)), m);
    }
}
static void K(binary)(int op, int64_t n, const float *A, bool a1, const float *B, bool b1, float *Y) {
    if (n <= 0) return;
    switch (op) { /* one loop per op, so the switch is not in the loop */
    case LITHE__BIN_ADD: bin_loop(LITHE__BIN_ADD, n, A, a1, B, b1, Y); break;
    case LITHE__BIN_SUB: bin_loop(LITHE__BIN_SUB, n, A, a1, B, b1, Y); break;
    case LITHE__BIN_MUL: bin_loop(LITHE__BIN_MUL, n, A, a1, B, b1, Y); break;
    default: bin_loop(LITHE__BIN_DIV, n, A, a1, B, b1, Y); break;
    }
}

static inline float hmax(vf v) {
    float m = v[0];
    for (int l = 1; l < VW; l++) m = v[l] > m ? v[l] : m;
    return m;
}
/* float -> double by halves: each half converts into one register-wide double vector (vcvtps2pd),
 * where converting the whole vector at once is split badly by some compilers. */
typedef float vfh __attribute__((vector_size(VB / 2)));
typedef double vdh __attribute__((vector_size(VB)));
static inline vdh widen_lo(vf v) {
    vfh h;
    memcpy(&h, &v, sizeof h);
    return __builtin_convertvector(h, vdh);
}
static inline vdh widen_hi(vf v) {
    vfh h;
    memcpy(&h, (const char *)&v + sizeof h, sizeof h);
    return __builtin_convertvector(h, vdh);
}
static inline double hsum_dh(vdh v) {
    double s = 0.0;
    for (int l = 0; l < VW / 2; l++) s += v[l];
    return s;
}

/* acc + x * x in double. A float's square is exact in double (48 significant bits), so a fused
 * multiply-add rounds exactly where the multiply-then-add does: one instruction, the same bits. */
static inline vdh acc_sq(vdh acc, vdh x) {
#if VB == 64 && defined(__AVX512F__)
    return (vdh)_mm512_fmadd_pd((__m512d)x, (__m512d)x, (__m512d)acc);
#elif VB == 32 && defined(__FMA__)
    return (vdh)_mm256_fmadd_pd((__m256d)x, (__m256d)x, (__m256d)acc);
#else
    return acc + x * x;
#endif
}

static double K(sum_squares)(int64_t n, const float *X) {
#if VB == 64 && defined(__AVX512F__)
    /* 256-bit halves, eight chains: Zen 4 widens a whole zmm of floats slowly (vcvtps2pd zmm, and
     * the extract of the upper half), so four float-to-double zmm chains ran at 0.078 ns per
     * element and these at 0.044 (in L1 or from L3 alike: the conversion was the bound) */
    __m256d s0 = _mm256_setzero_pd(), s1 = s0, s2 = s0, s3 = s0, s4 = s0, s5 = s0, s6 = s0, s7 = s0;
    int64_t i = 0;
#define SQ(acc, j)                                                                                 \
    {                                                                                              \
        __m256d x = _mm256_cvtps_pd(_mm_loadu_ps(X + i + 4 * (j)));                                \
        acc = _mm256_fmadd_pd(x, x, acc);                                                          \
    }
    for (; i + 32 <= n; i += 32) {
        SQ(s0, 0) SQ(s1, 1) SQ(s2, 2) SQ(s3, 3) SQ(s4, 4) SQ(s5, 5) SQ(s6, 6) SQ(s7, 7)
    }
#undef SQ
    __m256d t = _mm256_add_pd(_mm256_add_pd(_mm256_add_pd(s0, s1), _mm256_add_pd(s2, s3)),
                              _mm256_add_pd(_mm256_add_pd(s4, s5), _mm256_add_pd(s6, s7)));
    double h[4];
    _mm256_storeu_pd(h, t);
    double s = ((h[0] + h[1]) + h[2]) + h[3];
    for (; i < n; i++) s += (double)X[i] * X[i];
    return s;
#else
    vdh a0 = (vdh){0}, a1 = (vdh){0}, a2 = (vdh){0}, a3 = (vdh){0}; /* four chains hide the add latency */
    int64_t i = 0;
    for (; i + 2 * VW <= n; i += 2 * VW) {
        vf x = ld(X + i), y = ld(X + i + VW);
        a0 = acc_sq(a0, widen_lo(x));
        a1 = acc_sq(a1, widen_hi(x));
        a2 = acc_sq(a2, widen_lo(y));
        a3 = acc_sq(a3, widen_hi(y));
    }
    double s = hsum_dh((a0 + a1) + (a2 + a3));
    for (; i < n; i++) s += (double)X[i] * X[i];
    return s;
#endif
}

static void K(adam)(int64_t n, float *W, const float *G, float *m1, float *m2, float beta1, float beta2,
                         float eps, float lr) {
    float omb1 = 1.0f - beta1, omb2 = 1.0f - beta2;
    int64_t i = 0;
    for (; i < n; i += VW) {
        int64_t m = n - i < VW ? n - i : VW;
        vf g = m == VW ? ld(G + i) : ld_part(G + i, m);
        vf a = m == VW ? ld(m1 + i) : ld_part(m1 + i, m);
        vf b = m == VW ? ld(m2 + i) : ld_part(m2 + i, m);
        vf w = m == VW ? ld(W + i) : ld_part(W + i, m);
        a = a * beta1;
        a = a + g * omb1;
        b = b * beta2;
        b = b + omb2 * (g * g);
        vf step = a / (vsqrt(b) + eps);
        w = w + -lr * step;
        if (m == VW) {
            st(m1 + i, a);
            st(m2 + i, b);
            st(W + i, w);
        } else {
            st_part(m1 + i, a, m);
            st_part(m2 + i, b, m);
            st_part(W + i, w, m);
        }
    }
}

static void K(radam)(int64_t n, float *W, const float *G, float *m1, float *m2, float beta1, float omb1,
                          float beta2, float omb2, float eps, float coef, bool rectified) {
    int64_t i = 0;
    for (; i < n; i += VW) {
        int64_t m = n - i < VW ? n - i : VW;
        vf g = ld_part(G + i, m), a = ld_part(m1 + i, m), b = ld_part(m2 + i, m), w = ld_part(W + i, m);
        b = b * beta2;
        b = b + omb2 * (g * g);
        a = a * beta1;
        a = a + omb1 * g;
        if (rectified) w = w + coef * (a / (vsqrt(b) + eps));
        else if (coef != 0.0f) w = w + coef * a;
        st_part(m1 + i, a, m);
        st_part(m2 + i, b, m);
        st_part(W + i, w, m);
    }
}

static void K(update_averages)(int64_t n, float *ema, const float *W, float decay) {
    float omd = 1.0f - decay;
    int64_t i = 0;
    for (; i + VW <= n; i += VW) {
        vf e = ld(ema + i);
        st(ema + i, e - omd * (e - ld(W + i)));
    }
    for (; i < n; i++) ema[i] -= omd * (ema[i] - W[i]);
}

/* One vector of adam_step (the scalar twin's order per element); returns the new W. */
static inline vf adam_step_vec(vf g, vf *a, vf *b, vf w, bool scale_g, float gscale, float beta1, float omb1,
                               float beta2, float omb2, float eps, float lr, bool scale_w, float wscale) {
    if (scale_g) g = gscale * g;
    *a = *a * beta1;
    *a = *a + g * omb1;
    *b = *b * beta2;
    *b = *b + omb2 * (g * g);
    vf step = *a / (vsqrt(*b) + eps);
    w = w + -lr * step;
    return scale_w ? wscale * w : w;
}

static void K(adam_step)(int64_t n, float *W, float *G, float *m1, float *m2, float *avg, float gscale, float beta1,
                         float beta2, float eps, float lr, float wscale, float decay) {
    float omb1 = 1.0f - beta1, omb2 = 1.0f - beta2, omd = 1.0f - decay;
    bool scale_g = gscale != 1.0f, scale_w = wscale != 1.0f;
    int64_t i = 0;
    /* whole vectors, the averages' branch outside the loop */
    /* every load before any store: the arrays usually sit at equal offsets within their pages,
     * and a load behind a store to the same page offset waits on it (4K aliasing) */
    if (avg)
        for (; i + VW <= n; i += VW) {
            vf a = ld(m1 + i), b = ld(m2 + i), e = ld(avg + i);
            vf w = adam_step_vec(ld(G + i), &a, &b, ld(W + i), scale_g, gscale, beta1, omb1, beta2, omb2, eps, lr,
                                 scale_w, wscale);
            st(m1 + i, a);
            st(m2 + i, b);
            st(W + i, w);
            st(G + i, splat(0.0f));
            st(avg + i, e - omd * (e - w));
        }
    else
        for (; i + VW <= n; i += VW) {
            vf a = ld(m1 + i), b = ld(m2 + i);
            vf w = adam_step_vec(ld(G + i), &a, &b, ld(W + i), scale_g, gscale, beta1, omb1, beta2, omb2, eps, lr,
                                 scale_w, wscale);
            st(m1 + i, a);
            st(m2 + i, b);
            st(W + i, w);
            st(G + i, splat(0.0f));
        }
    if (i < n) { /* the partial last vector through zero-padded buffers: the same code, the same bits */
        int64_t m = n - i;
        vf a = ld_part(m1 + i, m), b = ld_part(m2 + i, m);
        vf w = adam_step_vec(ld_part(G + i, m), &a, &b, ld_part(W + i, m), scale_g, gscale, beta1, omb1, beta2, omb2,
                             eps, lr, scale_w, wscale);
        st_part(m1 + i, a, m);
        st_part(m2 + i, b, m);
        st_part(W + i, w, m);
        st_part(G + i, splat(0.0f), m);
        if (avg) {
            vf e = ld_part(avg + i, m);
            st_part(avg + i, e - omd * (e - w), m);
        }
    }
}

/* One row's maximum of x (scaled by 1 / temperature when t1 is false). */
static inline float row_max(int64_t N, const float *x, bool t1, float temperature) {
    vf mv = splat(-INFINITY);
    int64_t j = 0;
    for (; j + VW <= N; j += VW) {
        vf v = t1 ? ld(x + j) : ld(x + j) / temperature;
        mv = sel(v > mv, v, mv);
    }
    float mx = hmax(mv);
    for (; j < N; j++) {
        float v = t1 ? x[j] : x[j] / temperature;
        if (v > mx) mx = v;
    }
    return mx;
}

/* Double-precision row sums are kept in pairs of register-wide double vectors (lo and hi halves of
 * a float vector): no arithmetic on vectors wider than the ISA's registers, which some compilers
 * scalarise. */
typedef struct dpair {
    vdh lo, hi;
} dpair;
static inline dpair dwiden(vf v) { return (dpair){widen_lo(v), widen_hi(v)}; }
static inline vf dnarrow(vdh lo, vdh hi) {
    vfh l = __builtin_convertvector(lo, vfh), h = __builtin_convertvector(hi, vfh);
    vf v;
    memcpy(&v, &l, sizeof l);
    memcpy((char *)&v + sizeof l, &h, sizeof h);
    return v;
}
static inline double dsum(vdh lo, vdh hi) { return hsum_dh(lo + hi); }

static void K(softmax)(int64_t M, int64_t N, const float *X, float temperature, float *Y) {
    if (N < VW) { /* rows shorter than a vector (a 10-class output): the twin is quicker */
        lithe_f32_softmax__scalar(M, N, X, temperature, Y);
        return;
    }
    bool t1 = temperature == 1.0f;
    for (int64_t r = 0; r < M; r++) {
        const float *x = X + r * N;
        float *y = Y + r * N;
        float mx = row_max(N, x, t1, temperature);
        vdh alo = (vdh){0}, ahi = (vdh){0};
        int64_t j = 0;
        for (; j + VW <= N; j += VW) {
            vf v = t1 ? ld(x + j) : ld(x + j) / temperature;
            vf e = vexp(v - mx);
            st(y + j, e);
            alo += widen_lo(e);
            ahi += widen_hi(e);
        }
        if (j < N) {
            int64_t m = N - j;
            vf v = ld_part(x + j, m);
            if (!t1) v = v / temperature;
            float t[VW] = {0};
            st_part(t, vexp(v - mx), m); /* lanes past the row stay 0 in the sum */
            memcpy(y + j, t, (size_t)m * sizeof(float));
            vf e = ld(t);
            alo += widen_lo(e);
            ahi += widen_hi(e);
        }
        float inv = (float)dsum(alo, ahi);
        j = 0;
        for (; j + VW <= N; j += VW) st(y + j, ld(y + j) / inv);
        for (; j < N; j++) y[j] /= inv;
    }
}

static void K(softmax_backward)(int64_t M, int64_t N, const float *Y, const float *dY, float temperature,
                                float *dX) {
    bool t1 = temperature == 1.0f;
    for (int64_t r = 0; r < M; r++) {
        const float *y = Y + r * N, *dy = dY + r * N;
        float *dx = dX + r * N;
        vdh alo = (vdh){0}, ahi = (vdh){0};
        int64_t j = 0;
        for (; j + VW <= N; j += VW) {
            vf g = t1 ? ld(dy + j) : ld(dy + j) / temperature;
            vf yy = ld(y + j);
            alo += widen_lo(yy) * widen_lo(g);
            ahi += widen_hi(yy) * widen_hi(g);
        }
        double s = dsum(alo, ahi);
        for (; j < N; j++) {
            float g = t1 ? dy[j] : dy[j] / temperature;
            s += (double)y[j] * g;
        }
        float sf = (float)s;
        j = 0;
        for (; j + VW <= N; j += VW) {
            vf g = t1 ? ld(dy + j) : ld(dy + j) / temperature;
            vf yy = ld(y + j);
            st(dx + j, yy * g - yy * sf);
        }
        for (; j < N; j++) {
            float g = t1 ? dy[j] : dy[j] / temperature;
            dx[j] = y[j] * g - y[j] * sf;
        }
    }
}

/* The scalar twin sums exp in double; here e^(x - max) is the vector exp in float, summed in
 * double: lse within ~2 ulp of the twin's. */
static void K(log_softmax)(int64_t M, int64_t N, const float *X, float *Y) {
    for (int64_t r = 0; r < M; r++) {
        const float *x = X + r * N;
        float *y = Y + r * N;
        float mx = row_max(N, x, true, 1.0f);
        vdh alo = (vdh){0}, ahi = (vdh){0};
        int64_t j = 0;
        for (; j + VW <= N; j += VW) {
            vf e = vexp(ld(x + j) - mx);
            alo += widen_lo(e);
            ahi += widen_hi(e);
        }
        if (j < N) {
            float t[VW] = {0};
            st_part(t, vexp(ld_part(x + j, N - j) - mx), N - j);
            vf e = ld(t);
            alo += widen_lo(e);
            ahi += widen_hi(e);
        }
        float lse = mx + (float)log(dsum(alo, ahi));
        j = 0;
        for (; j + VW <= N; j += VW) st(y + j, ld(x + j) - lse);
        for (; j < N; j++) y[j] = x[j] - lse;
    }
}

static void K(log_softmax_backward)(int64_t M, int64_t N, const float *Y, const float *dY, float *dX) {
    for (int64_t r = 0; r < M; r++) {
        const float *y = Y + r * N, *g = dY + r * N;
        float *dx = dX + r * N;
        double s = 0.0;
        for (int64_t j = 0; j < N; j++) s += g[j]; /* element order, as the twin */
        float sf = (float)s;
        int64_t j = 0;
        for (; j + VW <= N; j += VW) st(dx + j, ld(dx + j) + (ld(g + j) - vexp(ld(y + j)) * sf));
        if (j < N) {
            int64_t m = N - j;
            st_part(dx + j, ld_part(dx + j, m) + (ld_part(g + j, m) - vexp(ld_part(y + j, m)) * sf), m);
        }
    }
}

static void K(layernorm)(int64_t M, int64_t N, const float *X, const float *G, const float *b, float eps,
                         float *Y, float *mean, float *inv_std) {
    for (int64_t r = 0; r < M; r++) {
        const float *x = X + r * N;
        vdh alo = (vdh){0}, ahi = (vdh){0};
        int64_t j = 0;
        for (; j + VW <= N; j += VW) {
            vf v = ld(x + j);
            alo += widen_lo(v);
            ahi += widen_hi(v);
        }
        double mu = dsum(alo, ahi);
        for (; j < N; j++) mu += x[j];
        mu /= (double)N;
        alo = ahi = (vdh){0};
        for (j = 0; j + VW <= N; j += VW) {
            vf v = ld(x + j);
            vdh dl = widen_lo(v) - mu, dh = widen_hi(v) - mu;
            alo += dl * dl;
            ahi += dh * dh;
        }
        double var = dsum(alo, ahi);
        for (; j < N; j++) var += ((double)x[j] - mu) * ((double)x[j] - mu);
        var /= (double)N;
        double is = 1.0 / sqrt(var + (double)eps);
        mean[r] = (float)mu;
        inv_std[r] = (float)is;
        float *y = Y + r * N;
        for (j = 0; j + VW <= N; j += VW) {
            vf v = ld(x + j);
            vf xh = dnarrow((widen_lo(v) - mu) * is, (widen_hi(v) - mu) * is);
            st(y + j, xh * ld(G + j) + ld(b + j));
        }
        for (; j < N; j++) y[j] = (float)(((double)x[j] - mu) * is) * G[j] + b[j];
    }
}

static void K(layernorm_backward_dx)(int64_t M, int64_t N, const float *dY, const float *X, const float *G,
                                     const float *mean, const float *inv_std, float *dX) {
    for (int64_t r = 0; r < M; r++) {
        const float *x = X + r * N, *dy = dY + r * N;
        double mu = mean[r], is = inv_std[r];
        vdh glo = (vdh){0}, ghi = (vdh){0}, gxlo = (vdh){0}, gxhi = (vdh){0};
        int64_t j = 0;
        for (; j + VW <= N; j += VW) {
            vf v = ld(x + j), d = ld(dy + j), gg = ld(G + j);
            vdh xl = (widen_lo(v) - mu) * is, xh = (widen_hi(v) - mu) * is;
            vdh gl = widen_lo(d) * widen_lo(gg), gh = widen_hi(d) * widen_hi(gg);
            glo += gl;
            ghi += gh;
            gxlo += gl * xl;
            gxhi += gh * xh;
        }
        double sum_g = dsum(glo, ghi), sum_gx = dsum(gxlo, gxhi);
        for (; j < N; j++) {
            double xhat = ((double)x[j] - mu) * is, g = (double)dy[j] * G[j];
            sum_g += g;
            sum_gx += g * xhat;
        }
        double mg = sum_g / (double)N, mgx = sum_gx / (double)N;
        float *dx = dX + r * N;
        for (j = 0; j + VW <= N; j += VW) {
            vf v = ld(x + j), d = ld(dy + j), gg = ld(G + j);
            vdh xl = (widen_lo(v) - mu) * is, xh = (widen_hi(v) - mu) * is;
            vdh ol = is * (widen_lo(d) * widen_lo(gg) - mg - xl * mgx);
            vdh oh = is * (widen_hi(d) * widen_hi(gg) - mg - xh * mgx);
            st(dx + j, dnarrow(ol, oh));
        }
        for (; j < N; j++) {
            double xhat = ((double)x[j] - mu) * is;
            dx[j] = (float)(is * ((double)dy[j] * G[j] - mg - xhat * mgx));
        }
    }
}

static void K(layernorm_backward_dgb)(int64_t M, int64_t n, int64_t ldx, const float *dY, const float *X,
                                      const float *mean, const float *inv_std, float *dG, float *db) {
    int64_t j = 0;
    /* below 512-bit vectors the widen / narrow pairs cost more than the twin's loop, which the
     * compiler vectorises itself: the same arithmetic in the same order either way */
    for (; VB >= 64 && j + VW <= n; j += VW) {
        vf ag = ld(dG + j), ab = ld(db + j);
        for (int64_t r = 0; r < M; r++) {
            double mu = mean[r], is = inv_std[r];
            vf dy = ld(dY + r * ldx + j), v = ld(X + r * ldx + j);
            vdh xl = (widen_lo(v) - mu) * is, xh = (widen_hi(v) - mu) * is;
            ag += dnarrow(widen_lo(dy) * xl, widen_hi(dy) * xh);
            ab += dy;
        }
        st(dG + j, ag);
        st(db + j, ab);
    }
    for (int64_t r = 0; r < M; r++) {
        double mu = mean[r], is = inv_std[r];
        for (int64_t c = j; c < n; c++) {
            float dy = dY[r * ldx + c];
            double xhat = ((double)X[r * ldx + c] - mu) * is;
            dG[c] += (float)((double)dy * xhat);
            db[c] += dy;
        }
    }
}

static void K(scatter_add_rows)(int64_t B, int64_t n, int64_t ldx, float *table, const int32_t *ids32,
                                     const uint64_t *ids64, const float *X) {
    for (int64_t i = 0; i < B; i++) {
        int64_t id = ids32 ? (int64_t)ids32[i] : (int64_t)ids64[i];
        float *row = table + id * ldx;
        const float *x = X + i * ldx;
        int64_t j = 0;
        for (; j + VW <= n; j += VW) st(row + j, ld(row + j) + ld(x + j));
        for (; j < n; j++) row[j] += x[j];
    }
}

static inline vf unary1(int op, vf x) {
    switch (op) {
    case LITHE__UN_EXP: return vexp(x);
    case LITHE__UN_SQRT: return vsqrt(x);
    case LITHE__UN_NEG: return -x;
    case LITHE__UN_ABS: return vabs(x);
    default: return 1.0f / x;
    }
}

static __attribute__((noinline)) void unary_vec(int op, int64_t n, const float *X, float *Y) {
    for (int64_t i = 0; i + VW <= n; i += VW) st(Y + i, unary1(op, ld(X + i)));
}

/* unary and unary_backward: the partial last vector through the same loop, zero-padded (as act) */
static void K(unary)(int op, int64_t n, const float *X, float *Y) {
    if (op == LITHE__UN_LOG || op == LITHE__UN_ERF) {
        lithe_f32_unary__scalar(op, n, X, Y);
        return;
    }
    const int64_t nv = n - n % VW;
    unary_vec(op, nv, X, Y);
    if (nv < n) {
        float t[VW] = {0};
        memcpy(t, X + nv, (size_t)(n - nv) * sizeof(float));
        unary_vec(op, VW, t, t);
        memcpy(Y + nv, t, (size_t)(n - nv) * sizeof(float));
    }
}

static inline vf unary_bwd1(int op, vf x, vf y, vf g, vf d) {
    switch (op) {
    case LITHE__UN_EXP: return d + g * y;
    case LITHE__UN_LOG: return d + g / x;
    case LITHE__UN_SQRT: return d + g * 0.5f / y;
    case LITHE__UN_NEG: return d - g;
    case LITHE__UN_ERF: return d + g * 1.12837916709551257f * vexp(-x * x);
    case LITHE__UN_ABS: return d + sel(x > 0.0f, g, sel(x < 0.0f, -g, splat(0.0f)));
    default: return d - g * y * y;
    }
}

static __attribute__((noinline)) void unary_bwd_vec(int op, int64_t n, const float *X, const float *Y,
                                                    const float *dY, float *dX) {
    for (int64_t i = 0; i + VW <= n; i += VW)
        st(dX + i, unary_bwd1(op, ld(X + i), ld(Y + i), ld(dY + i), ld(dX + i)));
}

static void K(unary_backward)(int op, int64_t n, const float *X, const float *Y, const float *dY, float *dX) {
    const int64_t nv = n - n % VW;
    unary_bwd_vec(op, nv, X, Y, dY, dX);
    if (nv < n) {
        const size_t m = (size_t)(n - nv) * sizeof(float);
        float x[VW] = {0}, y[VW] = {0}, g[VW] = {0}, d[VW] = {0};
        memcpy(x, X + nv, m);
        memcpy(y, Y + nv, m);
        memcpy(g, dY + nv, m);
        memcpy(d, dX + nv, m);
        unary_bwd_vec(op, VW, x, y, g, d);
        memcpy(dX + nv, d, m);
    }
}

/* Maxout rows of P pieces: the first maximum, as the twin; vectorised across rows for P <= 4 by
 * reading each piece with stride P. */
static void K(maxout)(int64_t R, int64_t P, const float *X, float *Y, int32_t *which) {
    int64_t r = 0;
    if (P >= 2 && P <= 4) {
        for (; r + VW <= R; r += VW) {
            vf best = splat(0.0f), v = splat(0.0f);
            vi arg = splati(0);
            for (int l = 0; l < VW; l++) best[l] = X[(r + l) * P];
            for (int64_t p = 1; p < P; p++) {
                for (int l = 0; l < VW; l++) v[l] = X[(r + l) * P + p];
                vi gt = v > best;
                best = sel(gt, v, best);
                arg = (gt & splati((int32_t)p)) | (~gt & arg);
            }
            st(Y + r, best);
            memcpy(which + r, &arg, sizeof arg);
        }
    }
    for (; r < R; r++) {
        const float *x = X + r * P;
        int32_t b = 0;
        for (int64_t p = 1; p < P; p++)
            if (x[p] > x[b]) b = (int32_t)p;
        Y[r] = x[b];
        which[r] = b;
    }
}

/* A depthwise plane as long rows (conv.c lays the plane out so that every tap is a shift of it): for
 * rows r < R, y[r·ldy + q] = act(bias + sum over taps t < T, in order, of x[r·ldx + q + off[t]] · w[t])
 * for q < n — the scalar twin's order and multiply-add per lane, so bit-identical to it. A row's
 * last partial vector is computed again from n - VW (the same bits, the same stores) when n >= VW,
 * else loaded from a zero-padded copy: it never reads past the last tap's x[... + n - 1 + off[t]]
 * nor writes past y[... + n - 1]. The 3x3 (two vectors per step past 4 lanes, so their chains overlap;
 * taps and weights in registers) runs a relu or clipped-linear act in registers (act1: the act
 * kernel's bits); other kinds, other tap counts and rows narrower than a vector (dwt_impl, one
 * vector per step) take it from the act kernel over each row after. */

static inline __attribute__((always_inline)) void dwt_impl(int64_t R, int64_t n, int64_t ldx, float *y, int64_t ldy,
                                                           const float *x, const int64_t *off, const float *w,
                                                           int64_t T, float bias, const lithe__act *a,
                                                           lithe__act_kind kind, bool act_in) {
    const float *xp[LITHE__DWCONV_MAX_TAPS];
    vf wv[LITHE__DWCONV_MAX_TAPS];
    for (int64_t t = 0; t < T; t++) xp[t] = x + off[t], wv[t] = bcast(w[t]);
    lithe__act c = {0};
    if (act_in) c = *a, c.kind = kind;
    for (int64_t r = 0; r < R; r++, y += ldy) {
        int64_t xo = r * ldx;
        if (n < VW) {
            vf acc = bcast(bias);
            for (int64_t t = 0; t < T; t++) acc = acc + ld_part(xp[t] + xo, n) * wv[t];
            if (act_in) acc = act1(&c, acc);
            st_part(y, acc, n);
            continue;
        }
        for (int64_t q = 0; q < n; q += VW) {
            int64_t qq = q + VW <= n ? q : n - VW;
            vf acc = bcast(bias);
            for (int64_t t = 0; t < T; t++) acc = acc + ld(xp[t] + xo + qq) * wv[t];
            if (act_in) acc = act1(&c, acc);
            st(y + qq, acc);
        }
    }
}

/* The 3x3's fused relu / clip with the ISA's max and min where their operand order gives act1's
 * exact selections (x86 maxps(a, b) = a > b ? a : b, minps(a, b) = a < b ? a : b; WebAssembly's
 * pmax(a, b) = a < b ? b : a, pmin(a, b) = b < a ? b : a): relu = x <= 0 ? 0 : x (Thinc's cpu_relu: NaN
 * stays NaN, -0 to +0) is max(0, x) + 0, the + 0 turning -0 into +0 (dw_relu);
 * clip = x < lo ? lo : (x > hi ? hi : x) of x·slope + offset, which max(lo, min(hi, ·)) equals
 * when lo <= hi (K(dwconv_taps) sends other bounds to the act kernel). Elsewhere act1 itself. */
#if (VB == 64 && defined(__AVX512F__)) || (VB == 32 && defined(__AVX__)) || (VB == 16 && defined(__SSE2__)) || \
    (VB == 16 && defined(__wasm_simd128__))
#define DW_MINMAX 1
static inline vf dw_max(vf a, vf b) { /* a > b ? a : b, b when either is NaN */
#if VB == 64
    return (vf)_mm512_max_ps((__m512)a, (__m512)b);
#elif VB == 32
    return (vf)_mm256_max_ps((__m256)a, (__m256)b);
#elif defined(__SSE2__)
    return (vf)_mm_max_ps((__m128)a, (__m128)b);
#else
    return (vf)wasm_f32x4_pmax((v128_t)b, (v128_t)a);
#endif
}
static inline vf dw_min(vf a, vf b) { /* a < b ? a : b, b when either is NaN */
#if VB == 64
    return (vf)_mm512_min_ps((__m512)a, (__m512)b);
#elif VB == 32
    return (vf)_mm256_min_ps((__m256)a, (__m256)b);
#elif defined(__SSE2__)
    return (vf)_mm_min_ps((__m128)a, (__m128)b);
#else
    return (vf)wasm_f32x4_pmin((v128_t)b, (v128_t)a);
#endif
}
static inline vf dw_relu(vf x) { return dw_max(splat(0.0f), x) + splat(0.0f); } /* NaN: x; -0: +0 */
#else
#define DW_MINMAX 0
#endif
static inline vf dw_act(const lithe__act *c, vf x) {
#if DW_MINMAX
    if (c->kind == LITHE__ACT_RELU) return dw_relu(x);
    return dw_max(bcast(c->min_val), dw_min(bcast(c->max_val), x * c->slope + c->offset)); /* bounds' signs kept */
#else
    return act1(c, x);
#endif
}

/* The 3x3: taps and weights in named registers (arrays of them spill), the same sums as dwt_impl. */
#define DW9(P, Q)                                                                                                  \
    (((((((((b0 + ld(P##0 + (Q)) * w0) + ld(P##1 + (Q)) * w1) + ld(P##2 + (Q)) * w2) + ld(P##3 + (Q)) * w3) +     \
          ld(P##4 + (Q)) * w4) + ld(P##5 + (Q)) * w5) + ld(P##6 + (Q)) * w6) + ld(P##7 + (Q)) * w7) +             \
     ld(P##8 + (Q)) * w8)
static inline __attribute__((always_inline)) void dw9_impl(int64_t R, int64_t n, int64_t ldx, float *y, int64_t ldy,
                                                           const float *x, const int64_t *off, const float *w,
                                                           float bias, const lithe__act *a, lithe__act_kind kind,
                                                           bool act_in) {
    const float *p0 = x + off[0], *p1 = x + off[1], *p2 = x + off[2], *p3 = x + off[3], *p4 = x + off[4],
                *p5 = x + off[5], *p6 = x + off[6], *p7 = x + off[7], *p8 = x + off[8];
    vf w0 = bcast(w[0]), w1 = bcast(w[1]), w2 = bcast(w[2]), w3 = bcast(w[3]), w4 = bcast(w[4]), w5 = bcast(w[5]),
       w6 = bcast(w[6]), w7 = bcast(w[7]), w8 = bcast(w[8]), b0 = bcast(bias);
    lithe__act c = {0};
    if (act_in) c = *a, c.kind = kind;
    for (int64_t r = 0; r < R; r++, y += ldy) {
        int64_t xo = r * ldx, q = 0;
        /* (four-lane vectors: one at a time measured faster under Node, its 16 registers) */
        for (; q + 2 * VW <= n && VW > 4; q += 2 * VW) {
            vf a0 = DW9(p, xo + q), a1 = DW9(p, xo + q + VW);
            if (act_in) a0 = dw_act(&c, a0), a1 = dw_act(&c, a1);
            st(y + q, a0);
            st(y + q + VW, a1);
        }
        for (; q < n; q += VW) {
            int64_t qq = q + VW <= n ? q : n - VW;
            vf acc = DW9(p, xo + qq);
            if (act_in) acc = dw_act(&c, acc);
            st(y + qq, acc);
        }
    }
}
#undef DW9

static void K(dwconv_taps)(int64_t R, int64_t n, int64_t ldx, float *y, int64_t ldy, const float *x,
                           const int64_t *off, const float *w, int64_t T, float bias, const lithe__act *a) {
    /* the 3x3 with its taps unrolled into registers, with the acts that mobilenet and most CNNs fuse
     * (relu, clip) inside */
    lithe__act_kind kind = a ? a->kind : LITHE__ACT_RELU;
    bool clip_ok = kind == LITHE__ACT_CLIPPED_LINEAR && a->min_val <= a->max_val; /* (dw_act) */
    bool post = a && kind != LITHE__ACT_RELU && !clip_ok, in = a && !post;
    if (T == 9 && n >= VW) {
        if (!in) dw9_impl(R, n, ldx, y, ldy, x, off, w, bias, a, kind, false);
        else if (kind == LITHE__ACT_RELU) dw9_impl(R, n, ldx, y, ldy, x, off, w, bias, a, LITHE__ACT_RELU, true);
        else dw9_impl(R, n, ldx, y, ldy, x, off, w, bias, a, LITHE__ACT_CLIPPED_LINEAR, true);
    } else {
        dwt_impl(R, n, ldx, y, ldy, x, off, w, T, bias, a, kind, false);
        post = a != NULL;
    }
    if (post)
        for (int64_t r = 0; r < R; r++) K(act)(a, n, y + r * ldy, y + r * ldy);
}

/* dst[r·ldd + i] = src[r·lds + i·s] for r < R, i < n: the depthwise layout's copies (conv.c), rows
 * into its phase planes and runs out into Y. Stride 1: whole vectors, the last one overlapping, then
 * eight or four lanes; other strides one by one (stride 2 goes through split_rows). */
typedef float v4f __attribute__((vector_size(16)));
static void K(copy_rows)(int64_t R, int64_t n, float *dst, int64_t ldd, const float *src, int64_t lds, int64_t s) {
    for (int64_t r = 0; r < R; r++) {
        float *d = dst + r * ldd;
        const float *p = src + r * lds;
        if (s != 1 || n < 4) {
            for (int64_t i = 0; i < n; i++) d[i] = p[i * s];
        } else if (n >= VW) {
            for (int64_t i = 0; i < n; i += VW) {
                int64_t ii = i + VW <= n ? i : n - VW;
                st(d + ii, ld(p + ii));
            }
#if VW > 8
        } else if (n >= 8) { /* 14-wide rows in two overlapping halves */
            typedef float v8f __attribute__((vector_size(32)));
            for (int64_t i = 0; i < n; i += 8) {
                int64_t ii = i + 8 <= n ? i : n - 8;
                v8f v;
                memcpy(&v, p + ii, sizeof v);
                memcpy(d + ii, &v, sizeof v);
            }
#endif
        } else {
            for (int64_t i = 0; i < n; i += 4) {
                int64_t ii = i + 4 <= n ? i : n - 4;
                v4f v;
                memcpy(&v, p + ii, sizeof v);
                memcpy(d + ii, &v, sizeof v);
            }
        }
    }
}

/* Rows split into their even and odd columns (conv.c's stride-2 phase planes, one pass over the
 * input): e[r·ldd + i] = src[r·lds + 2i] for i < ceil(m / 2), o[r·ldd + i] = src[r·lds + 2i + 1]
 * for i < m / 2. Pairs of vectors, the last pair overlapping, then eight- and four-lane pairs; an odd
 * last column alone. Reads nothing past src[r·lds + m - 1]. */
#if VW == 16
#define EVENS 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30
#define ODDS 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31
#elif VW == 8
#define EVENS 0, 2, 4, 6, 8, 10, 12, 14
#define ODDS 1, 3, 5, 7, 9, 11, 13, 15
#else
#define EVENS 0, 2, 4, 6
#define ODDS 1, 3, 5, 7
#endif
#define EVENS8 0, 2, 4, 6, 8, 10, 12, 14
#define ODDS8 1, 3, 5, 7, 9, 11, 13, 15
#define EVENS4 0, 2, 4, 6
#define ODDS4 1, 3, 5, 7
#define SPLIT_PAIRS(T, L, EV, OD)                                                                                  \
    for (int64_t i = 0; i < m2; i += 2 * (L)) {                                                                   \
        int64_t ii = i + 2 * (L) <= m2 ? i : m2 - 2 * (L);                                                        \
        T va, vb, ve, vo;                                                                                         \
        memcpy(&va, p + ii, sizeof va), memcpy(&vb, p + ii + (L), sizeof vb);                                     \
        ve = __builtin_shufflevector(va, vb, EV), vo = __builtin_shufflevector(va, vb, OD);                      \
        memcpy(e + ii / 2, &ve, sizeof ve), memcpy(o + ii / 2, &vo, sizeof vo);                                   \
    }
static void K(split_rows)(int64_t R, int64_t m, float *e0, float *o0, int64_t ldd, const float *src, int64_t lds) {
    int64_t m2 = m & ~(int64_t)1; /* whole pairs */
    for (int64_t r = 0; r < R; r++) {
        float *e = e0 + r * ldd, *o = o0 + r * ldd;
        const float *p = src + r * lds;
        if (m2 >= 2 * VW) {
            SPLIT_PAIRS(vf, VW, EVENS, ODDS)
#if VW > 8
        } else if (m2 >= 16) {
            typedef float v8f __attribute__((vector_size(32)));
            SPLIT_PAIRS(v8f, 8, EVENS8, ODDS8)
#endif
#if VW > 4
        } else if (m2 >= 8) {
            SPLIT_PAIRS(v4f, 4, EVENS4, ODDS4)
#endif
        } else {
            for (int64_t i = 0; i < m2; i += 2) e[i / 2] = p[i], o[i / 2] = p[i + 1];
        }
        if (m & 1) e[m / 2] = p[m - 1];
    }
}
#undef SPLIT_PAIRS
#undef EVENS
#undef ODDS
#undef EVENS8
#undef ODDS8
#undef EVENS4
#undef ODDS4

#if VW >= 8 /* (conv.c takes the lanes on 8 or 16 only: none in the four-lane builds, WebAssembly's among them) */
/* Depthwise with channels in the lanes (conv.c's choice where the long rows lose: planes under 16
 * wide, big stride-2 ones): nch <= VW channel planes go through a zero-bordered, pixel-major
 * buffer in ws holding one vector of VW channels per padded pixel (lithe__dw_lanes_dims: the whole
 * plane, or a ring of the last few rows for large planes), filled by VW x VW register transposes
 * of VW consecutive pixels of the VW planes; each output pixel is then one vector, bias + the taps
 * in (kh, kw) order (the twin's sum per lane, aligned loads at any stride or dilation), the relu /
 * clip in registers (dw_act's max / min) or act1 for other kinds (the act kernel's bits). Every
 * output is computed once into ws; VW of them at a time are transposed back into the nch planes of
 * Y (the plane's or row's last VW overlapping the ones before). Like the long rows it adds the
 * padding's 0·w taps (conv.c sends the planes where that could change a bit to the twin). */
#if VW == 8
#define TRL4 0, 1, 2, 3, 8, 9, 10, 11
#define TRH4 4, 5, 6, 7, 12, 13, 14, 15
#define TRL2 0, 1, 8, 9, 4, 5, 12, 13
#define TRH2 2, 3, 10, 11, 6, 7, 14, 15
#define TRL1 0, 8, 2, 10, 4, 12, 6, 14
#define TRH1 1, 9, 3, 11, 5, 13, 7, 15
#endif
/* stage d swaps bit d of the row index with bit d of the column index: after every stage, r[i][j]
 * holds the old r[j][i] */
#define TR_STAGE(D, LO, HI)                                                                                       \
    for (int i = 0; i < VW; i++)                                                                                   \
        if (!(i & (D))) {                                                                                          \
            vf a_ = r[i], b_ = r[i + (D)];                                                                         \
            r[i] = __builtin_shufflevector(a_, b_, LO), r[i + (D)] = __builtin_shufflevector(a_, b_, HI);         \
        }
static inline __attribute__((always_inline)) void dwl_transpose(vf *r) {
#if VW == 16
    /* 16 lanes: two in-lane stages (unpack, then pairs of pairs: cheap shuffles on x86) leave
     * v[4j + k] holding, in 128-bit lane L, rows 4j .. 4j + 3 of column 4L + k; two stages of
     * 128-bit-lane shuffles gather column c = 4L + k from lane L of v[k], v[4 + k], v[8 + k],
     * v[12 + k] (measured faster than the bit stages below, whose first one is a two-source
     * permute each) */
    vf u[16], v[16];
    for (int i = 0; i < 8; i++) {
        u[2 * i] = __builtin_shufflevector(r[2 * i], r[2 * i + 1], 0, 16, 1, 17, 4, 20, 5, 21, 8, 24, 9, 25, 12, 28,
                                           13, 29);
        u[2 * i + 1] = __builtin_shufflevector(r[2 * i], r[2 * i + 1], 2, 18, 3, 19, 6, 22, 7, 23, 10, 26, 11, 27, 14,
                                               30, 15, 31);
    }
    for (int j = 0; j < 4; j++)
        for (int h = 0; h < 2; h++) {
            vf a_ = u[4 * j + h], b_ = u[4 * j + h + 2];
            v[4 * j + 2 * h] = __builtin_shufflevector(a_, b_, 0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29);
            v[4 * j + 2 * h + 1] =
                __builtin_shufflevector(a_, b_, 2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31);
        }
#define F88 0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27
#define FDD 4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31
    for (int k = 0; k < 4; k++) {
        u[k] = __builtin_shufflevector(v[k], v[4 + k], F88), u[4 + k] = __builtin_shufflevector(v[k], v[4 + k], FDD);
        u[8 + k] = __builtin_shufflevector(v[8 + k], v[12 + k], F88);
        u[12 + k] = __builtin_shufflevector(v[8 + k], v[12 + k], FDD);
    }
    for (int k = 0; k < 4; k++) {
        r[k] = __builtin_shufflevector(u[k], u[8 + k], F88), r[8 + k] = __builtin_shufflevector(u[k], u[8 + k], FDD);
        r[4 + k] = __builtin_shufflevector(u[4 + k], u[12 + k], F88);
        r[12 + k] = __builtin_shufflevector(u[4 + k], u[12 + k], FDD);
    }
#undef F88
#undef FDD
#else
    TR_STAGE(4, TRL4, TRH4)
    TR_STAGE(2, TRL2, TRH2)
    TR_STAGE(1, TRL1, TRH1)
#endif
}
#undef TR_STAGE

/* t[l·VW + i] = x[l·P + i] for l < nch, i < m; 0 elsewhere (a block at a plane's edge or past the
 * last channel, through memory: the whole-vector path keeps its block in registers) */
static __attribute__((noinline)) void dwl_load_part(float *t, const float *x, int64_t P, int64_t nch, int64_t m) {
    memset(t, 0, VW * VW * sizeof(float));
    for (int64_t l = 0; l < nch; l++) memcpy(t + l * VW, x + l * P, (size_t)m * sizeof(float));
}
static __attribute__((noinline)) void dwl_store_part(const float *t, float *y, int64_t P, int64_t nch, int64_t m) {
    for (int64_t l = 0; l < nch; l++) memcpy(y + l * P, t + l * VW, (size_t)m * sizeof(float));
}

/* n_rows rows of W pixels of nch planes (plane l at x + l·P) into the buffer: pixel (h, w) of them
 * (h < n_rows) to dst + h·rs + (w + pl)·VW, as VW consecutive pixels at a time (the last VW
 * overlapping the ones before, fewer when there are fewer); missing channels' lanes get 0. */
static __attribute__((noinline)) void dwl_pack(const float *x, int64_t P, int64_t nch, int64_t n_rows, int64_t W,
                                               float *dst, int64_t rs, int64_t pl) {
    int64_t n = n_rows * W;
    for (int64_t q0 = 0; q0 < n; q0 += VW) {
        int64_t qq = q0 + VW <= n ? q0 : (n >= VW ? n - VW : 0), m = n < VW ? n : VW;
        vf r[VW];
        if (nch == VW && m == VW) {
            for (int l = 0; l < VW; l++) r[l] = ld(x + l * P + qq);
        } else {
            float t[VW * VW];
            dwl_load_part(t, x + qq, P, nch, m);
            for (int l = 0; l < VW; l++) r[l] = ld(t + l * VW);
        }
        dwl_transpose(r);
        if (n_rows == 1) {
            float *d = dst + (qq + pl) * VW;
            for (int i = 0; i < VW; i++)
                if (i < m) st(d + i * VW, r[i]);
            continue;
        }
        int64_t h = qq / W, w = qq % W;
        float *d = dst + h * rs + (w + pl) * VW;
        for (int i = 0; i < VW; i++)
            if (i < m) {
                st(d, r[i]);
                d += VW;
                if (++w == W) w = 0, d += rs - W * VW;
            }
    }
}

/* ob's m pixel vectors, transposed, to y + l·P for channels l < nch (m floats each) */
static inline __attribute__((always_inline)) void dwl_unpack(const float *ob, float *y, int64_t P, int64_t nch,
                                                             int64_t m) {
    vf r[VW];
    for (int i = 0; i < VW; i++) r[i] = ld(ob + i * VW);
    dwl_transpose(r);
    if (nch == VW && m == VW) {
        for (int l = 0; l < VW; l++) st(y + l * P, r[l]);
        return;
    }
    float t[VW * VW];
    for (int l = 0; l < VW; l++) st(t + l * VW, r[l]);
    dwl_store_part(t, y, P, nch, m);
}

/* one output pixel: tap (kh, kw)'s vector at A (B, C for kh = 1, 2) + kw·cs */
#define DWL9(A, B, C, CS)                                                                                          \
    (((((((((bv + ld(A) * w0) + ld((A) + (CS)) * w1) + ld((A) + 2 * (CS)) * w2) + ld(B) * w3) +                      \
         ld((B) + (CS)) * w4) + ld((B) + 2 * (CS)) * w5) + ld(C) * w6) + ld((C) + (CS)) * w7) +                       \
     ld((C) + 2 * (CS)) * w8)

#if VW == 16
#define DWL_NB 4 /* (32 registers) */
#else
#define DWL_NB 2
#endif

/* A block's constants: the bias and taps of its channels, one lane each (0 in missing channels'). */
typedef struct dwl_k {
    vf bv, wv[LITHE__DWCONV_MAX_TAPS];
    lithe__act c;
    int64_t KH, KW, cs; /* cs: floats from tap (kh, kw) to (kh, kw + 1) */
} dwl_k;

/* Output pixels i < m into ob + i·VW: pixel i's tap (kh, kw) at p[i] + dk[kh] + kw·cs. mode: 0 no
 * act, 1 relu, 2 clip, 3 clip with slope 1 (x·1 is x: no multiply), 5 clip with slope 1 and offset
 * +0 where no bias is -0 (no sum is -0 then, and x + 0 is x: no add), all by dw_act's max / min; 4
 * act1 (the act kernel's bits for any kind). */
static inline __attribute__((always_inline)) void dwl_px_impl(int64_t m, const float *const *p, const int64_t *dk,
                                                              const dwl_k *k, float *ob, int mode, bool nine) {
    vf bv = k->bv;
    lithe__act c = k->c;
    int64_t cs = k->cs;
#if DW_MINMAX
    vf lo = bcast(c.min_val), hi = bcast(c.max_val);
#define DWL_ACT(X)                                                                                                \
    (mode == 1   ? dw_relu(X)                                                                                     \
     : mode == 2 ? dw_max(lo, dw_min(hi, (X) * c.slope + c.offset))                                               \
     : mode == 3 ? dw_max(lo, dw_min(hi, (X) + c.offset))                                                          \
     : mode == 4 ? act1(&c, X)                                                                                     \
     : mode == 5 ? dw_max(lo, dw_min(hi, X))                                                                       \
                 : (X))
#else
#define DWL_ACT(X) (mode ? act1(&c, X) : (X))
#endif
    if (nine) {
        vf w0 = k->wv[0], w1 = k->wv[1], w2 = k->wv[2], w3 = k->wv[3], w4 = k->wv[4], w5 = k->wv[5], w6 = k->wv[6],
           w7 = k->wv[7], w8 = k->wv[8];
        int64_t d1 = dk[1], d2 = dk[2], i = 0;
        /* DWL_NB pixels side by side: their chains interleaved, so each add's wait on its own
         * chain's last one overlaps the others' (one chain at a time waits ~12 adds' latency) */
        for (; i + DWL_NB <= m; i += DWL_NB) {
            const float *a0 = p[i], *a1 = p[i + 1];
            vf c0 = bv, c1 = bv;
#if DWL_NB == 4
            const float *a2 = p[i + 2], *a3 = p[i + 3];
            vf c2 = bv, c3 = bv;
#define DWL_TAP(O, WT)                                                                                            \
    c0 = c0 + ld(a0 + (O)) * WT, c1 = c1 + ld(a1 + (O)) * WT, c2 = c2 + ld(a2 + (O)) * WT,                       \
    c3 = c3 + ld(a3 + (O)) * WT
#else
#define DWL_TAP(O, WT) c0 = c0 + ld(a0 + (O)) * WT, c1 = c1 + ld(a1 + (O)) * WT
#endif
            DWL_TAP(0, w0), DWL_TAP(cs, w1), DWL_TAP(2 * cs, w2);
            DWL_TAP(d1, w3), DWL_TAP(d1 + cs, w4), DWL_TAP(d1 + 2 * cs, w5);
            DWL_TAP(d2, w6), DWL_TAP(d2 + cs, w7), DWL_TAP(d2 + 2 * cs, w8);
#undef DWL_TAP
            st(ob + i * VW, DWL_ACT(c0));
            st(ob + (i + 1) * VW, DWL_ACT(c1));
#if DWL_NB == 4
            st(ob + (i + 2) * VW, DWL_ACT(c2));
            st(ob + (i + 3) * VW, DWL_ACT(c3));
#endif
        }
        for (; i < m; i++) {
            const float *a = p[i];
            vf acc = DWL9(a, a + d1, a + d2, cs);
            st(ob + i * VW, DWL_ACT(acc));
        }
        return;
    }
    for (int64_t i = 0; i < m; i++) {
        vf acc = bv;
        for (int64_t kh = 0, t = 0; kh < k->KH; kh++)
            for (int64_t kw = 0; kw < k->KW; kw++, t++) acc = acc + ld(p[i] + dk[kh] + kw * cs) * k->wv[t];
        st(ob + i * VW, DWL_ACT(acc));
    }
#undef DWL_ACT
}
#undef DWL9
typedef void (*dwl_px_fn)(int64_t m, const float *const *p, const int64_t *dk, const dwl_k *k, float *ob);
#define DWL_PX(MODE, NINE)                                                                                        \
    static void dwl_px_##MODE##_##NINE(int64_t m, const float *const *p, const int64_t *dk, const dwl_k *k,       \
                                       float *ob) {                                                              \
        dwl_px_impl(m, p, dk, k, ob, MODE, NINE);                                                                 \
    }
DWL_PX(0, 0)
DWL_PX(0, 1)
DWL_PX(1, 0)
DWL_PX(1, 1)
DWL_PX(2, 0)
DWL_PX(2, 1)
DWL_PX(3, 0)
DWL_PX(3, 1)
DWL_PX(4, 0)
DWL_PX(4, 1)
DWL_PX(5, 0)
DWL_PX(5, 1)
#undef DWL_PX

/* Whether a bias among b[0 .. n) is -0 (a sum from it may be -0, where x + 0 differs from x). */
static bool dwl_neg_zero(const float *b, int64_t n) {
    for (int64_t i = 0; b && i < n; i++)
        if (b[i] == 0.0f && signbit(b[i])) return true;
    return false;
}

static void K(dwconv_lanes)(const lithe__conv2d *g, int64_t nch, const float *X, const float *w, const float *b,
                            const lithe__act *a, float *Y, float *ws) {
    int64_t H = g->H, W = g->W, OH = g->OH, OW = g->OW, s0 = g->stride[0], d0 = g->dil[0], KH = g->KH,
            T = KH * g->KW, pt = g->pad[0], pl = g->pad[1];
    int64_t Hb, Wb, nr;
    lithe__dw_lanes_dims(g, VW, &Hb, &Wb, &nr);
    int64_t rs = Wb * VW, P = H * W, OP = OH * OW, ss = g->stride[1] * VW;
    float *xb = ws, *ob = ws + nr * rs;
    dwl_k k;
    k.KH = KH, k.KW = g->KW, k.cs = g->dil[1] * VW;
    /* the taps to lanes through memory: every store before the first load (a load that waits on
     * lane stores still in flight stalls; one such wait, not T) */
    float tw[LITHE__DWCONV_MAX_TAPS + 1][VW];
    for (int l = 0; l < VW; l++) {
        for (int64_t t = 0; t < T; t++) tw[t][l] = l < nch ? w[l * T + t] : 0.0f;
        tw[T][l] = l < nch && b ? b[l] : 0.0f;
    }
    for (int64_t t = 0; t < T; t++) k.wv[t] = ld(tw[t]);
    k.bv = ld(tw[T]);
    lithe__act_kind kind = a ? a->kind : LITHE__ACT_RELU;
    int mode = !a                                                                          ? 0
               : kind == LITHE__ACT_RELU                                                   ? 1
               : kind != LITHE__ACT_CLIPPED_LINEAR || !(a->min_val <= a->max_val)          ? 4
               : a->slope != 1.0f                                                          ? 2
               : !(a->offset == 0.0f && !signbit(a->offset)) || dwl_neg_zero(b, nch) ? 3
                                                                                           : 5;
    k.c = a ? *a : (lithe__act){0};
    bool nine = KH == 3 && g->KW == 3;
    static const dwl_px_fn fns[6][2] = {{dwl_px_0_0, dwl_px_0_1}, {dwl_px_1_0, dwl_px_1_1}, {dwl_px_2_0, dwl_px_2_1},
                                        {dwl_px_3_0, dwl_px_3_1}, {dwl_px_4_0, dwl_px_4_1}, {dwl_px_5_0, dwl_px_5_1}};
    dwl_px_fn px = fns[mode][nine];
    const float *p[VW];
    int64_t dk[LITHE__DWCONV_MAX_TAPS]; /* tap row kh from row 0 (KH <= T) */
    /* every output pixel once into ob (the plane's, or the row's), then VW of them at a time out to Y,
     * the last VW overlapping the ones before */
    if (nr == Hb) { /* the whole plane (its border zero from the caller, never written here) */
        dwl_pack(X, P, nch, H, W, xb + pt * rs, rs, pl);
        for (int64_t kh = 0; kh < KH; kh++) dk[kh] = kh * d0 * rs;
        for (int64_t p0 = 0, oh = 0, ow = 0; p0 < OP; p0 += VW) {
            int64_t m = OP - p0 < VW ? OP - p0 : VW;
            for (int64_t i = 0; i < m; i++) {
                p[i] = xb + oh * s0 * rs + ow * ss;
                if (++ow == OW) ow = 0, oh++;
            }
            px(m, p, dk, &k, ob + p0 * VW);
        }
        for (int64_t p0 = 0; p0 < OP; p0 += VW) {
            int64_t pp = p0 + VW <= OP ? p0 : (OP >= VW ? OP - VW : 0), m = OP < VW ? OP : VW;
            dwl_unpack(ob + pp * VW, Y + pp, OP, nch, m);
        }
        return;
    }
    /* a ring of nr rows: padded row pr in row pr mod nr, filled just before the first output row
     * that reads it (nr >= (KH - 1)·d0 + 1: an output row's taps) */
    int64_t next = 0;
    for (int64_t oh = 0; oh < OH; oh++) {
        for (int64_t need = oh * s0 + (KH - 1) * d0 + 1; next < need; next++) {
            float *row = xb + next % nr * rs;
            int64_t h = next - pt;
            if (h < 0 || h >= H) memset(row + pl * VW, 0, (size_t)(W * VW) * sizeof(float));
            else dwl_pack(X + h * W, P, nch, 1, W, row, rs, pl);
        }
        const float *r0 = xb + oh * s0 % nr * rs;
        for (int64_t kh = 0; kh < KH; kh++) dk[kh] = (oh * s0 + kh * d0) % nr * rs - oh * s0 % nr * rs;
        for (int64_t p0 = 0; p0 < OW; p0 += VW) {
            int64_t m = OW - p0 < VW ? OW - p0 : VW;
            for (int64_t i = 0; i < m; i++) p[i] = r0 + (p0 + i) * ss;
            px(m, p, dk, &k, ob + p0 * VW);
        }
        for (int64_t p0 = 0; p0 < OW; p0 += VW) {
            int64_t pp = p0 + VW <= OW ? p0 : (OW >= VW ? OW - VW : 0), m = OW < VW ? OW : VW;
            dwl_unpack(ob + pp * VW, Y + oh * OW + pp, OP, nch, m);
        }
    }
}
#undef TRL1
#undef TRH1
#undef TRL2
#undef TRH2
#undef TRL4
#undef TRH4
#endif /* VW >= 8 */

#if VW >= 8 /* (the 8- and 16-lane tables: conv.c takes it where the table has it) */
/* A 3x3 depthwise plane read in place (conv.c's depthwise_planes_3x3): padding 1 at the top and left, stride s
 * (1: OH = H, OW = W, padding 1 all round; 2: 2·OH <= H, 2·OW <= W, so no bottom or right padding is
 * ever read), W >= VW at stride 1, OW >= VW at stride 2. Each output row's sum is the twin's, bias +
 * taps in (kh, kw) order, the padding rows' taps skipped (as the twin skips them) and the padding
 * columns' lanes added as 0·w (conv.c's dw_plane_padded_ok rule, as the long rows). Input rows are
 * read once per column strip, top to bottom: a row's three shifted vectors feed every output row that
 * reads it (stride 1: rows r + 1, r, r - 1 with tap rows 0, 1, 2; stride 2: row 2o + 1 is tap row 2 of
 * output o and tap row 0 of o + 1), so each output's taps still arrive in order while the loads drop
 * from nine per output vector to three (stride 1) or four and three shuffles per input row (stride
 * 2: even / odd columns split in registers), and no padded copy is made. Up to four strips of VW
 * output columns side by side (their chains overlap; the last strip overlaps the one before). */
#if VW == 16
#define D3_SHR 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30
#define D3_SHL 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16
#define D3_EV 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30
#define D3_OD 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31
#define D3_NS 4
#else
#define D3_SHR 7, 8, 9, 10, 11, 12, 13, 14
#define D3_SHL 1, 2, 3, 4, 5, 6, 7, 8
#define D3_EV 0, 2, 4, 6, 8, 10, 12, 14
#define D3_OD 1, 3, 5, 7, 9, 11, 13, 15
#define D3_NS 2 /* (16 registers) */
#endif
typedef struct d3_k {
    vf w[9], bv;
    lithe__act c;
} d3_k;

/* row xr's taps kw = 0, 1, 2 for outputs qq .. qq + VW - 1 (input columns (qq + i)·s - 1 + kw) */
static inline __attribute__((always_inline)) void d3_taps(const float *xr, int64_t qq, int64_t W, int s, vf *t) {
    vf z = splat(0.0f);
    if (s == 1) {
        vf v = ld(xr + qq);
        t[1] = v;
        t[0] = qq ? ld(xr + qq - 1) : __builtin_shufflevector(z, v, D3_SHR);
        t[2] = qq + VW < W ? ld(xr + qq + 1) : __builtin_shufflevector(v, z, D3_SHL);
    } else {
        vf a = ld(xr + 2 * qq), b = ld(xr + 2 * qq + VW);
        t[1] = __builtin_shufflevector(a, b, D3_EV);
        t[2] = __builtin_shufflevector(a, b, D3_OD);
        if (qq) {
            vf a1 = ld(xr + 2 * qq - 1), b1 = ld(xr + 2 * qq - 1 + VW);
            t[0] = __builtin_shufflevector(a1, b1, D3_EV);
        } else {
            t[0] = __builtin_shufflevector(z, t[2], D3_SHR);
        }
    }
}
#define D3_ROW(ACC, T, K0) ((((ACC) + (T)[0] * w[K0]) + (T)[1] * w[(K0) + 1]) + (T)[2] * w[(K0) + 2])
/* the output's act (mode as d3_strips'; c, lo, hi and zero are the caller's locals) */
#define D3_OUT(V)                                                                                                 \
    (mode == 1 ? dw_relu(V) : mode == 2 ? dw_act(&c, V) : mode == 3 ? dw_max(lo, dw_min(hi, V)) : (V))

/* NS strips from output columns qs[0 .. NS) down the whole plane. mode: 0 no act, 1 relu, 2 clip
 * (dw_act), 3 clip with slope 1 and offset +0 (x·1 + 0 is x: no sum
 * is -0 without a -0 bias, which takes mode 2) */
static inline __attribute__((always_inline)) void d3_strips(int NS, int s, int64_t H, int64_t W, int64_t o0,
                                                            int64_t o1, int64_t OW, const float *x, float *y,
                                                            const int64_t *qs, const d3_k *k, int mode) {
    vf A[D3_NS], B[D3_NS], t[D3_NS][3], w[9], bv = k->bv; /* (locals: y's stores cannot alias them) */
    for (int i = 0; i < 9; i++) w[i] = k->w[i];
    lithe__act c = k->c;
    c.kind = mode == 1 ? LITHE__ACT_RELU : LITHE__ACT_CLIPPED_LINEAR;
    vf lo = bcast(c.min_val), hi = bcast(c.max_val);
    if (s == 1) { /* output rows [o0, o1) */
        for (int j = 0; j < NS; j++) {
            if (o0) { /* output o0: bias, row o0 - 1's tap row 0, then row o0's tap row 1 */
                d3_taps(x + (o0 - 1) * W, qs[j], W, 1, t[j]);
                A[j] = D3_ROW(bv, t[j], 0);
                d3_taps(x + o0 * W, qs[j], W, 1, t[j]);
                A[j] = D3_ROW(A[j], t[j], 3);
            } else { /* output 0: bias, then row 0's tap row 1 (row -1 is padding) */
                d3_taps(x, qs[j], W, 1, t[j]);
                A[j] = D3_ROW(bv, t[j], 3);
            }
            B[j] = D3_ROW(bv, t[j], 0);
        }
        int64_t r = o0 + 1, last = o1 < H - 1 ? o1 : H - 1;
        for (; r <= last; r++) { /* A: output r - 1 (tap row 2 from row r), B: output r */
            const float *xr = x + r * W;
            for (int j = 0; j < NS; j++) {
                d3_taps(xr, qs[j], W, 1, t[j]);
                vf done = D3_ROW(A[j], t[j], 6);
                A[j] = D3_ROW(B[j], t[j], 3);
                B[j] = D3_ROW(bv, t[j], 0);
                st(y + (r - 1) * OW + qs[j], D3_OUT(done));
            }
        }
        if (o1 == H) /* row H is padding */
            for (int j = 0; j < NS; j++) st(y + (H - 1) * OW + qs[j], D3_OUT(A[j]));
    } else {
        for (int j = 0; j < NS; j++) { /* output o0's tap row 0: row 2·o0 - 1 (padding for o0 = 0) */
            B[j] = bv;
            if (o0) {
                d3_taps(x + (2 * o0 - 1) * W, qs[j], W, 2, t[j]);
                B[j] = D3_ROW(bv, t[j], 0);
            }
        }
        for (int64_t o = o0; o < o1; o++) { /* B: output o, from rows 2o - 1 (done), 2o, 2o + 1 */
            const float *xr = x + 2 * o * W;
            for (int j = 0; j < NS; j++) {
                d3_taps(xr, qs[j], W, 2, t[j]);
                A[j] = D3_ROW(B[j], t[j], 3);
            }
            for (int j = 0; j < NS; j++) {
                d3_taps(xr + W, qs[j], W, 2, t[j]);
                vf done = D3_ROW(A[j], t[j], 6);
                B[j] = D3_ROW(bv, t[j], 0);
                st(y + o * OW + qs[j], D3_OUT(done));
            }
        }
    }
}

/* Rows more than two strip groups wide in bands of 12 output rows, each band's groups in turn (so
 * a group's pass reads the band's input rows from L1 after the one before: mobilenet_v2 on AVX2,
 * 8 lanes, 7 groups across 112: 32 x 112x112 227 -> 186-201 us, 96 x 112 -> 56 238 -> 193-201,
 * 144 x 56x56 188 -> 140-149; two groups, AVX-512's 112, measured no better banded) */
static inline __attribute__((always_inline)) void d3_plane(int s, int64_t H, int64_t W, int64_t OH, int64_t OW,
                                                           const float *x, float *y, const d3_k *k, int mode) {
    int64_t qs[D3_NS], R = OW > 2 * D3_NS * VW ? 12 : OH;
    for (int64_t o0 = 0; o0 < OH; o0 += R) {
        int64_t o1 = o0 + R < OH ? o0 + R : OH;
        for (int64_t q0 = 0; q0 < OW; q0 += D3_NS * VW) {
            int ns = 0;
            for (int64_t q = q0; q < OW && ns < D3_NS; q += VW) qs[ns++] = q + VW <= OW ? q : OW - VW;
#if D3_NS == 4
            if (ns == 4) d3_strips(4, s, H, W, o0, o1, OW, x, y, qs, k, mode);
            else if (ns == 3) d3_strips(3, s, H, W, o0, o1, OW, x, y, qs, k, mode);
            else
#endif
                if (ns == 2) d3_strips(2, s, H, W, o0, o1, OW, x, y, qs, k, mode);
            else d3_strips(1, s, H, W, o0, o1, OW, x, y, qs, k, mode);
        }
    }
}
#define D3_FN(S, MODE)                                                                                            \
    static void d3_##S##_##MODE(int64_t H, int64_t W, int64_t OH, int64_t OW, const float *x, float *y,          \
                                const d3_k *k) {                                                               \
        d3_plane(S, H, W, OH, OW, x, y, k, MODE);                                                                \
    }
D3_FN(1, 0)
D3_FN(1, 1)
D3_FN(1, 2)
D3_FN(1, 3)
D3_FN(2, 0)
D3_FN(2, 1)
D3_FN(2, 2)
D3_FN(2, 3)
#undef D3_FN

#if VW == 16 && defined(__AVX512F__)
/* Planes under 8 wide (mobilenet's 7x7 and 14 -> 7 at stride 2), two at a time: plane p's row in
 * lanes 0-7 and plane p + 1's in lanes 8-15 (masked loads; lanes past a row are 0, so the shifts by
 * one lane bring in 0 at both planes' edges), each plane's taps and bias in its half, then the same
 * rolling rows as d3_strips (the twin's order per lane). Stride 2: a row's even and odd columns
 * gathered from both planes' rows by one two-source permute each (lanes past OW zeroed). */
#define D3P_SHR 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30
#define D3P_SHL 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16
static inline __attribute__((always_inline)) void d3p_taps(const float *x0, const float *x1, int64_t W, int64_t OW,
                                                           int s, vf *t) {
    vf z = splat(0.0f);
    if (s == 1) {
        __mmask16 m = (__mmask16)((1u << W) - 1);
        __m512 v0 = _mm512_maskz_loadu_ps(m, x0), v1 = _mm512_maskz_loadu_ps(m, x1);
        vf v = (vf)_mm512_shuffle_f32x4(v0, v1, 0x44); /* v0's lanes 0-7, v1's 0-7 */
        t[0] = __builtin_shufflevector(z, v, D3P_SHR);
        t[1] = v;
        t[2] = __builtin_shufflevector(v, z, D3P_SHL);
    } else {
        __mmask16 m = (__mmask16)((1u << W) - 1), mo = (__mmask16)(((1u << OW) - 1) * 0x101u);
        __m512 a = _mm512_maskz_loadu_ps(m, x0), b = _mm512_maskz_loadu_ps(m, x1);
        const __m512i ev = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
        const __m512i od = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
        t[1] = (vf)_mm512_maskz_permutex2var_ps(mo, a, ev, b);
        t[2] = (vf)_mm512_maskz_permutex2var_ps(mo, a, od, b);
        t[0] = __builtin_shufflevector(z, t[2], D3P_SHR);
    }
}
/* (index vectors above: lanes 8-15 read b from its lane 0 as 16 + 2i, 16 + 2i + 1) */
static inline __attribute__((always_inline)) void d3p_st(float *y0, float *y1, int64_t OW, vf v) {
    __mmask16 m = (__mmask16)((1u << OW) - 1);
    _mm512_mask_storeu_ps(y0, m, (__m512)v);
    if (y1) _mm512_mask_storeu_ps(y1, m, _mm512_shuffle_f32x4((__m512)v, (__m512)v, 0xee)); /* lanes 8-15 down */
}
static inline __attribute__((always_inline)) void d3p_pair(int s, int64_t H, int64_t W, int64_t OH, int64_t OW,
                                                           const float *x0, const float *x1, float *y0, float *y1,
                                                           const float *w0, const float *w1, float b0, float b1,
                                                           const lithe__act *a, int mode) {
    vf w[9], t[3], A, B;
    for (int i = 0; i < 9; i++) w[i] = (vf)_mm512_mask_blend_ps(0xff00, (__m512)bcast(w0[i]), (__m512)bcast(w1[i]));
    vf bv = (vf)_mm512_mask_blend_ps(0xff00, (__m512)bcast(b0), (__m512)bcast(b1));
    lithe__act c = mode ? *a : (lithe__act){0};
    c.kind = mode == 1 ? LITHE__ACT_RELU : LITHE__ACT_CLIPPED_LINEAR;
    vf lo = bcast(c.min_val), hi = bcast(c.max_val);
    if (s == 1) {
        d3p_taps(x0, x1, W, OW, 1, t);
        A = D3_ROW(bv, t, 3);
        B = D3_ROW(bv, t, 0);
        for (int64_t r = 1; r < H; r++) {
            d3p_taps(x0 + r * W, x1 + r * W, W, OW, 1, t);
            vf done = D3_ROW(A, t, 6);
            A = D3_ROW(B, t, 3);
            B = D3_ROW(bv, t, 0);
            d3p_st(y0 + (r - 1) * OW, y1 ? y1 + (r - 1) * OW : NULL, OW, D3_OUT(done));
        }
        d3p_st(y0 + (H - 1) * OW, y1 ? y1 + (H - 1) * OW : NULL, OW, D3_OUT(A));
    } else {
        B = bv;
        for (int64_t o = 0; o < OH; o++) {
            d3p_taps(x0 + 2 * o * W, x1 + 2 * o * W, W, OW, 2, t);
            A = D3_ROW(B, t, 3);
            d3p_taps(x0 + (2 * o + 1) * W, x1 + (2 * o + 1) * W, W, OW, 2, t);
            vf done = D3_ROW(A, t, 6);
            B = D3_ROW(bv, t, 0);
            d3p_st(y0 + o * OW, y1 ? y1 + o * OW : NULL, OW, D3_OUT(done));
        }
    }
}
/* n planes in pairs (an odd last one paired with itself, its copy not stored) */
static inline __attribute__((always_inline)) void d3p_planes(int s, int64_t n, int64_t H, int64_t W, int64_t OH,
                                                             int64_t OW, const float *x, float *y, const float *w,
                                                             const float *b, const lithe__act *a, int mode) {
    for (int64_t i = 0; i < n; i += 2) {
        int64_t j = i + 1 < n ? i + 1 : i;
        d3p_pair(s, H, W, OH, OW, x + i * H * W, x + j * H * W, y + i * OH * OW, j > i ? y + j * OH * OW : NULL,
                 w + 9 * i, w + 9 * j, b ? b[i] : 0.0f, b ? b[j] : 0.0f, a, mode);
    }
}
#define D3P_FN(S, MODE)                                                                                           \
    static void d3p_##S##_##MODE(int64_t n, int64_t H, int64_t W, int64_t OH, int64_t OW, const float *x,       \
                                 float *y, const float *w, const float *b, const lithe__act *a) {              \
        d3p_planes(S, n, H, W, OH, OW, x, y, w, b, a, MODE);                                                     \
    }
D3P_FN(1, 0)
D3P_FN(1, 1)
D3P_FN(1, 2)
D3P_FN(1, 3)
D3P_FN(2, 0)
D3P_FN(2, 1)
D3P_FN(2, 2)
D3P_FN(2, 3)
#undef D3P_FN
#undef D3P_SHR
#undef D3P_SHL
#endif

/* n planes: x + i·H·W into y + i·OH·OW, taps w + 9i, bias b[i] (b NULL: 0) */
static void K(dwconv3x3)(int64_t n, int64_t H, int64_t W, int64_t s, int64_t OH, int64_t OW, const float *x,
                         float *y, const float *w, const float *b, const lithe__act *a) {
    lithe__act_kind kind = a ? a->kind : LITHE__ACT_RELU;
    int mode = !a                                                                                  ? 0
               : kind == LITHE__ACT_RELU                                                           ? 1
               : kind != LITHE__ACT_CLIPPED_LINEAR || !(a->min_val <= a->max_val)                  ? -1 /* act after */
               : a->slope == 1.0f && a->offset == 0.0f && !signbit(a->offset) && !dwl_neg_zero(b, n) ? 3
                                                                                                   : 2;
    int m = mode < 0 ? 0 : mode;
#if VW == 16 && defined(__AVX512F__)
    /* planes under 8 wide two at a time (960 x 7x7: 28 -> 23 us, 576 x 14 -> 7: 24 -> 17 against the
     * lanes, kernel loop); rows under 16 wide (14 and 28 -> 14) by the eight-lane kernel: two strips of 8 use 14 of
     * 16 lanes, and on Zen 4 a 256-bit multiply or add does half a 512-bit one's work at twice the
     * rate (384 x 14x14: 28 us against the lanes' 34) */
    if (s == 1 ? W < 8 : OW < 8 && W <= 16) {
        typedef void (*pfn)(int64_t, int64_t, int64_t, int64_t, int64_t, const float *, float *, const float *,
                            const float *, const lithe__act *);
        static const pfn pfns[2][4] = {{d3p_1_0, d3p_1_1, d3p_1_2, d3p_1_3}, {d3p_2_0, d3p_2_1, d3p_2_2, d3p_2_3}};
        pfns[s == 2][m](n, H, W, OH, OW, x, y, w, b, a);
        if (mode < 0) K(act)(a, n * OH * OW, y, y);
        return;
    }
    if ((s == 1 ? W : OW) < VW) {
        lithe__simd_avx2.dwconv3x3(n, H, W, s, OH, OW, x, y, w, b, a);
        return;
    }
#endif
    typedef void (*fn)(int64_t, int64_t, int64_t, int64_t, const float *, float *, const d3_k *);
    static const fn fns[2][4] = {{d3_1_0, d3_1_1, d3_1_2, d3_1_3}, {d3_2_0, d3_2_1, d3_2_2, d3_2_3}};
    d3_k k;
    k.c = a ? *a : (lithe__act){0};
    for (int64_t i = 0; i < n; i++) {
        for (int t = 0; t < 9; t++) k.w[t] = bcast(w[9 * i + t]);
        k.bv = bcast(b ? b[i] : 0.0f);
        fns[s == 2][m](H, W, OH, OW, x + i * H * W, y + i * OH * OW, &k);
    }
    if (mode < 0) K(act)(a, n * OH * OW, y, y);
}
#undef D3_ROW
#undef D3_OUT
#undef D3_SHR
#undef D3_SHL
#undef D3_EV
#undef D3_OD
#undef D3_NS
#endif /* VW >= 8 */

/* One output row of 2x2 stride-2 max pooling without padding: y[o] = the first maximum of r0[2o],
 * r0[2o + 1], r1[2o], r1[2o + 1] (the twin's tap order, `>` so the first wins and a NaN is never
 * taken after the first tap), which[o] = its index in the plane, base (= 2·oh·W) + 2o + 0 | 1 | W | W + 1;
 * which NULL (inference): y only, no index arithmetic. Eight and then four columns at a time (pooled
 * maps are narrow: 14, 7), deinterleaving pairs with shuffles, selecting without branches (random
 * data mispredicts them); the last columns rerun a block ending at the row's end (overlapping the
 * one before it, writing the same values again: padded copies cost more than the pooling on 7- and
 * 14-wide rows), rows under 4 wide one column at a time. Bit-identical to the twin. */
#define MAXPOOL_BLOCK(NL, EVEN, ODD, R0, R1, O, Y, WHICH, KEEP)                                                    \
    do {                                                                                                          \
        typedef float vfl __attribute__((vector_size(4 * (NL))));                                                  \
        typedef int32_t vil __attribute__((vector_size(4 * (NL))));                                                \
        vfl a0, a1, b0, b1;                                                                                       \
        memcpy(&a0, (R0), sizeof a0), memcpy(&a1, (R0) + (NL), sizeof a1);                                        \
        memcpy(&b0, (R1), sizeof b0), memcpy(&b1, (R1) + (NL), sizeof b1);                                        \
        vfl t[4] = {__builtin_shufflevector(a0, a1, EVEN), __builtin_shufflevector(a0, a1, ODD),                  \
                    __builtin_shufflevector(b0, b1, EVEN), __builtin_shufflevector(b0, b1, ODD)};                 \
        int32_t d[4] = {0, 1, (int32_t)W, (int32_t)W + 1};                                                        \
        vfl best = t[0];                                                                                          \
        vil off = (vil){0};                                                                                       \
        for (int q = 1; q < 4; q++) {                                                                             \
            vil gt = t[q] > best;                                                                                 \
            best = (vfl)((gt & (vil)t[q]) | (~gt & (vil)best));                                                   \
            if (KEEP) off = (gt & ((vil){0} + d[q])) | (~gt & off);                                               \
        }                                                                                                         \
        memcpy((Y), &best, sizeof best);                                                                          \
        if (KEEP) {                                                                                               \
            vil idx;                                                                                              \
            for (int l = 0; l < (NL); l++) idx[l] = base + 2 * (int32_t)((O) + l);                                \
            idx += off;                                                                                           \
            memcpy((WHICH), &idx, sizeof idx);                                                                    \
        }                                                                                                         \
    } while (0)
#define EVEN8 0, 2, 4, 6, 8, 10, 12, 14
#define ODD8 1, 3, 5, 7, 9, 11, 13, 15
#define EVEN4 0, 2, 4, 6
#define ODD4 1, 3, 5, 7
static inline __attribute__((always_inline)) void maxpool_row_impl(int64_t n, const float *r0, const float *r1,
                                                                   int64_t W, int32_t base, float *y,
                                                                   int32_t *which, const bool keep) {
    int64_t o = 0;
    int32_t sink[8]; /* !keep: the blocks' index stores (dead code) go here, never through NULL */
#define MP8(O) MAXPOOL_BLOCK(8, EVEN8, ODD8, r0 + 2 * (O), r1 + 2 * (O), (O), y + (O), keep ? which + (O) : sink, keep)
#define MP4(O) MAXPOOL_BLOCK(4, EVEN4, ODD4, r0 + 2 * (O), r1 + 2 * (O), (O), y + (O), keep ? which + (O) : sink, keep)
    for (; o + 8 <= n; o += 8) MP8(o);
    if (o < n && n >= 8 && n - o > 4) { /* the last block overlaps the one before: same values again */
        MP8(n - 8);
        o = n;
    }
    for (; o + 4 <= n; o += 4) MP4(o);
    if (o < n && n >= 4) {
        MP4(n - 4);
        o = n;
    }
#undef MP8
#undef MP4
    for (; o < n; o++) { /* rows narrower than 4 */
        const float t[4] = {r0[2 * o], r0[2 * o + 1], r1[2 * o], r1[2 * o + 1]};
        const int32_t d[4] = {0, 1, (int32_t)W, (int32_t)W + 1};
        float best = t[0];
        int32_t off = 0;
        for (int q = 1; q < 4; q++) {
            const bool gt = t[q] > best;
            best = gt ? t[q] : best;
            off = gt ? d[q] : off;
        }
        y[o] = best;
        if (keep) which[o] = base + 2 * (int32_t)o + off;
    }
}
#if VB == 64 && defined(__AVX512F__)
/* AVX-512: sixteen columns per block from masked loads of the rows' 2m floats (m <= 16 columns;
 * masked-off lanes are not read), deinterleaved by two-source permutes, the four taps selected in
 * the twin's order (maxps(v, best) = v > best ? v : best: best kept on ties and NaN; with which,
 * the same selection by a `>` compare mask) and m columns stored: one block for LeNet's 14- and
 * 7-wide rows, where the 8- and 4-wide blocks above ran two overlapping ones (training, with
 * which; inference pools whole ranges through maxpool2x2_rows below). */
static inline __attribute__((always_inline)) void maxpool_row16(int64_t n, const float *r0, const float *r1,
                                                                int64_t W, int32_t base, float *y, int32_t *which) {
    const __m512i ev = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i od = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    const __m512i lane2 = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    for (int64_t o = 0; o < n; o += 16) {
        int64_t m = n - o < 16 ? n - o : 16, f = 2 * m; /* columns, floats per row */
        __mmask16 lo = f >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << f) - 1);
        __mmask16 hi = f >= 32 ? (__mmask16)0xFFFF : f <= 16 ? (__mmask16)0 : (__mmask16)((1u << (f - 16)) - 1);
        __mmask16 sm = m >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << m) - 1);
        const float *p0 = r0 + 2 * o, *p1 = r1 + 2 * o;
        __m512 a0 = _mm512_maskz_loadu_ps(lo, p0), a1 = _mm512_maskz_loadu_ps(hi, p0 + 16);
        __m512 b0 = _mm512_maskz_loadu_ps(lo, p1), b1 = _mm512_maskz_loadu_ps(hi, p1 + 16);
        __m512 t1 = _mm512_permutex2var_ps(a0, od, a1), t2 = _mm512_permutex2var_ps(b0, ev, b1);
        __m512 t3 = _mm512_permutex2var_ps(b0, od, b1), best = _mm512_permutex2var_ps(a0, ev, a1);
        if (!which) {
            best = _mm512_max_ps(t1, best);
            best = _mm512_max_ps(t2, best);
            best = _mm512_max_ps(t3, best);
        } else {
            __m512i off = _mm512_setzero_si512();
            __mmask16 gt = _mm512_cmp_ps_mask(t1, best, _CMP_GT_OQ);
            best = _mm512_mask_mov_ps(best, gt, t1), off = _mm512_mask_mov_epi32(off, gt, _mm512_set1_epi32(1));
            gt = _mm512_cmp_ps_mask(t2, best, _CMP_GT_OQ);
            best = _mm512_mask_mov_ps(best, gt, t2), off = _mm512_mask_mov_epi32(off, gt, _mm512_set1_epi32((int)W));
            gt = _mm512_cmp_ps_mask(t3, best, _CMP_GT_OQ);
            best = _mm512_mask_mov_ps(best, gt, t3);
            off = _mm512_mask_mov_epi32(off, gt, _mm512_set1_epi32((int)W + 1));
            __m512i idx = _mm512_add_epi32(_mm512_set1_epi32(base + 2 * (int32_t)o), _mm512_add_epi32(lane2, off));
            _mm512_mask_storeu_epi32(which + o, sm, idx);
        }
        _mm512_mask_storeu_ps(y + o, sm, best);
    }
}
/* R output rows at once (simd.h's maxpool2x2_rows, inference): rows at most 8 wide share a block,
 * G = 16 / n of them side by side in the lanes (each input row's 2n floats merged into two
 * registers by masked loads from its start moved back by its lane), so the evens and odds of a
 * block are those of its G rows in order, and their n·G outputs, adjacent in y, go out in one
 * store; rows 9-16 wide one block each, their masks computed once; wider rows by maxpool_row16.
 * LeNet's two pools at batch 32 (1 thread, Zen 4): 50 + 43 -> 22 + 21 us min in the model. */
/* The 16 outputs of a block from its top (t0, t1) and bottom (b0, b1) 32 floats: the evens and
 * odds by in-lane shuffles (each 128-bit lane: 2 columns of t0's lane, then 2 of t1's), the taps
 * selected in the twin's order lane by lane, one permute (fix) putting the columns in order. */
static inline __attribute__((always_inline)) __m512 pool4(__m512 t0, __m512 t1, __m512 b0, __m512 b1, __m512i fix) {
    __m512 best = _mm512_shuffle_ps(t0, t1, 0x88);
    best = _mm512_max_ps(_mm512_shuffle_ps(t0, t1, 0xDD), best);
    best = _mm512_max_ps(_mm512_shuffle_ps(b0, b1, 0x88), best);
    best = _mm512_max_ps(_mm512_shuffle_ps(b0, b1, 0xDD), best);
    return _mm512_permutexvar_ps(fix, best);
}
static void maxpool_rows16(int64_t R, int64_t n, const float *x, int64_t W, float *y) {
    if (n > 16) {
        for (int64_t r = 0; r < R; r++) maxpool_row16(n, x + 2 * r * W, x + (2 * r + 1) * W, W, 0, y + r * n, NULL);
        return;
    }
    const __m512i fix = _mm512_setr_epi32(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15);
    if (n > 8) { /* one row per block, its masks once */
        const __mmask16 hi = (__mmask16)((1u << (2 * n - 16)) - 1), sm = (__mmask16)((1u << n) - 1);
        for (int64_t r = 0; r < R; r++) {
            const float *pt = x + 2 * r * W, *pb = pt + W;
            __m512 t0 = _mm512_loadu_ps(pt), t1 = _mm512_maskz_loadu_ps(hi, pt + 16);
            __m512 b0 = _mm512_loadu_ps(pb), b1 = _mm512_maskz_loadu_ps(hi, pb + 16);
            _mm512_mask_storeu_ps(y + r * n, sm, pool4(t0, t1, b0, b1, fix));
        }
        return;
    }
    if (n <= 0) return;
    const int64_t G = 16 / n;
    __mmask16 m0[16], m1[16];
    for (int64_t i = 0; i < G; i++) { /* row i's lanes [2n i, 2n (i + 1)) of the 32 */
        uint32_t lanes = (uint32_t)(((1ull << (2 * n)) - 1) << (2 * n * i));
        m0[i] = (__mmask16)(lanes & 0xFFFF), m1[i] = (__mmask16)(lanes >> 16);
    }
    const __mmask16 full = (__mmask16)((1u << (n * G)) - 1);
    /* row i of a block starts 2W i floats after its first, moved back by its lane 2n i: d apart */
    const int64_t d = 2 * W - 2 * n;
    for (int64_t r = 0; r < R; r += G) {
        const int64_t g = R - r < G ? R - r : G;
        __m512i t0 = _mm512_setzero_si512(), t1 = t0, b0 = t0, b1 = t0;
        uintptr_t t = (uintptr_t)(x + 2 * r * W); /* as integers: moved back, it may precede x */
        for (int64_t i = 0; i < g; i++, t += (uintptr_t)(d * (int64_t)sizeof(float))) {
            /* masked-off lanes are not read, and are 0 for the OR (independent loads, where merging
             * loads would chain them) */
            const float *pt = (const float *)t, *pb = pt + W;
            t0 = _mm512_or_si512(t0, _mm512_maskz_loadu_epi32(m0[i], pt));
            t1 = _mm512_or_si512(t1, _mm512_maskz_loadu_epi32(m1[i], pt + 16));
            b0 = _mm512_or_si512(b0, _mm512_maskz_loadu_epi32(m0[i], pb));
            b1 = _mm512_or_si512(b1, _mm512_maskz_loadu_epi32(m1[i], pb + 16));
        }
        __m512 T0 = _mm512_castsi512_ps(t0), T1 = _mm512_castsi512_ps(t1);
        __m512 B0 = _mm512_castsi512_ps(b0), B1 = _mm512_castsi512_ps(b1);
        _mm512_mask_storeu_ps(y + r * n, g == G ? full : (__mmask16)((1u << (n * g)) - 1), pool4(T0, T1, B0, B1, fix));
    }
}
#endif
static void K(maxpool2x2_rows)(int64_t R, int64_t n, const float *x, int64_t W, float *y) {
#if VB == 64 && defined(__AVX512F__)
    maxpool_rows16(R, n, x, W, y);
#else
    for (int64_t r = 0; r < R; r++) maxpool_row_impl(n, x + 2 * r * W, x + (2 * r + 1) * W, W, 0, y + r * n, NULL, false);
#endif
}
static void K(maxpool2x2_row)(int64_t n, const float *r0, const float *r1, int64_t W, int32_t base, float *y,
                              int32_t *which) {
#if VB == 64 && defined(__AVX512F__)
    maxpool_row16(n, r0, r1, W, base, y, which);
    return;
#endif
    if (which) maxpool_row_impl(n, r0, r1, W, base, y, which, true);
    else maxpool_row_impl(n, r0, r1, W, base, y, NULL, false);
}
#undef EVEN8
#undef ODD8
#undef EVEN4
#undef ODD4
#undef MAXPOOL_BLOCK

const lithe__simd_kernels TABLE = {
    .isa = STR(LITHE_SIMD_ISA),
    .lanes = VW,
    .act = K(act),
    .act_backward = K(act_backward),
    .add_row = K(add_row),
    .sum_rows = K(sum_rows),
    .axpby = K(axpby),
    .mul = K(mul),
    .sum_squares = K(sum_squares),
    .adam = K(adam),
    .radam = K(radam),
    .update_averages = K(update_averages),
    .adam_step = K(adam_step),
    .softmax = K(softmax),
    .softmax_backward = K(softmax_backward),
    .log_softmax = K(log_softmax),
    .log_softmax_backward = K(log_softmax_backward),
    .layernorm = K(layernorm),
    .layernorm_backward_dx = K(layernorm_backward_dx),
    .layernorm_backward_dgb = K(layernorm_backward_dgb),
    .scatter_add_rows = K(scatter_add_rows),
    .unary = K(unary),
    .unary_backward = K(unary_backward),
    .maxout = K(maxout),
    .dwconv_taps = K(dwconv_taps),
    .copy_rows = K(copy_rows),
    .split_rows = K(split_rows),
#if VW >= 8
    .dwconv_lanes = K(dwconv_lanes),
    .dwconv3x3 = K(dwconv3x3),
#if VW == 16 && defined(__AVX512F__)
    .dwconv3x3_min_width = 1,
#else
    .dwconv3x3_min_width = 8,
#endif
#endif
    .maxpool2x2_row = K(maxpool2x2_row),
    .maxpool2x2_rows = K(maxpool2x2_rows),
    .binary = K(binary),
};
