/* Part of simd/elem.c, compiled once per ISA with it (no standalone header): the depthwise backward's
 * weight and bias gradients with channels in the lanes (dwconv_dw_lanes). */

#if VW >= 8 /* it packs with dwconv_lanes.h's transposes (8 or 16 lanes) */
/* One image's planes, pixel-major (xt: H·W vectors, gt: OH·OW vectors, lane l = channel l): every
 * output in order, then its in-bounds taps, each tap's chain acc[kh·KW + kw] += gv·x (a multiply,
 * then an add: no contraction), db's chain ab += gv first — per lane the scalar twin's adds in the
 * twin's order. KH and KW are constants where the caller inlines it for 3x3. */
static inline __attribute__((always_inline)) void dwb_image(const lithe__conv2d *g, int64_t KH, int64_t KW,
                                                            const float *xt, const float *gt, vf *acc, vf *ab,
                                                            bool with_db) {
    int64_t s0 = g->stride[0], s1 = g->stride[1], d0 = g->dil[0], d1 = g->dil[1], H = g->H, W = g->W, OW = g->OW;
    for (int64_t oh = 0; oh < g->OH; oh++) {
        int64_t h0 = oh * s0 - g->pad[0];
        for (int64_t ow = 0; ow < OW; ow++) {
            vf gv = ld(gt + (oh * OW + ow) * VW);
            if (with_db) *ab += gv;
            int64_t w0 = ow * s1 - g->pad[1];
            for (int64_t kh = 0; kh < KH; kh++) {
                int64_t h = h0 + kh * d0;
                if (h < 0 || h >= H) continue;
                const float *xr = xt + h * W * VW;
                for (int64_t kw = 0; kw < KW; kw++) {
                    int64_t w = w0 + kw * d1;
                    if (w < 0 || w >= W) continue;
                    acc[kh * KW + kw] += gv * ld(xr + w * VW);
                }
            }
        }
    }
}

/* dW (nch·KH·KW: channel l's taps at dW + l·KH·KW) += and db (nch, or NULL) += the depthwise g's
 * gradients of nch <= VW channels over the batch: X's planes at X + n·C·H·W + l·H·W, dY's at
 * dY + n·C·OH·OW + l·OH·OW; images in order, so each lane's chains are the scalar twin's (bit for
 * bit). ws: (H·W + OH·OW)·VW floats. KH·KW <= LITHE__DWCONV_MAX_TAPS. */
static void K(dwconv_dw_lanes)(const lithe__conv2d *g, int64_t nch, const float *X, const float *dY, float *dW,
                               float *db, float *ws) {
    int64_t T = g->KH * g->KW, HW = g->H * g->W, P = g->OH * g->OW;
    float *xt = ws, *gt = ws + HW * VW, t[VW];
    vf acc[LITHE__DWCONV_MAX_TAPS], ab = splat(0.0f);
    for (int64_t k = 0; k < T; k++) {
        for (int64_t l = 0; l < VW; l++) t[l] = l < nch ? dW[l * T + k] : 0.0f;
        acc[k] = ld(t);
    }
    if (db) {
        for (int64_t l = 0; l < VW; l++) t[l] = l < nch ? db[l] : 0.0f;
        ab = ld(t);
    }
    for (int64_t n = 0; n < g->N; n++) {
        dwl_pack(X + n * g->C * HW, HW, nch, 1, HW, xt, 0, 0);
        dwl_pack(dY + n * g->C * P, P, nch, 1, P, gt, 0, 0);
        if (g->KH == 3 && g->KW == 3) {
            if (db) dwb_image(g, 3, 3, xt, gt, acc, &ab, true);
            else dwb_image(g, 3, 3, xt, gt, acc, &ab, false);
        } else
            dwb_image(g, g->KH, g->KW, xt, gt, acc, &ab, db != NULL);
    }
    for (int64_t k = 0; k < T; k++) {
        st(t, acc[k]);
        for (int64_t l = 0; l < nch; l++) dW[l * T + k] = t[l];
    }
    if (db) {
        st(t, ab);
        for (int64_t l = 0; l < nch; l++) db[l] = t[l];
    }
}
#endif
