/* The transfer layers: list2ragged, ragged2list, list2padded, padded2list, list2array — Thinc's
 * conversions between sequence containers as layers, each with the inverse conversion as its
 * backprop. No params, no dims. */
#include "../internal.h"

typedef enum transfer_kind { LIST2RAGGED, RAGGED2LIST, LIST2PADDED, PADDED2LIST, LIST2ARRAY } transfer_kind;

typedef struct transfer_bp {
    lithe_backprop base;
    lithe_tensor *lengths; /* the forward input's lengths (ragged2list, list2array) */
} transfer_bp;

static transfer_kind kind_of(const lithe_model *m) { return (transfer_kind)(intptr_t)m->type->info; }

static lithe_status expect(const lithe_model *m, const lithe_value *v, lithe_value_kind kind, const char *what) {
    if (!v || v->kind != kind) return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: expected %s", m->name, what);
    return LITHE_OK;
}

static lithe_status transfer_backward(lithe_backprop *self, const lithe_value *dY, lithe_value **dX) {
    lithe_model *m = self->model;
    transfer_bp *r = (transfer_bp *)self;
    lithe_value *out = NULL;
    lithe_tensor *flat = NULL;
    lithe_status s = LITHE_OK;
    switch (kind_of(m)) {
    case LIST2RAGGED: /* dX = unflatten(dY.data, dY.lengths) */
        s = expect(m, dY, LITHE_VALUE_RAGGED, "a Ragged gradient");
        if (s == LITHE_OK) s = lithe__seq_unflatten(m->name, dY->t[0], dY->t[1], 0, &out);
        break;
    case RAGGED2LIST: /* dX = Ragged(flatten(dYs), lengths) */
        s = lithe__seq_flatten(m->backend, m->name, dY, 0, &flat);
        if (s == LITHE_OK) s = lithe_value_ragged(flat, r->lengths, &out);
        break;
    case LIST2PADDED: s = lithe__seq_padded2list(m->backend, m->name, dY, &out); break;
    case PADDED2LIST: s = lithe__seq_list2padded(m->backend, m->name, dY, &out); break;
    case LIST2ARRAY: /* dXs = unflatten(dY, lengths) */
        s = expect(m, dY, LITHE_VALUE_TENSOR, "an array gradient");
        if (s == LITHE_OK) s = lithe__seq_unflatten(m->name, dY->t[0], r->lengths, 0, &out);
        break;
    }
    lithe_tensor_release(flat);
    if (s != LITHE_OK) return s;
    if (dX) *dX = out;
    else lithe_value_release(out);
    return LITHE_OK;
}

static void transfer_destroy(lithe_backprop *self) { lithe_tensor_release(((transfer_bp *)self)->lengths); }

static lithe_status transfer_forward(lithe_model *m, const lithe_value *X, bool is_train, lithe_value **Y,
                                     lithe_backprop **bp) {
    (void)is_train;
    lithe_tensor *lengths = NULL, *flat = NULL;
    lithe_status s = LITHE_OK;
    switch (kind_of(m)) {
    case LIST2RAGGED:
        s = lithe__seq_lengths(m->name, X, &lengths);
        if (s == LITHE_OK) s = lithe__seq_flatten(m->backend, m->name, X, 0, &flat);
        if (s == LITHE_OK) s = lithe_value_ragged(flat, lengths, Y);
        break;
    case RAGGED2LIST:
        s = expect(m, X, LITHE_VALUE_RAGGED, "a Ragged value");
        if (s == LITHE_OK) s = lithe__seq_unflatten(m->name, X->t[0], X->t[1], 0, Y);
        if (s == LITHE_OK) lengths = lithe_tensor_retain(X->t[1]);
        break;
    case LIST2PADDED: s = lithe__seq_list2padded(m->backend, m->name, X, Y); break;
    case PADDED2LIST: s = lithe__seq_padded2list(m->backend, m->name, X, Y); break;
    case LIST2ARRAY:
        s = lithe__seq_lengths(m->name, X, &lengths);
        if (s == LITHE_OK) s = lithe__seq_flatten(m->backend, m->name, X, 0, &flat);
        if (s == LITHE_OK) s = lithe_value_tensor(flat, Y);
        break;
    }
    lithe_tensor_release(flat);
    if (s == LITHE_OK && bp) {
        s = lithe__backprop_new(m, sizeof(transfer_bp), transfer_backward, transfer_destroy, bp);
        if (s == LITHE_OK) {
            ((transfer_bp *)*bp)->lengths = lengths;
            lengths = NULL;
        } else {
            lithe_value_release(*Y);
            *Y = NULL;
        }
    }
    lithe_tensor_release(lengths);
    return s;
}

#define TRANSFER_TYPE(var, reg, kind) \
    static const lithe__layer_type var = {reg, NULL, transfer_forward, (const void *)(intptr_t)(kind), 0, 0};
TRANSFER_TYPE(list2ragged_type, "list2ragged.v1", LIST2RAGGED)
TRANSFER_TYPE(ragged2list_type, "ragged2list.v1", RAGGED2LIST)
TRANSFER_TYPE(list2padded_type, "list2padded.v1", LIST2PADDED)
TRANSFER_TYPE(padded2list_type, "padded2list.v1", PADDED2LIST)
TRANSFER_TYPE(list2array_type, "list2array.v1", LIST2ARRAY)

const lithe__layer_type *const lithe__transfer_types[] = {&list2ragged_type, &ragged2list_type, &list2padded_type,
                                                          &padded2list_type, &list2array_type, NULL};

static lithe_status transfer_new(const lithe__layer_type *type, const char *name, lithe_model **out) {
    LITHE__CHECK_ARG(out, name, "out is NULL");
    *out = NULL;
    return lithe__model_new(type, name, NULL, NULL, out);
}

lithe_status lithe_list2ragged(lithe_model **out) { return transfer_new(&list2ragged_type, "list2ragged", out); }
lithe_status lithe_ragged2list(lithe_model **out) { return transfer_new(&ragged2list_type, "ragged2list", out); }
lithe_status lithe_list2padded(lithe_model **out) { return transfer_new(&list2padded_type, "list2padded", out); }
lithe_status lithe_padded2list(lithe_model **out) { return transfer_new(&padded2list_type, "padded2list", out); }
lithe_status lithe_list2array(lithe_model **out) { return transfer_new(&list2array_type, "list2array", out); }
