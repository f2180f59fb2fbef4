/* Thinc's L2Distance and CosineDistance (thinc/loss.py): gradient and loss for guesses against
 * truths of the same shape ((B, N) for CosineDistance; any equal shapes for L2Distance, as Thinc:
 * (B, T, N) sequences too), and the mean squared error that PyTorch's MSELoss and tfjs report.
 * Computed on the host (the arrays are the model's output: small), in double, from and back to any
 * backend. */
#include "../internal.h"

#include <math.h>

/* any_rank: Thinc's L2Distance takes any equal shapes (of rank >= 1: it divides by shape[0]);
 * CosineDistance works on rows of (B, N). */
static lithe_status check_pair(const char *loss, const lithe_tensor *G, const lithe_tensor *T, bool any_rank) {
    LITHE__CHECK_ARG(G && T, loss, "guesses or truths is NULL");
    if (G->dtype != LITHE_F32 || T->dtype != LITHE_F32)
        return lithe__fail(LITHE_ERR_DTYPE, "%s: guesses (%s) and truths (%s) must be float32", loss,
                           lithe_dtype_name(G->dtype), lithe_dtype_name(T->dtype));
    bool same = G->ndim == T->ndim && (any_rank ? G->ndim >= 1 : G->ndim == 2);
    for (int i = 0; same && i < G->ndim; i++) same = G->shape[i] == T->shape[i];
    if (!same) {
        char a[96], b[96];
        return lithe__fail(LITHE_ERR_SHAPE, "%s: mismatched shapes: guesses %s vs truths %s (%s)", loss,
                           lithe__shape_str(G, a, sizeof a), lithe__shape_str(T, b, sizeof b),
                           any_rank ? "they must be equal, of rank >= 1" : "both must be 2-D and equal");
    }
    return LITHE_OK;
}

/* Reads both to host buffers; *buf holds g (n) then t (n) then room for d (n). */
static lithe_status read_pair(const char *loss, const lithe_tensor *G, const lithe_tensor *T, float **buf) {
    size_t n = (size_t)G->numel;
    *buf = lithe__malloc(3 * (n ? n : 1) * sizeof **buf);
    if (!*buf) return lithe__oom(loss, 3 * n * sizeof **buf);
    lithe_status s = lithe_tensor_read(G, *buf, n * sizeof **buf);
    if (s == LITHE_OK) s = lithe_tensor_read(T, *buf + n, n * sizeof **buf);
    if (s != LITHE_OK) {
        lithe__free(*buf);
        *buf = NULL;
    }
    return s;
}

static lithe_status emit_grad(const lithe_tensor *G, const float *d, lithe_tensor **out) {
    lithe_tensor *t = NULL;
    LITHE__TRY(lithe__tensor_alloc(G->storage->backend, LITHE_F32, G->ndim, G->shape, false, &t));
    lithe_status s = lithe_tensor_write(t, d, (size_t)G->numel * sizeof *d);
    if (s != LITHE_OK) {
        lithe_tensor_release(t);
        return s;
    }
    *out = t;
    return LITHE_OK;
}

/* d = (g - t) / B (or g - t: a division by 1, exact), returning the sum of d^2 in double. Natively
 * the elementwise pass on its own, where the compiler vectorizes it, then eight running sums, one
 * per i % 8, added pairwise at the end: in one loop with one running sum each element's division ran
 * alone and the sum was a chain of dependent double adds (~60 us of the transformer's (512, 128)
 * output per training step). The WebAssembly cores keep the one loop and its one sum (their size
 * bound: the split loops were ~180 B more). */
static inline __attribute__((always_inline)) double l2_pass(size_t n, const float *g, const float *t, bool normalize,
                                                            float B, float *d) {
#if defined(__wasm__)
    double sum = 0.0;
    for (size_t i = 0; i < n; i++) {
        float diff = g[i] - t[i];
        d[i] = normalize ? diff / B : diff;
        sum += (double)d[i] * d[i];
    }
    return sum;
#else
    float div = normalize ? B : 1.0f;
    for (size_t i = 0; i < n; i++) d[i] = (g[i] - t[i]) / div;
    double acc[8] = {0};
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (size_t k = 0; k < 8; k++) acc[k] += (double)d[i + k] * d[i + k];
    for (; i < n; i++) acc[i % 8] += (double)d[i] * d[i];
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
#endif
}

lithe_status lithe_l2_distance(bool normalize, const lithe_tensor *guesses, const lithe_tensor *truths,
                               lithe_tensor **d_guesses, float *loss) {
    if (d_guesses) *d_guesses = NULL;
    LITHE__TRY(check_pair("L2Distance", guesses, truths, true));
    size_t n = (size_t)guesses->numel;
#if !defined(__wasm__) /* (the WebAssembly cores' size bound: the copies stay there) */
    /* both on the host, contiguous: read where they lie and d written straight into the gradient
     * (the copies in, the buffer and the write back were ~half the call) */
    lithe_backend *be = guesses->storage->backend;
    if (be->host_memory && truths->storage->backend->host_memory && lithe_tensor_is_contiguous(guesses) &&
        lithe_tensor_is_contiguous(truths)) {
        lithe_tensor *t = NULL; /* d: the gradient, or scratch for the loss alone */
        LITHE__TRY(lithe__tensor_alloc(be, LITHE_F32, guesses->ndim, guesses->shape, false, &t));
        double sum = l2_pass(n, lithe__f32(guesses), lithe__f32(truths), normalize, (float)guesses->shape[0],
                             lithe__f32(t));
        if (d_guesses) *d_guesses = t;
        else lithe_tensor_release(t);
        if (loss) *loss = (float)sum;
        return LITHE_OK;
    }
#endif
    float *buf = NULL;
    LITHE__TRY(read_pair("L2Distance", guesses, truths, &buf));
    float B = (float)guesses->shape[0];
    double sum = l2_pass(n, buf, buf + n, normalize, B, buf + 2 * n);
    lithe_status s = d_guesses ? emit_grad(guesses, buf + 2 * n, d_guesses) : LITHE_OK;
    if (s == LITHE_OK && loss) *loss = (float)sum;
    lithe__free(buf);
    return s;
}

lithe_status lithe_mean_squared_error(const lithe_tensor *guesses, const lithe_tensor *truths, double *out) {
    LITHE__CHECK_ARG(out, "mean_squared_error", "out is NULL");
    LITHE__TRY(check_pair("mean_squared_error", guesses, truths, true));
    float *buf = NULL;
    LITHE__TRY(read_pair("mean_squared_error", guesses, truths, &buf));
    size_t n = (size_t)guesses->numel;
    double sum = 0.0;
    for (size_t i = 0; i < n; i++) {
        double diff = (double)buf[i] - (double)buf[n + i];
        sum += diff * diff;
    }
    lithe__free(buf);
    *out = n ? sum / (double)n : 0.0;
    return LITHE_OK;
}

lithe_status lithe_cosine_distance(bool normalize, bool ignore_zeros, const lithe_tensor *guesses,
                                   const lithe_tensor *truths, lithe_tensor **d_guesses, float *loss) {
    if (d_guesses) *d_guesses = NULL;
    LITHE__TRY(check_pair("CosineDistance", guesses, truths, false));
    float *buf = NULL;
    LITHE__TRY(read_pair("CosineDistance", guesses, truths, &buf));
    int64_t B = guesses->shape[0], N = guesses->shape[1];
    float *g = buf, *t = buf + B * N, *d = buf + 2 * B * N;
    double total = 0.0;
    for (int64_t i = 0; i < B; i++) {
        const float *gy = g + i * N, *ty = t + i * N;
        /* Thinc adds 1e-8 to both vectors to avoid zero norms */
        double nyh = 0, ny = 0, dot = 0, tabs = 0;
        for (int64_t j = 0; j < N; j++) {
            double yh = (double)gy[j] + 1e-8, y = (double)ty[j] + 1e-8;
            nyh += yh * yh;
            ny += y * y;
            dot += yh * y;
            tabs += fabs((double)ty[j]);
        }
        nyh = sqrt(nyh);
        ny = sqrt(ny);
        double mul = nyh * ny, cosine = dot / mul;
        bool zero = ignore_zeros && tabs == 0.0;
        for (int64_t j = 0; j < N; j++) {
            double yh = (double)gy[j] + 1e-8, y = (double)ty[j] + 1e-8;
            double dyh = zero ? 0.0 : y / mul - cosine * (yh / (nyh * nyh));
            if (normalize) dyh /= (double)B;
            d[i * N + j] = (float)-dyh;
        }
        double l = zero ? 0.0 : fabs(cosine - 1.0);
        total += normalize ? l / (double)B : l;
    }
    lithe_status s = d_guesses ? emit_grad(guesses, d, d_guesses) : LITHE_OK;
    if (s == LITHE_OK && loss) *loss = (float)total;
    lithe__free(buf);
    return s;
}
