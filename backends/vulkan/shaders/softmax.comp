#version 450
// Softmax over rows of (M, N), one workgroup per row (rows stride by the workgroup count),
// reductions in shared memory:
//   spec 0 = 0: forward   Y = softmax(X / T)                  (0 = Y, 1 = X); may alias
//   spec 0 = 1: backward  dX = Y g - Y sum(Y g), g = dY / T   (0 = dX, 1 = Y, 2 = dY)
// u0 = M, u1 = N; f0 = temperature.
#include "common.glsl"
layout(local_size_x = WG) in;
layout(constant_id = 0) const uint BACKWARD = 0u;
layout(std430, binding = 0) buffer Ob { float o[]; };
layout(std430, binding = 1) readonly buffer Ab { float a[]; };
layout(std430, binding = 2) readonly buffer Bb { float b[]; };
shared float red[WG];

float reduce_sum(float v) {
    uint t = gl_LocalInvocationID.x;
    red[t] = v;
    barrier();
    for (uint s = WG / 2u; s > 0u; s >>= 1) {
        if (t < s) red[t] += red[t + s];
        barrier();
    }
    float r = red[0];
    barrier();
    return r;
}
float reduce_max(float v) {
    uint t = gl_LocalInvocationID.x;
    red[t] = v;
    barrier();
    for (uint s = WG / 2u; s > 0u; s >>= 1) {
        if (t < s) red[t] = max(red[t], red[t + s]);
        barrier();
    }
    float r = red[0];
    barrier();
    return r;
}

void main() {
    uint M = pc.u[0], N = pc.u[1], t = gl_LocalInvocationID.x;
    float T = pc.f[0];
    for (uint row = gl_WorkGroupID.x; row < M; row += gl_NumWorkGroups.x) {
        uint base = row * N;
        if (BACKWARD == 0u) {
            float mx = -1.0 / 0.0;
            for (uint j = t; j < N; j += WG) {
                float v = T == 1.0 ? a[OFF(1) + base + j] : a[OFF(1) + base + j] / T;
                mx = max(mx, v);
            }
            mx = reduce_max(mx);
            float s = 0.0;
            for (uint j = t; j < N; j += WG) {
                float v = T == 1.0 ? a[OFF(1) + base + j] : a[OFF(1) + base + j] / T;
                s += exp(v - mx);
            }
            s = reduce_sum(s);
            for (uint j = t; j < N; j += WG) {
                float v = T == 1.0 ? a[OFF(1) + base + j] : a[OFF(1) + base + j] / T;
                o[OFF(0) + base + j] = exp(v - mx) / s;
            }
        } else {
            float s = 0.0;
            for (uint j = t; j < N; j += WG) {
                float g = T == 1.0 ? b[OFF(2) + base + j] : b[OFF(2) + base + j] / T;
                s += a[OFF(1) + base + j] * g;
            }
            s = reduce_sum(s);
            for (uint j = t; j < N; j += WG) {
                float y = a[OFF(1) + base + j], g = T == 1.0 ? b[OFF(2) + base + j] : b[OFF(2) + base + j] / T;
                o[OFF(0) + base + j] = y * g - y * s;
            }
        }
        barrier();
    }
}
