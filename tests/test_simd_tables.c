/* Every SIMD kernel table this build runs (backends/cpu/simd/simd.h: SSE2, AVX2, AVX-512 on x86-64,
 * NEON on aarch64, WebAssembly SIMD128 in -msimd128 builds) against the scalar table, entry by
 * entry: simd_tables.h's checks (the ones test_simd runs too), with its oracles and tolerances —
 * activations and their backwards, axpby, mul, binary, sum_squares, Adam / RAdam / averages and
 * the fused adam_step, unary ops and backwards, maxout, add_row, sum_rows, softmax, log_softmax,
 * layernorm forward and backward, scatter-add, the depthwise long rows (dwconv_taps, copy_rows,
 * split_rows) and the 3x3 read in place (dwconv3x3, where the table has it: against the scalar
 * convolution then the table's act), 2x2 max pooling rows, then the CPU backend's entries on one thread (gather_rows,
 * layernorm_backward, binary_rows among them); each with and without -0, ±inf and NaN among the
 * inputs.
 *
 * Plain C with its own counters (no cmocka), so the same file also builds for WASI: the wasi preset
 * builds test_simd_tables.wasm and tests/wasm/wasi.test.mjs runs it under node:wasi, which is where
 * the SIMD128 table is checked (test_simd is native only). Ends with "simd_tables: N passed, M
 * failed" and exits non-zero on any failure (tests/wasm also requires the wasm_simd128 line). */
#include <stdio.h>

static int passed, failed, printed;
#define SIMD_CMP_PRINT(...) (printed++ < 40 ? printf(__VA_ARGS__) : 0)
#define SIMD_CMP_FAIL() (failed++)
#define SIMD_CMP_PASS() (passed++)
#include "simd_tables.h"
#include "../backends/cpu/kernels.h"

/* dwconv3x3 (conv/depthwise.c's 3x3 with padding 1 read in place) on planes of several widths
 * (rows narrower than two vectors, exactly one, odd ones whose last strip overlaps, wider than a
 * pass of strips), stride 1 and 2 (with and without the bottom / right padding's rows left unread),
 * every act class (none, relu, ReLU6, a clip with slope and offset, HardSwish after), with and
 * without bias, all planes in one call: the scalar convolution's sum then the table's act, bit
 * for bit (test_simd's test_dwconv3x3_matches_twin natively; here also WebAssembly's table). */
static void compare_dwconv3x3(const lithe__simd_kernels *k, bool specials) {
    static const int64_t hw[][3] = {{5, 4, 1}, {6, 7, 1}, {3, 9, 1}, {7, 13, 1}, {4, 30, 1}, {1, 8, 1}, {2, 5, 1},
                                    {8, 8, 2}, {14, 14, 2}, {9, 18, 2}, {12, 34, 2}, {15, 15, 2}, {6, 26, 2}};
    const lithe__act acts[] = {{.kind = LITHE__ACT_RELU},
                               {.kind = LITHE__ACT_CLIPPED_LINEAR, .slope = 1, .offset = 0, .min_val = 0, .max_val = 6},
                               {.kind = LITHE__ACT_CLIPPED_LINEAR, .slope = 0.5f, .offset = 0.25f, .min_val = -1, .max_val = 1},
                               {.kind = LITHE__ACT_HARD_SWISH_MOBILENET}};
    enum { C = 3 };
    if (!k->dwconv3x3) return;
    nan_any = specials;
    for (size_t i = 0; i < sizeof hw / sizeof hw[0]; i++) {
        int64_t H = hw[i][0], W = hw[i][1], s = hw[i][2];
        lithe__conv2d g = {.N = 1, .C = C, .H = H, .W = W, .M = C, .KH = 3, .KW = 3, .group = C, .stride = {s, s},
                           .pad = {1, 1, s == 1, s == 1}, .dil = {1, 1}};
        g.OH = (H + 1 + (s == 1) - 3) / s + 1, g.OW = (W + 1 + (s == 1) - 3) / s + 1;
        if (g.OW < k->dwconv3x3_min_width || (s == 1 && W < k->dwconv3x3_min_width)) continue;
        size_t nx = (size_t)(C * H * W), ny = (size_t)(C * g.OH * g.OW);
        float *x = malloc(nx * 4), w[C * 9], b[C], *ys = malloc(ny * 4), *yv = malloc(ny * 4);
        fill(x, (int64_t)nx, -4, 4), fill(w, C * 9, -1, 1), fill(b, C, -1, 1);
        if (specials) x[0] = -0.0f, x[nx / 3] = NAN, x[nx / 2] = INFINITY, x[nx - 1] = -INFINITY;
        for (size_t a = 0; a <= sizeof acts / sizeof acts[0]; a++)
            for (int bias = 0; bias < 2; bias++) {
                const lithe__act *act = a ? &acts[a - 1] : NULL;
                lithe_f32_conv2d__scalar(&g, x, w, bias ? b : NULL, ys);
                if (act) k->act(act, (int64_t)ny, ys, ys);
                memset(yv, 0x7f, ny * 4);
                k->dwconv3x3(C, H, W, s, g.OH, g.OW, x, yv, w, bias ? b : NULL, act);
                same_bits(k->isa, "dwconv3x3", (int64_t)ny, ys, yv);
            }
        free(x), free(ys), free(yv);
    }
}

int main(void) {
    const lithe__simd_kernels *tables[8];
    int ntables = lithe__simd_available(tables, 8);
    printf("simd_tables: tables:");
    for (int t = 0; t < ntables; t++) printf(" %s", tables[t]->isa);
    printf("\n");
    for (int t = 1; t < ntables; t++) {
        int before = failed;
        for (int sp = 0; sp < 2; sp++) {
            compare_table(tables[t], sp);
            compare_dwconv(tables[t], sp);
            compare_dwconv3x3(tables[t], sp);
            compare_maxpool(tables[t], sp);
        }
        compare_entries(tables[t]);
        printf("simd_tables: %s (%d lanes) against scalar: %s\n", tables[t]->isa, tables[t]->lanes,
               failed == before ? "ok" : "FAILED");
    }
    printf("simd_tables: largest relative difference in the bounded kernels: %.3g\n", worst_rel);
    if (ntables < 2) printf("simd_tables: no SIMD table in this build (nothing to compare)\n");
    printf("simd_tables: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
