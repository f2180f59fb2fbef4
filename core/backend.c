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

/* The registry: the backends this build has, in lithe_backends.def (written by
 * backends/backends.cmake from the enabled options: LITHE_BACKEND(name) for each one built, the
 * first the host backend, and LITHE_BACKEND_OFF(name, why) for each one left out). */
#define LITHE_BACKEND(name) extern const lithe_backend_desc lithe__backend_##name##_desc;
#define LITHE_BACKEND_OFF(name, why)
#include "lithe_backends.def"
#undef LITHE_BACKEND
#undef LITHE_BACKEND_OFF

static const lithe_backend_desc *const registry[] = {
#define LITHE_BACKEND(name) &lithe__backend_##name##_desc,
#define LITHE_BACKEND_OFF(name, why)
#include "lithe_backends.def"
#undef LITHE_BACKEND
#undef LITHE_BACKEND_OFF
};
#define N_REGISTRY (sizeof registry / sizeof registry[0])

/* Backends lithe knows of that this build left out: lithe_backend_get says why. */
static const struct {
    const char *name;
    const char *why_missing;
} left_out[] = {
#define LITHE_BACKEND(name)
#define LITHE_BACKEND_OFF(name, why) {#name, why},
#include "lithe_backends.def"
#undef LITHE_BACKEND
#undef LITHE_BACKEND_OFF
    {NULL, NULL},
};

/* Whether `name` is `base` or `base:<selector>`. */
static bool names_backend(const char *name, const char *base) {
    size_t n = strlen(base);
    return !strncmp(name, base, n) && (name[n] == '\0' || name[n] == ':');
}

const lithe_backend_desc *lithe__backend_desc(const char *name) {
    for (size_t i = 0; i < N_REGISTRY; i++)
        if (!strcmp(registry[i]->name, name)) return registry[i];
    return NULL;
}

lithe_backend *lithe__backend_host(void) {
    lithe_backend *be = NULL;
    (void)registry[0]->get(NULL, &be); /* the host backend's default instance cannot fail */
    return be;
}

/* A description of another API version is a build of another tree: refused by name. */
static lithe_status check_desc(const lithe_backend_desc *d) {
    if (d->api_version != LITHE_BACKEND_API_VERSION)
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "backend '%s' has backend API version %u (this lithe: %u)", d->name,
                           (unsigned)d->api_version, (unsigned)LITHE_BACKEND_API_VERSION);
    return LITHE_OK;
}

lithe_status lithe_backend_get(const char *name, lithe_backend **out) {
    LITHE__CHECK_ARG(out, "lithe_backend_get", "out is NULL");
    *out = NULL;
    LITHE__CHECK_ARG(name, "lithe_backend_get", "name is NULL");
    for (size_t i = 0; i < N_REGISTRY; i++)
        if (names_backend(name, registry[i]->name)) {
            LITHE__TRY(check_desc(registry[i]));
            return registry[i]->get(name, out);
        }
    for (size_t i = 0; left_out[i].name; i++)
        if (names_backend(name, left_out[i].name))
            return lithe__fail(LITHE_ERR_UNSUPPORTED, "backend '%s' is unavailable: %s", name, left_out[i].why_missing);
    char list[128];
    lithe_backend_list(list, sizeof list);
    return lithe__fail(LITHE_ERR_NOT_FOUND, "no backend named '%s' (available: %s)", name, list);
}

lithe_status lithe__backend_for_dl_device(int device_type, int device_id, lithe_backend **out) {
    *out = NULL;
    for (size_t i = 0; i < N_REGISTRY; i++)
        if (registry[i]->dl_device_type == device_type && registry[i]->get_device) {
            LITHE__TRY(check_desc(registry[i]));
            return registry[i]->get_device(device_id, out);
        }
    return lithe__fail(LITHE_ERR_NOT_FOUND, "no backend of this build shares memory of DLPack device type %d",
                       device_type);
}

void lithe__backends_cache_flush(void) {
    for (size_t i = 0; i < N_REGISTRY; i++)
        if (registry[i]->cache_flush) registry[i]->cache_flush();
}

lithe_status lithe_backend_set_threads(lithe_backend *backend, int n) {
    LITHE__CHECK_ARG(backend, "lithe_backend_set_threads", "backend is NULL");
    if (!backend->desc->set_threads)
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "set_threads: backend '%s' has no thread count", backend->name);
    return backend->desc->set_threads(backend, n);
}

int lithe_backend_threads(const lithe_backend *backend) {
    return backend && backend->desc->threads ? backend->desc->threads(backend) : 1;
}

const char *lithe_backend_name(const lithe_backend *backend) { return backend ? backend->name : "(null)"; }

size_t lithe_backend_list(char *buf, size_t cap) {
    /* compiled in; whether a device is present shows at lithe_backend_get */
    size_t n = 0;
    if (buf && cap) buf[0] = '\0';
    for (size_t i = 0; i < N_REGISTRY; i++) {
        const char *sep = i ? "," : "";
        if (buf && cap > n) snprintf(buf + n, cap - n, "%s%s", sep, registry[i]->name);
        n += strlen(sep) + strlen(registry[i]->name);
    }
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
    if (backend->desc->stream) {
        *stream = backend->desc->stream(backend);
        return LITHE_OK;
    }
    return lithe__fail(LITHE_ERR_UNSUPPORTED, "lithe_backend_stream: backend '%s' has no stream", backend->name);
}
