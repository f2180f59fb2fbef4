/* The CPU backend's WebAssembly SIMD128 direct convolution (backends/cpu/conv/gemm.c runs it for
 * -msimd128 builds); compiles to nothing elsewhere. */
#include "../conv/conv.h"

#if defined(__wasm_simd128__)
/* ---- WebAssembly SIMD128: direct convolution (shifted rows without packing) ----
 * Builds with -msimd128 run every shifted-rows convolution (is_shifted), and the pointwise ones
 * whose K and bias step fit 256 (wdc_applies), whose GEMM kernel is the SIMD128 one (LITHE_CPU_ISA may name the
 * scalar one in WASI) through a kernel of its own instead of the GEMM: output pixels as rows,
 * filters as lanes (the pixel-rows orientation), reading the zero-bordered phase planes (a
 * pointwise convolution's X itself) in place. Tile: 4 output pixels x 8 filters, 8 f32x4 accumulators;
 * per tap k one i32 load (the tap's byte offset into the planes), four splat loads (each pixel's
 * value at base + offset: the tile's pixels may span output rows, each has its own base), two
 * vector loads of the filters' weights (the dense layers' packed Wᵀ layout, lithe__sgemm_pack_b's
 * slivers of 8; prepared weights are read as they are), 8 mul + 8 add, no spill (5 x 8 spilled:
 * V8 loads every pixel's splat before the multiplies, docs/wasm.md), nothing packed per call but the weights when they are not prepared. K is not blocked
 * (a sliver's K x 8 weights stay in L1: 12.5 KiB for LeNet's K = 400); the tile goes to Y
 * (NCHW, pixels consecutive) after bias and the clamp, as two 4 x 4 transposes. The GEMM's tiles
 * (5 x 8 or 4 x 8 through the packing and, with pixel rows, a tile buffer and its transposed
 * store) ran LeNet's 5x5 convolutions at 18 and 27 GFLOP/s under Node; this one (docs/wasm.md).
 * Each output is bias + (sum over taps k ascending of x·w, from 0, rounded product then rounded
 * add), then the clamp: fixed by the geometry, so an image's bits do not depend on the batch, the
 * threads, the tile it lands in or whether W is prepared. Within the GEMM's rounding of the twin. */
#include <wasm_simd128.h>

enum { WDC_NR = 8, WDC_KC = 256, WDC_CHUNK = 64 /* tiles per chunk: its input rows stay in L1 */ };

#if defined(__wasm_relaxed_simd__)
/* the relaxed-SIMD importer module (preset wasm-relaxed): x * b + acc in one f32x4.relaxed_madd,
 * written as clang 14's old f32x4.fma and rewritten after the link (gemm_wasmsimd.c's FMADD) */
#define WDC_MADD(acc, x, b) acc = __builtin_wasm_fma_f32x4(x, b, acc)
#else
#define WDC_MADD(acc, x, b) acc = wasm_f32x4_add(acc, wasm_f32x4_mul(x, b))
#endif

static inline v128_t wdc_clamp(int clamp, float lo, float hi, v128_t t) {
    if (clamp == LITHE__SGEMM_CLAMP_RELU) /* t <= 0 ? 0 : t: NaN kept, -0 to +0 */
        return wasm_f32x4_add(wasm_f32x4_pmax(t, wasm_f32x4_splat(0.0f)), wasm_f32x4_splat(0.0f));
    if (clamp == LITHE__SGEMM_CLAMP_HSWISH) return lithe__wasm_hswish(t);
    if (clamp != LITHE__SGEMM_CLAMP_CLIP) return t;
    v128_t x = wasm_f32x4_add(t, wasm_f32x4_splat(0.0f)); /* the act kernel's x·1 + 0: -0 to +0 */
    return wasm_f32x4_pmax(wasm_f32x4_pmin(x, wasm_f32x4_splat(hi)), wasm_f32x4_splat(lo));
}

typedef struct wdc_ctx {
    const float *xq;       /* the phase planes */
    const int32_t *toff;   /* K: tap k's byte offset from a pixel's base */
    const int32_t *pix;    /* P: output pixel p's offset (floats) in the planes */
    const float *w;        /* packed Wᵀ: block pc at pc·npad, sliver j at j·kb, (k, f) at k·8 + f */
    int64_t K, Mg, P, npad;
    const float *b;        /* Mg or NULL */
    int clamp;
    float lo, hi;
    float *y;              /* (Mg, P) */
    int64_t chunk;         /* tiles per chunk (WDC_CHUNK; pointwise: by K) */
} wdc_ctx;

/* An advanced pointer, hidden from clang's loop strength reduction (gemm_wasmsimd.c's OPAQUE: the
 * loads keep their offset immediates): no instruction. */
#define WDC_OPAQUE(p) __asm__("" : "+r"(p))

/* One tile: pixels p0..p0+np-1 (np <= 4), filters j..j+nf-1 (nf <= 8). inrow: the four pixels lie
 * in one output row (consecutive floats of the planes): their splats are one pointer's offsets;
 * else each pixel has its own base (one add per pixel per tap). */
static inline __attribute__((always_inline)) void wdc_tile(const bool inrow, const wdc_ctx *c, int64_t p0, int64_t np,
                                                           int64_t j, int64_t nf, v128_t bias0, v128_t bias1) {
    const int64_t last = c->P - 1;
#define BASE(i) (const char *)(c->xq + c->pix[p0 + (i) < last ? p0 + (i) : last])
    const char *x0 = BASE(0), *x1 = inrow ? x0 : BASE(1), *x2 = inrow ? x0 : BASE(2), *x3 = inrow ? x0 : BASE(3);
#undef BASE
    v128_t z = wasm_f32x4_splat(0.0f);
    v128_t c00 = z, c01 = z, c10 = z, c11 = z, c20 = z, c21 = z, c30 = z, c31 = z;
    for (int64_t pc = 0; pc < c->K; pc += WDC_KC) {
        int64_t kb = c->K - pc < WDC_KC ? c->K - pc : WDC_KC;
        const float *wb = c->w + pc * c->npad + j * kb;
        const int32_t *t = c->toff + pc, *te = t + kb;
        for (; t < te; t++) {
            int32_t o = *t;
            v128_t b0 = wasm_v128_load(wb), b1 = wasm_v128_load(wb + 4);
#define PIX(i)                                                                                              \
    {                                                                                                       \
        v128_t xs = inrow ? wasm_v128_load32_splat((const float *)(x0 + o) + (i)) : wasm_v128_load32_splat(x##i + o); \
        WDC_MADD(c##i##0, xs, b0);                                                                          \
        WDC_MADD(c##i##1, xs, b1);                                                                          \
    }
            PIX(0) PIX(1) PIX(2) PIX(3)
#undef PIX
            wb += WDC_NR;
            WDC_OPAQUE(wb);
            WDC_OPAQUE(t);
        }
    }
#define FIN(i)                                                                          \
    c##i##0 = wdc_clamp(c->clamp, c->lo, c->hi, wasm_f32x4_add(c##i##0, bias0));        \
    c##i##1 = wdc_clamp(c->clamp, c->lo, c->hi, wasm_f32x4_add(c##i##1, bias1));
    FIN(0) FIN(1) FIN(2) FIN(3)
#undef FIN
    const int64_t P = c->P;
    float *y = c->y + j * P + p0;
    if (np == 4 && nf == WDC_NR) { /* filter f's four pixels as one vector: two 4 x 4 transposes */
#define T4(r0, r1, r2, r3, f)                                                                              \
    {                                                                                                      \
        v128_t t0 = wasm_i32x4_shuffle(r0, r1, 0, 4, 1, 5), t1 = wasm_i32x4_shuffle(r2, r3, 0, 4, 1, 5);  \
        v128_t t2 = wasm_i32x4_shuffle(r0, r1, 2, 6, 3, 7), t3 = wasm_i32x4_shuffle(r2, r3, 2, 6, 3, 7);  \
        wasm_v128_store(y + (f) * P, wasm_i32x4_shuffle(t0, t1, 0, 1, 4, 5));                              \
        wasm_v128_store(y + ((f) + 1) * P, wasm_i32x4_shuffle(t0, t1, 2, 3, 6, 7));                        \
        wasm_v128_store(y + ((f) + 2) * P, wasm_i32x4_shuffle(t2, t3, 0, 1, 4, 5));                        \
        wasm_v128_store(y + ((f) + 3) * P, wasm_i32x4_shuffle(t2, t3, 2, 3, 6, 7));                        \
    }
        T4(c00, c10, c20, c30, 0)
        T4(c01, c11, c21, c31, 4)
#undef T4
        return;
    }
    float tile[4][WDC_NR];
#define KEEP(i) wasm_v128_store(tile[i], c##i##0), wasm_v128_store(tile[i] + 4, c##i##1);
    KEEP(0) KEEP(1) KEEP(2) KEEP(3)
#undef KEEP
    for (int64_t f = 0; f < nf; f++)
        for (int64_t i = 0; i < np; i++) y[f * P + i] = tile[i][f];
}

/* 4 x 8 (4 x 8 rather than the GEMM's 5 x 8: V8 loads a tap's splats together before their
 * products, so five pixels' need 17 v128s and spilled, 24 GFLOP/s on LeNet's conv2 under Node;
 * four pixels 39, and 43 (the row variant) with one pointer for the four) */
static __attribute__((noinline)) void lithe_f32_conv2d_ukernel_4x8__wasmsimd(const wdc_ctx *c, int64_t p0, int64_t np,
                                                                             int64_t j, int64_t nf, v128_t bias0,
                                                                             v128_t bias1) {
    wdc_tile(false, c, p0, np, j, nf, bias0, bias1);
}
static __attribute__((noinline)) void lithe_f32_conv2d_ukernel_4x8_row__wasmsimd(const wdc_ctx *c, int64_t p0,
                                                                                 int64_t j, int64_t nf, v128_t bias0,
                                                                                 v128_t bias1) {
    wdc_tile(true, c, p0, 4, j, nf, bias0, bias1);
}

/* Tiles [t0, t1) (4 pixels each) of every filter sliver, c->chunk tiles at a time. */
static void wdc_tiles(void *ctx, int64_t t0, int64_t t1) {
    const wdc_ctx *c = ctx;
    for (int64_t c0 = t0; c0 < t1; c0 += c->chunk) {
        int64_t c1 = c0 + c->chunk < t1 ? c0 + c->chunk : t1;
        for (int64_t j = 0; j < c->Mg; j += WDC_NR) {
            int64_t nf = c->Mg - j < WDC_NR ? c->Mg - j : WDC_NR;
            float bb[WDC_NR] = {0};
            for (int64_t f = 0; f < nf && c->b; f++) bb[f] = c->b[j + f];
            v128_t bias0 = wasm_v128_load(bb), bias1 = wasm_v128_load(bb + 4);
            for (int64_t t = c0; t < c1; t++) {
                int64_t p0 = 4 * t, np = c->P - p0 < 4 ? c->P - p0 : 4;
                if (np == 4 && c->pix[p0 + 3] - c->pix[p0] == 3)
                    lithe_f32_conv2d_ukernel_4x8_row__wasmsimd(c, p0, j, nf, bias0, bias1);
                else
                    lithe_f32_conv2d_ukernel_4x8__wasmsimd(c, p0, np, j, nf, bias0, bias1);
            }
        }
    }
}

/* Pointwise convolutions (1x1, stride 1, unpadded) too, reading X itself as the one phase plane
 * (tap k's row at k·P, nothing copied), where K and the packed GEMM's bias step fit one of its K
 * blocks (K + 1 <= 256 with a bias): there the GEMM's sum is this kernel's (one chain from 0 over
 * k in order, then + bias, then the clamp), in either orientation, so the output keeps the GEMM
 * path's bits; a longer K would be one chain here and per-block sums there. Planes of 16 pixels and
 * up (a smaller one would leave most of a 4-pixel tile idle where the GEMM has M = 1 paths).
 * mobilenet_v2 (Node 20, one thread, node minima, issue 29): the pointwise layers with K <= 192
 * 10-34 % faster than the GEMM's filter rows (B packed per call, a bias step) or pixel rows (A
 * packed, the scalar transposed store); its 7x7 ones with K = 320..960 measured 8-25 % slower
 * this way (a tile's K rows of 16 bytes take K cache lines) and keep the GEMM. */
bool wdc_applies(const lithe__conv2d *g, bool bias) {
    if (is_pointwise(g)) {
        int64_t Cg = g->C / g->group;
        return lithe__sgemm_kernel_best() == lithe__sgemm_kernel_wasmsimd() &&
               !lithe__knob(LITHE__KNOB_conv_rows) && /* (tests of the GEMM paths) */
               g->M / g->group > 0 && Cg > 0 && Cg + (bias ? 1 : 0) <= WDC_KC && g->OH * g->OW >= 16 &&
               (size_t)(g->C * g->OH * g->OW) < ((size_t)1 << 29); /* tap offsets in int32 bytes */
    }
    return is_shifted(g) && lithe__sgemm_kernel_best() == lithe__sgemm_kernel_wasmsimd() && g->OH > 0 && g->OW > 0 &&
           g->M / g->group > 0 && g->C / g->group * g->KH * g->KW > 0 && /* else the GEMM path's empty cases */
           shifted_floats(g, g->C / g->group, g->C / g->group * g->KH * g->KW, false) < ((size_t)1 << 29); /* int32 bytes */
}

/* Wg (Mg, K) into the packed Wᵀ layout (lithe__sgemm_pack_b's for an 8-wide kernel with kc 256). */
static void wdc_pack(const float *Wg, int64_t Mg, int64_t K, int64_t npad, float *dst) {
    for (int64_t pc = 0; pc < K; pc += WDC_KC) {
        int64_t kb = K - pc < WDC_KC ? K - pc : WDC_KC;
        for (int64_t j = 0; j < npad; j += WDC_NR)
            for (int64_t k = 0; k < kb; k++)
                for (int64_t f = 0; f < WDC_NR; f++)
                    dst[pc * npad + j * kb + k * WDC_NR + f] = j + f < Mg ? Wg[(j + f) * K + pc + k] : 0.0f;
    }
}

/* Images [n0, n1) of a gemm_job through the direct kernel (wdc_applies). */
void wdc_images(gemm_job *j, int64_t n0, int64_t n1) {
    const lithe__conv2d *g = j->g;
    int64_t Cg = g->C / g->group, Mg = g->M / g->group, K = Cg * g->KH * g->KW, P = g->OH * g->OW;
    int64_t npad = (Mg + WDC_NR - 1) / WDC_NR * WDC_NR;
    const lithe__sgemm_packed_b *Wp = j->Wp;
    bool prepared = Wp && Wp->nr == WDC_NR && Wp->kc == WDC_KC && Wp->transB && Wp->K == K && Wp->N == Mg;
    const bool pw = is_pointwise(g); /* X is the plane: no copy, tap k at row k */
    size_t sh = pw ? 0 : shifted_floats(g, Cg, K, false), ints = ((size_t)(K + P) + 15) / 16 * 16;
    size_t wts = prepared ? 0 : (size_t)(g->group * K * npad);
    float *ws = NULL;
    lithe_status s = workspace(j->be, sh + ints + wts, &ws);
    if (s != LITHE_OK) {
        int ok = LITHE_OK;
        atomic_compare_exchange_strong(&j->status, &ok, (int)s);
        return;
    }
    shifted_ws sw = {0};
    if (!pw) shifted_init(g, Cg, K, false, ws, &sw);
    int32_t *toff = (int32_t *)(void *)(ws + sh), *pix = toff + K;
    for (int64_t k = 0; k < K; k++)
        toff[k] = (int32_t)((pw ? k * P : sw.rows[k] - sw.xq) * (int64_t)sizeof(float));
    for (int64_t p = 0; p < P; p++) pix[p] = (int32_t)(pw ? p : p / g->OW * sw.Wq + p % g->OW);
    float *wt = ws + sh + ints;
    for (int64_t gi = 0; gi < g->group && !prepared; gi++) wdc_pack(j->W + gi * Mg * K, Mg, K, npad, wt + gi * K * npad);
    wdc_ctx c = {.xq = sw.xq, .toff = toff, .pix = pix, .K = K, .Mg = Mg, .P = P, .npad = npad,
                 .chunk = WDC_CHUNK};
    /* pointwise: X's rows are a plane apart, so a chunk's K rows of 4·chunk pixels each take their
     * own cache lines: about 2048 floats of X per chunk (mobilenet_v2's 14x14 and 7x7 layers 3-6 %
     * faster than at 6144, its 112x112 ones even) */
    if (pw) c.chunk = 512 / K > 1 ? 512 / K : 1;
    bool in_store = j->a && lithe__sgemm_act_clamp(j->a, &c.clamp, &c.lo, &c.hi);
    int64_t tiles = (P + 3) / 4, grain = (1 << 17) / (4 * K * npad) + 1;
    for (int64_t n = n0; n < n1; n++)
        for (int64_t gi = 0; gi < g->group; gi++) {
            if (pw) c.xq = j->X + (n * g->C + gi * Cg) * g->H * g->W;
            else shifted_fill(g, &sw, Cg, j->X + (n * g->C + gi * Cg) * g->H * g->W);
            c.w = prepared ? Wp->data : wt + gi * K * npad;
            c.b = j->b ? j->b + gi * Mg : NULL;
            c.y = j->Y + (n * g->M + gi * Mg) * P;
            /* batch 1: the image's tiles over the threads (the GEMM split its own work there) */
            lithe__pool_for(g->N == 1 ? lithe__cpu_pool() : NULL, tiles, grain, wdc_tiles, &c);
            if (j->a && !in_store) lithe__simd()->act(j->a, Mg * P, c.y, c.y);
        }
    j->be->ops->free(j->be, ws);
}
#else
typedef int lithe__conv_wasm_simd128_unused; /* ISO C: no empty translation unit */
#endif
