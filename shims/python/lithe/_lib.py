"""ctypes bindings to liblithe.so (the C API in include/lithe.h). No compiled extension."""
import ctypes
import glob
import os

c_p = ctypes.c_void_p


def _find():
    env = os.environ.get("LITHE_LIBRARY")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    candidates = [os.path.join(here, "liblithe.so")]
    root = os.path.abspath(os.path.join(here, "..", "..", ".."))
    for preset in ("default", "ci", "clang", "asan"):
        candidates += sorted(glob.glob(os.path.join(root, "build", preset, "liblithe.so*")))
    for c in candidates:
        if os.path.exists(c):
            return c
    raise ImportError("lithe: liblithe.so not found; build it (cmake --preset default && cmake --build --preset "
                      "default) or set LITHE_LIBRARY to its path")


lib = ctypes.CDLL(_find())


_KINDS = {b"d": ctypes.c_double, b"f": ctypes.c_float, b"?": ctypes.c_bool, b"q": ctypes.c_int64, b"i": ctypes.c_int,
          b"z": ctypes.c_size_t}


def c_struct(name):
    """The ctypes mirror of a public option struct, built from the layout the C library reports
    (lithe_struct_size / lithe_struct_field): no hand copy; a mismatch is an ImportError."""
    size_of = lib.lithe_struct_size
    size_of.restype, size_of.argtypes = ctypes.c_size_t, [ctypes.c_char_p]
    field = lib.lithe_struct_field
    field.restype = ctypes.c_char_p
    field.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t), ctypes.c_char_p]
    fields, offsets = [], []
    off, kind = ctypes.c_size_t(), ctypes.create_string_buffer(1)
    while True:
        fname = field(name.encode(), len(fields), ctypes.byref(off), kind)
        if fname is None:
            break
        fields.append((fname.decode(), _KINDS[kind.raw]))
        offsets.append(off.value)
    cls = type(name, (ctypes.Structure,), {"_fields_": fields})
    if not fields or ctypes.sizeof(cls) != size_of(name.encode()) or any(
            getattr(cls, f).offset != o for (f, _), o in zip(fields, offsets)):
        raise ImportError(f"lithe: {name}'s layout from the library does not match its ctypes mirror")
    return cls


OptimizerOpts = c_struct("lithe_optimizer_opts")


def _sig(name, restype, *argtypes):
    f = getattr(lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)
    return f


PP = ctypes.POINTER(c_p)
status_str = _sig("lithe_status_str", ctypes.c_char_p, ctypes.c_int)
last_error = _sig("lithe_last_error", ctypes.c_char_p)
version = _sig("lithe_version", ctypes.c_char_p)
tensor_release = _sig("lithe_tensor_release", None, c_p)
tensor_from_dlpack = _sig("lithe_tensor_from_dlpack", ctypes.c_int, c_p, ctypes.c_bool, PP)
tensor_to_dlpack = _sig("lithe_tensor_to_dlpack", ctypes.c_int, c_p, ctypes.c_bool, PP)
tensor_dlpack_device = _sig("lithe_tensor_dlpack_device", ctypes.c_int, c_p, ctypes.POINTER(ctypes.c_int32),
                            ctypes.POINTER(ctypes.c_int32))
tensor_ndim = _sig("lithe_tensor_ndim", ctypes.c_int, c_p)
tensor_shape = _sig("lithe_tensor_shape", ctypes.POINTER(ctypes.c_int64), c_p)
tensor_strides = _sig("lithe_tensor_strides", ctypes.POINTER(ctypes.c_int64), c_p)
tensor_data = _sig("lithe_tensor_data", c_p, c_p)
tensor_dtype = _sig("lithe_tensor_dtype", ctypes.c_int, c_p)
tensor_backend = _sig("lithe_tensor_backend", c_p, c_p)
tensor_to_backend = _sig("lithe_tensor_to_backend", ctypes.c_int, c_p, c_p, PP)
backend_get = _sig("lithe_backend_get", ctypes.c_int, ctypes.c_char_p, PP)
backend_name = _sig("lithe_backend_name", ctypes.c_char_p, c_p)
backend_list = _sig("lithe_backend_list", ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t)
backend_sync = _sig("lithe_backend_sync", ctypes.c_int, c_p)
backend_stream = _sig("lithe_backend_stream", ctypes.c_int, c_p, PP)
model_set_backend = _sig("lithe_model_set_backend", ctypes.c_int, c_p, c_p)
value_tensor = _sig("lithe_value_tensor", ctypes.c_int, c_p, PP)
value_release = _sig("lithe_value_release", None, c_p)
value_get_tensor = _sig("lithe_value_get_tensor", c_p, c_p)
value_ragged = _sig("lithe_value_ragged", ctypes.c_int, c_p, c_p, PP)
value_padded = _sig("lithe_value_padded", ctypes.c_int, c_p, c_p, c_p, c_p, PP)
value_list = _sig("lithe_value_list", ctypes.c_int, ctypes.c_size_t, ctypes.POINTER(c_p), PP)
value_tuple = _sig("lithe_value_tuple", ctypes.c_int, ctypes.c_size_t, ctypes.POINTER(c_p), PP)
value_strings = _sig("lithe_value_strings", ctypes.c_int, ctypes.c_size_t, ctypes.POINTER(ctypes.c_char_p), PP)
value_string = _sig("lithe_value_string", ctypes.c_char_p, c_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t))
value_kind_of = _sig("lithe_value_kind_of", ctypes.c_int, c_p)
value_len = _sig("lithe_value_len", ctypes.c_size_t, c_p)
value_item = _sig("lithe_value_item", c_p, c_p, ctypes.c_size_t)
value_field = _sig("lithe_value_field", c_p, c_p, ctypes.c_char_p)
tensor_retain = _sig("lithe_tensor_retain", c_p, c_p)
model_load = _sig("lithe_model_load", ctypes.c_int, ctypes.c_char_p, PP)
model_save = _sig("lithe_model_save", ctypes.c_int, c_p, c_p, ctypes.c_char_p)
# ONNX export (lithe_model_save_onnx)
model_save_onnx = _sig("lithe_model_save_onnx", ctypes.c_int, c_p, ctypes.c_char_p)
model_save_onnx_bytes = _sig("lithe_model_save_onnx_bytes", ctypes.c_int, c_p,
                             ctypes.POINTER(ctypes.POINTER(ctypes.c_uint8)), ctypes.POINTER(ctypes.c_size_t))
model_free = _sig("lithe_model_free", None, c_p)
model_name = _sig("lithe_model_name", ctypes.c_char_p, c_p)
model_predict = _sig("lithe_model_predict", ctypes.c_int, c_p, c_p, PP)
model_begin_update = _sig("lithe_model_begin_update", ctypes.c_int, c_p, c_p, PP, PP)
backprop_run = _sig("lithe_backprop_run", ctypes.c_int, c_p, c_p, PP)
backprop_free = _sig("lithe_backprop_free", None, c_p)
model_finish_update = _sig("lithe_model_finish_update", ctypes.c_int, c_p, c_p)
model_prepare_inference = _sig("lithe_model_prepare_inference", ctypes.c_int, c_p)
model_compress_matching = _sig("lithe_model_compress_matching", ctypes.c_int, c_p, ctypes.c_int, ctypes.c_char_p,
                               ctypes.POINTER(ctypes.c_size_t))
model_quantize_static = _sig("lithe_model_quantize_static", ctypes.c_int, c_p, c_p, ctypes.POINTER(ctypes.c_size_t), PP)
model_release_prepared = _sig("lithe_model_release_prepared", None, c_p)
model_prepared_bytes = _sig("lithe_model_prepared_bytes", ctypes.c_size_t, c_p)
model_to_thinc_bytes = _sig("lithe_model_to_thinc_bytes", ctypes.c_int, c_p, ctypes.POINTER(ctypes.POINTER(ctypes.c_uint8)),
                            ctypes.POINTER(ctypes.c_size_t))
model_to_thinc_bytes_shims = _sig("lithe_model_to_thinc_bytes_shims", ctypes.c_int, c_p, ctypes.c_size_t,
                                  ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_size_t),
                                  ctypes.POINTER(ctypes.POINTER(ctypes.c_uint8)), ctypes.POINTER(ctypes.c_size_t))
tfjs_save = _sig("lithe_tfjs_save", ctypes.c_int, c_p, ctypes.c_char_p)
tfjs_save_bytes = _sig("lithe_tfjs_save_bytes", ctypes.c_int, c_p, ctypes.POINTER(ctypes.c_char_p),
                       ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(ctypes.POINTER(ctypes.c_uint8)),
                       ctypes.POINTER(ctypes.c_size_t))
model_layer_type = _sig("lithe_model_layer_type", ctypes.c_char_p, c_p)
model_from_thinc_bytes = _sig("lithe_model_from_thinc_bytes", ctypes.c_int, c_p, ctypes.c_char_p, ctypes.c_size_t)
buffer_free = _sig("lithe_buffer_free", None, c_p)
adam_defaults = _sig("lithe_adam_defaults", OptimizerOpts)
sgd_defaults = _sig("lithe_sgd_defaults", OptimizerOpts, ctypes.c_double)
optimizer_new = _sig("lithe_optimizer_new", ctypes.c_int, ctypes.POINTER(OptimizerOpts), PP)
optimizer_free = _sig("lithe_optimizer_free", None, c_p)
model_set_dropout_rate = _sig("lithe_model_set_dropout_rate", ctypes.c_int, c_p, ctypes.c_float)
model_walk = _sig("lithe_model_walk", ctypes.c_int, c_p, ctypes.POINTER(c_p), ctypes.c_size_t,
                  ctypes.POINTER(ctypes.c_size_t))
model_n_params = _sig("lithe_model_n_params", ctypes.c_size_t, c_p)
model_param_name = _sig("lithe_model_param_name", ctypes.c_char_p, c_p, ctypes.c_size_t)
model_get_param = _sig("lithe_model_get_param", ctypes.c_int, c_p, ctypes.c_char_p, PP)
model_has_grad = _sig("lithe_model_has_grad", ctypes.c_bool, c_p, ctypes.c_char_p)
model_get_grad = _sig("lithe_model_get_grad", ctypes.c_int, c_p, ctypes.c_char_p, PP)
model_is_frozen = _sig("lithe_model_is_frozen", ctypes.c_bool, c_p, ctypes.c_char_p)
# fine-tuning on a memory budget (issue 26)
model_set_frozen = _sig("lithe_model_set_frozen", ctypes.c_int, c_p, ctypes.c_char_p, ctypes.c_bool)
model_freeze_matching = _sig("lithe_model_freeze_matching", ctypes.c_int, c_p, ctypes.c_char_p, ctypes.c_bool,
                             ctypes.POINTER(ctypes.c_size_t))


class TrainMemory(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("params", "grads", "opt_state", "activations", "workspace", "total")] + \
        [("batch", ctypes.c_int64)]


model_plan_train = _sig("lithe_model_plan_train", ctypes.c_int, c_p, c_p, ctypes.c_int64, c_p,
                        ctypes.POINTER(TrainMemory))
model_set_memory_budget = _sig("lithe_model_set_memory_budget", ctypes.c_int, c_p, ctypes.c_size_t, c_p)
model_grad_count = _sig("lithe_model_grad_count", ctypes.c_size_t, c_p, ctypes.POINTER(ctypes.c_size_t))
# LoRA adapters (issue 26 item 2)
model_add_lora = _sig("lithe_model_add_lora", ctypes.c_int, c_p, ctypes.c_char_p, ctypes.c_int64, ctypes.c_float,
                      ctypes.c_uint64)
model_lora_count = _sig("lithe_model_lora_count", ctypes.c_size_t, c_p)
model_merge_lora = _sig("lithe_model_merge_lora", ctypes.c_int, c_p)
model_lora_base_hash = _sig("lithe_model_lora_base_hash", ctypes.c_int, c_p, ctypes.c_char_p, ctypes.c_size_t)
model_save_lora_bytes = _sig("lithe_model_save_lora_bytes", ctypes.c_int, c_p,
                             ctypes.POINTER(ctypes.POINTER(ctypes.c_uint8)), ctypes.POINTER(ctypes.c_size_t))
model_save_lora = _sig("lithe_model_save_lora", ctypes.c_int, c_p, ctypes.c_char_p)
model_load_lora = _sig("lithe_model_load_lora", ctypes.c_int, c_p, ctypes.c_char_p)
model_load_lora_bytes = _sig("lithe_model_load_lora_bytes", ctypes.c_int, c_p, ctypes.c_char_p, ctypes.c_size_t)
model_save_bytes = _sig("lithe_model_save_bytes", ctypes.c_int, c_p, c_p, ctypes.POINTER(ctypes.POINTER(ctypes.c_uint8)),
                        ctypes.POINTER(ctypes.c_size_t))
model_load_bytes = _sig("lithe_model_load_bytes", ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t, PP)
model_from_architecture = _sig("lithe_model_from_architecture", ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t,
                               ctypes.c_size_t, ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(c_p), PP)
tensor_from_data = _sig("lithe_tensor_from_data", ctypes.c_int, ctypes.c_int, ctypes.c_int,
                        ctypes.POINTER(ctypes.c_int64), c_p, PP)
layer_names = _sig("lithe_layer_names", ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_size_t))
layer_for_thinc = _sig("lithe_layer_for_thinc", ctypes.c_char_p, ctypes.c_char_p)


class LitheError(RuntimeError):
    """A lithe call failed: .status is the name (LITHE_ERR_SHAPE, ...), the message lithe's."""

    def __init__(self, status, message):
        self.status = status
        super().__init__(f"{status}: {message}")


def check(code):
    if code != 0:
        raise LitheError(status_str(code).decode(), (last_error() or b"").decode(errors="replace"))


def take_bytes(call):
    """call(&buf, &n) is a lithe function's call that hands back a buffer the caller frees
    (lithe_buffer_free): its status is checked, and the bytes come back with the C buffer freed."""
    buf = ctypes.POINTER(ctypes.c_uint8)()
    n = ctypes.c_size_t()
    check(call(ctypes.byref(buf), ctypes.byref(n)))
    try:
        return ctypes.string_at(buf, n.value)
    finally:
        buffer_free(buf)
