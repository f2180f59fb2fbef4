#!/usr/bin/env bash
# Installs what lithe needs from Debian's archive (only the packages that are missing), by stage.
#
#   scripts/setup.sh main          what ./run.sh needs: the library and the lithe command (CPU backend)
#   scripts/setup.sh               everything ./test.sh needs (every stage below)
#   scripts/setup.sh STAGE...      the named stages only
#   scripts/setup.sh --check [STAGE...]
#                                  installs nothing: for each stage, compiles, links and runs a
#                                  one-line program with each toolchain the stage uses (native gcc
#                                  and clang, the aarch64 cross compiler under qemu, clang for
#                                  wasm32-wasi under node, emcc under node, glslc, ...) and fails
#                                  naming the Debian package that is missing. test.sh runs it first.
#
# apt-get runs with --no-install-recommends, so each stage lists every package it relies on,
# recommended ones included. The lists were checked against Debian 12's package relations, not
# against what one machine happened to have (docs/setup.md has the audit: every Recommends in the
# closure of these lists, and why each one is or is not needed).
set -euo pipefail
cd "$(dirname "$0")/.."

declare -A STAGE_PKGS STAGE_WHAT
STAGES=(main native vulkan python aarch64 wasi npm chromium bench fuzz)
STAGE_WHAT[main]="the library and the lithe command (run.sh: preset 'main')"
STAGE_PKGS[main]="gcc libc6-dev cmake ninja-build libdlpack-dev dataset-fashion-mnist"
STAGE_WHAT[native]="the ci, clang, asan and tsan presets (gcc, clang, ASan+UBSan, TSan, cmocka; g++ is nvcc's host compiler)"
STAGE_PKGS[native]="gcc g++ libc6-dev make cmake ninja-build clang libclang-rt-14-dev pkg-config libcmocka-dev libdlpack-dev dataset-fashion-mnist"
STAGE_WHAT[vulkan]="the Vulkan backend on lavapipe (headers, the shader compiler, the driver)"
STAGE_PKGS[vulkan]="libvulkan-dev glslc mesa-vulkan-drivers"
STAGE_WHAT[python]="Thinc and PyTorch goldens, the Python package's tests, the ONNX parity tests"
# the Python wheel (shims/python; ctest python_wheel): built without PyPI by Debian's setuptools and
# wheel, installed by Debian's pip into a venv (python3-venv: venv with ensurepip for users' own);
# python3-torchaudio: the audio models (wav2vec2_base, ConvTasNet, Conformer) of tests/models/check_models.py
STAGE_PKGS[python]="python3-thinc python3-numpy python3-pytest python3-torch python3-torchvision python3-torchaudio python3-onnx python3-setuptools python3-wheel python3-venv python3-pip"
# gcc-aarch64-linux-gnu only *recommends* libc6-dev-arm64-cross (crt1.o, crti.o, libc's headers
# and libraries for the target): without it nothing links.
STAGE_WHAT[aarch64]="the aarch64 preset (cross gcc, the target libc, cmocka for arm64, qemu-aarch64)"
STAGE_PKGS[aarch64]="gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user libcmocka-dev:arm64"
STAGE_WHAT[wasi]="the wasi preset (clang --target=wasm32-wasi, wasi-libc, compiler-rt for wasm32, wasm-ld) run under node:wasi"
STAGE_PKGS[wasi]="clang lld wasi-libc libclang-rt-14-dev-wasm32 nodejs"
STAGE_WHAT[npm]="the npm package's .wasm builds (Emscripten) and its node tests"
STAGE_PKGS[npm]="emscripten nodejs"
STAGE_WHAT[chromium]="the demo page and the npm package in Debian's Chromium (playwright-core)"
STAGE_PKGS[chromium]="chromium"
STAGE_WHAT[bench]="bench/ smoke: the GEMM peers (OpenBLAS, XNNPACK)"
STAGE_PKGS[bench]="libopenblas-dev libxnnpack-dev libpthreadpool-dev"
STAGE_WHAT[fuzz]="the libFuzzer targets (clang's libFuzzer + ASan runtimes are in libclang-rt-14-dev)"
STAGE_PKGS[fuzz]="clang libclang-rt-14-dev"

SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

usage() { sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; echo "stages: ${STAGES[*]}"; }

check_mode=0
want=()
for a in "$@"; do
  case "$a" in
    --check) check_mode=1 ;;
    -h|--help) usage; exit 0 ;;
    -*) echo "setup: unknown option $a" >&2; usage >&2; exit 2 ;;
    *) [ -n "${STAGE_PKGS[$a]+x}" ] || { echo "setup: unknown stage '$a' (stages: ${STAGES[*]})" >&2; exit 2; }
       want+=("$a") ;;
  esac
done
[ ${#want[@]} -gt 0 ] || want=("${STAGES[@]}")

if [ "$check_mode" -eq 1 ]; then
  exec scripts/check-toolchains.sh "${want[@]}"
fi

pkgs=()
for s in "${want[@]}"; do
  for p in ${STAGE_PKGS[$s]}; do pkgs+=("$p"); done
done
# libcmocka-dev:arm64 needs dpkg to know the arm64 architecture (and apt its package lists, which
# the apt-get update below fetches whenever something is missing).
for p in "${pkgs[@]}"; do
  if [[ "$p" == *:arm64 ]] && ! dpkg --print-foreign-architectures | grep -qx arm64; then
    $SUDO dpkg --add-architecture arm64
    break
  fi
done
missing=()
for p in "${pkgs[@]}"; do
  installed "$p" || [[ " ${missing[*]-} " == *" $p "* ]] || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
