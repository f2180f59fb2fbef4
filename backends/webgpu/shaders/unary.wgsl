// Elementwise maths and log-softmax of imported graphs (core/primitives.def's unary(_backward),
// log_softmax(_backward); backends/cpu/scalar/graph.c defines them; a port of
// backends/vulkan/shaders/graph.comp). exp / log come from the driver (NaN and log's domain
// handled here), sin / cos are computed here (nexp, nlog, sin_q); erf is
// Abramowitz-Stegun 7.1.26 as the CPU's; log-softmax rows are summed in float (the CPU: double).
//   OP 0: Y = f(X), u0 = op (lithe__unary_op), u1 = n             (1 = Y, 2 = X)
//   OP 1: dX += dY f'(X), u0 = op, u1 = n                          (1 = dX, 2 = X, 3 = Y, 4 = dY)
//   OP 2: log_softmax of rows, u0 = M, u1 = N                      (1 = Y, 2 = X)
//   OP 3: dX += dY - exp(Y) sum(dY) per row, u0 = M, u1 = N        (1 = dX, 2 = Y, 3 = dY)
@group(0) @binding(1) var<storage, read_write> o: array<f32>;
@group(0) @binding(2) var<storage, read> b1: array<f32>;
@group(0) @binding(3) var<storage, read> b2: array<f32>;
@group(0) @binding(4) var<storage, read> b3: array<f32>;

fn erf_as(x: f32) -> f32 {
    let a1 = 0.254829592; let a2 = -0.284496736; let a3 = 1.421413741; let a4 = -1.453152027;
    let a5 = 1.061405429; let p = 0.3275911;
    let s = select(select(0.0, -1.0, x < 0.0), 1.0, x > 0.0);
    let ax = abs(x);
    let t = 1.0 / (1.0 + p * ax);
    let y = 1.0 - (((((a5 * t + a4) * t) + a3) * t + a2) * t + a1) * t * exp(-ax * ax);
    return s * y;
}
fn neg_inf() -> f32 { return bitcast<f32>(0xff800000u | (U(15u) & 0u)); }
fn is_nan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }
fn qnan() -> f32 { return bitcast<f32>(0x7fc00000u | (U(15u) & 0u)); }
// exp and log as the CPU's libm answers NaN and the ends of log's domain (drivers may not:
// SwiftShader's exp(NaN) is inf, its log(NaN) finite)
fn nexp(x: f32) -> f32 { if (is_nan(x)) { return x; } return exp(x); }
fn nlog(x: f32) -> f32 {
    if (is_nan(x) || x < 0.0) { return qnan(); }
    if (x == 0.0) { return neg_inf(); }
    return log(x);
}
// sin and cos to about an ulp for |x| up to ~1e4 (WGSL's builtins promise 2^-11 absolute error
// only): Cody-Waite reduction by pi / 2 in three parts, then Cephes' single-precision
// polynomials on [-pi/4, pi/4]; q adds quarter turns (cos(x) = sin(x + pi/2))
fn sin_q(x: f32, q: i32) -> f32 {
    if (is_nan(x) || abs(x) == bitcast<f32>(0x7f800000u | (U(15u) & 0u))) { return qnan(); }
    let j = round(x * 0.63661977236758134);
    let r = ((x - j * 1.5703125) - j * 4.837512969970703125e-4) - j * 7.54978995489188216e-8;
    let z = r * r;
    let sp = ((-1.9515295891e-4 * z + 8.3321608736e-3) * z - 1.6666654611e-1) * z * r + r;
    let cp = ((2.443315711809948e-5 * z - 1.388731625493765e-3) * z + 4.166664568298827e-2) * z * z - 0.5 * z + 1.0;
    let k = (i32(j) + q) & 3;
    if (k == 0) { return sp; }
    if (k == 1) { return cp; }
    if (k == 2) { return -sp; }
    return -cp;
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let op = U(0u);
    if (OP == 0u) {
        for (var k = first(gid, nwg); k < U(1u); k += stride(nwg)) {
            let x = b1[OFF(1u) + k];
            var y: f32;
            switch op {
                case 0u: { y = nexp(x); }
                case 1u: { y = nlog(x); }
                case 2u: { y = sqrt(x); }
                case 3u: { y = -x; }
                case 4u: { y = erf_as(x); }
                case 5u: { y = abs(x); }
                case 7u: { y = floor(x); }
                case 8u: { y = ceil(x); }
                case 9u: { y = round(x); }
                case 10u: { y = sin_q(x, 0); }
                case 11u: { y = sin_q(x, 1); }
                default: { y = 1.0 / x; }
            }
            o[OFF(0u) + k] = y;
        }
    } else if (OP == 1u) {
        for (var k = first(gid, nwg); k < U(1u); k += stride(nwg)) {
            let x = b1[OFF(1u) + k]; let y = b2[OFF(2u) + k]; let g = b3[OFF(3u) + k];
            var d: f32;
            switch op {
                case 0u: { d = g * y; }
                case 1u: { d = g / x; }
                case 2u: { d = g * 0.5 / y; }
                case 3u: { d = -g; }
                case 4u: { d = g * 1.12837916709551257 * nexp(-x * x); }
                case 5u: { d = select(select(0.0, -g, x < 0.0), g, x > 0.0); }
                case 7u, 8u, 9u: { d = 0.0; }
                case 10u: { d = g * sin_q(x, 1); }
                case 11u: { d = -(g * sin_q(x, 0)); }
                default: { d = -(g * y * y); }
            }
            o[OFF(0u) + k] = o[OFF(0u) + k] + d;
        }
    } else if (OP == 2u) {
        let M = U(0u); let N = U(1u);
        for (var r = first(gid, nwg); r < M; r += stride(nwg)) {
            var mx = neg_inf();
            for (var j = 0u; j < N; j++) { let v = b1[OFF(1u) + r * N + j]; mx = select(mx, v, v > mx); }
            var s = 0.0;
            for (var j = 0u; j < N; j++) { s += nexp(b1[OFF(1u) + r * N + j] - mx); }
            let lse = mx + nlog(s);
            for (var j = 0u; j < N; j++) { o[OFF(0u) + r * N + j] = b1[OFF(1u) + r * N + j] - lse; }
        }
    } else {
        let M = U(0u); let N = U(1u);
        for (var r = first(gid, nwg); r < M; r += stride(nwg)) {
            var s = 0.0;
            for (var j = 0u; j < N; j++) { s += b2[OFF(2u) + r * N + j]; }
            for (var j = 0u; j < N; j++) {
                let e = nexp(b1[OFF(1u) + r * N + j]) * s;
                o[OFF(0u) + r * N + j] = o[OFF(0u) + r * N + j] + (b2[OFF(2u) + r * N + j] - e);
            }
        }
    }
}
