#!/usr/bin/env bash
# scripts/setup.sh --check [STAGE...]: for each stage of run.sh / test.sh, compile, link and run a
# one-line program with each toolchain the stage uses, the way the stage uses it, and fail naming
# the Debian package that is missing. Installs nothing, writes only to a temporary folder.
# (A package list alone misses what only a *recommended* package provides: the aarch64 cross gcc
# installs without the target's libc and fails only at the first link.)
set -uo pipefail
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || set -- main native vulkan python aarch64 wasi npm chromium bench fuzz

T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
failures=()

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

# check STAGE "what" "packages it needs" command...: runs the command in $T; on failure names the
# packages of the list that are not installed (or, when all are, says they are installed but the
# step still fails, with the command's last lines).
check() {
  local stage=$1 what=$2 pkgs=$3; shift 3
  if (cd "$T" && "$@") >"$T/log" 2>&1; then
    printf 'check %-9s %-58s ok\n' "$stage" "$what"
    return 0
  fi
  local miss=() p
  for p in $pkgs; do
    case "$p" in
      -*) ;;            # not a Debian package (named in the message below)
      *) installed "$p" || miss+=("$p") ;;
    esac
  done
  printf 'check %-9s %-58s FAILED\n' "$stage" "$what"
  if [ ${#miss[@]} -gt 0 ]; then
    failures+=("$stage: $what: missing Debian package(s) ${miss[*]} (scripts/setup.sh $stage installs them)")
  else
    failures+=("$stage: $what: fails although ${pkgs//-/} is installed")
  fi
  sed 's/^/    | /' "$T/log" | tail -n 6
  return 1
}

cat >"$T/hello.c" <<'EOF'
#include <stdio.h>
int main(void) { puts("lithe-check-ok"); return 0; }
EOF
runs_ok() { "$@" | grep -qx lithe-check-ok; }

CUDA_NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)

for stage in "$@"; do
  case "$stage" in
  main)
    check main "gcc compiles, links and runs C" "gcc libc6-dev" \
      sh -c 'gcc hello.c -o h && ./h | grep -qx lithe-check-ok'
    check main "cmake >= 3.25" "cmake" \
      sh -c 'cmake --version | awk "NR==1{split(\$3,v,\".\"); exit !(v[1]>3 || (v[1]==3 && v[2]>=25))}"'
    check main "ninja" "ninja-build" ninja --version
    check main "dlpack/dlpack.h" "libdlpack-dev" \
      sh -c 'printf "#include <dlpack/dlpack.h>\nint main(void){DLTensor t; (void)t; return 0;}\n" > d.c && gcc d.c -o d'
    check main "Fashion-MNIST in /usr/share/datasets" "dataset-fashion-mnist" \
      sh -c 'ls /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte* >/dev/null'
    ;;
  native)
    check native "g++ (nvcc's host compiler)" "g++" \
      sh -c 'g++ -x c++ hello.c -o hp && ./hp | grep -qx lithe-check-ok'
    check native "clang compiles, links and runs C" "clang" \
      sh -c 'clang hello.c -o hc && ./hc | grep -qx lithe-check-ok'
    check native "clang -fsanitize=address,undefined (asan preset)" "libclang-rt-14-dev" \
      sh -c 'clang -fsanitize=address,undefined hello.c -o ha && ./ha | grep -qx lithe-check-ok'
    check native "clang -fsanitize=thread (tsan preset)" "libclang-rt-14-dev" \
      sh -c 'clang -fsanitize=thread hello.c -o ht && ./ht | grep -qx lithe-check-ok'
    check native "cmocka links and runs" "libcmocka-dev" \
      sh -c 'printf "#include <stdarg.h>\n#include <stddef.h>\n#include <setjmp.h>\n#include <stdint.h>\n#include <cmocka.h>\nstatic void t(void **s){(void)s; assert_int_equal(1,1);}\nint main(void){const struct CMUnitTest ts[]={cmocka_unit_test(t)}; return cmocka_run_group_tests(ts,NULL,NULL);}\n" > cm.c && gcc cm.c -lcmocka -o cm && ./cm'
    check native "pkg-config" "pkg-config" pkg-config --version
    check native "nvcc (the ci presets set LITHE_CUDA=ON)" "-CUDA-toolkit" \
      sh -c "printf '__global__ void k(void){}\nint main(void){return 0;}\n' > k.cu && '$CUDA_NVCC' -c k.cu -o k.o"
    ;;
  vulkan)
    check vulkan "glslc compiles a compute shader" "glslc" \
      sh -c 'printf "#version 450\nlayout(local_size_x=1) in;\nvoid main(){}\n" > s.comp && glslc s.comp -o s.spv'
    check vulkan "lavapipe: a Vulkan instance sees a device" "libvulkan-dev mesa-vulkan-drivers" \
      sh -c 'cat > vk.c <<EOF
#include <vulkan/vulkan.h>
int main(void) {
  VkInstanceCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  VkInstance in; uint32_t n = 0;
  if (vkCreateInstance(&ci, 0, &in) != VK_SUCCESS) return 1;
  vkEnumeratePhysicalDevices(in, &n, 0);
  vkDestroyInstance(in, 0);
  return n == 0;
}
EOF
gcc vk.c -lvulkan -o vk && ./vk'
    ;;
  python)
    for m in thinc:python3-thinc numpy:python3-numpy pytest:python3-pytest torch:python3-torch \
             torchvision:python3-torchvision torchaudio:python3-torchaudio onnx:python3-onnx \
             setuptools:python3-setuptools wheel:python3-wheel \
             pip:python3-pip; do
      check python "/usr/bin/python3 imports ${m%%:*}" "${m#*:}" /usr/bin/python3 -c "import ${m%%:*}"
    done
    # the wheel test's venv (tests/python_wheel.py)
    check python "/usr/bin/python3 -m venv --system-site-packages" "python3-venv" /usr/bin/python3 -m venv --system-site-packages --without-pip venv
    ;;
  aarch64)
    check aarch64 "aarch64-linux-gnu-gcc links (crt1.o, libc)" "gcc-aarch64-linux-gnu libc6-dev-arm64-cross" \
      aarch64-linux-gnu-gcc hello.c -o ha64
    check aarch64 "cmocka for arm64 links, qemu-aarch64 runs it" "libcmocka-dev:arm64 qemu-user libc6-dev-arm64-cross" \
      sh -c 'printf "#include <stdarg.h>\n#include <stddef.h>\n#include <setjmp.h>\n#include <stdint.h>\n#include <cmocka.h>\nstatic void t(void **s){(void)s; assert_int_equal(1,1);}\nint main(void){const struct CMUnitTest ts[]={cmocka_unit_test(t)}; return cmocka_run_group_tests(ts,NULL,NULL);}\n" > cm.c && aarch64-linux-gnu-gcc cm.c /usr/lib/aarch64-linux-gnu/libcmocka.so -o cm64 && qemu-aarch64 ./cm64'
    ;;
  wasi)
    check wasi "clang --target=wasm32-wasi compiles (wasi-libc headers)" "clang wasi-libc" \
      clang --target=wasm32-wasi -msimd128 -O2 -c hello.c -o hw.o
    check wasi "wasm-ld links against wasi-libc and compiler-rt" "lld libclang-rt-14-dev-wasm32 wasi-libc" \
      clang --target=wasm32-wasi -msimd128 -O2 hello.c -o hw.wasm
    check wasi "node:wasi runs it" "nodejs" \
      sh -c 'cat > run.mjs <<EOF
import { WASI } from "node:wasi";
import { readFileSync } from "node:fs";
const wasi = new WASI({ version: "preview1", args: [], env: {} });
const { instance } = await WebAssembly.instantiate(readFileSync("hw.wasm"), wasi.getImportObject());
process.exitCode = wasi.start(instance);
EOF
node --no-warnings run.mjs | grep -qx lithe-check-ok'
    ;;
  npm)
    check npm "node and npm" "nodejs" sh -c 'node --version && npm --version'
    check npm "emcc builds a SIMD128 module node runs" "emscripten" \
      sh -c 'NODE_PATH=/usr/share/nodejs emcc -O2 -msimd128 -sENVIRONMENT=node -sSINGLE_FILE=1 hello.c -o he.js && node he.js | grep -qx lithe-check-ok'
    ;;
  chromium)
    check chromium "headless Chromium renders a page" "chromium" \
      sh -c 'timeout 60 chromium --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir="$PWD/chr" --dump-dom "data:text/html,<p>lithe-check-ok</p>" 2>/dev/null | grep -q lithe-check-ok'
    ;;
  bench)
    check bench "OpenBLAS's cblas_sgemm links" "libopenblas-dev" \
      sh -c 'printf "#include <cblas.h>\nint main(void){float a=1,b=2,c=0; cblas_sgemm(CblasRowMajor,CblasNoTrans,CblasNoTrans,1,1,1,1,&a,1,&b,1,0,&c,1); return c!=2;}\n" > ob.c && gcc ob.c -lopenblas -o ob && ./ob'
    check bench "XNNPACK and pthreadpool link" "libxnnpack-dev libpthreadpool-dev" \
      sh -c 'printf "#include <xnnpack.h>\nint main(void){return xnn_initialize(0)!=xnn_status_success;}\n" > xn.c && gcc xn.c -lXNNPACK -lpthreadpool -lpthread -lm -o xn && ./xn'
    ;;
  fuzz)
    check fuzz "clang -fsanitize=fuzzer links and runs" "libclang-rt-14-dev" \
      sh -c 'printf "#include <stdint.h>\n#include <stddef.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n){(void)d;(void)n;return 0;}\n" > fz.c && clang -fsanitize=fuzzer,address fz.c -o fz && ./fz -runs=10'
    ;;
  *) echo "check: unknown stage '$stage'" >&2; exit 2 ;;
  esac
done

if [ ${#failures[@]} -gt 0 ]; then
  echo
  echo "setup --check: ${#failures[@]} step(s) cannot run on this machine:"
  printf '  %s\n' "${failures[@]}"
  exit 1
fi
echo "setup --check: every toolchain compiles, links and runs"
