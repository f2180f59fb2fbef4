/* torchvision's mobilenet_v2, resnet18 and mobilenet_v3_small (HardSwish at opset 14, HardSigmoid +
 * Mul at 13), exported by torch.onnx.export, against PyTorch 1.13
 * (tests/golden/gen_torchvision_goldens.py, which writes NAME.onnx beside the golden file): the
 * output of one 224 x 224 and one 64 x 64 image within 1e-4 of torch relative to the output's scale,
 * the gradient of a linear loss with respect to the image against float64 torch autograd within
 * float32 rounding plus what activations at a kink may move (at 224 torch's own float32 dX is up to
 * 3.4e-2 off, relative to max |dx|, and lithe's too, both from flipped kinks; see test_parity), a
 * repeated forward giving the same bits, and one SGD step on the (fused) weights lowering that loss. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lithe.h"
#include "golden/golden.h"

static const char *const models[] = {"mobilenet_v2", "resnet18", "mobilenet_v3_small", "mobilenet_v3_small13"};

static double max_abs(const golden *g) {
    double m = 0;
    for (int64_t i = 0; i < g->n; i++) m = fmax(m, fabs(g->v[i]));
    return m;
}

/* max |t - g| / scale, and the largest elementwise |t - g| / |g| over entries above scale / 100 */
static void errors(const lithe_tensor *t, const golden *g, double scale, double *rel_scale, double *rel_elem) {
    const float *p = lithe_tensor_data(t);
    *rel_scale = *rel_elem = 0;
    assert_int_equal(lithe_tensor_numel(t), g->n);
    for (int64_t i = 0; i < g->n; i++) {
        double d = fabs((double)p[i] - g->v[i]);
        if (d != d) d = INFINITY;
        *rel_scale = fmax(*rel_scale, d / scale);
        if (fabs(g->v[i]) > scale / 100) *rel_elem = fmax(*rel_elem, d / fabs(g->v[i]));
    }
}

static double loss_of(const lithe_value *Y, const lithe_value *R) {
    const float *y = lithe_tensor_data(lithe_value_get_tensor(Y)), *r = lithe_tensor_data(lithe_value_get_tensor(R));
    double s = 0;
    for (int64_t i = 0; i < lithe_tensor_numel(lithe_value_get_tensor(R)); i++) s += (double)y[i] * r[i];
    return s;
}

static void test_parity(void **state) {
    (void)state;
    char dir[512];
    snprintf(dir, sizeof dir, "%s", golden_path);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = '\0';
    else snprintf(dir, sizeof dir, ".");
    /* LITHE_TORCHVISION_SIZES: the image sizes to run (default "224,64"; the sanitizer builds run
     * 64 only: 224 takes about two minutes under ASan) */
    const char *sizes = getenv("LITHE_TORCHVISION_SIZES");
    if (!sizes || !*sizes) sizes = "224,64";
    for (const char *sz = sizes; sz; sz = strchr(sz, ',') ? strchr(sz, ',') + 1 : NULL) {
        for (size_t k = 0; k < sizeof models / sizeof *models; k++) {
            char name[64], path[600];
            snprintf(name, sizeof name, "%s.%d", models[k], atoi(sz));
            snprintf(path, sizeof path, "%s/%s.onnx", dir, models[k]);
            lithe_model *m = NULL;
            OK(lithe_model_load(path, &m));
            lithe_value *X = value_of(get("%s.x", name)), *Y = NULL, *Y2 = NULL, *dX = NULL, *R = value_of(get("%s.r", name));
            lithe_backprop *bp = NULL;
            OK(lithe_model_begin_update(m, X, &Y, &bp));
            double scale = get("%s.scale", name)->v[0], ry, ry_elem, rdx, rdx_elem;
            errors(lithe_value_get_tensor(Y), get("%s.y", name), scale, &ry, &ry_elem);
            OK(lithe_backprop_run(bp, R, &dX));
            /* dX against the float64 gradient. The loss has ReLU / ReLU6 / max-pool kinks everywhere:
             * an activation within float32 noise of one takes the other branch in another float32
             * computation, which routes the gradient differently and moves dX over that activation's
             * receptive field (resnet18 at 224, the image before the goldens had two sizes: three ReLU
             * inputs within 7e-7 of max |z| of 0 took the other branch in lithe's forward, one of
             * them in torch's float32 forward too; the float64 gradient routed through lithe's own
             * branches matched lithe's dX within 1.0e-6 of max |dx|, the unrouted one was 2.0e-2
             * off). NAME.SIZE.kinks bounds, elementwise, how far flipping any activation within
             * float32 reach of a kink (1e-5 of its layer's scale) can move dX (sum |g| |dz/dx|,
             * gen_torchvision_goldens.py), so each element must lie within that envelope (x 1.5 for
             * the flips' second-order interplay) plus 2e-5 of max |dx|; torch's own float32 gradient
             * must too (else the envelope would be wrong), and the mean error stays bounded over
             * every element, envelope or not. */
            const golden *d64 = get("%s.dx64", name), *d32 = get("%s.dx", name), *kinks = get("%s.kinks", name);
            double dscale = max_abs(d64), torch_rdx = 0, mean = 0, torch_mean = 0, beyond = -INFINITY,
                   torch_beyond = -INFINITY;
            double env_mean = 0, env_max = 0; /* the envelope's size, / max |dx| */
            const float *dx = lithe_tensor_data(lithe_value_get_tensor(dX));
            assert_int_equal(kinks->n, d64->n);
            for (int64_t i = 0; i < d64->n; i++) {
                double e = fabs(dx[i] - d64->v[i]), et = fabs(d32->v[i] - d64->v[i]), env = 1.5 * kinks->v[i];
                if (e != e) e = INFINITY;
                torch_rdx = fmax(torch_rdx, et / dscale);
                torch_mean += et / dscale / (double)d64->n;
                mean += e / dscale / (double)d64->n;
                beyond = fmax(beyond, (e - env) / dscale);
                torch_beyond = fmax(torch_beyond, (et - env) / dscale);
                env_mean += env / dscale / (double)d64->n;
                env_max = fmax(env_max, env / dscale);
            }
            errors(lithe_value_get_tensor(dX), d64, dscale, &rdx, &rdx_elem);
            printf("test_torchvision: %-16s output: max |lithe - torch| / max |y| %.2e (elementwise %.2e)\n", name, ry,
                   ry_elem);
            printf("test_torchvision: %-16s dX vs float64 autograd, / max |dx|: lithe max %.2e mean %.2e; torch float32 max "
                   "%.2e mean %.2e\n", name, rdx, mean, torch_rdx, torch_mean);
            printf("test_torchvision: %-16s dX beyond the kinks' envelope (mean %.2e, max %.2e), / max |dx|: lithe %.2e, "
                   "torch float32 %.2e\n", name, env_mean, env_max, beyond, torch_beyond);
            assert_true(ry <= 1e-4);
            assert_true(beyond <= 2e-5);
            assert_true(torch_beyond <= 2e-5);
            assert_true(mean <= 1e-3);
            /* the same input again: the same bits */
            OK(lithe_model_predict(m, X, &Y2));
            const float *a = lithe_tensor_data(lithe_value_get_tensor(Y)), *b = lithe_tensor_data(lithe_value_get_tensor(Y2));
            for (int64_t i = 0; i < lithe_tensor_numel(lithe_value_get_tensor(Y)); i++) assert_true(a[i] == b[i]);
            /* one SGD step on the loss lowers it */
            double before = loss_of(Y, R);
            lithe_optimizer_opts o = lithe_sgd_defaults(1e-3);
            o.grad_clip = 0.0;
            o.L2 = 0.0;
            lithe_optimizer *opt = NULL;
            OK(lithe_optimizer_new(&o, &opt));
            OK(lithe_model_finish_update(m, opt));
            lithe_value_release(Y2);
            Y2 = NULL;
            OK(lithe_model_predict(m, X, &Y2));
            double after = loss_of(Y2, R);
            printf("test_torchvision: %-16s one SGD step (lr 1e-3): loss %.5f -> %.5f\n", name, before, after);
            assert_true(after < before);
            lithe_optimizer_free(opt);
            lithe_backprop_free(bp);
            lithe_value_release(X);
            lithe_value_release(Y);
            lithe_value_release(Y2);
            lithe_value_release(dX);
            lithe_value_release(R);
            lithe_model_free(m);
        }
    }
}

int main(int argc, char **argv) {
    golden_path = argc > 1 ? argv[1] : getenv("LITHE_THINC_GOLDENS");
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_parity)};
    return cmocka_run_group_tests(tests, load_goldens, free_goldens);
}
