"""Goldens of tests/test_freeze_graph.c (issue 26), from PyTorch 1.13: a small CNN exported to ONNX
and the gradients of its classifier when its features are frozen (requires_grad=False), for a fixed
input and loss sum(Y) / B (dY = 1/B). Usage: gen_freeze_goldens.py OUT_DIR"""
import os
import sys

import numpy
import torch
import torch.nn as nn

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
torch.manual_seed(26)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, padding=1), nn.ReLU())
        self.classifier = nn.Linear(8, 5)

    def forward(self, x):
        return self.classifier(torch.flatten(torch.mean(self.features(x), dim=(2, 3), keepdim=True), 1))


m = Net().eval()
x = torch.rand(4, 3, 8, 8)
torch.onnx.export(m, x, os.path.join(out, "freeze_cnn.onnx"), input_names=["x"], output_names=["y"], opset_version=13,
                  dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
for p in m.features.parameters():
    p.requires_grad_(False)
(m(x).sum() / x.shape[0]).backward()
numpy.save(os.path.join(out, "freeze_x.npy"), x.numpy())
numpy.save(os.path.join(out, "freeze_gW.npy"), m.classifier.weight.grad.numpy())
numpy.save(os.path.join(out, "freeze_gb.npy"), m.classifier.bias.grad.numpy())
