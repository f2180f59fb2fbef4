/* WebAssembly SIMD128 SGEMM microkernel (chosen at build time: compiled in when the build passes
 * -msimd128, i.e. the wasm-simd and wasm-simd-threads presets (Emscripten) and wasi (clang);
 * the wasm-scalar build keeps the scalar kernel).
 *
 * 4 x 8: 8 f32x4 accumulators, 2 B registers, one splat of A and one product = 12 live v128s.
 * Engines map v128 onto the host's SSE/AVX or NEON registers and x86-64 engines use only 16
 * of them (V8: xmm0-15), so a taller tile spills. No FMA: plain SIMD128 has none, and
 * relaxed-SIMD's f32x4.relaxed_madd cannot be used here (clang 14 / Emscripten 3.1.6 emit the
 * proposal's old opcode, which Node 20's V8 11.3 rejects even with --experimental-wasm-relaxed-simd;
 * and relaxed_madd may or may not fuse, depending on the engine, so results would differ by host).
 * Each step is acc[i][j] = acc[i][j] + a[i] * b[j], both rounded, k in order (gemm.h); the write
 * rule is t = alpha * acc; t = t + beta * c; t = t + bias, each rounded: exactly the scalar
 * kernel's arithmetic, so the scalar wasm build and this one give the same bits.
 *
 * Blocking for the x86-64 hosts that run browsers and Node (32-48 KiB L1D, >= 512 KiB L2): a B
 * sliver of kc x 8 floats is 8 KiB, an A block of mc x kc is 128 KiB. */
#include "gemm.h"

#if defined(__wasm_simd128__)
#include <wasm_simd128.h>

#define MR 4
#define NR 8

/* One row of the tile with the write rule of gemm.h; a partial row (n < NR) runs the same
 * operations on copies. */
static inline __attribute__((always_inline)) void store_row(v128_t a0, v128_t a1, float *c, const float *bias,
                                                            v128_t valpha, float beta, size_t n) {
    v128_t t0 = wasm_f32x4_mul(valpha, a0), t1 = wasm_f32x4_mul(valpha, a1);
    v128_t vbeta = wasm_f32x4_splat(beta);
    if (n == NR) {
        if (beta != 0.0f) {
            t0 = wasm_f32x4_add(t0, wasm_f32x4_mul(vbeta, wasm_v128_load(c)));
            t1 = wasm_f32x4_add(t1, wasm_f32x4_mul(vbeta, wasm_v128_load(c + 4)));
        }
        if (bias) {
            t0 = wasm_f32x4_add(t0, wasm_v128_load(bias));
            t1 = wasm_f32x4_add(t1, wasm_v128_load(bias + 4));
        }
        wasm_v128_store(c, t0);
        wasm_v128_store(c + 4, t1);
        return;
    }
    float cb[NR] = {0}, bb[NR] = {0}, out[NR];
    if (beta != 0.0f)
        for (size_t j = 0; j < n; j++) cb[j] = c[j];
    if (bias)
        for (size_t j = 0; j < n; j++) bb[j] = bias[j];
    if (beta != 0.0f) {
        t0 = wasm_f32x4_add(t0, wasm_f32x4_mul(vbeta, wasm_v128_load(cb)));
        t1 = wasm_f32x4_add(t1, wasm_f32x4_mul(vbeta, wasm_v128_load(cb + 4)));
    }
    if (bias) {
        t0 = wasm_f32x4_add(t0, wasm_v128_load(bb));
        t1 = wasm_f32x4_add(t1, wasm_v128_load(bb + 4));
    }
    wasm_v128_store(out, t0);
    wasm_v128_store(out + 4, t1);
    for (size_t j = 0; j < n; j++) c[j] = out[j];
}

/* acc += splat(a[i]) * b for row i of the tile. */
#define ROW(i)                                                   \
    {                                                            \
        v128_t x = wasm_v128_load32_splat(a + i);                \
        c##i##0 = wasm_f32x4_add(c##i##0, wasm_f32x4_mul(x, b0)); \
        c##i##1 = wasm_f32x4_add(c##i##1, wasm_f32x4_mul(x, b1)); \
    }

/* a: kc x 4 packed A, b: kc x 8 packed B (gemm.h's layouts); c: the tile, row stride ldc. */
static void lithe_f32_gemm_ukernel_4x8__wasmsimd(size_t mr, size_t nr, size_t kc, const float *a, const float *b,
                                                 float *c, size_t ldc, const lithe__sgemm_ukparams *p) {
    v128_t z = wasm_f32x4_splat(0.0f);
    v128_t c00 = z, c01 = z, c10 = z, c11 = z, c20 = z, c21 = z, c30 = z, c31 = z;
    for (size_t k = 0; k < kc; k++) {
        v128_t b0 = wasm_v128_load(b), b1 = wasm_v128_load(b + 4);
        ROW(0)
        ROW(1)
        ROW(2)
        ROW(3)
        a += MR;
        b += NR;
    }
    v128_t valpha = wasm_f32x4_splat(p->alpha);
    float beta = p->beta;
    const float *bias = p->bias;
    /* rows past mr are computed (the full tile) but not stored */
    store_row(c00, c01, c, bias, valpha, beta, nr);
    if (mr > 1) store_row(c10, c11, c + 1 * ldc, bias, valpha, beta, nr);
    if (mr > 2) store_row(c20, c21, c + 2 * ldc, bias, valpha, beta, nr);
    if (mr > 3) store_row(c30, c31, c + 3 * ldc, bias, valpha, beta, nr);
}

static const lithe__sgemm_kernel kernel = {
    .isa = "wasmsimd", .mr = MR, .nr = NR, .mc = 128, .kc = 256, .nc = 2048,
    .ukernel = lithe_f32_gemm_ukernel_4x8__wasmsimd,
};

const lithe__sgemm_kernel *lithe__sgemm_kernel_wasmsimd(void) { return &kernel; }

#else
const lithe__sgemm_kernel *lithe__sgemm_kernel_wasmsimd(void) { return NULL; }
#endif
