/* The primitives of core/primitives.def the Vulkan backend does not implement, one line each:
 *   #define LITHE_LACKS_vk_<name> LITHE__LACKS
 * Their table entries are NULL, so lithe__op_<name> on a Vulkan backend answers
 * LITHE_ERR_UNSUPPORTED ("backend 'vulkan' lacks primitive '<name>'") and test_vulkan lists them;
 * any other primitive without a vk_<name> fails the build (docs/backends.md). gemm_q8 (int8 weights: compact
 * weights load on the CPU only, lithe_model_compress_weights). */
#ifndef LITHE_VK_UNSUPPORTED_H
#define LITHE_VK_UNSUPPORTED_H

#define LITHE_LACKS_vk_gemm_q8 LITHE__LACKS
#endif
