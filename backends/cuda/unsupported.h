/* The primitives of core/primitives.def the CUDA backend does not implement, one line each:
 *   #define LITHE_LACKS_cu_<name> LITHE__LACKS
 * Their table entries are NULL, so lithe__op_<name> on a CUDA backend answers
 * LITHE_ERR_UNSUPPORTED ("backend 'cuda:0' lacks primitive '<name>'"); any other primitive without
 * a cu_<name> fails the module's link (docs/backends.md). gemm_q8 (int8 weights: compact
 * weights load on the CPU only, lithe_model_compress_weights). */
#ifndef LITHE_CUDA_UNSUPPORTED_H
#define LITHE_CUDA_UNSUPPORTED_H

#define LITHE_LACKS_cu_gemm_q8 LITHE__LACKS
#endif
