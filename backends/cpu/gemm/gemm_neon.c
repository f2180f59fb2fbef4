/* NEON SGEMM microkernel for aarch64 (every aarch64 CPU has NEON with FMA, so it is chosen
 * whenever the build targets aarch64; the aarch64 preset tests it under qemu-aarch64).
 *
 * 8 x 12: 24 accumulators (8 rows x 3 q registers of 4 columns), 3 B registers and 2 A
 * registers holding the step's 8 A values = 29 of the 32 v registers. Each step is 24
 * vfmaq_laneq_f32: acc[i][j] = fma(a[i], b[j], acc[i][j]), k in order, as gemm.h asks. The
 * write rule fuses beta: t = alpha * acc; t = fma(beta, c, t); t += bias.
 *
 * Blocking for a typical Arm core (Cortex-A7x / Neoverse: 64 KiB L1D, >= 512 KiB L2): a B sliver
 * of kc x 12 floats is 12 KiB (L1), an A block of mc x kc is 120 KiB (L2). Packing is the
 * driver's portable loops; M = 1 runs NEON GEMVs on W where it lies, with the same bits. */
#include "gemm.h"

#if defined(__aarch64__) && defined(__ARM_NEON)
#include <arm_neon.h>
#include <math.h>

#define MR 8
#define NR 12

/* One row of the tile, the write rule of gemm.h; a partial row (n < NR) runs the same
 * operations on copies, so its elements have the bits a full row gives them. */
static inline __attribute__((always_inline)) void store_row(float32x4_t a0, float32x4_t a1, float32x4_t a2,
                                                            float *c, const float *bias, float alpha, float beta,
                                                            size_t n) {
    float32x4_t t0 = vmulq_n_f32(a0, alpha), t1 = vmulq_n_f32(a1, alpha), t2 = vmulq_n_f32(a2, alpha);
    if (n == NR) {
        if (beta != 0.0f) {
            t0 = vfmaq_n_f32(t0, vld1q_f32(c), beta);
            t1 = vfmaq_n_f32(t1, vld1q_f32(c + 4), beta);
            t2 = vfmaq_n_f32(t2, vld1q_f32(c + 8), beta);
        }
        if (bias) {
            t0 = vaddq_f32(t0, vld1q_f32(bias));
            t1 = vaddq_f32(t1, vld1q_f32(bias + 4));
            t2 = vaddq_f32(t2, vld1q_f32(bias + 8));
        }
        vst1q_f32(c, t0);
        vst1q_f32(c + 4, t1);
        vst1q_f32(c + 8, t2);
        return;
    }
    float cb[NR] = {0}, bb[NR] = {0}, out[NR];
    if (beta != 0.0f)
        for (size_t j = 0; j < n; j++) cb[j] = c[j];
    if (bias)
        for (size_t j = 0; j < n; j++) bb[j] = bias[j];
    if (beta != 0.0f) {
        t0 = vfmaq_n_f32(t0, vld1q_f32(cb), beta);
        t1 = vfmaq_n_f32(t1, vld1q_f32(cb + 4), beta);
        t2 = vfmaq_n_f32(t2, vld1q_f32(cb + 8), beta);
    }
    if (bias) {
        t0 = vaddq_f32(t0, vld1q_f32(bb));
        t1 = vaddq_f32(t1, vld1q_f32(bb + 4));
        t2 = vaddq_f32(t2, vld1q_f32(bb + 8));
    }
    vst1q_f32(out, t0);
    vst1q_f32(out + 4, t1);
    vst1q_f32(out + 8, t2);
    for (size_t j = 0; j < n; j++) c[j] = out[j];
}

/* acc += b * a[lane] for one row i of the tile: 3 FMAs. */
#define ROW(i, av, lane)                                   \
    c##i##0 = vfmaq_laneq_f32(c##i##0, b0, av, lane);      \
    c##i##1 = vfmaq_laneq_f32(c##i##1, b1, av, lane);      \
    c##i##2 = vfmaq_laneq_f32(c##i##2, b2, av, lane);

/* a: kc x 8 packed A, b: kc x 12 packed B (gemm.h's layouts); c: the tile, row stride ldc. */
static void lithe_f32_gemm_ukernel_8x12__neon(size_t mr, size_t nr, size_t kc, const float *a, const float *b,
                                              float *c, size_t ldc, const lithe__sgemm_ukparams *p) {
    float32x4_t z = vdupq_n_f32(0.0f);
    float32x4_t c00 = z, c01 = z, c02 = z, c10 = z, c11 = z, c12 = z, c20 = z, c21 = z, c22 = z, c30 = z, c31 = z,
                c32 = z, c40 = z, c41 = z, c42 = z, c50 = z, c51 = z, c52 = z, c60 = z, c61 = z, c62 = z, c70 = z,
                c71 = z, c72 = z;
    for (size_t k = 0; k < kc; k++) {
        float32x4_t a0 = vld1q_f32(a), a1 = vld1q_f32(a + 4);
        float32x4_t b0 = vld1q_f32(b), b1 = vld1q_f32(b + 4), b2 = vld1q_f32(b + 8);
        ROW(0, a0, 0)
        ROW(1, a0, 1)
        ROW(2, a0, 2)
        ROW(3, a0, 3)
        ROW(4, a1, 0)
        ROW(5, a1, 1)
        ROW(6, a1, 2)
        ROW(7, a1, 3)
        a += MR;
        b += NR;
    }
    float alpha = p->alpha, beta = p->beta;
    const float *bias = p->bias;
    /* rows past mr are computed (the full tile) but not stored */
    store_row(c00, c01, c02, c, bias, alpha, beta, nr);
    if (mr > 1) store_row(c10, c11, c12, c + 1 * ldc, bias, alpha, beta, nr);
    if (mr > 2) store_row(c20, c21, c22, c + 2 * ldc, bias, alpha, beta, nr);
    if (mr > 3) store_row(c30, c31, c32, c + 3 * ldc, bias, alpha, beta, nr);
    if (mr > 4) store_row(c40, c41, c42, c + 4 * ldc, bias, alpha, beta, nr);
    if (mr > 5) store_row(c50, c51, c52, c + 5 * ldc, bias, alpha, beta, nr);
    if (mr > 6) store_row(c60, c61, c62, c + 6 * ldc, bias, alpha, beta, nr);
    if (mr > 7) store_row(c70, c71, c72, c + 7 * ldc, bias, alpha, beta, nr);
}

/* ---- M = 1 (batch-1 inference and its backward): GEMV reading W where it lies ----
 * gemm.h: each y[j] gets the microkernel's bits for a one-row A: per kc block, acc = 0 then
 * acc = fma(x[k], w, acc) in k order; per block t = alpha * acc, t = fma(beta', c, t) (beta' =
 * beta for the first block, 1 after); bias after the last. Lanes hold different j; tails run
 * the same sequence in scalar (fmaf is one fmadd on aarch64). */
static float gemv_one(size_t K, size_t kc, float alpha, const float *x, const float *w, size_t step, float beta,
                      float c) {
    for (size_t p = 0; p < K; p += kc) {
        size_t e = K - p < kc ? K : p + kc;
        float acc = 0.0f;
        for (size_t k = p; k < e; k++) acc = fmaf(x[k], w[k * step], acc);
        float t = alpha * acc, b = p == 0 ? beta : 1.0f;
        if (b != 0.0f) t = fmaf(b, c, t);
        c = t;
    }
    return c;
}

static inline __attribute__((always_inline)) float32x4_t block_write(float32x4_t acc, float32x4_t c, float alpha,
                                                                     float b) {
    float32x4_t t = vmulq_n_f32(acc, alpha);
    if (b != 0.0f) t = vfmaq_n_f32(t, c, b);
    return t;
}

/* y[j] = x · W[:, j], w[k * ldw + j]: 16 columns per pass (4 independent accumulators). */
static void gemv_n__neon(size_t n, size_t K, size_t kc, float alpha, const float *x, const float *w, size_t ldw,
                         float beta, float *y, const float *bias) {
    size_t j = 0;
    for (; j + 16 <= n; j += 16) {
        float32x4_t c[4], a[4];
        for (int g = 0; g < 4; g++) c[g] = beta != 0.0f ? vld1q_f32(y + j + 4 * g) : vdupq_n_f32(0.0f);
        for (size_t p = 0; p < K; p += kc) {
            size_t e = K - p < kc ? K : p + kc;
            for (int g = 0; g < 4; g++) a[g] = vdupq_n_f32(0.0f);
            for (size_t k = p; k < e; k++) {
                const float *wk = w + k * ldw + j;
                for (int g = 0; g < 4; g++) a[g] = vfmaq_n_f32(a[g], vld1q_f32(wk + 4 * g), x[k]);
            }
            for (int g = 0; g < 4; g++) c[g] = block_write(a[g], c[g], alpha, p == 0 ? beta : 1.0f);
        }
        for (int g = 0; g < 4; g++) {
            if (bias) c[g] = vaddq_f32(c[g], vld1q_f32(bias + j + 4 * g));
            vst1q_f32(y + j + 4 * g, c[g]);
        }
    }
    for (; j < n; j++) {
        float c = gemv_one(K, kc, alpha, x, w + j, ldw, beta, beta != 0.0f ? y[j] : 0.0f);
        y[j] = bias ? c + bias[j] : c;
    }
}

/* y[j] = x · W[j, :], w[j * ldw + k] (the dense layers' forward at batch 1): 16 rows per pass,
 * 4 x 4 blocks of W transposed in registers so each lane follows one row in k order; four
 * groups of four rows are independent FMA chains. */
static void gemv_t__neon(size_t n, size_t K, size_t kc, float alpha, const float *x, const float *w, size_t ldw,
                         float beta, float *y, const float *bias) {
    size_t j = 0;
    for (; j + 16 <= n; j += 16) {
        float32x4_t c[4], acc[4];
        for (int g = 0; g < 4; g++) c[g] = beta != 0.0f ? vld1q_f32(y + j + 4 * g) : vdupq_n_f32(0.0f);
        const float *wj = w + j * ldw;
        for (size_t p = 0; p < K; p += kc) {
            size_t e = K - p < kc ? K : p + kc;
            for (int g = 0; g < 4; g++) acc[g] = vdupq_n_f32(0.0f);
            size_t k = p;
            for (; k + 4 <= e; k += 4) {
                float32x4_t xv = vld1q_f32(x + k);
                for (int g = 0; g < 4; g++) {
                    const float *r = wj + (size_t)(4 * g) * ldw + k;
                    float32x4x2_t t01 = vtrnq_f32(vld1q_f32(r), vld1q_f32(r + ldw));
                    float32x4x2_t t23 = vtrnq_f32(vld1q_f32(r + 2 * ldw), vld1q_f32(r + 3 * ldw));
                    float32x4_t k0 = vcombine_f32(vget_low_f32(t01.val[0]), vget_low_f32(t23.val[0]));
                    float32x4_t k1 = vcombine_f32(vget_low_f32(t01.val[1]), vget_low_f32(t23.val[1]));
                    float32x4_t k2 = vcombine_f32(vget_high_f32(t01.val[0]), vget_high_f32(t23.val[0]));
                    float32x4_t k3 = vcombine_f32(vget_high_f32(t01.val[1]), vget_high_f32(t23.val[1]));
                    acc[g] = vfmaq_laneq_f32(acc[g], k0, xv, 0);
                    acc[g] = vfmaq_laneq_f32(acc[g], k1, xv, 1);
                    acc[g] = vfmaq_laneq_f32(acc[g], k2, xv, 2);
                    acc[g] = vfmaq_laneq_f32(acc[g], k3, xv, 3);
                }
            }
            for (; k < e; k++)
                for (int g = 0; g < 4; g++) {
                    const float *r = wj + (size_t)(4 * g) * ldw + k;
                    float col[4] = {r[0], r[ldw], r[2 * ldw], r[3 * ldw]};
                    acc[g] = vfmaq_n_f32(acc[g], vld1q_f32(col), x[k]);
                }
            for (int g = 0; g < 4; g++) c[g] = block_write(acc[g], c[g], alpha, p == 0 ? beta : 1.0f);
        }
        for (int g = 0; g < 4; g++) {
            if (bias) c[g] = vaddq_f32(c[g], vld1q_f32(bias + j + 4 * g));
            vst1q_f32(y + j + 4 * g, c[g]);
        }
    }
    for (; j < n; j++) {
        float c = gemv_one(K, kc, alpha, x, w + j * ldw, 1, beta, beta != 0.0f ? y[j] : 0.0f);
        y[j] = bias ? c + bias[j] : c;
    }
}

static const lithe__sgemm_kernel kernel = {
    .isa = "neon", .mr = MR, .nr = NR, .mc = 120, .kc = 256, .nc = 3072, .ukernel = lithe_f32_gemm_ukernel_8x12__neon,
    .gemv_t = gemv_t__neon, .gemv_n = gemv_n__neon,
};

const lithe__sgemm_kernel *lithe__sgemm_kernel_neon(void) { return &kernel; }

#else
const lithe__sgemm_kernel *lithe__sgemm_kernel_neon(void) { return NULL; }
#endif
