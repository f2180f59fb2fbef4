/* The ONNX writer (lithe_model_save_onnx): onnx_write.c writes a graph node back as its own graph
 * with its current initializers, and assembles the ModelProto; onnx_lower.c lowers a native layer
 * tree to standard operators. The protobuf writer: pb_write.h. */
#ifndef LITHE_IO_ONNX_WRITE_H
#define LITHE_IO_ONNX_WRITE_H

#include "onnx.h"
#include "pb_write.h"

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
    int in_rank;          /* 1 or 2 */
} lithe__ox;

/* Lowers the tree m into o: the input "X", the output "Y". LITHE_ERR_UNSUPPORTED names the first
 * node without a standard ONNX equivalent; LITHE_ERR_STATE a node whose params are unset. */
lithe_status lithe__onnx_lower(lithe__ox *o, lithe_model *m);
void lithe__ox_free(lithe__ox *o);

#endif
