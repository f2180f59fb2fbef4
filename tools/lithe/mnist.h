/* IDX files (the MNIST family's format), gzip-compressed or plain. */
#ifndef LITHE_TOOL_MNIST_H
#define LITHE_TOOL_MNIST_H
#include <stddef.h>
#include <stdint.h>

typedef struct idx_data {
    uint8_t *data;   /* n * rows * cols bytes (images) or n bytes (labels) */
    int64_t n, rows, cols;
} idx_data;

/* Reads `path`, or `path` + ".gz" when `path` is missing. Returns 0 on success; on failure
 * writes a message into err and returns -1. The expected magic is 0x00000803 (images) or
 * 0x00000801 (labels). */
int idx_read(const char *path, uint32_t magic, idx_data *out, char *err, size_t errcap);
void idx_free(idx_data *d);
/* Keeps only the examples whose label is below n_classes (in order, in place): train-mnist
 * --classes trains a model that has never seen the other classes. */
void idx_keep_classes(idx_data *img, idx_data *lab, int n_classes);

/* lithe train-mnist (train_mnist.c): argv[0] is "train-mnist"; returns the exit status. */
int lithe_cmd_train_mnist(int argc, char **argv);
#endif
