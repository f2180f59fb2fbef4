"""lithe inside Thinc: LitheWrapper(model) is a Thinc layer whose shim runs a lithe model, so a
lithe model (loaded from a .lithe or .onnx file) sits in a Thinc network like PyTorchWrapper's
torch module does.

    from thinc.api import Adam, Softmax, chain
    import lithe
    from lithe.thinc import LitheWrapper

    model = chain(LitheWrapper(lithe.load("encoder.onnx")), Softmax(5, 8))
    Y, backprop = model.begin_update(X)
    backprop(dY)                   # dX flows back to Thinc, lithe accumulates its params' grads
    model.finish_update(Adam(1e-3))  # Thinc's optimizer steps the lithe params too

Arrays cross without copies both ways: Thinc's input and dY reach lithe by DLPack (lithe views
numpy's memory), and lithe's output, dX and params come back as writable numpy arrays over
lithe's memory (lithe.to_numpy: numpy's own from_dlpack would give read-only views, which Thinc's
optimizer cannot update in place). Inputs must be C-contiguous to be viewed; others are copied
first.

The lithe params' gradients are applied by the Thinc optimizer passed to finish_update, as
PyTorchShim does for torch parameters: each param is a writable numpy view of lithe's memory,
the optimizer updates it in place (keyed by (shim id, "<walk index>:<node>.<param>")), and the
grad is zeroed. One optimizer then steps the whole mixed model with one set of hyper-parameters,
schedules, gradient clipping, L2 and parameter averages (use_params swaps the averages in). Only
models on the CPU backend can be wrapped (DLPack export needs host memory)."""
import contextlib
import copy

import numpy
from thinc.api import Model
from thinc.shims import Shim

from . import Model as LitheModel
from . import Tensor, load_bytes, to_numpy


def _to_numpy(v):
    """lithe's output (a Tensor, or tuples / lists of them) as numpy arrays viewing lithe's memory."""
    if isinstance(v, Tensor):
        return to_numpy(v)
    if isinstance(v, tuple):
        return tuple(_to_numpy(x) for x in v)
    if isinstance(v, list):
        return [_to_numpy(x) for x in v]
    return v


def _to_lithe(x):
    """Thinc's arrays as lithe takes them: C-contiguous numpy arrays are viewed, not copied."""
    if isinstance(x, numpy.ndarray):
        return numpy.ascontiguousarray(x)
    if isinstance(x, (tuple, list)):
        return type(x)(_to_lithe(i) for i in x)
    if hasattr(x, "__dlpack__"):
        return x
    return numpy.ascontiguousarray(numpy.asarray(x))


class LitheShim(Shim):
    """A Thinc Shim around a lithe.Model."""

    def __call__(self, inputs, is_train):
        X = _to_lithe(inputs)
        if not is_train:
            return _to_numpy(self._model.predict(X)), None
        Y, lithe_backprop = self._model.begin_update(X)

        def backprop(dY):
            dX = lithe_backprop(_to_lithe(dY))
            return _to_numpy(dX)

        return _to_numpy(Y), backprop

    def _params(self):
        """(key, node, name) for every trainable param of the lithe tree, in walk order."""
        for i, node in enumerate(self._model.walk()):
            for name in node.param_names:
                if not node.is_frozen(name):
                    yield f"{i}:{node.name}.{name}", node, name

    def finish_update(self, optimizer):
        for key, node, name in self._params():
            if not node.has_grad(name):
                continue
            W = to_numpy(node.get_param(name))
            G = to_numpy(node.get_grad(name))
            W2, _ = optimizer((self.id, key), W, G)
            if W2 is not W:
                numpy.copyto(W, W2)
            G.fill(0)

    @contextlib.contextmanager
    def use_params(self, params):
        """Swaps in the values params (e.g. optimizer.averages) holds for this shim's keys."""
        saved = []
        for key, node, name in self._params():
            if (self.id, key) in params:
                W = to_numpy(node.get_param(name))
                saved.append((W, W.copy()))
                numpy.copyto(W, params[(self.id, key)])
        try:
            yield
        finally:
            for W, old in saved:
                numpy.copyto(W, old)

    def copy(self):
        """A shim over an independent copy of the model, with its own id (so its optimizer state is
        its own: Shim.copy's deepcopy would keep the id)."""
        return LitheShim(copy.deepcopy(self._model), config=self.cfg)

    def to_device(self, device_type, device_id):
        if device_type != "cpu":
            raise ValueError("LitheShim: lithe models in Thinc run on the CPU (DLPack with host memory)")

    def to_bytes(self):
        return self._model.to_bytes()

    def from_bytes(self, data):
        self._model = load_bytes(data)
        return self


def _forward(model, X, is_train):
    shim = model.shims[0]
    Y, backprop = shim(X, is_train)
    if not is_train:
        return Y, lambda dY: None
    return Y, backprop


def _init(model, X=None, Y=None):
    """The lithe model comes initialized; a sample X sets nI / nO from one prediction."""
    if X is not None:
        Yp = model.shims[0].predict(X)
        if isinstance(X, numpy.ndarray) and X.ndim >= 2 and model.has_dim("nI") is None:
            model.set_dim("nI", X.shape[-1])
        if isinstance(Yp, numpy.ndarray) and Yp.ndim >= 2 and model.has_dim("nO") is None:
            model.set_dim("nO", Yp.shape[-1])
    return model


def LitheWrapper(lithe_model: LitheModel) -> Model:
    """A Thinc Model running `lithe_model` (a lithe.Model) through a LitheShim: its forward and
    backward are lithe's, its params are updated in place by Thinc's optimizer (finish_update), and
    it copies and serializes with the Thinc model around it."""
    if not isinstance(lithe_model, LitheModel):
        raise TypeError(f"LitheWrapper takes a lithe.Model, got {type(lithe_model).__name__}")
    return Model("lithe", _forward, init=_init, shims=[LitheShim(lithe_model)], dims={"nI": None, "nO": None})
