/* Scalar row gather / scatter-add and Thinc's id hashing (NumpyOps.hash). */
#include "../kernels.h"
#include "../../common/hash.h"

#include <string.h>

static inline uint64_t row_id(const int32_t *ids32, const uint64_t *ids64, int64_t i) {
    return ids32 ? (uint64_t)(int64_t)ids32[i] : ids64[i];
}

void lithe_f32_gather_rows__scalar(int64_t B, int64_t N, const float *table, const int32_t *ids32,
                                   const uint64_t *ids64, float *Y) {
    for (int64_t i = 0; i < B; i++)
        memcpy(Y + i * N, table + (int64_t)row_id(ids32, ids64, i) * N, (size_t)N * sizeof(float));
}

void lithe_f32_scatter_add_rows__scalar(int64_t B, int64_t N, float *table, const int32_t *ids32,
                                        const uint64_t *ids64, const float *X) {
    for (int64_t i = 0; i < B; i++) {
        float *row = table + (int64_t)row_id(ids32, ids64, i) * N;
        const float *x = X + i * N;
        for (int64_t j = 0; j < N; j++) row[j] += x[j];
    }
}

/* MurmurHash3_x64_128 of each id (backends/common/hash.h, shared with the CUDA kernel). */
void lithe_u64_hash_ids__scalar(int64_t B, const uint64_t *ids, uint32_t seed, uint32_t *out) {
    for (int64_t i = 0; i < B; i++) lithe__murmur3_x64_128_u64(ids[i], seed, out + i * 4);
}
