/* Device conformance (cases.h), whole models: the same tree built twice with one seed, one
 * moved to the device; predictions, ten Adam steps (dropout masks drawn on each backend from the same
 * Philox stream), predictions and every param against the CPU. Two losses: categorical cross-entropy
 * from int labels (run_labels), and a fixed gradient of any output kind (run_model). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cases.h"

typedef lithe_status (*build_fn)(lithe_model **out);

lithe_status dc_build_mlp(int64_t h1, int64_t h2, float dropout, lithe_model **out) {
    lithe_model *l[3] = {NULL, NULL, NULL};
    lithe_status s = lithe_relu(&(lithe_dense_opts){.nO = h1}, &l[0]);
    if (s == LITHE_OK) s = lithe_relu(&(lithe_dense_opts){.nO = h2, .dropout = dropout}, &l[1]);
    if (s == LITHE_OK) s = lithe_softmax(&(lithe_softmax_opts){.nO = 10}, &l[2]);
    if (s != LITHE_OK) {
        for (int i = 0; i < 3; i++) lithe_model_free(l[i]);
        return s;
    }
    return lithe_chain(3, l, out);
}
static lithe_status build_relu_mlp_dropout(lithe_model **out) { return dc_build_mlp(48, 32, 0.2f, out); }
static lithe_status build_relu_mlp(lithe_model **out) { return dc_build_mlp(48, 32, 0.0f, out); }

static lithe_status build_maxout_ln_dropout(lithe_model **out) {
    lithe_model *l[3] = {NULL, NULL, NULL};
    lithe_status s = lithe_dense("Maxout.v1", &(lithe_dense_opts){.nO = 40, .nP = 3, .normalize = true, .dropout = 0.3f},
                                 &l[0]);
    if (s == LITHE_OK) s = lithe_dense("Mish.v1", &(lithe_dense_opts){.nO = 24, .normalize = true}, &l[1]);
    if (s == LITHE_OK) s = lithe_softmax(&(lithe_softmax_opts){.nO = 7}, &l[2]);
    if (s != LITHE_OK) {
        for (int i = 0; i < 3; i++) lithe_model_free(l[i]);
        return s;
    }
    return lithe_chain(3, l, out);
}

static lithe_status build_hash_embed_tagger(lithe_model **out) {
    lithe_model *l[3] = {NULL, NULL, NULL};
    lithe_status s = lithe_hash_embed(&(lithe_embed_opts){.nO = 24, .nV = 97, .has_seed = true, .seed = 5}, &l[0]);
    if (s == LITHE_OK) s = lithe_dense("Maxout.v1", &(lithe_dense_opts){.nO = 16, .nP = 2, .normalize = true}, &l[1]);
    if (s == LITHE_OK) s = lithe_softmax(&(lithe_softmax_opts){.nO = 5}, &l[2]);
    if (s != LITHE_OK) {
        for (int i = 0; i < 3; i++) lithe_model_free(l[i]);
        return s;
    }
    return lithe_chain(3, l, out);
}

static void expect_values(const char *what, const lithe_value *a, const lithe_value *b, double atol, double rtol) {
    pair p = {lithe_value_get_tensor(a), lithe_value_get_tensor(b)};
    CHECK_TRUE(p.c);
    CHECK_TRUE(p.v);
    expect_pair(what, p, atol, rtol);
}

/* The same model built twice with one seed; one moved to Vulkan. Predictions, then ten Adam
 * steps of training (forward, cross-entropy gradient, backward, finish_update) with dropout
 * masks drawn on each backend from the same Philox stream, then predictions and every param. */
/* nI == 0: the inputs are B uint64 ids (an embedding table's), else (B, nI) floats. */
static void run_labels(const char *name, build_fn build, int64_t nI, int64_t nC, size_t n_params) {
    enum { B = 50 };
    lithe_model *mc = NULL, *mv = NULL;
    OK(build(&mc));
    OK(build(&mv));
    OK(lithe_model_set_seed(mc, 7));
    OK(lithe_model_set_seed(mv, 7));
    float *x = malloc(sizeof(float) * (size_t)(B * (nI ? nI : 1))), *onehot = calloc((size_t)(B * nC), sizeof(float));
    uint64_t ids[B];
    int32_t y[B];
    for (int64_t i = 0; i < B * nI; i++) x[i] = (float)(uni() * 2 - 1);
    for (int i = 0; i < B; i++) {
        ids[i] = lithe__splitmix64(&rng_state) % 1000;
        y[i] = (int32_t)(uni() * (double)nC);
        onehot[i * nC + y[i]] = 1.0f;
    }
    lithe_dtype xdt = nI ? LITHE_F32 : LITHE_U64;
    const void *xdata = nI ? (const void *)x : (const void *)ids;
    int xnd = nI ? 2 : 1;
    const int64_t xshape[2] = {B, nI};
    lithe_value *Xc = devt_value_on(cpu, xdt, xnd, xshape, xdata),
                *Yc = devt_value_on(cpu, LITHE_F32, 2, (int64_t[]){B, nC}, onehot);
    OK(lithe_model_initialize(mc, Xc, Yc));
    OK(lithe_model_initialize(mv, Xc, Yc)); /* initialized on the CPU, then moved */
    OK(lithe_model_to_backend(mv, dev)); /* lithe_model_set_backend under its second name */
    CHECK_TRUE(lithe_model_backend(mv) == dev);
    lithe_value *Xv = devt_value_on(dev, xdt, xnd, xshape, xdata);
    lithe_value *Lc = devt_value_on(cpu, LITHE_I32, 1, (int64_t[]){B}, y), *Lv = devt_value_on(dev, LITHE_I32, 1, (int64_t[]){B}, y);
    char what[128];

    lithe_value *Pc = NULL, *Pv = NULL;
    OK(lithe_model_predict(mc, Xc, &Pc));
    OK(lithe_model_predict(mv, Xv, &Pv));
    snprintf(what, sizeof what, "%s predictions", name);
    expect_values(what, Pc, Pv, 1e-5, 1e-4);
    lithe_value_release(Pc);
    lithe_value_release(Pv);

    lithe_optimizer_opts oo = lithe_adam_defaults();
    oo.learn_rate = 0.01;
    lithe_optimizer *oc = NULL, *ov = NULL;
    OK(lithe_optimizer_new(&oo, &oc));
    OK(lithe_optimizer_new(&oo, &ov));
    for (int step = 0; step < 10; step++) {
        lithe_model *ms[2] = {mc, mv};
        lithe_value *Xs[2] = {Xc, Xv}, *Ls[2] = {Lc, Lv};
        lithe_optimizer *os[2] = {oc, ov};
        for (int side = 0; side < 2; side++) {
            lithe_value *G = NULL, *dv = NULL;
            lithe_backprop *bp = NULL;
            lithe_tensor *d = NULL;
            OK(lithe_model_begin_update(ms[side], Xs[side], &G, &bp));
            OK(lithe_categorical_crossentropy(NULL, lithe_value_get_tensor(G), lithe_value_get_tensor(Ls[side]), &d, NULL));
            OK(lithe_value_tensor(d, &dv));
            OK(lithe_backprop_run(bp, dv, NULL));
            OK(lithe_model_finish_update(ms[side], os[side]));
            lithe_tensor_release(d);
            lithe_value_release(dv);
            lithe_value_release(G);
            lithe_backprop_free(bp);
        }
    }
    OK(lithe_model_predict(mc, Xc, &Pc));
    OK(lithe_model_predict(mv, Xv, &Pv));
    snprintf(what, sizeof what, "%s predictions after 10 Adam steps", name);
    expect_values(what, Pc, Pv, 1e-4, 1e-3);
    lithe_value_release(Pc);
    lithe_value_release(Pv);
    /* every param of the tree, node by node in walk order */
    lithe_model *nc[64], *nv[64];
    size_t n1 = 0, n2 = 0, checked = 0;
    OK(lithe_model_walk(mc, nc, 64, &n1));
    OK(lithe_model_walk(mv, nv, 64, &n2));
    CHECK_EQ(n1, n2);
    for (size_t i = 0; i < n1 && i < 64; i++)
        for (size_t p = 0; p < lithe_model_n_params(nc[i]); p++) {
            const char *pn = lithe_model_param_name(nc[i], p);
            pair t = {NULL, NULL};
            if (lithe_model_get_param(nc[i], pn, &t.c) != LITHE_OK) continue;
            OK(lithe_model_get_param(nv[i], pn, &t.v));
            CHECK(lithe_tensor_backend(t.v) == dev, "%s: param %s is not on %s", name, pn, devt_name);
            checked++;
            snprintf(what, sizeof what, "%s: node %zu param %s after 10 Adam steps", name, i, pn);
            expect_pair(what, t, 2e-4, 2e-3);
        }
    /* n_params 0: at least one */
    CHECK(n_params ? checked == n_params : checked > 0, "%s: %zu params compared, expected %zu", name, checked, n_params);
    lithe_optimizer_free(oc);
    lithe_optimizer_free(ov);
    lithe_value_release(Xc);
    lithe_value_release(Yc);
    lithe_value_release(Xv);
    lithe_value_release(Lc);
    lithe_value_release(Lv);
    lithe_model_free(mc);
    lithe_model_free(mv);
    free(x);
    free(onehot);
}

void dc_model_relu_mlp_dropout(void) { run_labels("Relu MLP with dropout", build_relu_mlp_dropout, 37, 10, 6); }
void dc_model_maxout_layernorm_dropout(void) {
    run_labels("Maxout+LayerNorm+Dropout, Mish+LayerNorm", build_maxout_ln_dropout, 29, 7, 0);
}
void dc_model_hash_embed_tagger(void) {
    run_labels("HashEmbed>>Maxout+LayerNorm>>Softmax over uint64 ids", build_hash_embed_tagger, 0, 5, 0);
}
void dc_model_mlp(void) { run_labels("Relu MLP 20-48-32-10", build_relu_mlp, 20, 10, 6); }

/* ---- models with a fixed output gradient (any output kind: Ragged, Padded, tuples) ---- */

typedef lithe_value *(*input_fn)(lithe_backend *be); /* the model's input with its data on `be` (lengths on the host) */

static lithe_tensor *tensor_on(lithe_backend *be, lithe_dtype dt, int ndim, const int64_t *shape, const void *data) {
    lithe_tensor *t = NULL;
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    if (lithe_tensor_new(be, dt, ndim, shape, &t) || lithe_tensor_write(t, data, (size_t)n * lithe_dtype_size(dt)))
        FAIL("tensor_on: %s", lithe_last_error());
    return t;
}
static lithe_value *wrap(lithe_tensor *t) {
    lithe_value *v = NULL;
    if (lithe_value_tensor(t, &v)) FAIL("wrap: %s", lithe_last_error());
    lithe_tensor_release(t);
    return v;
}
static float *rand_floats(uint64_t seed, int64_t n, double lo, double hi) {
    float *x = malloc(sizeof(float) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) x[i] = (float)(lo + (hi - lo) * (double)(lithe__splitmix64(&seed) >> 11) * 0x1p-53);
    return x;
}

/* A gradient for Y (its data's shape, the same kind and fields): fixed values from `seed`. */
static lithe_value *grad_like(const lithe_value *Y, lithe_backend *be, uint64_t seed) {
    lithe_tensor *y = lithe_value_get_tensor(Y);
    float *r = rand_floats(seed, lithe_tensor_numel(y), -0.1, 0.1);
    lithe_tensor *d = tensor_on(be, LITHE_F32, lithe_tensor_ndim(y), lithe_tensor_shape(y), r);
    free(r);
    lithe_value *v = NULL;
    lithe_status s = LITHE_OK;
    switch (lithe_value_kind_of(Y)) {
    case LITHE_VALUE_RAGGED: s = lithe_value_ragged(d, lithe_value_field(Y, "lengths"), &v); break;
    case LITHE_VALUE_PADDED:
        s = lithe_value_padded(d, lithe_value_field(Y, "size_at_t"), lithe_value_field(Y, "lengths"),
                               lithe_value_field(Y, "indices"), &v);
        break;
    default: s = lithe_value_tensor(d, &v); break;
    }
    if (s != LITHE_OK) FAIL("grad_like: %s", lithe_last_error());
    lithe_tensor_release(d);
    return v;
}

static void expect_outputs(const char *what, const lithe_value *a, const lithe_value *b, double atol, double rtol) {
    expect_pair(what, (pair){lithe_value_get_tensor(a), lithe_value_get_tensor(b)}, atol, rtol);
}

/* Predictions, ten Adam steps (forward, a fixed gradient of the output, backward, finish_update;
 * dropout masks drawn on each backend from the same Philox stream), predictions and every param. */
static void run_model(const char *name, build_fn build, input_fn input) {
    lithe_model *mc = NULL, *mv = NULL;
    lithe_value *Xc = NULL, *Xv = NULL, *Pc = NULL, *Pv = NULL;
    lithe_optimizer *oc = NULL, *ov = NULL;
    char what[160];
    OK(build(&mc));
    OK(build(&mv));
    OK(lithe_model_set_seed(mc, 7));
    OK(lithe_model_set_seed(mv, 7));
    Xc = input(cpu);
    Xv = input(dev);
    OK(lithe_model_initialize(mc, Xc, NULL));
    OK(lithe_model_initialize(mv, Xc, NULL)); /* initialized on the CPU, then moved */
    OK(lithe_model_to_backend(mv, dev));
    OK(lithe_model_predict(mc, Xc, &Pc));
    OK(lithe_model_predict(mv, Xv, &Pv));
    snprintf(what, sizeof what, "%s: predictions", name);
    expect_outputs(what, Pc, Pv, 1e-5, 1e-4);
    lithe_value_release(Pc);
    lithe_value_release(Pv);
    lithe_optimizer_opts oo = lithe_adam_defaults();
    oo.learn_rate = 0.01;
    OK(lithe_optimizer_new(&oo, &oc));
    OK(lithe_optimizer_new(&oo, &ov));
    for (int step = 0; step < 10; step++) {
        lithe_model *ms[2] = {mc, mv};
        lithe_value *Xs[2] = {Xc, Xv};
        lithe_optimizer *os[2] = {oc, ov};
        lithe_backend *bs[2] = {cpu, dev};
        for (int side = 0; side < 2; side++) {
            lithe_value *Y = NULL, *dY = NULL, *dX = NULL;
            lithe_backprop *bp = NULL;
            lithe_status s = lithe_model_begin_update(ms[side], Xs[side], &Y, &bp);
            if (s == LITHE_OK) dY = grad_like(Y, bs[side], 1000u + (uint64_t)step);
            if (s == LITHE_OK && dY) s = lithe_backprop_run(bp, dY, &dX);
            if (s == LITHE_OK) s = lithe_model_finish_update(ms[side], os[side]);
            lithe_value_release(dX);
            lithe_value_release(dY);
            lithe_value_release(Y);
            lithe_backprop_free(bp);
            if (s != LITHE_OK) {
                FAIL("%s: step %d on %s: %s: %s", name, step, side ? devt_name : "cpu", lithe_status_str(s), lithe_last_error());
                goto done;
            }
        }
    }
    if (lithe_model_predict(mc, Xc, &Pc) || lithe_model_predict(mv, Xv, &Pv)) {
        FAIL("%s: predict after training: %s", name, lithe_last_error());
        goto done;
    }
    snprintf(what, sizeof what, "%s: predictions after 10 Adam steps", name);
    expect_outputs(what, Pc, Pv, 1e-4, 1e-3);
    lithe_value_release(Pc);
    lithe_value_release(Pv);
    lithe_model *nc[64], *nv[64];
    size_t n1 = 0, n2 = 0, checked = 0;
    if (lithe_model_walk(mc, nc, 64, &n1) || lithe_model_walk(mv, nv, 64, &n2) || n1 != n2) {
        FAIL("%s: walk: %s", name, lithe_last_error());
        goto done;
    }
    for (size_t i = 0; i < n1 && i < 64; i++)
        for (size_t p = 0; p < lithe_model_n_params(nc[i]); p++) {
            const char *pn = lithe_model_param_name(nc[i], p);
            pair t = {NULL, NULL};
            if (lithe_model_get_param(nc[i], pn, &t.c) != LITHE_OK || !t.c) continue;
            if (lithe_model_get_param(nv[i], pn, &t.v) != LITHE_OK || lithe_tensor_backend(t.v) != dev) {
                FAIL("%s: param %s is not on %s", name, pn, devt_name);
                continue;
            }
            snprintf(what, sizeof what, "%s: node %zu (%s) param %s after 10 Adam steps", name, i, lithe_model_name(nc[i]), pn);
            expect_pair(what, t, 2e-4, 2e-3);
            checked++;
        }
    printf("%s: %zu params match after 10 Adam steps\n", name, checked);
    if (!checked) FAIL("%s: no params compared", name);
done:
    lithe_optimizer_free(oc);
    lithe_optimizer_free(ov);
    lithe_value_release(Xc);
    lithe_value_release(Xv);
    lithe_model_free(mc);
    lithe_model_free(mv);
}

static lithe_status chain_of(int n, lithe_model **l, lithe_status s, lithe_model **out) {
    if (s != LITHE_OK) {
        for (int i = 0; i < n; i++) lithe_model_free(l[i]);
        return s;
    }
    return lithe_chain(n, l, out);
}

/* 1. A Thinc-style text model: HashEmbed over uint64 ids >> Maxout (3 pieces) with dropout >> Softmax */
static lithe_status build_text(lithe_model **out) {
    lithe_model *l[3] = {NULL, NULL, NULL};
    lithe_status s = lithe_hash_embed(&(lithe_embed_opts){.nO = 24, .nV = 97, .has_seed = true, .seed = 5}, &l[0]);
    if (s == LITHE_OK) s = lithe_dense("Maxout.v1", &(lithe_dense_opts){.nO = 16, .nP = 3, .dropout = 0.2f}, &l[1]);
    if (s == LITHE_OK) s = lithe_softmax(&(lithe_softmax_opts){.nO = 5}, &l[2]);
    return chain_of(3, l, s, out);
}
static lithe_value *input_text(lithe_backend *be) {
    uint64_t ids[50], seed = 99;
    for (int i = 0; i < 50; i++) ids[i] = lithe__splitmix64(&seed) % 1000;
    return wrap(tensor_on(be, LITHE_U64, 1, (int64_t[]){50}, ids));
}

/* 2. A BiLSTM tagger: two bidirectional LSTM layers with dropout over Padded (T, B, nI) >>
 * with_array2d(Softmax) */
static lithe_status build_bilstm(lithe_model **out) {
    lithe_model *l[2] = {NULL, NULL}, *sm = NULL;
    lithe_status s = lithe_lstm(&(lithe_lstm_opts){.nO = 8, .nI = 6, .bi = true, .depth = 2, .dropout = 0.1f}, &l[0]);
    if (s == LITHE_OK) s = lithe_softmax(&(lithe_softmax_opts){.nO = 5, .nI = 8}, &sm);
    if (s == LITHE_OK) s = lithe_with_array2d(sm, 0, &l[1]);
    else lithe_model_free(sm);
    return chain_of(2, l, s, out);
}
static lithe_value *input_bilstm(lithe_backend *be) {
    static const int32_t sat[5] = {4, 4, 3, 1, 1}, lens[4] = {5, 3, 3, 2}, idx[4] = {2, 0, 3, 1};
    float *x = rand_floats(5, 5 * 4 * 6, -1, 1);
    lithe_tensor *d = tensor_on(be, LITHE_F32, 3, (int64_t[]){5, 4, 6}, x), *t1 = NULL, *t2 = NULL, *t3 = NULL;
    free(x);
    lithe_value *v = NULL;
    if (lithe_tensor_from_data(LITHE_I32, 1, (int64_t[]){5}, sat, &t1) ||
        lithe_tensor_from_data(LITHE_I32, 1, (int64_t[]){4}, lens, &t2) ||
        lithe_tensor_from_data(LITHE_I32, 1, (int64_t[]){4}, idx, &t3) || lithe_value_padded(d, t1, t2, t3, &v))
        FAIL("input_bilstm: %s", lithe_last_error());
    lithe_tensor_release(d), lithe_tensor_release(t1), lithe_tensor_release(t2), lithe_tensor_release(t3);
    return v;
}

/* 3. Windows and attention over Ragged rows: expand_window(1) (seq2col) >> with_array(Relu with
 * dropout) >> ParametricAttention >> with_array(Softmax) */
static lithe_status build_attention(lithe_model **out) {
    lithe_model *l[4] = {NULL, NULL, NULL, NULL}, *relu = NULL, *sm = NULL;
    lithe_status s = lithe_expand_window(1, &l[0]);
    if (s == LITHE_OK) s = lithe_relu(&(lithe_dense_opts){.nO = 12, .nI = 18, .dropout = 0.1f}, &relu);
    if (s == LITHE_OK) s = lithe_with_array(relu, 0, &l[1]);
    if (s == LITHE_OK) s = lithe_parametric_attention(12, &l[2]);
    if (s == LITHE_OK) s = lithe_softmax(&(lithe_softmax_opts){.nO = 5, .nI = 12}, &sm);
    if (s == LITHE_OK) s = lithe_with_array(sm, 0, &l[3]);
    return chain_of(4, l, s, out);
}
static lithe_value *input_attention(lithe_backend *be) {
    static const int32_t lens[6] = {3, 0, 1, 7, 2, 5};
    float *x = rand_floats(6, 18 * 6, -1, 1);
    lithe_tensor *d = tensor_on(be, LITHE_F32, 2, (int64_t[]){18, 6}, x), *L = NULL;
    free(x);
    lithe_value *v = NULL;
    if (lithe_tensor_from_data(LITHE_I32, 1, (int64_t[]){6}, lens, &L) || lithe_value_ragged(d, L, &v))
        FAIL("input_attention: %s", lithe_last_error());
    lithe_tensor_release(d), lithe_tensor_release(L);
    return v;
}

/* 4. A hashed-features classifier: SparseLinear (keys, values, lengths) >> Softmax */
static lithe_status build_sparse(lithe_model **out) {
    lithe_model *l[2] = {NULL, NULL};
    lithe_status s = lithe_sparse_linear(&(lithe_sparse_linear_opts){.nO = 6, .length = 128}, &l[0]);
    if (s == LITHE_OK) s = lithe_softmax(&(lithe_softmax_opts){.nO = 4, .nI = 6}, &l[1]);
    return chain_of(2, l, s, out);
}
static lithe_value *input_sparse(lithe_backend *be) {
    static const int32_t lens[5] = {4, 1, 0, 6, 3};
    uint64_t keys[14], seed = 77;
    for (int i = 0; i < 14; i++) keys[i] = i % 4 ? lithe__splitmix64(&seed) : (uint64_t)i;
    float *vals = rand_floats(8, 14, 0.5, 1.5);
    lithe_tensor *L = NULL;
    if (lithe_tensor_from_data(LITHE_I32, 1, (int64_t[]){5}, lens, &L)) FAIL("input_sparse: %s", lithe_last_error());
    lithe_value *items[3] = {wrap(tensor_on(be, LITHE_U64, 1, (int64_t[]){14}, keys)),
                             wrap(tensor_on(be, LITHE_F32, 1, (int64_t[]){14}, vals)), wrap(L)};
    free(vals);
    lithe_value *v = NULL;
    if (lithe_value_tuple(3, items, &v)) FAIL("input_sparse: %s", lithe_last_error());
    for (int i = 0; i < 3; i++) lithe_value_release(items[i]);
    return v;
}

/* 5. siamese(Relu, CauchySimilarity) over a pair of (B, nI) arrays */
static lithe_status build_siamese(lithe_model **out) {
    lithe_model *a = NULL, *b = NULL;
    lithe_status s = lithe_relu(&(lithe_dense_opts){.nO = 7, .nI = 9}, &a);
    if (s == LITHE_OK) s = lithe_cauchy_similarity(7, &b);
    if (s != LITHE_OK) {
        lithe_model_free(a);
        lithe_model_free(b);
        return s;
    }
    return lithe_siamese(a, b, out);
}
static lithe_value *input_siamese(lithe_backend *be) {
    float *x1 = rand_floats(11, 13 * 9, -1, 1), *x2 = rand_floats(12, 13 * 9, -1, 1);
    lithe_value *items[2] = {wrap(tensor_on(be, LITHE_F32, 2, (int64_t[]){13, 9}, x1)),
                             wrap(tensor_on(be, LITHE_F32, 2, (int64_t[]){13, 9}, x2))};
    free(x1);
    free(x2);
    lithe_value *v = NULL;
    if (lithe_value_tuple(2, items, &v)) FAIL("input_siamese: %s", lithe_last_error());
    lithe_value_release(items[0]);
    lithe_value_release(items[1]);
    return v;
}

void dc_model_text(void) { run_model("HashEmbed>>Maxout(dropout)>>Softmax", build_text, input_text); }
void dc_model_bilstm(void) { run_model("BiLSTM(2 layers, dropout)>>with_array2d(Softmax)", build_bilstm, input_bilstm); }
void dc_model_attention(void) {
    run_model("expand_window>>Relu(dropout)>>ParametricAttention>>Softmax", build_attention, input_attention);
}
void dc_model_sparse(void) { run_model("SparseLinear>>Softmax", build_sparse, input_sparse); }
void dc_model_siamese(void) { run_model("siamese(Relu, CauchySimilarity)", build_siamese, input_siamese); }
