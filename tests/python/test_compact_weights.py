"""Model.compress_weights (issue 24): the dense layers' W as int8 / float16 / bfloat16 from Python.
The oracle is Thinc 8.1.7's own prediction of the float32 model: int8 and half-precision weights
must stay close to it, the saved file must shrink, and the compact file must load back compact."""
import numpy
import pytest
from thinc.api import Relu, Softmax, chain

import lithe

rng = numpy.random.default_rng(24)


def _thinc_mlp():
    model = chain(Relu(nO=64), Softmax(nO=10))
    X = rng.standard_normal((16, 100)).astype("float32")
    model.initialize(X=X)
    for node in model.walk():
        for p in node.param_names:
            if node.has_param(p):
                node.set_param(p, rng.standard_normal(node.get_param(p).shape).astype("float32") * 0.1)
    return model, X


@pytest.mark.parametrize("dtype,tol,ratio", [("int8", 0.02, 3.0), ("float16", 1e-3, 1.8), ("bfloat16", 0.01, 1.8)])
def test_compress_weights(tmp_path, dtype, tol, ratio):
    model, X = _thinc_mlp()
    want = model.predict(X)
    lithe.export(model, str(tmp_path / "m.lithe"))
    lm = lithe.load(tmp_path / "m.lithe")
    assert lm.compress_weights(dtype) == 2
    got = numpy.from_dlpack(lm.predict(X))
    numpy.testing.assert_allclose(got, want, atol=tol)
    if dtype != "bfloat16":  # numpy has no bfloat16
        relu = next(n for n in lm.walk() if n.name == "relu")
        assert numpy.from_dlpack(relu.get_param("W")).dtype == {"int8": numpy.int8, "float16": numpy.float16}[dtype]
    lm.save(str(tmp_path / "c.lithe"))
    full, small = (tmp_path / "m.lithe").stat().st_size, (tmp_path / "c.lithe").stat().st_size
    assert full / small > ratio
    back = lithe.load(tmp_path / "c.lithe")
    numpy.testing.assert_array_equal(numpy.from_dlpack(back.predict(X)), got)
    with pytest.raises(ValueError):
        lm.compress_weights("int4")


def test_compress_matching_keeps_the_head_float32(tmp_path):
    """compress_weights(match=...) (lithe_model_compress_matching): only the matching dense layers turn
    int8; the Softmax head stays float32, unfrozen, and is what a training step then moves."""
    model, X = _thinc_mlp()
    lithe.export(model, str(tmp_path / "m.lithe"))
    lm = lithe.load(tmp_path / "m.lithe")
    with pytest.raises(lithe.LitheError, match="no dense layer"):
        lm.compress_weights("int8", match="nothing*")
    assert lm.compress_weights("int8", match="relu/W") == 1
    nodes = {n.name: n for n in lm.walk()}
    assert numpy.from_dlpack(nodes["relu"].get_param("W")).dtype == numpy.int8
    assert numpy.from_dlpack(nodes["softmax"].get_param("W")).dtype == numpy.float32
    numpy.testing.assert_allclose(numpy.from_dlpack(lm.predict(X)), model.predict(X), atol=0.02)
