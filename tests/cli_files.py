#!/usr/bin/python3
"""lithe's model files from the command line, checked by the reference tools: trains a small
model with `lithe train-mnist --save`, lists its weights with an independent safetensors reader
(written here from the spec), predicts with `lithe run` on a numpy-written .npy, converts it to
Thinc's bytes with `lithe convert`, loads those into the same architecture built by Thinc 8.1.7 and
compares Thinc's predictions with lithe's; then converts back and checks `lithe run` again.

    /usr/bin/python3 tests/cli_files.py PATH/TO/lithe WORKDIR
"""
import json
import os
import struct
import subprocess
import sys

import numpy
from thinc.api import Relu, Softmax_v2, chain

lithe, work = sys.argv[1], sys.argv[2]
os.makedirs(work, exist_ok=True)
P = lambda name: os.path.join(work, name)  # noqa: E731


def run(*args):
    r = subprocess.run([lithe, *args], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"lithe {' '.join(args)} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    return r.stdout


run("train-mnist", "--epochs", "1", "--limit", "2000", "--save", P("m.lithe"))
info = run("info", P("m.lithe"))
assert "parameters: 669706" in info, info

# an independent safetensors reader: u64 header length, JSON header, data
with open(P("m.lithe"), "rb") as f:
    blob = f.read()
(n,) = struct.unpack("<Q", blob[:8])
header = json.loads(blob[8:8 + n])
data = blob[8 + n:]
assert (8 + n) % 64 == 0, "the data must start 64-byte aligned (docs/format.md)"
meta = header.pop("__metadata__")
assert meta["format"] == "lithe" and meta["lithe.format_version"] == "1"
arch = json.loads(meta["lithe.architecture"])
assert arch["nodes"][0]["layer"] == "chain.v1"
end = 0
for name, t in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
    b, e = t["data_offsets"]
    assert t["dtype"] == "F32" and e - b == 4 * int(numpy.prod(t["shape"])), (name, t)
    assert b == end, "tensors must be contiguous"
    end = e
assert end == len(data)
W0 = numpy.frombuffer(data[header["4.W"]["data_offsets"][0]:header["4.W"]["data_offsets"][1]], dtype="<f4")
assert W0.size == 512 * 784 and numpy.isfinite(W0).all()
print("safetensors reader: %d tensors, %d data bytes" % (len(header), len(data)))

X = numpy.random.RandomState(0).uniform(0, 1, (5, 784)).astype("float32")
numpy.save(P("X.npy"), X)
run("run", P("m.lithe"), "--input", P("X.npy"), "--output", P("Y.npy"))
Y = numpy.load(P("Y.npy"))
assert Y.shape == (5, 10) and numpy.allclose(Y.sum(axis=1), 1.0, atol=1e-5), Y

run("convert", P("m.lithe"), "--to-thinc", P("m.bin"))
model = chain(Relu(512, dropout=0.2), Relu(512, dropout=0.2), Softmax_v2(10))
model.initialize(X=X)
with open(P("m.bin"), "rb") as f:
    model.from_bytes(f.read())
Yt = model.predict(X)
err = numpy.abs(Yt - Y).max()
assert numpy.allclose(Yt, Y, rtol=1e-5, atol=1e-6), err
print("Thinc 8.1.7 loads lithe's bytes and predicts the same: max |diff| = %.2g" % err)
# Thinc writes the same bytes back
assert model.to_bytes() == open(P("m.bin"), "rb").read(), "Thinc's bytes differ from lithe's"

run("convert", P("m.lithe"), "--from-thinc", P("m.bin"), "--output", P("m2.lithe"))
run("run", P("m2.lithe"), "--input", P("X.npy"), "--output", P("Y2.npy"))
assert (numpy.load(P("Y2.npy")) == Y).all()
# ONNX export: the checker accepts it, and lithe predicts the same from it (onnxruntime's side:
# tests/onnx_export, docs/scale-out.md)
run("convert", P("m.lithe"), "--to-onnx", P("m.onnx"))
import onnx  # noqa: E402

onnx.checker.check_model(onnx.load(P("m.onnx")), full_check=True)
run("run", P("m.onnx"), "--input", P("X.npy"), "--output", P("Y3.npy"))
assert numpy.allclose(numpy.load(P("Y3.npy")), Y, rtol=1e-5, atol=1e-7)
print("cli_files: ok")
