"""Shared by bench's Python runners (torch_bench.py, thinc_bench.py): the timing protocol of
bench/README.md, arguments, max |y - ref|, and one RESULT line of JSON per measurement."""
import argparse
import json
import os
import sys
import time

import numpy

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # bench/, for make_models

WORKLOADS = {"mlp_b1": "mlp", "mlp_b64": "mlp", "cnn_b1": "cnn", "cnn_b32": "cnn",
             "mobilenet_v2_b1": "mobilenet_v2", "mobilenet_v3_small_b1": "mobilenet_v3_small",
             "lraspp_b1": "lraspp_mobilenet_v3_large", "transformer_b1": "transformer"}


def args():
    p = argparse.ArgumentParser()
    p.add_argument("--dir", required=True)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--max-s", type=float, default=20.0)
    p.add_argument("--workloads", default=",".join(WORKLOADS))
    p.add_argument("--only", default="infer,train")
    p.add_argument("--train-workloads", default="mlp_train_b64",
                   help="with train: mlp_train_b64 and/or make_models.TRAIN's workloads")
    p.add_argument("--label", default="", help="what the environment forces, for the config column")
    return p.parse_args()


def measure(fn, a):
    warm_s, min_s = (0.0, 0.0) if a.quick else (1.0, 1.5)
    warm_runs, min_runs = (1, 3) if a.quick else (5, 30)
    max_runs, cap = 2000, a.max_s
    w, t0 = 0, time.perf_counter()
    while (w < warm_runs or time.perf_counter() - t0 < warm_s) and not (w >= 1 and time.perf_counter() - t0 >= cap):
        fn()
        w += 1
    ts, start = [], time.perf_counter()
    while len(ts) < max_runs and (len(ts) < min_runs or time.perf_counter() - start < min_s) and \
            not (len(ts) >= 5 and time.perf_counter() - start >= cap):
        a0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - a0)
    ms = numpy.array(ts) * 1e3
    return {"median_ms": float(numpy.median(ms)), "min_ms": float(ms.min()), "max_ms": float(ms.max()),
            "mean_ms": float(ms.mean()), "runs": len(ts), "warmup_runs": w}


def err(y, ref):
    y = numpy.asarray(y, dtype=numpy.float64).ravel()
    ref = numpy.asarray(ref, dtype=numpy.float64).ravel()
    if y.shape != ref.shape:
        return {"err": None, "ref_max": None}
    return {"err": float(numpy.abs(y - ref).max()), "ref_max": float(numpy.abs(ref).max())}


def emit(rec):
    print("RESULT " + json.dumps(rec), flush=True)
