// Prepended to every shader (embed_wgsl.cmake): the parameter block (webgpu_internal.h's
// lithe__wg_params) at binding 0, the grid-stride loop helpers and the override OP that selects
// the operation within a family (a pipeline per (shader, OP), compiled on first use).
struct Params { u: array<vec4<u32>, 4>, f: array<vec4<f32>, 4> };
@group(0) @binding(0) var<uniform> P: Params;
override OP: u32 = 0u;
const WG: u32 = 256u;
fn U(i: u32) -> u32 { return P.u[i / 4u][i % 4u]; }
fn F(i: u32) -> f32 { return P.f[i / 4u][i % 4u]; }
fn OFF(b: u32) -> u32 { return U(10u + b); }
// grid-stride loops over [0, n): first index and stride of invocation gid in a (gx, gy) grid
fn first(gid: vec3<u32>, nwg: vec3<u32>) -> u32 { return gid.x + gid.y * nwg.x * WG; }
fn stride(nwg: vec3<u32>) -> u32 { return nwg.x * nwg.y * WG; }
