/* Concurrent-use detection: one thread at a time per node (include/lithe.h, "Thread safety").
 * Each node holds the token of the thread inside a call on it (0: none). Entering is one
 * compare-and-swap: free -> this thread's token (acquire); a thread already holding the node nests
 * (a combinator's forward enters its children, a shared node twice); another thread's token means
 * two threads use the node at once, which is refused with LITHE_ERR_STATE before anything is read
 * or written. Leaving the outermost claim stores 0 (release), so whatever a thread did inside
 * happens-before the next thread's claim: callers that serialise their calls (a mutex, a queue)
 * never see the error, and ThreadSanitizer sees the hand-over. Not a lock: nobody waits. */
#include "internal.h"

static bool claim(lithe_model *m, uintptr_t self) {
    uintptr_t want = 0;
    if (__atomic_compare_exchange_n(&m->owner, &want, self, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
        m->owner_depth = 1;
        return true;
    }
    if (want != self) return false;
    m->owner_depth++;
    return true;
}

void lithe__leave(lithe_model *m) {
    if (!m) return;
    if (--m->owner_depth == 0) __atomic_store_n(&m->owner, (uintptr_t)0, __ATOMIC_RELEASE);
}

static lithe_status busy(lithe_model *m, const char *fn) {
    return lithe__fail(LITHE_ERR_STATE,
                       "%s: model used from two threads at once (node '%s' is inside a call on another thread; "
                       "a model and its tree take one thread at a time: serialise the calls, include/lithe.h)",
                       fn, m->name ? m->name : "?");
}

lithe_status lithe__enter(lithe_model *m, const char *fn) {
    return claim(m, lithe__thread_token()) ? LITHE_OK : busy(m, fn);
}

/* Pre-order (node, then its layers); *n counts the claims made. Returns the busy node, or NULL. */
static lithe_model *claim_rec(lithe_model *m, uintptr_t self, size_t *n) {
    if (!claim(m, self)) return m;
    ++*n;
    for (size_t i = 0; i < m->n_layers; i++) {
        lithe_model *b = claim_rec(m->layers[i], self, n);
        if (b) return b;
    }
    return NULL;
}

/* Drops the first *n claims of the same pre-order. */
static void leave_rec(lithe_model *m, size_t *n) {
    if (*n == 0) return;
    --*n;
    lithe__leave(m);
    for (size_t i = 0; i < m->n_layers && *n; i++) leave_rec(m->layers[i], n);
}

lithe_status lithe__enter_tree(lithe_model *m, const char *fn) {
    size_t n = 0;
    lithe_model *b = claim_rec(m, lithe__thread_token(), &n);
    if (!b) return LITHE_OK;
    leave_rec(m, &n);
    return busy(b, fn);
}

void lithe__leave_tree(lithe_model *m) {
    size_t n = SIZE_MAX;
    leave_rec(m, &n);
}
