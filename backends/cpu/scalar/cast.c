/* Scalar reference dtype conversions: one side is always float32 (lithe_tensor_cast checks).
 *
 * f32 -> f16 and f32 -> bf16 round to nearest, ties to even, on the bit patterns, so every
 * target gives the same bits: overflow goes to +-inf, f16 subnormals are produced exactly, NaN
 * stays NaN (quiet, sign kept). f16/bf16 -> f32 is exact.
 * f32 -> integers truncates toward zero like C's conversion, but saturates where C's would be
 * undefined: NaN gives 0, values beyond the range give its nearest end. */
#include "../kernels.h"

#include <math.h>
#include <string.h>

static uint32_t f32_bits(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    return u;
}

static float bits_f32(uint32_t u) {
    float x;
    memcpy(&x, &u, 4);
    return x;
}

static uint16_t f32_to_f16(float x) {
    uint32_t u = f32_bits(x);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t exp = (u >> 23) & 0xFFu, man = u & 0x7FFFFFu;
    if (exp == 0xFF) return (uint16_t)(sign | 0x7C00u | (man ? 0x200u | (man >> 13) : 0u));
    int32_t e = (int32_t)exp - 127 + 15; /* biased f16 exponent */
    if (e >= 31) return (uint16_t)(sign | 0x7C00u);
    if (e <= 0) {
        /* Subnormal f16 (or zero): value = m * 2^-24 with m = full mantissa >> (14 - e). */
        if (e < -10) return sign; /* below half the smallest subnormal: rounds to zero */
        uint32_t full = man | 0x800000u;
        uint32_t shift = (uint32_t)(14 - e);
        uint32_t m = full >> shift, rem = full & ((1u << shift) - 1u), half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (m & 1u))) m++;
        return (uint16_t)(sign | m); /* m may carry into the smallest normal: still correct */
    }
    uint32_t m = man >> 13, rem = man & 0x1FFFu;
    uint32_t h = ((uint32_t)e << 10) | m;
    if (rem > 0x1000u || (rem == 0x1000u && (m & 1u))) h++; /* a carry may reach inf: correct */
    return (uint16_t)(sign | h);
}

static float f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1Fu, man = h & 0x3FFu;
    if (exp == 0x1F) return bits_f32(sign | 0x7F800000u | (man << 13));
    if (exp == 0) {
        float v = (float)man * 0x1p-24f; /* exact: man < 2^10 */
        return sign ? -v : v;
    }
    return bits_f32(sign | ((exp - 15 + 127) << 23) | (man << 13));
}

static uint16_t f32_to_bf16(float x) {
    uint32_t u = f32_bits(x);
    if ((u & 0x7F800000u) == 0x7F800000u && (u & 0x7FFFFFu)) return (uint16_t)((u >> 16) | 0x40u);
    uint32_t lsb = (u >> 16) & 1u;
    return (uint16_t)((u + 0x7FFFu + lsb) >> 16);
}

static float bf16_to_f32(uint16_t b) { return bits_f32((uint32_t)b << 16); }

static double sat(float x, double lo, double hi) {
    if (isnan(x)) return 0.0;
    double d = trunc((double)x);
    return d < lo ? lo : d > hi ? hi : d;
}

void lithe_cast__scalar(lithe_dtype to, void *Y, lithe_dtype from, const void *X, int64_t n) {
    if (from == LITHE_F32) {
        const float *x = X;
        switch (to) {
        case LITHE_F32: memcpy(Y, X, (size_t)n * 4); break;
        case LITHE_F16: for (int64_t i = 0; i < n; i++) ((uint16_t *)Y)[i] = f32_to_f16(x[i]); break;
        case LITHE_BF16: for (int64_t i = 0; i < n; i++) ((uint16_t *)Y)[i] = f32_to_bf16(x[i]); break;
        case LITHE_I32:
            for (int64_t i = 0; i < n; i++) ((int32_t *)Y)[i] = (int32_t)sat(x[i], -2147483648.0, 2147483647.0);
            break;
        case LITHE_I64:
            /* 2^63 is not representable as int64: the largest float below it is 2^63 - 2^39. */
            for (int64_t i = 0; i < n; i++)
                ((int64_t *)Y)[i] = (int64_t)sat(x[i], -0x1p63, 0x1p63 - 0x1p39);
            break;
        case LITHE_U8: for (int64_t i = 0; i < n; i++) ((uint8_t *)Y)[i] = (uint8_t)sat(x[i], 0.0, 255.0); break;
        case LITHE_I8: for (int64_t i = 0; i < n; i++) ((int8_t *)Y)[i] = (int8_t)sat(x[i], -128.0, 127.0); break;
        case LITHE_U64: case LITHE_U32: break; /* refused by lithe_tensor_cast */
        }
        return;
    }
    float *y = Y;
    switch (from) {
    case LITHE_F16: for (int64_t i = 0; i < n; i++) y[i] = f16_to_f32(((const uint16_t *)X)[i]); break;
    case LITHE_BF16: for (int64_t i = 0; i < n; i++) y[i] = bf16_to_f32(((const uint16_t *)X)[i]); break;
    case LITHE_I32: for (int64_t i = 0; i < n; i++) y[i] = (float)((const int32_t *)X)[i]; break;
    case LITHE_I64: for (int64_t i = 0; i < n; i++) y[i] = (float)((const int64_t *)X)[i]; break;
    case LITHE_U8: for (int64_t i = 0; i < n; i++) y[i] = (float)((const uint8_t *)X)[i]; break;
    case LITHE_I8: for (int64_t i = 0; i < n; i++) y[i] = (float)((const int8_t *)X)[i]; break;
    case LITHE_F32: case LITHE_U64: case LITHE_U32: break;
    }
}
