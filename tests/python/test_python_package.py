"""The Python package (shims/python, import name `lithe`) against Debian's Thinc 8.1.7 and numpy:
export, load, predictions, Thinc bytes, training steps, and zero-copy DLPack both ways.
Run by ctest: /usr/bin/python3 -m pytest tests/python (LITHE_LIBRARY names the library)."""
import numpy
import pytest
from thinc.api import (Adam, Embed, HashEmbed, L2Distance, LayerNorm, Linear, Maxout, Mish, Relu, Softmax,
                       Softmax_v2, add, chain, clone, concatenate, residual, set_dropout_rate, with_array)

import lithe

rng = numpy.random.RandomState(1)
X6 = rng.standard_normal((7, 6)).astype("float32")

ARCHS = {
    "mlp": lambda: (chain(chain(Relu(8), Relu(5)), Softmax_v2(4)), X6),
    "concat": lambda: (chain(concatenate(Relu(3), Mish(2)), Softmax(3)), X6),
    "residual": lambda: (chain(residual(Relu(6, 6)), Linear(2)), X6),
    "clone": lambda: (chain(clone(Relu(6, 6), 3), Softmax_v2(3)), X6),
    "maxout": lambda: (chain(Maxout(6, nP=3, normalize=True, dropout=0.2), Softmax_v2(3)), X6),
    "add_ln": lambda: (chain(add(Linear(4), Relu(4)), LayerNorm()), X6),
    "hashembed": lambda: (chain(HashEmbed(5, 50, seed=3), Relu(4)), numpy.array([3, 99, 2**40, 7], dtype="uint64")),
    "embed": lambda: (chain(Embed(4, 20, column=1), Softmax_v2(3)),
                      numpy.array([[1, 5], [2, 19], [0, 0]], dtype="int32")),
}


def _initialized(name):
    model, X = ARCHS[name]()
    model.initialize(X=X)
    for node in model.walk():  # non-trivial weights (Softmax starts at zero)
        for p in node.param_names:
            if node.has_param(p):
                node.set_param(p, rng.standard_normal(node.get_param(p).shape).astype("float32") * 0.5)
    return model, X


@pytest.mark.parametrize("name", sorted(ARCHS))
def test_export_load_predict(tmp_path, name):
    model, X = _initialized(name)
    path = tmp_path / f"{name}.lithe"
    lithe.export(model, str(path))
    # the exporter pads the header as lithe_model_save does: the data starts 64-byte aligned
    with open(path, "rb") as f:
        assert (8 + int.from_bytes(f.read(8), "little")) % 64 == 0
    lm = lithe.load(path)
    assert lm.name == model.name
    Y = numpy.from_dlpack(lm.predict(X))
    numpy.testing.assert_allclose(Y, model.predict(X), rtol=1e-5, atol=1e-6)
    assert lm.to_thinc_bytes() == model.to_bytes()


@pytest.mark.parametrize("name", ["mlp", "maxout", "add_ln"])
def test_ten_adam_steps_match_thinc(tmp_path, name):
    model, X = _initialized(name)
    set_dropout_rate(model, 0.0)
    lithe.export(model, str(tmp_path / "m.lithe"))
    lm = lithe.load(tmp_path / "m.lithe")
    T = rng.standard_normal(model.predict(X).shape).astype("float32")
    opt_t, opt_l = Adam(0.01), lithe.Adam(0.01)
    for _ in range(10):
        Y, bp = model.begin_update(X)
        d, _ = L2Distance()(Y, T)
        bp(d)
        model.finish_update(opt_t)
        Yl, bpl = lm.begin_update(X)
        dl = (numpy.from_dlpack(Yl) - T) / T.shape[0]
        bpl(numpy.ascontiguousarray(dl, dtype="float32"))
        lm.finish_update(opt_l)
    back = lithe.load(tmp_path / "m.lithe").from_thinc_bytes(model.to_bytes())
    numpy.testing.assert_allclose(numpy.from_dlpack(lm.predict(X)), numpy.from_dlpack(back.predict(X)), atol=1e-4)


def test_zero_copy_both_ways():
    X = numpy.arange(12, dtype="float32").reshape(3, 4)
    t = lithe.tensor(X)
    assert t.data_ptr == X.ctypes.data  # numpy -> lithe: the same memory
    assert t.shape == (3, 4) and t.dtype == "float32"
    back = numpy.from_dlpack(t)
    assert back.ctypes.data == t.data_ptr  # lithe -> numpy: the same memory
    X[0, 0] = 42.0
    assert back[0, 0] == 42.0
    del t
    assert back[0, 0] == 42.0  # numpy's view keeps the memory alive


def test_torch_zero_copy():
    import torch

    x = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    t = lithe.tensor(x)
    assert t.data_ptr == x.data_ptr()  # torch -> lithe: the same memory
    x[1, 2] = 42.0
    assert numpy.from_dlpack(t)[1, 2] == 42.0  # a write through torch is seen through lithe
    y = torch.from_dlpack(t)
    assert y.data_ptr() == t.data_ptr  # lithe -> torch: the same memory
    del t, x
    assert y[1, 2].item() == 42.0  # torch's view keeps the memory alive


def test_torch_inputs_predict_and_train(tmp_path):
    """A Thinc model exported to lithe, fed torch tensors: predictions and the input gradient
    match Thinc's (fed numpy), and the outputs come back into torch without a copy."""
    import torch

    model, X = _initialized("maxout")
    set_dropout_rate(model, 0.0)
    lithe.export(model, str(tmp_path / "m.lithe"))
    lm = lithe.load(tmp_path / "m.lithe")
    Xt = torch.from_numpy(X.copy())
    Y = lm.predict(Xt)
    Yt = torch.from_dlpack(Y)
    assert Yt.data_ptr() == Y.data_ptr
    numpy.testing.assert_allclose(Yt.numpy(), model.predict(X), rtol=1e-5, atol=1e-6)
    Yl, backprop = lm.begin_update(Xt)
    Yth, backprop_th = model.begin_update(X)
    dY = torch.from_numpy(rng.standard_normal(Yth.shape).astype("float32"))
    dX = torch.from_dlpack(backprop(dY))
    numpy.testing.assert_allclose(dX.numpy(), backprop_th(dY.numpy()), rtol=1e-4, atol=1e-5)


def test_export_refuses_unknown_layers(tmp_path):
    from thinc.layers import with_nvtx_range

    model = chain(Relu(4, 3), with_nvtx_range(Relu(4, 4)))  # a profiling wrapper lithe does not have
    model.initialize(X=X6[:, :3])
    with pytest.raises(lithe.ExportError, match=r"relu.*model\.layers\[1\].*with_nvtx_range"):
        lithe.export(model, str(tmp_path / "x.lithe"))
    assert not (tmp_path / "x.lithe").exists()


def test_errors_are_lithe_errors(tmp_path):
    model, X = _initialized("mlp")
    lithe.export(model, str(tmp_path / "m.lithe"))
    lm = lithe.load(tmp_path / "m.lithe")
    with pytest.raises(lithe.LitheError, match="LITHE_ERR_SHAPE.*relu.*7.*6|LITHE_ERR_SHAPE"):
        lm.predict(numpy.zeros((2, 7), dtype="float32"))
    with pytest.raises(lithe.LitheError, match="LITHE_ERR_IO"):
        lithe.load(tmp_path / "missing.lithe")
    (tmp_path / "bad.lithe").write_bytes(b"\x05\x00\x00\x00\x00\x00\x00\x00{}")
    with pytest.raises(lithe.LitheError, match="LITHE_ERR_FORMAT"):
        lithe.load(tmp_path / "bad.lithe")


def test_save_round_trip(tmp_path):
    model, X = _initialized("maxout")
    lithe.export(model, str(tmp_path / "a.lithe"))
    lm = lithe.load(tmp_path / "a.lithe")
    lm.save(tmp_path / "b.lithe", lithe.Adam())
    lb = lithe.load(tmp_path / "b.lithe")
    assert (numpy.from_dlpack(lm.predict(X)) == numpy.from_dlpack(lb.predict(X))).all()


def _tagger():
    """spaCy's tok2vec + tagger shape: lists of ids -> Ragged -> windows -> Maxout -> Softmax -> lists."""
    from thinc.api import expand_window, list2ragged, ragged2list

    model = chain(list2ragged(), with_array(HashEmbed(8, 50, seed=7)), expand_window(1),
                  with_array(Maxout(6, nP=3, normalize=True)), with_array(Softmax(5)), ragged2list())
    docs = [numpy.array(ids, dtype="uint64") for ids in ([5, 17, 3, 99], [2], [40, 41, 42])]
    model.initialize(X=docs)
    for node in model.walk():
        for p in node.param_names:
            if node.has_param(p):
                node.set_param(p, rng.standard_normal(node.get_param(p).shape).astype("float32") * 0.5)
    return model, docs


def test_sequence_model_lists_in_and_out(tmp_path):
    model, docs = _tagger()
    lithe.export(model, str(tmp_path / "tagger.lithe"))
    lm = lithe.load(tmp_path / "tagger.lithe")
    Ys = lm.predict(docs)
    assert isinstance(Ys, list) and len(Ys) == len(docs)
    for y, want in zip(Ys, model.predict(docs)):
        numpy.testing.assert_allclose(numpy.from_dlpack(y), want, rtol=1e-5, atol=1e-6)
    # gradients flow back through the lists: Thinc's and lithe's parameter gradients agree
    Yl, backprop = lm.begin_update(docs)
    Yt, backprop_t = model.begin_update(docs)
    dYs = [rng.standard_normal(y.shape).astype("float32") for y in Yt]
    backprop(dYs)
    backprop_t(dYs)
    lm.finish_update(lithe.SGD(0.1, grad_clip=0.0, use_averages=False))
    from thinc.api import SGD

    model.finish_update(SGD(0.1, grad_clip=0.0, use_averages=False))
    for y, want in zip(lm.predict(docs), model.predict(docs)):
        numpy.testing.assert_allclose(numpy.from_dlpack(y), want, rtol=1e-4, atol=1e-5)


def test_ragged_in_and_out(tmp_path):
    from thinc.api import Ragged, reduce_mean, with_ragged, expand_window

    model = chain(with_ragged(expand_window(1)), with_array(Relu(4)))
    X = Ragged(rng.standard_normal((6, 3)).astype("float32"), numpy.array([2, 0, 4], dtype="int32"))
    model.initialize(X=X)
    lithe.export(model, str(tmp_path / "r.lithe"))
    Y = lithe.load(tmp_path / "r.lithe").predict(X)
    assert isinstance(Y, lithe.Ragged)
    want = model.predict(X)
    numpy.testing.assert_allclose(numpy.from_dlpack(Y.data), want.data, rtol=1e-5, atol=1e-6)
    assert (numpy.from_dlpack(Y.lengths) == want.lengths).all()
    # lengths as a strided view (every other element of a numpy array): lithe packs them
    strided = numpy.array([2, 99, 0, 99, 4, 99], dtype="int32")[::2]
    Xs = Ragged(X.data, strided)
    numpy.testing.assert_allclose(numpy.from_dlpack(lithe.load(tmp_path / "r.lithe").predict(Xs).data), want.data,
                                  rtol=1e-5, atol=1e-6)
    pooled = chain(model, reduce_mean())
    lithe.export(pooled, str(tmp_path / "p.lithe"))
    numpy.testing.assert_allclose(numpy.from_dlpack(lithe.load(tmp_path / "p.lithe").predict(X)), pooled.predict(X),
                                  rtol=1e-5, atol=1e-6)


def test_getitem_layers(tmp_path):
    from thinc.layers.array_getitem import array_getitem, floats_getitem

    X = rng.standard_normal((5, 6)).astype("float32")
    for index in [(slice(None), 2), (slice(1, None, 2),), ([3, 0, 4],), (slice(None, None, -1), slice(1, 4)), -2,
                  (slice(None), [5, 1])]:
        for make in (array_getitem, floats_getitem):
            model = chain(make(index), Relu(3)) if numpy.ndim(X[index]) == 2 else make(index)
            model.initialize(X=X)
            lithe.export(model, str(tmp_path / "g.lithe"))
            numpy.testing.assert_allclose(numpy.from_dlpack(lithe.load(tmp_path / "g.lithe").predict(X)),
                                          model.predict(X), rtol=1e-5, atol=1e-6)


def test_with_cpu_exports(tmp_path):
    from thinc.api import NumpyOps, with_cpu

    model = chain(with_cpu(Relu(4), NumpyOps()), Linear(2))
    model.initialize(X=X6)
    lithe.export(model, str(tmp_path / "c.lithe"))
    numpy.testing.assert_allclose(numpy.from_dlpack(lithe.load(tmp_path / "c.lithe").predict(X6)), model.predict(X6),
                                  rtol=1e-5, atol=1e-6)


def _cuda_or_skip():
    """torch and lithe on one CUDA device, or a visible skip saying which is missing."""
    torch = pytest.importorskip("torch")
    if "cuda" not in lithe.backends():
        pytest.skip("this liblithe was built without the CUDA backend (no nvcc)")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU on this machine (torch.cuda.is_available() is False)")
    try:
        lithe._backend("cuda:0")
    except lithe.LitheError as e:
        pytest.skip(f"lithe's CUDA backend is unavailable: {e}")
    return torch


def _backend_or_skip(kind, device, label, why_unbuilt):
    """Skips (visibly) unless liblithe has backend `kind` and `device` opens."""
    if kind not in lithe.backends():
        pytest.skip(f"this liblithe was built without the {label} backend{why_unbuilt}")
    try:
        lithe._backend(device)
    except lithe.LitheError as e:
        pytest.skip(f"lithe's {label} backend is unavailable: {e}")


def _lithe_cuda_or_skip():
    _backend_or_skip("cuda", "cuda:0", "CUDA", " (no nvcc)")


def test_cuda_tensor_dlpack_protocol(tmp_path):
    """A lithe CUDA tensor speaks DLPack's device protocol (kDLCUDA, the device index) and comes back
    through it without a copy; a model moved to "cuda" predicts as on the CPU. Runs on a GPU, and in
    CI against the host emulation of the CUDA kernels (python_package_cuda_emulated)."""
    _lithe_cuda_or_skip()
    model, X = _initialized("mlp")
    lithe.export(model, str(tmp_path / "m.lithe"))
    lm = lithe.load(tmp_path / "m.lithe")
    expected = numpy.from_dlpack(lm.predict(X))
    lm.to("cuda")
    Xd = lithe.tensor(X).to("cuda")  # inputs live where the model does
    assert Xd.device == "cuda:0"
    y = lm.predict(Xd)
    assert y.device == "cuda:0" and y.__dlpack_device__() == (2, 0)
    again = lithe.tensor(y)  # kDLCUDA in: the same device memory, on the same backend
    assert again.device == "cuda:0"
    numpy.testing.assert_allclose(numpy.from_dlpack(again.to("cpu")), expected, rtol=1e-5, atol=1e-6)


def test_vulkan_tensor_dlpack(tmp_path):
    """A Vulkan tensor reports its DLPack device (kDLVulkan = 7, the device's index), refuses a
    zero-copy export with a BufferError naming vulkan (numpy's and torch 1.13's from_dlpack call
    __dlpack__() bare), and exports a host copy when asked for one (dl_device=(1, 0), copy=True) or
    after t.to("cpu"). Runs on lavapipe in CI."""
    _backend_or_skip("vulkan", "vulkan", "Vulkan", "")
    import torch

    X = rng.standard_normal((3, 5)).astype("float32")
    host0 = lithe.tensor(X)
    assert host0.__dlpack_device__() == (1, 0)
    t = host0.to("vulkan")
    assert t.device == "vulkan"
    kind, index = t.__dlpack_device__()
    assert kind == 7 and index >= 0
    assert host0.to(f"vulkan:{index}").__dlpack_device__() == (7, index)  # the device that index names
    for consume in (numpy.from_dlpack, torch.from_dlpack, lambda x: x.__dlpack__(),
                    lambda x: x.__dlpack__(copy=False), lambda x: x.__dlpack__(dl_device=(7, index)),
                    lambda x: x.__dlpack__(dl_device=(7, index), copy=True)):
        with pytest.raises(BufferError, match="vulkan"):
            consume(t)
    with pytest.raises(BufferError, match="copy=False"):
        t.__dlpack__(dl_device=(1, 0), copy=False)
    with pytest.raises(BufferError, match=r"not to DLPack device \(2, 0\)"):
        t.__dlpack__(dl_device=(2, 0))
    for kw in ({"dl_device": (1, 0)}, {"copy": True}, {"dl_device": (1, 0), "copy": True}, {"max_version": (1, 0),
                                                                                           "dl_device": (1, 0)}):
        got = torch.utils.dlpack.from_dlpack(t.__dlpack__(**kw))  # torch 1.13 takes the capsule itself
        assert got.device.type == "cpu"
        numpy.testing.assert_array_equal(got.numpy(), X)
    host = t.to("cpu")
    numpy.testing.assert_array_equal(numpy.from_dlpack(host), X)
    numpy.testing.assert_array_equal(torch.from_dlpack(host).numpy(), X)
    # host tensors: zero-copy by default, a fresh copy with copy=True
    assert torch.utils.dlpack.from_dlpack(host.__dlpack__()).data_ptr() == host.data_ptr
    copied = torch.utils.dlpack.from_dlpack(host.__dlpack__(copy=True))
    assert copied.data_ptr() != host.data_ptr and (copied.numpy() == X).all()
    # a model moved there: its predictions are Vulkan tensors, which come home the same way
    model, X6_ = _initialized("mlp")
    lithe.export(model, str(tmp_path / "m.lithe"))
    lm = lithe.load(tmp_path / "m.lithe")
    expected = numpy.from_dlpack(lm.predict(X6_))
    y = lm.to("vulkan").predict(lithe.tensor(X6_).to("vulkan"))
    assert y.__dlpack_device__() == (7, index)
    with pytest.raises(BufferError, match="vulkan"):
        numpy.from_dlpack(y)
    numpy.testing.assert_allclose(torch.utils.dlpack.from_dlpack(y.__dlpack__(dl_device=(1, 0))).numpy(), expected,
                                  rtol=1e-5, atol=1e-6)


def test_torch_cuda_dlpack_zero_copy(tmp_path):
    """torch CUDA tensors in and out of lithe without a copy, and a model predicting on the GPU from
    them, against the same model on the CPU."""
    torch = _cuda_or_skip()
    x = torch.randn(7, 6, device="cuda")
    t = lithe.tensor(x)  # torch -> lithe: same device memory
    assert t.device == "cuda:0" and t.__dlpack_device__() == (2, 0)
    back = torch.from_dlpack(t)  # lithe -> torch
    assert back.data_ptr() == x.data_ptr() and back.device == x.device
    x.mul_(2.0)  # a write through torch shows through both views
    torch.testing.assert_close(back, x)
    model, X = _initialized("mlp")
    lithe.export(model, str(tmp_path / "m.lithe"))
    lm = lithe.load(tmp_path / "m.lithe")
    expected = numpy.from_dlpack(lm.predict(X))
    lm.to("cuda")
    y = lm.predict(torch.from_numpy(X).cuda())
    got = torch.from_dlpack(y)
    assert got.is_cuda
    numpy.testing.assert_allclose(got.cpu().numpy(), expected, rtol=1e-5, atol=1e-6)


def test_prepare_inference_same_bits_and_snapshot(tmp_path):
    """Model.prepare_inference packs the weights once: predictions keep their bits; a write through a
    param's DLPack view is not seen until the next prepare (the documented snapshot); a training
    step drops the copies."""
    model, X = _initialized("mlp")
    lithe.export(model, str(tmp_path / "m.lithe"))
    lm = lithe.load(tmp_path / "m.lithe")
    Xb = numpy.tile(X, (9, 1))  # 63 rows: the packed GEMM path at several row-tile heights
    plain = numpy.from_dlpack(lm.predict(Xb)).copy()
    assert lm.prepare_inference() >= 4 * (8 * 6 + 5 * 8 + 4 * 5)
    prepared = numpy.from_dlpack(lm.predict(Xb)).copy()
    assert prepared.tobytes() == plain.tobytes()
    import torch

    W = torch.from_dlpack(next(n for n in lm.walk() if "W" in n.param_names).get_param("W"))
    W.mul_(-1.0)  # lithe cannot see this write
    assert numpy.from_dlpack(lm.predict(Xb)).tobytes() == plain.tobytes()
    lm.release_prepared()
    fresh = numpy.from_dlpack(lm.predict(Xb)).copy()
    assert fresh.tobytes() != plain.tobytes()
    lm.prepare_inference()
    assert numpy.from_dlpack(lm.predict(Xb)).tobytes() == fresh.tobytes()
    Y, bp = lm.begin_update(X)
    bp(numpy.ones(numpy.from_dlpack(Y).shape, dtype="float32"))
    lm.finish_update(lithe.SGD(0.1))
    assert lithe._lib.model_prepared_bytes(lm._ptr) == 0
    stepped = numpy.from_dlpack(lm.predict(Xb)).copy()
    lm.release_prepared()
    assert numpy.from_dlpack(lm.predict(Xb)).tobytes() == stepped.tobytes()
