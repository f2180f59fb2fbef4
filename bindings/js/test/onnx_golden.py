"""The torch oracle for the package's ONNX test: a small CNN (Conv, Relu, MaxPool, Flatten, Gemm,
Tanh) exported by torch.onnx.export (Debian's python3-torch 1.13), its output for a batch, and
its output after one SGD step (lr 0.1, no clipping) on lithe's 'l2' loss, whose gradient is
(y - t) / B (Thinc's L2Distance). Run by Debian's /usr/bin/python3:
    onnx_golden.py OUT_DIR
Writes OUT_DIR/cnn.onnx, x.npy, t.npy, y.npy, y_after.npy and loss.json (the loss trainStep
reports: torch's mean squared error before the step; and Thinc's figure, the sum of the squared
gradient)."""
import io
import json
import sys

import numpy as np
import torch

out = sys.argv[1]
torch.manual_seed(3)
rng = np.random.RandomState(5)


class CNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 4, 3, padding=1)
        self.fc1 = torch.nn.Linear(4 * 4 * 4, 10)
        self.fc2 = torch.nn.Linear(10, 3)

    def forward(self, x):
        h = torch.nn.functional.max_pool2d(torch.relu(self.conv(x)), 2)
        return self.fc2(torch.tanh(self.fc1(torch.flatten(h, 1))))


model = CNN().eval()
x = torch.tensor(rng.standard_normal((4, 1, 8, 8)).astype("float32"))
t = torch.tensor(rng.standard_normal((4, 3)).astype("float32"))
buf = io.BytesIO()
torch.onnx.export(model, (x,), buf, opset_version=13, input_names=["x"], output_names=["y"],
                  dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}}, do_constant_folding=False)
with open(f"{out}/cnn.onnx", "wb") as f:
    f.write(buf.getvalue())
y = model(x)
d = (y.detach() - t) / x.shape[0]
y.backward(d)
with torch.no_grad():
    for p in model.parameters():
        p -= 0.1 * p.grad
np.save(f"{out}/x.npy", x.numpy())
np.save(f"{out}/t.npy", t.numpy())
np.save(f"{out}/y.npy", y.detach().numpy())
np.save(f"{out}/y_after.npy", model(x).detach().numpy())
with open(f"{out}/loss.json", "w") as f:
    json.dump({"mse": float(torch.nn.functional.mse_loss(y.detach(), t)), "thinc": float((d * d).sum())}, f)
