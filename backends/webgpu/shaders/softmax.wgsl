// Softmax over rows of (M, N), one workgroup per row (rows stride by the workgroup count):
//   OP 0: forward   Y = softmax(X / T)                 (1 = Y, 2 = X)
//   OP 1: backward  dX = Y g - Y sum(Y g), g = dY / T  (1 = dX, 2 = Y, 3 = dY)
// u0 = M, u1 = N; f0 = temperature. NaN as the CPU's rows.h: the maximum ignores NaN, exp(NaN) is NaN
// (SwiftShader's is inf), so a NaN, an infinity or a row of -inf gives a NaN row. On adapters that run
// on the CPU, softmax_cpu.wgsl (one invocation per row, no barrier) runs instead.
//!include row_fns
@group(0) @binding(1) var<storage, read_write> o: array<f32>;
@group(0) @binding(2) var<storage, read> a: array<f32>;
@group(0) @binding(3) var<storage, read> b: array<f32>;
var<workgroup> red: array<f32, 256>;

fn reduce(v: f32, t: u32, is_max: bool) -> f32 {
    red[t] = v;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if (t < s) { if (is_max) { red[t] = rf_max(red[t], red[t + s]); } else { red[t] += red[t + s]; } }
        workgroupBarrier();
    }
    let r = red[0];
    workgroupBarrier();
    return r;
}
fn xv(i: u32, T: f32) -> f32 { let v = a[OFF(1u) + i]; if (T == 1.0) { return v; } return v / T; }

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let M = U(0u); let N = U(1u); let t = lid.x; let T = F(0u);
    for (var row = wid.x; row < M; row += nwg.x) {
        let base = row * N;
        if (OP == 0u) {
            var mx = rf_neg_inf();
            for (var j = t; j < N; j += WG) { mx = rf_max(mx, xv(base + j, T)); }
            mx = reduce(mx, t, true);
            var s = 0.0;
            for (var j = t; j < N; j += WG) { s += rf_exp(xv(base + j, T) - mx); }
            s = reduce(s, t, false);
            for (var j = t; j < N; j += WG) { o[OFF(0u) + base + j] = rf_exp(xv(base + j, T) - mx) / s; }
        } else {
            var s = 0.0;
            for (var j = t; j < N; j += WG) {
                var g = b[OFF(2u) + base + j]; if (T != 1.0) { g = g / T; }
                s += a[OFF(1u) + base + j] * g;
            }
            s = reduce(s, t, false);
            for (var j = t; j < N; j += WG) {
                let yv = a[OFF(1u) + base + j];
                var g = b[OFF(2u) + base + j]; if (T != 1.0) { g = g / T; }
                o[OFF(0u) + base + j] = yv * g - yv * s;
            }
        }
        workgroupBarrier();
    }
}
