/* WebAssembly SIMD128 SGEMM microkernels (chosen at build time: compiled in when the build passes
 * -msimd128, i.e. the wasm-simd and wasm-simd-threads presets (Emscripten) and wasi (clang);
 * the wasm-scalar build keeps the scalar kernel).
 *
 * 5 x 8 (and 4 x 8 for the row counts it cuts better, for_rows): 10 f32x4 accumulators, 2 B
 * registers, one splat of A and one product = 14 live v128s. Engines map v128 onto the host's
 * SSE/AVX or NEON registers, and V8 on x86-64 allocates 15 of its 16 xmm (xmm15 is its scratch),
 * so 14 is the most a tile can hold without spilling (6 x 8 spills; 4 x 12 and 3 x 16 too).
 * What V8 makes of it was read in its disassembly (`node --print-wasm-code`, which Node 20's
 * release build has): per k the 5 x 8 loop is 2 B loads, 5 broadcast loads, 10 mulps, 10 addps and
 * 8 integer instructions, no spill. The kernels are issue-bound rather than FP-bound (Zen 5 runs
 * 2 mulps + 2 addps a cycle, ~59 GFLOP/s at 3.5 GHz when the operands are in registers; the 4 x 8
 * loop ran at 38 GFLOP/s), so the work per k outside the FP ops is what counts:
 *  - a taller tile spreads the loop's integer work and the B loads over more rows (5 x 8: 47
 *    GFLOP/s on an L1-resident sliver against 38 for the old 4 x 8);
 *  - address offsets folded into the loads: clang's loop strength reduction rewrites `b + 4` in
 *    a loop into a pointer without the inbounds flag, so every load got its own i32.add (and V8
 *    a leal) instead of the load's offset immediate. OPAQUE() below hides the advanced pointers
 *    from that pass (an empty asm, no instruction), after which each load is `v128.load
 *    offset=16` and V8 addresses [base + index + 16] (4 x 8: 38 -> 43 GFLOP/s).
 * Unrolling k does not pay: V8's scheduler interleaves the unrolled steps, which raises the live
 * registers past 15 and spills (30 GFLOP/s at 4 x 8).
 *
 * No FMA: plain SIMD128 has none, and relaxed-SIMD's f32x4.relaxed_madd cannot be used here
 * (clang 14 / Emscripten 3.1.6 emit the proposal's old opcode, which Node 20's V8 11.3 rejects
 * even with --experimental-wasm-relaxed-simd; and relaxed_madd may or may not fuse, depending on
 * the engine, so results would differ by host). Each step is acc[i][j] = acc[i][j] + a[i] * b[j],
 * both rounded, k in order (gemm.h); the write rule is t = alpha * acc; t = t + beta * c; t = t +
 * bias, each rounded: exactly the scalar kernel's arithmetic (whatever the tile), so the scalar
 * wasm build and this one give the same bits.
 *
 * Blocking for the x86-64 hosts that run browsers and Node (32-48 KiB L1D, >= 512 KiB L2): a B
 * sliver of kc x 8 floats is 8 KiB, an A block of mc x kc is 120-128 KiB. kc stays the scalar
 * kernel's 256 (the K blocks decide the bits). M = 1 runs SIMD128 GEMVs on W where it lies (no
 * packing), or with W packed ahead the one-row kernel urow, with the same bits. */
#include "gemm.h"

#if defined(__wasm_simd128__)
#include <wasm_simd128.h>

#define NR 8

/* An advanced pointer, hidden from clang's loop strength reduction (see the top): no instruction. */
#define OPAQUE(p) __asm__("" : "+r"(p))

/* The store's clamp: gemm.h's lithe__wasm_clamp (the act kernel's selections, bit for bit), here
 * as a plain inline function so the compiler may keep one body out of line in the -Oz cores. */
static inline v128_t clampv(int clamp, float lo, float hi, v128_t t) { return lithe__wasm_clamp(clamp, lo, hi, t); }

/* The write rule of gemm.h on a row's two vectors t = alpha * acc: beta * c (8 floats at c), bias
 * (8 floats, or NULL) and the clamp (0: none). */
static inline __attribute__((always_inline)) void write_rule(v128_t *t0, v128_t *t1, const float *c, const float *bias,
                                                             float beta, int clamp, float lo, float hi) {
    if (beta != 0.0f) {
        v128_t vbeta = wasm_f32x4_splat(beta);
        *t0 = wasm_f32x4_add(*t0, wasm_f32x4_mul(vbeta, wasm_v128_load(c)));
        *t1 = wasm_f32x4_add(*t1, wasm_f32x4_mul(vbeta, wasm_v128_load(c + 4)));
    }
    if (bias) {
        *t0 = wasm_f32x4_add(*t0, wasm_v128_load(bias));
        *t1 = wasm_f32x4_add(*t1, wasm_v128_load(bias + 4));
    }
    if (clamp) *t0 = clampv(clamp, lo, hi, *t0), *t1 = clampv(clamp, lo, hi, *t1);
}

/* A partial row (n < NR): the full row's rule on copies (kept out of line: one copy for every
 * kernel's every row). */
static __attribute__((noinline)) void store_part(v128_t t0, v128_t t1, float *c, const float *bias, float beta,
                                                 int clamp, float lo, float hi, size_t n) {
    float cb[NR] = {0}, bb[NR] = {0}, out[NR];
    if (beta != 0.0f)
        for (size_t j = 0; j < n; j++) cb[j] = c[j];
    if (bias)
        for (size_t j = 0; j < n; j++) bb[j] = bias[j];
    write_rule(&t0, &t1, cb, bias ? bb : NULL, beta, clamp, lo, hi);
    wasm_v128_store(out, t0);
    wasm_v128_store(out + 4, t1);
    for (size_t j = 0; j < n; j++) c[j] = out[j];
}

/* One row of the tile with the write rule of gemm.h: t = alpha * acc, then beta, bias and the clamp
 * (0: none). */
static inline __attribute__((always_inline)) void store_row(v128_t a0, v128_t a1, float *c, const float *bias,
                                                            v128_t valpha, float beta, int clamp, float lo, float hi,
                                                            size_t n) {
    v128_t t0 = wasm_f32x4_mul(valpha, a0), t1 = wasm_f32x4_mul(valpha, a1);
    if (n != NR) {
        store_part(t0, t1, c, bias, beta, clamp, lo, hi, n);
        return;
    }
    write_rule(&t0, &t1, c, bias, beta, clamp, lo, hi);
    wasm_v128_store(c, t0);
    wasm_v128_store(c + 4, t1);
}

/* The clamp over n floats of C just written (urow's: passing it into the row loop cost the batch-1
 * MLP ~20 %, V8 keeping the extra operands live across it). */
static __attribute__((noinline)) void clamp_row(float *c, size_t n, int clamp, float lo, float hi) {
    size_t j = 0;
    for (; j + 4 <= n; j += 4) wasm_v128_store(c + j, clampv(clamp, lo, hi, wasm_v128_load(c + j)));
    if (j < n) {
        float t[4] = {0};
        for (size_t l = 0; l < n - j; l++) t[l] = c[j + l];
        wasm_v128_store(t, clampv(clamp, lo, hi, wasm_v128_load(t)));
        for (size_t l = 0; l < n - j; l++) c[j + l] = t[l];
    }
}

#if defined(__wasm_relaxed_simd__)
/* The relaxed-SIMD variant (preset wasm-relaxed, docs/wasm.md): acc = x * b + acc in one
 * f32x4.relaxed_madd, fused where the engine has FMA (V8 on x86-64 with FMA3, arm64), so its bits
 * differ from the plain build's. clang 14 knows the instruction only as the proposal's old
 * f32x4.fma (opcode 0xaf); bindings/js/scripts/relaxed-opcodes.mjs rewrites each one in the linked
 * module to the standard relaxed_madd (0x105, a * b + c), whose operand order this call is written
 * for: the builtin's operands reach the instruction in order. */
#define FMADD(acc, x, b) __builtin_wasm_fma_f32x4(x, b, acc)
#else
#define FMADD(acc, x, b) wasm_f32x4_add(acc, wasm_f32x4_mul(x, b))
#endif
#define MADD(acc, x, b) acc = FMADD(acc, x, b)
/* acc += splat(a[i]) * b for row i of the tile (each row right after its splat: V8 keeps the
 * wasm order, and loading every splat first would need 4 more registers). */
#define ROW(i)                                          \
    {                                                   \
        v128_t x = wasm_v128_load32_splat(a + i);       \
        MADD(c##i##0, x, b0);                           \
        MADD(c##i##1, x, b1);                           \
    }
#define STORE(i) \
    if (mr > i) store_row(c##i##0, c##i##1, c + i * ldc, p->bias, valpha, p->beta, p->clamp, p->lo, p->hi, nr);

/* a: kc x MR packed A, b: kc x 8 packed B (gemm.h's layouts); c: the tile, row stride ldc. Rows
 * past mr are computed (the full tile) but not stored. One body for both heights (5x8, 4x8): the
 * row macros above over ROWS4 / ROWS5. */
#define ACC(i) v128_t c##i##0 = z, c##i##1 = z;
#define ROWS4(M) M(0) M(1) M(2) M(3)
#define ROWS5(M) ROWS4(M) M(4)
#define UKERNEL(MR)                                                                                               \
    static void lithe_f32_gemm_ukernel_##MR##x8__wasmsimd(size_t mr, size_t nr, size_t kc, const float *a,       \
                                                          const float *b, float *c, size_t ldc,                   \
                                                          const lithe__sgemm_ukparams *p) {                       \
        v128_t z = wasm_f32x4_splat(0.0f);                                                                        \
        ROWS##MR(ACC) for (size_t k = 0; k < kc; k++) {                                                           \
            v128_t b0 = wasm_v128_load(b), b1 = wasm_v128_load(b + 4);                                            \
            ROWS##MR(ROW) a += MR;                                                                                \
            b += NR;                                                                                              \
            OPAQUE(a);                                                                                            \
            OPAQUE(b);                                                                                            \
        }                                                                                                         \
        v128_t valpha = wasm_f32x4_splat(p->alpha);                                                               \
        ROWS##MR(STORE)                                                                                           \
    }
UKERNEL(5)
UKERNEL(4)

/* ---- M = 1 (batch-1 inference and its backward): GEMV reading W where it lies ----
 * gemm.h: each y[j] gets the microkernel's bits for a one-row A: per kc block, acc = 0 then
 * acc = acc + x[k] * w (rounded mul, rounded add) in k order; per block t = alpha * acc, t = t +
 * beta' * c (beta' = beta for the first block, 1 after); bias after the last. The lanes of a
 * vector hold different j, so every lane runs that scalar sequence; tails run it in scalar. */

/* One y[j] (and the scalar tails), the same arithmetic as a lane. Out of line: inlined (and
 * vectorized by clang) in both GEMVs it was 2.2 KB of the module for the n % 16 tails. */
static __attribute__((noinline)) float gemv_one(size_t K, size_t kc, float alpha, const float *x, const float *w,
                                                size_t step, float beta, float c) {
    for (size_t p = 0; p < K; p += kc) {
        size_t e = K - p < kc ? K : p + kc;
        float acc = 0.0f;
        for (size_t k = p; k < e; k++) {
            float prod = x[k] * w[k * step];
            acc = acc + prod;
        }
        float t = alpha * acc, b = p == 0 ? beta : 1.0f;
        if (b != 0.0f) {
            float bc = b * c;
            t = t + bc;
        }
        c = t;
    }
    return c;
}

static inline __attribute__((always_inline)) v128_t block_write(v128_t acc, v128_t c, float alpha, float b) {
    v128_t t = wasm_f32x4_mul(wasm_f32x4_splat(alpha), acc);
    if (b != 0.0f) t = wasm_f32x4_add(t, wasm_f32x4_mul(wasm_f32x4_splat(b), c));
    return t;
}

/* y[j] = x · W[:, j], w[k * ldw + j]: 16 columns per pass (4 independent accumulators). */
static void gemv_n__wasmsimd(size_t n, size_t K, size_t kc, float alpha, const float *x, const float *w, size_t ldw,
                             float beta, float *y, const float *bias) {
    size_t j = 0;
    for (; j + 16 <= n; j += 16) {
        v128_t c0 = wasm_f32x4_splat(0.0f), c1 = c0, c2 = c0, c3 = c0;
        if (beta != 0.0f) {
            c0 = wasm_v128_load(y + j), c1 = wasm_v128_load(y + j + 4);
            c2 = wasm_v128_load(y + j + 8), c3 = wasm_v128_load(y + j + 12);
        }
        for (size_t p = 0; p < K; p += kc) {
            size_t e = K - p < kc ? K : p + kc;
            v128_t a0 = wasm_f32x4_splat(0.0f), a1 = a0, a2 = a0, a3 = a0;
            for (size_t k = p; k < e; k++) {
                const float *wk = w + k * ldw + j;
                v128_t xk = wasm_v128_load32_splat(x + k);
                a0 = FMADD(a0, xk, wasm_v128_load(wk));
                a1 = FMADD(a1, xk, wasm_v128_load(wk + 4));
                a2 = FMADD(a2, xk, wasm_v128_load(wk + 8));
                a3 = FMADD(a3, xk, wasm_v128_load(wk + 12));
            }
            float b = p == 0 ? beta : 1.0f;
            c0 = block_write(a0, c0, alpha, b), c1 = block_write(a1, c1, alpha, b);
            c2 = block_write(a2, c2, alpha, b), c3 = block_write(a3, c3, alpha, b);
        }
        if (bias) {
            c0 = wasm_f32x4_add(c0, wasm_v128_load(bias + j)), c1 = wasm_f32x4_add(c1, wasm_v128_load(bias + j + 4));
            c2 = wasm_f32x4_add(c2, wasm_v128_load(bias + j + 8)), c3 = wasm_f32x4_add(c3, wasm_v128_load(bias + j + 12));
        }
        wasm_v128_store(y + j, c0), wasm_v128_store(y + j + 4, c1);
        wasm_v128_store(y + j + 8, c2), wasm_v128_store(y + j + 12, c3);
    }
    for (; j < n; j++) {
        float c = gemv_one(K, kc, alpha, x, w + j, ldw, beta, beta != 0.0f ? y[j] : 0.0f);
        y[j] = bias ? c + bias[j] : c;
    }
}

/* Columns k..k+3 of rows r0..r3 (4 consecutive floats of each), transposed. */
#define TRANSPOSE4(r0, r1, r2, r3, k0, k1, k2, k3)                                   \
    {                                                                                \
        v128_t t0 = wasm_i32x4_shuffle(r0, r1, 0, 4, 1, 5);                          \
        v128_t t1 = wasm_i32x4_shuffle(r2, r3, 0, 4, 1, 5);                          \
        v128_t t2 = wasm_i32x4_shuffle(r0, r1, 2, 6, 3, 7);                          \
        v128_t t3 = wasm_i32x4_shuffle(r2, r3, 2, 6, 3, 7);                          \
        k0 = wasm_i32x4_shuffle(t0, t1, 0, 1, 4, 5);                                 \
        k1 = wasm_i32x4_shuffle(t0, t1, 2, 3, 6, 7);                                 \
        k2 = wasm_i32x4_shuffle(t2, t3, 0, 1, 4, 5);                                 \
        k3 = wasm_i32x4_shuffle(t2, t3, 2, 3, 6, 7);                                 \
    }

/* ---- packing (gemm.h's pack_fn) ----
 * rows (op(A) = A, op(B) = Bᵀ: the dense layers' X·Wᵀ): lane l, step k at src[l * ld + k], a
 * transpose: 4 x 4 blocks in registers (lanes past `lanes` zeros), a lane left over (R = 5) and
 * steps past a multiple of 4 one float at a time. Otherwise a copy of R floats per step, or for
 * the last sliver of N (lanes < R) one float at a time.
 * Reads nothing past the lanes and steps asked for. 64 x 512 x 784 (X·Wᵀ, W packed in every
 * call): the portable loops' packing took ~0.2 of its 1.5 ms under Node. */
/* Steps [k, kc) of lanes [l0, R) one float at a time (small: it runs on the edges). The 5-row
 * sliver's fifth lane went through here too at first: 5 % of the transformer's time under Node. */
static __attribute__((noinline, minsize)) void pack_floats(size_t R, size_t lanes, size_t l0, size_t k, size_t kc,
                                                           const float *src, size_t ld, bool rows, float *dst) {
    for (; k < kc; k++)
        for (size_t l = l0; l < R; l++) dst[k * R + l] = l >= lanes ? 0.0f : rows ? src[l * ld + k] : src[k * ld + l];
}

static __attribute__((noinline)) void pack(size_t R, size_t lanes, size_t kc, const float *src, size_t ld, bool rows,
                                          float *dst) {
    v128_t z = wasm_f32x4_splat(0.0f);
    size_t k = 0;
    for (; rows && k + 4 <= kc; k += 4) {
        for (size_t l = 0; l + 4 <= R; l += 4) {
            const float *s0 = src + l * ld + k;
            v128_t r0 = l < lanes ? wasm_v128_load(s0) : z, r1 = l + 1 < lanes ? wasm_v128_load(s0 + ld) : z;
            v128_t r2 = l + 2 < lanes ? wasm_v128_load(s0 + 2 * ld) : z;
            v128_t r3 = l + 3 < lanes ? wasm_v128_load(s0 + 3 * ld) : z;
            v128_t k0, k1, k2, k3;
            TRANSPOSE4(r0, r1, r2, r3, k0, k1, k2, k3)
            float *d = dst + k * R + l;
            wasm_v128_store(d, k0);
            wasm_v128_store(d + R, k1);
            wasm_v128_store(d + 2 * R, k2);
            wasm_v128_store(d + 3 * R, k3);
        }
        if (R % 4) { /* R = 5: lane 4 */
            const float *s4 = src + 4 * ld + k;
            float *d = dst + k * R + 4;
            bool in = lanes > 4;
            d[0] = in ? s4[0] : 0.0f, d[R] = in ? s4[1] : 0.0f, d[2 * R] = in ? s4[2] : 0.0f;
            d[3 * R] = in ? s4[3] : 0.0f;
        }
    }
    for (; !rows && lanes == R && k < kc; k++) {
        for (size_t l = 0; l + 4 <= R; l += 4) wasm_v128_store(dst + k * R + l, wasm_v128_load(src + k * ld + l));
        if (R % 4) dst[k * R + 4] = src[k * ld + 4];
    }
    pack_floats(R, lanes, 0, k, kc, src, ld, rows, dst);
}
static void pack_a5(size_t lanes, size_t kc, const float *src, size_t ld, bool rows, float *dst) {
    pack(5, lanes, kc, src, ld, rows, dst);
}
static void pack_a4(size_t lanes, size_t kc, const float *src, size_t ld, bool rows, float *dst) {
    pack(4, lanes, kc, src, ld, rows, dst);
}
static void pack_b8(size_t lanes, size_t kc, const float *src, size_t ld, bool rows, float *dst) {
    pack(NR, lanes, kc, src, ld, rows, dst);
}

/* Sixteen rows' dot products with x over [p, e): four accumulators (rows 4g..4g+3), independent
 * chains, each k in order. */
static inline __attribute__((always_inline)) void dot16(const float *x, const float *w, size_t ldw, size_t p, size_t e,
                                                        v128_t acc[4], float *fence) {
    v128_t z = wasm_f32x4_splat(0.0f), a0 = z, a1 = z, a2 = z, a3 = z;
    const float *r = w + p, *xk = x + p;
    size_t k = p;
/* Rows 4g..4g+3, steps k..k+3, then the group's sum stored to `fence` (y, written for good after
 * the loop): V8 loaded all 16 rows first and spilled; the store keeps each group's loads after
 * the previous group (V8 does not move loads across stores). */
#define GROUP(g, a)                                                                                    \
    {                                                                                                  \
        const float *rg = r + (size_t)(4 * (g)) * ldw;                                                 \
        v128_t k0, k1, k2, k3;                                                                         \
        TRANSPOSE4(wasm_v128_load(rg), wasm_v128_load(rg + ldw), wasm_v128_load(rg + 2 * ldw),         \
                   wasm_v128_load(rg + 3 * ldw), k0, k1, k2, k3)                                       \
        MADD(a, wasm_v128_load32_splat(xk), k0);                                                       \
        MADD(a, wasm_v128_load32_splat(xk + 1), k1);                                                   \
        MADD(a, wasm_v128_load32_splat(xk + 2), k2);                                                   \
        MADD(a, wasm_v128_load32_splat(xk + 3), k3);                                                   \
        wasm_v128_store(fence + 4 * (g), a);                                                           \
        __asm__ volatile("" ::: "memory");                                                             \
    }
    for (; k + 4 <= e; k += 4) {
        GROUP(0, a0)
        GROUP(1, a1)
        GROUP(2, a2)
        GROUP(3, a3)
        r += 4;
        xk += 4;
        OPAQUE(r);
        OPAQUE(xk);
    }
#undef GROUP
    for (; k < e; k++) {
        v128_t xs = wasm_v128_load32_splat(x + k);
        const float *c0 = w + k;
#define COL(i) wasm_f32x4_make(c0[(i)*ldw], c0[((i) + 1) * ldw], c0[((i) + 2) * ldw], c0[((i) + 3) * ldw])
        MADD(a0, xs, COL(0));
        MADD(a1, xs, COL(4));
        MADD(a2, xs, COL(8));
        MADD(a3, xs, COL(12));
#undef COL
    }
    acc[0] = a0, acc[1] = a1, acc[2] = a2, acc[3] = a3;
}

/* y[j] = x · W[j, :], w[j * ldw + k] (the dense layers' forward at batch 1): 16 rows per pass,
 * 4 x 4 blocks of W transposed in registers so each lane follows one row in k order. */
static void gemv_t__wasmsimd(size_t n, size_t K, size_t kc, float alpha, const float *x, const float *w, size_t ldw,
                             float beta, float *y, const float *bias) {
    size_t j = 0;
    for (; j + 16 <= n; j += 16) {
        v128_t c[4], acc[4];
        for (int g = 0; g < 4; g++) c[g] = beta != 0.0f ? wasm_v128_load(y + j + 4 * g) : wasm_f32x4_splat(0.0f);
        for (size_t p = 0; p < K; p += kc) {
            size_t e = K - p < kc ? K : p + kc;
            dot16(x, w + j * ldw, ldw, p, e, acc, y + j);
            for (int g = 0; g < 4; g++) c[g] = block_write(acc[g], c[g], alpha, p == 0 ? beta : 1.0f);
        }
        for (int g = 0; g < 4; g++) {
            if (bias) c[g] = wasm_f32x4_add(c[g], wasm_v128_load(bias + j + 4 * g));
            wasm_v128_store(y + j + 4 * g, c[g]);
        }
    }
    for (; j < n; j++) {
        float c = gemv_one(K, kc, alpha, x, w + j * ldw, 1, beta, beta != 0.0f ? y[j] : 0.0f);
        y[j] = bias ? c + bias[j] : c;
    }
}

/* ---- M = 1 against B packed ahead (gemm.h's urow): one row against G packed slivers at once ----
 * 2 G accumulators, each element accumulated (rounded product, then rounded sum, k in order) and
 * written as in a row of the tile. Two k steps per iteration (the same order per element; V8
 * interleaves them, which here costs no spill: 8 accumulators + 2 splats + products); with kc =
 * KC (every K block but a short last one) the slivers lie a constant KC x NR floats apart, so all
 * the loads of a step come from one pointer with constant offsets, and 4 slivers go at once; any
 * other kc reads 3 slivers through a pointer each. Measured at 1 x 512 x 784 under Node (W in L3
 * as in a batch-1 MLP): 27.5 GFLOP/s for the earlier 4-sliver loop (an i32.add and a pointer per
 * load), 35 for this one. */
#define KC 256

#define USTEP(xv, o)                                                        \
    {                                                                       \
        v128_t xs = (xv);                                                   \
        MADD(c00, xs, wasm_v128_load(Q(0) + (o) * NR));                     \
        MADD(c01, xs, wasm_v128_load(Q(0) + (o) * NR + 4));                 \
        if (G > 1) MADD(c10, xs, wasm_v128_load(Q(1) + (o) * NR));          \
        if (G > 1) MADD(c11, xs, wasm_v128_load(Q(1) + (o) * NR + 4));      \
        if (G > 2) MADD(c20, xs, wasm_v128_load(Q(2) + (o) * NR));          \
        if (G > 2) MADD(c21, xs, wasm_v128_load(Q(2) + (o) * NR + 4));      \
        if (G > 3) MADD(c30, xs, wasm_v128_load(Q(3) + (o) * NR));          \
        if (G > 3) MADD(c31, xs, wasm_v128_load(Q(3) + (o) * NR + 4));      \
    }

/* G (1..4; 4 only with fixed) slivers from b, the last of them nr_last wide; fixed: kc == KC. */
static inline __attribute__((always_inline)) void urow_group(const int G, const bool fixed, size_t nr_last, size_t kc,
                                                             const float *x, const float *b, float *c,
                                                             const float *bias, v128_t valpha, float beta) {
    const size_t sl = kc * NR;
    const float *q1 = b + sl, *q2 = b + 2 * sl; /* the slivers' own pointers when not fixed */
#define Q(g) ((g) == 0 ? b : fixed ? b + (g) * (KC * NR) : (g) == 1 ? q1 : q2)
    v128_t z = wasm_f32x4_splat(0.0f);
    v128_t c00 = z, c01 = z, c10 = z, c11 = z, c20 = z, c21 = z, c30 = z, c31 = z;
    size_t k = 0;
    for (; k + 2 <= kc; k += 2) {
        USTEP(wasm_v128_load32_splat(x), 0)
        USTEP(wasm_v128_load32_splat(x + 1), 1)
        x += 2;
        b += 2 * NR;
        OPAQUE(x);
        OPAQUE(b);
        if (!fixed && G > 1) {
            q1 += 2 * NR;
            OPAQUE(q1);
        }
        if (!fixed && G > 2) {
            q2 += 2 * NR;
            OPAQUE(q2);
        }
    }
    if (k < kc) USTEP(wasm_v128_load32_splat(x), 0)
#undef Q
    store_row(c00, c01, c, bias, valpha, beta, 0, 0.0f, 0.0f, G == 1 ? nr_last : NR);
    if (G > 1) store_row(c10, c11, c + NR, bias ? bias + NR : NULL, valpha, beta, 0, 0.0f, 0.0f, G == 2 ? nr_last : NR);
    if (G > 2) store_row(c20, c21, c + 2 * NR, bias ? bias + 2 * NR : NULL, valpha, beta, 0, 0.0f, 0.0f, G == 3 ? nr_last : NR);
    if (G > 3) store_row(c30, c31, c + 3 * NR, bias ? bias + 3 * NR : NULL, valpha, beta, 0, 0.0f, 0.0f, nr_last);
}

static void lithe_f32_gemm_urow_1x8__wasmsimd(size_t ns, size_t nr_last, size_t kc, const float *x, const float *b,
                                              float *c, const lithe__sgemm_ukparams *p) {
    v128_t valpha = wasm_f32x4_splat(p->alpha);
    const size_t sl = kc * NR;
    size_t s = 0;
#define AT(s) (s) * sl, c + (s) * NR, p->bias ? p->bias + (s) * NR : NULL, valpha, p->beta
    if (kc == KC)
        for (; s + 4 <= ns; s += 4) urow_group(4, true, s + 4 == ns ? nr_last : NR, kc, x, b + AT(s));
    else
        for (; s + 3 <= ns; s += 3) urow_group(3, false, s + 3 == ns ? nr_last : NR, kc, x, b + AT(s));
    for (; s < ns; s++) urow_group(1, false, s + 1 == ns ? nr_last : NR, kc, x, b + AT(s));
#undef AT
    if (p->clamp) clamp_row(c, (ns - 1) * NR + nr_last, p->clamp, p->lo, p->hi);
}

static const lithe__sgemm_kernel *for_rows(int64_t M);
#define KERNEL(MR, MC)                                                                                            \
    {.isa = "wasmsimd", .mr = MR, .nr = NR, .mc = MC, .kc = KC, .nc = 2048,                                       \
     .ukernel = lithe_f32_gemm_ukernel_##MR##x8__wasmsimd, .pack_a = pack_a##MR, .pack_b = pack_b8,                \
     .gemv_t = gemv_t__wasmsimd, .gemv_n = gemv_n__wasmsimd,                                                      \
     .for_rows = for_rows, .urow = lithe_f32_gemm_urow_1x8__wasmsimd, .clamp_ok = true}
static const lithe__sgemm_kernel kernels[] = {KERNEL(5, 120), KERNEL(4, 128)};

/* The height with the least work per useful row: ceil(M / MR) * MR / speed, the 4 x 8 tile
 * running at 0.9 of the 5 x 8 one (43 against 47 GFLOP/s): 64 rows -> 5 x 8 (65 computed), 16 ->
 * 4 x 8, 6 -> 4 x 8 (8 computed, not 10). Both give the same bits. */
static const lithe__sgemm_kernel *for_rows(int64_t M) {
    double c5 = (double)((M + 4) / 5 * 5), c4 = (double)((M + 3) / 4 * 4) / 0.9;
    return c4 < c5 ? &kernels[1] : &kernels[0];
}

const lithe__sgemm_kernel *lithe__sgemm_kernel_wasmsimd(void) { return &kernels[0]; }

#else
const lithe__sgemm_kernel *lithe__sgemm_kernel_wasmsimd(void) { return NULL; }
#endif
