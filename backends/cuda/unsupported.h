/* The primitives of core/primitives.def the CUDA backend does not implement, one line each:
 *   #define LITHE_LACKS_cu_<name> LITHE__LACKS
 * Their table entries are NULL, so lithe__op_<name> on a CUDA backend answers
 * LITHE_ERR_UNSUPPORTED ("backend 'cuda:0' lacks primitive '<name>'"); any other primitive without
 * a cu_<name> fails the module's link (docs/backends.md). None today. */
#ifndef LITHE_CUDA_UNSUPPORTED_H
#define LITHE_CUDA_UNSUPPORTED_H

#endif
