// cce_labels: D (B, C) = (G - T) / divisor, T the one-hot of labels with label smoothing (on =
// 1 - smoothing, off = smoothing / (C - 1)); rows whose label equals `missing` are 0.
// Bindings 1 = D, 2 = G, 3 = labels (int32 when u2 = 0, int64 as two words when u2 = 1).
// u0 = B, u1 = C, u3 = has_missing, u4 / u5 = missing (low, high word); f0 = on, f1 = off, f2 = divisor.
@group(0) @binding(1) var<storage, read_write> d: array<f32>;
@group(0) @binding(2) var<storage, read> g: array<f32>;
@group(0) @binding(3) var<storage, read> lab: array<u32>;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let B = U(0u); let C = U(1u); let n = B * C;
    for (var e = first(gid, nwg); e < n; e += stride(nwg)) {
        let i = e / C; let j = e % C;
        var l: vec2<u32>;
        if (U(2u) != 0u) { l = vec2<u32>(lab[OFF(2u) + 2u * i], lab[OFF(2u) + 2u * i + 1u]); }
        else { let v = lab[OFF(2u) + i]; l = vec2<u32>(v, select(0u, 0xFFFFFFFFu, (v >> 31u) != 0u)); }
        let masked = U(3u) != 0u && l.x == U(4u) && l.y == U(5u);
        let t = select(F(1u), F(0u), l.y == 0u && l.x == j);
        var v = g[OFF(1u) + e] - t;
        if (masked) { v = 0.0; }
        d[OFF(0u) + e] = v / F(2u);
    }
}
