/* XNNPACK's fully-connected f32 operator (Debian's libxnnpack-dev) as a GEMM: Y(M,N) = X(M,K) .
 * W(N,K)^T with no bias and no clamp, the weights packed once when the operator is created (not
 * timed, as a framework would at model load); each run is setup + run. The peer of `lithe bench
 * --gemm` (bench/run.sh builds it).
 *   gemm_xnnpack M N K THREADS [--quick]   (THREADS 1: no thread pool) */
#include "timing.h"

#include <math.h>
#include <pthreadpool.h>
#include <xnnpack.h>

typedef struct { xnn_operator_t op; pthreadpool_t pool; const float *X; float *Y; size_t M; } ctx;

static void run(void *p) {
    ctx *c = p;
    if (xnn_setup_fully_connected_nc_f32(c->op, c->M, c->X, c->Y, c->pool) != xnn_status_success ||
        xnn_run_operator(c->op, c->pool) != xnn_status_success) {
        fprintf(stderr, "gemm_xnnpack: run failed\n");
        exit(1);
    }
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: gemm_xnnpack M N K THREADS [--quick]\n");
        return 2;
    }
    int M = atoi(argv[1]), N = atoi(argv[2]), K = atoi(argv[3]), threads = atoi(argv[4]);
    int quick = argc > 5 && !strcmp(argv[5], "--quick");
    if (xnn_initialize(NULL) != xnn_status_success) {
        fprintf(stderr, "gemm_xnnpack: xnn_initialize failed (CPU not supported?)\n");
        return 1;
    }
    float *X = malloc(sizeof(float) * (size_t)M * K), *W = malloc(sizeof(float) * (size_t)N * K),
          *Y = malloc(sizeof(float) * (size_t)M * N);
    if (!X || !W || !Y) return 1;
    bench_fill(X, (size_t)M * K, 1);
    bench_fill(W, (size_t)N * K, 2);
    ctx c = {NULL, threads > 1 ? pthreadpool_create((size_t)threads) : NULL, X, Y, (size_t)M};
    if (xnn_create_fully_connected_nc_f32((size_t)K, (size_t)N, (size_t)K, (size_t)N, W, NULL, -INFINITY, INFINITY, 0,
                                          &c.op) != xnn_status_success) {
        fprintf(stderr, "gemm_xnnpack: cannot create the operator\n");
        return 1;
    }
    printf("gemm=%dx%dx%d layout=NT library=xnnpack threads=%d ", M, N, K, threads);
    bench_measure(run, &c, quick, 2.0 * M * N * K);
    printf("max_rel_err=%.2e\n", bench_check(X, W, Y, M, N, K));
    xnn_delete_operator(c.op);
    if (c.pool) pthreadpool_destroy(c.pool);
    free(X);
    free(W);
    free(Y);
    return 0;
}
