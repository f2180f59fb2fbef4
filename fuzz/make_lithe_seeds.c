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

int main(int argc, char **argv) {
    if (argc != 2) return 2;
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
    return 0;
}
