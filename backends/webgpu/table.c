/* The WebGPU backend's primitive table, generated from core/primitives.def: every entry is
 * wg_<name>, or NULL for a primitive unsupported.h lists (the dispatcher then answers
 * LITHE_ERR_UNSUPPORTED naming it, never a silent CPU run or a wrong answer). */
#include "webgpu_internal.h"

void lithe__wg_fill_ops(lithe_backend_ops *ops) {
#define LITHE_PRIM(name, params, args) LITHE__PRIM_ASSIGN(*ops, wg_, name)
#include "../../core/primitives.def"
#undef LITHE_PRIM
}
