/* The int8 convolution of quantized graphs on the CPU (qconv.h): packing, the scalar twin, the
 * depthwise kernel and the driver behind the backend's conv_q8. */
#include "qconv.h"

#include "../../../core/internal.h"
#include "../gemm/gemm.h"
#include "../simd/simd.h"
#include "../threadpool.h"

#include <math.h>
#include <string.h>

/* ---- packing ---- */

/* x - zx of QuantizeLinear's code (as a float: an integer in [lo, hi]); a loop of these vectorizes */
static inline float qv(float x, const lithe__qx *q) {
    float t = x / q->scale;
    t = t > q->hi ? q->hi : t;
    t = t >= q->lo ? t : q->lo; /* NaN goes to lo */
    return (t + 12582912.0f) - 12582912.0f; /* round half to even (|t| <= 255 < 2^22) */
}

/* ---- the passes' twins (qconv.h's lithe__qconv_aux) ---- */

static void quant_f32_ref(int64_t n, const float *x, const lithe__qx *q, float *y) {
    const lithe__qx qq = *q;
    for (int64_t i = 0; i < n; i++) y[i] = qv(x[i], &qq);
}
static void quant_i16_ref(int64_t n, const float *x, const lithe__qx *q, int16_t *y) {
    const lithe__qx qq = *q;
    for (int64_t i = 0; i < n; i++) y[i] = (int16_t)qv(x[i], &qq);
}
static void quant_pairs_ref(int64_t n, const float *x0, const float *x1, const lithe__qx *q, int16_t *d) {
    const lithe__qx qq = *q;
    for (int64_t i = 0; i < n; i++) d[2 * i] = (int16_t)qv(x0[i], &qq), d[2 * i + 1] = (int16_t)qv(x1[i], &qq);
}
static void epi_ref(const lithe__qconv *c, int64_t r0, int64_t rows, int64_t n, float *y) {
    for (int64_t r = r0; r < r0 + rows; r++, y += n) {
        const int64_t m = r % c->M;
        const float sc = c->scale[m];
        for (int64_t i = 0; i < n; i++) {
            float t = y[i] * sc;
            if (c->b) t += c->b[m];
            y[i] = c->clamp ? lithe__sgemm_clamp1(c->clamp, c->lo, c->hi, t) : t;
        }
        if (!c->clamp && c->act) c->act_fn(c->act, n, y, y);
    }
}
void lithe__qconv_act_rows(const lithe__qconv *c, int64_t m, int64_t p, int64_t n) {
    if (p + n > c->P) n = c->P - p;
    for (int64_t r = m; r < m + LITHE__QC_MR && r < c->M && n > 0; r++) {
        float *y = c->Y + r * c->P + p;
        if (c->clamp)
            for (int64_t i = 0; i < n; i++) y[i] = lithe__sgemm_clamp1(c->clamp, c->lo, c->hi, y[i]);
        else if (c->act)
            c->act_fn(c->act, n, y, y);
    }
}

static void quant_u8_ref(int64_t n, const float *x, const lithe__qx *q, uint8_t *y) {
    const lithe__qx qq = *q;
    for (int64_t i = 0; i < n; i++) y[i] = (uint8_t)(int)(qv(x[i], &qq) - qq.lo);
}
static void quant_quads_ref(int64_t n, const float *x, int64_t stride, int nrows, const lithe__qx *q, uint8_t *d) {
    const lithe__qx qq = *q;
    for (int64_t i = 0; i < n; i++)
        for (int j = 0; j < 4; j++) d[4 * i + j] = j < nrows ? (uint8_t)(int)(qv(x[j * stride + i], &qq) - qq.lo) : 0;
}
/* the codes' twins (qconv.h): integer arithmetic only, loops the compiler vectorizes. int8 codes
 * are stored as their bytes: (int8_t) code; u = code - xmin = code + 128 flips the byte's top bit */
static inline int32_t code_of(const uint8_t *x, int64_t i, int src) { return src == 2 ? (int32_t)(int8_t)x[i] : x[i]; }
void lithe__qconv_codes_f32(int64_t n, const uint8_t *x, const lithe__qx *q, float *y) {
    const int32_t zx = q->zx;
    if (q->src == 2)
        for (int64_t i = 0; i < n; i++) y[i] = (float)((int32_t)(int8_t)x[i] - zx);
    else
        for (int64_t i = 0; i < n; i++) y[i] = (float)((int32_t)x[i] - zx);
}
void lithe__qconv_codes_i16(int64_t n, const uint8_t *x, const lithe__qx *q, int16_t *y) {
    const int32_t zx = q->zx;
    if (q->src == 2)
        for (int64_t i = 0; i < n; i++) y[i] = (int16_t)((int32_t)(int8_t)x[i] - zx);
    else
        for (int64_t i = 0; i < n; i++) y[i] = (int16_t)((int32_t)x[i] - zx);
}
void lithe__qconv_codes_pairs(int64_t n, const uint8_t *x0, const uint8_t *x1, const lithe__qx *q, int16_t *d) {
    const int32_t zx = q->zx;
    if (q->src == 2) /* (a loop per source: each vectorizes) */
        for (int64_t i = 0; i < n; i++)
            d[2 * i] = (int16_t)((int8_t)x0[i] - zx), d[2 * i + 1] = (int16_t)((int8_t)x1[i] - zx);
    else
        for (int64_t i = 0; i < n; i++) d[2 * i] = (int16_t)(x0[i] - zx), d[2 * i + 1] = (int16_t)(x1[i] - zx);
}
void lithe__qconv_codes_u8(int64_t n, const uint8_t *x, const lithe__qx *q, uint8_t *y) {
    const uint8_t flip = q->src == 2 ? 0x80 : 0;
    for (int64_t i = 0; i < n; i++) y[i] = x[i] ^ flip;
}
void lithe__qconv_codes_quads(int64_t n, const uint8_t *x, int64_t stride, int nrows, const lithe__qx *q, uint8_t *d) {
    const uint32_t flip = q->src == 2 ? 0x80u : 0;
    const uint8_t *r0 = x, *r1 = nrows > 1 ? x + stride : NULL, *r2 = nrows > 2 ? x + 2 * stride : NULL,
                  *r3 = nrows > 3 ? x + 3 * stride : NULL;
    for (int64_t i = 0; i < n; i++) {
        const uint32_t v = ((uint32_t)r0[i] ^ flip) | (r1 ? ((uint32_t)r1[i] ^ flip) << 8 : 0) |
                           (r2 ? ((uint32_t)r2[i] ^ flip) << 16 : 0) | (r3 ? ((uint32_t)r3[i] ^ flip) << 24 : 0);
        memcpy(d + 4 * i, &v, sizeof v);
    }
}

static void epi_codes_ref(const lithe__qconv *c, int64_t r0, int64_t rows, int64_t n, float *y, uint8_t *d) {
    for (int64_t r = r0; r < r0 + rows; r++, y += n, d += n)
        for (int64_t i = 0; i < n; i++) d[i] = lithe__qconv_code(c, r % c->M, y[i]);
}

const lithe__qconv_aux lithe__qconv_aux_ref = {quant_f32_ref, quant_i16_ref, quant_pairs_ref, epi_ref, quant_u8_ref,
                                               quant_quads_ref, epi_codes_ref, NULL, NULL, NULL, NULL, NULL};

void lithe__qconv_ow_range(const lithe__conv2d *g, int64_t kw, int64_t *owa, int64_t *owb) {
    const int64_t s = g->stride[1], a = g->pad[1] - kw * g->dil[1];
    *owa = a <= 0 ? 0 : (a + s - 1) / s;
    *owb = g->W - 1 + a < 0 ? 0 : (g->W - 1 + a) / s + 1;
    *owb = *owb > g->OW ? g->OW : *owb;
    *owa = *owa < *owb ? *owa : *owb;
}

void lithe__qconv_pack_x(const lithe__conv2d *g, const void *Xv, const lithe__qx *q, int16_t *tmp, int16_t *Xp,
                         const lithe__qconv_aux *aux) {
    const float *X = Xv;
    const uint8_t *Xc = Xv; /* q->src: codes */
    const int64_t K = g->C * g->KH * g->KW, Kp = (K + 1) / 2, P = g->OH * g->OW, P8 = (P + 7) / 8 * 8;
    const bool pointwise = g->KH == 1 && g->KW == 1 && g->stride[0] == 1 && g->stride[1] == 1 && !g->pad[0] &&
                           !g->pad[1] && g->OH == g->H && g->OW == g->W;
    if (pointwise) { /* rows k and k + 1 of X are the columns' pair kp: interleaved, quantized */
        const lithe__qx qq = *q;
        for (int64_t kp = 0; kp < Kp; kp++) {
            int16_t *d = Xp + kp * P8 * 2;
            if (q->src) {
                const uint8_t *c0 = Xc + 2 * kp * P;
                if (2 * kp + 1 < K)
                    (aux->codes_pairs ? aux->codes_pairs : lithe__qconv_codes_pairs)(P, c0, c0 + P, q, d);
                else
                    for (int64_t p = 0; p < P; p++) d[2 * p] = (int16_t)(code_of(c0, p, q->src) - q->zx), d[2 * p + 1] = 0;
            } else if (2 * kp + 1 < K) {
                aux->quant_pairs(P, X + 2 * kp * P, X + (2 * kp + 1) * P, q, d);
            } else {
                for (int64_t p = 0; p < P; p++) d[2 * p] = (int16_t)qv(X[2 * kp * P + p], &qq), d[2 * p + 1] = 0;
            }
            memset(d + 2 * P, 0, (size_t)(P8 - P) * 2 * sizeof *d);
        }
        return;
    }
    /* the image once as padded int16 rows (qconv.h), then per K pair and output row one gather */
    const int64_t ld = lithe__qconv_pack_ld(g), lw = g->pad[1], rw = ld - lw - g->W, nr = g->C * g->H;
    memset(tmp, 0, 8 * sizeof *tmp);
    tmp += 8;
    for (int64_t r = 0; r < nr; r++) {
        int16_t *d = tmp + r * ld;
        memset(d, 0, (size_t)lw * sizeof *d);
        if (q->src)
            lithe__qconv_codes_i16(g->W, Xc + r * g->W, q, d + lw);
        else
            aux->quant_i16(g->W, X + r * g->W, q, d + lw);
        memset(d + lw + g->W, 0, (size_t)rw * sizeof *d);
    }
    const int16_t *zero = tmp + nr * ld;
    memset(tmp + nr * ld, 0, (size_t)(lithe__qconv_pack_tmp(g) - 8 - nr * ld) * sizeof *tmp);
    void (*gather)(int64_t, const int16_t *, const int16_t *, int64_t, int16_t *) =
        aux->gather_pairs ? aux->gather_pairs : lithe__qconv_gather_pairs;
    const int64_t KK = g->KH * g->KW;
    for (int64_t kp = 0; kp < Kp; kp++) {
        int16_t *d = Xp + kp * P8 * 2;
        for (int64_t oh = 0; oh < g->OH; oh++) {
            const int16_t *r[2];
            for (int j = 0; j < 2; j++) { /* the row k = 2kp + j reads for this output row (zeros past K) */
                const int64_t k = 2 * kp + j, c = k / KK, kh = k % KK / g->KW, kw = k % g->KW;
                const int64_t ih = oh * g->stride[0] - g->pad[0] + kh * g->dil[0];
                r[j] = k >= K || ih < 0 || ih >= g->H ? zero : tmp + (c * g->H + ih) * ld + kw * g->dil[1];
            }
            gather(g->OW, r[0], r[1], g->stride[1], d + 2 * oh * g->OW);
        }
        memset(d + 2 * P, 0, (size_t)(P8 - P) * 2 * sizeof *d);
    }
}

/* tmp's rows: wide enough for every column the window reads (s·(OW - 1) + dil·(KW - 1) from column
 * 0 of the padded row) and for the padding given; tmp: 8 values of slack, the C·H rows, the zero row,
 * 16 values of slack (a SIMD gather's vectors may load a few values before the first it keeps and
 * after the last: zeros, or another row's values, never kept) */
int64_t lithe__qconv_pack_ld(const lithe__conv2d *g) {
    const int64_t a = g->pad[1] + g->W + g->pad[3], b = g->stride[1] * (g->OW - 1) + g->dil[1] * (g->KW - 1) + 1;
    return a > b ? a : b;
}
int64_t lithe__qconv_pack_tmp(const lithe__conv2d *g) { return 8 + (g->C * g->H + 1) * lithe__qconv_pack_ld(g) + 16; }

void lithe__qconv_gather_pairs(int64_t n, const int16_t *r0, const int16_t *r1, int64_t s, int16_t *d) {
    for (int64_t i = 0; i < n; i++) d[2 * i] = r0[s * i], d[2 * i + 1] = r1[s * i];
}

void lithe__qconv_pack_w(int64_t M, int64_t K, const int8_t *W, const int32_t *zw, int64_t n_zw, int32_t *Wp) {
    const int64_t Kp = (K + 1) / 2, Mb = (M + LITHE__QC_MR - 1) / LITHE__QC_MR;
    for (int64_t mb = 0; mb < Mb; mb++)
        for (int64_t kp = 0; kp < Kp; kp++)
            for (int64_t r = 0; r < LITHE__QC_MR; r++) {
                int64_t m = mb * LITHE__QC_MR + r, k = 2 * kp;
                int32_t z = m < M ? zw[n_zw == 1 ? 0 : m] : 0;
                int32_t lo = m < M ? (int32_t)W[m * K + k] - z : 0;
                int32_t hi = m < M && k + 1 < K ? (int32_t)W[m * K + k + 1] - z : 0;
                Wp[(mb * Kp + kp) * LITHE__QC_MR + r] = (int32_t)(((uint32_t)(uint16_t)(int16_t)hi << 16) |
                                                                  (uint32_t)(uint16_t)(int16_t)lo);
            }
}

/* ---- the scalar twin ---- */

void lithe__qconv_ref(const lithe__qconv *c, int64_t m0, int64_t m1) {
    for (int64_t m = m0; m < m1 && m < c->M; m++) {
        const int32_t *w = c->W + (m / LITHE__QC_MR) * c->Kp * LITHE__QC_MR + m % LITHE__QC_MR;
        float *y = c->Yc ? NULL : c->Y + m * c->P;
        for (int64_t p = 0; p < c->P; p++) {
            int32_t acc = 0;
            for (int64_t kp = 0; kp < c->Kp; kp++) {
                int16_t h[2];
                memcpy(h, &w[kp * LITHE__QC_MR], sizeof h);
                const int16_t *x = c->X + (kp * c->P8 + p) * 2;
                acc += (int32_t)h[0] * x[0] + (int32_t)h[1] * x[1];
            }
            if (y) y[p] = (float)acc;
            else c->Yc[m * c->P + p] = lithe__qconv_code(c, m, (float)acc);
        }
        if (y) epi_ref(c, m, 1, c->P, y);
    }
}

/* (In the npm package's importer module too: the core's conv_q8 calls this driver through
 * bindings/js/src/importers_hooks.c; its callees, the act kernel and the pool, are the core's.) */
const lithe__qconv_aux *lithe__qconv_aux_best(void) {
#if defined(__x86_64__) || defined(_M_X64)
    if (lithe__qconv_best() == lithe__qconv_avx2)
        return lithe__qconv8_best() == lithe__qconv8_vnni() ? &lithe__qconv_aux_avx512 : &lithe__qconv_aux_avx2;
#endif
#if defined(__wasm_simd128__)
    if (lithe__qconv_best() == lithe__qconv_wasm) return &lithe__qconv_aux_wasm;
#endif
    return &lithe__qconv_aux_ref;
}

bool lithe__qconv_stores_codes(lithe__qconv_fn k) {
#if defined(__x86_64__) || defined(_M_X64)
    if (k == lithe__qconv8_ref || (k && k == lithe__qconv8_vnni())) return true;
#endif
#if defined(__wasm_simd128__)
    if (k == lithe__qconv_wasm) return true;
#endif
    return k == lithe__qconv_ref;
}

lithe__qconv_fn lithe__qconv_best(void) {
#if defined(__x86_64__) || defined(_M_X64)
    const char *isa = lithe__sgemm_kernel_best()->isa;
    if ((!strcmp(isa, "avx2") || !strcmp(isa, "avx512")) && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return lithe__qconv_avx2;
#endif
#if defined(__wasm_simd128__) /* built in; LITHE_CPU_ISA=scalar (WASI) picks the twin */
    if (!strcmp(lithe__sgemm_kernel_best()->isa, "wasmsimd")) return lithe__qconv_wasm;
#endif
    return lithe__qconv_ref;
}

/* ---- the driver ---- */

enum { CPACK_GEMM = 1, CPACK_DW = 2, CPACK_HEAD = 64 };

/* W's packed form, made once per version of W's storage (lithe__quant's cache), after a 64-byte head
 * whose first int32 says which: 1 int16 pairs (Wp of the (M, K) view), 2 float taps w - zw (M, KH·KW;
 * depthwise), 3 the u8 x s8 form (Wb, then wsum), 4 depthwise's u8 form (dw8: a u8 depthwise kernel
 * runs for g and every w - zw is in s8; lithe__qdw8_pack_w's quads, then wsum). Group 1 takes the u8 form when a u8 kernel runs
 * here (R8 = the range that kernel needs, lithe__qconv8_range: 0 for VNNI, the activation's R for AVX2;
 * -1: none) and lithe__qconv8_exact holds for R8; the
 * cache's key carries R8, so the check runs once per weight version. */
static const int32_t *w_form(const lithe_tensor *W, const lithe__conv2d *g, bool dw, int64_t M, int64_t K, int32_t R8,
                             bool dw8) {
    lithe__quant *q = W->storage->quant;
    const int64_t key = dw ? CPACK_DW + 32 * (int64_t)dw8 : CPACK_GEMM + 16 * (int64_t)(R8 + 1);
    if (q->cpack && q->cpack_kind == key && q->cpack_n == M * K && q->cpack_version == W->storage->version)
        return (const int32_t *)((const char *)q->cpack + CPACK_HEAD);
    const int8_t *w = (const int8_t *)lithe__tdata(W);
    const int64_t Kp = (K + 1) / 2, Kq = (K + 3) / 4, Mb = (M + LITHE__QC_MR - 1) / LITHE__QC_MR;
    int32_t form = dw ? 2 : 1;
#if defined(__x86_64__) || defined(_M_X64)
    if (!dw && R8 >= 0 && lithe__qconv8_exact(M, K, w, q->zero, q->n, R8)) form = 3;
    if (dw8 && lithe__qconv8_exact(M, K, w, q->zero, q->n, 0)) form = 4;
#endif
    const int64_t nq = (g->KW + 3) / 4;
    size_t n = form == 1   ? (size_t)(Mb * Kp * LITHE__QC_MR)
               : form == 2 ? (size_t)(M * K)
               : form == 3 ? (size_t)(Mb * (Kq + 1) * LITHE__QC_MR)
                           : (size_t)(M * (g->KH * nq + 1));
    char *p = lithe__malloc(CPACK_HEAD + n * 4);
    if (!p) return NULL;
    memcpy(p, &form, sizeof form);
    int32_t *d = (int32_t *)(p + CPACK_HEAD);
    if (form == 1) {
        lithe__qconv_pack_w(M, K, w, q->zero, q->n, d);
    } else if (form == 2) {
        float *f = (float *)d;
        for (int64_t m = 0; m < M; m++)
            for (int64_t k = 0; k < K; k++) f[m * K + k] = (float)(w[m * K + k] - q->zero[q->n == 1 ? 0 : m]);
    } else {
#if defined(__x86_64__) || defined(_M_X64)
        if (form == 3) lithe__qconv_pack_w8(M, K, w, q->zero, q->n, d, d + Mb * Kq * LITHE__QC_MR);
        else lithe__qdw8_pack_w(M, g->KH, g->KW, w, q->zero, q->n, d, d + M * g->KH * nq);
#endif
    }
    lithe__free(q->cpack);
    q->cpack = p;
    q->cpack_kind = key;
    q->cpack_n = M * K;
    q->cpack_version = W->storage->version;
    return d;
}

static int32_t w_form_of(const int32_t *d) {
    int32_t form;
    memcpy(&form, (const char *)d - CPACK_HEAD, sizeof form);
    return form;
}

typedef struct qc_task {
    const lithe__qconv *c;
    lithe__qconv_fn fn;
} qc_task;

static void qc_run(void *ctx, int64_t begin, int64_t end) {
    const qc_task *t = ctx;
    t->fn(t->c, begin * LITHE__QC_MR, end * LITHE__QC_MR);
}

/* Depthwise through the float kernel (conv/depthwise.c) on the integers x - zx and w - zw: every
 * product is at most 255·255 and a window of KH·KW <= 256 taps sums below 2^24, so each partial
 * sum is an integer float holds exactly in any order — the int32 sum, bit for bit — then one pass
 * per channel: (float)acc · scale (+ b) and the activation (the twin's epilogue, c's clamp or act).
 * Large planes go by chunks of channels (about 256 KB of xf, at least one channel per thread), each
 * quantized, convolved and finished while in cache: the same bits (each plane's sums are exact
 * whatever the kernel), without xf and Y making a round trip through memory between the passes
 * (mobilenet_v2's 112x112 depthwise layers). xf: N·C·H·W floats of workspace. */
/* depthwise's chunk of channels */
static int64_t dw_chunk(const lithe__conv2d *g) {
    const int64_t HW = g->H * g->W, nt = lithe__pool_threads(lithe__cpu_pool());
    int64_t cc = HW > 0 ? (1 << 16) / HW : g->C;
    return cc < nt ? nt : cc < 1 ? 1 : cc;
}

/* y's float values as codes of yq's grid (conv_q8's Y codes): u = code - ymin, flipped to the int8
 * code's byte */
static void to_codes(const lithe__qconv_aux *aux, int64_t n, const float *y, const lithe__qx *yq, uint8_t *d) {
    aux->quant_u8(n, y, yq, d);
    if (yq->src == 2) lithe__qconv_codes_u8(n, d, yq, d);
}

/* depthwise's epilogue over rows [r0, r0 + rows) of P sums at y: float32 in place, or codes into Yc */
static void dw_out(const lithe__qconv_aux *aux, const lithe__qconv *c, int64_t r0, int64_t rows, int64_t P, float *y,
                   uint8_t *Yc, const lithe__qx *yq) {
    if (Yc && c->rq) {
        (aux->epi_codes ? aux->epi_codes : lithe__qconv_aux_ref.epi_codes)(c, r0, rows, P, y, Yc);
        return;
    }
    aux->epi(c, r0, rows, P, y);
    if (Yc) to_codes(aux, rows * P, y, yq, Yc);
}

/* X's planes [r0, r0 + n) as x - zx in xf: quantized, or the codes less zx */
static void dw_in(const lithe__qconv_aux *aux, const void *X, int64_t r0, int64_t n, const lithe__qx *q, float *xf) {
    if (q->src) (aux->codes_f32 ? aux->codes_f32 : lithe__qconv_codes_f32)(n, (const uint8_t *)X + r0, q, xf);
    else aux->quant_f32(n, (const float *)X + r0, q, xf);
}

/* Depthwise through the float kernel (conv/depthwise.c) on the integers x - zx and w - zw: every
 * product is at most 255·255 and a window of KH·KW <= 256 taps sums below 2^24, so each partial
 * sum is an integer float holds exactly in any order — the int32 sum, bit for bit — then one pass
 * per channel: (float)acc · scale (+ b) and the activation (the twin's epilogue, c's clamp or act).
 * Large planes go by chunks of channels (about 256 KB of xf, at least one channel per thread), each
 * quantized, convolved and finished while in cache: the same bits (each plane's sums are exact
 * whatever the kernel), without xf and Y making a round trip through memory between the passes
 * (mobilenet_v2's 112x112 depthwise layers). xf: N·C·H·W floats of workspace. Yc (codes out, yq's
 * grid): Y is a float scratch of N·M·P values, or of one chunk's planes when chunked, each chunk
 * finished as codes into Yc. */
static lithe_status depthwise(lithe_backend *be, const lithe__conv2d *g, const void *X, const lithe__qx *q,
                              const float *w, const lithe__qconv *c, const lithe__qconv_aux *aux, float *xf, float *Y,
                              uint8_t *Yc, const lithe__qx *yq) {
    const int64_t P = g->OH * g->OW, HW = g->H * g->W, KK = g->KH * g->KW;
    const int64_t cc = dw_chunk(g);
    if (cc >= g->C) {
        dw_in(aux, X, 0, g->N * g->C * HW, q, xf);
        lithe_status s = lithe__cpu_conv2d(be, g, xf, w, NULL, NULL, Y);
        if (s == LITHE_OK) dw_out(aux, c, 0, g->N * g->M, P, Y, Yc, yq);
        return s;
    }
    for (int64_t n = 0; n < g->N; n++)
        for (int64_t c0 = 0; c0 < g->C; c0 += cc) {
            lithe__conv2d gs = *g;
            gs.N = 1, gs.C = gs.M = gs.group = c0 + cc <= g->C ? cc : g->C - c0;
            const int64_t r0 = n * g->C + c0; /* the plane (n, c0) of X and of Y (M = C) */
            float *y = Yc ? Y : Y + r0 * P;
            dw_in(aux, X, r0 * HW, gs.C * HW, q, xf);
            LITHE__TRY(lithe__cpu_conv2d(be, &gs, xf, w + c0 * KK, NULL, NULL, y));
            dw_out(aux, c, r0, gs.C, P, y, Yc ? Yc + r0 * P : NULL, yq);
        }
    return LITHE_OK;
}

bool lithe__qconv_dw3_fits(const lithe__conv2d *g) {
    if (g->KH != 3 || g->KW != 3 || g->dil[0] != 1 || g->dil[1] != 1 || g->pad[0] != 1 || g->pad[1] != 1 ||
        g->stride[0] != g->stride[1] || g->OH <= 0 || g->OW <= 0)
        return false;
    if (g->stride[0] == 1) return g->pad[2] == 1 && g->pad[3] == 1;
    return g->stride[0] == 2 && 2 * g->OH <= g->H && 2 * g->OW <= g->W;
}
int64_t lithe__qconv_dw3_ld(const lithe__conv2d *g) { return (g->W + 2 + 16 + 7) / 8 * 8; }
int64_t lithe__qconv_dw3_buf(const lithe__conv2d *g) { return (g->H + 2) * lithe__qconv_dw3_ld(g); }

/* The driver below takes the aux table's dw3_codes, where it has one, for a 3x3 depthwise from codes
 * to requantized codes (WebAssembly's one pass: the same bits as depthwise() above), over the pool:
 * task i runs its share of the planes in buffer i (zeroed here once: the padding and the slack,
 * which the kernel never writes) */
typedef struct dw3_task {
    const lithe__conv2d *g;
    const uint8_t *X;
    const lithe__qx *q;
    const float *w;
    const lithe__qconv *c;
    const lithe__qconv_aux *aux;
    int16_t *buf;
    int64_t per;
} dw3_task;

static void dw3_run(void *ctx, int64_t i0, int64_t i1) {
    const dw3_task *t = ctx;
    const int64_t np = t->g->N * t->g->C, nb = lithe__qconv_dw3_buf(t->g);
    for (int64_t i = i0; i < i1; i++) {
        int16_t *buf = t->buf + i * nb;
        const int64_t p0 = i * t->per, p1 = p0 + t->per < np ? p0 + t->per : np;
        if (p0 >= p1) continue;
        memset(buf, 0, (size_t)nb * sizeof *buf);
        t->aux->dw3_codes(t->g, t->X, t->q, t->w, t->c, p0, p1, buf);
    }
}

/* c's requantization (qconv.h's lithe__qconv_code) into rq, rb (M each): where the activation is
 * none, a relu or a clip; false otherwise (the float output's codes, quantized: to_codes) */
static bool requant(lithe__qconv *c, const lithe__act *a, const lithe__qx *yq, const float *b, float *rq, float *rb) {
    if (a && c->clamp != LITHE__SGEMM_CLAMP_RELU && c->clamp != LITHE__SGEMM_CLAMP_CLIP) return false;
    for (int64_t m = 0; m < c->M; m++) rq[m] = c->scale[m] / yq->scale, rb[m] = b ? b[m] / yq->scale : 0.0f;
    c->rq = rq, c->rb = rb, c->zy = yq->zx;
    /* a clip's bound v as a code less zy: qv(v, yq), v / sy clamped to the grid and rounded (rounding is
     * monotone, so clamping the value then rounding is rounding then clamping to the rounded bounds) */
    c->clo = !a ? yq->lo : c->clamp == LITHE__SGEMM_CLAMP_RELU ? qv(0.0f, yq) : qv(c->lo, yq);
    c->chi = !a || c->clamp == LITHE__SGEMM_CLAMP_RELU ? yq->hi : qv(c->hi, yq);
    return true;
}

lithe_status lithe__cpu_conv_q8(lithe_backend *be, const lithe__conv2d *g, const lithe_tensor *Xt, float xs, int32_t xz,
                                int32_t xmin, int32_t xmax, const lithe_tensor *W, const lithe_tensor *b,
                                const lithe__act *a, lithe_tensor *Y, bool *done) {
    *done = false;
    const lithe__quant *qw = W->storage->quant;
    const bool dw = g->group == g->C && g->M == g->C && g->group > 1;
    const int64_t K = g->C / g->group * g->KH * g->KW, P = g->OH * g->OW;
    /* X: float32, or codes on its grid (uint8 where xmin = 0, int8 where xmin = -128, carrying xs and
     * xz as their quantization parameters); Y: float32, or codes (uint8 / int8 with one scale and zero
     * point: quantized as QuantizeLinear, as the next fused:QConv would have quantized the float32) */
    const lithe__quant *qx = Xt->dtype == (xmin < 0 ? LITHE_I8 : LITHE_U8) ? Xt->storage->quant : NULL;
    const bool xc = qx && qx->n == 1 && qx->scale[0] == xs && qx->zero[0] == xz && (xmin == 0 || xmin == -128) &&
                    xmax - xmin == 255;
    const lithe__quant *qy = Y->dtype == LITHE_U8 || Y->dtype == LITHE_I8 ? Y->storage->quant : NULL;
    const bool yc = qy && qy->n == 1 && qy->scale[0] > 0.0f && qy->scale[0] < INFINITY &&
                    qy->zero[0] >= (Y->dtype == LITHE_I8 ? -128 : 0) && qy->zero[0] <= (Y->dtype == LITHE_I8 ? 127 : 255);
    if ((Xt->dtype != LITHE_F32 && !xc) || !lithe_tensor_is_contiguous(Xt) || !(xs > 0.0f) || xmin > xz || xz > xmax ||
        xmax - xmin > 255 || W->dtype != LITHE_I8 || !qw || (qw->n != 1 && qw->n != g->M) ||
        !lithe_tensor_is_contiguous(W) || W->offset != 0 || (g->group != 1 && !dw) || K > 32768 ||
        (dw && K > 256) || (b && b->dtype != LITHE_F32) || (Y->dtype != LITHE_F32 && !yc) ||
        !lithe_tensor_is_contiguous(Y) || Xt->offset || Y->offset)
        return LITHE_OK; /* the float path */
    /* the int32 sums: |x - zx| <= 255, |w - zw| <= 255, K <= 32768 terms: below 2^31 */
    const lithe__qx q = {xs, (float)(xmin - xz), (float)(xmax - xz), xc ? (xmin < 0 ? 2 : 1) : 0, xz};
    const int32_t ymin = Y->dtype == LITHE_I8 ? -128 : 0, yz = yc ? qy->zero[0] : 0;
    const lithe__qx yq = {yc ? qy->scale[0] : 1.0f, (float)(ymin - yz), (float)(ymin + 255 - yz), ymin < 0 ? 2 : 1, yz};
    const void *X = lithe__tdata(Xt);
    const int64_t Kp = (K + 1) / 2, Kq = (K + 3) / 4, P8 = (P + 7) / 8 * 8, Mb = (g->M + LITHE__QC_MR - 1) / LITHE__QC_MR;
    lithe__qconv_fn k8 = dw ? NULL : lithe__qconv8_best();
    /* depthwise's u8 form: where a kernel runs for g; codes out only requantized (none, relu, clip) */
#if defined(__x86_64__) || defined(_M_X64)
    lithe__qdw8_fn kdw = dw ? lithe__qdw8_best(g) : NULL;
    int cl0 = 0;
    float lo0, hi0;
    if (yc && a && (!lithe__sgemm_act_clamp(a, &cl0, &lo0, &hi0) || cl0 == LITHE__SGEMM_CLAMP_HSWISH)) kdw = NULL;
#else
    const void *kdw = NULL;
#endif
    const int32_t *wf = w_form(W, g, dw, g->M, K, k8 ? lithe__qconv8_range(k8, xmax - xmin) : -1, kdw != NULL);
    if (!wf) return lithe__oom("int8 convolution", (size_t)(g->M * K) * sizeof(int32_t));
    const bool u8 = w_form_of(wf) == 3, dw8 = w_form_of(wf) == 4;
    /* one workspace from the backend's allocator (kept across calls, as the float conv's): the scales,
     * then the depthwise input, or the columns and the quantized image; then, for codes out, the
     * float32 sums' scratch (depthwise: one chunk's planes; group 1: one image's) */
    const int64_t nt = dw ? g->N * g->C * g->H * g->W : g->C * g->H * g->W;
    const size_t sc_bytes = (4 * (size_t)g->M * sizeof(float) + 63) / 64 * 64; /* scale, rq, rb, ones */
    const size_t cols = u8 ? (size_t)(Kq * P8 * 4) : (size_t)(Kp * P8 * 2) * sizeof(int16_t);
    size_t main_bytes =
        dw ? (size_t)nt * sizeof(float)
           : cols + (u8 ? (size_t)(nt + 4 * P8) : (size_t)lithe__qconv_pack_tmp(g) * sizeof(int16_t));
    const int64_t cc = dw ? dw_chunk(g) : 0;
    size_t yf_bytes = !yc ? 0 : (size_t)(dw ? (cc >= g->C ? g->N * g->M : cc) : g->M) * (size_t)P * sizeof(float);
#if defined(__x86_64__) || defined(_M_X64)
    if (dw8) main_bytes = lithe__qdw8_ws_bytes(g), yf_bytes = 0; /* (its own scratch per chunk of planes) */
#endif
    /* codes in and requantized codes out through the aux table's one-pass 3x3 (a buffer per task) */
    const lithe__qconv_aux *aux = lithe__qconv_aux_best();
    int cl1 = 0; /* requant's condition: no activation, a relu or a clip */
    float lo1, hi1;
    const bool requantizes = yc && (!a || (lithe__sgemm_act_clamp(a, &cl1, &lo1, &hi1) &&
                                           (cl1 == LITHE__SGEMM_CLAMP_RELU || cl1 == LITHE__SGEMM_CLAMP_CLIP)));
    const bool dw3 = dw && !dw8 && xc && requantizes && aux->dw3_codes && lithe__qconv_dw3_fits(g);
    const int64_t dw3_tasks = dw3 ? lithe__pool_threads(lithe__cpu_pool()) : 0;
    if (dw3) main_bytes = (size_t)(dw3_tasks * lithe__qconv_dw3_buf(g)) * sizeof(int16_t), yf_bytes = 0;
    const size_t bytes = sc_bytes + (main_bytes + 63) / 64 * 64 + yf_bytes;
    void *ws = NULL;
    LITHE__TRY(be->ops->alloc(be, bytes, &ws));
    float *scale = ws;
    for (int64_t m = 0; m < g->M; m++) scale[m] = xs * qw->scale[qw->n == 1 ? 0 : m];
    lithe__qconv c = {g->M, Kp, P, P8, NULL, wf, scale, b ? (const float *)lithe__tdata(b) : NULL, NULL,
                      .act = a, .act_fn = lithe__cpu_act};
    if (!lithe__sgemm_act_clamp(a, &c.clamp, &c.lo, &c.hi)) c.clamp = 0;
    float *ones = scale + 3 * g->M;
    for (int64_t m = 0; m < g->M; m++) ones[m] = 1.0f;
    c.yq = &yq;
    const bool rqo = yc && requant(&c, a, &yq, c.b, scale + g->M, scale + 2 * g->M);
    lithe_status s = LITHE_OK;
    char *buf = (char *)ws + sc_bytes;
    uint8_t *Yc = yc ? (uint8_t *)lithe__tdata(Y) : NULL;
    float *Yf = yc ? (float *)(buf + (main_bytes + 63) / 64 * 64) : (float *)lithe__tdata(Y);
    if (dw8) {
#if defined(__x86_64__) || defined(_M_X64)
        c.xlo = xmin - xz, c.Wb = wf, c.wsum = wf + g->M * g->KH * ((g->KW + 3) / 4);
        lithe__qdw8_run(g, X, &q, &c, aux, kdw, buf, yc ? NULL : Yf, Yc);
#endif
    } else if (dw3) { /* (rqo holds: requantizes is requant's condition) */
        const int64_t np = g->N * g->C, per = (np + dw3_tasks - 1) / dw3_tasks;
        dw3_task t = {g, X, &q, (const float *)wf, &c, aux, (int16_t *)buf, per};
        c.Yc = Yc;
        lithe__pool_for(lithe__cpu_pool(), dw3_tasks, 1, dw3_run, &t);
    } else if (dw) {
        s = depthwise(be, g, X, &q, (const float *)wf, &c, aux, (float *)buf, Yf, Yc, &yq);
    } else {
        const double ops = 2.0 * (double)g->M * (double)K * (double)P;
        lithe__pool *pool = ops >= 2e6 ? lithe__cpu_pool() : NULL;
        qc_task t = {&c, lithe__qconv_best()};
        c.X = (const int16_t *)buf;
        if (u8) {
#if defined(__x86_64__) || defined(_M_X64)
            c.W = NULL, c.Kq = Kq, c.Xb = (const uint8_t *)buf, c.Wb = wf, c.wsum = wf + Mb * Kq * LITHE__QC_MR;
            c.xlo = xmin - xz;
            t.fn = k8;
#endif
        }
        /* a kernel this file does not know may store without c's activation: it runs as a pass after
         * (test_qconv's kernel checks, with activations, say whether a new kernel applies it) */
        bool act_after = false;
#if defined(__x86_64__) || defined(_M_X64)
        act_after = a && t.fn != lithe__qconv_ref && t.fn != lithe__qconv_avx2 && t.fn != lithe__qconv8_avx2 &&
                    t.fn != lithe__qconv8_vnni();
#elif defined(__wasm_simd128__)
        act_after = a && t.fn != lithe__qconv_ref && t.fn != lithe__qconv_wasm;
#else
        act_after = a && t.fn != lithe__qconv_ref;
#endif
        /* requantized codes out: written by the kernel, or (sums) its float sums then epi_codes */
        const bool fused = rqo && lithe__qconv_stores_codes(t.fn), sums = rqo && !fused;
        lithe__qconv cn = c;
        if (act_after || sums) cn.clamp = 0, cn.act = NULL, t.c = &cn;
        if (sums) cn.scale = ones, cn.b = NULL;
        for (int64_t n = 0; n < g->N; n++) {
            const void *xn = (const char *)X + n * g->C * g->H * g->W * (xc ? 1 : 4);
#if defined(__x86_64__) || defined(_M_X64)
            if (u8) lithe__qconv_pack_x8(g, xn, &q, (uint8_t *)buf + cols, (uint8_t *)buf, aux);
            else
#endif
                lithe__qconv_pack_x(g, xn, &q, (int16_t *)(buf + cols), (int16_t *)buf, aux);
            c.Y = cn.Y = yc ? Yf : Yf + n * g->M * P;
            c.Yc = cn.Yc = fused ? Yc + n * g->M * P : NULL;
            lithe__pool_for(pool, Mb, 1, qc_run, &t);
            if (sums) (aux->epi_codes ? aux->epi_codes : lithe__qconv_aux_ref.epi_codes)(&c, 0, g->M, P, Yf, Yc + n * g->M * P);
            if (act_after && yc && !rqo) lithe__cpu_act(a, g->M * P, Yf, Yf);
            if (yc && !rqo) to_codes(aux, g->M * P, Yf, &yq, Yc + n * g->M * P);
        }
        if (act_after && !yc) lithe__cpu_act(a, g->N * g->M * P, Yf, Yf);
    }
    be->ops->free(be, ws);
    if (s == LITHE_OK) *done = true;
    return s;
}
