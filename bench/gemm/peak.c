/* The single-core fp32 FMA peak of this machine, measured: 12 independent chains of fused
 * multiply-adds (enough to cover the FMA latency on every current x86 core) with AVX-512 and with
 * AVX2, best of 25 short rounds (the machine may be shared). bench/run.sh builds it with -O2 and uses the AVX-512 figure (the AVX2
 * one where the CPU lacks AVX-512) as the GEMM table's 100 %. Zen 4 double-pumps AVX-512 through
 * 256-bit units, so there both figures agree; Zen 5 and Intel cores with two 512-bit FMA ports
 * double it. Prints: peak_avx512_gflops=... peak_avx2_gflops=... */
#define _POSIX_C_SOURCE 200809L
#include <immintrin.h>
#include <stdio.h>
#include <time.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#define ITERS 2000000L

__attribute__((target("avx512f"))) static double run512(void) {
    __m512 m = _mm512_set1_ps(0.9999999f), c = _mm512_set1_ps(1e-7f);
    __m512 a0 = _mm512_set1_ps(0), a1 = _mm512_set1_ps(1), a2 = _mm512_set1_ps(2), a3 = _mm512_set1_ps(3), a4 = _mm512_set1_ps(4), a5 = _mm512_set1_ps(5),
           a6 = _mm512_set1_ps(6), a7 = _mm512_set1_ps(7), a8 = _mm512_set1_ps(8), a9 = _mm512_set1_ps(9), a10 = _mm512_set1_ps(10), a11 = _mm512_set1_ps(11);
    double t = now();
    for (long k = 0; k < ITERS; k++) {
        /* 12 independent chains in registers */
        a0 = _mm512_fmadd_ps(a0, m, c); a1 = _mm512_fmadd_ps(a1, m, c); a2 = _mm512_fmadd_ps(a2, m, c); a3 = _mm512_fmadd_ps(a3, m, c);
        a4 = _mm512_fmadd_ps(a4, m, c); a5 = _mm512_fmadd_ps(a5, m, c); a6 = _mm512_fmadd_ps(a6, m, c); a7 = _mm512_fmadd_ps(a7, m, c);
        a8 = _mm512_fmadd_ps(a8, m, c); a9 = _mm512_fmadd_ps(a9, m, c); a10 = _mm512_fmadd_ps(a10, m, c); a11 = _mm512_fmadd_ps(a11, m, c);
        __asm__ volatile("" : "+v"(a0), "+v"(a1), "+v"(a2), "+v"(a3), "+v"(a4), "+v"(a5));
    }
    t = now() - t;
    __m512 a[12] = {a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11};
    __m512 s = a[0];
    for (int i = 1; i < 12; i++) s = _mm512_add_ps(s, a[i]);
    volatile float sink = _mm512_reduce_add_ps(s);
    (void)sink;
    return 12.0 * 16 * 2 * ITERS / t * 1e-9;
}

__attribute__((target("avx2,fma"))) static double run256(void) {
    __m256 m = _mm256_set1_ps(0.9999999f), c = _mm256_set1_ps(1e-7f);
    __m256 a0 = _mm256_set1_ps(0), a1 = _mm256_set1_ps(1), a2 = _mm256_set1_ps(2), a3 = _mm256_set1_ps(3), a4 = _mm256_set1_ps(4), a5 = _mm256_set1_ps(5),
           a6 = _mm256_set1_ps(6), a7 = _mm256_set1_ps(7), a8 = _mm256_set1_ps(8), a9 = _mm256_set1_ps(9), a10 = _mm256_set1_ps(10), a11 = _mm256_set1_ps(11);
    double t = now();
    for (long k = 0; k < ITERS; k++) {
        /* 12 independent chains in registers */
        a0 = _mm256_fmadd_ps(a0, m, c); a1 = _mm256_fmadd_ps(a1, m, c); a2 = _mm256_fmadd_ps(a2, m, c); a3 = _mm256_fmadd_ps(a3, m, c);
        a4 = _mm256_fmadd_ps(a4, m, c); a5 = _mm256_fmadd_ps(a5, m, c); a6 = _mm256_fmadd_ps(a6, m, c); a7 = _mm256_fmadd_ps(a7, m, c);
        a8 = _mm256_fmadd_ps(a8, m, c); a9 = _mm256_fmadd_ps(a9, m, c); a10 = _mm256_fmadd_ps(a10, m, c); a11 = _mm256_fmadd_ps(a11, m, c);
        __asm__ volatile("" : "+v"(a0), "+v"(a1), "+v"(a2), "+v"(a3), "+v"(a4), "+v"(a5));
    }
    t = now() - t;
    __m256 a[12] = {a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11};
    __m256 s = a[0];
    for (int i = 1; i < 12; i++) s = _mm256_add_ps(s, a[i]);
    float v[8];
    _mm256_storeu_ps(v, s);
    volatile float sink = v[0] + v[7];
    (void)sink;
    return 12.0 * 8 * 2 * ITERS / t * 1e-9;
}

int main(void) {
    double p512 = 0, p256 = 0;
    __builtin_cpu_init();
    for (int r = 0; r < 25; r++) {
        if (__builtin_cpu_supports("avx512f")) {
            double g = run512();
            if (g > p512) p512 = g;
        }
        if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
            double g = run256();
            if (g > p256) p256 = g;
        }
    }
    printf("peak_avx512_gflops=%.1f peak_avx2_gflops=%.1f\n", p512, p256);
    return 0;
}
