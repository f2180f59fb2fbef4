/* Thinc's CategoricalCrossentropy with its figures read back once (issue 27; loss_device.c). */
#ifndef LITHE_TRAIN_LOSS_DEVICE_H
#define LITHE_TRAIN_LOSS_DEVICE_H

#include "../internal.h"

/* The checks of int labels T (B,) for C classes on their host values `labels` (NULL only when T's
 * shape is wrong: that is reported first) and of opts' label smoothing (loss.c). */
lithe_status lithe__cce_check_labels(const lithe_cce_opts *opts, const lithe_tensor *T, const void *labels, int64_t B,
                                     int64_t C);

/* lithe_categorical_crossentropy over int labels T (on G's backend) and lithe_cross_entropy in
 * one: the labels are checked from host_labels (T's values, which the caller has in host memory
 * before uploading them), and on a backend with the optional cce_stats op the guesses' range
 * check, Thinc's loss (*thinc_loss, sum of D's squares) and the cross-entropy (*ce) are computed on
 * the device and read back together: one read-back. Other backends take the two functions' path.
 * Checks and messages are theirs; *d_out, thinc_loss and ce may each be NULL. */
lithe_status lithe__cce_labels_once(const lithe_cce_opts *opts, const lithe_tensor *G, const lithe_tensor *T,
                                    const void *host_labels, lithe_tensor **d_out, float *thinc_loss, double *ce);

#endif
