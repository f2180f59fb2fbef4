/* QDQ fusion (issue 24 item 4): the QuantizeLinear / DequantizeLinear pairs onnxruntime's quantizer
 * writes around each quantized operator, run as int8 kernels where lithe has one. Called first by
 * lithe__graph_fuse (before the float fusions, which would take the MatMul on its own).
 *
 *   QLinear  Y = [Relu | Clip](Add(MatMul(DQ(Q(X)), DQ(Wq)), bias))   or
 *            Y = [Relu | Clip](Gemm(DQ(Q(X)), DQ(Wq), [bias]))   (alpha = beta = 1, no transA)
 *            -> fused:QLinear (ops/qfused.c): gemm_q8 with Wq kept int8
 *   QConv    Y = [Relu | Clip](Conv(DQ(Q(X)), DQ(Wq), [bias]))  -> fused:QConv
 *   FakeQ    Y = DQ(Q(X)) anywhere else (around Add, pooling, the graph's output) -> one float pass
 *   codes    a fused:QConv read only by another fused:QConv, one of them depthwise (chain_codes): it
 *            writes the reader's codes (ops/qfused.c), not float32
 *
 * Wq: an int8 initializer, zero points 0 (symmetric), its scales per tensor or per output channel
 * (MatMul / Gemm's N: axis 1 of (K, N), axis 0 with transB; Conv's axis 0). Binding folded DQ(Wq)
 * into a float32 constant; a fused node's weight slot holds the int8 codes instead (the float copy
 * is released). The activation's Q and DQ: per tensor, equal scale and zero point, int8 or uint8.
 * The bias: a float constant of N values (DQ of an int32 bias is folded to one; a trainable bias
 * stays in its own Add, which trains it, as a Gemm with one stays unfused). Anything
 * else (uint8 weights, zero points not 0, weights computed at run time) is left to the float path:
 * the folded DQ constant, the float fusions. */
#include "graph.h"

#include <math.h>
#include <string.h>

typedef struct qf {
    lithe__graph *g;
    int64_t *producer;  /* per slot: the node writing it (live or folded at load), -1 */
    int64_t *n_readers; /* per slot: live node inputs reading it, + 1 if a graph output */
    int64_t *reader;    /* per slot: the last live node reading it */
} qf;

static void qindex(qf *f) {
    const lithe__graph *g = f->g;
    for (size_t i = 0; i < g->n_slots + 1; i++) f->producer[i] = f->reader[i] = -1, f->n_readers[i] = 0;
    for (size_t i = 0; i < g->onnx.n_nodes; i++) {
        if (g->node_dead[i]) continue;
        for (size_t k = 0; k < g->node_nout[i]; k++)
            if (g->node_out[i][k] >= 0) f->producer[g->node_out[i][k]] = (int64_t)i;
        if (lithe__gnode_skipped(g, i)) continue;
        for (size_t k = 0; k < g->node_nin[i]; k++)
            if (g->node_in[i][k] >= 0) f->n_readers[g->node_in[i][k]]++, f->reader[g->node_in[i][k]] = (int64_t)i;
    }
    for (size_t i = 0; i < g->n_out; i++) f->n_readers[g->out_slots[i]]++;
}

/* node is an unfused op_type of the default domain with one output (folded: its output a constant) */
static bool is_node(const qf *f, int64_t node, const char *op, bool folded) {
    if (node < 0) return false;
    const lithe__graph *g = f->g;
    const lithe__onnx_node *n = &g->onnx.nodes[node];
    bool custom = n->domain && *n->domain && strcmp(n->domain, "ai.onnx");
    return !custom && !g->node_dead[node] && g->node_fuse[node].kind == LITHE__FUSE_NONE && g->node_nin[node] >= 1 &&
           g->node_nout[node] == 1 && g->node_out[node][0] >= 0 && lithe__gnode_skipped(g, node) == folded &&
           !strcmp(n->op_type, op);
}

static int64_t only_reader(const qf *f, int64_t s) { return s >= 0 && f->n_readers[s] == 1 ? f->reader[s] : -1; }

static const lithe_tensor *const_of(const lithe__graph *g, int64_t s, lithe_dtype dt) {
    if (s < 0 || g->slot_kind[s] != SLOT_CONST || !g->slot_const[s] || g->slot_const[s]->dtype != dt) return NULL;
    return g->slot_const[s];
}

/* A Q / DQ node's constant parameters: n scales, zero points (NULL: none given), the per-axis axis
 * (normalized for data of rank `rank`). */
typedef struct qp {
    int64_t n, axis;
    const float *s;
    const int64_t *z;
} qp;
static bool qparams(const qf *f, int64_t node, int rank, qp *p) {
    const lithe__graph *g = f->g;
    const lithe_tensor *S = g->node_nin[node] > 1 ? const_of(g, g->node_in[node][1], LITHE_F32) : NULL;
    int64_t zs = g->node_nin[node] > 2 ? g->node_in[node][2] : -1;
    const lithe_tensor *Z = const_of(g, zs, LITHE_I64);
    if (!S || S->ndim > 1 || S->numel < 1 || (zs >= 0 && (!Z || Z->numel != S->numel))) return false;
    const lithe__onnx_attr *a = lithe__onnx_attr_get(&g->onnx.nodes[node], "axis"), *bs =
        lithe__onnx_attr_get(&g->onnx.nodes[node], "block_size");
    if (bs && bs->i) return false;
    p->n = S->numel;
    p->axis = a ? a->i : 1;
    if (p->axis < 0) p->axis += rank;
    if (p->n > 1 && (p->axis < 0 || p->axis >= rank)) return false;
    p->s = (const float *)lithe__tdata(S);
    p->z = Z ? (const int64_t *)lithe__tdata(Z) : NULL;
    for (int64_t c = 0; c < p->n; c++)
        if (!isfinite(p->s[c]) || !(p->s[c] > 0.0f)) return false;
    return true;
}

/* Slot a = DQ(Q(X)) with one equal scale and zero point, int8 or uint8 codes, the DQ read by `user`
 * alone: fu's q_*, *X, and the nodes that die. */
static bool act_pair(const qf *f, int64_t a, int64_t user, lithe__gfuse *fu, int64_t *X, int64_t *dead, size_t *nd) {
    const lithe__graph *g = f->g;
    int64_t dq = a >= 0 ? f->producer[a] : -1;
    if (!is_node(f, dq, "DequantizeLinear", false) || (user >= 0 && only_reader(f, a) != user)) return false;
    int64_t qo = g->node_in[dq][0], q = qo >= 0 ? f->producer[qo] : -1;
    qp pq, pd;
    if (!is_node(f, q, "QuantizeLinear", false) || g->node_in[q][0] < 0 || !qparams(f, q, 1, &pq) ||
        !qparams(f, dq, 1, &pd) || pq.n != 1 || pd.n != 1 || pq.s[0] != pd.s[0] ||
        (pq.z ? pq.z[0] : 0) != (pd.z ? pd.z[0] : 0))
        return false;
    int32_t t = lithe__graph_slot_type(g, qo);
    if (t != LITHE__ONNX_INT8 && t != LITHE__ONNX_UINT8) return false;
    fu->q_scale = pq.s[0];
    fu->q_zero = (int32_t)(pq.z ? pq.z[0] : 0);
    fu->q_min = t == LITHE__ONNX_INT8 ? -128 : 0;
    fu->q_max = t == LITHE__ONNX_INT8 ? 127 : 255;
    if (fu->q_zero < fu->q_min || fu->q_zero > fu->q_max) return false;
    *X = g->node_in[q][0];
    dead[(*nd)++] = dq;
    if (only_reader(f, qo) == dq) dead[(*nd)++] = q;
    return true;
}

/* Slot w: DQ(int8 codes) folded at load, read by `user` alone, zero points 0, scales per tensor or
 * along axis `chan_axis` of the codes. *out: the codes as an I8 tensor, (rows, cols) = the codes'
 * (transposed when `transpose`: a (K, N) MatMul weight becomes (N, K)), its quant params per row. */
static lithe_status weight_q8(const qf *f, int64_t w, int64_t user, int chan_axis, bool transpose, lithe_tensor **out) {
    const lithe__graph *g = f->g;
    *out = NULL;
    int64_t dq = w >= 0 ? f->producer[w] : -1;
    if (!const_of(g, w, LITHE_F32) || only_reader(f, w) != user || !is_node(f, dq, "DequantizeLinear", true))
        return LITHE_OK;
    int64_t cs = g->node_in[dq][0];
    const lithe_tensor *C = const_of(g, cs, LITHE_I64);
    qp p;
    if (!C || C->ndim < 2 || lithe__graph_slot_type(g, cs) != LITHE__ONNX_INT8 || !qparams(f, dq, C->ndim, &p) ||
        (p.n > 1 && p.axis != chan_axis) || (transpose && C->ndim != 2))
        return LITHE_OK;
    for (int64_t c = 0; p.z && c < p.n; c++)
        if (p.z[c]) return LITHE_OK; /* asymmetric: gemm_q8 takes zero points 0 */
    int64_t shape[LITHE_MAX_DIMS];
    memcpy(shape, C->shape, sizeof(int64_t) * (size_t)C->ndim);
    if (transpose) shape[0] = C->shape[1], shape[1] = C->shape[0];
    lithe_tensor *t = NULL;
    LITHE__TRY(lithe__tensor_alloc(lithe__backend_host(), LITHE_I8, C->ndim, shape, false, &t));
    const int64_t *src = (const int64_t *)lithe__tdata(C);
    int8_t *dst = (int8_t *)lithe__tdata(t);
    int64_t R = C->shape[0], Kc = C->numel / (R ? R : 1);
    for (int64_t i = 0; i < C->numel; i++) {
        int64_t v = src[i] < -128 ? -128 : src[i] > 127 ? 127 : src[i]; /* checked at load; clamped to be sure */
        if (transpose) dst[(i % Kc) * R + i / Kc] = (int8_t)v;
        else dst[i] = (int8_t)v;
    }
    lithe_status s = lithe_tensor_set_quant_params(t, p.n > 1 ? 0 : -1, p.n, p.s, NULL);
    if (s != LITHE_OK) lithe_tensor_release(t);
    else *out = t;
    return s;
}

/* A float 1-D constant of n values (not a trainable param: the fused nodes have no backward, and a
 * param bias keeps its gradient through the Add / Gemm left unfused). */
static bool vec_of(const qf *f, int64_t s, int64_t n) {
    const lithe_tensor *t = s >= 0 ? const_of(f->g, s, LITHE_F32) : NULL;
    return t && t->ndim == 1 && t->numel == n;
}

/* The Relu, or Clip with constant bounds, reading y alone: fu's act and *end. */
static void act_after(const qf *f, int64_t y, lithe__gfuse *fu, int64_t *end, int64_t *dead, size_t *nd) {
    const lithe__graph *g = f->g;
    int64_t r = only_reader(f, y);
    if (is_node(f, r, "Relu", false)) {
        fu->act = (lithe__act){.kind = LITHE__ACT_RELU};
    } else if (is_node(f, r, "Clip", false) && g->node_nin[r] <= 3 && g->node_in[r][0] == y) {
        const lithe__onnx_node *n = &g->onnx.nodes[r];
        const lithe__onnx_attr *mn = lithe__onnx_attr_get(n, "min"), *mx = lithe__onnx_attr_get(n, "max");
        lithe__act a = {.kind = LITHE__ACT_CLIPPED_LINEAR, .slope = 1.0f, .offset = 0.0f,
                        .min_val = mn ? mn->f : -INFINITY, .max_val = mx ? mx->f : INFINITY};
        for (size_t k = 1; k < g->node_nin[r]; k++) {
            const lithe_tensor *c = const_of(g, g->node_in[r][k], LITHE_F32);
            if (g->node_in[r][k] < 0) continue;
            if (!c || c->numel != 1) return;
            if (k == 1) a.min_val = lithe__f32(c)[0];
            else a.max_val = lithe__f32(c)[0];
        }
        fu->act = a;
    } else {
        return;
    }
    fu->has_act = true;
    dead[(*nd)++] = *end;
    *end = r;
}

static lithe_status rewrite(qf *f, int64_t end, const lithe__graph_op *op, const lithe__gfuse *fu, const int64_t *in,
                            size_t n, const int64_t *dead, size_t n_dead, int64_t wslot, lithe_tensor *W) {
    lithe__graph *g = f->g;
    int64_t *arr = lithe__calloc(n + 1, sizeof *arr);
    if (!arr) {
        lithe_tensor_release(W);
        return lithe__oom("onnx_graph", (n + 1) * sizeof *arr);
    }
    memcpy(arr, in, n * sizeof *arr);
    lithe__free(g->node_in[end]);
    g->node_in[end] = arr;
    g->node_nin[end] = n;
    g->node_op[end] = op;
    g->node_fuse[end] = *fu;
    for (size_t k = 0; k < n_dead; k++)
        if (dead[k] != end) g->node_dead[dead[k]] = true;
    if (W) { /* the int8 codes replace the float32 constant binding folded */
        lithe_tensor_release(g->slot_const[wslot]);
        g->slot_const[wslot] = W;
    }
    g->n_fused++;
    qindex(f);
    int64_t dq = W ? f->producer[wslot] : -1, cs = dq >= 0 && g->node_nin[dq] ? g->node_in[dq][0] : -1;
    if (cs >= 0 && !f->n_readers[cs] && g->slot_kind[cs] == SLOT_CONST) { /* the int64 codes: no reader left */
        lithe_tensor_release(g->slot_const[cs]);
        g->slot_const[cs] = NULL;
        if ((size_t)cs < g->onnx.n_inits) { /* and the parsed initializer's copy (binding, which read it, is over) */
            lithe__free(g->onnx.inits[cs].data);
            g->onnx.inits[cs].data = NULL;
        }
    }
    return LITHE_OK;
}

static lithe_status try_qlinear(qf *f, int64_t mm) {
    lithe__graph *g = f->g;
    bool gemm = is_node(f, mm, "Gemm", false);
    if ((!gemm && !is_node(f, mm, "MatMul", false)) || g->node_nin[mm] < 2) return LITHE_OK;
    lithe__gfuse fu = {.kind = LITHE__FUSE_QLINEAR, .first = (size_t)mm};
    int64_t X = -1, dead[8], end = mm, y = g->node_out[mm][0], bias = -1;
    size_t nd = 0;
    bool tB = false;
    if (gemm) {
        const lithe__onnx_node *n = &g->onnx.nodes[mm];
        const lithe__onnx_attr *al = lithe__onnx_attr_get(n, "alpha"), *be = lithe__onnx_attr_get(n, "beta"),
                               *ta = lithe__onnx_attr_get(n, "transA"), *tb = lithe__onnx_attr_get(n, "transB");
        if ((al && al->f != 1.0f) || (be && be->f != 1.0f) || (ta && ta->i)) return LITHE_OK;
        tB = tb && tb->i;
    }
    if (!act_pair(f, g->node_in[mm][0], mm, &fu, &X, dead, &nd)) return LITHE_OK;
    int64_t w = g->node_in[mm][1];
    lithe_tensor *W = NULL;
    LITHE__TRY(weight_q8(f, w, mm, tB ? 0 : 1, !tB, &W));
    if (!W) return LITHE_OK;
    int64_t N = W->shape[0];
    if (gemm && g->node_nin[mm] > 2 && g->node_in[mm][2] >= 0) {
        bias = g->node_in[mm][2];
        if (!vec_of(f, bias, N)) bias = -2;
    } else if (!gemm) { /* MatMul: an Add of a bias vector reading it alone */
        int64_t ad = only_reader(f, y), b = -1;
        if (is_node(f, ad, "Add", false) && g->node_nin[ad] == 2)
            b = g->node_in[ad][0] == y ? g->node_in[ad][1] : g->node_in[ad][1] == y ? g->node_in[ad][0] : -1;
        if (b >= 0 && b != y && vec_of(f, b, N)) {
            bias = b;
            dead[nd++] = mm;
            end = ad;
            y = g->node_out[ad][0];
        }
    }
    if (bias == -2) { /* a Gemm's C that is not a bias vector: the float path */
        lithe_tensor_release(W);
        return LITHE_OK;
    }
    act_after(f, y, &fu, &end, dead, &nd);
    int64_t in[3] = {X, w, bias};
    return rewrite(f, end, &lithe__fused_qlinear_op, &fu, in, bias >= 0 ? 3 : 2, dead, nd, w, W);
}

static lithe_status try_qconv(qf *f, int64_t cv) {
    lithe__graph *g = f->g;
    if (!is_node(f, cv, "Conv", false) || g->node_nin[cv] < 2 || g->node_nin[cv] > 3) return LITHE_OK;
    lithe__gfuse fu = {.kind = LITHE__FUSE_QCONV, .first = (size_t)cv};
    int64_t X = -1, dead[8], end = cv, bias = g->node_nin[cv] > 2 ? g->node_in[cv][2] : -1;
    size_t nd = 0;
    if (!act_pair(f, g->node_in[cv][0], cv, &fu, &X, dead, &nd)) return LITHE_OK;
    int64_t w = g->node_in[cv][1];
    lithe_tensor *W = NULL;
    LITHE__TRY(weight_q8(f, w, cv, 0, false, &W));
    if (!W) return LITHE_OK;
    if (W->ndim < 3 || W->ndim > 4 || (bias >= 0 && !vec_of(f, bias, W->shape[0]))) {
        lithe_tensor_release(W);
        return LITHE_OK;
    }
    dead[nd++] = cv; /* kept as the fused node when no activation follows (rewrite skips end) */
    act_after(f, g->node_out[cv][0], &fu, &end, dead, &nd);
    int64_t in[3] = {X, w, bias};
    return rewrite(f, end, &lithe__fused_qconv_op, &fu, in, bias >= 0 ? 3 : 2, dead, nd, w, W);
}

/* A fused:QConv whose output only a fused:QConv reads, as its X (the Q -> DQ pair between them the
 * reader absorbed; not a graph output, no Add or other float reader), where the producer or the
 * reader is depthwise (grouped): the producer writes the reader's codes (ops/qfused.c), the reader
 * quantizing nothing. The codes are the CPU conv_q8's requantization (backends/cpu/conv/qconv.h:
 * one multiply per value, onnxruntime's QLinearConv rule; within one code of the reader's
 * QuantizeLinear of the float32, equal but at ties), or that QuantizeLinear's where the activation
 * is not a relu / clip. Group 1 into group 1 stays float32 (the reader's quantizing pass packs its
 * columns anyway; mobilenet_v2 has no such pair). */
static void chain_codes(qf *f) {
    lithe__graph *g = f->g;
    for (size_t i = 0; i < g->onnx.n_nodes; i++) {
        lithe__gfuse *p = &g->node_fuse[i];
        if (g->node_dead[i] || p->kind != LITHE__FUSE_QCONV || g->node_nout[i] != 1 || g->node_out[i][0] < 0) continue;
        int64_t y = g->node_out[i][0], r = only_reader(f, y);
        if (r < 0 || g->node_dead[r] || g->node_fuse[r].kind != LITHE__FUSE_QCONV || g->node_in[r][0] != y) continue;
        const lithe__onnx_attr *gp = lithe__onnx_attr_get(&g->onnx.nodes[p->first], "group"),
                               *gr = lithe__onnx_attr_get(&g->onnx.nodes[g->node_fuse[r].first], "group");
        if ((!gp || gp->i < 2) && (!gr || gr->i < 2)) continue;
        const lithe__gfuse *c = &g->node_fuse[r];
        if (c->q_max - c->q_min != 255 || (c->q_min != 0 && c->q_min != -128)) continue;
        p->o_codes = true;
        p->o_scale = c->q_scale, p->o_zero = c->q_zero, p->o_min = c->q_min, p->o_max = c->q_max;
    }
}

/* A DQ(Q(X)) pair left: one float pass. */
static lithe_status try_fakeq(qf *f, int64_t dq) {
    lithe__gfuse fu = {.kind = LITHE__FUSE_FAKEQ, .first = (size_t)dq};
    int64_t X = -1, dead[2];
    size_t nd = 0;
    if (!is_node(f, dq, "DequantizeLinear", false) ||
        !act_pair(f, f->g->node_out[dq][0] >= 0 ? f->g->node_out[dq][0] : -1, -1, &fu, &X, dead, &nd))
        return LITHE_OK;
    return rewrite(f, dq, &lithe__fused_fakeq_op, &fu, (int64_t[]){X}, 1, dead, nd, -1, NULL);
}

lithe_status lithe__graph_fuse_qdq(lithe__graph *g) {
    size_t ns = g->n_slots + 1, nn = g->onnx.n_nodes;
    bool any = false;
    for (size_t i = 0; i < nn && !any; i++) any = !strcmp(g->onnx.nodes[i].op_type, "DequantizeLinear");
    if (!any) return LITHE_OK;
    qf f = {g, lithe__calloc(ns, sizeof(int64_t)), lithe__calloc(ns, sizeof(int64_t)), lithe__calloc(ns, sizeof(int64_t))};
    lithe_status s = f.producer && f.n_readers && f.reader ? LITHE_OK : lithe__oom("onnx_graph", ns * 24);
    if (s == LITHE_OK) qindex(&f);
    for (size_t i = 0; s == LITHE_OK && i < nn; i++) s = try_qlinear(&f, (int64_t)i);
    for (size_t i = 0; s == LITHE_OK && i < nn; i++) s = try_qconv(&f, (int64_t)i);
    if (s == LITHE_OK) chain_codes(&f);
    for (size_t i = 0; s == LITHE_OK && i < nn; i++) s = try_fakeq(&f, (int64_t)i);
    lithe__free(f.producer);
    lithe__free(f.n_readers);
    lithe__free(f.reader);
    return s;
}
