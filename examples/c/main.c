/* lithe from C: build Thinc's chain(Relu, Softmax), train it with Adam, predict, save it as a
 * .lithe file and load it back. Build against an installed lithe (examples/c/README.md):
 *   cmake -S examples/c -B build-example -DCMAKE_PREFIX_PATH=PREFIX && cmake --build build-example
 *   cc examples/c/main.c $(pkg-config --cflags --libs lithe) -o example */
#include <lithe.h>

#include <math.h>
#include <stdio.h>

/* Every call returns a status; lithe_last_error() says what went wrong. */
#define CHECK(call)                                                                                     \
    do {                                                                                                \
        lithe_status s_ = (call);                                                                       \
        if (s_ != LITHE_OK) {                                                                           \
            fprintf(stderr, "%s: %s: %s\n", #call, lithe_status_str(s_), lithe_last_error());           \
            return 1;                                                                                   \
        }                                                                                               \
    } while (0)

enum { B = 12, D = 4, C = 3 }; /* examples, features, classes */

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "example.lithe";
    /* a toy problem: the class is the index of the largest of the first three features */
    float x[B][D];
    int32_t labels[B];
    for (int i = 0; i < B; i++) {
        labels[i] = i % C;
        for (int j = 0; j < D; j++) x[i][j] = j == labels[i] ? 1.0f : 0.05f * (float)((i + j) % 5);
    }
    lithe_tensor *X, *Y;
    lithe_value *Xv;
    CHECK(lithe_tensor_from_data(LITHE_F32, 2, (int64_t[]){B, D}, x, &X));
    CHECK(lithe_tensor_from_data(LITHE_I32, 1, (int64_t[]){B}, labels, &Y));
    CHECK(lithe_value_tensor(X, &Xv));

    /* chain(Relu(nO=16), Softmax(nO=3)); initialize infers nI from a sample, as in Thinc */
    lithe_model *hidden, *output, *model;
    CHECK(lithe_relu(&(lithe_dense_opts){.nO = 16}, &hidden));
    CHECK(lithe_softmax(&(lithe_softmax_opts){.nO = C}, &output));
    CHECK(lithe_chain(2, (lithe_model *[]){hidden, output}, &model)); /* owns the layers now */
    CHECK(lithe_model_set_seed(model, 0));
    CHECK(lithe_model_initialize(model, Xv, NULL));

    /* training: forward, the loss's gradient, backprop (accumulates), Adam (applies) */
    lithe_optimizer_opts adam = lithe_adam_defaults();
    adam.learn_rate = 0.02;
    lithe_optimizer *opt;
    CHECK(lithe_optimizer_new(&adam, &opt));
    double first = 0.0, ce = 0.0;
    for (int step = 0; step < 30; step++) {
        lithe_value *G, *dGv;
        lithe_backprop *bp;
        lithe_tensor *dG;
        CHECK(lithe_model_begin_update(model, Xv, &G, &bp));
        CHECK(lithe_cross_entropy(NULL, lithe_value_get_tensor(G), Y, &ce));
        CHECK(lithe_categorical_crossentropy(NULL, lithe_value_get_tensor(G), Y, &dG, NULL));
        CHECK(lithe_value_tensor(dG, &dGv));
        CHECK(lithe_backprop_run(bp, dGv, NULL));
        CHECK(lithe_model_finish_update(model, opt));
        if (step == 0) first = ce;
        lithe_value_release(dGv);
        lithe_tensor_release(dG);
        lithe_backprop_free(bp);
        lithe_value_release(G);
    }
    printf("cross-entropy %.4f after 1 step, %.4f after 30\n", first, ce);

    /* predict: class probabilities (B, C) */
    lithe_value *P;
    float p[B][C];
    CHECK(lithe_model_predict(model, Xv, &P));
    CHECK(lithe_tensor_read(lithe_value_get_tensor(P), p, sizeof p));
    int correct = 0;
    for (int i = 0; i < B; i++) {
        int best = 0;
        for (int c = 1; c < C; c++)
            if (p[i][c] > p[i][best]) best = c;
        correct += best == labels[i];
    }
    printf("accuracy %d/%d\n", correct, B);

    /* save, load, and the loaded model predicts the same */
    lithe_model *loaded;
    lithe_value *P2;
    float p2[B][C];
    CHECK(lithe_model_save(model, NULL, path));
    CHECK(lithe_model_load(path, &loaded));
    CHECK(lithe_model_predict(loaded, Xv, &P2));
    CHECK(lithe_tensor_read(lithe_value_get_tensor(P2), p2, sizeof p2));
    float diff = 0.0f;
    for (int i = 0; i < B; i++)
        for (int c = 0; c < C; c++) diff = fmaxf(diff, fabsf(p2[i][c] - p[i][c]));
    printf("saved %s; loaded %s (lithe %s): largest difference %g\n", path, lithe_model_name(loaded),
           lithe_version(), diff);

    lithe_value_release(P2);
    lithe_value_release(P);
    lithe_model_free(loaded);
    lithe_optimizer_free(opt);
    lithe_model_free(model);
    lithe_value_release(Xv);
    lithe_tensor_release(X);
    lithe_tensor_release(Y);
    return correct == B && diff == 0.0f ? 0 : 1;
}
