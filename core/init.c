/* Thinc's weight initializers (thinc/initializers.py) over lithe's Philox stream. The numbers
 * differ from numpy's generator — no RNG is shared with Thinc — but the distributions and their
 * scales are Thinc's, including which dims the fan formulas read. */
#include "internal.h"

#include <math.h>

lithe_status lithe_init_fill(lithe_init kind, lithe_rng *rng, int ndim, const int64_t *shape, float *out) {
    LITHE__CHECK_ARG(rng, "lithe_init_fill", "rng is NULL");
    LITHE__CHECK_ARG(shape, "lithe_init_fill", "shape is NULL");
    LITHE__CHECK_ARG(out, "lithe_init_fill", "out is NULL");
    if (ndim < 1 || ndim > LITHE_MAX_DIMS)
        return lithe__fail(LITHE_ERR_INVALID_ARG, "lithe_init_fill: ndim %d outside [1, %d]", ndim, LITHE_MAX_DIMS);
    size_t n = 1;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] < 0) return lithe__fail(LITHE_ERR_INVALID_ARG, "lithe_init_fill: extent %d is negative", d);
        n *= (size_t)shape[d];
    }
    /* Thinc reads shape[0] and shape[1]; a 1-D shape has only shape[0] */
    double d0 = (double)shape[0], d1 = ndim > 1 ? (double)shape[1] : (double)shape[0];
    double scale = 0.0;
    bool normal = false;
    switch (kind) {
    case LITHE_INIT_GLOROT_UNIFORM: scale = sqrt(6.0 / (d0 + d1)); break;
    case LITHE_INIT_GLOROT_NORMAL: scale = sqrt(2.0 / (d0 + d1)); normal = true; break;
    case LITHE_INIT_HE_UNIFORM: scale = sqrt(6.0 / d1); break;
    case LITHE_INIT_HE_NORMAL: scale = sqrt(2.0 / d1); normal = true; break;
    case LITHE_INIT_LECUN_UNIFORM: scale = sqrt(3.0 / d1); break;
    case LITHE_INIT_LECUN_NORMAL: scale = sqrt(1.0 / d1); normal = true; break;
    case LITHE_INIT_UNIFORM: scale = 0.1; break;
    case LITHE_INIT_ZERO:
    case LITHE_INIT_NORMAL: /* Thinc's normal_init(mean=0) draws with scale 0: zeros */
        for (size_t i = 0; i < n; i++) out[i] = 0.0f;
        return LITHE_OK;
    case LITHE_INIT_DEFAULT:
    default:
        return lithe__fail(LITHE_ERR_VALUE, "lithe_init_fill: initializer %d is not a concrete kind", (int)kind);
    }
    if (n == 0) return LITHE_OK;
    if (!isfinite(scale))
        return lithe__fail(LITHE_ERR_VALUE, "lithe_init_fill: a fan dim is 0 in shape (%lld, %lld)", (long long)d0,
                           (long long)d1);
    if (normal) {
        lithe_rng_normal(rng, out, n);
        for (size_t i = 0; i < n; i++) out[i] = (float)(out[i] * scale);
    } else {
        lithe_rng_uniform(rng, out, n);
        for (size_t i = 0; i < n; i++) out[i] = (float)(-scale + 2.0 * scale * out[i]);
    }
    return LITHE_OK;
}

lithe_status lithe__param_init(lithe_model *m, const char *name, lithe_init kind, int ndim, const int64_t *shape) {
    lithe_tensor *t = NULL;
    LITHE__TRY(lithe__tensor_alloc(m->backend, LITHE_F32, ndim, shape, true, &t));
    lithe_status s = LITHE_OK;
    if (kind != LITHE_INIT_ZERO) {
        size_t n = (size_t)t->numel;
        float *host = lithe__malloc(n ? n * sizeof *host : 1);
        if (!host) s = lithe__oom(m->name, n * sizeof *host);
        if (s == LITHE_OK) s = lithe_init_fill(kind, &m->rng, ndim, shape, host);
        if (s == LITHE_OK) s = lithe_tensor_write(t, host, n * sizeof *host);
        lithe__free(host);
    }
    if (s == LITHE_OK) s = lithe_model_set_param(m, name, t);
    lithe_tensor_release(t);
    return s;
}
