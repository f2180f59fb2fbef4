/* ONNX's recurrent operators, LSTM / GRU / RNN (core/graph/ops/recurrent.c), against PyTorch 1.13
 * and a float64 implementation of the operators' definition (tests/golden/gen_onnx_rnn_goldens.py):
 * nn.LSTM / nn.GRU / nn.RNN exported by torch.onnx.export (one and two layers, bidirectional,
 * batch_first, learned initial states) — output, gradients w.r.t. the input and every parameter,
 * five SGD steps, including the GRU and LSTM text classifiers (Embedding -> RNN -> last state ->
 * Linear); what torch never exports (sequence_lens, reverse, layout 1, clip, linear_before_reset
 * 0, RNN Sigmoid) against the float64 reference; finite differences for every float-input model;
 * and nodes refused at load, named. */
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
#include "golden/graph_check.h"

static const char *const torch_models[] = {"lstm", "lstm2bi", "gru", "gru2bi", "rnn_tanh", "rnn_relu", "gru_clf", "lstm_clf"};
static const char *const spec_models[] = {"s_lstm_lens", "s_lstm_rev_l1", "s_lstm_clip", "s_gru_lbr0",
                                          "s_gru_rev_l1", "s_rnn_sig", "s_rnn_nostate"};
#define N_TORCH (sizeof torch_models / sizeof torch_models[0])
#define N_SPEC (sizeof spec_models / sizeof spec_models[0])

static lithe_model *load(const char *name) {
    const golden *g = get("%s.onnx", name);
    uint8_t *b = bytes_of(g);
    lithe_model *m = NULL;
    OK(lithe_onnx_load_bytes(b, (size_t)g->n, &m));
    free(b);
    return m;
}

static double max_abs_diff(const lithe_tensor *t, const golden *g) {
    const float *p = lithe_tensor_data(t);
    double worst = 0;
    for (int64_t i = 0; i < g->n && i < lithe_tensor_numel(t); i++) {
        double d = fabs((double)p[i] - g->v[i]);
        if (d > worst || d != d) worst = d != d ? INFINITY : d;
    }
    return worst;
}

/* The output (begin_update and predict) against the golden; then, for torch's models, dX and every
 * parameter's gradient against torch autograd. */
static void check_model(const char *name, bool grads) {
    lithe_model *m = load(name);
    lithe_value *X = value_of(get("%s.x", name)), *Y = NULL, *dX = NULL, *R = value_of(get("%s.r", name)), *P = NULL;
    lithe_backprop *bp = NULL;
    OK(lithe_model_begin_update(m, X, &Y, &bp));
    char what[160];
    snprintf(what, sizeof what, "%s output", name);
    assert_int_equal(lithe_tensor_numel(lithe_value_get_tensor(Y)), get("%s.y", name)->n);
    expect_close(what, lithe_value_get_tensor(Y), get("%s.y", name), 1e-5, 1e-4);
    double worst_y = max_abs_diff(lithe_value_get_tensor(Y), get("%s.y", name));
    OK(lithe_model_predict(m, X, &P));
    snprintf(what, sizeof what, "%s predict output", name);
    expect_close(what, lithe_value_get_tensor(P), get("%s.y", name), 1e-5, 1e-4);
    OK(lithe_backprop_run(bp, R, &dX));
    double worst_g = 0;
    size_t n_torch = 0;
    if (grads) {
        if (find("%s.dx", name)) {
            snprintf(what, sizeof what, "%s dX", name);
            expect_close(what, lithe_value_get_tensor(dX), get("%s.dx", name), 1e-5, 1e-4);
            worst_g = max_abs_diff(lithe_value_get_tensor(dX), get("%s.dx", name));
        }
        for (size_t p = 0; p < lithe_model_n_params(m); p++) {
            const char *pn = lithe_model_param_name(m, p);
            const golden *g = find("%s.grad.%s", name, pn);
            if (!g) continue;
            n_torch++;
            lithe_tensor *G = NULL;
            OK(lithe_model_get_grad(m, pn, &G));
            snprintf(what, sizeof what, "%s grad %s", name, pn);
            expect_close(what, G, g, 1e-5, 1e-4);
            double d = max_abs_diff(G, g);
            if (d > worst_g) worst_g = d;
        }
        assert_int_equal(n_torch, (size_t)get("%s.n_params", name)->v[0]);
    }
    printf("test_onnx_rnn: %-13s output max |lithe - %s| %.2e", name, grads ? "torch" : "float64", worst_y);
    if (grads) printf(", gradients (input and %zu params) %.2e", n_torch, worst_g);
    printf("\n");
    lithe_value_release(X);
    lithe_value_release(Y);
    lithe_value_release(P);
    lithe_value_release(dX);
    lithe_value_release(R);
    lithe_backprop_free(bp);
    lithe_model_free(m);
}

static void test_torch_parity(void **state) {
    (void)state;
    for (size_t k = 0; k < N_TORCH; k++) check_model(torch_models[k], true);
}

static void test_spec_reference(void **state) {
    (void)state;
    for (size_t k = 0; k < N_SPEC; k++) check_model(spec_models[k], false);
}

/* Central differences of the loss against lithe's gradients, input and weights (the classifiers'
 * input is ids: their backward is checked against torch above). */
static void test_finite_differences(void **state) {
    (void)state;
    const fd_opts o = {.test = "test_onnx_rnn", .h = 1e-3, .atol = 2e-3, .rtol = 2e-2, .x_stride = 3, .w_parts = 7, .digits = 5};
    for (size_t k = 0; k < N_TORCH + N_SPEC; k++) {
        const char *name = k < N_TORCH ? torch_models[k] : spec_models[k - N_TORCH];
        if (!find("%s.dx", name) && k < N_TORCH) continue;
        lithe_model *m = load(name);
        int checked = 0, bad = 0;
        fd_check(m, name, &o, &checked, &bad);
        printf("test_onnx_rnn: %-13s %d finite-difference checks, %d off\n", name, checked, bad);
        /* a ReLU kink (rnn_relu, s_rnn_nostate) or a clip edge inside the +-h step may move one */
        assert_true(bad <= checked / 25);
        lithe_model_free(m);
    }
}

/* Five SGD steps (plain SGD, no clipping, no L2) match torch.optim.SGD's, every parameter. */
static void test_sgd_steps(void **state) {
    (void)state;
    for (size_t k = 0; k < N_TORCH; k++) {
        const char *name = torch_models[k];
        lithe_model *m = load(name);
        lithe_value *X = value_of(get("%s.x", name)), *R = value_of(get("%s.r", name));
        lithe_optimizer_opts o = lithe_sgd_defaults(get("%s.lr", name)->v[0]);
        o.grad_clip = 0.0;
        o.L2 = 0.0;
        lithe_optimizer *opt = NULL;
        OK(lithe_optimizer_new(&o, &opt));
        const golden *losses = get("%s.losses", name);
        int steps = (int)get("%s.steps", name)->v[0];
        double worst_loss = 0;
        for (int step = 0; step < steps; step++) {
            lithe_value *Y = NULL;
            lithe_backprop *bp = NULL;
            OK(lithe_model_begin_update(m, X, &Y, &bp));
            const float *y = lithe_tensor_data(lithe_value_get_tensor(Y)), *r = lithe_tensor_data(lithe_value_get_tensor(R));
            double loss = 0;
            for (int64_t i = 0; i < lithe_tensor_numel(lithe_value_get_tensor(R)); i++) loss += (double)y[i] * r[i];
            double d = fabs(loss - losses->v[step]);
            if (d > worst_loss) worst_loss = d;
            if (d > 1e-4 + 1e-4 * fabs(losses->v[step]))
                printf("test_onnx_rnn: %s step %d: loss %.7f, torch %.7f\n", name, step, loss, losses->v[step]);
            assert_true(d <= 1e-4 + 1e-4 * fabs(losses->v[step]));
            OK(lithe_backprop_run(bp, R, NULL));
            OK(lithe_model_finish_update(m, opt));
            lithe_backprop_free(bp);
            lithe_value_release(Y);
        }
        double worst = 0;
        size_t n = 0;
        for (size_t p = 0; p < lithe_model_n_params(m); p++) {
            const char *pn = lithe_model_param_name(m, p);
            const golden *g = find("%s.sgd.%s", name, pn);
            if (!g) continue;
            n++;
            lithe_tensor *W = NULL;
            OK(lithe_model_get_param(m, pn, &W));
            char what[160];
            snprintf(what, sizeof what, "%s after %d SGD steps: %s", name, steps, pn);
            expect_close(what, W, g, 1e-5, 1e-4);
            double d = max_abs_diff(W, g);
            if (d > worst) worst = d;
        }
        assert_int_equal(n, (size_t)get("%s.n_params", name)->v[0]);
        printf("test_onnx_rnn: %-13s %d SGD steps: losses within %.2e, %zu params within %.2e of torch\n", name, steps,
               worst_loss, n, worst);
        lithe_optimizer_free(opt);
        lithe_value_release(X);
        lithe_value_release(R);
        lithe_model_free(m);
    }
}

/* The same nodes on Vulkan (lavapipe in CI), when a device is here: predict and dX of the float-input
 * models against the goldens, so the per-step views and primitives hold on another backend. */
static void test_vulkan(void **state) {
    (void)state;
    lithe_backend *vk = NULL;
    if (lithe_backend_get("vulkan", &vk) != LITHE_OK) {
        print_message("test_vulkan: no Vulkan device here (%s)\n", lithe_last_error());
        return;
    }
    for (size_t k = 0; k < N_TORCH + N_SPEC; k++) {
        const char *name = k < N_TORCH ? torch_models[k] : spec_models[k - N_TORCH];
        if (k < N_TORCH && !find("%s.dx", name)) continue; /* the classifiers: ids */
        lithe_model *m = load(name);
        OK(lithe_model_set_backend(m, vk));
        lithe_tensor *xh = tensor_of(get("%s.x", name)), *rh = tensor_of(get("%s.r", name)), *xd = NULL, *rd = NULL,
                     *yh = NULL, *dxh = NULL;
        OK(lithe_tensor_to_backend(xh, vk, &xd));
        OK(lithe_tensor_to_backend(rh, vk, &rd));
        lithe_value *X = NULL, *R = NULL, *Y = NULL, *dX = NULL;
        OK(lithe_value_tensor(xd, &X));
        OK(lithe_value_tensor(rd, &R));
        lithe_backprop *bp = NULL;
        OK(lithe_model_begin_update(m, X, &Y, &bp));
        OK(lithe_tensor_to_backend(lithe_value_get_tensor(Y), NULL, &yh));
        char what[160];
        snprintf(what, sizeof what, "%s on vulkan: output", name);
        expect_close(what, yh, get("%s.y", name), 1e-5, 1e-4);
        OK(lithe_backprop_run(bp, R, &dX));
        if (find("%s.dx", name)) {
            OK(lithe_tensor_to_backend(lithe_value_get_tensor(dX), NULL, &dxh));
            snprintf(what, sizeof what, "%s on vulkan: dX", name);
            expect_close(what, dxh, get("%s.dx", name), 1e-5, 1e-4);
        }
        printf("test_onnx_rnn: %-13s on vulkan: output%s agree with the goldens\n", name, dxh ? " and dX" : "");
        lithe_tensor_release(yh);
        lithe_tensor_release(dxh);
        lithe_backprop_free(bp);
        lithe_value_release(Y);
        lithe_value_release(dX);
        lithe_value_release(X);
        lithe_value_release(R);
        lithe_tensor_release(xh);
        lithe_tensor_release(rh);
        lithe_tensor_release(xd);
        lithe_tensor_release(rd);
        lithe_model_free(m);
    }
}

/* What lithe does not run is refused when loaded, with the node's name and the reason. */
static void test_refused_at_load(void **state) {
    (void)state;
    static const struct {
        const char *name, *says;
    } cases[] = {
        {"h_acts", "activations[0] = 'Relu'"}, {"h_rnn_acts", "activations[0] = 'Elu'"},
        {"h_alpha", "activation_alpha"},       {"h_peephole", "peephole"},
        {"h_direction", "direction 'sideways'"}, {"h_layout", "layout 2"},
        {"h_clip", "clip -1"},                 {"h_forget", "input_forget"},
        {"h_wshape", "its W 'W' does not have the shape"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const golden *g = get("%s.onnx", cases[k].name);
        uint8_t *b = bytes_of(g);
        lithe_model *m = NULL;
        lithe_status s = lithe_onnx_load_bytes(b, (size_t)g->n, &m);
        free(b);
        printf("test_onnx_rnn: %s refused: %s\n", cases[k].name, lithe_last_error());
        assert_int_not_equal(s, LITHE_OK);
        assert_null(m);
        char node[64];
        snprintf(node, sizeof node, "'%s_node'", cases[k].name);
        assert_non_null(strstr(lithe_last_error(), node));
        assert_non_null(strstr(lithe_last_error(), cases[k].says));
    }
}

int main(int argc, char **argv) {
    golden_path = argc > 1 ? argv[1] : getenv("LITHE_THINC_GOLDENS");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_torch_parity),       cmocka_unit_test(test_spec_reference),
        cmocka_unit_test(test_finite_differences), cmocka_unit_test(test_sgd_steps),
        cmocka_unit_test(test_refused_at_load),    cmocka_unit_test(test_vulkan),
    };
    return cmocka_run_group_tests(tests, load_goldens, free_goldens);
}
