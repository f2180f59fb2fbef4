// cast: Y = X converted, bit for bit as the CPU's scalar twin (backends/cpu/scalar/cast.c; a port
// of backends/vulkan/shaders/cast.comp): f32 -> f16/bf16 round to nearest even on the bits,
// f32 -> ints truncate and saturate (NaN: 0), f16/bf16 -> f32 exact, ints -> f32 correctly
// rounded. Dtype codes are lithe_dtype's: 0 f32, 1 f16, 2 bf16, 3 i32, 4 i64, 6 u8. u0 = from,
// u1 = to, u2 = n, u3 / u4 = byte offsets of X / Y in their buffers (whole buffers are bound:
// 2- and 1-byte elements need byte addressing). One side is always f32.
// Bindings 1 = Y, 2 = X, as 32-bit words.
@group(0) @binding(1) var<storage, read_write> y: array<u32>;
@group(0) @binding(2) var<storage, read> x: array<u32>;

fn is_nan(v: f32) -> bool { return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u; }
fn neg64(a: vec2<u32>) -> vec2<u32> {
    let lo = ~a.x + 1u;
    return vec2<u32>(lo, ~a.y + select(0u, 1u, lo == 0u));
}
fn shr64(a: vec2<u32>, n: u32) -> vec2<u32> { // 0 < n < 64
    if (n >= 32u) { return vec2<u32>(a.y >> (n - 32u), 0u); }
    return vec2<u32>((a.x >> n) | (a.y << (32u - n)), a.y >> n);
}
fn shl64(a: vec2<u32>, n: u32) -> vec2<u32> { // 0 < n < 64
    if (n >= 32u) { return vec2<u32>(0u, a.x << (n - 32u)); }
    return vec2<u32>(a.x << n, (a.y << n) | (a.x >> (32u - n)));
}
fn f32_to_f16(v: f32) -> u32 {
    let u = bitcast<u32>(v);
    let sign = (u >> 16u) & 0x8000u; let ex = (u >> 23u) & 0xFFu; let man = u & 0x7FFFFFu;
    if (ex == 0xFFu) { return sign | 0x7C00u | select(0u, 0x200u | (man >> 13u), man != 0u); }
    let e = i32(ex) - 127 + 15;
    if (e >= 31) { return sign | 0x7C00u; }
    if (e <= 0) {
        if (e < -10) { return sign; }
        let full = man | 0x800000u; let shift = u32(14 - e);
        var m = full >> shift; let rem = full & ((1u << shift) - 1u); let half_ = 1u << (shift - 1u);
        if (rem > half_ || (rem == half_ && (m & 1u) != 0u)) { m++; }
        return sign | m;
    }
    let m = man >> 13u; let rem = man & 0x1FFFu;
    var h = (u32(e) << 10u) | m;
    if (rem > 0x1000u || (rem == 0x1000u && (m & 1u) != 0u)) { h++; }
    return sign | h;
}
fn f16_to_f32(h: u32) -> f32 {
    let sign = (h & 0x8000u) << 16u; let ex = (h >> 10u) & 0x1Fu; let man = h & 0x3FFu;
    if (ex == 0x1Fu) { return bitcast<f32>(sign | 0x7F800000u | (man << 13u)); }
    if (ex == 0u) { let v = f32(man) * (1.0 / 16777216.0); return select(v, -v, sign != 0u); }
    return bitcast<f32>(sign | ((ex - 15u + 127u) << 23u) | (man << 13u));
}
fn f32_to_bf16(v: f32) -> u32 {
    let u = bitcast<u32>(v);
    if ((u & 0x7F800000u) == 0x7F800000u && (u & 0x7FFFFFu) != 0u) { return ((u >> 16u) | 0x40u) & 0xFFFFu; }
    return ((u + 0x7FFFu + ((u >> 16u) & 1u)) >> 16u) & 0xFFFFu;
}
// float -> int64 truncating and saturating like cast.c's sat(): NaN 0, the ends of the range clamp
fn f32_to_i64(v: f32) -> vec2<u32> {
    if (is_nan(v)) { return vec2<u32>(0u, 0u); }
    if (v >= 9223372036854775808.0) { return vec2<u32>(0x00000000u, 0x7FFFFF80u); }
    if (v <= -9223372036854775808.0) { return vec2<u32>(0u, 0x80000000u); }
    let t = trunc(abs(v));
    let hi = u32(t * (1.0 / 4294967296.0));
    let lo = u32(t - f32(hi) * 4294967296.0); // exact: see the CPU's notes on float spacing
    let m = vec2<u32>(lo, hi);
    if (v < 0.0) { return neg64(m); }
    return m;
}
// int64 -> float, rounded to nearest even
fn i64_to_f32(a: vec2<u32>) -> f32 {
    let neg = (a.y >> 31u) != 0u;
    var m = a;
    if (neg) { m = neg64(a); }
    var r: f32;
    if (m.y == 0u) {
        r = f32(m.x);
    } else {
        let msb = firstLeadingBit(m.y) + 32u;
        let sh = msb - 23u;
        let kept = shr64(m, sh);
        let back = shl64(kept, sh);
        let dropped = vec2<u32>(m.x ^ back.x, m.y ^ back.y);
        var halfv = vec2<u32>(1u, 0u);
        if (sh > 1u) { halfv = shl64(vec2<u32>(1u, 0u), sh - 1u); }
        var mant = kept.x;
        let above = dropped.y > halfv.y || (dropped.y == halfv.y && dropped.x > halfv.x);
        let tie = dropped.x == halfv.x && dropped.y == halfv.y;
        if (above || (tie && (mant & 1u) != 0u)) { mant++; }
        r = f32(mant) * exp2(f32(sh));
    }
    return select(r, -r, neg);
}
fn esize(dt: u32) -> u32 {
    if (dt == 4u) { return 8u; }
    if (dt == 1u || dt == 2u) { return 2u; }
    if (dt == 6u) { return 1u; }
    return 4u;
}
fn read_as_f32(src_t: u32, e: u32) -> f32 {
    let b = U(3u) + e * esize(src_t); let w = b / 4u; let sh = (b % 4u) * 8u;
    switch src_t {
        case 0u: { return bitcast<f32>(x[w]); }
        case 1u: { return f16_to_f32((x[w] >> sh) & 0xFFFFu); }
        case 2u: { return bitcast<f32>(((x[w] >> sh) & 0xFFFFu) << 16u); }
        case 3u: { return f32(bitcast<i32>(x[w])); }
        case 4u: { return i64_to_f32(vec2<u32>(x[w], x[w + 1u])); }
        default: { return f32((x[w] >> sh) & 0xFFu); }
    }
}
fn sat(v: f32, lo: f32, hi: f32) -> f32 { if (is_nan(v)) { return 0.0; } return clamp(trunc(v), lo, hi); }

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let src_t = U(0u); let to = U(1u); let n = U(2u); let yb = U(4u);
    if (to == 0u || to == 3u || to == 4u) {
        for (var i = first(gid, nwg); i < n; i += stride(nwg)) {
            let v = read_as_f32(src_t, i);
            if (to == 0u) { y[yb / 4u + i] = bitcast<u32>(v); }
            else if (to == 3u) {
                y[yb / 4u + i] = bitcast<u32>(i32(sat(v, -2147483648.0, 2147483520.0)) + select(0, 127, v >= 2147483648.0));
            } else {
                let r = f32_to_i64(v);
                y[yb / 4u + 2u * i] = r.x;
                y[yb / 4u + 2u * i + 1u] = r.y;
            }
        }
        return;
    }
    // 2- and 1-byte outputs: one invocation per output word, merging at the ends
    let es = esize(to); let first_ = yb; let end = yb + n * es;
    for (var w = first_ / 4u + first(gid, nwg); w < (end + 3u) / 4u; w += stride(nwg)) {
        var word = y[w];
        for (var b = max(first_, w * 4u); b < min(end, w * 4u + 4u); b += es) {
            let v = read_as_f32(src_t, (b - first_) / es);
            var bits: u32;
            if (to == 1u) { bits = f32_to_f16(v); } else if (to == 2u) { bits = f32_to_bf16(v); } else { bits = u32(sat(v, 0.0, 255.0)); }
            let sh = (b % 4u) * 8u; let mask = select(0xFFu, 0xFFFFu, es == 2u) << sh;
            word = (word & ~mask) | ((bits << sh) & mask);
        }
        y[w] = word;
    }
}
