/* The WebGPU backend's copies beyond ops_elementwise.c's: N-D strided views (shaders/copy_nd.wgsl:
 * the Transpose, Slice and Concat views of imported graphs). */
#include "webgpu_internal.h"

/* Y = X for views of 4- or 8-byte elements, any strides (axes both walk contiguously merged). */
lithe_status lithe__wg_copy_nd(lithe_backend *be, lithe_tensor *Y, const lithe_tensor *X) {
    size_t es = lithe_dtype_size(X->dtype);
    if ((es != 4 && es != 8) || X->numel != Y->numel || (uint64_t)X->numel * es / 4 >= (1u << 30))
        return lithe__fail(LITHE_ERR_UNSUPPORTED,
                           "webgpu copy: this view layout (%d-D, %zu-byte elements, strided) is not supported yet", X->ndim,
                           es);
    /* Y's row-major walk over X's shape: Y may have another shape of the same numel only when
     * contiguous (then its strides follow X's shape) */
    int64_t shape[LITHE_MAX_DIMS + 1], xs[LITHE_MAX_DIMS + 1], ys[LITHE_MAX_DIMS + 1];
    int nd = 0;
    bool same = X->ndim == Y->ndim;
    for (int d = 0; same && d < X->ndim; d++) same = X->shape[d] == Y->shape[d];
    if (!same && !lithe_tensor_is_contiguous(Y))
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "webgpu copy: a strided destination of another shape");
    int64_t run = 1;
    for (int d = X->ndim - 1; d >= 0; d--) { /* Y's strides when contiguous, in X's shape */
        ys[d] = same ? Y->strides[d] : run;
        run *= X->shape[d];
    }
    for (int d = 0; d < X->ndim; d++) {
        if (X->shape[d] == 1) continue;
        if (nd > 0 && xs[nd - 1] == X->strides[d] * X->shape[d] && ys[nd - 1] == ys[d] * X->shape[d]) {
            shape[nd - 1] *= X->shape[d];
            xs[nd - 1] = X->strides[d];
            ys[nd - 1] = ys[d];
            continue;
        }
        shape[nd] = X->shape[d];
        xs[nd] = X->strides[d];
        ys[nd++] = ys[d];
    }
    if (nd == 0) shape[nd] = 1, xs[nd] = ys[nd] = 1, nd = 1;
    if (es == 8) { /* two words per element: strides in words, an inner axis of 2 */
        for (int d = 0; d < nd; d++) xs[d] *= 2, ys[d] *= 2;
        shape[nd] = 2, xs[nd] = ys[nd] = 1, nd++;
    }
    if (nd > 8) return lithe__fail(LITHE_ERR_UNSUPPORTED, "webgpu copy: %d strided axes (at most 8)", nd);
    lithe__wg_params p = {.u = {(uint32_t)(X->numel * (int64_t)es / 4), (uint32_t)nd}};
    for (int d = 0; d < nd; d++) {
        if (shape[d] >= (1 << 24) || xs[d] < 0 || ys[d] < 0 || xs[d] >= (1u << 30) || ys[d] >= (1u << 30) ||
            (d >= 4 && (xs[d] >= (1 << 24) || ys[d] >= (1 << 24))))
            return lithe__fail(LITHE_ERR_UNSUPPORTED, "webgpu copy: a view's extent or stride is too large");
        p.f[d] = (float)shape[d];
        if (d < 4) {
            p.u[2 + d] = (uint32_t)xs[d];
            p.u[6 + d] = (uint32_t)ys[d];
        } else {
            p.f[4 + d] = (float)xs[d];
            p.f[8 + d] = (float)ys[d];
        }
    }
    return WG_DISPATCH("copy", copy_nd, 0, &p, 1u, lithe__wg_groups((int64_t)p.u[0]), 1, Y, X);
}
