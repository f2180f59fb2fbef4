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
[ -f "$build/build.ninja" ] || cmake --preset ci >/dev/null
cmake --build "$build" --target lithe_cuda_bench >/dev/null
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader || true
py=/usr/bin/python3
[ -x "$py" ] || py=python3
onnx=$(mktemp --suffix=.onnx)
trap 'rm -f "$onnx"' EXIT
# PyTorch first (it also exports the CNN both time)
"$py" bench/vulkan/torch_ref.py "$sizes" "$steps" --onnx "$onnx"
"$build/bench/cuda/lithe_cuda_bench" --device cuda --gemm "$sizes" --steps "$steps" --cnn "$onnx"
