/* The CPU backend's thread pool (threadpool.h): pthreads, a generation counter that workers wait
 * on (a short spin, then a condition variable), and a count of ranges still running. The pool is
 * the library's, like the backend that owns it, so it takes its memory from malloc, not from the
 * caller's allocator hook (a pool made lazily inside a caller's call must not count as theirs). */
#include "threadpool.h"

#include <stdlib.h>

#if LITHE_HAVE_THREADS
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

/* Spin iterations before blocking: a worker woken within this window skips the futex wake-up
 * (tens of microseconds on a VM), which batch-1 layers would otherwise pay at every op. */
#define SPIN 4000

struct lithe__pool {
    int n;
    pthread_t *tids;
    pthread_mutex_t mu;
    pthread_cond_t work_cv, done_cv;
    /* (job number << 16) | the job's range count, published in one store: a worker that left
     * one job out (its index >= that job's range count) must not read the next job's count
     * before that job is published, or it runs the next job's range twice. */
    atomic_uint_fast64_t gen;
    atomic_int pending;       /* ranges of the current job not yet done */
    atomic_int busy;          /* a job is running */
    atomic_bool stop;
    /* the current job */
    lithe__range_fn fn;
    void *ctx;
    int64_t items, chunk; /* the range count travels in gen */
};

typedef struct {
    lithe__pool *p;
    int index;
} worker_arg;

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static void run_range(lithe__pool *p, int index) {
    int64_t b = (int64_t)index * p->chunk, e = b + p->chunk;
    if (e > p->items) e = p->items;
    if (b < e) p->fn(p->ctx, b, e);
}

static void *worker_main(void *argp) {
    worker_arg a = *(worker_arg *)argp;
    free(argp);
    lithe__pool *p = a.p;
    uint64_t seen = 0;
    for (;;) {
        uint64_t g = atomic_load_explicit(&p->gen, memory_order_acquire);
        for (int s = 0; g == seen && s < SPIN && !atomic_load(&p->stop); s++) {
            cpu_relax();
            g = atomic_load_explicit(&p->gen, memory_order_acquire);
        }
        if (g == seen) {
            pthread_mutex_lock(&p->mu);
            while ((g = atomic_load(&p->gen)) == seen && !atomic_load(&p->stop)) pthread_cond_wait(&p->work_cv, &p->mu);
            pthread_mutex_unlock(&p->mu);
        }
        if (atomic_load(&p->stop)) return NULL;
        seen = g;
        if (a.index < (int)(g & 0xffff)) {
            run_range(p, a.index);
            if (atomic_fetch_sub_explicit(&p->pending, 1, memory_order_acq_rel) == 1) {
                pthread_mutex_lock(&p->mu);
                pthread_cond_signal(&p->done_cv);
                pthread_mutex_unlock(&p->mu);
            }
        }
    }
}

lithe_status lithe__pool_new(int nthreads, lithe__pool **out) {
    *out = NULL;
    if (nthreads < 1) return lithe__fail(LITHE_ERR_INVALID_ARG, "thread pool: %d threads (need at least 1)", nthreads);
    lithe__pool *p = calloc(1, sizeof *p);
    if (!p) return lithe__oom("thread pool", sizeof *p);
    p->n = 1;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->work_cv, NULL);
    pthread_cond_init(&p->done_cv, NULL);
    if (nthreads > 1) {
        p->tids = calloc((size_t)nthreads - 1, sizeof *p->tids);
        if (!p->tids) {
            lithe__pool_free(p);
            return lithe__oom("thread pool", (size_t)(nthreads - 1) * sizeof(pthread_t));
        }
    }
    for (int i = 1; i < nthreads; i++) {
        worker_arg *a = malloc(sizeof *a);
        int rc = a ? 0 : -1;
        if (a) {
            *a = (worker_arg){p, i};
            rc = pthread_create(&p->tids[i - 1], NULL, worker_main, a);
            if (rc) free(a);
        }
        if (rc) {
            lithe__pool_free(p);
            return lithe__fail(LITHE_ERR_UNSUPPORTED, "thread pool: could not start thread %d of %d (error %d)", i + 1,
                               nthreads, rc);
        }
        p->n = i + 1;
    }
    *out = p;
    return LITHE_OK;
}

void lithe__pool_free(lithe__pool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->stop, true);
    pthread_cond_broadcast(&p->work_cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 1; i < p->n; i++) pthread_join(p->tids[i - 1], NULL);
    pthread_cond_destroy(&p->work_cv);
    pthread_cond_destroy(&p->done_cv);
    pthread_mutex_destroy(&p->mu);
    free(p->tids);
    free(p);
}

int lithe__pool_threads(const lithe__pool *p) { return p ? p->n : 1; }

void lithe__pool_for(lithe__pool *p, int64_t n, int64_t grain, lithe__range_fn fn, void *ctx) {
    if (n <= 0) return;
    if (grain < 1) grain = 1;
    int64_t ranges = n / grain;
    if (!p || ranges > p->n) ranges = p ? p->n : 1;
    int expect = 0;
    if (ranges <= 1 || !atomic_compare_exchange_strong(&p->busy, &expect, 1)) {
        fn(ctx, 0, n);
        return;
    }
    /* chunk: ceil(n / ranges) rounded up to a multiple of grain */
    int64_t chunk = (n + ranges - 1) / ranges;
    chunk = (chunk + grain - 1) / grain * grain;
    p->fn = fn;
    p->ctx = ctx;
    p->items = n;
    p->chunk = chunk;
    int nchunks = (int)((n + chunk - 1) / chunk);
    atomic_store(&p->pending, nchunks - 1);
    pthread_mutex_lock(&p->mu);
    uint64_t next = ((atomic_load_explicit(&p->gen, memory_order_relaxed) >> 16) + 1) << 16 | (uint64_t)nchunks;
    atomic_store_explicit(&p->gen, next, memory_order_release);
    pthread_cond_broadcast(&p->work_cv);
    pthread_mutex_unlock(&p->mu);
    run_range(p, 0);
    for (int s = 0; atomic_load_explicit(&p->pending, memory_order_acquire) > 0 && s < SPIN; s++) cpu_relax();
    if (atomic_load_explicit(&p->pending, memory_order_acquire) > 0) {
        pthread_mutex_lock(&p->mu);
        while (atomic_load(&p->pending) > 0) pthread_cond_wait(&p->done_cv, &p->mu);
        pthread_mutex_unlock(&p->mu);
    }
    atomic_store(&p->busy, 0);
}

static int default_threads(void) {
    const char *env = getenv("LITHE_NUM_THREADS");
    if (env && *env) {
        char *end;
        long v = strtol(env, &end, 10);
        if (*end == '\0' && v >= 1 && v <= 1024) return (int)v;
    }
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    return c >= 1 && c <= 1024 ? (int)c : 1;
}

static pthread_mutex_t cpu_pool_mu = PTHREAD_MUTEX_INITIALIZER;
static _Atomic(lithe__pool *) cpu_pool;
static atomic_int cpu_threads; /* 0: not decided yet */

static lithe_status cpu_pool_set(int n) {
    lithe__pool *np = NULL;
    if (n > 1) {
        lithe_status st = lithe__pool_new(n, &np);
        if (st != LITHE_OK) return st;
    }
    lithe__pool *old = atomic_exchange(&cpu_pool, np);
    atomic_store(&cpu_threads, n);
    lithe__pool_free(old);
    return LITHE_OK;
}

lithe__pool *lithe__cpu_pool(void) {
    if (atomic_load_explicit(&cpu_threads, memory_order_acquire) == 0) {
        pthread_mutex_lock(&cpu_pool_mu);
        if (atomic_load(&cpu_threads) == 0 && cpu_pool_set(default_threads()) != LITHE_OK)
            atomic_store(&cpu_threads, 1); /* no workers to be had: compute in the caller */
        pthread_mutex_unlock(&cpu_pool_mu);
    }
    return atomic_load_explicit(&cpu_pool, memory_order_acquire);
}

lithe_status lithe__cpu_set_threads(int n) {
    if (n < 0 || n > 1024)
        return lithe__fail(LITHE_ERR_INVALID_ARG, "set_threads: %d threads for \"cpu\" (0 for every core, or 1..1024)", n);
    pthread_mutex_lock(&cpu_pool_mu);
    lithe_status st = cpu_pool_set(n == 0 ? default_threads() : n);
    pthread_mutex_unlock(&cpu_pool_mu);
    return st;
}

int lithe__cpu_threads(void) {
    (void)lithe__cpu_pool();
    return atomic_load(&cpu_threads);
}

#else /* no threads: every job in the caller */

lithe_status lithe__pool_new(int nthreads, lithe__pool **out) {
    *out = NULL;
    if (nthreads != 1)
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "thread pool: %d threads asked, but this build has no threads", nthreads);
    return LITHE_OK;
}
void lithe__pool_free(lithe__pool *p) { (void)p; }
int lithe__pool_threads(const lithe__pool *p) {
    (void)p;
    return 1;
}
void lithe__pool_for(lithe__pool *p, int64_t n, int64_t grain, lithe__range_fn fn, void *ctx) {
    (void)p;
    (void)grain;
    if (n > 0) fn(ctx, 0, n);
}
lithe__pool *lithe__cpu_pool(void) { return NULL; }
lithe_status lithe__cpu_set_threads(int n) {
    if (n == 0 || n == 1) return LITHE_OK;
    return lithe__fail(LITHE_ERR_UNSUPPORTED, "set_threads: %d threads for \"cpu\", but this build has no threads "
                                              "(0 or 1 only)", n);
}
int lithe__cpu_threads(void) { return 1; }

#endif
