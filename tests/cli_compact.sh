#!/bin/sh
# lithe convert --weights / lithe quantize on a trained Fashion-MNIST MLP (issue 24): the files
# shrink (f16 / bf16 about 2x, int8 about 4x), the test accuracy of each stays near float32's
# (the oracle: the float32 model's own accuracy; f16 / bf16 within 0.2 points, int8 within 1 on
# this smoke's 3000 images), and `quantize` writes what `convert --weights int8` writes.
# Usage: cli_compact.sh LITHE_COMMAND WORK_DIR
set -eu
lithe=$1
work=$2
rm -rf "$work" && mkdir -p "$work" && cd "$work"
"$lithe" train-mnist --epochs 1 --limit 3000 --batch-size 64 --save mlp.lithe > train.log
acc() { "$lithe" train-mnist --limit 3000 --evaluate "$1" | sed -n 's/.*test accuracy \([0-9.]*\) .*/\1/p'; }
size() { wc -c < "$1"; }
base=$(acc mlp.lithe)
for w in f16 bf16 int8; do
    "$lithe" convert --weights $w mlp.lithe $w.lithe
    a=$(acc $w.lithe)
    echo "$w: accuracy $a (float32 $base), $(size $w.lithe) bytes (float32 $(size mlp.lithe))"
    awk -v a="$a" -v b="$base" -v w=$w -v s="$(size $w.lithe)" -v f="$(size mlp.lithe)" 'BEGIN {
        tol = (w == "int8") ? 0.01 : 0.002; ratio = (w == "int8") ? 3.8 : 1.95;
        d = a - b; if (d < 0) d = -d;
        if (d > tol) { print w ": accuracy off by " d; exit 1 }
        if (f / s < ratio) { print w ": only " f / s "x smaller"; exit 1 } }'
done
"$lithe" quantize mlp.lithe --output q.lithe
cmp q.lithe int8.lithe
"$lithe" convert --weights f32 int8.lithe back.lithe
echo "cli_compact: ok"
