#version 450
// Sequence kernels over Ragged rows (Thinc's cpu_reduce_* and seq2col), X (N, O) rows grouped
// into B sequences. Binding 2 holds what the host derived from the host-side lengths: starts
// (B + 1 ints, starts[B] = N) then B float scales (1 / length as the CPU computes it, 0 for an
// empty sequence). u0 = B, u1 = O (columns), u2 = nW, u3 = mean.
//   spec 0 = 0: reduce_sum           Y (B, O)  (0 = Y, 1 = X)
//   spec 0 = 1: reduce_sum_backward  dX (N, O) (0 = dX, 1 = dY)
//   spec 0 = 2: reduce_max           Y (B, O), which (B, O) (0 = Y, 1 = X, 3 = which)
//   spec 0 = 3: reduce_max_backward  dX (N, O) (0 = dX, 1 = dY, 3 = which)
//   spec 0 = 4: seq2col              Y (N, (2 nW + 1) O) (0 = Y, 1 = X)
//   spec 0 = 5: seq2col_backward     dX (N, O) (0 = dX, 1 = dY)
// Reductions run one invocation per (sequence, column) walking rows in order, and seq2col's
// backward adds window slots in the CPU's order, so results carry the CPU's bits.
#include "common.glsl"
layout(local_size_x = WG) in;
layout(constant_id = 0) const uint OP = 0u;
layout(std430, binding = 0) buffer Ob { float o[]; };
layout(std430, binding = 1) readonly buffer Ib { float x[]; };
layout(std430, binding = 2) readonly buffer Mb { int meta[]; };
layout(std430, binding = 3) buffer Wb { int which[]; };

int start_of(uint b) { return meta[OFF(2) + b]; }
float scale_of(uint b) { return intBitsToFloat(meta[OFF(2) + pc.u[0] + 1u + b]); }
// the sequence holding row r: the last b with starts[b] <= r (empty sequences skipped)
uint seq_of(uint r) {
    uint lo = 0u, hi = pc.u[0]; // starts[lo] <= r < starts[hi]
    while (hi - lo > 1u) {
        uint mid = (lo + hi) / 2u;
        if (uint(start_of(mid)) <= r) lo = mid; else hi = mid;
    }
    return lo;
}

void main() {
    uint B = pc.u[0], O = pc.u[1], nW = pc.u[2];
    uint N = uint(start_of(B));
    if (OP == 0u || OP == 1u || OP == 2u || OP == 3u) {
        for (uint e = FIRST; e < B * O; e += STRIDE) {
            uint b = e / O, j = e % O;
            uint s = uint(start_of(b)), t = uint(start_of(b + 1u));
            if (OP == 0u) {
                precise float acc = 0.0;
                float sc = scale_of(b);
                for (uint r = s; r < t; r++) {
                    float v = x[OFF(1) + r * O + j];
                    acc += pc.u[3] != 0u ? v * sc : v;
                }
                o[OFF(0) + e] = acc;
            } else if (OP == 1u) {
                float dy = x[OFF(1) + e], sc = scale_of(b);
                precise float g = pc.u[3] != 0u ? dy * sc : dy;
                for (uint r = s; r < t; r++) o[OFF(0) + r * O + j] = g;
            } else if (OP == 2u) {
                float best = x[OFF(1) + s * O + j];
                int w = 0;
                for (uint r = s + 1u; r < t; r++) {
                    float v = x[OFF(1) + r * O + j];
                    if (v > best) { best = v; w = int(r - s); }
                }
                o[OFF(0) + e] = best;
                which[OFF(3) + e] = w;
            } else {
                int w = which[OFF(3) + e];
                for (uint r = s; r < t; r++) o[OFF(0) + r * O + j] = int(r - s) == w ? x[OFF(1) + e] : 0.0;
            }
        }
        return;
    }
    uint nF = 2u * nW + 1u;
    if (OP == 4u) {
        for (uint e = FIRST; e < N * nF * O; e += STRIDE) {
            uint r = e / (nF * O), f = (e / O) % nF, k = e % O;
            uint b = seq_of(r);
            int src = int(r) - int(nW) + int(f);
            o[OFF(0) + e] = (src >= start_of(b) && src < start_of(b + 1u)) ? x[OFF(1) + uint(src) * O + k] : 0.0;
        }
    } else {
        for (uint e = FIRST; e < N * O; e += STRIDE) {
            uint d = e / O, k = e % O;
            uint b = seq_of(d);
            int s = start_of(b), t = start_of(b + 1u);
            float acc = 0.0;
            // the CPU adds, for rows j ascending, slot f = d + nW - j of row j
            for (int j = int(d) - int(nW); j <= int(d) + int(nW); j++) {
                if (j < s || j >= t) continue;
                uint f = uint(int(d) + int(nW) - j);
                acc += x[OFF(1) + (uint(j) * nF + f) * O + k];
            }
            o[OFF(0) + e] = acc;
        }
    }
}
