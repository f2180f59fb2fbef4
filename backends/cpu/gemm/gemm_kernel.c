/* SGEMM's scalar microkernel (the oracle and the fall-back), the epilogue's clamp and the run-time
 * choice of kernel. */
#include "gemm_internal.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* ---- M = 1 with the scalar kernel: its arithmetic, one element at a time ---- */

static void gemv_t__scalar(size_t n, size_t K, size_t kc, float alpha, const float *x, const float *w, size_t ldw,
                           float beta, float *y, const float *bias) {
    for (size_t j = 0; j < n; j++) {
        const float *wj = w + j * ldw;
        float c = y[j];
        for (size_t p = 0; p < K; p += kc) {
            size_t e = K - p < kc ? K : p + kc;
            float acc = 0.0f;
            for (size_t k = p; k < e; k++) acc += x[k] * wj[k];
            float t = alpha * acc, b = p == 0 ? beta : 1.0f;
            if (b != 0.0f) t += b * c;
            c = t;
        }
        y[j] = bias ? c + bias[j] : c;
    }
}

static void gemv_n__scalar(size_t n, size_t K, size_t kc, float alpha, const float *x, const float *w, size_t ldw,
                           float beta, float *y, const float *bias) {
    enum { W = 64 };
    for (size_t j0 = 0; j0 < n; j0 += W) {
        size_t nb = n - j0 < W ? n - j0 : W;
        float c[W];
        for (size_t j = 0; j < nb; j++) c[j] = y[j0 + j];
        for (size_t p = 0; p < K; p += kc) {
            size_t e = K - p < kc ? K : p + kc;
            float acc[W] = {0};
            for (size_t k = p; k < e; k++) {
                const float *wk = w + k * ldw + j0;
                float xk = x[k];
                for (size_t j = 0; j < nb; j++) acc[j] += xk * wk[j];
            }
            float b = p == 0 ? beta : 1.0f;
            for (size_t j = 0; j < nb; j++) {
                float t = alpha * acc[j];
                if (b != 0.0f) t += b * c[j];
                c[j] = t;
            }
        }
        for (size_t j = 0; j < nb; j++) y[j0 + j] = bias ? c[j] + bias[j0 + j] : c[j];
    }
}

/* ---- the scalar microkernel: 4 x 8, plain C that compilers keep in registers ----
 * (4 x 16 spills SSE2's 16 registers: 6 against 30 GFLOP/s at (64, 512, 784) on x86-64) */

#define S_MR 4
#define S_NR 8

/* gemm.h's clamp (lithe__sgemm_clamp1) */
static inline float clamp1(const lithe__sgemm_ukparams *p, float t) { return lithe__sgemm_clamp1(p->clamp, p->lo, p->hi, t); }

static void lithe_f32_gemm_ukernel_4x8__scalar(size_t mr, size_t nr, size_t kc, const float *a, const float *b, float *c,
                                 size_t ldc, const lithe__sgemm_ukparams *p) {
    float acc[S_MR][S_NR];
    for (int i = 0; i < S_MR; i++)
        for (int j = 0; j < S_NR; j++) acc[i][j] = 0.0f;
    for (size_t k = 0; k < kc; k++) {
        const float *bk = b + k * S_NR, *ak = a + k * S_MR;
        for (int i = 0; i < S_MR; i++) {
            float x = ak[i];
            for (int j = 0; j < S_NR; j++) acc[i][j] += x * bk[j];
        }
    }
    for (size_t i = 0; i < mr; i++) {
        float *ci = c + i * ldc;
        for (size_t j = 0; j < nr; j++) {
            float t = p->alpha * acc[i][j];
            if (p->beta != 0.0f) t += p->beta * ci[j];
            if (p->bias) t += p->bias[j];
            ci[j] = p->clamp ? clamp1(p, t) : t;
        }
    }
}

/* One row against ns packed slivers (gemm.h's urow), with the 4 x 8 kernel's arithmetic. */
static void lithe_f32_gemm_urow_1x8__scalar(size_t ns, size_t nr_last, size_t kc, const float *x, const float *b,
                                            float *c, const lithe__sgemm_ukparams *p) {
    for (size_t s = 0; s < ns; s++, b += kc * S_NR, c += S_NR) {
        float acc[S_NR] = {0};
        for (size_t k = 0; k < kc; k++) {
            const float *bk = b + k * S_NR;
            float xk = x[k];
            for (int j = 0; j < S_NR; j++) acc[j] += xk * bk[j];
        }
        size_t nr = s + 1 == ns ? nr_last : S_NR;
        const float *bias = p->bias ? p->bias + s * S_NR : NULL;
        for (size_t j = 0; j < nr; j++) {
            float t = p->alpha * acc[j];
            if (p->beta != 0.0f) t += p->beta * c[j];
            if (bias) t += bias[j];
            c[j] = p->clamp ? clamp1(p, t) : t;
        }
    }
}

static const lithe__sgemm_kernel kernel_scalar = {
    .isa = "scalar", .mr = S_MR, .nr = S_NR, .mc = 128, .kc = 256, .nc = 2048, .ukernel = lithe_f32_gemm_ukernel_4x8__scalar,
    .gemv_t = gemv_t__scalar, .gemv_n = gemv_n__scalar, .urow = lithe_f32_gemm_urow_1x8__scalar, .clamp_ok = true,
};

bool lithe__sgemm_act_clamp(const lithe__act *a, int *clamp, float *lo, float *hi) {
    int c = LITHE__SGEMM_CLAMP_NONE;
    float l = 0.0f, h = 0.0f;
    if (!a) return false;
    if (a->kind == LITHE__ACT_RELU) c = LITHE__SGEMM_CLAMP_RELU;
    /* crossed or NaN bounds, and -0 ones (kept out of the store's clamp; test_gemm_ukernels checks
     * that they are refused): the act kernel after the store */
    else if (a->kind == LITHE__ACT_CLIPPED_LINEAR && a->slope == 1.0f && a->offset == 0.0f &&
             a->min_val <= a->max_val && !(a->min_val == 0.0f && signbit(a->min_val)) &&
             !(a->max_val == 0.0f && signbit(a->max_val)))
        c = LITHE__SGEMM_CLAMP_CLIP, l = a->min_val, h = a->max_val;
    /* HardSwish (mobilenet_v3's): its pass over C was 2-3 % of mobilenet_v3_small, the stem's the
     * biggest (16 x 112 x 112) */
    else if (a->kind == LITHE__ACT_HARD_SWISH_MOBILENET) c = LITHE__SGEMM_CLAMP_HSWISH;
    else return false;
    if (clamp) *clamp = c;
    if (lo) *lo = l;
    if (hi) *hi = h;
    return true;
}

/* The clamp for an epilogue's act when kernel k applies it in its store: an act there, no Z (which
 * keeps the pre-activation) and no row bias added after the store (M = 1, K = 0). */
bool lithe__sgemm_epi_clamp(const lithe__sgemm_kernel *k, const lithe__sgemm_epilogue *e, bool bias_row_after,
                            lithe__sgemm_ukparams *p) {
    if (!k->clamp_ok || !e || !e->act || e->Z || (bias_row_after && e->bias_row)) return false;
    return lithe__sgemm_act_clamp(e->act, &p->clamp, &p->lo, &p->hi);
}

const lithe__sgemm_kernel *lithe__sgemm_kernel_scalar(void) { return &kernel_scalar; }

#if !(defined(__x86_64__) || defined(_M_X64))
const lithe__sgemm_kernel *lithe__sgemm_kernel_avx2(void) { return NULL; }
const lithe__sgemm_kernel *lithe__sgemm_kernel_avx512(void) { return NULL; }
#endif

/* ---- choice of kernel ---- */

#if defined(LITHE_SIMD_ONLY) && defined(__wasm_simd128__)
/* The npm package's SIMD128 module (LITHE_SIMD_ONLY, bindings/js): no environment to name another
 * kernel in, and the SIMD128 kernel takes every shape, so the scalar one is left out of it. */
const lithe__sgemm_kernel *lithe__sgemm_kernel_named(const char *isa) {
    return isa && strcmp(isa, "wasmsimd") == 0 ? lithe__sgemm_kernel_wasmsimd() : NULL;
}
static const lithe__sgemm_kernel *pick_kernel(void) { return lithe__sgemm_kernel_wasmsimd(); }
#else
const lithe__sgemm_kernel *lithe__sgemm_kernel_named(const char *isa) {
    if (!isa) return NULL;
    if (strcmp(isa, "scalar") == 0) return lithe__sgemm_kernel_scalar();
    if (strcmp(isa, "avx2") == 0) return lithe__sgemm_kernel_avx2();
    if (strcmp(isa, "avx512") == 0) return lithe__sgemm_kernel_avx512();
    if (strcmp(isa, "neon") == 0) return lithe__sgemm_kernel_neon();
    if (strcmp(isa, "wasmsimd") == 0) return lithe__sgemm_kernel_wasmsimd();
    return NULL;
}

/* Best first; an ISA port adds its kernel here. */
static const lithe__sgemm_kernel *(*const by_preference[])(void) = {
    lithe__sgemm_kernel_avx512,
    lithe__sgemm_kernel_avx2,
    lithe__sgemm_kernel_neon,
    lithe__sgemm_kernel_wasmsimd,
    lithe__sgemm_kernel_scalar,
};
#define N_PREF (sizeof by_preference / sizeof by_preference[0])

static const lithe__sgemm_kernel *pick_kernel(void) {
    const char *want = lithe__knob(LITHE__KNOB_cpu_isa);
    size_t start = 0;
    if (want && *want) /* the named ISA, or the best one below it on this CPU */
        for (size_t i = 0; i < N_PREF; i++) {
            const lithe__sgemm_kernel *k = by_preference[i]();
            if (lithe__sgemm_kernel_named(want) == k || (k && strcmp(k->isa, want) == 0)) {
                start = i;
                break;
            }
        }
    for (size_t i = start; i < N_PREF; i++) {
        const lithe__sgemm_kernel *k = by_preference[i]();
        if (k) return k;
    }
    return &kernel_scalar;
}
#endif

const lithe__sgemm_kernel *lithe__sgemm_kernel_best(void) {
    static _Atomic(const lithe__sgemm_kernel *) best;
    const lithe__sgemm_kernel *k = atomic_load_explicit(&best, memory_order_acquire);
    if (!k) { /* racing first calls compute the same answer */
        k = pick_kernel();
        atomic_store_explicit(&best, k, memory_order_release);
    }
    return k;
}
