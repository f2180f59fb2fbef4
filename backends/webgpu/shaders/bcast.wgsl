// Broadcasting ops of imported graphs (core/primitives.def's bcast_binary(_backward), bcast_where,
// broadcast_to, reduce_to; backends/cpu/scalar/graph.c defines them; a port of
// backends/vulkan/shaders/bcast.comp). The index space (nd <= 8 axes, adjacent axes of one
// broadcast pattern merged by the host) travels in the parameter block: u4 = nd, extents
// u6..u9 (axes 0..3) and f8..f11 (axes 4..7, exact floats); u5 = operand o's broadcast axes as
// bits 8 o + d. Each operand is contiguous; its strides follow from the extents and its mask.
// Forward ops: one invocation per output element. Reductions (reduce_to, the binary backward):
// one invocation per target element, adding the full-space elements that map to it in the CPU's
// odometer order (the CPU's order of additions).
//   OP 0: Y = A op B, u0 = op, u1 = n                              (1 = Y, 2 = A (o 0), 3 = B (o 1))
//   OP 1: Y = C != 0 ? A : B, u1 = n                               (1 = Y, 2 = C (o 0), 3 = A (o 1), 4 = B (o 2))
//   OP 2: Y = beta Y + alpha X, u1 = n, f0 = alpha, f1 = beta      (1 = Y, 2 = X (o 0))
//   OP 3: Y = beta Y + alpha sum X, u1 = numel Y (Y is o 0)        (1 = Y, 2 = X)
//   OP 4: dA (u2 = 0, o 0) or dB (u2 = 1, o 1) += the gradient of A op B, u0 = op, u1 = numel of
//         the target, u3 = Y bound                                 (1 = dA | dB, 2 = A, 3 = B, 4 = Y, 5 = dY)
@group(0) @binding(1) var<storage, read_write> o: array<f32>;
@group(0) @binding(2) var<storage, read> b1: array<f32>;
@group(0) @binding(3) var<storage, read> b2: array<f32>;
@group(0) @binding(4) var<storage, read> b3: array<f32>;
@group(0) @binding(5) var<storage, read> b4: array<f32>;

fn nd() -> u32 { return U(4u); }
fn shp(d: u32) -> u32 { if (d < 4u) { return U(6u + d); } return u32(F(4u + d)); }
fn bc(op_: u32, d: u32) -> bool { return ((U(5u) >> (8u * op_ + d)) & 1u) != 0u; }
// operand op_'s element stride along axis d (0 where it broadcasts)
fn str(op_: u32, d: u32) -> u32 {
    if (bc(op_, d)) { return 0u; }
    var s = 1u;
    for (var e = nd() - 1u; e > d; e--) { if (!bc(op_, e)) { s *= shp(e); } }
    return s;
}
fn off_of(op_: u32, k0: u32) -> u32 {
    var k = k0; var off = 0u; var s = 1u;
    for (var d = i32(nd()) - 1; d >= 0; d--) {
        let e = shp(u32(d));
        if (!bc(op_, u32(d))) { off += (k % e) * s; s *= e; }
        k /= e;
    }
    return off;
}
fn pinf() -> f32 { return bitcast<f32>(0x7f800000u | (U(15u) & 0u)); }
fn qnan() -> f32 { return bitcast<f32>(0x7fc00000u | (U(15u) & 0u)); }
// powf's results where WGSL's pow is undefined (a <= 0): integer exponents of negatives, zero bases
fn powf_(a: f32, b: f32) -> f32 {
    if (b == 0.0) { return 1.0; }
    if (a > 0.0) { return pow(a, b); }
    if (a == 0.0) { return select(pinf(), 0.0, b > 0.0); }
    if (floor(b) != b) { return qnan(); }
    let r = pow(-a, b);
    return select(r, -r, b % 2.0 != 0.0);
}
fn bin_fwd(op_: u32, a: f32, b: f32) -> f32 {
    switch op_ {
        case 0u: { return a + b; }
        case 1u: { return a - b; }
        case 2u: { return a * b; }
        case 3u: { return a / b; }
        case 5u: { return select(0.0, 1.0, a < b); }
        case 6u: { return select(0.0, 1.0, a > b); }
        case 7u: { return select(0.0, 1.0, a == b); }
        default: { return powf_(a, b); }
    }
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let n = U(1u);
    if (OP == 0u) {
        for (var k = first(gid, nwg); k < n; k += stride(nwg)) {
            o[OFF(0u) + k] = bin_fwd(U(0u), b1[OFF(1u) + off_of(0u, k)], b2[OFF(2u) + off_of(1u, k)]);
        }
    } else if (OP == 1u) {
        for (var k = first(gid, nwg); k < n; k += stride(nwg)) {
            o[OFF(0u) + k] = select(b3[OFF(3u) + off_of(2u, k)], b2[OFF(2u) + off_of(1u, k)], b1[OFF(1u) + off_of(0u, k)] != 0.0);
        }
    } else if (OP == 2u) {
        let alpha = F(0u); let beta = F(1u);
        for (var k = first(gid, nwg); k < n; k += stride(nwg)) {
            var prev = 0.0;
            if (beta != 0.0) { prev = beta * o[OFF(0u) + k]; }
            o[OFF(0u) + k] = prev + alpha * b1[OFF(1u) + off_of(0u, k)];
        }
    } else {
        var side = 0u;
        if (OP == 4u) { side = U(2u); }
        let other = 1u - side;
        var sto: array<u32, 8>;
        for (var d = 0u; d < nd(); d++) { sto[d] = str(other, d); }
        for (var e = first(gid, nwg); e < n; e += stride(nwg)) {
            // the target's coordinates along its own axes; the broadcast axes are reduced
            var coord: array<u32, 8>;
            var R = 1u; var rest = e;
            for (var d = i32(nd()) - 1; d >= 0; d--) {
                let ex = shp(u32(d));
                if (bc(side, u32(d))) { coord[d] = 0u; R *= ex; } else { coord[d] = rest % ex; rest /= ex; }
            }
            var acc: f32;
            if (OP == 3u) {
                acc = 0.0;
                if (F(1u) != 0.0) { acc = F(1u) * o[OFF(0u) + e]; }
            } else {
                acc = o[OFF(0u) + e];
            }
            for (var r = 0u; r < R; r++) {
                var rr = r; var k = 0u; var oo = 0u; var full = 1u;
                for (var d = i32(nd()) - 1; d >= 0; d--) {
                    let ex = shp(u32(d));
                    var c = coord[d];
                    if (bc(side, u32(d))) { c = rr % ex; rr /= ex; }
                    k += c * full;
                    full *= ex;
                    oo += c * sto[d];
                }
                if (OP == 3u) { acc += F(0u) * b1[OFF(1u) + k]; continue; }
                var a: f32; var b: f32;
                if (side == 0u) { a = b1[OFF(1u) + e]; b = b2[OFF(2u) + oo]; } else { a = b1[OFF(1u) + oo]; b = b2[OFF(2u) + e]; }
                var y = 0.0;
                if (U(3u) != 0u) { y = b3[OFF(3u) + k]; }
                let g = b4[OFF(4u) + k];
                var dd: f32;
                switch U(0u) {
                    case 0u: { dd = g; }
                    case 1u: { dd = select(-g, g, side == 0u); }
                    case 2u: { dd = select(g * a, g * b, side == 0u); }
                    case 3u: { dd = select(-g * y / b, g / b, side == 0u); }
                    case 5u, 6u, 7u: { dd = 0.0; }
                    default: {
                        if (side == 0u) { dd = g * b * powf_(a, b - 1.0); }
                        else { dd = select(0.0, g * y * log(a), a > 0.0); }
                    }
                }
                acc += dd;
            }
            o[OFF(0u) + e] = acc;
        }
    }
}
