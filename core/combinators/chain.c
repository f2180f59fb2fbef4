/* chain.v1: Y = layers[n-1](... layers[0](X)), Thinc's chain with its shape inference. */
#include "../internal.h"

typedef struct chain_bp {
    lithe_backprop base;
    size_t n;
    lithe_backprop **steps;
    /* recompute: the input, and the random streams of the subtree's nodes at the forward */
    lithe_value *X;
    lithe__walk_buf nodes;
    lithe_rng *rngs;
} chain_bp;

static bool attr_on(const lithe_model *m, const char *name) {
    bool on = false;
    for (size_t i = 0; i < m->n_attrs; i++)
        if (!strcmp(m->attrs[i].name, name) && m->attrs[i].type == LITHE_ATTR_BOOL) on = m->attrs[i].v.b;
    return on;
}

/* "no_input_grad": the caller never asks for dX, so the layers before the first one holding a
 * trainable param run at training without records (their activations go as the forward moves). */
static size_t first_recorded(const lithe_model *m, bool is_train) {
    if (!is_train || !attr_on(m, "no_input_grad")) return 0;
    for (size_t i = 0; i < m->n_layers; i++)
        if (lithe__subtree_trainable(m->layers[i])) return i;
    return m->n_layers;
}

/* The layers' forward with records (recompute: their second forward, in backprop). */
static lithe_status run_layers(lithe_model *m, const lithe_value *X, bool is_train, lithe_value **Y, chain_bp *r) {
    lithe_value *cur = lithe_value_retain((lithe_value *)X);
    size_t first = r ? first_recorded(m, is_train) : 0;
    for (size_t i = 0; i < m->n_layers; i++) {
        lithe_value *next = NULL;
        lithe_status s = lithe_model_forward(m->layers[i], cur, is_train, &next, r && i >= first ? &r->steps[i] : NULL);
        lithe_value_release(cur);
        if (s != LITHE_OK) return s;
        if (r) r->n = i + 1;
        cur = next;
    }
    *Y = cur;
    return LITHE_OK;
}

static void free_steps(chain_bp *r) {
    for (size_t i = 0; i < r->n; i++) {
        lithe_backprop_free(r->steps[i]);
        r->steps[i] = NULL;
    }
    r->n = 0;
}

static lithe_status chain_backward(lithe_backprop *self, const lithe_value *dY, lithe_value **dX) {
    chain_bp *r = (chain_bp *)self;
    lithe_model *m = self->model;
    if (r->X) { /* recompute: the forward again, from the same random streams */
        free_steps(r);
        for (size_t i = 0; i < r->nodes.n; i++) r->nodes.v[i]->rng = r->rngs[i];
        lithe_value *Y = NULL;
        lithe_status s = run_layers(m, r->X, true, &Y, r);
        lithe_value_release(Y);
        if (s != LITHE_OK) return s;
    }
    /* Below the lowest layer holding a trainable param nothing needs a gradient unless the caller
     * wants dX: those layers' backprops are not run at all (frozen parts cost no backward). */
    if (dX && attr_on(m, "no_input_grad"))
        return lithe__fail(LITHE_ERR_STATE, "%s: dX asked of a chain whose attr no_input_grad is set", m->name);
    size_t stop = 0;
    if (!dX) {
        stop = r->n;
        for (size_t i = 0; i < r->n; i++)
            if (lithe__subtree_trainable(m->layers[i])) {
                stop = i;
                break;
            }
    }
    lithe_value *cur = lithe_value_retain((lithe_value *)dY);
    lithe_status s = LITHE_OK;
    for (size_t i = r->n; s == LITHE_OK && i-- > stop && r->steps[i];) {
        lithe_value *next = NULL;
        /* the lowest layer's dX is computed only if the caller wants it */
        s = lithe_backprop_run(r->steps[i], cur, (i > stop || dX) ? &next : NULL);
        lithe_value_release(cur);
        cur = next;
    }
    if (r->X) free_steps(r); /* the recomputed activations go at once */
    if (s != LITHE_OK) {
        lithe_value_release(cur);
        return s;
    }
    if (dX) *dX = cur;
    else lithe_value_release(cur);
    return LITHE_OK;
}

static void chain_destroy(lithe_backprop *self) {
    chain_bp *r = (chain_bp *)self;
    free_steps(r);
    lithe__free(r->steps);
    lithe_value_release(r->X);
    lithe__free(r->nodes.v);
    lithe__free(r->rngs);
}

static lithe_status chain_forward(lithe_model *m, const lithe_value *X, bool is_train, lithe_value **Y,
                                  lithe_backprop **bp) {
    chain_bp *r = NULL;
    bool recompute = bp && is_train && attr_on(m, "recompute");
    if (bp) {
        LITHE__TRY(lithe__backprop_new(m, sizeof(chain_bp), chain_backward, chain_destroy, bp));
        r = (chain_bp *)*bp;
        r->steps = lithe__calloc(m->n_layers, sizeof *r->steps);
        lithe_status s = r->steps ? LITHE_OK : lithe__oom(m->name, m->n_layers * sizeof *r->steps);
        if (s == LITHE_OK && recompute) {
            s = lithe__walk_collect(m, &r->nodes);
            if (s == LITHE_OK && !(r->rngs = lithe__calloc(r->nodes.n, sizeof *r->rngs)))
                s = lithe__oom(m->name, r->nodes.n * sizeof *r->rngs);
            for (size_t i = 0; s == LITHE_OK && i < r->nodes.n; i++) r->rngs[i] = r->nodes.v[i]->rng;
            if (s == LITHE_OK) r->X = lithe_value_retain((lithe_value *)X);
        }
        if (s != LITHE_OK) {
            lithe_backprop_free(*bp);
            *bp = NULL;
            return s;
        }
    }
    /* recompute: the layers run as at training but keep no records, so what they make is freed
     * as the forward moves on; only X stays */
    lithe_status s = run_layers(m, X, is_train, Y, recompute ? NULL : r);
    if (s != LITHE_OK && bp) {
        lithe_backprop_free(*bp);
        *bp = NULL;
    }
    return s;
}

static int64_t value_width(const lithe_value *v) {
    const lithe_tensor *t = lithe_value_get_tensor(v);
    return t && t->ndim >= 1 ? t->shape[t->ndim - 1] : 0;
}

static lithe_status chain_init(lithe_model *m, const lithe_value *X, const lithe_value *Y) {
    /* Thinc: a layer whose nO is unset sees the final Y; the others only X. */
    lithe_value *cur = X ? lithe_value_retain((lithe_value *)X) : NULL;
    lithe_status s = LITHE_OK;
    for (size_t i = 0; i < m->n_layers && s == LITHE_OK; i++) {
        lithe_model *layer = m->layers[i];
        bool pass_y = lithe_model_has_dim(layer, "nO") == LITHE_HAS_UNSET;
        s = lithe_model_initialize(layer, cur, pass_y ? Y : NULL);
        if (s == LITHE_OK && cur) {
            lithe_value *next = NULL;
            s = lithe_model_predict(layer, cur, &next);
            lithe_value_release(cur);
            cur = s == LITHE_OK ? next : NULL;
        }
    }
    if (s == LITHE_OK && lithe_model_has_dim(m->layers[0], "nI") == LITHE_HAS_YES)
        s = lithe_model_set_dim(m, "nI", lithe__dim_value(m->layers[0], "nI"));
    if (s == LITHE_OK && lithe_model_has_dim(m, "nO") == LITHE_HAS_UNSET) {
        int64_t nO = cur ? value_width(cur) : 0;
        if (!nO) nO = lithe__dim_value(m->layers[m->n_layers - 1], "nO");
        if (nO) s = lithe_model_set_dim(m, "nO", nO);
    }
    lithe_value_release(cur);
    return s;
}

const lithe__layer_type lithe__chain_type = {"chain.v1", chain_init, chain_forward, NULL, 1, SIZE_MAX};
const lithe__layer_type *const lithe__chain_types[] = {&lithe__chain_type, NULL};

lithe_status lithe_chain(size_t n, lithe_model *const *layers, lithe_model **out) {
    if (out) *out = NULL;
    lithe_status s = LITHE_OK;
    if (!out || !layers || n == 0) s = lithe__fail(LITHE_ERR_INVALID_ARG, "chain: needs out and at least one layer");
    for (size_t i = 0; s == LITHE_OK && i < n; i++)
        if (!layers[i]) s = lithe__fail(LITHE_ERR_INVALID_ARG, "chain: layer %zu is NULL", i);
    if (s != LITHE_OK) {
        for (size_t i = 0; layers && i < n; i++) lithe_model_free(layers[i]);
        return s;
    }
    /* name: the layer names joined by ">>" */
    size_t len = 1;
    for (size_t i = 0; i < n; i++) len += strlen(layers[i]->name) + 2;
    char *name = lithe__malloc(len);
    lithe_has first_nI = lithe_model_has_dim(layers[0], "nI");
    const char *dims_with_nI[] = {"nO", "nI", NULL}, *dims_no_nI[] = {"nO", NULL};
    lithe_model *m = NULL;
    if (!name) {
        s = lithe__oom("chain", len);
    } else {
        name[0] = '\0';
        for (size_t i = 0; i < n; i++) {
            if (i) strcat(name, ">>");
            strcat(name, layers[i]->name);
        }
        s = lithe__model_new(&lithe__chain_type, name, first_nI != LITHE_HAS_NO ? dims_with_nI : dims_no_nI, NULL, &m);
    }
    lithe__free(name);
    if (s != LITHE_OK) {
        for (size_t i = 0; i < n; i++) lithe_model_free(layers[i]);
        return s;
    }
    m->layers = lithe__calloc(n, sizeof *m->layers);
    if (!m->layers) {
        for (size_t i = 0; i < n; i++) lithe_model_free(layers[i]);
        lithe_model_free(m);
        return lithe__oom("chain", n * sizeof *m->layers);
    }
    for (size_t i = 0; i < n; i++) m->layers[i] = layers[i];
    m->n_layers = n;
    if (first_nI == LITHE_HAS_YES) m->dims[1].value = lithe__dim_value(layers[0], "nI");
    if (lithe_model_has_dim(layers[n - 1], "nO") == LITHE_HAS_YES) m->dims[0].value = lithe__dim_value(layers[n - 1], "nO");
    *out = m;
    return LITHE_OK;
}
