/* The golden file written by tests/golden/gen_thinc_goldens.py (Debian's Thinc 8.1), read by the
 * C tests that compare lithe with Thinc. Include after <cmocka.h> and "lithe.h". */
#ifndef LITHE_TEST_GOLDEN_H
#define LITHE_TEST_GOLDEN_H

#include <stdbool.h>
#include <stdint.h>

#include "../check.h"

typedef struct golden {
    char name[96];
    char kind; /* f (float32), d (float64), i (integer) */
    int ndim;
    int64_t shape[6]; /* up to 6-D (3-D windows: 5-D inputs) */
    int64_t n;
    double *v;   /* every kind, as doubles */
    uint64_t *u; /* kind i only: the exact integers (two's complement bits for negatives) */
} golden;

/* The path read by load_goldens: argv[1] or $LITHE_THINC_GOLDENS, set by main. */
extern const char *golden_path;

/* cmocka group setup / teardown. */
int load_goldens(void **state);
int free_goldens(void **state);

/* The array called printf(fmt, ...), or NULL. */
const golden *find(const char *fmt, ...);
/* The array called printf(fmt, ...), or a test failure naming it. */
const golden *get(const char *fmt, ...);
/* A new host tensor holding a golden array: float32 for f/d, int32 for i. */
lithe_tensor *tensor_of(const golden *g);
lithe_value *value_of(const golden *g);
/* A float32 golden array (as value_of) with its leading (batch) axis repeated `times` times. */
lithe_value *tiled(const golden *g, int times);
/* A float32 tensor equals a golden array: same shape, |lithe - thinc| <= atol + rtol |thinc|. */
void expect_close(const char *what, const lithe_tensor *t, const golden *g, double atol, double rtol);
/* A malloc'd copy of an integer golden as bytes (Thinc's bytes, .npy files, msgpack). */
uint8_t *bytes_of(const golden *g);
void expect_scalar(const char *what, double got, const golden *g, double atol, double rtol);

#endif
