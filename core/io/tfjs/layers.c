/* The TF.js importer's layers: one lowering function per Keras layer class, run from a table. */
#include "tfjs.h"

/* ---- the layers ---- */

const char *const identity_layers[] = {"Dropout", "SpatialDropout1D", "SpatialDropout2D", "GaussianNoise",
                                              "GaussianDropout", "AlphaDropout", NULL};
const char *const layer_names[] = {"InputLayer", "Dense", "Conv2D", "DepthwiseConv2D", "MaxPooling2D",
                                          "AveragePooling2D", "GlobalAveragePooling2D", "GlobalMaxPooling2D",
                                          "BatchNormalization", "Flatten", "Activation", "ReLU", "LeakyReLU", "ELU",
                                          "Softmax", "Reshape", "ZeroPadding2D", "Add", "Subtract", "Multiply",
                                          "Average", "Concatenate", "Embedding", "GlobalAveragePooling1D",
                                          "LayerNormalization", "SeparableConv2D", "UpSampling2D", "Conv1D",
                                          "MaxPooling1D", "AveragePooling1D", "GlobalMaxPooling1D", NULL};

bool in_list(const char *const *l, const char *s) {
    for (size_t i = 0; l[i]; i++)
        if (!strcmp(l[i], s)) return true;
    return false;
}

/* Output extent of a window along one axis (Keras's conv_output_length). */
static lithe_status window_out(lower *L, int64_t in, int64_t k, int64_t stride, int64_t dil, bool same, int64_t *out) {
    if (in < 0) {
        *out = -1;
        return LITHE_OK;
    }
    if (same) {
        *out = (in + stride - 1) / stride;
        return LITHE_OK;
    }
    int64_t span = dil * (k - 1) + 1;
    if (in < span) return lfail(L, LITHE_ERR_SHAPE, "the %lld-wide window does not fit the extent %lld", (long long)span, (long long)in);
    *out = (in - span) / stride + 1;
    return LITHE_OK;
}

static lithe_status padding_of(lower *L, const js_val *cfg, bool *same) {
    const char *p = cfg_str(cfg, "padding", "valid");
    if (!strcmp(p, "same")) *same = true;
    else if (!strcmp(p, "valid")) *same = false;
    else return lfail(L, LITHE_ERR_UNSUPPORTED, "padding '%s' (lithe reads valid and same)", p);
    return LITHE_OK;
}

static lithe_status need_rank(lower *L, const ktensor *t, int rank) {
    if (t->rank != rank)
        return lfail(L, LITHE_ERR_SHAPE, "takes a %d-D input (batch first), got %d-D", rank, t->rank);
    return LITHE_OK;
}

/* BatchNormalization's and LayerNormalization's config: axis (an int, or the [axis] Keras writes as
 * often), which must be x's last ("lithe normalizes the last<last> axis" otherwise), center, scale
 * and a positive epsilon. */
static lithe_status norm_config(lower *L, const js_val *cfg, const ktensor *x, const char *last, bool *center,
                                bool *scale, double *eps) {
    int64_t axis = -1;
    const js_val *av = js_get(cfg, "axis");
    if (av && av->type == JS_ARR && av->len == 1 && av->items[0].type == JS_NUM && av->items[0].is_int &&
        av->items[0].i >= -LITHE_MAX_DIMS && av->items[0].i <= LITHE_MAX_DIMS)
        axis = av->items[0].i;
    else LITHE__TRY(cfg_int(L, cfg, "axis", -1, -LITHE_MAX_DIMS, LITHE_MAX_DIMS, &axis));
    if (axis < 0) axis += x->rank;
    if (x->rank < 2 || axis != x->rank - 1)
        return lfail(L, LITHE_ERR_UNSUPPORTED, "axis %lld of a %d-D input (lithe normalizes the last%s axis)",
                     (long long)axis, x->rank, last);
    LITHE__TRY(cfg_bool(L, cfg, "center", true, center));
    LITHE__TRY(cfg_bool(L, cfg, "scale", true, scale));
    LITHE__TRY(cfg_float(L, cfg, "epsilon", 1e-3, eps));
    if (!(*eps > 0)) return lfail(L, LITHE_ERR_FORMAT, "epsilon %g must be positive", *eps);
    return LITHE_OK;
}

/* A normalization layer without gamma (scale: false) or beta (center: false): constants of C ones
 * into g1 and of C zeros into b0 (cap bytes each) for the ones missing. */
static lithe_status default_affine(lower *L, int64_t C, const weight *gamma, const weight *beta, char *g1, char *b0,
                                   size_t cap) {
    if (gamma && beta) return LITHE_OK;
    if (C < 0) return lfail(L, LITHE_ERR_SHAPE, "without gamma or beta the feature count must be known");
    float *v = lithe__malloc((size_t)(C ? C : 1) * sizeof(float));
    if (!v) return lithe__oom(WHAT, (size_t)C * sizeof(float));
    for (int64_t i = 0; i < C; i++) v[i] = 1.0f;
    if (!gamma) constant(L, 1, &C, v, NULL, C, g1, cap);
    for (int64_t i = 0; i < C; i++) v[i] = 0.0f;
    if (!beta) constant(L, 1, &C, v, NULL, C, b0, cap);
    lithe__free(v);
    return LITHE_OK;
}

/* One layer class's lowering (a function of layer_table): ins (n_in tensors) -> *o. */
#define LAYER(name) \
    static lithe_status name(lower *L, const char *cls, const js_val *cfg, ktensor **ins, size_t n_in, ktensor *o)

/* identity at inference */
LAYER(layer_identity) {
    ktensor *x = ins[0];
    memcpy(o->nhwc, x->nhwc, sizeof o->nhwc);
    memcpy(o->nchw, x->nchw, sizeof o->nchw);
    return LITHE_OK;
}

LAYER(layer_dense) {
    ktensor *x = ins[0];
    char y[NAME_MAX_LEN + 48];
    int64_t units = -1, k = x->shape[x->rank - 1];
    bool bias = true;
    const char *act;
    LITHE__TRY(cfg_int(L, cfg, "units", -1, 1, (int64_t)1 << 30, &units));
    if (units < 0) return lfail(L, LITHE_ERR_FORMAT, "config 'units' is missing");
    LITHE__TRY(cfg_bool(L, cfg, "use_bias", true, &bias));
    LITHE__TRY(activation_of(L, cfg, &act));
    if (x->rank < 2) return lfail(L, LITHE_ERR_SHAPE, "takes a 2-D or higher input, got %d-D", x->rank);
    weight *W, *b = NULL;
    LITHE__TRY(need_weight(L, "kernel", 2, (int64_t[]){k, units}, &W));
    if (bias) LITHE__TRY(need_weight(L, "bias", 1, (int64_t[]){units}, &b));
    binary(L, "MatMul", as_nhwc(L, x), W->name, y, sizeof y);
    if (b) binary(L, "Add", y, b->name, y, sizeof y);
    snprintf(o->nhwc, sizeof o->nhwc, "%s", y);
    o->shape[o->rank - 1] = units;
    return activate(L, o, act);
}

LAYER(layer_conv2d) {
    ktensor *x = ins[0];
    char y[NAME_MAX_LEN + 48];
    bool separable = !strcmp(cls, "SeparableConv2D"), depthwise = separable || !strcmp(cls, "DepthwiseConv2D");
    bool bias = true, same = false;
    int64_t ks[2], st[2], dil[2], filters = -1, mult = 1, groups = 1, pw_filters = -1;
    weight *PW = NULL; /* SeparableConv2D's 1x1 pointwise kernel */
    const char *act;
    LITHE__TRY(need_rank(L, x, 4));
    LITHE__TRY(channels_last(L, cfg));
    LITHE__TRY(cfg_pair(L, cfg, "kernel_size", NULL, ks));
    LITHE__TRY(cfg_pair(L, cfg, "strides", (const int64_t[]){1, 1}, st));
    LITHE__TRY(cfg_pair(L, cfg, "dilation_rate", (const int64_t[]){1, 1}, dil));
    LITHE__TRY(padding_of(L, cfg, &same));
    LITHE__TRY(cfg_bool(L, cfg, "use_bias", true, &bias));
    LITHE__TRY(activation_of(L, cfg, &act));
    LITHE__TRY(cfg_int(L, cfg, "groups", 1, 1, 1, &groups)); /* Keras's grouped Conv2D: not read */
    int64_t C = x->shape[3];
    weight *W, *b = NULL;
    char wk[NAME_MAX_LEN + 48];
    if (depthwise) {
        /* TF.js leaves depth_multiplier out of a SeparableConv2D's config: the kernel says it */
        LITHE__TRY(cfg_int(L, cfg, "depth_multiplier", -1, 1, 1 << 16, &mult));
        if (C < 0) return lfail(L, LITHE_ERR_SHAPE, "the input's channel count must be known");
        LITHE__TRY(need_weight(L, "depthwise_kernel", 4, (int64_t[]){ks[0], ks[1], C, mult}, &W));
        mult = W->shape[3];
        if (mult < 1 || mult > (1 << 16)) return lfail(L, LITHE_ERR_FORMAT, "depth multiplier %lld", (long long)mult);
        filters = C * mult;
        if (separable) LITHE__TRY(cfg_int(L, cfg, "filters", -1, 1, (int64_t)1 << 30, &pw_filters));
        if (separable && pw_filters < 0) return lfail(L, LITHE_ERR_FORMAT, "config 'filters' is missing");
        if (separable) LITHE__TRY(need_weight(L, "pointwise_kernel", 4, (int64_t[]){1, 1, filters, pw_filters}, &PW));
        if (bias) LITHE__TRY(need_weight(L, "bias", 1, (int64_t[]){separable ? pw_filters : filters}, &b));
        /* (KH, KW, C, mult) -> (KH, KW, 1, C mult): output channel c mult + m, as TF orders them */
        int64_t shp[4] = {ks[0], ks[1], 1, filters};
        char sh[NAME_MAX_LEN + 48];
        constant(L, 1, (const int64_t[]){4}, NULL, shp, 4, sh, sizeof sh);
        binary(L, "Reshape", W->name, sh, wk, sizeof wk);
    } else {
        LITHE__TRY(cfg_int(L, cfg, "filters", -1, 1, (int64_t)1 << 30, &filters));
        if (filters < 0) return lfail(L, LITHE_ERR_FORMAT, "config 'filters' is missing");
        if (L->one_d) { /* a Conv1D kernel (K, C, F) is the (1, K, C, F) of its 2-D twin */
            LITHE__TRY(need_weight(L, "kernel", 3, (int64_t[]){ks[1], C, filters}, &W));
            char sh[NAME_MAX_LEN + 48];
            constant(L, 1, (const int64_t[]){4}, NULL, (const int64_t[]){1, ks[1], W->shape[1], filters}, 4, sh, sizeof sh);
            binary(L, "Reshape", W->name, sh, wk, sizeof wk);
        } else {
            LITHE__TRY(need_weight(L, "kernel", 4, (int64_t[]){ks[0], ks[1], C, filters}, &W));
            snprintf(wk, sizeof wk, "%s", W->name);
        }
        if (bias) LITHE__TRY(need_weight(L, "bias", 1, (int64_t[]){filters}, &b));
    }
    transpose(L, wk, (const int64_t[]){3, 2, 0, 1}, 4, wk, sizeof wk); /* HWIO -> OIHW */
    wb attrs = {0};
    at_ints(&attrs, "kernel_shape", ks, 2);
    at_ints(&attrs, "strides", st, 2);
    at_ints(&attrs, "dilations", dil, 2);
    if (depthwise) at_int(&attrs, "group", C);
    if (same) at_str(&attrs, "auto_pad", "SAME_UPPER");
    const char *cin[3] = {as_nchw(L, x), wk, b && !PW ? b->name : ""};
    fresh(L, "Conv", y, sizeof y);
    node(L, "Conv", cin, b && !PW ? 3 : 2, y, &attrs);
    if (PW) { /* then the pointwise 1x1 convolution, with the bias */
        transpose(L, PW->name, (const int64_t[]){3, 2, 0, 1}, 4, wk, sizeof wk);
        wb pa = {0};
        at_ints(&pa, "kernel_shape", (const int64_t[]){1, 1}, 2);
        const char *pin[3] = {y, wk, b ? b->name : ""};
        char z[NAME_MAX_LEN + 48];
        fresh(L, "Conv", z, sizeof z);
        node(L, "Conv", pin, b ? 3 : 2, z, &pa);
        snprintf(y, sizeof y, "%s", z);
        filters = pw_filters;
    }
    snprintf(o->nchw, sizeof o->nchw, "%s", y);
    LITHE__TRY(window_out(L, x->shape[1], ks[0], st[0], dil[0], same, &o->shape[1]));
    LITHE__TRY(window_out(L, x->shape[2], ks[1], st[1], dil[1], same, &o->shape[2]));
    o->shape[3] = filters;
    return activate(L, o, act);
}

LAYER(layer_pooling2d) {
    ktensor *x = ins[0];
    int64_t ps[2], st[2];
    bool same = false;
    LITHE__TRY(need_rank(L, x, 4));
    LITHE__TRY(channels_last(L, cfg));
    LITHE__TRY(cfg_pair(L, cfg, "pool_size", (const int64_t[]){2, 2}, ps));
    LITHE__TRY(cfg_pair(L, cfg, "strides", ps, st));
    LITHE__TRY(padding_of(L, cfg, &same));
    wb attrs = {0};
    at_ints(&attrs, "kernel_shape", ps, 2);
    at_ints(&attrs, "strides", st, 2);
    if (same) at_str(&attrs, "auto_pad", "SAME_UPPER"); /* TF leaves the padding out of averages, as count_include_pad 0 */
    unary(L, cls[0] == 'M' ? "MaxPool" : "AveragePool", as_nchw(L, x), o->nchw, sizeof o->nchw, &attrs);
    LITHE__TRY(window_out(L, x->shape[1], ps[0], st[0], 1, same, &o->shape[1]));
    LITHE__TRY(window_out(L, x->shape[2], ps[1], st[1], 1, same, &o->shape[2]));
    return LITHE_OK;
}

LAYER(layer_global_pooling2d) {
    ktensor *x = ins[0];
    char y[NAME_MAX_LEN + 48];
    bool keep = false;
    LITHE__TRY(need_rank(L, x, 4));
    LITHE__TRY(channels_last(L, cfg));
    LITHE__TRY(cfg_bool(L, cfg, "keepdims", false, &keep));
    unary(L, cls[6] == 'A' ? "GlobalAveragePool" : "GlobalMaxPool", as_nchw(L, x), y, sizeof y, NULL);
    o->shape[1] = o->shape[2] = 1;
    if (keep) {
        snprintf(o->nchw, sizeof o->nchw, "%s", y);
        return LITHE_OK;
    }
    wb attrs = {0};
    at_int(&attrs, "axis", 1);
    unary(L, "Flatten", y, o->nhwc, sizeof o->nhwc, &attrs);
    o->rank = 2;
    o->shape[1] = x->shape[3];
    return LITHE_OK;
}

LAYER(layer_batchnorm) {
    ktensor *x = ins[0];
    char y[NAME_MAX_LEN + 48];
    bool center, scale;
    double eps;
    LITHE__TRY(norm_config(L, cfg, x, ", channels,", &center, &scale, &eps));
    int64_t C = x->shape[x->rank - 1];
    weight *gamma = NULL, *beta = NULL, *mean, *var;
    if (scale) LITHE__TRY(need_weight(L, "gamma", 1, (int64_t[]){C}, &gamma));
    if (center) LITHE__TRY(need_weight(L, "beta", 1, (int64_t[]){C}, &beta));
    LITHE__TRY(need_weight(L, "moving_mean", 1, (int64_t[]){C}, &mean));
    LITHE__TRY(need_weight(L, "moving_variance", 1, (int64_t[]){mean->shape[0]}, &var));
    if ((gamma && gamma->shape[0] != mean->shape[0]) || (beta && beta->shape[0] != mean->shape[0]))
        return lfail(L, LITHE_ERR_FORMAT, "gamma, beta and the moving statistics differ in length");
    C = mean->shape[0];
    char g1[NAME_MAX_LEN + 48] = "", b0[NAME_MAX_LEN + 48] = "";
    LITHE__TRY(default_affine(L, C, gamma, beta, g1, b0, sizeof g1));
    const char *src;
    int64_t perm[LITHE_MAX_DIMS];
    if (x->rank == 4) src = as_nchw(L, x);
    else if (x->rank == 2) src = x->nhwc;
    else { /* (N, ..., C) -> (N, C, ...) and back */
        perm[0] = 0;
        perm[1] = x->rank - 1;
        for (int d = 2; d < x->rank; d++) perm[d] = d - 1;
        char t[NAME_MAX_LEN + 48];
        transpose(L, x->nhwc, perm, x->rank, t, sizeof t);
        snprintf(y, sizeof y, "%s", t);
        src = y;
    }
    wb attrs = {0};
    at_float(&attrs, "epsilon", (float)eps);
    const char *bin[5] = {src, gamma ? gamma->name : g1, beta ? beta->name : b0, mean->name, var->name};
    char z[NAME_MAX_LEN + 48];
    fresh(L, "BatchNormalization", z, sizeof z);
    node(L, "BatchNormalization", bin, 5, z, &attrs);
    if (x->rank == 4) snprintf(o->nchw, sizeof o->nchw, "%s", z);
    else if (x->rank == 2) snprintf(o->nhwc, sizeof o->nhwc, "%s", z);
    else {
        for (int d = 1; d < x->rank; d++) perm[d] = d == x->rank - 1 ? 1 : d + 1;
        transpose(L, z, perm, x->rank, o->nhwc, sizeof o->nhwc);
    }
    return LITHE_OK;
}

/* ids (float in TF.js) -> Cast to int64 -> rows of the table */
LAYER(layer_embedding) {
    ktensor *x = ins[0];
    int64_t vocab = -1, dim = -1;
    LITHE__TRY(cfg_int(L, cfg, "input_dim", -1, 1, (int64_t)1 << 32, &vocab));
    LITHE__TRY(cfg_int(L, cfg, "output_dim", -1, 1, (int64_t)1 << 30, &dim));
    if (vocab < 0 || dim < 0) return lfail(L, LITHE_ERR_FORMAT, "config 'input_dim' and 'output_dim' are needed");
    if (x->rank + 1 > LITHE_MAX_DIMS) return lfail(L, LITHE_ERR_SHAPE, "a %d-D input is too many dims", x->rank);
    weight *E;
    LITHE__TRY(need_weight(L, "embeddings", 2, (int64_t[]){vocab, dim}, &E));
    wb attrs = {0};
    at_int(&attrs, "to", 7); /* INT64 */
    char ids[NAME_MAX_LEN + 48];
    unary(L, "Cast", as_nhwc(L, x), ids, sizeof ids, &attrs);
    binary(L, "Gather", E->name, ids, o->nhwc, sizeof o->nhwc);
    o->rank = x->rank + 1;
    o->shape[x->rank] = dim;
    return LITHE_OK;
}

/* (N, T, C) -> (N, C): the mean over T */
LAYER(layer_global_average_pooling1d) {
    ktensor *x = ins[0];
    LITHE__TRY(need_rank(L, x, 3));
    LITHE__TRY(channels_last(L, cfg));
    bool keep = false;
    LITHE__TRY(cfg_bool(L, cfg, "keepdims", false, &keep));
    wb attrs = {0};
    at_ints(&attrs, "axes", (const int64_t[]){1}, 1);
    at_int(&attrs, "keepdims", keep);
    unary(L, "ReduceMean", x->nhwc, o->nhwc, sizeof o->nhwc, &attrs);
    if (keep) {
        o->shape[1] = 1;
    } else {
        o->rank = 2;
        o->shape[1] = x->shape[2];
    }
    return LITHE_OK;
}

LAYER(layer_layernorm) {
    ktensor *x = ins[0];
    char y[NAME_MAX_LEN + 48];
    bool center, scale;
    double eps;
    LITHE__TRY(norm_config(L, cfg, x, "", &center, &scale, &eps));
    int64_t C = x->shape[x->rank - 1];
    weight *gamma = NULL, *beta = NULL;
    if (scale) LITHE__TRY(need_weight(L, "gamma", 1, (int64_t[]){C}, &gamma));
    if (center) LITHE__TRY(need_weight(L, "beta", 1, (int64_t[]){gamma ? gamma->shape[0] : C}, &beta));
    char g1[NAME_MAX_LEN + 48] = "", b0[NAME_MAX_LEN + 48] = "";
    LITHE__TRY(default_affine(L, C, gamma, beta, g1, b0, sizeof g1));
    wb attrs = {0};
    at_int(&attrs, "axis", -1);
    at_float(&attrs, "epsilon", (float)eps);
    const char *lin[3] = {as_nhwc(L, x), gamma ? gamma->name : g1, beta ? beta->name : b0};
    fresh(L, "LayerNormalization", y, sizeof y);
    node(L, "LayerNormalization", lin, 3, y, &attrs);
    snprintf(o->nhwc, sizeof o->nhwc, "%s", y);
    o->nchw[0] = '\0';
    return LITHE_OK;
}

/* nearest: (N, C, H, W) -> (N, C, H, 1, W, 1) -> expand -> merge */
LAYER(layer_upsampling2d) {
    ktensor *x = ins[0];
    int64_t sz[2];
    LITHE__TRY(need_rank(L, x, 4));
    LITHE__TRY(channels_last(L, cfg));
    LITHE__TRY(cfg_pair(L, cfg, "size", (const int64_t[]){2, 2}, sz));
    const char *interp = cfg_str(cfg, "interpolation", "nearest");
    if (strcmp(interp, "nearest")) return lfail(L, LITHE_ERR_UNSUPPORTED, "interpolation '%s' (lithe: nearest)", interp);
    if (x->shape[1] < 0 || x->shape[2] < 0) return lfail(L, LITHE_ERR_SHAPE, "the input's height and width must be known");
    char sh[NAME_MAX_LEN + 48], t[NAME_MAX_LEN + 48];
    constant(L, 1, (const int64_t[]){6}, NULL, (const int64_t[]){0, 0, x->shape[1], 1, x->shape[2], 1}, 6, sh, sizeof sh);
    binary(L, "Reshape", as_nchw(L, x), sh, t, sizeof t);
    constant(L, 1, (const int64_t[]){6}, NULL, (const int64_t[]){1, 1, 1, sz[0], 1, sz[1]}, 6, sh, sizeof sh);
    binary(L, "Expand", t, sh, t, sizeof t);
    o->shape[1] = x->shape[1] * sz[0];
    o->shape[2] = x->shape[2] * sz[1];
    constant(L, 1, (const int64_t[]){4}, NULL, (const int64_t[]){0, 0, o->shape[1], o->shape[2]}, 4, sh, sizeof sh);
    binary(L, "Reshape", t, sh, o->nchw, sizeof o->nchw);
    o->nhwc[0] = '\0';
    return LITHE_OK;
}

LAYER(layer_flatten) {
    ktensor *x = ins[0];
    LITHE__TRY(channels_last(L, cfg));
    if (x->rank < 2) return lfail(L, LITHE_ERR_SHAPE, "takes a 2-D or higher input, got %d-D", x->rank);
    wb attrs = {0};
    at_int(&attrs, "axis", 1);
    unary(L, "Flatten", as_nhwc(L, x), o->nhwc, sizeof o->nhwc, &attrs);
    int64_t p = 1;
    for (int d = 1; d < x->rank; d++) p = p < 0 || x->shape[d] < 0 ? -1 : p * x->shape[d];
    o->rank = 2;
    o->shape[1] = p;
    return LITHE_OK;
}

LAYER(layer_activation) {
    ktensor *x = ins[0];
    const char *act;
    LITHE__TRY(activation_of(L, cfg, &act));
    memcpy(o->nhwc, x->nhwc, sizeof o->nhwc);
    memcpy(o->nchw, x->nchw, sizeof o->nchw);
    return activate(L, o, act);
}

LAYER(layer_advanced_activation) {
    ktensor *x = ins[0];
    char y[NAME_MAX_LEN + 48];
    memcpy(o->nhwc, x->nhwc, sizeof o->nhwc);
    memcpy(o->nchw, x->nchw, sizeof o->nchw);
    double alpha = 0, maxv = -1;
    if (!strcmp(cls, "Softmax")) {
        int64_t axis = -1;
        LITHE__TRY(cfg_int(L, cfg, "axis", -1, -LITHE_MAX_DIMS, LITHE_MAX_DIMS, &axis));
        if (axis != -1 && axis != x->rank - 1) return lfail(L, LITHE_ERR_UNSUPPORTED, "softmax over axis %lld (lithe: the last)", (long long)axis);
        return activate(L, o, "softmax");
    }
    if (!strcmp(cls, "ELU")) {
        LITHE__TRY(cfg_float(L, cfg, "alpha", 1.0, &alpha));
        if (alpha != 1.0) return lfail(L, LITHE_ERR_UNSUPPORTED, "alpha %g (lithe: 1)", alpha);
        return activate(L, o, "elu");
    }
    if (!strcmp(cls, "LeakyReLU")) {
        LITHE__TRY(cfg_float(L, cfg, "alpha", 0.3, &alpha));
        const js_val *ns = js_get(cfg, "negative_slope"); /* Keras 3's name */
        if (ns) LITHE__TRY(cfg_float(L, cfg, "negative_slope", 0.3, &alpha));
        const char *src = o->nchw[0] ? o->nchw : o->nhwc;
        bool nchw = src == o->nchw;
        wb attrs = {0};
        at_float(&attrs, "alpha", (float)alpha);
        unary(L, "LeakyRelu", src, y, sizeof y, &attrs);
        snprintf(nchw ? o->nchw : o->nhwc, sizeof o->nhwc, "%s", y);
        (nchw ? o->nhwc : o->nchw)[0] = '\0';
        return LITHE_OK;
    }
    /* ReLU: max_value, negative_slope 0, threshold 0 */
    double slope = 0, thr = 0;
    LITHE__TRY(cfg_float(L, cfg, "max_value", -1, &maxv));
    LITHE__TRY(cfg_float(L, cfg, "negative_slope", 0, &slope));
    LITHE__TRY(cfg_float(L, cfg, "threshold", 0, &thr));
    if (slope != 0 || thr != 0)
        return lfail(L, LITHE_ERR_UNSUPPORTED, "negative_slope %g / threshold %g (lithe: 0)", slope, thr);
    const js_val *mv = js_get(cfg, "max_value");
    if (!mv || mv->type == JS_NULL) return activate(L, o, "relu");
    if (maxv < 0) return lfail(L, LITHE_ERR_FORMAT, "max_value %g is negative", maxv);
    const char *src = o->nchw[0] ? o->nchw : o->nhwc;
    bool nchw = src == o->nchw;
    char c0[NAME_MAX_LEN + 48], c1[NAME_MAX_LEN + 48];
    scalar(L, 0.0f, c0, sizeof c0);
    scalar(L, (float)maxv, c1, sizeof c1);
    const char *cin[3] = {src, c0, c1};
    fresh(L, "Clip", y, sizeof y);
    node(L, "Clip", cin, 3, y, NULL);
    snprintf(nchw ? o->nchw : o->nhwc, sizeof o->nhwc, "%s", y);
    (nchw ? o->nhwc : o->nchw)[0] = '\0';
    return LITHE_OK;
}

LAYER(layer_reshape) {
    ktensor *x = ins[0];
    const js_val *ts = js_get(cfg, "target_shape");
    if (!ts || ts->type != JS_ARR || ts->len < 1 || ts->len >= LITHE_MAX_DIMS)
        return lfail(L, LITHE_ERR_FORMAT, "config 'target_shape' must be a list of 1 to %d extents", LITHE_MAX_DIMS - 1);
    int64_t shp[LITHE_MAX_DIMS], known = 1, in_known = 1;
    int unknown = 0;
    shp[0] = 0; /* the batch extent, copied */
    for (size_t d = 0; d < ts->len; d++) {
        const js_val *e = &ts->items[d];
        if (e->type != JS_NUM || !e->is_int || e->i < -1 || e->i == 0 || e->i > ((int64_t)1 << 32))
            return lfail(L, LITHE_ERR_FORMAT, "target_shape[%zu] must be -1 or 1 .. 2^32", d);
        shp[d + 1] = e->i;
        if (e->i < 0) unknown++;
        else if (known <= ((int64_t)1 << 40) / e->i) known *= e->i;
        else return lfail(L, LITHE_ERR_FORMAT, "target_shape has more than 2^40 elements");
    }
    if (unknown > 1) return lfail(L, LITHE_ERR_FORMAT, "target_shape has %d unknown (-1) extents", unknown);
    for (int d = 1; d < x->rank; d++) in_known = in_known < 0 || x->shape[d] < 0 ? -1 : in_known * x->shape[d];
    char sh[NAME_MAX_LEN + 48];
    constant(L, 1, (const int64_t[]){(int64_t)ts->len + 1}, NULL, shp, (int64_t)ts->len + 1, sh, sizeof sh);
    binary(L, "Reshape", as_nhwc(L, x), sh, o->nhwc, sizeof o->nhwc);
    o->rank = (int)ts->len + 1;
    o->shape[0] = x->shape[0];
    for (size_t d = 0; d < ts->len; d++) o->shape[d + 1] = shp[d + 1];
    if (in_known >= 0 && ((unknown && in_known % known) || (!unknown && in_known != known)))
        return lfail(L, LITHE_ERR_SHAPE, "target_shape does not hold the input's %lld elements", (long long)in_known);
    for (size_t d = 0; d < ts->len; d++)
        if (shp[d + 1] < 0) o->shape[d + 1] = in_known >= 0 ? in_known / known : -1;
    return LITHE_OK;
}

LAYER(layer_zero_padding2d) {
    ktensor *x = ins[0];
    LITHE__TRY(need_rank(L, x, 4));
    LITHE__TRY(channels_last(L, cfg));
    int64_t p[4]; /* top, bottom, left, right */
    const js_val *v = js_get(cfg, "padding");
    bool ok = true;
    if (!v || v->type == JS_NULL) p[0] = p[1] = p[2] = p[3] = 1;
    else if (v->type == JS_NUM) ok = v->is_int && v->i >= 0 && v->i <= (1 << 16), p[0] = p[1] = p[2] = p[3] = v->i;
    else if (v->type == JS_ARR && v->len == 2) {
        for (int i = 0; ok && i < 2; i++) {
            const js_val *e = &v->items[i];
            if (e->type == JS_NUM) {
                ok = e->is_int && e->i >= 0 && e->i <= (1 << 16);
                p[2 * i] = p[2 * i + 1] = e->i;
            } else if (e->type == JS_ARR && e->len == 2) {
                for (int j = 0; ok && j < 2; j++) {
                    ok = e->items[j].type == JS_NUM && e->items[j].is_int && e->items[j].i >= 0 && e->items[j].i <= (1 << 16);
                    p[2 * i + j] = e->items[j].i;
                }
            } else {
                ok = false;
            }
        }
    } else {
        ok = false;
    }
    if (!ok) return lfail(L, LITHE_ERR_FORMAT, "config 'padding' must be n, (h, w) or ((top, bottom), (left, right)), each 0 .. 65536");
    int64_t pads[8] = {0, 0, p[0], p[2], 0, 0, p[1], p[3]};
    char pc[NAME_MAX_LEN + 48];
    constant(L, 1, (const int64_t[]){8}, NULL, pads, 8, pc, sizeof pc);
    binary(L, "Pad", as_nchw(L, x), pc, o->nchw, sizeof o->nchw);
    o->nhwc[0] = '\0';
    if (x->shape[1] >= 0) o->shape[1] = x->shape[1] + p[0] + p[1];
    if (x->shape[2] >= 0) o->shape[2] = x->shape[2] + p[2] + p[3];
    return LITHE_OK;
}

/* Add, Subtract, Multiply, Average, Concatenate */
LAYER(layer_merge) {
    ktensor *x = ins[0];
    char y[NAME_MAX_LEN + 48];
if (n_in < 2 || n_in > 64) return lfail(L, LITHE_ERR_FORMAT, "a merge of %zu inputs (it takes 2 to 64)", n_in);
for (size_t i = 1; i < n_in; i++)
    if (ins[i]->rank != x->rank) return lfail(L, LITHE_ERR_SHAPE, "merges a %d-D and a %d-D tensor", x->rank, ins[i]->rank);
bool nchw = x->rank == 4 && x->nchw[0];
const char *v[64];
for (size_t i = 0; i < n_in; i++) v[i] = nchw ? as_nchw(L, ins[i]) : as_nhwc(L, ins[i]);
if (!strcmp(cls, "Concatenate")) {
    int64_t axis = -1;
    LITHE__TRY(cfg_int(L, cfg, "axis", -1, -LITHE_MAX_DIMS, LITHE_MAX_DIMS, &axis));
    if (axis < 0) axis += x->rank;
    if (axis < 1 || axis >= x->rank) return lfail(L, LITHE_ERR_FORMAT, "axis %lld of a %d-D tensor", (long long)axis, x->rank);
    int64_t sum = 0;
    for (size_t i = 0; i < n_in; i++) sum = sum < 0 || ins[i]->shape[axis] < 0 ? -1 : sum + ins[i]->shape[axis];
    wb attrs = {0};
    at_int(&attrs, "axis", nchw ? (axis == 3 ? 1 : axis + 1) : axis);
    fresh(L, "Concat", y, sizeof y);
    node(L, "Concat", v, n_in, y, &attrs);
    o->shape[axis] = sum;
} else {
    const char *op = !strcmp(cls, "Subtract") ? "Sub" : !strcmp(cls, "Multiply") ? "Mul" : "Add";
    if (!strcmp(cls, "Subtract") && n_in != 2) return lfail(L, LITHE_ERR_FORMAT, "Subtract takes 2 inputs, got %zu", n_in);
    binary(L, op, v[0], v[1], y, sizeof y);
    for (size_t i = 2; i < n_in; i++) binary(L, op, y, v[i], y, sizeof y);
    if (!strcmp(cls, "Average")) {
        char c[NAME_MAX_LEN + 48];
        scalar(L, 1.0f / (float)n_in, c, sizeof c);
        binary(L, "Mul", y, c, y, sizeof y);
    }
}
snprintf(nchw ? o->nchw : o->nhwc, sizeof o->nhwc, "%s", y);
return LITHE_OK;
}

/* A layer class and its lowering; lower_layer2d runs the entry of cls, the merges when none. */
typedef lithe_status (*layer_fn)(lower *L, const char *cls, const js_val *cfg, ktensor **ins, size_t n_in, ktensor *o);
static const struct {
    const char *cls;
    layer_fn fn;
} layer_table[] = {
    {"Dropout", layer_identity},
    {"SpatialDropout1D", layer_identity},
    {"SpatialDropout2D", layer_identity},
    {"GaussianNoise", layer_identity},
    {"GaussianDropout", layer_identity},
    {"AlphaDropout", layer_identity},
    {"InputLayer", layer_identity},
    {"Dense", layer_dense},
    {"Conv2D", layer_conv2d},
    {"DepthwiseConv2D", layer_conv2d},
    {"SeparableConv2D", layer_conv2d},
    {"MaxPooling2D", layer_pooling2d},
    {"AveragePooling2D", layer_pooling2d},
    {"GlobalAveragePooling2D", layer_global_pooling2d},
    {"GlobalMaxPooling2D", layer_global_pooling2d},
    {"BatchNormalization", layer_batchnorm},
    {"Embedding", layer_embedding},
    {"GlobalAveragePooling1D", layer_global_average_pooling1d},
    {"LayerNormalization", layer_layernorm},
    {"UpSampling2D", layer_upsampling2d},
    {"Flatten", layer_flatten},
    {"Activation", layer_activation},
    {"ReLU", layer_advanced_activation},
    {"LeakyReLU", layer_advanced_activation},
    {"ELU", layer_advanced_activation},
    {"Softmax", layer_advanced_activation},
    {"Reshape", layer_reshape},
    {"ZeroPadding2D", layer_zero_padding2d},
};

/* Lowers one call of a layer: ins (n_in tensors) -> *o. */
static lithe_status lower_layer2d(lower *L, const char *cls, const js_val *cfg, ktensor **ins, size_t n_in, ktensor *o) {
    ktensor *x = ins[0];
    o->rank = x->rank;
    memcpy(o->shape, x->shape, sizeof o->shape);
    bool merge = !strcmp(cls, "Add") || !strcmp(cls, "Subtract") || !strcmp(cls, "Multiply") || !strcmp(cls, "Average") ||
                 !strcmp(cls, "Concatenate");
    if (!merge && n_in != 1) return lfail(L, LITHE_ERR_FORMAT, "called on %zu inputs; it takes one", n_in);
    for (size_t i = 0; i < sizeof layer_table / sizeof layer_table[0]; i++)
        if (!strcmp(cls, layer_table[i].cls)) return layer_table[i].fn(L, cls, cfg, ins, n_in, o);
    return layer_merge(L, cls, cfg, ins, n_in, o);
}

/* The 1-D layers run as their 2-D twins: (N, T, C) -> Unsqueeze -> (N, 1, T, C) -> the 2-D layer
 * (a Conv1D kernel (K, C, F) reshaped to (1, K, C, F)) -> Squeeze -> (N, T', F). */
static const char *const one_d_layers[][2] = {{"Conv1D", "Conv2D"}, {"MaxPooling1D", "MaxPooling2D"},
                                              {"AveragePooling1D", "AveragePooling2D"},
                                              {"GlobalMaxPooling1D", "GlobalMaxPooling2D"}};

lithe_status lower_layer(lower *L, const char *cls, const js_val *cfg, ktensor **ins, size_t n_in, ktensor *o) {
    const char *twin = NULL;
    for (size_t i = 0; i < sizeof one_d_layers / sizeof one_d_layers[0]; i++)
        if (!strcmp(cls, one_d_layers[i][0])) twin = one_d_layers[i][1];
    if (!twin) return lower_layer2d(L, cls, cfg, ins, n_in, o);
    if (n_in != 1) return lfail(L, LITHE_ERR_FORMAT, "called on %zu inputs; it takes one", n_in);
    ktensor *x = ins[0];
    LITHE__TRY(need_rank(L, x, 3));
    ktensor x4 = *x, o4 = {0};
    char ax[NAME_MAX_LEN + 48];
    constant(L, 1, (const int64_t[]){1}, NULL, (const int64_t[]){1}, 1, ax, sizeof ax);
    binary(L, "Unsqueeze", x->nhwc, ax, x4.nhwc, sizeof x4.nhwc);
    x4.nchw[0] = '\0';
    x4.rank = 4;
    x4.shape[0] = x->shape[0];
    x4.shape[1] = 1;
    x4.shape[2] = x->shape[1];
    x4.shape[3] = x->shape[2];
    ktensor *in4 = &x4;
    L->one_d = true;
    lithe_status s = lower_layer2d(L, twin, cfg, &in4, 1, &o4);
    L->one_d = false;
    LITHE__TRY(s);
    if (o4.rank == 2) { /* GlobalMaxPooling1D */
        memcpy(o->nhwc, o4.nhwc, sizeof o->nhwc);
        o->rank = 2;
        o->shape[0] = o4.shape[0];
        o->shape[1] = o4.shape[1];
        return LITHE_OK;
    }
    constant(L, 1, (const int64_t[]){1}, NULL, (const int64_t[]){1}, 1, ax, sizeof ax);
    binary(L, "Squeeze", as_nhwc(L, &o4), ax, o->nhwc, sizeof o->nhwc);
    o->nchw[0] = '\0';
    o->rank = 3;
    o->shape[0] = o4.shape[0];
    o->shape[1] = o4.shape[2];
    o->shape[2] = o4.shape[3];
    return LITHE_OK;
}
