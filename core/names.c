/* A name -> index table (lithe__names, core/internal.h): open addressing with linear probing over
 * FNV-1a hashes, at most half full. It holds the callers' key pointers, not copies. */
#include "internal.h"

static uint64_t fnv1a(const char *s) {
    uint64_t h = 0xcbf29ce484222325u;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 0x100000001b3u;
    return h;
}

/* The entry holding key, or the empty one where it would go (cap > n, so there is one). */
static lithe__names_entry *slot_of(const lithe__names *t, const char *key) {
    size_t mask = t->cap - 1, i = (size_t)fnv1a(key) & mask;
    while (t->e[i].key && strcmp(t->e[i].key, key)) i = (i + 1) & mask;
    return &t->e[i];
}

lithe_status lithe__names_put(lithe__names *t, const char *key, size_t val) {
    if (2 * (t->n + 1) > t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 16;
        lithe__names_entry *e = lithe__calloc(cap, sizeof *e);
        if (!e) return lithe__oom("name index", cap * sizeof *e);
        lithe__names old = *t;
        t->e = e;
        t->cap = cap;
        for (size_t i = 0; i < old.cap; i++)
            if (old.e[i].key) *slot_of(t, old.e[i].key) = old.e[i];
        lithe__free(old.e);
    }
    lithe__names_entry *s = slot_of(t, key);
    if (!s->key) t->n++;
    s->key = key;
    s->val = val;
    return LITHE_OK;
}

bool lithe__names_get(const lithe__names *t, const char *key, size_t *val) {
    if (!t->cap) return false;
    const lithe__names_entry *s = slot_of(t, key);
    if (s->key) *val = s->val;
    return s->key != NULL;
}

void lithe__names_free(lithe__names *t) {
    lithe__free(t->e);
    memset(t, 0, sizeof *t);
}
