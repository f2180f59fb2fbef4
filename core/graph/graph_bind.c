/* Binding an ONNX graph's names to value slots: initializers become params or constants, each
 * node's inputs and outputs slot indices; constant subgraphs are folded and control-flow nodes
 * expanded (control.c) as binding reaches them. */
#include "graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LAYER "onnx_graph"

/* Everything g holds but its parsed model. */
void lithe__graph_unbind(lithe__graph *g) {
    if (g->profile && g->prof_n) lithe__graph_prof_print(g);
    lithe__free(g->prof_sum);
    lithe__free(g->prof_min);
    lithe__free(g->prof_n);
    for (size_t i = 0; i < LITHE__GRAPH_PLANS; i++) lithe__gplan_unref(g->plans[i]);
    lithe__free(g->last_use);
    for (size_t i = 0; i < g->onnx.n_nodes; i++) {
        if (g->node_in) lithe__free(g->node_in[i]);
        if (g->node_out) lithe__free(g->node_out[i]);
    }
    for (size_t i = 0; g->slot_const && i < g->n_slots; i++) lithe_tensor_release(g->slot_const[i]);
    lithe__free(g->node_in);
    lithe__free(g->node_out);
    lithe__free(g->node_op);
    lithe__free(g->node_nin);
    lithe__free(g->node_nout);
    lithe__free(g->node_dead);
    lithe__free(g->node_fuse);
    lithe__free(g->node_win);
    lithe__free(g->slot_param);
    lithe__free(g->slot_pname);
    lithe__free(g->slot_name);
    lithe__free(g->slot_kind);
    lithe__free(g->slot_const);
    lithe__free(g->in_slots);
    lithe__free(g->out_slots);
}
void lithe__graph_free(lithe__graph *g) {
    if (!g) return;
    lithe__graph_unbind(g);
    lithe__onnx_model_free(&g->onnx);
    lithe__free(g);
}

/* ---- binding names to slots ---- */

/* A new slot named name of kind, indexed by name (the latest definition wins: names are unique in
 * a valid graph). */
static lithe_status add_slot(lithe__graph *g, lithe__names *index, const char *name, int kind) {
    g->slot_name[g->n_slots] = name;
    g->slot_kind[g->n_slots] = kind;
    return lithe__names_put(index, name, g->n_slots++);
}
/* The slot named name among the first n, or -1. */
static int64_t find_slot(const lithe__names *index, size_t n, const char *name) {
    size_t k;
    return lithe__names_get(index, name, &k) && k < n ? (int64_t)k : -1;
}

const char *lithe__gnode_str(const lithe__gexec *x, size_t node, char *buf, size_t cap) {
    const lithe__onnx_node *n = &x->g->onnx.nodes[node];
    const lithe__gfuse *f = x->g->node_fuse ? &x->g->node_fuse[node] : NULL;
    if (f && f->kind != LITHE__FUSE_NONE) {
        const lithe__onnx_node *a = &x->g->onnx.nodes[f->first];
        snprintf(buf, cap, "%s: %s fused from %s node '%s' (#%zu) to %s node '%s' (#%zu)", LAYER, x->g->node_op[node]->op_type,
                 a->op_type, a->name ? a->name : "", f->first, n->op_type, n->name ? n->name : "", node);
        return buf;
    }
    snprintf(buf, cap, "%s: %s node '%s' (#%zu)", LAYER, n->op_type, n->name ? n->name : "", node);
    return buf;
}

/* A float32 or int64 tensor on the cpu backend holding an ONNX tensor's values. */
lithe_status lithe__graph_const_tensor(const lithe__onnx_tensor *t, lithe_tensor **out) {
    if (t->ext_location)
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "%s: tensor '%s' keeps its data in the external file '%s': load the "
                                                  "model from its file (lithe_onnx_load or lithe_model_load), which "
                                                  "reads the data from the model's folder",
                           LAYER, t->name ? t->name : "", t->ext_location);
    LITHE__TRY(lithe__tensor_alloc(lithe__backend_host(), t->is_float ? LITHE_F32 : LITHE_I64, t->ndim, t->dims, false,
                                   out));
    if (t->numel) memcpy(lithe__tdata(*out), t->data, (size_t)t->numel * (t->is_float ? 4 : 8));
    return LITHE_OK;
}

/* Whether a float initializer is a weight (a param that trains) rather than a constant: the
 * exporter's own scalars (torch.onnx names what it creates "onnx::<Op>_<n>") are constants; its
 * larger tensors are weights it rewrote (a Conv fused with the BatchNorm after it, a transposed
 * Linear weight under constant folding), and training them trains the model. */
static bool trainable(const lithe__onnx_tensor *t) {
    return t->is_float && !(t->numel <= 1 && !strncmp(t->name, "onnx::", 6));
}

/* Runs a node whose inputs are all constants once, at load (Constant, and the shape arithmetic
 * the exporters emit around it), and turns its outputs into constants. */
static lithe_status fold(lithe__graph *g, size_t i, bool *folded) {
    *folded = false;
    const lithe__onnx_node *n = &g->onnx.nodes[i];
    for (size_t k = 0; k < n->n_inputs; k++) {
        int64_t s = g->node_in[i][k];
        if (s >= 0 && g->slot_kind[s] != SLOT_CONST) return LITHE_OK;
    }
    if (!strcmp(n->op_type, "Dropout") && n->n_outputs > 1) return LITHE_OK;
    lithe__gexec x = {0};
    x.g = g;
    x.be = lithe__backend_host();
    lithe_tensor *in[16] = {0}, *out[16] = {0}, *saved[2] = {0};
    if (n->n_inputs > 16 || n->n_outputs > 16) return LITHE_OK;
    for (size_t k = 0; k < n->n_inputs; k++)
        in[k] = g->node_in[i][k] >= 0 ? g->slot_const[g->node_in[i][k]] : NULL;
    lithe_status s = g->node_op[i]->forward(&x, i, in, n->n_inputs, out, n->n_outputs, saved);
    lithe_tensor_release(saved[0]);
    lithe_tensor_release(saved[1]);
    for (size_t k = n->n_outputs; k < 16; k++) lithe_tensor_release(out[k]); /* a node naming fewer outputs */
    if (s != LITHE_OK) {
        for (size_t k = 0; k < n->n_outputs; k++) lithe_tensor_release(out[k]);
        return s;
    }
    for (size_t k = 0; k < n->n_outputs; k++) {
        int64_t o = g->node_out[i][k];
        if (o < 0) {
            lithe_tensor_release(out[k]);
            continue;
        }
        g->slot_kind[o] = SLOT_CONST;
        g->slot_const[o] = out[k];
    }
    *folded = true;
    return LITHE_OK;
}

/* Binds g's parsed model: slots, ops, constants folded, fusion, liveness. At a control-flow node
 * (If, Loop, Scan) whose condition / trip count is known by then, it stops with *again set and
 * *ctl saying how to expand it (control.c); graph_build expands and binds afresh. */
static lithe_status graph_bind(lithe__graph *g, lithe__gctl *ctl, bool *again) {
    lithe_status s = LITHE_OK;
    lithe__onnx_model *o = &g->onnx;
    if (s == LITHE_OK && o->opset && (o->opset < 7 || o->opset > 18))
        s = lithe__fail(LITHE_ERR_UNSUPPORTED, "%s: the model imports opset %lld; lithe runs opsets 7 to 18 (tested: "
                                               "11 to 17)", LAYER, (long long)o->opset);
    if (s == LITHE_OK && !o->opset) o->opset = 13;
    /* every op must be known before anything runs: list all the missing ones at once */
    if (s == LITHE_OK) {
        char missing[1024] = "";
        size_t nmiss = 0;
        for (size_t i = 0; i < o->n_nodes; i++) {
            const lithe__onnx_node *n = &o->nodes[i];
            bool custom = n->domain && *n->domain && strcmp(n->domain, "ai.onnx");
            if (!custom && lithe__graph_op_find(n->op_type)) continue;
            bool seen = false; /* each type once: was an earlier node the same unknown op? */
            for (size_t j = 0; j < i && !seen; j++) {
                const lithe__onnx_node *e = &o->nodes[j];
                bool ec = e->domain && *e->domain && strcmp(e->domain, "ai.onnx");
                seen = ec == custom && !strcmp(e->op_type, n->op_type) && (!custom || !strcmp(e->domain, n->domain));
            }
            if (seen) continue;
            char item[160];
            snprintf(item, sizeof item, "%s%s%s", custom ? n->domain : "", custom ? "." : "",
                     *n->op_type ? n->op_type : "(empty op_type)");
            size_t l = strlen(missing);
            snprintf(missing + l, sizeof missing - l, "%s%s", nmiss ? ", " : "", item);
            nmiss++;
        }
        if (nmiss)
            s = lithe__fail(LITHE_ERR_UNSUPPORTED, "%s: the model uses %zu operator type%s lithe lacks: %s", LAYER, nmiss,
                            nmiss == 1 ? "" : "s", missing);
    }
    size_t cap = 0;
    if (s == LITHE_OK) {
        cap = o->n_inits + o->n_inputs;
        for (size_t i = 0; i < o->n_nodes; i++) cap += o->nodes[i].n_outputs; /* each <= 2^22, so no overflow */
        g->slot_name = lithe__calloc(cap + 1, sizeof *g->slot_name);
        g->slot_kind = lithe__calloc(cap + 1, sizeof *g->slot_kind);
        g->slot_const = lithe__calloc(cap + 1, sizeof *g->slot_const);
        g->in_slots = lithe__calloc(o->n_inputs + 1, sizeof *g->in_slots);
        g->out_slots = lithe__calloc(o->n_outputs + 1, sizeof *g->out_slots);
        g->node_in = lithe__calloc(o->n_nodes + 1, sizeof *g->node_in);
        g->node_out = lithe__calloc(o->n_nodes + 1, sizeof *g->node_out);
        g->node_op = lithe__calloc(o->n_nodes + 1, sizeof *g->node_op);
        g->node_nin = lithe__calloc(o->n_nodes + 1, sizeof *g->node_nin);
        g->node_nout = lithe__calloc(o->n_nodes + 1, sizeof *g->node_nout);
        g->node_dead = lithe__calloc(o->n_nodes + 1, sizeof *g->node_dead);
        g->node_fuse = lithe__calloc(o->n_nodes + 1, sizeof *g->node_fuse);
        g->node_win = lithe__calloc(o->n_nodes + 1, sizeof *g->node_win);
        g->slot_param = lithe__calloc(cap + 1, sizeof *g->slot_param);
        g->slot_pname = lithe__calloc(cap + 1, sizeof *g->slot_pname);
        if (!g->slot_name || !g->slot_kind || !g->slot_const || !g->in_slots || !g->out_slots || !g->node_in ||
            !g->node_out || !g->node_op || !g->node_nin || !g->node_nout || !g->node_dead || !g->node_fuse ||
            !g->node_win || !g->slot_param || !g->slot_pname)
            s = lithe__oom(LAYER, cap * 24);
    }
    /* the slots by name while they are bound (a scan per node input was quadratic: an imported
     * model can have thousands of initializers) */
    lithe__names index = {0};
    bool quant = lithe__graph_quant_const(o, NULL); /* issue 24: quantized operators' scales are constants */
    for (size_t i = 0; s == LITHE_OK && i < o->n_inits; i++) {
        const lithe__onnx_tensor *t = &o->inits[i];
        bool param = trainable(t) && !(quant && lithe__graph_quant_const(o, t->name));
        if (!param) s = lithe__graph_const_tensor(t, &g->slot_const[g->n_slots]);
        if (s == LITHE_OK) s = add_slot(g, &index, t->name, param ? SLOT_PARAM : SLOT_CONST);
    }
    for (size_t i = 0; s == LITHE_OK && i < o->n_inputs; i++) {
        if (find_slot(&index, o->n_inits, o->inputs[i].name) >= 0) continue; /* an initializer listed as input (IR < 4) */
        if (o->inputs[i].elem_type != LITHE__ONNX_FLOAT && o->inputs[i].elem_type != LITHE__ONNX_INT64 &&
            o->inputs[i].elem_type != LITHE__ONNX_INT32) {
            s = lithe__fail(LITHE_ERR_UNSUPPORTED, "%s: graph input '%s' has element type %d; lithe takes float, int32 "
                                                   "and int64 inputs", LAYER, o->inputs[i].name,
                            (int)o->inputs[i].elem_type);
            break;
        }
        g->in_slots[g->n_in++] = g->n_slots;
        s = add_slot(g, &index, o->inputs[i].name, SLOT_INPUT);
    }
    if (s == LITHE_OK && g->n_in == 0) s = lithe__fail(LITHE_ERR_UNSUPPORTED, "%s: the graph has no input", LAYER);
    for (size_t i = 0; s == LITHE_OK && i < o->n_nodes; i++) {
        const lithe__onnx_node *n = &o->nodes[i];
        g->node_op[i] = lithe__graph_op_find(n->op_type);
        if (!g->node_op[i]) { /* the check above lists every unknown op; this only guards it */
            s = lithe__fail(LITHE_ERR_UNSUPPORTED, "%s: node #%zu has operator '%s', which lithe lacks", LAYER, i,
                            n->op_type);
            break;
        }
        s = lithe__graph_check_node(o, i); /* attributes against their weights (check.c) */
        if (s != LITHE_OK) break;
        g->node_nin[i] = n->n_inputs;
        g->node_nout[i] = n->n_outputs;
        g->node_in[i] = lithe__calloc(n->n_inputs + 1, sizeof **g->node_in);
        g->node_out[i] = lithe__calloc(n->n_outputs + 1, sizeof **g->node_out);
        if (!g->node_in[i] || !g->node_out[i]) {
            s = lithe__oom(LAYER, (n->n_inputs + n->n_outputs) * 8);
            break;
        }
        for (size_t k = 0; s == LITHE_OK && k < n->n_inputs; k++) {
            g->node_in[i][k] = *n->inputs[k] ? find_slot(&index, g->n_slots, n->inputs[k]) : -1;
            if (*n->inputs[k] && g->node_in[i][k] < 0)
                s = lithe__fail(LITHE_ERR_FORMAT, "%s: %s node '%s' (#%zu) reads '%s', which no earlier node, input or "
                                                  "initializer defines (ONNX graphs are topologically sorted)",
                                LAYER, n->op_type, n->name ? n->name : "", i, n->inputs[k]);
        }
        if (s == LITHE_OK && lithe__graph_is_control(n->op_type)) { /* issue 23 item 7: expanded, bound afresh */
            s = lithe__graph_control_plan(g, i, ctl);
            *again = s == LITHE_OK;
            lithe__names_free(&index);
            return s;
        }
        for (size_t k = 0; s == LITHE_OK && k < n->n_outputs; k++) {
            if (!*n->outputs[k]) {
                g->node_out[i][k] = -1;
                continue;
            }
            g->node_out[i][k] = (int64_t)g->n_slots;
            s = add_slot(g, &index, n->outputs[k], SLOT_COMPUTED);
        }
        bool folded;
        if (s == LITHE_OK) s = fold(g, i, &folded);
        if (s != LITHE_OK) {
            char why[512];
            snprintf(why, sizeof why, "%s", lithe_last_error());
            s = lithe__fail(s, "%s (while folding constants at load)", why);
        }
    }
    for (size_t i = 0; s == LITHE_OK && i < o->n_outputs; i++) {
        int64_t k = find_slot(&index, g->n_slots, o->outputs[i].name);
        if (k < 0) s = lithe__fail(LITHE_ERR_FORMAT, "%s: graph output '%s' is never computed", LAYER, o->outputs[i].name);
        else g->out_slots[g->n_out++] = (size_t)k;
    }
    lithe__names_free(&index);
    if (s == LITHE_OK && g->n_out == 0) s = lithe__fail(LITHE_ERR_FORMAT, "%s: the graph has no output", LAYER);
    /* fusion (fuse.c): what the exporters decompose (LayerNorm, Linear + bias + activation, Conv +
     * Relu / Clip) as one node */
    if (s == LITHE_OK) s = lithe__graph_fuse(g);
    /* liveness: a run that keeps nothing for backward drops each value after its last reader */
    if (s == LITHE_OK && !(g->last_use = lithe__calloc(g->n_slots + 1, sizeof *g->last_use)))
        s = lithe__oom(LAYER, g->n_slots * 8);
    for (size_t i = 0; s == LITHE_OK && i < o->n_nodes; i++) {
        if (g->node_dead[i]) continue;
        for (size_t k = 0; k < g->node_nout[i]; k++)
            if (g->node_out[i][k] >= 0) g->last_use[g->node_out[i][k]] = (int64_t)i;
        for (size_t k = 0; k < g->node_nin[i]; k++)
            if (g->node_in[i][k] >= 0) g->last_use[g->node_in[i][k]] = (int64_t)i;
    }
    for (size_t i = 0; s == LITHE_OK && i < g->n_out; i++) g->last_use[g->out_slots[i]] = -1;
    const char *prof = lithe__knob(LITHE__KNOB_graph_profile);
    if (s == LITHE_OK && prof && *prof && strcmp(prof, "0")) {
        /* 2 rows per node: its forward at i, its backward at n_nodes + i */
        g->prof_sum = lithe__calloc(2 * o->n_nodes + 1, sizeof *g->prof_sum);
        g->prof_min = lithe__calloc(2 * o->n_nodes + 1, sizeof *g->prof_min);
        g->prof_n = lithe__calloc(2 * o->n_nodes + 1, sizeof *g->prof_n);
        g->profile = g->prof_sum && g->prof_min && g->prof_n; /* no memory: no profile, the model still runs */
    }
    return s;
}

lithe_status lithe__graph_build(const uint8_t *bytes, size_t len, lithe__graph **out) {
    *out = NULL;
    lithe__graph *g = lithe__calloc(1, sizeof *g);
    if (!g) return lithe__oom(LAYER, sizeof *g);
    lithe_status s = lithe__onnx_parse(bytes, len, &g->onnx);
    /* each control-flow node is expanded into the model's node list once its condition or trip
     * count is known (control.c), then the whole list is bound again */
    for (size_t round = 0; s == LITHE_OK; round++) {
        lithe__gctl ctl = {0};
        bool again = false;
        s = graph_bind(g, &ctl, &again);
        if (s != LITHE_OK || !again) break;
        if (round >= LITHE__GRAPH_MAX_EXPANSIONS) {
            s = lithe__fail(LITHE_ERR_UNSUPPORTED, "%s: more than %d control-flow nodes to expand", LAYER,
                            LITHE__GRAPH_MAX_EXPANSIONS);
            break;
        }
        lithe__graph_unbind(g); /* the model stays; the old binding goes */
        lithe__onnx_model keep = g->onnx;
        memset(g, 0, sizeof *g);
        g->onnx = keep;
        s = lithe__graph_control_apply(&g->onnx, &ctl);
    }
    if (s != LITHE_OK) {
        lithe__graph_free(g);
        return s;
    }
    *out = g;
    return LITHE_OK;
}

