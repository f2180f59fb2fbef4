/* Part of simd/elem.c, compiled once per ISA with it (no standalone header): activations and their backwards (act, act_backward). */

/* act1's body, inlined where the kind is a constant (act_loop, for the kinds without exp: one case
 * is left; left to the inliner, wasm's relu loop called act1 once per vector, some 2 % of an MLP's
 * batch-1 predict). */
static inline __attribute__((always_inline)) vf act1_inl(const lithe__act *a, vf x) {
    switch (a->kind) {
    case LITHE__ACT_RELU: return sel(x <= 0.0f, splat(0.0f), x); /* Thinc's cpu_relu: NaN stays NaN */
    case LITHE__ACT_SIGMOID: return vsigmoid(x);
    case LITHE__ACT_TANH: return vtanh(x);
    case LITHE__ACT_SWISH: return x * vsigmoid(x);
    case LITHE__ACT_GELU: return x * vgauss_cdf(x);
    case LITHE__ACT_DISH: return x * (0.5f * (x / vsqrt(x * x + 1.0f) + 1.0f));
    case LITHE__ACT_HARD_SIGMOID: return vclip(x * 0.2f + 0.5f, 0.0f, 1.0f);
    case LITHE__ACT_HARD_TANH: return vclip(x, -1.0f, 1.0f);
    case LITHE__ACT_HARD_SWISH: return x * vclip(x * 0.2f + 0.5f, 0.0f, 1.0f);
    case LITHE__ACT_HARD_SWISH_MOBILENET: return x * (vclip(x + 3.0f, 0.0f, 6.0f) / 6.0f);
    default: return vclip(x * a->slope + a->offset, a->min_val, a->max_val); /* CLIPPED_LINEAR */
    }
}

static inline vf act1(const lithe__act *a, vf x) { return act1_inl(a, x); }

#if !defined(LITHE_SIMD_ACT1_ONLY) /* simd/conv_kernels.c: act1 alone (its K(act) is the core's) */

/* One loop per kind (the switch hoisted out of it): act1_inl inlines with a constant kind. */
static inline __attribute__((always_inline)) void act_loop(const lithe__act *a, lithe__act_kind kind, int64_t n,
                                                           const float *X, float *Y) {
    lithe__act c = *a;
    c.kind = kind;
    int64_t i = 0;
    /* (the exp kinds keep the call: inlining their polynomials would grow the module ~4 KB) */
    const bool inl = kind != LITHE__ACT_SIGMOID && kind != LITHE__ACT_TANH && kind != LITHE__ACT_SWISH &&
                     kind != LITHE__ACT_GELU;
    for (; i + VW <= n; i += VW) st(Y + i, inl ? act1_inl(&c, ld(X + i)) : act1(&c, ld(X + i)));
}

/* act and act_backward run n - n % VW floats through their kind's loop, then a partial last vector
 * through the same loop again, zero-padded (ld_part's padding: the same bits), instead of a second
 * copy of every kind's body for the tail (7 KB of the npm SIMD core). false:
 * the kind has no loop here (the caller runs the scalar twin). */
static __attribute__((noinline)) bool act_vec(const lithe__act *a, int64_t n, const float *X, float *Y) {
    switch (a->kind) {
#define ACT_CASE(k)                                                                                \
    case k: act_loop(a, k, n, X, Y); return true;
        ACT_CASE(LITHE__ACT_RELU)
        ACT_CASE(LITHE__ACT_SIGMOID)
        ACT_CASE(LITHE__ACT_TANH)
        ACT_CASE(LITHE__ACT_SWISH)
        ACT_CASE(LITHE__ACT_GELU)
        ACT_CASE(LITHE__ACT_DISH)
        ACT_CASE(LITHE__ACT_HARD_SIGMOID)
        ACT_CASE(LITHE__ACT_HARD_TANH)
        ACT_CASE(LITHE__ACT_HARD_SWISH)
        ACT_CASE(LITHE__ACT_HARD_SWISH_MOBILENET)
        ACT_CASE(LITHE__ACT_CLIPPED_LINEAR)
#undef ACT_CASE
    default: return false;
    }
}

static void K(act)(const lithe__act *a, int64_t n, const float *X, float *Y) {
    const int64_t nv = n - n % VW;
    if (!act_vec(a, nv, X, Y)) {
        lithe_f32_act__scalar(a, n, X, Y); /* mish: the twin */
        return;
    }
    if (nv < n) {
        float t[VW] = {0};
        memcpy(t, X + nv, (size_t)(n - nv) * sizeof(float));
        act_vec(a, VW, t, t);
        memcpy(Y + nv, t, (size_t)(n - nv) * sizeof(float));
    }
}

static inline vf act_bwd1(const lithe__act *a, float low, float high, vf g, vf x, vf y) {
    switch (a->kind) {
    case LITHE__ACT_RELU: return sel(y <= 0.0f, splat(0.0f), g);
    case LITHE__ACT_SIGMOID: return g * (y * (1.0f - y));
    case LITHE__ACT_TANH: return g * (1.0f - y * y);
    case LITHE__ACT_SWISH: return g * (y + vsigmoid(x) * (1.0f - y));
    case LITHE__ACT_GELU: return g * (vgauss_cdf(x) + x * vgauss_pdf(x));
    case LITHE__ACT_HARD_SIGMOID: return g * sel((x > -2.5f) & (x < 2.5f), splat(0.2f), splat(0.0f));
    case LITHE__ACT_HARD_TANH: return g * sel((x > -1.0f) & (x < 1.0f), splat(1.0f), splat(0.0f));
    case LITHE__ACT_HARD_SWISH:
        return g * sel(x > 2.5f, splat(1.0f), sel(x < -2.5f, splat(0.0f), x * 0.4f + 0.5f));
    case LITHE__ACT_HARD_SWISH_MOBILENET:
        return sel(x > 3.0f, splat(1.0f), sel(x < -3.0f, splat(0.0f), (1.0f / 6.0f) * (x * 2.0f + 3.0f))) * g;
    default: /* CLIPPED_LINEAR */
        return g * sel((x > low) & (x < high), splat(a->slope), splat(0.0f));
    }
}

static inline __attribute__((always_inline)) void act_bwd_loop(const lithe__act *a, lithe__act_kind kind,
                                                               int64_t n, const float *dY, const float *X,
                                                               const float *Y, float *dX) {
    lithe__act c = *a;
    c.kind = kind;
    float low = 0.0f, high = 0.0f;
    if (kind == LITHE__ACT_CLIPPED_LINEAR) {
        low = (a->min_val - a->offset) / a->slope;
        high = (a->max_val - a->offset) / a->slope;
    }
    int needs = lithe__act_needs(kind);
    const vf zero = splat(0.0f);
    int64_t i = 0;
    for (; i + VW <= n; i += VW) {
        vf x = needs & LITHE__ACT_NEEDS_X ? ld(X + i) : zero, y = needs & LITHE__ACT_NEEDS_Y ? ld(Y + i) : zero;
        st(dX + i, act_bwd1(&c, low, high, ld(dY + i), x, y));
    }
}

static __attribute__((noinline)) bool act_bwd_vec(const lithe__act *a, int64_t n, const float *dY, const float *X,
                                                  const float *Y, float *dX) {
    switch (a->kind) {
#define ACT_CASE(k)                                                                                \
    case k: act_bwd_loop(a, k, n, dY, X, Y, dX); return true;
        ACT_CASE(LITHE__ACT_RELU)
        ACT_CASE(LITHE__ACT_SIGMOID)
        ACT_CASE(LITHE__ACT_TANH)
        ACT_CASE(LITHE__ACT_SWISH)
        ACT_CASE(LITHE__ACT_GELU)
        ACT_CASE(LITHE__ACT_HARD_SIGMOID)
        ACT_CASE(LITHE__ACT_HARD_TANH)
        ACT_CASE(LITHE__ACT_HARD_SWISH)
        ACT_CASE(LITHE__ACT_HARD_SWISH_MOBILENET)
        ACT_CASE(LITHE__ACT_CLIPPED_LINEAR)
#undef ACT_CASE
    default: return false;
    }
}

static void K(act_backward)(const lithe__act *a, int64_t n, const float *dY, const float *X, const float *Y,
                            float *dX) {
    const int64_t nv = n - n % VW;
    if (!act_bwd_vec(a, nv, dY, X, Y, dX)) {
        lithe_f32_act_backward__scalar(a, n, dY, X, Y, dX); /* mish, dish: the twins */
        return;
    }
    if (nv < n) { /* X and Y only where the kind reads them (either may be NULL otherwise) */
        const size_t m = (size_t)(n - nv) * sizeof(float);
        const int needs = lithe__act_needs(a->kind);
        float g[VW] = {0}, x[VW] = {0}, y[VW] = {0};
        memcpy(g, dY + nv, m);
        if (needs & LITHE__ACT_NEEDS_X) memcpy(x, X + nv, m);
        if (needs & LITHE__ACT_NEEDS_Y) memcpy(y, Y + nv, m);
        act_bwd_vec(a, VW, g, x, y, g);
        memcpy(dX + nv, g, m);
    }
}
#endif
