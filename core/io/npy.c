/* NumPy's .npy format (numpy/lib/format.py, versions 1.0, 2.0 and 3.0): "\x93NUMPY", a version,
 * a header length, then a Python dict literal {'descr': '<f4', 'fortran_order': False,
 * 'shape': (3, 4), } padded with spaces to a multiple of 64 bytes and ended by '\n', then the
 * data in C order. The reader checks every byte of the header and every size before use; the
 * writer produces what numpy.save produces for the same array. */
#include "../internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the .npy reader assumes a little-endian host"
#endif

static const struct {
    const char *descr;
    lithe_dtype dtype;
} descrs[] = {
    {"<f4", LITHE_F32}, {"<f2", LITHE_F16}, {"<i4", LITHE_I32}, {"<i8", LITHE_I64},
    {"<u8", LITHE_U64}, {"|u1", LITHE_U8},  {"<u4", LITHE_U32},
};

#define NPY_MAX_HEADER 65536

typedef struct hdr {
    const char *p;
    size_t n, at;
} hdr;

static void skip_ws(hdr *h) {
    while (h->at < h->n && (h->p[h->at] == ' ' || h->p[h->at] == '\t')) h->at++;
}

static bool lit(hdr *h, const char *s) {
    size_t k = strlen(s);
    skip_ws(h);
    if (k > h->n - h->at || memcmp(h->p + h->at, s, k)) return false;
    h->at += k;
    return true;
}

/* A quoted string ('...' or "...") without escapes, into buf. */
static bool quoted(hdr *h, char *buf, size_t cap) {
    skip_ws(h);
    if (h->at >= h->n || (h->p[h->at] != '\'' && h->p[h->at] != '"')) return false;
    char q = h->p[h->at++];
    size_t k = 0;
    while (h->at < h->n && h->p[h->at] != q) {
        if (h->p[h->at] == '\\' || k + 1 >= cap) return false;
        buf[k++] = h->p[h->at++];
    }
    if (h->at >= h->n) return false;
    h->at++;
    buf[k] = '\0';
    return true;
}

static lithe_status header_error(const char *what, const char *why) {
    return lithe__fail(LITHE_ERR_FORMAT, "%s: not a valid .npy header: %s", what, why);
}

static lithe_status parse_header(const char *what, const char *p, size_t n, lithe_dtype *dtype, int *ndim,
                                 int64_t *shape) {
    hdr h = {p, n, 0};
    bool have_descr = false, have_order = false, have_shape = false;
    if (!lit(&h, "{")) return header_error(what, "it does not start with '{'");
    for (;;) {
        if (lit(&h, "}")) break;
        char key[32], val[32];
        if (!quoted(&h, key, sizeof key) || !lit(&h, ":")) return header_error(what, "a key is malformed");
        if (!strcmp(key, "descr")) {
            if (!quoted(&h, val, sizeof val)) return header_error(what, "descr is not a string");
            size_t k = 0;
            while (k < sizeof descrs / sizeof descrs[0] && strcmp(descrs[k].descr, val)) k++;
            if (k == sizeof descrs / sizeof descrs[0]) {
                if (val[0] == '>')
                    return lithe__fail(LITHE_ERR_DTYPE, "%s: big-endian arrays ('%s') are not supported", what, val);
                return lithe__fail(LITHE_ERR_DTYPE,
                                   "%s: dtype '%s' is not one lithe holds (<f4 <f2 <i4 <i8 <u8 <u4 |u1); convert with "
                                   "numpy's astype first",
                                   what, val);
            }
            *dtype = descrs[k].dtype;
            have_descr = true;
        } else if (!strcmp(key, "fortran_order")) {
            if (lit(&h, "False")) have_order = true;
            else if (lit(&h, "True"))
                return lithe__fail(LITHE_ERR_UNSUPPORTED, "%s: Fortran-ordered arrays are not supported (save with "
                                                          "numpy.ascontiguousarray)", what);
            else return header_error(what, "fortran_order is not True or False");
        } else if (!strcmp(key, "shape")) {
            if (!lit(&h, "(")) return header_error(what, "shape is not a tuple");
            *ndim = 0;
            while (!lit(&h, ")")) {
                skip_ws(&h);
                if (*ndim >= LITHE_MAX_DIMS)
                    return lithe__fail(LITHE_ERR_FORMAT, "%s: more than %d dimensions", what, LITHE_MAX_DIMS);
                int64_t v = 0;
                size_t digits = 0;
                while (h.at < h.n && h.p[h.at] >= '0' && h.p[h.at] <= '9' && digits < 16) {
                    v = v * 10 + (h.p[h.at++] - '0');
                    digits++;
                }
                if (!digits || (h.at < h.n && h.p[h.at] >= '0' && h.p[h.at] <= '9'))
                    return header_error(what, "an extent is not a number below 10^16");
                shape[(*ndim)++] = v;
                if (!lit(&h, ",")) {
                    if (!lit(&h, ")")) return header_error(what, "the shape tuple is malformed");
                    break;
                }
            }
            have_shape = true;
        } else {
            return header_error(what, "an unknown key");
        }
        if (!lit(&h, ",")) {
            if (!lit(&h, "}")) return header_error(what, "entries are not separated by ','");
            break;
        }
    }
    skip_ws(&h);
    if (h.at != n - 1 || p[n - 1] != '\n') return header_error(what, "it does not end with spaces and a newline");
    if (!have_descr || !have_order || !have_shape) return header_error(what, "descr, fortran_order or shape is missing");
    return LITHE_OK;
}

lithe_status lithe_npy_load(const uint8_t *data, size_t len, lithe_tensor **out) {
    LITHE__CHECK_ARG(out, "lithe_npy_load", "out is NULL");
    *out = NULL;
    LITHE__CHECK_ARG(data || !len, "lithe_npy_load", "data is NULL");
    const char *what = "npy";
    if (len < 10 || memcmp(data, "\x93NUMPY", 6))
        return lithe__fail(LITHE_ERR_FORMAT, "%s: not a .npy file (no \\x93NUMPY magic)", what);
    uint8_t major = data[6];
    size_t hlen, start;
    if (major == 1) {
        hlen = (size_t)data[8] | (size_t)data[9] << 8;
        start = 10;
    } else if (major == 2 || major == 3) {
        if (len < 12) return lithe__fail(LITHE_ERR_FORMAT, "%s: truncated header length", what);
        hlen = (size_t)data[8] | (size_t)data[9] << 8 | (size_t)data[10] << 16 | (size_t)data[11] << 24;
        start = 12;
    } else {
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "%s: format version %u.%u is not supported", what, major, data[7]);
    }
    if (hlen == 0 || hlen > NPY_MAX_HEADER || hlen > len - start)
        return lithe__fail(LITHE_ERR_FORMAT, "%s: header of %zu bytes in a file of %zu", what, hlen, len);
    lithe_dtype dtype = LITHE_F32;
    int ndim = 0;
    int64_t shape[LITHE_MAX_DIMS] = {0};
    LITHE__TRY(parse_header(what, (const char *)data + start, hlen, &dtype, &ndim, shape));
    size_t es = lithe_dtype_size(dtype), count = 1;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] && count > SIZE_MAX / es / (size_t)shape[d])
            return lithe__fail(LITHE_ERR_FORMAT, "%s: the shape's element count overflows", what);
        count *= (size_t)shape[d];
    }
    size_t body = len - start - hlen;
    if (body != count * es)
        return lithe__fail(LITHE_ERR_FORMAT, "%s: %zu data bytes, the header's shape and dtype need %zu", what, body,
                           count * es);
    return lithe_tensor_from_data(dtype, ndim, shape, data + start + hlen, out);
}

lithe_status lithe_npy_save(const lithe_tensor *t, uint8_t **out, size_t *len) {
    LITHE__CHECK_ARG(out && len, "lithe_npy_save", "out or len is NULL");
    *out = NULL;
    *len = 0;
    LITHE__CHECK_ARG(t, "lithe_npy_save", "tensor is NULL");
    const char *descr = NULL;
    for (size_t k = 0; k < sizeof descrs / sizeof descrs[0]; k++)
        if (descrs[k].dtype == t->dtype) descr = descrs[k].descr;
    if (!descr)
        return lithe__fail(LITHE_ERR_DTYPE, "lithe_npy_save: %s has no .npy dtype (cast it first)",
                           lithe_dtype_name(t->dtype));
    /* numpy's header: the dict repr, then spaces and '\n' so that magic + version + length +
     * header is a multiple of 64 */
    char dict[512];
    int k = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    for (int d = 0; d < t->ndim; d++)
        k += snprintf(dict + k, sizeof dict - (size_t)k, d ? ", %lld" : "%lld", (long long)t->shape[d]);
    k += snprintf(dict + k, sizeof dict - (size_t)k, "%s), }", t->ndim == 1 ? "," : "");
    size_t used = 10 + (size_t)k + 1, total = (used + 63) / 64 * 64;
    size_t hlen = total - 10, nbytes = (size_t)t->numel * lithe_dtype_size(t->dtype);
    uint8_t *b = lithe__malloc(total + nbytes);
    if (!b) return lithe__oom("lithe_npy_save", total + nbytes);
    memcpy(b, "\x93NUMPY\x01\x00", 8);
    b[8] = (uint8_t)hlen;
    b[9] = (uint8_t)(hlen >> 8);
    memcpy(b + 10, dict, (size_t)k);
    memset(b + 10 + k, ' ', hlen - (size_t)k - 1);
    b[total - 1] = '\n';
    lithe_status s = lithe_tensor_read(t, b + total, nbytes);
    if (s != LITHE_OK) {
        lithe__free(b);
        return s;
    }
    *out = b;
    *len = total + nbytes;
    return LITHE_OK;
}

/* ---- files ---- */


lithe_status lithe_npy_read_file(const char *path, lithe_tensor **out) {
    LITHE__CHECK_ARG(out, "lithe_npy_read_file", "out is NULL");
    *out = NULL;
    LITHE__CHECK_ARG(path, "lithe_npy_read_file", "path is NULL");
    uint8_t *b = NULL;
    size_t n = 0;
    LITHE__TRY(lithe__read_file(path, &b, &n));
    lithe_status s = lithe_npy_load(b, n, out);
    lithe__free(b);
    if (s != LITHE_OK) {
        char why[512];
        snprintf(why, sizeof why, "%s", lithe_last_error());
        return lithe__fail(s, "%s: %s", path, why);
    }
    return LITHE_OK;
}

lithe_status lithe_npy_write_file(const lithe_tensor *t, const char *path) {
    LITHE__CHECK_ARG(path, "lithe_npy_write_file", "path is NULL");
    uint8_t *b = NULL;
    size_t n = 0;
    LITHE__TRY(lithe_npy_save(t, &b, &n));
    lithe_status s = lithe__write_file_atomic(path, b, n);
    lithe__free(b);
    return s;
}
