/* Making compact weights: lithe_tensor_quantize and lithe_model_compress_matching (core/quant.c
 * holds lithe_model_compress_weights, the same for every dense layer, and what loading and running
 * compact weights needs). Its own file so that the npm package can keep it in
 * its on-demand module (bindings/js/src/importers.c), out of the SIMD core's 400 KB. */
#include "internal.h"

#include <math.h>
#include <string.h>

lithe_status lithe_tensor_quantize(const lithe_tensor *t, lithe_dtype dtype, int axis, lithe_tensor **out) {
    LITHE__CHECK_ARG(out, "lithe_tensor_quantize", "out is NULL");
    *out = NULL;
    LITHE__CHECK_ARG(t, "lithe_tensor_quantize", "tensor is NULL");
    if (t->dtype != LITHE_F32 || (dtype != LITHE_I8 && dtype != LITHE_U8))
        return lithe__fail(LITHE_ERR_DTYPE, "lithe_tensor_quantize: float32 to int8 or uint8 only (got %s to %s)",
                           lithe_dtype_name(t->dtype), lithe_dtype_name(dtype));
    if ((axis != -1 && axis != 0) || (axis == 0 && t->ndim < 1))
        return lithe__fail(LITHE_ERR_INVALID_ARG, "lithe_tensor_quantize: axis %d (-1, or 0 on a tensor of >= 1 dims)", axis);
    if (!t->storage->backend->host_memory || !lithe_tensor_is_contiguous(t))
        return lithe__fail(LITHE_ERR_INVALID_ARG, "lithe_tensor_quantize: a contiguous CPU tensor only");
    const float *x = lithe__tdata(t);
    for (int64_t i = 0; i < t->numel; i++)
        if (!isfinite(x[i]))
            return lithe__fail(LITHE_ERR_VALUE, "lithe_tensor_quantize: element %lld is %g", (long long)i, (double)x[i]);
    const int64_t n = axis == 0 ? t->shape[0] : 1, per = n ? t->numel / n : 0;
    float *scale = lithe__calloc((size_t)(n ? n : 1), sizeof *scale);
    int32_t *zero = lithe__calloc((size_t)(n ? n : 1), sizeof *zero);
    lithe_tensor *q = NULL;
    lithe_status s = scale && zero ? lithe__tensor_alloc(lithe__backend_host(), dtype, t->ndim, t->shape, false, &q)
                                   : lithe__oom("lithe_tensor_quantize", (size_t)n * 8);
    for (int64_t c = 0; s == LITHE_OK && c < n; c++) {
        const float *r = x + c * per;
        float lo = 0.0f, hi = 0.0f;
        for (int64_t k = 0; k < per; k++) lo = r[k] < lo ? r[k] : lo, hi = r[k] > hi ? r[k] : hi;
        if (dtype == LITHE_I8) {
            float amax = fmaxf(-lo, hi);
            scale[c] = amax > 0.0f ? amax / 127.0f : 1.0f;
            int8_t *o = (int8_t *)lithe__tdata(q) + c * per;
            for (int64_t k = 0; k < per; k++) {
                float v = nearbyintf(r[k] / scale[c]);
                o[k] = (int8_t)(v < -127.0f ? -127 : v > 127.0f ? 127 : (int)v);
            }
        } else {
            scale[c] = hi > lo ? (hi - lo) / 255.0f : 1.0f;
            float zf = nearbyintf(-lo / scale[c]);
            zero[c] = (int32_t)(zf < 0.0f ? 0 : zf > 255.0f ? 255 : zf);
            uint8_t *o = (uint8_t *)lithe__tdata(q) + c * per;
            for (int64_t k = 0; k < per; k++) {
                float v = nearbyintf(r[k] / scale[c]) + (float)zero[c];
                o[k] = (uint8_t)(v < 0.0f ? 0 : v > 255.0f ? 255 : (int)v);
            }
        }
        if (!isfinite(scale[c]) || !(scale[c] > 0.0f)) scale[c] = 1.0f; /* subnormal ranges */
    }
    if (s == LITHE_OK) s = lithe_tensor_set_quant_params(q, axis, n, scale, zero);
    lithe__free(scale);
    lithe__free(zero);
    if (s != LITHE_OK) {
        lithe_tensor_release(q);
        return s;
    }
    *out = q;
    return LITHE_OK;
}

lithe_status lithe_model_compress_matching(lithe_model *m, lithe_dtype dtype, const char *pattern,
                                           size_t *n_converted) {
    if (n_converted) *n_converted = 0;
    LITHE__CHECK_ARG(m, "lithe_model_compress_weights", "model is NULL");
    if (dtype != LITHE_F32 && dtype != LITHE_F16 && dtype != LITHE_BF16 && dtype != LITHE_I8)
        return lithe__fail(LITHE_ERR_DTYPE, "lithe_model_compress_weights: %s (float32, float16, bfloat16 or int8)",
                           lithe_dtype_name(dtype));
    size_t n = 0;
    LITHE__TRY(lithe_model_walk(m, NULL, 0, &n));
    lithe_model **nodes = lithe__malloc((n ? n : 1) * sizeof *nodes);
    if (!nodes) return lithe__oom("lithe_model_compress_weights", n * sizeof *nodes);
    lithe_status s = lithe_model_walk(m, nodes, n, &n);
    size_t done = 0, matched = 0;
    for (size_t i = 0; s == LITHE_OK && i < n; i++) {
        lithe__param *p = lithe__model_find_param(nodes[i], "W");
        if (!lithe__compact_ok(nodes[i]) || !p || !p->value || p->value->ndim != 2) continue;
        if (pattern && !lithe__param_matches(nodes[i], "W", pattern)) continue;
        matched++;
        if (p->value->dtype == dtype) continue;
        lithe_tensor *W = p->value, *f = NULL, *c = NULL;
        if (!W->storage->backend->host_memory) {
            s = lithe__fail(LITHE_ERR_UNSUPPORTED, "lithe_model_compress_weights: %s: compact weights live on the CPU "
                                                   "backend only (its W is on '%s')", nodes[i]->name, W->storage->backend->name);
            break;
        }
        s = W->dtype == LITHE_F32 ? (f = lithe_tensor_retain(W), LITHE_OK) : lithe_tensor_cast(W, LITHE_F32, &f);
        if (s == LITHE_OK) {
            if (dtype == LITHE_I8) s = lithe_tensor_quantize(f, LITHE_I8, 0, &c);
            else if (dtype == LITHE_F32) c = lithe_tensor_retain(f);
            else s = lithe_tensor_cast(f, dtype, &c);
        }
        if (s == LITHE_OK && dtype != LITHE_F32)
            for (int64_t k = 0; k < f->numel; k++)
                if (!isfinite(((const float *)lithe__tdata(f))[k])) {
                    s = lithe__fail(LITHE_ERR_VALUE, "lithe_model_compress_weights: %s: W holds %g at %lld", nodes[i]->name,
                                    (double)((const float *)lithe__tdata(f))[k], (long long)k);
                    break;
                }
        if (s == LITHE_OK) s = lithe_model_set_param(nodes[i], "W", c);
        if (s == LITHE_OK) s = lithe_model_set_frozen(nodes[i], "W", dtype != LITHE_F32);
        lithe_tensor_release(f);
        lithe_tensor_release(c);
        if (s == LITHE_OK) done++;
    }
    lithe__free(nodes);
    if (n_converted) *n_converted = done;
    if (s == LITHE_OK && pattern && !matched)
        return lithe__fail(LITHE_ERR_NOT_FOUND, "lithe_model_compress_weights: no dense layer's W of %s matches '%s'",
                           m->name, pattern);
    return s;
}
