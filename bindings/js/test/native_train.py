"""The native oracle for the package's training test: N steps of Thinc's loop (begin_update, the
categorical cross-entropy gradient (Y - onehot) / B, backprop, finish_update with Adam) on the
native library through shims/python, then the predictions. Run by Debian's /usr/bin/python3:
    native_train.py MODEL X.npy LABELS.npy STEPS OUT_DIR"""
import json
import sys

import ctypes

import numpy as np

import lithe
from lithe import _lib

model_path, x_path, y_path, steps, out = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
model = lithe.load(model_path)
# the same dropout masks as the wasm side: both seed the tree explicitly
set_seed = _lib.lib.lithe_model_set_seed
set_seed.argtypes, set_seed.restype = [ctypes.c_void_p, ctypes.c_uint64], ctypes.c_int
assert set_seed(model._ptr, 7) == 0
X = np.load(x_path)
labels = np.load(y_path).astype(np.int64)
onehot = np.zeros((X.shape[0], 10), dtype=np.float32)
onehot[np.arange(X.shape[0]), labels] = 1.0
opt = lithe.Adam(0.001)
losses = []
for _ in range(steps):
    Y, backprop = model.begin_update(X)
    Yn = np.from_dlpack(Y).copy()
    d = ((Yn - onehot) / X.shape[0]).astype(np.float32)
    losses.append(float(np.sum(d * d)))
    backprop(d)
    model.finish_update(opt)
np.save(f"{out}/y_trained.npy", np.from_dlpack(model.predict(X)).copy())
with open(f"{out}/losses.json", "w") as f:
    json.dump(losses, f)
