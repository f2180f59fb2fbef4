/* core/io/json.c's own decimal-to-double conversion (js_number, which replaced strtod: libc's
 * needs 128-bit software floats in WebAssembly) against the C library's strtod, bit for bit:
 * boundary cases (ties to even, the subnormal range and its edge, DBL_MAX and overflow, long
 * digit strings) and random numbers printed at every precision and random digit strings with
 * exponents across the whole range. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/json.h"

static uint64_t rng = 0x9e3779b97f4a7c15u;
static uint64_t next(void) { /* xorshift64* */
    rng ^= rng >> 12, rng ^= rng << 25, rng ^= rng >> 27;
    return rng * 2685821657736338717u;
}

static int checked;
static void same(const char *s) {
    double want = strtod(s, NULL), got = js_number(s, strlen(s));
    checked++;
    if (memcmp(&want, &got, sizeof want)) fail_msg("'%s': js_number %.17g (%a), strtod %.17g (%a)", s, got, got, want, want);
}

static void test_edges(void **state) {
    (void)state;
    static const char *const cases[] = {
        "0", "-0", "0.0", "-0.0e5", "1", "-1", "0.1", "0.3", "123456789012345678901234567890", "1e22", "1e23",
        "9007199254740992", "9007199254740993", "9007199254740993.000000000000000000001", "9007199254740995",
        "9007199254740994.99999999999999999999", "2.2250738585072011e-308", "2.2250738585072014e-308",
        "2.2250738585072012e-308", "4.9406564584124654e-324", "2.4703282292062327e-324", "2.4703282292062328e-324",
        "2.4703282292062327208828439643411068618252990130716238221279284125033775363510437593264991818081799618989828234772285886546332835517796989819938739800539093906315035659515570226392290858392449105184435931802849936536152500319370457678249219365623669863658480757001585769269903706311928279558551332927834338409351978015531246597263579574622766465272827220056374006485499977096599470454020828166226237857393450736339007967761930577506740176324673600968951340535537458516661134223766678604162159680461914467291840300530057530849048765391711386591646239524912623653881879636239373280423891018672348497668235089863388587925628302755995657524455507255189313690836254779186948667994968324049705821028513185451396213837722826145437693412532098591327667236328125e-324",
        "1e-324", "3e-324", "1e-400", "1.7976931348623157e308", "1.7976931348623158e308", "1.7976931348623159e308",
        "1e308", "1e309", "179769313486231580793728971405301e276", "0.000000000000000000000000000000000000000000001e-280",
        "1448997445238699", "8.988465674311579e307", "5e-324", "4.4501477170144023e-308", "6.631236846766476e-316",
        "3.2379086165851934e-319", "1.0000000000000002", "1.00000000000000011102230246251565404236316680908203125",
        "1.00000000000000011102230246251565404236316680908203124", "1.00000000000000011102230246251565404236316680908203126",
        "0.1000000000000000055511151231257827021181583404541015625", "7.1e-10", "1e-22", "1e-23", "123e-20", "5e-1",
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) same(cases[i]);
    /* long digit strings: 400-character numbers, as the JSON reader allows */
    char s[402];
    for (int k = 0; k < 64; k++) {
        int at = 0;
        s[at++] = '0', s[at++] = '.';
        while (at < 400) s[at++] = (char)('0' + (k & 1 ? 9 : (int)(next() % 10)));
        s[at] = '\0';
        same(s);
        s[0] = (char)('1' + k % 9), s[1] = (char)('0' + k % 10); /* an integer of 400 digits: too big */
        same(s);
        snprintf(s + 300, 12, "e-%d", 100 + k * 5);
        same(s);
    }
}

static void test_random(void **state) {
    (void)state;
    char s[128];
    /* random doubles (every finite bit pattern, subnormals included) at every precision */
    for (int i = 0; i < 60000; i++) {
        uint64_t bits = next();
        double x;
        memcpy(&x, &bits, sizeof x);
        if (!isfinite(x)) continue;
        static const int prec[] = {17, 16, 15, 9, 3, 1, 25};
        snprintf(s, sizeof s, "%.*g", prec[i % 7], x);
        if (strchr(s, '.') == s || (s[0] == '-' && s[1] == '.')) continue;
        same(s);
    }
    /* random digit strings with exponents across the range (and past it) */
    for (int i = 0; i < 20000; i++) {
        int nd = 1 + (int)(next() % 40), at = 0;
        if (next() & 1) s[at++] = '-';
        s[at++] = (char)('1' + next() % 9);
        for (int k = 1; k < nd; k++) s[at++] = (char)('0' + next() % 10);
        snprintf(s + at, sizeof s - (size_t)at, "e%d", (int)(next() % 700) - 360);
        same(s);
    }
    print_message("%d numbers checked against strtod\n", checked);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_edges), cmocka_unit_test(test_random)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
