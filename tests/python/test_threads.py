"""The Python package under threads and after frees (issue 30): one model shared by threads that
predict, prepare, release, train and save (the crash the issue reproduced: prepare_inference /
release_prepared on one thread while others predict), separate models in parallel, and handles
used after Model.close(). Plus the small input checks: read-only arrays, lithe.load(None)."""
import gc
import threading

import numpy
import pytest
from thinc.api import Relu, Softmax_v2, chain

import lithe

rng = numpy.random.RandomState(3)
X = rng.standard_normal((16, 12)).astype("float32")


@pytest.fixture(scope="module")
def model_bytes(tmp_path_factory):
    model = chain(Relu(24, 12), Relu(24, 24), Softmax_v2(6, 24))
    model.initialize(X=X)
    for node in model.walk():
        for p in node.param_names:
            if node.has_param(p):
                node.set_param(p, rng.standard_normal(node.get_param(p).shape).astype("float32") * 0.4)
    path = tmp_path_factory.mktemp("threads") / "mlp.lithe"
    lithe.export(model, str(path))
    return path.read_bytes()


def _run_threads(targets):
    errors = []

    def wrap(fn):
        def run():
            try:
                fn()
            except BaseException as e:  # noqa: BLE001 - reported below
                errors.append(e)
        return run

    threads = [threading.Thread(target=wrap(t)) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def test_prepare_release_while_predicting_100_runs(model_bytes):
    """The issue's reproduction: segfaulted 2 runs in 4 (and gave a wrong output in another)."""
    for run in range(100):
        m = lithe.load_bytes(model_bytes)
        want = numpy.from_dlpack(m.predict(X)).copy()

        def predictor():
            for _ in range(15):
                numpy.testing.assert_array_equal(numpy.from_dlpack(m.predict(X)), want)

        def preparer():
            for _ in range(15):
                m.prepare_inference()
                m.release_prepared()

        _run_threads([predictor, predictor, preparer, preparer])


def test_shared_model_train_predict_save(model_bytes, tmp_path):
    """Threads training, predicting, preparing and saving one model and one optimizer: no error,
    and the result is a model that loads and predicts finite values."""
    m = lithe.load_bytes(model_bytes)
    opt = lithe.Adam(0.001)
    m.set_dropout_rate(0.0)

    def trainer():
        for _ in range(20):
            Y, backprop = m.begin_update(X)
            backprop(numpy.from_dlpack(Y) - 1.0 / 6)
            m.finish_update(opt)

    def predictor():
        for _ in range(20):
            assert numpy.isfinite(numpy.from_dlpack(m.predict(X))).all()

    def preparer():
        for _ in range(20):
            m.prepare_inference()
            m.release_prepared()

    def saver(k):
        def run():
            for i in range(10):
                m.save(tmp_path / f"s{k}.lithe", opt)
                assert lithe.load_bytes(m.to_bytes()).name == m.name
        return run

    _run_threads([trainer, trainer, predictor, preparer, saver(0), saver(1)])
    back = lithe.load(tmp_path / "s0.lithe")
    assert numpy.isfinite(numpy.from_dlpack(back.predict(X))).all()


def test_separate_models_in_parallel_match_one_thread(model_bytes):
    """Each thread trains its own model: the same bits as the same work done on one thread."""
    def work(out, k):
        m = lithe.load_bytes(model_bytes)
        opt = lithe.SGD(0.01 * (k + 1))
        for _ in range(5):
            Y, backprop = m.begin_update(X)
            backprop(numpy.from_dlpack(Y).copy())
            m.finish_update(opt)
        out[k] = numpy.from_dlpack(m.predict(X)).copy()

    alone, together = {}, {}
    for k in range(4):
        work(alone, k)
    _run_threads([lambda k=k: work(together, k) for k in range(4)])
    for k in range(4):
        numpy.testing.assert_array_equal(together[k], alone[k])


def test_handles_after_close(model_bytes):
    m = lithe.load_bytes(model_bytes)
    nodes = m.walk()
    W = nodes[1].get_param("W")
    w = numpy.from_dlpack(W).copy()
    Y, backprop = m.begin_update(X)
    m.close()
    m.close()  # twice: harmless
    with pytest.raises(lithe.LitheError, match="the model was freed"):
        nodes[1].get_param("W")  # was a heap-use-after-free (ASan, lithe__model_find_param)
    with pytest.raises(lithe.LitheError, match="the model was freed"):
        nodes[0].name
    with pytest.raises(lithe.LitheError, match="the model was freed"):
        m.predict(X)
    numpy.testing.assert_array_equal(numpy.from_dlpack(W), w)  # a Tensor holds its own reference
    backprop(numpy.from_dlpack(Y).copy())  # the C record holds the nodes it needs


def test_node_keeps_model_alive(model_bytes):
    nodes = lithe.load_bytes(model_bytes).walk()
    gc.collect()
    assert nodes[1].param_names == ["W", "b"]
    assert nodes[1].get_param("W").shape == (24, 12)


def test_read_only_array_predicts(model_bytes):
    m = lithe.load_bytes(model_bytes)
    ro = X.copy()
    ro.setflags(write=False)
    numpy.testing.assert_array_equal(numpy.from_dlpack(m.predict(ro)), numpy.from_dlpack(m.predict(X)))


def test_load_path_types(model_bytes, tmp_path):
    with pytest.raises(TypeError, match="lithe.load: path must be"):
        lithe.load(None)
    with pytest.raises(TypeError, match="path must be"):
        lithe.load(3)
    m = lithe.load_bytes(model_bytes)
    with pytest.raises(TypeError, match="lithe.Model.save: path must be"):
        m.save(None)
    m.save(str(tmp_path / "a.lithe").encode())  # bytes paths are paths
    assert lithe.load(tmp_path / "a.lithe").name == m.name
