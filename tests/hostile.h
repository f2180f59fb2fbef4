/* Shared by tests/test_hostile.c and tests/test_hostile_load.c. Include after <cmocka.h> and
 * "lithe.h". */
#ifndef LITHE_TEST_HOSTILE_H
#define LITHE_TEST_HOSTILE_H

#include "check.h"

void test_hostile_corpus(void **state);
void test_lithe_dims_and_rates_checked(void **state);
void test_huge_unmappable_file_not_read_whole(void **state);
void test_stale_tmp_files_removed(void **state);
void test_npy_prefixes_exact_size(void **state);

#define HOSTILE_LOAD_TESTS                                                                         \
    cmocka_unit_test(test_lithe_dims_and_rates_checked), cmocka_unit_test(test_hostile_corpus),    \
        cmocka_unit_test(test_huge_unmappable_file_not_read_whole),                               \
        cmocka_unit_test(test_stale_tmp_files_removed), cmocka_unit_test(test_npy_prefixes_exact_size),

#endif
