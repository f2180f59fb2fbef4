/* What every internal file needs (prefix lithe__; not installed): errors, allocation through the
 * hook, the name table, the seed mixer. The rest of the internal headers by audience: tensor.h
 * (tensors, values, sequences), backend.h (what a backend author needs: the table, the
 * description, the registry), model.h (model nodes, params, backprop records), layers.h (the layer
 * families and their shared machinery); internal.h includes them all */
#ifndef LITHE_CORE_BASE_H
#define LITHE_CORE_BASE_H

#include "lithe.h"

#include <stdarg.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------
 * Errors: every failure path goes through lithe__fail, which records the message for
 * lithe_last_error() and returns the status, so `return lithe__fail(...)` reads naturally.
 * ---------------------------------------------------------------------------------------- */
#if defined(__GNUC__)
#define LITHE__PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define LITHE__PRINTF(a, b)
#endif

lithe_status lithe__fail(lithe_status status, const char *fmt, ...) LITHE__PRINTF(2, 3);
lithe_status lithe__oom(const char *what, size_t bytes);

#define LITHE__TRY(expr)                                                                          \
    do {                                                                                          \
        lithe_status lithe__st_ = (expr);                                                         \
        if (lithe__st_ != LITHE_OK) return lithe__st_;                                            \
    } while (0)

#define LITHE__CHECK_ARG(cond, fn, what)                                                          \
    do {                                                                                          \
        if (!(cond)) return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: %s", fn, what);               \
    } while (0)

/* ------------------------------------------------------------------------------------------
 * Allocation: everything on the host goes through the hook.
 * ---------------------------------------------------------------------------------------- */
void *lithe__malloc(size_t size);
void *lithe__calloc(size_t n, size_t size);
void *lithe__realloc(void *p, size_t size);
void lithe__free(void *p);
char *lithe__strdup(const char *s);
/* 64-byte aligned blocks (SIMD and cache lines); free with lithe__aligned_free. */
void *lithe__aligned_alloc(size_t size);
void lithe__aligned_free(void *p);
/* Whether lithe's own allocator is installed (no lithe_set_allocator): the CPU backend caches
 * freed blocks only then (backends/cpu/cache.c), and gives them all back before a switch. */
bool lithe__default_allocator(void);
/* a * b without overflow; false on overflow. */
bool lithe__mul_size(size_t a, size_t b, size_t *out);

/* A name -> index table (core/names.c), for lookups by name that would otherwise scan a list
 * inside a loop over it (a graph's slots, a node's params: thousands in an imported model). It
 * holds the key pointers it is given (they must outlive it); a zeroed struct is an empty table.
 * put replaces the value of a key already there (LITHE_ERR_OOM: the table as it was). */
typedef struct lithe__names_entry {
    const char *key; /* NULL: empty */
    size_t val;
} lithe__names_entry;
typedef struct lithe__names {
    size_t cap, n; /* cap: a power of two (0: none yet), at least 2 n */
    lithe__names_entry *e;
} lithe__names;
lithe_status lithe__names_put(lithe__names *t, const char *key, size_t val);
bool lithe__names_get(const lithe__names *t, const char *key, size_t *val);
void lithe__names_free(lithe__names *t);

/* The tuning knobs (core/options.c): the environment variable when set, else lithe_set_options's
 * value, else NULL (the built-in choice). */
typedef enum lithe__knob_id {
#define LITHE_KNOB(field, env) LITHE__KNOB_##field,
#include "options.def"
#undef LITHE_KNOB
    LITHE__KNOB_COUNT
} lithe__knob_id;
const char *lithe__knob(lithe__knob_id k);

/* A number unique to the calling thread while it runs (core/error.c). */
uintptr_t lithe__thread_token(void);
/* Atomic reference counts: add one; drop one and say whether it was the last. */
#define LITHE__REF_INC(rc) ((void)__atomic_add_fetch(&(rc), 1, __ATOMIC_RELAXED))
#define LITHE__REF_DEC_LAST(rc) (__atomic_sub_fetch(&(rc), 1, __ATOMIC_ACQ_REL) == 0)

/* ------------------------------------------------------------------------------------------
 * RNG.
 * ---------------------------------------------------------------------------------------- */
uint64_t lithe__splitmix64(uint64_t *state);

#endif /* LITHE_CORE_BASE_H */
