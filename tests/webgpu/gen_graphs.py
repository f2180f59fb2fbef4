"""The ONNX graphs tests/webgpu/graph.test.mjs runs on WebGPU against the CPU backend (Debian's
/usr/bin/python3: torch 1.13, torchvision 0.14), random weights, fixed seeds:

    gen_graphs.py OUT_DIR

  OUT_DIR/squeezenet.onnx   torchvision's squeezenet1_1 (10 classes) on (1, 3, 64, 64): Conv (3x3
                            stride 2, 1x1, 3x3 padded), Relu, MaxPool (ceil_mode), Concat, the
                            global average pool, Flatten
  OUT_DIR/transformer.onnx  a two-layer nn.TransformerEncoder (d_model 32, 4 heads, feed-forward
                            64, batch_first) on (2, 8, 32): MatMul, Softmax, LayerNorm, Add, Relu,
                            Reshape / Transpose, as tests/golden/gen_onnx_goldens.py's "encoder"

The oracle of the test is the CPU backend (itself checked against torch by test_onnx and
check_models.py): this script only makes the graphs."""
import io
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torchvision

out = sys.argv[1]
os.makedirs(out, exist_ok=True)


def save(name, model, x):
    model.eval()
    buf = io.BytesIO()
    torch.onnx.export(model, x, buf, opset_version=13, input_names=["x"], output_names=["y"],
                      do_constant_folding=True)
    with open(os.path.join(out, name + ".onnx"), "wb") as f:
        f.write(buf.getvalue())


torch.manual_seed(0)
save("squeezenet", torchvision.models.squeezenet1_1(weights=None, num_classes=10), torch.randn(1, 3, 64, 64))

torch.manual_seed(1)
rng = np.random.RandomState(1)
encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, dropout=0.0,
                                                           batch_first=True), num_layers=2)
with torch.no_grad():  # TransformerEncoder clones one layer: make the copies differ (else tied initializers)
    for p in encoder.parameters():
        p.add_(torch.tensor(rng.standard_normal(tuple(p.shape)).astype("float32")) * 0.05)
save("transformer", encoder, torch.randn(2, 8, 32))
print("wrote", out)
