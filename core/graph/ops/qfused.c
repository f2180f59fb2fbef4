/* ONNX operators of the graph layer (core/graph/ops/), issue 24 item 4: the nodes QDQ fusion
 * (core/graph/fuse_qdq.c) makes.
 *
 *   fused:QLinear  Q -> DQ of the activation, DQ(int8 weight) -> MatMul / Gemm (+ bias, + Relu / Clip):
 *                  the activation rounded to its QuantizeLinear's grid (clamp included), then the
 *                  gemm_q8 primitive with the weight kept as int8 (per output channel or per tensor
 *                  scales, zero points 0), bias and activation in its epilogue
 *   fused:QConv    the same around a Conv: on the CPU the backend's conv_q8 (group 1 and depthwise,
 *                  straight into NCHW: backends/cpu/conv/qconv.h); elsewhere group 1 as im2col + gemm_q8 one image at a time (the
 *                  result transposed to NCHW); depthwise and grouped ones decode the int8 weight
 *                  into a float scratch per run and run the conv2d primitive
 *   fused:FakeQuant a Q -> DQ pair no int8 kernel absorbed (around Add, pooling, ...): one float pass
 *
 * A fused:QConv whose only reader is a fused:QConv, one of the two depthwise (fuse_qdq.c's
 * chain_codes), hands it the reader's codes (int8 / uint8 carrying its scale and zero point) on the
 * CPU, the reader's conv_q8 packing them as they are: conv_q8's requantization of the int32 sums
 * (backends/cpu/conv/qconv.h: acc · (sx·sw / sy) + b / sy rounded, onnxruntime's QLinearConv rule;
 * within one code of the reader's QuantizeLinear of the float32, equal but at ties), or that
 * QuantizeLinear's (where conv_q8 declines, or the activation is not a relu / clip).
 *
 * On the CPU the activation goes to gemm_q8 as its QuantizeLinear's codes (int8 / uint8 with the
 * pair's one scale and zero point: static quantization, issue 24 item 3 — the int32 sums are
 * onnxruntime's exact ones, no per-row requantization); for fused:QLinear the backend's gemm_q8x
 * computes those codes itself, straight into its int8 GEMM's rows (no codes tensor). Backends without gemm_q8 (Vulkan, CUDA)
 * get the activation rounded in float and the weight decoded to float. Forward only. */
#include "ops.h"

/* (clamp(rint(x / s) + z, lo, hi) - z) * s, as QuantizeLinear then DequantizeLinear compute it: x / s
 * clamped to [lo - z, hi - z] first (the bounds are integers, so clamping before rounding is the same;
 * NaN goes to lo), then rounded half to even by adding and taking away 1.5 * 2^23 (exact for
 * |t| < 2^22, in the default rounding mode; the build keeps fp-contract off): a loop the compiler
 * vectorizes, where rintf is a libm call per element on baseline x86-64. */
static void fake_quant_rows(const lithe__gfuse *f, const float *X, int64_t n, float *Y) {
    const float s = f->q_scale, lo = (float)(f->q_min - f->q_zero), hi = (float)(f->q_max - f->q_zero);
    const float magic = 12582912.0f;
    for (int64_t i = 0; i < n; i++) {
        float t = X[i] / s;
        t = t > hi ? hi : t;
        t = t >= lo ? t : lo;
        Y[i] = ((t + magic) - magic) * s;
    }
}

/* X rounded on the activation's grid, a float tensor on x's backend. */
static lithe_status fake_quant(lithe__gexec *x, const lithe__gfuse *f, lithe_tensor *X, lithe_tensor **out) {
    lithe_tensor *hx = NULL, *Y = NULL;
    const float *xs = NULL;
    LITHE__TRY(host_f32(X, &hx, &xs));
    lithe_status s = x->be->host_memory ? new_f32(x, X->ndim, X->shape, false, &Y)
                                        : lithe__tensor_alloc(lithe__backend_host(), LITHE_F32, X->ndim, X->shape, false, &Y);
    if (s == LITHE_OK) fake_quant_rows(f, xs, X->numel, lithe__f32(Y));
    lithe_tensor_release(hx);
    if (s != LITHE_OK || x->be->host_memory) {
        *out = Y;
        return s;
    }
    s = lithe_tensor_to_backend(Y, x->be, out);
    lithe_tensor_release(Y);
    return s;
}

/* QuantizeLinear's codes of X[0..n) (clamp(rint(x / s) + z, q_min, q_max); NaN to q_min), as int8
 * or uint8 bytes */
static void quant_codes(const lithe__gfuse *f, const float *X, int64_t n, uint8_t *Y) {
    const float s = f->q_scale, lo = (float)(f->q_min - f->q_zero), hi = (float)(f->q_max - f->q_zero);
    const float magic = 12582912.0f, z = (float)f->q_zero;
    for (int64_t i = 0; i < n; i++) {
        float t = X[i] / s;
        t = t > hi ? hi : t;
        t = t >= lo ? t : lo;
        Y[i] = (uint8_t)(int32_t)(((t + magic) - magic) + z);
    }
}

/* A host tensor of X's codes with the pair's quantization parameters (what gemm_q8 reads as static
 * activations), shaped (rows, cols) */
static lithe_status codes_of(const lithe__gfuse *f, const float *X, int64_t rows, int64_t cols, lithe_tensor **out) {
    lithe_dtype dt = f->q_min < 0 ? LITHE_I8 : LITHE_U8;
    lithe_tensor *t = NULL;
    LITHE__TRY(lithe__tensor_alloc(lithe__backend_host(), dt, 2, (int64_t[]){rows, cols}, false, &t));
    quant_codes(f, X, rows * cols, (uint8_t *)lithe__tdata(t));
    lithe_status s = lithe_tensor_set_quant_params(t, -1, 1, &f->q_scale, &f->q_zero);
    if (s != LITHE_OK) lithe_tensor_release(t);
    else *out = t;
    return s;
}

/* W's float32 values on x's backend (where gemm_q8 is missing, and grouped convolutions). */
static lithe_status decoded(lithe__gexec *x, const lithe_tensor *W, lithe_tensor **out) {
    lithe_tensor *h = NULL;
    LITHE__TRY(lithe__dequantize(W, &h));
    if (x->be->host_memory) {
        *out = h;
        return LITHE_OK;
    }
    lithe_status s = lithe_tensor_to_backend(h, x->be, out);
    lithe_tensor_release(h);
    return s;
}

static lithe_status need_q8(lithe__gexec *x, size_t node, const lithe_tensor *W, int ndim) {
    if (W->dtype != LITHE_I8 || !W->storage->quant || W->ndim != ndim)
        return fail(x, node, LITHE_ERR_STATE, "the fused weight is not a %d-D int8 tensor", ndim);
    return LITHE_OK;
}

FWD(f_fused_fakeq) {
    UNUSED_FWD;
    LITHE__TRY(need_inputs(x, node, in, n_in, 1));
    LITHE__TRY(need_float(x, node, in[0], 0));
    return fake_quant(x, &x->g->node_fuse[node], in[0], &out[0]);
}
const lithe__graph_op lithe__fused_fakeq_op = {"fused:FakeQuant", f_fused_fakeq, NULL};

/* Y (..., N) = act(round(X) (..., K) · dequant(W (N, K))ᵀ + b) */
FWD(f_fused_qlinear) {
    UNUSED_FWD;
    const lithe__gfuse *f = &x->g->node_fuse[node];
    LITHE__TRY(need_inputs(x, node, in, n_in, 2));
    LITHE__TRY(need_float(x, node, in[0], 0));
    LITHE__TRY(need_q8(x, node, in[1], 2));
    lithe_tensor *X = in[0], *W = in[1], *b = n_in > 2 ? in[2] : NULL;
    int64_t N = W->shape[0], K = W->shape[1];
    char sx[LITHE__SHAPE_BUF];
    if (X->ndim < 2 || X->shape[X->ndim - 1] != K || (!strcmp(NODE(x, f->first)->op_type, "Gemm") && X->ndim != 2))
        return fail(x, node, LITHE_ERR_SHAPE, "A %s does not match the weight's inner extent %lld",
                    lithe__shape_str(X, sx, sizeof sx), (long long)K);
    if (b) LITHE__TRY(need_float(x, node, b, 2));
    if (b && b->numel != N) return fail(x, node, LITHE_ERR_SHAPE, "the bias needs %lld values, has %lld", (long long)N, (long long)b->numel);
    int64_t R = K ? X->numel / K : 0, shape[LITHE_MAX_DIMS];
    for (int d = 0; d < X->ndim; d++) shape[d] = X->shape[d];
    shape[X->ndim - 1] = N;
    LITHE__TRY(new_f32(x, X->ndim, shape, false, &out[0]));
    lithe_tensor *Xq = NULL, *A2 = NULL, *Y2 = NULL, *Wf = NULL;
    const lithe__act *act = f->has_act ? &f->act : NULL;
    lithe_status s = as_rows(out[0], R, N, &Y2);
    if (s == LITHE_OK && x->be->host_memory) { /* static: the codes */
        lithe_tensor *hx = NULL;
        const float *xs = NULL;
        s = host_f32(X, &hx, &xs);
        bool done = false;
        if (s == LITHE_OK && x->be->ops->gemm_q8x) { /* quantized by the backend's int8 GEMM itself */
            lithe_tensor *X2 = NULL;
            s = as_rows(hx ? hx : X, R, K, &X2);
            if (s == LITHE_OK)
                s = x->be->ops->gemm_q8x(x->be, X2, f->q_scale, f->q_zero, f->q_min, f->q_max, W, b, act, Y2, &done);
            lithe_tensor_release(X2);
        }
        if (s == LITHE_OK && !done) s = codes_of(f, xs, R, K, &A2);
        if (s == LITHE_OK && !done) s = lithe__op_gemm_q8(x->be, A2, W, b, act, NULL, Y2);
        lithe_tensor_release(hx);
    } else if (s == LITHE_OK) {
        s = fake_quant(x, f, X, &Xq);
        if (s == LITHE_OK) s = as_rows(Xq, R, K, &A2);
        if (s == LITHE_OK) s = decoded(x, W, &Wf);
        if (s == LITHE_OK) s = lithe__op_gemm_bias_act(x->be, false, true, A2, Wf, b, act, NULL, Y2);
    }
    lithe_tensor_release(Xq);
    lithe_tensor_release(A2);
    lithe_tensor_release(Y2);
    lithe_tensor_release(Wf);
    return s;
}
const lithe__graph_op lithe__fused_qlinear_op = {"fused:QLinear", f_fused_qlinear, NULL};

/* One image's columns: cols (OH * OW, C * KH * KW) from X (C, H, W), zeros where the window is
 * outside (the zero point's code, which decodes to 0). */
static void im2col(const lithe__conv2d *g, const float *X, float *cols) {
    int64_t K = g->C * g->KH * g->KW;
    for (int64_t oh = 0; oh < g->OH; oh++)
        for (int64_t ow = 0; ow < g->OW; ow++) {
            float *row = cols + (oh * g->OW + ow) * K;
            for (int64_t c = 0; c < g->C; c++)
                for (int64_t kh = 0; kh < g->KH; kh++) {
                    int64_t ih = oh * g->stride[0] - g->pad[0] + kh * g->dil[0];
                    float *r = row + (c * g->KH + kh) * g->KW;
                    if (ih < 0 || ih >= g->H) {
                        memset(r, 0, (size_t)g->KW * sizeof *r);
                        continue;
                    }
                    const float *xr = X + (c * g->H + ih) * g->W;
                    for (int64_t kw = 0; kw < g->KW; kw++) {
                        int64_t iw = ow * g->stride[1] - g->pad[1] + kw * g->dil[1];
                        r[kw] = iw >= 0 && iw < g->W ? xr[iw] : 0.0f;
                    }
                }
        }
}

/* group 1 on the host: per image, Yᵀ (OH * OW, M) = act(codes(cols) · dequant(W (M, K))ᵀ + b), then
 * Y (M, OH * OW); the window's padding is 0.0, whose code is the zero point */
static lithe_status qconv_gemm(lithe__gexec *x, const lithe__gfuse *f, const lithe__conv2d *g, const float *X,
                               lithe_tensor *W, lithe_tensor *b, const lithe__act *act, lithe_tensor *Y) {
    int64_t K = g->C * g->KH * g->KW, P = g->OH * g->OW;
    lithe_tensor *cols = NULL, *Yt = NULL, *W2 = NULL, *C8 = NULL;
    lithe_status s = new_f32(x, 2, (int64_t[]){P, K}, false, &cols);
    if (s == LITHE_OK) s = new_f32(x, 2, (int64_t[]){P, g->M}, false, &Yt);
    if (s == LITHE_OK) s = lithe_tensor_reshape(W, 2, (int64_t[]){g->M, K}, &W2);
    if (s == LITHE_OK) s = codes_of(f, lithe__f32(cols), P, K, &C8); /* its buffer, refilled per image */
    for (int64_t n = 0; s == LITHE_OK && n < g->N; n++) {
        im2col(g, X + n * g->C * g->H * g->W, lithe__f32(cols));
        quant_codes(f, lithe__f32(cols), P * K, (uint8_t *)lithe__tdata(C8));
        s = lithe__op_gemm_q8(x->be, C8, W2, b, act, NULL, Yt);
        const float *t = lithe__f32(Yt);
        float *y = lithe__f32(Y) + n * g->M * P;
        for (int64_t p = 0; s == LITHE_OK && p < P; p++)
            for (int64_t m = 0; m < g->M; m++) y[m * P + p] = t[p * g->M + m];
    }
    lithe_tensor_release(cols);
    lithe_tensor_release(Yt);
    lithe_tensor_release(W2);
    lithe_tensor_release(C8);
    return s;
}

/* Codes (a producing fused:QConv's, on f's grid: int8 or uint8 bytes) as float32 values,
 * (code - zero point) · scale: DequantizeLinear's, which f's rounding gives back unchanged */
static lithe_status decoded_codes(lithe__gexec *x, const lithe__gfuse *f, const lithe_tensor *C, lithe_tensor **out) {
    LITHE__TRY(new_f32(x, C->ndim, C->shape, false, out));
    const uint8_t *c = (const uint8_t *)lithe__tdata(C);
    float *y = lithe__f32(*out);
    for (int64_t i = 0; i < C->numel; i++)
        y[i] = (float)((C->dtype == LITHE_I8 ? (int32_t)(int8_t)c[i] : (int32_t)c[i]) - f->q_zero) * f->q_scale;
    return LITHE_OK;
}

static lithe_status qconv_run(lithe__gexec *x, size_t node, lithe_tensor *X, lithe_tensor *W, lithe_tensor *b,
                              lithe_tensor *Y);

/* X: float32, or the codes the producing fused:QConv wrote (fuse_qdq.c's chain_codes; decoded where
 * the backend's conv_q8 declines them). Y: float32, or (o_codes, the CPU's conv_q8) the reader's codes
 * with its scale and zero point, from the float32 result where conv_q8 declines. */
FWD(f_fused_qconv) {
    UNUSED_FWD;
    const lithe__gfuse *f = &x->g->node_fuse[node];
    LITHE__TRY(need_inputs(x, node, in, n_in, 2));
    lithe_tensor *X = in[0], *W = in[1], *b = n_in > 2 ? in[2] : NULL;
    /* codes: only a producer's (chain_codes: on this node's grid, which it carries), else float */
    const lithe__quant *xq = X->dtype == (f->q_min < 0 ? LITHE_I8 : LITHE_U8) ? X->storage->quant : NULL;
    if (!xq || xq->n != 1 || xq->scale[0] != f->q_scale || xq->zero[0] != f->q_zero) LITHE__TRY(need_float(x, node, X, 0));
    if (X->ndim != 4 && X->ndim != 3) return fail(x, node, LITHE_ERR_SHAPE, "X must be 3-D or 4-D, got %d-D", X->ndim);
    LITHE__TRY(need_q8(x, node, W, X->ndim));
    lithe__conv2d g = {0};
    LITHE__TRY(conv_geometry(x, f->first, (lithe_tensor *[]){X, W}, &g));
    if (b) LITHE__TRY(need_float(x, node, b, 2));
    if (b && b->numel != g.M) return fail(x, node, LITHE_ERR_SHAPE, "bias has %lld values for %lld filters", (long long)b->numel, (long long)g.M);
    int64_t shape[4] = {g.N, g.M, X->ndim == 3 ? g.OW : g.OH, g.OW};
    const bool oc = f->o_codes && x->be->host_memory && x->be->ops->conv_q8;
    if (!oc) {
        LITHE__TRY(new_f32(x, X->ndim, shape, false, &out[0]));
        return qconv_run(x, node, X, W, b, out[0]);
    }
    LITHE__TRY(lithe__gexec_alloc(x, x->be, f->o_min < 0 ? LITHE_I8 : LITHE_U8, X->ndim, shape, false, &out[0]));
    lithe_status s = lithe_tensor_set_quant_params(out[0], -1, 1, &f->o_scale, &f->o_zero);
    return s == LITHE_OK ? qconv_run(x, node, X, W, b, out[0]) : s;
}

/* Y = the node's convolution of X (codes or float32) into Y (float32, or codes: qconv_run quantizes
 * the float32 result where conv_q8 declines) */
static lithe_status qconv_run(lithe__gexec *x, size_t node, lithe_tensor *X, lithe_tensor *W, lithe_tensor *b,
                              lithe_tensor *Y) {
    const lithe__gfuse *f = &x->g->node_fuse[node];
    lithe__conv2d g = {0};
    LITHE__TRY(conv_geometry(x, f->first, (lithe_tensor *[]){X, W}, &g));
    const lithe__act *act = f->has_act ? &f->act : NULL;
    lithe_tensor *Xd = NULL, *Yd = NULL, *Xq = NULL, *Wf = NULL, *X4 = NULL, *W4 = NULL, *Y4 = NULL, *Yo = Y;
    lithe_status s = LITHE_OK;
    bool done = false;
    if (x->be->host_memory && x->be->ops->conv_q8 && (g.group == 1 || (g.group == g.C && g.M == g.C))) {
        /* the backend's int8 convolution, X quantized as the pair's QuantizeLinear (group 1 and
         * depthwise, straight into NCHW) */
        lithe_tensor *hx = NULL;
        const float *xs = NULL;
        if (X->dtype == LITHE_F32) s = host_f32(X, &hx, &xs);
        if (s == LITHE_OK)
            s = x->be->ops->conv_q8(x->be, &g, hx ? hx : X, f->q_scale, f->q_zero, f->q_min, f->q_max, W, b, act, Y,
                                    &done);
        lithe_tensor_release(hx);
    }
    if (s != LITHE_OK || done) goto end;
    if (X->dtype != LITHE_F32 && !x->be->host_memory) {
        s = fail(x, node, LITHE_ERR_STATE, "int8 codes reached a backend without host memory");
        goto end;
    }
    if (X->dtype != LITHE_F32) { /* codes the backend declined */
        s = decoded_codes(x, f, X, &Xd);
        if (s != LITHE_OK) goto end;
        X = Xd;
    }
    if (Y->dtype != LITHE_F32) { /* codes out: the float32 result, then the reader's QuantizeLinear */
        s = new_f32(x, Y->ndim, Y->shape, false, &Yd);
        if (s != LITHE_OK) goto end;
        Y = Yd;
    }
    if (g.group == 1 && x->be->host_memory) {
        lithe_tensor *hx = NULL;
        const float *xs = NULL;
        s = host_f32(X, &hx, &xs);
        if (s == LITHE_OK) s = qconv_gemm(x, f, &g, xs, W, b, act, Y);
        lithe_tensor_release(hx);
    } else { /* depthwise, grouped, or no gemm_q8: the weight decoded (a scratch per run) */
        s = fake_quant(x, f, X, &Xq);
        if (s == LITHE_OK) s = decoded(x, W, &Wf);
        bool one = X->ndim == 3;
        if (s == LITHE_OK) s = one ? view4(Xq, &X4) : (X4 = lithe_tensor_retain(Xq), LITHE_OK);
        if (s == LITHE_OK) s = one ? view4(Wf, &W4) : (W4 = lithe_tensor_retain(Wf), LITHE_OK);
        if (s == LITHE_OK) s = one ? view4(Y, &Y4) : (Y4 = lithe_tensor_retain(Y), LITHE_OK);
        if (s == LITHE_OK) s = lithe__op_conv2d(x->be, &g, X4, W4, b, act, Y4);
    }
    if (s == LITHE_OK && Yd) { /* host memory: o_codes is set only there */
        const lithe__gfuse o = {.q_scale = f->o_scale, .q_zero = f->o_zero, .q_min = f->o_min, .q_max = f->o_max};
        quant_codes(&o, lithe__f32(Yd), Yd->numel, (uint8_t *)lithe__tdata(Yo));
    }
end:
    lithe_tensor_release(Xd);
    lithe_tensor_release(Yd);
    lithe_tensor_release(Xq);
    lithe_tensor_release(Wf);
    lithe_tensor_release(X4);
    lithe_tensor_release(W4);
    lithe_tensor_release(Y4);
    return s;
}
const lithe__graph_op lithe__fused_qconv_op = {"fused:QConv", f_fused_qconv, NULL};
