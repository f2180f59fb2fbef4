/* The primitives of core/primitives.def the WebGPU backend does not implement yet, one line each:
 *   #define LITHE_LACKS_wg_<name> LITHE__LACKS
 * Their table entries are NULL, so lithe__op_<name> on the WebGPU backend answers
 * LITHE_ERR_UNSUPPORTED ("backend 'webgpu' lacks primitive '<name>'"): never a silent wrong answer.
 * Removing a line without writing wg_<name> fails the build (docs/backends.md). */
#ifndef LITHE_WG_UNSUPPORTED_H
#define LITHE_WG_UNSUPPORTED_H


#endif
