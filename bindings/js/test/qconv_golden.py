"""The float64 oracle for the package's int8 convolution test (test/qconv.test.mjs): a QDQ CNN in the
form onnxruntime's quantizer writes (tests/golden/qdq_models.py's helpers: uint8 activations, int8
per-channel weights, int32 biases), and its output computed in float64 by the QDQ graph's own
definition — every QuantizeLinear rounded half to even and clamped, every DequantizeLinear
(q - z) * s, the convolutions summed in float64 — never by lithe. In the npm package the
convolutions run fused (QDQ -> fused:QConv) through the CPU backend's conv_q8: the SIMD128 tile
(backends/cpu/conv/qconv_wasm.c) for the group-1 ones, the float depthwise kernel on exact integers
for the depthwise one. Shapes put pixels and filters across the tile's 4 x 8 edges (13 x 13 = 169
pixels, 20 and 36 filters, K = 27 odd).
Run by Debian's /usr/bin/python3:
    qconv_golden.py OUT_DIR
Writes OUT_DIR/qconv.onnx, qconv_x.npy, qconv_y.npy (float64 rounded to float32), qconv_step.txt
(the last QuantizeLinear's scale: one output step)."""
import os
import sys

import numpy

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "..", "tests", "golden"))
import qdq_models as qm  # noqa: E402

out = sys.argv[1]
rng = numpy.random.RandomState(2424)


def quant(h, s, z, lo=0, hi=255):
    """QuantizeLinear then DequantizeLinear in float64 (numpy.rint: half to even, as ONNX says)."""
    q = numpy.clip(numpy.rint(h / numpy.float64(s)) + int(z), lo, hi)
    return (q - int(z)) * numpy.float64(s)


x_calib = rng.standard_normal((4, 3, 13, 13)).astype(numpy.float32)
x_test = (rng.standard_normal((2, 3, 13, 13)) * 1.3).astype(numpy.float32)
g = qm.Graph(x_calib.shape)
a = "x"
hc, ht = x_calib.astype(numpy.float64), x_test.astype(numpy.float64)
# (filters, channels per group, window, stride, pad, group, activation)
layers = [(20, 3, 3, 1, 1, 1, "relu"), (20, 1, 3, 2, 1, 20, "clip"), (36, 20, 1, 1, 0, 1, "relu"),
          (10, 36, 3, 1, 1, 1, None)]
for m, cg, k, stride, pad, group, act in layers:
    W = (rng.standard_normal((m, cg, k, k)) / numpy.sqrt(cg * k * k)).astype(numpy.float32)
    b = (rng.standard_normal(m) * 0.1).astype(numpy.float32)
    sx, zx = qm.act_params(hc.min(), hc.max(), False)
    a = g.qdq(a, sx, zx)
    q, sw = qm.quant_weight(W, 0)
    bq, bs = qm.quant_bias(b, sx, sw)
    bias = g.node("DequantizeLinear", [g.init(bq, "b"), g.init(bs, "bs"), g.init(numpy.zeros(bs.shape, numpy.int32), "bz")],
                  axis=0)
    a = g.node("Conv", [a, g.dq_weight(q, sw, 0), bias], kernel_shape=[k, k], strides=[stride, stride], pads=[pad] * 4,
               group=group)
    Wd = q.astype(numpy.float64) * sw.astype(numpy.float64).reshape(-1, 1, 1, 1)
    bd = bq.astype(numpy.float64) * bs.astype(numpy.float64)
    hc = qm.conv_ref(hc, W.astype(numpy.float64), b, stride, pad, group)  # calibration: the float model
    ht = qm.conv_ref(quant(ht, sx, zx), Wd, bd, stride, pad, group)      # the test: the QDQ graph
    if act == "relu":
        a, hc, ht = g.node("Relu", [a]), qm.relu(hc), qm.relu(ht)
    elif act == "clip":
        a = g.node("Clip", [a, g.init(numpy.float32(0), "lo"), g.init(numpy.float32(6), "hi")])
        hc, ht = numpy.clip(hc, 0, 6), numpy.clip(ht, 0, 6)
sy, zy = qm.act_params(hc.min(), hc.max(), False)
model = g.bytes(g.qdq(a, sy, zy))
ht = quant(ht, sy, zy)
with open(os.path.join(out, "qconv.onnx"), "wb") as f:
    f.write(model)
numpy.save(os.path.join(out, "qconv_x.npy"), x_test)
numpy.save(os.path.join(out, "qconv_y.npy"), ht.astype(numpy.float32))
with open(os.path.join(out, "qconv_step.txt"), "w") as f:
    f.write(repr(float(sy)))
