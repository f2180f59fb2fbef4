/* The int8 convolution of quantized graphs (fused:QConv, core/graph/ops/qfused.c), on the CPU:
 *
 *   Y (N, M, OH, OW) = act(sx·sw[m] · Σ (x - zx)·(w - zw[m]) + b[m])
 *
 * X float32, quantized here as QuantizeLinear does (one scale sx and zero point zx), W int8 with a
 * scale and zero point per output channel (or one). The sums are exact int32, so every kernel gives
 * the bits of its scalar twin, and the same values as the int8 GEMM (qgemm.c) computes for them:
 * (float)acc · (sx·sw) (+ b), then the activation.
 *
 * Group 1 (any window, stride, padding): per image the columns (K = C·KH·KW, P = OH·OW) are packed
 * once, quantized, as int16 pairs along K (Xp[k/2][p][2], x - zx, 0 outside the image and past
 * K / P), the weight once per weight version (lithe__quant's cache) as int32 pairs (w - zw) in panels
 * of MR filters; a tile is MR filters × 8 or 16 pixels of int16 pair products (AVX2 vpmaddwd,
 * exact for any 8-bit codes: no u7 split), written straight into Y's NCHW rows — no transpose. For
 * a 1x1 stride-1 unpadded window the packing is two rows interleaved (no im2col).
 * Depthwise (group = C = M, at most 256 taps): the float depthwise kernel on the integers x - zx and
 * w - zw (taps decoded once per weight version): every partial sum is an integer below 2^24, exact
 * in float, so the sum is the int32 one bit for bit; then (float)acc · scale (+ b) per channel;
 * where the VNNI tile runs and the CPU has VBMI, every plane by the u8 depthwise kernel
 * (lithe__qdw8_*, below: the same sums).
 * Codes out (Y int8 / uint8, a fused:QConv read by another): the int32 sums requantized by one float
 * multiply (lithe__qconv_code, onnxruntime's QLinearConv rule; a relu / clip as a clamp of the codes),
 * in the VNNI tile's store or the depthwise epilogue; other activations: the float output quantized. */
#ifndef LITHE_CPU_CONV_QCONV_H
#define LITHE_CPU_CONV_QCONV_H

#include <stdbool.h>
#include <stdint.h>

#include "../gemm/gemm.h"

enum { LITHE__QC_MR = 4 };

typedef struct lithe__qconv {
    int64_t M, Kp, P, P8;  /* filters, K pairs, pixels, pixels rounded up to 8 */
    const int16_t *X;      /* (Kp, P8, 2) */
    const int32_t *W;      /* (ceil(M / MR), Kp, MR) pairs of int16 (k even in the low half) */
    const float *scale;    /* (M,) sx·sw[m] */
    const float *b;        /* (M,) or NULL */
    float *Y;              /* (M, P) */
    /* The activation, in the store: clamp (LITHE__SGEMM_CLAMP_*, gemm.h: relu, clip, mobilenet's
     * HardSwish) with lo, hi; or, clamp 0 and act set, act_fn (the backend's act kernel) over each
     * stored run of a row (16 or 8 pixels, in L1); neither: none. The same bits as the act kernel's
     * pass over Y. */
    int clamp;
    float lo, hi;
    const lithe__act *act;
    lithe__act_fn act_fn;
    /* The u8 x s8 form (qconv8_*; X and W above unused): Kq = ceil(K / 4) quads of K,
     *   Xb (Kq, P8, 4)  u = (x - zx) - xlo in [0, R] (R = xmax - xmin; the padding's u is -xlo),
     *   Wb (ceil(M / MR), Kq, MR) quads of s8 w - zw (k0 in the lowest byte; 0 past K and M),
     *   wsum (M rounded up to MR) Σ_k (w - zw),
     * so Σ (x - zx)(w - zw) = Σ u·(w - zw) + xlo·wsum[m]: exact int32, the same sum as the int16 form. */
    int64_t Kq;
    const uint8_t *Xb;
    const int32_t *Wb, *wsum;
    int32_t xlo;
    /* Codes out (conv_q8's Y uint8 / int8): their grid (src 1 uint8, 2 int8) */
    const struct lithe__qx *yq;
    /* Codes out by requantization (rq set: conv_q8's Y codes where the activation is none, a relu or
     * a clip; lithe__qconv_code): per filter rq[m] = (sx·sw[m]) / sy and rb[m] = b[m] / sy (0 without
     * b), computed in float32; the code less its zero point zy clamped to [clo, chi], the output
     * grid's bounds narrowed by the relu / clip (their bounds rounded on the grid). The passes'
     * epi_codes apply it to float sums; the kernels that store codes (the twins lithe__qconv_ref,
     * lithe__qconv8_ref, the VNNI tile and the SIMD128 tile, which also reads yq:
     * lithe__qconv_stores_codes) write them, (M, P) bytes, to Yc instead of Y when Yc is set. */
    const float *rq, *rb;
    float clo, chi;
    int32_t zy;
    uint8_t *Yc;
} lithe__qconv;

/* The requantization of conv_q8's int8 / uint8 output (onnxruntime's QLinearConv rule, which its QDQ
 * Conv runs: one float multiply, no division): the int32 sum acc of filter m as a code,
 *   code = clamp(round_half_even((float)acc · rq[m] + rb[m]), clo, chi) + zy      (NaN to clo)
 * as the int8 / uint8 code's byte. It can differ from QuantizeLinear of the float output
 * (act(acc · sx·sw + b) / sy, the float path's division) by one code where that quotient is within
 * float rounding of a half (ties). Every kernel's codes are this function's bits (mul, then add:
 * no FMA; vcvtps2dq / the magic-number add round half to even). */
static inline uint8_t lithe__qconv_code(const lithe__qconv *c, int64_t m, float acc) {
    float t = acc * c->rq[m] + c->rb[m];
    t = t > c->chi ? c->chi : t;
    t = t >= c->clo ? t : c->clo; /* NaN goes to clo */
    return (uint8_t)(int32_t)((int32_t)((t + 12582912.0f) - 12582912.0f) + c->zy);
}

/* c's activation over rows [m, m + MR) (those below M), pixels [p, p + n) (those below P) of Y, in
 * place: the twin's clamp or the act kernel, elementwise — for a kernel that stores
 * (float)acc · scale (+ b) without clamping in registers and then calls this on the tile it stored
 * (the same bits as the twin). */
void lithe__qconv_act_rows(const lithe__qconv *c, int64_t m, int64_t p, int64_t n);

/* Filters [m0, m1) (multiples of MR, m1 may pass M: rows past M are not written), every pixel, c's
 * activation included (the store's clamp, or lithe__qconv_act_rows). */
typedef void (*lithe__qconv_fn)(const lithe__qconv *c, int64_t m0, int64_t m1);
void lithe__qconv_ref(const lithe__qconv *c, int64_t m0, int64_t m1); /* the scalar twin */
/* whether kernel k writes c->Yc itself (else the driver runs it on sums and then epi_codes) */
bool lithe__qconv_stores_codes(lithe__qconv_fn k);
#if defined(__x86_64__) || defined(_M_X64)
void lithe__qconv_avx2(const lithe__qconv *c, int64_t m0, int64_t m1);
#endif
#if defined(__wasm_simd128__) /* qconv_wasm.c: i32x4.dot_i16x8_s on the same packing */
void lithe__qconv_wasm(const lithe__qconv *c, int64_t m0, int64_t m1);
#endif
/* The kernel the CPU runs (LITHE_CPU_ISA=scalar: the twin). */
lithe__qconv_fn lithe__qconv_best(void);

/* The u8 x s8 kernels (Xb, Wb, wsum, xlo): AVX2's vpmaddubsw adds two u8 x s8 products into a
 * *saturating* int16, then vpmaddwd by ones sums the two int16 of a quad into int32 — exact only when
 * no pair's sum leaves int16: with u in [0, R], R·(pos(w0) + pos(w1)) <= 32767 and
 * R·(neg(w0) + neg(w1)) <= 32768 for every pair (k even, k + 1) of every filter (pos / neg: the
 * positive / negative part), and every w - zw in [-128, 127]. lithe__qconv8_exact checks that at
 * pack time; the driver runs this form only then (onnxruntime's reduce_range weights, |w| <= 64,
 * always pass for R = 255; full-range int8 weights such as lithe quantize's [-127, 127] do not, and
 * run the int16 form, exact for any codes). The twin is the plain int32 sum. */
void lithe__qconv8_ref(const lithe__qconv *c, int64_t m0, int64_t m1);
#if defined(__x86_64__) || defined(_M_X64)
void lithe__qconv8_avx2(const lithe__qconv *c, int64_t m0, int64_t m1);
/* AVX-512 VNNI (qconv_vnni.c, x86-64 only): vpdpbusd sums a quad's four u8 x s8 products into int32
 * with no int16 step and no saturation, so it is exact wherever every w - zw is in s8 — the check
 * with R = 0 (the sums stay below 2^31: qconv_vnni.c). The kernel where the CPU has AVX512F and
 * AVX512-VNNI; NULL elsewhere. */
lithe__qconv_fn lithe__qconv8_vnni(void);
#endif
/* The u8 kernel the CPU runs — VNNI where the float GEMM runs AVX-512 (LITHE_CPU_ISA) and the CPU
 * has it, else AVX2's; NULL where there is none but the twin (the int16 form's SIMD kernels are
 * faster than a scalar u8 loop): the driver then runs the int16 form. lithe__qconv8_range: the R to
 * check the weights with for kernel k (0 for VNNI: s8 alone; the activation's R for AVX2). */
lithe__qconv_fn lithe__qconv8_best(void);
int32_t lithe__qconv8_range(lithe__qconv_fn k, int32_t R);
bool lithe__qconv8_exact(int64_t M, int64_t K, const int8_t *W, const int32_t *zw, int64_t n_zw, int32_t R);

/* The activation's quantization: x - zx = clamp(round_even(X / scale), lo, hi) with lo = xmin - zx,
 * hi = xmax - zx (NaN to lo): QuantizeLinear's code less its zero point. */
typedef struct lithe__qx {
    float scale, lo, hi;
    /* The source (conv_q8's X): 0 float32 values, quantized as above; 1 uint8 / 2 int8 codes already
     * on this grid (the producing fused:QConv wrote them: x - zx = code - zx, with zx = -lo + xmin),
     * read by the packing without a division. zx: the zero point (codes only). */
    int src;
    int32_t zx;
} lithe__qx;
/* The codes' twins of the passes below (x: src's codes; bytes, qconv.c): y = code - zx as a float,
 * as an int16, as pairs (d[2i] from x0, d[2i + 1] from x1); as u = code - xmin (a byte: the code
 * itself for uint8, code + 128 for int8), in quads of nrows rows at stride (0 past nrows) */
void lithe__qconv_codes_f32(int64_t n, const uint8_t *x, const struct lithe__qx *q, float *y);
void lithe__qconv_codes_i16(int64_t n, const uint8_t *x, const struct lithe__qx *q, int16_t *y);
void lithe__qconv_codes_pairs(int64_t n, const uint8_t *x0, const uint8_t *x1, const struct lithe__qx *q, int16_t *d);
void lithe__qconv_codes_u8(int64_t n, const uint8_t *x, const struct lithe__qx *q, uint8_t *y);
void lithe__qconv_codes_quads(int64_t n, const uint8_t *x, int64_t stride, int nrows, const struct lithe__qx *q,
                              uint8_t *d);
/* The passes around the tiles, per ISA (qconv_aux_best; the twins in qconv.c), each the twin's bits:
 *   quant_f32   y[i] = x[i]'s code less zx, as a float (the depthwise input)
 *   quant_i16   y[i] = the same as an int16 (the columns' source image)
 *   quant_pairs d[2i] = code of x0[i], d[2i + 1] = code of x1[i] (a 1x1 window's K pair)
 *   epi         rows [r0, r0 + rows) of n values at y (row r at y + (r - r0)·n, its filter r mod M):
 *               y = act((y · scale[m]) (+ b[m])), c's epilogue on float sums in place (the twin's
 *               per filter, the depthwise kernel's over every image's channels in one call) */
struct lithe__conv2d;
typedef struct lithe__qconv_aux {
    void (*quant_f32)(int64_t n, const float *x, const struct lithe__qx *q, float *y);
    void (*quant_i16)(int64_t n, const float *x, const struct lithe__qx *q, int16_t *y);
    void (*quant_pairs)(int64_t n, const float *x0, const float *x1, const struct lithe__qx *q, int16_t *d);
    void (*epi)(const struct lithe__qconv *c, int64_t r0, int64_t rows, int64_t n, float *y);
    /* the u8 form: y[i] = u of x[i] (x - zx - lo, in [0, hi - lo]); d[4i + j] = u of rows[j][i]
     * (row j at x + j·stride), 0 for j >= nrows (a 1x1 window's K quad) */
    void (*quant_u8)(int64_t n, const float *x, const struct lithe__qx *q, uint8_t *y);
    void (*quant_quads)(int64_t n, const float *x, int64_t stride, int nrows, const struct lithe__qx *q, uint8_t *d);
    /* Codes between fused:QConv nodes (NULL: the twins): epi_codes over rows of float sums y (row r's
     * filter r mod M; integers, or (float)acc): lithe__qconv_code of each, into d (rows at
     * d + (r - r0)·n; c->rq set); codes_quads, codes_pairs as lithe__qconv_codes_* */
    void (*epi_codes)(const struct lithe__qconv *c, int64_t r0, int64_t rows, int64_t n, float *y, uint8_t *d);
    void (*codes_quads)(int64_t n, const uint8_t *x, int64_t stride, int nrows, const struct lithe__qx *q, uint8_t *d);
    void (*codes_pairs)(int64_t n, const uint8_t *x0, const uint8_t *x1, const struct lithe__qx *q, int16_t *d);
    /* lithe__qconv_codes_f32 (the depthwise's codes in; NULL: the twin) */
    void (*codes_f32)(int64_t n, const uint8_t *x, const struct lithe__qx *q, float *y);
    /* The 3x3 depthwise from codes to requantized codes in one pass (NULL: none; conv_q8 runs it where
     * lithe__qconv_dw3_fits(g), X is codes and c->rq is set): planes [p0, p1) of X (N, C, H, W codes on
     * q's grid), plane p's channel m = p mod C with taps w + 9m (w - zw as floats: w_form's 2), buf
     * the kernel's scratch (lithe__qconv_dw3_buf(g) values: room for H + 2 rows of
     * lithe__qconv_dw3_ld(g), zeroed by the caller once: the padding and slack of the planes staged
     * there as int16 x - zx), the exact int32 sum of the 9 products, then lithe__qconv_code into
     * c->Yc + p·OH·OW — written there only: the bits of the float path (codes_f32, the float
     * depthwise's exact integer sums, epi_codes). */
    void (*dw3_codes)(const struct lithe__conv2d *g, const uint8_t *X, const struct lithe__qx *q, const float *w,
                      const struct lithe__qconv *c, int64_t p0, int64_t p1, int16_t *buf);
    /* lithe__qconv_gather_pairs (the columns' gather of pack_x; NULL: the twin) */
    void (*gather_pairs)(int64_t n, const int16_t *r0, const int16_t *r1, int64_t s, int16_t *d);
} lithe__qconv_aux;
extern const lithe__qconv_aux lithe__qconv_aux_ref;
#if defined(__x86_64__) || defined(_M_X64)
extern const lithe__qconv_aux lithe__qconv_aux_avx2;
/* qconv_vnni.c: quant_f32, quant_u8, quant_quads, epi on 16 lanes (the int16 form's: AVX2's); with
 * the VNNI kernel (an AVX-512 CPU) */
extern const lithe__qconv_aux lithe__qconv_aux_avx512;
#endif
#if defined(__wasm_simd128__) /* qconv_wasm.c: quant_f32, quant_i16, quant_pairs, epi, epi_codes, codes_pairs,
                                * codes_f32, dw3_codes (the u8 form's: the twins) */
extern const lithe__qconv_aux lithe__qconv_aux_wasm;
#endif
/* The passes the CPU runs (LITHE_CPU_ISA=scalar: the twins). */
const lithe__qconv_aux *lithe__qconv_aux_best(void);

/* Packing, shared by the driver and the tests: Xp (Kp, P8, 2) of one image X (C, H, W: float32, or
 * codes where q->src says so) for the window of g (group 1; tmp: lithe__qconv_pack_tmp(g) int16 of
 * scratch, unused for a 1x1 stride-1 unpadded window); Wp of W (M, K) int8 with zero points zw
 * (n_zw = M or 1). Other windows: the image quantized once into tmp as int16 rows of
 * lithe__qconv_pack_ld(g) values (pad[1] zeros, the row, zeros to the end: every column a window
 * reads), a zero row after them (the padding's rows, an odd K's last half), then per K pair and
 * output row one gather (aux's gather_pairs, else the twin) writes the row's pixels' pairs. */
struct lithe__conv2d;
int64_t lithe__qconv_pack_ld(const struct lithe__conv2d *g);
int64_t lithe__qconv_pack_tmp(const struct lithe__conv2d *g);
/* d[2i] = r0[s·i], d[2i + 1] = r1[s·i] for i < n (the twin of aux's gather_pairs; s >= 1) */
void lithe__qconv_gather_pairs(int64_t n, const int16_t *r0, const int16_t *r1, int64_t s, int16_t *d);
/* dw3_codes' geometry: a 3x3 window, dilation 1, padding 1 at the top and left, stride 1 with padding 1
 * all round or stride 2 reading no bottom or right padding (2·OH <= H, 2·OW <= W); its int16 rows'
 * length (W, the padding, 16 of slack: the last vector of 8 outputs reads past OW) and buf's values */
bool lithe__qconv_dw3_fits(const struct lithe__conv2d *g);
int64_t lithe__qconv_dw3_ld(const struct lithe__conv2d *g);
int64_t lithe__qconv_dw3_buf(const struct lithe__conv2d *g);
/* The outputs ow of a row whose input column iw = ow·s - a (s = stride, a = pad - kw·dil) lies in the
 * image: [*owa, *owb) (the u8 packing's gather) */
void lithe__qconv_ow_range(const struct lithe__conv2d *g, int64_t kw, int64_t *owa, int64_t *owb);
void lithe__qconv_pack_x(const struct lithe__conv2d *g, const void *X, const lithe__qx *q, int16_t *tmp, int16_t *Xp,
                         const lithe__qconv_aux *aux);
void lithe__qconv_pack_w(int64_t M, int64_t K, const int8_t *W, const int32_t *zw, int64_t n_zw, int32_t *Wp);
/* The u8 form's packing: Xb (Kq, P8, 4) of one image (tmp: C·H·W + 4·P8 bytes of scratch, unused for 1x1);
 * Wb and wsum (lithe__qconv8_exact must hold) */
void lithe__qconv_pack_x8(const struct lithe__conv2d *g, const void *X, const lithe__qx *q, uint8_t *tmp, uint8_t *Xb,
                          const lithe__qconv_aux *aux);
void lithe__qconv_pack_w8(int64_t M, int64_t K, const int8_t *W, const int32_t *zw, int64_t n_zw, int32_t *Wb,
                          int32_t *wsum);
#if defined(__x86_64__) || defined(_M_X64)
/* Depthwise's u8 form (qconv8.c; conv_q8 runs it where a kernel below runs and lithe__qconv8_exact
 * holds with R = 0: every w - zw in s8). A kernel runs planes [p0, p1) of X (N, C, H, W; float32, or
 * codes where q->src says so), each plane p (channel m = p mod C) through its u = (x - zx) - xlo
 * bytes — the twin's in
 *   U   padded: byte (r, col) at U[r·ld + col] is input
 *       (r - pad[0], col - pad[1]), the padding's u (-xlo: x - zx = 0) outside the image; ld =
 *       pad[1] + W + pad[3], lithe__qdw8_u_bytes(g) in all (the loads' slack past the last row);
 *   c->Wb the channel's KH rows of ceil(KW / 4) quads of s8 w - zw (kw0 in the lowest byte; 0 past
 *       KW) at m·KH·ceil(KW / 4), and c->wsum (Σ (w - zw) per channel), c->xlo,
 * into the exact int32 sum Σ u·(w - zw) + xlo·wsum[m] (|·| <= 2·256·255·128 < 2^31), then c's epilogue:
 * (float)acc · scale (+ b), the clamp (or the act kernel over the plane), into Y + p·OH·OW — the bits
 * of the float path (the depthwise kernel on x - zx, then epi) — or, Yc not NULL (c->rq set: none, a
 * relu or a clip), requantized (lithe__qconv_code) into Yc + p·OH·OW, Y then unused. */
typedef void (*lithe__qdw8_fn)(const lithe__qconv *c, const struct lithe__conv2d *g, const void *X,
                               const struct lithe__qx *q, const struct lithe__qconv_aux *aux, int64_t p0, int64_t p1,
                               uint8_t *U, void *tmp, float *Y, uint8_t *Yc);
/* the scalar twin (tmp unused; U as above) */
void lithe__qdw8_ref(const lithe__qconv *c, const struct lithe__conv2d *g, const void *X, const struct lithe__qx *q,
                     const struct lithe__qconv_aux *aux, int64_t p0, int64_t p1, uint8_t *U, void *tmp, float *Y,
                     uint8_t *Yc);
/* AVX-512 VNNI + VBMI (qconv_vnni.c; U unused, tmp: lithe__qdw8_tmp_bytes(g)): each plane's u staged
 * in tmp between lithe__qdw8_slack(g) bytes of the padding's u, then per vector of 16 outputs ("same"
 * stride-1 planes: 16 consecutive outputs of the plane, across rows; else 16 of an output row), kernel
 * row and quad of taps one 64-byte load, one vpermb (lane i, byte t: stride[1]·i + dil[1]·t), the
 * padding's u selected where the tap's column leaves the image, one vpdpbusd. For 15·stride[1] +
 * 3·dil[1] <= 63. The kernel where the CPU has AVX512 F, BW, VL, VNNI, VBMI and BMI2; NULL elsewhere. */
lithe__qdw8_fn lithe__qdw8_vnni(void);
/* The depthwise u8 kernel conv_q8 runs for g: VNNI's where lithe__qconv8_best is the VNNI tile and g
 * fits; NULL: the float depthwise path */
lithe__qdw8_fn lithe__qdw8_best(const struct lithe__conv2d *g);
size_t lithe__qdw8_u_bytes(const struct lithe__conv2d *g);
size_t lithe__qdw8_tmp_bytes(const struct lithe__conv2d *g); /* tmp's: a multiple of 64 */
int64_t lithe__qdw8_slack(const struct lithe__conv2d *g); /* the VNNI kernel's bytes around a staged plane */
/* The weights' form: (M, KH, ceil(KW / 4)) quads, then wsum (M) */
void lithe__qdw8_pack_w(int64_t M, int64_t KH, int64_t KW, const int8_t *W, const int32_t *zw, int64_t n_zw,
                        int32_t *Wq, int32_t *wsum);
/* plane x's rows into U (its padding filled by the caller): codes as u, float32 through aux's quant_u8 */
void lithe__qdw8_rows(const struct lithe__conv2d *g, const void *x, const struct lithe__qx *q, uint8_t *U,
                      const struct lithe__qconv_aux *aux);
/* conv_q8's depthwise in this form: every plane through k, split over the CPU pool, into Y (float32)
 * or Yc (codes); ws: lithe__qdw8_ws_bytes(g) bytes */
size_t lithe__qdw8_ws_bytes(const struct lithe__conv2d *g);
void lithe__qdw8_run(const struct lithe__conv2d *g, const void *X, const struct lithe__qx *q, const lithe__qconv *c,
                     const struct lithe__qconv_aux *aux, lithe__qdw8_fn k, void *ws, float *Y, uint8_t *Yc);
#endif
#endif
