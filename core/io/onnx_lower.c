/* A native layer tree lowered to standard ONNX operators at opset 17 (lithe_model_save_onnx):
 * Linear and the dense family -> Gemm (transB) and the activation's operators, Softmax -> Gemm,
 * Softmax (temperature: a Div first), MultiSoftmax -> Gemm (+ Split, Softmax, Concat with its
 * softmax_groups attr), Maxout -> Gemm, Reshape, ReduceMax, LayerNorm -> LayerNormalization
 * (epsilon 1e-8, Thinc's), Embed -> Gather, the column getter Embed builds -> Gather, concatenate
 * -> Concat, add -> Add, residual -> Add, noop and Dropout -> nothing (inference). The input is
 * "X" and the output "Y", their first axis the dynamic "batch". A node reached twice (tied
 * weights) has its params written once, both uses reading the same initializers. */
#include "onnx_write.h"

#include <stdio.h>
#include <string.h>

#define WHAT "lithe_model_save_onnx"
#define VN LITHE__OX_VN

static void fresh(lithe__ox *o, char *buf) { snprintf(buf, VN, "v%zu", o->counter++); }

/* A NodeProto: inputs, one output, a unique name, the op type, its attributes (attrs: AttributeProto
 * fields as at_* writes them, consumed). */
static void emit(lithe__ox *o, const char *op, const char *const *ins, size_t nin, const char *out, wb *attrs) {
    wb n = {0};
    char name[VN + 32];
    for (size_t i = 0; i < nin; i++) wb_str(&n, 1, ins[i]);
    wb_str(&n, 2, out);
    snprintf(name, sizeof name, "%s_%zu", op, o->counter++);
    wb_str(&n, 3, name);
    wb_str(&n, 4, op);
    if (attrs) {
        wb_put(&n, attrs->p, attrs->n);
        if (attrs->oom) n.oom = true;
        wb_free(attrs);
    }
    wb_sub(&o->nodes, 1, &n);
}
static void op1(lithe__ox *o, const char *op, const char *a, char *out, wb *attrs) {
    fresh(o, out);
    emit(o, op, (const char *const[]){a}, 1, out, attrs);
}
static void op2(lithe__ox *o, const char *op, const char *a, const char *b, char *out) {
    fresh(o, out);
    emit(o, op, (const char *const[]){a, b}, 2, out, NULL);
}

/* A float32 scalar initializer; its name into name. */
static void scalar_f32(lithe__ox *o, float v, char *name) {
    wb t = {0};
    snprintf(name, VN, "c%zu", o->counter++);
    tensor_proto(&t, name, 0, NULL, &v, NULL, 1);
    wb_sub(&o->inits, 5, &t);
}
static void ints_init(lithe__ox *o, const int64_t *v, int64_t n, char *name) {
    wb t = {0};
    snprintf(name, VN, "c%zu", o->counter++);
    tensor_proto(&t, name, 1, &n, NULL, v, n);
    wb_sub(&o->inits, 5, &t);
}

static bool seen(lithe__ox *o, lithe_model *m, bool *oom) {
    for (size_t i = 0; i < o->n_seen; i++)
        if (o->seen[i] == m) return true;
    if (o->n_seen == o->cap_seen) {
        size_t nc = o->cap_seen ? 2 * o->cap_seen : 16;
        lithe_model **a = lithe__realloc(o->seen, nc * sizeof *a);
        if (!a) {
            *oom = true;
            return false;
        }
        o->seen = a;
        o->cap_seen = nc;
    }
    o->seen[o->n_seen++] = m;
    return false;
}

/* "<node name>_<walk index>.<param>": the index is the node's in lithe_model_walk (and in .lithe
 * files' tensor names), so names are the same for every export of the same tree. */
static void init_name(const lithe__ox *o, const lithe_model *m, const char *param, char *name) {
    size_t k = 0;
    while (k < o->n_walk && o->walk[k] != m) k++;
    snprintf(name, VN, "%.60s_%zu.%s", m->name, k, param);
}

/* The initializer "<node>_<index>.<param>" of m's param (its current value), written on m's first
 * use with dims ndim/dims (the param's own when ndim is 0 and dims NULL); its name into name. */
static lithe_status param_init(lithe__ox *o, lithe_model *m, const char *param, int ndim, const int64_t *dims,
                               char *name) {
    init_name(o, m, param, name);
    lithe__param *p = lithe__model_find_param(m, param);
    if (!p || !p->value)
        return lithe__fail(LITHE_ERR_STATE, "%s: node '%s' (%s): param %s is unset (initialize the model first)", WHAT,
                           m->name, m->type->registered_name, param);
    lithe_tensor *h = NULL, *f = NULL;
    /* a compact weight: its float32 values (decoded where its scales are: a copy has none) */
    LITHE__TRY(lithe__as_f32(p->value, &f));
    lithe_status st = lithe_tensor_to_backend(f, NULL, &h);
    lithe_tensor_release(f);
    LITHE__TRY(st);
    wb t = {0};
    if (!dims) {
        ndim = h->ndim;
        dims = h->shape;
    }
    tensor_proto(&t, name, ndim, dims, lithe_tensor_data(h), NULL, h->numel);
    lithe_tensor_release(h);
    wb_sub(&o->inits, 5, &t);
    return LITHE_OK;
}

/* The names of m's params W and b (or G and b, E), written on m's first use only. */
static lithe_status params2(lithe__ox *o, lithe_model *m, const char *a, const char *b, const int64_t *da,
                            const int64_t *db, int na, int nb, char *wa, char *wbn) {
    bool oom = false;
    bool again = seen(o, m, &oom);
    if (oom) return lithe__oom(WHAT, 0);
    if (again) {
        init_name(o, m, a, wa);
        if (b) init_name(o, m, b, wbn);
        return LITHE_OK;
    }
    LITHE__TRY(param_init(o, m, a, na, da, wa));
    return b ? param_init(o, m, b, nb, db, wbn) : LITHE_OK;
}

/* Y = X W^T + b: Gemm (transB). */
static lithe_status gemm(lithe__ox *o, lithe_model *m, const char *x, char *y) {
    char W[VN], b[VN];
    LITHE__TRY(params2(o, m, "W", "b", NULL, NULL, 0, 0, W, b));
    wb at = {0};
    at_int(&at, "transB", 1);
    fresh(o, y);
    emit(o, "Gemm", (const char *const[]){x, W, b}, 3, y, &at);
    return LITHE_OK;
}

/* The dense family's activation of z, by registered name. */
static lithe_status dense_act(lithe__ox *o, lithe_model *m, const char *layer, const char *z, char *y) {
    char a[VN], b[VN], c[VN], k[VN];
    if (!strcmp(layer, "Linear.v1")) {
        snprintf(y, VN, "%s", z);
    } else if (!strcmp(layer, "Relu.v1")) {
        op1(o, "Relu", z, y, NULL);
    } else if (!strcmp(layer, "Sigmoid.v1")) {
        op1(o, "Sigmoid", z, y, NULL);
    } else if (!strcmp(layer, "Mish.v1")) { /* z tanh(softplus(z)) */
        op1(o, "Softplus", z, a, NULL);
        op1(o, "Tanh", a, b, NULL);
        op2(o, "Mul", z, b, y);
    } else if (!strcmp(layer, "Swish.v1")) { /* z sigmoid(z) */
        op1(o, "Sigmoid", z, a, NULL);
        op2(o, "Mul", z, a, y);
    } else if (!strcmp(layer, "Gelu.v1")) { /* z (1 + erf(z / sqrt 2)) / 2 */
        scalar_f32(o, 0.70710678118654752f, k);
        op2(o, "Mul", z, k, a);
        op1(o, "Erf", a, b, NULL);
        scalar_f32(o, 1.0f, k);
        op2(o, "Add", b, k, c);
        scalar_f32(o, 0.5f, k);
        op2(o, "Mul", c, k, a);
        op2(o, "Mul", z, a, y);
    } else if (!strcmp(layer, "Dish.v1")) { /* z (z / sqrt(z^2 + 1) + 1) / 2 */
        op2(o, "Mul", z, z, a);
        scalar_f32(o, 1.0f, k);
        op2(o, "Add", a, k, b);
        op1(o, "Sqrt", b, c, NULL);
        op2(o, "Div", z, c, a);
        op2(o, "Add", a, k, b);
        scalar_f32(o, 0.5f, k);
        op2(o, "Mul", b, k, c);
        op2(o, "Mul", z, c, y);
    } else if (!strcmp(layer, "HardSwish.v1")) { /* z clip(0.2 z + 0.5, 0, 1) */
        wb at = {0};
        at_float(&at, "alpha", 0.2f);
        at_float(&at, "beta", 0.5f);
        op1(o, "HardSigmoid", z, a, &at);
        op2(o, "Mul", z, a, y);
    } else if (!strcmp(layer, "HardSwishMobilenet.v1")) { /* z clip(z + 3, 0, 6) / 6: ONNX's HardSwish */
        op1(o, "HardSwish", z, y, NULL);
    } else { /* ClippedLinear and the layers Thinc builds as it: clip(slope z + offset, min, max) */
        double v[4];
        static const char *const names[4] = {"slope", "offset", "min_val", "max_val"};
        for (int i = 0; i < 4; i++) LITHE__TRY(lithe_model_get_attr_float(m, names[i], &v[i]));
        char lo[VN], hi[VN];
        scalar_f32(o, (float)v[0], k);
        op2(o, "Mul", z, k, a);
        scalar_f32(o, (float)v[1], k);
        op2(o, "Add", a, k, b);
        scalar_f32(o, (float)v[2], lo);
        scalar_f32(o, (float)v[3], hi);
        fresh(o, y);
        emit(o, "Clip", (const char *const[]){b, lo, hi}, 3, y, NULL);
    }
    return LITHE_OK;
}

static void softmax_last(lithe__ox *o, const char *x, char *y) {
    wb at = {0};
    at_int(&at, "axis", -1);
    op1(o, "Softmax", x, y, &at);
}

static lithe_status lower(lithe__ox *o, lithe_model *m, const char *x, char *y);

/* Softmax.v1 / v2 and MultiSoftmax: an affine layer and its normalisation at inference. */
static lithe_status lower_softmax(lithe__ox *o, lithe_model *m, const char *layer, const char *x, char *y) {
    char z[VN], k[VN], a[VN];
    LITHE__TRY(gemm(o, m, x, z));
    if (!strcmp(layer, "MultiSoftmax.v1")) {
        bool groups = false;
        lithe_tensor *nOs = NULL;
        if (lithe_model_attr_type(m, "softmax_groups") != LITHE_ATTR_NONE)
            LITHE__TRY(lithe_model_get_attr_bool(m, "softmax_groups", &groups));
        LITHE__TRY(lithe_model_get_attr_tensor(m, "nOs", &nOs));
        if (!groups || nOs->numel < 1 || nOs->numel > 64 || nOs->dtype != LITHE_I64) { /* Thinc 8.1.7: the logits */
            snprintf(y, VN, "%s", z);
            return LITHE_OK;
        }
        size_t n = (size_t)nOs->numel;
        char sp[VN], outs[64][VN], soft[64][VN];
        const char *outp[64], *softp[64];
        ints_init(o, lithe_tensor_data(nOs), nOs->numel, sp);
        wb nd = {0}, at = {0};
        for (size_t i = 0; i < n; i++) fresh(o, outs[i]), outp[i] = outs[i];
        { /* Split has n outputs: its NodeProto by hand */
            char name[32];
            wb_str(&nd, 1, z);
            wb_str(&nd, 1, sp);
            for (size_t j = 0; j < n; j++) wb_str(&nd, 2, outp[j]);
            snprintf(name, sizeof name, "Split_%zu", o->counter++);
            wb_str(&nd, 3, name);
            wb_str(&nd, 4, "Split");
            at_int(&at, "axis", 1);
            wb_put(&nd, at.p, at.n);
            wb_free(&at);
            wb_sub(&o->nodes, 1, &nd);
        }
        for (size_t i = 0; i < n; i++) softmax_last(o, outp[i], soft[i]), softp[i] = soft[i];
        wb cat = {0};
        at_int(&cat, "axis", 1);
        fresh(o, y);
        emit(o, "Concat", softp, n, y, &cat);
        return LITHE_OK;
    }
    bool normalize = true;
    double t = 1.0;
    if (lithe_model_attr_type(m, "softmax_normalize") == LITHE_ATTR_BOOL)
        LITHE__TRY(lithe_model_get_attr_bool(m, "softmax_normalize", &normalize));
    if (lithe_model_attr_type(m, "softmax_temperature") == LITHE_ATTR_FLOAT)
        LITHE__TRY(lithe_model_get_attr_float(m, "softmax_temperature", &t));
    if (!normalize) { /* normalize_outputs=False: predict returns the logits */
        snprintf(y, VN, "%s", z);
        return LITHE_OK;
    }
    const char *in = z;
    if (t != 1.0) {
        scalar_f32(o, (float)t, k);
        op2(o, "Div", z, k, a);
        in = a;
    }
    softmax_last(o, in, y);
    return LITHE_OK;
}

/* Maxout: W (nO, nP, nI) as (nO nP, nI), b (nO, nP) as (nO nP): Gemm, Reshape (B, nO, nP), ReduceMax. */
static lithe_status lower_maxout(lithe__ox *o, lithe_model *m, const char *x, char *y) {
    lithe__param *pw = lithe__model_find_param(m, "W");
    if (!pw || !pw->value || pw->value->ndim != 3)
        return lithe__fail(LITHE_ERR_STATE, "%s: node '%s' (Maxout.v1): param W is unset or not (nO, nP, nI)", WHAT,
                           m->name);
    int64_t nO = pw->value->shape[0], nP = pw->value->shape[1], nI = pw->value->shape[2];
    int64_t dw[2] = {nO * nP, nI}, db[1] = {nO * nP};
    char W[VN], b[VN], z[VN], sh[VN], r[VN];
    LITHE__TRY(params2(o, m, "W", "b", dw, db, 2, 1, W, b));
    wb at = {0}, rm = {0};
    at_int(&at, "transB", 1);
    fresh(o, z);
    emit(o, "Gemm", (const char *const[]){x, W, b}, 3, z, &at);
    ints_init(o, (const int64_t[]){-1, nO, nP}, 3, sh);
    op2(o, "Reshape", z, sh, r);
    at_ints(&rm, "axes", (const int64_t[]){2}, 1);
    at_int(&rm, "keepdims", 0);
    op1(o, "ReduceMax", r, y, &rm);
    return LITHE_OK;
}

/* The combinators: chain, concatenate, add, residual. */
static lithe_status lower_combinator(lithe__ox *o, lithe_model *m, const char *layer, const char *x, char *y) {
    if (!strcmp(layer, "chain.v1")) {
        char cur[VN];
        snprintf(cur, VN, "%s", x);
        for (size_t i = 0; i < m->n_layers; i++) {
            LITHE__TRY(lower(o, m->layers[i], cur, y));
            snprintf(cur, VN, "%s", y);
        }
        snprintf(y, VN, "%s", cur);
        return LITHE_OK;
    }
    if (!strcmp(layer, "residual.v1")) {
        char r[VN];
        LITHE__TRY(lower(o, m->layers[0], x, r));
        op2(o, "Add", x, r, y);
        return LITHE_OK;
    }
    size_t n = m->n_layers;
    char(*outs)[VN] = lithe__calloc(n ? n : 1, sizeof *outs);
    const char **p = lithe__calloc(n ? n : 1, sizeof *p);
    lithe_status s = outs && p ? LITHE_OK : lithe__oom(WHAT, n * VN);
    for (size_t i = 0; s == LITHE_OK && i < n; i++) {
        s = lower(o, m->layers[i], x, outs[i]);
        p[i] = outs[i];
    }
    if (s == LITHE_OK && n == 1) {
        snprintf(y, VN, "%s", outs[0]);
    } else if (s == LITHE_OK && !strcmp(layer, "concatenate.v1")) {
        wb at = {0};
        at_int(&at, "axis", -1);
        fresh(o, y);
        emit(o, "Concat", p, n, y, &at);
    } else if (s == LITHE_OK) { /* add.v1: a running sum */
        char acc[VN];
        snprintf(acc, VN, "%s", outs[0]);
        for (size_t i = 1; i < n; i++) {
            op2(o, "Add", acc, outs[i], y);
            snprintf(acc, VN, "%s", y);
        }
    }
    lithe__free(outs);
    lithe__free(p);
    return s;
}

static bool is_dense(const char *l) {
    static const char *const names[] = {"Linear.v1", "Relu.v1", "Mish.v1", "Swish.v1", "Gelu.v1", "Dish.v1",
                                        "HardSwish.v1", "HardSwishMobilenet.v1", "ClippedLinear.v1",
                                        "HardSigmoid.v1", "HardTanh.v1", "ReluK.v1", "Sigmoid.v1", NULL};
    for (size_t i = 0; names[i]; i++)
        if (!strcmp(l, names[i])) return true;
    return false;
}

/* Lowers node m reading value x; its output's name into y. */
static lithe_status lower(lithe__ox *o, lithe_model *m, const char *x, char *y) {
    const char *l = m->type && m->type->registered_name ? m->type->registered_name : "";
    char z[VN];
    if (!strcmp(l, "chain.v1") || !strcmp(l, "concatenate.v1") || !strcmp(l, "add.v1") || !strcmp(l, "residual.v1")) {
        if (!m->n_layers && strcmp(l, "chain.v1"))
            return lithe__fail(LITHE_ERR_VALUE, "%s: node '%s' (%s) has no layers", WHAT, m->name, l);
        return lower_combinator(o, m, l, x, y);
    }
    if (!strcmp(l, "noop.v1") || !strcmp(l, "Dropout.v1")) { /* inference: the identity */
        snprintf(y, VN, "%s", x);
        return LITHE_OK;
    }
    if (is_dense(l)) {
        LITHE__TRY(gemm(o, m, x, z));
        return dense_act(o, m, l, z, y);
    }
    if (!strcmp(l, "Softmax.v1") || !strcmp(l, "Softmax.v2") || !strcmp(l, "MultiSoftmax.v1"))
        return lower_softmax(o, m, l, x, y);
    if (!strcmp(l, "Maxout.v1")) return lower_maxout(o, m, x, y);
    if (!strcmp(l, "LayerNorm.v1")) {
        char G[VN], b[VN];
        LITHE__TRY(params2(o, m, "G", "b", NULL, NULL, 0, 0, G, b));
        wb at = {0};
        at_int(&at, "axis", -1);
        at_float(&at, "epsilon", 1e-8f); /* Thinc's */
        fresh(o, y);
        emit(o, "LayerNormalization", (const char *const[]){x, G, b}, 3, y, &at);
        return LITHE_OK;
    }
    if (!strcmp(l, "sigmoid_activation.v1") || !strcmp(l, "Logistic.v1")) {
        op1(o, "Sigmoid", x, y, NULL);
        return LITHE_OK;
    }
    if (!strcmp(l, "tanh_activation.v1")) {
        op1(o, "Tanh", x, y, NULL);
        return LITHE_OK;
    }
    if (!strcmp(l, "softmax_activation.v1")) {
        softmax_last(o, x, y);
        return LITHE_OK;
    }
    if (!strcmp(l, "Embed.v1")) { /* ids (B,) -> E[ids] (B, nO) */
        char E[VN];
        LITHE__TRY(params2(o, m, "E", NULL, NULL, NULL, 0, 0, E, NULL));
        wb at = {0};
        at_int(&at, "axis", 0);
        fresh(o, y);
        emit(o, "Gather", (const char *const[]){E, x}, 2, y, &at);
        return LITHE_OK;
    }
    if (!strcmp(l, "ints-getitem") && lithe_model_attr_type(m, "index") == LITHE_ATTR_NONE) { /* Embed's column */
        char c[VN];
        wb t = {0}, at = {0};
        int64_t col = (int64_t)m->cfg[0];
        snprintf(c, VN, "c%zu", o->counter++);
        tensor_proto(&t, c, 0, NULL, NULL, &col, 1);
        wb_sub(&o->inits, 5, &t);
        at_int(&at, "axis", 1);
        fresh(o, y);
        emit(o, "Gather", (const char *const[]){x, c}, 2, y, &at);
        return LITHE_OK;
    }
    if (!strcmp(l, "onnx_graph.v1")) { /* an imported graph inside the tree: its own nodes, inlined */
        bool oom = false, again = seen(o, m, &oom);
        if (oom) return lithe__oom(WHAT, 0);
        size_t k = 0;
        while (k < o->n_walk && o->walk[k] != m) k++;
        return lithe__onnx_inline(o, m, k, !again, x, y);
    }
    return lithe__fail(LITHE_ERR_UNSUPPORTED,
                       "%s: node '%s' (%s) has no standard ONNX equivalent that lithe lowers to (HashEmbed's "
                       "MurmurHash, the ragged / padded / list sequence layers, ...); export a tree of Linear, the "
                       "dense activations, Softmax, Maxout, LayerNorm, Embed, Dropout and chain / concatenate / add / "
                       "residual, or an imported ONNX graph", WHAT, m->name, l[0] ? l : "unknown layer");
}

/* The first node that reads the tree's input, for its type and width. */
static lithe_model *first_leaf(lithe_model *m) {
    for (;;) {
        const char *l = m->type && m->type->registered_name ? m->type->registered_name : "";
        if (!m->n_layers || !strcmp(l, "noop.v1")) return m;
        if (!strcmp(l, "chain.v1")) {
            size_t i = 0; /* past the identities */
            while (i + 1 < m->n_layers && m->layers[i]->type &&
                   (!strcmp(m->layers[i]->type->registered_name, "Dropout.v1") ||
                    !strcmp(m->layers[i]->type->registered_name, "noop.v1")))
                i++;
            m = m->layers[i];
        } else {
            m = m->layers[0];
        }
    }
}

/* ValueInfoProto: name, a tensor type of elem type, rank dims: "batch", then width (0: "<sym>");
 */
static void value_info(wb *list, unsigned field, const char *name, int elem, int rank, int64_t width,
                       const char *sym) {
    wb vi = {0}, tp = {0}, tt = {0}, sh = {0};
    for (int d = 0; d < rank; d++) {
        wb dim = {0};
        if (d == 0) wb_str(&dim, 2, "batch");
        else if (width > 0) wb_int(&dim, 1, width);
        else wb_str(&dim, 2, sym);
        wb_sub(&sh, 1, &dim);
    }
    wb_int(&tt, 1, elem);
    wb_sub(&tt, 2, &sh);
    wb_sub(&tp, 1, &tt);
    wb_str(&vi, 1, name);
    wb_sub(&vi, 2, &tp);
    wb_sub(list, field, &vi);
}

lithe_status lithe__onnx_lower(lithe__ox *o, lithe_model *m) {
    size_t n = 0;
    LITHE__TRY(lithe_model_walk(m, NULL, 0, &n));
    o->walk = lithe__calloc(n ? n : 1, sizeof *o->walk);
    if (!o->walk) return lithe__oom(WHAT, n * sizeof *o->walk);
    LITHE__TRY(lithe_model_walk(m, o->walk, n, &o->n_walk));
    lithe_model *first = first_leaf(m);
    const char *fl = first->type && first->type->registered_name ? first->type->registered_name : "";
    bool ids = !strcmp(fl, "Embed.v1") || !strcmp(fl, "ints-getitem");
    int rank = !strcmp(fl, "Embed.v1") ? 1 : 2;
    int64_t width = ids ? 0 : lithe__dim_value(first, "nI");
    char y[VN];
    LITHE__TRY(lower(o, m, "X", y));
    emit(o, "Identity", (const char *const[]){y}, 1, "Y", NULL);
    if (o->in_type.n) { /* the input of an inlined graph: its own type */
        wb vi = {0};
        wb_str(&vi, 1, "X");
        wb_bytes(&vi, 2, o->in_type.p, o->in_type.n);
        wb_sub(&o->inputs, 11, &vi);
    } else {
        value_info(&o->inputs, 11, "X", ids ? LITHE__ONNX_INT64 : LITHE__ONNX_FLOAT, rank, width, "nI");
    }
    if (o->out_type.n && !strcmp(y, o->out_name)) { /* an inlined graph's output is the tree's: its type */
        wb vi = {0};
        wb_str(&vi, 1, "Y");
        wb_bytes(&vi, 2, o->out_type.p, o->out_type.n);
        wb_sub(&o->outputs, 12, &vi);
    } else {
        value_info(&o->outputs, 12, "Y", LITHE__ONNX_FLOAT, 2, 0, "nO");
    }
    o->int_input = ids;
    o->in_rank = rank;
    return LITHE_OK;
}
