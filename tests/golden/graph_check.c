/* Shared checks of the graph-importer tests: see graph_check.h. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lithe.h"
#include "golden.h"
#include "graph_check.h"
#include "internal.h"
#include "graph/graph.h" /* graph_weight_attr: the parsed graph */

lithe_model *graph_load_golden(const char *name) {
    const golden *g = get("%s.onnx", name);
    uint8_t *b = bytes_of(g);
    lithe_model *m = NULL;
    OK(lithe_onnx_load_bytes(b, (size_t)g->n, &m));
    free(b);
    return m;
}

double graph_max_abs_diff(const lithe_tensor *t, const golden *g) {
    const float *p = lithe_tensor_data(t);
    double worst = lithe_tensor_numel(t) == g->n ? 0 : INFINITY;
    for (int64_t i = 0; i < g->n && i < lithe_tensor_numel(t); i++) {
        double d = fabs((double)p[i] - g->v[i]);
        if (d > worst || d != d) worst = d != d ? INFINITY : d;
    }
    return worst;
}

/* expect_close of t against g under "<name> <what>"; returns graph_max_abs_diff. */
static double close_to(const char *name, const char *what, const lithe_tensor *t, const golden *g, double atol,
                       double rtol) {
    char msg[200];
    snprintf(msg, sizeof msg, "%s %s", name, what);
    expect_close(msg, t, g, atol, rtol);
    return graph_max_abs_diff(t, g);
}

/* dX and every param's gradient against the goldens; returns the worst difference, counts the params. */
static double parity_grads(lithe_model *m, const char *name, const lithe_value *dX, const parity_opts *o,
                           size_t *n_torch) {
    double worst = 0;
    if (!o->dx_optional || find("%s.dx", name))
        worst = close_to(name, "dX", lithe_value_get_tensor(dX), get("%s.dx", name), o->atol, o->rtol);
    for (size_t p = 0; p < lithe_model_n_params(m); p++) {
        const char *pn = lithe_model_param_name(m, p);
        const golden *g = find("%s.grad.%s", name, pn);
        if (!g) continue; /* BatchNorm statistics (frozen), weights torch fused under new names */
        (*n_torch)++;
        lithe_tensor *G = NULL;
        OK(lithe_model_get_grad(m, pn, &G));
        char what[160];
        snprintf(what, sizeof what, "grad %s", pn);
        worst = fmax(worst, close_to(name, what, G, g, o->atol, o->rtol));
    }
    assert_int_equal(*n_torch, (size_t)get("%s.n_params", name)->v[0]); /* none folded away */
    return worst;
}

void graph_parity(const char *name, const parity_opts *o) {
    lithe_model *m = graph_load_golden(name);
    lithe_value *X = value_of(get("%s.x", name)), *Y = NULL, *dX = NULL, *R = value_of(get("%s.r", name)), *P = NULL;
    const golden *y = get("%s.y", name);
    lithe_backprop *bp = NULL;
    OK(lithe_model_begin_update(m, X, &Y, &bp));
    assert_int_equal(lithe_tensor_numel(lithe_value_get_tensor(Y)), y->n);
    double worst_y = close_to(name, "output", lithe_value_get_tensor(Y), y, o->atol, o->rtol);
    OK(lithe_model_predict(m, X, &P));
    close_to(name, "predict output", lithe_value_get_tensor(P), y, o->atol, o->rtol);
    OK(lithe_backprop_run(bp, R, &dX));
    double worst_g = 0;
    size_t n_torch = 0;
    if (o->grads) worst_g = parity_grads(m, name, dX, o, &n_torch);
    printf("%s: %-*s output max |lithe - %s| %.2e", o->test, o->width, name, o->grads ? "torch" : "float64", worst_y);
    if (o->grads) printf(", gradients (input and %zu params) %.2e", n_torch, worst_g);
    printf("\n");
    lithe_value_release(X);
    lithe_value_release(Y);
    lithe_value_release(P);
    lithe_value_release(dX);
    lithe_value_release(R);
    lithe_backprop_free(bp);
    lithe_model_free(m);
}

double graph_sgd_steps(lithe_model *m, const char *key, int steps, double tol, const char *test, const char *label,
                       bool print_all) {
    lithe_value *X = value_of(get("%s.x", key)), *R = value_of(get("%s.r", key));
    lithe_optimizer_opts oo = lithe_sgd_defaults(get("%s.lr", key)->v[0]);
    oo.grad_clip = 0.0; /* torch.optim.SGD: no clipping, no L2 */
    oo.L2 = 0.0;
    lithe_optimizer *opt = NULL;
    OK(lithe_optimizer_new(&oo, &opt));
    const golden *losses = get("%s.losses", key);
    const lithe_tensor *Rt = lithe_value_get_tensor(R);
    double worst = 0;
    for (int step = 0; step < steps; step++) {
        lithe_value *Y = NULL;
        lithe_backprop *bp = NULL;
        OK(lithe_model_begin_update(m, X, &Y, &bp));
        const float *y = lithe_tensor_data(lithe_value_get_tensor(Y)), *r = lithe_tensor_data(Rt);
        double loss = 0;
        for (int64_t i = 0; i < lithe_tensor_numel(Rt); i++) loss += (double)y[i] * r[i];
        double d = fabs(loss - losses->v[step]);
        if (d > worst) worst = d;
        bool ok = d <= tol + tol * fabs(losses->v[step]);
        if (print_all || !ok) printf("%s: %s step %d: loss %.7f, torch %.7f\n", test, label, step, loss, losses->v[step]);
        assert_true(ok);
        OK(lithe_backprop_run(bp, R, NULL));
        OK(lithe_model_finish_update(m, opt));
        lithe_backprop_free(bp);
        lithe_value_release(Y);
    }
    lithe_optimizer_free(opt);
    lithe_value_release(X);
    lithe_value_release(R);
    return worst;
}

void graph_sgd_check(const char *name, const sgd_opts *o) {
    lithe_model *m = graph_load_golden(name);
    int steps = o->steps ? o->steps : (int)get("%s.steps", name)->v[0];
    double worst_loss = graph_sgd_steps(m, name, steps, o->loss_tol, o->test, name, false);
    double worst = 0;
    size_t n = 0;
    for (size_t p = 0; p < lithe_model_n_params(m); p++) {
        const char *pn = lithe_model_param_name(m, p);
        const golden *g = find("%s.sgd.%s", name, pn);
        if (!g) continue;
        n++;
        lithe_tensor *W = NULL;
        OK(lithe_model_get_param(m, pn, &W));
        char what[160];
        snprintf(what, sizeof what, "after %d SGD steps: %s", steps, pn);
        worst = fmax(worst, close_to(name, what, W, g, o->atol, o->rtol));
    }
    if (o->count_params) assert_int_equal(n, (size_t)get("%s.n_params", name)->v[0]);
    printf("%s: %-*s %d SGD steps: ", o->test, o->width, name, steps);
    if (o->loss_figure) printf("losses within %.2e, ", worst_loss);
    if (o->count_params) printf("%zu ", n);
    printf("params within %.2e of torch\n", worst);
    lithe_model_free(m);
}

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

void graph_fd_model(const char *name, const fd_opts *o, int width, int bad_per) {
    lithe_model *m = graph_load_golden(name);
    int checked = 0, bad = 0;
    fd_check(m, name, o, &checked, &bad);
    printf("%s: %-*s %d finite-difference checks, %d off\n", o->test, width, name, checked, bad);
    assert_true(checked > 0);
    assert_true(bad <= (bad_per ? checked / bad_per : 0));
    lithe_model_free(m);
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
