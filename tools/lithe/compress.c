/* lithe convert --weights f16|bf16|int8|f32 [--match GLOB] IN.lithe OUT.lithe, and lithe quantize: dynamic
 * int8 (per-row symmetric weights, activations quantized per row at run time: the dense layers' W
 * stored compact, lithe_model_compress_weights, docs/format.md), or static with --calibrate X.npy
 * (lithe_model_quantize_static: a QDQ graph, docs/quantization.md). */
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
    fprintf(f, "usage: lithe quantize MODEL --output Q.lithe [--calibrate X.npy]\n"
               "  without --calibrate, dynamic int8 quantization: the dense layers' W (Linear, Relu, ...,\n"
               "  Softmax) as int8 with one scale per output row (symmetric); the activations are quantized\n"
               "  per row at run time; biases and other tensors stay float32.\n"
               "  with --calibrate, static int8 quantization (lithe_model_quantize_static): the model (a .lithe\n"
               "  tree or graph, or an .onnx file) run over the rows of X.npy (float32, shaped as the model's\n"
               "  input) to record each MatMul / Gemm / Conv input's range (MinMax), then stored as a QDQ graph\n"
               "  (int8 per-channel weights, int8 activations with a static scale and zero point, int32 biases;\n"
               "  onnxruntime's QDQ format) that runs on the int8 kernels.\n"
               "\n"
               "options:\n"
               "  -o, --output Q.lithe    where to write it (a name ending in .onnx writes the QDQ ONNX model)\n"
               "  -c, --calibrate X.npy   calibration rows: static quantization\n"
               "  -h, --help              this text\n"
               "\n" CLI_EXIT_HELP);
}

static int quantize_static(const char *in, const char *calib, const char *out) {
    lithe_model *m = NULL, *q = NULL;
    lithe_tensor *X = NULL;
    size_t n = 0;
    lithe_status s = lithe_model_load(in, &m);
    if (s == LITHE_OK) {
        s = lithe_npy_read_file(calib, &X);
        if (s != LITHE_OK) fprintf(stderr, "lithe quantize: --calibrate %s: ", calib);
    }
    if (s == LITHE_OK) s = lithe_model_quantize_static(m, X, &n, &q);
    size_t len = strlen(out);
    if (s == LITHE_OK) s = len > 5 && !strcmp(out + len - 5, ".onnx") ? lithe_model_save_onnx(q, out) : lithe_model_save(q, NULL, out);
    lithe_model_free(m);
    lithe_model_free(q);
    lithe_tensor_release(X);
    if (s != LITHE_OK) {
        fprintf(stderr, "lithe quantize: %s (%s)\n", lithe_last_error(), lithe_status_str(s));
        return CLI_RUNTIME;
    }
    printf("%s: %zu node%s quantized (static int8, calibrated on %s)\n", out, n, n == 1 ? "" : "s", calib);
    return CLI_OK;
}

int lithe_cmd_quantize(int argc, char **argv) {
    static const struct option opts[] = {{"output", required_argument, NULL, 'o'},
                                         {"calibrate", required_argument, NULL, 'c'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *output = NULL, *calib = NULL;
    int c;
    cli_begin();
    while ((c = getopt_long(argc, argv, ":ho:c:", opts, NULL)) != -1) {
        switch (c) {
        case 'h': quantize_usage(stdout); return CLI_OK;
        case 'o': output = optarg; break;
        case 'c': calib = optarg; break;
        default: return cli_bad_option("quantize", argv, c);
        }
    }
    if (argc - optind != 1 || !output) return cli_usage_error("quantize", "needs MODEL --output Q.lithe");
    if (calib) return quantize_static(argv[optind], calib, output);
    return compress("quantize", argv[optind], "int8", NULL, output);
}
