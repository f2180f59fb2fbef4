#!/usr/bin/python3
"""Golden values for tests/test_finetune.c: five SGD steps in PyTorch 1.13 on one model of each family
of issue 23 that lithe fine-tunes from an ONNX export, every parameter after them, for lithe to match.

    /usr/bin/python3 tests/golden/gen_finetune_goldens.py OUT.txt

The models (random weights from fixed seeds, eval mode), each exported by torch.onnx.export and
written beside OUT.txt as <case>_ft.onnx:
- mnv3: torchvision 0.14's mobilenet_v3_small (mobile CNN) with a 10-class head (fine-tuning a new
  head is the usual case, and it keeps the goldens a few MB), one 64 x 64 image, opset 14 (HardSwish;
  the SE gates are HardSigmoid);
- lraspp: torchvision 0.14's lraspp_mobilenet_v3_large (segmentation), 3 classes, its 'out' output
  (bilinear Resize back to the input's size), one 64 x 64 image, opset 17;
- convtasnet: torchaudio 0.13's ConvTasNet (audio source separation: Conv1d encoder, PReLU,
  GroupNorm, dilated depthwise Conv1d, ConvTranspose1d decoder) at small settings, 2 sources, an
  800-sample waveform, opset 17.
BatchNorm statistics come from one training-mode calibration pass (as gen_torchvision_goldens.py),
then eval mode. BatchNorm in eval mode is an affine map torch.onnx.export folds into the Conv before
it, under new anonymous names, so torch's separate weights would train differently from the graph's
(test_onnx's resblock has no SGD goldens for that reason). Here each Conv + BatchNorm pair is fused
in torch first (torch.nn.utils.fusion.fuse_conv_bn_eval, the same algebra), so torch trains exactly
the weights the exported graph holds, under torch's names (no constant folding). ConvTasNet has no
BatchNorm (GroupNorm trains as itself).

Records, per case C: ft.C.x (the input), ft.C.r (loss = sum(y * r)), ft.C.lr, ft.C.losses (the loss
before each step), ft.C.sgd.<param> (every parameter after five steps), ft.C.n_params, and
ft.C.drift64: how far the same five steps in float64 move each parameter from torch's float32
result, relative to max |p| (so kinks that float32 rounding can flip are seen: the test allows that
distance).
"""
import copy
import io
import os
import sys

import numpy

from golden_records import rec, write

try:
    import torch
    import torchaudio
    import torchvision
    from torch.nn.utils.fusion import fuse_conv_bn_eval
except ImportError as e:
    sys.exit(f"gen_finetune_goldens.py: {e}; install Debian's python3-torch, python3-torchvision and "
             "python3-torchaudio and run with /usr/bin/python3")

out = sys.argv[1] if len(sys.argv) > 1 else "finetune_goldens.txt"
folder = os.path.dirname(os.path.abspath(out))
STEPS = 5


def perturb(model, rng):
    # torchvision zeroes every Conv / Linear bias (and PReLU / GroupNorm start at equal values), and
    # torch.onnx.export keeps ONE initializer for parameters of equal values (the graph then trains
    # them tied, with summed gradients, as torch would not): perturb every parameter so each is its own
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.tensor(rng.standard_normal(tuple(p.shape)).astype("float32")) * 0.01)


def calibrate_and_fuse(model, rng, shape):
    """BatchNorm statistics from one training-mode pass, then eval mode, then every Conv + BatchNorm
    pair fused in torch; returns how many were fused (== how many BatchNorms there are)."""
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.reset_running_stats()
            m.momentum = None
    model.train()
    with torch.no_grad():
        model(torch.tensor(rng.standard_normal(shape).astype("float32")))
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
    assert fused == n_bn, (fused, n_bn)  # every BatchNorm follows a Conv
    return fused


def train(m, x, r, lr):
    opt = torch.optim.SGD(m.parameters(), lr=lr)
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        loss = (m(x) * r).sum()
        losses.append(loss.item())
        loss.backward()
        opt.step()
    return losses


def case(name, model, x, r, lr, opset, note):
    model.eval()
    buf = io.BytesIO()
    torch.onnx.export(model, (x,), buf, opset_version=opset, input_names=["x"], output_names=["y"],
                      do_constant_folding=False)
    names = [n for n, _ in model.named_parameters()]
    kept = [n for n in names if n.encode() in buf.getvalue()]
    assert len(kept) == len(names), set(names) - set(kept)
    path = os.path.join(folder, f"{name}_ft.onnx")
    with open(path + ".tmp", "wb") as f:
        f.write(buf.getvalue())
    os.replace(path + ".tmp", path)
    m64 = copy.deepcopy(model).double()
    losses = train(model, x, r, lr)
    losses64 = train(m64, x.double(), r.double(), lr)
    p64 = dict(m64.named_parameters())
    drift = max(float((p.detach().double() - p64[n].detach()).abs().max()) / max(float(p.detach().abs().max()), 1e-30)
                for n, p in model.named_parameters())
    rec(f"ft.{name}.x", x.numpy())
    rec(f"ft.{name}.r", r.numpy())
    rec(f"ft.{name}.lr", numpy.array([lr]), exact64=True)
    rec(f"ft.{name}.losses", numpy.array(losses, dtype="float64"), exact64=True)
    rec(f"ft.{name}.n_params", numpy.array([len(names)]))
    rec(f"ft.{name}.drift64", numpy.array([drift]), exact64=True)
    for n, p in model.named_parameters():
        rec(f"ft.{name}.sgd.{n}", p.detach().numpy())
    print(f"{name} ({note}): {len(names)} params, losses {losses[0]:.5f} -> {losses[-1]:.5f} (float64 "
          f"{losses64[-1]:.5f}); float32 vs float64 params after {STEPS} steps: {drift:.2e} of max |p|")


# the mobile CNN: mobilenet_v3_small, 10 classes
rng = numpy.random.RandomState(23)
torch.manual_seed(23)
SIZE = 64
model = torchvision.models.mobilenet_v3_small(weights=None, num_classes=10)
perturb(model, rng)
fused = calibrate_and_fuse(model, rng, (4, 3, SIZE, SIZE))
assert fused == 34, fused  # the SE gates' Convs have no BatchNorm
x = torch.tensor(rng.standard_normal((1, 3, SIZE, SIZE)).astype("float32"))
r = torch.tensor(rng.standard_normal((1, 10)).astype("float32"))
case("mnv3", model, x, r, 1e-4, 14, f"10 classes, {SIZE} x {SIZE}, {fused} Conv+BN fused")  # at 1e-3 float32 and float64 torch end 2e-2 apart (kinks)


# segmentation: lraspp_mobilenet_v3_large, 3 classes, the 'out' output
class Out(torch.nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, x):
        return self.m(x)["out"]


rng = numpy.random.RandomState(2301)
torch.manual_seed(2301)
model = Out(torchvision.models.segmentation.lraspp_mobilenet_v3_large(weights=None, weights_backbone=None, num_classes=3))
perturb(model, rng)
fused = calibrate_and_fuse(model, rng, (4, 3, SIZE, SIZE))
x = torch.tensor(rng.standard_normal((1, 3, SIZE, SIZE)).astype("float32"))
r = torch.tensor(rng.standard_normal((1, 3, SIZE, SIZE)).astype("float32") / SIZE)
case("lraspp", model, x, r, 1e-4, 17, f"3 classes, {SIZE} x {SIZE}, {fused} Conv+BN fused")

# audio: torchaudio's ConvTasNet, small, 2 sources
rng = numpy.random.RandomState(2302)
torch.manual_seed(2302)
model = torchaudio.models.ConvTasNet(num_sources=2, enc_kernel_size=16, enc_num_feats=32, msk_kernel_size=3,
                                     msk_num_feats=16, msk_num_hidden_feats=32, msk_num_layers=2, msk_num_stacks=1)
perturb(model, rng)
WAVE = 800
x = torch.tensor(rng.standard_normal((1, 1, WAVE)).astype("float32"))
r = torch.tensor(rng.standard_normal((1, 2, WAVE)).astype("float32") / 10)
case("convtasnet", model, x, r, 1e-2, 17, f"2 sources, {WAVE} samples")
write("gen_finetune_goldens.py", out)
