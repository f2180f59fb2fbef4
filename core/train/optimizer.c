/* Thinc's Optimizer (thinc/optimizers.py) step for step: L2 or decoupled weight decay, gradient
 * clipping by L2 norm, Adam with bias correction or SGD, the gradient zeroed, and parameter
 * averages with Thinc's decay. State is keyed by (node id, param name). */
#include "../internal.h"
#include "../io/msgpack.h"

#include <math.h>
#include <stdio.h>

typedef struct opt_slot {
    uint64_t node_id;
    char *name;
    int64_t nr_update;
    lithe_tensor *mom1, *mom2, *avg;
} opt_slot;

#define N_HYPER 6
static const char *const hyper_names[N_HYPER] = {"learn_rate", "b1", "b2", "eps", "L2", "grad_clip"};

struct lithe_optimizer {
    lithe_optimizer_opts o;
    lithe_schedule *schedules[N_HYPER]; /* Thinc's optimizer.schedules, by hyper-parameter */
    size_t n, cap;
    opt_slot *slots;
    bool check_finite; /* lithe_optimizer_set_check_finite */
};

lithe_status lithe_optimizer_set_check_finite(lithe_optimizer *opt, bool on) {
    LITHE__CHECK_ARG(opt, "lithe_optimizer_set_check_finite", "optimizer is NULL");
    opt->check_finite = on;
    return LITHE_OK;
}

bool lithe__optimizer_checks_finite(const lithe_optimizer *opt) { return opt && opt->check_finite; }

/* LITHE_ERR_VALUE naming node.param when the float32 gradient G holds a NaN or an infinity. */
lithe_status lithe__grad_check_finite(const char *who, const lithe_model *node, const char *name, const lithe_tensor *G) {
    if (G->dtype != LITHE_F32 || G->numel < 1) return LITHE_OK;
    size_t n = (size_t)G->numel;
    float *h = lithe__malloc(n * sizeof *h);
    if (!h) return lithe__oom(who, n * sizeof *h);
    lithe_status s = lithe_tensor_read(G, h, n * sizeof *h);
    if (s == LITHE_OK) {
        size_t bad = 0, first = 0;
        for (size_t i = 0; i < n; i++)
            if (!isfinite(h[i]) && !bad++) first = i;
        if (bad)
            s = lithe__fail(LITHE_ERR_VALUE,
                            "%s: gradient of %s.%s has %zu non-finite values (first %s at [%zu]); nothing was "
                            "updated (lithe_optimizer_set_check_finite)",
                            who, node->name, name, bad, isnan(h[first]) ? "NaN" : h[first] > 0 ? "inf" : "-inf", first);
    }
    lithe__free(h);
    return s;
}

lithe_optimizer_opts lithe_adam_defaults(void) {
    return (lithe_optimizer_opts){.learn_rate = 0.001, .L2 = 0.0, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-08,
                                  .grad_clip = 1.0, .L2_is_weight_decay = true, .use_averages = true};
}

lithe_optimizer_opts lithe_sgd_defaults(double learn_rate) {
    return (lithe_optimizer_opts){.learn_rate = learn_rate, .L2 = 0.0, .beta1 = 0.0, .beta2 = 0.0, .eps = 1e-08,
                                  .grad_clip = 1.0, .L2_is_weight_decay = true, .use_averages = true};
}

static lithe_status check_opts(const lithe_optimizer_opts *o) {
    if (!(o->learn_rate >= 0.0) || !(o->L2 >= 0.0) || !(o->eps >= 0.0) || !(o->grad_clip >= 0.0))
        return lithe__fail(LITHE_ERR_VALUE, "optimizer: learn_rate (%g), L2 (%g), eps (%g) and grad_clip (%g) must be >= 0",
                           o->learn_rate, o->L2, o->eps, o->grad_clip);
    if (!(o->beta1 >= 0.0 && o->beta1 < 1.0) || !(o->beta2 >= 0.0 && o->beta2 < 1.0))
        return lithe__fail(LITHE_ERR_VALUE, "optimizer: beta1 (%g) and beta2 (%g) must lie in [0, 1)", o->beta1, o->beta2);
    if (o->beta1 == 0.0 && o->beta2 > 0.0)
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "optimizer: beta2 > 0 with beta1 = 0 is not an optimizer Thinc has");
    return LITHE_OK;
}

lithe_status lithe_optimizer_new(const lithe_optimizer_opts *opts, lithe_optimizer **out) {
    LITHE__CHECK_ARG(out, "lithe_optimizer_new", "out is NULL");
    *out = NULL;
    LITHE__CHECK_ARG(opts, "lithe_optimizer_new", "opts is NULL (use lithe_adam_defaults())");
    LITHE__TRY(check_opts(opts));
    lithe_optimizer *opt = lithe__calloc(1, sizeof *opt);
    if (!opt) return lithe__oom("optimizer", sizeof *opt);
    opt->o = *opts;
    *out = opt;
    return LITHE_OK;
}

void lithe_optimizer_free(lithe_optimizer *opt) {
    if (!opt) return;
    for (int i = 0; i < N_HYPER; i++) lithe_schedule_free(opt->schedules[i]);
    for (size_t i = 0; i < opt->n; i++) {
        lithe__free(opt->slots[i].name);
        lithe_tensor_release(opt->slots[i].mom1);
        lithe_tensor_release(opt->slots[i].mom2);
        lithe_tensor_release(opt->slots[i].avg);
    }
    lithe__free(opt->slots);
    lithe__free(opt);
}

lithe_optimizer_opts lithe_optimizer_get_opts(const lithe_optimizer *opt) {
    return opt ? opt->o : (lithe_optimizer_opts){0};
}

lithe_status lithe_optimizer_set_learn_rate(lithe_optimizer *opt, double learn_rate) {
    LITHE__CHECK_ARG(opt, "lithe_optimizer_set_learn_rate", "optimizer is NULL");
    if (!(learn_rate >= 0.0)) return lithe__fail(LITHE_ERR_VALUE, "optimizer: learn_rate %g must be >= 0", learn_rate);
    opt->o.learn_rate = learn_rate;
    return LITHE_OK;
}

static double *hyper_field(lithe_optimizer_opts *o, int i) {
    double *f[N_HYPER] = {&o->learn_rate, &o->beta1, &o->beta2, &o->eps, &o->L2, &o->grad_clip};
    return f[i];
}

/* Sets hyper-parameter i to v if the optimizer accepts the result. */
static lithe_status set_hyper(lithe_optimizer *opt, int i, double v) {
    lithe_optimizer_opts o = opt->o;
    *hyper_field(&o, i) = v;
    lithe_status s = check_opts(&o);
    if (s != LITHE_OK) {
        char why[256];
        snprintf(why, sizeof why, "%s", lithe_last_error());
        return lithe__fail(s, "optimizer: schedule for %s gave %g: %s", hyper_names[i], v, why);
    }
    opt->o = o;
    return LITHE_OK;
}

lithe_status lithe_optimizer_set_schedule(lithe_optimizer *opt, const char *name, lithe_schedule *sched) {
    int i = 0;
    while (name && i < N_HYPER && strcmp(hyper_names[i], name)) i++;
    if (!opt || !sched || !name || i == N_HYPER) {
        lithe_schedule_free(sched);
        return lithe__fail(LITHE_ERR_INVALID_ARG,
                           "lithe_optimizer_set_schedule: %s (names: learn_rate, b1, b2, eps, L2, grad_clip)",
                           !opt ? "optimizer is NULL" : !sched ? "schedule is NULL" : "unknown hyper-parameter");
    }
    lithe_status s = set_hyper(opt, i, lithe_schedule_next(sched));
    if (s != LITHE_OK) {
        lithe_schedule_free(sched);
        return s;
    }
    lithe_schedule_free(opt->schedules[i]);
    opt->schedules[i] = sched;
    return LITHE_OK;
}

lithe_status lithe_optimizer_step_schedules(lithe_optimizer *opt) {
    LITHE__CHECK_ARG(opt, "lithe_optimizer_step_schedules", "optimizer is NULL");
    for (int i = 0; i < N_HYPER; i++)
        if (opt->schedules[i]) LITHE__TRY(set_hyper(opt, i, lithe_schedule_next(opt->schedules[i])));
    return LITHE_OK;
}

static opt_slot *find_slot(const lithe_optimizer *opt, uint64_t id, const char *name) {
    for (size_t i = 0; i < opt->n; i++)
        if (opt->slots[i].node_id == id && !strcmp(opt->slots[i].name, name)) return &opt->slots[i];
    return NULL;
}

static lithe_status get_slot(lithe_optimizer *opt, uint64_t id, const char *name, opt_slot **out) {
    opt_slot *s = find_slot(opt, id, name);
    if (!s) {
        if (opt->n == opt->cap) {
            size_t nc = opt->cap ? opt->cap * 2 : 16;
            opt_slot *ns = lithe__realloc(opt->slots, nc * sizeof *ns);
            if (!ns) return lithe__oom("optimizer", nc * sizeof *ns);
            opt->slots = ns;
            opt->cap = nc;
        }
        char *nm = lithe__strdup(name);
        if (!nm) return lithe__oom("optimizer", strlen(name) + 1);
        s = &opt->slots[opt->n++];
        memset(s, 0, sizeof *s);
        s->node_id = id;
        s->name = nm;
    }
    *out = s;
    return LITHE_OK;
}

/* Allocates a zeroed 1-D state tensor of W's size on W's backend. */
static lithe_status state_tensor(lithe_tensor **t, const lithe_tensor *W, bool flat) {
    if (*t) return LITHE_OK;
    if (flat) return lithe__tensor_alloc(W->storage->backend, LITHE_F32, 1, (int64_t[]){W->numel}, true, t);
    return lithe__tensor_alloc(W->storage->backend, LITHE_F32, W->ndim, W->shape, true, t);
}

/* Finds or creates the slot and allocates all of its state, before anything changes, so an OOM
 * leaves no half-step. */
static lithe_status prepare(lithe_optimizer *opt, const lithe_model *node, const char *name, const lithe_tensor *W,
                           opt_slot **out) {
    opt_slot *s = NULL;
    LITHE__TRY(get_slot(opt, node->id, name, &s));
    if (opt->o.use_radam || (opt->o.beta1 > 0.0 && opt->o.beta2 > 0.0)) {
        LITHE__TRY(state_tensor(&s->mom1, W, false));
        LITHE__TRY(state_tensor(&s->mom2, W, false));
    }
    if (opt->o.use_averages) LITHE__TRY(state_tensor(&s->avg, W, false));
    *out = s;
    return LITHE_OK;
}

size_t lithe__optimizer_state_copies(const lithe_optimizer *opt) {
    lithe_optimizer_opts o = opt ? opt->o : lithe_adam_defaults();
    return (o.use_radam || (o.beta1 > 0.0 && o.beta2 > 0.0) ? 2u : 0u) + (o.use_averages ? 1u : 0u);
}

size_t lithe_optimizer_state_count(const lithe_optimizer *opt, size_t *bytes) {
    size_t b = 0;
    for (size_t i = 0; opt && i < opt->n; i++) {
        const lithe_tensor *t[3] = {opt->slots[i].mom1, opt->slots[i].mom2, opt->slots[i].avg};
        for (int k = 0; k < 3; k++) b += t[k] ? (size_t)t[k]->numel * lithe_dtype_size(t[k]->dtype) : 0;
    }
    if (bytes) *bytes = b;
    return opt ? opt->n : 0;
}

lithe_status lithe__optimizer_prepare(lithe_optimizer *opt, const lithe_model *node, const char *name,
                                      const lithe_tensor *W) {
    opt_slot *s = NULL;
    return prepare(opt, node, name, W, &s);
}

/* Adam's bias-corrected step size at step t (Thinc: lr * sqrt(1 - b2^t) / (1 - b1^t)). */
static double adam_lr(const lithe_optimizer_opts *o, int64_t t) {
    double fix1 = 1.0 - pow(o->beta1, (double)t), fix2 = 1.0 - pow(o->beta2, (double)t);
    return o->learn_rate * sqrt(fix2) / fix1;
}

/* Thinc's averages' decay at step t. */
static double avg_decay(int64_t t) {
    double decay = (1.0 + (double)t) / (10.0 + (double)t);
    return decay > 0.9999 ? 0.9999 : decay;
}

lithe_status lithe_optimizer_step(lithe_optimizer *opt, const lithe_model *node, const char *name,
                                  lithe_tensor *W, lithe_tensor *G) {
    LITHE__CHECK_ARG(opt && node && name && W && G, "lithe_optimizer_step", "an argument is NULL");
    if (W->dtype != LITHE_F32 || G->dtype != LITHE_F32)
        return lithe__fail(LITHE_ERR_DTYPE, "optimizer: %s.%s: weights (%s) and gradient (%s) must be float32", node->name,
                           name, lithe_dtype_name(W->dtype), lithe_dtype_name(G->dtype));
    if (W->numel != G->numel)
        return lithe__fail(LITHE_ERR_SHAPE, "optimizer: %s.%s: weights have %lld elements, gradient %lld", node->name,
                           name, (long long)W->numel, (long long)G->numel);
    if (!lithe_tensor_is_contiguous(W) || !lithe_tensor_is_contiguous(G))
        return lithe__fail(LITHE_ERR_SHAPE, "optimizer: %s.%s: weights and gradient must be contiguous", node->name, name);
    if (G->numel < 1) return LITHE_OK; /* Thinc: len(gradient) < 1 returns early */
    if (opt->check_finite) LITHE__TRY(lithe__grad_check_finite("optimizer", node, name, G));
    lithe_backend *be = W->storage->backend;
    const lithe_optimizer_opts *o = &opt->o;
    opt_slot *s = NULL;
    LITHE__TRY(prepare(opt, node, name, W, &s));
    bool adam = o->beta1 > 0.0 && o->beta2 > 0.0;

    int64_t t = ++s->nr_update;
    if (o->L2 != 0.0 && !o->L2_is_weight_decay) LITHE__TRY(lithe__op_axpby(be, (float)o->L2, W, 1.0f, G));
    /* Adam on a backend with the fused step: the clipping, the update, zeroing G, weight decay and
     * the averages in one primitive (the CPU: the norm's pass over G, then one pass over the
     * arrays; a GPU decides the clipping on the device, no read-back) */
    if (!o->use_radam && adam && be->ops->adam_step) {
        float wscale = o->L2 != 0.0 && o->L2_is_weight_decay ? (float)(1.0 - o->learn_rate * o->L2) : 1.0f;
        return lithe__op_adam_step(be, W, G, s->mom1, s->mom2, o->use_averages ? s->avg : NULL, o->grad_clip,
                                   (float)o->beta1, (float)o->beta2, (float)o->eps, (float)adam_lr(o, t), wscale,
                                   o->use_averages ? (float)avg_decay(t) : 1.0f);
    }
    /* on the gradient's device: no read-back (a GPU step would otherwise wait here per parameter) */
    if (o->grad_clip != 0.0) LITHE__TRY(lithe__op_clip_gradient(be, G, o->grad_clip));
    if (o->use_radam) {
        /* Thinc's _radam: its step counter is nr_update + 1 (it increments the already-updated
         * count), and it ignores lr_scale. Thinc caches (N_sma, step_size) per step % 10 in one
         * buffer for all params; the values depend only on the step and the betas, so they are
         * computed afresh here. */
        double step = (double)t + 1.0, b1 = o->beta1, b2 = o->beta2;
        double beta2_t = pow(b2, step), n_sma_max = 2.0 / (1.0 - b2) - 1.0;
        double n_sma = n_sma_max - 2.0 * step * beta2_t / (1.0 - beta2_t), step_size;
        if (n_sma >= 5.0)
            step_size = sqrt((1.0 - beta2_t) * (n_sma - 4.0) / (n_sma_max - 4.0) * (n_sma - 2.0) / n_sma * n_sma_max /
                             (n_sma_max - 2.0)) /
                        (1.0 - pow(b1, step));
        else
            step_size = 1.0 / (1.0 - pow(b1, step)); /* degenerated to SGD with momentum */
        LITHE__TRY(lithe__op_radam(be, W, G, s->mom1, s->mom2, (float)b1, (float)(1.0 - b1), (float)b2,
                                   (float)(1.0 - b2), (float)o->eps, (float)(-step_size * o->learn_rate),
                                   n_sma >= 5.0));
    } else if (adam) {
        LITHE__TRY(lithe__op_adam(be, W, G, s->mom1, s->mom2, (float)o->beta1, (float)o->beta2, (float)o->eps,
                                  (float)adam_lr(o, t)));
    } else {
        LITHE__TRY(lithe__op_axpby(be, (float)(-o->learn_rate), G, 1.0f, W));
    }
    LITHE__TRY(lithe__op_fill(be, G, 0.0f));
    if (o->L2 != 0.0 && o->L2_is_weight_decay)
        LITHE__TRY(lithe__op_axpby(be, 0.0f, W, (float)(1.0 - o->learn_rate * o->L2), W));
    if (o->use_averages) LITHE__TRY(lithe__op_update_averages(be, s->avg, W, (float)avg_decay(t)));
    return LITHE_OK;
}

int64_t lithe_optimizer_nr_update(const lithe_optimizer *opt, const lithe_model *node, const char *name) {
    if (!opt || !node || !name) return 0;
    opt_slot *s = find_slot(opt, node->id, name);
    return s ? s->nr_update : 0;
}

lithe_status lithe_optimizer_get_average(const lithe_optimizer *opt, const lithe_model *node, const char *name,
                                         lithe_tensor **out) {
    LITHE__CHECK_ARG(out, "lithe_optimizer_get_average", "out is NULL");
    *out = NULL;
    LITHE__CHECK_ARG(opt && node && name, "lithe_optimizer_get_average", "an argument is NULL");
    opt_slot *s = find_slot(opt, node->id, name);
    if (!s || !s->avg)
        return lithe__fail(LITHE_ERR_NOT_FOUND, "optimizer: no average for %s.%s", node->name, name);
    *out = s->avg;
    return LITHE_OK;
}

static lithe_status optimizer_swap_averages_body(lithe_optimizer *opt, lithe_model *m) {
    LITHE__CHECK_ARG(opt && m, "lithe_optimizer_swap_averages", "optimizer or model is NULL");
    size_t n = 0;
    LITHE__TRY(lithe_model_walk(m, NULL, 0, &n));
    lithe_model **nodes = lithe__malloc(n * sizeof *nodes);
    if (!nodes) return lithe__oom("lithe_optimizer_swap_averages", n * sizeof *nodes);
    lithe_status s = lithe_model_walk(m, nodes, n, &n);
    for (size_t i = 0; s == LITHE_OK && i < n; i++) {
        for (size_t p = 0; p < nodes[i]->n_params; p++) {
            lithe__param *pr = &nodes[i]->params[p];
            opt_slot *slot = find_slot(opt, nodes[i]->id, pr->name);
            if (!pr->value || !slot || !slot->avg || !lithe__same_shape(pr->value, slot->avg)) continue;
            lithe_tensor *t = pr->value;
            pr->value = slot->avg;
            slot->avg = t;
        }
    }
    lithe__free(nodes);
    return s;
}

lithe_status lithe_optimizer_swap_averages(lithe_optimizer *opt, lithe_model *m) {
    if (m) LITHE__TRY(lithe__enter_tree(m, "lithe_optimizer_swap_averages"));
    lithe_status s = optimizer_swap_averages_body(opt, m);
    if (m) lithe__leave_tree(m);
    return s;
}

/* ---- state save / restore ----
 * Little-endian blob: "LTHOPT01", u32 count, then per slot: u32 walk index, u32 name length,
 * name bytes, i64 nr_update, u8 flags (1 mom1, 2 mom2, 4 avg), i64 numel, then the float32
 * arrays present, in that order. Hyper-parameters and schedules are the caller's to restore. */

static void put_u32(mp_buf *b, uint32_t v) {
    uint8_t x[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    mp_raw(b, x, 4);
}

static void put_i64(mp_buf *b, int64_t v) {
    uint64_t u = (uint64_t)v;
    put_u32(b, (uint32_t)u);
    put_u32(b, (uint32_t)(u >> 32));
}

static lithe_status put_tensor(mp_buf *b, const lithe_tensor *t) {
    size_t n = (size_t)t->numel;
    float *host = lithe__malloc(n ? n * sizeof *host : 1);
    if (!host) return lithe__oom("optimizer state", n * sizeof *host);
    lithe_status s = lithe_tensor_read(t, host, n * sizeof *host);
    for (size_t i = 0; s == LITHE_OK && i < n; i++) {
        uint32_t u;
        memcpy(&u, &host[i], 4);
        put_u32(b, u);
    }
    lithe__free(host);
    return s;
}

lithe_status lithe_optimizer_save_state(const lithe_optimizer *opt, lithe_model *m, uint8_t **out, size_t *len) {
    LITHE__CHECK_ARG(out && len, "lithe_optimizer_save_state", "out or len is NULL");
    *out = NULL;
    *len = 0;
    LITHE__CHECK_ARG(opt && m, "lithe_optimizer_save_state", "optimizer or model is NULL");
    size_t nn = 0;
    LITHE__TRY(lithe_model_walk(m, NULL, 0, &nn));
    lithe_model **nodes = lithe__malloc((nn ? nn : 1) * sizeof *nodes);
    if (!nodes) return lithe__oom("optimizer state", nn * sizeof *nodes);
    lithe_status s = lithe_model_walk(m, nodes, nn, &nn);
    mp_buf b = {0}; /* used as a plain growing byte buffer */
    mp_raw(&b, "LTHOPT01", 8);
    uint32_t count = 0;
    for (size_t i = 0; i < opt->n; i++)
        for (size_t k = 0; k < nn; k++) count += nodes[k]->id == opt->slots[i].node_id;
    put_u32(&b, count);
    for (size_t k = 0; s == LITHE_OK && k < nn; k++)
        for (size_t i = 0; s == LITHE_OK && i < opt->n; i++) {
            const opt_slot *sl = &opt->slots[i];
            if (sl->node_id != nodes[k]->id) continue;
            const lithe_tensor *ref = sl->mom1 ? sl->mom1 : sl->mom2 ? sl->mom2 : sl->avg;
            put_u32(&b, (uint32_t)k);
            put_u32(&b, (uint32_t)strlen(sl->name));
            mp_raw(&b, sl->name, strlen(sl->name));
            put_i64(&b, sl->nr_update);
            uint8_t flags = (uint8_t)((sl->mom1 ? 1 : 0) | (sl->mom2 ? 2 : 0) | (sl->avg ? 4 : 0));
            mp_raw(&b, &flags, 1);
            put_i64(&b, ref ? ref->numel : 0);
            if (sl->mom1) s = put_tensor(&b, sl->mom1);
            if (s == LITHE_OK && sl->mom2) s = put_tensor(&b, sl->mom2);
            if (s == LITHE_OK && sl->avg) s = put_tensor(&b, sl->avg);
        }
    lithe__free(nodes);
    if (s == LITHE_OK && b.oom) s = lithe__oom("optimizer state", b.n);
    if (s != LITHE_OK) {
        lithe__free(b.p);
        return s;
    }
    *out = b.p;
    *len = b.n;
    return LITHE_OK;
}

void lithe_buffer_free(void *p) { lithe__free(p); }

typedef struct rbuf {
    const uint8_t *p;
    size_t n, at;
} rbuf;

static bool get(rbuf *b, void *dst, size_t len) {
    if (len > b->n - b->at) return false;
    memcpy(dst, b->p + b->at, len);
    b->at += len;
    return true;
}

static bool get_u32(rbuf *b, uint32_t *v) {
    uint8_t x[4];
    if (!get(b, x, 4)) return false;
    *v = (uint32_t)x[0] | (uint32_t)x[1] << 8 | (uint32_t)x[2] << 16 | (uint32_t)x[3] << 24;
    return true;
}

static bool get_i64(rbuf *b, int64_t *v) {
    uint32_t lo, hi;
    if (!get_u32(b, &lo) || !get_u32(b, &hi)) return false;
    *v = (int64_t)((uint64_t)hi << 32 | lo);
    return true;
}

/* Reads n floats into a new tensor shaped like W. */
static lithe_status get_tensor(rbuf *b, const lithe_tensor *W, lithe_tensor **out) {
    size_t n = (size_t)W->numel;
    if (n > (b->n - b->at) / 4) return lithe__fail(LITHE_ERR_FORMAT, "optimizer state: truncated array data");
    float *host = lithe__malloc(n ? n * sizeof *host : 1);
    if (!host) return lithe__oom("optimizer state", n * sizeof *host);
    for (size_t i = 0; i < n; i++) {
        uint32_t u = 0;
        get_u32(b, &u);
        memcpy(&host[i], &u, 4);
    }
    lithe_status s = lithe__tensor_alloc(W->storage->backend, LITHE_F32, W->ndim, W->shape, false, out);
    if (s == LITHE_OK) s = lithe_tensor_write(*out, host, n * sizeof *host);
    if (s != LITHE_OK) {
        lithe_tensor_release(*out);
        *out = NULL;
    }
    lithe__free(host);
    return s;
}

lithe_status lithe_optimizer_load_state(lithe_optimizer *opt, lithe_model *m, const uint8_t *data, size_t len) {
    LITHE__CHECK_ARG(opt && m && (data || !len), "lithe_optimizer_load_state", "an argument is NULL");
    size_t nn = 0;
    LITHE__TRY(lithe_model_walk(m, NULL, 0, &nn));
    lithe_model **nodes = lithe__malloc((nn ? nn : 1) * sizeof *nodes);
    if (!nodes) return lithe__oom("optimizer state", nn * sizeof *nodes);
    lithe_status s = lithe_model_walk(m, nodes, nn, &nn);
    rbuf b = {data, len, 0};
    char magic[8];
    uint32_t count = 0;
    if (s == LITHE_OK && (!get(&b, magic, 8) || memcmp(magic, "LTHOPT01", 8) || !get_u32(&b, &count)))
        s = lithe__fail(LITHE_ERR_FORMAT, "optimizer state: not a lithe optimizer state (bad magic or truncated header)");
    /* parse everything into a fresh optimizer first: a bad blob leaves `opt` untouched */
    lithe_optimizer *tmp = NULL;
    if (s == LITHE_OK) s = lithe_optimizer_new(&opt->o, &tmp);
    for (uint32_t c = 0; s == LITHE_OK && c < count; c++) {
        uint32_t k, nlen;
        int64_t nr, numel;
        uint8_t flags;
        char name[256];
        if (!get_u32(&b, &k) || !get_u32(&b, &nlen) || nlen >= sizeof name || !get(&b, name, nlen)) {
            s = lithe__fail(LITHE_ERR_FORMAT, "optimizer state: entry %u is truncated or its name too long", c);
            break;
        }
        name[nlen] = '\0';
        if (!get_i64(&b, &nr) || !get(&b, &flags, 1) || !get_i64(&b, &numel) || nr < 0 || flags > 7) {
            s = lithe__fail(LITHE_ERR_FORMAT, "optimizer state: entry %u (%s) is truncated or malformed", c, name);
            break;
        }
        if (k >= nn) {
            s = lithe__fail(LITHE_ERR_VALUE, "optimizer state: entry %s names node %u, the model has %zu nodes", name, k, nn);
            break;
        }
        lithe__param *p = lithe__model_find_param(nodes[k], name);
        if (!p || !p->value) {
            s = lithe__fail(LITHE_ERR_VALUE, "optimizer state: node %u (%s) has no initialized param '%s'", k,
                            nodes[k]->name, name);
            break;
        }
        if (flags && numel != p->value->numel) {
            s = lithe__fail(LITHE_ERR_SHAPE, "optimizer state: %s.%s holds %lld values, the param has %lld",
                            nodes[k]->name, name, (long long)numel, (long long)p->value->numel);
            break;
        }
        if (find_slot(tmp, nodes[k]->id, name)) { /* a second entry would leak the first's tensors */
            s = lithe__fail(LITHE_ERR_FORMAT, "optimizer state: entry %u repeats %s.%s (node %u): one entry per param",
                            c, nodes[k]->name, name, k);
            break;
        }
        opt_slot *sl = NULL;
        s = get_slot(tmp, nodes[k]->id, name, &sl);
        if (s != LITHE_OK) break;
        sl->nr_update = nr;
        if (flags & 1) s = get_tensor(&b, p->value, &sl->mom1);
        if (s == LITHE_OK && (flags & 2)) s = get_tensor(&b, p->value, &sl->mom2);
        if (s == LITHE_OK && (flags & 4)) s = get_tensor(&b, p->value, &sl->avg);
    }
    if (s == LITHE_OK && b.at != b.n)
        s = lithe__fail(LITHE_ERR_FORMAT, "optimizer state: %zu trailing bytes", b.n - b.at);
    lithe__free(nodes);
    if (s != LITHE_OK) {
        lithe_optimizer_free(tmp);
        return s;
    }
    /* swap the parsed slots in */
    opt_slot *old = opt->slots;
    size_t old_n = opt->n;
    opt->slots = tmp->slots;
    opt->n = tmp->n;
    opt->cap = tmp->cap;
    tmp->slots = old;
    tmp->n = old_n;
    lithe_optimizer_free(tmp);
    return LITHE_OK;
}
