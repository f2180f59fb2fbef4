/* ParametricAttention.v1, CauchySimilarity.v1 and siamese.v1, as Thinc 8.1.7
 * (thinc/layers/parametricattention.py, cauchysimilarity.py, siamese.py).
 *
 * ParametricAttention: Ragged (N, nO) -> Ragged (N, nO); each row scaled by its weight in the
 * per-sequence softmax of clip(X · Q, -20, 20) (Thinc's softmax_sequences: no max subtraction,
 * the clip not differentiated). Zero-length sequences are allowed.
 * CauchySimilarity: a tuple (X1, X2) of (B, nI) arrays -> (B,) = 1 / (1 + sum W (X1 - X2)^2).
 * siamese(layer, similarity): (X1, X2) -> similarity((layer(X1), layer(X2))), one layer node
 * run twice. */
#include "../internal.h"
#include "dense.h"

#include <stdio.h>

/* ---- ParametricAttention ---- */

typedef struct attn_bp {
    lithe_backprop base;
    lithe_tensor *X, *Q, *A, *lengths;
} attn_bp;

static void attn_destroy(lithe_backprop *self) {
    attn_bp *r = (attn_bp *)self;
    lithe_tensor_release(r->X);
    lithe_tensor_release(r->Q);
    lithe_tensor_release(r->A);
    lithe_tensor_release(r->lengths);
}

static lithe_status ragged_2d(const lithe_model *m, const lithe_value *v, const char *what, lithe_tensor **out) {
    if (!v || v->kind != LITHE_VALUE_RAGGED)
        return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: expected a Ragged %s", m->name, what);
    lithe_tensor *d = v->t[0];
    if (d->dtype != LITHE_F32 || d->ndim != 2) {
        char a[LITHE__SHAPE_BUF];
        return lithe__fail(LITHE_ERR_SHAPE, "%s: expected 2-d float32 Ragged data, got %s %s", m->name,
                           lithe_dtype_name(d->dtype), lithe__shape_str(d, a, sizeof a));
    }
    *out = d;
    return LITHE_OK;
}

static lithe_status contiguous(lithe_model *m, lithe_tensor *t, lithe_tensor **out) {
    if (lithe_tensor_is_contiguous(t)) {
        *out = lithe_tensor_retain(t);
        return LITHE_OK;
    }
    LITHE__TRY(lithe__tensor_like(t, false, out));
    lithe_status s = lithe__op_copy(m->backend, *out, t);
    if (s != LITHE_OK) {
        lithe_tensor_release(*out);
        *out = NULL;
    }
    return s;
}

static lithe_status attn_init(lithe_model *m, const lithe_value *X, const lithe_value *Y) {
    (void)Y;
    if (X) {
        lithe_tensor *d = NULL;
        LITHE__TRY(ragged_2d(m, X, "input", &d));
        LITHE__TRY(lithe__infer_dim(m, "nO", d->shape[1], "X"));
    }
    int64_t nO = lithe__dim_value(m, "nO");
    if (nO <= 0) return lithe__fail(LITHE_ERR_STATE, "%s: nO must be known to initialize", m->name);
    return lithe__param_init(m, "Q", LITHE_INIT_UNIFORM, 1, &nO);
}

static lithe_status attn_backward(lithe_backprop *self, const lithe_value *dYv, lithe_value **dXv) {
    lithe_model *m = self->model;
    attn_bp *r = (attn_bp *)self;
    lithe_tensor *d = NULL, *dY = NULL, *dX = NULL, *dQ = NULL;
    LITHE__TRY(ragged_2d(m, dYv, "gradient", &d));
    if (!lithe__same_shape(d, r->X))
        return lithe__fail(LITHE_ERR_SHAPE, "%s: gradient is (%lld, %lld), the output was (%lld, %lld)", m->name,
                           (long long)d->shape[0], (long long)d->shape[1], (long long)r->X->shape[0],
                           (long long)r->X->shape[1]);
    LITHE__TRY(lithe__grad_acc(m, "Q", &dQ));
    lithe_status s = contiguous(m, d, &dY);
    if (s == LITHE_OK) s = lithe__tensor_like(r->X, true, &dX);
    if (s == LITHE_OK && r->X->numel)
        s = lithe__op_para_attention_backward(m->backend, r->X, r->Q, r->A, r->lengths, dY, dX, dQ);
    if (s == LITHE_OK && dXv) s = lithe_value_ragged(dX, dYv->t[1], dXv);
    lithe_tensor_release(dY);
    lithe_tensor_release(dX);
    return s;
}

static lithe_status attn_forward(lithe_model *m, const lithe_value *Xv, bool is_train, lithe_value **Yv,
                                 lithe_backprop **bp) {
    (void)is_train;
    lithe_tensor *d = NULL, *Q = NULL;
    LITHE__TRY(ragged_2d(m, Xv, "input", &d));
    LITHE__TRY(lithe__param_get(m, "Q", &Q));
    int64_t nO = lithe__dim_value(m, "nO");
    if (d->shape[1] != nO || Q->numel != nO)
        return lithe__fail(LITHE_ERR_SHAPE, "%s: input width %lld does not match nO=%lld (Q has %lld)", m->name,
                           (long long)d->shape[1], (long long)nO, (long long)Q->numel);
    int64_t N = d->shape[0];
    lithe_tensor *X = NULL, *A = NULL, *Y = NULL;
    lithe_status s = contiguous(m, d, &X);
    if (s == LITHE_OK) s = lithe__tensor_alloc(m->backend, LITHE_F32, 1, &N, false, &A);
    if (s == LITHE_OK) s = lithe__tensor_alloc(m->backend, LITHE_F32, 2, (int64_t[]){N, nO}, false, &Y);
    if (s == LITHE_OK && N) s = lithe__op_para_attention(m->backend, X, Q, Xv->t[1], A, Y);
    lithe_value *out = NULL;
    if (s == LITHE_OK) s = lithe_value_ragged(Y, Xv->t[1], &out);
    if (s == LITHE_OK && bp) {
        s = lithe__backprop_new(m, sizeof(attn_bp), attn_backward, attn_destroy, bp);
        if (s == LITHE_OK) {
            attn_bp *r = (attn_bp *)*bp;
            r->X = lithe_tensor_retain(X);
            r->Q = lithe_tensor_retain(Q);
            r->A = lithe_tensor_retain(A);
            r->lengths = lithe_tensor_retain(Xv->t[1]);
        }
    }
    lithe_tensor_release(X);
    lithe_tensor_release(A);
    lithe_tensor_release(Y);
    if (s != LITHE_OK) {
        lithe_value_release(out);
        return s;
    }
    *Yv = out;
    return LITHE_OK;
}

static const lithe__layer_type attn_type = {"ParametricAttention.v1", attn_init, attn_forward, NULL, 0, 0};

lithe_status lithe_parametric_attention(int64_t nO, lithe_model **out) {
    LITHE__CHECK_ARG(out, "lithe_parametric_attention", "out is NULL");
    *out = NULL;
    if (nO < 0) return lithe__fail(LITHE_ERR_VALUE, "ParametricAttention: nO=%lld is negative", (long long)nO);
    static const char *const dims[] = {"nO", NULL};
    static const char *const params[] = {"Q", NULL};
    lithe_model *m = NULL;
    LITHE__TRY(lithe__model_new(&attn_type, "para-attn", dims, params, &m));
    lithe_status s = nO ? lithe_model_set_dim(m, "nO", nO) : LITHE_OK;
    if (s != LITHE_OK) {
        lithe_model_free(m);
        return s;
    }
    *out = m;
    return LITHE_OK;
}

/* ---- CauchySimilarity ---- */

typedef struct cauchy_bp {
    lithe_backprop base;
    lithe_tensor *X1, *X2, *W, *sim;
} cauchy_bp;

static void cauchy_destroy(lithe_backprop *self) {
    cauchy_bp *r = (cauchy_bp *)self;
    lithe_tensor_release(r->X1);
    lithe_tensor_release(r->X2);
    lithe_tensor_release(r->W);
    lithe_tensor_release(r->sim);
}

/* The (X1, X2) pair: a TUPLE of two float32 (B, nI) arrays of one shape. */
static lithe_status pair_of(const lithe_model *m, const lithe_value *v, lithe_tensor **a, lithe_tensor **b) {
    if (!v || v->kind != LITHE_VALUE_TUPLE || v->n != 2)
        return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: expected a tuple (X1, X2) of two arrays", m->name);
    LITHE__TRY(lithe__value_f32_2d(v->items[0], m->name, a));
    LITHE__TRY(lithe__value_f32_2d(v->items[1], m->name, b));
    if (!lithe__same_shape(*a, *b)) {
        char s1[LITHE__SHAPE_BUF], s2[LITHE__SHAPE_BUF];
        return lithe__fail(LITHE_ERR_SHAPE, "%s: X1 %s and X2 %s differ in shape", m->name,
                           lithe__shape_str(*a, s1, sizeof s1), lithe__shape_str(*b, s2, sizeof s2));
    }
    return LITHE_OK;
}

static lithe_status cauchy_init(lithe_model *m, const lithe_value *X, const lithe_value *Y) {
    (void)Y;
    if (X) {
        lithe_tensor *a = NULL, *b = NULL;
        LITHE__TRY(pair_of(m, X, &a, &b));
        LITHE__TRY(lithe__infer_dim(m, "nI", a->shape[1], "X"));
    }
    int64_t nI = lithe__dim_value(m, "nI");
    if (nI <= 0) return lithe__fail(LITHE_ERR_STATE, "%s: nI must be known to initialize", m->name);
    lithe_tensor *W = NULL;
    LITHE__TRY(lithe__tensor_alloc(m->backend, LITHE_F32, 1, &nI, false, &W));
    lithe_status s = lithe__op_fill(m->backend, W, 1.0f); /* Thinc: W = 1 */
    if (s == LITHE_OK) s = lithe_model_set_param(m, "W", W);
    lithe_tensor_release(W);
    return s;
}

static lithe_status cauchy_backward(lithe_backprop *self, const lithe_value *dYv, lithe_value **dXv) {
    lithe_model *m = self->model;
    cauchy_bp *r = (cauchy_bp *)self;
    int64_t B = r->X1->shape[0];
    if (!dYv || dYv->kind != LITHE_VALUE_TENSOR || dYv->t[0]->dtype != LITHE_F32 || dYv->t[0]->numel != B ||
        dYv->t[0]->ndim > 2 || (dYv->t[0]->ndim == 2 && dYv->t[0]->shape[1] != 1))
        return lithe__fail(LITHE_ERR_SHAPE, "%s: expected a float32 (%lld,) gradient", m->name, (long long)B);
    lithe_tensor *dW = NULL, *dsim = NULL, *dX1 = NULL, *dX2 = NULL;
    LITHE__TRY(lithe__grad_acc(m, "W", &dW));
    lithe_status s = contiguous(m, dYv->t[0], &dsim);
    if (s == LITHE_OK) s = lithe__tensor_like(r->X1, true, &dX1);
    if (s == LITHE_OK) s = lithe__tensor_like(r->X2, true, &dX2);
    if (s == LITHE_OK && r->X1->numel)
        s = lithe__op_cauchy_similarity_backward(m->backend, r->X1, r->X2, r->W, r->sim, dsim, dX1, dX2, dW);
    if (s == LITHE_OK && dXv) {
        lithe_value *items[2] = {NULL, NULL};
        s = lithe_value_tensor(dX1, &items[0]);
        if (s == LITHE_OK) s = lithe_value_tensor(dX2, &items[1]);
        if (s == LITHE_OK) s = lithe_value_tuple(2, items, dXv);
        lithe_value_release(items[0]);
        lithe_value_release(items[1]);
    }
    lithe_tensor_release(dsim);
    lithe_tensor_release(dX1);
    lithe_tensor_release(dX2);
    return s;
}

static lithe_status cauchy_forward(lithe_model *m, const lithe_value *Xv, bool is_train, lithe_value **Yv,
                                   lithe_backprop **bp) {
    (void)is_train;
    lithe_tensor *a = NULL, *b = NULL, *W = NULL;
    LITHE__TRY(pair_of(m, Xv, &a, &b));
    LITHE__TRY(lithe__param_get(m, "W", &W));
    int64_t nI = lithe__dim_value(m, "nI"), B = a->shape[0];
    if (a->shape[1] != nI || W->numel != nI)
        return lithe__fail(LITHE_ERR_SHAPE, "%s: input width %lld does not match nI=%lld", m->name,
                           (long long)a->shape[1], (long long)nI);
    lithe_tensor *X1 = NULL, *X2 = NULL, *sim = NULL;
    lithe_status s = contiguous(m, a, &X1);
    if (s == LITHE_OK) s = contiguous(m, b, &X2);
    if (s == LITHE_OK) s = lithe__tensor_alloc(m->backend, LITHE_F32, 1, &B, false, &sim);
    if (s == LITHE_OK && B) s = lithe__op_cauchy_similarity(m->backend, X1, X2, W, sim);
    if (s == LITHE_OK && bp) {
        s = lithe__backprop_new(m, sizeof(cauchy_bp), cauchy_backward, cauchy_destroy, bp);
        if (s == LITHE_OK) {
            cauchy_bp *r = (cauchy_bp *)*bp;
            r->X1 = lithe_tensor_retain(X1);
            r->X2 = lithe_tensor_retain(X2);
            r->W = lithe_tensor_retain(W);
            r->sim = lithe_tensor_retain(sim);
        }
    }
    lithe_tensor_release(X1);
    lithe_tensor_release(X2);
    return lithe__emit_output(s, sim, Yv, bp);
}

static const lithe__layer_type cauchy_type = {"CauchySimilarity.v1", cauchy_init, cauchy_forward, NULL, 0, 0};

lithe_status lithe_cauchy_similarity(int64_t nI, lithe_model **out) {
    LITHE__CHECK_ARG(out, "lithe_cauchy_similarity", "out is NULL");
    *out = NULL;
    if (nI < 0) return lithe__fail(LITHE_ERR_VALUE, "CauchySimilarity: nI=%lld is negative", (long long)nI);
    static const char *const dims[] = {"nI", "nO", NULL};
    static const char *const params[] = {"W", NULL};
    lithe_model *m = NULL;
    LITHE__TRY(lithe__model_new(&cauchy_type, "cauchy_similarity", dims, params, &m));
    lithe_status s = lithe_model_set_dim(m, "nO", 1);
    if (s == LITHE_OK && nI) s = lithe_model_set_dim(m, "nI", nI);
    if (s != LITHE_OK) {
        lithe_model_free(m);
        return s;
    }
    *out = m;
    return LITHE_OK;
}

/* ---- siamese ---- */

typedef struct siamese_bp {
    lithe_backprop base;
    lithe_backprop *bp1, *bp2, *bps;
} siamese_bp;

static void siamese_destroy(lithe_backprop *self) {
    siamese_bp *r = (siamese_bp *)self;
    lithe_backprop_free(r->bp1);
    lithe_backprop_free(r->bp2);
    lithe_backprop_free(r->bps);
}

static lithe_status siamese_backward(lithe_backprop *self, const lithe_value *dY, lithe_value **dXv) {
    lithe_model *m = self->model;
    siamese_bp *r = (siamese_bp *)self;
    lithe_value *dv = NULL, *dX[2] = {NULL, NULL};
    LITHE__TRY(lithe_backprop_run(r->bps, dY, &dv));
    lithe_status s = LITHE_OK;
    if (dv->kind != LITHE_VALUE_TUPLE || dv->n != 2)
        s = lithe__fail(LITHE_ERR_INVALID_ARG, "%s: the similarity's input gradient is not a pair", m->name);
    if (s == LITHE_OK) s = lithe_backprop_run(r->bp1, dv->items[0], dXv ? &dX[0] : NULL);
    if (s == LITHE_OK) s = lithe_backprop_run(r->bp2, dv->items[1], dXv ? &dX[1] : NULL);
    if (s == LITHE_OK && dXv) s = lithe_value_tuple(2, dX, dXv);
    lithe_value_release(dX[0]);
    lithe_value_release(dX[1]);
    lithe_value_release(dv);
    return s;
}

static lithe_status siamese_forward(lithe_model *m, const lithe_value *Xv, bool is_train, lithe_value **Yv,
                                    lithe_backprop **bp) {
    if (!Xv || Xv->kind != LITHE_VALUE_TUPLE || Xv->n != 2)
        return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: expected a tuple (X1, X2)", m->name);
    lithe_value *v[2] = {NULL, NULL}, *pair = NULL, *out = NULL;
    lithe_backprop *b1 = NULL, *b2 = NULL, *bs = NULL;
    lithe_status s = lithe_model_forward(m->layers[0], Xv->items[0], is_train, &v[0], bp ? &b1 : NULL);
    if (s == LITHE_OK) s = lithe_model_forward(m->layers[0], Xv->items[1], is_train, &v[1], bp ? &b2 : NULL);
    if (s == LITHE_OK) s = lithe_value_tuple(2, v, &pair);
    if (s == LITHE_OK) s = lithe_model_forward(m->layers[1], pair, is_train, &out, bp ? &bs : NULL);
    if (s == LITHE_OK && bp) {
        s = lithe__backprop_new(m, sizeof(siamese_bp), siamese_backward, siamese_destroy, bp);
        if (s == LITHE_OK) {
            siamese_bp *r = (siamese_bp *)*bp;
            r->bp1 = b1, r->bp2 = b2, r->bps = bs;
            b1 = b2 = bs = NULL;
        }
    }
    lithe_backprop_free(b1);
    lithe_backprop_free(b2);
    lithe_backprop_free(bs);
    lithe_value_release(v[0]);
    lithe_value_release(v[1]);
    lithe_value_release(pair);
    if (s != LITHE_OK) {
        lithe_value_release(out);
        return s;
    }
    *Yv = out;
    return LITHE_OK;
}

/* The width of a value (get_width): the last extent of an array / Ragged / Padded's data. */
static int64_t width_of(const lithe_value *v) {
    lithe_tensor *t = v && v->kind != LITHE_VALUE_LIST && v->kind != LITHE_VALUE_TUPLE ? v->t[0] : NULL;
    if (!t && v && v->kind == LITHE_VALUE_LIST && v->n) t = v->items[0]->t[0];
    return t && t->ndim ? t->shape[t->ndim - 1] : 0;
}

static lithe_status siamese_init(lithe_model *m, const lithe_value *X, const lithe_value *Y) {
    lithe_value *pair = NULL;
    lithe_status s = LITHE_OK;
    if (X) {
        if (X->kind != LITHE_VALUE_TUPLE || X->n != 2)
            return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: expected a tuple (X1, X2)", m->name);
        int64_t w = width_of(X->items[1]);
        if (w && lithe_model_has_dim(m->layers[0], "nI") != LITHE_HAS_NO) s = lithe_model_set_dim(m->layers[0], "nI", w);
        if (s == LITHE_OK) s = lithe_model_initialize(m->layers[0], X->items[0], NULL);
        lithe_value *v[2] = {NULL, NULL};
        if (s == LITHE_OK) s = lithe_model_predict(m->layers[0], X->items[0], &v[0]);
        if (s == LITHE_OK) s = lithe_model_predict(m->layers[0], X->items[1], &v[1]);
        if (s == LITHE_OK) s = lithe_value_tuple(2, v, &pair);
        lithe_value_release(v[0]);
        lithe_value_release(v[1]);
    } else {
        /* Thinc's init leaves the layer alone without a sample (a forward then fails); lithe
         * initializes it from its own dims, as a user building siamese(Relu(nO, nI), ..) expects */
        s = lithe_model_initialize(m->layers[0], NULL, NULL);
    }
    if (s == LITHE_OK) s = lithe_model_initialize(m->layers[1], pair, Y);
    lithe_value_release(pair);
    int64_t nI = lithe__dim_value(m->layers[0], "nI"), nO = lithe__dim_value(m->layers[1], "nO");
    if (s == LITHE_OK && nI) s = lithe__infer_dim(m, "nI", nI, "the layer");
    if (s == LITHE_OK && nO) s = lithe__infer_dim(m, "nO", nO, "the similarity");
    return s;
}

static const lithe__layer_type siamese_type = {"siamese.v1", siamese_init, siamese_forward, NULL, 2, 2};

const lithe__layer_type *const lithe__attention_types[] = {&attn_type, &cauchy_type, &siamese_type, NULL};

lithe_status lithe_siamese(lithe_model *layer, lithe_model *similarity, lithe_model **out) {
    LITHE__CHECK_ARG(out, "lithe_siamese", "out is NULL");
    *out = NULL;
    if (!layer || !similarity) {
        lithe_model_free(layer);
        lithe_model_free(similarity);
        return lithe__fail(LITHE_ERR_INVALID_ARG, "siamese: layer or similarity is NULL");
    }
    size_t n = strlen(layer->name) + strlen(similarity->name) + 16;
    char *name = lithe__malloc(n);
    if (!name) {
        lithe_model_free(layer);
        lithe_model_free(similarity);
        return lithe__oom("siamese", n);
    }
    snprintf(name, n, "siamese(%s, %s)", layer->name, similarity->name);
    int64_t nI = lithe__dim_value(layer, "nI"), nO = lithe__dim_value(similarity, "nO");
    static const char *const dims[] = {"nI", "nO", NULL};
    lithe_model *m = NULL;
    lithe_status s = lithe__model_new(&siamese_type, name, dims, NULL, &m);
    lithe__free(name);
    if (s == LITHE_OK && nI) s = lithe_model_set_dim(m, "nI", nI);
    if (s == LITHE_OK && nO) s = lithe_model_set_dim(m, "nO", nO);
    if (s == LITHE_OK) {
        s = lithe__model_add_layer(m, layer);
        layer = NULL;
    }
    if (s == LITHE_OK) {
        s = lithe__model_add_layer(m, similarity);
        similarity = NULL;
    }
    lithe_model_free(layer);
    lithe_model_free(similarity);
    if (s != LITHE_OK) {
        lithe_model_free(m);
        return s;
    }
    *out = m;
    return LITHE_OK;
}
