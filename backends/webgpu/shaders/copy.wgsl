// copy of 2-D row-strided views of 4-byte elements: Y (R, C) row stride u3 = X (R, C) row stride u2;
// u0 = R, u1 = C (binding 1 = Y, 2 = X).
@group(0) @binding(1) var<storage, read_write> y: array<u32>;
@group(0) @binding(2) var<storage, read> x: array<u32>;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let R = U(0u); let C = U(1u); let n = R * C;
    for (var e = first(gid, nwg); e < n; e += stride(nwg)) {
        let r = e / C; let c = e % C;
        y[OFF(0u) + r * U(3u) + c] = x[OFF(1u) + r * U(2u) + c];
    }
}
