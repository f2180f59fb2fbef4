/* The SIMD table's convolution-only kernels (dwconv_taps, dwconv3x3, copy_rows, split_rows, maxpool2x2_row /
 * _rows: only backends/cpu/conv/ calls them), reached through lithe__simd_conv().
 *
 * The npm package's one-thread SIMD128 cores (LITHE_IMPORTERS_SEPARATE) ship conv/ in the importer
 * module, linked when a model needs it (docs/wasm.md), so the core's table leaves these entries out
 * (simd/elem.c: 8 KB of the 400 KB core) and this file, built into the importer module
 * (LITHE_IMPORTER_MODULE), compiles them from the same simd/elem/ sources with the same flags: the
 * same code, the same bits. Its table is the core's with those entries filled in, made on the first
 * call (the module runs on one thread: the threads build keeps the importers and this table built in).
 * Every other build: lithe__simd() itself, whose table has them. */
#include "simd.h"

#if defined(LITHE_IMPORTER_MODULE) && defined(__wasm_simd128__) && !defined(LITHE_NO_SIMD)
#define LITHE_SIMD_ISA wasm_simd128_conv
#define LITHE_SIMD_BYTES 16
#include <math.h>
#include <string.h>

#include "vec.h"
#include "../../common/rows.h"
#define LITHE_SIMD_ACT1_ONLY /* act.h's act1; the whole-row activation is the core's table's */
#include "elem/act.h"
static void K(act)(const lithe__act *a, int64_t n, const float *X, float *Y) { lithe__simd()->act(a, n, X, Y); }
#include "elem/dwconv.h"
#include "elem/dwconv3x3.h"
#include "elem/maxpool.h"

static lithe__simd_kernels conv_table;
const lithe__simd_kernels *lithe__simd_conv(void) {
    if (!conv_table.isa) {
        lithe__simd_kernels t = *lithe__simd();
        t.dwconv_taps = K(dwconv_taps);
        t.copy_rows = K(copy_rows);
        t.split_rows = K(split_rows);
        t.dwconv3x3 = K(dwconv3x3);
        t.dwconv3x3_min_width = 4;
        t.maxpool2x2_row = K(maxpool2x2_row);
        t.maxpool2x2_rows = K(maxpool2x2_rows);
        conv_table = t;
    }
    return &conv_table;
}
#else
const lithe__simd_kernels *lithe__simd_conv(void) { return lithe__simd(); }
#endif
