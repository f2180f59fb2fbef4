/* The layer registry, generated from core/layers/layers.def (the one list of layer types): the
 * lookup by name the loader uses, the public name list and the Thinc-forward map. */
#include "../internal.h"

#include <string.h>

/* A registered name whose constructor builds other layers' nodes (clone.v1: a chain). */
const lithe__layer_type *const lithe__builds_others[] = {NULL};

lithe_status lithe__no_create(const lithe__layer_type *type, lithe_model **out) {
    (void)out;
    return lithe__fail(LITHE_ERR_UNSUPPORTED, "lithe_layer_new: '%s' takes arguments: build it with its own "
                                              "constructor (include/lithe.h)", type->registered_name);
}

typedef struct entry {
    const char *name, *thinc_forward;
    lithe_status (*create)(const lithe__layer_type *type, lithe_model **out);
} entry;

static const entry entries[] = {
#define LITHE_LAYER(name, family, thinc, create) {name, thinc, create},
#define LITHE_NODE_TYPE LITHE_LAYER
#include "layers.def"
#undef LITHE_LAYER
#undef LITHE_NODE_TYPE
};

static const char *const names[] = {
#define LITHE_LAYER(name, family, thinc, create) name,
#define LITHE_NODE_TYPE(name, family, thinc, create) /* not listed */
#include "layers.def"
#undef LITHE_LAYER
#undef LITHE_NODE_TYPE
};

const char *const *lithe_layer_names(size_t *n) {
    if (n) *n = sizeof names / sizeof names[0];
    return names;
}

const char *lithe_layer_for_thinc(const char *thinc_forward) {
    if (!thinc_forward) return NULL;
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++)
        if (entries[i].thinc_forward && !strcmp(entries[i].thinc_forward, thinc_forward)) return entries[i].name;
    return NULL;
}

/* The npm package's separate importers module supplies the graph types at run time. */
#ifdef LITHE_IMPORTERS_SEPARATE
#undef lithe__graph_types
#define lithe__graph_types LITHE__GRAPH_TYPES
#endif

/* The line of `name` and its type (NULL: a name whose constructor builds other nodes). */
static const lithe__layer_type *lookup(const char *name, size_t *line) {
    if (!name) return NULL;
    /* each line's family, in the list's order (a family appears once per line naming it) */
    const lithe__layer_type *const *const families[] = {
#define LITHE_LAYER(name, family, thinc, create) family,
#define LITHE_NODE_TYPE LITHE_LAYER
#include "layers.def"
#undef LITHE_LAYER
#undef LITHE_NODE_TYPE
    };
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++) {
        if (strcmp(entries[i].name, name)) continue;
        *line = i;
        for (const lithe__layer_type *const *t = families[i]; *t; t++)
            if (!strcmp((*t)->registered_name, name)) return *t;
        return NULL;
    }
    return NULL;
}

const lithe__layer_type *lithe__layer_type_by_name(const char *registered_name) {
    size_t line = 0;
    return lookup(registered_name, &line);
}

lithe_status lithe_layer_new(const char *layer, lithe_model **out) {
    LITHE__CHECK_ARG(out, "lithe_layer_new", "out is NULL");
    *out = NULL;
    LITHE__CHECK_ARG(layer, "lithe_layer_new", "layer is NULL");
    size_t line = 0;
    const lithe__layer_type *type = lookup(layer, &line);
    if (!type)
        return lithe__fail(LITHE_ERR_NOT_FOUND, "lithe_layer_new: no layer type '%s' (lithe layers lists them)", layer);
    return entries[line].create(type, out);
}
