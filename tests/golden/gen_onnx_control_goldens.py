#!/usr/bin/python3
"""Golden values for tests/test_onnx_control.c: ONNX control flow (If, Loop, Scan) that lithe
expands at load.

    /usr/bin/python3 tests/golden/gen_onnx_control_goldens.py OUT.txt

Part 1, from PyTorch 1.13: torch.jit.script'ed modules exported by torch.onnx.export (opset 13),
an If on a constant buffer (either branch) and a Loop over a buffer's trip count that reads the
iteration number; NAME.onnx, .x, .y, .r (loss = sum(y * r)), .dx, .grad.<param> (autograd),
.n_params, and five SGD steps (.lr, .steps, .losses, .sgd.<param>), as gen_onnx_goldens.py.

Part 2, graphs built with onnx.helper against float64 numpy written here from the operators'
definitions: Scan (a state and a scan output, forward and reverse directions), a Loop with a scan
output, an If whose condition is arithmetic on constants, an If nested in an If branch. Part 3:
graphs lithe must refuse at load naming the node (runtime trip count, runtime condition, a while
loop, a scan over an input of unknown length).
"""
import sys
from typing import List

import numpy

from golden_records import rec, torch_goldens, torch_onnx_bytes, write

try:
    import torch
    import torch.nn as nn
    import onnx
    from onnx import helper, TensorProto, numpy_helper
except ImportError as e:
    sys.exit(f"gen_onnx_control_goldens.py: {e}; install Debian's python3-torch and python3-onnx, run with /usr/bin/python3")

rng = numpy.random.RandomState(77)


class IfM(nn.Module):
    def __init__(self, flag):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.register_buffer("flag", torch.tensor(flag))

    def forward(self, x):
        if bool(self.flag):
            y = torch.tanh(self.lin(x))
        else:
            y = torch.sigmoid(self.lin(x)) * 2.0
        return y


class LoopM(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.register_buffer("n", torch.tensor(3))

    def forward(self, x):
        h = x
        for i in range(int(self.n)):
            h = torch.tanh(self.lin(h)) + i * 0.5
        return h


def export(name, model, x, lr=0.1, steps=5):
    data = torch_onnx_bytes(model, x, 13, script=True)
    ops = {n.op_type for n in onnx.load_from_string(data).graph.node}
    assert ops & {"If", "Loop"}, (name, ops)  # torch kept the control flow
    torch_goldens(name, model, x, data, rng, lr, steps, count_all=True)


def randx(*shape):
    return torch.tensor(rng.standard_normal(shape).astype("float32"))


torch.manual_seed(7)
export("if_then", IfM(True), randx(3, 4))
export("if_else", IfM(False), randx(3, 4))
export("loop3", LoopM(), randx(3, 4))

# ---- part 2: onnx.helper graphs, float64 references ----

f32 = lambda *s: (rng.standard_normal(s) * 0.5).astype("float32")
vi = lambda name, shape: helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def save(name, graph, x, y, opset=13):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    onnx.checker.check_model(model)
    rec(f"{name}.onnx", numpy.frombuffer(model.SerializeToString(), dtype=numpy.uint8))
    rec(f"{name}.x", x)
    rec(f"{name}.y", numpy.asarray(y, dtype="float64").astype("float32"))
    rec(f"{name}.r", rng.standard_normal(numpy.shape(y)).astype("float32"))


def scan_case(name, in_dir, out_dir, T=4, D=3):
    """Scan: state s (1, D) and x_t (D,): s' = tanh(s @ W + x_t), scan output s' * 2."""
    W = f32(D, D)
    body = helper.make_graph(
        [helper.make_node("MatMul", ["s_in", "W"], ["sw"]),
         helper.make_node("Add", ["sw", "x_t"], ["pre"]),
         helper.make_node("Tanh", ["pre"], ["s_out"]),
         helper.make_node("Add", ["s_out", "s_out"], ["y_t"])],
        "body", [vi("s_in", [1, D]), vi("x_t", [D])], [vi("s_out", [1, D]), vi("y_t", [1, D])])
    s0 = f32(1, D)
    node = helper.make_node("Scan", ["s0", "x"], ["s_fin", "ys"], name=f"{name}_node", body=body, num_scan_inputs=1,
                            scan_input_directions=[in_dir], scan_output_directions=[out_dir])
    flat = [helper.make_node("Constant", [], ["m1"], value=numpy_helper.from_array(numpy.array([-1], dtype="int64"))),
            helper.make_node("Reshape", ["s_fin", "m1"], ["a"]), helper.make_node("Reshape", ["ys", "m1"], ["b"]),
            helper.make_node("Concat", ["a", "b"], ["y"], axis=0)]
    graph = helper.make_graph([node] + flat, name, [vi("x", [T, D])], [vi("y", [D + T * D])],
                              initializer=[numpy_helper.from_array(W, "W"), numpy_helper.from_array(s0, "s0")])
    x = f32(T, D)
    s = s0.astype("float64")
    ys = []
    for k in range(T):
        t = T - 1 - k if in_dir else k
        s = numpy.tanh(s @ W.astype("float64") + x[t].astype("float64"))
        ys.append(s * 2)
    if out_dir:
        ys = ys[::-1]
    save(name, graph, x, numpy.concatenate([s.ravel()] + [v.ravel() for v in ys]))


scan_case("scan_fwd", 0, 0)
scan_case("scan_rev", 1, 1)


def loop_case(name, M=3, D=3):
    """Loop M times: h' = tanh(h * w + iteration_num), scan output h' (stacked)."""
    w = f32(D)
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Cast", ["i"], ["fi"], to=TensorProto.FLOAT),
         helper.make_node("Mul", ["h_in", "w"], ["hw"]),
         helper.make_node("Add", ["hw", "fi"], ["pre"]),
         helper.make_node("Tanh", ["pre"], ["h_out"]),
         helper.make_node("Identity", ["h_out"], ["h_scan"])],
        "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                 helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []), vi("h_in", [2, D])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []), vi("h_out", [2, D]), vi("h_scan", [2, D])])
    node = helper.make_node("Loop", ["M", "", "x"], ["h_fin", "hs"], name=f"{name}_node", body=body)
    flat = [helper.make_node("Constant", [], ["m1"], value=numpy_helper.from_array(numpy.array([-1], dtype="int64"))),
            helper.make_node("Reshape", ["h_fin", "m1"], ["a"]), helper.make_node("Reshape", ["hs", "m1"], ["b"]),
            helper.make_node("Concat", ["a", "b"], ["y"], axis=0)]
    graph = helper.make_graph([node] + flat, name, [vi("x", [2, D])], [vi("y", [2 * D * (M + 1)])],
                              initializer=[numpy_helper.from_array(w, "w"),
                                           numpy_helper.from_array(numpy.array(M, dtype="int64"), "M")])
    x = f32(2, D)
    h = x.astype("float64")
    hs = []
    for i in range(M):
        h = numpy.tanh(h * w + i)
        hs.append(h)
    save(name, graph, x, numpy.concatenate([h.ravel()] + [v.ravel() for v in hs]))


loop_case("loop_scanout")


def if_case(name, a, b, nested):
    """If (a > b) on Constants: then x * w (or, nested, an If on (b > a) inside), else exp(x)."""
    D = 3
    w = f32(D)
    inner = helper.make_node(
        "If", ["c2"], ["t_out"], name=f"{name}_inner",
        then_branch=helper.make_graph([helper.make_node("Neg", ["x"], ["n_out"])], "t2", [], [vi("n_out", [2, D])]),
        else_branch=helper.make_graph([helper.make_node("Mul", ["x", "w"], ["m_out"])], "e2", [], [vi("m_out", [2, D])]))
    then_nodes = ([helper.make_node("Greater", ["cb", "ca"], ["c2"]), inner] if nested
                  else [helper.make_node("Mul", ["x", "w"], ["t_out"])])
    then_g = helper.make_graph(then_nodes, "then", [], [vi("t_out", [2, D])])
    else_g = helper.make_graph([helper.make_node("Exp", ["x"], ["e_out"])], "else", [], [vi("e_out", [2, D])])
    nodes = [helper.make_node("Constant", [], ["ca"], value=numpy_helper.from_array(numpy.array(a, dtype="float32"))),
             helper.make_node("Constant", [], ["cb"], value=numpy_helper.from_array(numpy.array(b, dtype="float32"))),
             helper.make_node("Greater", ["ca", "cb"], ["c"]),
             helper.make_node("If", ["c"], ["y"], name=f"{name}_node", then_branch=then_g, else_branch=else_g)]
    graph = helper.make_graph(nodes, name, [vi("x", [2, D])], [vi("y", [2, D])],
                              initializer=[numpy_helper.from_array(w, "w")])
    x = f32(2, D)
    y = x.astype("float64") * w if a > b else numpy.exp(x.astype("float64"))
    save(name, graph, x, y)


if_case("if_arith", 2.0, 1.0, False)
if_case("if_arith_else", 1.0, 2.0, False)
if_case("if_nested", 2.0, 1.0, True)

# ---- part 3: refused at load, naming the node ----


def hostile(name, nodes, inits=(), x_shape=(2, 3)):
    graph = helper.make_graph(nodes, name, [vi("x", list(x_shape))], [vi("y", None)], initializer=list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    rec(f"{name}.onnx", numpy.frombuffer(model.SerializeToString(), dtype=numpy.uint8))


D = 3
loop_body = helper.make_graph(
    [helper.make_node("Identity", ["cond_in"], ["cond_out"]), helper.make_node("Tanh", ["h_in"], ["h_out"])],
    "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
             helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []), vi("h_in", [2, D])],
    [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []), vi("h_out", [2, D])])
i64 = lambda name, v: numpy_helper.from_array(numpy.array(v, dtype="int64"), name)
hostile("h_loop_runtime", [helper.make_node("Shape", ["x"], ["sh"]),
                           helper.make_node("Gather", ["sh", "zero"], ["M"], axis=0),
                           helper.make_node("Loop", ["M", "", "x"], ["y"], name="h_loop_runtime_node", body=loop_body)],
        [i64("zero", 0)])
hostile("h_if_runtime", [helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
                         helper.make_node("Greater", ["s", "zf"], ["c"]),
                         helper.make_node("If", ["c"], ["y"], name="h_if_runtime_node",
                                          then_branch=helper.make_graph([helper.make_node("Neg", ["x"], ["a"])], "t", [], [vi("a", [2, D])]),
                                          else_branch=helper.make_graph([helper.make_node("Exp", ["x"], ["b"])], "e", [], [vi("b", [2, D])]))],
        [numpy_helper.from_array(numpy.array(0.0, dtype="float32"), "zf")])
while_body = helper.make_graph(
    [helper.make_node("Less", ["i", "three"], ["cond_out"]), helper.make_node("Tanh", ["h_in"], ["h_out"])],
    "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
             helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []), vi("h_in", [2, D])],
    [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []), vi("h_out", [2, D])])
hostile("h_while", [helper.make_node("Loop", ["M", "", "x"], ["y"], name="h_while_node", body=while_body)],
        [i64("M", 10), i64("three", 3)])
scan_body = helper.make_graph([helper.make_node("Add", ["s_in", "x_t"], ["s_out"])], "body",
                              [vi("s_in", [D]), vi("x_t", [D])], [vi("s_out", [D])])
hostile("h_scan_dynamic", [helper.make_node("Scan", ["s0", "x"], ["y"], name="h_scan_dynamic_node", body=scan_body,
                                            num_scan_inputs=1)],
        [numpy_helper.from_array(numpy.zeros(D, "float32"), "s0")], x_shape=("T", D))
hostile("h_scan_axis", [helper.make_node("Scan", ["s0", "x"], ["y"], name="h_scan_axis_node", body=scan_body,
                                         num_scan_inputs=1, scan_input_axes=[1])],
        [numpy_helper.from_array(numpy.zeros(2, "float32"), "s0")])

write(__file__, "onnx_control_goldens.txt")
