#!/usr/bin/env bash
# The benchmark suite in one command: builds what it needs, runs lithe (native CLI, WASI, npm) and
# the peers (onnxruntime-node/-web, tfjs-wasm, PyTorch, Thinc, OpenBLAS, XNNPACK) one after another
# on this machine and writes bench/results.md. bench/README.md explains the rows.
#   bench/run.sh [--quick] [--only gemm,mlp,cnn,mobilenet,transformer,train,train-cnn,train-mnv2,train-transformer]
#                [--rounds N] [--threads 2] [--out FILE]
# --rounds N: every runner once per round, in a rotated order; ratios are per-round medians, "met"
# when their lower quartile clears the bar. --quick (1 round, 1 warm-up, 3 timed runs each) writes
# build/bench/results-quick.md instead: a smoke test.
set -euo pipefail
# Debian's interpreter: the one with torch, torchvision, thinc and numpy (not the pyenv one on PATH)
exec /usr/bin/python3 "$(dirname "$0")/run.py" "$@"
