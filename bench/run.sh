#!/usr/bin/env bash
# The benchmark suite in one command: builds what it needs, runs lithe (native CLI, WASI, npm) and
# the peers (onnxruntime-node/-web, tfjs-wasm, PyTorch, Thinc, OpenBLAS, XNNPACK) one after another
# on this machine and writes bench/results.md. bench/README.md explains the rows.
#   bench/run.sh [--quick] [--only gemm,mlp,cnn,mobilenet,transformer,train] [--threads 2] [--out FILE]
# --quick (1 warm-up, 3 timed runs each) writes build/bench/results-quick.md instead: a smoke test.
set -euo pipefail
# Debian's interpreter: the one with torch, torchvision, thinc and numpy (not the pyenv one on PATH)
exec /usr/bin/python3 "$(dirname "$0")/run.py" "$@"
