/* The packed SGEMM driver (gemm.h has the loop nest and the packed layouts): the blocked loop
 * nest, the GEMV loops, the thread split and op(B) packed ahead. The scalar microkernel and the
 * choice of kernel are in gemm_kernel.c, the workspaces and portable packing in gemm_pack.c. */
#include "gemm_internal.h"
#include "../threadpool.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* ---- the blocked loop nest over one range of C ---- */

typedef struct job {
    const lithe__sgemm_kernel *k;
    bool tA, tB;
    int64_t M, N, K;
    float alpha, beta;
    const float *A, *B;
    const lithe__sgemm_packed_b *Bpk; /* op(B) packed ahead (NULL: packed here) */
    const float *const *B_rows; /* lithe__sgemm_rows: op(B)'s rows (B unused), pixels b_ow per row */
    int64_t b_ow, b_row;
    const float *const *A_rows; /* lithe__sgemm_pixels: op(A)'s rows (A unused), pixels a_ow per row */
    int64_t a_ow, a_row;
    bool a_place; /* lithe__sgemm_pixels: whole A slivers read in place (ukernel_ap) whatever N */
    bool c_trans; /* C(i, j) at C[j * ldc + i], through the range's tile buffer */
    bool swapped; /* run_swapped: op(A) = A read in place by ukernel_a, C transposed, bias per row */
    int64_t lda, ldb, ldc;
    float *C;
    const lithe__sgemm_epilogue *epi;
    bool split_n; /* ranges are NR-slivers of N (else MR-slivers of M) */
    atomic_bool failed;
} job;

static size_t round_up(size_t x, size_t m) { return (x + m - 1) / m * m; }

/* Workspace for one range: an A block (mc x kc) and a B panel (kc x nc), padded to whole slivers, a
 * tile and kc row pointers (run_range's a_read of a transposed A). */
static size_t ws_floats(const lithe__sgemm_kernel *k, int64_t M, int64_t N, int64_t K, bool b_packed) {
    size_t kc = (size_t)(K < k->kc ? K : k->kc);
    size_t mc = round_up((size_t)(M < k->mc ? M : k->mc), (size_t)k->mr);
    size_t nc = round_up((size_t)(N < k->nc ? N : k->nc), (size_t)k->nr);
    return round_up(kc * mc, 16) + (b_packed ? 0 : kc * nc) + (size_t)(k->mr * k->nr) +
           (LITHE__SGEMM_FORM_ukernel_ap ? 2 * kc : 0);
}

static bool epilogue_after(const lithe__sgemm_epilogue *e) { return e && (e->Z || e->act || e->bias_row); }

static void epilogue_tile(const lithe__sgemm_epilogue *e, bool add_bias_row, bool act, size_t mr, size_t nr, float *c,
                          size_t ldc, int64_t i0, int64_t j0) {
    for (size_t i = 0; i < mr; i++) {
        float *ci = c + i * ldc;
        if (add_bias_row && e->bias_row) {
            float b = e->bias_row[i0 + (int64_t)i];
            for (size_t j = 0; j < nr; j++) ci[j] += b;
        }
        if (e->Z) memcpy(e->Z + (i0 + (int64_t)i) * e->ldz + j0, ci, nr * sizeof(float));
        if (act && e->act) e->act_fn(e->act, (int64_t)nr, ci, ci);
    }
}

/* A row bias rides in the product as one more step k = K (bias_step): A's column K is bias_row,
 * B's row K is ones, so the microkernel adds it with one multiply-add per element (bias_row[i] · 1,
 * exact) instead of a pass over C. A block holding that step packs its real steps, then the extra. */
static bool bias_step(const lithe__sgemm_epilogue *e) { return e && e->bias_row; }

/* The epilogue's residual over a stored block of C (rows x cols, row stride ldc; r its residual,
 * row stride ldr): one rounded add per element, in the Add's operand order (gemm.h). */
static void add_res(const lithe__sgemm_kernel *k, size_t rows, size_t cols, float *c, size_t ldc, const float *r,
                    size_t ldr, bool first) {
    if (k && LITHE__SGEMM_HAS(k, add_tile)) { /* k NULL: the portable loop */
        k->add_tile(rows, cols, c, ldc, r, ldr, first);
        return;
    }
    for (size_t i = 0; i < rows; i++) {
        float *ci = c + i * ldc;
        const float *ri = r + i * ldr;
        if (first)
            for (size_t j = 0; j < cols; j++) ci[j] = ri[j] + ci[j];
        else
            for (size_t j = 0; j < cols; j++) ci[j] = ci[j] + ri[j];
    }
}
static bool has_res(const lithe__sgemm_epilogue *e) { return e && e->res; }

/* One tile of a transposed C (lithe__sgemm_pixels): the microkernel writes it into the range's
 * buffer (mr x NR), which holds C's values first when this K block adds to them; the activation
 * runs there after the last block; then it goes to C[j * ldc + i]. The same arithmetic as a tile
 * written in place. */
static void store_trans(const job *jb, const lithe__sgemm_kernel *k, size_t mr, size_t nr, size_t kb, const float *a,
                        const float *const *arows, int64_t aoff, const float *b, int64_t i0, int64_t j0,
                        const lithe__sgemm_ukparams *p, bool last, float *tile) {
    const size_t NR = (size_t)k->nr, ldc = (size_t)jb->ldc;
    float *c = jb->C + j0 * jb->ldc + i0;
    if (p->beta != 0.0f) {
        if (LITHE__SGEMM_HAS(k, transpose)) k->transpose(nr, mr, c, ldc, tile, NR);
        else
            for (size_t j = 0; j < nr; j++)
                for (size_t i = 0; i < mr; i++) tile[i * NR + j] = c[j * ldc + i];
    }
    if (LITHE__SGEMM_FORM_ukernel_ap && arows) /* A where it lies (a_in_place) */
        k->ukernel_ap(mr, nr, kb, arows, aoff, b, tile, NR, p);
    else k->ukernel(mr, nr, kb, a, b, tile, NR, p);
    const lithe__sgemm_epilogue *e = jb->epi;
    if (last && e && e->act && !p->clamp) {
        if (nr == NR) e->act_fn(e->act, (int64_t)(mr * NR), tile, tile);
        else
            for (size_t i = 0; i < mr; i++) e->act_fn(e->act, (int64_t)nr, tile + i * NR, tile + i * NR);
    }
    if (LITHE__SGEMM_HAS(k, transpose)) {
        k->transpose(mr, nr, tile, NR, c, ldc);
    } else {
        for (size_t j = 0; j < nr; j++) {
            float *cj = c + j * ldc;
            for (size_t i = 0; i < mr; i++) cj[i] = tile[i * NR + j];
        }
    }
    if (last && has_res(e)) /* the stored tile, back from L1, plus its residual */
        add_res(k, nr, mr, c, ldc, e->res + j0 * e->ldr + i0, (size_t)e->ldr, e->res_first);
}

/* An A sliver of MR pixels from i0 inside one output row (lithe__sgemm_pixels): ukernel_ap reads it. */
static bool a_whole(const job *jb, size_t lanes, int64_t i0) {
    return lanes == (size_t)jb->k->mr && i0 % jb->a_ow + (int64_t)lanes <= jb->a_ow;
}

/* A B panel (kb x nb) this small (512 KB) is walked once per MR rows of A (run_range's rows_outer). */
#define ROWS_OUTER_FLOATS ((size_t)1 << 17)
/* An A block this small (32 KB) is read in place across the B slivers (run_range's a_read). */
#define A_READ_FLOATS ((size_t)1 << 13)

static void run_range(job *jb, int64_t m0, int64_t m1, int64_t n0, int64_t n1, float *ws) {
    const lithe__sgemm_kernel *k = jb->k;
    const size_t MR = (size_t)k->mr, NR = (size_t)k->nr;
    const lithe__sgemm_epilogue *epi = jb->epi;
    const int64_t K = jb->K + (bias_step(epi) ? 1 : 0), Kr = jb->K; /* steps in all, real steps */
    size_t kcmax = (size_t)(K < k->kc ? K : k->kc);
    size_t mcmax = round_up((size_t)(m1 - m0 < k->mc ? m1 - m0 : k->mc), MR);
    float *Ap = ws, *Bp = ws + round_up(kcmax * mcmax, 16); /* slivers 64-byte aligned */
    float *tile = jb->Bpk ? Bp : Bp + kcmax * round_up((size_t)(n1 - n0 < k->nc ? n1 - n0 : k->nc), NR);
    lithe__sgemm_ukparams cl = {0};
    const bool clamped = lithe__sgemm_epi_clamp(k, epi, false, &cl); /* a row bias rides in the product here */
    /* bias_rows_ok: AVX-512's and AVX2's kernels (x86-64 builds; compiled away where no kernel has it) */
    const bool rows_ok = LITHE__SGEMM_FORM_ukernel_b && k->bias_rows_ok;
    for (int64_t jc = n0; jc < n1; jc += k->nc) {
        size_t nb = (size_t)(n1 - jc < k->nc ? n1 - jc : k->nc);
        for (int64_t pc = 0; pc < K; pc += k->kc) {
            size_t kb = (size_t)(K - pc < k->kc ? K - pc : k->kc);
            bool last = pc + (int64_t)kb == K;
            size_t kr = last && K > Kr ? kb - 1 : kb; /* real steps in this block */
            if (jb->Bpk) /* packed ahead: panel pc, from sliver jc on (gemm.h; never with a bias step) */
                Bp = jb->Bpk->data + (size_t)pc * round_up((size_t)jb->N, NR) + (size_t)jc * kb;
            /* B untransposed and the kernel can read it in place: whole slivers are not packed when
             * one A block meets them (M within mc: each sliver is read from memory once either way)
             * or the block is small enough to stay in L2 for the A blocks (dW = dYᵀ·X at K = 64),
             * B's rows start on 64-byte lines (else every row of a sliver splits loads across lines)
             * and are not a multiple of 4 KB apart (those share L2 sets: a sliver's 512 rows would
             * overflow their 8 ways, where a packed sliver is contiguous). The dense layers' dX =
             * dY·W at batch 64, 512 wide: 313 -> 290 us on Zen 4. */
            /* A row bias in the product's only K block (a pointwise convolution's, K < kc) need not
             * keep B packed for its row of ones (bias_after): its step adds bias_row[i] · 1 last, one
             * rounding of acc + bias_row[i], which with alpha 1, beta 0 and no column bias is the
             * rounding of adding it in the kernel's store (bias_rows_ok: ukparams.bias_rows; it was
             * add_tile's pass over the stored tile, 8 % of 32 -> 16 at 112x112). An act only where the
             * kernel clamps it in the store, after that add (the act kernel per tile row after the
             * store had measured twice as slow as packing: 16 -> 96 + ReLU6 at 112x112, 438 -> 941
             * us). Nor below 16 steps (on Zen 5, one thread, interleaved one-node minima: 16 -> 64 + relu
             * at 112x112 235 -> 216 us, 16 -> 16 + relu 67 -> 56, 16 -> 96 322 -> 306; 16 -> 72 and
             * 24 -> 72 at 56x56 unchanged; the limit had been 32 steps). 32 -> 16 at
             * 112x112 (32 rows, each its own stream) gained in isolation (158 -> 150 us) but first
             * lost in mobilenet_v2 (166 -> 172-182 us min), while its output went to a cold block;
             * with the buffer pool handing it a warm one (core/tensor.c) it gains there too (170-174
             * -> 147-155 us min). mobilenet_v2's other projections (no act) spent a quarter packing:
             * 144 -> 24 at 56x56 234 -> 199 us. */
            const bool bias_after = kr + 1 == kb && kr >= 16 && pc == 0 && last && jb->alpha == 1.0f && jb->beta == 0.0f &&
                                    !epi->bias && !epi->Z && rows_ok && (!epi->act || clamped);
            /* The bias step of a single K block (a row bias, alpha 1, beta 0, no column bias: the
             * filter-rows convolutions') in the kernel's store instead (gemm.h's bias_rows_ok: the
             * same bits): one step fewer per tile. mobilenet_v2's stem (K = 27): 28 -> 27 steps. */
            const bool rb_store = rows_ok && kr + 1 == kb && pc == 0 && last && jb->alpha == 1.0f &&
                                  jb->beta == 0.0f && !epi->bias && !jb->c_trans;
            const bool b_place = LITHE__SGEMM_HAS(k, ukernel_b) && !jb->tB && !jb->Bpk && !jb->B_rows &&
                                 !jb->c_trans && (kr == kb || bias_after) &&
                                 (m1 - m0 <= k->mc || kb * nb <= ROWS_OUTER_FLOATS) &&
                                 (uintptr_t)jb->B % 64 == 0 &&
                                 jb->ldb % 16 == 0 && jb->ldb % 1024 != 0;
            /* op(A) untransposed read where it lies by ukernel_a (the packed kernel's FMAs on the same
             * values: the same bits) when packing it buys nothing: one B sliver (each A sliver meets it
             * once, so packing only copies A once more) or the range's A within L1 (A_READ_FLOATS: its
             * MR row streams stay there across the B slivers). Attention's per-head products (fused
             * MatMulT: 64 x 64 x 32, 64 x 32 x 64 per head). Where B could be read in place too
             * (ukernel_b, which wants A packed), the larger operand is the one left unpacked. A
             * transposed (dV = Pᵀ·dO): its whole slivers' steps are MR contiguous floats, ukernel_ap's
             * rows[k] + off with a row pointer per step (arow); a partial sliver is packed (ukernel_ap
             * reads all MR lanes). */
            const bool a_read = (jb->tA ? LITHE__SGEMM_HAS(k, ukernel_ap) : LITHE__SGEMM_HAS(k, ukernel_a)) &&
                                !jb->A_rows && !jb->c_trans && !jb->swapped && kr == kb &&
                                (nb <= NR || (size_t)(m1 - m0) * kb <= A_READ_FLOATS) &&
                                (!b_place || (size_t)(m1 - m0) > nb);
            const bool in_place = b_place && !a_read;
            const float **arow = (const float **)(void *)(tile + MR * NR);
            for (size_t q = 0; a_read && jb->tA && q < kb; q++) arow[q] = jb->A + (pc + (int64_t)q) * jb->lda;
            for (size_t jr = 0; !jb->Bpk && jr < nb; jr += NR) {
                size_t lanes = nb - jr < NR ? nb - jr : NR;
                if (in_place && lanes == NR) continue;
                float *dst = Bp + jr * kb;
                if (kr < kb)
                    for (size_t l = 0; l < NR; l++) dst[kr * NR + l] = l < lanes ? 1.0f : 0.0f;
                if (!kr) continue;
                if (jb->B_rows) {
                    lithe__sgemm_pack_pixels(k, false, lanes, kr, jb->B_rows + pc, jc + (int64_t)jr, jb->b_ow, jb->b_row, dst);
                    continue;
                }
                const float *src = jb->tB ? jb->B + (jc + (int64_t)jr) * jb->ldb + pc
                                          : jb->B + pc * jb->ldb + jc + (int64_t)jr;
                /* (here and for A below the pointer alone, not LITHE__SGEMM_HAS: with the portable
                 * loops left out of this function, V8 ran the npm SIMD module's batch-64 MLP and
                 * training step 8-10 % slower, in interleaved runs; docs/wasm.md) */
                if (k->pack_b) k->pack_b(lanes, kr, src, (size_t)jb->ldb, jb->tB, dst);
                else lithe__sgemm_pack_portable(NR, lanes, kr, src, (size_t)jb->ldb, jb->tB, dst);
            }
            /* lithe__sgemm_pixels' A read where it lies by the kernel (gemm.h's ukernel_ap) when one B
             * sliver covers N: each A sliver meets one B sliver, so packing it would only copy it
             * once more; whole slivers inside one output row (a_whole). LeNet's second convolution
             * (196 x 32 x 400 per image) 1600 -> 1420 us min at batch 32 (1 thread, Zen 4). */
            const bool a_in_place = LITHE__SGEMM_HAS(k, ukernel_ap) && jb->A_rows && kr == kb &&
                                    (jb->N <= (int64_t)NR || jb->a_place);
            lithe__sgemm_ukparams p = {.alpha = jb->alpha, .beta = pc == 0 ? jb->beta : 1.0f};
            if (last && clamped) p.clamp = cl.clamp, p.lo = cl.lo, p.hi = cl.hi; /* the act in the store */
            for (int64_t ic = m0; ic < m1; ic += k->mc) {
                size_t mb = (size_t)(m1 - ic < k->mc ? m1 - ic : k->mc);
                for (size_t ir = 0; ir < mb; ir += MR) {
                    size_t lanes = mb - ir < MR ? mb - ir : MR;
                    float *dst = Ap + ir * kb;
                    if (kr < kb)
                        for (size_t l = 0; l < MR; l++)
                            dst[kr * MR + l] = l < lanes ? epi->bias_row[ic + (int64_t)(ir + l)] : 0.0f;
                    if (!kr) continue;
                    if (jb->A_rows) {
                        if (a_in_place && a_whole(jb, lanes, ic + (int64_t)ir)) continue;
                        lithe__sgemm_pack_pixels(k, true, lanes, kr, jb->A_rows + pc, ic + (int64_t)ir, jb->a_ow, jb->a_row, dst);
                        continue;
                    }
                    if (jb->tA || a_read) continue; /* below, step-major; or read where it lies */
                    const float *src = jb->A + (ic + (int64_t)ir) * jb->lda + pc;
                    if (k->pack_a) k->pack_a(lanes, kr, src, (size_t)jb->lda, true, dst);
                    else lithe__sgemm_pack_portable(MR, lanes, kr, src, (size_t)jb->lda, true, dst);
                }
                /* op(A) transposed (dW = dYᵀ·X): each step's MR lanes are a piece of one row of A,
                 * so the block is packed 16 steps at a time across all its slivers, the 16 rows it
                 * reads staying in L1 (sliver by sliver, a 2 KB row stride put all 64 rows of a
                 * sliver into two L1 sets, and every other sliver read them again from L2) */
                for (size_t k0 = 0; jb->tA && !jb->A_rows && k0 < kr; k0 += 16)
                    for (size_t ir = 0; ir < mb; ir += MR) {
                        size_t lanes = mb - ir < MR ? mb - ir : MR, kn = kr - k0 < 16 ? kr - k0 : 16;
                        if (a_read && lanes == MR) continue;
                        const float *src = jb->A + (pc + (int64_t)k0) * jb->lda + ic + (int64_t)ir;
                        float *dst = Ap + ir * kb + k0 * MR;
                        if (k->pack_a) k->pack_a(lanes, kn, src, (size_t)jb->lda, false, dst);
                        else lithe__sgemm_pack_portable(MR, lanes, kn, src, (size_t)jb->lda, false, dst);
                    }
                /* The tiles of the block, slivers of B across rows of A (each B sliver stays in L1
                 * while the A block streams from L2), or, when the B panel fits L2 with room to
                 * spare (short K: a convolution's), rows of A across the B panel: then C is written
                 * as MR rows at a time, each a sequential stream, where the other order touches all
                 * of the block's rows (96 for mobilenet_v2's 16 -> 96 pointwise convolution, whose
                 * 4.8 MB output misses in cache: 630 -> 445 us, 1 thread, Zen 4, the hardware
                 * prefetcher following the few streams; a software prefetch of the next tile did not
                 * help). The same tiles, computed alike: the bits do not depend on the order. */
                const size_t njr = (nb + NR - 1) / NR, nir = (mb + MR - 1) / MR;
                const bool rows_outer = !jb->c_trans && nir > 1 && kb * nb <= ROWS_OUTER_FLOATS;
                /* (the tile's indices counted, not divided out of t: a 64-bit division per tile was 15 %
                 * of a short-K product, 16 -> 64 at 112x112) */
                const size_t inner = rows_outer ? njr : nir;
                for (size_t t = 0, ti = 0, to = 0; t < njr * nir; t++, ti = ti + 1 == inner ? 0 : ti + 1, to += ti == 0) {
                    size_t jr = (rows_outer ? ti : to) * NR, ir = (rows_outer ? to : ti) * MR;
                    size_t nr = nb - jr < NR ? nb - jr : NR, mr = mb - ir < MR ? mb - ir : MR;
                    p.bias = last && epi && epi->bias ? epi->bias + jc + (int64_t)jr : NULL;
                    if (jb->c_trans) {
                        int64_t i0 = ic + (int64_t)ir;
                        bool ap = a_in_place && a_whole(jb, mr, i0);
                        store_trans(jb, k, mr, nr, kb, Ap + ir * kb, ap ? jb->A_rows + pc : NULL,
                                    i0 / jb->a_ow * jb->a_row + i0 % jb->a_ow, Bp + jr * kb, i0, jc + (int64_t)jr, &p,
                                    last, tile);
                        continue;
                    }
                    float *c = jb->C + (ic + (int64_t)ir) * jb->ldc + jc + (int64_t)jr;
                    const bool after = in_place && nr == NR && kr < kb;
                    if (after) { /* bias_after: the real steps, then the row bias, in the kernel's store
                                  * (gemm.h's bias_rows: add_tile's pass over the stored tile was 8 % of
                                  * mobilenet_v2's 32 -> 16 at 112x112; the same bits) */
                        lithe__sgemm_ukparams pb = p;
                        pb.bias_rows = epi->bias_row + ic + (int64_t)ir;
                        k->ukernel_b(mr, nr, kr, Ap + ir * kb, jb->B + pc * jb->ldb + jc + (int64_t)jr,
                                     (size_t)jb->ldb, c, (size_t)jb->ldc, &pb);
                    } else if (in_place && nr == NR)
                        k->ukernel_b(mr, nr, kb, Ap + ir * kb, jb->B + pc * jb->ldb + jc + (int64_t)jr,
                                     (size_t)jb->ldb, c, (size_t)jb->ldc, &p);
                    else if (a_read && !jb->tA)
                        k->ukernel_a(mr, nr, kb, jb->A + (ic + (int64_t)ir) * jb->lda + pc, (size_t)jb->lda,
                                     Bp + jr * kb, c, (size_t)jb->ldc, &p);
                    else if (LITHE__SGEMM_FORM_ukernel_ap && a_read && mr == MR)
                        k->ukernel_ap(mr, nr, kb, arow, ic + (int64_t)ir, Bp + jr * kb, c, (size_t)jb->ldc, &p);
                    else if (rb_store) {
                        lithe__sgemm_ukparams pb = p;
                        pb.bias_rows = epi->bias_row + ic + (int64_t)ir;
                        k->ukernel(mr, nr, kr, Ap + ir * kb, Bp + jr * kb, c, (size_t)jb->ldc, &pb);
                    } else
                        k->ukernel(mr, nr, kb, Ap + ir * kb, Bp + jr * kb, c, (size_t)jb->ldc, &p);
                    if (!after && last && epi && (epi->Z || (epi->act && !clamped))) /* not with c_trans (store_trans) */
                        epilogue_tile(epi, false, !clamped, mr, nr, c, (size_t)jb->ldc, ic + (int64_t)ir,
                                      jc + (int64_t)jr);
                    if (last && has_res(epi))
                        add_res(k, mr, nr, c, (size_t)jb->ldc, epi->res + (ic + (int64_t)ir) * epi->ldr + jc + (int64_t)jr,
                                (size_t)epi->ldr, epi->res_first);
                }
            }
        }
    }
}

/* ---- the swapped product (lithe__sgemm's X·Wᵀ with few rows X): P = W · Xᵀ, C = Pᵀ ----
 * The job's A is W (M' x K, untransposed, read in place by the kernel's ukernel_a), its B is X
 * (op(B) = Xᵀ, packed: every K block's panel up front, as lithe__sgemm_pack_b lays them out), its
 * C the caller's C, where P(i, j) lands at C[j * ldc + i]. A range's P rows are done mc at a time:
 * all K blocks into a buffer P (mc x N' floats, L2), then the epilogue per P row (the bias, one
 * per row of P, then the act) and one transpose of the buffer into C. Each element gets the packed
 * path's operations: the K blocks accumulated from zero in k order by the same microkernel, the
 * write rule (beta for the first block, then 1: P holds C's values, transposed in first, when
 * beta != 0), the bias added after the last block's write rule as the microkernel adds it, then the
 * act kernel; so the bits are lithe__sgemm's unswapped ones. */
static size_t ws_floats_swapped(const lithe__sgemm_kernel *k, int64_t N, int64_t K) {
    size_t nbp = round_up((size_t)N, (size_t)k->nr);
    return (size_t)K * nbp + (size_t)k->mc * nbp + 16;
}

static void run_swapped(job *jb, int64_t m0, int64_t m1, int64_t n0, int64_t n1, float *ws) {
    const lithe__sgemm_kernel *k = jb->k;
    const size_t MR = (size_t)k->mr, NR = (size_t)k->nr, KC = (size_t)k->kc, K = (size_t)jb->K;
    const size_t nb = (size_t)(n1 - n0), nbp = round_up(nb, NR);
    const lithe__sgemm_epilogue *epi = jb->epi;
    float *Bw = ws, *P = ws + round_up(K * nbp, 16);
    for (size_t pc = 0; pc < K; pc += KC) { /* Xᵀ's panels: panel pc at Bw + pc * nbp, sliver jr at + jr * kb */
        size_t kb = K - pc < KC ? K - pc : KC;
        for (size_t jr = 0; jr < nb; jr += NR) {
            size_t lanes = nb - jr < NR ? nb - jr : NR;
            const float *src = jb->B + (n0 + (int64_t)jr) * jb->ldb + (int64_t)pc;
            float *dst = Bw + pc * nbp + jr * kb;
            if (LITHE__SGEMM_HAS(k, pack_b)) k->pack_b(lanes, kb, src, (size_t)jb->ldb, true, dst);
            else lithe__sgemm_pack_portable(NR, lanes, kb, src, (size_t)jb->ldb, true, dst);
        }
    }
    float *Cn = jb->C + n0 * jb->ldc; /* C's rows n0.. hold P's columns n0.. */
    for (int64_t ic = m0; ic < m1; ic += k->mc) {
        size_t mb = (size_t)(m1 - ic < k->mc ? m1 - ic : k->mc);
        if (jb->beta != 0.0f) /* P = C's block, transposed: the first block's write rule reads it */
            for (size_t j = 0; j < nb; j++)
                for (size_t i = 0; i < mb; i++) P[i * nbp + j] = Cn[(int64_t)j * jb->ldc + ic + (int64_t)i];
        for (size_t pc = 0; pc < K; pc += KC) {
            size_t kb = K - pc < KC ? K - pc : KC;
            lithe__sgemm_ukparams p = {.alpha = jb->alpha, .beta = pc == 0 ? jb->beta : 1.0f};
            /* MR rows of W across the panel: they stay in L1 for the panel's few slivers */
            for (size_t ir = 0; ir < mb; ir += MR) {
                size_t mr = mb - ir < MR ? mb - ir : MR;
                const float *a = jb->A + (ic + (int64_t)ir) * jb->lda + (int64_t)pc;
                for (size_t jr = 0; jr < nb; jr += NR)
                    k->ukernel_a(mr, nb - jr < NR ? nb - jr : NR, kb, a, (size_t)jb->lda, Bw + pc * nbp + jr * kb,
                                 P + ir * nbp + jr, nbp, &p);
            }
        }
        for (size_t i = 0; epi && (epi->bias || epi->act) && i < mb; i++) {
            float *r = P + i * nbp;
            if (epi->bias) {
                float bi = epi->bias[ic + (int64_t)i];
                for (size_t j = 0; j < nb; j++) r[j] = r[j] + bi;
            }
            if (epi->act) epi->act_fn(epi->act, (int64_t)nb, r, r);
        }
        if (LITHE__SGEMM_HAS(k, transpose))
            for (size_t i0 = 0; i0 < mb; i0 += 64) /* the helper's blocks: at most 64 x 64 */
                for (size_t j0 = 0; j0 < nb; j0 += 64)
                    k->transpose(mb - i0 < 64 ? mb - i0 : 64, nb - j0 < 64 ? nb - j0 : 64, P + i0 * nbp + j0, nbp,
                                 Cn + (int64_t)j0 * jb->ldc + ic + (int64_t)i0, (size_t)jb->ldc);
        else
            for (size_t j = 0; j < nb; j++)
                for (size_t i = 0; i < mb; i++) Cn[(int64_t)j * jb->ldc + ic + (int64_t)i] = P[i * nbp + j];
    }
}

static void gemm_task(void *ctx, int64_t begin, int64_t end) {
    job *jb = ctx;
    int64_t m0 = 0, m1 = jb->M, n0 = 0, n1 = jb->N;
    if (jb->split_n) {
        n0 = begin * jb->k->nr;
        n1 = end * jb->k->nr < jb->N ? end * jb->k->nr : jb->N;
    } else {
        m0 = begin * jb->k->mr;
        m1 = end * jb->k->mr < jb->M ? end * jb->k->mr : jb->M;
    }
    const bool swapped = LITHE__SGEMM_FORM_ukernel_a && jb->swapped; /* (only with ukernel_a: swap_pays) */
    size_t floats = swapped ? ws_floats_swapped(jb->k, n1 - n0, jb->K)
                                : ws_floats(jb->k, m1 - m0, n1 - n0, jb->K + (bias_step(jb->epi) ? 1 : 0),
                                            jb->Bpk != NULL);
    lithe__sgemm_ws priv, *s = lithe__sgemm_ws_claim(floats, &priv);
    if (!s) {
        atomic_store(&jb->failed, true);
        return;
    }
    if (swapped) run_swapped(jb, m0, m1, n0, n1, s->buf);
    else run_range(jb, m0, m1, n0, n1, s->buf);
    lithe__sgemm_ws_release(s);
}

typedef struct gemv_job {
    lithe__sgemv_fn fn;
    size_t N, K, kc;
    float alpha, beta;
    const float *x, *w;
    size_t ldw;
    bool trans;
    float *y;
    const lithe__sgemm_epilogue *epi;
    lithe__sgemv_rows_fn fnm; /* M = 2..4 (gemv_tm): m rows of x (ldx apart) and of y (ldy apart) */
    size_t m, ldx, ldy;
} gemv_job;

#define GEMV_GRAIN 64
static void gemv_task(void *ctx, int64_t begin, int64_t end) {
    gemv_job *g = ctx;
    size_t j0 = (size_t)begin * GEMV_GRAIN, j1 = (size_t)end * GEMV_GRAIN;
    size_t n = (j1 < g->N ? j1 : g->N) - j0;
    const float *w = g->trans ? g->w + j0 * g->ldw : g->w + j0;
    const float *bias = g->epi && g->epi->bias ? g->epi->bias + j0 : NULL;
    const bool rows = LITHE__SGEMM_FORM_gemv_tm && g->fnm; /* (compiled out where no kernel has gemv_tm) */
    if (rows) g->fnm(g->m, n, g->K, g->kc, g->alpha, g->x, g->ldx, w, g->ldw, g->beta, g->y + j0, g->ldy, bias);
    else g->fn(n, g->K, g->kc, g->alpha, g->x, w, g->ldw, g->beta, g->y + j0, bias);
    if (epilogue_after(g->epi))
        epilogue_tile(g->epi, true, true, rows ? g->m : 1, n, g->y + j0, rows ? g->ldy : 0, 0, (int64_t)j0);
}

/* ---- M = 1 against op(B) packed ahead: the one-row kernel over ranges of slivers ---- */

typedef struct row_job {
    const lithe__sgemm_kernel *k;
    int64_t N, K;
    float alpha, beta;
    const float *x;
    const lithe__sgemm_packed_b *Bpk;
    float *C;
    const lithe__sgemm_epilogue *epi;
} row_job;

static void row_task(void *ctx, int64_t begin, int64_t end) {
    row_job *r = ctx;
    const size_t NR = (size_t)r->k->nr, KC = (size_t)r->k->kc, Npad = round_up((size_t)r->N, NR);
    size_t n0 = (size_t)begin * NR, n1 = (size_t)end * NR < (size_t)r->N ? (size_t)end * NR : (size_t)r->N;
    size_t ns = (size_t)(end - begin), nr_last = n1 - (size_t)(end - 1) * NR;
    const lithe__sgemm_epilogue *epi = r->epi;
    lithe__sgemm_ukparams cl = {0};
    bool clamped = lithe__sgemm_epi_clamp(r->k, epi, true, &cl);
    for (size_t pc = 0; pc < (size_t)r->K; pc += KC) {
        size_t kb = (size_t)r->K - pc < KC ? (size_t)r->K - pc : KC;
        bool last = pc + kb == (size_t)r->K;
        lithe__sgemm_ukparams p = {.alpha = r->alpha, .beta = pc == 0 ? r->beta : 1.0f,
                                   .bias = last && epi && epi->bias ? epi->bias + n0 : NULL};
        if (last && clamped) p.clamp = cl.clamp, p.lo = cl.lo, p.hi = cl.hi;
        r->k->urow(ns, nr_last, kb, r->x + pc, r->Bpk->data + pc * Npad + n0 * kb, r->C + n0, &p);
    }
    if (epilogue_after(epi)) epilogue_tile(epi, true, !clamped, 1, n1 - n0, r->C + n0, 0, 0, (int64_t)n0);
}

/* ---- entry ---- */

/* Work below which the pool's wake-up costs more than it saves (flops). */
#define MIN_PARALLEL_FLOPS (1 << 18)

static void k_zero(int64_t M, int64_t N, float beta, float *C, int64_t ldc, const lithe__sgemm_epilogue *epi) {
    for (int64_t i = 0; i < M; i++) {
        float *c = C + i * ldc;
        for (int64_t j = 0; j < N; j++) {
            float t = beta == 0.0f ? 0.0f : beta * c[j];
            if (epi && epi->bias) t += epi->bias[j];
            c[j] = t;
        }
        if (epilogue_after(epi)) epilogue_tile(epi, true, true, 1, (size_t)N, c, 0, i, 0);
        if (has_res(epi)) add_res(NULL, 1, (size_t)N, c, 0, epi->res + i * epi->ldr, 0, epi->res_first);
    }
}

static bool run_packed(job *jb, lithe__pool *pool, int T);

/* X·Wᵀ (op(A) = A untransposed, op(B) = Bᵀ, not packed ahead) runs swapped (run_swapped) when X
 * has few rows and W many and the kernel reads A in place: packing Wᵀ (a transpose of every float
 * of W in every training step's forward, since W changes every step) then outweighs packing Xᵀ and
 * one transpose of C. X's rows become the tiles' NR columns, so M must about fill them (a
 * remainder up to NR / 2 wide runs the kernel's half tile): at most 1/8 computed in vain. Not with
 * Z, a row bias or a residual (no transposed forms of those). */
static bool swap_pays(const lithe__sgemm_kernel *k, int64_t M, int64_t N, int64_t K,
                      const lithe__sgemm_epilogue *epi) {
    if (epi && (epi->Z || epi->bias_row || epi->res)) return false;
    if (M < 16 || M > 256 || N < 2 * M) return false;
    const lithe__sgemm_kernel *kr = k->for_rows ? k->for_rows(N) : k;
    if (!LITHE__SGEMM_HAS(kr, ukernel_a)) return false;
    int64_t NR = kr->nr, rem = M % NR, computed = M - rem + (rem == 0 ? 0 : rem <= NR / 2 ? NR / 2 : NR);
    /* all of Xᵀ is packed up front into the range's workspace: at most 4 MB of it */
    return computed * 8 <= M * 9 && K * (M + NR) <= ((int64_t)1 << 20);
}

bool lithe__sgemm(const lithe__sgemm_kernel *k, bool use_threads, bool tA, bool tB, int64_t M, int64_t N, int64_t K,
                  float alpha, const float *A, int64_t lda, const float *B, int64_t ldb, float beta, float *C,
                  int64_t ldc, const lithe__sgemm_epilogue *epi) {
    return lithe__sgemm_prepacked(k, use_threads, tA, tB, M, N, K, alpha, A, lda, B, ldb, NULL, beta, C, ldc, epi);
}

/* ---- a batch of products (gemm.h's lithe__sgemm_batched) ----
 * Not in the npm package's one-thread cores (LITHE_IMPORTERS_SEPARATE): only the graph layer calls
 * it, which lives in their importer module, so there the graph runs one gemm a product (the core's
 * size bound). */
#ifndef LITHE_IMPORTERS_SEPARATE

typedef struct batch_job {
    job jb; /* the products' common fields; A, B, C and beta those of product 0 */
    int64_t sa, sb, sc;
    float beta0, beta;
    atomic_bool failed;
} batch_job;

/* Products [begin, end) one after the other in one workspace, each as gemm_task computes a whole
 * product at one thread (run_range over all of C: the same bits at any thread count). */
static void batch_task(void *ctx, int64_t begin, int64_t end) {
    batch_job *b = ctx;
    job jb = b->jb;
    lithe__sgemm_ws priv, *s = lithe__sgemm_ws_claim(ws_floats(jb.k, jb.M, jb.N, jb.K, false), &priv);
    if (!s) {
        atomic_store(&b->failed, true);
        return;
    }
    for (int64_t p = begin; p < end; p++) {
        jb.A = b->jb.A + p * b->sa, jb.B = b->jb.B + p * b->sb, jb.C = b->jb.C + p * b->sc;
        jb.beta = p == 0 ? b->beta0 : b->beta;
        run_range(&jb, 0, jb.M, 0, jb.N, s->buf);
    }
    lithe__sgemm_ws_release(s);
}

bool lithe__sgemm_batched(const lithe__sgemm_kernel *k, bool use_threads, bool tA, bool tB, int64_t P, int64_t M,
                          int64_t N, int64_t K, float alpha, const float *A, int64_t lda, int64_t sa, const float *B,
                          int64_t ldb, int64_t sb, float beta0, float beta, float *C, int64_t ldc, int64_t sc) {
    if (P <= 0 || M <= 0 || N <= 0) return true;
    if (!k) k = lithe__sgemm_kernel_best();
    double flops = 2.0 * (double)M * (double)N * (double)K;
    /* products into one C (sc 0) run in p order on this thread; threads then split each product */
    lithe__pool *pool = use_threads && sc != 0 && flops * (double)P >= MIN_PARALLEL_FLOPS ? lithe__cpu_pool() : NULL;
    int T = lithe__pool_threads(pool);
    /* lithe__sgemm_prepacked's other paths (K = 0, the GEMVs of M <= 4 rows, the swapped X·Wᵀ), and
     * fewer than two products a thread: one lithe__sgemm per product */
    if (K <= 0 || M <= LITHE__SGEMV_ROWS || (tB && !tA && swap_pays(k, M, N, K, NULL)) || (T > 1 && P < 2 * T)) {
        for (int64_t p = 0; p < P; p++)
            if (!lithe__sgemm_prepacked(k, use_threads, tA, tB, M, N, K, alpha, A + p * sa, lda, B + p * sb, ldb, NULL,
                                        p == 0 ? beta0 : beta, C + p * sc, ldc, NULL))
                return false;
        return true;
    }
    batch_job b = {.jb = {.k = k->for_rows ? k->for_rows(M) : k, .tA = tA, .tB = tB, .M = M, .N = N, .K = K,
                          .alpha = alpha, .A = A, .B = B, .lda = lda, .ldb = ldb, .ldc = ldc, .C = C},
                   .sa = sa, .sb = sb, .sc = sc, .beta0 = beta0, .beta = beta};
    atomic_init(&b.failed, false);
    if (T > 1) lithe__pool_for(pool, P, 1, batch_task, &b);
    else batch_task(&b, 0, P);
    return !atomic_load(&b.failed);
}
#endif

/* ---- op(B) packed ahead (gemm.h's lithe__sgemm_packed_b) ---- */

lithe__sgemm_packed_b *lithe__sgemm_pack_b(const lithe__sgemm_kernel *k, bool tB, int64_t K, int64_t N, const float *B,
                                           int64_t ldb) {
    if (!k) k = lithe__sgemm_kernel_best();
    if (K <= 0 || N <= 0) return NULL;
    const size_t NR = (size_t)k->nr, KC = (size_t)k->kc, Npad = round_up((size_t)N, NR);
    size_t floats;
    if (!lithe__mul_size((size_t)K, Npad, &floats) || floats > SIZE_MAX / sizeof(float)) return NULL;
    lithe__sgemm_packed_b *p = lithe__malloc(sizeof *p);
    float *data = lithe__aligned_alloc(floats * sizeof(float));
    if (!p || !data) {
        lithe__free(p);
        lithe__aligned_free(data);
        return NULL;
    }
    *p = (lithe__sgemm_packed_b){.nr = k->nr, .kc = k->kc, .transB = tB, .K = K, .N = N, .floats = floats, .data = data};
    /* the driver's packing loop, run once over every (pc, jr): the same slivers it would make */
    for (int64_t pc = 0; pc < K; pc += (int64_t)KC) {
        size_t kb = (size_t)(K - pc < (int64_t)KC ? K - pc : (int64_t)KC);
        float *panel = data + (size_t)pc * Npad;
        for (size_t jr = 0; jr < (size_t)N; jr += NR) {
            size_t lanes = (size_t)N - jr < NR ? (size_t)N - jr : NR;
            const float *src = tB ? B + (int64_t)jr * ldb + pc : B + pc * ldb + (int64_t)jr;
            if (LITHE__SGEMM_HAS(k, pack_b)) k->pack_b(lanes, kb, src, (size_t)ldb, tB, panel + jr * kb);
            else lithe__sgemm_pack_portable(NR, lanes, kb, src, (size_t)ldb, tB, panel + jr * kb);
        }
    }
    return p;
}

void lithe__sgemm_packed_b_free(lithe__sgemm_packed_b *p) {
    if (!p) return;
    lithe__aligned_free(p->data);
    lithe__free(p);
}

bool lithe__sgemm_prepacked(const lithe__sgemm_kernel *k, bool use_threads, bool tA, bool tB, int64_t M, int64_t N,
                            int64_t K, float alpha, const float *A, int64_t lda, const float *B, int64_t ldb,
                            const lithe__sgemm_packed_b *Bpk, float beta, float *C, int64_t ldc,
                            const lithe__sgemm_epilogue *epi) {
    if (M <= 0 || N <= 0) return true;
    if (!k) k = lithe__sgemm_kernel_best();
    if (K <= 0) {
        k_zero(M, N, beta, C, ldc, epi);
        return true;
    }
    double flops = 2.0 * (double)M * (double)N * (double)K;
    lithe__pool *pool = use_threads && flops >= MIN_PARALLEL_FLOPS ? lithe__cpu_pool() : NULL;
    int T = lithe__pool_threads(pool);

    const lithe__sgemm_kernel *kr = NULL; /* the variant for M rows, found once when needed */
    if (Bpk) {
        kr = k->for_rows ? k->for_rows(M) : k;
        if (Bpk->nr != kr->nr || Bpk->kc != kr->kc || Bpk->transB != tB || Bpk->K != K || Bpk->N != N ||
            bias_step(epi)) /* a row bias rides in B as a row of ones, which the packed panels lack */
            Bpk = NULL; /* packed for another kernel (or another product): pack here */
    }
    /* M = 1: with W packed ahead, the one-row kernel streams its slivers (the same bits, gemm.h's
     * rule; faster than the shuffle-bound GEMV); else the GEMV reads W in place */
    if (M == 1 && ((Bpk && kr->urow) || (tB ? k->gemv_t : k->gemv_n))) {
        lithe__sgemm_ws priv, *s = NULL;
        const float *x = A;
        if (tA && K > 1 && lda != 1) { /* x strided: gather it (K floats) */
            s = lithe__sgemm_ws_claim((size_t)K, &priv);
            if (!s) return false;
            for (int64_t kk = 0; kk < K; kk++) s->buf[kk] = A[kk * lda];
            x = s->buf;
        }
        if (Bpk && kr->urow) {
            row_job r = {kr, N, K, alpha, beta, x, Bpk, C, epi};
            lithe__pool_for(pool, (N + kr->nr - 1) / kr->nr, 1, row_task, &r);
        } else { /* outputs in ranges of GEMV_GRAIN, the last one clipped to N */
            gemv_job g = {tB ? k->gemv_t : k->gemv_n, (size_t)N, (size_t)K, (size_t)k->kc, alpha, beta, x, B, (size_t)ldb, tB, C, epi,
                          NULL, 1, 0, 0};
            lithe__pool_for(pool, (N + GEMV_GRAIN - 1) / GEMV_GRAIN, 1, gemv_task, &g);
        }
        lithe__sgemm_ws_release(s);
        if (has_res(epi)) add_res(k, 1, (size_t)N, C, 0, epi->res, 0, epi->res_first); /* after the row's store */
        return true;
    }

    /* M = 2..4, X·Wᵀ with W where it lies: the multi-row GEMV (each row the bits of M = 1) instead of
     * packing all of Wᵀ for a few rows (not with a row bias: the packed path adds it as a product step) */
    if (M >= 2 && M <= LITHE__SGEMV_ROWS && tB && !tA && !Bpk && LITHE__SGEMM_HAS(k, gemv_tm) && !bias_step(epi)) {
        gemv_job g = {.N = (size_t)N, .K = (size_t)K, .kc = (size_t)k->kc, .alpha = alpha, .beta = beta, .x = A,
                      .w = B, .ldw = (size_t)ldb, .trans = true, .y = C, .epi = epi, .fnm = k->gemv_tm,
                      .m = (size_t)M, .ldx = (size_t)lda, .ldy = (size_t)ldc};
        lithe__pool_for(pool, (N + GEMV_GRAIN - 1) / GEMV_GRAIN, 1, gemv_task, &g);
        if (has_res(epi)) add_res(k, (size_t)M, (size_t)N, C, (size_t)ldc, epi->res, (size_t)epi->ldr, epi->res_first);
        return true;
    }

    if (!Bpk && tB && !tA && swap_pays(k, M, N, K, epi)) {
        job sw = {.k = k, .M = N, .N = M, .K = K, .alpha = alpha, .beta = beta, .A = B, .B = A, .lda = ldb,
                  .ldb = lda, .ldc = ldc, .C = C, .epi = epi, .swapped = true};
        return run_packed(&sw, pool, T);
    }
    job jb = {.k = k, .tA = tA, .tB = tB, .M = M, .N = N, .K = K, .alpha = alpha, .beta = beta, .A = A, .B = B,
              .Bpk = Bpk, .lda = lda, .ldb = ldb, .ldc = ldc, .C = C, .epi = epi};
    return run_packed(&jb, pool, T);
}

bool lithe__sgemm_rows(const lithe__sgemm_kernel *k, bool use_threads, int64_t M, int64_t N, int64_t K, const float *A,
                       int64_t lda, const float *const *B_rows, int64_t ow, int64_t b_row, float *C, int64_t ldc,
                       const lithe__sgemm_epilogue *epi) {
    if (M <= 0 || N <= 0) return true;
    if (!k) k = lithe__sgemm_kernel_best();
    if (K <= 0) {
        k_zero(M, N, 0.0f, C, ldc, epi);
        return true;
    }
    double flops = 2.0 * (double)M * (double)N * (double)K;
    lithe__pool *pool = use_threads && flops >= MIN_PARALLEL_FLOPS ? lithe__cpu_pool() : NULL;
    job jb = {.k = k, .M = M, .N = N, .K = K, .alpha = 1.0f, .beta = 0.0f, .A = A, .B_rows = B_rows, .b_ow = ow,
              .b_row = b_row, .lda = lda, .ldc = ldc, .C = C, .epi = epi};
    return run_packed(&jb, pool, lithe__pool_threads(pool));
}

/* The packed path of both entries: the kernel for M's rows, the thread split, the ranges. */
static bool run_packed(job *jb, lithe__pool *pool, int T) {
    const lithe__sgemm_kernel *k = jb->k;
    int64_t M = jb->M, N = jb->N;
    if (k->for_rows) k = jb->k = k->for_rows(M);
    atomic_init(&jb->failed, false);
    int64_t ns = (N + k->nr - 1) / k->nr, ms = (M + k->mr - 1) / k->mr;
    jb->split_n = ns >= 2 * T || ns >= ms;
    int64_t items = jb->split_n ? ns : ms;
    /* Each call of a column split packs all of op(A)'s rows again (M x K floats for its 2·M·K·NR
     * flops per sliver): a chunk gets at least 256 / NR slivers (512 flops per packed float), but
     * the job still makes T chunks (the MLP's batch-64 layers: 2 chunks; single slivers cost them
     * 7 % at 2 threads, and packing op(A) once into a buffer that every chunk read, 4 %). Row
     * chunks read B packed ahead or pack all of B's columns per call (rows split only when there
     * are fewer than 2T slivers). */
    if (T > 1 && jb->split_n) {
        int64_t least = 256 / k->nr > 1 ? 256 / k->nr : 1, chunks = items / least;
        lithe__pool_for_chunks(pool, items, chunks > T ? chunks : T, gemm_task, jb);
    } else if (T > 1) {
        lithe__pool_for(pool, items, 1, gemm_task, jb);
    } else {
        gemm_task(jb, 0, items);
    }
    return !atomic_load(&jb->failed);
}

bool lithe__sgemm_pixels(const lithe__sgemm_kernel *k, bool use_threads, int64_t M, int64_t N, int64_t K,
                         const float *const *A_rows, int64_t ow, int64_t a_row, bool tB, const float *B, int64_t ldb,
                         const lithe__sgemm_packed_b *Bpk, float *C, int64_t ldc, const lithe__sgemm_epilogue *epi) {
    if (M <= 0 || N <= 0) return true;
    if (!k) k = lithe__sgemm_kernel_best();
    lithe__sgemm_epilogue e = {0}; /* bias, act and res only */
    if (epi) {
        e.bias = epi->bias;
        e.act = epi->act;
        e.act_fn = epi->act_fn;
        e.res = epi->res;
        e.ldr = epi->ldr;
        e.res_first = epi->res_first;
    }
    if (K <= 0) { /* C = bias, then act, column by column */
        for (int64_t j = 0; j < N; j++) {
            float *c = C + j * ldc;
            for (int64_t i = 0; i < M; i++) c[i] = e.bias ? e.bias[j] : 0.0f;
            if (e.act) e.act_fn(e.act, M, c, c);
            if (e.res) add_res(k, 1, (size_t)M, c, 0, e.res + j * e.ldr, 0, e.res_first);
        }
        return true;
    }
    double flops = 2.0 * (double)M * (double)N * (double)K;
    lithe__pool *pool = use_threads && flops >= MIN_PARALLEL_FLOPS ? lithe__cpu_pool() : NULL;
    const lithe__sgemm_kernel *kr = k->for_rows ? k->for_rows(M) : k;
    if (Bpk && (Bpk->nr != kr->nr || Bpk->kc != kr->kc || Bpk->transB != tB || Bpk->K != K || Bpk->N != N))
        Bpk = NULL; /* packed for another kernel: pack here */
    job jb = {.k = k, .tB = tB, .M = M, .N = N, .K = K, .alpha = 1.0f, .beta = 0.0f, .B = B, .Bpk = Bpk,
              .A_rows = A_rows, .a_ow = ow, .a_row = a_row, .c_trans = true, .ldb = ldb, .ldc = ldc, .C = C,
              .epi = e.bias || e.act || e.res ? &e : NULL};
    /* all of op(A)'s pixels in one output row (ow >= M: a pointwise convolution's input planes): the
     * kernel reads whole A slivers where they lie (ukernel_ap) whatever N, instead of packing them,
     * the same bits. 576 -> 96 at 14x14: the packing was 8 % of the time (in mobilenet_v2
     * 223 -> 208 us with its Add). Only for slivers of at least 12 rows, most of a cache line per
     * step: 7-row ones (7x7 planes) read each line for 7 floats where the packed block is dense,
     * and lost in the model (320 -> 1280 416 -> 444 us) what they gained in isolation. */
    jb.a_place = LITHE__SGEMM_HAS(kr, ukernel_ap) && kr->mr >= 12 && ow >= M;
    return run_packed(&jb, pool, lithe__pool_threads(pool));
}

bool lithe__sgemm_rows_direct(const lithe__sgemm_kernel *k, int64_t M, int64_t OH, int64_t ow, int64_t K,
                              const float *A, int64_t lda, const float *const *B_rows, int64_t b_row, float *C,
                              int64_t ldc, const lithe__sgemm_epilogue *epi) {
    if (!k) k = lithe__sgemm_kernel_best();
    if (k->for_rows) k = k->for_rows(M);
    const bool bias = epi && epi->bias_row;
    const int64_t Kt = K + (bias ? 1 : 0);
    lithe__sgemm_ukparams p = {.alpha = 1.0f};
    if (!LITHE__SGEMM_HAS(k, ukernel_bp) || M <= 0 || OH <= 0 || ow <= 0 || K <= 0 || Kt > k->kc || M > k->mc ||
        (epi && (epi->Z || epi->bias || epi->res)) || (epi && epi->act && !lithe__sgemm_epi_clamp(k, epi, false, &p)))
        return false;
    const size_t MR = (size_t)k->mr, NR = (size_t)k->nr, kt = (size_t)Kt;
    lithe__sgemm_ws priv, *s = lithe__sgemm_ws_claim(round_up((size_t)M, MR) * kt, &priv);
    if (!s) return false;
    float *Ap = s->buf;
    for (size_t ir = 0; ir < (size_t)M; ir += MR) { /* A's slivers as run_range packs them, bias step last */
        size_t lanes = (size_t)M - ir < MR ? (size_t)M - ir : MR;
        float *dst = Ap + ir * kt;
        if (LITHE__SGEMM_HAS(k, pack_a)) k->pack_a(lanes, (size_t)K, A + (int64_t)ir * lda, (size_t)lda, true, dst);
        else lithe__sgemm_pack_portable(MR, lanes, (size_t)K, A + (int64_t)ir * lda, (size_t)lda, true, dst);
        if (bias)
            for (size_t l = 0; l < MR; l++) dst[(size_t)K * MR + l] = l < lanes ? epi->bias_row[ir + l] : 0.0f;
    }
    /* per output row, its NR-wide slivers (the last one nr = the rest), every MR rows of A against each:
     * B's step k read at B_rows[k] + r b_row + c0 (its row K: ones, for the bias step) */
    for (int64_t r = 0; r < OH; r++)
        for (int64_t c0 = 0; c0 < ow; c0 += (int64_t)NR) {
            size_t nr = ow - c0 < (int64_t)NR ? (size_t)(ow - c0) : NR;
            for (size_t ir = 0; ir < (size_t)M; ir += MR) {
                size_t mr = (size_t)M - ir < MR ? (size_t)M - ir : MR;
                k->ukernel_bp(mr, nr, kt, Ap + ir * kt, B_rows, r * b_row + c0, C + (int64_t)ir * ldc + r * ow + c0,
                              (size_t)ldc, &p);
            }
        }
    lithe__sgemm_ws_release(s);
    return true;
}
