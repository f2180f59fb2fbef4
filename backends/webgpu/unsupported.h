/* The primitives of core/primitives.def the WebGPU backend does not implement yet, one line each:
 *   #define LITHE_LACKS_wg_<name> LITHE__LACKS
 * Their table entries are NULL, so lithe__op_<name> on the WebGPU backend answers
 * LITHE_ERR_UNSUPPORTED ("backend 'webgpu' lacks primitive '<name>'"): never a silent wrong answer.
 * Removing a line without writing wg_<name> fails the build (docs/backends.md). */
#ifndef LITHE_WG_UNSUPPORTED_H
#define LITHE_WG_UNSUPPORTED_H

#define LITHE_LACKS_wg_cast LITHE__LACKS
#define LITHE_LACKS_wg_layernorm LITHE__LACKS
#define LITHE_LACKS_wg_layernorm_backward LITHE__LACKS
#define LITHE_LACKS_wg_reduce_sum LITHE__LACKS
#define LITHE_LACKS_wg_reduce_sum_backward LITHE__LACKS
#define LITHE_LACKS_wg_reduce_max LITHE__LACKS
#define LITHE_LACKS_wg_reduce_max_backward LITHE__LACKS
#define LITHE_LACKS_wg_bcast_binary LITHE__LACKS
#define LITHE_LACKS_wg_bcast_binary_backward LITHE__LACKS
#define LITHE_LACKS_wg_broadcast_to LITHE__LACKS
#define LITHE_LACKS_wg_reduce_to LITHE__LACKS
#define LITHE_LACKS_wg_unary LITHE__LACKS
#define LITHE_LACKS_wg_unary_backward LITHE__LACKS
#define LITHE_LACKS_wg_log_softmax LITHE__LACKS
#define LITHE_LACKS_wg_log_softmax_backward LITHE__LACKS
#define LITHE_LACKS_wg_conv2d LITHE__LACKS
#define LITHE_LACKS_wg_conv2d_backward LITHE__LACKS
#define LITHE_LACKS_wg_pool2d LITHE__LACKS
#define LITHE_LACKS_wg_pool2d_backward LITHE__LACKS
#define LITHE_LACKS_wg_bcast_where LITHE__LACKS

#endif
