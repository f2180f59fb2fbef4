/* The device-conformance harness every backend shares: the primitive and model cases of
 * tests/device/cases_*.c (listed in cases.h) run against the CPU backend (the oracle, checked
 * against Thinc by test_kernels) on Vulkan and CUDA (tests/device/test_device.c, cmocka: test_vulkan,
 * test_cuda) and on WebGPU (tests/webgpu/test_webgpu.c in lithe-webgpu-test.wasm, driven from Node).
 *
 * Counting semantics: FAIL prints a line and counts a failure; OK(expr) fails and returns from the
 * (void) case on a status other than LITHE_OK; BOTH runs the same primitive on the CPU, then on the
 * device. A case is a `void dc_xxx(void)`: it passed when it counted no failure. Pairs hold one
 * tensor per backend with the same values; expect_pair compares them, naming the device backend. */
#ifndef LITHE_TESTS_DEVICE_DEVT_H
#define LITHE_TESTS_DEVICE_DEVT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "internal.h"
#include "lithe.h"

extern lithe_backend *cpu, *dev; /* set by devt_begin */
extern const char *devt_name;    /* the device backend's registry name: "vulkan", "cuda", "webgpu" */
extern int failures;             /* reset by devt_begin / devt_case_begin */
extern long devt_checks;        /* tensors compared by expect_pair since the start (the logs report it) */
extern uint64_t rng_state;       /* reset to the same seed before every case (devt_case_begin) */

#define FAIL(...) (printf("FAIL: " __VA_ARGS__), printf("\n"), fflush(stdout), failures++)
#define OK(expr)                                                                                                  \
    do {                                                                                                          \
        lithe_status st_ = (expr);                                                                                \
        if (st_ != LITHE_OK) {                                                                                    \
            FAIL("%s:%d %s: %s: %s", __FILE__, __LINE__, #expr, lithe_status_str(st_), lithe_last_error());      \
            return;                                                                                               \
        }                                                                                                         \
    } while (0)
/* the same primitive on the CPU, then on the device */
#define BOTH(call_c, call_v)                                                                                     \
    do {                                                                                                          \
        OK(call_c);                                                                                               \
        OK(call_v);                                                                                               \
    } while (0)
/* a condition that must hold: a failure (printed) when it does not */
#define CHECK(cond, ...) ((cond) ? (void)0 : (void)FAIL(__VA_ARGS__))
#define CHECK_TRUE(cond) CHECK(cond, "%s:%d: %s", __FILE__, __LINE__, #cond)
#define CHECK_EQ(a, b)                                                                                            \
    CHECK((long long)(a) == (long long)(b), "%s:%d: %s is %lld, expected %s (%lld)", __FILE__, __LINE__, #a,       \
          (long long)(a), #b, (long long)(b))

/* failures = 0 and the two backends looked up ("cpu" and `device`); nonzero (the reason printed)
 * when one is missing. */
int devt_begin(const char *device);
/* before each case: failures = 0, rng_state = its fixed seed (a case's inputs do not depend on
 * which cases ran before it, or on LITHE_VULKAN_GEMM) */
void devt_case_begin(void);
/* whether the device backend is `name` (for the few per-backend tolerances, each saying why) */
bool devt_is(const char *name);
/* whether the device backend implements the primitive called `name` (core/primitives.def) */
bool devt_has_prim(const char *name);

/* uniform in [0, 1) from rng_state */
double uni(void);

typedef struct pair {
    lithe_tensor *c, *v;
} pair;
/* data NULL: zeros on both sides (defined contents) */
pair pair_new(lithe_dtype dt, int ndim, const int64_t *shape, const void *data);
/* float32, uniform in [lo, hi) */
pair pair_rand(int ndim, const int64_t *shape, double lo, double hi);
void pair_free(pair p);
/* the CPU side's bytes written to the device side */
void sync_pair(pair p);
/* x[i] = NaN on both sides (the CPU's values elsewhere kept) */
void pair_poke_nan(pair p, int64_t i);
/* Both sides read back: |dev - cpu| <= atol + rtol |cpu| (float32, NaN equals NaN, an infinity itself); 0, 0 or
 * another dtype: the same bits. The first mismatch is a failure naming `what`, the index and the
 * device backend. */
void expect_pair(const char *what, pair p, double atol, double rtol);
/* the largest |cpu - dev| of a float32 pair, printed so the log records how close they came */
double max_diff(const char *what, pair p);

/* a tensor value holding `data` on backend `be` (NULL, a failure counted, when that fails) */
lithe_value *devt_value_on(lithe_backend *be, lithe_dtype dt, int ndim, const int64_t *shape, const void *data);

#endif
