/* The WebGPU backend (docs/backends.md, "WebGPU"): its description, memory (a buffer pool over
 * the JS recorder's GPUBuffers), the dispatch helper the primitive files share and the table.
 * Built only into the npm package's WebGPU module (preset wasm-webgpu): the JS side
 * (bindings/js/src/webgpu.js) provides the imports of webgpu_internal.h. */
#include "webgpu_internal.h"

#include <stdio.h>

/* ---- memory: a pool of buffers by power-of-two size class ---- */

static int size_class(size_t nbytes) {
    int k = 0;
    while (k < LITHE__WG_CLASSES - 1 && ((size_t)256 << k) < nbytes) k++;
    return k;
}

static lithe_status import_error(const char *what) {
    char msg[256];
    lithe__wg_last_error(msg, sizeof msg);
    return lithe__fail(LITHE_ERR_UNSUPPORTED, "webgpu %s: %s", what, msg);
}

static lithe_status wg_alloc(lithe_backend *be, size_t nbytes, void **out) {
    lithe__wg *wg = lithe__wg_of(be);
    *out = NULL;
    if (nbytes > ((size_t)1 << 30))
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "webgpu: an allocation of %zu bytes exceeds the 1 GiB buffer limit",
                           nbytes);
    int k = size_class(nbytes ? nbytes : 1);
    if (wg->pool_n[k]) {
        *out = wg->pool[k][--wg->pool_n[k]];
        return LITHE_OK;
    }
    lithe__wg_buf *b = lithe__calloc(1, sizeof *b);
    if (!b) return lithe__oom("webgpu buffer", sizeof *b);
    b->bytes = (uint32_t)256 << k;
    b->id = lithe__wg_buffer_create(b->bytes);
    if (!b->id) {
        lithe__free(b);
        return import_error("buffer");
    }
    wg->n_buffers++;
    *out = b;
    return LITHE_OK;
}

static void wg_free(lithe_backend *be, void *ptr) {
    lithe__wg *wg = lithe__wg_of(be);
    lithe__wg_buf *b = ptr;
    if (!b) return;
    int k = size_class(b->bytes);
    if (wg->pool_n[k] == wg->pool_cap[k]) {
        uint32_t cap = wg->pool_cap[k] ? 2 * wg->pool_cap[k] : 8;
        lithe__wg_buf **np = cap <= 256 ? lithe__malloc(cap * sizeof *np) : NULL;
        if (!np) { /* the pool is full (or no memory for it): give the buffer back */
            lithe__wg_buffer_destroy(b->id);
            lithe__free(b);
            return;
        }
        if (wg->pool_n[k]) memcpy(np, wg->pool[k], wg->pool_n[k] * sizeof *np);
        lithe__free(wg->pool[k]);
        wg->pool[k] = np;
        wg->pool_cap[k] = cap;
    }
    wg->pool[k][wg->pool_n[k]++] = b;
}

static lithe_status wg_upload(lithe_backend *be, void *dst, size_t off, const void *src, size_t n) {
    (void)be;
    lithe__wg_buf *b = dst;
    if (!n) return LITHE_OK;
    if (off + n > b->bytes) return lithe__fail(LITHE_ERR_INVALID_ARG, "webgpu upload: past the buffer's end");
    if (lithe__wg_write(b->id, (uint32_t)off, src, (uint32_t)n)) return import_error("upload");
    return LITHE_OK;
}

static lithe_status wg_download(lithe_backend *be, void *dst, const void *src, size_t off, size_t n) {
    (void)be;
    const lithe__wg_buf *b = src;
    if (!n) return LITHE_OK;
    if (off + n > b->bytes) return lithe__fail(LITHE_ERR_INVALID_ARG, "webgpu download: past the buffer's end");
    if (lithe__wg_read(b->id, (uint32_t)off, dst, (uint32_t)n)) return import_error("download");
    return LITHE_OK;
}

static lithe_status wg_sync(lithe_backend *be) {
    (void)be;
    lithe__wg_flush();
    return LITHE_OK;
}

lithe_status lithe__wg_read_tensor(lithe_backend *be, const lithe_tensor *t, void *dst, size_t n) {
    return wg_download(be, dst, t->storage->data, (size_t)t->offset * lithe_dtype_size(t->dtype), n);
}

lithe_status lithe__wg_scratch(lithe_backend *be, size_t n, lithe_tensor **out) {
    int64_t shape[1] = {(int64_t)(n ? n : 1)};
    return lithe_tensor_new(be, LITHE_F32, 1, shape, out);
}

/* ---- dispatch ---- */

/* The bytes [first, end) a tensor's elements span in its buffer. */
static void tensor_span(const lithe_tensor *t, size_t *first, size_t *end) {
    size_t es = lithe_dtype_size(t->dtype), last = 0;
    for (int d = 0; d < t->ndim; d++)
        if (t->shape[d] > 1) last += (size_t)(t->shape[d] - 1) * (size_t)t->strides[d];
    *first = (size_t)t->offset * es;
    *end = t->numel ? *first + (last + 1) * es : *first;
    *first &= ~(size_t)3;
    *end = (*end + 3) & ~(size_t)3;
}

lithe_status lithe__wg_dispatch_(lithe_backend *be, const char *op_name, int shader, uint32_t op, lithe__wg_params *p,
                                 const lithe_tensor *const *bind, size_t n, uint32_t writable, uint32_t gx,
                                 uint32_t gy) {
    lithe__wg *wg = lithe__wg_of(be);
    uint32_t ids[6];
    lithe__wg_buf *scratch[6] = {0};
    if (n > 6) return lithe__fail(LITHE_ERR_INTERNAL, "webgpu %s: more than 6 bindings", op_name);
    lithe_status s = LITHE_OK;
    for (size_t b = 0; b < n; b++) {
        const lithe_tensor *t = bind[b];
        if (!t) {
            ids[b] = wg->dummy[b];
            p->u[10 + b] = 0;
            continue;
        }
        ids[b] = lithe__wg_mem(t)->id;
        p->u[10 + b] = (uint32_t)((size_t)t->offset * lithe_dtype_size(t->dtype) / 4);
    }
    /* a written binding sharing its buffer with another: through a scratch copy */
    for (size_t b = 0; b < n && s == LITHE_OK; b++) {
        if (!bind[b] || !(writable >> b & 1)) continue;
        bool shared = false;
        for (size_t c = 0; c < n; c++)
            if (c != b && bind[c] && lithe__wg_mem(bind[c])->id == ids[b]) shared = true;
        if (!shared) continue;
        lithe__wg_buf *src = lithe__wg_mem(bind[b]);
        s = wg_alloc(be, src->bytes, (void **)&scratch[b]);
        if (s != LITHE_OK) break;
        lithe__wg_copy(src->id, 0, scratch[b]->id, 0, src->bytes);
        ids[b] = scratch[b]->id;
    }
    if (s == LITHE_OK) {
        const char *src = lithe__wg_shader_src[shader];
        if (lithe__wg_dispatch((uint32_t)shader, src, (uint32_t)strlen(src), op, ids, (uint32_t)n, writable, p, gx, gy))
            s = import_error(op_name);
    }
    for (size_t b = 0; b < n; b++) {
        if (!scratch[b]) continue;
        if (s == LITHE_OK) {
            size_t first, end;
            tensor_span(bind[b], &first, &end);
            if (end > first)
                lithe__wg_copy(scratch[b]->id, (uint32_t)first, lithe__wg_mem(bind[b])->id, (uint32_t)first,
                               (uint32_t)(end - first));
        }
        wg_free(be, scratch[b]); /* safe: later work is ordered after these copies */
    }
    return s;
}

/* ---- the backend ---- */

static lithe_backend_ops wg_ops;
static lithe_backend wg_backend;
uint32_t lithe__wg_max_groups = 1024u;
static lithe__wg wg_ctx;
static bool wg_made;
extern const lithe_backend_desc lithe__backend_webgpu_desc;

static lithe_status wg_get(const char *name, lithe_backend **out) {
    *out = NULL;
    if (name && strcmp(name, "webgpu") != 0)
        return lithe__fail(LITHE_ERR_NOT_FOUND, "no backend named '%s' (webgpu)", name);
    if (wg_made) {
        *out = &wg_backend;
        return LITHE_OK;
    }
    char why[200] = "";
    if (!lithe__wg_available(why, sizeof why))
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "webgpu: no device: %s", why[0] ? why : "no WebGPU adapter");
    wg_ops.alloc = wg_alloc;
    wg_ops.free = wg_free;
    wg_ops.upload = wg_upload;
    wg_ops.download = wg_download;
    wg_ops.sync = wg_sync;
    lithe__wg_fill_ops(&wg_ops);
    wg_ops.cce_stats = lithe__wg_cce_stats;
    wg_backend.name = "webgpu";
    wg_backend.host_memory = false;
    wg_backend.ops = &wg_ops;
    wg_backend.ctx = &wg_ctx;
    wg_backend.dl_device_type = 15; /* kDLWebGPU */
    wg_backend.desc = &lithe__backend_webgpu_desc;
    for (int b = 0; b < 6; b++) {
        wg_ctx.dummy[b] = lithe__wg_buffer_create(256);
        if (!wg_ctx.dummy[b]) return import_error("buffer");
    }
    uint32_t feat = lithe__wg_features(), sg_max = feat >> 16 & 255u;
    wg_ctx.subgroups = (feat & 1u) && sg_max >= 4 && sg_max <= 64 ? 1 : 0; /* gemm_sg's 64-invocation workgroups */
    wg_ctx.cpu_gemm = (feat & 2u) ? 1 : 0;
    wg_ctx.cpu_rows = (feat & 2u) ? 1 : 0;
    lithe__wg_max_groups = (feat & 2u) ? 64u : 1024u;
    wg_made = true;
    *out = &wg_backend;
    return LITHE_OK;
}

static void wg_memory_stats(const lithe_backend *be, size_t *in_use, size_t *cached, size_t *n_allocs) {
    const lithe__wg *wg = be->ctx;
    size_t c = 0;
    for (int k = 0; k < LITHE__WG_CLASSES; k++) c += (size_t)wg->pool_n[k] * ((size_t)256 << k);
    if (in_use) *in_use = 0;
    if (cached) *cached = c;
    if (n_allocs) *n_allocs = (size_t)wg->n_buffers;
}

const lithe_backend_desc lithe__backend_webgpu_desc = {
    .api_version = LITHE_BACKEND_API_VERSION,
    .name = "webgpu",
    .dl_device_type = 15, /* kDLWebGPU; no export (no get_device) */
    .get = wg_get,
    .memory_stats = wg_memory_stats,
};
