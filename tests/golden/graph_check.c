/* Shared checks of the graph-importer tests: see graph_check.h. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "lithe.h"
#include "golden.h"
#include "graph_check.h"
#include "internal.h"
#include "graph/graph.h" /* graph_weight_attr: the parsed graph */

double loss_of(lithe_model *m, lithe_value *X, const lithe_tensor *R) {
    lithe_value *Y = NULL;
    OK(lithe_model_predict(m, X, &Y));
    const float *y = lithe_tensor_data(lithe_value_get_tensor(Y)), *r = lithe_tensor_data(R);
    double s = 0;
    for (int64_t i = 0; i < lithe_tensor_numel(R); i++) s += (double)y[i] * r[i];
    lithe_value_release(Y);
    return s;
}

/* One entry: the central difference at p[i] against the gradient g. */
static void fd_one(lithe_model *m, lithe_value *X, const lithe_tensor *R, float *p, int64_t i, double g,
                   const char *name, const char *what, const fd_opts *o, int *checked, int *bad) {
    float keep = p[i];
    p[i] = keep + (float)o->h;
    double up = loss_of(m, X, R);
    p[i] = keep - (float)o->h;
    double down = loss_of(m, X, R);
    p[i] = keep;
    double fd = (up - down) / (2 * o->h);
    (*checked)++;
    if (fabs(fd - g) > o->atol + o->rtol * fabs(fd)) {
        (*bad)++;
        printf("%s: %s d%s[%lld]: finite difference %.*f, backprop %.*f\n", o->test, name, what, (long long)i, o->digits,
               fd, o->digits, g);
    }
}

void fd_check(lithe_model *m, const char *name, const fd_opts *o, int *checked, int *bad) {
    lithe_value *X = value_of(get("%s.x", name)), *Y = NULL, *dX = NULL, *R = value_of(get("%s.r", name));
    lithe_backprop *bp = NULL;
    OK(lithe_model_begin_update(m, X, &Y, &bp));
    OK(lithe_backprop_run(bp, R, &dX));
    const lithe_tensor *Rt = lithe_value_get_tensor(R);
    lithe_tensor *Xt = lithe_value_get_tensor(X);
    /* the input */
    float *x = lithe_tensor_data(Xt);
    const float *dx = lithe_tensor_data(lithe_value_get_tensor(dX));
    for (int64_t i = 0; i < lithe_tensor_numel(Xt); i += o->x_stride)
        fd_one(m, X, Rt, x, i, dx[i], name, "X", o, checked, bad);
    /* the weights */
    for (size_t p = 0; p < lithe_model_n_params(m); p++) {
        const char *pn = lithe_model_param_name(m, p);
        if (!lithe_model_has_grad(m, pn)) continue;
        lithe_tensor *W = NULL, *G = NULL;
        OK(lithe_model_get_param(m, pn, &W));
        OK(lithe_model_get_grad(m, pn, &G));
        float *w = lithe_tensor_data(W);
        const float *gw = lithe_tensor_data(G);
        int64_t step = lithe_tensor_numel(W) / o->w_parts + 1;
        for (int64_t i = 0; i < lithe_tensor_numel(W); i += step) fd_one(m, X, Rt, w, i, gw[i], name, pn, o, checked, bad);
    }
    lithe_value_release(X);
    lithe_value_release(Y);
    lithe_value_release(dX);
    lithe_value_release(R);
    lithe_backprop_free(bp);
}

struct lithe__onnx_attr *graph_weight_attr(lithe_model *m, const char *op_type, const char *weight, const char *attr,
                                           size_t n) {
    assert_int_equal(m->n_shims, 1);
    lithe__graph *g = m->shims[0]->state;
    for (size_t i = 0; i < g->onnx.n_nodes; i++) {
        lithe__onnx_node *nd = &g->onnx.nodes[i];
        if (strcmp(nd->op_type, op_type) || nd->n_inputs < 2 || strcmp(nd->inputs[1], weight)) continue;
        for (size_t j = 0; j < nd->n_attrs; j++)
            if (!strcmp(nd->attrs[j].name, attr) && nd->attrs[j].n_ints >= n) return &nd->attrs[j];
    }
    fail_msg("no %s node with weight '%s' and %zu ints of '%s'", op_type, weight, n, attr);
    return NULL;
}
