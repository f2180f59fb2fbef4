/* The counting check of the kernel tests that run without cmocka — natively, under qemu (aarch64)
 * and in WASI (test_gemm_ukernels, test_gemv, test_q8_ukernels, test_conv_pointwise): CHECK(cond,
 * printf-style message) counts a pass or prints the first 20 failures with their line; main prints
 * the counts and returns failed != 0 (ctest's FAIL_REGULAR_EXPRESSION also reads the counts). */
#ifndef LITHE_TESTS_COUNT_CHECK_H
#define LITHE_TESTS_COUNT_CHECK_H

#include <stdio.h>

static int passed, failed;
#define CHECK(cond, ...)                                                                                         \
    do {                                                                                                         \
        if (cond) {                                                                                              \
            passed++;                                                                                            \
        } else if (++failed <= 20) {                                                                             \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                                          \
            printf(__VA_ARGS__);                                                                                 \
            printf("\n");                                                                                        \
        }                                                                                                        \
    } while (0)

#endif
