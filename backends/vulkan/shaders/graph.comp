#version 450
// Elementwise maths and log-softmax of imported graphs (core/primitives.def's unary(_backward),
// log_softmax(_backward); the CPU's backends/cpu/scalar/graph.c defines them). exp / log / erf
// come from the driver (erf: Abramowitz-Stegun 7.1.26, absolute error 1.5e-7), and the CPU sums
// log-softmax rows in double where this shader sums in float (no shaderFloat64): both within the
// tolerances test_vulkan states.
//   spec 0 = 0: Y = f(X), u0 = op (lithe__unary_op), u1 = n       (0 = Y, 1 = X)
//   spec 0 = 1: dX += dY f'(X), u0 = op, u1 = n                    (0 = dX, 1 = X, 2 = Y, 3 = dY)
//   spec 0 = 2: log_softmax of rows, u0 = M, u1 = N                (0 = Y, 1 = X; may alias)
//   spec 0 = 3: dX += dY - exp(Y) sum(dY) per row, u0 = M, u1 = N  (0 = dX, 1 = Y, 2 = dY)
#include "common.glsl"
layout(local_size_x = WG) in;
layout(constant_id = 0) const uint OP = 0u;
layout(std430, binding = 0) buffer B0 { float b0[]; };
layout(std430, binding = 1) buffer B1 { float b1[]; };
layout(std430, binding = 2) readonly buffer B2 { float b2[]; };
layout(std430, binding = 3) readonly buffer B3 { float b3[]; };

#define UN_EXP 0u
#define UN_LOG 1u
#define UN_SQRT 2u
#define UN_NEG 3u
#define UN_ERF 4u
#define UN_ABS 5u
#define UN_RECIPROCAL 6u
#define UN_FLOOR 7u
#define UN_CEIL 8u
#define UN_ROUND 9u
#define UN_SIN 10u
#define UN_COS 11u

float erf_as(float x) {
    const float a1 = 0.254829592, a2 = -0.284496736, a3 = 1.421413741, a4 = -1.453152027, a5 = 1.061405429,
                p = 0.3275911;
    float s = x > 0.0 ? 1.0 : (x < 0.0 ? -1.0 : 0.0);
    float ax = abs(x);
    float t = 1.0 / (1.0 + p * ax);
    float y = 1.0 - (((((a5 * t + a4) * t) + a3) * t + a2) * t + a1) * t * exp(-ax * ax);
    return s * y;
}

void main() {
    uint op = pc.u[0];
    if (OP == 0u) {
        for (uint k = FIRST; k < pc.u[1]; k += STRIDE) {
            float x = b1[OFF(1) + k], y;
            if (op == UN_EXP) y = exp(x);
            else if (op == UN_LOG) y = log(x);
            else if (op == UN_SQRT) y = sqrt(x);
            else if (op == UN_NEG) y = -x;
            else if (op == UN_ERF) y = erf_as(x);
            else if (op == UN_ABS) y = abs(x);
            else if (op == UN_FLOOR) y = floor(x);
            else if (op == UN_CEIL) y = ceil(x);
            else if (op == UN_ROUND) y = roundEven(x);
            else if (op == UN_SIN) y = sin(x);
            else if (op == UN_COS) y = cos(x);
            else y = 1.0 / x;
            b0[OFF(0) + k] = y;
        }
    } else if (OP == 1u) {
        for (uint k = FIRST; k < pc.u[1]; k += STRIDE) {
            float x = b1[OFF(1) + k], y = b2[OFF(2) + k], g = b3[OFF(3) + k];
            precise float d;
            if (op == UN_EXP) d = g * y;
            else if (op == UN_LOG) d = g / x;
            else if (op == UN_SQRT) d = g * 0.5 / y;
            else if (op == UN_NEG) d = -g;
            else if (op == UN_ERF) d = g * 1.12837916709551257 * exp(-x * x);
            else if (op == UN_ABS) d = x > 0.0 ? g : x < 0.0 ? -g : 0.0;
            else if (op == UN_FLOOR || op == UN_CEIL || op == UN_ROUND) d = 0.0;
            else if (op == UN_SIN) d = g * cos(x);
            else if (op == UN_COS) d = -(g * sin(x));
            else d = -(g * y * y);
            precise float v = b0[OFF(0) + k] + d;
            b0[OFF(0) + k] = v;
        }
    } else if (OP == 2u) {
        uint M = pc.u[0], N = pc.u[1];
        for (uint r = FIRST; r < M; r += STRIDE) {
            float mx = uintBitsToFloat(0xff800000u); // -inf
            for (uint j = 0u; j < N; j++) mx = max(mx, b1[OFF(1) + r * N + j]);
            precise float s = 0.0;
            for (uint j = 0u; j < N; j++) s += exp(b1[OFF(1) + r * N + j] - mx);
            precise float lse = mx + log(s);
            for (uint j = 0u; j < N; j++) {
                precise float y = b1[OFF(1) + r * N + j] - lse;
                b0[OFF(0) + r * N + j] = y;
            }
        }
    } else {
        uint M = pc.u[0], N = pc.u[1];
        for (uint r = FIRST; r < M; r += STRIDE) {
            precise float s = 0.0;
            for (uint j = 0u; j < N; j++) s += b2[OFF(2) + r * N + j];
            for (uint j = 0u; j < N; j++) {
                precise float e = exp(b1[OFF(1) + r * N + j]) * s;
                precise float d = b2[OFF(2) + r * N + j] - e;
                precise float v = b0[OFF(0) + r * N + j] + d;
                b0[OFF(0) + r * N + j] = v;
            }
        }
    }
}
