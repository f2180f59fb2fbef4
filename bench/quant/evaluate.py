#!/usr/bin/python3
"""Fashion-MNIST test accuracy of train_models.py's ONNX files run by lithe, float32 and quantized
by lithe (static int8 with calibration, per-channel weights), beside torch's float32 figure.

    /usr/bin/python3 bench/quant/evaluate.py [DIR] [--lithe PATH] [--models a,b] [--calib N]

DIR (default build/quant) holds train_models.py's output. For each model:
  1. DIR/<model>.onnx through lithe (Python binding, batches of 500): float32 accuracy, and how many
     predicted classes differ from torch's accuracy figure's count;
  2. `lithe quantize DIR/<model>.onnx --calibrate calib.npy --output DIR/<model>_int8.lithe` (the
     first N rows of calib_x.npy, default 512: training images), then DIR/<model>_int8.lithe's
     accuracy; the quantized graph also goes to DIR/<model>_qdq.onnx (`lithe convert --to-onnx`)
     for onnxruntime.
Updates DIR/accuracy.json (the models run) and prints a Markdown table. LITHE_LIBRARY selects liblithe.so (default
build/ci's); --lithe the command (default build/ci/tools/lithe/lithe).
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def accuracy(path, x, y, bs=500):
    import lithe
    m = lithe.load(path)
    pred = []
    t0 = time.time()
    for i in range(0, len(x), bs):
        pred.append(numpy.asarray(numpy.from_dlpack(m.predict(numpy.ascontiguousarray(x[i:i + bs])))).argmax(1))
    m.close()
    pred = numpy.concatenate(pred)
    return float((pred == y).mean()), pred, time.time() - t0


def run(cmd):
    print("$ " + " ".join(cmd), file=sys.stderr, flush=True)
    r = subprocess.run(cmd, capture_output=True, text=True)
    sys.stderr.write(r.stdout + r.stderr)
    return r.returncode, (r.stdout + r.stderr).strip()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir", nargs="?", default=os.path.join(ROOT, "build", "quant"))
    ap.add_argument("--lithe", default=os.path.join(ROOT, "build", "ci", "tools", "lithe", "lithe"))
    ap.add_argument("--models", default="mobilenet_v2,resnet18")
    ap.add_argument("--calib", type=int, default=512)
    a = ap.parse_args()
    os.environ.setdefault("LITHE_LIBRARY", os.path.join(ROOT, "build", "ci", "liblithe.so"))
    sys.path.insert(0, os.path.join(ROOT, "shims", "python"))
    d = a.dir
    x, y = numpy.load(os.path.join(d, "test_x.npy")), numpy.load(os.path.join(d, "test_y.npy"))
    calib = os.path.join(d, f"calib_{a.calib}.npy")
    numpy.save(calib, numpy.load(os.path.join(d, "calib_x.npy"))[:a.calib])
    acc_json = os.path.join(d, "accuracy.json")
    out = json.load(open(acc_json)) if os.path.exists(acc_json) else {}  # other models' earlier runs stay
    for name in a.models.split(","):
        info = json.load(open(os.path.join(d, f"{name}.json")))
        r = {"torch_float32": info["torch_float32_test_accuracy"], "calibration_rows": a.calib}
        onnx = os.path.join(d, f"{name}.onnx")
        r["lithe_float32"], pf, r["float32_seconds"] = accuracy(onnx, x, y)
        q = os.path.join(d, f"{name}_int8.lithe")
        rc, msg = run([a.lithe, "quantize", onnx, "--calibrate", calib, "--output", q])
        r["quantize"] = msg.splitlines()[-1] if msg else ""
        if rc == 0:
            r["lithe_int8_static"], pq, r["int8_seconds"] = accuracy(q, x, y)
            r["int8_vs_float32_points"] = round(100 * (r["lithe_int8_static"] - r["lithe_float32"]), 2)
            r["predictions_changed"] = int((pq != pf).sum())
            r["file_bytes"] = {"float32_onnx": os.path.getsize(onnx), "int8_lithe": os.path.getsize(q)}
            rc, msg = run([a.lithe, "convert", q, "--to-onnx", os.path.join(d, f"{name}_qdq.onnx")])
            if rc != 0:
                r["qdq_onnx"] = msg
        out[name] = r
        print(json.dumps({name: r}), file=sys.stderr, flush=True)
    with open(acc_json, "w") as f:
        json.dump(out, f, indent=1)
    print("| model | torch float32 | lithe float32 | lithe int8 (static) | int8 - float32 (points) |")
    print("|---|---|---|---|---|")
    for name, r in out.items():
        q = r.get("lithe_int8_static")
        print(f"| {name} | {100 * r['torch_float32']:.2f} % | {100 * r['lithe_float32']:.2f} % | "
              + (f"{100 * q:.2f} % | {r['int8_vs_float32_points']:+.2f} |" if q is not None else "n/a | n/a |"))


if __name__ == "__main__":
    main()
