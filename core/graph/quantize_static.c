/* Static int8 quantization with calibration (issue 24 item 3): lithe_model_quantize_static.
 *
 *   1. the model as a float ONNX graph (lithe_model_save_onnx_bytes: a graph node as it was
 *      imported, with its current weights; a native tree lowered to Gemm / Relu / Softmax ...);
 *   2. that graph run over the calibration rows, a batch at a time, with an observer on the
 *      executor (graph.h's lithe__gcalib) recording min / max of the float input of every
 *      quantizable node — MatMul and Gemm with a constant 2-D weight, Conv with a constant
 *      weight (MinMax, onnxruntime's default calibrator);
 *   3. the graph rewritten as onnxruntime's quantizer writes a QDQ model (QuantFormat.QDQ,
 *      activations QInt8 asymmetric, weights QInt8 symmetric per channel, biases int32):
 *        X -> QuantizeLinear(s_x, z_x) -> DequantizeLinear -> op
 *        W (float)  ->  W_quantized (int8) -> DequantizeLinear(s_w[c], 0, axis) -> op
 *        B (float)  ->  B_quantized (int32, scale s_x * s_w[c]) -> DequantizeLinear -> op
 *      with s_x = (max(rmax, 0) - min(rmin, 0)) / 255, z_x = round(-128 - min(rmin, 0) / s_x)
 *      and s_w[c] = max|W[c]| / 127 (an all-zero channel: 1), every other node and byte as it was;
 *   4. that graph loaded: the QDQ fusion (fuse_qdq.c) turns each pattern into fused:QLinear /
 *      fused:QConv, which hand gemm_q8 the activation's static codes (no per-row quantization).
 * One int8 mechanism, then, for imported graphs and native trees alike, and the file is a valid
 * QDQ model that onnxruntime runs to the same int32 sums. */
#include "graph.h"
#include "../io/onnx_write.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define WHAT "lithe_model_quantize_static"
#define CALIB_BATCH 64 /* rows per forward while calibrating */

typedef struct qact { /* one activation a quantized node reads */
    const char *name;
    int64_t slot;
    float lo, hi;
    bool seen, not_float;
    float scale;
    int32_t zero;
} qact;

typedef struct qop { /* one quantized node */
    size_t node;
    size_t act;                        /* its activation in qacts */
    const lithe__onnx_tensor *W, *B;   /* initializers (B NULL: none) */
    int axis;                          /* W's output-channel axis */
    int64_t C;                         /* channels (W's extent along axis) */
    bool drop_w, drop_b;               /* the float initializer has no other reader */
} qop;

typedef struct qplan {
    lithe__gcalib base;
    lithe__onnx_model o;
    qact *acts;
    size_t n_acts;
    qop *ops;
    size_t n_ops;
    int64_t *slot_act; /* per graph slot: index into acts + 1, 0 none */
    size_t n_slots;
    char bad[160];     /* a non-finite activation seen */
} qplan;

static const lithe__onnx_tensor *init_of(const lithe__onnx_model *o, const char *name) {
    if (!name || !*name) return NULL;
    for (size_t i = 0; i < o->n_inits; i++)
        if (!strcmp(o->inits[i].name, name)) return &o->inits[i];
    return NULL;
}

static size_t readers(const lithe__onnx_model *o, const char *name) {
    size_t n = 0;
    for (size_t i = 0; i < o->n_nodes; i++)
        for (size_t k = 0; k < o->nodes[i].n_inputs; k++) n += !strcmp(o->nodes[i].inputs[k], name);
    for (size_t i = 0; i < o->n_outputs; i++) n += !strcmp(o->outputs[i].name, name);
    return n;
}

static bool float_init(const lithe__onnx_tensor *t) { return t && t->is_float && t->data && t->numel > 0; }

/* The nodes to quantize, and their activations. */
static lithe_status plan_ops(qplan *p) {
    const lithe__onnx_model *o = &p->o;
    p->ops = lithe__calloc(o->n_nodes + 1, sizeof *p->ops);
    p->acts = lithe__calloc(o->n_nodes + 1, sizeof *p->acts);
    if (!p->ops || !p->acts) return lithe__oom(WHAT, o->n_nodes * sizeof *p->ops);
    for (size_t i = 0; i < o->n_nodes; i++) {
        const lithe__onnx_node *n = &o->nodes[i];
        if (n->domain && *n->domain && strcmp(n->domain, "ai.onnx")) continue;
        bool mm = !strcmp(n->op_type, "MatMul"), gemm = !strcmp(n->op_type, "Gemm"), conv = !strcmp(n->op_type, "Conv");
        if ((!mm && !gemm && !conv) || n->n_inputs < 2 || !*n->inputs[0] || init_of(o, n->inputs[0])) continue;
        const lithe__onnx_tensor *W = init_of(o, n->inputs[1]), *B = n->n_inputs > 2 ? init_of(o, n->inputs[2]) : NULL;
        if (!float_init(W)) continue;
        int axis = 0;
        if (mm || gemm) {
            if (W->ndim != 2) continue;
            const lithe__onnx_attr *al = lithe__onnx_attr_get(n, "alpha"), *be = lithe__onnx_attr_get(n, "beta"),
                                   *ta = lithe__onnx_attr_get(n, "transA"), *tb = lithe__onnx_attr_get(n, "transB");
            if (gemm && ((al && al->f != 1.0f) || (be && be->f != 1.0f) || (ta && ta->i))) continue;
            axis = gemm && tb && tb->i ? 0 : 1;
        } else if (W->ndim != 3 && W->ndim != 4) {
            continue;
        }
        int64_t C = W->dims[axis];
        if (n->n_inputs > 2 && *n->inputs[2] && (mm || !float_init(B) || B->ndim != 1 || B->numel != C)) continue;
        qop *q = &p->ops[p->n_ops++];
        q->node = i, q->W = W, q->B = mm ? NULL : B, q->axis = axis, q->C = C;
        q->drop_w = readers(o, W->name) == 1;
        q->drop_b = q->B && readers(o, B->name) == 1;
        size_t a = 0;
        while (a < p->n_acts && strcmp(p->acts[a].name, n->inputs[0])) a++;
        if (a == p->n_acts) p->acts[p->n_acts++] = (qact){.name = n->inputs[0], .slot = -1, .lo = INFINITY, .hi = -INFINITY};
        q->act = a;
    }
    return LITHE_OK;
}

/* ---- calibration: the observer ---- */

static void observe(lithe__gcalib *c, const lithe__graph *g, size_t node, lithe_tensor *const *in) {
    qplan *p = (qplan *)c;
    for (size_t k = 0; k < g->node_nin[node]; k++) {
        int64_t sl = g->node_in[node][k];
        if (sl < 0 || (size_t)sl >= p->n_slots || !p->slot_act[sl] || !in[k]) continue;
        qact *a = &p->acts[p->slot_act[sl] - 1];
        const lithe_tensor *t = in[k];
        if (t->dtype != LITHE_F32 || !t->storage->backend->host_memory || !lithe_tensor_is_contiguous(t)) {
            a->not_float = true;
            continue;
        }
        const float *x = lithe__tdata(t);
        float lo = a->lo, hi = a->hi;
        bool finite = true;
        for (int64_t e = 0; e < t->numel; e++) {
            finite &= isfinite(x[e]) != 0;
            lo = x[e] < lo ? x[e] : lo, hi = x[e] > hi ? x[e] : hi;
        }
        if (!finite && !p->bad[0]) snprintf(p->bad, sizeof p->bad, "%s", a->name);
        a->lo = lo, a->hi = hi, a->seen = true;
    }
}

static lithe__graph *graph_of(lithe_model *m) {
    for (size_t i = 0; i < m->n_shims; i++)
        if (m->shims[i] && m->shims[i]->type && !strcmp(m->shims[i]->type->name, "onnx")) return m->shims[i]->state;
    return NULL;
}

/* Runs the float graph fm over the calibration rows. */
static lithe_status calibrate(qplan *p, lithe_model *fm, const lithe_tensor *X) {
    lithe__graph *g = graph_of(fm);
    if (!g) return lithe__fail(LITHE_ERR_INTERNAL, "%s: the float graph has no graph", WHAT);
    p->n_slots = g->n_slots;
    p->slot_act = lithe__calloc(g->n_slots + 1, sizeof *p->slot_act);
    if (!p->slot_act) return lithe__oom(WHAT, g->n_slots * sizeof *p->slot_act);
    for (size_t a = 0; a < p->n_acts; a++)
        for (size_t sl = 0; sl < g->n_slots; sl++)
            if (g->slot_name[sl] && !strcmp(g->slot_name[sl], p->acts[a].name)) p->slot_act[sl] = (int64_t)a + 1;
    p->base.observe = observe;
    g->calib = &p->base;
    lithe_status s = LITHE_OK;
    for (int64_t r = 0; s == LITHE_OK && r < X->shape[0]; r += CALIB_BATCH) {
        int64_t e = r + CALIB_BATCH < X->shape[0] ? r + CALIB_BATCH : X->shape[0];
        lithe_tensor *b = NULL, *Y = NULL;
        s = lithe_tensor_slice((lithe_tensor *)X, 0, r, e, &b);
        if (s == LITHE_OK) s = lithe_model_predict_tensor(fm, b, &Y);
        if (s != LITHE_OK) {
            char msg[512];
            snprintf(msg, sizeof msg, "%s", lithe_last_error());
            s = lithe__fail(s, "%s: the float model on calibration rows %lld..%lld: %s", WHAT, (long long)r,
                            (long long)e - 1, msg);
        }
        lithe_tensor_release(b);
        lithe_tensor_release(Y);
        if (s == LITHE_OK && p->bad[0])
            s = lithe__fail(LITHE_ERR_VALUE, "%s: activation '%s' is not finite on calibration rows %lld..%lld", WHAT,
                            p->bad, (long long)r, (long long)e - 1);
    }
    g->calib = NULL;
    return s;
}

/* MinMax: the range widened to hold 0, onto int8's [-128, 127] (onnxruntime's compute_scale_zp) */
static void act_params(qact *a) {
    double lo = a->lo < 0.0f ? a->lo : 0.0, hi = a->hi > 0.0f ? a->hi : 0.0;
    double s = (hi - lo) / 255.0;
    if (!(s >= 1e-30) || !isfinite((float)s)) {
        a->scale = 1.0f, a->zero = 0;
        return;
    }
    a->scale = (float)s;
    double z = nearbyint(-128.0 - lo / (double)a->scale);
    a->zero = (int32_t)(z < -128.0 ? -128 : z > 127.0 ? 127 : z);
}

/* ---- the QDQ graph's bytes ---- */

static void tensor_raw(wb *out, const char *name, int32_t type, int ndim, const int64_t *dims, const void *d, size_t n) {
    wb t = {0};
    for (int k = 0; k < ndim; k++) wb_int(&t, 1, dims[k]);
    wb_int(&t, 2, type);
    wb_str(&t, 8, name);
    wb_bytes(&t, 9, d, n);
    wb_sub(out, 5, &t); /* GraphProto.initializer */
}

static void le_put(uint8_t *o, uint32_t u) {
    for (int i = 0; i < 4; i++) o[i] = (uint8_t)(u >> (8 * i));
}

static void node_proto(wb *out, const char *op, const char *const *ins, size_t nin, const char *y, int64_t axis) {
    wb n = {0};
    for (size_t k = 0; k < nin; k++) wb_str(&n, 1, ins[k]);
    wb_str(&n, 2, y);
    wb_str(&n, 3, y); /* the node named after its output */
    wb_str(&n, 4, op);
    if (axis >= 0) at_int(&n, "axis", axis);
    wb_sub(out, 1, &n); /* GraphProto.node */
}

/* The int8 codes, scales and zero points of W per channel along q->axis (symmetric, [-127, 127]). */
static lithe_status weight_inits(wb *out, const qop *q, const char *wq, const char *ws, const char *wz, float *scale) {
    const lithe__onnx_tensor *W = q->W;
    int64_t inner = 1, outer = 1;
    for (int d = q->axis + 1; d < W->ndim; d++) inner *= W->dims[d];
    for (int d = 0; d < q->axis; d++) outer *= W->dims[d];
    const float *w = W->data;
    for (int64_t c = 0; c < q->C; c++) {
        float amax = 0.0f;
        for (int64_t a = 0; a < outer; a++)
            for (int64_t i = 0; i < inner; i++) {
                float v = w[(a * q->C + c) * inner + i];
                if (!isfinite(v))
                    return lithe__fail(LITHE_ERR_VALUE, "%s: weight '%s' holds %g", WHAT, W->name, (double)v);
                amax = fabsf(v) > amax ? fabsf(v) : amax;
            }
        scale[c] = amax > 0.0f ? amax / 127.0f : 1.0f;
        if (!(scale[c] > 0.0f) || !isfinite(scale[c])) scale[c] = 1.0f;
    }
    int8_t *codes = lithe__malloc((size_t)W->numel + 1), *zeros = lithe__calloc((size_t)q->C + 1, 1);
    uint8_t *sb = lithe__malloc((size_t)q->C * 4 + 1);
    if (!codes || !zeros || !sb) {
        lithe__free(codes), lithe__free(zeros), lithe__free(sb);
        return lithe__oom(WHAT, (size_t)W->numel);
    }
    for (int64_t e = 0; e < W->numel; e++) {
        int64_t c = (e / inner) % q->C;
        float v = nearbyintf(w[e] / scale[c]);
        codes[e] = (int8_t)(v < -127.0f ? -127 : v > 127.0f ? 127 : (int)v);
    }
    for (int64_t c = 0; c < q->C; c++) {
        uint32_t u;
        memcpy(&u, &scale[c], 4);
        le_put(sb + 4 * c, u);
    }
    tensor_raw(out, wq, LITHE__ONNX_INT8, W->ndim, W->dims, codes, (size_t)W->numel);
    tensor_raw(out, ws, LITHE__ONNX_FLOAT, 1, &q->C, sb, (size_t)q->C * 4);
    tensor_raw(out, wz, LITHE__ONNX_INT8, 1, &q->C, zeros, (size_t)q->C);
    lithe__free(codes), lithe__free(zeros), lithe__free(sb);
    return LITHE_OK;
}

/* The bias as onnxruntime writes it: int32 codes at scale s_x * s_w[c], zero points 0. */
static lithe_status bias_inits(wb *out, const qop *q, float sx, const float *sw, const char *bq, const char *bs,
                               const char *bz) {
    const float *b = q->B->data;
    uint8_t *codes = lithe__malloc((size_t)q->C * 4 + 1), *sb = lithe__malloc((size_t)q->C * 4 + 1),
            *zeros = lithe__calloc((size_t)q->C * 4 + 1, 1);
    if (!codes || !sb || !zeros) {
        lithe__free(codes), lithe__free(sb), lithe__free(zeros);
        return lithe__oom(WHAT, (size_t)q->C * 12);
    }
    lithe_status s = LITHE_OK;
    for (int64_t c = 0; c < q->C; c++) {
        float scale = sx * sw[c];
        if (!(scale > 0.0f)) scale = 1.0f;
        double v = nearbyint((double)b[c] / scale);
        if (!isfinite(b[c])) s = lithe__fail(LITHE_ERR_VALUE, "%s: bias '%s' holds %g", WHAT, q->B->name, (double)b[c]);
        int32_t iv = (int32_t)(v < -2147483647.0 ? -2147483647.0 : v > 2147483647.0 ? 2147483647.0 : v);
        uint32_t u;
        memcpy(&u, &scale, 4);
        le_put(sb + 4 * c, u);
        le_put(codes + 4 * c, (uint32_t)iv);
    }
    if (s == LITHE_OK) {
        tensor_raw(out, bq, LITHE__ONNX_INT32, 1, &q->C, codes, (size_t)q->C * 4);
        tensor_raw(out, bs, LITHE__ONNX_FLOAT, 1, &q->C, sb, (size_t)q->C * 4);
        tensor_raw(out, bz, LITHE__ONNX_INT32, 1, &q->C, zeros, (size_t)q->C * 4);
    }
    lithe__free(codes), lithe__free(sb), lithe__free(zeros);
    return s;
}

#define NM 512
/* The value names of node q's rewrite (its index j keeps them apart). */
typedef struct qnames {
    char xq[NM], xdq[NM], wq[NM], ws[NM], wz[NM], wdq[NM], bq[NM], bs[NM], bz[NM], bdq[NM];
} qnames;
static void names_of(const qplan *p, const qop *q, qnames *n) {
    const char *x = p->acts[q->act].name, *w = q->W->name, *b = q->B ? q->B->name : "";
    snprintf(n->xq, NM, "%s_QuantizeLinear_Output_%zu", x, q->node);
    snprintf(n->xdq, NM, "%s_DequantizeLinear_Output_%zu", x, q->node);
    snprintf(n->wq, NM, "%s_quantized_%zu", w, q->node);
    snprintf(n->ws, NM, "%s_scale_%zu", w, q->node);
    snprintf(n->wz, NM, "%s_zero_point_%zu", w, q->node);
    snprintf(n->wdq, NM, "%s_DequantizeLinear_Output_%zu", w, q->node);
    snprintf(n->bq, NM, "%s_quantized_%zu", b, q->node);
    snprintf(n->bs, NM, "%s_scale_%zu", b, q->node);
    snprintf(n->bz, NM, "%s_zero_point_%zu", b, q->node);
    snprintf(n->bdq, NM, "%s_DequantizeLinear_Output_%zu", b, q->node);
}
static void act_names(const qact *a, char *s, char *z) {
    snprintf(s, NM, "%s_scale", a->name);
    snprintf(z, NM, "%s_zero_point", a->name);
}

/* Node q's Q / DQ nodes, then the node itself with inputs 0, 1 (and 2) renamed. */
static lithe_status put_node(const qplan *p, const qop *q, const uint8_t *d, size_t len, wb *out) {
    qnames n;
    names_of(p, q, &n);
    char as[NM], az[NM];
    act_names(&p->acts[q->act], as, az);
    node_proto(out, "QuantizeLinear", (const char *[]){p->acts[q->act].name, as, az}, 3, n.xq, -1);
    node_proto(out, "DequantizeLinear", (const char *[]){n.xq, as, az}, 3, n.xdq, -1);
    node_proto(out, "DequantizeLinear", (const char *[]){n.wq, n.ws, n.wz}, 3, n.wdq, q->axis);
    if (q->B) node_proto(out, "DequantizeLinear", (const char *[]){n.bq, n.bs, n.bz}, 3, n.bdq, 0);
    wb nd = {0};
    rd r = {d, d + len};
    size_t k = 0;
    while (r.p < r.end) {
        uint32_t f, wt;
        const uint8_t *st, *pd;
        size_t pn;
        lithe_status s = lithe__ox_field(&r, &f, &wt, &st, &pd, &pn);
        if (s != LITHE_OK) {
            wb_free(&nd);
            return s;
        }
        if (f == 1 && wt == 2) {
            const char *rep = k == 0 ? n.xdq : k == 1 ? n.wdq : k == 2 && q->B ? n.bdq : NULL;
            k++;
            if (rep) {
                wb_str(&nd, 1, rep);
                continue;
            }
        }
        wb_put(&nd, st, (size_t)(r.p - st));
    }
    wb_sub(out, 1, &nd);
    return LITHE_OK;
}

static const qop *op_at(const qplan *p, size_t node) {
    for (size_t i = 0; i < p->n_ops; i++)
        if (p->ops[i].node == node) return &p->ops[i];
    return NULL;
}

static bool dropped(const qplan *p, const char *name) {
    for (size_t i = 0; i < p->n_ops; i++)
        if ((p->ops[i].drop_w && !strcmp(p->ops[i].W->name, name)) ||
            (p->ops[i].drop_b && !strcmp(p->ops[i].B->name, name)))
            return true;
    return false;
}

static lithe_status rewrite_graph(const qplan *p, const uint8_t *d, size_t len, wb *out) {
    rd r = {d, d + len};
    size_t node = 0, init = 0;
    lithe_status s = LITHE_OK;
    while (s == LITHE_OK && r.p < r.end) {
        uint32_t f, wt;
        const uint8_t *st, *pd;
        size_t pn;
        LITHE__TRY(lithe__ox_field(&r, &f, &wt, &st, &pd, &pn));
        if (f == 1 && wt == 2) { /* NodeProto */
            const qop *q = op_at(p, node++);
            if (q) {
                s = put_node(p, q, pd, pn, out);
                continue;
            }
        } else if (f == 11 && wt == 2) { /* ValueInfoProto: a graph input; an initializer listed as one (IR < 4) goes with it */
            rd v = {pd, pd + pn};
            bool drop = false;
            while (v.p < v.end) {
                uint32_t vf, vw;
                const uint8_t *vs, *vd;
                size_t vn;
                LITHE__TRY(lithe__ox_field(&v, &vf, &vw, &vs, &vd, &vn));
                if (vf == 1 && vw == 2 && vn < NM) {
                    char nm[NM];
                    memcpy(nm, vd, vn);
                    nm[vn] = 0;
                    drop = dropped(p, nm);
                }
            }
            if (drop) continue;
        } else if (f == 5 && wt == 2) { /* TensorProto */
            const lithe__onnx_tensor *t = init < p->o.n_inits ? &p->o.inits[init] : NULL;
            init++;
            if (t && dropped(p, t->name)) continue;
        }
        wb_put(out, st, (size_t)(r.p - st));
    }
    if (s == LITHE_OK && (node != p->o.n_nodes || init != p->o.n_inits))
        s = lithe__fail(LITHE_ERR_INTERNAL, "%s: %zu nodes and %zu initializers in the bytes, %zu and %zu parsed", WHAT,
                        node, init, p->o.n_nodes, p->o.n_inits);
    for (size_t a = 0; s == LITHE_OK && a < p->n_acts; a++) {
        const qact *ac = &p->acts[a];
        bool used = false;
        for (size_t i = 0; i < p->n_ops; i++) used |= p->ops[i].act == a;
        if (!used) continue;
        char as[NM], az[NM];
        act_names(ac, as, az);
        uint8_t sb[4];
        uint32_t u;
        memcpy(&u, &ac->scale, 4);
        le_put(sb, u);
        int8_t z = (int8_t)ac->zero;
        tensor_raw(out, as, LITHE__ONNX_FLOAT, 0, NULL, sb, 4);
        tensor_raw(out, az, LITHE__ONNX_INT8, 0, NULL, &z, 1);
    }
    for (size_t i = 0; s == LITHE_OK && i < p->n_ops; i++) {
        const qop *q = &p->ops[i];
        qnames n;
        names_of(p, q, &n);
        float *sw = lithe__malloc((size_t)q->C * sizeof *sw + 1);
        if (!sw) return lithe__oom(WHAT, (size_t)q->C * 4);
        s = weight_inits(out, q, n.wq, n.ws, n.wz, sw);
        if (s == LITHE_OK && q->B) s = bias_inits(out, q, p->acts[q->act].scale, sw, n.bq, n.bs, n.bz);
        lithe__free(sw);
    }
    return s;
}

static lithe_status rewrite_model(const qplan *p, const uint8_t *d, size_t len, wb *out) {
    rd r = {d, d + len};
    while (r.p < r.end) {
        uint32_t f, wt;
        const uint8_t *st, *pd;
        size_t pn;
        LITHE__TRY(lithe__ox_field(&r, &f, &wt, &st, &pd, &pn));
        if (f == 7 && wt == 2) { /* ModelProto.graph */
            wb g = {0};
            lithe_status s = rewrite_graph(p, pd, pn, &g);
            if (s != LITHE_OK) {
                wb_free(&g);
                return s;
            }
            wb_sub(out, 7, &g);
            continue;
        }
        wb_put(out, st, (size_t)(r.p - st));
    }
    return out->oom ? lithe__oom(WHAT, out->cap) : LITHE_OK;
}

/* ---- the API ---- */

static lithe_status check_calib(const lithe_tensor *X) {
    if (!X) return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: the calibration tensor is NULL", WHAT);
    if (X->dtype != LITHE_F32)
        return lithe__fail(LITHE_ERR_DTYPE, "%s: calibration data must be float32, got %s", WHAT, lithe_dtype_name(X->dtype));
    if (X->ndim < 1 || X->shape[0] < 1 || X->numel < 1)
        return lithe__fail(LITHE_ERR_SHAPE, "%s: calibration data is empty (a batch of rows along axis 0 is needed)", WHAT);
    if (!X->storage->backend->host_memory || !lithe_tensor_is_contiguous(X))
        return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: calibration data must be a contiguous CPU tensor", WHAT);
    const float *x = lithe__tdata(X);
    for (int64_t i = 0; i < X->numel; i++)
        if (!isfinite(x[i]))
            return lithe__fail(LITHE_ERR_VALUE, "%s: calibration element %lld is %g", WHAT, (long long)i, (double)x[i]);
    return LITHE_OK;
}

static void plan_free(qplan *p) {
    lithe__onnx_model_free(&p->o);
    lithe__free(p->acts);
    lithe__free(p->ops);
    lithe__free(p->slot_act);
}

lithe_status lithe_model_quantize_static(lithe_model *m, const lithe_tensor *calib, size_t *n_quantized,
                                         lithe_model **out) {
    LITHE__CHECK_ARG(out, WHAT, "out is NULL");
    *out = NULL;
    if (n_quantized) *n_quantized = 0;
    LITHE__CHECK_ARG(m, WHAT, "model is NULL");
    LITHE__TRY(check_calib(calib));
    uint8_t *fb = NULL;
    size_t fl = 0;
    lithe_status s = lithe_model_save_onnx_bytes(m, &fb, &fl);
    if (s != LITHE_OK) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", lithe_last_error());
        return lithe__fail(s, "%s: the model as a float ONNX graph: %s", WHAT, msg);
    }
    qplan p = {0};
    lithe_model *fm = NULL;
    s = lithe__onnx_parse(fb, fl, &p.o);
    if (s == LITHE_OK && p.o.opset < 13)
        s = lithe__fail(LITHE_ERR_UNSUPPORTED, "%s: the graph is at opset %lld; per-channel DequantizeLinear needs 13 or later "
                                               "(re-export the model at opset >= 13)", WHAT, (long long)p.o.opset);
    if (s == LITHE_OK) s = plan_ops(&p);
    if (s == LITHE_OK && !p.n_ops)
        s = lithe__fail(LITHE_ERR_NOT_FOUND, "%s: %s has no MatMul, Gemm or Conv with a constant float weight to quantize",
                        WHAT, m->name);
    if (s == LITHE_OK) s = lithe_onnx_load_bytes(fb, fl, &fm);
    if (s == LITHE_OK) s = calibrate(&p, fm, calib);
    lithe_model_free(fm);
    /* the ops whose activation the float run never saw as a float32 CPU tensor stay float */
    size_t kept = 0;
    for (size_t i = 0; s == LITHE_OK && i < p.n_ops; i++) {
        qact *a = &p.acts[p.ops[i].act];
        if (a->seen && !a->not_float) p.ops[kept++] = p.ops[i];
    }
    if (s == LITHE_OK) p.n_ops = kept;
    if (s == LITHE_OK && !p.n_ops)
        s = lithe__fail(LITHE_ERR_NOT_FOUND, "%s: calibration reached no quantizable node's float input", WHAT);
    for (size_t a = 0; s == LITHE_OK && a < p.n_acts; a++) act_params(&p.acts[a]);
    wb q = {0};
    if (s == LITHE_OK) s = rewrite_model(&p, fb, fl, &q);
    if (s == LITHE_OK) s = lithe_onnx_load_bytes(q.p, q.n, out);
    if (s == LITHE_OK && n_quantized) *n_quantized = p.n_ops;
    wb_free(&q);
    lithe_buffer_free(fb);
    plan_free(&p);
    return s;
}
