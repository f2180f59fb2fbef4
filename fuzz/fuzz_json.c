/* libFuzzer target: the JSON parser on its own (core/io/json.c, under .lithe headers and TF.js's
 * model.json): any bytes parse to a document or fail with a status; a document's every value is
 * walked (objects' keys looked up again by js_get). */
#include "io/json.h"

#include <stdlib.h>
#include <string.h>

static size_t walk(const js_val *v, int depth) {
    size_t n = 1;
    if (depth > 10000) abort(); /* the parser bounds nesting */
    if (v->type == JS_ARR)
        for (size_t i = 0; i < v->len; i++) n += walk(&v->items[i], depth + 1);
    if (v->type == JS_OBJ)
        for (size_t i = 0; i < v->len; i++) {
            if (v->items[2 * i].type != JS_STR) abort();
            (void)js_get(v, v->items[2 * i].str); /* a key with a NUL inside may find no member */
            n += walk(&v->items[2 * i + 1], depth + 1);
        }
    if (v->type == JS_STR && !v->str) abort();
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    js_doc doc;
    if (js_parse((const char *)data, size, "fuzz", &doc) == LITHE_OK) {
        (void)walk(&doc.root, 0);
        js_doc_free(&doc);
    }
    return 0;
}
