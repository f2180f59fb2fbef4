/* Part of simd/elem.c, compiled once per ISA with it (no standalone header): softmax, log_softmax and layernorm, forward and backward. */

static inline float row_max(int64_t N, const float *x, bool t1, float temperature) {
    vf mv = splat(-INFINITY);
    int64_t j = 0;
    for (; j + VW <= N; j += VW) {
        vf v = t1 ? ld(x + j) : ld(x + j) / temperature;
        mv = sel(v > mv, v, mv);
    }
    float mx = hmax(mv);
    for (; j < N; j++) {
        float v = t1 ? x[j] : x[j] / temperature;
        if (v > mx) mx = v;
    }
    return mx;
}

/* Double-precision row sums are kept in pairs of register-wide double vectors (lo and hi halves of
 * a float vector): no arithmetic on vectors wider than the ISA's registers, which some compilers
 * scalarise. */
typedef struct dpair {
    vdh lo, hi;
} dpair;
static inline dpair dwiden(vf v) { return (dpair){widen_lo(v), widen_hi(v)}; }
static inline vf dnarrow(vdh lo, vdh hi) { /* (in registers on AVX-512 and AVX, as widen_lo / widen_hi) */
#if VB == 64 && defined(__AVX512F__)
    return (vf)_mm512_castpd_ps(_mm512_insertf64x4(_mm512_castps_pd(_mm512_castps256_ps512(_mm512_cvtpd_ps((__m512d)lo))),
                                                   _mm256_castps_pd(_mm512_cvtpd_ps((__m512d)hi)), 1));
#elif VB == 32 && defined(__AVX__)
    return (vf)_mm256_insertf128_ps(_mm256_castps128_ps256(_mm256_cvtpd_ps((__m256d)lo)), _mm256_cvtpd_ps((__m256d)hi), 1);
#else
    vfh l = __builtin_convertvector(lo, vfh), h = __builtin_convertvector(hi, vfh);
    vf v;
    memcpy(&v, &l, sizeof l);
    memcpy((char *)&v + sizeof l, &h, sizeof h);
    return v;
#endif
}
static inline double dsum(vdh lo, vdh hi) { return hsum_dh(lo + hi); }

/* R (<= 4) rows of whole vectors at temperature 1 (attention's 64-wide rows), each row's operations
 * those of the one-row loop below, in its order (the same bits), the rows' interleaved: a row's
 * max, exp, sum and scale are a chain of dependent reductions that one row at a time left partly
 * waiting on latency. */
static inline __attribute__((always_inline)) void softmax_rows(int R, int64_t N, const float *X, float *Y) {
    vf m[4];
    float mx[4], inv[4];
    vdh lo[4], hi[4];
    for (int q = 0; q < R; q++) m[q] = splat(-INFINITY), lo[q] = hi[q] = (vdh){0};
    for (int64_t j = 0; j < N; j += VW)
        for (int q = 0; q < R; q++) {
            vf v = ld(X + q * N + j);
            m[q] = sel(v > m[q], v, m[q]);
        }
    for (int q = 0; q < R; q++) mx[q] = hmax(m[q]);
    for (int64_t j = 0; j < N; j += VW)
        for (int q = 0; q < R; q++) {
            vf e = vexp(ld(X + q * N + j) - mx[q]);
            st(Y + q * N + j, e);
            lo[q] += widen_lo(e);
            hi[q] += widen_hi(e);
        }
    for (int q = 0; q < R; q++) inv[q] = (float)dsum(lo[q], hi[q]);
    for (int64_t j = 0; j < N; j += VW)
        for (int q = 0; q < R; q++) st(Y + q * N + j, ld(Y + q * N + j) / inv[q]);
}

static void K(softmax)(int64_t M, int64_t N, const float *X, float temperature, float *Y) {
    if (N < VW) { /* rows shorter than a vector (a 10-class output): the twin is quicker */
        lithe_f32_softmax__scalar(M, N, X, temperature, Y);
        return;
    }
    bool t1 = temperature == 1.0f;
    int64_t r = 0;
    if (VB >= 32 && t1 && N % VW == 0) /* (not in the 128-bit builds: the npm core's size) */
        for (; r + 4 <= M; r += 4) softmax_rows(4, N, X + r * N, Y + r * N);
    for (; r < M; r++) {
        const float *x = X + r * N;
        float *y = Y + r * N;
        float mx = row_max(N, x, t1, temperature);
        vdh alo = (vdh){0}, ahi = (vdh){0};
        int64_t j = 0;
        for (; j + VW <= N; j += VW) {
            vf v = t1 ? ld(x + j) : ld(x + j) / temperature;
            vf e = vexp(v - mx);
            st(y + j, e);
            alo += widen_lo(e);
            ahi += widen_hi(e);
        }
        if (j < N) {
            int64_t m = N - j;
            vf v = ld_part(x + j, m);
            if (!t1) v = v / temperature;
            float t[VW] = {0};
            st_part(t, vexp(v - mx), m); /* lanes past the row stay 0 in the sum */
            memcpy(y + j, t, (size_t)m * sizeof(float));
            vf e = ld(t);
            alo += widen_lo(e);
            ahi += widen_hi(e);
        }
        float inv = (float)dsum(alo, ahi);
        j = 0;
        for (; j + VW <= N; j += VW) st(y + j, ld(y + j) / inv);
        for (; j < N; j++) y[j] /= inv;
    }
}

static void K(softmax_backward)(int64_t M, int64_t N, const float *Y, const float *dY, float temperature,
                                float *dX) {
    bool t1 = temperature == 1.0f;
    for (int64_t r = 0; r < M; r++) {
        const float *y = Y + r * N, *dy = dY + r * N;
        float *dx = dX + r * N;
        vdh alo = (vdh){0}, ahi = (vdh){0};
        int64_t j = 0;
        for (; j + VW <= N; j += VW) {
            vf g = t1 ? ld(dy + j) : ld(dy + j) / temperature;
            vf yy = ld(y + j);
            alo += widen_lo(yy) * widen_lo(g);
            ahi += widen_hi(yy) * widen_hi(g);
        }
        double s = dsum(alo, ahi);
        for (; j < N; j++) {
            float g = t1 ? dy[j] : dy[j] / temperature;
            s += (double)y[j] * g;
        }
        float sf = (float)s;
        j = 0;
        for (; j + VW <= N; j += VW) {
            vf g = t1 ? ld(dy + j) : ld(dy + j) / temperature;
            vf yy = ld(y + j);
            st(dx + j, yy * g - yy * sf);
        }
        for (; j < N; j++) {
            float g = t1 ? dy[j] : dy[j] / temperature;
            dx[j] = y[j] * g - y[j] * sf;
        }
    }
}

/* The scalar twin sums exp in double; here e^(x - max) is the vector exp in float, summed in
 * double: lse within ~2 ulp of the twin's. */
static void K(log_softmax)(int64_t M, int64_t N, const float *X, float *Y) {
    for (int64_t r = 0; r < M; r++) {
        const float *x = X + r * N;
        float *y = Y + r * N;
        float mx = row_max(N, x, true, 1.0f);
        vdh alo = (vdh){0}, ahi = (vdh){0};
        int64_t j = 0;
        for (; j + VW <= N; j += VW) {
            vf e = vexp(ld(x + j) - mx);
            alo += widen_lo(e);
            ahi += widen_hi(e);
        }
        if (j < N) {
            float t[VW] = {0};
            st_part(t, vexp(ld_part(x + j, N - j) - mx), N - j);
            vf e = ld(t);
            alo += widen_lo(e);
            ahi += widen_hi(e);
        }
        float lse = mx + (float)log(dsum(alo, ahi));
        j = 0;
        for (; j + VW <= N; j += VW) st(y + j, ld(x + j) - lse);
        for (; j < N; j++) y[j] = x[j] - lse;
    }
}

static void K(log_softmax_backward)(int64_t M, int64_t N, const float *Y, const float *dY, float *dX) {
    for (int64_t r = 0; r < M; r++) {
        const float *y = Y + r * N, *g = dY + r * N;
        float *dx = dX + r * N;
        double s = 0.0;
        for (int64_t j = 0; j < N; j++) s += g[j]; /* element order, as the twin */
        float sf = (float)s;
        int64_t j = 0;
        for (; j + VW <= N; j += VW) st(dx + j, ld(dx + j) + (ld(g + j) - vexp(ld(y + j)) * sf));
        if (j < N) {
            int64_t m = N - j;
            st_part(dx + j, ld_part(dx + j, m) + (ld_part(g + j, m) - vexp(ld_part(y + j, m)) * sf), m);
        }
    }
}

/* LayerNorm of R (<= 4) rows of whole vectors at once, each row's operations those of the one-row
 * loop below in its order (the same bits), the rows' interleaved: a row is a chain of dependent
 * reductions (the mean, then the variance, then sqrt and a division) that one row at a time left
 * waiting on latency. The transformer's (512, 128), one thread, Zen 5, minimum of 300: 28.7 us one
 * row at a time, 21.4 two, 17.7 four. */
static inline __attribute__((always_inline)) void ln_rows(int R, int64_t N, const float *X, const float *G, const float *b,
                                                          float eps, float *Y, float *mean, float *inv_std) {
    vdh lo[4], hi[4];
    double mu[4], is[4];
    for (int q = 0; q < R; q++) lo[q] = hi[q] = (vdh){0};
    for (int64_t j = 0; j < N; j += VW)
        for (int q = 0; q < R; q++) {
            vf v = ld(X + q * N + j);
            lo[q] += widen_lo(v);
            hi[q] += widen_hi(v);
        }
    for (int q = 0; q < R; q++) {
        mu[q] = dsum(lo[q], hi[q]) / (double)N;
        lo[q] = hi[q] = (vdh){0};
    }
    for (int64_t j = 0; j < N; j += VW)
        for (int q = 0; q < R; q++) {
            vf v = ld(X + q * N + j);
            vdh dl = widen_lo(v) - mu[q], dh = widen_hi(v) - mu[q];
            lo[q] += dl * dl;
            hi[q] += dh * dh;
        }
    for (int q = 0; q < R; q++) {
        double var = dsum(lo[q], hi[q]) / (double)N;
        is[q] = 1.0 / sqrt(var + (double)eps);
        mean[q] = (float)mu[q];
        inv_std[q] = (float)is[q];
    }
    for (int64_t j = 0; j < N; j += VW)
        for (int q = 0; q < R; q++) {
            vf v = ld(X + q * N + j);
            vf xh = dnarrow((widen_lo(v) - mu[q]) * is[q], (widen_hi(v) - mu[q]) * is[q]);
            st(Y + q * N + j, xh * ld(G + j) + ld(b + j));
        }
}

static void K(layernorm)(int64_t M, int64_t N, const float *X, const float *G, const float *b, float eps,
                         float *Y, float *mean, float *inv_std) {
    int64_t r0 = 0;
    if (VB >= 32 && N % VW == 0) /* (not in the 128-bit builds: the npm core's size) */
        for (; r0 + 4 <= M; r0 += 4) ln_rows(4, N, X + r0 * N, G, b, eps, Y + r0 * N, mean + r0, inv_std + r0);
    for (int64_t r = r0; r < M; r++) {
        const float *x = X + r * N;
        vdh alo = (vdh){0}, ahi = (vdh){0};
        int64_t j = 0;
        for (; j + VW <= N; j += VW) {
            vf v = ld(x + j);
            alo += widen_lo(v);
            ahi += widen_hi(v);
        }
        double mu = dsum(alo, ahi);
        for (; j < N; j++) mu += x[j];
        mu /= (double)N;
        alo = ahi = (vdh){0};
        for (j = 0; j + VW <= N; j += VW) {
            vf v = ld(x + j);
            vdh dl = widen_lo(v) - mu, dh = widen_hi(v) - mu;
            alo += dl * dl;
            ahi += dh * dh;
        }
        double var = dsum(alo, ahi);
        for (; j < N; j++) var += ((double)x[j] - mu) * ((double)x[j] - mu);
        var /= (double)N;
        double is = 1.0 / sqrt(var + (double)eps);
        mean[r] = (float)mu;
        inv_std[r] = (float)is;
        float *y = Y + r * N;
        for (j = 0; j + VW <= N; j += VW) {
            vf v = ld(x + j);
            vf xh = dnarrow((widen_lo(v) - mu) * is, (widen_hi(v) - mu) * is);
            st(y + j, xh * ld(G + j) + ld(b + j));
        }
        for (; j < N; j++) y[j] = (float)(((double)x[j] - mu) * is) * G[j] + b[j];
    }
}

/* layernorm_backward_dx of R (<= 4) rows of whole vectors at once, as ln_rows: each row's
 * operations those of the one-row loop below, in its order (the same bits). */
static inline __attribute__((always_inline)) void ln_dx_rows(int R, int64_t N, const float *dY, const float *X,
                                                             const float *G, const float *mean, const float *inv_std,
                                                             float *dX) {
    vdh glo[4], ghi[4], gxlo[4], gxhi[4];
    double mu[4], is[4], mg[4], mgx[4];
    for (int q = 0; q < R; q++) {
        mu[q] = mean[q], is[q] = inv_std[q];
        glo[q] = ghi[q] = gxlo[q] = gxhi[q] = (vdh){0};
    }
    for (int64_t j = 0; j < N; j += VW) {
        vf gg = ld(G + j);
        for (int q = 0; q < R; q++) {
            vf v = ld(X + q * N + j), d = ld(dY + q * N + j);
            vdh xl = (widen_lo(v) - mu[q]) * is[q], xh = (widen_hi(v) - mu[q]) * is[q];
            vdh gl = widen_lo(d) * widen_lo(gg), gh = widen_hi(d) * widen_hi(gg);
            glo[q] += gl;
            ghi[q] += gh;
            gxlo[q] += gl * xl;
            gxhi[q] += gh * xh;
        }
    }
    for (int q = 0; q < R; q++) mg[q] = dsum(glo[q], ghi[q]) / (double)N, mgx[q] = dsum(gxlo[q], gxhi[q]) / (double)N;
    for (int64_t j = 0; j < N; j += VW) {
        vf gg = ld(G + j);
        for (int q = 0; q < R; q++) {
            vf v = ld(X + q * N + j), d = ld(dY + q * N + j);
            vdh xl = (widen_lo(v) - mu[q]) * is[q], xh = (widen_hi(v) - mu[q]) * is[q];
            vdh ol = is[q] * (widen_lo(d) * widen_lo(gg) - mg[q] - xl * mgx[q]);
            vdh oh = is[q] * (widen_hi(d) * widen_hi(gg) - mg[q] - xh * mgx[q]);
            st(dX + q * N + j, dnarrow(ol, oh));
        }
    }
}

static void K(layernorm_backward_dx)(int64_t M, int64_t N, const float *dY, const float *X, const float *G,
                                     const float *mean, const float *inv_std, float *dX) {
    int64_t r0 = 0;
    if (VB >= 32 && N % VW == 0) /* (not in the 128-bit builds: the npm core's size) */
        for (; r0 + 4 <= M; r0 += 4) ln_dx_rows(4, N, dY + r0 * N, X + r0 * N, G, mean + r0, inv_std + r0, dX + r0 * N);
    for (int64_t r = r0; r < M; r++) {
        const float *x = X + r * N, *dy = dY + r * N;
        double mu = mean[r], is = inv_std[r];
        vdh glo = (vdh){0}, ghi = (vdh){0}, gxlo = (vdh){0}, gxhi = (vdh){0};
        int64_t j = 0;
        for (; j + VW <= N; j += VW) {
            vf v = ld(x + j), d = ld(dy + j), gg = ld(G + j);
            vdh xl = (widen_lo(v) - mu) * is, xh = (widen_hi(v) - mu) * is;
            vdh gl = widen_lo(d) * widen_lo(gg), gh = widen_hi(d) * widen_hi(gg);
            glo += gl;
            ghi += gh;
            gxlo += gl * xl;
            gxhi += gh * xh;
        }
        double sum_g = dsum(glo, ghi), sum_gx = dsum(gxlo, gxhi);
        for (; j < N; j++) {
            double xhat = ((double)x[j] - mu) * is, g = (double)dy[j] * G[j];
            sum_g += g;
            sum_gx += g * xhat;
        }
        double mg = sum_g / (double)N, mgx = sum_gx / (double)N;
        float *dx = dX + r * N;
        for (j = 0; j + VW <= N; j += VW) {
            vf v = ld(x + j), d = ld(dy + j), gg = ld(G + j);
            vdh xl = (widen_lo(v) - mu) * is, xh = (widen_hi(v) - mu) * is;
            vdh ol = is * (widen_lo(d) * widen_lo(gg) - mg - xl * mgx);
            vdh oh = is * (widen_hi(d) * widen_hi(gg) - mg - xh * mgx);
            st(dx + j, dnarrow(ol, oh));
        }
        for (; j < N; j++) {
            double xhat = ((double)x[j] - mu) * is;
            dx[j] = (float)(is * ((double)dy[j] * G[j] - mg - xhat * mgx));
        }
    }
}

/* NV vectors of columns from j, down all M rows: each row's NV vectors are one contiguous piece
 * (one vector per row was a 512-byte stride per step, a column strip at a time: the transformer's
 * (512, 128) LayerNorm backward spent ~60 % here). Per column the same operations in row order. */
static inline __attribute__((always_inline)) void ln_dgb_cols(int NV, int64_t M, int64_t j, int64_t ldx, const float *dY,
                                                              const float *X, const float *mean, const float *inv_std,
                                                              float *dG, float *db) {
    vf ag[4], ab[4];
    for (int v = 0; v < NV; v++) ag[v] = ld(dG + j + v * VW), ab[v] = ld(db + j + v * VW);
    for (int64_t r = 0; r < M; r++) {
        double mu = mean[r], is = inv_std[r];
        for (int v = 0; v < NV; v++) {
            vf dy = ld(dY + r * ldx + j + v * VW), x = ld(X + r * ldx + j + v * VW);
            vdh xl = (widen_lo(x) - mu) * is, xh = (widen_hi(x) - mu) * is;
            ag[v] += dnarrow(widen_lo(dy) * xl, widen_hi(dy) * xh);
            ab[v] += dy;
        }
    }
    for (int v = 0; v < NV; v++) st(dG + j + v * VW, ag[v]), st(db + j + v * VW, ab[v]);
}

static void K(layernorm_backward_dgb)(int64_t M, int64_t n, int64_t ldx, const float *dY, const float *X,
                                      const float *mean, const float *inv_std, float *dG, float *db) {
    int64_t j = 0;
    /* below 512-bit vectors the widen / narrow pairs cost more than the twin's loop, which the
     * compiler vectorises itself: the same arithmetic in the same order either way */
    for (; VB >= 64 && j + 4 * VW <= n; j += 4 * VW) ln_dgb_cols(4, M, j, ldx, dY, X, mean, inv_std, dG, db);
    for (; VB >= 64 && j + VW <= n; j += VW) ln_dgb_cols(1, M, j, ldx, dY, X, mean, inv_std, dG, db);
    for (int64_t r = 0; r < M; r++) {
        double mu = mean[r], is = inv_std[r];
        for (int64_t c = j; c < n; c++) {
            float dy = dY[r * ldx + c];
            double xhat = ((double)X[r * ldx + c] - mu) * is;
            dG[c] += (float)((double)dy * xhat);
            db[c] += dy;
        }
    }
}
