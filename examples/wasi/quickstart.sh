#!/bin/sh
# The command line, natively and as a WASI module: README.md's "Command line and WASI" block is
# this file (tests/readme_c_cli.py keeps them equal) and test.sh runs it from the
# repository root with the built `lithe` on PATH. Debian's dataset-fashion-mnist is the data.
set -eu
lithe --version
lithe train-mnist --epochs 1 --limit 5000 --save fashion.lithe   # a bar with rate and ETA on a terminal
lithe info fashion.lithe                                          # the tree, dims and parameter count
lithe train-mnist --help                                          # every option; exit status 0, 1 or 2

cmake --preset wasi && cmake --build --preset wasi                # build/wasi/tools/lithe/lithe.wasm
node tools/lithe/run-wasi.mjs build/wasi/tools/lithe/lithe.wasm \
    train-mnist --epochs 1 --limit 5000 --save wasi.lithe         # the same run in WebAssembly
lithe info wasi.lithe                                             # the same file format
