/* The registered layer names, versioned as Thinc registers them. */
#include "../internal.h"

static const char *const names[] = {
    "Dropout.v1", "Linear.v1", "Relu.v1", "Softmax.v2", "chain.v1",
};

const char *const *lithe_layer_names(size_t *n) {
    if (n) *n = sizeof names / sizeof names[0];
    return names;
}
