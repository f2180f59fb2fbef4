/* Seeds for fuzz_lithe_file: small .lithe files written by lithe (fuzz seeds are inputs, not
 * oracles), with nI = 3 to match the target's probe input. Usage: make_lithe_seeds DIR */
#include "lithe.h"

#include <stdio.h>
#include <stdlib.h>

static void save(lithe_model *m, const char *dir, const char *name) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.lithe", dir, name);
    if (lithe_model_initialize(m, NULL, NULL) != LITHE_OK || lithe_model_save(m, NULL, path) != LITHE_OK) {
        fprintf(stderr, "make_lithe_seeds: %s: %s\n", name, lithe_last_error());
        exit(1);
    }
    lithe_model_free(m);
}

/* Seeds for fuzz_optimizer_state (its tree: relu(4) >> softmax(2) on nI = 3): Adam's state before
 * any step and after two, with averages. */
static void state_seeds(const char *dir) {
    lithe_model *a = NULL, *b = NULL, *m = NULL;
    lithe_dense("Relu.v1", &(lithe_dense_opts){.nO = 4, .nI = 3}, &a);
    lithe_softmax(&(lithe_softmax_opts){.nO = 2, .nI = 4}, &b);
    lithe_chain(2, (lithe_model *[]){a, b}, &m);
    lithe_optimizer_opts o = lithe_adam_defaults();
    lithe_optimizer *opt = NULL;
    float x[6] = {0.5f, -1, 2, 0, 1, 1}, dy[4] = {0.1f, -0.1f, 0.2f, -0.2f};
    lithe_tensor *X = NULL, *dY = NULL;
    lithe_value *Xv = NULL, *dYv = NULL;
    if (lithe_model_initialize(m, NULL, NULL) != LITHE_OK || lithe_optimizer_new(&o, &opt) != LITHE_OK ||
        lithe_tensor_from_data(LITHE_F32, 2, (int64_t[]){2, 3}, x, &X) != LITHE_OK ||
        lithe_tensor_from_data(LITHE_F32, 2, (int64_t[]){2, 2}, dy, &dY) != LITHE_OK ||
        lithe_value_tensor(X, &Xv) != LITHE_OK || lithe_value_tensor(dY, &dYv) != LITHE_OK)
        exit(1);
    for (int step = 0; step <= 2; step += 2) {
        for (int k = 0; k < step; k++) {
            lithe_value *Yv = NULL;
            lithe_backprop *bp = NULL;
            if (lithe_model_begin_update(m, Xv, &Yv, &bp) != LITHE_OK || lithe_backprop_run(bp, dYv, NULL) != LITHE_OK ||
                lithe_model_finish_update(m, opt) != LITHE_OK)
                exit(1);
            lithe_backprop_free(bp);
            lithe_value_release(Yv);
        }
        uint8_t *blob = NULL;
        size_t len = 0;
        char path[1024];
        snprintf(path, sizeof path, "%s/adam_step%d.state", dir, step);
        FILE *f = fopen(path, "wb");
        if (lithe_optimizer_save_state(opt, m, &blob, &len) != LITHE_OK || !f || fwrite(blob, 1, len, f) != len) exit(1);
        fclose(f);
        lithe_buffer_free(blob);
    }
    lithe_value_release(Xv);
    lithe_value_release(dYv);
    lithe_tensor_release(X);
    lithe_tensor_release(dY);
    lithe_optimizer_free(opt);
    lithe_model_free(m);
}

/* Usage: make_lithe_seeds LITHE_DIR [STATE_DIR] */
int main(int argc, char **argv) {
    if (argc != 2 && argc != 3) return 2;
    lithe_model *a = NULL, *b = NULL, *c = NULL, *m = NULL;
    lithe_dense("Relu.v1", &(lithe_dense_opts){.nO = 4, .nI = 3}, &a);
    lithe_softmax(&(lithe_softmax_opts){.nO = 2, .nI = 4}, &b);
    lithe_chain(2, (lithe_model *[]){a, b}, &m);
    save(m, argv[1], "relu_softmax");
    lithe_dense("Maxout.v1", &(lithe_dense_opts){.nO = 4, .nI = 3, .nP = 2, .normalize = true, .dropout = 0.1f}, &a);
    lithe_clipped_linear(&(lithe_dense_opts){.nO = 2, .nI = 4}, 2.0f, 0.5f, -1.0f, 1.0f, &b);
    lithe_chain(2, (lithe_model *[]){a, b}, &m);
    save(m, argv[1], "maxout_ln");
    lithe_dense("Mish.v1", &(lithe_dense_opts){.nO = 3, .nI = 3}, &a);
    lithe_residual(a, &b);
    lithe_dense("Linear.v1", &(lithe_dense_opts){.nO = 2, .nI = 3}, &c);
    lithe_concatenate(2, (lithe_model *[]){b, c}, &m);
    save(m, argv[1], "residual_concat");
    lithe_multisoftmax(2, (const int64_t[]){1, 2}, 3, &m);
    save(m, argv[1], "multisoftmax");
    /* compact weights (issue 24): F16, BF16 and per-row int8 W with their lithe.quantization entries */
    static const lithe_dtype compact[] = {LITHE_F16, LITHE_BF16, LITHE_I8};
    static const char *const compact_names[] = {"relu_softmax_f16", "relu_softmax_bf16", "relu_softmax_int8"};
    for (int k = 0; k < 3; k++) {
        lithe_dense("Relu.v1", &(lithe_dense_opts){.nO = 4, .nI = 3}, &a);
        lithe_softmax(&(lithe_softmax_opts){.nO = 2, .nI = 4}, &b);
        lithe_chain(2, (lithe_model *[]){a, b}, &m);
        if (lithe_model_initialize(m, NULL, NULL) != LITHE_OK || lithe_model_compress_weights(m, compact[k], NULL) != LITHE_OK)
            exit(1);
        save(m, argv[1], compact_names[k]);
    }
    if (argc == 3) state_seeds(argv[2]);
    return 0;
}
