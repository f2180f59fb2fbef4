/* Scalar row gather / scatter-add and Thinc's id hashing (NumpyOps.hash). */
#include "../kernels.h"

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

static inline uint64_t rotl64(uint64_t x, int r) {
    return (x << r) | (x >> (64 - r));
}

static inline uint64_t fmix64(uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ULL;
    k ^= k >> 33;
    return k;
}

/* MurmurHash3_x64_128 of the 8 little-endian bytes of one uint64 (Thinc names its routine
 * ..._x86_128_uint64, but the arithmetic is x64_128's): an 8-byte input has no full 16-byte
 * block, only the tail word k1, then finalisation with length 8. Output words are h1's low and
 * high halves, then h2's. */
void lithe_u64_hash_ids__scalar(int64_t B, const uint64_t *ids, uint32_t seed, uint32_t *out) {
    const uint64_t c1 = 0x87c37b91114253d5ULL, c2 = 0x4cf5ad432745937fULL;
    for (int64_t i = 0; i < B; i++) {
        uint64_t k1 = ids[i];
        k1 *= c1;
        k1 = rotl64(k1, 31);
        k1 *= c2;
        uint64_t h1 = (uint64_t)seed ^ k1, h2 = (uint64_t)seed;
        h1 ^= 8u;
        h2 ^= 8u;
        h1 += h2;
        h2 += h1;
        h1 = fmix64(h1);
        h2 = fmix64(h2);
        h1 += h2;
        h2 += h1;
        out[i * 4 + 0] = (uint32_t)h1;
        out[i * 4 + 1] = (uint32_t)(h1 >> 32);
        out[i * 4 + 2] = (uint32_t)h2;
        out[i * 4 + 3] = (uint32_t)(h2 >> 32);
    }
}
