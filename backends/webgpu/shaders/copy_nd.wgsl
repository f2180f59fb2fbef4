// copy of N-D strided views of 4-byte words (ops_copy.c; Transpose / Concat / Slice of imported
// graphs): Y = X elementwise in row-major order over nd <= 8 axes (the host merges axes both
// views walk contiguously). u0 = n, u1 = nd; axis d < 4: X stride u2 + d, Y stride u6 + d; the
// extents in f0..f7 and, for axes 4..7, the strides in f8..f11 (X) and f12..f15 (Y), all exact
// floats. Bindings 1 = Y, 2 = X.
@group(0) @binding(1) var<storage, read_write> y: array<u32>;
@group(0) @binding(2) var<storage, read> x: array<u32>;
fn ext(d: u32) -> u32 { return u32(F(d)); }
fn xs(d: u32) -> u32 { if (d < 4u) { return U(2u + d); } return u32(F(4u + d)); }
fn ys(d: u32) -> u32 { if (d < 4u) { return U(6u + d); } return u32(F(8u + d)); }
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let n = U(0u); let nd = U(1u);
    for (var e = first(gid, nwg); e < n; e += stride(nwg)) {
        var k = e; var xo = 0u; var yo = 0u;
        for (var d = i32(nd) - 1; d >= 0; d--) {
            let ex = ext(u32(d)); let c = k % ex;
            k /= ex;
            xo += c * xs(u32(d));
            yo += c * ys(u32(d));
        }
        y[OFF(0u) + yo] = x[OFF(1u) + xo];
    }
}
