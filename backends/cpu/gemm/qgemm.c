/* The int8 GEMM's driver, activation quantization, epilogue and scalar microkernel (qgemm.h). */
#include "qgemm.h"

#include "../../../core/internal.h"
#include "../threadpool.h"

#include <math.h>
#include <string.h>

/* Once per weight, or a kernel's last few elements: in WebAssembly, where the download is the budget
 * (the SIMD cores stay under 400,000 B), compiled for size like the core's non-kernel code. */
#if defined(__wasm__) && defined(__clang__)
#define LITHE__Q8_COLD __attribute__((minsize))
#else
#define LITHE__Q8_COLD
#endif

#if defined(__wasm__) && !defined(__wasm_simd128__)
/* WebAssembly without SIMD128 has no int8 kernel (lithe__q8_kernel_best is NULL there): the driver
 * stays out of that module; int8 weights take the float GEMM. */
const lithe__q8_kernel *lithe__q8_kernel_scalar(void) { return NULL; }
const lithe__q8_kernel *lithe__q8_kernel_best(void) { return NULL; }
bool lithe__q8_row_sums(int64_t N, int64_t K, const int8_t *W, int64_t ldw, int32_t *wsum) {
    (void)N, (void)K, (void)W, (void)ldw, (void)wsum;
    return false;
}
int lithe__q8_gemm(const lithe__q8_kernel *k, bool use_threads, int64_t M, int64_t N, int64_t K, const float *A,
                   int64_t lda, const int8_t *W, int64_t ldw, const int32_t *wsum, const int8_t *wp, const float *sw,
                   int64_t n_scales, const float *bias, const lithe__act *act, lithe__act_fn act_fn, float *Z, float *Y,
                   int64_t ldy) {
    (void)k, (void)use_threads, (void)M, (void)N, (void)K, (void)A, (void)lda, (void)W, (void)ldw, (void)wsum, (void)sw;
    (void)wp;
    (void)n_scales, (void)bias, (void)act, (void)act_fn, (void)Z, (void)Y, (void)ldy;
    return 1;
}
int lithe__q8_gemm_static(const lithe__q8_kernel *k, bool use_threads, int64_t M, int64_t N, int64_t K,
                          const uint8_t *A, bool a_signed, int64_t lda, float sa, int32_t za, const int8_t *W,
                          int64_t ldw, const int32_t *wsum, const int8_t *wp, int pairs_fit, const float *sw,
                          int64_t n_scales, const float *bias, const lithe__act *act, lithe__act_fn act_fn, float *Z,
                          float *Y, int64_t ldy) {
    (void)wp;
    (void)k, (void)use_threads, (void)M, (void)N, (void)K, (void)A, (void)a_signed, (void)lda, (void)sa, (void)za;
    (void)W, (void)ldw, (void)wsum, (void)pairs_fit, (void)sw, (void)n_scales, (void)bias, (void)act, (void)act_fn, (void)Z, (void)Y;
    (void)ldy;
    return 1;
}
int lithe__q8_gemm_static_f32(const lithe__q8_kernel *k, bool use_threads, int64_t M, int64_t N, int64_t K,
                              const float *A, int64_t lda, float sa, int32_t za, int32_t qmin, int32_t qmax,
                              bool a_signed, const int8_t *W, int64_t ldw, const int32_t *wsum, const int8_t *wp,
                              int pairs_fit, const float *sw, int64_t n_scales, const float *bias,
                              const lithe__act *act, lithe__act_fn act_fn, float *Z, float *Y, int64_t ldy) {
    (void)wp;
    (void)k, (void)use_threads, (void)M, (void)N, (void)K, (void)A, (void)lda, (void)sa, (void)za, (void)qmin;
    (void)qmax, (void)a_signed, (void)W, (void)ldw, (void)wsum, (void)pairs_fit, (void)sw, (void)n_scales, (void)bias;
    (void)act, (void)act_fn, (void)Z, (void)Y, (void)ldy;
    return 1;
}
#else
#if !defined(LITHE_SIMD_ONLY) /* the npm SIMD128 module: no LITHE_CPU_ISA to pick the scalar kernel by */
static void tile_scalar(size_t mr, size_t nr, size_t kw, const uint8_t *a, size_t lda, const int8_t *w, size_t ldw,
                        int32_t *acc) {
    for (size_t i = 0; i < mr; i++)
        for (size_t j = 0; j < nr; j++) {
            int32_t s = 0;
            for (size_t k = 0; k < kw; k++) s += (int32_t)a[i * lda + k] * (int32_t)w[j * ldw + k];
            acc[i * LITHE__Q8_NR + j] = s;
        }
}

static const lithe__q8_kernel scalar_kernel = {"scalar", tile_scalar, LITHE__Q8_A_U8, NULL, NULL LITHE__Q8_NO_PTILE};
const lithe__q8_kernel *lithe__q8_kernel_scalar(void) { return &scalar_kernel; }
#else
const lithe__q8_kernel *lithe__q8_kernel_scalar(void) { return NULL; }
#endif

const lithe__q8_kernel *lithe__q8_kernel_best(void) {
    const char *isa = lithe__sgemm_kernel_best()->isa; /* LITHE_CPU_ISA=scalar reaches here too */
    const lithe__q8_kernel *k = NULL;
    if (!strcmp(isa, "avx512")) k = lithe__q8_kernel_vnni();
    if (!k && (!strcmp(isa, "avx2") || !strcmp(isa, "avx512"))) k = lithe__q8_kernel_avx2();
    if (!k && !strcmp(isa, "neon")) k = lithe__q8_kernel_neondot();
    if (!k && !strcmp(isa, "neon")) k = lithe__q8_kernel_neon();
    if (!k && !strcmp(isa, "wasmsimd")) k = lithe__q8_kernel_wasmsimd();
    if (!k && !strcmp(isa, "scalar")) k = lithe__q8_kernel_scalar();
    return k;
}

typedef struct q8_job {
    const lithe__q8_kernel *k;
    int64_t M, N, K, Kp;
    const uint8_t *qa; /* M rows of Kp */
    const uint8_t *qa2; /* static codes on a u7 kernel: qa holds code >> 1, qa2 code & 1 (NULL otherwise) */
    const float *sa;
    const int32_t *za;
    const int8_t *W;
    int64_t ldw;
    const int32_t *wsum;
    const float *sw;
    int64_t n_scales;
    const float *bias;
    const lithe__act *act;
    lithe__act_fn act_fn;
    float *Z, *Y;
    int64_t ldy;
#if defined(LITHE__Q8_PACKED)
    const int8_t *wp; /* W packed (the kernel's ptile reads it), or NULL: the tiles read W (run_jobs) */
#define Q8_JOB_WP , NULL
#else /* (no packed kernel: the npm cores' job as it was) */
#define Q8_JOB_WP
#endif
} q8_job;

LITHE__Q8_COLD void lithe__q8_epilogue_ref(size_t n, const int32_t *acc, int32_t za, const int32_t *wsum, float sa, const float *sw,
                            bool per_col, const float *bias, float *y) {
    for (size_t c = 0; c < n; c++) {
        float t = (float)(acc[c] - za * wsum[c]) * (sa * sw[per_col ? c : 0]);
        y[c] = bias ? t + bias[c] : t;
    }
}

#if defined(LITHE__Q8_PACKED)
LITHE__Q8_COLD size_t lithe__q8_pack_size(int64_t N, int64_t K) {
    return (size_t)((N + LITHE__Q8_PW - 1) / LITHE__Q8_PW) * LITHE__Q8_PW * lithe__q8_pack_col(K);
}

/* where W[c][k] of a panel lies in it (qgemm.h's layout; in int16 elements in WebAssembly), k4 =
 * ceil(K / 4), nv = ceil(nc / 16) */
static inline size_t pack_at(size_t c, size_t k, size_t k4, size_t nv) {
#if defined(__wasm_simd128__)
    (void)nv;
    return c / 4 * ((k4 + 1) / 2 * 32) + k / 8 * 32 + c % 4 * 8 + k % 8;
#else
    (void)k4;
    return ((k / 4) * nv * 16 + c) * 4 + k % 4;
#endif
}
#if defined(__wasm_simd128__)
typedef int16_t pack_t;
#else
typedef int8_t pack_t;
#endif

/* a panel of nc columns over k4 groups of 4 k as packed: cn columns (padded to the tile's width)
 * by kn k (padded to the pair or quad a step reads), zeros beyond nc and K */
static inline void pack_dims(size_t nc, size_t k4, size_t *cn, size_t *kn) {
#if defined(__wasm_simd128__)
    *cn = (nc + 3) / 4 * 4, *kn = (k4 + 1) / 2 * 8;
#else
    *cn = (nc + 15) / 16 * 16, *kn = 4 * k4;
#endif
}

LITHE__Q8_COLD void lithe__q8_pack(int64_t N, int64_t K, const int8_t *W, int64_t ldw, int8_t *wp) {
    const int64_t K4 = (K + 3) / 4;
    for (int64_t j0 = 0; j0 < N; j0 += LITHE__Q8_PW) {
        const int64_t nc = N - j0 < LITHE__Q8_PW ? N - j0 : LITHE__Q8_PW, nv = (nc + 15) / 16;
        pack_t *d = (pack_t *)(void *)(wp + (size_t)j0 * lithe__q8_pack_col(K));
        size_t cn, kn;
        pack_dims((size_t)nc, (size_t)K4, &cn, &kn);
        for (size_t c = 0; c < cn; c++)
            for (size_t kk = 0; kk < kn; kk++)
                d[pack_at(c, kk, (size_t)K4, (size_t)nv)] =
                    (int64_t)c < nc && (int64_t)kk < K ? W[(j0 + (int64_t)c) * ldw + (int64_t)kk] : 0;
    }
}

void lithe__q8_ptile_ref(size_t mr, size_t nc, size_t k4, const uint8_t *a, size_t lda, const int8_t *wp,
                         int32_t *acc) {
    const size_t nv = (nc + 15) / 16;
    const pack_t *p = (const pack_t *)(const void *)wp;
    size_t cn, kn;
    pack_dims(nc, k4, &cn, &kn);
    for (size_t i = 0; i < mr; i++)
        for (size_t c = 0; c < cn; c++) {
            int32_t s = 0;
            for (size_t k = 0; k < kn; k++) s += (int32_t)a[i * lda + k] * (int32_t)p[pack_at(c, k, k4, nv)];
            acc[i * LITHE__Q8_PW + c] = s;
        }
}

/* Panels [begin, end) of W packed: every row block's packed tile into acc, then per row the
 * kernel's epilogue and the act over the panel's columns. */
static void q8_task_packed(const q8_job *jb, int64_t begin, int64_t end) {
    float *pre = jb->Z ? jb->Z : jb->Y;
    const lithe__q8_epi_fn epi = jb->k->epi ? jb->k->epi : lithe__q8_epilogue_ref;
    const bool per_col = jb->n_scales != 1;
    const int64_t K4 = (jb->K + 3) / 4;
    for (int64_t p = begin; p < end; p++) {
        const int64_t j0 = p * LITHE__Q8_PW, nc = jb->N - j0 < LITHE__Q8_PW ? jb->N - j0 : LITHE__Q8_PW;
        const int8_t *wp = jb->wp + (size_t)j0 * lithe__q8_pack_col(jb->K);
        for (int64_t i = 0; i < jb->M; i += LITHE__Q8_PMR) {
            const size_t mr = (size_t)(jb->M - i < LITHE__Q8_PMR ? jb->M - i : LITHE__Q8_PMR);
            _Alignas(64) int32_t acc[LITHE__Q8_PMR * LITHE__Q8_PW];
            jb->k->ptile(mr, (size_t)nc, (size_t)K4, jb->qa + i * jb->Kp, (size_t)jb->Kp, wp, acc);
            for (size_t ii = 0; ii < mr; ii++) {
                const int64_t r = i + (int64_t)ii;
                epi((size_t)nc, acc + ii * LITHE__Q8_PW, jb->za[r], jb->wsum + j0, jb->sa[r],
                    jb->sw + (per_col ? j0 : 0), per_col, jb->bias ? jb->bias + j0 : NULL, pre + r * jb->ldy + j0);
                if (jb->act) /* while the row's panel is in L1 */
                    jb->act_fn(jb->act, nc, pre + r * jb->ldy + j0, jb->Y + r * jb->ldy + j0);
            }
        }
    }
}
#endif

/* Column blocks [begin, end) of NR columns, in chunks of JC columns (their W rows stay in L1 while
 * the rows of A pass): a row block's tiles into acc, the kernel's epilogue per row, then the act
 * over the block's columns. (With W packed: blocks of PW columns, q8_task_packed.) */
static void q8_task(void *ctx, int64_t begin, int64_t end) {
    const q8_job *jb = ctx;
#if defined(LITHE_SIMD_ONLY) && !defined(__wasm_relaxed_simd__)
    /* (the npm SIMD128 cores: their one kernel is packed, so run_jobs always packs: no unpacked
     * loop there; the relaxed core's relaxed tile is unpacked) */
    q8_task_packed(jb, begin, end);
#else
#if defined(LITHE__Q8_PACKED)
    if (jb->wp) {
        q8_task_packed(jb, begin, end);
        return;
    }
#endif
    const int64_t j0 = begin * LITHE__Q8_NR, j1 = end * LITHE__Q8_NR < jb->N ? end * LITHE__Q8_NR : jb->N;
    float *pre = jb->Z ? jb->Z : jb->Y;
    const lithe__q8_epi_fn epi = jb->k->epi ? jb->k->epi : lithe__q8_epilogue_ref;
    const bool per_col = jb->n_scales != 1;
    for (int64_t jc = j0; jc < j1; jc += LITHE__Q8_JC) {
        const int64_t jn = j1 - jc < LITHE__Q8_JC ? j1 - jc : LITHE__Q8_JC;
        for (int64_t i = 0; i < jb->M; i += LITHE__Q8_MR) {
            size_t mr = (size_t)(jb->M - i < LITHE__Q8_MR ? jb->M - i : LITHE__Q8_MR);
            int32_t acc[LITHE__Q8_MR][LITHE__Q8_JC];
            for (int64_t j = jc; j < jc + jn; j += LITHE__Q8_NR) {
                size_t nr = (size_t)(jc + jn - j < LITHE__Q8_NR ? jc + jn - j : LITHE__Q8_NR);
                int32_t t[LITHE__Q8_MR * LITHE__Q8_NR]; /* (the tile writes its mr x nr) */
                jb->k->tile(mr, nr, (size_t)jb->K, jb->qa + i * jb->Kp, (size_t)jb->Kp, jb->W + j * jb->ldw, (size_t)jb->ldw, t);
#if !defined(LITHE_SIMD_ONLY) /* (the npm cores never split the codes: q8_static) */
                if (jb->qa2) { /* Σ c·w = 2 Σ (c >> 1)·w + Σ (c & 1)·w */
                    int32_t lo[LITHE__Q8_MR * LITHE__Q8_NR];
                    jb->k->tile(mr, nr, (size_t)jb->K, jb->qa2 + i * jb->Kp, (size_t)jb->Kp, jb->W + j * jb->ldw,
                                (size_t)jb->ldw, lo);
                    for (size_t ii = 0; ii < mr; ii++)
                        for (size_t jj = 0; jj < nr; jj++)
                            t[ii * LITHE__Q8_NR + jj] = 2 * t[ii * LITHE__Q8_NR + jj] + lo[ii * LITHE__Q8_NR + jj];
                }
#endif
                if (mr == LITHE__Q8_MR && nr == LITHE__Q8_NR)
                    for (size_t ii = 0; ii < LITHE__Q8_MR; ii++) memcpy(&acc[ii][j - jc], t + ii * LITHE__Q8_NR, sizeof(int32_t) * LITHE__Q8_NR);
                else
                    for (size_t ii = 0; ii < mr; ii++)
                        for (size_t jj = 0; jj < nr; jj++) acc[ii][j - jc + (int64_t)jj] = t[ii * LITHE__Q8_NR + jj];
            }
            for (size_t ii = 0; ii < mr; ii++) {
                const int64_t r = i + (int64_t)ii;
                epi((size_t)jn, acc[ii], jb->za[r], jb->wsum + jc, jb->sa[r], jb->sw + (per_col ? jc : 0), per_col,
                    jb->bias ? jb->bias + jc : NULL, pre + r * jb->ldy + jc);
            }
        }
    }
    if (jb->act)
        for (int64_t r = 0; r < jb->M; r++) jb->act_fn(jb->act, j1 - j0, pre + r * jb->ldy + j0, jb->Y + r * jb->ldy + j0);
#endif
}

/* The job's tiles over W packed (wp, or packed here into a scratch when the kernel has a ptile and
 * the caller kept none: 0 done, -1 out of memory), or over W's rows */
static int run_jobs(q8_job *jb, const int8_t *wp, bool use_threads) {
    int64_t blocks = (jb->N + LITHE__Q8_NR - 1) / LITHE__Q8_NR, grain = 8;
#if defined(LITHE__Q8_PACKED)
    int8_t *scratch = NULL;
    jb->wp = wp;
    if (jb->k->ptile && !jb->qa2) {
        if (!jb->wp) {
            scratch = lithe__malloc(lithe__q8_pack_size(jb->N, jb->K));
            if (!scratch) return -1;
            lithe__q8_pack(jb->N, jb->K, jb->W, jb->ldw, scratch);
            jb->wp = scratch;
        }
        blocks = (jb->N + LITHE__Q8_PW - 1) / LITHE__Q8_PW, grain = 1;
    } else
        jb->wp = NULL; /* (W packed for another kernel: its tiles read W) */
#else
    (void)wp;
#endif
    double ops = 2.0 * (double)jb->M * (double)jb->N * (double)jb->K;
    lithe__pool *pool = use_threads && ops >= 2e6 ? lithe__cpu_pool() : NULL;
    lithe__pool_for(pool, blocks, grain, q8_task, jb);
#if defined(LITHE__Q8_PACKED)
    lithe__free(scratch);
#endif
    return 0;
}

LITHE__Q8_COLD bool lithe__q8_row_sums(int64_t N, int64_t K, const int8_t *W, int64_t ldw, int32_t *wsum) {
    bool ok = true;
    for (int64_t j = 0; j < N; j++) {
        int32_t s = 0;
        const int8_t *w = W + j * ldw;
        for (int64_t kk = 0; kk < K; kk++) {
            ok &= w[kk] != -128;
            s += w[kk];
        }
        wsum[j] = s;
    }
    return ok;
}

/* round to nearest, ties to even, for |v| < 2^22 (nearbyintf's result in the default rounding
 * mode, without a libm call per element on baseline x86-64) */
static inline float round_even(float v) {
    const float big = 12582912.0f; /* 1.5 * 2^23 (C's float addition is not reassociated) */
    return (v + big) - big;
}

int lithe__q8_gemm(const lithe__q8_kernel *k, bool use_threads, int64_t M, int64_t N, int64_t K, const float *A,
                   int64_t lda, const int8_t *W, int64_t ldw, const int32_t *wsum, const int8_t *wp, const float *sw,
                   int64_t n_scales, const float *bias, const lithe__act *act, lithe__act_fn act_fn, float *Z, float *Y,
                   int64_t ldy) {
    if (K > 131072) return 1;
    if (!k) k = lithe__q8_kernel_best();
    if (!k) return 1;
    if (M <= 0 || N <= 0) return 0;
    const int64_t Kp = (K + 63) / 64 * 64;
    uint8_t *qa = lithe__malloc((size_t)(M * Kp > 0 ? M * Kp : 1));
    float *sa = lithe__malloc((size_t)M * sizeof *sa);
    int32_t *za = lithe__malloc((size_t)M * sizeof *za);
    int rc = qa && sa && za ? 0 : -1;
    for (int64_t i = 0; rc == 0 && i < M; i++) { /* the activations, per row */
        const float *x = A + i * lda;
        float lo = 0.0f, hi = 0.0f;
        for (int64_t kk = 0; kk < K; kk++) lo = x[kk] < lo ? x[kk] : lo, hi = x[kk] > hi ? x[kk] : hi;
        if (!isfinite(lo) || !isfinite(hi)) rc = 1; /* NaN / inf inputs: the float path propagates them */
        float s = hi > lo ? (hi - lo) / 127.0f : 1.0f;
        if (!(s > 0.0f) || !isfinite(s)) s = 1.0f;
        float zf = round_even(-lo / s);
        int32_t z = (int32_t)(zf < 0.0f ? 0.0f : zf > 127.0f ? 127.0f : zf);
        sa[i] = s;
        za[i] = z;
        uint8_t *q = qa + i * Kp;
        const float inv = 1.0f / s;
        for (int64_t kk = 0; kk < K; kk++) {
            float v = round_even(x[kk] * inv) + (float)z;
            q[kk] = (uint8_t)(v < 0.0f ? 0 : v > 127.0f ? 127 : (int)v);
        }
        memset(q + K, 0, (size_t)(Kp - K));
    }
    if (rc == 0) {
        q8_job jb = {k, M, N, K, Kp, qa, NULL, sa, za, W, ldw, wsum, sw, n_scales, bias, act, act_fn, Z, Y, ldy Q8_JOB_WP};
        rc = run_jobs(&jb, wp, use_threads);
    }
    lithe__free(qa);
    lithe__free(sa);
    lithe__free(za);
    return rc;
}

LITHE__Q8_COLD bool lithe__q8_pairs_fit(int64_t N, int64_t K, const int8_t *W, int64_t ldw) {
#if defined(__x86_64__) || defined(_M_X64)
    if (__builtin_cpu_supports("avx2")) return lithe__q8_pairs_fit_avx2(N, K, W, ldw);
#endif
    return lithe__q8_pairs_fit_ref(N, K, W, ldw);
}

LITHE__Q8_COLD bool lithe__q8_pairs_fit_ref(int64_t N, int64_t K, const int8_t *W, int64_t ldw) {
    for (int64_t j = 0; j < N; j++)
        for (int64_t kk = 0; kk < K; kk += 2) {
            int a = W[j * ldw + kk], b = kk + 1 < K ? W[j * ldw + kk + 1] : 0;
            if ((a > 0 ? a : 0) + (b > 0 ? b : 0) > 128 || (a < 0 ? -a : 0) + (b < 0 ? -b : 0) > 128) return false;
        }
    return true;
}

LITHE__Q8_COLD void lithe__q8_quant_ref(size_t n, const float *x, const lithe__q8_qx *q, uint8_t *u) {
    const float s = q->scale, lo = q->lo, hi = q->hi, off = q->off;
    for (size_t i = 0; i < n; i++) {
        float t = x[i] / s;
        t = t > hi ? hi : t;
        t = t >= lo ? t : lo; /* NaN goes to lo */
        u[i] = (uint8_t)(int32_t)(round_even(t) + off);
    }
}

/* The static product's body: A's rows as 8-bit codes (A8, xor flip gives u = code - lo) or as
 * float32 quantized here (Af with qx: u directly, the kernel's quantize pass), then what the kernel
 * reads (qgemm.h's a_codes). */
static int q8_static(const lithe__q8_kernel *k, bool use_threads, int64_t M, int64_t N, int64_t K, const uint8_t *A8,
                     uint8_t flip, const float *Af, const lithe__q8_qx *qx, int64_t lda, float sa, int32_t zu,
                     const int8_t *W, int64_t ldw, const int32_t *wsum, const int8_t *wp, int pairs_fit,
                     const float *sw, int64_t n_scales, const float *bias, const lithe__act *act,
                     lithe__act_fn act_fn, float *Z, float *Y, int64_t ldy) {
    if (K > 32768) return 1; /* 8-bit codes: acc and za * wsum each below 255 * 127 * K < 2^30 */
    if (!k) k = lithe__q8_kernel_best();
    if (!k) return 1;
#if defined(__wasm_relaxed_simd__)
    /* the relaxed tile's i7 operand would take the codes in two halves, two passes over K: the SIMD128
     * tile (the relaxed core has both) reads them whole, in one (qgemm_wasmsimd.c) */
    if (k == lithe__q8_kernel_wasmsimd()) k = lithe__q8_kernel_wasmsimd_u8();
#endif
    if (M <= 0 || N <= 0) return 0;
    const int64_t Kp = (K + 63) / 64 * 64;
    /* a u7 kernel: in two halves, except AVX2's where W's pairs fit: vpmaddubsw reads any u8 and
     * saturates only a pair's sum, which then stays in int16 — the codes whole, one pass (relaxed
     * SIMD's i7 operand is undefined past 127 whatever the weights: always halves) */
    bool whole = false;
#if defined(__x86_64__) || defined(_M_X64)
    whole = k->a_codes == LITHE__Q8_A_U7 && k == lithe__q8_kernel_avx2() &&
            (pairs_fit >= 0 ? pairs_fit == 1 : lithe__q8_pairs_fit(N, K, W, ldw));
#else
    (void)pairs_fit;
#endif
    const bool split = k->a_codes == LITHE__Q8_A_U7 && !whole;
#if defined(LITHE_SIMD_ONLY) /* the npm cores' static kernels read U8 (the split is compiled out below) */
    if (split) return 1;
#endif
    uint8_t *qa = lithe__malloc((size_t)(M * Kp > 0 ? M * Kp : 1) * (split ? 2 : 1));
    float *sv = lithe__malloc((size_t)M * sizeof *sv);
    int32_t *zv = lithe__malloc((size_t)M * sizeof *zv);
    if (!qa || !sv || !zv) {
        lithe__free(qa);
        lithe__free(sv);
        lithe__free(zv);
        return -1;
    }
    /* u = code - lo in [0, 255] (lo -128 for int8), zero point zu; then what the kernel reads: u (U8,
     * and U7 where W's pairs fit), u - 128 as s8 (S8), or u >> 1 and u & 1 (U7) */
    const lithe__q8_quant_fn quant = k->quant ? k->quant : lithe__q8_quant_ref;
    uint8_t *qa2 = split ? qa + M * Kp : NULL;
    for (int64_t i = 0; i < M; i++) {
        uint8_t *q = qa + i * Kp;
        sv[i] = sa;
        zv[i] = zu;
        if (Af) {
            quant((size_t)K, Af + i * lda, qx, q);
        } else {
            const uint8_t *x = A8 + i * lda;
            for (int64_t kk = 0; kk < K; kk++) q[kk] = x[kk] ^ flip;
        }
#if !defined(LITHE_SIMD_ONLY) /* (the npm SIMD128 cores' kernels read U8 or U7: no S8 kernel there) */
        if (k->a_codes == LITHE__Q8_A_S8) {
            for (int64_t kk = 0; kk < K; kk++) q[kk] ^= 0x80; /* (u - 128) as s8 */
            zv[i] = zu - 128;
        }
#endif
#if !defined(LITHE_SIMD_ONLY) /* (the npm cores' static kernels read U8: no split; the relaxed one swaps above) */
        if (split) {
            uint8_t *q2 = qa2 + i * Kp;
            for (int64_t kk = 0; kk < K; kk++) {
                q2[kk] = q[kk] & 1;
                q[kk] >>= 1;
            }
            memset(q2 + K, 0, (size_t)(Kp - K));
        }
#endif
        memset(q + K, 0, (size_t)(Kp - K)); /* past K: every kernel's code 0 (the S8 zero point's shift is in zv) */
    }
    q8_job jb = {k, M, N, K, Kp, qa, qa2, sv, zv, W, ldw, wsum, sw, n_scales, bias, act, act_fn, Z, Y, ldy Q8_JOB_WP};
    const int rc = run_jobs(&jb, wp, use_threads);
    lithe__free(qa);
    lithe__free(sv);
    lithe__free(zv);
    return rc;
}

int lithe__q8_gemm_static(const lithe__q8_kernel *k, bool use_threads, int64_t M, int64_t N, int64_t K,
                          const uint8_t *A, bool a_signed, int64_t lda, float sa, int32_t za, const int8_t *W,
                          int64_t ldw, const int32_t *wsum, const int8_t *wp, int pairs_fit, const float *sw,
                          int64_t n_scales, const float *bias, const lithe__act *act, lithe__act_fn act_fn, float *Z,
                          float *Y, int64_t ldy) {
    /* int8 code c: (uint8_t)c ^ 0x80 == c + 128 */
    return q8_static(k, use_threads, M, N, K, A, a_signed ? 0x80 : 0, NULL, NULL, lda, sa, za - (a_signed ? -128 : 0),
                     W, ldw, wsum, wp, pairs_fit, sw, n_scales, bias, act, act_fn, Z, Y, ldy);
}

int lithe__q8_gemm_static_f32(const lithe__q8_kernel *k, bool use_threads, int64_t M, int64_t N, int64_t K,
                              const float *A, int64_t lda, float sa, int32_t za, int32_t qmin, int32_t qmax,
                              bool a_signed, const int8_t *W, int64_t ldw, const int32_t *wsum, const int8_t *wp,
                              int pairs_fit, const float *sw, int64_t n_scales, const float *bias,
                              const lithe__act *act, lithe__act_fn act_fn, float *Z, float *Y, int64_t ldy) {
    const int32_t base = a_signed ? -128 : 0;
    if (!(sa > 0.0f) || !isfinite(sa) || qmin < base || qmax > base + 255 || qmin > za || za > qmax) return 1;
    const lithe__q8_qx qx = {sa, (float)(qmin - za), (float)(qmax - za), (float)(za - base)};
    return q8_static(k, use_threads, M, N, K, NULL, 0, A, &qx, lda, sa, za - base, W, ldw, wsum, wp, pairs_fit, sw,
                     n_scales, bias, act, act_fn, Z, Y, ldy);
}
#endif
