/* The convolution backward's col2im adds (backward.c's dx_image) with AVX2 (compiled with -mavx2 on
 * x86-64 only; chosen at run time by backward.c where the GEMM kernel is the AVX2 one): c[i][j] +=
 * r[i][j], one rounded add per element, 8 lanes at a time, the row's last 1..7 lanes by a blend into
 * a full-width store that writes the lanes past `cols` back unchanged (the caller keeps rup(cols, 8)
 * floats of every row of c and r readable, and c's private to the thread). The GEMM's add_tile ends
 * each row with a masked load and store: LeNet's 14-wide rows spent half their adds in vmaskmovps,
 * whose store is slow on AMD cores (microcoded on Zen 2 and 3; ~6 % of the CNN training step). */
#include "conv.h"

#if defined(__x86_64__) && defined(__AVX2__)
#include <immintrin.h>

void lithe__conv_add_rows_avx2(size_t rows, size_t cols, float *c, size_t ldc, const float *r, size_t ldr) {
    const size_t full = cols & ~(size_t)7, rest = cols - full;
    const __m256i keep = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)rest), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    const __m256 m = _mm256_castsi256_ps(keep); /* lanes < rest: the sum; the others: c as it was */
    for (size_t i = 0; i < rows; i++) {
        float *ci = c + i * ldc;
        const float *ri = r + i * ldr;
        for (size_t j = 0; j < full; j += 8)
            _mm256_storeu_ps(ci + j, _mm256_add_ps(_mm256_loadu_ps(ci + j), _mm256_loadu_ps(ri + j)));
        if (rest) {
            __m256 x = _mm256_loadu_ps(ci + full);
            _mm256_storeu_ps(ci + full, _mm256_blendv_ps(x, _mm256_add_ps(x, _mm256_loadu_ps(ri + full)), m));
        }
    }
}

#elif defined(__x86_64__)
#error "backward_avx2.c must be compiled with -mavx2"
#endif
