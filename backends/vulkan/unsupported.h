/* The primitives of core/primitives.def the Vulkan backend does not implement, one line each:
 *   #define LITHE_LACKS_vk_<name> LITHE__LACKS
 * Their table entries are NULL, so lithe__op_<name> on a Vulkan backend answers
 * LITHE_ERR_UNSUPPORTED ("backend 'vulkan' lacks primitive '<name>'") and test_vulkan lists them;
 * any other primitive without a vk_<name> fails the build (docs/backends.md). None today. */
#ifndef LITHE_VK_UNSUPPORTED_H
#define LITHE_VK_UNSUPPORTED_H

#endif
