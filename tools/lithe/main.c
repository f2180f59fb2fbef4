/* lithe — the command-line tool. Each subcommand lives in its own file and parses its options with
 * getopt_long through cli.h, so every one answers --help (exit 0) and a wrong option (exit 2,
 * naming it) the same way. */
#define _POSIX_C_SOURCE 200809L
#include "lithe.h"
#include "bench.h"
#include "cli.h"
#include "files.h"
#include "mnist.h"
#include "tagger.h"

#include <stdio.h>
#include <string.h>

static void usage(FILE *f) {
    fprintf(f,
            "usage: lithe COMMAND [OPTIONS] [ARGUMENTS]\n"
            "       lithe COMMAND --help      the command's options\n"
            "       lithe --version\n"
            "\n"
            "commands:\n"
            "  train-mnist   train an MLP on Fashion-MNIST (Debian's dataset-fashion-mnist) with\n"
            "                Thinc's Adam and print the test accuracy; --save writes the model\n"
            "  train-tagger  the sequence demo: a HashEmbed >> expand_window >> Maxout >> Softmax tagger\n"
            "                restores capitalisation in Debian's licence texts\n"
            "  info MODEL    print a .lithe / .onnx / TF.js model's tree, dims and parameter count\n"
            "  run MODEL --input X.npy [--input ...] --output Y.npy\n"
            "                predict with a model on .npy inputs\n"
            "  convert MODEL.lithe --to-thinc OUT.bin | ARCH.lithe --from-thinc IN.bin --output OUT.lithe\n"
            "                between Thinc's bytes (weights only) and .lithe files\n"
            "  convert MODEL --to-onnx OUT.onnx\n"
            "                a model as ONNX, with its current weights, for onnxruntime\n"
            "  convert MODEL --to-tfjs DIR\n"
            "                a TF.js-loaded model back to model.json + weight shard\n"
            "  convert --weights f16|bf16|int8|f32 IN.lithe OUT.lithe\n"
            "                store the dense layers' weights compact (2x / 4x smaller)\n"
            "  quantize MODEL --output Q.lithe [--calibrate X.npy]\n"
            "                int8 quantization: dynamic, or static calibrated on X.npy (a QDQ graph)\n"
            "  bench MODEL | bench --gemm MxNxK\n"
            "                time predictions, training steps or the GEMM primitive\n"
            "  layers        print every registered layer name, one per line\n"
            "  version       print the library version (also lithe --version)\n"
            "  help [COMMAND]  this text, or the command's\n"
            "\n" CLI_EXIT_HELP);
}

/* layers and version: no options but --help. */
static int cmd_simple(int argc, char **argv, const char *help) {
    static const struct option opts[] = {{"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    cli_begin();
    int c;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        if (c == 'h') {
            printf("usage: lithe %s\n  %s\n\n" CLI_EXIT_HELP, argv[0], help);
            return CLI_OK;
        }
        return cli_bad_option(argv[0], argv, c);
    }
    if (optind < argc) return cli_usage_error(argv[0], "unexpected argument %s", argv[optind]);
    return -1; /* run it */
}

static int cmd_layers(int argc, char **argv) {
    int rc = cmd_simple(argc, argv, "print every registered layer name (Thinc's, e.g. Relu.v1), one per line");
    if (rc >= 0) return rc;
    size_t n;
    const char *const *names = lithe_layer_names(&n);
    for (size_t i = 0; i < n; i++) printf("%s\n", names[i]);
    return CLI_OK;
}

static int cmd_version(int argc, char **argv) {
    int rc = cmd_simple(argc, argv, "print the library version: lithe X.Y.Z");
    if (rc >= 0) return rc;
    printf("lithe %s\n", lithe_version());
    return CLI_OK;
}

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv); /* argv[0] is the command's name */
} command;

static const command commands[] = {
    {"train-mnist", lithe_cmd_train_mnist}, {"train-tagger", lithe_cmd_train_tagger},
    {"info", lithe_cmd_info},               {"run", lithe_cmd_run},
    {"convert", lithe_cmd_convert},         {"bench", lithe_cmd_bench},
    {"layers", cmd_layers},                 {"version", cmd_version},
    {"quantize", lithe_cmd_quantize},
};

static const command *find(const char *name) {
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(commands[i].name, name)) return &commands[i];
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return CLI_USAGE;
    }
    const char *a = argv[1];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
        usage(stdout);
        return CLI_OK;
    }
    if (!strcmp(a, "--version") || !strcmp(a, "-V")) {
        printf("lithe %s\n", lithe_version());
        return CLI_OK;
    }
    if (!strcmp(a, "help")) {
        if (argc < 3) {
            usage(stdout);
            return CLI_OK;
        }
        const command *c = find(argv[2]);
        if (!c) {
            fprintf(stderr, "lithe help: unknown command '%s' (lithe --help lists them)\n", argv[2]);
            return CLI_USAGE;
        }
        char help[] = "--help";
        char *args[] = {argv[2], help, NULL};
        return c->run(2, args);
    }
    if (a[0] == '-') {
        fprintf(stderr, "lithe: unknown option %s (lithe --help)\n", a);
        return CLI_USAGE;
    }
    const command *c = find(a);
    if (!c) {
        fprintf(stderr, "lithe: unknown command '%s' (lithe --help lists them)\n", a);
        return CLI_USAGE;
    }
    return c->run(argc - 1, argv + 1);
}
