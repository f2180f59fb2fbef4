#version 450
// Reductions read back by the host (synchronisation points):
//   spec 0 = 0: sum_squares  partial[g] = sum of x^2 over workgroup g's grid-stride share
//               (binding 0 = partials, one float per workgroup; the host adds them in double)
//   spec 0 = 1: any_outside  flag[0] = 1 if some x is outside [f0, f1] or NaN (binding 0 = flag,
//               zeroed before)
//   spec 0 = 2: clip_gradient's decision, one workgroup: invocation 0 adds the u0 partials of
//               sum_squares (binding 1) in order, compensated (Kahan: near the double sum the host
//               makes for sum_squares), and writes {factor = f0 / |G|, apply = |G| >= f0} to
//               binding 0 (floats), |G| = sqrt of the sum
//   spec 0 = 3: clip_gradient's scaling: G (binding 0, u0 elements) = 0 G + factor G (axpby's
//               expression) where apply; factor and apply read from binding 1
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
    } else if (OP == 2u) {
        if (gl_GlobalInvocationID.x != 0u) return;
        precise float s = 0.0, comp = 0.0;
        for (uint i = 0u; i < n; i++) {
            precise float y = x[OFF(1) + i] - comp;
            precise float t2 = s + y;
            comp = (t2 - s) - y;
            s = t2;
        }
        float norm = sqrt(s);
        bool apply = norm >= pc.f[0];
        o[OFF(0)] = apply ? pc.f[0] / norm : 1.0;
        o[OFF(0) + 1u] = apply ? 1.0 : 0.0;
    } else if (OP == 3u) {
        if (x[OFF(1) + 1u] == 0.0) return;
        float beta = x[OFF(1)];
        for (uint i = FIRST; i < n; i += STRIDE) {
            float v = o[OFF(0) + i];
            o[OFF(0) + i] = beta == 1.0 ? v + 0.0 * v : (beta == 0.0 ? 0.0 * v : 0.0 * v + beta * v);
        }
    } else {
        bool out_ = false;
        for (uint i = FIRST; i < n; i += STRIDE) {
            float v = x[OFF(1) + i];
            out_ = out_ || !(v >= pc.f[0] && v <= pc.f[1]);
        }
        if (out_) o[OFF(0)] = 1.0;
    }
}
