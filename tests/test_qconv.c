/* The int8 convolution of quantized graphs (backends/cpu/conv/qconv.h, the CPU backend's conv_q8):
 *   - the scalar twin (through the packing) against an independent reference: QuantizeLinear's codes
 *     from rintf(X / s) clamped (NaN to the lowest code), the window summed in int64 over the
 *     unpacked W, then (float)acc · (sx·sw[m]) + b[m] — bit for bit;
 *   - the AVX2 kernel (where the CPU has it) and the WebAssembly SIMD128 one (-msimd128 builds: the
 *     wasi preset's test_qconv.wasm, tests/wasm) against the twin bit for bit, and no write past Y;
 *   - the u8 x s8 form's AVX2 tile (reduce_range weights) and AVX-512 VNNI tile (any weights in s8,
 *     full-range ones too; skipped with a message where the CPU lacks AVX512-VNNI) against its twin,
 *     over the same geometries, every activation, the saturation edges and K = 32767 at the extreme
 *     codes (VNNI's int32 bound);
 *   - the backend's conv_q8 (group 1 and depthwise, its planes past 256 KB by chunks of channels;
 *     int8 and uint8 activations, per-channel and per-tensor weights with zero points, a -128
 *     weight) against the same reference, bit for bit;
 *   - codes out (requantization, qconv.h's lithe__qconv_code): the twins' and the VNNI tile's
 *     stores, the passes' epi_codes and conv_q8's codes against the rule computed from the int64
 *     sums (requant_ref), bit for bit, and within one code of QuantizeLinear of the float output;
 *   - WebAssembly's one-pass 3x3 depthwise on codes (dw3_codes) called directly on a range of planes:
 *     the twin's codes of the int64 sums, no byte written outside its planes or past Y.
 * Geometries: 1x1 (odd K, P across the 16- and 8-pixel tiles and their tails), 1x1 stride 2, 3x3
 * stride 1 and 2 with padding, dilation 2; M across the 4-filter tiles; NaN, infinities and values
 * past the codes' range in X, and the quantizing passes on values at QuantizeLinear's ties.
 *
 * Plain C with its own CHECK. Ends with "qconv: N passed, M failed" and exits non-zero on a failure. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "../backends/cpu/conv/qconv.h"
#include "../backends/cpu/simd/simd.h"

#include "count_check.h"

static uint64_t rng = 0x9E3779B97F4A7C15u;
static uint32_t urand32(void) {
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return (uint32_t)((rng * 0x2545F4914F6CDD1Du) >> 32);
}
static float urand(void) { return (float)((double)(urand32() >> 8) / (double)(1u << 23) - 1.0); } /* [-1, 1) */

enum { GUARD = 24 };
static const float SENTINEL = 12345.5f;

typedef struct qcase {
    lithe__conv2d g;
    float xs;
    int32_t xz, xmin, xmax;
    int8_t *W;      /* (M, K) */
    float *sw;      /* n_w scales */
    int32_t *zw;    /* n_w zero points */
    int64_t n_w;
    float *b;       /* (M,) or NULL */
    float *X;       /* (N, C, H, W) */
} qcase;

static int32_t code_ref(const qcase *c, float x) {
    float t = rintf(x / c->xs);
    double v = isnan(t) ? (double)c->xmin : (double)t + c->xz;
    return v < c->xmin ? c->xmin : v > c->xmax ? c->xmax : (int32_t)v;
}

/* Y (N, M, OH, OW) by the definition; A (or NULL): the int64 sums */
static void conv_sums(const qcase *c, float *Y, int64_t *A) {
    const lithe__conv2d *g = &c->g;
    const int64_t Cg = g->C / g->group, Mg = g->M / g->group;
    for (int64_t n = 0; n < g->N; n++)
        for (int64_t m = 0; m < g->M; m++)
            for (int64_t oh = 0; oh < g->OH; oh++)
                for (int64_t ow = 0; ow < g->OW; ow++) {
                    int64_t acc = 0;
                    const int64_t grp = m / Mg;
                    const int32_t zw = c->zw[c->n_w == 1 ? 0 : m];
                    for (int64_t ci = 0; ci < Cg; ci++)
                        for (int64_t kh = 0; kh < g->KH; kh++)
                            for (int64_t kw = 0; kw < g->KW; kw++) {
                                int64_t ih = oh * g->stride[0] - g->pad[0] + kh * g->dil[0];
                                int64_t iw = ow * g->stride[1] - g->pad[1] + kw * g->dil[1];
                                if (ih < 0 || ih >= g->H || iw < 0 || iw >= g->W) continue;
                                int64_t cx = grp * Cg + ci;
                                int32_t x = code_ref(c, c->X[((n * g->C + cx) * g->H + ih) * g->W + iw]) - c->xz;
                                int32_t w = c->W[((m * Cg + ci) * g->KH + kh) * g->KW + kw] - zw;
                                acc += (int64_t)x * w;
                            }
                    float sc = c->xs * c->sw[c->n_w == 1 ? 0 : m];
                    float t = (float)acc * sc;
                    if (c->b) t += c->b[m];
                    Y[((n * g->M + m) * g->OH + oh) * g->OW + ow] = t;
                    if (A) A[((n * g->M + m) * g->OH + oh) * g->OW + ow] = acc;
                }
}
static void conv_ref(const qcase *c, float *Y) { conv_sums(c, Y, NULL); }

static void geometry(lithe__conv2d *g, int64_t N, int64_t C, int64_t H, int64_t W, int64_t M, int64_t KH, int64_t s,
                     int64_t pad, int64_t dil, int64_t group) {
    *g = (lithe__conv2d){.N = N, .C = C, .H = H, .W = W, .M = M, .KH = KH, .KW = KH, .group = group};
    g->stride[0] = g->stride[1] = s;
    for (int i = 0; i < 4; i++) g->pad[i] = pad;
    g->dil[0] = g->dil[1] = dil;
    g->OH = (H + 2 * pad - dil * (KH - 1) - 1) / s + 1;
    g->OW = (W + 2 * pad - dil * (KH - 1) - 1) / s + 1;
}

static void make(qcase *c, bool a_signed, bool per_channel, bool wz, bool bias, bool hostile) {
    const lithe__conv2d *g = &c->g;
    const int64_t K = g->C / g->group * g->KH * g->KW, nx = g->N * g->C * g->H * g->W;
    c->xmin = a_signed ? -128 : 0;
    c->xmax = a_signed ? 127 : 255;
    c->xz = a_signed ? (int32_t)(urand32() % 21) - 10 : (int32_t)(urand32() % 60) + 100;
    c->xs = 0.02f + 0.01f * (urand() + 1.0f);
    c->n_w = per_channel ? g->M : 1;
    c->W = malloc((size_t)(g->M * K));
    for (int64_t i = 0; i < g->M * K; i++) c->W[i] = (int8_t)(urand32() & 0xFF); /* -128 included */
    c->W[0] = -128;
    c->sw = malloc((size_t)c->n_w * sizeof *c->sw);
    c->zw = malloc((size_t)c->n_w * sizeof *c->zw);
    for (int64_t i = 0; i < c->n_w; i++) {
        c->sw[i] = 0.001f + 0.01f * (urand() + 1.0f);
        c->zw[i] = wz ? (int32_t)(urand32() % 11) - 5 : 0;
    }
    c->b = NULL;
    if (bias) {
        c->b = malloc((size_t)g->M * sizeof *c->b);
        for (int64_t i = 0; i < g->M; i++) c->b[i] = urand();
    }
    c->X = malloc((size_t)nx * sizeof *c->X);
    for (int64_t i = 0; i < nx; i++) c->X[i] = 3.0f * urand(); /* past the codes' range at either end */
    if (hostile && nx > 5) {
        c->X[1] = NAN;
        c->X[nx - 1] = INFINITY;
        c->X[nx / 2] = -INFINITY;
        c->X[nx / 3] = 1e30f;
    }
}

/* the activations a case runs with (rotated over the cases): none, the store's clamps (relu, ReLU6,
 * mobilenet's HardSwish) and one the act kernel applies over the stored rows (sigmoid) */
static const lithe__act ACTS[] = {
    {.kind = LITHE__ACT_RELU},
    {.kind = LITHE__ACT_CLIPPED_LINEAR, .slope = 1.0f, .offset = 0.0f, .min_val = 0.0f, .max_val = 6.0f},
    {.kind = LITHE__ACT_HARD_SWISH_MOBILENET},
    {.kind = LITHE__ACT_SIGMOID},
};
static const lithe__act *act_of(int i) { return i % 5 == 4 ? NULL : &ACTS[i % 5]; }

/* The requantized codes (qconv.h's lithe__qconv_code) by their definition, from the int64 sums A of
 * c on the output grid yg (xs: sy, xz: zy, xmin / xmax): rq = (sx·sw) / sy, rb = b / sy, then
 * rintf (half to even) of (float)acc · rq + rb, clamped (NaN to the lowest) to the grid narrowed by a
 * relu / clip (its bounds rounded on the grid); bytes. false where a has no such form (HardSwish,
 * sigmoid: conv_q8 quantizes the float output there). */
static bool code_bounds(const lithe__act *a, const qcase *yg, double *plo, double *phi) {
    double lo = yg->xmin - yg->xz, hi = yg->xmax - yg->xz;
    if (a && a->kind == LITHE__ACT_RELU) lo = 0;
    else if (a && a->kind == LITHE__ACT_CLIPPED_LINEAR) {
        const double l = rintf(a->min_val / yg->xs), h = rintf(a->max_val / yg->xs), glo = lo, ghi = hi;
        lo = l < glo ? glo : l > ghi ? ghi : l, hi = h < glo ? glo : h > ghi ? ghi : h;
    } else if (a) return false;
    *plo = lo, *phi = hi;
    return true;
}
/* k's requantization fields for c's output on yg (rq, rb: M floats of storage) */
static void set_requant(lithe__qconv *k, const qcase *c, const lithe__act *a, const qcase *yg, float *rq, float *rb) {
    double lo = 0, hi = 0;
    code_bounds(a, yg, &lo, &hi);
    for (int64_t m = 0; m < c->g.M; m++)
        rq[m] = c->xs * c->sw[c->n_w == 1 ? 0 : m] / yg->xs, rb[m] = c->b ? c->b[m] / yg->xs : 0.0f;
    k->rq = rq, k->rb = rb, k->clo = (float)lo, k->chi = (float)hi, k->zy = yg->xz;
}
static bool requant_ref(const qcase *c, const lithe__act *a, const qcase *yg, const int64_t *A, uint8_t *out) {
    const lithe__conv2d *g = &c->g;
    double lo, hi;
    if (!code_bounds(a, yg, &lo, &hi)) return false;
    const int64_t P = g->OH * g->OW;
    for (int64_t i = 0; i < g->N * g->M * P; i++) {
        const int64_t m = i / P % g->M;
        const float rq = c->xs * c->sw[c->n_w == 1 ? 0 : m] / yg->xs, rb = c->b ? c->b[m] / yg->xs : 0.0f;
        const float t = rintf((float)A[i] * rq + rb);
        const double v = isnan(t) ? lo : t < lo ? lo : t > hi ? hi : t;
        out[i] = (uint8_t)(int32_t)(v + yg->xz);
    }
    return true;
}

/* the reference's activation: the act kernel's pass over Y */
static void act_ref(const lithe__act *a, int64_t n, float *Y) {
    if (a) lithe__cpu_act(a, n, Y, Y);
}

/* the driver's epilogue fields of k for a */
static void set_act(lithe__qconv *k, const lithe__act *a) {
    k->act = a, k->act_fn = lithe__cpu_act, k->clamp = 0;
    if (!lithe__sgemm_act_clamp(a, &k->clamp, &k->lo, &k->hi)) k->clamp = 0;
}

static void release(qcase *c) {
    free(c->W), free(c->sw), free(c->zw), free(c->b), free(c->X);
}

static float *guarded(int64_t n) {
    float *y = malloc((size_t)(n + GUARD) * sizeof *y);
    for (int64_t i = 0; i < n + GUARD; i++) y[i] = SENTINEL;
    return y;
}
static bool guard_ok(const float *y, int64_t n) {
    for (int64_t i = n; i < n + GUARD; i++)
        if (memcmp(&y[i], &SENTINEL, sizeof *y)) return false;
    return true;
}

#if defined(__x86_64__) || defined(_M_X64) || defined(__wasm_simd128__)
/* an ISA's packing of image n's columns against the twin's Xp, bit for bit (padding and tails included) */
static void check_pack(const qcase *c, int64_t n, const lithe__qx *q, int16_t *tmp, const int16_t *Xp, size_t len,
                       const lithe__qconv_aux *aux, const char *isa, const char *what) {
    const lithe__conv2d *g = &c->g;
    int16_t *Xa = malloc(len * sizeof *Xa);
    memset(Xa, 0x5A, len * sizeof *Xa);
    lithe__qconv_pack_x(g, c->X + n * g->C * g->H * g->W, q, tmp, Xa, aux);
    CHECK(!memcmp(Xa, Xp, len * sizeof *Xa), "%s: %s packing vs twin's (image %lld)", what, isa, (long long)n);
    free(Xa);
}
#endif

/* A kernel check's codes out (requantization, where a has it): the output grid yg (int8, zero point
 * 3, a scale from Yr's range), the expected bytes ce (requant_ref), the twin's ct (guarded) */
#define CODES_SETUP                                                                                               \
    float mxr = 0.0f;                                                                                             \
    for (int64_t i_ = 0; i_ < ny; i_++) mxr = isfinite(Yr[i_]) ? fmaxf(mxr, fabsf(Yr[i_])) : mxr;                 \
    const qcase yg = {.xs = mxr > 0.0f ? mxr / 100.0f : 1.0f, .xz = 3, .xmin = -128, .xmax = 127};                \
    int64_t *sums = malloc((size_t)ny * sizeof *sums);                                                            \
    uint8_t *ce = malloc((size_t)ny), *ct = malloc((size_t)ny + GUARD);                                           \
    float *rq = malloc((size_t)g->M * sizeof *rq), *rb = malloc((size_t)g->M * sizeof *rb);                       \
    conv_sums(c, Yr, sums);                                                                                       \
    memset(ct, 0xA5, (size_t)ny + GUARD);                                                                         \
    const bool cq = requant_ref(c, a, &yg, sums, ce)
#define CODES_FREE free(sums), free(ce), free(ct), free(rq), free(rb)
static bool codes_guard_ok(const uint8_t *d, int64_t n) {
    for (int64_t i = n; i < n + GUARD; i++)
        if (d[i] != 0xA5) return false;
    return true;
}

/* group 1: pack, then the twin (and AVX2) per image, against conv_ref */
static void kernels(qcase *c, const lithe__act *a, const char *what) {
    const lithe__conv2d *g = &c->g;
    const int64_t K = g->C * g->KH * g->KW, Kp = (K + 1) / 2, P = g->OH * g->OW, P8 = (P + 7) / 8 * 8;
    const int64_t Mb = (g->M + LITHE__QC_MR - 1) / LITHE__QC_MR, ny = g->N * g->M * P;
    int32_t *Wp = malloc((size_t)(Mb * Kp * LITHE__QC_MR) * sizeof *Wp);
    int16_t *Xp = malloc((size_t)(Kp * P8 * 2) * sizeof *Xp);
    int16_t *tmp = malloc((size_t)lithe__qconv_pack_tmp(g) * sizeof *tmp);
    float *scale = malloc((size_t)g->M * sizeof *scale), *Yr = malloc((size_t)ny * sizeof *Yr);
    float *Yt = guarded(ny), *Yk = guarded(ny), *Yw = guarded(ny);
    lithe__qconv_pack_w(g->M, K, c->W, c->zw, c->n_w, Wp);
    for (int64_t m = 0; m < g->M; m++) scale[m] = c->xs * c->sw[c->n_w == 1 ? 0 : m];
    lithe__qx q = {c->xs, (float)(c->xmin - c->xz), (float)(c->xmax - c->xz), 0, 0};
    conv_ref(c, Yr);
    CODES_SETUP;
#if defined(__wasm_simd128__)
    uint8_t *cw = malloc((size_t)ny + GUARD);
    memset(cw, 0xA5, (size_t)ny + GUARD);
    const lithe__qx ygq = {yg.xs, (float)(yg.xmin - yg.xz), (float)(yg.xmax - yg.xz), 2, yg.xz};
#endif
    act_ref(a, ny, Yr);
    for (int64_t n = 0; n < g->N; n++) {
        lithe__qconv_pack_x(g, c->X + n * g->C * g->H * g->W, &q, tmp, Xp, &lithe__qconv_aux_ref);
        lithe__qconv k = {.M = g->M, .Kp = Kp, .P = P, .P8 = P8, .X = Xp, .W = Wp, .scale = scale, .b = c->b,
                          .Y = Yt + n * g->M * P};
        set_act(&k, a);
        lithe__qconv_ref(&k, 0, Mb * LITHE__QC_MR);
        if (cq) { /* codes out: the twin writes Yc */
            lithe__qconv kc = k;
            set_requant(&kc, c, a, &yg, rq, rb);
            kc.Yc = ct + n * g->M * P;
            lithe__qconv_ref(&kc, 0, LITHE__QC_MR), lithe__qconv_ref(&kc, LITHE__QC_MR, Mb * LITHE__QC_MR);
        }
#if defined(__x86_64__) || defined(_M_X64)
        if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
            check_pack(c, n, &q, tmp, Xp, (size_t)(Kp * P8 * 2), &lithe__qconv_aux_avx2, "avx2", what);
            k.Y = Yk + n * g->M * P;
            lithe__qconv_avx2(&k, 0, LITHE__QC_MR); /* split at a tile boundary */
            lithe__qconv_avx2(&k, LITHE__QC_MR, Mb * LITHE__QC_MR);
        }
#endif
#if defined(__wasm_simd128__)
        check_pack(c, n, &q, tmp, Xp, (size_t)(Kp * P8 * 2), &lithe__qconv_aux_wasm, "simd128", what);
        k.Y = Yw + n * g->M * P;
        lithe__qconv_wasm(&k, 0, LITHE__QC_MR); /* split at a tile boundary */
        lithe__qconv_wasm(&k, LITHE__QC_MR, Mb * LITHE__QC_MR);
        if (cq) { /* codes out: the tile writes Yc (yq: yg's int8 grid, as conv_q8 sets it) */
            lithe__qconv kc = k;
            set_requant(&kc, c, a, &yg, rq, rb);
            kc.yq = &ygq;
            kc.Yc = cw + n * g->M * P;
            lithe__qconv_wasm(&kc, 0, LITHE__QC_MR), lithe__qconv_wasm(&kc, LITHE__QC_MR, Mb * LITHE__QC_MR);
        }
#endif
    }
    CHECK(!memcmp(Yt, Yr, (size_t)ny * sizeof *Yr), "%s: twin vs reference (M=%lld K=%lld P=%lld)", what,
          (long long)g->M, (long long)K, (long long)P);
    CHECK(!cq || (!memcmp(ct, ce, (size_t)ny) && codes_guard_ok(ct, ny)), "%s: the twin's codes vs requant_ref", what);
#if defined(__wasm_simd128__)
    CHECK(!cq || (!memcmp(cw, ct, (size_t)ny) && codes_guard_ok(cw, ny)), "%s: wasm simd128's codes vs twin's", what);
    free(cw);
#endif
    CODES_FREE;
    CHECK(guard_ok(Yt, ny), "%s: the twin wrote past Y", what);
#if defined(__x86_64__) || defined(_M_X64)
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        CHECK(!memcmp(Yk, Yt, (size_t)ny * sizeof *Yr), "%s: avx2 vs twin (M=%lld K=%lld P=%lld)", what,
              (long long)g->M, (long long)K, (long long)P);
        CHECK(guard_ok(Yk, ny), "%s: avx2 wrote past Y (M=%lld P=%lld)", what, (long long)g->M, (long long)P);
    }
#endif
#if defined(__wasm_simd128__)
    CHECK(!memcmp(Yw, Yt, (size_t)ny * sizeof *Yr), "%s: wasm simd128 vs twin (M=%lld K=%lld P=%lld)", what,
          (long long)g->M, (long long)K, (long long)P);
    CHECK(guard_ok(Yw, ny), "%s: wasm simd128 wrote past Y (M=%lld P=%lld)", what, (long long)g->M, (long long)P);
#endif
    free(Wp), free(Xp), free(tmp), free(scale), free(Yr), free(Yt), free(Yk), free(Yw);
}

/* Codes between fused:QConv nodes (fuse_qdq.c's chain): conv_q8 with X as the codes of its grid
 * (code_ref: QuantizeLinear's) gives the float run's Yr bit for bit; with Y an int8 / uint8 tensor
 * carrying a scale and zero point, the requantized codes (requant_ref; none, relu, clip), each within
 * one code of QuantizeLinear's of Yr (code_ref on that grid), or QuantizeLinear's of Yr for the other
 * activations; both at once. */
static int64_t n_codes, n_off; /* requantized codes checked, and those one off QuantizeLinear's */
static void codes_io(const qcase *c, lithe_backend *be, const lithe_tensor *X, const lithe_tensor *W,
                     const lithe_tensor *b, const lithe__act *a, const float *Yr, const char *what) {
    const lithe__conv2d *g = &c->g;
    const int64_t nx = g->N * g->C * g->H * g->W, ny = g->N * g->M * g->OH * g->OW;
    const bool xcodes = c->xmax - c->xmin == 255 && (c->xmin == 0 || c->xmin == -128);
    float mx = 0.0f;
    for (int64_t i = 0; i < ny; i++) mx = fmaxf(mx, fabsf(Yr[i]));
    /* the output's grid: int8 with a zero point off 0, or uint8 (a relu's range); codes clamp both ends */
    const bool s8 = (g->M + g->C + (g->group > 1 ? g->H : 0)) % 2 == 0; /* (depthwise: M = C, by H) */
    qcase yg = {.xs = mx > 0.0f ? mx / 90.0f : 1.0f, .xz = s8 ? -9 : 40, .xmin = s8 ? -128 : 0, .xmax = s8 ? 127 : 255};
    lithe_tensor *Xc = NULL, *Yc = NULL, *Yf = NULL;
    bool ok = lithe__tensor_alloc(be, c->xmin < 0 ? LITHE_I8 : LITHE_U8, 4, X->shape, false, &Xc) == LITHE_OK &&
              lithe__tensor_alloc(be, s8 ? LITHE_I8 : LITHE_U8, 4, (int64_t[]){g->N, g->M, g->OH, g->OW}, false, &Yc) ==
                  LITHE_OK &&
              lithe__tensor_alloc(be, LITHE_F32, 4, (int64_t[]){g->N, g->M, g->OH, g->OW}, false, &Yf) == LITHE_OK &&
              lithe_tensor_set_quant_params(Yc, -1, 1, &yg.xs, &yg.xz) == LITHE_OK &&
              lithe_tensor_set_quant_params(Xc, -1, 1, &c->xs, &c->xz) == LITHE_OK;
    CHECK(ok, "%s: codes tensors", what);
    uint8_t *ye = malloc((size_t)ny);
    for (int64_t i = 0; ok && i < nx; i++) ((uint8_t *)lithe__tdata(Xc))[i] = (uint8_t)code_ref(c, c->X[i]);
    int64_t *A = malloc((size_t)ny * sizeof *A);
    float *Ys = malloc((size_t)ny * sizeof *Ys);
    conv_sums(c, Ys, A);
    if (!requant_ref(c, a, &yg, A, ye))
        for (int64_t i = 0; i < ny; i++) ye[i] = (uint8_t)code_ref(&yg, Yr[i]);
    int off = 0, far = 0; /* the requantized codes against QuantizeLinear's of Yr */
    for (int64_t i = 0; i < ny; i++) {
        const int32_t d = (s8 ? (int8_t)ye[i] : ye[i]) - code_ref(&yg, Yr[i]);
        off += d != 0, far += d < -1 || d > 1;
    }
    CHECK(!far, "%s: %d of %lld requantized codes more than one code off QuantizeLinear's of the float output", what,
          far, (long long)ny);
    n_codes += ny, n_off += off;
    free(A), free(Ys);
    for (int k = 0; ok && k < 3; k++) { /* X codes -> float; float -> Y codes; codes -> codes */
        const bool xin = k != 1, yout = k != 0;
        if (xin && !xcodes) continue;
        bool done = false;
        lithe_tensor *Y = yout ? Yc : Yf;
        memset(lithe__tdata(Y), 0xA5, (size_t)ny * (yout ? 1 : sizeof(float)));
        lithe_status s = be->ops->conv_q8(be, g, xin ? Xc : X, c->xs, c->xz, c->xmin, c->xmax, W, b, a, Y, &done);
        CHECK(s == LITHE_OK && done, "%s: conv_q8 with codes (%d) ran (status %d, done %d)", what, k, (int)s, (int)done);
        if (yout) {
            CHECK(!memcmp(lithe__tdata(Yc), ye, (size_t)ny), "%s: conv_q8's codes out (%s in) vs requant_ref (or "
                  "QuantizeLinear's of the reference)", what, xin ? "codes" : "float");
        } else {
            CHECK(!memcmp(lithe__tdata(Yf), Yr, (size_t)ny * sizeof *Yr), "%s: conv_q8 on codes vs reference", what);
        }
    }
    free(ye);
    lithe_tensor_release(Xc), lithe_tensor_release(Yc), lithe_tensor_release(Yf);
}

#if defined(__wasm_simd128__)
/* The WebAssembly tile's codes out on more output grids than kernels()'s (whose sums stay within the
 * grid): int8 ones whose scale puts sums past the grid (t beyond ±255 codes, then ±2^15: the
 * saturating narrows clamp), one far past (where qconv_wasm.c's sat_ok bound fails: the float
 * clamp), and a uint8 one (a relu's lower bound is the grid's: no byte clamp) — against
 * requant_ref. n_sat / n_unsat: the grids the tile ran with and without the saturating epilogue. */
static int n_sat, n_unsat;
static void wasm_code_grids(const qcase *c, const lithe__act *a, const char *what) {
    const lithe__conv2d *g = &c->g;
    const int64_t K = g->C * g->KH * g->KW, Kp = (K + 1) / 2, P = g->OH * g->OW, P8 = (P + 7) / 8 * 8;
    const int64_t Mb = (g->M + LITHE__QC_MR - 1) / LITHE__QC_MR, ny = g->N * g->M * P;
    int32_t *Wp = malloc((size_t)(Mb * Kp * LITHE__QC_MR) * sizeof *Wp);
    int16_t *Xp = malloc((size_t)(Kp * P8 * 2) * sizeof *Xp), *tmp = malloc((size_t)lithe__qconv_pack_tmp(g) * sizeof *tmp);
    float *scale = malloc((size_t)g->M * sizeof *scale), *Yr = malloc((size_t)ny * sizeof *Yr);
    float *rq = malloc((size_t)g->M * sizeof *rq), *rb = malloc((size_t)g->M * sizeof *rb);
    int64_t *sums = malloc((size_t)ny * sizeof *sums);
    uint8_t *ce = malloc((size_t)ny), *cw = malloc((size_t)ny + GUARD);
    lithe__qconv_pack_w(g->M, K, c->W, c->zw, c->n_w, Wp);
    for (int64_t m = 0; m < g->M; m++) scale[m] = c->xs * c->sw[c->n_w == 1 ? 0 : m];
    const lithe__qx q = {c->xs, (float)(c->xmin - c->xz), (float)(c->xmax - c->xz), 0, 0};
    conv_sums(c, Yr, sums);
    float mxr = 0.0f;
    for (int64_t i = 0; i < ny; i++) mxr = isfinite(Yr[i]) ? fmaxf(mxr, fabsf(Yr[i])) : mxr;
    static const struct {
        double div; /* the grid's scale: the largest |output| over div */
        int32_t z, lo, hi;
    } GR[] = {{1e3, 3, -128, 127}, {1e5, -7, -128, 127}, {1e9, 3, -128, 127}, {300, 0, 0, 255}};
    for (size_t i = 0; i < sizeof GR / sizeof GR[0]; i++) {
        const qcase yg = {.xs = mxr > 0.0f ? (float)(mxr / GR[i].div) : 1.0f, .xz = GR[i].z, .xmin = GR[i].lo,
                          .xmax = GR[i].hi};
        if (!requant_ref(c, a, &yg, sums, ce)) break; /* (HardSwish, sigmoid: no requantized form) */
        const lithe__qx ygq = {yg.xs, (float)(GR[i].lo - GR[i].z), (float)(GR[i].hi - GR[i].z), GR[i].lo < 0 ? 2 : 1,
                               GR[i].z};
        memset(cw, 0xA5, (size_t)ny + GUARD);
        bool sat = true; /* sat_ok's bound: every t within ±4e6 for any sum */
        for (int64_t n = 0; n < g->N; n++) {
            lithe__qconv_pack_x(g, c->X + n * g->C * g->H * g->W, &q, tmp, Xp, &lithe__qconv_aux_ref);
            lithe__qconv k = {.M = g->M, .Kp = Kp, .P = P, .P8 = P8, .X = Xp, .W = Wp, .scale = scale, .b = c->b};
            set_act(&k, a);
            set_requant(&k, c, a, &yg, rq, rb);
            k.yq = &ygq, k.Yc = cw + n * g->M * P;
            lithe__qconv_wasm(&k, 0, LITHE__QC_MR), lithe__qconv_wasm(&k, LITHE__QC_MR, Mb * LITHE__QC_MR);
        }
        for (int64_t m = 0; m < g->M; m++)
            sat = sat && 2.0 * (double)Kp * 255.0 * 255.0 * fabs((double)rq[m]) + fabs((double)rb[m]) < 4.0e6;
        sat ? n_sat++ : n_unsat++;
        CHECK(!memcmp(cw, ce, (size_t)ny) && codes_guard_ok(cw, ny),
              "%s: wasm simd128's codes on grid %zu (%s epilogue) vs requant_ref", what, i, sat ? "saturating" : "float clamp");
    }
    free(Wp), free(Xp), free(tmp), free(scale), free(Yr), free(rq), free(rb), free(sums), free(ce), free(cw);
}
#endif

/* the backend's conv_q8 on host tensors against conv_ref */
#if defined(__x86_64__) || defined(_M_X64)
static int cached_form(const lithe_tensor *W);
static int last_form;
#endif
static void backend(qcase *c, const lithe__act *a, const char *what) {
    const lithe__conv2d *g = &c->g;
    const int64_t Cg = g->C / g->group, ny = g->N * g->M * g->OH * g->OW;
    lithe_backend *be = lithe__backend_host();
    lithe_tensor *X = NULL, *W = NULL, *b = NULL, *Y = NULL;
    bool ok = lithe__tensor_alloc(be, LITHE_F32, 4, (int64_t[]){g->N, g->C, g->H, g->W}, false, &X) == LITHE_OK &&
              lithe__tensor_alloc(be, LITHE_I8, 4, (int64_t[]){g->M, Cg, g->KH, g->KW}, false, &W) == LITHE_OK &&
              lithe__tensor_alloc(be, LITHE_F32, 4, (int64_t[]){g->N, g->M, g->OH, g->OW}, false, &Y) == LITHE_OK &&
              (!c->b || lithe__tensor_alloc(be, LITHE_F32, 1, (int64_t[]){g->M}, false, &b) == LITHE_OK);
    ok = ok && lithe_tensor_set_quant_params(W, c->n_w == 1 ? -1 : 0, c->n_w, c->sw, c->zw) == LITHE_OK;
    CHECK(ok, "%s: tensors", what);
    if (ok && be->ops->conv_q8) {
        memcpy(lithe__tdata(X), c->X, (size_t)(g->N * g->C * g->H * g->W) * sizeof(float));
        memcpy(lithe__tdata(W), c->W, (size_t)(g->M * Cg * g->KH * g->KW));
        if (b) memcpy(lithe__tdata(b), c->b, (size_t)g->M * sizeof(float));
        float *Yr = malloc((size_t)ny * sizeof *Yr);
        conv_ref(c, Yr);
        act_ref(a, ny, Yr);
        for (int run = 0; run < 2; run++) { /* the second reads W's cached form */
            bool done = false;
            lithe_status s = be->ops->conv_q8(be, g, X, c->xs, c->xz, c->xmin, c->xmax, W, b, a, Y, &done);
            CHECK(s == LITHE_OK && done, "%s: conv_q8 ran (status %d, done %d)", what, (int)s, (int)done);
            CHECK(!memcmp(lithe__tdata(Y), Yr, (size_t)ny * sizeof *Yr), "%s: conv_q8 vs reference (run %d)", what, run);
        }
#if defined(__x86_64__) || defined(_M_X64)
        last_form = cached_form(W);
#endif
        codes_io(c, be, X, W, b, a, Yr, what);
        free(Yr);
    } else if (ok) {
        printf("qconv: the host backend has no conv_q8 here (%s skipped)\n", what);
    }
    lithe_tensor_release(X), lithe_tensor_release(W), lithe_tensor_release(b), lithe_tensor_release(Y);
}

#if defined(__x86_64__) || defined(_M_X64)
/* The u8 x s8 form (qconv8_*): pack (twin and AVX2 packings bit for bit), the twin against conv_ref,
 * the AVX2 kernel (where lithe__qconv8_exact holds for the activation's R, or forced) and the AVX-512
 * VNNI one (where it holds for R = 0: every w - zw in s8; not when forced) against the twin; returns
 * whether the AVX2 kernel matched the reference (for the edge cases that show the bound is needed).
 * Only where the s8 range holds. */
static bool kernels8(qcase *c, const lithe__act *a, const char *what, bool forced) {
    const lithe__conv2d *g = &c->g;
    const int64_t K = g->C * g->KH * g->KW, Kq = (K + 3) / 4, P = g->OH * g->OW, P8 = (P + 7) / 8 * 8;
    const int64_t Mb = (g->M + LITHE__QC_MR - 1) / LITHE__QC_MR, ny = g->N * g->M * P;
    const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                      (forced || lithe__qconv8_exact(g->M, K, c->W, c->zw, c->n_w, c->xmax - c->xmin));
    const lithe__qconv_fn vnni = forced ? NULL : lithe__qconv8_vnni();
    float *Yv = guarded(ny);
    int32_t *Wb = malloc((size_t)(Mb * Kq * LITHE__QC_MR) * sizeof *Wb), *wsum = malloc((size_t)(Mb * LITHE__QC_MR) * sizeof *wsum);
    uint8_t *Xb = malloc((size_t)(Kq * P8 * 4)), *Xa = malloc((size_t)(Kq * P8 * 4)), *tmp = malloc((size_t)(g->C * g->H * g->W + 4 * P8));
    float *scale = malloc((size_t)g->M * sizeof *scale), *Yr = malloc((size_t)ny * sizeof *Yr);
    float *Yt = guarded(ny), *Yk = guarded(ny);
    lithe__qconv_pack_w8(g->M, K, c->W, c->zw, c->n_w, Wb, wsum);
    for (int64_t m = 0; m < g->M; m++) scale[m] = c->xs * c->sw[c->n_w == 1 ? 0 : m];
    lithe__qx q = {c->xs, (float)(c->xmin - c->xz), (float)(c->xmax - c->xz), 0, 0};
    conv_ref(c, Yr);
    CODES_SETUP;
    uint8_t *cv = malloc((size_t)ny + GUARD);
    memset(cv, 0xA5, (size_t)ny + GUARD);
    act_ref(a, ny, Yr);
    for (int64_t n = 0; n < g->N; n++) {
        memset(Xb, 0xA5, (size_t)(Kq * P8 * 4)), memset(Xa, 0x5A, (size_t)(Kq * P8 * 4));
        lithe__qconv_pack_x8(g, c->X + n * g->C * g->H * g->W, &q, tmp, Xb, &lithe__qconv_aux_ref);
        lithe__qconv k = {.M = g->M, .P = P, .P8 = P8, .scale = scale, .b = c->b, .Y = Yt + n * g->M * P, .Kq = Kq,
                          .Xb = Xb, .Wb = Wb, .wsum = wsum, .xlo = c->xmin - c->xz};
        set_act(&k, a);
        lithe__qconv8_ref(&k, 0, Mb * LITHE__QC_MR);
        lithe__qconv kc = k;
        if (cq) { /* codes out: the twin writes Yc */
            set_requant(&kc, c, a, &yg, rq, rb);
            kc.Yc = ct + n * g->M * P;
            lithe__qconv8_ref(&kc, 0, Mb * LITHE__QC_MR);
        }
        if (avx2) {
            lithe__qconv_pack_x8(g, c->X + n * g->C * g->H * g->W, &q, tmp, Xa, &lithe__qconv_aux_avx2);
            CHECK(!memcmp(Xa, Xb, (size_t)(Kq * P8 * 4)), "%s: u8 avx2 packing vs twin's (image %lld)", what, (long long)n);
            k.Y = Yk + n * g->M * P;
            lithe__qconv8_avx2(&k, 0, LITHE__QC_MR); /* split at a tile boundary */
            lithe__qconv8_avx2(&k, LITHE__QC_MR, Mb * LITHE__QC_MR);
        }
        if (vnni) {
            memset(Xa, 0x5A, (size_t)(Kq * P8 * 4));
            lithe__qconv_pack_x8(g, c->X + n * g->C * g->H * g->W, &q, tmp, Xa, &lithe__qconv_aux_avx512);
            CHECK(!memcmp(Xa, Xb, (size_t)(Kq * P8 * 4)), "%s: u8 avx512 packing vs twin's (image %lld)", what, (long long)n);
            k.Xb = Xa, k.Y = Yv + n * g->M * P;
            vnni(&k, 0, LITHE__QC_MR); /* split at a tile boundary */
            vnni(&k, LITHE__QC_MR, Mb * LITHE__QC_MR);
            if (cq) {
                kc.Xb = Xa, kc.Yc = cv + n * g->M * P;
                vnni(&kc, 0, LITHE__QC_MR), vnni(&kc, LITHE__QC_MR, Mb * LITHE__QC_MR);
            }
        }
    }
    bool same = avx2 && !memcmp(Yk, Yr, (size_t)ny * sizeof *Yr);
    if (!forced) {
        CHECK(!memcmp(Yt, Yr, (size_t)ny * sizeof *Yr), "%s: u8 twin vs reference (M=%lld K=%lld P=%lld)", what,
              (long long)g->M, (long long)K, (long long)P);
        CHECK(guard_ok(Yt, ny), "%s: the u8 twin wrote past Y", what);
        if (avx2) {
            CHECK(!memcmp(Yk, Yt, (size_t)ny * sizeof *Yr), "%s: u8 avx2 vs twin (M=%lld K=%lld P=%lld)", what,
                  (long long)g->M, (long long)K, (long long)P);
            CHECK(guard_ok(Yk, ny), "%s: u8 avx2 wrote past Y", what);
        }
        if (vnni) {
            CHECK(!memcmp(Yv, Yt, (size_t)ny * sizeof *Yr), "%s: u8 vnni vs twin (M=%lld K=%lld P=%lld)", what,
                  (long long)g->M, (long long)K, (long long)P);
            CHECK(guard_ok(Yv, ny), "%s: u8 vnni wrote past Y", what);
            CHECK(!cq || (!memcmp(cv, ct, (size_t)ny) && codes_guard_ok(cv, ny)), "%s: u8 vnni's codes vs twin's", what);
        }
        CHECK(!cq || (!memcmp(ct, ce, (size_t)ny) && codes_guard_ok(ct, ny)), "%s: the u8 twin's codes vs requant_ref", what);
    }
    free(Wb), free(wsum), free(Xb), free(Xa), free(tmp), free(scale), free(Yr), free(Yt), free(Yk), free(Yv), free(cv);
    CODES_FREE;
    return same;
}

/* onnxruntime's reduce_range weights: w - zw in [-64, 64] (the u8 form's bound holds for R = 255) */
static void reduce_range(qcase *c) {
    const int64_t n = c->g.M * (c->g.C / c->g.group) * c->g.KH * c->g.KW;
    for (int64_t i = 0; i < c->n_w; i++) c->zw[i] = c->zw[i] ? (int32_t)(urand32() % 9) - 4 : 0;
    for (int64_t i = 0; i < n; i++) c->W[i] = (int8_t)((int32_t)(urand32() % 121) - 60);
}

/* the form conv_q8 cached for W (qconv.c's w_form head: 1 int16 pairs, 3 u8) */
static int cached_form(const lithe_tensor *W) {
    int32_t f = 0;
    if (W && W->storage->quant && W->storage->quant->cpack) memcpy(&f, W->storage->quant->cpack, sizeof f);
    return f;
}

/* Saturation edge cases: every activation at its top code (u = R) against weights at and past the
 * bound; the check's answer, the u8 kernels where it holds, the int16 form (conv_q8) where it does
 * not, and the u8 kernel forced past the bound shown wrong (the check is what keeps it exact). */
static void edges(void) {
    static const struct {
        int w0, w1, zw, xmin, xmax;
        bool exact;
    } E[] = {
        {64, 64, 0, 0, 255, true},      {-64, -64, 0, 0, 255, true},   {65, 63, 0, -128, 127, true},
        {65, 64, 0, 0, 255, false},     {127, 127, 0, 0, 255, false},  {-128, -128, 0, 0, 255, false},
        {-128, -128, 0, 0, 128, true},  {127, 36, 0, 0, 200, true},    {127, 37, 0, 0, 200, false},
        {-128, 0, 1, 0, 1, false},      {127, -128, 0, 0, 255, true},  {60, 60, -4, 0, 255, true},
    };
    char what[160];
    for (size_t i = 0; i < sizeof E / sizeof E[0]; i++) {
        qcase c;
        geometry(&c.g, 1, 33, 5, 5, 6, 1, 1, 0, 1, 1); /* K = 33 (a quad of one), P = 25 (a tail of 1) */
        make(&c, false, false, false, true, false);
        c.xmin = E[i].xmin, c.xmax = E[i].xmax, c.xz = E[i].xmin;
        c.zw[0] = E[i].zw;
        for (int64_t k = 0; k < 6 * 33; k++) c.W[k] = (int8_t)(k % 2 ? E[i].w1 : E[i].w0);
        for (int64_t k = 0; k < 33 * 25; k++) c.X[k] = 1e6f; /* the top code: u = R */
        const int32_t R = c.xmax - c.xmin;
        bool ex = lithe__qconv8_exact(6, 33, c.W, c.zw, 1, R);
        snprintf(what, sizeof what, "edge %zu (w %d %d zw %d R %d)", i, E[i].w0, E[i].w1, E[i].zw, (int)R);
        CHECK(ex == E[i].exact, "%s: lithe__qconv8_exact says %d", what, (int)ex);
        if (lithe__qconv8_exact(6, 33, c.W, c.zw, 1, 0)) /* s8: the twin, VNNI; AVX2 where ex */
            kernels8(&c, NULL, what, false);
        if (!ex && E[i].zw == 0 && E[i].w0 >= -128 && (int64_t)R * (E[i].w0 + (E[i].w1 > 0 ? E[i].w1 : 0)) > 32767 &&
                   __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
            CHECK(!kernels8(&c, NULL, what, true), "%s: the u8 kernel past the bound matched (saturation expected)", what);
        }
        backend(&c, NULL, what);
        const lithe__qconv_fn k8 = lithe__qconv8_best();
        const bool ek = k8 && lithe__qconv8_exact(6, 33, c.W, c.zw, 1, lithe__qconv8_range(k8, R));
        CHECK(last_form == (ek ? 3 : 1), "%s: conv_q8 cached form %d", what, last_form);
        release(&c);
    }
    /* VNNI's int32 bound at its largest: K = 32767 (a quad of three), every u at R = 255 against
     * w - zw = -128 and 127 (Σ u·(w - zw) and xlo·wsum near ±2^30, their sum in int32) */
    for (int i = 0; i < 2; i++) {
        qcase c;
        geometry(&c.g, 1, 32767, 2, 3, 5, 1, 1, 0, 1, 1);
        make(&c, true, false, false, true, false);
        c.xmin = -128, c.xmax = 127, c.xz = i ? 127 : -128, c.zw[0] = 0;
        for (int64_t k = 0; k < 5 * 32767; k++) c.W[k] = (int8_t)(i ? 127 : -128);
        for (int64_t k = 0; k < 32767 * 6; k++) c.X[k] = i ? -1e6f : 1e6f;
        snprintf(what, sizeof what, "edge K=32767 #%d", i);
        kernels8(&c, NULL, what, false);
        backend(&c, NULL, what);
        release(&c);
    }
}

/* Depthwise's u8 form (qconv.h's lithe__qdw8_*): its twin and the AVX-512 VNNI + VBMI kernel (where
 * the CPU has it), each run directly over every plane (split in two calls past the middle plane: the
 * second call's staging starts there), against the int64 reference: float out with every
 * activation, bit for bit, and codes out (requantized: none, relu, clip) against requant_ref; no
 * write past Y. Widths 1-37 (every tail of the 16-output vectors and of 64-byte rows), strides 1
 * and 2, padding 0-2, 3x3 and 5x5 windows, dilation 2, several images, 2x3 to 64-wide planes (the
 * VNNI kernel's vectors across rows on "same" stride-1 planes, by rows on the others); float32 and
 * codes in. */
static void dw8_kernels(void) {
    static const struct {
        int64_t N, C, H, W, KH, s, pad, dil;
    } D[] = {
        {1, 3, 5, 1, 3, 1, 1, 1},   {1, 2, 7, 7, 3, 1, 1, 1},   {2, 3, 9, 13, 3, 2, 1, 1}, {1, 5, 16, 16, 3, 1, 1, 1},
        {1, 4, 17, 17, 3, 2, 1, 1}, {1, 3, 11, 31, 5, 1, 2, 1}, {1, 2, 12, 33, 3, 1, 2, 2}, {1, 3, 8, 37, 3, 2, 0, 1},
        {1, 17, 20, 20, 3, 1, 1, 1}, {1, 6, 30, 30, 3, 2, 1, 1}, {1, 2, 6, 64, 3, 1, 1, 1}, {1, 2, 4, 65, 5, 2, 2, 1},
        {2, 5, 7, 7, 3, 1, 1, 1},   {1, 4, 14, 14, 5, 1, 2, 1}, {3, 2, 2, 3, 3, 1, 1, 1}, {1, 3, 9, 21, 3, 1, 0, 1},
    };
    const lithe__qdw8_fn vnni = lithe__qdw8_vnni();
    if (!vnni) printf("qconv: no AVX-512 VNNI + VBMI here (the depthwise u8 kernel's checks: the twin only)\n");
    char what[160];
    int checked = 0;
    for (size_t i = 0; i < sizeof D / sizeof D[0]; i++)
        for (int v = 0; v < 4; v++) {
            qcase cs, *c = &cs;
            geometry(&c->g, D[i].N, D[i].C, D[i].H, D[i].W, D[i].C, D[i].KH, D[i].s, D[i].pad, D[i].dil, D[i].C);
            make(c, v & 1, v != 3, v & 2, v != 2, v >= 1);
            if (v & 2) reduce_range(c); /* zero points off 0 with every w - zw in s8 */
            const lithe__conv2d *g = &c->g;
            const int64_t K = g->KH * g->KW, P = g->OH * g->OW, ny = g->N * g->M * P, planes = g->N * g->C;
            const lithe__act *a = act_of((int)i + v);
            snprintf(what, sizeof what, "dw8 #%zu v%d act %d", i, v, (int)(i + v) % 5);
            if (!lithe__qconv8_exact(g->M, K, c->W, c->zw, c->n_w, 0)) {
                CHECK(false, "%s: weights not in s8", what);
                release(c);
                continue;
            }
            const int64_t nq = (g->KW + 3) / 4;
            int32_t *Wq = malloc((size_t)(g->M * g->KH * nq) * sizeof *Wq), *wsum = malloc((size_t)g->M * sizeof *wsum);
            uint8_t *U = malloc(lithe__qdw8_u_bytes(g)), *tmp = malloc(lithe__qdw8_tmp_bytes(g));
            float *scale = malloc((size_t)g->M * sizeof *scale), *Yr = malloc((size_t)ny * sizeof *Yr);
            lithe__qdw8_pack_w(g->M, g->KH, g->KW, c->W, c->zw, c->n_w, Wq, wsum);
            for (int64_t m = 0; m < g->M; m++) scale[m] = c->xs * c->sw[c->n_w == 1 ? 0 : m];
            conv_ref(c, Yr);
            CODES_SETUP; /* (yg, ce, ct, rq, rb, cq: a's codes out where it has them) */
            uint8_t *cv = malloc((size_t)ny + GUARD), *xc = malloc((size_t)(g->N * g->C * g->H * g->W));
            act_ref(a, ny, Yr);
            const lithe__qx qf = {c->xs, (float)(c->xmin - c->xz), (float)(c->xmax - c->xz), 0, c->xz};
            const lithe__qx qc = {c->xs, qf.lo, qf.hi, c->xmin < 0 ? 2 : 1, c->xz};
            for (int64_t e = 0; e < g->N * g->C * g->H * g->W; e++) xc[e] = (uint8_t)code_ref(c, c->X[e]);
            const int64_t split = planes > 1 ? planes / 2 + (planes > 3) : planes;
            for (int k = 0; k < (vnni ? 2 : 1); k++)
                for (int src = 0; src < 2; src++) {
                    const lithe__qdw8_fn fn = k ? vnni : lithe__qdw8_ref;
                    const char *kn = k ? "vnni" : "twin";
                    const lithe__qx *q = src ? &qc : &qf;
                    const void *X = src ? (const void *)xc : (const void *)c->X;
                    if (src && (c->xmax - c->xmin != 255)) continue;
                    lithe__qconv kc = {.M = g->M, .P = P, .scale = scale, .b = c->b, .Wb = Wq, .wsum = wsum,
                                       .xlo = c->xmin - c->xz};
                    set_act(&kc, a);
                    float *Y = guarded(ny);
                    fn(&kc, g, X, q, &lithe__qconv_aux_ref, 0, split > planes ? planes : split, U, tmp, Y, NULL);
                    if (split < planes) fn(&kc, g, X, q, &lithe__qconv_aux_ref, split, planes, U, tmp, Y, NULL);
                    CHECK(!memcmp(Y, Yr, (size_t)ny * sizeof *Y) && guard_ok(Y, ny), "%s: %s (%s in) vs reference",
                          what, kn, src ? "codes" : "float");
                    free(Y);
                    if (cq) {
                        set_requant(&kc, c, a, &yg, rq, rb);
                        kc.yq = NULL;
                        memset(cv, 0xA5, (size_t)ny + GUARD);
                        fn(&kc, g, X, q, &lithe__qconv_aux_ref, 0, split > planes ? planes : split, U, tmp, NULL, cv);
                        if (split < planes) fn(&kc, g, X, q, &lithe__qconv_aux_ref, split, planes, U, tmp, NULL, cv);
                        CHECK(!memcmp(cv, ce, (size_t)ny) && codes_guard_ok(cv, ny), "%s: %s's codes (%s in) vs requant_ref",
                              what, kn, src ? "codes" : "float");
                    }
                    checked++;
                }
            free(Wq), free(wsum), free(U), free(tmp), free(scale), free(Yr), free(cv), free(xc);
            CODES_FREE;
            release(c);
        }
    CHECK(checked >= 48, "dw8: only %d runs checked", checked);
}

#endif

/* The quantizing passes (qconv.h's lithe__qconv_aux: quant_f32, quant_i16, quant_pairs) of every
 * kernel built here against QuantizeLinear's codes (code_ref: rintf(x / s), half to even) on values
 * at and a few ulps either side of the ties (k + 1/2)·s, where a pass that rounded otherwise, or
 * computed x · (1 / s) for x / s, gives other codes (a SIMD128 pass multiplying by the reciprocal
 * failed 2-266 of 6,020 values per scale), a tiny scale, NaN and infinities. */
static void ties(void) {
    static const float S[] = {0.0173f, 0.0291f, 1.0f / 3.0f, 0.0039215689f, 7.77e-3f, 0x1p-110f};
    static const int32_t Z[][3] = {{0, 0, 255}, {3, -128, 127}, {128, 0, 255}, {-7, -128, 127}};
    const lithe__qconv_aux *A[3] = {&lithe__qconv_aux_ref};
    const char *name[3] = {"twin"};
    int na = 1;
#if defined(__x86_64__) || defined(_M_X64)
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        A[na] = &lithe__qconv_aux_avx2, name[na++] = "avx2";
#endif
#if defined(__wasm_simd128__)
    A[na] = &lithe__qconv_aux_wasm, name[na++] = "simd128";
#endif
    enum { NX = 2 * (601 * 5 + 5) };
    float *X = malloc(NX * sizeof *X), *Yf = malloc(NX * sizeof *Yf);
    int16_t *Yi = malloc(NX * sizeof *Yi), *Yp = malloc(NX * sizeof *Yp);
    for (size_t si = 0; si < sizeof S / sizeof S[0]; si++)
        for (size_t zi = 0; zi < sizeof Z / sizeof Z[0]; zi++) {
            const float s = S[si];
            int64_t n = 0;
            for (int k = -300; k <= 300; k++) {
                float h = ((float)k + 0.5f) * (s < 0x1p-100f ? 1.0f : s);
                X[n++] = h;
                X[n++] = nextafterf(h, INFINITY);
                X[n++] = nextafterf(h, -INFINITY);
                X[n++] = nextafterf(nextafterf(h, INFINITY), INFINITY);
                X[n++] = nextafterf(nextafterf(h, -INFINITY), -INFINITY);
            }
            X[n++] = NAN, X[n++] = INFINITY, X[n++] = -INFINITY, X[n++] = 1e30f, X[n++] = -0.0f;
            for (int64_t i = 0; i < n; i++) X[n + i] = X[n - 1 - i]; /* the pairs' second row */
            n *= 2;
            qcase c = {.xs = s, .xz = Z[zi][0], .xmin = Z[zi][1], .xmax = Z[zi][2]};
            const lithe__qx q = {s, (float)(c.xmin - c.xz), (float)(c.xmax - c.xz), 0, 0};
            for (int a = 0; a < na; a++) {
                A[a]->quant_f32(n, X, &q, Yf);
                A[a]->quant_i16(n, X, &q, Yi);
                A[a]->quant_pairs(n / 2, X, X + n / 2, &q, Yp);
                int bad = 0;
                for (int64_t i = 0; i < n; i++) {
                    const int32_t e = code_ref(&c, X[i]) - c.xz;
                    const int64_t pi = i < n / 2 ? 2 * i : 2 * (i - n / 2) + 1;
                    float ef = (float)e;
                    bad += memcmp(&Yf[i], &ef, sizeof ef) != 0 || Yi[i] != e || Yp[pi] != e;
                }
                CHECK(!bad, "ties: %s passes, scale %g zero %d: %d of %lld values off QuantizeLinear's codes", name[a],
                      (double)s, (int)c.xz, bad, (long long)n);
            }
        }
    free(X), free(Yf), free(Yi), free(Yp);
}

/* The codes' passes (qconv.h's aux epi_codes, codes_quads; NULL: the driver's twins) of every kernel
 * built here: epi_codes (the requantization, lithe__qconv_code) on sums at its ties (rq 1: k + 1/2
 * exactly, and neighbours) and near them (rq < 1 with a bias), NaN and infinities, against rintf's
 * half-to-even rounding of x · rq + rb clamped on the grid (code_ref at scale 1; the int8 byte its code's);
 * codes_quads against the interleaving by definition (u = code - xmin), tails of 1-15 values, 1-4 rows. */
static void codes_passes(void) {
    lithe__qconv_aux twin = lithe__qconv_aux_ref; /* its codes_quads, codes_pairs: the driver's twins */
    twin.codes_quads = lithe__qconv_codes_quads, twin.codes_pairs = lithe__qconv_codes_pairs;
    twin.codes_f32 = lithe__qconv_codes_f32;
    const lithe__qconv_aux *A[4] = {&twin};
    const char *name[4] = {"twin"};
    int na = 1;
#if defined(__x86_64__) || defined(_M_X64)
    if (lithe__qconv8_vnni()) A[na] = &lithe__qconv_aux_avx512, name[na++] = "avx512";
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) A[na] = &lithe__qconv_aux_avx2, name[na++] = "avx2";
#endif
#if defined(__wasm_simd128__)
    A[na] = &lithe__qconv_aux_wasm, name[na++] = "simd128";
#endif
    static const float S[] = {0.0173f, 1.0f / 3.0f, 0.0039215689f};
    static const int32_t Z[][3] = {{0, 0, 255}, {-7, -128, 127}, {128, 0, 255}};
    enum { NX = 601 * 5 + 5 };
    float *X = malloc(NX * sizeof *X), *y = malloc(NX * sizeof *y);
    uint8_t *d = malloc(NX + 1), *e = malloc(NX);
    int passes = 0;
    for (int a = 0; a < na; a++) {
        if (!A[a]->epi_codes && !A[a]->codes_quads && !A[a]->codes_pairs && !A[a]->codes_f32) continue;
        passes++;
        for (size_t si = 0; A[a]->epi_codes && si < sizeof S / sizeof S[0] + 1; si++)
            for (size_t zi = 0; zi < sizeof Z / sizeof Z[0]; zi++) {
                /* rq 1 on exact ties (k + 1/2 and its neighbours), or rq = S with a bias on sums near them */
                const float rq = si ? S[si - 1] : 1.0f, rb = si ? 0.37f : 0.0f;
                int64_t n = 0;
                for (int k = -300; k <= 300; k++) {
                    float h = si ? (float)(int32_t)(((float)k + 0.5f - rb) / rq) : (float)k + 0.5f;
                    X[n++] = h, X[n++] = nextafterf(h, INFINITY), X[n++] = nextafterf(h, -INFINITY);
                    X[n++] = si ? h + 1.0f : (float)k, X[n++] = si ? h - 1.0f : nextafterf(nextafterf(h, INFINITY), INFINITY);
                }
                X[n++] = NAN, X[n++] = INFINITY, X[n++] = -INFINITY, X[n++] = 1e30f, X[n++] = -0.0f;
                const qcase yg = {.xs = 1.0f, .xz = Z[zi][0], .xmin = Z[zi][1], .xmax = Z[zi][2]};
                const lithe__qx yq = {1.0f, (float)(yg.xmin - yg.xz), (float)(yg.xmax - yg.xz), yg.xmin < 0 ? 2 : 1, yg.xz};
                lithe__qconv c = {.M = 1, .P = n, .yq = &yq, .rq = &rq, .rb = &rb, .clo = yq.lo, .chi = yq.hi, .zy = yg.xz};
                memcpy(y, X, (size_t)n * sizeof *y);
                memset(d, 0xA5, NX + 1);
                A[a]->epi_codes(&c, 0, 1, n, y, d);
                int bad = d[n] != 0xA5;
                for (int64_t i = 0; i < n; i++) bad += d[i] != (uint8_t)code_ref(&yg, X[i] * rq + rb);
                CHECK(!bad, "codes: %s epi_codes, rq %g zero %d: %d of %lld codes off round_even(x * rq + rb)", name[a],
                      (double)rq, (int)yg.xz, bad, (long long)n);
            }
        for (int src = 1; A[a]->codes_quads && src <= 2; src++)
            for (int rows = 1; rows <= 4; rows++)
                for (int64_t n = 1; n <= 40; n += 13) {
                    const int64_t stride = n + 3;
                    for (int64_t i = 0; i < 4 * stride; i++) e[i] = (uint8_t)(urand32() >> 7);
                    const lithe__qx q = {1.0f, src == 2 ? -3.0f : -5.0f, src == 2 ? 252.0f : 250.0f, src, src == 2 ? -125 : 5};
                    memset(d, 0xA5, NX);
                    A[a]->codes_quads(n, e, stride, rows, &q, d);
                    int bad = 0;
                    for (int64_t i = 0; i < n; i++)
                        for (int j = 0; j < 4; j++) {
                            const int32_t code = src == 2 ? (int8_t)e[j * stride + i] : e[j * stride + i];
                            bad += d[4 * i + j] != (j < rows ? (uint8_t)(code - (src == 2 ? -128 : 0)) : 0);
                        }
                    bad += d[4 * n] != 0xA5;
                    CHECK(!bad, "codes: %s codes_quads, %s, %d rows, n %lld: %d bytes off", name[a],
                          src == 2 ? "int8" : "uint8", rows, (long long)n, bad);
                }
    }
    free(X), free(y), free(d), free(e);
    for (int a = 0; a < na; a++) /* codes_f32: x - zx of the codes as floats, tails of 1-15 */
        for (int src = 1; A[a]->codes_f32 && src <= 2; src++)
            for (int64_t n = 1; n <= 70; n += 3) {
                uint8_t x[72];
                float yf[73];
                for (int64_t i = 0; i < n; i++) x[i] = (uint8_t)(urand32() >> 5);
                x[0] = 0x80, x[n - 1] = 0x7F;
                const int32_t zx = src == 2 ? -9 : 131;
                const lithe__qx q = {1.0f, (float)((src == 2 ? -128 : 0) - zx), (float)((src == 2 ? 127 : 255) - zx), src, zx};
                yf[n] = SENTINEL;
                A[a]->codes_f32(n, x, &q, yf);
                int bad = memcmp(&yf[n], &SENTINEL, sizeof *yf) != 0;
                for (int64_t i = 0; i < n; i++) bad += yf[i] != (float)((src == 2 ? (int8_t)x[i] : x[i]) - zx);
                CHECK(!bad, "codes: %s codes_f32, %s, n %lld: %d values off", name[a], src == 2 ? "int8" : "uint8",
                      (long long)n, bad);
            }
    for (int a = 0; a < na; a++) /* codes_pairs: x - zx of two rows' codes, interleaved */
        for (int src = 1; A[a]->codes_pairs && src <= 2; src++)
            for (int64_t n = 1; n <= 41; n += 8) {
                uint8_t x[2][48];
                int16_t dp[2 * 48 + 1];
                for (int r = 0; r < 2; r++)
                    for (int64_t i = 0; i < n; i++) x[r][i] = (uint8_t)(urand32() >> 5);
                const int32_t zx = src == 2 ? -9 : 131;
                const lithe__qx q = {1.0f, (float)((src == 2 ? -128 : 0) - zx), (float)((src == 2 ? 127 : 255) - zx), src, zx};
                dp[2 * n] = 0x5A5A;
                A[a]->codes_pairs(n, x[0], x[1], &q, dp);
                int bad = dp[2 * n] != 0x5A5A;
                for (int64_t i = 0; i < 2 * n; i++) {
                    const uint8_t b = x[i & 1][i / 2];
                    bad += dp[i] != (src == 2 ? (int8_t)b : b) - zx;
                }
                CHECK(!bad, "codes: %s codes_pairs, %s, n %lld: %d values off", name[a], src == 2 ? "int8" : "uint8",
                      (long long)n, bad);
            }
#if defined(__x86_64__) || defined(_M_X64)
    CHECK(!lithe__qconv8_vnni() || passes >= 1, "codes: no AVX-512 codes passes checked on a VNNI CPU");
#endif
    (void)passes;
}

/* epi_codes (the requantization) with the depthwise's fused clamps as code bounds (relu; clips
 * inside, across and past the output grid's range), per-row rq, rb (non-finite ones among them) and
 * row tails, against the twin (lithe__qconv_aux_ref.epi_codes) bit for bit; the twin's codes within
 * one code of the float path's (epi then quant_u8, the int8 byte flipped) on rows with finite scale
 * and bias. Rows of integer sums (the depthwise's) and of values a half-step of the grid apart (ties
 * after the scale). */
static void codes_clamps(void) {
    const lithe__qconv_aux *A[3] = {&lithe__qconv_aux_ref};
    const char *name[3] = {"twin"};
    int na = 1;
#if defined(__x86_64__) || defined(_M_X64)
    if (lithe__qconv8_vnni()) A[na] = &lithe__qconv_aux_avx512, name[na++] = "avx512";
#endif
#if defined(__wasm_simd128__)
    A[na] = &lithe__qconv_aux_wasm, name[na++] = "simd128";
#endif
    static const struct {
        int clamp;
        float lo, hi;
    } CL[] = {{LITHE__SGEMM_CLAMP_RELU, 0, 0},     {LITHE__SGEMM_CLAMP_CLIP, 0.0f, 6.0f},
              {LITHE__SGEMM_CLAMP_CLIP, -0.5f, 1.25f}, {LITHE__SGEMM_CLAMP_CLIP, -100.0f, 100.0f},
              {LITHE__SGEMM_CLAMP_CLIP, 5.0f, 6.0f}, {LITHE__SGEMM_CLAMP_CLIP, -6.0f, -5.0f},
              {LITHE__SGEMM_CLAMP_CLIP, 1.0f, 1.0f}, {LITHE__SGEMM_CLAMP_CLIP, -INFINITY, INFINITY}};
    static const float YS[] = {0.0235f, 1.0f / 3.0f, 0.0039215689f};
    static const int32_t Z[][3] = {{0, 0, 255}, {-7, -128, 127}, {128, 0, 255}};
    enum { M = 8, NR = 16 * 3 + 5 };
    const float scale[M] = {0.01f, 1.0f / 3.0f, 0.0173f, 1.0f, 2e-3f, INFINITY, 0.05f, 0.0117f};
    const float bias[M] = {0.0f, 0.37f, -1.1f, 0.0f, 0.5f, 0.25f, NAN, -0.0f};
    float y[M * NR], t[M * NR], rq[M], rb[M];
    uint8_t d[M * NR + 1], e[M * NR], f[M * NR];
    for (int a = 0; a < na; a++)
        for (size_t ci = 0; ci < sizeof CL / sizeof CL[0]; ci++)
            for (size_t si = 0; si < sizeof YS / sizeof YS[0]; si++)
                for (size_t zi = 0; zi < sizeof Z / sizeof Z[0]; zi++)
                    for (int ties = 0; ties < 2; ties++) {
                        const float ys = YS[si];
                        const lithe__qx yq = {ys, (float)(Z[zi][1] - Z[zi][0]), (float)(Z[zi][1] + 255 - Z[zi][0]),
                                              Z[zi][1] < 0 ? 2 : 1, Z[zi][0]};
                        lithe__qconv c = {.M = M, .P = NR, .scale = scale, .b = ties ? NULL : bias, .yq = &yq,
                                          .clamp = CL[ci].clamp, .lo = CL[ci].lo, .hi = CL[ci].hi, .rq = rq, .rb = rb,
                                          .zy = Z[zi][0]};
                        for (int64_t r = 0; r < M; r++) rq[r] = scale[r] / ys, rb[r] = ties ? 0.0f : bias[r] / ys;
                        const float l = CL[ci].clamp == LITHE__SGEMM_CLAMP_RELU ? 0.0f : rintf(CL[ci].lo / ys),
                                    h = CL[ci].clamp == LITHE__SGEMM_CLAMP_RELU ? INFINITY : rintf(CL[ci].hi / ys);
                        c.clo = l < yq.lo ? yq.lo : l > yq.hi ? yq.hi : l, c.chi = h < yq.lo ? yq.lo : h > yq.hi ? yq.hi : h;
                        for (int64_t r = 0; r < M; r++)
                            for (int64_t i = 0; i < NR; i++) /* sums around 0; or (k + 1/2)·ys / scale, ± an ulp */
                                y[r * NR + i] = !ties ? (float)((int32_t)(urand32() % 1201) - 600)
                                                      : nextafterf(((float)(i - NR / 2) + 0.5f) * ys / scale[r],
                                                                   i % 3 == 0 ? INFINITY : i % 3 == 1 ? 0.0f : -INFINITY);
                        memcpy(t, y, sizeof y);
                        lithe__qconv_aux_ref.epi(&c, 0, M, NR, t);
                        lithe__qconv_aux_ref.quant_u8(M * NR, t, &yq, e);
                        for (int64_t i = 0; yq.src == 2 && i < M * NR; i++) e[i] ^= 0x80;
                        memcpy(t, y, sizeof y);
                        lithe__qconv_aux_ref.epi_codes(&c, 0, M, NR, t, f);
                        d[M * NR] = 0xA5;
                        A[a]->epi_codes(&c, 0, M, NR, y, d);
                        int bad = d[M * NR] != 0xA5, far = 0;
                        for (int64_t i = 0; i < M * NR; i++) {
                            bad += d[i] != f[i];
                            const int64_t r = i / NR;
                            const int32_t dd = (int32_t)(yq.src == 2 ? (int8_t)f[i] : f[i]) - (yq.src == 2 ? (int8_t)e[i] : e[i]);
                            far += isfinite(scale[r]) && isfinite(bias[r]) && (dd < -1 || dd > 1);
                        }
                        CHECK(!bad, "codes: %s epi_codes, clamp %d [%g, %g], ys %g zero %d%s: %d of %d codes off the twin's",
                              name[a], CL[ci].clamp, (double)CL[ci].lo, (double)CL[ci].hi, (double)ys, (int)Z[zi][0],
                              ties ? ", ties" : "", bad, M * NR);
                        CHECK(!far, "codes: the twin's requantized codes, clamp %d [%g, %g], ys %g zero %d%s: %d more "
                              "than one code off the float path's", CL[ci].clamp, (double)CL[ci].lo, (double)CL[ci].hi,
                              (double)ys, (int)Z[zi][0], ties ? ", ties" : "", far);
                    }
    (void)A, (void)name;
}

/* The aux table's one-pass 3x3 depthwise on codes (dw3_codes: WebAssembly's) called directly, on
 * planes [1, C - 1) and then on all of them: each plane's codes against the twin's requantization
 * (lithe__qconv_code) of the int64 sums over codes less zx and integer taps in [-255, 255] (±255
 * among them), uint8 in / int8 out and int8 in / uint8 out, code bounds narrowed as by a relu or
 * clip; the planes around the range and the bytes past Y keep their guard (a row's last step may
 * store into the next row's start, never past its plane or Y). Widths under 8 (one vector a row, X's
 * last row staged by elements), 8, and rows ending 1 .. 7 outputs past a step of 8, at strides 1 and
 * 2. Skipped with a message where the table has no dw3_codes. */
static void dw3_bounds(void) {
    const lithe__qconv_aux *aux = lithe__qconv_aux_best();
    if (!aux->dw3_codes) {
        printf("qconv: no one-pass 3x3 depthwise on codes here (its checks skipped)\n");
        return;
    }
    static const struct {
        int64_t C, H, W, s;
    } G[] = {{4, 7, 7, 1},  {3, 5, 3, 1},  {3, 1, 1, 1},   {4, 14, 14, 2}, {3, 6, 6, 2},   {3, 9, 13, 1},
             {3, 4, 11, 1}, {3, 8, 8, 1},  {3, 10, 20, 2}, {3, 4, 2, 2},   {3, 6, 17, 1},  {3, 6, 16, 2},
             {3, 2, 30, 2}};
    for (size_t i = 0; i < sizeof G / sizeof G[0]; i++)
        for (int v = 0; v < 2; v++) {
            lithe__conv2d g;
            geometry(&g, 1, G[i].C, G[i].H, G[i].W, G[i].C, 3, G[i].s, 1, 1, G[i].C);
            char what[96];
            snprintf(what, sizeof what, "dw3_codes %lldx%lldx%lld stride %lld v%d", (long long)g.C, (long long)g.H,
                     (long long)g.W, (long long)G[i].s, v);
            CHECK(lithe__qconv_dw3_fits(&g), "%s: fits", what);
            const int64_t C = g.C, HW = g.H * g.W, P = g.OH * g.OW, ny = C * P;
            const int32_t zx = v ? -3 : 131, xmin = v ? -128 : 0, zy = v ? 200 : -17, ymin = v ? 0 : -128;
            const lithe__qx q = {0.05f, (float)(xmin - zx), (float)(xmin + 255 - zx), v ? 2 : 1, zx};
            const lithe__qx yq = {0.1f, (float)(ymin - zy), (float)(ymin + 255 - zy), v ? 1 : 2, zy};
            uint8_t *X = malloc((size_t)(C * HW)), *Y = malloc((size_t)ny + GUARD), *e = malloc((size_t)ny);
            float *w = malloc((size_t)(9 * C) * sizeof *w), rq[4], rb[4];
            int16_t *buf = calloc((size_t)lithe__qconv_dw3_buf(&g), sizeof *buf);
            for (int64_t j = 0; j < C * HW; j++) X[j] = (uint8_t)urand32();
            for (int64_t j = 0; j < 9 * C; j++)
                w[j] = j % 7 == 0 ? (j % 2 ? 255.0f : -255.0f) : (float)((int32_t)(urand32() % 511) - 255);
            for (int64_t m = 0; m < C; m++) rq[m] = 2e-4f * (float)(m + 1), rb[m] = (float)m * 7.5f - 9.0f;
            lithe__qconv c = {.M = C, .P = P, .yq = &yq, .rq = rq, .rb = rb, .zy = zy};
            c.clo = v ? yq.lo + 20.0f : yq.lo, c.chi = v ? yq.hi : yq.hi - 30.0f;
            for (int64_t m = 0; m < C; m++) /* the twin's codes of the int64 sums */
                for (int64_t oh = 0; oh < g.OH; oh++)
                    for (int64_t ow = 0; ow < g.OW; ow++) {
                        int64_t acc = 0;
                        for (int64_t kh = 0; kh < 3; kh++)
                            for (int64_t kw = 0; kw < 3; kw++) {
                                const int64_t ih = oh * G[i].s - 1 + kh, iw = ow * G[i].s - 1 + kw;
                                if (ih < 0 || ih >= g.H || iw < 0 || iw >= g.W) continue;
                                const uint8_t b = X[m * HW + ih * g.W + iw];
                                acc += (int64_t)((v ? (int32_t)(int8_t)b : (int32_t)b) - zx) * (int64_t)w[9 * m + 3 * kh + kw];
                            }
                        e[m * P + oh * g.OW + ow] = lithe__qconv_code(&c, m, (float)acc);
                    }
            for (int run = 0; run < 2; run++) { /* planes [1, C - 1), then [0, C) */
                memset(Y, 0xA5, (size_t)ny + GUARD);
                c.Yc = Y;
                aux->dw3_codes(&g, X, &q, w, &c, run ? 0 : 1, run ? C : C - 1, buf);
                int bad = 0, past = 0;
                for (int64_t j = 0; j < ny; j++) {
                    const bool in = run || (j >= P && j < (C - 1) * P);
                    bad += in && Y[j] != e[j];
                    past += !in && Y[j] != 0xA5;
                }
                for (int64_t j = ny; j < ny + GUARD; j++) past += Y[j] != 0xA5;
                CHECK(!bad, "%s (%s planes): %d of %lld codes off the twin's", what, run ? "all" : "inner", bad,
                      (long long)ny);
                CHECK(!past, "%s (%s planes): %d bytes written outside its planes", what, run ? "all" : "inner", past);
            }
            free(X), free(Y), free(e), free(w), free(buf);
        }
}

int main(void) {
    static const struct {
        int64_t N, C, H, W, M, KH, s, pad, dil;
    } G[] = {
        {1, 16, 14, 14, 24, 1, 1, 0, 1}, {1, 17, 7, 7, 9, 1, 1, 0, 1},  {2, 3, 5, 3, 5, 1, 1, 0, 1},
        {1, 1, 1, 1, 1, 1, 1, 0, 1},    {1, 33, 4, 6, 13, 1, 1, 0, 1},  {1, 8, 9, 9, 7, 1, 2, 0, 1},
        {1, 3, 28, 28, 16, 3, 2, 1, 1}, {2, 5, 7, 6, 6, 3, 1, 1, 1},    {1, 4, 9, 11, 5, 3, 1, 2, 2},
        {1, 7, 1, 17, 3, 1, 1, 0, 1},   {1, 40, 2, 2, 33, 1, 1, 0, 1},  {1, 2, 16, 8, 4, 1, 1, 0, 1},
        /* mobilenet_v2's first layer (3 -> 32, 3x3, stride 2) on smaller images: the SIMD128 gather's
         * rows of 19 outputs (a last vector overlapping), of 4 (one vector), of 3 at stride 1 (the twin) */
        {1, 3, 40, 38, 32, 3, 2, 1, 1}, {1, 3, 13, 7, 5, 3, 2, 1, 1},   {1, 2, 5, 3, 3, 3, 1, 1, 1},
    };
    char what[160];
#if defined(__x86_64__) || defined(_M_X64)
    int n_s8 = 0;
    printf("qconv: the u8 kernel: %s\n", !lithe__qconv8_best() ? "none"
                                         : lithe__qconv8_best() == lithe__qconv8_avx2 ? "avx2" : "avx512vnni");
    if (!lithe__qconv8_vnni()) printf("qconv: no AVX512-VNNI on this CPU (the VNNI tile's checks skipped)\n");
#endif
    /* the kernel conv_q8 runs in this build (wasi: "simd128" unless LITHE_CPU_ISA=scalar) */
    const lithe__qconv_fn best = lithe__qconv_best();
    printf("qconv: conv_q8's kernel: %s\n", best == lithe__qconv_ref ? "scalar"
#if defined(__wasm_simd128__)
                                           : best == lithe__qconv_wasm ? "simd128"
#endif
                                                                      : "avx2");
    ties();
    codes_passes();
    codes_clamps();
    dw3_bounds();
    for (size_t i = 0; i < sizeof G / sizeof G[0]; i++)
        for (int v = 0; v < 4; v++) {
            qcase c;
            geometry(&c.g, G[i].N, G[i].C, G[i].H, G[i].W, G[i].M, G[i].KH, G[i].s, G[i].pad, G[i].dil, 1);
            make(&c, v & 1, v != 3, v & 2, v != 2, v >= 1);
            snprintf(what, sizeof what, "group 1 #%zu v%d act %d", i, v, (int)(i + v) % 5);
            kernels(&c, act_of((int)i + v), what);
            backend(&c, act_of((int)i + v), what);
#if defined(__wasm_simd128__)
            wasm_code_grids(&c, act_of((int)i + v), what);
#endif
#if defined(__x86_64__) || defined(_M_X64)
            /* full-range weights: the u8 form where every w - zw is in s8 (the twin, VNNI) */
            if (lithe__qconv8_exact(c.g.M, c.g.C * c.g.KH * c.g.KW, c.W, c.zw, c.n_w, 0)) {
                kernels8(&c, act_of((int)i + v), what, false);
                n_s8++;
            }
            /* the same case with reduce_range weights: the u8 form (kernels, and conv_q8's choice) */
            reduce_range(&c);
            snprintf(what, sizeof what, "group 1 #%zu v%d act %d, reduce_range", i, v, (int)(i + v) % 5);
            CHECK(lithe__qconv8_exact(c.g.M, c.g.C * c.g.KH * c.g.KW, c.W, c.zw, c.n_w, c.xmax - c.xmin), "%s: exact", what);
            kernels8(&c, act_of((int)i + v), what, false);
            kernels(&c, act_of((int)i + v), what);
            backend(&c, act_of((int)i + v), what);
            if (lithe__qconv8_best()) /* a u8 kernel runs here (not under LITHE_CPU_ISA=scalar) */
                CHECK(last_form == 3, "%s: conv_q8 ran the form %d, not the u8 one", what, last_form);
#endif
            release(&c);
        }
#if defined(__x86_64__) || defined(_M_X64)
    CHECK(n_s8 >= 12, "only %d full-range cases in s8", n_s8);
    edges();
    dw8_kernels();
#endif
    static const struct {
        int64_t N, C, H, W, KH, s, pad, dil;
    } D[] = {
        {1, 8, 14, 14, 3, 1, 1, 1}, {1, 5, 7, 7, 3, 2, 1, 1}, {2, 3, 28, 28, 3, 2, 1, 1},
        {1, 4, 9, 5, 5, 1, 2, 1},   {1, 6, 8, 8, 3, 1, 2, 2}, {1, 2, 1, 1, 3, 1, 1, 1},
        /* planes past the driver's 256 KB chunk: channels by chunks of 5 (and 1), of 2 (and 1) per image */
        {1, 6, 112, 112, 3, 2, 1, 1}, {2, 3, 160, 160, 3, 1, 1, 1},
        /* WebAssembly's one-pass 3x3 on codes (dw3_codes): rows under 8 outputs, a last step of 8
         * overlapping the one before, at strides 1 and 2 */
        {1, 5, 7, 7, 3, 1, 1, 1}, {1, 4, 14, 14, 3, 2, 1, 1}, {1, 3, 9, 13, 3, 1, 1, 1}, {2, 3, 12, 20, 3, 2, 1, 1},
    };
    for (size_t i = 0; i < sizeof D / sizeof D[0]; i++)
        for (int v = 0; v < 4; v++) {
            qcase c;
            geometry(&c.g, D[i].N, D[i].C, D[i].H, D[i].W, D[i].C, D[i].KH, D[i].s, D[i].pad, D[i].dil, D[i].C);
            make(&c, v & 1, v != 3, v & 2, v != 2, v >= 1);
            snprintf(what, sizeof what, "depthwise #%zu v%d act %d", i, v, (int)(i + v) % 5);
            backend(&c, act_of((int)i + v), what);
            release(&c);
        }
#if defined(__wasm_simd128__)
    printf("qconv: wasm simd128's codes on more grids: %d with the saturating epilogue, %d with the float clamp\n",
           n_sat, n_unsat);
    CHECK(n_sat >= 20 && n_unsat >= 10, "the wasm tile's two code epilogues: %d, %d grids", n_sat, n_unsat);
#endif
    printf("qconv: conv_q8's requantized codes: %lld of %lld one code off QuantizeLinear's of the float output\n",
           (long long)n_off, (long long)n_codes);
    printf("qconv: %d passed, %d failed\n", passed, failed);
    return failed != 0;
}
