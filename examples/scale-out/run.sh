#!/bin/sh
# docs/scale-out.md's serving steps, in order (tests/scale_out_doc.py runs this file in a scratch
# folder with lithe, python3 (with thinc, onnx and the lithe package) and onnxruntime-node at hand).
set -e
python3 finetune.py                                # Thinc -> lithe, five steps: tuned.lithe, tuned.onnx
lithe convert tuned.lithe --to-onnx tuned-cli.onnx # the same export from the command line
python3 -c 'import onnx; onnx.checker.check_model(onnx.load("tuned-cli.onnx"), full_check=True)'
node serve.mjs tuned.onnx batch.json               # onnxruntime serves it
node serve.mjs tuned-cli.onnx batch.json
