#!/usr/bin/python3
"""Golden values from PyTorch 1.13 (Debian's python3-torch) for tests/test_onnx_spatial.c (issue 23
items 3-5): the convolution family in 1-D and 3-D, the normalizations and the resampling operators,
as torch.onnx.export writes them, with torch's outputs, autograd gradients and SGD steps.

    /usr/bin/python3 tests/golden/gen_onnx_spatial_goldens.py OUT.txt

Records per model NAME as gen_onnx_goldens.py writes them: NAME.onnx, .x, .y, .r (loss = sum(y r)),
.dx, .grad.<param>, .n_params and, when the graph keeps every parameter, .lr, .losses and
.sgd.<param> after ten SGD steps. NAME.tol, when present, is the output tolerance the test uses
(the distance float32 torch is from a float64 torch run, where that is larger than 1e-4).
"""
import sys

import numpy

from golden_records import rec, torch_goldens, torch_onnx_bytes, write

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError as e:
    sys.exit(f"gen_onnx_spatial_goldens.py: {e}; install Debian's python3-torch and run with /usr/bin/python3")

rng = numpy.random.RandomState(23)


def export(name, model, x, opset=13, lr=0.05, steps=10, rewrite=None):
    data = torch_onnx_bytes(model, x, opset, dynamic_batch=True)
    if rewrite:
        data = rewrite(data)
    goldens(name, model, x, data, lr, steps)


def goldens(name, model, x, data, lr=0.05, steps=10):
    """The records of a model whose graph (bytes) computes what model does, parameters named alike."""
    torch_goldens(name, model, x, data, rng, lr, steps)


def randx(*shape):
    return torch.tensor(rng.standard_normal(shape).astype("float32"))


class TextCNN(nn.Module):
    """The issue's motivating case: a Conv1d text classifier (embeddings in, (N, E, L)): Conv1d +
    ReLU + max over time (AdaptiveMaxPool1d(1): GlobalMaxPool) + Linear."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(16, 24, 5, padding=2)
        self.fc = nn.Linear(24, 3)

    def forward(self, x):
        return self.fc(F.adaptive_max_pool1d(torch.relu(self.conv(x)), 1).flatten(1))


class Conv1d(nn.Module):
    """1-D windows: Conv1d (padding, stride, dilation, groups), MaxPool1d, AvgPool1d (padding,
    count_include_pad both ways, ceil_mode), ConvTranspose1d (stride, output_padding), GlobalAveragePool."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv1d(6, 8, 3, padding=1)
        self.c2 = nn.Conv1d(8, 8, 3, stride=2, dilation=2, groups=2, padding=2)
        self.up = nn.ConvTranspose1d(8, 4, 3, stride=2, padding=1, output_padding=1)
        self.fc = nn.Linear(4 * 2, 3)

    def forward(self, x):
        h = F.max_pool1d(torch.tanh(self.c1(x)), 2)                       # (N, 8, 10)
        h = F.avg_pool1d(self.c2(h), 3, stride=1, padding=1, count_include_pad=False)  # (N, 8, 5)
        h = F.avg_pool1d(h, 2, ceil_mode=True, count_include_pad=True) * 1.5  # (N, 8, 3)
        h = torch.tanh(self.up(h))                                           # (N, 4, 6)
        return self.fc(torch.cat([F.adaptive_avg_pool1d(h, 1), F.max_pool1d(h, 3, stride=3)[:, :, :1]], 1).flatten(1))


class Conv3d(nn.Module):
    """3-D windows: Conv3d (padding, stride, groups, dilation), ConvTranspose3d (stride, padding,
    output_padding, groups), MaxPool3d, AvgPool3d (padding,
    count_include_pad both ways), GlobalAveragePool / GlobalMaxPool on 5-D inputs."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv3d(2, 4, 3, padding=1)
        self.c2 = nn.Conv3d(4, 4, (2, 3, 3), stride=(1, 2, 1), groups=2, dilation=(1, 1, 2), padding=1)
        self.up = nn.ConvTranspose3d(4, 4, (2, 3, 3), stride=(2, 1, 2), padding=(0, 1, 1), output_padding=(1, 0, 1),
                                     groups=2)
        self.fc = nn.Linear(8, 3)

    def forward(self, x):
        h = F.max_pool3d(torch.tanh(self.c1(x)), 2)                         # (N, 4, 3, 4, 4)
        h = self.c2(h)                                                       # (N, 4, 4, 2, 2)
        h = torch.tanh(self.up(h))                                           # (N, 4, 9, 2, 4)
        h = F.avg_pool3d(h, 2, stride=1, padding=1, count_include_pad=False) + \
            F.avg_pool3d(h, 2, stride=1, padding=1, count_include_pad=True)  # (N, 4, 5, 3, 3)
        h = torch.tanh(h)
        return self.fc(torch.cat([F.adaptive_avg_pool3d(h, 1), F.adaptive_max_pool3d(h, 1)], 1).flatten(1))


torch.manual_seed(1)
export("textcnn", TextCNN(), randx(4, 16, 20), lr=0.05)
torch.manual_seed(2)
export("conv1d", Conv1d(), randx(3, 6, 20))
torch.manual_seed(3)
export("conv3d", Conv3d(), randx(2, 2, 6, 8, 8))


# ---- Resize against the ONNX project's float64 reference (onnx.backend.test.case.node.resize,
# the interpolation its backend tests are made from): one-node graphs, roi / scales / sizes as
# Constant nodes (torch's way: not parameters). The gradient is the reference's Jacobian (Resize
# is linear in X: column i is the reference applied to the i-th unit input) times r. ----
import onnx  # noqa: E402
from onnx import helper, TensorProto  # noqa: E402
from onnx.backend.test.case.node import resize as onnx_resize  # noqa: E402


def const(name, arr, dtype):
    t = helper.make_tensor(name, dtype, arr.shape, arr.ravel().tolist())
    return helper.make_node("Constant", [], [name], value=t)


def one_node(op, x, y_shape, attrs, consts, opset):
    nodes = [const(n, a, d) for n, a, d in consts if a is not None]
    inputs = ["x"] + [n if a is not None else "" for n, a, _ in consts]
    while inputs and inputs[-1] == "":
        inputs.pop()
    nodes.append(helper.make_node(op, inputs, ["y"], **attrs))
    g = helper.make_graph(nodes, op.lower(), [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(y_shape))])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="gen_onnx_spatial_goldens")
    return m.SerializeToString()


def reference_case(name, x, ref, onnx_bytes):
    """Goldens for a graph without parameters: y = ref(x) (float64), dx = J(ref)^T r."""
    x64 = x.astype("float64")
    y = ref(x64)
    r = rng.standard_normal(y.shape).astype("float32")
    dx = numpy.zeros(x.size)
    for i in range(x.size):
        e = numpy.zeros(x.size)
        e[i] = 1
        dx[i] = (ref(e.reshape(x.shape)) * r).sum()
    rec(f"{name}.onnx", numpy.frombuffer(onnx_bytes, dtype=numpy.uint8))
    rec(f"{name}.x", x)
    rec(f"{name}.y", y)
    rec(f"{name}.r", r)
    rec(f"{name}.dx", dx.reshape(x.shape))
    rec(f"{name}.n_params", numpy.array([0]))


def resize_case(name, mode, coord="half_pixel", nearest="round_prefer_floor", scales=None, sizes=None, roi=None,
                cubic_a=-0.75, exclude=0, opset=13, op="Resize", shape=(1, 1, 4, 5)):
    x = rng.standard_normal(shape).astype("float32")
    get = {"nearest": lambda r, s=None: onnx_resize.nearest_coeffs(r, mode=nearest),
           "linear": lambda r, s=None: onnx_resize.linear_coeffs(r),
           "cubic": lambda r, s=None: onnx_resize.cubic_coeffs(r, A=cubic_a)}[mode]
    sc = None if scales is None else numpy.array(scales, dtype="float32")
    sz = None if sizes is None else numpy.array(sizes, dtype="int64")
    rz = None if roi is None else numpy.array(roi, dtype="float32")

    def ref(d):
        return onnx_resize.interpolate_nd(d, get, output_size=None if sz is None else sz.tolist(),
                                          scale_factors=None if sc is None else sc.astype("float64"),
                                          roi=rz, coordinate_transformation_mode=coord, exclude_outside=exclude)

    y_shape = ref(x.astype("float64")).shape
    attrs = {"mode": mode}
    if op == "Resize" and opset >= 11:
        attrs.update(coordinate_transformation_mode=coord, nearest_mode=nearest, cubic_coeff_a=cubic_a,
                     exclude_outside=exclude)
        consts = [("roi", rz if rz is not None else numpy.zeros(0, "float32"), TensorProto.FLOAT),
                  ("scales", sc if sc is not None else numpy.zeros(0, "float32"), TensorProto.FLOAT),
                  ("sizes", sz, TensorProto.INT64)]
        if sz is None:
            consts = consts[:2]
    else:  # Resize-10 / Upsample-9: (X, scales)
        consts = [("scales", sc, TensorProto.FLOAT)]
    reference_case(name, x, ref, one_node(op, x, y_shape, attrs, consts, opset))


RESIZE_CASES = []


def resize(name, *a, **k):
    RESIZE_CASES.append(name)
    resize_case(name, *a, **k)


for nm in ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil"):
    short = nm.replace("round_prefer_", "rp")
    resize(f"rs_near_{short}_up", "nearest", "half_pixel", nm, scales=[1, 1, 2, 1.5])
    resize(f"rs_near_{short}_down", "nearest", "asymmetric", nm, scales=[1, 1, 0.6, 0.8])
    resize(f"rs_near_{short}_ac", "nearest", "align_corners", nm, sizes=[1, 1, 7, 3])
for c in ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"):
    resize(f"rs_lin_{c}_up", "linear", c, scales=[1, 1, 2, 2.4])  # align_corners: scale x in integral (lithe, as onnxruntime, uses the output extent)
    resize(f"rs_lin_{c}_down", "linear", c, sizes=[1, 1, 3, 1])
resize("rs_lin_tfcrop", "linear", "tf_crop_and_resize", sizes=[1, 1, 5, 4], roi=[0, 0, 0.1, 0.2, 1, 1, 0.8, 1.2])
for c in ("half_pixel", "align_corners", "asymmetric"):
    resize(f"rs_cub_{c}_up", "cubic", c, scales=[1, 1, 2, 1.6])
resize("rs_cub_excl", "cubic", "half_pixel", scales=[1, 1, 1.5, 0.8], cubic_a=-0.5, exclude=1)
resize("rs_cub_down", "cubic", "pytorch_half_pixel", sizes=[1, 1, 3, 3])
resize("rs_lin_3d", "linear", "half_pixel", scales=[1, 1, 2, 1.5, 0.5], shape=(1, 1, 2, 3, 4))
resize("rs_lin_1d", "linear", "align_corners", sizes=[1, 2, 9], shape=(1, 2, 5))
resize("rs10_near", "nearest", "asymmetric", "floor", scales=[1, 1, 2, 3], opset=10)
resize("rs10_lin", "linear", "asymmetric", scales=[1, 1, 2, 1.5], opset=10)
resize("up9_near", "nearest", "asymmetric", "floor", scales=[1, 1, 2, 2], opset=9, op="Upsample")
rec("resize_cases", numpy.array([len(RESIZE_CASES)]))


# ---- torch models: resampling and normalization layers as torch.onnx.export writes them ----


class Resampling(nn.Module):
    """nn.Upsample nearest (scale 2), bilinear with align_corners both ways (sizes from Shape /
    Concat), bicubic downsampling; PixelShuffle (DepthToSpace) and PixelUnshuffle."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(2, 8, 3, padding=1)
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.c2 = nn.Conv2d(8, 4, 3, padding=1)
        self.shuffle = nn.PixelShuffle(2)
        self.unshuffle = nn.PixelUnshuffle(2)
        self.fc = nn.Linear(4 * 3 * 3, 3)

    def forward(self, x):
        h = torch.tanh(self.up(self.c1(x)))                                    # (N, 8, 10, 12)
        h = self.c2(h)                                                         # (N, 4, 10, 12)
        h = F.interpolate(h, size=(7, 9), mode="bilinear", align_corners=False) + \
            F.interpolate(h, size=(7, 9), mode="bilinear", align_corners=True)
        h = torch.tanh(F.interpolate(h, scale_factor=2, mode="bilinear", align_corners=False))  # (N, 4, 14, 18)
        h = self.unshuffle(self.shuffle(h[:, :, :12, :12]) * 1.5)              # (N, 4, 12, 12)
        h = F.interpolate(h, size=(3, 3), mode="bicubic", align_corners=False)
        return self.fc(h.flatten(1))


class Norms(nn.Module):
    """nn.InstanceNorm2d (affine and not), nn.GroupNorm (torch 1.13: Reshape, InstanceNormalization,
    Reshape, Mul, Add), nn.InstanceNorm2d without affine. (nn.LocalResponseNorm exports as a
    decomposition with an If: the LRN node is tested by the hand-built graph below.)"""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, padding=1)
        self.inorm = nn.InstanceNorm2d(8, affine=True)
        self.gnorm = nn.GroupNorm(4, 8)
        self.plain = nn.InstanceNorm2d(8)
        self.fc = nn.Linear(8, 3)

    def forward(self, x):
        h = torch.relu(self.inorm(self.c1(x)))
        h = torch.tanh(self.gnorm(h))
        h = self.plain(h * 2.0).flatten(2)                                    # (N, 8, H W)
        return self.fc(h[:, :, ::3].mean(2))


torch.manual_seed(4)
res = Resampling()
export("resampling", res, randx(2, 2, 5, 6), lr=0.01)
torch.manual_seed(4)
export("resampling11", Resampling(), randx(2, 2, 5, 6), opset=11, lr=0.01)
torch.manual_seed(5)
norms = Norms()
with torch.no_grad():  # affine parameters that are not the identity
    for p_ in (norms.inorm.weight, norms.inorm.bias, norms.gnorm.weight, norms.gnorm.bias):
        p_.add_(0.3 * torch.randn(p_.shape))
export("norms", norms, randx(2, 3, 6, 7), lr=0.02)


class GroupNorm18(nn.Module):
    """GroupNormalization-18 (scale and bias per group) and -21's per-channel form, hand-built:
    Conv, GroupNormalization(num_groups 2), Tanh, GroupNormalization(num_groups 4, per channel)."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(0.3 * torch.randn(8, 3, 3, 3))
        self.gs = nn.Parameter(1 + 0.3 * torch.randn(2))
        self.gb = nn.Parameter(0.3 * torch.randn(2))
        self.cs = nn.Parameter(1 + 0.3 * torch.randn(8))
        self.cb = nn.Parameter(0.3 * torch.randn(8))

    def forward(self, x):
        h = F.conv2d(x, self.w)
        h = F.group_norm(h, 2, self.gs.repeat_interleave(4), self.gb.repeat_interleave(4), eps=1e-3)
        return F.group_norm(torch.tanh(h), 4, self.cs, self.cb, eps=1e-5)

    def onnx(self):
        inits = [helper.make_tensor(n, TensorProto.FLOAT, p.shape, p.detach().numpy().ravel().tolist())
                 for n, p in self.named_parameters()]
        nodes = [helper.make_node("Conv", ["x", "w"], ["c"]),
                 helper.make_node("GroupNormalization", ["c", "gs", "gb"], ["g"], num_groups=2, epsilon=1e-3),
                 helper.make_node("Tanh", ["g"], ["t"]),
                 helper.make_node("GroupNormalization", ["t", "cs", "cb"], ["y"], num_groups=4)]
        g = helper.make_graph(nodes, "gn18", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 6, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 8, 4, 4])], inits)
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]).SerializeToString()


class LpMvn(nn.Module):
    """LpNormalization (p 2 over channels, p 1 over the last axis) and MeanVarianceNormalization
    (axes [2, 3], and the default [0, 2, 3]), hand-built; torch computes ONNX's definitions."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(0.3 * torch.randn(4, 2, 3, 3))

    def forward(self, x):
        h = F.conv2d(x, self.w)
        h = h / h.pow(2).sum(1, keepdim=True).sqrt()
        m = h.mean((2, 3), keepdim=True)
        h = (h - m) / ((h - m).pow(2).mean((2, 3), keepdim=True).sqrt() + 1e-9)
        h = torch.tanh(h) + 0.5
        h = h / h.abs().sum(-1, keepdim=True)
        m = h.mean((0, 2, 3), keepdim=True)
        return (h - m) / ((h - m).pow(2).mean((0, 2, 3), keepdim=True).sqrt() + 1e-9)

    def onnx(self):
        inits = [helper.make_tensor("w", TensorProto.FLOAT, self.w.shape, self.w.detach().numpy().ravel().tolist())]
        nodes = [const("half", numpy.array(0.5, "float32"), TensorProto.FLOAT),
                 helper.make_node("Conv", ["x", "w"], ["c"]),
                 helper.make_node("LpNormalization", ["c"], ["l"], axis=1, p=2),
                 helper.make_node("MeanVarianceNormalization", ["l"], ["m"], axes=[2, 3]),
                 helper.make_node("Tanh", ["m"], ["t"]),
                 helper.make_node("Add", ["t", "half"], ["a"]),
                 helper.make_node("LpNormalization", ["a"], ["p1"], axis=-1, p=1),
                 helper.make_node("MeanVarianceNormalization", ["p1"], ["y"])]
        g = helper.make_graph(nodes, "lpmvn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 2, 6, 7])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4, 4, 5])], inits)
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString()


class Lrn(nn.Module):
    """The LRN node itself (torch 1.13 exports nn.LocalResponseNorm as its decomposition), hand-built:
    Conv, LRN(size 3, alpha 0.5, beta 0.75, bias 1.5), Tanh, LRN(size 5, alpha 0.3). Odd sizes: for an
    even size torch centres the window one channel lower than ONNX's definition (and onnxruntime)."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(0.5 * torch.randn(6, 2, 3, 3))

    def forward(self, x):
        h = F.local_response_norm(F.conv2d(x, self.w), 3, alpha=0.5, beta=0.75, k=1.5)
        return F.local_response_norm(torch.tanh(h) * 3, 5, alpha=0.3)

    def onnx(self):
        inits = [helper.make_tensor("w", TensorProto.FLOAT, self.w.shape, self.w.detach().numpy().ravel().tolist())]
        nodes = [const("three", numpy.array(3.0, "float32"), TensorProto.FLOAT),  # a Constant: not trained
                 helper.make_node("Conv", ["x", "w"], ["c"]),
                 helper.make_node("LRN", ["c"], ["l"], size=3, alpha=0.5, beta=0.75, bias=1.5),
                 helper.make_node("Tanh", ["l"], ["t"]),
                 helper.make_node("Mul", ["t", "three"], ["m"]),
                 helper.make_node("LRN", ["m"], ["y"], size=5, alpha=0.3)]
        g = helper.make_graph(nodes, "lrn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 2, 6, 7])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 6, 4, 5])], inits)
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString()


torch.manual_seed(8)
lr_ = Lrn()
goldens("lrn", lr_, randx(2, 2, 6, 7), lr_.onnx(), lr=0.02)
class Blocks(nn.Module):
    """DepthToSpace in DCR mode (torch's PixelShuffle exports CRD), SpaceToDepth, LpPool (p 2 with
    pads and strides, p 1, 1-D), GlobalMaxPool on a 1-D input, hand-built; torch computes ONNX's
    definitions."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(0.4 * torch.randn(8, 2, 3, 3))
        self.v = nn.Parameter(0.4 * torch.randn(4, 8, 1, 1))

    def forward(self, x):
        h = F.conv2d(x, self.w, padding=1)                                     # (N, 8, 6, 6)
        n, c, hh, ww = h.shape
        h = h.view(n, 2, 2, c // 4, hh, ww).permute(0, 3, 4, 1, 5, 2).reshape(n, c // 4, hh * 2, ww * 2)  # DCR
        h = torch.tanh(h)                                                      # (N, 2, 12, 12)
        n, c, hh, ww = h.shape
        h = h.view(n, c, hh // 2, 2, ww // 2, 2).permute(0, 3, 5, 1, 2, 4).reshape(n, c * 4, hh // 2, ww // 2)
        h = F.conv2d(h, self.v)                                                # (N, 4, 6, 6)
        p2 = (F.avg_pool2d(h.abs() ** 2, 3, stride=2, padding=1, count_include_pad=True) * 9) ** 0.5  # (N, 4, 3, 3)
        p1 = F.avg_pool2d(h.abs(), 2, stride=2, count_include_pad=True) * 4  # (N, 4, 3, 3)
        f = (p1 + p2).flatten(2)
        q = (F.avg_pool1d(f ** 2, 3, stride=2) * 3) ** 0.5                    # (N, 4, 4)
        return q + f.amax(-1, keepdim=True)                                    # GlobalMaxPool, 1-D

    def onnx(self):
        inits = [helper.make_tensor(n, TensorProto.FLOAT, p.shape, p.detach().numpy().ravel().tolist())
                 for n, p in self.named_parameters()]
        nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
                 helper.make_node("DepthToSpace", ["c"], ["d"], blocksize=2, mode="DCR"),
                 helper.make_node("Tanh", ["d"], ["t"]),
                 helper.make_node("SpaceToDepth", ["t"], ["s"], blocksize=2),
                 helper.make_node("Conv", ["s", "v"], ["h"]),
                 helper.make_node("LpPool", ["h"], ["p2"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], p=2),
                 helper.make_node("LpPool", ["h"], ["p1"], kernel_shape=[2, 2], strides=[2, 2], p=1),
                 helper.make_node("Add", ["p1", "p2"], ["a"]),
                 const("shape", numpy.array([0, 4, 9], "int64"), TensorProto.INT64),
                 helper.make_node("Reshape", ["a", "shape"], ["f"]),
                 helper.make_node("LpPool", ["f"], ["q"], kernel_shape=[3], strides=[2]),
                 helper.make_node("GlobalMaxPool", ["f"], ["gm"]),
                 helper.make_node("Add", ["q", "gm"], ["y"])]
        g = helper.make_graph(nodes, "blocks", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 2, 6, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4, 4])], inits)
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString()


torch.manual_seed(9)
bl = Blocks()
goldens("blocks", bl, randx(2, 2, 6, 6), bl.onnx(), lr=0.01)
torch.manual_seed(6)
gn = GroupNorm18()
goldens("groupnorm18", gn, randx(2, 3, 6, 6), gn.onnx(), lr=0.02)
torch.manual_seed(7)
lm = LpMvn()
goldens("lpmvn", lm, randx(3, 2, 6, 7), lm.onnx(), lr=0.01)


class TwoUses(nn.Module):
    """Gradients fed by several backward contributions (issue 29: the first writer of a fresh
    gradient, a MaxPool's or a Conv's dX on the CPU, writes it instead of adding into zeros; the
    later ones add): h read by a MaxPool, a Conv and a ReduceMean, x by two Convs, m by two MaxPools
    (one with overlapping windows); a and b by one node each."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(2, 4, 3, padding=1)
        self.c2 = nn.Conv2d(4, 4, 3, padding=1)
        self.c3 = nn.Conv2d(2, 4, 5, padding=2)
        self.fc = nn.Linear(4 * 4 + 4 * 4 + 4, 3)

    def forward(self, x):                                          # (N, 2, 8, 8)
        h = torch.tanh(self.c1(x))                                 # (N, 4, 8, 8)
        a = F.max_pool2d(h, 2)                                     # (N, 4, 4, 4)
        b = F.max_pool2d(torch.tanh(self.c2(h) + self.c3(x)), 2)   # (N, 4, 4, 4)
        m = torch.tanh(a * b)
        p = F.max_pool2d(m, 2)                                     # (N, 4, 2, 2)
        q = F.max_pool2d(m, 3, stride=1, padding=1)[:, :, 1:3, 1:3]  # overlapping windows, (N, 4, 2, 2)
        return self.fc(torch.cat([p.flatten(1), q.flatten(1), h.mean((2, 3))], 1))


torch.manual_seed(29)
export("twouse", TwoUses(), randx(3, 2, 8, 8))

class ReluPool(nn.Module):
    """Conv + ReLU read by a max pool alone (issue 29: on the CPU the pool's indices carry the ReLU's
    backward, the fused Conv skips it): pools whose maximum is 0, zeros tied in windows of negatives
    (biases pushed down, a channel all negative), a 2x2 pool 9 outputs wide (8 a vector and a tail),
    an overlapping 3x3 stride-2 one and a global one. The output is the pools themselves, so each
    entry of r reaches one pool output (test_relu_pool puts NaN there)."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(2, 4, 3, padding=1)
        self.c2 = nn.Conv2d(2, 3, 3, padding=1)
        self.c3 = nn.Conv2d(2, 3, 3)
        with torch.no_grad():
            self.c1.bias.copy_(torch.tensor([-3.0, -0.4, -0.2, 0.1]))
            self.c2.bias.copy_(torch.tensor([-0.5, -3.0, 0.0]))
            self.c3.bias.copy_(torch.tensor([-3.0, -0.3, 0.2]))

    def forward(self, x):                                            # (N, 2, 8, 18)
        a = F.max_pool2d(F.relu(self.c1(x)), 2)                      # (N, 4, 4, 9)
        b = F.max_pool2d(F.relu(self.c2(x)), 3, stride=2, padding=1)  # (N, 3, 4, 9)
        c = F.adaptive_max_pool2d(F.relu(self.c3(x)), 1)             # GlobalMaxPool, (N, 3, 1, 1)
        return torch.cat([a.flatten(1), b.flatten(1), c.flatten(1)], 1)


torch.manual_seed(30)
export("relupool", ReluPool(), randx(3, 2, 8, 18))

if __name__ == "__main__":
    write("gen_onnx_spatial_goldens.py", "onnx_spatial_goldens.txt")
