"""DLPack through PyCapsules, zero-copy both ways (legacy DLManagedTensor, as numpy 1.22+ and
torch produce and consume)."""
import ctypes

from . import _lib

_py = ctypes.pythonapi
_py.PyCapsule_GetPointer.restype = ctypes.c_void_p
_py.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_py.PyCapsule_SetName.restype = ctypes.c_int
_py.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
_py.PyCapsule_IsValid.restype = ctypes.c_int
_py.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_py.PyCapsule_New.restype = ctypes.py_object
_py.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]

DLPACK_NAME = b"dltensor"
USED_NAME = b"used_dltensor"


class _DLManagedTensorHead(ctypes.Structure):
    # DLTensor (data, device{type, id}, ndim, dtype{code, bits, lanes}, shape, strides,
    # byte_offset), manager_ctx, deleter
    _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32),
                ("ndim", ctypes.c_int32), ("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                ("lanes", ctypes.c_uint16), ("shape", ctypes.c_void_p), ("strides", ctypes.c_void_p),
                ("byte_offset", ctypes.c_uint64), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.CFUNCTYPE(None, ctypes.c_void_p))]


KDL_CPU, KDL_CUDA, KDL_VULKAN = 1, 2, 7


def backend(name):
    """The lithe backend (a ctypes pointer) named `name` ("cpu", "cuda", "cuda:1", "vulkan")."""
    be = ctypes.c_void_p()
    _lib.check(_lib.backend_get(name.encode(), ctypes.byref(be)))
    return be


_DL_KINDS = {0: "int", 1: "uint", 2: "float", 4: "bfloat", 5: "complex", 6: "bool"}
_LITHE_DTYPES = {(2, 32): "float32", (2, 16): "float16", (4, 16): "bfloat16", (0, 32): "int32", (0, 64): "int64",
                 (1, 64): "uint64", (1, 8): "uint8", (1, 32): "uint32"}


def _raise_friendly(code, head):
    """lithe_tensor_from_dlpack failed: a dtype lithe does not hold says which, and how to convert
    (the C message names DLPack's codes); any other failure is lithe's own LitheError."""
    if _lib.status_str(code) == b"LITHE_ERR_DTYPE" and (head.code, head.bits) not in _LITHE_DTYPES:
        name = "bool" if head.code == 6 else f"{_DL_KINDS.get(head.code, f'dtype code {head.code} ')}{head.bits}"
        if head.lanes != 1:
            name += f"x{head.lanes}"
        hint = (".astype(numpy.float32) (numpy) or .float() (torch)" if head.code in (2, 4, 5)
                else ".astype(numpy.int64) for ids, .astype(numpy.float32) for values")
        raise _lib.LitheError("LITHE_ERR_DTYPE", f"lithe computes in float32 (ids: int32, int64, uint64); got {name} "
                                                 f"— convert with {hint}")
    _lib.check(code)


def from_dlpack(obj):
    """A new lithe tensor (a ctypes pointer) viewing obj's memory through its __dlpack__. A CUDA
    producer (torch) is asked for its data on lithe's stream, as the DLPack protocol has the consumer
    do: __dlpack__(stream=<lithe's cudaStream_t>) makes that stream wait for the producer's work."""
    dev = obj.__dlpack_device__() if hasattr(obj, "__dlpack_device__") else (KDL_CPU, 0)
    if int(dev[0]) == KDL_CUDA:
        stream = ctypes.c_void_p()
        _lib.check(_lib.backend_stream(backend(f"cuda:{int(dev[1])}"), ctypes.byref(stream)))
        # 0 would mean the legacy default stream: lithe's is never it, but the emulation has none
        cap = obj.__dlpack__(stream=stream.value) if stream.value else obj.__dlpack__()
    else:
        cap = obj.__dlpack__()
    ptr = _py.PyCapsule_GetPointer(cap, DLPACK_NAME)
    out = ctypes.c_void_p()
    code = _lib.tensor_from_dlpack(ptr, False, ctypes.byref(out))
    if code != 0:
        _raise_friendly(code, _DLManagedTensorHead.from_address(ptr))
    # lithe owns the managed tensor now: the capsule must not delete it
    _py.PyCapsule_SetName(cap, USED_NAME)
    return out


# the destructor sees a capsule being freed: it must not touch its refcount, so these take the
# raw PyObject pointer
_raw_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(("PyCapsule_IsValid", _py))
_raw_get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(("PyCapsule_GetPointer", _py))


@ctypes.CFUNCTYPE(None, ctypes.c_void_p)
def _capsule_destructor(capsule_ptr):
    # a capsule collected unconsumed still owns its managed tensor: run its deleter
    if _raw_is_valid(capsule_ptr, DLPACK_NAME):
        ptr = _raw_get_pointer(capsule_ptr, DLPACK_NAME)
        head = _DLManagedTensorHead.from_address(ptr)
        if head.deleter:
            head.deleter(ptr)


def to_capsule(tensor_ptr):
    managed = ctypes.c_void_p()
    _lib.check(_lib.tensor_to_dlpack(tensor_ptr, False, ctypes.byref(managed)))
    return _py.PyCapsule_New(managed.value, DLPACK_NAME, ctypes.cast(_capsule_destructor, ctypes.c_void_p))
