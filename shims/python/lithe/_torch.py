"""Fine-tuned weights back into PyTorch and Thinc (docs/python.md, "Back into PyTorch and Thinc").

lithe holds an imported ONNX graph ("onnx_graph.v1" node) with every float initializer as a param
named as in the graph; torch.onnx.export names an initializer after the module's parameter or
buffer ("features.0.weight") except where it folds or renames one ("onnx::Conv_16": a Conv with
a BatchNorm folded in, which eval-mode export always does; constant-folded or deduplicated
initializers). The weights are read through the C library (the node's params); this module only
matches names and hands the arrays to torch."""
import copy
import ctypes
import io
import warnings
from typing import Any

import numpy

from . import _lib

GRAPH_LAYER = "onnx_graph.v1"


class FoldedWeightsWarning(UserWarning):
    """Some of the graph's weights have no torch parameter name (folded by torch's exporter)."""


class TorchStateDict(dict):
    """What to_torch_state_dict returns: torch parameter name -> torch.Tensor (a copy), which
    module.load_state_dict takes. Besides the mapping:

    folded: initializer name -> numpy array, for the graph's weights that carry no torch name
        ("onnx::Conv_16": eval-mode export folds BatchNorm into the Conv before it, so the Conv's
        weight and bias and the BatchNorm's four tensors exist in the graph only as their fold).
        They are not in the mapping: torch has no parameter to receive them.
    missing: with module=, the module's state_dict keys lithe has no weight for (the folded
        layers' parameters; tensors torch's exporter merged with another of equal value, e.g. a
        fresh BatchNorm's running_var with its weight); load with load_state_dict(sd, strict=False).
    kept: with module=, the module's integer buffers the ONNX graph never holds
        (BatchNorm's num_batches_tracked), copied unchanged from the module so strict loading works.
    """

    folded: dict
    missing: list
    kept: list


def _graph_nodes(model):
    nodes = [model] if hasattr(model, "_root") else model.walk()
    return [n for n in nodes if _lib.model_layer_type(n._ptr).decode() == GRAPH_LAYER]


def _params(node):
    """The node's params, copied to numpy, read through the C library."""
    out = {}
    for name in node.param_names:
        t = node.get_param(name)
        out[name] = numpy.array(numpy.from_dlpack(t.to("cpu") if t.device != "cpu" else t), copy=True)
    return out


def to_torch_state_dict(model: Any, module: Any = None, *, strict: bool = False) -> TorchStateDict:
    """A graph layer's current weights under torch's parameter names: a TorchStateDict (see
    there) that module.load_state_dict takes. model: a lithe.Model with one graph node (an imported
    .onnx, or a PyTorchWrapper exported by lithe.export), or that Node. module (optional): the
    torch module the graph was exported from; then names and shapes are checked against its
    state_dict (a shape mismatch is a ValueError), tied parameters (one initializer in the graph)
    fill every name sharing the storage, and its integer buffers are kept (TorchStateDict.kept).
    Weights with no torch name are never dropped silently: they are in .folded, and a
    FoldedWeightsWarning lists them (strict=True raises ValueError instead)."""
    import torch

    nodes = _graph_nodes(model)
    if len(nodes) != 1:
        raise ValueError(f"to_torch_state_dict: the model has {len(nodes)} graph layers ({GRAPH_LAYER}); "
                         "pass the Node (model.walk()[i]) whose weights you want")
    weights = _params(nodes[0])
    ref = module.state_dict() if module is not None else None
    out = TorchStateDict()
    out.folded, out.missing, out.kept = {}, [], []
    for name, arr in weights.items():
        if "::" in name or (ref is not None and name not in ref):
            out.folded[name] = arr
            continue
        if ref is not None and tuple(ref[name].shape) != arr.shape:
            raise ValueError(f"to_torch_state_dict: '{name}' has shape {arr.shape} in lithe, "
                             f"{tuple(ref[name].shape)} in the module")
        out[name] = torch.from_numpy(arr)
    if ref is not None:
        by_storage = {}
        for key, t in ref.items():
            if t.numel():
                by_storage.setdefault((t.data_ptr(), tuple(t.shape)), []).append(key)
        for keys in by_storage.values():  # tied weights: the exporter keeps one initializer
            have = [k for k in keys if k in out]
            for k in keys:
                if have and k not in out:
                    out[k] = out[have[0]].clone()
        for key, t in ref.items():
            if key in out:
                continue
            if not t.is_floating_point():
                out[key] = t.detach().clone()
                out.kept.append(key)
            else:
                out.missing.append(key)
    if out.folded or out.missing:
        msg = (f"to_torch_state_dict: {len(out.folded)} weights have no torch name (folded by torch.onnx.export, "
               f"e.g. BatchNorm into Conv in eval-mode export): {sorted(out.folded)}"
               + (f"; the module's {out.missing} get no weights" if out.missing else "")
               + ". Export with training=torch.onnx.TrainingMode.PRESERVE on a module in eval mode and "
               "do_constant_folding=False to keep BatchNorm apart; torch also merges initializers of equal "
               "value (a fresh BatchNorm's ones and zeros), which then have no name of their own.")
        if strict:
            raise ValueError(msg)
        warnings.warn(msg, FoldedWeightsWarning, stacklevel=2)
    return out


def to_thinc_bytes(model: Any, thinc_model: Any) -> bytes:
    """Thinc's to_bytes for a lithe model exported from thinc_model by lithe.export, after
    fine-tuning in lithe. The msgpack tree and every native layer's weights are written by the C
    library (lithe_model_to_thinc_bytes_shims); each PyTorchWrapper's shim bytes are made by
    Thinc's own PyTorchShim serializer from a copy of thinc_model's torch module holding lithe's
    weights (to_torch_state_dict, strict). thinc_model is not changed."""
    nodes = model.walk()
    holders = [n for n in nodes if _lib.model_layer_type(n._ptr).decode() == GRAPH_LAYER]
    tnodes = list(thinc_model.walk())
    if len(tnodes) != len(nodes):
        raise ValueError(f"to_thinc_bytes: the Thinc model has {len(tnodes)} nodes, the lithe model {len(nodes)}")
    blobs = []
    for i, node in enumerate(nodes):
        if node not in holders:
            continue
        tnode = tnodes[i]
        if len(tnode.shims) != 1 or not hasattr(tnode.shims[0], "_model"):
            raise ValueError(f"to_thinc_bytes: node {i} ('{tnode.name}') of the Thinc model is not a PyTorchWrapper")
        shim = tnode.shims[0]
        sd = to_torch_state_dict(node, shim._model, strict=True)
        module = copy.deepcopy(shim._model)
        module.load_state_dict(sd)
        import srsly  # what PyTorchShim.to_bytes writes, with the shim's own (de)serializer

        blobs.append(srsly.msgpack_dumps({"config": shim.cfg, "state": shim._serialize_model(module)}))
    ptrs = (ctypes.c_char_p * max(len(blobs), 1))(*blobs)
    lens = (ctypes.c_size_t * max(len(blobs), 1))(*[len(b) for b in blobs])
    with model._lock:
        return _lib.take_bytes(lambda buf, n: _lib.model_to_thinc_bytes_shims(model._ptr, len(blobs), ptrs, lens, buf, n))
