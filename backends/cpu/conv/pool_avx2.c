/* GlobalAveragePool's eight planes with AVX2 (compiled with -mavx2 on x86-64 only; chosen at run time
 * by pool.c): the planes in the lanes. Eight runs of eight floats, one from each plane, are
 * transposed in registers, so each lane adds its plane's floats one at a time in order from 0.0f:
 * the twin's chain (lithe_f32_pool2d__scalar's sum over kh, kw), then its division, bit for bit.
 * The portable loop read the eight planes a float at a time (about 4.7 instructions per float). */
#include "pointwise.h"

#if defined(__x86_64__) && defined(__AVX2__)
#include <immintrin.h>

#include "../simd/avx2_transpose.h"

void lithe__pool_gap8_avx2(const float *x, int64_t HW, float div, float *y, int64_t ys) {
    __m256 acc = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= HW; i += 8) {
        __m256 r[8];
        for (int l = 0; l < 8; l++) r[l] = _mm256_loadu_ps(x + l * HW + i);
        lithe__avx2_transpose8(r);
        for (int j = 0; j < 8; j++) acc = _mm256_add_ps(acc, r[j]);
    }
    for (; i < HW; i++)
        acc = _mm256_add_ps(acc, _mm256_setr_ps(x[i], x[HW + i], x[2 * HW + i], x[3 * HW + i], x[4 * HW + i],
                                                x[5 * HW + i], x[6 * HW + i], x[7 * HW + i]));
    float out[8];
    _mm256_storeu_ps(out, _mm256_div_ps(acc, _mm256_set1_ps(div)));
    for (int l = 0; l < 8; l++) y[l * ys] = out[l];
}

#elif defined(__x86_64__)
#error "pool_avx2.c must be compiled with -mavx2"
#endif
