/* Part of simd/elem.c, compiled once per ISA with it (no standalone header): the 3x3 depthwise plane read in place (dwconv3x3). */

#if VW >= 8 || defined(__wasm_simd128__) /* (the 8- and 16-lane tables and WebAssembly's four lanes: conv/depthwise.c
                                          * takes it where the table has it) */
/* A 3x3 depthwise plane read in place (conv/depthwise.c's depthwise_planes_3x3): padding 1 at the top and left, stride s
 * (1: OH = H, OW = W, padding 1 all round; 2: 2·OH <= H, 2·OW <= W, so no bottom or right padding is
 * ever read), W >= VW at stride 1, OW >= VW at stride 2. Each output row's sum is the twin's, bias +
 * taps in (kh, kw) order, the padding rows' taps skipped (as the twin skips them) and the padding
 * columns' lanes added as 0·w (conv/depthwise.c's dw_plane_padded_ok rule, as the long rows). Input rows are
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
#elif VW == 4 /* WebAssembly SIMD128 (issue 29): one strip per pass, 17 live v128s (V8 has 15 xmm); two strips
               * (22) counted the same instructions per mobilenet_v2 predict under Node at twice the code */
#define D3_SHR 3, 4, 5, 6
#define D3_SHL 1, 2, 3, 4
#define D3_EV 0, 2, 4, 6
#define D3_OD 1, 3, 5, 7
#define D3_NS 1
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
/* the output's act (mode as d3_strips'; c, lo and hi are the caller's locals) */
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
#if D3_NS >= 2
                if (ns == 2) d3_strips(2, s, H, W, o0, o1, OW, x, y, qs, k, mode);
            else
#endif
                d3_strips(1, s, H, W, o0, o1, OW, x, y, qs, k, mode);
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

#if VW == 4 /* dwconv_lanes.h's, which the four-lane tables leave out */
static bool dwl_neg_zero(const float *b, int64_t n) {
    for (int64_t i = 0; b && i < n; i++)
        if (b[i] == 0.0f && signbit(b[i])) return true;
    return false;
}
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
