/* msgpack: see msgpack.h. */
#include "msgpack.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MP_MAX_DEPTH 64

/* ---- writer ---- */

static void put(mp_buf *b, const void *src, size_t n) {
    if (b->oom) return;
    if (n > SIZE_MAX - b->n) {
        b->oom = true;
        return;
    }
    if (b->n + n > b->cap) {
        size_t nc = b->cap ? b->cap : 256;
        while (nc < b->n + n) nc = nc > SIZE_MAX / 2 ? b->n + n : nc * 2;
        uint8_t *np = lithe__realloc(b->p, nc);
        if (!np) {
            b->oom = true;
            return;
        }
        b->p = np;
        b->cap = nc;
    }
    if (n) memcpy(b->p + b->n, src, n);
    b->n += n;
}

static void put_be(mp_buf *b, uint8_t tag, uint64_t v, int bytes) {
    uint8_t x[9];
    x[0] = tag;
    for (int i = 0; i < bytes; i++) x[1 + i] = (uint8_t)(v >> (8 * (bytes - 1 - i)));
    put(b, x, (size_t)bytes + 1);
}

void mp_nil(mp_buf *b) { put(b, "\xc0", 1); }
void mp_bool(mp_buf *b, bool v) { put(b, v ? "\xc3" : "\xc2", 1); }

void mp_int(mp_buf *b, int64_t v) {
    if (v >= 0) {
        uint64_t u = (uint64_t)v;
        if (u < 128) {
            uint8_t x = (uint8_t)u;
            put(b, &x, 1);
        } else if (u <= 0xff) put_be(b, 0xcc, u, 1);
        else if (u <= 0xffff) put_be(b, 0xcd, u, 2);
        else if (u <= 0xffffffffu) put_be(b, 0xce, u, 4);
        else put_be(b, 0xcf, u, 8);
    } else {
        if (v >= -32) {
            uint8_t x = (uint8_t)(int8_t)v;
            put(b, &x, 1);
        } else if (v >= INT8_MIN) put_be(b, 0xd0, (uint64_t)v, 1);
        else if (v >= INT16_MIN) put_be(b, 0xd1, (uint64_t)v, 2);
        else if (v >= INT32_MIN) put_be(b, 0xd2, (uint64_t)v, 4);
        else put_be(b, 0xd3, (uint64_t)v, 8);
    }
}

void mp_double(mp_buf *b, double v) {
    uint64_t u;
    memcpy(&u, &v, 8);
    put_be(b, 0xcb, u, 8);
}

void mp_str_n(mp_buf *b, const void *s, size_t n) {
    if (n < 32) {
        uint8_t x = (uint8_t)(0xa0 | n);
        put(b, &x, 1);
    } else if (n <= 0xff) put_be(b, 0xd9, n, 1);
    else if (n <= 0xffff) put_be(b, 0xda, n, 2);
    else put_be(b, 0xdb, n, 4);
    put(b, s, n);
}

void mp_str(mp_buf *b, const char *s) { mp_str_n(b, s, strlen(s)); }

void mp_bin(mp_buf *b, const void *p, size_t n) {
    if (n <= 0xff) put_be(b, 0xc4, n, 1);
    else if (n <= 0xffff) put_be(b, 0xc5, n, 2);
    else put_be(b, 0xc6, n, 4);
    put(b, p, n);
}

void mp_array(mp_buf *b, size_t n) {
    if (n < 16) {
        uint8_t x = (uint8_t)(0x90 | n);
        put(b, &x, 1);
    } else if (n <= 0xffff) put_be(b, 0xdc, n, 2);
    else put_be(b, 0xdd, n, 4);
}

void mp_map(mp_buf *b, size_t n) {
    if (n < 16) {
        uint8_t x = (uint8_t)(0x80 | n);
        put(b, &x, 1);
    } else if (n <= 0xffff) put_be(b, 0xde, n, 2);
    else put_be(b, 0xdf, n, 4);
}

void mp_raw(mp_buf *b, const void *p, size_t n) { put(b, p, n); }

/* ---- reader ---- */

typedef struct reader {
    const uint8_t *p;
    size_t n, at;
    const char *what;
    mp_doc *doc;
} reader;

static lithe_status bad(reader *r, const char *why) {
    return lithe__fail(LITHE_ERR_FORMAT, "%s: malformed msgpack at byte %zu of %zu: %s", r->what, r->at, r->n, why);
}

static bool take(reader *r, size_t k, const uint8_t **out) {
    if (k > r->n - r->at) return false;
    *out = r->p + r->at;
    r->at += k;
    return true;
}

static bool be(reader *r, int bytes, uint64_t *v) {
    const uint8_t *q;
    if (!take(r, (size_t)bytes, &q)) return false;
    *v = 0;
    for (int i = 0; i < bytes; i++) *v = *v << 8 | q[i];
    return true;
}

/* Reserves k objects in the arena. Every object needs at least one input byte, so k is bounded
 * by the bytes left: a hostile count cannot make the arena grow beyond the input's size. */
static lithe_status reserve(reader *r, uint64_t k, mp_obj **out) {
    if (k > r->n - r->at) return bad(r, "a count larger than the bytes left");
    if (k == 0) { /* an empty array or map: nothing to hold (the arena may not exist yet) */
        *out = NULL;
        return LITHE_OK;
    }
    mp_doc *d = r->doc;
    if (d->used + k > d->cap) {
        size_t nc = d->cap ? d->cap : 64;
        while (nc < d->used + k) nc *= 2;
        /* the arena may move: items pointers are fixed up after parsing (stored as offsets) */
        mp_obj *na = lithe__realloc(d->arena, nc * sizeof *na);
        if (!na) return lithe__oom(r->what, nc * sizeof *na);
        d->arena = na;
        d->cap = nc;
    }
    *out = d->arena + d->used;
    d->used += (size_t)k;
    return LITHE_OK;
}

static lithe_status parse(reader *r, mp_obj *o, int depth);

/* A map's keys must be distinct: msgpack-python (srsly) keeps the last of two equal keys and
 * lithe's lookups the first, so one file would be two models. Keys compare as Python would see
 * them: a str and a bin are different keys, an int equals an int of the same value (whatever its
 * encoding); nil, bool and float keys by value; a container key (unhashable in Python) is refused
 * by the reader that looks it up. Many keys are sorted (a hostile map cannot make this quadratic). */
static int key_cmp(const void *a, const void *b) {
    const mp_obj *x = *(const mp_obj *const *)a, *y = *(const mp_obj *const *)b;
    if (x->type != y->type) return x->type < y->type ? -1 : 1;
    switch (x->type) {
    case MP_INT:
        if (x->is_unsigned != y->is_unsigned) return x->is_unsigned ? 1 : -1;
        if (x->is_unsigned) return x->v.u < y->v.u ? -1 : x->v.u > y->v.u;
        return x->v.i < y->v.i ? -1 : x->v.i > y->v.i;
    case MP_BOOL: return (int)x->v.b - (int)y->v.b;
    case MP_FLOAT: return memcmp(&x->v.f, &y->v.f, sizeof x->v.f); /* by bits: a total order, NaN too */
    case MP_STR: case MP_BIN: case MP_EXT:
        if (x->len != y->len) return x->len < y->len ? -1 : 1;
        return x->len ? memcmp(x->data, y->data, x->len) : 0;
    case MP_NIL: return 0;
    default: return x < y ? -1 : x > y; /* containers: by identity (never equal) */
    }
}

static lithe_status check_keys(reader *r, size_t base, uint64_t count) {
    if (count < 2) return LITHE_OK;
    const mp_obj *small[16], **k = count <= 16 ? small : lithe__malloc((size_t)count * sizeof *k);
    if (!k) return lithe__oom(r->what, (size_t)count * sizeof *k);
    for (uint64_t i = 0; i < count; i++) k[i] = &r->doc->arena[base + 2 * i];
    qsort(k, (size_t)count, sizeof *k, key_cmp);
    const mp_obj *dup = NULL;
    for (uint64_t i = 1; i < count && !dup; i++)
        if (!key_cmp(&k[i - 1], &k[i])) dup = k[i];
    lithe_status s = LITHE_OK;
    if (dup) {
        char what[120];
        if (dup->type == MP_STR || dup->type == MP_BIN)
            snprintf(what, sizeof what, "the key \"%.*s\"", (int)(dup->len < 80 ? dup->len : 80), (const char *)dup->data);
        else if (dup->type == MP_INT && !dup->is_unsigned)
            snprintf(what, sizeof what, "the key %lld", (long long)dup->v.i);
        else
            snprintf(what, sizeof what, "a key");
        s = lithe__fail(LITHE_ERR_FORMAT, "%s: malformed msgpack at byte %zu of %zu: %s appears twice in one map", r->what,
                        r->at, r->n, what);
    }
    if (k != small) lithe__free((void *)k);
    return s;
}


/* Items are parsed into the arena; while parsing, `items` holds the arena offset (cast), fixed
 * into pointers at the end (the arena may be reallocated meanwhile). */
static lithe_status parse_seq(reader *r, mp_obj *o, uint64_t count, bool map, int depth) {
    if (depth >= MP_MAX_DEPTH) return bad(r, "nested deeper than 64 levels");
    uint64_t k = map ? count * 2 : count;
    if (count > UINT32_MAX) return bad(r, "count too large");
    mp_obj *first;
    size_t base = r->doc->used;
    LITHE__TRY(reserve(r, k, &first));
    o->type = map ? MP_MAP : MP_ARRAY;
    o->len = (uint32_t)count;
    o->items = k ? (mp_obj *)(uintptr_t)(base + 1) : NULL; /* an offset, +1 so that 0 stays "none" */
    for (uint64_t i = 0; i < k; i++) {
        mp_obj tmp;
        LITHE__TRY(parse(r, &tmp, depth + 1));
        r->doc->arena[base + i] = tmp;
    }
    return map ? check_keys(r, base, count) : LITHE_OK;
}

static lithe_status parse_bytes(reader *r, mp_obj *o, mp_type t, uint64_t len) {
    const uint8_t *q;
    if (len > r->n - r->at || !take(r, (size_t)len, &q)) return bad(r, "a string or bin longer than the bytes left");
    o->type = t;
    o->data = q;
    o->len = (uint32_t)len;
    return LITHE_OK;
}

static lithe_status parse(reader *r, mp_obj *o, int depth) {
    memset(o, 0, sizeof *o);
    const uint8_t *q;
    if (!take(r, 1, &q)) return bad(r, "truncated");
    uint8_t t = *q;
    uint64_t v;
    if (t <= 0x7f) {
        o->type = MP_INT;
        o->v.i = t;
        return LITHE_OK;
    }
    if (t >= 0xe0) {
        o->type = MP_INT;
        o->v.i = (int8_t)t;
        return LITHE_OK;
    }
    if ((t & 0xf0) == 0x80) return parse_seq(r, o, t & 0x0f, true, depth);
    if ((t & 0xf0) == 0x90) return parse_seq(r, o, t & 0x0f, false, depth);
    if ((t & 0xe0) == 0xa0) return parse_bytes(r, o, MP_STR, t & 0x1f);
    switch (t) {
    case 0xc0: o->type = MP_NIL; return LITHE_OK;
    case 0xc2: case 0xc3: o->type = MP_BOOL; o->v.b = t == 0xc3; return LITHE_OK;
    case 0xc4: case 0xc5: case 0xc6:
        if (!be(r, 1 << (t - 0xc4), &v)) return bad(r, "truncated bin length");
        return parse_bytes(r, o, MP_BIN, v);
    case 0xd9: case 0xda: case 0xdb:
        if (!be(r, 1 << (t - 0xd9), &v)) return bad(r, "truncated str length");
        return parse_bytes(r, o, MP_STR, v);
    case 0xca: {
        if (!be(r, 4, &v)) return bad(r, "truncated float32");
        uint32_t u = (uint32_t)v;
        float f;
        memcpy(&f, &u, 4);
        o->type = MP_FLOAT;
        o->v.f = f;
        return LITHE_OK;
    }
    case 0xcb:
        if (!be(r, 8, &v)) return bad(r, "truncated float64");
        o->type = MP_FLOAT;
        memcpy(&o->v.f, &v, 8);
        return LITHE_OK;
    case 0xcc: case 0xcd: case 0xce: case 0xcf:
        if (!be(r, 1 << (t - 0xcc), &v)) return bad(r, "truncated uint");
        o->type = MP_INT;
        if (v > (uint64_t)INT64_MAX) {
            o->is_unsigned = true;
            o->v.u = v;
        } else {
            o->v.i = (int64_t)v;
        }
        return LITHE_OK;
    case 0xd0: case 0xd1: case 0xd2: case 0xd3: {
        int bytes = 1 << (t - 0xd0);
        if (!be(r, bytes, &v)) return bad(r, "truncated int");
        int shift = 64 - 8 * bytes;
        o->type = MP_INT;
        o->v.i = shift ? (int64_t)(v << shift) >> shift : (int64_t)v;
        return LITHE_OK;
    }
    case 0xdc: case 0xdd:
        if (!be(r, t == 0xdc ? 2 : 4, &v)) return bad(r, "truncated array length");
        return parse_seq(r, o, v, false, depth);
    case 0xde: case 0xdf:
        if (!be(r, t == 0xde ? 2 : 4, &v)) return bad(r, "truncated map length");
        return parse_seq(r, o, v, true, depth);
    case 0xd4: case 0xd5: case 0xd6: case 0xd7: case 0xd8: {
        const uint8_t *ty;
        if (!take(r, 1, &ty)) return bad(r, "truncated ext");
        return parse_bytes(r, o, MP_EXT, (uint64_t)1 << (t - 0xd4));
    }
    case 0xc7: case 0xc8: case 0xc9: {
        const uint8_t *ty;
        if (!be(r, 1 << (t - 0xc7), &v) || !take(r, 1, &ty)) return bad(r, "truncated ext");
        return parse_bytes(r, o, MP_EXT, v);
    }
    default:
        return bad(r, "the byte 0xc1 is never used");
    }
}

static void fixup(mp_obj *arena, mp_obj *o) {
    if ((o->type == MP_ARRAY || o->type == MP_MAP) && o->items) o->items = arena + ((uintptr_t)o->items - 1);
}

lithe_status mp_parse(const uint8_t *data, size_t len, const char *what, mp_doc *doc) {
    memset(doc, 0, sizeof *doc);
    if (!data && len) return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: no data", what);
    reader r = {data, len, 0, what, doc};
    lithe_status s = parse(&r, &doc->root, 0);
    if (s == LITHE_OK && r.at != len)
        s = lithe__fail(LITHE_ERR_FORMAT, "%s: %zu trailing bytes after the msgpack value", what, len - r.at);
    if (s != LITHE_OK) {
        mp_doc_free(doc);
        return s;
    }
    fixup(doc->arena, &doc->root);
    for (size_t i = 0; i < doc->used; i++) fixup(doc->arena, &doc->arena[i]);
    return LITHE_OK;
}

void mp_doc_free(mp_doc *doc) {
    lithe__free(doc->arena);
    memset(doc, 0, sizeof *doc);
}

bool mp_str_eq(const mp_obj *o, const char *s) {
    size_t n = strlen(s);
    return o && (o->type == MP_STR || o->type == MP_BIN) && o->len == n && !memcmp(o->data, s, n);
}

static const mp_obj *get_typed(const mp_obj *map, const char *key, mp_type kt) {
    if (!map || map->type != MP_MAP) return NULL;
    for (uint32_t i = 0; i < map->len; i++)
        if (map->items[2 * i].type == kt && mp_str_eq(&map->items[2 * i], key)) return &map->items[2 * i + 1];
    return NULL;
}

const mp_obj *mp_get(const mp_obj *map, const char *key) { return get_typed(map, key, MP_STR); }
const mp_obj *mp_get_bin(const mp_obj *map, const char *key) { return get_typed(map, key, MP_BIN); }
