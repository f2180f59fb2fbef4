"""Model.quantize_static (issue 24 item 3): static int8 quantization calibrated from Python. The oracle
is Thinc 8.1.7's own prediction of the float32 model: the quantized model must stay within the
quantization step's reach of it, save and load back with the same bits, shrink the file, and refuse
hostile calibration data with a clear LitheError."""
import numpy
import pytest
from thinc.api import Relu, Softmax, chain

import lithe

rng = numpy.random.default_rng(3)


def _thinc_mlp():
    model = chain(Relu(nO=64), Relu(nO=32), Softmax(nO=10))
    X = (rng.standard_normal((256, 100)) + 0.2).astype("float32")
    model.initialize(X=X[:8])
    for node in model.walk():
        for p in node.param_names:
            if node.has_param(p):
                node.set_param(p, rng.standard_normal(node.get_param(p).shape).astype("float32") * 0.1)
    return model, X


def test_quantize_static(tmp_path):
    model, X = _thinc_mlp()
    cal, test = X[:192], X[192:]
    want = model.predict(test)
    lithe.export(model, str(tmp_path / "m.lithe"))
    lm = lithe.load(tmp_path / "m.lithe")
    q = lm.quantize_static(cal)
    assert q.quantized_nodes == 3
    got = numpy.from_dlpack(q.predict(test))
    numpy.testing.assert_allclose(got, want, atol=0.02)
    assert (got.argmax(-1) == want.argmax(-1)).mean() >= 0.9
    # the float model is unchanged
    numpy.testing.assert_allclose(numpy.from_dlpack(lm.predict(test)), want, atol=1e-5)
    q.save(str(tmp_path / "q.lithe"))
    assert (tmp_path / "m.lithe").stat().st_size / (tmp_path / "q.lithe").stat().st_size > 2.0  # (small: metadata)
    back = lithe.load(tmp_path / "q.lithe")
    numpy.testing.assert_array_equal(numpy.from_dlpack(back.predict(test)), got)


@pytest.mark.parametrize("bad,msg", [
    (numpy.zeros((4, 99), numpy.float32), "calibration rows"),
    (numpy.full((4, 100), numpy.nan, numpy.float32), "is nan"),
    (numpy.zeros((0, 100), numpy.float32), "empty"),
    (numpy.zeros((4, 100), numpy.float64), "float32"),
])
def test_quantize_static_hostile(tmp_path, bad, msg):
    model, _ = _thinc_mlp()
    lithe.export(model, str(tmp_path / "m.lithe"))
    lm = lithe.load(tmp_path / "m.lithe")
    with pytest.raises(lithe.LitheError, match=msg):
        lm.quantize_static(bad)
