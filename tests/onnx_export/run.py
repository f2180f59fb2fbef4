"""lithe_model_save_onnx against the peers (ctest: onnx_export; Debian's /usr/bin/python3):

    run.py CASES_BINARY ONNX_GOLDENS [NODE [TFJS_DIR]]

1. Writes the models of the ONNX parity tests (every "<name>.onnx" record of onnx_goldens.txt, made
   by torch.onnx.export in tests/golden/gen_onnx_goldens.py, with its input "<name>.x" and SGD rate
   "<name>.lr") and a model holding every initializer dtype (float64, float16, bfloat16 weights;
   int64 and int32 constants) and a model whose trained weight lives in an If branch (a subgraph)
   into a temporary folder; with TFJS_DIR (tests/tfjs's fixture output),
   its TF.js CNN (model.json + shards, lowered to a graph at load) too.
2. tests/onnx_export/cases.c fine-tunes each one for five SGD steps in lithe, and the native
   dense-catalogue trees it builds, and exports them all with lithe_model_save_onnx.
3. The onnx package's checker (full_check: shape inference too) accepts every exported file; a
   graph node's file keeps the original's opset, nodes (names, types, inputs, outputs, attributes),
   inputs, outputs and initializer names and dtypes, its int initializers byte for byte, and holds
   trained weights (not the original's); tied weights are written once.
4. onnxruntime-node predicts what lithe predicted, within 1e-5 of the output's scale (ort.mjs).
"""
import os
import shutil
import subprocess
import sys
import tempfile

import numpy
import onnx
from onnx import TensorProto, helper, numpy_helper


def read_goldens(path):
    recs = {}
    with open(path) as f:
        lines = [ln for ln in f.read().split("\n") if ln and not ln.startswith("#")]
    for head, vals in zip(lines[0::2], lines[1::2]):
        h = head.split()
        name, kind, ndim = h[0], h[1], int(h[2])
        shape = tuple(int(d) for d in h[3:3 + ndim])
        dtype = {"f": "float32", "d": "float64", "i": "int64"}[kind]
        recs[name] = numpy.array([float(v) if kind != "i" else int(v) for v in vals.split()], dtype=dtype).reshape(shape)
    return recs


def dtype_model():
    """y = Slice(Reshape((x @ cast(W64)) * cast(s16) + cast(b_bf16), cast(shape32)), starts64, ends64, axes64)."""
    rng = numpy.random.default_rng(7)
    w64 = numpy_helper.from_array(rng.standard_normal((4, 3)).astype("float64"), "w64")
    s16 = numpy_helper.from_array((1 + 0.1 * rng.standard_normal(3)).astype("float16"), "s16")
    bits = (numpy.array(0.1 * rng.standard_normal(3), "float32").view("uint32") >> 16).astype("<u2")
    bf = helper.make_tensor("bbf16", TensorProto.BFLOAT16, [3], bits.tobytes(), raw=True)
    shape = numpy_helper.from_array(numpy.array([-1, 3], "int32"), "shape32")
    ints = [numpy_helper.from_array(numpy.array([v], "int64"), n) for n, v in (("starts64", 0), ("ends64", 2), ("axes64", 1))]
    nodes = [helper.make_node("Cast", ["w64"], ["w"], to=TensorProto.FLOAT, name="cast_w"),
             helper.make_node("Cast", ["s16"], ["s"], to=TensorProto.FLOAT, name="cast_s"),
             helper.make_node("Cast", ["bbf16"], ["b"], to=TensorProto.FLOAT, name="cast_b"),
             helper.make_node("MatMul", ["x", "w"], ["h"], name="matmul"),
             helper.make_node("Mul", ["h", "s"], ["hs"], name="scale"),
             helper.make_node("Add", ["hs", "b"], ["z"], name="bias"),
             helper.make_node("Cast", ["shape32"], ["shape64"], to=TensorProto.INT64, name="cast_shape"),
             helper.make_node("Reshape", ["z", "shape64"], ["r"], name="reshape"),
             helper.make_node("Slice", ["r", "starts64", "ends64", "axes64"], ["y"], name="slice")]
    g = helper.make_graph(nodes, "dtypes", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 2])],
                          [w64, s16, bf, shape] + ints)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="onnx_export/run.py")
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    return m, rng.standard_normal((5, 4)).astype("float32")


def if_model():
    """y = If(true, then: x @ Wt, else: x @ We) + b: the trained branch weight lives in a subgraph."""
    rng = numpy.random.default_rng(8)

    def branch(name):
        w = numpy_helper.from_array(rng.standard_normal((4, 3)).astype("float32"), f"W_{name}")
        return helper.make_graph([helper.make_node("MatMul", ["x", f"W_{name}"], [f"y_{name}"], name=f"mm_{name}")],
                                 name, [], [helper.make_tensor_value_info(f"y_{name}", TensorProto.FLOAT, ["batch", 3])],
                                 [w])

    nodes = [helper.make_node("If", ["cond"], ["h"], then_branch=branch("then"), else_branch=branch("else"), name="if"),
             helper.make_node("Add", ["h", "b"], ["y"], name="bias")]
    g = helper.make_graph(nodes, "ifgraph", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])],
                          [numpy_helper.from_array(numpy.array(True), "cond"),
                           numpy_helper.from_array(rng.standard_normal(3).astype("float32"), "b")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="onnx_export/run.py")
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    return m, rng.standard_normal((5, 4)).astype("float32")


def attrs(node):
    """A node's attributes; a subgraph's without its initializers (they hold trained weights)."""
    out = []
    for a in node.attribute:
        a2 = onnx.AttributeProto()
        a2.CopyFrom(a)
        for g in ([a2.g] if a2.HasField("g") else []) + list(a2.graphs):
            del g.initializer[:]
        out.append((a.name, a2.SerializeToString()))
    return sorted(out)


def check_graph_export(name, src, out, failures):
    """The exported graph is the source graph with new float weights."""
    def fail(why):
        failures.append(f"{name}: {why}")

    if [(o.domain, o.version) for o in out.opset_import] != [(o.domain, o.version) for o in src.opset_import]:
        fail("opset changed")
    sn, on = src.graph.node, out.graph.node
    if [(n.name, n.op_type, list(n.input), list(n.output), attrs(n)) for n in sn] != \
            [(n.name, n.op_type, list(n.input), list(n.output), attrs(n)) for n in on]:
        fail("nodes changed")
    if [i.name for i in src.graph.input] != [i.name for i in out.graph.input] or \
            [o.name for o in src.graph.output] != [o.name for o in out.graph.output]:
        fail("inputs / outputs changed")
    si = {t.name: t for t in src.graph.initializer}
    oi = {t.name: t for t in out.graph.initializer}
    if list(si) != list(oi):
        fail("initializer names changed")
        return
    floats = (TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.BFLOAT16)
    moved = 0
    for k, t in si.items():
        u = oi[k]
        if t.data_type != u.data_type or list(t.dims) != list(u.dims):
            fail(f"initializer {k}: dtype or dims changed")
        a, b = numpy_helper.to_array(t), numpy_helper.to_array(u)
        if t.data_type not in floats and not numpy.array_equal(a, b):
            fail(f"integer initializer {k} changed")
        if t.data_type in floats and not numpy.array_equal(a.astype("float64"), b.astype("float64")):
            moved += 1
    if not moved:
        fail("no weight differs from the original: the export holds untrained weights")


def main():
    cases_bin, goldens = sys.argv[1], sys.argv[2]
    node = sys.argv[3] if len(sys.argv) > 3 else "node"
    tfjs = sys.argv[4] if len(sys.argv) > 4 else None
    here = os.path.dirname(os.path.abspath(__file__))
    work = tempfile.mkdtemp(prefix="lithe_onnx_export_")
    try:
        os.makedirs(os.path.join(work, "src"))
        os.makedirs(os.path.join(work, "out"))
        recs = read_goldens(goldens)
        graphs = []
        for k in recs:
            base = k[:-5]
            if k.endswith(".onnx") and base + ".x" in recs:
                with open(os.path.join(work, "src", base + ".onnx"), "wb") as f:
                    f.write(recs[k].astype("uint8").tobytes())
                numpy.save(os.path.join(work, "src", base + ".x.npy"), recs[base + ".x"])
                lr = float(recs[base + ".lr"][0]) if base + ".lr" in recs else 0.01
                graphs.append((base, lr))
        if len(graphs) < 20:
            raise SystemExit(f"only {len(graphs)} parity models in {goldens}")
        m, x = dtype_model()
        onnx.save(m, os.path.join(work, "src", "dtypes.onnx"))
        numpy.save(os.path.join(work, "src", "dtypes.x.npy"), x)
        graphs.append(("dtypes", 0.05))
        m, x = if_model()
        onnx.save(m, os.path.join(work, "src", "ifgraph.onnx"))
        numpy.save(os.path.join(work, "src", "ifgraph.x.npy"), x)
        graphs.append(("ifgraph", 0.05))
        src = os.path.join(work, "src")
        lines = [f"{n} {lr!r} {src}/{n}.onnx {src}/{n}.x.npy\n" for n, lr in graphs]
        if tfjs and os.path.exists(os.path.join(tfjs, "cnn", "model.json")):  # a TF.js model, lowered at load
            lines.append(f"tfjs_cnn 0.01 {tfjs}/cnn/model.json {tfjs}/cnn/x.npy\n")
        with open(os.path.join(work, "graphs.txt"), "w") as f:
            f.writelines(lines)
        r = subprocess.run([cases_bin, work])
        failures = [f"{cases_bin} failed ({r.returncode}): above"] if r.returncode else []
        out = os.path.join(work, "out")
        cases = open(os.path.join(out, "cases.txt")).read().split()
        graph_names = {n for n, _ in graphs}
        known = onnx.defs.onnx_opset_version()  # Debian's onnx 1.12 knows opsets up to 17
        for name in cases:
            model = onnx.load(os.path.join(out, name + ".onnx"))
            opset = max(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
            if opset > known:  # the source model is beyond this checker too; onnxruntime still runs it
                print(f"{name}: opset {opset} is newer than this onnx package's {known}: not checked")
                continue
            try:
                onnx.checker.check_model(model, full_check=True)
            except Exception as e:  # noqa: BLE001 - the checker's own exceptions
                failures.append(f"{name}: onnx.checker: {e}")
            if name in graph_names:
                check_graph_export(name, onnx.load(os.path.join(work, "src", name + ".onnx")), model, failures)
        tied = onnx.load(os.path.join(out, "tree.tied.onnx"))
        gemms = [n for n in tied.graph.node if n.op_type == "Gemm"]
        if len(tied.graph.initializer) != 2 or len(gemms) != 2 or gemms[0].input[1:] != gemms[1].input[1:]:
            failures.append("tree.tied: the shared W and b are not written once and read by both Gemms")
        missing = [n for n, _ in graphs if n not in cases] + \
            [n for n in ("tree.Linear", "tree.maxout", "tree.layernorm", "tree.nested", "tree.embed",
                                 "nested.graph_softmax", "nested.relu_graph") + (("tfjs_cnn",) if tfjs else ()) if n not in cases]
        if missing:
            failures.append(f"cases not exported: {missing}")
        print(f"onnx.checker: {len(cases)} exported files checked ({len(graphs)} graph nodes)")
        r = subprocess.run([node, os.path.join(here, "ort.mjs"), out])
        if r.returncode:
            failures.append("onnxruntime-node disagrees with lithe (above)")
        if failures:
            print("\n".join("FAIL " + f for f in failures))
            raise SystemExit(1)
        print("onnx_export: ok")
    finally:
        if not os.environ.get("LITHE_KEEP_EXPORTS"):
            shutil.rmtree(work, ignore_errors=True)
        else:
            print("kept", work)


main()
