#!/usr/bin/python3
"""The hostile corpus's quantized-graph cases (issue 24 item 4): scales 0 / NaN / inf, zero points
outside their type's range (an int8 tensor's int32_data holding 300), per-axis arrays of the wrong
length, an axis outside the rank, blocked quantization. Each must be refused at load with the node
named; fuzz/hostile/MANIFEST gives the status and a fragment of the message (its q*_ lines).

    /usr/bin/python3 fuzz/hostile/make_hostile_qdq.py   # writes fuzz/hostile/q*_*.onnx
"""
import os

import numpy as np
from onnx import TensorProto, helper, numpy_helper

here = os.path.dirname(os.path.abspath(__file__))


def model(name, nodes, inits, x_dims=(2, 4), opset=13):
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_dims))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="hostile")
    m.ir_version = 8
    with open(os.path.join(here, name), "wb") as f:
        f.write(m.SerializeToString())


def f32(name, v):
    return numpy_helper.from_array(np.asarray(v, np.float32), name)


def qdq(name, scale, zp, axis=None, **attrs):
    """y = DQ(Q(x)) with the given scale and zero point initializers."""
    a = dict(attrs, **({} if axis is None else {"axis": axis}))
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], name="quant", **a),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], name="dequant", **a)]
    model(name, nodes, [scale, zp])


u8 = lambda v: numpy_helper.from_array(np.asarray(v, np.uint8), "z")  # noqa: E731
qdq("q_scale_0.onnx", f32("s", 0.0), u8(0))
qdq("q_scale_nan.onnx", f32("s", np.nan), u8(0))
qdq("q_scale_neg.onnx", f32("s", -0.5), u8(0))
qdq("q_scale_perchannel_inf.onnx", f32("s", [0.1, 0.2, np.inf, 0.1]), u8([0, 0, 0, 0]), axis=1)
qdq("q_zp_int8_300.onnx", f32("s", 0.1), helper.make_tensor("z", TensorProto.INT8, [], [300]))
qdq("q_zp_uint8_neg.onnx", f32("s", 0.1), helper.make_tensor("z", TensorProto.UINT8, [], [-1]))
qdq("q_zp_float.onnx", f32("s", 0.1), f32("z", 0.0))
qdq("q_axis_len.onnx", f32("s", [0.1, 0.2, 0.3]), u8([0, 0, 0]), axis=1)
qdq("q_zp_len.onnx", f32("s", [0.1, 0.2, 0.3, 0.4]), u8([0, 0, 0]), axis=1)
qdq("q_axis_5.onnx", f32("s", [0.1, 0.2, 0.3, 0.4]), u8([0, 0, 0, 0]), axis=5)
qdq("q_block_size.onnx", f32("s", 0.1), u8(0), block_size=2)

# QOperator nodes: QLinearMatMul's y_scale inf, its b_scale per column of the wrong length;
# QLinearConv's w zero points per filter of the wrong length; MatMulInteger's b zero point.
i8 = lambda n, v: numpy_helper.from_array(np.asarray(v, np.int8), n)  # noqa: E731
W = i8("w", np.ones((4, 3)))
qmm = lambda ys, bs, bz: [  # noqa: E731
    helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"], name="quant"),
    helper.make_node("QLinearMatMul", ["xq", "xs", "xz", "w", bs, bz, ys, "yz"], ["yq"], name="qmm"),
    helper.make_node("DequantizeLinear", ["yq", ys, "yz"], ["y"], name="dequant")]
base = [f32("xs", 0.1), u8(0), W]
base[1].name = "xz"
yz = u8(0)
yz.name = "yz"
model("qlinearmatmul_yscale_inf.onnx", qmm("ys", "bs", "bz"),
      base + [f32("ys", np.inf), f32("bs", 0.1), i8("bz", 0), yz])
model("qlinearmatmul_bscale_len.onnx", qmm("ys", "bs", "bz"),
      base + [f32("ys", 0.1), f32("bs", [0.1, 0.1]), i8("bz", [0, 0]), yz])
Wc = i8("w", np.ones((8, 3, 3, 3)))
conv = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"], name="quant"),
        helper.make_node("QLinearConv", ["xq", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["yq"], name="qconv",
                         kernel_shape=[3, 3]),
        helper.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["y"], name="dequant")]
xz = u8(0)
xz.name = "xz"
model("qlinearconv_wzp_len.onnx", conv, [f32("xs", 0.1), xz, Wc, f32("ws", [0.1] * 8), i8("wz", [0] * 5),
                                          f32("ys", 0.1), yz], x_dims=(1, 3, 6, 6))
mmi = [helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"], name="dq"),
       helper.make_node("MatMulInteger", ["xq", "w", "xz", "wz"], ["acc"], name="mmi"),
       helper.make_node("Cast", ["acc"], ["y"], to=TensorProto.FLOAT)]
model("matmulinteger_bzp_len.onnx", mmi, [W, i8("wz", [0, 0])])
