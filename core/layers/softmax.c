/* Softmax.v2: Y = softmax((X·Wᵀ + b) / temperature); W and b start at zero, as in Thinc.
 * Backward treats dY as d(loss)/d(logits) * temperature — Thinc's convention, exact for
 * CategoricalCrossentropy — and so never multiplies by the softmax Jacobian. */
#include "dense.h"

typedef struct softmax_bp {
    lithe_backprop base;
    lithe_tensor *X;
    int64_t B, nO;
    float temperature;
    bool normalized;
} softmax_bp;

static lithe_status attrs_of(const lithe_model *m, bool *normalize, float *temperature) {
    double t;
    LITHE__TRY(lithe_model_get_attr_bool(m, "softmax_normalize", normalize));
    LITHE__TRY(lithe_model_get_attr_float(m, "softmax_temperature", &t));
    if (!(t > 0.0)) return lithe__fail(LITHE_ERR_VALUE, "%s: softmax temperature must not be zero or negative (%g)",
                                       m->name, t);
    *temperature = (float)t;
    return LITHE_OK;
}

static lithe_status softmax_backward(lithe_backprop *self, const lithe_value *dYv, lithe_value **dX) {
    softmax_bp *r = (softmax_bp *)self;
    lithe_model *m = self->model;
    if (!r->normalized)
        return lithe__fail(LITHE_ERR_STATE, "%s: backprop is not supported for an unnormalized Softmax layer", m->name);
    lithe_tensor *dY, *scaled = NULL, *dXt = NULL;
    LITHE__TRY(lithe__check_dY(m, dYv, r->B, r->nO, &dY));
    if (r->temperature != 1.0f) {
        LITHE__TRY(lithe__tensor_like(dY, false, &scaled));
        lithe_status s = lithe__op_axpby(m->backend, 1.0f / r->temperature, dY, 0.0f, scaled);
        if (s != LITHE_OK) {
            lithe_tensor_release(scaled);
            return s;
        }
        dY = scaled;
    }
    lithe_status s = lithe__affine_backward(m, r->X, dY, dX ? &dXt : NULL);
    lithe_tensor_release(scaled);
    if (s != LITHE_OK) return s;
    return lithe__emit(dXt, dX);
}

static void softmax_destroy(lithe_backprop *self) { lithe_tensor_release(((softmax_bp *)self)->X); }

static lithe_status softmax_forward(lithe_model *m, const lithe_value *Xv, bool is_train, lithe_value **Yv,
                                    lithe_backprop **bp) {
    bool normalize = true;
    float temperature = 1.0f;
    LITHE__TRY(attrs_of(m, &normalize, &temperature));
    normalize = normalize || is_train;
    lithe_tensor *X = NULL, *Y = NULL;
    LITHE__TRY(lithe__dense_input(m, Xv, &X));
    LITHE__TRY(lithe__affine_forward(m, X, &Y));
    lithe_status s = normalize ? lithe__op_softmax(m->backend, Y, temperature, Y) : LITHE_OK;
    if (s == LITHE_OK && bp) {
        s = lithe__backprop_new(m, sizeof(softmax_bp), softmax_backward, softmax_destroy, bp);
        if (s == LITHE_OK) {
            softmax_bp *r = (softmax_bp *)*bp;
            r->X = lithe_tensor_retain(X);
            r->B = Y->shape[0];
            r->nO = Y->shape[1];
            r->temperature = temperature;
            r->normalized = normalize;
        }
    }
    if (s != LITHE_OK) {
        lithe_tensor_release(Y);
        return s;
    }
    s = lithe__value_wrap(Y, Yv);
    if (s != LITHE_OK && bp) {
        lithe_backprop_free(*bp);
        *bp = NULL;
    }
    return s;
}

static lithe_status softmax_init(lithe_model *m, const lithe_value *X, const lithe_value *Y) {
    return lithe__affine_init(m, X, Y, LITHE_INIT_ZERO, LITHE_INIT_ZERO, false);
}

const lithe__layer_type lithe__softmax_type = {"Softmax.v2", softmax_init, softmax_forward, NULL};

lithe_status lithe_softmax(const lithe_softmax_opts *o, lithe_model **out) {
    LITHE__CHECK_ARG(out, "lithe_softmax", "out is NULL");
    *out = NULL;
    lithe_softmax_opts d = {0};
    if (!o) o = &d;
    if (o->nO < 0 || o->nI < 0)
        return lithe__fail(LITHE_ERR_VALUE, "softmax: nO and nI must be >= 0 (0 = unset), got %lld and %lld",
                           (long long)o->nO, (long long)o->nI);
    if (o->temperature < 0.0f || o->temperature != o->temperature)
        return lithe__fail(LITHE_ERR_VALUE, "softmax: temperature must not be zero or negative (%g)",
                           (double)o->temperature);
    static const char *const dims[] = {"nO", "nI", NULL};
    static const char *const params[] = {"W", "b", NULL};
    lithe_model *m = NULL;
    LITHE__TRY(lithe__model_new(&lithe__softmax_type, "softmax", dims, params, &m));
    m->dims[0].value = o->nO;
    m->dims[1].value = o->nI;
    lithe_status s = lithe_model_set_attr_bool(m, "softmax_normalize", !o->unnormalized_outputs);
    if (s == LITHE_OK)
        s = lithe_model_set_attr_float(m, "softmax_temperature", o->temperature == 0.0f ? 1.0 : (double)o->temperature);
    if (s != LITHE_OK) {
        lithe_model_free(m);
        return s;
    }
    *out = m;
    return LITHE_OK;
}
