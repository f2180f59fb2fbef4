#!/usr/bin/env bash
# lithe as an outside project sees it (test.sh runs this after the ci preset; docs/install.md):
#   1. `cmake --install BUILD --prefix TMP`
#   2. examples/c built by an outside CMake project with find_package(lithe): lithe::lithe (shared)
#      and lithe::lithe_static, each run: it trains, predicts, saves, loads and predicts the same
#   3. the same program built with pkg-config's flags only, and run
#   4. the installed command: lithe --version, and info on the model the example saved
#   5. lithe as a subproject (add_subdirectory, configure only): no tests, no GPU backends, no
#      benchmark tools, no install rules
# Usage: tests/install/run.sh [BUILD_DIR]   (default build/ci)
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$src/build/ci}" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
say() { printf 'install: %s\n' "$*"; }

cmake --install "$build" --prefix "$prefix" >/dev/null
for f in include/lithe.h include/lithe_dlpack.h lib/liblithe.so lib/liblithe.a bin/lithe \
         lib/cmake/lithe/litheConfig.cmake lib/cmake/lithe/litheConfigVersion.cmake lib/pkgconfig/lithe.pc; do
  [[ -e $prefix/$f ]] || { echo "install: $f is missing from the prefix" >&2; exit 1; }
done
say "installed into a temporary prefix"

expect() { # the example's report: it learned the toy problem and the loaded model agrees
  grep -q '^accuracy 12/12$' "$1" && grep -q 'largest difference 0$' "$1" ||
    { echo "install: unexpected output from $2:" >&2; cat "$1" >&2; exit 1; }
}
gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
for kind in shared static; do
  static=OFF; [[ $kind == static ]] && static=ON
  cmake -S "$src/examples/c" -B "$work/cmake-$kind" "${gen[@]}" -DCMAKE_PREFIX_PATH="$prefix" \
        -DLITHE_EXAMPLE_STATIC=$static >/dev/null
  cmake --build "$work/cmake-$kind" >/dev/null
  (cd "$work" && "cmake-$kind/lithe_example" "$kind.lithe") >"$work/$kind.out"
  expect "$work/$kind.out" "find_package(lithe), $kind"
  # ldd's output taken whole first: `ldd | grep -q` under pipefail fails when grep exits at its
  # match before ldd has written the rest (SIGPIPE: seen once in a clean-clone CI run)
  libs=$(ldd "$work/cmake-$kind/lithe_example")
  if [[ $kind == shared ]]; then
    grep -q "$prefix/lib/liblithe.so.0" <<<"$libs" ||
      { echo "install: the example does not load the installed liblithe.so" >&2; exit 1; }
  else
    ! grep -q liblithe <<<"$libs" ||
      { echo "install: the static example loads liblithe.so" >&2; exit 1; }
  fi
  say "find_package(lithe) + lithe::lithe$([[ $kind == static ]] && echo _static): $(grep accuracy "$work/$kind.out")"
done

export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
[[ $(pkg-config --modversion lithe) == $("$prefix/bin/lithe" --version | cut -d' ' -f2) ]]
cc -std=c11 -Wall -Wextra -Werror "$src/examples/c/main.c" $(pkg-config --cflags --libs lithe) \
   -Wl,-rpath,"$(pkg-config --variable=libdir lithe)" -lm -o "$work/pc_example"
(cd "$work" && ./pc_example pc.lithe) >"$work/pc.out"
expect "$work/pc.out" "the pkg-config build"
say "pkg-config build: $(tail -1 "$work/pc.out")"

grep -q "^parameters: 131 " <<<"$("$prefix/bin/lithe" info "$work/shared.lithe")" ||
  { echo "install: the installed lithe info does not read the example's model" >&2; "$prefix/bin/lithe" info "$work/shared.lithe"; exit 1; }
say "installed command: $("$prefix/bin/lithe" --version)"

# as a subproject: configure only (the build itself is the library's, tested above)
cmake -S "$src/examples/c" -B "$work/sub" "${gen[@]}" -DLITHE_SOURCE_DIR="$src" >"$work/sub.log" 2>&1 ||
  { cat "$work/sub.log" >&2; exit 1; }
cache=$work/sub/CMakeCache.txt
for want in LITHE_BUILD_TESTS:BOOL=OFF LITHE_BUILD_BENCH:BOOL=OFF LITHE_INSTALL:BOOL=OFF LITHE_CUDA:STRING=OFF \
            LITHE_VULKAN:STRING=OFF; do
  grep -qx "$want" "$cache" || { echo "install: as a subproject, expected $want" >&2; grep '^LITHE_' "$cache" >&2; exit 1; }
done
if cmake --build "$work/sub" --target help | grep -Eq '(^|[ /])(test_[a-z_]+|lithe_cuda|lithe_vulkan_bench)(:| )'; then
  echo "install: as a subproject, test or GPU targets exist" >&2; exit 1
fi
say "add_subdirectory: library and command only (no tests, GPU backends, benchmarks or install rules)"
echo "install: ok"
