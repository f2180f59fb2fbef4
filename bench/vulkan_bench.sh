#!/usr/bin/env bash
# GEMM GFLOP/s and MLP training steps/s on the Vulkan backend and, for comparison, the CPU
# backend and PyTorch (CUDA when it sees a GPU). Runs on any Vulkan device
# (LITHE_VULKAN_DEVICE=<index or name part> picks one; without a GPU, Mesa's lavapipe emulates one
# on the CPU — label such numbers as CPU-emulated).
#   bench/vulkan_bench.sh [build dir (default build/ci)] [gemm sizes (default 256,1024,4096)]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/ci}
sizes=${2:-256,1024,4096}
[ -f "$build/build.ninja" ] || cmake --preset ci >/dev/null
cmake --build "$build" --target lithe_vulkan_bench >/dev/null
bin="$build/bench/vulkan/lithe_vulkan_bench"
command -v vulkaninfo >/dev/null && vulkaninfo --summary 2>/dev/null | grep -E "deviceName|deviceType|driverName" || true
"$bin" --device vulkan --gemm "$sizes" --steps "${STEPS:-20}"
"$bin" --device cpu --gemm "${CPU_SIZES:-256,1024}" --steps "${STEPS:-20}"
# PyTorch on the same machine (cuBLAS when it sees a CUDA GPU): the issue's yardstick
py=/usr/bin/python3
[ -x "$py" ] || py=python3
"$py" -c "import torch" 2>/dev/null && "$py" bench/vulkan/torch_ref.py "$sizes" "${STEPS:-20}" || echo "torch: not installed"
