#!/usr/bin/python3
"""The hostile-input corpus's ONNX and Thinc-bytes cases (issue 30): each file is a regression input
that tests/test_hostile.c loads, expecting the status and message fragment MANIFEST gives it; the
fuzz targets replay them too (fuzz/run.sh). The .lithe cases are written by test_hostile itself
(HOSTILE_DUMP=fuzz/hostile), from a model it saves and then damages.

    /usr/bin/python3 fuzz/hostile/make_hostile.py   # writes fuzz/hostile/*.onnx, *.bin
"""
import os
import struct

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

here = os.path.dirname(os.path.abspath(__file__))


def conv_model(name, x_dims=(1, 3, 8, 8), **attrs):
    W = numpy_helper.from_array(np.full((4, 3, 3, 3), 0.1, dtype=np.float32), "W")
    B = numpy_helper.from_array(np.zeros(4, dtype=np.float32), "B")
    node = helper.make_node("Conv", ["x", "W", "B"], ["y"], name="conv", **attrs)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_dims))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [W, B])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="hostile")
    m.ir_version = 8
    with open(os.path.join(here, name), "wb") as f:
        f.write(m.SerializeToString())


conv_model("conv_kernel_0.onnx", kernel_shape=[0, 0])
conv_model("conv_kernel_neg3.onnx", kernel_shape=[-3, -3])
conv_model("conv_kernel_2p31.onnx", kernel_shape=[2 ** 31, 2 ** 31])
conv_model("conv_kernel_mismatch.onnx", kernel_shape=[5, 5])
conv_model("conv_stride_0.onnx", strides=[0, 0])
conv_model("conv_dilation_0.onnx", dilations=[0, 1])
conv_model("conv_group_0.onnx", group=0)
conv_model("conv_group_3.onnx", group=3)
conv_model("conv_pads_neg.onnx", pads=[-1, 0, 0, 0])
conv_model("input_dim_neg3.onnx", x_dims=(1, 3, -3, 8))


# Issue 23 (1-D / 3-D windows, resampling, normalizations): attributes refused at load.
def one_node(name, op, x_dims, inits=(), n_inputs=None, opset=13, outputs=("y",), **attrs):
    tensors = [numpy_helper.from_array(a, n) for n, a in inits]
    node = helper.make_node(op, ["x"] + [n for n, _ in inits], list(outputs), name="n", **attrs)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_dims))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], tensors)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="hostile")
    m.ir_version = 8
    with open(os.path.join(here, name), "wb") as f:
        f.write(m.SerializeToString())


w1 = [("W", np.full((4, 3, 3), 0.1, dtype=np.float32))]
one_node("conv1d_kernel_mismatch.onnx", "Conv", (1, 3, 8), w1, kernel_shape=[5])
one_node("conv_rank4.onnx", "Conv", (1, 3, 4, 4, 4, 4), kernel_shape=[1, 1, 1, 1])
one_node("convt1d_output_padding_2.onnx", "ConvTranspose", (1, 3, 8), [("W", np.full((3, 2, 3), 0.1, dtype=np.float32))],
         strides=[2], output_padding=[1, 1])
one_node("pool_auto_pad_bad.onnx", "MaxPool", (1, 3, 8, 8), kernel_shape=[2, 2], auto_pad="SAME_MIDDLE")
one_node("pool_ceil_mode_2.onnx", "AveragePool", (1, 3, 8, 8), kernel_shape=[2, 2], ceil_mode=2)
one_node("pool1d_pads_3.onnx", "MaxPool", (1, 3, 8), kernel_shape=[3], pads=[1, 1, 1])
one_node("lppool_p3.onnx", "LpPool", (1, 3, 8, 8), kernel_shape=[2, 2], p=3)
one_node("resize_mode_area.onnx", "Resize", (1, 3, 8, 8), mode="area")
one_node("resize_nearest_mode_bad.onnx", "Resize", (1, 3, 8, 8), nearest_mode="round_half_even")
one_node("resize_coord_bad.onnx", "Resize", (1, 3, 8, 8), coordinate_transformation_mode="center")
one_node("depth_to_space_mode_bad.onnx", "DepthToSpace", (1, 8, 4, 4), blocksize=2, mode="RDC")
one_node("space_to_depth_blocksize_0.onnx", "SpaceToDepth", (1, 8, 4, 4), blocksize=0)
one_node("lrn_no_size.onnx", "LRN", (1, 8, 4, 4))
one_node("groupnorm_groups_0.onnx", "GroupNormalization", (1, 8, 4, 4), num_groups=0)
# BatchNormalization as torch exports it in training mode (opset 14+: batch statistics, and the
# running averages as extra outputs): refused at load, not failed at run time.
bn = [(k, np.full(8, v, dtype=np.float32)) for k, v in (("s", 1.0), ("b", 0.0), ("m", 0.0), ("v", 1.0))]
one_node("batchnorm_training_mode.onnx", "BatchNormalization", (2, 8, 4, 4), bn, opset=15, training_mode=1)
one_node("batchnorm_running_outputs.onnx", "BatchNormalization", (2, 8, 4, 4), bn, opset=15,
         outputs=("y", "running_mean", "running_var"))

# An initializer declaring 25e9 floats with 288 raw bytes: refused before any allocation.
W = onnx.TensorProto()
W.name, W.data_type = "W", TensorProto.FLOAT
W.dims.extend([25000000000])
W.raw_data = b"\0" * 288
node = helper.make_node("MatMul", ["x", "W"], ["y"])
g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [W])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
m.ir_version = 8
with open(os.path.join(here, "init_25e9_floats.onnx"), "wb") as f:
    f.write(m.SerializeToString())


# The same refusal for the sizes an allocator would still grant (6 and 12 GB: mapped lazily by a
# malloc that succeeds under overcommit), for each way ONNX stores a tensor: raw bytes, float_data,
# float16 raw bytes, int64_data, and external data (short file; a declared length past its end).
def declared_big(name, dtype, dims, fill):
    W = onnx.TensorProto()
    W.name, W.data_type = "W", dtype
    W.dims.extend(dims)
    fill(W)
    node = helper.make_node("MatMul", ["x", "W"], ["y"])
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, dims[0]])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [W])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    with open(os.path.join(here, name), "wb") as f:
        f.write(m.SerializeToString())


def external(W, length=None):
    W.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "init_external.data"),) + ((("length", str(length)),) if length else ()):
        e = W.external_data.add()
        e.key, e.value = k, v


open(os.path.join(here, "init_external.data"), "wb").write(b"\0" * 288)
declared_big("init_6GB_raw.onnx", TensorProto.FLOAT, [3, 500000000], lambda W: setattr(W, "raw_data", b"\0" * 288))
declared_big("init_12GB_raw.onnx", TensorProto.FLOAT, [3, 1000000000], lambda W: setattr(W, "raw_data", b"\0" * 288))
declared_big("init_12GB_float_data.onnx", TensorProto.FLOAT, [3, 1000000000], lambda W: W.float_data.extend([0.0] * 72))
declared_big("init_6GB_f16_raw.onnx", TensorProto.FLOAT16, [3, 1000000000], lambda W: setattr(W, "raw_data", b"\0" * 288))
declared_big("init_12GB_int64_data.onnx", TensorProto.INT64, [3, 500000000], lambda W: W.int64_data.extend([0] * 72))
declared_big("init_12GB_external.onnx", TensorProto.FLOAT, [3, 1000000000], external)
declared_big("init_12GB_external_length.onnx", TensorProto.FLOAT, [3, 1000000000], lambda W: external(W, 12000000000))
print("wrote the ONNX cases to", here)

# Thinc bytes for Relu(nO=3, nI=2) whose W declares shape (2^31, 2^31) with no data: the element
# count times 4 wrapped to 0 at 2^64 ("its shape needs 0") and matched the empty data.
from srsly.msgpack import packb, unpackb  # noqa: E402
from thinc.api import Relu  # noqa: E402

relu = Relu(3, 2)
relu.initialize(X=np.zeros((1, 2), dtype="f"))
d = unpackb(relu.to_bytes(), raw=False)
d["params"][0]["W"] = {b"nd": True, b"type": "<f4", b"kind": b"", b"shape": [2 ** 31, 2 ** 31], b"data": b""}
with open(os.path.join(here, "thinc_shape_wraps.bin"), "wb") as f:
    f.write(packb(d, use_bin_type=True))
print("wrote thinc_shape_wraps.bin")

# The same Relu's bytes with an attr "lora_alpha:W" (lithe's LoRA adapter attr): it loaded, and then
# lithe_model_to_thinc_bytes refused to save what had loaded (fuzz_thinc_bytes, CI of 2026-11-30).
d = unpackb(relu.to_bytes(), raw=False)
d["attrs"][0]["lora_alpha:W"] = packb(8.0)
with open(os.path.join(here, "thinc_lora_alpha.bin"), "wb") as f:
    f.write(packb(d, use_bin_type=True))
print("wrote thinc_lora_alpha.bin")

# TF.js: the fuzz seed mlp (Dense, Dropout, Dense) with its second Dense renamed to the first's
# name, and with its Dropout rate 5.0; each model.json beside its own weights file.
seed = open(os.path.join(here, "..", "corpus", "tfjs", "mlp.bin"), "rb").read()
js, weights = seed.split(b"\0", 1)
for name, old, new in (("tfjs_duplicate_names", b'"name":"dense_Dense2"', b'"name":"dense_Dense1"'),
                       ("tfjs_dropout_5", b'"rate":0.5', b'"rate":5.0')):
    assert old in js
    bad = js.replace(old, new).replace(b'"paths":["w.bin"]', b'"paths":["%s.weights.bin"]' % name.encode())
    open(os.path.join(here, name + ".json"), "wb").write(bad)
    open(os.path.join(here, name + ".weights.bin"), "wb").write(weights)
print("wrote the TF.js cases")
