#version 450
// gemm with 64 x 64 tiles of C per workgroup (4 x 4 per invocation, K steps of 16): small and
// thin products, where 128-wide tiles would leave most of the device idle. See gemm_body.glsl.
#extension GL_GOOGLE_include_directive : require
#define BM 64u
#define BN 64u
#define BK 16u
#define TM 4u
#define TN 4u
#include "gemm_body.glsl"
