#version 450
// Thinc's SparseLinear and murmurhash's hash_unicode (the CPU's sparse.c is the reference):
// MurmurHash3_x86_32 in 32-bit words.
//   spec 0 = 0: sparse_linear           Y (B, nO) += values[i] (W[at(h0)] + W[at(h1)]) per class,
//               one invocation per (sequence, class) walking its keys in order.
//               (0 = Y, 1 = keys (two words each), 2 = values, 3 = W, 4 = starts (B + 1 ints))
//   spec 0 = 1: sparse_linear_backward  dW += dY[b, c] values[i] at the same places; one
//               invocation per class walking every key in order (v2: classes own disjoint parts of
//               W), or a single invocation for v1, whose classes overlap (Thinc's bug #752).
//               (0 = dW, 1 = keys, 2 = values, 3 = dY, 4 = starts)
//   spec 0 = 2: hash_strings  out (n,) uint64 = the hash of string i read as int32, widened
//               (0 = out (two words each), 1 = bytes, 4 = offsets (n + 1 ints))
// u0 = B (or n), u1 = nO, u2 = length, u3 = v1, u4 = seed.
#include "common.glsl"
layout(local_size_x = WG) in;
layout(constant_id = 0) const uint OP = 0u;
layout(std430, binding = 0) buffer Ob { float o[]; };
layout(std430, binding = 0) buffer Oub { uint ou[]; };
layout(std430, binding = 1) readonly buffer Kb { uint keys[]; };
layout(std430, binding = 2) readonly buffer Vb { float vals[]; };
layout(std430, binding = 3) readonly buffer Wb { float w[]; };
layout(std430, binding = 4) readonly buffer Sb { int starts[]; };

uint rotl32(uint x, uint r) { return (x << r) | (x >> (32u - r)); }
uint mix_k1(uint k1) { return rotl32(k1 * 0xcc9e2d51u, 15u) * 0x1b873593u; }
uint fmix32(uint h) {
    h ^= h >> 16; h *= 0x85ebca6bu; h ^= h >> 13; h *= 0xc2b2ae35u; h ^= h >> 16;
    return h;
}
uint murmur_u64(uvec2 key, uint seed) {
    uint h = seed;
    h ^= mix_k1(key.x); h = rotl32(h, 13u) * 5u + 0xe6546b64u;
    h ^= mix_k1(key.y); h = rotl32(h, 13u) * 5u + 0xe6546b64u;
    h ^= 8u;
    return fmix32(h);
}
uint byte_at(uint i) { return (keys[OFF(1) + i / 4u] >> ((i % 4u) * 8u)) & 0xFFu; } // OFF(1) in words
// (i1, i2, step) of key k for class 0
uvec3 sparse_index(uint k) {
    uvec2 key = uvec2(keys[OFF(1) + 2u * k], keys[OFF(1) + 2u * k + 1u]);
    uint h1 = murmur_u64(key, 0u), h2 = murmur_u64(key, 1u), len = pc.u[2];
    if (pc.u[3] != 0u) return uvec3(h1 & (len - 1u), h2 & (len - 1u), 1u);
    return uvec3(h1 % len, h2 % len, len);
}

void main() {
    uint B = pc.u[0], nO = pc.u[1];
    if (OP == 0u) {
        for (uint e = FIRST; e < B * nO; e += STRIDE) {
            uint b = e / nO, c = e % nO;
            precise float y = o[OFF(0) + e];
            for (int k = starts[OFF(4) + b]; k < starts[OFF(4) + b + 1u]; k++) {
                uvec3 ix = sparse_index(uint(k));
                float v = vals[OFF(2) + uint(k)];
                y += w[OFF(3) + ix.x + c * ix.z] * v;
                y += w[OFF(3) + ix.y + c * ix.z] * v;
            }
            o[OFF(0) + e] = y;
        }
    } else if (OP == 1u) {
        bool v1 = pc.u[3] != 0u;
        uint classes = v1 ? 1u : nO; // v1: one invocation does every class, in the CPU's order
        for (uint cc = FIRST; cc < classes; cc += STRIDE) {
            for (uint b = 0u; b < B; b++)
                for (int k = starts[OFF(4) + b]; k < starts[OFF(4) + b + 1u]; k++) {
                    uvec3 ix = sparse_index(uint(k));
                    float v = vals[OFF(2) + uint(k)];
                    for (uint c = v1 ? 0u : cc; c < (v1 ? nO : cc + 1u); c++) {
                        precise float g = w[OFF(3) + b * nO + c] * v; // binding 3 is dY here
                        o[OFF(0) + ix.x + c * ix.z] += g;
                        o[OFF(0) + ix.y + c * ix.z] += g;
                    }
                }
        }
    } else {
        for (uint i = FIRST; i < B; i += STRIDE) {
            uint s = uint(starts[OFF(4) + i]), len = uint(starts[OFF(4) + i + 1u]) - s - 1u;
            uint h = pc.u[4], nb = len / 4u;
            for (uint q = 0u; q < nb; q++) {
                uint p = s + 4u * q;
                uint k1 = byte_at(p) | (byte_at(p + 1u) << 8) | (byte_at(p + 2u) << 16) | (byte_at(p + 3u) << 24);
                h ^= mix_k1(k1);
                h = rotl32(h, 13u) * 5u + 0xe6546b64u;
            }
            uint t = s + 4u * nb, k1 = 0u, rem = len & 3u;
            if (rem == 3u) k1 ^= byte_at(t + 2u) << 16;
            if (rem >= 2u) k1 ^= byte_at(t + 1u) << 8;
            if (rem >= 1u) { k1 ^= byte_at(t); h ^= mix_k1(k1); }
            h ^= len;
            h = fmix32(h);
            ou[OFF(0) + 2u * i] = h;
            ou[OFF(0) + 2u * i + 1u] = (h >> 31) != 0u ? 0xFFFFFFFFu : 0u;
        }
    }
}
