/* The int8 convolution's AVX-512 VNNI kernel (qconv.h's u8 x s8 form: Xb, Wb, wsum, xlo, packed as
 * for the AVX2 tile): MR = 4 filters × 64 pixels a tile (16 zmm accumulators), per K quad one
 * vpdpbusd of 16 pixels' u8 quads by the filter's broadcast s8 quad. vpdpbusd sums the four
 * products into int32 with no int16 step and no saturation, so the tile is exact wherever every
 * w - zw is in s8 (lithe__qconv8_exact with R = 0): |Σ u·(w - zw)| <= 255·128·K and
 * |xlo·wsum| <= 255·128·K, each at most 2^30 for K <= 32768 (conv_q8's bound), their sum below
 * 2^31 — the twin's int32 sum bit for bit for full-range weights too (lithe quantize's [-127, 127],
 * which the AVX2 u8 tile cannot take). The epilogue is the AVX2 tile's on 16 lanes: (float)acc ·
 * scale (+ b), avx2_clamp.h's operations (relu, clip, HardSwish) in the store, a masked store of a
 * row's last pixels, the act kernel over the tile's rows otherwise; with codes out (c->Yc) each row
 * requantized in the store (lithe__qconv_code: one multiply, add, clamp, vcvtps2dq, vpmovdb), no
 * float32 written; and the quantizing passes and the depthwise epilogue on 16 lanes
 * (lithe__qconv_aux_avx512). Built with -mavx512f
 * -mavx512vnni -mfma, x86-64 only; chosen (lithe__qconv8_best) where the float GEMM runs AVX-512
 * and the CPU has AVX512-VNNI. */
#include "qconv.h"

#include "../../../core/internal.h"

#if defined(__x86_64__) && defined(__AVX512F__) && defined(__AVX512VNNI__) && defined(__FMA__)
#include <immintrin.h>
#include <string.h>

/* avx2_clamp.h's lithe__avx2_clamp, the same operations in the same order on 16 lanes */
static inline __attribute__((always_inline)) __m512 clamp16(__m512 t, int cl, __m512 lo, __m512 hi) {
    if (cl == LITHE__SGEMM_CLAMP_RELU) return _mm512_add_ps(_mm512_max_ps(_mm512_setzero_ps(), t), _mm512_setzero_ps());
    if (cl == LITHE__SGEMM_CLAMP_HSWISH) {
        const __m512 six = _mm512_set1_ps(6.0f), r6 = _mm512_set1_ps(1.0f / 6.0f);
        __m512 h = _mm512_max_ps(_mm512_setzero_ps(), _mm512_min_ps(six, _mm512_add_ps(t, _mm512_set1_ps(3.0f))));
        __m512 q = _mm512_mul_ps(h, r6);
        return _mm512_mul_ps(t, _mm512_fmadd_ps(_mm512_fnmadd_ps(q, six, h), r6, q));
    }
    return _mm512_max_ps(lo, _mm512_min_ps(hi, _mm512_add_ps(t, _mm512_setzero_ps())));
}

/* lanes [0, n) of 16 (n may be <= 0 or > 16) */
static inline __mmask16 lanes(int64_t n) { return n >= 16 ? (__mmask16)0xFFFF : n <= 0 ? 0 : (__mmask16)((1u << n) - 1); }

/* lithe__qconv_code on 16 lanes of t = (float)acc (or a float sum): · rq + rb, clamped to [clo, chi]
 * (NaN to clo: vminps gives its second operand, t, for a NaN; vmaxps then clo), vcvtps2dq rounding
 * half to even (the default MXCSR rounding), + zy, the bytes by vpmovdb's truncation */
typedef struct rqv {
    __m512 rq, rb, clo, chi;
    __m512i zy;
} rqv;
static inline rqv rq_of(const lithe__qconv *c, int64_t m) {
    return (rqv){_mm512_set1_ps(c->rq[m]), _mm512_set1_ps(c->rb[m]), _mm512_set1_ps(c->clo), _mm512_set1_ps(c->chi),
                 _mm512_set1_epi32(c->zy)};
}
static inline __attribute__((always_inline)) __m512i rq16(__m512 t, const rqv *r) {
    t = _mm512_add_ps(_mm512_mul_ps(t, r->rq), r->rb);
    return _mm512_add_epi32(_mm512_cvtps_epi32(_mm512_max_ps(_mm512_min_ps(r->chi, t), r->clo)), r->zy);
}
/* n (may be <= 0 or > 16) of the 16 codes to d: a plain 16-byte store when whole (the masked store to
 * memory ran ~1.6x slower on Zen 5) */
static inline __attribute__((always_inline)) void put16(uint8_t *d, int64_t n, __m512i k) {
    if (n >= 16) _mm_storeu_si128((__m128i *)d, _mm512_cvtepi32_epi8(k));
    else if (n > 0) _mm512_mask_cvtepi32_storeu_epi8(d, lanes(n), k);
}

/* filter m's row of the tile as codes (c->Yc): nv vectors of 16 pixels from p, stored up to P */
static inline __attribute__((always_inline)) void store_codes_row(const lithe__qconv *c, int64_t m, int64_t p, int nv,
                                                                  const __m512i *acc) {
    if (m >= c->M) return;
    const __m512i fix = _mm512_set1_epi32(c->xlo * c->wsum[m]);
    const rqv r = rq_of(c, m);
    uint8_t *d = c->Yc + m * c->P + p;
    for (int v = 0; v < nv; v++)
        put16(d + 16 * v, c->P - p - 16 * v, rq16(_mm512_cvtepi32_ps(_mm512_add_epi32(acc[v], fix)), &r));
}

/* filter m's row of the tile: nv vectors of 16 pixels from p, stored up to P */
static inline __attribute__((always_inline)) void store_row(const lithe__qconv *c, int64_t m, int64_t p, int nv,
                                                            const __m512i *acc, __m512 lo, __m512 hi) {
    if (m >= c->M) return;
    const __m512i fix = _mm512_set1_epi32(c->xlo * c->wsum[m]);
    const __m512 sc = _mm512_set1_ps(c->scale[m]);
    float *y = c->Y + m * c->P + p;
    for (int v = 0; v < nv; v++) {
        __m512 t = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(acc[v], fix)), sc);
        if (c->b) t = _mm512_add_ps(t, _mm512_set1_ps(c->b[m]));
        if (c->clamp) t = clamp16(t, c->clamp, lo, hi);
        if (p + 16 * v + 16 <= c->P)
            _mm512_storeu_ps(y + 16 * v, t);
        else
            _mm512_mask_storeu_ps(y + 16 * v, lanes(c->P - p - 16 * v), t);
    }
}

#define STEP(acc, x, w) acc = _mm512_dpbusd_epi32(acc, x, w)

/* 4 filters (from m) × nv vectors of 16 pixels (from p; the last vector's lanes past P8 unread) */
static inline __attribute__((always_inline)) void tile(const lithe__qconv *c, int64_t m, int64_t p, int nv,
                                                       __mmask16 last, __m512 lo, __m512 hi) {
    const int64_t Kq = c->Kq, P8 = c->P8;
    const int32_t *w = c->Wb + (m / LITHE__QC_MR) * Kq * LITHE__QC_MR;
    __m512i a0[4], a1[4], a2[4], a3[4];
    for (int v = 0; v < nv; v++) a0[v] = a1[v] = a2[v] = a3[v] = _mm512_setzero_si512();
    const uint8_t *x = c->Xb + p * 4;
    for (int64_t kq = 0; kq < Kq; kq++, x += P8 * 4, w += LITHE__QC_MR) {
        __m512i xv[4];
        for (int v = 0; v < nv; v++)
            xv[v] = v + 1 < nv ? _mm512_loadu_si512(x + 64 * v) : _mm512_maskz_loadu_epi32(last, x + 64 * v);
        const __m512i w0 = _mm512_set1_epi32(w[0]), w1 = _mm512_set1_epi32(w[1]), w2 = _mm512_set1_epi32(w[2]),
                      w3 = _mm512_set1_epi32(w[3]);
        for (int v = 0; v < nv; v++) {
            STEP(a0[v], xv[v], w0);
            STEP(a1[v], xv[v], w1);
            STEP(a2[v], xv[v], w2);
            STEP(a3[v], xv[v], w3);
        }
    }
    if (c->Yc) {
        store_codes_row(c, m, p, nv, a0), store_codes_row(c, m + 1, p, nv, a1);
        store_codes_row(c, m + 2, p, nv, a2), store_codes_row(c, m + 3, p, nv, a3);
        return;
    }
    store_row(c, m, p, nv, a0, lo, hi), store_row(c, m + 1, p, nv, a1, lo, hi);
    store_row(c, m + 2, p, nv, a2, lo, hi), store_row(c, m + 3, p, nv, a3, lo, hi);
    if (!c->clamp && c->act) lithe__qconv_act_rows(c, m, p, 16 * nv);
}

static void qconv8_vnni(const lithe__qconv *c, int64_t m0, int64_t m1) {
    const __m512 lo = _mm512_set1_ps(c->lo), hi = _mm512_set1_ps(c->hi);
    const int64_t P8 = c->P8;
    for (int64_t m = m0; m < m1 && m < c->M; m += LITHE__QC_MR) {
        int64_t p = 0;
        for (; p + 64 <= P8; p += 64) tile(c, m, p, 4, 0xFFFF, lo, hi);
        const int64_t r = P8 - p; /* a multiple of 8 below 64 */
        const __mmask16 last = lanes(r - (r - 1) / 16 * 16);
        switch ((r + 15) / 16) {
        case 3: tile(c, m, p, 3, last, lo, hi); break;
        case 2: tile(c, m, p, 2, last, lo, hi); break;
        case 1: tile(c, m, p, 1, last, lo, hi); break;
        case 4: tile(c, m, p, 4, last, lo, hi); break;
        default: break;
        }
    }
}

lithe__qconv_fn lithe__qconv8_vnni(void) {
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vnni") ? qconv8_vnni : NULL;
}

/* ---- the passes (qconv.h's lithe__qconv_aux) on 16 lanes: qconv_avx2.c's operations, each lane
 * the twin's bits; vdivps on zmm is twice ymm's rate per value (Zen 5), and the division is what the
 * quantizing passes wait on. The int16 form's passes stay AVX2's (that form does not run here). ---- */

/* qconv_avx2.c's qv8 on 16 lanes */
static inline __m512 qv16(__m512 x, __m512 s, __m512 lo, __m512 hi) {
    const __m512 r = _mm512_set1_ps(12582912.0f);
    __m512 t = _mm512_max_ps(_mm512_min_ps(hi, _mm512_div_ps(x, s)), lo);
    return _mm512_sub_ps(_mm512_add_ps(t, r), r);
}

/* qv16's value as an int32: vcvtps2dq rounds the clamped quotient half to even (the default MXCSR
 * rounding, as the twin's magic-number add rounds), so the byte passes below skip the float round
 * trip: two operations less per 16 values, ~16 % of a quantizing pass (Zen 5) */
static inline __m512i qk16(__m512 x, __m512 s, __m512 lo, __m512 hi) {
    return _mm512_cvtps_epi32(_mm512_max_ps(_mm512_min_ps(hi, _mm512_div_ps(x, s)), lo));
}

static void quant_f32(int64_t n, const float *x, const lithe__qx *q, float *y) {
    const __m512 s = _mm512_set1_ps(q->scale), lo = _mm512_set1_ps(q->lo), hi = _mm512_set1_ps(q->hi);
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 k = lanes(n - i);
        _mm512_mask_storeu_ps(y + i, k, qv16(_mm512_maskz_loadu_ps(k, x + i), s, lo, hi));
    }
}

static void quant_i16(int64_t n, const float *x, const lithe__qx *q, int16_t *y) {
    lithe__qconv_aux_avx2.quant_i16(n, x, q, y);
}
static void quant_pairs(int64_t n, const float *x0, const float *x1, const lithe__qx *q, int16_t *d) {
    lithe__qconv_aux_avx2.quant_pairs(n, x0, x1, q, d);
}

/* One vector of the epilogue: the row's scale, its bias, the fused clamp */
static inline __m512 epi16(const lithe__qconv *c, const float *y, __mmask16 k, __m512 sc, __m512 b, __m512 lo,
                           __m512 hi) {
    __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(k, y), sc);
    if (c->b) v = _mm512_add_ps(v, b);
    return c->clamp ? clamp16(v, c->clamp, lo, hi) : v;
}

static void epi(const lithe__qconv *c, int64_t r0, int64_t rows, int64_t n, float *y) {
    const __m512 lo = _mm512_set1_ps(c->lo), hi = _mm512_set1_ps(c->hi);
    for (int64_t r = r0; r < r0 + rows; r++, y += n) {
        const int64_t m = r % c->M;
        const __m512 sc = _mm512_set1_ps(c->scale[m]), b = _mm512_set1_ps(c->b ? c->b[m] : 0.0f);
        for (int64_t i = 0; i < n; i += 16) {
            const __mmask16 k = lanes(n - i);
            _mm512_mask_storeu_ps(y + i, k, epi16(c, y + i, k, sc, b, lo, hi));
        }
        if (!c->clamp && c->act) c->act_fn(c->act, n, y, y);
    }
}

static void quant_u8(int64_t n, const float *x, const lithe__qx *q, uint8_t *y) {
    const __m512 s = _mm512_set1_ps(q->scale), lo = _mm512_set1_ps(q->lo), hi = _mm512_set1_ps(q->hi);
    const __m512i loi = _mm512_set1_epi32((int32_t)q->lo);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) { /* u in [0, 255]: vpmovdb's truncation keeps it (to a register, then a
                                    * plain store: the masked store to memory ran ~1.6x slower on Zen 5) */
        __m512i u = _mm512_sub_epi32(qk16(_mm512_loadu_ps(x + i), s, lo, hi), loi);
        _mm_storeu_si128((__m128i *)(y + i), _mm512_cvtepi32_epi8(u));
    }
    if (i < n) {
        const __mmask16 k = lanes(n - i);
        __m512i u = _mm512_sub_epi32(qk16(_mm512_maskz_loadu_ps(k, x + i), s, lo, hi), loi);
        _mm512_mask_cvtepi32_storeu_epi8(y + i, k, u);
    }
}

static void quant_quads(int64_t n, const float *x, int64_t stride, int nrows, const lithe__qx *q, uint8_t *d) {
    const __m512 s = _mm512_set1_ps(q->scale), lo = _mm512_set1_ps(q->lo), hi = _mm512_set1_ps(q->hi);
    const __m512i loi = _mm512_set1_epi32((int32_t)q->lo);
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 k = lanes(n - i);
        __m512i v = _mm512_setzero_si512();
        for (int j = 0; j < nrows; j++) {
            __m512i u = _mm512_sub_epi32(qk16(_mm512_maskz_loadu_ps(k, x + j * stride + i), s, lo, hi), loi);
            v = _mm512_or_si512(v, _mm512_slli_epi32(u, 8 * j));
        }
        _mm512_mask_storeu_epi32(d + 4 * i, k, v);
    }
}

/* lithe__qconv_code of each float sum (rq16) */
static void epi_codes(const lithe__qconv *c, int64_t r0, int64_t rows, int64_t n, float *y, uint8_t *d) {
    for (int64_t r = r0; r < r0 + rows; r++, y += n, d += n) {
        const rqv q = rq_of(c, r % c->M);
        for (int64_t i = 0; i < n; i += 16) put16(d + i, n - i, rq16(_mm512_maskz_loadu_ps(lanes(n - i), y + i), &q));
    }
}

static void codes_quads(int64_t n, const uint8_t *x, int64_t stride, int nrows, const lithe__qx *q, uint8_t *d) {
    const __m512i flip = _mm512_set1_epi32(q->src == 2 ? 0x80 : 0);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512i v = _mm512_setzero_si512();
        for (int j = 0; j < nrows; j++) {
            const __m512i b = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(x + j * stride + i)));
            v = _mm512_or_si512(v, _mm512_slli_epi32(_mm512_xor_si512(b, flip), 8 * j));
        }
        _mm512_storeu_si512(d + 4 * i, v);
    }
    if (i < n) lithe__qconv_codes_quads(n - i, x + i, stride, nrows, q, d + 4 * i);
}

/* lithe__qconv_codes_f32 on 16 lanes: the bytes widened (signed for int8), less zx, converted (exact) */
static void codes_f32(int64_t n, const uint8_t *x, const lithe__qx *q, float *y) {
    const __m512i z = _mm512_set1_epi32(q->zx);
    const bool s8 = q->src == 2;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m128i b = _mm_loadu_si128((const __m128i *)(x + i));
        const __m512i v = s8 ? _mm512_cvtepi8_epi32(b) : _mm512_cvtepu8_epi32(b);
        _mm512_storeu_ps(y + i, _mm512_cvtepi32_ps(_mm512_sub_epi32(v, z)));
    }
    if (i < n) lithe__qconv_codes_f32(n - i, x + i, q, y + i);
}

const lithe__qconv_aux lithe__qconv_aux_avx512 = {quant_f32, quant_i16, quant_pairs, epi, quant_u8, quant_quads,
                                                  epi_codes, codes_quads, NULL, codes_f32, NULL, NULL};

/* ---- depthwise's u8 form (qconv.h: lithe__qdw8_fn), no staging array: per plane its u bytes (codes
 * copied, the int8 byte flipped; float32 quantized) between slack of the padding's u, the next plane
 * staged while one is convolved (its stores retire before its loads: a kernel that wrote per-row
 * quads and read them back at once waited on their forwarding, 1.1-2x slower); then per vector of 16
 * outputs — "same" stride-1 planes: 16 consecutive outputs of the plane, across rows (output p reads
 * input p + (kh·d0 - pad0)·W + kw·d1 - pad1: 7x7 planes' 49 outputs in 4 vectors); others 16 of one
 * output row — per kernel row and quad j of taps one 64-byte load at the vector's window, one vpermb
 * (lane i, byte t: the byte s1·i + d1·t), a bitwise select of the padding's u where the tap's column
 * leaves the image (a column mask per vector or column block, built per call in tmp; the rows above
 * and below read the slack), one vpdpbusd by the quad's broadcast s8 weights (0 past KW): the exact
 * int32 sum (qconv.h), 8 vectors in flight; then the epilogue of the tiles above (store_row,
 * epi_codes) and a masked store of the vector's outputs. ---- */
enum { DW8_NV = 8 }; /* vectors in flight: each accumulator's chain is KH·ceil(KW / 4) vpdpbusd long */
#define DWF __attribute__((target("avx512bw,avx512vl,avx512vbmi,bmi2")))

/* The vectors of outputs: "same" stride-1 planes (flat) 16 consecutive outputs of the plane, across
 * rows (vector v: outputs 16v + i; its column masks those of vector v mod nmask, the period of 16v mod
 * W: W / gcd(W, 16), 7 for mobilenet_v2's 7- to 112-wide planes); others 16 of one output row (vector
 * v = oh·nb + b: (oh, 16b + i), nb = ceil(OW / 16); one mask per column block). By rows,
 * mobilenet_v2's 56x56 and 112x112 "same" layers ran 1.1x and 1.3x slower than flat (Zen 5, in the
 * model): more vectors, a partial one per row. */
typedef struct dwf {
    bool flat;
    int64_t nb, nvec, nmask;
} dwf;
static dwf dwf_of(const lithe__conv2d *g) {
    const bool flat = g->stride[0] == 1 && g->stride[1] == 1 && g->OH == g->H && g->OW == g->W;
    const int64_t nb = (g->OW + 15) / 16, nvec = flat ? (g->OH * g->OW + 15) / 16 : g->OH * nb;
    int64_t a = g->W, b = 16; /* gcd(W, 16) */
    while (b) {
        const int64_t r = a % b;
        a = b, b = r;
    }
    const int64_t per = g->W / a;
    return (dwf){flat, nb, nvec, flat ? (per < nvec ? per : nvec) : nb};
}

/* the column masks: M[k·nq + j]'s byte 4i + t set where lane i of vector k (flat; else of any vector of
 * column block k) and tap 4j + t (below KW) read a column of the image; rows above and below the
 * image read the staged plane's slack, the padding's u */
static DWF void dwf_masks(const lithe__conv2d *g, const dwf *f, __m512i *M) {
    const int64_t nq = (g->KW + 3) / 4, W = g->W;
    const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512 wf = _mm512_set1_ps((float)W);
    const __m512i Wv = _mm512_set1_epi32((int32_t)W), s1 = _mm512_set1_epi32((int32_t)g->stride[1]);
    const uint64_t nib = 0x1111111111111111ull;
    for (int64_t k = 0; k < f->nmask; k++) {
        const __m512i p = _mm512_add_epi32(iota, _mm512_set1_epi32((int32_t)(16 * k)));
        __m512i ow = p; /* (row vectors: the output column) */
        if (f->flat) { /* oh = floor((p + 1/2) / W): the quotient is at least 1 / (2W) from an integer, its
                        * rounding error below 16·2^-24 (p < 16·nmask <= 16W) */
            const __m512i oh = _mm512_cvttps_epi32(
                _mm512_div_ps(_mm512_add_ps(_mm512_cvtepi32_ps(p), _mm512_set1_ps(0.5f)), wf));
            ow = _mm512_sub_epi32(p, _mm512_mullo_epi32(oh, Wv));
        }
        const __m512i iw = _mm512_mullo_epi32(ow, s1);
        for (int64_t j = 0; j < nq; j++) {
            uint64_t cm = 0;
            for (int t = 0; t < 4 && 4 * j + t < g->KW; t++) {
                const int32_t off = (int32_t)((4 * j + t) * g->dil[1] - g->pad[1]);
                const __m512i col = _mm512_add_epi32(iw, _mm512_set1_epi32(off));
                cm |= _pdep_u64(_mm512_cmplt_epu32_mask(col, Wv), nib << t);
            }
            _mm512_storeu_si512(M + k * nq + j, _mm512_movm_epi8(cm)); /* (tmp: any alignment) */
        }
    }
}

/* plane p of X as u into d (the int8 codes flipped; float32 quantized) */
static DWF void dwf_stage(const lithe__conv2d *g, const void *X, const lithe__qx *q, int64_t p, uint8_t *d) {
    const int64_t HW = g->H * g->W;
    if (!q->src) {
        quant_u8(HW, (const float *)X + p * HW, q, d);
        return;
    }
    const uint8_t *x = (const uint8_t *)X + p * HW;
    const __m512i flip = _mm512_set1_epi8(q->src == 2 ? (char)0x80 : 0);
    int64_t i = 0;
    for (; i + 64 <= HW; i += 64) _mm512_storeu_si512(d + i, _mm512_xor_si512(_mm512_loadu_si512(x + i), flip));
    if (i < HW) {
        const __mmask64 k = ((__mmask64)1 << (HW - i)) - 1;
        _mm512_mask_storeu_epi8(d + i, k, _mm512_xor_si512(_mm512_maskz_loadu_epi8(k, x + i), flip));
    }
}

/* the next nv vectors from v0 of the plane staged at x: exact sums, then the epilogue (dw8_block's) */
static inline __attribute__((always_inline)) DWF void dwf_block(const lithe__qconv *c, const lithe__conv2d *g,
                                                                 const dwf *f, const uint8_t *x, const __m512i *M,
                                                                 const int32_t *wq, int64_t v0, int nv, __m512i idx,
                                                                 __m512i padv, __m512i fix, __m512 sc, __m512 b,
                                                                 __m512 lo, __m512 hi, const rqv *rq, float *y,
                                                                 uint8_t *yc) {
    const int64_t W = g->W, nq = (g->KW + 3) / 4;
    int64_t xo[DW8_NV], at[DW8_NV], n[DW8_NV], mk[DW8_NV];
    /* (one division a block: the row and column block, or the mask's phase) */
    int64_t oh = f->flat ? 0 : v0 / f->nb, bk = f->flat ? v0 % f->nmask : v0 % f->nb;
    for (int v = 0; v < nv; v++) {
        if (f->flat) {
            xo[v] = at[v] = 16 * (v0 + v), n[v] = g->OH * g->OW - at[v], mk[v] = bk;
            if (++bk == f->nmask) bk = 0;
        } else {
            xo[v] = oh * g->stride[0] * W + 16 * bk * g->stride[1], at[v] = oh * g->OW + 16 * bk;
            n[v] = g->OW - 16 * bk, mk[v] = bk;
            if (++bk == f->nb) bk = 0, oh++;
        }
    }
    __m512i acc[DW8_NV], cm[DW8_NV];
    for (int v = 0; v < nv; v++) acc[v] = fix;
    for (int64_t j = 0; j < nq; j++) {
        for (int v = 0; v < nv; v++) cm[v] = _mm512_loadu_si512(M + mk[v] * nq + j);
        for (int64_t kh = 0; kh < g->KH; kh++) {
            const __m512i wv = _mm512_set1_epi32(wq[kh * nq + j]);
            const uint8_t *xr = x + (kh * g->dil[0] - g->pad[0]) * W + 4 * j * g->dil[1] - g->pad[1];
            for (int v = 0; v < nv; v++) { /* cm's bytes: the permuted tap, else the padding's u */
                const __m512i t = _mm512_permutexvar_epi8(idx, _mm512_loadu_si512(xr + xo[v]));
                acc[v] = _mm512_dpbusd_epi32(acc[v], _mm512_ternarylogic_epi32(cm[v], t, padv, 0xCA), wv);
            }
        }
    }
    /* a row's last vector (n < 16) stored whole but at the plane's end: its lanes past the row write the
     * next row's first outputs, which that row's vectors store after it (masked stores ran ~1.4x slower
     * by rows of 56, Zen 5) */
    const int64_t P = g->OH * g->OW;
    for (int v = 0; v < nv; v++) {
        const int64_t nw = at[v] + 16 <= P ? 16 : n[v];
        if (yc) {
            put16(yc + at[v], nw, rq16(_mm512_cvtepi32_ps(acc[v]), rq));
            continue;
        }
        __m512 t = _mm512_mul_ps(_mm512_cvtepi32_ps(acc[v]), sc);
        if (c->b) t = _mm512_add_ps(t, b);
        if (c->clamp) t = clamp16(t, c->clamp, lo, hi);
        if (nw == 16) _mm512_storeu_ps(y + at[v], t);
        else _mm512_mask_storeu_ps(y + at[v], lanes(nw), t);
    }
}

static DWF void qdw8_vnni(const lithe__qconv *c, const lithe__conv2d *g, const void *X, const lithe__qx *q,
                          const lithe__qconv_aux *aux, int64_t p0, int64_t p1, uint8_t *U, void *tmp, float *Y,
                          uint8_t *Yc) {
    const int64_t HW = g->H * g->W, P = g->OH * g->OW, nq = (g->KW + 3) / 4;
    const dwf f = dwf_of(g);
    const int64_t nvec = f.nvec;
    (void)aux, (void)U;
    __m512i *M = tmp;
    /* two staging buffers (plane p + 1 staged while p is convolved: its stores retire before its
     * loads), each the plane between lithe__qdw8_slack(g) bytes of the padding's u */
    const int64_t S = lithe__qdw8_slack(g), bb = (2 * S + HW + 63) / 64 * 64;
    uint8_t *xb = (uint8_t *)tmp + f.nmask * nq * 64;
    dwf_masks(g, &f, M);
    memset(xb, (uint8_t)(int)-q->lo, (size_t)(2 * bb));
    uint8_t ib[64];
    for (int i = 0; i < 16; i++)
        for (int t = 0; t < 4; t++) /* <= 63 (lithe__qdw8_best) */
            ib[4 * i + t] = (uint8_t)(g->stride[1] * i + g->dil[1] * t);
    const __m512i idx = _mm512_loadu_si512(ib), padv = _mm512_set1_epi8((char)(uint8_t)(int)-q->lo);
    const __m512 lo = _mm512_set1_ps(c->lo), hi = _mm512_set1_ps(c->hi);
    if (p0 < p1) dwf_stage(g, X, q, p0, xb + S);
    for (int64_t p = p0; p < p1; p++) {
        if (p + 1 < p1) dwf_stage(g, X, q, p + 1, xb + ((p + 1 - p0) & 1) * bb + S);
        const uint8_t *x = xb + ((p - p0) & 1) * bb + S;
        const int64_t m = p % g->C;
        const int32_t *wq = c->Wb + m * g->KH * nq;
        const __m512i fix = _mm512_set1_epi32(c->xlo * c->wsum[m]);
        const __m512 sc = _mm512_set1_ps(c->scale[m]), b = _mm512_set1_ps(c->b ? c->b[m] : 0.0f);
        float *y = Yc ? NULL : Y + p * P;
        uint8_t *yc = Yc ? Yc + p * P : NULL;
        const rqv rq = Yc ? rq_of(c, m) : (rqv){0};
        int64_t v = 0;
#define DWF_BLOCK(nv) dwf_block(c, g, &f, x, M, wq, v, nv, idx, padv, fix, sc, b, lo, hi, &rq, y, yc)
        for (; v + DW8_NV <= nvec; v += DW8_NV) DWF_BLOCK(DW8_NV);
        switch (nvec - v) {
        case 7: DWF_BLOCK(7); break;
        case 6: DWF_BLOCK(6); break;
        case 5: DWF_BLOCK(5); break;
        case 4: DWF_BLOCK(4); break;
        case 3: DWF_BLOCK(3); break;
        case 2: DWF_BLOCK(2); break;
        case 1: DWF_BLOCK(1); break;
        default: break;
        }
#undef DWF_BLOCK
        if (!Yc && !c->clamp && c->act) c->act_fn(c->act, P, y, y);
    }
}

lithe__qdw8_fn lithe__qdw8_vnni(void) {
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vnni") &&
                   __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
                   __builtin_cpu_supports("avx512vbmi") && __builtin_cpu_supports("bmi2")
               ? qdw8_vnni
               : NULL;
}

#else
lithe__qconv_fn lithe__qconv8_vnni(void) { return 0; }
const lithe__qconv_aux lithe__qconv_aux_avx512 = {0}; /* never chosen: lithe__qconv8_vnni is NULL */
lithe__qdw8_fn lithe__qdw8_vnni(void) { return 0; }
#endif
