"""Goldens of tests/test_graph_recompute.c (issue 26 item 3), from PyTorch 1.13: a small
MobileNet-style CNN (a stem Conv + ReLU6, inverted residual blocks: 1x1 expand + ReLU6, 3x3
depthwise + ReLU6, 1x1 project, a residual Add where the shapes allow; global average pool, Linear)
exported to ONNX, and for a fixed input and loss sum(Y) / B (dY = 1/B) the gradient of every
parameter (g_<name>.npy, the names one a line in names.txt) and of the input (dx.npy).
Usage: gen_recompute_goldens.py OUT_DIR"""
import os
import sys

import numpy
import torch
import torch.nn as nn

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
torch.manual_seed(263)


class Block(nn.Module):
    def __init__(self, cin, cout, stride, expand=4):
        super().__init__()
        h = cin * expand
        self.body = nn.Sequential(nn.Conv2d(cin, h, 1), nn.ReLU6(), nn.Conv2d(h, h, 3, stride, 1, groups=h), nn.ReLU6(),
                                  nn.Conv2d(h, cout, 1))
        self.res = stride == 1 and cin == cout

    def forward(self, x):
        y = self.body(x)
        return x + y if self.res else y


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3, 1, 1), nn.ReLU6(), Block(8, 8, 1), Block(8, 12, 2),
                                      Block(12, 12, 1), Block(12, 12, 1))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Linear(12, 5)

    def forward(self, x):
        return self.classifier(torch.flatten(self.pool(self.features(x)), 1))


m = Net().eval()
x = torch.rand(4, 3, 16, 16)
torch.onnx.export(m, x, os.path.join(out, "recompute_cnn.onnx"), input_names=["x"], output_names=["y"],
                  opset_version=13, dynamic_axes={"x": {0: "batch", 2: "h", 3: "w"}, "y": {0: "batch"}})
x.requires_grad_(True)
(m(x).sum() / x.shape[0]).backward()
numpy.save(os.path.join(out, "x.npy"), x.detach().numpy())
numpy.save(os.path.join(out, "dx.npy"), x.grad.numpy())
names = []
for name, p in m.named_parameters():
    numpy.save(os.path.join(out, "g_" + name + ".npy"), p.grad.numpy())
    names.append(name)
open(os.path.join(out, "names.txt"), "w").write("\n".join(names) + "\n")
