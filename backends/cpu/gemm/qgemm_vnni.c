/* The int8 GEMM's AVX-512 VNNI microkernel (qgemm.h): vpdpbusd multiplies u8 × s8 and adds each
 * group of four into int32 in one instruction (no int16 step), 64 bytes a step, 4 x 2 tiles, a
 * horizontal sum of the tile's eight at the end; the last partial chunk of w by a masked load.
 * Built with -mavx512f -mavx512bw -mavx512vnni -mbmi2; chosen only where the CPU has all four. */
#include "qgemm.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VNNI__) && defined(__BMI2__)
#include <immintrin.h>
#include <string.h>

#define STEP(c, a, w) c = _mm512_dpbusd_epi32(c, a, w)

/* The eight sums of c0..c7 (16 lanes each) as one vector, in c's order: 512 -> 256 bits, then
 * hadd pairs; integer sums, so any order gives the same values */
#define FOLD(c) _mm256_add_epi32(_mm512_castsi512_si256(c), _mm512_extracti64x4_epi64(c, 1))
static inline __m256i sum8(__m512i c0, __m512i c1, __m512i c2, __m512i c3, __m512i c4, __m512i c5, __m512i c6,
                           __m512i c7) {
    const __m256i a = _mm256_hadd_epi32(_mm256_hadd_epi32(FOLD(c0), FOLD(c1)), _mm256_hadd_epi32(FOLD(c2), FOLD(c3))),
                  b = _mm256_hadd_epi32(_mm256_hadd_epi32(FOLD(c4), FOLD(c5)), _mm256_hadd_epi32(FOLD(c6), FOLD(c7)));
    /* a's 128-bit halves hold c0..c3's sums of lanes 0-3 and 4-7 (of the 256-bit fold), b c4..c7's */
    return _mm256_add_epi32(_mm256_permute2x128_si256(a, b, 0x20), _mm256_permute2x128_si256(a, b, 0x31));
}

static void tile_vnni(size_t mr, size_t nr, size_t kw, const uint8_t *a, size_t lda, const int8_t *w, size_t ldw,
                      int32_t *acc) {
    const size_t kfull = kw / 64 * 64;
    /* w's last partial chunk by a masked load (bytes past kw read as 0 and never touched) */
    const __mmask64 tail = kw > kfull ? _bzhi_u64(~0ull, (unsigned)(kw - kfull)) : 0;
    if (mr == 4 && nr == 2) {
        __m512i c0 = _mm512_setzero_si512(), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0, c6 = c0, c7 = c0;
        const int8_t *w1p = w + ldw;
        size_t k = 0;
        for (; k < kfull; k += 64) {
            __m512i w0 = _mm512_loadu_si512(w + k), w1 = _mm512_loadu_si512(w1p + k);
            __m512i a0 = _mm512_loadu_si512(a + k), a1 = _mm512_loadu_si512(a + lda + k);
            STEP(c0, a0, w0);
            STEP(c1, a0, w1);
            STEP(c2, a1, w0);
            STEP(c3, a1, w1);
            __m512i a2 = _mm512_loadu_si512(a + 2 * lda + k), a3 = _mm512_loadu_si512(a + 3 * lda + k);
            STEP(c4, a2, w0);
            STEP(c5, a2, w1);
            STEP(c6, a3, w0);
            STEP(c7, a3, w1);
        }
        if (tail) {
            __m512i w0 = _mm512_maskz_loadu_epi8(tail, w + k), w1 = _mm512_maskz_loadu_epi8(tail, w1p + k);
            __m512i a0 = _mm512_loadu_si512(a + k), a1 = _mm512_loadu_si512(a + lda + k);
            __m512i a2 = _mm512_loadu_si512(a + 2 * lda + k), a3 = _mm512_loadu_si512(a + 3 * lda + k);
            STEP(c0, a0, w0);
            STEP(c1, a0, w1);
            STEP(c2, a1, w0);
            STEP(c3, a1, w1);
            STEP(c4, a2, w0);
            STEP(c5, a2, w1);
            STEP(c6, a3, w0);
            STEP(c7, a3, w1);
        }
        _mm256_storeu_si256((__m256i *)acc, sum8(c0, c1, c2, c3, c4, c5, c6, c7));
        return;
    }
    for (size_t i = 0; i < mr; i++)
        for (size_t j = 0; j < nr; j++) {
            __m512i c = _mm512_setzero_si512();
            for (size_t k = 0; k < kw; k += 64) {
                __m512i wv = k < kfull ? _mm512_loadu_si512(w + j * ldw + k) : _mm512_maskz_loadu_epi8(tail, w + j * ldw + k);
                STEP(c, _mm512_loadu_si512(a + i * lda + k), wv);
            }
            acc[i * LITHE__Q8_NR + j] = _mm512_reduce_add_epi32(c);
        }
}

/* The packed tile (qgemm.h's ptile): MR rows x NV vectors of 16 columns in MR · NV accumulators
 * (24 at most, of 32 registers), a step of four k: NV loads of W's panel, a row's four bytes
 * broadcast, MR · NV vpdpbusd; no horizontal sums (the lanes are the columns). MR and NV are
 * constants in each instance (the loops unroll and the accumulators stay in registers). */
#define PMR LITHE__Q8_PMR
static inline __attribute__((always_inline)) void ptile_mn(const int MR, const int NV, size_t k4, const uint8_t *a,
                                                           size_t lda, const int8_t *wp, int32_t *acc) {
    __m512i c[PMR][4];
#pragma GCC unroll 6
    for (int i = 0; i < MR; i++)
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) c[i][v] = _mm512_setzero_si512();
    for (size_t k = 0; k < k4; k++, wp += NV * 64) {
        __m512i w[4];
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) w[v] = _mm512_loadu_si512(wp + v * 64);
#pragma GCC unroll 6
        for (int i = 0; i < MR; i++) {
            int32_t q;
            memcpy(&q, a + (size_t)i * lda + 4 * k, 4);
            const __m512i b = _mm512_set1_epi32(q);
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++) STEP(c[i][v], b, w[v]);
        }
    }
#pragma GCC unroll 6
    for (int i = 0; i < MR; i++)
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) _mm512_storeu_si512(acc + i * LITHE__Q8_PW + v * 16, c[i][v]);
}

#define PT(m, n)                                                                                                   \
    static void ptile_##m##x##n(size_t k4, const uint8_t *a, size_t lda, const int8_t *wp, int32_t *acc) {       \
        ptile_mn(m, n, k4, a, lda, wp, acc);                                                                       \
    }
#define PT4(m) PT(m, 1) PT(m, 2) PT(m, 3) PT(m, 4)
PT4(1) PT4(2) PT4(3) PT4(4) PT4(5) PT4(6)
#undef PT4
#undef PT
typedef void (*ptile_fn)(size_t k4, const uint8_t *a, size_t lda, const int8_t *wp, int32_t *acc);
#define PT4(m) {ptile_##m##x1, ptile_##m##x2, ptile_##m##x3, ptile_##m##x4}
static const ptile_fn ptiles[PMR][4] = {PT4(1), PT4(2), PT4(3), PT4(4), PT4(5), PT4(6)};
#undef PT4

static void ptile_vnni(size_t mr, size_t nc, size_t k4, const uint8_t *a, size_t lda, const int8_t *wp, int32_t *acc) {
    ptiles[mr - 1][(nc + 15) / 16 - 1](k4, a, lda, wp, acc);
}

/* qgemm.h's quantize pass, 16 codes a step: the AVX2 twin's operations in zmm (vdivps, the IEEE
 * quotient; minps(hi, t) keeps a NaN, maxps(t, lo) takes it to lo; +- 1.5 * 2^23 rounds half to
 * even; + off; vcvtps2dq, exact on an integer in [0, 255]) and vpmovusdb to bytes, no packs and
 * permutes (32K codes 4.2 -> ~2 us on Zen 5); the last n % 16 by the twin */
static inline __m128i u16v(const float *x, __m512 s, __m512 lo, __m512 hi, __m512 off) {
    const __m512 big = _mm512_set1_ps(12582912.0f);
    __m512 t = _mm512_max_ps(_mm512_min_ps(hi, _mm512_div_ps(_mm512_loadu_ps(x), s)), lo);
    t = _mm512_add_ps(_mm512_sub_ps(_mm512_add_ps(t, big), big), off);
    return _mm512_cvtusepi32_epi8(_mm512_cvtps_epi32(t));
}
static void quant_vnni(size_t n, const float *x, const lithe__q8_qx *q, uint8_t *u) {
    const __m512 s = _mm512_set1_ps(q->scale), lo = _mm512_set1_ps(q->lo), hi = _mm512_set1_ps(q->hi),
                 off = _mm512_set1_ps(q->off);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) _mm_storeu_si128((__m128i *)(u + i), u16v(x + i, s, lo, hi, off));
    if (i < n) lithe__q8_quant_ref(n - i, x + i, q, u + i);
}

/* qgemm.h's epilogue, 16 columns a step: the AVX2 twin's operations in zmm (vpmulld, vpsubd,
 * vcvtdq2ps, two vmulps, vaddps: each rounded alone, in the scalar twin's order), the last n % 16
 * columns masked */
static void epi_vnni(size_t n, const int32_t *acc, int32_t za, const int32_t *wsum, float sa, const float *sw,
                     bool per_col, const float *bias, float *y) {
    const __m512i zv = _mm512_set1_epi32(za);
    const __m512 sav = _mm512_set1_ps(sa), s0 = _mm512_set1_ps(sa * sw[0]);
    for (size_t c = 0; c < n; c += 16) {
        const __mmask16 m = n - c >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - c)) - 1);
        __m512i d = _mm512_sub_epi32(_mm512_maskz_loadu_epi32(m, acc + c),
                                     _mm512_mullo_epi32(zv, _mm512_maskz_loadu_epi32(m, wsum + c)));
        __m512 sc = per_col ? _mm512_mul_ps(sav, _mm512_maskz_loadu_ps(m, sw + c)) : s0;
        __m512 t = _mm512_mul_ps(_mm512_cvtepi32_ps(d), sc);
        if (bias) t = _mm512_add_ps(t, _mm512_maskz_loadu_ps(m, bias + c));
        _mm512_mask_storeu_ps(y + c, m, t);
    }
}

static const lithe__q8_kernel vnni_kernel = {"avx512vnni", tile_vnni, LITHE__Q8_A_U8, epi_vnni, quant_vnni, ptile_vnni};
const lithe__q8_kernel *lithe__q8_kernel_vnni(void) {
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vnni") &&
                   __builtin_cpu_supports("bmi2")
               ? &vnni_kernel
               : NULL;
}
#else
const lithe__q8_kernel *lithe__q8_kernel_vnni(void) { return 0; }
#endif
