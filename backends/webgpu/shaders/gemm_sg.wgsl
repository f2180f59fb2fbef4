// The GEMM's subgroup variant (used where the adapter has subgroups of 4 to 64 invocations): the
// same operation, bindings, parameters and epilogue as gemm.wgsl, without workgroup memory or
// barriers. A workgroup of 64 invocations owns an 8 x 64 tile of C: invocation x the column
// n0 + x, all 8 rows. K steps by the subgroup's size S: lane l loads A[m0 + r][k0 + l] for the 8
// rows, and subgroupShuffle hands A[m0 + r][k0 + kk] to every lane, kk = 0..S-1, while each lane
// reads its own B[k0 + kk][n]. Loop bounds are uniform (K, S), so every shuffle runs in uniform
// control flow; edges are bounds-checked on the loads and stores only.
// OP: bit 0 transA, bit 1 transB.
enable subgroups;
//!include act_fns
const AP: u32 = 8u;
const RM: u32 = 8u;
@group(0) @binding(1) var<storage, read_write> c: array<f32>;
@group(0) @binding(2) var<storage, read> a: array<f32>;
@group(0) @binding(3) var<storage, read> b: array<f32>;
@group(0) @binding(4) var<storage, read> bias: array<f32>;
@group(0) @binding(5) var<storage, read_write> z: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(subgroup_invocation_id) sgl: u32, @builtin(subgroup_size) sgs: u32) {
    let M = U(0u); let N = U(1u); let K = U(2u); let lda = U(3u); let ldb = U(4u); let ldc = U(5u);
    let tA = (OP & 1u) != 0u; let tB = (OP & 2u) != 0u;
    let m0 = wid.y * RM; let gn = wid.x * 64u + lid.x;
    let nin = gn < N;
    var acc: array<f32, 8>;
    for (var k0 = 0u; k0 < K; k0 += sgs) {
        var av: array<f32, 8>;
        let gk = k0 + sgl;
        for (var r = 0u; r < RM; r++) {
            let gm = m0 + r;
            var v = 0.0;
            if (gm < M && gk < K) { if (!tA) { v = a[OFF(1u) + gm * lda + gk]; } else { v = a[OFF(1u) + gk * lda + gm]; } }
            av[r] = v;
        }
        let kn = min(sgs, K - k0);
        for (var kk = 0u; kk < kn; kk++) {
            var bv = 0.0;
            let k = k0 + kk;
            if (nin) { if (!tB) { bv = b[OFF(2u) + k * ldb + gn]; } else { bv = b[OFF(2u) + gn * ldb + k]; } }
            for (var r = 0u; r < RM; r++) { acc[r] += subgroupShuffle(av[r], kk) * bv; }
        }
    }
    if (!nin) { return; }
    let alpha = F(0u); let beta = F(1u); let flags = U(6u); let kind = U(7u); let ldz = U(8u);
    for (var r = 0u; r < RM; r++) {
        let gm = m0 + r;
        if (gm >= M) { break; }
        let ci = OFF(0u) + gm * ldc + gn;
        var v: f32;
        if (beta == 0.0) { v = alpha * acc[r]; } else { v = alpha * acc[r] + beta * c[ci]; }
        if ((flags & 1u) != 0u) { v += bias[OFF(3u) + gn]; }
        if ((flags & 4u) != 0u) { z[OFF(4u) + gm * ldz + gn] = v; }
        if ((flags & 2u) != 0u) { v = fwd(kind, v); }
        c[ci] = v;
    }
}
