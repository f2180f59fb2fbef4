#!/usr/bin/env bash
# The main job: install what it needs, build the library and the lithe command (the lean `main`
# preset: CPU backend, no tests, no GPU backends), and train the Fashion-MNIST MLP with lithe.
# Extra arguments go to `lithe train-mnist` (e.g. ./run.sh --epochs 2 --seed 1).
set -euo pipefail
cd "$(dirname "$0")"
scripts/setup.sh main
cmake --preset main >/dev/null
cmake --build --preset main
exec build/main/tools/lithe/lithe train-mnist "$@"
