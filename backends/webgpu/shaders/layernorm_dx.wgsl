// LayerNorm's backward dX (a port of backends/vulkan/shaders/layernorm.comp), one workgroup per
// row, with xhat = (X - mu) inv_std, g = dY G: dX = inv_std (g - mean(g) - xhat mean(g xhat)).
// u0 = M, u1 = N. Bindings 1 = dX (may alias dY: through the dispatch's scratch copy), 2 = dY,
// 3 = X, 4 = G, 5 = mean, 6 = inv_std.
//!include wg_reduce
@group(0) @binding(1) var<storage, read_write> o: array<f32>;
@group(0) @binding(2) var<storage, read> dy: array<f32>;
@group(0) @binding(3) var<storage, read> x: array<f32>;
@group(0) @binding(4) var<storage, read> gm: array<f32>;
@group(0) @binding(5) var<storage, read> mean: array<f32>;
@group(0) @binding(6) var<storage, read> istd: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let M = U(0u); let N = U(1u); let t = lid.x;
    for (var row = wid.x; row < M; row += nwg.x) {
        let base = row * N;
        let mu = mean[OFF(4u) + row]; let inv = istd[OFF(5u) + row];
        var s = vec2<f32>(0.0, 0.0);
        for (var j = t; j < N; j += WG) {
            let xhat = (x[OFF(2u) + base + j] - mu) * inv; let g = dy[OFF(1u) + base + j] * gm[OFF(3u) + j];
            s += vec2<f32>(g, g * xhat);
        }
        s = reduce2(s, t) / f32(N);
        for (var j = t; j < N; j += WG) {
            let xhat = (x[OFF(2u) + base + j] - mu) * inv; let g = dy[OFF(1u) + base + j] * gm[OFF(3u) + j];
            o[OFF(0u) + base + j] = inv * (g - s.x - xhat * s.y);
        }
    }
}
