// LayerNorm's backward dG += sum_i dY xhat, db += sum_i dY (a port of
// backends/vulkan/shaders/layernorm.comp): one invocation per column walking rows in order;
// dispatched before layernorm_dx, which may overwrite dY. u0 = M, u1 = N.
// Bindings 1 = dG, 2 = db, 3 = dY, 4 = X, 5 = mean, 6 = inv_std.
@group(0) @binding(1) var<storage, read_write> dg: array<f32>;
@group(0) @binding(2) var<storage, read_write> db: array<f32>;
@group(0) @binding(3) var<storage, read> dy: array<f32>;
@group(0) @binding(4) var<storage, read> x: array<f32>;
@group(0) @binding(5) var<storage, read> mean: array<f32>;
@group(0) @binding(6) var<storage, read> istd: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let M = U(0u); let N = U(1u);
    for (var j = first(gid, nwg); j < N; j += stride(nwg)) {
        var g = 0.0; var b = 0.0;
        for (var i = 0u; i < M; i++) {
            let d = dy[OFF(2u) + i * N + j];
            let xhat = (x[OFF(3u) + i * N + j] - mean[OFF(4u) + i]) * istd[OFF(5u) + i];
            g += d * xhat;
            b += d;
        }
        dg[OFF(0u) + j] += g;
        db[OFF(1u) + j] += b;
    }
}
