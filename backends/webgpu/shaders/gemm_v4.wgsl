// The GEMM's barrier-free vec4 variant, for adapters that run on the CPU (SwiftShader; a fallback
// adapter): the same operation, parameters and epilogue as gemm.wgsl, with A and B bound as
// vec4 arrays (their row strides and offsets multiples of 4 floats). No workgroup memory and no
// barrier: SwiftShader runs a shader that has a barrier as one coroutine per 4 invocations,
// switched at every barrier, which cost more than the tiles saved (the CPU's caches do the
// staging); and one vec4 load per invocation is one gather where four f32 loads were four.
// An invocation owns 4 x 4 outputs (rows m0..m0+3, columns n0..n0+3) and steps K by 4: op(A)'s
// 4 x 4 block and op(B)'s 4 x 4 block in eight vec4 loads (transposed operands transposed in
// registers), 16 vec4 multiply-adds. Past M, N and K, indices are clamped and lanes past K zeroed
// (select, never 0 * x: a clamped copy may be inf); outputs past M and N are not stored.
// OP: bit 0 transA, bit 1 transB. Bindings, u and f as gemm.wgsl's; u6 bit 3 (this kernel only): the
// bias has one value per row of C (a 1x1 convolution's per output channel), not per column.
//!include act_fns
const AP: u32 = 8u;
@group(0) @binding(1) var<storage, read_write> c: array<f32>;
@group(0) @binding(2) var<storage, read> a: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> b: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> bias: array<f32>;
@group(0) @binding(5) var<storage, read_write> z: array<f32>;

// the epilogue of one output (as gemm.wgsl's)
fn store(gm: u32, gn: u32, acc: f32) {
    let ci = OFF(0u) + gm * U(5u) + gn;
    let alpha = F(0u); let beta = F(1u); let flags = U(6u);
    var v: f32;
    if (beta == 0.0) { v = alpha * acc; } else { v = alpha * acc + beta * c[ci]; }
    if ((flags & 1u) != 0u) { v += bias[OFF(3u) + select(gn, gm, (flags & 8u) != 0u)]; }
    if ((flags & 4u) != 0u) { z[OFF(4u) + gm * U(8u) + gn] = v; }
    if ((flags & 2u) != 0u) { v = fwd(U(7u), v); }
    c[ci] = v;
}
fn row4(acc: vec4<f32>, gm: u32, gn: u32) {
    if (gm >= U(0u)) { return; }
    let N = U(1u);
    store(gm, gn, acc.x);
    if (gn + 1u < N) { store(gm, gn + 1u, acc.y); }
    if (gn + 2u < N) { store(gm, gn + 2u, acc.z); }
    if (gn + 3u < N) { store(gm, gn + 3u, acc.w); }
}
@compute @workgroup_size(8, 8)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let M = U(0u); let N = U(1u); let K = U(2u);
    let lda4 = U(3u) / 4u; let ldb4 = U(4u) / 4u; let oa = OFF(1u) / 4u; let ob = OFF(2u) / 4u;
    let n0 = gid.x * 4u; let m0 = gid.y * 4u;
    if (n0 >= N || m0 >= M) { return; }
    let tA = (OP & 1u) != 0u; let tB = (OP & 2u) != 0u;
    let r1 = min(m0 + 1u, M - 1u); let r2 = min(m0 + 2u, M - 1u); let r3 = min(m0 + 3u, M - 1u);
    let c1 = min(n0 + 1u, N - 1u); let c2 = min(n0 + 2u, N - 1u); let c3 = min(n0 + 3u, N - 1u);
    var acc0 = vec4<f32>(0.0); var acc1 = vec4<f32>(0.0); var acc2 = vec4<f32>(0.0); var acc3 = vec4<f32>(0.0);
    for (var k = 0u; k < K; k += 4u) {
        let k1 = min(k + 1u, K - 1u); let k2 = min(k + 2u, K - 1u); let k3 = min(k + 3u, K - 1u);
        // a<r>: op(A)'s row m0 + r at k..k+3
        var a0: vec4<f32>; var a1: vec4<f32>; var a2: vec4<f32>; var a3: vec4<f32>;
        if (!tA) {
            a0 = a[oa + m0 * lda4 + k / 4u]; a1 = a[oa + r1 * lda4 + k / 4u];
            a2 = a[oa + r2 * lda4 + k / 4u]; a3 = a[oa + r3 * lda4 + k / 4u];
        } else {
            let t0 = a[oa + k * lda4 + m0 / 4u]; let t1 = a[oa + k1 * lda4 + m0 / 4u];
            let t2 = a[oa + k2 * lda4 + m0 / 4u]; let t3 = a[oa + k3 * lda4 + m0 / 4u];
            a0 = vec4<f32>(t0.x, t1.x, t2.x, t3.x); a1 = vec4<f32>(t0.y, t1.y, t2.y, t3.y);
            a2 = vec4<f32>(t0.z, t1.z, t2.z, t3.z); a3 = vec4<f32>(t0.w, t1.w, t2.w, t3.w);
        }
        // b<j>: op(B)'s row k + j at n0..n0+3
        var b0: vec4<f32>; var b1: vec4<f32>; var b2: vec4<f32>; var b3: vec4<f32>;
        if (!tB) {
            b0 = b[ob + k * ldb4 + n0 / 4u]; b1 = b[ob + k1 * ldb4 + n0 / 4u];
            b2 = b[ob + k2 * ldb4 + n0 / 4u]; b3 = b[ob + k3 * ldb4 + n0 / 4u];
        } else {
            let t0 = b[ob + n0 * ldb4 + k / 4u]; let t1 = b[ob + c1 * ldb4 + k / 4u];
            let t2 = b[ob + c2 * ldb4 + k / 4u]; let t3 = b[ob + c3 * ldb4 + k / 4u];
            b0 = vec4<f32>(t0.x, t1.x, t2.x, t3.x); b1 = vec4<f32>(t0.y, t1.y, t2.y, t3.y);
            b2 = vec4<f32>(t0.z, t1.z, t2.z, t3.z); b3 = vec4<f32>(t0.w, t1.w, t2.w, t3.w);
        }
        if (k + 4u > K) { // the last block of a K that is not a multiple of 4: lanes past K are 0
            let in1 = k + 1u < K; let in2 = k + 2u < K; let in3 = k + 3u < K;
            let z4 = vec4<f32>(0.0);
            let keep = vec4<bool>(true, in1, in2, in3);
            a0 = select(z4, a0, keep); a1 = select(z4, a1, keep); a2 = select(z4, a2, keep); a3 = select(z4, a3, keep);
            b1 = select(z4, b1, in1); b2 = select(z4, b2, in2); b3 = select(z4, b3, in3);
        }
        acc0 += a0.x * b0 + a0.y * b1 + a0.z * b2 + a0.w * b3;
        acc1 += a1.x * b0 + a1.y * b1 + a1.z * b2 + a1.w * b3;
        acc2 += a2.x * b0 + a2.y * b1 + a2.z * b2 + a2.w * b3;
        acc3 += a3.x * b0 + a3.y * b1 + a3.z * b2 + a3.w * b3;
    }
    row4(acc0, m0, n0); row4(acc1, m0 + 1u, n0); row4(acc2, m0 + 2u, n0); row4(acc3, m0 + 3u, n0);
}
