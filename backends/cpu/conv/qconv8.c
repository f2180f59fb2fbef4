/* The int8 convolution's u8 x s8 form (qconv.h: Xb, Wb, wsum, xlo): its packing, its exactness check
 * and its scalar twin. x86-64 only: AVX2's vpmaddubsw is the kernel it is for; elsewhere the int16
 * form runs (lithe__qconv8_best is NULL), so WebAssembly and aarch64 builds carry none of it. */
#include "qconv.h"

#include "../../../core/internal.h"
#include "../simd/simd.h"

#include <string.h>

#if defined(__x86_64__) || defined(_M_X64)

static int32_t wq(const int8_t *W, const int32_t *zw, int64_t n_zw, int64_t K, int64_t m, int64_t k) {
    return (int32_t)W[m * K + k] - zw[n_zw == 1 ? 0 : m];
}

/* qconv.h's bound: every w - zw in s8, and per pair (k even, k + 1) of a filter R·(pos sum) <= 32767,
 * R·(neg sum) <= 32768 (vpmaddubsw's two products of a pair into int16 without saturation; R = 0:
 * the s8 range alone, VNNI's condition) */
bool lithe__qconv8_exact(int64_t M, int64_t K, const int8_t *W, const int32_t *zw, int64_t n_zw, int32_t R) {
    for (int64_t m = 0; m < M; m++)
        for (int64_t k = 0; k < K; k += 2) {
            int32_t a = wq(W, zw, n_zw, K, m, k), b = k + 1 < K ? wq(W, zw, n_zw, K, m, k + 1) : 0;
            if (a < -128 || a > 127 || b < -128 || b > 127) return false;
            int64_t pos = (a > 0 ? a : 0) + (b > 0 ? b : 0), neg = (a < 0 ? -a : 0) + (b < 0 ? -b : 0);
            if ((int64_t)R * pos > 32767 || (int64_t)R * neg > 32768) return false;
        }
    return true;
}

void lithe__qconv_pack_w8(int64_t M, int64_t K, const int8_t *W, const int32_t *zw, int64_t n_zw, int32_t *Wb,
                          int32_t *wsum) {
    const int64_t Kq = (K + 3) / 4, Mb = (M + LITHE__QC_MR - 1) / LITHE__QC_MR;
    for (int64_t m = 0; m < Mb * LITHE__QC_MR; m++) {
        int32_t s = 0;
        for (int64_t k = 0; m < M && k < K; k++) s += wq(W, zw, n_zw, K, m, k);
        wsum[m] = s;
    }
    for (int64_t mb = 0; mb < Mb; mb++)
        for (int64_t kq = 0; kq < Kq; kq++)
            for (int64_t r = 0; r < LITHE__QC_MR; r++) {
                const int64_t m = mb * LITHE__QC_MR + r;
                uint32_t v = 0;
                for (int j = 0; j < 4; j++) {
                    const int64_t k = 4 * kq + j;
                    int32_t w = m < M && k < K ? wq(W, zw, n_zw, K, m, k) : 0;
                    v |= (uint32_t)(uint8_t)(int8_t)w << (8 * j);
                }
                memcpy(&Wb[(mb * Kq + kq) * LITHE__QC_MR + r], &v, sizeof v);
            }
}

/* row k of the columns (P values) from the quantized image u: the padding's u where the window
 * leaves the image, the valid run of each output row without a test per pixel */
static void gather_row(const lithe__conv2d *g, const uint8_t *u, int64_t k, uint8_t pad, uint8_t *r) {
    const int64_t c = k / (g->KH * g->KW), kh = k / g->KW % g->KH, kw = k % g->KW, s = g->stride[1];
    const int64_t off = kw * g->dil[1] - g->pad[1]; /* iw = ow·s + off */
    int64_t a, b;
    lithe__qconv_ow_range(g, kw, &a, &b);
    const int64_t lo = a, hi = b; /* (locals whose address was not taken: the loops below vectorize) */
    for (int64_t oh = 0; oh < g->OH; oh++, r += g->OW) {
        const int64_t ih = oh * g->stride[0] - g->pad[0] + kh * g->dil[0];
        if (ih < 0 || ih >= g->H) {
            memset(r, pad, (size_t)g->OW);
            continue;
        }
        const uint8_t *row = u + (c * g->H + ih) * g->W;
        memset(r, pad, (size_t)lo);
        if (s == 1)
            memcpy(r + lo, row + lo + off, (size_t)(hi - lo));
        else if (s == 2) /* (a constant stride: the compiler's vector loop, the even bytes) */
            for (int64_t ow = lo; ow < hi; ow++) r[ow] = row[2 * ow + off];
        else
            for (int64_t ow = lo; ow < hi; ow++) r[ow] = row[ow * s + off];
        memset(r + hi, pad, (size_t)(g->OW - hi));
    }
}

void lithe__qconv_pack_x8(const lithe__conv2d *g, const void *Xv, const lithe__qx *q, uint8_t *tmp, uint8_t *Xb,
                          const lithe__qconv_aux *aux) {
    const float *X = Xv;
    const uint8_t *Xc = Xv; /* q->src: codes */
    const int64_t K = g->C * g->KH * g->KW, Kq = (K + 3) / 4, P = g->OH * g->OW, P8 = (P + 7) / 8 * 8;
    const bool pointwise = g->KH == 1 && g->KW == 1 && g->stride[0] == 1 && g->stride[1] == 1 && !g->pad[0] &&
                           !g->pad[1] && g->OH == g->H && g->OW == g->W;
    if (pointwise) { /* rows 4kq .. 4kq + 3 of X are quad kq: interleaved, quantized */
        for (int64_t kq = 0; kq < Kq; kq++) {
            uint8_t *d = Xb + kq * P8 * 4;
            const int64_t rows = K - 4 * kq < 4 ? K - 4 * kq : 4;
            if (q->src)
                (aux->codes_quads ? aux->codes_quads : lithe__qconv_codes_quads)(P, Xc + 4 * kq * P, P, (int)rows, q, d);
            else
                aux->quant_quads(P, X + 4 * kq * P, P, (int)rows, q, d);
            memset(d + 4 * P, 0, (size_t)(P8 - P) * 4);
        }
        return;
    }
    if (q->src)
        lithe__qconv_codes_u8(g->C * g->H * g->W, Xc, q, tmp);
    else
        aux->quant_u8(g->C * g->H * g->W, X, q, tmp);
    /* per quad: its rows of the columns gathered contiguously (the padding's u where the window
     * leaves the image; rows past K too: their weights are 0), then interleaved into words */
    const uint8_t pad = (uint8_t)(int)-q->lo;
    uint8_t *r = tmp + g->C * g->H * g->W; /* 4 rows of P */
    for (int64_t kq = 0; kq < Kq; kq++) {
        for (int j = 0; j < 4; j++) {
            const int64_t k = 4 * kq + j;
            if (k < K)
                gather_row(g, tmp, k, pad, r + j * P);
            else
                memset(r + j * P, pad, (size_t)P);
        }
        uint8_t *d = Xb + kq * P8 * 4;
        for (int64_t p = 0; p < P; p++) {
            const uint32_t v = (uint32_t)r[p] | (uint32_t)r[P + p] << 8 | (uint32_t)r[2 * P + p] << 16 |
                               (uint32_t)r[3 * P + p] << 24;
            memcpy(d + 4 * p, &v, sizeof v);
        }
        memset(d + 4 * P, pad, (size_t)(P8 - P) * 4);
    }
}

void lithe__qconv8_ref(const lithe__qconv *c, int64_t m0, int64_t m1) {
    for (int64_t m = m0; m < m1 && m < c->M; m++) {
        const int32_t *w = c->Wb + (m / LITHE__QC_MR) * c->Kq * LITHE__QC_MR + m % LITHE__QC_MR;
        float *y = c->Yc ? NULL : c->Y + m * c->P;
        for (int64_t p = 0; p < c->P; p++) {
            uint32_t acc = (uint32_t)c->xlo * (uint32_t)c->wsum[m]; /* wraps as vpaddd does; the sum fits */
            for (int64_t kq = 0; kq < c->Kq; kq++) {
                int8_t h[4];
                memcpy(h, &w[kq * LITHE__QC_MR], sizeof h);
                const uint8_t *x = c->Xb + (kq * c->P8 + p) * 4;
                for (int j = 0; j < 4; j++) acc += (uint32_t)((int32_t)h[j] * x[j]);
            }
            if (y) y[p] = (float)(int32_t)acc;
            else c->Yc[m * c->P + p] = lithe__qconv_code(c, m, (float)(int32_t)acc); /* (qconv.h: the codes) */
        }
        if (y) lithe__qconv_aux_ref.epi(c, m, 1, c->P, y);
    }
}

lithe__qconv_fn lithe__qconv8_best(void) {
    if (lithe__qconv_best() != lithe__qconv_avx2) return NULL;
    lithe__qconv_fn k = !strcmp(lithe__sgemm_kernel_best()->isa, "avx512") ? lithe__qconv8_vnni() : NULL;
    return k ? k : lithe__qconv8_avx2;
}

int32_t lithe__qconv8_range(lithe__qconv_fn k, int32_t R) { return k && k == lithe__qconv8_vnni() ? 0 : R; }

#else
lithe__qconv_fn lithe__qconv8_best(void) { return NULL; }
int32_t lithe__qconv8_range(lithe__qconv_fn k, int32_t R) { return (void)k, R; }
#endif
