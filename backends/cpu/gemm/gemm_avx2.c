/* AVX2 + FMA SGEMM microkernel (compiled with -mavx2 -mfma on x86-64 only; chosen at run time):
 * 6 x 16, twelve ymm accumulators, two B registers and one broadcast of 16; the M = 1 kernels
 * (8 x 8 in-register transposes for x · Wᵀ: in-lane ones fed by 128-bit inserts for whole row
 * blocks) and the transposing packer (lithe__avx2_transpose8). */
#include "gemm.h"

#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

#include "../simd/avx2_transpose.h"

#define MR 6
#define NR 16

#include "../simd/avx2_clamp.h"

/* gemm.h's clamp in the store (simd/avx2_clamp.h): a fused relu / ReLU6 costs no pass over C (the
 * act kernel per tile row of 16 floats after the store was 13 % of mobilenet_v3's 16 -> 72 + ReLU
 * at 56x56). */
typedef lithe__avx2_clampv clampv;
static inline __attribute__((always_inline)) clampv clamp_of(const lithe__sgemm_ukparams *p) {
    return lithe__avx2_clamp_of(p->clamp, p->lo, p->hi);
}
#define clamp_v lithe__avx2_clamp

/* A partial row: the same operations as a full one, on a copy (kept out of line, so the
 * microkernel's accumulators stay in registers). */
static __attribute__((noinline)) void store_part(__m256 t, float *c, const float *bias, const float *rb, float beta,
                                                 size_t n, clampv cv) {
    float cb[8] = {0}, bb[8] = {0}, out[8];
    for (size_t j = 0; j < n; j++) cb[j] = c[j];
    if (bias)
        for (size_t j = 0; j < n; j++) bb[j] = bias[j];
    if (beta != 0.0f) t = _mm256_fmadd_ps(_mm256_set1_ps(beta), _mm256_loadu_ps(cb), t);
    if (bias) t = _mm256_add_ps(t, _mm256_loadu_ps(bb));
    if (rb) t = _mm256_add_ps(t, _mm256_set1_ps(*rb));
    if (cv.cl) t = clamp_v(t, cv);
    _mm256_storeu_ps(out, t);
    for (size_t j = 0; j < n; j++) c[j] = out[j];
}

/* The write rule of gemm.h; alpha 1 skips its multiply (1 t is t, bit for bit), rb (bias_rows_ok: the
 * row's bias, one add after the column bias) NULL for none. */
static inline __attribute__((always_inline)) void store_row(__m256 acc, float *c, const float *bias, const float *rb,
                                                            __m256 valpha, bool alpha1, float beta, size_t n,
                                                            clampv cv) {
    __m256 t = alpha1 ? acc : _mm256_mul_ps(valpha, acc);
    if (n >= 8) {
        if (beta != 0.0f) t = _mm256_fmadd_ps(_mm256_set1_ps(beta), _mm256_loadu_ps(c), t);
        if (bias) t = _mm256_add_ps(t, _mm256_loadu_ps(bias));
        if (rb) t = _mm256_add_ps(t, _mm256_set1_ps(*rb));
        if (cv.cl) t = clamp_v(t, cv);
        _mm256_storeu_ps(c, t);
    } else {
        store_part(t, c, bias, rb, beta, n, cv);
    }
}

/* The 6 x 16 tile's body: row i's step k at a[ao_i + k as], ao_i = i lda for i < ar, 0 past it.
 * Packed (ukernel): ar = MR, lda = 1, as = MR; A where it lies (gemm.h's ukernel_a): ar = mr (rows
 * past mr read row 0 again, never stored), as = 1. B's step k: the packed sliver's b + k NR, or, for
 * ukernel_bp (brows not NULL), NR contiguous floats at brows[k] + boff (a convolution's shifted rows
 * read in place: the stem's 3 -> 16 at 112x112 no longer packs 27 x 12544 floats for 16 filters).
 * The same FMAs on the same values either way, so the same bits. */
static inline __attribute__((always_inline)) void uk_6x16(int R, size_t mr, size_t nr, size_t kc, const float *a,
                                                          size_t ar, size_t lda, size_t as, const float *b,
                                                          const float *const *brows, int64_t boff, float *c,
                                                          size_t ldc, const lithe__sgemm_ukparams *p) {
    const size_t ao0 = 0, ao1 = (ar > 1 ? 1 : 0) * lda, ao2 = (ar > 2 ? 2 : 0) * lda, ao3 = (ar > 3 ? 3 : 0) * lda,
                 ao4 = (ar > 4 ? 4 : 0) * lda, ao5 = (ar > 5 ? 5 : 0) * lda;
    /* named accumulators: GCC keeps an array of them in memory */
    __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00,
           c40 = c00, c41 = c00, c50 = c00, c51 = c00;
    for (size_t k = 0; k < kc; k++) {
        const float *bk = brows ? brows[k] + boff : b + k * NR;
        __m256 b0 = _mm256_loadu_ps(bk), b1 = _mm256_loadu_ps(bk + 8), x;
#define STEP(i)                                                                                                   \
    if (R > i) {                                                                                                  \
        x = _mm256_broadcast_ss(a + ao##i);                                                                       \
        c##i##0 = _mm256_fmadd_ps(x, b0, c##i##0);                                                                \
        c##i##1 = _mm256_fmadd_ps(x, b1, c##i##1);                                                                \
    }
        STEP(0) STEP(1) STEP(2) STEP(3) STEP(4) STEP(5)
#undef STEP
        a += as;
    }
    const bool a1 = p->alpha == 1.0f;
    const float *bias = p->bias;
    const float *rbs = p->bias_rows; /* bias_rows_ok */
    if (mr == MR && nr == NR && a1 && !bias && !rbs && !p->clamp) {
        /* the plain full tile (the backward's and the attention's products, small kc: the general
         * epilogue's tests per half row and its spills were a third of a 6 x 16 x 32 call): store_row's
         * operations for this case, so the same bits */
        const float beta = p->beta;
        const __m256 vb = _mm256_set1_ps(beta);
#define PLAIN(i)                                                                                                  \
    {                                                                                                             \
        float *ci = c + (size_t)i * ldc;                                                                          \
        if (beta != 0.0f) {                                                                                       \
            c##i##0 = _mm256_fmadd_ps(vb, _mm256_loadu_ps(ci), c##i##0);                                          \
            c##i##1 = _mm256_fmadd_ps(vb, _mm256_loadu_ps(ci + 8), c##i##1);                                      \
        }                                                                                                         \
        _mm256_storeu_ps(ci, c##i##0);                                                                            \
        _mm256_storeu_ps(ci + 8, c##i##1);                                                                        \
    }
        PLAIN(0) PLAIN(1) PLAIN(2) PLAIN(3) PLAIN(4) PLAIN(5)
#undef PLAIN
        return;
    }
    if (brows && mr == (size_t)R && nr == NR && a1 && !bias && !rbs && p->beta == 0.0f && p->clamp) {
        /* a convolution's full tile read in place with its act in the store (the stem's 3 -> 16 with
         * HardSwish): store_row's operations for this case with the clamp a constant, not tested per
         * half row (the general epilogue was half the stem's instructions) */
        const clampv cv = clamp_of(p);
#define CROW(i, CL)                                                                                               \
    if (R > i) {                                                                                                  \
        _mm256_storeu_ps(c + (size_t)i * ldc, clamp_v(c##i##0, (clampv){CL, cv.lo, cv.hi}));                     \
        _mm256_storeu_ps(c + (size_t)i * ldc + 8, clamp_v(c##i##1, (clampv){CL, cv.lo, cv.hi}));                 \
    }
#define CTILE(CL) CROW(0, CL) CROW(1, CL) CROW(2, CL) CROW(3, CL) CROW(4, CL) CROW(5, CL)
        if (p->clamp == LITHE__SGEMM_CLAMP_HSWISH) {
            CTILE(LITHE__SGEMM_CLAMP_HSWISH)
        } else if (p->clamp == LITHE__SGEMM_CLAMP_RELU) {
            CTILE(LITHE__SGEMM_CLAMP_RELU)
        } else {
            CTILE(LITHE__SGEMM_CLAMP_CLIP)
        }
#undef CTILE
#undef CROW
        return;
    }
    __m256 va = _mm256_set1_ps(p->alpha);
    const clampv cv = clamp_of(p);
#define ROW(i)                                                                                                    \
    if (mr > i) {                                                                                                 \
        const float *rb = rbs ? rbs + i : NULL;                                                                   \
        store_row(c##i##0, c + (size_t)i * ldc, bias, rb, va, a1, p->beta, nr, cv);                              \
        if (nr > 8)                                                                                               \
            store_row(c##i##1, c + (size_t)i * ldc + 8, bias ? bias + 8 : NULL, rb, va, a1, p->beta, nr - 8, cv); \
    }
    ROW(0) ROW(1) ROW(2) ROW(3) ROW(4) ROW(5)
#undef ROW
}

static void lithe_f32_gemm_ukernel_6x16__avx2(size_t mr, size_t nr, size_t kc, const float *a, const float *b, float *c,
                                              size_t ldc, const lithe__sgemm_ukparams *p) {
    uk_6x16(6, mr, nr, kc, a, MR, 1, MR, b, NULL, 0, c, ldc, p);
}

/* (a last tile of up to 4 filters computes 4 rows, not 6: the stem's 16 filters are tiles of 6, 6, 4,
 * and its 12,544 pixels read in place make that third tile a third of the FMAs; the rows it stores
 * are the same sums) */
static void lithe_f32_gemm_ukernel_bp_6x16__avx2(size_t mr, size_t nr, size_t kc, const float *a,
                                                 const float *const *rows, int64_t off, float *c, size_t ldc,
                                                 const lithe__sgemm_ukparams *p) {
    if (mr <= 4) uk_6x16(4, mr, nr, kc, a, MR, 1, MR, NULL, rows, off, c, ldc, p);
    else uk_6x16(6, mr, nr, kc, a, MR, 1, MR, NULL, rows, off, c, ldc, p);
}

static void lithe_f32_gemm_ukernel_a_6x16__avx2(size_t mr, size_t nr, size_t kc, const float *a, size_t lda,
                                                const float *b, float *c, size_t ldc, const lithe__sgemm_ukparams *p) {
    uk_6x16(6, mr, nr, kc, a, mr, lda, 1, b, NULL, 0, c, ldc, p);
}

/* One row against G packed slivers at once (gemm.h's urow): 2 G accumulators (8 at G = 4),
 * each element accumulated and written exactly as the microkernel does a row of its tile. */
static inline __attribute__((always_inline)) void urow_group(int G, size_t nr_last, size_t kc, const float *x,
                                                             const float *b, float *c, const float *bias, __m256 va,
                                                             float beta, clampv cv) {
    const size_t sl = kc * NR;
    __m256 acc[8];
    for (int g = 0; g < 2 * G; g++) acc[g] = _mm256_setzero_ps();
    for (size_t k = 0; k < kc; k++) {
        __m256 xv = _mm256_broadcast_ss(x + k);
        for (int g = 0; g < G; g++) {
            acc[2 * g] = _mm256_fmadd_ps(xv, _mm256_load_ps(b + g * sl + k * NR), acc[2 * g]);
            acc[2 * g + 1] = _mm256_fmadd_ps(xv, _mm256_load_ps(b + g * sl + k * NR + 8), acc[2 * g + 1]);
        }
    }
    for (int g = 0; g < G; g++) {
        size_t nr = g == G - 1 ? nr_last : NR;
        store_row(acc[2 * g], c + g * NR, bias ? bias + g * NR : NULL, NULL, va, false, beta, nr, cv);
        if (nr > 8)
            store_row(acc[2 * g + 1], c + g * NR + 8, bias ? bias + g * NR + 8 : NULL, NULL, va, false, beta, nr - 8, cv);
    }
}

static void lithe_f32_gemm_urow_1x16__avx2(size_t ns, size_t nr_last, size_t kc, const float *x, const float *b,
                                           float *c, const lithe__sgemm_ukparams *p) {
    __m256 va = _mm256_set1_ps(p->alpha);
    const clampv cv = clamp_of(p);
    const size_t sl = kc * NR;
    size_t s = 0;
    for (; s + 4 <= ns; s += 4)
        urow_group(4, s + 4 == ns ? nr_last : NR, kc, x, b + s * sl, c + s * NR, p->bias ? p->bias + s * NR : NULL, va,
                   p->beta, cv);
    const float *bias = p->bias ? p->bias + s * NR : NULL;
    switch (ns - s) {
    case 3: urow_group(3, nr_last, kc, x, b + s * sl, c + s * NR, bias, va, p->beta, cv); break;
    case 2: urow_group(2, nr_last, kc, x, b + s * sl, c + s * NR, bias, va, p->beta, cv); break;
    case 1: urow_group(1, nr_last, kc, x, b + s * sl, c + s * NR, bias, va, p->beta, cv); break;
    default: break;
    }
}

/* ---- M = 1 with the microkernel's arithmetic (gemm.h): lanes are outputs, k in order ---- */

/* One group of up to 8 outputs of x · Wᵀ: 8 rows x 8 steps of k transposed in registers. */
static void gemv_t_group(size_t n, size_t K, size_t kc, float alpha, const float *x, const float *w, size_t ldw,
                         float beta, float *y, const float *bias) {
    __m256 c = _mm256_setzero_ps(), va = _mm256_set1_ps(alpha);
    for (size_t p = 0; p < K; p += kc) {
        size_t e = K - p < kc ? K : p + kc;
        __m256 acc = _mm256_setzero_ps();
        for (size_t k0 = p; k0 < e; k0 += 8) {
            size_t kw = e - k0 < 8 ? e - k0 : 8;
            __m256 r[8];
            if (n == 8 && kw == 8) {
                for (size_t i = 0; i < 8; i++) r[i] = _mm256_loadu_ps(w + i * ldw + k0);
            } else {
                float buf[8][8] = {{0}};
                for (size_t i = 0; i < n; i++)
                    for (size_t k = 0; k < kw; k++) buf[i][k] = w[i * ldw + k0 + k];
                for (size_t i = 0; i < 8; i++) r[i] = _mm256_loadu_ps(buf[i]);
            }
            lithe__avx2_transpose8(r);
            if (kw == 8)
                for (size_t kk = 0; kk < 8; kk++) acc = _mm256_fmadd_ps(_mm256_broadcast_ss(x + k0 + kk), r[kk], acc);
            else
                for (size_t kk = 0; kk < kw; kk++) acc = _mm256_fmadd_ps(_mm256_broadcast_ss(x + k0 + kk), r[kk], acc);
        }
        float b = p == 0 ? beta : 1.0f;
        __m256 t = _mm256_mul_ps(va, acc);
        if (b != 0.0f) {
            float old[8] = {0};
            if (p == 0) {
                for (size_t i = 0; i < n; i++) old[i] = y[i];
                t = _mm256_fmadd_ps(_mm256_set1_ps(b), _mm256_loadu_ps(old), t);
            } else {
                t = _mm256_fmadd_ps(_mm256_set1_ps(b), c, t);
            }
        }
        c = t;
    }
    float bb[8] = {0}, out[8];
    if (bias) {
        for (size_t i = 0; i < n; i++) bb[i] = bias[i];
        c = _mm256_add_ps(c, _mm256_loadu_ps(bb));
    }
    _mm256_storeu_ps(out, c);
    for (size_t i = 0; i < n; i++) y[i] = out[i];
}

/* 8 rows x 8 steps of x · Wᵀ into acc (one FMA chain per lane = row, k in order), with no lane
 * crossing: register q < 4 holds rows q and q + 4 over steps 0-3 (a 128-bit load and a 128-bit
 * insert from memory, which the load unit does), q >= 4 the same over steps 4-7; a 4 x 4
 * transpose inside each 128-bit half (two in-lane stages) then leaves step s of rows 0-7 in
 * natural order. 16 in-lane shuffles per 64 floats against lithe__avx2_transpose8's 24 (8 lane-crossing). */
static inline __attribute__((always_inline)) __m256 gv_step8(const float *w, size_t L, __m256 acc, const float *x) {
    __m256 r[8];
    for (int q = 0; q < 4; q++) {
        r[q] = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(w + (size_t)q * L)),
                                    _mm_loadu_ps(w + (size_t)(q + 4) * L), 1);
        r[4 + q] = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(w + (size_t)q * L + 4)),
                                        _mm_loadu_ps(w + (size_t)(q + 4) * L + 4), 1);
    }
    for (int h = 0; h < 8; h += 4) {
        __m256 t0 = _mm256_unpacklo_ps(r[h], r[h + 1]), t1 = _mm256_unpackhi_ps(r[h], r[h + 1]);
        __m256 t2 = _mm256_unpacklo_ps(r[h + 2], r[h + 3]), t3 = _mm256_unpackhi_ps(r[h + 2], r[h + 3]);
        __m256 s0 = _mm256_castpd_ps(_mm256_unpacklo_pd(_mm256_castps_pd(t0), _mm256_castps_pd(t2)));
        __m256 s1 = _mm256_castpd_ps(_mm256_unpackhi_pd(_mm256_castps_pd(t0), _mm256_castps_pd(t2)));
        __m256 s2 = _mm256_castpd_ps(_mm256_unpacklo_pd(_mm256_castps_pd(t1), _mm256_castps_pd(t3)));
        __m256 s3 = _mm256_castpd_ps(_mm256_unpackhi_pd(_mm256_castps_pd(t1), _mm256_castps_pd(t3)));
        acc = _mm256_fmadd_ps(_mm256_broadcast_ss(x + h), s0, acc);
        acc = _mm256_fmadd_ps(_mm256_broadcast_ss(x + h + 1), s1, acc);
        acc = _mm256_fmadd_ps(_mm256_broadcast_ss(x + h + 2), s2, acc);
        acc = _mm256_fmadd_ps(_mm256_broadcast_ss(x + h + 3), s3, acc);
    }
    return acc;
}

/* GV_G groups of 8 rows side by side: each lane's chain waits the FMA latency (4 cycles) per step,
 * so one group alone (gemv_t_group) runs ~1 FMA per 4 cycles; GV_G independent chains overlap it.
 * On Zen 3 (1, 512, 784), min of runs: gemv_t_group 0.064 ms; 2 groups of gv_step8 0.048, 4 and
 * 8 groups 0.052 (register pressure). */
#define GV_G 2
static void gemv_t_rows(size_t K, size_t kc, float alpha, const float *x, const float *w, size_t L, float beta,
                        float *y, const float *bias) {
    __m256 c[GV_G], va = _mm256_set1_ps(alpha);
    for (int g = 0; g < GV_G; g++) c[g] = _mm256_setzero_ps();
    for (size_t p = 0; p < K; p += kc) {
        size_t e = K - p < kc ? K : p + kc, k = p;
        __m256 acc[GV_G];
        for (int g = 0; g < GV_G; g++) acc[g] = _mm256_setzero_ps();
        for (; k + 8 <= e; k += 8)
            for (int g = 0; g < GV_G; g++) acc[g] = gv_step8(w + (size_t)g * 8 * L + k, L, acc[g], x + k);
        for (; k < e; k++) /* the block's last steps (its length not a multiple of 8), in order */
            for (int g = 0; g < GV_G; g++) {
                float col[8];
                for (size_t i = 0; i < 8; i++) col[i] = w[((size_t)g * 8 + i) * L + k];
                acc[g] = _mm256_fmadd_ps(_mm256_broadcast_ss(x + k), _mm256_loadu_ps(col), acc[g]);
            }
        float b = p == 0 ? beta : 1.0f;
        for (int g = 0; g < GV_G; g++) {
            __m256 t = _mm256_mul_ps(va, acc[g]);
            if (b != 0.0f) t = _mm256_fmadd_ps(_mm256_set1_ps(b), p == 0 ? _mm256_loadu_ps(y + 8 * g) : c[g], t);
            c[g] = t;
        }
    }
    for (int g = 0; g < GV_G; g++) {
        __m256 t = c[g];
        if (bias) t = _mm256_add_ps(t, _mm256_loadu_ps(bias + 8 * g));
        _mm256_storeu_ps(y + 8 * g, t);
    }
}

static void gemv_t(size_t n, size_t K, size_t kc, float alpha, const float *x, const float *w, size_t ldw, float beta,
                   float *y, const float *bias) {
    size_t j = 0;
    for (; j + 8 * GV_G <= n; j += 8 * GV_G)
        gemv_t_rows(K, kc, alpha, x, w + j * ldw, ldw, beta, y + j, bias ? bias + j : NULL);
    for (; j < n; j += 8) /* the last rows, 8 at a time */
        gemv_t_group(n - j < 8 ? n - j : 8, K, kc, alpha, x, w + j * ldw, ldw, beta, y + j, bias ? bias + j : NULL);
}

#ifndef GVM_G2
#define GVM_G2 2
#endif
#ifndef GVM_G3
#define GVM_G3 1
#endif
#ifndef GVM_G4
#define GVM_G4 2
#endif
/* ---- 2..4 rows of x (gemm.h's gemv_tm): each 8 x 8 block of W transposed once for all m rows ----
 * gv_step8's loads and in-lane shuffles, then step s of the block's rows goes into every row's
 * accumulator: acc[g * m + i] is W's rows 8g..8g+7 against x's row i, one FMA chain per lane, k
 * in order, the write rule of gemv_t_rows: each y row has gemv_t's bits. The shuffles were the
 * GEMV's cost; m rows share them. */
static inline __attribute__((always_inline)) void gvm_step8(int m, const float *w, size_t L, __m256 *acc,
                                                            const float *x, size_t ldx) {
    for (int h = 0; h < 8; h += 4) { /* steps h..h+3: gv_step8's r[h..h+3], loaded here (fewer live registers) */
        __m256 r[4];
        for (int q = 0; q < 4; q++)
            r[q] = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(w + (size_t)q * L + h)),
                                        _mm_loadu_ps(w + (size_t)(q + 4) * L + h), 1);
        __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
        __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
        __m256 s[4];
        s[0] = _mm256_castpd_ps(_mm256_unpacklo_pd(_mm256_castps_pd(t0), _mm256_castps_pd(t2)));
        s[1] = _mm256_castpd_ps(_mm256_unpackhi_pd(_mm256_castps_pd(t0), _mm256_castps_pd(t2)));
        s[2] = _mm256_castpd_ps(_mm256_unpacklo_pd(_mm256_castps_pd(t1), _mm256_castps_pd(t3)));
        s[3] = _mm256_castpd_ps(_mm256_unpackhi_pd(_mm256_castps_pd(t1), _mm256_castps_pd(t3)));
        for (int u = 0; u < 4; u++)
            for (int i = 0; i < m; i++)
                acc[i] = _mm256_fmadd_ps(_mm256_broadcast_ss(x + (size_t)i * ldx + h + u), s[u], acc[i]);
    }
}

/* G groups of 8 rows of W against m rows of x (m * G <= 8 accumulators) */
static inline __attribute__((always_inline)) void gvm_rows(int m, int G, size_t K, size_t kc, float alpha,
                                                           const float *x, size_t ldx, const float *w, size_t L,
                                                           float beta, float *y, size_t ldy, const float *bias) {
    __m256 c[8], va = _mm256_set1_ps(alpha);
    for (int a = 0; a < m * G; a++) c[a] = _mm256_setzero_ps();
    for (size_t p = 0; p < K; p += kc) {
        size_t e = K - p < kc ? K : p + kc, k = p;
        __m256 acc[8];
        for (int a = 0; a < m * G; a++) acc[a] = _mm256_setzero_ps();
        for (; k + 8 <= e; k += 8)
            for (int g = 0; g < G; g++) gvm_step8(m, w + (size_t)g * 8 * L + k, L, acc + g * m, x + k, ldx);
        for (; k < e; k++) /* the block's last steps, in order */
            for (int g = 0; g < G; g++) {
                float col[8];
                for (size_t i = 0; i < 8; i++) col[i] = w[((size_t)g * 8 + i) * L + k];
                __m256 cv = _mm256_loadu_ps(col);
                for (int i = 0; i < m; i++)
                    acc[g * m + i] = _mm256_fmadd_ps(_mm256_broadcast_ss(x + (size_t)i * ldx + k), cv, acc[g * m + i]);
            }
        float b = p == 0 ? beta : 1.0f;
        for (int g = 0; g < G; g++)
            for (int i = 0; i < m; i++) {
                __m256 t = _mm256_mul_ps(va, acc[g * m + i]);
                if (b != 0.0f)
                    t = _mm256_fmadd_ps(_mm256_set1_ps(b), p == 0 ? _mm256_loadu_ps(y + (size_t)i * ldy + 8 * g) : c[g * m + i], t);
                c[g * m + i] = t;
            }
    }
    for (int g = 0; g < G; g++)
        for (int i = 0; i < m; i++) {
            __m256 t = c[g * m + i];
            if (bias) t = _mm256_add_ps(t, _mm256_loadu_ps(bias + 8 * g));
            _mm256_storeu_ps(y + (size_t)i * ldy + 8 * g, t);
        }
}

#define GVM(M_, G_)                                                                                               \
    for (; j + 8 * (G_) <= n; j += 8 * (G_))                                                                      \
        gvm_rows(M_, G_, K, kc, alpha, x, ldx, w + j * ldw, ldw, beta, y + j, ldy, bias ? bias + j : NULL);
static void gemv_tm(size_t m, size_t n, size_t K, size_t kc, float alpha, const float *x, size_t ldx, const float *w,
                    size_t ldw, float beta, float *y, size_t ldy, const float *bias) {
    size_t j = 0;
    switch (m) {
    case 2: GVM(2, GVM_G2) break;
    case 3: GVM(3, GVM_G3) break;
    case 4: GVM(4, GVM_G4) break;
    default: break;
    }
    for (size_t i = 0; i < m; i++) /* the rows of W left over (n % 8 G), or m outside 2..4: row by row */
        if (j < n) gemv_t(n - j, K, kc, alpha, x + i * ldx, w + j * ldw, ldw, beta, y + i * ldy + j, bias ? bias + j : NULL);
}
#undef GVM

/* x · W: 8 columns of y per accumulator, 4 accumulators, k in order; partial columns through a copy. */
static void gemv_n(size_t n, size_t K, size_t kc, float alpha, const float *x, const float *w, size_t ldw, float beta,
                   float *y, const float *bias) {
    __m256 va = _mm256_set1_ps(alpha);
    for (size_t j = 0; j < n; j += 32) {
        size_t nb = n - j < 32 ? n - j : 32, groups = (nb + 7) / 8;
        __m256 c[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
        for (size_t p = 0; p < K; p += kc) {
            size_t e = K - p < kc ? K : p + kc;
            __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
            for (size_t k = p; k < e; k++) {
                __m256 xv = _mm256_broadcast_ss(x + k);
                const float *wk = w + k * ldw + j;
                if (nb == 32) {
                    for (int g = 0; g < 4; g++) acc[g] = _mm256_fmadd_ps(xv, _mm256_loadu_ps(wk + 8 * g), acc[g]);
                } else {
                    float buf[32] = {0};
                    for (size_t i = 0; i < nb; i++) buf[i] = wk[i];
                    for (size_t g = 0; g < groups; g++)
                        acc[g] = _mm256_fmadd_ps(xv, _mm256_loadu_ps(buf + 8 * g), acc[g]);
                }
            }
            float b = p == 0 ? beta : 1.0f;
            for (size_t g = 0; g < groups; g++) {
                __m256 t = _mm256_mul_ps(va, acc[g]);
                if (b != 0.0f) {
                    float old[8] = {0};
                    size_t v = nb - 8 * g < 8 ? nb - 8 * g : 8;
                    if (p == 0)
                        for (size_t i = 0; i < v; i++) old[i] = y[j + 8 * g + i];
                    t = _mm256_fmadd_ps(_mm256_set1_ps(b), p == 0 ? _mm256_loadu_ps(old) : c[g], t);
                }
                c[g] = t;
            }
        }
        for (size_t g = 0; g < groups; g++) {
            size_t v = nb - 8 * g < 8 ? nb - 8 * g : 8;
            float bb[8] = {0}, out[8];
            __m256 t = c[g];
            if (bias) {
                for (size_t i = 0; i < v; i++) bb[i] = bias[j + 8 * g + i];
                t = _mm256_add_ps(t, _mm256_loadu_ps(bb));
            }
            _mm256_storeu_ps(out, t);
            for (size_t i = 0; i < v; i++) y[j + 8 * g + i] = out[i];
        }
    }
}

/* ---- packing: the transposing case (lanes are rows of the source) in 8 x 8 blocks ---- */

static __m256i lane_mask(size_t n) { /* the first n (<= 8) lanes */
    const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), idx);
}

static void pack_rows(size_t R, size_t lanes, size_t kc, const float *src, size_t ld, float *dst) {
    for (size_t l0 = 0; l0 < R; l0 += 8) {
        size_t w = R - l0 < 8 ? R - l0 : 8; /* lanes of dst this group writes */
        __m256i wm = lane_mask(w);
        for (size_t k0 = 0; k0 < kc; k0 += 8) {
            size_t kw = kc - k0 < 8 ? kc - k0 : 8;
            __m256 r[8];
            if (l0 + 8 <= lanes && kw == 8) {
                for (size_t i = 0; i < 8; i++) r[i] = _mm256_loadu_ps(src + (l0 + i) * ld + k0);
            } else {
                __m256i km = lane_mask(kw);
                for (size_t i = 0; i < 8; i++)
                    r[i] = l0 + i < lanes ? _mm256_maskload_ps(src + (l0 + i) * ld + k0, km) : _mm256_setzero_ps();
            }
            lithe__avx2_transpose8(r);
            if (w == 8)
                for (size_t i = 0; i < kw; i++) _mm256_storeu_ps(dst + (k0 + i) * R + l0, r[i]);
            else
                for (size_t i = 0; i < kw; i++) _mm256_maskstore_ps(dst + (k0 + i) * R + l0, wm, r[i]);
        }
    }
}

static void pack_cols(size_t R, size_t lanes, size_t kc, const float *src, size_t ld, float *dst) {
    if (R == MR && lanes == MR) { /* whole A slivers (a pointwise convolution's pixels): 4 + 2 floats a step */
        for (size_t k = 0; k < kc; k++) {
            const float *s = src + k * ld;
            float *d = dst + k * MR;
            _mm_storeu_ps(d, _mm_loadu_ps(s));
            _mm_storel_pi((__m64 *)(void *)(d + 4), _mm_loadl_pi(_mm_setzero_ps(), (const __m64 *)(const void *)(s + 4)));
        }
        return;
    }
    for (size_t k = 0; k < kc; k++) {
        const float *s = src + k * ld;
        float *d = dst + k * R;
        for (size_t l = 0; l < lanes; l++) d[l] = s[l];
        for (size_t l = lanes; l < R; l++) d[l] = 0.0f;
    }
}

static void pack_a(size_t lanes, size_t kc, const float *src, size_t ld, bool rows, float *dst) {
    if (rows) pack_rows(MR, lanes, kc, src, ld, dst);
    else pack_cols(MR, lanes, kc, src, ld, dst);
}
static void pack_b(size_t lanes, size_t kc, const float *src, size_t ld, bool rows, float *dst) {
    if (rows) pack_rows(NR, lanes, kc, src, ld, dst);
    else pack_cols(NR, lanes, kc, src, ld, dst);
}

/* lithe__sgemm_pixels' A slivers (gemm.h's pack_a_ptrs): step k's lanes contiguous at rows[k] + off (a
 * tap's pixels along an output row). A whole sliver is 4 + 2 floats a step, read and written exactly
 * (nothing past the lanes: the sliver's neighbour in the block, or the end of the padded plane); the
 * driver's generic path cut each sliver into runs of KW steps and called pack_cols per run (LeNet's
 * 16 -> 32 5x5 at batch 32, pixel rows: ~31 instructions a step, 13 M of a training step's 170 M). */
static void pack_a_ptrs(size_t lanes, size_t kc, const float *const *rows, int64_t off, float *dst) {
    if (lanes == MR) {
        for (size_t k = 0; k < kc; k++) {
            const float *s = rows[k] + off;
            float *d = dst + k * MR;
            _mm_storeu_ps(d, _mm_loadu_ps(s));
            _mm_storel_pi((__m64 *)(void *)(d + 4), _mm_loadl_pi(_mm_setzero_ps(), (const __m64 *)(const void *)(s + 4)));
        }
        return;
    }
    for (size_t k = 0; k < kc; k++) {
        const float *s = rows[k] + off;
        float *d = dst + k * MR;
        for (size_t l = 0; l < MR; l++) d[l] = l < lanes ? s[l] : 0.0f;
    }
}

/* gemm.h's pack_a_taps (conv/backward.c's dW: col's A slivers, taps as lanes, pixels as steps, from
 * the taps' shifted rows): 8 steps of the sliver's rows transposed in registers (lithe__avx2_transpose8, rows past
 * `lanes` zero), each step stored as 4 + 2 floats; a last group under 8 steps by masked loads (nothing
 * past a row's run is read). The scalar loop stored a float at a time: ~3 instructions an element. */
static void pack_a_taps(size_t lanes, size_t kc, const float *const *rows, int64_t off, float *dst) {
    for (size_t k = 0; k < kc; k += 8) {
        size_t kw = kc - k < 8 ? kc - k : 8;
        __m256i km = lane_mask(kw);
        __m256 r[8];
        for (size_t i = 0; i < 8; i++)
            r[i] = i >= lanes ? _mm256_setzero_ps()
                   : kw == 8  ? _mm256_loadu_ps(rows[i] + off + k)
                              : _mm256_maskload_ps(rows[i] + off + k, km);
        lithe__avx2_transpose8(r);
        float *d = dst + k * MR;
        for (size_t t = 0; t < kw; t++) {
            _mm_storeu_ps(d + t * MR, _mm256_castps256_ps128(r[t]));
            _mm_storel_pi((__m64 *)(void *)(d + t * MR + 4), _mm256_extractf128_ps(r[t], 1));
        }
    }
}

/* gemm.h's add_tile: one rounded add per element, 8 lanes at a time, a row's last 1..7 by masked loads
 * and stores (nothing past a row is touched: there lie other rows' elements). The convolution backward's
 * col2im adds (conv/backward.c: one call per tap over its output rows) ran ~5 instructions an element
 * through the compiler's loop on 14-wide rows; the GEMM's residual adds (a fused Conv + Add) too. */
static void add_tile(size_t rows, size_t cols, float *c, size_t ldc, const float *rv, size_t ldr, bool first) {
    const size_t full = cols & ~(size_t)7;
    const __m256i m = lane_mask(cols - full);
    for (size_t i = 0; i < rows; i++) {
        float *ci = c + i * ldc;
        const float *ri = rv + i * ldr;
        for (size_t j = 0; j < full; j += 8) {
            __m256 x = _mm256_loadu_ps(ci + j), r = _mm256_loadu_ps(ri + j);
            _mm256_storeu_ps(ci + j, first ? _mm256_add_ps(r, x) : _mm256_add_ps(x, r));
        }
        if (full < cols) {
            __m256 x = _mm256_maskload_ps(ci + full, m), r = _mm256_maskload_ps(ri + full, m);
            _mm256_maskstore_ps(ci + full, m, first ? _mm256_add_ps(r, x) : _mm256_add_ps(x, r));
        }
    }
}

/* The first n (< 8) floats of v to p, 4, 2 and 1 at a time: nothing past p + n is written (there lie
 * the next tile's pixels, or another thread's). */
static inline __attribute__((always_inline)) void store_first(float *p, __m256 v, size_t n) {
    __m128 h = _mm256_castps256_ps128(v);
    if (n >= 4) {
        _mm_storeu_ps(p, h);
        p += 4;
        n -= 4;
        h = _mm256_extractf128_ps(v, 1);
    }
    if (n >= 2) {
        _mm_storel_pi((__m64 *)(void *)p, h);
        p += 2;
        n -= 2;
        h = _mm_movehl_ps(h, h);
    }
    if (n) _mm_store_ss(p, h);
}

/* dst[j * ldd + i] = src[i * lds + j] (i < rows, j < cols) in 8 x 8 blocks through lithe__avx2_transpose8 (gemm.h's
 * transpose). An edge block (the 6 x 16 tile lithe__sgemm_pixels stores transposed: every one of
 * its blocks; its 16 x 6 read back for a later K block) loads its rows, only their first cj floats
 * (a masked load: nothing past them is read), zeros for the missing rows, and stores the first ri
 * floats of each transposed row (store_first). (Through a zeroed buffer, the 6-row blocks were half
 * of a pointwise convolution's time: 48 -> 288 at 14x14, 171 -> 110 us.) */
static void transpose_tile(size_t rows, size_t cols, const float *src, size_t lds, float *dst, size_t ldd) {
    for (size_t i0 = 0; i0 < rows; i0 += 8)
        for (size_t j0 = 0; j0 < cols; j0 += 8) {
            size_t ri = rows - i0 < 8 ? rows - i0 : 8, cj = cols - j0 < 8 ? cols - j0 : 8;
            __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)cj), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
            __m256 r[8];
            for (size_t i = 0; i < 8; i++) {
                const float *s = src + (i0 + i) * lds + j0;
                r[i] = i >= ri ? _mm256_setzero_ps() : cj == 8 ? _mm256_loadu_ps(s) : _mm256_maskload_ps(s, mask);
            }
            lithe__avx2_transpose8(r);
            for (size_t j = 0; j < cj; j++) {
                if (ri == 8) _mm256_storeu_ps(dst + (j0 + j) * ldd + i0, r[j]);
                else store_first(dst + (j0 + j) * ldd + i0, r[j], ri);
            }
        }
}

static const lithe__sgemm_kernel kernel = {
    .isa = "avx2", .mr = MR, .nr = NR, .mc = 120, .kc = 256, .nc = 4096, .ukernel = lithe_f32_gemm_ukernel_6x16__avx2,
    .pack_a = pack_a, .pack_b = pack_b, .gemv_t = gemv_t, .gemv_n = gemv_n, .gemv_tm = gemv_tm,
    .urow = lithe_f32_gemm_urow_1x16__avx2,
    .ukernel_a = lithe_f32_gemm_ukernel_a_6x16__avx2, .ukernel_bp = lithe_f32_gemm_ukernel_bp_6x16__avx2,
    .transpose = transpose_tile, .pack_a_ptrs = pack_a_ptrs, .pack_a_taps = pack_a_taps, .add_tile = add_tile, .clamp_ok = true, .bias_rows_ok = true,
};

const lithe__sgemm_kernel *lithe__sgemm_kernel_avx2(void) {
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return NULL;
    return &kernel;
}

#elif defined(__x86_64__)
#error "gemm_avx2.c must be compiled with -mavx2 -mfma"
#endif
