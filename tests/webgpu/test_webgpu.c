/* The WebGPU backend's conformance module, lithe-webgpu-test.wasm (preset wasm-webgpu), run in Node
 * on the `webgpu` package (Dawn) over SwiftShader by the tests/webgpu .test.mjs files and in Chromium by
 * browser.test.mjs. The shared cases (tests/device/cases.h: every primitive and model against the
 * CPU backend, the same list test_vulkan and test_cuda run) are exported one family at a time
 * (wgt_family); then WebGPU's own checks: every primitive present, the loss read back once, the
 * unfused clipped Adam, the GEMM with each WGSL variant, and the fixtures the step-count and npm API
 * tests use. Each exported check returns its number of failures and prints each one. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wgt.h"

#define EXPORT __attribute__((used, visibility("default")))

/* ---- the shared cases ---- */

static const char *const families[] = {
#define WGT_FAMILY(f) #f,
    DEVT_FAMILIES(WGT_FAMILY)
#undef WGT_FAMILY
};
#define N_FAMILIES (sizeof families / sizeof families[0])

/* the name of family f (0, 1, ...), NULL past the last */
EXPORT const char *wgt_family_name(int f) { return f >= 0 && (size_t)f < N_FAMILIES ? families[f] : NULL; }

/* Every case of family f, each from the fixed seed; the failures of all of them. */
EXPORT int wgt_family(int f) {
    if (wgt_begin()) return 1;
    int total = 0, n = 0;
    long checks0 = devt_checks;
    for (size_t i = 0; i < devt_n_cases; i++) {
        if (!wgt_family_name(f) || strcmp(devt_cases[i].family, families[f])) continue;
        devt_case_begin();
        devt_cases[i].fn();
        printf("%s %s: %s\n", failures ? "FAILED" : "ok", devt_cases[i].name, failures ? "(above)" : "");
        total += failures;
        n++;
    }
    printf("family %s: %d cases, %ld tensors compared against the CPU\n", wgt_family_name(f), n, devt_checks - checks0);
    if (!n) printf("FAIL: no cases in family %d\n", f), total++;
    failures = total;
    return total;
}

static int run_family(const char *name) {
    int fails = 0;
    for (size_t f = 0; f < N_FAMILIES; f++)
        if (!strcmp(families[f], name)) fails += wgt_family((int)f);
    return fails;
}

static void t_unsupported(void) {
    /* every primitive of core/primitives.def is in WGSL now (backends/webgpu/unsupported.h lists
     * none): one missing from the table would be refused by name, and fails here */
    for (size_t i = 0; i < lithe__prim_count; i++)
        if (!lithe__backend_has_prim(dev, i)) FAIL("the webgpu backend lacks primitive '%s'", lithe__prim_names[i]);
}

EXPORT int wgt_unsupported(void) {
    if (wgt_begin()) return 1;
    t_unsupported();
    return failures;
}

/* The browser page's first check (browser/page.mjs): the elementwise, training and GEMM families,
 * then every primitive present. */
EXPORT int wgt_primitives(void) {
    int fails = run_family("elementwise") + run_family("train") + run_family("gemm");
    if (wgt_begin()) return 1;
    t_unsupported();
    return fails + failures;
}

/* the browser page's model check: the Relu MLP against the CPU (dc_model_mlp) */
EXPORT int wgt_mlp(void) {
    if (wgt_begin()) return 1;
    devt_case_begin();
    dc_model_mlp();
    return failures;
}

/* ---- a step-count fixture and the npm API test's model ---- */

/* One training step: forward, the cross-entropy gradient, backward, Adam. */
static lithe_status train_step(lithe_model *m, lithe_value *X, lithe_value *L, lithe_optimizer *o) {
    lithe_value *G = NULL, *dv = NULL;
    lithe_backprop *bp = NULL;
    lithe_tensor *d = NULL;
    lithe_status s = lithe_model_begin_update(m, X, &G, &bp);
    if (s == LITHE_OK)
        s = lithe_categorical_crossentropy(NULL, lithe_value_get_tensor(G), lithe_value_get_tensor(L), &d, NULL);
    if (s == LITHE_OK) s = lithe_value_tensor(d, &dv);
    if (s == LITHE_OK) s = lithe_backprop_run(bp, dv, NULL);
    if (s == LITHE_OK) s = lithe_model_finish_update(m, o);
    lithe_tensor_release(d);
    lithe_value_release(dv);
    lithe_value_release(G);
    lithe_backprop_free(bp);
    return s;
}

/* A step-count fixture: a 784-64-32-10 Relu MLP, batch 32, on WebGPU; the JS test reads the
 * recorder's counters around wgt_step(). */
static lithe_model *sm;
static lithe_value *sX, *sL;
static lithe_optimizer *so;
EXPORT int wgt_step_setup(float dropout) {
    if (wgt_begin()) return 1;
    enum { B = 32, NI = 784 };
    static float x[B * NI], onehot[B * 10];
    static int32_t y[B];
    for (int i = 0; i < B * NI; i++) x[i] = (float)uni();
    for (int i = 0; i < B; i++) {
        y[i] = i % 10;
        onehot[i * 10 + y[i]] = 1.0f;
    }
    const int64_t xs[2] = {B, NI}, ys[2] = {B, 10}, ls[1] = {B};
    lithe_value *Xc = devt_value_on(cpu, LITHE_F32, 2, xs, x), *Yc = devt_value_on(cpu, LITHE_F32, 2, ys, onehot);
    lithe_optimizer_opts oo = lithe_adam_defaults();
    if (dc_build_mlp(64, 32, dropout, &sm) || lithe_model_initialize(sm, Xc, Yc) || lithe_model_to_backend(sm, dev) ||
        lithe_optimizer_new(&oo, &so))
        FAIL("step setup: %s", lithe_last_error());
    sX = devt_value_on(dev, LITHE_F32, 2, xs, x);
    sL = devt_value_on(dev, LITHE_I32, 1, ls, y);
    lithe_value_release(Xc);
    lithe_value_release(Yc);
    return failures;
}
/* One step; 0, or the status (its message printed). */
EXPORT int wgt_step(void) {
    lithe_status s = train_step(sm, sX, sL, so);
    if (s != LITHE_OK) printf("step: %s: %s\n", lithe_status_str(s), lithe_last_error());
    return (int)s;
}
EXPORT void wgt_step_free(void) {
    lithe_model_free(sm);
    lithe_value_release(sX);
    lithe_value_release(sL);
    lithe_optimizer_free(so);
    sm = NULL;
    sX = sL = NULL;
    so = NULL;
}

/* A 20-48-32-10 Relu MLP (seed 7), initialized on the CPU and saved as .lithe bytes, for the npm
 * API's test (loadBytes, to('webgpu'), predictAsync, trainStepAsync); *len its size. Free the bytes
 * with lithe_buffer_free. */
EXPORT void *wgt_mlp_bytes(size_t *len) {
    lithe_model *m = NULL;
    void *buf = NULL;
    *len = 0;
    float x[4 * 20] = {0}, y[4 * 10] = {0};
    const int64_t xs[2] = {4, 20}, ys[2] = {4, 10};
    if (lithe_backend_get("cpu", &cpu) || dc_build_mlp(48, 32, 0.0f, &m)) return NULL;
    lithe_value *X = devt_value_on(cpu, LITHE_F32, 2, xs, x), *Y = devt_value_on(cpu, LITHE_F32, 2, ys, y);
    if (lithe_model_set_seed(m, 7) || lithe_model_initialize(m, X, Y) || lithe_model_save_bytes(m, NULL, (uint8_t **)&buf, len)) buf = NULL;
    lithe_value_release(X);
    lithe_value_release(Y);
    lithe_model_free(m);
    return buf;
}

/* ---- issue 27: the loss read back once, fused clip + Adam, the subgroup GEMM ---- */
#include "../../backends/webgpu/webgpu_internal.h"
#include "../../core/train/loss_device.h"

/* lithe__cce_labels_once on WebGPU (the cce_stats op, one read-back) against
 * lithe_categorical_crossentropy + lithe_cross_entropy on the CPU: int32 / int64 labels, label
 * smoothing, a missing value, unnormalized; a guess outside [0, 1] and a label outside [0, C)
 * refused with the CPU's messages. */
static void t_loss_once(void) {
    static const int64_t bc[][2] = {{1, 1}, {5, 3}, {32, 10}, {300, 7}, {3, 1000}};
    char w[128];
    for (size_t k = 0; k < sizeof bc / sizeof bc[0]; k++) {
        int64_t B = bc[k][0], C = bc[k][1], n = B * C;
        for (int var = 0; var < 4; var++) {
            bool i64 = var & 1;
            lithe_cce_opts o = {.unnormalized = var == 3, .has_missing_value = var >= 2, .missing_value = 1,
                                .label_smoothing = var == 1 && C > 2 ? 0.1f : 0.0f};
            pair G = pair_rand(2, bc[k], 0.001, 1);
            int64_t lab64[1000];
            int32_t lab32[1000];
            for (int64_t i = 0; i < B; i++) lab32[i] = (int32_t)(lab64[i] = (int64_t)(uni() * (double)C) % C);
            pair L = pair_new(i64 ? LITHE_I64 : LITHE_I32, 1, &B, i64 ? (void *)lab64 : (void *)lab32);
            lithe_tensor *Dc = NULL, *Dv = NULL;
            float lc = 0, lv = 0;
            double cc = 0, cv = 0;
            OK(lithe_categorical_crossentropy(&o, G.c, L.c, &Dc, &lc));
            OK(lithe_cross_entropy(&o, G.c, L.c, &cc));
            OK(lithe__cce_labels_once(&o, G.v, L.v, i64 ? (void *)lab64 : (void *)lab32, &Dv, &lv, &cv));
            snprintf(w, sizeof w, "loss once D B=%lld C=%lld variant %d", (long long)B, (long long)C, var);
            expect_pair(w, (pair){Dc, Dv}, 1e-7, 1e-6);
            if (!(fabs(lc - lv) <= 1e-5 + 1e-4 * fabs(lc)) || !(fabs(cc - cv) <= 1e-5 + 1e-4 * fabs(cc)))
                FAIL("loss once B=%lld C=%lld variant %d: thinc loss cpu %.9g webgpu %.9g, cross-entropy cpu %.9g "
                     "webgpu %.9g", (long long)B, (long long)C, var, lc, lv, cc, cv);
            lithe_tensor_release(Dc);
            lithe_tensor_release(Dv);
            (void)n;
            pair_free(G);
            pair_free(L);
        }
    }
    /* refusals: a guess outside [0, 1] (on the device), a label outside [0, C) (on the host) */
    int64_t s[2] = {4, 3}, B = 4;
    pair G = pair_rand(2, s, 0, 1), Bad = pair_rand(2, s, 0.5, 1.5);
    int32_t good[4] = {0, 1, 2, 0}, bad[4] = {0, 3, 2, 0};
    pair L = pair_new(LITHE_I32, 1, &B, good);
    float l;
    lithe_status st = lithe__cce_labels_once(NULL, Bad.v, L.v, good, NULL, &l, NULL);
    if (st != LITHE_ERR_VALUE || !strstr(lithe_last_error(), "guesses outside the [0,1] interval"))
        FAIL("loss once: a guess outside [0, 1]: got %s: %s", lithe_status_str(st), lithe_last_error());
    st = lithe__cce_labels_once(NULL, G.v, L.v, bad, NULL, &l, NULL);
    if (st != LITHE_ERR_VALUE || !strstr(lithe_last_error(), "label 3 of row 1 outside [0, 3)"))
        FAIL("loss once: a label outside [0, C): got %s: %s", lithe_status_str(st), lithe_last_error());
    pair_free(G);
    pair_free(Bad);
    pair_free(L);
}

/* adam_step with clipping above the fused path's size (partials, decision, step: three dispatches). */
static void t_adam_step_large(void) {
    int64_t n = LITHE__WG_FUSED_CLIP_MAX + 1001;
    pair W = pair_rand(1, &n, -1, 1), G = pair_rand(1, &n, -1, 1), m1 = pair_rand(1, &n, -0.1, 0.1),
         m2 = pair_rand(1, &n, 0, 0.1);
    BOTH(lithe__op_adam_step(cpu, W.c, G.c, m1.c, m2.c, NULL, 0.5, 0.9f, 0.999f, 1e-8f, 0.01f, 1.0f, 0.9f),
         lithe__op_adam_step(dev, W.v, G.v, m1.v, m2.v, NULL, 0.5, 0.9f, 0.999f, 1e-8f, 0.01f, 1.0f, 0.9f));
    expect_pair("adam_step clip 0.5 n=263145 (unfused)", W, 1e-6, 1e-5);
    expect_pair("adam_step unfused G zeroed", G, 0, 0);
    pair_free(W);
    pair_free(G);
    pair_free(m1);
    pair_free(m2);
}

EXPORT int wgt_once(void) {
    if (wgt_begin()) return 1;
    t_loss_once();
    t_adam_step_large();
    return failures;
}

/* The GEMM's subgroup rule (webgpu_internal.h: 0 none, 1 up to 32 rows, 2 every GEMM); on >= 0
 * sets it (only where the adapter has subgroups). */
static bool sg_available;
EXPORT int wgt_subgroups(int on) {
    if (wgt_begin()) return -1;
    lithe__wg *wg = lithe__wg_of(dev);
    static bool probed;
    if (!probed) sg_available = wg->subgroups != 0, probed = true;
    if (on >= 0) wg->subgroups = sg_available ? on : 0;
    return wg->subgroups;
}

/* The shared GEMM case (dc_gemm) with each variant the adapter offers (subgroups on, off), then
 * the vec4 kernel of CPU adapters on every case whose strides allow it (the others tiled). The
 * variants are set directly: wgt_subgroups() starts over (wgt_begin() zeroes the failures), which
 * made this test return 0 whatever failed before. */
EXPORT int wgt_gemm_variants(void) {
    if (wgt_begin()) return 1;
    (void)wgt_subgroups(-1); /* probes sg_available */
    failures = 0;
    lithe__wg *wg = lithe__wg_of(dev);
    int had = wg->subgroups, cpu_mode = wg->cpu_gemm;
    wg->cpu_gemm = 0;
    for (int on = sg_available; on >= 0; on--) {
        wg->subgroups = on ? 2 : 0; /* every GEMM through the variant */
        printf("gemm variant: %s\n", on ? "subgroups (gemm_sg.wgsl)" : "tiled (gemm.wgsl)");
        dc_gemm();
    }
    wg->subgroups = 0;
    wg->cpu_gemm = 1;
    printf("gemm variant: %s\n", "vec4 (gemm_v4.wgsl, aligned cases)");
    dc_gemm();
    wg->cpu_gemm = cpu_mode;
    wg->subgroups = had;
    return failures;
}
