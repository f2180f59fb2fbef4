#version 450
// GEMM, the "basic" variant: C (M, N) = alpha * op(A) · op(B) + beta * C, op(A): (M, K),
// op(B): (K, N); row strides lda, ldb, ldc in elements. A workgroup of 16 x 16 invocations owns a
// BM x BN = 16 TM x 16 TN tile of C; each invocation accumulates TM x TN outputs spaced 16 apart
// (neighbouring invocations touch neighbouring addresses: coalesced scalar stores, conflict-free
// shared reads), stepping K by BK through panels of A and B staged in shared memory with scalar
// loads that follow each transpose case's layout. Any alignment, any stride. Edges are
// bounds-checked (zeros padded in); beta == 0 never reads C.
// Spec constants: 0 = transA, 1 = transB, 2 = TM, 3 = TN, 4 = BK (the tiling: gemm.c
// builds 4 x 4 x 16 and 8 x 8 x 8; (16 TM) BK and (16 TN) BK must be multiples of 256).
// u0..u5 = M, N, K, lda, ldb, ldc; f0 = alpha, f1 = beta.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
layout(local_size_x = 16, local_size_y = 16) in;
layout(constant_id = 0) const uint TRANS_A = 0u;
layout(constant_id = 1) const uint TRANS_B = 0u;
layout(constant_id = 2) const uint TM = 4u;
layout(constant_id = 3) const uint TN = 4u;
layout(constant_id = 4) const uint BK = 16u;
const uint BM = 16u * TM, BN = 16u * TN;
layout(std430, binding = 0) buffer Cb { float c[]; };
layout(std430, binding = 1) readonly buffer Ab { float a[]; };
layout(std430, binding = 2) readonly buffer Bb { float b[]; };

shared float As[BK][BM + 1u];
shared float Bs[BK][BN + 1u];

void main() {
    uint M = pc.u[0], N = pc.u[1], K = pc.u[2], lda = pc.u[3], ldb = pc.u[4], ldc = pc.u[5];
    float alpha = pc.f[0], beta = pc.f[1];
    uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y, tid = ty * 16u + tx;
    uint m0 = gl_WorkGroupID.y * BM, n0 = gl_WorkGroupID.x * BN;
    float acc[TM][TN];
    for (uint r = 0u; r < TM; r++)
        for (uint q = 0u; q < TN; q++) acc[r][q] = 0.0;
    for (uint k0 = 0u; k0 < K; k0 += BK) {
        // BM * BK (and BK * BN) elements per panel, (BM * BK) / 256 per invocation; the index
        // that varies fastest follows the panel's layout in memory, so loads coalesce
        for (uint l = 0u; l < (BM * BK) / 256u; l++) {
            uint e = tid + l * 256u, mi, ki;
            if (TRANS_A == 0u) { ki = e % BK; mi = e / BK; } else { mi = e % BM; ki = e / BM; }
            uint gm = m0 + mi, gk = k0 + ki;
            As[ki][mi] = (gm < M && gk < K) ? a[OFF(1) + (TRANS_A == 0u ? gm * lda + gk : gk * lda + gm)] : 0.0;
        }
        for (uint l = 0u; l < (BN * BK) / 256u; l++) {
            uint e = tid + l * 256u, nj, kj;
            if (TRANS_B == 0u) { nj = e % BN; kj = e / BN; } else { kj = e % BK; nj = e / BK; }
            uint gn = n0 + nj, gk = k0 + kj;
            Bs[kj][nj] = (gn < N && gk < K) ? b[OFF(2) + (TRANS_B == 0u ? gk * ldb + gn : gn * ldb + gk)] : 0.0;
        }
        barrier();
        for (uint k = 0u; k < BK; k++) {
            float av[TM], bv[TN];
            for (uint r = 0u; r < TM; r++) av[r] = As[k][ty + 16u * r];
            for (uint q = 0u; q < TN; q++) bv[q] = Bs[k][tx + 16u * q];
            for (uint r = 0u; r < TM; r++)
                for (uint q = 0u; q < TN; q++) acc[r][q] += av[r] * bv[q];
        }
        barrier();
    }
    for (uint r = 0u; r < TM; r++) {
        uint gm = m0 + ty + 16u * r;
        if (gm >= M) continue;
        for (uint q = 0u; q < TN; q++) {
            uint gn = n0 + tx + 16u * q;
            if (gn >= N) continue;
            uint ci = OFF(0) + gm * ldc + gn;
            c[ci] = beta == 0.0 ? alpha * acc[r][q] : alpha * acc[r][q] + beta * c[ci];
        }
    }
}
