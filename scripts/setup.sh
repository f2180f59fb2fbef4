#!/usr/bin/env bash
# Installs what lithe needs from Debian's archive (only the packages that are missing).
set -euo pipefail
pkgs=(build-essential cmake ninja-build clang libclang-rt-14-dev pkg-config
      libcmocka-dev libdlpack-dev zlib1g-dev
      python3-thinc python3-numpy python3-pytest python3-torch dataset-fashion-mnist
      # the Python wheel (shims/python, tests/python_wheel.py): built without PyPI by Debian's
      # setuptools and wheel, installed with its pip into a venv
      python3-setuptools python3-wheel python3-venv python3-pip
      # ONNX: torchvision models for the parity test, the onnx package for external-data files
      python3-torchvision python3-onnx
      # the Vulkan backend: headers, the shader compiler, and lavapipe (a Vulkan driver on the CPU)
      libvulkan-dev glslc mesa-vulkan-drivers
      # WebAssembly (test.sh's wasm stage): WASI cross builds, Emscripten, the browser test
      wasi-libc libclang-rt-14-dev-wasm32 lld emscripten chromium
      # bench/ (bench/README.md): the GEMM peers and the model export
      libopenblas-dev libxnnpack-dev libpthreadpool-dev
      # Arm (test.sh's aarch64 stage): the cross compiler, qemu-aarch64, and cmocka for arm64
      # (a multiarch package: the arm64 architecture is added below before it is installed)
      gcc-aarch64-linux-gnu qemu-user libcmocka-dev:arm64)
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
# libcmocka-dev:arm64 needs dpkg to know the arm64 architecture (and apt its package lists, which
# the apt-get update below fetches whenever something is missing).
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  $SUDO dpkg --add-architecture arm64
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
