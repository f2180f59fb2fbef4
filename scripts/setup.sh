#!/usr/bin/env bash
# Installs what lithe needs from Debian's archive (only the packages that are missing).
set -euo pipefail
pkgs=(build-essential cmake ninja-build clang libclang-rt-14-dev pkg-config
      libcmocka-dev libdlpack-dev zlib1g-dev
      python3-thinc python3-numpy python3-pytest python3-torch dataset-fashion-mnist
      # ONNX: torchvision models for the parity test, the onnx package for external-data files
      python3-torchvision python3-onnx
      # the Vulkan backend: headers, the shader compiler, and lavapipe (a Vulkan driver on the CPU)
      libvulkan-dev glslc mesa-vulkan-drivers
      # WebAssembly (test.sh's wasm stage): WASI cross builds, Emscripten, the browser test
      wasi-libc libclang-rt-14-dev-wasm32 lld emscripten chromium
      # bench/ (bench/README.md): the GEMM peers and the model export
      libopenblas-dev libxnnpack-dev libpthreadpool-dev python3-torchvision python3-onnx)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
