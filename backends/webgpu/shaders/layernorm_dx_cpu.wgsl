// LayerNorm's backward dX for adapters that run on the CPU: ONE INVOCATION PER ROW, no workgroup
// memory, no barrier; with xhat = (X - mu) inv_std, g = dY G: dX = inv_std (g - mean(g) -
// xhat mean(g xhat)), the sums compensated. dX may alias dY (through the dispatch's scratch copy;
// a row reads all of dY before it writes). Bindings and u as layernorm_dx.wgsl's.
//!include row_fns
@group(0) @binding(1) var<storage, read_write> o: array<f32>;
@group(0) @binding(2) var<storage, read> dy: array<f32>;
@group(0) @binding(3) var<storage, read> x: array<f32>;
@group(0) @binding(4) var<storage, read> gm: array<f32>;
@group(0) @binding(5) var<storage, read> mean: array<f32>;
@group(0) @binding(6) var<storage, read> istd: array<f32>;
const RW: u32 = 16u;

@compute @workgroup_size(16)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let M = U(0u); let N = U(1u);
    for (var row = gid.x; row < M; row += nwg.x * RW) {
        let mu = mean[OFF(4u) + row]; let inv = istd[OFF(5u) + row];
        let go = OFF(1u) + row * N; let xo = OFF(2u) + row * N;
        var sg = vec2<f32>(0.0); var sx = vec2<f32>(0.0);
        for (var j = 0u; j < N; j++) {
            let xhat = (x[xo + j] - mu) * inv; let g = dy[go + j] * gm[OFF(3u) + j];
            sg = rf_add(sg, g); sx = rf_add(sx, g * xhat);
        }
        let mg = sg.x / f32(N); let mgx = sx.x / f32(N);
        for (var j = 0u; j < N; j++) {
            let xhat = (x[xo + j] - mu) * inv; let g = dy[go + j] * gm[OFF(3u) + j];
            o[OFF(0u) + row * N + j] = inv * (g - mg - xhat * mgx);
        }
    }
}
