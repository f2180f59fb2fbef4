// 2-D convolution of imported graphs (core/primitives.def's conv2d(_backward);
// backends/cpu/scalar/graph.c defines it; a port of backends/vulkan/shaders/conv.comp), direct:
// one invocation per output element, adding in the CPU's order. Geometry (lithe__conv2d):
// u0..u9 = N, C, H, W, M, KH, KW, OH, OW, group; f0..f5 = stride h, stride w, pad top, pad left,
// dil h, dil w (exact floats); f6 = 1 when a bias is bound; f7 = the fused activation's kind + 1
// (0: none), its parameters f8..f12 (act_fns: the act primitive's function, so Conv + Relu gives
// conv2d then act's bits).
//   OP 0: Y (N, M, OH, OW) = act(conv(X, W) + b)    (1 = Y, 2 = X, 3 = W, 4 = b)
//   OP 1: the backward in one dispatch, one invocation per element of dX, then of dW, then of db
//         (f6 bits: 1 dX, 2 dW, 4 db present)      (1 = dX, 2 = dY, 3 = W, 4 = X, 5 = dW, 6 = db)
//         dX (N, C, H, W) += dY ⋆ W; dW (M, C/g, KH, KW) += X ⋆ dY; db (M,) += dY summed
//!include act_fns
const AP: u32 = 8u;
@group(0) @binding(1) var<storage, read_write> o: array<f32>;
@group(0) @binding(2) var<storage, read> b1: array<f32>;
@group(0) @binding(3) var<storage, read> b2: array<f32>;
@group(0) @binding(4) var<storage, read> b3: array<f32>;
@group(0) @binding(5) var<storage, read_write> dw_: array<f32>;
@group(0) @binding(6) var<storage, read_write> db_: array<f32>;

fn gi(k: u32) -> i32 { return i32(F(k)); }
fn ui(k: u32) -> i32 { return i32(U(k)); }
// floor(a / b) for b > 0
fn fdiv(a: i32, b: i32) -> i32 { if (a >= 0) { return a / b; } return -((-a + b - 1) / b); }

// dX element e: for m of cin's group, oh, ow ascending (the CPU's order), the one tap reaching (h, w)
fn conv_dx(e: u32) {
    let C = ui(1u); let H = ui(2u); let W = ui(3u); let M = ui(4u); let KH = ui(5u); let KW = ui(6u);
    let OH = ui(7u); let OW = ui(8u); let Cg = C / ui(9u); let Mg = M / ui(9u);
    let sh = gi(0u); let sw = gi(1u); let ph = gi(2u); let pw = gi(3u); let dh = gi(4u); let dw = gi(5u);
    let w = i32(e % u32(W)); let h = i32((e / u32(W)) % u32(H));
    let ci = i32((e / u32(W * H)) % u32(C)); let n = i32(e / u32(W * H * C));
    let grp = ci / Cg; let c = ci - grp * Cg;
    let oh0 = max(0, fdiv(h + ph - (KH - 1) * dh + sh - 1, sh)); let oh1 = min(OH - 1, fdiv(h + ph, sh));
    let ow0 = max(0, fdiv(w + pw - (KW - 1) * dw + sw - 1, sw)); let ow1 = min(OW - 1, fdiv(w + pw, sw));
    var acc = o[OFF(0u) + e];
    for (var m = grp * Mg; m < (grp + 1) * Mg; m++) {
        let yo = OFF(1u) + u32((n * M + m) * OH * OW); let wo = OFF(2u) + u32((m * Cg + c) * KH * KW);
        for (var oh = oh0; oh <= oh1; oh++) {
            let th = h + ph - oh * sh;
            if (th % dh != 0) { continue; }
            let kh = th / dh;
            for (var ow = ow0; ow <= ow1; ow++) {
                let tw = w + pw - ow * sw;
                if (tw % dw != 0) { continue; }
                let kw = tw / dw;
                acc += b1[yo + u32(oh * OW + ow)] * b2[wo + u32(kh * KW + kw)];
            }
        }
    }
    o[OFF(0u) + e] = acc;
}

// dW element e: the output rows / columns whose window puts tap (kh, kw) inside the image
fn conv_dw(e: u32) {
    let N = ui(0u); let C = ui(1u); let H = ui(2u); let W = ui(3u); let M = ui(4u); let KH = ui(5u);
    let KW = ui(6u); let OH = ui(7u); let OW = ui(8u); let Cg = C / ui(9u); let Mg = M / ui(9u);
    let sh = gi(0u); let sw = gi(1u); let ph = gi(2u); let pw = gi(3u); let dh = gi(4u); let dw = gi(5u);
    let kw = i32(e % u32(KW)); let kh = i32((e / u32(KW)) % u32(KH));
    let c = i32((e / u32(KW * KH)) % u32(Cg)); let m = i32(e / u32(KW * KH * Cg));
    let c0 = (m / Mg) * Cg;
    let oh0 = max(0, fdiv(ph - kh * dh + sh - 1, sh)); let oh1 = min(OH - 1, fdiv(H - 1 + ph - kh * dh, sh));
    let ow0 = max(0, fdiv(pw - kw * dw + sw - 1, sw)); let ow1 = min(OW - 1, fdiv(W - 1 + pw - kw * dw, sw));
    var acc = dw_[OFF(4u) + e];
    for (var n = 0; n < N; n++) {
        let yo = OFF(1u) + u32((n * M + m) * OH * OW); let xo = OFF(3u) + u32((n * C + c0 + c) * H * W);
        for (var oh = oh0; oh <= oh1; oh++) {
            let h = oh * sh - ph + kh * dh;
            for (var ow = ow0; ow <= ow1; ow++) {
                let w = ow * sw - pw + kw * dw;
                acc += b1[yo + u32(oh * OW + ow)] * b3[xo + u32(h * W + w)];
            }
        }
    }
    dw_[OFF(4u) + e] = acc;
}

fn conv_db(m: u32) {
    let N = ui(0u); let M = ui(4u); let OH = ui(7u); let OW = ui(8u);
    var acc = db_[OFF(5u) + m];
    for (var n = 0; n < N; n++) {
        let yo = OFF(1u) + u32((n * M + i32(m)) * OH * OW);
        for (var k = 0u; k < u32(OH * OW); k++) { acc += b1[yo + k]; }
    }
    db_[OFF(5u) + m] = acc;
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let N = ui(0u); let C = ui(1u); let H = ui(2u); let W = ui(3u); let M = ui(4u);
    let KH = ui(5u); let KW = ui(6u); let OH = ui(7u); let OW = ui(8u); let G = ui(9u);
    let sh = gi(0u); let sw = gi(1u); let ph = gi(2u); let pw = gi(3u); let dh = gi(4u); let dw = gi(5u);
    let Cg = C / G; let Mg = M / G;
    if (OP == 0u) {
        let total = u32(N * M * OH * OW);
        let act = gi(7u);
        for (var e = first(gid, nwg); e < total; e += stride(nwg)) {
            let ow = i32(e % u32(OW)); let oh = i32((e / u32(OW)) % u32(OH));
            let m = i32((e / u32(OW * OH)) % u32(M)); let n = i32(e / u32(OW * OH * M));
            let c0 = (m / Mg) * Cg;
            var acc = 0.0;
            if (F(6u) != 0.0) { acc = b3[OFF(3u) + u32(m)]; }
            for (var c = 0; c < Cg; c++) {
                let xo = OFF(1u) + u32((n * C + c0 + c) * H * W); let wo = OFF(2u) + u32((m * Cg + c) * KH * KW);
                for (var kh = 0; kh < KH; kh++) {
                    let h = oh * sh - ph + kh * dh;
                    if (h < 0 || h >= H) { continue; }
                    for (var kw = 0; kw < KW; kw++) {
                        let w = ow * sw - pw + kw * dw;
                        if (w < 0 || w >= W) { continue; }
                        acc += b1[xo + u32(h * W + w)] * b2[wo + u32(kh * KW + kw)];
                    }
                }
            }
            if (act > 0) { acc = fwd(u32(act - 1), acc); }
            o[OFF(0u) + e] = acc;
        }
    } else {
        let parts = u32(F(6u));
        let nx = select(0u, u32(N * C * H * W), (parts & 1u) != 0u);
        let nw = select(0u, u32(M * Cg * KH * KW), (parts & 2u) != 0u);
        let nb = select(0u, u32(M), (parts & 4u) != 0u);
        for (var e = first(gid, nwg); e < nx + nw + nb; e += stride(nwg)) {
            if (e < nx) { conv_dx(e); } else if (e < nx + nw) { conv_dw(e - nx); } else { conv_db(e - nx - nw); }
        }
    }
}
