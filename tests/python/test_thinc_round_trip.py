"""The full round trip Thinc -> lithe -> Thinc: a Thinc model wrapping a torch module (with
BatchNorm: buffers and an integer num_batches_tracked) by PyTorchWrapper, mixed with native Thinc
layers, exported by lithe.export, fine-tuned five SGD steps in lithe, written back as Thinc 8.1.7
to_bytes (lithe.Model.to_thinc_bytes(thinc_model)); Thinc's from_bytes takes them, the torch
shim's weights and the Thinc layers' weights are lithe's, and Thinc predicts what lithe predicts."""
import numpy
import pytest
from thinc.api import Linear, PyTorchWrapper, Softmax_v2, chain

import lithe

torch = pytest.importorskip("torch")


def _model(seed):
    torch.manual_seed(seed)
    module = torch.nn.Sequential(torch.nn.Linear(6, 12), torch.nn.BatchNorm1d(12), torch.nn.ReLU(),
                                 torch.nn.Linear(12, 8), torch.nn.Tanh())
    with torch.no_grad():
        module[1].running_mean.uniform_(-0.5, 0.5)
        module[1].running_var.uniform_(0.5, 2.0)
    model = chain(PyTorchWrapper(module), Linear(5, 8), Softmax_v2(5, 5))
    rng = numpy.random.RandomState(seed)
    X = numpy.random.RandomState(4).standard_normal((9, 6)).astype("float32")
    model.initialize(X=X)
    for node in model.walk():  # non-zero Thinc weights (Softmax starts at zero)
        for p in node.param_names:
            if node.has_param(p):
                node.set_param(p, rng.standard_normal(node.get_param(p).shape).astype("float32") * 0.5)
    return model, X


def _fine_tune(lm, X, steps=5):
    T = numpy.random.RandomState(1).standard_normal((X.shape[0], 5)).astype("float32")
    opt = lithe.SGD(0.1, grad_clip=0.0, use_averages=False)
    for _ in range(steps):
        Y, bp = lm.begin_update(X)
        bp(numpy.ascontiguousarray((numpy.from_dlpack(Y) - T) / T.shape[0], dtype="float32"))
        lm.finish_update(opt)


def test_thinc_lithe_thinc(tmp_path):
    model, X = _model(0)
    lithe.export(model, str(tmp_path / "m.lithe"), X=X)
    lm = lithe.load(tmp_path / "m.lithe")
    before_torch = {k: v.clone() for k, v in model.layers[0].shims[0]._model.state_dict().items()}
    before_thinc = model.predict(X)
    _fine_tune(lm, X)
    data = lm.to_thinc_bytes(model)
    assert torch.equal(model.layers[0].shims[0]._model.state_dict()["0.weight"], before_torch["0.weight"])  # untouched
    Yl = numpy.from_dlpack(lm.predict(X))
    assert numpy.abs(Yl - before_thinc).max() > 1e-3  # training moved the model

    # Thinc's from_bytes on the original model, and on a freshly built one with other weights
    for target in (model, _model(7)[0]):
        target.from_bytes(data)
        module = target.layers[0].shims[0]._model
        sd = module.state_dict()
        for k in ("0.weight", "0.bias", "1.weight", "1.bias", "3.weight", "3.bias"):
            assert (sd[k] - before_torch[k]).abs().max() > 1e-5, k  # the shim holds the trained weights
        numpy.testing.assert_array_equal(sd["0.weight"].numpy(), numpy.from_dlpack(lm.walk()[1].get_param("0.weight")))
        assert torch.equal(sd["1.running_mean"], before_torch["1.running_mean"])  # statistics: frozen in lithe
        assert torch.equal(sd["1.num_batches_tracked"], before_torch["1.num_batches_tracked"])
        numpy.testing.assert_allclose(target.predict(X), Yl, rtol=1e-5, atol=1e-6)
    # and the bytes Thinc writes back load into lithe again
    lm2 = lithe.load(tmp_path / "m.lithe")
    numpy.testing.assert_allclose(numpy.from_dlpack(lm2.predict(X)), before_thinc, rtol=1e-5, atol=1e-6)


def test_wrapped_model_needs_the_thinc_model(tmp_path):
    model, X = _model(0)
    lithe.export(model, str(tmp_path / "m.lithe"), X=X)
    lm = lithe.load(tmp_path / "m.lithe")
    with pytest.raises(lithe.LitheError, match="to_thinc_bytes_shims"):
        lm.to_thinc_bytes()
    other = chain(Linear(5, 6), Softmax_v2(5, 5))
    other.initialize(X=X)
    with pytest.raises(ValueError, match="nodes"):
        lm.to_thinc_bytes(other)


def test_two_wrappers_with_conv_batchnorm(tmp_path):
    """Two PyTorchWrapper nodes (a Conv2d + BatchNorm2d, which the export keeps apart, and a
    Linear) around a native Thinc layer: each shim gets its own module's trained weights."""
    from thinc.api import Relu

    def build(seed):
        torch.manual_seed(seed)
        conv = torch.nn.Sequential(torch.nn.Conv2d(2, 3, 3, padding=1), torch.nn.BatchNorm2d(3), torch.nn.ReLU(),
                                   torch.nn.Flatten())
        with torch.no_grad():
            conv[1].running_mean.uniform_(-0.5, 0.5)
            conv[1].running_var.uniform_(0.5, 2.0)
        head = torch.nn.Sequential(torch.nn.Linear(6, 4), torch.nn.Tanh())
        model = chain(PyTorchWrapper(conv), Relu(6, 3 * 4 * 4), PyTorchWrapper(head), Softmax_v2(3, 4))
        X = numpy.random.RandomState(5).standard_normal((4, 2, 4, 4)).astype("float32")
        model.initialize(X=X)
        rng = numpy.random.RandomState(seed)
        for node in model.walk():
            for p in node.param_names:
                if node.has_param(p):
                    node.set_param(p, rng.standard_normal(node.get_param(p).shape).astype("float32") * 0.3)
        return model, X

    model, X = build(0)
    lithe.export(model, str(tmp_path / "m.lithe"), X=X)
    lm = lithe.load(tmp_path / "m.lithe")
    graphs = [n for n in lm.walk() if n.name == "pytorch"]
    assert len(graphs) == 2 and "1.running_var" in graphs[0].param_names  # BatchNorm not folded
    numpy.testing.assert_allclose(numpy.from_dlpack(lm.predict(X)), model.predict(X), rtol=1e-5, atol=1e-6)
    T = numpy.random.RandomState(1).standard_normal((4, 3)).astype("float32")
    opt = lithe.SGD(0.1, grad_clip=0.0, use_averages=False)
    for _ in range(5):
        Y, bp = lm.begin_update(X)
        bp(numpy.ascontiguousarray((numpy.from_dlpack(Y) - T) / 4, dtype="float32"))
        lm.finish_update(opt)
    Yl = numpy.from_dlpack(lm.predict(X))
    target = build(3)[0]
    target.from_bytes(lm.to_thinc_bytes(model))
    numpy.testing.assert_allclose(target.predict(X), Yl, rtol=1e-5, atol=1e-6)
    conv_sd = target.layers[0].shims[0]._model.state_dict()
    head_sd = target.layers[2].shims[0]._model.state_dict()
    numpy.testing.assert_array_equal(conv_sd["0.weight"].numpy(), numpy.from_dlpack(graphs[0].get_param("0.weight")))
    numpy.testing.assert_array_equal(head_sd["0.weight"].numpy(), numpy.from_dlpack(graphs[1].get_param("0.weight")))
