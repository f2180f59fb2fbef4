// Softmax over rows of (M, N) for adapters that run on the CPU (SwiftShader; a fallback adapter):
// ONE INVOCATION PER ROW, no workgroup memory, no barrier (softmax.wgsl's workgroup per row runs
// there as one coroutine per 4 invocations switched at every barrier: a transformer's attention
// softmax took seconds). The CPU's order of operations (backends/common/rows.h): the maximum
// ignoring NaN, y = exp(x - max) stored, their sum (compensated), y / sum; a NaN or an infinity in
// a row, or a row of -inf, gives NaN as on the CPU. Operations, bindings, u and f as softmax.wgsl's:
//   OP 0: forward   Y = softmax(X / T)                 (1 = Y, 2 = X)
//   OP 1: backward  dX = Y g - Y sum(Y g), g = dY / T  (1 = dX, 2 = Y, 3 = dY)
//!include row_fns
@group(0) @binding(1) var<storage, read_write> o: array<f32>;
@group(0) @binding(2) var<storage, read> a: array<f32>;
@group(0) @binding(3) var<storage, read> b: array<f32>;
const RW: u32 = 16u;

fn xv(i: u32, T: f32) -> f32 { let v = a[i]; if (T == 1.0) { return v; } return v / T; }
fn gv(i: u32, T: f32) -> f32 { let v = b[i]; if (T == 1.0) { return v; } return v / T; }

@compute @workgroup_size(16)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let M = U(0u); let N = U(1u); let T = F(0u);
    for (var row = gid.x; row < M; row += nwg.x * RW) {
        let yo = OFF(0u) + row * N; let xo = OFF(1u) + row * N;
        if (OP == 0u) {
            var mx = rf_neg_inf();
            for (var j = 0u; j < N; j++) { mx = rf_max(mx, xv(xo + j, T)); }
            var s = vec2<f32>(0.0);
            for (var j = 0u; j < N; j++) { let e = rf_exp(xv(xo + j, T) - mx); o[yo + j] = e; s = rf_add(s, e); }
            for (var j = 0u; j < N; j++) { o[yo + j] = o[yo + j] / s.x; }
        } else {
            let go = OFF(2u) + row * N;
            var s = vec2<f32>(0.0);
            for (var j = 0u; j < N; j++) { s = rf_add(s, a[xo + j] * gv(go + j, T)); }
            for (var j = 0u; j < N; j++) { let yv = a[xo + j]; o[yo + j] = yv * gv(go + j, T) - yv * s.x; }
        }
    }
}
