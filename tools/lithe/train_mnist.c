/* lithe train-mnist: Thinc's MLP (or its MNIST example's Maxout net) on Fashion-MNIST. */
#define _POSIX_C_SOURCE 200809L
#include "lithe.h"
#include "cli.h"
#include "mnist.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_DATA_DIR "/usr/share/datasets/fashion-mnist"

static int fail(const char *what, lithe_status s) {
    fprintf(stderr, "lithe: %s: %s: %s\n", what, lithe_status_str(s), lithe_last_error());
    return 1;
}

static void usage(FILE *f) {
    fprintf(f,
            "usage: lithe train-mnist [OPTIONS]\n"
            "  train chain(Relu(512, dropout=0.2), Relu(512, dropout=0.2), Softmax(10)) on Fashion-MNIST\n"
            "  with Thinc's Adam, print loss and accuracy per epoch (progress within an epoch on stderr)\n"
            "  and the test accuracy, evaluated with the parameter averages as Thinc's examples do\n"
            "\n"
            "options:\n"
            "  --epochs N        passes over the training set (default 10)\n"
            "  --batch-size N    examples per update (default 128)\n"
            "  --seed N          seed for initialization, dropout and shuffling (default 0)\n"
            "  --device NAME     backend to train on: cpu (default), vulkan, vulkan:<index|name>,\n"
            "                    cuda, cuda:<index>\n"
            "  --model NAME      relu (default): the model above; maxout: Thinc's MNIST example,\n"
            "                    chain(Maxout(128, nP=3, dropout=0.2, normalize=True) x 2, Softmax(10))\n"
            "  --learn-rate X    Adam learning rate (default 0.001, Thinc's)\n"
            "  --data DIR        folder with the IDX files, plain or gzipped (default " DEFAULT_DATA_DIR ",\n"
            "                    from Debian's dataset-fashion-mnist)\n"
            "  --limit N         use only the first N training and test examples\n"
            "  --classes N       keep only the examples of classes 0 .. N-1 and train Softmax(N): the\n"
            "                    web demo (web/) then adds the others in the browser (default 10)\n"
            "  --save PATH       write the trained model (averaged weights) as a .lithe file\n"
            "  --evaluate PATH   train nothing: print a saved model's test accuracy (float32 or\n"
            "                    compact weights: lithe convert --weights)\n"
            "  -h, --help        this text\n"
            "\n"
            "progress: a bar with rate and ETA on a terminal, else a line every 10 s (LITHE_PROGRESS=0:\n"
            "none; =SECONDS: the interval; =bar: the bar)\n"
            "\n" CLI_EXIT_HELP);
}

/* ---- train-mnist ---- */

typedef struct mnist_opts {
    int epochs, batch;
    uint64_t seed;
    const char *device, *data;
    double lr;
    long limit;
    const char *model; /* "relu" or "maxout" */
    const char *save;  /* write the trained model (averaged weights) as a .lithe file */
    const char *evaluate; /* no training: this saved model's test accuracy */
    int classes;       /* the first `classes` classes only; the model has that many outputs */
} mnist_opts;

static int load_split(const char *dir, const char *prefix, long limit, idx_data *img, idx_data *lab) {
    char p[4096], err[512];
    int st;
    snprintf(p, sizeof p, "%s/%s-images-idx3-ubyte", dir, prefix);
    if ((st = idx_read(p, 0x803, img, err, sizeof err)) != 0) goto failed;
    snprintf(p, sizeof p, "%s/%s-labels-idx1-ubyte", dir, prefix);
    if ((st = idx_read(p, 0x801, lab, err, sizeof err)) != 0) {
        idx_free(img);
        goto failed;
    }
    if (img->n != lab->n) {
        fprintf(stderr, "lithe: %s: %lld images but %lld labels\n", prefix, (long long)img->n, (long long)lab->n);
        idx_free(img);
        idx_free(lab);
        return -1;
    }
    if (limit > 0 && limit < img->n) img->n = lab->n = limit;
    return 0;
failed:
    fprintf(stderr, "lithe: cannot read Fashion-MNIST: %s\n", err);
    if (st == IDX_MISSING) /* the install hint only where the files are not there (not for no memory) */
        fprintf(stderr, "lithe: install Debian's package dataset-fashion-mnist (apt-get install dataset-fashion-mnist)\n"
                        "lithe: or pass --data DIR with train-/t10k-{images-idx3,labels-idx1}-ubyte[.gz]\n");
    return -1;
}

/* Copies examples order[start .. start+B) into X (B, D) scaled to [0, 1] and labels (B,). */
static void fill_batch(const idx_data *img, const idx_data *lab, const int64_t *order, int64_t start, int64_t B,
                       float *X, int32_t *y) {
    int64_t D = img->rows * img->cols;
    for (int64_t i = 0; i < B; i++) {
        int64_t k = order ? order[start + i] : start + i;
        const uint8_t *px = img->data + k * D;
        for (int64_t j = 0; j < D; j++) X[i * D + j] = (float)px[j] / 255.0f;
        y[i] = lab->data[k];
    }
}

/* relu: chain(Relu(512, dropout=0.2), Relu(512, dropout=0.2), Softmax(10)).
 * maxout: Thinc's MNIST example shape, chain(Maxout(128, nP=3, dropout=0.2, normalize=True) x 2,
 * Softmax(10)): each Maxout is chain(chain(maxout, layernorm), dropout) as Thinc builds it. */
static lithe_status build_model(const char *kind, int64_t classes, lithe_model **out) {
    lithe_model *h1 = NULL, *h2 = NULL, *sm = NULL;
    bool maxout = strcmp(kind, "maxout") == 0;
    lithe_dense_opts o = maxout ? (lithe_dense_opts){.nO = 128, .nP = 3, .dropout = 0.2f, .normalize = true}
                                : (lithe_dense_opts){.nO = 512, .dropout = 0.2f};
    const char *layer = maxout ? "Maxout.v1" : "Relu.v1";
    lithe_status s = lithe_dense(layer, &o, &h1);
    if (s == LITHE_OK) s = lithe_dense(layer, &o, &h2);
    if (s == LITHE_OK) s = lithe_softmax(&(lithe_softmax_opts){.nO = classes}, &sm);
    if (s != LITHE_OK) {
        lithe_model_free(h1);
        lithe_model_free(h2);
        lithe_model_free(sm);
        return s;
    }
    return lithe_chain(3, (lithe_model *[]){h1, h2, sm}, out);
}

/* Accuracy of argmax(predict(X)) over a split, in batches. */
static lithe_status evaluate(lithe_model *model, lithe_backend *be, int K, const idx_data *img, const idx_data *lab,
                             double *acc) {
    const int64_t B = 1000, D = img->rows * img->cols;
    float *X = malloc((size_t)(B * D) * sizeof *X), *P = malloc((size_t)(B * K) * sizeof *P);
    int32_t *y = malloc((size_t)B * sizeof *y);
    lithe_status s = (X && P && y) ? LITHE_OK : LITHE_ERR_OOM;
    int64_t correct = 0;
    for (int64_t start = 0; s == LITHE_OK && start < img->n; start += B) {
        int64_t b = img->n - start < B ? img->n - start : B;
        fill_batch(img, lab, NULL, start, b, X, y);
        lithe_tensor *xt = NULL, *pt = NULL;
        s = lithe_tensor_new(be, LITHE_F32, 2, (int64_t[]){b, D}, &xt);
        if (s == LITHE_OK) s = lithe_tensor_write(xt, X, (size_t)(b * D) * sizeof *X);
        if (s == LITHE_OK) s = lithe_model_predict_tensor(model, xt, &pt);
        if (s == LITHE_OK) s = lithe_tensor_read(pt, P, (size_t)(B * K) * sizeof *P);
        for (int64_t i = 0; s == LITHE_OK && i < b; i++) {
            int best = 0;
            for (int c = 1; c < K; c++)
                if (P[i * K + c] > P[i * K + best]) best = c;
            correct += best == y[i];
        }
        lithe_tensor_release(xt);
        lithe_tensor_release(pt);
    }
    free(X);
    free(P);
    free(y);
    *acc = img->n ? (double)correct / (double)img->n : 0.0;
    return s;
}

/* One update on the batch X (b, D), labels y: forward, CategoricalCrossentropy's gradient, backprop,
 * Adam. Adds the batch's correct guesses and negative log-likelihood to *correct and *nll. */
static lithe_status train_step(lithe_model *model, lithe_backend *be, lithe_optimizer *opt, const float *X,
                               const int32_t *y, int64_t b, int64_t D, int K, float *P, int64_t *correct,
                               double *nll) {
    lithe_status s;
    lithe_tensor *xt = NULL, *yt = NULL, *gt = NULL, *dt = NULL;
    lithe_value *xv = NULL, *gv = NULL, *dv = NULL;
    lithe_backprop *bp = NULL;
    s = lithe_tensor_new(be, LITHE_F32, 2, (int64_t[]){b, D}, &xt);
    if (s == LITHE_OK) s = lithe_tensor_write(xt, X, (size_t)(b * D) * sizeof *X);
    /* labels on the model's backend, beside the guesses */
    if (s == LITHE_OK) s = lithe_tensor_new(be, LITHE_I32, 1, (int64_t[]){b}, &yt);
    if (s == LITHE_OK) s = lithe_tensor_write(yt, y, (size_t)b * sizeof *y);
    if (s == LITHE_OK) s = lithe_value_tensor(xt, &xv);
    if (s == LITHE_OK) s = lithe_model_begin_update(model, xv, &gv, &bp);
    if (s == LITHE_OK) {
        gt = lithe_value_get_tensor(gv);
        s = lithe_categorical_crossentropy(NULL, gt, yt, &dt, NULL);
    }
    if (s == LITHE_OK) s = lithe_value_tensor(dt, &dv);
    if (s == LITHE_OK) s = lithe_backprop_run(bp, dv, NULL);
    if (s == LITHE_OK) s = lithe_model_finish_update(model, opt);
    if (s == LITHE_OK) s = lithe_tensor_read(gt, P, (size_t)(b * K) * sizeof *P);
    for (int64_t i = 0; s == LITHE_OK && i < b; i++) {
        int best = 0;
        for (int c = 1; c < K; c++)
            if (P[i * K + c] > P[i * K + best]) best = c;
        *correct += best == y[i];
        *nll -= log((double)P[i * K + y[i]] + 1e-9);
    }
    lithe_backprop_free(bp);
    lithe_value_release(xv);
    lithe_value_release(gv);
    lithe_value_release(dv);
    lithe_tensor_release(xt);
    lithe_tensor_release(yt);
    lithe_tensor_release(dt);
    return s;
}

static int train_mnist(const mnist_opts *o) {
    lithe_backend *be;
    lithe_status s = lithe_backend_get(o->device, &be);
    if (s != LITHE_OK) return fail("--device", s);

    idx_data tri, trl, tei, tel;
    if (load_split(o->data, "train", o->limit, &tri, &trl) != 0) return 1;
    if (load_split(o->data, "t10k", o->limit, &tei, &tel) != 0) {
        idx_free(&tri);
        idx_free(&trl);
        return 1;
    }
    const int K = o->classes; /* outputs of the model; examples of other classes are dropped */
    if (K < 10) {
        idx_keep_classes(&tri, &trl, K);
        idx_keep_classes(&tei, &tel, K);
    }
    if (o->evaluate) { /* a saved model (float32 or compact weights) on the test split */
        lithe_model *m = NULL;
        double acc = 0.0;
        s = lithe_model_load(o->evaluate, &m);
        if (s == LITHE_OK) s = lithe_model_set_backend(m, be);
        if (s == LITHE_OK) s = evaluate(m, be, K, &tei, &tel, &acc);
        lithe_model_free(m);
        idx_free(&tri), idx_free(&trl), idx_free(&tei), idx_free(&tel);
        if (s != LITHE_OK) return fail("--evaluate", s);
        printf("%s: test accuracy %.4f on %lld examples\n", o->evaluate, acc, (long long)tei.n);
        return 0;
    }
    const int64_t N = tri.n, D = tri.rows * tri.cols, B = o->batch;
    printf("Fashion-MNIST: %lld training and %lld test examples of %lld pixels, from %s\n", (long long)N,
           (long long)tei.n, (long long)D, o->data);

    lithe_model *model = NULL;
    lithe_optimizer *opt = NULL;
    float *X = malloc((size_t)(B * D) * sizeof *X), *P = malloc((size_t)(B * K) * sizeof *P);
    int32_t *y = malloc((size_t)B * sizeof *y);
    int64_t *order = malloc((size_t)N * sizeof *order);
    float *u = malloc((size_t)N * sizeof *u);
    int rc = 1;
    if (!X || !P || !y || !order || !u) {
        fprintf(stderr, "lithe: out of memory\n");
        goto done;
    }
    s = build_model(o->model, K, &model);
    if (s != LITHE_OK) { fail("building the model", s); goto done; }
    if ((s = lithe_model_set_seed(model, o->seed)) != LITHE_OK) { fail("seeding the model", s); goto done; }
    if ((s = lithe_model_set_backend(model, be)) != LITHE_OK) { fail("moving the model", s); goto done; }
    {
        /* initialize with a sample batch, as Thinc's examples do */
        lithe_tensor *xs = NULL, *ys = NULL;
        lithe_value *xv = NULL, *yv = NULL;
        int64_t b = N < B ? N : B;
        fill_batch(&tri, &trl, NULL, 0, b, X, y);
        float *onehot = calloc((size_t)(b * K), sizeof *onehot);
        for (int64_t i = 0; onehot && i < b; i++) onehot[i * K + y[i]] = 1.0f;
        s = onehot ? lithe_tensor_new(be, LITHE_F32, 2, (int64_t[]){b, D}, &xs) : LITHE_ERR_OOM;
        if (s == LITHE_OK) s = lithe_tensor_write(xs, X, (size_t)(b * D) * sizeof *X);
        if (s == LITHE_OK) s = lithe_tensor_new(be, LITHE_F32, 2, (int64_t[]){b, K}, &ys);
        if (s == LITHE_OK) s = lithe_tensor_write(ys, onehot, (size_t)(b * K) * sizeof *onehot);
        if (s == LITHE_OK) s = lithe_value_tensor(xs, &xv);
        if (s == LITHE_OK) s = lithe_value_tensor(ys, &yv);
        if (s == LITHE_OK) s = lithe_model_initialize(model, xv, yv);
        free(onehot);
        lithe_value_release(xv);
        lithe_value_release(yv);
        lithe_tensor_release(xs);
        lithe_tensor_release(ys);
        if (s != LITHE_OK) { fail("initializing the model", s); goto done; }
    }
    lithe_optimizer_opts oo = lithe_adam_defaults();
    oo.learn_rate = o->lr;
    if ((s = lithe_optimizer_new(&oo, &opt)) != LITHE_OK) { fail("creating the optimizer", s); goto done; }
    printf("model %s on %s, Adam(learn_rate=%g), batch size %d, seed %llu\n", lithe_model_name(model),
           lithe_backend_name(be), o->lr, o->batch, (unsigned long long)o->seed);

    lithe_rng shuffle = {o->seed ^ 0x5348554646ull /* "SHUFF" */, 0};
    double total_time = 0.0, acc = 0.0;
    for (int epoch = 1; epoch <= o->epochs; epoch++) {
        /* Fisher-Yates with the Philox stream: the same order for the same seed everywhere */
        for (int64_t i = 0; i < N; i++) order[i] = i;
        lithe_rng_uniform(&shuffle, u, (size_t)N);
        for (int64_t i = N - 1; i > 0; i--) {
            int64_t j = (int64_t)(u[i] * (float)(i + 1));
            if (j > i) j = i;
            int64_t t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        double t0 = cli_now(), nll = 0.0;
        int64_t seen = 0, correct = 0;
        char label[32], extra[48];
        snprintf(label, sizeof label, "epoch %d", epoch);
        cli_progress progress;
        cli_progress_start(&progress, label, N, "examples");
        for (int64_t start = 0; start < N; start += B) {
            int64_t b = N - start < B ? N - start : B;
            fill_batch(&tri, &trl, order, start, b, X, y);
            s = train_step(model, be, opt, X, y, b, D, K, P, &correct, &nll);
            seen += b;
            if (s != LITHE_OK) { cli_progress_end(&progress); fail("training step", s); goto done; }
            snprintf(extra, sizeof extra, "loss %.4f", nll / (double)seen);
            cli_progress_update(&progress, seen, extra);
        }
        cli_progress_end(&progress);
        double dt_epoch = cli_now() - t0;
        total_time += dt_epoch;
        /* Thinc's recipe: evaluate with the parameter averages swapped in (use_params) */
        double raw = 0.0;
        if ((s = evaluate(model, be, K, &tei, &tel, &raw)) != LITHE_OK) { fail("evaluating", s); goto done; }
        if ((s = lithe_optimizer_swap_averages(opt, model)) != LITHE_OK) { fail("swapping in averages", s); goto done; }
        s = evaluate(model, be, K, &tei, &tel, &acc);
        lithe_status s2 = lithe_optimizer_swap_averages(opt, model);
        if (s != LITHE_OK || s2 != LITHE_OK) { fail("evaluating with averages", s != LITHE_OK ? s : s2); goto done; }
        printf("epoch %2d  loss %.4f  train acc %.4f  test acc %.4f (averaged params; current %.4f)  %.1f s  %.0f examples/s\n",
               epoch, nll / (double)seen, (double)correct / (double)seen, acc, raw, dt_epoch, (double)seen / dt_epoch);
        fflush(stdout);
    }
    printf("test accuracy: %.4f (%d epochs, %.1f s training, %.0f examples/s)\n", acc, o->epochs, total_time,
           o->epochs ? (double)N * o->epochs / total_time : 0.0);
    if (o->save) {
        /* the weights that were evaluated: the averages, swapped in for the save */
        if ((s = lithe_optimizer_swap_averages(opt, model)) == LITHE_OK) {
            s = lithe_model_save(model, NULL, o->save);
            lithe_status s2 = lithe_optimizer_swap_averages(opt, model);
            if (s == LITHE_OK) s = s2;
        }
        if (s != LITHE_OK) { fail("saving the model", s); goto done; }
        printf("saved %s\n", o->save);
    }
    rc = 0;
done:
    lithe_optimizer_free(opt);
    lithe_model_free(model);
    free(X);
    free(P);
    free(y);
    free(order);
    free(u);
    idx_free(&tri);
    idx_free(&trl);
    idx_free(&tei);
    idx_free(&tel);
    return rc;
}

int lithe_cmd_train_mnist(int argc, char **argv) {
    mnist_opts o = {.classes = 10, .epochs = 10, .batch = 128, .seed = 0, .device = "cpu", .data = DEFAULT_DATA_DIR,
                    .lr = 0.001, .limit = 0, .model = "relu"};
    static const struct option opts[] = {
        {"epochs", required_argument, NULL, 'e'}, {"batch-size", required_argument, NULL, 'b'},
        {"seed", required_argument, NULL, 's'},   {"device", required_argument, NULL, 'd'},
        {"model", required_argument, NULL, 'm'},  {"learn-rate", required_argument, NULL, 'r'},
        {"data", required_argument, NULL, 'D'},   {"limit", required_argument, NULL, 'l'},
        {"classes", required_argument, NULL, 'c'}, {"save", required_argument, NULL, 'o'},
        {"evaluate", required_argument, NULL, 'E'},
        {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0}};
    static const char *const models[] = {"relu", "maxout", NULL};
    const char *cmd = "train-mnist";
    long n;
    int c, bad = 0;
    cli_begin();
    while (!bad && (c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case 'h': usage(stdout); return CLI_OK;
        case 'e': bad = cli_long(cmd, "epochs", optarg, 0, 100000, &n); o.epochs = (int)n; break;
        case 'b': bad = cli_long(cmd, "batch-size", optarg, 1, 1 << 20, &n); o.batch = (int)n; break;
        case 's': bad = cli_u64(cmd, "seed", optarg, &o.seed); break;
        case 'd': o.device = optarg; break;
        case 'm': bad = cli_choice(cmd, "model", optarg, models); o.model = optarg; break;
        case 'r': bad = cli_double(cmd, "learn-rate", optarg, 1e-12, 1e6, &o.lr); break;
        case 'D': o.data = optarg; break;
        case 'l': bad = cli_long(cmd, "limit", optarg, 1, 100000000, &n); o.limit = n; break;
        case 'c': bad = cli_long(cmd, "classes", optarg, 2, 10, &n); o.classes = (int)n; break;
        case 'o': o.save = optarg; break;
        case 'E': o.evaluate = optarg; break;
        default: return cli_bad_option(cmd, argv, c);
        }
    }
    if (bad) return CLI_USAGE;
    if (optind < argc) return cli_usage_error(cmd, "unexpected argument %s", argv[optind]);
    return train_mnist(&o);
}
