/* A counting allocator for lithe_set_allocator that fails exactly the N-th allocation (malloc or
 * realloc), shared by the allocation-failure tests. Include after <cmocka.h> and "lithe.h". */
#ifndef LITHE_TEST_FAILING_ALLOC_H
#define LITHE_TEST_FAILING_ALLOC_H

#include <stdatomic.h>
#include <stdbool.h>

/* Atomic: the CPU backend's pool threads allocate too (a convolution's per-range workspaces). */
typedef struct failing_alloc {
    _Atomic long calls;  /* allocation attempts since the last arm */
    long fail_at;        /* the attempt that fails; 0: none */
    _Atomic long live;   /* blocks handed out and not yet freed */
    _Atomic bool failed; /* the failure was injected */
} failing_alloc;

extern failing_alloc FA;

/* Installs the allocator (counters zeroed) / puts lithe's default back. */
lithe_status failing_alloc_install(void);
lithe_status failing_alloc_uninstall(void);
/* The next `fail_at`-th allocation fails (0: none); calls and failed are reset. */
void failing_alloc_arm(long fail_at);
/* For each scenario 0..n-1 and N = 1, 2, ...: fail the N-th allocation and run it. Each run
 * must return LITHE_ERR_OOM when the failure was hit, LITHE_OK once N is past its last
 * allocation, and leave nothing allocated. Installs and uninstalls the allocator. */
void failing_alloc_sweep(int n, lithe_status (*scenario)(int which));

#endif
