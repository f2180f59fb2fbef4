/* The registered layer names, versioned as Thinc registers them. */
#include "../internal.h"

#include <string.h>

static const char *const names[] = {
    "CauchySimilarity.v1", "ClippedLinear.v1", "Dish.v1", "Dropout.v1", "Embed.v1", "Gelu.v1", "HardSigmoid.v1", "HardSwish.v1",
    "HardSwishMobilenet.v1", "HardTanh.v1", "HashEmbed.v1", "LSTM.v1", "LayerNorm.v1", "Linear.v1", "Logistic.v1",
    "Maxout.v1", "Mish.v1", "MultiSoftmax.v1", "ParametricAttention.v1", "Relu.v1", "ReluK.v1", "Sigmoid.v1", "Softmax.v1", "Softmax.v2", "SparseLinear.v1", "SparseLinear.v2", "StaticVectors.v2",
    "Swish.v1", "add.v1", "bidirectional.v1", "chain.v1", "clone.v1", "concatenate.v1", "expand_window.v1", "list2array.v1",
    "list2padded.v1", "list2ragged.v1", "noop.v1", "onnx_graph.v1", "padded2list.v1", "ragged2list.v1", "reduce_first.v1",
    "reduce_last.v1", "reduce_max.v1", "reduce_mean.v1", "reduce_sum.v1", "remap_ids.v1", "remap_ids.v2", "residual.v1", "resizable.v1", "siamese.v1",
    "sigmoid_activation.v1", "softmax_activation.v1", "strings2arrays.v1", "tuplify.v1", "uniqued.v1", "with_array.v1", "with_array2d.v1", "with_cpu.v1",
    "with_flatten.v1", "with_flatten.v2", "with_getitem.v1", "with_list.v1", "with_padded.v1", "with_ragged.v1",
    "with_reshape.v1",
};

const char *const *lithe_layer_names(size_t *n) {
    if (n) *n = sizeof names / sizeof names[0];
    return names;
}

const lithe__layer_type *lithe__layer_type_by_name(const char *registered_name) {
    static const lithe__layer_type *const single[] = {&lithe__chain_type, &lithe__dropout_type, NULL};
    const lithe__layer_type *const *const families[] = {
        single, lithe__combine_types, lithe__resizable_types, lithe__embed_types, lithe__layernorm_types,
        lithe__softmax_types, lithe__maxout_types, lithe__dense_types, lithe__activation_types,
        lithe__transfer_types, lithe__with_types, lithe__reduce_types, lithe__window_types, lithe__getitem_types,
        lithe__sparse_types, lithe__remap_types, lithe__strings_types, lithe__static_vectors_types,
        lithe__uniqued_types, LITHE__GRAPH_TYPES, lithe__lstm_types, lithe__attention_types,
    };
    for (size_t f = 0; f < sizeof families / sizeof families[0]; f++)
        for (const lithe__layer_type *const *t = families[f]; *t; t++)
            if (!strcmp((*t)->registered_name, registered_name)) return *t;
    return NULL;
}
