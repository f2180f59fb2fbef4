/* Protobuf wire-format reading for the ONNX reader (onnx.c) and its external-data inliner
 * (onnx_external.c): every read bounded by the message's own end, every length by what is left, a
 * malformed message LITHE_ERR_FORMAT naming it. The includer defines WHAT (the reader's name, for
 * errors) before including. */
#ifndef LITHE_PB_READ_H
#define LITHE_PB_READ_H

#include "onnx.h"

#include <stdlib.h>
#include <string.h>

/* ---- wire format ---- */

typedef struct pb {
    const uint8_t *p, *end;
    const char *msg; /* the message being read, for errors */
} pb;

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

static inline lithe_status bad(const pb *r, const char *why) {
    return lithe__fail(LITHE_ERR_FORMAT, "%s: %s: %s", WHAT, r->msg, why);
}

static inline lithe_status rd_varint(pb *r, uint64_t *v) {
    uint64_t x = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (r->p >= r->end) return bad(r, "a varint runs past the end of the message");
        uint8_t b = *r->p++;
        if (shift == 63 && b > 1) return bad(r, "a varint longer than 64 bits");
        x |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = x;
            return LITHE_OK;
        }
    }
    return bad(r, "a varint longer than 10 bytes");
}

static inline lithe_status rd_key(pb *r, uint32_t *field, uint32_t *wt) {
    uint64_t k = 0;
    LITHE__TRY(rd_varint(r, &k));
    if ((k >> 3) == 0 || (k >> 3) > 0x1fffffff) return bad(r, "a field number of 0 or above 2^29");
    *field = (uint32_t)(k >> 3);
    *wt = (uint32_t)(k & 7);
    return LITHE_OK;
}

/* A length-delimited field: the bytes [*d, *d + *n) inside the message. */
static inline lithe_status rd_len(pb *r, const uint8_t **d, size_t *n) {
    uint64_t len = 0;
    LITHE__TRY(rd_varint(r, &len));
    if (len > (uint64_t)(r->end - r->p)) return bad(r, "a length-delimited field runs past the end of the message");
    *d = r->p;
    *n = (size_t)len;
    r->p += len;
    return LITHE_OK;
}

static inline lithe_status skip(pb *r, uint32_t wt) {
    uint64_t v = 0;
    const uint8_t *d = NULL;
    size_t n = 0;
    switch (wt) {
    case WT_VARINT: return rd_varint(r, &v);
    case WT_LEN: return rd_len(r, &d, &n);
    case WT_I64:
        if (r->end - r->p < 8) return bad(r, "a fixed64 field runs past the end");
        r->p += 8;
        return LITHE_OK;
    case WT_I32:
        if (r->end - r->p < 4) return bad(r, "a fixed32 field runs past the end");
        r->p += 4;
        return LITHE_OK;
    default: return bad(r, "a field of wire type 3, 4, 6 or 7 (groups are not used by onnx.proto)");
    }
}

static inline lithe_status want(const pb *r, uint32_t wt, uint32_t expected, const char *field) {
    if (wt == expected) return LITHE_OK;
    return lithe__fail(LITHE_ERR_FORMAT, "%s: %s: field %s has wire type %u, onnx.proto says %u", WHAT, r->msg, field,
                       wt, expected);
}

static inline lithe_status rd_int(pb *r, uint32_t wt, const char *field, int64_t *out) {
    LITHE__TRY(want(r, wt, WT_VARINT, field));
    uint64_t v = 0;
    LITHE__TRY(rd_varint(r, &v));
    *out = (int64_t)v;
    return LITHE_OK;
}

static inline lithe_status rd_str(pb *r, uint32_t wt, const char *field, char **out, size_t *out_len) {
    LITHE__TRY(want(r, wt, WT_LEN, field));
    const uint8_t *d = NULL;
    size_t n = 0;
    LITHE__TRY(rd_len(r, &d, &n));
    char *s = lithe__malloc(n + 1);
    if (!s) return lithe__oom(WHAT, n + 1);
    if (n) memcpy(s, d, n);
    s[n] = '\0';
    lithe__free(*out); /* a repeated singular field: the last one wins, as in protobuf */
    *out = s;
    if (out_len) *out_len = n;
    return LITHE_OK;
}

static inline float f32_of(const uint8_t *b) {
    uint32_t u = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static inline uint64_t u64_of(const uint8_t *b) {
    uint64_t u = 0;
    for (int i = 7; i >= 0; i--) u = u << 8 | b[i];
    return u;
}

/* A growable array of n items of `size` bytes. */
static inline lithe_status grow(void **arr, size_t *cap, size_t n, size_t size) {
    if (n < *cap) return LITHE_OK;
    if (n >= LITHE__ONNX_MAX_ITEMS)
        return lithe__fail(LITHE_ERR_FORMAT, "%s: more than %u items in one list", WHAT, LITHE__ONNX_MAX_ITEMS);
    size_t nc = *cap ? *cap * 2 : 4;
    void *p = lithe__realloc(*arr, nc * size);
    if (!p) return lithe__oom(WHAT, nc * size);
    *arr = p;
    *cap = nc;
    return LITHE_OK;
}

/* Repeated scalars arrive packed (one LEN field) or one per field; both are accepted, as protobuf
 * requires. kind: 0 varint int64, 1 fixed32 float, 2 fixed64 (double or uint64 bits). */
typedef struct vec {
    void *v;
    size_t n, cap;
} vec;

static inline lithe_status vec_push(vec *a, const void *x, size_t size) {
    LITHE__TRY(grow(&a->v, &a->cap, a->n, size));
    memcpy((char *)a->v + a->n * size, x, size);
    a->n++;
    return LITHE_OK;
}

static inline lithe_status rd_one(pb *r, int kind, vec *a) {
    if (kind == 0) {
        uint64_t v = 0;
        LITHE__TRY(rd_varint(r, &v));
        return vec_push(a, &v, 8);
    }
    size_t w = kind == 1 ? 4 : 8;
    if ((size_t)(r->end - r->p) < w) return bad(r, "a fixed-width value runs past the end");
    if (kind == 1) {
        float f = f32_of(r->p);
        r->p += 4;
        return vec_push(a, &f, 4);
    }
    uint64_t u = u64_of(r->p);
    r->p += 8;
    return vec_push(a, &u, 8);
}

static inline lithe_status rd_repeated(pb *r, uint32_t wt, int kind, const char *field, vec *a) {
    uint32_t scalar_wt = kind == 0 ? WT_VARINT : kind == 1 ? WT_I32 : WT_I64;
    if (wt == scalar_wt) return rd_one(r, kind, a);
    LITHE__TRY(want(r, wt, WT_LEN, field));
    const uint8_t *d = NULL;
    size_t n = 0;
    LITHE__TRY(rd_len(r, &d, &n));
    pb sub = {d, d + n, r->msg};
    while (sub.p < sub.end) LITHE__TRY(rd_one(&sub, kind, a));
    return LITHE_OK;
}

#endif
