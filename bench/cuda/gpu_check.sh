#!/usr/bin/env bash
# Everything that needs a real NVIDIA GPU, in one go (CI has none: there the CUDA tests skip and run
# against the host emulation instead). Conformance must PASS here, not skip:
#   test_cuda         every primitive vs the CPU backend, DLPack kDLCUDA, 3 models' predictions
#                     and 10 Adam steps (exit 77 = no usable GPU: a failure on this machine)
#   test_kernels      Thinc goldens, float64 references, finite differences, on "cuda"
#   lithe train-mnist --device cuda (when Debian's dataset-fashion-mnist is installed)
#   pytest -k cuda    torch CUDA tensors through DLPack without a copy (needs a CUDA build of torch)
# then the benchmark against PyTorch on the same GPU (bench/cuda/cuda_bench.sh): fp32 GEMM GFLOP/s
# at 1024^3 and 4096^3 next to torch's (cuBLAS), MLP training steps/s next to torch CUDA's.
# Then, when the Vulkan loader offers a GPU (the NVIDIA driver's Vulkan ICD; lavapipe does not
# count), the Vulkan backend on it: test_vulkan with the run-time GEMM choice and with each variant
# forced (LITHE_VULKAN_GEMM=basic|tiled|subgroup), and bench/vulkan_bench.sh: every GEMM variant's
# GFLOP/s at 1024^3 and 4096^3 (the line "variant=auto(<x>)" says which one the run-time choice
# takes), MLP steps/s, torch's figures beside them.
#   bench/cuda/gpu_check.sh [build dir (default build/ci; built here when missing)]
# The build needs the CUDA 13 toolkit; a build dir carried from another machine needs the CUDA 13
# runtime libraries (libcublas.so.13) and a driver for CUDA 13 here.
set -uo pipefail
cd "$(dirname "$0")/../.."
b=${1:-build/ci}
if [ ! -x "$b/tests/test_cuda" ]; then
  cmake --preset ci >/dev/null && cmake --build build/ci -j "$(nproc)" || exit 1
  b=build/ci
fi
export LITHE_CUDA_MODULE=${LITHE_CUDA_MODULE:-$PWD/$b/liblithe_cuda.so}
# Debian's interpreter (torch, thinc) here; elsewhere the first that imports torch (on the device
# tool's GPU image /usr/bin/python3 has none: torch lives in the python3 on PATH)
py=python3
for c in /usr/bin/python3 python3; do "$c" -c "import torch" 2>/dev/null && { py=$c; break; }; done
# A folder packed by bench/cuda/gpu_carry.sh brings libcmocka, the Vulkan loader packages, Fashion-MNIST,
# a Thinc-exported MLP and torch 1.13's CNN; the machine's CUDA 13 holds cuBLAS, its driver the Vulkan ICD.
[ -d "$b/lib" ] && export LD_LIBRARY_PATH=$PWD/$b/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
if ldd "$LITHE_CUDA_MODULE" 2>/dev/null | grep -q 'libcublas.*not found'; then
  cub=$(find /usr/local/cuda* /usr/local/cuda*/targets -maxdepth 3 -name 'libcublas.so.13' 2>/dev/null | head -1)
  [ -n "$cub" ] && export LD_LIBRARY_PATH=$(dirname "$cub"):${LD_LIBRARY_PATH:-}
fi
if ls "$b"/gl/*.deb >/dev/null 2>&1 && ! ldconfig -p | grep -q 'libvulkan.so.1 '; then
  for f in "$b"/gl/*.deb; do dpkg -x "$f" /; done
  ldconfig
fi
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -z "${VK_DRIVER_FILES:-}" ] && [ -f $icd ] && export VK_DRIVER_FILES=$icd VK_ICD_FILENAMES=$icd
data=/usr/share/datasets/fashion-mnist
[ -d "$b/fashion-mnist" ] && data=$b/fashion-mnist
[ -f "$b/cnn.onnx" ] && export CNN_ONNX=$PWD/$b/cnn.onnx
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
fail=0
run() {
  echo "=== $*"
  "$@" || { echo "FAILED ($?): $*"; fail=1; }
}
run "$b/tests/test_cuda"
goldens=$b/tests/thinc_goldens.txt
[ -f "$goldens" ] || "$py" tests/golden/gen_thinc_goldens.py "$goldens" || true
if [ -f "$goldens" ]; then
  run env LITHE_TEST_BACKEND=cuda LITHE_THINC_GOLDENS="$goldens" "$b/tests/test_kernels"
else
  echo "SKIPPED test_kernels on cuda: no Thinc goldens (python3-thinc missing)"
fi
if [ -d "$data" ]; then
  run "$b/tools/lithe/lithe" train-mnist --data "$data" --device cuda --epochs 1
  run "$b/tools/lithe/lithe" train-mnist --data "$data" --epochs 1 # the CPU, for comparison
else
  echo "SKIPPED lithe train-mnist --device cuda: no /usr/share/datasets/fashion-mnist"
fi
if "$py" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
  if "$py" -c "import thinc" 2>/dev/null; then
    run env PYTHONPATH=shims/python LITHE_LIBRARY="$b/liblithe.so" "$py" -m pytest -q -rs -p no:cacheprovider -k cuda \
      tests/python/test_python_package.py
  elif [ -d "$b/dlpack" ]; then # no Thinc here: the same two cases on a model Thinc exported elsewhere
    run env LITHE_LIBRARY="$PWD/$b/liblithe.so" "$py" bench/cuda/dlpack_check.py "$b/dlpack"
  else
    echo "SKIPPED pytest -k cuda: no thinc here and no $b/dlpack (bench/cuda/gpu_carry.sh packs one)"
  fi
  STEPS=${STEPS:-50} run bench/cuda/cuda_bench.sh "$b" "${SIZES:-1024,4096}"
else
  echo "SKIPPED the torch parts (pytest -k cuda, the PyTorch yardstick): torch does not see a GPU here"
  run "$b/bench/cuda/lithe_cuda_bench" --device cuda --gemm "${SIZES:-1024,4096}" --steps "${STEPS:-50}"
fi
# Vulkan on the same GPU, if the loader offers it (the benchmark's first line names the device)
if [ -x "$b/bench/vulkan/lithe_vulkan_bench" ]; then
  vkdev=$("$b/bench/vulkan/lithe_vulkan_bench" --device vulkan --gemm 0 --steps 0 2>&1 | head -1)
  echo "=== $vkdev"
  case "$vkdev" in
    *"device: "*"GPU, "*)
      run "$b/tests/test_vulkan"
      for v in basic tiled subgroup; do run env LITHE_VULKAN_GEMM=$v "$b/tests/test_vulkan"; done
      STEPS=${STEPS:-50} run bench/vulkan_bench.sh "$b" "${SIZES:-1024,4096}" ;;
    *) echo "SKIPPED the Vulkan GPU checks: no Vulkan GPU here (${vkdev:-no Vulkan backend})" ;;
  esac
fi
[ $fail = 0 ] && echo "=== gpu_check: all passed" || echo "=== gpu_check: FAILURES above"
exit $fail
