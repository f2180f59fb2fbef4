#!/usr/bin/python3
"""Seeds for fuzz_onnx: tiny models exported by torch.onnx.export (Debian's python3-torch 1.13),
each under the 4096 bytes fuzz/run.sh lets libFuzzer grow an input to, covering the operator
families of the graph layer.

    /usr/bin/python3 fuzz/make_onnx_seeds.py   # writes fuzz/corpus/onnx/*.onnx
"""
import io
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "onnx")
os.makedirs(out, exist_ok=True)
torch.manual_seed(0)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(3, 4), nn.Linear(4, 2)

    def forward(self, x):
        return torch.log_softmax(self.b(torch.sigmoid(self.a(x)) * torch.tanh(x.sum(1, keepdim=True))), dim=-1)


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.c, self.bn = nn.Conv2d(1, 2, 3, padding=1, stride=2), nn.BatchNorm2d(2)

    def forward(self, x):
        h = F.max_pool2d(torch.relu(self.bn(self.c(x))), 2, ceil_mode=True)
        h = F.avg_pool2d(h, 1) + F.adaptive_avg_pool2d(h, 1)
        return torch.softmax(h.view(h.size(0), -1), dim=1)


class Mix(nn.Module):
    def __init__(self):
        super().__init__()
        self.l, self.n = nn.Linear(2, 4), nn.LayerNorm(4)

    def forward(self, x):
        h = self.n(self.l(x))
        h = 0.5 * h * (1.0 + torch.erf(h / math.sqrt(2.0)))
        a, b = h.split([1, 3], dim=2)
        h = torch.cat([torch.clamp(a, -1, 1), torch.exp(-b.pow(2))], dim=2).transpose(1, 2)
        return (h[:, 1:, :].matmul(x) / torch.sqrt(h.abs().mean() + 1.0)).flatten(1)


class Masked(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = nn.Linear(2, 3)

    def forward(self, x):
        h = self.l(x)
        s = h.matmul(h.transpose(1, 2)).masked_fill(x[:, :, :1].transpose(1, 2) > 1.0, float("-inf"))
        return torch.softmax(s, -1).matmul(torch.where(~(h < 0), h, -h)).flatten(1) + (x[:, :, 1:] == 0).float().sum(1)


for name, model, x, opsets in [("masked", Masked(), torch.randn(1, 3, 2), (13,)),
                               ("mlp", MLP(), torch.randn(2, 3), (11, 13, 17)),
                               ("cnn", CNN(), torch.randn(1, 1, 6, 6), (13,)),
                               ("mix", Mix(), torch.randn(1, 3, 2), (13, 17))]:
    model.eval()
    for opset in opsets:
        buf = io.BytesIO()
        torch.onnx.export(model, (x,), buf, opset_version=opset, input_names=["x"], output_names=["y"],
                          dynamic_axes={"x": {0: "batch"}}, do_constant_folding=False)
        path = os.path.join(out, f"{name}{opset}.onnx")
        with open(path, "wb") as f:
            f.write(buf.getvalue())
        print(path, len(buf.getvalue()))


# issue 23: recurrent layers (a torch GRU is 7 KB with its gate reordering: a nn.RNN from torch, and
# a bidirectional LSTM with sequence_lens and a GRU written with onnx.helper) and control flow
# torch.jit.script exports (a Loop over a buffer's trip count, an If on a buffer)
class Rec(nn.Module):
    def __init__(self):
        super().__init__()
        self.r = nn.RNN(2, 2)

    def forward(self, x):
        return self.r(x)[0]


class Ctl(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("n", torch.tensor(2))
        self.register_buffer("flag", torch.tensor(True))

    def forward(self, x):
        for i in range(int(self.n)):
            x = torch.tanh(x) + i
        if bool(self.flag):
            x = x * 2.0
        return x


def save(name, data):
    path = os.path.join(out, f"{name}.onnx")
    with open(path, "wb") as f:
        f.write(data)
    print(path, len(data))


for name, model, x in [("rnn", Rec(), torch.randn(3, 1, 2)), ("ctl", torch.jit.script(Ctl()), torch.randn(1, 2))]:
    buf = io.BytesIO()
    torch.onnx.export(model, (x,), buf, opset_version=13, input_names=["x"], output_names=["y"],
                      do_constant_folding=False)
    save(f"{name}13", buf.getvalue())

import numpy  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

for op, ng, extra in [("LSTM", 4, {"direction": "bidirectional"}), ("GRU", 3, {"linear_before_reset": 0})]:
    D = 2 if extra.get("direction") == "bidirectional" else 1
    w = lambda *s: numpy_helper.from_array((numpy.arange(numpy.prod(s)) % 7 * 0.1 - 0.3).reshape(s).astype("float32"))
    inits = [w(D, ng * 2, 2), w(D, ng * 2, 2), w(D, 4 * ng), numpy_helper.from_array(numpy.array([3, 1], "int32"))]
    for t, n in zip(inits, ["W", "R", "B", "L"]):
        t.name = n
    node = helper.make_node(op, ["x", "W", "R", "B", "L"], ["y", "h"], hidden_size=2, **extra)
    g = helper.make_graph([node], op.lower(), [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 2, 2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializer=inits)
    save(f"{op.lower()}14", helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)]).SerializeToString())
