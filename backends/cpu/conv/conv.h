/* What the CPU backend's convolution files share (backends/cpu/conv/: gemm.c, depthwise.c, pool.c, and
 * simd/conv_wasm_simd128.c): tensor views over host arrays, the geometry tests, the GEMM path's job and
 * shifted-rows workspace. Functions shared across the files are lithe__conv_* in the library. */
#ifndef LITHE_CPU_CONV_H
#define LITHE_CPU_CONV_H

#include "../gemm/gemm.h"
#include "../simd/simd.h"
#include "../threadpool.h"

#include <math.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>

#define depthwise_forward lithe__conv_depthwise_forward
#define depthwise_backward lithe__conv_depthwise_backward
#define shifted_init lithe__conv_shifted_init
#define shifted_fill lithe__conv_shifted_fill
#define wdc_applies lithe__conv_wdc_applies
#define wdc_images lithe__conv_wdc_images

typedef struct gemm_job {
    lithe_backend *be;
    const lithe__conv2d *g;
    const float *X, *W, *b;
    const lithe__act *a;
    float *Y;
    const lithe__sgemm_packed_b *Wp; /* W (M, K) packed ahead as op(B) = Wᵀ (group 1), or NULL */
    _Atomic int status; /* the first failure (LITHE_OK: none) */
    bool pr;            /* pixel rows (pixel_rows, decided once per call: it reads the environment) */
    const float *R;     /* lithe__cpu_conv2d_add's residual (Y's shape), or NULL */
    bool res_first;     /* R + conv (else conv + R) */
} gemm_job;

/* The shifted-rows workspace of one range: the taps' row pointers and the phase planes xq; for
 * filter rows read in place (lithe__sgemm_rows_direct, `direct`), DIRECT_SLACK zeros after xq (a
 * sliver's dropped lanes read up to NR - 1 floats past a tap's last pixel) and rows[K] = ones, a
 * plane of 1s as wide as any sliver reads (the bias step's B row). */
typedef struct shifted_ws {
    const float **rows; /* K (+ 1: ones) */
    float *xq;          /* Cg·s0·s1·Hq·Wq */
    float *ones;        /* direct: Hq·Wq + DIRECT_SLACK */
    int64_t Hq, Wq;
} shifted_ws;
enum { DIRECT_SLACK = 64 }; /* >= NR - 1 of every kernel */

static inline void view2(lithe_tensor *t, lithe__storage *st, const float *p, int64_t r, int64_t c) {
    memset(st, 0, sizeof *st);
    memset(t, 0, sizeof *t);
    st->refcount = 1;
    st->data = (void *)p;
    st->nbytes = (size_t)(r * c) * sizeof(float);
    st->backend = lithe__backend_cpu();
    t->refcount = 1;
    t->storage = st;
    t->dtype = LITHE_F32;
    t->ndim = 2;
    t->shape[0] = r;
    t->shape[1] = c;
    t->strides[0] = c;
    t->strides[1] = 1;
    t->numel = r * c;
}

/* C (M, N) = alpha op(A) op(B) + beta C on contiguous row-major host arrays, through be's gemm. */
static inline lithe_status gemm(lithe_backend *be, bool tA, bool tB, int64_t M, int64_t N, int64_t K, const float *A,
                                const float *B, float beta, float *C) {
    lithe_tensor ta, tb, tc;
    lithe__storage sa, sb, sc;
    view2(&ta, &sa, A, tA ? K : M, tA ? M : K);
    view2(&tb, &sb, B, tB ? N : K, tB ? K : N);
    view2(&tc, &sc, C, M, N);
    return be->ops->gemm(be, tA, tB, 1.0f, &ta, &tb, beta, &tc);
}

static inline bool is_depthwise(const lithe__conv2d *g) { return g->group == g->C && g->group == g->M; }

static inline bool is_pointwise(const lithe__conv2d *g) {
    return g->KH == 1 && g->KW == 1 && g->stride[0] == 1 && g->stride[1] == 1 && !g->pad[0] && !g->pad[1] &&
           !g->pad[2] && !g->pad[3];
}

/* The output columns [lo, hi) whose input column o*s - p + k*d lies inside [0, W). */
static inline void valid_range(int64_t OW, int64_t W, int64_t s, int64_t p, int64_t k, int64_t d, int64_t *lo, int64_t *hi) {
    int64_t off = k * d - p; /* input column = o * s + off */
    int64_t a = off >= 0 ? 0 : (-off + s - 1) / s;
    int64_t b = W - off <= 0 ? 0 : (W - off + s - 1) / s; /* first o with o*s + off >= W */
    *lo = a < OW ? a : OW;
    *hi = b < OW ? b : OW;
    if (*hi < *lo) *hi = *lo;
}

static inline lithe_status workspace(lithe_backend *be, size_t n, float **out) {
    void *p = NULL;
    LITHE__TRY(be->ops->alloc(be, n * sizeof(float), &p));
    *out = p;
    return LITHE_OK;
}

/* The phase planes of a zero-bordered image-group (Hp x Wp padded): stride (s0, s1) splits it
 * into s0·s1 planes of Hq x Wq, plane (a, b) holding padded pixel (i·s0 + a, j·s1 + b) at (i, j).
 * Tap (kh, kw) of output (oh, ow) reads padded pixel (oh·s0 + kh·d0, ow·s1 + kw·d1): plane
 * (kh·d0 mod s0, kw·d1 mod s1) at (oh + kh·d0 div s0, ow + kw·d1 div s1), a stride-1 shift. With
 * output (oh, ow) at column oh·Wq + ow, every tap's B row is one contiguous run of a plane. */
static inline void phase_dims(const lithe__conv2d *g, int64_t *Hq, int64_t *Wq) {
    int64_t Hp = g->H + g->pad[0] + g->pad[2], Wp = g->W + g->pad[1] + g->pad[3];
    *Hq = (Hp + g->stride[0] - 1) / g->stride[0];
    *Wq = (Wp + g->stride[1] - 1) / g->stride[1];
}

static inline bool is_shifted(const lithe__conv2d *g) {
    int64_t Hq, Wq;
    phase_dims(g, &Hq, &Wq);
    return !is_pointwise(g) && Wq - g->OW <= g->OW;
}

static inline void shifted_sizes(const lithe__conv2d *g, int64_t Cg, int64_t K, bool direct, size_t *ptrs, size_t *xq,
                                 size_t *ones) {
    int64_t Hq, Wq;
    phase_dims(g, &Hq, &Wq);
    *ptrs = ((size_t)(K + 1) * sizeof(float *) + 63) / 64 * 16; /* in floats, 64-byte multiple */
    *xq = ((size_t)(Cg * g->stride[0] * g->stride[1] * Hq * Wq) + (direct ? DIRECT_SLACK : 0) + 15) / 16 * 16;
    *ones = direct ? ((size_t)(Hq * Wq) + DIRECT_SLACK + 15) / 16 * 16 : 0;
}

static inline size_t shifted_floats(const lithe__conv2d *g, int64_t Cg, int64_t K, bool direct) {
    size_t ptrs, xq, ones;
    shifted_sizes(g, Cg, K, direct, &ptrs, &xq, &ones);
    return ptrs + xq + ones;
}

/* depthwise.c */
void depthwise_forward(lithe_backend *be, const lithe__conv2d *g, const float *X, const float *W,
                       const float *b, const lithe__act *a, float *Y);
void depthwise_backward(const lithe__conv2d *g, const float *X, const float *W, const float *dY, float *dX,
                        float *dW, float *db);
/* gemm.c */
void shifted_init(const lithe__conv2d *g, int64_t Cg, int64_t K, bool direct, float *buf, shifted_ws *w);
void shifted_fill(const lithe__conv2d *g, const shifted_ws *w, int64_t Cg, const float *x);
/* backward.c: the backward through the shifted rows, no col matrix (where *_taps_dw / *_taps_dx hold) */
bool lithe__conv_bwd_taps_dw(const lithe__conv2d *g);
bool lithe__conv_bwd_taps_dx(const lithe__conv2d *g);
lithe_status lithe__conv_bwd_taps_dw_run(lithe_backend *be, const lithe__conv2d *g, const float *X, const float *dY,
                                         float *dW, float *db);
float lithe__conv_row_sum(const float *x, int64_t n); /* gemm.c: db's sum of one output plane */
lithe_status lithe__conv_bwd_taps_dx_run(lithe_backend *be, const lithe__conv2d *g, const float *W, const float *dY,
                                         float *dX);
#if (defined(__x86_64__) || defined(_M_X64)) && !defined(__wasm__)
/* backward_avx2.c: dx_image's col2im adds, rup(cols, 8) floats of each row touched (the rest unchanged) */
void lithe__conv_add_rows_avx2(size_t rows, size_t cols, float *c, size_t ldc, const float *r, size_t ldr);
/* backward_avx512.c: dx_image's col2im adds in registers, channels [c0, c1) of one image-group's dx
 * from a ring of R dcol rows (tap t's flattened output plane at ring + (t % R)·ldt), which must be -0
 * on the output rows above and below the plane that dx's rows reach and REACH + 16 floats beyond
 * (backward.c's ring_of); for (KW - 1)·dil[1] <= REACH */
enum { LITHE__CONV_ADD_TAPS_REACH = 48 };
void lithe__conv_add_taps_avx512(const lithe__conv2d *g, int64_t c0, int64_t c1, const float *ring, size_t R,
                                 size_t ldt, float *dx);
#endif
/* simd/conv_wasm_simd128.c (-msimd128 builds) */
#if defined(__wasm_simd128__)
bool wdc_applies(const lithe__conv2d *g, bool bias); /* bias: the convolution has one (pointwise: K + 1 <= 256) */
void wdc_images(gemm_job *j, int64_t n0, int64_t n1);
#endif

#endif
