#!/usr/bin/python3
"""The model families of issue 23, as a new user would bring them: exported from Debian's torch 1.13
(torchvision 0.14, torchaudio 0.13), random weights, batch 1, eval mode, loaded in lithe, compared
with torch, and given one fine-tuning step.

    /usr/bin/python3 tests/models/check_models.py [--only a,b] [--skip a,b] [--opset 17]
                                                   [--results tests/models/results.json] [--no-train]
                                                   [--strict] [--timeout S]

Slow (a quarter of an hour on two cores, most of it torch exporting): run by hand, or as the opt-in
ctest check_models (cmake -DLITHE_CHECK_MODELS=ON), which runs the models that load today with
--strict.

Each model runs in its own process (a crash or a timeout is a result, not the end of the run).
Exported .onnx files, inputs and torch's outputs are cached under $LITHE_MODELS_CACHE
(/tmp/lithe_models): never in the repository. Per model the results file records: the opset it was
exported at, whether lithe loaded it (or lithe's message, with the operators it lacks), the largest
difference from torch's float32 output relative to max |y| (and, where that is over 1e-4, the
distance of torch's own float32 output and lithe's from a float64 torch run), and whether one SGD
step (begin_update, backprop of a fixed random linear loss, finish_update) ran and lowered the loss.
scripts/onnx_coverage.py reads the results file into docs/onnx.md's table.

Random weights alone leave BatchNorm's running statistics at mean 0, variance 1, and the activations
of deep nets vanish or explode; as tests/golden/gen_torchvision_goldens.py does, the running
statistics are set from one training-mode forward over a calibration batch first.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
CACHE = os.environ.get("LITHE_MODELS_CACHE", "/tmp/lithe_models")
TOL = 1e-4


def _seg(name):
    def build():
        import torch
        import torchvision

        inner = getattr(torchvision.models.segmentation, name)(weights=None, weights_backbone=None)

        class Out(torch.nn.Module):  # the dict's "out" (aux_loss is off without weights)
            def __init__(self):
                super().__init__()
                self.m = inner

            def forward(self, x):
                return self.m(x)["out"]

        return Out()
    return build


def _cls(name, **kw):
    def build():
        import torchvision
        return getattr(torchvision.models, name)(weights=None, **kw)
    return build


def _audio(kind):
    def build():
        import torch
        import torchaudio

        if kind == "wav2vec2_base":
            inner = torchaudio.models.wav2vec2_base()

            class W(torch.nn.Module):
                def __init__(self):
                    super().__init__()
                    self.m = inner

                def forward(self, x):
                    return self.m(x)[0]
            return W()
        if kind == "convtasnet":
            return torchaudio.models.ConvTasNet()
        if kind == "conformer":
            inner = torchaudio.models.Conformer(input_dim=80, num_heads=4, ffn_dim=128, num_layers=2,
                                                depthwise_conv_kernel_size=31)

            class C(torch.nn.Module):
                def __init__(self):
                    super().__init__()
                    self.m = inner

                def forward(self, x):  # every frame valid: lengths = T
                    lengths = torch.full((x.shape[0],), x.shape[1], dtype=torch.int64)
                    return self.m(x, lengths)[0]
            return C()
        raise ValueError(kind)
    return build


def _ssd():
    import torch
    import torchvision

    inner = torchvision.models.detection.ssdlite320_mobilenet_v3_large(weights=None, weights_backbone=None)

    class D(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.m = inner

        def forward(self, x):
            d = self.m(x)[0]
            return d["boxes"], d["scores"], d["labels"]
    return D()


# name: (builder, input shape, family)
MODELS = {
    "mobilenet_v2": (_cls("mobilenet_v2"), (1, 3, 224, 224), "mobile CNN"),
    "mobilenet_v3_small": (_cls("mobilenet_v3_small"), (1, 3, 224, 224), "mobile CNN"),
    "mobilenet_v3_large": (_cls("mobilenet_v3_large"), (1, 3, 224, 224), "mobile CNN"),
    "shufflenet_v2_x1_0": (_cls("shufflenet_v2_x1_0"), (1, 3, 224, 224), "mobile CNN"),
    "squeezenet1_1": (_cls("squeezenet1_1"), (1, 3, 224, 224), "mobile CNN"),
    "mnasnet1_0": (_cls("mnasnet1_0"), (1, 3, 224, 224), "mobile CNN"),
    "efficientnet_b0": (_cls("efficientnet_b0"), (1, 3, 224, 224), "CNN"),
    "regnet_y_400mf": (_cls("regnet_y_400mf"), (1, 3, 224, 224), "CNN"),
    "resnet18": (_cls("resnet18"), (1, 3, 224, 224), "CNN"),
    "resnext50_32x4d": (_cls("resnext50_32x4d"), (1, 3, 224, 224), "CNN"),
    "wide_resnet50_2": (_cls("wide_resnet50_2"), (1, 3, 224, 224), "CNN"),
    "densenet121": (_cls("densenet121"), (1, 3, 224, 224), "CNN"),
    "googlenet": (_cls("googlenet", aux_logits=False, init_weights=True), (1, 3, 224, 224), "CNN"),
    "inception_v3": (_cls("inception_v3", aux_logits=False, init_weights=True), (1, 3, 299, 299), "CNN"),
    "convnext_tiny": (_cls("convnext_tiny"), (1, 3, 224, 224), "CNN"),
    "vgg11": (_cls("vgg11"), (1, 3, 224, 224), "CNN"),
    "alexnet": (_cls("alexnet"), (1, 3, 224, 224), "CNN"),
    "vit_b_16": (_cls("vit_b_16"), (1, 3, 224, 224), "transformer"),
    "lraspp_mobilenet_v3_large": (_seg("lraspp_mobilenet_v3_large"), (1, 3, 224, 224), "segmentation"),
    "deeplabv3_mobilenet_v3_large": (_seg("deeplabv3_mobilenet_v3_large"), (1, 3, 224, 224), "segmentation"),
    "fcn_resnet50": (_seg("fcn_resnet50"), (1, 3, 224, 224), "segmentation"),
    "wav2vec2_base": (_audio("wav2vec2_base"), (1, 16000), "audio"),
    "convtasnet": (_audio("convtasnet"), (1, 1, 8000), "audio"),
    "conformer": (_audio("conformer"), (1, 50, 80), "audio"),
    "ssdlite320_mobilenet_v3_large": (_ssd, (1, 3, 320, 320), "detection"),
}


def calibrate(torch, model, shape, rng):
    """BatchNorm running statistics from one training-mode pass (cumulative average)."""
    bns = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not bns:
        return
    for m in bns:
        m.reset_running_stats()
        m.momentum = None
    # a detection model's training forward wants targets: calibrate its backbone alone
    target = model.m.backbone if hasattr(model, "m") and hasattr(model.m, "backbone") and hasattr(
        model.m, "anchor_generator") else model
    target.train()
    with torch.no_grad():
        target(torch.tensor(rng.standard_normal((2,) + tuple(shape[1:])).astype("float32")))
    model.eval()


def export(name, opset):
    """The cached export: NAME.onnx, NAME.npz (x, y, r) and NAME.json (opset, export time)."""
    import numpy
    import torch

    base = os.path.join(CACHE, name)
    if os.path.exists(base + ".json"):
        with open(base + ".json") as f:
            return json.load(f)
    os.makedirs(CACHE, exist_ok=True)
    torch.set_num_threads(2)
    build, shape, _ = MODELS[name]
    rng = numpy.random.RandomState(23)
    torch.manual_seed(23)
    model = build()
    # a weight matrix the constructor zeroes (vit_b_16's head and class token) would make every
    # output 0 and the comparison empty: small random values instead (no other model has one)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() >= 2 and not bool(p.abs().max()):
                p.copy_(torch.tensor(rng.standard_normal(tuple(p.shape)).astype("float32")) * 0.02)
    calibrate(torch, model, shape, rng)
    model.eval()
    x = torch.tensor(rng.standard_normal(shape).astype("float32"))
    with torch.no_grad():
        y = model(x)
    ys = [t.numpy() for t in (y if isinstance(y, tuple) else (y,))]
    t0 = time.time()
    errors, used = [], None
    for o in ([opset] if opset else [17, 16, 15, 14, 13]):
        try:
            torch.onnx.export(model, (x,), base + ".onnx.tmp", opset_version=o, input_names=["x"],
                              do_constant_folding=True)
            used = o
            break
        except Exception as e:  # noqa: BLE001 -- the exporter's reason is the result
            errors.append(f"opset {o}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300])
    meta = {"opset": used, "export_s": round(time.time() - t0, 1)}
    if used is None:
        meta["export_error"] = errors[-1] if errors else "?"
    else:
        os.replace(base + ".onnx.tmp", base + ".onnx")
        r = [rng.standard_normal(t.shape).astype("float32") for t in ys]
        numpy.savez(base + ".npz", x=x.numpy(), **{f"y{i}": t for i, t in enumerate(ys)},
                    **{f"r{i}": t for i, t in enumerate(r)})
        torch.save(model.state_dict(), base + ".pt")
    with open(base + ".json", "w") as f:
        json.dump(meta, f)
    return meta


def torch64(name):
    """torch's float32 and lithe-independent float64 outputs for the cached input."""
    import numpy
    import torch

    torch.set_num_threads(2)
    build, shape, _ = MODELS[name]
    torch.manual_seed(23)
    model = build()
    model.load_state_dict(torch.load(os.path.join(CACHE, name + ".pt")))
    model.eval()
    d = numpy.load(os.path.join(CACHE, name + ".npz"))
    with torch.no_grad():
        y = model.double()(torch.tensor(d["x"]).double())
    return [t.numpy() for t in (y if isinstance(y, tuple) else (y,))]


MISSING = re.compile(r"operator types? lithe lacks: (.*)$")


def run_one(name, opset, train):
    import numpy

    sys.path.insert(0, os.path.join(ROOT, "shims", "python"))
    import lithe

    res = {"model": name, "family": MODELS[name][2]}
    meta = export(name, opset)
    res["opset"] = meta["opset"]
    if meta["opset"] is None:
        res["load"] = "export failed"
        res["message"] = meta.get("export_error")
        return res
    base = os.path.join(CACHE, name)
    d = numpy.load(base + ".npz")
    x = d["x"]
    ys = [d[f"y{i}"] for i in range(sum(k.startswith("y") for k in d.files))]
    rs = [d[f"r{i}"] for i in range(len(ys))]
    t0 = time.time()
    try:
        m = lithe.load(base + ".onnx")
    except Exception as e:  # noqa: BLE001
        msg = str(e)
        res["load"] = "refused"
        res["message"] = msg[:400]
        mm = MISSING.search(msg)
        if mm:
            res["missing"] = [s.strip() for s in mm.group(1).split(",")]
        return res
    res["load"] = "ok"
    res["load_s"] = round(time.time() - t0, 2)
    t0 = time.time()
    try:
        out = m.predict(x)
    except Exception as e:  # noqa: BLE001
        res["predict"] = "failed"
        res["message"] = str(e)[:400]
        return res
    res["predict_s"] = round(time.time() - t0, 2)
    outs = [numpy.from_dlpack(t).copy() for t in (out if isinstance(out, (tuple, list)) else (out,))]
    if len(outs) != len(ys) or any(a.shape != b.shape for a, b in zip(outs, ys)):
        res["predict"] = "shape mismatch"
        res["message"] = f"lithe {[a.shape for a in outs]}, torch {[b.shape for b in ys]}"
        return res
    scale = max(float(numpy.abs(y).max()) for y in ys) or 1.0
    err = max(float(numpy.abs(a.astype("float64") - b).max()) for a, b in zip(outs, ys)) / scale
    res["scale"] = scale
    res["err"] = err
    ok = err <= TOL
    if not ok:  # how far torch's own float32 run is from float64
        y64 = torch64(name)
        res["torch_err64"] = max(float(numpy.abs(b.astype("float64") - c).max()) for b, c in zip(ys, y64)) / scale
        res["err64"] = max(float(numpy.abs(a.astype("float64") - c).max()) for a, c in zip(outs, y64)) / scale
        ok = res["err64"] <= max(TOL, 2 * res["torch_err64"])
    res["predict"] = "ok" if ok else "differs"
    if not train:
        return res
    # one SGD step on loss = sum(y * r): lr small against the gradient's scale, so it must lower the loss
    t0 = time.time()
    try:
        loss0 = sum(float((o.astype("float64") * r).sum()) for o, r in zip(outs, rs))
        Y, backprop = m.begin_update(x)
        backprop(tuple(rs) if len(rs) > 1 else rs[0])
        gsq = 0.0
        for node in m.walk():
            for p in node.param_names:
                if node.has_grad(p):
                    g = numpy.from_dlpack(node.get_grad(p))
                    gsq += float((g.astype("float64") ** 2).sum())
        lr = 1e-3 * abs(loss0 if loss0 else 1.0) / max(gsq, 1e-30)
        m.finish_update(lithe.SGD(lr, grad_clip=0.0))
        out2 = m.predict(x)
        outs2 = [numpy.from_dlpack(t) for t in (out2 if isinstance(out2, (tuple, list)) else (out2,))]
        loss1 = sum(float((o.astype("float64") * r).sum()) for o, r in zip(outs2, rs))
        res["train_s"] = round(time.time() - t0, 2)
        res["loss_before"], res["loss_after"] = loss0, loss1
        res["finetune"] = "ok" if loss1 < loss0 else "loss did not fall"
    except Exception as e:  # noqa: BLE001
        res["finetune"] = "failed"
        res["finetune_message"] = str(e)[:400]
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="")
    ap.add_argument("--skip", default="")
    ap.add_argument("--opset", type=int, default=0, help="one opset (default: 17, else the highest that exports)")
    ap.add_argument("--results", default=os.path.join(HERE, "results.json"))
    ap.add_argument("--no-train", action="store_true")
    ap.add_argument("--timeout", type=int, default=1200, help="seconds per model")
    ap.add_argument("--strict", action="store_true",
                    help="exit 1 unless every model run loads, predicts within tolerance and fine-tunes")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one:
        print("RESULT " + json.dumps(run_one(a.one, a.opset, not a.no_train)), flush=True)
        return
    names = [n for n in (a.only.split(",") if a.only else MODELS) if n]
    names = [n for n in names if n not in a.skip.split(",")]
    results, bad = {}, []
    if os.path.exists(a.results):
        with open(a.results) as f:
            results = {r["model"]: r for r in json.load(f)["models"]}
    for n in names:
        if n not in MODELS:
            sys.exit(f"check_models.py: no model {n!r}; the models: {', '.join(MODELS)}")
        t0 = time.time()
        cmd = [sys.executable, __file__, "--one", n, "--opset", str(a.opset)] + (["--no-train"] if a.no_train else [])
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout)
            lines = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
            if lines:
                r = json.loads(lines[-1][7:])
            else:
                r = {"model": n, "family": MODELS[n][2], "load": "crashed",
                     "message": f"exit {p.returncode}: " + (p.stderr.strip().splitlines() or [""])[-1][:300]}
        except subprocess.TimeoutExpired:
            r = {"model": n, "family": MODELS[n][2], "load": "timeout", "message": f"over {a.timeout} s on this host"}
        r["wall_s"] = round(time.time() - t0, 1)
        results[n] = r
        if r.get("predict") != "ok" or r.get("finetune", "ok") != "ok":
            bad.append(n)
        print(json.dumps(r), flush=True)
        with open(a.results + ".tmp", "w") as f:
            json.dump({"models": [results[k] for k in MODELS if k in results]}, f, indent=1)
            f.write("\n")
        os.replace(a.results + ".tmp", a.results)
    print(f"check_models.py: {len(names) - len(bad)} of {len(names)} models load, predict and fine-tune"
          + (f"; not: {', '.join(bad)}" if bad else ""))
    if a.strict and bad:
        sys.exit(1)


if __name__ == "__main__":
    main()
