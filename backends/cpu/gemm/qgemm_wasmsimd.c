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
#include <wasm_simd128.h>

#if defined(__wasm_relaxed_simd__)
#define ISA "wasmrelaxed"
/* c + Σ4 w[k] * a[k] per lane (w: s8, a: u7 codes); written as f32x4.fms, rewritten after the link */
#define DOT(c, a, w) c = (v128_t)__builtin_wasm_fms_f32x4((__f32x4)(w), (__f32x4)(a), (__f32x4)(c))
#define LOAD_A(p) wasm_v128_load(p)
#define LOAD_W(p) wasm_v128_load(p)
#else
#define ISA "wasmsimd"
/* the 16 bytes as two i16x8 halves, .l and .h */
typedef struct half2 {
    v128_t l, h;
} half2;
static inline half2 load_a(const uint8_t *p) {
    v128_t v = wasm_v128_load(p);
    return (half2){wasm_u16x8_extend_low_u8x16(v), wasm_u16x8_extend_high_u8x16(v)};
}
static inline half2 load_w(const int8_t *p) {
    v128_t v = wasm_v128_load(p);
    return (half2){wasm_i16x8_extend_low_i8x16(v), wasm_i16x8_extend_high_i8x16(v)};
}
#define DOT(c, a, w) \
    c = wasm_i32x4_add(c, wasm_i32x4_add(wasm_i32x4_dot_i16x8((a).l, (w).l), wasm_i32x4_dot_i16x8((a).h, (w).h)))
#define LOAD_A(p) load_a(p)
#define LOAD_W(p) load_w(p)
#endif

static inline int32_t hsum(v128_t v) {
    return wasm_i32x4_extract_lane(v, 0) + wasm_i32x4_extract_lane(v, 1) + wasm_i32x4_extract_lane(v, 2) +
           wasm_i32x4_extract_lane(v, 3);
}

static void tile_wasm(size_t mr, size_t nr, size_t kw, const uint8_t *a, size_t lda, const int8_t *w, size_t ldw,
                      int32_t *acc) {
    const size_t kfull = kw / 16 * 16;
    int8_t tail[LITHE__Q8_NR][16] = {{0}};
    for (size_t j = 0; j < nr && kfull < kw; j++)
        for (size_t k = kfull; k < kw; k++) tail[j][k - kfull] = w[j * ldw + k];
    if (mr == 4 && nr == 2) {
        v128_t c00 = wasm_i32x4_splat(0), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00;
        for (size_t k = 0; k < kw; k += 16) {
            const bool full = k < kfull;
            __typeof__(LOAD_W(w)) w0 = LOAD_W(full ? w + k : tail[0]), w1 = LOAD_W(full ? w + ldw + k : tail[1]);
            __typeof__(LOAD_A(a)) a0 = LOAD_A(a + k), a1 = LOAD_A(a + lda + k);
            DOT(c00, a0, w0);
            DOT(c01, a0, w1);
            DOT(c10, a1, w0);
            DOT(c11, a1, w1);
            a0 = LOAD_A(a + 2 * lda + k), a1 = LOAD_A(a + 3 * lda + k);
            DOT(c20, a0, w0);
            DOT(c21, a0, w1);
            DOT(c30, a1, w0);
            DOT(c31, a1, w1);
        }
        acc[0] = hsum(c00), acc[1] = hsum(c01), acc[2] = hsum(c10), acc[3] = hsum(c11);
        acc[4] = hsum(c20), acc[5] = hsum(c21), acc[6] = hsum(c30), acc[7] = hsum(c31);
        return;
    }
    for (size_t i = 0; i < mr; i++) { /* edge tiles: a row at a time, both columns from one load of a */
        const uint8_t *ai = a + i * lda;
        v128_t c0 = wasm_i32x4_splat(0), c1 = c0;
        for (size_t k = 0; k < kw; k += 16) {
            const bool full = k < kfull;
            __typeof__(LOAD_A(a)) av = LOAD_A(ai + k);
            __typeof__(LOAD_W(w)) w0 = LOAD_W(full ? w + k : tail[0]);
            DOT(c0, av, w0);
            if (nr == 2) {
                __typeof__(LOAD_W(w)) w1 = LOAD_W(full ? w + ldw + k : tail[1]);
                DOT(c1, av, w1);
            }
        }
        acc[i * LITHE__Q8_NR] = hsum(c0);
        if (nr == 2) acc[i * LITHE__Q8_NR + 1] = hsum(c1);
    }
}

static const lithe__q8_kernel wasm_kernel = {ISA, tile_wasm};
const lithe__q8_kernel *lithe__q8_kernel_wasmsimd(void) { return &wasm_kernel; }
#else
const lithe__q8_kernel *lithe__q8_kernel_wasmsimd(void) { return 0; }
#endif
