// gemm_q8: the dense forward with compact int8 weights, Y = act(A · dequant(W)ᵀ + b), W (N, K)
// int8 read four to a word and dequantized in the shader (scale[n] (q - zero[n]), the CPU's
// lithe__decode_row), float accumulation: the CPU's float path on the decoded weights up to the
// order of additions. One invocation per output, a grid-stride loop over M x N.
// Bindings 1 = Y, 2 = Z (written), 3 = A, 4 = W (words), 5 = bias, 6 = q (scales then zero points).
// u0 = M, u1 = N, u2 = K, u3 = W's byte offset, u4 = flags (1 bias, 2 act, 4 Z), u5 = act kind,
// u6 = 1 when W has a scale per row (else one), f8..f12 = the activation's parameters.
//!include act_fns
const AP: u32 = 8u;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<storage, read_write> z: array<f32>;
@group(0) @binding(3) var<storage, read> a: array<f32>;
@group(0) @binding(4) var<storage, read> w: array<u32>;
@group(0) @binding(5) var<storage, read> bias: array<f32>;
@group(0) @binding(6) var<storage, read> q: array<f32>;
fn w_at(i: u32) -> i32 { // the signed byte at byte index i of binding 4
    let word = w[OFF(3u) + i / 4u];
    return (bitcast<i32>(word << (24u - 8u * (i % 4u)))) >> 24u;
}
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let M = U(0u); let N = U(1u); let K = U(2u); let wb = U(3u); let flags = U(4u); let kind = U(5u);
    let nq = select(1u, N, U(6u) != 0u);
    for (var e = first(gid, nwg); e < M * N; e += stride(nwg)) {
        let m = e / N; let n = e % N;
        let qi = select(0u, n, U(6u) != 0u);
        let s = q[OFF(5u) + qi]; let zp = bitcast<i32>(q[OFF(5u) + nq + qi]);
        var acc = 0.0;
        for (var k = 0u; k < K; k++) {
            acc += a[OFF(2u) + m * K + k] * (s * f32(w_at(wb + n * K + k) - zp));
        }
        var v = acc;
        if ((flags & 1u) != 0u) { v += bias[OFF(4u) + n]; }
        if ((flags & 4u) != 0u) { z[OFF(1u) + e] = v; }
        if ((flags & 2u) != 0u) { v = fwd(kind, v); }
        y[OFF(0u) + e] = v;
    }
}
