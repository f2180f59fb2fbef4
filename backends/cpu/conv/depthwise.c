/* The CPU backend's depthwise convolution, forward and backward (conv/gemm.c has the overview). */
#include "conv.h"

/* The depthwise forward's layout: a plane as one long row. Output (oh, ow) sits at q = oh·Pq + ow of
 * a run with Pq - OW dropped columns per row; tap (kh, kw) reads the source at q + off[tap], so each
 * output is the twin's sum, bias + taps in (kh, kw) order (dwconv_taps), and whole vectors run
 * across row ends (7- and 14-wide rows fill them). The source is
 *   direct (stride 1, no padding): the plane itself, Pq = W;
 *   else the phase planes of the GEMM's shifted rows (phase_dims): the plane copied into a
 *     zero-bordered buffer split into s0·s1 planes of Hq x Wq, plane (a, b) holding padded pixel
 *     (i·s0 + a, j·s1 + b) at (i, j), so tap (kh, kw) is plane (kh·d0 mod s0, kw·d1 mod s1) from
 *     (kh·d0 div s0, kw·d1 div s1), a stride-1 shift; Pq = Wq. The copy de-interleaves (copy_rows).
 * Rows at least two vectors wide (56, 112 on AVX-512) run one by one straight into Y, a row's last
 * vector overlapping the one before; narrower ones (28, 14, 7: the overlap or idle lanes would be a
 * larger share) as runs of R output rows at a time into ext (L1-sized), whose OW-wide rows are then
 * copied into Y. (In mobilenet_v2, 56-wide rows measured faster straight into Y, 28-wide ones as
 * runs; a kernel loop on data already in cache prefers runs for both.) The dropped columns of a
 * run's row read the next row's start, never past the source: a run ends at its last row's OW. */
typedef struct dw_layout {
    bool ok;     /* the long-row path applies: KH·KW <= LITHE__DWCONV_MAX_TAPS */
    bool direct; /* reads X itself */
    int64_t Hq, Pq, R, T;
    size_t src, ext; /* workspace floats: phase planes, the run buffer */
    int64_t off[LITHE__DWCONV_MAX_TAPS];
    int ncopy;       /* the copies into the phase planes: R rows of n, to src + dst from x + from; */
    struct {         /* at stride 2 across, whole rows of n split to src + dst (even) and + dst2 (odd) */
        int64_t R, n, dst, dst2, from;
    } copy[LITHE__DWCONV_MAX_TAPS];
} dw_layout;

typedef struct dw_job {
    lithe_backend *be;
    const lithe__conv2d *g;
    const float *X, *W, *b;
    const lithe__act *a; /* or NULL: applied while the plane is summed (dwconv_taps) */
    float *Y;
    const lithe__simd_kernels *k;
    const dw_layout *L;
} dw_job;

static bool dw_padded(const lithe__conv2d *g) { return g->pad[0] || g->pad[1] || g->pad[2] || g->pad[3]; }

static void dw_layout_init(const lithe__conv2d *g, int lanes, dw_layout *L) {
    memset(L, 0, sizeof *L);
    int64_t s0 = g->stride[0], s1 = g->stride[1];
    L->T = g->KH * g->KW;
    L->ok = L->T <= LITHE__DWCONV_MAX_TAPS && s0 * s1 <= LITHE__DWCONV_MAX_TAPS && g->OH > 0 && g->OW > 0;
    if (!L->ok) return;
    L->direct = !dw_padded(g) && s0 == 1 && s1 == 1;
    if (L->direct) L->Hq = g->H, L->Pq = g->W;
    else phase_dims(g, &L->Hq, &L->Pq);
    int64_t HWq = L->Hq * L->Pq;
    for (int64_t kh = 0, t = 0; kh < g->KH; kh++)
        for (int64_t kw = 0; kw < g->KW; kw++, t++) {
            int64_t th = kh * g->dil[0], tw = kw * g->dil[1];
            L->off[t] = (th % s0 * s1 + tw % s1) * HWq + th / s0 * L->Pq + tw / s1;
        }
    L->src = L->direct ? 0 : (size_t)(s0 * s1 * HWq);
    /* plane (a, b)'s interior: input rows h ≡ a - pad0 (mod s0), columns w ≡ b - pad1 (mod s1) */
    for (int64_t pa = 0; pa < s0 && !L->direct; pa++)
        for (int64_t pb = 0; pb < s1; pb++) {
            int64_t h0 = ((pa - g->pad[0]) % s0 + s0) % s0, w0 = ((pb - g->pad[1]) % s1 + s1) % s1;
            if (h0 >= g->H || w0 >= g->W) continue;
            int64_t row = (h0 + g->pad[0]) / s0 * L->Pq;
            if (s1 == 2 && w0 == 1) continue; /* with the even columns, by split_rows */
            L->copy[L->ncopy].R = (g->H - h0 + s0 - 1) / s0;
            L->copy[L->ncopy].n = s1 == 2 ? g->W : (g->W - w0 + s1 - 1) / s1;
            L->copy[L->ncopy].dst = (pa * s1 + pb) * HWq + row + (w0 + g->pad[1]) / s1;
            /* at stride 2, column 1 (and every odd one) lands in plane (1 + pad1) mod 2 */
            L->copy[L->ncopy].dst2 = s1 == 2 ? (pa * s1 + (1 + g->pad[1]) % 2) * HWq + row + (1 + g->pad[1]) / 2 : -1;
            L->copy[L->ncopy++].from = h0 * g->W + w0;
        }
    L->R = L->Pq >= 2048 ? 1 : 2048 / L->Pq;
    if (L->R > g->OH) L->R = g->OH;
    L->ext = L->Pq == g->OW || g->OW >= 2 * lanes ? 0 : (size_t)(L->R * L->Pq);
}

/* Whether plane c may run from a zero-bordered copy: there the padding's taps add 0·w between the
 * real ones. That leaves each sum's bits the twin's (which skips those taps) when w is finite (0·w
 * is ±0, not NaN) and the sum is never -0 (acc + ±0 = acc for every other acc): a sum is -0 only
 * when it starts at a -0 bias, so a -0 bias or a non-finite weight sends the plane to the twin. */
static bool dw_plane_padded_ok(const lithe__conv2d *g, const float *w, const float *b, int64_t c) {
    if (b && b[c] == 0.0f && signbit(b[c])) return false;
    for (int64_t t = 0; t < g->KH * g->KW; t++)
        if (!isfinite(w[t])) return false;
    return true;
}

/* dw_plane_padded_ok for n planes at once (bias b[0 .. n), taps w[0 .. n·T)), by the bits: no
 * exponent all ones among the taps, no -0 among the biases; a loop the compiler vectorises. */
static bool dw_block_padded_ok(const float *w, const float *b, int64_t n, int64_t T) {
    uint32_t bad = 0;
    for (int64_t i = 0; i < n * T; i++) {
        uint32_t u;
        memcpy(&u, w + i, sizeof u);
        bad |= (u & 0x7f800000u) == 0x7f800000u;
    }
    for (int64_t i = 0; b && i < n; i++) {
        uint32_t u;
        memcpy(&u, b + i, sizeof u);
        bad |= u == 0x80000000u;
    }
    return !bad;
}

static void depthwise_plane_long(const dw_job *j, int64_t nc, float *src, float *ext) {
    const lithe__conv2d *g = j->g;
    const dw_layout *L = j->L;
    int64_t c = nc % g->C, s0 = g->stride[0], s1 = g->stride[1], OH = g->OH, OW = g->OW, Pq = L->Pq;
    const float *x = j->X + nc * g->H * g->W, *w = j->W + c * L->T;
    float *y = j->Y + nc * OH * OW;
    if (L->direct) {
        src = (float *)x; /* read only */
    } else {
        for (int i = 0; i < L->ncopy; i++) /* the interiors; the borders stay zero */
            if (L->copy[i].dst2 >= 0)
                j->k->split_rows(L->copy[i].R, L->copy[i].n, src + L->copy[i].dst, src + L->copy[i].dst2, Pq,
                                 x + L->copy[i].from, s0 * g->W);
            else
                j->k->copy_rows(L->copy[i].R, L->copy[i].n, src + L->copy[i].dst, Pq, x + L->copy[i].from, s0 * g->W,
                                s1);
    }
    float bias = j->b ? j->b[c] : 0.0f;
    if (!L->ext) { /* rows at least two vectors wide (or no dropped columns): straight into Y */
        j->k->dwconv_taps(OH, OW, Pq, y, OW, src, L->off, w, L->T, bias, j->a);
        return;
    }
    for (int64_t r0 = 0; r0 < OH; r0 += L->R) {
        int64_t r1 = r0 + L->R < OH ? r0 + L->R : OH;
        j->k->dwconv_taps(1, (r1 - r0 - 1) * Pq + OW, 0, ext, 0, src + r0 * Pq, L->off, w, L->T, bias, j->a);
        j->k->copy_rows(r1 - r0, OW, y + r0 * OW, OW, ext, Pq, 1);
    }
}

/* The twin's sum for plane nc (its own loop: the twin itself would link the whole scalar
 * convolution into the WebAssembly core), then the act kernel over it while it is in cache. */
static void dw_plane_twin(const dw_job *j, int64_t nc) {
    const lithe__conv2d *g = j->g;
    int64_t c = nc % g->C;
    const float *x = j->X + nc * g->H * g->W, *w = j->W + c * g->KH * g->KW;
    float *y = j->Y + nc * g->OH * g->OW;
    for (int64_t oh = 0; oh < g->OH; oh++)
        for (int64_t ow = 0; ow < g->OW; ow++) {
            float acc = j->b ? j->b[c] : 0.0f;
            for (int64_t kh = 0; kh < g->KH; kh++) {
                int64_t h = oh * g->stride[0] - g->pad[0] + kh * g->dil[0];
                if (h < 0 || h >= g->H) continue;
                for (int64_t kw = 0; kw < g->KW; kw++) {
                    int64_t ww = ow * g->stride[1] - g->pad[1] + kw * g->dil[1];
                    if (ww >= 0 && ww < g->W) acc += x[h * g->W + ww] * w[kh * g->KW + kw];
                }
            }
            y[oh * g->OW + ow] = acc;
        }
    if (j->a) j->k->act(j->a, g->OH * g->OW, y, y);
}

/* Planes (n, c) [p0, p1): the long rows above, or the twin itself where they would change a bit
 * (dw_plane_padded_ok), where the layout does not apply, or without workspace. */
static void depthwise_planes(void *ctx, int64_t p0, int64_t p1) {
    const dw_job *j = ctx;
    const lithe__conv2d *g = j->g;
    const dw_layout *L = j->L;
    void *ws = NULL;
    bool lng = L->ok && (L->src + L->ext == 0 ||
                         j->be->ops->alloc(j->be, (L->src + L->ext) * sizeof(float), &ws) == LITHE_OK);
    float *src = ws, *ext = src ? src + L->src : NULL;
    if (src && L->src) memset(src, 0, L->src * sizeof(float)); /* the borders: written once per range */
    bool padded = dw_padded(g);
    for (int64_t nc = p0; nc < p1; nc++) {
        int64_t c = nc % g->C;
        if (lng && (!padded || dw_plane_padded_ok(g, j->W + c * L->T, j->b, c))) depthwise_plane_long(j, nc, src, ext);
        else dw_plane_twin(j, nc);
    }
    if (ws) j->be->ops->free(j->be, ws);
}

/* Blocks [u0, u1) of `lanes` channels of one image (block u: image u / nblk, channels from
 * (u mod nblk)·lanes) through dwconv_lanes, then the twin for its planes where the padding's taps
 * could change a bit (dw_plane_padded_ok), or for all of them without workspace. */
static void depthwise_lane_blocks(void *ctx, int64_t u0, int64_t u1) {
    const dw_job *j = ctx;
    const lithe__conv2d *g = j->g;
    int64_t lanes = j->k->lanes, nblk = (g->C + lanes - 1) / lanes, T = g->KH * g->KW;
    void *ws = NULL;
    size_t nws = lithe__dw_lanes_ws(g, j->k->lanes);
    bool ok = j->be->ops->alloc(j->be, nws * sizeof(float), &ws) == LITHE_OK;
    if (ok) memset(ws, 0, nws * sizeof(float));
    bool padded = dw_padded(g);
    for (int64_t u = u0; u < u1; u++) {
        int64_t n = u / nblk, c0 = u % nblk * lanes, nch = g->C - c0 < lanes ? g->C - c0 : lanes, nc = n * g->C + c0;
        if (ok)
            j->k->dwconv_lanes(g, nch, j->X + nc * g->H * g->W, j->W + c0 * T, j->b ? j->b + c0 : NULL, j->a,
                               j->Y + nc * g->OH * g->OW, ws);
        if (ok && (!padded || dw_block_padded_ok(j->W + c0 * T, j->b ? j->b + c0 : NULL, nch, T))) continue;
        for (int64_t l = 0; l < nch; l++)
            if (!ok || !dw_plane_padded_ok(g, j->W + (c0 + l) * T, j->b, c0 + l)) dw_plane_twin(j, nc + l);
    }
    if (ws) j->be->ops->free(j->be, ws);
}

/* Whether the channels-in-lanes kernel runs g rather than the long rows: measured in mobilenet_v2
 * (batch 1, 1 thread, AVX-512 and AVX2 on Zen 4) it wins on planes under 16 wide (14x14, 7x7 at
 * stride 1, 14 -> 7 at stride 2: 50 -> 36, 61 -> 31, 49 -> 37 us), whose long rows waste lanes at
 * every row end and pay the per-plane copies, and at stride 2 where the phase planes outgrow L1
 * (96 x 112x112 -> 56: 340 -> 295 us); the long rows win on wider planes at stride 1 (56x56:
 * 230 vs 280 us; 112x112: 200 vs 250) and 28 -> 14 at stride 2 (39 vs 44), where the transposes
 * in and out cost more than the waste they save. The big stride-2 planes on AVX-512 only (AVX2's
 * eight lanes measured 245 vs 238 us there). Windows past 3x3 at stride 2 on any width (AVX2, Zen 3,
 * min of 5 interleaved runs: lraspp's 72 x 56x56 5x5 / 2 116 -> 102 us, mobilenet_v3_small's
 * 96 x 28x28 46 -> 41; the long rows pay the phase planes' split there, 30 % of their
 * instructions; AVX-512 not measured); at stride 1 the long rows stay (120 x 28x28 5x5: 137 vs
 * 146). On AVX2 (Zen 3) every strided window, the 3x3 in place's stride-2 planes among them (min of
 * 8 interleaved runs: 64 x 112 -> 56 265 -> 218 us, 16 x 112 -> 56 65 -> 54, 72 x 56 -> 28 70 -> 64;
 * dw_use_3x3 leaves them; AVX-512 keeps it, measured faster there). Four-lane ISAs (SSE2, NEON, WebAssembly) have no
 * dwconv_lanes and keep the long rows (not measured there), WebAssembly only where dw_use_3x3 does not apply. */
static bool dw_use_lanes(const lithe__conv2d *g, const lithe__simd_kernels *k) {
    if (!k->dwconv_lanes || g->KH * g->KW > LITHE__DWCONV_MAX_TAPS || g->OH <= 0 || g->OW <= 0)
        return false;
    if (g->W < 16) return true;
    /* strided windows past 3x3, and any strided window on 8 lanes: see below */
    if (g->stride[0] * g->stride[1] > 1 && (g->KH * g->KW > 9 || k->lanes == 8)) return true;
    int64_t Hq, Wq;
    phase_dims(g, &Hq, &Wq);
    return k->lanes >= 16 && g->stride[0] * g->stride[1] > 1 &&
           g->stride[0] * g->stride[1] * Hq * Wq * (int64_t)sizeof(float) > 32 * 1024;
}

/* Whether the table's dwconv3x3 (a 3x3 plane read in place, input rows shared by the output rows
 * that read them; simd.h has its conditions) runs g: padding 1 at the top and left, stride 1 with
 * padding 1 all round, or stride 2 reading no bottom or right padding, output rows at least the
 * table's dwconv3x3_min_width (AVX-512: 1, every depthwise node of mobilenet_v2; AVX2: 8, all but
 * the 7x7 and 14 -> 7 ones; WebAssembly SIMD128: 4, every one: mobilenet_v2 under Node, cachegrind,
 * 388.1 -> 368.1 M instructions per predict, no padded copies and three loads per output vector at
 * stride 1 where the long rows made nine; bench/history.md). Measured faster than the long rows and the lanes on each of them, AVX2
 * about even on 32 x 112x112 (bench/history.md, "Depthwise 3x3 in place"); AVX2's stride-2 planes
 * later measured faster in the lanes on Zen 3 (dw_use_lanes), so stride 2 here is AVX-512's. */
static bool dw_use_3x3(const lithe__conv2d *g, const lithe__simd_kernels *k) {
    if (g->stride[0] * g->stride[1] > 1 && k->dwconv_lanes && k->lanes == 8) return false; /* dw_use_lanes */
    if (!k->dwconv3x3 || g->KH != 3 || g->KW != 3 || g->dil[0] != 1 || g->dil[1] != 1 || g->pad[0] != 1 ||
        g->pad[1] != 1 || g->stride[0] != g->stride[1] || g->OH <= 0 || g->OW <= 0)
        return false;
    if (g->stride[0] == 1) return g->pad[2] == 1 && g->pad[3] == 1 && g->W >= k->dwconv3x3_min_width;
    return g->stride[0] == 2 && 2 * g->OH <= g->H && 2 * g->OW <= g->W && g->OW >= k->dwconv3x3_min_width;
}

/* Planes (n, c) [p0, p1) through dwconv3x3, an image's run of them per call (their weights and
 * biases checked at once, dw_block_padded_ok), or plane by plane with the twin for those where the
 * padding's 0·w could change a bit */
static void depthwise_planes_3x3(void *ctx, int64_t p0, int64_t p1) {
    const dw_job *j = ctx;
    const lithe__conv2d *g = j->g;
    int64_t HW = g->H * g->W, OP = g->OH * g->OW;
    for (int64_t nc = p0; nc < p1;) {
        int64_t c = nc % g->C, e = nc - c + g->C < p1 ? nc - c + g->C : p1; /* to the image's end */
        if (dw_block_padded_ok(j->W + c * 9, j->b ? j->b + c : NULL, e - nc, 9))
            j->k->dwconv3x3(e - nc, g->H, g->W, g->stride[0], g->OH, g->OW, j->X + nc * HW, j->Y + nc * OP,
                            j->W + c * 9, j->b ? j->b + c : NULL, j->a);
        else
            for (int64_t q = nc; q < e; q++)
                if (dw_plane_padded_ok(g, j->W + (c + q - nc) * 9, j->b, c + q - nc))
                    j->k->dwconv3x3(1, g->H, g->W, g->stride[0], g->OH, g->OW, j->X + q * HW, j->Y + q * OP,
                                    j->W + (c + q - nc) * 9, j->b ? j->b + c + q - nc : NULL, j->a);
                else dw_plane_twin(j, q);
        nc = e;
    }
}

void depthwise_forward(lithe_backend *be, const lithe__conv2d *g, const float *X, const float *W,
                       const float *b, const lithe__act *a, float *Y) {
    dw_layout L;
    const lithe__simd_kernels *k = lithe__simd_conv();
    if (dw_use_3x3(g, k)) {
        dw_job j = {be, g, X, W, b, a, Y, k, NULL};
        lithe__pool_for(lithe__cpu_pool(), g->N * g->C, (1 << 15) / (g->OH * g->OW * 9) + 1, depthwise_planes_3x3, &j);
        return;
    }
    if (dw_use_lanes(g, k)) {
        dw_job j = {be, g, X, W, b, a, Y, k, NULL};
        int64_t nblk = (g->C + k->lanes - 1) / k->lanes, per = k->lanes * g->OH * g->OW * g->KH * g->KW;
        lithe__pool_for(lithe__cpu_pool(), g->N * nblk, (1 << 15) / per + 1, depthwise_lane_blocks, &j);
        return;
    }
    dw_layout_init(g, k->lanes, &L);
    dw_job j = {be, g, X, W, b, a, Y, k, &L};
    int64_t per_plane = g->OH * g->OW * g->KH * g->KW;
    int64_t grain = per_plane > 0 ? (1 << 15) / per_plane + 1 : 1;
    lithe__pool_for(lithe__cpu_pool(), g->N * g->C, grain, depthwise_planes, &j);
}

/* The depthwise backward in each accumulator's twin order, so dX, dW and db match it bit for bit.
 * The twin walks outputs (oh, ow) and, per output, taps (kh, kw) in bounds: db is one chain over the
 * outputs, dW[tap] one chain per tap (kept scalar: reordering them would change bits), and a dX
 * element receives at most one term per output, in (oh, ow) order — so, per output row oh and tap
 * row kh, the taps kw from last to first each add gy[oh, ow]·w over the row's in-bounds columns
 * ow ascending: every dX element sees its terms in the twin's order. At stride 1 across, a tap's
 * terms are one contiguous run of dX (the table's axpby with beta 1: Y + alpha·X, the twin's
 * dx + gv·w; w·gv for gv·w, the same bits unless both are NaN). Channels run in parallel ranges:
 * each owns its dW, db and dX planes and walks the images in order. */
typedef struct dwb_job {
    const lithe__conv2d *g;
    const float *X, *W, *dY;
    float *dX, *dW, *db;
    const lithe__simd_kernels *k;
} dwb_job;

/* dW (and db, or NULL) of a 3x3 plane: the ten chains (outputs in order) in registers, side by side
 * (each add waits on the last one of its own chain only), the taps of outputs whose window lies
 * inside the input without bounds tests; the same adds in the same order as the twin. */
static void dw_chains_3x3(const lithe__conv2d *g, const float *x, const float *gy, float *dw, float *db) {
    int64_t s0 = g->stride[0], s1 = g->stride[1], d0 = g->dil[0], d1 = g->dil[1], W = g->W, OW = g->OW;
    int64_t lo, hi, lo2, hi2;
    valid_range(OW, W, s1, g->pad[1], 0, d1, &lo, &hi);
    valid_range(OW, W, s1, g->pad[1], 2, d1, &lo2, &hi2);
    int64_t in_lo = lo2 > lo ? lo2 : lo, in_hi = hi < hi2 ? hi : hi2; /* every tap's column inside */
    if (in_hi < in_lo) in_hi = in_lo;
    float a0 = dw[0], a1 = dw[1], a2 = dw[2], a3 = dw[3], a4 = dw[4], a5 = dw[5], a6 = dw[6], a7 = dw[7], a8 = dw[8];
    float ab = db ? *db : 0.0f;
    for (int64_t oh = 0; oh < g->OH; oh++) {
        int64_t h0 = oh * s0 - g->pad[0];
        bool r0 = h0 >= 0 && h0 < g->H, r1 = h0 + d0 >= 0 && h0 + d0 < g->H, r2 = h0 + 2 * d0 >= 0 && h0 + 2 * d0 < g->H;
        /* the tap rows' offsets in x (only read where their row is inside) */
        int64_t i0 = h0 * W, i1 = i0 + d0 * W, i2 = i1 + d0 * W;
        const float *gr = gy + oh * OW;
        for (int64_t ow = 0; ow < OW; ow++) {
            float gv = gr[ow];
            int64_t w0 = ow * s1 - g->pad[1];
            ab += gv;
            if (r0 && r1 && r2 && ow >= in_lo && ow < in_hi) {
                a0 += gv * x[i0 + w0], a1 += gv * x[i0 + w0 + d1], a2 += gv * x[i0 + w0 + 2 * d1];
                a3 += gv * x[i1 + w0], a4 += gv * x[i1 + w0 + d1], a5 += gv * x[i1 + w0 + 2 * d1];
                a6 += gv * x[i2 + w0], a7 += gv * x[i2 + w0 + d1], a8 += gv * x[i2 + w0 + 2 * d1];
                continue;
            }
            bool c0 = w0 >= 0 && w0 < W, c1 = w0 + d1 >= 0 && w0 + d1 < W, c2 = w0 + 2 * d1 >= 0 && w0 + 2 * d1 < W;
            if (r0) {
                if (c0) a0 += gv * x[i0 + w0];
                if (c1) a1 += gv * x[i0 + w0 + d1];
                if (c2) a2 += gv * x[i0 + w0 + 2 * d1];
            }
            if (r1) {
                if (c0) a3 += gv * x[i1 + w0];
                if (c1) a4 += gv * x[i1 + w0 + d1];
                if (c2) a5 += gv * x[i1 + w0 + 2 * d1];
            }
            if (r2) {
                if (c0) a6 += gv * x[i2 + w0];
                if (c1) a7 += gv * x[i2 + w0 + d1];
                if (c2) a8 += gv * x[i2 + w0 + 2 * d1];
            }
        }
    }
    if (db) *db = ab;
    dw[0] = a0, dw[1] = a1, dw[2] = a2, dw[3] = a3, dw[4] = a4, dw[5] = a5, dw[6] = a6, dw[7] = a7, dw[8] = a8;
}

/* Channels [c0, c1) by the table's dwconv_backward_lanes, lanes channels at a time, in a workspace
 * of its own (this range's thread): dX, dW and db where dW is wanted (db alone, without dW, stays
 * with the loop below), dX alone else; false where the table has none, the window has too many taps
 * or the workspace cannot be had (the loop below then does it all). Each lane's chains are the
 * twin's, in its order: the same bits as the loop. */
static bool dw_lanes_backward(const dwb_job *j, int64_t c0, int64_t c1) {
    const lithe__conv2d *g = j->g;
    if (!j->k->dwconv_backward_lanes || g->KH * g->KW > LITHE__DWCONV_MAX_TAPS || (j->db && !j->dW) ||
        (!j->dW && !j->dX))
        return false;
    int64_t L = j->k->lanes, T = g->KH * g->KW;
    float *ws = lithe__malloc((size_t)lithe__dw_backward_ws(g, L) * sizeof(float));
    if (!ws) return false;
    for (int64_t c = c0; c < c1; c += L)
        j->k->dwconv_backward_lanes(g, c1 - c < L ? c1 - c : L, j->X + c * g->H * g->W, j->W + c * T,
                                    j->dY + c * g->OH * g->OW, j->dX ? j->dX + c * g->H * g->W : NULL,
                                    j->dW ? j->dW + c * T : NULL, j->db ? j->db + c : NULL, ws);
    lithe__free(ws);
    return true;
}

static void depthwise_backward_channels(void *ctx, int64_t c0, int64_t c1) {
    const dwb_job *j = ctx;
    const lithe__conv2d *g = j->g;
    int64_t s0 = g->stride[0], s1 = g->stride[1], KH = g->KH, KW = g->KW, OW = g->OW;
    /* each tap column's in-bounds outputs, once (they depend on kw only) */
    int64_t lo_[LITHE__DWCONV_MAX_TAPS], hi_[LITHE__DWCONV_MAX_TAPS];
    for (int64_t kw = 0; kw < KW && KW <= LITHE__DWCONV_MAX_TAPS; kw++)
        valid_range(OW, g->W, s1, g->pad[1], kw, g->dil[1], &lo_[kw], &hi_[kw]);
    /* the channels in the lanes where the table has it (the twin's chains per lane) */
    if (dw_lanes_backward(j, c0, c1)) return;
    for (int64_t c = c0; c < c1; c++)
        for (int64_t n = 0; n < g->N; n++) {
            int64_t nc = n * g->C + c;
            const float *x = j->X + nc * g->H * g->W, *w = j->W + c * KH * KW, *gy = j->dY + nc * g->OH * OW;
            float *dx = j->dX ? j->dX + nc * g->H * g->W : NULL, *dw = j->dW ? j->dW + c * KH * KW : NULL;
            bool db_with_dw = dw && KH == 3 && KW == 3;
            if (j->db && !db_with_dw) {
                float acc = j->db[c];
                for (int64_t p = 0; p < g->OH * OW; p++) acc += gy[p];
                j->db[c] = acc;
            }
            for (int64_t oh = 0; oh < g->OH && dx; oh++)
                for (int64_t kh = 0; kh < KH; kh++) {
                    int64_t h = oh * s0 - g->pad[0] + kh * g->dil[0];
                    if (h < 0 || h >= g->H) continue;
                    const float *gr = gy + oh * OW;
                    for (int64_t kw = KW - 1; kw >= 0; kw--) {
                        int64_t lo, hi, off = kw * g->dil[1] - g->pad[1];
                        if (KW <= LITHE__DWCONV_MAX_TAPS) lo = lo_[kw], hi = hi_[kw];
                        else valid_range(OW, g->W, s1, g->pad[1], kw, g->dil[1], &lo, &hi);
                        float wt = w[kh * KW + kw], *xr = dx + h * g->W + off;
                        if (s1 == 1 && hi - lo >= 8)
                            j->k->axpby(hi - lo, wt, gr + lo, 1.0f, xr + lo);
                        else
                            for (int64_t ow = lo; ow < hi; ow++) xr[ow * s1] += gr[ow] * wt;
                    }
                }
            if (!dw) continue;
            if (db_with_dw) {
                dw_chains_3x3(g, x, gy, dw, j->db ? j->db + c : NULL);
                continue;
            }
            /* dW: the twin's loop (outputs in order, taps in order), its chains side by side */
            for (int64_t oh = 0; oh < g->OH; oh++)
                for (int64_t ow = 0; ow < OW; ow++) {
                    float gv = gy[oh * OW + ow];
                    for (int64_t kh = 0; kh < KH; kh++) {
                        int64_t h = oh * s0 - g->pad[0] + kh * g->dil[0];
                        if (h < 0 || h >= g->H) continue;
                        for (int64_t kw = 0; kw < KW; kw++) {
                            int64_t ww = ow * s1 - g->pad[1] + kw * g->dil[1];
                            if (ww < 0 || ww >= g->W) continue;
                            dw[kh * KW + kw] += gv * x[h * g->W + ww];
                        }
                    }
                }
        }
}

void depthwise_backward(const lithe__conv2d *g, const float *X, const float *W, const float *dY, float *dX,
                        float *dW, float *db) {
    dwb_job j = {g, X, W, dY, dX, dW, db, lithe__simd_conv()};
    int64_t per = g->N * g->OH * g->OW * g->KH * g->KW;
    lithe__pool_for(lithe__cpu_pool(), g->C, per > 0 ? (1 << 15) / per + 1 : 1, depthwise_backward_channels, &j);
}
