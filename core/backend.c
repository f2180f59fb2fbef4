/* The backend registry and the checked dispatchers generated from primitives.def. */
#include "internal.h"
#include "../backends/cpu/threadpool.h"
#ifdef LITHE_HAVE_VULKAN
lithe_status lithe__backend_vulkan(const char *name, lithe_backend **out); /* backends/vulkan */
#endif

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

/* Every tensor a primitive may write (a non-const lithe_tensor * parameter) is touched first:
 * its storage's version moves on and prepared forms of its old values go (core/prepare.c), so a
 * weight an optimizer, a copy or a fill writes is never read through a stale prepared form. */
static inline void touch_arg(lithe_tensor *const *t) {
    if (*t) lithe__storage_touch((*t)->storage);
}
static inline void touch_none(const void *p) { (void)p; }
#define LITHE__TOUCH1(a) _Generic((a), lithe_tensor *: touch_arg, default: touch_none)(&(a));
#define LITHE__T1(a) LITHE__TOUCH1(a)
#define LITHE__T2(a, ...) LITHE__TOUCH1(a) LITHE__T1(__VA_ARGS__)
#define LITHE__T3(a, ...) LITHE__TOUCH1(a) LITHE__T2(__VA_ARGS__)
#define LITHE__T4(a, ...) LITHE__TOUCH1(a) LITHE__T3(__VA_ARGS__)
#define LITHE__T5(a, ...) LITHE__TOUCH1(a) LITHE__T4(__VA_ARGS__)
#define LITHE__T6(a, ...) LITHE__TOUCH1(a) LITHE__T5(__VA_ARGS__)
#define LITHE__T7(a, ...) LITHE__TOUCH1(a) LITHE__T6(__VA_ARGS__)
#define LITHE__T8(a, ...) LITHE__TOUCH1(a) LITHE__T7(__VA_ARGS__)
#define LITHE__T9(a, ...) LITHE__TOUCH1(a) LITHE__T8(__VA_ARGS__)
#define LITHE__T10(a, ...) LITHE__TOUCH1(a) LITHE__T9(__VA_ARGS__)
#define LITHE__T11(a, ...) LITHE__TOUCH1(a) LITHE__T10(__VA_ARGS__)
#define LITHE__T12(a, ...) LITHE__TOUCH1(a) LITHE__T11(__VA_ARGS__)
#define LITHE__T13(a, ...) LITHE__TOUCH1(a) LITHE__T12(__VA_ARGS__)
#define LITHE__T14(a, ...) LITHE__TOUCH1(a) LITHE__T13(__VA_ARGS__)
#define LITHE__T15(a, ...) LITHE__TOUCH1(a) LITHE__T14(__VA_ARGS__)
#define LITHE__T16(a, ...) LITHE__TOUCH1(a) LITHE__T15(__VA_ARGS__)
#define LITHE__NARGS(...) LITHE__NARGS_(__VA_ARGS__, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define LITHE__NARGS_(a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, n, ...) n
#define LITHE__CAT(a, b) LITHE__CAT_(a, b)
#define LITHE__CAT_(a, b) a##b
#define LITHE__TOUCH_ALL(...) LITHE__CAT(LITHE__T, LITHE__NARGS(__VA_ARGS__))(__VA_ARGS__)

#define LITHE_PRIM(op, params, args)                                                               \
    lithe_status lithe__op_##op LITHE__PARAMS params {                                             \
        if (!be->ops->op)                                                                          \
            return lithe__fail(LITHE_ERR_UNSUPPORTED, "backend '%s' lacks primitive '%s'",       \
                               be->name, #op);                                                     \
        LITHE__TOUCH_ALL args                                                                      \
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
    {"vulkan", "this library was built without the Vulkan backend (LITHE_VULKAN=OFF, or no vulkan/vulkan.h "
               "and glslc at build time)"},
    {"cuda", "this library was built without the CUDA backend (LITHE_CUDA=OFF, or no nvcc at build time)"},
};

lithe_status lithe_backend_get(const char *name, lithe_backend **out) {
    LITHE__CHECK_ARG(out, "lithe_backend_get", "out is NULL");
    *out = NULL;
    LITHE__CHECK_ARG(name, "lithe_backend_get", "name is NULL");
    if (!strcmp(name, "cpu")) {
        *out = lithe__backend_cpu();
        return LITHE_OK;
    }
#ifdef LITHE_HAVE_VULKAN
    /* "vulkan" (device from $LITHE_VULKAN_DEVICE or the best by type) or "vulkan:<index|name>" */
    if (!strncmp(name, "vulkan", 6) && (name[6] == '\0' || name[6] == ':')) return lithe__backend_vulkan(name, out);
#endif
#ifdef LITHE_HAVE_CUDA
    /* "cuda" (device $LITHE_CUDA_DEVICE, else 0) or "cuda:<index>"; the module is loaded here */
    if (!strncmp(name, "cuda", 4) && (name[4] == '\0' || name[4] == ':')) return lithe__backend_cuda(name, out);
#endif
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (!strncmp(name, known[i].name, strlen(known[i].name)) &&
            (name[strlen(known[i].name)] == '\0' || name[strlen(known[i].name)] == ':'))
            return lithe__fail(LITHE_ERR_UNSUPPORTED, "backend '%s' is unavailable: %s", name, known[i].why_missing);
    char list[128];
    lithe_backend_list(list, sizeof list);
    return lithe__fail(LITHE_ERR_NOT_FOUND, "no backend named '%s' (available: %s)", name, list);
}

lithe_status lithe_backend_set_threads(lithe_backend *backend, int n) {
    LITHE__CHECK_ARG(backend, "lithe_backend_set_threads", "backend is NULL");
    if (backend != lithe__backend_cpu())
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "set_threads: backend '%s' has no thread count (only \"cpu\" does)",
                           backend->name);
    return lithe__cpu_set_threads(n);
}

int lithe_backend_threads(const lithe_backend *backend) {
    return backend == lithe__backend_cpu() ? lithe__cpu_threads() : 1;
}

const char *lithe_backend_name(const lithe_backend *backend) { return backend ? backend->name : "(null)"; }

size_t lithe_backend_list(char *buf, size_t cap) {
    /* compiled in; whether a device is present shows at lithe_backend_get */
    const char *s = "cpu"
#ifdef LITHE_HAVE_VULKAN
                    ",vulkan"
#endif
#ifdef LITHE_HAVE_CUDA
                    ",cuda"
#endif
        ;
    size_t n = strlen(s);
    if (buf && cap) snprintf(buf, cap, "%s", s);
    return n;
}

lithe_status lithe_backend_sync(lithe_backend *backend) {
    LITHE__CHECK_ARG(backend, "lithe_backend_sync", "backend is NULL");
    return backend->ops->sync(backend);
}

lithe_status lithe_backend_stream(const lithe_backend *backend, void **stream) {
    LITHE__CHECK_ARG(stream, "lithe_backend_stream", "stream is NULL");
    *stream = NULL;
    LITHE__CHECK_ARG(backend, "lithe_backend_stream", "backend is NULL");
#ifdef LITHE_HAVE_CUDA
    if (backend->dl_device_type == 2) {
        *stream = lithe__cuda_stream(backend);
        return LITHE_OK;
    }
#endif
    return lithe__fail(LITHE_ERR_UNSUPPORTED, "lithe_backend_stream: backend '%s' has no stream", backend->name);
}
