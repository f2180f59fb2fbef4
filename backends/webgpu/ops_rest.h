/* What ops_ids.c, ops_seq.c and ops_recur.c share (the WebGPU backend's id, sequence, recurrent
 * and attention primitives). */
#ifndef LITHE_WG_OPS_REST_H
#define LITHE_WG_OPS_REST_H

#include "webgpu_internal.h"

/* A device scratch tensor holding `bytes` bytes of host data (what a shader reads beside tensors). */
lithe_status lithe__wg_upload_scratch(lithe_backend *be, const void *data, size_t bytes, lithe_tensor **out);
/* starts (B + 1 int32, starts[B] = *rows) of the host lengths (B,) int32, uploaded. */
lithe_status lithe__wg_seq_starts(lithe_backend *be, const char *op, const lithe_tensor *lengths, int64_t *rows,
                                  lithe_tensor **out);

#endif
