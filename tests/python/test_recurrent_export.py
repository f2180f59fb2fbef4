"""Recurrent layers, attention and similarity through the Python package: Thinc 8.1.7 models
holding LSTM (depth 2, bidirectional, inside with_padded and between list2padded / padded2list),
bidirectional, ParametricAttention (Ragged, a zero-length sequence), CauchySimilarity and siamese
are exported with lithe.export, loaded, and must predict what Thinc predicts and write Thinc's
bytes back."""
import numpy
from thinc.api import (LSTM, CauchySimilarity, ParametricAttention, Relu, chain, list2padded, padded2list,
                       siamese, with_padded)
from thinc.layers.bidirectional import bidirectional
from thinc.types import Ragged

import lithe

rng = numpy.random.RandomState(3)


def _randomize(model):
    for node in model.walk():
        for p in node.param_names:
            if node.has_param(p):
                node.set_param(p, rng.standard_normal(node.get_param(p).shape).astype("float32") * 0.5)


def _round_trip(tmp_path, model):
    path = tmp_path / "m.lithe"
    lithe.export(model, str(path))
    lm = lithe.load(path)
    assert lm.to_thinc_bytes() == model.to_bytes()
    return lm


def _seqs(*lengths, width=3):
    return [rng.standard_normal((n, width)).astype("float32") for n in lengths]


def _close_lists(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        numpy.testing.assert_allclose(numpy.from_dlpack(g).reshape(w.shape), w, rtol=1e-5, atol=2e-6)


def test_lstm_with_padded(tmp_path):
    model = with_padded(LSTM(nO=4, nI=3, bi=True, depth=2))
    Xs = _seqs(4, 1, 3)
    model.initialize(X=Xs)
    _randomize(model)
    lm = _round_trip(tmp_path, model)
    _close_lists(lm.predict(Xs), model.predict(Xs))


def test_lstm_list2padded(tmp_path):
    model = chain(list2padded(), LSTM(nO=3, nI=3), padded2list())
    Xs = _seqs(2, 5, 1)
    model.initialize(X=Xs)
    _randomize(model)
    lm = _round_trip(tmp_path, model)
    _close_lists(lm.predict(Xs), model.predict(Xs))


def test_bidirectional(tmp_path):
    model = with_padded(bidirectional(LSTM(nO=2, nI=3)))
    Xs = _seqs(3, 2)
    model.initialize(X=Xs)
    _randomize(model)
    lm = _round_trip(tmp_path, model)
    _close_lists(lm.predict(Xs), model.predict(Xs))


def test_parametric_attention(tmp_path):
    model = ParametricAttention(nO=4)
    lengths = numpy.array([2, 0, 3], dtype="int32")
    X = Ragged(rng.standard_normal((5, 4)).astype("float32"), lengths)
    model.initialize(X=X)
    _randomize(model)
    lm = _round_trip(tmp_path, model)
    got = lm.predict(X)
    numpy.testing.assert_allclose(numpy.from_dlpack(got.data), model.predict(X).data, rtol=1e-5, atol=1e-6)


def test_siamese_cauchy(tmp_path):
    model = siamese(Relu(nO=3, nI=4), CauchySimilarity(nI=3))
    X = (rng.standard_normal((6, 4)).astype("float32"), rng.standard_normal((6, 4)).astype("float32"))
    model.initialize(X=X)
    _randomize(model)
    model.layers[1].set_param("W", numpy.abs(model.layers[1].get_param("W")))
    lm = _round_trip(tmp_path, model)
    numpy.testing.assert_allclose(numpy.from_dlpack(lm.predict(X)), model.predict(X), rtol=1e-5, atol=1e-6)
