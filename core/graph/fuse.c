/* Load-time fusion for the graph layer: patterns that exporters decompose, rewritten as one node
 * each, so a run makes one backend call where the graph has five to ten (docs/onnx.md, "Fusion").
 *
 *   LayerNorm   m = ReduceMean(X, axes [-1]); d = Sub(X, m); v = ReduceMean(Pow(d, 2), axes [-1]);
 *               Y = Add(Mul(Div(d, Sqrt(Add(v, eps))), scale), bias)      (torch.onnx, opset < 17)
 *               -> the layernorm primitive (row statistics in double)
 *   Linear      Y = [Relu](Add(MatMul(A, W), bias))  or  Y = [Relu](Gemm(A, W, bias)), W a weight or
 *               Transpose(weight)
 *               -> gemm_bias_act: bias and activation applied to each C tile as it is written
 *   GELU        Y = Mul(Mul(X, Add(Erf(Div(X, sqrt 2)), 1)), 0.5)   (F.gelu's export)
 *               or Mul(Mul(X, 0.5), Add(Erf(Div(X, sqrt 2)), 1))     (0.5 x (1 + erf(x / sqrt 2)))
 *               -> the act primitive's GELU (Thinc's erf: within 1.5e-7 of erf), and into a
 *               Linear just before it
 *   Conv + act  Y = Relu(Conv(X, W, [b]))  or  Y = Clip(Conv(X, W, [b]), min, max) (ReLU6: 0, 6),
 *               min / max scalar constants (inputs, or attrs before opset 11) or absent (±inf);
 *               or Sigmoid, HardSigmoid, HardSwish of it, or HardSwish's opset-13 export
 *               Mul(Z, HardSigmoid(Z)) (alpha 1/6, beta 1/2: mobilenet_v3's, as HardSwish)
 *               -> conv2d with the activation (the CPU applies it while the output is in cache)
 *
 *   MatMul + Transposes  Y = [Transpose](MatMul([Transpose](A), [Transpose](B))), rank-3 perms that
 *               keep the innermost axis in the last two (attention's heads: torch's Kᵀ, V and the
 *               heads' merge), A and B computed by nodes (not weights)
 *               -> one GEMM per batch reading and writing the transposed layouts in place
 *
 *   scalar op before a Transpose  Div(Transpose(X), c) / Mul(Transpose(X), c), c one element:
 *               reordered (not fused) to Transpose(Div(X, c)), before the MatMul fusion, so
 *               attention's Q Transpose (Q / sqrt(d) after it) is folded as K's is
 *
 *   Conv + Add  Y = Add(Conv(X, W, [b]), R)  or  Add(R, Conv(...))  (a residual block's projection,
 *               mobilenet_v2's), the Conv not fused with an activation
 *               -> conv2d with the residual added as each output is stored (backends with
 *               conv2d_add; the others, and a residual that broadcasts, run Conv then Add)
 *
 * A pattern is taken only when it is exactly the decomposition: every intermediate value read by
 * the next node of the pattern alone (not by another node, not a graph output), the constants it
 * needs (Pow's 2, a scalar eps, axes [-1], Gemm's alpha = beta = 1 and no transA), and weights
 * whose shapes are known at load (an initializer, or an Identity of one): scale / bias 1-D of the
 * normalised width (at least 2), W 2-D with a bias of its output width. Anything else runs node by
 * node, as before. The fused node sits at the pattern's last node (its inputs are all defined
 * earlier); the others are marked dead and never run. Backward runs through the fused ops too. */
#include "graph.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct fuser {
    lithe__graph *g;
    int64_t *producer;  /* per slot: the live node computing it, -1 */
    int64_t *n_readers; /* per slot: live node inputs reading it, + 1 if a graph output */
    int64_t *reader;    /* per slot: the last live node reading it */
} fuser;

/* Who computes and who reads each slot, over the live nodes (again after each rewrite, which moves
 * readers into the fused node). */
static void index_readers(fuser *f) {
    const lithe__graph *g = f->g;
    for (size_t i = 0; i < g->n_slots + 1; i++) {
        f->producer[i] = f->reader[i] = -1;
        f->n_readers[i] = 0;
    }
    for (size_t i = 0; i < g->onnx.n_nodes; i++) {
        if (lithe__gnode_skipped(g, i)) continue;
        for (size_t k = 0; k < g->node_nout[i]; k++)
            if (g->node_out[i][k] >= 0) f->producer[g->node_out[i][k]] = (int64_t)i;
        for (size_t k = 0; k < g->node_nin[i]; k++) {
            int64_t sl = g->node_in[i][k];
            if (sl < 0) continue;
            f->n_readers[sl]++;
            f->reader[sl] = (int64_t)i;
        }
    }
    for (size_t i = 0; i < g->n_out; i++) f->n_readers[g->out_slots[i]]++;
}

static bool is_op(const fuser *f, int64_t node, const char *op) {
    if (node < 0) return false;
    const lithe__onnx_node *n = &f->g->onnx.nodes[node];
    bool custom = n->domain && *n->domain && strcmp(n->domain, "ai.onnx");
    /* every node of a pattern has inputs and exactly one output (a hostile file may give others) */
    return !custom && !f->g->node_dead[node] && f->g->node_fuse[node].kind == LITHE__FUSE_NONE &&
           f->g->node_nin[node] >= 1 && f->g->node_nout[node] == 1 && f->g->node_out[node][0] >= 0 &&
           !strcmp(n->op_type, op);
}

/* The one node reading slot s (-1: none, several, or a graph output). */
static int64_t only_reader(const fuser *f, int64_t s) {
    return s >= 0 && f->n_readers[s] == 1 ? f->reader[s] : -1;
}

/* The weight a slot holds when its shape is known at load: an initializer (param or constant), or
 * an Identity chain from one. Writes its shape; false otherwise. */
static bool static_shape(const fuser *f, int64_t s, int *ndim, int64_t *dims) {
    const lithe__graph *g = f->g;
    for (int hops = 0; s >= 0 && hops < 16; hops++) {
        if (g->slot_kind[s] == SLOT_CONST && g->slot_const[s]) {
            const lithe_tensor *t = g->slot_const[s];
            if (t->dtype != LITHE_F32) return false;
            *ndim = t->ndim;
            memcpy(dims, t->shape, sizeof(int64_t) * (size_t)t->ndim);
            return true;
        }
        if (g->slot_kind[s] == SLOT_PARAM) { /* the first n_inits slots are the initializers, in order */
            if ((size_t)s >= g->onnx.n_inits) return false;
            const lithe__onnx_tensor *t = &g->onnx.inits[s];
            if (!t->is_float) return false;
            *ndim = t->ndim;
            memcpy(dims, t->dims, sizeof(int64_t) * (size_t)t->ndim);
            return true;
        }
        int64_t p = f->producer[s];
        if (!is_op(f, p, "Identity") || g->node_nin[p] < 1) return false;
        s = g->node_in[p][0];
    }
    return false;
}

static bool const_scalar(const fuser *f, int64_t s, float *v) {
    const lithe__graph *g = f->g;
    if (s < 0 || g->slot_kind[s] != SLOT_CONST || !g->slot_const[s]) return false;
    const lithe_tensor *t = g->slot_const[s];
    if (t->dtype != LITHE_F32 || t->numel != 1) return false;
    *v = lithe__f32(t)[0];
    return true;
}

/* ReduceMean over the last axis only, keeping it. */
static bool mean_last_axis(const fuser *f, int64_t node) {
    const lithe__graph *g = f->g;
    const lithe__onnx_node *n = &g->onnx.nodes[node];
    const lithe__onnx_attr *kd = lithe__onnx_attr_get(n, "keepdims");
    if (kd && kd->i != 1) return false;
    const int64_t *axes = NULL;
    size_t na = 0;
    const lithe__onnx_attr *a = lithe__onnx_attr_get(n, "axes");
    if (a) {
        axes = a->ints;
        na = a->n_ints;
    }
    if (g->node_nin[node] > 1 && g->node_in[node][1] >= 0) { /* opset 18: axes as an input */
        int64_t s = g->node_in[node][1];
        if (g->slot_kind[s] != SLOT_CONST || !g->slot_const[s] || g->slot_const[s]->dtype != LITHE_I64) return false;
        axes = (const int64_t *)lithe__tdata(g->slot_const[s]);
        na = (size_t)g->slot_const[s]->numel;
    }
    return na == 1 && axes[0] == -1;
}

/* The input of a two-input node that is not `s` (-1 if both or neither are). */
static int64_t other_input(const lithe__graph *g, int64_t node, int64_t s) {
    if (g->node_nin[node] != 2) return -1;
    int64_t a = g->node_in[node][0], b = g->node_in[node][1];
    return a == s && b != s ? b : b == s && a != s ? a : -1;
}

/* Moves node `end` to the fused op with inputs in[0..n) and marks `dead` nodes. */
static lithe_status rewrite(fuser *f, int64_t end, const lithe__graph_op *op, const lithe__gfuse *fu, const int64_t *in,
                            size_t n, const int64_t *dead, size_t n_dead) {
    lithe__graph *g = f->g;
    int64_t *arr = lithe__calloc(n + 1, sizeof *arr);
    if (!arr) return lithe__oom("onnx_graph", (n + 1) * sizeof *arr);
    memcpy(arr, in, n * sizeof *arr);
    lithe__free(g->node_in[end]);
    g->node_in[end] = arr;
    g->node_nin[end] = n;
    g->node_op[end] = op;
    g->node_fuse[end] = *fu;
    for (size_t k = 0; k < n_dead; k++) g->node_dead[dead[k]] = true;
    g->n_fused++;
    index_readers(f);
    return LITHE_OK;
}

static lithe_status try_layernorm(fuser *f, int64_t m1) {
    lithe__graph *g = f->g;
    if (!is_op(f, m1, "ReduceMean") || !mean_last_axis(f, m1) || g->node_nout[m1] != 1) return LITHE_OK;
    int64_t X = g->node_in[m1][0], mu = g->node_out[m1][0];
    if (X < 0) return LITHE_OK;
    int64_t sub = only_reader(f, mu);
    if (!is_op(f, sub, "Sub") || g->node_nin[sub] != 2 || g->node_in[sub][0] != X || g->node_in[sub][1] != mu)
        return LITHE_OK;
    int64_t d = g->node_out[sub][0];
    if (f->n_readers[d] != 2) return LITHE_OK; /* Pow and the Div */
    int64_t pw = -1, dv = -1;
    for (size_t i = (size_t)sub + 1; i < g->onnx.n_nodes; i++) {
        if (g->node_dead[i]) continue;
        for (size_t k = 0; k < g->node_nin[i]; k++)
            if (g->node_in[i][k] == d) {
                if (is_op(f, (int64_t)i, "Pow") && k == 0) pw = (int64_t)i;
                else if (is_op(f, (int64_t)i, "Div") && k == 0) dv = (int64_t)i;
            }
    }
    float two = 0.0f, eps = 0.0f;
    if (pw < 0 || dv < 0 || g->node_nin[pw] != 2 || !const_scalar(f, g->node_in[pw][1], &two) || two != 2.0f)
        return LITHE_OK;
    int64_t m2 = only_reader(f, g->node_out[pw][0]);
    if (!is_op(f, m2, "ReduceMean") || !mean_last_axis(f, m2)) return LITHE_OK;
    int64_t ae = only_reader(f, g->node_out[m2][0]);
    if (!is_op(f, ae, "Add") || !const_scalar(f, other_input(g, ae, g->node_out[m2][0]), &eps) || !(eps >= 0.0f))
        return LITHE_OK;
    int64_t sq = only_reader(f, g->node_out[ae][0]);
    if (!is_op(f, sq, "Sqrt") || only_reader(f, g->node_out[sq][0]) != dv || g->node_nin[dv] != 2 ||
        g->node_in[dv][1] != g->node_out[sq][0])
        return LITHE_OK;
    int64_t ml = only_reader(f, g->node_out[dv][0]);
    if (!is_op(f, ml, "Mul")) return LITHE_OK;
    int64_t scale = other_input(g, ml, g->node_out[dv][0]);
    int64_t ad = only_reader(f, g->node_out[ml][0]);
    if (!is_op(f, ad, "Add")) return LITHE_OK;
    int64_t bias = other_input(g, ad, g->node_out[ml][0]);
    int sn = 0, bn = 0;
    int64_t sd[LITHE_MAX_DIMS], bd[LITHE_MAX_DIMS];
    if (scale < 0 || bias < 0 || !static_shape(f, scale, &sn, sd) || !static_shape(f, bias, &bn, bd) || sn != 1 ||
        bn != 1 || sd[0] < 2 || bd[0] != sd[0])
        return LITHE_OK;
    lithe__gfuse fu = {.kind = LITHE__FUSE_LAYERNORM, .eps = eps, .first = (size_t)m1};
    int64_t dead[] = {m1, sub, pw, m2, ae, sq, dv, ml};
    return rewrite(f, ad, &lithe__fused_layernorm_op, &fu, (int64_t[]){X, scale, bias}, 3, dead, 8);
}

static bool near(float v, double want) { return v >= want * (1 - 1e-6) && v <= want * (1 + 1e-6); }

/* A Mul of s by the constant c (either side), or -1. */
static int64_t mul_by(const fuser *f, int64_t node, int64_t s, double c) {
    float v = 0.0f;
    return is_op(f, node, "Mul") && const_scalar(f, other_input(f->g, node, s), &v) && near(v, c) ? node : -1;
}

static lithe_status try_gelu(fuser *f, int64_t dv) {
    lithe__graph *g = f->g;
    float c = 0.0f;
    if (!is_op(f, dv, "Div") || g->node_nin[dv] != 2 || !const_scalar(f, g->node_in[dv][1], &c) ||
        !near(c, 1.4142135623730951))
        return LITHE_OK;
    int64_t X = g->node_in[dv][0];
    if (X < 0) return LITHE_OK;
    int64_t er = only_reader(f, g->node_out[dv][0]);
    if (!is_op(f, er, "Erf")) return LITHE_OK;
    int64_t e = g->node_out[er][0], ad = only_reader(f, e);
    float one = 0.0f;
    if (!is_op(f, ad, "Add") || !const_scalar(f, other_input(g, ad, e), &one) || one != 1.0f) return LITHE_OK;
    int64_t a = g->node_out[ad][0], m1 = only_reader(f, a);
    if (!is_op(f, m1, "Mul")) return LITHE_OK;
    int64_t other = other_input(g, m1, a), end = -1, dead[5] = {dv, er, ad, m1, -1};
    if (other == X) { /* Mul(Mul(X, a), 0.5) */
        end = mul_by(f, only_reader(f, g->node_out[m1][0]), g->node_out[m1][0], 0.5);
        dead[3] = m1;
    } else if (other >= 0 && only_reader(f, other) == m1 && mul_by(f, f->producer[other], X, 0.5) >= 0) {
        end = m1; /* Mul(Mul(X, 0.5), a) */
        dead[3] = f->producer[other];
    }
    if (end < 0) return LITHE_OK;
    lithe__gfuse fu = {.kind = LITHE__FUSE_ACT, .first = (size_t)dv};
    fu.act.kind = LITHE__ACT_GELU;
    return rewrite(f, end, &lithe__fused_act_op, &fu, (int64_t[]){X}, 1, dead, 4);
}

static lithe_status try_linear(fuser *f, int64_t mm) {
    lithe__graph *g = f->g;
    bool gemm = is_op(f, mm, "Gemm");
    if ((!gemm && !is_op(f, mm, "MatMul")) || g->node_nout[mm] != 1 || g->node_nin[mm] < 2) return LITHE_OK;
    int64_t A = g->node_in[mm][0], W = g->node_in[mm][1], bias = -1, end = mm, y = g->node_out[mm][0];
    int wn = 0, bn = 0;
    int64_t wd[LITHE_MAX_DIMS], bd[LITHE_MAX_DIMS];
    bool tB = false, tW = false;
    int64_t dead[3];
    size_t n_dead = 0;
    /* W = Transpose(weight) read by this node alone (an export without constant folding keeps
     * Linear's weight as the param and transposes it in the graph): the product reads the weight
     * transposed, and its gradient reaches the param directly */
    int64_t tp = W >= 0 ? f->producer[W] : -1;
    if (is_op(f, tp, "Transpose") && only_reader(f, W) == mm && g->node_nin[tp] >= 1) {
        const lithe__onnx_attr *pa = lithe__onnx_attr_get(&g->onnx.nodes[tp], "perm");
        int64_t src = g->node_in[tp][0];
        if ((!pa || (pa->n_ints == 2 && pa->ints[0] == 1 && pa->ints[1] == 0)) && static_shape(f, src, &wn, wd) &&
            wn == 2) {
            W = src;
            tW = true;
            dead[n_dead++] = tp;
            int64_t t = wd[0];
            wd[0] = wd[1];
            wd[1] = t; /* wd: the shape of the transposed W, as the node sees it */
        }
    }
    if (A < 0 || W < 0 || y < 0 || (!tW && (!static_shape(f, W, &wn, wd) || wn != 2))) return LITHE_OK;
    if (gemm) {
        const lithe__onnx_node *n = &g->onnx.nodes[mm];
        const lithe__onnx_attr *al = lithe__onnx_attr_get(n, "alpha"), *be = lithe__onnx_attr_get(n, "beta"),
                               *ta = lithe__onnx_attr_get(n, "transA"), *tb = lithe__onnx_attr_get(n, "transB");
        if ((al && al->f != 1.0f) || (be && be->f != 1.0f) || (ta && ta->i)) return LITHE_OK;
        tB = tb && tb->i;
        bias = g->node_nin[mm] > 2 ? g->node_in[mm][2] : -1;
    } else {
        int64_t ad = only_reader(f, y);
        if (!is_op(f, ad, "Add")) return LITHE_OK;
        bias = other_input(g, ad, y);
        if (bias < 0) return LITHE_OK;
        dead[n_dead++] = mm;
        end = ad;
        y = g->node_out[ad][0];
    }
    int64_t N = tB ? wd[0] : wd[1];
    tB = tB != tW; /* the weight as stored: transposed once more when a Transpose node was absorbed */
    if (bias >= 0 && (!static_shape(f, bias, &bn, bd) || bn != 1 || bd[0] != N)) return LITHE_OK;
    lithe__gfuse fu = {.kind = LITHE__FUSE_LINEAR, .transB = tB, .first = (size_t)mm};
    int64_t r = only_reader(f, y);
    bool gelu = r >= 0 && !g->node_dead[r] && g->node_fuse[r].kind == LITHE__FUSE_ACT && g->node_in[r][0] == y;
    if (is_op(f, r, "Relu") || gelu) {
        fu.has_act = true;
        fu.act = gelu ? g->node_fuse[r].act : (lithe__act){.kind = LITHE__ACT_RELU};
        dead[n_dead++] = end;
        end = r;
        if (gelu) { /* the fused GELU node becomes the Linear */
            g->node_fuse[r].kind = LITHE__FUSE_NONE;
            g->n_fused--;
        }
    } else if (gemm && bias < 0 && !tW) { /* a Gemm alone gains from the bias epilogue only */
        return LITHE_OK;
    }
    return rewrite(f, end, &lithe__fused_linear_op, &fu, (int64_t[]){A, W, bias}, bias >= 0 ? 3 : 2, dead, n_dead);
}

/* HardSigmoid's alpha, beta (ONNX defaults 0.2, 0.5); false for a negative alpha (f_act refuses it). */
static bool hard_sigmoid_params(const fuser *f, int64_t node, float *alpha, float *beta) {
    const lithe__onnx_node *n = &f->g->onnx.nodes[node];
    const lithe__onnx_attr *al = lithe__onnx_attr_get(n, "alpha"), *be = lithe__onnx_attr_get(n, "beta");
    *alpha = al ? al->f : 0.2f;
    *beta = be ? be->f : 0.5f;
    return *alpha >= 0.0f;
}

/* The activation a Conv's output y feeds, as the node that ends it (*end) and the nodes it
 * absorbs besides the Conv (dead[1..]): Relu, a constant Clip, Sigmoid, HardSigmoid, HardSwish,
 * or HardSwish's opset-13 export Mul(y, HardSigmoid(y)) (alpha 1/6, beta 1/2; either operand
 * order), the HardSigmoid read by that Mul alone. false: none of these. */
static bool conv_act_of(const fuser *f, int64_t y, lithe__act *act, int64_t *end, int64_t *dead, size_t *n_dead) {
    const lithe__graph *g = f->g;
    int64_t r = only_reader(f, y);
    *end = r;
    if (r < 0 && f->n_readers[y] == 2) { /* x * HardSigmoid(x): y read by the HardSigmoid and the Mul */
        int64_t hs = -1, ml = -1;
        for (size_t i = 0; i < g->onnx.n_nodes; i++) {
            if (g->node_dead[i]) continue;
            for (size_t k = 0; k < g->node_nin[i]; k++)
                if (g->node_in[i][k] == y) {
                    if (is_op(f, (int64_t)i, "HardSigmoid") && k == 0 && g->node_nin[i] == 1) hs = (int64_t)i;
                    else if (is_op(f, (int64_t)i, "Mul")) ml = (int64_t)i;
                }
        }
        float al = 0.0f, be = 0.0f;
        if (hs < 0 || ml < 0 || only_reader(f, g->node_out[hs][0]) != ml ||
            other_input(g, ml, g->node_out[hs][0]) != y || !hard_sigmoid_params(f, hs, &al, &be) ||
            !near(al, 1.0 / 6.0) || be != 0.5f)
            return false;
        act->kind = LITHE__ACT_HARD_SWISH_MOBILENET; /* x clip(x + 3, 0, 6) / 6, HardSwish's kernel */
        *end = ml;
        dead[(*n_dead)++] = hs;
        return true;
    }
    if ((is_op(f, r, "Relu") || is_op(f, r, "Sigmoid") || is_op(f, r, "HardSwish")) && g->node_nin[r] == 1) {
        const char *op = g->onnx.nodes[r].op_type;
        act->kind = !strcmp(op, "Relu") ? LITHE__ACT_RELU : !strcmp(op, "Sigmoid") ? LITHE__ACT_SIGMOID
                                                                                  : LITHE__ACT_HARD_SWISH_MOBILENET;
        return true;
    }
    if (is_op(f, r, "HardSigmoid") && g->node_nin[r] == 1) { /* as f_act runs it: clip(alpha x + beta, 0, 1) */
        *act = (lithe__act){.kind = LITHE__ACT_CLIPPED_LINEAR, .min_val = 0.0f, .max_val = 1.0f};
        return hard_sigmoid_params(f, r, &act->slope, &act->offset);
    }
    if (is_op(f, r, "Clip") && g->node_nin[r] <= 3 && g->node_in[r][0] == y) {
        const lithe__onnx_node *n = &g->onnx.nodes[r];
        const lithe__onnx_attr *mn = lithe__onnx_attr_get(n, "min"), *mx = lithe__onnx_attr_get(n, "max");
        *act = (lithe__act){.kind = LITHE__ACT_CLIPPED_LINEAR, .slope = 1.0f, .offset = 0.0f,
                            .min_val = mn ? mn->f : -INFINITY, .max_val = mx ? mx->f : INFINITY};
        for (size_t k = 1; k < g->node_nin[r]; k++) { /* opset 11+: min, max as inputs ("" absent) */
            int64_t sl = g->node_in[r][k];
            float v = 0.0f;
            if (sl < 0) continue;
            if (!const_scalar(f, sl, &v)) return false; /* computed at run time: left as is */
            if (k == 1) act->min_val = v;
            else act->max_val = v;
        }
        return true;
    }
    return false;
}

/* Conv followed by an activation conv_act_of knows, the Conv's output read by it alone. */
static lithe_status try_conv_act(fuser *f, int64_t cv) {
    lithe__graph *g = f->g;
    if (!is_op(f, cv, "Conv") || g->node_nin[cv] < 2 || g->node_nin[cv] > 3) return LITHE_OK;
    lithe__gfuse fu = {.kind = LITHE__FUSE_CONV, .first = (size_t)cv};
    int64_t end = -1, dead[2] = {cv, -1};
    size_t n_dead = 1;
    if (!conv_act_of(f, g->node_out[cv][0], &fu.act, &end, dead, &n_dead)) return LITHE_OK;
    int64_t in[3] = {g->node_in[cv][0], g->node_in[cv][1], g->node_nin[cv] > 2 ? g->node_in[cv][2] : -1};
    if (in[0] < 0 || in[1] < 0) return LITHE_OK;
    return rewrite(f, end, &lithe__fused_conv_op, &fu, in, in[2] >= 0 ? 3 : 2, dead, n_dead);
}

/* A fused Conv + Relu whose output a max pool alone reads (as its X): both marked, so the pool's
 * indices may carry the Relu's backward (ops/window.c decides per run, by the backend). */
static void mark_relu_pool(fuser *f, int64_t cv) {
    lithe__graph *g = f->g;
    if (cv < 0 || g->node_dead[cv] || g->node_fuse[cv].kind != LITHE__FUSE_CONV ||
        g->node_fuse[cv].act.kind != LITHE__ACT_RELU)
        return;
    int64_t y = g->node_out[cv][0], p = only_reader(f, y);
    if ((!is_op(f, p, "MaxPool") && !is_op(f, p, "GlobalMaxPool")) || g->node_in[p][0] != y) return;
    g->node_win[cv].relu_pool = g->node_win[p].relu_pool = true;
}

/* A Conv whose output only an Add reads (after try_conv_act: a Conv + Relu / Clip stays that). */
static lithe_status try_conv_add(fuser *f, int64_t cv) {
    lithe__graph *g = f->g;
    if (!is_op(f, cv, "Conv") || g->node_nin[cv] < 2 || g->node_nin[cv] > 3) return LITHE_OK;
    int64_t y = g->node_out[cv][0], ad = only_reader(f, y);
    if (!is_op(f, ad, "Add")) return LITHE_OK;
    int64_t R = other_input(g, ad, y);
    int64_t in[4] = {g->node_in[cv][0], g->node_in[cv][1], g->node_nin[cv] > 2 ? g->node_in[cv][2] : -1, R};
    if (in[0] < 0 || in[1] < 0 || R < 0) return LITHE_OK;
    lithe__gfuse fu = {.kind = LITHE__FUSE_CONV_ADD, .first = (size_t)cv, .res_first = g->node_in[ad][0] == R};
    return rewrite(f, ad, &lithe__fused_conv_add_op, &fu, in, 4, (int64_t[]){cv}, 1);
}

/* A rank-3 Transpose's perm (a permutation of 0, 1, 2) into p; false without one (the default
 * reverses an unknown rank) or with another. */
static bool perm3(const fuser *f, int64_t tp, int8_t *p) {
    const lithe__onnx_attr *pa = lithe__onnx_attr_get(&f->g->onnx.nodes[tp], "perm");
    if (!pa || pa->n_ints != 3) return false;
    bool seen[3] = {false, false, false};
    for (int d = 0; d < 3; d++) {
        if (pa->ints[d] < 0 || pa->ints[d] > 2 || seen[pa->ints[d]]) return false;
        seen[pa->ints[d]] = true;
        p[d] = (int8_t)pa->ints[d];
    }
    return true;
}

/* MatMul of activations (attention's Q·Kᵀ and P·V) with rank-3 Transposes around it: an operand
 * Transpose(S, perm) read by the MatMul alone, whose last two axes keep S's innermost axis (perm[2] == 2:
 * rows of S, perm[1] == 2: S's rows read as columns), and an output Transpose, the MatMul's only
 * reader, that keeps the product's rows whole (perm[2] == 2). The fused node reads and writes those
 * layouts where they lie, one GEMM per batch with row strides (ops/matmul.c): no copy of S, of the
 * product, or of their gradients. Weights are left to the other paths (a LoRA adapter, prepared forms):
 * an operand not folded must be computed by a node. */
static lithe_status try_matmul_t(fuser *f, int64_t mm) {
    lithe__graph *g = f->g;
    if (!is_op(f, mm, "MatMul") || g->node_nin[mm] != 2) return LITHE_OK;
    lithe__gfuse fu = {.kind = LITHE__FUSE_MATMUL_T, .first = (size_t)mm, .perm_a = {-1}, .perm_b = {-1}, .perm_y = {-1}};
    int64_t in[2], dead[3], end = mm;
    size_t n_dead = 0;
    for (int k = 0; k < 2; k++) {
        int64_t s = g->node_in[mm][k], tp = s >= 0 ? f->producer[s] : -1;
        int8_t *perm = k ? fu.perm_b : fu.perm_a, p[3];
        in[k] = s;
        if (s < 0) return LITHE_OK;
        if (is_op(f, tp, "Transpose") && only_reader(f, s) == mm && g->node_in[tp][0] >= 0 && perm3(f, tp, p) &&
            (p[2] == 2 || p[1] == 2)) {
            memcpy(perm, p, 3);
            in[k] = g->node_in[tp][0];
            dead[n_dead++] = tp;
        } else if (g->slot_kind[s] == SLOT_PARAM || g->slot_kind[s] == SLOT_CONST) {
            return LITHE_OK;
        }
    }
    int64_t r = only_reader(f, g->node_out[mm][0]);
    int8_t p[3];
    if (is_op(f, r, "Transpose") && perm3(f, r, p) && p[2] == 2) {
        memcpy(fu.perm_y, p, 3);
        dead[n_dead++] = mm;
        end = r;
    }
    if (fu.perm_a[0] < 0 && fu.perm_b[0] < 0 && fu.perm_y[0] < 0) return LITHE_OK;
    return rewrite(f, end, &lithe__fused_matmul_t_op, &fu, in, 2, dead, n_dead);
}

/* Nodes i and j trade places (everything the graph keeps per node); the caller rewires them. */
static void swap_nodes(lithe__graph *g, int64_t i, int64_t j) {
#define SWAP(arr)                                                                                                      \
    do {                                                                                                               \
        unsigned char t_[sizeof(arr)[0]];                                                                              \
        memcpy(t_, &(arr)[i], sizeof t_);                                                                              \
        memcpy(&(arr)[i], &(arr)[j], sizeof t_);                                                                       \
        memcpy(&(arr)[j], t_, sizeof t_);                                                                              \
    } while (0)
    SWAP(g->onnx.nodes);
    SWAP(g->node_in);
    SWAP(g->node_out);
    SWAP(g->node_op);
    SWAP(g->node_nin);
    SWAP(g->node_nout);
    SWAP(g->node_dead);
    SWAP(g->node_fuse);
    SWAP(g->node_win);
#undef SWAP
}

/* Y = Transpose(X) op c, a scalar Mul or Div (attention's Q / sqrt(d) after Q's heads transpose),
 * X's Transpose read by it alone: rewritten Y = Transpose(X op c), the op moved to the Transpose's
 * place and the Transpose to the op's. The same elementwise op on the same values (the same bits,
 * forward and backward), and the Transpose now lies next to its reader, where a fusion (MatMul +
 * Transposes) can fold it. c is a constant of one element whose rank is at most the Transpose's
 * (so it broadcasts to the same shape either way); for Div, X is the dividend. */
static lithe_status try_scalar_first(fuser *f, int64_t tp) {
    lithe__graph *g = f->g;
    if (!is_op(f, tp, "Transpose") || g->node_nin[tp] != 1 || g->node_in[tp][0] < 0) return LITHE_OK;
    int64_t t = g->node_out[tp][0], op = only_reader(f, t);
    bool mul = is_op(f, op, "Mul");
    if ((!mul && !is_op(f, op, "Div")) || g->node_nin[op] != 2 || op <= tp) return LITHE_OK;
    int64_t c = other_input(g, op, t);
    float v = 0.0f;
    if (c < 0 || !const_scalar(f, c, &v) || (!mul && g->node_in[op][0] != t)) return LITHE_OK;
    const lithe__onnx_attr *pa = lithe__onnx_attr_get(&g->onnx.nodes[tp], "perm");
    int cr = g->slot_const[c]->ndim;
    if (cr > 0 && (!pa || (size_t)cr > pa->n_ints)) return LITHE_OK;
    int64_t x = g->node_in[tp][0], y = g->node_out[op][0];
    swap_nodes(g, tp, op); /* the op at tp: X op c -> t; the Transpose at op: t -> Y */
    for (size_t k = 0; k < 2; k++)
        if (g->node_in[tp][k] == t) g->node_in[tp][k] = x;
    g->node_out[tp][0] = t;
    g->node_in[op][0] = t;
    g->node_out[op][0] = y;
    index_readers(f);
    return LITHE_OK;
}

lithe_status lithe__graph_fuse(lithe__graph *g) {
    const char *off = lithe__knob(LITHE__KNOB_graph_fuse); /* "0": run every node as the file has it (to compare) */
    if (off && !strcmp(off, "0")) return LITHE_OK;
    LITHE__TRY(lithe__graph_fuse_qdq(g)); /* issue 24: QDQ patterns to int8 kernels, before the float fusions */
    size_t ns = g->n_slots + 1, nn = g->onnx.n_nodes;
    fuser f = {g, lithe__calloc(ns, sizeof(int64_t)), lithe__calloc(ns, sizeof(int64_t)),
               lithe__calloc(ns, sizeof(int64_t))};
    lithe_status s = f.producer && f.n_readers && f.reader ? LITHE_OK : lithe__oom("onnx_graph", ns * 24);
    if (s == LITHE_OK) index_readers(&f);
    for (size_t i = 0; s == LITHE_OK && i < nn; i++) s = try_layernorm(&f, (int64_t)i);
    for (size_t i = 0; s == LITHE_OK && i < nn; i++) s = try_gelu(&f, (int64_t)i);
    for (size_t i = 0; s == LITHE_OK && i < nn; i++) s = try_linear(&f, (int64_t)i);
    for (size_t i = 0; s == LITHE_OK && i < nn; i++) s = try_conv_act(&f, (int64_t)i);
    for (size_t i = 0; s == LITHE_OK && i < nn; i++) s = try_conv_add(&f, (int64_t)i);
    for (size_t i = 0; s == LITHE_OK && i < nn; i++) mark_relu_pool(&f, (int64_t)i);
    for (size_t i = 0; s == LITHE_OK && i < nn; i++) s = try_scalar_first(&f, (int64_t)i);
    for (size_t i = 0; s == LITHE_OK && i < nn; i++) s = try_matmul_t(&f, (int64_t)i);
    lithe__free(f.producer);
    lithe__free(f.n_readers);
    lithe__free(f.reader);
    return s;
}
