"""LoRA adapters from Python (issue 26 item 2; the C API is tested against PyTorch in tests/test_lora.c):
add_lora freezes the base and trains only the adapters, the adapters save alone and reload onto the
same base (and are refused by another), and a merged model exports to Thinc bytes that Thinc reads.
Run by ctest with the package's other tests (LITHE_LIBRARY names the library)."""
import numpy
import pytest
from thinc.api import Maxout, Relu, Softmax_v2, chain

import lithe

rng = numpy.random.RandomState(26)
X = rng.standard_normal((5, 6)).astype("float32")


def _thinc_model():
    model = chain(Relu(8), Maxout(4, nP=2), Softmax_v2(3))
    model.initialize(X=X)
    r = numpy.random.RandomState(3)
    for node in model.walk():
        for p in node.param_names:
            if node.has_param(p):
                node.set_param(p, r.standard_normal(node.get_param(p).shape).astype("float32") * 0.5)
    return model


def _lithe_model(tmp_path, model):
    lithe.export(model, str(tmp_path / "m.lithe"))
    return lithe.load(tmp_path / "m.lithe")


def test_train_save_reload_merge(tmp_path):
    model = _thinc_model()
    lm = _lithe_model(tmp_path, model)
    base = lm.lora_base_hash()
    assert lm.add_lora(rank=2, alpha=4.0, seed=1) == 3  # relu/W, maxout/W, softmax/W
    with pytest.raises(lithe.LitheError, match="LITHE_ERR_STATE"):
        lm.add_lora("softmax/W", rank=2)
    nodes = {n.name: n for n in lm.walk()}
    assert nodes["relu"].is_frozen("b") and not nodes["relu"].is_frozen("lora_A:W")
    b0 = numpy.array(numpy.from_dlpack(nodes["relu"].get_param("b")))
    T = rng.standard_normal((5, 3)).astype("float32")
    opt = lithe.SGD(0.1)
    for _ in range(3):
        Y, bp = lm.begin_update(X)
        bp(numpy.ascontiguousarray((numpy.from_dlpack(Y) - T) / 5, dtype="float32"))
        lm.finish_update(opt)
    assert numpy.abs(numpy.from_dlpack(nodes["softmax"].get_param("lora_B:W"))).max() > 0
    numpy.testing.assert_array_equal(numpy.from_dlpack(nodes["relu"].get_param("b")), b0)
    assert lm.lora_base_hash() == base
    Y = numpy.array(numpy.from_dlpack(lm.predict(X)))
    numpy.testing.assert_raises(AssertionError, numpy.testing.assert_allclose, Y, model.predict(X))

    lm.save_lora(tmp_path / "a.lithe")
    assert (tmp_path / "a.lithe").stat().st_size < (tmp_path / "m.lithe").stat().st_size + 2048
    fresh = _lithe_model(tmp_path, model).load_lora(tmp_path / "a.lithe")
    assert fresh.lora_count == 3
    numpy.testing.assert_array_equal(numpy.from_dlpack(fresh.predict(X)), Y)

    other = _thinc_model()
    other.layers[0].set_param("b", other.layers[0].get_param("b") + 1)
    with pytest.raises(lithe.LitheError, match="different base"):
        _lithe_model(tmp_path, other).load_lora(tmp_path / "a.lithe")

    fresh.merge_lora()
    assert fresh.lora_count == 0
    numpy.testing.assert_allclose(numpy.from_dlpack(fresh.predict(X)), Y, atol=1e-6)
    merged = _thinc_model().from_bytes(fresh.to_thinc_bytes())  # Thinc reads the merged weights
    numpy.testing.assert_allclose(merged.predict(X), Y, atol=1e-5)
