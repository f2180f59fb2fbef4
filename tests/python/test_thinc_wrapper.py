"""lithe inside Thinc (lithe.thinc.LitheWrapper): chain(LitheWrapper(lithe model), Softmax) against
the same network built purely in Thinc 8.1.7 — predictions, dX, and ten Adam steps (Thinc's
optimizer stepping the lithe params through zero-copy views) within float32 tolerances; the
arrays cross by DLPack without copies; the wrapped model serializes with the Thinc model; and a
torch-exported .onnx graph trains inside Thinc the same way."""
import io

import numpy
import pytest
from thinc.api import Adam, Relu, Softmax, chain

import lithe
from lithe.thinc import LitheWrapper

rng = numpy.random.RandomState(11)
X = rng.standard_normal((9, 6)).astype("float32")
T = numpy.eye(5, dtype="float32")[rng.randint(0, 5, 9)]


def _random_weights(model):
    for node in model.walk():
        for p in node.param_names:
            if node.has_param(p):
                node.set_param(p, rng.standard_normal(node.get_param(p).shape).astype("float32") * 0.5)


def _pair(tmp_path):
    """(mixed, pure, lithe model): chain(Relu(12), Relu(8)) once in lithe (exported from Thinc) and
    once in Thinc, each followed by the same Thinc Softmax."""
    inner = chain(Relu(12, 6), Relu(8, 12))
    inner.initialize(X=X)
    _random_weights(inner)
    lithe.export(inner, str(tmp_path / "inner.lithe"), X=X)
    lm = lithe.load(tmp_path / "inner.lithe")
    pure = chain(Relu(12, 6), Relu(8, 12), Softmax(5, 8))
    pure.initialize(X=X)
    for a, b in zip(inner.layers, pure.layers[:2]):
        for p in ("W", "b"):
            b.set_param(p, a.get_param(p).copy())
    _random_weights(pure.layers[2])
    mixed = chain(LitheWrapper(lm), Softmax(5, 8))
    mixed.initialize(X=X)
    for p in ("W", "b"):
        mixed.layers[1].set_param(p, pure.layers[2].get_param(p).copy())
    return mixed, pure, lm


def test_predicts_and_backprops_as_thinc(tmp_path):
    mixed, pure, _ = _pair(tmp_path)
    numpy.testing.assert_allclose(mixed.predict(X), pure.predict(X), rtol=1e-5, atol=1e-6)
    assert mixed.layers[0].get_dim("nO") == 8 and mixed.layers[0].get_dim("nI") == 6
    Ym, bpm = mixed.begin_update(X)
    Yp, bpp = pure.begin_update(X)
    numpy.testing.assert_allclose(Ym, Yp, rtol=1e-5, atol=1e-6)
    numpy.testing.assert_allclose(bpm(Ym - T), bpp(Yp - T), rtol=1e-5, atol=1e-6)


def test_ten_adam_steps_match_thinc(tmp_path):
    mixed, pure, lm = _pair(tmp_path)
    opt_m, opt_p = Adam(0.01), Adam(0.01)  # Thinc's defaults: grad_clip 1.0, L2 1e-6 as weight decay
    for step in range(10):
        Ym, bpm = mixed.begin_update(X)
        Yp, bpp = pure.begin_update(X)
        numpy.testing.assert_allclose(Ym, Yp, rtol=1e-4, atol=1e-5, err_msg=f"step {step}")
        numpy.testing.assert_allclose(bpm((Ym - T) / 9), bpp((Yp - T) / 9), rtol=1e-4, atol=1e-5)
        mixed.finish_update(opt_m)
        pure.finish_update(opt_p)
    # the lithe params moved as Thinc's did: read through zero-copy views of lithe's memory
    nodes = [n for n in lm.walk() if n.param_names]
    assert len(nodes) == 2
    for node, ref in zip(nodes, pure.layers[:2]):
        for p in ("W", "b"):
            got = lithe.to_numpy(node.get_param(p))
            assert numpy.abs(got - ref.get_param(p)).max() > 0 or p == "b"
            numpy.testing.assert_allclose(got, ref.get_param(p), rtol=1e-4, atol=1e-5)
    numpy.testing.assert_allclose(mixed.predict(X), pure.predict(X), rtol=1e-4, atol=1e-5)
    # parameter averages (Adam's use_averages) swap in and out of the lithe params too
    with mixed.use_params(opt_m.averages), pure.use_params(opt_p.averages):
        numpy.testing.assert_allclose(mixed.predict(X), pure.predict(X), rtol=1e-4, atol=1e-5)
    numpy.testing.assert_allclose(mixed.predict(X), pure.predict(X), rtol=1e-4, atol=1e-5)


def test_zero_copy(tmp_path):
    mixed, _, lm = _pair(tmp_path)
    node = [n for n in lm.walk() if n.param_names][0]
    W = lithe.to_numpy(node.get_param("W"))
    assert W.flags.writeable
    W2 = lithe.to_numpy(node.get_param("W"))
    assert numpy.shares_memory(W, W2)  # both views of lithe's one buffer
    # Thinc's input is viewed by lithe, not copied: a write to X shows in the next prediction
    Xc = X.copy()
    y0 = mixed.layers[0].predict(Xc)
    Xc[0] += 1.0
    assert not numpy.allclose(mixed.layers[0].predict(Xc)[0], y0[0])
    # the output is a numpy array over lithe's memory, valid after the lithe model is gone
    Y = mixed.layers[0].predict(X)
    assert not Y.flags.owndata
    del mixed, lm, node, W, W2
    assert numpy.isfinite(Y).all()


def test_serializes_with_thinc(tmp_path):
    mixed, pure, _ = _pair(tmp_path)
    opt = Adam(0.01)
    Y, bp = mixed.begin_update(X)
    bp(Y - T)
    mixed.finish_update(opt)
    data = mixed.to_bytes()
    other, _, _ = _pair(tmp_path)
    other.from_bytes(data)
    numpy.testing.assert_allclose(other.predict(X), mixed.predict(X), rtol=0, atol=0)


def test_copy_is_independent(tmp_path):
    mixed, _, _ = _pair(tmp_path)
    other = mixed.copy()
    assert other.layers[0].shims[0].id != mixed.layers[0].shims[0].id
    numpy.testing.assert_allclose(other.predict(X), mixed.predict(X), rtol=0, atol=0)
    before = mixed.predict(X).copy()
    Y, bp = other.begin_update(X)
    bp(Y - T)
    other.finish_update(Adam(0.1))
    assert numpy.abs(other.predict(X) - before).max() > 1e-3
    numpy.testing.assert_allclose(mixed.predict(X), before, rtol=0, atol=0)


def test_onnx_graph_trains_inside_thinc(tmp_path):
    """A torch module exported by torch.onnx.export, loaded by lithe, in a Thinc chain: ten steps
    with Thinc's Adam match the same module trained by Thinc through PyTorchWrapper."""
    torch = pytest.importorskip("torch")
    from thinc.api import PyTorchWrapper

    torch.manual_seed(0)
    module = torch.nn.Sequential(torch.nn.Linear(6, 12), torch.nn.Tanh(), torch.nn.Linear(12, 8))
    buf = io.BytesIO()
    torch.onnx.export(module, (torch.tensor(X),), buf, opset_version=13, input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}}, do_constant_folding=False)
    lm = lithe.load_bytes(buf.getvalue())
    sm = Softmax(5, 8)
    mixed = chain(LitheWrapper(lm), sm)
    ref = chain(PyTorchWrapper(module), Softmax(5, 8))
    mixed.initialize(X=X)
    ref.initialize(X=X)
    _random_weights(sm)
    for p in ("W", "b"):
        ref.layers[1].set_param(p, sm.get_param(p).copy())
    opt_m, opt_r = Adam(0.01), Adam(0.01)
    for step in range(10):
        Ym, bpm = mixed.begin_update(X)
        Yr, bpr = ref.begin_update(X)
        numpy.testing.assert_allclose(Ym, Yr, rtol=1e-4, atol=1e-5, err_msg=f"step {step}")
        bpm((Ym - T) / 9)
        bpr((Yr - T) / 9)
        mixed.finish_update(opt_m)
        ref.finish_update(opt_r)
    numpy.testing.assert_allclose(mixed.predict(X), ref.predict(X), rtol=1e-4, atol=1e-5)
    g = lm.walk()[0]
    numpy.testing.assert_allclose(lithe.to_numpy(g.get_param("0.weight")), module[0].weight.detach().numpy(),
                                  rtol=1e-4, atol=1e-5)
