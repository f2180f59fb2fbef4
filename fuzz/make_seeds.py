#!/usr/bin/python3
"""Seed corpora for the fuzz targets, written by the reference implementations (Debian's Thinc
8.1.7, srsly and numpy), never by lithe:

    /usr/bin/python3 fuzz/make_seeds.py fuzz/corpus

thinc_bytes/ holds to_bytes() of the tree fuzz_thinc_bytes.c builds (chain(Relu(4, 3),
Softmax.v2(2, 4))) with different params; msgpack/ holds those and a few plain values; npy/ holds
numpy.save outputs of several dtypes and shapes."""
import io
import os
import sys

import numpy
import srsly
from thinc.api import Relu, Softmax_v2, chain

out = sys.argv[1] if len(sys.argv) > 1 else "corpus"
for d in ("thinc_bytes", "msgpack", "npy"):
    os.makedirs(os.path.join(out, d), exist_ok=True)


def write(d, name, data):
    with open(os.path.join(out, d, name), "wb") as f:
        f.write(data)


rng = numpy.random.RandomState(3)
for i in range(3):
    m = chain(Relu(4, 3), Softmax_v2(2, 4))
    m.initialize()
    if i:
        for node in m.walk():
            for p in node.param_names:
                node.set_param(p, rng.standard_normal(node.get_param(p).shape).astype("float32"))
    b = m.to_bytes()
    write("thinc_bytes", f"relu_softmax_{i}.bin", b)
    write("msgpack", f"thinc_{i}.bin", b)
write("msgpack", "values.bin", srsly.msgpack_dumps([1, -300, 2.5, "s" * 40, b"b" * 300, None, True, {"k": [1, 2]}]))
for name, arr in {
    "f32_2d": rng.standard_normal((3, 4)).astype("float32"),
    "i64_1d": numpy.arange(5, dtype="int64"),
    "u8_3d": numpy.arange(24, dtype="uint8").reshape(2, 3, 4),
    "f16_0d": numpy.array(1.5, dtype="float16"),
}.items():
    buf = io.BytesIO()
    numpy.save(buf, arr)
    write("npy", name + ".npy", buf.getvalue())
print("seeds written to", out)
