/* The Vulkan backend's primitive table, generated from core/primitives.def: every entry is
 * vk_<name>, or NULL for a primitive unsupported.h lists (the dispatcher then answers
 * LITHE_ERR_UNSUPPORTED, never a silent CPU run). A primitive neither written nor listed is an
 * undefined vk_<name> at link. */
#include "ops.h"

void lithe__vk_fill_ops(lithe_backend_ops *ops) {
#define LITHE_PRIM(name, params, args) LITHE__PRIM_ASSIGN(*ops, vk_, name)
#include "../../core/primitives.def"
#undef LITHE_PRIM
}
