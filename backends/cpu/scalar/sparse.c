/* Sparse, hashed and string kernels: MurmurHash3 x86_32 (Austin Appleby's public-domain
 * algorithm, written from its description) and Thinc's SparseLinear scoring
 * (thinc/layers/sparselinear.pyx). Blocks are read byte by byte as little-endian words, so the
 * hashes are the same on every platform (Thinc's C reads native words: x86 is little endian). */
#include "../kernels.h"

static inline uint32_t rotl32(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

static inline uint32_t mix_k1(uint32_t k1) {
    k1 *= 0xcc9e2d51u;
    k1 = rotl32(k1, 15);
    return k1 * 0x1b873593u;
}

static inline uint32_t fmix32(uint32_t h) {
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    h ^= h >> 16;
    return h;
}

uint32_t lithe_murmur3_x86_32__scalar(const uint8_t *data, size_t len, uint32_t seed) {
    uint32_t h1 = seed;
    size_t nblocks = len / 4;
    for (size_t i = 0; i < nblocks; i++) {
        const uint8_t *p = data + 4 * i;
        uint32_t k1 = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
        h1 ^= mix_k1(k1);
        h1 = rotl32(h1, 13);
        h1 = h1 * 5 + 0xe6546b64u;
    }
    const uint8_t *tail = data + 4 * nblocks;
    uint32_t k1 = 0;
    switch (len & 3) {
    case 3: k1 ^= (uint32_t)tail[2] << 16; /* fall through */
    case 2: k1 ^= (uint32_t)tail[1] << 8;  /* fall through */
    case 1:
        k1 ^= tail[0];
        h1 ^= mix_k1(k1);
    }
    h1 ^= (uint32_t)len;
    return fmix32(h1);
}

/* The same hash of a uint64 key's 8 little-endian bytes (Thinc's MurmurHash3_x86_32_uint64). */
static inline uint32_t murmur3_u64(uint64_t key, uint32_t seed) {
    uint32_t h1 = seed;
    h1 ^= mix_k1((uint32_t)(key & 0xffffffffu));
    h1 = rotl32(h1, 13) * 5 + 0xe6546b64u;
    h1 ^= mix_k1((uint32_t)(key >> 32));
    h1 = rotl32(h1, 13) * 5 + 0xe6546b64u;
    h1 ^= 8u;
    return fmix32(h1);
}

uint32_t lithe_murmur3_x86_32_u64__scalar(uint64_t key, uint32_t seed) { return murmur3_u64(key, seed); }

/* The two W offsets of a key for class 0, and the step between classes: v1 reads W[idx + c]
 * with idx = h & (length - 1) (Thinc's bug #752, kept for old models), v2 W[c * length + idx]
 * with idx = h % length. */
static inline void sparse_index(uint64_t key, int64_t length, bool v1, int64_t *i1, int64_t *i2, int64_t *step) {
    uint32_t h1 = murmur3_u64(key, 0), h2 = murmur3_u64(key, 1);
    if (v1) {
        *i1 = (int64_t)(h1 & (uint32_t)(length - 1));
        *i2 = (int64_t)(h2 & (uint32_t)(length - 1));
        *step = 1;
    } else {
        *i1 = (int64_t)(h1 % (uint32_t)length);
        *i2 = (int64_t)(h2 % (uint32_t)length);
        *step = length;
    }
}

void lithe_f32_sparse_linear__scalar(int64_t B, int64_t nO, const int32_t *lengths, const uint64_t *keys,
                                     const float *values, const float *W, int64_t length, bool v1, float *Y) {
    int64_t k = 0;
    for (int64_t b = 0; b < B; b++) {
        float *y = Y + b * nO;
        for (int32_t i = 0; i < lengths[b]; i++, k++) {
            int64_t i1, i2, step;
            sparse_index(keys[k], length, v1, &i1, &i2, &step);
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
            sparse_index(keys[k], length, v1, &i1, &i2, &step);
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
