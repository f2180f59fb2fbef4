/* The affine family: Y = act(X·Wᵀ + b) for Linear, Relu, Mish, Swish, Gelu, Dish, HardSwish,
 * HardSwishMobilenet, ClippedLinear (and HardSigmoid, HardTanh, ReluK, which Thinc builds as
 * ClippedLinear nodes) and Sigmoid. One init and one forward; each registered name is a layer
 * type whose `info` says its node name, activation, default initializer and dim rule.
 * X: (B, nI), W: (nO, nI), b: (nO,) -> Y: (B, nO). */
#include "dense.h"

#include <stdio.h>
#include <string.h>

typedef struct dense_kind {
    const char *node;   /* Thinc's model.name */
    bool has_act;       /* Linear has none */
    lithe__act_kind act;
    bool clipped;       /* act parameters live in the node's attrs (Thinc's clipped_linear) */
    lithe_init init_W;  /* Thinc's default init_W (init_b is zeros for all) */
    bool strict_dims;   /* set_dim from the sample (an error on conflict) vs only-if-unset */
    bool norm_dropout;  /* Thinc's layer takes normalize= and dropout= */
    float slope, offset, min_val, max_val; /* clipped defaults */
} dense_kind;

enum { K_LINEAR, K_RELU, K_MISH, K_SWISH, K_GELU, K_DISH, K_HARDSWISH, K_HARDSWISH_MOBILENET, K_CLIPPED,
       K_HARD_SIGMOID, K_HARD_TANH, K_RELU_K, K_SIGMOID, K_COUNT };

#define ACT(kind) true, LITHE__ACT_##kind
static const dense_kind kinds[K_COUNT] = {
    [K_LINEAR] = {"linear", false, 0, false, LITHE_INIT_GLOROT_UNIFORM, true, false, 0, 0, 0, 0},
    [K_RELU] = {"relu", ACT(RELU), false, LITHE_INIT_GLOROT_UNIFORM, true, true, 0, 0, 0, 0},
    [K_MISH] = {"mish", ACT(MISH), false, LITHE_INIT_GLOROT_UNIFORM, true, true, 0, 0, 0, 0},
    [K_SWISH] = {"swish", ACT(SWISH), false, LITHE_INIT_HE_NORMAL, true, true, 0, 0, 0, 0},
    [K_GELU] = {"gelu", ACT(GELU), false, LITHE_INIT_HE_NORMAL, true, true, 0, 0, 0, 0},
    [K_DISH] = {"dish", ACT(DISH), false, LITHE_INIT_HE_NORMAL, true, true, 0, 0, 0, 0},
    [K_HARDSWISH] = {"hardswish", ACT(HARD_SWISH), false, LITHE_INIT_HE_NORMAL, true, true, 0, 0, 0, 0},
    [K_HARDSWISH_MOBILENET] = {"hardswishmobilenet", ACT(HARD_SWISH_MOBILENET), false, LITHE_INIT_HE_NORMAL, true,
                               true, 0, 0, 0, 0},
    [K_CLIPPED] = {"clipped_linear", ACT(CLIPPED_LINEAR), true, LITHE_INIT_GLOROT_UNIFORM, true, true, 1, 0, 0, 1},
    [K_HARD_SIGMOID] = {"clipped_linear", ACT(CLIPPED_LINEAR), true, LITHE_INIT_GLOROT_UNIFORM, true, true, 0.2f,
                        0.5f, 0, 1},
    [K_HARD_TANH] = {"clipped_linear", ACT(CLIPPED_LINEAR), true, LITHE_INIT_GLOROT_UNIFORM, true, true, 1, 0, -1,
                     1},
    [K_RELU_K] = {"clipped_linear", ACT(CLIPPED_LINEAR), true, LITHE_INIT_GLOROT_UNIFORM, true, true, 1, 0, 0, 6},
    [K_SIGMOID] = {"sigmoid", ACT(SIGMOID), false, LITHE_INIT_ZERO, false, false, 0, 0, 0, 0},
};
#undef ACT

typedef struct dense_bp {
    lithe_backprop base;
    lithe_tensor *X, *Z, *Y; /* input; pre-activation and output when the backward reads them */
    int64_t B, nO;
    bool has_act;
    lithe__act act;
} dense_bp;

static lithe_status dense_backward(lithe_backprop *self, const lithe_value *dYv, lithe_value **dX) {
    dense_bp *r = (dense_bp *)self;
    lithe_model *m = self->model;
    lithe_tensor *dY, *dZ = NULL, *dXt = NULL;
    LITHE__TRY(lithe__check_dY(m, dYv, r->B, r->nO, &dY));
    lithe_status s = LITHE_OK;
    if (r->has_act) {
        LITHE__TRY(lithe__tensor_like(dY, false, &dZ));
        s = lithe__op_act_backward(m->backend, &r->act, dY, r->Z, r->Y, dZ);
    }
    if (s == LITHE_OK) s = lithe__affine_backward(m, r->X, dZ ? dZ : dY, dX ? &dXt : NULL);
    lithe_tensor_release(dZ);
    if (s != LITHE_OK) return s;
    return lithe__emit(dXt, dX);
}

static void dense_destroy(lithe_backprop *self) {
    dense_bp *r = (dense_bp *)self;
    lithe_tensor_release(r->X);
    lithe_tensor_release(r->Z);
    lithe_tensor_release(r->Y);
}

/* The activation as this node computes it now (clipped_linear reads its attrs, as Thinc does). */
static lithe_status node_act(const lithe_model *m, const dense_kind *k, lithe__act *a) {
    memset(a, 0, sizeof *a);
    a->kind = k->act;
    a->threshold = 20.0f; /* Thinc's Mish layer uses ops.mish's default */
    if (!k->clipped) return LITHE_OK;
    double v[4];
    static const char *const names[4] = {"slope", "offset", "min_val", "max_val"};
    for (int i = 0; i < 4; i++) LITHE__TRY(lithe_model_get_attr_float(m, names[i], &v[i]));
    if (v[0] == 0.0)
        return lithe__fail(LITHE_ERR_VALUE, "%s: attr slope is 0 (the backward divides by it)", m->name);
    a->slope = (float)v[0];
    a->offset = (float)v[1];
    a->min_val = (float)v[2];
    a->max_val = (float)v[3];
    return LITHE_OK;
}

bool lithe__dense_prep_op(lithe_model *m, lithe__prep_op *op) {
    const dense_kind *k = m->type->info;
    lithe__act a;
    if (node_act(m, k, &a) != LITHE_OK) {
        return false;
    }
    return lithe__affine_prep_op(k->has_act ? &a : NULL, op);
}

static lithe_status dense_forward(lithe_model *m, const lithe_value *Xv, bool is_train, lithe_value **Yv,
                                  lithe_backprop **bp) {
    const dense_kind *k = m->type->info;
    lithe__act a;
    lithe_tensor *X = NULL, *Z = NULL, *Y = NULL;
    LITHE__TRY(node_act(m, k, &a));
    LITHE__TRY(lithe__dense_input(m, Xv, &X));
    /* what a backward would read (none without a backprop record: predict) */
    int needs = k->has_act && bp ? lithe__act_needs(a.kind) : 0;
    /* one fused pass; the pre-activation Z is kept only when the backward reads it (without it,
     * an activation that is a clamp can run as the backend's prepared operator, LITHE_XNNPACK) */
    lithe_status s = lithe__affine_forward_act(m, X, is_train, k->has_act ? &a : NULL,
                                               needs & LITHE__ACT_NEEDS_X ? &Z : NULL, &Y);
    if (s != LITHE_OK) return s;
    if (s == LITHE_OK && bp) {
        s = lithe__backprop_new(m, sizeof(dense_bp), dense_backward, dense_destroy, bp);
        if (s == LITHE_OK) {
            dense_bp *r = (dense_bp *)*bp;
            r->X = lithe_tensor_retain(X);
            r->Z = needs & LITHE__ACT_NEEDS_X ? lithe_tensor_retain(Z) : NULL;
            r->Y = needs & LITHE__ACT_NEEDS_Y ? lithe_tensor_retain(Y) : NULL;
            r->B = Y->shape[0];
            r->nO = Y->shape[1];
            r->has_act = k->has_act;
            r->act = a;
        }
    }
    lithe_tensor_release(Z);
    return lithe__emit_output(s, Y, Yv, bp);
}

static lithe_status dense_init(lithe_model *m, const lithe_value *X, const lithe_value *Y) {
    const dense_kind *k = m->type->info;
    return lithe__affine_init(m, X, Y, m->init_W ? m->init_W : k->init_W, m->init_b ? m->init_b : LITHE_INIT_ZERO,
                              k->strict_dims);
}

#define TYPE(name, k) {name, dense_init, dense_forward, &kinds[k], 0, 0}
static const lithe__layer_type types[K_COUNT] = {
    [K_LINEAR] = TYPE("Linear.v1", K_LINEAR),
    [K_RELU] = TYPE("Relu.v1", K_RELU),
    [K_MISH] = TYPE("Mish.v1", K_MISH),
    [K_SWISH] = TYPE("Swish.v1", K_SWISH),
    [K_GELU] = TYPE("Gelu.v1", K_GELU),
    [K_DISH] = TYPE("Dish.v1", K_DISH),
    [K_HARDSWISH] = TYPE("HardSwish.v1", K_HARDSWISH),
    [K_HARDSWISH_MOBILENET] = TYPE("HardSwishMobilenet.v1", K_HARDSWISH_MOBILENET),
    [K_CLIPPED] = TYPE("ClippedLinear.v1", K_CLIPPED),
    [K_HARD_SIGMOID] = TYPE("HardSigmoid.v1", K_HARD_SIGMOID),
    [K_HARD_TANH] = TYPE("HardTanh.v1", K_HARD_TANH),
    [K_RELU_K] = TYPE("ReluK.v1", K_RELU_K),
    [K_SIGMOID] = TYPE("Sigmoid.v1", K_SIGMOID),
};
#undef TYPE

const lithe__layer_type *const lithe__dense_types[] = {
    &types[0], &types[1], &types[2], &types[3], &types[4], &types[5], &types[6],
    &types[7], &types[8], &types[9], &types[10], &types[11], &types[12], NULL,
};
_Static_assert(K_COUNT == 13, "list every dense type in lithe__dense_types");

static const char *const dense_dims[] = {"nO", "nI", NULL};
static const char *const dense_params[] = {"W", "b", NULL};

static bool valid_init(lithe_init i) {
    return i >= LITHE_INIT_DEFAULT && i <= LITHE_INIT_NORMAL;
}

lithe_status lithe__dense_check_opts(const char *layer, const lithe_dense_opts *o, bool norm_dropout) {
    if (!o) return LITHE_OK;
    if (o->nO < 0 || o->nI < 0)
        return lithe__fail(LITHE_ERR_VALUE, "%s: nO and nI must be >= 0 (0 = unset), got %lld and %lld", layer,
                           (long long)o->nO, (long long)o->nI);
    if (!(o->dropout >= 0.0f && o->dropout <= 1.0f))
        return lithe__fail(LITHE_ERR_VALUE, "%s: dropout %g outside [0, 1]", layer, (double)o->dropout);
    if (!norm_dropout && (o->dropout > 0.0f || o->normalize))
        return lithe__fail(LITHE_ERR_VALUE, "%s: Thinc's layer takes no %s argument", layer,
                           o->normalize ? "normalize" : "dropout");
    if (!valid_init(o->init_W) || !valid_init(o->init_b))
        return lithe__fail(LITHE_ERR_VALUE, "%s: unknown initializer %d", layer,
                           (int)(valid_init(o->init_W) ? o->init_b : o->init_W));
    return LITHE_OK;
}

lithe_status lithe__norm_dropout(const char *layer, lithe_model *node, const lithe_dense_opts *o, lithe_model **out) {
    (void)layer;
    lithe_status s = LITHE_OK;
    if (o && o->normalize) {
        lithe_model *ln = NULL;
        s = lithe_layernorm(o->nO, &ln);
        if (s != LITHE_OK) {
            lithe_model_free(node);
            return s;
        }
        LITHE__TRY(lithe_chain(2, (lithe_model *[]){node, ln}, &node));
    }
    if (o && o->dropout > 0.0f) {
        lithe_model *drop = NULL;
        s = lithe_dropout(o->dropout, &drop);
        if (s != LITHE_OK) {
            lithe_model_free(node);
            return s;
        }
        LITHE__TRY(lithe_chain(2, (lithe_model *[]){node, drop}, &node));
    }
    *out = node;
    return LITHE_OK;
}

static lithe_status dense_build(int k, const lithe_dense_opts *o, const float clip[4], lithe_model **out) {
    const lithe__layer_type *t = &types[k];
    LITHE__TRY(lithe__dense_check_opts(t->registered_name, o, kinds[k].norm_dropout));
    lithe_model *m = NULL;
    LITHE__TRY(lithe__model_new(t, kinds[k].node, dense_dims, dense_params, &m));
    if (o) {
        m->dims[0].value = o->nO;
        m->dims[1].value = o->nI;
        m->init_W = o->init_W;
        m->init_b = o->init_b;
    }
    if (kinds[k].clipped) {
        static const char *const names[4] = {"slope", "offset", "min_val", "max_val"};
        for (int i = 0; i < 4; i++) {
            lithe_status s = lithe_model_set_attr_float(m, names[i], clip[i]);
            if (s != LITHE_OK) {
                lithe_model_free(m);
                return s;
            }
        }
    }
    return lithe__norm_dropout(t->registered_name, m, o, out);
}

lithe_status lithe_dense(const char *layer, const lithe_dense_opts *opts, lithe_model **out) {
    LITHE__CHECK_ARG(out, "lithe_dense", "out is NULL");
    *out = NULL;
    LITHE__CHECK_ARG(layer, "lithe_dense", "layer is NULL");
    if (strcmp(layer, "Maxout.v1") == 0) return lithe__maxout_new(opts, out);
    for (int k = 0; k < K_COUNT; k++)
        if (strcmp(types[k].registered_name, layer) == 0) {
            const float clip[4] = {kinds[k].slope, kinds[k].offset, kinds[k].min_val, kinds[k].max_val};
            return dense_build(k, opts, clip, out);
        }
    char known[512];
    size_t len = 0;
    known[0] = '\0';
    for (int k = 0; k < K_COUNT && len < sizeof known; k++)
        len += (size_t)snprintf(known + len, sizeof known - len, "%s%s", k ? ", " : "", types[k].registered_name);
    return lithe__fail(LITHE_ERR_VALUE, "lithe_dense: unknown layer '%s' (known: %s, Maxout.v1)", layer, known);
}

lithe_status lithe_clipped_linear(const lithe_dense_opts *opts, float slope, float offset, float min_val,
                                  float max_val, lithe_model **out) {
    LITHE__CHECK_ARG(out, "lithe_clipped_linear", "out is NULL");
    *out = NULL;
    if (!(slope != 0.0f && min_val <= max_val) || slope != slope || offset != offset)
        return lithe__fail(LITHE_ERR_VALUE,
                           "ClippedLinear.v1: need slope != 0 and min_val <= max_val (slope %g, offset %g, min_val %g, "
                           "max_val %g)",
                           (double)slope, (double)offset, (double)min_val, (double)max_val);
    return dense_build(K_CLIPPED, opts, (const float[4]){slope, offset, min_val, max_val}, out);
}

lithe_status lithe_linear(const lithe_dense_opts *opts, lithe_model **out) {
    LITHE__CHECK_ARG(out, "lithe_linear", "out is NULL");
    return lithe_dense("Linear.v1", opts, out);
}

lithe_status lithe_relu(const lithe_dense_opts *opts, lithe_model **out) {
    LITHE__CHECK_ARG(out, "lithe_relu", "out is NULL");
    return lithe_dense("Relu.v1", opts, out);
}

