/* ONNX operators of the graph layer (core/graph/ops/): the op table. */
#include "ops.h"

/* ---- the table ---- */

static const lithe__graph_op ops[] = {
    {"Identity", f_identity, b_identity},
    {"Dropout", f_identity, b_identity},
    {"Reshape", f_reshape, b_reshape},
    {"Flatten", f_reshape, b_reshape},
    {"Squeeze", f_reshape, b_reshape},
    {"Unsqueeze", f_reshape, b_reshape},
    {"Transpose", f_transpose, b_transpose},
    {"Gemm", f_gemm, b_gemm},
    {"MatMul", f_matmul, b_matmul},
    {"Add", f_binary, b_binary},
    {"Sub", f_binary, b_binary},
    {"Mul", f_binary, b_binary},
    {"Div", f_binary, b_binary},
    {"Pow", f_binary, b_binary},
    {"Less", f_binary, NULL},
    {"Greater", f_binary, NULL},
    {"Equal", f_binary, NULL},
    {"Not", f_not, NULL},
    {"Where", f_where, b_where},
    {"Relu", f_act, b_act},
    {"Sigmoid", f_act, b_act},
    {"Tanh", f_act, b_act},
    {"Gelu", f_act, b_act},
    {"Clip", f_act, b_act},
    {"Exp", f_unary, b_unary},
    {"Log", f_unary, b_unary},
    {"Sqrt", f_unary, b_unary},
    {"Neg", f_unary, b_unary},
    {"Erf", f_unary, b_unary},
    {"Abs", f_unary, b_unary},
    {"Reciprocal", f_unary, b_unary},
    {"Softmax", f_softmax, b_softmax},
    {"LogSoftmax", f_softmax, b_softmax},
    {"Concat", f_concat, b_concat},
    {"Split", f_split, b_split},
    {"Slice", f_slice, b_slice},
    {"Pad", f_pad, b_pad},
    {"Expand", f_expand, b_expand},
    {"ReduceMean", f_reduce, b_reduce},
    {"ReduceSum", f_reduce, b_reduce},
    {"LayerNormalization", f_layernorm, b_layernorm},
    {"BatchNormalization", f_batchnorm, b_batchnorm},
    {"Conv", f_conv, b_conv},
    {"ConvTranspose", f_convt, b_convt},
    {"LeakyRelu", f_leaky, b_leaky},
    {"MaxPool", f_pool, b_pool},
    {"AveragePool", f_pool, b_pool},
    {"GlobalAveragePool", f_pool, b_pool},
    {"GlobalMaxPool", f_pool, b_pool},
    {"Constant", f_constant, NULL},
    {"Shape", f_shape, NULL},
    {"Gather", f_gather, b_gather},
    {"Cast", f_cast, b_cast},
    {"ConstantOfShape", f_constant_of_shape, NULL},
};
#define N_OPS (sizeof ops / sizeof ops[0])

const char *const lithe__graph_op_names[] = {
    "Identity", "Dropout", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Gemm", "MatMul", "Add", "Sub",
    "Mul", "Div", "Pow", "Less", "Greater", "Equal", "Not", "Where", "Relu", "Sigmoid", "Tanh", "Gelu", "Clip", "Exp", "Log", "Sqrt", "Neg", "Erf", "Abs",
    "Reciprocal", "Softmax", "LogSoftmax", "Concat", "Split", "Slice", "Pad", "Expand", "ReduceMean", "ReduceSum",
    "LayerNormalization", "BatchNormalization", "Conv", "ConvTranspose", "LeakyRelu", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool",
    "Constant", "Shape", "Gather", "Cast", "ConstantOfShape", NULL,
};
_Static_assert(sizeof lithe__graph_op_names / sizeof lithe__graph_op_names[0] == N_OPS + 1,
               "list every op of the table in lithe__graph_op_names");

const lithe__graph_op *lithe__graph_op_find(const char *op_type) {
    for (size_t i = 0; i < N_OPS; i++)
        if (!strcmp(ops[i].op_type, op_type)) return &ops[i];
    return NULL;
}
