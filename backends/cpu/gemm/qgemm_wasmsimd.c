/* The int8 GEMM's WebAssembly microkernels (qgemm.h), chosen at build time:
 *  - SIMD128 (-msimd128): the u7 codes and the s8 weights widened to i16 (extend_low / _high),
 *    i32x4.dot_i16x8_s sums each pair of products into an int32 lane (exact: |p| <= 127 * 127);
 *  - relaxed SIMD (-mrelaxed-simd, the npm package's lithe-relaxed-simd.wasm):
 *    i32x4.relaxed_dot_i8x16_i7x16_add_s, four s8 x i7 products into each int32 lane plus the
 *    accumulator in one instruction. Its result is implementation-defined only where the second
 *    operand's top bit is set; the activations' codes are 7-bit (0..127), so every engine gives the
 *    exact sum (an intermediate pair sum is at most 2 * 128 * 127 < 2^15). clang 14 has no builtin
 *    for it: the kernel writes the old proposal's f32x4.fms (same operands: three v128 in, one out,
 *    the same encoded length), which nothing else in lithe uses, and
 *    bindings/js/scripts/relaxed-opcodes.mjs rewrites each one after the link.
 * 4 x 2 tiles (and 1 x 2 rows for the edge tiles: batch 1 is a row at a time), 16 bytes of K a
 * step, a horizontal sum per element at the end; w's last partial chunk through a zeroed copy (a is
 * zero past kw already). */
#include "qgemm.h"

#if defined(__wasm_simd128__)
#include <string.h>
#include <wasm_simd128.h>

#if defined(__wasm_relaxed_simd__)
#define ISA "wasmrelaxed"
#define A_CODES LITHE__Q8_A_U7 /* the i7 operand */
/* c + Σ4 w[k] * a[k] per lane (w: s8, a: u7 codes); written as f32x4.fms, rewritten after the link */
#define DOT(c, a, w) c = (v128_t)__builtin_wasm_fms_f32x4((__f32x4)(w), (__f32x4)(a), (__f32x4)(c))
#define LOAD_A(p) wasm_v128_load(p)
#define LOAD_W(p) wasm_v128_load(p)
#else
#define ISA "wasmsimd"
#define A_CODES LITHE__Q8_A_U8 /* a widened by load8x8_u */
/* the 16 bytes as two i16x8 halves, .l and .h */
typedef struct half2 {
    v128_t l, h;
} half2;
/* (v128.load8x8_u / _s: one load-and-widen each, a memory operand of V8's pmovzxbw / pmovsxbw on
 * x86-64, where a 16-byte load and extend_low / extend_high took four instructions) */
static inline __attribute__((always_inline)) half2 load_a(const uint8_t *p) {
    return (half2){wasm_u16x8_load8x8(p), wasm_u16x8_load8x8(p + 8)};
}
static inline __attribute__((always_inline)) half2 load_w(const int8_t *p) {
    return (half2){wasm_i16x8_load8x8(p), wasm_i16x8_load8x8(p + 8)};
}
#define DOT(c, a, w) \
    c = wasm_i32x4_add(c, wasm_i32x4_add(wasm_i32x4_dot_i16x8((a).l, (w).l), wasm_i32x4_dot_i16x8((a).h, (w).h)))
#define LOAD_A(p) load_a(p)
#define LOAD_W(p) load_w(p)
#endif

static inline __attribute__((always_inline)) int32_t hsum(v128_t v) {
    return wasm_i32x4_extract_lane(v, 0) + wasm_i32x4_extract_lane(v, 1) + wasm_i32x4_extract_lane(v, 2) +
           wasm_i32x4_extract_lane(v, 3);
}

#define INL static inline __attribute__((always_inline))
typedef __typeof__(LOAD_A((const uint8_t *)0)) a_vec;
typedef __typeof__(LOAD_W((const int8_t *)0)) w_vec;

/* one step of 16 bytes: rows a, a + lda, ... against the columns p0, p1 */
INL void step_4x2(v128_t *c, const uint8_t *a, size_t lda, const int8_t *p0, const int8_t *p1) {
    w_vec w0 = LOAD_W(p0), w1 = LOAD_W(p1);
    a_vec a0 = LOAD_A(a), a1 = LOAD_A(a + lda);
    DOT(c[0], a0, w0);
    DOT(c[1], a0, w1);
    DOT(c[2], a1, w0);
    DOT(c[3], a1, w1);
    a0 = LOAD_A(a + 2 * lda), a1 = LOAD_A(a + 3 * lda);
    DOT(c[4], a0, w0);
    DOT(c[5], a0, w1);
    DOT(c[6], a1, w0);
    DOT(c[7], a1, w1);
}
INL void step_1x2(v128_t *c, const uint8_t *a, const int8_t *p0, const int8_t *p1) {
    a_vec av = LOAD_A(a);
    w_vec w0 = LOAD_W(p0), w1 = LOAD_W(p1);
    DOT(c[0], av, w0);
    DOT(c[1], av, w1);
}
INL void step_1x1(v128_t *c, const uint8_t *a, const int8_t *p0) {
    a_vec av = LOAD_A(a);
    w_vec w0 = LOAD_W(p0);
    DOT(c[0], av, w0);
}

static void tile_wasm(size_t mr, size_t nr, size_t kw, const uint8_t *a, size_t lda, const int8_t *w, size_t ldw,
                      int32_t *acc) {
    const size_t kfull = kw / 16 * 16;
    const int8_t *w1 = w + (nr == 2 ? ldw : 0); /* (nr 1: read as column 0, never stored) */
    int8_t tail[LITHE__Q8_NR][16];
    if (kfull < kw) { /* the last partial chunk of w's columns, zero-padded */
        memset(tail, 0, sizeof tail);
        memcpy(tail[0], w + kfull, kw - kfull);
        memcpy(tail[1], w1 + kfull, kw - kfull);
    }
    if (mr == 4 && nr == 2) {
        v128_t c[8];
        for (int e = 0; e < 8; e++) c[e] = wasm_i32x4_splat(0);
        size_t k = 0;
        for (; k < kfull; k += 16) step_4x2(c, a + k, lda, w + k, w1 + k);
        if (k < kw) step_4x2(c, a + k, lda, tail[0], tail[1]);
        for (int e = 0; e < 8; e++) acc[e] = hsum(c[e]);
        return;
    }
    for (size_t i = 0; i < mr; i++) { /* edge tiles (batch 1: every tile): a row at a time */
        const uint8_t *ai = a + i * lda;
        v128_t c[2] = {wasm_i32x4_splat(0), wasm_i32x4_splat(0)};
        size_t k = 0;
        if (nr == 2) {
            for (; k < kfull; k += 16) step_1x2(c, ai + k, w + k, w1 + k);
            if (k < kw) step_1x2(c, ai + k, tail[0], tail[1]);
            acc[i * LITHE__Q8_NR + 1] = hsum(c[1]);
        } else {
            for (; k < kfull; k += 16) step_1x1(c, ai + k, w + k);
            if (k < kw) step_1x1(c, ai + k, tail[0]);
        }
        acc[i * LITHE__Q8_NR] = hsum(c[0]);
    }
}

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

static const lithe__q8_kernel wasm_kernel = {ISA, tile_wasm, A_CODES, epi_wasm, quant_wasm};
const lithe__q8_kernel *lithe__q8_kernel_wasmsimd(void) { return &wasm_kernel; }
#else
const lithe__q8_kernel *lithe__q8_kernel_wasmsimd(void) { return 0; }
#endif
