/* The CPU backend's thread pool: one job at a time, split into contiguous ranges, the calling
 * thread working on the first range. Kernels that use it must give every output element to one
 * range only and never split a reduction across ranges, so that results are bit-identical for any
 * number of threads (the tests compare 1 and N threads exactly).
 *
 * Builds without threads (WebAssembly without pthreads, LITHE_NO_THREADS) have a pool of one: every
 * job runs in the caller. A pool that is busy (another thread's job, or a job started from inside a
 * task) runs the new job in the caller too, so nesting and concurrent models are safe. */
#ifndef LITHE_CPU_THREADPOOL_H
#define LITHE_CPU_THREADPOOL_H

#include "../../core/internal.h"

#if !defined(LITHE_NO_THREADS) && (!defined(__wasm__) || defined(__EMSCRIPTEN_PTHREADS__))
#define LITHE_HAVE_THREADS 1
#else
#define LITHE_HAVE_THREADS 0
#endif

typedef struct lithe__pool lithe__pool;

/* fn computes the items [begin, end) of the job. */
typedef void (*lithe__range_fn)(void *ctx, int64_t begin, int64_t end);

/* A pool of nthreads threads in all (the caller's and nthreads - 1 workers); nthreads >= 1.
 * LITHE_ERR_OOM or LITHE_ERR_UNSUPPORTED (a worker could not be started) with a message. */
lithe_status lithe__pool_new(int nthreads, lithe__pool **out);
/* Stops and joins the workers; NULL is a no-op. No job may be running. */
void lithe__pool_free(lithe__pool *p);
/* Threads in the pool (1 for NULL). */
int lithe__pool_threads(const lithe__pool *p);

/* Runs fn over the items [0, n): split into at most lithe__pool_threads(p) contiguous ranges whose
 * lengths are multiples of `grain` (but the last), and only into as many as give each range at least
 * `grain` items. Returns when every range is done. p NULL: fn(ctx, 0, n) in the caller. */
void lithe__pool_for(lithe__pool *p, int64_t n, int64_t grain, lithe__range_fn fn, void *ctx);

/* The CPU backend's pool (NULL when it has one thread), created at first use with
 * lithe_backend_set_threads's count, or the LITHE_NUM_THREADS environment variable, or every core. */
lithe__pool *lithe__cpu_pool(void);
/* Sets the CPU backend's thread count (0: the default); used by lithe_backend_set_threads. */
lithe_status lithe__cpu_set_threads(int n);
int lithe__cpu_threads(void);

#endif
