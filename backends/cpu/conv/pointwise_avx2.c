/* pointwise.h's convolution with AVX2 + FMA (compiled with -mavx2 -mfma on x86-64 only; chosen at
 * run time): tiles of 6 filters x 16 pixels (twelve ymm accumulators, two X registers, one
 * broadcast of W), 6 x 8 for a plane's last 1..8 pixels, 4 rows for a last 1..4 filters; X's last
 * partial vector read and Y's written with masks. Each element's operations are the twin's
 * (lithe__conv_pw_ref), so its bits.
 *
 * Blocking (pointwise.h): K in blocks of at most PW_KC steps (a 16-pixel sliver of X, kc x 16, stays
 * in L1 across the filters), the filters in blocks whose W (mc x kc) stays in L2 across the columns.
 * A later K block continues each element's FMA chain from the value the previous one stored in Y
 * (a float stored and loaded exactly), so blocking never changes a bit. With a short K over a large
 * plane the filter tiles run outer over chunks of pixels (rows_outer): Y is written as six
 * sequential streams, not one line in each of M rows per column (112x112 planes: rows 49 KB apart
 * fall into four L1 sets). */
#include "pointwise.h"
#include "../gemm/gemm.h"

#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

#include "../simd/avx2_clamp.h" /* the store clamp, the act kernel's bits (HardSwish's h / 6 by FMAs: why there) */
#include "../simd/avx2_transpose.h"

enum {
    PW_KC = 256,           /* the most K steps per block: X's sliver, kc x 16 floats, in L1 */
    PW_WBLOCK = 48 * 1024, /* the most floats of W per block (mc x kc: 192 KB of the 512 KB L2) */
    PW_XCHUNK = 32 * 1024  /* rows_outer: floats of X per chunk of pixels (kc x pc, 128 KB, in L2) */
};

static inline __attribute__((always_inline)) __m256 ld(const float *p, bool full, __m256i mask) {
    return full ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, mask);
}

/* The K steps [k0, k1) of a tile of mr <= RR filters (RR: 6, or 4 for a last tile of 1..4) from m and
 * NV vectors of pixels from p (the last one full or masked), from zero (k0 = 0) or from the sums an
 * earlier block stored in Y: rows past mr (below RR) read filter m again (computed, never stored). */
static inline __attribute__((always_inline)) void tile(const lithe__conv_pw *c, int NV, bool full, __m256i mask,
                                                       int64_t m, size_t mr, int64_t p, int64_t k0, int64_t k1,
                                                       bool last, lithe__avx2_clampv cv, const int CL, const int RR) {
    const int64_t K = c->K, P = c->P;
    const float *w = c->W + m * K + k0, *x = c->X + k0 * P + p;
    const int64_t o1 = mr > 1 ? K : 0, o2 = mr > 2 ? 2 * K : 0, o3 = mr > 3 ? 3 * K : 0, o4 = mr > 4 ? 4 * K : 0,
                  o5 = mr > 5 ? 5 * K : 0;
    const bool f0 = NV == 2 || full; /* the first vector is whole unless it is the only, partial one */
    __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00,
           c40 = c00, c41 = c00, c50 = c00, c51 = c00;
    if (k0) {
#define LOAD(i)                                                                                                   \
    if (mr > i) {                                                                                                 \
        const float *yi = c->Y + (m + i) * P + p;                                                                 \
        c##i##0 = ld(yi, f0, mask);                                                                               \
        if (NV == 2) c##i##1 = ld(yi + 8, full, mask);                                                            \
    }
        LOAD(0) LOAD(1) LOAD(2) LOAD(3) LOAD(4) LOAD(5)
#undef LOAD
    }
#pragma GCC unroll 2
    for (int64_t k = k0; k < k1; k++, x += P, w++) {
        __m256 b0 = ld(x, f0, mask), b1 = NV == 2 ? ld(x + 8, full, mask) : b0, a;
#define STEP(i, o)                                                                                                \
    if (RR > i) {                                                                                                 \
        a = _mm256_broadcast_ss(w + o);                                                                           \
        c##i##0 = _mm256_fmadd_ps(a, b0, c##i##0);                                                                \
        if (NV == 2) c##i##1 = _mm256_fmadd_ps(a, b1, c##i##1);                                                   \
    }
        STEP(0, 0) STEP(1, o1) STEP(2, o2) STEP(3, o3) STEP(4, o4) STEP(5, o5)
#undef STEP
    }
    /* the last K block's epilogue, each step over the whole tile (one test per tile, not per vector;
     * the clamp CL a constant): bias, clamp, residual, the twin's operations on each element, in its order.
     * Rows past mr take row 0's bias and residual (valid memory; computed, never stored). */
    if (last) {
        const lithe__avx2_clampv k = {CL, cv.lo, cv.hi};
        if (c->b) {
            const float *bm = c->b + m;
            __m256 v;
#define BIAS(i, o)                                                                                                \
    if (RR > i) {                                                                                                 \
        v = _mm256_broadcast_ss(bm + o);                                                                          \
        c##i##0 = _mm256_add_ps(c##i##0, v);                                                                      \
        if (NV == 2) c##i##1 = _mm256_add_ps(c##i##1, v);                                                         \
    }
            BIAS(0, 0) BIAS(1, (mr > 1 ? 1 : 0)) BIAS(2, (mr > 2 ? 2 : 0)) BIAS(3, (mr > 3 ? 3 : 0))
            BIAS(4, (mr > 4 ? 4 : 0)) BIAS(5, (mr > 5 ? 5 : 0))
#undef BIAS
        }
        if (CL) {
#define CLAMP(i)                                                                                                  \
    if (RR > i) {                                                                                                 \
        c##i##0 = lithe__avx2_clamp(c##i##0, k);                                                                  \
        if (NV == 2) c##i##1 = lithe__avx2_clamp(c##i##1, k);                                                     \
    }
            CLAMP(0) CLAMP(1) CLAMP(2) CLAMP(3) CLAMP(4) CLAMP(5)
#undef CLAMP
        }
        if (c->R) {
            const float *r0 = c->R + m * P + p;
            __m256 rv;
#define RES(i, o, FIRST)                                                                                          \
    if (RR > i) {                                                                                                 \
        rv = ld(r0 + (o) * P, f0, mask);                                                                          \
        c##i##0 = FIRST ? _mm256_add_ps(rv, c##i##0) : _mm256_add_ps(c##i##0, rv);                               \
        if (NV == 2) {                                                                                            \
            rv = ld(r0 + (o) * P + 8, full, mask);                                                                \
            c##i##1 = FIRST ? _mm256_add_ps(rv, c##i##1) : _mm256_add_ps(c##i##1, rv);                            \
        }                                                                                                         \
    }
#define RES6(FIRST)                                                                                               \
    RES(0, 0, FIRST) RES(1, (mr > 1 ? 1 : 0), FIRST) RES(2, (mr > 2 ? 2 : 0), FIRST)                              \
    RES(3, (mr > 3 ? 3 : 0), FIRST) RES(4, (mr > 4 ? 4 : 0), FIRST) RES(5, (mr > 5 ? 5 : 0), FIRST)
            if (c->res_first) {
                RES6(true)
            } else {
                RES6(false)
            }
#undef RES6
#undef RES
        }
    }
    float *y0 = c->Y + m * P + p;
#define ROW(i)                                                                                                    \
    if (mr > i) {                                                                                                 \
        if (f0) _mm256_storeu_ps(y0 + i * P, c##i##0);                                                            \
        else _mm256_maskstore_ps(y0 + i * P, mask, c##i##0);                                                      \
        if (NV == 2) {                                                                                            \
            if (full) _mm256_storeu_ps(y0 + i * P + 8, c##i##1);                                                  \
            else _mm256_maskstore_ps(y0 + i * P + 8, mask, c##i##1);                                              \
        }                                                                                                         \
    }
    ROW(0) ROW(1) ROW(2) ROW(3) ROW(4) ROW(5)
#undef ROW
}

/* Filters [m0, m1) over the pixels [p, p + n), n <= 16, K steps [k0, k1): the tile shape picked once,
 * the clamp CL a constant in each (column's switch). */
static inline __attribute__((always_inline)) void column_cl(const lithe__conv_pw *c, int64_t p, int64_t n, int64_t m0,
                                                            int64_t m1, int64_t k0, int64_t k1, lithe__avx2_clampv cv,
                                                            const int CL) {
    const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(n & 7)), lanes); /* the last vector's lanes */
    const bool last = k1 == c->K;
    for (int64_t m = m0; m < m1; m += 6) {
        size_t mr = (size_t)(m1 - m < 6 ? m1 - m : 6);
        if (mr <= 4) { /* a last tile of 1..4 filters computes 4 rows, not 6 (M = 16, 40, 64, 112, 160: 6k + 4) */
            if (n == 16) tile(c, 2, true, mask, m, mr, p, k0, k1, last, cv, CL, 4);
            else if (n > 8) tile(c, 2, false, mask, m, mr, p, k0, k1, last, cv, CL, 4);
            else if (n == 8) tile(c, 1, true, mask, m, mr, p, k0, k1, last, cv, CL, 4);
            else tile(c, 1, false, mask, m, mr, p, k0, k1, last, cv, CL, 4);
        } else if (n == 16) tile(c, 2, true, mask, m, mr, p, k0, k1, last, cv, CL, 6);
        else if (n > 8) tile(c, 2, false, mask, m, mr, p, k0, k1, last, cv, CL, 6);
        else if (n == 8) tile(c, 1, true, mask, m, mr, p, k0, k1, last, cv, CL, 6);
        else tile(c, 1, false, mask, m, mr, p, k0, k1, last, cv, CL, 6);
    }
}

static void column(const lithe__conv_pw *c, int64_t p, int64_t n, int64_t m0, int64_t m1, int64_t k0, int64_t k1,
                   lithe__avx2_clampv cv) {
    switch (cv.cl) {
    case LITHE__SGEMM_CLAMP_RELU: column_cl(c, p, n, m0, m1, k0, k1, cv, LITHE__SGEMM_CLAMP_RELU); break;
    case LITHE__SGEMM_CLAMP_HSWISH: column_cl(c, p, n, m0, m1, k0, k1, cv, LITHE__SGEMM_CLAMP_HSWISH); break;
    case LITHE__SGEMM_CLAMP_CLIP: column_cl(c, p, n, m0, m1, k0, k1, cv, LITHE__SGEMM_CLAMP_CLIP); break;
    default: column_cl(c, p, n, m0, m1, k0, k1, cv, LITHE__SGEMM_CLAMP_NONE); break;
    }
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* n items in equal blocks of at most most (at least 1), rounded up to a multiple of unit */
static int64_t even_block(int64_t n, int64_t most, int64_t unit) {
    if (most < unit) most = unit;
    int64_t blocks = (n + most - 1) / most, per = (n + blocks - 1) / blocks;
    return (per + unit - 1) / unit * unit;
}

/* Eight filters' W columns k .. k + 7 (filter m + i's row at w + i·K) as eight vectors, r[j] lane i =
 * W[m + i][k + j]; rows past the last filter read it again (r: that many row pointers). Each row
 * prefetched 64 floats ahead: sixteen rows read side by side outrun the hardware's streams where W
 * is not in cache (in the model: mobilenet_v3_small's 144 -> 576 50 -> 42 and 58 -> 44 us, min of 3
 * interleaved profiles; a prefetch never faults, past the last row's end included). gemv1 also
 * prefetches the next sixteen rows, step for step (lraspp's ten squeeze-excitation convolutions
 * 626 -> 580 us, 240 -> 960 125 -> 103, min of 2 interleaved profiles). */
static inline __attribute__((always_inline)) void wcols8(const float *const *rw, int64_t k, __m256 r[8]) {
    for (int i = 0; i < 8; i++) {
        _mm_prefetch((const char *)((uintptr_t)(rw[i] + k) + 256), _MM_HINT_T0); /* (an address, no pointer past W) */
        r[i] = _mm256_loadu_ps(rw[i] + k);
    }
    lithe__avx2_transpose8(r);
}

/* A one-pixel plane (squeeze-excitation's 1x1 convolutions: 144 -> 576, 240 -> 960): the filters in
 * the lanes, eight per vector, W's rows transposed eight steps at a time in registers, x[k]
 * broadcast; each lane is its filter's chain fma(W[m][k], x[k], acc) over k in order from 0, then
 * the bias, clamp and residual of tile's epilogue: the twin's bits (the 6 x 8 tile used one lane of eight here).
 * Two blocks of eight filters side by side (one chain waits ~4 cycles per step); rows past M read
 * the last filter again (computed, never stored); the steps past K's multiple of 8 one at a time
 * from the rows as they lie. */
static void gemv1(const lithe__conv_pw *c, lithe__avx2_clampv cv) {
    const int64_t M = c->M, K = c->K, K8 = K & ~(int64_t)7;
    const float *x = c->X;
    const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    for (int64_t m = 0; m < M; m += 16) {
        const float *ra[8], *rb[8];
        for (int i = 0; i < 8; i++) {
            ra[i] = c->W + min64(m + i, M - 1) * K;
            rb[i] = c->W + min64(m + 8 + i, M - 1) * K;
        }
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, r[8];
        uintptr_t na = (uintptr_t)(c->W + min64(m + 16, M - 1) * K); /* the next 16 rows, prefetched as these run */
        for (int64_t k = 0; k < K8; k += 8) {
            for (int i = 0; i < 16; i++) _mm_prefetch((const char *)(na + (uintptr_t)(i * K + k) * 4), _MM_HINT_T0);
            wcols8(ra, k, r);
            for (int j = 0; j < 8; j++) a0 = _mm256_fmadd_ps(r[j], _mm256_broadcast_ss(x + k + j), a0);
            if (m + 8 < M) {
                wcols8(rb, k, r);
                for (int j = 0; j < 8; j++) a1 = _mm256_fmadd_ps(r[j], _mm256_broadcast_ss(x + k + j), a1);
            }
        }
        for (int64_t k = K8; k < K; k++) {
            __m256 xb = _mm256_broadcast_ss(x + k);
            a0 = _mm256_fmadd_ps(_mm256_setr_ps(ra[0][k], ra[1][k], ra[2][k], ra[3][k], ra[4][k], ra[5][k], ra[6][k],
                                                ra[7][k]),
                                 xb, a0);
            a1 = _mm256_fmadd_ps(_mm256_setr_ps(rb[0][k], rb[1][k], rb[2][k], rb[3][k], rb[4][k], rb[5][k], rb[6][k],
                                                rb[7][k]),
                                 xb, a1);
        }
        for (int h = 0; h < 2 && m + 8 * h < M; h++) {
            int64_t at = m + 8 * h, n = min64(M - at, 8);
            __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), lanes);
            __m256 t = h ? a1 : a0;
            if (c->b) t = _mm256_add_ps(t, ld(c->b + at, n == 8, mask));
            if (cv.cl) t = lithe__avx2_clamp(t, cv);
            if (c->R) {
                __m256 rv = ld(c->R + at, n == 8, mask);
                t = c->res_first ? _mm256_add_ps(rv, t) : _mm256_add_ps(t, rv);
            }
            if (n == 8) _mm256_storeu_ps(c->Y + at, t);
            else _mm256_maskstore_ps(c->Y + at, mask, t);
        }
    }
}

void lithe__conv_pw_avx2(const lithe__conv_pw *c, int64_t p0, int64_t p1) {
    lithe__avx2_clampv cv = lithe__avx2_clamp_of(c->clamp, c->lo, c->hi);
    /* one pixel (P = 1 with the residual elsewhere than Y: a residual in Y itself is read per element
     * before its store there too, so that holds as well) */
    if (c->P == 1 && p0 == 0 && p1 == 1 && !c->kc && !c->mc) {
        gemv1(c, cv);
        return;
    }
    const int64_t M = c->M, K = c->K, P = c->P;
    int64_t kc = even_block(K, c->kc ? c->kc : PW_KC, 1);
    /* a residual in Y's own memory would be overwritten by a block's sums before the last block reads it */
    if (c->R && c->R < c->Y + M * P && c->Y < c->R + M * P) kc = K;
    if (kc < 1) kc = 1;
    int64_t mc = even_block(M, c->mc ? c->mc : PW_WBLOCK / kc, 6);
    /* filter tiles outer from 64x64 pixels (lraspp's 16 -> 64 at 112x112: 599 -> 548 us alone; at 56x56 no gain) */
    bool rows_outer = c->pc ? c->pc > 0 : K <= 64 && P >= 4096;
    int64_t pc = c->pc > 0 ? c->pc : rows_outer ? even_block(p1 - p0, PW_XCHUNK / kc, 16) : p1 - p0;
    for (int64_t k0 = 0; k0 < K || k0 == 0; k0 += kc) {
        int64_t k1 = min64(K, k0 + kc);
        for (int64_t m0 = 0; m0 < M; m0 += mc) {
            int64_t m1 = min64(M, m0 + mc);
            if (!rows_outer) {
                for (int64_t p = p0; p < p1; p += 16) column(c, p, min64(p1 - p, 16), m0, m1, k0, k1, cv);
                continue;
            }
            for (int64_t q0 = p0; q0 < p1; q0 += pc) /* a chunk of pixels, each filter tile across it */
                for (int64_t m = m0; m < m1; m += 6)
                    for (int64_t p = q0; p < min64(p1, q0 + pc); p += 16)
                        column(c, p, min64(p1 - p, 16), m, min64(m1, m + 6), k0, k1, cv);
        }
    }
}

#elif defined(__x86_64__)
#error "pointwise_avx2.c must be compiled with -mavx2 -mfma"
#endif
