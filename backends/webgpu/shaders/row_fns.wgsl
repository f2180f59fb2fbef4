// What the CPU adapters' row kernels (softmax_cpu, layernorm_cpu, layernorm_dx_cpu) and softmax.wgsl
// share: NaN-aware exp and max as the CPU's rows.h computes them (SwiftShader's exp(NaN) is inf),
// and a compensated float sum (the CPU sums rows in double; one invocation per row adds serially).
fn rf_neg_inf() -> f32 { return bitcast<f32>(0xff800000u | (U(15u) & 0u)); }
fn rf_is_nan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }
fn rf_exp(x: f32) -> f32 { if (rf_is_nan(x)) { return x; } return exp(x); }
// the CPU's `if (v > mx) mx = v`: NaN never becomes the maximum
fn rf_max(mx: f32, v: f32) -> f32 { return select(mx, v, v > mx); }
// s.x + v, compensated (Kahan) in s.y; an infinite or NaN sum keeps no compensation, so it
// propagates as the CPU's double sum does
fn rf_add(s: vec2<f32>, v: f32) -> vec2<f32> {
    let y = v - s.y;
    let t = s.x + y;
    return vec2<f32>(t, select(0.0, (t - s.x) - y, abs(t) <= 3.4028234663852886e38));
}
