#version 450
// Row-broadcast ops on Y (M, N), one invocation per column walking the rows in order, so the
// float sums are added in the CPU's order (the same bits):
//   spec 0 = 0: add_row    Y[i, j] += b[j]                    (binding 0 = Y, 1 = b)
//   spec 0 = 1: sum_rows   y[j] = beta * y[j] + sum_i X[i, j]  (binding 0 = y, 1 = X), f0 = beta
// u0 = M, u1 = N.
#include "common.glsl"
layout(local_size_x = WG) in;
layout(constant_id = 0) const uint OP = 0u;
layout(std430, binding = 0) buffer Yb { float y[]; };
layout(std430, binding = 1) readonly buffer Xb { float x[]; };
void main() {
    uint M = pc.u[0], N = pc.u[1];
    for (uint j = FIRST; j < N; j += STRIDE) {
        if (OP == 0u) {
            float bj = x[OFF(1) + j];
            for (uint i = 0u; i < M; i++) y[OFF(0) + i * N + j] += bj;
        } else {
            float s = pc.f[0] == 0.0 ? 0.0 : pc.f[0] * y[OFF(0) + j];
            for (uint i = 0u; i < M; i++) s += x[OFF(1) + i * N + j];
            y[OFF(0) + j] = s;
        }
    }
}
