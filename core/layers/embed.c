/* Embed.v1 and HashEmbed.v1 (thinc/layers/embed.py, hashembed.py): integer ids to rows of a
 * table E (nV, nO). HashEmbed sums the four rows that MurmurHash3 (Thinc's ops.hash, seeded by
 * the `seed` attr) picks modulo nV. With `column`, Thinc builds chain(ints-getitem, layer): the
 * first node takes column `column` of (B, k) ids. Dropout, when given, is Thinc's: one mask over
 * the nO columns, shared by every row. */
#include "dense.h"

#include <stdio.h>

typedef struct embed_bp {
    lithe_backprop base;
    lithe_tensor *ids;  /* Embed: the ids; HashEmbed: (4, B) int32 bucket rows */
    lithe_tensor *mask; /* (B, nO) dropout mask or NULL */
    int64_t B, nO;
    bool hashed;
} embed_bp;

static bool is_int_dtype(lithe_dtype d) {
    return d == LITHE_I32 || d == LITHE_I64 || d == LITHE_U64;
}

/* The 1-D id tensor of a value, or an error naming the layer. */
static lithe_status ids_of(const lithe_model *m, const lithe_value *v, lithe_tensor **out) {
    lithe_tensor *t = (lithe_tensor *)lithe_value_get_tensor(v);
    if (!t) return lithe__fail(LITHE_ERR_UNSUPPORTED, "%s: expected an array of ids (lists arrive with the sequence layers)", m->name);
    if (!is_int_dtype(t->dtype))
        return lithe__fail(LITHE_ERR_DTYPE, "%s: ids must be int32, int64 or uint64, got %s", m->name, lithe_dtype_name(t->dtype));
    if (t->ndim != 1)
        return lithe__fail(LITHE_ERR_SHAPE, "%s: ids must be 1-D (B,), got %d-D (use column= for (B, k) ids)", m->name,
                           t->ndim);
    if (!lithe_tensor_is_contiguous(t)) return lithe__fail(LITHE_ERR_SHAPE, "%s: ids must be contiguous", m->name);
    if (t->storage->backend != m->backend)
        return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: ids live on backend '%s', the model on '%s'", m->name,
                           t->storage->backend->name, m->backend->name);
    *out = t;
    return LITHE_OK;
}

/* ids to host as uint64 bits (int32 sign-extended, as numpy's astype("uint64") does). */
static lithe_status host_ids(const lithe_model *m, const lithe_tensor *ids, uint64_t **out) {
    size_t n = (size_t)ids->numel;
    uint64_t *h = lithe__malloc((n ? n : 1) * sizeof *h);
    if (!h) return lithe__oom(m->name, n * sizeof *h);
    lithe_status s;
    if (ids->dtype == LITHE_I32) {
        int32_t *tmp = lithe__malloc((n ? n : 1) * sizeof *tmp);
        s = tmp ? lithe_tensor_read(ids, tmp, n * sizeof *tmp) : lithe__oom(m->name, n * sizeof *tmp);
        for (size_t i = 0; s == LITHE_OK && i < n; i++) h[i] = (uint64_t)(int64_t)tmp[i];
        lithe__free(tmp);
    } else {
        s = lithe_tensor_read(ids, h, n * sizeof *h);
    }
    if (s != LITHE_OK) {
        lithe__free(h);
        return s;
    }
    *out = h;
    return LITHE_OK;
}

/* Thinc's get_dropout_mask((nO,), rate) broadcast over B rows; NULL when no dropout applies. */
lithe_status lithe__dropout_rows(lithe_model *m, int64_t B, int64_t nO, lithe_tensor **mask) {
    *mask = NULL;
    double rate = 0.0;
    if (lithe_model_attr_type(m, "dropout_rate") == LITHE_ATTR_FLOAT)
        LITHE__TRY(lithe_model_get_attr_float(m, "dropout_rate", &rate));
    if (rate <= 0.0 || B == 0) return LITHE_OK;
    lithe_tensor *row = NULL, *zeros = NULL, *out = NULL;
    lithe_status s = lithe__tensor_alloc(m->backend, LITHE_F32, 2, (int64_t[]){1, nO}, false, &row);
    if (s == LITHE_OK) s = lithe__op_dropout_mask(m->backend, m->rng.key, m->rng.counter, (float)rate, row);
    if (s == LITHE_OK) s = lithe__tensor_alloc(m->backend, LITHE_I32, 1, &B, true, &zeros);
    if (s == LITHE_OK) s = lithe__tensor_alloc(m->backend, LITHE_F32, 2, (int64_t[]){B, nO}, false, &out);
    if (s == LITHE_OK) s = lithe__op_gather_rows(m->backend, row, zeros, out); /* row 0, B times */
    if (s == LITHE_OK) m->rng.counter += ((uint64_t)nO + 3) / 4;
    lithe_tensor_release(row);
    lithe_tensor_release(zeros);
    if (s != LITHE_OK) {
        lithe_tensor_release(out);
        return s;
    }
    *mask = out;
    return LITHE_OK;
}

static lithe_status embed_backward(lithe_backprop *self, const lithe_value *dYv, lithe_value **dX) {
    embed_bp *r = (embed_bp *)self;
    lithe_model *m = self->model;
    lithe_tensor *dY = NULL, *g = NULL, *dEt = NULL, *masked = NULL;
    LITHE__TRY(lithe__check_dY(m, dYv, r->B, r->nO, &dY));
    LITHE__TRY(lithe__grad_acc(m, "E", &dEt));
    lithe_status s = LITHE_OK;
    if (r->mask) {
        s = lithe__tensor_like(dY, false, &masked);
        if (s == LITHE_OK) s = lithe__op_mul(m->backend, dY, r->mask, masked);
        g = masked;
    } else {
        g = dY;
    }
    if (r->hashed) {
        for (int64_t k = 0; s == LITHE_OK && k < 4; k++) {
            lithe_tensor *col = NULL, *flat = NULL;
            s = lithe_tensor_slice(r->ids, 0, k, k + 1, &col);
            if (s == LITHE_OK) s = lithe_tensor_reshape(col, 1, &r->B, &flat);
            if (s == LITHE_OK) s = lithe__op_scatter_add_rows(m->backend, dEt, flat, g);
            lithe_tensor_release(col);
            lithe_tensor_release(flat);
        }
    } else if (s == LITHE_OK) {
        s = lithe__op_scatter_add_rows(m->backend, dEt, r->ids, g);
    }
    lithe_tensor_release(masked);
    if (s != LITHE_OK || !dX) return s;
    /* Thinc returns zeros for the integer input */
    lithe_tensor *z = NULL;
    LITHE__TRY(lithe__tensor_alloc(m->backend, LITHE_I32, 1, &r->B, true, &z));
    return lithe__emit(z, dX);
}

static void embed_destroy(lithe_backprop *self) {
    embed_bp *r = (embed_bp *)self;
    lithe_tensor_release(r->ids);
    lithe_tensor_release(r->mask);
}

/* HashEmbed's (4, B) int32 bucket ids: Thinc's ops.hash(ids, seed) % nV, transposed. */
static lithe_status buckets(lithe_model *m, const lithe_tensor *ids, int64_t nV, lithe_tensor **out) {
    int64_t B = ids->numel;
    uint64_t *h = NULL;
    uint32_t *keys = NULL;
    int32_t *cols = NULL;
    lithe_tensor *u = NULL, *k = NULL, *res = NULL;
    int64_t seed = 0;
    lithe_status s = lithe_model_get_attr_int(m, "seed", &seed);
    if (s == LITHE_OK) s = host_ids(m, ids, &h);
    if (s == LITHE_OK) s = lithe__tensor_alloc(m->backend, LITHE_U64, 1, &B, false, &u);
    if (s == LITHE_OK) s = lithe_tensor_write(u, h, (size_t)B * sizeof *h);
    if (s == LITHE_OK) s = lithe__tensor_alloc(m->backend, LITHE_U32, 2, (int64_t[]){B, 4}, false, &k);
    if (s == LITHE_OK) s = lithe__op_hash_ids(m->backend, u, (uint32_t)seed, k);
    if (s == LITHE_OK) {
        keys = lithe__malloc((size_t)(B ? B : 1) * 4 * sizeof *keys);
        cols = lithe__malloc((size_t)(B ? B : 1) * 4 * sizeof *cols);
        if (!keys || !cols) s = lithe__oom(m->name, (size_t)B * 32);
    }
    if (s == LITHE_OK) s = lithe_tensor_read(k, keys, (size_t)B * 4 * sizeof *keys);
    for (int64_t i = 0; s == LITHE_OK && i < B; i++)
        for (int j = 0; j < 4; j++) cols[j * B + i] = (int32_t)(keys[i * 4 + j] % (uint32_t)nV);
    if (s == LITHE_OK) s = lithe__tensor_alloc(m->backend, LITHE_I32, 2, (int64_t[]){4, B}, false, &res);
    if (s == LITHE_OK) s = lithe_tensor_write(res, cols, (size_t)B * 4 * sizeof *cols);
    lithe__free(h);
    lithe__free(keys);
    lithe__free(cols);
    lithe_tensor_release(u);
    lithe_tensor_release(k);
    if (s != LITHE_OK) {
        lithe_tensor_release(res);
        return s;
    }
    *out = res;
    return LITHE_OK;
}

static lithe_status embed_forward(lithe_model *m, const lithe_value *Xv, bool is_train, lithe_value **Yv,
                                  lithe_backprop **bp) {
    bool hashed = m->type->info != NULL;
    lithe_tensor *ids = NULL, *E = NULL, *Y = NULL, *rows = NULL, *mask = NULL;
    LITHE__TRY(ids_of(m, Xv, &ids));
    LITHE__TRY(lithe__param_get(m, "E", &E));
    if (E->ndim != 2) return lithe__fail(LITHE_ERR_SHAPE, "%s: param E must be (nV, nO), got %d-d", m->name, E->ndim);
    int64_t nV = E->shape[0], nO = E->shape[1], B = ids->numel;
    lithe_status s = LITHE_OK;
    if (hashed) {
        s = buckets(m, ids, nV, &rows);
    } else {
        uint64_t *h = NULL;
        s = host_ids(m, ids, &h);
        for (int64_t i = 0; s == LITHE_OK && i < B; i++) {
            bool neg = ids->dtype != LITHE_U64 && (int64_t)h[i] < 0;
            if (neg || h[i] >= (uint64_t)nV)
                s = lithe__fail(LITHE_ERR_VALUE, "%s: id %s%llu at position %lld is outside the table [0, %lld)", m->name,
                                neg ? "-" : "", neg ? (unsigned long long)-(int64_t)h[i] : (unsigned long long)h[i],
                                (long long)i, (long long)nV);
        }
        lithe__free(h);
        if (s == LITHE_OK) rows = lithe_tensor_retain(ids);
    }
    if (s == LITHE_OK) s = lithe__tensor_alloc(m->backend, LITHE_F32, 2, (int64_t[]){B, nO}, !hashed ? false : true, &Y);
    if (s == LITHE_OK && !hashed && B) s = lithe__op_gather_rows(m->backend, E, rows, Y);
    if (hashed) { /* Thinc's gather_add: the sum of the four bucket rows */
        lithe_tensor *tmp = NULL;
        if (s == LITHE_OK && B) s = lithe__tensor_alloc(m->backend, LITHE_F32, 2, (int64_t[]){B, nO}, false, &tmp);
        for (int64_t k = 0; s == LITHE_OK && B && k < 4; k++) {
            lithe_tensor *col = NULL, *flat = NULL;
            s = lithe_tensor_slice(rows, 0, k, k + 1, &col);
            if (s == LITHE_OK) s = lithe_tensor_reshape(col, 1, &B, &flat);
            if (s == LITHE_OK) s = lithe__op_gather_rows(m->backend, E, flat, tmp);
            if (s == LITHE_OK) s = lithe__op_axpby(m->backend, 1.0f, tmp, 1.0f, Y);
            lithe_tensor_release(col);
            lithe_tensor_release(flat);
        }
        lithe_tensor_release(tmp);
    }
    if (s == LITHE_OK && is_train) s = lithe__dropout_rows(m, B, nO, &mask);
    if (s == LITHE_OK && mask) s = lithe__op_mul(m->backend, Y, mask, Y);
    if (s == LITHE_OK && bp) {
        s = lithe__backprop_new(m, sizeof(embed_bp), embed_backward, embed_destroy, bp);
        if (s == LITHE_OK) {
            embed_bp *r = (embed_bp *)*bp;
            r->ids = lithe_tensor_retain(rows);
            r->mask = lithe_tensor_retain(mask);
            r->B = B;
            r->nO = nO;
            r->hashed = hashed;
        }
    }
    lithe_tensor_release(rows);
    lithe_tensor_release(mask);
    return lithe__emit_output(s, Y, Yv, bp);
}

static lithe_status embed_init(lithe_model *m, const lithe_value *X, const lithe_value *Y) {
    (void)X;
    if (Y) {
        const lithe_tensor *t = lithe_value_get_tensor(Y);
        if (t && t->ndim >= 1) LITHE__TRY(lithe__infer_dim(m, "nO", t->shape[t->ndim - 1], "sample Y"));
    }
    int64_t nV = lithe__dim_value(m, "nV"), nO = lithe__dim_value(m, "nO");
    if (!nV || !nO)
        return lithe__fail(LITHE_ERR_STATE, "%s: cannot initialize E: dim %s unset", m->name, !nV ? "nV" : "nO");
    return lithe__param_init(m, "E", m->init_W ? m->init_W : LITHE_INIT_UNIFORM, 2, (int64_t[]){nV, nO});
}

static const char hashed_info = 1;
static const lithe__layer_type embed_type = {"Embed.v1", embed_init, embed_forward, NULL, 0, 0};
static const lithe__layer_type hashembed_type = {"HashEmbed.v1", embed_init, embed_forward, &hashed_info, 0, 0};

/* ---- ints-getitem: X[:, column] of (B, k) integer ids, Thinc's ints_getitem((slice, column)) ---- */

typedef struct getitem_bp {
    lithe_backprop base;
    int64_t shape[2];
} getitem_bp;

static lithe_status getitem_backward(lithe_backprop *self, const lithe_value *dY, lithe_value **dX) {
    (void)dY;
    if (!dX) return LITHE_OK;
    /* Thinc returns zeros shaped like the integer input */
    lithe_tensor *z = NULL;
    LITHE__TRY(lithe__tensor_alloc(self->model->backend, LITHE_I32, 2, ((getitem_bp *)self)->shape, true, &z));
    return lithe__emit(z, dX);
}

static void getitem_destroy(lithe_backprop *self) { (void)self; }

static lithe_status getitem_forward(lithe_model *m, const lithe_value *Xv, bool is_train, lithe_value **Yv,
                                    lithe_backprop **bp) {
    /* a general numpy index (lithe_array_getitem("ints", ...)); else Embed's column */
    if (lithe_model_attr_type(m, "index") == LITHE_ATTR_STR) return lithe__getitem_forward(m, Xv, is_train, Yv, bp);
    lithe_tensor *X = (lithe_tensor *)lithe_value_get_tensor(Xv), *col = NULL, *flat = NULL, *out = NULL;
    int64_t column = (int64_t)m->cfg[0];
    if (!X || !is_int_dtype(X->dtype) || X->ndim != 2)
        return lithe__fail(LITHE_ERR_SHAPE, "%s: expected (B, k) integer ids for column %lld", m->name, (long long)column);
    if (column < 0 || column >= X->shape[1])
        return lithe__fail(LITHE_ERR_SHAPE, "%s: column %lld outside the %lld columns of the ids", m->name,
                           (long long)column, (long long)X->shape[1]);
    lithe_status s = lithe_tensor_slice(X, 1, column, column + 1, &col);
    if (s == LITHE_OK) s = lithe__tensor_alloc(m->backend, X->dtype, 1, X->shape, false, &out);
    if (s == LITHE_OK) s = lithe_tensor_reshape(out, 2, (int64_t[]){X->shape[0], 1}, &flat);
    if (s == LITHE_OK) s = lithe__op_copy(m->backend, flat, col);
    lithe_tensor_release(col);
    lithe_tensor_release(flat);
    if (s == LITHE_OK && bp) {
        s = lithe__backprop_new(m, sizeof(getitem_bp), getitem_backward, getitem_destroy, bp);
        if (s == LITHE_OK) {
            ((getitem_bp *)*bp)->shape[0] = X->shape[0];
            ((getitem_bp *)*bp)->shape[1] = X->shape[1];
        }
    }
    if (s == LITHE_OK) s = lithe__value_wrap(out, Yv);
    else lithe_tensor_release(out);
    if (s != LITHE_OK && bp && *bp) {
        lithe_backprop_free(*bp);
        *bp = NULL;
    }
    return s;
}

static const lithe__layer_type getitem_type = {"ints-getitem", NULL, getitem_forward, NULL, 0, 0};
const lithe__layer_type *const lithe__embed_types[] = {&embed_type, &hashembed_type, &getitem_type, NULL};

/* ---- constructors ---- */

static lithe_status embed_new(const lithe__layer_type *type, const char *layer, const char *node,
                              const lithe_embed_opts *o, lithe_model **out) {
    LITHE__CHECK_ARG(out, layer, "out is NULL");
    *out = NULL;
    lithe_embed_opts d = {0};
    if (!o) o = &d;
    if (o->nO < 0 || o->nV < 0)
        return lithe__fail(LITHE_ERR_VALUE, "%s: nO and nV must be >= 0 (0 = unset), got %lld and %lld", layer,
                           (long long)o->nO, (long long)o->nV);
    if (!(o->dropout >= 0.0f && o->dropout <= 1.0f))
        return lithe__fail(LITHE_ERR_VALUE, "%s: dropout %g outside [0, 1]", layer, (double)o->dropout);
    if (o->has_column && o->column < 0)
        return lithe__fail(LITHE_ERR_VALUE, "%s: column must be >= 0, got %lld", layer, (long long)o->column);
    if (!(o->init >= LITHE_INIT_DEFAULT && o->init <= LITHE_INIT_NORMAL))
        return lithe__fail(LITHE_ERR_VALUE, "%s: unknown initializer %d", layer, (int)o->init);
    bool hashed = type == &hashembed_type;
    static const char *const dims_e[] = {"nO", "nV", NULL}, *const dims_h[] = {"nO", "nV", "nI", NULL};
    static const char *const params[] = {"E", NULL};
    lithe_model *m = NULL;
    LITHE__TRY(lithe__model_new(type, node, hashed ? dims_h : dims_e, params, &m));
    m->dims[0].value = o->nO;
    m->dims[1].value = o->nV;
    m->init_W = o->init;
    /* Thinc's attrs, in its dict order: HashEmbed {column, seed[, dropout_rate]}; Embed
     * {[dropout_rate,] column} with column None, or, with a column, only on the chain. */
    lithe_status s = LITHE_OK;
    if (hashed) {
        s = o->has_column ? lithe_model_set_attr_int(m, "column", o->column) : lithe_model_set_attr_null(m, "column");
        if (s == LITHE_OK)
            s = lithe_model_set_attr_int(m, "seed", o->has_seed ? (int64_t)o->seed : (int64_t)(uint32_t)m->id);
    }
    if (s == LITHE_OK && o->dropout > 0.0f) s = lithe_model_set_attr_float(m, "dropout_rate", o->dropout);
    if (s == LITHE_OK && !hashed && !o->has_column) s = lithe_model_set_attr_null(m, "column");
    if (s != LITHE_OK) {
        lithe_model_free(m);
        return s;
    }
    if (!o->has_column) {
        *out = m;
        return LITHE_OK;
    }
    lithe_model *get = NULL;
    s = lithe__model_new(&getitem_type, "ints-getitem", NULL, NULL, &get);
    if (s == LITHE_OK) get->cfg[0] = (double)o->column; /* Thinc's index attr holds a slice: never saved */
    if (s != LITHE_OK) {
        lithe_model_free(get);
        lithe_model_free(m);
        return s;
    }
    lithe_model *ch = NULL;
    LITHE__TRY(lithe_chain(2, (lithe_model *[]){get, m}, &ch));
    s = lithe_model_set_attr_int(ch, "column", o->column);
    if (s != LITHE_OK) {
        lithe_model_free(ch);
        return s;
    }
    *out = ch;
    return LITHE_OK;
}

lithe_status lithe_embed(const lithe_embed_opts *opts, lithe_model **out) {
    return embed_new(&embed_type, "Embed.v1", "embed", opts, out);
}

lithe_status lithe_hash_embed(const lithe_embed_opts *opts, lithe_model **out) {
    LITHE__CHECK_ARG(out, "HashEmbed.v1", "out is NULL");
    if (!opts || opts->nO <= 0 || opts->nV <= 0) {
        *out = NULL;
        return lithe__fail(LITHE_ERR_VALUE, "HashEmbed.v1: nO and nV are required (Thinc's HashEmbed(nO, nV))");
    }
    return embed_new(&hashembed_type, "HashEmbed.v1", "hashembed", opts, out);
}
