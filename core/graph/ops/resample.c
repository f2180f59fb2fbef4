/* ONNX operators of the graph layer (core/graph/ops/): Resize, Upsample, DepthToSpace, SpaceToDepth.
 *
 * Resize (every mode) is separable: along each resized axis, the output is a fixed linear map of
 * the input, Y = A X with A (out, in) holding the interpolation weights (nearest: one 1 per row;
 * linear: two; cubic: four), built on the host from the coordinate transformation and uploaded.
 * So the forward is one gemm per resized axis and the backward the transposed gemms: dX = Aᵀ dY,
 * the scatter-add of the weights. The matrices cost out x in floats per axis (a 64 -> 512
 * upsampling: 128 KB), and every backend that has gemm runs every mode. On a host-memory backend
 * (the CPU, WebAssembly) the forward applies each output's taps directly instead, one pass per
 * axis (resample_host): the same weights, summed in the same order without the zeros, so float
 * noise apart the same values, and no O x L matrix or gemm (lraspp's 28 -> 224 upsampling of 21
 * channels: 1.9 -> ~1.0 ms, min of runs). */
#include "ops.h"

#include <stdlib.h>

enum { R_NEAREST, R_LINEAR, R_CUBIC };
enum { C_HALF_PIXEL, C_PYTORCH_HALF_PIXEL, C_ALIGN_CORNERS, C_ASYMMETRIC, C_TF_CROP, C_TF_HALF_NN, C_HALF_SYMMETRIC };
enum { N_PREFER_FLOOR, N_PREFER_CEIL, N_FLOOR, N_CEIL, N_SIMPLE };

typedef struct {
    int ndim, mode, coord, nearest;
    float cubic_a, extrapolation;
    bool exclude_outside;
    int64_t in[LITHE_MAX_DIMS], out[LITHE_MAX_DIMS];
    double scale[LITHE_MAX_DIMS], roi[2 * LITHE_MAX_DIMS];
} rplan;

static int pick(const char *s, const char *const *names, int dflt) {
    for (int k = 0; s && names[k]; k++)
        if (!strcmp(s, names[k])) return k;
    return dflt;
}
static const char *attr_s(const lithe__onnx_node *n, const char *name) {
    const lithe__onnx_attr *a = lithe__onnx_attr_get(n, name);
    return a ? a->s : NULL;
}

/* floats of a small float input (scales, roi), any backend: 0 when absent or empty */
static lithe_status read_floats(lithe__gexec *x, size_t node, const lithe_tensor *t, float *v, size_t cap, size_t *n) {
    *n = 0;
    if (!t || t->numel == 0) return LITHE_OK;
    if (t->dtype != LITHE_F32) return fail(x, node, LITHE_ERR_DTYPE, "scales and roi must be float");
    if ((size_t)t->numel > cap) return fail(x, node, LITHE_ERR_SHAPE, "%lld scales or roi values for at most %zu axes", (long long)t->numel, cap);
    *n = (size_t)t->numel;
    return lithe_tensor_read(t, v, *n * sizeof *v);
}

static lithe_status resize_plan(lithe__gexec *x, size_t node, lithe_tensor **in, size_t n_in, rplan *p) {
    const lithe__onnx_node *n = NODE(x, node);
    const lithe_tensor *X = in[0];
    memset(p, 0, sizeof *p);
    p->ndim = X->ndim;
    bool upsample = !strcmp(n->op_type, "Upsample"), old = upsample || x->g->onnx.opset < 11;
    static const char *const modes[] = {"nearest", "linear", "cubic", "bilinear", NULL};
    static const char *const coords[] = {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
                                         "tf_crop_and_resize", "tf_half_pixel_for_nn", "half_pixel_symmetric", NULL};
    static const char *const rounding[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil", NULL};
    p->mode = pick(attr_s(n, "mode"), modes, R_NEAREST);
    if (p->mode == 3) p->mode = R_LINEAR; /* Upsample-7's "bilinear" */
    /* opset < 11 Resize and Upsample: asymmetric coordinates, nearest rounds down (up when shrinking) */
    p->coord = old ? C_ASYMMETRIC : pick(attr_s(n, "coordinate_transformation_mode"), coords, C_HALF_PIXEL);
    p->nearest = old ? N_SIMPLE : pick(attr_s(n, "nearest_mode"), rounding, N_PREFER_FLOOR);
    p->cubic_a = attr_f(n, "cubic_coeff_a", -0.75f);
    p->exclude_outside = attr_i(n, "exclude_outside", 0) != 0;
    p->extrapolation = attr_f(n, "extrapolation_value", 0.0f);
    float sc[LITHE_MAX_DIMS], roi[2 * LITHE_MAX_DIMS];
    size_t n_sc = 0, n_roi = 0;
    const lithe_tensor *sizes = NULL;
    if (upsample && n_in < 2) { /* Upsample-7: scales attr */
        const lithe__onnx_attr *a = lithe__onnx_attr_get(n, "scales");
        n_sc = a ? a->n_floats : 0;
        if (n_sc > LITHE_MAX_DIMS) n_sc = LITHE_MAX_DIMS + 1;
        for (size_t k = 0; k < n_sc && k < LITHE_MAX_DIMS; k++) sc[k] = a->floats[k];
    } else if (old) {
        LITHE__TRY(need_inputs(x, node, in, n_in, 2));
        LITHE__TRY(read_floats(x, node, in[1], sc, LITHE_MAX_DIMS, &n_sc));
    } else {
        if (n_in > 1) LITHE__TRY(read_floats(x, node, in[1], roi, 2 * LITHE_MAX_DIMS, &n_roi));
        if (n_in > 2) LITHE__TRY(read_floats(x, node, in[2], sc, LITHE_MAX_DIMS, &n_sc));
        if (n_in > 3 && in[3] && in[3]->numel) sizes = in[3];
    }
    if (sizes) {
        LITHE__TRY(need_ints(x, node, sizes, 3));
        if (n_sc) return fail(x, node, LITHE_ERR_VALUE, "both scales and sizes are given");
        if (sizes->numel != X->ndim) return fail(x, node, LITHE_ERR_SHAPE, "%lld sizes for a rank-%d input", (long long)sizes->numel, X->ndim);
    } else if (n_sc != (size_t)X->ndim) {
        return fail(x, node, LITHE_ERR_SHAPE, "%zu scales for a rank-%d input (give one per axis, or sizes)", n_sc, X->ndim);
    }
    if (p->coord == C_TF_CROP && n_roi != 2 * (size_t)X->ndim)
        return fail(x, node, LITHE_ERR_SHAPE, "tf_crop_and_resize needs a roi of %d values, got %zu", 2 * X->ndim, n_roi);
    for (int d = 0; d < X->ndim; d++) {
        p->in[d] = X->shape[d];
        if (sizes) {
            p->out[d] = ints(sizes)[d];
            p->scale[d] = p->in[d] ? (double)p->out[d] / (double)p->in[d] : 1.0; /* the spec's out / in, exactly */
        } else {
            if (!(sc[d] > 0) || sc[d] > 1e6f) return fail(x, node, LITHE_ERR_VALUE, "scale %g must be > 0 (and at most 1e6)", (double)sc[d]);
            p->scale[d] = sc[d];
            p->out[d] = (int64_t)floor((double)X->shape[d] * (double)sc[d]);
        }
        if (p->out[d] < 0 || p->out[d] > ((int64_t)1 << 31)) return fail(x, node, LITHE_ERR_SHAPE, "output extent %lld", (long long)p->out[d]);
        if (p->out[d] && !p->in[d]) return fail(x, node, LITHE_ERR_SHAPE, "resizing an empty axis");
        p->roi[d] = n_roi ? roi[d] : 0.0;
        p->roi[d + X->ndim] = n_roi ? roi[d + X->ndim] : 1.0;
    }
    if (p->coord == C_TF_CROP && p->extrapolation != 0.0f)
        return fail(x, node, LITHE_ERR_UNSUPPORTED, "tf_crop_and_resize with an extrapolation_value other than 0");
    return LITHE_OK;
}

/* Does axis d change (an identity map is skipped)? */
static bool axis_moves(const rplan *p, int d) {
    return p->out[d] != p->in[d] || p->scale[d] != 1.0 || p->coord == C_TF_CROP;
}

/* The input coordinate of output index o along axis d (NAN: outside a tf_crop_and_resize crop). */
static double source_x(const rplan *p, int d, int64_t o) {
    double s = p->scale[d], L = (double)p->in[d], O = (double)p->out[d];
    switch (p->coord) {
    case C_PYTORCH_HALF_PIXEL: return O > 1 ? (o + 0.5) / s - 0.5 : 0.0;
    case C_ALIGN_CORNERS: return O > 1 ? o * (L - 1) / (O - 1) : 0.0;
    case C_ASYMMETRIC: return o / s;
    case C_TF_HALF_NN: return (o + 0.5) / s;
    case C_HALF_SYMMETRIC: {
        double adj = O / (s * L), off = L / 2 * (1 - adj);
        return off + (o + 0.5) / s - 0.5;
    }
    case C_TF_CROP: {
        double a = p->roi[d], b = p->roi[d + p->ndim];
        double v = O > 1 ? a * (L - 1) + o * (b - a) * (L - 1) / (O - 1) : 0.5 * (a + b) * (L - 1);
        return v < 0 || v > L - 1 ? NAN : v;
    }
    default: return (o + 0.5) / s - 0.5; /* half_pixel */
    }
}

static int64_t clampi(int64_t i, int64_t n) { return i < 0 ? 0 : i >= n ? n - 1 : i; }

/* The taps of output o along axis d: the input entries it reads (idx) and their weights, taps
 * that clamp onto one entry merged (their float weights summed in tap order); returns how many
 * (0 outside a tf_crop_and_resize crop: the output is 0). Row o of A holds these weights. */
static int axis_taps(const rplan *p, int d, int64_t o, int64_t *idx, float *wt) {
    int64_t L = p->in[d];
    double xs = source_x(p, d, o);
    if (xs != xs) return 0; /* extrapolated: 0 */
    if (p->mode == R_NEAREST) {
        double f = floor(xs), frac = xs - f;
        int64_t i;
        switch (p->nearest) {
        case N_PREFER_CEIL: i = (int64_t)(frac >= 0.5 ? f + 1 : f); break;
        case N_FLOOR: i = (int64_t)f; break;
        case N_CEIL: i = (int64_t)ceil(xs); break;
        case N_SIMPLE: i = p->scale[d] < 1.0 ? (int64_t)ceil(xs) : (int64_t)f; break;
        default: i = (int64_t)(frac > 0.5 ? f + 1 : f); break; /* round_prefer_floor */
        }
        idx[0] = clampi(i, L), wt[0] = 1.0f;
        return 1;
    }
    double f = floor(xs), t = xs - f, w[4];
    int64_t first, n;
    if (p->mode == R_LINEAR) {
        w[0] = 1 - t, w[1] = t, first = (int64_t)f, n = 2;
    } else {
        double A = p->cubic_a, t1 = t + 1, t2 = 1 - t, t3 = 2 - t;
        w[0] = ((A * t1 - 5 * A) * t1 + 8 * A) * t1 - 4 * A;
        w[1] = ((A + 2) * t - (A + 3)) * t * t + 1;
        w[2] = ((A + 2) * t2 - (A + 3)) * t2 * t2 + 1;
        w[3] = ((A * t3 - 5 * A) * t3 + 8 * A) * t3 - 4 * A;
        first = (int64_t)f - 1, n = 4;
    }
    if (p->exclude_outside) {
        double sum = 0;
        for (int64_t k = 0; k < n; k++) {
            if (first + k < 0 || first + k >= L) w[k] = 0;
            sum += w[k];
        }
        for (int64_t k = 0; k < n && sum != 0; k++) w[k] /= sum;
    }
    int m = 0;
    for (int64_t k = 0; k < n; k++) {
        int64_t i = clampi(first + k, L);
        int j = 0;
        while (j < m && idx[j] != i) j++;
        if (j == m) idx[m] = i, wt[m++] = 0.0f;
        wt[j] += (float)w[k];
    }
    return m;
}

/* A (out, in) of axis d, on the model's backend. */
static lithe_status axis_matrix(lithe__gexec *x, const rplan *p, int d, lithe_tensor **A) {
    int64_t O = p->out[d], L = p->in[d];
    float *h = lithe__malloc((size_t)(O * L > 0 ? O * L : 1) * sizeof *h);
    if (!h) return lithe__fail(LITHE_ERR_OOM, "Resize: %lld x %lld interpolation weights", (long long)O, (long long)L);
    memset(h, 0, (size_t)(O * L) * sizeof *h);
    for (int64_t o = 0; o < O; o++) {
        int64_t idx[4];
        float wt[4];
        for (int j = 0, m = axis_taps(p, d, o, idx, wt); j < m; j++) h[o * L + idx[j]] = wt[j];
    }
    lithe_status s = new_f32(x, 2, (int64_t[]){O, L}, false, A);
    if (s == LITHE_OK) s = lithe_tensor_write(*A, h, (size_t)(O * L) * sizeof *h);
    lithe__free(h);
    return s;
}

/* Y = X mapped along axis k by A (out, in), or by Aᵀ (adj: in <- out). */
static lithe_status apply_axis(lithe__gexec *x, lithe_tensor *X, int k, lithe_tensor *A, bool adj, lithe_tensor **Y) {
    int64_t L = X->shape[k], O = adj ? A->shape[1] : A->shape[0], P = 1, Q = 1, shape[LITHE_MAX_DIMS];
    for (int d = 0; d < X->ndim; d++) {
        shape[d] = d == k ? O : X->shape[d];
        if (d < k) P *= X->shape[d];
        if (d > k) Q *= X->shape[d];
    }
    *Y = NULL;
    LITHE__TRY(new_f32(x, X->ndim, shape, false, Y));
    lithe_tensor *X2 = NULL, *Y2 = NULL, *T = NULL, *Z = NULL, *v = NULL;
    lithe_status s;
    if (Q == 1) { /* the last axis: (P, L) · Aᵀ */
        s = lithe_tensor_reshape(X, 2, (int64_t[]){P, L}, &X2);
        if (s == LITHE_OK) s = lithe_tensor_reshape(*Y, 2, (int64_t[]){P, O}, &Y2);
        if (s == LITHE_OK) s = lithe__op_gemm(x->be, false, !adj, 1.0f, X2, A, 0.0f, Y2);
    } else if (P == 1) { /* the first axis of the rest: A · (L, Q) */
        s = lithe_tensor_reshape(X, 2, (int64_t[]){L, Q}, &X2);
        if (s == LITHE_OK) s = lithe_tensor_reshape(*Y, 2, (int64_t[]){O, Q}, &Y2);
        if (s == LITHE_OK) s = lithe__op_gemm(x->be, adj, false, 1.0f, A, X2, 0.0f, Y2);
    } else { /* (P, L, Q) -> (L, P Q), A ·, (O, P, Q) -> (P, O, Q) */
        s = view(X, 3, (int64_t[]){L, P, Q}, (int64_t[]){Q, L * Q, 1}, 0, &v);
        if (s == LITHE_OK) s = new_f32(x, 3, (int64_t[]){L, P, Q}, false, &T);
        if (s == LITHE_OK) s = lithe__op_copy(x->be, T, v);
        if (s == LITHE_OK) s = lithe_tensor_reshape(T, 2, (int64_t[]){L, P * Q}, &X2);
        if (s == LITHE_OK) s = new_f32(x, 2, (int64_t[]){O, P * Q}, false, &Z);
        if (s == LITHE_OK) s = lithe__op_gemm(x->be, adj, false, 1.0f, A, X2, 0.0f, Z);
        lithe_tensor_release(v);
        v = NULL;
        if (s == LITHE_OK) s = view(Z, 3, (int64_t[]){P, O, Q}, (int64_t[]){Q, P * Q, 1}, 0, &v);
        if (s == LITHE_OK) s = lithe__op_copy(x->be, *Y, v);
    }
    lithe_tensor_release(X2), lithe_tensor_release(Y2), lithe_tensor_release(T), lithe_tensor_release(Z);
    lithe_tensor_release(v);
    return s;
}

/* ---- The forward on host memory: each axis's taps applied directly, no dense matrices ---- */

/* Y (P, O, Q) = X (P, L, Q) mapped along its middle axis (axis d of the plan) by the taps. */
static lithe_status taps_axis(const rplan *p, int d, const float *X, float *Y, int64_t P, int64_t Q) {
    int64_t L = p->in[d], O = p->out[d];
    int64_t *ti = lithe__malloc((size_t)(O ? O : 1) * 4 * sizeof *ti);
    float *tw = lithe__malloc((size_t)(O ? O : 1) * 4 * sizeof *tw);
    int *tn = lithe__malloc((size_t)(O ? O : 1) * sizeof *tn);
    if (!ti || !tw || !tn) {
        lithe__free(ti), lithe__free(tw), lithe__free(tn);
        return lithe__fail(LITHE_ERR_OOM, "Resize: the taps of %lld outputs", (long long)O);
    }
    for (int64_t o = 0; o < O; o++) tn[o] = axis_taps(p, d, o, ti + 4 * o, tw + 4 * o);
    /* the last axis: a gather of each output's taps, four rows at a time (each output's taps and
     * weights read once for them: lraspp's 21 x 28 x 28 -> 224 wide, ~5 cycles per output one row
     * at a time); the rows past a multiple of four, and the other axes, below */
    int64_t p4 = Q == 1 ? P / 4 * 4 : 0;
    for (int64_t pp = 0; pp < p4; pp += 4) {
        const float *x0 = X + pp * L, *x1 = x0 + L, *x2 = x1 + L, *x3 = x2 + L;
        float *y0 = Y + pp * O, *y1 = y0 + O, *y2 = y1 + O, *y3 = y2 + O;
        for (int64_t o = 0; o < O; o++) {
            if (tn[o] == 2) {
                const int64_t a = ti[4 * o], b = ti[4 * o + 1];
                const float w0 = tw[4 * o], w1 = tw[4 * o + 1];
                y0[o] = w0 * x0[a] + w1 * x0[b], y1[o] = w0 * x1[a] + w1 * x1[b];
                y2[o] = w0 * x2[a] + w1 * x2[b], y3[o] = w0 * x3[a] + w1 * x3[b];
                continue;
            }
            for (int r = 0; r < 4; r++) {
                const float *x = x0 + r * L;
                float acc = 0.0f;
                for (int j = 0; j < tn[o]; j++) acc = j ? acc + tw[4 * o + j] * x[ti[4 * o + j]] : tw[4 * o + j] * x[ti[4 * o + j]];
                y0[r * O + o] = acc;
            }
        }
    }
    for (int64_t pp = p4; pp < P; pp++) {
        const float *x = X + pp * L * Q;
        float *y = Y + pp * O * Q;
        for (int64_t o = 0; o < O; o++) {
            const int64_t *i = ti + 4 * o;
            const float *w = tw + 4 * o;
            float *yr = y + o * Q;
            if (Q == 1 && tn[o] == 2) { /* the last axis: a gather of each output's taps */
                *yr = w[0] * x[i[0]] + w[1] * x[i[1]];
            } else if (Q == 1) {
                float acc = 0.0f;
                for (int j = 0; j < tn[o]; j++) acc = j ? acc + w[j] * x[i[j]] : w[j] * x[i[j]];
                *yr = acc;
            } else if (tn[o] == 0) {
                memset(yr, 0, (size_t)Q * sizeof *yr);
            } else if (tn[o] == 2) { /* linear: rows of Q, vectorised (Y never overlaps X) */
                const float *restrict a = x + i[0] * Q, *restrict b = x + i[1] * Q;
                float *restrict yq = yr;
                float w0 = w[0], w1 = w[1];
                for (int64_t q = 0; q < Q; q++) yq[q] = w0 * a[q] + w1 * b[q];
            } else {
                const float *a = x + i[0] * Q;
                for (int64_t q = 0; q < Q; q++) yr[q] = w[0] * a[q];
                for (int j = 1; j < tn[o]; j++) {
                    const float *b = x + i[j] * Q;
                    for (int64_t q = 0; q < Q; q++) yr[q] += w[j] * b[q];
                }
            }
        }
    }
    lithe__free(ti), lithe__free(tw), lithe__free(tn);
    return LITHE_OK;
}

/* The forward on a host-memory backend: the last axis first (a gather, on the fewest rows while
 * the others are still at their input extents), then the others in order, each a pass over rows. */
static lithe_status resample_host(lithe__gexec *x, const rplan *p, lithe_tensor *X, lithe_tensor **Y) {
    lithe_tensor *cur = lithe_tensor_retain(X);
    lithe_status s = LITHE_OK;
    int64_t shape[LITHE_MAX_DIMS];
    for (int d = 0; d < p->ndim; d++) shape[d] = p->in[d];
    for (int i = 0; i < p->ndim && s == LITHE_OK; i++) {
        int d = i == 0 ? p->ndim - 1 : i - 1;
        if (!axis_moves(p, d)) continue;
        int64_t P = 1, Q = 1;
        for (int k = 0; k < p->ndim; k++) {
            if (k < d) P *= shape[k];
            if (k > d) Q *= shape[k];
        }
        shape[d] = p->out[d];
        lithe_tensor *next = NULL;
        s = new_f32(x, p->ndim, shape, false, &next);
        if (s == LITHE_OK) {
            lithe__storage_touch(next->storage);
            s = taps_axis(p, d, lithe__f32(cur), lithe__f32(next), P, Q);
        }
        lithe_tensor_release(cur);
        cur = next;
    }
    if (s == LITHE_OK) *Y = cur;
    else lithe_tensor_release(cur);
    return s;
}

/* X mapped along every moving axis (forward: first to last; adjoint: last to first). */
static lithe_status resample(lithe__gexec *x, const rplan *p, lithe_tensor *X, bool adj, lithe_tensor **Y) {
    bool moves = false;
    for (int d = 0; d < p->ndim; d++) moves = moves || axis_moves(p, d);
    if (!adj && moves && x->be->host_memory && X->dtype == LITHE_F32 && lithe_tensor_is_contiguous(X))
        return resample_host(x, p, X, Y);
    lithe_tensor *cur = lithe_tensor_retain(X);
    lithe_status s = LITHE_OK;
    for (int i = 0; i < p->ndim && s == LITHE_OK; i++) {
        int d = adj ? p->ndim - 1 - i : i;
        if (!axis_moves(p, d)) continue;
        lithe_tensor *A = NULL, *next = NULL;
        s = axis_matrix(x, p, d, &A);
        if (s == LITHE_OK) s = apply_axis(x, cur, d, A, adj, &next);
        lithe_tensor_release(A);
        lithe_tensor_release(cur);
        cur = next;
    }
    if (s == LITHE_OK && cur == X) { /* nothing moves: a copy */
        s = lithe__gexec_like(x, X, false, Y);
        if (s == LITHE_OK) s = lithe__op_copy(x->be, *Y, X);
        lithe_tensor_release(cur);
        return s;
    }
    if (s == LITHE_OK) *Y = cur;
    else lithe_tensor_release(cur);
    return s;
}

FWD(f_resize) {
    UNUSED_FWD;
    LITHE__TRY(need_inputs(x, node, in, n_in, 1));
    LITHE__TRY(need_float(x, node, in[0], 0));
    rplan p;
    LITHE__TRY(resize_plan(x, node, in, n_in, &p));
    return resample(x, &p, in[0], false, &out[0]);
}
BWD(b_resize) {
    UNUSED_BWD;
    lithe_tensor *dX = NULL, *t = NULL;
    LITHE__TRY(lithe__gexec_grad(x, node, 0, &dX));
    if (!dX) return LITHE_OK;
    rplan p;
    LITHE__TRY(resize_plan(x, node, in, n_in, &p));
    lithe_status s = resample(x, &p, dout[0], true, &t);
    if (s == LITHE_OK) s = acc(x, dX, t);
    lithe_tensor_release(t);
    return s;
}

/* ---- DepthToSpace, SpaceToDepth: a 6-D reshape, a transpose, a reshape (one strided copy) ---- */

/* X's 6-D form, the permutation to the output's 6-D form, and the output's 4-D shape. */
static lithe_status d2s_plan(lithe__gexec *x, size_t node, const lithe_tensor *X, int64_t *x6, int *perm, int64_t *y4) {
    const lithe__onnx_node *n = NODE(x, node);
    if (X->ndim != 4) return fail(x, node, LITHE_ERR_SHAPE, "the input must be 4-D (N, C, H, W), got %d-D", X->ndim);
    int64_t b = attr_i(n, "blocksize", 0), N = X->shape[0], C = X->shape[1], H = X->shape[2], W = X->shape[3];
    if (b < 1) return fail(x, node, LITHE_ERR_VALUE, "blocksize %lld", (long long)b);
    if (!strcmp(n->op_type, "SpaceToDepth")) {
        if (H % b || W % b) return fail(x, node, LITHE_ERR_SHAPE, "H %lld and W %lld must be multiples of blocksize %lld", (long long)H, (long long)W, (long long)b);
        int64_t s6[6] = {N, C, H / b, b, W / b, b};
        static const int p[6] = {0, 3, 5, 1, 2, 4};
        memcpy(x6, s6, sizeof s6), memcpy(perm, p, sizeof p);
        y4[0] = N, y4[1] = C * b * b, y4[2] = H / b, y4[3] = W / b;
        return LITHE_OK;
    }
    if (C % (b * b)) return fail(x, node, LITHE_ERR_SHAPE, "%lld channels are not a multiple of blocksize^2 = %lld", (long long)C, (long long)(b * b));
    const char *mode = attr_s(n, "mode");
    bool crd = mode && !strcmp(mode, "CRD");
    int64_t dcr6[6] = {N, b, b, C / (b * b), H, W}, crd6[6] = {N, C / (b * b), b, b, H, W};
    static const int pdcr[6] = {0, 3, 4, 1, 5, 2}, pcrd[6] = {0, 1, 4, 2, 5, 3};
    memcpy(x6, crd ? crd6 : dcr6, sizeof dcr6), memcpy(perm, crd ? pcrd : pdcr, sizeof pdcr);
    y4[0] = N, y4[1] = C / (b * b), y4[2] = H * b, y4[3] = W * b;
    return LITHE_OK;
}

/* dst (contiguous, numel of src) = src's 6-D form `s6` permuted by perm. */
static lithe_status permute6(lithe__gexec *x, lithe_tensor *src, const int64_t *s6, const int *perm, lithe_tensor *dst) {
    int64_t st[6], shape[6], vst[6];
    contiguous_strides(6, s6, st);
    for (int a = 0; a < 6; a++) shape[a] = s6[perm[a]], vst[a] = st[perm[a]];
    lithe_tensor *v = NULL;
    LITHE__TRY(view(src, 6, shape, vst, 0, &v));
    lithe_status s = lithe__op_copy(x->be, dst, v);
    lithe_tensor_release(v);
    return s;
}

FWD(f_depth_space) {
    UNUSED_FWD;
    LITHE__TRY(need_inputs(x, node, in, n_in, 1));
    LITHE__TRY(need_float(x, node, in[0], 0));
    int64_t x6[6], y4[4];
    int perm[6];
    LITHE__TRY(d2s_plan(x, node, in[0], x6, perm, y4));
    LITHE__TRY(new_f32(x, 4, y4, false, &out[0]));
    return permute6(x, in[0], x6, perm, out[0]);
}
BWD(b_depth_space) {
    UNUSED_BWD;
    lithe_tensor *dX = NULL, *t = NULL;
    LITHE__TRY(lithe__gexec_grad(x, node, 0, &dX));
    if (!dX) return LITHE_OK;
    int64_t x6[6], y4[4], y6[6];
    int perm[6], inv[6];
    LITHE__TRY(d2s_plan(x, node, in[0], x6, perm, y4));
    for (int a = 0; a < 6; a++) y6[a] = x6[perm[a]], inv[perm[a]] = a;
    lithe_status s = lithe__gexec_like(x, dX, false, &t);
    if (s == LITHE_OK) s = permute6(x, dout[0], y6, inv, t);
    if (s == LITHE_OK) s = acc(x, dX, t);
    lithe_tensor_release(t);
    return s;
}
