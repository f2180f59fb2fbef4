"""lithe.Model.save_onnx / to_onnx_bytes (lithe_model_save_onnx) from Python: Thinc 8.1.7 models
exported to lithe, fine-tuned there, written as ONNX. The onnx package's checker accepts each file,
and the ONNX graph, loaded back, predicts what the fine-tuned model predicts; before fine-tuning it
predicts what Thinc itself does. (onnxruntime's side of the same exports: tests/onnx_export.)"""
import numpy
import onnx
import pytest
from thinc.api import HashEmbed, LayerNorm, Linear, Maxout, Relu, Softmax_v2, add, chain, concatenate, residual

import lithe

rng = numpy.random.RandomState(5)
X = rng.standard_normal((6, 5)).astype("float32")

ARCHS = {
    "mlp": lambda: chain(Relu(8), Relu(4), Softmax_v2(3)),
    "maxout_ln": lambda: chain(Maxout(6, nP=2, normalize=True), Linear(3)),
    "combinators": lambda: chain(concatenate(Relu(3), Linear(2)), residual(Relu(5, 5)), add(Linear(2), Relu(2))),
    "layernorm": lambda: LayerNorm(),
}


def _exported(tmp_path, name):
    model = ARCHS[name]()
    model.initialize(X=X)
    for node in model.walk():
        for p in node.param_names:
            if node.has_param(p):
                node.set_param(p, rng.standard_normal(node.get_param(p).shape).astype("float32") * 0.5)
    lithe.export(model, str(tmp_path / "m.lithe"))
    return model, lithe.load(tmp_path / "m.lithe")


@pytest.mark.parametrize("name", sorted(ARCHS))
def test_save_onnx_checks_and_predicts(tmp_path, name):
    model, lm = _exported(tmp_path, name)
    reloads = name != "maxout_ln"  # lithe's graph layer has no ReduceMax (Maxout's); onnxruntime runs it
    lm.save_onnx(tmp_path / "thinc.onnx")
    if reloads:
        numpy.testing.assert_allclose(numpy.from_dlpack(lithe.load(tmp_path / "thinc.onnx").predict(X)),
                                      model.predict(X), rtol=1e-5, atol=1e-6)
    opt = lithe.SGD(0.05)
    T = rng.standard_normal(model.predict(X).shape).astype("float32")
    for _ in range(5):
        Y, bp = lm.begin_update(X)
        bp(numpy.ascontiguousarray((numpy.from_dlpack(Y) - T) / X.shape[0], dtype="float32"))
        lm.finish_update(opt)
    path = tmp_path / "tuned.onnx"
    lm.save_onnx(path)
    proto = onnx.load(str(path))
    onnx.checker.check_model(proto, full_check=True)
    assert [(o.domain, o.version) for o in proto.opset_import] == [("", 17)]
    assert lm.to_onnx_bytes() == path.read_bytes()
    tuned = numpy.from_dlpack(lm.predict(X))
    assert not numpy.allclose(tuned, model.predict(X), atol=1e-4), "five steps moved nothing"
    if reloads:
        back = lithe.load_bytes(lm.to_onnx_bytes())
        numpy.testing.assert_allclose(numpy.from_dlpack(back.predict(X)), tuned, rtol=1e-5, atol=1e-6)


def test_save_onnx_refuses_hashembed(tmp_path):
    model = chain(HashEmbed(4, 20, seed=1), Relu(3))
    ids = numpy.array([1, 2, 3], dtype="uint64")
    model.initialize(X=ids)
    lithe.export(model, str(tmp_path / "h.lithe"))
    with pytest.raises(lithe.LitheError, match=r"hashembed.*HashEmbed\.v1"):
        lithe.load(tmp_path / "h.lithe").save_onnx(tmp_path / "h.onnx")
    assert not (tmp_path / "h.onnx").exists()


def test_pytorch_wrapper_tree_exports_as_one_graph(tmp_path):
    """chain(PyTorchWrapper(torch), Linear, Softmax) as lithe.export builds it (an onnx_graph.v1 node
    inside a native tree) exports as one ONNX graph: the torch module's nodes inlined, Thinc's layers
    lowered; the file predicts Thinc + torch's numbers when loaded back."""
    torch = pytest.importorskip("torch")
    from thinc.api import PyTorchWrapper

    torch.manual_seed(0)
    module = torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.ReLU(), torch.nn.Linear(7, 6))
    model = chain(PyTorchWrapper(module), Linear(4, 6), Softmax_v2(3, 4))
    model.initialize(X=X)
    for node in model.walk():
        for p in node.param_names:
            if node.has_param(p):
                node.set_param(p, rng.standard_normal(node.get_param(p).shape).astype("float32") * 0.5)
    lithe.export(model, str(tmp_path / "m.lithe"), X=X)
    lm = lithe.load(tmp_path / "m.lithe")
    lm.save_onnx(tmp_path / "m.onnx")
    proto = onnx.load(str(tmp_path / "m.onnx"))
    onnx.checker.check_model(proto, full_check=True)
    ops = [n.op_type for n in proto.graph.node]
    assert ops.count("Gemm") >= 2 and "Softmax" in ops, ops  # torch's Linears and Thinc's
    assert any(t.name.startswith(("pytorch", "onnx_graph")) and "/" in t.name for t in proto.graph.initializer)
    numpy.testing.assert_allclose(numpy.from_dlpack(lithe.load(tmp_path / "m.onnx").predict(X)), model.predict(X),
                                  rtol=1e-5, atol=1e-6)
