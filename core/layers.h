/* The layer families (core/layers, core/combinators, core/graph): shared dense machinery, the
 * layer type lists the registry reads, imported graphs. Not installed */
#ifndef LITHE_CORE_LAYERS_H
#define LITHE_CORE_LAYERS_H

#include "backend.h"
#include "model.h"

/* Shared dense machinery (core/layers/affine.c). */
/* nI / nO from the samples: strict (Thinc's set_dim: a conflicting value is an error) or only
 * where unset (Softmax, Sigmoid); then both must be known. */
lithe_status lithe__affine_dims(lithe_model *m, const lithe_value *X, const lithe_value *Y, bool strict);
/* affine_dims, then W (nO, nI) by init_W and b (nO,) by init_b. */
lithe_status lithe__affine_init(lithe_model *m, const lithe_value *X, const lithe_value *Y,
                                lithe_init init_W, lithe_init init_b, bool strict);
/* Y = X·Wᵀ + b, checking X against nI. */
lithe_status lithe__affine_forward(lithe_model *m, lithe_tensor *X, bool is_train, lithe_tensor **Y);
/* Y = act(X·Wᵀ + b) through the fused gemm_bias_act (a NULL: none); Z non-NULL: also returns the
 * pre-activation X·Wᵀ + b (a new tensor). is_train false: through W's prepared form when valid. */
lithe_status lithe__affine_forward_act(lithe_model *m, lithe_tensor *X, bool is_train, const lithe__act *a, lithe_tensor **Z,
                                       lithe_tensor **Y);
/* The prepared-op key (lithe__prepare_op) of Y = act(X·Wᵀ + b): false when act (NULL: none) has
 * no backend operator form (only none and a clamp, lithe__act_clamp, have one). */
bool lithe__affine_prep_op(const lithe__act *a, lithe__prep_op *op);
/* The same for a dense-family node (its type's activation). */
bool lithe__dense_prep_op(lithe_model *m, lithe__prep_op *op);
/* db += sum(dY), dW += dYᵀ·X, *dX = dY·W (dX NULL: skipped). */
lithe_status lithe__affine_backward(lithe_model *m, lithe_tensor *X, const lithe_tensor *dY,
                                    lithe_tensor **dX);

/* Layer types (core/layers, core/combinators). */
extern const lithe__layer_type lithe__softmax_type;
extern const lithe__layer_type lithe__dropout_type;
extern const lithe__layer_type lithe__chain_type;

/* Checks dense opts for `layer`; norm_dropout: whether Thinc's layer takes those arguments. */
lithe_status lithe__dense_check_opts(const char *layer, const lithe_dense_opts *o, bool norm_dropout);
lithe_status lithe__maxout_new(const lithe_dense_opts *o, lithe_model **out);

/* Every layer type, by family (NULL-terminated arrays each layer's file defines), declared from
 * the one list core/layers/layers.def; the lookup by registered name is lithe__layer_type_by_name. */
#define LITHE_LAYER(name, family, thinc, create)                                                                  \
    extern const lithe__layer_type *const family[];                                                               \
    lithe_status create(const lithe__layer_type *type, lithe_model **out);
#define LITHE_NODE_TYPE LITHE_LAYER
#include "layers/layers.def"
#undef LITHE_LAYER
#undef LITHE_NODE_TYPE
/* One dropout mask over nO columns (the node's dropout_rate attr, its Philox stream), repeated
 * for B rows: Thinc's Embed / HashEmbed and spaCy's StaticVectors; NULL when no dropout applies. */
lithe_status lithe__dropout_rows(lithe_model *m, int64_t B, int64_t nO, lithe_tensor **mask);
/* Y = X[index] for the getitem layers (core/layers/getitem.c): the node's `index` string attr. */
lithe_status lithe__getitem_forward(lithe_model *m, const lithe_value *X, bool is_train, lithe_value **Y,
                                    lithe_backprop **bp);
/* Imported graphs (core/graph/): the "onnx_graph.v1" layer, and the call that parses a node's
 * `onnx` attr into its shim (the .lithe loader runs it for every graph node it builds). */
extern const lithe__layer_type lithe__onnx_graph_type;
lithe_status lithe__onnx_attach(lithe_model *m);
/* lithe_model_prepare_inference for a graph node: prepares the initializers its Gemm and MatMul
 * nodes read as B (core/prepare.c); and the node's i-th float constant (NULL past the last). */
lithe_status lithe__graph_prepare(lithe_model *m);
lithe_tensor *lithe__graph_const(lithe_model *m, size_t i);
/* The idle blocks of every run plan's pool of graph node m back to the backend (a no-op for other
 * nodes): lithe_model_plan_train's dry runs, at one and two rows, would keep theirs for good. */
void lithe__graph_trim_pools(lithe_model *m);
/* The prepared-op key of a graph node whose weight W and bias (NULL: none) are initializers: a
 * Gemm as A · Wᵀ + bias or a Conv with pads fixed by its attributes; false for anything else. */
struct lithe__onnx_node;
bool lithe__graph_prep_op(const struct lithe__onnx_node *n, const lithe_tensor *W, const lithe_tensor *bias,
                          lithe__prep_op *op);
/* The npm package's core module (LITHE_IMPORTERS_SEPARATE) leaves core/graph/, onnx.c and tfjs.c
 * out: it reaches the graph layer type through bindings/js/src/importers_hooks.c (a stand-in until
 * the importer module registers; bindings/js/src/importers.h). */
#ifdef LITHE_IMPORTERS_SEPARATE
const lithe__layer_type *lithe__importers_graph_type(void);
const lithe__layer_type *const *lithe__importers_graph_types(void);
#define LITHE__ONNX_GRAPH_TYPE (lithe__importers_graph_type())
#define LITHE__GRAPH_TYPES (lithe__importers_graph_types())
#else
#define LITHE__ONNX_GRAPH_TYPE (&lithe__onnx_graph_type)
#define LITHE__GRAPH_TYPES lithe__graph_types
#endif
const lithe__layer_type *lithe__layer_type_by_name(const char *registered_name);

/* chain(node, LayerNorm(nI=nO)) when o->normalize, then chain(.., Dropout) when o->dropout > 0,
 * as Thinc's layers build them. Takes over node, also on failure. */
lithe_status lithe__norm_dropout(const char *layer, lithe_model *node, const lithe_dense_opts *o, lithe_model **out);

/* LoRA adapters (core/lora.c: the step, on the activations; core/lora_add.c: adding, merging;
 * core/lora_file.c; core/graph/graph_lora.c; issue 26 item 2). A weight's layout says how its
 * values read as the matrix D (out, in) an adapter adds to: k >= 1, rows = prod(shape[:k]) and
 * cols = the rest (dense W (out..., in): ndim - 1; a Conv's W: 1), or LITHE__LORA_T, a 2-D (in, out)
 * weight (MatMul's, Gemm's without transB). */
#define LITHE__LORA_T (-1)
typedef lithe_status (*lithe__lora_found)(lithe_model *m, const char *param, int layout, void *user);
/* Every weight of nodes[0..n) that takes an adapter, through fn: native dense layers' W, a graph
 * node's Gemm / MatMul / Conv weights (lithe__graph_lora_weights). */
lithe_status lithe__lora_each_weight(lithe_model *const *nodes, size_t n, lithe__lora_found fn, void *user);
lithe_status lithe__graph_lora_weights(lithe_model *m, lithe__lora_found fn, void *user);
/* An adapter on m's param pn (A, B: initial values on m's backend, or NULL: A drawn from rng as
 * U(-1/sqrt(in), 1/sqrt(in)), B zero); detach drops one (params and attrs, P keeps its value). */
lithe_status lithe__lora_attach(lithe_model *m, const char *pn, int64_t rank, double alpha, int layout,
                                lithe_tensor *A, lithe_tensor *B, lithe_rng *rng);
void lithe__lora_detach(lithe_model *m, const char *pn);
void lithe__lora_freeze_base(lithe_model *const *nodes, size_t n);
/* Whether m's param carries an adapter, and whether a name is an adapter's own param (lora_A:,
 * lora_B:) or attr (lora_alpha:, lora_layout:). */
bool lithe__lora_owned(const lithe_model *m, const char *param);
bool lithe__lora_param(const char *name);
bool lithe__lora_attr(const char *name);
/* Whether m's tree holds an adapter, with the walk's status (lithe_model_lora_count says 0 when the
 * walk cannot allocate; checks that refuse adapted models use this). */
lithe_status lithe__lora_any(lithe_model *m, bool *any);
bool lithe__lora_is_graph(const lithe_model *m);
/* Whether m's weight P can carry an adapter: float32, or a compact 2-D W of a native dense layer. */
lithe_status lithe__lora_base_ok(const lithe_model *m, const lithe__param *P);
/* The training step (core/lora.c): the adapter on m's param P, if any (*on; A (r, in), B (out, r),
 * s = alpha / r; pointers into m's params, valid until m's params change), or an error naming an
 * incomplete one. forward: Y (N, out) += scale·s·(X·Aᵀ)·Bᵀ for rows X (N, in); backward, from dY
 * (N, out): A's and B's gradients, and dX (N, in) += scale·s·(dY·B)·A when dX is not NULL. */
typedef struct lithe__lora_ad {
    lithe__param *A, *B;
    float s;
} lithe__lora_ad;
lithe_status lithe__lora_of(lithe_model *m, const lithe__param *P, lithe__lora_ad *ad, bool *on);
lithe_status lithe__lora_forward(lithe_model *m, const lithe__lora_ad *ad, const lithe_tensor *X, lithe_tensor *Y,
                                 float scale);
lithe_status lithe__lora_backward(lithe_model *m, const lithe__lora_ad *ad, const lithe_tensor *X, const lithe_tensor *dY,
                                  lithe_tensor *dX, float scale);
/* '*' and '?' glob. */
bool lithe__glob(const char *pattern, const char *s);
/* Whether node's param matches the glob by its name or as "<node name>/<param>" (freezing, compact weights). */
bool lithe__param_matches(const lithe_model *node, const char *param, const char *pattern);

#endif /* LITHE_CORE_LAYERS_H */
