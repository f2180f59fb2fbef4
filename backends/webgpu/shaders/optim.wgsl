// Optimizer updates, elementwise in float32 in the CPU's order of operations (a port of
// backends/vulkan/shaders/optim.comp); bindings 1 = W, 2 = G, 3 = m1, 4 = m2, 5 = avg, 6 = the clip
// decision {factor, apply}; u0 = n.
//   OP 0: Thinc's fused Adam. f0..f3 = beta1, beta2, eps, lr.
//   OP 1: Thinc's RAdam. f0..f5 = beta1, omb1, beta2, omb2, eps, coef; u1 = rectified.
//   OP 2: adam_step: Adam on gscale G, then G = 0, W *= wscale (unless 1), the averages when
//         u1 != 0; f0..f6 = gscale, beta1, beta2, eps, lr, wscale, decay; u2 != 0: binding 6 holds
//         clip_gradient's decision and gscale is its factor where apply is set.
//   OP 3: in optim_clip.wgsl (one workgroup: its barriers stay out of this shader, which SwiftShader
//         would otherwise run as coroutines).
//!include optim_fns
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let n = U(0u);
    for (var i = first(gid, nwg); i < n; i += stride(nwg)) { update(i, 0.0); }
}
