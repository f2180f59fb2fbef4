#!/usr/bin/python3
"""Golden values for tests/test_torchvision.c: torchvision's mobilenet_v2, resnet18 and
mobilenet_v3_small (at opset 14, whose Hardswish is ONNX's HardSwish, and as mobilenet_v3_small13 at
opset 13, HardSigmoid and Mul; its squeeze-excitation gates are HardSigmoid) (Debian's
python3-torchvision, random weights from a fixed seed, eval mode) exported by torch.onnx.export
(Debian's python3-torch 1.13), with PyTorch's outputs and input gradients.

    /usr/bin/python3 tests/golden/gen_torchvision_goldens.py OUT.txt

The exported models are large (14, 47 and 10 MB), so they are written as files beside OUT.txt
(NAME.onnx, batch, height and width dynamic) rather than as golden records; the records hold,
for each NAME and SIZE (224, and 64 for the sanitizer builds): NAME.SIZE.x (the input, one
SIZE x SIZE image), NAME.SIZE.y (torch's output), NAME.SIZE.r (the loss weights: loss =
sum(y * r)), NAME.SIZE.dx (torch autograd's dL/dx), NAME.SIZE.dx64 (the same in float64:
torch's float32 gradient is within a few 1e-3 of it only), NAME.SIZE.kinks (how far float32
rounding may legitimately move each element of dx, see kink_envelope) and NAME.SIZE.scale
(max |y|).

Random weights alone make useless statistics for BatchNorm (running mean 0, variance 1): the
activations of mobilenet_v2 then shrink to about 1e-9 by the classifier. Each BatchNorm's running
statistics are therefore set from one forward pass in training mode over a calibration batch, as
training would leave them, so the outputs are of order one and "within 1e-4 relative" means
something. Exported in eval mode, torch fuses every BatchNorm into the Conv before it.
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
except ImportError as e:
    sys.exit(f"gen_torchvision_goldens.py: {e}; install Debian's python3-torch and python3-torchvision and run with "
             "/usr/bin/python3")

out = sys.argv[1] if len(sys.argv) > 1 else "torchvision_goldens.txt"
folder = os.path.dirname(os.path.abspath(out))
rng = numpy.random.RandomState(11)
SIZES = (224, 64)  # the standard input, and a small one for the sanitizer builds


def calibrate(model, size):
    """Running statistics from one training-mode pass (cumulative average: momentum None)."""
    for mod in model.modules():
        if isinstance(mod, torch.nn.BatchNorm2d):
            mod.reset_running_stats()
            mod.momentum = None
    model.train()
    with torch.no_grad():
        model(torch.tensor(rng.standard_normal((4, 3, size, size)).astype("float32")))
    model.eval()


# An activation closer to a kink than float32 rounding can resolve (a ReLU / ReLU6 input, a
# Hardswish / Hardsigmoid input near -3 or 3, within
# KINK_EPS * max |input| of its kink, a max-pool window whose two largest entries are that close)
# may land on either side in a float32 forward, and the gradient is then routed differently: dx
# moves by g * dz/dx (g the gradient at the activation's output, z its input; for a max-pool window
# z is the difference of its two largest entries). Float32 forwards (lithe's, torch's) stay within
# 4e-6 * max |input| of float64 at these activations in both nets, so KINK_EPS = 1e-5 covers them.
KINK_EPS = 1e-5


KINKED = (torch.nn.ReLU, torch.nn.ReLU6, torch.nn.Hardswish, torch.nn.Hardsigmoid, torch.nn.MaxPool2d)


class Kinked(torch.nn.Module):
    """An activation (ReLU, ReLU6, Hardswish, Hardsigmoid or the 3x3 stride-2 max pool) that records each call's input and
    output (the output keeps its gradient) so kink_envelope can find the near-ties."""

    def __init__(self, inner, calls):
        super().__init__()
        self.inner, self.calls = inner, calls

    def forward(self, z):
        if isinstance(self.inner, torch.nn.MaxPool2d):
            y, idx = torch.nn.functional.max_pool2d(z, self.inner.kernel_size, self.inner.stride,
                                                    self.inner.padding, return_indices=True)
        else:
            # never in place (the modules are): z must survive for kink_envelope
            f = {torch.nn.ReLU6: lambda t: torch.clamp(t, 0, 6), torch.nn.Hardswish: torch.nn.functional.hardswish,
                 torch.nn.Hardsigmoid: torch.nn.functional.hardsigmoid}.get(type(self.inner), torch.relu)
            y = f(z)
        y.retain_grad()
        self.calls.append((self.inner, z, y))
        return y


def kink_envelope(model, x, r):
    """sum over near-kink activations of |g| |dz/dx|: the most by which flipping any of them moves
    dx (first order), elementwise, in float64."""
    model = copy.deepcopy(model).double()
    calls = []
    for parent in list(model.modules()):
        for child_name, child in list(parent.named_children()):
            if isinstance(child, KINKED):
                setattr(parent, child_name, Kinked(child, calls))
    x64 = x.double().requires_grad_(True)
    (model(x64) * r.double()).sum().backward(retain_graph=True)
    env, units = torch.zeros_like(x64), 0
    for inner, z, y in calls:
        zd = z.detach()
        tol = KINK_EPS * float(zd.abs().max())
        if isinstance(inner, torch.nn.MaxPool2d):
            k, st, pad = inner.kernel_size, inner.stride, inner.padding
            cols = torch.nn.functional.unfold(torch.nn.functional.pad(zd, (pad,) * 4, value=-float("inf")), k, stride=st)
            cols = cols.view(zd.shape[0], zd.shape[1], k * k, -1)
            top = cols.topk(2, dim=2)
            near = (top.values[:, :, 0] - top.values[:, :, 1] < tol) & (top.values[:, :, 0] > 0)
            for n, c, l in torch.nonzero(near).tolist():
                g = float(y.grad[n, c].flatten()[l])
                if g == 0:
                    continue
                oh, ow = divmod(l, y.shape[3])
                (a, b) = [divmod(int(t), k) for t in top.indices[n, c, :, l]]
                za = z[n, c, oh * st - pad + a[0], ow * st - pad + a[1]]
                zb = z[n, c, oh * st - pad + b[0], ow * st - pad + b[1]]
                (dz,) = torch.autograd.grad(za - zb, x64, retain_graph=True)
                env += abs(g) * dz.abs()
                units += 1
            continue
        dist = zd.abs()
        if isinstance(inner, torch.nn.ReLU6):
            dist = torch.minimum(dist, (zd - 6).abs())
        if isinstance(inner, (torch.nn.Hardswish, torch.nn.Hardsigmoid)):  # kinks at -3 and 3 (not 0)
            dist = torch.minimum((zd + 3).abs(), (zd - 3).abs())
        for i in torch.nonzero(dist.flatten() < tol).flatten().tolist():
            g = float(y.grad.flatten()[i])
            if g == 0:
                continue
            (dz,) = torch.autograd.grad(z.flatten()[i], x64, retain_graph=True)
            env += abs(g) * dz.abs()
            units += 1
    return env.detach().numpy(), units


# (name, seed, opset, constant folding): two of the exporter's configurations. Batch, height and
# width are dynamic axes, so one file serves both image sizes.
for name, arch, seed, opset, folding in (("mobilenet_v2", "mobilenet_v2", 1, 13, True),
                                         ("resnet18", "resnet18", 2, 11, False),
                                         ("mobilenet_v3_small", "mobilenet_v3_small", 3, 14, True),
                                         ("mobilenet_v3_small13", "mobilenet_v3_small", 3, 13, True)):
    torch.manual_seed(seed)
    model = getattr(torchvision.models, arch)(weights=None)
    calibrate(model, 224)
    buf = io.BytesIO()
    torch.onnx.export(model, (torch.zeros(1, 3, 224, 224),), buf, opset_version=opset, input_names=["x"],
                      output_names=["y"], do_constant_folding=folding,
                      dynamic_axes={"x": {0: "batch", 2: "height", 3: "width"}, "y": {0: "batch"}})
    path = os.path.join(folder, f"{name}.onnx")
    with open(path + ".tmp", "wb") as f:
        f.write(buf.getvalue())
    os.replace(path + ".tmp", path)
    for size in SIZES:
        x = torch.tensor(rng.standard_normal((1, 3, size, size)).astype("float32"))
        xr = x.clone().requires_grad_(True)
        y = model(xr)
        r = torch.tensor(rng.standard_normal(tuple(y.shape)).astype("float32"))
        (y * r).sum().backward()
        key = f"{name}.{size}"
        rec(f"{key}.x", x.numpy())
        rec(f"{key}.y", y.detach().numpy())
        rec(f"{key}.r", r.numpy())
        rec(f"{key}.dx", xr.grad.numpy())
        # float32 backprop through 50-odd layers is itself noisy (torch's float32 dx is 3e-3 to 5e-3
        # off its float64 one, relative to max |dx|): the float64 gradient is the reference for dX
        x64 = x.double().requires_grad_(True)
        y64 = copy.deepcopy(model).double()(x64)
        (y64 * r.double()).sum().backward()
        rec(f"{key}.dx64", x64.grad.numpy(), exact64=True)
        env, units = kink_envelope(model, x, r)
        rec(f"{key}.kinks", env)
        rec(f"{key}.scale", numpy.array([float(y.abs().max())]), exact64=True)
        print(f"{name} at {size}: opset {opset}, folding {folding}, {len(buf.getvalue())} bytes, "
              f"max |y| {float(y.abs().max()):.3g}, {units} activations within float32 rounding of a kink")

write("gen_torchvision_goldens.py", out)
