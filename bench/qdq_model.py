#!/usr/bin/python3
"""The int8 MLP workload (issue 24): make_models.py's MLP (784-512-512-10, its weights in
OUT/weights/mlp.*.npy) quantized into the QDQ form onnxruntime's quantizer writes (static: activations
uint8 with ranges from the batch-64 input; weights int8 per output channel, reduce_range as
onnxruntime recommends without VNNI; int32 biases) by tests/golden/qdq_models.py.

    bench/qdq_model.py OUT   # writes OUT/mlp_qdq.onnx, OUT/mlp_int8_b64_x.npy, OUT/mlp_int8_b64_ref.npy

The reference is the float model's torch output (mlp_b64_ref.npy): the error column shows the int8
rounding, not a mismatch."""
import os
import shutil
import sys

import numpy

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "golden"))
import qdq_models  # noqa: E402

out = sys.argv[1]
w = lambda n: numpy.load(os.path.join(out, "weights", f"mlp.{n}.npy"))  # noqa: E731
Ws = [w(f"fc{i}.weight") for i in (1, 2, 3)]
bs = [w(f"fc{i}.bias") for i in (1, 2, 3)]
x = numpy.load(os.path.join(out, "mlp_b64_x.npy"))
model, _ = qdq_models.qdq_mlp_weights(Ws, bs, x, per_channel=True, signed_acts=[False])
with open(os.path.join(out, "mlp_qdq.onnx"), "wb") as f:
    f.write(model)
shutil.copyfile(os.path.join(out, "mlp_b64_x.npy"), os.path.join(out, "mlp_int8_b64_x.npy"))
shutil.copyfile(os.path.join(out, "mlp_b64_ref.npy"), os.path.join(out, "mlp_int8_b64_ref.npy"))
print(f"qdq_model: mlp_qdq.onnx ({len(model)} bytes) -> {out}")
