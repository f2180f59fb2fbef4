"""Quantized ONNX graphs built with onnx.helper from float models, in the forms onnxruntime's
quantizer writes (issue 24 item 4): QDQ (QuantizeLinear -> DequantizeLinear around each quantized
operator; int8 weights, per tensor or per output channel, zero points 0; int32 biases with scale
x_scale * w_scale; activations uint8 or int8 with min / max calibration) and QOperator
(QLinearMatMul, QLinearConv; DynamicQuantizeLinear + MatMulInteger / ConvInteger). Shared by
tests/golden/gen_qdq_goldens.py and bench/qdq_model.py. onnxruntime's Python quantizer is not used
(not installed here): the graphs are written node by node, as it would write them.
"""
import numpy
from onnx import TensorProto, helper, numpy_helper

N = helper.make_node


class Graph:
    def __init__(self, x_shape, opset=13):
        self.nodes, self.inits, self.opset, self.n = [], [], opset, 0
        self.x_shape = ["batch"] + list(x_shape)[1:]  # any batch

    def name(self, p):
        self.n += 1
        return f"{p}{self.n}"

    def init(self, arr, p="c"):
        nm = self.name(p)
        self.inits.append(numpy_helper.from_array(numpy.asarray(arr), nm))
        return nm

    def node(self, op, ins, n_out=1, **attrs):
        outs = [self.name(op.lower() + "_") for _ in range(n_out)]
        self.nodes.append(N(op, ins, outs, name=self.name(op), **attrs))
        return outs[0] if n_out == 1 else outs

    def qdq(self, x, scale, zp):
        """Q -> DQ of an activation (per tensor)."""
        s, z = self.init(numpy.float32(scale), "s"), self.init(zp, "z")
        return self.node("DequantizeLinear", [self.node("QuantizeLinear", [x, s, z]), s, z])

    def dq_weight(self, q, scale, axis=None):
        s = self.init(numpy.asarray(scale, numpy.float32), "ws")
        z = self.init(numpy.zeros(numpy.asarray(scale).shape, q.dtype), "wz")
        attrs = {} if axis is None else {"axis": axis}
        return self.node("DequantizeLinear", [self.init(q, "w"), s, z], **attrs)

    def bytes(self, out):
        g = helper.make_graph(self.nodes, "qdq", [helper.make_tensor_value_info("x", TensorProto.FLOAT, self.x_shape)],
                              [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)], self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", self.opset)], producer_name="qdq_models")
        m.ir_version = 8
        return m.SerializeToString()


def act_params(lo, hi, signed):
    """onnxruntime's min / max calibration: the range widened to hold 0; int8 symmetric."""
    lo, hi = min(float(lo), 0.0), max(float(hi), 0.0)
    if signed:
        s = max(abs(lo), abs(hi)) / 127.0
        return numpy.float32(s), numpy.int8(0)
    s = (hi - lo) / 255.0
    return numpy.float32(s), numpy.uint8(round(-lo / s))


def quant_weight(W, axis, reduce_range=True):
    """Symmetric int8 codes; scales per tensor (axis None) or along axis. reduce_range (onnxruntime's
    quantizer option, which it recommends without VNNI): codes in [-64, 64], so its AVX2 u8 x s8
    kernel (vpmaddubsw, pairs summed in int16) cannot saturate; else [-127, 127]. A full-range weight
    makes onnxruntime's own AVX2 result off by several codes where a pair's sum passes 32767."""
    q = 64 if reduce_range else 127
    if axis is None:
        s = numpy.float32(numpy.abs(W).max() / q)
        return numpy.clip(numpy.rint(W / s), -q, q).astype(numpy.int8), s
    red = tuple(d for d in range(W.ndim) if d != axis)
    s = (numpy.abs(W).max(axis=red) / q).astype(numpy.float32)
    shp = [1] * W.ndim
    shp[axis] = -1
    return numpy.clip(numpy.rint(W / s.reshape(shp)), -q, q).astype(numpy.int8), s


def quant_bias(b, sx, sw):
    s = (numpy.float32(sx) * numpy.asarray(sw, numpy.float32)).astype(numpy.float32)
    return numpy.rint(b / s).astype(numpy.int32), s


def relu(v):
    return numpy.maximum(v, 0)


def qdq_mlp(rng, x_calib, widths, per_channel, signed_acts, gemm=True, x_shape=None):
    """A Linear -> Relu -> ... -> Linear MLP with float weights from rng, quantized (qdq_mlp_weights)."""
    Ws, bs = [], []
    for k, n in zip(widths[:-1], widths[1:]):
        Ws.append((rng.standard_normal((n, k)) / numpy.sqrt(k)).astype(numpy.float32))
        bs.append((rng.standard_normal(n) * 0.1).astype(numpy.float32))
    return qdq_mlp_weights(Ws, bs, x_calib, per_channel, signed_acts, gemm, x_shape)


def qdq_mlp_weights(Ws, bs, x_calib, per_channel, signed_acts, gemm=True, x_shape=None):
    """The MLP of weights Ws[i] (N, K) and biases bs[i], Relu between, quantized: per layer the input's
    Q -> DQ (ranges from x_calib), DQ(int8 W), an int32 bias, Relu; the output Q -> DQ. gemm:
    Gemm(transB=1) with the bias as C; else MatMul (W (K, N), per-channel axis 1) + Add of a float
    bias. Returns the bytes and the output's scale."""
    g = Graph(x_shape or x_calib.shape)
    a, h = "x", x_calib.reshape(-1, x_calib.shape[-1]).astype(numpy.float64)
    for i, (W, b) in enumerate(zip(Ws, bs)):
        signed = signed_acts[i % len(signed_acts)]
        sx, zx = act_params(h.min(), h.max(), signed)
        a = g.qdq(a, sx, zx)
        if gemm:
            q, sw = quant_weight(W, 0 if per_channel else None)
            bq, bsc = quant_bias(b, sx, sw)
            bias = g.node("DequantizeLinear", [g.init(bq, "b"), g.init(bsc, "bs"), g.init(numpy.zeros(bsc.shape, numpy.int32), "bz")],
                          **({"axis": 0} if per_channel else {}))
            a = g.node("Gemm", [a, g.dq_weight(q, sw, 0 if per_channel else None), bias], transB=1)
        else:
            q, sw = quant_weight(W.T.copy(), 1 if per_channel else None)
            a = g.node("Add", [g.node("MatMul", [a, g.dq_weight(q, sw, 1 if per_channel else None)]), g.init(b, "b")])
        h = h @ W.T.astype(numpy.float64) + b
        if i < len(Ws) - 1:
            a = g.node("Relu", [a])
            h = relu(h)
    sy, zy = act_params(h.min(), h.max(), False)
    return g.bytes(g.qdq(a, sy, zy)), float(sy)


def conv_ref(x, W, b, stride, pad, group):
    """float64 NCHW convolution (numpy), for calibration only."""
    n, c, hh, ww = x.shape
    m, cg, kh, kw = W.shape
    xp = numpy.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (hh + 2 * pad - kh) // stride + 1, (ww + 2 * pad - kw) // stride + 1
    y = numpy.zeros((n, m, oh, ow))
    mg = m // group
    for o in range(m):
        gi = o // mg
        for i in range(kh):
            for j in range(kw):
                patch = xp[:, gi * cg:(gi + 1) * cg, i:i + stride * oh:stride, j:j + stride * ow:stride]
                y[:, o] += numpy.einsum("nchw,c->nhw", patch, W[o, :, i, j])
    return y + b.reshape(1, -1, 1, 1)


def qdq_cnn(rng, x_calib, per_channel=True):
    """Conv 3x3 (pad 1) + Relu -> depthwise Conv 3x3 (stride 2, pad 1) + Clip(0, 6) -> Conv 1x1 ->
    GlobalAveragePool -> Flatten -> Gemm, each quantized QDQ (the pool and the Flatten between Q -> DQ
    pairs, as onnxruntime writes them: run in float)."""
    g = Graph(x_calib.shape)
    a, h = "x", x_calib.astype(numpy.float64)
    c = x_calib.shape[1]
    layers = [(8, c, 3, 1, 1, 1, "relu"), (8, 1, 3, 2, 1, 8, "clip"), (12, 8, 1, 1, 0, 1, None)]
    for m, cg, k, stride, pad, group, act in layers:
        W = (rng.standard_normal((m, cg, k, k)) / numpy.sqrt(cg * k * k)).astype(numpy.float32)
        b = (rng.standard_normal(m) * 0.1).astype(numpy.float32)
        sx, zx = act_params(h.min(), h.max(), False)
        a = g.qdq(a, sx, zx)
        q, sw = quant_weight(W, 0 if per_channel else None)
        bq, bs = quant_bias(b, sx, sw)
        bias = g.node("DequantizeLinear", [g.init(bq, "b"), g.init(bs, "bs"), g.init(numpy.zeros(bs.shape, numpy.int32), "bz")],
                      **({"axis": 0} if per_channel else {}))
        a = g.node("Conv", [a, g.dq_weight(q, sw, 0 if per_channel else None), bias], kernel_shape=[k, k],
                   strides=[stride, stride], pads=[pad] * 4, group=group)
        h = conv_ref(h, W.astype(numpy.float64), b, stride, pad, group)
        if act == "relu":
            a, h = g.node("Relu", [a]), relu(h)
        elif act == "clip":
            a, h = g.node("Clip", [a, g.init(numpy.float32(0), "onnx::Clip_"), g.init(numpy.float32(6), "onnx::Clip_")]), numpy.clip(h, 0, 6)
    s, z = act_params(h.min(), h.max(), False)
    a = g.node("GlobalAveragePool", [g.qdq(a, s, z)])
    h = h.mean(axis=(2, 3))
    s, z = act_params(h.min(), h.max(), False)
    a = g.node("Flatten", [g.qdq(a, s, z)])
    W = (rng.standard_normal((5, 12)) / numpy.sqrt(12)).astype(numpy.float32)
    s2, z2 = act_params(h.min(), h.max(), False)
    q, sw = quant_weight(W, 0)
    a = g.node("Gemm", [g.qdq(a, s2, z2), g.dq_weight(q, sw, 0)], transB=1)
    h = h @ W.T
    sy, zy = act_params(h.min(), h.max(), False)
    return g.bytes(g.qdq(a, sy, zy)), float(sy)
