#version 450
// Thinc's LayerNorm over rows of X (M, N). u0 = M, u1 = N; f0 = eps.
//   spec 0 = 0: forward, one workgroup per row: mean, biased variance (two passes, so wide rows
//               keep float accuracy), Y = G (X - mu) / sqrt(var + eps) + b.
//               bindings 0 = Y, 1 = X, 2 = G, 3 = b, 4 = mean, 5 = inv_std
//   spec 0 = 1: backward dX, one workgroup per row, with xhat = (X - mu) inv_std, g = dY G:
//               dX = inv_std (g - mean(g) - xhat mean(g xhat)); dX may alias dY.
//               bindings 0 = dX, 1 = dY, 2 = X, 3 = G, 4 = mean, 5 = inv_std
//   spec 0 = 2: backward dG += sum_i dY xhat, db += sum_i dY; one invocation per column walking
//               rows in order. Recorded before spec 1, which may overwrite dY.
//               bindings 0 = dG, 1 = dY, 2 = X, 3 = db, 4 = mean, 5 = inv_std
#include "common.glsl"
layout(local_size_x = WG) in;
layout(constant_id = 0) const uint OP = 0u;
layout(std430, binding = 0) buffer B0 { float o[]; };
layout(std430, binding = 1) readonly buffer B1 { float a[]; };
layout(std430, binding = 2) readonly buffer B2 { float b2[]; };
layout(std430, binding = 3) buffer B3 { float b3[]; };
layout(std430, binding = 4) buffer B4 { float mean[]; };
layout(std430, binding = 5) buffer B5 { float istd[]; };
shared float red[WG];
shared float red2[WG];

vec2 reduce2(vec2 v) {
    uint t = gl_LocalInvocationID.x;
    red[t] = v.x;
    red2[t] = v.y;
    barrier();
    for (uint s = WG / 2u; s > 0u; s >>= 1) {
        if (t < s) { red[t] += red[t + s]; red2[t] += red2[t + s]; }
        barrier();
    }
    vec2 r = vec2(red[0], red2[0]);
    barrier();
    return r;
}

void main() {
    uint M = pc.u[0], N = pc.u[1], t = gl_LocalInvocationID.x;
    if (OP == 2u) {
        for (uint j = FIRST; j < N; j += STRIDE) {
            float dg = 0.0, db = 0.0;
            for (uint i = 0u; i < M; i++) {
                float dy = a[OFF(1) + i * N + j];
                float xhat = (b2[OFF(2) + i * N + j] - mean[OFF(4) + i]) * istd[OFF(5) + i];
                dg += dy * xhat;
                db += dy;
            }
            o[OFF(0) + j] += dg;
            b3[OFF(3) + j] += db;
        }
        return;
    }
    for (uint row = gl_WorkGroupID.x; row < M; row += gl_NumWorkGroups.x) {
        uint base = row * N;
        if (OP == 0u) {
            float s = 0.0;
            for (uint j = t; j < N; j += WG) s += a[OFF(1) + base + j];
            float mu = reduce2(vec2(s, 0.0)).x / float(N);
            float v = 0.0;
            for (uint j = t; j < N; j += WG) { float d = a[OFF(1) + base + j] - mu; v += d * d; }
            float var = reduce2(vec2(v, 0.0)).x / float(N);
            float is = 1.0 / sqrt(var + pc.f[0]);
            if (t == 0u) { mean[OFF(4) + row] = mu; istd[OFF(5) + row] = is; }
            for (uint j = t; j < N; j += WG)
                o[OFF(0) + base + j] = ((a[OFF(1) + base + j] - mu) * is) * b2[OFF(2) + j] + b3[OFF(3) + j];
        } else {
            float mu = mean[OFF(4) + row], is = istd[OFF(5) + row];
            vec2 s = vec2(0.0);
            for (uint j = t; j < N; j += WG) {
                // precise: g rounded once, as the CPU does, in both loops (a driver that fused the second
                // loop's g - s.x into an fma left a 1-wide row's dX at 1e-4, not 0, on an H200)
                precise float g = a[OFF(1) + base + j] * b3[OFF(3) + j];
                float xhat = (b2[OFF(2) + base + j] - mu) * is;
                s += vec2(g, g * xhat);
            }
            s = reduce2(s) / float(N);
            for (uint j = t; j < N; j += WG) {
                precise float g = a[OFF(1) + base + j] * b3[OFF(3) + j];
                float xhat = (b2[OFF(2) + base + j] - mu) * is;
                o[OFF(0) + base + j] = is * (g - s.x - xhat * s.y);
            }
        }
        barrier();
    }
}
