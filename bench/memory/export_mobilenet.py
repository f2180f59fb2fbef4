"""mobilenet_v2 for bench/memory/run.py: bench/make_models.py's module (same seed, calibrated
BatchNorm statistics) exported with a dynamic batch axis (make_models fixes it at 1), eval mode
(BatchNorm folded into the convolutions, as one fine-tunes a pretrained model).
Usage: export_mobilenet.py OUT.onnx"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import torch  # noqa: E402

import make_models  # noqa: E402

m = make_models.build("mobilenet_v2")
m.eval()
torch.onnx.export(m, torch.zeros(1, 3, 224, 224), sys.argv[1], input_names=["x"], output_names=["y"],
                  opset_version=13, dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}}, do_constant_folding=True)
