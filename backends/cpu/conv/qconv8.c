/* The int8 convolution's u8 x s8 form (qconv.h: Xb, Wb, wsum, xlo): its packing, its exactness check
 * and its scalar twin. x86-64 only: AVX2's vpmaddubsw is the kernel it is for; elsewhere the int16
 * form runs (lithe__qconv8_best is NULL), so WebAssembly and aarch64 builds carry none of it. */
#include "qconv.h"

#include "../../../core/internal.h"
#include "../simd/simd.h"
#include "../threadpool.h"

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

/* ---- depthwise's u8 form (qconv.h: lithe__qdw8_*) ---- */

static int64_t dw8_rows(const lithe__conv2d *g) { return g->pad[0] + g->H + g->pad[2]; }
static int64_t dw8_ld(const lithe__conv2d *g) { return g->pad[1] + g->W + g->pad[3]; }

size_t lithe__qdw8_u_bytes(const lithe__conv2d *g) {
    /* the padded plane, then the slack of a 64-byte load at the last output's last quad of taps */
    return (size_t)(dw8_rows(g) * dw8_ld(g) + g->OW * g->stride[1] + 4 * ((g->KW + 3) / 4) * g->dil[1] + 64 + 63) / 64 *
           64;
}

size_t lithe__qdw8_tmp_bytes(const lithe__conv2d *g) {
    /* the VNNI kernel's column masks (one vector per vector of outputs, or per column block, and quad of
     * taps), then two staged planes, each between lithe__qdw8_slack(g) bytes */
    const size_t nq = (size_t)(g->KW + 3) / 4;
    return (size_t)((g->OH * g->OW + 15) / 16 + (g->OW + 15) / 16) * nq * 64 +
           2 * (size_t)((2 * lithe__qdw8_slack(g) + g->H * g->W + 63) / 64 * 64);
}

int64_t lithe__qdw8_slack(const lithe__conv2d *g) {
    /* a plane's windows start at most pad[0]·W + pad[1] bytes before it and end at most pad[2]·W + pad[3]
     * + 16·stride[1] + 4·ceil(KW / 4)·dil[1] + 64 after it (rows past the image by at most pad[2], a
     * vector's columns past W by at most pad[3] + 16·stride[1], flat vectors past P by 15) */
    const int64_t pr = g->pad[0] > g->pad[2] ? g->pad[0] : g->pad[2];
    const int64_t s = (pr + 1) * g->W + g->pad[1] + g->pad[3] + 16 * g->stride[1] + 4 * ((g->KW + 3) / 4) * g->dil[1];
    return (s + 128 + 63) / 64 * 64;
}

void lithe__qdw8_pack_w(int64_t M, int64_t KH, int64_t KW, const int8_t *W, const int32_t *zw, int64_t n_zw,
                        int32_t *Wq, int32_t *wsum) {
    const int64_t nq = (KW + 3) / 4, K = KH * KW;
    for (int64_t m = 0; m < M; m++) {
        int32_t s = 0;
        for (int64_t kh = 0; kh < KH; kh++)
            for (int64_t j = 0; j < nq; j++) {
                uint32_t v = 0;
                for (int t = 0; t < 4; t++) {
                    const int64_t kw = 4 * j + t;
                    const int32_t w = kw < KW ? wq(W, zw, n_zw, K, m, kh * KW + kw) : 0;
                    s += w;
                    v |= (uint32_t)(uint8_t)(int8_t)w << (8 * t);
                }
                memcpy(&Wq[(m * KH + kh) * nq + j], &v, sizeof v);
            }
        wsum[m] = s;
    }
}

void lithe__qdw8_rows(const lithe__conv2d *g, const void *x, const lithe__qx *q, uint8_t *U,
                      const lithe__qconv_aux *aux) {
    const int64_t ld = dw8_ld(g);
    uint8_t *d = U + g->pad[0] * ld + g->pad[1];
    for (int64_t ih = 0; ih < g->H; ih++, d += ld) {
        if (q->src)
            lithe__qconv_codes_u8(g->W, (const uint8_t *)x + ih * g->W, q, d);
        else
            aux->quant_u8(g->W, (const float *)x + ih * g->W, q, d);
    }
}

void lithe__qdw8_ref(const lithe__qconv *c, const lithe__conv2d *g, const void *X, const lithe__qx *q,
                     const lithe__qconv_aux *aux, int64_t p0, int64_t p1, uint8_t *U, void *tmp, float *Y,
                     uint8_t *Yc) {
    const int64_t nq = (g->KW + 3) / 4, P = g->OH * g->OW, HW = g->H * g->W, ld = dw8_ld(g);
    (void)tmp;
    memset(U, (uint8_t)(int)-q->lo, lithe__qdw8_u_bytes(g));
    for (int64_t p = p0; p < p1; p++) {
        const int64_t m = p % g->C;
        const int32_t *wq = c->Wb + m * g->KH * nq;
        float *y = Yc ? NULL : Y + p * P;
        lithe__qdw8_rows(g, (const char *)X + p * HW * (q->src ? 1 : 4), q, U, aux);
        for (int64_t oh = 0; oh < g->OH; oh++)
            for (int64_t ow = 0; ow < g->OW; ow++) {
                uint32_t acc = (uint32_t)c->xlo * (uint32_t)c->wsum[m]; /* wraps as vpaddd does; the sum fits */
                for (int64_t kh = 0; kh < g->KH; kh++)
                    for (int64_t kw = 0; kw < g->KW; kw++) {
                        int8_t h[4];
                        memcpy(h, &wq[kh * nq + kw / 4], sizeof h);
                        const uint8_t u =
                            U[(oh * g->stride[0] + kh * g->dil[0]) * ld + ow * g->stride[1] + kw * g->dil[1]];
                        acc += (uint32_t)((int32_t)h[kw % 4] * u);
                    }
                if (y) y[oh * g->OW + ow] = (float)(int32_t)acc;
                else Yc[p * P + oh * g->OW + ow] = lithe__qconv_code(c, m, (float)(int32_t)acc);
            }
        if (y) lithe__qconv_aux_ref.epi(c, m, 1, P, y);
    }
}

lithe__qdw8_fn lithe__qdw8_best(const lithe__conv2d *g) {
    const lithe__qconv_fn k8 = lithe__qconv8_best();
    /* (mobilenet_v2's depthwise layers, 7x7 to 112x112 and strides 1 and 2, 1.1-2x faster than the float
     * path or a kernel staging per-row quads, Zen 5; but output rows below 8 wide off "same" stride-1
     * planes, whose vectors by rows fill under half their lanes: 14x14 -> 7x7 stride 2 ran 1.3x slower
     * than the float path) */
    if (!k8 || k8 != lithe__qconv8_vnni() || 15 * g->stride[1] + 3 * g->dil[1] > 63) return NULL;
    const bool same = g->stride[0] == 1 && g->stride[1] == 1 && g->OH == g->H && g->OW == g->W;
    if (!same && g->OW < 8) return NULL;
    return lithe__qdw8_vnni();
}

/* a chunk's scratch: U (the twin's), then tmp (the VNNI kernel's) */
static size_t dw8_chunk_bytes(const lithe__conv2d *g) {
    return lithe__qdw8_u_bytes(g) + lithe__qdw8_tmp_bytes(g);
}
static int64_t dw8_chunks(const lithe__conv2d *g) {
    const int64_t nt = lithe__pool_threads(lithe__cpu_pool()), planes = g->N * g->C;
    return nt < planes ? nt : planes < 1 ? 1 : planes;
}
size_t lithe__qdw8_ws_bytes(const lithe__conv2d *g) { return (size_t)dw8_chunks(g) * dw8_chunk_bytes(g); }

typedef struct dw8_task {
    const lithe__conv2d *g;
    const void *X;
    const lithe__qx *q;
    const lithe__qconv *c;
    const lithe__qconv_aux *aux;
    lithe__qdw8_fn k;
    char *ws;
    int64_t per; /* planes per chunk */
    float *Y;
    uint8_t *Yc;
} dw8_task;

/* planes [begin, end): whole chunks, so the chunk of begin owns its scratch for the call */
static void dw8_planes(void *ctx, int64_t begin, int64_t end) {
    const dw8_task *t = ctx;
    char *U = t->ws + (size_t)(begin / t->per) * dw8_chunk_bytes(t->g);
    t->k(t->c, t->g, t->X, t->q, t->aux, begin, end, (uint8_t *)U, U + lithe__qdw8_u_bytes(t->g), t->Y,
         t->Yc);
}

void lithe__qdw8_run(const lithe__conv2d *g, const void *X, const lithe__qx *q, const lithe__qconv *c,
                     const lithe__qconv_aux *aux, lithe__qdw8_fn k, void *ws, float *Y, uint8_t *Yc) {
    const int64_t planes = g->N * g->C, chunks = dw8_chunks(g);
    const double ops = 2.0 * (double)planes * (double)(g->OH * g->OW * g->KH * g->KW);
    dw8_task t = {g, X, q, c, aux, k, ws, (planes + chunks - 1) / chunks, Y, Yc};
    lithe__pool_for_chunks(ops >= 2e6 && chunks > 1 ? lithe__cpu_pool() : NULL, planes, chunks, dw8_planes, &t);
}

#else
lithe__qconv_fn lithe__qconv8_best(void) { return NULL; }
int32_t lithe__qconv8_range(lithe__qconv_fn k, int32_t R) { return (void)k, R; }
#endif
