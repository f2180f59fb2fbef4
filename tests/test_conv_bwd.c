/* The GEMM-path convolution backward through the shifted rows (backends/cpu/conv/backward.c: dW with
 * col's slivers packed from the taps' rows, dX with col2im in the product's store) against the im2col /
 * col2im path it replaced (LITHE_CONV_ROWS / lithe_options.conv_rows set turns the new path off) bit for bit, dX and dW
 * prefilled (both accumulate; db too, taken in the dW pass), with 1 and 3 threads; and both against a float64 sum within the
 * GEMM's rounding. Geometries: LeNet's two layers, uneven padding, dilation, groups, a pad past the
 * kernel's reach, strides (dW only: dX keeps col2im there), K and P past the kernel's kc, filters not
 * a multiple of NR, one tap; and dX assigned (assign_dx: the graph's fresh gradient) on both paths.
 * Runs with the best kernel of the CPU; ctest runs it again under LITHE_CPU_ISA=scalar; the wasi
 * preset builds it for SIMD128 (tests/wasm).
 *
 * Plain C with count_check.h's CHECK. Ends with "conv_bwd: N passed, M failed". */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lithe.h"
#include "../backends/cpu/simd/simd.h"

#include "count_check.h"

static uint64_t rng = 0x9E3779B97F4A7C15u;
static float urand(void) { /* in [-1, 1) */
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return (float)((double)((rng * 0x2545F4914F6CDD1Du) >> 40) / (double)(1u << 23) - 1.0);
}

/* N, C, H, W, M, KH, KW, s0, s1, pad t, l, b, r, d0, d1, group */
static const int cases[][16] = {
    {3, 1, 28, 28, 16, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, 1},   /* LeNet's first layer (P = 784: pixels past kc) */
    {3, 16, 14, 14, 32, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, 1},  /* LeNet's second */
    {2, 20, 9, 13, 7, 5, 5, 1, 1, 2, 1, 2, 3, 1, 1, 1},    /* uneven padding, K = 500: taps past kc */
    {2, 6, 11, 13, 4, 3, 3, 1, 1, 2, 0, 1, 1, 2, 1, 2},    /* dilation, groups */
    {1, 2, 6, 7, 3, 3, 3, 1, 1, 3, 0, 0, 0, 1, 1, 1},      /* a pad past the kernel's reach */
    {2, 3, 6, 9, 5, 1, 1, 1, 1, 1, 2, 0, 1, 1, 1, 1},      /* 1x1 with padding */
    {1, 1, 5, 6, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1},      /* one tap */
    {2, 3, 16, 16, 6, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1},    /* stride 2: phase planes (dW only) */
    {1, 4, 9, 21, 6, 3, 5, 1, 2, 1, 2, 1, 2, 1, 1, 2},     /* stride 2 across, grouped */
    {2, 8, 10, 10, 37, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},   /* 37 filters: a partial sliver */
    {1, 4, 7, 9, 300, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},    /* 300 filters: dX's steps past kc (col2im) */
    /* dX's slivers over the flattened output pixels (issue 29): fewer pixels than a sliver, a
     * one-pixel-wide output, rows wider than two slivers (each row's add ends in a partial vector) */
    {2, 3, 3, 3, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},
    {2, 4, 12, 1, 5, 3, 1, 1, 1, 1, 0, 1, 0, 1, 1, 1},
    {1, 2, 3, 43, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},
};

static void run(const lithe__conv2d *g, lithe_backend *cpu, const float *X, const float *W, const float *dY,
                float *dX, float *dW, float *db) {
    lithe_status s = lithe__cpu_conv2d_backward(cpu, g, X, W, dY, dX, dW, db);
    CHECK(s == LITHE_OK, "backward: %s", lithe_last_error());
}

int main(void) {
    lithe_backend *cpu;
    if (lithe_backend_get("cpu", &cpu) != LITHE_OK) return 1;
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const int *c = cases[ci];
        lithe__conv2d g = {.N = c[0], .C = c[1], .H = c[2], .W = c[3], .M = c[4], .KH = c[5], .KW = c[6], .group = c[15],
                           .stride = {c[7], c[8]}, .pad = {c[9], c[10], c[11], c[12]}, .dil = {c[13], c[14]}};
        g.OH = (g.H + g.pad[0] + g.pad[2] - g.dil[0] * (g.KH - 1) - 1) / g.stride[0] + 1;
        g.OW = (g.W + g.pad[1] + g.pad[3] - g.dil[1] * (g.KW - 1) - 1) / g.stride[1] + 1;
        int64_t Cg = g.C / g.group, Mg = g.M / g.group, K = Cg * g.KH * g.KW;
        size_t nx = (size_t)(g.N * g.C * g.H * g.W), nw = (size_t)(g.M * K), ny = (size_t)(g.N * g.M * g.OH * g.OW);
        float *X = malloc(nx * 4), *W = malloc(nw * 4), *dY = malloc(ny * 4), *dX0 = malloc(nx * 4), *dW0 = malloc(nw * 4);
        float *dX[3], *dW[3], *db[3];
        for (int r = 0; r < 3; r++) dX[r] = malloc(nx * 4), dW[r] = malloc(nw * 4), db[r] = malloc((size_t)g.M * 4);
        for (size_t i = 0; i < nx; i++) X[i] = urand(), dX0[i] = urand();
        for (size_t i = 0; i < nw; i++) W[i] = urand(), dW0[i] = urand();
        for (size_t i = 0; i < ny; i++) dY[i] = urand();
        /* [0]: im2col / col2im (LITHE_CONV_ROWS set), [1]: the shifted rows, 1 thread, [2]: 3 threads */
        for (int r = 0; r < 3; r++) {
            memcpy(dX[r], dX0, nx * 4), memcpy(dW[r], dW0, nw * 4);
            for (int64_t m = 0; m < g.M; m++) db[r][m] = 0.25f * (float)m - 1.0f; /* prefilled: db accumulates */
            lithe_options o = lithe_options_defaults();
            o.conv_rows = r == 0 ? "filters" : NULL;
            CHECK(lithe_set_options(&o) == LITHE_OK, "lithe_set_options");
            lithe_status st = lithe_backend_set_threads(cpu, r == 2 ? 3 : 1);
            if (st != LITHE_OK) { /* a build without threads: run 2 repeats run 1 */
                memcpy(dX[2], dX[1], nx * 4), memcpy(dW[2], dW[1], nw * 4), memcpy(db[2], db[1], (size_t)g.M * 4);
                continue;
            }
            run(&g, cpu, X, W, dY, dX[r], dW[r], db[r]);
        }
        lithe_backend_set_threads(cpu, 0);
        for (int r = 1; r < 3; r++) {
            size_t bx = 0, bw = 0, bb = 0;
            for (size_t i = 0; i < nx; i++) bx += memcmp(&dX[0][i], &dX[r][i], 4) != 0;
            for (int64_t m = 0; m < g.M; m++) bb += memcmp(&db[0][m], &db[r][m], 4) != 0;
            for (size_t i = 0; i < nw; i++) bw += memcmp(&dW[0][i], &dW[r][i], 4) != 0;
            CHECK(bx == 0, "case %zu run %d: %zu of %zu dX elements differ from col2im's", ci, r, bx, nx);
            CHECK(bw == 0, "case %zu run %d: %zu of %zu dW elements differ from the im2col GEMM's", ci, r, bw, nw);
            CHECK(bb == 0, "case %zu run %d: %zu of %lld db elements differ from the im2col path's", ci, r, bb, (long long)g.M);
        }
        /* against float64: dW[m, (c, kh, kw)] = dW0 + Σ dY x, dX likewise, within (terms + 3) roundings of Σ|.| */
        double *ex = calloc(nx, sizeof(double)), *ax = calloc(nx, sizeof(double)), *ew = calloc(nw, sizeof(double)),
               *aw = calloc(nw, sizeof(double)), *eb = calloc((size_t)g.M, sizeof(double)),
               *ab = calloc((size_t)g.M, sizeof(double));
        for (int64_t n = 0; n < g.N; n++)
            for (int64_t m = 0; m < g.M; m++)
                for (int64_t oh = 0; oh < g.OH; oh++)
                    for (int64_t ow = 0; ow < g.OW; ow++) {
                        double gy = dY[((n * g.M + m) * g.OH + oh) * g.OW + ow];
                        int64_t gi = m / Mg;
                        eb[m] += gy, ab[m] += fabs(gy);
                        for (int64_t cc = 0; cc < Cg; cc++)
                            for (int64_t kh = 0; kh < g.KH; kh++)
                                for (int64_t kw = 0; kw < g.KW; kw++) {
                                    int64_t h = oh * g.stride[0] - g.pad[0] + kh * g.dil[0], w = ow * g.stride[1] - g.pad[1] + kw * g.dil[1];
                                    if (h < 0 || h >= g.H || w < 0 || w >= g.W) continue;
                                    size_t xi = (size_t)(((n * g.C + gi * Cg + cc) * g.H + h) * g.W + w);
                                    size_t wi = (size_t)((m * Cg + cc) * g.KH * g.KW + kh * g.KW + kw);
                                    ew[wi] += gy * X[xi], aw[wi] += fabs(gy * X[xi]);
                                    ex[xi] += gy * W[wi], ax[xi] += fabs(gy * W[wi]);
                                }
                    }
        double tol = (double)(g.N * g.OH * g.OW + K + 3) * 0x1p-24;
        size_t bad = 0;
        for (size_t i = 0; i < nw; i++) bad += fabs(dW[1][i] - (dW0[i] + ew[i])) > tol * (aw[i] + fabs(dW0[i])) + 1e-30;
        for (size_t i = 0; i < nx; i++) bad += fabs(dX[1][i] - (dX0[i] + ex[i])) > tol * (ax[i] + fabs(dX0[i])) + 1e-30;
        for (int64_t m = 0; m < g.M; m++) {
            double db0 = 0.25 * (double)m - 1.0;
            bad += fabs(db[1][m] - (db0 + eb[m])) > tol * (ab[m] + fabs(db0)) + 1e-30;
        }
        CHECK(bad == 0, "case %zu: %zu gradient elements off the float64 sums", ci, bad);
        /* assign_dx (issue 29): dX's old values (NaN here) unread: the bits of adding into zeros, on
         * both paths, and the float64 sums */
        lithe__conv2d ga = g;
        ga.assign_dx = true;
        for (int r = 0; r < 2; r++) {
            lithe_options o = lithe_options_defaults();
            o.conv_rows = r == 0 ? "filters" : NULL;
            CHECK(lithe_set_options(&o) == LITHE_OK, "lithe_set_options");
            for (size_t i = 0; i < nx; i++) dX[0][i] = 0.0f, dX[1][i] = NAN;
            run(&g, cpu, X, W, dY, dX[0], NULL, NULL);
            run(&ga, cpu, X, W, dY, dX[1], NULL, NULL);
            size_t bx = 0, off = 0;
            for (size_t i = 0; i < nx; i++) {
                bx += memcmp(&dX[0][i], &dX[1][i], 4) != 0;
                off += !(fabs(dX[1][i] - ex[i]) <= tol * ax[i] + 1e-30);
            }
            CHECK(bx == 0, "case %zu path %d: %zu of %zu assigned dX elements differ from the adds into zeros", ci, r, bx, nx);
            CHECK(off == 0, "case %zu path %d: %zu assigned dX elements off the float64 sums", ci, r, off);
        }
        lithe_options od = lithe_options_defaults();
        CHECK(lithe_set_options(&od) == LITHE_OK, "lithe_set_options");
        free(ex), free(ax), free(ew), free(aw), free(eb), free(ab);
        for (int r = 0; r < 3; r++) free(dX[r]), free(dW[r]), free(db[r]);
        free(X), free(W), free(dY), free(dX0), free(dW0);
    }
    printf("conv_bwd: %d passed, %d failed\n", passed, failed);
    return failed != 0;
}
