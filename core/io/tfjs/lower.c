/* The TF.js importer's lowering helpers: ONNX nodes into fresh values, weights by name, config values and
 * the activations. */
#include "tfjs.h"

/* ---- lowering the Keras topology ---- */

lithe_status lfail(const lower *L, lithe_status s, const char *fmt, ...) {
    char why[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    return lithe__fail(s, "%s: layer '%s' (%s): %s", WHAT, L->layer ? L->layer : "", L->cls ? L->cls : "", why);
}

/* A fresh value name "<layer>/<what>:<n>". */
void fresh(lower *L, const char *what, char *buf, size_t cap) {
    snprintf(buf, cap, "%s/%s:%zu", L->layer ? L->layer : "", what, ++L->counter);
}

/* A node: op over ins, one output; attrs (NULL or a buffer of AttributeProto fields) consumed. */
void node(lower *L, const char *op, const char *const *ins, size_t nin, const char *out, wb *attrs) {
    wb n = {0};
    for (size_t i = 0; i < nin; i++) wb_str(&n, 1, ins[i]);
    wb_str(&n, 2, out);
    wb_str(&n, 3, out);
    wb_str(&n, 4, op);
    if (attrs) {
        if (attrs->oom) n.oom = true;
        wb_put(&n, attrs->p, attrs->n);
        wb_free(attrs);
    }
    wb_sub(&L->nodes, 1, &n);
}

/* A one-input node into a fresh value, written to out. */
void unary(lower *L, const char *op, const char *in, char *out, size_t cap, wb *attrs) {
    char o[NAME_MAX_LEN + 48];
    fresh(L, op, o, sizeof o);
    node(L, op, &in, 1, o, attrs);
    snprintf(out, cap, "%s", o);
}
void binary(lower *L, const char *op, const char *a, const char *b, char *out, size_t cap) {
    char o[NAME_MAX_LEN + 48];
    const char *ins[2] = {a, b};
    fresh(L, op, o, sizeof o);
    node(L, op, ins, 2, o, NULL);
    snprintf(out, cap, "%s", o);
}

/* A Constant node holding a float (ndim 0: a scalar) or int64 tensor; its name into out. */
void constant(lower *L, int ndim, const int64_t *dims, const float *f, const int64_t *iv, int64_t numel, char *out,
              size_t cap) {
    wb t = {0}, a = {0}, attrs = {0};
    tensor_proto(&t, NULL, ndim, dims, f, iv, numel);
    wb_str(&a, 1, "value");
    wb_sub(&a, 5, &t);
    wb_int(&a, 20, 4);
    wb_sub(&attrs, 5, &a);
    fresh(L, "const", out, cap);
    node(L, "Constant", NULL, 0, out, &attrs);
}
void scalar(lower *L, float v, char *out, size_t cap) { constant(L, 0, NULL, &v, NULL, 1, out, cap); }

void transpose(lower *L, const char *in, const int64_t *perm, int n, char *out, size_t cap) {
    wb attrs = {0};
    at_ints(&attrs, "perm", perm, (size_t)n);
    unary(L, "Transpose", in, out, cap, &attrs);
}

const char *as_nchw(lower *L, ktensor *t) {
    if (!t->nchw[0]) transpose(L, t->nhwc, (const int64_t[]){0, 3, 1, 2}, 4, t->nchw, sizeof t->nchw);
    return t->nchw;
}
const char *as_nhwc(lower *L, ktensor *t) {
    if (!t->nhwc[0]) transpose(L, t->nchw, (const int64_t[]){0, 2, 3, 1}, 4, t->nhwc, sizeof t->nhwc);
    return t->nhwc;
}

/* The weight "<layer>/<suffix>" (or ".../<layer>/<suffix>" in a nested scope), emitted as an
 * initializer on first use; NULL when the manifest lacks it. */
static weight *find_weight(lower *L, const char *suffix) {
    char want[2 * NAME_MAX_LEN + 8];
    snprintf(want, sizeof want, "%s/%s", L->layer, suffix);
    size_t wl = strlen(want);
    weight *hit = NULL;
    for (size_t i = 0; i < L->n_w && !hit; i++)
        if (!strcmp(L->w[i].name, want)) hit = &L->w[i];
    for (size_t i = 0; i < L->n_w && !hit; i++) {
        size_t nl = strlen(L->w[i].name);
        if (nl > wl && L->w[i].name[nl - wl - 1] == '/' && !strcmp(L->w[i].name + nl - wl, want)) hit = &L->w[i];
    }
    if (hit && L->layer_frozen) wb_put(&L->frozen, hit->name, strlen(hit->name) + 1);
    if (hit && !hit->emitted) {
        wb t = {0};
        tensor_proto(&t, hit->name, hit->ndim, hit->shape, hit->data, NULL, hit->numel);
        wb_sub(&L->inits, 5, &t);
        hit->emitted = true;
    }
    return hit;
}

static void shape_str(char *buf, size_t cap, int n, const int64_t *s) {
    size_t l = (size_t)snprintf(buf, cap, "(");
    for (int d = 0; d < n && l < cap; d++) {
        if (s[d] < 0) l += (size_t)snprintf(buf + l, cap - l, "%s?", d ? ", " : "");
        else l += (size_t)snprintf(buf + l, cap - l, "%s%lld", d ? ", " : "", (long long)s[d]);
    }
    if (l < cap) snprintf(buf + l, cap - l, ")");
}

/* The weight named, required, with the shape given (-1: any extent). */
lithe_status need_weight(lower *L, const char *suffix, int ndim, const int64_t *shape, weight **out) {
    weight *w = find_weight(L, suffix);
    *out = w;
    char want[160], got[160];
    shape_str(want, sizeof want, ndim, shape);
    if (!w) return lfail(L, LITHE_ERR_FORMAT, "the manifest has no weight '%s/%s' %s", L->layer, suffix, want);
    bool ok = w->ndim == ndim;
    for (int d = 0; ok && d < ndim; d++) ok = shape[d] < 0 || w->shape[d] == shape[d];
    if (!ok) {
        shape_str(got, sizeof got, w->ndim, w->shape);
        return lfail(L, LITHE_ERR_FORMAT, "weight '%s' has shape %s; the layer needs %s", w->name, got, want);
    }
    return LITHE_OK;
}

/* ---- config values ---- */

lithe_status cfg_int(lower *L, const js_val *cfg, const char *key, int64_t def, int64_t lo, int64_t hi, int64_t *out) {
    const js_val *v = js_get(cfg, key);
    if (!v || v->type == JS_NULL) {
        *out = def;
        return LITHE_OK;
    }
    if (v->type != JS_NUM || !v->is_int || v->i < lo || v->i > hi)
        return lfail(L, LITHE_ERR_FORMAT, "config '%s' must be an integer in %lld .. %lld", key, (long long)lo, (long long)hi);
    *out = v->i;
    return LITHE_OK;
}
/* A pair (kernel_size, strides, dilation_rate, pool_size): an integer or a list of two. */
lithe_status cfg_pair(lower *L, const js_val *cfg, const char *key, const int64_t *def, int64_t *out) {
    const js_val *v = js_get(cfg, key);
    if (!v || v->type == JS_NULL) {
        if (!def) return lfail(L, LITHE_ERR_FORMAT, "config '%s' is missing", key);
        out[0] = L->one_d ? 1 : def[0];
        out[1] = def[1];
        return LITHE_OK;
    }
    if (L->one_d) { /* Conv1D / pooling 1-D: an integer or a list of one, the height is 1 */
        const js_val *x = v->type == JS_ARR ? (v->len == 1 ? &v->items[0] : NULL) : v;
        if (!x || x->type != JS_NUM || !x->is_int || x->i < 1 || x->i > (1 << 16))
            return lfail(L, LITHE_ERR_FORMAT, "config '%s' must be an integer or a list of one, 1 .. 65536", key);
        out[0] = 1;
        out[1] = x->i;
        return LITHE_OK;
    }
    for (int i = 0; i < 2; i++) {
        const js_val *x = v->type == JS_ARR ? (v->len == 2 ? &v->items[i] : NULL) : v;
        if (!x || x->type != JS_NUM || !x->is_int || x->i < 1 || x->i > (1 << 16))
            return lfail(L, LITHE_ERR_FORMAT, "config '%s' must be an integer or a list of two, each 1 .. 65536", key);
        out[i] = x->i;
    }
    return LITHE_OK;
}
lithe_status cfg_bool(lower *L, const js_val *cfg, const char *key, bool def, bool *out) {
    const js_val *v = js_get(cfg, key);
    if (!v || v->type == JS_NULL) *out = def;
    else if (v->type == JS_BOOL) *out = v->b;
    else return lfail(L, LITHE_ERR_FORMAT, "config '%s' must be true or false", key);
    return LITHE_OK;
}
lithe_status cfg_float(lower *L, const js_val *cfg, const char *key, double def, double *out) {
    const js_val *v = js_get(cfg, key);
    if (!v || v->type == JS_NULL) *out = def;
    else if (!num_of(v, out) || fabs(*out) > 1e30) return lfail(L, LITHE_ERR_FORMAT, "config '%s' must be a finite number", key);
    return LITHE_OK;
}
const char *cfg_str(const js_val *cfg, const char *key, const char *def) {
    const js_val *v = js_get(cfg, key);
    return v && v->type == JS_STR ? v->str : def;
}
lithe_status channels_last(lower *L, const js_val *cfg) {
    const char *df = cfg_str(cfg, "data_format", "channels_last");
    if (strcmp(df, "channels_last"))
        return lfail(L, LITHE_ERR_UNSUPPORTED, "data_format '%s' (lithe reads channels_last, TF.js's default)", df);
    return LITHE_OK;
}

/* ---- activations ---- */

static const char *const activation_names[] = {"linear", "relu", "relu6", "sigmoid", "hard_sigmoid", "hardSigmoid", "tanh",
                                               "softmax", "log_softmax", "logSoftmax", "elu", "selu", "softplus",
                                               "softsign", "swish", "silu", "mish", "gelu", "gelu_new", "geluNew", NULL};

bool activation_known(const char *a) {
    for (size_t i = 0; activation_names[i]; i++)
        if (!strcmp(a, activation_names[i])) return true;
    return false;
}

/* exp(min(x, 0)) - 1, the negative half of elu: written with Relu so that neither side overflows. */
static void expm1_neg(lower *L, const char *x, char *out, size_t cap) {
    char a[NAME_MAX_LEN + 48], one[NAME_MAX_LEN + 48];
    unary(L, "Neg", x, a, sizeof a, NULL);
    unary(L, "Relu", a, a, sizeof a, NULL);
    unary(L, "Neg", a, a, sizeof a, NULL);
    unary(L, "Exp", a, a, sizeof a, NULL);
    scalar(L, 1.0f, one, sizeof one);
    binary(L, "Sub", a, one, out, cap);
}
/* log(1 + exp(x)) = relu(x) + log(1 + exp(-|x|)) */
static void softplus(lower *L, const char *x, char *out, size_t cap) {
    char a[NAME_MAX_LEN + 48], r[NAME_MAX_LEN + 48], one[NAME_MAX_LEN + 48];
    unary(L, "Abs", x, a, sizeof a, NULL);
    unary(L, "Neg", a, a, sizeof a, NULL);
    unary(L, "Exp", a, a, sizeof a, NULL);
    scalar(L, 1.0f, one, sizeof one);
    binary(L, "Add", a, one, a, sizeof a);
    unary(L, "Log", a, a, sizeof a, NULL);
    unary(L, "Relu", x, r, sizeof r, NULL);
    binary(L, "Add", r, a, out, cap);
}

/* Applies activation `a` to t in place (its value names change). */
lithe_status activate(lower *L, ktensor *t, const char *a) {
    if (!a || !strcmp(a, "linear")) return LITHE_OK;
    bool last_axis = !strcmp(a, "softmax") || !strcmp(a, "log_softmax") || !strcmp(a, "logSoftmax");
    const char *x = last_axis || !t->nchw[0] ? as_nhwc(L, t) : t->nchw;
    bool in_nchw = x == t->nchw;
    char y[NAME_MAX_LEN + 48], c0[NAME_MAX_LEN + 48], c1[NAME_MAX_LEN + 48], tmp[NAME_MAX_LEN + 48];
    if (!strcmp(a, "relu")) unary(L, "Relu", x, y, sizeof y, NULL);
    else if (!strcmp(a, "sigmoid")) unary(L, "Sigmoid", x, y, sizeof y, NULL);
    else if (!strcmp(a, "tanh")) unary(L, "Tanh", x, y, sizeof y, NULL);
    else if (!strcmp(a, "gelu")) unary(L, "Gelu", x, y, sizeof y, NULL);
    else if (last_axis) {
        if (t->rank < 2) return lfail(L, LITHE_ERR_UNSUPPORTED, "%s over a %d-D tensor", a, t->rank);
        wb attrs = {0};
        at_int(&attrs, "axis", -1);
        unary(L, !strcmp(a, "softmax") ? "Softmax" : "LogSoftmax", x, y, sizeof y, &attrs);
    } else if (!strcmp(a, "relu6") || !strcmp(a, "hard_sigmoid") || !strcmp(a, "hardSigmoid")) {
        const char *src = x;
        if (strcmp(a, "relu6")) { /* TF.js: clip(0.2 x + 0.5, 0, 1) */
            scalar(L, 0.2f, c0, sizeof c0);
            binary(L, "Mul", x, c0, tmp, sizeof tmp);
            scalar(L, 0.5f, c1, sizeof c1);
            binary(L, "Add", tmp, c1, tmp, sizeof tmp);
            src = tmp;
        }
        scalar(L, 0.0f, c0, sizeof c0);
        scalar(L, strcmp(a, "relu6") ? 1.0f : 6.0f, c1, sizeof c1);
        const char *ins[3] = {src, c0, c1};
        fresh(L, "Clip", y, sizeof y);
        node(L, "Clip", ins, 3, y, NULL);
    } else if (!strcmp(a, "elu") || !strcmp(a, "selu")) {
        bool selu = !strcmp(a, "selu");
        const float alpha = selu ? 1.6732632423543772f : 1.0f, scale = selu ? 1.0507009873554805f : 1.0f;
        char r[NAME_MAX_LEN + 48], e[NAME_MAX_LEN + 48];
        unary(L, "Relu", x, r, sizeof r, NULL);
        expm1_neg(L, x, e, sizeof e);
        if (alpha != 1.0f) {
            scalar(L, alpha, c0, sizeof c0);
            binary(L, "Mul", e, c0, e, sizeof e);
        }
        binary(L, "Add", r, e, y, sizeof y);
        if (scale != 1.0f) {
            scalar(L, scale, c1, sizeof c1);
            binary(L, "Mul", y, c1, y, sizeof y);
        }
    } else if (!strcmp(a, "softplus")) {
        softplus(L, x, y, sizeof y);
    } else if (!strcmp(a, "softsign")) { /* x / (1 + |x|) */
        unary(L, "Abs", x, tmp, sizeof tmp, NULL);
        scalar(L, 1.0f, c0, sizeof c0);
        binary(L, "Add", tmp, c0, tmp, sizeof tmp);
        binary(L, "Div", x, tmp, y, sizeof y);
    } else if (!strcmp(a, "swish") || !strcmp(a, "silu")) {
        unary(L, "Sigmoid", x, tmp, sizeof tmp, NULL);
        binary(L, "Mul", x, tmp, y, sizeof y);
    } else if (!strcmp(a, "mish")) { /* x tanh(softplus(x)) */
        softplus(L, x, tmp, sizeof tmp);
        unary(L, "Tanh", tmp, tmp, sizeof tmp, NULL);
        binary(L, "Mul", x, tmp, y, sizeof y);
    } else if (!strcmp(a, "gelu_new") || !strcmp(a, "geluNew")) { /* 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) */
        char x3[NAME_MAX_LEN + 48];
        binary(L, "Mul", x, x, x3, sizeof x3);
        binary(L, "Mul", x3, x, x3, sizeof x3);
        scalar(L, 0.044715f, c0, sizeof c0);
        binary(L, "Mul", x3, c0, x3, sizeof x3);
        binary(L, "Add", x, x3, tmp, sizeof tmp);
        scalar(L, (float)sqrt(2.0 / 3.14159265358979323846), c1, sizeof c1);
        binary(L, "Mul", tmp, c1, tmp, sizeof tmp);
        unary(L, "Tanh", tmp, tmp, sizeof tmp, NULL);
        scalar(L, 1.0f, c0, sizeof c0);
        binary(L, "Add", tmp, c0, tmp, sizeof tmp);
        binary(L, "Mul", x, tmp, tmp, sizeof tmp);
        scalar(L, 0.5f, c1, sizeof c1);
        binary(L, "Mul", tmp, c1, y, sizeof y);
    } else {
        return lfail(L, LITHE_ERR_UNSUPPORTED, "activation '%s'", a);
    }
    if (in_nchw) {
        snprintf(t->nchw, sizeof t->nchw, "%s", y);
        t->nhwc[0] = '\0';
    } else {
        snprintf(t->nhwc, sizeof t->nhwc, "%s", y);
        t->nchw[0] = '\0';
    }
    return LITHE_OK;
}

lithe_status activation_of(lower *L, const js_val *cfg, const char **out) {
    const js_val *v = js_get(cfg, "activation");
    *out = NULL;
    if (!v || v->type == JS_NULL) return LITHE_OK;
    if (v->type != JS_STR) return lfail(L, LITHE_ERR_UNSUPPORTED, "an activation that is not a name");
    *out = v->str;
    return LITHE_OK;
}
