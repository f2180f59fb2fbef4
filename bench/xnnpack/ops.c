/* Per-op timings behind LITHE_XNNPACK's rule (backends/cpu/xnnpack.c, docs/performance.md): each
 * fully-connected and convolution shape of the bench workloads (MLP b1/b64, CNN b1/b32, mobilenet_v2
 * b1; then depthwise shapes beyond them: 5x5, 3x3 stride 2 on odd sizes), run by lithe's own
 * kernels (the prepared GEMM for FC, the conv2d primitive for Conv) and by Debian's XNNPACK
 * (operators created once, untimed, as at prepare time; NHWC convolutions include the NCHW <-> NHWC
 * transposes lithe's layout needs; NCHW convolutions where this XNNPACK has them).
 * The two are interleaved in one loop, so both see the same machine load; each figure is the
 * minimum over the runs of the thread's CPU time (wall time with --threads > 1), in microseconds.
 * --models DIR: whole models as bench/run.sh exports them (DIR: build/bench), each predicted with
 * the weights prepared with and without XNNPACK operators (LITHE_XNNPACK=0 at prepare time),
 * interleaved the same way, with max |output - PyTorch| for both.
 *   bench_xnnpack_ops [--runs N] [--models DIR [--threads N]]   (target bench_xnnpack_ops, built
 *                                      where libxnnpack-dev is found; 1 thread unless --threads) */
#define _POSIX_C_SOURCE 200809L
#include "../../core/internal.h"
#include "../../backends/cpu/kernels.h" /* lithe__xnn_transpose_planes: the transposes the NHWC path runs */

#include <math.h>
#include <pthreadpool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xnnpack.h>

static clockid_t clock_id = CLOCK_THREAD_CPUTIME_ID; /* wall time with --threads > 1 */
static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(clock_id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void fill(float *p, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        p[i] = (float)((seed >> 8) & 0xffff) / 65536.0f - 0.5f;
    }
}

static lithe_tensor *tensor(int nd, const int64_t *shape, unsigned seed) {
    lithe_tensor *t = NULL;
    if (lithe__tensor_alloc(lithe__backend_cpu(), LITHE_F32, nd, shape, false, &t) != LITHE_OK) exit(1);
    fill(lithe__tdata(t), (size_t)t->numel, seed);
    return t;
}

static int runs = 200;

/* min over runs of a's and b's CPU times (interleaved); us */
typedef void (*run_fn)(void *);
static void race(run_fn a, void *ca, run_fn b, void *cb, double *ta, double *tb) {
    *ta = *tb = INFINITY;
    for (int i = 0; i < runs + 5; i++) {
        double t0 = cpu_now();
        a(ca);
        double t1 = cpu_now();
        if (b) b(cb);
        double t2 = cpu_now();
        if (i >= 5) {
            if (t1 - t0 < *ta) *ta = t1 - t0;
            if (t2 - t1 < *tb) *tb = t2 - t1;
        }
    }
    *ta *= 1e6;
    *tb *= 1e6;
}

static void check(enum xnn_status s, const char *what) {
    if (s != xnn_status_success) {
        fprintf(stderr, "%s: xnn_status %d\n", what, (int)s);
        exit(1);
    }
}

/* ---- fully connected: Y (M, N) = relu?(X (M, K) W (N, K)^T + b) ---- */
typedef struct {
    lithe_tensor *X, *W, *b, *Y;
    lithe__act act;
    bool relu;
    xnn_operator_t op;
} fc_ctx;
static void fc_lithe(void *p) {
    fc_ctx *c = p;
    if (lithe__gemm_bias_act_w(lithe__backend_cpu(), false, false, true, c->X, c->W, c->b, c->relu ? &c->act : NULL,
                               NULL, c->Y) != LITHE_OK)
        exit(1);
}
static void fc_xnn(void *p) {
    fc_ctx *c = p;
    check(xnn_setup_fully_connected_nc_f32(c->op, (size_t)c->X->shape[0], lithe__tdata(c->X), lithe__tdata(c->Y), NULL),
          "setup fc");
    check(xnn_run_operator(c->op, NULL), "run fc");
}
static void fc(const char *name, int64_t M, int64_t N, int64_t K, bool relu) {
    fc_ctx c = {tensor(2, (int64_t[]){M, K}, 1), tensor(2, (int64_t[]){N, K}, 2), tensor(1, (int64_t[]){N}, 3),
                tensor(2, (int64_t[]){M, N}, 4), {.kind = LITHE__ACT_RELU}, relu, NULL};
    if (lithe__prepare_b(c.W, true, lithe__backend_cpu()) != LITHE_OK) exit(1);
    check(xnn_create_fully_connected_nc_f32((size_t)K, (size_t)N, (size_t)K, (size_t)N, lithe__tdata(c.W),
                                            lithe__tdata(c.b), relu ? 0.0f : -INFINITY, INFINITY, 0, &c.op),
          "create fc");
    double tl, tx;
    race(fc_lithe, &c, fc_xnn, &c, &tl, &tx);
    printf("| %s | fc %lldx%lldx%lld%s | %.1f | %.1f | n/a | %.2f |\n", name, (long long)M, (long long)N, (long long)K,
           relu ? " relu" : "", tl, tx, tl / tx);
    xnn_delete_operator(c.op);
    lithe_tensor_release(c.X);
    lithe_tensor_release(c.W);
    lithe_tensor_release(c.b);
    lithe_tensor_release(c.Y);
}

/* ---- convolution, lithe NCHW ---- */
typedef struct {
    lithe__conv2d g;
    lithe_tensor *X, *W, *b, *Y;
    xnn_operator_t nhwc, nchw;
    float *xt, *yt;
} conv_ctx;
static void conv_lithe(void *p) {
    conv_ctx *c = p;
    if (lithe__op_conv2d(lithe__backend_cpu(), &c->g, c->X, c->W, c->b, NULL, c->Y) != LITHE_OK) exit(1);
}
static void conv_xnn_nhwc(void *p) {
    conv_ctx *c = p;
    const lithe__conv2d *g = &c->g;
    lithe__xnn_transpose_planes(lithe__tdata(c->X), c->xt, g->N, g->C, g->H * g->W);
    check(xnn_setup_convolution2d_nhwc_f32(c->nhwc, (size_t)g->N, (size_t)g->H, (size_t)g->W, c->xt, c->yt, NULL),
          "setup nhwc");
    check(xnn_run_operator(c->nhwc, NULL), "run nhwc");
    lithe__xnn_transpose_planes(c->yt, lithe__tdata(c->Y), g->N, g->OH * g->OW, g->M);
}
static void conv_xnn_nchw(void *p) {
    conv_ctx *c = p;
    const lithe__conv2d *g = &c->g;
    if (g->group == 1 && g->KH == 3) { /* the 3x3 s2 first-layer kernel reads NHWC and writes NCHW */
        lithe__xnn_transpose_planes(lithe__tdata(c->X), c->xt, g->N, g->C, g->H * g->W);
        check(xnn_setup_convolution2d_nchw_f32(c->nchw, (size_t)g->N, (size_t)g->H, (size_t)g->W, c->xt,
                                               lithe__tdata(c->Y), NULL),
              "setup nchw");
        check(xnn_run_operator(c->nchw, NULL), "run nchw");
        return;
    }
    check(xnn_setup_convolution2d_nchw_f32(c->nchw, (size_t)g->N, (size_t)g->H, (size_t)g->W, lithe__tdata(c->X),
                                           lithe__tdata(c->Y), NULL),
          "setup nchw");
    check(xnn_run_operator(c->nchw, NULL), "run nchw");
}
static void conv(const char *name, int count, int64_t N, int64_t C, int64_t H, int64_t M, int64_t k, int64_t s,
                 int64_t pad, int64_t group, double *sum_l, double *sum_x) {
    conv_ctx c = {0};
    lithe__conv2d *g = &c.g;
    g->N = N, g->C = C, g->H = g->W = H, g->M = M, g->KH = g->KW = k, g->group = group;
    g->stride[0] = g->stride[1] = s;
    g->dil[0] = g->dil[1] = 1;
    for (int i = 0; i < 4; i++) g->pad[i] = pad;
    g->OH = g->OW = (H + 2 * pad - k) / s + 1;
    int64_t Cg = C / group, Mg = M / group;
    c.X = tensor(4, (int64_t[]){N, C, H, H}, 1);
    c.W = tensor(4, (int64_t[]){M, Cg, k, k}, 2);
    c.b = tensor(1, (int64_t[]){M}, 3);
    c.Y = tensor(4, (int64_t[]){N, M, g->OH, g->OW}, 4);
    c.xt = malloc(sizeof(float) * (size_t)(N * C * H * H));
    c.yt = malloc(sizeof(float) * (size_t)(N * M * g->OH * g->OW));
    /* OIHW -> OHWI (per group: [group][Mg][KH][KW][Cg]) */
    float *w = malloc(sizeof(float) * (size_t)(M * Cg * k * k)), *W = lithe__tdata(c.W);
    for (int64_t o = 0; o < M; o++)
        for (int64_t i = 0; i < Cg; i++)
            for (int64_t p = 0; p < k * k; p++) w[(o * k * k + p) * Cg + i] = W[(o * Cg + i) * k * k + p];
    bool dw = group == C && group == M;
    check(xnn_create_convolution2d_nhwc_f32((uint32_t)pad, (uint32_t)pad, (uint32_t)pad, (uint32_t)pad, (uint32_t)k,
                                            (uint32_t)k, (uint32_t)s, (uint32_t)s, 1, 1, (uint32_t)group, (size_t)Cg,
                                            (size_t)Mg, (size_t)C, (size_t)M, w, lithe__tdata(c.b), -INFINITY, INFINITY,
                                            0, &c.nhwc),
          "create nhwc");
    enum xnn_status sn = xnn_create_convolution2d_nchw_f32(
        (uint32_t)pad, (uint32_t)pad, (uint32_t)pad, (uint32_t)pad, (uint32_t)k, (uint32_t)k, (uint32_t)s, (uint32_t)s, 1,
        1, (uint32_t)group, (size_t)Cg, (size_t)Mg, (size_t)C, (size_t)M, dw ? W : w, lithe__tdata(c.b), -INFINITY,
        INFINITY, group == 1 && k == 3 ? XNN_FLAG_INPUT_NHWC : 0, &c.nchw);
    if (sn != xnn_status_success) c.nchw = NULL;
    double tl, tx, tl2, tn = NAN;
    race(conv_lithe, &c, conv_xnn_nhwc, &c, &tl, &tx);
    if (c.nchw) race(conv_lithe, &c, conv_xnn_nchw, &c, &tl2, &tn);
    double best = tx < tn || isnan(tn) ? tx : tn;
    printf("| %s | conv %lldx%lldx%lldx%lld -> %lld, %lldx%lld s%lld p%lld g%lld (x%d) | %.1f | %.1f | ", name, (long long)N,
           (long long)C, (long long)H, (long long)H, (long long)M, (long long)k, (long long)k, (long long)s, (long long)pad,
           (long long)group, count, tl, tx);
    if (c.nchw) printf("%.1f | %.2f |\n", tn, tl / best);
    else printf("n/a | %.2f |\n", tl / best);
    *sum_l += count * tl;
    *sum_x += count * best;
    xnn_delete_operator(c.nhwc);
    if (c.nchw) xnn_delete_operator(c.nchw);
    free(w);
    free(c.xt);
    free(c.yt);
    lithe_tensor_release(c.X);
    lithe_tensor_release(c.W);
    lithe_tensor_release(c.b);
    lithe_tensor_release(c.Y);
}

/* ---- whole models ---- */
static lithe_tensor *npy(const char *dir, const char *name) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        exit(1);
    }
    static uint8_t buf[1 << 24];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    lithe_tensor *t = NULL;
    if (lithe_npy_load(buf, n, &t) != LITHE_OK) exit(1);
    return t;
}
typedef struct {
    lithe_model *m;
    lithe_value *X;
} model_ctx;
static void predict(void *p) {
    model_ctx *c = p;
    lithe_value *Y = NULL;
    if (lithe_model_predict(c->m, c->X, &Y) != LITHE_OK) {
        fprintf(stderr, "predict: %s\n", lithe_last_error());
        exit(1);
    }
    lithe_value_release(Y);
}
static double err(model_ctx *c, const lithe_tensor *ref) {
    lithe_value *Y = NULL;
    if (lithe_model_predict(c->m, c->X, &Y) != LITHE_OK) exit(1);
    const float *y = lithe_tensor_data(lithe_value_get_tensor(Y)), *r = lithe_tensor_data((lithe_tensor *)ref);
    double e = 0;
    for (int64_t i = 0; i < lithe_tensor_numel((lithe_tensor *)ref); i++) e = fmax(e, fabs((double)y[i] - r[i]));
    lithe_value_release(Y);
    return e;
}
static void model(const char *dir, const char *file, const char *workload) {
    char path[1024], name[256];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    model_ctx a = {0}, b = {0};
    if (lithe_model_load(path, &a.m) != LITHE_OK || lithe_model_load(path, &b.m) != LITHE_OK) {
        fprintf(stderr, "%s: %s\n", path, lithe_last_error());
        exit(1);
    }
    snprintf(name, sizeof name, "%s_x.npy", workload);
    lithe_tensor *X = npy(dir, name);
    snprintf(name, sizeof name, "%s_%sref.npy", workload, strstr(file, ".lithe") ? "softmax_" : "");
    lithe_tensor *R = npy(dir, name);
    if (lithe_value_tensor(X, &a.X) != LITHE_OK || lithe_value_tensor(X, &b.X) != LITHE_OK) exit(1);
    setenv("LITHE_XNNPACK", "0", 1);
    if (lithe_model_prepare_inference(a.m) != LITHE_OK) exit(1);
    unsetenv("LITHE_XNNPACK");
    if (lithe_model_prepare_inference(b.m) != LITHE_OK) exit(1);
    double tl, tx;
    race(predict, &a, predict, &b, &tl, &tx);
    printf("| %s (%s) | %.0f | %.0f | %.2f | %.1e | %.1e |\n", workload, file, tl, tx, tl / tx, err(&a, R), err(&b, R));
    lithe_value_release(a.X);
    lithe_value_release(b.X);
    lithe_tensor_release(X);
    lithe_tensor_release(R);
    lithe_model_free(a.m);
    lithe_model_free(b.m);
}

int main(int argc, char **argv) {
    if (argc > 2 && !strcmp(argv[1], "--runs")) runs = atoi(argv[2]);
    int threads = 1;
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
    if (lithe_backend_set_threads(lithe__backend_cpu(), threads) != LITHE_OK) return 1;
    if (threads > 1) clock_id = CLOCK_MONOTONIC;
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--models")) {
            const char *d = argv[i + 1];
            printf("| workload | lithe prepared us | lithe + XNNPACK prepared us | ratio | max err lithe | max err XNNPACK |\n");
            printf("|---|---|---|---|---|---|\n");
            model(d, "mlp.onnx", "mlp_b1");
            model(d, "mlp.onnx", "mlp_b64");
            model(d, "mlp.lithe", "mlp_b1");
            model(d, "mlp.lithe", "mlp_b64");
            model(d, "cnn.onnx", "cnn_b1");
            model(d, "cnn.onnx", "cnn_b32");
            model(d, "mobilenet_v2.onnx", "mobilenet_v2_b1");
            return 0;
        }
    check(xnn_initialize(NULL), "xnn_initialize");
    printf("| workload | op | lithe us | XNNPACK NHWC (+transposes) / FC us | XNNPACK NCHW us | lithe / best XNNPACK |\n");
    printf("|---|---|---|---|---|---|\n");
    fc("mlp_b1", 1, 512, 784, true);
    fc("mlp_b1", 1, 512, 512, true);
    fc("mlp_b1", 1, 10, 512, false);
    fc("mlp_b64", 64, 512, 784, true);
    fc("mlp_b64", 64, 512, 512, true);
    fc("mlp_b64", 64, 10, 512, false);
    fc("cnn_b1", 1, 128, 1568, true);
    fc("cnn_b1", 1, 10, 128, false);
    fc("cnn_b32", 32, 128, 1568, true);
    fc("cnn_b32", 32, 10, 128, false);
    fc("mobilenet_v2_b1", 1, 1000, 1280, false);
    double l = 0, x = 0;
    for (int n = 1; n <= 32; n += 31) {
        const char *w = n == 1 ? "cnn_b1" : "cnn_b32";
        conv(w, 1, n, 1, 28, 16, 5, 1, 2, 1, &l, &x);
        conv(w, 1, n, 16, 14, 32, 5, 1, 2, 1, &l, &x);
    }
    l = x = 0;
    /* mobilenet_v2's convolutions: (count, C, H, M, k, s, group) */
    static const int mb[][7] = {
        {1, 3, 224, 32, 3, 2, 1},     {1, 32, 112, 32, 3, 1, 32},   {1, 32, 112, 16, 1, 1, 1},
        {1, 16, 112, 96, 1, 1, 1},    {1, 96, 112, 96, 3, 2, 96},   {1, 96, 56, 24, 1, 1, 1},
        {1, 24, 56, 144, 1, 1, 1},    {1, 144, 56, 144, 3, 1, 144}, {1, 144, 56, 24, 1, 1, 1},
        {1, 144, 56, 144, 3, 2, 144}, {1, 144, 28, 32, 1, 1, 1},    {2, 32, 28, 192, 1, 1, 1},
        {2, 192, 28, 192, 3, 1, 192}, {2, 192, 28, 32, 1, 1, 1},    {1, 192, 28, 192, 3, 2, 192},
        {1, 192, 14, 64, 1, 1, 1},    {4, 64, 14, 384, 1, 1, 1},    {4, 384, 14, 384, 3, 1, 384},
        {3, 384, 14, 64, 1, 1, 1},    {1, 384, 14, 96, 1, 1, 1},    {3, 96, 14, 576, 1, 1, 1},
        {2, 576, 14, 576, 3, 1, 576}, {2, 576, 14, 96, 1, 1, 1},    {1, 576, 14, 576, 3, 2, 576},
        {1, 576, 7, 160, 1, 1, 1},    {3, 160, 7, 960, 1, 1, 1},    {3, 960, 7, 960, 3, 1, 960},
        {2, 960, 7, 160, 1, 1, 1},    {1, 960, 7, 320, 1, 1, 1},    {1, 320, 7, 1280, 1, 1, 1},
    };
    for (size_t i = 0; i < sizeof mb / sizeof mb[0]; i++)
        conv("mobilenet_v2_b1", mb[i][0], 1, mb[i][1], mb[i][2], mb[i][3], mb[i][4], mb[i][5], mb[i][4] / 2, mb[i][6],
             &l, &x);
    printf("\nmobilenet_v2_b1 convolutions in all: lithe %.0f us, best XNNPACK per op %.0f us\n", l, x);
    /* depthwise shapes outside mobilenet_v2, for the depthwise rule: 5x5 (EfficientNet-B0's and
     * MnasNet's, stride 1 and 2) and 3x3 at stride 2 on odd sizes (padding 1 all round reads the
     * bottom / right padding, which lithe's in-place 3x3 does not take) */
    static const int dw[][5] = {/* C, H, k, s, pad */
                                {144, 56, 5, 2, 2}, {240, 28, 5, 1, 2}, {240, 28, 5, 2, 2}, {480, 14, 5, 1, 2},
                                {672, 14, 5, 1, 2}, {672, 14, 5, 2, 2}, {1152, 7, 5, 1, 2}, {96, 113, 3, 2, 1},
                                {144, 57, 3, 2, 1}, {192, 29, 3, 2, 1}, {576, 15, 3, 2, 1}, {960, 7, 3, 2, 1}};
    l = x = 0;
    printf("\n");
    for (size_t i = 0; i < sizeof dw / sizeof dw[0]; i++)
        conv("depthwise", 1, 1, dw[i][0], dw[i][1], dw[i][0], dw[i][2], dw[i][3], dw[i][4], dw[i][0], &l, &x);
    return 0;
}
