/* The CUDA backend as liblithe sees it: finds and dlopens the CUDA module (liblithe_cuda.so, built
 * by nvcc from the .cu files of backends/cuda/ and linked against the CUDA runtime and cuBLAS), and keeps one
 * backend instance per device, each with its own stream, cuBLAS handle and caching allocator.
 *
 * Why a separate module rather than linking cudart into liblithe: liblithe.so must load, and the
 * CPU and Vulkan backends work, on machines without the CUDA toolkit or a driver; nvcc's kernels
 * need the CUDA runtime to be registered and launched, so they travel with it in the module, and
 * only a request for "cuda" pays for loading it. The same sources also build an emulation module
 * (liblithe_cuda_emu.so: host memory, every kernel run thread by thread on the CPU), which
 * LITHE_CUDA_MODULE points the tests at, so the whole path from the table to the kernels' index
 * math runs in CI without a GPU. */
#define _GNU_SOURCE /* dladdr */
#include "cuda_module.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define MAX_CUDA_DEVICES 16

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static const lithe__cuda_module *mod;
static char mod_error[1024]; /* why the module could not be loaded (kept: every request says it) */
static bool mod_tried;
static lithe_backend *made[MAX_CUDA_DEVICES];
extern const lithe_backend_desc lithe__backend_cuda_desc;
static char names[MAX_CUDA_DEVICES][16];

static const lithe__cuda_host host = {
    LITHE__CUDA_ABI, sizeof(lithe_backend_ops), sizeof(lithe_tensor), sizeof(lithe__storage), 0, lithe__fail,
    lithe__malloc, lithe__free,
};

/* glibc keeps the last dlerror string until the next dlerror call: asking twice frees it (else
 * LeakSanitizer reports it; the CUDA runtime's own failed dlopen of libcuda leaves one too). */
static void clear_dlerror(void) {
    (void)dlerror();
    (void)dlerror();
}

/* Appends "; <dlerror>" (or "<what>: not found") to mod_error. */
static void note(const char *what) {
    const char *e = dlerror();
    size_t n = strlen(mod_error);
    if (n + 4 >= sizeof mod_error) return;
    /* dlerror names the file itself */
    int w = e ? snprintf(mod_error + n, sizeof mod_error - n, "%s%.800s", n ? "; " : "", e)
              : snprintf(mod_error + n, sizeof mod_error - n, "%s%.400s: not found", n ? "; " : "", what);
    (void)w; /* truncation is fine: the message stays NUL-terminated */
    clear_dlerror();
}

static void *try_open(const char *path) {
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) note(path);
    return h;
}

/* The module: $LITHE_CUDA_MODULE, else liblithe_cuda.so beside this library (or executable), else
 * in the build tree this library came from, else on the loader's search path. */
static void load_module(void) {
    mod_tried = true;
    void *h = NULL;
    const char *env = getenv("LITHE_CUDA_MODULE");
    if (env && *env) {
        h = try_open(env);
    } else {
        Dl_info info;
        char path[4096];
        if (dladdr((void *)&load_module, &info) && info.dli_fname) {
            const char *slash = strrchr(info.dli_fname, '/');
            if (slash && (size_t)(slash - info.dli_fname) + 20 < sizeof path) {
                snprintf(path, sizeof path, "%.*s/liblithe_cuda.so", (int)(slash - info.dli_fname), info.dli_fname);
                h = try_open(path);
            }
        }
#ifdef LITHE_CUDA_MODULE_BUILD_PATH
        if (!h) h = try_open(LITHE_CUDA_MODULE_BUILD_PATH);
#endif
        if (!h) h = try_open("liblithe_cuda.so");
    }
    if (!h) return;
    void *sym = dlsym(h, LITHE__CUDA_ENTRY);
    if (!sym) {
        note("the module lacks " LITHE__CUDA_ENTRY);
        return;
    }
    lithe__cuda_entry_fn entry;
    memcpy(&entry, &sym, sizeof sym); /* void * to function pointer, as ISO C allows it */
    const lithe__cuda_module *m = NULL;
    if (entry(&host, &m) != LITHE_OK || !m || m->abi != LITHE__CUDA_ABI || m->sizeof_ops != sizeof(lithe_backend_ops) ||
        m->sizeof_tensor != sizeof(lithe_tensor)) {
        snprintf(mod_error, sizeof mod_error, "the CUDA module was built from another lithe (table layout differs)");
        return;
    }
    mod = m; /* the module stays loaded: its backends live as long as the process */
}

static lithe_status module(void) {
    if (!mod_tried) load_module();
    if (!mod)
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "backend 'cuda' is unavailable: cannot load the CUDA module (%s)",
                           mod_error);
    return LITHE_OK;
}

/* The backend of device `index`, opened on first use. Called with the lock held. */
static lithe_status device_backend(int index, lithe_backend **out) {
    LITHE__TRY(module());
    int n = 0;
    lithe_status s = mod->device_count(&n);
    clear_dlerror();
    if (s != LITHE_OK) return s;
    if (n == 0) return lithe__fail(LITHE_ERR_UNSUPPORTED, "backend 'cuda' is unavailable: the CUDA runtime found no device");
    if (index < 0 || index >= n || index >= MAX_CUDA_DEVICES)
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "backend 'cuda:%d' is unavailable: %d CUDA device%s present", index, n,
                           n == 1 ? "" : "s");
    if (made[index]) {
        *out = made[index];
        return LITHE_OK;
    }
    lithe_backend *be = lithe__calloc(1, sizeof *be);
    if (!be) return lithe__oom("cuda backend", sizeof *be);
    s = mod->open(index, be);
    if (s != LITHE_OK) {
        lithe__free(be);
        return s;
    }
    snprintf(names[index], sizeof names[index], "cuda:%d", index);
    be->name = names[index];
    be->host_memory = false;
    be->dl_device_type = 2; /* kDLCUDA */
    be->dl_device_id = index;
    be->desc = &lithe__backend_cuda_desc;
    made[index] = be;
    *out = be;
    return LITHE_OK;
}

/* "cuda" (device $LITHE_CUDA_DEVICE, else 0; NULL too) or "cuda:<index>"; the module is loaded here. */
static lithe_status cuda_get(const char *name, lithe_backend **out) {
    *out = NULL;
    if (!name) name = "cuda";
    const char *sel = name[4] == ':' ? name + 5 : getenv("LITHE_CUDA_DEVICE");
    int index = 0;
    if (sel && *sel) {
        if (strspn(sel, "0123456789") != strlen(sel) || strlen(sel) > 4)
            return lithe__fail(LITHE_ERR_NOT_FOUND, "no backend named '%s' (cuda, cuda:<index>; LITHE_CUDA_DEVICE=%s)",
                               name, sel);
        index = atoi(sel);
    }
    pthread_mutex_lock(&lock);
    lithe_status s = device_backend(index, out);
    pthread_mutex_unlock(&lock);
    return s;
}

/* The backend of a device index (DLPack import). */
static lithe_status cuda_get_device(int index, lithe_backend **out) {
    *out = NULL;
    pthread_mutex_lock(&lock);
    lithe_status s = device_backend(index, out);
    pthread_mutex_unlock(&lock);
    return s;
}

static void *cuda_stream(const lithe_backend *be) { return mod ? mod->stream(be) : NULL; }
static const char *cuda_device_name(const lithe_backend *be) { return mod ? mod->device_name(be) : "?"; }
const char *lithe__cuda_module_kind(void) { return mod ? mod->kind : "not loaded"; }
static void cuda_memory_stats(const lithe_backend *be, size_t *in_use, size_t *cached, size_t *n_allocs) {
    if (mod) mod->memory_stats(be, in_use, cached, n_allocs);
}

const lithe_backend_desc lithe__backend_cuda_desc = {
    .api_version = LITHE_BACKEND_API_VERSION,
    .name = "cuda",
    .dl_device_type = 2, /* kDLCUDA: device pointers are shared through DLPack without a copy */
    .get = cuda_get,
    .get_device = cuda_get_device,
    .stream = cuda_stream,
    .memory_stats = cuda_memory_stats,
    .device_name = cuda_device_name,
};
