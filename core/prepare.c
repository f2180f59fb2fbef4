/* Weights prepared for inference (lithe_model_prepare_inference): a backend's private form of the
 * weights a model's GEMMs read as op(B) — on the CPU the packed Wᵀ panels its driver would
 * otherwise build on every call — kept on the weights' storage and dropped when lithe writes that
 * storage (lithe__storage_touch: the version moves on). The forward of a layer reads the prepared
 * form only when is_train is false and the form is still there; the bits are the unprepared
 * call's (the same kernel, blocking and summation order).
 *
 * Which weights: the dense family (W of Linear, Relu, ... and Softmax, as X·Wᵀ), Maxout's W (as
 * its (nO·nP, nI) view) and an imported graph's Gemm / MatMul B when it is an initializer (a
 * param or a constant) of a 2-D float shape; an imported Conv's W at group 1, as the (M, K) matrix
 * its GEMM reads as Wᵀ (lithe__prepare_conv_w). */
#include "internal.h"

static bool same_view(const lithe__prepared *p, const lithe_tensor *B, bool transB, const lithe_backend *be) {
    return p->backend == be && p->transB == transB && p->offset == B->offset && p->shape[0] == B->shape[0] &&
           p->shape[1] == B->shape[1] && p->strides[0] == B->strides[0] && p->strides[1] == B->strides[1];
}

static void prepared_free(lithe__prepared *p) {
    if (p->kind == LITHE__PREP_GEMM_B) {
        if (p->backend->ops->prepared_free) p->backend->ops->prepared_free(p->backend, p->data);
    } else if (p->backend->ops->prepared_op_free) {
        p->backend->ops->prepared_op_free(p->backend, p->data);
    }
    lithe_tensor_release(p->bias);
    lithe__free(p->op);
    lithe__free(p);
}

void lithe__storage_drop_prepared(lithe__storage *st) {
    lithe__prepared *p = st->prepared;
    st->prepared = NULL;
    while (p) {
        lithe__prepared *next = p->next;
        prepared_free(p);
        p = next;
    }
}

static lithe__prepared *find(const lithe_tensor *B, bool transB, const lithe_backend *be) {
    if (!B || B->ndim != 2) return NULL;
    for (lithe__prepared *p = B->storage->prepared; p; p = p->next)
        if (p->kind == LITHE__PREP_GEMM_B && same_view(p, B, transB, be)) return p;
    return NULL;
}

/* The valid prepared form of the contiguous (r, c) view at offset of st, as op(B) with transB. */
static lithe__prepared *find_2d(const lithe__storage *st, int64_t offset, int64_t r, int64_t c, bool transB,
                                const lithe_backend *be) {
    for (lithe__prepared *p = st->prepared; p; p = p->next)
        if (p->kind == LITHE__PREP_GEMM_B && p->backend == be && p->transB == transB &&
            p->offset == offset && p->shape[0] == r && p->shape[1] == c && p->strides[0] == c && p->strides[1] == 1)
            return p;
    return NULL;
}

const void *lithe__prepared_find(const lithe_tensor *B, bool transB, const lithe_backend *be) {
    const lithe__prepared *p = find(B, transB, be);
    return p ? p->data : NULL;
}

lithe_status lithe__prepare_b(lithe_tensor *B, bool transB, lithe_backend *be) {
    if (!be->ops->prepare_b || !be->ops->gemm_prepared || B->dtype != LITHE_F32 || B->ndim != 2 ||
        B->storage->backend != be || B->strides[1] != 1 || B->numel == 0)
        return LITHE_OK; /* nothing this backend (or this view) can use */
    /* a fresh snapshot: the form of this view made before (valid or not) goes, since the values
     * may have been written where lithe cannot see */
    for (lithe__prepared **pp = &B->storage->prepared; *pp; pp = &(*pp)->next)
        if (same_view(*pp, B, transB, be)) {
            lithe__prepared *old = *pp;
            *pp = old->next;
            prepared_free(old);
            break;
        }
    lithe__prepared *p = lithe__calloc(1, sizeof *p);
    if (!p) return lithe__oom("lithe_model_prepare_inference", sizeof *p);
    lithe_status s = be->ops->prepare_b(be, transB, B, &p->data, &p->bytes);
    if (s != LITHE_OK || !p->data) {
        lithe__free(p);
        return s;
    }
    p->backend = be;
    p->transB = transB;
    p->offset = B->offset;
    for (int d = 0; d < 2; d++) {
        p->shape[d] = B->shape[d];
        p->strides[d] = B->strides[d];
    }
    p->next = B->storage->prepared;
    B->storage->prepared = p;
    return LITHE_OK;
}

lithe_status lithe__gemm_w(lithe_backend *be, bool is_train, bool transA, bool transB, float alpha,
                           const lithe_tensor *A, const lithe_tensor *B, float beta, lithe_tensor *C) {
    const void *P = is_train ? NULL : lithe__prepared_find(B, transB, be);
    if (!P) return lithe__op_gemm(be, transA, transB, alpha, A, B, beta, C);
    lithe__storage_touch(C->storage);
    return be->ops->gemm_prepared(be, transA, transB, alpha, A, B, P, beta, C, NULL, NULL, NULL);
}

lithe_status lithe__gemm_bias_act_w(lithe_backend *be, bool is_train, bool transA, bool transB, const lithe_tensor *A,
                                    const lithe_tensor *B, const lithe_tensor *b, const lithe__act *a, lithe_tensor *Z,
                                    lithe_tensor *Y) {
    const void *P = is_train ? NULL : lithe__prepared_find(B, transB, be);
    if (!P) return lithe__op_gemm_bias_act(be, transA, transB, A, B, b, a, Z, Y);
    lithe__storage_touch(Y->storage);
    if (Z) lithe__storage_touch(Z->storage);
    return be->ops->gemm_prepared(be, transA, transB, 1.0f, A, B, P, 0.0f, Y, b, a, Z);
}

/* ---- convolution weights: W (M, C/group, KH, KW) as the (M, K) matrix the GEMM reads as Wᵀ ---- */

lithe_status lithe__prepare_conv_w(lithe_tensor *W, int64_t group, lithe_backend *be) {
    if (group != 1 || !be->ops->conv2d_prepared || W->ndim != 4 || W->dtype != LITHE_F32 ||
        !lithe_tensor_is_contiguous(W) || W->numel == 0)
        return LITHE_OK;
    lithe_tensor *W2 = NULL;
    LITHE__TRY(lithe_tensor_reshape(W, 2, (int64_t[]){W->shape[0], W->numel / W->shape[0]}, &W2));
    lithe_status s = lithe__prepare_b(W2, true, be); /* kept on W's storage, found by the view */
    lithe_tensor_release(W2);
    return s;
}

lithe_status lithe__conv2d_w(lithe_backend *be, bool is_train, const lithe__conv2d *g, const lithe_tensor *X,
                             const lithe_tensor *W, const lithe_tensor *b, const lithe__act *a, lithe_tensor *Y) {
    const lithe__prepared *p = NULL;
    if (!is_train && W->storage->prepared && be->ops->conv2d_prepared && g->group == 1 && W->ndim == 4 &&
        W->shape[0] > 0 && lithe_tensor_is_contiguous(W))
        p = find_2d(W->storage, W->offset, W->shape[0], W->numel / W->shape[0], true, be);
    if (!p) return lithe__op_conv2d(be, g, X, W, b, a, Y);
    lithe__storage_touch(Y->storage);
    return be->ops->conv2d_prepared(be, g, X, W, p->data, b, a, Y);
}

lithe_status lithe__conv2d_add_w(lithe_backend *be, bool is_train, const lithe__conv2d *g, const lithe_tensor *X,
                                 const lithe_tensor *W, const lithe_tensor *b, const lithe_tensor *R, bool res_first,
                                 lithe_tensor *Y) {
    const lithe__prepared *p = NULL;
    if (!is_train && W->storage->prepared && be->ops->conv2d_prepared && g->group == 1 && W->ndim == 4 &&
        W->shape[0] > 0 && lithe_tensor_is_contiguous(W))
        p = find_2d(W->storage, W->offset, W->shape[0], W->numel / W->shape[0], true, be);
    lithe__storage_touch(Y->storage);
    return be->ops->conv2d_add(be, g, X, W, p ? p->data : NULL, b, R, res_first, Y);
}

/* ---- prepared ops (a backend's own operators with the weights baked in: LITHE_XNNPACK) ---- */

static bool same_op(const lithe__prep_op *a, const lithe__prep_op *b) {
    if (a->kind != b->kind || a->out_min != b->out_min || a->out_max != b->out_max) return false;
    if (a->kind != LITHE__PREP_CONV2D) return true;
    const lithe__conv2d *x = &a->conv, *y = &b->conv;
    return x->C == y->C && x->M == y->M && x->KH == y->KH && x->KW == y->KW && x->group == y->group &&
           !memcmp(x->stride, y->stride, sizeof x->stride) && !memcmp(x->pad, y->pad, sizeof x->pad) &&
           !memcmp(x->dil, y->dil, sizeof x->dil);
}

static bool same_bias(const lithe__prepared *p, const lithe_tensor *b) {
    if (!b) return !p->bias_storage;
    return p->bias_storage == b->storage && p->bias_offset == b->offset && p->bias_numel == b->numel &&
           p->bias_version == b->storage->version;
}

static lithe__prepared *find_op(const lithe__prep_op *op, const lithe_tensor *W, const lithe_tensor *bias,
                                const lithe_backend *be) {
    for (lithe__prepared *p = W->storage->prepared; p; p = p->next)
        if (p->kind == op->kind && p->backend == be && same_op(p->op, op) &&
            p->offset == W->offset && p->shape[0] == W->shape[0] && p->strides[0] == W->strides[0] &&
            same_bias(p, bias))
            return p;
    return NULL;
}

lithe_status lithe__prepare_op(lithe_backend *be, const lithe__prep_op *op, lithe_tensor *W, lithe_tensor *bias) {
    if (!be->ops->prepare_op || !be->ops->run_prepared_op || W->dtype != LITHE_F32 || W->storage->backend != be ||
        !lithe_tensor_is_contiguous(W) || W->numel == 0 ||
        (bias && (bias->dtype != LITHE_F32 || bias->storage->backend != be || !lithe_tensor_is_contiguous(bias))))
        return LITHE_OK;
    /* a fresh snapshot, as lithe__prepare_b: the operator made before for this op, W view and
     * bias (valid or not: written through raw pointers, or its bias since) goes */
    for (lithe__prepared **pp = &W->storage->prepared; *pp; pp = &(*pp)->next) {
        const lithe__prepared *q = *pp;
        if (q->kind == op->kind && q->backend == be && same_op(q->op, op) && q->offset == W->offset &&
            q->shape[0] == W->shape[0] && q->strides[0] == W->strides[0] &&
            (bias ? q->bias_storage == bias->storage && q->bias_offset == bias->offset && q->bias_numel == bias->numel
                  : !q->bias_storage)) {
            lithe__prepared *old = *pp;
            *pp = old->next;
            prepared_free(old);
            break;
        }
    }
    lithe__prepared *p = lithe__calloc(1, sizeof *p);
    lithe__prep_op *key = lithe__malloc(sizeof *key);
    if (!p || !key) {
        lithe__free(p);
        lithe__free(key);
        return lithe__oom("lithe_model_prepare_inference", sizeof *p + sizeof *key);
    }
    *key = *op;
    lithe_status s = be->ops->prepare_op(be, op, W, bias, &p->data, &p->bytes);
    if (s != LITHE_OK || !p->data) {
        lithe__free(p);
        lithe__free(key);
        return s;
    }
    p->backend = be;
    p->kind = op->kind;
    p->op = key;
    p->offset = W->offset;
    p->shape[0] = W->shape[0];
    p->strides[0] = W->strides[0];
    if (bias) { /* the bias's storage must outlive the form (so no other storage takes its address);
                 * no reference when it is W's own storage (a cycle) */
        p->bias_storage = bias->storage;
        p->bias_offset = bias->offset;
        p->bias_numel = bias->numel;
        p->bias_version = bias->storage->version;
        if (bias->storage != W->storage) p->bias = lithe_tensor_retain(bias);
    }
    p->next = W->storage->prepared;
    W->storage->prepared = p;
    return LITHE_OK;
}

lithe_status lithe__run_prepared_op(lithe_backend *be, bool is_train, const lithe__prep_op *op, const lithe_tensor *W,
                                    const lithe_tensor *bias, const lithe_tensor *X, lithe_tensor *Y, bool *done) {
    *done = false;
    if (is_train || !W->storage->prepared) return LITHE_OK;
    const lithe__prepared *p = find_op(op, W, bias, be);
    if (!p) return LITHE_OK;
    lithe__storage_touch(Y->storage);
    return be->ops->run_prepared_op(be, p->data, op, X, Y, done);
}

bool lithe__has_prepared_op(const lithe_backend *be, const lithe__prep_op *op, const lithe_tensor *W,
                            const lithe_tensor *bias) {
    return W->storage->prepared && find_op(op, W, bias, be);
}

/* ---- the public calls ---- */

static bool in_family(const lithe__layer_type *t, const lithe__layer_type *const *family) {
    for (size_t i = 0; family[i]; i++)
        if (family[i] == t) return true;
    return false;
}

/* One node's weights. */
static lithe_status prepare_node(lithe_model *m) {
    lithe_backend *be = m->backend;
    if (in_family(m->type, lithe__dense_types) || in_family(m->type, lithe__softmax_types)) {
        lithe__param *p = lithe__model_find_param(m, "W");
        if (!p || !p->value || p->value->ndim != 2) return LITHE_OK;
        LITHE__TRY(lithe__prepare_b(p->value, true, be));
        /* and, where the backend has one (LITHE_XNNPACK), its own operator for Y = act(X·Wᵀ + b) */
        lithe__param *b = lithe__model_find_param(m, "b");
        lithe__prep_op op;
        bool has = in_family(m->type, lithe__dense_types) ? lithe__dense_prep_op(m, &op) : lithe__affine_prep_op(NULL, &op);
        if (has && b && b->value && b->value->ndim == 1 && b->value->shape[0] == p->value->shape[0])
            return lithe__prepare_op(be, &op, p->value, b->value);
        return LITHE_OK;
    }
    if (in_family(m->type, lithe__maxout_types)) { /* W (nO, nP, nI) read as (nO·nP, nI) */
        lithe__param *p = lithe__model_find_param(m, "W");
        if (!p || !p->value || p->value->ndim != 3) return LITHE_OK;
        lithe_tensor *W = p->value, *W2 = NULL;
        LITHE__TRY(lithe_tensor_reshape(W, 2, (int64_t[]){W->shape[0] * W->shape[1], W->shape[2]}, &W2));
        lithe_status s = lithe__prepare_b(W2, true, be);
        lithe_tensor_release(W2);
        return s;
    }
    if (m->type == LITHE__ONNX_GRAPH_TYPE) return lithe__graph_prepare(m);
    return LITHE_OK;
}

static lithe_status walk_all(lithe_model *m, lithe_model ***nodes, size_t *n) {
    size_t cap = 64;
    for (;;) {
        lithe_model **buf = lithe__malloc(cap * sizeof *buf);
        if (!buf) return lithe__oom("lithe_model_prepare_inference", cap * sizeof *buf);
        size_t got = 0;
        lithe_status s = lithe_model_walk(m, buf, cap, &got);
        if (s != LITHE_OK) {
            lithe__free(buf);
            return s;
        }
        if (got <= cap) {
            *nodes = buf;
            *n = got;
            return LITHE_OK;
        }
        lithe__free(buf);
        cap = got;
    }
}

static void release_tensor(lithe_tensor *t) {
    if (t && t->storage->prepared) lithe__storage_drop_prepared(t->storage);
}

static void release_node(lithe_model *m) {
    for (size_t i = 0; i < m->n_params; i++) release_tensor(m->params[i].value);
    if (m->type == LITHE__ONNX_GRAPH_TYPE)
        for (size_t i = 0; lithe__graph_const(m, i); i++) release_tensor(lithe__graph_const(m, i));
}

static void model_release_prepared_body(lithe_model *m) {
    if (!m) return;
    lithe_model **nodes = NULL;
    size_t n = 0;
    if (walk_all(m, &nodes, &n) != LITHE_OK) { /* no memory for the walk: this node at least */
        release_node(m);
        return;
    }
    for (size_t i = 0; i < n; i++) release_node(nodes[i]);
    lithe__free(nodes);
}

void lithe_model_release_prepared(lithe_model *m) {
    if (!m) return;
    if (lithe__enter_tree(m, "lithe_model_release_prepared") != LITHE_OK) return; /* in use on another thread: lithe_last_error says so */
    model_release_prepared_body(m);
    lithe__leave_tree(m);
}

static lithe_status model_prepare_inference_body(lithe_model *m) {
    LITHE__CHECK_ARG(m, "lithe_model_prepare_inference", "model is NULL");
    lithe_model **nodes = NULL;
    size_t n = 0;
    LITHE__TRY(walk_all(m, &nodes, &n));
    lithe_status s = LITHE_OK;
    for (size_t i = 0; s == LITHE_OK && i < n; i++) s = prepare_node(nodes[i]);
    for (size_t i = 0; s != LITHE_OK && i < n; i++) release_node(nodes[i]); /* all or nothing */
    lithe__free(nodes);
    return s;
}

lithe_status lithe_model_prepare_inference(lithe_model *m) {
    if (m) LITHE__TRY(lithe__enter_tree(m, "lithe_model_prepare_inference"));
    lithe_status s = model_prepare_inference_body(m);
    if (m) lithe__leave_tree(m);
    return s;
}

static size_t storage_bytes(const lithe__storage *st) {
    size_t b = 0;
    for (const lithe__prepared *p = st->prepared; p; p = p->next) b += p->bytes;
    return b;
}

/* Each storage counted once (a storage shared by several params or nodes). */
static size_t tensor_bytes(const lithe_tensor *t, const lithe__storage **seen, size_t *n_seen, size_t cap) {
    if (!t || !t->storage->prepared) return 0;
    for (size_t i = 0; i < *n_seen; i++)
        if (seen[i] == t->storage) return 0;
    if (*n_seen < cap) seen[(*n_seen)++] = t->storage;
    return storage_bytes(t->storage);
}

static size_t node_bytes(lithe_model *m, const lithe__storage **seen, size_t *n_seen, size_t cap) {
    size_t b = 0;
    for (size_t i = 0; i < m->n_params; i++) b += tensor_bytes(m->params[i].value, seen, n_seen, cap);
    if (m->type == LITHE__ONNX_GRAPH_TYPE)
        for (size_t i = 0; lithe__graph_const(m, i); i++) b += tensor_bytes(lithe__graph_const(m, i), seen, n_seen, cap);
    return b;
}

static size_t model_prepared_bytes_body(lithe_model *m) {
    if (!m) return 0;
    lithe_model **nodes = NULL;
    size_t n = 0;
    if (walk_all(m, &nodes, &n) != LITHE_OK) return 0;
    size_t cap = 1024, n_seen = 0, b = 0;
    const lithe__storage **seen = lithe__malloc(cap * sizeof *seen);
    if (!seen) cap = 0;
    for (size_t i = 0; i < n; i++) b += node_bytes(nodes[i], seen, &n_seen, cap);
    lithe__free(seen);
    lithe__free(nodes);
    return b;
}

size_t lithe_model_prepared_bytes(lithe_model *m) {
    if (!m || lithe__enter_tree(m, "lithe_model_prepared_bytes") != LITHE_OK) return 0;
    size_t b = model_prepared_bytes_body(m);
    lithe__leave_tree(m);
    return b;
}
