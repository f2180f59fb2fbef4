/* The ONNX writer (lithe_model_save_onnx): onnx_write.c writes a graph node back as its own graph
 * with its current initializers, and assembles the ModelProto; onnx_lower.c lowers a native layer
 * tree to standard operators. The protobuf writer: pb_write.h. */
#ifndef LITHE_IO_ONNX_WRITE_H
#define LITHE_IO_ONNX_WRITE_H

#include "onnx.h"
#include "pb_write.h"

#define LITHE__OX_VN 96 /* a value name's room */
#define LITHE__ONNX_EXPORT_OPSET 17 /* a native tree's opset: LayerNormalization is standard there */

/* The graph a native tree lowers to: its NodeProtos, TensorProtos (initializers) and
 * ValueInfoProtos as GraphProto fields, ready to be wrapped. */
typedef struct lithe__ox {
    wb nodes, inits, inputs, outputs;
    size_t counter;       /* fresh value names "v<n>" */
    lithe_model **seen;   /* nodes whose params were written (tied weights: written once) */
    size_t n_seen, cap_seen;
    lithe_model **walk;   /* the tree in walk order: a node's index names its initializers */
    size_t n_walk;
    bool int_input;       /* the tree's input is integer ids (Embed) */
    wb in_type;           /* the TypeProto of an inlined graph's input when it reads "X" */
    wb out_type;          /* the TypeProto of the last inlined graph's output, named out_name */
    char out_name[LITHE__OX_VN];
    int in_rank;          /* 1 or 2 */
} lithe__ox;

/* A field walker over a model's own bytes (parsed at load; still bounds-checked). */
typedef struct rd {
    const uint8_t *p, *end;
} rd;
/* The next field: its number, wire type, where it starts (key included) and, for a
 * length-delimited one, its payload (d, n). LITHE_ERR_FORMAT when malformed. */
lithe_status lithe__ox_field(rd *r, uint32_t *field, uint32_t *wt, const uint8_t **start, const uint8_t **d, size_t *n);
/* The TensorProto d[0..n) as GraphProto.initializer (field 5) into out: when it names a param of
 * m, with the param's current values (raw_data, in the tensor's own float type); its name prefixed
 * with prefix (NULL: as it is; a tensor that is not a param and keeps its name is copied as it is);
 * written (NULL: not kept): marks the param's index. */
lithe_status lithe__ox_tensor(lithe_model *m, const uint8_t *d, size_t n, const char *prefix, bool *written, wb *out);
/* LITHE_ERR_UNSUPPORTED naming a param of m whose written[] (set by lithe__ox_tensor) is false. */
lithe_status lithe__ox_all_written(const lithe_model *m, const bool *written);
/* An imported graph node inside a native tree, inlined (onnx_inline.c): its nodes and
 * initializers under the prefix "<node name>_<walk index>/", its one input read from x, its one
 * output's new name into y (LITHE__OX_VN bytes); first: its first use in the tree (a later use reads
 * the same initializers, its values under a prefix of their own). */
lithe_status lithe__onnx_inline(lithe__ox *o, lithe_model *m, size_t index, bool first, const char *x, char *y);

/* Lowers the tree m into o: the input "X", the output "Y". LITHE_ERR_UNSUPPORTED names the first
 * node without a standard ONNX equivalent; LITHE_ERR_STATE a node whose params are unset. */
lithe_status lithe__onnx_lower(lithe__ox *o, lithe_model *m);
void lithe__ox_free(lithe__ox *o);

#endif
