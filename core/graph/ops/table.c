/* ONNX operators of the graph layer (core/graph/ops/): the op table. */
#include "ops.h"

/* ---- the table ---- */

static const lithe__graph_op ops[] = {
#define OP(name, fwd, bwd) {name, fwd, bwd},
#include "ops.def"
#undef OP
};
#define N_OPS (sizeof ops / sizeof ops[0])

const char *const lithe__graph_op_names[] = {
#define OP(name, fwd, bwd) name,
#include "ops.def"
#undef OP
    NULL,
};

const lithe__graph_op *lithe__graph_op_find(const char *op_type) {
    for (size_t i = 0; i < N_OPS; i++)
        if (!strcmp(ops[i].op_type, op_type)) return &ops[i];
    return NULL;
}
