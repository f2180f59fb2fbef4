/* The protobuf writer (core/io/pb_write.c): a growing buffer that records an allocation failure
 * (oom) instead of stopping, so a writer checks once at the end; the fields, AttributeProtos and
 * TensorProtos the ONNX writers (the TF.js importer's lowering, lithe_model_save_onnx) emit. */
#ifndef LITHE_IO_PB_WRITE_H
#define LITHE_IO_PB_WRITE_H

#include "../internal.h"

#define wb_put lithe__pb_wb_put
#define wb_free lithe__pb_wb_free
#define wb_varint lithe__pb_wb_varint
#define wb_bytes lithe__pb_wb_bytes
#define wb_int lithe__pb_wb_int
#define wb_str lithe__pb_wb_str
#define wb_sub lithe__pb_wb_sub
#define at_int lithe__pb_at_int
#define at_ints lithe__pb_at_ints
#define at_float lithe__pb_at_float
#define at_str lithe__pb_at_str
#define tensor_proto lithe__pb_tensor_proto

typedef struct wb {
    uint8_t *p;
    size_t n, cap;
    bool oom;
} wb;

void wb_put(wb *b, const void *d, size_t n);
void wb_free(wb *b);
void wb_varint(wb *b, uint64_t v);
/* A length-delimited field: key, length, bytes. */
void wb_bytes(wb *b, unsigned field, const void *d, size_t n);
void wb_int(wb *b, unsigned field, int64_t v);
void wb_str(wb *b, unsigned field, const char *s);
/* Appends sub as a length-delimited field and frees it. */
void wb_sub(wb *b, unsigned field, wb *sub);
/* AttributeProtos appended to attrs as NodeProto.attribute (field 5) entries. */
void at_int(wb *attrs, const char *name, int64_t v);
void at_ints(wb *attrs, const char *name, const int64_t *v, size_t n);
void at_float(wb *attrs, const char *name, float f);
void at_str(wb *attrs, const char *name, const char *s);
/* TensorProto fields (dims, data_type, name, raw_data): float32 values f or int64 values iv. */
void tensor_proto(wb *t, const char *name, int ndim, const int64_t *dims, const float *f, const int64_t *iv,
                  int64_t numel);

#endif
