// Thinc's seq2col and its backward over Ragged rows (backends/vulkan's seq.comp, ops 4 and 5).
// Binding 3 holds starts (B + 1 ints, starts[B] = N) uploaded from the host lengths.
// u0 = B, u1 = O (columns), u2 = nW.
//   OP 0: seq2col           Y (N, (2 nW + 1) O)                  (1 = Y, 2 = X, 3 = starts)
//   OP 1: seq2col_backward  dX (N, O), window slots added in the CPU's order (rows j ascending)
//                                                                (1 = dX, 2 = dY, 3 = starts)
@group(0) @binding(1) var<storage, read_write> o: array<f32>;
@group(0) @binding(2) var<storage, read> x: array<f32>;
@group(0) @binding(3) var<storage, read> starts: array<i32>;
fn start_of(b: u32) -> i32 { return starts[OFF(2u) + b]; }
// the sequence holding row r: the last b with starts[b] <= r (empty sequences skipped)
fn seq_of(r: u32) -> u32 {
    var lo = 0u; var hi = U(0u);
    while (hi - lo > 1u) {
        let mid = (lo + hi) / 2u;
        if (u32(start_of(mid)) <= r) { lo = mid; } else { hi = mid; }
    }
    return lo;
}
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let B = U(0u); let O = U(1u); let nW = U(2u);
    let N = u32(start_of(B));
    let nF = 2u * nW + 1u;
    if (OP == 0u) {
        for (var e = first(gid, nwg); e < N * nF * O; e += stride(nwg)) {
            let r = e / (nF * O); let f = (e / O) % nF; let k = e % O;
            let b = seq_of(r);
            let src = i32(r) - i32(nW) + i32(f);
            var v = 0.0;
            if (src >= start_of(b) && src < start_of(b + 1u)) { v = x[OFF(1u) + u32(src) * O + k]; }
            o[OFF(0u) + e] = v;
        }
    } else {
        for (var e = first(gid, nwg); e < N * O; e += stride(nwg)) {
            let d = e / O; let k = e % O;
            let b = seq_of(d);
            let s = start_of(b); let t = start_of(b + 1u);
            var acc = 0.0;
            for (var j = i32(d) - i32(nW); j <= i32(d) + i32(nW); j++) {
                if (j < s || j >= t) { continue; }
                let f = u32(i32(d) + i32(nW) - j);
                acc += x[OFF(1u) + (u32(j) * nF + f) * O + k];
            }
            o[OFF(0u) + e] = acc;
        }
    }
}
