/* The ONNX reader (core/io/onnx.c): a protobuf wire-format decoder for the parts of onnx.proto
 * that a graph needs (ModelProto, GraphProto, NodeProto, TensorProto, AttributeProto,
 * ValueInfoProto), written for hostile input: every varint, length, offset, count and element
 * product is checked against the bytes that are there. Tensors are decoded into two canonical
 * forms, float32 (FLOAT, DOUBLE, FLOAT16, BFLOAT16) and int64 (every integer type and BOOL), so
 * the graph layer handles two kinds only. */
#ifndef LITHE_IO_ONNX_H
#define LITHE_IO_ONNX_H

#include "../internal.h"

/* onnx.proto TensorProto.DataType */
enum {
    LITHE__ONNX_UNDEFINED = 0, LITHE__ONNX_FLOAT = 1, LITHE__ONNX_UINT8 = 2, LITHE__ONNX_INT8 = 3,
    LITHE__ONNX_UINT16 = 4, LITHE__ONNX_INT16 = 5, LITHE__ONNX_INT32 = 6, LITHE__ONNX_INT64 = 7,
    LITHE__ONNX_STRING = 8, LITHE__ONNX_BOOL = 9, LITHE__ONNX_FLOAT16 = 10, LITHE__ONNX_DOUBLE = 11,
    LITHE__ONNX_UINT32 = 12, LITHE__ONNX_UINT64 = 13, LITHE__ONNX_BFLOAT16 = 16
};

/* onnx.proto AttributeProto.AttributeType */
enum {
    LITHE__ONNX_ATTR_FLOAT = 1, LITHE__ONNX_ATTR_INT = 2, LITHE__ONNX_ATTR_STRING = 3, LITHE__ONNX_ATTR_TENSOR = 4,
    LITHE__ONNX_ATTR_GRAPH = 5, LITHE__ONNX_ATTR_FLOATS = 6, LITHE__ONNX_ATTR_INTS = 7, LITHE__ONNX_ATTR_STRINGS = 8
};

/* The most nodes, initializers, inputs/outputs, attributes per node and inputs per node the
 * reader accepts: far above any real graph, low enough that a counter cannot overflow. */
#define LITHE__ONNX_MAX_ITEMS (1u << 22)

typedef struct lithe__onnx_tensor {
    char *name;
    int32_t data_type; /* as stored; the decoded data is float32 or int64 (is_float) */
    bool is_float;
    int ndim;
    int64_t dims[LITHE_MAX_DIMS];
    int64_t numel;
    void *data; /* numel float32 or int64 values (lithe__malloc), NULL when numel is 0 */
    /* external data (data_location EXTERNAL): where the bytes are, resolved by the loader */
    char *ext_location;
    int64_t ext_offset, ext_length; /* -1: not given */
} lithe__onnx_tensor;

typedef struct lithe__onnx_attr {
    char *name;
    int32_t type;
    float f;
    int64_t i;
    char *s; /* NUL-terminated copy of the bytes */
    size_t s_len;
    lithe__onnx_tensor *t;
    float *floats;
    size_t n_floats;
    int64_t *ints;
    size_t n_ints;
    char **strings; /* STRINGS (an RNN's activations): NUL-terminated copies */
    size_t n_strings;
    uint8_t *graph; /* GRAPH (If's branches, Loop's and Scan's body): the GraphProto's bytes, parsed when
                     * the graph layer expands the node (lithe__onnx_parse_graph) */
    size_t graph_len;
} lithe__onnx_attr;

typedef struct lithe__onnx_node {
    char *name, *op_type, *domain;
    char **inputs; /* "" for an optional input left out */
    size_t n_inputs;
    char **outputs;
    size_t n_outputs;
    lithe__onnx_attr *attrs;
    size_t n_attrs;
} lithe__onnx_node;

typedef struct lithe__onnx_value_info {
    char *name;
    int32_t elem_type; /* 0 when the type is not given */
    int ndim;          /* -1 when the shape is not given */
    int64_t dims[LITHE_MAX_DIMS]; /* -1 for a symbolic or unknown extent */
} lithe__onnx_value_info;

typedef struct lithe__onnx_model {
    int64_t ir_version;
    int64_t opset; /* of the default domain ("" or "ai.onnx"); 0 when absent */
    char *producer;
    lithe__onnx_node *nodes;
    size_t n_nodes;
    lithe__onnx_tensor *inits;
    size_t n_inits;
    lithe__onnx_value_info *inputs, *outputs;
    size_t n_inputs, n_outputs;
} lithe__onnx_model;

/* Decodes a serialized ModelProto. On failure: LITHE_ERR_FORMAT (malformed or truncated, naming
 * the message and field), LITHE_ERR_UNSUPPORTED (a tensor type lithe does not hold), LITHE_ERR_OOM;
 * *out is then zeroed and owns nothing. Free with lithe__onnx_model_free. */
lithe_status lithe__onnx_parse(const uint8_t *data, size_t len, lithe__onnx_model *out);
void lithe__onnx_model_free(lithe__onnx_model *m);
/* Decodes a serialized GraphProto (a control-flow node's subgraph) into out's nodes, initializers,
 * inputs and outputs (ir_version, opset 0). Errors as lithe__onnx_parse's. */
lithe_status lithe__onnx_parse_graph(const uint8_t *data, size_t len, lithe__onnx_model *out);
/* Frees what a node owns (not the node). */
void lithe__onnx_node_free(lithe__onnx_node *n);
/* Frees what a tensor owns (not the tensor). */
void lithe__onnx_tensor_free(lithe__onnx_tensor *t);
/* One TensorProto (dims, type, name, external-data entries; data decoded when inline), and the bytes
 * of one element of an ONNX data type (0 when unknown); onnx_external.c uses both. */
lithe_status lithe__onnx_parse_tensor(const uint8_t *d, size_t n, lithe__onnx_tensor *t);
size_t lithe__onnx_type_bytes(int32_t t);
/* The model bytes with every initializer whose data lives in an external file (data_location
 * EXTERNAL) rewritten to hold it inline (raw_data), read from `dir` (the model file's folder):
 * location relative to it, offset and length in bytes (defaults: 0 and the rest of the file).
 * Refused: an absolute location or one with a ".." part (LITHE_ERR_FORMAT), an offset or length
 * outside the file or not the tensor's byte size (LITHE_ERR_FORMAT), a file that cannot be read
 * (LITHE_ERR_IO). *out (lithe__free) is a copy when nothing is external. */
lithe_status lithe__onnx_inline_external(const uint8_t *data, size_t len, const char *dir, uint8_t **out,
                                         size_t *out_len);
/* An attribute of a node by name, or NULL. */
const lithe__onnx_attr *lithe__onnx_attr_get(const lithe__onnx_node *n, const char *name);
/* An IEEE 754 half (binary16) as float32, exactly (subnormals, infinities and NaNs included): the
 * ONNX reader's FLOAT16 tensors and the TF.js reader's float16-quantized weights. */
float lithe__half_to_f32(uint16_t h);

#endif
