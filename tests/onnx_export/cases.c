/* The models tests/onnx_export.py checks against the ONNX checker and onnxruntime-node: each one
 * fine-tuned for five SGD steps in lithe, then exported by lithe_model_save_onnx.
 *   onnx_export_cases DIR
 * reads DIR/graphs.txt ("<name> <lr> <model path> <input .npy>" per line: the ONNX parity models
 * and the dtype model the script wrote, a TF.js model), builds the native dense-catalogue trees
 * itself, and writes for each case DIR/out/<name>.onnx, <name>.in.npy (the input) and
 * <name>.out.npy (lithe's prediction after training), listed in DIR/out/cases.txt. It also checks
 * here what needs no peer: training moved the prediction, the exported file loads back into lithe
 * and predicts the same, and layers without an ONNX equivalent are refused naming the node.
 * Exit status 0 when every check passed. */
#include "lithe.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;
static const char *dir;

#define CHECK(cond, ...)                                                                                     \
    do {                                                                                                     \
        if (!(cond)) {                                                                                       \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                             \
            fprintf(stderr, __VA_ARGS__);                                                                    \
            fprintf(stderr, "\n");                                                                           \
            failures++;                                                                                      \
        }                                                                                                    \
    } while (0)
#define OK(expr)                                                                                             \
    do {                                                                                                     \
        lithe_status st_ = (expr);                                                                           \
        if (st_ != LITHE_OK) {                                                                               \
            fprintf(stderr, "FAIL %s:%d: %s: %s\n", __FILE__, __LINE__, #expr, lithe_last_error());          \
            failures++;                                                                                      \
            goto done;                                                                                       \
        }                                                                                                    \
    } while (0)

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static float randn(void) { /* a deterministic, roughly normal draw (sum of uniforms) */
    float s = 0.0f;
    for (int i = 0; i < 4; i++) {
        rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
        s += (float)(rng_state >> 40) / (float)(1ull << 24) - 0.5f;
    }
    return s * 1.7f;
}

static lithe_tensor *rand_tensor(int ndim, const int64_t *shape, float scale) {
    lithe_tensor *t = NULL;
    if (lithe_tensor_new(NULL, LITHE_F32, ndim, shape, &t) != LITHE_OK) return NULL;
    float *p = lithe_tensor_data(t);
    for (int64_t i = 0; i < lithe_tensor_numel(t); i++) p[i] = scale * randn();
    return t;
}

static double max_abs_diff(const lithe_tensor *a, const lithe_tensor *b, double *scale) {
    const float *x = lithe_tensor_data(a), *y = lithe_tensor_data(b);
    double d = 0.0, s = 0.0;
    if (lithe_tensor_numel(a) != lithe_tensor_numel(b)) return INFINITY;
    for (int64_t i = 0; i < lithe_tensor_numel(a); i++) {
        d = fmax(d, fabs((double)x[i] - (double)y[i]));
        s = fmax(s, fabs((double)y[i]));
    }
    if (scale) *scale = s;
    return d;
}

static lithe_tensor *predict(lithe_model *m, lithe_tensor *X) {
    lithe_tensor *Y = NULL, *c = NULL;
    if (lithe_model_predict_tensor(m, X, &Y) != LITHE_OK) return NULL;
    lithe_status s = lithe_tensor_to_backend(Y, NULL, &c); /* contiguous host copy */
    lithe_tensor_release(Y);
    return s == LITHE_OK ? c : NULL;
}

/* Five SGD steps on 0.5 |Y - T|^2 / B for a fixed random target T. */
static lithe_status train5(lithe_model *m, lithe_tensor *X, double lr) {
    lithe_optimizer_opts oo = lithe_sgd_defaults(lr);
    lithe_optimizer *opt = NULL;
    lithe_value *Xv = NULL;
    lithe_tensor *T = NULL;
    lithe_status s = lithe_optimizer_new(&oo, &opt);
    if (s == LITHE_OK) s = lithe_value_tensor(X, &Xv);
    for (int step = 0; s == LITHE_OK && step < 5; step++) {
        lithe_value *Yv = NULL, *dYv = NULL;
        lithe_backprop *bp = NULL;
        lithe_tensor *Yd = NULL, *dY = NULL;
        s = lithe_model_begin_update(m, Xv, &Yv, &bp);
        if (s == LITHE_OK) s = lithe_tensor_to_backend(lithe_value_get_tensor(Yv), NULL, &Yd);
        if (s == LITHE_OK && !T) {
            T = rand_tensor(lithe_tensor_ndim(Yd), lithe_tensor_shape(Yd), 1.0f);
            if (!T) s = LITHE_ERR_OOM;
        }
        if (s == LITHE_OK) s = lithe_tensor_new(NULL, LITHE_F32, lithe_tensor_ndim(Yd), lithe_tensor_shape(Yd), &dY);
        if (s == LITHE_OK) {
            const float *y = lithe_tensor_data(Yd), *t = lithe_tensor_data(T);
            float *g = lithe_tensor_data(dY);
            double B = (double)lithe_tensor_shape(Yd)[0];
            for (int64_t i = 0; i < lithe_tensor_numel(Yd); i++) g[i] = (float)((y[i] - t[i]) / B);
            s = lithe_value_tensor(dY, &dYv);
        }
        if (s == LITHE_OK) s = lithe_backprop_run(bp, dYv, NULL);
        if (s == LITHE_OK) s = lithe_model_finish_update(m, opt);
        lithe_value_release(Yv);
        lithe_value_release(dYv);
        lithe_tensor_release(Yd);
        lithe_tensor_release(dY);
        lithe_backprop_free(bp);
    }
    lithe_tensor_release(T);
    lithe_value_release(Xv);
    lithe_optimizer_free(opt);
    return s;
}

/* Train, export, check the file loads back and predicts the same, write the case's files. */
static void run_case(FILE *list, const char *name, lithe_model *m, lithe_tensor *X, double lr, bool moves) {
    char path[1024];
    lithe_tensor *Y0 = NULL, *Y = NULL, *Yb = NULL;
    lithe_model *back = NULL;
    double scale = 0.0;
    fprintf(stderr, "case %s\n", name);
    Y0 = predict(m, X);
    CHECK(Y0, "%s: predict: %s", name, lithe_last_error());
    OK(train5(m, X, lr));
    Y = predict(m, X);
    CHECK(Y, "%s: predict: %s", name, lithe_last_error());
    if (!Y0 || !Y) goto done;
    if (moves) CHECK(max_abs_diff(Y, Y0, NULL) > 1e-6, "%s: five training steps did not move the prediction", name);
    snprintf(path, sizeof path, "%s/out/%s.onnx", dir, name);
    OK(lithe_model_save_onnx(m, path));
    /* back into lithe: the same prediction (an operator lithe's graph layer lacks, such as Maxout's
     * ReduceMax, is reported and skipped: onnxruntime is the judge of the file) */
    lithe_status ls = lithe_model_load(path, &back);
    if (ls == LITHE_ERR_UNSUPPORTED) fprintf(stderr, "  (not reloaded in lithe: %s)\n", lithe_last_error());
    else CHECK(ls == LITHE_OK, "%s: the export does not load back: %s", name, lithe_last_error());
    Yb = back ? predict(back, X) : NULL;
    CHECK(Yb || !back, "%s: the exported model does not predict in lithe: %s", name, lithe_last_error());
    if (Yb && !strncmp(name, "dtypes", 6)) { /* float16 / bfloat16 weights were rounded on the way out:
                                             * onnxruntime is compared with the rounded model */
        CHECK(max_abs_diff(Yb, Y, &scale) <= 1e-2 * scale, "%s: the rounded export predicts far off", name);
        lithe_tensor *t = Y;
        Y = Yb;
        Yb = t;
    } else if (Yb) {
        double d = max_abs_diff(Yb, Y, &scale);
        CHECK(d <= 1e-5 * fmax(scale, 1e-30), "%s: reloaded export predicts %g off (scale %g)", name, d, scale);
    }
    snprintf(path, sizeof path, "%s/out/%s.in.npy", dir, name);
    OK(lithe_npy_write_file(X, path));
    snprintf(path, sizeof path, "%s/out/%s.out.npy", dir, name);
    OK(lithe_npy_write_file(Y, path));
    fprintf(list, "%s\n", name);
done:
    lithe_tensor_release(Y0);
    lithe_tensor_release(Y);
    lithe_tensor_release(Yb);
    lithe_model_free(back);
}

/* An initialized tree on float input (B, nI) = (6, 5), as the dense catalogue's goldens use. */
static void native_case_(FILE *list, const char *name, lithe_model *m, bool moves) {
    const int64_t shape[2] = {6, 5};
    lithe_tensor *X = rand_tensor(2, shape, 1.5f);
    lithe_value *Xv = NULL;
    if (!m) {
        CHECK(0, "%s: building the model: %s", name, lithe_last_error());
        goto done;
    }
    OK(lithe_value_tensor(X, &Xv));
    OK(lithe_model_initialize(m, Xv, NULL));
    run_case(list, name, m, X, 0.05, moves);
done:
    lithe_value_release(Xv);
    lithe_tensor_release(X);
    lithe_model_free(m);
}

static void native_case(FILE *list, const char *name, lithe_model *m) { native_case_(list, name, m, true); }

static lithe_model *dense(const char *layer, int64_t nO, int64_t nI, bool normalize, int64_t nP) {
    lithe_model *m = NULL;
    lithe_dense_opts o = {.nO = nO, .nI = nI, .normalize = normalize, .nP = nP};
    return lithe_dense(layer, &o, &m) == LITHE_OK ? m : NULL;
}
static lithe_model *two(lithe_status (*f)(size_t, lithe_model *const *, lithe_model **), lithe_model *a, lithe_model *b) {
    lithe_model *m = NULL;
    return f(2, (lithe_model *const[]){a, b}, &m) == LITHE_OK ? m : NULL;
}

static void native_cases(FILE *list) {
    static const char *const dense_layers[] = {"Linear.v1", "Relu.v1", "Mish.v1", "Swish.v1", "Gelu.v1", "Dish.v1",
                                               "HardSwish.v1", "HardSwishMobilenet.v1", "HardSigmoid.v1",
                                               "HardTanh.v1", "ReluK.v1", "Sigmoid.v1", NULL};
    char name[64];
    for (size_t i = 0; dense_layers[i]; i++) {
        snprintf(name, sizeof name, "tree.%.*s", (int)(strchr(dense_layers[i], '.') - dense_layers[i]), dense_layers[i]);
        native_case(list, name, dense(dense_layers[i], 4, 5, false, 0));
    }
    lithe_model *m = NULL, *a = NULL;
    lithe_dense_opts o = {.nO = 4, .nI = 5};
    native_case(list, "tree.clipped_linear",
                lithe_clipped_linear(&o, 1.5f, 0.25f, -0.5f, 2.0f, &m) == LITHE_OK ? m : NULL);
    native_case(list, "tree.maxout", dense("Maxout.v1", 4, 5, false, 3));
    native_case(list, "tree.maxout_norm", dense("Maxout.v1", 4, 5, true, 2));
    native_case(list, "tree.relu_norm", dense("Relu.v1", 4, 5, true, 0));
    native_case(list, "tree.layernorm", lithe_layernorm(5, &m) == LITHE_OK ? m : NULL);
    static const char *const acts[] = {"Logistic.v1", "sigmoid_activation.v1", "softmax_activation.v1",
                                       "tanh_activation.v1", NULL};
    for (size_t i = 0; acts[i]; i++) {
        snprintf(name, sizeof name, "tree.%.*s", (int)(strchr(acts[i], '.') - acts[i]), acts[i]);
        native_case_(list, name, lithe_activation(acts[i], &m) == LITHE_OK ? m : NULL, false); /* no params */
    }
    lithe_softmax_opts so = {.nO = 4, .nI = 5};
    native_case(list, "tree.softmax", lithe_softmax(&so, &m) == LITHE_OK ? m : NULL);
    so.temperature = 2.0f;
    native_case(list, "tree.softmax_t2", lithe_softmax(&so, &m) == LITHE_OK ? m : NULL);
    so = (lithe_softmax_opts){.nO = 4, .nI = 5, .unnormalized_outputs = true};
    native_case(list, "tree.softmax_unnorm", lithe_softmax(&so, &m) == LITHE_OK ? m : NULL);
    so = (lithe_softmax_opts){.nO = 3, .nI = 5, .version1 = true};
    native_case(list, "tree.softmax_v1", lithe_softmax(&so, &m) == LITHE_OK ? m : NULL);
    native_case(list, "tree.multisoftmax", lithe_multisoftmax(2, (const int64_t[]){2, 3}, 5, &m) == LITHE_OK ? m : NULL);
    if (lithe_multisoftmax(2, (const int64_t[]){2, 3}, 5, &m) == LITHE_OK &&
        lithe_model_set_attr_bool(m, "softmax_groups", true) != LITHE_OK) {
        lithe_model_free(m);
        m = NULL;
    }
    native_case(list, "tree.multisoftmax_groups", m);
    lithe_model *three[3] = {dense("Relu.v1", 3, 5, false, 0), dense("Mish.v1", 2, 5, false, 0),
                             dense("Linear.v1", 1, 5, false, 0)};
    native_case(list, "tree.concatenate", lithe_concatenate(3, three, &m) == LITHE_OK ? m : NULL);
    native_case(list, "tree.add", two(lithe_add, dense("Linear.v1", 4, 5, false, 0), dense("Relu.v1", 4, 5, false, 0)));
    native_case(list, "tree.residual", lithe_residual(dense("Relu.v1", 5, 5, false, 0), &m) == LITHE_OK ? m : NULL);
    native_case_(list, "tree.noop", lithe_noop(0, NULL, &m) == LITHE_OK ? m : NULL, false);
    native_case(list, "tree.clone", lithe_clone(dense("Relu.v1", 5, 5, false, 0), 3, &m) == LITHE_OK ? m : NULL);
    lithe_model *drop = NULL;
    native_case(list, "tree.dropout",
                lithe_dropout(0.0f, &drop) == LITHE_OK ? two(lithe_chain, dense("Relu.v1", 4, 5, false, 0), drop) : NULL);
    /* tied weights: one node used twice (Thinc's shared layers): its W and b written once */
    a = dense("Relu.v1", 5, 5, false, 0);
    native_case(list, "tree.tied", a ? two(lithe_chain, a, lithe_model_retain(a)) : NULL);
    /* tree.nested of the Thinc goldens */
    lithe_model *cat = two(lithe_concatenate, dense("Relu.v1", 3, 5, false, 0), dense("Swish.v1", 3, 5, false, 0));
    lithe_model *res = NULL;
    if (lithe_residual(dense("Maxout.v1", 6, 6, false, 2), &res) != LITHE_OK) res = NULL;
    lithe_softmax_opts s2 = {.nO = 2, .nI = 6};
    lithe_model *sm = lithe_softmax(&s2, &m) == LITHE_OK ? m : NULL;
    native_case(list, "tree.nested", lithe_chain(3, (lithe_model *const[]){cat, res, sm}, &m) == LITHE_OK ? m : NULL);
}

/* Embed (int64 ids) and its column getter: their own inputs. */
static void embed_cases(FILE *list) {
    lithe_model *m = NULL;
    lithe_tensor *ids = NULL;
    lithe_value *v = NULL;
    lithe_embed_opts eo = {.nO = 4, .nV = 10};
    OK(lithe_embed(&eo, &m));
    int64_t B = 7, idv[7] = {0, 3, 9, 3, 5, 1, 8};
    OK(lithe_tensor_from_data(LITHE_I64, 1, &B, idv, &ids));
    OK(lithe_value_tensor(ids, &v));
    OK(lithe_model_initialize(m, v, NULL));
    run_case(list, "tree.embed", m, ids, 0.5, true);
    lithe_model_free(m);
    lithe_tensor_release(ids);
    lithe_value_release(v);
    m = NULL, ids = NULL, v = NULL;
    eo.has_column = true;
    eo.column = 1;
    OK(lithe_embed(&eo, &m));
    int64_t sh[2] = {4, 2}, cols[8] = {1, 2, 7, 0, 3, 9, 2, 4};
    OK(lithe_tensor_from_data(LITHE_I64, 2, sh, cols, &ids));
    OK(lithe_value_tensor(ids, &v));
    OK(lithe_model_initialize(m, v, NULL));
    run_case(list, "tree.embed_column", m, ids, 0.5, true);
done:
    lithe_model_free(m);
    lithe_tensor_release(ids);
    lithe_value_release(v);
}

/* An imported graph inside a tree (the Python exporter's chain(PyTorchWrapper's graph, ...)):
 * inlined, its weights trained with the rest; one at opset 11 is refused, naming it. */
static lithe_model *graph_of(const char *name) {
    char path[1024];
    lithe_model *g = NULL;
    snprintf(path, sizeof path, "%s/src/%s.onnx", dir, name);
    return lithe_model_load(path, &g) == LITHE_OK ? g : NULL;
}
static void nested_cases(FILE *list) {
    char path[1024];
    lithe_tensor *X = NULL;
    lithe_model *m = NULL, *sm = NULL, *g = NULL;
    snprintf(path, sizeof path, "%s/src/mlp13.x.npy", dir);
    OK(lithe_npy_read_file(path, &X));
    OK(lithe_activation("softmax_activation.v1", &sm));
    g = graph_of("mlp13");
    CHECK(g, "mlp13: %s", lithe_last_error());
    if (g && lithe_chain(2, (lithe_model *const[]){g, sm}, &m) == LITHE_OK) run_case(list, "nested.graph_softmax", m, X, 0.05, true);
    lithe_model_free(m);
    m = NULL;
    g = graph_of("mlp13");
    lithe_model *r = dense("Relu.v1", lithe_tensor_shape(X)[1], lithe_tensor_shape(X)[1], false, 0);
    if (g && r && lithe_chain(2, (lithe_model *const[]){r, g}, &m) == LITHE_OK) {
        lithe_value *Xv = NULL;
        OK(lithe_value_tensor(X, &Xv));
        lithe_status s = lithe_model_initialize(m, Xv, NULL);
        lithe_value_release(Xv);
        CHECK(s == LITHE_OK, "nested.relu_graph: %s", lithe_last_error());
        if (s == LITHE_OK) run_case(list, "nested.relu_graph", m, X, 0.05, true);
    }
    lithe_model_free(m);
    m = NULL;
    snprintf(path, sizeof path, "%s/out/refused.onnx", dir);
    OK(lithe_activation("softmax_activation.v1", &sm));
    g = graph_of("mlp11");
    if (g && lithe_chain(2, (lithe_model *const[]){g, sm}, &m) == LITHE_OK) {
        lithe_status s = lithe_model_save_onnx(m, path);
        CHECK(s == LITHE_ERR_UNSUPPORTED && strstr(lithe_last_error(), "onnx_graph") && strstr(lithe_last_error(), "opset 11"),
              "nested opset 11: got %s: %s", lithe_status_str(s), lithe_last_error());
    }
done:
    lithe_model_free(m);
    lithe_tensor_release(X);
}

/* What has no ONNX equivalent is refused, naming the node; nothing is written. */
static void refusals(void) {
    lithe_model *m = NULL, *h = NULL;
    char path[1024];
    snprintf(path, sizeof path, "%s/out/refused.onnx", dir);
    lithe_embed_opts eo = {.nO = 4, .nV = 10};
    OK(lithe_hash_embed(&eo, &h));
    OK(lithe_chain(2, (lithe_model *const[]){h, dense("Relu.v1", 3, 4, false, 0)}, &m));
    lithe_status s = lithe_model_save_onnx(m, path);
    CHECK(s == LITHE_ERR_UNSUPPORTED && strstr(lithe_last_error(), "hashembed") &&
              strstr(lithe_last_error(), "HashEmbed.v1"),
          "HashEmbed: got %s: %s", lithe_status_str(s), lithe_last_error());
    FILE *f = fopen(path, "rb");
    CHECK(!f, "a refused export left %s behind", path);
    if (f) fclose(f);
    lithe_model_free(m);
    m = NULL;
    /* params unset: initialize first */
    m = dense("Relu.v1", 3, 4, false, 0);
    s = lithe_model_save_onnx(m, path);
    CHECK(s == LITHE_ERR_STATE && strstr(lithe_last_error(), "unset"), "uninitialized: got %s: %s",
          lithe_status_str(s), lithe_last_error());
    CHECK(lithe_model_save_onnx(NULL, path) == LITHE_ERR_INVALID_ARG, "NULL model");
    CHECK(lithe_model_save_onnx(m, NULL) == LITHE_ERR_INVALID_ARG, "NULL path");
done:
    lithe_model_free(m);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: onnx_export_cases DIR\n");
        return 2;
    }
    dir = argv[1];
    char path[1024], name[256];
    double lr = 0;
    snprintf(path, sizeof path, "%s/out/cases.txt", dir);
    FILE *list = fopen(path, "w");
    snprintf(path, sizeof path, "%s/graphs.txt", dir);
    FILE *g = fopen(path, "r");
    if (!list || !g) {
        fprintf(stderr, "cannot open %s or %s/out/cases.txt\n", path, dir);
        return 2;
    }
    char mpath[1024], xpath[1024];
    while (fscanf(g, "%255s %lf %1023s %1023s", name, &lr, mpath, xpath) == 4) {
        lithe_model *m = NULL;
        lithe_tensor *X = NULL;
        if (lithe_model_load(mpath, &m) != LITHE_OK) {
            CHECK(0, "%s: %s", mpath, lithe_last_error());
            continue;
        }
        if (lithe_npy_read_file(xpath, &X) != LITHE_OK) CHECK(0, "%s: %s", xpath, lithe_last_error());
        else run_case(list, name, m, X, lr, true);
        lithe_tensor_release(X);
        lithe_model_free(m);
    }
    fclose(g);
    native_cases(list);
    embed_cases(list);
    nested_cases(list);
    refusals();
    fclose(list);
    fprintf(stderr, "%s (%d failures)\n", failures ? "FAILED" : "passed", failures);
    return failures ? 1 : 0;
}
