/* One training step's memory and time, natively, in a fresh process (bench/memory/run.py runs it
 * once per model x mode). Usage:
 *   mem_step MODEL MODE BATCH ROW_SHAPE [STEPS] [RECOMPUTE]
 * MODE: full | last (every param frozen but the last layer's: FREEZE_KEEP, a glob, names them) |
 * lora (rank-8 adapters, alpha 16, on every weight that takes one: lithe_model_add_lora; LORA_PATTERN
 * narrows them). RECOMPUTE_ROWS (env, with RECOMPUTE): the graph attr recompute_rows.
 * MODEL may hold compact weights (lithe convert --weights int8|f16): lora then trains on that base.
 * MEM_PHASES=1 (env): the resident set by kind, malloc's arena and the backend's bytes at each
 * phase on stderr (MEM_SMAPS=DIR: a copy of /proc/self/smaps per phase too), for the accounting
 * in results.md. ROW_SHAPE: one input row, "784" or "3,224,224". The step: forward at training, dY = 1/B
 * everywhere (the gradient of mean(sum(Y)), the same as the PyTorch runner's), backprop with no
 * dX, Adam (no averages: PyTorch's Adam keeps none). Prints one JSON line: the plan
 * (lithe_model_plan_train, before any step), the resident set before the first step and its
 * high-water mark after STEPS steps, the resident set at the start (before the model exists) (VmRSS / VmHWM from /proc/self/status), the CPU backend's
 * in-use high-water mark, and the step times. */
#include "lithe.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static long status_kb(const char *key) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    size_t n = strlen(key);
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, key, n)) v = strtol(line + n + 1, NULL, 10);
    if (f) fclose(f);
    return v;
}

/* MEM_PHASES=1: the resident set by kind (smaps_rollup: anonymous / file-backed), malloc's arena
 * (mallinfo2: in use, held) and the CPU backend's bytes in use at each phase, on stderr. */
static long rollup_kb(const char *key) {
    FILE *f = fopen("/proc/self/smaps_rollup", "r");
    char line[256];
    long v = -1;
    size_t n = strlen(key);
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, key, n) && line[n] == ':') v = strtol(line + n + 1, NULL, 10);
    if (f) fclose(f);
    return v;
}
static void phase(const char *what) {
    if (!getenv("MEM_PHASES")) return;
    if (getenv("MEM_SMAPS")) { /* MEM_SMAPS=DIR: a copy of /proc/self/smaps per phase */
        char path[512], buf[4096];
        snprintf(path, sizeof path, "%s/%s.smaps", getenv("MEM_SMAPS"), what);
        FILE *in = fopen("/proc/self/smaps", "r"), *o = fopen(path, "w");
        size_t n;
        while (in && o && (n = fread(buf, 1, sizeof buf, in)) > 0) fwrite(buf, 1, n, o);
        if (in) fclose(in);
        if (o) fclose(o);
    }
    struct mallinfo2 mi = mallinfo2();
    lithe_backend *cpu = NULL;
    lithe_backend_memory_info bi = {0};
    if (lithe_backend_get("cpu", &cpu) == LITHE_OK) lithe_backend_memory(cpu, &bi);
    fprintf(stderr, "%-28s rss %6ld anon %6ld file %6ld hwm %6ld | malloc used %6zu held %6zu mmap %6zu | backend in_use %6zu peak %6zu cached %6zu (KiB)\n",
            what, status_kb("VmRSS"), rollup_kb("Anonymous"), status_kb("RssFile"), status_kb("VmHWM"),
            mi.uordblks / 1024, mi.arena / 1024, mi.hblkhd / 1024, bi.in_use / 1024, bi.peak / 1024, bi.cached / 1024);
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

#define CHECK(x)                                                                                                    \
    do {                                                                                                           \
        lithe_status s_ = (x);                                                                                     \
        if (s_ != LITHE_OK) {                                                                                      \
            fprintf(stderr, "%s: %s\n", #x, lithe_last_error());                                                   \
            return 1;                                                                                              \
        }                                                                                                          \
    } while (0)

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: mem_step MODEL full|last|lora BATCH ROW_SHAPE [STEPS] [RECOMPUTE]\n");
        return 2;
    }
    const char *mode = argv[2];
    int64_t B = atoll(argv[3]);
    int steps = argc > 5 ? atoi(argv[5]) : 5;
    int64_t shape[8] = {B};
    int nd = 1;
    for (char *p = argv[4]; *p && nd < 8; nd++) {
        shape[nd] = strtoll(p, &p, 10);
        if (*p == ',') p++;
    }
    phase("start");
    long rss_start = status_kb("VmRSS"); /* the process's own baseline: before the model exists */
    lithe_model *m = NULL;
    CHECK(lithe_model_load(argv[1], &m));
    long rss_loaded = status_kb("VmRSS");
    phase("loaded");
    if (!strcmp(mode, "lora")) /* rank 8, alpha 16, on every weight that takes one (LORA_PATTERN: a glob) */
        CHECK(lithe_model_add_lora(m, getenv("LORA_PATTERN"), 8, 16.0f, 1));
    if (!strcmp(mode, "last")) {
        const char *keep = getenv("FREEZE_KEEP");
        CHECK(lithe_model_set_frozen(m, NULL, true));
        CHECK(lithe_model_freeze_matching(m, keep ? keep : "*", false, NULL));
    }
    CHECK(lithe_model_set_attr_bool(m, "no_input_grad", true)); /* a training loop never asks dX */
    if (argc > 6 && atoi(argv[6])) CHECK(lithe_model_set_attr_bool(m, "recompute", true));
    if (argc > 6 && atoi(argv[6]) && getenv("RECOMPUTE_ROWS")) /* a graph layer's segments by rows of the batch */
        CHECK(lithe_model_set_attr_int(m, "recompute_rows", atoll(getenv("RECOMPUTE_ROWS"))));
    phase("lora / frozen");
    int64_t numel = 1;
    for (int d = 0; d < nd; d++) numel *= shape[d];
    float *h = malloc((size_t)numel * sizeof *h);
    for (int64_t i = 0; i < numel; i++) h[i] = (float)((i * 2654435761u) % 1000) / 1000.0f;
    lithe_tensor *X = NULL, *dY = NULL;
    lithe_value *xv = NULL, *dyv = NULL, *yv = NULL;
    CHECK(lithe_tensor_from_data(LITHE_F32, nd, shape, h, &X));
    free(h);
    CHECK(lithe_value_tensor(X, &xv));
    lithe_optimizer_opts o = lithe_adam_defaults();
    o.use_averages = false;
    lithe_optimizer *opt = NULL;
    CHECK(lithe_optimizer_new(&o, &opt));
    lithe_train_memory p;
    CHECK(lithe_model_plan_train(m, xv, B, opt, &p));
    lithe_backend *cpu = NULL;
    CHECK(lithe_backend_get("cpu", &cpu));
    phase("planned");
    long rss0 = status_kb("VmRSS");
    double t_first = 0, t_rest = 0;
    lithe_backend_memory_info mi;
    for (int i = 0; i < steps; i++) {
        double t0 = now();
        lithe_backprop *bp = NULL;
        CHECK(lithe_model_begin_update(m, xv, &yv, &bp));
        if (i < 2) phase(i ? "step 2 forward" : "step 1 forward");
        if (!dY) {
            lithe_tensor *Y = lithe_value_get_tensor(yv);
            int64_t n = lithe_tensor_numel(Y);
            float *d = malloc((size_t)n * sizeof *d);
            for (int64_t k = 0; k < n; k++) d[k] = 1.0f / (float)B;
            CHECK(lithe_tensor_from_data(LITHE_F32, lithe_tensor_ndim(Y), lithe_tensor_shape(Y), d, &dY));
            free(d);
            CHECK(lithe_value_tensor(dY, &dyv));
        }
        CHECK(lithe_backprop_run(bp, dyv, NULL));
        if (i < 2) phase(i ? "step 2 backward" : "step 1 backward");
        lithe_backprop_free(bp);
        lithe_value_release(yv);
        CHECK(lithe_model_finish_update(m, opt));
        if (i < 2) phase(i ? "step 2 optimizer" : "step 1 optimizer");
        double dt = now() - t0;
        if (i == 0) t_first = dt;
        else t_rest += dt;
        if (i == 0) CHECK(lithe_backend_memory(cpu, &mi));
    }
    phase("steps done");
    size_t allocs1 = mi.n_allocs;
    CHECK(lithe_backend_memory(cpu, &mi));
    size_t n_state = 0, n_grads = lithe_model_grad_count(m, NULL);
    lithe_optimizer_state_count(opt, &n_state);
    printf("{\"mode\": \"%s\", \"batch\": %lld, \"plan\": {\"params\": %zu, \"grads\": %zu, \"opt_state\": %zu, "
           "\"activations\": %zu, \"total\": %zu}, \"rss_start_kb\": %ld, \"rss_loaded_kb\": %ld, \"rss_before_kb\": %ld, \"hwm_kb\": %ld, \"backend_peak\": %zu, "
           "\"grad_buffers\": %zu, \"opt_state_bytes\": %zu, \"new_blocks_after_step1\": %zu, \"step1_s\": %.4f, "
           "\"step_s\": %.4f}\n",
           mode, (long long)B, p.params, p.grads, p.opt_state, p.activations, p.total, rss_start, rss_loaded, rss0, status_kb("VmHWM"), mi.peak,
           n_grads, n_state, mi.n_allocs - allocs1, t_first, steps > 1 ? t_rest / (steps - 1) : t_first);
    lithe_value_release(dyv);
    lithe_tensor_release(dY);
    lithe_value_release(xv);
    lithe_tensor_release(X);
    lithe_optimizer_free(opt);
    lithe_model_free(m);
    return 0;
}
