"""PyTorch 1.13 (Debian's python3-torch, eager) on the suite's models, built by make_models.build
from the same seeds (so the same weights; the error column proves it), torch.set_num_threads(N).
Its BLAS is Debian's OpenBLAS: bench/run.sh runs this once as is and once with
OPENBLAS_CORETYPE=SkylakeX (the AVX-512 kernel), and says which in --label. Latency = model(x)
under inference_mode. Training: the MLP, Adam(lr 1e-3), cross-entropy on logits, loss.item()."""
import os

import numpy
import torch

from pycommon import args, measure, err, emit
import make_models

a = args()
torch.set_num_threads(a.threads)
name = f"PyTorch {torch.__version__}"
label = f", {a.label}" if a.label else ""
models = {}
if "infer" in a.only:
    for wl in a.workloads.split(","):
        model = make_models.WORKLOADS[wl][0]
        rec = {"group": "infer", "workload": wl, "runner": name, "impl": "native", "threads": a.threads,
               "config": f"eager, set_num_threads({a.threads}){label}"}
        try:
            m = models.setdefault(model, make_models.build(model))
            x = torch.from_numpy(numpy.load(os.path.join(a.dir, f"{wl}_x.npy")))
            ref = numpy.load(os.path.join(a.dir, f"{wl}_ref.npy"))
            out = {}

            def run():
                with torch.inference_mode():
                    out["y"] = m(x)
            st = measure(run, a)
            emit({**rec, **st, **err(out["y"].numpy(), ref), "ref": "torch reference (export time, 1 thread)"})
        except Exception as e:  # a runner that fails says so in the table
            emit({**rec, "error": str(e).splitlines()[0]})
if "train" in a.only:
    rec = {"group": "train", "workload": "mlp_train_b64", "runner": name, "impl": "native", "threads": a.threads,
           "config": f"eager, Adam(1e-3), cross-entropy, set_num_threads({a.threads}){label}"}
    m = make_models.build("mlp").train()
    x = torch.from_numpy(numpy.load(os.path.join(a.dir, "train_x.npy")))
    y = torch.from_numpy(numpy.load(os.path.join(a.dir, "train_y.npy"))).long()
    opt = torch.optim.Adam(m.parameters(), lr=1e-3)
    losses = []

    def step():
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(m(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    st = measure(step, a)
    emit({**rec, **st, "first_loss": losses[0], "last_loss": losses[-1]})
