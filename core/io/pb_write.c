/* The protobuf writer (wire format as onnx.c reads it): the ONNX ModelProto bytes the TF.js
 * importer's lowering emits, and lithe_model_save_onnx's (core/io/onnx_write.c). In the core
 * module (not the npm package's importer module), so a native tree exports without the importers. */
#include "pb_write.h"

#include <string.h>

/* ---- a protobuf writer (the wire format onnx.c reads) ---- */

void wb_put(wb *b, const void *d, size_t n) {
    if (b->oom || !n) return;
    if (n > SIZE_MAX / 4 - b->n) { /* far above what a checked model reaches; no doubling below wraps */
        b->oom = true;
        return;
    }
    if (b->n + n > b->cap) {
        size_t nc = b->cap ? b->cap : 64;
        while (nc < b->n + n) nc *= 2;
        uint8_t *p = lithe__realloc(b->p, nc);
        if (!p) {
            b->oom = true;
            return;
        }
        b->p = p;
        b->cap = nc;
    }
    memcpy(b->p + b->n, d, n);
    b->n += n;
}
void wb_free(wb *b) {
    lithe__free(b->p);
    memset(b, 0, sizeof *b);
}
void wb_varint(wb *b, uint64_t v) {
    uint8_t t[10];
    size_t k = 0;
    do {
        t[k] = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (v) t[k] |= 0x80;
        k++;
    } while (v);
    wb_put(b, t, k);
}
static void wb_key(wb *b, unsigned field, unsigned wt) { wb_varint(b, (uint64_t)field << 3 | wt); }
void wb_int(wb *b, unsigned field, int64_t v) {
    wb_key(b, field, 0);
    wb_varint(b, (uint64_t)v);
}
void wb_bytes(wb *b, unsigned field, const void *d, size_t n) {
    wb_key(b, field, 2);
    wb_varint(b, n);
    wb_put(b, d, n);
}
void wb_str(wb *b, unsigned field, const char *s) { wb_bytes(b, field, s, strlen(s)); }
/* Appends sub as a length-delimited field and frees it. */
void wb_sub(wb *b, unsigned field, wb *sub) {
    if (sub->oom) b->oom = true;
    wb_bytes(b, field, sub->p, sub->n);
    wb_free(sub);
}

/* AttributeProto: name 1, f 2, i 3, s 4, t 5, floats 7, ints 8, type 20. */
void at_int(wb *attrs, const char *name, int64_t v) {
    wb a = {0};
    wb_str(&a, 1, name);
    wb_int(&a, 3, v);
    wb_int(&a, 20, 2);
    wb_sub(attrs, 5, &a);
}
void at_ints(wb *attrs, const char *name, const int64_t *v, size_t n) {
    wb a = {0}, packed = {0};
    wb_str(&a, 1, name);
    for (size_t i = 0; i < n; i++) wb_varint(&packed, (uint64_t)v[i]);
    wb_sub(&a, 8, &packed);
    wb_int(&a, 20, 7);
    wb_sub(attrs, 5, &a);
}
static void le32(uint8_t *o, uint32_t u) {
    for (int i = 0; i < 4; i++) o[i] = (uint8_t)(u >> (8 * i));
}
void at_float(wb *attrs, const char *name, float f) {
    wb a = {0};
    uint32_t u;
    uint8_t o[4];
    memcpy(&u, &f, 4);
    le32(o, u);
    wb_str(&a, 1, name);
    wb_key(&a, 2, 5);
    wb_put(&a, o, 4);
    wb_int(&a, 20, 1);
    wb_sub(attrs, 5, &a);
}
void at_str(wb *attrs, const char *name, const char *s) {
    wb a = {0};
    wb_str(&a, 1, name);
    wb_str(&a, 4, s);
    wb_int(&a, 20, 3);
    wb_sub(attrs, 5, &a);
}

/* TensorProto: dims 1, data_type 2, name 8, raw_data 9. float32 (1) or int64 (7). */
void tensor_proto(wb *t, const char *name, int ndim, const int64_t *dims, const float *f, const int64_t *iv,
                  int64_t numel) {
    for (int d = 0; d < ndim; d++) wb_int(t, 1, dims[d]);
    wb_int(t, 2, f ? 1 : 7);
    if (name) wb_str(t, 8, name);
    size_t es = f ? 4 : 8;
    wb_key(t, 9, 2);
    wb_varint(t, (uint64_t)numel * es);
    for (int64_t k = 0; k < numel && !t->oom; k++) {
        uint8_t o[8];
        if (f) {
            uint32_t u;
            memcpy(&u, &f[k], 4);
            le32(o, u);
        } else {
            uint64_t u = (uint64_t)iv[k];
            for (int i = 0; i < 8; i++) o[i] = (uint8_t)(u >> (8 * i));
        }
        wb_put(t, o, es);
    }
}
