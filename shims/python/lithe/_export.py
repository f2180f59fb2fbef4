"""lithe.export: an initialized Thinc 8.1 model to a .lithe file (docs/format.md). Python only
describes the Thinc tree (the architecture JSON and the named weights); the C library builds the
model from that description (lithe_model_from_architecture, every check of its loader) and
writes the file (lithe_model_save: the safetensors header, alignment, the atomic rename)."""
import ctypes
import json

import numpy

from . import _lib

def _layer_of(key):
    """lithe's layer name for a Thinc node whose forward is key = (module, function): the one
    layer list in C (core/layers/layers.def), through lithe_layer_for_thinc. None: lithe lacks it."""
    name = _lib.layer_for_thinc(f"{key[0]}.{key[1]}".encode())
    return None if name is None else name.decode()


def _index_text(index):
    """Thinc's getitem index (int, slice, list of ints, or a tuple of them) in numpy's syntax, as
    lithe's getitem layers parse it; None if it has another form."""
    parts = []
    for axis in index if isinstance(index, tuple) else (index,):
        if isinstance(axis, (int, numpy.integer)) and not isinstance(axis, bool):
            parts.append(str(int(axis)))
        elif isinstance(axis, slice):
            text = ("" if axis.start is None else str(int(axis.start))) + ":" + ("" if axis.stop is None else str(int(axis.stop)))
            parts.append(text + ("" if axis.step is None else ":" + str(int(axis.step))))
        elif isinstance(axis, (list, numpy.ndarray)) and all(isinstance(x, (int, numpy.integer)) for x in list(axis)):
            parts.append("[" + ", ".join(str(int(x)) for x in list(axis)) + "]")
        else:
            return None
    return "[" + ", ".join(parts) + "]"


class ExportError(ValueError):
    """A Thinc model lithe cannot hold: the message names the layer and its path in the tree."""


def _paths(model):
    """node id -> a readable path from the root ("model.layers[1].layers[0]")."""
    out = {id(model): "model"}
    stack = [model]
    while stack:
        node = stack.pop()
        for i, child in enumerate(node.layers):
            if id(child) not in out:
                out[id(child)] = f"{out[id(node)]}.layers[{i}]"
                stack.append(child)
    return out


def _attr(node, name, value):
    if value is None:
        return None
    if isinstance(value, (bool, numpy.bool_)):
        return {"bool": bool(value)}
    if isinstance(value, (int, numpy.integer)):
        return {"int": int(value)}
    if isinstance(value, (float, numpy.floating)):
        v = float(value)
        if v != v:
            return {"float": "nan"}
        if v in (float("inf"), float("-inf")):
            return {"float": "inf" if v > 0 else "-inf"}
        return {"float": v}
    if isinstance(value, str):
        return {"str": value}
    if isinstance(value, (tuple, list)) and all(isinstance(x, (int, numpy.integer)) and not isinstance(x, bool)
                                                for x in value):
        return {"ints": [int(x) for x in value]}
    if isinstance(value, dict):  # remap_ids' mapping_table: the msgpack bytes Thinc's to_bytes writes
        import srsly

        return {"msgpack": srsly.msgpack_dumps(value).hex()}
    raise TypeError  # not serializable: skipped, as Thinc's to_bytes skips it


def _torch_inputs(model, X, wrappers):
    """The input each PyTorchWrapper node sees when the model predicts X (its forward is wrapped
    for one predict, then restored)."""
    seen = {}
    originals = {}
    for node in wrappers:
        originals[id(node)] = node._func

        def recorder(m, x, is_train, _orig=node._func):
            seen.setdefault(id(m), x)
            return _orig(m, x, is_train)

        node._func = recorder
    try:
        model.predict(X)
    finally:
        for node in wrappers:
            node._func = originals[id(node)]
    return seen


def _onnx_of(node, x, path):
    """A PyTorchWrapper's torch module as ONNX bytes (torch.onnx.export in eval mode, a dynamic
    batch axis, no constant folding, and training=PRESERVE rather than EVAL, whose peephole pass
    folds BatchNorm into the Conv before it: so every parameter keeps its torch name) and the names of
    its parameters (the graph's trainable initializers)."""
    import io

    import torch

    module = node.shims[0]._model
    try:
        xt = torch.from_numpy(numpy.ascontiguousarray(node.ops.to_numpy(x)))
    except TypeError as e:
        raise ExportError(f"'{node.name}' at {path}: its input is not one array ({e})") from None
    was_training = module.training
    module.eval()
    buf = io.BytesIO()
    try:
        with torch.no_grad():
            torch.onnx.export(module, (xt,), buf, opset_version=13, input_names=["x"], output_names=["y"],
                              dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}}, do_constant_folding=False,
                              training=torch.onnx.TrainingMode.PRESERVE)  # eval, BatchNorm not folded
    finally:
        module.train(was_training)
    params = [(n, p.detach().cpu().numpy()) for n, p in module.named_parameters()]
    return buf.getvalue(), params


def export(model, path, X=None):
    """Writes an initialized Thinc model as a .lithe file. A layer lithe lacks, or a shim other
    than PyTorchWrapper's, is an ExportError naming it and its path. A PyTorchWrapper's torch module
    is exported with torch.onnx.export into the file as an "onnx_graph.v1" node (the graph lithe
    runs forward and backward); tracing needs a sample input: pass the model's X."""
    nodes = list(model.walk())
    wrappers = [n for n in nodes if (getattr(n._func, "__module__", ""), getattr(n._func, "__name__", ""))
                == ("thinc.layers.pytorchwrapper", "forward")]
    torch_inputs = {}
    if wrappers:
        if X is None:
            raise ExportError("the model wraps PyTorch modules (PyTorchWrapper): pass a sample input, "
                              "lithe.export(model, path, X=...), so torch.onnx.export can trace them")
        torch_inputs = _torch_inputs(model, X, wrappers)
    index = {id(n): i for i, n in enumerate(nodes)}
    paths = _paths(model)
    arch_nodes, tensors = [], []
    for i, node in enumerate(nodes):
        key = (getattr(node._func, "__module__", ""), getattr(node._func, "__name__", ""))
        if key == ("thinc.layers.pytorchwrapper", "forward"):
            if id(node) not in torch_inputs:
                raise ExportError(f"'{node.name}' at {paths.get(id(node), '?')}: predicting X never reached it")
            onnx, tparams = _onnx_of(node, torch_inputs[id(node)], paths.get(id(node), "?"))
            for pname, arr in tparams:
                tensors.append((f"{i}.{pname}", numpy.ascontiguousarray(arr, dtype="<f4")))
            tensors.append((f"{i}.attr.onnx", numpy.frombuffer(onnx, dtype=numpy.uint8)))  # the graph, as bytes
            arch_nodes.append({
                "layer": "onnx_graph.v1", "name": node.name, "dims": {}, "attrs": {"onnx": {"bytes": f"{i}.attr.onnx"}},
                "params": [n for n, _ in tparams], "frozen": [], "layers": [], "refs": {},
                "init_W": 0, "init_b": 0, "cfg": [0.0, 0.0],
            })
            continue
        layer = _layer_of(key)
        if layer == "ints-getitem":  # one forward, three node names
            layer = node.name if node.name in ("array-getitem", "floats-getitem", "ints-getitem") else layer
        if layer == "SparseLinear.v2" and node.attrs.get("v1_indexing"):
            layer = "SparseLinear.v1"
        if layer is None:
            raise ExportError(f"lithe has no layer for '{node.name}' at {paths.get(id(node), '?')} "
                              f"(Thinc forward {key[0]}.{key[1]})")
        if node.shims:
            raise ExportError(f"'{node.name}' at {paths.get(id(node), '?')} wraps another framework (a shim); "
                              "graph import arrives with the wrapped-framework work")
        attrs, cfg = {}, [0.0, 0.0]
        for name, value in node.attrs.items():
            if layer.endswith("-getitem") and name == "index":
                v = value
                if (layer == "ints-getitem" and isinstance(v, tuple) and len(v) == 2 and v[0] == slice(0, None)
                        and isinstance(v[1], int)):
                    cfg[0] = float(v[1])  # Embed's column, as Thinc builds it (and its bytes carry no index)
                    continue
                text = _index_text(v)
                if text is None:
                    raise ExportError(f"'{node.name}' at {paths[id(node)]}: index {v!r} is not an int, slice or "
                                      "list of ints per axis")
                attrs["index"] = {"str": text}
                continue
            if layer == "resizable.v1" and name == "resize_layer":
                fills = getattr(value, "keywords", {}).get("fill_defaults") or {}
                cfg = [float(fills.get("W", 0.0)), float(fills.get("b", 0.0))]
                continue
            try:
                attrs[name] = _attr(node, name, value)
            except TypeError:
                continue
        params = list(node.param_names)
        for p in params:
            if node.has_param(p):
                arr = numpy.ascontiguousarray(node.ops.to_numpy(node.get_param(p)), dtype="<f4")
                tensors.append((f"{i}.{p}", arr))
        refs = {}
        for r in node.ref_names:
            ref = node.get_ref(r) if node.has_ref(r) else None
            if ref is not None and id(ref) not in index:
                raise ExportError(f"'{node.name}' at {paths[id(node)]}: ref '{r}' points outside the tree")
            refs[r] = None if ref is None else index[id(ref)]
        arch_nodes.append({
            "layer": layer, "name": node.name,
            "dims": {d: (node.get_dim(d) if node.has_dim(d) else None) for d in node.dim_names},
            "attrs": attrs, "params": params, "frozen": [],
            "layers": [index[id(c)] for c in node.layers], "refs": refs,
            "init_W": 0, "init_b": 0, "cfg": cfg,
        })
    arch = json.dumps({"root": 0, "nodes": arch_nodes}, separators=(",", ":")).encode()
    _save(arch, tensors, path)


def _save(arch, tensors, path):
    """The model the C library builds from the description, saved by the C library."""
    handles = []
    model = ctypes.c_void_p()
    try:
        for _, arr in tensors:
            t = ctypes.c_void_p()
            dtype = 6 if arr.dtype == numpy.uint8 else 0  # LITHE_U8 (a bytes attr), LITHE_F32
            shape = (ctypes.c_int64 * max(arr.ndim, 1))(*arr.shape)
            _lib.check(_lib.tensor_from_data(dtype, arr.ndim, shape, arr.ctypes.data_as(ctypes.c_void_p),
                                             ctypes.byref(t)))
            handles.append(t)
        names = (ctypes.c_char_p * max(len(tensors), 1))(*[n.encode() for n, _ in tensors])
        ptrs = (ctypes.c_void_p * max(len(tensors), 1))(*[h.value for h in handles])
        _lib.check(_lib.model_from_architecture(arch, len(arch), len(tensors), names, ptrs, ctypes.byref(model)))
        _lib.check(_lib.model_save(model, None, str(path).encode()))
    finally:
        _lib.model_free(model)
        for h in handles:
            _lib.tensor_release(h)
