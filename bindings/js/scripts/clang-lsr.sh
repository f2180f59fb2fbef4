#!/bin/sh
# emcc's compiler wrapper (--compiler-wrapper) for the importer module's convolution sources
# (bindings/js/CMakeLists.txt): runs emcc's clang command without the `-mllvm -disable-lsr` that
# emcc 3.1.6 always adds, so LLVM's loop strength reduction runs there as it does in the WASI
# build (clang --target=wasm32-wasi). Without it the depthwise kernel's tap loop (dwconv_taps over
# 5x5 windows: the taps' pointers and weights on the stack) recomputed each address from the
# frame: mobilenet_v3_small ~+5 M instructions per predict against WASI (docs/wasm.md).
pend=
for a do
  shift
  if [ -n "$pend" ]; then
    pend=
    [ "$a" = "-disable-lsr" ] && continue
    set -- "$@" -mllvm
  fi
  if [ "$a" = "-mllvm" ]; then
    pend=1
    continue
  fi
  set -- "$@" "$a"
done
[ -n "$pend" ] && set -- "$@" -mllvm
exec "$@"
