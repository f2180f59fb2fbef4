#!/usr/bin/python3
"""Latency of the mobilenet_v2-style model (train_models.py) at batch B, one thread: lithe float32
(the ONNX file), lithe int8 (`lithe quantize --calibrate`'s .lithe) and onnxruntime-node on the
same quantized graph (evaluate.py's <model>_qdq.onnx) and on the float ONNX file.

    /usr/bin/python3 bench/quant/speed.py [DIR] [--model mobilenet_v2] [--batch 1] [--rounds 5]

Each round runs the four measurements one after another (rotated by one each round, so no runner
always follows the same one on a drifting shared host); each is `lithe bench` / ort_time.mjs
(warm-up, then >= 30 runs). Reported: per runner the minimum and the median of the per-round
medians, and the ratios int8 / float32 and int8 / onnxruntime computed per round (medians of the
same round) with their median and min-max over the rounds. Writes DIR/speed_<model>_b<B>.json.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys

import numpy

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def lithe_bench(cli, model, x, max_s):
    out = subprocess.run([cli, "bench", model, "--input", x, "--threads", "1", "--max-s", str(max_s)],
                         capture_output=True, text=True, check=True, env=dict(os.environ, LITHE_PROGRESS="0")).stdout
    return {k: float(v) for k, v in re.findall(r"(median_ms|min_ms)=([0-9.]+)", out)}


def ort(model, x, max_s):
    out = subprocess.run(["node", os.path.join(ROOT, "bench", "quant", "ort_time.mjs"), model, x, "--max-s", str(max_s)],
                         capture_output=True, text=True, check=True).stdout
    r = json.loads(out.strip().splitlines()[-1])
    return {"median_ms": r["median_ms"], "min_ms": r["min_ms"], "runner": r["runner"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir", nargs="?", default=os.path.join(ROOT, "build", "quant"))
    ap.add_argument("--lithe", default=os.path.join(ROOT, "build", "ci", "tools", "lithe", "lithe"))
    ap.add_argument("--model", default="mobilenet_v2")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--max-s", type=float, default=10)
    a = ap.parse_args()
    d, m = a.dir, a.model
    x = os.path.join(d, f"x_b{a.batch}.npy")
    numpy.save(x, numpy.load(os.path.join(d, "test_x.npy"))[:a.batch])
    runs = {
        "lithe float32": lambda: lithe_bench(a.lithe, os.path.join(d, f"{m}.onnx"), x, a.max_s),
        "lithe int8": lambda: lithe_bench(a.lithe, os.path.join(d, f"{m}_int8.lithe"), x, a.max_s),
        "onnxruntime-node int8 (QDQ)": lambda: ort(os.path.join(d, f"{m}_qdq.onnx"), x, a.max_s),
        "onnxruntime-node float32": lambda: ort(os.path.join(d, f"{m}.onnx"), x, a.max_s),
    }
    names = list(runs)
    res = {n: [] for n in names}
    for r in range(a.rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        for n in order:
            try:
                res[n].append(runs[n]())
            except (subprocess.CalledProcessError, ValueError, KeyError) as e:
                res[n].append({"error": str(getattr(e, "stderr", "") or e)[-300:]})
            print(f"round {r + 1} {n}: {res[n][-1]}", file=sys.stderr, flush=True)
    summary = {"model": m, "batch": a.batch, "rounds": a.rounds, "runners": {}, "ratios": {}}
    for n in names:
        ok = [v for v in res[n] if "median_ms" in v]
        if ok:
            summary["runners"][n] = {"min_ms": min(v["min_ms"] for v in ok),
                                     "median_of_medians_ms": statistics.median(v["median_ms"] for v in ok)}
    for label, num, den in (("int8 speed-up over lithe float32", "lithe float32", "lithe int8"),
                            ("int8 speed vs onnxruntime-node int8", "onnxruntime-node int8 (QDQ)", "lithe int8"),
                            ("lithe float32 vs onnxruntime-node float32", "onnxruntime-node float32", "lithe float32")):
        per = [p["median_ms"] / q["median_ms"] for p, q in zip(res[num], res[den]) if "median_ms" in p and "median_ms" in q]
        if per:
            summary["ratios"][label] = {"median": round(statistics.median(per), 3), "min": round(min(per), 3),
                                        "max": round(max(per), 3),
                                        "of_minimums": round(summary["runners"][num]["min_ms"]
                                                             / summary["runners"][den]["min_ms"], 3)}
    summary["rounds_raw"] = res
    with open(os.path.join(d, f"speed_{m}_b{a.batch}.json"), "w") as f:
        json.dump(summary, f, indent=1)
    print(json.dumps({k: summary[k] for k in ("model", "batch", "runners", "ratios")}, indent=1))


if __name__ == "__main__":
    main()
