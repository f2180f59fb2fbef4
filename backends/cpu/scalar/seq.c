/* Sequence kernels over Ragged rows: reductions per sequence and their backprops (Thinc's
 * cpu_reduce_* in cpu_kernels.hh), and seq2col (Thinc's windowed concatenation within each
 * sequence's bounds). X (N, O) rows grouped by lengths (B,) summing to N (checked by the layer). */
#include "../kernels.h"

#include <string.h>

/* Y (B, O) = per-sequence sum, or mean when `mean` (a zero-length sequence gives a zero row).
 * Thinc's order: Y[b] += X[row] * (1 / length) for the mean. */
void lithe_f32_reduce_sum__scalar(int64_t B, int64_t O, const int32_t *lengths, const float *X, bool mean, float *Y) {
    memset(Y, 0, (size_t)(B * O) * sizeof *Y);
    for (int64_t b = 0; b < B; b++) {
        float *y = Y + b * O;
        float scale = lengths[b] ? (float)(1.0 / lengths[b]) : 0.0f;
        for (int32_t i = 0; i < lengths[b]; i++, X += O)
            for (int64_t j = 0; j < O; j++) y[j] += mean ? X[j] * scale : X[j];
    }
}

/* dX (N, O): every row of sequence b gets dY[b] (sum) or dY[b] / length (mean). */
void lithe_f32_reduce_sum_backward__scalar(int64_t B, int64_t O, const int32_t *lengths, const float *dY, bool mean,
                                           float *dX) {
    for (int64_t b = 0; b < B; b++) {
        const float *dy = dY + b * O;
        float scale = lengths[b] ? (float)(1.0 / lengths[b]) : 0.0f; /* Thinc multiplies by 1/length */
        for (int32_t i = 0; i < lengths[b]; i++, dX += O)
            for (int64_t j = 0; j < O; j++) dX[j] = mean ? dy[j] * scale : dy[j];
    }
}

/* Y (B, O) = per-sequence max (every length > 0), which (B, O) = row of the first maximum
 * within the sequence. */
void lithe_f32_reduce_max__scalar(int64_t B, int64_t O, const int32_t *lengths, const float *X, float *Y,
                                  int32_t *which) {
    for (int64_t b = 0; b < B; b++) {
        float *y = Y + b * O;
        int32_t *w = which + b * O;
        memcpy(y, X, (size_t)O * sizeof *y);
        memset(w, 0, (size_t)O * sizeof *w);
        X += O;
        for (int32_t i = 1; i < lengths[b]; i++, X += O)
            for (int64_t j = 0; j < O; j++)
                if (X[j] > y[j]) {
                    y[j] = X[j];
                    w[j] = i;
                }
    }
}

/* dX (N, O) = dY routed to each sequence's maximum rows, zeros elsewhere. */
void lithe_f32_reduce_max_backward__scalar(int64_t B, int64_t O, const int32_t *lengths, const float *dY,
                                           const int32_t *which, float *dX) {
    for (int64_t b = 0; b < B; b++) {
        memset(dX, 0, (size_t)(lengths[b] * O) * sizeof *dX);
        for (int64_t j = 0; j < O; j++) dX[which[b * O + j] * O + j] = dY[b * O + j];
        dX += lengths[b] * O;
    }
}

/* Y (N, (2 nW + 1) I): row j holds rows j-nW .. j+nW of its own sequence, zeros past the
 * sequence's ends. */
void lithe_f32_seq2col__scalar(int64_t B, int64_t I, int64_t nW, const int32_t *lengths, const float *X, float *Y) {
    int64_t nF = 2 * nW + 1, start = 0;
    for (int64_t b = 0; b < B; b++) {
        int64_t end = start + lengths[b];
        for (int64_t j = start; j < end; j++) {
            float *y = Y + j * nF * I;
            for (int64_t f = 0; f < nF; f++) {
                int64_t src = j - nW + f;
                if (src >= start && src < end) memcpy(y + f * I, X + src * I, (size_t)I * sizeof *y);
                else memset(y + f * I, 0, (size_t)I * sizeof *y);
            }
        }
        start = end;
    }
}

/* dX (N, I) = the sum of every window slot each row was copied into. */
void lithe_f32_seq2col_backward__scalar(int64_t B, int64_t I, int64_t nW, const int32_t *lengths, const float *dY,
                                        float *dX) {
    int64_t nF = 2 * nW + 1, start = 0, N = 0;
    for (int64_t b = 0; b < B; b++) N += lengths[b];
    memset(dX, 0, (size_t)(N * I) * sizeof *dX);
    for (int64_t b = 0; b < B; b++) {
        int64_t end = start + lengths[b];
        for (int64_t j = start; j < end; j++) {
            const float *dy = dY + j * nF * I;
            for (int64_t f = 0; f < nF; f++) {
                int64_t dst = j - nW + f;
                if (dst < start || dst >= end) continue;
                for (int64_t k = 0; k < I; k++) dX[dst * I + k] += dy[f * I + k];
            }
        }
        start = end;
    }
}
