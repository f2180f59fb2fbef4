/* gzip / deflate decompression (gunzip.h). Deflate's Huffman codes are canonical: a code is given
 * by its lengths alone. Each table keeps the count of codes per length and the symbols in code
 * order, decoded a bit at a time (RFC 1951 3.2.2), with a 10-bit lookup in front for the short,
 * frequent codes. Every length, distance and count is checked against the input and the output
 * before it is used; a bad stream is an error with a message, never a read or write out of bounds. */
#include "gunzip.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_BITS 15
#define FAST_BITS 10
#define MAX_LITLEN 288
#define MAX_DIST 32

typedef struct huff {
    uint16_t count[MAX_BITS + 1]; /* codes of each length */
    uint16_t symbol[MAX_LITLEN];  /* symbols in canonical code order */
    uint16_t fast[1u << FAST_BITS]; /* next FAST_BITS input bits -> length << 9 | symbol; 0: longer */
} huff;

typedef struct inflater {
    const uint8_t *in;
    size_t n, pos;    /* input bytes, next byte to load */
    uint64_t bits;    /* loaded bits, the next one lowest */
    int nbits;
    size_t overrun;   /* bytes of zeros loaded past the end: a truncated stream if any are used */
    uint8_t *out;
    size_t cap, len;
    char *err;
    size_t errcap;
} inflater;

static int fail(inflater *s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->err, s->errcap, fmt, ap);
    va_end(ap);
    return -1;
}

static void refill(inflater *s) {
    while (s->nbits <= 56) {
        uint64_t byte = 0;
        if (s->pos < s->n) byte = s->in[s->pos++];
        else s->overrun++;
        s->bits |= byte << s->nbits;
        s->nbits += 8;
    }
}

/* The bits loaded past the end of the input that have been consumed. */
static bool past_end(const inflater *s) { return (size_t)s->nbits < 8 * s->overrun; }

static uint32_t take(inflater *s, int k) { /* k <= 32 */
    if (s->nbits < k) refill(s);
    uint32_t v = (uint32_t)(s->bits & ((1ull << k) - 1));
    s->bits >>= k;
    s->nbits -= k;
    return v;
}

/* Builds h from code lengths; returns -1 for an over-subscribed set (more codes than bit
 * patterns). An incomplete set is allowed (RFC 1951 permits one distance code); a pattern with no
 * code is caught when decoded. */
static int build(huff *h, const uint8_t *lengths, int n) {
    uint16_t offs[MAX_BITS + 2];
    memset(h->count, 0, sizeof h->count);
    memset(h->fast, 0, sizeof h->fast);
    for (int i = 0; i < n; i++) h->count[lengths[i]]++;
    h->count[0] = 0;
    int left = 1;
    for (int len = 1; len <= MAX_BITS; len++) {
        left = 2 * left - h->count[len];
        if (left < 0) return -1;
    }
    offs[1] = 0;
    for (int len = 1; len <= MAX_BITS; len++) offs[len + 1] = (uint16_t)(offs[len] + h->count[len]);
    for (int i = 0; i < n; i++)
        if (lengths[i]) h->symbol[offs[lengths[i]]++] = (uint16_t)i;
    /* the lookup: the canonical code of each short symbol, bit-reversed (deflate sends a code's
     * first bit first, into the low end of `bits`), at every index whose low bits it matches */
    int code = 0, index = 0;
    for (int len = 1; len <= FAST_BITS; len++) {
        for (int k = 0; k < h->count[len]; k++, code++, index++) {
            unsigned rev = 0;
            for (int b = 0; b < len; b++) rev |= (unsigned)((code >> b) & 1) << (len - 1 - b);
            for (unsigned f = rev; f < (1u << FAST_BITS); f += 1u << len)
                h->fast[f] = (uint16_t)(len << 9 | h->symbol[index]);
        }
        code <<= 1;
    }
    return 0;
}

static int decode(inflater *s, const huff *h) {
    if (s->nbits < MAX_BITS) refill(s);
    uint16_t e = h->fast[s->bits & ((1u << FAST_BITS) - 1)];
    if (e) {
        s->bits >>= e >> 9;
        s->nbits -= e >> 9;
        return e & 511;
    }
    int code = 0, first = 0, index = 0;
    for (int len = 1; len <= MAX_BITS; len++) {
        code |= (int)((s->bits >> (len - 1)) & 1);
        int count = h->count[len];
        if (code - first < count) {
            s->bits >>= len;
            s->nbits -= len;
            return h->symbol[index + code - first];
        }
        index += count;
        first = (first + count) << 1;
        code <<= 1;
    }
    return -1; /* a bit pattern no code has */
}

static const uint16_t len_base[29] = {3,  4,  5,  6,  7,  8,  9,  10, 11,  13,  15,  17,  19,  23, 27,
                                      31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
static const uint8_t len_extra[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
static const uint16_t dist_base[30] = {1,   2,   3,   4,   5,   7,    9,    13,   17,   25,   33,   49,   65,    97,    129,
                                       193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577};
static const uint8_t dist_extra[30] = {0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};

/* One Huffman-coded block's symbols, up to its end-of-block code. */
static int codes(inflater *s, const huff *lit, const huff *dist) {
    for (;;) {
        int sym = decode(s, lit);
        if (sym < 0) return fail(s, "a literal/length code that the block's table does not have");
        if (sym < 256) {
            if (s->len == s->cap) return fail(s, "more data than the gzip trailer states (%zu bytes)", s->cap);
            s->out[s->len++] = (uint8_t)sym;
        } else if (sym == 256) {
            return past_end(s) ? fail(s, "truncated deflate data") : 0;
        } else {
            sym -= 257;
            if (sym >= 29) return fail(s, "length code %d, which deflate does not define", sym + 257);
            size_t len = len_base[sym] + take(s, len_extra[sym]);
            int d = decode(s, dist);
            if (d < 0 || d >= 30) return fail(s, "a bad distance code");
            size_t back = dist_base[d] + take(s, dist_extra[d]);
            if (past_end(s)) return fail(s, "truncated deflate data");
            if (back > s->len) return fail(s, "a distance of %zu bytes back, at byte %zu", back, s->len);
            if (len > s->cap - s->len) return fail(s, "more data than the gzip trailer states (%zu bytes)", s->cap);
            uint8_t *o = s->out + s->len;
            const uint8_t *from = o - back;
            for (size_t i = 0; i < len; i++) o[i] = from[i]; /* may overlap: byte by byte */
            s->len += len;
        }
        if (past_end(s)) return fail(s, "truncated deflate data");
    }
}

static int stored(inflater *s) {
    /* drop to a byte boundary; the loaded whole bytes are read back from `bits` */
    take(s, s->nbits % 8);
    uint32_t len = take(s, 16), nlen = take(s, 16);
    if (past_end(s)) return fail(s, "truncated deflate data");
    if ((len ^ 0xffffu) != nlen) return fail(s, "a stored block whose length check fails");
    if (len > s->cap - s->len) return fail(s, "more data than the gzip trailer states (%zu bytes)", s->cap);
    while (len && s->nbits >= 8) {
        s->out[s->len++] = (uint8_t)take(s, 8);
        len--;
    }
    if (past_end(s)) return fail(s, "truncated stored block");
    /* the rest straight from the input (nbits is 0 here unless len was 0) */
    if (len) {
        if (s->overrun || len > s->n - s->pos) return fail(s, "truncated stored block");
        memcpy(s->out + s->len, s->in + s->pos, len);
        s->len += len;
        s->pos += len;
    }
    return 0;
}

static int fixed(inflater *s, huff *lit, huff *dist) {
    uint8_t l[MAX_LITLEN];
    for (int i = 0; i < MAX_LITLEN; i++) l[i] = i < 144 ? 8 : i < 256 ? 9 : i < 280 ? 7 : 8;
    build(lit, l, MAX_LITLEN);
    memset(l, 5, MAX_DIST);
    build(dist, l, MAX_DIST);
    return codes(s, lit, dist);
}

static int dynamic(inflater *s, huff *lit, huff *dist) {
    static const uint8_t order[19] = {16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15};
    uint8_t lengths[MAX_LITLEN + MAX_DIST];
    int nlen = (int)take(s, 5) + 257, ndist = (int)take(s, 5) + 1, ncode = (int)take(s, 4) + 4;
    if (nlen > 286 || ndist > 30) return fail(s, "a block with %d literal/length and %d distance codes", nlen, ndist);
    memset(lengths, 0, 19);
    for (int i = 0; i < ncode; i++) lengths[order[i]] = (uint8_t)take(s, 3);
    huff *lencode = lit; /* the code-length code, in lit's storage until the lengths are read */
    if (build(lencode, lengths, 19) != 0) return fail(s, "an over-subscribed code-length code");
    int i = 0;
    while (i < nlen + ndist) {
        int sym = decode(s, lencode);
        if (sym < 0) return fail(s, "a code-length code that the block's table does not have");
        if (sym < 16) {
            lengths[i++] = (uint8_t)sym;
            continue;
        }
        uint8_t v = 0;
        int rep;
        if (sym == 16) {
            if (i == 0) return fail(s, "a repeat of the previous code length at the start");
            v = lengths[i - 1];
            rep = 3 + (int)take(s, 2);
        } else if (sym == 17) rep = 3 + (int)take(s, 3);
        else rep = 11 + (int)take(s, 7);
        if (i + rep > nlen + ndist) return fail(s, "code lengths that run past the block's codes");
        while (rep--) lengths[i++] = v;
    }
    if (past_end(s)) return fail(s, "truncated deflate data");
    if (lengths[256] == 0) return fail(s, "a block without an end-of-block code");
    if (build(lit, lengths, nlen) != 0) return fail(s, "an over-subscribed literal/length code");
    if (build(dist, lengths + nlen, ndist) != 0) return fail(s, "an over-subscribed distance code");
    return codes(s, lit, dist);
}

static uint32_t crc32_of(const uint8_t *p, size_t n) {
    static uint32_t table[256];
    static bool ready;
    if (!ready) {
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t c = i;
            for (int k = 0; k < 8; k++) c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
            table[i] = c;
        }
        ready = true;
    }
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) c = table[(c ^ p[i]) & 0xff] ^ (c >> 8);
    return c ^ 0xffffffffu;
}

static uint32_t le32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }

int lithe_tool_is_gzip(const uint8_t *in, size_t n) { return n >= 2 && in[0] == 0x1f && in[1] == 0x8b; }

int lithe_tool_gunzip(const uint8_t *in, size_t n, size_t max_out, uint8_t **out, size_t *out_len, char *err,
                      size_t errcap) {
    inflater s = {.in = in, .n = n, .err = err, .errcap = errcap};
    *out = NULL;
    *out_len = 0;
    /* the header: magic, method 8 (deflate), flags, mtime, xfl, os; then the optional fields */
    if (n < 18 || !lithe_tool_is_gzip(in, n)) return fail(&s, "not a gzip file (too short or no 1f 8b magic)");
    if (in[2] != 8) return fail(&s, "gzip compression method %d (only 8, deflate, exists)", in[2]);
    uint8_t flg = in[3];
    if (flg & 0xe0) return fail(&s, "gzip header flags 0x%02x have reserved bits set", flg);
    size_t p = 10;
    if (flg & 4) { /* FEXTRA */
        if (n - p < 2 || (size_t)(in[p] | in[p + 1] << 8) > n - p - 2) return fail(&s, "truncated gzip header");
        p += 2 + (size_t)(in[p] | in[p + 1] << 8);
    }
    for (int f = 8; f <= 16; f += 8) /* FNAME, FCOMMENT: NUL-terminated */
        if (flg & f) {
            const uint8_t *z = memchr(in + p, 0, n - p);
            if (!z) return fail(&s, "truncated gzip header");
            p = (size_t)(z - in) + 1;
        }
    if (flg & 2) p += 2; /* FHCRC */
    if (p + 8 > n) return fail(&s, "truncated gzip file");
    /* the trailer states the size; deflate cannot expand more than 1032:1 */
    uint32_t want_crc = le32(in + n - 8), isize = le32(in + n - 4);
    if (isize > max_out) return fail(&s, "the gzip trailer states %u bytes, over the limit of %zu", isize, max_out);
    if ((uint64_t)isize > 1032ull * (n - p) + 1024) return fail(&s, "the gzip trailer states %u bytes from %zu", isize, n);
    s.cap = isize;
    s.out = malloc(isize ? isize : 1);
    if (!s.out) return fail(&s, "out of memory for %u bytes", isize);
    s.in = in + p;
    s.n = n - 8 - p; /* the deflate data ends before the trailer */
    huff *tables = malloc(2 * sizeof *tables);
    int rc = tables ? 0 : fail(&s, "out of memory");
    bool last = false;
    while (rc == 0 && !last) {
        last = take(&s, 1);
        uint32_t type = take(&s, 2);
        if (past_end(&s)) rc = fail(&s, "truncated deflate data");
        else if (type == 0) rc = stored(&s);
        else if (type == 1) rc = fixed(&s, &tables[0], &tables[1]);
        else if (type == 2) rc = dynamic(&s, &tables[0], &tables[1]);
        else rc = fail(&s, "a deflate block of type 3, which does not exist");
    }
    free(tables);
    if (rc == 0 && s.len != isize) rc = fail(&s, "%zu bytes of data where the gzip trailer states %u", s.len, isize);
    if (rc == 0 && crc32_of(s.out, s.len) != want_crc) rc = fail(&s, "CRC-32 mismatch: the data is corrupt");
    if (rc == 0) {
        /* what is left of the loaded bits must fit in the last byte; more input is a second member */
        size_t unread = s.n - s.pos + (size_t)s.nbits / 8 - s.overrun;
        if (unread > 0) rc = fail(&s, "%zu bytes after the gzip member (one member only)", unread);
    }
    if (rc != 0) {
        free(s.out);
        return -1;
    }
    *out = s.out;
    *out_len = s.len;
    return 0;
}
