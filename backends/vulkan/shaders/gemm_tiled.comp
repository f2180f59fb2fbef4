#version 450
// GEMM, the "tiled" variant (register tiling with 16-byte loads): C (M, N) = alpha * op(A) · op(B)
// + beta * C, as gemm.comp. A workgroup of 16 x 16 invocations owns a BM x BN = 16 TM x 16 TN tile
// of C; invocation (tx, ty) accumulates the TM x TN block of consecutive rows ty TM .. and
// consecutive columns tx TN .. in vec4 registers. Each K step of BK stages op(A)'s panel
// transposed (k-major, so an invocation's TM rows are TM / 4 vec4 reads) and op(B)'s panel in
// shared memory as vec4s, loaded from global memory 4 elements at a time along each operand's
// contiguous axis (gemm_io.glsl: vec4 loads when aligned). Per k: TM / 4 + TN / 4 shared vec4
// reads feed TM TN multiply-adds (gemm.comp: TM + TN scalar reads).
// Spec constants: 0 = transA, 1 = transB, 2 = TM, 3 = TN (multiples of 4), 4 = BK (multiple of
// 4), 5 = VEC (gemm_io.glsl). u0..u5 = M, N, K, lda, ldb, ldc; f0 = alpha, f1 = beta.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
layout(local_size_x = 16, local_size_y = 16) in;
layout(constant_id = 0) const uint TRANS_A = 0u;
layout(constant_id = 1) const uint TRANS_B = 0u;
layout(constant_id = 2) const uint TM = 8u;
layout(constant_id = 3) const uint TN = 8u;
layout(constant_id = 4) const uint BK = 8u;
#include "gemm_io.glsl"
const uint BM = 16u * TM, BN = 16u * TN, TM4 = TM / 4u, TN4 = TN / 4u;

shared vec4 As[BK][BM / 4u]; // As[k][m / 4][m % 4] = op(A)[m0 + m][k0 + k]
shared vec4 Bs[BK][BN / 4u]; // Bs[k][n / 4][n % 4] = op(B)[k0 + k][n0 + n]

void main() {
    uint M = pc.u[0], N = pc.u[1], K = pc.u[2], lda = pc.u[3], ldb = pc.u[4], ldc = pc.u[5];
    float alpha = pc.f[0], beta = pc.f[1];
    uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y, tid = ty * 16u + tx;
    uint m0 = gl_WorkGroupID.y * BM, n0 = gl_WorkGroupID.x * BN;
    vec4 acc[TM][TN4];
    for (uint r = 0u; r < TM; r++)
        for (uint j = 0u; j < TN4; j++) acc[r][j] = vec4(0.0);
    const uint NA = BM * BK / 4u, NB = BN * BK / 4u; // vec4s per panel
    for (uint k0 = 0u; k0 < K; k0 += BK) {
        for (uint e = tid; e < NA; e += 256u) {
            if (TRANS_A == 0u) { // A (M, K): 4 consecutive k of row m, stored down the panel
                uint mi = e / (BK / 4u), kq = e % (BK / 4u);
                vec4 v = load_a4(m0 + mi, k0 + 4u * kq, M, K, lda);
                for (uint j = 0u; j < 4u; j++) As[4u * kq + j][mi >> 2][mi & 3u] = v[j];
            } else { // A (K, M): 4 consecutive m of row k, as they sit in the panel
                uint kk = e / (BM / 4u), mq = e % (BM / 4u);
                As[kk][mq] = load_a4(k0 + kk, m0 + 4u * mq, K, M, lda);
            }
        }
        for (uint e = tid; e < NB; e += 256u) {
            if (TRANS_B == 0u) { // B (K, N)
                uint kk = e / (BN / 4u), nq = e % (BN / 4u);
                Bs[kk][nq] = load_b4(k0 + kk, n0 + 4u * nq, K, N, ldb);
            } else { // B (N, K)
                uint ni = e / (BK / 4u), kq = e % (BK / 4u);
                vec4 v = load_b4(n0 + ni, k0 + 4u * kq, N, K, ldb);
                for (uint j = 0u; j < 4u; j++) Bs[4u * kq + j][ni >> 2][ni & 3u] = v[j];
            }
        }
        barrier();
        for (uint k = 0u; k < BK; k++) {
            vec4 av[TM4], bv[TN4];
            for (uint i = 0u; i < TM4; i++) av[i] = As[k][ty * TM4 + i];
            for (uint j = 0u; j < TN4; j++) bv[j] = Bs[k][tx * TN4 + j];
            for (uint i = 0u; i < TM4; i++)
                for (uint r = 0u; r < 4u; r++)
                    for (uint j = 0u; j < TN4; j++) acc[4u * i + r][j] += av[i][r] * bv[j];
        }
        barrier();
    }
    for (uint r = 0u; r < TM; r++)
        for (uint j = 0u; j < TN4; j++)
            store_c4(m0 + ty * TM + r, n0 + tx * TN + 4u * j, M, N, ldc, acc[r][j], alpha, beta);
}
