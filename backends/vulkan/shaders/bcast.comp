#version 450
// Broadcasting ops of imported graphs (core/primitives.def's bcast_binary(_backward), bcast_where,
// broadcast_to, reduce_to; the CPU's backends/cpu/scalar/graph.c defines them). Binding 5 holds
// the layout the host derives as the CPU does (bcast_strides): [nd, shape[8], s0[8], s1[8],
// s2[8]], shape the full index space, s<i> operand i's element strides in it (0 along a
// broadcast axis). Forward ops run one invocation per output element. Reductions (reduce_to, the
// binary backward) run one invocation per reduced element, visiting the full-space elements that
// map to it in the CPU's odometer order, so sums carry the CPU's bits.
//   spec 0 = 0: Y = A op B, u0 = op, u1 = n                       (0 = Y, 1 = A (s0), 2 = B (s1))
//   spec 0 = 1: Y = C != 0 ? A : B, u1 = n                        (0 = Y, 1 = C (s0), 2 = A (s1), 3 = B (s2))
//   spec 0 = 2: Y = beta Y + alpha X, u1 = n, f0 = alpha, f1 = beta (0 = Y, 1 = X (s0))
//   spec 0 = 3: Y = beta Y + alpha sum X, u1 = numel Y             (0 = Y (s0), 1 = X)
//   spec 0 = 4: dA (u2 = 0, strides s0) or dB (u2 = 1, strides s1) += the gradient of A op B,
//               u0 = op, u1 = numel of the target, u3 = Y bound     (0 = dA | dB, 1 = A, 2 = B, 3 = Y, 4 = dY)
#include "common.glsl"
layout(local_size_x = WG) in;
layout(constant_id = 0) const uint OP = 0u;
layout(std430, binding = 0) buffer B0 { float b0[]; };
layout(std430, binding = 1) readonly buffer B1 { float b1[]; };
layout(std430, binding = 2) readonly buffer B2 { float b2[]; };
layout(std430, binding = 3) readonly buffer B3 { float b3[]; };
layout(std430, binding = 4) readonly buffer B4 { float b4[]; };
layout(std430, binding = 5) readonly buffer B5 { int lay[]; };

#define BIN_ADD 0u
#define BIN_SUB 1u
#define BIN_MUL 2u
#define BIN_DIV 3u
#define BIN_POW 4u
#define BIN_LESS 5u
#define BIN_GREATER 6u
#define BIN_EQUAL 7u

int nd() { return lay[OFF(5)]; }
int shp(int d) { return lay[OFF(5) + 1u + uint(d)]; }
int str(int o, int d) { return lay[OFF(5) + 9u + uint(o * 8 + d)]; }

// powf's results where GLSL's pow is undefined (a <= 0): integer exponents of negatives, zero bases
float powf_(float a, float b) {
    if (b == 0.0) return 1.0;
    if (a > 0.0) return pow(a, b);
    if (a == 0.0) return b > 0.0 ? 0.0 : uintBitsToFloat(0x7f800000u);
    if (floor(b) != b) return uintBitsToFloat(0x7fc00000u);
    float r = pow(-a, b);
    return mod(b, 2.0) != 0.0 ? -r : r;
}

float bin_fwd(uint op, float a, float b) {
    if (op == BIN_ADD) return a + b;
    if (op == BIN_SUB) return a - b;
    if (op == BIN_MUL) return a * b;
    if (op == BIN_DIV) return a / b;
    if (op == BIN_LESS) return a < b ? 1.0 : 0.0;
    if (op == BIN_GREATER) return a > b ? 1.0 : 0.0;
    if (op == BIN_EQUAL) return a == b ? 1.0 : 0.0;
    return powf_(a, b);
}

// operand o's offset at full-space element k
uint off_of(int o, uint k) {
    uint off = 0u;
    for (int d = nd() - 1; d >= 0; d--) {
        uint e = uint(shp(d));
        off += (k % e) * uint(str(o, d));
        k /= e;
    }
    return off;
}

void main() {
    uint n = pc.u[1];
    if (OP == 0u) {
        for (uint k = FIRST; k < n; k += STRIDE)
            b0[OFF(0) + k] = bin_fwd(pc.u[0], b1[OFF(1) + off_of(0, k)], b2[OFF(2) + off_of(1, k)]);
    } else if (OP == 1u) {
        for (uint k = FIRST; k < n; k += STRIDE)
            b0[OFF(0) + k] = b1[OFF(1) + off_of(0, k)] != 0.0 ? b2[OFF(2) + off_of(1, k)] : b3[OFF(3) + off_of(2, k)];
    } else if (OP == 2u) {
        float alpha = pc.f[0], beta = pc.f[1];
        for (uint k = FIRST; k < n; k += STRIDE) {
            precise float prev = beta == 0.0 ? 0.0 : beta * b0[OFF(0) + k];
            precise float v = prev + alpha * b1[OFF(1) + off_of(0, k)];
            b0[OFF(0) + k] = v;
        }
    } else {
        int side = OP == 3u ? 0 : int(pc.u[2]);
        for (uint e = FIRST; e < n; e += STRIDE) {
            // the target's coordinates: axes where its stride is nonzero; the rest are reduced
            int coord[8];
            uint R = 1u;
            for (int d = 0; d < nd(); d++) {
                int s = str(side, d);
                coord[d] = s != 0 ? int((e / uint(s)) % uint(shp(d))) : 0;
                if (s == 0) R *= uint(shp(d));
            }
            precise float acc;
            if (OP == 3u) {
                float beta = pc.f[1];
                acc = beta == 0.0 ? 0.0 : beta * b0[OFF(0) + e];
            } else {
                acc = b0[OFF(0) + e];
            }
            for (uint r = 0u; r < R; r++) {
                uint rr = r, k = 0u, oo = 0u, full = 1u;
                for (int d = nd() - 1; d >= 0; d--) {
                    int c = coord[d];
                    if (str(side, d) == 0) {
                        c = int(rr % uint(shp(d)));
                        rr /= uint(shp(d));
                    }
                    k += uint(c) * full;
                    full *= uint(shp(d));
                    oo += uint(c) * uint(str(1 - side, d));
                }
                if (OP == 3u) {
                    precise float v = pc.f[0] * b1[OFF(1) + k];
                    acc += v;
                    continue;
                }
                float a = side == 0 ? b1[OFF(1) + e] : b1[OFF(1) + oo];
                float b = side == 0 ? b2[OFF(2) + oo] : b2[OFF(2) + e];
                float y = pc.u[3] != 0u ? b3[OFF(3) + k] : 0.0, g = b4[OFF(4) + k];
                uint op = pc.u[0];
                precise float d;
                if (op == BIN_ADD) d = g;
                else if (op == BIN_SUB) d = side == 0 ? g : -g;
                else if (op == BIN_MUL) d = side == 0 ? g * b : g * a;
                else if (op == BIN_DIV) d = side == 0 ? g / b : -g * y / b;
                else if (op == BIN_LESS || op == BIN_GREATER || op == BIN_EQUAL) d = 0.0;
                else d = side == 0 ? g * b * powf_(a, b - 1.0) : (a > 0.0 ? g * y * log(a) : 0.0);
                acc += d;
            }
            b0[OFF(0) + e] = acc;
        }
    }
}
