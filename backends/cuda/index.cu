/* Ids and hashing: row gather / scatter-add, Thinc's ops.hash (MurmurHash3_x64_128 of uint64
 * ids), murmurhash's hash_unicode of strings and SparseLinear's hashed scores and gradient
 * (backends/cpu/scalar/index.c, sparse.c). */
#include "common.cuh"
#include "../common/hash.h"

static LC_HD inline uint64_t row_id(const int32_t *ids32, const uint64_t *ids64, int64_t i) {
    return ids32 ? (uint64_t)(int64_t)ids32[i] : ids64[i];
}
LC_KERNEL(k_gather_rows, (const lc_thread &t, int64_t B, int64_t N, const float *table, const int32_t *ids32,
                          const uint64_t *ids64, float *Y)) {
    LC_FOR(t, k, B * N) {
        int64_t i = k / N, j = k % N;
        Y[k] = table[(int64_t)row_id(ids32, ids64, i) * N + j];
    }
}
/* one thread per column, rows in order: duplicates accumulate in the CPU's order, bit for bit */
LC_KERNEL(k_scatter_add_rows, (const lc_thread &t, int64_t B, int64_t N, float *table, const int32_t *ids32,
                               const uint64_t *ids64, const float *X)) {
    LC_FOR(t, j, N) {
        for (int64_t i = 0; i < B; i++) table[(int64_t)row_id(ids32, ids64, i) * N + j] += X[i * N + j];
    }
}
static const int32_t *ids32(const lithe_tensor *ids) {
    return ids->dtype == LITHE_I32 ? (const int32_t *)lc_ptr(ids) : (const int32_t *)NULL;
}
static const uint64_t *ids64(const lithe_tensor *ids) {
    return ids->dtype == LITHE_I32 ? (const uint64_t *)NULL : (const uint64_t *)lc_ptr(ids);
}
lithe_status cu_gather_rows(lithe_backend *be, const lithe_tensor *table, const lithe_tensor *ids, lithe_tensor *Y) {
    return lc_launch<k_gather_rows>(lc_of(be), Y->numel, Y->shape[0], Y->shape[1], (const float *)lc_f(table), ids32(ids),
                                    ids64(ids), lc_f(Y));
}
lithe_status cu_scatter_add_rows(lithe_backend *be, lithe_tensor *table, const lithe_tensor *ids,
                                        const lithe_tensor *X) {
    return lc_launch<k_scatter_add_rows>(lc_of(be), X->shape[1], X->shape[0], X->shape[1], lc_f(table), ids32(ids),
                                         ids64(ids), (const float *)lc_f(X));
}

/* ---- MurmurHash3 (backends/common/hash.h, shared with the CPU's scalar kernels) ---- */

LC_KERNEL(k_hash_ids, (const lc_thread &t, int64_t B, const uint64_t *ids, uint32_t seed, uint32_t *out)) {
    LC_FOR(t, i, B) lithe__murmur3_x64_128_u64(ids[i], seed, out + i * 4);
}
lithe_status cu_hash_ids(lithe_backend *be, const lithe_tensor *ids, uint32_t seed, lithe_tensor *out) {
    return lc_launch<k_hash_ids>(lc_of(be), ids->numel, ids->numel, (const uint64_t *)lc_ptr(ids), seed,
                                 (uint32_t *)lc_ptr(out));
}

LC_KERNEL(k_hash_strings, (const lc_thread &t, int64_t n, const uint8_t *bytes, const int64_t *offsets, uint32_t seed,
                           uint64_t *out)) {
    LC_FOR(t, i, n) {
        uint32_t h = lithe__murmur3_32(bytes + offsets[i], (size_t)(offsets[i + 1] - offsets[i] - 1), seed);
        out[i] = (uint64_t)(int64_t)(int32_t)h;
    }
}
/* bytes and offsets live in host memory (a STRINGS value): uploaded, then hashed on the device */
lithe_status cu_hash_strings(lithe_backend *be, const lithe_tensor *bytes, const lithe_tensor *offsets,
                                   uint32_t seed, lithe_tensor *out) {
    lc_ctx *c = lc_of(be);
    int64_t n = out->numel;
    if (n == 0) return LITHE_OK;
    void *b = NULL, *o = NULL;
    lithe_status s = lc_upload_scratch(c, lc_host_ptr(bytes), bytes->numel ? (size_t)bytes->numel : 1, &b);
    if (s == LITHE_OK) s = lc_upload_scratch(c, lc_host_ptr(offsets), (size_t)(n + 1) * 8, &o);
    if (s == LITHE_OK)
        s = lc_launch<k_hash_strings>(c, n, n, (const uint8_t *)b, (const int64_t *)o, seed, (uint64_t *)lc_ptr(out));
    lc_free(c, b);
    lc_free(c, o);
    return s;
}

/* ---- SparseLinear ---- */

/* one thread per (sequence, class): its keys in order, as the CPU's */
LC_KERNEL(k_sparse_linear, (const lc_thread &t, int64_t B, int64_t nO, const int64_t *starts, const uint64_t *keys,
                            const float *values, const float *W, int64_t length, bool v1, float *Y)) {
    LC_FOR(t, q, B * nO) {
        int64_t b = q / nO, c = q % nO;
        float y = Y[q];
        for (int64_t k = starts[b]; k < starts[b + 1]; k++) {
            int64_t i1, i2, step;
            lithe__sparse_index(keys[k], length, v1, &i1, &i2, &step);
            float v = values[k];
            y += W[i1 + c * step] * v;
            y += W[i2 + c * step] * v;
        }
        Y[q] = y;
    }
}
/* one thread per (key, class); colliding hashes meet in atomic adds (order not fixed) */
LC_KERNEL(k_sparse_linear_backward, (const lc_thread &t, int64_t N, int64_t nO, const int32_t *row_seq,
                                     const uint64_t *keys, const float *values, const float *dY, int64_t length,
                                     bool v1, float *dW)) {
    LC_FOR(t, q, N * nO) {
        int64_t k = q / nO, c = q % nO;
        int64_t i1, i2, step;
        lithe__sparse_index(keys[k], length, v1, &i1, &i2, &step);
        float g = dY[(int64_t)row_seq[k] * nO + c] * values[k];
        lc_atomic_add(&dW[i1 + c * step], g);
        lc_atomic_add(&dW[i2 + c * step], g);
    }
}
lithe_status cu_sparse_linear(lithe_backend *be, const lithe_tensor *keys, const lithe_tensor *values,
                                     const lithe_tensor *lengths, const lithe_tensor *W, int64_t length, bool v1,
                                     lithe_tensor *Y) {
    lc_ctx *c = lc_of(be);
    int64_t *starts = NULL, N = 0;
    LITHE__TRY(lc_seq_index(c, lengths, &starts, NULL, &N));
    lithe_status s = lc_launch<k_sparse_linear>(c, Y->numel, Y->shape[0], Y->shape[1], (const int64_t *)starts,
                                                (const uint64_t *)lc_ptr(keys), (const float *)lc_f(values),
                                                (const float *)lc_f(W), length, v1, lc_f(Y));
    lc_free(c, starts);
    return s;
}
lithe_status cu_sparse_linear_backward(lithe_backend *be, const lithe_tensor *keys, const lithe_tensor *values,
                                              const lithe_tensor *lengths, const lithe_tensor *dY, int64_t length,
                                              bool v1, lithe_tensor *dW) {
    lc_ctx *c = lc_of(be);
    int64_t *starts = NULL, N = 0;
    int32_t *row_seq = NULL;
    LITHE__TRY(lc_seq_index(c, lengths, &starts, &row_seq, &N));
    int64_t nO = dY->shape[1];
    lithe_status s = lc_launch<k_sparse_linear_backward>(c, N * nO, N, nO, (const int32_t *)row_seq,
                                                         (const uint64_t *)lc_ptr(keys), (const float *)lc_f(values),
                                                         (const float *)lc_f(dY), length, v1, lc_f(dW));
    lc_free(c, starts);
    lc_free(c, row_seq);
    return s;
}

