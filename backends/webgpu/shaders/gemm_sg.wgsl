// The GEMM's subgroup variant (used where the adapter has subgroups of 4 to 64 invocations): the
// same operation, bindings, parameters and epilogue as gemm.wgsl, without workgroup memory or
// barriers. A workgroup of 64 invocations owns an 8 x 256 tile of C: invocation x the columns
// n0 + x + 64 q (q = 0..3), all 8 rows. K steps by the subgroup's size S: lane l loads
// A[m0 + r][k0 + l] for the 8 rows, and subgroupShuffle hands A[m0 + r][k0 + kk] to every lane,
// kk = 0..S-1, while each lane reads its own 4 values of B's row k0 + kk. Loop bounds are uniform (K, S), so every shuffle runs in uniform
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

// A[gm][gk] of op(A), 0 outside (M, K)
fn ael(gm: u32, gk: u32) -> f32 {
    if (gm >= U(0u) || gk >= U(2u)) { return 0.0; }
    if ((OP & 1u) == 0u) { return a[OFF(1u) + gm * U(3u) + gk]; }
    return a[OFF(1u) + gk * U(3u) + gm];
}
// the epilogue of one output (as gemm.wgsl's)
fn store(gm: u32, gn: u32, acc: f32) {
    if (gm >= U(0u)) { return; }
    let ci = OFF(0u) + gm * U(5u) + gn;
    let alpha = F(0u); let beta = F(1u); let flags = U(6u);
    var v: f32;
    if (beta == 0.0) { v = alpha * acc; } else { v = alpha * acc + beta * c[ci]; }
    if ((flags & 1u) != 0u) { v += bias[OFF(3u) + gn]; }
    if ((flags & 4u) != 0u) { z[OFF(4u) + gm * U(8u) + gn] = v; }
    if ((flags & 2u) != 0u) { v = fwd(U(7u), v); }
    c[ci] = v;
}

// (accumulators in vec4s, never a dynamically indexed private array: SwiftShader would turn each
// such access into a gather)
fn bel(k: u32, gn: u32) -> f32 {
    if (gn >= U(1u)) { return 0.0; }
    if ((OP & 2u) == 0u) { return b[OFF(2u) + k * U(4u) + gn]; }
    return b[OFF(2u) + gn * U(4u) + k];
}
@compute @workgroup_size(64)
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(subgroup_invocation_id) sgl: u32, @builtin(subgroup_size) sgs: u32) {
    let K = U(2u);
    let m0 = wid.y * RM; let n0 = wid.x * 256u + lid.x;
    // row r of the tile in acc<r>, its 4 columns n0, n0 + 64, n0 + 128, n0 + 192 in the components
    var acc0 = vec4<f32>(0.0); var acc1 = vec4<f32>(0.0); var acc2 = vec4<f32>(0.0); var acc3 = vec4<f32>(0.0);
    var acc4 = vec4<f32>(0.0); var acc5 = vec4<f32>(0.0); var acc6 = vec4<f32>(0.0); var acc7 = vec4<f32>(0.0);
    for (var k0 = 0u; k0 < K; k0 += sgs) {
        let gk = k0 + sgl;
        let av0 = vec4<f32>(ael(m0, gk), ael(m0 + 1u, gk), ael(m0 + 2u, gk), ael(m0 + 3u, gk));
        let av1 = vec4<f32>(ael(m0 + 4u, gk), ael(m0 + 5u, gk), ael(m0 + 6u, gk), ael(m0 + 7u, gk));
        let kn = min(sgs, K - k0);
        for (var kk = 0u; kk < kn; kk++) {
            let k = k0 + kk;
            let bv = vec4<f32>(bel(k, n0), bel(k, n0 + 64u), bel(k, n0 + 128u), bel(k, n0 + 192u));
            let a0 = subgroupShuffle(av0, kk); let a1 = subgroupShuffle(av1, kk);
            acc0 += a0.x * bv; acc1 += a0.y * bv; acc2 += a0.z * bv; acc3 += a0.w * bv;
            acc4 += a1.x * bv; acc5 += a1.y * bv; acc6 += a1.z * bv; acc7 += a1.w * bv;
        }
    }
    for (var q = 0u; q < 4u; q++) {
        let gn = n0 + 64u * q;
        if (gn >= U(1u)) { break; }
        store(m0, gn, acc0[q]); store(m0 + 1u, gn, acc1[q]); store(m0 + 2u, gn, acc2[q]); store(m0 + 3u, gn, acc3[q]);
        store(m0 + 4u, gn, acc4[q]); store(m0 + 5u, gn, acc5[q]); store(m0 + 6u, gn, acc6[q]); store(m0 + 7u, gn, acc7[q]);
    }
}
