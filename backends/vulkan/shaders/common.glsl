// Shared by every lithe compute shader: the push-constant block (vulkan_internal.h's
// lithe__vk_push), the workgroup size, grid-stride loops and 64-bit integer helpers built on
// 32-bit words (shaderInt64 is optional in Vulkan, absent on many mobile GPUs).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_spirv_intrinsics : require

// NaN stays NaN, as on the CPU: without SPIR-V's SignedZeroInfNanPreserve a driver may assume no NaN
// and fold `x <= 0.0 ? 0.0 : x` into max(x, 0.0) (NVIDIA's did: Relu and Clip of a NaN gave 0 and
// the bound on an H200). The mode (SPV_KHR_float_controls) is stripped again at pipeline creation on
// a device without shaderSignedZeroInfNanPreserveFloat32 (vulkan_backend.c's spirv_without_nan_mode).
spirv_execution_mode(extensions = ["SPV_KHR_float_controls"], capabilities = [4466], 4461, 32);

layout(push_constant) uniform Push {
    uint u[16];   // u[0..9]: the op's arguments; u[10 + b]: word offset of binding b's tensor
    float f[16];
} pc;

#define WG 256
#define OFF(b) pc.u[10 + (b)]

// grid-stride loop over [0, n): for (uint i = FIRST; i < n; i += STRIDE)
#define FIRST (gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x)
#define STRIDE (gl_NumWorkGroups.x * gl_NumWorkGroups.y * gl_WorkGroupSize.x)

// 64-bit values as uvec2(low word, high word).
uvec2 add64(uvec2 a, uvec2 b) {
    uint carry;
    uint lo = uaddCarry(a.x, b.x, carry);
    return uvec2(lo, a.y + b.y + carry);
}
uvec2 mul64(uvec2 a, uvec2 b) {
    uint hi, lo;
    umulExtended(a.x, b.x, hi, lo);
    return uvec2(lo, hi + a.x * b.y + a.y * b.x);
}
uvec2 shr64(uvec2 a, uint n) { // 0 < n < 64
    if (n >= 32u) return uvec2(a.y >> (n - 32u), 0u);
    return uvec2((a.x >> n) | (a.y << (32u - n)), a.y >> n);
}
uvec2 shl64(uvec2 a, uint n) { // 0 < n < 64
    if (n >= 32u) return uvec2(0u, a.x << (n - 32u));
    return uvec2(a.x << n, (a.y << n) | (a.x >> (32u - n)));
}
uvec2 rotl64(uvec2 a, uint r) { return shl64(a, r) | shr64(a, 64u - r); }
uvec2 neg64(uvec2 a) { return add64(~a, uvec2(1u, 0u)); }
