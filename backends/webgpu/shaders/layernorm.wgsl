// Thinc's LayerNorm forward over rows of X (M, N) (a port of backends/vulkan/shaders/layernorm.comp),
// one workgroup per row: mean, biased variance (two passes, so wide rows keep float accuracy),
// Y = G (X - mu) / sqrt(var + eps) + b; mean and inv_std saved. u0 = M, u1 = N; f0 = eps.
// Bindings 1 = Y, 2 = X, 3 = G, 4 = b, 5 = mean, 6 = inv_std.
//!include wg_reduce
@group(0) @binding(1) var<storage, read_write> o: array<f32>;
@group(0) @binding(2) var<storage, read> x: array<f32>;
@group(0) @binding(3) var<storage, read> gm: array<f32>;
@group(0) @binding(4) var<storage, read> bt: array<f32>;
@group(0) @binding(5) var<storage, read_write> mean: array<f32>;
@group(0) @binding(6) var<storage, read_write> istd: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let M = U(0u); let N = U(1u); let t = lid.x;
    for (var row = wid.x; row < M; row += nwg.x) {
        let base = row * N;
        var s = 0.0;
        for (var j = t; j < N; j += WG) { s += x[OFF(1u) + base + j]; }
        let mu = reduce2(vec2<f32>(s, 0.0), t).x / f32(N);
        var v = 0.0;
        for (var j = t; j < N; j += WG) { let d = x[OFF(1u) + base + j] - mu; v += d * d; }
        let var_ = reduce2(vec2<f32>(v, 0.0), t).x / f32(N);
        let inv = 1.0 / sqrt(var_ + F(0u));
        if (t == 0u) { mean[OFF(4u) + row] = mu; istd[OFF(5u) + row] = inv; }
        for (var j = t; j < N; j += WG) {
            o[OFF(0u) + base + j] = ((x[OFF(1u) + base + j] - mu) * inv) * gm[OFF(2u) + j] + bt[OFF(3u) + j];
        }
    }
}
