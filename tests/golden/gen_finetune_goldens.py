#!/usr/bin/python3
"""Golden values for tests/test_finetune.c: five SGD steps on torchvision's mobilenet_v3_small (the
mobile CNN family of issue 23) in PyTorch 1.13, every parameter after them, for lithe to match.

    /usr/bin/python3 tests/golden/gen_finetune_goldens.py OUT.txt

The model: Debian's torchvision 0.14 mobilenet_v3_small with random weights from a fixed seed and a
10-class head (fine-tuning a new head is the usual case, and it keeps the goldens a few MB),
BatchNorm statistics from one training-mode calibration pass (as gen_torchvision_goldens.py), then
eval mode. BatchNorm in eval mode is an affine map torch.onnx.export folds into the Conv before it,
under new anonymous names, so torch's separate weights would train differently from the graph's
(test_onnx's resblock has no SGD goldens for that reason). Here each Conv + BatchNorm pair is fused
in torch first (torch.nn.utils.fusion.fuse_conv_bn_eval, the same algebra), so torch trains exactly
the weights the exported graph holds, under torch's names (no constant folding). Written beside
OUT.txt: mobilenet_v3_small_ft.onnx (opset 14: HardSwish; the SE gates are HardSigmoid).

Records: ft.x (one 64 x 64 image), ft.r (loss = sum(y * r)), ft.lr, ft.losses (the loss before
each step), ft.sgd.<param> (every parameter after five steps), ft.n_params, and ft.drift64: how far
the same five steps in float64 move each parameter from torch's float32 result, relative to max |p|
(so kinks that float32 rounding can flip are seen: the test allows that distance).
"""
import copy
import io
import os
import sys

import numpy

from golden_records import rec, write

try:
    import torch
    import torchvision
    from torch.nn.utils.fusion import fuse_conv_bn_eval
except ImportError as e:
    sys.exit(f"gen_finetune_goldens.py: {e}; install Debian's python3-torch and python3-torchvision and run with "
             "/usr/bin/python3")

out = sys.argv[1] if len(sys.argv) > 1 else "finetune_goldens.txt"
folder = os.path.dirname(os.path.abspath(out))
rng = numpy.random.RandomState(23)
STEPS, LR, SIZE = 5, 1e-4, 64  # at 1e-3 float32 and float64 torch end 2e-2 apart (kinks)

torch.manual_seed(23)
model = torchvision.models.mobilenet_v3_small(weights=None, num_classes=10)
# torchvision zeroes every Conv / Linear bias, and torch.onnx.export keeps ONE initializer for
# parameters of equal values (the graph then trains them tied, with summed gradients, as torch
# would not): perturb every parameter so each is its own
with torch.no_grad():
    for p in model.parameters():
        p.add_(torch.tensor(rng.standard_normal(tuple(p.shape)).astype("float32")) * 0.01)
for m in model.modules():
    if isinstance(m, torch.nn.BatchNorm2d):
        m.reset_running_stats()
        m.momentum = None
model.train()
with torch.no_grad():
    model(torch.tensor(rng.standard_normal((4, 3, SIZE, SIZE)).astype("float32")))
model.eval()
n_bn = sum(isinstance(m, torch.nn.BatchNorm2d) for m in model.modules())
fused = 0
for parent in list(model.modules()):
    kids = list(parent.named_children())
    for (n1, a), (n2, b) in zip(kids, kids[1:]):
        if isinstance(a, torch.nn.Conv2d) and isinstance(b, torch.nn.BatchNorm2d):
            setattr(parent, n1, fuse_conv_bn_eval(a, b))
            setattr(parent, n2, torch.nn.Identity())
            fused += 1
assert fused == n_bn == 34, (fused, n_bn)  # every BatchNorm follows a Conv (the SE gates' Convs have none)

buf = io.BytesIO()
torch.onnx.export(model, (torch.zeros(1, 3, SIZE, SIZE),), buf, opset_version=14, input_names=["x"],
                  output_names=["y"], do_constant_folding=False)
names = [n for n, _ in model.named_parameters()]
kept = [n for n in names if n.encode() in buf.getvalue()]
assert len(kept) == len(names), set(names) - set(kept)
path = os.path.join(folder, "mobilenet_v3_small_ft.onnx")
with open(path + ".tmp", "wb") as f:
    f.write(buf.getvalue())
os.replace(path + ".tmp", path)

x = torch.tensor(rng.standard_normal((1, 3, SIZE, SIZE)).astype("float32"))
r = torch.tensor(rng.standard_normal((1, 10)).astype("float32"))
m64 = copy.deepcopy(model).double()


def train(m, x, r):
    opt = torch.optim.SGD(m.parameters(), lr=LR)
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        loss = (m(x) * r).sum()
        losses.append(loss.item())
        loss.backward()
        opt.step()
    return losses


losses = train(model, x, r)
losses64 = train(m64, x.double(), r.double())
p64 = dict(m64.named_parameters())
drift = max(float((p.detach().double() - p64[n].detach()).abs().max()) / max(float(p.detach().abs().max()), 1e-30)
            for n, p in model.named_parameters())
rec("ft.x", x.numpy())
rec("ft.r", r.numpy())
rec("ft.lr", numpy.array([LR]), exact64=True)
rec("ft.losses", numpy.array(losses, dtype="float64"), exact64=True)
rec("ft.n_params", numpy.array([len(names)]))
rec("ft.drift64", numpy.array([drift]), exact64=True)
for n, p in model.named_parameters():
    rec(f"ft.sgd.{n}", p.detach().numpy())
print(f"mobilenet_v3_small (10 classes, {SIZE} x {SIZE}): {len(names)} params, {fused} Conv+BN fused, losses "
      f"{losses[0]:.5f} -> {losses[-1]:.5f} (float64 {losses64[-1]:.5f}); float32 vs float64 params after "
      f"{STEPS} steps: {drift:.2e} of max |p|")
write("gen_finetune_goldens.py", out)
