/* CPU kernels on raw pointers, named by lithe's formula:
 *   lithe_<dtype>_<op>[_ukernel_<MR>x<NR>]__<isa>
 * Every kernel has a scalar twin (__scalar) that tests use as the oracle; SIMD variants slot in
 * beside it and are chosen when the backend table is built. */
#ifndef LITHE_CPU_KERNELS_H
#define LITHE_CPU_KERNELS_H

#include "../../core/backend.h"

/* The CPU backend's one instance (registered as lithe__backend_cpu_desc; core reaches it through
 * the registry, lithe__backend_host) and its caching allocator's flush (cache.c). */
lithe_backend *lithe__backend_cpu(void);
void lithe__cpu_cache_flush(void);

/* SGEMM (and the fused gemm_bias_act) lives in gemm/gemm.h: a packed, cache-blocked driver
 * around one register-tiled microkernel per ISA (lithe_f32_gemm_ukernel_MRxNR__<isa>: scalar
 * 4x8, AVX2 6x16, AVX-512 2, 4, 8, 12 or 14 x 32 by M), chosen at run time (LITHE_CPU_ISA forces one). */

/* The backend table's GEMM entries (cpu_gemm.c; backend.h gives their contracts). */
lithe_status lithe__cpu_gemm(lithe_backend *be, bool tA, bool tB, float alpha, const lithe_tensor *A,
                             const lithe_tensor *B, float beta, lithe_tensor *C);
lithe_status lithe__cpu_gemm_batched(lithe_backend *be, bool tA, bool tB, int64_t P, float alpha, const lithe_tensor *A,
                                     int64_t sa, const lithe_tensor *B, int64_t sb, float beta0, float beta,
                                     lithe_tensor *C, int64_t sc);
lithe_status lithe__cpu_gemm_bias_act(lithe_backend *be, bool tA, bool tB, const lithe_tensor *A,
                                      const lithe_tensor *B, const lithe_tensor *b, const lithe__act *a,
                                      lithe_tensor *Z, lithe_tensor *Y);
lithe_status lithe__cpu_gemm_q8(lithe_backend *be, const lithe_tensor *A, const lithe_tensor *W, const lithe_tensor *b,
                                const lithe__act *a, lithe_tensor *Z, lithe_tensor *Y);
lithe_status lithe__cpu_gemm_q8x(lithe_backend *be, const lithe_tensor *X, float xs, int32_t xz, int32_t xmin,
                                 int32_t xmax, const lithe_tensor *W, const lithe_tensor *b, const lithe__act *a,
                                 lithe_tensor *Y, bool *done);
lithe_status lithe__cpu_prepare_b(lithe_backend *be, bool tB, const lithe_tensor *B, void **out, size_t *bytes);
void lithe__cpu_prepared_free(lithe_backend *be, void *p);
lithe_status lithe__cpu_gemm_prepared(lithe_backend *be, bool tA, bool tB, float alpha, const lithe_tensor *A,
                                      const lithe_tensor *B, const void *P, float beta, lithe_tensor *C,
                                      const lithe_tensor *b, const lithe__act *a, lithe_tensor *Z);

void lithe_f32_add_row__scalar(int64_t M, int64_t N, float *Y, const float *b);
void lithe_f32_sum_rows__scalar(int64_t M, int64_t N, const float *X, float beta, float *y);
void lithe_f32_axpby__scalar(int64_t n, float alpha, const float *X, float beta, float *Y);
void lithe_f32_mul__scalar(int64_t n, const float *A, const float *B, float *Y);
double lithe_f32_sum_squares__scalar(int64_t n, const float *X);
int lithe_f32_any_outside__scalar(int64_t n, const float *X, float lo, float hi);

void lithe_f32_act__scalar(const lithe__act *a, int64_t n, const float *X, float *Y);
void lithe_f32_act_backward__scalar(const lithe__act *a, int64_t n, const float *dY, const float *X,
                                    const float *Y, float *dX);

void lithe_f32_softmax__scalar(int64_t M, int64_t N, const float *X, float temperature, float *Y);
void lithe_f32_softmax_backward__scalar(int64_t M, int64_t N, const float *Y, const float *dY,
                                        float temperature, float *dX);

void lithe_f32_dropout_mask__scalar(uint64_t key, uint64_t counter, float rate, int64_t n, float *Y);
void lithe_f32_adam__scalar(int64_t n, float *W, const float *G, float *m1, float *m2, float beta1,
                            float beta2, float eps, float lr);
void lithe_f32_radam__scalar(int64_t n, float *W, const float *G, float *m1, float *m2, float beta1, float omb1,
                             float beta2, float omb2, float eps, float coef, bool rectified);
void lithe_f32_update_averages__scalar(int64_t n, float *ema, const float *W, float decay);
/* primitives.def's adam_step: avg NULL skips the averages. */
void lithe_f32_adam_step__scalar(int64_t n, float *W, float *G, float *m1, float *m2, float *avg, float gscale,
                                 float beta1, float beta2, float eps, float lr, float wscale, float decay);
/* labels: int32 when labels64 is NULL, else int64. */
void lithe_f32_cce_labels__scalar(int64_t B, int64_t C, const float *G, const int32_t *labels32,
                                  const int64_t *labels64, float smoothing, bool has_missing,
                                  int64_t missing, float divisor, float *D);

void lithe_f32_maxout__scalar(int64_t B, int64_t O, int64_t P, const float *X, float *Y, int32_t *which);
void lithe_f32_maxout_backward__scalar(int64_t B, int64_t O, int64_t P, const float *dY,
                                       const int32_t *which, float *dX);
void lithe_f32_layernorm__scalar(int64_t M, int64_t N, const float *X, const float *G, const float *b,
                                 float eps, float *Y, float *mean, float *inv_std);
void lithe_f32_layernorm_backward__scalar(int64_t M, int64_t N, const float *dY, const float *X,
                                          const float *G, const float *mean, const float *inv_std,
                                          float *dX, float *dG, float *db);
/* ids: exactly one of ids32 / ids64 (int64 or uint64 bits) is non-NULL. */
void lithe_f32_gather_rows__scalar(int64_t B, int64_t N, const float *table, const int32_t *ids32,
                                   const uint64_t *ids64, float *Y);
void lithe_f32_scatter_add_rows__scalar(int64_t B, int64_t N, float *table, const int32_t *ids32,
                                        const uint64_t *ids64, const float *X);
/* Sequence kernels (scalar/seq.c): Ragged reductions and seq2col, lengths (B,) int32. */
void lithe_f32_reduce_sum__scalar(int64_t B, int64_t O, const int32_t *lengths, const float *X, bool mean, float *Y);
void lithe_f32_reduce_sum_backward__scalar(int64_t B, int64_t O, const int32_t *lengths, const float *dY, bool mean,
                                           float *dX);
void lithe_f32_reduce_max__scalar(int64_t B, int64_t O, const int32_t *lengths, const float *X, float *Y,
                                  int32_t *which);
void lithe_f32_reduce_max_backward__scalar(int64_t B, int64_t O, const int32_t *lengths, const float *dY,
                                           const int32_t *which, float *dX);
void lithe_f32_seq2col__scalar(int64_t B, int64_t I, int64_t nW, const int32_t *lengths, const float *X, float *Y);
void lithe_f32_seq2col_backward__scalar(int64_t B, int64_t I, int64_t nW, const int32_t *lengths, const float *dY,
                                        float *dX);
void lithe_u64_hash_ids__scalar(int64_t B, const uint64_t *ids, uint32_t seed, uint32_t *out);

/* Sparse and string kernels (scalar/sparse.c): MurmurHash3 x86_32, Thinc's SparseLinear. */
uint32_t lithe_murmur3_x86_32__scalar(const uint8_t *data, size_t len, uint32_t seed);
uint32_t lithe_murmur3_x86_32_u64__scalar(uint64_t key, uint32_t seed);
void lithe_f32_sparse_linear__scalar(int64_t B, int64_t nO, const int32_t *lengths, const uint64_t *keys,
                                     const float *values, const float *W, int64_t length, bool v1, float *Y);
void lithe_f32_sparse_linear_backward__scalar(int64_t B, int64_t nO, const int32_t *lengths, const uint64_t *keys,
                                              const float *values, const float *dY, int64_t length, bool v1,
                                              float *dW);
void lithe_u64_hash_strings__scalar(int64_t n, const uint8_t *bytes, const int64_t *offsets, uint32_t seed,
                                    uint64_t *out);

/* Conversions between f32 and the storage / id dtypes. */
void lithe_cast__scalar(lithe_dtype to, void *Y, lithe_dtype from, const void *X, int64_t n);

/* Recurrent, attention and similarity kernels (scalar/lstm.c); semantics in primitives.def.
 * start (T,) is the kernels' scratch for the timesteps' row starts. */
void lithe_f32_lstm_scan__scalar(int64_t T, int64_t H, const int32_t *size_at_t, int64_t *start, const float *Wh,
                                 const float *bx, const float *bh, const float *h0, const float *c0, bool reverse,
                                 float *G, float *C, float *Y);
void lithe_f32_lstm_scan_backward__scalar(int64_t T, int64_t H, const int32_t *size_at_t, int64_t *start,
                                          const float *Wh, const float *h0, const float *c0, bool reverse,
                                          const float *G, const float *C, const float *Y, float *dY, float *dC,
                                          float *dG, float *dWh);
void lithe_f32_para_attention__scalar(int64_t B, int64_t O, const int32_t *lengths, const float *X, const float *Q,
                                      float *A, float *Y);
void lithe_f32_para_attention_backward__scalar(int64_t B, int64_t O, const int32_t *lengths, const float *X,
                                               const float *Q, const float *A, const float *dY, float *dX,
                                               float *dQ);
void lithe_f32_cauchy_similarity__scalar(int64_t B, int64_t I, const float *X1, const float *X2, const float *W,
                                         float *sim);
void lithe_f32_cauchy_similarity_backward__scalar(int64_t B, int64_t I, const float *X1, const float *X2,
                                                  const float *W, const float *sim, const float *dsim, float *dX1,
                                                  float *dX2, float *dW);

/* Imported-graph kernels (scalar/graph.c). Broadcast operands come with strides in the output's
 * (reduce_to: the input's) index space, 0 along broadcast axes; backward kernels accumulate. */
void lithe_f32_bcast_binary__scalar(int op, int nd, const int64_t *shape, const float *A, const int64_t *as,
                                    const float *B, const int64_t *bs, float *Y);
void lithe_f32_bcast_binary_backward__scalar(int op, int nd, const int64_t *shape, const float *A, const int64_t *as,
                                             const float *B, const int64_t *bs, const float *Y, const float *dY,
                                             float *dA, float *dB);
void lithe_f32_bcast_where__scalar(int nd, const int64_t *shape, const float *C, const int64_t *cs, const float *A,
                                   const int64_t *as, const float *B, const int64_t *bs, float *Y);
void lithe_f32_broadcast_to__scalar(int nd, const int64_t *shape, const float *X, const int64_t *xs, float alpha,
                                    float beta, float *Y);
void lithe_f32_reduce_to__scalar(int nd, const int64_t *xshape, const float *X, int64_t ny, const int64_t *ys,
                                 float alpha, float beta, float *Y);
void lithe_f32_unary__scalar(int op, int64_t n, const float *X, float *Y);
void lithe_f32_unary_backward__scalar(int op, int64_t n, const float *X, const float *Y, const float *dY, float *dX);
void lithe_f32_log_softmax__scalar(int64_t M, int64_t N, const float *X, float *Y);
void lithe_f32_log_softmax_backward__scalar(int64_t M, int64_t N, const float *Y, const float *dY, float *dX);
void lithe_f32_conv2d__scalar(const lithe__conv2d *g, const float *X, const float *W, const float *b, float *Y);
void lithe_f32_conv2d_backward__scalar(const lithe__conv2d *g, const float *X, const float *W, const float *dY,
                                       float *dX, float *dW, float *db);
void lithe_f32_pool2d__scalar(const lithe__pool2d *g, const float *X, float *Y, int32_t *which);
void lithe_f32_pool2d_backward__scalar(const lithe__pool2d *g, const float *dY, const int32_t *which, float *dX);

/* LITHE_XNNPACK builds (backends/cpu/xnnpack.c): the CPU backend's prepared ops (internal.h's
 * prepare_op, prepared_op_free, run_prepared_op) through XNNPACK's operators, where they measured
 * faster than lithe's kernels. */
#ifdef LITHE_XNNPACK
lithe_status lithe__xnn_prepare_op(lithe_backend *be, const lithe__prep_op *op, const lithe_tensor *W,
                                   const lithe_tensor *bias, void **out, size_t *bytes);
void lithe__xnn_prepared_op_free(lithe_backend *be, void *p);
lithe_status lithe__xnn_run_prepared_op(lithe_backend *be, const void *P, const lithe__prep_op *op, const lithe_tensor *X,
                                        lithe_tensor *Y, bool *done);
/* Ops run through XNNPACK so far (not thread-safe; for tests). */
extern size_t lithe__xnn_runs;
/* x (N, R, Cc) -> y (N, Cc, R), in 16x16 tiles: lithe's NCHW to XNNPACK's NHWC (R = C, Cc = H·W)
 * and back (R = H·W, Cc = C) around an NHWC operator; bench/xnnpack/ops.c times the same. */
void lithe__xnn_transpose_planes(const float *x, float *y, int64_t N, int64_t R, int64_t Cc);
#endif

#endif
