"""The one layer list (core/layers/layers.def, through lithe_layer_names / lithe_layer_for_thinc)
against Thinc 8.1.7's registry, and the option structs' ctypes mirrors against include/lithe.h."""
import ctypes
import os
import re

import thinc.api

import lithe  # noqa: F401  (loads the library)
from lithe import _lib

# Thinc layers lithe lacks on purpose: framework wrappers. Their modules arrive as imported graphs
# (lithe.export writes a PyTorchWrapper's module as an "onnx_graph.v1" node through torch.onnx).
THINC_ONLY = {"MXNetWrapper.v1", "PyTorchLSTM.v1", "PyTorchRNNWrapper.v1", "PyTorchWrapper.v1",
              "PyTorchWrapper.v2", "PyTorchWrapper.v3"}
# lithe's own names: imported graphs, spaCy's StaticVectors, the native twin of ONNX's Tanh.
LITHE_ONLY = {"onnx_graph.v1", "StaticVectors.v2", "tanh_activation.v1"}


def _lithe_names():
    n = ctypes.c_size_t()
    names = _lib.layer_names(ctypes.byref(n))
    return [names[i].decode() for i in range(n.value)]


def test_layer_list_matches_thinc_registry():
    ours = _lithe_names()
    assert len(ours) == len(set(ours))
    thinc_names = set(thinc.api.registry.layers.get_all())
    assert sorted(thinc_names - set(ours)) == sorted(THINC_ONLY)
    assert sorted(set(ours) - thinc_names) == sorted(LITHE_ONLY)


def test_every_thinc_forward_maps_to_its_registered_layer():
    """A Thinc layer built by its registered factory runs a forward that lithe_layer_for_thinc maps
    back to that name (or, for aliases sharing a forward, to the first name of that forward)."""
    aliases = {"Softmax.v1": "Softmax.v2", "HardSigmoid.v1": "ClippedLinear.v1", "HardTanh.v1": "ClippedLinear.v1",
               "ReluK.v1": "ClippedLinear.v1", "SparseLinear.v1": "SparseLinear.v2"}
    registry = thinc.api.registry.layers
    checked = 0
    for name in _lithe_names():
        if name in LITHE_ONLY or name == "clone.v1":
            continue
        node = _build(registry.get(name), name)
        if node is None:  # needs arguments this test does not guess
            continue
        key = f"{node._func.__module__}.{node._func.__name__}"
        got = _lib.layer_for_thinc(key.encode())
        assert got is not None, f"{name}: no lithe layer for {key}"
        assert got.decode() == aliases.get(name, name), f"{name}: {key} -> {got.decode()}"
        checked += 1
    assert checked >= 30
    assert _lib.layer_for_thinc(b"thinc.layers.pytorchwrapper.forward") is None


def _build(factory, name):
    """A node of a registered factory: bare, or around two Linear layers (combinators, whose
    bare call gives noop), or around one (with_* and the like); None when none of those works."""
    for args in ((), (thinc.api.Linear(), thinc.api.Linear()), (thinc.api.Linear(),)):
        try:
            node = factory(*args)
        except Exception:  # a factory wanting other arguments
            continue
        if node._func.__module__ != "thinc.layers.noop" or name == "noop.v1":
            return node
    return None


def _header_fields(struct):
    text = open(os.path.join(os.path.dirname(__file__), "..", "..", "include", "lithe.h")).read()
    body = re.search(r"typedef struct %s \{(.*?)\} %s;" % (struct, struct), text, re.S).group(1)
    body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
    names = []
    for decl in body.split(";"):
        decl = decl.strip()
        if decl:
            names += [part.strip().split()[-1].lstrip("*") for part in decl.split(",")]
    return names


def test_option_structs_come_from_the_library():
    fields = [f for f, _ in _lib.OptimizerOpts._fields_]
    assert fields == _header_fields("lithe_optimizer_opts")
    assert ctypes.sizeof(_lib.OptimizerOpts) == _lib.lib.lithe_struct_size(b"lithe_optimizer_opts")
    assert _lib.lib.lithe_struct_size(b"no_such_struct") == 0


def test_the_package_writes_no_file_format():
    """One writer of .lithe, in C: the Python package has no header packing, padding or atomic
    rename of its own (lithe.export hands the description to lithe_model_from_architecture and
    lithe_model_save)."""
    folder = os.path.join(os.path.dirname(__file__), "..", "..", "shims", "python", "lithe")
    for name in os.listdir(folder):
        if name.endswith(".py"):
            text = open(os.path.join(folder, name)).read()
            for marker in ("struct.pack", "os.replace", "tempfile", "__metadata__", "data_offsets"):
                assert marker not in text, f"{name} writes the file format itself ({marker})"
