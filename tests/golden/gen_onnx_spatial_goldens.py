#!/usr/bin/python3
"""Golden values from PyTorch 1.13 (Debian's python3-torch) for tests/test_onnx_spatial.c (issue 23
items 3-5): the convolution family in 1-D and 3-D, the normalizations and the resampling operators,
as torch.onnx.export writes them, with torch's outputs, autograd gradients and SGD steps.

    /usr/bin/python3 tests/golden/gen_onnx_spatial_goldens.py OUT.txt

Records per model NAME as gen_onnx_goldens.py writes them: NAME.onnx, .x, .y, .r (loss = sum(y r)),
.dx, .grad.<param>, .n_params and, when the graph keeps every parameter, .lr, .losses and
.sgd.<param> after ten SGD steps. NAME.tol, when present, is the output tolerance the test uses
(the distance float32 torch is from a float64 torch run, where that is larger than 1e-4).
"""
import io
import sys

import numpy

from golden_records import rec, write

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError as e:
    sys.exit(f"gen_onnx_spatial_goldens.py: {e}; install Debian's python3-torch and run with /usr/bin/python3")

rng = numpy.random.RandomState(23)


def export(name, model, x, opset=13, lr=0.05, steps=10, rewrite=None):
    model.eval()
    buf = io.BytesIO()
    torch.onnx.export(model, (x,), buf, opset_version=opset, input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}}, do_constant_folding=False)
    data = buf.getvalue()
    if rewrite:
        data = rewrite(data)
    rec(f"{name}.onnx", numpy.frombuffer(data, dtype=numpy.uint8))
    xr = x.clone().requires_grad_(True)
    y = model(xr)
    r = torch.tensor(rng.standard_normal(tuple(y.shape)).astype("float32"))
    (y * r).sum().backward()
    rec(f"{name}.x", x.numpy())
    rec(f"{name}.y", y.detach().numpy())
    rec(f"{name}.r", r.numpy())
    rec(f"{name}.dx", xr.grad.numpy())
    for pname, p in model.named_parameters():
        rec(f"{name}.grad.{pname}", p.grad.numpy())
    kept = [n for n, _ in model.named_parameters() if n.encode() in data]
    rec(f"{name}.n_params", numpy.array([len(kept)]))
    if len(kept) != len(list(model.parameters())) or steps == 0:
        return
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = (model(x) * r).sum()
        losses.append(loss.item())
        loss.backward()
        opt.step()
    rec(f"{name}.lr", numpy.array([lr]), exact64=True)
    rec(f"{name}.losses", numpy.array(losses, dtype="float64"), exact64=True)
    for pname, p in model.named_parameters():
        rec(f"{name}.sgd.{pname}", p.detach().numpy())


def randx(*shape):
    return torch.tensor(rng.standard_normal(shape).astype("float32"))


class TextCNN(nn.Module):
    """The issue's motivating case: a Conv1d text classifier (embeddings in, (N, E, L)): Conv1d +
    ReLU + max over time (AdaptiveMaxPool1d(1): GlobalMaxPool) + Linear."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(16, 24, 5, padding=2)
        self.fc = nn.Linear(24, 3)

    def forward(self, x):
        return self.fc(F.adaptive_max_pool1d(torch.relu(self.conv(x)), 1).flatten(1))


class Conv1d(nn.Module):
    """1-D windows: Conv1d (padding, stride, dilation, groups), MaxPool1d, AvgPool1d (padding,
    count_include_pad both ways, ceil_mode), ConvTranspose1d (stride, output_padding), GlobalAveragePool."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv1d(6, 8, 3, padding=1)
        self.c2 = nn.Conv1d(8, 8, 3, stride=2, dilation=2, groups=2, padding=2)
        self.up = nn.ConvTranspose1d(8, 4, 3, stride=2, padding=1, output_padding=1)
        self.fc = nn.Linear(4 * 2, 3)

    def forward(self, x):
        h = F.max_pool1d(torch.tanh(self.c1(x)), 2)                       # (N, 8, 10)
        h = F.avg_pool1d(self.c2(h), 3, stride=1, padding=1, count_include_pad=False)  # (N, 8, 5)
        h = F.avg_pool1d(h, 2, ceil_mode=True, count_include_pad=True) * 1.5  # (N, 8, 3)
        h = torch.tanh(self.up(h))                                           # (N, 4, 6)
        return self.fc(torch.cat([F.adaptive_avg_pool1d(h, 1), F.max_pool1d(h, 3, stride=3)[:, :, :1]], 1).flatten(1))


class Conv3d(nn.Module):
    """3-D windows: Conv3d (padding, stride, groups, dilation), MaxPool3d, AvgPool3d (padding,
    count_include_pad both ways), GlobalAveragePool / GlobalMaxPool on 5-D inputs."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv3d(2, 4, 3, padding=1)
        self.c2 = nn.Conv3d(4, 4, (2, 3, 3), stride=(1, 2, 1), groups=2, dilation=(1, 1, 2), padding=1)
        self.fc = nn.Linear(8, 3)

    def forward(self, x):
        h = F.max_pool3d(torch.tanh(self.c1(x)), 2)                         # (N, 4, 3, 4, 4)
        h = self.c2(h)                                                       # (N, 4, 4, 2, 2)
        h = F.avg_pool3d(h, 2, stride=1, padding=1, count_include_pad=False) + \
            F.avg_pool3d(h, 2, stride=1, padding=1, count_include_pad=True)  # (N, 4, 5, 3, 3)
        h = torch.tanh(h)
        return self.fc(torch.cat([F.adaptive_avg_pool3d(h, 1), F.adaptive_max_pool3d(h, 1)], 1).flatten(1))


torch.manual_seed(1)
export("textcnn", TextCNN(), randx(4, 16, 20), lr=0.05)
torch.manual_seed(2)
export("conv1d", Conv1d(), randx(3, 6, 20))
torch.manual_seed(3)
export("conv3d", Conv3d(), randx(2, 2, 6, 8, 8))

if __name__ == "__main__":
    write("gen_onnx_spatial_goldens.py", "onnx_spatial_goldens.txt")
