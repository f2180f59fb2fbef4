#!/usr/bin/env bash
# The CUDA backend against PyTorch on the same GPU: fp32 GEMM GFLOP/s at 1024^3 and 4096^3 (lithe's
# is cuBLAS: the goal is within 10 % of torch's), 784-512-512-10 MLP training steps/s at batch 128
# (the goal: at least torch's), and a small CNN's forward passes/s (the network torch_ref.py exports
# to ONNX, imported by lithe). LITHE_CUDA_DEVICE picks the GPU. Without one, lithe says why and
# only torch's (CPU) line prints.
#   bench/cuda/cuda_bench.sh [build dir (default build/ci)] [gemm sizes (default 1024,4096)]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build/ci}
sizes=${2:-1024,4096}
steps=${STEPS:-50}
if [ -f "$build/build.ninja" ] || [ ! -x "$build/bench/cuda/lithe_cuda_bench" ]; then # (a carried build: as it is)
  [ -f "$build/build.ninja" ] || cmake --preset ci >/dev/null
  cmake --build "$build" --target lithe_cuda_bench >/dev/null
fi
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader || true
# Debian's interpreter (torch, thinc) here; elsewhere the first that imports torch (on the device
# tool's GPU image /usr/bin/python3 has none: torch lives in the python3 on PATH)
py=python3
for c in /usr/bin/python3 python3; do "$c" -c "import torch" 2>/dev/null && { py=$c; break; }; done
onnx=$(mktemp --suffix=.onnx)
trap 'rm -f "$onnx"' EXIT
# PyTorch first (it also exports the CNN both time)
"$py" bench/vulkan/torch_ref.py "$sizes" "$steps" --onnx "$onnx"
# CNN_ONNX: the CNN as torch 1.13 exported it (bench/cuda/gpu_carry.sh; a newer torch may write opset 18)
"$build/bench/cuda/lithe_cuda_bench" --device cuda --gemm "$sizes" --steps "$steps" --cnn "${CNN_ONNX:-$onnx}"
