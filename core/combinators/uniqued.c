/* uniqued.v1 (thinc/layers/uniqued.py): run a layer only on the rows of (N, k) integer ids whose
 * key X[:, column] is unique in the batch, then copy its output rows back to every duplicate — a
 * cache local to one minibatch (spaCy puts it around HashEmbed). The unique keys are sorted and
 * each represented by its first occurrence, as numpy.unique(return_index=True) gives them, so the
 * layer sees the rows in Thinc's order. Backprop: dY summed over duplicates (scatter-add) into the
 * layer's backprop, whose dX is divided by the counts and copied back to every row. The ids are
 * grouped on the host (like Embed's id checks); the float work goes through the backend. */
#include "../layers/dense.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct uniq_bp {
    lithe_backprop base;
    lithe_backprop *inner;  /* the layer's record on the unique rows */
    lithe_tensor *inv;      /* (N,) int32: the unique row of each input row */
    int32_t *counts;        /* (U,) occurrences of each unique key */
    int64_t N, U;
    int ndimY;
    int64_t shapeY[LITHE_MAX_DIMS]; /* the layer's output shape (U, ...) */
} uniq_bp;

typedef struct key_row {
    uint64_t order; /* the key mapped to an unsigned order (signed keys: sign bit flipped) */
    int64_t row;
} key_row;

static int cmp_key_row(const void *a, const void *b) {
    const key_row *x = a, *y = b;
    if (x->order != y->order) return x->order < y->order ? -1 : 1;
    return x->row < y->row ? -1 : x->row > y->row; /* stable: the first occurrence leads */
}

static lithe_model *child(const lithe_model *m) { return m->layers[0]; }

/* The rows of a 2-d (U, ...) float32 output as (U, width). */
static lithe_status as_rows(const lithe_tensor *t, lithe_tensor **out) {
    int64_t w = 1;
    for (int d = 1; d < t->ndim; d++) w *= t->shape[d];
    return lithe_tensor_reshape((lithe_tensor *)t, 2, (int64_t[]){t->shape[0], w}, out);
}

static lithe_status uniq_backward(lithe_backprop *self, const lithe_value *dYv, lithe_value **dX) {
    uniq_bp *r = (uniq_bp *)self;
    lithe_model *m = self->model;
    if (!r->inner) return lithe__fail(LITHE_ERR_STATE, "%s: backprop has no inner record", m->name);
    const lithe_tensor *dY = lithe_value_get_tensor(dYv);
    if (!dY || lithe_value_kind_of(dYv) != LITHE_VALUE_TENSOR || dY->dtype != LITHE_F32 || dY->ndim != r->ndimY ||
        dY->shape[0] != r->N || !lithe_tensor_is_contiguous(dY))
        return lithe__fail(LITHE_ERR_SHAPE, "%s: expected a contiguous float32 gradient with %lld rows shaped like the output",
                           m->name, (long long)r->N);
    for (int d = 1; d < r->ndimY; d++)
        if (dY->shape[d] != r->shapeY[d])
            return lithe__fail(LITHE_ERR_SHAPE, "%s: gradient shape does not match the output", m->name);
    lithe_tensor *dUq = NULL, *dUrows = NULL, *dYrows = NULL;
    lithe_value *dUv = NULL, *dXu = NULL;
    // dY (N, w) -> dY_uniq (U, w): duplicates summed
    lithe_status s = lithe__tensor_alloc(m->backend, LITHE_F32, r->ndimY, r->shapeY, true, &dUq);
    if (s == LITHE_OK) s = as_rows(dUq, &dUrows);
    if (s == LITHE_OK) s = as_rows(dY, &dYrows);
    if (s == LITHE_OK && r->N) s = lithe__op_scatter_add_rows(m->backend, dUrows, r->inv, dYrows);
    if (s == LITHE_OK) s = lithe_value_tensor(dUq, &dUv);
    if (s == LITHE_OK) s = lithe_backprop_run(r->inner, dUv, dX ? &dXu : NULL);
    lithe_tensor_release(dUq);
    lithe_tensor_release(dUrows);
    lithe_tensor_release(dYrows);
    lithe_value_release(dUv);
    if (s != LITHE_OK || !dX) {
        lithe_value_release(dXu);
        return s;
    }
    /* (d_uniques / counts)[inv], computed on the host in float32 */
    const lithe_tensor *du = lithe_value_get_tensor(dXu);
    if (!du || lithe_value_kind_of(dXu) != LITHE_VALUE_TENSOR || du->ndim < 1 || du->shape[0] != r->U) {
        lithe_value_release(dXu);
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "%s: the layer's input gradient is not an array of %lld rows", m->name,
                           (long long)r->U);
    }
    lithe_tensor *duf = NULL, *out = NULL;
    int64_t shape[LITHE_MAX_DIMS], w = 1;
    for (int d = 0; d < du->ndim; d++) shape[d] = du->shape[d];
    for (int d = 1; d < du->ndim; d++) w *= du->shape[d];
    shape[0] = r->N;
    s = lithe_tensor_cast(du, LITHE_F32, &duf);
    float *src = NULL, *dst = NULL;
    if (s == LITHE_OK) {
        src = lithe__malloc((size_t)(r->U * w + 1) * sizeof(float));
        dst = lithe__malloc((size_t)(r->N * w + 1) * sizeof(float));
        if (!src || !dst) s = lithe__oom(m->name, (size_t)(r->U + r->N) * (size_t)w * sizeof(float));
    }
    if (s == LITHE_OK) s = lithe_tensor_read(duf, src, (size_t)(r->U * w) * sizeof(float));
    if (s == LITHE_OK) {
        for (int64_t u = 0; u < r->U; u++)
            for (int64_t j = 0; j < w; j++) src[u * w + j] /= (float)r->counts[u];
        const int32_t *inv = lithe__tdata(r->inv);
        for (int64_t i = 0; i < r->N; i++) memcpy(dst + i * w, src + (int64_t)inv[i] * w, (size_t)w * sizeof(float));
        s = lithe__tensor_alloc(m->backend, LITHE_F32, du->ndim, shape, false, &out);
    }
    if (s == LITHE_OK) s = lithe_tensor_write(out, dst, (size_t)(r->N * w) * sizeof(float));
    lithe__free(src);
    lithe__free(dst);
    lithe_tensor_release(duf);
    lithe_value_release(dXu);
    if (s != LITHE_OK) {
        lithe_tensor_release(out);
        return s;
    }
    return lithe__emit(out, dX);
}

static void uniq_destroy(lithe_backprop *self) {
    uniq_bp *r = (uniq_bp *)self;
    lithe_backprop_free(r->inner);
    lithe_tensor_release(r->inv);
    lithe__free(r->counts);
}

static bool int_dtype(lithe_dtype d) { return d == LITHE_I32 || d == LITHE_I64 || d == LITHE_U64; }

static lithe_status uniq_forward(lithe_model *m, const lithe_value *Xv, bool is_train, lithe_value **Yv,
                                 lithe_backprop **bp) {
    lithe_tensor *X = lithe_value_kind_of(Xv) == LITHE_VALUE_TENSOR ? lithe_value_get_tensor(Xv) : NULL;
    if (!Xv || !X) return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: expected a (N, k) array of integer ids", m->name);
    if (!int_dtype(X->dtype))
        return lithe__fail(LITHE_ERR_DTYPE, "%s: ids must be int32, int64 or uint64, got %s", m->name,
                           lithe_dtype_name(X->dtype));
    if (X->ndim != 2) return lithe__fail(LITHE_ERR_SHAPE, "%s: ids must be 2-d (N, k), got %d-d", m->name, X->ndim);
    /* Thinc: fewer than two elements go straight to the layer */
    if (X->numel < 2) return lithe_model_forward(child(m), Xv, is_train, Yv, bp);
    int64_t column = 0;
    LITHE__TRY(lithe_model_get_attr_int(m, "column", &column));
    if (column < 0 || column >= X->shape[1])
        return lithe__fail(LITHE_ERR_SHAPE, "%s: column %lld outside the %lld columns of the ids", m->name,
                           (long long)column, (long long)X->shape[1]);
    int64_t N = X->shape[0], k = X->shape[1];
    size_t es = lithe_dtype_size(X->dtype), rowb = (size_t)k * es;
    uint8_t *host = lithe__malloc((size_t)N * rowb), *uhost = NULL;
    key_row *kr = lithe__malloc((size_t)N * sizeof *kr);
    int32_t *inv = lithe__malloc((size_t)N * sizeof *inv), *counts = NULL;
    int64_t *first = lithe__malloc((size_t)N * sizeof *first);
    lithe_status s = host && kr && inv && first ? LITHE_OK : lithe__oom(m->name, (size_t)N * (rowb + 32));
    if (s == LITHE_OK) s = lithe_tensor_read(X, host, (size_t)N * rowb);
    for (int64_t i = 0; s == LITHE_OK && i < N; i++) {
        const uint8_t *p = host + (size_t)i * rowb + (size_t)column * es;
        uint64_t key;
        if (X->dtype == LITHE_I32) {
            int32_t v;
            memcpy(&v, p, 4);
            key = (uint64_t)(int64_t)v ^ ((uint64_t)1 << 63);
        } else {
            memcpy(&key, p, 8);
            if (X->dtype == LITHE_I64) key ^= (uint64_t)1 << 63;
        }
        kr[i].order = key;
        kr[i].row = i;
    }
    int64_t U = 0;
    if (s == LITHE_OK) {
        qsort(kr, (size_t)N, sizeof *kr, cmp_key_row);
        counts = lithe__calloc((size_t)N, sizeof *counts);
        if (!counts) s = lithe__oom(m->name, (size_t)N * sizeof *counts);
    }
    for (int64_t i = 0; s == LITHE_OK && i < N; i++) {
        if (i == 0 || kr[i].order != kr[i - 1].order) first[U++] = kr[i].row;
        inv[kr[i].row] = (int32_t)(U - 1);
        counts[U - 1]++;
    }
    lithe_tensor *Xu = NULL, *invt = NULL;
    lithe_value *Xuv = NULL, *Yu = NULL;
    lithe_backprop *inner = NULL;
    if (s == LITHE_OK) {
        uhost = lithe__malloc((size_t)U * rowb);
        if (!uhost) s = lithe__oom(m->name, (size_t)U * rowb);
    }
    for (int64_t u = 0; s == LITHE_OK && u < U; u++) memcpy(uhost + (size_t)u * rowb, host + (size_t)first[u] * rowb, rowb);
    // X_uniq (U, k): the first row of each unique key, in key order
    if (s == LITHE_OK) s = lithe__tensor_alloc(m->backend, X->dtype, 2, (int64_t[]){U, k}, false, &Xu);
    if (s == LITHE_OK) s = lithe_tensor_write(Xu, uhost, (size_t)U * rowb);
    if (s == LITHE_OK) s = lithe__host_i32(N, inv, &invt);
    if (s == LITHE_OK) s = lithe_value_tensor(Xu, &Xuv);
    if (s == LITHE_OK) s = lithe_model_forward(child(m), Xuv, is_train, &Yu, bp ? &inner : NULL);
    lithe__free(host);
    lithe__free(uhost);
    lithe__free(kr);
    lithe__free(inv);
    lithe__free(first);
    lithe_tensor_release(Xu);
    lithe_value_release(Xuv);
    // Y (N, ...) = Y_uniq[inv]
    lithe_tensor *Yt = NULL, *Yurows = NULL, *Yrows = NULL;
    const lithe_tensor *yu = s == LITHE_OK ? lithe_value_get_tensor(Yu) : NULL;
    if (s == LITHE_OK && (!yu || lithe_value_kind_of(Yu) != LITHE_VALUE_TENSOR || yu->dtype != LITHE_F32 ||
                          yu->ndim < 1 || yu->shape[0] != U || !lithe_tensor_is_contiguous(yu)))
        s = lithe__fail(LITHE_ERR_UNSUPPORTED, "%s: the layer must return a float32 array with a row per unique id",
                        m->name);
    int64_t shape[LITHE_MAX_DIMS];
    if (s == LITHE_OK) {
        for (int d = 0; d < yu->ndim; d++) shape[d] = yu->shape[d];
        shape[0] = N;
        s = lithe__tensor_alloc(m->backend, LITHE_F32, yu->ndim, shape, false, &Yt);
    }
    if (s == LITHE_OK) s = as_rows(yu, &Yurows);
    if (s == LITHE_OK) s = as_rows(Yt, &Yrows);
    if (s == LITHE_OK) s = lithe__op_gather_rows(m->backend, Yurows, invt, Yrows);
    lithe_tensor_release(Yurows);
    lithe_tensor_release(Yrows);
    if (s == LITHE_OK && bp) {
        s = lithe__backprop_new(m, sizeof(uniq_bp), uniq_backward, uniq_destroy, bp);
        if (s == LITHE_OK) {
            uniq_bp *r = (uniq_bp *)*bp;
            r->inner = inner;
            r->inv = invt;
            r->counts = counts;
            r->N = N;
            r->U = U;
            r->ndimY = yu->ndim;
            for (int d = 0; d < yu->ndim; d++) r->shapeY[d] = yu->shape[d];
            inner = NULL;
            invt = NULL;
            counts = NULL;
        }
    }
    lithe_backprop_free(inner);
    lithe_tensor_release(invt);
    lithe__free(counts);
    lithe_value_release(Yu);
    return lithe__emit_output(s, Yt, Yv, bp);
}

static lithe_status uniq_init(lithe_model *m, const lithe_value *X, const lithe_value *Y) {
    LITHE__TRY(lithe_model_initialize(child(m), X, Y));
    /* Thinc copies the layer's dims once they are set */
    int64_t nI = lithe__dim_value(child(m), "nI"), nO = lithe__dim_value(child(m), "nO");
    if (nI) LITHE__TRY(lithe__infer_dim(m, "nI", nI, "the layer"));
    if (nO) LITHE__TRY(lithe__infer_dim(m, "nO", nO, "the layer"));
    return LITHE_OK;
}

static const lithe__layer_type uniqued_type = {"uniqued.v1", uniq_init, uniq_forward, NULL, 1, 1};
const lithe__layer_type *const lithe__uniqued_types[] = {&uniqued_type, NULL};

lithe_status lithe_uniqued(lithe_model *layer, int64_t column, lithe_model **out) {
    if (out) *out = NULL;
    if (!out || !layer) {
        lithe_model_free(layer);
        return lithe__fail(LITHE_ERR_INVALID_ARG, "uniqued.v1: layer or out is NULL");
    }
    if (column < 0) {
        lithe_model_free(layer);
        return lithe__fail(LITHE_ERR_VALUE, "uniqued.v1: column must be >= 0, got %lld", (long long)column);
    }
    static const char *const dims[] = {"nO", "nI", NULL};
    char name[256];
    snprintf(name, sizeof name, "uniqued(%s)", layer->name);
    lithe_model *m = NULL;
    lithe_status s = lithe__model_new(&uniqued_type, name, dims, NULL, &m);
    if (s != LITHE_OK) {
        lithe_model_free(layer);
        return s;
    }
    s = lithe_model_set_attr_int(m, "column", column);
    if (s == LITHE_OK) s = lithe__model_add_layer(m, layer);
    else lithe_model_free(layer);
    if (s != LITHE_OK) {
        lithe_model_free(m);
        return s;
    }
    *out = m;
    return LITHE_OK;
}
