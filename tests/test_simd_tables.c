/* Every SIMD kernel table this build runs (backends/cpu/simd/simd.h: SSE2, AVX2, AVX-512 on x86-64,
 * NEON on aarch64, WebAssembly SIMD128 in -msimd128 builds) against the scalar table, entry by
 * entry: simd_tables.h's checks (the ones test_simd runs too), with its oracles and tolerances —
 * activations and their backwards, axpby, mul, binary, sum_squares, Adam / RAdam / averages and
 * the fused adam_step, unary ops and backwards, maxout, add_row, sum_rows, softmax, log_softmax,
 * layernorm forward and backward, scatter-add, the depthwise long rows (dwconv_taps, copy_rows,
 * split_rows), 2x2 max pooling rows, then the CPU backend's entries on one thread (gather_rows,
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
