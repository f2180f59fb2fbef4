/* Device conformance (cases.h), ids and sequences: gathers, scatter-adds, hashes, seq2col,
 * SparseLinear, string hashes and the Ragged reductions (lengths, strings and offsets live on the host). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cases.h"

/* the largest sum of |terms| that SparseLinear's backward adds into one weight slot (with the initial
   |weight|'s 1): |values| and |dY| through the CPU's kernel into ones */
static double sparse_abs_terms(lithe_backend *host, lithe_tensor *K, lithe_tensor *V, lithe_tensor *L,
                               lithe_tensor *dY, int64_t length, bool v1, int64_t nO) {
    int64_t nV = lithe_tensor_numel(V), nY = lithe_tensor_numel(dY), nW = nO * length;
    float *v = malloc(sizeof(float) * (size_t)nV), *y = malloc(sizeof(float) * (size_t)nY),
          *w = malloc(sizeof(float) * (size_t)nW);
    double most = 0;
    lithe_tensor *Va = NULL, *Ya = NULL, *Wa = NULL;
    if (v && y && w && !lithe_tensor_read(V, v, sizeof(float) * (size_t)nV) &&
        !lithe_tensor_read(dY, y, sizeof(float) * (size_t)nY)) {
        for (int64_t i = 0; i < nV; i++) v[i] = fabsf(v[i]);
        for (int64_t i = 0; i < nY; i++) y[i] = fabsf(y[i]);
        for (int64_t i = 0; i < nW; i++) w[i] = 1.0f;
        if (!lithe_tensor_from_data(LITHE_F32, 1, &nV, v, &Va) &&
            !lithe_tensor_from_data(LITHE_F32, 2, (int64_t[]){nY / nO, nO}, y, &Ya) &&
            !lithe_tensor_from_data(LITHE_F32, 1, &nW, w, &Wa) &&
            !lithe__op_sparse_linear_backward(host, K, Va, L, Ya, length, v1, Wa) &&
            !lithe_tensor_read(Wa, w, sizeof(float) * (size_t)nW))
            for (int64_t i = 0; i < nW; i++) most = fmax(most, w[i]);
    }
    if (!(most > 0)) FAIL("sparse_abs_terms: %s", lithe_last_error());
    lithe_tensor_release(Va), lithe_tensor_release(Ya), lithe_tensor_release(Wa);
    free(v), free(y), free(w);
    return most;
}

void dc_ids(void) {
    enum { V = 50, N = 67, B = 300 };
    uint64_t u[B];
    int32_t i32[B];
    for (int i = 0; i < B; i++) {
        u[i] = i < 8 ? (uint64_t)i * 0x9E3779B97F4A7C15ull : (uint64_t)(uni() * V);
        if (i >= 8) i32[i] = (int32_t)u[i];
        else i32[i] = (int32_t)(u[i] % V), u[i] = (uint64_t)i32[i];
    }
    pair ids64 = pair_new(LITHE_U64, 1, (int64_t[]){B}, u), ids32 = pair_new(LITHE_I32, 1, (int64_t[]){B}, i32);
    for (int w = 0; w < 2; w++) {
        pair ids = w ? ids64 : ids32;
        pair T = pair_rand(2, (int64_t[]){V, N}, -1, 1), Y = pair_new(LITHE_F32, 2, (int64_t[]){B, N}, NULL),
             X = pair_rand(2, (int64_t[]){B, N}, -1, 1);
        OK(lithe__op_gather_rows(cpu, T.c, ids.c, Y.c));
        OK(lithe__op_gather_rows(dev, T.v, ids.v, Y.v));
        expect_pair("gather_rows", Y, 0, 0);
        if (devt_is("vulkan")) { /* host ids handed to the device: refused, not a crash */
            CHECK_EQ(lithe__op_gather_rows(dev, T.v, ids.c, Y.v), LITHE_ERR_INVALID_ARG);
            CHECK_TRUE(strstr(lithe_last_error(), "lithe_tensor_to_backend"));
        }
        OK(lithe__op_scatter_add_rows(cpu, T.c, ids.c, X.c));
        OK(lithe__op_scatter_add_rows(dev, T.v, ids.v, X.v));
        expect_pair("scatter_add_rows (duplicates in the CPU's order)", T, 0, 0);
        pair_free(T);
        pair_free(Y);
        pair_free(X);
    }
    /* hashes of arbitrary 64-bit ids */
    uint64_t h[B];
    for (int i = 0; i < B; i++) h[i] = lithe__splitmix64(&rng_state);
    pair H = pair_new(LITHE_U64, 1, (int64_t[]){B}, h), K = pair_new(LITHE_U32, 2, (int64_t[]){B, 4}, NULL);
    static const uint32_t seeds[] = {0, 1, 0xDEADBEEF};
    for (int s = 0; s < 3; s++) {
        OK(lithe__op_hash_ids(cpu, H.c, seeds[s], K.c));
        OK(lithe__op_hash_ids(dev, H.v, seeds[s], K.v));
        expect_pair("hash_ids", K, 0, 0);
    }
    pair_free(H);
    pair_free(K);
    pair_free(ids64);
    pair_free(ids32);
}

void dc_seq_sparse_strings(void) {
    static const int32_t lens_a[] = {3, 0, 1, 7, 2, 0, 5}, lens_b[] = {1, 4, 300, 2};
    const int32_t *lens[] = {lens_a, lens_b};
    const int64_t nb[] = {7, 4};
    for (int c = 0; c < 2; c++) {
        int64_t B = nb[c], N = 0, O = c ? 33 : 5;
        for (int64_t b = 0; b < B; b++) N += lens[c][b];
        lithe_tensor *L = NULL;
        OK(lithe_tensor_from_data(LITHE_I32, 1, &B, lens[c], &L));
        /* (the Ragged reductions over these lengths: dc_reductions) */
        pair X = pair_rand(2, (int64_t[]){N, O}, -2, 2), dX = pair_rand(2, (int64_t[]){N, O}, -1, 1);
        for (int64_t nW = 0; nW < 3; nW++) {
            int64_t F = 2 * nW + 1;
            pair S = pair_new(LITHE_F32, 2, (int64_t[]){N, F * O}, NULL), dS = pair_rand(2, (int64_t[]){N, F * O}, -1, 1);
            OK(lithe__op_seq2col(cpu, X.c, nW, L, S.c));
            OK(lithe__op_seq2col(dev, X.v, nW, L, S.v));
            expect_pair("seq2col", S, 0, 0);
            OK(lithe__op_seq2col_backward(cpu, dS.c, nW, L, dX.c));
            OK(lithe__op_seq2col_backward(dev, dS.v, nW, L, dX.v));
            expect_pair("seq2col backward", dX, 0, 0);
            pair_free(S);
            pair_free(dS);
        }
        /* SparseLinear: keys and values per row, v1 and v2 */
        uint64_t *keys = malloc(sizeof(uint64_t) * (size_t)(N + 1));
        for (int64_t i = 0; i < N; i++) keys[i] = i % 3 ? lithe__splitmix64(&rng_state) : (uint64_t)(i % 7);
        pair K = pair_new(LITHE_U64, 1, &N, keys), V = pair_rand(1, &N, -1, 1);
        free(keys);
        int64_t nO = 6, length = 64;
        for (int v1 = 0; v1 < 2; v1++) {
            pair SW = pair_rand(1, (int64_t[]){nO * length}, -1, 1), SY = pair_rand(2, (int64_t[]){B, nO}, -1, 1),
                 SdY = pair_rand(2, (int64_t[]){B, nO}, -1, 1);
            OK(lithe__op_sparse_linear(cpu, K.c, V.c, L, SW.c, length, v1, SY.c));
            OK(lithe__op_sparse_linear(dev, K.v, V.v, L, SW.v, length, v1, SY.v));
            expect_pair(v1 ? "sparse_linear v1" : "sparse_linear v2", SY, 0, 0);
            OK(lithe__op_sparse_linear_backward(cpu, K.c, V.c, L, SdY.c, length, v1, SW.c));
            OK(lithe__op_sparse_linear_backward(dev, K.v, V.v, L, SdY.v, length, v1, SW.v));
            /* colliding hashes meet in the device's atomic adds, in no fixed order: on a real GPU a slot's
               sum differs from the CPU's by rounding, up to eps-scale of the sum of |terms| reaching it
               (cancellation left one at 1.1e-6 of -0.016 on an H200; the emulation runs in order) */
            expect_pair(v1 ? "sparse_linear_backward v1" : "sparse_linear_backward v2", SW,
                        1e-6 * sparse_abs_terms(cpu, K.c, V.c, L, SdY.c, length, v1, nO), 0);
            pair_free(SW);
            pair_free(SY);
            pair_free(SdY);
        }
        pair_free(K);
        pair_free(V);
        lithe_tensor_release(L);
        pair_free(X);
        pair_free(dX);
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
        OK(lithe__op_hash_strings(cpu, bytes, offsets, seed * 77u, H.c));
        OK(lithe__op_hash_strings(dev, bytes, offsets, seed * 77u, H.v));
        expect_pair("hash_strings", H, 0, 0);
    }
    pair_free(H);
    lithe_tensor_release(bytes);
    lithe_tensor_release(offsets);
}

void dc_reductions(void) {
    static const int32_t lens_a[] = {3, 0, 1, 7, 2, 0, 5}, lens_b[] = {1, 4, 300, 2};
    const int32_t *lens[] = {lens_a, lens_b};
    const int64_t nb[] = {7, 4};
    for (int c = 0; c < 2; c++) {
        int64_t B = nb[c], N = 0, O = c ? 33 : 5;
        for (int64_t b = 0; b < B; b++) N += lens[c][b];
        lithe_tensor *L = NULL;
        OK(lithe_tensor_from_data(LITHE_I32, 1, &B, lens[c], &L));
        int64_t xs[2] = {N, O}, ys[2] = {B, O};
        pair X = pair_rand(2, xs, -2, 2), Y = pair_new(LITHE_F32, 2, ys, NULL), dY = pair_rand(2, ys, -1, 1),
             dX = pair_rand(2, xs, -1, 1), W = pair_new(LITHE_I32, 2, ys, NULL);
        for (int mean = 0; mean < 2; mean++) {
            BOTH(lithe__op_reduce_sum(cpu, X.c, L, mean, Y.c), lithe__op_reduce_sum(dev, X.v, L, mean, Y.v));
            expect_pair(mean ? "reduce_mean" : "reduce_sum", Y, 0, 0);
            BOTH(lithe__op_reduce_sum_backward(cpu, dY.c, L, mean, dX.c), lithe__op_reduce_sum_backward(dev, dY.v, L, mean, dX.v));
            expect_pair(mean ? "reduce_mean backward" : "reduce_sum backward", dX, 0, 0);
        }
        if (c == 1) { /* every length >= 1 */
            pair_poke_nan(X, 3 * O + 2);
            BOTH(lithe__op_reduce_max(cpu, X.c, L, Y.c, W.c), lithe__op_reduce_max(dev, X.v, L, Y.v, W.v));
            expect_pair("reduce_max", Y, 0, 0);
            expect_pair("reduce_max which", W, 0, 0);
            BOTH(lithe__op_reduce_max_backward(cpu, dY.c, W.c, L, dX.c), lithe__op_reduce_max_backward(dev, dY.v, W.v, L, dX.v));
            expect_pair("reduce_max backward", dX, 0, 0);
        }
        lithe_tensor_release(L);
        pair_free(X), pair_free(Y), pair_free(dY), pair_free(dX), pair_free(W);
    }
}
