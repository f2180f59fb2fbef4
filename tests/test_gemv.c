/* The M = 1 kernels of every SGEMM kernel this build has (gemm.h's gemv_t: y = x · Wᵀ, gemv_n:
 * y = x · W, reading W where it lies) called directly, against their scalar twin bit for bit and
 * against a float64 reference.
 *
 * The twin is gemm.h's rule for one row written out in plain C: per block of kc steps, acc = 0,
 * then one multiply-add per step in k order (fmaf for the kernels that fuse, a rounded product
 * then a rounded sum for the others), then t = alpha * acc, t += beta' * c (beta' = beta on the
 * first block, 1 after; skipped when 0), and the bias after the last block. Shapes cover whole
 * row blocks and the rows left over (n = 1..70, 512), blocks of k with a length not a multiple of
 * 8 or 16 (K = 1, 7, 300, 515, 784), beta 0 (NaN in y never read) and not, bias or none, and W
 * rows padded (ldw > K). The float64 check: within 4 ulps of sum |x||w| (times |alpha|) plus the
 * beta term's rounding.
 *
 * gemv_tm (2..4 rows of x) likewise, row by row, with padded x and y rows.
 *
 * Plain C with its own CHECK (no cmocka); ends with "gemv: N passed, M failed", exit status 1 on a
 * failure. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lithe.h"
#include "../backends/cpu/gemm/gemm.h"

#include "count_check.h"

/* which kernels fuse the multiply-add (as test_gemm_ukernels.c) */
static const struct {
    const char *isa;
    bool fused;
} isas[] = {{"scalar", false}, {"avx2", true}, {"avx512", true}, {"neon", true}, {"wasmsimd", false}};

static uint64_t rng = 0x2545F4914F6CDD1Du;
static float urand(void) { /* in [-1, 1), xorshift64* */
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return (float)((double)((rng * 0x2545F4914F6CDD1Du) >> 40) / (double)(1u << 23) - 1.0);
}

/* y[j] by gemm.h's rule; w_at(j, k) = trans ? w[j * ldw + k] : w[k * ldw + j] */
static float twin_one(bool fused, bool trans, size_t j, size_t K, size_t kc, float alpha, const float *x,
                      const float *w, size_t ldw, float beta, float c, const float *bias) {
    for (size_t p = 0; p < K; p += kc) {
        size_t e = K - p < kc ? K : p + kc;
        float acc = 0.0f;
        for (size_t k = p; k < e; k++) {
            float wk = trans ? w[j * ldw + k] : w[k * ldw + j];
            if (fused) {
                acc = fmaf(x[k], wk, acc);
            } else {
                float prod = x[k] * wk;
                acc = acc + prod;
            }
        }
        float t = alpha * acc, b = p == 0 ? beta : 1.0f;
        if (b != 0.0f) {
            if (fused) {
                t = fmaf(b, c, t);
            } else {
                float bc = b * c;
                t = t + bc;
            }
        }
        c = t;
    }
    return bias ? c + bias[j] : c;
}

static void check_gemv(const lithe__sgemm_kernel *k, bool fused, bool trans) {
    lithe__sgemv_fn fn = trans ? k->gemv_t : k->gemv_n;
    if (!fn) return;
    static const size_t ns[] = {1, 7, 8, 15, 16, 17, 31, 32, 33, 47, 64, 70, 512};
    static const size_t Ks[] = {1, 7, 300, 515, 784};
    static const float alphas[] = {1.0f, -0.75f}, betas[] = {0.0f, 1.0f, 0.5f};
    size_t kc = (size_t)k->kc;
    for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
        for (size_t ki = 0; ki < sizeof Ks / sizeof Ks[0]; ki++) {
            size_t n = ns[ni], K = Ks[ki], pad = (ni + ki) % 3;
            size_t ldw = trans ? K + pad : n + pad, rows = trans ? n : K;
            float *w = malloc(sizeof(float) * rows * ldw), *x = malloc(sizeof(float) * K);
            float *y0 = malloc(sizeof(float) * n), *y = malloc(sizeof(float) * n), *bias = malloc(sizeof(float) * n);
            if (!w || !x || !y0 || !y || !bias) {
                printf("out of memory\n");
                exit(2);
            }
            for (size_t i = 0; i < rows * ldw; i++) w[i] = urand();
            for (size_t i = 0; i < K; i++) x[i] = urand();
            for (size_t i = 0; i < n; i++) y0[i] = urand(), bias[i] = urand();
            for (int v = 0; v < 6; v++) {
                float alpha = alphas[v % 2], beta = betas[v % 3];
                const float *b = v >= 3 ? bias : NULL;
                for (size_t j = 0; j < n; j++) y[j] = beta == 0.0f ? NAN : y0[j]; /* beta 0: y never read */
                fn(n, K, kc, alpha, x, w, ldw, beta, y, b);
                int bad_bits = 0, bad_ref = 0;
                for (size_t j = 0; j < n; j++) {
                    float want = twin_one(fused, trans, j, K, kc, alpha, x, w, ldw, beta, y0[j], b);
                    if (memcmp(&want, &y[j], sizeof want) != 0) bad_bits++;
                    double ref = 0, mag = 0;
                    for (size_t kk = 0; kk < K; kk++) {
                        double wk = trans ? w[j * ldw + kk] : w[kk * ldw + j];
                        ref += (double)x[kk] * wk;
                        mag += fabs((double)x[kk] * wk);
                    }
                    ref = alpha * ref + (beta != 0.0f ? beta * (double)y0[j] : 0.0) + (b ? b[j] : 0.0);
                    double tol = 4.0 * (double)K * 0x1p-24 * fabs(alpha) * mag + 4 * 0x1p-24 *
                                 (fabs(beta * (double)y0[j]) + (b ? fabs(b[j]) : 0.0) + fabs(ref)) + 1e-30;
                    if (!(fabs((double)y[j] - ref) <= tol)) bad_ref++;
                }
                CHECK(bad_bits == 0, "%s gemv_%s n=%zu K=%zu alpha=%g beta=%g bias=%d: %d of %zu outputs differ from "
                      "the twin", k->isa, trans ? "t" : "n", n, K, alpha, beta, b != NULL, bad_bits, n);
                CHECK(bad_ref == 0, "%s gemv_%s n=%zu K=%zu alpha=%g beta=%g bias=%d: %d of %zu outputs off the "
                      "float64 reference", k->isa, trans ? "t" : "n", n, K, alpha, beta, b != NULL, bad_ref, n);
            }
            free(w), free(x), free(y0), free(y), free(bias);
        }
}

/* gemv_tm (2..4 rows of x at once, gemm.h): every row against the twin bit for bit (gemv_t's bits)
 * and the float64 reference; x's and y's rows padded (ldx > K, ldy > n), the padding never written. */
static void check_gemv_tm(const lithe__sgemm_kernel *k, bool fused) {
    if (!k->gemv_tm) return;
    static const size_t ns[] = {1, 8, 15, 16, 17, 33, 64, 70, 512};
    static const size_t Ks[] = {1, 7, 300, 515, 784};
    static const float alphas[] = {1.0f, -0.75f}, betas[] = {0.0f, 1.0f, 0.5f};
    size_t kc = (size_t)k->kc;
    for (size_t m = 2; m <= LITHE__SGEMV_ROWS; m++)
        for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
            for (size_t ki = 0; ki < sizeof Ks / sizeof Ks[0]; ki++) {
                size_t n = ns[ni], K = Ks[ki], pad = (ni + ki + m) % 3, ldw = K + pad, ldx = K + 1, ldy = n + 2;
                float *w = malloc(sizeof(float) * n * ldw), *x = malloc(sizeof(float) * m * ldx);
                float *y0 = malloc(sizeof(float) * m * ldy), *y = malloc(sizeof(float) * m * ldy);
                float *bias = malloc(sizeof(float) * n);
                if (!w || !x || !y0 || !y || !bias) {
                    printf("out of memory\n");
                    exit(2);
                }
                for (size_t i = 0; i < n * ldw; i++) w[i] = urand();
                for (size_t i = 0; i < m * ldx; i++) x[i] = urand();
                for (size_t i = 0; i < m * ldy; i++) y0[i] = urand();
                for (size_t i = 0; i < n; i++) bias[i] = urand();
                for (int v = 0; v < 6; v++) {
                    float alpha = alphas[v % 2], beta = betas[v % 3];
                    const float *b = v >= 3 ? bias : NULL;
                    for (size_t i = 0; i < m * ldy; i++) y[i] = beta == 0.0f && i % ldy < n ? NAN : y0[i];
                    k->gemv_tm(m, n, K, kc, alpha, x, ldx, w, ldw, beta, y, ldy, b);
                    int bad_bits = 0, bad_ref = 0, bad_pad = 0;
                    for (size_t r = 0; r < m; r++) {
                        const float *xr = x + r * ldx;
                        for (size_t j = n; j < ldy; j++) bad_pad += memcmp(&y[r * ldy + j], &y0[r * ldy + j], sizeof(float)) != 0;
                        for (size_t j = 0; j < n; j++) {
                            float c0 = y0[r * ldy + j], got = y[r * ldy + j];
                            float want = twin_one(fused, true, j, K, kc, alpha, xr, w, ldw, beta, c0, b);
                            if (memcmp(&want, &got, sizeof want) != 0) bad_bits++;
                            double ref = 0, mag = 0;
                            for (size_t kk = 0; kk < K; kk++) {
                                ref += (double)xr[kk] * w[j * ldw + kk];
                                mag += fabs((double)xr[kk] * w[j * ldw + kk]);
                            }
                            ref = alpha * ref + (beta != 0.0f ? beta * (double)c0 : 0.0) + (b ? b[j] : 0.0);
                            double tol = 4.0 * (double)K * 0x1p-24 * fabs(alpha) * mag + 4 * 0x1p-24 *
                                         (fabs(beta * (double)c0) + (b ? fabs(b[j]) : 0.0) + fabs(ref)) + 1e-30;
                            if (!(fabs((double)got - ref) <= tol)) bad_ref++;
                        }
                    }
                    CHECK(bad_bits == 0, "%s gemv_tm m=%zu n=%zu K=%zu alpha=%g beta=%g bias=%d: %d of %zu outputs differ "
                          "from the twin", k->isa, m, n, K, alpha, beta, b != NULL, bad_bits, m * n);
                    CHECK(bad_ref == 0, "%s gemv_tm m=%zu n=%zu K=%zu alpha=%g beta=%g bias=%d: %d of %zu outputs off the "
                          "float64 reference", k->isa, m, n, K, alpha, beta, b != NULL, bad_ref, m * n);
                    CHECK(bad_pad == 0, "%s gemv_tm m=%zu n=%zu K=%zu: wrote y's row padding", k->isa, m, n, K);
                }
                free(w), free(x), free(y0), free(y), free(bias);
            }
}

int main(void) {
    int kernels = 0;
    for (size_t s = 0; s < sizeof isas / sizeof isas[0]; s++) {
        const lithe__sgemm_kernel *k = lithe__sgemm_kernel_named(isas[s].isa);
        if (!k) {
            printf("gemv: %s not in this build or CPU\n", isas[s].isa);
            continue;
        }
        kernels++;
        printf("gemv: %s (kc %d)%s%s%s\n", k->isa, k->kc, k->gemv_t ? ", gemv_t" : "", k->gemv_n ? ", gemv_n" : "",
               k->gemv_tm ? ", gemv_tm" : "");
        check_gemv(k, isas[s].fused, true);
        check_gemv(k, isas[s].fused, false);
        check_gemv_tm(k, isas[s].fused);
    }
    CHECK(kernels >= 1, "no kernel");
    printf("gemv: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
