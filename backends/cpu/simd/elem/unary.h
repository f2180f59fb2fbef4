/* Part of simd/elem.c, compiled once per ISA with it (no standalone header): scatter_add_rows, unary and its backward, maxout. */

static void K(scatter_add_rows)(int64_t B, int64_t n, int64_t ldx, float *table, const int32_t *ids32,
                                     const uint64_t *ids64, const float *X) {
    for (int64_t i = 0; i < B; i++) {
        int64_t id = ids32 ? (int64_t)ids32[i] : (int64_t)ids64[i];
        float *row = table + id * ldx;
        const float *x = X + i * ldx;
        int64_t j = 0;
        for (; j + VW <= n; j += VW) st(row + j, ld(row + j) + ld(x + j));
        for (; j < n; j++) row[j] += x[j];
    }
}

static inline vf unary1(int op, vf x) {
    switch (op) {
    case LITHE__UN_EXP: return vexp(x);
    case LITHE__UN_SQRT: return vsqrt(x);
    case LITHE__UN_NEG: return -x;
    case LITHE__UN_ABS: return vabs(x);
    default: return 1.0f / x;
    }
}

static __attribute__((noinline)) void unary_vec(int op, int64_t n, const float *X, float *Y) {
    for (int64_t i = 0; i + VW <= n; i += VW) st(Y + i, unary1(op, ld(X + i)));
}

/* unary and unary_backward: the partial last vector through the same loop, zero-padded (as act) */
static void K(unary)(int op, int64_t n, const float *X, float *Y) {
    if (op == LITHE__UN_LOG || op == LITHE__UN_ERF || op >= LITHE__UN_FLOOR) { /* issue 23's ops: the twin */
        lithe_f32_unary__scalar(op, n, X, Y);
        return;
    }
    const int64_t nv = n - n % VW;
    unary_vec(op, nv, X, Y);
    if (nv < n) {
        float t[VW] = {0};
        memcpy(t, X + nv, (size_t)(n - nv) * sizeof(float));
        unary_vec(op, VW, t, t);
        memcpy(Y + nv, t, (size_t)(n - nv) * sizeof(float));
    }
}

static inline vf unary_bwd1(int op, vf x, vf y, vf g, vf d) {
    switch (op) {
    case LITHE__UN_EXP: return d + g * y;
    case LITHE__UN_LOG: return d + g / x;
    case LITHE__UN_SQRT: return d + g * 0.5f / y;
    case LITHE__UN_NEG: return d - g;
    case LITHE__UN_ERF: return d + g * 1.12837916709551257f * vexp(-x * x);
    case LITHE__UN_ABS: return d + sel(x > 0.0f, g, sel(x < 0.0f, -g, splat(0.0f)));
    default: return d - g * y * y;
    }
}

static __attribute__((noinline)) void unary_bwd_vec(int op, int64_t n, const float *X, const float *Y,
                                                    const float *dY, float *dX) {
    for (int64_t i = 0; i + VW <= n; i += VW)
        st(dX + i, unary_bwd1(op, ld(X + i), ld(Y + i), ld(dY + i), ld(dX + i)));
}

static void K(unary_backward)(int op, int64_t n, const float *X, const float *Y, const float *dY, float *dX) {
    if (op >= LITHE__UN_FLOOR) { /* issue 23's ops: the twin */
        lithe_f32_unary_backward__scalar(op, n, X, Y, dY, dX);
        return;
    }
    const int64_t nv = n - n % VW;
    unary_bwd_vec(op, nv, X, Y, dY, dX);
    if (nv < n) {
        const size_t m = (size_t)(n - nv) * sizeof(float);
        float x[VW] = {0}, y[VW] = {0}, g[VW] = {0}, d[VW] = {0};
        memcpy(x, X + nv, m);
        memcpy(y, Y + nv, m);
        memcpy(g, dY + nv, m);
        memcpy(d, dX + nv, m);
        unary_bwd_vec(op, VW, x, y, g, d);
        memcpy(dX + nv, d, m);
    }
}

/* Maxout rows of P pieces: Thinc's argmax rule (lithe__maxout_row, the twin's); vectorised across
 * rows for P <= 4 by reading each piece with stride P. */
static void K(maxout)(int64_t R, int64_t P, const float *X, float *Y, int32_t *which) {
    int64_t r = 0;
    if (P >= 2 && P <= 4) {
        for (; r + VW <= R; r += VW) {
            vf best = splat(0.0f), v = splat(0.0f);
            vi arg = splati(0);
            for (int l = 0; l < VW; l++) best[l] = X[(r + l) * P];
            if (P == 3) { /* Thinc's unrolled order, as lithe__maxout_row: (x1, x2), then x0 */
                vf v1 = splat(0.0f);
                for (int l = 0; l < VW; l++) v1[l] = X[(r + l) * P + 1], v[l] = X[(r + l) * P + 2];
                vi gt = v > v1;
                vf m = sel(gt, v, v1);
                vi am = (gt & splati(2)) | (~gt & splati(1)), keep = m > best;
                best = sel(keep, m, best);
                arg = keep & am;
                st(Y + r, best);
                memcpy(which + r, &arg, sizeof arg);
                continue;
            }
            for (int64_t p = 1; p < P; p++) {
                for (int l = 0; l < VW; l++) v[l] = X[(r + l) * P + p];
                vi gt = v > best;
                best = sel(gt, v, best);
                arg = (gt & splati((int32_t)p)) | (~gt & arg);
            }
            st(Y + r, best);
            memcpy(which + r, &arg, sizeof arg);
        }
    }
    for (; r < R; r++) {
        int32_t b = lithe__maxout_row(P, X + r * P);
        Y[r] = X[r * P + b];
        which[r] = b;
    }
}
