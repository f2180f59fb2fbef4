"""The Python package as a new user meets it (issue 28): docstrings and type hints on the public
API, py.typed, dtype errors that say what to do, and Thinc 8.1.7's MultiSoftmax predicting the
same through lithe.export. (The wheel in a fresh virtual environment: tests/python_wheel.py.)"""
import inspect
import os
import typing

import numpy
import pytest
from thinc.api import MultiSoftmax, Relu

import lithe

# lithe.export lives in _export.py, which another change replaces (the export through the C
# library); it has its docstring, and its hints come with that change
_HINTS_ELSEWHERE = {"export"}


def _public():
    for name in dir(lithe):
        obj = getattr(lithe, name)
        if not name.startswith("_") and getattr(obj, "__module__", "").startswith("lithe"):
            yield name, obj


def _members(cls):
    for name, f in vars(cls).items():
        if name.startswith("_") and name not in ("__dlpack__", "__dlpack_device__"):
            continue
        fn = f.fget if isinstance(f, property) else f
        if callable(fn):
            yield name, fn


def test_public_api_has_docstrings_and_type_hints():
    missing = []
    for name, obj in _public():
        if not inspect.getdoc(obj):
            missing.append(f"{name}: no docstring")
        fns = [(f"{name}.{m}", fn) for m, fn in _members(obj)] if inspect.isclass(obj) else [(name, obj)]
        for what, fn in fns:
            if not inspect.getdoc(fn):
                missing.append(f"{what}: no docstring")
            if what not in _HINTS_ELSEWHERE and "return" not in typing.get_type_hints(fn):
                missing.append(f"{what}: no return type hint")
    assert not missing, missing


def test_py_typed_marker():
    assert os.path.isfile(os.path.join(os.path.dirname(lithe.__file__), "py.typed"))


@pytest.mark.parametrize("dtype,hint", [("float64", r"\.astype\(numpy\.float32\)"), ("int16", r"numpy\.int64")])
def test_dtype_errors_say_how_to_convert(dtype, hint):
    with pytest.raises(lithe.LitheError, match=rf"lithe computes in float32.*got {dtype} — convert with .*{hint}"):
        lithe.tensor(numpy.zeros((2, 3), dtype=dtype))


def test_float64_predict_input_says_how_to_convert(tmp_path):
    model = Relu(4, 3)
    X = numpy.ones((2, 3), dtype="float32")
    model.initialize(X=X)
    lithe.export(model, tmp_path / "m.lithe")
    m = lithe.load(tmp_path / "m.lithe")
    with pytest.raises(lithe.LitheError, match=r"LITHE_ERR_DTYPE: lithe computes in float32.*got float64 — convert"):
        m.predict(X.astype("float64"))
    torch = pytest.importorskip("torch")
    with pytest.raises(lithe.LitheError, match=r"got float64 — convert with .*\.float\(\) \(torch\)"):
        m.predict(torch.zeros((2, 3), dtype=torch.float64))
    assert numpy.from_dlpack(m.predict(X)).shape == (2, 4)  # float32 goes through


def test_multisoftmax_predicts_as_thinc_817(tmp_path):
    """Thinc 8.1.7's MultiSoftmax returns the logits (its in-place softmax of a column slice is
    lost): an exported model must predict exactly that; the corrected form is an attr."""
    rng = numpy.random.RandomState(3)
    X = rng.standard_normal((6, 5)).astype("float32")
    model = MultiSoftmax((2, 3), 5)
    model.initialize(X=X)
    model.set_param("W", rng.standard_normal((5, 5)).astype("float32"))
    model.set_param("b", rng.standard_normal((5,)).astype("float32"))
    want = model.predict(X)
    assert not numpy.allclose(want[:, :2].sum(axis=1), 1.0)  # Thinc's are logits indeed
    lithe.export(model, tmp_path / "ms.lithe")
    got = numpy.from_dlpack(lithe.load(tmp_path / "ms.lithe").predict(X))
    numpy.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
