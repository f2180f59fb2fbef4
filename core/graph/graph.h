/* The graph layer's internals (core/graph/): a parsed ONNX graph bound to value slots, and the
 * per-operator forward / backward table (ops/table.c) that graph.c's executor runs. */
#ifndef LITHE_GRAPH_H
#define LITHE_GRAPH_H

#include "../io/onnx.h"

/* How a slot gets its value. */
enum { SLOT_COMPUTED = 0, SLOT_INPUT, SLOT_PARAM, SLOT_CONST };

typedef struct lithe__graph lithe__graph;
typedef struct lithe__gexec lithe__gexec;

/* One supported operator. forward reads in[0..n_in) (NULL: an optional input left out) and sets
 * out[0..n_out); float values live on the model's backend, integer values (shapes, indices) are
 * host int64 tensors computed eagerly — the shape arithmetic is folded on the host, never sent to
 * a backend. backward (NULL: no float input takes a gradient through it, e.g. Shape) accumulates
 * into the gradients lithe__gexec_grad hands out. saved[0..1] keep what backward needs. */
typedef struct lithe__graph_op {
    const char *op_type;
    lithe_status (*forward)(lithe__gexec *x, size_t node, lithe_tensor **in, size_t n_in, lithe_tensor **out,
                            size_t n_out, lithe_tensor **saved);
    lithe_status (*backward)(lithe__gexec *x, size_t node, lithe_tensor **in, size_t n_in, lithe_tensor **out,
                             lithe_tensor **dout, lithe_tensor **saved);
} lithe__graph_op;

/* The plan for one input signature (each graph input's dtype and shape, and the backend): the
 * buffer pool every value, temporary and gradient of a run is taken from, so a repeated forward
 * (and backward) of the same shape reuses the same memory; and the values that depend on the input
 * shapes only (the Shape / Gather / Concat / Reshape arithmetic exporters emit), computed in the
 * first run and reused, so later runs skip those nodes. Refcounted: the graph's cache holds one
 * reference, each live run (a forward and its backprop record) another. */
typedef struct lithe__gplan {
    int refs;
    lithe_backend *be;
    size_t n_in, n_slots;
    lithe_dtype *dtype;   /* n_in */
    int *ndim;            /* n_in */
    int64_t *shape;       /* n_in * LITHE_MAX_DIMS */
    bool recorded;        /* a run has completed: cached[] and vals[] are filled */
    bool *cached;         /* n_slots: a value fixed for this signature, held in vals[] */
    bool *shape_varies;   /* n_slots: its shape may differ between runs of this signature */
    lithe_tensor **vals;  /* n_slots */
    lithe__bufpool *pool;
    void *spare;          /* one run's slot arrays, kept for the next run */
    struct lithe__grc *rc; /* recomputation's segments for this signature (graph_recompute.c), or NULL */
    uint64_t last_used;
} lithe__gplan;

/* A fused node (fuse.c): the last node of a pattern the exporters decompose runs the whole
 * pattern as one op; the pattern's other nodes are dead (never run). */
typedef enum lithe__gfuse_kind {
    LITHE__FUSE_NONE = 0,
    LITHE__FUSE_LAYERNORM, /* in: X, scale (N,), bias (N,); over the last axis */
    LITHE__FUSE_LINEAR,    /* in: A (..., K), W (K, N) or (N, K) when transB, bias (N,); then act */
    LITHE__FUSE_ACT,       /* in: X; Y = act(X) (GELU from its Erf form) */
    LITHE__FUSE_CONV,      /* in: the Conv's X, W, [b]; Y = act(conv) (Relu, Clip); attrs: node first's */
    LITHE__FUSE_CONV_ADD,  /* in: the Conv's X, W, b (slot -1: none), then R; Y = Add(conv, R) or Add(R, conv)
                            * (res_first); attrs: node first's */
    /* QDQ fusion (fuse_qdq.c, issue 24): the activation's QuantizeLinear -> DequantizeLinear pair (q_*) */
    LITHE__FUSE_QLINEAR, /* in: X (float, before its Q), W (I8 (N, K), quant params), [bias (N,)]; then act */
    LITHE__FUSE_QCONV,   /* in: X, W (I8 (M, C / group, kH, kW), per-row quant), [bias (M,)]; attrs: node first's */
    LITHE__FUSE_FAKEQ,   /* in: X; Y = DequantizeLinear(QuantizeLinear(X)) in float (per tensor) */
    LITHE__FUSE_MATMUL_T, /* in: A, B, each the source of a rank-3 Transpose (perm_a / perm_b) or the MatMul's
                           * own operand; Y = MatMul(A', B'), or Transpose(MatMul, perm_y): the products
                           * read and write the transposed layouts in place (ops/matmul.c) */
} lithe__gfuse_kind;
typedef struct lithe__gfuse {
    lithe__gfuse_kind kind;
    float eps;        /* LAYERNORM */
    bool transB;      /* LINEAR */
    bool has_act;     /* LINEAR: act applies */
    lithe__act act;   /* LINEAR (when has_act), ACT, CONV */
    size_t first;     /* the pattern's first node (for messages; CONV: its attributes) */
    bool res_first;   /* CONV_ADD: the Add reads the residual first */
    /* QLINEAR, QCONV, FAKEQ (issue 24): X is rounded as QuantizeLinear(scale, zero point) and its
     * DequantizeLinear would: (clamp(rint(x / q_scale) + q_zero, q_min, q_max) - q_zero) * q_scale */
    float q_scale;
    int32_t q_zero, q_min, q_max;
    /* MATMUL_T: the perm of the Transpose folded into input 0, input 1, the output; [0] < 0: none */
    int8_t perm_a[3], perm_b[3], perm_y[3];
    /* QCONV whose output only another fused:QConv reads, as its X (fuse_qdq.c's chain): that reader's
     * q_* (o_min < 0: int8), so this node may hand it the codes (CPU conv_q8) instead of float32 */
    bool o_codes;
    float o_scale;
    int32_t o_zero, o_min, o_max;
} lithe__gfuse;

/* A windowed node's (Conv, the pools) strides, pads as given, dilations, auto_pad and Conv's group,
 * parsed and checked once (ops/window.c's window_attrs, conv_geometry): a run reads them here instead of
 * scanning the node's attributes, whose names are out of cache by then (mobilenet_v2: ~40 us). */
typedef struct lithe__gwin {
    bool ok, group_ok;
    int mode; /* ops/window.c's pad_mode */
    int64_t group; /* Conv's (conv_geometry) */
    int64_t stride[2], pad[4], dil[2];
    /* fuse.c: set on a fused Conv + Relu whose output a max pool alone reads, and on that pool: where
     * the backend has relu_pool the pool's indices carry the Relu's backward (ops/window.c) */
    bool relu_pool;
} lithe__gwin;

#define LITHE__GRAPH_PLANS 4 /* input signatures kept; the least recently used goes first */

/* Calibration (issue 24 item 3, core/graph/quantize_static.c): while a graph's calib is set, each
 * run hands observe every node's inputs before the node runs (called through the pointer, so the
 * executor links nothing of it: the npm package keeps calibration in its importer module). */
typedef struct lithe__gcalib lithe__gcalib;
struct lithe__gcalib {
    void (*observe)(lithe__gcalib *c, const lithe__graph *g, size_t node, lithe_tensor *const *in);
};

struct lithe__graph {
    lithe__onnx_model onnx;
    size_t n_slots;
    const char **slot_name;  /* into onnx */
    int *slot_kind;
    lithe_tensor **slot_const; /* SLOT_CONST: float32 (cpu) or int64 (cpu) */
    size_t *in_slots, *out_slots; /* graph inputs (not initializers) and outputs */
    size_t n_in, n_out;
    int64_t **node_in, **node_out; /* per node: slot of each input (-1: left out) / output */
    const lithe__graph_op **node_op;
    size_t *node_nin, *node_nout; /* per node: its input / output counts (a fused node's own) */
    bool *node_dead;              /* per node: its work moved into a fused node */
    lithe__gfuse *node_fuse;      /* per node: LITHE__FUSE_NONE, or what the fused node runs */
    size_t n_fused;               /* fused nodes made at load */
    lithe__gwin *node_win;        /* per node: its window attributes once parsed (ops/window.c's window_attrs) */
    size_t *slot_param;           /* per slot: SLOT_PARAM's index in the model's params + 1 once found (0: not yet) */
    const char **slot_pname;      /* per slot: that param's name pointer */
    int64_t *last_use; /* per slot: the last node reading it (its producer if none; -1: kept, a graph output) */
    lithe__gplan *plans[LITHE__GRAPH_PLANS];
    uint64_t tick;
    /* LITHE_GRAPH_PROFILE set (non-empty, not "0") at load: each node's forward and backward is timed;
     * the table goes to stderr when the graph is freed (docs/onnx.md). */
    bool profile;
    double *prof_sum, *prof_min; /* per node, seconds: forward at i, backward at onnx.n_nodes + i */
    uint64_t *prof_n;
    lithe__gcalib *calib; /* NULL but while lithe_model_quantize_static calibrates */
};

/* Whether node i is skipped at run time: its outputs were folded to constants at load, or a fused
 * node took its work. */
static inline bool lithe__gnode_skipped(const lithe__graph *g, size_t i) {
    if (g->node_dead[i]) return true;
    for (size_t k = 0; k < g->node_nout[i]; k++)
        if (g->node_out[i][k] >= 0 && g->slot_kind[g->node_out[i][k]] != SLOT_CONST) return false;
    return true;
}

/* A gradient written region by region (lithe__gexec_grad_region): its slot, the axis the regions
 * lie along (every other axis whole), and the [start, end) ranges written so far; the rest of it
 * is unwritten memory until lithe__gexec_grad_settle zeroes it. */
#define LITHE__GPEND_SLOTS 4
#define LITHE__GPEND_RANGES 16
typedef struct lithe__gpend {
    int64_t slot;
    int axis, n;
    int64_t range[LITHE__GPEND_RANGES][2];
} lithe__gpend;

struct lithe__gexec {
    lithe_backprop base;
    lithe__graph *g;
    lithe_model *m;
    lithe_backend *be;
    lithe_tensor **vals, **grads, **saved; /* n_slots, n_slots, 2 per node */
    bool *needs; /* a slot a gradient flows to (float, reaching a param or an input) */
    bool tuple_in;
    bool is_train; /* false: Gemm / MatMul read prepared initializers (lithe_model_prepare_inference) */
    lithe__gplan *plan; /* NULL while folding constants at load */
    bool keep_all; /* a backward may follow: fused ops keep what it needs */
    bool no_input_grad; /* the model's attr no_input_grad: dX is never asked, the inputs need none */
    bool recompute;     /* the model's attr recompute, at training with a backward: segments (graph_recompute.c) */
    bool recomputing;   /* a backward is running a segment's forward again: x->needs is the backward's */
    bool *f32;          /* n_slots: the value a node made is float32 (kept when the value is not) */
    lithe__bufpool *pool;  /* the plan's: every tensor a run allocates comes from it (NULL: fresh memory) */
    void *arrays;       /* vals, grads, saved and needs in one block */
    lithe__gpend pend[LITHE__GPEND_SLOTS]; /* gradients with unwritten regions (n_pend of them) */
    int n_pend;
};

/* A tensor for run x: from its plan's pool (fresh memory when folding at load). */
static inline lithe_status lithe__gexec_alloc(lithe__gexec *x, lithe_backend *be, lithe_dtype dtype, int ndim,
                                              const int64_t *shape, bool zero, lithe_tensor **out) {
    return lithe__bufpool_tensor(x->pool, be, dtype, ndim, shape, zero, out);
}
static inline lithe_status lithe__gexec_like(lithe__gexec *x, const lithe_tensor *t, bool zero, lithe_tensor **out) {
    return lithe__bufpool_tensor(x->pool, t->storage->backend, t->dtype, t->ndim, t->shape, zero, out);
}

/* LoRA in a step (core/graph/graph_lora.c): the adapter on node's input k (an adapted param), if
 * any; a Conv's temporary W + s·B·A (from x's pool); and a temporary weight gradient dW (shaped as
 * W) into A's and B's gradients. */
lithe_status lithe__graph_lora_of(lithe__gexec *x, size_t node, size_t k, lithe__lora_ad *ad, bool *on);
lithe_status lithe__graph_lora_weight(lithe__gexec *x, const lithe__lora_ad *ad, lithe_tensor *W, lithe_tensor **Wt);
lithe_status lithe__graph_lora_fold(lithe__gexec *x, const lithe__lora_ad *ad, lithe_tensor *dW);

/* Rewrites g's nodes at load (after constant folding, before liveness): each pattern found becomes
 * one fused node (docs/onnx.md lists them). A pattern is fused only when its intermediate values
 * have no other reader and are not graph outputs, and its weights have the shapes it needs. */
lithe_status lithe__graph_fuse(lithe__graph *g);
/* A windowed node's attributes against their ranges and its weight initializer, at load (check.c). */
lithe_status lithe__graph_check_node(const lithe__onnx_model *o, size_t i);
/* An RNN / GRU / LSTM node's attributes (direction, hidden_size, layout, activations, clip, ...), at
 * load (ops/recurrent.c); LITHE_OK for other nodes. */
lithe_status lithe__graph_check_recurrent(const lithe__onnx_model *o, size_t i);
/* Control flow (control.c, issue 23 item 7): If, Loop and Scan are expanded into the model's node
 * list at load. While binding reaches one, its inputs bound and folded, lithe__graph_control_plan
 * decides (the branch a constant condition picks, the trip count) or refuses naming the node;
 * graph_build then drops the binding, lithe__graph_control_apply rewrites the model, and the
 * model is bound afresh. */
#define LITHE__GRAPH_MAX_EXPANSIONS 1024
#define LITHE__GRAPH_MAX_UNROLL 4096 /* a Loop's / Scan's iterations, unrolled */
#define LITHE__GRAPH_MAX_UNROLLED_NODES (1 << 20) /* the nodes one unrolled Loop / Scan may make */
typedef struct lithe__gctl {
    size_t node;
    bool then_branch; /* If */
    int64_t count;    /* Loop, Scan: iterations */
} lithe__gctl;
bool lithe__graph_is_control(const char *op_type);
lithe_status lithe__graph_control_plan(const lithe__graph *g, size_t node, lithe__gctl *out);
lithe_status lithe__graph_control_apply(lithe__onnx_model *o, const lithe__gctl *c);
/* Binding (graph_bind.c): lithe__graph_build parses the model's bytes and binds it (expanding
 * control flow); unbind drops everything but the parsed model; free drops all. const_tensor is an
 * ONNX tensor's values as a cpu tensor (float32 or int64). */
lithe_status lithe__graph_build(const uint8_t *bytes, size_t len, lithe__graph **out);
void lithe__graph_unbind(lithe__graph *g);
void lithe__graph_free(lithe__graph *g);
lithe_status lithe__graph_const_tensor(const lithe__onnx_tensor *t, lithe_tensor **out);
/* Run plans and the profiler (graph_plan.c): the plan for this run's input signature (cached, LRU);
 * whether node i's outputs are held by the plan; after node i of the first run, keep what the input
 * shapes fix; forget a failed first run; a run without backward drops what node i was the last to
 * read. */
lithe_status lithe__gplan_for(lithe__graph *g, lithe_backend *be, lithe_tensor *const *ts, lithe__gplan **out);
void lithe__gplan_unref(lithe__gplan *p);
bool lithe__gplan_cached(const lithe__graph *g, const lithe__gplan *p, size_t i);
lithe_status lithe__gplan_record(lithe__gexec *x, lithe__gplan *p, size_t i);
void lithe__gplan_forget(lithe__gplan *p);
void lithe__gexec_release_after(lithe__gexec *x, size_t i);
double lithe__graph_prof_now(void);
/* One node's forward / backward of run x (graph.c): forward sets x->vals (and x->needs but while
 * recomputing) for node i's outputs, *needs: a gradient flows through it; backward runs node i's
 * op when a gradient reaches it and one is wanted below, then frees its outputs' gradients. */
lithe_status lithe__gexec_forward_node(lithe__gexec *x, size_t i, bool recording, bool *needs);
lithe_status lithe__gexec_backward_node(lithe__gexec *x, size_t i);
/* Recomputation by segment (graph_recompute.c, the attrs "recompute" and "recompute_segments"):
 * whether the model asks for it; the forward that keeps only the values crossing a segment
 * boundary; the backward that runs each segment's forward again, last segment first, then its
 * backward; the plan's segment record freed. */
bool lithe__grecompute_on(const lithe_model *m);
lithe_status lithe__grecompute_forward(lithe__gexec *x, bool recording);
lithe_status lithe__grecompute_backward(lithe__gexec *x);
void lithe__grecompute_free(struct lithe__grc *rc);
/* The attr "recompute_rows" r > 0 (graph_rows.c): segment [lo, hi)'s backward (its forward again,
 * then its backwards) r rows of the batch at a time, when its nodes treat rows independently; *done:
 * it ran (else nothing did and the caller runs the segment whole). prod: each slot's producing node. */
bool lithe__graph_row_op(const char *op_type); /* an op whose rows of the batch are independent */
lithe_status lithe__grecompute_rows(lithe__gexec *x, const int64_t *prod, size_t lo, size_t hi, int64_t rows, bool *done);
/* nodes [lo, hi) forward again (recomputing), then backward, last first (graph_recompute.c) */
lithe_status lithe__grecompute_segment(lithe__gexec *x, size_t lo, size_t hi);
void lithe__graph_prof_print(const lithe__graph *g);
void lithe__graph_prof_add(lithe__graph *g, size_t row, double dt);
/* The fused ops (ops/fused.c). */
extern const lithe__graph_op lithe__fused_layernorm_op, lithe__fused_linear_op, lithe__fused_act_op;
extern const lithe__graph_op lithe__fused_conv_op, lithe__fused_conv_add_op, lithe__fused_matmul_t_op;
/* ---- quantized graphs (issue 24): load-time checks (check_quant.c), QDQ fusion (fuse_qdq.c, run
 * first by lithe__graph_fuse), the fused int8 ops (ops/qfused.c) ---- */
lithe_status lithe__graph_check_quant(const lithe__onnx_model *o, size_t i);
/* Whether initializer `name` is a quantized operator's scale (a constant, never a trainable param);
 * name NULL: whether the model has a node that reads a scale. */
bool lithe__graph_quant_const(const lithe__onnx_model *o, const char *name);
lithe_status lithe__graph_fuse_qdq(lithe__graph *g);
extern const lithe__graph_op lithe__fused_qlinear_op, lithe__fused_qconv_op, lithe__fused_fakeq_op;
/* The ONNX element type a slot holds when known at load (an initializer's, a Constant's, a
 * QuantizeLinear's output: its zero point's), else 0 (ops/quant.c). */
int32_t lithe__graph_slot_type(const lithe__graph *g, int64_t slot);

/* Whether ops/einsum.c runs an Einsum equation with n_in operands; why says what is not (issue 23). */
bool lithe__einsum_supported(const char *eq, size_t n_in, char *why, size_t cap);
/* The op named op_type, or NULL. */
const lithe__graph_op *lithe__graph_op_find(const char *op_type);
/* The op types ops/table.c has, for errors and lithe_onnx_ops. */
extern const char *const lithe__graph_op_names[];

/* The gradient accumulator of input k of `node`: a zeroed float32 tensor shaped as the value,
 * created on first use; NULL when no gradient flows to that input (an int, a constant, a frozen
 * param). */
lithe_status lithe__gexec_grad(lithe__gexec *x, size_t node, size_t k, lithe_tensor **out);
/* As lithe__gexec_grad, but a gradient made now is left unzeroed and *fresh says so: the caller
 * then writes every element of it (beta 0) before it asks for any other gradient of this node. */
lithe_status lithe__gexec_grad_fresh(lithe__gexec *x, size_t node, size_t k, lithe_tensor **out, bool *fresh);
/* The region [start, start + len) along `axis` (every other axis whole) of the gradient of node's
 * input k, as a view in *out (the caller releases it; NULL when no gradient flows there), and
 * *fresh: no backward has written the region yet, so the caller writes each of its elements (beta
 * 0) instead of adding. A gradient first asked for this way is not zeroed: the ranges written are
 * recorded, and the rest is zeroed when the gradient is next read whole (lithe__gexec_grad_settle:
 * its producer's backward, lithe__gexec_grad / _fresh / _add, the params' and inputs' gradients),
 * so the Q / K / V slices of one product write their dY once each and nothing else is written.
 * A range that overlaps one written before, or lies along another axis, settles first (*fresh
 * false: the caller adds). */
lithe_status lithe__gexec_grad_region(lithe__gexec *x, size_t node, size_t k, int axis, int64_t start, int64_t len,
                                      lithe_tensor **out, bool *fresh);
/* Zeroes the unwritten regions of slot s's gradient (nothing when it has none); slot < 0: of every
 * gradient written by regions. Every reader of x->grads[] other than the region writers calls it
 * first. */
lithe_status lithe__gexec_grad_settle(lithe__gexec *x, int64_t slot);
/* Adds t (float32, as many elements as the value) into the gradient of node's input k; when that
 * gradient has no value yet, t itself becomes it (reshaped to the value's shape: no zeroing, no
 * copy), so the caller must not write t afterwards. Nothing when no gradient flows there. */
lithe_status lithe__gexec_grad_add(lithe__gexec *x, size_t node, size_t k, lithe_tensor *t);
/* "Conv 'conv1' (node 3)" for errors. */
const char *lithe__gnode_str(const lithe__gexec *x, size_t node, char *buf, size_t cap);

#endif
