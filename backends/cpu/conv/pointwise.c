/* pointwise.h's scalar twin (the tests' oracle) and the run-time choice of kernel. */
#include "pointwise.h"
#include "../gemm/gemm.h"

#include <math.h>

/* the SIMD kernels' max / min: the second operand where either is NaN or both are zeros */
static float mx(float a, float b) { return a > b ? a : b; }
static float mn(float a, float b) { return a < b ? a : b; }

static float clamp1(const lithe__conv_pw *c, float t) {
    switch (c->clamp) {
    case LITHE__SGEMM_CLAMP_RELU: return mx(0.0f, t) + 0.0f;
    case LITHE__SGEMM_CLAMP_HSWISH: return t * (mx(0.0f, mn(6.0f, t + 3.0f)) / 6.0f);
    case LITHE__SGEMM_CLAMP_CLIP: return mx(c->lo, mn(c->hi, t + 0.0f));
    default: return t;
    }
}

void lithe__conv_pw_ref(const lithe__conv_pw *c, int64_t p0, int64_t p1) {
    for (int64_t m = 0; m < c->M; m++)
        for (int64_t p = p0; p < p1; p++) {
            float acc = 0.0f;
            for (int64_t k = 0; k < c->K; k++) acc = fmaf(c->W[m * c->K + k], c->X[k * c->P + p], acc);
            float t = c->b ? acc + c->b[m] : acc;
            t = clamp1(c, t);
            if (c->R) {
                float r = c->R[m * c->P + p];
                t = c->res_first ? r + t : t + r;
            }
            c->Y[m * c->P + p] = t;
        }
}

/* Where the SGEMM runs AVX2's kernel (the CPU has AVX2 + FMA, no AVX-512, and LITHE_CPU_ISA picks no
 * other): AVX-512's 14 x 32 GEMM is not measured against it. */
lithe__conv_pw_fn lithe__conv_pw_best(void) {
#if defined(__x86_64__) || defined(_M_X64)
    const char *isa = lithe__sgemm_kernel_best()->isa;
    return isa[0] == 'a' && isa[1] == 'v' && isa[2] == 'x' && isa[3] == '2' && !isa[4] ? lithe__conv_pw_avx2 : NULL;
#else
    return NULL;
#endif
}

/* Whether the SGEMM runs an AVX2 or AVX-512 kernel (so the CPU has AVX2, and LITHE_CPU_ISA picks no
 * less): the pooling kernels below (pool_avx2.c) are taken then. */
#if defined(__x86_64__) || defined(_M_X64)
static bool sgemm_runs_avx(void) {
    const char *isa = lithe__sgemm_kernel_best()->isa;
    return isa[0] == 'a' && isa[1] == 'v' && isa[2] == 'x';
}
#endif

lithe__pool_gap8_fn lithe__pool_gap8_best(void) {
#if defined(__x86_64__) || defined(_M_X64)
    if (sgemm_runs_avx()) return lithe__pool_gap8_avx2;
#endif
    return NULL;
}

lithe__pool_max2x2_back_fn lithe__pool_max2x2_back_best(void) {
#if defined(__x86_64__) || defined(_M_X64)
    if (sgemm_runs_avx()) return lithe__pool_max2x2_back_avx2;
#endif
    return NULL;
}
