#!/usr/bin/env bash
# The whole test suite: install dependencies, then build and test with gcc and clang (warnings are
# errors), and again under AddressSanitizer + UndefinedBehaviorSanitizer; then the fuzz targets.
set -euo pipefail
cd "$(dirname "$0")"
scripts/setup.sh
# Before anything is built: every toolchain of every stage compiles, links and runs a one-line
# program, and a missing package is named (scripts/check-toolchains.sh).
scripts/setup.sh --check
jobs=$(nproc)
# setup.sh installed lavapipe, so the Vulkan device tests must run here: test_vulkan fails, rather
# than skips, when it finds no Vulkan loader or device. (CUDA: the ci, clang and asan presets set
# LITHE_CUDA=ON, so a missing nvcc stops the configure; the GPU runs still skip without a GPU.)
export LITHE_REQUIRE_VULKAN=1
for preset in ci clang asan; do
  echo "=== $preset ==="
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset" -j "$jobs"
  ctest --preset "$preset" -j "$jobs"
done
# ThreadSanitizer: the concurrency tests only (the preset builds test_concurrency and test_threads:
# the library once, no tools, no GPU backends); any data race report fails the run.
echo "=== tsan ==="
cmake --preset tsan >/dev/null
cmake --build --preset tsan -j "$jobs"
ctest --preset tsan -j "$jobs"
# lithe as a user gets it: `cmake --install` of the ci build into a temporary prefix, then
# examples/c built by an outside project with find_package(lithe) (shared and static) and with
# pkg-config, each run; the installed command; add_subdirectory's defaults (docs/install.md)
echo "=== install ==="
tests/install/run.sh build/ci
# Arm: the library and its C tests cross-compiled for aarch64 (NEON kernels), every test run under
# qemu-aarch64 by ctest (the preset's toolchain names the emulator); goldens come from the same
# Python fixtures as natively. No Vulkan, tools or Python package in this build.
echo "=== aarch64 (qemu) ==="
cmake --preset aarch64 >/dev/null
cmake --build --preset aarch64 -j "$jobs"
ctest --preset aarch64 -j "$jobs"
# WebAssembly: lithe.wasm (the wasi preset) against the native command built above
echo "=== wasm ==="
cmake --preset wasi >/dev/null
cmake --build --preset wasi -j "$jobs"
LITHE_NATIVE=build/ci/tools/lithe/lithe LITHE_WASI=build/wasi/tools/lithe/lithe.wasm node --test tests/wasm/
# README.md's command-line and WASI quickstart as written (examples/wasi/quickstart.sh), with the ci
# build's lithe on PATH; its two model files are removed after
(trap 'rm -f fashion.lithe wasi.lithe' EXIT; PATH="$PWD/build/ci/tools/lithe:$PATH" examples/wasi/quickstart.sh >/dev/null)
# the benchmark harness, smoke only (bench/README.md): the GEMM, MLP and training rows of lithe
# (native, WASI, npm) and of every peer runner (OpenBLAS, XNNPACK, onnxruntime-node/-web, tfjs-wasm,
# PyTorch, Thinc), 3 timed runs each, into build/bench/results-quick.md; a runner that fails fails
# the run (bench/README.md); no time is checked
bench/run.sh --quick --only gemm,mlp,train --build build/ci
# the npm package: its .wasm builds (Emscripten: SIMD128, threads, scalar, relaxed SIMD, the importer modules), then node:test against the native build
(cd bindings/js && npm ci --no-audit --no-fund && npm run build && LITHE_NATIVE=build/ci/tools/lithe/lithe npm test)
# the WebGPU backend (backends/webgpu): lithe-webgpu-test.wasm (preset wasm-webgpu) in Node on
# Dawn's bindings (npm's webgpu) over SwiftShader from Debian's chromium: every WGSL primitive against
# the CPU backend, a Relu MLP's ten Adam steps, the dispatches and submits of a training step; with
# LITHE_REQUIRE_WEBGPU=1 a missing adapter fails instead of skipping (docs/backends.md, "WebGPU")
cmake --preset wasm-webgpu >/dev/null
cmake --build --preset wasm-webgpu -j "$jobs"
(cd tests/webgpu && npm ci --no-audit --no-fund && LITHE_REQUIRE_WEBGPU=1 npm test)
# bundler users: the packed package built into a page by Vite, webpack 5 and esbuild (its plugin),
# each bundle predicting in Debian's Chromium (examples/browser/test.mjs)
(cd examples/browser && npm ci --no-audit --no-fund && LITHE_NATIVE=build/ci/tools/lithe/lithe npm test)
# the demo pages end to end in Debian's Chromium (playwright-core); screenshots in build/web/demo.png
# and build/web/finetune.png; the fine-tuning page's accuracy bar (LoRA, last layer vs full) in Node
(cd web && npm ci --no-audit --no-fund && LITHE_NATIVE=build/ci/tools/lithe/lithe npm test)
# the libFuzzer targets (msgpack, Thinc bytes, .npy, .lithe): a reproducible smoke run each
FUZZ_RUNS="${LITHE_FUZZ_RUNS:-100000}" fuzz/run.sh
echo "=== all presets passed ==="
