/* ONNX external data, inlined at load: tensors whose bytes live in files beside the model are read
 * (paths checked to stay inside the model's folder) and written into the model's bytes. */
#include "onnx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WHAT "onnx"
#include "pb_read.h"

/* ---- external data: inlined at load ---- */

typedef struct wbuf {
    uint8_t *p;
    size_t n, cap;
} wbuf;

static lithe_status w_bytes(wbuf *w, const void *d, size_t n) {
    if (n > SIZE_MAX - w->n) return lithe__fail(LITHE_ERR_VALUE, "%s: the model grows past the address space", WHAT);
    if (w->n + n > w->cap) {
        size_t nc = w->cap ? w->cap : 4096;
        while (nc < w->n + n) nc = nc > SIZE_MAX / 2 ? w->n + n : nc * 2;
        uint8_t *np = lithe__realloc(w->p, nc);
        if (!np) return lithe__oom(WHAT, nc);
        w->p = np;
        w->cap = nc;
    }
    if (n) memcpy(w->p + w->n, d, n);
    w->n += n;
    return LITHE_OK;
}

static lithe_status w_varint(wbuf *w, uint64_t v) {
    uint8_t b[10];
    size_t n = 0;
    do {
        b[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    return w_bytes(w, b, n);
}

/* A length-delimited field: key, length, bytes. */
static lithe_status w_len_field(wbuf *w, uint32_t field, const uint8_t *d, size_t n) {
    LITHE__TRY(w_varint(w, (uint64_t)field << 3 | WT_LEN));
    LITHE__TRY(w_varint(w, n));
    return w_bytes(w, d, n);
}

/* The location must name a file inside the model's folder: relative, without a ".." part. */
static lithe_status check_location(const char *tensor, const char *loc) {
    if (!*loc) return lithe__fail(LITHE_ERR_FORMAT, "%s: tensor '%s': its external data has an empty location", WHAT, tensor);
    if (loc[0] == '/' || loc[0] == '\\' || (loc[0] && loc[1] == ':'))
        return lithe__fail(LITHE_ERR_FORMAT, "%s: tensor '%s': external data location '%s' is an absolute path; ONNX "
                                             "requires a path relative to the model's folder", WHAT, tensor, loc);
    for (const char *c = loc; *c;) {
        size_t n = strcspn(c, "/\\");
        if (n == 2 && c[0] == '.' && c[1] == '.')
            return lithe__fail(LITHE_ERR_FORMAT, "%s: tensor '%s': external data location '%s' leaves the model's folder "
                                                 "('..')", WHAT, tensor, loc);
        c += n;
        if (*c) c++;
    }
    return LITHE_OK;
}

/* The TensorProto d[0..n) with its external data (data_location EXTERNAL) read from dir and
 * stored as raw_data; a tensor with inline data is copied as it is. */
static lithe_status inline_tensor(const uint8_t *d, size_t n, const char *dir, wbuf *w) {
    int64_t location = 0; /* the last data_location wins, as parse_tensor reads it */
    for (pb q = {d, d + n, "TensorProto"}; q.p < q.end;) {
        uint32_t fld = 0, wt = 0;
        LITHE__TRY(rd_key(&q, &fld, &wt));
        if (fld == 14) LITHE__TRY(rd_int(&q, wt, "data_location", &location));
        else LITHE__TRY(skip(&q, wt));
    }
    if (location != 1) return w_bytes(w, d, n); /* inline data: as it is, not decoded */
    lithe__onnx_tensor t;
    LITHE__TRY(lithe__onnx_parse_tensor(d, n, &t)); /* dims, type, name and the entries; no data to decode */
    const char *name = t.name ? t.name : "";
    lithe_status s = check_location(name, t.ext_location);
    size_t es = lithe__onnx_type_bytes(t.data_type), want_bytes = 0;
    if (s == LITHE_OK && (uint64_t)t.numel > (uint64_t)SIZE_MAX / es)
        s = lithe__fail(LITHE_ERR_FORMAT, "%s: tensor '%s' has %lld elements, more than this platform addresses", WHAT,
                        name, (long long)t.numel);
    if (s == LITHE_OK) want_bytes = (size_t)t.numel * es;
    char *path = NULL;
    FILE *f = NULL;
    uint8_t *data = NULL;
    if (s == LITHE_OK) {
        size_t pl = strlen(dir) + strlen(t.ext_location) + 2;
        path = lithe__malloc(pl);
        if (!path) s = lithe__oom(WHAT, pl);
        else snprintf(path, pl, "%s/%s", dir, t.ext_location);
    }
    if (s == LITHE_OK && !(f = fopen(path, "rb")))
        s = lithe__fail(LITHE_ERR_IO, "%s: tensor '%s': cannot open its external data file '%s'", WHAT, name, path);
    long size = -1;
    if (s == LITHE_OK && (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0))
        s = lithe__fail(LITHE_ERR_IO, "%s: tensor '%s': cannot size '%s'", WHAT, name, path);
    int64_t off = t.ext_offset < 0 ? 0 : t.ext_offset;
    int64_t len = t.ext_length < 0 ? (int64_t)size - off : t.ext_length;
    if (s == LITHE_OK && (off > (int64_t)size || len < 0 || len > (int64_t)size - off))
        s = lithe__fail(LITHE_ERR_FORMAT, "%s: tensor '%s': external data at offset %lld, length %lld lies outside '%s' "
                                          "(%ld bytes)", WHAT, name, (long long)off, (long long)len, path, size);
    if (s == LITHE_OK && (uint64_t)len != (uint64_t)want_bytes)
        s = lithe__fail(LITHE_ERR_FORMAT, "%s: tensor '%s': external data has %lld bytes, its %lld elements of %zu bytes "
                                          "need %zu", WHAT, name, (long long)len, (long long)t.numel, es, want_bytes);
    if (s == LITHE_OK && want_bytes && !(data = lithe__malloc(want_bytes))) s = lithe__oom(WHAT, want_bytes);
    if (s == LITHE_OK && want_bytes &&
        (fseek(f, (long)off, SEEK_SET) != 0 || fread(data, 1, want_bytes, f) != want_bytes))
        s = lithe__fail(LITHE_ERR_IO, "%s: tensor '%s': cannot read %zu bytes at offset %lld of '%s'", WHAT, name,
                        want_bytes, (long long)off, path);
    /* every field but raw_data (9), external_data (13) and data_location (14), then the bytes */
    pb r = {d, d + n, "TensorProto"};
    while (s == LITHE_OK && r.p < r.end) {
        const uint8_t *start = r.p;
        uint32_t fld = 0, wt = 0;
        s = rd_key(&r, &fld, &wt);
        if (s == LITHE_OK) s = skip(&r, wt);
        if (s == LITHE_OK && fld != 9 && fld != 13 && fld != 14) s = w_bytes(w, start, (size_t)(r.p - start));
    }
    if (s == LITHE_OK) s = w_len_field(w, 9, data ? data : (const uint8_t *)"", want_bytes);
    if (f) fclose(f);
    lithe__free(data);
    lithe__free(path);
    lithe__onnx_tensor_free(&t);
    return s;
}

/* Copies the fields of message d[0..n) into w, rewriting the length-delimited field `field` with
 * fn (a nested message). */
static lithe_status rewrite_field(const uint8_t *d, size_t n, const char *msg, uint32_t field,
                                  lithe_status (*fn)(const uint8_t *, size_t, const char *, wbuf *), const char *dir,
                                  wbuf *w) {
    pb r = {d, d + n, msg};
    while (r.p < r.end) {
        const uint8_t *start = r.p, *fd = NULL;
        size_t fn_len = 0;
        uint32_t f = 0, wt = 0;
        LITHE__TRY(rd_key(&r, &f, &wt));
        if (f != field || wt != WT_LEN) {
            LITHE__TRY(skip(&r, wt));
            LITHE__TRY(w_bytes(w, start, (size_t)(r.p - start)));
            continue;
        }
        LITHE__TRY(rd_len(&r, &fd, &fn_len));
        wbuf inner = {0};
        lithe_status s = fn(fd, fn_len, dir, &inner);
        if (s == LITHE_OK) s = w_len_field(w, field, inner.p, inner.n);
        lithe__free(inner.p);
        LITHE__TRY(s);
    }
    return LITHE_OK;
}

static lithe_status inline_graph(const uint8_t *d, size_t n, const char *dir, wbuf *w) {
    return rewrite_field(d, n, "GraphProto", 5, inline_tensor, dir, w); /* initializer */
}

lithe_status lithe__onnx_inline_external(const uint8_t *data, size_t len, const char *dir, uint8_t **out,
                                         size_t *out_len) {
    *out = NULL;
    *out_len = 0;
    wbuf w = {0};
    lithe_status s = rewrite_field(data, len, "ModelProto", 7, inline_graph, dir, &w); /* graph */
    if (s != LITHE_OK) {
        lithe__free(w.p);
        return s;
    }
    *out = w.p;
    *out_len = w.n;
    return LITHE_OK;
}
