#version 450
// Elementwise ops over n = u0 elements (binding 0 is written; it may alias an input):
//   spec 0 = 0: axpby            Y = alpha X + beta Y      (0 = Y, 1 = X), f0 = alpha, f1 = beta
//   spec 0 = 1: mul              Y = A * B                 (0 = Y, 1 = A, 2 = B)
//   spec 0 = 2: update_averages  ema -= (1 - decay)(ema - W) (0 = ema, 1 = W), f0 = 1 - decay
// `precise` keeps the compiler from fusing a*b+c, so results follow the CPU's rounding.
#include "common.glsl"
layout(local_size_x = WG) in;
layout(constant_id = 0) const uint OP = 0u;
layout(std430, binding = 0) buffer Yb { float y[]; };
layout(std430, binding = 1) readonly buffer Xb { float x[]; };
layout(std430, binding = 2) readonly buffer Zb { float z[]; };
void main() {
    uint n = pc.u[0];
    for (uint i = FIRST; i < n; i += STRIDE) {
        precise float r;
        if (OP == 0u) {
            float alpha = pc.f[0], beta = pc.f[1];
            float xv = x[OFF(1) + i];
            if (beta == 1.0) r = y[OFF(0) + i] + alpha * xv;
            else if (beta == 0.0) r = alpha * xv;
            else r = alpha * xv + beta * y[OFF(0) + i];
        } else if (OP == 1u) {
            r = x[OFF(1) + i] * z[OFF(2) + i];
        } else {
            float e = y[OFF(0) + i];
            r = e - pc.f[0] * (e - x[OFF(1) + i]);
        }
        y[OFF(0) + i] = r;
    }
}
