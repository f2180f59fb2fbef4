/* Holds XNNPACK to a narrower ISA, so that LITHE_XNNPACK's rule can be measured with XNNPACK and
 * lithe's kernel table (LITHE_CPU_ISA) on the same ISA on one AVX-512 machine (docs/performance.md,
 * "in the models"). XNNPACK picks its kernels from cpuinfo's flags (the exported struct cpuinfo_isa)
 * when xnn_initialize runs; this library, preloaded, clears the AVX-512 ones first (and with
 * XNN_SHIM_ISA=sse2 also AVX, FMA3, F16C and AVX2):
 *
 *   gcc -shared -fPIC -O2 bench/xnnpack/isa_shim.c -o build/isa_shim.so -l:libcpuinfo.so.0
 *   LD_PRELOAD=build/isa_shim.so LITHE_CPU_ISA=avx2 build/bench-xnnpack/tools/lithe/lithe bench ...
 *   XNN_SHIM_ISA=sse2 LD_PRELOAD=build/isa_shim.so LITHE_CPU_ISA=sse2 ...
 *
 * A measuring tool, not built by CMake. The flags' offsets are those of Debian 12's libcpuinfo0
 * (git 2022-06-17, x86-64 layout of struct cpuinfo_x86_isa); it checks the neighbours it knows on a
 * Zen 4 (AVX and AVX2 set, FMA4 and AVX512PF clear) and aborts on any other layout. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern bool cpuinfo_initialize(void);
extern unsigned char cpuinfo_isa[]; /* struct cpuinfo_x86_isa: one bool per feature */

enum { AVX = 22, FMA3 = 23, FMA4 = 24, F16C = 26, AVX2 = 27, AVX512F = 28, AVX512PF = 29, AVX512_N = 20 };

__attribute__((constructor)) static void isa_shim(void) {
    if (!cpuinfo_initialize() || cpuinfo_isa[AVX] != 1 || cpuinfo_isa[AVX2] != 1 || cpuinfo_isa[FMA4] ||
        cpuinfo_isa[AVX512PF] || cpuinfo_isa[AVX512F] != 1) {
        fprintf(stderr, "isa_shim: not the cpuinfo layout (or CPU) this was written for\n");
        abort();
    }
    memset(cpuinfo_isa + AVX512F, 0, AVX512_N); /* avx512f .. avx512_4fmaps */
    const char *isa = getenv("XNN_SHIM_ISA");
    if (isa && !strcmp(isa, "sse2")) cpuinfo_isa[AVX] = cpuinfo_isa[FMA3] = cpuinfo_isa[F16C] = cpuinfo_isa[AVX2] = 0;
}
