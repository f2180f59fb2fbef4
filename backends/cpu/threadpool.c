/* The CPU backend's thread pool (threadpool.h): a job counter that workers wait on (a short spin,
 * then a block), each thread's share of the job's chunks in one word that threads claim from by
 * compare-and-swap, and a count of chunks still running. The pool is the library's, like the
 * backend that owns it, so it takes its memory from malloc, not from the caller's allocator hook (a
 * pool made lazily inside a caller's call must not count as theirs).
 *
 * Two ways to block and to have threads, one pool: pthreads (condition variables, pthread_create),
 * and, in the npm package's WebAssembly threads module, memory.atomic.wait/notify on the counters
 * themselves with workers that the JavaScript loader started (Web Workers or worker_threads on the
 * same shared memory) and that wait in worker slots for a pool to claim them. */
#include "threadpool.h"

#include <stdlib.h>

#if LITHE_HAVE_THREADS
#include <stdatomic.h>
#include <stdalign.h>
#if !LITHE_WASM_WORKERS
#include <pthread.h>
#include <unistd.h>
#endif

/* Spin iterations before blocking: a worker woken within this window skips the futex wake-up
 * (tens of microseconds on a VM), which batch-1 layers would otherwise pay at every op. 4000
 * x86 pauses are ~76 us on Zen 5; WebAssembly has no pause, and an iteration of these loops under
 * V8 is a load and a compare (4000 of them ~2 us, 160,000 ~70-85 us in Node 20), so the threads
 * module spins 40 times as many to wait as long: with 4000 its worker slept between the layers
 * and predicts of a batch-1 MLP, and each next job paid the wake-up (docs/wasm.md). */
#define SPIN (LITHE_WASM_WORKERS ? 4000 * 40 : 4000)

typedef struct {
    alignas(64) atomic_uint_fast64_t w; /* CLAIMS(front, back) */
} lithe__pool_claims;

struct lithe__pool {
    int n;
#if LITHE_WASM_WORKERS
    int *slots;       /* the worker slot each worker thread runs in */
    atomic_int futex; /* bumped after each publication of gen: what workers block on */
    /* workers blocked (or about to block) on futex, and whether the caller is blocked on pending:
     * a notify is a call into the engine (a lock and a list walk in V8, 0.1-0.5 us), made only when
     * someone may sleep, not at every job of a batch-1 predict whose worker is spinning */
    atomic_int sleepers, caller_sleeps;
#else
    pthread_t *tids;
    pthread_mutex_t mu;
    pthread_cond_t work_cv, done_cv;
#endif
    /* The job number, bumped to publish a job (or to stop: then with no chunks left anywhere, so a
     * worker about to block sees the change). */
    atomic_uint gen;
    atomic_int pending;       /* chunks of the current job not yet done */
    atomic_int busy;          /* a job is running */
    atomic_bool stop;
    /* The chunks still unclaimed, thread by thread (claims[t], its own cache line): thread t owns
     * the chunks [front, back), the t-th contiguous share of the job, the same share of the items
     * in every job of the same size, so an op's output stays in the cache of the thread that made
     * it when the next op reads it. Each thread claims its own chunks from the front (half of what
     * is left at a time), and a thread whose share is done takes other threads' chunks from the
     * back (half of what is left while four or more are, then one at a time), so a slower or
     * later thread gives up its share's end. A claim is a compare-and-swap of the whole word, so
     * it is valid for whatever job the word belongs to: a worker late for one job that claims in
     * the next runs a chunk of the next (it reads the job's fields after its claim, and the job
     * cannot end before that chunk is done). */
    lithe__pool_claims *claims;
    /* the current job: its fields are written before its claims are published */
    lithe__range_fn fn;
    void *ctx;
    int64_t items, chunk;
};

#define FRONT(w) ((uint32_t)(w))
#define BACK(w) ((uint32_t)((w) >> 32))
#define CLAIMS(front, back) ((uint64_t)(back) << 32 | (uint32_t)(front))

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* ---- blocking: pthreads, or WebAssembly's wait/notify ---- */

#if LITHE_WASM_WORKERS
/* Whether the thread that calls into the library may block (memory.atomic.wait traps on a
 * browser's main thread): when not, it spins instead. Workers always may. */
static atomic_bool caller_can_block = true;
static atomic_int_fast64_t worker_ranges;

/* Waits while *addr == expected (returns at once when it differs; spurious returns are fine).
 * Every wait of the module goes through this one function, kept out of line (noinline, and
 * called from several places so that binaryen does not inline it either), with nothing live
 * after the wait: Node 20's V8 (11.3) compiles memory.atomic.wait32/wait64 in its baseline
 * compiler (Liftoff) without saving the caller's locals cached in registers, so a local used
 * after an inlined wait reads garbage (bindings/js/test/threads.test.mjs has the repro; TurboFan
 * code and newer V8s are fine). A call is safe: Liftoff spills around calls. */
__attribute__((noinline)) static int futex_wait(atomic_int *addr, int expected) {
    return __builtin_wasm_memory_atomic_wait32((int *)addr, expected, -1);
}
static void wake(atomic_int *addr, unsigned count) { __builtin_wasm_memory_atomic_notify((int *)addr, count); }

/* Workers block on p->futex, a 32-bit counter bumped after every publication of gen (a job or
 * stop): read before gen is checked, it changes whenever gen may have. */
/* Each side announces its sleep before its last check (sequentially consistent, as every atomic
 * of WebAssembly is): of a waker's "publish, then read the count" and a sleeper's "count myself,
 * then check", one sees the other, so a waker that reads no sleeper may skip the notify. */
static void wait_work(lithe__pool *p, unsigned seen) {
    for (;;) {
        int f = atomic_load(&p->futex);
        atomic_fetch_add(&p->sleepers, 1);
        if (atomic_load(&p->gen) != seen || atomic_load(&p->stop)) {
            atomic_fetch_sub(&p->sleepers, 1);
            return;
        }
        futex_wait(&p->futex, f);
        atomic_fetch_sub(&p->sleepers, 1);
    }
}
static void wake_workers(lithe__pool *p) {
    atomic_fetch_add(&p->futex, 1);
    if (atomic_load(&p->sleepers) > 0) wake(&p->futex, 0x7fffffffu);
}
static void signal_done(lithe__pool *p) {
    if (atomic_load(&p->caller_sleeps)) wake(&p->pending, 1);
}
static void wait_done(lithe__pool *p) {
    int v;
    bool block = atomic_load_explicit(&caller_can_block, memory_order_relaxed);
    if (block) atomic_store(&p->caller_sleeps, 1);
    while ((v = atomic_load(&p->pending)) > 0) {
        if (block) futex_wait(&p->pending, v);
    }
    atomic_store(&p->caller_sleeps, 0);
}
#else
static void wait_work(lithe__pool *p, unsigned seen) {
    pthread_mutex_lock(&p->mu);
    while (atomic_load(&p->gen) == seen && !atomic_load(&p->stop)) pthread_cond_wait(&p->work_cv, &p->mu);
    pthread_mutex_unlock(&p->mu);
}
static void wake_workers(lithe__pool *p) {
    pthread_mutex_lock(&p->mu);
    pthread_cond_broadcast(&p->work_cv);
    pthread_mutex_unlock(&p->mu);
}
static void signal_done(lithe__pool *p) {
    pthread_mutex_lock(&p->mu);
    pthread_cond_signal(&p->done_cv);
    pthread_mutex_unlock(&p->mu);
}
static void wait_done(lithe__pool *p) {
    pthread_mutex_lock(&p->mu);
    while (atomic_load(&p->pending) > 0) pthread_cond_wait(&p->done_cv, &p->mu);
    pthread_mutex_unlock(&p->mu);
}
#endif

/* Chunks from claims word c: the owner's claim (own) takes half of what is left from the front (at
 * least one chunk: few calls while the share is large, single chunks at its end), a thief's the
 * lower half of what is left from the back (single chunks while one to three are left: a late owner
 * running its share keeps nearly all of it; a share whose owner has not come (a worker off its
 * core, the usual case on a busy host) goes in 4 + 2 + 1 + 1 calls, not 8). Returns the first
 * chunk and sets *count, or returns -1 when the word has none left. */
static int64_t claim(atomic_uint_fast64_t *c, bool own, int64_t *count) {
    uint64_t w = atomic_load_explicit(c, memory_order_acquire);
    while (FRONT(w) < BACK(w)) {
        uint32_t left = BACK(w) - FRONT(w), k = own ? (left + 1) / 2 : left >= 4 ? left / 2 : 1;
        uint64_t to = own ? CLAIMS(FRONT(w) + k, BACK(w)) : CLAIMS(FRONT(w), BACK(w) - k);
        if (atomic_compare_exchange_weak_explicit(c, &w, to, memory_order_acq_rel, memory_order_acquire)) {
            *count = k;
            return own ? FRONT(w) : BACK(w) - k;
        }
    }
    return -1;
}

/* Thread t's part of the current job: its own chunks, then the others' from the back, until none
 * is left anywhere. Returns the chunks it ran. */
static int run_chunks(lithe__pool *p, int t) {
    int ran = 0;
    for (int k = 0; k < p->n; k++) {
        int v = (t + k) % p->n;
        int64_t c, cnt;
        while ((c = claim(&p->claims[v].w, k == 0, &cnt)) >= 0) {
            int64_t b = c * p->chunk, e = b + cnt * p->chunk;
            p->fn(p->ctx, b, e < p->items ? e : p->items);
            ran++;
            if (atomic_fetch_sub(&p->pending, (int)cnt) == cnt) { /* seq_cst: wait_done's pairing */
                signal_done(p);
                return ran; /* the job is over: the caller may publish the next */
            }
        }
    }
    return ran;
}

/* Worker t of pool p: takes part in every job until the pool stops. */
static void worker_loop(lithe__pool *p, int t) {
    unsigned seen = 0;
    for (;;) {
        unsigned g = atomic_load_explicit(&p->gen, memory_order_acquire);
        for (int s = 0; g == seen && s < SPIN && !atomic_load(&p->stop); s++) {
            cpu_relax();
            g = atomic_load_explicit(&p->gen, memory_order_acquire);
        }
        if (g == seen) {
            wait_work(p, seen);
            g = atomic_load_explicit(&p->gen, memory_order_acquire);
        }
        if (atomic_load(&p->stop)) return;
        seen = g;
#if LITHE_WASM_WORKERS
        int ran = run_chunks(p, t);
        if (ran) atomic_fetch_add_explicit(&worker_ranges, ran, memory_order_relaxed);
#else
        (void)run_chunks(p, t);
#endif
    }
}

/* ---- starting and joining worker threads ---- */

#if LITHE_WASM_WORKERS
/* A worker slot: a Web Worker parked in lithe__wasm_worker_main. state: 0 free, 1 claimed by a
 * pool (arguments being written), 2 running the pool's worker loop. */
typedef struct {
    atomic_int state;
    lithe__pool *pool;
    int index;
} worker_slot;
static worker_slot wslots[LITHE_WASM_MAX_WORKERS];
static atomic_int wslots_ready; /* workers the loader started */

void lithe__wasm_worker_main(int slot) {
    /* this thread's TLS block (lithe_last_error's buffer): the main thread's is set up by the
     * constructor below; a worker's lives as long as the worker */
    size_t size = __builtin_wasm_tls_size(), align = __builtin_wasm_tls_align();
    extern void __wasm_init_tls(void *mem);
    void *tls = aligned_alloc(align < sizeof(void *) ? sizeof(void *) : align, (size + align - 1) / align * align);
    if (!tls && size) __builtin_trap(); /* no memory for 1 KiB at start-up: the worker dies with a trap */
    __wasm_init_tls(tls);
    worker_slot *w = &wslots[slot];
    for (;;) {
        int st = atomic_load(&w->state);
        if (st != 2) {
            futex_wait(&w->state, st);
            continue;
        }
        worker_loop(w->pool, w->index);
        atomic_store(&w->state, 0);
        wake(&w->state, 0x7fffffffu);
    }
}

__attribute__((constructor)) static void main_thread_tls(void) {
    size_t size = __builtin_wasm_tls_size(), align = __builtin_wasm_tls_align();
    extern void __wasm_init_tls(void *mem);
    /* static, so it needs no allocator: 1 KiB of lithe_last_error (a larger TLS traps at start-up,
     * which every test of the threads module would show) */
    static alignas(64) char block[2048];
    if (size <= sizeof block && align <= 64) __wasm_init_tls(block);
    else __builtin_trap();
}

lithe_status lithe__wasm_workers_ready(int n, bool can_block) {
    if (n < 0 || n > LITHE_WASM_MAX_WORKERS)
        return lithe__fail(LITHE_ERR_INVALID_ARG, "threads: %d Web Workers (0..%d)", n, LITHE_WASM_MAX_WORKERS);
    atomic_store(&caller_can_block, can_block);
    atomic_store(&wslots_ready, n);
    return lithe__cpu_set_threads(0);
}

int64_t lithe__wasm_worker_ranges(void) { return atomic_load(&worker_ranges); }

static int start_thread(lithe__pool *p, int index) {
    int n = atomic_load(&wslots_ready);
    for (int k = 0; k < n; k++) {
        int free_ = 0;
        if (atomic_compare_exchange_strong(&wslots[k].state, &free_, 1)) {
            wslots[k].pool = p;
            wslots[k].index = index;
            p->slots[index - 1] = k;
            atomic_store(&wslots[k].state, 2);
            wake(&wslots[k].state, 0x7fffffffu);
            return 0;
        }
    }
    return -1;
}

static void join_thread(lithe__pool *p, int index) {
    atomic_int *st = &wslots[p->slots[index - 1]].state;
    int v;
    while ((v = atomic_load(st)) != 0)
        if (atomic_load_explicit(&caller_can_block, memory_order_relaxed)) futex_wait(st, v);
}

static int default_threads(void) { return atomic_load(&wslots_ready) + 1; }

/* the CPU pool's lock: taken only by callers of the library, never for long */
static atomic_flag cpu_pool_mu = ATOMIC_FLAG_INIT;
static void cpu_lock(void) {
    while (atomic_flag_test_and_set_explicit(&cpu_pool_mu, memory_order_acquire)) cpu_relax();
}
static void cpu_unlock(void) { atomic_flag_clear_explicit(&cpu_pool_mu, memory_order_release); }

#else
typedef struct {
    lithe__pool *p;
    int index;
} worker_arg;

static void *worker_main(void *argp) {
    worker_arg a = *(worker_arg *)argp;
    free(argp);
    worker_loop(a.p, a.index);
    return NULL;
}

static int start_thread(lithe__pool *p, int index) {
    worker_arg *a = malloc(sizeof *a);
    if (!a) return -1;
    *a = (worker_arg){p, index};
    int rc = pthread_create(&p->tids[index - 1], NULL, worker_main, a);
    if (rc) free(a);
    return rc;
}

static void join_thread(lithe__pool *p, int index) { pthread_join(p->tids[index - 1], NULL); }

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
static void cpu_lock(void) { pthread_mutex_lock(&cpu_pool_mu); }
static void cpu_unlock(void) { pthread_mutex_unlock(&cpu_pool_mu); }
#endif

/* ---- the pool ---- */

lithe_status lithe__pool_new(int nthreads, lithe__pool **out) {
    *out = NULL;
    if (nthreads < 1) return lithe__fail(LITHE_ERR_INVALID_ARG, "thread pool: %d threads (need at least 1)", nthreads);
    lithe__pool *p = calloc(1, sizeof *p);
    if (!p) return lithe__oom("thread pool", sizeof *p);
    p->n = 1;
    p->claims = aligned_alloc(alignof(lithe__pool_claims), (size_t)nthreads * sizeof *p->claims);
    if (!p->claims) {
        free(p);
        return lithe__oom("thread pool", (size_t)nthreads * sizeof *p->claims);
    }
    for (int t = 0; t < nthreads; t++) atomic_init(&p->claims[t].w, 0);
#if !LITHE_WASM_WORKERS
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->work_cv, NULL);
    pthread_cond_init(&p->done_cv, NULL);
#endif
    if (nthreads > 1) {
#if LITHE_WASM_WORKERS
        p->slots = calloc((size_t)nthreads - 1, sizeof *p->slots);
        bool ok = p->slots != NULL;
#else
        p->tids = calloc((size_t)nthreads - 1, sizeof *p->tids);
        bool ok = p->tids != NULL;
#endif
        if (!ok) {
            lithe__pool_free(p);
            return lithe__oom("thread pool", (size_t)(nthreads - 1) * sizeof(void *));
        }
    }
    for (int i = 1; i < nthreads; i++) {
        int rc = start_thread(p, i);
        if (rc) {
            lithe__pool_free(p);
#if LITHE_WASM_WORKERS
            return lithe__fail(LITHE_ERR_UNSUPPORTED,
                               "thread pool: could not start thread %d of %d: the loader started %d Web Workers "
                               "(lithe.init({ threads }) sets how many)",
                               i + 1, nthreads, atomic_load(&wslots_ready));
#else
            return lithe__fail(LITHE_ERR_UNSUPPORTED, "thread pool: could not start thread %d of %d (error %d)", i + 1,
                               nthreads, rc);
#endif
        }
        p->n = i + 1;
    }
    *out = p;
    return LITHE_OK;
}

void lithe__pool_free(lithe__pool *p) {
    if (!p) return;
    atomic_store(&p->stop, true);
    atomic_fetch_add(&p->gen, 1u);
    wake_workers(p);
    for (int i = 1; i < p->n; i++) join_thread(p, i);
#if LITHE_WASM_WORKERS
    free(p->slots);
#else
    pthread_cond_destroy(&p->work_cv);
    pthread_cond_destroy(&p->done_cv);
    pthread_mutex_destroy(&p->mu);
    free(p->tids);
#endif
    free(p->claims);
    free(p);
}

int lithe__pool_threads(const lithe__pool *p) { return p ? p->n : 1; }

static void pool_run(lithe__pool *p, int64_t n, int64_t chunks, int64_t grain, lithe__range_fn fn, void *ctx);

void lithe__pool_for(lithe__pool *p, int64_t n, int64_t grain, lithe__range_fn fn, void *ctx) {
    if (n <= 0) return;
    if (grain < 1) grain = 1;
    pool_run(p, n, n / grain, grain, fn, ctx);
}

void lithe__pool_for_chunks(lithe__pool *p, int64_t n, int64_t chunks, lithe__range_fn fn, void *ctx) {
    if (n <= 0) return;
    pool_run(p, n, chunks < n ? chunks : n, 1, fn, ctx);
}

/* n > 0 items in at most `chunks` chunks (capped at the pool's most), each a multiple of grain */
static void pool_run(lithe__pool *p, int64_t n, int64_t chunks, int64_t grain, lithe__range_fn fn, void *ctx) {
    int64_t most = p && p->n > 1 ? (int64_t)p->n * LITHE_POOL_CHUNKS_PER_THREAD : 1;
    if (most > INT32_MAX) most = INT32_MAX;
    if (chunks > most) chunks = most;
    int expect = 0;
    if (chunks <= 1 || !atomic_compare_exchange_strong(&p->busy, &expect, 1)) {
        fn(ctx, 0, n);
        return;
    }
    /* chunk: ceil(n / chunks) rounded up to a multiple of grain */
    int64_t chunk = (n + chunks - 1) / chunks;
    chunk = (chunk + grain - 1) / grain * grain;
    p->fn = fn;
    p->ctx = ctx;
    p->items = n;
    p->chunk = chunk;
    int64_t nchunks = (n + chunk - 1) / chunk, T = p->n;
    atomic_store_explicit(&p->pending, (int)nchunks, memory_order_relaxed);
    for (int64_t t = 0; t < T; t++) /* thread t's share: chunks [t·nchunks / T, (t + 1)·nchunks / T) */
        atomic_store_explicit(&p->claims[t].w, CLAIMS(t * nchunks / T, (t + 1) * nchunks / T), memory_order_release);
    unsigned job = atomic_load_explicit(&p->gen, memory_order_relaxed) + 1u;
#if LITHE_WASM_WORKERS
    atomic_store(&p->gen, job); /* seq_cst: wait_work's pairing */
    wake_workers(p);
#else
    pthread_mutex_lock(&p->mu); /* a worker between its check and its wait must not miss the signal */
    atomic_store_explicit(&p->gen, job, memory_order_release);
    pthread_cond_broadcast(&p->work_cv);
    pthread_mutex_unlock(&p->mu);
#endif
    /* the caller is thread 0: its own share, then what the workers have not claimed (a worker may
     * be asleep, or its core busy with another program); it waits only for chunks already claimed */
    run_chunks(p, 0);
    for (int s = 0; atomic_load_explicit(&p->pending, memory_order_acquire) > 0 && s < SPIN; s++) cpu_relax();
    if (atomic_load_explicit(&p->pending, memory_order_acquire) > 0) wait_done(p);
    atomic_store(&p->busy, 0);
}

static _Atomic(lithe__pool *) cpu_pool;
static atomic_int cpu_threads; /* 0: not decided yet */

static lithe_status cpu_pool_set(int n) {
    lithe__pool *np = NULL;
#if LITHE_WASM_WORKERS
    /* the Web Workers are a fixed set: the old pool gives its own back before the new one claims
     * them (and when the new one cannot have enough, the old count is restored) */
    int old_n = atomic_load(&cpu_threads);
    lithe__pool_free(atomic_exchange(&cpu_pool, NULL));
    atomic_store(&cpu_threads, 1);
    if (n > 1) {
        lithe_status st = lithe__pool_new(n, &np);
        if (st != LITHE_OK) {
            if (old_n > 1 && lithe__pool_new(old_n, &np) == LITHE_OK) {
                atomic_store(&cpu_pool, np);
                atomic_store(&cpu_threads, old_n);
            }
            return st;
        }
    }
#else
    if (n > 1) {
        lithe_status st = lithe__pool_new(n, &np);
        if (st != LITHE_OK) return st;
    }
#endif
    lithe__pool *old = atomic_exchange(&cpu_pool, np);
    atomic_store(&cpu_threads, n);
    lithe__pool_free(old);
    return LITHE_OK;
}

lithe__pool *lithe__cpu_pool(void) {
    if (atomic_load_explicit(&cpu_threads, memory_order_acquire) == 0) {
        cpu_lock();
        if (atomic_load(&cpu_threads) == 0 && cpu_pool_set(default_threads()) != LITHE_OK)
            atomic_store(&cpu_threads, 1); /* no workers to be had: compute in the caller */
        cpu_unlock();
    }
    return atomic_load_explicit(&cpu_pool, memory_order_acquire);
}

lithe_status lithe__cpu_set_threads(int n) {
    if (n < 0 || n > 1024)
        return lithe__fail(LITHE_ERR_INVALID_ARG, "set_threads: %d threads for \"cpu\" (0 for every core, or 1..1024)", n);
    cpu_lock();
    lithe_status st = cpu_pool_set(n == 0 ? default_threads() : n);
    cpu_unlock();
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
void lithe__pool_for_chunks(lithe__pool *p, int64_t n, int64_t chunks, lithe__range_fn fn, void *ctx) {
    (void)p;
    (void)chunks;
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
