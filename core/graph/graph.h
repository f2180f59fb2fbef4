/* The graph layer's internals (core/graph/): a parsed ONNX graph bound to value slots, and the
 * per-operator forward / backward table (ops.c) that graph.c's executor runs. */
#ifndef LITHE_GRAPH_H
#define LITHE_GRAPH_H

#include "../io/onnx.h"

/* How a slot gets its value. */
enum { SLOT_COMPUTED = 0, SLOT_INPUT, SLOT_PARAM, SLOT_CONST };

typedef struct lithe__graph lithe__graph;
typedef struct lithe__gexec lithe__gexec;

/* One supported operator. forward reads in[0..n_in) (NULL: an optional input left out) and sets
 * out[0..n_out); float values live on the model's backend, integer values (shapes, indices) are
 * host int64 tensors computed eagerly — the shape arithmetic is folded on the host, never sent to
 * a backend. backward (NULL: no float input takes a gradient through it, e.g. Shape) accumulates
 * into the gradients lithe__gexec_grad hands out. saved[0..1] keep what backward needs. */
typedef struct lithe__graph_op {
    const char *op_type;
    lithe_status (*forward)(lithe__gexec *x, size_t node, lithe_tensor **in, size_t n_in, lithe_tensor **out,
                            size_t n_out, lithe_tensor **saved);
    lithe_status (*backward)(lithe__gexec *x, size_t node, lithe_tensor **in, size_t n_in, lithe_tensor **out,
                             lithe_tensor **dout, lithe_tensor **saved);
} lithe__graph_op;

struct lithe__graph {
    lithe__onnx_model onnx;
    size_t n_slots;
    const char **slot_name;  /* into onnx */
    int *slot_kind;
    lithe_tensor **slot_const; /* SLOT_CONST: float32 (cpu) or int64 (cpu) */
    size_t *in_slots, *out_slots; /* graph inputs (not initializers) and outputs */
    size_t n_in, n_out;
    int64_t **node_in, **node_out; /* per node: slot of each input (-1: left out) / output */
    const lithe__graph_op **node_op;
};

struct lithe__gexec {
    lithe_backprop base;
    lithe__graph *g;
    lithe_model *m;
    lithe_backend *be;
    lithe_tensor **vals, **grads, **saved; /* n_slots, n_slots, 2 per node */
    bool *needs; /* a slot a gradient flows to (float, reaching a param or an input) */
    bool tuple_in;
};

/* The op named op_type, or NULL. */
const lithe__graph_op *lithe__graph_op_find(const char *op_type);
/* The op types ops.c has, for errors and lithe_onnx_ops. */
extern const char *const lithe__graph_op_names[];

/* The gradient accumulator of input k of `node`: a zeroed float32 tensor shaped as the value,
 * created on first use; NULL when no gradient flows to that input (an int, a constant, a frozen
 * param). */
lithe_status lithe__gexec_grad(lithe__gexec *x, size_t node, size_t k, lithe_tensor **out);
/* "Conv 'conv1' (node 3)" for errors. */
const char *lithe__gnode_str(const lithe__gexec *x, size_t node, char *buf, size_t cap);

#endif
