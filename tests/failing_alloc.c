/* The counting, failing allocator of failing_alloc.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lithe.h"
#include "failing_alloc.h"

failing_alloc FA;

static void *fa_malloc(void *u, size_t n) {
    failing_alloc *c = u;
    if (atomic_fetch_add(&c->calls, 1) + 1 == c->fail_at) {
        c->failed = true;
        return NULL;
    }
    void *p = malloc(n);
    if (p) c->live++;
    return p;
}
static void *fa_realloc(void *u, void *p, size_t n) {
    failing_alloc *c = u;
    if (atomic_fetch_add(&c->calls, 1) + 1 == c->fail_at) {
        c->failed = true;
        return NULL;
    }
    void *q = realloc(p, n);
    if (q && !p) c->live++;
    return q;
}
static void fa_free(void *u, void *p) {
    if (p) {
        ((failing_alloc *)u)->live--;
        free(p);
    }
}

lithe_status failing_alloc_install(void) {
    FA.calls = 0;
    FA.fail_at = 0;
    FA.live = 0;
    FA.failed = false;
    return lithe_set_allocator(&(lithe_allocator){fa_malloc, fa_realloc, fa_free, &FA});
}
lithe_status failing_alloc_uninstall(void) { return lithe_set_allocator(NULL); }

void failing_alloc_arm(long fail_at) {
    FA.calls = 0;
    FA.fail_at = fail_at;
    FA.failed = false;
}

void failing_alloc_sweep(int n, lithe_status (*scenario)(int which)) {
    assert_int_equal(failing_alloc_install(), LITHE_OK);
    for (int which = 0; which < n; which++) {
        for (long at = 1;; at++) {
            failing_alloc_arm(at);
            lithe_status s = scenario(which);
            if (FA.live != 0) {
                print_error("scenario %d, allocation %ld failed: %ld blocks leaked\n", which, at, FA.live);
                fail();
            }
            if (!FA.failed) {
                if (s != LITHE_OK) print_error("scenario %d: %s\n", which, lithe_last_error());
                assert_int_equal(s, LITHE_OK);
                break;
            }
            if (s != LITHE_ERR_OOM) {
                print_error("scenario %d, allocation %ld failed: got %s (%s)\n", which, at, lithe_status_str(s),
                            lithe_last_error());
                fail();
            }
        }
    }
    assert_int_equal(failing_alloc_uninstall(), LITHE_OK);
}
