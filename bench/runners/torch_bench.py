"""PyTorch 1.13 (Debian's python3-torch, eager) on the suite's models, built by make_models.build
from the same seeds (so the same weights; the error column proves it), torch.set_num_threads(N).
Its BLAS is Debian's OpenBLAS: bench/run.sh runs this once as is and once with
OPENBLAS_CORETYPE=SkylakeX (the AVX-512 kernel), and says which in --label. Latency = model(x)
under inference_mode. Training (--train-workloads): the MLP and make_models.TRAIN's rows, Adam(lr
1e-3), cross-entropy on logits (the transformer: an L2 distance), loss.item()."""
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
    # the MLP (train_x / train_y), and the training rows of make_models.TRAIN (--train-workloads):
    # make_models.train_model's module, the same batch; classifiers: cross-entropy on logits (lithe
    # takes softmax, then categorical cross-entropy: the same function), the transformer: Thinc's
    # L2Distance, 0.5 * sum((y - t)^2) / B, as lithe bench's l2 loss
    for wl in a.train_workloads.split(","):
        rec = {"group": "train", "workload": wl, "runner": name, "impl": "native", "threads": a.threads,
               "config": f"eager, Adam(1e-3), {'L2 distance' if 'transformer' in wl else 'cross-entropy'}, "
               f"set_num_threads({a.threads}){label}"}
        try:
            if wl == "mlp_train_b64":
                m = make_models.build("mlp").train()
                x = torch.from_numpy(numpy.load(os.path.join(a.dir, "train_x.npy")))
                y = torch.from_numpy(numpy.load(os.path.join(a.dir, "train_y.npy"))).long()
            else:
                m = make_models.train_model(make_models.TRAIN[wl][0])
                x = torch.from_numpy(numpy.load(os.path.join(a.dir, f"{wl}_x.npy")))
                yp = os.path.join(a.dir, f"{wl}_y.npy")
                y = torch.from_numpy(numpy.load(yp)).long() if os.path.exists(yp) else None
            if y is None:
                target = torch.rand(m(x).shape, generator=torch.Generator().manual_seed(0))

                def loss_of(out):
                    return 0.5 * ((out - target) ** 2).sum() / out.shape[0]
            else:
                def loss_of(out):
                    return torch.nn.functional.cross_entropy(out, y)
            opt = torch.optim.Adam(m.parameters(), lr=1e-3)
            losses = []

            def step():
                opt.zero_grad()
                loss = loss_of(m(x))
                loss.backward()
                opt.step()
                losses.append(loss.item())
            st = measure(step, a)
            emit({**rec, **st, "first_loss": losses[0] if y is not None else float("nan"), "last_loss": losses[-1]})
        except Exception as e:  # a runner that fails says so in the table
            emit({**rec, "error": str(e).splitlines()[0]})
