#version 450
// dropout_mask: Y[i] = (u_i >= rate) ? 1 / (1 - rate) : 0 with u_i the i-th uniform of the
// Philox4x32-10 stream (key, counter) exactly as core/rng.c's lithe_rng_uniform: block i / 4 at
// counter + i / 4, lane i % 4, u = (r >> 8) * 2^-24. One invocation per block of 4, so the GPU's
// masks have the CPU's bits and training matches across backends.
// u0, u1 = key (low, high word); u2, u3 = counter (low, high); u4 = n; f0 = rate; f1 = keep scale.
#include "common.glsl"
layout(local_size_x = WG) in;
layout(std430, binding = 0) buffer Yb { float y[]; };

uvec4 philox(uvec4 c, uvec2 k) {
    for (int r = 0; r < 10; r++) {
        uint hi0, lo0, hi1, lo1;
        umulExtended(0xD2511F53u, c.x, hi0, lo0);
        umulExtended(0xCD9E8D57u, c.z, hi1, lo1);
        c = uvec4(hi1 ^ c.y ^ k.x, lo1, hi0 ^ c.w ^ k.y, lo0);
        k += uvec2(0x9E3779B9u, 0xBB67AE85u);
    }
    return c;
}

void main() {
    uint n = pc.u[4], blocks = (n + 3u) / 4u;
    uvec2 key = uvec2(pc.u[0], pc.u[1]), ctr = uvec2(pc.u[2], pc.u[3]);
    float rate = pc.f[0], keep = pc.f[1];
    for (uint g = FIRST; g < blocks; g += STRIDE) {
        uvec2 c = add64(ctr, uvec2(g, 0u));
        uvec4 r = philox(uvec4(c.x, c.y, 0u, 0u), key);
        for (uint j = 0u; j < 4u && g * 4u + j < n; j++) {
            float u = float(r[j] >> 8) * (1.0 / 16777216.0);
            y[OFF(0) + g * 4u + j] = u >= rate ? keep : 0.0;
        }
    }
}
