"""The torch oracle for the package's HardSwish-in-the-store test (test/importer_calls.test.mjs):
mobilenet_v3's stem (3x3 stride 2 convolution, HardSwish) and a 1x1 convolution with HardSwish,
exported by torch.onnx.export (Debian's python3-torch 1.13, opset 13: HardSigmoid + Mul, which
lithe fuses into the convolution's store), and its output for a batch. In the npm package's SIMD128
core the stem runs the importer module's direct convolution (conv_wasm_simd128.c: HardSwish in
its tiles' store) and the 1x1 the core's GEMM tiles (gemm_wasmsimd.c); 20 x 20 output
pixels are 100 tiles, past one 64-tile chunk, and 13 / 19 filters leave partial slivers.
    hswish_golden.py OUT_DIR   ->   OUT_DIR/hs.onnx, hs_x.npy, hs_y.npy"""
import io
import sys

import numpy as np
import torch

out = sys.argv[1]
torch.manual_seed(5)
rng = np.random.RandomState(3)
model = torch.nn.Sequential(torch.nn.Conv2d(3, 13, 3, stride=2, padding=1), torch.nn.Hardswish(),
                            torch.nn.Conv2d(13, 19, 1), torch.nn.Hardswish()).eval()
x = torch.tensor(rng.standard_normal((2, 3, 40, 40)).astype("float32") * 2)
buf = io.BytesIO()
torch.onnx.export(model, (x,), buf, opset_version=13, input_names=["x"], output_names=["y"],
                  dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
with open(f"{out}/hs.onnx", "wb") as f:
    f.write(buf.getvalue())
np.save(f"{out}/hs_x.npy", x.numpy())
np.save(f"{out}/hs_y.npy", model(x).detach().numpy())
