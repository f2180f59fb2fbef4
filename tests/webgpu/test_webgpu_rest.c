/* WebGPU conformance, part 2 (built into lithe-webgpu-test.wasm beside test_webgpu.c; run by
 * rest.test.mjs): the id, sequence, recurrent, attention and int8 primitives against the CPU
 * backend on the inputs and shapes tests/test_device.c gives Vulkan and CUDA (bit-exact where no
 * transcendental is involved), then whole native models (a HashEmbed >> Maxout >> Softmax text
 * model with dropout, a BiLSTM tagger, a seq2col >> ParametricAttention model and a SparseLinear
 * classifier): predictions, ten Adam steps, predictions and every parameter against the same
 * model on the CPU. Oracle: the CPU backend (checked against Thinc by test_kernels, test_recurrent,
 * test_sparse). Each exported function returns its number of failures and prints each one. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wgt.h"

#define EXPORT __attribute__((used, visibility("default")))

static uint64_t rng_state = 4242;

static const int64_t sizes[] = {1, 3, 255, 256, 257, 1000, 4099};
#define N_SIZES (sizeof sizes / sizeof sizes[0])

static void t_dropout(void) {
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

static void t_maxout(void) {
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

static void t_ids(void) {
    enum { V = 50, N = 67, B = 300 };
    uint64_t u[B];
    int32_t i32[B];
    for (int i = 0; i < B; i++) {
        u[i] = (uint64_t)(uni() * V);
        i32[i] = (int32_t)u[i];
    }
    pair ids64 = pair_new(LITHE_U64, 1, (int64_t[]){B}, u), ids32 = pair_new(LITHE_I32, 1, (int64_t[]){B}, i32);
    for (int w = 0; w < 2; w++) {
        pair ids = w ? ids64 : ids32;
        pair T = pair_rand(2, (int64_t[]){V, N}, -1, 1), Y = pair_new(LITHE_F32, 2, (int64_t[]){B, N}, NULL),
             X = pair_rand(2, (int64_t[]){B, N}, -1, 1);
        BOTH(lithe__op_gather_rows(cpu, T.c, ids.c, Y.c), lithe__op_gather_rows(dev, T.v, ids.v, Y.v));
        expect_pair(w ? "gather_rows uint64 ids" : "gather_rows int32 ids", Y, 0, 0);
        BOTH(lithe__op_scatter_add_rows(cpu, T.c, ids.c, X.c), lithe__op_scatter_add_rows(dev, T.v, ids.v, X.v));
        expect_pair("scatter_add_rows (duplicates in the CPU's order)", T, 0, 0);
        pair_free(T), pair_free(Y), pair_free(X);
    }
    uint64_t h[B];
    for (int i = 0; i < B; i++) h[i] = lithe__splitmix64(&rng_state);
    pair H = pair_new(LITHE_U64, 1, (int64_t[]){B}, h), K = pair_new(LITHE_U32, 2, (int64_t[]){B, 4}, NULL);
    static const uint32_t seeds[] = {0, 1, 0xDEADBEEF};
    for (int s = 0; s < 3; s++) {
        BOTH(lithe__op_hash_ids(cpu, H.c, seeds[s], K.c), lithe__op_hash_ids(dev, H.v, seeds[s], K.v));
        expect_pair("hash_ids", K, 0, 0);
    }
    pair_free(H), pair_free(K), pair_free(ids64), pair_free(ids32);
}

/* lengths, strings and offsets live on the host */
static void t_seq_sparse_strings(void) {
    static const int32_t lens_a[] = {3, 0, 1, 7, 2, 0, 5}, lens_b[] = {1, 4, 300, 2};
    const int32_t *lens[] = {lens_a, lens_b};
    const int64_t nb[] = {7, 4};
    for (int c = 0; c < 2; c++) {
        int64_t B = nb[c], N = 0, O = c ? 33 : 5;
        for (int64_t b = 0; b < B; b++) N += lens[c][b];
        lithe_tensor *L = NULL;
        OK(lithe_tensor_from_data(LITHE_I32, 1, &B, lens[c], &L));
        pair X = pair_rand(2, (int64_t[]){N, O}, -2, 2), dX = pair_rand(2, (int64_t[]){N, O}, -1, 1);
        for (int64_t nW = 0; nW < 3; nW++) {
            int64_t F = 2 * nW + 1;
            pair S = pair_new(LITHE_F32, 2, (int64_t[]){N, F * O}, NULL), dS = pair_rand(2, (int64_t[]){N, F * O}, -1, 1);
            BOTH(lithe__op_seq2col(cpu, X.c, nW, L, S.c), lithe__op_seq2col(dev, X.v, nW, L, S.v));
            expect_pair("seq2col", S, 0, 0);
            BOTH(lithe__op_seq2col_backward(cpu, dS.c, nW, L, dX.c), lithe__op_seq2col_backward(dev, dS.v, nW, L, dX.v));
            expect_pair("seq2col backward", dX, 0, 0);
            pair_free(S), pair_free(dS);
        }
        uint64_t *keys = malloc(sizeof(uint64_t) * (size_t)(N + 1));
        for (int64_t i = 0; i < N; i++) keys[i] = i % 3 ? lithe__splitmix64(&rng_state) : (uint64_t)(i % 7);
        pair K = pair_new(LITHE_U64, 1, &N, keys), V = pair_rand(1, &N, -1, 1);
        free(keys);
        int64_t nO = 6, length = 64;
        for (int v1 = 0; v1 < 2; v1++) {
            pair SW = pair_rand(1, (int64_t[]){nO * length}, -1, 1), SY = pair_rand(2, (int64_t[]){B, nO}, -1, 1),
                 SdY = pair_rand(2, (int64_t[]){B, nO}, -1, 1);
            BOTH(lithe__op_sparse_linear(cpu, K.c, V.c, L, SW.c, length, v1, SY.c),
                 lithe__op_sparse_linear(dev, K.v, V.v, L, SW.v, length, v1, SY.v));
            expect_pair(v1 ? "sparse_linear v1" : "sparse_linear v2", SY, 0, 0);
            BOTH(lithe__op_sparse_linear_backward(cpu, K.c, V.c, L, SdY.c, length, v1, SW.c),
                 lithe__op_sparse_linear_backward(dev, K.v, V.v, L, SdY.v, length, v1, SW.v));
            expect_pair(v1 ? "sparse_linear_backward v1" : "sparse_linear_backward v2", SW, 0, 0);
            pair_free(SW), pair_free(SY), pair_free(SdY);
        }
        pair_free(K), pair_free(V), pair_free(X), pair_free(dX);
        lithe_tensor_release(L);
    }
    /* strings of every tail length, empty, and non-ASCII bytes */
    static const char *strs[] = {"", "a", "ab", "abc", "abcd", "abcde", "the quick brown fox", "\xc3\xa9t\xc3\xa9", "12345678"};
    enum { NSTR = sizeof strs / sizeof strs[0] };
    uint8_t buf[128];
    int64_t offs[NSTR + 1], pos = 0;
    for (int i = 0; i < NSTR; i++) {
        offs[i] = pos;
        size_t l = strlen(strs[i]) + 1;
        memcpy(buf + pos, strs[i], l);
        pos += (int64_t)l;
    }
    offs[NSTR] = pos;
    lithe_tensor *bytes = NULL, *offsets = NULL;
    OK(lithe_tensor_from_data(LITHE_U8, 1, (int64_t[]){pos}, buf, &bytes));
    OK(lithe_tensor_from_data(LITHE_I64, 1, (int64_t[]){NSTR + 1}, offs, &offsets));
    pair H = pair_new(LITHE_U64, 1, (int64_t[]){NSTR}, NULL);
    for (uint32_t seed = 0; seed < 3; seed++) {
        BOTH(lithe__op_hash_strings(cpu, bytes, offsets, seed * 77u, H.c),
             lithe__op_hash_strings(dev, bytes, offsets, seed * 77u, H.v));
        expect_pair("hash_strings", H, 0, 0);
    }
    pair_free(H);
    lithe_tensor_release(bytes);
    lithe_tensor_release(offsets);
}

static void t_recurrent(void) {
    /* LSTM: odd H and 4H·H around a workgroup (H = 17), steps non-increasing, a step larger than a
     * workgroup (size 300 at H = 1) */
    static const int32_t steps_a[] = {4, 4, 3, 1, 1}, steps_b[] = {300, 299, 7}, steps_c[] = {2};
    const int32_t *steps[] = {steps_a, steps_b, steps_c};
    const int64_t nT[] = {5, 3, 1}, nH[] = {5, 1, 17};
    for (int c = 0; c < 3; c++) {
        int64_t T = nT[c], H = nH[c], N = 0;
        for (int64_t t = 0; t < T; t++) N += steps[c][t];
        lithe_tensor *S = NULL;
        OK(lithe_tensor_from_data(LITHE_I32, 1, &T, steps[c], &S));
        pair Wh = pair_rand(2, (int64_t[]){4 * H, H}, -0.5, 0.5), bx = pair_rand(1, (int64_t[]){4 * H}, -0.5, 0.5),
             bh = pair_rand(1, (int64_t[]){4 * H}, -0.5, 0.5), h0 = pair_rand(1, &H, -1, 1), c0 = pair_rand(1, &H, -1, 1);
        for (int rev = 0; rev < 2; rev++) {
            pair G = pair_rand(2, (int64_t[]){N, 4 * H}, -2, 2), C = pair_new(LITHE_F32, 2, (int64_t[]){N, H}, NULL),
                 Y = pair_new(LITHE_F32, 2, (int64_t[]){N, H}, NULL), dY = pair_rand(2, (int64_t[]){N, H}, -1, 1),
                 dC = pair_rand(2, (int64_t[]){N, H}, -1, 1), dG = pair_new(LITHE_F32, 2, (int64_t[]){N, 4 * H}, NULL),
                 dWh = pair_rand(2, (int64_t[]){4 * H, H}, -1, 1);
            BOTH(lithe__op_lstm_scan(cpu, Wh.c, bx.c, bh.c, h0.c, c0.c, S, rev, G.c, C.c, Y.c),
                 lithe__op_lstm_scan(dev, Wh.v, bx.v, bh.v, h0.v, c0.v, S, rev, G.v, C.v, Y.v));
            /* exp differs from libm in the last bits */
            expect_pair("lstm_scan G", G, 1e-5, 1e-4);
            expect_pair("lstm_scan C", C, 1e-5, 1e-4);
            expect_pair("lstm_scan Y", Y, 1e-5, 1e-4);
            /* the backward from the CPU's forward on both sides, so only the backward is compared */
            sync_pair(G), sync_pair(C), sync_pair(Y);
            BOTH(lithe__op_lstm_scan_backward(cpu, Wh.c, h0.c, c0.c, S, rev, G.c, C.c, Y.c, dY.c, dC.c, dG.c, dWh.c),
                 lithe__op_lstm_scan_backward(dev, Wh.v, h0.v, c0.v, S, rev, G.v, C.v, Y.v, dY.v, dC.v, dG.v, dWh.v));
            expect_pair("lstm_scan_backward dG", dG, 1e-5, 1e-4);
            expect_pair("lstm_scan_backward dY", dY, 1e-5, 1e-4);
            expect_pair("lstm_scan_backward dWh", dWh, 1e-5, 1e-4);
            pair_free(G), pair_free(C), pair_free(Y), pair_free(dY), pair_free(dC), pair_free(dG), pair_free(dWh);
        }
        pair_free(Wh), pair_free(bx), pair_free(bh), pair_free(h0), pair_free(c0);
        lithe_tensor_release(S);
    }
    /* ParametricAttention over sequences with empty ones, a sequence past a workgroup */
    static const int32_t lens_a[] = {3, 0, 1, 7, 2, 0, 5}, lens_b[] = {1, 4, 300, 2};
    const int32_t *lens[] = {lens_a, lens_b};
    const int64_t nb[] = {7, 4};
    for (int c = 0; c < 2; c++) {
        int64_t B = nb[c], N = 0, O = c ? 257 : 5;
        for (int64_t b = 0; b < B; b++) N += lens[c][b];
        lithe_tensor *L = NULL;
        OK(lithe_tensor_from_data(LITHE_I32, 1, &B, lens[c], &L));
        pair X = pair_rand(2, (int64_t[]){N, O}, -1, 1), Q = pair_rand(1, &O, -0.5, 0.5),
             A = pair_new(LITHE_F32, 1, &N, NULL), Y = pair_new(LITHE_F32, 2, (int64_t[]){N, O}, NULL),
             dY = pair_rand(2, (int64_t[]){N, O}, -1, 1), dX = pair_rand(2, (int64_t[]){N, O}, -1, 1),
             dQ = pair_rand(1, &O, -1, 1);
        BOTH(lithe__op_para_attention(cpu, X.c, Q.c, L, A.c, Y.c), lithe__op_para_attention(dev, X.v, Q.v, L, A.v, Y.v));
        expect_pair("para_attention A", A, 1e-6, 1e-5);
        expect_pair("para_attention Y", Y, 1e-6, 1e-5);
        sync_pair(A);
        BOTH(lithe__op_para_attention_backward(cpu, X.c, Q.c, A.c, L, dY.c, dX.c, dQ.c),
             lithe__op_para_attention_backward(dev, X.v, Q.v, A.v, L, dY.v, dX.v, dQ.v));
        /* no transcendental in the backward: the CPU's bits */
        expect_pair("para_attention_backward dX", dX, 0, 0);
        expect_pair("para_attention_backward dQ", dQ, 0, 0);
        pair_free(X), pair_free(Q), pair_free(A), pair_free(Y), pair_free(dY), pair_free(dX), pair_free(dQ);
        lithe_tensor_release(L);
    }
    /* CauchySimilarity: no transcendental, bit-exact */
    for (size_t i = 0; i < N_SIZES; i += 2) {
        int64_t B = sizes[i], I = sizes[N_SIZES - 1 - i] % 300 + 1;
        pair X1 = pair_rand(2, (int64_t[]){B, I}, -1, 1), X2 = pair_rand(2, (int64_t[]){B, I}, -1, 1),
             W = pair_rand(1, &I, 0, 1), sim = pair_new(LITHE_F32, 1, &B, NULL), dsim = pair_rand(1, &B, -1, 1),
             dX1 = pair_new(LITHE_F32, 2, (int64_t[]){B, I}, NULL), dX2 = pair_new(LITHE_F32, 2, (int64_t[]){B, I}, NULL),
             dW = pair_rand(1, &I, -1, 1);
        BOTH(lithe__op_cauchy_similarity(cpu, X1.c, X2.c, W.c, sim.c), lithe__op_cauchy_similarity(dev, X1.v, X2.v, W.v, sim.v));
        expect_pair("cauchy_similarity", sim, 0, 0);
        BOTH(lithe__op_cauchy_similarity_backward(cpu, X1.c, X2.c, W.c, sim.c, dsim.c, dX1.c, dX2.c, dW.c),
             lithe__op_cauchy_similarity_backward(dev, X1.v, X2.v, W.v, sim.v, dsim.v, dX1.v, dX2.v, dW.v));
        expect_pair("cauchy_similarity_backward dX1", dX1, 0, 0);
        expect_pair("cauchy_similarity_backward dX2", dX2, 0, 0);
        expect_pair("cauchy_similarity_backward dW", dW, 0, 0);
        pair_free(X1), pair_free(X2), pair_free(W), pair_free(sim), pair_free(dsim), pair_free(dX1), pair_free(dX2),
            pair_free(dW);
    }
}

/* gemm_q8: W int8 (N, K) with per-row and per-tensor scales, zero points 0 (and one non-zero
 * case), bias and activations; the WebGPU W is the same bytes with the CPU tensor's parameters. */
static void t_gemm_q8(void) {
    static const int64_t mnk[][3] = {{1, 1, 1}, {3, 5, 7}, {33, 17, 64}, {50, 48, 20}, {7, 130, 300}};
    char w[128];
    for (size_t c = 0; c < sizeof mnk / sizeof mnk[0]; c++) {
        int64_t M = mnk[c][0], N = mnk[c][1], K = mnk[c][2];
        for (int v = 0; v < 3; v++) {
            int8_t *q = malloc((size_t)(N * K));
            for (int64_t i = 0; i < N * K; i++) q[i] = (int8_t)((int)(uni() * 255) - 127);
            float *sc = malloc(sizeof(float) * (size_t)N);
            int32_t *zp = calloc((size_t)N, sizeof(int32_t));
            for (int64_t i = 0; i < N; i++) sc[i] = (float)(0.001 + 0.02 * uni()), zp[i] = v == 2 ? (int32_t)(i % 5) - 2 : 0;
            int64_t ws[2] = {N, K}, nq = v == 1 ? 1 : N;
            /* W on the CPU with its parameters, then moved: lithe_tensor_to_backend carries them */
            pair W = {NULL, NULL};
            OK(lithe_tensor_from_data(LITHE_I8, 2, ws, q, &W.c));
            free(q);
            OK(lithe_tensor_set_quant_params(W.c, v == 1 ? -1 : 0, nq, sc, zp));
            OK(lithe_tensor_to_backend(W.c, dev, &W.v));
            free(sc);
            free(zp);
            pair A = pair_rand(2, (int64_t[]){M, K}, -1, 1), b = pair_rand(1, &N, -1, 1),
                 Y = pair_new(LITHE_F32, 2, (int64_t[]){M, N}, NULL), Z = pair_new(LITHE_F32, 2, (int64_t[]){M, N}, NULL);
            lithe__act relu = {.kind = LITHE__ACT_RELU}, gelu = {.kind = LITHE__ACT_GELU};
            const lithe__act *acts[3] = {NULL, &relu, &gelu};
            double tol = 2e-6 * (double)K + 1e-6;
            /* The CPU side is gemm_q8's exact value, the float GEMM on W decoded (the primitive's
             * fallback): the WGSL kernel dequantizes W and keeps A in float32, while the CPU's int8
             * kernels (AVX2, NEON, and SIMD128 in this module) quantize A's rows to 7-bit codes and
             * differ from it by that rounding (tests/test_q8_ukernels.c checks those kernels). */
            lithe_tensor *Wf = NULL;
            OK(lithe__dequantize(W.c, &Wf));
            lithe_status st = lithe__op_gemm_bias_act(cpu, false, true, A.c, Wf, v ? b.c : NULL, acts[v], v ? Z.c : NULL, Y.c);
            lithe_tensor_release(Wf);
            BOTH(st, lithe__op_gemm_q8(dev, A.v, W.v, v ? b.v : NULL, acts[v], v ? Z.v : NULL, Y.v));
            snprintf(w, sizeof w, "gemm_q8 Y %lldx%lldx%lld case %d", (long long)M, (long long)N, (long long)K, v);
            expect_pair(w, Y, tol, 1e-5);
            if (v) {
                snprintf(w, sizeof w, "gemm_q8 Z %lldx%lldx%lld case %d", (long long)M, (long long)N, (long long)K, v);
                expect_pair(w, Z, tol, 1e-5);
            }
            pair_free(W), pair_free(A), pair_free(b), pair_free(Y), pair_free(Z);
        }
    }
    /* an int8 tensor without quantization parameters: refused with a clear error */
    pair W = pair_new(LITHE_I8, 2, (int64_t[]){2, 3}, NULL);
    pair A = pair_rand(2, (int64_t[]){1, 3}, -1, 1), Y = pair_new(LITHE_F32, 2, (int64_t[]){1, 2}, NULL);
    lithe_status st = lithe__op_gemm_q8(dev, A.v, W.v, NULL, NULL, NULL, Y.v);
    if (st != LITHE_ERR_DTYPE || !strstr(lithe_last_error(), "quantization"))
        FAIL("gemm_q8 without quantization parameters: got %s: %s", lithe_status_str(st), lithe_last_error());
    pair_free(W), pair_free(A), pair_free(Y);
}

EXPORT int wgt_rest_primitives(void) {
    if (wgt_begin()) return 1;
    t_dropout();
    t_maxout();
    t_ids();
    t_seq_sparse_strings();
    t_recurrent();
    t_gemm_q8();
    return failures;
}

/* ---- whole models: the same tree built twice with one seed, one moved to WebGPU ---- */

typedef lithe_status (*build_fn)(lithe_model **out);
typedef lithe_value *(*input_fn)(lithe_backend *be); /* the model's input with its data on `be` (lengths on the host) */

static lithe_tensor *tensor_on(lithe_backend *be, lithe_dtype dt, int ndim, const int64_t *shape, const void *data) {
    lithe_tensor *t = NULL;
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    if (lithe_tensor_new(be, dt, ndim, shape, &t) || lithe_tensor_write(t, data, (size_t)n * lithe_dtype_size(dt)))
        FAIL("tensor_on: %s", lithe_last_error());
    return t;
}
static lithe_value *wrap(lithe_tensor *t) {
    lithe_value *v = NULL;
    if (lithe_value_tensor(t, &v)) FAIL("wrap: %s", lithe_last_error());
    lithe_tensor_release(t);
    return v;
}
static float *rand_floats(uint64_t seed, int64_t n, double lo, double hi) {
    float *x = malloc(sizeof(float) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) x[i] = (float)(lo + (hi - lo) * (double)(lithe__splitmix64(&seed) >> 11) * 0x1p-53);
    return x;
}

/* A gradient for Y (its data's shape, the same kind and fields): fixed values from `seed`. */
static lithe_value *grad_like(const lithe_value *Y, lithe_backend *be, uint64_t seed) {
    lithe_tensor *y = lithe_value_get_tensor(Y);
    float *r = rand_floats(seed, lithe_tensor_numel(y), -0.1, 0.1);
    lithe_tensor *d = tensor_on(be, LITHE_F32, lithe_tensor_ndim(y), lithe_tensor_shape(y), r);
    free(r);
    lithe_value *v = NULL;
    lithe_status s = LITHE_OK;
    switch (lithe_value_kind_of(Y)) {
    case LITHE_VALUE_RAGGED: s = lithe_value_ragged(d, lithe_value_field(Y, "lengths"), &v); break;
    case LITHE_VALUE_PADDED:
        s = lithe_value_padded(d, lithe_value_field(Y, "size_at_t"), lithe_value_field(Y, "lengths"),
                               lithe_value_field(Y, "indices"), &v);
        break;
    default: s = lithe_value_tensor(d, &v); break;
    }
    if (s != LITHE_OK) FAIL("grad_like: %s", lithe_last_error());
    lithe_tensor_release(d);
    return v;
}

static void expect_outputs(const char *what, const lithe_value *a, const lithe_value *b, double atol, double rtol) {
    expect_pair(what, (pair){lithe_value_get_tensor(a), lithe_value_get_tensor(b)}, atol, rtol);
}

/* Predictions, ten Adam steps (forward, a fixed gradient of the output, backward, finish_update;
 * dropout masks drawn on each backend from the same Philox stream), predictions and every param. */
static void run_model(const char *name, build_fn build, input_fn input) {
    lithe_model *mc = NULL, *mv = NULL;
    lithe_value *Xc = NULL, *Xv = NULL, *Pc = NULL, *Pv = NULL;
    lithe_optimizer *oc = NULL, *ov = NULL;
    char what[160];
    OK(build(&mc));
    OK(build(&mv));
    OK(lithe_model_set_seed(mc, 7));
    OK(lithe_model_set_seed(mv, 7));
    Xc = input(cpu);
    Xv = input(dev);
    OK(lithe_model_initialize(mc, Xc, NULL));
    OK(lithe_model_initialize(mv, Xc, NULL)); /* initialized on the CPU, then moved */
    OK(lithe_model_to_backend(mv, dev));
    OK(lithe_model_predict(mc, Xc, &Pc));
    OK(lithe_model_predict(mv, Xv, &Pv));
    snprintf(what, sizeof what, "%s: predictions", name);
    expect_outputs(what, Pc, Pv, 1e-5, 1e-4);
    lithe_value_release(Pc);
    lithe_value_release(Pv);
    lithe_optimizer_opts oo = lithe_adam_defaults();
    oo.learn_rate = 0.01;
    OK(lithe_optimizer_new(&oo, &oc));
    OK(lithe_optimizer_new(&oo, &ov));
    for (int step = 0; step < 10; step++) {
        lithe_model *ms[2] = {mc, mv};
        lithe_value *Xs[2] = {Xc, Xv};
        lithe_optimizer *os[2] = {oc, ov};
        lithe_backend *bs[2] = {cpu, dev};
        for (int side = 0; side < 2; side++) {
            lithe_value *Y = NULL, *dY = NULL, *dX = NULL;
            lithe_backprop *bp = NULL;
            lithe_status s = lithe_model_begin_update(ms[side], Xs[side], &Y, &bp);
            if (s == LITHE_OK) dY = grad_like(Y, bs[side], 1000u + (uint64_t)step);
            if (s == LITHE_OK && dY) s = lithe_backprop_run(bp, dY, &dX);
            if (s == LITHE_OK) s = lithe_model_finish_update(ms[side], os[side]);
            lithe_value_release(dX);
            lithe_value_release(dY);
            lithe_value_release(Y);
            lithe_backprop_free(bp);
            if (s != LITHE_OK) {
                FAIL("%s: step %d on %s: %s: %s", name, step, side ? "webgpu" : "cpu", lithe_status_str(s), lithe_last_error());
                goto done;
            }
        }
    }
    if (lithe_model_predict(mc, Xc, &Pc) || lithe_model_predict(mv, Xv, &Pv)) {
        FAIL("%s: predict after training: %s", name, lithe_last_error());
        goto done;
    }
    snprintf(what, sizeof what, "%s: predictions after 10 Adam steps", name);
    expect_outputs(what, Pc, Pv, 1e-4, 1e-3);
    lithe_value_release(Pc);
    lithe_value_release(Pv);
    lithe_model *nc[64], *nv[64];
    size_t n1 = 0, n2 = 0, checked = 0;
    if (lithe_model_walk(mc, nc, 64, &n1) || lithe_model_walk(mv, nv, 64, &n2) || n1 != n2) {
        FAIL("%s: walk: %s", name, lithe_last_error());
        goto done;
    }
    for (size_t i = 0; i < n1 && i < 64; i++)
        for (size_t p = 0; p < lithe_model_n_params(nc[i]); p++) {
            const char *pn = lithe_model_param_name(nc[i], p);
            pair t = {NULL, NULL};
            if (lithe_model_get_param(nc[i], pn, &t.c) != LITHE_OK || !t.c) continue;
            if (lithe_model_get_param(nv[i], pn, &t.v) != LITHE_OK || lithe_tensor_backend(t.v) != dev) {
                FAIL("%s: param %s is not on webgpu", name, pn);
                continue;
            }
            snprintf(what, sizeof what, "%s: node %zu (%s) param %s after 10 Adam steps", name, i, lithe_model_name(nc[i]), pn);
            expect_pair(what, t, 2e-4, 2e-3);
            checked++;
        }
    printf("%s: %zu params match after 10 Adam steps\n", name, checked);
    if (!checked) FAIL("%s: no params compared", name);
done:
    lithe_optimizer_free(oc);
    lithe_optimizer_free(ov);
    lithe_value_release(Xc);
    lithe_value_release(Xv);
    lithe_model_free(mc);
    lithe_model_free(mv);
}

static lithe_status chain_of(int n, lithe_model **l, lithe_status s, lithe_model **out) {
    if (s != LITHE_OK) {
        for (int i = 0; i < n; i++) lithe_model_free(l[i]);
        return s;
    }
    return lithe_chain(n, l, out);
}

/* 1. A Thinc-style text model: HashEmbed over uint64 ids >> Maxout (3 pieces) with dropout >> Softmax */
static lithe_status build_text(lithe_model **out) {
    lithe_model *l[3] = {NULL, NULL, NULL};
    lithe_status s = lithe_hash_embed(&(lithe_embed_opts){.nO = 24, .nV = 97, .has_seed = true, .seed = 5}, &l[0]);
    if (s == LITHE_OK) s = lithe_dense("Maxout.v1", &(lithe_dense_opts){.nO = 16, .nP = 3, .dropout = 0.2f}, &l[1]);
    if (s == LITHE_OK) s = lithe_softmax(&(lithe_softmax_opts){.nO = 5}, &l[2]);
    return chain_of(3, l, s, out);
}
static lithe_value *input_text(lithe_backend *be) {
    uint64_t ids[50], seed = 99;
    for (int i = 0; i < 50; i++) ids[i] = lithe__splitmix64(&seed) % 1000;
    return wrap(tensor_on(be, LITHE_U64, 1, (int64_t[]){50}, ids));
}

/* 2. A BiLSTM tagger: two bidirectional LSTM layers with dropout over Padded (T, B, nI) >>
 * with_array2d(Softmax) */
static lithe_status build_bilstm(lithe_model **out) {
    lithe_model *l[2] = {NULL, NULL}, *sm = NULL;
    lithe_status s = lithe_lstm(&(lithe_lstm_opts){.nO = 8, .nI = 6, .bi = true, .depth = 2, .dropout = 0.1f}, &l[0]);
    if (s == LITHE_OK) s = lithe_softmax(&(lithe_softmax_opts){.nO = 5, .nI = 8}, &sm);
    if (s == LITHE_OK) s = lithe_with_array2d(sm, 0, &l[1]);
    else lithe_model_free(sm);
    return chain_of(2, l, s, out);
}
static lithe_value *input_bilstm(lithe_backend *be) {
    static const int32_t sat[5] = {4, 4, 3, 1, 1}, lens[4] = {5, 3, 3, 2}, idx[4] = {2, 0, 3, 1};
    float *x = rand_floats(5, 5 * 4 * 6, -1, 1);
    lithe_tensor *d = tensor_on(be, LITHE_F32, 3, (int64_t[]){5, 4, 6}, x), *t1 = NULL, *t2 = NULL, *t3 = NULL;
    free(x);
    lithe_value *v = NULL;
    if (lithe_tensor_from_data(LITHE_I32, 1, (int64_t[]){5}, sat, &t1) ||
        lithe_tensor_from_data(LITHE_I32, 1, (int64_t[]){4}, lens, &t2) ||
        lithe_tensor_from_data(LITHE_I32, 1, (int64_t[]){4}, idx, &t3) || lithe_value_padded(d, t1, t2, t3, &v))
        FAIL("input_bilstm: %s", lithe_last_error());
    lithe_tensor_release(d), lithe_tensor_release(t1), lithe_tensor_release(t2), lithe_tensor_release(t3);
    return v;
}

/* 3. Windows and attention over Ragged rows: expand_window(1) (seq2col) >> with_array(Relu with
 * dropout) >> ParametricAttention >> with_array(Softmax) */
static lithe_status build_attention(lithe_model **out) {
    lithe_model *l[4] = {NULL, NULL, NULL, NULL}, *relu = NULL, *sm = NULL;
    lithe_status s = lithe_expand_window(1, &l[0]);
    if (s == LITHE_OK) s = lithe_relu(&(lithe_dense_opts){.nO = 12, .nI = 18, .dropout = 0.1f}, &relu);
    if (s == LITHE_OK) s = lithe_with_array(relu, 0, &l[1]);
    if (s == LITHE_OK) s = lithe_parametric_attention(12, &l[2]);
    if (s == LITHE_OK) s = lithe_softmax(&(lithe_softmax_opts){.nO = 5, .nI = 12}, &sm);
    if (s == LITHE_OK) s = lithe_with_array(sm, 0, &l[3]);
    return chain_of(4, l, s, out);
}
static lithe_value *input_attention(lithe_backend *be) {
    static const int32_t lens[6] = {3, 0, 1, 7, 2, 5};
    float *x = rand_floats(6, 18 * 6, -1, 1);
    lithe_tensor *d = tensor_on(be, LITHE_F32, 2, (int64_t[]){18, 6}, x), *L = NULL;
    free(x);
    lithe_value *v = NULL;
    if (lithe_tensor_from_data(LITHE_I32, 1, (int64_t[]){6}, lens, &L) || lithe_value_ragged(d, L, &v))
        FAIL("input_attention: %s", lithe_last_error());
    lithe_tensor_release(d), lithe_tensor_release(L);
    return v;
}

/* 4. A hashed-features classifier: SparseLinear (keys, values, lengths) >> Softmax */
static lithe_status build_sparse(lithe_model **out) {
    lithe_model *l[2] = {NULL, NULL};
    lithe_status s = lithe_sparse_linear(&(lithe_sparse_linear_opts){.nO = 6, .length = 128}, &l[0]);
    if (s == LITHE_OK) s = lithe_softmax(&(lithe_softmax_opts){.nO = 4, .nI = 6}, &l[1]);
    return chain_of(2, l, s, out);
}
static lithe_value *input_sparse(lithe_backend *be) {
    static const int32_t lens[5] = {4, 1, 0, 6, 3};
    uint64_t keys[14], seed = 77;
    for (int i = 0; i < 14; i++) keys[i] = i % 4 ? lithe__splitmix64(&seed) : (uint64_t)i;
    float *vals = rand_floats(8, 14, 0.5, 1.5);
    lithe_tensor *L = NULL;
    if (lithe_tensor_from_data(LITHE_I32, 1, (int64_t[]){5}, lens, &L)) FAIL("input_sparse: %s", lithe_last_error());
    lithe_value *items[3] = {wrap(tensor_on(be, LITHE_U64, 1, (int64_t[]){14}, keys)),
                             wrap(tensor_on(be, LITHE_F32, 1, (int64_t[]){14}, vals)), wrap(L)};
    free(vals);
    lithe_value *v = NULL;
    if (lithe_value_tuple(3, items, &v)) FAIL("input_sparse: %s", lithe_last_error());
    for (int i = 0; i < 3; i++) lithe_value_release(items[i]);
    return v;
}

/* 5. siamese(Relu, CauchySimilarity) over a pair of (B, nI) arrays */
static lithe_status build_siamese(lithe_model **out) {
    lithe_model *a = NULL, *b = NULL;
    lithe_status s = lithe_relu(&(lithe_dense_opts){.nO = 7, .nI = 9}, &a);
    if (s == LITHE_OK) s = lithe_cauchy_similarity(7, &b);
    if (s != LITHE_OK) {
        lithe_model_free(a);
        lithe_model_free(b);
        return s;
    }
    return lithe_siamese(a, b, out);
}
static lithe_value *input_siamese(lithe_backend *be) {
    float *x1 = rand_floats(11, 13 * 9, -1, 1), *x2 = rand_floats(12, 13 * 9, -1, 1);
    lithe_value *items[2] = {wrap(tensor_on(be, LITHE_F32, 2, (int64_t[]){13, 9}, x1)),
                             wrap(tensor_on(be, LITHE_F32, 2, (int64_t[]){13, 9}, x2))};
    free(x1);
    free(x2);
    lithe_value *v = NULL;
    if (lithe_value_tuple(2, items, &v)) FAIL("input_siamese: %s", lithe_last_error());
    lithe_value_release(items[0]);
    lithe_value_release(items[1]);
    return v;
}

EXPORT int wgt_rest_models(void) {
    if (wgt_begin()) return 1;
    run_model("HashEmbed>>Maxout(dropout)>>Softmax", build_text, input_text);
    run_model("BiLSTM(2 layers, dropout)>>with_array2d(Softmax)", build_bilstm, input_bilstm);
    run_model("expand_window>>Relu(dropout)>>ParametricAttention>>Softmax", build_attention, input_attention);
    run_model("SparseLinear>>Softmax", build_sparse, input_sparse);
    run_model("siamese(Relu, CauchySimilarity)", build_siamese, input_siamese);
    return failures;
}
