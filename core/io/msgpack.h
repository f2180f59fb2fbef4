/* A msgpack reader and writer (own code; the format of msgpack.org's spec). The writer picks the
 * smallest encoding for every value, as msgpack-python (srsly) does, so Thinc's bytes can be
 * reproduced byte for byte. The reader never trusts its input: every length is checked against
 * the bytes left, nesting is bounded, and it allocates only from an arena sized by what it has
 * verified. Strings and bins point into the input (zero copy). */
#ifndef LITHE_IO_MSGPACK_H
#define LITHE_IO_MSGPACK_H

#include "../internal.h"

typedef enum { MP_NIL, MP_BOOL, MP_INT, MP_FLOAT, MP_STR, MP_BIN, MP_ARRAY, MP_MAP, MP_EXT } mp_type;

typedef struct mp_obj {
    mp_type type;
    bool is_unsigned; /* MP_INT above INT64_MAX: the value is in u */
    union {
        bool b;
        int64_t i;
        uint64_t u;
        double f;
    } v;
    const uint8_t *data; /* STR / BIN / EXT bytes */
    uint32_t len;        /* STR / BIN / EXT bytes; ARRAY items; MAP pairs */
    struct mp_obj *items; /* ARRAY: len items; MAP: 2 * len (key, value, key, value, ...) */
} mp_obj;

typedef struct mp_doc {
    mp_obj *arena;
    size_t used, cap;
    mp_obj root;
} mp_doc;

/* Parses exactly `len` bytes into doc (trailing bytes are an error). `what` names the input in
 * messages. Statuses: LITHE_ERR_FORMAT (malformed, truncated, too deep), LITHE_ERR_OOM. */
lithe_status mp_parse(const uint8_t *data, size_t len, const char *what, mp_doc *doc);
void mp_doc_free(mp_doc *doc);

/* The value of `key` (a STR key) in a MAP, or NULL. */
const mp_obj *mp_get(const mp_obj *map, const char *key);
/* The value of a BIN key (srsly's numpy dicts use bin keys), or NULL. */
const mp_obj *mp_get_bin(const mp_obj *map, const char *key);
bool mp_str_eq(const mp_obj *o, const char *s);

/* ---- writer ---- */
typedef struct mp_buf {
    uint8_t *p;
    size_t n, cap;
    bool oom;
} mp_buf;

void mp_nil(mp_buf *b);
void mp_bool(mp_buf *b, bool v);
void mp_int(mp_buf *b, int64_t v);
void mp_double(mp_buf *b, double v);
void mp_str(mp_buf *b, const char *s);
void mp_str_n(mp_buf *b, const void *s, size_t n);
void mp_bin(mp_buf *b, const void *p, size_t n);
void mp_array(mp_buf *b, size_t n);
void mp_map(mp_buf *b, size_t n);
/* Raw bytes (an already-encoded value). */
void mp_raw(mp_buf *b, const void *p, size_t n);

#endif
