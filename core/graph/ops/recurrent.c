/* ONNX operators of the graph layer (core/graph/ops/): the recurrent ones, RNN, GRU and LSTM, with
 * their backward through time (to X, W, R, B and the initial states).
 *
 * lithe's own LSTM kernel (lstm_scan, Thinc's) does not fit ONNX's: its gates are (f, i, o, c) over
 * a packed ragged batch with one shared initial state (H,) and no gradient to it, while ONNX gives
 * each batch entry its initial state, takes a gradient there, has sequence_lens over a padded
 * batch, clip, and GRU / RNN cells. So each cell is composed per time step of gemm and elementwise
 * primitives (every backend runs it): the input projections of all steps in one gemm per gate
 * first, then per step one gemm per gate against R and the gate arithmetic.
 *
 * Storage, per direction d, in one workspace (saved[0]), every block contiguous so a step's (B, H)
 * slice is a plain 2-D view: Z (ng, T, B, H) the gates' pre-activations, A (ng, T, B, H) their
 * activations, Hs (T + 1, B, H) the hidden state before the first step and after each step (in
 * processing order: reverse walks t = T-1 .. 0), then LSTM's Cs (T + 1, B, H) and tanh(C) (T, B, H)
 * and GRU's E (T, B, H) (r * H_prev, or H_prev · Rhᵀ + Rbh with linear_before_reset). After the D
 * directions: X as (T, B, I) when layout is 1. saved[1]: the sequence_lens mask (T, B, H) when
 * some sequence is shorter than T. Gate g of W is rows [g H, (g + 1) H) of W[d] (ONNX's order:
 * LSTM i, o, f, c; GRU z, r, h), a contiguous (H, I) block. */
#include "ops.h"

enum { RK_RNN = 0, RK_GRU, RK_LSTM };

typedef struct rgeo {
    int kind;
    int64_t T, B, I, H, D, ng;
    bool layout1, lbr, masked;
    bool reverse; /* direction "reverse" (bidirectional: direction 1 runs reversed) */
    float clip; /* 0: none */
    lithe__act f; /* RNN's activation (Tanh, Relu or Sigmoid) */
} rgeo;

static int rnn_kind(const char *op) { return !strcmp(op, "LSTM") ? RK_LSTM : !strcmp(op, "GRU") ? RK_GRU : RK_RNN; }

/* A 2-D contiguous view (rows, cols) of t at element offset off: a descriptor on the stack over t's
 * storage (never retained: the primitives only read the descriptor). */
static lithe_tensor sv(const lithe_tensor *t, int64_t off, int64_t rows, int64_t cols) {
    lithe_tensor v = *t;
    v.ndim = 2;
    v.shape[0] = rows;
    v.shape[1] = cols;
    v.strides[0] = cols;
    v.strides[1] = 1;
    v.offset = t->offset + off;
    v.numel = rows * cols;
    return v;
}
/* A 2-D strided view (rows, cols) of t: row stride rs, unit column stride. */
static lithe_tensor svs(const lithe_tensor *t, int64_t off, int64_t rows, int64_t cols, int64_t rs) {
    lithe_tensor v = sv(t, off, rows, cols);
    v.strides[0] = rs;
    return v;
}

/* ---- attributes (also checked at load: lithe__graph_check_recurrent) ---- */

/* The activation a name gives, or -1. */
static int act_of(const char *s) {
    if (!strcmp(s, "Sigmoid")) return LITHE__ACT_SIGMOID;
    if (!strcmp(s, "Tanh")) return LITHE__ACT_TANH;
    if (!strcmp(s, "Relu")) return LITHE__ACT_RELU;
    return -1;
}

/* The node's attributes into g (T, B, I from the run's X); a message in why when refused. */
static lithe_status rnn_attrs(const lithe__onnx_node *n, rgeo *g, char *why, size_t cap) {
    memset(g, 0, sizeof *g);
    g->kind = rnn_kind(n->op_type);
    g->ng = g->kind == RK_LSTM ? 4 : g->kind == RK_GRU ? 3 : 1;
    const lithe__onnx_attr *a = lithe__onnx_attr_get(n, "direction");
    const char *dir = a && a->s ? a->s : "forward";
    if (strcmp(dir, "forward") && strcmp(dir, "reverse") && strcmp(dir, "bidirectional")) {
        snprintf(why, cap, "direction '%.40s' is not forward, reverse or bidirectional", dir);
        return LITHE_ERR_VALUE;
    }
    g->D = !strcmp(dir, "bidirectional") ? 2 : 1;
    g->reverse = !strcmp(dir, "reverse");
    g->H = attr_i(n, "hidden_size", 0);
    if (g->H < 1 || g->H > ((int64_t)1 << 24)) {
        snprintf(why, cap, "hidden_size %lld is outside 1 .. 2^24 (it is required)", (long long)g->H);
        return LITHE_ERR_VALUE;
    }
    int64_t layout = attr_i(n, "layout", 0);
    if (layout != 0 && layout != 1) {
        snprintf(why, cap, "layout %lld is neither 0 nor 1", (long long)layout);
        return LITHE_ERR_VALUE;
    }
    g->layout1 = layout == 1;
    g->lbr = attr_i(n, "linear_before_reset", 0) != 0;
    if (g->kind == RK_LSTM && attr_i(n, "input_forget", 0) != 0) {
        snprintf(why, cap, "input_forget (coupled input and forget gates) is not supported");
        return LITHE_ERR_UNSUPPORTED;
    }
    a = lithe__onnx_attr_get(n, "clip");
    g->clip = a ? a->f : 0.0f;
    if (a && !(a->f > 0.0f)) {
        snprintf(why, cap, "clip %g is not a positive threshold", (double)a->f);
        return LITHE_ERR_VALUE;
    }
    /* activations: ONNX's defaults only (RNN: Tanh, or Relu / Sigmoid), per direction */
    static const char *const dflt[3][3] = {{"Tanh"}, {"Sigmoid", "Tanh"}, {"Sigmoid", "Tanh", "Tanh"}};
    size_t per = g->kind == RK_LSTM ? 3 : g->kind == RK_GRU ? 2 : 1;
    g->f = (lithe__act){.kind = LITHE__ACT_TANH};
    a = lithe__onnx_attr_get(n, "activations");
    if (a && a->n_strings) {
        if (a->n_strings != per * (size_t)g->D) {
            snprintf(why, cap, "activations has %zu names; %s with %lld direction(s) takes %zu", a->n_strings, n->op_type,
                     (long long)g->D, per * (size_t)g->D);
            return LITHE_ERR_VALUE;
        }
        for (size_t k = 0; k < a->n_strings; k++) {
            const char *s = a->strings[k];
            bool ok = g->kind == RK_RNN ? act_of(s) >= 0 && !strcmp(s, a->strings[0]) : !strcmp(s, dflt[g->kind][k % per]);
            if (!ok) {
                snprintf(why, cap, "activations[%zu] = '%.40s' is not supported (lithe runs %s)", k, s,
                         g->kind == RK_RNN ? "Tanh, Relu or Sigmoid, the same in both directions"
                                           : g->kind == RK_GRU ? "the defaults Sigmoid, Tanh" : "the defaults Sigmoid, Tanh, Tanh");
                return LITHE_ERR_UNSUPPORTED;
            }
        }
        if (g->kind == RK_RNN) g->f.kind = (lithe__act_kind)act_of(a->strings[0]);
    }
    if (lithe__onnx_attr_get(n, "activation_alpha") || lithe__onnx_attr_get(n, "activation_beta")) {
        snprintf(why, cap, "activation_alpha / activation_beta are not supported (no activation lithe runs here takes them)");
        return LITHE_ERR_UNSUPPORTED;
    }
    if (g->kind == RK_LSTM && n->n_inputs > 7 && n->inputs[7][0]) {
        snprintf(why, cap, "peephole weights (input P) are not supported");
        return LITHE_ERR_UNSUPPORTED;
    }
    return LITHE_OK;
}

lithe_status lithe__graph_check_recurrent(const lithe__onnx_model *o, size_t i) {
    const lithe__onnx_node *n = &o->nodes[i];
    if (strcmp(n->op_type, "LSTM") && strcmp(n->op_type, "GRU") && strcmp(n->op_type, "RNN")) return LITHE_OK;
    rgeo g;
    char why[200];
    lithe_status st = rnn_attrs(n, &g, why, sizeof why);
    /* W, R, B given as initializers: their shapes against hidden_size (computed ones: at run) */
    static const char *const what[3] = {"W", "R", "B"};
    for (size_t k = 1; st == LITHE_OK && k < 4 && k < n->n_inputs; k++) {
        const lithe__onnx_tensor *t = NULL;
        for (size_t j = 0; *n->inputs[k] && j < o->n_inits && !t; j++)
            if (!strcmp(o->inits[j].name, n->inputs[k])) t = &o->inits[j];
        if (!t) continue;
        int64_t G = g.ng * g.H;
        bool ok = k == 3 ? t->ndim == 2 && t->dims[0] == g.D && t->dims[1] == 2 * G
                         : t->ndim == 3 && t->dims[0] == g.D && t->dims[1] == G && (k == 1 || t->dims[2] == g.H);
        if (!ok) {
            snprintf(why, sizeof why, "its %s '%.60s' does not have the shape %s with %lld direction(s) and hidden_size %lld "
                     "takes (%s)", what[k - 1], t->name, n->op_type, (long long)g.D, (long long)g.H,
                     k == 1 ? "D, gates * H, I" : k == 2 ? "D, gates * H, H" : "D, 2 * gates * H");
            st = LITHE_ERR_SHAPE;
        }
    }
    if (st != LITHE_OK)
        return lithe__fail(st, "onnx_graph: %s node '%s' (#%zu): %s", n->op_type, n->name ? n->name : "", i, why);
    return LITHE_OK;
}

/* ---- geometry ---- */

static lithe_status rnn_geometry(lithe__gexec *x, size_t node, lithe_tensor **in, size_t n_in, rgeo *g) {
    char why[200];
    lithe_status st = rnn_attrs(NODE(x, node), g, why, sizeof why);
    if (st != LITHE_OK) return fail(x, node, st, "%s", why);
    LITHE__TRY(need_inputs(x, node, in, n_in, 3));
    for (size_t k = 0; k < 3; k++) LITHE__TRY(need_float(x, node, in[k], k));
    const lithe_tensor *X = in[0], *W = in[1], *R = in[2];
    if (X->ndim != 3) return fail(x, node, LITHE_ERR_SHAPE, "X must be 3-D, got %d-D", X->ndim);
    g->T = X->shape[g->layout1 ? 1 : 0];
    g->B = X->shape[g->layout1 ? 0 : 1];
    g->I = X->shape[2];
    int64_t D = g->D, G = g->ng * g->H;
    if (W->ndim != 3 || W->shape[0] != D || W->shape[1] != G || W->shape[2] != g->I)
        return fail(x, node, LITHE_ERR_SHAPE, "W must be (%lld, %lld, %lld)", (long long)D, (long long)G, (long long)g->I);
    if (R->ndim != 3 || R->shape[0] != D || R->shape[1] != G || R->shape[2] != g->H)
        return fail(x, node, LITHE_ERR_SHAPE, "R must be (%lld, %lld, %lld)", (long long)D, (long long)G, (long long)g->H);
    if (n_in > 3 && in[3]) {
        LITHE__TRY(need_float(x, node, in[3], 3));
        if (in[3]->ndim != 2 || in[3]->shape[0] != D || in[3]->shape[1] != 2 * G)
            return fail(x, node, LITHE_ERR_SHAPE, "B must be (%lld, %lld)", (long long)D, (long long)(2 * G));
    }
    for (size_t k = 5; k < 7 && k < n_in; k++) {
        if (!in[k]) continue;
        LITHE__TRY(need_float(x, node, in[k], k));
        const lithe_tensor *h = in[k];
        int64_t a0 = g->layout1 ? g->B : D, a1 = g->layout1 ? D : g->B;
        if (h->ndim != 3 || h->shape[0] != a0 || h->shape[1] != a1 || h->shape[2] != g->H)
            return fail(x, node, LITHE_ERR_SHAPE, "%s must be (%lld, %lld, %lld)", k == 5 ? "initial_h" : "initial_c",
                        (long long)a0, (long long)a1, (long long)g->H);
    }
    if (n_in > 4 && in[4]) {
        const lithe_tensor *L = in[4];
        LITHE__TRY(need_ints(x, node, L, 4));
        if (L->ndim != 1 || L->shape[0] != g->B)
            return fail(x, node, LITHE_ERR_SHAPE, "sequence_lens must be (%lld,)", (long long)g->B);
        for (int64_t b = 0; b < g->B; b++) {
            int64_t l = ints(L)[b];
            if (l < 0 || l > g->T)
                return fail(x, node, LITHE_ERR_VALUE, "sequence_lens[%lld] = %lld is outside 0 .. %lld", (long long)b,
                            (long long)l, (long long)g->T);
            if (l < g->T) g->masked = true;
        }
    }
    return LITHE_OK;
}

/* Offsets in the workspace. */
static int64_t dir_size(const rgeo *g) {
    int64_t bh = g->B * g->H, tbh = g->T * bh;
    int64_t s = 2 * g->ng * tbh + (g->T + 1) * bh;
    if (g->kind == RK_LSTM) s += (g->T + 1) * bh + tbh;
    if (g->kind == RK_GRU) s += tbh;
    return s;
}
typedef struct roff {
    int64_t Z, A, Hs, Cs, E; /* E: LSTM's tanh(C), GRU's E */
} roff;
static roff offsets(const rgeo *g, int64_t d) {
    int64_t bh = g->B * g->H, tbh = g->T * bh;
    roff o;
    o.Z = d * dir_size(g);
    o.A = o.Z + g->ng * tbh;
    o.Hs = o.A + g->ng * tbh;
    o.Cs = o.Hs + (g->T + 1) * bh;
    o.E = g->kind == RK_LSTM ? o.Cs + (g->T + 1) * bh : o.Cs;
    return o;
}
static int64_t xt_offset(const rgeo *g) { return g->D * dir_size(g); }
static bool dir_reversed(const rgeo *g, int64_t d) { return g->D == 2 ? d == 1 : g->reverse; }

/* Z[g][t], A[g][t] and the like: (B, H) at a block's t-th slice. */
#define GATE(ws, base, gate, t) sv(ws, (base) + ((gate) * G->T + (t)) * G->B * G->H, G->B, G->H)
#define STEP(ws, base, s) sv(ws, (base) + (s) * G->B * G->H, G->B, G->H)

/* A = act(clip(Z)) for gate activation kind k. */
static lithe_status gate_act(lithe__gexec *x, const rgeo *G, lithe__act_kind k, const lithe_tensor *Z, lithe_tensor *A) {
    lithe__act a = {.kind = k};
    if (G->clip > 0.0f) {
        lithe__act c = {.kind = LITHE__ACT_CLIPPED_LINEAR, .slope = 1.0f, .min_val = -G->clip, .max_val = G->clip};
        LITHE__TRY(lithe__op_act(x->be, &c, Z, A));
        return lithe__op_act(x->be, &a, A, A);
    }
    return lithe__op_act(x->be, &a, Z, A);
}
/* dZ = act'(...) * dA from the activation A (and clip's from Z); dZ may alias dA. */
static lithe_status gate_back(lithe__gexec *x, const rgeo *G, lithe__act_kind k, const lithe_tensor *Z, const lithe_tensor *A,
                              const lithe_tensor *dA, lithe_tensor *dZ) {
    lithe__act a = {.kind = k};
    LITHE__TRY(lithe__op_act_backward(x->be, &a, dA, NULL, A, dZ));
    if (G->clip > 0.0f) {
        lithe__act c = {.kind = LITHE__ACT_CLIPPED_LINEAR, .slope = 1.0f, .min_val = -G->clip, .max_val = G->clip};
        LITHE__TRY(lithe__op_act_backward(x->be, &c, dZ, Z, NULL, dZ));
    }
    return LITHE_OK;
}

/* The weights of direction d, gate g: W (H, I), R (H, H), and B's Wb, Rb (H,) halves. */
typedef struct rw {
    lithe_tensor W[4], R[4], Wb[4], Rb[4];
    bool has_b;
} rw;
static void dir_weights(const rgeo *G, lithe_tensor **in, size_t n_in, int64_t d, rw *w) {
    int64_t H = G->H, ng = G->ng;
    w->has_b = n_in > 3 && in[3];
    for (int64_t g = 0; g < ng; g++) {
        w->W[g] = sv(in[1], (d * ng + g) * H * G->I, H, G->I);
        w->R[g] = sv(in[2], (d * ng + g) * H * H, H, H);
        if (w->has_b) {
            w->Wb[g] = sv(in[3], d * 2 * ng * H + g * H, 1, H);
            w->Rb[g] = sv(in[3], d * 2 * ng * H + (ng + g) * H, 1, H);
            w->Wb[g].ndim = w->Rb[g].ndim = 1;
            w->Wb[g].shape[0] = w->Rb[g].shape[0] = H;
            w->Wb[g].strides[0] = w->Rb[g].strides[0] = 1;
        }
    }
}

/* ---- one step of each cell, forward ---- */

/* Hn (and LSTM's Cn) from Hp (Cp) at time t; tmp (B, H) scratch. */
static lithe_status cell_forward(lithe__gexec *x, const rgeo *G, const lithe_tensor *ws, const roff *o, const rw *w,
                                 int64_t t, int64_t s, lithe_tensor *tmp) {
    lithe_backend *be = x->be;
    lithe_tensor Hp = STEP(ws, o->Hs, s), Hn = STEP(ws, o->Hs, s + 1);
    lithe_tensor Z[4], A[4];
    for (int64_t g = 0; g < G->ng; g++) {
        Z[g] = GATE(ws, o->Z, g, t);
        A[g] = GATE(ws, o->A, g, t);
    }
    if (G->kind == RK_RNN) {
        LITHE__TRY(lithe__op_gemm(be, false, true, 1.0f, &Hp, &w->R[0], 1.0f, &Z[0]));
        LITHE__TRY(gate_act(x, G, G->f.kind, &Z[0], &A[0]));
        return lithe__op_copy(be, &Hn, &A[0]);
    }
    if (G->kind == RK_LSTM) { /* i, o, f, c */
        lithe_tensor Cp = STEP(ws, o->Cs, s), Cn = STEP(ws, o->Cs, s + 1), TC = STEP(ws, o->E, t);
        for (int64_t g = 0; g < 4; g++) {
            LITHE__TRY(lithe__op_gemm(be, false, true, 1.0f, &Hp, &w->R[g], 1.0f, &Z[g]));
            LITHE__TRY(gate_act(x, G, g == 3 ? LITHE__ACT_TANH : LITHE__ACT_SIGMOID, &Z[g], &A[g]));
        }
        LITHE__TRY(lithe__op_mul(be, &A[2], &Cp, &Cn));
        LITHE__TRY(lithe__op_mul(be, &A[0], &A[3], tmp));
        LITHE__TRY(lithe__op_axpby(be, 1.0f, tmp, 1.0f, &Cn));
        lithe__act th = {.kind = LITHE__ACT_TANH};
        LITHE__TRY(lithe__op_act(be, &th, &Cn, &TC));
        return lithe__op_mul(be, &A[1], &TC, &Hn);
    }
    /* GRU: z, r, h */
    lithe_tensor E = STEP(ws, o->E, t);
    for (int64_t g = 0; g < 2; g++) {
        LITHE__TRY(lithe__op_gemm(be, false, true, 1.0f, &Hp, &w->R[g], 1.0f, &Z[g]));
        LITHE__TRY(gate_act(x, G, LITHE__ACT_SIGMOID, &Z[g], &A[g]));
    }
    if (!G->lbr) { /* h~ = tanh(Xh + (r * Hp) · Rhᵀ + Rbh + Wbh) */
        LITHE__TRY(lithe__op_mul(be, &A[1], &Hp, &E));
        LITHE__TRY(lithe__op_gemm(be, false, true, 1.0f, &E, &w->R[2], 1.0f, &Z[2]));
    } else { /* h~ = tanh(Xh + r * (Hp · Rhᵀ + Rbh) + Wbh) */
        LITHE__TRY(lithe__op_gemm(be, false, true, 1.0f, &Hp, &w->R[2], 0.0f, &E));
        if (w->has_b) LITHE__TRY(lithe__op_add_row(be, &E, &w->Rb[2]));
        LITHE__TRY(lithe__op_mul(be, &A[1], &E, tmp));
        LITHE__TRY(lithe__op_axpby(be, 1.0f, tmp, 1.0f, &Z[2]));
    }
    LITHE__TRY(gate_act(x, G, LITHE__ACT_TANH, &Z[2], &A[2]));
    /* Hn = h~ + z * (Hp - h~) */
    LITHE__TRY(lithe__op_copy(be, tmp, &Hp));
    LITHE__TRY(lithe__op_axpby(be, -1.0f, &A[2], 1.0f, tmp));
    LITHE__TRY(lithe__op_mul(be, &A[0], tmp, tmp));
    LITHE__TRY(lithe__op_copy(be, &Hn, &A[2]));
    return lithe__op_axpby(be, 1.0f, tmp, 1.0f, &Hn);
}

/* Past a sequence's end the state is carried: S[s+1] = Hp + m * (S[s+1] - Hp). */
static lithe_status carry(lithe__gexec *x, const lithe_tensor *M, lithe_tensor *Sp, lithe_tensor *Sn) {
    LITHE__TRY(lithe__op_axpby(x->be, -1.0f, Sp, 1.0f, Sn));
    LITHE__TRY(lithe__op_mul(x->be, Sn, M, Sn));
    return lithe__op_axpby(x->be, 1.0f, Sp, 1.0f, Sn);
}

/* The view of direction d's (B, H) slice of an initial state / Y_h / Y_c (layout 0: (D, B, H);
 * layout 1: (B, D, H)). */
static lithe_tensor state_view(const rgeo *G, const lithe_tensor *t, int64_t d) {
    return G->layout1 ? svs(t, d * G->H, G->B, G->H, G->D * G->H) : sv(t, d * G->B * G->H, G->B, G->H);
}
/* Y[t, d] (layout 0: Y (T, D, B, H); layout 1: (B, T, D, H)). */
static lithe_tensor y_view(const rgeo *G, const lithe_tensor *Y, int64_t t, int64_t d) {
    if (G->layout1) return svs(Y, (t * G->D + d) * G->H, G->B, G->H, G->T * G->D * G->H);
    return sv(Y, (t * G->D + d) * G->B * G->H, G->B, G->H);
}

static lithe_status dir_forward(lithe__gexec *x, const rgeo *G, lithe_tensor **in, size_t n_in, lithe_tensor *ws,
                                const lithe_tensor *Xtb, const lithe_tensor *M, int64_t d, bool rev, lithe_tensor *tmp) {
    lithe_backend *be = x->be;
    roff o = offsets(G, d);
    rw w;
    dir_weights(G, in, n_in, d, &w);
    int64_t TB = G->T * G->B;
    for (int64_t g = 0; g < G->ng; g++) { /* the input projections of every step */
        lithe_tensor Zg = sv(ws, o.Z + g * TB * G->H, TB, G->H);
        LITHE__TRY(lithe__op_gemm(be, false, true, 1.0f, Xtb, &w.W[g], 0.0f, &Zg));
        if (!w.has_b) continue;
        LITHE__TRY(lithe__op_add_row(be, &Zg, &w.Wb[g]));
        if (!(G->kind == RK_GRU && G->lbr && g == 2)) LITHE__TRY(lithe__op_add_row(be, &Zg, &w.Rb[g]));
    }
    lithe_tensor H0 = STEP(ws, o.Hs, 0), C0 = STEP(ws, o.Cs, 0);
    if (n_in > 5 && in[5]) {
        lithe_tensor v = state_view(G, in[5], d);
        LITHE__TRY(lithe__op_copy(be, &H0, &v));
    } else {
        LITHE__TRY(lithe__op_fill(be, &H0, 0.0f));
    }
    if (G->kind == RK_LSTM) {
        if (n_in > 6 && in[6]) {
            lithe_tensor v = state_view(G, in[6], d);
            LITHE__TRY(lithe__op_copy(be, &C0, &v));
        } else {
            LITHE__TRY(lithe__op_fill(be, &C0, 0.0f));
        }
    }
    for (int64_t s = 0; s < G->T; s++) {
        int64_t t = rev ? G->T - 1 - s : s;
        LITHE__TRY(cell_forward(x, G, ws, &o, &w, t, s, tmp));
        if (!M) continue;
        lithe_tensor Mt = sv(M, t * G->B * G->H, G->B, G->H);
        lithe_tensor Hp = STEP(ws, o.Hs, s), Hn = STEP(ws, o.Hs, s + 1);
        LITHE__TRY(carry(x, &Mt, &Hp, &Hn));
        if (G->kind == RK_LSTM) {
            lithe_tensor Cp = STEP(ws, o.Cs, s), Cn = STEP(ws, o.Cs, s + 1);
            LITHE__TRY(carry(x, &Mt, &Cp, &Cn));
        }
    }
    return LITHE_OK;
}

/* The sequence_lens mask (T, B, H) on the backend: 1 where t < sequence_lens[b]. */
static lithe_status make_mask(lithe__gexec *x, const rgeo *G, const lithe_tensor *L, lithe_tensor **out) {
    lithe_tensor *h = NULL;
    LITHE__TRY(lithe__gexec_alloc(x, lithe__backend_host(), LITHE_F32, 3, (int64_t[]){G->T, G->B, G->H}, false, &h));
    float *p = lithe__tdata(h);
    for (int64_t t = 0; t < G->T; t++)
        for (int64_t b = 0; b < G->B; b++)
            for (int64_t j = 0; j < G->H; j++) p[(t * G->B + b) * G->H + j] = t < ints(L)[b] ? 1.0f : 0.0f;
    if (x->be == lithe__backend_host()) {
        *out = h;
        return LITHE_OK;
    }
    lithe_status s = lithe_tensor_to_backend(h, x->be, out);
    lithe_tensor_release(h);
    return s;
}

/* Y, Y_h, Y_c from the workspace: Y[t, d] = m_t * Hs[step of t + 1] (zero past a sequence's end),
 * Y_h = Hs[T], Y_c = Cs[T]. */
static lithe_status write_outputs(lithe__gexec *x, const rgeo *G, const lithe_tensor *ws, const lithe_tensor *M,
                                  lithe_tensor **out, size_t n_out, lithe_tensor *tmp) {
    int64_t T = G->T, B = G->B, D = G->D, H = G->H;
    int64_t yshape[4] = {T, D, B, H}, sshape[3] = {D, B, H};
    if (G->layout1) {
        yshape[0] = B, yshape[1] = T, yshape[2] = D;
        sshape[0] = B, sshape[1] = D;
    }
    size_t want = G->kind == RK_LSTM ? 3 : 2;
    for (size_t k = 0; k < n_out && k < want; k++)
        LITHE__TRY(new_f32(x, k == 0 ? 4 : 3, k == 0 ? yshape : sshape, false, &out[k]));
    for (int64_t d = 0; d < D; d++) {
        roff o = offsets(G, d);
        bool rev = dir_reversed(G, d);
        for (int64_t t = 0; n_out > 0 && out[0] && t < T; t++) {
            int64_t s = rev ? T - 1 - t : t;
            lithe_tensor Hn = STEP(ws, o.Hs, s + 1), Yv = y_view(G, out[0], t, d);
            if (M) {
                lithe_tensor Mt = sv(M, t * B * H, B, H);
                LITHE__TRY(lithe__op_mul(x->be, &Hn, &Mt, tmp));
                LITHE__TRY(lithe__op_copy(x->be, &Yv, tmp));
            } else {
                LITHE__TRY(lithe__op_copy(x->be, &Yv, &Hn));
            }
        }
        if (n_out > 1 && out[1]) {
            lithe_tensor v = state_view(G, out[1], d), Hs = STEP(ws, o.Hs, T);
            LITHE__TRY(lithe__op_copy(x->be, &v, &Hs));
        }
        if (G->kind == RK_LSTM && n_out > 2 && out[2]) {
            lithe_tensor v = state_view(G, out[2], d), Cs = STEP(ws, o.Cs, T);
            LITHE__TRY(lithe__op_copy(x->be, &v, &Cs));
        }
    }
    return LITHE_OK;
}

/* X as (T * B, I) rows: X itself (layout 0), or its transpose copied into the workspace. */
static lithe_status x_rows(lithe__gexec *x, const rgeo *G, const lithe_tensor *X, const lithe_tensor *ws, lithe_tensor *Xtb) {
    if (!G->layout1) {
        *Xtb = sv(X, 0, G->T * G->B, G->I);
        return LITHE_OK;
    }
    *Xtb = sv(ws, xt_offset(G), G->T * G->B, G->I);
    lithe_tensor dst = *Xtb, src = *X; /* dst (T, B, I) <- X (B, T, I) read transposed */
    dst.ndim = src.ndim = 3;
    dst.shape[0] = src.shape[0] = G->T;
    dst.shape[1] = src.shape[1] = G->B;
    dst.shape[2] = src.shape[2] = G->I;
    contiguous_strides(3, dst.shape, dst.strides);
    src.strides[0] = G->I;
    src.strides[1] = G->T * G->I;
    src.strides[2] = 1;
    return lithe__op_copy(x->be, &dst, &src);
}

FWD(f_rnn) {
    UNUSED_FWD;
    rgeo G;
    LITHE__TRY(rnn_geometry(x, node, in, n_in, &G));
    lithe_tensor *ws = NULL, *M = NULL, *tmp = NULL;
    int64_t total = xt_offset(&G) + (G.layout1 ? G.T * G.B * G.I : 0);
    lithe_status s = new_f32(x, 1, (int64_t[]){total}, false, &ws);
    if (s == LITHE_OK && G.masked) s = make_mask(x, &G, in[4], &M);
    if (s == LITHE_OK) s = new_f32(x, 2, (int64_t[]){G.B, G.H}, false, &tmp);
    lithe_tensor Xtb;
    if (s == LITHE_OK) s = x_rows(x, &G, in[0], ws, &Xtb);
    for (int64_t d = 0; s == LITHE_OK && d < G.D; d++) s = dir_forward(x, &G, in, n_in, ws, &Xtb, M, d, dir_reversed(&G, d), tmp);
    if (s == LITHE_OK) s = write_outputs(x, &G, ws, M, out, n_out, tmp);
    lithe_tensor_release(tmp);
    if (s != LITHE_OK) {
        lithe_tensor_release(ws);
        lithe_tensor_release(M);
        return s;
    }
    saved[0] = ws;
    saved[1] = M;
    return LITHE_OK;
}

/* ---- backward ---- */

/* Scratch rows of the backward: the carried dH, dC, then the step's dHn, dCn and two temporaries. */
enum { S_DH = 0, S_DC, S_DHN, S_DCN, S_T1, S_T2, S_N };

/* One step's cell backward: from dHn (and dCn) write dZ[g][t], add the previous state's gradient
 * into dH (dC) and R's into dR. */
static lithe_status cell_backward(lithe__gexec *x, const rgeo *G, const lithe_tensor *ws, const roff *o, const rw *w,
                                  const lithe_tensor *dZall, lithe_tensor *sc, lithe_tensor *dR, lithe_tensor *dB,
                                  int64_t d, int64_t t, int64_t s) {
    lithe_backend *be = x->be;
    lithe_tensor dH = STEP(sc, 0, S_DH), dC = STEP(sc, 0, S_DC), dHn = STEP(sc, 0, S_DHN), dCn = STEP(sc, 0, S_DCN);
    lithe_tensor t1 = STEP(sc, 0, S_T1), t2 = STEP(sc, 0, S_T2);
    lithe_tensor Hp = STEP(ws, o->Hs, s), Z[4], A[4], dZ[4], dRg[4];
    for (int64_t g = 0; g < G->ng; g++) {
        Z[g] = GATE(ws, o->Z, g, t);
        A[g] = GATE(ws, o->A, g, t);
        dZ[g] = GATE(dZall, 0, g, t);
        if (dR) dRg[g] = sv(dR, (d * G->ng + g) * G->H * G->H, G->H, G->H);
    }
    if (G->kind == RK_RNN) {
        LITHE__TRY(gate_back(x, G, G->f.kind, &Z[0], &A[0], &dHn, &dZ[0]));
    } else if (G->kind == RK_LSTM) {
        lithe_tensor Cp = STEP(ws, o->Cs, s), TC = STEP(ws, o->E, t);
        lithe__act th = {.kind = LITHE__ACT_TANH};
        LITHE__TRY(lithe__op_mul(be, &dHn, &TC, &t1)); /* o */
        LITHE__TRY(gate_back(x, G, LITHE__ACT_SIGMOID, &Z[1], &A[1], &t1, &dZ[1]));
        LITHE__TRY(lithe__op_mul(be, &dHn, &A[1], &t1)); /* dCn += tanh'(C) * o * dHn */
        LITHE__TRY(lithe__op_act_backward(be, &th, &t1, NULL, &TC, &t1));
        LITHE__TRY(lithe__op_axpby(be, 1.0f, &t1, 1.0f, &dCn));
        LITHE__TRY(lithe__op_mul(be, &dCn, &Cp, &t1)); /* f */
        LITHE__TRY(gate_back(x, G, LITHE__ACT_SIGMOID, &Z[2], &A[2], &t1, &dZ[2]));
        LITHE__TRY(lithe__op_mul(be, &dCn, &A[2], &t1)); /* the previous cell */
        LITHE__TRY(lithe__op_axpby(be, 1.0f, &t1, 1.0f, &dC));
        LITHE__TRY(lithe__op_mul(be, &dCn, &A[3], &t1)); /* i */
        LITHE__TRY(gate_back(x, G, LITHE__ACT_SIGMOID, &Z[0], &A[0], &t1, &dZ[0]));
        LITHE__TRY(lithe__op_mul(be, &dCn, &A[0], &t1)); /* c~ */
        LITHE__TRY(gate_back(x, G, LITHE__ACT_TANH, &Z[3], &A[3], &t1, &dZ[3]));
    } else {
        lithe_tensor E = STEP(ws, o->E, t);
        LITHE__TRY(lithe__op_mul(be, &dHn, &A[0], &t1)); /* Hn = (1 - z) h~ + z Hp */
        LITHE__TRY(lithe__op_axpby(be, 1.0f, &t1, 1.0f, &dH));
        LITHE__TRY(lithe__op_copy(be, &t2, &dHn));
        LITHE__TRY(lithe__op_axpby(be, -1.0f, &t1, 1.0f, &t2)); /* dh~ */
        LITHE__TRY(gate_back(x, G, LITHE__ACT_TANH, &Z[2], &A[2], &t2, &dZ[2]));
        LITHE__TRY(lithe__op_copy(be, &t1, &Hp)); /* dz = dHn (Hp - h~) */
        LITHE__TRY(lithe__op_axpby(be, -1.0f, &A[2], 1.0f, &t1));
        LITHE__TRY(lithe__op_mul(be, &t1, &dHn, &t1));
        LITHE__TRY(gate_back(x, G, LITHE__ACT_SIGMOID, &Z[0], &A[0], &t1, &dZ[0]));
        if (!G->lbr) { /* Z_h += (r Hp) · Rhᵀ */
            LITHE__TRY(lithe__op_gemm(be, false, false, 1.0f, &dZ[2], &w->R[2], 0.0f, &t1));
            if (dR) LITHE__TRY(lithe__op_gemm(be, true, false, 1.0f, &dZ[2], &E, 1.0f, &dRg[2]));
            LITHE__TRY(lithe__op_mul(be, &t1, &Hp, &t2)); /* dr */
            LITHE__TRY(lithe__op_mul(be, &t1, &A[1], &t1));
            LITHE__TRY(lithe__op_axpby(be, 1.0f, &t1, 1.0f, &dH));
        } else { /* Z_h += r E, E = Hp · Rhᵀ + Rbh */
            LITHE__TRY(lithe__op_mul(be, &dZ[2], &A[1], &t1)); /* dE */
            LITHE__TRY(lithe__op_mul(be, &dZ[2], &E, &t2));    /* dr */
            LITHE__TRY(lithe__op_gemm(be, false, false, 1.0f, &t1, &w->R[2], 1.0f, &dH));
            if (dR) LITHE__TRY(lithe__op_gemm(be, true, false, 1.0f, &t1, &Hp, 1.0f, &dRg[2]));
            if (dB) {
                lithe_tensor dRb = sv(dB, d * 2 * G->ng * G->H + (G->ng + 2) * G->H, 1, G->H);
                dRb.ndim = 1;
                dRb.shape[0] = G->H;
                LITHE__TRY(lithe__op_sum_rows(be, &t1, 1.0f, &dRb));
            }
        }
        LITHE__TRY(gate_back(x, G, LITHE__ACT_SIGMOID, &Z[1], &A[1], &t2, &dZ[1]));
    }
    /* the gates read Hp through R (GRU's h gate is done above) */
    int64_t n_r = G->kind == RK_GRU ? 2 : G->ng;
    for (int64_t g = 0; g < n_r; g++) {
        LITHE__TRY(lithe__op_gemm(be, false, false, 1.0f, &dZ[g], &w->R[g], 1.0f, &dH));
        if (dR) LITHE__TRY(lithe__op_gemm(be, true, false, 1.0f, &dZ[g], &Hp, 1.0f, &dRg[g]));
    }
    return LITHE_OK;
}

/* The gradients the node's inputs take (NULL: none). */
typedef struct rgrads {
    lithe_tensor *dX, *dW, *dR, *dB, *dh0, *dc0;
} rgrads;

/* Direction d: BPTT, then the input projections' gradients from dZ (ng, T, B, H). */
static lithe_status dir_backward(lithe__gexec *x, const rgeo *G, lithe_tensor **in, size_t n_in, lithe_tensor **dout,
                                 const lithe_tensor *ws, const lithe_tensor *M, const lithe_tensor *Xtb, lithe_tensor *dXtb,
                                 const rgrads *r, lithe_tensor *dZall, lithe_tensor *sc, int64_t d) {
    lithe_backend *be = x->be;
    int64_t T = G->T, B = G->B, H = G->H, TB = T * B;
    roff o = offsets(G, d);
    rw w;
    dir_weights(G, in, n_in, d, &w);
    bool rev = dir_reversed(G, d);
    lithe_tensor dH = STEP(sc, 0, S_DH), dC = STEP(sc, 0, S_DC), dHn = STEP(sc, 0, S_DHN), dCn = STEP(sc, 0, S_DCN);
    lithe_tensor t1 = STEP(sc, 0, S_T1);
    LITHE__TRY(lithe__op_fill(be, sc, 0.0f));
    if (dout[1]) {
        lithe_tensor v = state_view(G, dout[1], d);
        LITHE__TRY(lithe__op_copy(be, &dH, &v));
    }
    if (G->kind == RK_LSTM && dout[2]) {
        lithe_tensor v = state_view(G, dout[2], d);
        LITHE__TRY(lithe__op_copy(be, &dC, &v));
    }
    for (int64_t s = T - 1; s >= 0; s--) {
        int64_t t = rev ? T - 1 - s : s;
        lithe_tensor Mt = M ? sv(M, t * B * H, B, H) : (lithe_tensor){0};
        if (dout[0]) { /* Y[t] = m * Hs[s + 1] */
            lithe_tensor v = y_view(G, dout[0], t, d);
            LITHE__TRY(lithe__op_copy(be, &t1, &v));
            if (M) LITHE__TRY(lithe__op_mul(be, &t1, &Mt, &t1));
            LITHE__TRY(lithe__op_axpby(be, 1.0f, &t1, 1.0f, &dH));
        }
        /* Hs[s + 1] = m Hn + (1 - m) Hp: dHn = m dH, the carried rest goes to Hp */
        if (M) {
            LITHE__TRY(lithe__op_mul(be, &dH, &Mt, &dHn));
            LITHE__TRY(lithe__op_axpby(be, -1.0f, &dHn, 1.0f, &dH));
        } else {
            LITHE__TRY(lithe__op_copy(be, &dHn, &dH));
            LITHE__TRY(lithe__op_fill(be, &dH, 0.0f));
        }
        if (G->kind == RK_LSTM) {
            if (M) {
                LITHE__TRY(lithe__op_mul(be, &dC, &Mt, &dCn));
                LITHE__TRY(lithe__op_axpby(be, -1.0f, &dCn, 1.0f, &dC));
            } else {
                LITHE__TRY(lithe__op_copy(be, &dCn, &dC));
                LITHE__TRY(lithe__op_fill(be, &dC, 0.0f));
            }
        }
        LITHE__TRY(cell_backward(x, G, ws, &o, &w, dZall, sc, r->dR, r->dB, d, t, s));
    }
    if (r->dh0) {
        lithe_tensor v = state_view(G, r->dh0, d);
        LITHE__TRY(lithe__op_copy(be, &t1, &v)); /* v may be strided (layout 1): add through t1 */
        LITHE__TRY(lithe__op_axpby(be, 1.0f, &dH, 1.0f, &t1));
        LITHE__TRY(lithe__op_copy(be, &v, &t1));
    }
    if (r->dc0 && G->kind == RK_LSTM) {
        lithe_tensor v = state_view(G, r->dc0, d);
        LITHE__TRY(lithe__op_copy(be, &t1, &v));
        LITHE__TRY(lithe__op_axpby(be, 1.0f, &dC, 1.0f, &t1));
        LITHE__TRY(lithe__op_copy(be, &v, &t1));
    }
    for (int64_t g = 0; g < G->ng; g++) {
        lithe_tensor dZg = sv(dZall, g * TB * H, TB, H);
        if (dXtb) LITHE__TRY(lithe__op_gemm(be, false, false, 1.0f, &dZg, &w.W[g], 1.0f, dXtb));
        if (r->dW) {
            lithe_tensor dWg = sv(r->dW, (d * G->ng + g) * H * G->I, H, G->I);
            LITHE__TRY(lithe__op_gemm(be, true, false, 1.0f, &dZg, Xtb, 1.0f, &dWg));
        }
        if (r->dB) {
            lithe_tensor dWb = sv(r->dB, d * 2 * G->ng * H + g * H, 1, H), dRb = sv(r->dB, d * 2 * G->ng * H + (G->ng + g) * H, 1, H);
            dWb.ndim = dRb.ndim = 1;
            dWb.shape[0] = dRb.shape[0] = H;
            LITHE__TRY(lithe__op_sum_rows(be, &dZg, 1.0f, &dWb));
            if (!(G->kind == RK_GRU && G->lbr && g == 2)) LITHE__TRY(lithe__op_sum_rows(be, &dZg, 1.0f, &dRb));
        }
    }
    return LITHE_OK;
}

BWD(b_rnn) {
    UNUSED_BWD;
    rgeo G;
    LITHE__TRY(rnn_geometry(x, node, in, n_in, &G));
    lithe_tensor *ws = saved[0], *M = saved[1];
    if (!ws) return fail(x, node, LITHE_ERR_INTERNAL, "backward without its forward's record");
    rgrads r = {0};
    LITHE__TRY(lithe__gexec_grad(x, node, 0, &r.dX));
    LITHE__TRY(lithe__gexec_grad(x, node, 1, &r.dW));
    LITHE__TRY(lithe__gexec_grad(x, node, 2, &r.dR));
    if (n_in > 3 && in[3]) LITHE__TRY(lithe__gexec_grad(x, node, 3, &r.dB));
    if (n_in > 5 && in[5]) LITHE__TRY(lithe__gexec_grad(x, node, 5, &r.dh0));
    if (n_in > 6 && in[6] && G.kind == RK_LSTM) LITHE__TRY(lithe__gexec_grad(x, node, 6, &r.dc0));
    lithe_tensor *dZ = NULL, *sc = NULL, *dXt = NULL;
    lithe_status s = new_f32(x, 1, (int64_t[]){G.ng * G.T * G.B * G.H}, false, &dZ);
    if (s == LITHE_OK) s = new_f32(x, 2, (int64_t[]){S_N * G.B, G.H}, false, &sc);
    if (s == LITHE_OK && r.dX && G.layout1) s = new_f32(x, 2, (int64_t[]){G.T * G.B, G.I}, true, &dXt);
    lithe_tensor Xtb, dXtb;
    if (s == LITHE_OK) s = x_rows(x, &G, in[0], ws, &Xtb);
    if (r.dX) dXtb = G.layout1 ? sv(dXt, 0, G.T * G.B, G.I) : sv(r.dX, 0, G.T * G.B, G.I);
    for (int64_t d = 0; s == LITHE_OK && d < G.D; d++)
        s = dir_backward(x, &G, in, n_in, dout, ws, M, &Xtb, r.dX ? &dXtb : NULL, &r, dZ, sc, d);
    if (s == LITHE_OK && dXt) { /* dX (B, T, I) += dXt (T, B, I) read transposed */
        lithe_tensor *t = NULL;
        s = lithe__gexec_like(x, r.dX, false, &t);
        if (s == LITHE_OK) {
            lithe_tensor src = *dXt;
            src.ndim = 3;
            src.shape[0] = G.B, src.shape[1] = G.T, src.shape[2] = G.I;
            src.strides[0] = G.I, src.strides[1] = G.B * G.I, src.strides[2] = 1;
            s = lithe__op_copy(x->be, t, &src);
            if (s == LITHE_OK) s = acc(x, r.dX, t);
        }
        lithe_tensor_release(t);
    }
    lithe_tensor_release(dZ);
    lithe_tensor_release(sc);
    lithe_tensor_release(dXt);
    return s;
}
