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
import io
import sys

import numpy

from golden_records import rec, write

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError as e:
    sys.exit(f"gen_onnx_spatial_goldens.py: {e}; install Debian's python3-torch and run with /usr/bin/python3")

rng = numpy.random.RandomState(23)


def export(name, model, x, opset=13, lr=0.05, steps=10, rewrite=None):
    model.eval()
    buf = io.BytesIO()
    torch.onnx.export(model, (x,), buf, opset_version=opset, input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}}, do_constant_folding=False)
    data = buf.getvalue()
    if rewrite:
        data = rewrite(data)
    rec(f"{name}.onnx", numpy.frombuffer(data, dtype=numpy.uint8))
    xr = x.clone().requires_grad_(True)
    y = model(xr)
    r = torch.tensor(rng.standard_normal(tuple(y.shape)).astype("float32"))
    (y * r).sum().backward()
    rec(f"{name}.x", x.numpy())
    rec(f"{name}.y", y.detach().numpy())
    rec(f"{name}.r", r.numpy())
    rec(f"{name}.dx", xr.grad.numpy())
    for pname, p in model.named_parameters():
        rec(f"{name}.grad.{pname}", p.grad.numpy())
    kept = [n for n, _ in model.named_parameters() if n.encode() in data]
    rec(f"{name}.n_params", numpy.array([len(kept)]))
    if len(kept) != len(list(model.parameters())) or steps == 0:
        return
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = (model(x) * r).sum()
        losses.append(loss.item())
        loss.backward()
        opt.step()
    rec(f"{name}.lr", numpy.array([lr]), exact64=True)
    rec(f"{name}.losses", numpy.array(losses, dtype="float64"), exact64=True)
    for pname, p in model.named_parameters():
        rec(f"{name}.sgd.{pname}", p.detach().numpy())


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
    """3-D windows: Conv3d (padding, stride, groups, dilation), MaxPool3d, AvgPool3d (padding,
    count_include_pad both ways), GlobalAveragePool / GlobalMaxPool on 5-D inputs."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv3d(2, 4, 3, padding=1)
        self.c2 = nn.Conv3d(4, 4, (2, 3, 3), stride=(1, 2, 1), groups=2, dilation=(1, 1, 2), padding=1)
        self.fc = nn.Linear(8, 3)

    def forward(self, x):
        h = F.max_pool3d(torch.tanh(self.c1(x)), 2)                         # (N, 4, 3, 4, 4)
        h = self.c2(h)                                                       # (N, 4, 4, 2, 2)
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

if __name__ == "__main__":
    write("gen_onnx_spatial_goldens.py", "onnx_spatial_goldens.txt")
