"""lithe for Python: load .lithe models, predict and train with lithe's C core (through ctypes),
export Thinc models, and exchange arrays with numpy / torch by DLPack without copies.

    import lithe, numpy
    lithe.export(thinc_model, "model.lithe")       # an initialized Thinc 8.1 model
    model = lithe.load("model.lithe")
    Y = numpy.from_dlpack(model.predict(X))         # X: any DLPack producer (numpy >= 1.22, torch)

Threads: a Model, the Nodes of its walk() and its backprop callbacks share one lock (a
threading.RLock), taken around every call into the C library that touches the model; an Optimizer
has its own. Any number of threads may use one model: their calls run one at a time (the C library
itself refuses a second thread inside a model, include/lithe.h "Thread safety"); separate models
run in parallel (the C calls release the GIL).

Lifetimes: handles keep what they point into alive. A Node or a backprop callback keeps its model
alive; a Tensor from get_param / get_grad / predict holds its own reference to the memory. After
Model.close() (which frees the C model now instead of at garbage collection), every call on the
model or on its Nodes raises LitheError (LITHE_ERR_STATE); the Tensors stay valid.
"""
from __future__ import annotations

import ctypes
import functools
import os
import threading
from typing import Any, Callable, List, Optional, Tuple, Union

from . import _lib
from ._dlpack import KDL_CPU as _KDL_CPU, KDL_CUDA as _KDL_CUDA, KDL_VULKAN as _KDL_VULKAN
from ._dlpack import backend as _backend, from_dlpack as _from_dlpack, to_capsule as _to_capsule
from ._export import export, ExportError  # noqa: F401
from ._lib import LitheError  # noqa: F401
from ._torch import FoldedWeightsWarning, TorchStateDict, to_torch_state_dict  # noqa: F401

__version__: str = _lib.version().decode()

#: What predict / begin_update take: a lithe.Tensor, any DLPack producer (numpy >= 1.22, torch; float32
#: values, int32 / int64 / uint64 ids), Thinc's Ragged / Padded (or lithe's), a list of such arrays,
#: a tuple, or a list of str (strings2arrays, remap_ids).
ArrayLike = Any
#: What they return: a lithe.Tensor, Ragged, Padded, list, tuple or list of str (no copies).
Value = Any


def backends() -> List[str]:
    """The backends compiled into the library (whether their device is present shows on use)."""
    buf = ctypes.create_string_buffer(128)
    _lib.backend_list(buf, 128)
    return buf.value.decode().split(",")

_DTYPES = {0: "float32", 1: "float16", 2: "bfloat16", 3: "int32", 4: "int64", 5: "uint64", 6: "uint8", 7: "uint32"}


class Tensor:
    """A lithe tensor. Implements __dlpack__ / __dlpack_device__: numpy.from_dlpack(t) and
    torch.from_dlpack(t) view its memory without a copy (host and CUDA memory; a Vulkan tensor's
    memory cannot travel by DLPack: export a host copy, t.to("cpu") or __dlpack__(dl_device=(1, 0)))."""

    def __init__(self, ptr):
        self._ptr = ptr  # a reference owned by this object

    @property
    def shape(self) -> Tuple[int, ...]:
        """The extents, as a tuple of ints."""
        n = _lib.tensor_ndim(self._ptr)
        s = _lib.tensor_shape(self._ptr)
        return tuple(s[i] for i in range(n))

    @property
    def dtype(self) -> str:
        """The dtype's numpy name: "float32", "float16", "bfloat16", "int32", "int64", "uint64", "uint8", "uint32"."""
        return _DTYPES.get(_lib.tensor_dtype(self._ptr), "?")

    @property
    def data_ptr(self) -> Optional[int]:
        """The data's address (host or device memory), or None for an empty tensor."""
        return _lib.tensor_data(self._ptr)

    @property
    def device(self) -> str:
        """The backend's name: "cpu", "cuda:0", "vulkan"."""
        return _lib.backend_name(_lib.tensor_backend(self._ptr)).decode()

    def __dlpack__(self, stream: Optional[int] = None, *, max_version: Optional[Tuple[int, int]] = None,
                   dl_device: Optional[Tuple[int, int]] = None, copy: Optional[bool] = None) -> Any:
        """A DLPack capsule (legacy "dltensor", whatever max_version asks) of this tensor's memory,
        the array API's protocol: host and CUDA tensors without a copy; dl_device=(1, 0) (kDLCPU)
        asks for host memory, copying a device tensor there; copy=True always copies (to the
        host for a Vulkan tensor, the only copy DLPack can carry), copy=False never (BufferError
        when one is needed). A Vulkan tensor without either raises BufferError naming the backend:
        DLPack has no way to share Vulkan buffers. Other devices in dl_device: BufferError."""
        here = self.__dlpack_device__()
        want = here if dl_device is None else (int(dl_device[0]), int(dl_device[1]))
        if want != here and want != (_KDL_CPU, 0):
            raise BufferError(f"lithe.Tensor.__dlpack__: a tensor on '{self.device}' (DLPack device {here}) exports "
                              f"to its own device or the host (1, 0), not to DLPack device {want}")
        if dl_device is not None and want == here and here[0] == _KDL_VULKAN:
            raise BufferError(f"lithe.Tensor.__dlpack__: DLPack cannot carry the memory of a tensor on "
                              f"'{self.device}' (asked for DLPack device {want}, with or without a copy); "
                              f"dl_device=(1, 0) exports a host copy")
        to_host = want != here or (copy and here[0] == _KDL_VULKAN)
        t = self
        if to_host or copy:
            if copy is False:
                raise BufferError(f"lithe.Tensor.__dlpack__: a tensor on '{self.device}' reaches DLPack device "
                                  f"{want} only by a copy, and copy=False forbids one")
            # a contiguous copy (lithe_tensor_to_backend waits for the device's work first); held
            # here until the capsule's managed tensor has taken its own reference
            t = self.to("cpu" if to_host else self.device)
        # DLPack's stream protocol: the consumer names the stream it will use (None / -1: none);
        # lithe's work on the exported tensor (a CUDA copy's included) must be done before that
        # stream reads it. lithe waits for its own stream, which is always enough (and cheap next to
        # a host round trip).
        if t.__dlpack_device__()[0] == _KDL_CUDA and stream != -1:
            _lib.check(_lib.backend_sync(_lib.tensor_backend(t._ptr)))
        try:
            return _to_capsule(t._ptr)
        except LitheError as e:
            if here[0] != _KDL_VULKAN:
                raise
            raise BufferError(f"{e} -- from Python: t.__dlpack__(dl_device=(1, 0)) or copy=True exports a host "
                              f"copy, as does t.to('cpu')") from e

    def __dlpack_device__(self) -> Tuple[int, int]:
        """(DLDeviceType, device id): (1, 0) host memory (kDLCPU), (2, i) "cuda:i" (kDLCUDA),
        (7, i) Vulkan device i in the loader's order (kDLVulkan) -- lithe_tensor_dlpack_device."""
        kind, index = ctypes.c_int32(), ctypes.c_int32()
        _lib.check(_lib.tensor_dlpack_device(self._ptr, ctypes.byref(kind), ctypes.byref(index)))
        return (kind.value, index.value)

    def to(self, device: str) -> "Tensor":
        """A contiguous copy on another backend ("cpu", "cuda", "vulkan")."""
        out = ctypes.c_void_p()
        _lib.check(_lib.tensor_to_backend(self._ptr, _backend(device), ctypes.byref(out)))
        return Tensor(out)

    def __del__(self):
        if getattr(self, "_ptr", None):
            _lib.tensor_release(self._ptr)
            self._ptr = None

    def __repr__(self):
        return f"lithe.Tensor(shape={self.shape}, dtype={self.dtype})"


_NUMPY_TYPES = {"float32": "<f4", "float16": "<f2", "int32": "<i4", "int64": "<i8", "uint64": "<u8", "uint8": "|u1",
                "uint32": "<u4"}


class _ArrayView:
    """__array_interface__ over a lithe tensor's memory; holds the tensor while numpy uses it."""

    def __init__(self, t):
        self._tensor = t
        shape = t.shape
        itemsize = int(_NUMPY_TYPES[t.dtype][2:])
        strides = _lib.tensor_strides(t._ptr)
        self.__array_interface__ = {"shape": shape, "typestr": _NUMPY_TYPES[t.dtype], "version": 3,
                                    "data": (t.data_ptr or 0, False),
                                    "strides": tuple(strides[i] * itemsize for i in range(len(shape)))}


def to_numpy(t: Tensor) -> Any:
    """A writable numpy array over a lithe.Tensor's memory (host backends), no copy; it keeps the
    tensor alive. (numpy.from_dlpack gives the same view, read-only.)"""
    import numpy

    if t.data_ptr is None:
        raise LitheError("LITHE_ERR_INVALID_ARG", "the tensor is not in host memory")
    return numpy.asarray(_ArrayView(t))


def tensor(obj: Any) -> Tensor:
    """A lithe.Tensor viewing obj's memory (any DLPack producer: numpy >= 1.22, torch), no copy."""
    return Tensor(_from_dlpack(obj))


class Ragged(tuple):
    """Thinc's Ragged as lithe returns it: (data, lengths), both lithe.Tensors."""
    __slots__ = ()

    def __new__(cls, data, lengths):
        return tuple.__new__(cls, (data, lengths))

    @property
    def data(self) -> Tensor:
        """(N, ...) rows of every sequence, concatenated."""
        return self[0]

    @property
    def lengths(self) -> Tensor:
        """(B,) int32: each sequence's length."""
        return self[1]


class Padded(tuple):
    """Thinc's Padded as lithe returns it: (data, size_at_t, lengths, indices), lithe.Tensors."""
    __slots__ = ()

    def __new__(cls, data, size_at_t, lengths, indices):
        return tuple.__new__(cls, (data, size_at_t, lengths, indices))

    @property
    def data(self) -> Tensor:
        """(T, B, ...) time-major data, sequences sorted longest first."""
        return self[0]

    @property
    def size_at_t(self) -> Tensor:
        """(T,) int32: how many sequences are still running at each step."""
        return self[1]

    @property
    def lengths(self) -> Tensor:
        """(B,) int32: each sequence's length, in the original order."""
        return self[2]

    @property
    def indices(self) -> Tensor:
        """(B,) int32: the original position of each sorted sequence."""
        return self[3]


def _tensor_ptr(X):
    """(tensor pointer, owned) for an array-like: a lithe.Tensor or any DLPack producer."""
    if isinstance(X, Tensor):
        return X._ptr, False
    return _from_dlpack(X), True


def _value_of(X):
    """A lithe value holding X, zero-copy through DLPack: an array, a list of str (copied into a
    STRINGS value: strings2arrays, remap_ids), a list (Thinc's List[array]),
    a tuple, or a Ragged / Padded (lithe's, or Thinc's: anything with their fields)."""
    v = ctypes.c_void_p()
    if hasattr(X, "size_at_t") and hasattr(X, "indices"):  # Padded
        fields = [_tensor_ptr(f) for f in (X.data, X.size_at_t, X.lengths, X.indices)]
        try:
            _lib.check(_lib.value_padded(*[f[0] for f in fields], ctypes.byref(v)))
        finally:
            for t, owned in fields:
                if owned:
                    _lib.tensor_release(t)
        return v
    if hasattr(X, "lengths") and hasattr(X, "data") and not hasattr(X, "__dlpack__"):  # Ragged
        fields = [_tensor_ptr(f) for f in (X.data, X.lengths)]
        try:
            _lib.check(_lib.value_ragged(fields[0][0], fields[1][0], ctypes.byref(v)))
        finally:
            for t, owned in fields:
                if owned:
                    _lib.tensor_release(t)
        return v
    if isinstance(X, (list, tuple)) and X and all(isinstance(x, str) for x in X):  # Sequence[str]: STRINGS
        enc = (ctypes.c_char_p * len(X))(*[x.encode("utf8") for x in X])
        _lib.check(_lib.value_strings(len(X), enc, ctypes.byref(v)))
        return v
    if isinstance(X, (list, tuple)):
        items = [_value_of(x) for x in X]
        arr = (ctypes.c_void_p * max(len(items), 1))(*[i.value for i in items])
        try:
            make = _lib.value_tuple if isinstance(X, tuple) else _lib.value_list
            _lib.check(make(len(items), arr, ctypes.byref(v)))
        finally:
            for i in items:
                _lib.value_release(i)
        return v
    t, owned = _tensor_ptr(X)
    try:
        _lib.check(_lib.value_tensor(t, ctypes.byref(v)))
    finally:
        if owned:
            _lib.tensor_release(t)
    return v


_TENSOR, _RAGGED, _PADDED, _LIST, _TUPLE, _STRINGS = range(6)


def _field(v, name):
    return Tensor(ctypes.c_void_p(_lib.tensor_retain(_lib.value_field(v, name))))


def _python_of(v):
    """A lithe value as Python: a lithe.Tensor, Ragged, Padded, list or tuple (no copies)."""
    kind = _lib.value_kind_of(v)
    if kind == _TENSOR:
        return Tensor(ctypes.c_void_p(_lib.tensor_retain(_lib.value_get_tensor(v))))
    if kind == _RAGGED:
        return Ragged(_field(v, b"data"), _field(v, b"lengths"))
    if kind == _PADDED:
        return Padded(*[_field(v, n) for n in (b"data", b"size_at_t", b"lengths", b"indices")])
    if kind == _STRINGS:
        return [_lib.value_string(v, i, None).decode("utf8") for i in range(_lib.value_len(v))]
    items = [_python_of(_lib.value_item(v, i)) for i in range(_lib.value_len(v))]
    return tuple(items) if kind == _TUPLE else items


def _locked(method):
    """Runs the method under self._lock (the model's: see the module's doc on threads)."""
    @functools.wraps(method)
    def call(self, *args, **kwargs):
        with self._lock:
            return method(self, *args, **kwargs)
    return call


def _path(path, fn):
    """A file path as bytes for C: str, bytes or os.PathLike; anything else is a TypeError (None
    would otherwise open a file named "None")."""
    if not isinstance(path, (str, bytes, os.PathLike)):
        raise TypeError(f"{fn}: path must be a str, bytes or os.PathLike, not {type(path).__name__}")
    return os.fsencode(path)


class _NoLock:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


_NO_LOCK = _NoLock()


class Optimizer:
    """Thinc's Optimizer on lithe's C core (made by lithe.Adam or lithe.SGD): it keeps the moments,
    step counts and parameter averages per model node and param, and applies them in
    Model.finish_update. Freed with the object."""

    def __init__(self, opts):
        self._lock = threading.Lock()  # one thread at a time steps it (finish_update, save)
        self._ptr = ctypes.c_void_p()
        _lib.check(_lib.optimizer_new(ctypes.byref(opts), ctypes.byref(self._ptr)))

    def __del__(self):
        if getattr(self, "_ptr", None):
            _lib.optimizer_free(self._ptr)
            self._ptr = None


def Adam(learn_rate: float = 0.001, *, L2: float = 0.0, beta1: float = 0.9, beta2: float = 0.999, eps: float = 1e-8,
         grad_clip: float = 1.0, L2_is_weight_decay: bool = True, use_averages: bool = True,
         use_radam: bool = False) -> Optimizer:
    """Thinc's Adam (thinc.api.Adam), with Thinc's defaults and meaning: L2 as weight decay unless
    L2_is_weight_decay=False, gradients clipped to grad_clip (L2 norm; 0 disables), parameter
    averages kept when use_averages, RAdam with use_radam."""
    o = _lib.adam_defaults()
    o.learn_rate, o.L2, o.beta1, o.beta2, o.eps, o.grad_clip = learn_rate, L2, beta1, beta2, eps, grad_clip
    o.L2_is_weight_decay, o.use_averages, o.use_radam = L2_is_weight_decay, use_averages, use_radam
    return Optimizer(o)


def SGD(learn_rate: float, *, L2: float = 0.0, grad_clip: float = 1.0, L2_is_weight_decay: bool = True,
        use_averages: bool = True) -> Optimizer:
    """Thinc's SGD (thinc.api.SGD), with Thinc's defaults."""
    o = _lib.sgd_defaults(learn_rate)
    o.L2, o.grad_clip, o.L2_is_weight_decay, o.use_averages = L2, grad_clip, L2_is_weight_decay, use_averages
    return Optimizer(o)


class Model:
    """A lithe model: Thinc's predict / begin_update / finish_update on lithe's C core. Made by
    lithe.load / lithe.load_bytes; the C model is freed with the object, or by close(). Thread-safe:
    its calls (and those of its Nodes and backprop callbacks) run one at a time."""

    def __init__(self, ptr):
        self._handle = ptr
        self._lock = threading.RLock()

    @property
    def _ptr(self):
        if not self._handle:
            raise LitheError("LITHE_ERR_STATE", "the model was freed (Model.close()); its Nodes and methods "
                                                "cannot be used any more")
        return self._handle

    @_locked
    def close(self) -> None:
        """Frees the C model now (else at garbage collection). Calls on it or on its Nodes then raise
        LitheError; Tensors taken from it stay valid. Calling it twice is harmless."""
        if self._handle:
            _lib.model_free(self._handle)
            self._handle = None

    def __enter__(self) -> "Model":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    @_locked
    def name(self) -> str:
        """Thinc's model.name ("relu>>relu>>softmax")."""
        return _lib.model_name(self._ptr).decode()

    @_locked
    def to(self, device: str) -> "Model":
        """Moves the model (params, grads) to a backend: "cpu", "cuda", "cuda:1", "vulkan". Inputs may
        then be arrays on that device (torch CUDA tensors, zero-copy) and outputs live there."""
        _lib.check(_lib.model_set_backend(self._ptr, _backend(device)))
        return self

    @_locked
    def predict(self, X: ArrayLike) -> Value:
        """Thinc's model.predict(X): the forward pass at inference (dropout off). X: float32 arrays
        (float64 is a LitheError saying how to convert), ids, Ragged, Padded, lists... as the model
        takes them. Returns lithe.Tensors (numpy.from_dlpack / torch.from_dlpack view them, no copy)."""
        v = _value_of(X)
        y = ctypes.c_void_p()
        try:
            _lib.check(_lib.model_predict(self._ptr, v, ctypes.byref(y)))
            return _python_of(y)
        finally:
            _lib.value_release(v)
            _lib.value_release(y)

    @_locked
    def prepare_inference(self) -> int:
        """Packs the weights once for predict (lithe_model_prepare_inference; the same bits, faster
        at batch > 1). A snapshot: lithe drops it on its own writes (finish_update, loading, ...),
        but NOT on writes through a param's DLPack view (numpy / torch): call this again (or
        release_prepared) after writing one. Returns the bytes the prepared copies hold."""
        _lib.check(_lib.model_prepare_inference(self._ptr))
        return _lib.model_prepared_bytes(self._ptr)

    @_locked
    def compress_weights(self, dtype: str = "int8", match: Optional[str] = None) -> int:
        """Stores the dense layers' W compact (lithe_model_compress_weights): "int8" (per-row
        symmetric int8, run by the int8 GEMM with dynamic quantization of the activations),
        "float16", "bfloat16", or "float32" (back). Biases stay float32; compact weights are
        frozen. Returns how many weights changed. Save with save() for a 4x / 2x smaller file.
        `match`: a glob ("W" or "node/W", as freeze's) choosing which dense layers convert
        (lithe_model_compress_matching); the others stay float32 and train."""
        codes = {"float32": 0, "float16": 1, "bfloat16": 2, "int8": 8, "f32": 0, "f16": 1, "bf16": 2}
        if dtype not in codes:
            raise ValueError(f"compress_weights: dtype {dtype!r} is not one of int8, float16, bfloat16, float32")
        n = ctypes.c_size_t()
        _lib.check(_lib.model_compress_matching(self._ptr, codes[dtype], match.encode() if match is not None else None,
                                                ctypes.byref(n)))
        return n.value

    @_locked
    def quantize_static(self, calib: ArrayLike) -> "Model":
        """Static int8 quantization with calibration (lithe_model_quantize_static; the CLI's
        `lithe quantize --calibrate`): this model run over the rows of `calib` (a float32 array
        shaped as the model's input, rows along axis 0) to record each MatMul / Gemm / Conv input's
        range (MinMax), then a NEW Model — the same computation as a QDQ ONNX graph (int8
        per-channel weights, int8 activations with static scales, int32 biases: onnxruntime's
        format) whose dense and conv nodes run on the int8 kernels. This model is unchanged. The
        result's .quantized_nodes says how many nodes were quantized."""
        t, owned = _tensor_ptr(calib)
        out, n = ctypes.c_void_p(), ctypes.c_size_t()
        try:
            _lib.check(_lib.model_quantize_static(self._ptr, t, ctypes.byref(n), ctypes.byref(out)))
        finally:
            if owned:
                _lib.tensor_release(t)
        m = Model(out.value)
        m.quantized_nodes = n.value
        return m

    @_locked
    def release_prepared(self) -> None:
        """Frees the copies prepare_inference made (predict then reads the weights directly)."""
        _lib.model_release_prepared(self._ptr)

    @_locked
    def begin_update(self, X: ArrayLike) -> Tuple[Value, Callable[[ArrayLike], Optional[Value]]]:
        """Thinc's model.begin_update(X), the training forward (dropout on): (Y, backprop), where
        backprop(dY) accumulates the gradients into the model's grads and returns dX. dY is the loss
        gradient wrt Y (for Softmax: wrt the logits, Thinc's convention)."""
        v = _value_of(X)
        y, bp = ctypes.c_void_p(), ctypes.c_void_p()
        try:
            _lib.check(_lib.model_begin_update(self._ptr, v, ctypes.byref(y), ctypes.byref(bp)))
            Y = _python_of(y)
        finally:
            _lib.value_release(v)
            _lib.value_release(y)
        record = _Backprop(bp, self)

        def backprop(dY):
            return record.run(dY)

        return Y, backprop

    @_locked
    def finish_update(self, optimizer: Optimizer) -> None:
        """Thinc's model.finish_update(optimizer): applies the accumulated gradients to every
        param of the tree with the optimizer, then zeroes the gradients."""
        with optimizer._lock:
            _lib.check(_lib.model_finish_update(self._ptr, optimizer._ptr))

    @_locked
    def set_dropout_rate(self, rate: float) -> None:
        """Thinc's set_dropout_rate: the rate of every Dropout node in the tree (0 turns dropout off)."""
        _lib.check(_lib.model_set_dropout_rate(self._ptr, rate))

    @_locked
    def save(self, path: Union[str, "os.PathLike[str]"], optimizer: Optional[Optimizer] = None) -> None:
        """Writes the model as a .lithe file (atomically: a temporary file, then a rename), with the
        optimizer's state when one is given, so training resumes where it stopped."""
        path = _path(path, "lithe.Model.save")
        with optimizer._lock if optimizer else _NO_LOCK:
            _lib.check(_lib.model_save(self._ptr, optimizer._ptr if optimizer else None, path))

    @_locked
    def save_onnx(self, path: Union[str, "os.PathLike[str]"]) -> None:
        """Writes the model as an ONNX file for onnxruntime / Triton, with its current (fine-tuned)
        weights, atomically (lithe_model_save_onnx): an imported graph as its own graph (names,
        opset, attributes kept), a native tree lowered to opset-17 operators with input "X" and
        output "Y". A layer without an ONNX equivalent (HashEmbed, sequence layers) is a LitheError
        naming the node."""
        _lib.check(_lib.model_save_onnx(self._ptr, _path(path, "lithe.Model.save_onnx")))

    @_locked
    def to_onnx_bytes(self) -> bytes:
        """The model as ONNX ModelProto bytes (lithe_model_save_onnx_bytes; see save_onnx):
        onnx.load_from_string or onnxruntime.InferenceSession take them."""
        return _lib.take_bytes(lambda buf, n: _lib.model_save_onnx_bytes(self._ptr, buf, n))

    @_locked
    def save_tfjs(self, folder: Union[str, "os.PathLike[str]"]) -> None:
        """A model loaded from the TF.js layers format (model.json), fine-tuned or not, written back
        as folder/model.json + folder/group1-shard1of1.bin that @tensorflow/tfjs's loadLayersModel
        reads (lithe_tfjs_save: the original topology, the current weights as float32; each file
        atomic). Another model is a LitheError (LITHE_ERR_UNSUPPORTED)."""
        _lib.check(_lib.tfjs_save(self._ptr, _path(folder, "lithe.Model.save_tfjs")))

    @_locked
    def to_tfjs_bytes(self) -> Tuple[str, bytes]:
        """save_tfjs's two files in memory: (model.json's text, the shard's bytes), for
        tf.io.fromMemory or an upload (lithe_tfjs_save_bytes)."""
        j, w = ctypes.c_char_p(), ctypes.POINTER(ctypes.c_uint8)()
        jn, wn = ctypes.c_size_t(), ctypes.c_size_t()
        _lib.check(_lib.tfjs_save_bytes(self._ptr, ctypes.byref(j), ctypes.byref(jn), ctypes.byref(w), ctypes.byref(wn)))
        try:
            return ctypes.string_at(j, jn.value).decode(), ctypes.string_at(w, wn.value)
        finally:
            _lib.buffer_free(ctypes.cast(j, ctypes.c_void_p))
            _lib.buffer_free(w)

    @_locked
    def to_thinc_bytes(self, thinc_model: Any = None) -> bytes:
        """The weights as Thinc's model.to_bytes() writes them (msgpack, byte for byte Thinc 8.1.7's):
        thinc_model.from_bytes(...) of the same architecture reads them. A model with PyTorchWrapper
        parts (exported by lithe.export) needs the Thinc model it came from: its torch modules
        receive lithe's weights in the shim bytes (lithe._torch.to_thinc_bytes)."""
        if thinc_model is not None:
            from ._torch import to_thinc_bytes

            return to_thinc_bytes(self, thinc_model)
        return _lib.take_bytes(lambda buf, n: _lib.model_to_thinc_bytes(self._ptr, buf, n))

    @_locked
    def from_thinc_bytes(self, data: bytes) -> "Model":
        """Reads weights written by Thinc's model.to_bytes() into this model, whose tree must match
        (a mismatch is a LitheError naming the node). Returns self."""
        _lib.check(_lib.model_from_thinc_bytes(self._ptr, bytes(data), len(data)))
        return self

    @_locked
    def add_lora(self, pattern: Optional[str] = None, rank: int = 8, alpha: float = 16.0, seed: int = 0) -> int:
        """LoRA adapters (lithe_model_add_lora): Y = X·Wᵀ + (alpha / rank) (X·Aᵀ)·Bᵀ on every dense layer's W
        (matched by param name, "W", or "<node name>/W") and imported graph's Gemm / MatMul / Conv weight (initializer names)
        matching the glob `pattern` (None: all), with the rest of the model frozen. Training then
        moves only the adapters. Returns how many weights the model now adapts."""
        _lib.check(_lib.model_add_lora(self._ptr, pattern.encode() if pattern is not None else None, rank, alpha,
                                       seed))
        return int(_lib.model_lora_count(self._ptr))

    @property
    def lora_count(self) -> int:
        """How many weights carry a LoRA adapter."""
        return int(_lib.model_lora_count(self._ptr))

    @_locked
    def merge_lora(self) -> "Model":
        """Merges every adapter into its weight and drops the adapters (lithe_model_merge_lora): an
        ordinary model again, which saves and exports (ONNX, Thinc bytes) as any. Returns self."""
        _lib.check(_lib.model_merge_lora(self._ptr))
        return self

    @_locked
    def lora_base_hash(self) -> str:
        """The hash of the base weights an adapter file names (16 hex digits)."""
        buf = ctypes.create_string_buffer(17)
        _lib.check(_lib.model_lora_base_hash(self._ptr, buf, 17))
        return buf.value.decode()

    @_locked
    def lora_to_bytes(self) -> bytes:
        """The adapters alone as a small .lithe file's bytes (lithe_model_save_lora_bytes)."""
        return _lib.take_bytes(lambda buf, n: _lib.model_save_lora_bytes(self._ptr, buf, n))

    @_locked
    def save_lora(self, path: Union[str, "os.PathLike[str]"]) -> None:
        """Writes the adapters alone (see lora_to_bytes), atomically (lithe_model_save_lora)."""
        _lib.check(_lib.model_save_lora(self._ptr, _path(path, "lithe.Model.save_lora")))

    @_locked
    def load_lora_bytes(self, data: bytes) -> "Model":
        """Applies saved adapters (lithe_model_load_lora_bytes); a model whose base weights differ
        from the adapters' base is a LitheError (LITHE_ERR_VALUE). Returns self."""
        _lib.check(_lib.model_load_lora_bytes(self._ptr, bytes(data), len(data)))
        return self

    @_locked
    def load_lora(self, path: Union[str, "os.PathLike[str]"]) -> "Model":
        """Applies adapters saved by save_lora (lithe_model_load_lora; see load_lora_bytes)."""
        _lib.check(_lib.model_load_lora(self._ptr, _path(path, "lithe.Model.load_lora")))
        return self

    @_locked
    def walk(self) -> List["Node"]:
        """The tree's nodes in Thinc's walk order (breadth-first), as Node handles that borrow from
        this model (they keep it alive)."""
        n = ctypes.c_size_t()
        _lib.check(_lib.model_walk(self._ptr, None, 0, ctypes.byref(n)))
        arr = (ctypes.c_void_p * max(n.value, 1))()
        _lib.check(_lib.model_walk(self._ptr, arr, n.value, ctypes.byref(n)))
        return [Node(ctypes.c_void_p(arr[i]), self) for i in range(n.value)]

    @_locked
    def to_bytes(self, optimizer: Optional[Optimizer] = None) -> bytes:
        """The model as .lithe bytes (lithe_model_save_bytes)."""
        with optimizer._lock if optimizer else _NO_LOCK:
            return _lib.take_bytes(lambda buf, n: _lib.model_save_bytes(self._ptr, optimizer._ptr if optimizer else None, buf, n))

    def __deepcopy__(self, memo):
        """An independent model: saved to .lithe bytes and loaded back (Thinc's Model.copy and
        copy.deepcopy land here; sharing the C object would free it twice)."""
        return load_bytes(self.to_bytes())

    def __del__(self):
        if getattr(self, "_handle", None):
            _lib.model_free(self._handle)
            self._handle = None


class Node:
    """One node of a lithe model's tree (borrowed; keeps the root alive, shares its lock): its params
    and grads as lithe.Tensors sharing lithe's memory (numpy.from_dlpack(t) views them, writable, no
    copy). After the root's close(), every call raises LitheError."""

    def __init__(self, ptr, root):
        self._node = ptr
        self._root = root
        self._lock = root._lock

    @property
    def _ptr(self):
        self._root._ptr  # raises once the root is closed: the node's memory went with it
        return self._node

    @property
    @_locked
    def name(self) -> str:
        """The node's name ("relu", "softmax", ...)."""
        return _lib.model_name(self._ptr).decode()

    @property
    @_locked
    def param_names(self) -> List[str]:
        """The node's params, in Thinc's order ("W", "b", ...)."""
        return [_lib.model_param_name(self._ptr, i).decode() for i in range(_lib.model_n_params(self._ptr))]

    @_locked
    def get_param(self, name: str) -> Tensor:
        """The param as a lithe.Tensor sharing lithe's memory (writes through a numpy view change it)."""
        t = ctypes.c_void_p()
        _lib.check(_lib.model_get_param(self._ptr, name.encode(), ctypes.byref(t)))
        return Tensor(ctypes.c_void_p(_lib.tensor_retain(t)))

    @_locked
    def has_grad(self, name: str) -> bool:
        """Whether the param has a gradient (frozen params have none)."""
        return bool(_lib.model_has_grad(self._ptr, name.encode()))

    @_locked
    def get_grad(self, name: str) -> Tensor:
        """The param's gradient as a lithe.Tensor sharing lithe's memory."""
        t = ctypes.c_void_p()
        _lib.check(_lib.model_get_grad(self._ptr, name.encode(), ctypes.byref(t)))
        return Tensor(ctypes.c_void_p(_lib.tensor_retain(t)))

    @_locked
    def is_frozen(self, name: str) -> bool:
        """Whether the param is frozen (not updated by finish_update)."""
        return bool(_lib.model_is_frozen(self._ptr, name.encode()))

    @_locked
    def freeze(self, pattern: Optional[str] = None, frozen: bool = True) -> int:
        """Freezes (frozen=False: thaws) the params whose name -- an imported graph's ONNX
        initializer names, or "node/param" -- matches the glob ('*', '?'); no pattern: the whole
        model (-1 returned). Frozen params get no gradient buffer and no optimizer state. Returns
        how many params matched (LitheError NOT_FOUND when none does)."""
        if pattern is None:
            _lib.check(_lib.model_set_frozen(self._ptr, None, frozen))
            return -1
        n = ctypes.c_size_t()
        _lib.check(_lib.model_freeze_matching(self._ptr, pattern.encode(), frozen, ctypes.byref(n)))
        return n.value

    @_locked
    def set_recompute(self, on: bool = True, segments: int = 0, rows: int = 0) -> None:
        """Recomputation, trading time for memory (docs/training.md): a chain keeps only its input
        and runs its layers' forward again in backprop; an imported graph keeps only the values
        crossing its segments' boundaries (segments > 0: that many; 0: chosen by bytes), and with
        rows > 0 runs each row-wise segment's backward `rows` rows of the batch at a time. Gradients
        are identical (by rows: to the rounding of summing the weights' gradients in parts). Saved
        with the model (the attrs "recompute", "recompute_segments", "recompute_rows")."""
        if segments < 0 or rows < 0:
            raise ValueError(f"set_recompute: segments {segments} and rows {rows} must be >= 0")
        _lib.check(_lib.model_set_attr_bool(self._ptr, b"recompute", on))
        if segments:
            _lib.check(_lib.model_set_attr_int(self._ptr, b"recompute_segments", segments))
        if rows:
            _lib.check(_lib.model_set_attr_int(self._ptr, b"recompute_rows", rows))

    @_locked
    def plan_train(self, X, batch: int = 0, optimizer: Optional["Optimizer"] = None) -> dict:
        """The bytes one training step at `batch` rows (0: X's) needs, before running it
        (lithe_model_plan_train: a dry run on X's first one and two rows, extrapolated):
        {params, grads, opt_state, activations, workspace, total}."""
        v = _value_of(X)
        out = _lib.TrainMemory()
        try:
            _lib.check(_lib.model_plan_train(self._ptr, v, batch, optimizer._ptr if optimizer else None,
                                             ctypes.byref(out)))
        finally:
            _lib.value_release(v)
        return {k: getattr(out, k) for k in ("params", "grads", "opt_state", "activations", "workspace", "total")}

    @_locked
    def set_memory_budget(self, nbytes: int, optimizer: Optional["Optimizer"] = None) -> None:
        """A training step (begin_update) planned over nbytes is refused with LitheError (OOM, the
        message naming the figures) before it runs; 0 removes the budget. The optimizer must outlive it."""
        self._budget_opt = optimizer
        _lib.check(_lib.model_set_memory_budget(self._ptr, nbytes, optimizer._ptr if optimizer else None))

    @_locked
    def grad_count(self) -> int:
        """How many gradient buffers the tree holds (frozen params have none)."""
        return _lib.model_grad_count(self._ptr, None)


# the whole model takes the same fine-tuning calls as its nodes (freeze, plan_train, ...): the
# functions read only self._ptr and self._lock, which both have
for _name in ("freeze", "plan_train", "set_memory_budget", "grad_count", "is_frozen", "set_recompute"):
    if not hasattr(Model, _name):
        setattr(Model, _name, getattr(Node, _name))


class _Backprop:
    def __init__(self, ptr, model):
        self._ptr = ptr
        self._model = model  # its lock; the C record holds its own references to the nodes
        self._lock = model._lock

    @_locked
    def run(self, dY):
        v = _value_of(dY)
        dx = ctypes.c_void_p()
        try:
            _lib.check(_lib.backprop_run(self._ptr, v, ctypes.byref(dx)))
            return _python_of(dx) if dx.value else None
        finally:
            _lib.value_release(v)
            _lib.value_release(dx)

    def __del__(self):
        if getattr(self, "_ptr", None):
            _lib.backprop_free(self._ptr)
            self._ptr = None


def load(path: Union[str, "os.PathLike[str]"]) -> Model:
    """A Model from a .lithe file, or an .onnx file (one graph node). A missing or malformed file
    is a LitheError (LITHE_ERR_IO, LITHE_ERR_FORMAT) saying what is wrong."""
    path = _path(path, "lithe.load")
    m = ctypes.c_void_p()
    _lib.check(_lib.model_load(path, ctypes.byref(m)))
    return Model(m)


def load_bytes(data: bytes) -> Model:
    """A Model from .lithe or ONNX bytes."""
    m = ctypes.c_void_p()
    data = bytes(data)
    _lib.check(_lib.model_load_bytes(data, len(data), ctypes.byref(m)))
    return Model(m)
