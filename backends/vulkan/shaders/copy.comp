#version 450
// copy: Y = X element by element in row-major order, either side a strided view. Elements are
// one word (u0 = 1) or two (u0 = 2). Binding 2 holds the layouts as ints:
//   [ndimX, shapeX[8], stridesX[8] (elements), ndimY, shapeY[8], stridesY[8]]. u1 = numel.
#include "common.glsl"
layout(local_size_x = WG) in;
layout(std430, binding = 0) buffer Yb { uint y[]; };
layout(std430, binding = 1) readonly buffer Xb { uint x[]; };
layout(std430, binding = 2) readonly buffer Lb { int lay[]; };
uint offset_of(uint n, uint base) {
    int nd = lay[base];
    uint off = 0u;
    for (int d = nd - 1; d >= 0; d--) {
        uint ext = uint(lay[base + 1u + uint(d)]);
        off += (n % ext) * uint(lay[base + 9u + uint(d)]);
        n /= ext;
    }
    return off;
}
void main() {
    uint ws = pc.u[0], n = pc.u[1];
    for (uint i = FIRST; i < n; i += STRIDE) {
        uint ox = OFF(1) + offset_of(i, OFF(2)) * ws, oy = OFF(0) + offset_of(i, OFF(2) + 17u) * ws;
        y[oy] = x[ox];
        if (ws == 2u) y[oy + 1u] = x[ox + 1u];
    }
}
