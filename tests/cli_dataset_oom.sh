#!/bin/sh
# An out-of-memory while reading the dataset says so, without the "install dataset-fashion-mnist"
# hint meant for missing files (issue 30): an IDX header declaring 10,000,000 28x28 images
# (7.8 GB) read under a 4 GB address-space limit. usage: cli_dataset_oom.sh LITHE DIR
set -e
mkdir -p "$2"
printf '\000\000\010\003\000\230\226\200\000\000\000\034\000\000\000\034' > "$2/train-images-idx3-ubyte"
ulimit -v 4000000
"$1" train-mnist --data "$2" 2>&1 || true
