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
    LITHE__TRY(lithe__affine_forward(m, X, is_train, &Y));
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
    return lithe__emit_output(s, Y, Yv, bp);
}

static lithe_status softmax_init(lithe_model *m, const lithe_value *X, const lithe_value *Y) {
    return lithe__affine_init(m, X, Y, LITHE_INIT_ZERO, LITHE_INIT_ZERO, false);
}

const lithe__layer_type lithe__softmax_type = {"Softmax.v2", softmax_init, softmax_forward, NULL, 0, 0};
/* Softmax.v1: the same node and forward; normalize and temperature fixed at True and 1.0 */
static const lithe__layer_type softmax_v1_type = {"Softmax.v1", softmax_init, softmax_forward, NULL, 0, 0};

lithe_status lithe_softmax(const lithe_softmax_opts *o, lithe_model **out) {
    LITHE__CHECK_ARG(out, "lithe_softmax", "out is NULL");
    *out = NULL;
    lithe_softmax_opts d = {0};
    if (!o) o = &d;
    if (o->nO < 0 || o->nI < 0)
        return lithe__fail(LITHE_ERR_VALUE, "softmax: nO and nI must be >= 0 (0 = unset), got %lld and %lld",
                           (long long)o->nO, (long long)o->nI);
    if (o->version1 && (o->unnormalized_outputs || (o->temperature != 0.0f && o->temperature != 1.0f)))
        return lithe__fail(LITHE_ERR_VALUE, "Softmax.v1: has no normalize_outputs or temperature (use Softmax.v2)");
    if (o->temperature < 0.0f || o->temperature != o->temperature)
        return lithe__fail(LITHE_ERR_VALUE, "softmax: temperature must not be zero or negative (%g)",
                           (double)o->temperature);
    static const char *const dims[] = {"nO", "nI", NULL};
    static const char *const params[] = {"W", "b", NULL};
    lithe_model *m = NULL;
    LITHE__TRY(lithe__model_new(o->version1 ? &softmax_v1_type : &lithe__softmax_type, "softmax", dims, params, &m));
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

/* ---- MultiSoftmax.v1: one affine layer; a softmax over each group of nOs columns only with the
 * attr softmax_groups = true (Thinc 8.1.7 returns the logits: its in-place softmax of a column
 * slice is lost, and lithe keeps that by default, so Thinc's models predict the same) ---- */

static lithe_status multisoftmax_backward(lithe_backprop *self, const lithe_value *dYv, lithe_value **dX) {
    softmax_bp *r = (softmax_bp *)self;
    lithe_tensor *dY, *dXt = NULL;
    LITHE__TRY(lithe__check_dY(self->model, dYv, r->B, r->nO, &dY));
    LITHE__TRY(lithe__affine_backward(self->model, r->X, dY, dX ? &dXt : NULL));
    return lithe__emit(dXt, dX);
}

static lithe_status multisoftmax_forward(lithe_model *m, const lithe_value *Xv, bool is_train, lithe_value **Yv,
                                         lithe_backprop **bp) {
    lithe_tensor *X = NULL, *Y = NULL, *nOs = NULL;
    bool groups = false; /* Thinc 8.1.7: the logits (see lithe_multisoftmax in lithe.h) */
    LITHE__TRY(lithe_model_get_attr_tensor(m, "nOs", &nOs));
    if (lithe_model_attr_type(m, "softmax_groups") != LITHE_ATTR_NONE)
        LITHE__TRY(lithe_model_get_attr_bool(m, "softmax_groups", &groups));
    LITHE__TRY(lithe__dense_input(m, Xv, &X));
    LITHE__TRY(lithe__affine_forward(m, X, is_train, &Y));
    int64_t B = Y->shape[0], start = 0, n = nOs->numel, total = 0;
    const int64_t *sizes = lithe__tdata(nOs); /* a host int64 attr */
    lithe_status s = LITHE_OK;
    bool ok = nOs->dtype == LITHE_I64 && nOs->ndim == 1;
    for (int64_t g = 0; ok && g < n; g++) {
        ok = sizes[g] > 0 && sizes[g] <= Y->shape[1];
        total += ok ? sizes[g] : 0;
    }
    if (!ok || total != Y->shape[1])
        s = lithe__fail(LITHE_ERR_SHAPE, "%s: attr nOs does not split the %lld outputs", m->name, (long long)Y->shape[1]);
    for (int64_t g = 0; groups && s == LITHE_OK && g < n; g++) {
        lithe_tensor *view = NULL, *tmp = NULL;
        s = lithe_tensor_slice(Y, 1, start, start + sizes[g], &view);
        if (s == LITHE_OK) s = lithe__tensor_alloc(m->backend, LITHE_F32, 2, (int64_t[]){B, sizes[g]}, false, &tmp);
        if (s == LITHE_OK) s = lithe__op_copy(m->backend, tmp, view);
        if (s == LITHE_OK) s = lithe__op_softmax(m->backend, tmp, 1.0f, tmp);
        if (s == LITHE_OK) s = lithe__op_copy(m->backend, view, tmp);
        lithe_tensor_release(view);
        lithe_tensor_release(tmp);
        start += sizes[g];
    }
    if (s == LITHE_OK && bp) {
        s = lithe__backprop_new(m, sizeof(softmax_bp), multisoftmax_backward, softmax_destroy, bp);
        if (s == LITHE_OK) {
            softmax_bp *r = (softmax_bp *)*bp;
            r->X = lithe_tensor_retain(X);
            r->B = B;
            r->nO = Y->shape[1];
        }
    }
    return lithe__emit_output(s, Y, Yv, bp);
}

static lithe_status multisoftmax_init(lithe_model *m, const lithe_value *X, const lithe_value *Y) {
    (void)Y; /* Thinc's init reads only X */
    return lithe__affine_init(m, X, NULL, LITHE_INIT_ZERO, LITHE_INIT_ZERO, true);
}

static const lithe__layer_type multisoftmax_type = {"MultiSoftmax.v1", multisoftmax_init, multisoftmax_forward, NULL, 0, 0};
const lithe__layer_type *const lithe__softmax_types[] = {&lithe__softmax_type, &softmax_v1_type, &multisoftmax_type, NULL};

lithe_status lithe_multisoftmax(size_t n, const int64_t *nOs, int64_t nI, lithe_model **out) {
    LITHE__CHECK_ARG(out, "lithe_multisoftmax", "out is NULL");
    *out = NULL;
    LITHE__CHECK_ARG(nOs && n > 0, "lithe_multisoftmax", "needs at least one output group");
    int64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (nOs[i] <= 0)
            return lithe__fail(LITHE_ERR_VALUE, "MultiSoftmax.v1: group %zu has %lld outputs (must be >= 1)", i,
                               (long long)nOs[i]);
        total += nOs[i];
    }
    if (nI < 0) return lithe__fail(LITHE_ERR_VALUE, "MultiSoftmax.v1: nI must be >= 0, got %lld", (long long)nI);
    static const char *const dims[] = {"nO", "nI", NULL};
    static const char *const params[] = {"W", "b", NULL};
    lithe_model *m = NULL;
    lithe_tensor *t = NULL;
    LITHE__TRY(lithe__model_new(&multisoftmax_type, "multisoftmax", dims, params, &m));
    m->dims[0].value = total;
    m->dims[1].value = nI;
    lithe_status s = lithe_tensor_from_data(LITHE_I64, 1, (int64_t[]){(int64_t)n}, nOs, &t);
    if (s == LITHE_OK) s = lithe_model_set_attr_tensor(m, "nOs", t);
    lithe_tensor_release(t);
    if (s != LITHE_OK) {
        lithe_model_free(m);
        return s;
    }
    *out = m;
    return LITHE_OK;
}
