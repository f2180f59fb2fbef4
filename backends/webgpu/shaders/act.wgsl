// Activations and their backprops with Thinc 8.1's formulas (backends/cpu's act is the reference;
// a port of backends/vulkan/shaders/act.comp):
//   OP 0: forward   Y = act(X)             (1 = Y, 2 = X)
//   OP 1: backward  dX = dY * act'(X, Y)   (1 = dX, 2 = dY, 3 = X, 4 = Y)
// u0 = n, u1 = kind (lithe__act_kind order), u2 / u3 = X / Y bound; f0..f4 = slope, offset, min,
// max, threshold.
//!include act_fns
const AP: u32 = 0u;
@group(0) @binding(1) var<storage, read_write> o: array<f32>;
@group(0) @binding(2) var<storage, read> inp: array<f32>;
@group(0) @binding(3) var<storage, read> xs: array<f32>;
@group(0) @binding(4) var<storage, read> ys: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let n = U(0u); let kind = U(1u);
    for (var i = first(gid, nwg); i < n; i += stride(nwg)) {
        if (OP == 0u) {
            o[OFF(0u) + i] = fwd(kind, inp[OFF(1u) + i]);
        } else {
            var x = 0.0; var y = 0.0;
            if (U(2u) != 0u) { x = xs[OFF(2u) + i]; }
            if (U(3u) != 0u) { y = ys[OFF(3u) + i]; }
            o[OFF(0u) + i] = bwd(kind, inp[OFF(1u) + i], x, y);
        }
    }
}
