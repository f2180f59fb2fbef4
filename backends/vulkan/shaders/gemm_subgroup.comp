#version 450
// GEMM, the "subgroup" variant: C (M, N) = alpha * op(A) · op(B) + beta * C, as gemm.comp, with
// op(A)'s values passed between invocations by subgroupShuffle instead of through shared memory.
// A workgroup of 256 invocations is NSG = 256 / SG subgroups of SG lanes (SG: the device's
// subgroup size, a spec constant). Subgroup s owns TM rows of the workgroup's BM x BN =
// (NSG TM) x (SG TN) tile of C, and lane l the TN consecutive columns l TN .. l TN + TN - 1. K advances in
// chunks of SG: lane l loads op(A)[row][k0 + l] for its subgroup's TM rows into registers (one
// coalesced load per row), the workgroup stages op(B)'s SG x BN panel in shared memory, and at
// step kk every lane takes row r's value from lane kk (subgroupShuffle) and multiplies it by its
// own TN values of B's row kk: per k, TN shared reads and TM shuffles feed TM TN multiply-adds,
// and A's panel never touches shared memory.
// The lane layout is checked, not assumed: where a subgroup is not SG consecutive invocations of
// the workgroup (another size, or another order), its lanes read op(A) from memory instead of
// shuffling (the same results, slower). Spec constants: 0 = transA, 1 = transB, 2 = TM, 3 = TN,
// 5 = VEC (gemm_io.glsl), 6 = SG (4 .. 64, a power of two, SG SG TN floats of shared memory).
// u0..u5 = M, N, K, lda, ldb, ldc; f0 = alpha, f1 = beta.
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_vote : require
#extension GL_KHR_shader_subgroup_shuffle : require
#include "common.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint TRANS_A = 0u;
layout(constant_id = 1) const uint TRANS_B = 0u;
layout(constant_id = 2) const uint TM = 8u;
layout(constant_id = 3) const uint TN = 4u;
layout(constant_id = 6) const uint SG = 32u;
#include "gemm_io.glsl"
const uint NSG = 256u / SG, BM = NSG * TM, BN = SG * TN;

// Bs[kk][q SG + l] = op(B)[k0 + kk][n0 + l TN + q]: lane l's q-th column, so the lanes of a
// subgroup read consecutive words (no bank conflicts)
shared float Bs[SG][BN];

float a_at(uint row, uint k, uint M, uint K, uint lda) {
    if (row >= M || k >= K) return 0.0;
    return a[OFF(1) + (TRANS_A == 0u ? row * lda + k : k * lda + row)];
}

void main() {
    uint M = pc.u[0], N = pc.u[1], K = pc.u[2], lda = pc.u[3], ldb = pc.u[4], ldc = pc.u[5];
    float alpha = pc.f[0], beta = pc.f[1];
    uint tid = gl_LocalInvocationIndex, lane = tid % SG, sub = tid / SG;
    uint m0 = gl_WorkGroupID.y * BM + sub * TM, n0 = gl_WorkGroupID.x * BN;
    // uniform in each real subgroup: every lane of it is where the tiling put it
    bool shuffle = subgroupAll(gl_SubgroupSize == SG && gl_SubgroupInvocationID == lane);
    float acc[TM][TN];
    for (uint r = 0u; r < TM; r++)
        for (uint q = 0u; q < TN; q++) acc[r][q] = 0.0;
    const uint NB = SG * BN / 4u; // vec4s of B per chunk
    for (uint k0 = 0u; k0 < K; k0 += SG) {
        float ar[TM];
        for (uint r = 0u; r < TM; r++) ar[r] = a_at(m0 + r, k0 + lane, M, K, lda);
        for (uint e = tid; e < NB; e += 256u) {
            if (TRANS_B == 0u) { // B (K, N): 4 consecutive n of row k
                uint kk = e / (BN / 4u), nq = e % (BN / 4u);
                vec4 v = load_b4(k0 + kk, n0 + 4u * nq, K, N, ldb);
                for (uint j = 0u; j < 4u; j++) {
                    uint ni = 4u * nq + j;
                    Bs[kk][(ni % TN) * SG + ni / TN] = v[j];
                }
            } else { // B (N, K): 4 consecutive k of row n
                uint ni = e / (SG / 4u), kq = e % (SG / 4u);
                vec4 v = load_b4(n0 + ni, k0 + 4u * kq, N, K, ldb);
                for (uint j = 0u; j < 4u; j++) Bs[4u * kq + j][(ni % TN) * SG + ni / TN] = v[j];
            }
        }
        barrier();
        for (uint kk = 0u; kk < SG; kk++) {
            float bv[TN];
            for (uint q = 0u; q < TN; q++) bv[q] = Bs[kk][q * SG + lane];
            for (uint r = 0u; r < TM; r++) {
                float av = shuffle ? subgroupShuffle(ar[r], kk) : a_at(m0 + r, k0 + kk, M, K, lda);
                for (uint q = 0u; q < TN; q++) acc[r][q] += av * bv[q];
            }
        }
        barrier();
    }
    for (uint r = 0u; r < TM; r++) {
        uint gm = m0 + r;
        if (gm >= M) continue;
        for (uint q = 0u; q < TN; q++) {
            uint gn = n0 + lane * TN + q;
            if (gn >= N) continue;
            uint ci = OFF(0) + gm * ldc + gn;
            c[ci] = beta == 0.0 ? alpha * acc[r][q] : alpha * acc[r][q] + beta * c[ci];
        }
    }
}
