/* lithe_options (include/lithe.h, core/options.c): the tuning knobs as options of the runtime,
 * each overridden by its environment variable (docs/options.md). */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "internal.h"
#include "lithe.h"

static void test_options_and_overrides(void **state) {
    (void)state;
    unsetenv("LITHE_CONV_ROWS");
    unsetenv("LITHE_GRAPH_FUSE");
    lithe_options o = lithe_options_defaults();
    assert_int_equal(o.size, sizeof o);
    assert_null(o.conv_rows);
    assert_int_equal(lithe_set_options(&o), LITHE_OK);
    assert_null(lithe__knob(LITHE__KNOB_conv_rows)); /* unset: the built-in choice */
    o.conv_rows = "pixels";
    o.graph_fuse = "0";
    assert_int_equal(lithe_set_options(&o), LITHE_OK);
    assert_string_equal(lithe__knob(LITHE__KNOB_conv_rows), "pixels");
    assert_string_equal(lithe__knob(LITHE__KNOB_graph_fuse), "0");
    setenv("LITHE_CONV_ROWS", "filters", 1); /* the environment overrides the option */
    assert_string_equal(lithe__knob(LITHE__KNOB_conv_rows), "filters");
    unsetenv("LITHE_CONV_ROWS");
    assert_string_equal(lithe__knob(LITHE__KNOB_conv_rows), "pixels");
    /* an older header's smaller struct sets the fields it has; the rest go back to unset */
    lithe_options older = lithe_options_defaults();
    older.cpu_isa = "scalar";
    older.size = offsetof(lithe_options, graph_fuse);
    assert_int_equal(lithe_set_options(&older), LITHE_OK);
    assert_null(lithe__knob(LITHE__KNOB_graph_fuse));
    /* bad calls change nothing */
    o.size = 3;
    assert_int_equal(lithe_set_options(&o), LITHE_ERR_INVALID_ARG);
    o.size = sizeof o + 8;
    assert_int_equal(lithe_set_options(&o), LITHE_ERR_INVALID_ARG);
    o.size = sizeof o;
    o.vulkan_gemm = "subgroup:32-and-a-value-far-too-long-to-be-one";
    assert_int_equal(lithe_set_options(&o), LITHE_ERR_VALUE);
    assert_null(lithe__knob(LITHE__KNOB_conv_rows));
    assert_int_equal(lithe_set_options(NULL), LITHE_ERR_INVALID_ARG);
    assert_int_equal(lithe_set_options(&(lithe_options){.size = sizeof(lithe_options)}), LITHE_OK);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_options_and_overrides)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
