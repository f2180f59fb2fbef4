#!/usr/bin/python3
"""Golden values from PyTorch 1.13 (Debian's python3-torch) for tests/test_onnx.c: small models
exported with torch.onnx.export, their outputs, the gradients of a fixed linear loss with respect
to the input and every parameter (torch autograd), and the parameters after ten SGD steps.

    /usr/bin/python3 tests/golden/gen_onnx_goldens.py OUT.txt

For each model NAME: NAME.onnx (the exported bytes, as integers), NAME.x (input), NAME.y
(output), NAME.r (the loss weights: loss = sum(y * r), so dL/dy = r), NAME.dx, NAME.grad.<param>
for every named parameter, NAME.n_params (how many of them the graph keeps under torch's names),
and, when it keeps all, NAME.sgd.<param> after ten steps of SGD (lr NAME.lr) on that loss with the
same x. Models are exported in eval mode with a dynamic batch axis and without constant folding.

Beside OUT.txt, onnx_external/ holds lenet saved with external data (onnx.save_model with
save_as_external_data) and hostile variants of it, for the external-data tests.
"""
import math
import os
import sys

import numpy

from golden_records import rec, records, torch_goldens, torch_onnx_bytes, write

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError as e:
    sys.exit(f"gen_onnx_goldens.py: {e}; install Debian's python3-torch and run with /usr/bin/python3")

torch.manual_seed(0)
rng = numpy.random.RandomState(7)


class MLP(nn.Module):
    """The MLP: Gemm, Relu, Tanh, Sigmoid, Softmax."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 16)
        self.fc2 = nn.Linear(16, 12)
        self.fc3 = nn.Linear(12, 5)

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        h = torch.tanh(self.fc2(h)) + torch.sigmoid(h[:, :12])
        return torch.softmax(self.fc3(h), dim=-1)


class LeNet(nn.Module):
    """A LeNet-style CNN: Conv (padding, stride, groups, dilation), MaxPool, AveragePool,
    BatchNormalization (eval), GlobalAveragePool, Flatten / Reshape, Gemm, LogSoftmax."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, padding=1)
        self.conv2 = nn.Conv2d(4, 8, 3, groups=2, stride=1, dilation=1)
        self.bn = nn.BatchNorm2d(8)
        self.fc1 = nn.Linear(8 * 2 * 2 + 8, 10)
        self.fc2 = nn.Linear(10, 3)

    def forward(self, x):
        h = F.max_pool2d(torch.relu(self.conv1(x)), 2)      # (N, 4, 6, 6)
        h = torch.relu(self.bn(F.avg_pool2d(self.conv2(h), 2, ceil_mode=False) * 1.0))  # (N, 8, 2, 2)
        g = F.adaptive_avg_pool2d(h, 1).flatten(1)            # GlobalAveragePool (N, 8)
        h = h.view(h.size(0), -1)                             # Shape / Gather / Unsqueeze / Concat / Reshape
        h = torch.relu(self.fc1(torch.cat([h, g], dim=1)))
        return F.log_softmax(self.fc2(h), dim=1)


class Mixer(nn.Module):
    """Transformer-ish pieces: MatMul (3-D), Transpose, LayerNorm, GELU (Erf), Div, Pow, Sqrt, Exp,
    Log, Sub, Neg, ReduceMean, Split / Slice, Clip, Concat, Unsqueeze / Squeeze."""

    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(4, 8)
        self.ln = nn.LayerNorm(8)
        self.mix = nn.Linear(5, 5)
        self.out = nn.Linear(8, 3)

    def forward(self, x):                                     # x (N, 5, 4)
        h = self.ln(self.inp(x))                              # MatMul + Add, LayerNorm
        # GELU written out (the Erf form torch exports for F.gelu): Debian's torch 1.13.0a0 gives zero
        # gradients through F.gelu right after nn.LayerNorm, so autograd would be a wrong oracle
        h = 0.5 * h * (1.0 + torch.erf(h / math.sqrt(2.0)))
        h = self.mix(h.transpose(1, 2)).transpose(1, 2)        # Transpose, MatMul
        a, b = h.split([3, 5], dim=2)
        h = torch.cat([torch.clamp(a, -0.5, 0.5), torch.exp(-b.pow(2)) / 2.0], dim=2)
        s = torch.sqrt(h.pow(2).mean(dim=1, keepdim=True) + 1.0)   # ReduceMean, Pow, Sqrt
        h = h / s - torch.log(torch.abs(h) + 1.0)
        h = h.unsqueeze(1).squeeze(1)[:, 1:, :]               # Slice
        return self.out(h.mean(dim=1))


class ResBlock(nn.Module):
    """A resnet-style block: Conv + BatchNorm (torch fuses them into new Conv weights when it
    exports in eval mode), a residual Add, GlobalAveragePool, Flatten, Gemm."""

    def __init__(self):
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4)
        self.c2, self.b2 = nn.Conv2d(4, 4, 3, padding=1, bias=False), nn.BatchNorm2d(4)
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        h = torch.relu(self.b1(self.c1(x)))
        h = torch.relu(self.b2(self.c2(h)) + h)
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(h, 1), 1))


class Decoder(nn.Module):
    """ConvTranspose (stride, padding, output_padding, groups) and LeakyRelu."""

    def __init__(self):
        super().__init__()
        self.c = nn.Conv2d(2, 4, 3, stride=2, padding=1)
        self.up = nn.ConvTranspose2d(4, 4, 3, stride=2, padding=1, output_padding=1, groups=2)
        self.up2 = nn.ConvTranspose2d(4, 1, 2, stride=1, dilation=2)

    def forward(self, x):
        h = F.leaky_relu(self.c(x), 0.1)
        return torch.sigmoid(self.up2(F.leaky_relu(self.up(h), 0.2))).flatten(1)


class Mobile(nn.Module):
    """mobilenet-style pieces (test_xnnpack: each side of LITHE_XNNPACK's rule): a 3x3 s2 stem on 3
    channels, depthwise 3x3 and 5x5 s2, pointwise 1x1 on 8x8 and 4x4, a dense 3x3 on 24 channels,
    ReLU6 (Clip), GlobalAveragePool, Gemm to 10."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, stride=2, padding=1)
        self.dw1 = nn.Conv2d(16, 16, 3, padding=1, groups=16)
        self.pw1 = nn.Conv2d(16, 24, 1)
        self.dw2 = nn.Conv2d(24, 24, 5, stride=2, padding=2, groups=24)
        self.pw2 = nn.Conv2d(24, 24, 1)
        self.conv = nn.Conv2d(24, 32, 3, padding=1)
        self.fc = nn.Linear(32, 10)

    def forward(self, x):                                       # x (N, 3, 16, 16)
        h = F.relu6(self.stem(x))                               # (N, 16, 8, 8)
        h = F.relu6(self.pw1(F.relu6(self.dw1(h))))             # (N, 24, 8, 8)
        h = self.pw2(F.relu6(self.dw2(h)))                      # (N, 24, 4, 4)
        h = F.relu6(self.conv(h))                               # (N, 32, 4, 4)
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(h, 1), 1))


class Masked(nn.Module):
    """Attention with a padding mask as torch exports it: Less / Greater / Equal, Not, Where (a
    masked_fill with -inf, and a select between two float branches), Cast of a mask."""

    def __init__(self):
        super().__init__()
        self.l = nn.Linear(4, 6)

    def forward(self, x):                                       # x (N, 5, 4)
        h = self.l(x)
        scores = h.matmul(h.transpose(1, 2))                    # (N, 5, 5)
        mask = x[:, :, :1].transpose(1, 2) > 1.2                # Greater: (N, 1, 5)
        att = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
        y = torch.where(~(h < 0), h * 2.0, -h)                  # Less, Not, Where
        return att.matmul(y).flatten(1) + (x[:, :, 1:2] == 0.5).float().sum(dim=1)  # Equal, Cast


class NearMiss(nn.Module):
    """Patterns one step away from what the graph layer fuses at load (core/graph/fuse.c), so none of
    them may be fused: a MatMul + Add whose bias is 2-D, GELU's form with 1.5 for sqrt 2, a LayerNorm decomposition whose centred
    value is read a third time, and one whose variance uses Pow 3. test_onnx checks nothing here is
    fused and that the node-by-node run still matches torch."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(4, 8) * 0.5)
        self.b2 = nn.Parameter(torch.randn(5, 8) * 0.1)      # (5, 8): not a bias row
        self.g = nn.Parameter(1.0 + 0.1 * torch.randn(8))
        self.b = nn.Parameter(0.1 * torch.randn(8))

    def forward(self, x):                                       # x (N, 5, 4)
        h = x.matmul(self.w) + self.b2
        h = h * 0.5 * (1.0 + torch.erf(h / 1.5))                # erf(x / 1.5): not GELU
        d = h - h.mean(-1, keepdim=True)
        v = d.pow(2).mean(-1, keepdim=True)
        h = d / torch.sqrt(v + 1e-5) * self.g + self.b + 0.5 * d   # d has a third reader
        d = h - h.mean(-1, keepdim=True)
        v = d.pow(3).mean(-1, keepdim=True)                     # Pow 3, not 2
        return d / torch.sqrt(v.abs() + 1.0) * self.g + self.b


class ConvAct(nn.Module):
    """Conv + activation as the graph layer fuses it (core/graph/fuse.c): Conv + ReLU6 (Clip 0, 6;
    mobilenet's), a depthwise Conv + ReLU6, a 1x1 Conv + clamp(min) (Clip without max), and near
    misses (not fused): a Mul between the Conv and its Clip, a strided Conv whose output the Relu
    and an Add both read."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, padding=1)
        self.c2 = nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.c3 = nn.Conv2d(8, 6, 1)
        self.c4 = nn.Conv2d(6, 4, 3, stride=2)

    def forward(self, x):                                       # x (N, 3, 7, 7)
        h = F.relu6(self.c1(x))
        h = F.relu6(self.c2(h) * 0.5)                           # near miss: a Mul between Conv and Clip
        h = F.relu6(self.c2(h))                                 # the depthwise weights again, fused
        h = torch.clamp(self.c3(h), min=-0.5)
        c = self.c4(h)
        return torch.relu(c) + 0.5 * c                         # c has a second reader


class ConvAdd(nn.Module):
    """Conv + residual Add as the graph layer fuses it (core/graph/fuse.c): mobilenet_v2's inverted
    residual (x + pointwise conv, the residual first, torchvision's order), conv + x (the residual
    second) for a padded 3x3, a bias-free 1x1 and a depthwise 3x3, a residual that broadcasts (a
    (4, 1, 1) parameter: fused, run as Conv then Add); near misses (not fused): a Conv whose output
    the Add and a Mul both read, a Conv + ReLU (fused as that) before an Add."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(4, 16, 1)
        self.c2 = nn.Conv2d(16, 16, 3, padding=1, groups=16)
        self.c3 = nn.Conv2d(16, 4, 1)
        self.c4 = nn.Conv2d(4, 4, 3, padding=1)
        self.c5 = nn.Conv2d(4, 4, 1, bias=False)
        self.c6 = nn.Conv2d(4, 4, 3, padding=1, groups=4)
        self.c7 = nn.Conv2d(4, 4, 1)
        self.c8 = nn.Conv2d(4, 4, 1)
        self.c9 = nn.Conv2d(4, 4, 1)
        self.p = nn.Parameter(torch.tensor(rng.standard_normal((4, 1, 1)).astype("float32")))

    def forward(self, x):                                       # x (N, 4, 7, 7)
        h = self.c2(self.c1(x))                                 # (no ReLU6: its kinks would move SGD off torch's)
        x = x + self.c3(h)                                      # fused, residual first
        x = self.c4(x) + x                                      # fused, residual second
        x = self.c5(x) + x                                      # fused, no bias
        x = self.c6(x) + x                                      # fused, depthwise
        x = self.c7(x) + self.p                                 # fused, the residual broadcasts
        c = self.c8(x)
        x = c + x + 0.5 * c                                     # near miss: c has a second reader
        return torch.relu(self.c9(x)) + x                       # near miss: Conv + Relu, then Add


class FFN(nn.Module):
    """A transformer's feed-forward block on (N, 5, 8): Linear, F.gelu (its Erf form), Linear; the
    graph layer fuses the first Linear with the GELU and the second Linear."""

    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(8, 16), nn.Linear(16, 8)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class Acts(nn.Module):
    """The activations mobilenet_v3 and friends export (torch 1.13): Hardswish (HardSwish at opset 14,
    HardSigmoid + Mul at 13), Hardsigmoid (HardSigmoid, alpha 1/6), F.mish (Softplus, Tanh, Mul;
    the ONNX Mish node with mish_node; Debian's onnx 1.13 knows no opset 18, so it goes unchecked) and F.softplus (Softplus), on inputs scaled to cross their
    kinks (+-3) and reach softplus's tails."""

    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(6, 8), nn.Linear(8, 8), nn.Linear(8, 6)

    def forward(self, x):                                       # x (N, 6)
        h = F.hardswish(self.fc1(x) * 3)
        g = F.hardsigmoid(self.fc2(h) * 3)
        return F.mish(self.fc3(h * g) * 3) + F.softplus(x * 8)


class Pieces(nn.Module):
    """The parametrised piecewise activations on (N, 4, 5): nn.PReLU(4) (its slope (4, 1) broadcast over
    the last axis, a trainable param) and nn.PReLU() (one slope), F.elu (alpha 0.7), F.selu, F.celu
    (alpha 0.6) and F.softsign (x / (1 + |x|) as torch exports it; one Softsign node with
    softsign_node)."""

    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.fc3, self.fc4 = nn.Linear(5, 8), nn.Linear(8, 8), nn.Linear(8, 8), nn.Linear(8, 8)
        self.fc5 = nn.Linear(8, 5)
        self.p4, self.p1 = nn.PReLU(4), nn.PReLU()
        with torch.no_grad():
            self.p4.weight.copy_(torch.tensor([0.1, -0.3, 0.7, 1.5]))

    def forward(self, x):                                       # x (N, 4, 5)
        a = self.p4(self.fc1(x) * 2)
        b = F.elu(self.fc2(a) * 2, alpha=0.7)
        c = F.selu(self.fc3(b) * 2)
        d = F.celu(self.fc4(c) * 2, alpha=0.6)
        return self.p1(self.fc5(d) * 2) + F.softsign(x * 3)


def mish_node(data):
    """The model with torch's mish (Mul(a, Tanh(Softplus(a)))) as one ONNX Mish node (opset 18)."""
    import onnx

    m = onnx.load_from_string(data)
    nodes = list(m.graph.node)
    made = {o: n for n in nodes for o in n.output}
    for n in nodes:
        if n.op_type != "Mul":
            continue
        t = made.get(n.input[1])
        sp = made.get(t.input[0]) if t is not None and t.op_type == "Tanh" else None
        if sp is None or sp.op_type != "Softplus" or sp.input[0] != n.input[0]:
            continue
        mish = onnx.helper.make_node("Mish", [n.input[0]], list(n.output), name=n.name + "_mish")
        i = list(m.graph.node).index(n)
        for dead in (n, t, sp):
            m.graph.node.remove(dead)
        m.graph.node.insert(i - 2, mish)
    assert any(n.op_type == "Mish" for n in m.graph.node)
    m.opset_import[0].version = 18
    return m.SerializeToString()


class Thresh(nn.Module):
    """F.threshold(h, 0.3, 0) (which torch cannot export: exported as F.relu, then rewritten to
    ThresholdedRelu alpha 0.3 by thresholded_node) and torch.sign (Sign; no gradient)."""

    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(6, 8), nn.Linear(8, 6)

    def forward(self, x):                                       # x (N, 6)
        h = self.fc1(x) * 2
        h = F.relu(h) if torch.onnx.is_in_onnx_export() else F.threshold(h, 0.3, 0.0)
        return self.fc2(h) + torch.sign(x) * 0.5


def thresholded_node(data):
    import onnx

    m = onnx.load_from_string(data)
    (relu,) = [n for n in m.graph.node if n.op_type == "Relu"]
    relu.op_type = "ThresholdedRelu"
    relu.attribute.append(onnx.helper.make_attribute("alpha", 0.3))
    onnx.checker.check_model(m)
    return m.SerializeToString()


def softsign_node(data):
    """The model with torch's softsign (Div(a, Add(Abs(a), 1))) as one ONNX Softsign node."""
    import onnx

    m = onnx.load_from_string(data)
    made = {o: n for n in m.graph.node for o in n.output}
    for n in list(m.graph.node):
        add = made.get(n.input[1]) if n.op_type == "Div" else None
        ab = made.get(add.input[0]) if add is not None and add.op_type == "Add" else None
        if ab is None or ab.op_type != "Abs" or ab.input[0] != n.input[0]:
            continue
        i = list(m.graph.node).index(n)
        m.graph.node.insert(i, onnx.helper.make_node("Softsign", [n.input[0]], list(n.output), name=n.name + "_softsign"))
        for dead in (n, add, ab):
            m.graph.node.remove(dead)
    assert any(n.op_type == "Softsign" for n in m.graph.node)
    onnx.checker.check_model(m)
    return m.SerializeToString()


class Tied(nn.Module):
    """One parameter feeding two consumers (one initializer, two nodes in the graph), as torch's
    exporter writes tied or equal-valued weights: the graph layer must accumulate both
    consumers' gradients into it (issue 30's surviving mutant overwrote the first with the second).
    kind: "mm" 2-D MatMul, "gemm" Linear (Gemm), "bmm" batched MatMul, "conv" Conv."""

    def __init__(self, kind):
        super().__init__()
        self.kind = kind
        if kind in ("mm", "bmm"):
            self.W = nn.Parameter(torch.randn(4, 4) * 0.5)
        elif kind == "gemm":
            self.fc = nn.Linear(6, 6)
        else:
            self.c = nn.Conv2d(3, 3, 3, padding=1)

    def forward(self, x):
        if self.kind in ("mm", "bmm"):
            return torch.tanh(x @ self.W) @ self.W
        if self.kind == "gemm":
            return self.fc(torch.tanh(self.fc(x)))
        return self.c(torch.relu(self.c(x)))


def export(name, model, x, opset, lr=0.1, steps=10, rewrite=None):
    data = torch_onnx_bytes(model, x, opset, dynamic_batch=True)
    if rewrite:
        data = rewrite(data)
    # ten SGD steps on the same loss and batch (eval mode: BatchNorm uses its running statistics),
    # unless a fused Conv+BatchNorm renamed the weights (they train differently from torch's)
    torch_goldens(name, model, x, data, rng, lr, steps)


def randx(*shape):
    return torch.tensor(rng.standard_normal(shape).astype("float32"))


for opset in (11, 13, 17):
    torch.manual_seed(1)
    export(f"mlp{opset}", MLP(), randx(7, 6), opset)

torch.manual_seed(2)
lenet = LeNet()
with torch.no_grad():  # running statistics that are not the identity
    lenet.bn.running_mean.copy_(torch.tensor(rng.standard_normal(8).astype("float32")) * 0.1)
    lenet.bn.running_var.copy_(torch.tensor(rng.uniform(0.5, 1.5, 8).astype("float32")))
export("lenet", lenet, randx(3, 1, 12, 12), 13, lr=0.05)

for opset in (13, 17):
    torch.manual_seed(3)
    export(f"mixer{opset}", Mixer(), randx(4, 5, 4), opset, lr=0.05)

torch.manual_seed(4)
encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, dropout=0.0,
                                                           batch_first=True), num_layers=2)
with torch.no_grad():  # TransformerEncoder clones one layer: make the copies differ, or torch.onnx.export
    for p in encoder.parameters():  # keeps one initializer for equal weights (tied in the graph)
        p.add_(torch.tensor(rng.standard_normal(tuple(p.shape)).astype("float32")) * 0.1)
export("encoder", encoder, randx(3, 5, 8), 13, lr=0.05)

torch.manual_seed(5)
resblock = ResBlock()
with torch.no_grad():
    for bn in (resblock.b1, resblock.b2):
        bn.running_mean.copy_(torch.tensor(rng.standard_normal(4).astype("float32")) * 0.1)
        bn.running_var.copy_(torch.tensor(rng.uniform(0.5, 1.5, 4).astype("float32")))
export("resblock", resblock, randx(2, 3, 8, 8), 13)

torch.manual_seed(6)
export("decoder", Decoder(), randx(2, 2, 6, 6), 13, lr=0.1)

torch.manual_seed(7)
export("masked", Masked(), randx(3, 5, 4), 13, lr=0.01)

torch.manual_seed(8)
export("nearmiss", NearMiss(), randx(3, 5, 4), 13, lr=0.01)

torch.manual_seed(9)
export("ffn", FFN(), randx(3, 5, 8), 13, lr=0.01)

torch.manual_seed(10)
export("mobile", Mobile(), randx(2, 3, 16, 16), 13, lr=0.01)

torch.manual_seed(11)
export("convact", ConvAct(), randx(2, 3, 7, 7), 13, lr=0.01)

torch.manual_seed(12)
export("convadd", ConvAdd(), randx(2, 4, 7, 7), 13, lr=0.0002)

# tied weights: one initializer, two consumers (MatMul, Gemm, batched MatMul, Conv)
for i, (kind, shape) in enumerate((("mm", (5, 4)), ("gemm", (5, 6)), ("bmm", (3, 5, 4)), ("conv", (2, 3, 6, 6)))):
    torch.manual_seed(20 + i)
    export(f"tied_{kind}", Tied(kind), randx(*shape), 13, lr=0.05)

# the activation models draw x from their own stream, so models added before them leave their data
# (checked for kinks within the finite differences' step: pieces with seed 41 has 7 of 68 estimates
# straddling a PRelu / Elu / Celu kink, seed 32 none) as it is
def own_x(seed, *shape):
    return torch.tensor(numpy.random.RandomState(seed).standard_normal(shape).astype("float32"))


# lr 0.005: at 0.01 (on the data acts13 first had) a HardSigmoid input met a kink in the fifth
# step and torch's own float32 and float64 runs ended 7e-5 apart; at 0.005, within 2e-6
for opset in (13, 14):
    torch.manual_seed(13)
    export(f"acts{opset}", Acts(), own_x(31, 5, 6), opset, lr=0.005)
torch.manual_seed(13)
export("mish18", Acts(), own_x(31, 5, 6), 17, lr=0.005, rewrite=mish_node)
torch.manual_seed(14)
export("pieces", Pieces(), own_x(32, 3, 4, 5), 13, lr=0.001)  # at 0.005 torch itself diverges
torch.manual_seed(14)
export("pieces17", Pieces(), own_x(32, 3, 4, 5), 17, lr=0.001, rewrite=softsign_node)
torch.manual_seed(15)
export("thresh", Thresh(), own_x(33, 5, 6), 13, lr=0.01, rewrite=thresholded_node)


# ---- Conv + HardSwish / HardSigmoid / Sigmoid fusion (issue 23's speed: mobilenet_v3) ----
class ConvHardSwish(nn.Module):
    """Conv + activation as the graph layer fuses it for mobilenet_v3 (core/graph/fuse.c): the
    stem's strided Conv + Hardswish (opset 13 exports Mul(z, HardSigmoid(z)), opset 14 HardSwish),
    a depthwise Conv + Hardswish, the squeeze-excite gate's 1x1 Conv + Hardsigmoid, a Conv +
    Sigmoid; near misses (not fused): a Conv whose output Hardswish and an Add both read, a
    Hardsigmoid read by the Mul and an Add. Weights scaled so the activations' inputs span their
    kinks at -3 and 3."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.c2 = nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.c3 = nn.Conv2d(8, 8, 1)
        self.c4 = nn.Conv2d(8, 6, 1)
        self.c5 = nn.Conv2d(6, 6, 3, padding=1)
        self.c6 = nn.Conv2d(6, 4, 1)
        with torch.no_grad():
            for c in (self.c1, self.c2, self.c3, self.c5, self.c6):
                c.weight.mul_(4.0)

    def forward(self, x):                                       # x (N, 3, 9, 9)
        h = F.hardswish(self.c1(x))                             # fused, stride 2
        h = F.hardswish(self.c2(h))                             # fused, depthwise
        h = h * F.hardsigmoid(self.c3(F.adaptive_avg_pool2d(h, 1)))  # the gate's Conv fused
        h = torch.sigmoid(self.c4(h))                           # fused
        c = self.c5(h)
        h = F.hardswish(c) + c                                  # near miss: c has a third reader
        c = self.c6(h)
        s = F.hardsigmoid(c)
        return c * s + s                                        # near miss: s has a second reader


for opset in (13, 14):
    torch.manual_seed(16)
    export(f"convhswish{opset}", ConvHardSwish(), own_x(34, 2, 3, 9, 9), opset, lr=0.002)


# ---- new gradients written, not zeroed and added to (issue 29's training speed) ----
class FanOut(nn.Module):
    """Values read twice by one node and by several nodes, so each of the graph layer's
    new-gradient paths (core/graph/graph.c's lithe__gexec_grad_fresh / _grad_add: the first
    writer of a gradient writes or hands over its result, the next ones add) meets a gradient
    that already has a value: Add(h, h), MatMul(s, sᵀ) and MatMul(s, s)-style reads, overlapping
    Slices of one value, a Linear whose input also feeds a residual Add and a LayerNorm, Softmax
    and Transpose outputs read twice, a Reshape fanned out."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 6)
        self.ln = nn.LayerNorm(6)

    def forward(self, x):                          # x (B, 4, 6)
        h = self.fc(x)
        a = h + h                                  # Add: one value both sides
        s = torch.softmax(a, -1)
        st = s.transpose(1, 2)                     # (B, 6, 4), read by two MatMuls
        m = s @ st                                 # (B, 4, 4)
        q = h[..., :4] * h[..., 2:]                # overlapping Slices of h
        r = self.ln(a + x) + m @ s                 # residual Add, LayerNorm
        f = self.fc(r)                             # the Linear's weight read twice (tied)
        v = f.reshape(f.shape[0], 24)
        return torch.cat([(m + q).reshape(f.shape[0], 16), v, v * st.reshape(f.shape[0], 24)], -1)


torch.manual_seed(16)
export("fanout", FanOut(), own_x(35, 3, 4, 6), 13, lr=0.01)


class Heads(nn.Module):
    """Attention's Q / K / V slices of one product as torch's MultiheadAttention exports them (T, B, E):
    their gradients written region by region (core/graph/graph.c's lithe__gexec_grad_region), with a
    part of the product no slice reads (its gradient zeroed when the Linear reads it); a product
    read whole by a node before its slices (whose backward so comes after theirs: the regions
    written, the gap 12:14 zeroed, then the whole added); and the scaling Div after Q's heads
    Transpose and a Mul after another Transpose (moved before them at load: core/graph/fuse.c's
    try_scalar_first, so Q's Transpose folds into the MatMul)."""

    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(6, 20)  # q 0:6, k 6:12, v 12:18; 18:20 read by no slice
        self.kv = nn.Linear(6, 14)   # 0:6, 6:12 sliced, all of it read by the mean first
        self.out = nn.Linear(6, 3)

    def forward(self, x):                          # x (T, B, 6)
        t, b = x.shape[0], x.shape[1]
        g = self.kv(x)
        m = g.pow(2).mean(-1, keepdim=True)
        h = self.qkv(x)
        q, k, v = h[..., 0:6], h[..., 6:12], h[..., 12:18]
        q = q.reshape(t, b * 2, 3).transpose(0, 1) / math.sqrt(3.0)
        k = k.reshape(t, b * 2, 3).transpose(0, 1)
        v = v.reshape(t, b * 2, 3).transpose(0, 1)
        o = (torch.softmax(q @ k.transpose(1, 2), -1) @ v).transpose(0, 1).reshape(t, b, 6)
        w = (g[..., 6:12].transpose(0, 1) * 0.5).transpose(0, 1)
        return self.out(o + g[..., 0:6] * w + m)


torch.manual_seed(17)
export("heads", Heads(), own_x(36, 4, 3, 6), 13, lr=0.002)



def external_data_files(folder):
    """lenet saved by onnx.save_model(..., save_as_external_data=True) into folder/: one data file
    for every tensor (lenet.onnx + lenet.data) and one file per tensor (lenet_split.onnx); and
    hostile copies whose external_data entries name an absolute path, a '..' escape, an offset or a
    length past the file, a length that is not the tensor's size, and a missing file
    (lenet_<case>.onnx)."""
    import onnx

    os.makedirs(folder, exist_ok=True)
    for f in os.listdir(folder):
        os.remove(os.path.join(folder, f))
    model = onnx.load_from_string(bytes(lenet_bytes))
    onnx.save_model(model, os.path.join(folder, "lenet.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="lenet.data", size_threshold=0)
    model = onnx.load_from_string(bytes(lenet_bytes))
    onnx.save_model(model, os.path.join(folder, "lenet_split.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=False, size_threshold=0)
    # the hostile cases: lenet.onnx (external, not loaded) with one tensor's entries changed
    base = onnx.load(os.path.join(folder, "lenet.onnx"), load_external_data=False)
    size = os.path.getsize(os.path.join(folder, "lenet.data"))
    cases = {"absolute": {"location": os.path.abspath(os.path.join(folder, "lenet.data"))},
             "escape": {"location": "../onnx_external/lenet.data"},
             "offset": {"offset": str(size + 8)},
             "length": {"length": str(size * 2)},
             "size": {"length": "4"},
             "missing": {"location": "nowhere.data"}}
    for case, change in cases.items():
        m = onnx.ModelProto()
        m.CopyFrom(base)
        t = next(t for t in m.graph.initializer if t.name == "fc1.weight")
        for entry in t.external_data:
            if entry.key in change:
                entry.value = change.pop(entry.key)
        for key, value in change.items():
            t.external_data.add(key=key, value=value)
        with open(os.path.join(folder, f"lenet_{case}.onnx"), "wb") as f:
            f.write(m.SerializeToString())


lenet_bytes = next(r for r in records if r.startswith("lenet.onnx ")).split("\n")[1].split()
lenet_bytes = [int(v) for v in lenet_bytes]
external_data_files(os.path.join(os.path.dirname(os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                                                                  "onnx_goldens.txt")), "onnx_external"))

write("gen_onnx_goldens.py", "onnx_goldens.txt")
