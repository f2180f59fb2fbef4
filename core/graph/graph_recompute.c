/* Recomputation by segment for the graph layer (issue 26 item 3): the bool attr "recompute" (as
 * chain's) and the int attr "recompute_segments" (0 or absent: chosen). A training forward with a
 * backward to follow splits the nodes (file order, a topological one) into k contiguous segments and
 * keeps only the values that cross a segment boundary (made in one segment, read in a later one),
 * besides the inputs, the weights and the outputs; every other value goes back to the plan's pool
 * at its last read, as in a forward without backward. The backward runs segment by segment, last
 * first: the segment's forward again from the values it reads (the kept ones), then its nodes'
 * backwards, then its values go. The ops run exactly as in a forward that keeps everything (the
 * same kernels, the same inputs, and an imported graph has no random op: Dropout is the identity),
 * so the gradients are bit-identical to a step without recomputation.
 *
 * The segments are cut by bytes: the plan's first recomputing forward runs the graph once more
 * beforehand, keeping nothing, to measure what each node makes (its outputs and what it keeps for
 * its backward); then, for each k, the cuts that give each segment about 1/k of the bytes, and the
 * k whose estimate (the crossing values plus the largest segment) is least. Per input signature:
 * the record lives in the plan. */
#include "graph.h"

#include <string.h>

struct lithe__grc {
    bool measured;
    int64_t asked;          /* the recompute_segments the cuts were made for */
    bool by_rows;           /* and whether recompute_rows was set */
    size_t n_seg;
    size_t *seg_start;      /* n_seg + 1 node indices (n_nodes last) */
    size_t *node_seg;       /* n_nodes */
    size_t *node_bytes;     /* n_nodes: outputs and saved tensors, measured */
    size_t *slot_bytes;     /* n_slots */
    int64_t *prod;          /* n_slots: the node making it, -1: none */
    bool *keep;             /* n_slots: a computed value crossing a boundary */
    size_t *made;           /* n_nodes + 1: make_cuts' scratch */
};

void lithe__grecompute_free(struct lithe__grc *rc) {
    if (!rc) return;
    lithe__free(rc->seg_start);
    lithe__free(rc->node_seg);
    lithe__free(rc->node_bytes);
    lithe__free(rc->slot_bytes);
    lithe__free(rc->prod);
    lithe__free(rc->keep);
    lithe__free(rc->made);
    lithe__free(rc);
}

static const lithe__attr *find_attr(const lithe_model *m, const char *name, lithe_attr_type t) {
    for (size_t i = 0; i < m->n_attrs; i++)
        if (m->attrs[i].type == t && !strcmp(m->attrs[i].name, name)) return &m->attrs[i];
    return NULL;
}

bool lithe__grecompute_on(const lithe_model *m) {
    const lithe__attr *a = find_attr(m, "recompute", LITHE_ATTR_BOOL);
    return a && a->v.b;
}

static size_t tbytes(const lithe_tensor *t) { return t && t->storage ? t->storage->nbytes : 0; }

/* After node i of a recomputing forward: what it kept for backward, and the values it was the last
 * to read that are neither kept across a boundary nor owned elsewhere (inputs, weights, constants,
 * values the plan fixed), go back to the pool. measuring: no value is kept. */
static void release_after(lithe__gexec *x, const struct lithe__grc *rc, size_t i, bool measuring) {
    const lithe__graph *g = x->g;
    for (size_t k = 0; k < 2; k++) {
        lithe_tensor_release(x->saved[2 * i + k]);
        x->saved[2 * i + k] = NULL;
    }
    for (size_t k = 0; k < g->node_nin[i] + g->node_nout[i]; k++) {
        int64_t sl = k < g->node_nin[i] ? g->node_in[i][k] : g->node_out[i][k - g->node_nin[i]];
        if (sl < 0 || g->last_use[sl] != (int64_t)i || g->slot_kind[sl] != SLOT_COMPUTED || x->plan->cached[sl]) continue;
        if (!measuring && rc->keep[sl]) continue;
        lithe_tensor_release(x->vals[sl]);
        x->vals[sl] = NULL;
    }
}

/* Marks the values crossing the cuts now in rc->seg_start. */
static void mark_keep(const lithe__graph *g, struct lithe__grc *rc) {
    for (size_t j = 0; j < rc->n_seg; j++)
        for (size_t i = rc->seg_start[j]; i < rc->seg_start[j + 1]; i++) rc->node_seg[i] = j;
    for (size_t s = 0; s < g->n_slots; s++)
        rc->keep[s] = rc->prod[s] >= 0 && g->last_use[s] >= 0 && rc->node_seg[rc->prod[s]] < rc->node_seg[g->last_use[s]];
}

/* Cuts for a budget P (bytes): from each segment's start a, the segment grows while the crossing
 * values made before it, its own bytes and a wave of gradients (its largest value once more: an
 * activation's backward writes dZ over dY, ops/fused.c) fit in P;
 * it ends where the values it hands on (made in it, read after) are fewest, the furthest such
 * place: at a block's narrow output rather than inside its wide expansion. made[] is scratch
 * (n + 1). The most the estimate reached. */
static size_t cut_budget(const lithe__graph *g, struct lithe__grc *rc, size_t P, size_t *made) {
    size_t n = g->onnx.n_nodes, a = 0, held = 0, worst = 0, seg = 0;
    rc->seg_start[0] = 0;
    while (a < n) {
        size_t own = 0, big = 0, e = a; /* the segment [a, e) */
        while (e < n) {
            size_t b = rc->node_bytes[e], mx = 0;
            for (size_t q = 0; q < g->node_nout[e]; q++)
                if (g->node_out[e][q] >= 0 && rc->slot_bytes[g->node_out[e][q]] > mx) mx = rc->slot_bytes[g->node_out[e][q]];
            size_t nbig = mx > big ? mx : big;
            if (e > a && held + own + b + nbig > P) break;
            own += b, big = nbig, e++;
        }
        /* made[c]: the bytes of the values made in [a, c) and read at c or later */
        for (size_t c = a; c <= e; c++) made[c] = 0;
        for (size_t s = 0; s < g->n_slots; s++) {
            int64_t pr = rc->prod[s], lu = g->last_use[s];
            if (pr < (int64_t)a || pr >= (int64_t)e || lu < 0) continue;
            for (int64_t c = pr + 1; c <= lu && c <= (int64_t)e; c++) made[c] += rc->slot_bytes[s];
        }
        size_t c = e;
        if (e < n)
            for (size_t k = e; k > a; k--)
                if (made[k] < made[c]) c = k;
        size_t own_c = 0, big_c = 0;
        for (size_t i = a; i < c; i++) {
            own_c += rc->node_bytes[i];
            for (size_t q = 0; q < g->node_nout[i]; q++)
                if (g->node_out[i][q] >= 0 && rc->slot_bytes[g->node_out[i][q]] > big_c) big_c = rc->slot_bytes[g->node_out[i][q]];
        }
        if (held + own_c + big_c > worst) worst = held + own_c + big_c;
        held += c < n ? made[c] : 0;
        rc->seg_start[++seg] = c;
        a = c;
    }
    rc->n_seg = seg;
    return worst > held ? worst : held;
}

/* recompute_segments k > 0: k segments of about equal bytes; else the least budget whose cuts keep
 * within it (a binary search over cut_budget). */
/* By rows (recompute_rows): a cut too where the nodes turn from row-wise ops to others or back (a
 * MobileNet's head, GlobalAveragePool and Gemm, after its body), so the segment before runs by rows
 * (graph_rows.c) rather than whole with the head's few nodes. */
static void split_rows(const lithe__graph *g, struct lithe__grc *rc) {
    size_t n = g->onnx.n_nodes, *st = rc->made, ns = 0; /* made[]: n + 2 entries, scratch here */
    int prev = -1;
    for (size_t j = 0; j < rc->n_seg; j++) {
        st[ns++] = rc->seg_start[j];
        prev = -1;
        for (size_t i = rc->seg_start[j]; i < rc->seg_start[j + 1]; i++) {
            if (lithe__gnode_skipped(g, i)) continue;
            int r = lithe__graph_row_op(g->node_op[i]->op_type);
            if (prev >= 0 && r != prev && i > st[ns - 1] && ns < n) st[ns++] = i;
            prev = r;
        }
    }
    for (size_t j = 0; j < ns; j++) rc->seg_start[j] = st[j];
    rc->n_seg = ns;
    rc->seg_start[ns] = n;
}

static void make_cuts(const lithe__graph *g, struct lithe__grc *rc, int64_t asked, bool by_rows, size_t *made) {
    size_t n = g->onnx.n_nodes, total = 0;
    for (size_t i = 0; i < n; i++) total += rc->node_bytes[i];
    if (asked > 0) {
        size_t k = (size_t)asked, target = total / k + 1, acc = 0, seg = 0;
        for (size_t i = 0; i < n; i++) {
            acc += rc->node_bytes[i];
            if (acc >= target && seg + 1 < k && i + 1 < n) rc->seg_start[++seg] = i + 1, acc = 0;
        }
        rc->n_seg = seg + 1;
        rc->seg_start[rc->n_seg] = n;
    } else {
        size_t lo = 0, hi = 3 * total + 1; /* cut_budget(hi) fits: one segment */
        while (lo + 1 < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (cut_budget(g, rc, mid, made) <= mid) hi = mid;
            else lo = mid;
        }
        cut_budget(g, rc, hi, made);
    }
    if (by_rows) split_rows(g, rc);
    mark_keep(g, rc);
    rc->asked = asked;
    rc->by_rows = by_rows;
}

static lithe_status rc_for(lithe__gexec *x, struct lithe__grc **out) {
    lithe__gplan *p = x->plan;
    const lithe__graph *g = x->g;
    if (!p->rc) {
        struct lithe__grc *rc = lithe__calloc(1, sizeof *rc);
        size_t n = g->onnx.n_nodes, ns = g->n_slots;
        if (rc) {
            rc->seg_start = lithe__calloc(n + 2, sizeof *rc->seg_start);
            rc->node_seg = lithe__calloc(n + 1, sizeof *rc->node_seg);
            rc->node_bytes = lithe__calloc(n + 1, sizeof *rc->node_bytes);
            rc->slot_bytes = lithe__calloc(ns + 1, sizeof *rc->slot_bytes);
            rc->prod = lithe__calloc(ns + 1, sizeof *rc->prod);
            rc->keep = lithe__calloc(ns + 1, sizeof *rc->keep);
            rc->made = lithe__calloc(n + 2, sizeof *rc->made);
        }
        if (!rc || !rc->seg_start || !rc->node_seg || !rc->node_bytes || !rc->slot_bytes || !rc->prod || !rc->keep || !rc->made) {
            lithe__grecompute_free(rc);
            return lithe__oom(x->m->name, (n + ns) * 5 * sizeof(size_t));
        }
        for (size_t s = 0; s < ns; s++) rc->prod[s] = -1;
        for (size_t i = 0; i < n; i++)
            for (size_t k = 0; k < g->node_nout[i]; k++)
                if (g->node_out[i][k] >= 0) rc->prod[g->node_out[i][k]] = (int64_t)i;
        p->rc = rc;
    }
    *out = p->rc;
    return LITHE_OK;
}

/* The pool's idle blocks back to the backend, and the backend's cached ones to the allocator: between
 * segments, whose sizes differ, so the pool holds one segment's blocks, not every size's most. */
static void trim(lithe__gexec *x) {
    lithe__bufpool_trim(x->pool);
    if (x->be->desc && x->be->desc->cache_flush) x->be->desc->cache_flush();
}

/* The nodes in order, releasing as release_after says; measuring: the bytes each node makes. */
static lithe_status run_all(lithe__gexec *x, struct lithe__grc *rc, bool recording, bool measuring) {
    const lithe__graph *g = x->g;
    for (size_t i = 0; i < g->onnx.n_nodes; i++) {
        if (!measuring && i && rc->node_seg[i] != rc->node_seg[i - 1]) trim(x);
        if (lithe__gnode_skipped(g, i)) continue;
        bool needs = false;
        LITHE__TRY(lithe__gexec_forward_node(x, i, recording, &needs));
        if (measuring) {
            size_t b = tbytes(x->saved[2 * i]) + tbytes(x->saved[2 * i + 1]);
            for (size_t k = 0; k < g->node_nout[i]; k++) {
                int64_t o = g->node_out[i][k];
                if (o < 0 || !x->vals[o] || x->plan->cached[o]) continue;
                rc->slot_bytes[o] = tbytes(x->vals[o]);
                b += rc->slot_bytes[o];
            }
            rc->node_bytes[i] = b;
        }
        release_after(x, rc, i, measuring);
        /* measuring keeps nothing: each node's idle blocks go at once, so this once-per-signature
         * run peaks at one node's values, not at every size's block */
        if (measuring) trim(x);
    }
    return LITHE_OK;
}

lithe_status lithe__grecompute_forward(lithe__gexec *x, bool recording) {
    struct lithe__grc *rc = NULL;
    LITHE__TRY(rc_for(x, &rc));
    if (!rc->measured) { /* once per signature: a forward keeping nothing, measuring */
        LITHE__TRY(run_all(x, rc, recording, true));
        rc->measured = true;
        recording = false; /* recorded by that run */
    }
    const lithe__attr *a = find_attr(x->m, "recompute_segments", LITHE_ATTR_INT);
    int64_t asked = a && a->v.i > 0 ? a->v.i : 0;
    const lithe__attr *ra = find_attr(x->m, "recompute_rows", LITHE_ATTR_INT);
    bool by_rows = ra && ra->v.i > 0;
    if (!rc->n_seg || rc->asked != asked || rc->by_rows != by_rows) make_cuts(x->g, rc, asked, by_rows, rc->made);
    return run_all(x, rc, recording, false);
}

/* Nodes [lo, hi) forward again (recomputing: nothing they make is kept for a later backward), then
 * their backwards, last node first. Also graph_rows.c's, over views of some rows. */
lithe_status lithe__grecompute_segment(lithe__gexec *x, size_t lo, size_t hi) {
    const lithe__graph *g = x->g;
    lithe_status s = LITHE_OK;
    x->recomputing = true;
    for (size_t i = lo; s == LITHE_OK && i < hi; i++) {
        if (lithe__gnode_skipped(g, i)) continue;
        bool needs = false;
        s = lithe__gexec_forward_node(x, i, false, &needs);
    }
    x->recomputing = false;
    for (size_t i = hi; s == LITHE_OK && i-- > lo;) s = lithe__gexec_backward_node(x, i);
    return s;
}

lithe_status lithe__grecompute_backward(lithe__gexec *x) {
    const lithe__graph *g = x->g;
    const struct lithe__grc *rc = x->plan->rc;
    if (!rc) return lithe__fail(LITHE_ERR_INTERNAL, "%s: a recomputing backward without segments", x->m->name);
    const lithe__attr *ra = find_attr(x->m, "recompute_rows", LITHE_ATTR_INT);
    int64_t rows = ra && ra->v.i > 0 ? ra->v.i : 0;
    for (size_t j = rc->n_seg; j-- > 0;) {
        size_t lo = rc->seg_start[j], hi = rc->seg_start[j + 1];
        bool wanted = false; /* a gradient is wanted of something this segment reads */
        for (size_t i = lo; i < hi && !wanted; i++) {
            if (lithe__gnode_skipped(g, i) || !g->node_op[i]->backward) continue;
            for (size_t k = 0; k < g->node_nin[i] && !wanted; k++) wanted = g->node_in[i][k] >= 0 && x->needs[g->node_in[i][k]];
        }
        lithe_status s = LITHE_OK;
        /* the blocks of the forward and of the segment after this one are of other sizes: back to
         * the allocator, so the pool holds one segment's, not the sum over sizes */
        trim(x);
        bool done = false;
        if (wanted) s = lithe__grecompute_rows(x, rc->prod, lo, hi, rows, &done);
        if (wanted && !done && s == LITHE_OK) s = lithe__grecompute_segment(x, lo, hi);
        /* the segment is done: what it made and kept goes (later segments are done too) */
        for (size_t i = lo; i < hi; i++) {
            for (size_t k = 0; k < 2; k++) {
                lithe_tensor_release(x->saved[2 * i + k]);
                x->saved[2 * i + k] = NULL;
            }
            for (size_t k = 0; k < g->node_nout[i]; k++) {
                int64_t o = g->node_out[i][k];
                if (o < 0 || g->last_use[o] < 0 || g->slot_kind[o] != SLOT_COMPUTED) continue;
                lithe_tensor_release(x->vals[o]);
                x->vals[o] = NULL;
            }
        }
        LITHE__TRY(s);
    }
    return LITHE_OK;
}
