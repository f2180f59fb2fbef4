/* Thinc 8.1's schedules (thinc/schedules.py) as stateful generators: each lithe_schedule_next is
 * one next() of Thinc's generator, with Thinc's arithmetic in double. */
#include "../internal.h"

#include <math.h>

typedef enum {
    S_CONSTANT,
    S_CONSTANT_THEN,
    S_DECAYING,
    S_COMPOUNDING,
    S_WARMUP_LINEAR,
    S_SLANTED_TRIANGULAR,
    S_CYCLIC_TRIANGULAR,
    S_PLATEAU
} sched_kind;

struct lithe_schedule {
    sched_kind kind;
    double a, b, c, d; /* the parameters, per kind */
    double t;          /* the generator's counter / running value */
    int64_t n1, n2;
    lithe_schedule *then; /* constant_then, plateau: the wrapped schedule, owned */
    /* plateau: the best score, the evaluation step it was seen at, the patience used, hits */
    double best;
    int64_t best_step, last_step, patience, hits;
};

static lithe_status sched_new(sched_kind kind, lithe_schedule **out) {
    LITHE__CHECK_ARG(out, "lithe_schedule", "out is NULL");
    *out = lithe__calloc(1, sizeof **out);
    if (!*out) return lithe__oom("schedule", sizeof **out);
    (*out)->kind = kind;
    return LITHE_OK;
}

void lithe_schedule_free(lithe_schedule *s) {
    if (!s) return;
    lithe_schedule_free(s->then);
    lithe__free(s);
}

lithe_status lithe_schedule_constant(double rate, lithe_schedule **out) {
    LITHE__TRY(sched_new(S_CONSTANT, out));
    (*out)->a = rate;
    return LITHE_OK;
}

lithe_status lithe_schedule_constant_then(double rate, int64_t steps, lithe_schedule *then, lithe_schedule **out) {
    if (out) *out = NULL;
    if (!then || steps < 0) {
        lithe_schedule_free(then);
        return lithe__fail(then ? LITHE_ERR_VALUE : LITHE_ERR_INVALID_ARG,
                           "constant_then: %s", then ? "steps must be >= 0" : "the schedule after is NULL");
    }
    lithe_status s = sched_new(S_CONSTANT_THEN, out);
    if (s != LITHE_OK) {
        lithe_schedule_free(then);
        return s;
    }
    (*out)->a = rate;
    (*out)->n1 = steps;
    (*out)->then = then;
    return LITHE_OK;
}

lithe_status lithe_schedule_decaying(double base_rate, double decay, double t, lithe_schedule **out) {
    LITHE__TRY(sched_new(S_DECAYING, out));
    (*out)->a = base_rate;
    (*out)->b = decay;
    (*out)->t = t;
    return LITHE_OK;
}

lithe_status lithe_schedule_compounding(double start, double stop, double compound, lithe_schedule **out) {
    LITHE__TRY(sched_new(S_COMPOUNDING, out));
    (*out)->a = start;
    (*out)->b = stop;
    (*out)->c = compound;
    (*out)->t = start; /* curr */
    return LITHE_OK;
}

lithe_status lithe_schedule_warmup_linear(double initial_rate, int64_t warmup_steps, int64_t total_steps,
                                          lithe_schedule **out) {
    if (out) *out = NULL;
    if (warmup_steps < 0 || total_steps < 0)
        return lithe__fail(LITHE_ERR_VALUE, "warmup_linear: steps must be >= 0 (warmup %lld, total %lld)",
                           (long long)warmup_steps, (long long)total_steps);
    LITHE__TRY(sched_new(S_WARMUP_LINEAR, out));
    (*out)->a = initial_rate;
    (*out)->n1 = warmup_steps;
    (*out)->n2 = total_steps;
    return LITHE_OK;
}

lithe_status lithe_schedule_slanted_triangular(double max_rate, int64_t num_steps, double cut_frac, double ratio,
                                               double t, lithe_schedule **out) {
    if (out) *out = NULL;
    int64_t cut = (int64_t)((double)num_steps * cut_frac); /* Python's int() truncates */
    if (cut <= 0 || !(cut_frac < 1.0) || !(ratio > 0.0))
        return lithe__fail(LITHE_ERR_VALUE,
                           "slanted_triangular: int(num_steps * cut_frac) must be >= 1, cut_frac < 1 and ratio > 0 "
                           "(num_steps %lld, cut_frac %g, ratio %g; Thinc divides by zero otherwise)",
                           (long long)num_steps, cut_frac, ratio);
    LITHE__TRY(sched_new(S_SLANTED_TRIANGULAR, out));
    (*out)->a = max_rate;
    (*out)->b = cut_frac;
    (*out)->c = ratio;
    (*out)->n1 = cut;
    (*out)->t = t;
    return LITHE_OK;
}

lithe_status lithe_schedule_cyclic_triangular(double min_lr, double max_lr, int64_t period, lithe_schedule **out) {
    if (out) *out = NULL;
    if (period <= 0) return lithe__fail(LITHE_ERR_VALUE, "cyclic_triangular: period must be >= 1, got %lld", (long long)period);
    LITHE__TRY(sched_new(S_CYCLIC_TRIANGULAR, out));
    (*out)->a = min_lr;
    (*out)->b = max_lr;
    (*out)->n1 = period;
    (*out)->t = 1; /* it */
    return LITHE_OK;
}

lithe_status lithe_schedule_plateau(int64_t max_patience, double scale, lithe_schedule *inner, lithe_schedule **out) {
    if (out) *out = NULL;
    if (!inner || max_patience < 1 || !(scale > 0.0)) {
        lithe_schedule_free(inner);
        return lithe__fail(inner ? LITHE_ERR_VALUE : LITHE_ERR_INVALID_ARG, "plateau: %s",
                           inner ? "max_patience must be >= 1 and scale > 0" : "the wrapped schedule is NULL");
    }
    lithe_status s = sched_new(S_PLATEAU, out);
    if (s != LITHE_OK) {
        lithe_schedule_free(inner);
        return s;
    }
    (*out)->n1 = max_patience;
    (*out)->a = scale;
    (*out)->then = inner;
    (*out)->best = -INFINITY;
    (*out)->best_step = (*out)->last_step = -1;
    return LITHE_OK;
}

lithe_status lithe_schedule_report_score(lithe_schedule *s, int64_t step, double score) {
    LITHE__CHECK_ARG(s, "lithe_schedule_report_score", "schedule is NULL");
    if (s->kind != S_PLATEAU) return LITHE_OK; /* only plateau listens */
    if (step == s->last_step) return LITHE_OK; /* the same evaluation reported again */
    s->last_step = step;
    if (score > s->best) {
        s->best = score;
        s->best_step = step;
        s->patience = 0;
    } else if (++s->patience >= s->n1) {
        s->hits++;
        s->patience = 0;
    }
    return LITHE_OK;
}

double lithe_schedule_next(lithe_schedule *s) {
    if (!s) return NAN;
    double v = 0.0;
    switch (s->kind) {
    case S_CONSTANT: return s->a;
    case S_CONSTANT_THEN:
        if (s->n2 < s->n1) {
            s->n2++;
            return s->a;
        }
        return lithe_schedule_next(s->then);
    case S_DECAYING:
        v = s->a * (1.0 / (1.0 + s->b * s->t));
        s->t += 1;
        return v;
    case S_COMPOUNDING: {
        double curr = s->t;
        /* Thinc's _clip: max(value, stop) when start > stop, else min(value, stop) */
        v = s->a > s->b ? fmax(curr, s->b) : fmin(curr, s->b);
        s->t = curr * s->c;
        return v;
    }
    case S_WARMUP_LINEAR: {
        int64_t step = s->n1 >= 0 ? (int64_t)s->t : 0;
        double factor;
        if (step < s->n1) factor = (double)step / (double)(s->n1 > 1 ? s->n1 : 1);
        else {
            double denom = (double)(s->n2 - s->n1);
            factor = fmax(0.0, (double)(s->n2 - step) / fmax(1.0, denom));
        }
        s->t += 1;
        return factor * s->a;
    }
    case S_SLANTED_TRIANGULAR: {
        s->t += 1;
        double cut = (double)s->n1, p;
        if (s->t < cut) p = s->t / cut;
        else p = 1.0 - ((s->t - cut) / (cut * (1.0 / s->b - 1.0)));
        return s->a * (1.0 + p * (s->c - 1.0)) * (1.0 / s->c);
    }
    case S_PLATEAU:
        return lithe_schedule_next(s->then) * pow(s->a, (double)s->hits);
    case S_CYCLIC_TRIANGULAR: {
        double it = s->t, period = (double)s->n1;
        double cycle = floor(1.0 + it / (2.0 * period));
        double x = fabs(it / period - 2.0 * cycle + 1.0);
        double relative = fmax(0.0, 1.0 - x);
        s->t += 1;
        return s->a + (s->b - s->a) * relative;
    }
    }
    return NAN;
}
