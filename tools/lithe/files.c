/* lithe info / run / convert: model files from the command line. */
#include "lithe.h"
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
        *count += lithe_tensor_numel(t);
        *bytes += lithe_tensor_numel(t) * (int64_t)lithe_dtype_size(lithe_tensor_dtype(t));
    }
    printf("\n");
    for (size_t c = 0; c < lithe_model_n_layers(m); c++)
        print_node(lithe_model_layer(m, c), depth + 1, seen, nseen, count, bytes);
}

int lithe_cmd_info(int argc, char **argv) {
    if (argc != 1) {
        fprintf(stderr, "usage: lithe info MODEL.lithe|MODEL.onnx|model.json\n");
        return 2;
    }
    lithe_model *m = NULL;
    lithe_status s = lithe_model_load(argv[0], &m);
    if (s != LITHE_OK) return fail("info", s);
    static lithe_model *seen[4096];
    size_t nseen = 0;
    int64_t count = 0, bytes = 0;
    print_node(m, 0, seen, &nseen, &count, &bytes);
    printf("parameters: %lld (%lld bytes)\n", (long long)count, (long long)bytes);
    lithe_model_free(m);
    return 0;
}

/* ---- run ---- */

int lithe_cmd_run(int argc, char **argv) {
    const char *model = NULL, *output = NULL, *inputs[16];
    int n_in = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--input") && i + 1 < argc && n_in < 16) inputs[n_in++] = argv[++i];
        else if (!strcmp(argv[i], "--output") && i + 1 < argc) output = argv[++i];
        else if (argv[i][0] != '-' && !model) model = argv[i];
        else {
            fprintf(stderr, "lithe run: unexpected argument %s\n", argv[i]);
            return 2;
        }
    }
    if (!model || !n_in || !output) {
        fprintf(stderr, "usage: lithe run MODEL.lithe|MODEL.onnx|model.json --input X.npy [--input X2.npy ...] --output Y.npy\n");
        return 2;
    }
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

int lithe_cmd_convert(int argc, char **argv) {
    const char *model = NULL, *to_thinc = NULL, *from_thinc = NULL, *output = NULL;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--to-thinc") && i + 1 < argc) to_thinc = argv[++i];
        else if (!strcmp(argv[i], "--from-thinc") && i + 1 < argc) from_thinc = argv[++i];
        else if (!strcmp(argv[i], "--output") && i + 1 < argc) output = argv[++i];
        else if (argv[i][0] != '-' && !model) model = argv[i];
        else {
            fprintf(stderr, "lithe convert: unexpected argument %s\n", argv[i]);
            return 2;
        }
    }
    if (!model || (!to_thinc && !(from_thinc && output))) {
        fprintf(stderr, "usage: lithe convert MODEL.lithe --to-thinc OUT.bin\n"
                        "       lithe convert ARCH.lithe --from-thinc THINC.bin --output OUT.lithe\n"
                        "(Thinc's bytes hold weights only: the .lithe file gives the architecture)\n");
        return 2;
    }
    lithe_model *m = NULL;
    lithe_status s = lithe_model_load(model, &m);
    if (s != LITHE_OK) return fail("convert", s);
    int rc = 1;
    uint8_t *b = NULL;
    size_t n = 0;
    if (to_thinc) {
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
