/* The CPU backend's thread pool (backends/cpu/threadpool.h) and lithe_backend_set_threads: every
 * item of a job runs exactly once, chunks respect the grain and their most per thread, a thread
 * takes over the chunks a late one left, nested and concurrent jobs run (in the caller), pools start
 * and stop repeatedly, and the public thread count is checked. The kernels'
 * own "1 thread == N threads, bit for bit" checks live beside them (test_kernels, test_gemm). */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "check.h"

#include "lithe.h"
#include "../backends/cpu/threadpool.h"

#if LITHE_HAVE_THREADS
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#endif

typedef struct {
    int64_t grain;
    int *hits;
    int64_t min_len, max_len;
#if LITHE_HAVE_THREADS
    atomic_int calls;
#else
    int calls;
#endif
    int64_t bad_start; /* a range that did not start on a multiple of grain; -1: none */
} job;

static void mark(void *ctxp, int64_t b, int64_t e) {
    job *j = ctxp;
    for (int64_t i = b; i < e; i++) j->hits[i]++; /* ranges are disjoint: no race */
    if (b % j->grain) j->bad_start = b;
    j->calls++;
}

/* expect_calls: how many calls of fn, -1 for any count the pool may make (at most one per chunk:
 * n / grain, and LITHE_POOL_CHUNKS_PER_THREAD per thread) */
static void run_job(lithe__pool *p, int64_t n, int64_t grain, int expect_calls) {
    job j = {.grain = grain, .hits = calloc((size_t)(n ? n : 1), sizeof(int)), .bad_start = -1};
    assert_non_null(j.hits);
    lithe__pool_for(p, n, grain, mark, &j);
    for (int64_t i = 0; i < n; i++) assert_int_equal(j.hits[i], 1);
    assert_int_equal(j.bad_start, -1);
    if (expect_calls >= 0) assert_int_equal((int)j.calls, expect_calls);
    int64_t most = (int64_t)lithe__pool_threads(p) * LITHE_POOL_CHUNKS_PER_THREAD;
    if (n / grain < most) most = n / grain > 1 ? n / grain : 1;
    if (n > 0) assert_in_range((int)j.calls, 1, most);
    free(j.hits);
}

static void test_every_item_once(void **state) {
    (void)state;
    for (int threads = 1; threads <= 4; threads++) {
        lithe__pool *p = NULL;
        lithe_status st = lithe__pool_new(threads, &p);
        if (!LITHE_HAVE_THREADS && threads > 1) {
            assert_int_equal(st, LITHE_ERR_UNSUPPORTED);
            continue;
        }
        OK(st);
        assert_int_equal(lithe__pool_threads(p), threads);
        int64_t sizes[] = {0, 1, 2, 3, 7, 64, 65, 1000, 4097};
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
            for (int64_t grain = 1; grain <= 64; grain *= 4) {
                int64_t n = sizes[s];
                run_job(p, n, grain, n == 0 ? 0 : -1);
            }
        /* fewer items than one grain: a single call in the caller */
        run_job(p, 10, 16, 1);
        /* many rounds, to catch a lost wake-up or a stale generation */
        for (int r = 0; r < 2000; r++) run_job(p, 64, 1, -1);
        lithe__pool_free(p);
    }
    lithe__pool_free(NULL);
    assert_int_equal(lithe__pool_threads(NULL), 1);
    run_job(NULL, 100, 1, 1);
}

/* lithe__pool_for_chunks: chunks of ceil(n / chunks) items however n divides, so a job of 7, 15,
 * 17 or 19 items still splits into as many chunks as asked (a grain of ceil(n / T) with
 * lithe__pool_for would have made one: the GEMM's column split ran whole in the caller) */
static void test_given_chunks(void **state) {
    (void)state;
    for (int threads = 1; threads <= (LITHE_HAVE_THREADS ? 4 : 1); threads++) {
        lithe__pool *p = NULL;
        OK(lithe__pool_new(threads, &p));
        int64_t sizes[] = {1, 2, 3, 7, 15, 17, 19, 1000};
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
            for (int64_t want = 1; want <= 100; want = want * 3 + 1) {
                int64_t n = sizes[s], chunks = want < n ? want : n, most = (int64_t)threads * LITHE_POOL_CHUNKS_PER_THREAD;
                if (chunks > most) chunks = most;
                if (threads == 1) chunks = 1;
                int64_t len = (n + chunks - 1) / chunks;
                job j = {.grain = len, .hits = calloc((size_t)n, sizeof(int)), .bad_start = -1};
                assert_non_null(j.hits);
                lithe__pool_for_chunks(p, n, want, mark, &j);
                for (int64_t i = 0; i < n; i++) assert_int_equal(j.hits[i], 1);
                assert_int_equal(j.bad_start, -1); /* every call starts on a chunk's first item */
                /* one chunk per thread: every share is one chunk and stolen chunks go one at a time */
                if (threads > 1 && chunks == threads) assert_int_equal((int)j.calls, (int)((n + len - 1) / len));
                free(j.hits);
            }
        lithe__pool_free(p);
    }
    job j = {.grain = 17, .hits = calloc(17, sizeof(int)), .bad_start = -1};
    assert_non_null(j.hits);
    lithe__pool_for_chunks(NULL, 17, 2, mark, &j); /* no pool: one call */
    assert_int_equal((int)j.calls, 1);
    free(j.hits);
}

#if LITHE_HAVE_THREADS
typedef struct {
    lithe__pool *p;
    int64_t inner_calls;
} nest_ctx;

static void inner(void *ctxp, int64_t b, int64_t e) {
    (void)ctxp;
    (void)b;
    (void)e;
}
static void outer(void *ctxp, int64_t b, int64_t e) {
    nest_ctx *c = ctxp;
    for (int64_t i = b; i < e; i++) lithe__pool_for(c->p, 100, 1, inner, NULL); /* the pool is busy: runs here */
}

static void test_nested_jobs(void **state) {
    (void)state;
    lithe__pool *p = NULL;
    OK(lithe__pool_new(2, &p));
    nest_ctx c = {p, 0};
    lithe__pool_for(p, 8, 1, outer, &c);
    run_job(p, 100, 1, -1);
    lithe__pool_free(p);
}

static void *concurrent_user(void *pp) {
    for (int r = 0; r < 500; r++) run_job(pp, 257, 3, -1);
    return NULL;
}

/* A worker that stalls in its first chunks (asleep, or its core taken by another program): the
 * caller runs its own share, then takes the worker's unclaimed chunks from the back, and the job
 * ends once the stalled chunks are done. 16 chunks, 8 per thread; the worker's first claim is half
 * its share (4), so the caller runs at least its 8 and the worker's other 4. The caller's chunks
 * take 2 ms each, so that the worker wakes in time to claim (a round where it did not is run
 * again). */
typedef struct {
    pthread_t caller;
    atomic_int by_caller, stalled;
    int *hits;
} stall_ctx;

static void stall(void *ctxp, int64_t b, int64_t e) {
    stall_ctx *c = ctxp;
    for (int64_t i = b; i < e; i++) c->hits[i]++;
    if (pthread_equal(pthread_self(), c->caller)) {
        atomic_fetch_add(&c->by_caller, (int)(e - b));
        struct timespec ts = {0, (long)(e - b) * 2 * 1000 * 1000};
        nanosleep(&ts, NULL);
    } else if (atomic_fetch_add(&c->stalled, 1) == 0) {
        /* stalled until the caller has done the rest (not a fixed sleep, which a descheduled caller
         * on a loaded machine could outlast), 10 s at most */
        struct timespec ts = {0, 1000 * 1000};
        for (int i = 0; i < 10000 && atomic_load(&c->by_caller) < 12; i++) nanosleep(&ts, NULL);
    }
}

static void test_late_worker(void **state) {
    (void)state;
    lithe__pool *p = NULL;
    OK(lithe__pool_new(2, &p));
    int stalls = 0;
    for (int r = 0; r < 20 && stalls < 2; r++) {
        int hits[16] = {0};
        stall_ctx c = {.caller = pthread_self(), .hits = hits};
        lithe__pool_for(p, 16, 1, stall, &c);
        for (int i = 0; i < 16; i++) assert_int_equal(hits[i], 1);
        assert_true(atomic_load(&c.by_caller) >= 12); /* all 16 when the worker came too late for any */
        stalls += atomic_load(&c.stalled) > 0;
    }
    assert_int_equal(stalls, 2);
    lithe__pool_free(p);
}

static void test_concurrent_callers(void **state) {
    (void)state;
    lithe__pool *p = NULL;
    OK(lithe__pool_new(3, &p));
    pthread_t t[3];
    for (int i = 0; i < 3; i++) assert_int_equal(pthread_create(&t[i], NULL, concurrent_user, p), 0);
    for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
    lithe__pool_free(p);
}
#endif

static void test_public_thread_count(void **state) {
    (void)state;
    lithe_backend *cpu = NULL;
    OK(lithe_backend_get("cpu", &cpu));
    assert_true(lithe_backend_threads(cpu) >= 1);
    assert_int_equal(lithe_backend_set_threads(cpu, -1), LITHE_ERR_INVALID_ARG);
    assert_non_null(strstr(lithe_last_error(), "-1"));
    assert_int_equal(lithe_backend_set_threads(cpu, 5000), LITHE_ERR_INVALID_ARG);
    assert_int_equal(lithe_backend_set_threads(NULL, 1), LITHE_ERR_INVALID_ARG);
    OK(lithe_backend_set_threads(cpu, 1));
    assert_int_equal(lithe_backend_threads(cpu), 1);
    assert_null(lithe__cpu_pool());
#if LITHE_HAVE_THREADS
    OK(lithe_backend_set_threads(cpu, 3));
    assert_int_equal(lithe_backend_threads(cpu), 3);
    assert_int_equal(lithe__pool_threads(lithe__cpu_pool()), 3);
    run_job(lithe__cpu_pool(), 1000, 1, -1);
    OK(lithe_backend_set_threads(cpu, 2));
    assert_int_equal(lithe_backend_threads(cpu), 2);
#else
    assert_int_equal(lithe_backend_set_threads(cpu, 2), LITHE_ERR_UNSUPPORTED);
#endif
    OK(lithe_backend_set_threads(cpu, 0));
    assert_true(lithe_backend_threads(cpu) >= 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_item_once),
        cmocka_unit_test(test_given_chunks),
#if LITHE_HAVE_THREADS
        cmocka_unit_test(test_nested_jobs),
        cmocka_unit_test(test_late_worker),
        cmocka_unit_test(test_concurrent_callers),
#endif
        cmocka_unit_test(test_public_thread_count),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
