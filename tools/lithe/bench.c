/* lithe bench: latency of a model's prediction or training step, or the GFLOP/s of the backend's
 * GEMM primitive, measured with the protocol of bench/README.md (the peers' protocol): warm-up
 * until at least 5 runs and 1 s, then timed runs until at least 30 runs and 1.5 s (at most 2000),
 * each run timed alone; the median, min, max and mean are printed as key=value pairs on one line
 * that bench/run.sh parses:
 *   lithe bench MODEL [--batch N] [--threads N] [--device D] [--train [--adam thinc|torch]] ...
 *   lithe bench --gemm MxNxK [--threads N] [--device D]
 * A white-box tool like bench/vulkan: it includes core/internal.h for the GEMM primitive
 * (lithe__op_gemm, which no public call exposes alone) and core/io/onnx.h for an imported graph's
 * declared input shape. */
#define _POSIX_C_SOURCE 200809L
#include "adam_torch.h"
#include "bench.h"
#include "cli.h"

#include "internal.h"
#include "io/onnx.h"
#include "lithe.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct bench_opts {
    const char *model, *device, *input, *labels, *output, *loss, *adam; /* adam NULL: thinc */
    int64_t batch, gemm[3];
    int threads; /* -1: the backend's default */
    bool train, gemm_mode, no_prepare;
    double warmup_s, min_s, max_s;
    long warmup_runs, min_runs, max_runs;
    uint64_t seed;
} bench_opts;

static int fail(const char *what, lithe_status s) {
    fprintf(stderr, "lithe bench: %s: %s: %s\n", what, lithe_status_str(s), lithe_last_error());
    return 1;
}

static void usage(FILE *f) {
    fprintf(f,
            "usage: lithe bench MODEL.lithe|MODEL.onnx [OPTIONS]\n"
            "       lithe bench --gemm MxNxK [OPTIONS]\n"
            "\n"
            "Times predictions (or, with --train, training steps) of a model on a synthetic input of\n"
            "the model's input shape, or the backend's GEMM primitive C(M,N) = A(M,K) . B(N,K)^T,\n"
            "after a warm-up, and prints one line:\n"
            "  ... median_ms=... min_ms=... max_ms=... mean_ms=... runs=... [gflops=...]\n"
            "\n"
            "options:\n"
            "  --batch N        rows of the synthetic input (default 1)\n"
            "  --threads N      threads of the CPU backend (0: all cores; default: the backend's)\n"
            "  --device NAME    backend: cpu (default), vulkan, cuda, vulkan:<index|name>\n"
            "  --train          time a training step: forward, loss, backprop and finish_update with\n"
            "                   Adam (adam=... in the output says which)\n"
            "  --adam KIND      with --train: thinc (default): Thinc's Adam defaults\n"
            "                   (lithe_adam_defaults: gradient clipping at 1.0, parameter averages);\n"
            "                   torch: the work of torch.optim.Adam(lr=1e-3): the same Adam (lr 1e-3,\n"
            "                   betas 0.9/0.999, eps 1e-8) with grad_clip 0, no averages, L2 0\n"
            "  --loss KIND      with --train: cce (int labels; outputs must be probabilities), l2 (a\n"
            "                   random target), auto (default: cce when every output row is a\n"
            "                   probability distribution, else l2)\n"
            "  --input X.npy    use this input instead of a synthetic one (its first axis is the batch)\n"
            "  --labels Y.npy   with --train and cce: int32/int64 labels (B,) instead of random ones\n"
            "  --output Y.npy   write the last prediction (not with --train)\n"
            "  --no-prepare     predictions without lithe_model_prepare_inference (by default the\n"
            "                   weights are prepared once before timing: prepared=1 in the output)\n"
            "  --seed N         seed of the synthetic input and labels (default 0)\n"
            "  --warmup-s S     warm-up: at least S seconds (default 1.0) ...\n"
            "  --warmup-runs N  ... and at least N runs (default 5)\n"
            "  --min-s S        timed: at least S seconds (default 1.5) ...\n"
            "  --min-runs N     ... and at least N runs (default 30) ...\n"
            "  --max-runs N     ... and at most N runs (default 2000)\n"
            "  --max-s S        a slow model: warm-up stops after S seconds (and 1 run), timing after\n"
            "                   S seconds and 5 runs, so fewer than --min-runs (default: no limit)\n"
            "  --quick          a smoke test: --warmup-s 0 --warmup-runs 1 --min-s 0 --min-runs 3\n"
            "  -h, --help       this text\n"
            "\n"
            "progress (stderr): a bar on a terminal when the runs take over a second\n"
            "\n" CLI_EXIT_HELP);
}

/* ---- timing ---- */

typedef lithe_status (*run_fn)(void *ctx);

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct stats {
    double median, min, max, mean; /* seconds */
    long runs, warmup;
} stats;

static lithe_status measure(const bench_opts *o, run_fn fn, void *ctx, stats *st) {
    double t0 = cli_now();
    long w = 0;
    while ((w < o->warmup_runs || cli_now() - t0 < o->warmup_s) && !(w >= 1 && cli_now() - t0 >= o->max_s)) {
        lithe_status s = fn(ctx);
        if (s != LITHE_OK) return s;
        w++;
    }
    double *t = malloc((size_t)o->max_runs * sizeof *t);
    if (!t) return LITHE_ERR_OOM;
    long n = 0;
    double start = cli_now(), sum = 0.0;
    cli_progress progress; /* of the timed runs: at least min_runs (and min_s) */
    cli_progress_start(&progress, "timing", o->min_runs, "runs");
    while (n < o->max_runs && (n < o->min_runs || cli_now() - start < o->min_s) &&
           !(n >= 5 && cli_now() - start >= o->max_s)) {
        cli_progress_update(&progress, n, NULL);
        double a = cli_now();
        lithe_status s = fn(ctx);
        double b = cli_now();
        if (s != LITHE_OK) {
            cli_progress_end(&progress);
            free(t);
            return s;
        }
        t[n++] = b - a;
        sum += b - a;
    }
    cli_progress_end(&progress);
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    st->median = n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
    st->min = t[0];
    st->max = t[n - 1];
    st->mean = sum / (double)n;
    st->runs = n;
    st->warmup = w;
    free(t);
    return LITHE_OK;
}

static void print_stats(const stats *st) {
    printf("median_ms=%.4f min_ms=%.4f max_ms=%.4f mean_ms=%.4f runs=%ld warmup_runs=%ld", st->median * 1e3,
           st->min * 1e3, st->max * 1e3, st->mean * 1e3, st->runs, st->warmup);
}

/* ---- helpers ---- */

static lithe_status random_tensor(lithe_backend *be, int ndim, const int64_t *shape, uint64_t seed,
                                  lithe_tensor **out) {
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    float *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
    if (!v) return LITHE_ERR_OOM;
    lithe_rng rng = {seed, 0};
    lithe_rng_uniform(&rng, v, (size_t)n);
    lithe_status s = lithe_tensor_new(be, LITHE_F32, ndim, shape, out);
    if (s == LITHE_OK) s = lithe_tensor_write(*out, v, (size_t)n * sizeof *v);
    free(v);
    return s;
}

/* --threads N: lithe_backend_set_threads (0: LITHE_NUM_THREADS or every core); without the flag
 * the backend's default. */
static lithe_status set_threads(lithe_backend *be, int threads) {
    return threads < 0 ? LITHE_OK : lithe_backend_set_threads(be, threads);
}

/* ---- GEMM ---- */

typedef struct gemm_ctx {
    lithe_backend *be;
    lithe_tensor *A, *B, *C;
} gemm_ctx;

static lithe_status gemm_run(void *p) {
    gemm_ctx *g = p;
    /* X (M, K) . W (N, K)^T -> (M, N): the fully-connected layout the layers use */
    lithe_status s = lithe__op_gemm(g->be, false, true, 1.0f, g->A, g->B, 0.0f, g->C);
    if (s == LITHE_OK && g->be->ops->sync) s = g->be->ops->sync(g->be);
    return s;
}

static int bench_gemm(const bench_opts *o, lithe_backend *be, const char *threads) {
    int64_t M = o->gemm[0], N = o->gemm[1], K = o->gemm[2];
    gemm_ctx g = {be, NULL, NULL, NULL};
    stats st;
    lithe_status s = random_tensor(be, 2, (int64_t[]){M, K}, o->seed + 1, &g.A);
    if (s == LITHE_OK) s = random_tensor(be, 2, (int64_t[]){N, K}, o->seed + 2, &g.B);
    if (s == LITHE_OK) s = lithe_tensor_new(be, LITHE_F32, 2, (int64_t[]){M, N}, &g.C);
    if (s == LITHE_OK) s = measure(o, gemm_run, &g, &st);
    int rc = 0;
    if (s != LITHE_OK) rc = fail("gemm", s);
    else {
        printf("gemm=%lldx%lldx%lld layout=NT device=%s threads=%s ", (long long)M, (long long)N, (long long)K,
               lithe_backend_name(be), threads);
        print_stats(&st);
        printf(" gflops=%.3f\n", 2.0 * (double)M * (double)N * (double)K / st.median * 1e-9);
    }
    lithe_tensor_release(g.A);
    lithe_tensor_release(g.B);
    lithe_tensor_release(g.C);
    return rc;
}

/* ---- models ---- */

/* The input shape of m for `batch` rows: an imported graph's first declared input (its first
 * axis replaced by the batch), else (batch, nI) from the first node in walk order with nI set. */
static lithe_status input_shape(lithe_model *m, int64_t batch, int *ndim, int64_t *shape) {
    size_t n = 0;
    lithe_status s = lithe_model_walk(m, NULL, 0, &n);
    if (s != LITHE_OK) return s;
    lithe_model **nodes = malloc((n ? n : 1) * sizeof *nodes);
    if (!nodes) return LITHE_ERR_OOM;
    s = lithe_model_walk(m, nodes, n, &n);
    for (size_t i = 0; s == LITHE_OK && i < n; i++) {
        lithe_model *node = nodes[i];
        if (!strcmp(lithe_model_layer_type(node), "onnx_graph.v1")) {
            if (i > 0) break; /* a graph after other layers: its input is theirs to shape */
            lithe_tensor *bytes = NULL;
            s = lithe_model_get_attr_tensor(node, "onnx", &bytes);
            if (s != LITHE_OK) break;
            lithe__onnx_model om;
            s = lithe__onnx_parse(lithe_tensor_data(bytes), (size_t)lithe_tensor_numel(bytes), &om);
            if (s != LITHE_OK) break;
            if (om.n_inputs != 1 || om.inputs[0].ndim < 1) {
                lithe_clear_error();
                s = LITHE_ERR_UNSUPPORTED;
                fprintf(stderr, "lithe bench: the graph has %zu inputs%s; pass one with --input X.npy\n",
                        om.n_inputs, om.n_inputs == 1 ? " of unknown shape" : "");
            } else if (om.inputs[0].elem_type != 1 /* FLOAT */) {
                s = LITHE_ERR_UNSUPPORTED;
                fprintf(stderr, "lithe bench: the graph's input '%s' is not float32 (ONNX type %d); pass --input\n",
                        om.inputs[0].name, (int)om.inputs[0].elem_type);
            } else {
                *ndim = om.inputs[0].ndim;
                for (int d = 0; d < *ndim; d++) shape[d] = om.inputs[0].dims[d];
                shape[0] = batch;
                for (int d = 1; d < *ndim; d++)
                    if (shape[d] < 0) {
                        s = LITHE_ERR_UNSUPPORTED;
                        fprintf(stderr, "lithe bench: axis %d of the graph's input '%s' is symbolic; pass --input\n",
                                d, om.inputs[0].name);
                    }
            }
            lithe__onnx_model_free(&om);
            free(nodes);
            return s;
        }
        if (lithe_model_has_dim(node, "nI") == LITHE_HAS_YES) {
            int64_t nI = 0;
            s = lithe_model_get_dim(node, "nI", &nI);
            if (s != LITHE_OK) break;
            *ndim = 2;
            shape[0] = batch;
            shape[1] = nI;
            free(nodes);
            return LITHE_OK;
        }
    }
    free(nodes);
    if (s != LITHE_OK) return s;
    fprintf(stderr, "lithe bench: cannot tell the model's input shape (no nI dim, no graph input); pass --input\n");
    return LITHE_ERR_UNSUPPORTED;
}

typedef struct model_ctx {
    lithe_model *m;
    lithe_value *X;
    lithe_tensor *labels, *target; /* training: cce labels (B,) or an l2 target */
    lithe_optimizer *opt;
    float *host;     /* the output read back */
    size_t host_cap; /* bytes */
    lithe_tensor *last; /* the last prediction (kept for --output) */
    bool keep_last, cce;
    int64_t cols; /* the output's last axis: l2 compares (rows, cols) views */
    double loss;
} model_ctx;

static lithe_status output_tensor(lithe_value *Y, lithe_tensor **out) {
    if (lithe_value_kind_of(Y) == LITHE_VALUE_TUPLE && lithe_value_len(Y) > 0) Y = lithe_value_item(Y, 0);
    lithe_tensor *t = lithe_value_get_tensor(Y);
    if (!t) {
        fprintf(stderr, "lithe bench: the model's output is not a tensor\n");
        return LITHE_ERR_UNSUPPORTED;
    }
    *out = t;
    return LITHE_OK;
}

/* Reads t back to the host (the peers' latency includes reading the output). */
static lithe_status read_back(model_ctx *c, const lithe_tensor *t) {
    size_t need = (size_t)lithe_tensor_numel(t) * lithe_dtype_size(lithe_tensor_dtype(t));
    if (need > c->host_cap) {
        float *h = realloc(c->host, need);
        if (!h) return LITHE_ERR_OOM;
        c->host = h;
        c->host_cap = need;
    }
    return lithe_tensor_read(t, c->host, c->host_cap);
}

static lithe_status predict_run(void *p) {
    model_ctx *c = p;
    lithe_value *Y = NULL;
    lithe_tensor *y = NULL;
    lithe_status s = lithe_model_predict(c->m, c->X, &Y);
    if (s == LITHE_OK) s = output_tensor(Y, &y);
    if (s == LITHE_OK) s = read_back(c, y);
    if (s == LITHE_OK && c->keep_last) {
        lithe_tensor_release(c->last);
        c->last = lithe_tensor_retain(y);
    }
    lithe_value_release(Y);
    return s;
}

static lithe_status train_run(void *p) {
    model_ctx *c = p;
    lithe_value *Y = NULL, *dv = NULL;
    lithe_backprop *bp = NULL;
    lithe_tensor *y = NULL, *d = NULL;
    float loss = 0.0f;
    lithe_status s = lithe_model_begin_update(c->m, c->X, &Y, &bp);
    if (s == LITHE_OK) s = output_tensor(Y, &y);
    if (s == LITHE_OK && c->cce) s = lithe_categorical_crossentropy(NULL, y, c->labels, &d, &loss);
    else if (s == LITHE_OK) {
        /* L2Distance takes 2-D arrays: a (rows, cols) view of the output, and dY shaped back */
        lithe_tensor *y2 = NULL, *d2 = NULL;
        s = lithe_tensor_reshape(y, 2, (int64_t[]){-1, c->cols}, &y2);
        if (s == LITHE_OK) s = lithe_l2_distance(true, y2, c->target, &d2, &loss);
        if (s == LITHE_OK) s = lithe_tensor_reshape(d2, lithe_tensor_ndim(y), lithe_tensor_shape(y), &d);
        lithe_tensor_release(y2);
        lithe_tensor_release(d2);
    }
    if (s == LITHE_OK) s = lithe_value_tensor(d, &dv);
    if (s == LITHE_OK) s = lithe_backprop_run(bp, dv, NULL);
    if (s == LITHE_OK) s = lithe_model_finish_update(c->m, c->opt);
    c->loss = loss; /* read back: the step is over when the host has its loss */
    lithe_value_release(dv);
    lithe_tensor_release(d);
    lithe_backprop_free(bp);
    lithe_value_release(Y);
    return s;
}

/* True when every row of t (host float32, rows x cols) is a probability distribution. */
static bool is_distribution(const float *v, int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < rows; r++) {
        double sum = 0.0;
        for (int64_t j = 0; j < cols; j++) {
            float x = v[r * cols + j];
            if (!(x >= 0.0f && x <= 1.0f)) return false;
            sum += x;
        }
        if (fabs(sum - 1.0) > 1e-3) return false;
    }
    return true;
}

static int bench_model(const bench_opts *o, lithe_backend *be, const char *threads) {
    model_ctx c = {0};
    lithe_tensor *x = NULL;
    int rc = 1, ndim = 0;
    int64_t shape[LITHE_MAX_DIMS];
    stats st;
    lithe_status s = lithe_model_load(o->model, &c.m);
    if (s != LITHE_OK) return fail(o->model, s);
    if ((s = lithe_model_set_backend(c.m, be)) != LITHE_OK) { fail("moving the model", s); goto done; }
    if (o->input) {
        lithe_tensor *h = NULL;
        if ((s = lithe_npy_read_file(o->input, &h)) != LITHE_OK) { fail(o->input, s); goto done; }
        s = lithe_tensor_to_backend(h, be, &x);
        lithe_tensor_release(h);
        if (s != LITHE_OK) { fail("--input", s); goto done; }
        ndim = lithe_tensor_ndim(x);
        memcpy(shape, lithe_tensor_shape(x), (size_t)ndim * sizeof *shape);
    } else {
        if ((s = input_shape(c.m, o->batch, &ndim, shape)) != LITHE_OK) { fail("input shape", s); goto done; }
        if ((s = random_tensor(be, ndim, shape, o->seed, &x)) != LITHE_OK) { fail("input", s); goto done; }
    }
    if ((s = lithe_value_tensor(x, &c.X)) != LITHE_OK) { fail("input", s); goto done; }

    /* one prediction: checks the model runs, and gives the output's shape for the loss */
    if ((s = predict_run(&c)) != LITHE_OK) { fail("predict", s); goto done; }
    lithe_value *Y0 = NULL;
    lithe_tensor *y0 = NULL;
    int64_t rows = 1, cols = 1;
    double first_ce = NAN;
    if ((s = lithe_model_predict(c.m, c.X, &Y0)) == LITHE_OK && (s = output_tensor(Y0, &y0)) == LITHE_OK) {
        int yn = lithe_tensor_ndim(y0);
        for (int d = 0; d < yn; d++) {
            if (d + 1 < yn) rows *= lithe_tensor_shape(y0)[d];
            else cols = lithe_tensor_shape(y0)[d];
        }
        c.cols = cols;
        c.cce = !strcmp(o->loss, "cce") ||
                (!strcmp(o->loss, "auto") && yn == 2 && lithe_tensor_dtype(y0) == LITHE_F32 &&
                 (s = read_back(&c, y0)) == LITHE_OK && is_distribution(c.host, rows, cols));
        if (o->train && s == LITHE_OK) {
            if (c.cce && o->labels) {
                lithe_tensor *h = NULL;
                s = lithe_npy_read_file(o->labels, &h);
                if (s == LITHE_OK) s = lithe_tensor_to_backend(h, be, &c.labels);
                lithe_tensor_release(h);
            } else if (c.cce) {
                int32_t *lab = malloc((size_t)rows * sizeof *lab);
                float *u = malloc((size_t)rows * sizeof *u);
                lithe_rng rng = {o->seed + 7, 0};
                s = lab && u ? LITHE_OK : LITHE_ERR_OOM;
                if (s == LITHE_OK) {
                    lithe_rng_uniform(&rng, u, (size_t)rows);
                    for (int64_t r = 0; r < rows; r++) lab[r] = (int32_t)(u[r] * (float)cols) % (int32_t)cols;
                    s = lithe_tensor_new(be, LITHE_I32, 1, (int64_t[]){rows}, &c.labels);
                }
                if (s == LITHE_OK) s = lithe_tensor_write(c.labels, lab, (size_t)rows * sizeof *lab);
                free(lab);
                free(u);
            } else {
                s = random_tensor(be, 2, (int64_t[]){rows, cols}, o->seed + 7, &c.target);
            }
            /* the true cross-entropy before any update: comparable with torch's first loss */
            if (s == LITHE_OK && c.cce) s = lithe_cross_entropy(NULL, y0, c.labels, &first_ce);
        }
    }
    lithe_value_release(Y0);
    if (s != LITHE_OK) { fail(o->train ? "training target" : "predict", s); goto done; }

    if (o->train) {
        lithe_optimizer_opts oo = lithe_adam_defaults();
        const char *adam = o->adam ? o->adam : "thinc";
        if (!strcmp(adam, "torch")) {
            /* torch.optim.Adam's defaults do neither clipping nor averages nor weight decay: with
             * these off, lithe_optimizer_step's adam_step skips the norm's pass over G and the
             * averages' stream (Thinc's eps sits before the bias correction, torch's after: the
             * same work, values apart by eps only) */
            oo = lithe_bench_adam_as_torch();
        }
        if ((s = lithe_optimizer_new(&oo, &c.opt)) != LITHE_OK) { fail("optimizer", s); goto done; }
        if ((s = measure(o, train_run, &c, &st)) != LITHE_OK) { fail("training step", s); goto done; }
        printf("model=%s mode=train batch=%lld device=%s threads=%s adam=%s loss=%s ", o->model, (long long)shape[0],
               lithe_backend_name(be), threads, adam, c.cce ? "cce" : "l2");
        print_stats(&st);
        if (c.cce) printf(" first_cross_entropy=%.6f", first_ce);
        printf(" last_loss=%.6g\n", c.loss);
    } else {
        c.keep_last = o->output != NULL;
        /* inference as a deployment runs it: the weights prepared once (packed for the GEMM) */
        if (!o->no_prepare && (s = lithe_model_prepare_inference(c.m)) != LITHE_OK) { fail("prepare", s); goto done; }
        if ((s = measure(o, predict_run, &c, &st)) != LITHE_OK) { fail("predict", s); goto done; }
        printf("model=%s mode=predict batch=%lld device=%s threads=%s prepared=%d ", o->model, (long long)shape[0],
               lithe_backend_name(be), threads, !o->no_prepare);
        print_stats(&st);
        printf("\n");
        if (o->output) {
            lithe_tensor *h = NULL;
            s = lithe_tensor_to_backend(c.last, NULL, &h);
            if (s == LITHE_OK) s = lithe_npy_write_file(h, o->output);
            lithe_tensor_release(h);
            if (s != LITHE_OK) { fail(o->output, s); goto done; }
        }
    }
    rc = 0;
    goto done;
done:
    lithe_tensor_release(c.last);
    lithe_tensor_release(c.labels);
    lithe_tensor_release(c.target);
    lithe_optimizer_free(c.opt);
    lithe_value_release(c.X);
    lithe_tensor_release(x);
    lithe_model_free(c.m);
    free(c.host);
    return rc;
}

/* ---- arguments ---- */

static int parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out) {
    char *end;
    long long v = strtoll(s, &end, 10);
    if (!*s || *end || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

static int parse_f(const char *s, double *out) {
    char *end;
    double v = strtod(s, &end);
    if (!*s || *end || !(v >= 0.0) || v > 1e6) return -1;
    *out = v;
    return 0;
}

static int parse_mnk(const char *s, int64_t mnk[3]) {
    char buf[64];
    if (strlen(s) >= sizeof buf) return -1;
    strcpy(buf, s);
    char *p = buf;
    for (int i = 0; i < 3; i++) {
        char *x = strchr(p, 'x');
        if ((i < 2) != (x != NULL)) return -1;
        if (x) *x = '\0';
        if (parse_i64(p, 1, 1 << 20, &mnk[i]) != 0) return -1;
        p = x ? x + 1 : p;
    }
    return 0;
}

int lithe_cmd_bench(int argc, char **argv) {
    bench_opts o = {.device = "cpu", .loss = "auto", .batch = 1, .threads = -1, .warmup_s = 1.0, .min_s = 1.5, .max_s = 1e9,
                    .warmup_runs = 5, .min_runs = 30, .max_runs = 2000};
    enum { GEMM = 256, BATCH, THREADS, DEVICE, INPUT, LABELS, OUTPUT, LOSS, ADAM, SEED, WARMUP_S, MIN_S, MAX_S,
           WARMUP_RUNS, MIN_RUNS, MAX_RUNS, TRAIN, NO_PREPARE, QUICK };
    static const struct option opts[] = {
        {"gemm", required_argument, NULL, GEMM},         {"batch", required_argument, NULL, BATCH},
        {"threads", required_argument, NULL, THREADS},   {"device", required_argument, NULL, DEVICE},
        {"input", required_argument, NULL, INPUT},       {"labels", required_argument, NULL, LABELS},
        {"output", required_argument, NULL, OUTPUT},     {"loss", required_argument, NULL, LOSS},
        {"adam", required_argument, NULL, ADAM},         {"seed", required_argument, NULL, SEED},
        {"warmup-s", required_argument, NULL, WARMUP_S}, {"min-s", required_argument, NULL, MIN_S},
        {"max-s", required_argument, NULL, MAX_S},       {"warmup-runs", required_argument, NULL, WARMUP_RUNS},
        {"min-runs", required_argument, NULL, MIN_RUNS}, {"max-runs", required_argument, NULL, MAX_RUNS},
        {"train", no_argument, NULL, TRAIN},             {"no-prepare", no_argument, NULL, NO_PREPARE},
        {"quick", no_argument, NULL, QUICK},             {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    int c;
    cli_begin();
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        const char *v = optarg;
        int64_t n = 0;
        int bad = 0;
        switch (c) {
        case 'h': usage(stdout); return CLI_OK;
        case TRAIN: o.train = true; break;
        case NO_PREPARE: o.no_prepare = true; break;
        case QUICK:
            o.warmup_s = 0.0;
            o.warmup_runs = 1;
            o.min_s = 0.0;
            o.min_runs = 3;
            break;
        case GEMM: o.gemm_mode = true; bad = parse_mnk(v, o.gemm); break;
        case BATCH: bad = parse_i64(v, 1, 1 << 24, &o.batch); break;
        case THREADS: bad = parse_i64(v, 0, 1024, &n); o.threads = (int)n; break;
        case DEVICE: o.device = v; break;
        case INPUT: o.input = v; break;
        case LABELS: o.labels = v; break;
        case OUTPUT: o.output = v; break;
        case LOSS: o.loss = v; bad = strcmp(v, "auto") && strcmp(v, "cce") && strcmp(v, "l2"); break;
        case ADAM: o.adam = v; bad = strcmp(v, "thinc") && strcmp(v, "torch"); break;
        case SEED: bad = parse_i64(v, 0, INT64_MAX, &n); o.seed = (uint64_t)n; break;
        case WARMUP_S: bad = parse_f(v, &o.warmup_s); break;
        case MIN_S: bad = parse_f(v, &o.min_s); break;
        case MAX_S: bad = parse_f(v, &o.max_s); break;
        case WARMUP_RUNS: bad = parse_i64(v, 0, 1000000, &n); o.warmup_runs = (long)n; break;
        case MIN_RUNS: bad = parse_i64(v, 1, 1000000, &n); o.min_runs = (long)n; break;
        case MAX_RUNS: bad = parse_i64(v, 1, 1000000, &n); o.max_runs = (long)n; break;
        default: return cli_bad_option("bench", argv, c);
        }
        if (bad) {
            const char *name = "?";
            for (const struct option *op = opts; op->name; op++)
                if (op->val == c) name = op->name;
            fprintf(stderr, "lithe bench: bad value for --%s: %s\n", name, v);
            return CLI_USAGE;
        }
    }
    if (argc - optind > 1) return cli_usage_error("bench", "more than one model: %s", argv[optind + 1]);
    if (optind < argc) o.model = argv[optind];
    if (o.gemm_mode == (o.model != NULL))
        return cli_usage_error("bench", o.model ? "a MODEL or --gemm MxNxK, not both" : "needs a MODEL or --gemm MxNxK");
    if (o.min_runs > o.max_runs) o.max_runs = o.min_runs;
    if (o.output && o.train) { fprintf(stderr, "lithe bench: --output is for predictions, not --train\n"); return CLI_USAGE; }
    if (o.adam && !o.train) { fprintf(stderr, "lithe bench: --adam is for --train\n"); return CLI_USAGE; }
    lithe_backend *be;
    lithe_status s = lithe_backend_get(o.device, &be);
    if (s != LITHE_OK) return fail("--device", s);
    if ((s = set_threads(be, o.threads)) != LITHE_OK) return fail("--threads", s);
    char threads[32]; /* the count the backend reports it computes with */
    snprintf(threads, sizeof threads, "%d", lithe_backend_threads(be));
    return o.gemm_mode ? bench_gemm(&o, be, threads) : bench_model(&o, be, threads);
}
