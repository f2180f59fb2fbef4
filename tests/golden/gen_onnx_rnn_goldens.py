#!/usr/bin/python3
"""Golden values for tests/test_onnx_rnn.c: ONNX's recurrent operators (LSTM, GRU, RNN).

    /usr/bin/python3 tests/golden/gen_onnx_rnn_goldens.py OUT.txt

Part 1, from PyTorch 1.13 (Debian's python3-torch): nn.LSTM, nn.GRU and nn.RNN (tanh and relu),
one and two layers, bidirectional, batch_first, learned initial states, exported by
torch.onnx.export at opsets 13 and 14 (eval mode, no constant folding, so the graph keeps torch's
parameters and the exporter's Slice / Concat gate reordering between them and the operator). For
each NAME, as gen_onnx_goldens.py writes them: NAME.onnx, NAME.x, NAME.y, NAME.r (loss =
sum(y * r)), NAME.dx, NAME.grad.<param> (torch autograd), NAME.n_params, and NAME.sgd.<param>,
NAME.losses, NAME.lr, NAME.steps after five SGD steps. The text classifiers (Embedding -> GRU /
LSTM -> last state -> Linear, ids as input) are the issue's done-when.

Part 2, what torch never exports (sequence_lens, direction reverse, layout 1, clip,
linear_before_reset 0, RNN Sigmoid): graphs built with onnx.helper whose W, R, B, initial states
are initializers, against a float64 numpy implementation of the ONNX operator's definition written
here (NAME.y); the C test checks gradients by finite differences.
"""
import sys

import numpy

from golden_records import rec, torch_goldens, torch_onnx_bytes, write

try:
    import torch
    import torch.nn as nn
    import onnx
    from onnx import helper, TensorProto, numpy_helper
except ImportError as e:
    sys.exit(f"gen_onnx_rnn_goldens.py: {e}; install Debian's python3-torch and python3-onnx, run with /usr/bin/python3")

rng = numpy.random.RandomState(23)


class Seq(nn.Module):
    """A recurrent layer; the output is Y, Y_h (and Y_c) flattened and concatenated, so every
    output of the ONNX node is checked. learn_h0: the initial states are parameters."""

    def __init__(self, rnn, learn_h0=False):
        super().__init__()
        self.rnn = rnn
        n = rnn.num_layers * (2 if rnn.bidirectional else 1)
        self.lstm = isinstance(rnn, nn.LSTM)
        if learn_h0:
            self.h0 = nn.Parameter(torch.randn(n, 2, rnn.hidden_size) * 0.5)
            if self.lstm:
                self.c0 = nn.Parameter(torch.randn(n, 2, rnn.hidden_size) * 0.5)
        self.learn_h0 = learn_h0

    def forward(self, x):
        if self.learn_h0:
            y, h = self.rnn(x, (self.h0, self.c0) if self.lstm else self.h0)
        else:
            y, h = self.rnn(x)
        hs = list(h) if self.lstm else [h]
        return torch.cat([y.reshape(-1)] + [t.reshape(-1) for t in hs])


class Classifier(nn.Module):
    """Embedding -> GRU / LSTM -> the last layer's final state -> Linear."""

    def __init__(self, kind):
        super().__init__()
        self.emb = nn.Embedding(20, 6)
        self.rnn = (nn.LSTM if kind == "lstm" else nn.GRU)(6, 8, batch_first=True)
        self.fc = nn.Linear(8, 3)

    def forward(self, ids):
        _, h = self.rnn(self.emb(ids))
        if isinstance(h, tuple):
            h = h[0]
        return self.fc(h[-1])


def export(name, model, x, opset, lr=0.1, steps=5):
    data = torch_onnx_bytes(model, x, opset)
    assert torch_goldens(name, model, x, data, rng, lr, steps), name  # every parameter kept


def randx(*shape):
    return torch.tensor(rng.standard_normal(shape).astype("float32"))


torch.manual_seed(23)
export("lstm", Seq(nn.LSTM(3, 5)), randx(6, 2, 3), 13)
export("lstm2bi", Seq(nn.LSTM(3, 4, num_layers=2, bidirectional=True, batch_first=True), learn_h0=True),
       randx(2, 5, 3), 14, lr=0.02)
export("gru", Seq(nn.GRU(3, 5)), randx(6, 2, 3), 14)
export("gru2bi", Seq(nn.GRU(3, 4, num_layers=2, bidirectional=True, batch_first=True), learn_h0=True),
       randx(2, 5, 3), 13)
export("rnn_tanh", Seq(nn.RNN(3, 4, num_layers=2), learn_h0=True), randx(5, 2, 3), 13)
export("rnn_relu", Seq(nn.RNN(3, 4, nonlinearity="relu", bidirectional=True, batch_first=True)), randx(2, 5, 3), 14, lr=0.02)
ids = torch.tensor(rng.randint(0, 20, size=(3, 7)), dtype=torch.int64)
export("gru_clf", Classifier("gru"), ids, 13, lr=0.1)
export("lstm_clf", Classifier("lstm"), ids, 14, lr=0.1)


# ---- part 2: the ONNX definition in float64, for what torch does not export ----

def sig(v):
    return 1.0 / (1.0 + numpy.exp(-v))


ACT = {"Sigmoid": sig, "Tanh": numpy.tanh, "Relu": lambda v: numpy.maximum(v, 0.0)}


def ref(op, X, W, R, B, lens, h0, c0, direction, layout, clip, lbr, acts):
    """ONNX's LSTM / GRU / RNN (no peepholes), float64."""
    if layout == 1:
        X = X.transpose(1, 0, 2)
        h0 = None if h0 is None else h0.transpose(1, 0, 2)
        c0 = None if c0 is None else c0.transpose(1, 0, 2)
    T, Bn, _ = X.shape
    D, G, _ = W.shape
    H = R.shape[2]
    ng = G // H
    Y = numpy.zeros((T, D, Bn, H))
    Yh = numpy.zeros((D, Bn, H))
    Yc = numpy.zeros((D, Bn, H))
    lens = numpy.full(Bn, T) if lens is None else lens
    per = len(acts) // D
    cl = (lambda v: numpy.clip(v, -clip, clip)) if clip else (lambda v: v)
    for d in range(D):
        rev = direction == "reverse" or d == 1
        f = [ACT[a] for a in acts[d * per:(d + 1) * per]]
        Wb, Rb = (B[d, :G], B[d, G:]) if B is not None else (numpy.zeros(G), numpy.zeros(G))
        for b in range(Bn):
            h = numpy.zeros(H) if h0 is None else h0[d, b].copy()
            c = numpy.zeros(H) if c0 is None else c0[d, b].copy()
            L = int(lens[b])
            steps = range(L - 1, -1, -1) if rev else range(L)
            for t in steps:
                x = X[t, b]
                g = lambda k, hh: W[d, k * H:(k + 1) * H] @ x + R[d, k * H:(k + 1) * H] @ hh + Wb[k * H:(k + 1) * H] + Rb[k * H:(k + 1) * H]
                if op == "RNN":
                    h = f[0](cl(g(0, h)))
                elif op == "GRU":
                    z = f[0](cl(g(0, h)))
                    r = f[0](cl(g(1, h)))
                    if lbr:
                        hh = f[1](cl(W[d, 2 * H:] @ x + Wb[2 * H:] + r * (R[d, 2 * H:] @ h + Rb[2 * H:])))
                    else:
                        hh = f[1](cl(g(2, r * h)))
                    h = (1 - z) * hh + z * h
                else:
                    i, o, fg, cc = f[0](cl(g(0, h))), f[0](cl(g(1, h))), f[0](cl(g(2, h))), f[1](cl(g(3, h)))
                    c = fg * c + i * cc
                    h = o * f[2](c)
                Y[t, d, b] = h
            Yh[d, b] = h
            Yc[d, b] = c
    if layout == 1:
        return Y.transpose(2, 0, 1, 3), Yh.transpose(1, 0, 2), Yc.transpose(1, 0, 2)
    return Y, Yh, Yc


def spec_case(name, op, T=5, Bn=3, I=3, H=4, direction="forward", layout=0, clip=None, lbr=0, acts=None,
              lens=None, states=True, opset=14):
    D = 2 if direction == "bidirectional" else 1
    ng = {"LSTM": 4, "GRU": 3, "RNN": 1}[op]
    f32 = lambda *s: (rng.standard_normal(s) * 0.6).astype("float32")
    X = f32(*((Bn, T, I) if layout else (T, Bn, I)))
    W, R, B = f32(D, ng * H, I), f32(D, ng * H, H), f32(D, 2 * ng * H)
    sshape = (Bn, D, H) if layout else (D, Bn, H)
    h0 = f32(*sshape) if states else None
    c0 = f32(*sshape) if states and op == "LSTM" else None
    inits = [numpy_helper.from_array(W, "W"), numpy_helper.from_array(R, "R"), numpy_helper.from_array(B, "B")]
    inputs = ["x", "W", "R", "B", "", "", ""]
    if lens is not None:
        inits.append(numpy_helper.from_array(numpy.array(lens, dtype="int32"), "lens"))
        inputs[4] = "lens"
    if h0 is not None:
        inits.append(numpy_helper.from_array(h0, "h0"))
        inputs[5] = "h0"
    if c0 is not None:
        inits.append(numpy_helper.from_array(c0, "c0"))
        inputs[6] = "c0"
    while inputs[-1] == "":
        inputs.pop()
    attrs = {"hidden_size": H, "direction": direction, "layout": layout}
    if clip:
        attrs["clip"] = clip
    if op == "GRU":
        attrs["linear_before_reset"] = lbr
    if acts:
        attrs["activations"] = acts
    outs = ["Y", "Yh", "Yc"] if op == "LSTM" else ["Y", "Yh"]
    node = helper.make_node(op, inputs, outs, name=f"{name}_node", **attrs)
    # one output: Y, Y_h (and Y_c) flattened and concatenated
    flat = []
    nodes = [node, helper.make_node("Constant", [], ["m1"], value=numpy_helper.from_array(numpy.array([-1], dtype="int64")))]
    for o in outs:
        nodes.append(helper.make_node("Reshape", [o, "m1"], [o + "_f"]))
        flat.append(o + "_f")
    nodes.append(helper.make_node("Concat", flat, ["y"], axis=0))
    y_len = T * D * Bn * H + D * Bn * H * (2 if op == "LSTM" else 1)
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(X.shape))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [int(y_len)])], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    onnx.checker.check_model(model)
    if acts is None:
        acts = {"LSTM": ["Sigmoid", "Tanh", "Tanh"], "GRU": ["Sigmoid", "Tanh"], "RNN": ["Tanh"]}[op] * D
    d64 = lambda a: None if a is None else a.astype("float64")
    Y, Yh, Yc = ref(op, d64(X), d64(W), d64(R), d64(B), None if lens is None else numpy.array(lens), d64(h0), d64(c0),
                    direction, layout, clip, lbr, acts)
    y = numpy.concatenate([Y.ravel(), Yh.ravel()] + ([Yc.ravel()] if op == "LSTM" else []))
    rec(f"{name}.onnx", numpy.frombuffer(model.SerializeToString(), dtype=numpy.uint8))
    rec(f"{name}.x", X)
    rec(f"{name}.y", y.astype("float32"))
    rec(f"{name}.r", rng.standard_normal(y.shape).astype("float32"))


spec_case("s_lstm_lens", "LSTM", direction="bidirectional", lens=[5, 2, 0])
spec_case("s_lstm_rev_l1", "LSTM", direction="reverse", layout=1, lens=[3, 5, 1])
spec_case("s_lstm_clip", "LSTM", clip=0.7)
spec_case("s_gru_lbr0", "GRU", direction="bidirectional", lbr=0, lens=[4, 5, 2])
spec_case("s_gru_rev_l1", "GRU", direction="reverse", layout=1, lbr=1, clip=0.9)
spec_case("s_rnn_sig", "RNN", direction="bidirectional", acts=["Sigmoid", "Sigmoid"], lens=[1, 5, 3], layout=1)
spec_case("s_rnn_nostate", "RNN", acts=["Relu"], states=False)



def hostile(name, op, attrs, extra_inputs=(), H_w=4):
    """A node lithe must refuse at load, naming it: NAME.onnx only."""
    ng = {"LSTM": 4, "GRU": 3, "RNN": 1}[op]
    H, I = 4, 3
    inits = [numpy_helper.from_array(numpy.zeros((1, ng * H_w, I), "float32"), "W"),
             numpy_helper.from_array(numpy.zeros((1, ng * H, H), "float32"), "R")]
    inputs = ["x", "W", "R"] + list(extra_inputs)
    if "P" in extra_inputs:
        inits.append(numpy_helper.from_array(numpy.zeros((1, 3 * H), "float32"), "P"))
    node = helper.make_node(op, inputs, ["Y"], name=f"{name}_node", hidden_size=H, **attrs)
    graph = helper.make_graph([node], name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 1, I])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    rec(f"{name}.onnx", numpy.frombuffer(model.SerializeToString(), dtype=numpy.uint8))


hostile("h_acts", "LSTM", {"activations": ["Relu", "Tanh", "Tanh"]})
hostile("h_rnn_acts", "RNN", {"activations": ["Elu"]})
hostile("h_alpha", "GRU", {"activations": ["Sigmoid", "Tanh"], "activation_alpha": [1.0]})
hostile("h_peephole", "LSTM", {}, ["", "", "", "", "P"])
hostile("h_direction", "RNN", {"direction": "sideways"})
hostile("h_layout", "GRU", {"layout": 2})
hostile("h_clip", "RNN", {"clip": -1.0})
hostile("h_forget", "LSTM", {"input_forget": 1})
hostile("h_wshape", "GRU", {}, H_w=5)

write(__file__, "onnx_rnn_goldens.txt")
