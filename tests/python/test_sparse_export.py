"""Sparse, hashed and string inputs through the Python package: Thinc 8.1.7 models holding
SparseLinear v1/v2, strings2arrays, remap_ids v1/v2 and uniqued are exported with lithe.export,
loaded, and must predict what Thinc predicts and write Thinc's bytes back. The Python side feeds
Thinc's (keys, values, lengths) tuple, lists of str (STRINGS values), id arrays and Ragged.
StaticVectors is spaCy's layer (spaCy is not installed here, and it reads a vocab), so it has no
Python export case; the C tests cover it."""
import numpy
import pytest
from thinc.api import Embed, HashEmbed, Relu, chain, strings2arrays, uniqued, with_array
from thinc.layers.remap_ids import remap_ids, remap_ids_v2
from thinc.layers.sparselinear import SparseLinear, SparseLinear_v2

import lithe

rng = numpy.random.RandomState(7)


def _randomize(model):
    for node in model.walk():
        for p in node.param_names:
            if node.has_param(p):
                node.set_param(p, rng.standard_normal(node.get_param(p).shape).astype("float32") * 0.5)


def _round_trip(tmp_path, model, X):
    path = tmp_path / "m.lithe"
    lithe.export(model, str(path))
    lm = lithe.load(path)
    assert lm.to_thinc_bytes() == model.to_bytes()
    return lm


def _arrays(Y):
    return [numpy.from_dlpack(y) for y in Y] if isinstance(Y, list) else numpy.from_dlpack(Y)


@pytest.mark.parametrize("make", [SparseLinear, SparseLinear_v2])
def test_sparse_linear(tmp_path, make):
    model = chain(make(nO=4, length=64), Relu(3))
    keys = rng.randint(0, 2**62, size=9, dtype="int64").astype("uint64") * numpy.uint64(3)
    X = (keys, rng.standard_normal(9).astype("float32"), numpy.array([4, 0, 5], dtype="int32"))
    model.initialize(X=X)
    _randomize(model)
    lm = _round_trip(tmp_path, model, X)
    numpy.testing.assert_allclose(_arrays(lm.predict(X)), model.predict(X), rtol=1e-5, atol=1e-6)


def test_strings2arrays_hashembed(tmp_path):
    docs = [["The", "cat", "sat", "naïve"], [], ["日本", "🙂", ""]]
    model = chain(strings2arrays(), with_array(HashEmbed(5, 40, seed=9, column=0)))
    model.initialize(X=docs)
    _randomize(model)
    lm = _round_trip(tmp_path, model, docs)
    want = model.predict(docs)
    got = _arrays(lm.predict(docs))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        numpy.testing.assert_allclose(g.reshape(w.shape), w, rtol=1e-5, atol=1e-6)
    # the hashes themselves, bit for bit
    s2a = strings2arrays()
    lm2 = _round_trip(tmp_path, s2a, docs)
    for g, w in zip(_arrays(lm2.predict(docs)), s2a.predict(docs)):
        assert g.dtype == numpy.uint64 and numpy.array_equal(g.reshape(w.shape), w)


def test_remap_ids(tmp_path):
    m1 = remap_ids({"cat": 3, "dog": 1, "émile": 4}, default=0)
    words = ["dog", "cow", "émile", "cat"]
    lm = _round_trip(tmp_path, m1, words)
    assert numpy.array_equal(_arrays(lm.predict(words)), m1.predict(words))
    m2 = chain(remap_ids_v2({10: 2, 2**40: 1, -3: 4}, default=0, column=1), Embed(3, 5, column=0))
    X = numpy.array([[0, 10], [1, -3], [2, 11], [3, 2**40]], dtype="int64")
    m2.initialize(X=X)
    _randomize(m2)
    lm2 = _round_trip(tmp_path, m2, X)
    numpy.testing.assert_allclose(_arrays(lm2.predict(X)), m2.predict(X), rtol=1e-6, atol=1e-7)


def test_uniqued(tmp_path):
    model = chain(uniqued(HashEmbed(4, 30, seed=5, column=0), column=0), Relu(2))
    X = numpy.array([[7, 0], [3, 1], [7, 2], [2**63 + 1, 3], [3, 4]], dtype="uint64")
    model.initialize(X=X)
    _randomize(model)
    lm = _round_trip(tmp_path, model, X)
    numpy.testing.assert_allclose(_arrays(lm.predict(X)), model.predict(X), rtol=1e-5, atol=1e-6)
