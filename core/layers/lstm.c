/* LSTM.v1 (Thinc 8.1.7's thinc/layers/lstm.py) and bidirectional.v1: Padded (T, B, nI) ->
 * Padded (T, B, nO).
 *
 * Thinc's parameters, kept byte for byte: "LSTM" is one flat vector holding, for each layer i
 * and direction d in turn, Wx (4H, nI_i), bx (4H,), Wh (4H, H), bh (4H,) with gate blocks in the
 * order (f, i, o, c) — H = nO / dirs, nI_0 = nI, nI_i = H * dirs above; "HC0" (2, depth, dirs, H)
 * holds the initial states. Thinc's forward hands HC0[0] to the backend's c_init argument and
 * HC0[1] to h_init (lstm.py passes (H0, C0) to a function declared (c_init, h_init)), so HC0[0]
 * is the initial *cell* and HC0[1] the initial *hidden* state; lithe reads them the same way so
 * a loaded model predicts as in Thinc. HC0 receives no gradient, as in Thinc.
 *
 * Layers stack as Thinc does: layer i's input is layer i-1's output, the directions
 * concatenated (l2r then r2l). Dropout, as Thinc: at training one mask over the whole flat LSTM
 * vector (weights and biases), the same mask on its gradient.
 *
 * The gradient is the exact one. Thinc 8.1.7's NumpyOps.backprop_lstm is not: it starts the
 * weight gradients from a copy of the weights (it splits `params` where it meant `d_params`), it
 * never back-propagates the gates of each sequence's first step, and it takes dWh from the same
 * step's output instead of the previous one; the generic Ops version leaves dG at zero. lithe
 * matches Thinc's forward to float rounding and checks its gradient against finite differences
 * and a float64 autograd reference (tests/test_recurrent.c). */
#include "../internal.h"
#include "dense.h"

#include <stdio.h>

typedef struct lstm_dir {
    lithe_tensor *G, *C, *Y; /* (N, 4H), (N, H), (N, H) as lstm_scan left them */
} lstm_dir;

typedef struct lstm_bp {
    lithe_backprop base;
    lithe_tensor *rows;        /* (N,) int32 on the backend: packed row -> t * B + b */
    lithe_tensor *size_at_t, *lengths, *indices;
    lithe_tensor *W;           /* the flat weights the forward used (masked when training with dropout) */
    lithe_tensor *mask;        /* (P,) or NULL */
    lithe_tensor *HC0;
    lithe_tensor **Xs;         /* depth: each layer's input (N, nI_i) */
    lstm_dir *dirs;            /* depth * dirs */
    int64_t T, B, N, nI, nO, H, depth, ndirs;
} lstm_bp;

static void lstm_destroy(lithe_backprop *self) {
    lstm_bp *r = (lstm_bp *)self;
    lithe_tensor_release(r->rows);
    lithe_tensor_release(r->size_at_t);
    lithe_tensor_release(r->lengths);
    lithe_tensor_release(r->indices);
    lithe_tensor_release(r->W);
    lithe_tensor_release(r->mask);
    lithe_tensor_release(r->HC0);
    for (int64_t i = 0; r->Xs && i < r->depth; i++) lithe_tensor_release(r->Xs[i]);
    for (int64_t k = 0; r->dirs && k < r->depth * r->ndirs; k++) {
        lithe_tensor_release(r->dirs[k].G);
        lithe_tensor_release(r->dirs[k].C);
        lithe_tensor_release(r->dirs[k].Y);
    }
    lithe__free(r->Xs);
    lithe__free(r->dirs);
}

/* Views of one (layer, direction)'s Wx (4H, nIi), bx, Wh (4H, H), bh inside the flat vector W,
 * starting at *off (advanced past them). */
typedef struct lstm_views {
    lithe_tensor *Wx, *bx, *Wh, *bh;
} lstm_views;

static void views_release(lstm_views *v) {
    lithe_tensor_release(v->Wx);
    lithe_tensor_release(v->bx);
    lithe_tensor_release(v->Wh);
    lithe_tensor_release(v->bh);
    memset(v, 0, sizeof *v);
}

static lithe_status view2(lithe_tensor *flat, int64_t off, int64_t rows, int64_t cols, lithe_tensor **out) {
    lithe_tensor *s = NULL;
    LITHE__TRY(lithe_tensor_slice(flat, 0, off, off + rows * cols, &s));
    lithe_status st = cols ? lithe_tensor_reshape(s, 2, (int64_t[]){rows, cols}, out) : LITHE_OK;
    if (!cols) *out = lithe_tensor_retain(s);
    lithe_tensor_release(s);
    return st;
}

static lithe_status views_at(lithe_tensor *W, int64_t *off, int64_t H, int64_t nIi, lstm_views *v) {
    memset(v, 0, sizeof *v);
    lithe_status s = view2(W, *off, 4 * H, nIi, &v->Wx);
    *off += 4 * H * nIi;
    if (s == LITHE_OK) s = lithe_tensor_slice(W, 0, *off, *off + 4 * H, &v->bx);
    *off += 4 * H;
    if (s == LITHE_OK) s = view2(W, *off, 4 * H, H, &v->Wh);
    *off += 4 * H * H;
    if (s == LITHE_OK) s = lithe_tensor_slice(W, 0, *off, *off + 4 * H, &v->bh);
    *off += 4 * H;
    if (s != LITHE_OK) views_release(v);
    return s;
}

/* HC0 (2, depth, dirs, H) -> the (H,) view of HC0[which, i, d]. */
static lithe_status state_view(lithe_tensor *HC0, int64_t which, int64_t i, int64_t d, int64_t depth,
                               int64_t ndirs, int64_t H, lithe_tensor **out) {
    lithe_tensor *flat = NULL;
    LITHE__TRY(lithe_tensor_reshape(HC0, 1, (int64_t[]){-1}, &flat));
    int64_t off = ((which * depth + i) * ndirs + d) * H;
    lithe_status s = lithe_tensor_slice(flat, 0, off, off + H, out);
    lithe_tensor_release(flat);
    return s;
}

static int64_t flat_size(int64_t nI, int64_t H, int64_t depth, int64_t ndirs) {
    int64_t total = 0, nIi = nI;
    for (int64_t i = 0; i < depth; i++) {
        total += ndirs * (4 * H * nIi + 4 * H + 4 * H * H + 4 * H);
        nIi = H * ndirs;
    }
    return total;
}

static lithe_status lstm_dims(lithe_model *m, int64_t *nI, int64_t *nO, int64_t *H, int64_t *depth, int64_t *ndirs) {
    *nI = lithe__dim_value(m, "nI");
    *nO = lithe__dim_value(m, "nO");
    *depth = lithe__dim_value(m, "depth");
    *ndirs = lithe__dim_value(m, "dirs");
    if (*depth < 1 || (*ndirs != 1 && *ndirs != 2))
        return lithe__fail(LITHE_ERR_VALUE, "%s: depth %lld and dirs %lld (need depth >= 1, dirs 1 or 2)", m->name,
                           (long long)*depth, (long long)*ndirs);
    if (*nO % *ndirs)
        return lithe__fail(LITHE_ERR_VALUE, "%s: nO=%lld is not divisible by the %lld directions", m->name,
                           (long long)*nO, (long long)*ndirs);
    *H = *nO / *ndirs;
    return LITHE_OK;
}

/* The Padded value's data (T, B, width) float32, or a clear error. */
static lithe_status padded_data(const lithe_model *m, const lithe_value *X, const char *what, lithe_tensor **out) {
    if (!X || X->kind != LITHE_VALUE_PADDED)
        return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: expected a Padded %s", m->name, what);
    lithe_tensor *d = X->t[0];
    if (d->dtype != LITHE_F32 || d->ndim != 3) {
        char a[LITHE__SHAPE_BUF];
        return lithe__fail(LITHE_ERR_SHAPE, "%s: expected 3-d float32 Padded data (T, B, width), got %s %s", m->name,
                           lithe_dtype_name(d->dtype), lithe__shape_str(d, a, sizeof a));
    }
    *out = d;
    return LITHE_OK;
}

static lithe_status lstm_init(lithe_model *m, const lithe_value *X, const lithe_value *Y) {
    lithe_tensor *d = NULL;
    if (X) {
        LITHE__TRY(padded_data(m, X, "input", &d));
        LITHE__TRY(lithe__infer_dim(m, "nI", d->shape[2], "X"));
    }
    if (Y) {
        LITHE__TRY(padded_data(m, Y, "output", &d));
        LITHE__TRY(lithe__infer_dim(m, "nO", d->shape[2], "Y"));
    }
    int64_t nI, nO, H, depth, ndirs;
    LITHE__TRY(lstm_dims(m, &nI, &nO, &H, &depth, &ndirs));
    if (nI <= 0 || nO <= 0)
        return lithe__fail(LITHE_ERR_STATE, "%s: nI and nO must be known to initialize (give them or sample data)",
                           m->name);
    int64_t P = flat_size(nI, H, depth, ndirs);
    float *host = lithe__malloc((size_t)P * sizeof *host);
    if (!host) return lithe__oom(m->name, (size_t)P * sizeof *host);
    lithe_init iw = m->init_W ? m->init_W : LITHE_INIT_GLOROT_UNIFORM;
    lithe_init ib = m->init_b ? m->init_b : LITHE_INIT_ZERO;
    lithe_status s = LITHE_OK;
    int64_t off = 0, nIi = nI;
    /* Thinc's order: for each (layer, direction) four (H, nIi) input weights, four (H,) biases,
     * four (H, H) hidden weights and four (H,) biases, each drawn separately. */
    for (int64_t i = 0; i < depth && s == LITHE_OK; i++) {
        for (int64_t dd = 0; dd < ndirs && s == LITHE_OK; dd++) {
            const int64_t shapes[4][2] = {{H, nIi}, {H, 0}, {H, H}, {H, 0}};
            for (int part = 0; part < 4 && s == LITHE_OK; part++) {
                bool bias = part & 1;
                for (int g = 0; g < 4 && s == LITHE_OK; g++) {
                    int64_t n = bias ? H : shapes[part][0] * shapes[part][1];
                    lithe_init k = bias ? ib : iw;
                    if (k == LITHE_INIT_ZERO) memset(host + off, 0, (size_t)n * sizeof *host);
                    else s = lithe_init_fill(k, &m->rng, bias ? 1 : 2, shapes[part], host + off);
                    off += n;
                }
            }
        }
        nIi = H * ndirs;
    }
    lithe_tensor *W = NULL;
    if (s == LITHE_OK) s = lithe__tensor_alloc(m->backend, LITHE_F32, 1, &P, false, &W);
    if (s == LITHE_OK) s = lithe_tensor_write(W, host, (size_t)P * sizeof *host);
    if (s == LITHE_OK) s = lithe_model_set_param(m, "LSTM", W);
    lithe_tensor_release(W);
    lithe__free(host);
    if (s == LITHE_OK) s = lithe__param_init(m, "HC0", LITHE_INIT_ZERO, 4, (int64_t[]){2, depth, ndirs, H});
    return s;
}

/* rows[k] = t * B + b for the k-th packed row, uploaded as int32 ids. */
static lithe_status packed_rows(lithe_model *m, const int32_t *sat, int64_t T, int64_t B, int64_t N,
                                lithe_tensor **out) {
    int32_t *rows = lithe__malloc((size_t)(N ? N : 1) * sizeof *rows);
    if (!rows) return lithe__oom(m->name, (size_t)N * sizeof *rows);
    int64_t k = 0;
    for (int64_t t = 0; t < T; t++)
        for (int64_t b = 0; b < sat[t]; b++) rows[k++] = (int32_t)(t * B + b);
    lithe_status s = lithe__tensor_alloc(m->backend, LITHE_I32, 1, &N, false, out);
    if (s == LITHE_OK && N) s = lithe_tensor_write(*out, rows, (size_t)N * sizeof *rows);
    lithe__free(rows);
    return s;
}

/* Padded data (T, B, w) -> packed (N, w), or back (zeros in the padding). */
static lithe_status pack(lithe_model *m, lithe_tensor *data, lithe_tensor *rows, lithe_tensor **out) {
    int64_t N = rows->shape[0], w = data->shape[2];
    lithe_tensor *c = NULL, *flat = NULL;
    lithe_status s = LITHE_OK;
    if (lithe_tensor_is_contiguous(data)) c = lithe_tensor_retain(data);
    else {
        s = lithe__tensor_like(data, false, &c);
        if (s == LITHE_OK) s = lithe__op_copy(m->backend, c, data);
    }
    if (s == LITHE_OK) s = lithe_tensor_reshape(c, 2, (int64_t[]){data->shape[0] * data->shape[1], w}, &flat);
    if (s == LITHE_OK) s = lithe__tensor_alloc(m->backend, LITHE_F32, 2, (int64_t[]){N, w}, false, out);
    if (s == LITHE_OK && N && w) s = lithe__op_gather_rows(m->backend, flat, rows, *out);
    lithe_tensor_release(c);
    lithe_tensor_release(flat);
    return s;
}

static lithe_status unpack(lithe_model *m, lithe_tensor *Xp, lithe_tensor *rows, int64_t T, int64_t B,
                           lithe_tensor **out) {
    int64_t w = Xp->shape[1];
    lithe_tensor *flat = NULL;
    LITHE__TRY(lithe__tensor_alloc(m->backend, LITHE_F32, 3, (int64_t[]){T, B, w}, true, out));
    lithe_status s = lithe_tensor_reshape(*out, 2, (int64_t[]){T * B, w}, &flat);
    if (s == LITHE_OK && rows->shape[0] && w) s = lithe__op_scatter_add_rows(m->backend, flat, rows, Xp);
    lithe_tensor_release(flat);
    if (s != LITHE_OK) {
        lithe_tensor_release(*out);
        *out = NULL;
    }
    return s;
}

/* Copies src (N, H) into columns [c0, c0 + H) of dst (N, W), or the reverse when `into_src`. */
static lithe_status copy_cols(lithe_model *m, lithe_tensor *dst, int64_t c0, lithe_tensor *src, bool into_src) {
    lithe_tensor *v = NULL;
    LITHE__TRY(lithe_tensor_slice(dst, 1, c0, c0 + src->shape[1], &v));
    lithe_status s = into_src ? lithe__op_copy(m->backend, src, v) : lithe__op_copy(m->backend, v, src);
    lithe_tensor_release(v);
    return s;
}

static lithe_status lstm_backward(lithe_backprop *self, const lithe_value *dYv, lithe_value **dXv) {
    lithe_model *m = self->model;
    lstm_bp *r = (lstm_bp *)self;
    lithe_tensor *dYd = NULL;
    LITHE__TRY(padded_data(m, dYv, "gradient", &dYd));
    if (dYd->shape[0] != r->T || dYd->shape[1] != r->B || dYd->shape[2] != r->nO)
        return lithe__fail(LITHE_ERR_SHAPE, "%s: gradient is (%lld, %lld, %lld), the output was (%lld, %lld, %lld)",
                           m->name, (long long)dYd->shape[0], (long long)dYd->shape[1], (long long)dYd->shape[2],
                           (long long)r->T, (long long)r->B, (long long)r->nO);
    lithe_tensor *grad = NULL, *dW = NULL, *dH = NULL, *dXi = NULL;
    LITHE__TRY(lithe__grad_acc(m, "LSTM", &grad));
    lithe_status s = LITHE_OK;
    if (r->mask) s = lithe__tensor_like(grad, true, &dW);
    else dW = lithe_tensor_retain(grad);
    if (s == LITHE_OK) s = pack(m, dYd, r->rows, &dH);
    const int64_t N = r->N, H = r->H;
    /* offsets of each layer's block in the flat vector */
    int64_t layer_off[64], off = 0, nIi = r->nI;
    if (r->depth > 64) s = lithe__fail(LITHE_ERR_VALUE, "%s: depth %lld above 64", m->name, (long long)r->depth);
    for (int64_t i = 0; i < r->depth && i < 64; i++) {
        layer_off[i] = off;
        off += r->ndirs * (4 * H * nIi + 8 * H + 4 * H * H);
        nIi = H * r->ndirs;
    }
    for (int64_t i = r->depth - 1; i >= 0 && s == LITHE_OK && N; i--) {
        lithe_tensor *Xi = r->Xs[i];
        int64_t w = Xi->shape[1];
        s = lithe__tensor_alloc(m->backend, LITHE_F32, 2, (int64_t[]){N, w}, true, &dXi);
        int64_t o = layer_off[i];
        for (int64_t d = 0; d < r->ndirs && s == LITHE_OK; d++) {
            lstm_views v = {0}, g = {0};
            lithe_tensor *dYi = NULL, *dC = NULL, *dG = NULL, *h0 = NULL, *c0 = NULL;
            int64_t o2 = o;
            lstm_dir *st = &r->dirs[i * r->ndirs + d];
            s = views_at(r->W, &o, H, w, &v);
            if (s == LITHE_OK) s = views_at(dW, &o2, H, w, &g);
            if (s == LITHE_OK) s = state_view(r->HC0, 1, i, d, r->depth, r->ndirs, H, &h0);
            if (s == LITHE_OK) s = state_view(r->HC0, 0, i, d, r->depth, r->ndirs, H, &c0);
            if (s == LITHE_OK) s = lithe__tensor_alloc(m->backend, LITHE_F32, 2, (int64_t[]){N, H}, false, &dYi);
            if (s == LITHE_OK) s = copy_cols(m, dH, d * H, dYi, true);
            if (s == LITHE_OK) s = lithe__tensor_alloc(m->backend, LITHE_F32, 2, (int64_t[]){N, H}, false, &dC);
            if (s == LITHE_OK) s = lithe__tensor_alloc(m->backend, LITHE_F32, 2, (int64_t[]){N, 4 * H}, false, &dG);
            if (s == LITHE_OK)
                s = lithe__op_lstm_scan_backward(m->backend, v.Wh, h0, c0, r->size_at_t, d == 1, st->G, st->C, st->Y,
                                                 dYi, dC, dG, g.Wh);
            /* dWx (4H, nIi) += dGᵀ · Xi; dbx, dbh += column sums of dG; dXi += dG · Wx */
            if (s == LITHE_OK) s = lithe__op_gemm(m->backend, true, false, 1.0f, dG, Xi, 1.0f, g.Wx);
            if (s == LITHE_OK) s = lithe__op_sum_rows(m->backend, dG, 1.0f, g.bx);
            if (s == LITHE_OK) s = lithe__op_sum_rows(m->backend, dG, 1.0f, g.bh);
            if (s == LITHE_OK) s = lithe__op_gemm(m->backend, false, false, 1.0f, dG, v.Wx, 1.0f, dXi);
            views_release(&v);
            views_release(&g);
            lithe_tensor_release(dYi);
            lithe_tensor_release(dC);
            lithe_tensor_release(dG);
            lithe_tensor_release(h0);
            lithe_tensor_release(c0);
        }
        lithe_tensor_release(dH);
        dH = dXi;
        dXi = NULL;
    }
    if (s == LITHE_OK && r->mask) {
        s = lithe__op_mul(m->backend, dW, r->mask, dW);
        if (s == LITHE_OK) s = lithe__op_axpby(m->backend, 1.0f, dW, 1.0f, grad);
    }
    lithe_tensor_release(dW);
    lithe_tensor *dX = NULL;
    if (s == LITHE_OK && dXv) {
        if (!N) { /* nothing ran: dH is still the packed dY; the input gradient is zeros */
            s = lithe__tensor_alloc(m->backend, LITHE_F32, 3, (int64_t[]){r->T, r->B, r->nI}, true, &dX);
        } else {
            s = unpack(m, dH, r->rows, r->T, r->B, &dX);
        }
        if (s == LITHE_OK) s = lithe_value_padded(dX, r->size_at_t, r->lengths, r->indices, dXv);
    }
    lithe_tensor_release(dX);
    lithe_tensor_release(dH);
    return s;
}

static lithe_status lstm_forward(lithe_model *m, const lithe_value *X, bool is_train, lithe_value **Yv,
                                 lithe_backprop **bp) {
    lithe_tensor *data = NULL;
    LITHE__TRY(padded_data(m, X, "input", &data));
    int64_t nI, nO, H, depth, ndirs;
    LITHE__TRY(lstm_dims(m, &nI, &nO, &H, &depth, &ndirs));
    if (data->shape[2] != nI)
        return lithe__fail(LITHE_ERR_SHAPE, "%s: input width %lld does not match nI=%lld", m->name,
                           (long long)data->shape[2], (long long)nI);
    lithe_tensor *W = NULL, *HC0 = NULL;
    LITHE__TRY(lithe__param_get(m, "LSTM", &W));
    LITHE__TRY(lithe__param_get(m, "HC0", &HC0));
    int64_t P = flat_size(nI, H, depth, ndirs);
    if (W->ndim != 1 || W->shape[0] != P || HC0->numel != 2 * depth * ndirs * H || !lithe_tensor_is_contiguous(HC0))
        return lithe__fail(LITHE_ERR_SHAPE, "%s: LSTM has %lld values and HC0 %lld; nI=%lld nO=%lld depth=%lld "
                           "dirs=%lld need %lld and %lld", m->name, (long long)W->numel, (long long)HC0->numel,
                           (long long)nI, (long long)nO, (long long)depth, (long long)ndirs, (long long)P,
                           (long long)(2 * depth * ndirs * H));
    double rate = 0.0;
    if (lithe_model_get_attr_float(m, "dropout_rate", &rate) != LITHE_OK) rate = 0.0;
    if (!(rate >= 0.0 && rate < 1.0))
        return lithe__fail(LITHE_ERR_VALUE, "%s: dropout_rate %g outside [0, 1)", m->name, rate);
    lithe_tensor *sat_t = X->t[1];
    const int64_t T = data->shape[0], B = data->shape[1];
    const int32_t *sat = lithe__tdata(sat_t);
    int64_t N = 0;
    if (sat_t->shape[0] != T)
        return lithe__fail(LITHE_ERR_SHAPE, "%s: size_at_t has %lld entries for %lld timesteps", m->name,
                           (long long)sat_t->shape[0], (long long)T);
    for (int64_t t = 0; t < T; t++) {
        if (sat[t] < 0 || sat[t] > B || (t && sat[t] > sat[t - 1]))
            return lithe__fail(LITHE_ERR_VALUE, "%s: size_at_t[%lld] = %d: sizes must be in [0, %lld] and "
                               "non-increasing (sequences sorted longest first, as list2padded makes them)",
                               m->name, (long long)t, sat[t], (long long)B);
        N += sat[t];
    }
    lstm_bp *r = NULL;
    lithe_status s = lithe__backprop_new(m, sizeof(lstm_bp), lstm_backward, lstm_destroy, (lithe_backprop **)&r);
    if (s != LITHE_OK) return s;
    r->T = T, r->B = B, r->N = N, r->nI = nI, r->nO = nO, r->H = H, r->depth = depth, r->ndirs = ndirs;
    r->size_at_t = lithe_tensor_retain(sat_t);
    r->lengths = lithe_tensor_retain(X->t[2]);
    r->indices = lithe_tensor_retain(X->t[3]);
    r->HC0 = lithe_tensor_retain(HC0);
    r->Xs = lithe__calloc((size_t)depth, sizeof *r->Xs);
    r->dirs = lithe__calloc((size_t)(depth * ndirs), sizeof *r->dirs);
    if (!r->Xs || !r->dirs) s = lithe__oom(m->name, (size_t)(depth * ndirs) * sizeof *r->dirs);
    if (s == LITHE_OK) s = packed_rows(m, sat, T, B, N, &r->rows);
    /* dropout over the weights, Thinc's AWD-LSTM trick */
    if (s == LITHE_OK && is_train && rate > 0.0) {
        s = lithe__tensor_alloc(m->backend, LITHE_F32, 1, &P, false, &r->mask);
        if (s == LITHE_OK) s = lithe__op_dropout_mask(m->backend, m->rng.key, m->rng.counter, (float)rate, r->mask);
        if (s == LITHE_OK) s = lithe__tensor_alloc(m->backend, LITHE_F32, 1, &P, false, &r->W);
        if (s == LITHE_OK) s = lithe__op_mul(m->backend, W, r->mask, r->W);
        if (s == LITHE_OK) m->rng.counter += ((uint64_t)P + 3) / 4;
    } else if (s == LITHE_OK) {
        r->W = lithe_tensor_retain(W);
    }
    lithe_tensor *Xi = NULL, *Yd = NULL;
    if (s == LITHE_OK) s = pack(m, data, r->rows, &Xi);
    int64_t off = 0;
    for (int64_t i = 0; i < depth && s == LITHE_OK; i++) {
        r->Xs[i] = Xi;
        int64_t w = Xi->shape[1];
        lithe_tensor *Hi = NULL;
        if (ndirs == 2) s = lithe__tensor_alloc(m->backend, LITHE_F32, 2, (int64_t[]){N, 2 * H}, false, &Hi);
        for (int64_t d = 0; d < ndirs && s == LITHE_OK; d++) {
            lstm_views v = {0};
            lithe_tensor *h0 = NULL, *c0 = NULL;
            lstm_dir *st = &r->dirs[i * ndirs + d];
            s = views_at(r->W, &off, H, w, &v);
            if (s == LITHE_OK) s = state_view(HC0, 1, i, d, depth, ndirs, H, &h0);
            if (s == LITHE_OK) s = state_view(HC0, 0, i, d, depth, ndirs, H, &c0);
            if (s == LITHE_OK) s = lithe__tensor_alloc(m->backend, LITHE_F32, 2, (int64_t[]){N, 4 * H}, false, &st->G);
            if (s == LITHE_OK) s = lithe__tensor_alloc(m->backend, LITHE_F32, 2, (int64_t[]){N, H}, false, &st->C);
            if (s == LITHE_OK) s = lithe__tensor_alloc(m->backend, LITHE_F32, 2, (int64_t[]){N, H}, false, &st->Y);
            if (s == LITHE_OK && N) {
                /* G (N, 4H) = Xi · Wxᵀ, then the recurrence step by step in the kernel */
                s = lithe__op_gemm(m->backend, false, true, 1.0f, Xi, v.Wx, 0.0f, st->G);
                if (s == LITHE_OK)
                    s = lithe__op_lstm_scan(m->backend, v.Wh, v.bx, v.bh, h0, c0, sat_t, d == 1, st->G, st->C, st->Y);
                if (s == LITHE_OK && ndirs == 2) s = copy_cols(m, Hi, d * H, st->Y, false);
            }
            views_release(&v);
            lithe_tensor_release(h0);
            lithe_tensor_release(c0);
        }
        if (s == LITHE_OK && ndirs == 1) Hi = lithe_tensor_retain(r->dirs[i].Y);
        Xi = Hi; /* the next layer's input (owned here until stored) */
    }
    if (s == LITHE_OK) s = unpack(m, Xi, r->rows, T, B, &Yd);
    lithe_tensor_release(Xi);
    lithe_value *out = NULL;
    if (s == LITHE_OK) s = lithe_value_padded(Yd, sat_t, X->t[2], X->t[3], &out);
    lithe_tensor_release(Yd);
    if (s != LITHE_OK) {
        lithe_backprop_free(&r->base);
        return s;
    }
    *Yv = out;
    if (bp) *bp = &r->base;
    else lithe_backprop_free(&r->base);
    return LITHE_OK;
}

static const lithe__layer_type lstm_type = {"LSTM.v1", lstm_init, lstm_forward, NULL, 0, 0};

lithe_status lithe_lstm(const lithe_lstm_opts *o, lithe_model **out) {
    LITHE__CHECK_ARG(out, "lithe_lstm", "out is NULL");
    *out = NULL;
    lithe_lstm_opts d = {0};
    if (!o) o = &d;
    int64_t depth = o->depth ? o->depth : 1;
    if (o->nO < 0 || o->nI < 0 || depth < 1 || depth > 64)
        return lithe__fail(LITHE_ERR_VALUE, "LSTM: nO=%lld nI=%lld depth=%lld (need nO, nI >= 0, 1 <= depth <= 64)",
                           (long long)o->nO, (long long)o->nI, (long long)o->depth);
    if (!(o->dropout >= 0.0f && o->dropout < 1.0f))
        return lithe__fail(LITHE_ERR_VALUE, "LSTM: dropout %g outside [0, 1)", (double)o->dropout);
    int64_t dirs = o->bi ? 2 : 1;
    if (o->nO % dirs)
        return lithe__fail(LITHE_ERR_VALUE, "LSTM: nO=%lld must be even with bi", (long long)o->nO);
    static const char *const dims[] = {"nO", "nI", "depth", "dirs", NULL};
    static const char *const params[] = {"LSTM", "HC0", NULL};
    lithe_model *m = NULL;
    LITHE__TRY(lithe__model_new(&lstm_type, "lstm", dims, params, &m));
    lithe_status s = LITHE_OK;
    if (o->nO) s = lithe_model_set_dim(m, "nO", o->nO);
    if (s == LITHE_OK && o->nI) s = lithe_model_set_dim(m, "nI", o->nI);
    if (s == LITHE_OK) s = lithe_model_set_dim(m, "depth", depth);
    if (s == LITHE_OK) s = lithe_model_set_dim(m, "dirs", dirs);
    if (s == LITHE_OK) s = lithe_model_set_attr_str(m, "registry_name", "LSTM.v1");
    if (s == LITHE_OK) s = lithe_model_set_attr_float(m, "dropout_rate", o->dropout);
    m->init_W = o->init_W;
    m->init_b = o->init_b;
    if (s != LITHE_OK) {
        lithe_model_free(m);
        return s;
    }
    *out = m;
    return LITHE_OK;
}

/* ---- bidirectional.v1 ----
 * Thinc 8.1.7's bidirectional is kept as it is: its _reverse returns the data unreversed
 * (Xp.data[::1]) and its _split hands both children the first half of dZ (slice(half) is
 * slice(None, half)). So Z = concat(l2r(X), r2l(X)) along the last axis, and the backward
 * gives each child dZ[..., :half] and sums their input gradients. */
typedef struct bi_bp {
    lithe_backprop base;
    lithe_backprop *bp[2];
    lithe_value *Z; /* the output, for the gradient's shape check */
} bi_bp;

static void bi_destroy(lithe_backprop *self) {
    bi_bp *r = (bi_bp *)self;
    lithe_backprop_free(r->bp[0]);
    lithe_backprop_free(r->bp[1]);
    lithe_value_release(r->Z);
}

static lithe_status bi_backward(lithe_backprop *self, const lithe_value *dZ, lithe_value **dXv) {
    lithe_model *m = self->model;
    bi_bp *r = (bi_bp *)self;
    lithe_tensor *dz = NULL;
    LITHE__TRY(padded_data(m, dZ, "gradient", &dz));
    if (!lithe__same_shape(dz, r->Z->t[0]))
        return lithe__fail(LITHE_ERR_SHAPE, "%s: gradient shape does not match the output's", m->name);
    int64_t half = dz->shape[2] / 2;
    lithe_tensor *hv = NULL, *h = NULL;
    lithe_value *dh = NULL, *dX[2] = {NULL, NULL};
    lithe_status s = lithe_tensor_slice(dz, 2, 0, half, &hv);
    if (s == LITHE_OK) s = lithe__tensor_alloc(m->backend, LITHE_F32, 3, hv->shape, false, &h);
    if (s == LITHE_OK) s = lithe__op_copy(m->backend, h, hv);
    if (s == LITHE_OK) s = lithe_value_padded(h, dZ->t[1], dZ->t[2], dZ->t[3], &dh);
    for (int k = 0; k < 2 && s == LITHE_OK; k++) s = lithe_backprop_run(r->bp[k], dh, dXv ? &dX[k] : NULL);
    if (s == LITHE_OK && dXv) {
        lithe_tensor *sum = NULL, *a = dX[0]->t[0], *b = dX[1]->t[0];
        if (dX[0]->kind != LITHE_VALUE_PADDED || dX[1]->kind != LITHE_VALUE_PADDED || !lithe__same_shape(a, b))
            s = lithe__fail(LITHE_ERR_SHAPE, "%s: the two directions' input gradients differ in kind or shape",
                            m->name);
        if (s == LITHE_OK) s = lithe__tensor_alloc(m->backend, LITHE_F32, a->ndim, a->shape, false, &sum);
        if (s == LITHE_OK) s = lithe__op_copy(m->backend, sum, a);
        if (s == LITHE_OK) s = lithe__op_axpby(m->backend, 1.0f, b, 1.0f, sum);
        if (s == LITHE_OK) s = lithe_value_padded(sum, dX[0]->t[1], dX[0]->t[2], dX[0]->t[3], dXv);
        lithe_tensor_release(sum);
    }
    lithe_value_release(dX[0]);
    lithe_value_release(dX[1]);
    lithe_value_release(dh);
    lithe_tensor_release(hv);
    lithe_tensor_release(h);
    return s;
}

static lithe_status bi_forward(lithe_model *m, const lithe_value *X, bool is_train, lithe_value **Zv,
                               lithe_backprop **bp) {
    lithe_tensor *d = NULL;
    LITHE__TRY(padded_data(m, X, "input", &d));
    lithe_value *Y[2] = {NULL, NULL};
    lithe_backprop *b[2] = {NULL, NULL};
    lithe_tensor *Z = NULL;
    lithe_status s = LITHE_OK;
    for (int k = 0; k < 2 && s == LITHE_OK; k++) s = lithe_model_forward(m->layers[k], X, is_train, &Y[k], bp ? &b[k] : NULL);
    for (int k = 0; k < 2 && s == LITHE_OK; k++)
        if (Y[k]->kind != LITHE_VALUE_PADDED || Y[k]->t[0]->dtype != LITHE_F32 || Y[k]->t[0]->ndim != 3)
            s = lithe__fail(LITHE_ERR_SHAPE, "%s: child %d did not return 3-d float32 Padded data", m->name, k);
    if (s == LITHE_OK) {
        lithe_tensor *a = Y[0]->t[0], *c = Y[1]->t[0];
        if (a->shape[0] != c->shape[0] || a->shape[1] != c->shape[1])
            s = lithe__fail(LITHE_ERR_SHAPE, "%s: the children's outputs differ in (T, B)", m->name);
        int64_t wa = a->shape[2], wc = c->shape[2];
        if (s == LITHE_OK)
            s = lithe__tensor_alloc(m->backend, LITHE_F32, 3, (int64_t[]){a->shape[0], a->shape[1], wa + wc}, false, &Z);
        lithe_tensor *v = NULL;
        if (s == LITHE_OK) s = lithe_tensor_slice(Z, 2, 0, wa, &v);
        if (s == LITHE_OK && v->numel) s = lithe__op_copy(m->backend, v, a);
        lithe_tensor_release(v);
        v = NULL;
        if (s == LITHE_OK) s = lithe_tensor_slice(Z, 2, wa, wa + wc, &v);
        if (s == LITHE_OK && v->numel) s = lithe__op_copy(m->backend, v, c);
        lithe_tensor_release(v);
    }
    lithe_value *out = NULL;
    if (s == LITHE_OK) s = lithe_value_padded(Z, Y[0]->t[1], Y[0]->t[2], Y[0]->t[3], &out);
    lithe_tensor_release(Z);
    if (s == LITHE_OK && bp) {
        s = lithe__backprop_new(m, sizeof(bi_bp), bi_backward, bi_destroy, bp);
        if (s == LITHE_OK) {
            bi_bp *r = (bi_bp *)*bp;
            r->bp[0] = b[0], r->bp[1] = b[1];
            b[0] = b[1] = NULL;
            r->Z = lithe_value_retain(out);
        }
    }
    lithe_backprop_free(b[0]);
    lithe_backprop_free(b[1]);
    lithe_value_release(Y[0]);
    lithe_value_release(Y[1]);
    if (s != LITHE_OK) {
        lithe_value_release(out);
        return s;
    }
    *Zv = out;
    return LITHE_OK;
}

/* Thinc's init: both children initialize from X (and each half of Y). */
static lithe_status bi_init(lithe_model *m, const lithe_value *X, const lithe_value *Y) {
    (void)Y; /* Thinc would split Y in halves; Padded Y samples are rare and nO is given */
    for (int k = 0; k < 2; k++) LITHE__TRY(lithe_model_initialize(m->layers[k], X, NULL));
    return LITHE_OK;
}

static const lithe__layer_type bi_type = {"bidirectional.v1", bi_init, bi_forward, NULL, 2, 2};

const lithe__layer_type *const lithe__lstm_types[] = {&lstm_type, &bi_type, NULL};

lithe_status lithe_bidirectional(lithe_model *l2r, lithe_model *r2l, lithe_model **out) {
    LITHE__CHECK_ARG(out, "lithe_bidirectional", "out is NULL");
    *out = NULL;
    if (!l2r) {
        lithe_model_free(r2l);
        return lithe__fail(LITHE_ERR_INVALID_ARG, "bidirectional: l2r is NULL");
    }
    lithe_status s = LITHE_OK;
    if (!r2l) s = lithe_model_copy(l2r, &r2l);
    if (s != LITHE_OK) {
        lithe_model_free(l2r);
        return s;
    }
    size_t n = strlen(l2r->name) + 3;
    char *name = lithe__malloc(n);
    if (!name) {
        lithe_model_free(l2r);
        lithe_model_free(r2l);
        return lithe__oom("bidirectional", n);
    }
    snprintf(name, n, "bi%s", l2r->name);
    lithe_model *m = NULL;
    s = lithe__model_new(&bi_type, name, NULL, NULL, &m);
    lithe__free(name);
    if (s == LITHE_OK) {
        s = lithe__model_add_layer(m, l2r);
        l2r = NULL;
    }
    if (s == LITHE_OK) {
        s = lithe__model_add_layer(m, r2l);
        r2l = NULL;
    }
    lithe_model_free(l2r);
    lithe_model_free(r2l);
    if (s != LITHE_OK) {
        lithe_model_free(m);
        return s;
    }
    *out = m;
    return LITHE_OK;
}
