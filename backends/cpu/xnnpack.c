/* LITHE_XNNPACK: Debian's XNNPACK (libxnnpack-dev, git 2022-02-16) as the CPU backend's prepared
 * ops (core/internal.h: prepare_op / run_prepared_op), used per op only where it measured faster than
 * lithe's own kernels on this project's machine (AMD Zen 4, AVX-512, 1 thread; bench/xnnpack/ops.c,
 * the table in docs/performance.md). XNNPACK packs weights when an operator is created, so an
 * operator is a prepared form: made by lithe_model_prepare_inference, kept on the weight's storage,
 * dropped with the other prepared forms when lithe writes the weight or its bias.
 *
 * The rule (depthwise: min-of-N CPU time of the op alone, lithe vs XNNPACK in the same loop; the
 * others: inside the models):
 *   - Conv, depthwise (one channel per group) 3x3 or 5x5, stride 1 or 2, padding (k-1)/2 on every
 *     side, no dilation: XNNPACK's NCHW depthwise kernel, on lithe's own layout, only where lithe's
 *     kernel table (lithe__simd(), so LITHE_CPU_ISA too) lacks its 8- and 16-lane depthwise kernels
 *     (dw_lithe_own: SSE2, scalar; NEON, unmeasured). On AVX-512 and AVX2 lithe's in-place 3x3,
 *     channels-in-lanes and long-rows kernels measured faster on every depthwise shape tried: the
 *     mobilenet_v2 layers at 0.31-0.61x of XNNPACK's time (AVX2: 0.40-0.87x, its planes under 8
 *     wide included), 3x3 stride 2 on odd sizes 0.76-0.97x, 5x5 0.38-0.70x (docs/performance.md);
 *     so there prepare makes no operator. Under the SSE2 table XNNPACK's was 1.2-1.6x faster on 3x3
 *     (about even on 5x5), as it was against lithe's kernels before the wide ones. (LITHE_CPU_ISA
 *     picks lithe's table only: XNNPACK ran its own AVX-512 kernels in every one of these.) The
 *     table is chosen once per process, so prepare and run agree; run checks again for a table
 *     forced since (lithe__simd_force, tests);
 *   - Conv, one group (1x1 included): XNNPACK's NHWC convolution with the input and output
 *     transposed around it, by lithe's table (conv_dense_xnn), measured inside the models
 *     (LITHE_GRAPH_PROFILE per node and whole-model runs, LITHE_XNNPACK=0 against 1 in one build,
 *     XNNPACK held to the ISA of lithe's table through cpuinfo's flags, bench/xnnpack/isa_shim.c;
 *     docs/performance.md): AVX-512 never (mobilenet_v2's 1x1 on 7x7 0.82-0.98x of lithe's speed,
 *     where alone they measured 1.07-1.12x faster: the transposes cost 3-43 us in and 3-24 out,
 *     and XNNPACK's GEMM alone is no faster than lithe's whole op with the weights cold; the CNN's
 *     5x5 16->32 0.98-1.01x, its 5x5 1->16 0.92-0.99x, mobilenet_v2's 3x3 3->32 0.99x); AVX2 only
 *     a kernel larger than 1x1 with C*KH*KW < 100, a first layer on few channels (5x5 1->16
 *     1.8-1.9x, 3x3 3->32 1.4x; the 5x5 16->32 0.93-0.96x and the 1x1 layers 0.83-1.01x, one
 *     1.27x, stay lithe's); SSE2 always (1x1 0.98-4.8x, the CNN's 5x5 1.3-2.6x), and so scalar
 *     and NEON (unmeasured: no wider kernels either);
 *   - fully connected (dense layers with no activation or a clamp, lithe__act_clamp; ONNX Gemm
 *     A·Bᵀ + C; a fused Linear):
 *     only when N <= 16 outputs and M >= 16 rows (the 10-way output layers at batch 32 / 64:
 *     1.8-2.1x alone; in the models 1.3x under AVX-512 and AVX2, 1.5x under SSE2, a few us); at
 *     batch 1 and for wide layers lithe's prepared GEMM is faster (1.5x at batch 1, 1.03-1.06x at
 *     64).
 * Everything else, and every op this rule declines, stays on lithe's kernels.
 *
 * Bits: XNNPACK sums in its own order, so its results differ from lithe's in the last bits (within
 * the tolerance of the PyTorch comparisons). Because the FC rule looks at the batch (M), a batch
 * and its rows one at a time may take different paths: they are not bit-identical under this
 * option.
 *
 * Threads: only a 1-thread CPU backend runs XNNPACK's operators (the rule was measured at 1 thread);
 * with more, lithe's own threaded kernels run. A pthreadpool of 2 beside lithe's pool of 2 measured
 * 0.04-0.6x of lithe alone on the bench models on this shared 2-core machine: the two pools' workers
 * spin against each other.
 *
 * The environment variable LITHE_XNNPACK=0 makes prepare create no XNNPACK operator (to measure
 * lithe alone in the same build: bench/xnnpack/ops.c --models). */
#include "kernels.h"
#include "simd/simd.h" /* lithe__simd: the running kernel table */
#include "threadpool.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <xnnpack.h>

enum { V_FC, V_CONV_NCHW, V_CONV_NHWC };

size_t lithe__xnn_runs;

typedef struct xnn_form {
    xnn_operator_t op;
    int variant;
} xnn_form;

/* ---- the rule (the header comment gives the measurements) ---- */

static bool conv_depthwise(const lithe__conv2d *g) {
    int64_t k = g->KH, s = g->stride[0], p = (k - 1) / 2;
    return g->group == g->C && g->group == g->M && g->KW == k && (k == 3 || k == 5) && g->stride[1] == s &&
           (s == 1 || s == 2) && g->pad[0] == p && g->pad[1] == p && g->pad[2] == p && g->pad[3] == p &&
           g->dil[0] == 1 && g->dil[1] == 1;
}
enum { FC_MAX_N = 16, FC_MIN_M = 16, DENSE_MIN_K = 100 };

/* Whether lithe's own 8- and 16-lane depthwise kernels run on the running table (dwconv3x3 and
 * dwconv_lanes come together: AVX2, AVX-512): they measured faster than XNNPACK's NCHW depthwise
 * operator on every depthwise shape tried, so LITHE_XNNPACK then leaves depthwise convolutions to
 * them. Reads no image size, so prepare and run agree (run asks again for a table forced since). */
static bool dw_lithe_own(void) { return lithe__simd()->dwconv3x3 != NULL; }

/* Whether the rule hands the one-group convolution g (1x1 included) to XNNPACK's NHWC operator
 * under the running kernel table (lithe__simd(), LITHE_CPU_ISA included; measured inside the
 * models, the header comment): AVX-512 (16 lanes) never; AVX2 (8) only a kernel larger than 1x1 on
 * few input channels, C·KH·KW < DENSE_MIN_K (a first layer); narrower tables (SSE2, scalar, NEON)
 * always. Reads only the op's key (no image size), so prepare and run agree; the table is chosen
 * once per process, and run asks again for one forced since (lithe__simd_force, tests). */
static bool conv_dense_xnn(const lithe__conv2d *g) {
    int lanes = lithe__simd()->lanes;
    if (lanes >= 16) return false;
    if (lanes >= 8) return g->KH * g->KW > 1 && g->C * g->KH * g->KW < DENSE_MIN_K;
    return true;
}

/* XNNPACK allocates with the C library (xnn_initialize(NULL)): this build frees some blocks with
 * the plain deallocator that it took from the aligned one, so lithe's allocator hook (whose aligned
 * blocks carry a header) cannot serve it. Its out-of-memory status still becomes LITHE_ERR_OOM. */
static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static enum xnn_status init_status;
static void init(void) { init_status = xnn_initialize(NULL); }

static lithe_status xnn_fail(enum xnn_status st, const char *what) {
    switch (st) {
    case xnn_status_out_of_memory: return lithe__oom(what, 0);
    case xnn_status_unsupported_hardware: return lithe__fail(LITHE_ERR_UNSUPPORTED, "XNNPACK %s: unsupported CPU", what);
    case xnn_status_unsupported_parameter:
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "XNNPACK %s: unsupported parameters", what);
    case xnn_status_invalid_parameter: return lithe__fail(LITHE_ERR_VALUE, "XNNPACK %s: invalid parameters", what);
    default: return lithe__fail(LITHE_ERR_INTERNAL, "XNNPACK %s: status %d", what, (int)st);
    }
}

lithe_status lithe__xnn_prepare_op(lithe_backend *be, const lithe__prep_op *op, const lithe_tensor *W,
                                   const lithe_tensor *bias, void **out, size_t *bytes) {
    (void)be;
    *out = NULL;
    *bytes = 0;
    const char *env = lithe__knob(LITHE__KNOB_xnnpack); /* "0": prepare none (to measure lithe alone) */
    if (env && !strcmp(env, "0")) return LITHE_OK;
    pthread_once(&init_once, init);
    if (init_status == xnn_status_unsupported_hardware) return LITHE_OK; /* lithe's kernels, then */
    if (init_status != xnn_status_success) return xnn_fail(init_status, "xnn_initialize");
    const float *w = lithe__tdata(W), *b = bias ? lithe__tdata(bias) : NULL;
    xnn_form f = {NULL, V_FC};
    enum xnn_status st;
    size_t wbytes = (size_t)W->numel * sizeof(float);
    if (op->kind == LITHE__PREP_FC) {
        size_t N = (size_t)W->shape[0], K = (size_t)W->shape[1];
        if (W->ndim != 2 || N > FC_MAX_N) return LITHE_OK;
        st = xnn_create_fully_connected_nc_f32(K, N, K, N, w, b, op->out_min, op->out_max, 0, &f.op);
    } else if (op->kind == LITHE__PREP_CONV2D) {
        const lithe__conv2d *g = &op->conv;
        if (W->ndim != 4 || (g->group != 1 && !conv_depthwise(g)) || g->C != W->shape[1] * g->group) return LITHE_OK;
        if (conv_depthwise(g) && dw_lithe_own()) return LITHE_OK; /* lithe's 8- / 16-lane kernels */
        if (g->group == 1 && !conv_dense_xnn(g)) return LITHE_OK; /* lithe's GEMM / shifted rows */
        uint32_t pt = (uint32_t)g->pad[0], pl = (uint32_t)g->pad[1], pb = (uint32_t)g->pad[2], pr = (uint32_t)g->pad[3];
        uint32_t kh = (uint32_t)g->KH, kw = (uint32_t)g->KW, sh = (uint32_t)g->stride[0], sw = (uint32_t)g->stride[1];
        uint32_t dh = (uint32_t)g->dil[0], dw = (uint32_t)g->dil[1];
        if (conv_depthwise(g)) { /* without XNN_FLAG_DEPTHWISE_CONVOLUTION (which means HWC weights) */
            f.variant = V_CONV_NCHW;
            st = xnn_create_convolution2d_nchw_f32(pt, pr, pb, pl, kh, kw, sh, sw, dh, dw, (uint32_t)g->group, 1, 1, /* W (M, 1, KH, KW): per group (KH, KW) */
                                                   (size_t)g->C, (size_t)g->M, w, b, op->out_min, op->out_max,
                                                   0, &f.op);
        } else { /* one group: NHWC, W (M, C, KH, KW) -> (M, KH, KW, C) */
            f.variant = V_CONV_NHWC;
            float *t = lithe__malloc(wbytes);
            if (!t) return lithe__oom("XNNPACK convolution weights", wbytes);
            int64_t C = g->C, KK = g->KH * g->KW;
            for (int64_t o = 0; o < g->M; o++)
                for (int64_t c = 0; c < C; c++)
                    for (int64_t p = 0; p < KK; p++) t[(o * KK + p) * C + c] = w[(o * C + c) * KK + p];
            st = xnn_create_convolution2d_nhwc_f32(pt, pr, pb, pl, kh, kw, sh, sw, dh, dw, 1, (size_t)C, (size_t)g->M,
                                                   (size_t)C, (size_t)g->M, t, b, op->out_min, op->out_max, 0, &f.op);
            lithe__free(t); /* XNNPACK packed its own copy */
        }
    } else {
        return LITHE_OK;
    }
    if (st == xnn_status_unsupported_parameter) return LITHE_OK; /* not a case this XNNPACK has */
    if (st != xnn_status_success) return xnn_fail(st, op->kind == LITHE__PREP_FC ? "fully connected" : "convolution");
    xnn_form *p = lithe__malloc(sizeof *p);
    if (!p) {
        xnn_delete_operator(f.op);
        return lithe__oom("XNNPACK operator", sizeof *p);
    }
    *p = f;
    *out = p;
    *bytes = wbytes + sizeof *p; /* about the packed weights XNNPACK holds */
    return LITHE_OK;
}

void lithe__xnn_prepared_op_free(lithe_backend *be, void *p) {
    (void)be;
    xnn_form *f = p;
    if (!f) return;
    xnn_delete_operator(f->op);
    lithe__free(f);
}

void lithe__xnn_transpose_planes(const float *x, float *y, int64_t N, int64_t R, int64_t Cc) {
    for (int64_t n = 0; n < N; n++, x += R * Cc, y += R * Cc)
        for (int64_t r0 = 0; r0 < R; r0 += 16)
            for (int64_t c0 = 0; c0 < Cc; c0 += 16) {
                int64_t r1 = r0 + 16 < R ? r0 + 16 : R, c1 = c0 + 16 < Cc ? c0 + 16 : Cc;
                for (int64_t r = r0; r < r1; r++)
                    for (int64_t c = c0; c < c1; c++) y[c * R + r] = x[r * Cc + c];
            }
}

lithe_status lithe__xnn_run_prepared_op(lithe_backend *be, const void *P, const lithe__prep_op *op, const lithe_tensor *X,
                                        lithe_tensor *Y, bool *done) {
    (void)be;
    const xnn_form *f = P;
    *done = false;
    if (!lithe_tensor_is_contiguous(X) || !lithe_tensor_is_contiguous(Y)) return LITHE_OK;
    if (lithe__cpu_threads() > 1) return LITHE_OK; /* lithe's threaded kernels (header comment) */
    pthreadpool_t tp = NULL; /* one thread */
    const float *x = lithe__tdata(X);
    float *y = lithe__tdata(Y);
    enum xnn_status st;
    if (f->variant == V_FC) {
        if (X->ndim != 2 || X->shape[0] < FC_MIN_M) return LITHE_OK;
        st = xnn_setup_fully_connected_nc_f32(f->op, (size_t)X->shape[0], x, y, tp);
        if (st == xnn_status_success) st = xnn_run_operator(f->op, tp);
        if (st != xnn_status_success) return xnn_fail(st, "fully connected");
        *done = true;
        lithe__xnn_runs++;
        return LITHE_OK;
    }
    if (X->ndim != 4 || Y->ndim != 4) return LITHE_OK;
    int64_t N = X->shape[0], C = X->shape[1], H = X->shape[2], W = X->shape[3];
    int64_t M = Y->shape[1], OH = Y->shape[2], OW = Y->shape[3];
    if (f->variant == V_CONV_NCHW) {
        if (dw_lithe_own()) return LITHE_OK; /* a table forced since prepare (tests) */
        st = xnn_setup_convolution2d_nchw_f32(f->op, (size_t)N, (size_t)H, (size_t)W, x, y, tp);
        if (st == xnn_status_success) st = xnn_run_operator(f->op, tp);
        if (st != xnn_status_success) return xnn_fail(st, "convolution (NCHW)");
        *done = true;
        lithe__xnn_runs++;
        return LITHE_OK;
    }
    if (!conv_dense_xnn(&op->conv)) return LITHE_OK; /* a table forced since prepare (tests) */
    size_t nx = C > 1 ? (size_t)(N * C * H * W) : 0, ny = (size_t)(N * M * OH * OW);
    float *xt = lithe__malloc((nx + ny) * sizeof(float));
    if (!xt) return lithe__oom("XNNPACK convolution: NHWC copies", (nx + ny) * sizeof(float));
    float *yt = xt + nx;
    /* (N, C, HW) -> (N, HW, C); one channel: the same layout */
    if (C > 1) lithe__xnn_transpose_planes(x, xt, N, C, H * W);
    st = xnn_setup_convolution2d_nhwc_f32(f->op, (size_t)N, (size_t)H, (size_t)W, C > 1 ? xt : x, yt, tp);
    if (st == xnn_status_success) st = xnn_run_operator(f->op, tp);
    if (st == xnn_status_success) lithe__xnn_transpose_planes(yt, y, N, OH * OW, M); /* (N, OHW, M) -> (N, M, OHW) */
    lithe__free(xt);
    if (st != xnn_status_success) return xnn_fail(st, "convolution (NHWC)");
    *done = true;
    lithe__xnn_runs++;
    return LITHE_OK;
}
