/* Shared by the SGEMM driver's files (gemm.c, gemm_pack.c) only. */
#ifndef LITHE_CPU_GEMM_INTERNAL_H
#define LITHE_CPU_GEMM_INTERNAL_H

#include "gemm.h"

#include <stdatomic.h>

/* A per-thread packing workspace (a slot of the backend's, kept
 * between calls, or the caller's `priv` for one call), claimed with room for `floats` (NULL: out of
 * memory) and released; and the portable packing of `lanes` rows (rows) or columns of op(src) into
 * panels of R, kc deep, zero-padded to R. */
typedef struct lithe__sgemm_ws {
    atomic_flag busy;
    float *buf; /* 64-byte aligned inside raw */
    void *raw;
    size_t cap; /* floats */
} lithe__sgemm_ws;
lithe__sgemm_ws *lithe__sgemm_ws_claim(size_t floats, lithe__sgemm_ws *priv);
void lithe__sgemm_ws_release(lithe__sgemm_ws *s);
void lithe__sgemm_pack_portable(size_t R, size_t lanes, size_t kc, const float *src, size_t ld, bool rows, float *dst);
/* gemm_pack.c: a sliver of pixels p0, p0 + 1, ... packed from row pointers (lithe__sgemm_rows' B,
 * lithe__sgemm_pixels' A; its comment there). gemm_kernel.c: the epilogue's activation as the
 * microkernel's clamp, where the kernel can (false: the driver applies the epilogue itself). */
void lithe__sgemm_pack_pixels(const lithe__sgemm_kernel *k, bool is_a, size_t lanes, size_t kc, const float *const *rows,
                              int64_t p0, int64_t ow, int64_t row, float *dst);
bool lithe__sgemm_epi_clamp(const lithe__sgemm_kernel *k, const lithe__sgemm_epilogue *e, bool bias_row_after,
                            lithe__sgemm_ukparams *p);

#endif
