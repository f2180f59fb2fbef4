/* The int8 convolution of quantized graphs on the CPU (qconv.h): packing, the scalar twin, the
 * depthwise kernel and the driver behind the backend's conv_q8. */
#include "qconv.h"

#include "../../../core/internal.h"
#include "../gemm/gemm.h"
#include "../simd/simd.h"
#include "../threadpool.h"

#include <string.h>

/* ---- packing ---- */

/* x - zx of QuantizeLinear's code (as a float: an integer in [lo, hi]); a loop of these vectorizes */
static inline float qv(float x, const lithe__qx *q) {
    float t = x / q->scale;
    t = t > q->hi ? q->hi : t;
    t = t >= q->lo ? t : q->lo; /* NaN goes to lo */
    return (t + 12582912.0f) - 12582912.0f; /* round half to even (|t| <= 255 < 2^22) */
}

void lithe__qconv_pack_x(const lithe__conv2d *g, const float *X, const lithe__qx *q, int16_t *tmp, int16_t *Xp) {
    const int64_t K = g->C * g->KH * g->KW, Kp = (K + 1) / 2, P = g->OH * g->OW, P8 = (P + 7) / 8 * 8;
    const lithe__qx qq = *q;
    const bool pointwise = g->KH == 1 && g->KW == 1 && g->stride[0] == 1 && g->stride[1] == 1 && !g->pad[0] &&
                           !g->pad[1] && g->OH == g->H && g->OW == g->W;
    if (pointwise) { /* rows k and k + 1 of X are the columns' pair kp: interleaved, quantized */
        for (int64_t kp = 0; kp < Kp; kp++) {
            const float *x0 = X + 2 * kp * P, *x1 = x0 + P;
            int16_t *d = Xp + kp * P8 * 2;
            if (2 * kp + 1 < K)
                for (int64_t p = 0; p < P; p++) {
                    d[2 * p] = (int16_t)qv(x0[p], &qq);
                    d[2 * p + 1] = (int16_t)qv(x1[p], &qq);
                }
            else
                for (int64_t p = 0; p < P; p++) d[2 * p] = (int16_t)qv(x0[p], &qq), d[2 * p + 1] = 0;
            memset(d + 2 * P, 0, (size_t)(P8 - P) * 2 * sizeof *d);
        }
        return;
    }
    const int64_t n = g->C * g->H * g->W;
    for (int64_t i = 0; i < n; i++) tmp[i] = (int16_t)qv(X[i], &qq);
    memset(Xp, 0, (size_t)(Kp * P8 * 2) * sizeof *Xp); /* past P, the odd K's last half, padding */
    for (int64_t c = 0; c < g->C; c++)
        for (int64_t kh = 0; kh < g->KH; kh++)
            for (int64_t kw = 0; kw < g->KW; kw++) {
                int64_t k = (c * g->KH + kh) * g->KW + kw;
                int16_t *d = Xp + (k >> 1) * P8 * 2 + (k & 1);
                for (int64_t oh = 0; oh < g->OH; oh++) {
                    int64_t ih = oh * g->stride[0] - g->pad[0] + kh * g->dil[0];
                    if (ih < 0 || ih >= g->H) continue; /* zeros: the zero point's code */
                    const int16_t *row = tmp + (c * g->H + ih) * g->W;
                    for (int64_t ow = 0; ow < g->OW; ow++) {
                        int64_t iw = ow * g->stride[1] - g->pad[1] + kw * g->dil[1];
                        if (iw >= 0 && iw < g->W) d[2 * (oh * g->OW + ow)] = row[iw];
                    }
                }
            }
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
        for (int64_t p = 0; p < c->P; p++) {
            int32_t acc = 0;
            for (int64_t kp = 0; kp < c->Kp; kp++) {
                int16_t h[2];
                memcpy(h, &w[kp * LITHE__QC_MR], sizeof h);
                const int16_t *x = c->X + (kp * c->P8 + p) * 2;
                acc += (int32_t)h[0] * x[0] + (int32_t)h[1] * x[1];
            }
            float t = (float)acc * c->scale[m];
            if (c->b) t += c->b[m];
            c->Y[m * c->P + p] = t;
        }
    }
}

/* (In the npm package's importer module too: the core's conv_q8 calls this driver through
 * bindings/js/src/importers_hooks.c; its callees, the act kernel and the pool, are the core's.) */
lithe__qconv_fn lithe__qconv_best(void) {
#if defined(__x86_64__) || defined(_M_X64)
    const char *isa = lithe__sgemm_kernel_best()->isa;
    if ((!strcmp(isa, "avx2") || !strcmp(isa, "avx512")) && __builtin_cpu_supports("avx2")) return lithe__qconv_avx2;
#endif
#if defined(__wasm_simd128__) /* built in; LITHE_CPU_ISA=scalar (WASI) picks the twin */
    if (!strcmp(lithe__sgemm_kernel_best()->isa, "wasmsimd")) return lithe__qconv_wasm;
#endif
    return lithe__qconv_ref;
}

/* ---- the driver ---- */

enum { CPACK_GEMM = 1, CPACK_DW = 2 };

/* W's packed form (kind CPACK_GEMM: Wp of its (M, K) view; CPACK_DW: float taps w - zw, (M, KH·KW)),
 * made once per version of W's storage */
static const void *w_form(const lithe_tensor *W, int kind, int64_t M, int64_t K) {
    lithe__quant *q = W->storage->quant;
    if (q->cpack && q->cpack_kind == kind && q->cpack_n == M * K && q->cpack_version == W->storage->version)
        return q->cpack;
    const int64_t Kp = (K + 1) / 2, Mb = (M + LITHE__QC_MR - 1) / LITHE__QC_MR;
    size_t bytes = kind == CPACK_GEMM ? (size_t)(Mb * Kp * LITHE__QC_MR) * sizeof(int32_t) : (size_t)(M * K) * sizeof(float);
    void *p = lithe__malloc(bytes ? bytes : 1);
    if (!p) return NULL;
    const int8_t *w = (const int8_t *)lithe__tdata(W);
    if (kind == CPACK_GEMM) {
        lithe__qconv_pack_w(M, K, w, q->zero, q->n, p);
    } else {
        float *d = p;
        for (int64_t m = 0; m < M; m++)
            for (int64_t k = 0; k < K; k++) d[m * K + k] = (float)(w[m * K + k] - q->zero[q->n == 1 ? 0 : m]);
    }
    lithe__free(q->cpack);
    q->cpack = p;
    q->cpack_kind = kind;
    q->cpack_n = M * K;
    q->cpack_version = W->storage->version;
    return p;
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
 * sum is an integer float holds exactly in any order — the int32 sum, bit for bit — then
 * (float)acc · scale (+ b) per channel. */
static lithe_status depthwise(lithe_backend *be, const lithe__conv2d *g, const float *X, const lithe__qx *q,
                              const float *w, const float *scale, const float *b, float *Y) {
    const int64_t n = g->N * g->C * g->H * g->W, P = g->OH * g->OW;
    float *xf = lithe__malloc((size_t)(n > 0 ? n : 1) * sizeof *xf);
    if (!xf) return lithe__oom("int8 depthwise convolution", (size_t)n * sizeof *xf);
    const lithe__qx qq = *q;
    for (int64_t i = 0; i < n; i++) xf[i] = qv(X[i], &qq);
    lithe_status s = lithe__cpu_conv2d(be, g, xf, w, NULL, NULL, Y);
    lithe__free(xf);
    for (int64_t i = 0; s == LITHE_OK && i < g->N * g->M; i++) {
        const int64_t c = i % g->M;
        const float sc = scale[c], bc = b ? b[c] : 0.0f;
        float *y = Y + i * P;
        if (b)
            for (int64_t p = 0; p < P; p++) y[p] = y[p] * sc + bc;
        else
            for (int64_t p = 0; p < P; p++) y[p] = y[p] * sc;
    }
    return s;
}

lithe_status lithe__cpu_conv_q8(lithe_backend *be, const lithe__conv2d *g, const lithe_tensor *Xt, float xs, int32_t xz,
                                int32_t xmin, int32_t xmax, const lithe_tensor *W, const lithe_tensor *b,
                                const lithe__act *a, lithe_tensor *Y, bool *done) {
    *done = false;
    const lithe__quant *qw = W->storage->quant;
    const bool dw = g->group == g->C && g->M == g->C && g->group > 1;
    const int64_t K = g->C / g->group * g->KH * g->KW, P = g->OH * g->OW;
    if (Xt->dtype != LITHE_F32 || !lithe_tensor_is_contiguous(Xt) || !(xs > 0.0f) || xmin > xz || xz > xmax ||
        xmax - xmin > 255 || W->dtype != LITHE_I8 || !qw || (qw->n != 1 && qw->n != g->M) ||
        !lithe_tensor_is_contiguous(W) || W->offset != 0 || (g->group != 1 && !dw) || K > 32768 ||
        (dw && K > 256) || (b && b->dtype != LITHE_F32) || Y->dtype != LITHE_F32 || !lithe_tensor_is_contiguous(Y))
        return LITHE_OK; /* the float path */
    /* the int32 sums: |x - zx| <= 255, |w - zw| <= 255, K <= 32768 terms: below 2^31 */
    const lithe__qx q = {xs, (float)(xmin - xz), (float)(xmax - xz)};
    const float *X = (const float *)lithe__tdata(Xt);
    float *Yf = (float *)lithe__tdata(Y);
    const float *bf = b ? (const float *)lithe__tdata(b) : NULL;
    float *scale = lithe__malloc((size_t)g->M * sizeof *scale);
    const void *wf = w_form(W, dw ? CPACK_DW : CPACK_GEMM, g->M, K);
    if (!scale || !wf) {
        lithe__free(scale);
        return lithe__oom("int8 convolution", (size_t)(g->M * K) * sizeof(int32_t));
    }
    for (int64_t m = 0; m < g->M; m++) scale[m] = xs * qw->scale[qw->n == 1 ? 0 : m];
    lithe_status s = LITHE_OK;
    if (dw) {
        s = depthwise(be, g, X, &q, wf, scale, bf, Yf);
    } else {
        const int64_t Kp = (K + 1) / 2, P8 = (P + 7) / 8 * 8, Mb = (g->M + LITHE__QC_MR - 1) / LITHE__QC_MR;
        const int64_t nx = Kp * P8 * 2, nt = g->C * g->H * g->W; /* the quantized image (windows other than 1x1) */
        int16_t *Xp = lithe__malloc((size_t)(nx + nt > 0 ? nx + nt : 1) * sizeof *Xp);
        if (!Xp) s = lithe__oom("int8 convolution columns", (size_t)(nx + nt) * sizeof *Xp);
        const double ops = 2.0 * (double)g->M * (double)K * (double)P;
        lithe__pool *pool = ops >= 2e6 ? lithe__cpu_pool() : NULL;
        for (int64_t n = 0; s == LITHE_OK && n < g->N; n++) {
            lithe__qconv_pack_x(g, X + n * g->C * g->H * g->W, &q, Xp + nx, Xp);
            lithe__qconv c = {g->M, Kp, P, P8, Xp, wf, scale, bf, Yf + n * g->M * P};
            qc_task t = {&c, lithe__qconv_best()};
            lithe__pool_for(pool, Mb, 1, qc_run, &t);
        }
        lithe__free(Xp);
    }
    lithe__free(scale);
    if (s == LITHE_OK && a) lithe__cpu_act(a, g->N * g->M * P, Yf, Yf);
    if (s == LITHE_OK) *done = true;
    return s;
}
