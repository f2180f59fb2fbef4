/* Device conformance (cases.h), training primitives: dropout masks, Adam / RAdam / the fused
 * step, gradient clipping, cross-entropy gradients, maxout and layernorm. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cases.h"

void dc_dropout(void) {
    static const uint64_t keys[][2] = {{0, 0}, {42, 7}, {0xFFFFFFFFFFFFull, 0xFFFFFFFEull}, {1ull << 40, (1ull << 32) - 3}};
    char w[96];
    for (size_t k = 0; k < 4; k++)
        for (size_t z = 0; z < N_SIZES; z++) {
            int64_t n = sizes[z];
            pair Y = pair_new(LITHE_F32, 1, &n, NULL);
            float rate = k == 3 ? 0.9f : 0.25f;
            BOTH(lithe__op_dropout_mask(cpu, keys[k][0], keys[k][1], rate, Y.c),
                 lithe__op_dropout_mask(dev, keys[k][0], keys[k][1], rate, Y.v));
            snprintf(w, sizeof w, "dropout_mask (the same Philox bits) key %zu n=%lld", k, (long long)n);
            expect_pair(w, Y, 0, 0);
            pair_free(Y);
        }
}

void dc_adam_radam_fused(void) {
    for (size_t z = 0; z < N_SIZES; z++) {
        int64_t n = sizes[z];
        pair W = pair_rand(1, &n, -1, 1), G = pair_rand(1, &n, -0.1, 0.1), m1 = pair_rand(1, &n, -0.01, 0.01),
             m2 = pair_rand(1, &n, 0, 0.001);
        for (int step = 0; step < 3; step++) {
            OK(lithe__op_adam(cpu, W.c, G.c, m1.c, m2.c, 0.9f, 0.999f, 1e-8f, 0.001f));
            OK(lithe__op_adam(dev, W.v, G.v, m1.v, m2.v, 0.9f, 0.999f, 1e-8f, 0.001f));
        }
        /* sqrt is correctly rounded in Vulkan only to a few ulp; division too */
        expect_pair("adam W", W, 1e-7, 1e-6);
        expect_pair("adam m1", m1, 0, 0);
        expect_pair("adam m2", m2, 0, 0);
        for (int r = 0; r < 2; r++) {
            OK(lithe__op_radam(cpu, W.c, G.c, m1.c, m2.c, 0.9f, 0.1f, 0.999f, 0.001f, 1e-8f, -0.01f, r));
            OK(lithe__op_radam(dev, W.v, G.v, m1.v, m2.v, 0.9f, 0.1f, 0.999f, 0.001f, 1e-8f, -0.01f, r));
        }
        expect_pair("radam W", W, 1e-7, 1e-6);
        expect_pair("radam m2", m2, 0, 0);
        /* the fused step: clipping (off, active, not reached), Adam, G = 0, weight decay, averages
         * (and none); v = 4: none of them, torch.optim.Adam's work (lithe bench --adam torch). The
         * thresholds sit far from the norm, so both sides decide alike. */
        pair A = pair_rand(1, &n, -1, 1);
        for (int v = 0; v < 5; v++) {
            pair G2 = pair_rand(1, &n, -0.1, 0.1);
            double clip = v == 0 || v == 4 ? 0.0 : v == 2 ? 1e6 : 1e-6;
            float wscale = v == 2 || v == 3 ? 0.999f : 1.0f;
            bool avg = v < 3;
            OK(lithe__op_adam_step(cpu, W.c, G2.c, m1.c, m2.c, avg ? A.c : NULL, clip, 0.9f, 0.999f, 1e-8f, 0.001f,
                                   wscale, 0.8f));
            OK(lithe__op_adam_step(dev, W.v, G2.v, m1.v, m2.v, avg ? A.v : NULL, clip, 0.9f, 0.999f, 1e-8f, 0.001f,
                                   wscale, 0.8f));
            expect_pair("adam_step W", W, 1e-7, 1e-6);
            /* from the first clipped step on, the moments carry the device's clip scale, whose norm is
             * summed in another order: within an ulp or so */
            expect_pair("adam_step m1", m1, v ? 1e-12 : 0, v ? 1e-6 : 0);
            expect_pair("adam_step m2", m2, v ? 1e-15 : 0, v ? 1e-6 : 0);
            expect_pair("adam_step G (zeroed)", G2, 0, 0);
            expect_pair("adam_step avg", A, 1e-7, 1e-6);
            pair_free(G2);
        }
        pair_free(A);
        pair_free(W);
        pair_free(G);
        pair_free(m1);
        pair_free(m2);
    }
}

/* categorical cross-entropy gradients from int32 and int64 labels, smoothing and missing (more
 * shapes: dc_rows_softmax_cce) */
void dc_cce_labels(void) {
    enum { B = 37, C = 11 };
    int32_t l32[B];
    int64_t l64[B];
    for (int i = 0; i < B; i++) l64[i] = l32[i] = i % 5 == 4 ? -1 : (int32_t)(uni() * C);
    pair G = pair_rand(2, (int64_t[]){B, C}, 0, 1), D = pair_new(LITHE_F32, 2, (int64_t[]){B, C}, NULL);
    pair L32 = pair_new(LITHE_I32, 1, (int64_t[]){B}, l32), L64 = pair_new(LITHE_I64, 1, (int64_t[]){B}, l64);
    for (int v = 0; v < 4; v++) {
        pair L = v & 1 ? L64 : L32;
        float smoothing = v & 2 ? 0.1f : 0.0f;
        OK(lithe__op_cce_labels(cpu, G.c, L.c, smoothing, true, -1, (float)B, D.c));
        OK(lithe__op_cce_labels(dev, G.v, L.v, smoothing, true, -1, (float)B, D.v));
        expect_pair("cce_labels", D, 0, 0);
    }
    pair_free(G);
    pair_free(D);
    pair_free(L32);
    pair_free(L64);
}

void dc_optimizer_steps(void) {
    char w[96];
    for (size_t k = 0; k < N_SIZES; k++) {
        int64_t n = sizes[k];
        pair W = pair_rand(1, &n, -1, 1), G = pair_rand(1, &n, -1, 1), m1 = pair_rand(1, &n, -0.1, 0.1),
             m2 = pair_rand(1, &n, 0, 0.1), avg = pair_rand(1, &n, -1, 1);
        BOTH(lithe__op_adam(cpu, W.c, G.c, m1.c, m2.c, 0.9f, 0.999f, 1e-8f, 0.01f),
             lithe__op_adam(dev, W.v, G.v, m1.v, m2.v, 0.9f, 0.999f, 1e-8f, 0.01f));
        snprintf(w, sizeof w, "adam W n=%lld", (long long)n);
        expect_pair(w, W, 1e-7, 1e-6);
        expect_pair("adam m1", m1, 1e-7, 1e-6);
        expect_pair("adam m2", m2, 1e-7, 1e-6);
        BOTH(lithe__op_radam(cpu, W.c, G.c, m1.c, m2.c, 0.9f, 0.1f, 0.999f, 0.001f, 1e-8f, 0.01f, k % 2),
             lithe__op_radam(dev, W.v, G.v, m1.v, m2.v, 0.9f, 0.1f, 0.999f, 0.001f, 1e-8f, 0.01f, k % 2));
        snprintf(w, sizeof w, "radam W n=%lld", (long long)n);
        expect_pair(w, W, 1e-7, 1e-6);
        for (int clip = 0; clip < 2; clip++) {
            double gc = clip ? 0.5 : 0.0;
            BOTH(lithe__op_adam_step(cpu, W.c, G.c, m1.c, m2.c, avg.c, gc, 0.9f, 0.999f, 1e-8f, 0.01f, 0.99f, 0.9f),
                 lithe__op_adam_step(dev, W.v, G.v, m1.v, m2.v, avg.v, gc, 0.9f, 0.999f, 1e-8f, 0.01f, 0.99f, 0.9f));
            snprintf(w, sizeof w, "adam_step clip %g n=%lld", gc, (long long)n);
            expect_pair(w, W, 1e-6, 1e-5);
            expect_pair("adam_step G zeroed", G, 0, 0);
            expect_pair("adam_step avg", avg, 1e-6, 1e-5);
            expect_pair("adam_step m1", m1, 1e-6, 1e-5);
            pair G2 = pair_rand(1, &n, -1, 1);
            lithe_tensor_release(G.c);
            lithe_tensor_release(G.v);
            G = G2;
        }
        BOTH(lithe__op_clip_gradient(cpu, G.c, 1.0), lithe__op_clip_gradient(dev, G.v, 1.0));
        snprintf(w, sizeof w, "clip_gradient n=%lld", (long long)n);
        expect_pair(w, G, 1e-7, 1e-5);
        pair_free(W);
        pair_free(G);
        pair_free(m1);
        pair_free(m2);
        pair_free(avg);
    }
}

void dc_maxout(void) {
    static const int64_t bop[][3] = {{1, 1, 1}, {7, 5, 3}, {64, 33, 2}, {3, 300, 4}};
    for (size_t z = 0; z < 4; z++) {
        const int64_t *s = bop[z];
        float *x = malloc(sizeof(float) * (size_t)(s[0] * s[1] * s[2]));
        /* ties (from a coarse grid) check the first-maximum rule */
        for (int64_t i = 0; i < s[0] * s[1] * s[2]; i++) x[i] = (float)(int)(uni() * 5) - 2.0f;
        pair X = pair_new(LITHE_F32, 3, s, x), Y = pair_new(LITHE_F32, 2, s, NULL), W = pair_new(LITHE_I32, 2, s, NULL),
             dY = pair_rand(2, s, -1, 1), dX = pair_new(LITHE_F32, 3, s, NULL);
        free(x);
        BOTH(lithe__op_maxout(cpu, X.c, Y.c, W.c), lithe__op_maxout(dev, X.v, Y.v, W.v));
        expect_pair("maxout Y", Y, 0, 0);
        expect_pair("maxout which", W, 0, 0);
        OK(lithe__op_fill(dev, dX.v, 7.0f));
        BOTH(lithe__op_maxout_backward(cpu, dY.c, W.c, dX.c), lithe__op_maxout_backward(dev, dY.v, W.v, dX.v));
        expect_pair("maxout dX", dX, 0, 0);
        pair_free(X), pair_free(Y), pair_free(W), pair_free(dY), pair_free(dX);
    }
}

void dc_layernorm(void) {
    static const int64_t mn[][2] = {{1, 1}, {4, 7}, {33, 256}, {5, 257}, {2, 3000}, {300, 12}};
    for (size_t z = 0; z < sizeof mn / sizeof mn[0]; z++) {
        int64_t M = mn[z][0], N = mn[z][1];
        pair X = pair_rand(2, mn[z], -2, 5), G = pair_rand(1, &N, 0.5, 1.5), b = pair_rand(1, &N, -0.5, 0.5),
             Y = pair_new(LITHE_F32, 2, mn[z], NULL), mean = pair_new(LITHE_F32, 1, &M, NULL),
             is = pair_new(LITHE_F32, 1, &M, NULL), dY = pair_rand(2, mn[z], -1, 1),
             dX = pair_new(LITHE_F32, 2, mn[z], NULL), dG = pair_rand(1, &N, -1, 1), db = pair_rand(1, &N, -1, 1);
        if (z == 5) pair_poke_nan(X, 13); /* row 1 NaN, the others not */
        BOTH(lithe__op_layernorm(cpu, X.c, G.c, b.c, 1e-8f, Y.c, mean.c, is.c),
             lithe__op_layernorm(dev, X.v, G.v, b.v, 1e-8f, Y.v, mean.v, is.v));
        expect_pair("layernorm Y", Y, 1e-5, 1e-4);
        expect_pair("layernorm mean", mean, 1e-6, 1e-5);
        expect_pair("layernorm inv_std", is, 1e-6, 1e-4);
        if (z == 5) { /* NaN sums in dG / db: forward only */
            pair ps[] = {X, G, b, Y, mean, is, dY, dX, dG, db};
            for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) pair_free(ps[i]);
            break;
        }
        BOTH(lithe__op_layernorm_backward(cpu, dY.c, X.c, G.c, mean.c, is.c, dX.c, dG.c, db.c),
             lithe__op_layernorm_backward(dev, dY.v, X.v, G.v, mean.v, is.v, dX.v, dG.v, db.v));
        expect_pair("layernorm dX", dX, 1e-4, 1e-3);
        expect_pair("layernorm dG (accumulated)", dG, 1e-4, 1e-4);
        expect_pair("layernorm db (accumulated)", db, 1e-5, 1e-5);
        BOTH(lithe__op_layernorm_backward(cpu, dY.c, X.c, G.c, mean.c, is.c, dY.c, dG.c, db.c),
             lithe__op_layernorm_backward(dev, dY.v, X.v, G.v, mean.v, is.v, dY.v, dG.v, db.v)); /* dX aliasing dY */
        expect_pair("layernorm dX in place", dY, 1e-4, 1e-3);
        pair ps[] = {X, G, b, Y, mean, is, dY, dX, dG, db};
        for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) pair_free(ps[i]);
    }
}
