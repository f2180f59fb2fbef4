/* The CPU backend's 2-D convolution for imported graphs (primitives.def: conv2d, conv2d_backward):
 *
 *   - depthwise (one input and one output channel per group, mobilenet's 3x3): each plane as long
 *     rows (a zero-bordered copy split into phase planes where it is padded or strided; see
 *     dw_layout), every tap a shift of them, whole vectors (dwconv_taps), the fused relu / clip in
 *     registers; it accumulates in the scalar twin's order (bias, then taps kh, kw), bit-identical.
 *     Planes where the padding's 0·w taps could change a bit (dw_plane_padded_ok) run the twin's
 *     loop. Planes under 16 wide and big stride-2 ones instead go `lanes` channels at a time through
 *     the table's dwconv_lanes (channels in the vector lanes; dw_use_lanes), with the same rule.
 *     Before both, where the table has it, a 3x3 with padding 1 at stride 1 (or stride 2 reading no
 *     bottom / right padding) reads X in place through dwconv3x3 (dw_use_3x3), same order, same rule.
 *     Its backward keeps each accumulator's twin order too (depthwise_backward_channels);
 *   - everything else: per image and group, a GEMM over K = Cg·KH·KW, in one of two orientations
 *     chosen per geometry (pixel_rows): filter rows, Y_g (Mg, P) = W_g (Mg, K) · col (K, P), the
 *     bias riding in the product as one more k-step (bias_row); or pixel rows, Y_gᵀ (P, Mg) =
 *     colᵀ · W_gᵀ (lithe__sgemm_pixels), W_g being the GEMM's B (so prepared weights are the dense
 *     layers' packed Wᵀ), the bias and activation in the GEMM's transposed store. col is never
 *     built where it can be read in place; by geometry it is:
 *       shifted rows: a zero-bordered copy of X, split into stride0·stride1 phase planes, whose
 *         runs are the taps' rows (see phase_dims and "shifted rows" below); the GEMM packs its
 *         slivers of output pixels straight from those row pointers, only the kept columns;
 *       pointwise (1x1, stride 1, no padding): X itself;
 *       im2col, X unfolded into col in a workspace from the backend's allocator, only where the
 *         phase planes' rows would be more than twice the output rows.
 *     The backward is the same GEMMs transposed: dW_g += dY_g · colᵀ, dcol = W_gᵀ · dY_g folded
 *     back into dX (col2im), db += row sums of dY.
 * GEMM paths sum in the GEMM's order, not the twin's: within the GEMM's rounding of the twin
 * (test_onnx and test_simd check), and an image's bits do not depend on the batch or the thread
 * count. Forward images run in parallel ranges; the backward runs them in order (it accumulates
 * over them) and the GEMM splits each product over the thread pool. */
#include "gemm/gemm.h"
#include "simd/simd.h"
#include "threadpool.h"

#include <math.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>

static void view2(lithe_tensor *t, lithe__storage *st, const float *p, int64_t r, int64_t c) {
    memset(st, 0, sizeof *st);
    memset(t, 0, sizeof *t);
    st->refcount = 1;
    st->data = (void *)p;
    st->nbytes = (size_t)(r * c) * sizeof(float);
    st->backend = lithe__backend_cpu();
    t->refcount = 1;
    t->storage = st;
    t->dtype = LITHE_F32;
    t->ndim = 2;
    t->shape[0] = r;
    t->shape[1] = c;
    t->strides[0] = c;
    t->strides[1] = 1;
    t->numel = r * c;
}

/* C (M, N) = alpha op(A) op(B) + beta C on contiguous row-major host arrays, through be's gemm. */
static lithe_status gemm(lithe_backend *be, bool tA, bool tB, int64_t M, int64_t N, int64_t K, const float *A,
                         const float *B, float beta, float *C) {
    lithe_tensor ta, tb, tc;
    lithe__storage sa, sb, sc;
    view2(&ta, &sa, A, tA ? K : M, tA ? M : K);
    view2(&tb, &sb, B, tB ? N : K, tB ? K : N);
    view2(&tc, &sc, C, M, N);
    return be->ops->gemm(be, tA, tB, 1.0f, &ta, &tb, beta, &tc);
}

static bool is_depthwise(const lithe__conv2d *g) { return g->group == g->C && g->group == g->M; }
static bool is_pointwise(const lithe__conv2d *g) {
    return g->KH == 1 && g->KW == 1 && g->stride[0] == 1 && g->stride[1] == 1 && !g->pad[0] && !g->pad[1] &&
           !g->pad[2] && !g->pad[3];
}

/* The output columns [lo, hi) whose input column o*s - p + k*d lies inside [0, W). */
static void valid_range(int64_t OW, int64_t W, int64_t s, int64_t p, int64_t k, int64_t d, int64_t *lo, int64_t *hi) {
    int64_t off = k * d - p; /* input column = o * s + off */
    int64_t a = off >= 0 ? 0 : (-off + s - 1) / s;
    int64_t b = W - off <= 0 ? 0 : (W - off + s - 1) / s; /* first o with o*s + off >= W */
    *lo = a < OW ? a : OW;
    *hi = b < OW ? b : OW;
    if (*hi < *lo) *hi = *lo;
}

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

static void phase_dims(const lithe__conv2d *g, int64_t *Hq, int64_t *Wq);

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
 * eight lanes measured 245 vs 238 us there); four-lane ISAs (SSE2, NEON, WebAssembly) have no
 * dwconv_lanes and keep the long rows (not measured there; the WebAssembly module stays as it was). */
static bool dw_use_lanes(const lithe__conv2d *g, const lithe__simd_kernels *k) {
    if (!k->dwconv_lanes || g->KH * g->KW > LITHE__DWCONV_MAX_TAPS || g->OH <= 0 || g->OW <= 0)
        return false;
    if (g->W < 16) return true;
    int64_t Hq, Wq;
    phase_dims(g, &Hq, &Wq);
    return k->lanes >= 16 && g->stride[0] * g->stride[1] > 1 &&
           g->stride[0] * g->stride[1] * Hq * Wq * (int64_t)sizeof(float) > 32 * 1024;
}

/* Whether the table's dwconv3x3 (a 3x3 plane read in place, input rows shared by the output rows
 * that read them; simd.h has its conditions) runs g: padding 1 at the top and left, stride 1 with
 * padding 1 all round, or stride 2 reading no bottom or right padding, output rows at least the
 * table's dwconv3x3_min_width (AVX-512: 1, every depthwise node of mobilenet_v2; AVX2: 8, all but
 * the 7x7 and 14 -> 7 ones). Measured faster than the long rows and the lanes on each of them, AVX2
 * about even on 32 x 112x112 (docs/performance.md, "Depthwise 3x3 in place"). */
static bool dw_use_3x3(const lithe__conv2d *g, const lithe__simd_kernels *k) {
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

static void depthwise_forward(lithe_backend *be, const lithe__conv2d *g, const float *X, const float *W,
                              const float *b, const lithe__act *a, float *Y) {
    dw_layout L;
    const lithe__simd_kernels *k = lithe__simd();
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

static void depthwise_backward_channels(void *ctx, int64_t c0, int64_t c1) {
    const dwb_job *j = ctx;
    const lithe__conv2d *g = j->g;
    int64_t s0 = g->stride[0], s1 = g->stride[1], KH = g->KH, KW = g->KW, OW = g->OW;
    /* each tap column's in-bounds outputs, once (they depend on kw only) */
    int64_t lo_[LITHE__DWCONV_MAX_TAPS], hi_[LITHE__DWCONV_MAX_TAPS];
    for (int64_t kw = 0; kw < KW && KW <= LITHE__DWCONV_MAX_TAPS; kw++)
        valid_range(OW, g->W, s1, g->pad[1], kw, g->dil[1], &lo_[kw], &hi_[kw]);
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

static void depthwise_backward(const lithe__conv2d *g, const float *X, const float *W, const float *dY, float *dX,
                               float *dW, float *db) {
    dwb_job j = {g, X, W, dY, dX, dW, db, lithe__simd()};
    int64_t per = g->N * g->OH * g->OW * g->KH * g->KW;
    lithe__pool_for(lithe__cpu_pool(), g->C, per > 0 ? (1 << 15) / per + 1 : 1, depthwise_backward_channels, &j);
}

/* col (Cg·KH·KW, OH·OW) of one image-group: row (c, kh, kw) holds x[c] at the tap's positions, 0
 * where the window passes the padding. */
static void im2col(const lithe__conv2d *g, const float *x, int64_t Cg, float *col) {
    int64_t P = g->OH * g->OW, s0 = g->stride[0], s1 = g->stride[1];
    for (int64_t c = 0; c < Cg; c++)
        for (int64_t kh = 0; kh < g->KH; kh++)
            for (int64_t kw = 0; kw < g->KW; kw++) {
                float *row = col + ((c * g->KH + kh) * g->KW + kw) * P;
                int64_t lo, hi, off = kw * g->dil[1] - g->pad[1];
                valid_range(g->OW, g->W, s1, g->pad[1], kw, g->dil[1], &lo, &hi);
                for (int64_t oh = 0; oh < g->OH; oh++) {
                    float *r = row + oh * g->OW;
                    int64_t h = oh * s0 - g->pad[0] + kh * g->dil[0];
                    if (h < 0 || h >= g->H || lo >= hi) {
                        memset(r, 0, (size_t)g->OW * sizeof(float));
                        continue;
                    }
                    const float *xr = x + (c * g->H + h) * g->W;
                    for (int64_t ow = 0; ow < lo; ow++) r[ow] = 0.0f;
                    if (s1 == 1) memcpy(r + lo, xr + lo + off, (size_t)(hi - lo) * sizeof(float));
                    else
                        for (int64_t ow = lo; ow < hi; ow++) r[ow] = xr[ow * s1 + off];
                    for (int64_t ow = hi; ow < g->OW; ow++) r[ow] = 0.0f;
                }
            }
}

/* dx += col2im(dcol): the adjoint of im2col. */
static void col2im(const lithe__conv2d *g, const float *col, int64_t Cg, float *dx) {
    int64_t P = g->OH * g->OW, s0 = g->stride[0], s1 = g->stride[1];
    for (int64_t c = 0; c < Cg; c++)
        for (int64_t kh = 0; kh < g->KH; kh++)
            for (int64_t kw = 0; kw < g->KW; kw++) {
                const float *row = col + ((c * g->KH + kh) * g->KW + kw) * P;
                int64_t lo, hi, off = kw * g->dil[1] - g->pad[1];
                valid_range(g->OW, g->W, s1, g->pad[1], kw, g->dil[1], &lo, &hi);
                for (int64_t oh = 0; oh < g->OH; oh++) {
                    int64_t h = oh * s0 - g->pad[0] + kh * g->dil[0];
                    if (h < 0 || h >= g->H) continue;
                    float *xr = dx + (c * g->H + h) * g->W;
                    const float *r = row + oh * g->OW;
                    for (int64_t ow = lo; ow < hi; ow++) xr[ow * s1 + off] += r[ow];
                }
            }
}

static lithe_status workspace(lithe_backend *be, size_t n, float **out) {
    void *p = NULL;
    LITHE__TRY(be->ops->alloc(be, n * sizeof(float), &p));
    *out = p;
    return LITHE_OK;
}

/* ---- the GEMM-path forward ----
 * Shifted rows: the image-group is copied into zero-bordered phase planes xq (Cg, s0·s1, Hq, Wq)
 * (padding included, so no tap needs a bounds test; stride 1 is one plane, the padded image), and
 * tap (c, kh, kw)'s values for output row oh are a contiguous run of a plane: from the tap's
 * offset, output pixel (oh, ow) at oh·Wq + ow. The GEMM gets the K tap pointers, the output row
 * width OW and the row stride Wq (lithe__sgemm_rows' B, lithe__sgemm_pixels' A) and packs each
 * sliver of output pixels from them (one run per output row it touches): no im2col matrix, no
 * column computed and dropped, the product written into Y. Used unless the phase planes' rows are
 * more than twice the output rows (Wq - OW > OW: many short runs per sliver); then im2col into
 * col (K, OH·OW). Pointwise (1x1, stride 1, no padding): the GEMM reads X itself.
 * A fused activation (conv2d's a) costs no pass of its own with pixel rows (each tile, in the
 * GEMM's buffer before its transposed store); with filter rows a relu or clamp goes into the
 * microkernel's store when the kernel has one (gemm.h's clamp_ok: AVX-512, scalar), other acts
 * (and every act with other kernels) run the act kernel in place over the image-group's output
 * after its GEMM; the act kernel's bits either way, so equal to the act primitive after. (The GEMM's per-tile epilogue, one act call per tile row of nr floats, and
 * column blocks of the product that fit L2, each activated after its GEMM, measured slower than
 * one pass after: call overhead on 32-float rows; mobilenet_v2's 1x1 convolutions at 112x112
 * and 56x56 +4-9 %.) */

typedef struct gemm_job {
    lithe_backend *be;
    const lithe__conv2d *g;
    const float *X, *W, *b;
    const lithe__act *a;
    float *Y;
    const lithe__sgemm_packed_b *Wp; /* W (M, K) packed ahead as op(B) = Wᵀ (group 1), or NULL */
    _Atomic int status; /* the first failure (LITHE_OK: none) */
    bool pr;            /* pixel rows (pixel_rows, decided once per call: it reads the environment) */
    const float *R;     /* lithe__cpu_conv2d_add's residual (Y's shape), or NULL */
    bool res_first;     /* R + conv (else conv + R) */
} gemm_job;

/* The phase planes of a zero-bordered image-group (Hp x Wp padded): stride (s0, s1) splits it
 * into s0·s1 planes of Hq x Wq, plane (a, b) holding padded pixel (i·s0 + a, j·s1 + b) at (i, j).
 * Tap (kh, kw) of output (oh, ow) reads padded pixel (oh·s0 + kh·d0, ow·s1 + kw·d1): plane
 * (kh·d0 mod s0, kw·d1 mod s1) at (oh + kh·d0 div s0, ow + kw·d1 div s1), a stride-1 shift. With
 * output (oh, ow) at column oh·Wq + ow, every tap's B row is one contiguous run of a plane. */
static void phase_dims(const lithe__conv2d *g, int64_t *Hq, int64_t *Wq) {
    int64_t Hp = g->H + g->pad[0] + g->pad[2], Wp = g->W + g->pad[1] + g->pad[3];
    *Hq = (Hp + g->stride[0] - 1) / g->stride[0];
    *Wq = (Wp + g->stride[1] - 1) / g->stride[1];
}

static bool is_shifted(const lithe__conv2d *g) {
    int64_t Hq, Wq;
    phase_dims(g, &Hq, &Wq);
    return !is_pointwise(g) && Wq - g->OW <= g->OW;
}

/* The shifted-rows workspace of one range: the taps' row pointers and the phase planes xq; for
 * filter rows read in place (lithe__sgemm_rows_direct, `direct`), DIRECT_SLACK zeros after xq (a
 * sliver's dropped lanes read up to NR - 1 floats past a tap's last pixel) and rows[K] = ones, a
 * plane of 1s as wide as any sliver reads (the bias step's B row). */
typedef struct shifted_ws {
    const float **rows; /* K (+ 1: ones) */
    float *xq;          /* Cg·s0·s1·Hq·Wq */
    float *ones;        /* direct: Hq·Wq + DIRECT_SLACK */
    int64_t Hq, Wq;
} shifted_ws;
enum { DIRECT_SLACK = 64 }; /* >= NR - 1 of every kernel */

static void shifted_sizes(const lithe__conv2d *g, int64_t Cg, int64_t K, bool direct, size_t *ptrs, size_t *xq,
                          size_t *ones) {
    int64_t Hq, Wq;
    phase_dims(g, &Hq, &Wq);
    *ptrs = ((size_t)(K + 1) * sizeof(float *) + 63) / 64 * 16; /* in floats, 64-byte multiple */
    *xq = ((size_t)(Cg * g->stride[0] * g->stride[1] * Hq * Wq) + (direct ? DIRECT_SLACK : 0) + 15) / 16 * 16;
    *ones = direct ? ((size_t)(Hq * Wq) + DIRECT_SLACK + 15) / 16 * 16 : 0;
}

static size_t shifted_floats(const lithe__conv2d *g, int64_t Cg, int64_t K, bool direct) {
    size_t ptrs, xq, ones;
    shifted_sizes(g, Cg, K, direct, &ptrs, &xq, &ones);
    return ptrs + xq + ones;
}

static void shifted_init(const lithe__conv2d *g, int64_t Cg, int64_t K, bool direct, float *buf, shifted_ws *w) {
    int64_t s0 = g->stride[0], s1 = g->stride[1];
    size_t ptrs, xq, ones;
    phase_dims(g, &w->Hq, &w->Wq);
    shifted_sizes(g, Cg, K, direct, &ptrs, &xq, &ones);
    w->rows = (const float **)(void *)buf;
    w->xq = buf + ptrs;
    w->ones = direct ? w->xq + xq : NULL;
    if (direct) {
        size_t planes = (size_t)(Cg * s0 * s1 * w->Hq * w->Wq);
        memset(w->xq + planes, 0, (xq - planes) * sizeof(float));
        for (size_t i = 0; i < ones; i++) w->ones[i] = 1.0f;
    }
    int64_t k = 0, HWq = w->Hq * w->Wq, Wq = w->Wq;
    /* the borders, zero for good: images overwrite the interiors only (shifted_fill's rows h0, h0 +
     * s0, ... and columns w0, w0 + s1, ... of each plane), so only what lies around them is cleared */
    for (int64_t pl = 0; pl < Cg * s0 * s1; pl++) {
        int64_t pa = pl / s1 % s0, pb = pl % s1;
        int64_t h0 = ((pa - g->pad[0]) % s0 + s0) % s0, w0 = ((pb - g->pad[1]) % s1 + s1) % s1;
        int64_t R = h0 < g->H ? (g->H - h0 + s0 - 1) / s0 : 0, n = w0 < g->W ? (g->W - w0 + s1 - 1) / s1 : 0;
        int64_t r0 = (h0 + g->pad[0]) / s0, c0 = (w0 + g->pad[1]) / s1;
        float *q = w->xq + pl * HWq;
        if (!R || !n) R = 0, r0 = w->Hq; /* nothing of the image lands here */
        memset(q, 0, (size_t)(r0 * Wq) * sizeof(float));
        for (int64_t r = r0; r < r0 + R; r++) {
            for (int64_t j = 0; j < c0; j++) q[r * Wq + j] = 0.0f;
            for (int64_t j = c0 + n; j < Wq; j++) q[r * Wq + j] = 0.0f;
        }
        if (r0 + R < w->Hq) memset(q + (r0 + R) * Wq, 0, (size_t)((w->Hq - r0 - R) * Wq) * sizeof(float));
    }
    for (int64_t c = 0; c < Cg; c++)
        for (int64_t kh = 0; kh < g->KH; kh++)
            for (int64_t kw = 0; kw < g->KW; kw++) {
                int64_t th = kh * g->dil[0], tw = kw * g->dil[1];
                w->rows[k++] = w->xq + ((c * s0 + th % s0) * s1 + tw % s1) * HWq + th / s0 * w->Wq + tw / s1;
            }
    w->rows[K] = w->ones;
}

/* The image-group x into the interior of the phase planes: per channel and row phase a, the input
 * rows h = h0, h0 + s0, ... (h + pad0 = i·s0 + a) as one strided block of the SIMD table's row
 * copies (at stride 2 across, split_rows de-interleaves each row into the two column phases). */
static void shifted_fill(const lithe__conv2d *g, const shifted_ws *w, int64_t Cg, const float *x) {
    const lithe__simd_kernels *k = lithe__simd();
    int64_t s0 = g->stride[0], s1 = g->stride[1], Wq = w->Wq, HWq = w->Hq * Wq, W = g->W;
    for (int64_t c = 0; c < Cg; c++)
        for (int64_t pa = 0; pa < s0; pa++) {
            int64_t h0 = ((pa - g->pad[0]) % s0 + s0) % s0;
            if (h0 >= g->H) continue;
            int64_t R = (g->H - h0 + s0 - 1) / s0;
            const float *src = x + (c * g->H + h0) * W;
            float *plane = w->xq + (c * s0 + pa) * s1 * HWq + (h0 + g->pad[0]) / s0 * Wq; /* phase b = 0's row */
            if (s1 == 2) { /* column 0 to phase pad1 mod 2, column 1 to the other */
                int64_t p1 = g->pad[1];
                k->split_rows(R, W, plane + p1 % 2 * HWq + p1 / 2, plane + (1 + p1) % 2 * HWq + (1 + p1) / 2, Wq,
                              src, s0 * W);
                continue;
            }
            for (int64_t pb = 0; pb < s1; pb++) { /* the columns of phase pb: w + pad[1] = j·s1 + pb */
                int64_t w0 = ((pb - g->pad[1]) % s1 + s1) % s1;
                if (w0 >= W) continue;
                k->copy_rows(R, (W - w0 + s1 - 1) / s1, plane + pb * HWq + (w0 + g->pad[1]) / s1, Wq, src + w0,
                             s0 * W, s1);
            }
        }
}

/* Filter rows: a relu or clamp goes into the microkernel's store when the kernel clamps there
 * (gemm.h's clamp_ok: C written once, the act kernel's bits); other acts run after the GEMM. */
static bool act_in_store(const lithe__act *a) {
    return a && lithe__sgemm_kernel_best()->clamp_ok && lithe__sgemm_act_clamp(a, NULL, NULL, NULL);
}

static lithe_status shifted_forward(const lithe__conv2d *g, const shifted_ws *w, int64_t Cg, int64_t Mg, int64_t K,
                                    const float *x, const float *Wg, const float *b, const lithe__act *a, float *y) {
    shifted_fill(g, w, Cg, x);
    lithe__sgemm_epilogue e = {.bias_row = b};
    bool in_store = act_in_store(a);
    if (in_store) e.act = a, e.act_fn = lithe__simd()->act;
    const lithe__sgemm_epilogue *ep = b || in_store ? &e : NULL;
    if (w->ones && lithe__sgemm_rows_direct(NULL, Mg, g->OH, g->OW, K, Wg, K, w->rows, w->Wq, y, g->OH * g->OW, ep)) {
        if (a && !in_store) lithe__simd()->act(a, Mg * g->OH * g->OW, y, y);
        return LITHE_OK;
    }
    if (!lithe__sgemm_rows(NULL, true, Mg, g->OH * g->OW, K, Wg, K, w->rows, g->OW, w->Wq, y, g->OH * g->OW, ep))
        return LITHE_ERR_OOM;
    if (a && !in_store) lithe__simd()->act(a, Mg * g->OH * g->OW, y, y); /* as the im2col path */
    return LITHE_OK;
}

/* ---- orientation: filter rows, Y_g (Mg, P) = W_g · col, or pixel rows, Y_gᵀ (P, Mg) = colᵀ · W_gᵀ
 * (lithe__sgemm_pixels: the GEMM gathers each A sliver of MR pixels from the taps' rows and writes
 * its tiles transposed into Y; W_g is op(B), so weights prepared for inference are the dense
 * layers' packed Wᵀ). The one whose padded tile grid does less, in multiply-adds per lane, counting
 * what each adds: filter rows pack W in every call; pixel rows move every output through the tile
 * buffer (once per K block, twice more per later block). Decided by the per-image geometry and the
 * kernel alone, never by the batch, the threads or whether W is prepared, so an image's bits do
 * not depend on them. With AVX-512's 14 x 32 tile, LeNet's first layer (16 filters, K = 25) and
 * mobilenet's pointwise convolutions at 56x56 and up run filter rows; LeNet's second (32 filters,
 * K = 400) and mobilenet's pointwise ones at 14x14 and 7x7 pixel rows (mostly; docs/performance.md).
 * LITHE_CONV_ROWS=filters|pixels forces one (tests, tuning). */
static double kernel_speed(int mr) { return mr <= 2 ? 0.5 : mr <= 4 ? 0.9 : 1.0; }
static double rup(int64_t x, int64_t m) { return (double)((x + m - 1) / m * m); }

static bool pixel_rows(const lithe__conv2d *g, int64_t Mg, int64_t K) {
    const char *v = lithe__knob(LITHE__KNOB_conv_rows);
    if (v && !strcmp(v, "filters")) return false;
    if (v && !strcmp(v, "pixels")) return true;
    const lithe__sgemm_kernel *k = lithe__sgemm_kernel_best();
    const lithe__sgemm_kernel *kf = k->for_rows ? k->for_rows(Mg) : k, *kp = k->for_rows ? k->for_rows(g->OH * g->OW) : k;
    int64_t P = g->OH * g->OW;
    /* moving one output through the tile buffer, in lane multiply-adds: with the kernel's own
     * transpose (AVX-512's 16 x 16 blocks) about an eighth of NR; the driver's scalar loops cost
     * about 2 NR (WebAssembly SIMD128: pixel rows measured 12-16 % slower than filter rows on
     * mobilenet_v2's 14x14 layers at 1/8 NR, 3-10 % faster at 7x7) */
    double per_out = LITHE__SGEMM_HAS(k, transpose) ? k->nr / 8.0 : 2.0 * k->nr;
    double filters = rup(Mg, kf->mr) * rup(P, kf->nr) * (double)K / kernel_speed(kf->mr) + 2.0 * (double)(Mg * K);
    /* pointwise filter rows read X in place where the GEMM can (gemm.c's in_place, with the row
     * bias after the store: one K block of at least 32 steps, X's rows 16-float multiples not of
     * 1024, the filters in one A block), where pixel rows pack every pixel: about 2 lane
     * multiply-adds per element (mobilenet_v2's 192 -> 32 at 28x28: pixel rows 104 us, filter rows
     * 87 us in place; with AVX-512's ukernel_ap pixel rows read it in place too, 88 us) */
    if (LITHE__SGEMM_HAS(kf, ukernel_b) && is_pointwise(g) && K >= 32 && K < kf->kc && P % 16 == 0 && P % 1024 != 0 &&
        Mg <= kf->mc)
        filters -= 2.0 * (double)(P * K);
    double moves = 2.0 * (double)((K + kp->kc - 1) / kp->kc) - 1.0; /* a later K block reads the tile back */
    double pixels = rup(P, kp->mr) * rup(Mg, kp->nr) * (double)K / kernel_speed(kp->mr) + per_out * moves * (double)(Mg * P);
    return pixels < filters;
}

/* Whether filter rows read the shifted rows in place (lithe__sgemm_rows_direct) rather than pack
 * them: its slivers run per output row, so each row's last one leaves lanes idle (OW = 28 in
 * slivers of 32: 1/8), which costs more than the packing it saves where more filter tiles share
 * each packed sliver. Measured on Zen 4: LeNet's first layer (16 filters) 279 -> 235 us at batch 32;
 * mobilenet_v2's stem (32 filters, 112 wide: slivers 32, 32, 32, 16) 355 -> 370 us. Idle lanes x
 * padded filters against about 3.5 per output pixel: 2.3 there, 4.6 here. The same bits either way. */
static bool direct_pays(const lithe__conv2d *g, int64_t Mg) {
    const lithe__sgemm_kernel *k = lithe__sgemm_kernel_best();
    if (!LITHE__SGEMM_HAS(k, ukernel_bp)) return false;
    if (k->for_rows) k = k->for_rows(Mg);
    double P = (double)(g->OH * g->OW), idle = (double)g->OH * rup(g->OW, k->nr) - P;
    return idle * rup(Mg, k->mr) < 3.5 * P;
}

/* y = r + y (first) or y + r over n floats: lithe__cpu_conv2d_add's residual where it is not in the
 * GEMM's store (shifted rows, depthwise), through the SIMD table's binary add, the kernel the
 * graph's Add runs: the same bits as the unfused pair. */
static void add_residual(float *y, const float *r, int64_t n, bool first) {
    lithe__simd()->binary(LITHE__BIN_ADD, n, first ? r : y, false, first ? y : r, false, y);
}

/* ---- WebAssembly SIMD128: direct convolution (shifted rows without packing) ----
 * Builds with -msimd128 run every shifted-rows convolution (is_shifted) whose GEMM kernel is the
 * SIMD128 one (LITHE_CPU_ISA may name the scalar one in WASI) through a kernel of its own instead
 * of the GEMM: output pixels as rows, filters as lanes (the pixel-rows orientation), reading the
 * zero-bordered phase planes in place. Tile: 4 output pixels x 8 filters, 8 f32x4 accumulators;
 * per tap k one i32 load (the tap's byte offset into the planes), four splat loads (each pixel's
 * value at base + offset: the tile's pixels may span output rows, each has its own base), two
 * vector loads of the filters' weights (the dense layers' packed Wᵀ layout, lithe__sgemm_pack_b's
 * slivers of 8; prepared weights are read as they are), 8 mul + 8 add, no spill (5 x 8 spilled:
 * V8 loads every pixel's splat before the multiplies, docs/wasm.md), nothing packed per call but the weights when they are not prepared. K is not blocked
 * (a sliver's K x 8 weights stay in L1: 12.5 KiB for LeNet's K = 400); the tile goes to Y
 * (NCHW, pixels consecutive) after bias and the clamp, as two 4 x 4 transposes. The GEMM's tiles
 * (5 x 8 or 4 x 8 through the packing and, with pixel rows, a tile buffer and its transposed
 * store) ran LeNet's 5x5 convolutions at 18 and 27 GFLOP/s under Node; this one (docs/wasm.md).
 * Each output is bias + (sum over taps k ascending of x·w, from 0, rounded product then rounded
 * add), then the clamp: fixed by the geometry, so an image's bits do not depend on the batch, the
 * threads, the tile it lands in or whether W is prepared. Within the GEMM's rounding of the twin. */
#if defined(__wasm_simd128__)
#include <wasm_simd128.h>

enum { WDC_NR = 8, WDC_KC = 256, WDC_CHUNK = 64 /* tiles per chunk: its input rows stay in L1 */ };

#define WDC_MADD(acc, x, b) acc = wasm_f32x4_add(acc, wasm_f32x4_mul(x, b))

static inline v128_t wdc_clamp(int clamp, float lo, float hi, v128_t t) {
    if (clamp == LITHE__SGEMM_CLAMP_RELU) return wasm_f32x4_pmax(wasm_f32x4_splat(0.0f), t);
    if (clamp != LITHE__SGEMM_CLAMP_CLIP) return t;
    v128_t x = wasm_f32x4_add(t, wasm_f32x4_splat(0.0f)); /* the act kernel's x·1 + 0: -0 to +0 */
    return wasm_f32x4_pmax(wasm_f32x4_pmin(x, wasm_f32x4_splat(hi)), wasm_f32x4_splat(lo));
}

typedef struct wdc_ctx {
    const float *xq;       /* the phase planes */
    const int32_t *toff;   /* K: tap k's byte offset from a pixel's base */
    const int32_t *pix;    /* P: output pixel p's offset (floats) in the planes */
    const float *w;        /* packed Wᵀ: block pc at pc·npad, sliver j at j·kb, (k, f) at k·8 + f */
    int64_t K, Mg, P, npad;
    const float *b;        /* Mg or NULL */
    int clamp;
    float lo, hi;
    float *y;              /* (Mg, P) */
} wdc_ctx;

/* An advanced pointer, hidden from clang's loop strength reduction (gemm_wasmsimd.c's OPAQUE: the
 * loads keep their offset immediates): no instruction. */
#define WDC_OPAQUE(p) __asm__("" : "+r"(p))

/* One tile: pixels p0..p0+np-1 (np <= 4), filters j..j+nf-1 (nf <= 8). inrow: the four pixels lie
 * in one output row (consecutive floats of the planes): their splats are one pointer's offsets;
 * else each pixel has its own base (one add per pixel per tap). */
static inline __attribute__((always_inline)) void wdc_tile(const bool inrow, const wdc_ctx *c, int64_t p0, int64_t np,
                                                           int64_t j, int64_t nf, v128_t bias0, v128_t bias1) {
    const int64_t last = c->P - 1;
#define BASE(i) (const char *)(c->xq + c->pix[p0 + (i) < last ? p0 + (i) : last])
    const char *x0 = BASE(0), *x1 = inrow ? x0 : BASE(1), *x2 = inrow ? x0 : BASE(2), *x3 = inrow ? x0 : BASE(3);
#undef BASE
    v128_t z = wasm_f32x4_splat(0.0f);
    v128_t c00 = z, c01 = z, c10 = z, c11 = z, c20 = z, c21 = z, c30 = z, c31 = z;
    for (int64_t pc = 0; pc < c->K; pc += WDC_KC) {
        int64_t kb = c->K - pc < WDC_KC ? c->K - pc : WDC_KC;
        const float *wb = c->w + pc * c->npad + j * kb;
        const int32_t *t = c->toff + pc, *te = t + kb;
        for (; t < te; t++) {
            int32_t o = *t;
            v128_t b0 = wasm_v128_load(wb), b1 = wasm_v128_load(wb + 4);
#define PIX(i)                                                                                              \
    {                                                                                                       \
        v128_t xs = inrow ? wasm_v128_load32_splat((const float *)(x0 + o) + (i)) : wasm_v128_load32_splat(x##i + o); \
        WDC_MADD(c##i##0, xs, b0);                                                                          \
        WDC_MADD(c##i##1, xs, b1);                                                                          \
    }
            PIX(0) PIX(1) PIX(2) PIX(3)
#undef PIX
            wb += WDC_NR;
            WDC_OPAQUE(wb);
            WDC_OPAQUE(t);
        }
    }
#define FIN(i)                                                                          \
    c##i##0 = wdc_clamp(c->clamp, c->lo, c->hi, wasm_f32x4_add(c##i##0, bias0));        \
    c##i##1 = wdc_clamp(c->clamp, c->lo, c->hi, wasm_f32x4_add(c##i##1, bias1));
    FIN(0) FIN(1) FIN(2) FIN(3)
#undef FIN
    const int64_t P = c->P;
    float *y = c->y + j * P + p0;
    if (np == 4 && nf == WDC_NR) { /* filter f's four pixels as one vector: two 4 x 4 transposes */
#define T4(r0, r1, r2, r3, f)                                                                              \
    {                                                                                                      \
        v128_t t0 = wasm_i32x4_shuffle(r0, r1, 0, 4, 1, 5), t1 = wasm_i32x4_shuffle(r2, r3, 0, 4, 1, 5);  \
        v128_t t2 = wasm_i32x4_shuffle(r0, r1, 2, 6, 3, 7), t3 = wasm_i32x4_shuffle(r2, r3, 2, 6, 3, 7);  \
        wasm_v128_store(y + (f) * P, wasm_i32x4_shuffle(t0, t1, 0, 1, 4, 5));                              \
        wasm_v128_store(y + ((f) + 1) * P, wasm_i32x4_shuffle(t0, t1, 2, 3, 6, 7));                        \
        wasm_v128_store(y + ((f) + 2) * P, wasm_i32x4_shuffle(t2, t3, 0, 1, 4, 5));                        \
        wasm_v128_store(y + ((f) + 3) * P, wasm_i32x4_shuffle(t2, t3, 2, 3, 6, 7));                        \
    }
        T4(c00, c10, c20, c30, 0)
        T4(c01, c11, c21, c31, 4)
#undef T4
        return;
    }
    float tile[4][WDC_NR];
#define KEEP(i) wasm_v128_store(tile[i], c##i##0), wasm_v128_store(tile[i] + 4, c##i##1);
    KEEP(0) KEEP(1) KEEP(2) KEEP(3)
#undef KEEP
    for (int64_t f = 0; f < nf; f++)
        for (int64_t i = 0; i < np; i++) y[f * P + i] = tile[i][f];
}

/* 4 x 8 (4 x 8 rather than the GEMM's 5 x 8: V8 loads a tap's splats together before their
 * products, so five pixels' need 17 v128s and spilled, 24 GFLOP/s on LeNet's conv2 under Node;
 * four pixels 39, and 43 (the row variant) with one pointer for the four) */
static __attribute__((noinline)) void lithe_f32_conv2d_ukernel_4x8__wasmsimd(const wdc_ctx *c, int64_t p0, int64_t np,
                                                                             int64_t j, int64_t nf, v128_t bias0,
                                                                             v128_t bias1) {
    wdc_tile(false, c, p0, np, j, nf, bias0, bias1);
}
static __attribute__((noinline)) void lithe_f32_conv2d_ukernel_4x8_row__wasmsimd(const wdc_ctx *c, int64_t p0,
                                                                                 int64_t j, int64_t nf, v128_t bias0,
                                                                                 v128_t bias1) {
    wdc_tile(true, c, p0, 4, j, nf, bias0, bias1);
}

/* Tiles [t0, t1) (4 pixels each) of every filter sliver, WDC_CHUNK tiles at a time. */
static void wdc_tiles(void *ctx, int64_t t0, int64_t t1) {
    const wdc_ctx *c = ctx;
    for (int64_t c0 = t0; c0 < t1; c0 += WDC_CHUNK) {
        int64_t c1 = c0 + WDC_CHUNK < t1 ? c0 + WDC_CHUNK : t1;
        for (int64_t j = 0; j < c->Mg; j += WDC_NR) {
            int64_t nf = c->Mg - j < WDC_NR ? c->Mg - j : WDC_NR;
            float bb[WDC_NR] = {0};
            for (int64_t f = 0; f < nf && c->b; f++) bb[f] = c->b[j + f];
            v128_t bias0 = wasm_v128_load(bb), bias1 = wasm_v128_load(bb + 4);
            for (int64_t t = c0; t < c1; t++) {
                int64_t p0 = 4 * t, np = c->P - p0 < 4 ? c->P - p0 : 4;
                if (np == 4 && c->pix[p0 + 3] - c->pix[p0] == 3)
                    lithe_f32_conv2d_ukernel_4x8_row__wasmsimd(c, p0, j, nf, bias0, bias1);
                else
                    lithe_f32_conv2d_ukernel_4x8__wasmsimd(c, p0, np, j, nf, bias0, bias1);
            }
        }
    }
}

static bool wdc_applies(const lithe__conv2d *g) {
    return is_shifted(g) && lithe__sgemm_kernel_best() == lithe__sgemm_kernel_wasmsimd() && g->OH > 0 && g->OW > 0 &&
           g->M / g->group > 0 && g->C / g->group * g->KH * g->KW > 0 && /* else the GEMM path's empty cases */
           shifted_floats(g, g->C / g->group, g->C / g->group * g->KH * g->KW, false) < ((size_t)1 << 29); /* int32 bytes */
}

/* Wg (Mg, K) into the packed Wᵀ layout (lithe__sgemm_pack_b's for an 8-wide kernel with kc 256). */
static void wdc_pack(const float *Wg, int64_t Mg, int64_t K, int64_t npad, float *dst) {
    for (int64_t pc = 0; pc < K; pc += WDC_KC) {
        int64_t kb = K - pc < WDC_KC ? K - pc : WDC_KC;
        for (int64_t j = 0; j < npad; j += WDC_NR)
            for (int64_t k = 0; k < kb; k++)
                for (int64_t f = 0; f < WDC_NR; f++)
                    dst[pc * npad + j * kb + k * WDC_NR + f] = j + f < Mg ? Wg[(j + f) * K + pc + k] : 0.0f;
    }
}

/* Images [n0, n1) of a gemm_job through the direct kernel (wdc_applies). */
static void wdc_images(gemm_job *j, int64_t n0, int64_t n1) {
    const lithe__conv2d *g = j->g;
    int64_t Cg = g->C / g->group, Mg = g->M / g->group, K = Cg * g->KH * g->KW, P = g->OH * g->OW;
    int64_t npad = (Mg + WDC_NR - 1) / WDC_NR * WDC_NR;
    const lithe__sgemm_packed_b *Wp = j->Wp;
    bool prepared = Wp && Wp->nr == WDC_NR && Wp->kc == WDC_KC && Wp->transB && Wp->K == K && Wp->N == Mg;
    size_t sh = shifted_floats(g, Cg, K, false), ints = ((size_t)(K + P) + 15) / 16 * 16;
    size_t wts = prepared ? 0 : (size_t)(g->group * K * npad);
    float *ws = NULL;
    lithe_status s = workspace(j->be, sh + ints + wts, &ws);
    if (s != LITHE_OK) {
        int ok = LITHE_OK;
        atomic_compare_exchange_strong(&j->status, &ok, (int)s);
        return;
    }
    shifted_ws sw;
    shifted_init(g, Cg, K, false, ws, &sw);
    int32_t *toff = (int32_t *)(void *)(ws + sh), *pix = toff + K;
    for (int64_t k = 0; k < K; k++) toff[k] = (int32_t)((sw.rows[k] - sw.xq) * (int64_t)sizeof(float));
    for (int64_t p = 0; p < P; p++) pix[p] = (int32_t)(p / g->OW * sw.Wq + p % g->OW);
    float *wt = ws + sh + ints;
    for (int64_t gi = 0; gi < g->group && !prepared; gi++) wdc_pack(j->W + gi * Mg * K, Mg, K, npad, wt + gi * K * npad);
    wdc_ctx c = {.xq = sw.xq, .toff = toff, .pix = pix, .K = K, .Mg = Mg, .P = P, .npad = npad};
    bool in_store = j->a && lithe__sgemm_act_clamp(j->a, &c.clamp, &c.lo, &c.hi);
    int64_t tiles = (P + 3) / 4, grain = (1 << 17) / (4 * K * npad) + 1;
    for (int64_t n = n0; n < n1; n++)
        for (int64_t gi = 0; gi < g->group; gi++) {
            shifted_fill(g, &sw, Cg, j->X + (n * g->C + gi * Cg) * g->H * g->W);
            c.w = prepared ? Wp->data : wt + gi * K * npad;
            c.b = j->b ? j->b + gi * Mg : NULL;
            c.y = j->Y + (n * g->M + gi * Mg) * P;
            /* batch 1: the image's tiles over the threads (the GEMM split its own work there) */
            lithe__pool_for(g->N == 1 ? lithe__cpu_pool() : NULL, tiles, grain, wdc_tiles, &c);
            if (j->a && !in_store) lithe__simd()->act(j->a, Mg * P, c.y, c.y);
        }
    j->be->ops->free(j->be, ws);
}
#endif

/* Images [n0, n1) of a GEMM-path forward, with their own workspace: images run in parallel (each
 * output image belongs to one range); a GEMM started inside a range runs in its thread. */
static void gemm_images(void *ctx, int64_t n0, int64_t n1) {
    gemm_job *j = ctx;
    const lithe__conv2d *g = j->g;
#if defined(__wasm_simd128__)
    if (wdc_applies(g)) {
        wdc_images(j, n0, n1);
        int64_t per = g->M * g->OH * g->OW; /* lithe__cpu_conv2d_add's residual, after the images */
        if (j->R && atomic_load(&j->status) == LITHE_OK)
            add_residual(j->Y + n0 * per, j->R + n0 * per, (n1 - n0) * per, j->res_first);
        return;
    }
#endif
    int64_t Cg = g->C / g->group, Mg = g->M / g->group, K = Cg * g->KH * g->KW, P = g->OH * g->OW;
    bool pw = is_pointwise(g), sh = is_shifted(g), pr = j->pr;
    /* filter rows on the shifted rows read in place (lithe__sgemm_rows_direct, single-threaded: where
     * images run in parallel or the pool has one thread; the same bits as the packed product) */
    bool direct = sh && !pr && direct_pays(g, Mg) && (g->N > 1 || lithe__pool_threads(lithe__cpu_pool()) <= 1);
    size_t ptrs = ((size_t)K * sizeof(float *) + 63) / 64 * 16; /* pixel rows' row pointers, in floats */
    size_t need = sh ? shifted_floats(g, Cg, K, direct) : pw ? 0 : (size_t)(K * P);
    if (pr && !sh) need += ptrs;
    float *ws = NULL;
    shifted_ws sw = {0};
    lithe_status s = need ? workspace(j->be, need, &ws) : LITHE_OK;
    if (s == LITHE_OK && sh) shifted_init(g, Cg, K, direct, ws, &sw);
    float *col = pr && !sh ? ws + ptrs : ws;
    const float **rows = sh ? sw.rows : (const float **)(void *)ws;
    lithe__sgemm_epilogue pe = {.act = j->a, .act_fn = lithe__simd()->act};
    for (int64_t n = n0; n < n1 && s == LITHE_OK; n++)
        for (int64_t gi = 0; gi < g->group && s == LITHE_OK; gi++) {
            const float *x = j->X + (n * g->C + gi * Cg) * g->H * g->W, *Wg = j->W + gi * Mg * K;
            const float *b = j->b ? j->b + gi * Mg : NULL;
            float *y = j->Y + (n * g->M + gi * Mg) * P;
            if (pr) { /* Y_gᵀ = colᵀ · W_gᵀ, bias and activation in the GEMM's store */
                int64_t ow = P, a_row = 0;
                if (sh) {
                    shifted_fill(g, &sw, Cg, x);
                    ow = g->OW;
                    a_row = sw.Wq;
                } else {
                    const float *src = pw ? x : col;
                    if (!pw) im2col(g, x, Cg, col);
                    for (int64_t k = 0; k < K; k++) rows[k] = src + k * P;
                }
                pe.bias = b;
                if (j->R) pe.res = j->R + (n * g->M + gi * Mg) * P, pe.ldr = P, pe.res_first = j->res_first;
                if (!lithe__sgemm_pixels(NULL, true, P, Mg, K, rows, ow, a_row, true, Wg, K, j->Wp, y, P,
                                         b || j->a || j->R ? &pe : NULL))
                    s = LITHE_ERR_OOM;
                continue;
            }
            if (sh) {
                s = shifted_forward(g, &sw, Cg, Mg, K, x, Wg, b, j->a, y);
                if (j->R && s == LITHE_OK) add_residual(y, j->R + (n * g->M + gi * Mg) * P, Mg * P, j->res_first);
                continue;
            }
            if (!pw) im2col(g, x, Cg, ws);
            lithe__sgemm_epilogue e = {.bias_row = b};
            bool in_store = act_in_store(j->a);
            if (in_store) e.act = j->a, e.act_fn = lithe__simd()->act;
            if (j->R) e.res = j->R + (n * g->M + gi * Mg) * P, e.ldr = P, e.res_first = j->res_first;
            if (!lithe__sgemm(NULL, true, false, false, Mg, P, K, 1.0f, Wg, K, pw ? x : ws, P, 0.0f, y, P,
                              b || in_store || j->R ? &e : NULL))
                s = LITHE_ERR_OOM;
            /* other activations over the image-group's output in one call: the GEMM's per-tile
             * epilogue calls the act kernel per tile row (nr floats), which measured slower */
            else if (j->a && !in_store)
                lithe__simd()->act(j->a, Mg * P, y, y);
        }
    if (ws) j->be->ops->free(j->be, ws);
    if (s != LITHE_OK) {
        int ok = LITHE_OK;
        atomic_compare_exchange_strong(&j->status, &ok, (int)s);
    }
}

/* Every image's GEMM (one image per range when there are several; batch 1: the GEMM splits its own
 * work), R added in the store where given (lithe__cpu_conv2d_add). */
static lithe_status gemm_all_images(lithe_backend *be, const lithe__conv2d *g, const float *X, const float *W,
                                    const lithe__sgemm_packed_b *Wp, const float *b, const lithe__act *a,
                                    const float *R, bool res_first, float *Y) {
    gemm_job j = {be, g, X, W, b, a, Y, g->group == 1 ? Wp : NULL, LITHE_OK,
                  pixel_rows(g, g->M / g->group, g->C / g->group * g->KH * g->KW), R, res_first};
    lithe__pool_for(g->N > 1 ? lithe__cpu_pool() : NULL, g->N, 1, gemm_images, &j);
    lithe_status s = (lithe_status)atomic_load(&j.status);
    if (s == LITHE_ERR_OOM) /* the message may have been set on a worker thread: set it here too */
        return lithe__oom("conv2d workspace", (size_t)(g->C / g->group * g->KH * g->KW * g->OH * g->OW) * sizeof(float));
    if (s != LITHE_OK) return lithe__fail(s, "conv2d: the GEMM of an image failed");
    return LITHE_OK;
}

lithe_status lithe__cpu_conv2d(lithe_backend *be, const lithe__conv2d *g, const float *X, const float *W,
                               const float *b, const lithe__act *a, float *Y) {
    return lithe__cpu_conv2d_packed(be, g, X, W, NULL, b, a, Y);
}

lithe_status lithe__cpu_conv2d_packed(lithe_backend *be, const lithe__conv2d *g, const float *X, const float *W,
                                      const lithe__sgemm_packed_b *Wp, const float *b, const lithe__act *a, float *Y) {
    if (is_depthwise(g)) {
        depthwise_forward(be, g, X, W, b, a, Y);
        return LITHE_OK;
    }
    return gemm_all_images(be, g, X, W, Wp, b, a, NULL, false, Y);
}

lithe_status lithe__cpu_conv2d_add(lithe_backend *be, const lithe__conv2d *g, const float *X, const float *W,
                                   const lithe__sgemm_packed_b *Wp, const float *b, const float *R, bool res_first,
                                   float *Y) {
    if (is_depthwise(g)) {
        depthwise_forward(be, g, X, W, b, NULL, Y);
        add_residual(Y, R, g->N * g->M * g->OH * g->OW, res_first);
        return LITHE_OK;
    }
    return gemm_all_images(be, g, X, W, Wp, b, NULL, R, res_first, Y);
}

lithe_status lithe__cpu_conv2d_backward(lithe_backend *be, const lithe__conv2d *g, const float *X, const float *W,
                                        const float *dY, float *dX, float *dW, float *db) {
    if (is_depthwise(g)) {
        depthwise_backward(g, X, W, dY, dX, dW, db);
        return LITHE_OK;
    }
    int64_t Cg = g->C / g->group, Mg = g->M / g->group, K = Cg * g->KH * g->KW, P = g->OH * g->OW;
    bool pw = is_pointwise(g);
    float *col = NULL;
    if (!pw && (dW || dX)) LITHE__TRY(workspace(be, (size_t)(K * P), &col));
    lithe_status s = LITHE_OK;
    for (int64_t n = 0; n < g->N && s == LITHE_OK; n++)
        for (int64_t gi = 0; gi < g->group && s == LITHE_OK; gi++) {
            const float *x = X + (n * g->C + gi * Cg) * g->H * g->W;
            const float *gy = dY + (n * g->M + gi * Mg) * P;
            if (db)
                for (int64_t m = 0; m < Mg; m++) {
                    float acc = db[gi * Mg + m];
                    for (int64_t p = 0; p < P; p++) acc += gy[m * P + p];
                    db[gi * Mg + m] = acc;
                }
            if (dW) {
                if (!pw) im2col(g, x, Cg, col);
                s = gemm(be, false, true, Mg, K, P, gy, pw ? x : col, 1.0f, dW + gi * Mg * K);
            }
            if (dX && s == LITHE_OK) {
                float *dx = dX + (n * g->C + gi * Cg) * g->H * g->W;
                if (pw) {
                    s = gemm(be, true, false, K, P, Mg, W + gi * Mg * K, gy, 1.0f, dx);
                } else {
                    s = gemm(be, true, false, K, P, Mg, W + gi * Mg * K, gy, 0.0f, col);
                    if (s == LITHE_OK) col2im(g, col, Cg, dx);
                }
            }
        }
    if (col) be->ops->free(be, col);
    return s;
}

/* ---- pooling: the scalar twins' loops, split over (image, channel) planes; 2x2 stride-2 max
 * pooling without padding (LeNet's) has its own loop with the twin's tap order and first-maximum
 * rule (the SIMD table's maxpool2x2_row, or at inference maxpool2x2_rows over a whole range of
 * planes when their heights are even, several short rows per vector); other pooling whose windows all lie inside the plane (no padding: GlobalAveragePool, most
 * AveragePools) runs eight planes side by side, each plane's window summed or maxed in the twin's
 * tap order, so eight independent chains run where the twin has one. Selections and per-window
 * sums in the twin's order: bit-identical. which NULL (inference): no indices are written. ---- */

typedef struct pool_job {
    const lithe__pool2d *g;
    const float *X, *dY;
    float *Y, *dX;
    int32_t *which;
    const int32_t *cwhich;
} pool_job;

static bool is_max2x2(const lithe__pool2d *g) {
    return g->max && g->KH == 2 && g->KW == 2 && g->stride[0] == 2 && g->stride[1] == 2 && !g->pad[0] &&
           !g->pad[1] && g->dil[0] == 1 && g->dil[1] == 1 && 2 * g->OH <= g->H && 2 * g->OW <= g->W;
}

/* Every window's taps inside the plane (no padding, ceil_mode not reaching past the edge). */
static bool pool_inbounds(const lithe__pool2d *g) {
    return !g->pad[0] && !g->pad[1] && g->OH > 0 && g->OW > 0 &&
           (g->OH - 1) * g->stride[0] + (g->KH - 1) * g->dil[0] < g->H &&
           (g->OW - 1) * g->stride[1] + (g->KW - 1) * g->dil[1] < g->W;
}

/* Eight planes of an in-bounds pooling: the twin's sum from 0.0f over taps kh, kw ascending, or its
 * first maximum (the first tap taken as it is, then `>`), divided by KH·KW (every tap counts). */
enum { POOL_PLANES = 8 };
static void pool_planes8(const lithe__pool2d *g, const float *x, float *y, int32_t *which) {
    const int64_t HW = g->H * g->W, OP = g->OH * g->OW;
    const float div = (float)(g->KH * g->KW);
    for (int64_t oh = 0; oh < g->OH; oh++)
        for (int64_t ow = 0; ow < g->OW; ow++) {
            const int64_t o = oh * g->OW + ow, base = oh * g->stride[0] * g->W + ow * g->stride[1];
            float acc[POOL_PLANES];
            int32_t arg[POOL_PLANES];
            for (int l = 0; l < POOL_PLANES; l++) {
                acc[l] = g->max ? x[l * HW + base] : 0.0f;
                arg[l] = (int32_t)base;
            }
            for (int64_t kh = 0; kh < g->KH; kh++) {
                const float *row = x + base + kh * g->dil[0] * g->W;
                for (int64_t kw = 0; kw < g->KW; kw++) {
                    const int64_t t = kw * g->dil[1];
                    if (g->max) {
                        const int32_t at = (int32_t)(row - x + t);
                        for (int l = 0; l < POOL_PLANES; l++) {
                            const float v = row[l * HW + t];
                            const bool gt = v > acc[l];
                            acc[l] = gt ? v : acc[l];
                            arg[l] = gt ? at : arg[l];
                        }
                    } else {
                        for (int l = 0; l < POOL_PLANES; l++) acc[l] += row[l * HW + t];
                    }
                }
            }
            for (int l = 0; l < POOL_PLANES; l++) {
                y[l * OP + o] = g->max ? acc[l] : acc[l] / div;
                if (which) which[l * OP + o] = arg[l];
            }
        }
}

static void pool_planes(void *ctx, int64_t p0, int64_t p1) {
    const pool_job *j = ctx;
    const lithe__pool2d *g = j->g;
    int64_t HW = g->H * g->W, OP = g->OH * g->OW;
    if (!is_max2x2(g)) {
        if (pool_inbounds(g))
            for (; p0 + POOL_PLANES <= p1; p0 += POOL_PLANES)
                pool_planes8(g, j->X + p0 * HW, j->Y + p0 * OP, j->which ? j->which + p0 * OP : NULL);
        if (p0 == p1) return;
        lithe__pool2d sub = *g;
        sub.N = 1;
        sub.C = p1 - p0;
        lithe_f32_pool2d__scalar(&sub, j->X + p0 * HW, j->Y + p0 * OP, j->which ? j->which + p0 * OP : NULL);
        return;
    }
    const lithe__simd_kernels *k = lithe__simd();
    if (!j->which) { /* inference: whole planes, or the range at once when its planes' row pairs follow */
        if (g->H == 2 * g->OH) k->maxpool2x2_rows((p1 - p0) * g->OH, g->OW, j->X + p0 * HW, g->W, j->Y + p0 * OP);
        else
            for (int64_t nc = p0; nc < p1; nc++) k->maxpool2x2_rows(g->OH, g->OW, j->X + nc * HW, g->W, j->Y + nc * OP);
        return;
    }
    for (int64_t nc = p0; nc < p1; nc++) {
        const float *x = j->X + nc * HW;
        for (int64_t oh = 0; oh < g->OH; oh++)
            k->maxpool2x2_row(g->OW, x + 2 * oh * g->W, x + (2 * oh + 1) * g->W, g->W, (int32_t)(2 * oh * g->W),
                              j->Y + nc * OP + oh * g->OW, j->which ? j->which + nc * OP + oh * g->OW : NULL);
    }
}

lithe_status lithe__cpu_pool2d(const lithe__pool2d *g, const float *X, float *Y, int32_t *which) {
    pool_job j = {.g = g, .X = X, .Y = Y, .which = which};
    int64_t per = g->OH * g->OW * g->KH * g->KW;
    lithe__pool_for(lithe__cpu_pool(), g->N * g->C, per > 0 ? (1 << 15) / per + 1 : 1, pool_planes, &j);
    return LITHE_OK;
}

static void pool_back_planes(void *ctx, int64_t p0, int64_t p1) {
    const pool_job *j = ctx;
    lithe__pool2d sub = *j->g;
    int64_t HW = sub.H * sub.W, OP = sub.OH * sub.OW;
    sub.N = 1;
    sub.C = p1 - p0;
    lithe_f32_pool2d_backward__scalar(&sub, j->dY + p0 * OP, j->cwhich ? j->cwhich + p0 * OP : NULL, j->dX + p0 * HW);
}

lithe_status lithe__cpu_pool2d_backward(const lithe__pool2d *g, const float *dY, const int32_t *which, float *dX) {
    pool_job j = {.g = g, .dY = dY, .dX = dX, .cwhich = which};
    int64_t per = g->OH * g->OW * g->KH * g->KW;
    lithe__pool_for(lithe__cpu_pool(), g->N * g->C, per > 0 ? (1 << 15) / per + 1 : 1, pool_back_planes, &j);
    return LITHE_OK;
}
