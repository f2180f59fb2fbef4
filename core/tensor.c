/* Tensors: descriptors over refcounted storage, views, and DLPack exchange without copies. */
#include "internal.h"
#include "lithe_dlpack.h"

#include <stdio.h>

/* Under AddressSanitizer an idle pool block (host memory) is poisoned: a read through a view
 * that outlived its tensor is reported as if the memory were freed. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LITHE__ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define LITHE__ASAN 1
#endif
#ifdef LITHE__ASAN
#include <sanitizer/asan_interface.h>
#define POOL_POISON(b) do { if ((b)->be->host_memory) ASAN_POISON_MEMORY_REGION((b)->data, (b)->nbytes); } while (0)
#define POOL_UNPOISON(b) do { if ((b)->be->host_memory) ASAN_UNPOISON_MEMORY_REGION((b)->data, (b)->nbytes); } while (0)
#define POOL_POISON_TAIL(b, n) \
    do { if ((b)->be->host_memory && (b)->nbytes > (n)) ASAN_POISON_MEMORY_REGION((char *)(b)->data + (n), (b)->nbytes - (n)); } while (0)
#else
#define POOL_POISON(b) ((void)(b))
#define POOL_UNPOISON(b) ((void)(b))
#define POOL_POISON_TAIL(b, n) ((void)(b), (void)(n))
#endif

size_t lithe_dtype_size(lithe_dtype dtype) {
    switch (dtype) {
    case LITHE_F32: case LITHE_I32: case LITHE_U32: return 4;
    case LITHE_F16: case LITHE_BF16: return 2;
    case LITHE_I64: case LITHE_U64: return 8;
    case LITHE_U8: case LITHE_I8: return 1;
    }
    return 0;
}

const char *lithe_dtype_name(lithe_dtype dtype) {
    switch (dtype) {
    case LITHE_F32: return "float32";
    case LITHE_F16: return "float16";
    case LITHE_BF16: return "bfloat16";
    case LITHE_I32: return "int32";
    case LITHE_I64: return "int64";
    case LITHE_U64: return "uint64";
    case LITHE_U8: return "uint8";
    case LITHE_U32: return "uint32";
    case LITHE_I8: return "int8";
    }
    return "?";
}

const char *lithe__shape_str(const lithe_tensor *t, char *buf, size_t cap) {
    size_t used = 0;
    used += (size_t)snprintf(buf + used, cap - used, "(");
    for (int i = 0; i < t->ndim && used < cap; i++)
        used += (size_t)snprintf(buf + used, cap - used, i ? ", %lld" : "%lld", (long long)t->shape[i]);
    if (used < cap) snprintf(buf + used, cap - used, t->ndim == 1 ? ",)" : ")");
    return buf;
}

bool lithe__same_shape(const lithe_tensor *a, const lithe_tensor *b) {
    if (a->ndim != b->ndim) return false;
    for (int i = 0; i < a->ndim; i++)
        if (a->shape[i] != b->shape[i]) return false;
    return true;
}

static void set_contiguous_strides(lithe_tensor *t) {
    /* With a zero extent the other extents may multiply past int64 (numel is 0 and no stride is
     * ever used): saturate instead of overflowing. Found by fuzz_npy. */
    int64_t s = 1;
    for (int i = t->ndim - 1; i >= 0; i--) {
        t->strides[i] = s;
        if (t->shape[i] && s > INT64_MAX / t->shape[i]) s = INT64_MAX;
        else s *= t->shape[i];
    }
}

/* Validates a shape and computes numel and byte size. */
static lithe_status check_shape(const char *fn, lithe_dtype dtype, int ndim, const int64_t *shape,
                                int64_t *numel, size_t *nbytes) {
    if (lithe_dtype_size(dtype) == 0)
        return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: unknown dtype %d", fn, (int)dtype);
    if (ndim < 0 || ndim > LITHE_MAX_DIMS)
        return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: ndim %d outside 0..%d", fn, ndim, LITHE_MAX_DIMS);
    if (ndim > 0 && !shape) return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: shape is NULL", fn);
    size_t n = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0)
            return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: extent %d is negative (%lld)", fn, i,
                               (long long)shape[i]);
        if (!lithe__mul_size(n, (size_t)shape[i], &n) || n > (size_t)INT64_MAX)
            return lithe__fail(LITHE_ERR_VALUE, "%s: element count overflows", fn);
    }
    size_t bytes;
    if (!lithe__mul_size(n, lithe_dtype_size(dtype), &bytes))
        return lithe__fail(LITHE_ERR_VALUE, "%s: byte size overflows", fn);
    *numel = (int64_t)n;
    *nbytes = bytes;
    return LITHE_OK;
}

static lithe_status storage_new(lithe_backend *be, size_t nbytes, lithe__storage **out) {
    lithe__storage *st = lithe__calloc(1, sizeof *st);
    if (!st) return lithe__oom("tensor", sizeof *st);
    lithe_status s = be->ops->alloc(be, nbytes, &st->data);
    if (s != LITHE_OK) {
        lithe__free(st);
        return s;
    }
    st->refcount = 1;
    st->nbytes = nbytes;
    st->backend = be;
    *out = st;
    return LITHE_OK;
}

static void storage_release(lithe__storage *st);

lithe_status lithe__tensor_wrap_host(lithe_dtype dtype, int ndim, const int64_t *shape, void *data,
                                     void (*release)(void *ctx), void *ctx, lithe_tensor **out) {
    *out = NULL;
    int64_t numel;
    size_t nbytes;
    LITHE__TRY(check_shape("tensor", dtype, ndim, shape, &numel, &nbytes));
    lithe__storage *st = lithe__calloc(1, sizeof *st);
    lithe_tensor *t = lithe__calloc(1, sizeof *t);
    if (!st || !t) {
        lithe__free(st);
        lithe__free(t);
        return lithe__oom("tensor", sizeof *st + sizeof *t);
    }
    st->refcount = 1;
    st->data = data;
    st->nbytes = nbytes;
    st->backend = lithe__backend_host();
    st->release = release;
    st->release_ctx = ctx;
    t->refcount = 1;
    t->storage = st;
    t->dtype = dtype;
    t->ndim = ndim;
    for (int i = 0; i < ndim; i++) t->shape[i] = shape[i];
    t->numel = numel;
    set_contiguous_strides(t);
    *out = t;
    return LITHE_OK;
}

static void storage_release(lithe__storage *st) {
    if (!st || !LITHE__REF_DEC_LAST(st->refcount)) return;
    if (st->prepared) lithe__storage_drop_prepared(st);
    lithe__quant_free(st->quant);
    if (st->release) {
        st->release(st->release_ctx);
    } else if (st->dl_managed) {
        if (st->dl_versioned) {
            DLManagedTensorVersioned *m = st->dl_managed;
            if (m->deleter) m->deleter(m);
        } else {
            DLManagedTensor *m = st->dl_managed;
            if (m->deleter) m->deleter(m);
        }
    } else {
        st->backend->ops->free(st->backend, st->data);
    }
    lithe__free(st);
}

lithe_status lithe__tensor_alloc(lithe_backend *be, lithe_dtype dtype, int ndim,
                                 const int64_t *shape, bool zero, lithe_tensor **out) {
    int64_t numel;
    size_t nbytes;
    LITHE__TRY(check_shape("lithe_tensor_new", dtype, ndim, shape, &numel, &nbytes));
    if (!be) be = lithe__backend_host();
    lithe_tensor *t = lithe__calloc(1, sizeof *t);
    if (!t) return lithe__oom("tensor", sizeof *t);
    lithe_status s = storage_new(be, nbytes, &t->storage);
    if (s != LITHE_OK) {
        lithe__free(t);
        return s;
    }
    t->refcount = 1;
    t->dtype = dtype;
    t->ndim = ndim;
    for (int i = 0; i < ndim; i++) t->shape[i] = shape[i];
    set_contiguous_strides(t);
    t->numel = numel;
    if (zero && nbytes) {
        if (be->host_memory) {
            memset(t->storage->data, 0, nbytes);
        } else {
            s = lithe__op_fill(be, t, 0.0f); /* f32 zero bits are all-zero for every dtype */
            if (s != LITHE_OK) {
                lithe_tensor_release(t);
                return s;
            }
        }
    }
    *out = t;
    return LITHE_OK;
}

lithe_status lithe__tensor_like(const lithe_tensor *t, bool zero, lithe_tensor **out) {
    return lithe__tensor_alloc(t->storage->backend, t->dtype, t->ndim, t->shape, zero, out);
}

lithe_status lithe_tensor_new(lithe_backend *backend, lithe_dtype dtype, int ndim,
                              const int64_t *shape, lithe_tensor **out) {
    LITHE__CHECK_ARG(out, "lithe_tensor_new", "out is NULL");
    *out = NULL;
    return lithe__tensor_alloc(backend, dtype, ndim, shape, true, out);
}

lithe_status lithe_tensor_from_data(lithe_dtype dtype, int ndim, const int64_t *shape,
                                    const void *data, lithe_tensor **out) {
    LITHE__CHECK_ARG(out, "lithe_tensor_from_data", "out is NULL");
    *out = NULL;
    lithe_tensor *t = NULL;
    LITHE__TRY(lithe__tensor_alloc(NULL, dtype, ndim, shape, false, &t));
    size_t nbytes = (size_t)t->numel * lithe_dtype_size(dtype);
    if (nbytes && !data) {
        lithe_tensor_release(t);
        return lithe__fail(LITHE_ERR_INVALID_ARG, "lithe_tensor_from_data: data is NULL");
    }
    if (nbytes) memcpy(t->storage->data, data, nbytes);
    *out = t;
    return LITHE_OK;
}

lithe_tensor *lithe_tensor_retain(lithe_tensor *t) {
    if (t) LITHE__REF_INC(t->refcount);
    return t;
}

void lithe_tensor_release(lithe_tensor *t) {
    if (!t || !LITHE__REF_DEC_LAST(t->refcount)) return;
    storage_release(t->storage);
    lithe__free(t);
}

lithe_dtype lithe_tensor_dtype(const lithe_tensor *t) { return t ? t->dtype : LITHE_F32; }
int lithe_tensor_ndim(const lithe_tensor *t) { return t ? t->ndim : 0; }
const int64_t *lithe_tensor_shape(const lithe_tensor *t) { return t ? t->shape : NULL; }
const int64_t *lithe_tensor_strides(const lithe_tensor *t) { return t ? t->strides : NULL; }
int64_t lithe_tensor_numel(const lithe_tensor *t) { return t ? t->numel : 0; }
lithe_backend *lithe_tensor_backend(const lithe_tensor *t) { return t ? t->storage->backend : NULL; }
void *lithe_tensor_data(const lithe_tensor *t) {
    if (!t || !t->storage->backend->host_memory) return NULL;
    return lithe__tdata(t);
}

bool lithe_tensor_is_contiguous(const lithe_tensor *t) {
    if (!t) return false;
    if (t->numel == 0) return true; /* no element to be out of place (and extents may be huge) */
    int64_t s = 1;
    for (int i = t->ndim - 1; i >= 0; i--) {
        if (t->shape[i] != 1 && t->strides[i] != s) return false;
        s *= t->shape[i]; /* numel > 0 fits int64, so every partial product does */
    }
    return true;
}

/* A descriptor sharing t's storage. */
static lithe_status view_of(const lithe_tensor *t, lithe_tensor **out) {
    lithe_tensor *v = lithe__malloc(sizeof *v);
    if (!v) return lithe__oom("tensor view", sizeof *v);
    *v = *t;
    v->refcount = 1;
    LITHE__REF_INC(v->storage->refcount);
    *out = v;
    return LITHE_OK;
}

lithe_status lithe_tensor_slice(lithe_tensor *t, int axis, int64_t start, int64_t stop,
                                lithe_tensor **out) {
    LITHE__CHECK_ARG(out, "lithe_tensor_slice", "out is NULL");
    *out = NULL;
    LITHE__CHECK_ARG(t, "lithe_tensor_slice", "tensor is NULL");
    if (axis < 0 || axis >= t->ndim)
        return lithe__fail(LITHE_ERR_INVALID_ARG, "lithe_tensor_slice: axis %d outside 0..%d", axis,
                           t->ndim - 1);
    if (start < 0 || start > stop || stop > t->shape[axis])
        return lithe__fail(LITHE_ERR_INVALID_ARG,
                           "lithe_tensor_slice: range [%lld, %lld) outside axis %d of extent %lld",
                           (long long)start, (long long)stop, axis, (long long)t->shape[axis]);
    lithe_tensor *v = NULL;
    LITHE__TRY(view_of(t, &v));
    v->offset += start * t->strides[axis];
    v->shape[axis] = stop - start;
    v->numel = 1;
    for (int i = 0; i < v->ndim; i++)
        if (v->shape[i] == 0) v->numel = 0;
    for (int i = 0; v->numel && i < v->ndim; i++) v->numel *= v->shape[i]; /* <= the parent's numel */
    *out = v;
    return LITHE_OK;
}

lithe_status lithe_tensor_reshape(lithe_tensor *t, int ndim, const int64_t *shape,
                                  lithe_tensor **out) {
    LITHE__CHECK_ARG(out, "lithe_tensor_reshape", "out is NULL");
    *out = NULL;
    LITHE__CHECK_ARG(t, "lithe_tensor_reshape", "tensor is NULL");
    if (ndim < 0 || ndim > LITHE_MAX_DIMS || (ndim > 0 && !shape))
        return lithe__fail(LITHE_ERR_INVALID_ARG, "lithe_tensor_reshape: bad ndim %d or NULL shape", ndim);
    if (!lithe_tensor_is_contiguous(t))
        return lithe__fail(LITHE_ERR_SHAPE, "lithe_tensor_reshape: tensor is not contiguous");
    int64_t known = 1;
    int infer = -1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] == -1) {
            if (infer >= 0)
                return lithe__fail(LITHE_ERR_INVALID_ARG, "lithe_tensor_reshape: more than one -1 extent");
            infer = i;
        } else if (shape[i] < 0) {
            return lithe__fail(LITHE_ERR_INVALID_ARG, "lithe_tensor_reshape: extent %lld",
                               (long long)shape[i]);
        } else if (shape[i] && known > INT64_MAX / shape[i]) {
            return lithe__fail(LITHE_ERR_SHAPE, "lithe_tensor_reshape: the new shape's element count overflows");
        } else {
            known *= shape[i];
        }
    }
    int64_t inferred = 0;
    if (infer >= 0) {
        if (known == 0 || t->numel % known)
            return lithe__fail(LITHE_ERR_SHAPE, "lithe_tensor_reshape: cannot infer -1 for %lld elements",
                               (long long)t->numel);
        inferred = t->numel / known;
        known *= inferred;
    }
    if (known != t->numel) {
        char b[LITHE__SHAPE_BUF];
        return lithe__fail(LITHE_ERR_SHAPE, "lithe_tensor_reshape: %s has %lld elements, new shape %lld",
                           lithe__shape_str(t, b, sizeof b), (long long)t->numel, (long long)known);
    }
    lithe_tensor *v = NULL;
    LITHE__TRY(view_of(t, &v));
    v->ndim = ndim;
    for (int i = 0; i < ndim; i++) v->shape[i] = i == infer ? inferred : shape[i];
    set_contiguous_strides(v);
    *out = v;
    return LITHE_OK;
}

lithe_status lithe_tensor_cast(const lithe_tensor *t, lithe_dtype dtype, lithe_tensor **out) {
    LITHE__CHECK_ARG(out, "lithe_tensor_cast", "out is NULL");
    *out = NULL;
    LITHE__CHECK_ARG(t, "lithe_tensor_cast", "tensor is NULL");
    if (dtype != LITHE_F32 && t->dtype != LITHE_F32)
        return lithe__fail(LITHE_ERR_DTYPE, "lithe_tensor_cast: %s to %s is not supported (one side must be float32)",
                           lithe_dtype_name(t->dtype), lithe_dtype_name(dtype));
    if (dtype == LITHE_F32 && (t->dtype == LITHE_I8 || t->dtype == LITHE_U8) && t->storage->quant)
        return lithe__dequantize(t, out); /* quantized weights: scale * (q - zero_point) */
    if (dtype == LITHE_U64 || t->dtype == LITHE_U64 || dtype == LITHE_U32 || t->dtype == LITHE_U32)
        return lithe__fail(LITHE_ERR_DTYPE, "lithe_tensor_cast: %s holds ids or hash keys; it does not convert to float32",
                           lithe_dtype_name(dtype == LITHE_F32 ? t->dtype : dtype));
    lithe_tensor *src = (lithe_tensor *)t, *tmp = NULL, *y = NULL;
    lithe_backend *be = t->storage->backend;
    if (!lithe_tensor_is_contiguous(t)) {
        LITHE__TRY(lithe__tensor_like(t, false, &tmp));
        lithe_status s = lithe__op_copy(be, tmp, t);
        if (s != LITHE_OK) { lithe_tensor_release(tmp); return s; }
        src = tmp;
    }
    lithe_status s = lithe__tensor_alloc(be, dtype, t->ndim, t->shape, false, &y);
    if (s == LITHE_OK) s = lithe__op_cast(be, y, src);
    lithe_tensor_release(tmp);
    if (s != LITHE_OK) { lithe_tensor_release(y); return s; }
    *out = y;
    return LITHE_OK;
}

/* Row-major element copy between a possibly strided tensor and a packed host buffer, a row (the
 * last axis) at a time: one memcpy when the row is contiguous (a Slice, most Transposes), a strided
 * loop otherwise. */
static void strided_copy(char *packed, char *base, const lithe_tensor *t, size_t es, bool to_packed) {
    int nd = t->ndim;
    if (nd == 0) {
        if (to_packed) memcpy(packed, base, es);
        else memcpy(base, packed, es);
        return;
    }
    int64_t inner = t->shape[nd - 1], ist = t->strides[nd - 1], rows = inner ? t->numel / inner : 0;
    int64_t idx[LITHE_MAX_DIMS] = {0};
    for (int64_t r = 0; r < rows; r++) {
        int64_t off = 0;
        for (int d = 0; d < nd - 1; d++) off += idx[d] * t->strides[d];
        char *p = packed + (size_t)(r * inner) * es, *b = base + off * (int64_t)es;
        if (ist == 1) {
            if (to_packed) memcpy(p, b, (size_t)inner * es);
            else memcpy(b, p, (size_t)inner * es);
        } else if (es == 4) { /* float32 / int32: fixed-size copies (a buffer may be unaligned) */
            if (to_packed)
                for (int64_t j = 0; j < inner; j++) memcpy(p + 4 * j, b + 4 * j * ist, 4);
            else
                for (int64_t j = 0; j < inner; j++) memcpy(b + 4 * j * ist, p + 4 * j, 4);
        } else {
            for (int64_t j = 0; j < inner; j++) {
                if (to_packed) memcpy(p + (size_t)j * es, b + j * ist * (int64_t)es, es);
                else memcpy(b + j * ist * (int64_t)es, p + (size_t)j * es, es);
            }
        }
        for (int d = nd - 2; d >= 0; d--) {
            if (++idx[d] < t->shape[d]) break;
            idx[d] = 0;
        }
    }
}

lithe_status lithe_tensor_read(const lithe_tensor *t, void *dst, size_t cap) {
    LITHE__CHECK_ARG(t && dst, "lithe_tensor_read", "tensor or destination is NULL");
    size_t es = lithe_dtype_size(t->dtype), nbytes = (size_t)t->numel * es;
    if (cap < nbytes)
        return lithe__fail(LITHE_ERR_VALUE, "lithe_tensor_read: buffer of %zu bytes, tensor needs %zu", cap, nbytes);
    lithe_backend *be = t->storage->backend;
    if (be->host_memory) {
        if (lithe_tensor_is_contiguous(t)) memcpy(dst, lithe__tdata(t), nbytes);
        else strided_copy(dst, lithe__tdata(t), t, es, true);
        return LITHE_OK;
    }
    if (!lithe_tensor_is_contiguous(t)) {
        /* a strided view on a device: packed by the backend's copy, then read */
        lithe_tensor *tmp = NULL;
        LITHE__TRY(lithe__tensor_like(t, false, &tmp));
        lithe_status s = lithe__op_copy(be, tmp, t);
        if (s == LITHE_OK) s = be->ops->download(be, dst, tmp->storage->data, 0, nbytes);
        lithe_tensor_release(tmp);
        return s;
    }
    return be->ops->download(be, dst, t->storage->data, (size_t)t->offset * es, nbytes);
}

lithe_status lithe_tensor_write(lithe_tensor *t, const void *src, size_t nbytes) {
    LITHE__CHECK_ARG(t && (src || !nbytes), "lithe_tensor_write", "tensor or source is NULL");
    size_t es = lithe_dtype_size(t->dtype), need = (size_t)t->numel * es;
    if (nbytes != need)
        return lithe__fail(LITHE_ERR_VALUE, "lithe_tensor_write: %zu bytes given, tensor holds %zu", nbytes, need);
    lithe_backend *be = t->storage->backend;
    if (!nbytes) return LITHE_OK;
    lithe__storage_touch(t->storage); /* prepared forms of the old values go */
    if (be->host_memory) {
        if (lithe_tensor_is_contiguous(t)) memcpy(lithe__tdata(t), src, nbytes);
        else strided_copy((char *)src, lithe__tdata(t), t, es, false);
        return LITHE_OK;
    }
    if (!lithe_tensor_is_contiguous(t)) {
        /* a strided view on a device: uploaded packed, then scattered by the backend's copy */
        lithe_tensor *tmp = NULL;
        LITHE__TRY(lithe__tensor_like(t, false, &tmp));
        lithe_status s = be->ops->upload(be, tmp->storage->data, 0, src, nbytes);
        if (s == LITHE_OK) s = lithe__op_copy(be, t, tmp);
        lithe_tensor_release(tmp);
        return s;
    }
    return be->ops->upload(be, t->storage->data, (size_t)t->offset * es, src, nbytes);
}

lithe_status lithe_tensor_to_backend(const lithe_tensor *t, lithe_backend *backend, lithe_tensor **out) {
    LITHE__CHECK_ARG(out, "lithe_tensor_to_backend", "out is NULL");
    *out = NULL;
    LITHE__CHECK_ARG(t, "lithe_tensor_to_backend", "tensor is NULL");
    if (!backend) backend = lithe__backend_host();
    lithe_tensor *n = NULL;
    LITHE__TRY(lithe__tensor_alloc(backend, t->dtype, t->ndim, t->shape, false, &n));
    size_t nbytes = (size_t)t->numel * lithe_dtype_size(t->dtype);
    lithe_status s = LITHE_OK;
    if (backend->host_memory) {
        s = lithe_tensor_read(t, lithe__tdata(n), nbytes); /* device -> host: one download */
    } else if (t->storage->backend->host_memory && lithe_tensor_is_contiguous(t)) {
        s = lithe_tensor_write(n, lithe__tdata(t), nbytes); /* host -> device: one upload */
    } else if (nbytes) {
        /* between two devices (or from a strided host view): through a packed host buffer */
        void *host = lithe__malloc(nbytes);
        s = host ? lithe_tensor_read(t, host, nbytes) : lithe__oom("lithe_tensor_to_backend", nbytes);
        if (s == LITHE_OK) s = lithe_tensor_write(n, host, nbytes);
        lithe__free(host);
    }
    if (s == LITHE_OK) s = lithe__quant_copy(t, n); /* an int8 weight keeps its scales on every backend */
    if (s != LITHE_OK) {
        lithe_tensor_release(n);
        return s;
    }
    *out = n;
    return LITHE_OK;
}

/* ---- DLPack ---- */

static bool dtype_from_dl(DLDataType d, lithe_dtype *out) {
    if (d.lanes != 1) return false;
    if (d.code == kDLFloat && d.bits == 32) *out = LITHE_F32;
    else if (d.code == kDLFloat && d.bits == 16) *out = LITHE_F16;
    else if (d.code == kDLBfloat && d.bits == 16) *out = LITHE_BF16;
    else if (d.code == kDLInt && d.bits == 32) *out = LITHE_I32;
    else if (d.code == kDLInt && d.bits == 64) *out = LITHE_I64;
    else if (d.code == kDLInt && d.bits == 8) *out = LITHE_I8;
    else if (d.code == kDLUInt && d.bits == 64) *out = LITHE_U64;
    else if (d.code == kDLUInt && d.bits == 8) *out = LITHE_U8;
    else if (d.code == kDLUInt && d.bits == 32) *out = LITHE_U32;
    else return false;
    return true;
}

static DLDataType dtype_to_dl(lithe_dtype t) {
    DLDataType d = {kDLFloat, 32, 1};
    switch (t) {
    case LITHE_F32: break;
    case LITHE_F16: d.bits = 16; break;
    case LITHE_BF16: d.code = kDLBfloat; d.bits = 16; break;
    case LITHE_I32: d.code = kDLInt; break;
    case LITHE_I64: d.code = kDLInt; d.bits = 64; break;
    case LITHE_I8: d.code = kDLInt; d.bits = 8; break;
    case LITHE_U64: d.code = kDLUInt; d.bits = 64; break;
    case LITHE_U8: d.code = kDLUInt; d.bits = 8; break;
    case LITHE_U32: d.code = kDLUInt; break;
    }
    return d;
}

lithe_status lithe_tensor_from_dlpack(void *managed, bool versioned, lithe_tensor **out) {
    LITHE__CHECK_ARG(out, "lithe_tensor_from_dlpack", "out is NULL");
    *out = NULL;
    LITHE__CHECK_ARG(managed, "lithe_tensor_from_dlpack", "managed tensor is NULL");
    const DLTensor *dl;
    if (versioned) {
        DLManagedTensorVersioned *m = managed;
        if (m->version.major != 1)
            return lithe__fail(LITHE_ERR_UNSUPPORTED, "lithe_tensor_from_dlpack: DLPack major version %u (lithe reads 1)",
                               m->version.major);
        if (m->flags & DLPACK_FLAG_BITMASK_READ_ONLY)
            return lithe__fail(LITHE_ERR_UNSUPPORTED,
                               "lithe_tensor_from_dlpack: read-only tensors are refused (lithe updates tensors in place)");
        dl = &m->dl_tensor;
    } else {
        dl = &((DLManagedTensor *)managed)->dl_tensor;
    }
    lithe_backend *be = lithe__backend_host();
    if (dl->device.device_type != kDLCPU && dl->device.device_type != kDLCUDAHost) {
        /* zero-copy on the backend that shares this device's memory ("cuda:<device_id>"); the
         * producer has made the data ready for that backend's stream (lithe_backend_stream) */
        lithe_status s = lithe__backend_for_dl_device((int)dl->device.device_type, (int)dl->device.device_id, &be);
        if (s != LITHE_OK && s != LITHE_ERR_NOT_FOUND) return s;
        if (s == LITHE_ERR_NOT_FOUND) {
            if (dl->device.device_type == kDLCUDA)
                return lithe__fail(LITHE_ERR_UNSUPPORTED, "lithe_tensor_from_dlpack: a CUDA tensor, but this library "
                                                          "was built without the CUDA backend");
            return lithe__fail(LITHE_ERR_UNSUPPORTED,
                               "lithe_tensor_from_dlpack: device type %d (host memory and CUDA only)",
                               (int)dl->device.device_type);
        }
    }
    lithe_dtype dt;
    if (!dtype_from_dl(dl->dtype, &dt))
        return lithe__fail(LITHE_ERR_DTYPE, "lithe_tensor_from_dlpack: DLPack dtype code %u bits %u lanes %u has no lithe dtype",
                           dl->dtype.code, dl->dtype.bits, dl->dtype.lanes);
    if (dl->ndim < 0 || dl->ndim > LITHE_MAX_DIMS || (dl->ndim > 0 && !dl->shape))
        return lithe__fail(LITHE_ERR_SHAPE, "lithe_tensor_from_dlpack: ndim %d outside 0..%d", dl->ndim, LITHE_MAX_DIMS);
    size_t es = lithe_dtype_size(dt);
    if (dl->byte_offset % es)
        return lithe__fail(LITHE_ERR_FORMAT, "lithe_tensor_from_dlpack: byte_offset %llu is not a multiple of %zu",
                           (unsigned long long)dl->byte_offset, es);
    int64_t numel;
    size_t nbytes;
    LITHE__TRY(check_shape("lithe_tensor_from_dlpack", dt, dl->ndim, dl->shape, &numel, &nbytes));
    if (numel && !dl->data) return lithe__fail(LITHE_ERR_FORMAT, "lithe_tensor_from_dlpack: data is NULL");

    lithe_tensor *t = lithe__calloc(1, sizeof *t);
    lithe__storage *st = lithe__calloc(1, sizeof *st);
    if (!t || !st) {
        lithe__free(t);
        lithe__free(st);
        return lithe__oom("lithe_tensor_from_dlpack", sizeof *t + sizeof *st);
    }
    st->refcount = 1;
    st->data = dl->data;
    st->nbytes = 0; /* unknown: borrowed */
    st->backend = be;
    st->dl_managed = managed;
    st->dl_versioned = versioned;
    t->refcount = 1;
    t->storage = st;
    t->dtype = dt;
    t->ndim = dl->ndim;
    t->numel = numel;
    t->offset = (int64_t)(dl->byte_offset / es);
    for (int i = 0; i < dl->ndim; i++) t->shape[i] = dl->shape[i];
    if (dl->strides) {
        for (int i = 0; i < dl->ndim; i++) t->strides[i] = dl->strides[i];
    } else {
        set_contiguous_strides(t);
    }
    *out = t;
    return LITHE_OK;
}

lithe_status lithe_tensor_dlpack_device(const lithe_tensor *t, int32_t *device_type, int32_t *device_id) {
    if (device_type) *device_type = 0;
    if (device_id) *device_id = 0;
    LITHE__CHECK_ARG(device_type && device_id, "lithe_tensor_dlpack_device", "an out pointer is NULL");
    LITHE__CHECK_ARG(t, "lithe_tensor_dlpack_device", "tensor is NULL");
    const lithe_backend *be = t->storage->backend;
    if (be->host_memory) *device_type = kDLCPU;
    else if (be->dl_device_type) {
        *device_type = be->dl_device_type;
        *device_id = be->dl_device_id;
    } else
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "lithe_tensor_dlpack_device: backend '%s' has no DLPack device type",
                           be->name);
    return LITHE_OK;
}

/* What a managed tensor made by lithe carries: the retained tensor and copies of its shape
 * and strides (DLPack borrows these arrays for the managed tensor's lifetime). */
typedef struct dl_ctx {
    lithe_tensor *t;
    int64_t shape[LITHE_MAX_DIMS];
    int64_t strides[LITHE_MAX_DIMS];
} dl_ctx;

static void dl_deleter(DLManagedTensor *self) {
    dl_ctx *c = self->manager_ctx;
    lithe_tensor_release(c->t);
    lithe__free(c);
    lithe__free(self);
}

static void dl_deleter_versioned(DLManagedTensorVersioned *self) {
    dl_ctx *c = self->manager_ctx;
    lithe_tensor_release(c->t);
    lithe__free(c);
    lithe__free(self);
}

lithe_status lithe_tensor_to_dlpack(lithe_tensor *t, bool versioned, void **managed_out) {
    LITHE__CHECK_ARG(managed_out, "lithe_tensor_to_dlpack", "out is NULL");
    *managed_out = NULL;
    LITHE__CHECK_ARG(t, "lithe_tensor_to_dlpack", "tensor is NULL");
    const lithe_backend *be = t->storage->backend;
    if (!be->host_memory && !be->desc->get_device)
        return lithe__fail(LITHE_ERR_UNSUPPORTED,
                           "lithe_tensor_to_dlpack: tensor lives in the device memory of backend '%s'; export a host "
                           "copy instead (lithe_tensor_to_backend(t, NULL, &copy))",
                           be->name);
    dl_ctx *c = lithe__calloc(1, sizeof *c);
    void *m = lithe__calloc(1, versioned ? sizeof(DLManagedTensorVersioned) : sizeof(DLManagedTensor));
    if (!c || !m) {
        lithe__free(c);
        lithe__free(m);
        return lithe__oom("lithe_tensor_to_dlpack", sizeof *c);
    }
    c->t = lithe_tensor_retain(t);
    for (int i = 0; i < t->ndim; i++) {
        c->shape[i] = t->shape[i];
        c->strides[i] = t->strides[i];
    }
    DLTensor dl;
    /* data points at the first element and byte_offset is 0: older consumers (PyTorch 1.x)
     * ignore byte_offset. */
    dl.data = lithe__tdata(t);
    dl.device = be->host_memory ? (DLDevice){kDLCPU, 0} : (DLDevice){(DLDeviceType)be->dl_device_type, be->dl_device_id};
    dl.ndim = t->ndim;
    dl.dtype = dtype_to_dl(t->dtype);
    dl.shape = c->shape;
    dl.strides = c->strides;
    dl.byte_offset = 0;
    if (versioned) {
        DLManagedTensorVersioned *v = m;
        v->version = (DLPackVersion){1, 0};
        v->manager_ctx = c;
        v->deleter = dl_deleter_versioned;
        v->flags = 0;
        v->dl_tensor = dl;
    } else {
        DLManagedTensor *v = m;
        v->manager_ctx = c;
        v->deleter = dl_deleter;
        v->dl_tensor = dl;
    }
    *managed_out = m;
    return LITHE_OK;
}

/* ------------------------------------------------------------------------------------------
 * Buffer pools: storages whose memory goes back to the pool, not to the backend, when the last
 * view goes; a later request of the same backend takes it again: at its own byte size, or, while
 * it came back during the current run (lithe__bufpool_epoch), at down to a quarter of it.
 * ---------------------------------------------------------------------------------------- */

typedef struct pool_block {
    lithe__bufpool *pool;
    lithe_backend *be;
    void *data;
    size_t nbytes;
    struct pool_block *next; /* in the idle list */
} pool_block;

struct lithe__bufpool {
    int refs;    /* the owner's (until lithe__bufpool_close) + one per block in use */
    bool closed; /* blocks coming back are freed */
    pool_block *recent, *idle; /* idle blocks back since lithe__bufpool_epoch, and earlier ones; the
                                * last to come back first in each */
    lithe__bufpool_stats stats;
};

void lithe__bufpool_epoch(lithe__bufpool *p) {
    if (!p || !p->recent) return;
    pool_block *t = p->recent; /* recent ones go in front of the earlier ones, in their order */
    while (t->next) t = t->next;
    t->next = p->idle;
    p->idle = p->recent;
    p->recent = NULL;
}

lithe_status lithe__bufpool_new(lithe__bufpool **out) {
    *out = lithe__calloc(1, sizeof **out);
    if (!*out) return lithe__oom("buffer pool", sizeof **out);
    (*out)->refs = 1;
    return LITHE_OK;
}

static void block_free(pool_block *b) {
    POOL_UNPOISON(b);
    b->be->ops->free(b->be, b->data);
    lithe__free(b);
}

static void pool_unref(lithe__bufpool *p) {
    if (--p->refs > 0) return;
    lithe__free(p);
}

void lithe__bufpool_trim(lithe__bufpool *p) {
    if (!p) return;
    lithe__bufpool_epoch(p); /* every idle block on one list */
    while (p->idle) {
        pool_block *b = p->idle;
        p->idle = b->next;
        p->stats.bytes -= b->nbytes;
        p->stats.blocks--;
        block_free(b);
    }
}

void lithe__bufpool_close(lithe__bufpool *p) {
    if (!p) return;
    p->closed = true;
    lithe__bufpool_trim(p);
    pool_unref(p);
}

static void pool_put(void *ctx) {
    pool_block *b = ctx;
    lithe__bufpool *p = b->pool;
    p->stats.in_use--;
    if (p->closed) {
        p->stats.bytes -= b->nbytes;
        p->stats.blocks--;
        block_free(b);
    } else {
        POOL_POISON(b);
        b->next = p->recent;
        p->recent = b;
    }
    pool_unref(p);
}

lithe__bufpool_stats lithe__bufpool_get_stats(const lithe__bufpool *p) {
    lithe__bufpool_stats s = {0};
    return p ? p->stats : s;
}

lithe_status lithe__bufpool_tensor(lithe__bufpool *p, lithe_backend *be, lithe_dtype dtype, int ndim,
                                   const int64_t *shape, bool zero, lithe_tensor **out) {
    *out = NULL;
    if (!be) be = lithe__backend_host();
    int64_t numel;
    size_t nbytes;
    LITHE__TRY(check_shape("lithe_tensor_new", dtype, ndim, shape, &numel, &nbytes));
    if (!p || p->closed || nbytes == 0) return lithe__tensor_alloc(be, dtype, ndim, shape, zero, out);
    /* The block that came back last among those of this backend that fit: of the same size, or,
     * when it came back in this epoch (lithe__bufpool_epoch: since the graph's run began), up to
     * four times the size. Such a block was written or read a moment ago, so it is still in cache,
     * where an idle block of the exact size may not have been touched since the last run: mobilenet_v2
     * writes most of its outputs into blocks of sizes it has not used earlier in the run (1.2 MB
     * after 1.6 MB and 4.8 MB ones ...), and writing them cold cost about 300 us of 9 ms (the first
     * depthwise layer of each shape 20-30 us more than the next ones of that shape); up to twice the
     * size gained 255 us, four times 170 us more (and held 17.8 -> 14.3 -> 10.6 MB). Stable: blocks
     * from earlier epochs are taken only at their exact size, so an epoch that repeats the last
     * one's requests finds the blocks of the same sizes in the same order, and takes no fresh one.
     * (Two lists rather than a return stamp per block: a larger pool_block moved the blocks' data
     * in the heap, and the transformer's attention Transpose ran 2.9 -> 4.8 us on the new offsets.) */
    pool_block **link = &p->recent, *b = NULL;
    for (; *link; link = &(*link)->next)
        if ((*link)->be == be && (*link)->nbytes >= nbytes && (*link)->nbytes / 4 <= nbytes) break;
    if (!*link)
        for (link = &p->idle; *link; link = &(*link)->next)
            if ((*link)->be == be && (*link)->nbytes == nbytes) break;
    lithe_tensor *t = lithe__calloc(1, sizeof *t);
    lithe__storage *st = lithe__calloc(1, sizeof *st);
    if (!t || !st) {
        lithe__free(t);
        lithe__free(st);
        return lithe__oom("tensor", sizeof *t + sizeof *st);
    }
    if (*link) { /* an idle block that fits */
        b = *link;
        *link = b->next;
        POOL_UNPOISON(b);
        /* a block larger than the request: its tail stays poisoned, so an overrun is still caught */
        POOL_POISON_TAIL(b, nbytes);
        p->stats.reused++;
    } else {
        b = lithe__calloc(1, sizeof *b);
        /* a pool's block is long-lived (it serves every later run of its size): made as a persistent
         * allocation, it takes no block the backend keeps for the kernels' transient workspaces —
         * taking those, the first training step's pool emptied the CPU cache's lists of the sizes the
         * convolutions' per-image workspaces use, and the second step took fresh ones (mobilenet_v2:
         * 11 blocks in step 2, none after) */
        bool pers = be->desc && be->desc->persistent_allocs;
        if (pers) be->desc->persistent_allocs(true);
        lithe_status s = b ? be->ops->alloc(be, nbytes, &b->data) : lithe__oom("buffer pool", sizeof *b);
        if (pers) be->desc->persistent_allocs(false);
        if (s != LITHE_OK) {
            lithe__free(b);
            lithe__free(t);
            lithe__free(st);
            return s;
        }
        b->pool = p;
        b->be = be;
        b->nbytes = nbytes;
        p->stats.fresh++;
        p->stats.blocks++;
        p->stats.bytes += nbytes;
    }
    b->next = NULL;
    p->refs++;
    p->stats.in_use++;
    st->refcount = 1;
    st->data = b->data;
    st->nbytes = nbytes;
    st->backend = be;
    st->release = pool_put;
    st->release_ctx = b;
    t->refcount = 1;
    t->storage = st;
    t->dtype = dtype;
    t->ndim = ndim;
    for (int i = 0; i < ndim; i++) t->shape[i] = shape[i];
    set_contiguous_strides(t);
    t->numel = numel;
    if (zero) {
        lithe_status s = LITHE_OK;
        if (be->host_memory) memset(st->data, 0, nbytes);
        else s = lithe__op_fill(be, t, 0.0f);
        if (s != LITHE_OK) {
            lithe_tensor_release(t);
            return s;
        }
    }
    *out = t;
    return LITHE_OK;
}
