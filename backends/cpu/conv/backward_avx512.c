/* The convolution backward's col2im adds (backward.c's dx_image, stride 1) with AVX-512 (compiled with
 * -mavx512f on x86-64 only; chosen at run time by backward.c where the GEMM kernel is the AVX-512
 * one), in registers: each dx row (16 columns a vector) is loaded once, gets its channel's taps'
 * dcol rows added in tap order (kh, kw), each a rounded add of a masked, shifted load of the tap's
 * row of the output plane, and is stored once. The path it replaces added every tap's whole plane
 * into a zero-bordered copy of dx, plane after plane: tap kw + 1's loads overlapped tap kw's stores
 * one float apart (no store-to-load forwarding), 14-wide rows through masked loads and stores, a
 * fifth of the CNN step's conv2 dX (bench/history.md). The same adds in the same order per dx
 * element (taps of other channels land on other planes; a tap whose output pixel is outside the
 * plane adds nothing), so the same bits: test_conv_bwd compares them with col2im's. With assign_dx
 * the rows start from +0 instead of dx's values (the bits of adding into a zeroed dx). */
#include "conv.h"

#if defined(__x86_64__) && defined(__AVX512F__)
#include <immintrin.h>

static inline __mmask16 lanes_between(int64_t lo, int64_t hi) { /* lanes [lo, hi), 0 <= lo < hi <= 16 */
    return (__mmask16)(((1u << hi) - 1u) & ~((1u << lo) - 1u));
}

#define ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)

/* Rows h0 .. h0 + B - 1 (B 8 or 7) of channel c's plane (`full`: all < H; else those < H, the others
 * reading the last one's sources and not stored), columns w0 .. w0 + lanes - 1, held in B registers
 * over the channel's taps: a tap is one column mask and B adds. A row whose output row is outside the
 * plane reads the ring row's -0 border (x + -0 is x: +0 + -0 = +0, -0 + -0 = -0, NaN), no mask. */
static inline __attribute__((always_inline)) void add_block(const lithe__conv2d *g, int64_t c, int64_t h0, int64_t w0,
                                                            int64_t lanes, const float *ring, size_t R, size_t ldt,
                                                            float *plane, const bool full, const int B) {
    const int64_t KK = g->KH * g->KW, OW = g->OW, W = g->W, last = g->H - 1 - h0;
    const __mmask16 m = lanes_between(0, lanes);
#define AT(i) (full || i <= last ? (int64_t)i : last) /* the row whose sources row i reads */
#define LOAD(i)                                                                                                   \
    __m512 v##i = (i) >= B || g->assign_dx ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(m, plane + (h0 + AT(i)) * W + w0);
    ROWS(LOAD)
#undef LOAD
    size_t row = (size_t)(c * KK) % R; /* the ring row of tap c·KK + kh·KW + kw */
    for (int64_t kh = 0; kh < g->KH; kh++) {
        const int64_t oh0 = h0 + g->pad[0] - kh * g->dil[0]; /* dx row h0's output row */
        for (int64_t kw = 0; kw < g->KW; kw++, row = row + 1 == R ? 0 : row + 1) {
            const int64_t s = w0 + g->pad[1] - kw * g->dil[1]; /* the output column of lane 0 */
            const int64_t lo = s < 0 ? -s : 0, hi = OW - s < lanes ? OW - s : lanes;
            if (lo >= hi) continue;
            const __mmask16 mk = lanes_between(lo, hi);
            const float *r = ring + row * ldt + oh0 * OW + s;
#define ADD(i) \
    if ((i) < B) v##i = _mm512_mask_add_ps(v##i, mk, v##i, _mm512_loadu_ps(r + AT(i) * OW));
            ROWS(ADD)
#undef ADD
        }
    }
#define STORE(i) \
    if ((i) < B && (full || i <= last)) _mm512_mask_storeu_ps(plane + (h0 + i) * W + w0, m, v##i);
    ROWS(STORE)
#undef STORE
#undef AT
}

/* Blocks of 8 rows, or of 7 where they divide the plane and 8 do not (LeNet's 14- and 28-row planes:
 * two and four full blocks, where blocks of 8 ran one with 6 or 4 rows, its clamped row addresses
 * kept in vector registers, and 2 or 4 rows' adds for nothing) */
void lithe__conv_add_taps_avx512(const lithe__conv2d *g, int64_t c0, int64_t c1, const float *ring, size_t R,
                                 size_t ldt, float *dx) {
    const bool seven = g->H % 8 && g->H % 7 == 0;
    for (int64_t c = c0; c < c1; c++)
        for (int64_t w0 = 0; w0 < g->W; w0 += 16) {
            int64_t lanes = g->W - w0 < 16 ? g->W - w0 : 16, h0 = 0;
            if (seven) {
                for (; h0 < g->H; h0 += 7) add_block(g, c, h0, w0, lanes, ring, R, ldt, dx + c * g->H * g->W, true, 7);
                continue;
            }
            for (; h0 + 8 <= g->H; h0 += 8) add_block(g, c, h0, w0, lanes, ring, R, ldt, dx + c * g->H * g->W, true, 8);
            if (h0 < g->H) add_block(g, c, h0, w0, lanes, ring, R, ldt, dx + c * g->H * g->W, false, 8);
        }
}

#elif defined(__x86_64__)
#error "backward_avx512.c must be compiled with -mavx512f"
#endif
