/* The graph layer's run plans (one per input signature: the values fixed by the input shapes,
 * cached after the first run, and the buffer pool) and its op-level profiler. */
#include "graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LAYER "onnx_graph"

/* ---- the op-level profiler (LITHE_GRAPH_PROFILE) ---- */

double lithe__graph_prof_now(void) {
#ifdef TIME_UTC
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
#else
    return 0.0;
#endif
}

void lithe__graph_prof_add(lithe__graph *g, size_t row, double dt) {
    g->prof_sum[row] += dt;
    g->prof_min[row] = g->prof_n[row]++ ? (dt < g->prof_min[row] ? dt : g->prof_min[row]) : dt;
}

/* Row r's label: its node's op type, "bwd:" before it for a backward row */
static const char *prof_op(const lithe__graph *g, size_t r, char *buf, size_t cap) {
    size_t n = g->onnx.n_nodes;
    snprintf(buf, cap, "%s%s", r < n ? "" : "bwd:", g->node_op[r % n]->op_type);
    return buf;
}

/* The table: one row per node forward or backward that ran (sorted by total time), then the
 * totals per op type. */
void lithe__graph_prof_print(const lithe__graph *g) {
    size_t n = g->onnx.n_nodes, *ord = lithe__calloc(2 * n + 1, sizeof *ord);
    if (!ord) return;
    double total = 0.0;
    size_t k = 0;
    for (size_t i = 0; i < 2 * n; i++)
        if (g->prof_n[i]) {
            ord[k++] = i;
            total += g->prof_sum[i];
        }
    for (size_t a = 1; a < k; a++) /* insertion sort, largest total first */
        for (size_t b = a; b > 0 && g->prof_sum[ord[b]] > g->prof_sum[ord[b - 1]]; b--) {
            size_t t = ord[b];
            ord[b] = ord[b - 1];
            ord[b - 1] = t;
        }
    uint64_t runs = 0;
    for (size_t a = 0; a < k; a++) runs = g->prof_n[ord[a]] > runs ? g->prof_n[ord[a]] : runs;
    fprintf(stderr, "lithe graph profile: %zu node passes ran (of %zu nodes), %llu runs, %.1f us per run in the nodes\n",
            k, n, (unsigned long long)runs, runs ? 1e6 * total / (double)runs : 0.0);
    fprintf(stderr, "%6s %-26s %10s %10s %6s  %s\n", "node", "op", "mean_us", "min_us", "share", "name");
    char t1[96], t2[96];
    for (size_t a = 0; a < k; a++) {
        size_t i = ord[a];
        fprintf(stderr, "%6zu %-26s %10.2f %10.2f %5.1f%%  %s\n", i % n, prof_op(g, i, t1, sizeof t1),
                1e6 * g->prof_sum[i] / (double)g->prof_n[i], 1e6 * g->prof_min[i], 100.0 * g->prof_sum[i] / total,
                g->onnx.nodes[i % n].name ? g->onnx.nodes[i % n].name : "");
    }
    fprintf(stderr, "%-26s %6s %12s %12s %6s\n", "op type", "nodes", "us_per_run", "min_us_sum", "share");
    for (size_t a = 0; a < k; a++) { /* each op type once, at its first (largest) node */
        const char *t = prof_op(g, ord[a], t1, sizeof t1);
        bool seen = false;
        for (size_t b = 0; b < a && !seen; b++) seen = !strcmp(prof_op(g, ord[b], t2, sizeof t2), t);
        if (seen) continue;
        double sum = 0.0, mins = 0.0;
        size_t cnt = 0;
        for (size_t b = a; b < k; b++)
            if (!strcmp(prof_op(g, ord[b], t2, sizeof t2), t)) {
                sum += g->prof_sum[ord[b]];
                mins += g->prof_min[ord[b]];
                cnt++;
            }
        fprintf(stderr, "%-26s %6zu %12.2f %12.2f %5.1f%%\n", t, cnt, runs ? 1e6 * sum / (double)runs : 0.0, 1e6 * mins,
                100.0 * sum / total);
    }
    lithe__free(ord);
}

void lithe__gplan_unref(lithe__gplan *p) {
    if (!p || --p->refs > 0) return;
    for (size_t i = 0; p->vals && i < p->n_slots; i++) lithe_tensor_release(p->vals[i]);
    lithe__bufpool_close(p->pool);
    lithe__grecompute_free(p->rc);
    lithe__free(p->spare);
    lithe__free(p->vals);
    lithe__free(p->cached);
    lithe__free(p->shape_varies);
    lithe__free(p->dtype);
    lithe__free(p->ndim);
    lithe__free(p->shape);
    lithe__free(p);
}

/* The plan for this run's inputs (each input's dtype and shape, and the backend): found in the
 * graph's cache, or made (evicting the least recently used one when the cache is full). */
lithe_status lithe__gplan_for(lithe__graph *g, lithe_backend *be, lithe_tensor *const *ts, lithe__gplan **out) {
    *out = NULL;
    for (size_t i = 0; i < LITHE__GRAPH_PLANS; i++) {
        lithe__gplan *p = g->plans[i];
        bool same = p && p->be == be;
        for (size_t k = 0; same && k < g->n_in; k++) {
            same = p->dtype[k] == ts[k]->dtype && p->ndim[k] == ts[k]->ndim;
            for (int d = 0; same && d < ts[k]->ndim; d++) same = p->shape[k * LITHE_MAX_DIMS + d] == ts[k]->shape[d];
        }
        if (same) {
            p->last_used = ++g->tick;
            *out = p;
            return LITHE_OK;
        }
    }
    lithe__gplan *p = lithe__calloc(1, sizeof *p);
    if (!p) return lithe__oom(LAYER, sizeof *p);
    p->refs = 1;
    p->be = be;
    p->n_in = g->n_in;
    p->n_slots = g->n_slots;
    p->dtype = lithe__calloc(g->n_in, sizeof *p->dtype);
    p->ndim = lithe__calloc(g->n_in, sizeof *p->ndim);
    p->shape = lithe__calloc(g->n_in * LITHE_MAX_DIMS, sizeof *p->shape);
    p->cached = lithe__calloc(g->n_slots + 1, sizeof *p->cached);
    p->shape_varies = lithe__calloc(g->n_slots + 1, sizeof *p->shape_varies);
    p->vals = lithe__calloc(g->n_slots + 1, sizeof *p->vals);
    lithe_status s = p->dtype && p->ndim && p->shape && p->cached && p->shape_varies && p->vals
                         ? lithe__bufpool_new(&p->pool) : lithe__oom(LAYER, g->n_slots * 10);
    if (s != LITHE_OK) {
        lithe__gplan_unref(p);
        return s;
    }
    for (size_t k = 0; k < g->n_in; k++) {
        p->dtype[k] = ts[k]->dtype;
        p->ndim[k] = ts[k]->ndim;
        for (int d = 0; d < ts[k]->ndim; d++) p->shape[k * LITHE_MAX_DIMS + d] = ts[k]->shape[d];
    }
    size_t victim = 0;
    for (size_t i = 0; i < LITHE__GRAPH_PLANS; i++) {
        if (!g->plans[i]) {
            victim = i;
            break;
        }
        if (g->plans[i]->last_used < g->plans[victim]->last_used) victim = i;
    }
    lithe__gplan_unref(g->plans[victim]); /* runs still using it keep it alive */
    g->plans[victim] = p;
    p->last_used = ++g->tick;
    *out = p;
    return LITHE_OK;
}

/* Whether node i's outputs are all values the plan already holds. */
bool lithe__gplan_cached(const lithe__graph *g, const lithe__gplan *p, size_t i) {
    if (!p->recorded) return false;
    for (size_t k = 0; k < g->node_nout[i]; k++)
        if (g->node_out[i][k] >= 0 && !p->cached[g->node_out[i][k]]) return false;
    return true;
}

/* In the plan's first run, after node i: which of its outputs depend on the input shapes only.
 * Those are kept (a copy) in the plan. A value is fixed for the signature when it is a constant or computed from fixed values only, or
 * when it is a Shape of a value whose shape is fixed. A shape may vary between runs of one
 * signature when it follows from the values of a non-fixed integer tensor (a Reshape target, Slice
 * bounds computed from data), so a Shape of such a value is not fixed. Graph outputs are never
 * held: the caller owns what it gets. */
lithe_status lithe__gplan_record(lithe__gexec *x, lithe__gplan *p, size_t i) {
    const lithe__graph *g = x->g;
    const lithe__onnx_node *n = &g->onnx.nodes[i];
    bool all_fixed = g->node_nin[i] > 0, varies = false;
    for (size_t k = 0; k < g->node_nin[i]; k++) {
        int64_t sl = g->node_in[i][k];
        if (sl < 0) continue;
        bool fixed = g->slot_kind[sl] == SLOT_CONST || p->cached[sl];
        all_fixed = all_fixed && fixed;
        varies = varies || p->shape_varies[sl] || (x->vals[sl] && x->vals[sl]->dtype != LITHE_F32 && !fixed);
    }
    bool keep = !strcmp(n->op_type, "Shape") ? g->node_nin[i] > 0 && g->node_in[i][0] >= 0 &&
                                                   !p->shape_varies[g->node_in[i][0]]
                                             : all_fixed;
    for (size_t k = 0; k < g->node_nout[i]; k++)
        if (g->node_out[i][k] >= 0 && g->last_use[g->node_out[i][k]] < 0) keep = false;
    for (size_t k = 0; k < g->node_nout[i]; k++) {
        int64_t o = g->node_out[i][k];
        if (o < 0) continue;
        p->shape_varies[o] = varies;
        if (!keep || !x->vals[o]) continue;
        /* the plan keeps a copy outside the pool: the run's own block goes back to the pool, so
         * the next run (which skips this node) finds the blocks this one used */
        lithe_tensor *v = x->vals[o], *c = NULL;
        LITHE__TRY(lithe__tensor_alloc(v->storage->backend, v->dtype, v->ndim, v->shape, false, &c));
        lithe_status s = lithe__op_copy(v->storage->backend, c, v);
        if (s != LITHE_OK) {
            lithe_tensor_release(c);
            return s;
        }
        p->cached[o] = true;
        p->vals[o] = c;
    }
    return LITHE_OK;
}

/* A failed first run leaves no half-recorded plan behind. */
void lithe__gplan_forget(lithe__gplan *p) {
    for (size_t i = 0; i < p->n_slots; i++) {
        lithe_tensor_release(p->vals[i]);
        p->vals[i] = NULL;
        p->cached[i] = p->shape_varies[i] = false;
    }
}

/* A run without backward, after node i: what the node kept for backward, and the values it was
 * the last to read, go back to the pool now, so later nodes take the same blocks (the peak is the
 * values live at once, not all of them). */
void lithe__gexec_release_after(lithe__gexec *x, size_t i) {
    const lithe__graph *g = x->g;
    for (size_t k = 0; k < 2; k++) {
        lithe_tensor_release(x->saved[2 * i + k]);
        x->saved[2 * i + k] = NULL;
    }
    for (size_t k = 0; k < g->node_nin[i] + g->node_nout[i]; k++) { /* outputs: a value no node reads */
        int64_t sl = k < g->node_nin[i] ? g->node_in[i][k] : g->node_out[i][k - g->node_nin[i]];
        if (sl >= 0 && g->last_use[sl] == (int64_t)i) {
            lithe_tensor_release(x->vals[sl]);
            x->vals[sl] = NULL;
        }
    }
}


void lithe__graph_trim_pools(lithe_model *m) {
    for (size_t i = 0; m && i < m->n_shims; i++) {
        if (!m->shims[i] || !m->shims[i]->type || strcmp(m->shims[i]->type->name, "onnx")) continue;
        lithe__graph *g = m->shims[i]->state;
        for (size_t k = 0; g && k < LITHE__GRAPH_PLANS; k++)
            if (g->plans[k]) lithe__bufpool_trim(g->plans[k]->pool);
    }
}
