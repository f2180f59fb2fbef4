/* The benchmark protocol of bench/README.md, shared by the peer GEMM programs (header-only):
 * warm-up until >= 5 runs and >= 1 s, then timed runs until >= 30 runs and >= 1.5 s (<= 2000),
 * each run timed alone; prints lithe bench's key=value format. */
#ifndef BENCH_TIMING_H
#define BENCH_TIMING_H
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double bench_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int bench_cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Times fn(ctx); quick (argv "--quick") does 1 warm-up and 3 timed runs. */
static void bench_measure(void (*fn)(void *), void *ctx, int quick, double flop) {
    double warm_s = quick ? 0 : 1.0, min_s = quick ? 0 : 1.5;
    long warm_runs = quick ? 1 : 5, min_runs = quick ? 3 : 30, max_runs = 2000, w = 0, n = 0;
    double t0 = bench_now(), sum = 0;
    while (w < warm_runs || bench_now() - t0 < warm_s) {
        fn(ctx);
        w++;
    }
    double *t = malloc((size_t)max_runs * sizeof *t), start = bench_now();
    if (!t) exit(1);
    while (n < max_runs && (n < min_runs || bench_now() - start < min_s)) {
        double a = bench_now();
        fn(ctx);
        t[n] = bench_now() - a;
        sum += t[n++];
    }
    qsort(t, (size_t)n, sizeof *t, bench_cmp);
    double med = n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
    printf("median_ms=%.4f min_ms=%.4f max_ms=%.4f mean_ms=%.4f runs=%ld warmup_runs=%ld gflops=%.3f\n", med * 1e3,
           t[0] * 1e3, t[n - 1] * 1e3, sum / (double)n * 1e3, n, w, flop / med * 1e-9);
    free(t);
}

/* Uniform [-1, 1) from a 64-bit LCG: the inputs (their values do not change the time). */
static void bench_fill(float *v, size_t n, unsigned long long seed) {
    for (size_t i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        v[i] = (float)((seed >> 40) & 0xffffff) / 8388608.0f - 1.0f;
    }
}

/* max |C - A.B^T| relative to max |C| over a sample of entries, in double */
static double bench_check(const float *A, const float *B, const float *C, long M, long N, long K) {
    double err = 0, mag = 1e-30;
    for (long s = 0; s < 97; s++) {
        long i = (s * 7919) % M, j = (s * 104729) % N;
        double ref = 0;
        for (long k = 0; k < K; k++) ref += (double)A[i * K + k] * (double)B[j * K + k];
        double d = ref - C[i * N + j];
        if (d < 0) d = -d;
        if (d > err) err = d;
        if ((ref < 0 ? -ref : ref) > mag) mag = ref < 0 ? -ref : ref;
    }
    return err / mag;
}
#endif
