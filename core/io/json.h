/* A small JSON reader and writer (own code, RFC 8259) for the .lithe file's header. The reader
 * never trusts its input: lengths are bounded by the bytes given, nesting by 64 levels, numbers
 * must be finite; strings are decoded (with \u escapes, surrogate pairs) into an owned buffer. */
#ifndef LITHE_IO_JSON_H
#define LITHE_IO_JSON_H

#include "../internal.h"

typedef enum { JS_NULL, JS_BOOL, JS_NUM, JS_STR, JS_ARR, JS_OBJ } js_type;

typedef struct js_val {
    js_type type;
    bool b;
    double num;
    bool is_int; /* a number written without fraction or exponent that fits int64 */
    int64_t i;
    const char *str; /* JS_STR: NUL-terminated (may hold NULs inside: len counts them) */
    size_t len;      /* JS_STR: bytes; JS_ARR: items; JS_OBJ: members */
    struct js_val *items; /* JS_ARR: len values; JS_OBJ: 2 * len (key, value, ...) */
} js_val;

typedef struct js_doc {
    js_val *vals;
    size_t nvals, capvals;
    char *chars;
    size_t nchars, capchars;
    js_val root;
} js_doc;

lithe_status js_parse(const char *text, size_t len, const char *what, js_doc *doc);
/* The double nearest to a JSON number's text (correctly rounded, ties to even; HUGE_VAL beyond
 * DBL_MAX); the reader has checked the syntax. */
double js_number(const char *s, size_t len);
void js_doc_free(js_doc *doc);
const js_val *js_get(const js_val *obj, const char *key);

typedef struct js_buf {
    char *p;
    size_t n, cap;
    bool oom;
} js_buf;

void js_raw(js_buf *b, const char *s);
void js_str(js_buf *b, const char *s);
void js_int(js_buf *b, int64_t v);
/* A double that reads back to the same bits (17 significant digits); inf and NaN, which JSON
 * lacks, as the strings "inf", "-inf", "nan". */
void js_double(js_buf *b, double v);

#endif
