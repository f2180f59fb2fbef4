#!/usr/bin/python3
"""Issue 24's accuracy workloads: torchvision's mobilenet_v2 and resnet18, adapted to 28x28x1
Fashion-MNIST, trained briefly on one thread with fixed seeds, exported to ONNX (opset 13).

    /usr/bin/python3 bench/quant/train_models.py [OUT]     # OUT defaults to build/quant

writes into OUT:
  mobilenet_v2.onnx, resnet18.onnx   eval mode (BatchNorm folded into the Conv by the exporter),
                                     input "x" (N, 1, 28, 28) float32, output "y" (N, 10) logits,
                                     batch axis dynamic
  <model>.json                       torch's float32 test accuracy, epochs, seconds, changes made
  test_x.npy, test_y.npy             the 10,000 test images (x / 255, float32) and labels (int64)
  calib_x.npy                        512 training images (seeded draw) for static calibration

Adaptations (torchvision 0.14's definitions otherwise unchanged):
  mobilenet_v2: width_mult 0.5, num_classes 10, the stem conv over 1 input channel (not 3) at
                stride 1 (not 2), so 28x28 runs the blocks at 28, 14, 7, 4, 2 (MNV2_STEM_STRIDE=2
                keeps torchvision's stride: 14, 14, 7, 4, 2, 1; it trained to 78 % only in 40,000
                images).
  resnet18:     num_classes 10, conv1 (7x7 stride 2) over 1 input channel (not 3); stem and maxpool
                as torchvision's (28 -> 14 -> 7), so layer1..4 run at 7, 4, 2, 1 (224 / 4 = 56 in
                the original: the same ratio).
28x28 at (nearly) torchvision's strides keeps the compute small enough to
train on a quarter of a shared core (the host this was written on: ~35 min wall per model).
Training: Adam (lr 2e-3, cosine to 0), batch 128, one pass over a seeded subset of the training set
(mobilenet_v2 40,000 images, resnet18 16,000), no augmentation, x / 255 inputs; MODEL_EPOCHS and
MODEL_TRAIN_N (environment) override the epochs and the number of training images. Run the two
models as two processes to use two cores: train_models.py OUT mobilenet_v2 & train_models.py OUT resnet18
"""
import gzip
import json
import os
import sys
import time

import numpy
import torch
import torchvision

DATA = "/usr/share/datasets/fashion-mnist"  # Debian's dataset-fashion-mnist


def idx(name):
    with gzip.open(os.path.join(DATA, name + ".gz"), "rb") as f:
        b = f.read()
    nd = b[3]
    dims = [int.from_bytes(b[4 + 4 * i:8 + 4 * i], "big") for i in range(nd)]
    return numpy.frombuffer(b, numpy.uint8, offset=4 + 4 * nd).reshape(dims)


def images(name):
    return (idx(name).astype(numpy.float32) / 255.0)[:, None, :, :]


def mobilenet_v2():
    m = torchvision.models.mobilenet_v2(weights=None, num_classes=10, width_mult=0.5)
    c0 = m.features[0][0]
    stride = int(os.environ.get("MNV2_STEM_STRIDE", 1))
    m.features[0][0] = torch.nn.Conv2d(1, c0.out_channels, 3, stride, 1, bias=False)
    return m


def resnet18():
    m = torchvision.models.resnet18(weights=None, num_classes=10)
    m.conv1 = torch.nn.Conv2d(1, 64, 7, 2, 3, bias=False)
    return m


MODELS = {"mobilenet_v2": (mobilenet_v2, 1, 40000), "resnet18": (resnet18, 1, 16000)}


def accuracy(m, x, y, bs=500):
    m.eval()
    right = 0
    with torch.no_grad():
        for i in range(0, len(x), bs):
            right += int((m(torch.from_numpy(x[i:i + bs])).argmax(1).numpy() == y[i:i + bs]).sum())
    return right / len(x)


def train(name, xtr, ytr, xte, yte, out):
    build, epochs, n = MODELS[name]
    epochs = int(os.environ.get("MODEL_EPOCHS", epochs))
    n = min(int(os.environ.get("MODEL_TRAIN_N", n)), len(xtr))
    torch.manual_seed(24)
    m = build()
    g = numpy.random.default_rng(24)
    bs = 128
    steps = epochs * (n // bs)
    opt = torch.optim.Adam(m.parameters(), lr=2e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
    t0 = time.time()
    for ep in range(epochs):
        m.train()
        order = g.permutation(len(xtr))[:n]
        for i in range(n // bs):
            b = order[i * bs:(i + 1) * bs]
            loss = torch.nn.functional.cross_entropy(m(torch.from_numpy(xtr[b])), torch.from_numpy(ytr[b]))
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            if i % 50 == 0:
                print(f"{name} epoch {ep + 1} step {i}/{n // bs} loss {loss.item():.4f} {time.time() - t0:.0f} s",
                      file=sys.stderr, flush=True)
    secs = time.time() - t0
    acc = accuracy(m, xte, yte)
    print(f"{name}: float32 test accuracy {acc:.4f} after {epochs} epochs of {n} images, {secs:.0f} s")
    m.eval()
    torch.onnx.export(m, torch.from_numpy(xte[:1]), os.path.join(out, f"{name}.onnx"), input_names=["x"],
                      output_names=["y"], dynamic_axes={"x": {0: "N"}, "y": {0: "N"}}, opset_version=13,
                      do_constant_folding=True)
    with open(os.path.join(out, f"{name}.json"), "w") as f:
        json.dump({"model": name, "torch_float32_test_accuracy": acc, "epochs": epochs, "train_images": n,
                   "train_seconds": round(secs), "torch": torch.__version__,
                   "torchvision": torchvision.__version__}, f, indent=1)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "build/quant"
    names = sys.argv[2].split(",") if len(sys.argv) > 2 else list(MODELS)
    os.makedirs(out, exist_ok=True)
    torch.set_num_threads(1)
    xtr, ytr = images("train-images-idx3-ubyte"), idx("train-labels-idx1-ubyte").astype(numpy.int64)
    xte, yte = images("t10k-images-idx3-ubyte"), idx("t10k-labels-idx1-ubyte").astype(numpy.int64)
    calib = xtr[numpy.random.default_rng(7).permutation(len(xtr))[:512]]
    for fn, a in (("test_x.npy", xte), ("test_y.npy", yte), ("calib_x.npy", calib)):
        tmp = os.path.join(out, f".{fn}.{os.getpid()}")  # two processes may write the same file
        numpy.save(tmp, a)
        os.replace(tmp + ".npy", os.path.join(out, fn))
    for name in names:
        train(name, xtr, ytr, xte, yte, out)


if __name__ == "__main__":
    main()
