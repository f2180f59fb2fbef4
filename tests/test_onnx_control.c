/* ONNX control flow (If, Loop, Scan; core/graph/control.c), expanded at load, against PyTorch 1.13
 * (torch.jit.script'ed If and Loop exported by torch.onnx.export: output, gradients w.r.t. the
 * input and every parameter, five SGD steps) and float64 references of onnx.helper graphs (Scan
 * forward and reverse, a Loop with a scan output, Ifs on constant arithmetic, an If nested in an
 * If) (tests/golden/gen_onnx_control_goldens.py); finite differences; what is refused at load,
 * named; and a Scan fed a sequence of another length than it was unrolled for, refused at run. */
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

static const char *const torch_models[] = {"if_then", "if_else", "loop3"};
static const char *const spec_models[] = {"scan_fwd", "scan_rev", "loop_scanout", "if_arith", "if_arith_else", "if_nested"};
#define N_TORCH (sizeof torch_models / sizeof torch_models[0])
#define N_SPEC (sizeof spec_models / sizeof spec_models[0])

/* The output (begin_update and predict) against the golden; then, for torch's models, dX (where the
 * input is not ids) and every parameter's gradient against torch autograd. */
static void check_model(const char *name, bool grads) {
    const parity_opts o = {.test = "test_onnx_control", .width = 13, .atol = 1e-5, .rtol = 1e-4, .grads = grads, .dx_optional = true};
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

/* Central differences of the loss against lithe's gradients, input and weights. */
static void test_finite_differences(void **state) {
    (void)state;
    const fd_opts o = {.test = "test_onnx_control", .h = 1e-3, .atol = 2e-3, .rtol = 2e-2, .x_stride = 3, .w_parts = 7, .digits = 5};
    for (size_t k = 0; k < N_TORCH + N_SPEC; k++) graph_fd_model(k < N_TORCH ? torch_models[k] : spec_models[k - N_TORCH], &o, 13, 0);
}

/* Five SGD steps (plain SGD, no clipping, no L2) match torch.optim.SGD's, every parameter. */
static void test_sgd_steps(void **state) {
    (void)state;
    const sgd_opts o = {.test = "test_onnx_control", .width = 13, .loss_tol = 1e-4, .atol = 1e-5, .rtol = 1e-4, .count_params = true, .loss_figure = true};
    for (size_t k = 0; k < N_TORCH; k++) graph_sgd_check(torch_models[k], &o);
}

/* What lithe does not run is refused when loaded, with the node's name and the reason. */
static void test_refused_at_load(void **state) {
    (void)state;
    static const struct {
        const char *name, *says;
    } cases[] = {
        {"h_loop_runtime", "computed at run time"}, {"h_if_runtime", "not known at load"},
        {"h_while", "a while loop"},                {"h_scan_dynamic", "not known at load"},
        {"h_scan_axis", "scan_input_axes[0] = 1"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const golden *g = get("%s.onnx", cases[k].name);
        uint8_t *b = bytes_of(g);
        lithe_model *m = NULL;
        lithe_status s = lithe_onnx_load_bytes(b, (size_t)g->n, &m);
        free(b);
        printf("test_onnx_control: %s refused: %s\n", cases[k].name, lithe_last_error());
        assert_int_not_equal(s, LITHE_OK);
        assert_null(m);
        char node[64];
        snprintf(node, sizeof node, "node '%s_node'", cases[k].name);
        assert_non_null(strstr(lithe_last_error(), node));
        assert_non_null(strstr(lithe_last_error(), cases[k].says));
    }
}

/* A Scan unrolled for the length its input declares, fed another length: refused at run time,
 * never a silently shorter scan. */
static void test_scan_length_checked(void **state) {
    (void)state;
    lithe_model *m = graph_load_golden("scan_fwd");
    const golden *gx = get("scan_fwd.x");
    int64_t shape[2] = {gx->shape[0] + 1, gx->shape[1]};
    lithe_tensor *t = NULL;
    OK(lithe_tensor_new(NULL, LITHE_F32, 2, shape, &t));
    lithe_value *X = NULL, *Y = NULL;
    OK(lithe_value_tensor(t, &X));
    lithe_status s = lithe_model_predict(m, X, &Y);
    printf("test_onnx_control: scan_fwd on %lld steps: %s\n", (long long)shape[0], lithe_last_error());
    assert_int_not_equal(s, LITHE_OK);
    /* the graph input's declared (4, 3) is checked first; the Scan's own length check backs it */
    assert_true(strstr(lithe_last_error(), "declares (4, 3)") || strstr(lithe_last_error(), "scan_fwd_node/length_check0"));
    lithe_value_release(X);
    lithe_tensor_release(t);
    lithe_model_free(m);
}

int main(int argc, char **argv) {
    golden_path = argc > 1 ? argv[1] : getenv("LITHE_THINC_GOLDENS");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_torch_parity),       cmocka_unit_test(test_spec_reference),
        cmocka_unit_test(test_finite_differences), cmocka_unit_test(test_sgd_steps),
        cmocka_unit_test(test_refused_at_load),     cmocka_unit_test(test_scan_length_checked),
    };
    return cmocka_run_group_tests(tests, load_goldens, free_goldens);
}
