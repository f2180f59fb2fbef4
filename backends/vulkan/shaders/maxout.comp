#version 450
// Maxout over P pieces, one invocation per (b, o) row of R = B * O:
//   spec 0 = 0: forward   Y[r] = max_p X[r, p], which[r] = Thinc's argmax  (0 = Y, 1 = which, 2 = X)
//   spec 0 = 1: backward  dX[r, p] = p == which[r] ? dY[r] : 0           (0 = dX, 1 = which, 2 = dY)
// u0 = R, u1 = P.
#include "common.glsl"
layout(local_size_x = WG) in;
layout(constant_id = 0) const uint BACKWARD = 0u;
layout(std430, binding = 0) buffer Ob { float o[]; };
layout(std430, binding = 1) buffer Wb { int which[]; };
layout(std430, binding = 2) readonly buffer Ib { float inp[]; };
void main() {
    uint R = pc.u[0], P = pc.u[1];
    for (uint r = FIRST; r < R; r += STRIDE) {
        if (BACKWARD == 0u) {
            uint base = OFF(2) + r * P;
            int best = 0;
            float bv = inp[base];
            if (P == 3u) { // Thinc's unrolled argmax (backends/common/rows.h): (x1, x2), then x0
                float v1 = inp[base + 1u], v2 = inp[base + 2u];
                int b = v2 > v1 ? 2 : 1;
                float m = b == 2 ? v2 : v1;
                if (m > bv) { bv = m; best = b; }
            } else {
                for (uint p = 1u; p < P; p++) {
                    float v = inp[base + p];
                    if (v > bv) { bv = v; best = int(p); }
                }
            }
            o[OFF(0) + r] = bv;
            which[OFF(1) + r] = best;
        } else {
            int w = which[OFF(1) + r];
            float dy = inp[OFF(2) + r];
            for (uint p = 0u; p < P; p++) o[OFF(0) + r * P + p] = int(p) == w ? dy : 0.0;
        }
    }
}
