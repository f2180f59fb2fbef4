"""A small CNN on Fashion-MNIST (PyTorch 1.13, CPU), exported to ONNX with a (batch, 784) input so that
`lithe train-mnist --evaluate` scores it like the MLP; and the calibration rows (the first N training
images, scaled to [0, 1] as train-mnist does) as .npy. Used by bench/quant/accuracy.sh.

usage: /usr/bin/python3 bench/quant/train_cnn.py OUT_DIR [EPOCHS] [CALIB_ROWS]"""
import gzip
import sys

import numpy as np
import torch
import torch.nn as nn

D = "/usr/share/datasets/fashion-mnist/"


def idx(name, off):
    return np.frombuffer(gzip.open(D + name).read(), np.uint8, offset=off)


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.f = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(32 * 7 * 7, 64), nn.ReLU(), nn.Linear(64, 10), nn.Softmax(-1))

    def forward(self, x):
        return self.f(x.reshape(-1, 1, 28, 28))


def main():
    out = sys.argv[1]
    epochs = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    n_cal = int(sys.argv[3]) if len(sys.argv) > 3 else 1000
    torch.manual_seed(0)
    torch.set_num_threads(2)
    x = torch.tensor(idx("train-images-idx3-ubyte.gz", 16).reshape(-1, 784), dtype=torch.float32) / 255.0
    y = torch.tensor(idx("train-labels-idx1-ubyte.gz", 8).astype(np.int64))
    np.save(f"{out}/calib.npy", x[:n_cal].numpy())
    m = CNN()
    opt = torch.optim.Adam(m.parameters(), 1e-3)
    for ep in range(epochs):
        perm = torch.randperm(len(x))
        for i in range(0, len(x), 128):
            b = perm[i:i + 128]
            p = m(x[b])
            loss = nn.functional.nll_loss(torch.log(p + 1e-9), y[b])
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"cnn epoch {ep + 1}: loss {loss.item():.4f}", flush=True)
    m.eval()
    torch.onnx.export(m, x[:2], f"{out}/cnn.onnx", input_names=["X"], output_names=["Y"],
                      dynamic_axes={"X": {0: "batch"}, "Y": {0: "batch"}}, opset_version=13)


if __name__ == "__main__":
    main()
