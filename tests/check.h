/* The cmocka tests' OK(expr): expr is a lithe call that must return LITHE_OK; any other status
 * fails the test, printing the call, the status and lithe_last_error(). Include after <cmocka.h>
 * and "lithe.h". */
#ifndef LITHE_TEST_CHECK_H
#define LITHE_TEST_CHECK_H

#define OK(expr)                                                                                   \
    do {                                                                                           \
        lithe_status st_ = (expr);                                                                 \
        if (st_ != LITHE_OK) {                                                                     \
            print_error("%s failed: %s: %s\n", #expr, lithe_status_str(st_), lithe_last_error());  \
            fail();                                                                                \
        }                                                                                          \
    } while (0)

#endif
