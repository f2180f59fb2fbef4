/* Part of simd/elem.c, compiled once per ISA with it (no standalone header): the optimizers: adam, radam, update_averages, adam_step. */

static void K(adam)(int64_t n, float *W, const float *G, float *m1, float *m2, float beta1, float beta2,
                         float eps, float lr) {
    float omb1 = 1.0f - beta1, omb2 = 1.0f - beta2;
    int64_t i = 0;
    for (; i < n; i += VW) {
        int64_t m = n - i < VW ? n - i : VW;
        vf g = m == VW ? ld(G + i) : ld_part(G + i, m);
        vf a = m == VW ? ld(m1 + i) : ld_part(m1 + i, m);
        vf b = m == VW ? ld(m2 + i) : ld_part(m2 + i, m);
        vf w = m == VW ? ld(W + i) : ld_part(W + i, m);
        a = a * beta1;
        a = a + g * omb1;
        b = b * beta2;
        b = b + omb2 * (g * g);
        vf step = a / (vsqrt(b) + eps);
        w = w + -lr * step;
        if (m == VW) {
            st(m1 + i, a);
            st(m2 + i, b);
            st(W + i, w);
        } else {
            st_part(m1 + i, a, m);
            st_part(m2 + i, b, m);
            st_part(W + i, w, m);
        }
    }
}

static void K(radam)(int64_t n, float *W, const float *G, float *m1, float *m2, float beta1, float omb1,
                          float beta2, float omb2, float eps, float coef, bool rectified) {
    int64_t i = 0;
    for (; i < n; i += VW) {
        int64_t m = n - i < VW ? n - i : VW;
        vf g = ld_part(G + i, m), a = ld_part(m1 + i, m), b = ld_part(m2 + i, m), w = ld_part(W + i, m);
        b = b * beta2;
        b = b + omb2 * (g * g);
        a = a * beta1;
        a = a + omb1 * g;
        if (rectified) w = w + coef * (a / (vsqrt(b) + eps));
        else if (coef != 0.0f) w = w + coef * a;
        st_part(m1 + i, a, m);
        st_part(m2 + i, b, m);
        st_part(W + i, w, m);
    }
}

static void K(update_averages)(int64_t n, float *ema, const float *W, float decay) {
    float omd = 1.0f - decay;
    int64_t i = 0;
    for (; i + VW <= n; i += VW) {
        vf e = ld(ema + i);
        st(ema + i, e - omd * (e - ld(W + i)));
    }
    for (; i < n; i++) ema[i] -= omd * (ema[i] - W[i]);
}

/* One vector of adam_step (the scalar twin's order per element); returns the new W. */
static inline vf adam_step_vec(vf g, vf *a, vf *b, vf w, bool scale_g, float gscale, float beta1, float omb1,
                               float beta2, float omb2, float eps, float lr, bool scale_w, float wscale) {
    if (scale_g) g = gscale * g;
    *a = *a * beta1;
    *a = *a + g * omb1;
    *b = *b * beta2;
    *b = *b + omb2 * (g * g);
    vf step = *a / (vsqrt(*b) + eps);
    w = w + -lr * step;
    return scale_w ? wscale * w : w;
}

static void K(adam_step)(int64_t n, float *W, float *G, float *m1, float *m2, float *avg, float gscale, float beta1,
                         float beta2, float eps, float lr, float wscale, float decay) {
    float omb1 = 1.0f - beta1, omb2 = 1.0f - beta2, omd = 1.0f - decay;
    bool scale_g = gscale != 1.0f, scale_w = wscale != 1.0f;
    int64_t i = 0;
    /* whole vectors, the averages' branch outside the loop */
    /* every load before any store: the arrays usually sit at equal offsets within their pages,
     * and a load behind a store to the same page offset waits on it (4K aliasing) */
    if (avg)
        for (; i + VW <= n; i += VW) {
            vf a = ld(m1 + i), b = ld(m2 + i), e = ld(avg + i);
            vf w = adam_step_vec(ld(G + i), &a, &b, ld(W + i), scale_g, gscale, beta1, omb1, beta2, omb2, eps, lr,
                                 scale_w, wscale);
            st(m1 + i, a);
            st(m2 + i, b);
            st(W + i, w);
            st(G + i, splat(0.0f));
            st(avg + i, e - omd * (e - w));
        }
    else
        for (; i + VW <= n; i += VW) {
            vf a = ld(m1 + i), b = ld(m2 + i);
            vf w = adam_step_vec(ld(G + i), &a, &b, ld(W + i), scale_g, gscale, beta1, omb1, beta2, omb2, eps, lr,
                                 scale_w, wscale);
            st(m1 + i, a);
            st(m2 + i, b);
            st(W + i, w);
            st(G + i, splat(0.0f));
        }
    if (i < n) { /* the partial last vector through zero-padded buffers: the same code, the same bits */
        int64_t m = n - i;
        vf a = ld_part(m1 + i, m), b = ld_part(m2 + i, m);
        vf w = adam_step_vec(ld_part(G + i, m), &a, &b, ld_part(W + i, m), scale_g, gscale, beta1, omb1, beta2, omb2,
                             eps, lr, scale_w, wscale);
        st_part(m1 + i, a, m);
        st_part(m2 + i, b, m);
        st_part(W + i, w, m);
        st_part(G + i, splat(0.0f), m);
        if (avg) {
            vf e = ld_part(avg + i, m);
            st_part(avg + i, e - omd * (e - w), m);
        }
    }
}
