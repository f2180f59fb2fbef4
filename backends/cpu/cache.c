/* The CPU backend's caching allocator. Layers allocate fresh activations, gradients and
 * workspaces on every forward and backward; handing a freed block to the next allocation of its
 * size class saves the allocator's work and, above all, the first touch of fresh pages (~10 µs per
 * 4 KiB page on these machines), which alone would exceed a batch-1 MLP's whole budget.
 *
 *   - size classes: 4 per doubling (sizes 2^k · {4, 5, 6, 7} / 4) from 256 B; a block is its class's
 *     size, so any freed block of a class serves any request of it;
 *   - bounded: at most LITHE__CACHE_MAX bytes wait in the lists (blocks over a quarter of that are
 *     never cached); a free beyond the bound goes back to the allocator at once;
 *   - only with lithe's default allocator: with a user's allocator (lithe_set_allocator) every
 *     block goes straight back, so that allocator sees every allocation and free (the OOM tests
 *     count live blocks), and lithe_set_allocator empties the cache before it switches, so a
 *     cached block is always returned to the allocator that made it;
 *   - thread-safe: one spin lock around list operations (a few instructions). */
#if defined(__linux__) && !defined(_DEFAULT_SOURCE)
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS under -std=c11 */
#endif
#include "simd/simd.h"
#include "gemm/gemm.h"

#include <stdatomic.h>

/* Large blocks natively: mapped pages of their own (mmap / munmap), not malloc's heap. glibc serves
 * blocks under its (dynamic, up to 32 MiB) mmap threshold from its heap and keeps freed heap pages
 * resident, so after a step whose blocks change sizes (a recomputing graph layer hands its blocks
 * back between segments) the resident set stayed ~90 MiB above the bytes in use; an unmapped block
 * leaves the resident set at once. Blocks the lists keep are unaffected (they stay mapped). */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LITHE__CACHE_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define LITHE__CACHE_ASAN 1
#endif
/* (not under AddressSanitizer: its heap's redzones catch overruns, mapped pages have none) */
#if (defined(__linux__) || defined(__APPLE__)) && !defined(__wasm__) && !defined(LITHE__CACHE_ASAN)
#include <sys/mman.h>
#if !defined(MAP_ANONYMOUS) && defined(MAP_ANON)
#define MAP_ANONYMOUS MAP_ANON
#endif
#define LITHE__MAP_MIN ((size_t)1 << 20)
static void *map_block(size_t n) {
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}
static void unmap_block(void *p, size_t n) { munmap(p, n); }
#else
#define LITHE__MAP_MIN SIZE_MAX
static void *map_block(size_t n) { (void)n; return NULL; }
static void unmap_block(void *p, size_t n) { (void)p; (void)n; }
#endif

#if defined(__wasm__)
#define LITHE__CACHE_MAX ((size_t)32 << 20)
#else
#define LITHE__CACHE_MAX ((size_t)256 << 20)
#endif
#define HEADER 64 /* keeps the 64-byte alignment of lithe__aligned_alloc */
#define NCLASS 120

typedef struct block {
    struct block *next;
    int cls;     /* -1: not cached (too big, or made under a user's allocator) */
    bool mapped; /* its own pages (map_block), else lithe__aligned_alloc's */
    size_t size; /* the bytes handed out (its class's size, or the request) */
} block;

static block *lists[NCLASS];
static size_t cached_bytes;
/* Accounting for lithe_backend_memory (under the lock): bytes handed out and not yet freed, their
 * high-water mark since the last reset, and how many blocks came fresh from the allocator (a
 * training step that reuses blocks only leaves this count unchanged: tests/test_train_memory.c). */
static size_t live_bytes, peak_bytes, n_fresh;

static void count_out(size_t size, bool fresh);
static atomic_flag lock = ATOMIC_FLAG_INIT;

static void acquire(void) {
    while (atomic_flag_test_and_set_explicit(&lock, memory_order_acquire)) {
    }
}
static void release(void) { atomic_flag_clear_explicit(&lock, memory_order_release); }

static size_t class_size(int c) { return ((size_t)(4 + (c & 3)) << (c >> 2)) << 6; /* 256 B at c = 0 */ }
/* The smallest class holding n bytes, or -1 past the cacheable sizes. */
static int class_of(size_t n) {
    if (n > LITHE__CACHE_MAX / 4) return -1;
    int c = 0;
    size_t u = n <= 256 ? 4 : (n + 63) >> 6; /* in units of 64 B, >= 4 */
    int k = 0;
    while ((u >> k) >= 8) k++; /* u in [4 << k, 8 << k) */
    size_t q = (u + ((size_t)1 << k) - 1) >> k; /* ceil(u / 2^k) in [4, 8] */
    if (q == 8) {
        k++;
        q = 4;
    }
    c = k * 4 + (int)(q - 4);
    return c < NCLASS ? c : -1;
}

#if defined(__GNUC__)
static __thread bool persistent;
#else
static _Thread_local bool persistent;
#endif
void lithe__cpu_persistent_allocs(bool on) { persistent = on; }

static void block_free(block *b) {
    if (b->mapped) unmap_block(b, b->size + HEADER);
    else lithe__aligned_free(b);
}

void *lithe__cpu_cache_alloc(size_t nbytes) {
    bool cache = lithe__default_allocator();
    /* a long-lived block (a gradient, optimizer state, a pool's buffer: persistent) is made to its
     * exact size and never cached: rounded up to its class it held up to 25% more than it uses (the
     * bench MLP's 784x512 weight: its gradient and two Adam moments 3 x 224 KiB over, resident in
     * WebAssembly's linear memory) and no later request would take it from a list */
    int c = cache && !persistent ? class_of(nbytes) : -1;
    if (c >= 0) { /* a long-lived tensor leaves the kept blocks to the activations */
        acquire();
        block *b = lists[c];
        if (b) {
            lists[c] = b->next;
            cached_bytes -= class_size(c);
        }
        release();
        if (b) {
            count_out(b->size, false);
            return (char *)b + HEADER;
        }
    }
    size_t size = c >= 0 ? class_size(c) : nbytes;
    if (size > SIZE_MAX - HEADER) return NULL;
    bool map = cache && size >= LITHE__MAP_MIN; /* only lithe's default allocator: a user's sees every block */
    block *b = map ? map_block(size + HEADER) : lithe__aligned_alloc(size + HEADER);
    if (!b && map) {
        lithe__cpu_cache_flush();
        b = map_block(size + HEADER);
        if (!b) return NULL;
    }
    if (!b && !map) {
        if (!cache) return NULL; /* a user's allocator said no: that is the answer */
        /* the allocator is out: give back what waits in the lists and try once more */
        lithe__cpu_cache_flush();
        b = lithe__aligned_alloc(size + HEADER);
        if (!b) return NULL;
    }
    b->cls = c;
    b->mapped = map;
    b->next = NULL;
    b->size = size;
    count_out(size, true);
    return (char *)b + HEADER;
}

static void count_out(size_t size, bool fresh) {
    acquire();
    live_bytes += size;
    if (live_bytes > peak_bytes) peak_bytes = live_bytes;
    n_fresh += fresh;
    release();
}

void lithe__cpu_cache_free(void *p) {
    if (!p) return;
    block *b = (block *)((char *)p - HEADER);
    int c = b->cls;
    acquire();
    live_bytes -= b->size <= live_bytes ? b->size : live_bytes;
    release();
    if (c >= 0 && lithe__default_allocator()) {
        acquire();
        if (cached_bytes + class_size(c) <= LITHE__CACHE_MAX) {
            b->next = lists[c];
            lists[c] = b;
            cached_bytes += class_size(c);
            b = NULL;
        }
        release();
    }
    if (b) block_free(b);
}

void lithe__cpu_cache_flush(void) {
    lithe__sgemm_release_workspaces(); /* the GEMM's packing workspaces are kept memory too */
    block *all[NCLASS];
    acquire();
    for (int c = 0; c < NCLASS; c++) {
        all[c] = lists[c];
        lists[c] = NULL;
    }
    cached_bytes = 0;
    release();
    for (int c = 0; c < NCLASS; c++)
        for (block *b = all[c], *nx; b; b = nx) {
            nx = b->next;
            block_free(b);
        }
}

size_t lithe__cpu_cache_bytes(void) {
    acquire();
    size_t n = cached_bytes;
    release();
    return n;
}

void lithe__cpu_memory_stats(const lithe_backend *be, size_t *in_use, size_t *cached, size_t *n_allocs) {
    (void)be;
    acquire();
    if (in_use) *in_use = live_bytes;
    if (cached) *cached = cached_bytes;
    if (n_allocs) *n_allocs = n_fresh;
    release();
}

size_t lithe__cpu_memory_peak(const lithe_backend *be, bool reset) {
    (void)be;
    acquire();
    size_t p = peak_bytes;
    if (reset) peak_bytes = live_bytes;
    release();
    return p;
}
