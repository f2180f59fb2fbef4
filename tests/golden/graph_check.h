/* Checks the graph-importer tests (test_onnx.c, test_tfjs.c, test_xnnpack.c) share: the loss
 * sum(Y * R), central differences of it against lithe's gradients, and the white-box tests' way
 * into a parsed graph's attributes. Include after <cmocka.h>, "lithe.h" and "golden.h". */
#ifndef LITHE_TEST_GRAPH_CHECK_H
#define LITHE_TEST_GRAPH_CHECK_H

#include <stddef.h>
#include <stdint.h>

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
struct lithe__onnx_attr;
struct lithe__onnx_attr *graph_weight_attr(lithe_model *m, const char *op_type, const char *weight, const char *attr,
                                           size_t n);

#endif
