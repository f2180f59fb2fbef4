/* reduce_sum, reduce_mean, reduce_max, reduce_first, reduce_last: Ragged (N, O) -> (B, O), one
 * row per sequence, as Thinc 8.1.7. Zero-length sequences give zero rows for sum and mean, and
 * are an error for max, first and last (Thinc raises ValueError); an empty batch gives (0, O). */
#include "../internal.h"
#include "dense.h"

typedef enum reduce_kind { R_SUM, R_MEAN, R_MAX, R_FIRST, R_LAST } reduce_kind;

typedef struct reduce_bp {
    lithe_backprop base;
    lithe_tensor *lengths; /* host int32 (B,) */
    lithe_tensor *which;   /* max: (B, O) int32; first / last: the rows (B,) int32 on the backend */
    int64_t N, O;
} reduce_bp;

static reduce_kind kind_of(const lithe_model *m) { return (reduce_kind)(intptr_t)m->type->info; }

static lithe_status reduce_backward(lithe_backprop *self, const lithe_value *dYv, lithe_value **dX) {
    lithe_model *m = self->model;
    reduce_bp *r = (reduce_bp *)self;
    int64_t B = r->lengths->shape[0];
    lithe_tensor *dY = NULL, *d = NULL;
    LITHE__TRY(lithe__value_f32_2d(dYv, m->name, &dY));
    if (dY->shape[0] != B || dY->shape[1] != r->O)
        return lithe__fail(LITHE_ERR_SHAPE, "%s: gradient is (%lld, %lld), the output was (%lld, %lld)", m->name,
                           (long long)dY->shape[0], (long long)dY->shape[1], (long long)B, (long long)r->O);
    if (!dX) return LITHE_OK; /* no params: nothing to accumulate */
    reduce_kind k = kind_of(m);
    LITHE__TRY(lithe__tensor_alloc(m->backend, LITHE_F32, 2, (int64_t[]){r->N, r->O}, k == R_FIRST || k == R_LAST, &d));
    lithe_status s = LITHE_OK;
    if (B && r->O) {
        lithe_tensor *c = NULL;
        if (lithe_tensor_is_contiguous(dY)) c = lithe_tensor_retain(dY);
        else {
            s = lithe__tensor_like(dY, false, &c);
            if (s == LITHE_OK) s = lithe__op_copy(m->backend, c, dY);
        }
        if (s == LITHE_OK) switch (k) {
            case R_SUM:
            case R_MEAN: s = lithe__op_reduce_sum_backward(m->backend, c, r->lengths, k == R_MEAN, d); break;
            case R_MAX: s = lithe__op_reduce_max_backward(m->backend, c, r->which, r->lengths, d); break;
            case R_FIRST:
            case R_LAST: s = lithe__op_scatter_add_rows(m->backend, d, r->which, c); break;
            }
        lithe_tensor_release(c);
    } else if (r->N && r->O && (k == R_SUM || k == R_MEAN)) {
        s = lithe__op_fill(m->backend, d, 0.0f);
    }
    if (s == LITHE_OK) s = lithe_value_ragged(d, r->lengths, dX);
    lithe_tensor_release(d);
    return s;
}

static void reduce_destroy(lithe_backprop *self) {
    reduce_bp *r = (reduce_bp *)self;
    lithe_tensor_release(r->lengths);
    lithe_tensor_release(r->which);
}

static lithe_status reduce_forward(lithe_model *m, const lithe_value *X, bool is_train, lithe_value **Yv,
                                   lithe_backprop **bp) {
    (void)is_train;
    if (X->kind != LITHE_VALUE_RAGGED) return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: expected a Ragged value", m->name);
    lithe_tensor *data = X->t[0], *lengths = X->t[1];
    if (data->dtype != LITHE_F32 || data->ndim != 2) {
        char a[LITHE__SHAPE_BUF];
        return lithe__fail(LITHE_ERR_SHAPE, "%s: expected 2-d float32 Ragged data, got %s %s", m->name,
                           lithe_dtype_name(data->dtype), lithe__shape_str(data, a, sizeof a));
    }
    reduce_kind k = kind_of(m);
    int64_t B = lengths->shape[0], N = data->shape[0], O = data->shape[1];
    const int32_t *len = lithe__tdata(lengths);
    if (k != R_SUM && k != R_MEAN)
        for (int64_t b = 0; b < B; b++)
            if (len[b] == 0)
                return lithe__fail(LITHE_ERR_SHAPE, "%s: sequence %lld of %lld is empty; %s needs every length >= 1", m->name,
                                   (long long)b, (long long)B, m->type->registered_name);
    lithe_tensor *c = NULL, *Y = NULL, *which = NULL;
    lithe_status s = LITHE_OK;
    if (lithe_tensor_is_contiguous(data)) c = lithe_tensor_retain(data);
    else {
        s = lithe__tensor_like(data, false, &c);
        if (s == LITHE_OK) s = lithe__op_copy(m->backend, c, data);
    }
    if (s == LITHE_OK) s = lithe__tensor_alloc(m->backend, LITHE_F32, 2, (int64_t[]){B, O}, false, &Y);
    if (s == LITHE_OK && k == R_MAX) s = lithe__tensor_alloc(m->backend, LITHE_I32, 2, (int64_t[]){B, O}, false, &which);
    if (s == LITHE_OK && (k == R_FIRST || k == R_LAST)) { /* the rows to pick, uploaded as int32 ids */
        int32_t *rows = B ? lithe__malloc((size_t)B * sizeof *rows) : NULL;
        if (B && !rows) s = lithe__oom(m->name, (size_t)B * sizeof *rows);
        int64_t start = 0;
        for (int64_t b = 0; rows && b < B; b++) {
            rows[b] = (int32_t)(k == R_FIRST ? start : start + len[b] - 1);
            start += len[b];
        }
        if (s == LITHE_OK) s = lithe__tensor_alloc(m->backend, LITHE_I32, 1, &B, false, &which);
        if (s == LITHE_OK && B) s = lithe_tensor_write(which, rows, (size_t)B * sizeof *rows);
        lithe__free(rows);
    }
    if (s == LITHE_OK && B && O) switch (k) {
        case R_SUM:
        case R_MEAN: s = lithe__op_reduce_sum(m->backend, c, lengths, k == R_MEAN, Y); break;
        case R_MAX: s = lithe__op_reduce_max(m->backend, c, lengths, Y, which); break;
        case R_FIRST:
        case R_LAST: s = lithe__op_gather_rows(m->backend, c, which, Y); break;
        }
    lithe_tensor_release(c);
    if (s == LITHE_OK && bp) {
        s = lithe__backprop_new(m, sizeof(reduce_bp), reduce_backward, reduce_destroy, bp);
        if (s == LITHE_OK) {
            reduce_bp *r = (reduce_bp *)*bp;
            r->lengths = lithe_tensor_retain(lengths);
            r->which = which;
            which = NULL;
            r->N = N;
            r->O = O;
        }
    }
    lithe_tensor_release(which);
    return lithe__emit_output(s, Y, Yv, bp);
}

#define REDUCE_TYPE(var, reg, kind) \
    static const lithe__layer_type var = {reg, NULL, reduce_forward, (const void *)(intptr_t)(kind), 0, 0};
REDUCE_TYPE(sum_type, "reduce_sum.v1", R_SUM)
REDUCE_TYPE(mean_type, "reduce_mean.v1", R_MEAN)
REDUCE_TYPE(max_type, "reduce_max.v1", R_MAX)
REDUCE_TYPE(first_type, "reduce_first.v1", R_FIRST)
REDUCE_TYPE(last_type, "reduce_last.v1", R_LAST)

const lithe__layer_type *const lithe__reduce_types[] = {&sum_type, &mean_type, &max_type, &first_type, &last_type, NULL};

static lithe_status reduce_new(const lithe__layer_type *type, const char *name, lithe_model **out) {
    LITHE__CHECK_ARG(out, name, "out is NULL");
    *out = NULL;
    return lithe__model_new(type, name, NULL, NULL, out);
}
lithe_status lithe_reduce_sum(lithe_model **out) { return reduce_new(&sum_type, "reduce_sum", out); }
lithe_status lithe_reduce_mean(lithe_model **out) { return reduce_new(&mean_type, "reduce_mean", out); }
lithe_status lithe_reduce_max(lithe_model **out) { return reduce_new(&max_type, "reduce_max", out); }
lithe_status lithe_reduce_first(lithe_model **out) { return reduce_new(&first_type, "reduce_first", out); }
lithe_status lithe_reduce_last(lithe_model **out) { return reduce_new(&last_type, "reduce_last", out); }
