#!/usr/bin/python3
"""Golden values for tests/test_onnx_ops.c (issue 23 items 1-2): one small ONNX graph per operator
(or family), built with onnx.helper, and its output and input gradient computed by the same maths in
PyTorch 1.13 in float64 (autograd of loss = sum(y * r)); never by lithe.

    /usr/bin/python3 tests/golden/gen_onnxops_goldens.py OUT.txt

For each case NAME: NAME.onnx (the bytes), NAME.x, NAME.y (float, or integers for ArgMax / ArgMin),
NAME.r and, when the graph is differentiable in x, NAME.dx; NAME.fd (1) when the finite-difference
check applies (finite inputs away from kinks).
"""
import sys

import numpy
import onnx
import torch
from onnx import TensorProto, helper

from golden_records import rec, write

rng = numpy.random.RandomState(23)
T = torch.float64


def model(nodes, inits, x, opset, out_type=TensorProto.FLOAT):
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
                          [helper.make_tensor_value_info("y", out_type, None)], initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="gen_onnxops_goldens")
    m.ir_version = 8
    return m.SerializeToString()


def i64(name, v):
    v = numpy.asarray(v, dtype=numpy.int64)
    return helper.make_tensor(name, TensorProto.INT64, list(v.shape), v.ravel().tolist())


def f32(name, v):
    v = numpy.asarray(v, dtype=numpy.float32)
    return helper.make_tensor(name, TensorProto.FLOAT, list(v.shape), v.ravel().tolist())


def case(name, nodes, inits, x, fn, opset=13, grad=True, fd=True, ints=False):
    """fn: the torch float64 maths of the graph, from x (and the float initializers, in order)."""
    x = numpy.asarray(x, dtype=numpy.float32)
    rec(f"{name}.onnx", numpy.frombuffer(model(nodes, inits, x, opset, TensorProto.INT64 if ints else TensorProto.FLOAT),
                                         dtype=numpy.uint8))
    rec(f"{name}.x", x)
    xt = torch.tensor(x, dtype=T, requires_grad=grad)
    y = fn(xt)
    if ints:
        rec(f"{name}.y", y.numpy().astype(numpy.int64))
        return
    r = torch.tensor(rng.standard_normal(tuple(y.shape)), dtype=T)
    rec(f"{name}.y", y.detach().numpy())
    rec(f"{name}.r", r.numpy().astype(numpy.float32))
    if grad:
        (y * r.to(T)).sum().backward()
        rec(f"{name}.dx", xt.grad.numpy())
        rec(f"{name}.fd", numpy.array([1 if fd else 0]))


N = helper.make_node
x345 = rng.standard_normal((3, 4, 5))

# ---- item 2: reductions (axes as attribute before opset 18, as input at 18; ReduceSum's input at 13) ----
case("redmax13", [N("ReduceMax", ["x"], ["y"], axes=[2], keepdims=0)], [], x345, lambda x: torch.amax(x, 2))
case("redmax18", [N("ReduceMax", ["x", "axes"], ["y"], keepdims=1)], [i64("axes", [0, 2])], x345,
     lambda x: torch.amax(x, (0, 2), keepdim=True), opset=18)
xn = x345.copy()
xn[1, 2, 3] = numpy.nan
case("redmax_nan", [N("ReduceMax", ["x"], ["y"], axes=[2], keepdims=0)], [], xn,
     lambda x: torch.amax(x, 2), grad=False)
case("redmin13", [N("ReduceMin", ["x"], ["y"], axes=[1], keepdims=1)], [], x345, lambda x: torch.amin(x, 1, keepdim=True))
case("redmin_all", [N("ReduceMin", ["x"], ["y"], keepdims=0)], [], x345, lambda x: torch.amin(x))
xp = x345 * 0.8 + 0.3
xp[0, 1, 2] = 0.0  # an exact zero: the gradient of the product without dividing by it
case("redprod", [N("ReduceProd", ["x"], ["y"], axes=[2], keepdims=0)], [], xp, lambda x: torch.prod(x, 2), fd=False)
case("redprod_perm", [N("ReduceProd", ["x"], ["y"], axes=[0, 2], keepdims=1)], [], x345 * 0.8 + 0.3,
     lambda x: torch.prod(torch.prod(x, 0, keepdim=True), 2, keepdim=True))
case("redl1", [N("ReduceL1", ["x"], ["y"], axes=[1])], [], x345, lambda x: x.abs().sum(1, keepdim=True))
case("redl2", [N("ReduceL2", ["x"], ["y"], axes=[2], keepdims=0)], [], x345, lambda x: torch.sqrt((x * x).sum(2)))
case("redlse", [N("ReduceLogSumExp", ["x"], ["y"], axes=[1, 2], keepdims=0)], [], x345 * 3,
     lambda x: torch.logsumexp(x, (1, 2)))
case("redsumsq", [N("ReduceSumSquare", ["x"], ["y"], keepdims=0)], [], x345, lambda x: (x * x).sum())
case("redsum13", [N("ReduceSum", ["x", "axes"], ["y"], keepdims=0)], [i64("axes", [-1])], x345, lambda x: x.sum(-1))
case("rednoop18", [N("ReduceMax", ["x", "axes"], ["y"], noop_with_empty_axes=1)], [i64("axes", numpy.zeros(0))],
     x345, lambda x: x * 1.0, opset=18)
# integer ReduceMax / ReduceMin / ReduceProd (shape arithmetic, on the host): of Shape(x) = (3, 4, 5)
case("redint", [N("Shape", ["x"], ["s"]), N("ReduceMax", ["s"], ["a"], keepdims=1), N("ReduceMin", ["s"], ["b"], keepdims=1),
                N("ReduceProd", ["s"], ["c"], keepdims=1), N("Concat", ["a", "b", "c"], ["y"], axis=0)], [], x345,
     lambda x: torch.tensor([5, 3, 60]), grad=False, ints=True)

# ---- ArgMax / ArgMin (ties: integers) ----
xt = numpy.round(x345 * 1.5)
case("argmax", [N("ArgMax", ["x"], ["y"], axis=1, keepdims=0)], [], xt, lambda x: torch.argmax(x, 1), grad=False, ints=True)
case("argmax_last", [N("ArgMax", ["x"], ["y"], axis=-1, keepdims=1, select_last_index=1)], [], xt,
     lambda x: (4 - torch.argmax(torch.flip(x, [2]), 2, keepdim=True)), grad=False, ints=True)
case("argmin_last", [N("ArgMin", ["x"], ["y"], axis=0, keepdims=0, select_last_index=1)], [], xt,
     lambda x: (2 - torch.argmin(torch.flip(x, [0]), 0)), grad=False, ints=True)
xtn = xt.copy()
xtn[0, 2, 1] = xtn[1, 0, 3] = xtn[1, 3, 3] = numpy.nan
case("argmax_nan", [N("ArgMax", ["x"], ["y"], axis=1, keepdims=0)], [], xtn, lambda x: torch.argmax(x, 1), grad=False, ints=True)
case("argmin_nan_last", [N("ArgMin", ["x"], ["y"], axis=1, keepdims=0, select_last_index=1)], [], xtn,
     lambda x: (3 - torch.argmin(torch.flip(x, [1]), 1)), grad=False, ints=True)

# ---- CumSum, Tile, Range, GatherElements, GatherND ----
case("cumsum", [N("CumSum", ["x", "ax"], ["y"])], [i64("ax", 1)], x345, lambda x: torch.cumsum(x, 1))


def cum_rev_excl(x):
    c = torch.flip(torch.cumsum(torch.flip(x, [2]), 2), [2])
    return c - x


case("cumsum_rev_excl", [N("CumSum", ["x", "ax"], ["y"], exclusive=1, reverse=1)], [i64("ax", -1)], x345, cum_rev_excl)
case("tile", [N("Tile", ["x", "rep"], ["y"])], [i64("rep", [2, 1, 3])], x345, lambda x: x.repeat(2, 1, 3))
x35 = rng.standard_normal((3, 5))
case("range", [N("Range", ["s", "l", "d"], ["rg"]), N("Add", ["x", "rg"], ["y"])],
     [f32("s", 0.5), f32("l", 3.0), f32("d", 0.5)], x35, lambda x: x + torch.arange(0.5, 3.0, 0.5, dtype=T))
gi = rng.randint(-4, 4, size=(3, 2, 5))
case("gather_elements", [N("GatherElements", ["x", "i"], ["y"], axis=1)], [i64("i", gi)], x345,
     lambda x: torch.gather(x, 1, torch.tensor(numpy.where(gi < 0, gi + 4, gi))))
case("gather_float", [N("Gather", ["x", "i"], ["y"], axis=0)], [i64("i", [2, 0, 2])], x345, lambda x: x[[2, 0, 2]])
# along a later axis, with repeated and negative indices; and a scalar index (a vision transformer's
# class token, x[:, 0])
case("gather_float_axis1", [N("Gather", ["x", "i"], ["y"], axis=1)], [i64("i", [[3, -1], [0, 3]])], x345,
     lambda x: x[:, [[3, -1], [0, 3]]])
case("gather_float_token", [N("Gather", ["x", "i"], ["y"], axis=1)], [i64("i", 0)], x345, lambda x: x[:, 0])
ndi = numpy.array([[0, 1], [2, -1], [0, 1]])
case("gather_nd", [N("GatherND", ["x", "i"], ["y"])], [i64("i", ndi)], x345,
     lambda x: torch.stack([x[0, 1], x[2, 3], x[0, 1]]))
ndb = numpy.array([[3], [0], [1]])
case("gather_nd_b1", [N("GatherND", ["x", "i"], ["y"], batch_dims=1)], [i64("i", ndb)], x345,
     lambda x: torch.stack([x[0, 3], x[1, 0], x[2, 1]]))

# ---- item 1: Floor, Ceil, Round, Sin, Cos ----
xu = x345 * 2
case("unary2", [N("Sin", ["x"], ["a"]), N("Cos", ["x"], ["b"]), N("Floor", ["x"], ["c"]), N("Ceil", ["x"], ["d"]),
                N("Round", ["x"], ["e"]), N("Sum", ["a", "b", "c", "d", "e"], ["y"])], [], xu,
     lambda x: torch.sin(x) + torch.cos(x) + torch.floor(x) + torch.ceil(x) + torch.round(x))
halves = numpy.array([[-2.5, -1.5, -0.5, 0.5, 1.5], [2.5, 3.5, 0.49, -0.51, 7.0]])
case("round_half", [N("Round", ["x"], ["y"])], [], halves, lambda x: torch.round(x), grad=False)

# ---- variadic Max / Min / Sum / Mean with broadcasting (c1 (4, 1), c2 (5,) are trainable initializers) ----
c1, c2 = rng.standard_normal((4, 1)), rng.standard_normal(5)
C1, C2 = torch.tensor(c1, dtype=T), torch.tensor(c2, dtype=T)
case("variadic", [N("Max", ["x", "c1", "c2"], ["a"]), N("Min", ["x", "c1"], ["b"]), N("Sum", ["x", "c2", "x"], ["c"]),
                  N("Mean", ["x", "c1"], ["d"]), N("Max", ["x"], ["e"]), N("Sum", ["a", "b", "c", "d", "e"], ["y"])],
     [f32("c1", c1), f32("c2", c2)], x345,
     lambda x: torch.maximum(torch.maximum(x, C1), C2) + torch.minimum(x, C1) + (x + C2 + x) + (x + C1) / 2 + x)
xm = x345.copy()
xm[0, 0, 0] = numpy.nan
case("max_nan", [N("Max", ["x", "c1"], ["a"]), N("Min", ["c1", "x"], ["b"]), N("Add", ["a", "b"], ["y"])],
     [f32("c1", c1)], xm, lambda x: torch.maximum(x, C1) + torch.minimum(C1, x), grad=False)

# ---- Mod (fmod 1: C's fmod; fmod 0: the divisor's sign) ----
md = numpy.array([1.3, -0.7, 2.1, -1.9, 0.45])
MD = torch.tensor(md, dtype=T)
case("mod_fmod", [N("Mod", ["x", "m"], ["y"], fmod=1)], [f32("m", md)], x345 * 3, lambda x: torch.fmod(x, MD))
case("mod_floor", [N("Mod", ["x", "m"], ["y"], fmod=0)], [f32("m", md)], x345 * 3, lambda x: torch.remainder(x, MD))

# ---- And / Or / Xor of comparisons, through Where ----
zero, half = f32("zero", 0.0), f32("half", 0.5)
case("logic", [N("Greater", ["x", "zero"], ["g"]), N("Less", ["x", "half"], ["l"]), N("And", ["g", "l"], ["a"]),
               N("Or", ["g", "l"], ["o"]), N("Xor", ["g", "l"], ["xo"]), N("Neg", ["x"], ["nx"]),
               N("Where", ["a", "x", "nx"], ["w1"]), N("Where", ["o", "x", "zero"], ["w2"]),
               N("Where", ["xo", "nx", "x"], ["w3"]), N("Sum", ["w1", "w2", "w3"], ["y"])], [zero, half], x345,
     lambda x: torch.where((x > 0) & (x < 0.5), x, -x) + torch.where((x > 0) | (x < 0.5), x, torch.zeros_like(x))
     + torch.where((x > 0) ^ (x < 0.5), -x, x), fd=False)

# ---- GreaterOrEqual / LessOrEqual: ties count, a NaN operand gives false (IEEE), broadcasting ----
xq = xn.copy()
xq[1, 1, :] = 0.25
quarter = f32("quarter", numpy.full((5,), 0.25, dtype=numpy.float32))
two = f32("two", 2.0)
case("compare_eq", [N("GreaterOrEqual", ["x", "quarter"], ["ge"]), N("LessOrEqual", ["x", "quarter"], ["le"]),
                    N("Where", ["ge", "x", "zero"], ["w1"]), N("Where", ["le", "two", "zero"], ["w2"]),
                    N("Add", ["w1", "w2"], ["y"])], [quarter, zero, two], xq,
     lambda x: torch.where(x >= 0.25, x, torch.zeros_like(x)) + torch.where(x <= 0.25, 2.0, 0.0),
     opset=16, fd=False)

# ---- IsNaN, IsInf (detect_positive / detect_negative) ----
xi = x345.copy()
xi[0, 0, :3] = [numpy.nan, numpy.inf, -numpy.inf]
xi[2, 3, 1:3] = [-numpy.inf, numpy.nan]
seven, three, one = f32("seven", 7.0), f32("three", 3.0), f32("one", 1.0)
case("isnaninf", [N("IsNaN", ["x"], ["n"]), N("IsInf", ["x"], ["i"]), N("IsInf", ["x"], ["p"], detect_negative=0),
                  N("IsInf", ["x"], ["q"], detect_positive=0), N("Where", ["n", "seven", "three"], ["a"]),
                  N("Where", ["i", "one", "zero"], ["b"]), N("Where", ["p", "one", "zero"], ["c"]),
                  N("Where", ["q", "three", "zero"], ["d"]), N("Sum", ["a", "b", "c", "d"], ["y"])],
     [seven, three, one, zero], xi,
     lambda x: torch.where(torch.isnan(x), 7.0, 3.0) + torch.isinf(x).to(T) + torch.isposinf(x).to(T)
     + 3 * torch.isneginf(x).to(T), grad=False)

# ---- Hardmax (opset 13: along axis; opset 11: the input coerced to 2-D at axis) ----


def hardmax(x, dims):
    flat = x.reshape(dims)
    oh = torch.nn.functional.one_hot(torch.argmax(flat, 1), flat.shape[1]).to(T)
    return oh.reshape(x.shape)


case("hardmax13", [N("Hardmax", ["x"], ["h"], axis=1), N("Mul", ["h", "x"], ["y"])], [], x345,
     lambda x: hardmax(x.detach().transpose(1, 2), (15, 4)).reshape(3, 5, 4).transpose(1, 2) * x)
case("hardmax11", [N("Hardmax", ["x"], ["h"], axis=1), N("Mul", ["h", "x"], ["y"])], [], x345,
     lambda x: hardmax(x.detach(), (3, 20)) * x, opset=11)


# ---- ScatterElements, ScatterND (to data and updates: u is a trainable initializer), Trilu, OneHot ----
si = numpy.stack([numpy.stack([rng.permutation(4)[:2] for _ in range(5)], 1) for _ in range(3)])  # (3, 2, 5), distinct rows
u = rng.standard_normal((3, 2, 5))
U = torch.tensor(u, dtype=T)
case("scatter_elements", [N("ScatterElements", ["x", "i", "u"], ["y"], axis=1)], [i64("i", si), f32("u", u)], x345,
     lambda x: torch.scatter(x, 1, torch.tensor(si), U))
sa = rng.randint(0, 4, size=(3, 2, 5))  # repeats allowed: they add
case("scatter_add", [N("ScatterElements", ["x", "i", "u"], ["y"], axis=1, reduction="add")], [i64("i", sa), f32("u", u)],
     x345, lambda x: torch.scatter_add(x, 1, torch.tensor(sa), U), opset=16)
un = rng.standard_normal((2, 5))
UN = torch.tensor(un, dtype=T)


def scatter_nd(x):
    y = x.clone()
    y[0, 1] = UN[0]
    y[2, 3] = UN[1]
    return y


case("scatter_nd", [N("ScatterND", ["x", "i", "u"], ["y"])], [i64("i", [[0, 1], [2, 3]]), f32("u", un)], x345, scatter_nd)
case("trilu_upper", [N("Trilu", ["x", "k"], ["y"])], [i64("k", 1)], x345, lambda x: torch.triu(x, 1), opset=14)
case("trilu_lower", [N("Trilu", ["x", "k"], ["y"], upper=0)], [i64("k", -1)], x345, lambda x: torch.tril(x, -1), opset=14)
oi = numpy.array([[0, 4, -1, 2], [3, -5, 1, 7], [2, 2, 0, -2]])  # 7: out of range, a row of "off"
oh = numpy.zeros((3, 5, 4))
for b in range(3):
    for j in range(4):
        v = oi[b, j] + (5 if oi[b, j] < 0 else 0)
        oh[b, :, j] = 0.5
        if 0 <= v < 5:
            oh[b, v, j] = 2.0
case("onehot", [N("OneHot", ["i", "d", "v"], ["o"], axis=1), N("Add", ["x", "o"], ["y"])],
     [i64("i", oi), i64("d", 5), f32("v", [0.5, 2.0])], rng.standard_normal((3, 5, 4)),
     lambda x: x + torch.tensor(oh, dtype=T))

# ---- TopK (values to the selected elements; indices as the output), Einsum, NonZero ----
case("topk", [N("TopK", ["x", "k"], ["y", "idx"], axis=1)], [i64("k", [3])], x345, lambda x: torch.topk(x, 3, 1)[0])
case("topk_small_idx", [N("TopK", ["x", "k"], ["v", "y"], axis=-1, largest=0)], [i64("k", [2])], x345,
     lambda x: torch.topk(x, 2, -1, largest=False)[1], grad=False, ints=True)
w1 = rng.standard_normal((2, 4, 5))
case("einsum_bmm", [N("Einsum", ["x", "w"], ["y"], equation="bij,bjk->bik")], [f32("w", w1)], rng.standard_normal((2, 3, 4)),
     lambda x: torch.einsum("bij,bjk->bik", x, torch.tensor(w1, dtype=T)))
w2 = rng.standard_normal((2, 2, 5, 4))
case("einsum_attn", [N("Einsum", ["x", "w"], ["y"], equation="bhid,bhjd->bhij")], [f32("w", w2)],
     rng.standard_normal((2, 2, 3, 4)), lambda x: torch.einsum("bhid,bhjd->bhij", x, torch.tensor(w2, dtype=T)))
w3 = rng.standard_normal((6, 4))
case("einsum_nt", [N("Einsum", ["x", "w"], ["y"], equation="ij,kj->ki")], [f32("w", w3)], rng.standard_normal((3, 4)),
     lambda x: torch.einsum("ij,kj->ki", x, torch.tensor(w3, dtype=T)))
w4 = rng.standard_normal(3)
case("einsum_outer", [N("Einsum", ["w", "x"], ["y"], equation="i,j")], [f32("w", w4)], rng.standard_normal(5),
     lambda x: torch.einsum("i,j", torch.tensor(w4, dtype=T), x))
w5 = rng.standard_normal((3, 4))
case("einsum_dot", [N("Einsum", ["x", "w"], ["y"], equation="ij,ij->")], [f32("w", w5)], rng.standard_normal((3, 4)),
     lambda x: torch.einsum("ij,ij->", x, torch.tensor(w5, dtype=T)))
w6 = rng.standard_normal((2, 4, 5))
case("einsum_ellipsis", [N("Einsum", ["x", "w"], ["y"], equation="...ij,...jk->...ik")], [f32("w", w6)],
     rng.standard_normal((2, 3, 4)), lambda x: torch.einsum("...ij,...jk->...ik", x, torch.tensor(w6, dtype=T)))
case("einsum_ellipsis_implicit", [N("Einsum", ["x", "w"], ["y"], equation="...ij,jk")], [f32("w", w3.T.copy())],
     rng.standard_normal((2, 3, 4)), lambda x: torch.einsum("...ij,jk", x, torch.tensor(w3.T.copy(), dtype=T)))
case("einsum_perm", [N("Einsum", ["x"], ["y"], equation="abc->cab")], [], x345, lambda x: torch.einsum("abc->cab", x))
nzc = numpy.array([[0.0, 1.5, 0.0], [2.0, 0.0, -1.0]])
nz = numpy.stack(numpy.nonzero(nzc))
case("nonzero", [N("NonZero", ["c"], ["nz"]), N("Cast", ["nz"], ["nzf"], to=TensorProto.FLOAT), N("Add", ["x", "nzf"], ["y"])],
     [f32("c", nzc)], rng.standard_normal(nz.shape), lambda x: x + torch.tensor(nz, dtype=T))

# ---- the torch calls behind these operators, as torch.onnx.export (1.13) writes them: output,
# input gradient and every parameter's gradient from torch's float32 autograd ----
import io  # noqa: E402

import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402


class Exported(nn.Module):
    """The torch calls behind issue 23's operators, as torch.onnx.export writes them."""
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(6, 8), nn.Linear(288, 5)
        self.register_buffer("idx", torch.tensor(numpy.random.RandomState(5).randint(0, 8, (1, 4, 8))))
    def forward(self, x):                                   # x (N, 4, 6)
        h = self.fc1(x)                                     # (N, 4, 8)
        a = torch.amax(h, dim=1, keepdim=True)              # ReduceMax
        b = torch.amin(h, dim=1, keepdim=True)              # ReduceMin
        m = torch.maximum(h, a * 0.5) + torch.minimum(h, b * 0.5)   # Max, Min
        c = torch.cumsum(h, dim=1)                          # CumSum
        t = h.repeat(1, 1, 2)[:, :, 3:11]                   # Tile
        g = torch.gather(h, 2, self.idx.expand(x.shape[0], 4, 8))   # GatherElements
        r = h + torch.arange(h.shape[1], dtype=torch.float32).unsqueeze(-1)  # Range
        oh = F.one_hot(torch.argmax(h, dim=2), 8).to(h.dtype) * h   # ArgMax, OneHot
        s = torch.sin(h) + torch.cos(h) + torch.floor(h)    # Sin, Cos, Floor
        e = torch.triu(torch.einsum("bij,bkj->bik", h, h))  # Einsum, Trilu (4, 4)
        red = torch.stack([torch.norm(h, p=2, dim=2), torch.logsumexp(h, 2), torch.prod(h * 0.5, 2),
                           torch.norm(h, p=1, dim=2), torch.topk(h, 3, dim=2).values.sum(2),
                           torch.fmod(h, 1.3).sum(2), (h * h).sum(2), e.sum(2)], 2)   # (N, 4, 8)
        z = torch.cat([m, c, t, g, r, oh, s, red], 2)       # (N, 4, 48)... flattened
        return self.fc2(torch.cat([z.flatten(1), red.flatten(1)], 1))

for opset in (14, 17):
    torch.manual_seed(0)
    mod = Exported().eval()
    x = torch.tensor(numpy.random.RandomState(41).standard_normal((3, 4, 6)).astype("float32"))
    buf = io.BytesIO()
    torch.onnx.export(mod, (x,), buf, opset_version=opset, input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}}, do_constant_folding=False)
    name = f"exported{opset}"
    rec(f"{name}.onnx", numpy.frombuffer(buf.getvalue(), dtype=numpy.uint8))
    xr = x.clone().requires_grad_(True)
    y = mod(xr)
    r = torch.tensor(rng.standard_normal(tuple(y.shape)).astype("float32"))
    (y * r).sum().backward()
    rec(f"{name}.x", x.numpy())
    rec(f"{name}.y", y.detach().numpy())
    rec(f"{name}.r", r.numpy())
    rec(f"{name}.dx", xr.grad.numpy())
    rec(f"{name}.fd", numpy.array([1]))
    for pname, p in mod.named_parameters():
        rec(f"{name}.grad.{pname}", p.grad.numpy())


# ---- Transposes that move the last axis over extents >= 16 (the CPU copy's 16 x 16 tiles, issue 29):
# partial tiles on both axes; the backward is the inverse permutation, tiled too ----
xtr = numpy.random.RandomState(29)
case("transpose_tiled", [N("Transpose", ["x"], ["y"], perm=[0, 3, 2, 1])], [], xtr.standard_normal((3, 20, 5, 35)),
     lambda x: x.permute(0, 3, 2, 1))
case("transpose_attn_k", [N("Transpose", ["x"], ["y"], perm=[1, 2, 0])], [], xtr.standard_normal((33, 2, 19)),
     lambda x: x.permute(1, 2, 0))


# ---- hostile attributes, refused at load (test_onnx_ops.c lists what each error must say) ----


def bad(name, nodes, inits, opset=13, shape=(3, 4, 5)):
    rec(f"bad_{name}.onnx", numpy.frombuffer(model(nodes, inits, numpy.zeros(shape, "float32"), opset), dtype=numpy.uint8))


bad("redaxis", [N("ReduceMax", ["x"], ["y"], axes=[3], name="rm")], [])
bad("redtwice", [N("ReduceL2", ["x"], ["y"], axes=[1, -2], name="rl2")], [])
bad("keepdims", [N("ReduceProd", ["x"], ["y"], keepdims=2, name="rp")], [])
bad("axesdtype", [N("ReduceMin", ["x", "axes"], ["y"], name="rmin")], [f32("axes", [1.0])], opset=18)
bad("argaxis", [N("ArgMax", ["x"], ["y"], axis=-4, name="am")], [])
bad("lastidx", [N("ArgMin", ["x"], ["y"], select_last_index=3, name="an")], [])
bad("cumaxis", [N("CumSum", ["x", "ax"], ["y"], name="cs")], [i64("ax", 5)])
bad("cumflag", [N("CumSum", ["x", "ax"], ["y"], exclusive=-1, name="cs2")], [i64("ax", 0)])
bad("gatheridx", [N("GatherElements", ["x", "i"], ["y"], axis=2, name="ge")], [i64("i", numpy.full((3, 4, 1), 5))])
bad("gatherdtype", [N("GatherElements", ["x", "i"], ["y"], axis=2, name="ge2")], [f32("i", numpy.zeros((3, 4, 1)))])
bad("nddims", [N("GatherND", ["x", "i"], ["y"], batch_dims=3, name="gnd")], [i64("i", numpy.zeros((3, 1)))])
bad("tilereps", [N("Tile", ["x", "r"], ["y"], name="tl")], [i64("r", [1, 2])])
bad("tileneg", [N("Tile", ["x", "r"], ["y"], name="tl2")], [i64("r", [1, -2, 1])])
bad("fmod", [N("Mod", ["x", "x"], ["y"], fmod=2, name="md")], [])
bad("isinf", [N("IsInf", ["x"], ["y"], detect_positive=7, name="ii")], [])
bad("hardmax", [N("Hardmax", ["x"], ["y"], axis=3, name="hm")], [])
bad("einsum_ellipsis", [N("Einsum", ["x", "x"], ["y"], equation="...i...j,jk->ik", name="es")], [])
bad("einsum_diag", [N("Einsum", ["x"], ["y"], equation="iij->ij", name="es2")], [])
bad("einsum_sum", [N("Einsum", ["x", "x"], ["y"], equation="abc,abd->ad", name="es3")], [])
bad("topk_k", [N("TopK", ["x", "k"], ["y", "i"], axis=2, name="tk")], [i64("k", [9])])
bad("topk_dtype", [N("TopK", ["x", "k"], ["y", "i"], name="tk2")], [f32("k", [2.0])])
bad("scatter_mul", [N("ScatterElements", ["x", "i", "x"], ["y"], reduction="mul", name="sc")], [i64("i", numpy.zeros((3, 4, 5)))],
    opset=16)
bad("onehot_depth", [N("OneHot", ["i", "d", "v"], ["y"], name="oh")], [i64("i", [1]), i64("d", 0), f32("v", [0.0, 1.0])])
bad("nonzero_input", [N("NonZero", ["x"], ["y"], name="nz")], [])
bad("trilu_rank", [N("Trilu", ["x"], ["y"], name="tr")], [], opset=14, shape=(5,))

write(sys.argv[0], "onnxops_goldens.txt")
