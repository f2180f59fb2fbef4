/* The int8 convolution's WebAssembly SIMD128 kernel (qconv.h), chosen at build time (-msimd128:
 * the WASI build, the npm package's SIMD128, relaxed-SIMD and threads modules); compiles to nothing
 * elsewhere. The packing is the AVX2 tile's (qconv.c: X as int16 pairs along K, W as int32 pairs
 * per filter in panels of MR = 4): per K pair one i32x4.dot_i16x8_s of four pixels' pairs by the
 * filter's splatted pair gives each pixel's two products summed in its int32 lane — exact for any
 * 8-bit codes (|x - zx|, |w - zw| <= 255: a pair sum below 2^17). Tile: 4 filters × 8 pixels, 8
 * accumulators, two v128 loads of X and four load32_splat of W per K pair (12 live vectors: V8 keeps
 * them in x86-64's 16 xmm registers). The epilogue is the scalar twin's: (float)acc · scale (+ b),
 * mul then add (no FMA), stored into Y's rows (a partial last vector through a buffer), then the
 * activation over the tile's rows (lithe__qconv_act_rows, as the AVX2 tile's non-clamp ones).
 *
 * Relaxed SIMD's i32x4.relaxed_dot_i8x16_i7x16_add_s needs int8 operands with one side 7-bit; the
 * differences x - zx and w - zw span 9 bits, so it cannot take this packing exactly: the relaxed
 * module runs this kernel too. */
#include "qconv.h"

#if defined(__wasm_simd128__)
#include <string.h>
#include <wasm_simd128.h>

static inline __attribute__((always_inline)) void store4(const lithe__qconv *c, int64_t m, int64_t p, v128_t acc) {
    if (m >= c->M || p >= c->P) return;
    v128_t v = wasm_f32x4_mul(wasm_f32x4_convert_i32x4(acc), wasm_f32x4_splat(c->scale[m]));
    if (c->b) v = wasm_f32x4_add(v, wasm_f32x4_splat(c->b[m]));
    float *y = c->Y + m * c->P + p;
    if (p + 4 <= c->P) {
        wasm_v128_store(y, v);
    } else {
        float t[4];
        wasm_v128_store(t, v);
        memcpy(y, t, (size_t)(c->P - p) * sizeof *t);
    }
}

#define DOT(acc, x, w) acc = wasm_i32x4_add(acc, wasm_i32x4_dot_i16x8(x, w))

void lithe__qconv_wasm(const lithe__qconv *c, int64_t m0, int64_t m1) {
    const int64_t Kp = c->Kp, P8 = c->P8;
    const bool act = c->clamp || c->act;
    for (int64_t m = m0; m < m1 && m < c->M; m += LITHE__QC_MR) {
        const int32_t *wp = c->W + (m / LITHE__QC_MR) * Kp * LITHE__QC_MR;
        for (int64_t p = 0; p < P8; p += 8) {
            v128_t a00 = wasm_i32x4_const_splat(0), a01 = a00, a10 = a00, a11 = a00, a20 = a00, a21 = a00,
                   a30 = a00, a31 = a00;
            const int16_t *x = c->X + p * 2;
            const int32_t *w = wp;
            for (int64_t kp = 0; kp < Kp; kp++, x += P8 * 2, w += LITHE__QC_MR) {
                const v128_t x0 = wasm_v128_load(x), x1 = wasm_v128_load(x + 8);
                v128_t wv = wasm_v128_load32_splat(&w[0]);
                DOT(a00, x0, wv);
                DOT(a01, x1, wv);
                wv = wasm_v128_load32_splat(&w[1]);
                DOT(a10, x0, wv);
                DOT(a11, x1, wv);
                wv = wasm_v128_load32_splat(&w[2]);
                DOT(a20, x0, wv);
                DOT(a21, x1, wv);
                wv = wasm_v128_load32_splat(&w[3]);
                DOT(a30, x0, wv);
                DOT(a31, x1, wv);
            }
            store4(c, m, p, a00), store4(c, m, p + 4, a01);
            store4(c, m + 1, p, a10), store4(c, m + 1, p + 4, a11);
            store4(c, m + 2, p, a20), store4(c, m + 2, p + 4, a21);
            store4(c, m + 3, p, a30), store4(c, m + 3, p + 4, a31);
            if (act) lithe__qconv_act_rows(c, m, p, 8); /* the tile's rows while in L1 */
        }
    }
}
#endif
