/* strings2arrays.v1 (thinc/layers/strings2arrays.py): a LIST of STRINGS values (Thinc's
 * Sequence[Sequence[str]]; an empty LIST item counts as no strings) to a LIST of (n, 1) uint64 arrays of the strings' hashes. Thinc
 * hashes each word with murmurhash's hash_unicode: MurmurHash3_x86_32 of the UTF-8 bytes, seed
 * 0, returned as a signed int32; ops.asarray2i(..., dtype="uint64") then wraps negatives modulo
 * 2^64. The hash_strings primitive does exactly that. The backprop returns an empty LIST, as
 * Thinc's returns []. */
#include "dense.h"

typedef struct s2a_bp {
    lithe_backprop base;
} s2a_bp;

static lithe_status s2a_backward(lithe_backprop *self, const lithe_value *dY, lithe_value **dX) {
    (void)self;
    (void)dY;
    if (!dX) return LITHE_OK;
    return lithe_value_list(0, NULL, dX);
}

static void s2a_destroy(lithe_backprop *self) { (void)self; }

/* One STRINGS value to its (n, 1) uint64 hashes on the host backend. */
static lithe_status hash_one(const lithe_model *m, const lithe_value *strs, lithe_tensor **out) {
    int64_t n = (int64_t)lithe_value_len(strs);
    lithe_tensor *h = NULL;
    lithe_backend *cpu = lithe__backend_host();
    LITHE__TRY(lithe__tensor_alloc(cpu, LITHE_U64, 2, (int64_t[]){n, 1}, false, &h));
    /* an empty LIST is a sequence of no strings (what bindings make of []) */
    lithe_status s = n ? lithe__op_hash_strings(cpu, strs->t[0], strs->t[1], 0, h) : LITHE_OK;
    if (s != LITHE_OK) {
        lithe_tensor_release(h);
        return s;
    }
    (void)m;
    *out = h;
    return LITHE_OK;
}

static lithe_status s2a_forward(lithe_model *m, const lithe_value *X, bool is_train, lithe_value **Yv,
                                lithe_backprop **bp) {
    (void)is_train;
    if (!X || lithe_value_kind_of(X) != LITHE_VALUE_LIST)
        return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: expected a list of strings values (sequences of strings)", m->name);
    size_t n = lithe_value_len(X);
    for (size_t i = 0; i < n; i++)
        if (lithe_value_kind_of(lithe_value_item(X, i)) != LITHE_VALUE_STRINGS &&
            !(lithe_value_kind_of(lithe_value_item(X, i)) == LITHE_VALUE_LIST && !lithe_value_len(lithe_value_item(X, i))))
            return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: list item %zu is not a strings value", m->name, i);
    lithe_tensor **ts = lithe__calloc(n ? n : 1, sizeof *ts);
    if (!ts) return lithe__oom(m->name, n * sizeof *ts);
    lithe_status s = LITHE_OK;
    size_t done = 0;
    for (; s == LITHE_OK && done < n; done++) s = hash_one(m, lithe_value_item(X, done), &ts[done]);
    if (s != LITHE_OK) {
        for (size_t i = 0; i < n; i++) lithe_tensor_release(ts[i]);
        lithe__free(ts);
        return s;
    }
    s = lithe__list_of_tensors(n, ts, Yv); /* takes over the tensors */
    lithe__free(ts);
    if (s == LITHE_OK && bp) {
        s = lithe__backprop_new(m, sizeof(s2a_bp), s2a_backward, s2a_destroy, bp);
        if (s != LITHE_OK) {
            lithe_value_release(*Yv);
            *Yv = NULL;
        }
    }
    return s;
}

static const lithe__layer_type s2a_type = {"strings2arrays.v1", NULL, s2a_forward, NULL, 0, 0};
const lithe__layer_type *const lithe__strings_types[] = {&s2a_type, NULL};

lithe_status lithe_strings2arrays(lithe_model **out) {
    LITHE__CHECK_ARG(out, "strings2arrays.v1", "out is NULL");
    return lithe__model_new(&s2a_type, "strings2arrays", NULL, NULL, out);
}
