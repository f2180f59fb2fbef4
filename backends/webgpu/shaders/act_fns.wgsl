// The activations and their derivatives (Thinc 8.1's formulas; backends/cpu's act is the
// reference), included by act.wgsl and gemm.wgsl (its fused epilogue). The including shader
// declares AP: the index of the activation's f parameters (slope, offset, min, max, threshold).
// comparisons, not clamp / min / max, so a NaN input stays NaN (Thinc's np.clip)
fn clip(x: f32, lo: f32, hi: f32) -> f32 { return select(select(x, hi, x > hi), lo, x < lo); }
fn sigmoid_clipped(x: f32) -> f32 { return 1.0 / (1.0 + exp(-clip(x, -20.0, 20.0))); }
fn safe_tanh(x: f32) -> f32 { let t = exp(-2.0 * abs(x)); return sign(x) * (1.0 - t) / (1.0 + t); }
fn thinc_erf(x: f32) -> f32 {
    let a1 = 0.254829592; let a2 = -0.284496736; let a3 = 1.421413741; let a4 = -1.453152027;
    let a5 = 1.061405429; let p = 0.3275911;
    let s = select(select(0.0, -1.0, x < 0.0), 1.0, x > 0.0);
    let ax = abs(x);
    let t = 1.0 / (1.0 + p * ax);
    let yv = 1.0 - (((((a5 * t + a4) * t) + a3) * t + a2) * t + a1) * t * exp(-ax * ax);
    return s * yv;
}
fn cdf(x: f32) -> f32 { return 0.5 * (1.0 + thinc_erf(x * 0.70710678118654752)); }
fn pdf(x: f32) -> f32 { return 0.3989422804014327 * exp(-0.5 * x * x); }

fn fwd(kind: u32, x: f32) -> f32 {
    switch kind {
        case 0u: { return select(x, 0.0, x <= 0.0); }
        case 1u: { return sigmoid_clipped(x); }
        case 2u: { return safe_tanh(x); }
        case 3u: { return x * sigmoid_clipped(x); }
        case 4u: { return x * cdf(x); }
        case 5u: { if (x < F(AP + 4u)) { return x * safe_tanh(log(1.0 + exp(x))); } return x; }
        case 6u: { return x * (0.5 * (x / sqrt(x * x + 1.0) + 1.0)); }
        case 7u: { return clip(x * 0.2 + 0.5, 0.0, 1.0); }
        case 8u: { return clip(x, -1.0, 1.0); }
        case 9u: { return x * clip(x * 0.2 + 0.5, 0.0, 1.0); }
        case 10u: { return x * (clip(x + 3.0, 0.0, 6.0) / 6.0); }
        default: { return clip(x * F(AP + 0u) + F(AP + 1u), F(AP + 2u), F(AP + 3u)); }
    }
}

fn bwd(kind: u32, dy: f32, x: f32, y: f32) -> f32 {
    switch kind {
        case 0u: { return select(dy, 0.0, y <= 0.0); }
        case 1u: { return dy * (y * (1.0 - y)); }
        case 2u: { return dy * (1.0 - y * y); }
        case 3u: { return dy * (y + sigmoid_clipped(x) * (1.0 - y)); }
        case 4u: { return dy * (cdf(x) + x * pdf(x)); }
        case 5u: {
            if (!(x < F(AP + 4u))) { return dy; }
            let e1 = exp(x); let e2 = exp(2.0 * x); let e3 = exp(3.0 * x);
            let omega = 4.0 * (x + 1.0) + 4.0 * e2 + e3 + e1 * (4.0 * x + 6.0);
            let delta = 2.0 * e1 + e2 + 2.0;
            return dy * ((e1 * omega) / (delta * delta));
        }
        case 6u: {
            let sq1 = x * x + 1.0;
            return dy * (x / sqrt(sq1) - (0.5 * x * (x * x)) / (sq1 * sqrt(sq1)) + 0.5);
        }
        case 7u: { return dy * select(0.0, 0.2, x > -2.5 && x < 2.5); }
        case 8u: { return dy * select(0.0, 1.0, x > -1.0 && x < 1.0); }
        case 9u: { return dy * select(select(x * 0.4 + 0.5, 0.0, x < -2.5), 1.0, x > 2.5); }
        case 10u: { return select(select((1.0 / 6.0) * (x * 2.0 + 3.0), 0.0, x < -3.0), 1.0, x > 3.0) * dy; }
        default: {
            let low = (F(AP + 2u) - F(AP + 1u)) / F(AP + 0u); let high = (F(AP + 3u) - F(AP + 1u)) / F(AP + 0u);
            return dy * select(0.0, F(AP + 0u), low < x && x < high);
        }
    }
}

