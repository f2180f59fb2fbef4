/* The CPU backend's thread pool: one job at a time, split into contiguous chunks. Thread t (the
 * caller is thread 0) owns the t-th contiguous share of them and works through it from the front;
 * a thread done with its share takes the others' remaining chunks from the back. So a job of the
 * same size gives each thread the same items every time (an op's output is still in that core's
 * cache when the next op reads it), while a thread that runs faster (this machine's second vCPU
 * runs 10-30 % slower or faster than the first, in streaks) or starts sooner (a worker may be
 * asleep, or its core busy with another program) takes over the end of a slower one's share, and
 * the job waits only for chunks already claimed. Kernels that use it must give every output
 * element to one chunk only and never split a reduction across chunks, and a chunk's computation
 * must not depend on which thread runs it or on how many chunks there are, so that results are
 * bit-identical for any number of threads (the tests compare 1 and N threads exactly).
 *
 * Builds without threads (WebAssembly without pthreads, LITHE_NO_THREADS) have a pool of one: every
 * job runs in the caller. A pool that is busy (another thread's job, or a job started from inside a
 * task) runs the new job in the caller too, so nesting and concurrent models are safe. */
#ifndef LITHE_CPU_THREADPOOL_H
#define LITHE_CPU_THREADPOOL_H

#include "../../core/backend.h"

/* Threads come from pthreads natively (and in an Emscripten -pthread build), or, in the npm
 * package's threads module (an Emscripten build with -matomics -mbulk-memory and shared memory, no
 * pthreads runtime), from Web Workers / worker_threads that the JavaScript loader starts on the same
 * memory and parks in lithe__wasm_worker_main (LITHE_WASM_WORKERS). */
#if !defined(LITHE_NO_THREADS) && (!defined(__wasm__) || defined(__EMSCRIPTEN_PTHREADS__))
#define LITHE_HAVE_THREADS 1
#define LITHE_WASM_WORKERS 0
#elif !defined(LITHE_NO_THREADS) && defined(__EMSCRIPTEN__) && defined(__wasm_atomics__)
#define LITHE_HAVE_THREADS 1
#define LITHE_WASM_WORKERS 1
#else
#define LITHE_HAVE_THREADS 0
#define LITHE_WASM_WORKERS 0
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

/* Chunks per thread a job is split into at most: enough that a thread 10-30 % slower than the other,
 * or late, costs little at the end of a job; few enough that per-chunk set-up (a workspace, a packed
 * block) stays small, since a thread claims its own chunks half of what is left at a time (8 chunks:
 * 4 calls). Callers whose chunks carry set-up pass a grain that amortizes it. */
#define LITHE_POOL_CHUNKS_PER_THREAD 8

/* Runs fn over the items [0, n): split into at most LITHE_POOL_CHUNKS_PER_THREAD *
 * lithe__pool_threads(p) contiguous chunks whose lengths are multiples of `grain` (but the last),
 * and only into as many as give each chunk at least `grain` items; one chunk: fn(ctx, 0, n) in the
 * caller. fn gets one or more whole consecutive chunks per call, from any thread, in any order.
 * Which consecutive chunks one call gets depends on timing, even at a fixed thread count, so fn's
 * results must not depend on its [begin, end) either (only on each item).
 * Returns when every chunk is done. p NULL: fn(ctx, 0, n) in the caller. */
void lithe__pool_for(lithe__pool *p, int64_t n, int64_t grain, lithe__range_fn fn, void *ctx);
/* The same with the chunk count given (at most LITHE_POOL_CHUNKS_PER_THREAD per thread and n):
 * chunks of ceil(n / chunks) items, the last one shorter. For callers whose grain is a minimum of
 * work, not a multiple (the GEMM's slivers: 7 of them at 2 threads are 4 + 3, where a grain of 4
 * would leave one chunk). */
void lithe__pool_for_chunks(lithe__pool *p, int64_t n, int64_t chunks, lithe__range_fn fn, void *ctx);

/* The CPU backend's pool (NULL when it has one thread), created at first use with
 * lithe_backend_set_threads's count, or the LITHE_NUM_THREADS environment variable, or every core. */
lithe__pool *lithe__cpu_pool(void);
/* Sets the CPU backend's thread count (0: the default); used by lithe_backend_set_threads. */
lithe_status lithe__cpu_set_threads(int n);
int lithe__cpu_threads(void);

#if LITHE_WASM_WORKERS
/* The most Web Workers the module can use (a pool of up to 1 + this many threads). */
#define LITHE_WASM_MAX_WORKERS 64
/* A worker's life, on its own instance of the module (after the loader set its stack pointer):
 * gives the thread its TLS block, then serves worker slot `slot` forever (it never returns; the
 * loader ends the worker). */
void lithe__wasm_worker_main(int slot);
/* Called on the main instance once `n` workers have entered lithe__wasm_worker_main (slots 0..n-1):
 * the CPU backend's default thread count becomes n + 1. `can_block`: whether the calling thread
 * may block in memory.atomic.wait (not on a browser's main thread: it then spins). */
lithe_status lithe__wasm_workers_ready(int n, bool can_block);
/* Ranges run on workers so far (tests check that the workers did compute). */
int64_t lithe__wasm_worker_ranges(void);
#endif

#endif
