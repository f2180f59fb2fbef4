#!/usr/bin/python3
"""Golden values for tests/test_lora.c: LoRA adapters trained in PyTorch 1.13 by a hand-written LoRA
module (issue 26 item 2), five SGD steps, for lithe's adapters to match (every adapter parameter).

    /usr/bin/python3 tests/golden/gen_lora_goldens.py OUT.txt

The reference computes the adapters the way the LoRA paper and loralib do, on the activations:
    y = x·Wᵀ + b + s · (x·Aᵀ)·Bᵀ,   s = alpha / r,  A (r, in),  B (out, r) zero,
with the base W and b frozen (requires_grad False) and torch.optim.SGD over the A's and B's only.
lithe adds B·A to the weight instead (core/lora.c): the same function, computed another way. For a
Conv the reference adds s · (B·A).view(W.shape) to the weight (the flattened form lithe documents).
The A's initial values are drawn here (numpy, U(-1/sqrt(in), 1/sqrt(in)) as lithe's init) and
handed to lithe through this file.

Cases:
- mlp: lithe's native tree chain(Relu(nO=8, nI=6), Maxout(nO=5, nP=2, nI=8), Linear(nO=3, nI=5)),
  Thinc's layouts (Maxout's W (nO, nP, nI) adapted as (nO·nP, nI)); rank 2, alpha 4; batch 4.
- cnn: a small CNN exported by torch.onnx.export (its bytes: record lora_cnn.onnx): Conv
  (2 -> 4, 3x3, pad 1) + Relu, Flatten, Linear (64 -> 6, a Gemm with transB) + Relu, and x @ P with
  a parameter P (6, 3) (a MatMul: P is (in, out)); rank 2, alpha 3; batch 3 of 2 x 4 x 4.
Loss sum(y * r) (dY = r). Records, per case C: lora.C.x, .r, .lr, .losses (before each step),
lora.C.rank, lora.C.alpha, lora.C.base.<weight> (mlp: every base param), lora.C.init.A.<weight>,
lora.C.sgd.A.<weight>, lora.C.sgd.B.<weight> (after five steps), lora.C.weff.<weight> (base + s B·A
after them, in the weight's own layout) and lora.C.y (the output after the steps).
"""
import sys

import numpy

from golden_records import rec, torch_onnx_bytes, write

try:
    import torch
    import torch.nn.functional as F
except ImportError as e:
    sys.exit(f"gen_lora_goldens.py: {e}; run with /usr/bin/python3 (Debian's python3-torch)")

out = sys.argv[1] if len(sys.argv) > 1 else "lora_goldens.txt"
STEPS = 5


def t(a):
    return torch.tensor(numpy.asarray(a, dtype="float32"))


def adapter(rng, name, rows, cols, rank, case):
    A = rng.uniform(-1, 1, (rank, cols)).astype("float32") / numpy.float32(numpy.sqrt(cols))
    rec(f"lora.{case}.init.A.{name}", A)
    return t(A).requires_grad_(), torch.zeros((rows, rank), requires_grad=True)


def lora_linear(x, W, b, A, B, s):
    return x @ W.T + b + s * ((x @ A.T) @ B.T)


def train(case, forward, adapters, x, r, lr):
    opt = torch.optim.SGD([p for ab in adapters.values() for p in ab], lr=lr)
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        loss = (forward(x) * r).sum()
        losses.append(loss.item())
        loss.backward()
        opt.step()
    rec(f"lora.{case}.x", x.numpy())
    rec(f"lora.{case}.r", r.numpy())
    rec(f"lora.{case}.lr", numpy.array([lr]), exact64=True)
    rec(f"lora.{case}.losses", numpy.array(losses, dtype="float64"), exact64=True)
    with torch.no_grad():
        rec(f"lora.{case}.y", forward(x).numpy())
    for name, (A, B) in adapters.items():
        rec(f"lora.{case}.sgd.A.{name}", A.detach().numpy())
        rec(f"lora.{case}.sgd.B.{name}", B.detach().numpy())
    print(f"{case}: {len(adapters)} adapters, losses {losses[0]:.5f} -> {losses[-1]:.5f}, "
          f"max |B| after {STEPS} steps {max(float(B.abs().max()) for _, B in adapters.values()):.4f}")


# ---- mlp: lithe's native layers ----
rng = numpy.random.RandomState(26)
RANK, ALPHA = 2, 4.0
s = ALPHA / RANK
rec("lora.mlp.rank", numpy.array([RANK]))
rec("lora.mlp.alpha", numpy.array([ALPHA]), exact64=True)
base = {
    "relu.W": rng.standard_normal((8, 6)) * 0.4, "relu.b": rng.standard_normal(8) * 0.1,
    "maxout.W": rng.standard_normal((5, 2, 8)) * 0.4, "maxout.b": rng.standard_normal((5, 2)) * 0.1,
    "linear.W": rng.standard_normal((3, 5)) * 0.4, "linear.b": rng.standard_normal(3) * 0.1,
}
for k, v in base.items():
    rec(f"lora.mlp.base.{k}", v)
base = {k: t(v) for k, v in base.items()}
ad = {
    "relu.W": adapter(rng, "relu.W", 8, 6, RANK, "mlp"),
    "maxout.W": adapter(rng, "maxout.W", 10, 8, RANK, "mlp"),
    "linear.W": adapter(rng, "linear.W", 3, 5, RANK, "mlp"),
}


def mlp(x):
    h = torch.relu(lora_linear(x, base["relu.W"], base["relu.b"], *ad["relu.W"], s))
    z = lora_linear(h, base["maxout.W"].reshape(10, 8), base["maxout.b"].reshape(10), *ad["maxout.W"], s)
    h = z.reshape(-1, 5, 2).max(dim=2).values
    return lora_linear(h, base["linear.W"], base["linear.b"], *ad["linear.W"], s)


x = t(rng.standard_normal((4, 6)))
r = t(rng.standard_normal((4, 3)))
train("mlp", mlp, ad, x, r, 0.02)
with torch.no_grad():
    for name, (A, B) in ad.items():
        W = base[name]
        rec(f"lora.mlp.weff.{name}", (W + s * (B @ A).reshape(W.shape)).numpy())


# ---- cnn: an ONNX graph with Conv, Gemm and MatMul weights ----
class CNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(2, 4, 3, padding=1)
        self.fc = torch.nn.Linear(64, 6)
        self.P = torch.nn.Parameter(torch.zeros(6, 3))

    def forward(self, x):
        h = torch.relu(self.conv(x)).flatten(1)
        return torch.relu(self.fc(h)) @ self.P


rng = numpy.random.RandomState(2602)
torch.manual_seed(2602)
RANK, ALPHA = 2, 3.0
s = ALPHA / RANK
rec("lora.cnn.rank", numpy.array([RANK]))
rec("lora.cnn.alpha", numpy.array([ALPHA]), exact64=True)
model = CNN().eval()
with torch.no_grad():
    for p in model.parameters():
        p.copy_(t(rng.standard_normal(tuple(p.shape)) * 0.3))
x = t(rng.standard_normal((3, 2, 4, 4)))
rec("lora_cnn.onnx", numpy.frombuffer(torch_onnx_bytes(model, x, 13), dtype="uint8"))
for p in model.parameters():
    p.requires_grad_(False)
ad = {
    "conv.weight": adapter(rng, "conv.weight", 4, 2 * 3 * 3, RANK, "cnn"),
    "fc.weight": adapter(rng, "fc.weight", 6, 64, RANK, "cnn"),
    "P": adapter(rng, "P", 3, 6, RANK, "cnn"),  # D = (B·A) is (out 3, in 6); P (6, 3) gains Dᵀ
}


def cnn(x):
    A, B = ad["conv.weight"]
    W = model.conv.weight + s * (B @ A).reshape(model.conv.weight.shape)
    h = torch.relu(F.conv2d(x, W, model.conv.bias, padding=1)).flatten(1)
    h = torch.relu(lora_linear(h, model.fc.weight, model.fc.bias, *ad["fc.weight"], s))
    A, B = ad["P"]
    return h @ model.P + s * ((h @ A.T) @ B.T)


r = t(rng.standard_normal((3, 3)))
train("cnn", cnn, ad, x, r, 0.02)
with torch.no_grad():
    for name, (A, B) in ad.items():
        W = dict(model.named_parameters())[name]
        D = s * (B @ A)
        rec(f"lora.cnn.weff.{name}", (W + (D.T if name == "P" else D.reshape(W.shape))).numpy())
write("gen_lora_goldens.py", out)
