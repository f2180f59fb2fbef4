// Elementwise ops over n = u0 elements (binding 1 is written; JS gives aliases their own copy):
//   OP 0: axpby            Y = alpha X + beta Y       (1 = Y, 2 = X), f0 = alpha, f1 = beta
//   OP 1: mul              Y = A * B                  (1 = Y, 2 = A, 3 = B)
//   OP 2: update_averages  ema -= (1 - decay)(ema - W) (1 = ema, 2 = W), f0 = 1 - decay
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<storage, read> x: array<f32>;
@group(0) @binding(3) var<storage, read> z: array<f32>;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let n = U(0u);
    for (var i = first(gid, nwg); i < n; i += stride(nwg)) {
        var r: f32;
        if (OP == 0u) {
            let alpha = F(0u); let beta = F(1u); let xv = x[OFF(1u) + i];
            if (beta == 1.0) { r = y[OFF(0u) + i] + alpha * xv; }
            else if (beta == 0.0) { r = alpha * xv; }
            else { r = alpha * xv + beta * y[OFF(0u) + i]; }
        } else if (OP == 1u) {
            r = x[OFF(1u) + i] * z[OFF(2u) + i];
        } else {
            let e = y[OFF(0u) + i];
            r = e - F(0u) * (e - x[OFF(1u) + i]);
        }
        y[OFF(0u) + i] = r;
    }
}
