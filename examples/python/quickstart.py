# lithe from Python: a Thinc model exported, loaded, predicting and training in lithe's C core.
# The README's Python quickstart is this file (tests/readme_examples.py keeps the two the same);
# CI runs it in a fresh virtual environment with the wheel installed (tests/python_wheel.py).
import numpy
from thinc.api import Relu, Softmax, chain

import lithe

X = numpy.random.default_rng(0).random((16, 784), dtype=numpy.float32)
labels = numpy.arange(16) % 10

thinc_model = chain(Relu(64), Softmax(10))   # any Thinc 8.1 model, trained or not
thinc_model.initialize(X=X)
lithe.export(thinc_model, "model.lithe")     # weights + architecture, one .lithe file

model = lithe.load("model.lithe")
Y = numpy.from_dlpack(model.predict(X))      # numpy / torch in, DLPack views out: no copies
assert numpy.allclose(Y, thinc_model.predict(X), atol=1e-5)  # Thinc's numbers

optimizer = lithe.Adam(0.001)                # Thinc's Adam, step for step
for step in range(10):
    Yh, backprop = model.begin_update(X)
    dY = numpy.from_dlpack(Yh) - numpy.eye(10, dtype=numpy.float32)[labels]
    backprop(dY / len(X))                    # accumulates the gradients
    model.finish_update(optimizer)
model.save("tuned.lithe")

try:
    model.predict(X.astype(numpy.float64))   # lithe computes in float32
except lithe.LitheError as e:
    print(e)                                 # ... convert with .astype(numpy.float32)
print("classes:", numpy.from_dlpack(lithe.load("tuned.lithe").predict(X)).argmax(axis=1))
