#version 450
// 2-D convolution of imported graphs (core/primitives.def's conv2d(_backward); the CPU's
// backends/cpu/scalar/graph.c defines them). Geometry (lithe__conv2d): u0..u9 = N, C, H, W, M,
// KH, KW, OH, OW, group; f0..f5 hold the ints stride h, stride w, pad top, pad left, dil h, dil w
// (as bits); f6 bits = 1 when a bias is bound. One invocation per output element, summing in
// the CPU's order with `precise`, so every result carries the CPU's bits.
//   spec 0 = 0: Y (N, M, OH, OW) = conv(X, W) + b     (0 = Y, 1 = X, 2 = W, 3 = b)
//   spec 0 = 1: dX (N, C, H, W) += dY ⋆ W             (0 = dX, 1 = dY, 2 = W)
//   spec 0 = 2: dW (M, C/g, KH, KW) += X ⋆ dY          (0 = dW, 1 = dY, 2 = X)
//   spec 0 = 3: db (M,) += dY summed                   (0 = db, 1 = dY)
// Pooling (lithe__pool2d): u0..u8 as above with M unused; u9 = 1 for max, 2 | for
// count_include_pad, 4 | when no which is bound (inference max pooling: Y only). Max pooling is
// bit-exact; average divides on the device (GLSL division).
//   spec 0 = 4: Y (N, C, OH, OW), which (max)          (0 = Y, 1 = X, 4 = which)
//   spec 0 = 5: dX (N, C, H, W) += routed dY           (0 = dX, 1 = dY, 4 = which)
#include "common.glsl"
layout(local_size_x = WG) in;
layout(constant_id = 0) const uint OP = 0u;
layout(std430, binding = 0) buffer B0 { float b0[]; };
layout(std430, binding = 1) readonly buffer B1 { float b1[]; };
layout(std430, binding = 2) readonly buffer B2 { float b2[]; };
layout(std430, binding = 3) readonly buffer B3 { float b3[]; };
layout(std430, binding = 4) buffer B4 { int which[]; };

int gi(uint k) { return floatBitsToInt(pc.f[k]); }

// The in-bounds taps of window (oh, ow), as the CPU counts them.
int window_count(int H, int W, int KH, int KW, int oh, int ow, int sh, int sw, int ph, int pw, int dh, int dw) {
    int count = 0;
    for (int kh = 0; kh < KH; kh++) {
        int h = oh * sh - ph + kh * dh;
        for (int kw = 0; kw < KW; kw++) {
            int w = ow * sw - pw + kw * dw;
            if (h >= 0 && h < H && w >= 0 && w < W) count++;
        }
    }
    return count;
}

void pool(int N, int C, int H, int W, int KH, int KW, int OH, int OW, bool is_max, bool cip, bool keep, int sh,
          int sw, int ph, int pw, int dh, int dw) {
    if (OP == 4u) {
        uint total = uint(N * C * OH * OW);
        for (uint e = FIRST; e < total; e += STRIDE) {
            int ow = int(e % uint(OW)), oh = int((e / uint(OW)) % uint(OH)), nc = int(e / uint(OW * OH));
            uint xo = uint(nc * H * W);
            float best = uintBitsToFloat(0xff800000u); // -inf
            precise float sum = 0.0;
            int arg = -1, count = 0;
            for (int kh = 0; kh < KH; kh++) {
                int h = oh * sh - ph + kh * dh;
                for (int kw = 0; kw < KW; kw++) {
                    int w = ow * sw - pw + kw * dw;
                    if (h < 0 || h >= H || w < 0 || w >= W) continue;
                    float v = b1[OFF(1) + xo + uint(h * W + w)];
                    count++;
                    sum += v;
                    if (arg < 0 || v > best) { best = v; arg = h * W + w; }
                }
            }
            if (is_max) {
                b0[OFF(0) + e] = best;
                if (keep) which[OFF(4) + e] = arg;
            } else {
                int div = cip ? KH * KW : count;
                b0[OFF(0) + e] = div != 0 ? sum / float(div) : 0.0;
            }
        }
    } else {
        uint total = uint(N * C * H * W);
        for (uint e = FIRST; e < total; e += STRIDE) {
            int w = int(e % uint(W)), h = int((e / uint(W)) % uint(H)), nc = int(e / uint(W * H));
            uint yo = uint(nc * OH * OW);
            precise float acc = b0[OFF(0) + e];
            for (int oh = 0; oh < OH; oh++) {
                int th = h + ph - oh * sh;
                bool inh = th >= 0 && th % dh == 0 && th / dh < KH;
                if (!is_max && !inh) continue;
                for (int ow = 0; ow < OW; ow++) {
                    uint o = yo + uint(oh * OW + ow);
                    if (is_max) {
                        if (which[OFF(4) + o] == h * W + w) acc += b1[OFF(1) + o];
                        continue;
                    }
                    int tw = w + pw - ow * sw;
                    if (tw < 0 || tw % dw != 0 || tw / dw >= KW) continue;
                    int div = cip ? KH * KW : window_count(H, W, KH, KW, oh, ow, sh, sw, ph, pw, dh, dw);
                    if (div == 0) continue;
                    precise float share = b1[OFF(1) + o] / float(div);
                    acc += share;
                }
            }
            b0[OFF(0) + e] = acc;
        }
    }
}

void main() {
    int N = int(pc.u[0]), C = int(pc.u[1]), H = int(pc.u[2]), W = int(pc.u[3]), M = int(pc.u[4]),
        KH = int(pc.u[5]), KW = int(pc.u[6]), OH = int(pc.u[7]), OW = int(pc.u[8]), G = int(pc.u[9]);
    int sh = gi(0u), sw = gi(1u), ph = gi(2u), pw = gi(3u), dh = gi(4u), dw = gi(5u);
    if (OP == 4u || OP == 5u) {
        pool(N, C, H, W, KH, KW, OH, OW, (pc.u[9] & 1u) != 0u, (pc.u[9] & 2u) != 0u, (pc.u[9] & 4u) == 0u, sh, sw,
             ph, pw, dh, dw);
        return;
    }
    int Cg = C / G, Mg = M / G;
    if (OP == 0u) {
        uint total = uint(N * M * OH * OW);
        for (uint e = FIRST; e < total; e += STRIDE) {
            int ow = int(e % uint(OW)), oh = int((e / uint(OW)) % uint(OH)), m = int((e / uint(OW * OH)) % uint(M)),
                n = int(e / uint(OW * OH * M));
            int c0 = (m / Mg) * Cg;
            precise float acc = gi(6u) != 0 ? b3[OFF(3) + uint(m)] : 0.0;
            for (int c = 0; c < Cg; c++) {
                uint xo = uint((n * C + c0 + c) * H * W), wo = uint((m * Cg + c) * KH * KW);
                for (int kh = 0; kh < KH; kh++) {
                    int h = oh * sh - ph + kh * dh;
                    if (h < 0 || h >= H) continue;
                    for (int kw = 0; kw < KW; kw++) {
                        int w = ow * sw - pw + kw * dw;
                        if (w < 0 || w >= W) continue;
                        precise float prod = b1[OFF(1) + xo + uint(h * W + w)] * b2[OFF(2) + wo + uint(kh * KW + kw)];
                        acc += prod;
                    }
                }
            }
            b0[OFF(0) + e] = acc;
        }
    } else if (OP == 1u) {
        // the CPU adds, for m of cin's group, oh, ow ascending, the one tap (kh, kw) reaching (h, w)
        uint total = uint(N * C * H * W);
        for (uint e = FIRST; e < total; e += STRIDE) {
            int w = int(e % uint(W)), h = int((e / uint(W)) % uint(H)), ci = int((e / uint(W * H)) % uint(C)),
                n = int(e / uint(W * H * C));
            int grp = ci / Cg, c = ci - grp * Cg;
            precise float acc = b0[OFF(0) + e];
            for (int m = grp * Mg; m < (grp + 1) * Mg; m++) {
                uint yo = uint((n * M + m) * OH * OW), wo = uint((m * Cg + c) * KH * KW);
                for (int oh = 0; oh < OH; oh++) {
                    int th = h + ph - oh * sh;
                    if (th < 0 || th % dh != 0 || th / dh >= KH) continue;
                    int kh = th / dh;
                    for (int ow = 0; ow < OW; ow++) {
                        int tw = w + pw - ow * sw;
                        if (tw < 0 || tw % dw != 0 || tw / dw >= KW) continue;
                        int kw = tw / dw;
                        precise float prod = b1[OFF(1) + yo + uint(oh * OW + ow)] * b2[OFF(2) + wo + uint(kh * KW + kw)];
                        acc += prod;
                    }
                }
            }
            b0[OFF(0) + e] = acc;
        }
    } else if (OP == 2u) {
        uint total = uint(M * Cg * KH * KW);
        for (uint e = FIRST; e < total; e += STRIDE) {
            int kw = int(e % uint(KW)), kh = int((e / uint(KW)) % uint(KH)), c = int((e / uint(KW * KH)) % uint(Cg)),
                m = int(e / uint(KW * KH * Cg));
            int c0 = (m / Mg) * Cg;
            precise float acc = b0[OFF(0) + e];
            for (int n = 0; n < N; n++) {
                uint yo = uint((n * M + m) * OH * OW), xo = uint((n * C + c0 + c) * H * W);
                for (int oh = 0; oh < OH; oh++) {
                    int h = oh * sh - ph + kh * dh;
                    if (h < 0 || h >= H) continue;
                    for (int ow = 0; ow < OW; ow++) {
                        int w = ow * sw - pw + kw * dw;
                        if (w < 0 || w >= W) continue;
                        precise float prod = b1[OFF(1) + yo + uint(oh * OW + ow)] * b2[OFF(2) + xo + uint(h * W + w)];
                        acc += prod;
                    }
                }
            }
            b0[OFF(0) + e] = acc;
        }
    } else {
        for (uint m = FIRST; m < uint(M); m += STRIDE) {
            precise float acc = b0[OFF(0) + m];
            for (int n = 0; n < N; n++)
                for (int o = 0; o < OH * OW; o++) acc += b1[OFF(1) + uint((n * M + int(m)) * OH * OW + o)];
            b0[OFF(0) + m] = acc;
        }
    }
}
