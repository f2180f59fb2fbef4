/* LITHE_HD: __host__ __device__ under nvcc, empty in C and host C++ — for the static inline
 * bodies in backends/common/ that the CPU's scalar kernels (C11) and the CUDA kernels (nvcc, and
 * g++ / clang++ for the host emulation) share. */
#ifndef LITHE_BACKENDS_COMMON_HD_H
#define LITHE_BACKENDS_COMMON_HD_H

#ifdef __CUDACC__
#define LITHE_HD __host__ __device__
#else
#define LITHE_HD
#endif

#endif
