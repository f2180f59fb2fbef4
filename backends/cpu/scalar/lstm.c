/* Recurrent, attention and similarity kernels (issue 5): the per-timestep LSTM recurrence and its
 * backward, ParametricAttention's per-sequence softmax weighting, and CauchySimilarity. Scalar
 * twins; the semantics and shapes are stated in core/primitives.def.
 *
 * LSTM rows are "packed" time-major, as Thinc's _padded_to_packed lays them out: timestep t holds
 * rows start[t] .. start[t] + size_at_t[t] - 1, batch entry b at row start[t] + b, and
 * size_at_t is non-increasing (Thinc's Padded sorts sequences longest first). Gates are stored
 * gate-major within a row, (f, i, o, c) blocks of H each — the row order of Thinc's flat Wx / Wh,
 * so G = X · Wxᵀ needs no transposition. */
#include "../kernels.h"
#include "../../common/rows.h"

#include <math.h>
#include <string.h>

static inline float sigmoidf(float x) { return 1.0f / (1.0f + expf(-x)); }

/* The row of the step before (t, b) in processing order, or -1 where (t, b) starts its sequence
 * (the initial state is read instead). l2r: (t - 1, b); r2l: (t + 1, b) if that step exists. */
static inline int64_t prev_row(int64_t T, const int32_t *size_at_t, const int64_t *start, bool reverse, int64_t t,
                               int64_t b) {
    if (!reverse) return t > 0 ? start[t - 1] + b : -1;
    return t + 1 < T && b < size_at_t[t + 1] ? start[t + 1] + b : -1;
}

/* Row starts of each timestep into start (T,). */
static void step_starts(int64_t T, const int32_t *size_at_t, int64_t *start) {
    int64_t s = 0;
    for (int64_t t = 0; t < T; t++) {
        start[t] = s;
        s += size_at_t[t];
    }
}

void lithe_f32_lstm_scan__scalar(int64_t T, int64_t H, const int32_t *size_at_t, int64_t *start, const float *Wh,
                                 const float *bx, const float *bh, const float *h0, const float *c0, bool reverse,
                                 float *G, float *C, float *Y) {
    step_starts(T, size_at_t, start);
    for (int64_t k = 0; k < T; k++) {
        int64_t t = reverse ? T - 1 - k : k;
        for (int64_t b = 0; b < size_at_t[t]; b++) {
            int64_t r = start[t] + b, p = prev_row(T, size_at_t, start, reverse, t, b);
            const float *hp = p >= 0 ? Y + p * H : h0, *cp = p >= 0 ? C + p * H : c0;
            float *g = G + r * 4 * H;
            /* g (4H) += Wh (4H, H) · h_prev + bx + bh */
            for (int64_t j = 0; j < 4 * H; j++) {
                const float *w = Wh + j * H;
                float acc = 0.0f;
                for (int64_t k2 = 0; k2 < H; k2++) acc += w[k2] * hp[k2];
                g[j] += acc + (bx[j] + bh[j]);
            }
            for (int64_t h = 0; h < H; h++) {
                float f = sigmoidf(g[h]), i = sigmoidf(g[H + h]), o = sigmoidf(g[2 * H + h]), cc = tanhf(g[3 * H + h]);
                float c = f * cp[h] + i * cc;
                g[h] = f, g[H + h] = i, g[2 * H + h] = o, g[3 * H + h] = cc;
                C[r * H + h] = c;
                Y[r * H + h] = tanhf(c) * o;
            }
        }
    }
}

void lithe_f32_lstm_scan_backward__scalar(int64_t T, int64_t H, const int32_t *size_at_t, int64_t *start,
                                          const float *Wh, const float *h0, const float *c0, bool reverse,
                                          const float *G, const float *C, const float *Y, float *dY, float *dC,
                                          float *dG, float *dWh) {
    step_starts(T, size_at_t, start);
    int64_t N = T ? start[T - 1] + size_at_t[T - 1] : 0;
    memset(dC, 0, (size_t)(N * H) * sizeof *dC);
    /* Walk the steps in the reverse of processing order: a step's dY and dC are complete once
     * every later step has pushed its share back. */
    for (int64_t k = T - 1; k >= 0; k--) {
        int64_t t = reverse ? T - 1 - k : k;
        for (int64_t b = 0; b < size_at_t[t]; b++) {
            int64_t r = start[t] + b, p = prev_row(T, size_at_t, start, reverse, t, b);
            const float *g = G + r * 4 * H, *cp = p >= 0 ? C + p * H : c0, *hp = p >= 0 ? Y + p * H : h0;
            float *dg = dG + r * 4 * H;
            for (int64_t h = 0; h < H; h++) {
                float dc = lithe__lstm_dgates(H, h, g, cp[h], C[r * H + h], dY[r * H + h], dC[r * H + h], dg);
                if (p >= 0) dC[p * H + h] = dc * g[h];
            }
            /* dh_prev (H) += dgᵀ · Wh; dWh (4H, H) += dg ⊗ h_prev */
            for (int64_t j = 0; j < 4 * H; j++) {
                float d = dg[j];
                const float *w = Wh + j * H;
                float *dw = dWh + j * H;
                if (p >= 0)
                    for (int64_t h = 0; h < H; h++) dY[p * H + h] += d * w[h];
                for (int64_t h = 0; h < H; h++) dw[h] += d * hp[h];
            }
        }
    }
}

/* ParametricAttention: A = softmax over each sequence of clip(X · Q, -20, 20); Y = X * A. */
void lithe_f32_para_attention__scalar(int64_t B, int64_t O, const int32_t *lengths, const float *X, const float *Q,
                                      float *A, float *Y) {
    int64_t r0 = 0;
    for (int64_t b = 0; b < B; b++) {
        int64_t n = lengths[b];
        float sum = 0.0f;
        for (int64_t r = r0; r < r0 + n; r++) {
            float s = 0.0f;
            for (int64_t j = 0; j < O; j++) s += X[r * O + j] * Q[j];
            s = s < -20.0f ? -20.0f : s > 20.0f ? 20.0f : s;
            A[r] = expf(s);
            sum += A[r];
        }
        for (int64_t r = r0; r < r0 + n; r++) {
            A[r] /= sum;
            for (int64_t j = 0; j < O; j++) Y[r * O + j] = X[r * O + j] * A[r];
        }
        r0 += n;
    }
}

/* d_att[r] = sum_j X[r, j] dY[r, j]; through the softmax: ds = A * d_att - A * sum_seq(A * d_att);
 * dX = dY * A + ds ⊗ Q; dQ += Xᵀ · ds. Thinc's order: the clip is not differentiated. */
void lithe_f32_para_attention_backward__scalar(int64_t B, int64_t O, const int32_t *lengths, const float *X,
                                               const float *Q, const float *A, const float *dY, float *dX,
                                               float *dQ) {
    int64_t r0 = 0;
    for (int64_t b = 0; b < B; b++) {
        int64_t n = lengths[b];
        float tot = 0.0f;
        for (int64_t r = r0; r < r0 + n; r++) {
            float da = 0.0f;
            for (int64_t j = 0; j < O; j++) da += X[r * O + j] * dY[r * O + j];
            dX[r * O] = da; /* parked in dX's first column until the sum is known */
            tot += A[r] * da;
        }
        for (int64_t r = r0; r < r0 + n; r++) {
            float ds = A[r] * dX[r * O] - A[r] * tot;
            for (int64_t j = 0; j < O; j++) {
                dX[r * O + j] = dY[r * O + j] * A[r] + ds * Q[j];
                dQ[j] += X[r * O + j] * ds;
            }
        }
        r0 += n;
    }
}

/* CauchySimilarity: sim[b] = 1 / (1 + sum_j W[j] (X1[b, j] - X2[b, j])^2). */
void lithe_f32_cauchy_similarity__scalar(int64_t B, int64_t I, const float *X1, const float *X2, const float *W,
                                         float *sim) {
    for (int64_t b = 0; b < B; b++) {
        float tot = 0.0f;
        for (int64_t j = 0; j < I; j++) {
            float d = X1[b * I + j] - X2[b * I + j];
            tot += W[j] * (d * d);
        }
        sim[b] = 1.0f / (1.0f + tot);
    }
}

/* d_tot = -d_sim * sim^2 (Thinc: d_sim * -1 / (tot + 1)^2); dW += d_tot * diff^2;
 * dX1 = 2 W d_tot diff = -dX2. */
void lithe_f32_cauchy_similarity_backward__scalar(int64_t B, int64_t I, const float *X1, const float *X2,
                                                  const float *W, const float *sim, const float *dsim, float *dX1,
                                                  float *dX2, float *dW) {
    for (int64_t b = 0; b < B; b++) {
        float inv = sim[b];
        float dt = dsim[b] * (-(inv * inv));
        for (int64_t j = 0; j < I; j++) {
            float d = X1[b * I + j] - X2[b * I + j];
            dW[j] += dt * (d * d);
            float dd = 2.0f * (W[j] * dt) * d;
            dX1[b * I + j] = dd;
            dX2[b * I + j] = -dd;
        }
    }
}
