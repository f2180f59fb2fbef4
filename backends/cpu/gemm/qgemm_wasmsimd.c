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

/* the SIMD128 tile: the codes and the s8 weights widened to i16 (any u8 code: LITHE__Q8_A_U8) */
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

static inline __attribute__((always_inline)) int32_t hsum(v128_t v) {
    return wasm_i32x4_extract_lane(v, 0) + wasm_i32x4_extract_lane(v, 1) + wasm_i32x4_extract_lane(v, 2) +
           wasm_i32x4_extract_lane(v, 3);
}

#define INL static inline __attribute__((always_inline))
#define Q8W(x) x##_u8
#define DOT(c, a, w) \
    c = wasm_i32x4_add(c, wasm_i32x4_add(wasm_i32x4_dot_i16x8((a).l, (w).l), wasm_i32x4_dot_i16x8((a).h, (w).h)))
#define LOAD_A(p) load_a(p)
#define LOAD_W(p) load_w(p)
#include "qgemm_wasm_tile.h"
#undef Q8W
#undef DOT
#undef LOAD_A
#undef LOAD_W

#if defined(__wasm_relaxed_simd__)
/* the relaxed tile: u7 codes (LITHE__Q8_A_U7) */
/* c + Σ4 w[k] * a[k] per lane (w: s8, a: u7 codes); written as f32x4.fms, rewritten after the link */
#define Q8W(x) x##_relaxed
#define DOT(c, a, w) c = (v128_t)__builtin_wasm_fms_f32x4((__f32x4)(w), (__f32x4)(a), (__f32x4)(c))
#define LOAD_A(p) wasm_v128_load(p)
#define LOAD_W(p) wasm_v128_load(p)
#include "qgemm_wasm_tile.h"
static const lithe__q8_kernel wasm_kernel = {"wasmrelaxed", tile_wasm_relaxed, LITHE__Q8_A_U7};
/* Static codes (QDQ graphs: any u8) on the relaxed dot's i7 operand go in two halves, two passes over
 * K (lithe__q8_gemm_static), where the SIMD128 tile reads them whole: mlp_int8_b64 in Chromium 156
 * ran 1.6x slower on the relaxed tile; the driver takes this one for them. */
static const lithe__q8_kernel u8_kernel = {"wasmsimd", tile_wasm_u8, LITHE__Q8_A_U8};
const lithe__q8_kernel *lithe__q8_kernel_wasmsimd_u8(void) { return &u8_kernel; }
#else
static const lithe__q8_kernel wasm_kernel = {"wasmsimd", tile_wasm_u8, LITHE__Q8_A_U8};
const lithe__q8_kernel *lithe__q8_kernel_wasmsimd_u8(void) { return &wasm_kernel; }
#endif
const lithe__q8_kernel *lithe__q8_kernel_wasmsimd(void) { return &wasm_kernel; }
#else
const lithe__q8_kernel *lithe__q8_kernel_wasmsimd(void) { return 0; }
const lithe__q8_kernel *lithe__q8_kernel_wasmsimd_u8(void) { return 0; }
#endif
