// Row-broadcast ops on (M, N), one invocation per column walking the rows in order (the CPU's
// order of additions: the same bits). u0 = M, u1 = N.
//   OP 0: add_row   Y[i, j] += b[j]                     (1 = Y, 2 = b)
//   OP 1: sum_rows  y[j] = beta y[j] + sum_i X[i, j]     (1 = y, 2 = X), f0 = beta
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<storage, read> x: array<f32>;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let M = U(0u); let N = U(1u);
    for (var j = first(gid, nwg); j < N; j += stride(nwg)) {
        if (OP == 0u) {
            let bj = x[OFF(1u) + j];
            for (var i = 0u; i < M; i++) { y[OFF(0u) + i * N + j] += bj; }
        } else {
            var s = 0.0;
            if (F(0u) != 0.0) { s = F(0u) * y[OFF(0u) + j]; }
            for (var i = 0u; i < M; i++) { s += x[OFF(1u) + i * N + j]; }
            y[OFF(0u) + j] = s;
        }
    }
}
