// Ragged reductions (Thinc's cpu_reduce_sum / cpu_reduce_max and their backprops; a port of
// backends/vulkan/shaders/seq.comp), X (N, O) rows grouped into B sequences. Binding 3 holds what
// the host derived from the host-side lengths: starts (B + 1 ints, starts[B] = N) then B float
// scales (1 / length as the CPU computes it, 0 for an empty sequence). u0 = B, u1 = O, u3 = mean.
// One invocation per (sequence, column) walking rows in order: the CPU's bits.
//   OP 0: reduce_sum           Y (B, O)               (1 = Y, 2 = X, 3 = mt)
//   OP 1: reduce_sum_backward  dX (N, O)              (1 = dX, 2 = dY, 3 = mt)
//   OP 2: reduce_max           Y (B, O), which (B, O) (1 = Y, 2 = X, 3 = mt, 4 = which)
//   OP 3: reduce_max_backward  dX (N, O)              (1 = dX, 2 = dY, 3 = mt, 5 = which)
@group(0) @binding(1) var<storage, read_write> o: array<f32>;
@group(0) @binding(2) var<storage, read> x: array<f32>;
@group(0) @binding(3) var<storage, read> mt: array<i32>;
@group(0) @binding(4) var<storage, read_write> which_out: array<i32>;
@group(0) @binding(5) var<storage, read> which_in: array<i32>;

fn start_of(b: u32) -> u32 { return u32(mt[OFF(2u) + b]); }
fn scale_of(b: u32) -> f32 { return bitcast<f32>(mt[OFF(2u) + U(0u) + 1u + b]); }

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let B = U(0u); let O = U(1u);
    for (var e = first(gid, nwg); e < B * O; e += stride(nwg)) {
        let b = e / O; let j = e % O;
        let s = start_of(b); let t = start_of(b + 1u);
        if (OP == 0u) {
            var acc = 0.0;
            let sc = scale_of(b);
            for (var r = s; r < t; r++) {
                let v = x[OFF(1u) + r * O + j];
                if (U(3u) != 0u) { acc += v * sc; } else { acc += v; }
            }
            o[OFF(0u) + e] = acc;
        } else if (OP == 1u) {
            var g = x[OFF(1u) + e];
            if (U(3u) != 0u) { g = g * scale_of(b); }
            for (var r = s; r < t; r++) { o[OFF(0u) + r * O + j] = g; }
        } else if (OP == 2u) {
            var best = x[OFF(1u) + s * O + j];
            var w = 0;
            for (var r = s + 1u; r < t; r++) {
                let v = x[OFF(1u) + r * O + j];
                if (v > best) { best = v; w = i32(r - s); }
            }
            o[OFF(0u) + e] = best;
            which_out[OFF(3u) + e] = w;
        } else {
            let w = which_in[OFF(4u) + e];
            for (var r = s; r < t; r++) { o[OFF(0u) + r * O + j] = select(0.0, x[OFF(1u) + e], i32(r - s) == w); }
        }
    }
}
