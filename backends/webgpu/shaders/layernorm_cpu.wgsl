// LayerNorm forward for adapters that run on the CPU: ONE INVOCATION PER ROW, no workgroup memory,
// no barrier (layernorm.wgsl's workgroup per row runs on SwiftShader as coroutines switched at
// every barrier). Mean, then the biased variance around it (two passes, compensated sums: the CPU
// sums in double), Y = G (X - mu) inv_std + b. Bindings, u and f as layernorm.wgsl's.
//!include row_fns
@group(0) @binding(1) var<storage, read_write> o: array<f32>;
@group(0) @binding(2) var<storage, read> x: array<f32>;
@group(0) @binding(3) var<storage, read> gm: array<f32>;
@group(0) @binding(4) var<storage, read> bt: array<f32>;
@group(0) @binding(5) var<storage, read_write> mean: array<f32>;
@group(0) @binding(6) var<storage, read_write> istd: array<f32>;
const RW: u32 = 16u;

@compute @workgroup_size(16)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let M = U(0u); let N = U(1u);
    for (var row = gid.x; row < M; row += nwg.x * RW) {
        let xo = OFF(1u) + row * N; let yo = OFF(0u) + row * N;
        var s = vec2<f32>(0.0);
        for (var j = 0u; j < N; j++) { s = rf_add(s, x[xo + j]); }
        let mu = s.x / f32(N);
        var v = vec2<f32>(0.0);
        for (var j = 0u; j < N; j++) { let d = x[xo + j] - mu; v = rf_add(v, d * d); }
        let inv = 1.0 / sqrt(v.x / f32(N) + F(0u));
        mean[OFF(4u) + row] = mu; istd[OFF(5u) + row] = inv;
        for (var j = 0u; j < N; j++) { o[yo + j] = ((x[xo + j] - mu) * inv) * gm[OFF(2u) + j] + bt[OFF(3u) + j]; }
    }
}
