"""The golden-record writer shared by the tests/golden/gen_*_goldens.py scripts (one per topic).

Each script calls rec() for every array and write() at the end. The file is text, one record per
array:

    <name> <f|d|i> <ndim> <dim0> ... <dimN-1>
    <values, space separated: f float32 as %.9g (round-trips), d float64 as %.17g, i integers>

tests/golden/golden.c reads it. Written to a temporary file and renamed, so a failed run never
leaves half a golden file behind.
"""
import os
import sys

import numpy

records = []


def rec(name, arr, *, exact64=False):
    arr = numpy.asarray(arr)
    if exact64:  # hyper-parameters: kept as the doubles Thinc holds
        kind = "d"
        vals = " ".join("%.17g" % float(v) for v in arr.ravel())
    elif arr.dtype.kind == "f":
        arr = arr.astype("float32")
        kind = "f"
        vals = " ".join("%.9g" % float(v) for v in arr.ravel())
    elif arr.dtype.kind in "iub":
        kind = "i"
        vals = " ".join(str(int(v)) for v in arr.ravel())
    else:
        raise TypeError(name)
    records.append(f"{name} {kind} {arr.ndim} {' '.join(str(d) for d in arr.shape)}".rstrip() + "\n" + vals + "\n")


def write(script, default_out):
    """Writes the records to argv[1] (or default_out), naming the Thinc that made them."""
    import thinc

    out = sys.argv[1] if len(sys.argv) > 1 else default_out
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        f.write(f"# Thinc {thinc.__version__}, numpy {numpy.__version__}: tests/golden/{script}\n")
        f.writelines(records)
    os.replace(tmp, out)
    print(f"wrote {len(records)} arrays from Thinc {thinc.__version__} to {out}")


def torch_onnx_bytes(model, x, opset, dynamic_batch=False, script=False):
    """model exported to ONNX bytes in eval mode (input "x", output "y", no constant folding: folding
    would bake transposed weights into anonymous constants that cannot be fine-tuned as the
    parameters they came from)."""
    import io

    import torch

    model.eval()
    buf = io.BytesIO()
    axes = {"x": {0: "batch"}, "y": {0: "batch"}} if dynamic_batch else None
    torch.onnx.export(torch.jit.script(model) if script else model, (x,), buf, opset_version=opset,
                      input_names=["x"], output_names=["y"], dynamic_axes=axes, do_constant_folding=False)
    return buf.getvalue()


def torch_goldens(name, model, x, data, rng, lr, steps, count_all=False):
    """The records of a graph (data, ONNX bytes) that computes what the torch model does, parameters
    named alike: <name>.onnx, .x, .y, .r (a random cotangent drawn from rng), .dx (float inputs),
    .grad.<param>, .n_params (the parameters the graph keeps under torch's names, or all of them
    when count_all), then, when every parameter is kept and steps > 0, `steps` SGD steps (eval mode)
    on the loss sum(y * r): .lr, .steps, .losses and .sgd.<param>. Returns whether SGD goldens were
    written (a Conv fused with its BatchNorm gets new weights, which train differently)."""
    import torch

    rec(f"{name}.onnx", numpy.frombuffer(data, dtype=numpy.uint8))
    floating = x.dtype.is_floating_point
    xr = x.clone().requires_grad_(True) if floating else x
    y = model(xr)
    r = torch.tensor(rng.standard_normal(tuple(y.shape)).astype("float32"))
    (y * r).sum().backward()
    rec(f"{name}.x", x.numpy())
    rec(f"{name}.y", y.detach().numpy())
    rec(f"{name}.r", r.numpy())
    if floating:
        rec(f"{name}.dx", xr.grad.numpy())
    for pname, p in model.named_parameters():
        rec(f"{name}.grad.{pname}", p.grad.numpy())
    params = list(model.named_parameters())
    kept = params if count_all else [n for n, _ in params if n.encode() in data]
    rec(f"{name}.n_params", numpy.array([len(kept)]))
    if len(kept) != len(params) or steps == 0:
        return False
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = (model(x) * r).sum()
        losses.append(loss.item())
        loss.backward()
        opt.step()
    rec(f"{name}.lr", numpy.array([lr]), exact64=True)
    rec(f"{name}.steps", numpy.array([steps]))
    rec(f"{name}.losses", numpy.array(losses, dtype="float64"), exact64=True)
    for pname, p in model.named_parameters():
        rec(f"{name}.sgd.{pname}", p.detach().numpy())
    return True
