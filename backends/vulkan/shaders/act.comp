#version 450
// Activations and their backprops with Thinc 8.1's formulas (the CPU's act.c is the reference):
//   spec 0 = 0: forward   Y = act(X)                 (0 = Y, 1 = X)
//   spec 0 = 1: backward  dX = dY * act'(X, Y)       (0 = dX, 1 = dY, 2 = X, 3 = Y)
// u0 = n, u1 = kind (lithe__act_kind order); f0..f4 = slope, offset, min, max, threshold.
// Outputs may alias inputs (each invocation reads its element before writing it).
#include "common.glsl"
layout(local_size_x = WG) in;
layout(constant_id = 0) const uint BACKWARD = 0u;
layout(std430, binding = 0) buffer Ob { float o[]; };
layout(std430, binding = 1) readonly buffer Ib { float inp[]; };
layout(std430, binding = 2) readonly buffer Xb { float xs[]; };
layout(std430, binding = 3) readonly buffer Yb { float ys[]; };

#define RELU 0u
#define SIGMOID 1u
#define TANH 2u
#define SWISH 3u
#define GELU 4u
#define MISH 5u
#define DISH 6u
#define HARD_SIGMOID 7u
#define HARD_TANH 8u
#define HARD_SWISH 9u
#define HARD_SWISH_MOBILENET 10u
#define CLIPPED_LINEAR 11u

// GLSL's clamp, min and max leave NaN open (lavapipe returns a bound): clip by comparisons, as the
// CPU's twin does, so a NaN input stays NaN (Thinc's np.clip)
float clip(float x, float lo, float hi) { return x < lo ? lo : (x > hi ? hi : x); }
float sigmoid_clipped(float x) { return 1.0 / (1.0 + exp(-clip(x, -20.0, 20.0))); }
float safe_tanh(float x) { // GLSL's tanh may overflow for large |x| on some drivers
    float t = exp(-2.0 * abs(x));
    return sign(x) * (1.0 - t) / (1.0 + t);
}
float thinc_erf(float x) {
    const float a1 = 0.254829592, a2 = -0.284496736, a3 = 1.421413741, a4 = -1.453152027,
                a5 = 1.061405429, p = 0.3275911;
    float s = x > 0.0 ? 1.0 : (x < 0.0 ? -1.0 : 0.0);
    float ax = abs(x);
    float t = 1.0 / (1.0 + p * ax);
    float y = 1.0 - (((((a5 * t + a4) * t) + a3) * t + a2) * t + a1) * t * exp(-ax * ax);
    return s * y;
}
float cdf(float x) { return 0.5 * (1.0 + thinc_erf(x * 0.70710678118654752)); }
float pdf(float x) { return 0.3989422804014327 * exp(-0.5 * x * x); }

float forward(uint kind, float x) {
    switch (kind) {
    case RELU: return x <= 0.0 ? 0.0 : x; // Thinc's cpu_relu: NaN stays NaN
    case SIGMOID: return sigmoid_clipped(x);
    case TANH: return safe_tanh(x);
    case SWISH: return x * sigmoid_clipped(x);
    case GELU: return x * cdf(x);
    case MISH: return x < pc.f[4] ? x * safe_tanh(log(1.0 + exp(x))) : x;
    case DISH: return x * (0.5 * (x / sqrt(x * x + 1.0) + 1.0));
    case HARD_SIGMOID: return clip(x * 0.2 + 0.5, 0.0, 1.0);
    case HARD_TANH: return clip(x, -1.0, 1.0);
    case HARD_SWISH: return x * clip(x * 0.2 + 0.5, 0.0, 1.0);
    case HARD_SWISH_MOBILENET: return x * (clip(x + 3.0, 0.0, 6.0) / 6.0);
    default: return clip(x * pc.f[0] + pc.f[1], pc.f[2], pc.f[3]);
    }
}

float backward(uint kind, float dy, float x, float y) {
    switch (kind) {
    case RELU: return y <= 0.0 ? 0.0 : dy;
    case SIGMOID: return dy * (y * (1.0 - y));
    case TANH: return dy * (1.0 - y * y);
    case SWISH: return dy * (y + sigmoid_clipped(x) * (1.0 - y));
    case GELU: return dy * (cdf(x) + x * pdf(x));
    case MISH: {
        if (!(x < pc.f[4])) return dy; // NaN too, as Thinc's x < threshold
        float e1 = exp(x), e2 = exp(2.0 * x), e3 = exp(3.0 * x);
        float omega = 4.0 * (x + 1.0) + 4.0 * e2 + e3 + e1 * (4.0 * x + 6.0);
        float delta = 2.0 * e1 + e2 + 2.0;
        return dy * ((e1 * omega) / (delta * delta));
    }
    case DISH: {
        float sq1 = x * x + 1.0;
        return dy * (x / sqrt(sq1) - (0.5 * x * (x * x)) / (sq1 * sqrt(sq1)) + 0.5);
    }
    case HARD_SIGMOID: return dy * ((x > -2.5 && x < 2.5) ? 0.2 : 0.0);
    case HARD_TANH: return dy * ((x > -1.0 && x < 1.0) ? 1.0 : 0.0);
    case HARD_SWISH: return dy * (x > 2.5 ? 1.0 : (x < -2.5 ? 0.0 : x * 0.4 + 0.5));
    case HARD_SWISH_MOBILENET: return (x > 3.0 ? 1.0 : (x < -3.0 ? 0.0 : (1.0 / 6.0) * (x * 2.0 + 3.0))) * dy;
    default: {
        float low = (pc.f[2] - pc.f[1]) / pc.f[0], high = (pc.f[3] - pc.f[1]) / pc.f[0];
        return dy * ((low < x && x < high) ? pc.f[0] : 0.0);
    }
    }
}

void main() {
    uint n = pc.u[0], kind = pc.u[1];
    for (uint i = FIRST; i < n; i += STRIDE) {
        if (BACKWARD == 0u) {
            o[OFF(0) + i] = forward(kind, inp[OFF(1) + i]);
        } else {
            float x = pc.u[2] != 0u ? xs[OFF(2) + i] : 0.0, y = pc.u[3] != 0u ? ys[OFF(3) + i] : 0.0;
            o[OFF(0) + i] = backward(kind, inp[OFF(1) + i], x, y);
        }
    }
}
