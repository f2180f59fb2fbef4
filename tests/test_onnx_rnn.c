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

/* The output (begin_update and predict) against the golden; then, for torch's models, dX (where the
 * input is not ids) and every parameter's gradient against torch autograd. */
static void check_model(const char *name, bool grads) {
    const parity_opts o = {.test = "test_onnx_rnn", .width = 13, .atol = 1e-5, .rtol = 1e-4, .grads = grads, .dx_optional = true};
    graph_parity(name, &o);
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
        /* a ReLU kink (rnn_relu, s_rnn_nostate) or a clip edge inside the +-h step may move one */
        graph_fd_model(name, &o, 13, 25);
    }
}

/* Five SGD steps (plain SGD, no clipping, no L2) match torch.optim.SGD's, every parameter. */
static void test_sgd_steps(void **state) {
    (void)state;
    const sgd_opts o = {.test = "test_onnx_rnn", .width = 13, .loss_tol = 1e-4, .atol = 1e-5, .rtol = 1e-4, .count_params = true, .loss_figure = true};
    for (size_t k = 0; k < N_TORCH; k++) graph_sgd_check(torch_models[k], &o);
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
        lithe_model *m = graph_load_golden(name);
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
