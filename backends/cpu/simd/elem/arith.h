/* Part of simd/elem.c, compiled once per ISA with it (no standalone header): add_row, sum_rows, axpby, mul, binary, sum_squares. */

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

/* The largest lane of a vector without NaN (row_max's: its lanes start at -inf and skip NaN): on
 * AVX-512 and AVX a tree of maxps (4 steps instead of a chain of 15 scalar ones, a quarter of a
 * 64-wide softmax row's latency); equal values but for the sign of a zero, which x - max ignores. */
static inline float hmax(vf v) {
#if VB == 64 && defined(__AVX512F__)
    return _mm512_reduce_max_ps((__m512)v);
#elif VB == 32 && defined(__AVX__)
    __m128 h = _mm_max_ps(_mm256_castps256_ps128((__m256)v), _mm256_extractf128_ps((__m256)v, 1));
    h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    return _mm_cvtss_f32(_mm_max_ss(h, _mm_shuffle_ps(h, h, 1)));
#else
    float m = v[0];
    for (int l = 1; l < VW; l++) m = v[l] > m ? v[l] : m;
    return m;
#endif
}
/* float -> double by halves: each half converts into one register-wide double vector (vcvtps2pd),
 * where converting the whole vector at once is split badly by some compilers. On AVX-512 and AVX
 * the halves are taken in registers: gcc 12 made the memcpy a 64-byte store and two 32-byte
 * reloads of the stack (the upper one a store-forwarding stall), 10-30 % of softmax's and
 * layernorm's rows in the transformer's training step. The same conversion, the same bits. */
typedef float vfh __attribute__((vector_size(VB / 2)));
typedef double vdh __attribute__((vector_size(VB)));
static inline vdh widen_lo(vf v) {
#if VB == 64 && defined(__AVX512F__)
    return (vdh)_mm512_cvtps_pd(_mm512_castps512_ps256((__m512)v));
#elif VB == 32 && defined(__AVX__)
    return (vdh)_mm256_cvtps_pd(_mm256_castps256_ps128((__m256)v));
#else
    vfh h;
    memcpy(&h, &v, sizeof h);
    return __builtin_convertvector(h, vdh);
#endif
}
static inline vdh widen_hi(vf v) {
#if VB == 64 && defined(__AVX512F__)
    return (vdh)_mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd((__m512)v), 1)));
#elif VB == 32 && defined(__AVX__)
    return (vdh)_mm256_cvtps_pd(_mm256_extractf128_ps((__m256)v, 1));
#else
    vfh h;
    memcpy(&h, (const char *)&v + sizeof h, sizeof h);
    return __builtin_convertvector(h, vdh);
#endif
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
