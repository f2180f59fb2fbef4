/* Vectorised kernels, one source for every ISA (see simd.h for what is exact and what is bounded).
 * CMake compiles this file once per ISA with LITHE_SIMD_ISA (the suffix) and LITHE_SIMD_BYTES (the
 * vector width) defined and that ISA's flags (-mavx512f ..., -mavx2 -mfma, -msimd128); the
 * arithmetic is GCC/clang vector extensions, so the same expressions run on every ISA. No FMA
 * contraction (-ffp-contract=off is global): the vector and scalar kernels round alike.
 *
 * Tails: an elementwise kernel loads the last partial vector into a zero-padded buffer and runs the
 * same vector code on it, so an element's result never depends on where a range starts or ends —
 * which keeps the thread split (elem.c) bit-identical for any thread count. */
#include "simd.h"

#include <math.h>
#include <string.h>

#include "vec.h"
#include "../../common/rows.h"

/* The kernels by family, in this order (later families use earlier ones: act1 in the depthwise
 * kernels). */
#include "elem/act.h"
#include "elem/arith.h"
#include "elem/optim.h"
#include "elem/rows.h"
#include "elem/unary.h"
/* The convolution-only kernels: not in the npm package's one-thread SIMD128 cores, whose importer
 * module compiles them (simd/conv_kernels.c: conv/ reaches them through lithe__simd_conv()). */
#if !(defined(LITHE_IMPORTERS_SEPARATE) && defined(__wasm_simd128__))
#define LITHE_SIMD_CONV_KERNELS 1
#include "elem/dwconv.h"
#include "elem/dwconv_lanes.h"
#include "elem/dwconv3x3.h"
#include "elem/dwconv_bwd.h"
#include "elem/maxpool.h"
#endif

const lithe__simd_kernels TABLE = {
    .isa = STR(LITHE_SIMD_ISA),
    .lanes = VW,
    .act = K(act),
    .act_backward = K(act_backward),
    .add_row = K(add_row),
    .sum_rows = K(sum_rows),
    .axpby = K(axpby),
    .mul = K(mul),
    .sum_squares = K(sum_squares),
    .adam = K(adam),
    .radam = K(radam),
    .update_averages = K(update_averages),
    .adam_step = K(adam_step),
    .softmax = K(softmax),
    .softmax_backward = K(softmax_backward),
    .log_softmax = K(log_softmax),
    .log_softmax_backward = K(log_softmax_backward),
    .layernorm = K(layernorm),
    .layernorm_backward_dx = K(layernorm_backward_dx),
    .layernorm_backward_dgb = K(layernorm_backward_dgb),
    .scatter_add_rows = K(scatter_add_rows),
    .unary = K(unary),
    .unary_backward = K(unary_backward),
    .maxout = K(maxout),
#if LITHE_SIMD_CONV_KERNELS
    .dwconv_taps = K(dwconv_taps),
    .copy_rows = K(copy_rows),
    .split_rows = K(split_rows),
#endif
#if VW >= 8 && LITHE_SIMD_CONV_KERNELS
    .dwconv_lanes = K(dwconv_lanes),
    .dwconv3x3 = K(dwconv3x3),
    .dwconv_backward_lanes = K(dwconv_backward_lanes),
#if VW == 16 && defined(__AVX512F__)
    .dwconv3x3_min_width = 1,
#else
    .dwconv3x3_min_width = 8,
#endif
#endif
#if VW == 4 && defined(__wasm_simd128__) && LITHE_SIMD_CONV_KERNELS
    .dwconv3x3 = K(dwconv3x3),
    .dwconv3x3_min_width = 4,
#endif
#if LITHE_SIMD_CONV_KERNELS
    .maxpool2x2_row = K(maxpool2x2_row),
    .maxpool2x2_rows = K(maxpool2x2_rows),
#endif
    .binary = K(binary),
};
