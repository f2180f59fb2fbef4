// A workgroup's sum of two floats per invocation (included by the layernorm shaders).
var<workgroup> red: array<vec2<f32>, 256>;
fn reduce2(v: vec2<f32>, t: u32) -> vec2<f32> {
    red[t] = v;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if (t < s) { red[t] += red[t + s]; }
        workgroupBarrier();
    }
    let r = red[0];
    workgroupBarrier();
    return r;
}
