/* Reading the Thinc golden file and comparing lithe's tensors with it (see golden.h). */
#include <inttypes.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lithe.h"
#include "golden.h"

static golden *goldens;
static size_t n_goldens;
const char *golden_path;

int load_goldens(void **state) {
    (void)state;
    if (!golden_path) {
        fprintf(stderr, "goldens: no golden file: set LITHE_THINC_GOLDENS or pass a path "
                        "(ctest generates it with tests/golden/gen_thinc_goldens.py)\n");
        return -1;
    }
    FILE *f = fopen(golden_path, "r");
    if (!f) {
        fprintf(stderr, "goldens: cannot open %s\n", golden_path);
        return -1;
    }
    size_t cap = 0;
    char line[256];
    int c;
    while ((c = fgetc(f)) != EOF) {
        if (c == '#') { /* comment line */
            if (!fgets(line, sizeof line, f)) break;
            continue;
        }
        ungetc(c, f);
        golden g = {0};
        char kind[4];
        if (fscanf(f, "%95s %3s %d", g.name, kind, &g.ndim) != 3 || g.ndim < 0 || g.ndim > 6) break;
        g.kind = kind[0];
        g.n = 1;
        for (int d = 0; d < g.ndim; d++) {
            if (fscanf(f, "%" SCNd64, &g.shape[d]) != 1) goto bad;
            g.n *= g.shape[d];
        }
        g.v = malloc(sizeof(double) * (size_t)(g.n ? g.n : 1));
        if (!g.v) goto bad;
        if (g.kind == 'i') {
            g.u = malloc(sizeof(uint64_t) * (size_t)(g.n ? g.n : 1));
            if (!g.u) {
                free(g.v);
                goto bad;
            }
        }
        for (int64_t i = 0; i < g.n; i++) {
            char tok[64];
            if (fscanf(f, "%63s", tok) != 1) {
                free(g.v);
                free(g.u);
                goto bad;
            }
            g.v[i] = strtod(tok, NULL);
            if (g.u) g.u[i] = tok[0] == '-' ? (uint64_t)strtoll(tok, NULL, 10) : strtoull(tok, NULL, 10);
        }
        while ((c = fgetc(f)) != EOF && c != '\n') {}
        if (n_goldens == cap) {
            cap = cap ? 2 * cap : 256;
            golden *ng = realloc(goldens, cap * sizeof *ng);
            if (!ng) {
                free(g.v);
                free(g.u);
                goto bad;
            }
            goldens = ng;
        }
        goldens[n_goldens++] = g;
    }
    bool whole = feof(f); /* the loop stops at the end, or at a record it cannot read */
    fclose(f);
    if (!whole || n_goldens == 0) {
        fprintf(stderr, "goldens: %s: unreadable after %zu arrays\n", golden_path, n_goldens);
        return -1;
    }
    return 0;
bad:
    fclose(f);
    fprintf(stderr, "goldens: %s is malformed after %zu arrays\n", golden_path, n_goldens);
    return -1;
}

int free_goldens(void **state) {
    (void)state;
    for (size_t i = 0; i < n_goldens; i++) {
        free(goldens[i].v);
        free(goldens[i].u);
    }
    free(goldens);
    goldens = NULL;
    n_goldens = 0;
    return 0;
}

const golden *find(const char *fmt, ...) {
    char name[96];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    for (size_t i = 0; i < n_goldens; i++)
        if (strcmp(goldens[i].name, name) == 0) return &goldens[i];
    return NULL;
}

const golden *get(const char *fmt, ...) {
    char name[96];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    for (size_t i = 0; i < n_goldens; i++)
        if (strcmp(goldens[i].name, name) == 0) return &goldens[i];
    print_error("golden array %s is missing from %s\n", name, golden_path);
    fail();
    return NULL;
}

lithe_tensor *tensor_of(const golden *g) {
    lithe_tensor *t = NULL;
    if (g->kind == 'i') {
        int32_t *buf = malloc(sizeof(int32_t) * (size_t)(g->n ? g->n : 1));
        assert_non_null(buf);
        for (int64_t i = 0; i < g->n; i++) buf[i] = (int32_t)g->v[i];
        OK(lithe_tensor_from_data(LITHE_I32, g->ndim, g->shape, buf, &t));
        free(buf);
    } else {
        float *buf = malloc(sizeof(float) * (size_t)(g->n ? g->n : 1));
        assert_non_null(buf);
        for (int64_t i = 0; i < g->n; i++) buf[i] = (float)g->v[i];
        OK(lithe_tensor_from_data(LITHE_F32, g->ndim, g->shape, buf, &t));
        free(buf);
    }
    return t;
}

lithe_value *value_of(const golden *g) {
    lithe_tensor *t = tensor_of(g);
    lithe_value *v = NULL;
    OK(lithe_value_tensor(t, &v));
    lithe_tensor_release(t);
    return v;
}

lithe_value *tiled(const golden *g, int times) {
    lithe_tensor *t = tensor_of(g), *big = NULL;
    int64_t shape[LITHE_MAX_DIMS];
    int nd = lithe_tensor_ndim(t);
    memcpy(shape, lithe_tensor_shape(t), sizeof(int64_t) * (size_t)nd);
    shape[0] *= times;
    OK(lithe_tensor_new(NULL, LITHE_F32, nd, shape, &big));
    for (int r = 0; r < times; r++)
        memcpy((float *)lithe_tensor_data(big) + r * lithe_tensor_numel(t), lithe_tensor_data(t),
               sizeof(float) * (size_t)lithe_tensor_numel(t));
    lithe_value *v = NULL;
    OK(lithe_value_tensor(big, &v));
    lithe_tensor_release(big);
    lithe_tensor_release(t);
    return v;
}

void expect_close(const char *what, const lithe_tensor *t, const golden *g, double atol, double rtol) {
    assert_non_null(t);
    if (lithe_tensor_ndim(t) != g->ndim) {
        print_error("%s: ndim %d, Thinc's %s has %d\n", what, lithe_tensor_ndim(t), g->name, g->ndim);
        fail();
    }
    for (int d = 0; d < g->ndim; d++)
        if (lithe_tensor_shape(t)[d] != g->shape[d]) {
            print_error("%s: dim %d is %lld, Thinc's is %lld\n", what, d, (long long)lithe_tensor_shape(t)[d],
                        (long long)g->shape[d]);
            fail();
        }
    float *buf = malloc(sizeof(float) * (size_t)(g->n ? g->n : 1));
    assert_non_null(buf);
    OK(lithe_tensor_read(t, buf, sizeof(float) * (size_t)g->n));
    int bad = 0;
    double worst = 0;
    for (int64_t i = 0; i < g->n; i++) {
        /* a float32 golden is compared as the float32 it was (%.9g round-trips it) */
        double want = g->kind == 'f' ? (double)(float)g->v[i] : g->v[i];
        double err = fabs((double)buf[i] - want);
        if (!(err <= atol + rtol * fabs(want))) {
            if (bad < 5)
                print_error("%s[%lld]: lithe %.9g, Thinc %.9g (atol %g, rtol %g)\n", what, (long long)i,
                            (double)buf[i], g->v[i], atol, rtol);
            bad++;
        }
        if (err > worst) worst = err;
    }
    free(buf);
    if (bad) {
        print_error("%s: %d of %lld elements differ from Thinc (largest error %g)\n", what, bad, (long long)g->n,
                    worst);
        fail();
    }
}

void expect_scalar(const char *what, double got, const golden *g, double atol, double rtol) {
    assert_int_equal(g->n, 1);
    if (!(fabs(got - g->v[0]) <= atol + rtol * fabs(g->v[0]))) {
        print_error("%s: lithe %.9g, Thinc %.9g\n", what, got, g->v[0]);
        fail();
    }
}


uint8_t *bytes_of(const golden *g) {
    assert_int_equal(g->kind, 'i');
    uint8_t *b = malloc((size_t)g->n + 1);
    assert_non_null(b);
    for (int64_t i = 0; i < g->n; i++) b[i] = (uint8_t)g->u[i];
    return b;
}
