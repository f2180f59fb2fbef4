"""Exports the benchmark's models once, with fixed seeds, into a build folder (bench/run.sh calls
it with Debian's /usr/bin/python3: torch 1.13, torchvision 0.14, Thinc 8.1.7):

  <out>/<model>.onnx          torch.onnx.export, opset 13, batch axis dynamic (mlp, cnn)
  <out>/<workload>_x.npy      the input every runner feeds (fixed seed)
  <out>/<workload>_ref.npy    PyTorch's output for it (no_grad, eval, 1 thread): the reference of
                              the max-abs-error column
  <out>/mlp.lithe             the MLP as a lithe user builds it natively, chain(Relu(512),
                              Relu(512), Softmax(10)) from Thinc, with the same weights (exported
                              by shims/python's lithe.export); its reference is softmax(logits)
  <out>/weights/<model>.<param>.npy   the torch state_dicts, for the runners that rebuild a model
                              (tfjs layers, Thinc)
  <out>/train_x.npy, train_y.npy      the MLP training batch (64 rows, int labels)
  <out>/<train workload>.onnx, _x.npy, _y.npy   the training rows of TRAIN (the CNN at batch 32,
                              mobilenet_v2 at batch 8, the transformer at batch 8): train_model's
                              module at its batch (softmax ending the classifiers), its batch and
                              int labels (classifiers only)

Usage: make_models.py OUT_DIR [--only mlp,cnn,...]"""
import json
import os
import sys

import numpy
import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


class MLP(nn.Module):
    """784-512-512-10 with ReLU, the issue's MLP; logits out (softmax is the loss's, or Thinc's)."""

    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(784, 512), nn.Linear(512, 512), nn.Linear(512, 10)

    def forward(self, x):
        return self.fc3(torch.relu(self.fc2(torch.relu(self.fc1(x)))))


class LeNet(nn.Module):
    """A LeNet-style CNN on 1x28x28: conv5x5(16, pad 2) relu maxpool2, conv5x5(32, pad 2) relu
    maxpool2, flatten, fc 1568-128 relu, fc 128-10 (about 6 MFLOP per image)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 5, padding=2)
        self.conv2 = nn.Conv2d(16, 32, 5, padding=2)
        self.fc1, self.fc2 = nn.Linear(32 * 7 * 7, 128), nn.Linear(128, 10)

    def forward(self, x):
        x = torch.max_pool2d(torch.relu(self.conv1(x)), 2)
        x = torch.max_pool2d(torch.relu(self.conv2(x)), 2)
        return self.fc2(torch.relu(self.fc1(torch.flatten(x, 1))))


class Transformer(nn.Module):
    """nn.TransformerEncoder: 2 layers, d_model 128, 4 heads, feed-forward 512, batch_first."""

    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(d_model=128, nhead=4, dim_feedforward=512, dropout=0.1, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
        # TransformerEncoder deep-copies its layer (layer 1 starts equal to layer 0) and LayerNorm /
        # biases start at 1 / 0; torch.onnx.export (eval mode) merges equal initializers, so the ONNX
        # file shared 9 tensors through Identity nodes and lithe trained 197,888 of the 396,544
        # parameters PyTorch trains. A small distinct perturbation of every tensor, as training
        # leaves them, keeps all 24 apart.
        with torch.no_grad():
            for p in self.parameters():
                p.add_(torch.randn_like(p), alpha=0.02)

    def forward(self, x):
        return self.enc(x)


class SegOut(nn.Module):
    """A torchvision segmentation model's "out" (its forward returns a dict)."""

    def __init__(self, inner):
        super().__init__()
        self.m = inner

    def forward(self, x):
        return self.m(x)["out"]


def build(name):
    """The module for a model name, initialized from a fixed seed (the same weights every time)."""
    torch.manual_seed({"mlp": 1, "cnn": 2, "mobilenet_v2": 3, "transformer": 4, "mobilenet_v3_small": 5,
                       "lraspp_mobilenet_v3_large": 6}[name])
    if name == "mlp":
        m = MLP()
    elif name == "cnn":
        m = LeNet()
    elif name in ("mobilenet_v2", "mobilenet_v3_small", "lraspp_mobilenet_v3_large"):
        import torchvision
        if name == "lraspp_mobilenet_v3_large":  # segmentation (issue 23): the dict's "out", 21 classes
            m = SegOut(torchvision.models.segmentation.lraspp_mobilenet_v3_large(weights=None, weights_backbone=None))
        else:
            m = getattr(torchvision.models, name)(weights=None)
        # random weights leave BatchNorm's running statistics at (0, 1), and the activations then
        # shrink layer after layer (outputs ~1e-9, which no error column can judge): calibrate the
        # statistics on one random batch in train mode, as a trained model's would be
        for bn in m.modules():
            if isinstance(bn, nn.BatchNorm2d):
                bn.momentum = 1.0
        m.train()
        with torch.no_grad():
            m(torch.rand(8, 3, 224, 224))
        for bn in m.modules():
            if isinstance(bn, nn.BatchNorm2d):
                bn.momentum = 0.1
    else:
        m = Transformer()
    return m.eval()


# workload -> (model, input shape); the batch is the first axis
WORKLOADS = {
    "mlp_b1": ("mlp", (1, 784)),
    "mlp_b64": ("mlp", (64, 784)),
    "cnn_b1": ("cnn", (1, 1, 28, 28)),
    "cnn_b32": ("cnn", (32, 1, 28, 28)),
    "mobilenet_v2_b1": ("mobilenet_v2", (1, 3, 224, 224)),
    "mobilenet_v3_small_b1": ("mobilenet_v3_small", (1, 3, 224, 224)),
    "lraspp_b1": ("lraspp_mobilenet_v3_large", (1, 3, 224, 224)),
    "transformer_b1": ("transformer", (1, 64, 128)),
}


# training workloads: workload -> (model, batch). bench/run.py's TRAIN_WLS names the same.
TRAIN = {"cnn_train_b32": ("cnn", 32), "mobilenet_v2_train_b8": ("mobilenet_v2", 8),
         "transformer_train_b8": ("transformer", 8)}


def train_model(name):
    """The module a training row trains, the same in every runner: build(name) in eval mode (no
    dropout), mobilenet_v2's Conv + BatchNorm pairs fused (BatchNorm in eval mode is an affine map
    torch.onnx.export folds into the Conv anyway, so the exported graph holds the fused weights;
    fusing in torch too makes PyTorch train those very weights, as tests/golden/gen_finetune_goldens.py
    does). Classifiers return logits (the runners' losses take the softmax)."""
    from torch.nn.utils.fusion import fuse_conv_bn_eval
    m = build(name)
    if name == "mobilenet_v2":
        for parent in list(m.modules()):
            kids = list(parent.named_children())
            for (n1, a), (n2, b) in zip(kids, kids[1:]):
                if isinstance(a, nn.Conv2d) and isinstance(b, nn.BatchNorm2d):
                    setattr(parent, n1, fuse_conv_bn_eval(a, b))
                    setattr(parent, n2, nn.Identity())
        assert not any(isinstance(x, nn.BatchNorm2d) for x in m.modules())
    return m.eval()


class WithSoftmax(nn.Module):
    """A classifier ending in softmax: lithe's categorical cross-entropy takes probabilities."""

    def __init__(self, inner):
        super().__init__()
        self.m = inner

    def forward(self, x):
        return torch.softmax(self.m(x), 1)


def train_batch(wl):
    """A training workload's batch: x, and int32 labels for the classifiers (None otherwise)."""
    model, batch = TRAIN[wl]
    shape = (batch,) + next(s for (mm, s) in WORKLOADS.values() if mm == model)[1:]
    rng = numpy.random.default_rng(sum(map(ord, wl)))
    x = rng.random(shape, dtype=numpy.float32)
    y = None if model == "transformer" else rng.integers(0, 10, batch).astype(numpy.int32)
    return x, y


def export_train(name, out, info):
    for wl, (model, batch) in TRAIN.items():
        if model != name:
            continue
        m = train_model(name)
        x, y = train_batch(wl)
        numpy.save(os.path.join(out, f"{wl}_x.npy"), x)
        if y is not None:
            numpy.save(os.path.join(out, f"{wl}_y.npy"), y)
            with torch.no_grad():
                info[wl] = {"model": name, "first_loss": float(nn.functional.cross_entropy(
                    m(torch.from_numpy(x)), torch.from_numpy(y).long()))}
            m = WithSoftmax(m).eval()
        torch.onnx.export(m, torch.from_numpy(x), os.path.join(out, f"{wl}.onnx"), input_names=["x"],
                          output_names=["y"], opset_version=13, do_constant_folding=True)


def thinc_mlp(mlp):
    """The MLP as Thinc's chain(Relu(512), Relu(512), Softmax(10)) with mlp's weights."""
    from thinc.api import Relu, Softmax, chain
    model = chain(Relu(512), Relu(512), Softmax(10))
    model.initialize(X=numpy.zeros((2, 784), "f"), Y=numpy.zeros((2, 10), "f"))
    for layer, fc in zip(model.layers, (mlp.fc1, mlp.fc2, mlp.fc3)):
        layer.set_param("W", fc.weight.detach().numpy().copy())  # Thinc's W is (nO, nI), as torch's
        layer.set_param("b", fc.bias.detach().numpy().copy())
    return model


def export_lithe_mlp(mlp, path):
    """thinc_mlp written as a .lithe file by shims/python's exporter, which builds the model and saves
    it through the C library (liblithe.so: LITHE_LIBRARY, or the package's search of build/)."""
    sys.path.insert(0, os.path.join(ROOT, "shims/python"))
    import lithe
    model = thinc_mlp(mlp)
    lithe.export(model, path)
    return model


def main():
    out = sys.argv[1]
    only = None
    if "--only" in sys.argv:
        only = set(sys.argv[sys.argv.index("--only") + 1].split(","))
    os.makedirs(os.path.join(out, "weights"), exist_ok=True)
    torch.set_num_threads(1)
    names = [n for n in ("mlp", "cnn", "mobilenet_v2", "mobilenet_v3_small", "lraspp_mobilenet_v3_large", "transformer")
             if only is None or n in only]
    info = {}
    for name in names:
        m = build(name)
        for k, v in m.state_dict().items():
            if v.dtype == torch.float32:
                numpy.save(os.path.join(out, "weights", f"{name}.{k}.npy"), v.numpy())
        for wl, (model, shape) in WORKLOADS.items():
            if model != name:
                continue
            rng = numpy.random.default_rng(sum(map(ord, wl)))
            x = rng.random(shape, dtype=numpy.float32)
            with torch.no_grad():
                y = m(torch.from_numpy(x)).numpy()
            numpy.save(os.path.join(out, f"{wl}_x.npy"), x)
            numpy.save(os.path.join(out, f"{wl}_ref.npy"), y)
            info[wl] = {"model": name, "shape": list(shape), "out_shape": list(y.shape)}
        shape = next(s for (mm, s) in WORKLOADS.values() if mm == name)
        dyn = {"x": {0: "batch"}, "y": {0: "batch"}} if name in ("mlp", "cnn") else None
        torch.onnx.export(m, torch.zeros(shape), os.path.join(out, f"{name}.onnx"), input_names=["x"],
                          output_names=["y"], opset_version=13, dynamic_axes=dyn, do_constant_folding=True)
        export_train(name, out, info)
        if name == "mlp":
            export_lithe_mlp(m, os.path.join(out, "mlp.lithe"))
            rng = numpy.random.default_rng(64)
            numpy.save(os.path.join(out, "train_x.npy"), rng.random((64, 784), dtype=numpy.float32))
            numpy.save(os.path.join(out, "train_y.npy"), rng.integers(0, 10, 64).astype(numpy.int32))
            with torch.no_grad():
                for wl in ("mlp_b1", "mlp_b64"):
                    logits = numpy.load(os.path.join(out, f"{wl}_ref.npy"))
                    numpy.save(os.path.join(out, f"{wl}_softmax_ref.npy"), torch.softmax(torch.from_numpy(logits), 1).numpy())
                x, y = numpy.load(os.path.join(out, "train_x.npy")), numpy.load(os.path.join(out, "train_y.npy"))
                info["mlp_train_b64"] = {"model": "mlp", "first_loss": float(nn.functional.cross_entropy(
                    m(torch.from_numpy(x)), torch.from_numpy(y).long()))}
    old = {}
    if os.path.exists(os.path.join(out, "models.json")):
        old = json.load(open(os.path.join(out, "models.json")))
    old.update(info)
    json.dump(old, open(os.path.join(out, "models.json"), "w"), indent=1)
    print("make_models:", ", ".join(names), "->", out)


if __name__ == "__main__":
    main()
