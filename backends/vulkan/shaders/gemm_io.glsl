// Shared by the vectorised GEMM variants (gemm_tiled.comp, gemm_subgroup.comp): C, A and B bound
// twice (binding 0, 1, 2), as float[] and as vec4[], and loads / stores of 4 consecutive elements
// along a matrix's contiguous axis. Spec constant 5 (VEC) says which operands may use the vec4
// view: bit 0 A, bit 1 B, bit 2 C, set by the host when the tensor's offset and row stride are
// multiples of 4 floats (then every 4-aligned column starts a vec4). Otherwise, and at the right
// edge, the same 4 elements come as scalars (zeros past the edge); so every shape and stride works
// and aligned ones get 16-byte loads.
layout(constant_id = 5) const uint VEC = 0u;
layout(std430, binding = 0) buffer Cb { float c[]; };
layout(std430, binding = 0) buffer Cb4 { vec4 c4[]; };
layout(std430, binding = 1) readonly buffer Ab { float a[]; };
layout(std430, binding = 1) readonly buffer Ab4 { vec4 a4[]; };
layout(std430, binding = 2) readonly buffer Bb { float b[]; };
layout(std430, binding = 2) readonly buffer Bb4 { vec4 b4[]; };

// A as stored: nrows x ncols, row stride ld; elements (row, col .. col + 3), col a multiple of 4
vec4 load_a4(uint row, uint col, uint nrows, uint ncols, uint ld) {
    if (row >= nrows) return vec4(0.0);
    uint i = OFF(1) + row * ld + col;
    if ((VEC & 1u) != 0u && col + 4u <= ncols) return a4[i >> 2];
    vec4 v = vec4(0.0);
    for (uint j = 0u; j < 4u; j++)
        if (col + j < ncols) v[j] = a[i + j];
    return v;
}
vec4 load_b4(uint row, uint col, uint nrows, uint ncols, uint ld) {
    if (row >= nrows) return vec4(0.0);
    uint i = OFF(2) + row * ld + col;
    if ((VEC & 2u) != 0u && col + 4u <= ncols) return b4[i >> 2];
    vec4 v = vec4(0.0);
    for (uint j = 0u; j < 4u; j++)
        if (col + j < ncols) v[j] = b[i + j];
    return v;
}
// C (row, col .. col + 3) = alpha * v + beta * C, inside M x N; beta == 0 never reads C
void store_c4(uint row, uint col, uint M, uint N, uint ldc, vec4 v, float alpha, float beta) {
    if (row >= M) return;
    uint i = OFF(0) + row * ldc + col;
    if ((VEC & 4u) != 0u && col + 4u <= N) {
        c4[i >> 2] = beta == 0.0 ? alpha * v : alpha * v + beta * c4[i >> 2];
        return;
    }
    for (uint j = 0u; j < 4u; j++)
        if (col + j < N) c[i + j] = beta == 0.0 ? alpha * v[j] : alpha * v[j] + beta * c[i + j];
}
