#!/bin/sh
# An out-of-memory while reading the dataset says so, without the "install dataset-fashion-mnist"
# hint meant for missing files (issue 30): a 1.5 GB images file (sparse: no disk used) read under a
# 1 GB address-space limit. usage: cli_dataset_oom.sh LITHE DIR
set -e
mkdir -p "$2"
f="$2/train-images-idx3-ubyte"
printf '\000\000\010\003\000\000\352\140\000\000\000\034\000\000\000\034' > "$f"
truncate -s 1500M "$f"
ulimit -v 1000000
"$1" train-mnist --data "$2" 2>&1 || true
rm -f "$f"
