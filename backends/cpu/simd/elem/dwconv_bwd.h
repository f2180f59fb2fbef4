/* Part of simd/elem.c, compiled once per ISA with it (no standalone header): the depthwise backward's
 * weight and bias gradients with channels in the lanes (dwconv_dw_lanes). */

#if VW >= 8 /* it packs with dwconv_lanes.h's transposes (8 or 16 lanes) */
/* One image's planes, pixel-major (xt: H·W vectors, gt: OH·OW vectors, dxt: H·W vectors, lane l =
 * channel l): every output in order, then its in-bounds taps: each tap's dW chain acc[kh·KW + kw] +=
 * gv·x and the tap's dX element += gv·w (a multiply, then an add: no contraction), db's chain ab +=
 * gv first — per lane the scalar twin's adds in the twin's order (a dX element gets at most one term
 * per output). KH and KW are constants where the caller inlines it for 3x3. */
static inline __attribute__((always_inline)) void dwb_image(const lithe__conv2d *g, int64_t KH, int64_t KW,
                                                            const float *xt, const float *gt, float *dxt,
                                                            const vf *wv, vf *acc, vf *ab, bool with_db,
                                                            bool with_dw, bool with_dx) {
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
                for (int64_t kw = 0; kw < KW; kw++) {
                    int64_t w = w0 + kw * d1;
                    if (w < 0 || w >= W) continue;
                    if (with_dw) acc[kh * KW + kw] += gv * ld(xt + (h * W + w) * VW);
                    if (with_dx) {
                        float *d = dxt + (h * W + w) * VW;
                        st(d, ld(d) + gv * wv[kh * KW + kw]);
                    }
                }
            }
        }
    }
}

/* nch <= VW depthwise channels of g over the batch, the channels in the lanes: dX (or NULL) +=,
 * dW (nch·KH·KW: channel l's taps at dW + l·KH·KW, or NULL) += and db (nch, or NULL; only with dW)
 * +=. Channel l's planes: X's at X + n·C·H·W + l·H·W, dY's at dY + n·C·OH·OW + l·OH·OW, dX's as X's;
 * its taps at w + l·KH·KW. Images in order, so each lane's chains are the scalar twin's (bit for
 * bit). ws: lithe__dw_backward_ws(g, VW) floats. KH·KW <= LITHE__DWCONV_MAX_TAPS. */
static void K(dwconv_backward_lanes)(const lithe__conv2d *g, int64_t nch, const float *X, const float *w,
                                     const float *dY, float *dX, float *dW, float *db, float *ws) {
    int64_t T = g->KH * g->KW, HW = g->H * g->W, P = g->OH * g->OW;
    float *xt = ws, *gt = ws + HW * VW, *dxt = gt + P * VW, t[VW];
    vf acc[LITHE__DWCONV_MAX_TAPS], wv[LITHE__DWCONV_MAX_TAPS], ab = splat(0.0f);
    bool with_db = dW && db;
    for (int64_t k = 0; k < T; k++) {
        for (int64_t l = 0; l < VW; l++) t[l] = l < nch && dW ? dW[l * T + k] : 0.0f;
        acc[k] = ld(t);
        for (int64_t l = 0; l < VW; l++) t[l] = l < nch ? w[l * T + k] : 0.0f;
        wv[k] = ld(t);
    }
    if (with_db) {
        for (int64_t l = 0; l < VW; l++) t[l] = l < nch ? db[l] : 0.0f;
        ab = ld(t);
    }
    for (int64_t n = 0; n < g->N; n++) {
        if (dW) dwl_pack(X + n * g->C * HW, HW, nch, 1, HW, xt, 0, 0);
        dwl_pack(dY + n * g->C * P, P, nch, 1, P, gt, 0, 0);
        float *dx = dX ? dX + n * g->C * HW : NULL;
        if (dx) dwl_pack(dx, HW, nch, 1, HW, dxt, 0, 0);
        if (g->KH == 3 && g->KW == 3) {
            if (dW && dx && with_db) dwb_image(g, 3, 3, xt, gt, dxt, wv, acc, &ab, true, true, true);
            else if (dW && dx) dwb_image(g, 3, 3, xt, gt, dxt, wv, acc, &ab, false, true, true);
            else if (dW && with_db) dwb_image(g, 3, 3, xt, gt, dxt, wv, acc, &ab, true, true, false);
            else if (dW) dwb_image(g, 3, 3, xt, gt, dxt, wv, acc, &ab, false, true, false);
            else dwb_image(g, 3, 3, xt, gt, dxt, wv, acc, &ab, false, false, true);
        } else
            dwb_image(g, g->KH, g->KW, xt, gt, dxt, wv, acc, &ab, with_db, dW != NULL, dx != NULL);
        if (dx) /* the pixel vectors back into the nch planes, VW pixels at a time (ws has room past the last) */
            for (int64_t q = 0; q < HW; q += VW) dwl_unpack(dxt + q * VW, dx + q, HW, nch, HW - q < VW ? HW - q : VW);
    }
    if (dW)
        for (int64_t k = 0; k < T; k++) {
            st(t, acc[k]);
            for (int64_t l = 0; l < nch; l++) dW[l * T + k] = t[l];
        }
    if (with_db) {
        st(t, ab);
        for (int64_t l = 0; l < nch; l++) db[l] = t[l];
    }
}
#endif
