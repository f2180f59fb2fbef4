// MaxPool / AveragePool, 2-D, of imported graphs (core/primitives.def's pool2d(_backward);
// backends/cpu/scalar/graph.c defines them; a port of backends/vulkan/shaders/conv.comp's
// pooling). u0..u8 = N, C, H, W, -, KH, KW, OH, OW; u9 = 1 for max | 2 for count_include_pad |
// 4 when no which is written (inference max pooling); f0..f5 = stride h, stride w, pad top,
// pad left, dil h, dil w (exact floats). Max pooling is bit-exact; average divides on the device.
//   OP 0: Y (N, C, OH, OW), which (max)        (1 = Y, 2 = which, 3 = X)
//   OP 1: dX (N, C, H, W) += routed dY         (1 = dX, 3 = dY, 4 = which)
@group(0) @binding(1) var<storage, read_write> o: array<f32>;
@group(0) @binding(2) var<storage, read_write> which_out: array<i32>;
@group(0) @binding(3) var<storage, read> inp: array<f32>;
@group(0) @binding(4) var<storage, read> which_in: array<i32>;

fn gi(k: u32) -> i32 { return i32(F(k)); }
fn ui(k: u32) -> i32 { return i32(U(k)); }
fn fdiv(a: i32, b: i32) -> i32 { if (a >= 0) { return a / b; } return -((-a + b - 1) / b); }
fn neg_inf() -> f32 { return bitcast<f32>(0xff800000u | (U(15u) & 0u)); }

// the in-bounds taps of window (oh, ow), as the CPU counts them
fn window_count(oh: i32, ow: i32) -> i32 {
    let H = ui(2u); let W = ui(3u); let KH = ui(5u); let KW = ui(6u);
    var count = 0;
    for (var kh = 0; kh < KH; kh++) {
        let h = oh * gi(0u) - gi(2u) + kh * gi(4u);
        for (var kw = 0; kw < KW; kw++) {
            let w = ow * gi(1u) - gi(3u) + kw * gi(5u);
            if (h >= 0 && h < H && w >= 0 && w < W) { count++; }
        }
    }
    return count;
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let N = ui(0u); let C = ui(1u); let H = ui(2u); let W = ui(3u);
    let KH = ui(5u); let KW = ui(6u); let OH = ui(7u); let OW = ui(8u);
    let sh = gi(0u); let sw = gi(1u); let ph = gi(2u); let pw = gi(3u); let dh = gi(4u); let dw = gi(5u);
    let is_max = (U(9u) & 1u) != 0u; let cip = (U(9u) & 2u) != 0u; let keep = (U(9u) & 4u) == 0u;
    if (OP == 0u) {
        let total = u32(N * C * OH * OW);
        for (var e = first(gid, nwg); e < total; e += stride(nwg)) {
            let ow = i32(e % u32(OW)); let oh = i32((e / u32(OW)) % u32(OH)); let nc = i32(e / u32(OW * OH));
            let xo = OFF(2u) + u32(nc * H * W);
            var best = neg_inf(); var sum = 0.0; var arg = -1; var count = 0;
            for (var kh = 0; kh < KH; kh++) {
                let h = oh * sh - ph + kh * dh;
                for (var kw = 0; kw < KW; kw++) {
                    let w = ow * sw - pw + kw * dw;
                    if (h < 0 || h >= H || w < 0 || w >= W) { continue; }
                    let v = inp[xo + u32(h * W + w)];
                    count++;
                    sum += v;
                    if (arg < 0 || v > best) { best = v; arg = h * W + w; }
                }
            }
            if (is_max) {
                o[OFF(0u) + e] = best;
                if (keep) { which_out[OFF(1u) + e] = arg; }
            } else {
                var div = count;
                if (cip) { div = KH * KW; }
                o[OFF(0u) + e] = select(0.0, sum / f32(div), div != 0);
            }
        }
    } else {
        let total = u32(N * C * H * W);
        for (var e = first(gid, nwg); e < total; e += stride(nwg)) {
            let w = i32(e % u32(W)); let h = i32((e / u32(W)) % u32(H)); let nc = i32(e / u32(W * H));
            let yo = u32(nc * OH * OW);
            // the windows that can hold (h, w), in the CPU's order (oh, ow ascending)
            let oh0 = max(0, fdiv(h + ph - (KH - 1) * dh + sh - 1, sh)); let oh1 = min(OH - 1, fdiv(h + ph, sh));
            let ow0 = max(0, fdiv(w + pw - (KW - 1) * dw + sw - 1, sw)); let ow1 = min(OW - 1, fdiv(w + pw, sw));
            var acc = o[OFF(0u) + e];
            for (var oh = oh0; oh <= oh1; oh++) {
                if ((h + ph - oh * sh) % dh != 0) { continue; }
                for (var ow = ow0; ow <= ow1; ow++) {
                    if ((w + pw - ow * sw) % dw != 0) { continue; }
                    let q = yo + u32(oh * OW + ow);
                    if (is_max) {
                        if (which_in[OFF(3u) + q] == h * W + w) { acc += inp[OFF(2u) + q]; }
                        continue;
                    }
                    var div = KH * KW;
                    if (!cip) { div = window_count(oh, ow); }
                    if (div == 0) { continue; }
                    acc += inp[OFF(2u) + q] / f32(div);
                }
            }
            o[OFF(0u) + e] = acc;
        }
    }
}
