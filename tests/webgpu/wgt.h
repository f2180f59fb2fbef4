/* The harness the WebGPU conformance files share (test_webgpu.c, test_webgpu_rest.c,
 * test_webgpu_graph.c, test_webgpu_cpu.c, all in lithe-webgpu-test.wasm): the two backends, the failure count each
 * exported entry point returns, and pairs of tensors — one on the CPU (the oracle), one on
 * WebGPU — that the same primitive fills on both sides and expect_pair compares. */
#ifndef LITHE_TESTS_WEBGPU_WGT_H
#define LITHE_TESTS_WEBGPU_WGT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "internal.h"
#include "lithe.h"

extern lithe_backend *cpu, *dev; /* set by wgt_begin */
extern int failures;             /* reset by wgt_begin; each entry point returns it */

#define FAIL(...) (printf("FAIL: " __VA_ARGS__), printf("\n"), failures++)
#define OK(expr)                                                                                                  \
    do {                                                                                                          \
        lithe_status st_ = (expr);                                                                                \
        if (st_ != LITHE_OK) {                                                                                    \
            FAIL("%s:%d %s: %s: %s", __FILE__, __LINE__, #expr, lithe_status_str(st_), lithe_last_error());      \
            return;                                                                                               \
        }                                                                                                         \
    } while (0)
/* the same primitive on the CPU, then on WebGPU */
#define BOTH(call_c, call_v)                                                                                     \
    do {                                                                                                          \
        OK(call_c);                                                                                               \
        OK(call_v);                                                                                               \
    } while (0)

/* failures = 0 and both backends looked up; nonzero (printed) when one is missing */
int wgt_begin(void);
/* uniform in [0, 1) from a caller's splitmix64 state (each file keeps its own seed) */
double wgt_uni(uint64_t *state);

typedef struct pair {
    lithe_tensor *c, *v;
} pair;
/* data NULL: zeros on both sides (defined contents) */
pair pair_new(lithe_dtype dt, int ndim, const int64_t *shape, const void *data);
/* float32, uniform in [lo, hi) */
pair wgt_pair_rand(uint64_t *state, int ndim, const int64_t *shape, double lo, double hi);
void pair_free(pair p);
/* the CPU side's bytes written to the WebGPU side */
void sync_pair(pair p);
/* Both sides read back: |dev - cpu| <= atol + rtol |cpu| (float32, NaN equals NaN, an infinity itself); 0, 0 or
 * another dtype: the same bits. The first mismatch is a failure naming `what` and the index. */
void expect_pair(const char *what, pair p, double atol, double rtol);

/* in each file, over its own `static uint64_t rng_state` */
#define uni() wgt_uni(&rng_state)
#define pair_rand(...) wgt_pair_rand(&rng_state, __VA_ARGS__)

#endif
