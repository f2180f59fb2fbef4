/* IDX reader for Fashion-MNIST, plain or gzipped (gunzip.c). Every header field is checked before it
 * sizes anything. */
#include "mnist.h"

#include "gunzip.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The largest IDX file read: Fashion-MNIST's training images are 47 MB. */
#define MAX_FILE ((size_t)1 << 31)

/* The whole file, and its size, or -1 with a message. */
static int read_file(const char *path, uint8_t **out, size_t *len, char *err, size_t errcap) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errcap, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    long size = -1;
    if (fseek(f, 0, SEEK_END) == 0) size = ftell(f);
    if (size < 0 || fseek(f, 0, SEEK_SET) != 0) {
        snprintf(err, errcap, "cannot read %s: %s", path, strerror(errno));
        fclose(f);
        return -1;
    }
    if ((unsigned long)size > MAX_FILE) {
        snprintf(err, errcap, "%s: %ld bytes, over the %zu-byte limit of an IDX file", path, size, MAX_FILE);
        fclose(f);
        return -1;
    }
    uint8_t *b = malloc(size ? (size_t)size : 1);
    size_t got = b ? fread(b, 1, (size_t)size, f) : 0;
    int bad = ferror(f);
    fclose(f);
    if (!b || bad || got != (size_t)size) {
        snprintf(err, errcap, b ? "cannot read %s" : "%s: out of memory", path);
        free(b);
        return -1;
    }
    *out = b;
    *len = (size_t)size;
    return 0;
}

static uint32_t be32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

int idx_read(const char *path, uint32_t magic, idx_data *out, char *err, size_t errcap) {
    memset(out, 0, sizeof *out);
    char gzpath[4096];
    const char *used = path;
    FILE *probe = fopen(path, "rb");
    if (probe) {
        fclose(probe);
    } else {
        snprintf(gzpath, sizeof gzpath, "%s.gz", path);
        used = gzpath;
    }
    uint8_t *buf = NULL;
    size_t len = 0;
    if (read_file(used, &buf, &len, err, errcap) != 0) return -1;
    if (lithe_tool_is_gzip(buf, len)) { /* gzipped (Debian's files are): decompressed here, no zlib needed */
        uint8_t *raw = NULL;
        size_t rawlen = 0;
        char why[256];
        int rc = lithe_tool_gunzip(buf, len, MAX_FILE, &raw, &rawlen, why, sizeof why);
        free(buf);
        if (rc != 0) {
            snprintf(err, errcap, "%s: not a readable gzip file: %s", used, why);
            return -1;
        }
        buf = raw;
        len = rawlen;
    }
    int ndim = magic == 0x803 ? 3 : 1;
    size_t hlen = 4 + 4 * (size_t)ndim;
    if (len < hlen) {
        snprintf(err, errcap, "%s: truncated IDX header", used);
        free(buf);
        return -1;
    }
    if (be32(buf) != magic) {
        snprintf(err, errcap, "%s: IDX magic 0x%08x, expected 0x%08x", used, be32(buf), magic);
        free(buf);
        return -1;
    }
    out->n = be32(buf + 4);
    out->rows = ndim == 3 ? be32(buf + 8) : 1;
    out->cols = ndim == 3 ? be32(buf + 12) : 1;
    if (out->n <= 0 || out->n > 10000000 || out->rows <= 0 || out->rows > 4096 || out->cols <= 0 || out->cols > 4096) {
        snprintf(err, errcap, "%s: implausible IDX sizes %lld x %lld x %lld", used, (long long)out->n,
                 (long long)out->rows, (long long)out->cols);
        free(buf);
        return -1;
    }
    size_t bytes = (size_t)out->n * (size_t)out->rows * (size_t)out->cols;
    if (len - hlen < bytes) {
        snprintf(err, errcap, "%s: truncated: %zu of %zu data bytes", used, len - hlen, bytes);
        free(buf);
        return -1;
    }
    /* the data in place of the header, in the same allocation */
    memmove(buf, buf + hlen, bytes);
    uint8_t *shrunk = realloc(buf, bytes);
    out->data = shrunk ? shrunk : buf;
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
