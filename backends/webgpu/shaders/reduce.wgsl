// Reductions (a port of backends/vulkan/shaders/reduce.comp); binding 2 = X, u0 = n:
//   OP 0: sum_squares  partial[i] = sum of x^2 over invocation i's share (1 = partials, one per
//         invocation of the grid; no workgroup memory and no barrier: on SwiftShader a barrier is a
//         coroutine switch per 4 invocations, and 1024 workgroups' tree reductions took seconds)
//   OP 1: any_outside  flag[0] = 1 if some x is outside [f0, f1] or NaN (1 = flag, zeroed before)
//   OP 2: clip_gradient's decision, one invocation: the u0 partials (binding 2) added in order,
//         compensated, then {factor = f0 / |G|, apply = |G| >= f0} into binding 1
//   OP 3: clip_gradient's scaling: G (binding 1, u0 elements) = 0 G + factor G where apply;
//         factor and apply read from binding 2
@group(0) @binding(1) var<storage, read_write> o: array<f32>;
@group(0) @binding(2) var<storage, read> x: array<f32>;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let n = U(0u);
    if (OP == 0u) {
        var s = 0.0;
        for (var i = first(gid, nwg); i < n; i += stride(nwg)) { let v = x[OFF(1u) + i]; s += v * v; }
        o[OFF(0u) + first(gid, nwg)] = s;
    } else if (OP == 2u) {
        if (gid.x != 0u) { return; }
        var s = 0.0; var comp = 0.0;
        for (var i = 0u; i < n; i++) {
            let yv = x[OFF(1u) + i] - comp;
            let t2 = s + yv;
            comp = (t2 - s) - yv;
            s = t2;
        }
        let norm = sqrt(s);
        let apply = norm >= F(0u);
        o[OFF(0u)] = select(1.0, F(0u) / norm, apply);
        o[OFF(0u) + 1u] = select(0.0, 1.0, apply);
    } else if (OP == 3u) {
        if (x[OFF(1u) + 1u] == 0.0) { return; }
        let beta = x[OFF(1u)];
        for (var i = first(gid, nwg); i < n; i += stride(nwg)) {
            let v = o[OFF(0u) + i];
            if (beta == 1.0) { o[OFF(0u) + i] = v + 0.0 * v; }
            else if (beta == 0.0) { o[OFF(0u) + i] = 0.0 * v; }
            else { o[OFF(0u) + i] = 0.0 * v + beta * v; }
        }
    } else {
        var out_ = false;
        for (var i = first(gid, nwg); i < n; i += stride(nwg)) {
            let v = x[OFF(1u) + i];
            out_ = out_ || !(v >= F(0u) && v <= F(1u));
        }
        if (out_) { o[OFF(0u)] = 1.0; }
    }
}
