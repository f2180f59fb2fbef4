// fill: Y[i] = f0 over n = u0 words (binding 1 = Y).
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let n = U(0u);
    for (var i = first(gid, nwg); i < n; i += stride(nwg)) { y[OFF(0u) + i] = F(0u); }
}
