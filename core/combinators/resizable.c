/* resizable.v1: holds one layer whose output width can change (Thinc's resizable with
 * resize_linear_weighted): resize_model swaps in a copy of the layer with nO rows, the old rows
 * kept and the new ones filled — how a trained classifier gets new classes. */
#include "../internal.h"

#include <stdio.h>

static lithe_status resizable_forward(lithe_model *m, const lithe_value *X, bool is_train, lithe_value **Y,
                                      lithe_backprop **bp) {
    return lithe_model_forward(m->layers[0], X, is_train, Y, bp);
}

static lithe_status resizable_init(lithe_model *m, const lithe_value *X, const lithe_value *Y) {
    /* Thinc initializes the layer only; the container keeps the dims it was built with */
    return lithe_model_initialize(m->layers[0], X, Y);
}

static const lithe__layer_type resizable_type = {"resizable.v1", resizable_init, resizable_forward, NULL, 1, 1};
const lithe__layer_type *const lithe__resizable_types[] = {&resizable_type, NULL};

lithe_status lithe_resizable(lithe_model *layer, float fill_W, float fill_b, lithe_model **out) {
    if (out) *out = NULL;
    if (!out || !layer) {
        lithe_model_free(layer);
        return lithe__fail(LITHE_ERR_INVALID_ARG, "lithe_resizable: %s is NULL", out ? "layer" : "out");
    }
    if (layer->n_layers || layer->n_refs || layer->n_shims || !lithe__model_find_param(layer, "W") ||
        !lithe__model_find_param(layer, "b")) {
        lithe_status s = lithe__fail(LITHE_ERR_UNSUPPORTED,
                                     "resizable: %s must be a leaf layer with params W and b (Thinc's "
                                     "resize_linear_weighted)", layer->name);
        lithe_model_free(layer);
        return s;
    }
    char name[256];
    snprintf(name, sizeof name, "resizable(%s)", layer->name);
    const char **dn = lithe__calloc(layer->n_dims + 1, sizeof *dn);
    lithe_model *m = NULL;
    lithe_status s = dn ? LITHE_OK : lithe__oom("resizable", (layer->n_dims + 1) * sizeof *dn);
    for (size_t i = 0; s == LITHE_OK && i < layer->n_dims; i++) dn[i] = layer->dims[i].name;
    if (s == LITHE_OK) s = lithe__model_new(&resizable_type, name, dn, NULL, &m);
    lithe__free(dn);
    if (s != LITHE_OK) {
        lithe_model_free(layer);
        return s;
    }
    for (size_t i = 0; i < layer->n_dims; i++) m->dims[i].value = layer->dims[i].value;
    m->cfg[0] = fill_W;
    m->cfg[1] = fill_b;
    m->backend = layer->backend;
    LITHE__TRY(lithe__model_add_layer(m, layer));
    *out = m;
    return LITHE_OK;
}

/* A copy of `old` with nO = new_nO: each param's first rows (axis 0) copied, the rest filled. */
static lithe_status resized_copy(const lithe_model *old, int64_t new_nO, const double fill[2], lithe_model **out) {
    lithe_model *m = NULL;
    LITHE__TRY(lithe__node_clone(old, &m));
    lithe_status s = LITHE_OK;
    for (size_t i = 0; i < m->n_dims; i++)
        if (!strcmp(m->dims[i].name, "nO")) m->dims[i].value = new_nO;
    for (size_t i = 0; s == LITHE_OK && i < m->n_params; i++) {
        lithe_tensor *small = m->params[i].value, *big = NULL, *head = NULL, *tail = NULL;
        if (!small) continue;
        int64_t shape[LITHE_MAX_DIMS];
        for (int d = 0; d < small->ndim; d++) shape[d] = small->shape[d];
        int64_t old_rows = shape[0];
        shape[0] = new_nO;
        s = lithe__tensor_alloc(m->backend, LITHE_F32, small->ndim, shape, false, &big);
        if (s == LITHE_OK) s = lithe_tensor_slice(big, 0, 0, old_rows, &head);
        if (s == LITHE_OK) s = lithe_tensor_slice(big, 0, old_rows, new_nO, &tail);
        if (s == LITHE_OK) s = lithe__op_copy(m->backend, head, small);
        float f = (float)(strcmp(m->params[i].name, "W") == 0 ? fill[0] : strcmp(m->params[i].name, "b") == 0 ? fill[1] : 0.0);
        if (s == LITHE_OK) s = lithe__op_fill(m->backend, tail, f);
        lithe_tensor_release(head);
        lithe_tensor_release(tail);
        if (s == LITHE_OK) {
            lithe_tensor_release(small);
            m->params[i].value = big;
        } else {
            lithe_tensor_release(big);
        }
    }
    if (s != LITHE_OK) {
        lithe_model_free(m);
        return s;
    }
    *out = m;
    return LITHE_OK;
}

static lithe_status resize_model_body(lithe_model *model, int64_t new_nO) {
    LITHE__CHECK_ARG(model, "lithe_resize_model", "model is NULL");
    if (model->type != &resizable_type)
        return lithe__fail(LITHE_ERR_INVALID_ARG, "lithe_resize_model: %s is not a resizable node", model->name);
    if (new_nO <= 0)
        return lithe__fail(LITHE_ERR_VALUE, "%s: new nO must be positive, got %lld", model->name, (long long)new_nO);
    lithe_model *old = model->layers[0];
    int64_t nO = lithe__dim_value(old, "nO");
    const lithe__param *pw = lithe__model_find_param(old, "W");
    if (!pw) return lithe__fail(LITHE_ERR_UNSUPPORTED, "%s: the held layer has no param W", model->name);
    if (!nO || !pw->value) {
        /* not initialized yet: the layer just takes the new nO (Thinc sets it, or rebuilds the
         * layer with it and nothing to copy) */
        for (size_t i = 0; i < old->n_dims; i++)
            if (!strcmp(old->dims[i].name, "nO")) old->dims[i].value = new_nO;
    } else if (new_nO < nO) {
        return lithe__fail(LITHE_ERR_VALUE, "%s: cannot shrink nO from %lld to %lld (Thinc's resize only grows)",
                           model->name, (long long)nO, (long long)new_nO);
    } else if (new_nO > nO) {
        lithe_model *fresh = NULL;
        LITHE__TRY(resized_copy(old, new_nO, model->cfg, &fresh));
        model->layers[0] = fresh;
        lithe_model_free(old); /* backprop records made before keep their own reference */
    }
    /* the container's own dims stay as they were, as in Thinc (its bytes carry them so) */
    return LITHE_OK;
}

lithe_status lithe_resize_model(lithe_model *model, int64_t new_nO) {
    if (model) LITHE__TRY(lithe__enter_tree(model, "lithe_resize_model"));
    lithe_status s = resize_model_body(model, new_nO);
    if (model) lithe__leave_tree(model);
    return s;
}
