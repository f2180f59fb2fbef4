#!/usr/bin/env bash
# The main job: install dependencies, build, and train the Fashion-MNIST MLP with lithe.
# Extra arguments go to `lithe train-mnist` (e.g. ./run.sh --epochs 2 --seed 1).
set -euo pipefail
cd "$(dirname "$0")"
scripts/setup.sh
cmake --preset default >/dev/null
cmake --build --preset default
exec build/default/tools/lithe/lithe train-mnist "$@"
