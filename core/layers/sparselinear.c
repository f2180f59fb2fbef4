/* SparseLinear.v1 and SparseLinear.v2 (thinc/layers/sparselinear.pyx): a linear layer over
 * hashed sparse features. Input: Thinc's tuple (keys uint64 (N,), values float32 (N,), lengths
 * int32 (B,)) as a TUPLE value of three tensors; output Y (B, nO) = b + for each key of row b,
 * value * (W at hash 0 + W at hash 1), the hashes MurmurHash3_x86_32 of the key with seeds 0 and
 * 1. W is flat (nO * length,) and starts at zeros, as does b. v1 keeps Thinc's indexing bug
 * (#752: W[(h & (length - 1)) + class], a sliver of W) so old models load and score the same;
 * v2 reads W[class * length + h % length]. The attr v1_indexing tells them apart, as in Thinc.
 * Backprop adds into dW and db and returns the input tuple itself (Thinc's backprop does). */
#include "dense.h"

typedef struct sparse_bp {
    lithe_backprop base;
    lithe_value *X; /* the input tuple, retained: keys and values are read again, and returned */
    int64_t B, nO, length;
    bool v1;
} sparse_bp;

/* The three tensors of the input tuple, checked: keys uint64/int64 (N,), values float32 (N,),
 * lengths int32 (B,) in host memory summing to N. */
static lithe_status sparse_input(const lithe_model *m, const lithe_value *X, lithe_tensor **keys, lithe_tensor **values,
                                 lithe_tensor **lengths) {
    if (!X) return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: input is NULL", m->name);
    if (lithe_value_kind_of(X) != LITHE_VALUE_TUPLE || lithe_value_len(X) != 3)
        return lithe__fail(LITHE_ERR_INVALID_ARG,
                           "%s: expected a tuple (keys uint64, values float32, lengths int32) of 3 arrays", m->name);
    lithe_tensor *t[3];
    for (size_t i = 0; i < 3; i++) {
        lithe_value *it = lithe_value_item(X, i);
        t[i] = lithe_value_kind_of(it) == LITHE_VALUE_TENSOR ? lithe_value_get_tensor(it) : NULL;
        if (!t[i]) return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: tuple item %zu must be an array", m->name, i);
        if (t[i]->ndim != 1 || !lithe_tensor_is_contiguous(t[i]))
            return lithe__fail(LITHE_ERR_SHAPE, "%s: tuple item %zu must be a contiguous 1-d array, got %d-d", m->name, i,
                               t[i]->ndim);
    }
    if (t[0]->dtype != LITHE_U64 && t[0]->dtype != LITHE_I64)
        return lithe__fail(LITHE_ERR_DTYPE, "%s: keys must be uint64 (or int64), got %s", m->name,
                           lithe_dtype_name(t[0]->dtype));
    if (t[1]->dtype != LITHE_F32)
        return lithe__fail(LITHE_ERR_DTYPE, "%s: values must be float32, got %s", m->name, lithe_dtype_name(t[1]->dtype));
    if (t[2]->dtype != LITHE_I32)
        return lithe__fail(LITHE_ERR_DTYPE, "%s: lengths must be int32, got %s", m->name, lithe_dtype_name(t[2]->dtype));
    if (t[0]->numel != t[1]->numel)
        return lithe__fail(LITHE_ERR_SHAPE, "%s: %lld keys but %lld values", m->name, (long long)t[0]->numel,
                           (long long)t[1]->numel);
    if (!t[2]->storage->backend->host_memory)
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "%s: lengths must live in host memory", m->name);
    if (t[0]->storage->backend != m->backend || t[1]->storage->backend != m->backend)
        return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: keys and values must live on the model's backend '%s'", m->name,
                           m->backend->name);
    const int32_t *len = lithe__tdata(t[2]);
    int64_t sum = 0;
    for (int64_t i = 0; i < t[2]->numel; i++) {
        if (len[i] < 0)
            return lithe__fail(LITHE_ERR_VALUE, "%s: lengths[%lld] = %d is negative", m->name, (long long)i, len[i]);
        sum += len[i];
    }
    if (sum != t[0]->numel)
        return lithe__fail(LITHE_ERR_SHAPE, "%s: lengths sum to %lld but there are %lld keys", m->name, (long long)sum,
                           (long long)t[0]->numel);
    *keys = t[0];
    *values = t[1];
    *lengths = t[2];
    return LITHE_OK;
}

/* W, b and the dims, checked against each other (a loaded file may disagree). */
static lithe_status sparse_params(const lithe_model *m, lithe_tensor **W, lithe_tensor **b, int64_t *nO,
                                  int64_t *length) {
    LITHE__TRY(lithe__param_get(m, "W", W));
    LITHE__TRY(lithe__param_get(m, "b", b));
    *nO = lithe__dim_value(m, "nO");
    *length = lithe__dim_value(m, "length");
    if (*nO <= 0 || *length <= 0)
        return lithe__fail(LITHE_ERR_STATE, "%s: dims nO and length must be set", m->name);
    int64_t want;
    if (__builtin_mul_overflow(*nO, *length, &want) || (*W)->ndim != 1 || (*W)->numel != want || (*b)->ndim != 1 ||
        (*b)->numel != *nO)
        return lithe__fail(LITHE_ERR_SHAPE, "%s: params W (nO * length = %lld * %lld,) and b (nO,) disagree with the dims",
                           m->name, (long long)*nO, (long long)*length);
    if (*length > (int64_t)UINT32_MAX + 1)
        return lithe__fail(LITHE_ERR_VALUE, "%s: length %lld exceeds the 32-bit hash range", m->name, (long long)*length);
    return LITHE_OK;
}

static bool v1_indexing(const lithe_model *m) {
    bool v1 = false;
    if (lithe_model_get_attr_bool(m, "v1_indexing", &v1) != LITHE_OK) return false;
    return v1;
}

static lithe_status sparse_backward(lithe_backprop *self, const lithe_value *dYv, lithe_value **dX) {
    sparse_bp *r = (sparse_bp *)self;
    lithe_model *m = self->model;
    lithe_tensor *dY = NULL, *dW = NULL, *db = NULL, *keys = NULL, *values = NULL, *lengths = NULL;
    LITHE__TRY(lithe__check_dY(m, dYv, r->B, r->nO, &dY));
    LITHE__TRY(sparse_input(m, r->X, &keys, &values, &lengths));
    LITHE__TRY(lithe__grad_acc(m, "W", &dW));
    LITHE__TRY(lithe__grad_acc(m, "b", &db));
    if (dW->numel != r->nO * r->length || db->numel != r->nO)
        return lithe__fail(LITHE_ERR_STATE, "%s: params changed shape since the forward pass", m->name);
    LITHE__TRY(lithe__op_sparse_linear_backward(m->backend, keys, values, lengths, dY, r->length, r->v1, dW));
    LITHE__TRY(lithe__op_sum_rows(m->backend, dY, 1.0f, db));
    if (dX) *dX = lithe_value_retain(r->X);
    return LITHE_OK;
}

static void sparse_destroy(lithe_backprop *self) { lithe_value_release(((sparse_bp *)self)->X); }

static lithe_status sparse_forward(lithe_model *m, const lithe_value *X, bool is_train, lithe_value **Yv,
                                   lithe_backprop **bp) {
    (void)is_train;
    lithe_tensor *keys = NULL, *values = NULL, *lengths = NULL, *W = NULL, *b = NULL, *Y = NULL;
    int64_t nO = 0, length = 0;
    LITHE__TRY(sparse_input(m, X, &keys, &values, &lengths));
    LITHE__TRY(sparse_params(m, &W, &b, &nO, &length));
    bool v1 = v1_indexing(m);
    int64_t B = lengths->numel;
    // Y: (B, nO) = b on every row, then the hashed weights of each row's keys
    lithe_status s = lithe__tensor_alloc(m->backend, LITHE_F32, 2, (int64_t[]){B, nO}, true, &Y);
    if (s == LITHE_OK && B) s = lithe__op_add_row(m->backend, Y, b);
    if (s == LITHE_OK && B) s = lithe__op_sparse_linear(m->backend, keys, values, lengths, W, length, v1, Y);
    if (s == LITHE_OK && bp) {
        s = lithe__backprop_new(m, sizeof(sparse_bp), sparse_backward, sparse_destroy, bp);
        if (s == LITHE_OK) {
            sparse_bp *r = (sparse_bp *)*bp;
            r->X = lithe_value_retain((lithe_value *)X);
            r->B = B;
            r->nO = nO;
            r->length = length;
            r->v1 = v1;
        }
    }
    return lithe__emit_output(s, Y, Yv, bp);
}

static lithe_status sparse_init(lithe_model *m, const lithe_value *X, const lithe_value *Y) {
    (void)X;
    if (Y) {
        const lithe_tensor *t = lithe_value_get_tensor(Y);
        if (t && t->ndim >= 1) LITHE__TRY(lithe__infer_dim(m, "nO", t->shape[t->ndim - 1], "sample Y"));
    }
    int64_t nO = lithe__dim_value(m, "nO"), length = lithe__dim_value(m, "length"), n;
    if (!nO) return lithe__fail(LITHE_ERR_STATE, "%s: cannot initialize: dim nO unset (give it or a sample Y)", m->name);
    if (__builtin_mul_overflow(nO, length, &n))
        return lithe__fail(LITHE_ERR_VALUE, "%s: nO * length overflows", m->name);
    LITHE__TRY(lithe__param_init(m, "W", LITHE_INIT_ZERO, 1, &n));
    return lithe__param_init(m, "b", LITHE_INIT_ZERO, 1, &nO);
}

static const lithe__layer_type sparse_v1_type = {"SparseLinear.v1", sparse_init, sparse_forward, NULL, 0, 0};
static const lithe__layer_type sparse_v2_type = {"SparseLinear.v2", sparse_init, sparse_forward, NULL, 0, 0};

lithe_status lithe_sparse_linear(const lithe_sparse_linear_opts *opts, lithe_model **out) {
    const char *layer = opts && opts->v1 ? "SparseLinear.v1" : "SparseLinear.v2";
    LITHE__CHECK_ARG(out, layer, "out is NULL");
    *out = NULL;
    lithe_sparse_linear_opts d = {0};
    if (!opts) opts = &d;
    int64_t length = opts->length ? opts->length : (int64_t)1 << 18;
    if (opts->nO < 0) return lithe__fail(LITHE_ERR_VALUE, "%s: nO must be >= 0 (0 = unset), got %lld", layer, (long long)opts->nO);
    if (length < 1 || length > (int64_t)UINT32_MAX + 1)
        return lithe__fail(LITHE_ERR_VALUE, "%s: length must be in [1, 2^32], got %lld", layer, (long long)length);
    static const char *const dims[] = {"nO", "length", NULL}, *const params[] = {"W", "b", NULL};
    lithe_model *m = NULL;
    LITHE__TRY(lithe__model_new(opts->v1 ? &sparse_v1_type : &sparse_v2_type, "sparse_linear", dims, params, &m));
    m->dims[0].value = opts->nO;
    m->dims[1].value = length;
    lithe_status s = lithe_model_set_attr_bool(m, "v1_indexing", opts->v1);
    if (s != LITHE_OK) {
        lithe_model_free(m);
        return s;
    }
    *out = m;
    return LITHE_OK;
}

const lithe__layer_type *const lithe__sparse_types[] = {&sparse_v1_type, &sparse_v2_type, NULL};
