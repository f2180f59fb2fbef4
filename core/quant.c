/* Compact weights: int8 / uint8 tensors with quantization parameters (per tensor, or per row =
 * per output channel), and the dense layers' W stored as float16 / bfloat16 / int8
 * (lithe_model_compress_weights). Decoding here is the reference the CPU GEMM's packing matches. */
#include "internal.h"

#include <math.h>
#include <string.h>

void lithe__quant_free(lithe__quant *q) {
    if (!q) return;
    lithe__free(q->scale);
    lithe__free(q->zero);
    lithe__free(q->wsum);
    lithe__free(q->cpack);
    lithe__free(q->wpack);
    lithe__free(q);
}

bool lithe__is_compact(const lithe_tensor *t) {
    return t && (t->dtype == LITHE_F16 || t->dtype == LITHE_BF16 ||
                 ((t->dtype == LITHE_I8 || t->dtype == LITHE_U8) && t->storage->quant));
}

void lithe__decode_row(const lithe_tensor *t, int64_t row, int64_t off, int64_t K, float *dst) {
    const uint8_t *base = (const uint8_t *)t->storage->data + (size_t)(t->offset + off);
    const lithe__quant *q = t->storage->quant;
    int64_t c = q->axis == 0 ? row : 0;
    const float s = q->scale[c];
    const int32_t z = q->zero[c];
    if (t->dtype == LITHE_I8)
        for (int64_t k = 0; k < K; k++) dst[k] = s * (float)((int32_t)((const int8_t *)base)[k] - z);
    else
        for (int64_t k = 0; k < K; k++) dst[k] = s * (float)((int32_t)base[k] - z);
}

static lithe_status check_params(const lithe_tensor *t, int axis, int64_t n, const float *scale,
                                 const int32_t *zero, const char *fn) {
    if (t->dtype != LITHE_I8 && t->dtype != LITHE_U8)
        return lithe__fail(LITHE_ERR_DTYPE, "%s: quantization parameters need an int8 or uint8 tensor, not %s", fn,
                           lithe_dtype_name(t->dtype));
    if (axis != -1 && axis != 0)
        return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: axis %d (per-tensor -1 or per-row 0 only)", fn, axis);
    if (axis == 0 && t->ndim < 1) return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: a 0-d tensor has no axis 0", fn);
    int64_t want = axis == 0 ? t->shape[0] : 1;
    if (n != want)
        return lithe__fail(LITHE_ERR_SHAPE, "%s: %lld scales / zero points for %s of %lld", fn, (long long)n,
                           axis == 0 ? "an axis-0 extent" : "a per-tensor quantization (needs 1): a count", (long long)want);
    if (n && !scale) return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: scale is NULL", fn);
    const int32_t lo = t->dtype == LITHE_I8 ? -128 : 0, hi = t->dtype == LITHE_I8 ? 127 : 255;
    for (int64_t c = 0; c < n; c++) {
        if (!isfinite(scale[c]) || !(scale[c] > 0.0f))
            return lithe__fail(LITHE_ERR_VALUE, "%s: scale[%lld] is %g; scales must be finite and > 0", fn, (long long)c,
                               (double)scale[c]);
        if (zero && (zero[c] < lo || zero[c] > hi))
            return lithe__fail(LITHE_ERR_VALUE, "%s: zero_point[%lld] is %d, outside %s's range [%d, %d]", fn,
                               (long long)c, (int)zero[c], lithe_dtype_name(t->dtype), (int)lo, (int)hi);
    }
    return LITHE_OK;
}

/* st's parameters replaced by a copy of (axis, n, scale, zero or zeros) */
static lithe_status quant_set(lithe__storage *st, int axis, int64_t n, const float *scale, const int32_t *zero,
                              const char *fn) {
    lithe__quant *q = lithe__calloc(1, sizeof *q);
    size_t m = (size_t)(n ? n : 1);
    if (q) q->scale = lithe__calloc(m, sizeof *q->scale), q->zero = lithe__calloc(m, sizeof *q->zero);
    if (!q || !q->scale || !q->zero) {
        lithe__quant_free(q);
        return lithe__oom(fn, m * 8);
    }
    q->axis = axis;
    q->n = n;
    memcpy(q->scale, scale, (size_t)n * sizeof *scale);
    if (zero) memcpy(q->zero, zero, (size_t)n * sizeof *zero);
    lithe__quant_free(st->quant);
    st->quant = q;
    lithe__storage_touch(st);
    return LITHE_OK;
}

lithe_status lithe_tensor_set_quant_params(lithe_tensor *t, int axis, int64_t n, const float *scale,
                                           const int32_t *zero_point) {
    LITHE__CHECK_ARG(t, "lithe_tensor_set_quant_params", "tensor is NULL");
    LITHE__TRY(check_params(t, axis, n, scale, zero_point, "lithe_tensor_set_quant_params"));
    if (!t->storage->backend->host_memory || !lithe_tensor_is_contiguous(t))
        return lithe__fail(LITHE_ERR_INVALID_ARG, "lithe_tensor_set_quant_params: a contiguous CPU tensor only");
    return quant_set(t->storage, axis, n, scale, zero_point, "lithe_tensor_set_quant_params");
}

lithe_status lithe__quant_copy(const lithe_tensor *src, lithe_tensor *dst) {
    const lithe__quant *q = src->storage->quant;
    if (!q || (src->dtype != LITHE_I8 && src->dtype != LITHE_U8)) return LITHE_OK;
    if (src->offset || (size_t)src->numel * lithe_dtype_size(src->dtype) != src->storage->nbytes)
        return lithe__fail(LITHE_ERR_INVALID_ARG, "a view of part of a quantized tensor cannot be copied with its "
                           "quantization parameters: copy the whole tensor");
    return quant_set(dst->storage, q->axis, q->n, q->scale, q->zero, "lithe_tensor_to_backend");
}

lithe_status lithe_tensor_quant_params(const lithe_tensor *t, int *axis, int64_t *n, const float **scale,
                                       const int32_t **zero_point) {
    LITHE__CHECK_ARG(t, "lithe_tensor_quant_params", "tensor is NULL");
    const lithe__quant *q = t->storage->quant;
    if (!q || (t->dtype != LITHE_I8 && t->dtype != LITHE_U8))
        return lithe__fail(LITHE_ERR_NOT_FOUND, "lithe_tensor_quant_params: a %s tensor without quantization parameters",
                           lithe_dtype_name(t->dtype));
    if (axis) *axis = q->axis;
    if (n) *n = q->n;
    if (scale) *scale = q->scale;
    if (zero_point) *zero_point = q->zero;
    return LITHE_OK;
}

/* A quantized tensor's float32 values (lithe_tensor_cast to float32). */
lithe_status lithe__dequantize(const lithe_tensor *t, lithe_tensor **out) {
    lithe_tensor *y = NULL;
    LITHE__TRY(lithe__tensor_alloc(lithe__backend_host(), LITHE_F32, t->ndim, t->shape, false, &y));
    int64_t rows = t->ndim ? t->shape[0] : 1, per = rows ? t->numel / rows : 0;
    for (int64_t r = 0; r < rows; r++) lithe__decode_row(t, r, r * per, per, (float *)lithe__tdata(y) + r * per);
    *out = y;
    return LITHE_OK;
}

lithe_status lithe__as_f32(const lithe_tensor *t, lithe_tensor **out) {
    if (t->dtype == LITHE_F32) {
        *out = lithe_tensor_retain((lithe_tensor *)t);
        return LITHE_OK;
    }
    return lithe_tensor_cast(t, LITHE_F32, out);
}

/* The layers whose W the CPU GEMM reads compact (core/layers/affine.c's forward). */
static bool dense_layer(const lithe_model *m) {
    static const char *const names[] = {"Linear.v1", "Relu.v1", "Mish.v1", "Swish.v1", "Gelu.v1", "Dish.v1",
                                        "HardSwish.v1", "HardSwishMobilenet.v1", "ClippedLinear.v1",
                                        "HardSigmoid.v1", "HardTanh.v1", "ReluK.v1", "Sigmoid.v1", "Softmax.v1",
                                        "Softmax.v2", "MultiSoftmax.v1"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(m->type->registered_name, names[i])) return true;
    return false;
}

bool lithe__compact_ok(const lithe_model *m) { return dense_layer(m); }

lithe_status lithe_model_compress_weights(lithe_model *m, lithe_dtype dtype, size_t *n_converted) {
    return lithe_model_compress_matching(m, dtype, NULL, n_converted);
}
