#!/usr/bin/python3
"""Seeds for fuzz_onnx's quantized graphs (issue 24 item 4): tiny QDQ models (Gemm and MatMul MLPs,
a CNN with a depthwise Conv; per tensor and per channel) and QOperator ones written by
tests/golden/qdq_models.py, each under the 4096 bytes fuzz/run.sh lets libFuzzer grow an input to.

    /usr/bin/python3 fuzz/make_qdq_seeds.py   # writes fuzz/corpus/onnx/qdq_*.onnx
"""
import os
import sys

import numpy

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(here), "tests", "golden"))
import qdq_models as qm  # noqa: E402

out = os.path.join(here, "corpus", "onnx")
rng = numpy.random.RandomState(7)


def save(name, data):
    assert len(data) <= 4096, (name, len(data))
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)


x = rng.standard_normal((4, 6)).astype(numpy.float32)
save("qdq_mlp_pc.onnx", qm.qdq_mlp(rng, x, [6, 5, 3], per_channel=True, signed_acts=[False, True])[0])
save("qdq_matmul_pt.onnx", qm.qdq_mlp(rng, x, [6, 4], per_channel=False, signed_acts=[True], gemm=False)[0])
save("qdq_cnn.onnx", qm.qdq_cnn(rng, rng.standard_normal((1, 2, 5, 5)).astype(numpy.float32))[0])
g = qm.Graph([2, 4])
q, s = qm.quant_weight(rng.standard_normal((4, 3)).astype(numpy.float32), 1)
i = g.init
a = g.node("QuantizeLinear", ["x", i(numpy.float32(0.05)), i(numpy.uint8(128))])
a = g.node("QLinearMatMul", [a, i(numpy.float32(0.05)), i(numpy.uint8(128)), i(q), i(s), i(numpy.zeros(3, numpy.int8)),
                             i(numpy.float32(0.1)), i(numpy.uint8(128))])
xq, xs, xz = g.node("DynamicQuantizeLinear", [g.node("DequantizeLinear", [a, i(numpy.float32(0.1)), i(numpy.uint8(128))])], n_out=3)
acc = g.node("MatMulInteger", [xq, i(q.T.copy()), xz, i(numpy.int8(0))])
save("qdq_qop.onnx", g.bytes(g.node("Mul", [g.node("Cast", [acc], to=1), xs])))
print("make_qdq_seeds: 4 seeds ->", out)
