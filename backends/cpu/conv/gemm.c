/* The CPU backend's 2-D convolution for imported graphs (primitives.def: conv2d, conv2d_backward):
 *
 *   - depthwise (one input and one output channel per group, mobilenet's 3x3): each plane as long
 *     rows (a zero-bordered copy split into phase planes where it is padded or strided; see
 *     dw_layout), every tap a shift of them, whole vectors (dwconv_taps), the fused relu / clip in
 *     registers; it accumulates in the scalar twin's order (bias, then taps kh, kw), bit-identical.
 *     Planes where the padding's 0·w taps could change a bit (dw_plane_padded_ok) run the twin's
 *     loop. Planes under 16 wide and big stride-2 ones instead go `lanes` channels at a time through
 *     the table's dwconv_lanes (channels in the vector lanes; dw_use_lanes), with the same rule.
 *     Before both, where the table has it, a 3x3 with padding 1 at stride 1 (or stride 2 reading no
 *     bottom / right padding) reads X in place through dwconv3x3 (dw_use_3x3), same order, same rule.
 *     Its backward keeps each accumulator's twin order too (depthwise_backward_channels);
 *   - everything else: per image and group, a GEMM over K = Cg·KH·KW, in one of two orientations
 *     chosen per geometry (pixel_rows): filter rows, Y_g (Mg, P) = W_g (Mg, K) · col (K, P), the
 *     bias riding in the product as one more k-step (bias_row); or pixel rows, Y_gᵀ (P, Mg) =
 *     colᵀ · W_gᵀ (lithe__sgemm_pixels), W_g being the GEMM's B (so prepared weights are the dense
 *     layers' packed Wᵀ), the bias and activation in the GEMM's transposed store. col is never
 *     built where it can be read in place; by geometry it is:
 *       shifted rows: a zero-bordered copy of X, split into stride0·stride1 phase planes, whose
 *         runs are the taps' rows (see phase_dims and "shifted rows" below); the GEMM packs its
 *         slivers of output pixels straight from those row pointers, only the kept columns;
 *       pointwise (1x1, stride 1, no padding): X itself (WebAssembly SIMD128 builds run these with
 *         K + bias step <= 256, and every shifted-rows one, through simd/conv_wasm_simd128.c's
 *         direct kernel instead: wdc_applies);
 *       im2col, X unfolded into col in a workspace from the backend's allocator, only where the
 *         phase planes' rows would be more than twice the output rows.
 *     The backward is the same GEMMs transposed: dW_g += dY_g · colᵀ, dcol = W_gᵀ · dY_g folded
 *     back into dX (col2im), db += row sums of dY.
 * GEMM paths sum in the GEMM's order, not the twin's: within the GEMM's rounding of the twin
 * (test_onnx and test_simd check), and an image's bits do not depend on the batch or the thread
 * count. Forward images run in parallel ranges; the backward runs them in order (it accumulates
 * over them) and the GEMM splits each product over the thread pool. */
#include "conv.h"
#if defined(__x86_64__) || defined(_M_X64)
#include "pointwise.h"
#endif

/* col (Cg·KH·KW, OH·OW) of one image-group: row (c, kh, kw) holds x[c] at the tap's positions, 0
 * where the window passes the padding. */
static void im2col(const lithe__conv2d *g, const float *x, int64_t Cg, float *col) {
    int64_t P = g->OH * g->OW, s0 = g->stride[0], s1 = g->stride[1];
    for (int64_t c = 0; c < Cg; c++)
        for (int64_t kh = 0; kh < g->KH; kh++)
            for (int64_t kw = 0; kw < g->KW; kw++) {
                float *row = col + ((c * g->KH + kh) * g->KW + kw) * P;
                int64_t lo, hi, off = kw * g->dil[1] - g->pad[1];
                valid_range(g->OW, g->W, s1, g->pad[1], kw, g->dil[1], &lo, &hi);
                for (int64_t oh = 0; oh < g->OH; oh++) {
                    float *r = row + oh * g->OW;
                    int64_t h = oh * s0 - g->pad[0] + kh * g->dil[0];
                    if (h < 0 || h >= g->H || lo >= hi) {
                        memset(r, 0, (size_t)g->OW * sizeof(float));
                        continue;
                    }
                    const float *xr = x + (c * g->H + h) * g->W;
                    for (int64_t ow = 0; ow < lo; ow++) r[ow] = 0.0f;
                    if (s1 == 1) memcpy(r + lo, xr + lo + off, (size_t)(hi - lo) * sizeof(float));
                    else
                        for (int64_t ow = lo; ow < hi; ow++) r[ow] = xr[ow * s1 + off];
                    for (int64_t ow = hi; ow < g->OW; ow++) r[ow] = 0.0f;
                }
            }
}

/* dx += col2im(dcol): the adjoint of im2col. */
static void col2im(const lithe__conv2d *g, const float *col, int64_t Cg, float *dx) {
    int64_t P = g->OH * g->OW, s0 = g->stride[0], s1 = g->stride[1];
    for (int64_t c = 0; c < Cg; c++)
        for (int64_t kh = 0; kh < g->KH; kh++)
            for (int64_t kw = 0; kw < g->KW; kw++) {
                const float *row = col + ((c * g->KH + kh) * g->KW + kw) * P;
                int64_t lo, hi, off = kw * g->dil[1] - g->pad[1];
                valid_range(g->OW, g->W, s1, g->pad[1], kw, g->dil[1], &lo, &hi);
                for (int64_t oh = 0; oh < g->OH; oh++) {
                    int64_t h = oh * s0 - g->pad[0] + kh * g->dil[0];
                    if (h < 0 || h >= g->H) continue;
                    float *xr = dx + (c * g->H + h) * g->W;
                    const float *r = row + oh * g->OW;
                    for (int64_t ow = lo; ow < hi; ow++) xr[ow * s1 + off] += r[ow];
                }
            }
}

/* The sum of x[0..n) in eight interleaved partial sums (lanes of one vector; the compiler keeps
 * them in registers), added pairwise at the end: db's row sums, in no particular order (the GEMM
 * path's gradients are within the GEMM's rounding of the twin, not its bits); backward.c's dW pass
 * takes them image by image while dY is in cache. */
float lithe__conv_row_sum(const float *x, int64_t n) {
    float a[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; l++) a[l] += x[i + l];
    for (; i < n; i++) a[i % 8] += x[i];
    return ((a[0] + a[4]) + (a[1] + a[5])) + ((a[2] + a[6]) + (a[3] + a[7]));
}

/* ---- the GEMM-path forward ----
 * Shifted rows: the image-group is copied into zero-bordered phase planes xq (Cg, s0·s1, Hq, Wq)
 * (padding included, so no tap needs a bounds test; stride 1 is one plane, the padded image), and
 * tap (c, kh, kw)'s values for output row oh are a contiguous run of a plane: from the tap's
 * offset, output pixel (oh, ow) at oh·Wq + ow. The GEMM gets the K tap pointers, the output row
 * width OW and the row stride Wq (lithe__sgemm_rows' B, lithe__sgemm_pixels' A) and packs each
 * sliver of output pixels from them (one run per output row it touches): no im2col matrix, no
 * column computed and dropped, the product written into Y. Used unless the phase planes' rows are
 * more than twice the output rows (Wq - OW > OW: many short runs per sliver); then im2col into
 * col (K, OH·OW). Pointwise (1x1, stride 1, no padding): the GEMM reads X itself.
 * A fused activation (conv2d's a) costs no pass of its own with pixel rows (each tile, in the
 * GEMM's buffer before its transposed store); with filter rows a relu or clamp goes into the
 * microkernel's store when the kernel has one (gemm.h's clamp_ok: all but NEON), other acts
 * (and every act with other kernels) run the act kernel in place over the image-group's output
 * after its GEMM; the act kernel's bits either way, so equal to the act primitive after. (The GEMM's per-tile epilogue, one act call per tile row of nr floats, and
 * column blocks of the product that fit L2, each activated after its GEMM, measured slower than
 * one pass after: call overhead on 32-float rows; mobilenet_v2's 1x1 convolutions at 112x112
 * and 56x56 +4-9 %.) */

void shifted_init(const lithe__conv2d *g, int64_t Cg, int64_t K, bool direct, float *buf, shifted_ws *w) {
    int64_t s0 = g->stride[0], s1 = g->stride[1];
    size_t ptrs, xq, ones;
    phase_dims(g, &w->Hq, &w->Wq);
    shifted_sizes(g, Cg, K, direct, &ptrs, &xq, &ones);
    w->rows = (const float **)(void *)buf;
    w->xq = buf + ptrs;
    w->ones = direct ? w->xq + xq : NULL;
    if (direct) {
        size_t planes = (size_t)(Cg * s0 * s1 * w->Hq * w->Wq);
        memset(w->xq + planes, 0, (xq - planes) * sizeof(float));
        for (size_t i = 0; i < ones; i++) w->ones[i] = 1.0f;
    }
    int64_t k = 0, HWq = w->Hq * w->Wq, Wq = w->Wq;
    /* the borders, zero for good: images overwrite the interiors only (shifted_fill's rows h0, h0 +
     * s0, ... and columns w0, w0 + s1, ... of each plane), so only what lies around them is cleared */
    for (int64_t pl = 0; pl < Cg * s0 * s1; pl++) {
        int64_t pa = pl / s1 % s0, pb = pl % s1;
        int64_t h0 = ((pa - g->pad[0]) % s0 + s0) % s0, w0 = ((pb - g->pad[1]) % s1 + s1) % s1;
        int64_t R = h0 < g->H ? (g->H - h0 + s0 - 1) / s0 : 0, n = w0 < g->W ? (g->W - w0 + s1 - 1) / s1 : 0;
        int64_t r0 = (h0 + g->pad[0]) / s0, c0 = (w0 + g->pad[1]) / s1;
        float *q = w->xq + pl * HWq;
        if (!R || !n) R = 0, r0 = w->Hq; /* nothing of the image lands here */
        memset(q, 0, (size_t)(r0 * Wq) * sizeof(float));
        for (int64_t r = r0; r < r0 + R; r++) {
            for (int64_t j = 0; j < c0; j++) q[r * Wq + j] = 0.0f;
            for (int64_t j = c0 + n; j < Wq; j++) q[r * Wq + j] = 0.0f;
        }
        if (r0 + R < w->Hq) memset(q + (r0 + R) * Wq, 0, (size_t)((w->Hq - r0 - R) * Wq) * sizeof(float));
    }
    for (int64_t c = 0; c < Cg; c++)
        for (int64_t kh = 0; kh < g->KH; kh++)
            for (int64_t kw = 0; kw < g->KW; kw++) {
                int64_t th = kh * g->dil[0], tw = kw * g->dil[1];
                w->rows[k++] = w->xq + ((c * s0 + th % s0) * s1 + tw % s1) * HWq + th / s0 * w->Wq + tw / s1;
            }
    w->rows[K] = w->ones;
}

/* The image-group x into the interior of the phase planes: per channel and row phase a, the input
 * rows h = h0, h0 + s0, ... (h + pad0 = i·s0 + a) as one strided block of the SIMD table's row
 * copies (at stride 2 across, split_rows de-interleaves each row into the two column phases). */
void shifted_fill(const lithe__conv2d *g, const shifted_ws *w, int64_t Cg, const float *x) {
    const lithe__simd_kernels *k = lithe__simd_conv();
    int64_t s0 = g->stride[0], s1 = g->stride[1], Wq = w->Wq, HWq = w->Hq * Wq, W = g->W;
    for (int64_t c = 0; c < Cg; c++)
        for (int64_t pa = 0; pa < s0; pa++) {
            int64_t h0 = ((pa - g->pad[0]) % s0 + s0) % s0;
            if (h0 >= g->H) continue;
            int64_t R = (g->H - h0 + s0 - 1) / s0;
            const float *src = x + (c * g->H + h0) * W;
            float *plane = w->xq + (c * s0 + pa) * s1 * HWq + (h0 + g->pad[0]) / s0 * Wq; /* phase b = 0's row */
            if (s1 == 2) { /* column 0 to phase pad1 mod 2, column 1 to the other */
                int64_t p1 = g->pad[1];
                k->split_rows(R, W, plane + p1 % 2 * HWq + p1 / 2, plane + (1 + p1) % 2 * HWq + (1 + p1) / 2, Wq,
                              src, s0 * W);
                continue;
            }
            for (int64_t pb = 0; pb < s1; pb++) { /* the columns of phase pb: w + pad[1] = j·s1 + pb */
                int64_t w0 = ((pb - g->pad[1]) % s1 + s1) % s1;
                if (w0 >= W) continue;
                k->copy_rows(R, (W - w0 + s1 - 1) / s1, plane + pb * HWq + (w0 + g->pad[1]) / s1, Wq, src + w0,
                             s0 * W, s1);
            }
        }
}

/* Filter rows: a relu or clamp goes into the microkernel's store when the kernel clamps there
 * (gemm.h's clamp_ok: C written once, the act kernel's bits); other acts run after the GEMM. */
static bool act_in_store(const lithe__act *a) {
    return a && lithe__sgemm_kernel_best()->clamp_ok && lithe__sgemm_act_clamp(a, NULL, NULL, NULL);
}

static lithe_status shifted_forward(const lithe__conv2d *g, const shifted_ws *w, int64_t Cg, int64_t Mg, int64_t K,
                                    const float *x, const float *Wg, const float *b, const lithe__act *a, float *y) {
    shifted_fill(g, w, Cg, x);
    lithe__sgemm_epilogue e = {.bias_row = b};
    bool in_store = act_in_store(a);
    if (in_store) e.act = a, e.act_fn = lithe__simd()->act;
    const lithe__sgemm_epilogue *ep = b || in_store ? &e : NULL;
    if (w->ones && lithe__sgemm_rows_direct(NULL, Mg, g->OH, g->OW, K, Wg, K, w->rows, w->Wq, y, g->OH * g->OW, ep)) {
        if (a && !in_store) lithe__simd()->act(a, Mg * g->OH * g->OW, y, y);
        return LITHE_OK;
    }
    if (!lithe__sgemm_rows(NULL, true, Mg, g->OH * g->OW, K, Wg, K, w->rows, g->OW, w->Wq, y, g->OH * g->OW, ep))
        return LITHE_ERR_OOM;
    if (a && !in_store) lithe__simd()->act(a, Mg * g->OH * g->OW, y, y); /* as the im2col path */
    return LITHE_OK;
}

/* ---- orientation: filter rows, Y_g (Mg, P) = W_g · col, or pixel rows, Y_gᵀ (P, Mg) = colᵀ · W_gᵀ
 * (lithe__sgemm_pixels: the GEMM gathers each A sliver of MR pixels from the taps' rows and writes
 * its tiles transposed into Y; W_g is op(B), so weights prepared for inference are the dense
 * layers' packed Wᵀ). The one whose padded tile grid does less, in multiply-adds per lane, counting
 * what each adds: filter rows pack W in every call; pixel rows move every output through the tile
 * buffer (once per K block, twice more per later block). Decided by the per-image geometry and the
 * kernel alone, never by the batch, the threads or whether W is prepared, so an image's bits do
 * not depend on them. With AVX-512's 14 x 32 tile, LeNet's first layer (16 filters, K = 25) and
 * mobilenet's pointwise convolutions at 56x56 and up run filter rows; LeNet's second (32 filters,
 * K = 400) and mobilenet's pointwise ones at 14x14 and 7x7 pixel rows (mostly; docs/performance.md).
 * LITHE_CONV_ROWS=filters|pixels forces one (tests, tuning). */
static double kernel_speed(int mr) { return mr <= 2 ? 0.5 : mr <= 4 ? 0.9 : 1.0; }
static double rup(int64_t x, int64_t m) { return (double)((x + m - 1) / m * m); }

static bool pixel_rows(const lithe__conv2d *g, int64_t Mg, int64_t K) {
    const char *v = lithe__knob(LITHE__KNOB_conv_rows);
    if (v && !strcmp(v, "filters")) return false;
    if (v && !strcmp(v, "pixels")) return true;
    const lithe__sgemm_kernel *k = lithe__sgemm_kernel_best();
    const lithe__sgemm_kernel *kf = k->for_rows ? k->for_rows(Mg) : k, *kp = k->for_rows ? k->for_rows(g->OH * g->OW) : k;
    int64_t P = g->OH * g->OW;
    /* moving one output through the tile buffer, in lane multiply-adds: with the kernel's own
     * transpose (AVX-512's 16 x 16 blocks) about an eighth of NR; the driver's scalar loops cost
     * about 2 NR (WebAssembly SIMD128: pixel rows measured 12-16 % slower than filter rows on
     * mobilenet_v2's 14x14 layers at 1/8 NR, 3-10 % faster at 7x7) */
    double per_out = LITHE__SGEMM_HAS(k, transpose) ? k->nr / 8.0 : 2.0 * k->nr;
    double filters = rup(Mg, kf->mr) * rup(P, kf->nr) * (double)K / kernel_speed(kf->mr) + 2.0 * (double)(Mg * K);
    /* pointwise filter rows read X in place where the GEMM can (gemm.c's in_place, with the row
     * bias after the store: one K block of at least 16 steps, X's rows 16-float multiples not of
     * 1024, the filters in one A block), where pixel rows pack every pixel: about 2 lane
     * multiply-adds per element (mobilenet_v2's 192 -> 32 at 28x28: pixel rows 104 us, filter rows
     * 87 us in place; with AVX-512's ukernel_ap pixel rows read it in place too, 88 us) */
    if (LITHE__SGEMM_HAS(kf, ukernel_b) && is_pointwise(g) && K >= 16 && K < kf->kc && P % 16 == 0 && P % 1024 != 0 &&
        Mg <= kf->mc)
        filters -= 2.0 * (double)(P * K);
    double moves = 2.0 * (double)((K + kp->kc - 1) / kp->kc) - 1.0; /* a later K block reads the tile back */
    double pixels = rup(P, kp->mr) * rup(Mg, kp->nr) * (double)K / kernel_speed(kp->mr) + per_out * moves * (double)(Mg * P);
    /* pixel rows gather each A sliver of MR pixels tap by tap (runs of MR floats): without the
     * kernel's own pack_a_ptrs (AVX2, NEON, SIMD128) about 2 lane multiply-adds per element. On
     * AVX2 (an EPYC without AVX-512), single thread: mobilenet_v3_small's stem (3 -> 16, 3x3 / 2
     * at 112x112) 980 us by pixel rows, 415 us by filter rows; whole models resnet18 91 -> 70 ms,
     * mobilenet_v3_small 5.2 -> 4.5 ms, mobilenet_v2, efficientnet_b0 and lraspp unchanged. AVX2's
     * pack_a_ptrs (issue 29) packs the slivers inside an output row without the driver's runs, but
     * not those across rows and not in place: it keeps the charge (only AVX-512, which reads A where
     * it lies with ukernel_ap, drops it), so the orientations stay as measured above */
    if (!is_pointwise(g) && !LITHE__SGEMM_HAS(kp, ukernel_ap)) pixels += 2.0 * (double)(P * K);
    return pixels < filters;
}

/* Whether filter rows read the shifted rows in place (lithe__sgemm_rows_direct) rather than pack
 * them: its slivers run per output row, so each row's last one leaves lanes idle (OW = 28 in
 * slivers of 32: 1/8), which costs more than the packing it saves where more filter tiles share
 * each packed sliver. Measured on Zen 4: LeNet's first layer (16 filters) 279 -> 235 us at batch 32;
 * mobilenet_v2's stem (32 filters, 112 wide: slivers 32, 32, 32, 16) 355 -> 370 us. Idle lanes x
 * padded filters against about 3.5 per output pixel: 2.3 there, 4.6 here. The same bits either way. */
static bool direct_pays(const lithe__conv2d *g, int64_t Mg) {
    const lithe__sgemm_kernel *k = lithe__sgemm_kernel_best();
    if (!LITHE__SGEMM_HAS(k, ukernel_bp)) return false;
    if (k->for_rows) k = k->for_rows(Mg);
    double P = (double)(g->OH * g->OW), idle = (double)g->OH * rup(g->OW, k->nr) - P;
    return idle * rup(Mg, k->mr) < 3.5 * P;
}

/* y = r + y (first) or y + r over n floats: lithe__cpu_conv2d_add's residual where it is not in the
 * GEMM's store (shifted rows, depthwise), through the SIMD table's binary add, the kernel the
 * graph's Add runs: the same bits as the unfused pair. */
static void add_residual(float *y, const float *r, int64_t n, bool first) {
    lithe__simd()->binary(LITHE__BIN_ADD, n, first ? r : y, false, first ? y : r, false, y);
}

#if defined(__x86_64__) || defined(_M_X64)
/* ---- the pointwise convolution read in place (pointwise.h) ----
 * Where the CPU has its kernel (AVX2), a pointwise convolution skips the GEMM: no packing, no tile
 * transposes. A relu / clip / HardSwish in its store (lithe__sgemm_act_clamp), other acts after
 * over the image-group's output (as filter rows do). At batch 1 its 16-pixel columns split over the
 * pool (each element computed the same way wherever it lands: bits independent of the threads).
 * LITHE_CONV_ROWS (tests of the GEMM paths) turns it off. */
typedef struct pw_task {
    lithe__conv_pw c;
    lithe__conv_pw_fn fn;
} pw_task;

static void pw_range(void *ctx, int64_t c0, int64_t c1) {
    const pw_task *t = ctx;
    int64_t p1 = c1 * 16 < t->c.P ? c1 * 16 : t->c.P;
    t->fn(&t->c, c0 * 16, p1);
}

/* Pointwise geometries: the kernel blocks K and the filters itself (pointwise_avx2.c), as the GEMM
 * would, without packing (lraspp's 960 -> 160 and 672 -> 160 at 14x14 had gone to the GEMM). Not a
 * plane under 16 pixels with a long K and a W over L2 (squeeze-excitation's 576 -> 144 at 1x1: the
 * kernel's 8-pixel vectors would be mostly idle lanes there, where the GEMM has its M = 1 paths). */
static lithe__conv_pw_fn pw_kernel(const lithe__conv2d *g) {
    int64_t Mg = g->M / g->group, Cg = g->C / g->group;
    if (!is_pointwise(g) || lithe__knob(LITHE__KNOB_conv_rows)) return NULL;
    if (g->OH * g->OW > 1 && g->OH * g->OW < 16 && Cg > 256 && Mg * Cg > 65536) return NULL;
    return lithe__conv_pw_best();
}

static void pw_forward(lithe__conv_pw_fn fn, const lithe__conv2d *g, int64_t Cg, int64_t Mg, const float *x,
                       const float *Wg, const float *b, const lithe__act *a, const float *R, bool res_first, float *y) {
    int64_t P = g->OH * g->OW;
    pw_task t = {{.M = Mg, .K = Cg, .P = P, .W = Wg, .X = x, .b = b, .Y = y, .res_first = res_first}, fn};
    bool in_store = a && lithe__sgemm_act_clamp(a, &t.c.clamp, &t.c.lo, &t.c.hi);
    if (!in_store) t.c.clamp = LITHE__SGEMM_CLAMP_NONE;
    if (in_store || !a) t.c.R = R; /* else the residual after the act (the GEMM's store order) */
    lithe__pool_for(g->N == 1 ? lithe__cpu_pool() : NULL, (P + 15) / 16, 1, pw_range, &t);
    if (a && !in_store) {
        lithe__simd()->act(a, Mg * P, y, y);
        if (R) add_residual(y, R, Mg * P, res_first);
    }
}
#endif

/* Images [n0, n1) of a GEMM-path forward, with their own workspace: images run in parallel (each
 * output image belongs to one range); a GEMM started inside a range runs in its thread. */
static void gemm_images(void *ctx, int64_t n0, int64_t n1) {
    gemm_job *j = ctx;
    const lithe__conv2d *g = j->g;
#if defined(__wasm_simd128__)
    if (wdc_applies(g, j->b != NULL)) {
        wdc_images(j, n0, n1);
        int64_t per = g->M * g->OH * g->OW; /* lithe__cpu_conv2d_add's residual, after the images */
        if (j->R && atomic_load(&j->status) == LITHE_OK)
            add_residual(j->Y + n0 * per, j->R + n0 * per, (n1 - n0) * per, j->res_first);
        return;
    }
#endif
    int64_t Cg = g->C / g->group, Mg = g->M / g->group, K = Cg * g->KH * g->KW, P = g->OH * g->OW;
    bool pw = is_pointwise(g), sh = is_shifted(g), pr = j->pr;
    /* filter rows on the shifted rows read in place (lithe__sgemm_rows_direct, single-threaded: where
     * images run in parallel or the pool has one thread; the same bits as the packed product) */
    bool direct = sh && !pr && direct_pays(g, Mg) && (g->N > 1 || lithe__pool_threads(lithe__cpu_pool()) <= 1);
    size_t ptrs = ((size_t)K * sizeof(float *) + 63) / 64 * 16; /* pixel rows' row pointers, in floats */
    size_t need = sh ? shifted_floats(g, Cg, K, direct) : pw ? 0 : (size_t)(K * P);
    if (pr && !sh) need += ptrs;
    float *ws = NULL;
    shifted_ws sw = {0};
    lithe_status s = need ? workspace(j->be, need, &ws) : LITHE_OK;
    if (s == LITHE_OK && sh) shifted_init(g, Cg, K, direct, ws, &sw);
    float *col = pr && !sh ? ws + ptrs : ws;
    const float **rows = sh ? sw.rows : (const float **)(void *)ws;
    lithe__sgemm_epilogue pe = {.act = j->a, .act_fn = lithe__simd()->act};
#if defined(__x86_64__) || defined(_M_X64)
    lithe__conv_pw_fn pwk = pw_kernel(g);
#endif
    for (int64_t n = n0; n < n1 && s == LITHE_OK; n++)
        for (int64_t gi = 0; gi < g->group && s == LITHE_OK; gi++) {
            const float *x = j->X + (n * g->C + gi * Cg) * g->H * g->W, *Wg = j->W + gi * Mg * K;
            const float *b = j->b ? j->b + gi * Mg : NULL;
            float *y = j->Y + (n * g->M + gi * Mg) * P;
#if defined(__x86_64__) || defined(_M_X64)
            if (pwk) {
                pw_forward(pwk, g, Cg, Mg, x, Wg, b, j->a, j->R ? j->R + (n * g->M + gi * Mg) * P : NULL, j->res_first, y);
                continue;
            }
#endif
            if (pr) { /* Y_gᵀ = colᵀ · W_gᵀ, bias and activation in the GEMM's store */
                int64_t ow = P, a_row = 0;
                if (sh) {
                    shifted_fill(g, &sw, Cg, x);
                    ow = g->OW;
                    a_row = sw.Wq;
                } else {
                    const float *src = pw ? x : col;
                    if (!pw) im2col(g, x, Cg, col);
                    for (int64_t k = 0; k < K; k++) rows[k] = src + k * P;
                }
                pe.bias = b;
                if (j->R) pe.res = j->R + (n * g->M + gi * Mg) * P, pe.ldr = P, pe.res_first = j->res_first;
                if (!lithe__sgemm_pixels(NULL, true, P, Mg, K, rows, ow, a_row, true, Wg, K, j->Wp, y, P,
                                         b || j->a || j->R ? &pe : NULL))
                    s = LITHE_ERR_OOM;
                continue;
            }
            if (sh) {
                s = shifted_forward(g, &sw, Cg, Mg, K, x, Wg, b, j->a, y);
                if (j->R && s == LITHE_OK) add_residual(y, j->R + (n * g->M + gi * Mg) * P, Mg * P, j->res_first);
                continue;
            }
            if (!pw) im2col(g, x, Cg, ws);
            lithe__sgemm_epilogue e = {.bias_row = b};
            bool in_store = act_in_store(j->a);
            if (in_store) e.act = j->a, e.act_fn = lithe__simd()->act;
            if (j->R) e.res = j->R + (n * g->M + gi * Mg) * P, e.ldr = P, e.res_first = j->res_first;
            if (!lithe__sgemm(NULL, true, false, false, Mg, P, K, 1.0f, Wg, K, pw ? x : ws, P, 0.0f, y, P,
                              b || in_store || j->R ? &e : NULL))
                s = LITHE_ERR_OOM;
            /* other activations over the image-group's output in one call: the GEMM's per-tile
             * epilogue calls the act kernel per tile row (nr floats), which measured slower */
            else if (j->a && !in_store)
                lithe__simd()->act(j->a, Mg * P, y, y);
        }
    if (ws) j->be->ops->free(j->be, ws);
    if (s != LITHE_OK) {
        int ok = LITHE_OK;
        atomic_compare_exchange_strong(&j->status, &ok, (int)s);
    }
}

/* Every image's GEMM (one image per range when there are several; batch 1: the GEMM splits its own
 * work), R added in the store where given (lithe__cpu_conv2d_add). */
static lithe_status gemm_all_images(lithe_backend *be, const lithe__conv2d *g, const float *X, const float *W,
                                    const lithe__sgemm_packed_b *Wp, const float *b, const lithe__act *a,
                                    const float *R, bool res_first, float *Y) {
    gemm_job j = {be, g, X, W, b, a, Y, g->group == 1 ? Wp : NULL, LITHE_OK,
                  pixel_rows(g, g->M / g->group, g->C / g->group * g->KH * g->KW), R, res_first};
    lithe__pool_for(g->N > 1 ? lithe__cpu_pool() : NULL, g->N, 1, gemm_images, &j);
    lithe_status s = (lithe_status)atomic_load(&j.status);
    if (s == LITHE_ERR_OOM) /* the message may have been set on a worker thread: set it here too */
        return lithe__oom("conv2d workspace", (size_t)(g->C / g->group * g->KH * g->KW * g->OH * g->OW) * sizeof(float));
    if (s != LITHE_OK) return lithe__fail(s, "conv2d: the GEMM of an image failed");
    return LITHE_OK;
}

lithe_status lithe__cpu_conv2d(lithe_backend *be, const lithe__conv2d *g, const float *X, const float *W,
                               const float *b, const lithe__act *a, float *Y) {
    return lithe__cpu_conv2d_packed(be, g, X, W, NULL, b, a, Y);
}

lithe_status lithe__cpu_conv2d_packed(lithe_backend *be, const lithe__conv2d *g, const float *X, const float *W,
                                      const lithe__sgemm_packed_b *Wp, const float *b, const lithe__act *a, float *Y) {
    if (is_depthwise(g)) {
        depthwise_forward(be, g, X, W, b, a, Y);
        return LITHE_OK;
    }
    return gemm_all_images(be, g, X, W, Wp, b, a, NULL, false, Y);
}

lithe_status lithe__cpu_conv2d_add(lithe_backend *be, const lithe__conv2d *g, const float *X, const float *W,
                                   const lithe__sgemm_packed_b *Wp, const float *b, const float *R, bool res_first,
                                   float *Y) {
    if (is_depthwise(g)) {
        depthwise_forward(be, g, X, W, b, NULL, Y);
        add_residual(Y, R, g->N * g->M * g->OH * g->OW, res_first);
        return LITHE_OK;
    }
    return gemm_all_images(be, g, X, W, Wp, b, NULL, R, res_first, Y);
}

lithe_status lithe__cpu_conv2d_backward(lithe_backend *be, const lithe__conv2d *g, const float *X, const float *W,
                                        const float *dY, float *dX, float *dW, float *db) {
    /* assign_dx: the shifted rows' dX writes it (backward.c); the other paths add into zeros */
    if (dX && g->assign_dx && (is_depthwise(g) || is_pointwise(g) || !lithe__conv_bwd_taps_dx(g)))
        memset(dX, 0, (size_t)(g->N * g->C * g->H * g->W) * sizeof(float));
    if (is_depthwise(g)) {
        depthwise_backward(g, X, W, dY, dX, dW, db);
        return LITHE_OK;
    }
    int64_t Cg = g->C / g->group, Mg = g->M / g->group, K = Cg * g->KH * g->KW, P = g->OH * g->OW;
    bool pw = is_pointwise(g);
    /* the shifted rows' backward (backward.c): no col matrix, the same bits */
    if (dW && lithe__conv_bwd_taps_dw(g)) { /* and db */
        LITHE__TRY(lithe__conv_bwd_taps_dw_run(be, g, X, dY, dW, db));
        dW = db = NULL;
    }
    if (dX && lithe__conv_bwd_taps_dx(g)) {
        LITHE__TRY(lithe__conv_bwd_taps_dx_run(be, g, W, dY, dX));
        dX = NULL;
    }
    float *col = NULL;
    if (!pw && (dW || dX)) LITHE__TRY(workspace(be, (size_t)(K * P), &col));
    lithe_status s = LITHE_OK;
    for (int64_t n = 0; n < g->N && s == LITHE_OK; n++)
        for (int64_t gi = 0; gi < g->group && s == LITHE_OK; gi++) {
            const float *x = X + (n * g->C + gi * Cg) * g->H * g->W;
            const float *gy = dY + (n * g->M + gi * Mg) * P;
            if (db)
                for (int64_t m = 0; m < Mg; m++) db[gi * Mg + m] += lithe__conv_row_sum(gy + m * P, P);
            if (dW) {
                if (!pw) im2col(g, x, Cg, col);
                s = gemm(be, false, true, Mg, K, P, gy, pw ? x : col, 1.0f, dW + gi * Mg * K);
            }
            if (dX && s == LITHE_OK) {
                float *dx = dX + (n * g->C + gi * Cg) * g->H * g->W;
                if (pw) {
                    s = gemm(be, true, false, K, P, Mg, W + gi * Mg * K, gy, 1.0f, dx);
                } else {
                    s = gemm(be, true, false, K, P, Mg, W + gi * Mg * K, gy, 0.0f, col);
                    if (s == LITHE_OK) col2im(g, col, Cg, dx);
                }
            }
        }
    if (col) be->ops->free(be, col);
    return s;
}
