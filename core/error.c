/* Statuses, the per-thread last-error message, and the allocator hook. */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>

#if defined(__STDC_NO_THREADS__) && !defined(__GNUC__)
#define LITHE__TLS
#elif defined(__GNUC__)
#define LITHE__TLS __thread
#else
#define LITHE__TLS _Thread_local
#endif

static LITHE__TLS char last_error[1024];

/* the address of this thread's message buffer: distinct for every live thread, never 0 */
uintptr_t lithe__thread_token(void) { return (uintptr_t)(void *)last_error; }

const char *lithe_version(void) { return "0.1.0"; }

const char *lithe_status_str(lithe_status status) {
    switch (status) {
    case LITHE_OK: return "LITHE_OK";
    case LITHE_ERR_INVALID_ARG: return "LITHE_ERR_INVALID_ARG";
    case LITHE_ERR_SHAPE: return "LITHE_ERR_SHAPE";
    case LITHE_ERR_DTYPE: return "LITHE_ERR_DTYPE";
    case LITHE_ERR_OOM: return "LITHE_ERR_OOM";
    case LITHE_ERR_NOT_FOUND: return "LITHE_ERR_NOT_FOUND";
    case LITHE_ERR_STATE: return "LITHE_ERR_STATE";
    case LITHE_ERR_UNSUPPORTED: return "LITHE_ERR_UNSUPPORTED";
    case LITHE_ERR_IO: return "LITHE_ERR_IO";
    case LITHE_ERR_FORMAT: return "LITHE_ERR_FORMAT";
    case LITHE_ERR_VALUE: return "LITHE_ERR_VALUE";
    case LITHE_ERR_INTERNAL: return "LITHE_ERR_INTERNAL";
    }
    return "LITHE_ERR_UNKNOWN";
}

const char *lithe_last_error(void) { return last_error; }
void lithe_clear_error(void) { last_error[0] = '\0'; }

lithe_status lithe__fail(lithe_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return status;
}

lithe_status lithe__oom(const char *what, size_t bytes) {
    return lithe__fail(LITHE_ERR_OOM, "%s: out of memory allocating %zu bytes", what, bytes);
}

/* ---- allocator hook ---- */

static void *default_malloc(void *u, size_t n) { (void)u; return malloc(n); }
static void *default_realloc(void *u, void *p, size_t n) { (void)u; return realloc(p, n); }
static void default_free(void *u, void *p) { (void)u; free(p); }

static lithe_allocator allocator = {default_malloc, default_realloc, default_free, NULL};

bool lithe__default_allocator(void) { return allocator.malloc_fn == default_malloc; }

lithe_status lithe_set_allocator(const lithe_allocator *a) {
    if (a && (!a->malloc_fn || !a->realloc_fn || !a->free_fn))
        return lithe__fail(LITHE_ERR_INVALID_ARG,
                           "lithe_set_allocator: malloc_fn, realloc_fn and free_fn are all required");
    lithe__backends_cache_flush(); /* cached blocks go back to the allocator that made them */
    if (!a) {
        allocator = (lithe_allocator){default_malloc, default_realloc, default_free, NULL};
        return LITHE_OK;
    }
    allocator = *a;
    return LITHE_OK;
}

void *lithe__malloc(size_t size) { return allocator.malloc_fn(allocator.user, size ? size : 1); }
void *lithe__realloc(void *p, size_t size) {
    return allocator.realloc_fn(allocator.user, p, size ? size : 1);
}
void lithe__free(void *p) {
    if (p) allocator.free_fn(allocator.user, p);
}
void *lithe__calloc(size_t n, size_t size) {
    size_t total;
    if (!lithe__mul_size(n, size, &total)) return NULL;
    void *p = lithe__malloc(total);
    if (p) memset(p, 0, total);
    return p;
}
char *lithe__strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *p = lithe__malloc(n);
    if (p) memcpy(p, s, n);
    return p;
}
bool lithe__mul_size(size_t a, size_t b, size_t *out) {
    if (b && a > SIZE_MAX / b) return false;
    *out = a * b;
    return true;
}

/* Aligned blocks: over-allocate, store the original pointer just before the aligned one. */
#define LITHE__ALIGN 64
void *lithe__aligned_alloc(size_t size) {
    if (size > SIZE_MAX - LITHE__ALIGN - sizeof(void *)) return NULL;
    char *raw = lithe__malloc(size + LITHE__ALIGN + sizeof(void *));
    if (!raw) return NULL;
    uintptr_t a = ((uintptr_t)(raw + sizeof(void *)) + LITHE__ALIGN - 1) & ~(uintptr_t)(LITHE__ALIGN - 1);
    ((void **)a)[-1] = raw;
    return (void *)a;
}
void lithe__aligned_free(void *p) {
    if (p) lithe__free(((void **)p)[-1]);
}
