// The LSTM scan's per-step matrix work (backends/vulkan's recur.comp ops 0, 3, 4; the CPU's
// scalar/lstm.c defines it). The host walks the T timesteps and queues each step's dispatches (a
// step needs the previous one complete; the queue orders them). Per step: u0 = H, u1 = rows n,
// u2 = the step's first row r0, u3 = the previous step's first row p0, u4 = how many of the n rows
// have a previous step (rows b >= u4 read h0). Sums run in the CPU's order. Binding 1 is written.
//   OP 0: G[r] += Wh · hprev + (bx + bh)    (1 = G, 2 = Wh, 3 = bx, 4 = bh, 5 = Y, 6 = h0)
//   OP 1: dY[prev] += dG[r]ᵀ · Wh           (1 = dY, 2 = Wh, 3 = dG)
//   OP 2: dWh += dG[r] ⊗ hprev, rows in order (1 = dWh, 3 = dG, 5 = Y, 6 = h0)
@group(0) @binding(1) var<storage, read_write> o: array<f32>;
@group(0) @binding(2) var<storage, read> wh: array<f32>;
@group(0) @binding(3) var<storage, read> g: array<f32>;
@group(0) @binding(4) var<storage, read> bh: array<f32>;
@group(0) @binding(5) var<storage, read> y: array<f32>;
@group(0) @binding(6) var<storage, read> h0: array<f32>;
fn hprev(b: u32, k: u32) -> f32 {
    if (b < U(4u)) { return y[OFF(4u) + (U(3u) + b) * U(0u) + k]; }
    return h0[OFF(5u) + k];
}
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let H = U(0u); let n = U(1u); let r0 = U(2u); let p0 = U(3u); let np = U(4u);
    if (OP == 0u) {
        for (var e = first(gid, nwg); e < n * 4u * H; e += stride(nwg)) {
            let b = e / (4u * H); let j = e % (4u * H);
            var acc = 0.0;
            for (var k = 0u; k < H; k++) { acc += wh[OFF(1u) + j * H + k] * hprev(b, k); }
            let bias = g[OFF(2u) + j] + bh[OFF(3u) + j];
            let gi = OFF(0u) + (r0 + b) * 4u * H + j;
            o[gi] = o[gi] + (acc + bias);
        }
    } else if (OP == 1u) {
        for (var e = first(gid, nwg); e < np * H; e += stride(nwg)) {
            let b = e / H; let h = e % H; let di = OFF(0u) + (p0 + b) * H + h;
            var acc = o[di];
            for (var j = 0u; j < 4u * H; j++) { acc += g[OFF(2u) + (r0 + b) * 4u * H + j] * wh[OFF(1u) + j * H + h]; }
            o[di] = acc;
        }
    } else {
        for (var e = first(gid, nwg); e < 4u * H * H; e += stride(nwg)) {
            let j = e / H; let h = e % H;
            var acc = o[OFF(0u) + e];
            for (var b = 0u; b < n; b++) { acc += g[OFF(2u) + (r0 + b) * 4u * H + j] * hprev(b, h); }
            o[OFF(0u) + e] = acc;
        }
    }
}
