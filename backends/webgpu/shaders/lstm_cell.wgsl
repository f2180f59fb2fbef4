// The LSTM scan's per-step cell (backends/vulkan's recur.comp ops 1, 2); parameters as lstm_mat.wgsl.
// Bindings 1..3 are written (declared so for both).
//   OP 0: gates, C[r], Y[r] from G[r] and cprev    (1 = G, 2 = C, 3 = Y, 4 = c0)
//   OP 1: dG[r], dC[prev] from dY, dC (backward)   (1 = dG, 2 = dC, 3 = dY, 4 = c0, 5 = G, 6 = C)
@group(0) @binding(1) var<storage, read_write> b1: array<f32>;
@group(0) @binding(2) var<storage, read_write> b2: array<f32>;
@group(0) @binding(3) var<storage, read_write> b3: array<f32>;
@group(0) @binding(4) var<storage, read> c0: array<f32>;
@group(0) @binding(5) var<storage, read> gs: array<f32>;
@group(0) @binding(6) var<storage, read> cs: array<f32>;
fn sigm(x: f32) -> f32 { return 1.0 / (1.0 + exp(-x)); }
fn safe_tanh(x: f32) -> f32 { // tanh overflows for large |x| on some implementations
    let t = exp(-2.0 * abs(x));
    return sign(x) * (1.0 - t) / (1.0 + t);
}
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let H = U(0u); let n = U(1u); let r0 = U(2u); let p0 = U(3u); let np = U(4u);
    for (var e = first(gid, nwg); e < n * H; e += stride(nwg)) {
        let b = e / H; let h = e % H; let r = r0 + b;
        if (OP == 0u) {
            let g = OFF(0u) + r * 4u * H;
            var cp = c0[OFF(3u) + h];
            if (b < np) { cp = b2[OFF(1u) + (p0 + b) * H + h]; }
            let f = sigm(b1[g + h]); let i = sigm(b1[g + H + h]); let o = sigm(b1[g + 2u * H + h]);
            let cc = safe_tanh(b1[g + 3u * H + h]);
            let c = f * cp + i * cc;
            b1[g + h] = f; b1[g + H + h] = i; b1[g + 2u * H + h] = o; b1[g + 3u * H + h] = cc;
            b2[OFF(1u) + r * H + h] = c;
            b3[OFF(2u) + r * H + h] = safe_tanh(c) * o;
        } else {
            let g = r * 4u * H;
            var cp = c0[OFF(3u) + h];
            if (b < np) { cp = cs[OFF(5u) + (p0 + b) * H + h]; }
            let f = gs[OFF(4u) + g + h]; let i = gs[OFF(4u) + g + H + h]; let o = gs[OFF(4u) + g + 2u * H + h];
            let cc = gs[OFF(4u) + g + 3u * H + h];
            let tc = safe_tanh(cs[OFF(5u) + r * H + h]); let dy = b3[OFF(2u) + r * H + h];
            let dc = b2[OFF(1u) + r * H + h] + dy * o * (1.0 - tc * tc);
            b1[OFF(0u) + g + h] = dc * cp * f * (1.0 - f);
            b1[OFF(0u) + g + H + h] = dc * cc * i * (1.0 - i);
            b1[OFF(0u) + g + 2u * H + h] = dy * tc * o * (1.0 - o);
            b1[OFF(0u) + g + 3u * H + h] = dc * i * (1.0 - cc * cc);
            if (b < np) { b2[OFF(1u) + (p0 + b) * H + h] = dc * f; }
        }
    }
}
