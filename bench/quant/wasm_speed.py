#!/usr/bin/python3
"""The int8 WebAssembly bars (issue 24): int8 >= 1.5x lithe's float32 SIMD128, >= 1.3x
onnxruntime-web, on the same QDQ model. Paired, interleaved rounds of one-process measurements:

  - lithe WASI (tools/lithe/run-wasi.mjs lithe.wasm bench FILE): float32 and the QDQ file;
  - lithe npm (wasm_time.mjs lithe, the SIMD128 core and its importer module): float32 and QDQ;
  - onnxruntime-web's wasm EP (SIMD, one thread) on the same two files (wasm_time.mjs ort-web);
  - optionally a second build of each (--base-wasi, --base-npm: e.g. main before the change), int8 only.

    /usr/bin/python3 bench/quant/wasm_speed.py DIR --model NAME=F32.onnx,QDQ.onnx,X.npy [--model ...]
        [--rounds 5] [--max-s 2] [--base-wasi W.wasm] [--base-npm CORE.wasm] [--relaxed-npm CORE.wasm] [--no-ort]

Each round runs every measurement once, the order rotated by one each round. Reported per runner
and model: the minimum over the rounds' minimums and the median of the rounds' medians; the ratios
(int8 over float32 of the same build; int8 over onnxruntime-web int8 and float32) per round from
the minimums, with their median and min-max. Writes DIR/wasm_speed.json."""
import argparse
import json
import os
import re
import statistics
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def wasi(wasm, model, x, max_s):
    out = subprocess.run(["node", os.path.join(ROOT, "tools/lithe/run-wasi.mjs"), wasm, "bench", model, "--input", x,
                          "--threads", "1", "--max-s", str(max_s)], capture_output=True, text=True, check=True).stdout
    return {k: float(v) for k, v in re.findall(r"(median_ms|min_ms)=([0-9.]+)", out)}


def node(kind, model, x, max_s, wasm=None):
    cmd = ["node", os.path.join(ROOT, "bench/quant/wasm_time.mjs"), kind, model, x, "--max-s", str(max_s)]
    out = subprocess.run(cmd + (["--wasm", wasm] if wasm else []), capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--model", action="append", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--max-s", type=float, default=2)
    ap.add_argument("--wasi", default=os.path.join(ROOT, "build/wasi/tools/lithe/lithe.wasm"))
    ap.add_argument("--npm", default=os.path.join(ROOT, "build/wasm-simd/bindings/js/lithe-simd.wasm"))
    ap.add_argument("--base-wasi")
    ap.add_argument("--base-npm")
    ap.add_argument("--relaxed-npm")
    ap.add_argument("--no-ort", action="store_true", help="leave onnxruntime-web out (its rows from an earlier run)")
    a = ap.parse_args()
    runs = {}
    for spec in a.model:
        name, files = spec.split("=")
        f32, qdq, x = [os.path.join(a.dir, f) for f in files.split(",")]
        for kind, file in (("float32", f32), ("int8", qdq)):
            runs[f"{name} WASI {kind}"] = lambda file=file, x=x: wasi(a.wasi, file, x, a.max_s)
            runs[f"{name} npm {kind}"] = lambda file=file, x=x: node("lithe", file, x, a.max_s, a.npm)
            if not a.no_ort:
                runs[f"{name} ort-web {kind}"] = lambda file=file, x=x: node("ort-web", file, x, a.max_s)
            if kind == "float32":
                continue  # (the float path is the same code in the base builds)
            if a.base_wasi:
                runs[f"{name} WASI-base {kind}"] = lambda file=file, x=x: wasi(a.base_wasi, file, x, a.max_s)
            if a.base_npm:
                runs[f"{name} npm-base {kind}"] = lambda file=file, x=x: node("lithe", file, x, a.max_s, a.base_npm)
            if a.relaxed_npm:
                runs[f"{name} npm-relaxed {kind}"] = lambda file=file, x=x: node("lithe", file, x, a.max_s, a.relaxed_npm)
    names = list(runs)
    res = {n: [] for n in names}
    for r in range(a.rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        for n in order:
            res[n].append(runs[n]())
        print(f"round {r + 1}: " + ", ".join(f"{n} {res[n][-1]['min_ms']:.3f}" for n in names), flush=True)
    report = {"runners": {}, "ratios": {}}
    for n in names:
        report["runners"][n] = {"min_ms": min(v["min_ms"] for v in res[n]),
                                "median_of_medians_ms": statistics.median(v["median_ms"] for v in res[n])}

    def ratio(label, num, den):  # den / num per round: > 1 means num is faster
        if num in res and den in res:
            rs = [d["min_ms"] / q["min_ms"] for q, d in zip(res[num], res[den])]
            report["ratios"][label] = {"median": statistics.median(rs), "min": min(rs), "max": max(rs)}
    for spec in a.model:
        m = spec.split("=")[0]
        for b in ("WASI", "npm", "WASI-base", "npm-base", "npm-relaxed"):
            ratio(f"{m} {b}: int8 vs its float32", f"{m} {b} int8", f"{m} {b.split('-')[0]} float32")
            ratio(f"{m} {b}: int8 vs onnxruntime-web int8", f"{m} {b} int8", f"{m} ort-web int8")
            ratio(f"{m} {b}: int8 vs onnxruntime-web float32", f"{m} {b} int8", f"{m} ort-web float32")
    for n, v in report["runners"].items():
        print(f"{n:40s} min {v['min_ms']:8.3f} ms   median of medians {v['median_of_medians_ms']:8.3f} ms")
    for n, v in report["ratios"].items():
        print(f"{n:55s} {v['median']:.2f}x (rounds {v['min']:.2f}-{v['max']:.2f})")
    with open(os.path.join(a.dir, "wasm_speed.json"), "w") as f:
        json.dump({"rounds": a.rounds, "raw": res, **report}, f, indent=1)


if __name__ == "__main__":
    main()
