/* The int8 GEMM's WebAssembly microkernels (qgemm.h), chosen at build time:
 *  - SIMD128 (-msimd128): the packed tile (ptile_wasm, over lithe__q8_pack's W widened to int16
 *    once per weight): the codes widened to i16 (load8x8_u: any u8), i32x4.dot_i16x8_s sums each
 *    pair of products into an int32 lane (exact: |p| <= 255 * 127); no unpacked tile (the driver
 *    takes the packed one for every product of a U8 kernel: its tile is NULL);
 *  - relaxed SIMD (-mrelaxed-simd, the npm package's lithe-relaxed-simd.wasm), the dynamically
 *    quantized (u7) activations: i32x4.relaxed_dot_i8x16_i7x16_add_s, four s8 x i7 products into
 *    each int32 lane plus the accumulator in one instruction. Its result is implementation-defined
 *    only where the second operand's top bit is set; the activations' codes are 7-bit (0..127), so
 *    every engine gives the exact sum (an intermediate pair sum is at most 2 * 128 * 127 < 2^15).
 *    clang 14 has no builtin for it: the kernel writes the old proposal's f32x4.fms (same
 *    operands: three v128 in, one out, the same encoded length), which nothing else in lithe uses,
 *    and bindings/js/scripts/relaxed-opcodes.mjs rewrites each one after the link. 4 x 2 tiles
 *    (qgemm_wasm_tile.h; 1 x 2 rows for the edge tiles: batch 1 is a row at a time), 16 bytes of K
 *    a step, a horizontal sum per element at the end; w's last partial chunk through a zeroed copy
 *    (a is zero past kw already). Static codes (any u8) take the SIMD128 kernel there too. */
#include "qgemm.h"

#if defined(__wasm_simd128__)
#include <string.h>
#include <wasm_simd128.h>

/* qgemm.h's epilogue, 4 columns a step: lithe__q8_epilogue_ref's operations in its order (i32x4.mul,
 * sub, f32x4.convert_i32x4_s, two f32x4.mul, f32x4.add: each rounded alone), the last n % 4
 * columns by the twin itself. (In the npm build qgemm.c, the driver with the twin, is -Oz: this
 * keeps the epilogue off its scalar loop.) */
static void epi_wasm(size_t n, const int32_t *acc, int32_t za, const int32_t *wsum, float sa, const float *sw,
                     bool per_col, const float *bias, float *y) {
    const v128_t zv = wasm_i32x4_splat(za), sav = wasm_f32x4_splat(sa), s0 = wasm_f32x4_splat(sa * sw[0]);
    size_t c = 0;
    for (; c + 4 <= n; c += 4) {
        v128_t d = wasm_i32x4_sub(wasm_v128_load(acc + c), wasm_i32x4_mul(zv, wasm_v128_load(wsum + c)));
        v128_t s = per_col ? wasm_f32x4_mul(sav, wasm_v128_load(sw + c)) : s0;
        v128_t t = wasm_f32x4_mul(wasm_f32x4_convert_i32x4(d), s);
        if (bias) t = wasm_f32x4_add(t, wasm_v128_load(bias + c));
        wasm_v128_store(y + c, t);
    }
    if (c < n) lithe__q8_epilogue_ref(n - c, acc + c, za, wsum + c, sa, per_col ? sw + c : sw, per_col, bias ? bias + c : NULL, y + c);
}

/* qgemm.h's quantize pass, 16 codes a step: f32x4.div, pmin(t, hi) (hi < t ? hi : t: keeps a NaN),
 * pmax(lo, t) (lo < t ? t : lo: NaN to lo), ± 1.5·2^23 (round half to even), + off, then
 * i32x4.trunc_sat_f32x4 (exact: an integer in [0, 255]) and two narrows; the last n % 16 by the twin */
static inline __attribute__((always_inline)) v128_t u4(const float *x, v128_t s, v128_t lo, v128_t hi, v128_t off) {
    const v128_t r = wasm_f32x4_splat(12582912.0f);
    v128_t t = wasm_f32x4_pmax(lo, wasm_f32x4_pmin(wasm_f32x4_div(wasm_v128_load(x), s), hi));
    return wasm_i32x4_trunc_sat_f32x4(wasm_f32x4_add(wasm_f32x4_sub(wasm_f32x4_add(t, r), r), off));
}
static void quant_wasm(size_t n, const float *x, const lithe__q8_qx *q, uint8_t *u) {
    const v128_t s = wasm_f32x4_splat(q->scale), lo = wasm_f32x4_splat(q->lo), hi = wasm_f32x4_splat(q->hi),
                 off = wasm_f32x4_splat(q->off);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        v128_t a = wasm_i16x8_narrow_i32x4(u4(x + i, s, lo, hi, off), u4(x + i + 4, s, lo, hi, off));
        v128_t b = wasm_i16x8_narrow_i32x4(u4(x + i + 8, s, lo, hi, off), u4(x + i + 12, s, lo, hi, off));
        wasm_v128_store(u + i, wasm_u8x16_narrow_i16x8(a, b));
    }
    if (i < n) lithe__q8_quant_ref(n - i, x + i, q, u + i);
}

/* The packed tile (qgemm.h's ptile over lithe__q8_pack's int16 W): 2 rows x 4 columns at a time
 * (8 accumulators, two rows of codes, one vector of W: 11 of V8's 15 free xmm registers), 8 k a
 * step: the two rows' codes widened (load8x8_u), each of the group's 4 columns one plain load of
 * 8 int16 against both rows. Against the unpacked tile (4 x 2, both operands widened per step):
 * 2 widenings per 64 products instead of 6, one W pointer with constant offsets, no per-tile
 * horizontal sums (sum4: one transposing add per 4 columns of a row). A last odd row alone. */
static __attribute__((noinline)) v128_t sum4(v128_t c0, v128_t c1, v128_t c2, v128_t c3) {
    const v128_t t0 = wasm_i32x4_add(wasm_i32x4_shuffle(c0, c1, 0, 4, 1, 5), wasm_i32x4_shuffle(c0, c1, 2, 6, 3, 7));
    const v128_t t1 = wasm_i32x4_add(wasm_i32x4_shuffle(c2, c3, 0, 4, 1, 5), wasm_i32x4_shuffle(c2, c3, 2, 6, 3, 7));
    return wasm_i32x4_add(wasm_i64x2_shuffle(t0, t1, 0, 2), wasm_i64x2_shuffle(t0, t1, 1, 3));
}
#define PDOT(c, x, w) c = wasm_i32x4_add(c, wasm_i32x4_dot_i16x8(x, w))
static void ptile_wasm(size_t mr, size_t nc, size_t k4, const uint8_t *a, size_t lda, const int8_t *wp, int32_t *acc) {
    const size_t kn = (k4 + 1) / 2 * 8; /* k of the packed groups (a is zero from K there) */
    for (size_t c = 0; c < nc; c += 4, wp += kn * 8) {
        size_t i = 0;
        for (; i + 2 <= mr; i += 2) {
            const uint8_t *a0 = a + i * lda, *a1 = a0 + lda;
            const int8_t *p = wp;
            v128_t c00 = wasm_i32x4_splat(0), c01 = c00, c02 = c00, c03 = c00, c10 = c00, c11 = c00, c12 = c00, c13 = c00;
#pragma clang loop unroll(disable)
            for (size_t k = 0; k < kn; k += 8, p += 64) {
                const v128_t x0 = wasm_u16x8_load8x8(a0 + k), x1 = wasm_u16x8_load8x8(a1 + k);
                v128_t w = wasm_v128_load(p);
                PDOT(c00, x0, w);
                PDOT(c10, x1, w);
                w = wasm_v128_load(p + 16);
                PDOT(c01, x0, w);
                PDOT(c11, x1, w);
                w = wasm_v128_load(p + 32);
                PDOT(c02, x0, w);
                PDOT(c12, x1, w);
                w = wasm_v128_load(p + 48);
                PDOT(c03, x0, w);
                PDOT(c13, x1, w);
            }
            wasm_v128_store(acc + i * LITHE__Q8_PW + c, sum4(c00, c01, c02, c03));
            wasm_v128_store(acc + (i + 1) * LITHE__Q8_PW + c, sum4(c10, c11, c12, c13));
        }
        if (i < mr) {
            const uint8_t *a0 = a + i * lda;
            const int8_t *p = wp;
            v128_t c00 = wasm_i32x4_splat(0), c01 = c00, c02 = c00, c03 = c00;
#pragma clang loop unroll(disable)
            for (size_t k = 0; k < kn; k += 8, p += 64) {
                const v128_t x0 = wasm_u16x8_load8x8(a0 + k);
                PDOT(c00, x0, wasm_v128_load(p));
                PDOT(c01, x0, wasm_v128_load(p + 16));
                PDOT(c02, x0, wasm_v128_load(p + 32));
                PDOT(c03, x0, wasm_v128_load(p + 48));
            }
            wasm_v128_store(acc + i * LITHE__Q8_PW + c, sum4(c00, c01, c02, c03));
        }
    }
}
#undef PDOT

/* The SIMD128 kernel: the packed tile on any u8 codes. The relaxed core keeps it for static codes
 * (below); the plain SIMD128 core runs it for everything. */
static const lithe__q8_kernel u8_kernel = {"wasmsimd", NULL, LITHE__Q8_A_U8, epi_wasm, quant_wasm, ptile_wasm};
const lithe__q8_kernel *lithe__q8_kernel_wasmsimd_u8(void) { return &u8_kernel; }

#if defined(__wasm_relaxed_simd__)
/* the relaxed tile: u7 codes (LITHE__Q8_A_U7) */
#define INL static inline __attribute__((always_inline))
static inline __attribute__((always_inline)) int32_t hsum(v128_t v) {
    return wasm_i32x4_extract_lane(v, 0) + wasm_i32x4_extract_lane(v, 1) + wasm_i32x4_extract_lane(v, 2) +
           wasm_i32x4_extract_lane(v, 3);
}
/* c + Σ4 w[k] * a[k] per lane (w: s8, a: u7 codes); written as f32x4.fms, rewritten after the link */
#define Q8W(x) x##_relaxed
#define DOT(c, a, w) c = (v128_t)__builtin_wasm_fms_f32x4((__f32x4)(w), (__f32x4)(a), (__f32x4)(c))
#define LOAD_A(p) wasm_v128_load(p)
#define LOAD_W(p) wasm_v128_load(p)
#include "qgemm_wasm_tile.h"
static const lithe__q8_kernel wasm_kernel = {"wasmrelaxed", tile_wasm_relaxed, LITHE__Q8_A_U7, epi_wasm, quant_wasm,
                                             NULL};
/* Static codes (QDQ graphs: any u8) on the relaxed dot's i7 operand go in two halves, two passes over
 * K (qgemm.c's q8_static), where the SIMD128 tile reads them whole: mlp_int8_b64 in Chromium 156
 * ran 1.6x slower on the relaxed tile; the driver takes u8_kernel (above) for them. */
const lithe__q8_kernel *lithe__q8_kernel_wasmsimd(void) { return &wasm_kernel; }
#else
const lithe__q8_kernel *lithe__q8_kernel_wasmsimd(void) { return &u8_kernel; }
#endif
#else
const lithe__q8_kernel *lithe__q8_kernel_wasmsimd(void) { return 0; }
const lithe__q8_kernel *lithe__q8_kernel_wasmsimd_u8(void) { return 0; }
#endif
