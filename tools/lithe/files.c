/* lithe info / run / convert: model files from the command line. */
#include "lithe.h"
#include "cli.h"
#include "files.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const char *what, lithe_status s) {
    fprintf(stderr, "lithe: %s: %s: %s\n", what, lithe_status_str(s), lithe_last_error());
    return 1;
}

static int read_all(const char *path, uint8_t **out, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return -1;
    }
    size_t cap = 1 << 16, n = 0;
    uint8_t *b = malloc(cap);
    while (b) {
        size_t got = fread(b + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
        if (n == cap) {
            uint8_t *nb = realloc(b, cap *= 2);
            if (!nb) {
                free(b);
                b = NULL;
            } else b = nb;
        }
    }
    int err = ferror(f);
    fclose(f);
    if (!b || err) {
        fprintf(stderr, "lithe: cannot read %s\n", path);
        free(b);
        return -1;
    }
    *out = b;
    *len = n;
    return 0;
}

static int write_all(const char *path, const uint8_t *b, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(b, 1, n, f) != n || fclose(f) != 0) {
        perror(path);
        return -1;
    }
    return 0;
}

/* ---- info ---- */

static void print_node(lithe_model *m, int depth, lithe_model **seen, size_t *nseen, int64_t *count, int64_t *bytes) {
    for (size_t i = 0; i < *nseen; i++)
        if (seen[i] == m) {
            printf("%*s%s (shared, shown above)\n", 2 * depth, "", lithe_model_name(m));
            return;
        }
    if (*nseen < 4096) seen[(*nseen)++] = m;
    printf("%*s%s  [%s]", 2 * depth, "", lithe_model_name(m), lithe_model_layer_type(m));
    for (size_t d = 0; d < lithe_model_n_dims(m); d++) {
        int64_t v = 0;
        const char *dn = lithe_model_dim_name(m, d);
        if (lithe_model_get_dim(m, dn, &v) == LITHE_OK) printf(" %s=%lld", dn, (long long)v);
        else printf(" %s=?", dn);
    }
    for (size_t p = 0; p < lithe_model_n_params(m); p++) {
        const char *pn = lithe_model_param_name(m, p);
        lithe_tensor *t = NULL;
        if (lithe_model_get_param(m, pn, &t) != LITHE_OK) {
            printf("  %s: unset", pn);
            continue;
        }
        printf("  %s(", pn);
        for (int d = 0; d < lithe_tensor_ndim(t); d++) printf(d ? ", %lld" : "%lld", (long long)lithe_tensor_shape(t)[d]);
        printf(")");
        if (lithe_tensor_dtype(t) != LITHE_F32) printf(" %s", lithe_dtype_name(lithe_tensor_dtype(t))); /* compact */
        *count += lithe_tensor_numel(t);
        *bytes += lithe_tensor_numel(t) * (int64_t)lithe_dtype_size(lithe_tensor_dtype(t));
    }
    printf("\n");
    for (size_t c = 0; c < lithe_model_n_layers(m); c++)
        print_node(lithe_model_layer(m, c), depth + 1, seen, nseen, count, bytes);
}

static void info_usage(FILE *f) {
    fprintf(f, "usage: lithe info MODEL [--train --batch N [--row-shape D1,D2,... | --input X.npy]\n"
               "                        [--freeze PATTERN ...] [--sgd] [--budget MIB]]\n"
               "  print the model's tree (each node's name, layer type, dims and parameter shapes) and its\n"
               "  parameter count; MODEL is a .lithe file, an .onnx file or a TF.js model.json\n"
               "\n"
               "options:\n"
               "  --train             also plan a training step: the bytes of params, gradients, optimizer\n"
               "                      state and activations (a dry run at 1 and 2 rows, extrapolated;\n"
               "                      docs/training.md, \"Fine-tuning on a memory budget\")\n"
               "  --batch N           the step's batch (default 1)\n"
               "  --row-shape D,...   the shape of one input row (default: the model's nI)\n"
               "  --input X.npy       or sample rows to plan with\n"
               "  --freeze PATTERN    freeze the params matching a glob (\"features.*\", \"relu/W\"); repeatable\n"
               "  --sgd               plain SGD (no optimizer state) instead of Adam\n"
               "  --budget MIB        say whether the step fits in MIB mebibytes (exit 1 when not)\n"
               "\n" CLI_EXIT_HELP);
}

/* A zero input of `batch` rows of `row` (or the model's nI). */
static lithe_status plan_input(lithe_model *m, const char *row, const char *npy, int64_t batch, lithe_value **out) {
    lithe_tensor *t = NULL;
    lithe_status s;
    if (npy) {
        s = lithe_npy_read_file(npy, &t);
    } else {
        int64_t shape[8] = {batch < 2 ? 2 : batch};
        int nd = 1;
        if (row) {
            for (const char *p = row; *p && nd < 8; nd++) {
                char *end = NULL;
                shape[nd] = strtoll(p, &end, 10);
                if (end == p || shape[nd] <= 0) return LITHE_ERR_INVALID_ARG;
                p = *end == ',' ? end + 1 : end;
            }
        } else if (lithe_model_get_dim(m, "nI", &shape[1]) == LITHE_OK) {
            nd = 2;
        } else {
            return LITHE_ERR_INVALID_ARG;
        }
        shape[0] = 2; /* the dry run reads two rows */
        s = lithe_tensor_new(NULL, LITHE_F32, nd, shape, &t);
    }
    if (s != LITHE_OK) return s;
    s = lithe_value_tensor(t, out);
    lithe_tensor_release(t);
    return s;
}

static int info_train(lithe_model *m, const char *row, const char *npy, int64_t batch, bool sgd, double budget_mib) {
    lithe_value *X = NULL;
    lithe_status s = plan_input(m, row, npy, batch, &X);
    if (s == LITHE_ERR_INVALID_ARG && !npy)
        return cli_usage_error("info", "--train needs --row-shape D1,D2,... or --input X.npy (the model has no nI)");
    if (s != LITHE_OK) return fail("info --train", s);
    lithe_optimizer_opts o = sgd ? lithe_sgd_defaults(0.001) : lithe_adam_defaults();
    if (sgd) o.use_averages = false;
    lithe_optimizer *opt = NULL;
    lithe_train_memory p;
    s = lithe_optimizer_new(&o, &opt);
    if (s == LITHE_OK) s = lithe_model_plan_train(m, X, batch, opt, &p);
    lithe_optimizer_free(opt);
    lithe_value_release(X);
    if (s != LITHE_OK) return fail("info --train", s);
    const double M = 1024.0 * 1024.0;
    printf("training step at batch %lld (%s): %.2f MiB\n", (long long)p.batch, sgd ? "SGD" : "Adam", p.total / M);
    printf("  params       %12zu bytes  %9.2f MiB\n", p.params, p.params / M);
    printf("  grads        %12zu bytes  %9.2f MiB\n", p.grads, p.grads / M);
    printf("  opt state    %12zu bytes  %9.2f MiB\n", p.opt_state, p.opt_state / M);
    printf("  activations  %12zu bytes  %9.2f MiB\n", p.activations, p.activations / M);
    printf("  workspace    %12zu bytes  %9.2f MiB\n", p.workspace, p.workspace / M);
    if (budget_mib > 0) {
        bool fits = (double)p.total <= budget_mib * M;
        printf("budget %.2f MiB: %s\n", budget_mib, fits ? "fits" : "over");
        return fits ? 0 : 1;
    }
    return 0;
}

int lithe_cmd_info(int argc, char **argv) {
    static const struct option opts[] = {{"help", no_argument, NULL, 'h'},       {"train", no_argument, NULL, 't'},
                                         {"batch", required_argument, NULL, 'b'}, {"row-shape", required_argument, NULL, 'r'},
                                         {"input", required_argument, NULL, 'i'}, {"freeze", required_argument, NULL, 'f'},
                                         {"sgd", no_argument, NULL, 's'},         {"budget", required_argument, NULL, 'B'},
                                         {NULL, 0, NULL, 0}};
    int c, n_freeze = 0;
    bool train = false, sgd = false;
    int64_t batch = 1;
    double budget = 0;
    const char *row = NULL, *npy = NULL, *freeze[32];
    cli_begin();
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case 'h': info_usage(stdout); return CLI_OK;
        case 't': train = true; break;
        case 'b':
            batch = strtoll(optarg, NULL, 10);
            if (batch < 1) return cli_usage_error("info", "--batch must be a positive count, got %s", optarg);
            break;
        case 'r': row = optarg; break;
        case 'i': npy = optarg; break;
        case 'f':
            if (n_freeze == 32) return cli_usage_error("info", "at most 32 --freeze patterns");
            freeze[n_freeze++] = optarg;
            break;
        case 's': sgd = true; break;
        case 'B':
            budget = strtod(optarg, NULL);
            if (!(budget > 0)) return cli_usage_error("info", "--budget must be a positive number of MiB, got %s", optarg);
            break;
        default: return cli_bad_option("info", argv, c);
        }
    }
    if (argc - optind != 1)
        return cli_usage_error("info", argc == optind ? "which model? usage: lithe info MODEL" : "one model, please, not %d",
                               argc - optind);
    const char *path = argv[optind];
    lithe_model *m = NULL;
    lithe_status s = lithe_model_load(path, &m);
    if (s != LITHE_OK) return fail("info", s);
    static lithe_model *seen[4096];
    size_t nseen = 0;
    int64_t count = 0, bytes = 0;
    print_node(m, 0, seen, &nseen, &count, &bytes);
    printf("parameters: %lld (%lld bytes)\n", (long long)count, (long long)bytes);
    int rc = 0;
    for (int i = 0; i < n_freeze && rc == 0; i++) {
        size_t n = 0;
        if ((s = lithe_model_freeze_matching(m, freeze[i], true, &n)) != LITHE_OK) rc = fail("info --freeze", s);
        else printf("frozen: %zu params match '%s'\n", n, freeze[i]);
    }
    if (rc == 0 && train) rc = info_train(m, row, npy, batch, sgd, budget);
    lithe_model_free(m);
    return rc;
}

/* ---- run ---- */

static void run_usage(FILE *f) {
    fprintf(f, "usage: lithe run MODEL --input X.npy [--input X2.npy ...] --output Y.npy\n"
               "  predict with MODEL (.lithe, .onnx or a TF.js model.json) on .npy arrays; several inputs\n"
               "  go to the model as a tuple, as Thinc passes them; the output must be one array\n"
               "\n"
               "options:\n"
               "  -i, --input X.npy    an input array (up to 16)\n"
               "  -o, --output Y.npy   where to write the prediction\n"
               "  -h, --help           this text\n"
               "\n" CLI_EXIT_HELP);
}

int lithe_cmd_run(int argc, char **argv) {
    static const struct option opts[] = {{"input", required_argument, NULL, 'i'},
                                         {"output", required_argument, NULL, 'o'},
                                         {"to-tfjs", required_argument, NULL, 'j'},
                                         {"weights", required_argument, NULL, 'w'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *model = NULL, *output = NULL, *inputs[16];
    int n_in = 0, c;
    cli_begin();
    while ((c = getopt_long(argc, argv, ":hi:o:", opts, NULL)) != -1) {
        switch (c) {
        case 'h': run_usage(stdout); return CLI_OK;
        case 'i':
            if (n_in == 16) return cli_usage_error("run", "at most 16 --input arrays");
            inputs[n_in++] = optarg;
            break;
        case 'o': output = optarg; break;
        default: return cli_bad_option("run", argv, c);
        }
    }
    if (argc - optind > 1) return cli_usage_error("run", "one model, please: unexpected argument %s", argv[optind + 1]);
    if (optind < argc) model = argv[optind];
    if (!model || !n_in || !output)
        return cli_usage_error("run", "needs %s", !model ? "a MODEL" : !n_in ? "--input X.npy" : "--output Y.npy");
    lithe_model *m = NULL;
    lithe_status s = lithe_model_load(model, &m);
    if (s != LITHE_OK) return fail("run", s);
    lithe_value *items[16] = {0}, *X = NULL, *Y = NULL;
    int rc = 1;
    for (int i = 0; i < n_in; i++) {
        lithe_tensor *t = NULL;
        if ((s = lithe_npy_read_file(inputs[i], &t)) != LITHE_OK) {
            fail("reading the input", s);
            goto done;
        }
        s = lithe_value_tensor(t, &items[i]);
        lithe_tensor_release(t);
        if (s != LITHE_OK) {
            fail("input", s);
            goto done;
        }
    }
    /* one input is the array itself; several are a tuple, as Thinc passes them */
    if (n_in == 1) X = lithe_value_retain(items[0]);
    else if ((s = lithe_value_tuple((size_t)n_in, items, &X)) != LITHE_OK) {
        fail("inputs", s);
        goto done;
    }
    if ((s = lithe_model_predict(m, X, &Y)) != LITHE_OK) {
        fail("predict", s);
        goto done;
    }
    lithe_tensor *out = lithe_value_get_tensor(Y);
    if (!out) {
        fprintf(stderr, "lithe run: the model's output is not a single array\n");
        goto done;
    }
    if ((s = lithe_npy_write_file(out, output)) != LITHE_OK) {
        fail("writing the output", s);
        goto done;
    }
    rc = 0;
done:
    for (int i = 0; i < n_in; i++) lithe_value_release(items[i]);
    lithe_value_release(X);
    lithe_value_release(Y);
    lithe_model_free(m);
    return rc;
}

/* ---- convert ---- */

static void convert_usage(FILE *f) {
    fprintf(f, "usage: lithe convert MODEL.lithe --to-thinc OUT.bin\n"
               "       lithe convert ARCH.lithe --from-thinc THINC.bin --output OUT.lithe\n"
               "       lithe convert MODEL --to-onnx OUT.onnx\n"
               "       lithe convert MODEL --to-tfjs DIR\n"
               "       lithe convert --weights f16|bf16|int8|f32 [--match GLOB] IN.lithe OUT.lithe\n"
               "  between Thinc's bytes (model.to_bytes(), byte-identical with Thinc 8.1.7) and .lithe files;\n"
               "  Thinc's bytes hold weights only, so the .lithe file gives the architecture;\n"
               "  --to-onnx writes a model (.lithe, .onnx, TF.js model.json) as ONNX for onnxruntime with its\n"
               "  current weights (lithe_model_save_onnx: docs/onnx.md, \"Export\")\n"
               "\n"
               "options:\n"
               "  --to-thinc OUT.bin     write the model's weights as Thinc's bytes\n"
               "  --to-onnx OUT.onnx     write the model as ONNX (opset 17 for a native tree)\n"
               "  --from-thinc IN.bin    read Thinc's bytes into ARCH's tree ...\n"
               "  -o, --output OUT.lithe ... and save it here\n"
               "  --to-tfjs DIR          a model loaded from TF.js (model.json, or a .lithe made from one):\n"
               "                         DIR/model.json + DIR/group1-shard1of1.bin with its current weights\n"
               "  --weights f16|bf16|int8|f32\n"
               "                         store the dense layers' W compact (int8: one scale per output row,\n"
               "                         symmetric; f32 turns them back); biases and other tensors stay float32\n"
               "  --match GLOB           with --weights: only the dense layers whose W matches (\"W\" or\n"
               "                         \"node/W\", as info --freeze's): the others stay float32 and train\n"
               "  -h, --help             this text\n"
               "\n" CLI_EXIT_HELP);
}

int lithe_cmd_convert(int argc, char **argv) {
    static const struct option opts[] = {{"to-thinc", required_argument, NULL, 't'},
                                         {"to-onnx", required_argument, NULL, 'x'},
                                         {"from-thinc", required_argument, NULL, 'f'},
                                         {"output", required_argument, NULL, 'o'},
                                         {"to-tfjs", required_argument, NULL, 'j'},
                                         {"weights", required_argument, NULL, 'w'},
                                         {"match", required_argument, NULL, 'm'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *model = NULL, *to_thinc = NULL, *to_onnx = NULL, *from_thinc = NULL, *output = NULL, *to_tfjs = NULL,
               *weights = NULL, *match = NULL;
    int c;
    cli_begin();
    while ((c = getopt_long(argc, argv, ":ho:", opts, NULL)) != -1) {
        switch (c) {
        case 'h': convert_usage(stdout); return CLI_OK;
        case 't': to_thinc = optarg; break;
        case 'x': to_onnx = optarg; break;
        case 'f': from_thinc = optarg; break;
        case 'o': output = optarg; break;
        case 'j': to_tfjs = optarg; break;
        case 'w': weights = optarg; break;
        case 'm': match = optarg; break;
        default: return cli_bad_option("convert", argv, c);
        }
    }
    if (match && !weights) return cli_usage_error("convert", "--match goes with --weights");
    if (weights) { /* IN OUT, or IN --output OUT */
        if (to_thinc || to_onnx || from_thinc || to_tfjs)
            return cli_usage_error("convert", "--weights goes alone: convert --weights DTYPE IN.lithe OUT.lithe");
        if (argc - optind == 2 && !output) return lithe_convert_weights(argv[optind], weights, match, argv[optind + 1]);
        if (argc - optind == 1 && output) return lithe_convert_weights(argv[optind], weights, match, output);
        return cli_usage_error("convert", "--weights needs IN.lithe OUT.lithe");
    }
    if (argc - optind > 1) return cli_usage_error("convert", "one model, please: unexpected argument %s", argv[optind + 1]);
    if (optind < argc) model = argv[optind];
    if (model && to_tfjs && !to_thinc && !from_thinc && !to_onnx) { /* TF.js out (lithe_tfjs_save) */
        lithe_model *t = NULL;
        lithe_status st = lithe_model_load(model, &t);
        if (st == LITHE_OK && (st = lithe_tfjs_save(t, to_tfjs)) != LITHE_OK) fail("to TF.js", st);
        else if (st != LITHE_OK) fail("convert", st);
        lithe_model_free(t);
        return st == LITHE_OK ? 0 : 1;
    }
    if (!model || (!to_thinc && !to_onnx && !(from_thinc && output)) || (!!to_thinc + !!to_onnx + !!from_thinc) > 1)
        return cli_usage_error("convert", "needs MODEL.lithe --to-thinc OUT.bin, ARCH.lithe --from-thinc IN.bin --output "
                                          "OUT.lithe, or MODEL --to-onnx OUT.onnx");
    lithe_model *m = NULL;
    lithe_status s = lithe_model_load(model, &m);
    if (s != LITHE_OK) return fail("convert", s);
    int rc = 1;
    uint8_t *b = NULL;
    size_t n = 0;
    if (to_onnx) {
        if ((s = lithe_model_save_onnx(m, to_onnx)) != LITHE_OK) fail("to ONNX", s);
        else rc = 0;
    } else if (to_thinc) {
        if ((s = lithe_model_to_thinc_bytes(m, &b, &n)) != LITHE_OK) fail("to Thinc bytes", s);
        else if (write_all(to_thinc, b, n) == 0) rc = 0;
        lithe_buffer_free(b);
    } else {
        if (read_all(from_thinc, &b, &n) == 0) {
            if ((s = lithe_model_from_thinc_bytes(m, b, n)) != LITHE_OK) fail("from Thinc bytes", s);
            else if ((s = lithe_model_save(m, NULL, output)) != LITHE_OK) fail("saving", s);
            else rc = 0;
            free(b);
        }
    }
    lithe_model_free(m);
    return rc;
}
