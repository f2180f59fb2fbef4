#!/usr/bin/env bash
# GEMM GFLOP/s, MLP training steps/s and a small CNN's forward passes/s on the Vulkan backend and,
# for comparison, the CPU backend and PyTorch (CUDA when it sees a GPU). Runs on any Vulkan device
# (LITHE_VULKAN_DEVICE=<index or name part> picks one; without a GPU, Mesa's lavapipe emulates one
# on the CPU — label such numbers as CPU-emulated). The CNN is the one bench/vulkan/torch_ref.py
# exports to ONNX (--onnx) and times itself, so lithe and torch run the same network; without torch
# there is no CNN row.
#   bench/vulkan_bench.sh [build dir (default build/ci)] [gemm sizes (default 256,1024,4096)]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/ci}
sizes=${2:-256,1024,4096}
if [ -f "$build/build.ninja" ] || [ ! -x "$build/bench/vulkan/lithe_vulkan_bench" ]; then # (a carried build: as it is)
  [ -f "$build/build.ninja" ] || cmake --preset ci >/dev/null
  cmake --build "$build" --target lithe_vulkan_bench >/dev/null
fi
bin="$build/bench/vulkan/lithe_vulkan_bench"
command -v vulkaninfo >/dev/null && vulkaninfo --summary 2>/dev/null | grep -E "deviceName|deviceType|driverName" || true
# PyTorch on the same machine first (cuBLAS when it sees a CUDA GPU): the issue's yardstick; it
# also exports the CNN
# Debian's interpreter (torch, thinc) here; elsewhere the first that imports torch (on the device
# tool's GPU image /usr/bin/python3 has none: torch lives in the python3 on PATH)
py=python3
for c in /usr/bin/python3 python3; do "$c" -c "import torch" 2>/dev/null && { py=$c; break; }; done
onnx=$(mktemp --suffix=.onnx)
trap 'rm -f "$onnx"' EXIT
cnn=()
if "$py" -c "import torch" 2>/dev/null; then
  "$py" bench/vulkan/torch_ref.py "$sizes" "${STEPS:-20}" --onnx "$onnx"
  cnn=(--cnn "${CNN_ONNX:-$onnx}") # CNN_ONNX: as in bench/cuda/cuda_bench.sh
else
  echo "torch: not installed (no CNN: torch_ref.py exports it)"
fi
"$bin" --device vulkan --gemm "$sizes" --steps "${STEPS:-20}" "${cnn[@]}"
"$bin" --device cpu --gemm "${CPU_SIZES:-256,1024}" --steps "${STEPS:-20}" "${cnn[@]}"
