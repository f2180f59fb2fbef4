#version 450
// cce_labels: D (B, C) = (G - T) / divisor, T the one-hot of labels with label smoothing
// (on = 1 - smoothing, off = smoothing / (C - 1)); rows whose label equals `missing` are 0.
// Bindings 0 = D, 1 = G, 2 = labels (int32 when u2 = 0, int64 as two words when u2 = 1).
// u0 = B, u1 = C, u3 = has_missing, u4 / u5 = missing (low, high word); f0 = on, f1 = off,
// f2 = divisor.
#include "common.glsl"
layout(local_size_x = WG) in;
layout(std430, binding = 0) buffer Db { float d[]; };
layout(std430, binding = 1) readonly buffer Gb { float g[]; };
layout(std430, binding = 2) readonly buffer Lb { uint lab[]; };
void main() {
    uint B = pc.u[0], C = pc.u[1], n = B * C;
    for (uint e = FIRST; e < n; e += STRIDE) {
        uint i = e / C, j = e % C;
        uvec2 l = pc.u[2] != 0u ? uvec2(lab[OFF(2) + 2u * i], lab[OFF(2) + 2u * i + 1u])
                                : uvec2(lab[OFF(2) + i], (lab[OFF(2) + i] >> 31) != 0u ? 0xFFFFFFFFu : 0u);
        bool masked = pc.u[3] != 0u && l == uvec2(pc.u[4], pc.u[5]);
        float t = (l.y == 0u && l.x == j) ? pc.f[0] : pc.f[1];
        precise float v = masked ? 0.0 : g[OFF(1) + e] - t;
        d[OFF(0) + e] = v / pc.f[2];
    }
}
