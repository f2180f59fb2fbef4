// 64-bit integers as vec2<u32>(low word, high word) and 32-bit helpers (WGSL has no 64-bit
// integers and no umulExtended): included by ids.wgsl and sparse.wgsl.
fn mulhi32(a: u32, b: u32) -> u32 {
    let a0 = a & 0xFFFFu; let a1 = a >> 16u; let b0 = b & 0xFFFFu; let b1 = b >> 16u;
    let lo = a0 * b0; let m1 = a1 * b0; let m2 = a0 * b1; let hi = a1 * b1;
    let mid = (lo >> 16u) + (m1 & 0xFFFFu) + (m2 & 0xFFFFu);
    return hi + (m1 >> 16u) + (m2 >> 16u) + (mid >> 16u);
}
fn add64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let lo = a.x + b.x;
    return vec2<u32>(lo, a.y + b.y + select(0u, 1u, lo < a.x));
}
fn mul64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    return vec2<u32>(a.x * b.x, mulhi32(a.x, b.x) + a.x * b.y + a.y * b.x);
}
fn shr64(a: vec2<u32>, n: u32) -> vec2<u32> { // 0 < n < 64
    if (n >= 32u) { return vec2<u32>(a.y >> (n - 32u), 0u); }
    return vec2<u32>((a.x >> n) | (a.y << (32u - n)), a.y >> n);
}
fn shl64(a: vec2<u32>, n: u32) -> vec2<u32> { // 0 < n < 64
    if (n >= 32u) { return vec2<u32>(0u, a.x << (n - 32u)); }
    return vec2<u32>(a.x << n, (a.y << n) | (a.x >> (32u - n)));
}
fn rotl64(a: vec2<u32>, r: u32) -> vec2<u32> { return shl64(a, r) | shr64(a, 64u - r); }
fn rotl32(x: u32, r: u32) -> u32 { return (x << r) | (x >> (32u - r)); }
