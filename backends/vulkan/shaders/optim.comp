#version 450
// Optimizer updates, elementwise in float32 in the CPU's order of operations (`precise`: no
// fused multiply-adds), bindings 0 = W, 1 = G, 2 = m1, 3 = m2 (4 = avg for spec 2); u0 = n.
//   spec 0 = 0: Thinc's fused Adam. f0..f3 = beta1, beta2, eps, lr.
//   spec 0 = 1: Thinc's RAdam. f0..f6 = beta1, omb1, beta2, omb2, eps, coef; u1 = rectified.
//   spec 0 = 2: adam_step (primitives.def): Adam on gscale * G, then G = 0, W *= wscale (unless
//     1) and, when u1 != 0, the averages. f0..f6 = gscale, beta1, beta2, eps, lr, wscale, decay;
//     when u2 != 0, binding 5 holds clip_gradient's decision {factor, apply} (reduce.comp, spec
//     2), and gscale is the factor where apply is set.
#include "common.glsl"
layout(local_size_x = WG) in;
layout(constant_id = 0) const uint OP = 0u;
layout(std430, binding = 0) buffer Wb { float w[]; };
layout(std430, binding = 1) buffer Gb { float gr[]; };
layout(std430, binding = 2) buffer M1 { float m1[]; };
layout(std430, binding = 3) buffer M2 { float m2[]; };
layout(std430, binding = 4) buffer AV { float av[]; };
layout(std430, binding = 5) readonly buffer CF { float cf[]; };
void main() {
    uint n = pc.u[0];
    for (uint i = FIRST; i < n; i += STRIDE) {
        float g = gr[OFF(1) + i];
        precise float a = m1[OFF(2) + i], b = m2[OFF(3) + i], wv = w[OFF(0) + i];
        if (OP == 0u) {
            float beta1 = pc.f[0], beta2 = pc.f[1], eps = pc.f[2], lr = pc.f[3];
            float omb1 = 1.0 - beta1, omb2 = 1.0 - beta2;
            a *= beta1;
            a += g * omb1;
            b *= beta2;
            b += omb2 * (g * g);
            precise float step = a / (sqrt(b) + eps);
            wv += -lr * step;
        } else if (OP == 2u) {
            float gscale = pc.u[2] != 0u && cf[OFF(5) + 1u] != 0.0 ? cf[OFF(5)] : pc.f[0], beta1 = pc.f[1], beta2 = pc.f[2], eps = pc.f[3], lr = pc.f[4], wscale = pc.f[5];
            float omb1 = 1.0 - beta1, omb2 = 1.0 - beta2, omd = 1.0 - pc.f[6];
            precise float gg = gscale == 1.0 ? g : gscale * g;
            a *= beta1;
            a += gg * omb1;
            b *= beta2;
            b += omb2 * (gg * gg);
            precise float step = a / (sqrt(b) + eps);
            wv += -lr * step;
            if (wscale != 1.0) wv = wscale * wv;
            gr[OFF(1) + i] = 0.0;
            if (pc.u[1] != 0u) {
                precise float e = av[OFF(4) + i];
                e -= omd * (e - wv);
                av[OFF(4) + i] = e;
            }
        } else {
            float beta1 = pc.f[0], omb1 = pc.f[1], beta2 = pc.f[2], omb2 = pc.f[3], eps = pc.f[4], coef = pc.f[5];
            b *= beta2;
            b += omb2 * (g * g);
            a *= beta1;
            a += omb1 * g;
            if (pc.u[1] != 0u) wv += coef * (a / (sqrt(b) + eps));
            else if (coef != 0.0) wv += coef * a;
        }
        m1[OFF(2) + i] = a;
        m2[OFF(3) + i] = b;
        w[OFF(0) + i] = wv;
    }
}
