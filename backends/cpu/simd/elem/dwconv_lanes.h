/* Part of simd/elem.c, compiled once per ISA with it (no standalone header): depthwise with channels in the lanes (dwconv_lanes). */

#if VW >= 8 /* (conv/depthwise.c takes the lanes on 8 or 16 only: none in the four-lane builds, WebAssembly's among them) */
/* Depthwise with channels in the lanes (conv/depthwise.c's choice where the long rows lose: planes under 16
 * wide, big stride-2 ones): nch <= VW channel planes go through a zero-bordered, pixel-major
 * buffer in ws holding one vector of VW channels per padded pixel (lithe__dw_lanes_dims: the whole
 * plane, or a ring of the last few rows for large planes), filled by VW x VW register transposes
 * of VW consecutive pixels of the VW planes; each output pixel is then one vector, bias + the taps
 * in (kh, kw) order (the twin's sum per lane, aligned loads at any stride or dilation), the relu /
 * clip in registers (dw_act's max / min) or act1 for other kinds (the act kernel's bits). Every
 * output is computed once into ws; VW of them at a time are transposed back into the nch planes of
 * Y (the plane's or row's last VW overlapping the ones before). Like the long rows it adds the
 * padding's 0·w taps (conv/depthwise.c sends the planes where that could change a bit to the twin). */
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
    /* other windows (mobilenet_v3's 5x5): 4 pixels side by side as above, each tap's weight loaded
     * once for the four (one chain alone waited on its 25 adds in turn: 240 channels 5x5 at 14x14,
     * 166 -> 77 us); each lane's sum in the twin's order all the same */
    int64_t i = 0;
    for (; i + 4 <= m; i += 4) {
        const float *a0 = p[i], *a1 = p[i + 1], *a2 = p[i + 2], *a3 = p[i + 3];
        vf c0 = bv, c1 = bv, c2 = bv, c3 = bv;
        for (int64_t kh = 0, t = 0; kh < k->KH; kh++)
            for (int64_t kw = 0; kw < k->KW; kw++, t++) {
                int64_t o = dk[kh] + kw * cs;
                vf wt = k->wv[t];
                c0 = c0 + ld(a0 + o) * wt, c1 = c1 + ld(a1 + o) * wt, c2 = c2 + ld(a2 + o) * wt,
                c3 = c3 + ld(a3 + o) * wt;
            }
        st(ob + i * VW, DWL_ACT(c0));
        st(ob + (i + 1) * VW, DWL_ACT(c1));
        st(ob + (i + 2) * VW, DWL_ACT(c2));
        st(ob + (i + 3) * VW, DWL_ACT(c3));
    }
    for (; i < m; i++) {
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
