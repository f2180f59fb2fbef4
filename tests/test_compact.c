/* Compact weights (issue 24): float16 / bfloat16 / int8 weights of the dense layers, stored
 * compact in memory and in .lithe files, decoded inside the CPU GEMM's packing.
 *   - quantize: lithe_tensor_quantize's int8 (symmetric per row) and uint8 (asymmetric) codes
 *     against a float64 reimplementation of the rule in include/lithe.h;
 *   - gemm: Linear / Relu / Softmax predictions and dX (the forward's X·Wᵀ and the backward's
 *     dY·W: both transposes of the packing) with compact W against float64 products of the
 *     decoded weights (decoded here, independently: f16 / bf16 bit formulas, scale * (q - zp)),
 *     at batch 1, 3 and 64, K across the GEMM's K blocks, N not a multiple of any NR;
 *   - file: save / load keeps the dtype, the scales and the zero points, and the predictions bit
 *     for bit; the mapped load keeps the compact form (no float32 copy: the param is int8);
 *   - frozen: a training step leaves compact W as it was and moves the float32 bias;
 *   - hostile: a scale of 0, NaN, inf or -1, a zero point out of range, a scale array of the wrong
 *     length, a missing quantization entry, an I8 tensor without one, and a compact param of a
 *     layer that cannot compute with it are clear errors at load. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "check.h"

#include "lithe.h"
#include "../backends/cpu/gemm/qgemm.h"

static uint64_t rng_state = 88172645463325252ull;
static double urand(void) { /* xorshift64, [-1, 1) */
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) / (double)(1ull << 52) - 1.0;
}

static lithe_tensor *random_f32(int64_t rows, int64_t cols, double scale) {
    lithe_tensor *t = NULL;
    OK(lithe_tensor_new(NULL, LITHE_F32, 2, (int64_t[]){rows, cols}, &t));
    float *d = lithe_tensor_data(t);
    for (int64_t i = 0; i < rows * cols; i++) d[i] = (float)(scale * urand());
    return t;
}

/* ---- independent decoders ---- */
static double f16_value(uint16_t h) {
    int e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? ldexp(m, -24) : ldexp(1024 + m, e - 25);
    return h & 0x8000 ? -v : v;
}
static double bf16_value(uint16_t b) {
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
/* W's values as doubles, (rows, cols). */
static double *decoded(const lithe_tensor *W) {
    int64_t rows = lithe_tensor_shape(W)[0], cols = lithe_tensor_shape(W)[1];
    double *d = malloc(sizeof *d * (size_t)(rows * cols));
    const void *p = lithe_tensor_data(W);
    int axis = -1;
    int64_t n = 0;
    const float *sc = NULL;
    const int32_t *zp = NULL;
    if (lithe_tensor_dtype(W) == LITHE_I8 || lithe_tensor_dtype(W) == LITHE_U8)
        OK(lithe_tensor_quant_params(W, &axis, &n, &sc, &zp));
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) {
            int64_t i = r * cols + c, q = axis == 0 ? r : 0;
            switch (lithe_tensor_dtype(W)) {
            case LITHE_F16: d[i] = f16_value(((const uint16_t *)p)[i]); break;
            case LITHE_BF16: d[i] = bf16_value(((const uint16_t *)p)[i]); break;
            case LITHE_I8: d[i] = (double)sc[q] * (double)(((const int8_t *)p)[i] - zp[q]); break;
            case LITHE_U8: d[i] = (double)sc[q] * (double)(((const uint8_t *)p)[i] - zp[q]); break;
            default: d[i] = ((const float *)p)[i]; break;
            }
        }
    return d;
}

static void test_quantize(void **state) {
    (void)state;
    lithe_tensor *W = random_f32(37, 300, 0.5), *q = NULL, *u = NULL;
    float *w = lithe_tensor_data(W);
    for (int64_t c = 0; c < 300; c++) w[5 * 300 + c] = 0.0f; /* an all-zero row: scale 1 */
    OK(lithe_tensor_quantize(W, LITHE_I8, 0, &q));
    assert_int_equal(lithe_tensor_dtype(q), LITHE_I8);
    int axis;
    int64_t n;
    const float *sc;
    const int32_t *zp;
    OK(lithe_tensor_quant_params(q, &axis, &n, &sc, &zp));
    assert_int_equal(axis, 0);
    assert_int_equal(n, 37);
    for (int64_t r = 0; r < 37; r++) {
        double amax = 0;
        for (int64_t c = 0; c < 300; c++) amax = fmax(amax, fabs(w[r * 300 + c]));
        double want = amax > 0 ? (double)(float)(amax / 127.0) : 1.0;
        assert_true(fabs(sc[r] - want) <= 1e-7 * want);
        assert_int_equal(zp[r], 0);
        for (int64_t c = 0; c < 300; c++) {
            int8_t v = ((const int8_t *)lithe_tensor_data(q))[r * 300 + c];
            double e = nearbyint(w[r * 300 + c] / (double)sc[r]);
            assert_true(fabs(v - e) <= 1.0 && v >= -127); /* float vs double rounding at ties */
            assert_true(fabs(sc[r] * v - w[r * 300 + c]) <= 0.5001 * sc[r]);
        }
    }
    OK(lithe_tensor_quantize(W, LITHE_U8, -1, &u));
    OK(lithe_tensor_quant_params(u, &axis, &n, &sc, &zp));
    assert_int_equal(axis, -1);
    assert_int_equal(n, 1);
    assert_true(zp[0] > 0 && zp[0] < 255);
    lithe_tensor *back = NULL;
    OK(lithe_tensor_cast(u, LITHE_F32, &back)); /* cast dequantizes */
    for (int64_t i = 0; i < 37 * 300; i++)
        assert_true(fabs(((float *)lithe_tensor_data(back))[i] - w[i]) <= 0.5001 * sc[0] + 1e-7);
    /* bad calls */
    w[7] = NAN;
    lithe_tensor *bad = NULL;
    assert_int_equal(lithe_tensor_quantize(W, LITHE_I8, 0, &bad), LITHE_ERR_VALUE);
    assert_int_equal(lithe_tensor_quantize(W, LITHE_I8, 1, &bad), LITHE_ERR_INVALID_ARG);
    assert_int_equal(lithe_tensor_quantize(W, LITHE_F16, 0, &bad), LITHE_ERR_DTYPE);
    assert_null(bad);
    float s0[2] = {1.0f, 0.0f};
    int32_t z0[2] = {0, 0};
    lithe_tensor *q2 = NULL;
    OK(lithe_tensor_new(NULL, LITHE_I8, 2, (int64_t[]){2, 3}, &q2));
    assert_int_equal(lithe_tensor_set_quant_params(q2, 0, 2, s0, z0), LITHE_ERR_VALUE);
    assert_non_null(strstr(lithe_last_error(), "scale[1]"));
    s0[1] = 2.0f;
    z0[0] = 128;
    assert_int_equal(lithe_tensor_set_quant_params(q2, 0, 2, s0, z0), LITHE_ERR_VALUE);
    assert_non_null(strstr(lithe_last_error(), "zero_point[0] is 128"));
    z0[0] = 0;
    assert_int_equal(lithe_tensor_set_quant_params(q2, 0, 1, s0, z0), LITHE_ERR_SHAPE);
    OK(lithe_tensor_set_quant_params(q2, 0, 2, s0, z0));
    lithe_tensor_release(q2);
    lithe_tensor_release(back);
    lithe_tensor_release(W);
    lithe_tensor_release(q);
    lithe_tensor_release(u);
}

/* chain(Relu(nH), Softmax(nO)) over nI inputs, random weights. */
static lithe_model *mlp(int64_t nI, int64_t nH, int64_t nO) {
    lithe_model *h = NULL, *s = NULL, *m = NULL;
    OK(lithe_dense("Relu.v1", &(lithe_dense_opts){.nO = nH, .nI = nI}, &h));
    OK(lithe_softmax(&(lithe_softmax_opts){.nO = nO, .nI = nH}, &s));
    OK(lithe_chain(2, (lithe_model *[]){h, s}, &m));
    OK(lithe_model_initialize(m, NULL, NULL));
    lithe_model *nodes[3];
    size_t n = 0;
    OK(lithe_model_walk(m, nodes, 3, &n));
    for (size_t i = 1; i < n; i++) {
        lithe_tensor *W = NULL, *b = NULL;
        OK(lithe_model_get_param(nodes[i], "W", &W));
        OK(lithe_model_get_param(nodes[i], "b", &b));
        float *w = lithe_tensor_data(W), *bb = lithe_tensor_data(b);
        for (int64_t k = 0; k < lithe_tensor_numel(W); k++) w[k] = (float)(0.1 * urand());
        for (int64_t k = 0; k < lithe_tensor_numel(b); k++) bb[k] = (float)(0.1 * urand());
    }
    return m;
}

/* Y = relu(X·W1ᵀ + b1) and its dX for dY (computed here in float64 from the decoded W1), checked
 * against the first layer alone (a Relu node: compact W through gemm_bias_act and gemm). */
static void check_layer(lithe_model *relu, int64_t B, int64_t nI, int64_t nH) {
    lithe_tensor *W = NULL, *b = NULL, *X = random_f32(B, nI, 1.0), *dY = random_f32(B, nH, 1.0);
    OK(lithe_model_get_param(relu, "W", &W));
    OK(lithe_model_get_param(relu, "b", &b));
    double *w = decoded(W);
    const float *x = lithe_tensor_data(X), *bb = lithe_tensor_data(b), *dy = lithe_tensor_data(dY);
    lithe_value *xv = NULL, *yv = NULL, *dyv = NULL, *dxv = NULL;
    lithe_backprop *bp = NULL;
    OK(lithe_value_tensor(X, &xv));
    OK(lithe_model_begin_update(relu, xv, &yv, &bp));
    const float *y = lithe_tensor_data(lithe_value_get_tensor(yv));
    double *z = malloc(sizeof *z * (size_t)(B * nH));
    for (int64_t i = 0; i < B; i++)
        for (int64_t j = 0; j < nH; j++) {
            double acc = bb[j], mag = fabs(bb[j]);
            for (int64_t k = 0; k < nI; k++) acc += (double)x[i * nI + k] * w[j * nI + k], mag += fabs(x[i * nI + k] * w[j * nI + k]);
            z[i * nH + j] = acc;
            double want = acc > 0 ? acc : 0;
            if (fabs(y[i * nH + j] - want) > 1e-5 * mag + 1e-6) {
                print_error("Y[%lld][%lld] = %.9g, float64 %.9g\n", (long long)i, (long long)j, y[i * nH + j], want);
                fail();
            }
        }
    OK(lithe_value_tensor(dY, &dyv));
    OK(lithe_backprop_run(bp, dyv, &dxv));
    const float *dx = lithe_tensor_data(lithe_value_get_tensor(dxv));
    for (int64_t i = 0; i < B; i++)
        for (int64_t k = 0; k < nI; k++) {
            double acc = 0, mag = 0;
            for (int64_t j = 0; j < nH; j++) {
                double g = z[i * nH + j] > 0 ? dy[i * nH + j] : 0;
                acc += g * w[j * nI + k], mag += fabs(g * w[j * nI + k]);
            }
            if (fabs(dx[i * nI + k] - acc) > 1e-5 * mag + 1e-6) {
                print_error("dX[%lld][%lld] = %.9g, float64 %.9g\n", (long long)i, (long long)k, dx[i * nI + k], acc);
                fail();
            }
        }
    free(w);
    free(z);
    lithe_backprop_free(bp);
    lithe_value_release(xv);
    lithe_value_release(yv);
    lithe_value_release(dyv);
    lithe_value_release(dxv);
    lithe_tensor_release(X);
    lithe_tensor_release(dY);
}

/* The int8 path (dynamic quantization of X, qgemm.h's rule re-derived here in float / int64):
 * the forward against that rule (1 float rounding apart at most, per term), and dX = dY·W with
 * the decoded W in float64 (the backward reads W decoded: a straight-through estimator). */
static void check_layer_q8_once(lithe_model *relu, int64_t B, int64_t nI, int64_t nH);
/* ... twice: as quantized, then with W's codes negated by lithe_tensor_write (the backend's caches
 * of W, its row sums and its packed form, follow the write) */
static void check_layer_q8(lithe_model *relu, int64_t B, int64_t nI, int64_t nH) {
    check_layer_q8_once(relu, B, nI, nH);
    lithe_tensor *W = NULL;
    OK(lithe_model_get_param(relu, "W", &W));
    int8_t *neg = malloc((size_t)(nH * nI));
    const int8_t *w = lithe_tensor_data(W);
    for (int64_t i = 0; i < nH * nI; i++) neg[i] = (int8_t)-w[i];
    OK(lithe_tensor_write(W, neg, (size_t)(nH * nI)));
    check_layer_q8_once(relu, B, nI, nH);
    for (int64_t i = 0; i < nH * nI; i++) neg[i] = (int8_t)-neg[i];
    OK(lithe_tensor_write(W, neg, (size_t)(nH * nI))); /* back as it was, for the callers' next checks */
    free(neg);
}

static void check_layer_q8_once(lithe_model *relu, int64_t B, int64_t nI, int64_t nH) {
    lithe_tensor *W = NULL, *b = NULL, *X = random_f32(B, nI, 1.0), *Y = NULL;
    OK(lithe_model_get_param(relu, "W", &W));
    OK(lithe_model_get_param(relu, "b", &b));
    const int8_t *w = lithe_tensor_data(W);
    const float *sw = NULL, *x = lithe_tensor_data(X), *bb = lithe_tensor_data(b);
    OK(lithe_tensor_quant_params(W, NULL, NULL, &sw, NULL));
    OK(lithe_model_predict_tensor(relu, X, &Y));
    const float *y = lithe_tensor_data(Y);
    uint8_t *qa = malloc((size_t)nI);
    for (int64_t i = 0; i < B; i++) {
        float lo = 0, hi = 0;
        for (int64_t k = 0; k < nI; k++) lo = fminf(lo, x[i * nI + k]), hi = fmaxf(hi, x[i * nI + k]);
        float sa = hi > lo ? (hi - lo) / 127.0f : 1.0f;
        int za = (int)nearbyintf(-lo / sa);
        for (int64_t k = 0; k < nI; k++) {
            float v = nearbyintf(x[i * nI + k] * (1.0f / sa)) + (float)za;
            qa[k] = (uint8_t)(v < 0 ? 0 : v > 127 ? 127 : v);
        }
        for (int64_t j = 0; j < nH; j++) {
            int64_t acc = 0;
            for (int64_t k = 0; k < nI; k++) acc += ((int64_t)qa[k] - za) * w[j * nI + k];
            double want = (double)acc * ((double)sa * sw[j]) + bb[j];
            want = want > 0 ? want : 0;
            if (fabs(y[i * nH + j] - want) > 1e-6 * (fabs(want) + fabs(bb[j])) + 1e-6) {
                print_error("int8 Y[%lld][%lld] = %.9g, rule %.9g\n", (long long)i, (long long)j, y[i * nH + j], want);
                fail();
            }
            /* and near the float product of the decoded weights (the quantization error of X) */
            double f = bb[j];
            for (int64_t k = 0; k < nI; k++) f += (double)x[i * nI + k] * sw[j] * w[j * nI + k];
            f = f > 0 ? f : 0;
            assert_true(fabs(y[i * nH + j] - f) <= 0.05 * (fabs(f) + 1.0));
        }
    }
    free(qa);
    lithe_tensor_release(X);
    lithe_tensor_release(Y);
}

/* Every int8 microkernel against the scalar twin and an int64 sum, bit for bit: random and
 * extreme values (u7 127 × s8 ±127, the vpmaddubsw pair bound), every edge tile, K a multiple of 32. */
/* lithe_tensor_to_backend keeps an int8 tensor's quantization parameters (a model moved to a
 * device keeps its int8 weights' scales): a host copy, and a round trip through Vulkan where there
 * is one (lavapipe in CI); a view of part of the tensor is refused. */
static void test_to_backend_keeps_params(void **state) {
    (void)state;
    lithe_tensor *W = random_f32(9, 40, 0.5), *q = NULL, *copy = NULL;
    OK(lithe_tensor_quantize(W, LITHE_I8, 0, &q));
    const float *sc0, *sc1;
    const int32_t *zp0, *zp1;
    int axis;
    int64_t n;
    OK(lithe_tensor_quant_params(q, NULL, NULL, &sc0, &zp0));
    OK(lithe_tensor_to_backend(q, NULL, &copy));
    OK(lithe_tensor_quant_params(copy, &axis, &n, &sc1, &zp1));
    assert_int_equal(axis, 0);
    assert_int_equal(n, 9);
    assert_memory_equal(sc0, sc1, 9 * sizeof(float));
    assert_memory_equal(zp0, zp1, 9 * sizeof(int32_t));
    assert_memory_equal(lithe_tensor_data(q), lithe_tensor_data(copy), 9 * 40);
    lithe_backend *vk = NULL;
    if (lithe_backend_get("vulkan", &vk) == LITHE_OK) {
        lithe_tensor *on = NULL, *back = NULL;
        OK(lithe_tensor_to_backend(q, vk, &on));
        OK(lithe_tensor_quant_params(on, NULL, &n, &sc1, NULL));
        assert_int_equal(n, 9);
        OK(lithe_tensor_to_backend(on, NULL, &back));
        OK(lithe_tensor_quant_params(back, NULL, NULL, &sc1, &zp1));
        assert_memory_equal(sc0, sc1, 9 * sizeof(float));
        assert_memory_equal(lithe_tensor_data(q), lithe_tensor_data(back), 9 * 40);
        lithe_tensor_release(on);
        lithe_tensor_release(back);
    }
    lithe_tensor *rows = NULL, *part = NULL;
    OK(lithe_tensor_slice(q, 0, 2, 5, &rows));
    assert_int_equal(lithe_tensor_to_backend(rows, NULL, &part), LITHE_ERR_INVALID_ARG);
    assert_null(part);
    lithe_tensor_release(rows);
    lithe_tensor_release(copy);
    lithe_tensor_release(q);
    lithe_tensor_release(W);
}

static void test_q8_kernels(void **state) {
    (void)state;
    const lithe__q8_kernel *ks[] = {lithe__q8_kernel_scalar(), lithe__q8_kernel_avx2(), lithe__q8_kernel_vnni(),
                                    lithe__q8_kernel_best(), lithe__q8_kernel_neon(), lithe__q8_kernel_neondot(),
                                    lithe__q8_kernel_wasmsimd()};
    enum { NK = sizeof ks / sizeof *ks };
    print_message("int8 kernels: avx2 %s, avx512vnni %s, neon %s, neondot %s, best %s\n", ks[1] ? "yes" : "no",
                  ks[2] ? "yes" : "no", ks[4] ? "yes" : "no", ks[5] ? "yes" : "no",
                  ks[3] ? ks[3]->isa : "none (the float path)");
#if defined(__aarch64__)
    assert_non_null(ks[4]); /* every aarch64 CPU has NEON */
    /* LITHE_EXPECT_Q8=neondot|neon: the ctest entries under qemu's default CPU (dotprod) and
     * QEMU_CPU=cortex-a72 (none) say which kernel the run-time check must choose */
    const char *expect = getenv("LITHE_EXPECT_Q8");
    if (expect) assert_string_equal(ks[3]->isa, expect);
#endif
    enum { KC = 4096 };
    uint8_t *a = malloc(4 * KC);
    int8_t *w = malloc(2 * KC);
    for (int trial = 0; trial < 3; trial++) {
        for (int k = 0; k < 4 * KC; k++) a[k] = (uint8_t)(trial == 1 ? 127 : (rng_state = rng_state * 6364136223846793005ull + 1) >> 57);
        for (int k = 0; k < 2 * KC; k++)
            w[k] = (int8_t)(trial == 1 ? (k % 2 ? -127 : 127) : trial == 2 ? -127 : (int)((rng_state = rng_state * 6364136223846793005ull + 1) >> 56) % 127);
        const size_t kw = trial == 0 ? KC : KC - 7 - 32 * (size_t)trial; /* a partial last chunk: a is zero past kw */
        for (size_t i = 0; i < 4; i++) memset(a + i * KC + kw, 0, KC - kw);
        for (size_t kk = 0; kk < NK; kk++) {
            if (!ks[kk]) continue;
            for (size_t mr = 1; mr <= 4; mr++)
                for (size_t nr = 1; nr <= 2; nr++) {
                    int32_t acc[8] = {0};
                    ks[kk]->tile(mr, nr, kw, a, KC, w, KC, acc);
                    for (size_t i = 0; i < mr; i++)
                        for (size_t j = 0; j < nr; j++) {
                            int64_t want = 0;
                            for (size_t k = 0; k < kw; k++) want += (int64_t)a[i * KC + k] * w[j * KC + k];
                            if (acc[i * 2 + j] != want) {
                                print_error("%s kernel %zux%zu: acc[%zu][%zu] = %d, want %lld\n", ks[kk]->isa, mr, nr, i, j,
                                            acc[i * 2 + j], (long long)want);
                                fail();
                            }
                        }
                }
        }
    }
    free(a);
    free(w);
}

static void test_gemm(void **state) {
    (void)state;
    static const lithe_dtype dts[] = {LITHE_F16, LITHE_BF16, LITHE_I8};
    for (size_t d = 0; d < 3; d++) {
        const int64_t nI = 700, nH = 67; /* K across K blocks, N not a multiple of NR */
        lithe_model *m = mlp(nI, nH, 10);
        size_t n = 0;
        OK(lithe_model_compress_weights(m, dts[d], &n));
        assert_int_equal(n, 2);
        lithe_model *relu = lithe_model_layer(m, 0);
        lithe_tensor *W = NULL;
        OK(lithe_model_get_param(relu, "W", &W));
        assert_int_equal(lithe_tensor_dtype(W), dts[d]);
        assert_true(lithe_model_is_frozen(relu, "W"));
        const int64_t batches[] = {1, 3, 64};
        for (int b = 0; b < 3; b++) {
            if (dts[d] == LITHE_I8 && lithe__q8_kernel_best()) check_layer_q8(relu, batches[b], nI, nH);
            else check_layer(relu, batches[b], nI, nH);
        }
        lithe_model_free(m);
    }
}

static void test_file(void **state) {
    (void)state;
    lithe_model *m = mlp(300, 40, 10);
    OK(lithe_model_compress_weights(m, LITHE_I8, NULL));
    lithe_tensor *X = random_f32(5, 300, 1.0), *Y0 = NULL, *Y1 = NULL;
    OK(lithe_model_predict_tensor(m, X, &Y0));
    uint8_t *bytes = NULL;
    size_t len = 0;
    OK(lithe_model_save_bytes(m, NULL, &bytes, &len));
    assert_non_null(strstr((const char *)bytes + 8, "\"lithe.quantization\""));
    lithe_model *r = NULL;
    OK(lithe_model_load_bytes(bytes, len, &r));
    OK(lithe_model_predict_tensor(r, X, &Y1));
    assert_memory_equal(lithe_tensor_data(Y0), lithe_tensor_data(Y1), 50 * sizeof(float));
    lithe_tensor *W0 = NULL, *W1 = NULL;
    OK(lithe_model_get_param(lithe_model_layer(m, 1), "W", &W0));
    OK(lithe_model_get_param(lithe_model_layer(r, 1), "W", &W1));
    assert_int_equal(lithe_tensor_dtype(W1), LITHE_I8);
    assert_memory_equal(lithe_tensor_data(W0), lithe_tensor_data(W1), 400);
    const float *s0, *s1;
    const int32_t *z0, *z1;
    int64_t n0, n1;
    OK(lithe_tensor_quant_params(W0, NULL, &n0, &s0, &z0));
    OK(lithe_tensor_quant_params(W1, NULL, &n1, &s1, &z1));
    assert_int_equal(n0, n1);
    assert_memory_equal(s0, s1, (size_t)n0 * 4);
    assert_memory_equal(z0, z1, (size_t)n0 * 4);
    /* the file on disk, memory-mapped: still int8 in memory, and 1 byte a weight on disk */
    const char *path = "test_compact_tmp.lithe";
    OK(lithe_model_save(m, NULL, path));
    lithe_model *mm = NULL;
    OK(lithe_model_load(path, &mm));
    OK(lithe_model_get_param(lithe_model_layer(mm, 0), "W", &W1));
    assert_int_equal(lithe_tensor_dtype(W1), LITHE_I8);
    lithe_tensor *Y2 = NULL;
    OK(lithe_model_predict_tensor(mm, X, &Y2));
    assert_memory_equal(lithe_tensor_data(Y0), lithe_tensor_data(Y2), 50 * sizeof(float));
    /* a copy keeps the int8 weights and their scales; Thinc's bytes hold the decoded float32
     * values, the same bytes as those of the model turned back to float32 */
    lithe_model *cp = NULL;
    lithe_tensor *Y3 = NULL;
    OK(lithe_model_copy(mm, &cp));
    OK(lithe_model_predict_tensor(cp, X, &Y3));
    assert_memory_equal(lithe_tensor_data(Y0), lithe_tensor_data(Y3), 50 * sizeof(float));
    uint8_t *tb1 = NULL, *tb2 = NULL;
    size_t tl1 = 0, tl2 = 0;
    OK(lithe_model_to_thinc_bytes(mm, &tb1, &tl1));
    uint8_t *ox1 = NULL, *ox2 = NULL; /* and ONNX export: the decoded values as float32 initializers */
    size_t ol1 = 0, ol2 = 0;
    OK(lithe_model_save_onnx_bytes(mm, &ox1, &ol1));
    OK(lithe_model_compress_weights(cp, LITHE_F32, NULL));
    OK(lithe_model_to_thinc_bytes(cp, &tb2, &tl2));
    OK(lithe_model_save_onnx_bytes(cp, &ox2, &ol2));
    assert_int_equal(tl1, tl2);
    assert_memory_equal(tb1, tb2, tl1);
    assert_int_equal(ol1, ol2);
    assert_memory_equal(ox1, ox2, ol1);
    lithe_buffer_free(ox1);
    lithe_buffer_free(ox2);
    lithe_buffer_free(tb1);
    lithe_buffer_free(tb2);
    lithe_tensor_release(Y3);
    lithe_model_free(cp);
    /* back to float32: the decoded values */
    OK(lithe_model_compress_weights(mm, LITHE_F32, NULL));
    OK(lithe_model_get_param(lithe_model_layer(mm, 0), "W", &W1));
    assert_int_equal(lithe_tensor_dtype(W1), LITHE_F32);
    remove(path);
    lithe_tensor_release(Y2);
    lithe_model_free(mm);
    lithe_buffer_free(bytes);
    lithe_tensor_release(X);
    lithe_tensor_release(Y0);
    lithe_tensor_release(Y1);
    lithe_model_free(m);
    lithe_model_free(r);
}

static void test_frozen(void **state) {
    (void)state;
    lithe_model *m = mlp(50, 20, 4);
    OK(lithe_model_compress_weights(m, LITHE_BF16, NULL));
    lithe_model *relu = lithe_model_layer(m, 0);
    lithe_tensor *W = NULL, *b = NULL;
    OK(lithe_model_get_param(relu, "W", &W));
    OK(lithe_model_get_param(relu, "b", &b));
    uint16_t w0[1000];
    float b0[20];
    memcpy(w0, lithe_tensor_data(W), sizeof w0);
    memcpy(b0, lithe_tensor_data(b), sizeof b0);
    lithe_optimizer_opts o = lithe_sgd_defaults(0.1);
    lithe_optimizer *opt = NULL;
    OK(lithe_optimizer_new(&o, &opt));
    lithe_tensor *X = random_f32(8, 50, 1.0), *dY = random_f32(8, 4, 1.0);
    lithe_value *xv = NULL, *yv = NULL, *dyv = NULL;
    lithe_backprop *bp = NULL;
    OK(lithe_value_tensor(X, &xv));
    OK(lithe_value_tensor(dY, &dyv));
    OK(lithe_model_begin_update(m, xv, &yv, &bp));
    OK(lithe_backprop_run(bp, dyv, NULL));
    OK(lithe_model_finish_update(m, opt));
    assert_memory_equal(w0, lithe_tensor_data(W), sizeof w0);
    assert_memory_not_equal(b0, lithe_tensor_data(b), sizeof b0);
    lithe_backprop_free(bp);
    lithe_value_release(xv);
    lithe_value_release(yv);
    lithe_value_release(dyv);
    lithe_tensor_release(X);
    lithe_tensor_release(dY);
    lithe_optimizer_free(opt);
    lithe_model_free(m);
}

/* Training on a compact base (issue 24, item 5): the hidden layer's W int8 by name
 * (lithe_model_compress_matching), the softmax head float32: Adam steps move the head and every bias,
 * never the int8 codes, which get no gradient buffer and no optimizer state; a pattern matching no
 * dense layer's W is LITHE_ERR_NOT_FOUND and changes nothing. */
static void test_compact_base_float_head(void **state) {
    (void)state;
    lithe_model *m = mlp(50, 20, 4), *relu = lithe_model_layer(m, 0), *head = lithe_model_layer(m, 1);
    lithe_tensor *W1 = NULL, *b1 = NULL, *W2 = NULL;
    size_t n = 99;
    assert_int_equal(lithe_model_compress_matching(m, LITHE_I8, "nothing*", &n), LITHE_ERR_NOT_FOUND);
    assert_non_null(strstr(lithe_last_error(), "nothing*"));
    assert_int_equal(n, 0);
    OK(lithe_model_get_param(relu, "W", &W1));
    assert_int_equal(lithe_tensor_dtype(W1), LITHE_F32);
    char pat[96];
    snprintf(pat, sizeof pat, "%s/W", lithe_model_name(relu));
    OK(lithe_model_compress_matching(m, LITHE_I8, pat, &n));
    assert_int_equal(n, 1);
    OK(lithe_model_get_param(relu, "W", &W1));
    OK(lithe_model_get_param(relu, "b", &b1));
    OK(lithe_model_get_param(head, "W", &W2));
    assert_int_equal(lithe_tensor_dtype(W1), LITHE_I8);
    assert_int_equal(lithe_tensor_dtype(W2), LITHE_F32);
    assert_true(lithe_model_is_frozen(relu, "W"));
    assert_false(lithe_model_is_frozen(head, "W"));
    int8_t w1[1000];
    float b10[20], w20[80];
    memcpy(w1, lithe_tensor_data(W1), sizeof w1);
    memcpy(b10, lithe_tensor_data(b1), sizeof b10);
    memcpy(w20, lithe_tensor_data(W2), sizeof w20);
    lithe_optimizer_opts o = lithe_adam_defaults();
    o.learn_rate = 0.01;
    lithe_optimizer *opt = NULL;
    OK(lithe_optimizer_new(&o, &opt));
    for (int step = 0; step < 3; step++) {
        lithe_tensor *X = random_f32(8, 50, 1.0), *dY = random_f32(8, 4, 1.0);
        lithe_value *xv = NULL, *yv = NULL, *dyv = NULL;
        lithe_backprop *bp = NULL;
        OK(lithe_value_tensor(X, &xv));
        OK(lithe_value_tensor(dY, &dyv));
        OK(lithe_model_begin_update(m, xv, &yv, &bp));
        OK(lithe_backprop_run(bp, dyv, NULL));
        OK(lithe_model_finish_update(m, opt));
        lithe_backprop_free(bp);
        lithe_value_release(xv);
        lithe_value_release(yv);
        lithe_value_release(dyv);
        lithe_tensor_release(X);
        lithe_tensor_release(dY);
    }
    OK(lithe_model_get_param(relu, "W", &W1));
    assert_memory_equal(w1, lithe_tensor_data(W1), sizeof w1);
    assert_memory_not_equal(b10, lithe_tensor_data(b1), sizeof b10);
    assert_memory_not_equal(w20, lithe_tensor_data(W2), sizeof w20);
    /* relu's b, the head's W and b: nothing for the int8 W */
    assert_int_equal(lithe_model_grad_count(m, NULL), 3);
    assert_int_equal(lithe_optimizer_state_count(opt, NULL), 3);
    lithe_optimizer_free(opt);
    lithe_model_free(m);
}

/* ---- hostile files: a valid int8 file, patched ---- */
static uint8_t *file_bytes(size_t *len) {
    lithe_model *m = mlp(6, 4, 3);
    OK(lithe_model_compress_weights(m, LITHE_I8, NULL));
    uint8_t *b = NULL;
    OK(lithe_model_save_bytes(m, NULL, &b, len));
    lithe_model_free(m);
    uint8_t *c = malloc(*len + 256);
    memcpy(c, b, *len);
    lithe_buffer_free(b);
    return c;
}
/* The data offset of tensor `name` in the file. */
static size_t data_at(const uint8_t *f, const char *name) {
    uint64_t hn = 0;
    for (int k = 7; k >= 0; k--) hn = hn << 8 | f[k];
    char key[64];
    snprintf(key, sizeof key, "\"%s\":{", name);
    const char *p = strstr((const char *)f + 8, key);
    assert_non_null(p);
    p = strstr(p, "\"data_offsets\":[");
    return 8 + (size_t)hn + (size_t)strtoull(p + 16, NULL, 10);
}
/* HOSTILE_DUMP=fuzz/hostile writes the damaged files into the hostile corpus (its MANIFEST). */
static void dump(const char *name, const uint8_t *b, size_t n) {
    const char *dir = getenv("HOSTILE_DUMP");
    if (!dir || !name) return;
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fwrite(b, 1, n, f);
    fclose(f);
}

static void expect_load(const uint8_t *f, size_t len, lithe_status want, const char *msg) {
    lithe_model *r = NULL;
    lithe_status s = lithe_model_load_bytes(f, len, &r);
    if (s != want || !strstr(lithe_last_error(), msg)) {
        print_error("got %s (%s), want %s with '%s'\n", lithe_status_str(s), lithe_last_error(), lithe_status_str(want), msg);
        fail();
    }
    if (want == LITHE_OK) lithe_model_free(r);
    else assert_null(r);
}
/* Replaces the header's first `from` with `to`; a longer `to` eats the header's trailing padding
 * spaces, so the data offsets hold. */
static void patch_header(uint8_t *f, const char *from, const char *to) {
    uint64_t hn = 0;
    for (int k = 7; k >= 0; k--) hn = hn << 8 | f[k];
    char *h = (char *)f + 8, *p = strstr(h, from);
    assert_non_null(p);
    size_t a = strlen(from), b = strlen(to), tail = (size_t)(h + hn - (p + a));
    assert_true(b >= a);
    for (size_t k = 0; k < b - a; k++) assert_int_equal(h[hn - 1 - k], ' ');
    memmove(p + b, p + a, tail - (b - a));
    memcpy(p, to, b);
}

static void test_hostile(void **state) {
    (void)state;
    size_t len;
    uint8_t *f = file_bytes(&len);
    expect_load(f, len, LITHE_OK, "");
    const float bad[] = {0.0f, NAN, INFINITY, -1.0f};
    const char *msgs[] = {"scale[2] is 0", "scale[2] is nan", "scale[2] is inf", "scale[2] is -1"};
    const char *names[] = {"lithe_int8_scale_0.lithe", "lithe_int8_scale_nan.lithe", "lithe_int8_scale_inf.lithe", NULL};
    for (int i = 0; i < 4; i++) {
        uint8_t *g = file_bytes(&len);
        memcpy(g + data_at(g, "1.W.scale") + 8, &bad[i], 4);
        dump(names[i], g, len);
        expect_load(g, len, LITHE_ERR_VALUE, msgs[i]);
        free(g);
    }
    uint8_t *g = file_bytes(&len);
    int32_t z = 200;
    memcpy(g + data_at(g, "2.W.zero_point") + 4, &z, 4);
    dump("lithe_int8_zero_point_200.lithe", g, len);
    expect_load(g, len, LITHE_ERR_VALUE, "zero_point[1] is 200, outside int8's range [-128, 127]");
    free(g);
    g = file_bytes(&len); /* a per-tensor entry over 4 scales: the wrong length */
    patch_header(g, "{\\\"axis\\\":0,", "{\\\"axis\\\":null,");
    dump("lithe_int8_scales_wrong_length.lithe", g, len);
    expect_load(g, len, LITHE_ERR_SHAPE, "4 scales and 4 zero points for a per-tensor quantization (needs 1)");
    free(g);
    g = file_bytes(&len); /* the quantization entry renamed away: the I8 tensor has none */
    patch_header(g, "\\\"1.W\\\":{\\\"axis", "\\\"1.X\\\":{\\\"axis");
    expect_load(g, len, LITHE_ERR_FORMAT, "names no I8 or U8 tensor");
    free(g);
    g = file_bytes(&len);
    patch_header(g, "{\\\"axis\\\":0,", "{\\\"axis\\\":1,");
    expect_load(g, len, LITHE_ERR_FORMAT, "axis must be null (per tensor) or 0 (per row)");
    free(g);
    g = file_bytes(&len); /* the scale as I32: not a float tensor */
    char *p = strstr((char *)g + 8, "\"1.W.scale\":{\"dtype\":\"F32\"");
    assert_non_null(p);
    memcpy(strstr(p, "F32"), "I32", 3);
    expect_load(g, len, LITHE_ERR_FORMAT, "its scale names no 1-D F32 tensor");
    free(g);
    free(f);
    /* a compact param where no kernel reads it: LayerNorm's G as F16 */
    lithe_model *ln = NULL, *c = NULL, *lin = NULL;
    OK(lithe_layernorm(4, &ln));
    OK(lithe_dense("Linear.v1", &(lithe_dense_opts){.nO = 4, .nI = 4}, &lin));
    OK(lithe_chain(2, (lithe_model *[]){lin, ln}, &c));
    OK(lithe_model_initialize(c, NULL, NULL));
    uint8_t *b = NULL;
    OK(lithe_model_save_bytes(c, NULL, &b, &len));
    char *q = strstr((char *)b + 8, "\"2.G\":{\"dtype\":\"F32\",\"shape\":[4]");
    assert_non_null(q); /* 4 floats as 8 float16: the shape says [4] so the size check fails first; use [8] */
    memcpy(strstr(q, "F32\",\"shape\":[4]"), "F16\",\"shape\":[8]", 16);
    expect_load(b, len, LITHE_ERR_DTYPE, "param 2.G is float16; only the 2-D W of the dense layers");
    lithe_buffer_free(b);
    lithe_model_free(c);
    /* an I8 param through lithe_model_set_param needs quantization parameters */
    lithe_model *l2 = NULL;
    lithe_tensor *raw = NULL;
    OK(lithe_dense("Linear.v1", &(lithe_dense_opts){.nO = 2, .nI = 3}, &l2));
    OK(lithe_tensor_new(NULL, LITHE_I8, 2, (int64_t[]){2, 3}, &raw));
    assert_int_equal(lithe_model_set_param(l2, "W", raw), LITHE_ERR_DTYPE);
    assert_non_null(strstr(lithe_last_error(), "without quantization parameters"));
    lithe_tensor_release(raw);
    lithe_model_free(l2);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quantize), cmocka_unit_test(test_to_backend_keeps_params), cmocka_unit_test(test_q8_kernels), cmocka_unit_test(test_gemm), cmocka_unit_test(test_file),
        cmocka_unit_test(test_frozen), cmocka_unit_test(test_compact_base_float_head),   cmocka_unit_test(test_hostile),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
