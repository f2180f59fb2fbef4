// Optimizer updates, elementwise in float32 in the CPU's order of operations (a port of
// backends/vulkan/shaders/optim.comp); bindings 1 = W, 2 = G, 3 = m1, 4 = m2, 5 = avg, 6 = the clip
// decision {factor, apply}; u0 = n.
//   OP 0: Thinc's fused Adam. f0..f3 = beta1, beta2, eps, lr.
//   OP 1: Thinc's RAdam. f0..f5 = beta1, omb1, beta2, omb2, eps, coef; u1 = rectified.
//   OP 2: adam_step: Adam on gscale G, then G = 0, W *= wscale (unless 1), the averages when
//         u1 != 0; f0..f6 = gscale, beta1, beta2, eps, lr, wscale, decay; u2 != 0: binding 6 holds
//         clip_gradient's decision and gscale is its factor where apply is set.
//   OP 3: adam_step with gradient clipping in ONE workgroup: |G| (f7 = the threshold), then OP 2
//         with gscale = f7 / |G| where |G| >= f7 (one dispatch instead of three).
@group(0) @binding(1) var<storage, read_write> w: array<f32>;
@group(0) @binding(2) var<storage, read_write> gr: array<f32>;
@group(0) @binding(3) var<storage, read_write> m1: array<f32>;
@group(0) @binding(4) var<storage, read_write> m2: array<f32>;
@group(0) @binding(5) var<storage, read_write> av: array<f32>;
@group(0) @binding(6) var<storage, read> cf: array<f32>;
var<workgroup> red: array<f32, 256>;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>) {
    let n = U(0u);
    var i0 = first(gid, nwg); var di = stride(nwg);
    var clip = 0.0;
    if (OP == 3u) {
        let t = lid.x;
        var s = 0.0;
        for (var i = t; i < n; i += WG) { let v = gr[OFF(1u) + i]; s += v * v; }
        red[t] = s;
        workgroupBarrier();
        for (var k = WG / 2u; k > 0u; k >>= 1u) {
            if (t < k) { red[t] += red[t + k]; }
            workgroupBarrier();
        }
        let norm = sqrt(red[0]);
        if (norm >= F(7u)) { clip = F(7u) / norm; }
        i0 = t; di = WG;
    }
    for (var i = i0; i < n; i += di) {
        let g = gr[OFF(1u) + i];
        var a = m1[OFF(2u) + i]; var b = m2[OFF(3u) + i]; var wv = w[OFF(0u) + i];
        if (OP == 0u) {
            let beta1 = F(0u); let beta2 = F(1u); let eps = F(2u); let lr = F(3u);
            let omb1 = 1.0 - beta1; let omb2 = 1.0 - beta2;
            a *= beta1; a += g * omb1;
            b *= beta2; b += omb2 * (g * g);
            let step = a / (sqrt(b) + eps);
            wv += -lr * step;
        } else if (OP >= 2u) {
            var gscale = F(0u);
            if (OP == 2u && U(2u) != 0u && cf[OFF(5u) + 1u] != 0.0) { gscale = cf[OFF(5u)]; }
            if (OP == 3u && clip != 0.0) { gscale = clip; }
            let beta1 = F(1u); let beta2 = F(2u); let eps = F(3u); let lr = F(4u); let wscale = F(5u);
            let omb1 = 1.0 - beta1; let omb2 = 1.0 - beta2; let omd = 1.0 - F(6u);
            var gg = g; if (gscale != 1.0) { gg = gscale * g; }
            a *= beta1; a += gg * omb1;
            b *= beta2; b += omb2 * (gg * gg);
            let step = a / (sqrt(b) + eps);
            wv += -lr * step;
            if (wscale != 1.0) { wv = wscale * wv; }
            gr[OFF(1u) + i] = 0.0;
            if (U(1u) != 0u) {
                var e = av[OFF(4u) + i];
                e -= omd * (e - wv);
                av[OFF(4u) + i] = e;
            }
        } else {
            let beta1 = F(0u); let omb1 = F(1u); let beta2 = F(2u); let omb2 = F(3u); let eps = F(4u); let coef = F(5u);
            b *= beta2; b += omb2 * (g * g);
            a *= beta1; a += omb1 * g;
            if (U(1u) != 0u) { wv += coef * (a / (sqrt(b) + eps)); }
            else if (coef != 0.0) { wv += coef * a; }
        }
        m1[OFF(2u) + i] = a;
        m2[OFF(3u) + i] = b;
        w[OFF(0u) + i] = wv;
    }
}
