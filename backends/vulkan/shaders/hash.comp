#version 450
// hash_ids: Thinc's ops.hash, MurmurHash3_x64_128 of each uint64 id's 8 little-endian bytes
// with a 32-bit seed (the CPU's index.c spells out the steps), in 32-bit words since shaderInt64
// is optional. out (B, 4) uint32 = h1 low, h1 high, h2 low, h2 high. bindings 0 = out, 1 = ids.
// u0 = B, u1 = seed.
#include "common.glsl"
layout(local_size_x = WG) in;
layout(std430, binding = 0) buffer Ob { uint o[]; };
layout(std430, binding = 1) readonly buffer Ib { uint ids[]; };
uvec2 fmix64(uvec2 k) {
    k ^= shr64(k, 33u);
    k = mul64(k, uvec2(0xed558ccdu, 0xff51afd7u));
    k ^= shr64(k, 33u);
    k = mul64(k, uvec2(0x1a85ec53u, 0xc4ceb9feu));
    k ^= shr64(k, 33u);
    return k;
}
void main() {
    uint B = pc.u[0];
    uvec2 seed = uvec2(pc.u[1], 0u);
    for (uint i = FIRST; i < B; i += STRIDE) {
        uvec2 k1 = uvec2(ids[OFF(1) + 2u * i], ids[OFF(1) + 2u * i + 1u]);
        k1 = mul64(k1, uvec2(0x114253d5u, 0x87c37b91u));
        k1 = rotl64(k1, 31u);
        k1 = mul64(k1, uvec2(0x2745937fu, 0x4cf5ad43u));
        uvec2 h1 = seed ^ k1, h2 = seed;
        h1 ^= uvec2(8u, 0u);
        h2 ^= uvec2(8u, 0u);
        h1 = add64(h1, h2);
        h2 = add64(h2, h1);
        h1 = fmix64(h1);
        h2 = fmix64(h2);
        h1 = add64(h1, h2);
        h2 = add64(h2, h1);
        o[OFF(0) + 4u * i] = h1.x;
        o[OFF(0) + 4u * i + 1u] = h1.y;
        o[OFF(0) + 4u * i + 2u] = h2.x;
        o[OFF(0) + 4u * i + 3u] = h2.y;
    }
}
