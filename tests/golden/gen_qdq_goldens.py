#!/usr/bin/python3
"""Goldens for tests/test_onnx_qdq.c (issue 24 item 4): quantized ONNX graphs (tests/golden/qdq_models.py:
QDQ and QOperator forms, built with onnx.helper from float models) and onnxruntime-node's outputs
for them (bench/node_modules, as tests/onnx_export uses it; ctest's bench_node_modules installs it).

    /usr/bin/python3 tests/golden/gen_qdq_goldens.py OUT.txt

For each case NAME: NAME.onnx (the bytes), NAME.x, NAME.y (onnxruntime's output), NAME.tol (two
tolerances on max |lithe - onnxruntime|: [0] with lithe's QDQ fusion off — every Q / DQ rounded in
float at the same grids, so only a value within float32 error of a rounding boundary may land one
code away: one output step; [1] with fusion on — gemm_q8 re-quantizes each rounded activation row
to 7-bit codes (qgemm.h), an error per output of at most half that row's step times the sum of
|w| over the row, carried through the later layers: two output steps plus 4% of the output's range).
"""
import os
import subprocess
import sys
import tempfile

import numpy
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from golden_records import rec, write  # noqa: E402
import qdq_models as qm  # noqa: E402

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(os.path.dirname(here))
rng = numpy.random.RandomState(24)
cases = []  # (name, bytes, x, tol_exact, tol_fused)


def case(name, model, x, step, exact=None, fused=None):
    cases.append((name, model, x.astype(numpy.float32), step, exact, fused))


def calib(*shape):
    return rng.standard_normal(shape).astype(numpy.float32)


# ---- QDQ: Gemm / MatMul MLPs, per tensor and per channel, uint8 / int8 activations; test inputs 1.3x
# the calibration data's spread (some values past the calibrated range: QuantizeLinear clamps) ----
xc = calib(32, 48)
m, s = qm.qdq_mlp(rng, xc, [48, 32, 10], per_channel=False, signed_acts=[False])
case("mlp_pt", m, calib(8, 48) * 1.3, s)
m, s = qm.qdq_mlp(rng, xc, [48, 40, 24, 10], per_channel=True, signed_acts=[False, True])
case("mlp_pc", m, calib(8, 48) * 1.3, s)
xc3 = calib(4, 6, 20)
m, s = qm.qdq_mlp(rng, xc3, [20, 16, 8], per_channel=True, signed_acts=[False], gemm=False, x_shape=[2, 6, 20])
case("matmul_pc", m, calib(2, 6, 20) * 1.3, s)
m, s = qm.qdq_mlp(rng, xc3, [20, 16, 8], per_channel=False, signed_acts=[True], gemm=False, x_shape=[2, 6, 20])
case("matmul_pt_s8", m, calib(2, 6, 20) * 1.3, s)
# ---- QDQ CNN: Conv + Relu, depthwise Conv + Clip, 1x1 Conv, pooling and Flatten between Q -> DQ ----
m, s = qm.qdq_cnn(rng, calib(4, 3, 8, 8), per_channel=True)
case("cnn_pc", m, calib(2, 3, 8, 8) * 1.3, s)
m, s = qm.qdq_cnn(rng, calib(4, 3, 8, 8), per_channel=False)
case("cnn_pt", m, calib(2, 3, 8, 8) * 1.3, s)

# ---- QuantizeLinear / DequantizeLinear alone: per axis (int8, axis 1), opset 10's scalar form ----
g = qm.Graph([2, 3, 4, 5])
sc, zp = g.init(numpy.array([0.02, 0.05, 0.1], numpy.float32)), g.init(numpy.array([-3, 0, 7], numpy.int8))
y = g.node("DequantizeLinear", [g.node("QuantizeLinear", ["x", sc, zp], axis=1), sc, zp], axis=1)
case("q_axis", g.bytes(y), calib(2, 3, 4, 5) * 2, 0.0, exact=1e-6, fused=1e-6)
g = qm.Graph([3, 7], opset=10)
sc = g.init(numpy.float32(0.03))
y = g.node("DequantizeLinear", [g.node("QuantizeLinear", ["x", sc]), sc])  # no zero point: uint8, 0
case("q_opset10", g.bytes(y), calib(3, 7), 0.0, exact=1e-6, fused=1e-6)


# ---- QOperator: QLinearMatMul (per-column b), QLinearConv (per-channel w, int32 bias, depthwise) ----
def qop_mlp():
    g = qm.Graph([8, 16])
    W1, W2 = rng.standard_normal((16, 12)) / 4, rng.standard_normal((12, 6)) / 3.5
    q1, s1 = qm.quant_weight(W1.astype(numpy.float32), 1)
    q2, s2 = qm.quant_weight(W2.astype(numpy.float32), None)
    sx, zx = qm.act_params(-3.5, 3.5, False)
    sh, zh = qm.act_params(-4, 4, False)
    sy, zy = qm.act_params(-3, 3, False)
    i = g.init
    a = g.node("QuantizeLinear", ["x", i(sx), i(zx)])
    a = g.node("QLinearMatMul", [a, i(sx), i(zx), i(q1), i(s1), i(numpy.zeros(12, numpy.int8)), i(sh), i(zh)])
    a = g.node("QLinearMatMul", [a, i(sh), i(zh), i(q2), i(s2), i(numpy.int8(0)), i(sy), i(zy)])
    return g.bytes(g.node("DequantizeLinear", [a, i(sy), i(zy)])), float(sy)


def qop_conv():
    g = qm.Graph([2, 3, 6, 6])
    W1 = (rng.standard_normal((8, 3, 3, 3)) / 5).astype(numpy.float32)
    W2 = (rng.standard_normal((8, 1, 3, 3)) / 3).astype(numpy.float32)
    q1, s1 = qm.quant_weight(W1, 0)
    q2, s2 = qm.quant_weight(W2, 0)
    sx, zx = qm.act_params(-3.5, 3.5, False)
    sh, zh = qm.act_params(-3, 3, False)
    sy, zy = qm.act_params(-2.5, 2.5, False)
    b1, _ = qm.quant_bias((rng.standard_normal(8) * 0.2).astype(numpy.float32), sx, s1)
    i = g.init
    a = g.node("QuantizeLinear", ["x", i(sx), i(zx)])
    a = g.node("QLinearConv", [a, i(sx), i(zx), i(q1), i(s1), i(numpy.zeros(8, numpy.int8)), i(sh), i(zh), i(b1)],
               kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    a = g.node("QLinearConv", [a, i(sh), i(zh), i(q2), i(s2), i(numpy.zeros(8, numpy.int8)), i(sy), i(zy)],
               kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], group=8)
    return g.bytes(g.node("DequantizeLinear", [a, i(sy), i(zy)])), float(sy)


# ---- dynamic quantization (onnxruntime's quantize_dynamic form): DynamicQuantizeLinear ->
# MatMulInteger / ConvInteger -> Cast -> Mul by the scales (-> Add bias) ----
def dyn_matmul():
    g = qm.Graph([4, 16])
    W = (rng.standard_normal((16, 10)) / 4).astype(numpy.float32)
    q, sw = qm.quant_weight(W, None)
    i = g.init
    xq, xs, xz = g.node("DynamicQuantizeLinear", ["x"], n_out=3)
    acc = g.node("MatMulInteger", [xq, i(q), xz, i(numpy.int8(0))])
    sc = g.node("Mul", [xs, i(numpy.float32(sw))])
    y = g.node("Add", [g.node("Mul", [g.node("Cast", [acc], to=TensorProto.FLOAT), sc]),
                       i((rng.standard_normal(10) * 0.1).astype(numpy.float32))])
    return g.bytes(y)


def conv_integer():
    g = qm.Graph([2, 3, 6, 6])
    W = (rng.standard_normal((4, 3, 3, 3)) / 5).astype(numpy.float32)
    sw = numpy.float32((W.max() - W.min()) / 255)
    zw = numpy.uint8(round(-W.min() / sw))
    q = numpy.clip(numpy.rint(W / sw) + zw, 0, 255).astype(numpy.uint8)
    i = g.init
    xq, xs, xz = g.node("DynamicQuantizeLinear", ["x"], n_out=3)
    acc = g.node("ConvInteger", [xq, i(q), xz, i(zw)], kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    y = g.node("Mul", [g.node("Cast", [acc], to=TensorProto.FLOAT), g.node("Mul", [xs, i(sw)])])
    return g.bytes(y)


m, s = qop_mlp()
case("qop_mlp", m, calib(8, 16) * 1.5, s, fused=1.01 * s + 1e-6)  # no fusion: the same integer path
m, s = qop_conv()
case("qop_conv", m, calib(2, 3, 6, 6) * 1.5, s, fused=1.01 * s + 1e-6)
case("dyn_matmul", dyn_matmul(), calib(4, 16), 0.0, exact=1e-4, fused=1e-4)
case("conv_integer", conv_integer(), calib(2, 3, 6, 6), 0.0, exact=1e-4, fused=1e-4)


# ---- onnxruntime-node's outputs ----
def ort_outputs(tmp):
    bench = os.path.join(root, "bench")
    if not os.path.exists(os.path.join(bench, "node_modules", "onnxruntime-node", "package.json")):
        # (ctest's bench_node_modules installs it; two `npm ci` at once in bench/ would collide)
        sys.exit("gen_qdq_goldens: bench/node_modules has no onnxruntime-node: run `npm ci` in bench/ first")
    with open(os.path.join(tmp, "cases.txt"), "w") as f:
        for name, model, x, *_ in cases:
            open(os.path.join(tmp, name + ".onnx"), "wb").write(model)
            numpy.save(os.path.join(tmp, name + ".x.npy"), x)
            f.write(name + "\n")
    subprocess.run([os.environ.get("LITHE_NODE", "node"), os.path.join(here, "qdq_ort.mjs"), tmp], check=True)
    return {name: numpy.load(os.path.join(tmp, name + ".y.npy")) for name, *_ in cases}


with tempfile.TemporaryDirectory() as tmp:
    ys = ort_outputs(tmp)
names = []
for name, model, x, step, exact, fused in cases:
    y = ys[name]
    t_exact = exact if exact is not None else 1.01 * step + 1e-6
    t_fused = fused if fused is not None else 2.0 * step + 0.04 * float(y.max() - y.min())
    rec(f"{name}.onnx", numpy.frombuffer(model, dtype=numpy.uint8))
    rec(f"{name}.x", x)
    rec(f"{name}.y", y)
    rec(f"{name}.tol", numpy.array([t_exact, t_fused], numpy.float64))
    names.append(name)
    print(f"{name}: y {y.shape}, range [{y.min():.4g}, {y.max():.4g}], tolerances {t_exact:.3g} / {t_fused:.3g}")
write("gen_qdq_goldens.py", "qdq_goldens.txt")
