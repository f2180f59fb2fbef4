/* The allocation count (issue 26 item 4) for the graph layer: mobilenet_v2 (bench/memory/export_mobilenet.py,
 * eval-mode BatchNorm folded, dynamic batch) at batch 2, full fine-tuning with Adam, the memory plan made
 * first (lithe_model_plan_train, as bench/memory does): after the first step, steps 2..5 take no new block
 * from the allocator (lithe_backend_memory's n_allocs). Before, the plan's buffer pool took its blocks
 * from the CPU backend's cache, among them the ones the convolutions' per-image workspaces had used in
 * the first step's forward, and the second step's forward took fresh ones (7 here, 11 at batch 16); the
 * pool now makes its blocks as persistent allocations (core/tensor.c). One thread: with workers, how many
 * per-thread workspaces are live at once depends on when the workers wake. LITHE_MOBILENET names the
 * model. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "lithe.h"

#define OK(x) assert_int_equal((x), LITHE_OK)

static void test_graph_step_allocates_nothing(void **state) {
    (void)state;
    const char *path = getenv("LITHE_MOBILENET");
    assert_non_null(path);
    lithe_backend *cpu = NULL;
    OK(lithe_backend_get("cpu", &cpu));
    OK(lithe_backend_set_threads(cpu, 1));
    lithe_model *m = NULL;
    OK(lithe_model_load(path, &m));
    OK(lithe_model_set_attr_bool(m, "no_input_grad", true));
    enum { B = 2, N = B * 3 * 224 * 224 };
    float *h = malloc(N * sizeof *h);
    for (int i = 0; i < N; i++) h[i] = (float)((i * 2654435761u) % 1000) / 1000.0f;
    lithe_tensor *X = NULL, *dY = NULL;
    lithe_value *xv = NULL, *dyv = NULL;
    OK(lithe_tensor_from_data(LITHE_F32, 4, (int64_t[]){B, 3, 224, 224}, h, &X));
    for (int i = 0; i < B * 1000; i++) h[i] = 1.0f / B;
    /* made before the first step: a caller's long-lived tensor made during it would take a block the
     * step freed, and the next step would take a fresh one for it */
    OK(lithe_tensor_from_data(LITHE_F32, 2, (int64_t[]){B, 1000}, h, &dY));
    free(h);
    OK(lithe_value_tensor(X, &xv));
    OK(lithe_value_tensor(dY, &dyv));
    lithe_optimizer_opts o = lithe_adam_defaults();
    o.use_averages = false;
    lithe_optimizer *opt = NULL;
    OK(lithe_optimizer_new(&o, &opt));
    lithe_train_memory plan;
    OK(lithe_model_plan_train(m, xv, B, opt, &plan));
    lithe_backend_memory_info a, b;
    for (int i = 0; i < 5; i++) {
        lithe_value *yv = NULL;
        lithe_backprop *bp = NULL;
        OK(lithe_model_begin_update(m, xv, &yv, &bp));
        OK(lithe_backprop_run(bp, dyv, NULL));
        lithe_backprop_free(bp);
        lithe_value_release(yv);
        OK(lithe_model_finish_update(m, opt));
        OK(lithe_backend_memory(cpu, i ? &b : &a));
        if (i) printf("step %d: %zu blocks from the allocator so far\n", i + 1, b.n_allocs);
    }
    printf("mobilenet_v2 at batch 2, full step: %zu new blocks over steps 2..5\n", b.n_allocs - a.n_allocs);
    assert_int_equal(b.n_allocs, a.n_allocs);
    lithe_value_release(dyv);
    lithe_value_release(xv);
    lithe_tensor_release(dY);
    lithe_tensor_release(X);
    lithe_optimizer_free(opt);
    lithe_model_free(m);
    OK(lithe_backend_set_threads(cpu, 0));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_graph_step_allocates_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
