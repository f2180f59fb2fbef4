/* lithe from C: build Thinc's chain(Relu, Softmax), train it with Adam, predict, save it as a
 * .lithe file and load it back. README.md's C quickstart is this file (tests/readme_c_cli.py);
 * tests/install/run.sh builds it against an installed lithe and runs it (examples/c/README.md):
 *   cmake -S examples/c -B build-example -DCMAKE_PREFIX_PATH=PREFIX && cmake --build build-example
 *   cc examples/c/main.c $(pkg-config --cflags --libs lithe) -lm -o example */
#include <lithe.h>
#include <math.h>
#include <stdio.h>

/* Every call returns a status; lithe_last_error() says what went wrong. */
#define CHECK(call) do { lithe_status s_ = (call); if (s_ != LITHE_OK) { \
    fprintf(stderr, "%s: %s\n", lithe_status_str(s_), lithe_last_error()); return 1; } } while (0)

enum { B = 12, D = 4, C = 3 }; /* examples, features, classes */

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "example.lithe";
    float x[B][D], p[B][C], p2[B][C];
    int32_t labels[B];
    for (int i = 0; i < B; i++) { /* a toy problem: the class is the feature that is 1 */
        labels[i] = i % C;
        for (int j = 0; j < D; j++) x[i][j] = j == labels[i] ? 1.0f : 0.05f * (float)((i + j) % 5);
    }
    lithe_tensor *X, *Y;
    lithe_value *Xv, *P, *P2;
    CHECK(lithe_tensor_from_data(LITHE_F32, 2, (int64_t[]){B, D}, x, &X));
    CHECK(lithe_tensor_from_data(LITHE_I32, 1, (int64_t[]){B}, labels, &Y));
    CHECK(lithe_value_tensor(X, &Xv));

    /* chain(Relu(nO=16), Softmax(nO=3)); initialize infers nI from a sample, as Thinc does */
    lithe_model *hidden, *output, *model, *loaded;
    CHECK(lithe_relu(&(lithe_dense_opts){.nO = 16}, &hidden));
    CHECK(lithe_softmax(&(lithe_softmax_opts){.nO = C}, &output));
    CHECK(lithe_chain(2, (lithe_model *[]){hidden, output}, &model)); /* owns the layers now */
    CHECK(lithe_model_set_seed(model, 0));
    CHECK(lithe_model_initialize(model, Xv, NULL));

    /* train: forward, the loss's gradient, backprop (accumulates), Adam (applies) */
    lithe_optimizer_opts adam = lithe_adam_defaults();
    adam.learn_rate = 0.02;
    lithe_optimizer *opt;
    CHECK(lithe_optimizer_new(&adam, &opt));
    double loss = 0.0;
    for (int step = 0; step < 30; step++) {
        lithe_value *G, *dGv;
        lithe_backprop *bp;
        lithe_tensor *dG;
        CHECK(lithe_model_begin_update(model, Xv, &G, &bp));
        CHECK(lithe_cross_entropy(NULL, lithe_value_get_tensor(G), Y, &loss));
        CHECK(lithe_categorical_crossentropy(NULL, lithe_value_get_tensor(G), Y, &dG, NULL));
        CHECK(lithe_value_tensor(dG, &dGv));
        CHECK(lithe_backprop_run(bp, dGv, NULL));
        CHECK(lithe_model_finish_update(model, opt));
        if (step % 10 == 0) printf("step %2d  cross-entropy %.4f\n", step, loss);
        lithe_value_release(dGv), lithe_tensor_release(dG), lithe_backprop_free(bp), lithe_value_release(G);
    }

    /* predict (B, C) probabilities; save; load; the loaded model predicts the same */
    CHECK(lithe_model_predict(model, Xv, &P));
    CHECK(lithe_tensor_read(lithe_value_get_tensor(P), p, sizeof p));
    CHECK(lithe_model_save(model, NULL, path));
    CHECK(lithe_model_load(path, &loaded));
    CHECK(lithe_model_predict(loaded, Xv, &P2));
    CHECK(lithe_tensor_read(lithe_value_get_tensor(P2), p2, sizeof p2));
    int correct = 0;
    float diff = 0.0f;
    for (int i = 0; i < B; i++) {
        int best = 0;
        for (int c = 0; c < C; c++) {
            if (p[i][c] > p[i][best]) best = c;
            diff = fmaxf(diff, fabsf(p2[i][c] - p[i][c]));
        }
        correct += best == labels[i];
    }
    printf("accuracy %d/%d\nsaved %s and loaded it (lithe %s): largest difference %g\n", correct, B, path,
           lithe_version(), diff);

    lithe_value_release(P2), lithe_value_release(P), lithe_value_release(Xv);
    lithe_model_free(loaded), lithe_model_free(model), lithe_optimizer_free(opt);
    lithe_tensor_release(X), lithe_tensor_release(Y);
    return correct == B && diff == 0.0f ? 0 : 1;
}
