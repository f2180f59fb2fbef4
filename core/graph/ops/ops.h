/* The ONNX operators the graph layer runs: forward and backward for each, through the backend's
 * primitives. Float values are contiguous float32 tensors on the model's backend; integer values
 * (shapes, axes, indices) are host int64 tensors, computed eagerly so the shape arithmetic around
 * Shape / Gather / Unsqueeze / Concat is plain C on the host. Every backward accumulates into the
 * gradients lithe__gexec_grad hands out (a value may feed several nodes). */
#ifndef LITHE_GRAPH_OPS_H
#define LITHE_GRAPH_OPS_H

#include "../graph.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define NODE(x, i) (&(x)->g->onnx.nodes[i])
#define FWD(name) lithe_status name(lithe__gexec *x, size_t node, lithe_tensor **in, size_t n_in, \
                                           lithe_tensor **out, size_t n_out, lithe_tensor **saved)
#define BWD(name) lithe_status name(lithe__gexec *x, size_t node, lithe_tensor **in, size_t n_in, \
                                           lithe_tensor **out, lithe_tensor **dout, lithe_tensor **saved)
#define UNUSED_FWD (void)n_in; (void)n_out; (void)saved
#define UNUSED_BWD (void)n_in; (void)out; (void)saved

/* ---- helpers ---- */

static inline lithe_status fail(lithe__gexec *x, size_t node, lithe_status st, const char *fmt, ...) LITHE__PRINTF(4, 5);
static inline lithe_status fail(lithe__gexec *x, size_t node, lithe_status st, const char *fmt, ...) {
    char head[256], msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return lithe__fail(st, "%s: %s", lithe__gnode_str(x, node, head, sizeof head), msg);
}

static inline int64_t attr_i(const lithe__onnx_node *n, const char *name, int64_t dflt) {
    const lithe__onnx_attr *a = lithe__onnx_attr_get(n, name);
    return a ? a->i : dflt;
}
static inline float attr_f(const lithe__onnx_node *n, const char *name, float dflt) {
    const lithe__onnx_attr *a = lithe__onnx_attr_get(n, name);
    return a ? a->f : dflt;
}
static inline const int64_t *attr_ints(const lithe__onnx_node *n, const char *name, size_t *count) {
    const lithe__onnx_attr *a = lithe__onnx_attr_get(n, name);
    *count = a ? a->n_ints : 0;
    return a ? a->ints : NULL;
}

static inline bool is_int(const lithe_tensor *t) { return t && t->dtype == LITHE_I64; }
static inline const int64_t *ints(const lithe_tensor *t) { return (const int64_t *)lithe__tdata(t); }

static inline lithe_status need_inputs(lithe__gexec *x, size_t node, lithe_tensor **in, size_t n_in, size_t need) {
    if (n_in < need) return fail(x, node, LITHE_ERR_FORMAT, "needs %zu inputs, has %zu", need, n_in);
    for (size_t k = 0; k < need; k++)
        if (!in[k]) return fail(x, node, LITHE_ERR_FORMAT, "input %zu is required but left out", k);
    return LITHE_OK;
}
static inline lithe_status need_float(lithe__gexec *x, size_t node, const lithe_tensor *t, size_t k) {
    if (t->dtype != LITHE_F32)
        return fail(x, node, LITHE_ERR_DTYPE, "input %zu must be float, got %s", k, lithe_dtype_name(t->dtype));
    return LITHE_OK;
}
static inline lithe_status need_ints(lithe__gexec *x, size_t node, const lithe_tensor *t, size_t k) {
    if (!is_int(t))
        return fail(x, node, LITHE_ERR_DTYPE, "input %zu must be an integer tensor (a shape, axes or indices), got %s",
                    k, lithe_dtype_name(t->dtype));
    return LITHE_OK;
}

static inline lithe_status new_f32(lithe__gexec *x, int ndim, const int64_t *shape, bool zero, lithe_tensor **out) {
    return lithe__gexec_alloc(x, x->be, LITHE_F32, ndim, shape, zero, out);
}
static inline lithe_status new_i64(lithe__gexec *x, int ndim, const int64_t *shape, lithe_tensor **out) {
    return lithe__gexec_alloc(x, lithe__backend_host(), LITHE_I64, ndim, shape, false, out);
}

/* A new descriptor over t's storage with the given shape and strides (elements). */
static inline lithe_status view(lithe_tensor *t, int ndim, const int64_t *shape, const int64_t *strides, int64_t offset,
                         lithe_tensor **out) {
    LITHE__TRY(lithe_tensor_reshape(t, 1, (int64_t[]){t->numel}, out)); /* a fresh descriptor */
    lithe_tensor *v = *out;
    v->ndim = ndim;
    v->numel = 1;
    for (int d = 0; d < ndim; d++) {
        v->shape[d] = shape[d];
        v->strides[d] = strides[d];
        v->numel *= shape[d];
    }
    v->offset += offset;
    return LITHE_OK;
}

static inline void contiguous_strides(int ndim, const int64_t *shape, int64_t *st) {
    int64_t s = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        st[d] = s;
        s *= shape[d];
    }
}

/* dst (a gradient accumulator) += src, equal element counts. */
static inline lithe_status acc(lithe__gexec *x, lithe_tensor *dst, const lithe_tensor *src) {
    if (!dst || !src) return LITHE_OK;
    return lithe__op_axpby(x->be, 1.0f, src, 1.0f, dst);
}

static inline lithe_status norm_axis(lithe__gexec *x, size_t node, int64_t axis, int rank, bool allow_end, int64_t *out) {
    int64_t hi = allow_end ? rank : rank - 1;
    if (axis < -rank || axis > hi)
        return fail(x, node, LITHE_ERR_VALUE, "axis %lld outside [-%d, %lld] for rank %d", (long long)axis, rank,
                    (long long)hi, rank);
    *out = axis < 0 ? axis + rank : axis;
    return LITHE_OK;
}

/* numpy broadcast of two shapes. */
static inline lithe_status bcast_shape(lithe__gexec *x, size_t node, const lithe_tensor *a, const lithe_tensor *b, int *nd,
                                int64_t *shape) {
    *nd = a->ndim > b->ndim ? a->ndim : b->ndim;
    for (int d = 0; d < *nd; d++) {
        int ka = d - (*nd - a->ndim), kb = d - (*nd - b->ndim);
        int64_t ea = ka >= 0 ? a->shape[ka] : 1, eb = kb >= 0 ? b->shape[kb] : 1;
        if (ea != eb && ea != 1 && eb != 1) {
            char sa[LITHE__SHAPE_BUF], sb[LITHE__SHAPE_BUF];
            return fail(x, node, LITHE_ERR_SHAPE, "shapes %s and %s do not broadcast", lithe__shape_str(a, sa, sizeof sa),
                        lithe__shape_str(b, sb, sizeof sb));
        }
        shape[d] = ea == 1 ? eb : ea;
    }
    return LITHE_OK;
}

static inline lithe_status as_rows(lithe_tensor *t, int64_t M, int64_t N, lithe_tensor **out) {
    /* already (M, N) and contiguous (a Linear's 2-D input and output): the tensor itself, not a
     * view made and freed per call */
    if (t->ndim == 2 && t->shape[0] == M && t->shape[1] == N && lithe_tensor_is_contiguous(t)) {
        *out = lithe_tensor_retain(t);
        return LITHE_OK;
    }
    return lithe_tensor_reshape(t, 2, (int64_t[]){M, N}, out);
}

/* X's dimensions permuted (Y's dim d is X's dim perm[d]) into a new contiguous tensor of X's dtype
 * (float32 on the graph's backend, the other dtypes on the host). */
static inline lithe_status perm_copy(lithe__gexec *x, lithe_tensor *X, const int64_t *perm, lithe_tensor **out) {
    int64_t st[LITHE_MAX_DIMS] = {0}, shape[LITHE_MAX_DIMS], vst[LITHE_MAX_DIMS];
    contiguous_strides(X->ndim, X->shape, st);
    for (int d = 0; d < X->ndim; d++) {
        shape[d] = X->shape[perm[d]];
        vst[d] = st[perm[d]];
    }
    lithe_tensor *v = NULL;
    LITHE__TRY(view(X, X->ndim, shape, vst, 0, &v));
    lithe_backend *be = X->dtype == LITHE_F32 ? x->be : lithe__backend_host();
    lithe_status s = lithe__gexec_alloc(x, be, X->dtype, X->ndim, shape, false, out);
    if (s == LITHE_OK) s = lithe__op_copy(be, *out, v);
    lithe_tensor_release(v);
    return s;
}

/* Each family file's forward and backward functions, for the table (table.c) and the fused nodes
 * (fused.c); external, so named lithe__gop_* in the library. */
/* shape.c */
#define f_identity lithe__gop_f_identity
#define b_identity lithe__gop_b_identity
#define f_reshape lithe__gop_f_reshape
#define b_reshape lithe__gop_b_reshape
#define f_transpose lithe__gop_f_transpose
#define b_transpose lithe__gop_b_transpose
FWD(f_identity); BWD(b_identity); FWD(f_reshape); BWD(b_reshape); FWD(f_transpose); BWD(b_transpose);
/* matmul.c */
#define f_gemm lithe__gop_f_gemm
#define b_gemm lithe__gop_b_gemm
#define f_matmul lithe__gop_f_matmul
#define b_matmul lithe__gop_b_matmul
FWD(f_gemm); BWD(b_gemm); FWD(f_matmul); BWD(b_matmul);
/* binary.c */
#define int_binary lithe__gop_int_binary
lithe_status int_binary(lithe__gexec *x, size_t node, int op, lithe_tensor *A, lithe_tensor *B, lithe_tensor **out);
#define f_binary lithe__gop_f_binary
#define b_binary lithe__gop_b_binary
#define f_not lithe__gop_f_not
#define f_compare_eq lithe__gop_f_compare_eq
#define f_where lithe__gop_f_where
#define b_where lithe__gop_b_where
FWD(f_binary); BWD(b_binary); FWD(f_compare_eq); FWD(f_not); FWD(f_where); BWD(b_where);
/* unary.c */
#define f_act lithe__gop_f_act
#define b_act lithe__gop_b_act
#define f_unary lithe__gop_f_unary
#define b_unary lithe__gop_b_unary
#define f_softplus lithe__gop_f_softplus
#define b_softplus lithe__gop_b_softplus
#define f_softmax lithe__gop_f_softmax
#define b_softmax lithe__gop_b_softmax
FWD(f_act); BWD(b_act); FWD(f_unary); BWD(b_unary); FWD(f_softmax); BWD(b_softmax); FWD(f_softplus); BWD(b_softplus);
/* piecewise.c */
#define f_elu lithe__gop_f_elu
#define b_elu lithe__gop_b_elu
#define f_softsign lithe__gop_f_softsign
#define b_softsign lithe__gop_b_softsign
#define f_prelu lithe__gop_f_prelu
#define b_prelu lithe__gop_b_prelu
#define f_thresholded_relu lithe__gop_f_thresholded_relu
#define b_thresholded_relu lithe__gop_b_thresholded_relu
#define f_sign lithe__gop_f_sign
FWD(f_elu); BWD(b_elu); FWD(f_softsign); BWD(b_softsign); FWD(f_prelu); BWD(b_prelu);
FWD(f_thresholded_relu); BWD(b_thresholded_relu); FWD(f_sign);
/* slice.c */
#define f_concat lithe__gop_f_concat
#define b_concat lithe__gop_b_concat
#define f_split lithe__gop_f_split
#define b_split lithe__gop_b_split
#define f_slice lithe__gop_f_slice
#define b_slice lithe__gop_b_slice
#define f_pad lithe__gop_f_pad
#define b_pad lithe__gop_b_pad
FWD(f_concat); BWD(b_concat); FWD(f_split); BWD(b_split); FWD(f_slice); BWD(b_slice); FWD(f_pad); BWD(b_pad);
/* reduce.c */
#define f_expand lithe__gop_f_expand
#define b_expand lithe__gop_b_expand
#define f_reduce lithe__gop_f_reduce
#define b_reduce lithe__gop_b_reduce
FWD(f_expand); BWD(b_expand); FWD(f_reduce); BWD(b_reduce);
/* norm.c */
#define f_layernorm lithe__gop_f_layernorm
#define b_layernorm lithe__gop_b_layernorm
#define f_batchnorm lithe__gop_f_batchnorm
#define b_batchnorm lithe__gop_b_batchnorm
FWD(f_layernorm); BWD(b_layernorm); FWD(f_batchnorm); BWD(b_batchnorm);
/* window.c */
#define conv_geometry lithe__gop_conv_geometry
#define conv_forward lithe__gop_conv_forward
lithe_status conv_geometry(lithe__gexec *x, size_t node, lithe_tensor **in, lithe__conv2d *g);
lithe_status conv_forward(lithe__gexec *x, size_t node, lithe_tensor **in, size_t n_in, const lithe__act *a,
                          lithe_tensor **out);
/* a fused Conv + Relu and the max pool reading it: whether the pool carries the Relu's backward this run */
bool lithe__pool_relu(const lithe__gexec *x, size_t node, const lithe_tensor *Y);
#define f_conv lithe__gop_f_conv
#define b_conv lithe__gop_b_conv
#define f_pool lithe__gop_f_pool
#define b_pool lithe__gop_b_pool
#define f_convt lithe__gop_f_convt
#define b_convt lithe__gop_b_convt
#define f_leaky lithe__gop_f_leaky
#define b_leaky lithe__gop_b_leaky
FWD(f_conv); BWD(b_conv); FWD(f_pool); BWD(b_pool); FWD(f_convt); BWD(b_convt); FWD(f_leaky); BWD(b_leaky);
/* host.c */
#define f_constant lithe__gop_f_constant
#define f_shape lithe__gop_f_shape
#define f_gather lithe__gop_f_gather
#define b_gather lithe__gop_b_gather
#define f_cast lithe__gop_f_cast
#define b_cast lithe__gop_b_cast
#define f_constant_of_shape lithe__gop_f_constant_of_shape
FWD(f_constant); FWD(f_shape); FWD(f_gather); BWD(b_gather); FWD(f_cast); BWD(b_cast); FWD(f_constant_of_shape);
/* recurrent.c (issue 23 item 6) */
#define f_rnn lithe__gop_f_rnn
#define b_rnn lithe__gop_b_rnn
FWD(f_rnn); BWD(b_rnn);
/* control.c (issue 23 item 7): If, Loop, Scan, expanded at load (core/graph/control.c) */
#define f_control lithe__gop_f_control
FWD(f_control);
/* fused.c */
#define f_fused_linear lithe__gop_f_fused_linear
#define b_fused_linear lithe__gop_b_fused_linear
#define f_fused_act lithe__gop_f_fused_act
#define b_fused_act lithe__gop_b_fused_act
#define f_fused_conv lithe__gop_f_fused_conv
#define b_fused_conv lithe__gop_b_fused_conv
#define f_fused_conv_add lithe__gop_f_fused_conv_add
#define b_fused_conv_add lithe__gop_b_fused_conv_add
FWD(f_fused_linear); BWD(b_fused_linear); FWD(f_fused_act); BWD(b_fused_act); FWD(f_fused_conv); BWD(b_fused_conv); FWD(f_fused_conv_add); BWD(b_fused_conv_add);

/* issue 23, items 1-2: reduce2.c, index.c, elemwise2.c */
#define f_reduce2 lithe__gop_f_reduce2
#define b_reduce2 lithe__gop_b_reduce2
#define f_argmax lithe__gop_f_argmax
#define f_cumsum lithe__gop_f_cumsum
#define b_cumsum lithe__gop_b_cumsum
#define f_tile lithe__gop_f_tile
#define b_tile lithe__gop_b_tile
#define f_range lithe__gop_f_range
#define f_gather_elements lithe__gop_f_gather_elements
#define b_gather_elements lithe__gop_b_gather_elements
#define f_unary2 lithe__gop_f_unary2
#define b_unary2 lithe__gop_b_unary2
#define f_variadic lithe__gop_f_variadic
#define b_variadic lithe__gop_b_variadic
#define f_mod lithe__gop_f_mod
#define b_mod lithe__gop_b_mod
#define f_logic lithe__gop_f_logic
#define f_isnan lithe__gop_f_isnan
#define f_hardmax lithe__gop_f_hardmax
FWD(f_reduce2); BWD(b_reduce2); FWD(f_argmax); FWD(f_cumsum); BWD(b_cumsum); FWD(f_tile); BWD(b_tile); FWD(f_range);
FWD(f_gather_elements); BWD(b_gather_elements); FWD(f_unary2); BWD(b_unary2); FWD(f_variadic); BWD(b_variadic);
FWD(f_mod); BWD(b_mod); FWD(f_logic); FWD(f_isnan); FWD(f_hardmax);
/* ids (host int64) where x's backend reads them: gather_rows / scatter_add_rows on a GPU take device ids. */
static inline lithe_status ids_on_be(lithe__gexec *x, lithe_tensor *ids, lithe_tensor **out) {
    if (x->be->host_memory) {
        *out = lithe_tensor_retain(ids);
        return LITHE_OK;
    }
    return lithe_tensor_to_backend(ids, x->be, out);
}
static inline lithe_status gather_by_ids(lithe__gexec *x, const lithe_tensor *table, lithe_tensor *ids, lithe_tensor *Y) {
    lithe_tensor *d = NULL;
    LITHE__TRY(ids_on_be(x, ids, &d));
    lithe_status s = lithe__op_gather_rows(x->be, table, d, Y);
    lithe_tensor_release(d);
    return s;
}
static inline lithe_status scatter_add_by_ids(lithe__gexec *x, lithe_tensor *table, lithe_tensor *ids, const lithe_tensor *X) {
    lithe_tensor *d = NULL;
    LITHE__TRY(ids_on_be(x, ids, &d));
    lithe_status s = lithe__op_scatter_add_rows(x->be, table, d, X);
    lithe_tensor_release(d);
    return s;
}
#define gather_elements_ids lithe__gop_gather_elements_ids
#define gather_nd_ids lithe__gop_gather_nd_ids
lithe_status gather_elements_ids(lithe__gexec *x, size_t node, lithe_tensor **in, size_t n_in, lithe_tensor **ids);
lithe_status gather_nd_ids(lithe__gexec *x, size_t node, lithe_tensor **in, size_t n_in, lithe_tensor **ids, int *ond,
                           int64_t *oshape, int64_t *inner);
#define f_scatter lithe__gop_f_scatter
#define b_scatter lithe__gop_b_scatter
#define f_trilu lithe__gop_f_trilu
#define b_trilu lithe__gop_b_trilu
#define f_one_hot lithe__gop_f_one_hot
#define f_topk lithe__gop_f_topk
#define b_topk lithe__gop_b_topk
#define f_nonzero lithe__gop_f_nonzero
#define f_einsum lithe__gop_f_einsum
#define b_einsum lithe__gop_b_einsum
FWD(f_scatter); BWD(b_scatter); FWD(f_trilu); BWD(b_trilu); FWD(f_one_hot); FWD(f_topk); BWD(b_topk); FWD(f_nonzero);
FWD(f_einsum); BWD(b_einsum);
/* ---- issue 23 items 3-5 (opsspatial): 1-D / 3-D windows, normalizations, resampling ---- */
/* window.c: the window attributes for 1 .. 3 spatial axes, one axis's extent, 4-D views of 1-D tensors */
#define window_nd lithe__gop_window_nd
#define window_axis lithe__gop_window_axis
#define view4 lithe__gop_view4
#define pool_geometry lithe__gop_pool_geometry
lithe_status pool_geometry(lithe__gexec *x, size_t node, const lithe_tensor *X, lithe__pool2d *g);
lithe_status window_nd(const lithe__onnx_node *n, int rank, int64_t *stride, int64_t *pad, int64_t *dil, int *mode,
                       char *why, size_t cap);
lithe_status window_axis(lithe__gexec *x, size_t node, int mode, bool ceil_mode, int64_t in, int64_t k, int64_t stride,
                         int64_t dil, int64_t *pb, int64_t *pe, int64_t *o);
lithe_status view4(const lithe_tensor *t, lithe_tensor **v);
/* spatial3d.c */
#define conv3d_forward lithe__gop_conv3d_forward
#define conv3d_backward lithe__gop_conv3d_backward
#define pool3d_forward lithe__gop_pool3d_forward
#define pool3d_backward lithe__gop_pool3d_backward
lithe_status conv3d_forward(lithe__gexec *x, size_t node, lithe_tensor **in, size_t n_in, const lithe__act *a,
                            lithe_tensor **out);
lithe_status conv3d_backward(lithe__gexec *x, size_t node, lithe_tensor **in, size_t n_in, lithe_tensor *dY);
lithe_status pool3d_forward(lithe__gexec *x, size_t node, lithe_tensor *X, lithe_tensor **out, lithe_tensor **saved);
lithe_status pool3d_backward(lithe__gexec *x, size_t node, lithe_tensor *X, lithe_tensor *dY, lithe_tensor **saved,
                             lithe_tensor *dX);
#define convt3d_forward lithe__gop_convt3d_forward
#define convt3d_backward lithe__gop_convt3d_backward
lithe_status convt3d_forward(lithe__gexec *x, size_t node, lithe_tensor **in, size_t n_in, lithe_tensor **out);
lithe_status convt3d_backward(lithe__gexec *x, size_t node, lithe_tensor **in, size_t n_in, lithe_tensor *dY);
#define f_lppool lithe__gop_f_lppool
#define b_lppool lithe__gop_b_lppool
FWD(f_lppool); BWD(b_lppool);
/* resample.c */
#define f_resize lithe__gop_f_resize
#define b_resize lithe__gop_b_resize
#define f_depth_space lithe__gop_f_depth_space
#define b_depth_space lithe__gop_b_depth_space
FWD(f_resize); BWD(b_resize); FWD(f_depth_space); BWD(b_depth_space);
/* norm2.c */
#define f_groupnorm lithe__gop_f_groupnorm
#define b_groupnorm lithe__gop_b_groupnorm
#define f_lpnorm lithe__gop_f_lpnorm
#define b_lpnorm lithe__gop_b_lpnorm
#define f_mvn lithe__gop_f_mvn
#define b_mvn lithe__gop_b_mvn
#define f_lrn lithe__gop_f_lrn
#define b_lrn lithe__gop_b_lrn
FWD(f_groupnorm); BWD(b_groupnorm); FWD(f_lpnorm); BWD(b_lpnorm); FWD(f_mvn); BWD(b_mvn); FWD(f_lrn); BWD(b_lrn);
/* ---- end of opsspatial's block ---- */
/* ---- issue 24 item 4 (qdq24): quantized operators (quant.c, qlinear.c; fused: qfused.c) ---- */
/* A quantization's parameters as a node reads them: n scales (1: per tensor, else along axis),
 * zero points (NULL: 0), the code range of its integer type. hold: host copies to release. */
typedef struct lithe__gq {
    int64_t n, axis;
    const float *scale;
    const int64_t *zero;
    int32_t qmin, qmax;
    lithe_tensor *hold;
} lithe__gq;
#define gq_params lithe__gop_gq_params
#define gq_release lithe__gop_gq_release
#define host_f32 lithe__gop_host_f32
/* in[ks] the scale, in[kz] the zero point (kz past n_in or left out: 0, type `dflt_type`), for data
 * of rank `rank` whose extent along axis (normalized) must match a per-axis array (want_n < 0: the
 * extent is `extent`); errors name the node. */
lithe_status gq_params(lithe__gexec *x, size_t node, lithe_tensor **in, size_t n_in, size_t ks, size_t kz,
                       int32_t dflt_type, int64_t axis, int64_t extent, const char *what, lithe__gq *q);
void gq_release(lithe__gq *q);
/* t's float32 values readable on the host: t itself, or a copy (*hold) */
lithe_status host_f32(const lithe_tensor *t, lithe_tensor **hold, const float **out);
#define f_quantize lithe__gop_f_quantize
#define f_dequantize lithe__gop_f_dequantize
#define f_dyn_quantize lithe__gop_f_dyn_quantize
#define f_matmul_integer lithe__gop_f_matmul_integer
#define f_conv_integer lithe__gop_f_conv_integer
#define f_qlinear_matmul lithe__gop_f_qlinear_matmul
#define f_qlinear_conv lithe__gop_f_qlinear_conv
FWD(f_quantize); FWD(f_dequantize); FWD(f_dyn_quantize); FWD(f_matmul_integer); FWD(f_conv_integer);
FWD(f_qlinear_matmul); FWD(f_qlinear_conv);
/* ---- end of qdq24's block ---- */

#endif
