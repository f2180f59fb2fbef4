"""A Thinc model handed to lithe, fine-tuned there for five steps, then written as ONNX for serving
(docs/scale-out.md). Writes model.lithe, tuned.lithe, tuned.onnx and batch.json (a batch and
lithe's predictions for it, which serve.mjs compares with onnxruntime's)."""
import json

import numpy
from thinc.api import Relu, Softmax_v2, chain

import lithe

rng = numpy.random.default_rng(0)
X = rng.standard_normal((16, 8)).astype("float32")
T = rng.standard_normal((16, 3)).astype("float32")

model = chain(Relu(12), Softmax_v2(3))
model.initialize(X=X)
lithe.export(model, "model.lithe")  # Thinc -> lithe

lm = lithe.load("model.lithe")
opt = lithe.Adam(0.01)
for _ in range(5):  # fine-tune in lithe (on the device)
    Y, backprop = lm.begin_update(X)
    backprop(numpy.ascontiguousarray((numpy.from_dlpack(Y) - T) / len(X), dtype="float32"))
    lm.finish_update(opt)
lm.save("tuned.lithe")
lm.save_onnx("tuned.onnx")  # the same as: lithe convert tuned.lithe --to-onnx tuned.onnx

with open("batch.json", "w") as f:
    json.dump({"shape": list(X.shape), "x": X.ravel().tolist(),
               "lithe": numpy.from_dlpack(lm.predict(X)).ravel().tolist()}, f)
