#!/usr/bin/env bash
# Packs what bench/cuda/gpu_check.sh needs into one folder (default .gpu/b, ~45 MB, ignored by git)
# for a GPU machine that cannot build lithe's ci preset (the device tool's nvidia-h200 image: CUDA 13
# and torch, but no glslc, libvulkan-dev, libcmocka or Thinc, and no network): the built libraries,
# tests and tools, libcmocka, the Thinc goldens, Fashion-MNIST, an MLP exported by Thinc with its
# prediction (bench/cuda/dlpack_check.py), the benchmark CNN exported by torch 1.13 (torch 2.11's
# exporter there writes opset 18 only), and Debian's Vulkan loader packages. Then, on that machine:
#   device run: bash bench/cuda/gpu_check.sh .gpu/b     (carry: [".gpu"]; about 40 s on an H200)
#   bench/cuda/gpu_carry.sh [build dir (default build/ci)] [folder (default .gpu/b)]
set -euo pipefail
cd "$(dirname "$0")/../.."
b=${1:-build/ci}
o=${2:-.gpu/b}
[ -f "$b/build.ninja" ] || cmake --preset ci >/dev/null
cmake --build "$b" -j "$(nproc)" --target lithe lithe_cuda test_cuda test_kernels test_vulkan lithe_cli \
  lithe_cuda_bench lithe_vulkan_bench >/dev/null 2>&1 || cmake --build "$b" -j "$(nproc)" >/dev/null
top=${o%%/*}
grep -qx "/$top/" .git/info/exclude 2>/dev/null || echo "/$top/" >> .git/info/exclude
rm -rf "$o" && mkdir -p "$o"/{tests,tools/lithe,bench/cuda,bench/vulkan,lib,dlpack,gl}
cp -a "$b"/liblithe.so* "$b"/liblithe_cuda.so "$o"/
cp "$b"/tests/test_cuda "$b"/tests/test_kernels "$o"/tests/
[ -x "$b"/tests/test_vulkan ] && cp "$b"/tests/test_vulkan "$o"/tests/
cp "$b"/tools/lithe/lithe "$o"/tools/lithe/
cp "$b"/bench/cuda/lithe_cuda_bench "$o"/bench/cuda/
[ -x "$b"/bench/vulkan/lithe_vulkan_bench ] && cp "$b"/bench/vulkan/lithe_vulkan_bench "$o"/bench/vulkan/
cp -L "$(ldconfig -p | awk '/libcmocka.so.0 /{print $NF; exit}')" "$o"/lib/
py=/usr/bin/python3
[ -f "$b"/tests/thinc_goldens.txt ] || "$py" tests/golden/gen_thinc_goldens.py "$b"/tests/thinc_goldens.txt
cp "$b"/tests/thinc_goldens.txt "$o"/tests/
[ -d /usr/share/datasets/fashion-mnist ] && cp -r /usr/share/datasets/fashion-mnist "$o"/
LITHE_LIBRARY="$b"/liblithe.so PYTHONPATH=shims/python:tests/python "$py" - "$o"/dlpack <<'PY'
import sys, numpy, lithe, test_python_package as t
model, X = t._initialized("mlp")
lithe.export(model, sys.argv[1] + "/m.lithe")
numpy.save(sys.argv[1] + "/X.npy", X)
numpy.save(sys.argv[1] + "/Y_thinc.npy", model.predict(X))
PY
"$py" bench/vulkan/torch_ref.py 8 1 --onnx "$o"/cnn.onnx >/dev/null
l=$(mktemp -d)
mkdir -p "$l"/partial
apt_o=(-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists="$l")
apt-get "${apt_o[@]}" update >/dev/null 2>&1 &&
  (cd "$o"/gl && apt-get "${apt_o[@]}" download libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2 \
     >/dev/null 2>&1) || echo "gpu_carry: no Vulkan loader packages (apt-get download failed): no Vulkan checks there"
rm -rf "$l"
du -sh "$o"
echo "on the GPU machine: bash bench/cuda/gpu_check.sh $o   (carry [\"$top\"])"
