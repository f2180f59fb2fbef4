"""The torch oracle for the package's depthwise-convolution test (test/conv_kernels.test.mjs): a
small network of depthwise convolutions (3x3 stride 1 padding 1, 3x3 stride 2 padding 1, 5x5
stride 1 padding 2, each with a ReLU or ReLU6 after it) and a 2x2 max pool, exported by
torch.onnx.export (Debian's python3-torch 1.13), and its output for a batch. In the npm package's
SIMD128 cores these run the SIMD table's convolution-only kernels (dwconv_taps, copy_rows,
split_rows, maxpool2x2_rows), compiled into the importer module (backends/cpu/simd/conv_kernels.c).
Run by Debian's /usr/bin/python3:
    dw_golden.py OUT_DIR
Writes OUT_DIR/dw.onnx, dw_x.npy, dw_y.npy."""
import io
import sys

import numpy as np
import torch

out = sys.argv[1]
torch.manual_seed(7)
rng = np.random.RandomState(11)


class DW(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.pw = torch.nn.Conv2d(3, 8, 1)
        self.dw1 = torch.nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.dw2 = torch.nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=8)
        self.dw3 = torch.nn.Conv2d(8, 8, 5, padding=2, groups=8)

    def forward(self, x):
        h = torch.relu(self.dw1(self.pw(x)))
        h = torch.nn.functional.relu6(self.dw2(h))
        h = torch.nn.functional.max_pool2d(h, 2)
        return torch.relu(self.dw3(h))


model = DW().eval()
x = torch.tensor(rng.standard_normal((3, 3, 22, 22)).astype("float32"))
buf = io.BytesIO()
torch.onnx.export(model, (x,), buf, opset_version=13, input_names=["x"], output_names=["y"],
                  dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
with open(f"{out}/dw.onnx", "wb") as f:
    f.write(buf.getvalue())
np.save(f"{out}/dw_x.npy", x.numpy())
np.save(f"{out}/dw_y.npy", model(x).detach().numpy())
