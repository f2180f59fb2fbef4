#version 450
// Reductions read back by the host (synchronisation points):
//   spec 0 = 0: sum_squares  partial[g] = sum of x^2 over workgroup g's grid-stride share
//               (binding 0 = partials, one float per workgroup; the host adds them in double)
//   spec 0 = 1: any_outside  flag[0] = 1 if some x is outside [f0, f1] or NaN (binding 0 = flag,
//               zeroed before)
// binding 1 = X; u0 = n.
#include "common.glsl"
layout(local_size_x = WG) in;
layout(constant_id = 0) const uint OP = 0u;
layout(std430, binding = 0) buffer Ob { float o[]; };
layout(std430, binding = 1) readonly buffer Xb { float x[]; };
shared float red[WG];
void main() {
    uint n = pc.u[0], t = gl_LocalInvocationID.x;
    if (OP == 0u) {
        float s = 0.0;
        for (uint i = FIRST; i < n; i += STRIDE) { float v = x[OFF(1) + i]; s += v * v; }
        red[t] = s;
        barrier();
        for (uint k = WG / 2u; k > 0u; k >>= 1) {
            if (t < k) red[t] += red[t + k];
            barrier();
        }
        if (t == 0u) o[OFF(0) + gl_WorkGroupID.x] = red[0];
    } else {
        bool out_ = false;
        for (uint i = FIRST; i < n; i += STRIDE) {
            float v = x[OFF(1) + i];
            out_ = out_ || !(v >= pc.f[0] && v <= pc.f[1]);
        }
        if (out_) o[OFF(0)] = 1.0;
    }
}
