/* OpenBLAS cblas_sgemm at C(M,N) = A(M,K) . B(N,K)^T (row-major; the fully-connected layout),
 * the peer of `lithe bench --gemm` (bench/run.sh builds it). OpenBLAS picks its kernel at load
 * time: run it with OPENBLAS_CORETYPE=SkylakeX to force the AVX-512 one (the script does).
 *   gemm_openblas M N K THREADS [--quick] */
#include "timing.h"

#include <cblas.h>

typedef struct { const float *A, *B; float *C; int M, N, K; } ctx;

static void run(void *p) {
    ctx *c = p;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, c->M, c->N, c->K, 1.0f, c->A, c->K, c->B, c->K, 0.0f, c->C, c->N);
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: gemm_openblas M N K THREADS [--quick]\n");
        return 2;
    }
    int M = atoi(argv[1]), N = atoi(argv[2]), K = atoi(argv[3]), threads = atoi(argv[4]);
    int quick = argc > 5 && !strcmp(argv[5], "--quick");
    openblas_set_num_threads(threads);
    float *A = malloc(sizeof(float) * (size_t)M * K), *B = malloc(sizeof(float) * (size_t)N * K),
          *C = malloc(sizeof(float) * (size_t)M * N);
    if (!A || !B || !C) return 1;
    bench_fill(A, (size_t)M * K, 1);
    bench_fill(B, (size_t)N * K, 2);
    ctx c = {A, B, C, M, N, K};
    printf("gemm=%dx%dx%d layout=NT library=openblas kernel=%s threads=%d ", M, N, K, openblas_get_corename(), threads);
    bench_measure(run, &c, quick, 2.0 * M * N * K);
    printf("max_rel_err=%.2e\n", bench_check(A, B, C, M, N, K));
    free(A);
    free(B);
    free(C);
    return 0;
}
