/* Checks a loaded node against itself (issue 30): every param's shape against the dims that
 * describe it, and attrs whose range a layer relies on, at load time — so a file whose nO says 9
 * while W is (8, 6) is refused when loaded rather than run (or failing only at predict). Used by
 * the .lithe loader (and any reader that builds nodes from a file). */
#include "../internal.h"

#include <math.h>
#include <string.h>

/* A param's shape as dims of its node, in axis order; "" ends the list. */
typedef struct shape_rule {
    const char *param;
    const char *dims[4];
} shape_rule;

static const shape_rule dense_rules[] = {{"W", {"nO", "nI", ""}}, {"b", {"nO", ""}}, {NULL, {""}}};
static const shape_rule maxout_rules[] = {{"W", {"nO", "nP", "nI", ""}}, {"b", {"nO", "nP", ""}}, {NULL, {""}}};
static const shape_rule layernorm_rules[] = {{"G", {"nI", ""}}, {"b", {"nI", ""}}, {NULL, {""}}};
static const shape_rule embed_rules[] = {{"E", {"nV", "nO", ""}}, {NULL, {""}}};
static const shape_rule attention_rules[] = {{"Q", {"nO", ""}}, {NULL, {""}}};
static const shape_rule static_rules[] = {{"W", {"nO", "nM", ""}}, {NULL, {""}}};

static const shape_rule *rules_for(const lithe__layer_type *type) {
    const char *layer = type->registered_name;
    for (size_t i = 0; lithe__dense_types[i]; i++) /* the dense family (core/layers/dense.c) */
        if (lithe__dense_types[i] == type) return dense_rules;
    if (!strcmp(layer, "Softmax.v1") || !strcmp(layer, "Softmax.v2") || !strcmp(layer, "MultiSoftmax.v1"))
        return dense_rules;
    if (!strcmp(layer, "Maxout.v1")) return maxout_rules;
    if (!strcmp(layer, "LayerNorm.v1")) return layernorm_rules;
    if (!strcmp(layer, "Embed.v1") || !strcmp(layer, "HashEmbed.v1")) return embed_rules;
    if (!strcmp(layer, "ParametricAttention.v1")) return attention_rules;
    if (!strcmp(layer, "StaticVectors.v2")) return static_rules;
    return NULL;
}

static const lithe__dim *find_dim(const lithe_model *m, const char *name) {
    for (size_t d = 0; d < m->n_dims; d++)
        if (!strcmp(m->dims[d].name, name)) return &m->dims[d];
    return NULL;
}

static lithe_status check_shapes(const lithe_model *m, const char *what) {
    const shape_rule *r = rules_for(m->type);
    for (; r && r->param; r++) {
        const lithe__param *pr = NULL;
        for (size_t p = 0; p < m->n_params; p++)
            if (!strcmp(m->params[p].name, r->param)) pr = &m->params[p];
        if (!pr || !pr->value) continue;
        const lithe_tensor *t = pr->value;
        int nd = 0;
        while (r->dims[nd][0]) nd++;
        if (t->ndim != nd)
            return lithe__fail(LITHE_ERR_SHAPE, "%s: node %s (%s): param %s has %d axes, its layer's has %d", what,
                               m->name, m->type->registered_name, r->param, t->ndim, nd);
        for (int a = 0; a < nd; a++) {
            const lithe__dim *d = find_dim(m, r->dims[a]);
            if (d && d->value && d->value != t->shape[a])
                return lithe__fail(LITHE_ERR_SHAPE,
                                   "%s: node %s (%s): %s=%lld, but param %s's axis %d is %lld (%s's shape is (%s))",
                                   what, m->name, m->type->registered_name, r->dims[a], (long long)d->value, r->param,
                                   a, (long long)t->shape[a], r->param,
                                   nd == 1 ? r->dims[0] : nd == 2 ? "nO, nI/nM/nV" : "nO, nP, nI");
        }
    }
    return LITHE_OK;
}

static lithe_status check_attrs(const lithe_model *m, const char *what) {
    double rate = 0.0;
    if (lithe_model_attr_type(m, "dropout_rate") == LITHE_ATTR_FLOAT &&
        lithe_model_get_attr_float(m, "dropout_rate", &rate) == LITHE_OK && !(rate >= 0.0 && rate <= 1.0))
        return lithe__fail(LITHE_ERR_VALUE, "%s: node %s (%s): dropout_rate %g outside [0, 1]", what, m->name,
                           m->type->registered_name, rate);
    return LITHE_OK;
}

lithe_status lithe__check_loaded_node(const lithe_model *m, const char *what) {
    for (size_t p = 0; p < m->n_params; p++) /* the weight-level LoRA form: its W held base + B·A */
        if (!strncmp(m->params[p].name, "lora_base:", 10))
            return lithe__fail(LITHE_ERR_UNSUPPORTED, "%s: node '%s' has LoRA adapters in the older weight-level form "
                               "(param '%s'); merge them with the lithe that saved it, or load its adapter file "
                               "(lithe_model_save_lora) onto the base", what, m->name, m->params[p].name);
    LITHE__TRY(check_shapes(m, what));
    return check_attrs(m, what);
}
