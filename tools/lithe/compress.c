/* lithe convert --weights f16|bf16|int8|f32 [--match GLOB] IN.lithe OUT.lithe, and lithe quantize (dynamic int8:
 * per-row symmetric weights; activations are not quantized ahead, so there is nothing to
 * calibrate): the dense layers' W stored compact (lithe_model_compress_weights, docs/format.md). */
#include "cli.h"
#include "files.h"

#include <lithe.h>
#include <string.h>

static int compress(const char *cmd, const char *in, const char *weights, const char *match, const char *out) {
    static const char *const names[] = {"f32", "f16", "bf16", "int8", NULL};
    static const lithe_dtype dts[] = {LITHE_F32, LITHE_F16, LITHE_BF16, LITHE_I8};
    if (cli_choice(cmd, "weights", weights, names) < 0) return CLI_USAGE;
    int k = 0;
    while (strcmp(names[k], weights)) k++;
    lithe_model *m = NULL;
    size_t n = 0;
    lithe_status s = lithe_model_load(in, &m);
    if (s == LITHE_OK) s = lithe_model_compress_matching(m, dts[k], match, &n);
    if (s == LITHE_OK) s = lithe_model_save(m, NULL, out);
    lithe_model_free(m);
    if (s != LITHE_OK) {
        fprintf(stderr, "lithe %s: %s (%s)\n", cmd, lithe_last_error(), lithe_status_str(s));
        return CLI_RUNTIME;
    }
    printf("%s: %zu weight%s stored as %s\n", out, n, n == 1 ? "" : "s", names[k]);
    return CLI_OK;
}

int lithe_convert_weights(const char *in, const char *weights, const char *match, const char *out) {
    return compress("convert", in, weights, match, out);
}

static void quantize_usage(FILE *f) {
    fprintf(f, "usage: lithe quantize MODEL.lithe --output Q.lithe\n"
               "  dynamic int8 quantization: the dense layers' W (Linear, Relu, ..., Softmax) as int8 with one\n"
               "  scale per output row (symmetric); biases and other tensors stay float32. Without --calibrate\n"
               "  (static quantization of activations is not built yet) the activations stay float32.\n"
               "\n"
               "options:\n"
               "  -o, --output Q.lithe   where to write it\n"
               "  -h, --help             this text\n"
               "\n" CLI_EXIT_HELP);
}

int lithe_cmd_quantize(int argc, char **argv) {
    static const struct option opts[] = {{"output", required_argument, NULL, 'o'},
                                         {"calibrate", required_argument, NULL, 'c'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *output = NULL;
    int c;
    cli_begin();
    while ((c = getopt_long(argc, argv, ":ho:", opts, NULL)) != -1) {
        switch (c) {
        case 'h': quantize_usage(stdout); return CLI_OK;
        case 'o': output = optarg; break;
        case 'c': return cli_usage_error("quantize", "--calibrate (static int8 activations) is not built yet; "
                                                     "without it the quantization is dynamic");
        default: return cli_bad_option("quantize", argv, c);
        }
    }
    if (argc - optind != 1 || !output) return cli_usage_error("quantize", "needs MODEL.lithe --output Q.lithe");
    return compress("quantize", argv[optind], "int8", NULL, output);
}
