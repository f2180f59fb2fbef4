/* StaticVectors.v2: spaCy's StaticVectors (spacy/ml/staticvectors.py; Thinc 8.1.7 has none): a
 * frozen table of pretrained word vectors V (nV, nM), gathered by id, then projected by a trained
 * W (nO, nM) without bias: Y = V[ids] · Wᵀ. spaCy takes Docs and looks their keys up in the
 * vocab's vectors; lithe takes the rows directly — a LIST of 1-d int arrays (one per document)
 * or a Ragged of ids — and keeps V as a param marked frozen, so it is saved with the model and
 * never updated. A negative id (a word without a vector, spaCy's row -1) gives a zero row. The
 * output is a Ragged of the documents' lengths. Dropout, when set, is spaCy's: one mask over the
 * nO columns for every row, applied to Y and to dY. Backprop: dW += dYᵀ · V[ids]; it returns an
 * empty LIST (spaCy returns []). spaCy's backprop also gathers V[-1] for words without vectors
 * (numpy's wrap-around), adding that row to dW; lithe gives those words no gradient. */
#include "dense.h"

typedef struct sv_bp {
    lithe_backprop base;
    lithe_tensor *Vr;   /* (N, nM) gathered rows, zero for negative ids */
    lithe_tensor *mask; /* (N, nO) dropout mask or NULL */
    int64_t N, nO;
} sv_bp;

/* The ids of a LIST of 1-d int arrays or a Ragged of ids, to the host as int64, with the
 * per-document lengths (host int32). */
static lithe_status sv_ids(const lithe_model *m, const lithe_value *X, int64_t **ids, int64_t *N, lithe_tensor **lengths) {
    lithe_value_kind k = lithe_value_kind_of(X);
    size_t n_docs = k == LITHE_VALUE_LIST ? lithe_value_len(X) : 1;
    if (!X || (k != LITHE_VALUE_LIST && k != LITHE_VALUE_RAGGED))
        return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: expected a list of 1-d int arrays or a Ragged of ids", m->name);
    const lithe_tensor *parts[1];
    int64_t total = 0;
    for (size_t d = 0; d < n_docs; d++) {
        const lithe_tensor *t = k == LITHE_VALUE_LIST ? lithe_value_get_tensor(lithe_value_item(X, d))
                                                      : lithe_value_field(X, "data");
        if (!t || (k == LITHE_VALUE_LIST && lithe_value_kind_of(lithe_value_item(X, d)) != LITHE_VALUE_TENSOR))
            return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: list item %zu is not an array", m->name, d);
        if (t->dtype != LITHE_I32 && t->dtype != LITHE_I64)
            return lithe__fail(LITHE_ERR_DTYPE, "%s: ids must be int32 or int64, got %s", m->name, lithe_dtype_name(t->dtype));
        if (t->ndim != 1) return lithe__fail(LITHE_ERR_SHAPE, "%s: ids must be 1-d, got %d-d", m->name, t->ndim);
        total += t->shape[0];
    }
    (void)parts;
    int64_t *h = lithe__malloc((size_t)(total ? total : 1) * sizeof *h);
    void *tmp = lithe__malloc((size_t)(total ? total : 1) * sizeof(int64_t));
    lithe_status s = h && tmp ? LITHE_OK : lithe__oom(m->name, (size_t)total * 16);
    int32_t *lens = NULL;
    if (s == LITHE_OK && k == LITHE_VALUE_LIST) {
        lens = lithe__malloc((n_docs ? n_docs : 1) * sizeof *lens);
        if (!lens) s = lithe__oom(m->name, n_docs * sizeof *lens);
    }
    int64_t at = 0;
    for (size_t d = 0; s == LITHE_OK && d < n_docs; d++) {
        const lithe_tensor *t = k == LITHE_VALUE_LIST ? lithe_value_get_tensor(lithe_value_item(X, d))
                                                      : lithe_value_field(X, "data");
        int64_t n = t->shape[0];
        s = lithe_tensor_read(t, tmp, (size_t)n * lithe_dtype_size(t->dtype));
        for (int64_t i = 0; s == LITHE_OK && i < n; i++)
            h[at + i] = t->dtype == LITHE_I32 ? ((const int32_t *)tmp)[i] : ((const int64_t *)tmp)[i];
        if (lens) lens[d] = (int32_t)n;
        at += n;
    }
    if (s == LITHE_OK) {
        if (k == LITHE_VALUE_LIST) s = lithe__host_i32((int64_t)n_docs, lens, lengths);
        else *lengths = lithe_tensor_retain(lithe_value_field(X, "lengths"));
    }
    lithe__free(tmp);
    lithe__free(lens);
    if (s != LITHE_OK) {
        lithe__free(h);
        return s;
    }
    *ids = h;
    *N = total;
    return LITHE_OK;
}

static lithe_status sv_backward(lithe_backprop *self, const lithe_value *dYv, lithe_value **dX) {
    sv_bp *r = (sv_bp *)self;
    lithe_model *m = self->model;
    lithe_value *dd = NULL;
    const lithe_value *use = dYv;
    if (lithe_value_kind_of(dYv) == LITHE_VALUE_RAGGED) { /* the Ragged's data */
        LITHE__TRY(lithe_value_tensor(lithe_value_field(dYv, "data"), &dd));
        use = dd;
    }
    lithe_tensor *dY = NULL, *dW = NULL, *masked = NULL;
    lithe_status s = lithe__check_dY(m, use, r->N, r->nO, &dY);
    if (s == LITHE_OK) s = lithe__grad_acc(m, "W", &dW);
    if (s == LITHE_OK && r->mask) {
        s = lithe__tensor_like(dY, false, &masked);
        if (s == LITHE_OK) s = lithe__op_mul(m->backend, dY, r->mask, masked);
        if (s == LITHE_OK) dY = masked;
    }
    // dW (nO, nM) += dYᵀ (nO, N) · V[ids] (N, nM)
    if (s == LITHE_OK && r->N) s = lithe__op_gemm(m->backend, true, false, 1.0f, dY, r->Vr, 1.0f, dW);
    lithe_tensor_release(masked);
    lithe_value_release(dd);
    if (s != LITHE_OK || !dX) return s;
    return lithe_value_list(0, NULL, dX);
}

static void sv_destroy(lithe_backprop *self) {
    sv_bp *r = (sv_bp *)self;
    lithe_tensor_release(r->Vr);
    lithe_tensor_release(r->mask);
}

static lithe_status sv_forward(lithe_model *m, const lithe_value *X, bool is_train, lithe_value **Yv,
                               lithe_backprop **bp) {
    lithe_tensor *V = NULL, *W = NULL;
    LITHE__TRY(lithe__param_get(m, "V", &V));
    LITHE__TRY(lithe__param_get(m, "W", &W));
    if (V->ndim != 2 || W->ndim != 2 || W->shape[1] != V->shape[1])
        return lithe__fail(LITHE_ERR_SHAPE, "%s: params V (nV, nM) and W (nO, nM) disagree", m->name);
    int64_t nV = V->shape[0], nM = V->shape[1], nO = W->shape[0], N = 0;
    int64_t *ids = NULL;
    lithe_tensor *lengths = NULL, *rows = NULL, *Vr = NULL, *Y = NULL, *mask = NULL;
    LITHE__TRY(sv_ids(m, X, &ids, &N, &lengths));
    lithe_status s = LITHE_OK;
    int32_t *r32 = lithe__malloc((size_t)(N ? N : 1) * sizeof *r32);
    if (!r32) s = lithe__oom(m->name, (size_t)N * sizeof *r32);
    for (int64_t i = 0; s == LITHE_OK && i < N; i++) {
        if (ids[i] >= nV)
            s = lithe__fail(LITHE_ERR_VALUE, "%s: id %lld at position %lld is outside the %lld vectors", m->name,
                            (long long)ids[i], (long long)i, (long long)nV);
        r32[i] = ids[i] < 0 ? 0 : (int32_t)ids[i];
    }
    // V[ids]: (N, nM), rows of negative ids zeroed
    if (s == LITHE_OK) s = lithe__host_i32(N, r32, &rows);
    if (s == LITHE_OK) s = lithe__tensor_alloc(m->backend, LITHE_F32, 2, (int64_t[]){N, nM}, false, &Vr);
    if (s == LITHE_OK && N) s = lithe__op_gather_rows(m->backend, V, rows, Vr);
    for (int64_t i = 0; s == LITHE_OK && i < N; i++) {
        if (ids[i] >= 0) continue;
        lithe_tensor *row = NULL;
        s = lithe_tensor_slice(Vr, 0, i, i + 1, &row);
        if (s == LITHE_OK) s = lithe__op_fill(m->backend, row, 0.0f);
        lithe_tensor_release(row);
    }
    lithe__free(ids);
    lithe__free(r32);
    lithe_tensor_release(rows);
    // Y (N, nO) = V[ids] · Wᵀ
    if (s == LITHE_OK) s = lithe__tensor_alloc(m->backend, LITHE_F32, 2, (int64_t[]){N, nO}, true, &Y);
    if (s == LITHE_OK && N) s = lithe__op_gemm(m->backend, false, true, 1.0f, Vr, W, 0.0f, Y);
    if (s == LITHE_OK && is_train) s = lithe__dropout_rows(m, N, nO, &mask);
    if (s == LITHE_OK && mask) s = lithe__op_mul(m->backend, Y, mask, Y);
    if (s == LITHE_OK && bp) {
        s = lithe__backprop_new(m, sizeof(sv_bp), sv_backward, sv_destroy, bp);
        if (s == LITHE_OK) {
            sv_bp *r = (sv_bp *)*bp;
            r->Vr = lithe_tensor_retain(Vr);
            r->mask = lithe_tensor_retain(mask);
            r->N = N;
            r->nO = nO;
        }
    }
    lithe_tensor_release(Vr);
    lithe_tensor_release(mask);
    if (s == LITHE_OK) s = lithe_value_ragged(Y, lengths, Yv);
    lithe_tensor_release(Y);
    lithe_tensor_release(lengths);
    if (s != LITHE_OK && bp && *bp) {
        lithe_backprop_free(*bp);
        *bp = NULL;
    }
    return s;
}

static lithe_status sv_init(lithe_model *m, const lithe_value *X, const lithe_value *Y) {
    (void)X;
    lithe_tensor *V = NULL;
    LITHE__TRY(lithe__param_get(m, "V", &V));
    if (V->ndim != 2) return lithe__fail(LITHE_ERR_SHAPE, "%s: vectors must be (nV, nM)", m->name);
    LITHE__TRY(lithe__infer_dim(m, "nM", V->shape[1], "the vectors"));
    if (Y) {
        const lithe_tensor *t = lithe_value_kind_of(Y) == LITHE_VALUE_RAGGED ? lithe_value_field(Y, "data")
                                                                             : lithe_value_get_tensor(Y);
        if (t && t->ndim >= 1) LITHE__TRY(lithe__infer_dim(m, "nO", t->shape[t->ndim - 1], "sample Y"));
    }
    int64_t nO = lithe__dim_value(m, "nO"), nM = V->shape[1];
    if (!nO) return lithe__fail(LITHE_ERR_STATE, "%s: cannot initialize W: dim nO unset", m->name);
    return lithe__param_init(m, "W", m->init_W ? m->init_W : LITHE_INIT_GLOROT_UNIFORM, 2, (int64_t[]){nO, nM});
}

static const lithe__layer_type sv_type = {"StaticVectors.v2", sv_init, sv_forward, NULL, 0, 0};
const lithe__layer_type *const lithe__static_vectors_types[] = {&sv_type, NULL};

lithe_status lithe_static_vectors(const lithe_static_vectors_opts *o, lithe_model **out) {
    const char *layer = "StaticVectors.v2";
    LITHE__CHECK_ARG(out, layer, "out is NULL");
    *out = NULL;
    LITHE__CHECK_ARG(o && o->vectors, layer, "opts->vectors is NULL");
    if (o->vectors->dtype != LITHE_F32 || o->vectors->ndim != 2)
        return lithe__fail(LITHE_ERR_SHAPE, "%s: vectors must be a 2-d float32 table (nV, nM)", layer);
    if (o->nO < 0) return lithe__fail(LITHE_ERR_VALUE, "%s: nO must be >= 0 (0 = unset)", layer);
    if (!(o->dropout >= 0.0f && o->dropout <= 1.0f))
        return lithe__fail(LITHE_ERR_VALUE, "%s: dropout %g outside [0, 1]", layer, (double)o->dropout);
    if (!(o->init_W >= LITHE_INIT_DEFAULT && o->init_W <= LITHE_INIT_NORMAL))
        return lithe__fail(LITHE_ERR_VALUE, "%s: unknown initializer %d", layer, (int)o->init_W);
    static const char *const dims[] = {"nO", "nM", NULL}, *const params[] = {"W", "V", NULL};
    lithe_model *m = NULL;
    LITHE__TRY(lithe__model_new(&sv_type, "static_vectors", dims, params, &m));
    m->dims[0].value = o->nO;
    m->dims[1].value = o->vectors->shape[1];
    m->init_W = o->init_W;
    /* spaCy's attrs, in its order */
    lithe_status s = lithe_model_set_attr_str(m, "key_attr", "ORTH");
    if (s == LITHE_OK)
        s = o->dropout > 0.0f ? lithe_model_set_attr_float(m, "dropout_rate", o->dropout)
                              : lithe_model_set_attr_null(m, "dropout_rate");
    if (s == LITHE_OK) s = lithe_model_set_param(m, "V", o->vectors);
    if (s == LITHE_OK) s = lithe_model_set_frozen(m, "V", true);
    if (s != LITHE_OK) {
        lithe_model_free(m);
        return s;
    }
    *out = m;
    return LITHE_OK;
}
