#!/usr/bin/python3
"""A small Fashion-MNIST-shaped CNN as ONNX for bench/lora/memory.c (random weights; training
memory does not depend on them): Conv(1->32, 3) Relu, Conv(32->64, 3) Relu, MaxPool 2, Flatten,
Linear(9216->128) Relu, Linear(128->10).

    /usr/bin/python3 bench/lora/make_cnn.py OUT.onnx
"""
import sys

import torch

model = torch.nn.Sequential(
    torch.nn.Conv2d(1, 32, 3), torch.nn.ReLU(), torch.nn.Conv2d(32, 64, 3), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
    torch.nn.Flatten(), torch.nn.Linear(9216, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10)).eval()
torch.onnx.export(model, (torch.zeros(1, 1, 28, 28),), sys.argv[1], opset_version=13, input_names=["x"],
                  output_names=["y"], dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}}, do_constant_folding=False)
