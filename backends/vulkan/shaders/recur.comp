#version 450
// Recurrent, attention and similarity kernels (core/primitives.def's lstm_scan, para_attention,
// cauchy_similarity and their backwards; the CPU's backends/cpu/scalar/lstm.c defines them).
// Every sum runs in the CPU's order with `precise` accumulators; only exp / tanh differ from
// libm in the last bits.
//
// LSTM: the host walks the T timesteps and records each step as dispatches over that step's rows
// (a step needs the previous one complete). Per step: u0 = H, u1 = rows n, u2 = the step's first
// row r0, u3 = the previous step's first row, u4 = how many of the n rows have a previous step
// (rows b >= u4 read h0 / c0).
//   spec 0 = 0: G[r] += Wh · hprev + (bx + bh)         (0 = G, 1 = Wh, 2 = bx, 3 = bh, 4 = Y, 5 = h0)
//   spec 0 = 1: gates, C[r], Y[r] from G[r], cprev      (0 = G, 1 = C, 2 = Y, 3 = c0)
//   spec 0 = 2: dG[r], dC[prev] (backward)              (0 = dG, 1 = G, 2 = C, 3 = c0, 4 = dY, 5 = dC)
//   spec 0 = 3: dY[prev] += dG[r]ᵀ · Wh                 (0 = dY, 1 = dG, 2 = Wh)
//   spec 0 = 4: dWh += dG[r] ⊗ hprev, rows in order     (0 = dWh, 1 = dG, 2 = Y, 3 = h0)
// ParametricAttention, X (N, O), u0 = B, u1 = O; binding 5 = starts (B + 1 ints):
// u2 = N; Tot (B,) holds a per-sequence sum. Per-row and per-sequence passes are separate
// dispatches (sums in row order, as the CPU adds them):
//   spec 0 = 5: A[r] = exp(clip(X[r] · Q))              (0 = A, 1 = X, 2 = Q)
//   spec 0 = 13: Tot[s] = sum of A (u3 = 0) or A * S    (0 = Tot, 1 = A, 2 = S)
//   spec 0 = 14: A[r] /= Tot[seq of r]                   (0 = A, 1 = Tot)
//   spec 0 = 6: Y = X * A                               (0 = Y, 1 = X, 2 = A)
//   spec 0 = 7: S[r] = X[r] · dY[r]                     (0 = S, 1 = X, 3 = dY)
//   spec 0 = 15: S[r] = A S - A Tot[seq of r] (ds)      (0 = S, 1 = Tot, 2 = A)
//   spec 0 = 8: dX = dY * A + ds ⊗ Q                    (0 = dX, 1 = dY, 2 = A, 3 = S, 4 = Q)
//   spec 0 = 9: dQ[j] += sum over rows of X * ds        (0 = dQ, 1 = X, 2 = S), u2 = N
// CauchySimilarity, X1, X2 (B, I), u0 = B, u1 = I:
//   spec 0 = 10: sim                                    (0 = sim, 1 = X1, 2 = X2, 3 = W)
//   spec 0 = 11: dX1, dX2                               (0 = dX1, 1 = dX2, 2 = X1, 3 = X2, 4 = W, 5 = sim|dsim)
//   spec 0 = 12: dW[j] += sum over b                    (0 = dW, 1 = X1, 2 = X2, 5 = sim|dsim)
//   (binding 5 for 11 / 12 holds sim (B,) then dsim (B,), packed by the host)
#include "common.glsl"
layout(local_size_x = WG) in;
layout(constant_id = 0) const uint OP = 0u;
layout(std430, binding = 0) buffer B0 { float b0[]; };
layout(std430, binding = 1) buffer B1 { float b1[]; };
layout(std430, binding = 2) buffer B2 { float b2[]; };
layout(std430, binding = 3) buffer B3 { float b3[]; };
layout(std430, binding = 4) buffer B4 { float b4[]; };
layout(std430, binding = 5) buffer B5 { float b5[]; };

float sigm(float x) { return 1.0 / (1.0 + exp(-x)); }
float safe_tanh(float x) { // GLSL's tanh may overflow for large |x| on some drivers
    float t = exp(-2.0 * abs(x));
    return sign(x) * (1.0 - t) / (1.0 + t);
}
int start_of(uint b) { return floatBitsToInt(b5[OFF(5) + b]); }
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
    uint H = pc.u[0], n = pc.u[1], r0 = pc.u[2], p0 = pc.u[3], np = pc.u[4];
    if (OP == 0u) {
        for (uint e = FIRST; e < n * 4u * H; e += STRIDE) {
            uint b = e / (4u * H), j = e % (4u * H);
            precise float acc = 0.0;
            for (uint k = 0u; k < H; k++) {
                float hp = b < np ? b4[OFF(4) + (p0 + b) * H + k] : b5[OFF(5) + k];
                precise float prod = b1[OFF(1) + j * H + k] * hp;
                acc += prod;
            }
            precise float bias = b2[OFF(2) + j] + b3[OFF(3) + j];
            precise float add = acc + bias;
            uint gi = OFF(0) + (r0 + b) * 4u * H + j;
            b0[gi] = b0[gi] + add;
        }
    } else if (OP == 1u) {
        for (uint e = FIRST; e < n * H; e += STRIDE) {
            uint b = e / H, h = e % H, r = r0 + b, g = OFF(0) + r * 4u * H;
            float cp = b < np ? b1[OFF(1) + (p0 + b) * H + h] : b3[OFF(3) + h];
            float f = sigm(b0[g + h]), i = sigm(b0[g + H + h]), o = sigm(b0[g + 2u * H + h]),
                  cc = safe_tanh(b0[g + 3u * H + h]);
            precise float fc = f * cp;
            precise float ic = i * cc;
            precise float c = fc + ic;
            b0[g + h] = f; b0[g + H + h] = i; b0[g + 2u * H + h] = o; b0[g + 3u * H + h] = cc;
            b1[OFF(1) + r * H + h] = c;
            b2[OFF(2) + r * H + h] = safe_tanh(c) * o;
        }
    } else if (OP == 2u) {
        for (uint e = FIRST; e < n * H; e += STRIDE) {
            uint b = e / H, h = e % H, r = r0 + b, g = r * 4u * H;
            float cp = b < np ? b2[OFF(2) + (p0 + b) * H + h] : b3[OFF(3) + h];
            float f = b1[OFF(1) + g + h], i = b1[OFF(1) + g + H + h], o = b1[OFF(1) + g + 2u * H + h],
                  cc = b1[OFF(1) + g + 3u * H + h];
            float tc = safe_tanh(b2[OFF(2) + r * H + h]), dy = b4[OFF(4) + r * H + h];
            precise float dc = b5[OFF(5) + r * H + h] + dy * o * (1.0 - tc * tc);
            precise float g0 = dc * cp * f * (1.0 - f);
            precise float g1 = dc * cc * i * (1.0 - i);
            precise float g2 = dy * tc * o * (1.0 - o);
            precise float g3 = dc * i * (1.0 - cc * cc);
            b0[OFF(0) + g + h] = g0; b0[OFF(0) + g + H + h] = g1;
            b0[OFF(0) + g + 2u * H + h] = g2; b0[OFF(0) + g + 3u * H + h] = g3;
            if (b < np) {
                precise float dcp = dc * f;
                b5[OFF(5) + (p0 + b) * H + h] = dcp;
            }
        }
    } else if (OP == 3u) {
        for (uint e = FIRST; e < np * H; e += STRIDE) {
            uint b = e / H, h = e % H, di = OFF(0) + (p0 + b) * H + h;
            precise float acc = b0[di];
            for (uint j = 0u; j < 4u * H; j++) {
                precise float prod = b1[OFF(1) + (r0 + b) * 4u * H + j] * b2[OFF(2) + j * H + h];
                acc += prod;
            }
            b0[di] = acc;
        }
    } else if (OP == 4u) {
        for (uint e = FIRST; e < 4u * H * H; e += STRIDE) {
            uint j = e / H, h = e % H;
            precise float acc = b0[OFF(0) + e];
            for (uint b = 0u; b < n; b++) {
                float hp = b < np ? b2[OFF(2) + (p0 + b) * H + h] : b3[OFF(3) + h];
                precise float prod = b1[OFF(1) + (r0 + b) * 4u * H + j] * hp;
                acc += prod;
            }
            b0[OFF(0) + e] = acc;
        }
    } else if (OP == 5u || OP == 7u) {
        uint O = pc.u[1], N = pc.u[2];
        for (uint r = FIRST; r < N; r += STRIDE) {
            precise float d = 0.0;
            for (uint j = 0u; j < O; j++) {
                precise float prod = b1[OFF(1) + r * O + j] * (OP == 5u ? b2[OFF(2) + j] : b3[OFF(3) + r * O + j]);
                d += prod;
            }
            b0[OFF(0) + r] = OP == 5u ? exp(d < -20.0 ? -20.0 : (d > 20.0 ? 20.0 : d)) : d;
        }
    } else if (OP == 13u) {
        uint B = pc.u[0];
        for (uint s = FIRST; s < B; s += STRIDE) {
            uint a = uint(start_of(s)), z = uint(start_of(s + 1u));
            precise float sum = 0.0;
            for (uint r = a; r < z; r++) {
                precise float v = pc.u[3] != 0u ? b1[OFF(1) + r] * b2[OFF(2) + r] : b1[OFF(1) + r];
                sum += v;
            }
            b0[OFF(0) + s] = sum;
        }
    } else if (OP == 14u || OP == 15u) {
        uint N = pc.u[2];
        for (uint r = FIRST; r < N; r += STRIDE) {
            float tot = b1[OFF(1) + seq_of(r)];
            if (OP == 14u) {
                b0[OFF(0) + r] = b0[OFF(0) + r] / tot;
            } else {
                float A = b2[OFF(2) + r];
                precise float x1 = A * b0[OFF(0) + r];
                precise float x2 = A * tot;
                precise float ds = x1 - x2;
                b0[OFF(0) + r] = ds;
            }
        }
    } else if (OP == 6u) {
        uint B = pc.u[0], O = pc.u[1], N = uint(start_of(B));
        for (uint e = FIRST; e < N * O; e += STRIDE) b0[OFF(0) + e] = b1[OFF(1) + e] * b2[OFF(2) + e / O];
    } else if (OP == 8u) {
        uint B = pc.u[0], O = pc.u[1], N = uint(start_of(B));
        for (uint e = FIRST; e < N * O; e += STRIDE) {
            precise float x1 = b1[OFF(1) + e] * b2[OFF(2) + e / O];
            precise float x2 = b3[OFF(3) + e / O] * b4[OFF(4) + e % O];
            precise float v = x1 + x2;
            b0[OFF(0) + e] = v;
        }
    } else if (OP == 9u) {
        uint O = pc.u[1], N = pc.u[2];
        for (uint j = FIRST; j < O; j += STRIDE) {
            precise float acc = b0[OFF(0) + j];
            for (uint r = 0u; r < N; r++) {
                precise float prod = b1[OFF(1) + r * O + j] * b2[OFF(2) + r];
                acc += prod;
            }
            b0[OFF(0) + j] = acc;
        }
    } else if (OP == 10u) {
        uint B = pc.u[0], I = pc.u[1];
        for (uint b = FIRST; b < B; b += STRIDE) {
            precise float tot = 0.0;
            for (uint j = 0u; j < I; j++) {
                precise float d = b1[OFF(1) + b * I + j] - b2[OFF(2) + b * I + j];
                precise float dd = d * d;
                precise float w = b3[OFF(3) + j] * dd;
                tot += w;
            }
            precise float den = 1.0 + tot;
            b0[OFF(0) + b] = 1.0 / den;
        }
    } else if (OP == 11u) {
        uint B = pc.u[0], I = pc.u[1];
        for (uint e = FIRST; e < B * I; e += STRIDE) {
            uint b = e / I, j = e % I;
            float inv = b5[OFF(5) + b];
            precise float dt = b5[OFF(5) + B + b] * (-(inv * inv));
            precise float d = b2[OFF(2) + e] - b3[OFF(3) + e];
            precise float wd = b4[OFF(4) + j] * dt;
            precise float dd = 2.0 * wd * d;
            b0[OFF(0) + e] = dd;
            b1[OFF(1) + e] = -dd;
        }
    } else if (OP == 12u) {
        uint B = pc.u[0], I = pc.u[1];
        for (uint j = FIRST; j < I; j += STRIDE) {
            precise float acc = b0[OFF(0) + j];
            for (uint b = 0u; b < B; b++) {
                float inv = b5[OFF(5) + b];
                precise float dt = b5[OFF(5) + B + b] * (-(inv * inv));
                precise float d = b1[OFF(1) + b * I + j] - b2[OFF(2) + b * I + j];
                precise float dd = d * d;
                precise float v = dt * dd;
                acc += v;
            }
            b0[OFF(0) + j] = acc;
        }
    }
}
