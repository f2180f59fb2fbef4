/* Recomputation by rows (issue 26): the int attr "recompute_rows" r > 0 on a recomputing graph layer
 * (attr "recompute") runs each segment's backward — its forward again, then its nodes' backwards — on
 * r rows of the batch at a time, when every node of the segment treats the rows of its batch
 * independently (the convolutions, their fused forms and the elementwise activations: a MobileNet's
 * body; eval-mode BatchNormalization is already folded into its Conv by the exporters). The values
 * the segment reads from earlier segments, their gradients and the gradients of its outputs stay
 * whole; the slice's views of them (axis 0) stand in their slots while the slice runs, so the ops
 * accumulate dX into the right rows and the weights' gradients over the slices. What the segment
 * makes inside — the wide expansions of an inverted-residual block and their gradients — exists for
 * r rows only: mobilenet_v2's first expansion (96 x 112 x 112, 77 MB at batch 16) and its gradient
 * are a quarter of that at r = 4.
 *
 * Every dX is the same op on the same rows; a weight's gradient sums the rows slice by slice rather
 * than in one pass, so it may differ from the whole-batch step in the last bits (the tests compare
 * with a tolerance, and with r >= the batch bit for bit). A segment with any other op (a Reshape
 * whose target counts the batch, a Gemm, a pooling over the batch, a Softmax ...) runs whole. */
#include "graph.h"

#include <string.h>

/* Ops that map row n of each batched input to row n of each output, whatever the other rows hold. */
bool lithe__graph_row_op(const char *t) {
    static const char *const ok[] = {"fused:Conv", "fused:ConvAdd", "Conv", "Relu", "Clip", "LeakyRelu", "Sigmoid",
                                     "HardSigmoid", "HardSwish", "Tanh", "Elu", "Selu", "Identity", "MaxPool",
                                     "AveragePool", "Dropout", NULL};
    for (size_t i = 0; ok[i]; i++)
        if (!strcmp(t, ok[i])) return true;
    return false;
}

/* An input of the segment [lo, hi): a value made before lo, or a graph input (not a weight or a
 * constant, which every slice reads whole). */
static bool outside(const lithe__gexec *x, const int64_t *prod, size_t lo, int64_t s) {
    const lithe__graph *g = x->g;
    if (s < 0 || x->plan->cached[s]) return false;
    if (g->slot_kind[s] == SLOT_INPUT) return true;
    return g->slot_kind[s] == SLOT_COMPUTED && prod[s] < (int64_t)lo;
}

/* Whether [lo, hi) runs by rows: row ops only, each batched input a float32 tensor of B rows. */
static bool sliceable(const lithe__gexec *x, const int64_t *prod, size_t lo, size_t hi, int64_t *B) {
    const lithe__graph *g = x->g;
    *B = -1;
    for (size_t i = lo; i < hi; i++) {
        if (lithe__gnode_skipped(g, i)) continue;
        if (!lithe__graph_row_op(g->node_op[i]->op_type)) return false;
        for (size_t k = 0; k < g->node_nin[i]; k++) {
            int64_t s = g->node_in[i][k];
            if (!outside(x, prod, lo, s)) {
                /* a weight or constant with a batch axis of its own would not broadcast by rows:
                 * the ops listed read weights only as their second and third inputs */
                if (s >= 0 && g->slot_kind[s] != SLOT_COMPUTED && k == 0) return false;
                continue;
            }
            const lithe_tensor *v = x->vals[s];
            if (!v || v->dtype != LITHE_F32 || v->ndim < 1 || !lithe_tensor_is_contiguous(v)) return false;
            if (*B < 0) *B = v->shape[0];
            if (v->shape[0] != *B) return false;
        }
    }
    return *B > 0;
}

/* Slot s's whole value and gradient while the slices run. */
typedef struct held {
    int64_t slot;
    bool out; /* made in the segment: its gradient is spent after it */
    lithe_tensor *val, *grad;
} held;

static void put_back(lithe__gexec *x, held *h, size_t n) {
    for (size_t k = 0; k < n; k++) {
        int64_t s = h[k].slot;
        lithe_tensor_release(x->vals[s]);
        lithe_tensor_release(x->grads[s]);
        x->vals[s] = h[k].val;
        x->grads[s] = h[k].grad;
        if (h[k].out) {
            lithe_tensor_release(x->grads[s]);
            x->grads[s] = NULL;
        }
    }
}

static void drop_segment(lithe__gexec *x, size_t lo, size_t hi) {
    const lithe__graph *g = x->g;
    for (size_t i = lo; i < hi; i++) {
        for (size_t k = 0; k < 2; k++) {
            lithe_tensor_release(x->saved[2 * i + k]);
            x->saved[2 * i + k] = NULL;
        }
        for (size_t k = 0; k < g->node_nout[i]; k++) {
            int64_t o = g->node_out[i][k];
            if (o < 0 || g->slot_kind[o] != SLOT_COMPUTED) continue;
            lithe_tensor_release(x->vals[o]);
            lithe_tensor_release(x->grads[o]);
            x->vals[o] = x->grads[o] = NULL;
        }
    }
}

static lithe_status view_rows(lithe_tensor *t, int64_t a, int64_t b, lithe_tensor **out) {
    *out = NULL;
    return t ? lithe_tensor_slice(t, 0, a, b, out) : LITHE_OK;
}

/* One slice [a, b): the held values' and gradients' rows in their slots, the segment's forward, its
 * backwards, then everything it made goes. */
static lithe_status run_slice(lithe__gexec *x, size_t lo, size_t hi, held *h, size_t nh, int64_t a, int64_t b) {
    lithe_status s = LITHE_OK;
    for (size_t k = 0; s == LITHE_OK && k < nh; k++) {
        int64_t sl = h[k].slot;
        lithe_tensor_release(x->vals[sl]);
        lithe_tensor_release(x->grads[sl]);
        x->vals[sl] = x->grads[sl] = NULL;
        s = view_rows(h[k].val, a, b, &x->vals[sl]);
        if (s == LITHE_OK) s = view_rows(h[k].grad, a, b, &x->grads[sl]);
    }
    /* (an output held whole, read after the segment, is made again for these rows) */
    if (s == LITHE_OK) s = lithe__grecompute_segment(x, lo, hi);
    drop_segment(x, lo, hi);
    return s;
}

lithe_status lithe__grecompute_rows(lithe__gexec *x, const int64_t *prod, size_t lo, size_t hi, int64_t rows, bool *done) {
    const lithe__graph *g = x->g;
    *done = false;
    int64_t B = 0;
    if (rows <= 0 || !sliceable(x, prod, lo, hi, &B) || B <= rows) return LITHE_OK;
    LITHE__TRY(lithe__gexec_grad_settle(x, -1)); /* the slots' gradients are moved and viewed by rows below */
    /* the slots held whole: the segment's batched inputs (with their gradients, made whole now when
     * one is wanted) and its outputs that carry a gradient or are read later */
    size_t cap = 0;
    for (size_t i = lo; i < hi; i++) cap += g->node_nin[i] + g->node_nout[i];
    held *h = lithe__calloc(cap + 1, sizeof *h);
    if (!h) return lithe__oom(x->m->name, (cap + 1) * sizeof *h);
    size_t nh = 0;
    lithe_status s = LITHE_OK;
    for (size_t i = lo; s == LITHE_OK && i < hi; i++) {
        if (lithe__gnode_skipped(g, i)) continue;
        for (size_t k = 0; s == LITHE_OK && k < g->node_nin[i] + g->node_nout[i]; k++) {
            bool in = k < g->node_nin[i];
            int64_t sl = in ? g->node_in[i][k] : g->node_out[i][k - g->node_nin[i]];
            if (sl < 0 || (in && !outside(x, prod, lo, sl)) || (!in && !x->vals[sl] && !x->grads[sl])) continue;
            bool dup = false;
            for (size_t q = 0; q < nh && !dup; q++) dup = h[q].slot == sl;
            if (dup) continue;
            if (in && x->needs[sl] && !x->grads[sl]) s = lithe__gexec_like(x, x->vals[sl], true, &x->grads[sl]);
            const lithe_tensor *w = x->vals[sl] ? x->vals[sl] : x->grads[sl];
            if (!in && (w->ndim < 1 || w->shape[0] != B || !lithe_tensor_is_contiguous(w))) {
                s = LITHE_ERR_UNSUPPORTED; /* not by rows after all: run whole */
                break;
            }
            h[nh].slot = sl;
            h[nh].out = !in;
            h[nh].val = x->vals[sl];
            h[nh].grad = x->grads[sl];
            x->vals[sl] = x->grads[sl] = NULL;
            nh++;
        }
    }
    if (s == LITHE_ERR_UNSUPPORTED) { /* nothing ran: the slots as they were */
        for (size_t k = 0; k < nh; k++) h[k].out = false;
        put_back(x, h, nh);
        lithe__free(h);
        return LITHE_OK;
    }
    for (int64_t a = 0; s == LITHE_OK && a < B; a += rows) s = run_slice(x, lo, hi, h, nh, a, a + rows < B ? a + rows : B);
    put_back(x, h, nh);
    lithe__free(h);
    *done = s == LITHE_OK;
    return s;
}
