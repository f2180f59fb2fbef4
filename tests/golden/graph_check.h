/* Checks the graph-importer tests (test_onnx*.c, test_finetune.c, test_tfjs.c, test_xnnpack.c)
 * share: loading a golden's .onnx bytes, the loss sum(Y * R), parity of output and gradients with
 * the goldens, SGD steps against torch's, central differences against lithe's gradients, and the
 * white-box tests' way into a parsed graph's attributes. Include after <cmocka.h>, "lithe.h" and
 * "golden.h". */
#ifndef LITHE_TEST_GRAPH_CHECK_H
#define LITHE_TEST_GRAPH_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The model in the golden "<name>.onnx" (its bytes), loaded; fails the test if it does not load. */
lithe_model *graph_load_golden(const char *name);

/* max |t[i] - g[i]| (infinite where t and g differ in size or an entry is NaN). */
double graph_max_abs_diff(const lithe_tensor *t, const golden *g);

/* How graph_parity judges and prints: entries within atol + rtol |golden|; with grads, dX against
 * "<name>.dx" (where there is one, if dx_optional) and every param with a "<name>.grad.<param>"
 * (BatchNorm statistics and weights torch fused under new names have none), which must be
 * "<name>.n_params" of them. Prints "<test>: <name, width wide> output max |lithe - torch| ..."
 * (float64 in place of torch without grads). */
typedef struct parity_opts {
    const char *test;
    int width;
    double atol, rtol;
    bool grads, dx_optional;
} parity_opts;

/* The golden model name's output from begin_update and from predict (inference: no argmax kept,
 * prepared weights) against "<name>.y" on "<name>.x"; then backprop of "<name>.r" and, with
 * o->grads, the gradients. */
void graph_parity(const char *name, const parity_opts *o);

/* steps SGD steps of m (lithe's optimizer at "<key>.lr": plain SGD, no clipping, no L2, as
 * torch.optim.SGD) on "<key>.x" with loss sum(Y * R), R = "<key>.r": before each step the loss
 * must be within tol + tol |torch| of "<key>.losses"[step]. A step off (every step, if print_all)
 * is printed as "<test>: <label> step <i>: loss <lithe>, torch <torch>". Returns the worst
 * |loss - torch|. */
double graph_sgd_steps(lithe_model *m, const char *key, int steps, double tol, const char *test, const char *label,
                       bool print_all);

/* How graph_sgd_check judges and prints: steps (0: "<name>.steps"), the losses' tol (see
 * graph_sgd_steps), each param with a "<name>.sgd.<param>" within atol + rtol |torch| after the
 * steps; with count_params there must be "<name>.n_params" of them and the count is printed; with
 * loss_figure the worst loss difference is printed. */
typedef struct sgd_opts {
    const char *test;
    int width, steps;
    double loss_tol, atol, rtol;
    bool count_params, loss_figure;
} sgd_opts;

/* The golden model name, SGD steps (graph_sgd_steps) and then its params against torch's. */
void graph_sgd_check(const char *name, const sgd_opts *o);

/* loss = sum(Y * R) of m's prediction on X, computed in double. */
double loss_of(lithe_model *m, lithe_value *X, const lithe_tensor *R);

/* How fd_check samples and judges: every x_stride-th input entry, numel / w_parts + 1 apart in
 * each weight with a gradient; an estimate is off when |fd - grad| > atol + rtol |fd|, printed
 * as "<test>: <name> d<what>[i]: finite difference %.<digits>f, backprop %.<digits>f". */
typedef struct fd_opts {
    const char *test;
    double h, atol, rtol;
    int64_t x_stride, w_parts;
    int digits;
} fd_opts;

/* One begin_update of m on the golden "<name>.x" and backprop of "<name>.r", then central
 * differences of sum(Y * R) (loss_of, entries perturbed in place and restored) against the
 * gradient w.r.t. X and m's weight gradients; adds to *checked and *bad. */
void fd_check(lithe_model *m, const char *name, const fd_opts *o, int *checked, int *bad);

/* The attribute attr, with at least n ints, of the op_type node of m's parsed graph (an imported
 * graph node) whose weight (input 1) is the initializer named weight; fails the test if none.
 * White-box tests edit it to give the node attributes an exporter would not write. */
/* fd_check of the golden model name, printed as "<test>: <name, width wide> <n> finite-difference
 * checks, <n> off"; at least one check, and at most checked / bad_per off (none if bad_per is 0: a
 * ReLU / MaxPool / Clip kink inside the +-h step may move an estimate). */
void graph_fd_model(const char *name, const fd_opts *o, int width, int bad_per);

struct lithe__onnx_attr;
struct lithe__onnx_attr *graph_weight_attr(lithe_model *m, const char *op_type, const char *weight, const char *attr,
                                           size_t n);

#endif
