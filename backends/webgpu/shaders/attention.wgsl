// ParametricAttention and CauchySimilarity (backends/vulkan's recur.comp ops 5..15; the CPU's
// scalar/lstm.c defines them), sums in the CPU's order. Binding 1 is written; binding 6 holds the
// sequence starts (B + 1 ints, uploaded from the host lengths) or, for Cauchy's backward, sim (B,)
// then dsim (B,).
// Attention, X (N, O): u0 = B, u1 = O, u2 = N, u3 = 1 when Tot sums A * S.
//   OP 0: A[r] = exp(clip(X[r] · Q, -20, 20))        (1 = A, 2 = X, 3 = Q)
//   OP 1: Tot[s] = sum over s's rows of A (or A * S) (1 = Tot, 2 = A, 3 = S)
//   OP 2: A[r] /= Tot[seq of r]                       (1 = A, 2 = Tot)
//   OP 3: Y = X * A (row-wise)                        (1 = Y, 2 = X, 3 = A)
//   OP 4: S[r] = X[r] · dY[r]                         (1 = S, 2 = X, 4 = dY)
//   OP 5: S[r] = A S - A Tot[seq of r] (ds)           (1 = S, 2 = Tot, 3 = A)
//   OP 6: dX = dY * A + ds ⊗ Q                        (1 = dX, 2 = dY, 3 = A, 4 = S, 5 = Q)
//   OP 7: dQ[j] += sum over rows of X * ds            (1 = dQ, 2 = X, 3 = S)
// Cauchy, X1, X2 (B, I): u0 = B, u1 = I.
//   OP 8: sim = 1 / (1 + sum_j W (X1 - X2)^2)         (1 = sim, 2 = X1, 3 = X2, 4 = W)
//   OP 9: dX1 (dX2 = -dX1 by a second dispatch with f0 = -1) (1 = dX, 2 = X1, 3 = X2, 4 = W, 6 = sim|dsim)
//   OP 10: dW[j] += sum over b of d_tot (X1 - X2)^2    (1 = dW, 2 = X1, 3 = X2, 6 = sim|dsim)
@group(0) @binding(1) var<storage, read_write> o: array<f32>;
@group(0) @binding(2) var<storage, read> x2: array<f32>;
@group(0) @binding(3) var<storage, read> x3: array<f32>;
@group(0) @binding(4) var<storage, read> x4: array<f32>;
@group(0) @binding(5) var<storage, read> x5: array<f32>;
@group(0) @binding(6) var<storage, read> x6: array<f32>;
fn start_of(b: u32) -> u32 { return bitcast<u32>(x6[OFF(5u) + b]); }
fn seq_of(r: u32) -> u32 {
    var lo = 0u; var hi = U(0u);
    while (hi - lo > 1u) {
        let mid = (lo + hi) / 2u;
        if (start_of(mid) <= r) { lo = mid; } else { hi = mid; }
    }
    return lo;
}
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let B = U(0u); let O = U(1u); let N = U(2u);
    if (OP == 0u || OP == 4u) {
        for (var r = first(gid, nwg); r < N; r += stride(nwg)) {
            var d = 0.0;
            for (var j = 0u; j < O; j++) {
                var q: f32;
                if (OP == 0u) { q = x3[OFF(2u) + j]; } else { q = x4[OFF(3u) + r * O + j]; }
                d += x2[OFF(1u) + r * O + j] * q;
            }
            if (OP == 0u) { d = exp(clamp(d, -20.0, 20.0)); }
            o[OFF(0u) + r] = d;
        }
    } else if (OP == 1u) {
        for (var s = first(gid, nwg); s < B; s += stride(nwg)) {
            var sum = 0.0;
            for (var r = start_of(s); r < start_of(s + 1u); r++) {
                if (U(3u) != 0u) { sum += x2[OFF(1u) + r] * x3[OFF(2u) + r]; } else { sum += x2[OFF(1u) + r]; }
            }
            o[OFF(0u) + s] = sum;
        }
    } else if (OP == 2u || OP == 5u) {
        for (var r = first(gid, nwg); r < N; r += stride(nwg)) {
            let tot = x2[OFF(1u) + seq_of(r)];
            if (OP == 2u) { o[OFF(0u) + r] = o[OFF(0u) + r] / tot; }
            else { let A = x3[OFF(2u) + r]; o[OFF(0u) + r] = A * o[OFF(0u) + r] - A * tot; }
        }
    } else if (OP == 3u) {
        for (var e = first(gid, nwg); e < N * O; e += stride(nwg)) { o[OFF(0u) + e] = x2[OFF(1u) + e] * x3[OFF(2u) + e / O]; }
    } else if (OP == 6u) {
        for (var e = first(gid, nwg); e < N * O; e += stride(nwg)) {
            o[OFF(0u) + e] = x2[OFF(1u) + e] * x3[OFF(2u) + e / O] + x4[OFF(3u) + e / O] * x5[OFF(4u) + e % O];
        }
    } else if (OP == 7u) {
        for (var j = first(gid, nwg); j < O; j += stride(nwg)) {
            var acc = o[OFF(0u) + j];
            for (var r = 0u; r < N; r++) { acc += x2[OFF(1u) + r * O + j] * x3[OFF(2u) + r]; }
            o[OFF(0u) + j] = acc;
        }
    } else if (OP == 8u) {
        let I = O;
        for (var b = first(gid, nwg); b < B; b += stride(nwg)) {
            var tot = 0.0;
            for (var j = 0u; j < I; j++) {
                let d = x2[OFF(1u) + b * I + j] - x3[OFF(2u) + b * I + j];
                tot += x4[OFF(3u) + j] * (d * d);
            }
            o[OFF(0u) + b] = 1.0 / (1.0 + tot);
        }
    } else if (OP == 9u) {
        let I = O;
        for (var e = first(gid, nwg); e < B * I; e += stride(nwg)) {
            let b = e / I; let j = e % I;
            let inv = x6[OFF(5u) + b];
            let dt = x6[OFF(5u) + B + b] * (-(inv * inv));
            let d = x2[OFF(1u) + e] - x3[OFF(2u) + e];
            let dd = 2.0 * (x4[OFF(3u) + j] * dt) * d;
            o[OFF(0u) + e] = F(0u) * dd;
        }
    } else {
        let I = O;
        for (var j = first(gid, nwg); j < I; j += stride(nwg)) {
            var acc = o[OFF(0u) + j];
            for (var b = 0u; b < B; b++) {
                let inv = x6[OFF(5u) + b];
                let dt = x6[OFF(5u) + B + b] * (-(inv * inv));
                let d = x2[OFF(1u) + b * I + j] - x3[OFF(2u) + b * I + j];
                acc += dt * (d * d);
            }
            o[OFF(0u) + j] = acc;
        }
    }
}
