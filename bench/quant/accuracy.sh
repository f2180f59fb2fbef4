#!/bin/sh
# Fashion-MNIST test accuracy, float32 against static int8 (lithe quantize --calibrate), for the
# MLP `lithe train-mnist` trains (Relu 512, Relu 512, Softmax; a native tree) and a small CNN
# (bench/quant/train_cnn.py: two 3x3 convolutions with pooling, two dense layers; PyTorch,
# exported to ONNX). Issue 24's bar: int8 within 0.5 points of float32. Minutes, not in CI.
#
# usage: bench/quant/accuracy.sh [LITHE_CLI] [WORKDIR]   (EPOCHS, CALIB_ROWS from the environment)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
lithe=${1:-$here/../../build/ci/tools/lithe/lithe}
work=${2:-$(mktemp -d)}
epochs=${EPOCHS:-2}
rows=${CALIB_ROWS:-1000}
mkdir -p "$work"
export LITHE_PROGRESS=0
"$lithe" train-mnist --epochs "$epochs" --save "$work/mlp.lithe" | tail -1
/usr/bin/python3 "$here/train_cnn.py" "$work" "$epochs" "$rows"   # also writes calib.npy: training rows
for m in mlp.lithe cnn.onnx; do
  base=${m%.*}
  "$lithe" quantize "$work/$m" --calibrate "$work/calib.npy" --output "$work/$base.int8.lithe"
  f=$("$lithe" train-mnist --evaluate "$work/$m" | sed -n 's/.*test accuracy \([0-9.]*\).*/\1/p')
  q=$("$lithe" train-mnist --evaluate "$work/$base.int8.lithe" | sed -n 's/.*test accuracy \([0-9.]*\).*/\1/p')
  fs=$(stat -c %s "$work/$m"); qs=$(stat -c %s "$work/$base.int8.lithe")
  echo "$base: float32 $f ($fs bytes), static int8 $q ($qs bytes), difference $(echo "$f $q" | awk '{printf "%.2f", 100 * ($1 - $2)}') points"
done
