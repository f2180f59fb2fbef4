"""Thinc 8.1.7 (Debian's python3-thinc, NumpyOps, which calls cython-blis for its GEMMs) on the
MLP: chain(Relu(512), Relu(512), Softmax(10)) with the torch weights (make_models.thinc_mlp), the
same tree lithe runs from mlp.lithe. bench/run.sh runs it as is and with BLIS_ARCH_TYPE forcing
blis's SkylakeX kernels, with BLIS_NUM_THREADS / OMP / OPENBLAS threads = 1. Latency =
model.predict(x). Training: Adam(0.001) with Thinc's defaults, CategoricalCrossentropy's gradient,
finish_update."""
import os

import numpy
import thinc
from thinc.api import Adam, CategoricalCrossentropy

from pycommon import args, measure, err, emit
import make_models

a = args()
name = f"Thinc {thinc.__version__}"
label = f", {a.label}" if a.label else ""
if "infer" in a.only:
    model = make_models.thinc_mlp(make_models.build("mlp"))
    for wl in a.workloads.split(","):
        if make_models.WORKLOADS[wl][0] != "mlp":
            continue
        rec = {"group": "infer", "workload": wl, "runner": name, "impl": "native", "threads": 1,
               "config": f"NumpyOps (blis){label}"}
        x = numpy.load(os.path.join(a.dir, f"{wl}_x.npy"))
        ref = numpy.load(os.path.join(a.dir, f"{wl}_softmax_ref.npy"))
        out = {}
        st = measure(lambda: out.__setitem__("y", model.predict(x)), a)
        emit({**rec, **st, **err(out["y"], ref), "ref": "softmax(torch logits), same weights"})
if "train" in a.only:
    rec = {"group": "train", "workload": "mlp_train_b64", "runner": name, "impl": "native", "threads": 1,
           "config": f"NumpyOps (blis), Adam(0.001) Thinc defaults, CategoricalCrossentropy{label}"}
    model = make_models.thinc_mlp(make_models.build("mlp"))
    x = numpy.load(os.path.join(a.dir, "train_x.npy"))
    y = numpy.load(os.path.join(a.dir, "train_y.npy"))
    loss_fn = CategoricalCrossentropy()
    opt = Adam(0.001)
    p = model.predict(x)
    first = float(-numpy.log(p[numpy.arange(len(y)), y]).mean())
    last = {}

    def step():
        Y, backprop = model.begin_update(x)
        d, loss = loss_fn(Y, y)
        backprop(d)
        model.finish_update(opt)
        last["loss"] = float(loss)
    st = measure(step, a)
    emit({**rec, **st, "first_loss": first, "last_loss": last["loss"]})
