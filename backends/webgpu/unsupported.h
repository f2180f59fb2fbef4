/* The primitives of core/primitives.def the WebGPU backend does not implement yet, one line each:
 *   #define LITHE_LACKS_wg_<name> LITHE__LACKS
 * Their table entries are NULL, so lithe__op_<name> on the WebGPU backend answers
 * LITHE_ERR_UNSUPPORTED ("backend 'webgpu' lacks primitive '<name>'"): never a silent wrong answer.
 * Removing a line without writing wg_<name> fails the build (docs/backends.md). */
#ifndef LITHE_WG_UNSUPPORTED_H
#define LITHE_WG_UNSUPPORTED_H

#define LITHE_LACKS_wg_dropout_mask LITHE__LACKS
#define LITHE_LACKS_wg_maxout LITHE__LACKS
#define LITHE_LACKS_wg_maxout_backward LITHE__LACKS
#define LITHE_LACKS_wg_gather_rows LITHE__LACKS
#define LITHE_LACKS_wg_scatter_add_rows LITHE__LACKS
#define LITHE_LACKS_wg_hash_ids LITHE__LACKS
#define LITHE_LACKS_wg_seq2col LITHE__LACKS
#define LITHE_LACKS_wg_seq2col_backward LITHE__LACKS
#define LITHE_LACKS_wg_sparse_linear LITHE__LACKS
#define LITHE_LACKS_wg_sparse_linear_backward LITHE__LACKS
#define LITHE_LACKS_wg_hash_strings LITHE__LACKS
#define LITHE_LACKS_wg_lstm_scan LITHE__LACKS
#define LITHE_LACKS_wg_lstm_scan_backward LITHE__LACKS
#define LITHE_LACKS_wg_para_attention LITHE__LACKS
#define LITHE_LACKS_wg_para_attention_backward LITHE__LACKS
#define LITHE_LACKS_wg_cauchy_similarity LITHE__LACKS
#define LITHE_LACKS_wg_cauchy_similarity_backward LITHE__LACKS
/* the int8 GEMM of compact int8 weights (issue 24): compact weights load on the CPU only */
#define LITHE_LACKS_wg_gemm_q8 LITHE__LACKS

#endif
