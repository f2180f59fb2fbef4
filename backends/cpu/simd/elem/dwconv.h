/* Part of simd/elem.c, compiled once per ISA with it (no standalone header): the depthwise plane as long rows (dwconv_taps), copy_rows, split_rows. */

/* A depthwise plane as long rows (conv/depthwise.c lays the plane out so that every tap is a shift of it): for
 * rows r < R, y[r·ldy + q] = act(bias + sum over taps t < T, in order, of x[r·ldx + q + off[t]] · w[t])
 * for q < n — the scalar twin's order and multiply-add per lane, so bit-identical to it. A row's
 * last partial vector is computed again from n - VW (the same bits, the same stores) when n >= VW,
 * else loaded from a zero-padded copy: it never reads past the last tap's x[... + n - 1 + off[t]]
 * nor writes past y[... + n - 1]. The 3x3 (two vectors per step past 4 lanes, so their chains overlap;
 * taps and weights in registers) runs a relu or clipped-linear act in registers (act1: the act
 * kernel's bits); other tap counts (dwt_impl: four vectors per step where VW > 4) run relu, clip and
 * mobilenet's HardSwish in registers by act1 where VW > 4 and rows are at least a vector wide; other
 * kinds, four-lane ISAs and narrower rows take it from the act kernel over each row after. */

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
#if VW > 4
        /* four vectors side by side, each tap's weight loaded once for them (one vector at a time
         * waited on its T adds in turn: 120 x 28x28 5x5 ~3 cycles per tap and vector); the vectors at
         * q + i·VW, the last ones moved back to end at n (computed again: the same bits, the same
         * stores), so a 28-wide row is one step. (Four-lane ISAs, WebAssembly's among them, keep one
         * vector per step: not measured there.) */
        for (int64_t q = 0; q < n; q += 4 * VW) {
            int64_t e = n - VW, q0 = q < e ? q : e, q1 = q + VW < e ? q + VW : e;
            int64_t q2 = q + 2 * VW < e ? q + 2 * VW : e, q3 = q + 3 * VW < e ? q + 3 * VW : e;
            vf c0 = bcast(bias), c1 = c0, c2 = c0, c3 = c0;
            for (int64_t t = 0; t < T; t++) {
                const float *p = xp[t] + xo;
                vf wt = wv[t];
                c0 = c0 + ld(p + q0) * wt, c1 = c1 + ld(p + q1) * wt, c2 = c2 + ld(p + q2) * wt;
                c3 = c3 + ld(p + q3) * wt;
            }
            if (act_in) c0 = act1_inl(&c, c0), c1 = act1_inl(&c, c1), c2 = act1_inl(&c, c2), c3 = act1_inl(&c, c3);
            st(y + q0, c0), st(y + q1, c1), st(y + q2, c2), st(y + q3, c3);
        }
#else
        for (int64_t q = 0; q < n; q += VW) {
            int64_t qq = q + VW <= n ? q : n - VW;
            vf acc = bcast(bias);
            for (int64_t t = 0; t < T; t++) acc = acc + ld(xp[t] + xo + qq) * wv[t];
            if (act_in) acc = act1(&c, acc);
            st(y + qq, acc);
        }
#endif
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
#if VW > 4
    } else if (T != 9 && n >= VW && a && kind == LITHE__ACT_RELU) { /* the other windows' usual acts in */
        dwt_impl(R, n, ldx, y, ldy, x, off, w, T, bias, a, LITHE__ACT_RELU, true); /* registers too (act1) */
        post = false;
    } else if (T != 9 && n >= VW && a && kind == LITHE__ACT_CLIPPED_LINEAR) {
        dwt_impl(R, n, ldx, y, ldy, x, off, w, T, bias, a, LITHE__ACT_CLIPPED_LINEAR, true);
        post = false;
    } else if (T != 9 && n >= VW && a && kind == LITHE__ACT_HARD_SWISH_MOBILENET) {
        dwt_impl(R, n, ldx, y, ldy, x, off, w, T, bias, a, LITHE__ACT_HARD_SWISH_MOBILENET, true);
        post = false;
#endif
    } else {
        dwt_impl(R, n, ldx, y, ldy, x, off, w, T, bias, a, kind, false);
        post = a != NULL;
    }
    if (post)
        for (int64_t r = 0; r < R; r++) K(act)(a, n, y + r * ldy, y + r * ldy);
}

/* dst[r·ldd + i] = src[r·lds + i·s] for r < R, i < n: the depthwise layout's copies (conv/depthwise.c), rows
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

/* Rows split into their even and odd columns (conv/depthwise.c's stride-2 phase planes, one pass over the
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
