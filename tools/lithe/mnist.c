/* IDX reader for Fashion-MNIST. Every header field is checked before it sizes anything. */
#include "mnist.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef LITHE_HAVE_ZLIB
#include <zlib.h>
#endif

typedef struct reader {
#ifdef LITHE_HAVE_ZLIB
    gzFile gz;
#else
    FILE *f;
#endif
} reader;

static int r_open(reader *r, const char *path) {
#ifdef LITHE_HAVE_ZLIB
    r->gz = gzopen(path, "rb"); /* reads plain files too */
    return r->gz ? 0 : -1;
#else
    r->f = fopen(path, "rb");
    return r->f ? 0 : -1;
#endif
}
static size_t r_read(reader *r, void *buf, size_t n) {
#ifdef LITHE_HAVE_ZLIB
    size_t done = 0;
    while (done < n) {
        unsigned chunk = n - done > (1u << 30) ? (1u << 30) : (unsigned)(n - done);
        int got = gzread(r->gz, (char *)buf + done, chunk);
        if (got <= 0) break;
        done += (size_t)got;
    }
    return done;
#else
    return fread(buf, 1, n, r->f);
#endif
}
static void r_close(reader *r) {
#ifdef LITHE_HAVE_ZLIB
    gzclose(r->gz);
#else
    fclose(r->f);
#endif
}

static uint32_t be32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

int idx_read(const char *path, uint32_t magic, idx_data *out, char *err, size_t errcap) {
    memset(out, 0, sizeof *out);
    char gzpath[4096];
    reader r;
    const char *used = path;
    FILE *probe = fopen(path, "rb");
    if (probe) {
        fclose(probe);
    } else {
        snprintf(gzpath, sizeof gzpath, "%s.gz", path);
        used = gzpath;
    }
    if (r_open(&r, used) != 0) {
        snprintf(err, errcap, "cannot open %s: %s", used, strerror(errno));
        return -1;
    }
    uint8_t hdr[16];
    int ndim = magic == 0x803 ? 3 : 1;
    size_t hlen = 4 + 4 * (size_t)ndim;
    if (r_read(&r, hdr, hlen) != hlen) {
        snprintf(err, errcap, "%s: truncated IDX header", used);
        r_close(&r);
        return -1;
    }
    if (be32(hdr) != magic) {
        snprintf(err, errcap, "%s: IDX magic 0x%08x, expected 0x%08x", used, be32(hdr), magic);
        r_close(&r);
        return -1;
    }
    out->n = be32(hdr + 4);
    out->rows = ndim == 3 ? be32(hdr + 8) : 1;
    out->cols = ndim == 3 ? be32(hdr + 12) : 1;
    if (out->n <= 0 || out->n > 10000000 || out->rows <= 0 || out->rows > 4096 || out->cols <= 0 || out->cols > 4096) {
        snprintf(err, errcap, "%s: implausible IDX sizes %lld x %lld x %lld", used, (long long)out->n,
                 (long long)out->rows, (long long)out->cols);
        r_close(&r);
        return -1;
    }
    size_t bytes = (size_t)out->n * (size_t)out->rows * (size_t)out->cols;
    /* the buffer grows with the bytes that arrive (at most 64 MiB ahead of them), so a header
     * declaring 10^7 x 4096 x 4096 over a short (or gzip-bombed) file is "truncated", not a
     * 160 TB allocation */
    size_t got = 0, cap = 0;
    while (got < bytes) {
        size_t want = cap ? (cap * 2 < bytes ? cap * 2 : bytes) : (bytes < ((size_t)1 << 26) ? bytes : (size_t)1 << 26);
        uint8_t *grown = realloc(out->data, want);
        if (!grown) {
            snprintf(err, errcap, "%s: out of memory for %zu bytes", used, want);
            idx_free(out);
            r_close(&r);
            return -1;
        }
        out->data = grown;
        cap = want;
        size_t n = r_read(&r, out->data + got, cap - got);
        got += n;
        if (got < cap) break; /* the end of the data */
    }
    r_close(&r);
    if (got != bytes) {
        snprintf(err, errcap, "%s: truncated: %zu of %zu data bytes", used, got, bytes);
        idx_free(out);
        return -1;
    }
    return 0;
}

void idx_free(idx_data *d) {
    free(d->data);
    d->data = NULL;
}

void idx_keep_classes(idx_data *img, idx_data *lab, int n_classes) {
    const int64_t D = img->rows * img->cols;
    int64_t kept = 0;
    for (int64_t i = 0; i < lab->n; i++) {
        if (lab->data[i] >= n_classes) continue;
        if (kept != i) {
            lab->data[kept] = lab->data[i];
            memmove(img->data + kept * D, img->data + i * D, (size_t)D);
        }
        kept++;
    }
    img->n = lab->n = kept;
}
