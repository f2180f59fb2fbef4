/* Sparse, hashed and string kernels: MurmurHash3 x86_32 and Thinc's SparseLinear scoring
 * (thinc/layers/sparselinear.pyx). The hashes and SparseLinear's indexing are in
 * backends/common/hash.h, shared with the CUDA kernels: blocks are read byte by byte as
 * little-endian words, so the hashes are the same on every platform (Thinc's C reads native
 * words: x86 is little endian). */
#include "../kernels.h"
#include "../../common/hash.h"

uint32_t lithe_murmur3_x86_32__scalar(const uint8_t *data, size_t len, uint32_t seed) {
    return lithe__murmur3_32(data, len, seed);
}

uint32_t lithe_murmur3_x86_32_u64__scalar(uint64_t key, uint32_t seed) { return lithe__murmur3_32_u64(key, seed); }

void lithe_f32_sparse_linear__scalar(int64_t B, int64_t nO, const int32_t *lengths, const uint64_t *keys,
                                     const float *values, const float *W, int64_t length, bool v1, float *Y) {
    int64_t k = 0;
    for (int64_t b = 0; b < B; b++) {
        float *y = Y + b * nO;
        for (int32_t i = 0; i < lengths[b]; i++, k++) {
            int64_t i1, i2, step;
            lithe__sparse_index(keys[k], length, v1, &i1, &i2, &step);
            float v = values[k];
            /* Thinc's order: for each class, the first hash's weight, then the second's */
            for (int64_t c = 0; c < nO; c++) {
                y[c] += W[i1 + c * step] * v;
                y[c] += W[i2 + c * step] * v;
            }
        }
    }
}

void lithe_f32_sparse_linear_backward__scalar(int64_t B, int64_t nO, const int32_t *lengths, const uint64_t *keys,
                                              const float *values, const float *dY, int64_t length, bool v1,
                                              float *dW) {
    int64_t k = 0;
    for (int64_t b = 0; b < B; b++) {
        const float *dy = dY + b * nO;
        for (int32_t i = 0; i < lengths[b]; i++, k++) {
            int64_t i1, i2, step;
            lithe__sparse_index(keys[k], length, v1, &i1, &i2, &step);
            float v = values[k];
            for (int64_t c = 0; c < nO; c++) {
                dW[i1 + c * step] += dy[c] * v;
                dW[i2 + c * step] += dy[c] * v;
            }
        }
    }
}

void lithe_u64_hash_strings__scalar(int64_t n, const uint8_t *bytes, const int64_t *offsets, uint32_t seed,
                                    uint64_t *out) {
    for (int64_t i = 0; i < n; i++) {
        uint32_t h = lithe_murmur3_x86_32__scalar(bytes + offsets[i], (size_t)(offsets[i + 1] - offsets[i] - 1), seed);
        /* murmurhash's hash_unicode returns it as a signed int32; numpy's uint64 cast of a negative
         * Python int wraps modulo 2^64 */
        out[i] = (uint64_t)(int64_t)(int32_t)h;
    }
}
