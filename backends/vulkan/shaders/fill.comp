#version 450
// fill: bytes [u0, u1) of binding 0 (relative to its allocation) = the 32-bit pattern u2
// repeated; one invocation per word, partial words at either end merged with what is there.
#include "common.glsl"
layout(local_size_x = WG) in;
layout(std430, binding = 0) buffer Y { uint y[]; };
void main() {
    uint first = pc.u[0], end = pc.u[1], pat = pc.u[2];
    uint w0 = first / 4u, w1 = (end + 3u) / 4u;
    for (uint w = w0 + FIRST; w < w1; w += STRIDE) {
        uint lo = max(first, w * 4u) - w * 4u, hi = min(end, w * 4u + 4u) - w * 4u; // bytes of this word
        if (lo == 0u && hi == 4u) { y[w] = pat; continue; }
        uint mask = (hi == 4u ? 0xFFFFFFFFu : ((1u << (hi * 8u)) - 1u)) & ~((1u << (lo * 8u)) - 1u);
        y[w] = (y[w] & ~mask) | (pat & mask);
    }
}
