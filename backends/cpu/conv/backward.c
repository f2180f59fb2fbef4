/* The GEMM-path convolution backward through the taps' shifted rows (issue 29), with no col matrix:
 *
 *   dW_gᵀ (K, Mg) += col (K, P) · dY_gᵀ (P, Mg): col's A slivers (MR taps x kc pixels) are packed
 *     straight from the shifted rows of the image's phase planes (shifted_init / shifted_fill, the
 *     forward's), where im2col wrote col (K x P floats) and the GEMM then read it again; or, where
 *     the filters fill fewer of the tile's lanes than the taps would (dw_swap: AVX-512, LeNet's first
 *     layer), dW_g (Mg, K) += dY_g · colᵀ in place, the taps' slivers as B (pack_b_taps);
 *   dX (stride 1): dcol = W_gᵀ · dY_g tile by tile (MR taps x NR pixels of the flattened output, Mg steps),
 *     each tile added straight into a zero-bordered copy of dx at the taps' shifts (col2im fused into
 *     the product's store: dcol, K x P floats, was written to memory and read back by col2im), W_gᵀ
 *     packed once per call instead of once per image.
 *
 * The bits are those of the im2col / col2im path (conv/gemm.c) it replaces: each dW element is the
 * driver's sum (pixels in kc blocks, each accumulated from zero in order by the same microkernel, then
 * added to dW with beta 1, image after image: dW is kept transposed over the batch and turned back at
 * the end), and each dX element gets col2im's adds in col2im's order (taps in (c, kh, kw) order, each a
 * rounded dx + dcol, dcol from the microkernel with beta 0). test_conv_bwd compares both with the
 * im2col path bit for bit. */
#include "conv.h"
#include "../gemm/gemm_internal.h"

static const lithe__sgemm_kernel *bwd_kernel(int64_t M) {
    const lithe__sgemm_kernel *k = lithe__sgemm_kernel_best();
    return k->for_rows ? k->for_rows(M) : k;
}

bool lithe__conv_bwd_taps_dw(const lithe__conv2d *g) {
    return !is_pointwise(g) && is_shifted(g) && !lithe__knob(LITHE__KNOB_conv_rows);
}

/* Images run in parallel (a tile's taps add into overlapping dx elements, so one image is one
 * thread's): a single image with several threads keeps the im2col path, whose GEMM splits (the same bits). */
bool lithe__conv_bwd_taps_dx(const lithe__conv2d *g) {
    int64_t Mg = g->M / g->group;
    return !is_pointwise(g) && g->stride[0] == 1 && g->stride[1] == 1 && Mg <= bwd_kernel(g->C / g->group * g->KH * g->KW)->kc &&
           (g->N > 1 || lithe__pool_threads(lithe__cpu_pool()) <= 1) && !lithe__knob(LITHE__KNOB_conv_rows);
}

static size_t rup(size_t x, size_t m) { return (x + m - 1) / m * m; }
enum { SLACK = 8 }; /* floats after dx_image's dxq and tile (lithe__conv_add_rows_avx2 reads rup(OW, 8)) */

/* ---- dW ---- */

typedef struct dw_job {
    const lithe__sgemm_kernel *k;
    const lithe__conv2d *g;
    const float *const *rows; /* the taps' shifted rows (K) */
    int64_t Wq, K, Mg, P, pc, kb;
    const float *Fp; /* dY_g's slivers of this block: NR filters x kb pixels each (MR with `swap`) */
    const float *Fa; /* with `swap` where the kernel has ukernel_a: dY_g's block read in place, filter
                      * f's pixels at Fa + f·P (no Fp) */
    float *dWt;      /* (K, Mg); with `swap` dW_g itself, (Mg, K) */
    bool swap;       /* filters as the tile's rows, taps as its lanes (dw_swap) */
    atomic_bool failed;
} dw_job;

/* A sliver of R taps [t0, t0 + lanes) x pixels [pc, pc + kb): dst[k·R + i] = rows[t0 + i][pix(pc + k)],
 * pix(p) = (p / OW)·Wq + p % OW, lanes past `lanes` zero; R = MR (A's, pack_a_taps) or with `swap`
 * NR (B's, pack_b_taps). By output-row runs, tap by tap. */
static void pack_taps(const dw_job *j, int64_t t0, size_t lanes, float *dst) {
    const size_t R = (size_t)(j->swap ? j->k->nr : j->k->mr);
    const int64_t OW = j->g->OW;
    for (int64_t p = j->pc; p < j->pc + j->kb;) {
        int64_t oh = p / OW, ow = p % OW, run = OW - ow < j->pc + j->kb - p ? OW - ow : j->pc + j->kb - p;
        float *d = dst + (size_t)(p - j->pc) * R;
        if (j->swap && LITHE__SGEMM_HAS(j->k, pack_b_taps)) { /* AVX-512: in-register transposes */
            j->k->pack_b_taps(lanes, (size_t)run, j->rows + t0, oh * j->Wq + ow, d);
            p += run;
            continue;
        }
        if (!j->swap && LITHE__SGEMM_HAS(j->k, pack_a_taps)) { /* AVX2, AVX-512: in-register transposes */
            j->k->pack_a_taps(lanes, (size_t)run, j->rows + t0, oh * j->Wq + ow, d);
            p += run;
            continue;
        }
        for (size_t i = 0; i < lanes; i++) {
            const float *s = j->rows[t0 + (int64_t)i] + oh * j->Wq + ow;
            for (int64_t t = 0; t < run; t++) d[(size_t)t * R + i] = s[t];
        }
        for (size_t i = lanes; i < R; i++)
            for (int64_t t = 0; t < run; t++) d[(size_t)t * R + i] = 0.0f;
        p += run;
    }
}

/* Tap slivers [s0, s1): each packed once, then its tiles against every filter sliver. */
static void dw_range(void *ctx, int64_t s0, int64_t s1) {
    dw_job *j = ctx;
    const lithe__sgemm_kernel *k = j->k;
    const size_t TR = (size_t)(j->swap ? k->nr : k->mr), FR = (size_t)(j->swap ? k->mr : k->nr), kb = (size_t)j->kb;
    lithe__sgemm_ws priv, *w = lithe__sgemm_ws_claim(TR * kb, &priv); /* the GEMM's per-thread packing slots */
    if (!w) {
        atomic_store(&j->failed, true);
        return;
    }
    float *Tp = w->buf;
    lithe__sgemm_ukparams p = {.alpha = 1.0f, .beta = 1.0f};
    for (int64_t s = s0; s < s1; s++) {
        int64_t t0 = s * (int64_t)TR;
        size_t nt = j->K - t0 < (int64_t)TR ? (size_t)(j->K - t0) : TR;
        pack_taps(j, t0, nt, Tp);
        for (int64_t f0 = 0; f0 < j->Mg; f0 += (int64_t)FR) {
            size_t nf = j->Mg - f0 < (int64_t)FR ? (size_t)(j->Mg - f0) : FR;
            const float *F = j->Fp + (size_t)f0 * kb;
            if (j->swap && j->Fa)
                k->ukernel_a(nf, nt, kb, j->Fa + f0 * j->P, (size_t)j->P, Tp, j->dWt + f0 * j->K + t0, (size_t)j->K, &p);
            else if (j->swap) k->ukernel(nf, nt, kb, F, Tp, j->dWt + f0 * j->K + t0, (size_t)j->K, &p);
            else k->ukernel(nt, nf, kb, Tp, F, j->dWt + t0 * j->Mg + f0, (size_t)j->Mg, &p);
        }
    }
    lithe__sgemm_ws_release(w);
}

/* Filters as the tile's rows (A: dY_g's rows, MR filters a sliver) and taps as its lanes (B: NR
 * taps a sliver, pack_b_taps), dW_g += dY_g · colᵀ written in place, where that grid has fewer
 * padded lanes: LeNet's first layer (16 filters, 25 taps) on AVX-512's 32-lane tiles ran 2 x 14 taps
 * by 32 lanes for 16 filters (45 % of the tile useful), swapped 2 x 8 filters by 32 lanes for 25
 * taps (78 %). Each dW element is the same sum either way (pixels in kc blocks, each from zero in
 * order, then added), so the same bits. */
static bool dw_swap(const lithe__sgemm_kernel *k, const lithe__sgemm_kernel *kf, int64_t Mg, int64_t K) {
    if (!LITHE__SGEMM_HAS(k, pack_b_taps) || lithe__knob(LITHE__KNOB_conv_rows)) return false;
    return rup((size_t)Mg, (size_t)kf->mr) * rup((size_t)K, (size_t)kf->nr) < rup((size_t)K, (size_t)k->mr) * rup((size_t)Mg, (size_t)k->nr);
}

/* dW (M, K) += Σ over images of dY_g · colᵀ, group by group, images in order (the im2col path's bits);
 * db (M; NULL: none) += each image's dY planes' sums, taken while the image's dY is in cache (the same
 * sums in the same order as gemm.c's pass). */
lithe_status lithe__conv_bwd_taps_dw_run(lithe_backend *be, const lithe__conv2d *g, const float *X, const float *dY,
                                         float *dW, float *db) {
    int64_t Cg = g->C / g->group, Mg = g->M / g->group, K = Cg * g->KH * g->KW, P = g->OH * g->OW;
    const lithe__sgemm_kernel *k = bwd_kernel(K), *kf = bwd_kernel(Mg);
    const bool swap = dw_swap(k, kf, Mg, K);
    if (swap) k = kf; /* its MR for the filters */
    /* the filters' slivers (FR each) and the taps' (TR each) */
    const size_t FR = (size_t)(swap ? k->mr : k->nr), TR = (size_t)(swap ? k->nr : k->mr), KC = (size_t)k->kc;
    lithe__pool *pool = lithe__cpu_pool();
    int T = lithe__pool_threads(pool);
    size_t nsh = shifted_floats(g, Cg, K, false), nb = rup((size_t)Mg, FR) * (size_t)P, nt = swap ? 0 : (size_t)(K * Mg);
    float *ws = NULL;
    LITHE__TRY(workspace(be, nsh + nb + nt, &ws));
    shifted_ws sw;
    shifted_init(g, Cg, K, false, ws, &sw);
    float *Fp = ws + nsh, *dWt = Fp + nb;
    bool failed = false;
    for (int64_t gi = 0; gi < g->group; gi++) {
        float *dw = dW + gi * Mg * K;
        if (swap) dWt = dw;
        else
            for (int64_t m = 0; m < Mg; m++)
                for (int64_t t = 0; t < K; t++) dWt[t * Mg + m] = dw[m * K + t];
        for (int64_t n = 0; n < g->N; n++) {
            const float *x = X + (n * g->C + gi * Cg) * g->H * g->W, *gy = dY + (n * g->M + gi * Mg) * P;
            shifted_fill(g, &sw, Cg, x);
            if (db)
                for (int64_t m = 0; m < Mg; m++) db[gi * Mg + m] += lithe__conv_row_sum(gy + m * P, P);
            for (int64_t pc = 0; pc < P; pc += (int64_t)KC) {
                size_t kb = P - pc < (int64_t)KC ? (size_t)(P - pc) : KC;
                /* dY_g's block: sliver jr holds filters jr.. as lanes, pixels pc.. as steps (with `swap`
                 * and ukernel_a, read in place: the same FMA chains, so the same bits) */
                const bool in_place = swap && LITHE__SGEMM_HAS(k, ukernel_a);
                for (int64_t jr = 0; jr < Mg && !in_place; jr += (int64_t)FR) {
                    size_t lanes = Mg - jr < (int64_t)FR ? (size_t)(Mg - jr) : FR;
                    const float *src = gy + jr * P + pc;
                    float *dst = Fp + (size_t)jr * kb;
                    if (swap && LITHE__SGEMM_HAS(k, pack_a)) k->pack_a(lanes, kb, src, (size_t)P, true, dst);
                    else if (!swap && LITHE__SGEMM_HAS(k, pack_b)) k->pack_b(lanes, kb, src, (size_t)P, true, dst);
                    else lithe__sgemm_pack_portable(FR, lanes, kb, src, (size_t)P, true, dst);
                }
                dw_job j = {k, g, sw.rows, sw.Wq, K, Mg, P, pc, (int64_t)kb, Fp, in_place ? gy + pc : NULL, dWt, swap, false};
                int64_t slivers = (K + (int64_t)TR - 1) / (int64_t)TR;
                /* few flops a sliver: the pool only where each thread gets several */
                lithe__pool_for(T > 1 && 2.0 * (double)(K * Mg) * (double)kb >= (1 << 18) ? pool : NULL, slivers, swap ? 1 : 4,
                                dw_range, &j);
                failed |= atomic_load(&j.failed);
            }
        }
        if (!swap)
            for (int64_t m = 0; m < Mg; m++)
                for (int64_t t = 0; t < K; t++) dw[m * K + t] = dWt[t * Mg + m];
    }
    be->ops->free(be, ws);
    if (failed) return lithe__oom("conv2d backward packing workspace", TR * KC * sizeof(float));
    return LITHE_OK;
}

/* ---- dX (stride 1) ---- */

typedef struct dx_job {
    lithe_backend *be;
    const lithe__sgemm_kernel *k;
    const lithe__conv2d *g;
    const float *Ap; /* W_gᵀ per group: slivers of MR taps x Mg steps */
    const float *dY;
    float *dX;
    _Atomic int status;
    bool add_rows; /* lithe__conv_add_rows_avx2 for the col2im adds (the AVX2 kernel's) */
    bool add_taps; /* dx_image_taps (the AVX-512 kernel's) */
} dx_job;

/* dY_g's slivers: pixels s·NR.. of the flattened output (across its rows) as lanes, filters as
 * steps: a lane per pixel, where one output row a sliver left NR - OW % NR lanes empty (LeNet's
 * 14-wide rows: 2 of 16 lanes with AVX2, 18 of 32 with AVX-512) */
static void pack_dy(const dx_job *j, const float *gy, float *Bp) {
    const lithe__sgemm_kernel *k = j->k;
    const size_t NR = (size_t)k->nr;
    int64_t Mg = j->g->M / j->g->group, P = j->g->OH * j->g->OW, nsl = (P + (int64_t)NR - 1) / (int64_t)NR;
    for (int64_t s = 0; s < nsl; s++) {
        size_t lanes = P - s * (int64_t)NR < (int64_t)NR ? (size_t)(P - s * (int64_t)NR) : NR;
        const float *src = gy + s * (int64_t)NR;
        float *dst = Bp + (size_t)s * (size_t)Mg * NR;
        if (LITHE__SGEMM_HAS(k, pack_b)) k->pack_b(lanes, (size_t)Mg, src, (size_t)P, false, dst);
        else lithe__sgemm_pack_portable(NR, lanes, (size_t)Mg, src, (size_t)P, false, dst);
    }
}

/* One image-group: dxq (Cg planes of Hq x Wq, zero-bordered shape of the padded input) holds dx in its
 * interior; every tile of dcol is added at its taps' shifts; the interior goes back to dx. */
static void dx_image(const dx_job *j, const float *Ag, const float *gy, float *dx, float *dxq, float *Bp, float *tile) {
    const lithe__conv2d *g = j->g;
    const lithe__sgemm_kernel *k = j->k;
    const size_t MR = (size_t)k->mr, NR = (size_t)k->nr;
    int64_t Cg = g->C / g->group, Mg = g->M / g->group, K = Cg * g->KH * g->KW, P = g->OH * g->OW, OW = g->OW;
    int64_t Hq = g->H + g->pad[0] + g->pad[2], Wq = g->W + g->pad[1] + g->pad[3], HWq = Hq * Wq;
    int64_t nsl = (P + (int64_t)NR - 1) / (int64_t)NR;
    for (int64_t c = 0; c < Cg; c++)
        for (int64_t h = 0; h < g->H; h++) {
            float *q = dxq + c * HWq + (h + g->pad[0]) * Wq + g->pad[1];
            if (g->assign_dx) memset(q, 0, (size_t)g->W * sizeof(float)); /* dx's old values unread */
            else memcpy(q, dx + (c * g->H + h) * g->W, (size_t)g->W * sizeof(float));
        }
    pack_dy(j, gy, Bp);
    lithe__sgemm_ukparams p = {.alpha = 1.0f};
    int64_t off[64]; /* MR <= 64 */
    for (int64_t t0 = 0; t0 < K; t0 += (int64_t)MR) {
        size_t mr = K - t0 < (int64_t)MR ? (size_t)(K - t0) : MR;
        for (size_t i = 0; i < mr; i++) {
            int64_t t = t0 + (int64_t)i, c = t / (g->KH * g->KW), kh = t / g->KW % g->KH, kw = t % g->KW;
            off[i] = c * HWq + kh * g->dil[0] * Wq + kw * g->dil[1];
        }
        const float *a = Ag + (size_t)t0 * (size_t)Mg;
        /* the sliver's dcol rows (mr x nsl·NR, pixels flattened, in L1), then col2im's adds tap after
         * tap: a tap's adds must all come before the next tap's (those of one output pixel land on
         * other dx elements than the next row's taps', which a tile-by-tile add would interleave) */
        const size_t ldt = (size_t)nsl * NR;
        for (int64_t s = 0; s < nsl; s++)
            k->ukernel(mr, NR, (size_t)Mg, a, Bp + (size_t)s * (size_t)Mg * NR, tile + (size_t)s * NR, ldt, &p);
        for (size_t i = 0; i < mr; i++) {
#if (defined(__x86_64__) || defined(_M_X64)) && !defined(__wasm__)
            if (j->add_rows) { /* the same adds, no masked stores (the slack below keeps rup(OW, 8) readable) */
                lithe__conv_add_rows_avx2((size_t)g->OH, (size_t)OW, dxq + off[i], (size_t)Wq, tile + i * ldt, (size_t)OW);
                continue;
            }
#endif
            if (LITHE__SGEMM_HAS(k, add_tile)) { /* dx + dcol, the same rounded add */
                k->add_tile((size_t)g->OH, (size_t)OW, dxq + off[i], (size_t)Wq, tile + i * ldt, (size_t)OW, false);
                continue;
            }
            for (int64_t oh = 0; oh < g->OH; oh++) {
                float *d = dxq + off[i] + oh * Wq;
                const float *r = tile + i * ldt + (size_t)(oh * OW);
                for (int64_t l = 0; l < OW; l++) d[l] += r[l];
            }
        }
    }
    for (int64_t c = 0; c < Cg; c++)
        for (int64_t h = 0; h < g->H; h++)
            memcpy(dx + (c * g->H + h) * g->W, dxq + c * HWq + (h + g->pad[0]) * Wq + g->pad[1], (size_t)g->W * sizeof(float));
}

#if (defined(__x86_64__) || defined(_M_X64)) && !defined(__wasm__)
/* The ring of dcol rows (dx_image_taps): R rows, a multiple of MR, hold the taps of the channel in
 * progress (at most KK - 1 done before the block) and the block's MR: a block [t0, t0 + MR) lands at
 * rows t0 % R.. without wrapping, over rows whose channels were added. A row: `front` floats of -0,
 * the flattened output pixels (rup(P, NR), those past P -0 from the first fill: the microkernel
 * stores a partial sliver's pixels only, so no block writes them), `back` floats of
 * -0: the output rows above and below the plane that dx's rows reach (EA, EB) and the vectors' reach
 * past a row's ends (REACH + 16), so that the adds read -0 there (backward_avx512.c). */
typedef struct ring_shape {
    size_t R, front, ldt;
} ring_shape;

static ring_shape ring_of(const lithe__conv2d *g, size_t MR, size_t NR) {
    int64_t P = g->OH * g->OW, ea = (g->KH - 1) * g->dil[0] - g->pad[0], eb = g->H + g->pad[0] - g->OH;
    size_t front = rup((size_t)((ea > 0 ? ea : 0) * g->OW) + LITHE__CONV_ADD_TAPS_REACH + 16, 16);
    size_t back = (size_t)((eb > 0 ? eb : 0) * g->OW) + LITHE__CONV_ADD_TAPS_REACH + 16;
    return (ring_shape){rup((size_t)(g->KH * g->KW) + MR - 1, MR), front, rup(front + rup((size_t)P, NR) + back, 16)};
}

static void fill_neg0(float *d, size_t n) {
    for (size_t i = 0; i < n; i++) d[i] = -0.0f;
}

/* One image-group with the adds in registers (backward_avx512.c): the tiles of dcol (MR taps x the
 * flattened pixels) go to the ring; each channel, once all its taps are in, is added into dx
 * straight (no zero-bordered copy). The same tiles, the same adds per dx element in the same order. */
static void dx_image_taps(const dx_job *j, const float *Ag, const float *gy, float *dx, float *Bp, float *ring) {
    const lithe__conv2d *g = j->g;
    const lithe__sgemm_kernel *k = j->k;
    const size_t MR = (size_t)k->mr, NR = (size_t)k->nr;
    const ring_shape rs = ring_of(g, MR, NR);
    int64_t Cg = g->C / g->group, Mg = g->M / g->group, KK = g->KH * g->KW, K = Cg * KK, P = g->OH * g->OW;
    int64_t nsl = (P + (int64_t)NR - 1) / (int64_t)NR, done = 0; /* channels [0, done) added */
    float *data = ring + rs.front; /* row t's pixel 0 at data + (t % R)·ldt */
    pack_dy(j, gy, Bp);
    lithe__sgemm_ukparams p = {.alpha = 1.0f};
    for (int64_t t0 = 0; t0 < K; t0 += (int64_t)MR) {
        size_t mr = K - t0 < (int64_t)MR ? (size_t)(K - t0) : MR;
        const float *a = Ag + (size_t)t0 * (size_t)Mg;
        float *tile = data + (size_t)t0 % rs.R * rs.ldt;
        for (int64_t s = 0; s < nsl; s++) /* the last sliver's pixels only (AVX-512: 16 or fewer run one zmm column) */
            k->ukernel(mr, s + 1 < nsl ? NR : (size_t)(P - s * (int64_t)NR), (size_t)Mg, a,
                       Bp + (size_t)s * (size_t)Mg * NR, tile + (size_t)s * NR, rs.ldt, &p);
        int64_t full = (t0 + (int64_t)mr) / KK;
        if (full > done) lithe__conv_add_taps_avx512(g, done, full, data, rs.R, rs.ldt, dx);
        done = full;
    }
}
#endif

static void dx_images(void *ctx, int64_t n0, int64_t n1) {
    dx_job *j = ctx;
    const lithe__conv2d *g = j->g;
    const size_t MR = (size_t)j->k->mr, NR = (size_t)j->k->nr;
    int64_t Cg = g->C / g->group, Mg = g->M / g->group, K = Cg * g->KH * g->KW, P = g->OH * g->OW;
    int64_t Hq = g->H + g->pad[0] + g->pad[2], Wq = g->W + g->pad[1] + g->pad[3];
    size_t nq = rup((size_t)(Cg * Hq * Wq), 16), rowsl = rup((size_t)P, NR);
    size_t nb = rowsl * (size_t)Mg;
    float *ws = NULL;
#if (defined(__x86_64__) || defined(_M_X64)) && !defined(__wasm__)
    if (j->add_taps) { /* dY_g's slivers, the ring (its borders -0 once) */
        const ring_shape rs = ring_of(g, MR, NR);
        lithe_status s = workspace(j->be, nb + rs.R * rs.ldt, &ws);
        if (s != LITHE_OK) {
            int ok = LITHE_OK;
            atomic_compare_exchange_strong(&j->status, &ok, (int)s);
            return;
        }
        fill_neg0(ws + nb, rs.R * rs.ldt);
        for (int64_t n = n0; n < n1; n++)
            for (int64_t gi = 0; gi < g->group; gi++)
                dx_image_taps(j, j->Ap + (size_t)gi * rup((size_t)K, MR) * (size_t)Mg, j->dY + (n * g->M + gi * Mg) * P,
                              j->dX + (n * g->C + gi * Cg) * g->H * g->W, ws, ws + nb);
        j->be->ops->free(j->be, ws);
        return;
    }
#endif
    /* + 8: add_rows reads up to 7 floats past a row's end, in dxq and in the tile (SLACK) */
    lithe_status s = workspace(j->be, nq + SLACK + nb + MR * rowsl + SLACK, &ws);
    if (s != LITHE_OK) {
        int ok = LITHE_OK;
        atomic_compare_exchange_strong(&j->status, &ok, (int)s);
        return;
    }
    memset(ws, 0, (nq + SLACK) * sizeof(float)); /* the border: never read back, but defined */
    size_t na = rup((size_t)K, MR) * (size_t)Mg;
    for (int64_t n = n0; n < n1; n++)
        for (int64_t gi = 0; gi < g->group; gi++)
            dx_image(j, j->Ap + (size_t)gi * na, j->dY + (n * g->M + gi * Mg) * P, j->dX + (n * g->C + gi * Cg) * g->H * g->W,
                     ws, ws + nq + SLACK, ws + nq + SLACK + nb);
    j->be->ops->free(j->be, ws);
}

/* dX (N, C, H, W) += the data gradient (= with g->assign_dx), images in parallel (each image's dx is its own). */
lithe_status lithe__conv_bwd_taps_dx_run(lithe_backend *be, const lithe__conv2d *g, const float *W, const float *dY,
                                         float *dX) {
    int64_t Cg = g->C / g->group, Mg = g->M / g->group, K = Cg * g->KH * g->KW;
    const lithe__sgemm_kernel *k = bwd_kernel(K);
    const size_t MR = (size_t)k->mr, na = rup((size_t)K, MR) * (size_t)Mg;
    float *Ap = NULL;
    LITHE__TRY(workspace(be, na * (size_t)g->group, &Ap));
    for (int64_t gi = 0; gi < g->group; gi++) /* op(A) = W_gᵀ: lane i = tap t0 + i, step m at W_g[m, t0 + i] */
        for (int64_t t0 = 0; t0 < K; t0 += (int64_t)MR) {
            size_t lanes = K - t0 < (int64_t)MR ? (size_t)(K - t0) : MR;
            const float *src = W + gi * Mg * K + t0;
            float *dst = Ap + (size_t)gi * na + (size_t)t0 * (size_t)Mg;
            if (LITHE__SGEMM_HAS(k, pack_a)) k->pack_a(lanes, (size_t)Mg, src, (size_t)K, false, dst);
            else lithe__sgemm_pack_portable(MR, lanes, (size_t)Mg, src, (size_t)K, false, dst);
        }
    dx_job j = {be, k, g, Ap, dY, dX, LITHE_OK, false, false};
#if (defined(__x86_64__) || defined(_M_X64)) && !defined(__wasm__)
    j.add_rows = !strcmp(k->isa, "avx2");
    j.add_taps = !strcmp(k->isa, "avx512") && (g->KW - 1) * g->dil[1] <= LITHE__CONV_ADD_TAPS_REACH;
#endif
    lithe__pool_for(g->N > 1 ? lithe__cpu_pool() : NULL, g->N, 1, dx_images, &j);
    be->ops->free(be, Ap);
    lithe_status s = (lithe_status)atomic_load(&j.status);
    if (s != LITHE_OK) return lithe__oom("conv2d backward workspace", (size_t)(g->C * g->H * g->W) * sizeof(float));
    return LITHE_OK;
}
