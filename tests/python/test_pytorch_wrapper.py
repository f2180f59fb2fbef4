"""Thinc's mixed PyTorch + Thinc model, chain(PyTorchWrapper(torch_module), Linear, Softmax),
exported by lithe.export (the torch module through torch.onnx.export as an onnx_graph.v1 node):
lithe's predictions match Thinc + torch's, and ten fine-tuning steps (Thinc's SGD on both sides,
gradients flowing through the graph into the torch weights) match too."""
import numpy
import pytest
from thinc.api import SGD, Linear, PyTorchWrapper, Softmax_v2, chain

import lithe

torch = pytest.importorskip("torch")
rng = numpy.random.RandomState(4)


def _model():
    torch.manual_seed(0)
    module = torch.nn.Sequential(torch.nn.Linear(6, 12), torch.nn.ReLU(), torch.nn.Linear(12, 8), torch.nn.Tanh())
    model = chain(PyTorchWrapper(module), Linear(5, 8), Softmax_v2(5, 5))
    X = rng.standard_normal((9, 6)).astype("float32")
    model.initialize(X=X)
    for node in model.walk():  # non-zero Thinc weights (Softmax starts at zero)
        for p in node.param_names:
            if node.has_param(p):
                node.set_param(p, rng.standard_normal(node.get_param(p).shape).astype("float32") * 0.5)
    return model, X


def test_predictions_match_thinc(tmp_path):
    model, X = _model()
    lithe.export(model, str(tmp_path / "m.lithe"), X=X)
    lm = lithe.load(tmp_path / "m.lithe")
    numpy.testing.assert_allclose(numpy.from_dlpack(lm.predict(X)), model.predict(X), rtol=1e-5, atol=1e-6)
    # other batch sizes (the graph's batch axis is dynamic)
    numpy.testing.assert_allclose(numpy.from_dlpack(lm.predict(X[:2])), model.predict(X[:2]), rtol=1e-5, atol=1e-6)


def test_fine_tuning_matches_thinc(tmp_path):
    model, X = _model()
    lithe.export(model, str(tmp_path / "m.lithe"), X=X)
    lm = lithe.load(tmp_path / "m.lithe")
    T = rng.standard_normal((9, 5)).astype("float32")
    opt_t, opt_l = SGD(0.05, grad_clip=0.0), lithe.SGD(0.05, grad_clip=0.0, use_averages=False)
    for _ in range(10):
        Y, bp = model.begin_update(X)
        bp((Y - T) / T.shape[0])
        model.finish_update(opt_t)
        Yl, bpl = lm.begin_update(X)
        bpl(numpy.ascontiguousarray((numpy.from_dlpack(Yl) - T) / T.shape[0], dtype="float32"))
        lm.finish_update(opt_l)
    before = lithe.load(tmp_path / "m.lithe").predict(X)
    after_t = model.predict(X)
    assert numpy.abs(after_t - numpy.from_dlpack(before)).max() > 1e-3  # training moved the model
    numpy.testing.assert_allclose(numpy.from_dlpack(lm.predict(X)), after_t, rtol=1e-4, atol=1e-5)
    # the fine-tuned graph weights survive a save and a load
    lm.save(str(tmp_path / "tuned.lithe"))
    numpy.testing.assert_allclose(numpy.from_dlpack(lithe.load(tmp_path / "tuned.lithe").predict(X)), after_t,
                                  rtol=1e-4, atol=1e-5)


def test_needs_a_sample_input(tmp_path):
    model, X = _model()
    with pytest.raises(lithe.ExportError, match="sample input"):
        lithe.export(model, str(tmp_path / "m.lithe"))
