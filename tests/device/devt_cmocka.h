/* For the native device tests that are cmocka tests rather than counting cases (test_device.c,
 * test_device_vulkan.c): a call that must succeed fails the test at once, and so does a pair that
 * expect_pair finds different (the cases count failures instead, devt.h). Include after <cmocka.h>
 * and "cases.h". */
#ifndef LITHE_TESTS_DEVICE_DEVT_CMOCKA_H
#define LITHE_TESTS_DEVICE_DEVT_CMOCKA_H

#undef OK
#define OK(expr)                                                                                   \
    do {                                                                                           \
        lithe_status st_ = (expr);                                                                 \
        if (st_ != LITHE_OK) fail_msg("%s failed: %s: %s", #expr, lithe_status_str(st_), lithe_last_error()); \
    } while (0)

#define EXPECT_PAIR(...)                                                                           \
    do {                                                                                           \
        int f0_ = failures;                                                                        \
        expect_pair(__VA_ARGS__);                                                                  \
        if (failures != f0_) fail();                                                               \
    } while (0)

#endif
