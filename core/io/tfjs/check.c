/* Load-time checks of a TF.js layers model's layer list (issue 30), beside the lowering in tfjs.c:
 * layer names are unique (Keras requires it, and weights and inbound nodes are found by name, so
 * a duplicate would silently pick one of two layers), and a Dropout's rate lies in [0, 1). */
#include "tfjs.h"

#include <math.h>
#include <string.h>


static const char *layer_name_of(const js_val *layer) {
    const js_val *n = js_get(layer, "name");
    if (!n || n->type != JS_STR) n = js_get(js_get(layer, "config"), "name");
    return n && n->type == JS_STR ? n->str : NULL;
}

lithe_status lithe__tfjs_check_layers(const js_val *layers) {
    if (!layers || layers->type != JS_ARR) return LITHE_OK; /* the lowering says what is missing */
    for (size_t i = 0; i < layers->len; i++) {
        const js_val *layer = &layers->items[i];
        const char *name = layer_name_of(layer);
        for (size_t j = 0; name && j < i; j++) {
            const char *other = layer_name_of(&layers->items[j]);
            if (other && !strcmp(name, other))
                return lithe__fail(LITHE_ERR_FORMAT, "%s: layers %zu and %zu are both named '%s' (layer names must be "
                                                     "unique)", WHAT, j, i, name);
        }
        const js_val *cls = js_get(layer, "class_name"), *cfg = js_get(layer, "config");
        if (cls && cls->type == JS_STR && (!strcmp(cls->str, "Dropout") || !strcmp(cls->str, "SpatialDropout1D") ||
                                           !strcmp(cls->str, "SpatialDropout2D") || !strcmp(cls->str, "AlphaDropout") ||
                                           !strcmp(cls->str, "GaussianDropout"))) {
            const js_val *rate = js_get(cfg, "rate");
            if (rate && !(rate->type == JS_NUM && rate->num >= 0.0 && rate->num < 1.0))
                return lithe__fail(LITHE_ERR_VALUE, "%s: layer %zu (%s '%s'): rate %g is outside [0, 1)", WHAT, i,
                                   cls->str, name ? name : "", rate->type == JS_NUM ? rate->num : NAN);
        }
    }
    return LITHE_OK;
}
