/* What the graph fuzz targets (fuzz_onnx.c, fuzz_tfjs.c) share: the allocator that refuses more
 * than 16 MiB at once (a graph may ask for huge constants: they exercise the OOM paths rather than
 * libFuzzer's memory limit), an input tensor shaped as the graph declares, forward and backward
 * with ones, and the .lithe round trip. */
#ifndef LITHE_FUZZ_GRAPH_HARNESS_H
#define LITHE_FUZZ_GRAPH_HARNESS_H

#include "graph/graph.h"

/* Installs the capped allocator (once; call first in LLVMFuzzerTestOneInput). */
void fuzz_graph_setup(void);
/* A new tensor of dtype (LITHE_F32: (i % 7) - 3; LITHE_I64: zeros) shaped by vi's dims (rank 2 when
 * vi is NULL or unranked; unknown extents and extents above 16 are 2), or NULL when it would hold
 * more than max_numel entries or is refused. */
lithe_tensor *fuzz_graph_tensor(const lithe__onnx_value_info *vi, lithe_dtype dtype, int64_t max_numel);
/* begin_update on X and, when Y is float32, backprop of ones; whether begin_update succeeded. */
bool fuzz_graph_forward_backward(lithe_model *m, lithe_value *X);
/* Saves m as .lithe and loads it back (what saved must load, unless an allocation was refused:
 * abort otherwise), then frees m. */
void fuzz_graph_round_trip(lithe_model *m);

#endif
