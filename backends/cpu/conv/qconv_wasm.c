/* The int8 convolution's WebAssembly SIMD128 kernel (qconv.h), chosen at build time (-msimd128:
 * the WASI build, the npm package's SIMD128, relaxed-SIMD and threads modules); compiles to nothing
 * elsewhere. The packing is the AVX2 tile's (qconv.c: X as int16 pairs along K, W as int32 pairs
 * per filter in panels of MR = 4): per K pair one i32x4.dot_i16x8_s of four pixels' pairs by the
 * filter's splatted pair gives each pixel's two products summed in its int32 lane — exact for any
 * 8-bit codes (|x - zx|, |w - zw| <= 255: a pair sum below 2^17). Tile: 4 filters × 8 pixels, 8
 * accumulators, two v128 loads of X and four load32_splat of W per K pair (12 live vectors: V8 keeps
 * them in x86-64's 16 xmm registers); the first K pair sets the accumulators (no adds to zeros: an
 * eighth of the adds at K = 16); a last block of 1 to 4 pixels (7x7 planes: 49 = 6·8 + 1) takes a
 * 4 filters × 4 pixels tile, one vector of X a K pair (inlined after the pixel loop: as a call, or
 * tested inside the loop, it measured slower). The epilogue is the scalar twin's: (float)acc · scale (+ b),
 * mul then add (no FMA), the clamp (relu, clip, HardSwish: gemm.h's lithe__wasm_clamp, the twin's
 * lithe__sgemm_clamp1 as pmin / pmax) in registers, stored into Y's rows (a partial last vector
 * through a buffer; whole tiles without bounds tests); another activation runs over the tile's rows
 * after (lithe__qconv_act_rows, as the AVX2 tile's non-clamp ones). Codes out (c->Yc, the next
 * fused:QConv's): one more copy requantizes the accumulators in the store (lithe__qconv_code, the
 * operations of epi_codes below), no float32 sums written; where every requantized sum lies within
 * ±2^22 (sat_ok: mobilenet_v2's layers all do) a cheaper copy of the same bits: no float clamp, the
 * saturating narrows and two byte pmin / pmax clamp 16 codes at once (codes8x2).
 *
 * The 3x3 depthwise layers between fused:QConv nodes (codes in, codes out) run dw3_codes below: the
 * same dot of int16 pairs on each plane's rows, requantized in registers (no float32 planes).
 *
 * Relaxed SIMD's i32x4.relaxed_dot_i8x16_i7x16_add_s needs int8 operands with one side 7-bit; the
 * differences x - zx and w - zw span 9 bits, so it cannot take this packing exactly: the relaxed
 * module runs this kernel too. */
#include "qconv.h"

#if defined(__wasm_simd128__)
#include <math.h>
#include <string.h>
#include <wasm_simd128.h>

#include "../gemm/gemm.h"
#include "../../../core/backend.h"

/* (float)acc · scale (+ b), then the clamp cl (a constant in each copy of the tile: 0 for none) */
static inline __attribute__((always_inline)) void store4(const lithe__qconv *c, int64_t m, int64_t p, v128_t acc,
                                                         int cl, float lo, float hi, bool full) {
    if (!full && (m >= c->M || p >= c->P)) return;
    v128_t v = wasm_f32x4_mul(wasm_f32x4_convert_i32x4(acc), wasm_f32x4_splat(c->scale[m]));
    if (c->b) v = wasm_f32x4_add(v, wasm_f32x4_splat(c->b[m]));
    if (cl) v = lithe__wasm_clamp(cl, lo, hi, v);
    float *y = c->Y + m * c->P + p;
    if (full || p + 4 <= c->P) {
        wasm_v128_store(y, v);
    } else {
        float t[4];
        wasm_v128_store(t, v);
        memcpy(y, t, (size_t)(c->P - p) * sizeof *t);
    }
}

/* qconv.h's lithe__qconv_code of 4 sums v (as floats), the tile's store and epi_codes alike: v · rq +
 * rb, pmin by chi then pmax by clo, the magic-number add, u = code - ymin in [0, 255] from the
 * float's bits (rb0 = the magic's bits + yq's lo, lo = ymin - zy) */
static inline __attribute__((always_inline)) v128_t requant4(v128_t v, v128_t rq, v128_t rb, v128_t clo, v128_t chi,
                                                             v128_t rb0) {
    v = wasm_f32x4_pmax(clo, wasm_f32x4_pmin(wasm_f32x4_add(wasm_f32x4_mul(v, rq), rb), chi));
    return wasm_i32x4_sub(wasm_f32x4_add(v, wasm_f32x4_splat(12582912.0f)), rb0);
}
/* Codes out (c->Yc): row m's 4 accumulators */
static inline __attribute__((always_inline)) v128_t code4(const lithe__qconv *c, int64_t m, v128_t acc, v128_t clo,
                                                          v128_t chi, v128_t rb0) {
    return requant4(wasm_f32x4_convert_i32x4(acc), wasm_f32x4_splat(c->rq[m]), wasm_f32x4_splat(c->rb[m]), clo, chi,
                    rb0);
}
/* Codes out where every sum's t = (float)acc · rq + rb lies within ±2^22 (sat_ok): row m's 4
 * accumulators as round(t) - lo, unclamped (t + 1.5·2^23 in (2^23, 2^24): its bits less the magic's
 * are round_half_even(t), the twin's rounding); the clamp then on the bytes (sat below) */
static inline __attribute__((always_inline)) v128_t code4s(const lithe__qconv *c, int64_t m, v128_t acc, v128_t rb0) {
    const v128_t t = wasm_f32x4_add(wasm_f32x4_mul(wasm_f32x4_convert_i32x4(acc), wasm_f32x4_splat(c->rq[m])),
                                    wasm_f32x4_splat(c->rb[m]));
    return wasm_i32x4_sub(wasm_f32x4_add(t, wasm_f32x4_splat(12582912.0f)), rb0);
}
/* whether rows [m0, m1)'s t (code4s) lie within ±2^22 for any sum of the tile (|acc| <= 2·Kp·255·255):
 * amax·|rq| + |rb| < 4e6 (float's rounding of the bound is far inside 2^22 - 4e6), rq and rb finite
 * (no NaN for the twin to send to clo: the comparison is false for one) */
static bool sat_ok(const lithe__qconv *c, int64_t m0, int64_t m1) {
    const float amax = 2.0f * (float)c->Kp * 255.0f * 255.0f;
    for (int64_t m = m0; m < m1; m++)
        if (!(amax * fabsf(c->rq[m]) + fabsf(c->rb[m]) < 4.0e6f)) return false;
    return true;
}
/* rows m and m + 1's 8 pixels from p as codes: narrowed twice unsigned (one vector, a row per half),
 * the int8 byte flipped; a row past M or pixels past P not written. sat (sat_ok held): the codes
 * less lo unclamped (code4s), narrowed with saturation (i32 to i16 signed, i16 to u8 unsigned: to
 * [0, 255], the output grid), then pmin by chi, pmax by clo as bytes (clo, chi: the bounds less lo,
 * u8 splats; clip: not the whole grid) — the twin's codes: its bounds are integers and rounding is
 * monotone, so clamping t then rounding is rounding then clamping */
static inline __attribute__((always_inline)) void codes8x2(const lithe__qconv *c, int64_t m, int64_t p, v128_t a0,
                                                           v128_t a1, v128_t b0, v128_t b1, v128_t clo, v128_t chi,
                                                           v128_t rb0, v128_t flip, bool full, bool sat, bool clip) {
    if (!full && (m >= c->M || p >= c->P)) return;
    const bool m1 = full || m + 1 < c->M;
    v128_t h;
    if (sat) {
        h = wasm_u8x16_narrow_i16x8(wasm_i16x8_narrow_i32x4(code4s(c, m, a0, rb0), code4s(c, m, a1, rb0)),
                                    m1 ? wasm_i16x8_narrow_i32x4(code4s(c, m + 1, b0, rb0), code4s(c, m + 1, b1, rb0))
                                       : wasm_i16x8_const_splat(0));
        if (clip) h = wasm_u8x16_max(wasm_u8x16_min(h, chi), clo);
        h = wasm_v128_xor(h, flip);
    } else {
        h = wasm_v128_xor(
            wasm_u8x16_narrow_i16x8(wasm_u16x8_narrow_i32x4(code4(c, m, a0, clo, chi, rb0), code4(c, m, a1, clo, chi, rb0)),
                                    m1 ? wasm_u16x8_narrow_i32x4(code4(c, m + 1, b0, clo, chi, rb0),
                                                                 code4(c, m + 1, b1, clo, chi, rb0))
                                       : wasm_i16x8_const_splat(0)),
            flip);
    }
    uint8_t *y = c->Yc + m * c->P + p;
    if (full) {
        wasm_v128_store64_lane(y, h, 0);
        wasm_v128_store64_lane(y + c->P, h, 1);
        return;
    }
    uint8_t t[16];
    wasm_v128_store(t, h);
    const size_t n = (size_t)(p + 8 <= c->P ? 8 : c->P - p);
    memcpy(y, t, n);
    if (m + 1 < c->M) memcpy(y + c->P, t + 8, n);
}

/* the 4-pixel tail tile's codes (tiles below): rows m .. m + 3 (those below M), pixels p .. P - 1 (at
 * most 4), as codes8x2 (a row past M requantized with row m's rq, rb, then not written) */
static inline __attribute__((always_inline)) void codes4x4(const lithe__qconv *c, int64_t m, int64_t p, v128_t a0,
                                                           v128_t a1, v128_t a2, v128_t a3, v128_t clo, v128_t chi,
                                                           v128_t rb0, v128_t flip, bool sat, bool clip) {
    const int64_t m1 = m + 1 < c->M ? m + 1 : m, m2 = m + 2 < c->M ? m + 2 : m, m3 = m + 3 < c->M ? m + 3 : m;
    v128_t h;
    if (sat) {
        h = wasm_u8x16_narrow_i16x8(wasm_i16x8_narrow_i32x4(code4s(c, m, a0, rb0), code4s(c, m1, a1, rb0)),
                                    wasm_i16x8_narrow_i32x4(code4s(c, m2, a2, rb0), code4s(c, m3, a3, rb0)));
        if (clip) h = wasm_u8x16_max(wasm_u8x16_min(h, chi), clo);
    } else {
        h = wasm_u8x16_narrow_i16x8(
            wasm_u16x8_narrow_i32x4(code4(c, m, a0, clo, chi, rb0), code4(c, m1, a1, clo, chi, rb0)),
            wasm_u16x8_narrow_i32x4(code4(c, m2, a2, clo, chi, rb0), code4(c, m3, a3, clo, chi, rb0)));
    }
    uint8_t t[16];
    wasm_v128_store(t, wasm_v128_xor(h, flip));
    for (int64_t r = 0; r < LITHE__QC_MR && m + r < c->M; r++) memcpy(c->Yc + (m + r) * c->P + p, t + 4 * r, (size_t)(c->P - p));
}

/* one K pair: two vectors of X (8 pixels' pairs), the 4 filters' pairs splatted; op = sets the
 * accumulators, += adds to them */
#define DOT_(op, acc, x, w) DOT_##op(acc, wasm_i32x4_dot_i16x8(x, w))
#define DOT_SET(acc, d) acc = (d)
#define DOT_ADD(acc, d) acc = wasm_i32x4_add(acc, d)
#define KSTEP_(op, x, w)                                                                                            \
    do {                                                                                                            \
        const v128_t x0 = wasm_v128_load(x), x1 = wasm_v128_load((x) + 8);                                          \
        v128_t wv = wasm_v128_load32_splat(&(w)[0]);                                                                \
        DOT_(op, a00, x0, wv);                                                                                      \
        DOT_(op, a01, x1, wv);                                                                                      \
        wv = wasm_v128_load32_splat(&(w)[1]);                                                                       \
        DOT_(op, a10, x0, wv);                                                                                      \
        DOT_(op, a11, x1, wv);                                                                                      \
        wv = wasm_v128_load32_splat(&(w)[2]);                                                                       \
        DOT_(op, a20, x0, wv);                                                                                      \
        DOT_(op, a21, x1, wv);                                                                                      \
        wv = wasm_v128_load32_splat(&(w)[3]);                                                                       \
        DOT_(op, a30, x0, wv);                                                                                      \
        DOT_(op, a31, x1, wv);                                                                                      \
    } while (0)

/* codes: c->Yc's requantized codes (the clamp in clo, chi), else floats with the clamp cl */
static inline __attribute__((always_inline)) void tiles(const lithe__qconv *c, int64_t m0, int64_t m1, int cl,
                                                        bool codes, bool sat) {
    const int64_t Kp = c->Kp, P8 = c->P8;
    const bool act = !codes && !cl && c->act; /* a clamp is applied in the store, in registers */
    const float lo = c->lo, hi = c->hi;
    v128_t clo = wasm_f32x4_const_splat(0), chi = clo, rb0 = wasm_i32x4_const_splat(0), flip = rb0;
    if (codes) {
        clo = wasm_f32x4_splat(c->clo), chi = wasm_f32x4_splat(c->chi);
        rb0 = wasm_i32x4_splat(0x4B400000 + (int32_t)c->yq->lo);
        flip = wasm_i8x16_splat(c->yq->src == 2 ? (int8_t)0x80 : 0);
    }
    bool clip = false;
    if (sat) { /* the bounds less lo as bytes (integers in [0, 255]: clo, chi lie on the grid) */
        const int32_t blo = (int32_t)(c->clo - c->yq->lo), bhi = (int32_t)(c->chi - c->yq->lo);
        clo = wasm_u8x16_splat((uint8_t)blo), chi = wasm_u8x16_splat((uint8_t)bhi), clip = blo != 0 || bhi != 255;
    }
    /* a last block of 1 to 4 pixels takes a 4-pixel tile (7x7 planes: 49 = 6·8 + 1) */
    const int64_t pt = c->P % 8 && c->P % 8 <= 4 ? P8 - 8 : P8;
    for (int64_t m = m0; m < m1 && m < c->M; m += LITHE__QC_MR) {
        const int32_t *wp = c->W + (m / LITHE__QC_MR) * Kp * LITHE__QC_MR;
        for (int64_t p = 0; p < pt; p += 8) {
            const int16_t *x = c->X + p * 2;
            const int32_t *w = wp;
            v128_t a00, a01, a10, a11, a20, a21, a30, a31;
            KSTEP_(SET, x, w); /* the first K pair sets the accumulators (Kp >= 1): no adds to zeros */
            x += P8 * 2, w += LITHE__QC_MR;
            /* (two K pairs a step measured +25 M instructions per mobilenet_v2 predict: V8 spills) */
            for (int64_t kp = 1; kp < Kp; kp++, x += P8 * 2, w += LITHE__QC_MR) KSTEP_(ADD, x, w);
            const bool whole = m + LITHE__QC_MR <= c->M && p + 8 <= c->P; /* no bounds per vector */
            if (codes) {
                if (whole) {
                    codes8x2(c, m, p, a00, a01, a10, a11, clo, chi, rb0, flip, true, sat, clip);
                    codes8x2(c, m + 2, p, a20, a21, a30, a31, clo, chi, rb0, flip, true, sat, clip);
                } else {
                    codes8x2(c, m, p, a00, a01, a10, a11, clo, chi, rb0, flip, false, sat, clip);
                    codes8x2(c, m + 2, p, a20, a21, a30, a31, clo, chi, rb0, flip, false, sat, clip);
                }
                continue;
            }
#define STORES(full)                                                                                               \
    store4(c, m, p, a00, cl, lo, hi, full), store4(c, m, p + 4, a01, cl, lo, hi, full);                             \
    store4(c, m + 1, p, a10, cl, lo, hi, full), store4(c, m + 1, p + 4, a11, cl, lo, hi, full);                     \
    store4(c, m + 2, p, a20, cl, lo, hi, full), store4(c, m + 2, p + 4, a21, cl, lo, hi, full);                     \
    store4(c, m + 3, p, a30, cl, lo, hi, full), store4(c, m + 3, p + 4, a31, cl, lo, hi, full)
            if (whole) {
                STORES(true);
            } else {
                STORES(false);
            }
#undef STORES
            if (act) lithe__qconv_act_rows(c, m, p, 8); /* the tile's rows while in L1 */
        }
        if (pt < P8) { /* the last block's 1 to 4 pixels: one vector of X a K pair, not two */
            const int64_t p = pt;
            const int16_t *x = c->X + p * 2;
            const int32_t *w = wp;
            v128_t x0 = wasm_v128_load(x), b0, b1, b2, b3;
            b0 = wasm_i32x4_dot_i16x8(x0, wasm_v128_load32_splat(&w[0]));
            b1 = wasm_i32x4_dot_i16x8(x0, wasm_v128_load32_splat(&w[1]));
            b2 = wasm_i32x4_dot_i16x8(x0, wasm_v128_load32_splat(&w[2]));
            b3 = wasm_i32x4_dot_i16x8(x0, wasm_v128_load32_splat(&w[3]));
            x += P8 * 2, w += LITHE__QC_MR;
            for (int64_t kp = 1; kp < Kp; kp++, x += P8 * 2, w += LITHE__QC_MR) {
                x0 = wasm_v128_load(x);
                DOT_(ADD, b0, x0, wasm_v128_load32_splat(&w[0]));
                DOT_(ADD, b1, x0, wasm_v128_load32_splat(&w[1]));
                DOT_(ADD, b2, x0, wasm_v128_load32_splat(&w[2]));
                DOT_(ADD, b3, x0, wasm_v128_load32_splat(&w[3]));
            }
            if (codes) {
                codes4x4(c, m, p, b0, b1, b2, b3, clo, chi, rb0, flip, sat, clip);
            } else {
                store4(c, m, p, b0, cl, lo, hi, false), store4(c, m + 1, p, b1, cl, lo, hi, false);
                store4(c, m + 2, p, b2, cl, lo, hi, false), store4(c, m + 3, p, b3, cl, lo, hi, false);
                if (act) lithe__qconv_act_rows(c, m, p, 4);
            }
        }
    }
}
#undef KSTEP_

/* one copy of the tile per clamp (mobilenet's Clip(0, 6) after nearly every QConv): its select in
 * registers at the store, not a scalar pass over the stored rows; one for codes out (c->Yc: the
 * requantization's clamp in its bounds) */
void lithe__qconv_wasm(const lithe__qconv *c, int64_t m0, int64_t m1) {
    if (c->Yc) {
        if (sat_ok(c, m0, m1 < c->M ? m1 : c->M)) tiles(c, m0, m1, 0, true, true);
        else tiles(c, m0, m1, 0, true, false);
        return;
    }
    switch (c->clamp) {
    case 0: tiles(c, m0, m1, 0, false, false); break;
    case LITHE__SGEMM_CLAMP_RELU: tiles(c, m0, m1, LITHE__SGEMM_CLAMP_RELU, false, false); break;
    case LITHE__SGEMM_CLAMP_HSWISH: tiles(c, m0, m1, LITHE__SGEMM_CLAMP_HSWISH, false, false); break;
    default: tiles(c, m0, m1, LITHE__SGEMM_CLAMP_CLIP, false, false); break;
    }
}

/* ---- qconv.h's passes (lithe__qconv_aux_wasm), the twins' bits (qconv.c), 4 values a step ---- */

/* qconv.c's qv: t = x / scale (f32x4.div), t > hi ? hi : t (pmin(t, hi): hi < t ? hi : t, keeps a
 * NaN), t >= lo ? t : lo (pmax(lo, t): lo < t ? t : lo, NaN to lo; t == lo gives lo, the same value),
 * then round half to even by ± 1.5·2^23 */
static inline __attribute__((always_inline)) v128_t qv4(v128_t x, v128_t s, v128_t lo, v128_t hi) {
    const v128_t r = wasm_f32x4_splat(12582912.0f);
    v128_t t = wasm_f32x4_pmax(lo, wasm_f32x4_pmin(wasm_f32x4_div(x, s), hi));
    return wasm_f32x4_sub(wasm_f32x4_add(t, r), r);
}
/* The same code as an int32 lane, for the int16 passes: t + 1.5·2^23 (|t| <= 255) lies in [2^23, 2^24),
 * where a float's ulp is 1, so its bits less 1.5·2^23's (0x4B400000) are the rounded integer — one
 * i32x4.sub where the float sub and i32x4.trunc_sat_f32x4 (several instructions in V8 on x86-64: the
 * saturation and NaN fix-ups) took more. */
static inline __attribute__((always_inline)) v128_t qi4(v128_t x, v128_t s, v128_t lo, v128_t hi) {
    v128_t t = wasm_f32x4_pmax(lo, wasm_f32x4_pmin(wasm_f32x4_div(x, s), hi));
    return wasm_i32x4_sub(wasm_f32x4_add(t, wasm_f32x4_splat(12582912.0f)), wasm_i32x4_splat(0x4B400000));
}
#define QX_SPLAT const v128_t s = wasm_f32x4_splat(q->scale), lo = wasm_f32x4_splat(q->lo), hi = wasm_f32x4_splat(q->hi)

static void quant_f32(int64_t n, const float *x, const lithe__qx *q, float *y) {
    QX_SPLAT;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) /* 16 a step: the loop's and the constants' instructions once per 4 vectors */
        for (int k = 0; k < 16; k += 4) wasm_v128_store(y + i + k, qv4(wasm_v128_load(x + i + k), s, lo, hi));
    for (; i + 4 <= n; i += 4) wasm_v128_store(y + i, qv4(wasm_v128_load(x + i), s, lo, hi));
    if (i < n) lithe__qconv_aux_ref.quant_f32(n - i, x + i, q, y + i);
}

static void quant_i16(int64_t n, const float *x, const lithe__qx *q, int16_t *y) {
    QX_SPLAT;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) { /* integers in [-255, 255]: the narrow exact */
        v128_t a = qi4(wasm_v128_load(x + i), s, lo, hi);
        v128_t b = qi4(wasm_v128_load(x + i + 4), s, lo, hi);
        wasm_v128_store(y + i, wasm_i16x8_narrow_i32x4(a, b));
    }
    if (i < n) lithe__qconv_aux_ref.quant_i16(n - i, x + i, q, y + i);
}

static void quant_pairs(int64_t n, const float *x0, const float *x1, const lithe__qx *q, int16_t *d) {
    QX_SPLAT;
    int64_t i = 0;
#define PAIR4(i)                                                                                                   \
    wasm_v128_store(d + 2 * (i), wasm_v128_or(wasm_i32x4_shl(qi4(wasm_v128_load(x1 + (i)), s, lo, hi), 16),           \
                                              wasm_v128_and(qi4(wasm_v128_load(x0 + (i)), s, lo, hi),               \
                                                            wasm_i32x4_const_splat(0xFFFF))))
    /* x0's in the low half of each 32-bit lane, x1's in the high; 16 a step (as quant_f32) */
    for (; i + 16 <= n; i += 16) PAIR4(i), PAIR4(i + 4), PAIR4(i + 8), PAIR4(i + 12);
    for (; i + 4 <= n; i += 4) PAIR4(i);
#undef PAIR4
    if (i < n) lithe__qconv_aux_ref.quant_pairs(n - i, x0 + i, x1 + i, q, d + 2 * i);
}

static void epi(const lithe__qconv *c, int64_t r0, int64_t rows, int64_t n, float *y) {
    const int cl = c->clamp;
    const int64_t n4 = n / 4 * 4;
    for (int64_t r = r0; r < r0 + rows; r++, y += n) {
        const int64_t m = r % c->M;
        const float scm = c->scale[m], bm = c->b ? c->b[m] : 0.0f;
        const v128_t sc = wasm_f32x4_splat(scm), b = wasm_f32x4_splat(bm);
        for (int64_t i = 0; i < n4; i += 4) {
            v128_t v = wasm_f32x4_mul(wasm_v128_load(y + i), sc);
            if (c->b) v = wasm_f32x4_add(v, b);
            wasm_v128_store(y + i, cl ? lithe__wasm_clamp(cl, c->lo, c->hi, v) : v);
        }
        for (int64_t i = n4; i < n; i++) { /* the twin's, per value */
            float t = y[i] * scm;
            if (c->b) t += bm;
            y[i] = cl ? lithe__sgemm_clamp1(cl, c->lo, c->hi, t) : t;
        }
        if (!cl && c->act) c->act_fn(c->act, n, y, y);
    }
}

/* (the u8 form has no SIMD128 kernel: its passes stay the twins') */
static void quant_u8(int64_t n, const float *x, const lithe__qx *q, uint8_t *y) { lithe__qconv_aux_ref.quant_u8(n, x, q, y); }
static void quant_quads(int64_t n, const float *x, int64_t stride, int nrows, const lithe__qx *q, uint8_t *d) {
    lithe__qconv_aux_ref.quant_quads(n, x, stride, nrows, q, d);
}
/* lithe__qconv_code of each float sum, 16 a step: · rq + rb, pmin by chi then pmax by clo (the twin's
 * two comparisons: NaN to clo; at t = clo the zero's sign may differ, not the code), rounded by the
 * magic-number add, u = code - ymin in [0, 255] taken from the float's bits, narrowed twice unsigned,
 * the int8 byte flipped; the row's tail by the twin */
static inline __attribute__((always_inline)) void codes16(v128_t u0, v128_t u1, v128_t u2, v128_t u3, v128_t flip,
                                                          uint8_t *d) {
    const v128_t h = wasm_u8x16_narrow_i16x8(wasm_u16x8_narrow_i32x4(u0, u1), wasm_u16x8_narrow_i32x4(u2, u3));
    wasm_v128_store(d, wasm_v128_xor(h, flip));
}
static void epi_codes(const lithe__qconv *c, int64_t r0, int64_t rows, int64_t n, float *y, uint8_t *d) {
    const lithe__qx *q = c->yq;
    const v128_t flip = wasm_i8x16_splat(q->src == 2 ? (int8_t)0x80 : 0), clo = wasm_f32x4_splat(c->clo),
                 chi = wasm_f32x4_splat(c->chi), rb0 = wasm_i32x4_splat(0x4B400000 + (int32_t)q->lo);
    const int64_t n16 = n / 16 * 16;
    for (int64_t r_ = r0; r_ < r0 + rows; r_++, y += n, d += n) {
        const int64_t m = r_ % c->M;
        const v128_t rq = wasm_f32x4_splat(c->rq[m]), rb = wasm_f32x4_splat(c->rb[m]);
        for (int64_t i = 0; i < n16; i += 16) {
            v128_t u[4];
            for (int k = 0; k < 4; k++) u[k] = requant4(wasm_v128_load(y + i + 4 * k), rq, rb, clo, chi, rb0);
            codes16(u[0], u[1], u[2], u[3], flip, d + i);
        }
        for (int64_t i = n16; i < n; i++) d[i] = lithe__qconv_code(c, m, y[i]);
    }
}

/* lithe__qconv_codes_pairs 8 a step: each row's bytes widened (load8x8), less zx, interleaved */
static void codes_pairs(int64_t n, const uint8_t *x0, const uint8_t *x1, const lithe__qx *q, int16_t *d) {
    const v128_t z = wasm_i16x8_splat((int16_t)q->zx);
    const bool s8 = q->src == 2;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const v128_t a = wasm_i16x8_sub(s8 ? wasm_i16x8_load8x8(x0 + i) : wasm_u16x8_load8x8(x0 + i), z);
        const v128_t b = wasm_i16x8_sub(s8 ? wasm_i16x8_load8x8(x1 + i) : wasm_u16x8_load8x8(x1 + i), z);
        wasm_v128_store(d + 2 * i, wasm_i16x8_shuffle(a, b, 0, 8, 1, 9, 2, 10, 3, 11));
        wasm_v128_store(d + 2 * i + 8, wasm_i16x8_shuffle(a, b, 4, 12, 5, 13, 6, 14, 7, 15));
    }
    if (i < n) lithe__qconv_codes_pairs(n - i, x0 + i, x1 + i, q, d + 2 * i);
}

/* lithe__qconv_codes_f32 (the depthwise's codes in) 16 a step: the bytes widened twice (signed for
 * int8, unsigned for uint8: exact), less zx, converted (integers in [-255, 255]: exact) */
static void codes_f32(int64_t n, const uint8_t *x, const lithe__qx *q, float *y) {
    const v128_t z = wasm_i32x4_splat(q->zx);
    const bool s8 = q->src == 2;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const v128_t v = wasm_v128_load(x + i);
        const v128_t lo = s8 ? wasm_i16x8_extend_low_i8x16(v) : wasm_u16x8_extend_low_u8x16(v),
                     hi = s8 ? wasm_i16x8_extend_high_i8x16(v) : wasm_u16x8_extend_high_u8x16(v);
        wasm_v128_store(y + i, wasm_f32x4_convert_i32x4(wasm_i32x4_sub(wasm_i32x4_extend_low_i16x8(lo), z)));
        wasm_v128_store(y + i + 4, wasm_f32x4_convert_i32x4(wasm_i32x4_sub(wasm_i32x4_extend_high_i16x8(lo), z)));
        wasm_v128_store(y + i + 8, wasm_f32x4_convert_i32x4(wasm_i32x4_sub(wasm_i32x4_extend_low_i16x8(hi), z)));
        wasm_v128_store(y + i + 12, wasm_f32x4_convert_i32x4(wasm_i32x4_sub(wasm_i32x4_extend_high_i16x8(hi), z)));
    }
    if (i < n) lithe__qconv_codes_f32(n - i, x + i, q, y + i);
}

/* qconv.h's dw3_codes: per output row 8 outputs a step, the exact int32 sums by i32x4.dot_i16x8_s of
 * an input row's int16 pairs with pairs of taps: at stride 1 the outputs split even / odd (lane j:
 * outputs q + 2j, q + 2j + 1), taps (0, 1) from the pairs at columns q - 1 and q, tap 2 from the
 * pairs at q and q + 1 by (0, w2); at stride 2 the pairs at 2q - 1 (taps 0, 1) and 2q + 1 (tap 2 by
 * (w2, 0)), outputs in order. Each sum (|·| <= 9·255·255 < 2^24: its float exact) requantized as
 * epi_codes (requant4; u - 128 for int8 codes: rb0 + 128), narrowed to bytes (a shuffle of the low
 * bytes; stride 1 interleaves back). A row's last step stores its 8 bytes into the next rows' start
 * (written after it) where they stay in the plane, else the row's bytes exactly. The taps as int16
 * by the magic-number add (integers in [-255, 255]: the twin's cast), paired by shuffles (lane 8 of
 * the second operand: 0).
 * Stride 1: each plane's codes less zx as int16 in buf's rows 1 .. H, column c at position c + 1
 * (the padding's zeros around them, the caller's); rows 8 or more wide 8 a step (the last step
 * overlapping the one before), read at positions q, q + 1, q + 2; a narrower row as one vector
 * [0, x0 .. x6] (lanes past the right padding zeroed; the codes read past the row's end, never past
 * X's: X's last row by elements), read back as that vector and the next (zeros), the shifts by
 * shuffles — 7x7 planes are read right after they are staged, and a load spanning two stores waits
 * for both to retire (that wait cost more than the sums).
 * Stride 2 (no right or bottom padding read) reads the codes themselves, widened by the load
 * (v128.load8x8), the padding's column and row as zx (a shuffle, a row of zx in buf) and zx·Σ taps
 * taken off each sum: Σ (x - zx)·w exactly; a plane whose loads would pass X's end is copied into
 * buf first. */
static inline __attribute__((always_inline)) void dw3_taps(const float *t, const int64_t s, v128_t *w01, v128_t *w2) {
    const v128_t mg = wasm_f32x4_const_splat(12582912.0f), mgb = wasm_i32x4_const_splat(0x4B400000),
                 zero = wasm_i32x4_const_splat(0);
#define DW3_INT(v) wasm_i32x4_sub(wasm_f32x4_add(v, mg), mgb)
    const v128_t t07 = wasm_i16x8_narrow_i32x4(DW3_INT(wasm_v128_load(t)), DW3_INT(wasm_v128_load(t + 4))),
                 t8 = DW3_INT(wasm_v128_load32_splat(t + 8));
#undef DW3_INT
    w01[0] = wasm_i16x8_shuffle(t07, t07, 0, 1, 0, 1, 0, 1, 0, 1);
    w01[1] = wasm_i16x8_shuffle(t07, t07, 3, 4, 3, 4, 3, 4, 3, 4);
    w01[2] = wasm_i16x8_shuffle(t07, t07, 6, 7, 6, 7, 6, 7, 6, 7);
    w2[0] = s == 1 ? wasm_i16x8_shuffle(t07, zero, 8, 2, 8, 2, 8, 2, 8, 2)
                   : wasm_i16x8_shuffle(t07, zero, 2, 8, 2, 8, 2, 8, 2, 8);
    w2[1] = s == 1 ? wasm_i16x8_shuffle(t07, zero, 8, 5, 8, 5, 8, 5, 8, 5)
                   : wasm_i16x8_shuffle(t07, zero, 5, 8, 5, 8, 5, 8, 5, 8);
    w2[2] = s == 1 ? wasm_i16x8_shuffle(t8, zero, 8, 0, 8, 0, 8, 0, 8, 0)
                   : wasm_i16x8_shuffle(t8, zero, 0, 8, 0, 8, 0, 8, 0, 8);
}
/* the sums a, b of outputs q0 .. q0 + 7 of row o as codes into the plane y */
static inline __attribute__((always_inline)) void dw3_out(const lithe__conv2d *g, const int64_t s, v128_t a, v128_t b,
                                                          v128_t rq, v128_t rb, v128_t clo, v128_t chi, v128_t rb0,
                                                          uint8_t *y, int64_t o, int64_t q0) {
    const int64_t OH = g->OH, OW = g->OW;
    v128_t h = wasm_i16x8_narrow_i32x4(requant4(wasm_f32x4_convert_i32x4(a), rq, rb, clo, chi, rb0),
                                       requant4(wasm_f32x4_convert_i32x4(b), rq, rb, clo, chi, rb0));
    h = s == 1 ? wasm_i8x16_shuffle(h, h, 0, 8, 2, 10, 4, 12, 6, 14, 0, 8, 2, 10, 4, 12, 6, 14)
               : wasm_i8x16_shuffle(h, h, 0, 2, 4, 6, 8, 10, 12, 14, 1, 1, 1, 1, 1, 1, 1, 1);
    uint8_t *e = y + o * OW + q0;
    if (q0 + 8 <= OW || o * OW + q0 + 8 <= OH * OW) { /* (past OW: into the next rows, written after) */
        wasm_v128_store64_lane(e, h, 0);
    } else { /* a step that would pass the plane's end: OW - q0 < 8 bytes exactly */
        const int64_t n = OW - q0;
        if (n & 4) wasm_v128_store32_lane(e, h, 0), h = wasm_u64x2_shr(h, 32), e += 4;
        if (n & 2) wasm_v128_store16_lane(e, h, 0), h = wasm_u64x2_shr(h, 16), e += 2;
        if (n & 1) wasm_v128_store8_lane(e, h, 0);
    }
}
#define DW3_DOT2(x, u, y, v) wasm_i32x4_add(wasm_i32x4_dot_i16x8(x, u), wasm_i32x4_dot_i16x8(y, v))
/* stride 1 (nar: W < 8) */
static inline __attribute__((always_inline)) void dw3_s1(const lithe__conv2d *g, const bool nar, const uint8_t *x,
                                                         const uint8_t *xend, const lithe__qx *q, const float *t,
                                                         v128_t rq, v128_t rb, const lithe__qconv *c, uint8_t *y,
                                                         int16_t *buf) {
    const int64_t H = g->H, W = g->W, OH = g->OH, OW = g->OW, ld = lithe__qconv_dw3_ld(g);
    const v128_t z = wasm_i16x8_splat((int16_t)q->zx), clo = wasm_f32x4_splat(c->clo), chi = wasm_f32x4_splat(c->chi),
                 rb0 = wasm_i32x4_splat(0x4B400000 + (int32_t)c->yq->lo + (c->yq->src == 2 ? 128 : 0)),
                 zero = wasm_i32x4_const_splat(0);
    /* (rows under 8 wide) the lanes at positions <= W */
    const v128_t keep = wasm_i16x8_gt(wasm_i16x8_splat((int16_t)(W + 1)), wasm_i16x8_make(0, 1, 2, 3, 4, 5, 6, 7));
    const bool s8 = q->src == 2;
#define DW3_LOAD(p) wasm_i16x8_sub(s8 ? wasm_i16x8_load8x8(p) : wasm_u16x8_load8x8(p), z)
    for (int64_t h = 0; h < H; h++) { /* the plane's rows as x - zx */
        int16_t *d = buf + (h + 1) * ld;
        const uint8_t *xr = x + h * W;
        if (W >= 8) {
            int64_t i = 0;
            for (; i + 8 <= W; i += 8) wasm_v128_store(d + 1 + i, DW3_LOAD(xr + i));
            if (i < W) wasm_v128_store(d + 1 + W - 8, DW3_LOAD(xr + W - 8));
        } else if (xr + 8 <= xend) {
            const v128_t v = wasm_i16x8_shuffle(zero, DW3_LOAD(xr), 0, 8, 9, 10, 11, 12, 13, 14);
            wasm_v128_store(d, wasm_v128_and(v, keep));
        } else {
            for (int64_t i = 0; i < W; i++)
                d[i + 1] = (int16_t)((s8 ? (int32_t)(int8_t)xr[i] : (int32_t)xr[i]) - q->zx);
        }
    }
#undef DW3_LOAD
    v128_t w01[3], w2[3];
    dw3_taps(t, 1, w01, w2);
    for (int64_t o = 0; o < OH; o++)
        for (int64_t q0 = 0; q0 < OW; q0 += 8) {
            v128_t a = wasm_i32x4_const_splat(0), b = a;
            for (int k = 0; k < 3; k++) {
                const int16_t *r = buf + (o + k) * ld + q0;
                const v128_t x0 = wasm_v128_load(r);
                v128_t x1, x2;
                if (nar) {
                    const v128_t x8 = wasm_v128_load(r + 8);
                    x1 = wasm_i16x8_shuffle(x0, x8, 1, 2, 3, 4, 5, 6, 7, 8);
                    x2 = wasm_i16x8_shuffle(x0, x8, 2, 3, 4, 5, 6, 7, 8, 9);
                } else {
                    x1 = wasm_v128_load(r + 1), x2 = wasm_v128_load(r + 2);
                }
                a = wasm_i32x4_add(a, DW3_DOT2(x0, w01[k], x1, w2[k]));
                b = wasm_i32x4_add(b, DW3_DOT2(x1, w01[k], x2, w2[k]));
            }
            dw3_out(g, 1, a, b, rq, rb, clo, chi, rb0, y, o, q0);
        }
}
/* stride 2: one kernel row's terms of 8 outputs from xr's pairs (first: the step at q0 = 0) */
#define DW3_S2_ROW(xr, k, first)                                                                                       \
    do {                                                                                                               \
        const v128_t x0_ =                                                                                             \
            (first) ? wasm_i16x8_shuffle(zxv, DW3_L(xr), 0, 8, 9, 10, 11, 12, 13, 14) : DW3_L((xr) - 1);              \
        a = wasm_i32x4_add(a, DW3_DOT2(x0_, w01[k], DW3_L((xr) + 1), w2[k]));                                          \
        b = wasm_i32x4_add(b, DW3_DOT2(DW3_L((xr) + 7), w01[k], DW3_L((xr) + 9), w2[k]));                              \
    } while (0)
static inline __attribute__((always_inline)) void dw3_s2(const lithe__conv2d *g, const bool s8, const uint8_t *x,
                                                         const lithe__qx *q, const float *t, v128_t rq, v128_t rb,
                                                         const lithe__qconv *c, uint8_t *y, const uint8_t *zrow) {
    const int64_t W = g->W, OH = g->OH, OW = g->OW;
    const v128_t clo = wasm_f32x4_splat(c->clo), chi = wasm_f32x4_splat(c->chi),
                 rb0 = wasm_i32x4_splat(0x4B400000 + (int32_t)c->yq->lo + (c->yq->src == 2 ? 128 : 0)),
                 zxv = wasm_i16x8_splat((int16_t)q->zx);
    v128_t w01[3], w2[3];
    dw3_taps(t, 2, w01, w2);
    /* zx · Σ taps (integers: their float sum exact) */
    const float ts = t[0] + t[1] + t[2] + t[3] + t[4] + t[5] + t[6] + t[7] + t[8];
    const v128_t zw = wasm_i32x4_splat(q->zx * (int32_t)ts);
#define DW3_L(p) (s8 ? wasm_i16x8_load8x8(p) : wasm_u16x8_load8x8(p))
    for (int64_t o = 0; o < OH; o++) {
        const uint8_t *r1 = x + 2 * o * W, *r0 = o ? r1 - W : zrow, *r2 = r1 + W;
        for (int64_t q0 = 0; q0 < OW; q0 += 8) {
            v128_t a = wasm_i32x4_const_splat(0), b = a;
            if (!q0) {
                DW3_S2_ROW(r0, 0, true);
                DW3_S2_ROW(r1, 1, true);
                DW3_S2_ROW(r2, 2, true);
            } else {
                DW3_S2_ROW(r0 + 2 * q0, 0, false);
                DW3_S2_ROW(r1 + 2 * q0, 1, false);
                DW3_S2_ROW(r2 + 2 * q0, 2, false);
            }
            dw3_out(g, 2, wasm_i32x4_sub(a, zw), wasm_i32x4_sub(b, zw), rq, rb, clo, chi, rb0, y, o, q0);
        }
    }
#undef DW3_L
}
#undef DW3_S2_ROW
#undef DW3_DOT2
static void dw3_codes(const lithe__conv2d *g, const uint8_t *X, const lithe__qx *q, const float *w,
                      const lithe__qconv *c, int64_t p0, int64_t p1, int16_t *buf) {
    const int64_t P = g->OH * g->OW, HW = g->H * g->W, s = g->stride[0];
    const uint8_t *xend = X + g->N * g->C * HW;
    /* stride 2: a row of zx (the top padding), then room for a plane's copy */
    uint8_t *zrow = (uint8_t *)buf, *xc = zrow + g->W + 32;
    if (s == 2) memset(zrow, (uint8_t)q->zx, (size_t)g->W + 32);
    for (int64_t p = p0, m = p0 % g->C; p < p1; p++, m = m + 1 == g->C ? 0 : m + 1) {
        const v128_t rq = wasm_f32x4_splat(c->rq[m]), rb = wasm_f32x4_splat(c->rb[m]);
        const uint8_t *x = X + p * HW;
        uint8_t *y = c->Yc + p * P;
        if (s == 2) {
            if (x + HW + 16 > xend) { /* the last row's last step reads up to 15 bytes past 2·OW - 1 <= W - 1 */
                memcpy(xc, x, (size_t)HW);
                memset(xc + HW, 0, 16);
                x = xc;
            }
            if (q->src == 2) dw3_s2(g, true, x, q, w + 9 * m, rq, rb, c, y, zrow);
            else dw3_s2(g, false, x, q, w + 9 * m, rq, rb, c, y, zrow);
        } else if (g->W < 8) {
            dw3_s1(g, true, x, xend, q, w + 9 * m, rq, rb, c, y, buf);
        } else {
            dw3_s1(g, false, x, xend, q, w + 9 * m, rq, rb, c, y, buf);
        }
    }
}

/* lithe__qconv_gather_pairs 4 pixels a vector, the last overlapping the one before (n >= 4; shorter
 * rows and other strides by the twin). Stride 1: 4 values of each row, interleaved (punpcklwd);
 * stride 2: 8 values of r0 from s·i and 8 of r1 from s·i - 1, r0's even lanes and r1's odd ones (one
 * blend, pblendw: the pairs in place; a shuffle of both rows' even lanes measured 57 us where this
 * takes 45 for mobilenet_v2's first layer). pack_x's slack: the loads may reach a value before a
 * row or after its last kept one. */
static void gather_pairs(int64_t n, const int16_t *r0, const int16_t *r1, int64_t s, int16_t *d) {
    if (n < 4 || s > 2) {
        lithe__qconv_gather_pairs(n, r0, r1, s, d);
        return;
    }
#define GATHER4(i)                                                                                                  \
    (s == 1 ? wasm_i16x8_shuffle(wasm_v128_load64_zero(r0 + (i)), wasm_v128_load64_zero(r1 + (i)), 0, 8, 1, 9, 2,  \
                                 10, 3, 11)                                                                         \
            : wasm_i16x8_shuffle(wasm_v128_load(r0 + 2 * (i)), wasm_v128_load(r1 - 1 + 2 * (i)), 0, 9, 2, 11, 4, 13, \
                                 6, 15))
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) wasm_v128_store(d + 2 * i, GATHER4(i));
    if (i < n) wasm_v128_store(d + 2 * (n - 4), GATHER4(n - 4));
#undef GATHER4
}

const lithe__qconv_aux lithe__qconv_aux_wasm = {quant_f32, quant_i16, quant_pairs, epi,       quant_u8,  quant_quads,
                                                epi_codes, NULL,      codes_pairs, codes_f32, dw3_codes, gather_pairs};

#endif
