/* Control flow at load (issue 23 item 7): ONNX If, Loop and Scan, expanded into the model's node
 * list so the rest of the graph layer (folding, fusion, the buffer plan, backward) sees plain
 * nodes.
 *
 *   If    whose condition is a constant by the time binding reaches it (an initializer, a Constant,
 *         or arithmetic on them that folded): the chosen branch's nodes and initializers take its
 *         place, then Identity nodes from the branch's outputs to the If's. ONNX names are unique
 *         across a graph and its subgraphs (SSA), so the branch keeps its names, nested control
 *         flow included.
 *   Loop  with a constant trip count M and a constant (or absent) condition, whose body keeps its
 *         condition true (passes cond_in through, or a constant true): unrolled M times (at most
 *         LITHE__GRAPH_MAX_UNROLL). Iteration k's copy of the body has its names prefixed
 *         "<loop>/<k>/", iteration_num is a constant k, the carried values chain, and each scan
 *         output is Unsqueeze(axis 0) of every iteration's, Concat'ed.
 *   Scan  whose scan inputs have a length known at load (a constant, or a graph input declared
 *         with a fixed extent), axes 0: unrolled the same way, slice k of each scan input taken by
 *         Gather (reversed when its direction is 1); a Split of one part of that length first, so
 *         an input of another length at run time is refused there, never read wrongly.
 *
 * Anything else is refused at load with the node named: a condition computed from the graph's
 * inputs, a runtime trip count, a while loop, control flow inside a Loop / Scan body, Scan axes
 * other than 0. */
#include "graph.h"

#include <stdio.h>
#include <string.h>

#define LAYER "onnx_graph"

bool lithe__graph_is_control(const char *op_type) {
    return !strcmp(op_type, "If") || !strcmp(op_type, "Loop") || !strcmp(op_type, "Scan");
}

static lithe_status refuse(const lithe__onnx_node *n, size_t i, lithe_status st, const char *fmt, ...) LITHE__PRINTF(4, 5);
static lithe_status refuse(const lithe__onnx_node *n, size_t i, lithe_status st, const char *fmt, ...) {
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return lithe__fail(st, "%s: %s node '%s' (#%zu): %s", LAYER, n->op_type, n->name ? n->name : "", i, msg);
}

static const lithe__onnx_attr *graph_attr(const lithe__onnx_node *n, const char *name) {
    const lithe__onnx_attr *a = lithe__onnx_attr_get(n, name);
    return a && a->graph ? a : NULL;
}

/* The constant value of input k of node i as one integer (a scalar or 1-element bool / int /
 * float tensor); false when the input is not a constant. */
static bool const_scalar(const lithe__graph *g, size_t i, size_t k, int64_t *v) {
    if (k >= g->onnx.nodes[i].n_inputs) return false;
    int64_t sl = g->node_in[i][k];
    if (sl < 0 || g->slot_kind[sl] != SLOT_CONST || !g->slot_const[sl] || lithe_tensor_numel(g->slot_const[sl]) != 1)
        return false;
    const lithe_tensor *t = g->slot_const[sl];
    if (t->dtype == LITHE_I64) *v = ((const int64_t *)lithe__tdata(t))[0];
    else if (t->dtype == LITHE_F32) *v = ((const float *)lithe__tdata(t))[0] != 0.0f;
    else return false;
    return true;
}

/* Whether a Loop body keeps its condition true: its first output is its cond input, or comes
 * through Identity nodes from it, from a constant true in the body, or from an outer value
 * bound to a constant true. */
static bool body_keeps_going(const lithe__graph *g, const lithe__onnx_model *b) {
    if (b->n_outputs < 1 || b->n_inputs < 2) return false;
    const char *name = b->outputs[0].name;
    for (int hops = 0; hops < 64; hops++) {
        if (!strcmp(name, b->inputs[1].name)) return true;
        const lithe__onnx_node *p = NULL;
        for (size_t j = 0; j < b->n_nodes && !p; j++)
            for (size_t k = 0; k < b->nodes[j].n_outputs; k++)
                if (!strcmp(b->nodes[j].outputs[k], name)) p = &b->nodes[j];
        for (size_t j = 0; !p && j < b->n_inits; j++)
            if (!strcmp(b->inits[j].name, name)) return b->inits[j].numel == 1 && !b->inits[j].is_float &&
                                                        ((const int64_t *)b->inits[j].data)[0] != 0;
        if (!p) { /* an outer value: a constant true in the binding */
            for (size_t sl = 0; sl < g->n_slots; sl++)
                if (g->slot_name[sl] && !strcmp(g->slot_name[sl], name))
                    return g->slot_kind[sl] == SLOT_CONST && g->slot_const[sl] && g->slot_const[sl]->dtype == LITHE_I64 &&
                           lithe_tensor_numel(g->slot_const[sl]) == 1 && ((const int64_t *)lithe__tdata(g->slot_const[sl]))[0];
            return false;
        }
        if (!strcmp(p->op_type, "Constant")) {
            const lithe__onnx_attr *a = lithe__onnx_attr_get(p, "value");
            return a && a->t && a->t->numel == 1 && !a->t->is_float && ((const int64_t *)a->t->data)[0] != 0;
        }
        if (strcmp(p->op_type, "Identity") || p->n_inputs != 1) return false;
        name = p->inputs[0];
    }
    return false;
}

/* A body without nested control flow (its copies are renamed; a nested subgraph's references
 * would not be). */
static lithe_status flat_body(const lithe__onnx_node *n, size_t i, const lithe__onnx_model *b) {
    for (size_t j = 0; j < b->n_nodes; j++)
        for (size_t k = 0; k < b->nodes[j].n_attrs; k++)
            if (b->nodes[j].attrs[k].graph)
                return refuse(n, i, LITHE_ERR_UNSUPPORTED, "its body has a %s node with a subgraph; lithe unrolls "
                              "bodies without nested control flow", b->nodes[j].op_type);
    return LITHE_OK;
}

static lithe_status plan_loop(const lithe__graph *g, size_t i, lithe__gctl *c) {
    const lithe__onnx_node *n = &g->onnx.nodes[i];
    int64_t M = 0, cond = 1;
    if (n->n_inputs < 2 || !*n->inputs[0])
        return refuse(n, i, LITHE_ERR_UNSUPPORTED, "no trip count M (a while loop): lithe unrolls loops whose trip count "
                      "is known at load");
    if (!const_scalar(g, i, 0, &M))
        return refuse(n, i, LITHE_ERR_UNSUPPORTED, "its trip count '%s' is computed at run time; lithe unrolls loops whose "
                      "trip count is known at load (a constant)", n->inputs[0]);
    if (*n->inputs[1] && !const_scalar(g, i, 1, &cond))
        return refuse(n, i, LITHE_ERR_UNSUPPORTED, "its condition '%s' is computed at run time", n->inputs[1]);
    if (M < 0 || M > LITHE__GRAPH_MAX_UNROLL)
        return refuse(n, i, LITHE_ERR_UNSUPPORTED, "trip count %lld is outside 0 .. %d (what lithe unrolls)", (long long)M,
                      LITHE__GRAPH_MAX_UNROLL);
    const lithe__onnx_attr *body = graph_attr(n, "body");
    if (!body) return refuse(n, i, LITHE_ERR_FORMAT, "no body graph");
    lithe__onnx_model b;
    LITHE__TRY(lithe__onnx_parse_graph(body->graph, body->graph_len, &b));
    lithe_status s = flat_body(n, i, &b);
    size_t K = n->n_inputs - 2;
    if (s == LITHE_OK && (b.n_inputs != K + 2 || b.n_outputs < K + 1 || n->n_outputs > b.n_outputs - 1))
        s = refuse(n, i, LITHE_ERR_FORMAT, "its body takes %zu inputs and gives %zu outputs for %zu carried values and %zu "
                   "outputs", b.n_inputs, b.n_outputs, K, n->n_outputs);
    if (s == LITHE_OK && cond && M > 0 && !body_keeps_going(g, &b))
        s = refuse(n, i, LITHE_ERR_UNSUPPORTED, "its body computes its condition '%s' (a while loop); lithe unrolls loops "
                   "whose body keeps the condition true", b.outputs[0].name);
    if (s == LITHE_OK && M * (int64_t)(b.n_nodes + b.n_outputs + 2) > LITHE__GRAPH_MAX_UNROLLED_NODES)
        s = refuse(n, i, LITHE_ERR_UNSUPPORTED, "unrolled, its %zu-node body %lld times would exceed %d nodes", b.n_nodes,
                   (long long)M, LITHE__GRAPH_MAX_UNROLLED_NODES);
    if (s == LITHE_OK && (cond == 0 || M == 0) && n->n_outputs > K)
        s = refuse(n, i, LITHE_ERR_UNSUPPORTED, "zero iterations with scan outputs (empty tensors) are not supported");
    lithe__onnx_model_free(&b);
    c->count = cond ? M : 0;
    return s;
}

/* The length (axis 0) of value `name` if known at load: a constant's, or a graph input's declared
 * fixed extent; -1 otherwise. */
static int64_t known_length(const lithe__graph *g, size_t i, size_t k) {
    int64_t sl = g->node_in[i][k];
    if (sl < 0) return -1;
    if (g->slot_kind[sl] == SLOT_CONST && g->slot_const[sl] && g->slot_const[sl]->ndim >= 1) return g->slot_const[sl]->shape[0];
    if (g->slot_kind[sl] == SLOT_PARAM || g->slot_kind[sl] == SLOT_CONST) {
        for (size_t j = 0; j < g->onnx.n_inits; j++)
            if (!strcmp(g->onnx.inits[j].name, g->slot_name[sl])) return g->onnx.inits[j].ndim >= 1 ? g->onnx.inits[j].dims[0] : -1;
    }
    if (g->slot_kind[sl] == SLOT_INPUT)
        for (size_t j = 0; j < g->onnx.n_inputs; j++)
            if (!strcmp(g->onnx.inputs[j].name, g->slot_name[sl]))
                return g->onnx.inputs[j].ndim >= 1 && g->onnx.inputs[j].dims[0] > 0 ? g->onnx.inputs[j].dims[0] : -1;
    return -1;
}

static lithe_status plan_scan(const lithe__graph *g, size_t i, lithe__gctl *c) {
    const lithe__onnx_node *n = &g->onnx.nodes[i];
    const lithe__onnx_attr *ns = lithe__onnx_attr_get(n, "num_scan_inputs");
    if (!ns || ns->i < 1 || (size_t)ns->i > n->n_inputs)
        return refuse(n, i, LITHE_ERR_FORMAT, "num_scan_inputs is missing or outside 1 .. %zu", n->n_inputs);
    if (g->onnx.opset < 9) return refuse(n, i, LITHE_ERR_UNSUPPORTED, "Scan before opset 9 (with sequence_lens) is not supported");
    static const char *const axes[] = {"scan_input_axes", "scan_output_axes"};
    for (size_t a = 0; a < 2; a++) {
        const lithe__onnx_attr *at = lithe__onnx_attr_get(n, axes[a]);
        for (size_t k = 0; at && k < at->n_ints; k++)
            if (at->ints[k] != 0)
                return refuse(n, i, LITHE_ERR_UNSUPPORTED, "%s[%zu] = %lld; lithe scans along axis 0", axes[a], k,
                              (long long)at->ints[k]);
    }
    size_t K = n->n_inputs - (size_t)ns->i;
    int64_t T = -1;
    for (size_t k = K; k < n->n_inputs; k++) {
        int64_t t = known_length(g, i, k);
        if (t < 0)
            return refuse(n, i, LITHE_ERR_UNSUPPORTED, "the length of its scan input '%s' is not known at load (lithe unrolls "
                          "scans over constants or inputs declared with a fixed first extent)", n->inputs[k]);
        if (T >= 0 && t != T)
            return refuse(n, i, LITHE_ERR_SHAPE, "its scan inputs have lengths %lld and %lld", (long long)T, (long long)t);
        T = t;
    }
    if (T < 1 || T > LITHE__GRAPH_MAX_UNROLL)
        return refuse(n, i, LITHE_ERR_UNSUPPORTED, "scan length %lld is outside 1 .. %d (what lithe unrolls)", (long long)T,
                      LITHE__GRAPH_MAX_UNROLL);
    const lithe__onnx_attr *body = graph_attr(n, "body");
    if (!body) return refuse(n, i, LITHE_ERR_FORMAT, "no body graph");
    lithe__onnx_model b;
    LITHE__TRY(lithe__onnx_parse_graph(body->graph, body->graph_len, &b));
    lithe_status s = flat_body(n, i, &b);
    if (s == LITHE_OK && T * (int64_t)(b.n_nodes + b.n_outputs + b.n_inputs + 2) > LITHE__GRAPH_MAX_UNROLLED_NODES)
        s = refuse(n, i, LITHE_ERR_UNSUPPORTED, "unrolled, its %zu-node body %lld times would exceed %d nodes", b.n_nodes,
                   (long long)T, LITHE__GRAPH_MAX_UNROLLED_NODES);
    if (s == LITHE_OK && (b.n_inputs != n->n_inputs || b.n_outputs != n->n_outputs))
        s = refuse(n, i, LITHE_ERR_FORMAT, "its body takes %zu inputs and gives %zu outputs for the node's %zu and %zu",
                   b.n_inputs, b.n_outputs, n->n_inputs, n->n_outputs);
    lithe__onnx_model_free(&b);
    c->count = T;
    return s;
}

lithe_status lithe__graph_control_plan(const lithe__graph *g, size_t i, lithe__gctl *c) {
    const lithe__onnx_node *n = &g->onnx.nodes[i];
    memset(c, 0, sizeof *c);
    c->node = i;
    if (!strcmp(n->op_type, "Loop")) return plan_loop(g, i, c);
    if (!strcmp(n->op_type, "Scan")) return plan_scan(g, i, c);
    int64_t v = 0;
    if (n->n_inputs < 1 || !const_scalar(g, i, 0, &v))
        return refuse(n, i, LITHE_ERR_UNSUPPORTED, "its condition '%s' is not known at load (computed from the graph's "
                      "inputs); lithe runs If when its condition folds to a constant", n->n_inputs ? n->inputs[0] : "");
    c->then_branch = v != 0;
    const char *br = c->then_branch ? "then_branch" : "else_branch";
    if (!graph_attr(n, br)) return refuse(n, i, LITHE_ERR_FORMAT, "no %s graph", br);
    return LITHE_OK;
}

/* ---- rewriting the model ---- */

/* New nodes and initializers, spliced in on success, freed on failure. */
typedef struct built {
    lithe__onnx_node *nodes;
    size_t n, cap;
    lithe__onnx_tensor *inits;
    size_t ni, capi;
} built;

static lithe_status grow_to(void **p, size_t *cap, size_t need, size_t size) {
    if (need <= *cap) return LITHE_OK;
    size_t nc = *cap ? *cap * 2 : 16;
    while (nc < need) nc *= 2;
    void *q = lithe__realloc(*p, nc * size);
    if (!q) return lithe__oom(LAYER, nc * size);
    *p = q;
    *cap = nc;
    return LITHE_OK;
}

/* memcpy of n items; nothing when n is 0 (either pointer may then be NULL). */
static void copy_items(void *dst, const void *src, size_t n, size_t size) {
    if (n) memcpy(dst, src, n * size);
}

static void built_free(built *b) {
    for (size_t k = 0; k < b->n; k++) lithe__onnx_node_free(&b->nodes[k]);
    for (size_t k = 0; k < b->ni; k++) lithe__onnx_tensor_free(&b->inits[k]);
    lithe__free(b->nodes);
    lithe__free(b->inits);
    memset(b, 0, sizeof *b);
}

static char *cat3(const char *a, const char *b, const char *c) {
    size_t la = strlen(a), lb = strlen(b), lc = strlen(c);
    char *s = lithe__malloc(la + lb + lc + 1);
    if (!s) return NULL;
    memcpy(s, a, la);
    memcpy(s + la, b, lb);
    memcpy(s + la + lb, c, lc + 1);
    return s;
}

/* A node op(in...) -> out... named name; *made points at it (valid until the next one). */
static lithe_status add_node(built *b, const char *op, const char *name, const char *const *in, size_t nin,
                             const char *const *out, size_t nout, lithe__onnx_node **made) {
    LITHE__TRY(grow_to((void **)&b->nodes, &b->cap, b->n + 1, sizeof *b->nodes));
    lithe__onnx_node *nd = &b->nodes[b->n++];
    memset(nd, 0, sizeof *nd);
    nd->op_type = lithe__strdup(op);
    nd->name = lithe__strdup(name);
    nd->inputs = lithe__calloc(nin + 1, sizeof *nd->inputs);
    nd->outputs = lithe__calloc(nout + 1, sizeof *nd->outputs);
    if (!nd->op_type || !nd->name || !nd->inputs || !nd->outputs) return lithe__oom(LAYER, 64);
    for (size_t k = 0; k < nin; k++, nd->n_inputs++)
        if (!(nd->inputs[k] = lithe__strdup(in[k]))) return lithe__oom(LAYER, strlen(in[k]));
    for (size_t k = 0; k < nout; k++, nd->n_outputs++)
        if (!(nd->outputs[k] = lithe__strdup(out[k]))) return lithe__oom(LAYER, strlen(out[k]));
    if (made) *made = nd;
    return LITHE_OK;
}

/* An INT / INTS attribute on a node add_node made. */
static lithe_status add_attr(lithe__onnx_node *nd, const char *name, const int64_t *v, size_t n, bool list) {
    lithe__onnx_attr *a = lithe__realloc(nd->attrs, (nd->n_attrs + 1) * sizeof *a);
    if (!a) return lithe__oom(LAYER, sizeof *a);
    nd->attrs = a;
    a = &nd->attrs[nd->n_attrs++];
    memset(a, 0, sizeof *a);
    if (!(a->name = lithe__strdup(name))) return lithe__oom(LAYER, strlen(name));
    a->type = list ? LITHE__ONNX_ATTR_INTS : LITHE__ONNX_ATTR_INT;
    if (!list) {
        a->i = v[0];
        return LITHE_OK;
    }
    if (!(a->ints = lithe__malloc(n * sizeof *a->ints))) return lithe__oom(LAYER, n * 8);
    memcpy(a->ints, v, n * sizeof *a->ints);
    a->n_ints = n;
    return LITHE_OK;
}

/* An int64 initializer: a scalar (ndim 0) or a 1-element vector (ndim 1) holding v. */
static lithe_status add_int(built *b, const char *name, int ndim, int64_t v) {
    LITHE__TRY(grow_to((void **)&b->inits, &b->capi, b->ni + 1, sizeof *b->inits));
    lithe__onnx_tensor *t = &b->inits[b->ni++];
    memset(t, 0, sizeof *t);
    t->name = lithe__strdup(name);
    t->data = lithe__malloc(sizeof(int64_t));
    if (!t->name || !t->data) return lithe__oom(LAYER, 64);
    t->data_type = LITHE__ONNX_INT64;
    t->ndim = ndim;
    t->dims[0] = 1;
    t->numel = 1;
    *(int64_t *)t->data = v;
    t->ext_offset = t->ext_length = -1;
    return LITHE_OK;
}

/* Replaces *s by its mapping: a body input's replacement (sub_from[k] -> sub_to[k]), or prefix + s
 * for a name the body defines (in `defined`); else kept (an outer value). */
typedef struct renamer {
    const char *prefix;
    const lithe__names *defined;
    const lithe__onnx_model *body;
    const char *const *sub_to; /* per body input */
} renamer;
static lithe_status rename_one(const renamer *r, char **s) {
    if (!**s) return LITHE_OK;
    const char *to = NULL;
    for (size_t k = 0; k < r->body->n_inputs && !to; k++)
        if (!strcmp(*s, r->body->inputs[k].name)) to = r->sub_to[k];
    char *n = NULL;
    size_t dummy;
    if (to) n = lithe__strdup(to);
    else if (lithe__names_get(r->defined, *s, &dummy)) n = cat3(r->prefix, *s, "");
    else return LITHE_OK;
    if (!n) return lithe__oom(LAYER, strlen(*s));
    lithe__free(*s);
    *s = n;
    return LITHE_OK;
}

/* One copy of a body (freshly parsed: its nodes and initializers are moved into b), renamed; its
 * outputs' names after renaming in outs[] (lithe__free each). */
static lithe_status emit_body(built *b, const lithe__onnx_attr *body, const char *prefix, const char *const *sub_to,
                              char **outs, size_t n_outs) {
    lithe__onnx_model m;
    LITHE__TRY(lithe__onnx_parse_graph(body->graph, body->graph_len, &m));
    /* the names the body defines, indexed by copies (the index keeps its keys' pointers, and the
     * originals are renamed below) */
    lithe__names defined = {0};
    size_t n_keys = m.n_inits;
    for (size_t j = 0; j < m.n_nodes; j++) n_keys += m.nodes[j].n_outputs;
    char **keys = lithe__calloc(n_keys + 1, sizeof *keys);
    lithe_status s = keys ? LITHE_OK : lithe__oom(LAYER, n_keys * 8);
    size_t nk = 0;
    for (size_t j = 0; s == LITHE_OK && j < m.n_nodes + m.n_inits; j++) {
        size_t cnt = j < m.n_nodes ? m.nodes[j].n_outputs : 1;
        for (size_t k = 0; s == LITHE_OK && k < cnt; k++) {
            const char *name = j < m.n_nodes ? m.nodes[j].outputs[k] : m.inits[j - m.n_nodes].name;
            if (!*name) continue;
            if (!(keys[nk] = lithe__strdup(name))) s = lithe__oom(LAYER, strlen(name));
            else s = lithe__names_put(&defined, keys[nk++], 0);
        }
    }
    renamer r = {prefix, &defined, &m, sub_to};
    for (size_t j = 0; s == LITHE_OK && j < m.n_nodes; j++)
        for (size_t k = 0; s == LITHE_OK && k < m.nodes[j].n_inputs; k++) s = rename_one(&r, &m.nodes[j].inputs[k]);
    for (size_t k = 0; s == LITHE_OK && k < n_outs && k < m.n_outputs; k++) {
        outs[k] = lithe__strdup(m.outputs[k].name);
        if (!outs[k]) s = lithe__oom(LAYER, 64);
        else s = rename_one(&r, &outs[k]);
    }
    for (size_t j = 0; s == LITHE_OK && j < m.n_nodes; j++) {
        lithe__onnx_node *nd = &m.nodes[j];
        for (size_t k = 0; s == LITHE_OK && k < nd->n_outputs; k++) s = rename_one(&r, &nd->outputs[k]);
        if (s == LITHE_OK && nd->name) {
            char *nn = cat3(prefix, nd->name, "");
            if (!nn) s = lithe__oom(LAYER, strlen(nd->name));
            else {
                lithe__free(nd->name);
                nd->name = nn;
            }
        }
    }
    for (size_t j = 0; s == LITHE_OK && j < m.n_inits; j++) s = rename_one(&r, &m.inits[j].name);
    /* move the nodes and initializers */
    if (s == LITHE_OK) s = grow_to((void **)&b->nodes, &b->cap, b->n + m.n_nodes, sizeof *b->nodes);
    if (s == LITHE_OK) s = grow_to((void **)&b->inits, &b->capi, b->ni + m.n_inits, sizeof *b->inits);
    if (s == LITHE_OK) {
        copy_items(b->nodes + b->n, m.nodes, m.n_nodes, sizeof *m.nodes);
        b->n += m.n_nodes;
        copy_items(b->inits + b->ni, m.inits, m.n_inits, sizeof *m.inits);
        b->ni += m.n_inits;
        m.n_nodes = m.n_inits = 0;
    }
    lithe__names_free(&defined);
    for (size_t k = 0; k < nk; k++) lithe__free(keys[k]);
    lithe__free(keys);
    lithe__onnx_model_free(&m);
    return s;
}

/* out = Concat over the iterations of Unsqueeze(part[k], axis 0), in order (or reversed). */
static lithe_status stack(built *b, int64_t opset, const char *prefix, char **parts, int64_t count, bool reverse,
                          const char *out) {
    char **names = lithe__calloc((size_t)count + 1, sizeof *names);
    if (!names) return lithe__oom(LAYER, (size_t)count * 8);
    char *axes = cat3(prefix, out, "/axes0");
    lithe_status s = axes ? LITHE_OK : lithe__oom(LAYER, 64);
    if (s == LITHE_OK && opset >= 13) s = add_int(b, axes, 1, 0);
    for (int64_t k = 0; s == LITHE_OK && k < count; k++) {
        char num[32];
        snprintf(num, sizeof num, "/unsq%lld", (long long)k);
        names[k] = cat3(prefix, out, num);
        if (!names[k]) {
            s = lithe__oom(LAYER, 64);
            break;
        }
        lithe__onnx_node *nd = NULL;
        const char *src = parts[reverse ? count - 1 - k : k];
        if (opset >= 13) s = add_node(b, "Unsqueeze", names[k], (const char *[]){src, axes}, 2, (const char *[]){names[k]}, 1, &nd);
        else s = add_node(b, "Unsqueeze", names[k], (const char *[]){src}, 1, (const char *[]){names[k]}, 1, &nd);
        if (s == LITHE_OK && opset < 13) s = add_attr(nd, "axes", (int64_t[]){0}, 1, true);
    }
    /* Concat along axis 0, at most 64 inputs a node (the executor's limit): groups first */
    int64_t n = count, level = 0;
    while (s == LITHE_OK) {
        int64_t groups = (n + 63) / 64;
        for (int64_t gi = 0; s == LITHE_OK && gi < groups; gi++) {
            int64_t lo = gi * 64, cnt = n - lo < 64 ? n - lo : 64;
            char num[48];
            snprintf(num, sizeof num, "/cat%lld_%lld", (long long)level, (long long)gi);
            char *gname = groups == 1 ? lithe__strdup(out) : cat3(prefix, out, num);
            lithe__onnx_node *cn = NULL;
            s = gname ? add_node(b, "Concat", gname, (const char *const *)names + lo, (size_t)cnt, (const char *[]){gname}, 1, &cn)
                      : lithe__oom(LAYER, 64);
            if (s == LITHE_OK) s = add_attr(cn, "axis", (int64_t[]){0}, 1, false);
            for (int64_t k = lo; k < lo + cnt; k++) {
                lithe__free(names[k]);
                names[k] = NULL;
            }
            names[gi] = gname;
        }
        if (groups == 1) break;
        n = groups;
        level++;
    }
    for (int64_t k = 0; k < count; k++) lithe__free(names[k]);
    lithe__free(names);
    lithe__free(axes);
    return s;
}

static lithe_status apply_if(const lithe__onnx_model *o, const lithe__gctl *c, built *b) {
    const lithe__onnx_node *n = &o->nodes[c->node];
    const lithe__onnx_attr *br = graph_attr(n, c->then_branch ? "then_branch" : "else_branch");
    lithe__onnx_model m;
    LITHE__TRY(lithe__onnx_parse_graph(br->graph, br->graph_len, &m));
    lithe_status s = LITHE_OK;
    if (m.n_outputs != n->n_outputs)
        s = refuse(n, c->node, LITHE_ERR_FORMAT, "its %s gives %zu outputs for the node's %zu",
                   c->then_branch ? "then_branch" : "else_branch", m.n_outputs, n->n_outputs);
    /* the branch as it is (SSA names), then its outputs under the If's names */
    if (s == LITHE_OK) s = grow_to((void **)&b->nodes, &b->cap, m.n_nodes + m.n_outputs, sizeof *b->nodes);
    if (s == LITHE_OK) s = grow_to((void **)&b->inits, &b->capi, m.n_inits, sizeof *b->inits);
    if (s == LITHE_OK) {
        copy_items(b->nodes, m.nodes, m.n_nodes, sizeof *m.nodes);
        b->n = m.n_nodes;
        copy_items(b->inits, m.inits, m.n_inits, sizeof *m.inits);
        b->ni = m.n_inits;
        m.n_nodes = m.n_inits = 0;
    }
    for (size_t k = 0; s == LITHE_OK && k < n->n_outputs; k++) {
        if (!*n->outputs[k]) continue;
        s = add_node(b, "Identity", n->outputs[k], (const char *[]){m.outputs[k].name}, 1, (const char *[]){n->outputs[k]}, 1, NULL);
    }
    lithe__onnx_model_free(&m);
    return s;
}

/* Loop (scan = false) or Scan unrolled c->count times. */
static lithe_status apply_unroll(const lithe__onnx_model *o, const lithe__gctl *c, bool scan, built *b) {
    const lithe__onnx_node *n = &o->nodes[c->node];
    const lithe__onnx_attr *body = graph_attr(n, "body");
    const lithe__onnx_attr *nsa = lithe__onnx_attr_get(n, "num_scan_inputs");
    size_t nsi = scan ? (size_t)nsa->i : 0;
    size_t K = scan ? n->n_inputs - nsi : n->n_inputs - 2; /* carried values */
    size_t first = scan ? 0 : 2;                            /* where they start in the node's inputs */
    size_t n_body_in = scan ? n->n_inputs : K + 2, n_body_out = scan ? n->n_outputs : K + 1 + (n->n_outputs - K);
    size_t S = n->n_outputs - K; /* scan outputs */
    int64_t T = c->count;
    const char *base = n->name && *n->name ? n->name : n->outputs[0];
    char **carried = lithe__calloc(K + 1, sizeof *carried), **outs = lithe__calloc(n_body_out + 1, sizeof *outs);
    char **parts = lithe__calloc(S * (size_t)T + 1, sizeof *parts), **guard = lithe__calloc(nsi + 1, sizeof *guard);
    const char **sub = lithe__calloc(n_body_in + 1, sizeof *sub);
    char *pfx = NULL;
    lithe_status s = carried && outs && parts && guard && sub ? LITHE_OK : lithe__oom(LAYER, 64);
    for (size_t k = 0; s == LITHE_OK && k < K; k++)
        if (!(carried[k] = lithe__strdup(n->inputs[first + k]))) s = lithe__oom(LAYER, 64);
    /* Scan: each scan input through a Split of one part of length T (refused at run time when its
     * length differs: the unrolled Gathers would read a prefix), then Gather k per iteration */
    const lithe__onnx_attr *dirs = scan ? lithe__onnx_attr_get(n, "scan_input_directions") : NULL;
    const lithe__onnx_attr *odirs = scan ? lithe__onnx_attr_get(n, "scan_output_directions") : NULL;
    for (size_t j = 0; s == LITHE_OK && j < nsi; j++) {
        char num[48];
        snprintf(num, sizeof num, "/length_check%zu", j);
        guard[j] = cat3(base, num, "");
        lithe__onnx_node *nd = NULL;
        s = guard[j] ? add_node(b, "Split", guard[j], (const char *[]){n->inputs[K + j]}, 1, (const char *[]){guard[j]}, 1, &nd)
                     : lithe__oom(LAYER, 64);
        if (s == LITHE_OK) s = add_attr(nd, "split", (int64_t[]){T}, 1, true);
        if (s == LITHE_OK) s = add_attr(nd, "axis", (int64_t[]){0}, 1, false);
    }
    char **tmp = NULL;
    for (int64_t it = 0; s == LITHE_OK && it < T; it++) {
        char num[48];
        snprintf(num, sizeof num, "/%lld/", (long long)it);
        lithe__free(pfx);
        if (!(pfx = cat3(base, num, ""))) {
            s = lithe__oom(LAYER, 64);
            break;
        }
        tmp = lithe__calloc(nsi + 3, sizeof *tmp); /* the iteration's own input names */
        if (!tmp) {
            s = lithe__oom(LAYER, 64);
            break;
        }
        if (!scan) { /* iteration_num, cond */
            tmp[0] = cat3(pfx, "iteration_num", "");
            tmp[1] = cat3(pfx, "cond", "");
            if (!tmp[0] || !tmp[1]) s = lithe__oom(LAYER, 64);
            if (s == LITHE_OK) s = add_int(b, tmp[0], 0, it);
            if (s == LITHE_OK) s = add_int(b, tmp[1], 0, 1);
            sub[0] = tmp[0];
            sub[1] = tmp[1];
        }
        for (size_t k = 0; k < K; k++) sub[first + k] = carried[k];
        for (size_t j = 0; s == LITHE_OK && j < nsi; j++) { /* slice it (or T - 1 - it) of scan input j */
            bool rev = dirs && j < dirs->n_ints && dirs->ints[j];
            char *idx = cat3(pfx, "index", ""), *sl = NULL;
            snprintf(num, sizeof num, "slice%zu", j);
            sl = cat3(pfx, num, "");
            if (!idx || !sl) s = lithe__oom(LAYER, 64);
            if (s == LITHE_OK && j == 0) s = add_int(b, idx, 0, rev ? T - 1 - it : it);
            char *ridx = NULL;
            if (s == LITHE_OK && rev != (dirs && dirs->n_ints && dirs->ints[0])) { /* another direction than input 0's */
                ridx = cat3(pfx, num, "/index");
                s = ridx ? add_int(b, ridx, 0, rev ? T - 1 - it : it) : lithe__oom(LAYER, 64);
            }
            if (s == LITHE_OK)
                s = add_node(b, "Gather", sl, (const char *[]){guard[j], ridx ? ridx : idx}, 2, (const char *[]){sl}, 1, NULL);
            tmp[2 + j] = sl;
            sub[K + j] = sl;
            lithe__free(idx);
            lithe__free(ridx);
        }
        if (s == LITHE_OK) s = emit_body(b, body, pfx, sub, outs, n_body_out);
        size_t o0 = scan ? 0 : 1; /* the body's carried outputs start here (Loop: after cond) */
        for (size_t k = 0; s == LITHE_OK && k < K; k++) {
            lithe__free(carried[k]);
            carried[k] = outs[o0 + k];
            outs[o0 + k] = NULL;
        }
        for (size_t k = 0; s == LITHE_OK && k < S; k++) {
            parts[k * (size_t)T + (size_t)it] = outs[o0 + K + k];
            outs[o0 + K + k] = NULL;
        }
        for (size_t k = 0; k < n_body_out; k++) {
            lithe__free(outs[k]);
            outs[k] = NULL;
        }
        for (size_t k = 0; k < nsi + 3; k++) lithe__free(tmp[k]);
        lithe__free(tmp);
        tmp = NULL;
    }
    /* the node's outputs: the final carried values, the stacked scan outputs */
    for (size_t k = 0; s == LITHE_OK && k < K; k++)
        if (*n->outputs[k])
            s = add_node(b, "Identity", n->outputs[k], (const char *[]){carried[k]}, 1, (const char *[]){n->outputs[k]}, 1, NULL);
    for (size_t k = 0; s == LITHE_OK && k < S; k++) {
        if (!*n->outputs[K + k]) continue;
        bool rev = odirs && k < odirs->n_ints && odirs->ints[k];
        s = stack(b, o->opset, base, parts + k * (size_t)T, T, rev, n->outputs[K + k]);
    }
    for (size_t k = 0; carried && k < K; k++) lithe__free(carried[k]);
    for (size_t k = 0; parts && k < S * (size_t)T; k++) lithe__free(parts[k]);
    for (size_t k = 0; guard && k < nsi; k++) lithe__free(guard[k]);
    if (tmp) {
        for (size_t k = 0; k < nsi + 3; k++) lithe__free(tmp[k]);
        lithe__free(tmp);
    }
    for (size_t k = 0; outs && k < n_body_out; k++) lithe__free(outs[k]);
    lithe__free(carried);
    lithe__free(outs);
    lithe__free(parts);
    lithe__free(guard);
    lithe__free(sub);
    lithe__free(pfx);
    return s;
}

lithe_status lithe__graph_control_apply(lithe__onnx_model *o, const lithe__gctl *c) {
    const lithe__onnx_node *n = &o->nodes[c->node];
    built b = {0};
    lithe_status s = !strcmp(n->op_type, "If") ? apply_if(o, c, &b) : apply_unroll(o, c, !strcmp(n->op_type, "Scan"), &b);
    if (s == LITHE_OK && (o->n_nodes + b.n >= LITHE__ONNX_MAX_ITEMS || o->n_inits + b.ni >= LITHE__ONNX_MAX_ITEMS))
        s = lithe__fail(LITHE_ERR_UNSUPPORTED, "%s: %s node '%s' (#%zu): expanded, the graph would have more than %u nodes",
                        LAYER, n->op_type, n->name ? n->name : "", c->node, LITHE__ONNX_MAX_ITEMS);
    /* splice: nodes [0, node) + the expansion + (node, n); the initializers appended */
    lithe__onnx_node *nodes = NULL;
    lithe__onnx_tensor *inits = NULL;
    if (s == LITHE_OK && !(nodes = lithe__calloc(o->n_nodes + b.n + 1, sizeof *nodes))) s = lithe__oom(LAYER, b.n * 64);
    if (s == LITHE_OK && !(inits = lithe__realloc(o->inits, (o->n_inits + b.ni + 1) * sizeof *inits))) s = lithe__oom(LAYER, b.ni * 64);
    if (s != LITHE_OK) {
        lithe__free(nodes);
        built_free(&b);
        return s;
    }
    o->inits = inits;
    copy_items(o->inits + o->n_inits, b.inits, b.ni, sizeof *b.inits);
    o->n_inits += b.ni;
    copy_items(nodes, o->nodes, c->node, sizeof *nodes);
    copy_items(nodes + c->node, b.nodes, b.n, sizeof *nodes);
    copy_items(nodes + c->node + b.n, o->nodes + c->node + 1, o->n_nodes - c->node - 1, sizeof *nodes);
    lithe__onnx_node_free(&o->nodes[c->node]);
    lithe__free(o->nodes);
    o->nodes = nodes;
    o->n_nodes += b.n - 1;
    lithe__free(b.nodes);
    lithe__free(b.inits);
    return LITHE_OK;
}
