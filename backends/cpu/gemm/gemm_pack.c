/* SGEMM's per-thread packing workspaces and its portable packing. */
#include "gemm_internal.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* ---- per-thread packing workspaces ----
 * The backend's, kept between calls and grown on demand: a call claims a free slot (one per
 * concurrent task) and gives it back. Through the allocator hook (lithe__malloc), like every
 * allocation: kept only with the C library's allocator (lithe_set_allocator gives them back
 * first, through lithe__cpu_cache_flush); with a user's allocator installed each task allocates a
 * private one for the call, as the CPU cache keeps no blocks then, so that allocator sees every
 * allocation and free. When every slot is taken (many concurrent callers), the task allocates a
 * private one for the call too. */

#define N_SLOTS 16
static lithe__sgemm_ws slots[N_SLOTS] = {
#define F0 {ATOMIC_FLAG_INIT, NULL, NULL, 0}
    F0, F0, F0, F0, F0, F0, F0, F0, F0, F0, F0, F0, F0, F0, F0, F0,
#undef F0
};

static bool ws_grow(lithe__sgemm_ws *s, size_t floats) {
    if (s->cap >= floats) return true;
    if (floats > (SIZE_MAX - 64) / sizeof(float)) return false;
    void *raw = lithe__malloc(floats * sizeof(float) + 64);
    if (!raw) return false;
    lithe__free(s->raw);
    s->raw = raw;
    s->buf = (float *)(((uintptr_t)raw + 63) & ~(uintptr_t)63);
    s->cap = floats;
    return true;
}

/* A slot with room for `floats`, or NULL (out of memory). Release with lithe__sgemm_ws_release. */
lithe__sgemm_ws *lithe__sgemm_ws_claim(size_t floats, lithe__sgemm_ws *priv) {
    for (int i = 0; i < N_SLOTS && lithe__default_allocator(); i++)
        if (!atomic_flag_test_and_set_explicit(&slots[i].busy, memory_order_acquire)) {
            if (ws_grow(&slots[i], floats)) return &slots[i];
            atomic_flag_clear_explicit(&slots[i].busy, memory_order_release);
            return NULL;
        }
    memset(priv, 0, sizeof *priv);
    return ws_grow(priv, floats) ? priv : NULL;
}

void lithe__sgemm_ws_release(lithe__sgemm_ws *s) {
    if (s >= slots && s < slots + N_SLOTS) {
        atomic_flag_clear_explicit(&s->busy, memory_order_release);
    } else if (s) {
        lithe__free(s->raw);
    }
}

void lithe__sgemm_release_workspaces(void) {
    for (int i = 0; i < N_SLOTS; i++)
        if (!atomic_flag_test_and_set_explicit(&slots[i].busy, memory_order_acquire)) { /* busy: a call's */
            lithe__free(slots[i].raw);
            slots[i].raw = NULL;
            slots[i].buf = NULL;
            slots[i].cap = 0;
            atomic_flag_clear_explicit(&slots[i].busy, memory_order_release);
        }
}

/* ---- portable packing ---- */

void lithe__sgemm_pack_portable(size_t R, size_t lanes, size_t kc, const float *src, size_t ld, bool rows, float *dst) {
    if (rows) {
        for (size_t l = 0; l < lanes; l++) {
            const float *s = src + l * ld;
            for (size_t k = 0; k < kc; k++) dst[k * R + l] = s[k];
        }
        for (size_t k = 0; k < kc; k++)
            for (size_t l = lanes; l < R; l++) dst[k * R + l] = 0.0f;
    } else {
        for (size_t k = 0; k < kc; k++) {
            const float *s = src + k * ld;
            float *d = dst + k * R;
            for (size_t l = 0; l < lanes; l++) d[l] = s[l];
            for (size_t l = lanes; l < R; l++) d[l] = 0.0f;
        }
    }
}

/* A sliver (R = MR lanes of A, or NR of B) of pixels p0, p0 + 1, ... from row pointers
 * (lithe__sgemm_rows' B, lithe__sgemm_pixels' A): step k's pixel p at rows[k][(p / ow) * row + p % ow].
 * A sliver inside one output row is a contiguous run of every step's row: runs of evenly spaced
 * rows (a convolution's taps along a filter row: d1 floats apart) go to the kernel's packing as
 * one strided block (A: its pack_a_ptrs in one call, when it has one). A sliver across output rows
 * is cut into chunks, one per row it touches and 16-lane group of the sliver (the kernel's pack_segs). */
void lithe__sgemm_pack_pixels(const lithe__sgemm_kernel *k, bool is_a, size_t lanes, size_t kc, const float *const *rows,
                              int64_t p0, int64_t ow, int64_t row, float *dst) {
    const size_t R = (size_t)(is_a ? k->mr : k->nr);
    lithe__sgemm_pack_fn pack = is_a ? k->pack_a : k->pack_b;
    const bool own = is_a ? LITHE__SGEMM_HAS(k, pack_a) : LITHE__SGEMM_HAS(k, pack_b); /* pack is set */
    if (p0 % ow + (int64_t)lanes <= ow) {
        int64_t off = p0 / ow * row + p0 % ow;
        if (is_a && LITHE__SGEMM_HAS(k, pack_a_ptrs)) { /* one call for the sliver: taps' runs are short (KW steps) */
            k->pack_a_ptrs(lanes, kc, rows, off, dst);
            return;
        }
        if (!is_a && LITHE__SGEMM_HAS(k, pack_segs) && lanes <= 64) { /* B: one call, 16-lane groups as chunks */
            int64_t offs[4];
            size_t lane[4], len[4], ns = 0;
            for (size_t l = 0; l < lanes; l += 16, ns++) {
                offs[ns] = off + (int64_t)l;
                lane[ns] = l;
                len[ns] = lanes - l < 16 ? lanes - l : 16;
            }
            k->pack_segs(R, kc, rows, ns, offs, lane, len, dst);
            return;
        }
        for (size_t k0 = 0; k0 < kc;) {
            size_t run = 1, ld = 0;
            if (k0 + 1 < kc && rows[k0 + 1] > rows[k0]) {
                ld = (size_t)(rows[k0 + 1] - rows[k0]);
                for (run = 2; k0 + run < kc && rows[k0 + run] == rows[k0 + run - 1] + ld; run++) {
                }
            }
            if (own) pack(lanes, run, rows[k0] + off, ld, false, dst + k0 * R);
            else lithe__sgemm_pack_portable(R, lanes, run, rows[k0] + off, ld, false, dst + k0 * R);
            k0 += run;
        }
        return;
    }
    enum { MAXSEG = 8 };
    int64_t off[MAXSEG];
    size_t lane[MAXSEG], len[MAXSEG], ns = 0;
    for (size_t l = 0; l < lanes && ns <= MAXSEG;) {
        int64_t p = p0 + (int64_t)l, c = p % ow;
        size_t n = lanes - l;
        if ((int64_t)n > ow - c) n = (size_t)(ow - c);
        if (n > 16 - l % 16) n = 16 - l % 16; /* inside one 16-lane group of dst */
        if (ns < MAXSEG) {
            off[ns] = p / ow * row + c;
            lane[ns] = l;
            len[ns] = n;
        }
        ns++;
        l += n;
    }
    if (ns <= MAXSEG) {
        if (LITHE__SGEMM_HAS(k, pack_segs)) {
            k->pack_segs(R, kc, rows, ns, off, lane, len, dst);
            return;
        }
        for (size_t kk = 0; kk < kc; kk++) { /* chunk by chunk */
            const float *r = rows[kk];
            float *d = dst + kk * R;
            for (size_t c = 0; c < ns; c++)
                for (size_t l = 0; l < len[c]; l++) d[lane[c] + l] = r[off[c] + l];
            for (size_t l = lanes; l < R; l++) d[l] = 0.0f;
        }
        return;
    }
    int64_t offs[64]; /* R <= 64: lane by lane */
    for (size_t l = 0; l < lanes; l++) offs[l] = (p0 + (int64_t)l) / ow * row + (p0 + (int64_t)l) % ow;
    for (size_t kk = 0; kk < kc; kk++) {
        const float *r = rows[kk];
        float *d = dst + kk * R;
        for (size_t l = 0; l < lanes; l++) d[l] = r[offs[l]];
        for (size_t l = lanes; l < R; l++) d[l] = 0.0f;
    }
}
