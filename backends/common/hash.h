/* The hashes whose results must be the same bit for bit on every backend, written once for the
 * CPU's scalar kernels (C11: backends/cpu/scalar/index.c, sparse.c) and the CUDA kernels (C++17:
 * backends/cuda/index.cu, compiled by nvcc and, for the host emulation, by g++ / clang++).
 *   - MurmurHash3_x64_128 of one uint64 id's 8 little-endian bytes (Thinc's ops.hash; Thinc
 *     names it ..._x86_128_uint64, but the arithmetic is x64_128's): an 8-byte input has no full
 *     16-byte block, only the tail word k1, then finalisation with length 8.
 *   - MurmurHash3_x86_32 of bytes and of one uint64 key (murmurhash's hash_unicode, SparseLinear),
 *     Austin Appleby's public-domain algorithm written from its description. Blocks are read byte
 *     by byte as little-endian words, so the hashes are the same on every platform.
 *   - SparseLinear's two W offsets of a key.
 * LITHE_HD (hd.h) marks them __host__ __device__ under nvcc and is empty in C and host C++. */
#ifndef LITHE_BACKENDS_COMMON_HASH_H
#define LITHE_BACKENDS_COMMON_HASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hd.h"

static LITHE_HD inline uint64_t lithe__rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

static LITHE_HD inline uint64_t lithe__fmix64(uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ULL;
    k ^= k >> 33;
    return k;
}

/* MurmurHash3_x64_128 of id: out[0..3] = h1's low and high halves, then h2's. */
static LITHE_HD inline void lithe__murmur3_x64_128_u64(uint64_t id, uint32_t seed, uint32_t *out) {
    const uint64_t c1 = 0x87c37b91114253d5ULL, c2 = 0x4cf5ad432745937fULL;
    uint64_t k1 = id;
    k1 *= c1;
    k1 = lithe__rotl64(k1, 31);
    k1 *= c2;
    uint64_t h1 = (uint64_t)seed ^ k1, h2 = (uint64_t)seed;
    h1 ^= 8u;
    h2 ^= 8u;
    h1 += h2;
    h2 += h1;
    h1 = lithe__fmix64(h1);
    h2 = lithe__fmix64(h2);
    h1 += h2;
    h2 += h1;
    out[0] = (uint32_t)h1;
    out[1] = (uint32_t)(h1 >> 32);
    out[2] = (uint32_t)h2;
    out[3] = (uint32_t)(h2 >> 32);
}

static LITHE_HD inline uint32_t lithe__rotl32(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

static LITHE_HD inline uint32_t lithe__murmur3_mix_k1(uint32_t k1) {
    k1 *= 0xcc9e2d51u;
    k1 = lithe__rotl32(k1, 15);
    return k1 * 0x1b873593u;
}

static LITHE_HD inline uint32_t lithe__fmix32(uint32_t h) {
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    h ^= h >> 16;
    return h;
}

/* MurmurHash3_x86_32 of len bytes. */
static LITHE_HD inline uint32_t lithe__murmur3_32(const uint8_t *data, size_t len, uint32_t seed) {
    uint32_t h1 = seed;
    size_t nblocks = len / 4;
    for (size_t i = 0; i < nblocks; i++) {
        const uint8_t *p = data + 4 * i;
        uint32_t k1 = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
        h1 ^= lithe__murmur3_mix_k1(k1);
        h1 = lithe__rotl32(h1, 13);
        h1 = h1 * 5 + 0xe6546b64u;
    }
    /* the tail's 1 to 3 bytes (a switch falling through, written without one: C and C++ spell the
     * fall-through annotation differently) */
    const uint8_t *tail = data + 4 * nblocks;
    size_t rest = len & 3;
    uint32_t k1 = 0;
    if (rest >= 3) k1 ^= (uint32_t)tail[2] << 16;
    if (rest >= 2) k1 ^= (uint32_t)tail[1] << 8;
    if (rest >= 1) {
        k1 ^= tail[0];
        h1 ^= lithe__murmur3_mix_k1(k1);
    }
    h1 ^= (uint32_t)len;
    return lithe__fmix32(h1);
}

/* The same hash of a uint64 key's 8 little-endian bytes (Thinc's MurmurHash3_x86_32_uint64). */
static LITHE_HD inline uint32_t lithe__murmur3_32_u64(uint64_t key, uint32_t seed) {
    uint32_t h1 = seed;
    h1 ^= lithe__murmur3_mix_k1((uint32_t)(key & 0xffffffffu));
    h1 = lithe__rotl32(h1, 13) * 5 + 0xe6546b64u;
    h1 ^= lithe__murmur3_mix_k1((uint32_t)(key >> 32));
    h1 = lithe__rotl32(h1, 13) * 5 + 0xe6546b64u;
    h1 ^= 8u;
    return lithe__fmix32(h1);
}

/* SparseLinear: the two W offsets of a key for class 0, and the step between classes: v1 reads
 * W[idx + c] with idx = h & (length - 1) (Thinc's bug #752, kept for old models), v2
 * W[c * length + idx] with idx = h % length. */
static LITHE_HD inline void lithe__sparse_index(uint64_t key, int64_t length, bool v1, int64_t *i1, int64_t *i2,
                                                int64_t *step) {
    uint32_t h1 = lithe__murmur3_32_u64(key, 0), h2 = lithe__murmur3_32_u64(key, 1);
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

#endif
