// The optimizers' update of element i (optim.wgsl's header): included by optim.wgsl (grid-stride,
// no workgroup memory) and optim_clip.wgsl (OP 3: one workgroup that decides the clipping first).
// clip: OP 3's factor (0: none).
@group(0) @binding(1) var<storage, read_write> w: array<f32>;
@group(0) @binding(2) var<storage, read_write> gr: array<f32>;
@group(0) @binding(3) var<storage, read_write> m1: array<f32>;
@group(0) @binding(4) var<storage, read_write> m2: array<f32>;
@group(0) @binding(5) var<storage, read_write> av: array<f32>;
@group(0) @binding(6) var<storage, read> cf: array<f32>;
fn update(i: u32, clip: f32) {
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
