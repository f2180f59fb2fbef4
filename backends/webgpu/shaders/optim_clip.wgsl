// adam_step with gradient clipping in ONE workgroup (optim.wgsl's OP 3; bindings and parameters as
// its OP 2's, f7 = the threshold): |G| by a tree reduction, then OP 2's update with
// gscale = f7 / |G| where |G| >= f7 — one dispatch instead of three, for params of up to
// LITHE__WG_FUSED_CLIP_MAX elements.
//!include optim_fns
var<workgroup> red: array<f32, 256>;
@compute @workgroup_size(256)
fn main(@builtin(local_invocation_id) lid: vec3<u32>) {
    let n = U(0u); let t = lid.x;
    var s = 0.0;
    for (var i = t; i < n; i += WG) { let v = gr[OFF(1u) + i]; s += v * v; }
    red[t] = s;
    workgroupBarrier();
    for (var k = WG / 2u; k > 0u; k >>= 1u) {
        if (t < k) { red[t] += red[t + k]; }
        workgroupBarrier();
    }
    let norm = sqrt(red[0]);
    var clip = 0.0;
    if (norm >= F(7u)) { clip = F(7u) / norm; }
    for (var i = t; i < n; i += WG) { update(i, clip); }
}
