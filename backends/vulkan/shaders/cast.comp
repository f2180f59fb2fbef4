#version 450
// cast: Y = X converted, bit for bit as the CPU's scalar twin (backends/cpu/scalar/cast.c):
// f32 -> f16/bf16 round to nearest even on the bits, f32 -> ints truncate and saturate (NaN: 0),
// f16/bf16 -> f32 exact, ints -> f32 correctly rounded. Dtype codes are lithe_dtype's:
// 0 f32, 1 f16, 2 bf16, 3 i32, 4 i64, 6 u8. u0 = from, u1 = to, u2 = n, u3 / u4 = byte offsets
// of X / Y inside their allocations. One side is always f32.
#include "common.glsl"
layout(local_size_x = WG) in;
layout(std430, binding = 0) buffer Yb { uint y[]; };
layout(std430, binding = 1) readonly buffer Xb { uint x[]; };

uint f32_to_f16(float v) {
    uint u = floatBitsToUint(v);
    uint sign = (u >> 16) & 0x8000u, ex = (u >> 23) & 0xFFu, man = u & 0x7FFFFFu;
    if (ex == 0xFFu) return sign | 0x7C00u | (man != 0u ? (0x200u | (man >> 13)) : 0u);
    int e = int(ex) - 127 + 15;
    if (e >= 31) return sign | 0x7C00u;
    if (e <= 0) {
        if (e < -10) return sign;
        uint full = man | 0x800000u, shift = uint(14 - e);
        uint m = full >> shift, rem = full & ((1u << shift) - 1u), half_ = 1u << (shift - 1u);
        if (rem > half_ || (rem == half_ && (m & 1u) != 0u)) m++;
        return sign | m;
    }
    uint m = man >> 13, rem = man & 0x1FFFu;
    uint h = (uint(e) << 10) | m;
    if (rem > 0x1000u || (rem == 0x1000u && (m & 1u) != 0u)) h++;
    return sign | h;
}
float f16_to_f32(uint h) {
    uint sign = (h & 0x8000u) << 16, ex = (h >> 10) & 0x1Fu, man = h & 0x3FFu;
    if (ex == 0x1Fu) return uintBitsToFloat(sign | 0x7F800000u | (man << 13));
    if (ex == 0u) { float v = float(man) * (1.0 / 16777216.0); return sign != 0u ? -v : v; }
    return uintBitsToFloat(sign | ((ex - 15u + 127u) << 23) | (man << 13));
}
uint f32_to_bf16(float v) {
    uint u = floatBitsToUint(v);
    if ((u & 0x7F800000u) == 0x7F800000u && (u & 0x7FFFFFu) != 0u) return ((u >> 16) | 0x40u) & 0xFFFFu;
    return ((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16) & 0xFFFFu;
}
// float -> int64 truncating and saturating like cast.c's sat(): NaN 0, the ends of the range
// clamp (2^63 - 2^39 being the largest float below 2^63).
uvec2 f32_to_i64(float v) {
    if (isnan(v)) return uvec2(0u);
    if (v >= 9223372036854775808.0) return uvec2(0x00000000u, 0x7FFFFF80u);
    if (v <= -9223372036854775808.0) return uvec2(0u, 0x80000000u);
    float t = trunc(abs(v));
    uint hi = uint(t * (1.0 / 4294967296.0));
    uint lo = uint(t - float(hi) * 4294967296.0); // exact: see the CPU's notes on float spacing
    uvec2 m = uvec2(lo, hi);
    return v < 0.0 ? neg64(m) : m;
}
// int64 -> float, rounded to nearest even.
float i64_to_f32(uvec2 a) {
    bool neg = (a.y >> 31) != 0u;
    uvec2 m = neg ? neg64(a) : a;
    float r;
    if (m.y == 0u) {
        r = float(m.x);
    } else {
        int msb = findMSB(m.y) + 32;        // top bit position
        uint sh = uint(msb - 23);           // bits dropped to keep 24
        uvec2 kept = shr64(m, sh);
        uvec2 dropped = m ^ shl64(kept, sh);
        uvec2 halfv = shl64(uvec2(1u, 0u), sh - 1u);
        uint mant = kept.x;                 // < 2^24
        bool above = dropped.y > halfv.y || (dropped.y == halfv.y && dropped.x > halfv.x);
        bool tie = dropped == halfv;
        if (above || (tie && (mant & 1u) != 0u)) mant++;
        r = float(mant) * exp2(float(sh));  // exact: mant <= 2^24, a power-of-two scale
    }
    return neg ? -r : r;
}

uint esize(uint dt) { return dt == 4u ? 8u : (dt == 1u || dt == 2u) ? 2u : dt == 6u ? 1u : 4u; }

float read_as_f32(uint from, uint e) {
    uint b = pc.u[3] + e * esize(from), w = b / 4u, sh = (b % 4u) * 8u;
    if (from == 0u) return uintBitsToFloat(x[w]);
    if (from == 1u) return f16_to_f32((x[w] >> sh) & 0xFFFFu);
    if (from == 2u) return uintBitsToFloat(((x[w] >> sh) & 0xFFFFu) << 16);
    if (from == 3u) return float(int(x[w]));
    if (from == 4u) return i64_to_f32(uvec2(x[w], x[w + 1u]));
    return float((x[w] >> sh) & 0xFFu);
}
float sat(float v, float lo, float hi) { return isnan(v) ? 0.0 : clamp(trunc(v), lo, hi); }

void main() {
    uint from = pc.u[0], to = pc.u[1], n = pc.u[2], yb = pc.u[4];
    if (to == 0u || to == 3u || to == 4u) {
        for (uint i = FIRST; i < n; i += STRIDE) {
            float v = read_as_f32(from, i);
            if (to == 0u) y[yb / 4u + i] = floatBitsToUint(v);
            else if (to == 3u) y[yb / 4u + i] = uint(int(sat(v, -2147483648.0, 2147483520.0)) +
                                                   (v >= 2147483648.0 ? 127 : 0));
            else { uvec2 r = f32_to_i64(v); y[yb / 4u + 2u * i] = r.x; y[yb / 4u + 2u * i + 1u] = r.y; }
        }
        return;
    }
    // 2- and 1-byte outputs: one invocation per output word, merging at the ends
    uint es = esize(to), first = yb, end = yb + n * es;
    for (uint w = first / 4u + FIRST; w < (end + 3u) / 4u; w += STRIDE) {
        uint word = y[w];
        for (uint b = max(first, w * 4u); b < min(end, w * 4u + 4u); b += es) {
            float v = read_as_f32(from, (b - first) / es);
            uint bits = to == 1u ? f32_to_f16(v) : to == 2u ? f32_to_bf16(v) : uint(sat(v, 0.0, 255.0));
            uint sh = (b % 4u) * 8u, mask = (es == 2u ? 0xFFFFu : 0xFFu) << sh;
            word = (word & ~mask) | ((bits << sh) & mask);
        }
        y[w] = word;
    }
}
