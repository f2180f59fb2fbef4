#!/usr/bin/env bash
# The whole test suite: install dependencies, then build and test with gcc and clang (warnings are
# errors), and again under AddressSanitizer + UndefinedBehaviorSanitizer; then the fuzz targets.
set -euo pipefail
cd "$(dirname "$0")"
scripts/setup.sh
jobs=$(nproc)
for preset in ci clang asan; do
  echo "=== $preset ==="
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset" -j "$jobs"
  ctest --preset "$preset" -j "$jobs"
done
# the libFuzzer targets (msgpack, Thinc bytes, .npy, .lithe): a reproducible smoke run each
FUZZ_RUNS="${LITHE_FUZZ_RUNS:-100000}" fuzz/run.sh
echo "=== all presets passed ==="
