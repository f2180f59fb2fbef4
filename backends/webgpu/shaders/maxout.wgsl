// Maxout over P pieces, one invocation per (b, o) row of R = B * O (backends/vulkan's maxout.comp):
//   OP 0: forward   Y[r] = max_p X[r, p], which[r] = Thinc's argmax (first maximum; P = 3
//         unrolled as Thinc does)                      (1 = Y, 2 = which, 3 = X)
//   OP 1: backward  dX[r, p] = p == which[r] ? dY[r] : 0 (1 = dX, 2 = which, 3 = dY)
// u0 = R, u1 = P. Bindings 1 and 2 are declared written for both.
@group(0) @binding(1) var<storage, read_write> o: array<f32>;
@group(0) @binding(2) var<storage, read_write> which: array<i32>;
@group(0) @binding(3) var<storage, read> inp: array<f32>;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let R = U(0u); let P = U(1u);
    for (var r = first(gid, nwg); r < R; r += stride(nwg)) {
        if (OP == 0u) {
            let base = OFF(2u) + r * P;
            var best = 0;
            var bv = inp[base];
            if (P == 3u) {
                let v1 = inp[base + 1u]; let v2 = inp[base + 2u];
                let b = select(1, 2, v2 > v1);
                let m = select(v1, v2, b == 2);
                if (m > bv) { bv = m; best = b; }
            } else {
                for (var p = 1u; p < P; p++) {
                    let v = inp[base + p];
                    if (v > bv) { bv = v; best = i32(p); }
                }
            }
            o[OFF(0u) + r] = bv;
            which[OFF(1u) + r] = best;
        } else {
            let w = which[OFF(1u) + r];
            let dy = inp[OFF(2u) + r];
            for (var p = 0u; p < P; p++) { o[OFF(0u) + r * P + p] = select(0.0, dy, i32(p) == w); }
        }
    }
}
