/* AVX-512F SGEMM pieces (compiled with -mavx512f -mfma on x86-64 only; chosen at run time):
 * the MR x 32 microkernel (two zmm columns, MR broadcasts of A per step, one FMA per step into
 * each accumulator), the 16 x 16 transposing packer, and the M = 1 GEMV kernels.
 * Zen 5 / Skylake-X: 2 FMA pipes x 4 cycles latency need >= 8 independent accumulators; 2 x MR
 * of them plus 2 B registers and one broadcast must fit the 32 zmm registers, so MR <= 14.
 * Zen 4 runs each zmm op as two 256-bit halves (one zmm FMA per cycle: 4 accumulators cover the
 * latency) and lane-crossing zmm shuffles at one per cycle; docs/performance.md has the figures. */
#include "gemm.h"

#if defined(__x86_64__) && defined(__AVX512F__) && defined(__FMA__)
#include <immintrin.h>
#include <stdlib.h>
#include <string.h>

#define NR 32

/* gemm.h's clamp with the act kernel's bits, by the operand order of maxps / minps (a > b ? a : b
 * and a < b ? a : b: the second operand when either is NaN or both are zeros), as dwconv_taps'
 * dw_act: relu = max(+0, t) + 0 = t <= 0 ? +0 : t (NaN t: t); clip = max(lo, min(hi, y)) of y = t + 0 (t * 1 is t,
 * the + 0 turns -0 into +0 as the act kernel's offset does), which equals
 * y < lo ? lo : (y > hi ? hi : y) when lo <= hi (NaN y: y itself, from both). */
static inline __attribute__((always_inline)) __m512 clamp_v(__m512 t, int cl, __m512 vlo, __m512 vhi) {
    if (cl == LITHE__SGEMM_CLAMP_RELU) /* max(0, t) is t for NaN t; + 0 turns -0 into +0 */
        return _mm512_add_ps(_mm512_max_ps(_mm512_setzero_ps(), t), _mm512_setzero_ps());
    if (cl == LITHE__SGEMM_CLAMP_HSWISH) { /* t * (max(0, min(6, t + 3)) / 6): NaN kept by the order */
        __m512 six = _mm512_set1_ps(6.0f), u = _mm512_add_ps(t, _mm512_set1_ps(3.0f));
        return _mm512_mul_ps(t, _mm512_div_ps(_mm512_max_ps(_mm512_setzero_ps(), _mm512_min_ps(six, u)), six));
    }
    return _mm512_max_ps(vlo, _mm512_min_ps(vhi, _mm512_add_ps(t, _mm512_setzero_ps())));
}

/* acc (mr x 32) -> C tile with the write rule of gemm.h; partial tiles through masks, with the
 * same arithmetic as full ones. */
static inline __attribute__((always_inline)) void store_row(__m512 acc, float *c, const float *bias, const float *rb,
                                                            __m512 valpha, float beta, __mmask16 m, int cl, __m512 vlo,
                                                            __m512 vhi) {
    __m512 t = _mm512_mul_ps(valpha, acc);
    if (beta != 0.0f) t = _mm512_fmadd_ps(_mm512_set1_ps(beta), _mm512_maskz_loadu_ps(m, c), t);
    if (bias) t = _mm512_add_ps(t, _mm512_maskz_loadu_ps(m, bias));
    if (rb) t = _mm512_add_ps(t, _mm512_set1_ps(*rb));
    if (cl) t = clamp_v(t, cl, vlo, vhi);
    _mm512_mask_storeu_ps(c, m, t);
}

/* The write rule for a partial tile (mr x nr of the accumulators acc[2 i], acc[2 i + 1]). */
static __attribute__((noinline)) void store_partial(const __m512 *acc, size_t mr, size_t nr, float *c, size_t ldc,
                                                    const lithe__sgemm_ukparams *p) {
    __m512 va = _mm512_set1_ps(p->alpha), vlo = _mm512_set1_ps(p->lo), vhi = _mm512_set1_ps(p->hi);
    __mmask16 m0 = nr >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << nr) - 1);
    __mmask16 m1 = nr >= 32 ? (__mmask16)0xFFFF : nr <= 16 ? (__mmask16)0 : (__mmask16)((1u << (nr - 16)) - 1);
    for (size_t i = 0; i < mr; i++) {
        const float *rb = p->bias_rows ? p->bias_rows + i : NULL;
        store_row(acc[2 * i], c + i * ldc, p->bias, rb, va, p->beta, m0, p->clamp, vlo, vhi);
        if (m1)
            store_row(acc[2 * i + 1], c + i * ldc + 16, p->bias ? p->bias + 16 : NULL, rb, va, p->beta, m1, p->clamp,
                      vlo, vhi);
    }
}

/* The tile's rows as an X-macro, so that each accumulator is a named variable: gcc keeps arrays
 * of them in memory between loops (a 1 KB zeroing and spills per call). */
#define ROWS_2(X) X(0) X(1)
#define ROWS_4(X) ROWS_2(X) X(2) X(3)
#define ROWS_8(X) ROWS_4(X) X(4) X(5) X(6) X(7)
#define ROWS_12(X) ROWS_8(X) X(8) X(9) X(10) X(11)
#define ROWS_14(X) ROWS_12(X) X(12) X(13)
#define ROWS_7(X) ROWS_4(X) X(4) X(5) X(6)

#define UK_DECL(i) __m512 c0_##i = _mm512_setzero_ps(), c1_##i = _mm512_setzero_ps();
#define UK_FMA(i)                                                                                                 \
    {                                                                                                             \
        __m512 x = _mm512_set1_ps(A_VAL(i));                                                                         \
        c0_##i = _mm512_fmadd_ps(x, b0, c0_##i);                                                                  \
        c1_##i = _mm512_fmadd_ps(x, b1, c1_##i);                                                                  \
    }
/* One k step: two B vectors, MR broadcasts of A, 2 x MR FMAs. */
#define UK_STEP(MR)                                                                                               \
    do {                                                                                                          \
        const float *bk = B_STEP;                                                                                 \
        __m512 b0 = _mm512_loadu_ps(bk), b1 = _mm512_loadu_ps(bk + 16);                                           \
        const float *ak = A_STEP(MR);                                                                             \
        ROWS_##MR(UK_FMA)                                                                                         \
    } while (0)
#define UK_PREFETCH(i)                                                                                            \
    if (i < mr) {                                                                                                 \
        __builtin_prefetch(c + (size_t)(i) * ldc, 1, 3);                                                          \
        __builtin_prefetch(c + (size_t)(i) * ldc + 31, 1, 3);                                                     \
    }
#define UK_STORE(i)                                                                                               \
    {                                                                                                             \
        float *ci = c + (size_t)(i) * ldc;                                                                        \
        __m512 t0 = c0_##i, t1 = c1_##i;                                                                          \
        if (!unit) {                                                                                              \
            t0 = _mm512_mul_ps(va, t0);                                                                           \
            t1 = _mm512_mul_ps(va, t1);                                                                           \
            if (beta != 0.0f) {                                                                                   \
                t0 = _mm512_fmadd_ps(vb, _mm512_loadu_ps(ci), t0);                                                \
                t1 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m1, ci + 16), t1);                                  \
            }                                                                                                     \
        } else if (beta != 0.0f) {                                                                                \
            t0 = _mm512_add_ps(_mm512_loadu_ps(ci), t0);                                                          \
            t1 = _mm512_add_ps(_mm512_maskz_loadu_ps(m1, ci + 16), t1);                                           \
        }                                                                                                         \
        if (bias) {                                                                                               \
            t0 = _mm512_add_ps(t0, z0);                                                                           \
            t1 = _mm512_add_ps(t1, z1);                                                                           \
        }                                                                                                         \
        if (rbias) {                                                                                              \
            __m512 r = _mm512_set1_ps(rbias[i]);                                                                  \
            t0 = _mm512_add_ps(t0, r);                                                                            \
            t1 = _mm512_add_ps(t1, r);                                                                            \
        }                                                                                                         \
        if (cl) {                                                                                                 \
            t0 = clamp_v(t0, cl, vlo, vhi);                                                                       \
            t1 = clamp_v(t1, cl, vlo, vhi);                                                                       \
        }                                                                                                         \
        _mm512_storeu_ps(ci, t0);                                                                                 \
        _mm512_mask_storeu_ps(ci + 16, m1, t1);                                                                   \
    }
#define UK_SPILL(i)                                                                                               \
    tile[2 * (i)] = c0_##i;                                                                                       \
    tile[2 * (i) + 1] = c1_##i;

/* The C tile's lines are fetched UK_PF_STEPS steps before the loop ends, so its read (beta != 0)
 * or read-for-ownership (beta == 0) overlaps the last FMAs instead of stalling the stores; much
 * earlier, the streaming B sliver would evict them again. At 1024^3 on Zen 4: no prefetch 106,
 * 32 steps 108, 64 steps 109 GFLOP/s (prefetchw: the same). */
#define UK_PF_STEPS 64
/* A tile at most 16 columns wide (a narrow output layer: N = 10) runs only its first zmm column:
 * half the FMAs, each element the same chain as in the full tile. */
#define UK_DECL_H(i) __m512 h_##i = _mm512_setzero_ps();
#define UK_FMA_H(i) h_##i = _mm512_fmadd_ps(_mm512_set1_ps(A_VAL(i)), b0, h_##i);
#define UK_SPILL_H(i)                                                                                             \
    tile[2 * (i)] = h_##i;                                                                                        \
    tile[2 * (i) + 1] = _mm512_setzero_ps();
#define UKERNEL_HALF(MR)                                                                                          \
    if (nr <= 16) {                                                                                               \
        ROWS_##MR(UK_DECL_H)                                                                                      \
        for (size_t k = 0; k < kc; k++) {                                                                         \
            __m512 b0 = _mm512_loadu_ps(B_STEP);                                                                  \
            const float *ak = A_STEP(MR);                                                                         \
            ROWS_##MR(UK_FMA_H)                                                                                   \
        }                                                                                                         \
        __m512 tile[2 * MR];                                                                                      \
        ROWS_##MR(UK_SPILL_H)                                                                                     \
        store_partial(tile, mr, nr, c, ldc, p);                                                                   \
        return;                                                                                                   \
    }
#define UKERNEL_BODY(MR)                                                                                          \
    UKERNEL_HALF(MR)                                                                                              \
    ROWS_##MR(UK_DECL)                                                                                            \
    size_t k1 = kc > UK_PF_STEPS ? kc - UK_PF_STEPS : 0;                                                          \
    for (size_t k = 0; k < k1; k++) UK_STEP(MR);                                                                  \
    ROWS_##MR(UK_PREFETCH)                                                                                        \
    for (size_t k = k1; k < kc; k++) UK_STEP(MR);                                                                 \
    if (mr == MR && nr > 16) { /* all rows, from registers (the second column masked to nr) */                    \
        const __mmask16 m1 = (__mmask16)(0xFFFFu >> (NR - nr));                                                   \
        __m512 va = _mm512_set1_ps(p->alpha), vb = _mm512_set1_ps(p->beta);                                       \
        float beta = p->beta;                                                                                     \
        /* alpha 1 with beta 0 or 1 (the layers' calls): 1 a = a and fma(1, c, t) = c + t exactly, so  \
         * the same bits without the multiplies, and off the FMA pipes (Zen 4 adds on its own pipes) */ \
        bool unit = p->alpha == 1.0f && (beta == 0.0f || beta == 1.0f);                                           \
        const float *bias = p->bias;                                                                              \
        __m512 z0 = bias ? _mm512_loadu_ps(bias) : _mm512_setzero_ps();                                           \
        __m512 z1 = bias ? _mm512_maskz_loadu_ps(m1, bias + 16) : _mm512_setzero_ps();                            \
        const float *rbias = p->bias_rows;                                                                        \
        const int cl = p->clamp;                                                                                  \
        __m512 vlo = _mm512_set1_ps(p->lo), vhi = _mm512_set1_ps(p->hi);                                          \
        ROWS_##MR(UK_STORE)                                                                                       \
        return;                                                                                                   \
    }                                                                                                             \
    __m512 tile[2 * MR]; /* a partial tile (the edges of C): masked, through memory */                            \
    ROWS_##MR(UK_SPILL)                                                                                           \
    store_partial(tile, mr, nr, c, ldc, p);

/* Step k's MR values of A: a packed sliver (a + k MR), or, for ukernel_ap, MR contiguous floats of
 * a row pointer (rows[k] + off); a null rows folds away where the body is inlined. */
#define A_STEP(MR) (arows ? arows[k] + aoff : a + k * (MR))
/* Step k's NR values of B: a packed sliver or one read in place (b + k bs), or, for ukernel_bp, NR
 * contiguous floats of a row pointer (brows[k] + boff). */
#define B_STEP (brows ? brows[k] + boff : b + k * bs)
/* Row i's step k of A: ak[i] (packed, or ukernel_ap's row pointer), or, for ukernel_a (A untransposed
 * where it lies), a[ao_i + k] with ao_i = i lda for the tile's rows and 0 past mr (row 0 again: valid
 * memory, a result never stored). The broadcasts read MR rows' streams instead of one packed sliver;
 * the FMAs are the packed kernel's, so the same bits. */
#define A_VAL(i) (arow ? a[ao_##i + k] : ak[i])
#define UKA_DECL_O(i) const size_t ao_##i = ((i) < mr ? (size_t)(i) : 0) * lda;

/* The body once per height, B's step bs a parameter: NR for a packed sliver (a constant once
 * inlined; unaligned loads cost nothing on aligned data), B's row stride for a sliver read where it
 * lies (gemm.h's ukernel_b); A packed or read where it lies (gemm.h's ukernel_ap): the same
 * instructions on the same values, so the same bits. */
#define DEFINE_UKERNEL(MR)                                                                                        \
    static inline __attribute__((always_inline)) void uk_##MR(size_t mr, size_t nr, size_t kc, const float *a,    \
                                                              bool arow, size_t lda, const float *const *arows,   \
                                                              int64_t aoff, const float *b,                       \
                                                              const float *const *brows, int64_t boff, size_t bs, \
                                                              float *c, size_t ldc, const lithe__sgemm_ukparams *p) { \
        ROWS_##MR(UKA_DECL_O)                                                                                     \
        UKERNEL_BODY(MR)                                                                                          \
    }                                                                                                             \
    static void lithe_f32_gemm_ukernel_##MR##x32__avx512(size_t mr, size_t nr, size_t kc, const float *a,         \
                                                         const float *b, float *c, size_t ldc,                    \
                                                         const lithe__sgemm_ukparams *p) {                        \
        uk_##MR(mr, nr, kc, a, false, 0, NULL, 0, b, NULL, 0, NR, c, ldc, p);                                               \
    }                                                                                                             \
    static void lithe_f32_gemm_ukernel_b_##MR##x32__avx512(size_t mr, size_t nr, size_t kc, const float *a,       \
                                                           const float *b, size_t ldb, float *c, size_t ldc,      \
                                                           const lithe__sgemm_ukparams *p) {                      \
        uk_##MR(mr, nr, kc, a, false, 0, NULL, 0, b, NULL, 0, ldb, c, ldc, p);                                              \
    }                                                                                                             \
    static void lithe_f32_gemm_ukernel_ap_##MR##x32__avx512(size_t mr, size_t nr, size_t kc,                      \
                                                            const float *const *rows, int64_t off, const float *b, \
                                                            float *c, size_t ldc, const lithe__sgemm_ukparams *p) { \
        uk_##MR(mr, nr, kc, NULL, false, 0, rows, off, b, NULL, 0, NR, c, ldc, p);                                          \
    }                                                                                                             \
    static void lithe_f32_gemm_ukernel_bp_##MR##x32__avx512(size_t mr, size_t nr, size_t kc, const float *a,      \
                                                            const float *const *rows, int64_t off, float *c,      \
                                                            size_t ldc, const lithe__sgemm_ukparams *p) {         \
        uk_##MR(mr, nr, kc, a, false, 0, NULL, 0, NULL, rows, off, 0, c, ldc, p);                                        \
    }                                                                                                             \
    static void lithe_f32_gemm_ukernel_a_##MR##x32__avx512(size_t mr, size_t nr, size_t kc, const float *a,       \
                                                           size_t lda, const float *b, float *c, size_t ldc,      \
                                                           const lithe__sgemm_ukparams *p) {                      \
        uk_##MR(mr, nr, kc, a, true, lda, NULL, 0, b, NULL, 0, NR, c, ldc, p);                                          \
    }

DEFINE_UKERNEL(2)
DEFINE_UKERNEL(4)
DEFINE_UKERNEL(8)
DEFINE_UKERNEL(12)
DEFINE_UKERNEL(14)
DEFINE_UKERNEL(7)

/* One row against G packed slivers at once (gemm.h's urow): 2 G accumulators (8 at G = 4, what
 * 2 FMA pipes x 4 cycles need), each element accumulated and written exactly as the microkernel
 * does a row of its tile. */
static inline __attribute__((always_inline)) void urow_group(int G, size_t nr_last, size_t kc, const float *x,
                                                             const float *b, float *c, const float *bias, __m512 va,
                                                             float beta, const lithe__sgemm_ukparams *p) {
    const int cl = p->clamp;
    const __m512 vlo = _mm512_set1_ps(p->lo), vhi = _mm512_set1_ps(p->hi);
    const size_t sl = kc * NR;
    __m512 acc[8];
    for (int g = 0; g < 2 * G; g++) acc[g] = _mm512_setzero_ps();
    for (size_t k = 0; k < kc; k++) {
        __m512 xv = _mm512_set1_ps(x[k]);
        for (int g = 0; g < G; g++) {
            acc[2 * g] = _mm512_fmadd_ps(xv, _mm512_load_ps(b + g * sl + k * NR), acc[2 * g]);
            acc[2 * g + 1] = _mm512_fmadd_ps(xv, _mm512_load_ps(b + g * sl + k * NR + 16), acc[2 * g + 1]);
        }
    }
    for (int g = 0; g < G; g++) {
        size_t nr = g == G - 1 ? nr_last : NR;
        __mmask16 m0 = nr >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << nr) - 1);
        __mmask16 m1 = nr >= 32 ? (__mmask16)0xFFFF : nr <= 16 ? (__mmask16)0 : (__mmask16)((1u << (nr - 16)) - 1);
        store_row(acc[2 * g], c + g * NR, bias ? bias + g * NR : NULL, NULL, va, beta, m0, cl, vlo, vhi);
        if (m1) store_row(acc[2 * g + 1], c + g * NR + 16, bias ? bias + g * NR + 16 : NULL, NULL, va, beta, m1, cl, vlo, vhi);
    }
}

static void lithe_f32_gemm_urow_1x32__avx512(size_t ns, size_t nr_last, size_t kc, const float *x, const float *b,
                                             float *c, const lithe__sgemm_ukparams *p) {
    __m512 va = _mm512_set1_ps(p->alpha);
    const size_t sl = kc * NR;
    size_t s = 0;
    for (; s + 4 <= ns; s += 4)
        urow_group(4, s + 4 == ns ? nr_last : NR, kc, x, b + s * sl, c + s * NR, p->bias ? p->bias + s * NR : NULL, va,
                   p->beta, p);
    const float *bias = p->bias ? p->bias + s * NR : NULL;
    switch (ns - s) {
    case 3: urow_group(3, nr_last, kc, x, b + s * sl, c + s * NR, bias, va, p->beta, p); break;
    case 2: urow_group(2, nr_last, kc, x, b + s * sl, c + s * NR, bias, va, p->beta, p); break;
    case 1: urow_group(1, nr_last, kc, x, b + s * sl, c + s * NR, bias, va, p->beta, p); break;
    default: break;
    }
}

/* 16 x 16 transpose of r[0..15] in place. */
static inline __attribute__((always_inline)) void transpose16(__m512 r[16]) {
    __m512 t[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {
        r[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[i]), _mm512_castps_pd(t[i + 2])));
        r[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[i]), _mm512_castps_pd(t[i + 2])));
        r[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[i + 1]), _mm512_castps_pd(t[i + 3])));
        r[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[i + 1]), _mm512_castps_pd(t[i + 3])));
    }
    /* r[4q + s] now holds, for rows 4q..4q+3, element s of every 128-bit lane: combine lanes */
    for (int s = 0; s < 4; s++) {
        __m512 a0 = _mm512_shuffle_f32x4(r[s], r[4 + s], 0x88), a1 = _mm512_shuffle_f32x4(r[s], r[4 + s], 0xDD);
        __m512 b0 = _mm512_shuffle_f32x4(r[8 + s], r[12 + s], 0x88), b1 = _mm512_shuffle_f32x4(r[8 + s], r[12 + s], 0xDD);
        t[s] = _mm512_shuffle_f32x4(a0, b0, 0x88);      /* lane 0 */
        t[4 + s] = _mm512_shuffle_f32x4(a1, b1, 0x88);  /* lane 1 */
        t[8 + s] = _mm512_shuffle_f32x4(a0, b0, 0xDD);  /* lane 2 */
        t[12 + s] = _mm512_shuffle_f32x4(a1, b1, 0xDD); /* lane 3 */
    }
    for (int i = 0; i < 16; i++) r[i] = t[i];
}

/* 8 rows x 16 columns in place into r[j] = column 2j (rows 0..7), then column 2j + 1: per 128-bit
 * lane, 4 x 4 transposes of rows 0-3 (u) and 4-7 (v) (u[s], v[s]: column 4q + s in lane q), then the
 * lanes paired: r[2q + s / 2] = u[s].q, v[s].q, u[s + 1].q, v[s + 1].q. */
static inline __attribute__((always_inline)) void transpose8x16(__m512 r[8]) {
    __m512 t[8], u[4], v[4];
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int h = 0; h < 2; h++) { /* rows 4h..4h+3: t[4h..4h+3] */
        __m512 *o = h ? v : u;
        const __m512 *a = t + 4 * h;
        o[0] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(a[0]), _mm512_castps_pd(a[2])));
        o[1] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(a[0]), _mm512_castps_pd(a[2])));
        o[2] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(a[1]), _mm512_castps_pd(a[3])));
        o[3] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(a[1]), _mm512_castps_pd(a[3])));
    }
    for (int s = 0; s < 4; s += 2) {
        __m512 a0 = _mm512_shuffle_f32x4(u[s], v[s], 0x44), b0 = _mm512_shuffle_f32x4(u[s], v[s], 0xEE);
        __m512 a1 = _mm512_shuffle_f32x4(u[s + 1], v[s + 1], 0x44), b1 = _mm512_shuffle_f32x4(u[s + 1], v[s + 1], 0xEE);
        r[s / 2] = _mm512_shuffle_f32x4(a0, a1, 0x88);     /* lane 0: columns s, s + 1 */
        r[2 + s / 2] = _mm512_shuffle_f32x4(a0, a1, 0xDD); /* lane 1: columns 4 + s, 5 + s */
        r[4 + s / 2] = _mm512_shuffle_f32x4(b0, b1, 0x88); /* lane 2 */
        r[6 + s / 2] = _mm512_shuffle_f32x4(b0, b1, 0xDD); /* lane 3 */
    }
}

/* The transposing pack (rows: lane l, step k at src[l * ld + k], or with row pointers at
 * ptrs[l][off + k]: pack_a_taps) in 16 x 16 blocks. */
static inline __attribute__((always_inline)) void pack_rows_at(size_t R, size_t lanes, size_t kc, const float *src,
                                                               size_t ld, const float *const *ptrs, int64_t off,
                                                               float *dst) {
    if (R == 8) { /* 8 rows x 16 steps into 8 registers of 2 steps each (transpose8x16): half the shuffles
                   * of transpose16 over 8 zero rows, and whole-register stores */
        for (size_t k0 = 0; k0 < kc; k0 += 16) {
            size_t kw = kc - k0 < 16 ? kc - k0 : 16;
            __mmask16 km = kw == 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << kw) - 1);
            __m512 r[8];
            for (size_t i = 0; i < 8; i++)
                r[i] = i >= lanes ? _mm512_setzero_ps()
                       : ptrs     ? _mm512_maskz_loadu_ps(km, ptrs[i] + off + k0)
                                  : _mm512_maskz_loadu_ps(km, src + i * ld + k0);
            transpose8x16(r);
            for (size_t j = 0; j < 8; j++) {
                if (2 * j + 1 < kw) _mm512_storeu_ps(dst + (k0 + 2 * j) * 8, r[j]);
                else if (2 * j < kw) _mm512_mask_storeu_ps(dst + (k0 + 2 * j) * 8, (__mmask16)0x00FF, r[j]);
            }
        }
        return;
    }
    for (size_t l0 = 0; l0 < R; l0 += 16) {
        size_t w = R - l0 < 16 ? R - l0 : 16;      /* lanes of dst written by this group */
        __mmask16 sm = (__mmask16)((1u << w) - 1); /* w <= 16 */
        if (w == 16) sm = 0xFFFF;
        for (size_t k0 = 0; k0 < kc; k0 += 16) {
            size_t kw = kc - k0 < 16 ? kc - k0 : 16;
            __mmask16 km = kw == 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << kw) - 1);
            __m512 r[16];
            for (size_t i = 0; i < 16; i++)
                r[i] = l0 + i >= lanes ? _mm512_setzero_ps()
                       : ptrs          ? _mm512_maskz_loadu_ps(km, ptrs[l0 + i] + off + k0)
                                       : _mm512_maskz_loadu_ps(km, src + (l0 + i) * ld + k0);
            transpose16(r);
            for (size_t i = 0; i < kw; i++) _mm512_mask_storeu_ps(dst + (k0 + i) * R + l0, sm, r[i]);
        }
    }
}

static void pack_rows(size_t R, size_t lanes, size_t kc, const float *src, size_t ld, float *dst) {
    pack_rows_at(R, lanes, kc, src, ld, NULL, 0, dst);
}

static void pack_cols(size_t R, size_t lanes, size_t kc, const float *src, size_t ld, float *dst) {
    __mmask16 m[4];
    for (size_t g = 0; g < 4; g++) {
        size_t l0 = g * 16;
        size_t v = lanes > l0 ? (lanes - l0 < 16 ? lanes - l0 : 16) : 0;
        m[g] = v == 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << v) - 1);
    }
    size_t groups = (R + 15) / 16;
    if (R == 8 && lanes == 8) { /* whole 8-row A slivers (the dW GEMMs' dYᵀ): unmasked 256-bit moves */
        for (size_t k = 0; k < kc; k++) _mm256_storeu_ps(dst + k * 8, _mm256_loadu_ps(src + k * ld));
        return;
    }
    for (size_t k = 0; k < kc; k++) {
        const float *s = src + k * ld;
        float *d = dst + k * R;
        for (size_t g = 0; g < groups; g++) {
            size_t l0 = g * 16;
            __mmask16 store = R - l0 >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (R - l0)) - 1);
            _mm512_mask_storeu_ps(d + l0, store, _mm512_maskz_loadu_ps(m[g], s + l0));
        }
    }
}

static void pack_b_32(size_t lanes, size_t kc, const float *src, size_t ld, bool rows, float *dst) {
    if (rows) pack_rows(NR, lanes, kc, src, ld, dst);
    else pack_cols(NR, lanes, kc, src, ld, dst);
}
#define DEFINE_PACK_A(MR)                                                                                         \
    static void pack_a_##MR(size_t lanes, size_t kc, const float *src, size_t ld, bool rows, float *dst) {         \
        if (rows) pack_rows(MR, lanes, kc, src, ld, dst);                                                         \
        else pack_cols(MR, lanes, kc, src, ld, dst);                                                              \
    }
DEFINE_PACK_A(2)
DEFINE_PACK_A(4)
DEFINE_PACK_A(8)
DEFINE_PACK_A(12)
DEFINE_PACK_A(14)
DEFINE_PACK_A(7)

/* gemm.h's pack_a_taps (conv/backward.c's dW: col's A slivers, taps as lanes, pixels as steps, from
 * the taps' shifted rows) and pack_b_taps (the same with NR lanes, B's slivers where the filters are
 * the tile's rows): the transposing pack with a row pointer per lane, 16 steps of the
 * sliver's rows at a time through transpose16 (masked loads: nothing past a row's run is read). The
 * driver's scalar loop stored a float at a time: 14 % of the LeNet CNN's training step on Zen 5. */
#define DEFINE_PACK_A_TAPS(MR)                                                                                    \
    static void pack_a_taps_##MR(size_t lanes, size_t kc, const float *const *rows, int64_t off, float *dst) {   \
        pack_rows_at(MR, lanes, kc, NULL, 0, rows, off, dst);                                                     \
    }
DEFINE_PACK_A_TAPS(2)
DEFINE_PACK_A_TAPS(4)
DEFINE_PACK_A_TAPS(8)
DEFINE_PACK_A_TAPS(12)
DEFINE_PACK_A_TAPS(14)
DEFINE_PACK_A_TAPS(7)
static void pack_b_taps_32(size_t lanes, size_t kc, const float *const *rows, int64_t off, float *dst) {
    pack_rows_at(NR, lanes, kc, NULL, 0, rows, off, dst);
}

/* lithe__sgemm_pixels' A slivers: step k's lanes contiguous at rows[k] + off (a tap's pixels along
 * an output row), one masked load and store per step. */
#define DEFINE_PACK_A_PTRS(MR)                                                                                    \
    static void pack_a_ptrs_##MR(size_t lanes, size_t kc, const float *const *rows, int64_t off, float *dst) {   \
        __mmask16 lm = (__mmask16)((1u << lanes) - 1), sm = (__mmask16)((1u << MR) - 1);                          \
        size_t k = 0;                                                                                             \
        for (; k + 4 <= kc; k += 4) {                                                                             \
            __m512 v0 = _mm512_maskz_loadu_ps(lm, rows[k] + off), v1 = _mm512_maskz_loadu_ps(lm, rows[k + 1] + off);      \
            __m512 v2 = _mm512_maskz_loadu_ps(lm, rows[k + 2] + off), v3 = _mm512_maskz_loadu_ps(lm, rows[k + 3] + off);  \
            _mm512_mask_storeu_ps(dst + k * MR, sm, v0);                                                          \
            _mm512_mask_storeu_ps(dst + (k + 1) * MR, sm, v1);                                                    \
            _mm512_mask_storeu_ps(dst + (k + 2) * MR, sm, v2);                                                    \
            _mm512_mask_storeu_ps(dst + (k + 3) * MR, sm, v3);                                                    \
        }                                                                                                         \
        for (; k < kc; k++) _mm512_mask_storeu_ps(dst + k * MR, sm, _mm512_maskz_loadu_ps(lm, rows[k] + off));     \
    }
DEFINE_PACK_A_PTRS(2)
DEFINE_PACK_A_PTRS(4)
DEFINE_PACK_A_PTRS(8)
DEFINE_PACK_A_PTRS(12)
DEFINE_PACK_A_PTRS(14)
DEFINE_PACK_A_PTRS(7)

/* A sliver of pixels across output rows (gemm.h's pack_segs): per step and group of 16 lanes, one
 * register merges its chunks by masked loads (each from the chunk's source moved back by its lane
 * in the group: masked-off lanes are not read), then one store. */
static void pack_segs(size_t R, size_t kc, const float *const *rows, size_t nseg, const int64_t *off, const size_t *lane,
                      const size_t *len, float *dst) {
    __mmask16 m[8], z0 = R >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << R) - 1);
    __mmask16 z1 = R >= 32 ? (__mmask16)0xFFFF : R <= 16 ? (__mmask16)0 : (__mmask16)((1u << (R - 16)) - 1);
    int64_t back[8];
    for (size_t s = 0; s < nseg; s++) {
        m[s] = (__mmask16)(((1u << len[s]) - 1) << (lane[s] % 16));
        back[s] = off[s] - (int64_t)(lane[s] % 16);
    }
    for (size_t k = 0; k < kc; k++) {
        __m512 v0 = _mm512_setzero_ps(), v1 = _mm512_setzero_ps();
        uintptr_t r = (uintptr_t)rows[k];
        for (size_t s = 0; s < nseg; s++) {
            const float *src = (const float *)(r + (uintptr_t)(back[s] * (int64_t)sizeof(float)));
            if (lane[s] < 16) v0 = _mm512_mask_loadu_ps(v0, m[s], src);
            else v1 = _mm512_mask_loadu_ps(v1, m[s], src);
        }
        _mm512_mask_storeu_ps(dst + k * R, z0, v0);
        if (z1) _mm512_mask_storeu_ps(dst + k * R + 16, z1, v1);
    }
}

/* dst[j * ldd + i] = src[i * lds + j] (i < rows, j < cols) in 16 x 16 blocks through transpose16. */
static void transpose_tile(size_t rows, size_t cols, const float *src, size_t lds, float *dst, size_t ldd) {
    if (rows <= 8 && cols > 16 && cols <= 32) { /* a short tile (7 x 32: a 7x7 plane's pixel rows): both
                                                 * column halves in one 16 x 16 transpose, the second
                                                 * half's rows in registers 8.. (lanes 8.. after it) */
        __mmask16 lo = (__mmask16)((1u << rows) - 1), hm = (__mmask16)((1u << (cols - 16)) - 1);
        __m512 r[16];
        for (size_t i = 0; i < 8; i++) {
            r[i] = i < rows ? _mm512_loadu_ps(src + i * lds) : _mm512_setzero_ps();
            r[8 + i] = i < rows ? _mm512_maskz_loadu_ps(hm, src + i * lds + 16) : _mm512_setzero_ps();
        }
        transpose16(r);
        for (size_t j = 0; j < 16; j++) _mm512_mask_storeu_ps(dst + j * ldd, lo, r[j]);
        for (size_t j = 0; j < cols - 16; j++) _mm512_mask_storeu_ps(dst + (j + 16) * ldd - 8, (__mmask16)(lo << 8), r[j]);
        return;
    }
    for (size_t i0 = 0; i0 < rows; i0 += 16) {
        size_t ri = rows - i0 < 16 ? rows - i0 : 16;
        __mmask16 im = ri == 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << ri) - 1);
        for (size_t j0 = 0; j0 < cols; j0 += 16) {
            size_t cj = cols - j0 < 16 ? cols - j0 : 16;
            __mmask16 jm = cj == 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << cj) - 1);
            __m512 r[16];
            for (size_t i = 0; i < 16; i++)
                r[i] = i < ri ? _mm512_maskz_loadu_ps(jm, src + (i0 + i) * lds + j0) : _mm512_setzero_ps();
            transpose16(r);
            for (size_t j = 0; j < cj; j++) _mm512_mask_storeu_ps(dst + (j0 + j) * ldd + i0, im, r[j]);
        }
    }
}

/* gemm.h's add_tile: a stored C block plus a residual block, 16 columns a vector, the last one
 * masked; _mm512_add_ps(a, b) is a + b, one rounding. */
static void add_tile(size_t rows, size_t cols, float *c, size_t ldc, const float *rv, size_t ldr, bool first) {
    for (size_t i = 0; i < rows; i++) {
        float *ci = c + i * ldc;
        const float *ri = rv + i * ldr;
        for (size_t j = 0; j < cols; j += 16) {
            size_t w = cols - j < 16 ? cols - j : 16;
            __mmask16 m = w == 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << w) - 1);
            __m512 x = _mm512_maskz_loadu_ps(m, ci + j), r = _mm512_maskz_loadu_ps(m, ri + j);
            _mm512_mask_storeu_ps(ci + j, m, first ? _mm512_add_ps(r, x) : _mm512_add_ps(x, r));
        }
    }
}

/* M = 1 with the microkernel's arithmetic: each y[j] accumulates k in order with one FMA per step,
 * so lanes must be outputs. x · Wᵀ reads 16 rows of W x 16 steps of k and transposes them in
 * registers; G groups of 16 rows run side by side to hide the FMA latency. */
static inline __attribute__((always_inline)) void gemv_t_groups(int G, size_t n, size_t K, size_t kc, float alpha,
                                                                const float *x, const float *w, size_t ldw, float beta,
                                                                float *y, const float *bias) {
    __m512 c[4], acc[4];
    __mmask16 rm[4];
    __m512 va = _mm512_set1_ps(alpha);
    for (int g = 0; g < G; g++) {
        size_t l0 = 16 * (size_t)g, v = n > l0 ? (n - l0 < 16 ? n - l0 : 16) : 0;
        rm[g] = v == 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << v) - 1);
        c[g] = _mm512_setzero_ps();
    }
    for (size_t p = 0; p < K; p += kc) {
        size_t e = K - p < kc ? K : p + kc;
        for (int g = 0; g < G; g++) acc[g] = _mm512_setzero_ps();
        for (size_t k0 = p; k0 < e; k0 += 16) {
            size_t kw = e - k0 < 16 ? e - k0 : 16;
            __mmask16 km = kw == 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << kw) - 1);
            /* one group's 16 x 16 block live at a time (32 registers); the groups' FMA chains are
             * independent, so out-of-order execution overlaps one's chain with the next's shuffles */
            for (int g = 0; g < G; g++) {
                __m512 r[16];
                if (rm[g] == 0xFFFF && kw == 16)
                    for (size_t i = 0; i < 16; i++) {
                        const float *src = w + (16 * (size_t)g + i) * ldw + k0;
                        _mm_prefetch((const char *)(src + 64), _MM_HINT_T0); /* 32 row streams */
                        r[i] = _mm512_loadu_ps(src);
                    }
                else
                    for (size_t i = 0; i < 16; i++)
                        r[i] = (rm[g] >> i) & 1 ? _mm512_maskz_loadu_ps(km, w + (16 * (size_t)g + i) * ldw + k0)
                                                : _mm512_setzero_ps();
                transpose16(r);
                if (kw == 16) /* constant trip count: r stays in registers */
                    for (size_t kk = 0; kk < 16; kk++)
                        acc[g] = _mm512_fmadd_ps(_mm512_set1_ps(x[k0 + kk]), r[kk], acc[g]);
                else
                    for (size_t kk = 0; kk < kw; kk++)
                        acc[g] = _mm512_fmadd_ps(_mm512_set1_ps(x[k0 + kk]), r[kk], acc[g]);
            }
        }
        float b = p == 0 ? beta : 1.0f;
        for (int g = 0; g < G; g++) {
            __m512 t = _mm512_mul_ps(va, acc[g]);
            if (b != 0.0f) {
                __m512 old = p == 0 ? _mm512_maskz_loadu_ps(rm[g], y + 16 * g) : c[g];
                t = _mm512_fmadd_ps(_mm512_set1_ps(b), old, t);
            }
            c[g] = t;
        }
    }
    for (int g = 0; g < G; g++) {
        __m512 t = c[g];
        if (bias) t = _mm512_add_ps(t, _mm512_maskz_loadu_ps(rm[g], bias + 16 * g));
        _mm512_mask_storeu_ps(y + 16 * g, rm[g], t);
    }
}

/* x · Wᵀ for 32 rows at a time, the kernel used for whole row blocks. Lanes are outputs as above,
 * but the lane-crossing half of the 16 x 16 transpose (32 vshuff32x4 per block, which Zen 4 runs
 * at one per cycle) is mostly left to the load unit: register q holds rows q and q + 8 over 8
 * steps (a 256-bit load and a 256-bit insert from memory), so what remains is an 8 x 8 transpose
 * inside each 256-bit half (two in-lane stages) and one lane shuffle per output vector: 8 lane
 * moves per 128 floats against 16. The accumulator's lanes then hold rows 0-3, 8-11, 4-7, 12-15
 * (gv_unpermute restores the order, a lane move that keeps the bits); each lane is still one FMA
 * chain over k in order. Two groups of 16 rows give two chains: three were no faster, four
 * slower; software prefetch of the 32 row streams slower. On Zen 4 at (1, 512, 784): 25.8 ->
 * 29.2 GFLOP/s (min of batches, per-thread CPU time). */
static inline __attribute__((always_inline)) __m512 gv_step8(const float *w, const float *w8, size_t L, __m512 acc,
                                                             const float *x) {
    /* w: row 0 at the first of the 8 steps, w8: row 8, L: the row stride */
    __m512 r[8], t[8], u[8];
    for (int q = 0; q < 8; q++)
        r[q] = _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castps_pd(_mm512_castps256_ps512(_mm256_loadu_ps(w + (size_t)q * L))),
                                                   _mm256_castps_pd(_mm256_loadu_ps(w8 + (size_t)q * L)), 1));
    for (int q = 0; q < 8; q += 2) {
        t[q] = _mm512_unpacklo_ps(r[q], r[q + 1]);
        t[q + 1] = _mm512_unpackhi_ps(r[q], r[q + 1]);
    }
    for (int h = 0; h < 8; h += 4) { /* rows h..h+3 (and h+8..h+11) */
        u[h] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[h]), _mm512_castps_pd(t[h + 2])));
        u[h + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[h]), _mm512_castps_pd(t[h + 2])));
        u[h + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[h + 1]), _mm512_castps_pd(t[h + 3])));
        u[h + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[h + 1]), _mm512_castps_pd(t[h + 3])));
    }
    /* u[s]'s 128-bit lanes: rows 0-3 at steps s and s + 4, rows 8-11 at s and s + 4; u[4 + s]: rows
     * 4-7 and 12-15 likewise. Lanes 0 and 2 of both make step s, lanes 1 and 3 step s + 4. */
    for (int s = 0; s < 4; s++)
        acc = _mm512_fmadd_ps(_mm512_set1_ps(x[s]), _mm512_shuffle_f32x4(u[s], u[4 + s], 0x88), acc);
    for (int s = 0; s < 4; s++)
        acc = _mm512_fmadd_ps(_mm512_set1_ps(x[4 + s]), _mm512_shuffle_f32x4(u[s], u[4 + s], 0xDD), acc);
    return acc;
}
/* lanes rows 0-3, 8-11, 4-7, 12-15 -> rows 0-15 */
static inline __attribute__((always_inline)) __m512 gv_unpermute(__m512 v) { return _mm512_shuffle_f32x4(v, v, 0xD8); }

static void gemv_t_32(size_t K, size_t kc, float alpha, const float *x, const float *w, size_t L, float beta,
                      float *y, const float *bias) {
    __m512 c[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
    __m512 va = _mm512_set1_ps(alpha);
    for (size_t p = 0; p < K; p += kc) {
        size_t e = K - p < kc ? K : p + kc, k = p;
        __m512 acc[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
        /* four moving row pointers (rows 0, 8, 16, 24) sharing the offsets q L: 32 row pointers
         * would not fit the general registers (gcc reloaded them from the stack, 20 % slower) */
        const float *w0 = w + k, *w8 = w + 8 * L + k, *w16 = w + 16 * L + k, *w24 = w + 24 * L + k;
        for (; k + 8 <= e; k += 8, w0 += 8, w8 += 8, w16 += 8, w24 += 8) {
            acc[0] = gv_step8(w0, w8, L, acc[0], x + k);
            acc[1] = gv_step8(w16, w24, L, acc[1], x + k);
        }
        for (int g = 0; g < 2; g++) acc[g] = gv_unpermute(acc[g]);
        for (; k < e; k++) /* the block's last steps (its length not a multiple of 8), in natural order */
            for (int g = 0; g < 2; g++) {
                float col[16];
                for (size_t i = 0; i < 16; i++) col[i] = w[((size_t)g * 16 + i) * L + k];
                acc[g] = _mm512_fmadd_ps(_mm512_set1_ps(x[k]), _mm512_loadu_ps(col), acc[g]);
            }
        float b = p == 0 ? beta : 1.0f;
        for (int g = 0; g < 2; g++) {
            __m512 t = _mm512_mul_ps(va, acc[g]);
            if (b != 0.0f) t = _mm512_fmadd_ps(_mm512_set1_ps(b), p == 0 ? _mm512_loadu_ps(y + 16 * g) : c[g], t);
            c[g] = t;
        }
    }
    for (int g = 0; g < 2; g++) {
        __m512 t = c[g];
        if (bias) t = _mm512_add_ps(t, _mm512_loadu_ps(bias + 16 * g));
        _mm512_storeu_ps(y + 16 * g, t);
    }
}

static void gemv_t(size_t n, size_t K, size_t kc, float alpha, const float *x, const float *w, size_t ldw, float beta,
                   float *y, const float *bias) {
    size_t j = 0;
    for (; j + 32 <= n; j += 32) gemv_t_32(K, kc, alpha, x, w + j * ldw, ldw, beta, y + j, bias ? bias + j : NULL);
    for (; j < n; j += 16) /* the last rows, 16 at a time, masked */
        gemv_t_groups(1, n - j, K, kc, alpha, x, w + j * ldw, ldw, beta, y + j, bias ? bias + j : NULL);
}

/* M = 1, x · W: 64 columns of y in 4 zmm accumulators, k in order. */
static void gemv_n(size_t n, size_t K, size_t kc, float alpha, const float *x, const float *w, size_t ldw, float beta,
                   float *y, const float *bias) {
    __m512 va = _mm512_set1_ps(alpha);
    for (size_t j = 0; j < n; j += 64) {
        __mmask16 m[4];
        for (size_t g = 0; g < 4; g++) {
            size_t l0 = j + g * 16;
            size_t v = n > l0 ? (n - l0 < 16 ? n - l0 : 16) : 0;
            m[g] = v == 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << v) - 1);
        }
        __m512 c[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
        for (size_t p = 0; p < K; p += kc) {
            size_t e = K - p < kc ? K : p + kc;
            __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
            for (size_t k = p; k < e; k++) {
                __m512 xv = _mm512_set1_ps(x[k]);
                const float *wk = w + k * ldw + j;
                for (int g = 0; g < 4; g++)
                    acc[g] = _mm512_fmadd_ps(xv, _mm512_maskz_loadu_ps(m[g], wk + 16 * g), acc[g]);
            }
            float b = p == 0 ? beta : 1.0f;
            for (int g = 0; g < 4; g++) {
                __m512 t = _mm512_mul_ps(va, acc[g]);
                if (b != 0.0f) {
                    __m512 old = p == 0 ? _mm512_maskz_loadu_ps(m[g], y + j + 16 * g) : c[g];
                    t = _mm512_fmadd_ps(_mm512_set1_ps(b), old, t);
                }
                c[g] = t;
            }
        }
        for (int g = 0; g < 4; g++) {
            __m512 t = c[g];
            if (bias) t = _mm512_add_ps(t, _mm512_maskz_loadu_ps(m[g], bias + j + 16 * g));
            if (m[g]) _mm512_mask_storeu_ps(y + j + 16 * g, m[g], t);
        }
    }
}

/* Blocking, measured on Zen 4 (32 KB L1d, 1 MB L2; bench/gemm and min-of-N CPU time) at 1024^3:
 * kc 256 / 384 / 512 / 640 -> 103 / 104 / 106 / 105 GFLOP/s (a longer k loop amortizes the tile's
 * load and store; the B sliver, kc x 32, streams from L2 either way), mc 64 / 128 / 256 within
 * 1 %. The A block (mc x kc, 256 KB) stays in L2; nc covers the usual N whole. */
static const lithe__sgemm_kernel *for_rows(int64_t M);
#define KERNEL(MR, MC)                                                                                            \
    {.isa = "avx512", .mr = MR, .nr = NR, .mc = MC, .kc = 512, .nc = 4096,                                        \
     .ukernel = lithe_f32_gemm_ukernel_##MR##x32__avx512, .pack_a = pack_a_##MR, .pack_b = pack_b_32,             \
     .gemv_t = gemv_t, .gemv_n = gemv_n, .for_rows = for_rows, .urow = lithe_f32_gemm_urow_1x32__avx512,         \
     .ukernel_b = lithe_f32_gemm_ukernel_b_##MR##x32__avx512, .ukernel_ap = lithe_f32_gemm_ukernel_ap_##MR##x32__avx512, \
     .ukernel_bp = lithe_f32_gemm_ukernel_bp_##MR##x32__avx512, .ukernel_a = lithe_f32_gemm_ukernel_a_##MR##x32__avx512, \
     .pack_a_ptrs = pack_a_ptrs_##MR, .pack_a_taps = pack_a_taps_##MR, .pack_b_taps = pack_b_taps_32,           \
     .transpose = transpose_tile, .pack_segs = pack_segs, .clamp_ok = true,                                       \
     .bias_rows_ok = true, .add_tile = add_tile}
static const lithe__sgemm_kernel kernels[] = {KERNEL(14, 126), KERNEL(12, 120), KERNEL(8, 128), KERNEL(4, 128),
                                              KERNEL(2, 128), KERNEL(7, 126)};
#define N_KERNELS (sizeof kernels / sizeof kernels[0])
/* Relative FMA throughput of each height: 2 x MR accumulators, 8 needed to cover 2 pipes x 4
 * cycles of latency (4 rows: just enough; 2 rows: half). */
static const double speed[N_KERNELS] = {1.0, 1.0, 1.0, 0.9, 0.5, 1.0};

/* The height with the least work per useful row, ceil(M / MR) * MR / speed (ties: the taller,
 * fewer B reloads): 64 rows -> 8 x 32, 56 -> 14 x 32, 2 -> 2 x 32, 6 -> 8 x 32, 49 -> 7 x 32 (a
 * 7x7 plane's pixels in conv/gemm.c's pixel rows: mobilenet_v2's 1x1 convolutions there ran 14 x 32
 * tiles an eighth empty; 7 x 32 still has 14 accumulators, and 320 -> 1280 went 458 -> 426 us). Every height
 * gives the same bits. LITHE_GEMM_AVX512_MR=14|12|8|7|4|2 forces one (tests, tuning). */
static const lithe__sgemm_kernel *for_rows(int64_t M) {
    const char *v = lithe__knob(LITHE__KNOB_gemm_avx512_mr);
    if (v && *v)
        for (size_t i = 0; i < N_KERNELS; i++)
            if (atoi(v) == kernels[i].mr) return &kernels[i];
    size_t best = 0;
    double best_cost = 0;
    for (size_t i = 0; i < N_KERNELS; i++) {
        double cost = (double)((M + kernels[i].mr - 1) / kernels[i].mr * kernels[i].mr) / speed[i];
        if (i == 0 || cost < best_cost) {
            best = i;
            best_cost = cost;
        }
    }
    return &kernels[best];
}

const lithe__sgemm_kernel *lithe__sgemm_kernel_avx512(void) {
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("fma")) return NULL;
    return &kernels[0];
}

#elif defined(__x86_64__)
#error "gemm_avx512.c must be compiled with -mavx512f -mfma"
#endif
