/* The backend registry and the checked dispatchers generated from primitives.def. */
#include "internal.h"

#include <stdio.h>

const char *const lithe__prim_names[] = {
#define LITHE_PRIM(name, params, args) #name,
#include "primitives.def"
#undef LITHE_PRIM
};
const size_t lithe__prim_count = sizeof lithe__prim_names / sizeof lithe__prim_names[0];

bool lithe__backend_has_prim(const lithe_backend *be, size_t i) {
    size_t k = 0;
#define LITHE_PRIM(op, params, args)                                                               \
    if (k++ == i) return be->ops->op != NULL;
#include "primitives.def"
#undef LITHE_PRIM
    return false;
}

#define LITHE_PRIM(op, params, args)                                                               \
    lithe_status lithe__op_##op LITHE__PARAMS params {                                             \
        if (!be->ops->op)                                                                          \
            return lithe__fail(LITHE_ERR_UNSUPPORTED, "backend '%s' lacks primitive '%s'",       \
                               be->name, #op);                                                     \
        return be->ops->op(be, LITHE__UNPACK args);                                                \
    }
#define LITHE__UNPACK(...) __VA_ARGS__
#include "primitives.def"
#undef LITHE_PRIM

/* Backends lithe knows of; those not compiled in answer UNSUPPORTED with the reason. */
static const struct {
    const char *name;
    const char *why_missing;
} known[] = {
    {"vulkan", "the Vulkan backend is not built into this library yet (see the Vulkan backend issue)"},
    {"cuda", "the CUDA backend is not built into this library yet (see the CUDA backend issue)"},
};

lithe_status lithe_backend_get(const char *name, lithe_backend **out) {
    LITHE__CHECK_ARG(out, "lithe_backend_get", "out is NULL");
    *out = NULL;
    LITHE__CHECK_ARG(name, "lithe_backend_get", "name is NULL");
    if (!strcmp(name, "cpu")) {
        *out = lithe__backend_cpu();
        return LITHE_OK;
    }
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (!strcmp(name, known[i].name))
            return lithe__fail(LITHE_ERR_UNSUPPORTED, "backend '%s' is unavailable: %s", name, known[i].why_missing);
    char list[128];
    lithe_backend_list(list, sizeof list);
    return lithe__fail(LITHE_ERR_NOT_FOUND, "no backend named '%s' (available: %s)", name, list);
}

const char *lithe_backend_name(const lithe_backend *backend) { return backend ? backend->name : "(null)"; }

size_t lithe_backend_list(char *buf, size_t cap) {
    const char *s = "cpu";
    size_t n = strlen(s);
    if (buf && cap) snprintf(buf, cap, "%s", s);
    return n;
}
