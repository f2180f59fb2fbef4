#version 450
// gemm with 128 x 128 tiles of C per workgroup (8 x 8 per invocation, K steps of 8): twice the
// arithmetic per shared-memory load of gemm.comp, for products big enough to fill the device.
// See gemm_body.glsl.
#extension GL_GOOGLE_include_directive : require
#define BM 128u
#define BN 128u
#define BK 8u
#define TM 8u
#define TN 8u
#include "gemm_body.glsl"
