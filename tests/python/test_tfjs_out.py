"""TF.js out from Python (lithe.Model.save_tfjs / to_tfjs_bytes over lithe_tfjs_save): a TF.js
layers model (a hand-written model.json: Dense tanh, Dense), fine-tuned five SGD steps in lithe,
written back; the files hold the original topology and the trained weights in TF.js's layout, a
float64 numpy forward pass over the written shard predicts what lithe predicts, and the files load
into lithe again. (@tensorflow/tfjs itself reads what lithe_tfjs_save writes in the ctest
tfjs_saved_check.)"""
import json

import numpy
import pytest

import lithe

TOPOLOGY = {"class_name": "Sequential", "config": {"name": "s", "layers": [
    {"class_name": "Dense", "config": {"name": "d1", "units": 3, "activation": "tanh", "use_bias": True,
                                        "batch_input_shape": [None, 4]}},
    {"class_name": "Dense", "config": {"name": "d2", "units": 2, "activation": "linear", "use_bias": True}}]}}
WEIGHTS = [("d1/kernel", (4, 3)), ("d1/bias", (3,)), ("d2/kernel", (3, 2)), ("d2/bias", (2,))]


def _write(folder):
    rng = numpy.random.RandomState(0)
    arrays = [rng.uniform(-0.8, 0.8, shape).astype("<f4") for _, shape in WEIGHTS]
    folder.mkdir()
    (folder / "w.bin").write_bytes(b"".join(a.tobytes() for a in arrays))
    doc = {"format": "layers-model", "generatedBy": "test", "modelTopology": TOPOLOGY,
           "weightsManifest": [{"paths": ["w.bin"], "weights": [
               {"name": n, "shape": list(s), "dtype": "float32"} for n, s in WEIGHTS]}]}
    (folder / "model.json").write_text(json.dumps(doc))
    return arrays


def _numpy_forward(shard, X):
    off, w = 0, {}
    for name, shape in WEIGHTS:
        n = int(numpy.prod(shape))
        w[name] = numpy.frombuffer(shard, "<f4", n, off).reshape(shape).astype("float64")
        off += 4 * n
    assert off == len(shard)
    h = numpy.tanh(X.astype("float64") @ w["d1/kernel"] + w["d1/bias"])
    return h @ w["d2/kernel"] + w["d2/bias"]


def test_fine_tuned_tfjs_model_saves_back(tmp_path):
    original = _write(tmp_path / "in")
    m = lithe.load(tmp_path / "in" / "model.json")
    X = numpy.random.RandomState(1).standard_normal((5, 4)).astype("float32")
    T = numpy.random.RandomState(2).standard_normal((5, 2)).astype("float32")
    opt = lithe.SGD(0.1, grad_clip=0.0, use_averages=False)
    for _ in range(5):
        Y, bp = m.begin_update(X)
        bp(numpy.ascontiguousarray((numpy.from_dlpack(Y) - T) / 5, dtype="float32"))
        m.finish_update(opt)
    Yl = numpy.from_dlpack(m.predict(X))
    m.save_tfjs(tmp_path / "out")
    doc = json.loads((tmp_path / "out" / "model.json").read_text())
    assert doc["modelTopology"] == TOPOLOGY and doc["format"] == "layers-model" and doc["generatedBy"] == "test"
    assert doc["weightsManifest"] == [{"paths": ["group1-shard1of1.bin"], "weights": [
        {"name": n, "shape": list(s), "dtype": "float32"} for n, s in WEIGHTS]}]
    shard = (tmp_path / "out" / "group1-shard1of1.bin").read_bytes()
    assert shard != b"".join(a.tobytes() for a in original)  # the trained weights, not the loaded ones
    numpy.testing.assert_allclose(_numpy_forward(shard, X), Yl, rtol=1e-5, atol=1e-6)
    again = lithe.load(tmp_path / "out" / "model.json")
    numpy.testing.assert_array_equal(numpy.from_dlpack(again.predict(X)), Yl)
    text, weights = m.to_tfjs_bytes()
    assert json.loads(text) == doc and weights == shard
    # a .lithe file made from it keeps what saving needs
    m.save(tmp_path / "m.lithe")
    assert lithe.load(tmp_path / "m.lithe").to_tfjs_bytes() == (text, weights)


def test_other_models_are_refused(tmp_path):
    thinc = pytest.importorskip("thinc.api")
    model = thinc.chain(thinc.Relu(3, 2), thinc.Softmax(2, 3))
    model.initialize(X=numpy.zeros((2, 2), dtype="float32"))
    lithe.export(model, str(tmp_path / "m.lithe"))
    with pytest.raises(lithe.LitheError, match="not loaded from the TF.js layers format"):
        lithe.load(tmp_path / "m.lithe").save_tfjs(tmp_path / "out")
    assert not (tmp_path / "out").exists()
