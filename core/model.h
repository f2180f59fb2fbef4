/* Model nodes (core/model.c): backprop records, layer types, dims, params, refs, attrs, shims,
 * and the calls layers make on a node. Not installed */
#ifndef LITHE_CORE_MODEL_H
#define LITHE_CORE_MODEL_H

#include "tensor.h"

/* ------------------------------------------------------------------------------------------
 * Models.
 * ---------------------------------------------------------------------------------------- */

/* The backprop record: a layer allocates a struct that starts with this header. `run`
 * computes dX from dY (dX NULL: the caller does not want it, but grads still accumulate). */
struct lithe_backprop {
    lithe_status (*run)(lithe_backprop *self, const lithe_value *dY, lithe_value **dX);
    void (*destroy)(lithe_backprop *self); /* frees what the record owns, not self */
    lithe_model *model;                    /* retained */
};

typedef struct lithe__layer_type {
    const char *registered_name; /* "Relu.v1" */
    lithe_status (*init)(lithe_model *m, const lithe_value *X, const lithe_value *Y);
    lithe_status (*forward)(lithe_model *m, const lithe_value *X, bool is_train,
                            lithe_value **Y, lithe_backprop **bp);
    const void *info; /* per-type constants for a family sharing init/forward (dense.c) */
    /* How many children a node of this type has: the .lithe loader refuses a node tree that
     * disagrees, since forward passes reach for them. Leaves: 0, 0. */
    size_t min_layers, max_layers;
} lithe__layer_type;

/* Allocates a record of `size` bytes (>= sizeof(lithe_backprop)), zeroed, retaining m. */
lithe_status lithe__backprop_new(lithe_model *m, size_t size,
                                 lithe_status (*run)(lithe_backprop *, const lithe_value *,
                                                     lithe_value **),
                                 void (*destroy)(lithe_backprop *), lithe_backprop **out);
/* The identity record (Dropout at predict, Dropout rate 0). */
lithe_status lithe__backprop_identity(lithe_model *m, lithe_backprop **out);

typedef struct lithe__dim {
    char *name;
    int64_t value; /* 0: unset */
} lithe__dim;

typedef struct lithe__param {
    char *name;
    lithe_tensor *value; /* NULL: registered but unset */
    lithe_tensor *grad;  /* NULL: no grad yet */
    bool frozen;         /* finish_update skips it (and drops its grad) */
} lithe__param;

typedef struct lithe__ref {
    char *name;
    lithe_model *node; /* not owned; NULL: unset */
} lithe__ref;

typedef struct lithe__attr {
    char *name;
    lithe_attr_type type;
    union {
        int64_t i;
        double f;
        bool b;
        char *s;
        lithe_tensor *t;
    } v;
} lithe__attr;

struct lithe_model {
    int refcount; /* atomic (__atomic builtins): a reference may be dropped on any thread */
    /* Concurrent-use detection (core/guard.c): the token of the thread inside a call on this node
     * (0: none), and how deeply that thread is nested in calls on it (only that thread touches it). */
    uintptr_t owner;
    int owner_depth;
    uint64_t id;
    char *name;
    const lithe__layer_type *type;
    lithe_backend *backend;
    lithe_rng rng;
    size_t n_dims, n_params, n_refs, n_attrs, n_layers;
    lithe__dim *dims;
    lithe__param *params;
    lithe__names param_index; /* name -> params[] index, kept once there are many (core/model.c) */
    lithe__ref *refs;
    lithe__attr *attrs;
    lithe_model **layers; /* owned references */
    size_t n_shims;
    lithe_shim **shims; /* owned; empty for every layer so far */
    /* construction choices that Thinc binds into the layer's init, not attrs (never saved) */
    lithe_init init_W, init_b;
    double cfg[2]; /* layer-private constants (resizable: the fill of new W and b rows) */
    lithe_debug_hooks *debug; /* lithe_with_debug's callbacks (owned; never saved or copied) */
    struct lithe__mem_budget *budget; /* lithe_model_set_memory_budget's (owned; never saved) */
};

/* A shim: a foreign graph a node holds (an imported ONNX / TF.js graph, core/graph/, arriving
 * with the graph-import work). finish_update runs every shim's update before the params', as
 * Thinc's Model.finish_update does; free releases its state. */
typedef struct lithe__shim_type {
    const char *name;
    lithe_status (*finish_update)(lithe_shim *shim, lithe_optimizer *opt);
    void (*free)(lithe_shim *shim);
} lithe__shim_type;

struct lithe_shim {
    const lithe__shim_type *type;
    void *state;
};

/* A new node. dim_names / param_names are NULL-terminated lists (may be NULL). */
lithe_status lithe__model_new(const lithe__layer_type *type, const char *name,
                              const char *const *dim_names, const char *const *param_names,
                              lithe_model **out);
/* A new node (new id) of src's type, name, dims, attrs and private settings, with copies of its
 * params; no grads, children, refs or shims. */
lithe_status lithe__node_clone(const lithe_model *src, lithe_model **out);
/* One thread at a time per node (core/guard.c, include/lithe.h "Thread safety"): enter claims m for
 * this thread (nested claims by the same thread count up), or fails with LITHE_ERR_STATE "model used
 * from two threads at once" naming fn, when another thread is inside a call on m; leave drops one
 * claim. enter_tree / leave_tree do the same for every node of m's tree (layers, recursively). */
lithe_status lithe__enter(lithe_model *m, const char *fn);
void lithe__leave(lithe_model *m);
lithe_status lithe__enter_tree(lithe_model *m, const char *fn);
void lithe__leave_tree(lithe_model *m);
/* Appends a child, taking over the caller's reference. */
lithe_status lithe__model_add_layer(lithe_model *m, lithe_model *child);
lithe__param *lithe__model_find_param(const lithe_model *m, const char *name);
/* Dim value or 0 when unset/unknown. */
int64_t lithe__dim_value(const lithe_model *m, const char *name);
/* Sets a dim, or checks it against the current value: "relu: dim nI is 784, got 783 from X". */
lithe_status lithe__infer_dim(lithe_model *m, const char *name, int64_t value, const char *from);
/* The f32 param tensor (must be allocated), or an error naming the layer. */
lithe_status lithe__param_get(const lithe_model *m, const char *name, lithe_tensor **out);
/* The param in whatever dtype it is stored in (lithe__param_get refuses a compact weight with a
 * clear error: a layer that reads W as floats must not see int8 bytes); and whether m's layer
 * computes with compact W (core/quant.c). */
lithe_status lithe__param_get_any(const lithe_model *m, const char *name, lithe_tensor **out);
bool lithe__compact_ok(const lithe_model *m);
/* grad += value, allocating a zeroed grad on first use; accumulating with alpha scale. */
lithe_status lithe__grad_acc(lithe_model *m, const char *name, lithe_tensor **grad_out);

/* Allocates the optimizer's state for (node, name) ahead of a step (finish_update does this for
 * the whole tree first, so an OOM changes no param). */
lithe_status lithe__optimizer_prepare(lithe_optimizer *opt, const lithe_model *node, const char *name,
                                      const lithe_tensor *W);
/* lithe_optimizer_set_check_finite's flag, and its check of one gradient (LITHE_ERR_VALUE). */
bool lithe__optimizer_checks_finite(const lithe_optimizer *opt);
/* A node read from a file against itself (core/io/load_check.c): each param's shape against the
 * dims naming its axes, attrs in their ranges (dropout_rate in [0, 1]); `what` starts messages. */
lithe_status lithe__check_loaded_node(const lithe_model *m, const char *what);
lithe_status lithe__grad_check_finite(const char *who, const lithe_model *node, const char *name, const lithe_tensor *G);

/* Files (core/io/): a whole file into a new buffer (lithe__free), and an atomic write (temp file,
 * fsync, rename). */
lithe_status lithe__read_file(const char *path, uint8_t **out, size_t *len);
lithe_status lithe__write_file_atomic(const char *path, const uint8_t *data, size_t len);

/* A new param tensor `name` of `shape`, filled by `kind` from the node's stream, set on m. */
lithe_status lithe__param_init(lithe_model *m, const char *name, lithe_init kind, int ndim, const int64_t *shape);

/* Shared by core/model*.c: the nodes of a tree breadth-first, each once (Thinc's _walk_bfs; the
 * array owns no references, lithe__free it), and an attr slot emptied. */
typedef struct lithe__walk_buf {
    lithe_model **v;
    size_t n, cap;
} lithe__walk_buf;
lithe_status lithe__walk_collect(lithe_model *root, lithe__walk_buf *w);
void lithe__attr_clear(lithe__attr *a);

/* Training memory (core/train/memory.c). grad_acc_trainable is lithe__grad_acc for a layer that
 * can skip a frozen param's gradient: *grad_out NULL when the param is frozen (no buffer made).
 * subtree_trainable: some param of m's subtree is set and not frozen (no allocation).
 * budget_check: lithe_model_set_memory_budget's refusal, before a training forward of m. */
lithe_status lithe__grad_acc_trainable(lithe_model *m, const char *name, lithe_tensor **grad_out);
bool lithe__subtree_trainable(const lithe_model *m);
/* Long-lived tensors (gradient buffers, optimizer state) are made between persistent(be, true) and
 * (be, false): they take no block the backend keeps for reuse, which the next step's activations
 * then find — so a training step after the first allocates nothing (tests/test_train_memory.c). */
void lithe__persistent(lithe_backend *be, bool on);
lithe_status lithe__budget_check(lithe_model *m, const lithe_value *X);
/* The optimizer's state per trainable param, in copies of the param (Adam: 2, + 1 for averages). */
size_t lithe__optimizer_state_copies(const lithe_optimizer *opt);
/* A tensor's bytes (numel x dtype size; 0 for NULL). */
size_t lithe__tensor_nbytes(const lithe_tensor *t);

#endif /* LITHE_CORE_MODEL_H */
