// GEMM with a fused epilogue: C (M, N) = alpha op(A) · op(B) + beta C, then (gemm_bias_act)
// + bias, Z = that pre-activation, C = act(it). op(A): (M, K), op(B): (K, N); row strides lda,
// ldb, ldc, ldz in elements. A workgroup of 16 x 16 invocations owns a 64 x 64 tile of C, each
// invocation 4 x 4 outputs spaced 16 apart (coalesced stores, conflict-free shared reads); K steps
// by 16 through panels of A and B staged in workgroup memory with loads that follow each transpose
// case's layout. Edges bounds-checked; beta == 0 never reads C.
// OP: bit 0 transA, bit 1 transB (a pipeline per case). Bindings 1 = C, 2 = A, 3 = B, 4 = bias,
// 5 = Z. u0..u5 = M, N, K, lda, ldb, ldc; u6 = flags (1 bias, 2 act, 4 Z); u7 = act kind, u8 = ldz;
// f0 = alpha, f1 = beta, f8..f12 = the activation's parameters.
//!include act_fns
const AP: u32 = 8u;
const BK: u32 = 16u;
const BM: u32 = 64u;
const BN: u32 = 64u;
@group(0) @binding(1) var<storage, read_write> c: array<f32>;
@group(0) @binding(2) var<storage, read> a: array<f32>;
@group(0) @binding(3) var<storage, read> b: array<f32>;
@group(0) @binding(4) var<storage, read> bias: array<f32>;
@group(0) @binding(5) var<storage, read_write> z: array<f32>;
var<workgroup> As: array<array<f32, 65>, 16>;
var<workgroup> Bs: array<array<f32, 65>, 16>;

@compute @workgroup_size(16, 16)
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
    let M = U(0u); let N = U(1u); let K = U(2u); let lda = U(3u); let ldb = U(4u); let ldc = U(5u);
    let tA = (OP & 1u) != 0u; let tB = (OP & 2u) != 0u;
    let tx = lid.x; let ty = lid.y; let tid = ty * 16u + tx;
    let m0 = wid.y * BM; let n0 = wid.x * BN;
    // rows r = 0..3 in four vec4 accumulators (columns q = 0..3): no dynamically indexed private
    // array, which SwiftShader turns into gathers
    var acc0 = vec4<f32>(0.0); var acc1 = vec4<f32>(0.0); var acc2 = vec4<f32>(0.0); var acc3 = vec4<f32>(0.0);
    for (var k0 = 0u; k0 < K; k0 += BK) {
        for (var l = 0u; l < 4u; l++) {
            let e = tid + l * 256u;
            var mi: u32; var ki: u32;
            if (!tA) { ki = e % BK; mi = e / BK; } else { mi = e % BM; ki = e / BM; }
            let gm = m0 + mi; let gk = k0 + ki;
            var v = 0.0;
            if (gm < M && gk < K) { if (!tA) { v = a[OFF(1u) + gm * lda + gk]; } else { v = a[OFF(1u) + gk * lda + gm]; } }
            As[ki][mi] = v;
        }
        for (var l = 0u; l < 4u; l++) {
            let e = tid + l * 256u;
            var nj: u32; var kj: u32;
            if (!tB) { nj = e % BN; kj = e / BN; } else { kj = e % BK; nj = e / BK; }
            let gn = n0 + nj; let gk = k0 + kj;
            var v = 0.0;
            if (gn < N && gk < K) { if (!tB) { v = b[OFF(2u) + gk * ldb + gn]; } else { v = b[OFF(2u) + gn * ldb + gk]; } }
            Bs[kj][nj] = v;
        }
        workgroupBarrier();
        for (var k = 0u; k < BK; k++) {
            let av = vec4<f32>(As[k][ty], As[k][ty + 16u], As[k][ty + 32u], As[k][ty + 48u]);
            let bv = vec4<f32>(Bs[k][tx], Bs[k][tx + 16u], Bs[k][tx + 32u], Bs[k][tx + 48u]);
            acc0 += av.x * bv; acc1 += av.y * bv; acc2 += av.z * bv; acc3 += av.w * bv;
        }
        workgroupBarrier();
    }
    let alpha = F(0u); let beta = F(1u); let flags = U(6u); let kind = U(7u); let ldz = U(8u);
    for (var r = 0u; r < 4u; r++) {
        let gm = m0 + ty + 16u * r;
        if (gm >= M) { continue; }
        var row = acc0;
        if (r == 1u) { row = acc1; } else if (r == 2u) { row = acc2; } else if (r == 3u) { row = acc3; }
        for (var q = 0u; q < 4u; q++) {
            let gn = n0 + tx + 16u * q;
            if (gn >= N) { continue; }
            let ci = OFF(0u) + gm * ldc + gn;
            var v: f32;
            if (beta == 0.0) { v = alpha * row[q]; } else { v = alpha * row[q] + beta * c[ci]; }
            if ((flags & 1u) != 0u) { v += bias[OFF(3u) + gn]; }
            if ((flags & 4u) != 0u) { z[OFF(4u) + gm * ldz + gn] = v; }
            if ((flags & 2u) != 0u) { v = fwd(kind, v); }
            c[ci] = v;
        }
    }
}
