"""Fine-tuned weights back into PyTorch (lithe.to_torch_state_dict): a small CNN with BatchNorm,
exported by torch.onnx.export (torch 1.13), loaded and trained five SGD steps in lithe; its weights
under torch's names load into the torch module with load_state_dict, and torch then predicts what
lithe predicts. Eval-mode export (torch's default) folds BatchNorm into the Conv: those weights are
reported. training=PRESERVE on a module in eval mode keeps BatchNorm apart (TrainingMode.TRAINING
exports BatchNorm with its running-statistics outputs, which lithe's graph layer does not run)."""
import io
import warnings

import numpy
import pytest

import lithe

torch = pytest.importorskip("torch")


def _cnn():
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Conv2d(2, 4, 3, padding=1), torch.nn.BatchNorm2d(4), torch.nn.ReLU(),
                            torch.nn.Flatten(), torch.nn.Linear(4 * 5 * 5, 3))
    with torch.no_grad():  # non-trivial BatchNorm statistics and affine
        m[1].running_mean.uniform_(-0.5, 0.5)
        m[1].running_var.uniform_(0.5, 2.0)
        m[1].weight.uniform_(0.5, 1.5)
        m[1].bias.uniform_(-0.5, 0.5)
    return m.eval()


def _export(m, x, **kw):
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(m, (x,), buf, opset_version=13, input_names=["x"], output_names=["y"],
                          dynamic_axes={"x": {0: "b"}, "y": {0: "b"}}, **kw)
    return lithe.load_bytes(buf.getvalue())


def _train(lm, X, steps=5):
    T = numpy.random.RandomState(1).standard_normal((X.shape[0], 3)).astype("float32")
    opt = lithe.SGD(0.1, grad_clip=0.0, use_averages=False)
    for _ in range(steps):
        Y, bp = lm.begin_update(X)
        bp(numpy.ascontiguousarray((numpy.from_dlpack(Y) - T) / T.shape[0], dtype="float32"))
        lm.finish_update(opt)


def test_unfolded_export_round_trip():
    m = _cnn()
    X = numpy.random.RandomState(0).standard_normal((6, 2, 5, 5)).astype("float32")
    x = torch.from_numpy(X)
    lm = _export(m, x, training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=False)
    before = {k: v.clone() for k, v in m.state_dict().items()}
    _train(lm, X)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing folded: no warning
        sd = lithe.to_torch_state_dict(lm, m)
    assert sd.folded == {} and sd.missing == [] and sd.kept == ["1.num_batches_tracked"]
    assert set(sd) == set(m.state_dict())
    m.load_state_dict(sd)  # strict
    moved = [k for k in ("0.weight", "0.bias", "1.weight", "1.bias", "4.weight", "4.bias")
             if (m.state_dict()[k] - before[k]).abs().max() > 1e-4]
    assert len(moved) == 6, moved  # training happened, and every trainable weight came back
    for k in ("1.running_mean", "1.running_var"):  # frozen in lithe (statistics, not weights)
        assert torch.equal(m.state_dict()[k], before[k])
    with torch.no_grad():
        yt = m(x).numpy()
    numpy.testing.assert_allclose(yt, numpy.from_dlpack(lm.predict(X)), rtol=1e-5, atol=1e-6)
    # without the module: the same names, the same arrays
    sd2 = lithe.to_torch_state_dict(lm)
    assert set(sd2) == set(sd) - {"1.num_batches_tracked"}
    assert all(torch.equal(sd2[k], sd[k]) for k in sd2)


def test_eval_export_reports_folded_batchnorm():
    m = _cnn()
    X = numpy.random.RandomState(0).standard_normal((6, 2, 5, 5)).astype("float32")
    lm = _export(m, torch.from_numpy(X))
    _train(lm, X)
    with pytest.warns(lithe.FoldedWeightsWarning, match="onnx::Conv_"):
        sd = lithe.to_torch_state_dict(lm, m)
    assert sorted(sd.folded) and all(k.startswith("onnx::Conv_") for k in sd.folded)
    assert sorted(a.shape for a in sd.folded.values()) == [(4,), (4, 2, 3, 3)]
    assert sorted(sd.missing) == ["0.bias", "0.weight", "1.bias", "1.running_mean", "1.running_var", "1.weight"]
    assert set(sd) == {"4.weight", "4.bias", "1.num_batches_tracked"}
    with pytest.raises(ValueError, match="onnx::Conv_"):
        lithe.to_torch_state_dict(lm, m, strict=True)
    with pytest.warns(lithe.FoldedWeightsWarning):  # without the module: told by the names alone
        sd3 = lithe.to_torch_state_dict(lm)
    assert set(sd3) == {"4.weight", "4.bias"} and set(sd3.folded) == set(sd.folded)
    before = m.state_dict()["4.weight"].clone()
    m.load_state_dict(sd, strict=False)  # what maps does load
    assert (m.state_dict()["4.weight"] - before).abs().max() > 1e-4
    numpy.testing.assert_array_equal(m.state_dict()["4.weight"].numpy(),
                                     numpy.from_dlpack(lm.walk()[0].get_param("4.weight")))


def test_tied_weights_fill_every_name():
    torch.manual_seed(0)

    class Tied(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Linear(4, 4)
            self.b = torch.nn.Linear(4, 4)
            self.b.weight = self.a.weight

        def forward(self, x):
            return self.b(torch.tanh(self.a(x)))

    m = Tied().eval()
    X = numpy.random.RandomState(0).standard_normal((3, 4)).astype("float32")
    lm = _export(m, torch.from_numpy(X), do_constant_folding=False)
    sd = lithe.to_torch_state_dict(lm, m)
    assert set(sd) == set(m.state_dict()) and not sd.folded and not sd.missing
    assert torch.equal(sd["a.weight"], sd["b.weight"])
    m.load_state_dict(sd)
    with torch.no_grad():
        numpy.testing.assert_allclose(m(torch.from_numpy(X)).numpy(), numpy.from_dlpack(lm.predict(X)), rtol=1e-5,
                                      atol=1e-6)


def test_needs_one_graph_layer():
    thinc = pytest.importorskip("thinc.api")
    model = thinc.chain(thinc.Relu(3, 2), thinc.Softmax(2, 3))
    model.initialize(X=numpy.zeros((2, 2), dtype="float32"))
    import tempfile, os
    with tempfile.TemporaryDirectory() as d:
        lithe.export(model, os.path.join(d, "m.lithe"))
        with pytest.raises(ValueError, match="0 graph layers"):
            lithe.to_torch_state_dict(lithe.load(os.path.join(d, "m.lithe")))


def test_deduplicated_initializers_are_reported():
    """torch.onnx.export (1.13) merges initializers of equal value: a fresh BatchNorm's running_var
    (ones) becomes an Identity of its weight (ones), its running_mean one of its bias (zeros). The
    graph has no initializer under those names: reported as missing, never filled silently."""
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Conv2d(2, 3, 3, padding=1), torch.nn.BatchNorm2d(3)).eval()
    X = numpy.random.RandomState(0).standard_normal((2, 2, 4, 4)).astype("float32")
    lm = _export(m, torch.from_numpy(X), training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=False)
    with pytest.warns(lithe.FoldedWeightsWarning, match="running_mean"):
        sd = lithe.to_torch_state_dict(lm, m)
    assert sorted(sd.missing) == ["1.running_mean", "1.running_var"]
    with pytest.raises(ValueError, match="running_var"):
        lithe.to_torch_state_dict(lm, m, strict=True)
