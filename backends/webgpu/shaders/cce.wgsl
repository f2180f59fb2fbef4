// The loss over int labels; bindings 1 = D or out, 2 = G (B, C), 3 = labels (int32 when u2 = 0,
// int64 as two words when u2 = 1), 4 = D (OP 1). u0 = B, u1 = C, u3 = has_missing, u4 / u5 =
// missing (low, high word); f0 = on (1 - smoothing), f1 = off (smoothing / (C - 1)).
//   OP 0: cce_labels: D (B, C) = (G - T) / f2, T the one-hot of the labels with label smoothing;
//         rows whose label equals `missing` are 0.
//   OP 1: cce_stats (one workgroup): out = {1 if a guess is outside [0, 1] or NaN else 0, sum of
//         D^2, the sum over counted rows of -sum_c T_c log(max(G, 1e-30)), counted rows}.
@group(0) @binding(1) var<storage, read_write> d: array<f32>;
@group(0) @binding(2) var<storage, read> g: array<f32>;
@group(0) @binding(3) var<storage, read> lab: array<u32>;
@group(0) @binding(4) var<storage, read> dd: array<f32>;
var<workgroup> red: array<vec4<f32>, 256>;
fn label(i: u32) -> vec2<u32> {
    if (U(2u) != 0u) { return vec2<u32>(lab[OFF(2u) + 2u * i], lab[OFF(2u) + 2u * i + 1u]); }
    let v = lab[OFF(2u) + i];
    return vec2<u32>(v, select(0u, 0xFFFFFFFFu, (v >> 31u) != 0u));
}
fn missing(l: vec2<u32>) -> bool { return U(3u) != 0u && l.x == U(4u) && l.y == U(5u); }
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>) {
    let B = U(0u); let C = U(1u); let n = B * C;
    if (OP == 1u) {
        let t = lid.x;
        var s = vec4<f32>(0.0);
        for (var e = t; e < n; e += WG) {
            let p = g[OFF(1u) + e];
            if (!(p >= 0.0 && p <= 1.0)) { s.x = 1.0; }
            let v = dd[OFF(3u) + e];
            s.y += v * v;
        }
        for (var i = t; i < B; i += WG) {
            let l = label(i);
            if (missing(l)) { continue; }
            s.w += 1.0;
            for (var j = 0u; j < C; j++) {
                let tv = select(F(1u), F(0u), l.y == 0u && l.x == j);
                if (tv > 0.0) { s.z -= tv * log(max(g[OFF(1u) + i * C + j], 1e-30)); }
            }
        }
        red[t] = s;
        workgroupBarrier();
        for (var k = WG / 2u; k > 0u; k >>= 1u) {
            if (t < k) { let o = red[t + k]; red[t] = vec4<f32>(max(red[t].x, o.x), red[t].yzw + o.yzw); }
            workgroupBarrier();
        }
        if (t == 0u) {
            let r = red[0];
            d[OFF(0u)] = r.x; d[OFF(0u) + 1u] = r.y; d[OFF(0u) + 2u] = r.z; d[OFF(0u) + 3u] = r.w;
        }
        return;
    }
    for (var e = first(gid, nwg); e < n; e += stride(nwg)) {
        let i = e / C; let j = e % C;
        let l = label(i);
        let t = select(F(1u), F(0u), l.y == 0u && l.x == j);
        var v = g[OFF(1u) + e] - t;
        if (missing(l)) { v = 0.0; }
        d[OFF(0u) + e] = v / F(2u);
    }
}
