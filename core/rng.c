/* Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011):
 * counter-based, so the i-th number of a stream is computable anywhere — on the CPU, in a
 * shader, in WebAssembly — with the same bits. */
#include "internal.h"

#include <math.h>

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

void lithe_philox4x32(const uint32_t counter[4], const uint32_t key[2], uint32_t out[4]) {
    uint32_t c0 = counter[0], c1 = counter[1], c2 = counter[2], c3 = counter[3];
    uint32_t k0 = key[0], k1 = key[1];
    for (int r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)PHILOX_M0 * c0, p1 = (uint64_t)PHILOX_M1 * c2;
        uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
        uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
        c0 = hi1 ^ c1 ^ k0;
        c1 = lo1;
        c2 = hi0 ^ c3 ^ k1;
        c3 = lo0;
        k0 += PHILOX_W0;
        k1 += PHILOX_W1;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

void lithe_rng_uniform(lithe_rng *rng, float *out, size_t n) {
    if (!rng || !out) return;
    uint32_t key[2] = {(uint32_t)rng->key, (uint32_t)(rng->key >> 32)};
    for (size_t i = 0; i < n; i += 4) {
        uint64_t ctr = rng->counter + i / 4;
        uint32_t c[4] = {(uint32_t)ctr, (uint32_t)(ctr >> 32), 0, 0}, r[4];
        lithe_philox4x32(c, key, r);
        for (size_t j = 0; j < 4 && i + j < n; j++) out[i + j] = (float)(r[j] >> 8) * 0x1p-24f;
    }
    rng->counter += (n + 3) / 4;
}

uint64_t lithe__splitmix64(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void lithe_rng_normal(lithe_rng *rng, float *out, size_t n) {
    if (!rng || !out) return;
    float u[128]; /* a multiple of 4: chunking consumes the stream exactly as one call would */
    for (size_t i = 0; i < n; i += 64) {
        size_t pairs = n - i < 64 ? (n - i + 1) / 2 : 32;
        lithe_rng_uniform(rng, u, 2 * pairs);
        for (size_t k = 0; k < pairs; k++) {
            /* 1 - u1 is in (0, 1]: the log is finite */
            double r = sqrt(-2.0 * log(1.0 - (double)u[2 * k])), t = 6.283185307179586 * (double)u[2 * k + 1];
            size_t j = i + 2 * k;
            out[j] = (float)(r * cos(t));
            if (j + 1 < n) out[j + 1] = (float)(r * sin(t));
        }
    }
}
