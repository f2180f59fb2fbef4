/* Scalar SGEMM: B is packed into K x 16 column panels (which also absorbs transB), and a 4 x 16
 * register tile of C is accumulated over all of K. Plain C that compilers vectorise at -O2/-O3;
 * the SIMD microkernels of the CPU-speed work replace the tile loop, not this structure. */
#include "../kernels.h"

#define MR 4
#define NR 16

static inline float a_at(bool tA, const float *A, int64_t lda, int64_t i, int64_t k) {
    return tA ? A[k * lda + i] : A[i * lda + k];
}

/* Full MR x NR tile: constant bounds let the compiler keep acc in registers. */
static void tile_full(bool tA, int64_t K, const float *A, int64_t lda, int64_t i0, const float *Bp,
                      float alpha, float beta, float *C, int64_t ldc, int64_t j0) {
    float acc[MR][NR] = {{0}};
    for (int64_t k = 0; k < K; k++) {
        const float *b = Bp + k * NR;
        for (int r = 0; r < MR; r++) {
            float a = a_at(tA, A, lda, i0 + r, k);
            for (int j = 0; j < NR; j++) acc[r][j] += a * b[j];
        }
    }
    for (int r = 0; r < MR; r++) {
        float *c = C + (i0 + r) * ldc + j0;
        if (beta == 0.0f)
            for (int j = 0; j < NR; j++) c[j] = alpha * acc[r][j];
        else
            for (int j = 0; j < NR; j++) c[j] = alpha * acc[r][j] + beta * c[j];
    }
}

static void tile_edge(bool tA, int64_t K, const float *A, int64_t lda, int64_t i0, int64_t mr,
                      const float *Bp, int64_t nr, float alpha, float beta, float *C, int64_t ldc,
                      int64_t j0) {
    float acc[MR][NR] = {{0}};
    for (int64_t k = 0; k < K; k++) {
        const float *b = Bp + k * NR;
        for (int64_t r = 0; r < mr; r++) {
            float a = a_at(tA, A, lda, i0 + r, k);
            for (int j = 0; j < NR; j++) acc[r][j] += a * b[j];
        }
    }
    for (int64_t r = 0; r < mr; r++) {
        float *c = C + (i0 + r) * ldc + j0;
        for (int64_t j = 0; j < nr; j++) c[j] = beta == 0.0f ? alpha * acc[r][j] : alpha * acc[r][j] + beta * c[j];
    }
}

bool lithe_f32_gemm__scalar(bool tA, bool tB, int64_t M, int64_t N, int64_t K, float alpha,
                            const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                            float *C, int64_t ldc) {
    if (M == 0 || N == 0) return true;
    if (K == 0) {
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) C[i * ldc + j] = beta == 0.0f ? 0.0f : beta * C[i * ldc + j];
        return true;
    }
    float *Bp = lithe__aligned_alloc((size_t)K * NR * sizeof(float));
    if (!Bp) return false;
    for (int64_t j0 = 0; j0 < N; j0 += NR) {
        int64_t nr = N - j0 < NR ? N - j0 : NR;
        /* pack op(B)[:, j0:j0+nr] as K rows of NR floats, zero-padded */
        for (int64_t k = 0; k < K; k++) {
            float *dst = Bp + k * NR;
            for (int64_t j = 0; j < nr; j++) dst[j] = tB ? B[(j0 + j) * ldb + k] : B[k * ldb + j0 + j];
            for (int64_t j = nr; j < NR; j++) dst[j] = 0.0f;
        }
        int64_t i0 = 0;
        if (nr == NR)
            for (; i0 + MR <= M; i0 += MR) tile_full(tA, K, A, lda, i0, Bp, alpha, beta, C, ldc, j0);
        for (; i0 < M; i0 += MR) {
            int64_t mr = M - i0 < MR ? M - i0 : MR;
            tile_edge(tA, K, A, lda, i0, mr, Bp, nr, alpha, beta, C, ldc, j0);
        }
    }
    lithe__aligned_free(Bp);
    return true;
}
