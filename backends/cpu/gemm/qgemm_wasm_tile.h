/* Part of qgemm_wasmsimd.c (no standalone header): the relaxed tile's steps and tile over its DOT /
 * LOAD_A / LOAD_W, each name through Q8W() (the SIMD128 tile it also made is now the packed one). */
typedef __typeof__(LOAD_A((const uint8_t *)0)) Q8W(a_vec);
typedef __typeof__(LOAD_W((const int8_t *)0)) Q8W(w_vec);

/* one step of 16 bytes: rows a, a + lda, ... against the columns p0, p1 */
INL void Q8W(step_4x2)(v128_t *c, const uint8_t *a, size_t lda, const int8_t *p0, const int8_t *p1) {
    Q8W(w_vec) w0 = LOAD_W(p0), w1 = LOAD_W(p1);
    Q8W(a_vec) a0 = LOAD_A(a), a1 = LOAD_A(a + lda);
    DOT(c[0], a0, w0);
    DOT(c[1], a0, w1);
    DOT(c[2], a1, w0);
    DOT(c[3], a1, w1);
    a0 = LOAD_A(a + 2 * lda), a1 = LOAD_A(a + 3 * lda);
    DOT(c[4], a0, w0);
    DOT(c[5], a0, w1);
    DOT(c[6], a1, w0);
    DOT(c[7], a1, w1);
}
INL void Q8W(step_1x2)(v128_t *c, const uint8_t *a, const int8_t *p0, const int8_t *p1) {
    Q8W(a_vec) av = LOAD_A(a);
    Q8W(w_vec) w0 = LOAD_W(p0), w1 = LOAD_W(p1);
    DOT(c[0], av, w0);
    DOT(c[1], av, w1);
}

static void Q8W(tile_wasm)(size_t mr, size_t nr, size_t kw, const uint8_t *a, size_t lda, const int8_t *w, size_t ldw,
                      int32_t *acc) {
    const size_t kfull = kw / 16 * 16;
    const int8_t *w1 = w + (nr == 2 ? ldw : 0); /* (nr 1: read as column 0, never stored) */
    int8_t tail[LITHE__Q8_NR][16];
    if (kfull < kw) { /* the last partial chunk of w's columns, zero-padded */
        memset(tail, 0, sizeof tail);
        memcpy(tail[0], w + kfull, kw - kfull);
        memcpy(tail[1], w1 + kfull, kw - kfull);
    }
    if (mr == 4 && nr == 2) {
        v128_t c[8];
        for (int e = 0; e < 8; e++) c[e] = wasm_i32x4_splat(0);
        size_t k = 0;
        for (; k < kfull; k += 16) Q8W(step_4x2)(c, a + k, lda, w + k, w1 + k);
        if (k < kw) Q8W(step_4x2)(c, a + k, lda, tail[0], tail[1]);
        for (int e = 0; e < 8; e++) acc[e] = hsum(c[e]);
        return;
    }
    for (size_t i = 0; i < mr; i++) { /* edge tiles (batch 1: every tile): a row at a time */
        const uint8_t *ai = a + i * lda;
        v128_t c[2] = {wasm_i32x4_splat(0), wasm_i32x4_splat(0)};
        size_t k = 0; /* (nr 1: column 0 twice, the second never stored) */
        for (; k < kfull; k += 16) Q8W(step_1x2)(c, ai + k, w + k, w1 + k);
        if (k < kw) Q8W(step_1x2)(c, ai + k, tail[0], tail[1]);
        if (nr == 2) acc[i * LITHE__Q8_NR + 1] = hsum(c[1]);
        acc[i * LITHE__Q8_NR] = hsum(c[0]);
    }
}
