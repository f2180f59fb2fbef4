"""Training-step memory and speed, lithe against PyTorch 1.13 eager (issue 26), every figure from a
fresh process: bench/memory/mem_step (native lithe, the CPU backend) and torch_step.py
(/usr/bin/python3). Writes bench/memory/results.md (the table) and prints it.

  /usr/bin/python3 bench/memory/run.py [--build build/ci] [--models DIR] [--steps 3]

Models: the MLP (bench/make_models.py's mlp.lithe, native layers, batch 64) and mobilenet_v2
(export_mobilenet.py: the same module with a dynamic batch, ONNX, the graph layer, batch 16).
Modes: full (every param trains), last (everything frozen but the last layer), lora r8 (rank-8
adapters, alpha 16, on every weight that takes one: the MLP's three W, mobilenet_v2's 52 Conv and
Gemm weights; core/lora.c), lora r8 + recompute (the MLP's chain recomputes its activations in
backprop; mobilenet_v2's graph layer recomputes by segment: core/graph/graph_recompute.c), and for
mobilenet_v2 lora r8 + recompute by 4 rows (the attr recompute_rows: each segment's backward 4 rows of
the batch at a time, core/graph/graph_rows.c) and full + recompute. Peak = VmHWM of the
process (resident set high-water mark); "step delta" = VmHWM minus the resident set after the
model is loaded (lithe) or after torch, the model and the input are made (PyTorch); backend peak =
the CPU backend's in-use high-water mark (params included).

WebAssembly under Node (--wasm, on by default when bindings/js/dist has lithe-simd.wasm): the MLP's
step by the npm package and by tfjs-wasm (wasm_step.mjs): the module's WebAssembly.Memory, and
the backend's peak (lithe) or tf.profile's peakBytes (tfjs)."""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

A = argparse.ArgumentParser()
A.add_argument("--build", default=os.path.join(ROOT, "build", "ci"))
A.add_argument("--models", default=os.path.join(ROOT, "build", "memmodels"))
A.add_argument("--steps", type=int, default=3)
A.add_argument("--no-wasm", action="store_true")
A.add_argument("--wasm-dir", default=os.path.join(ROOT, "bindings", "js", "dist"),
               help="where lithe-simd.wasm and lithe-importers-simd.wasm are (npm run build puts them in dist/)")
A = A.parse_args()
os.makedirs(A.models, exist_ok=True)
py = "/usr/bin/python3"
if not os.path.exists(os.path.join(A.models, "mlp.lithe")):
    subprocess.check_call([py, os.path.join(ROOT, "bench", "make_models.py"), A.models, "--only", "mlp"])
mnv2 = os.path.join(A.models, "mobilenet_v2_dyn.onnx")
if not os.path.exists(mnv2):
    subprocess.check_call([py, os.path.join(HERE, "export_mobilenet.py"), mnv2])
exe = os.path.join(A.models, "mem_step")
subprocess.check_call(["cc", "-O2", "-o", exe, os.path.join(HERE, "mem_step.c"), "-I", os.path.join(ROOT, "include"),
                       "-L", A.build, "-llithe", "-Wl,-rpath," + os.path.abspath(A.build)])

CASES = [("mlp", os.path.join(A.models, "mlp.lithe"), 64, "784", "softmax/*"),
         ("mobilenet_v2", mnv2, 16, "3,224,224", "classifier.*")]
rows = []
MODES = {"mlp": ("full", "last", "lora r8", "lora r8 + recompute"),
         "mobilenet_v2": ("full", "last", "lora r8", "lora r8 + recompute", "lora r8 + recompute by 4 rows",
                          "full + recompute")}
for name, path, batch, row, keep in CASES:
    for mode in MODES[name]:
        m = mode.split(" ")[0]
        rc = "recompute" in mode
        args = [exe, path, m, str(batch), row, str(A.steps + 2), "1" if rc else "0"]
        env = dict(os.environ, FREEZE_KEEP=keep)
        env.pop("RECOMPUTE_ROWS", None)
        if mode.endswith(" rows"):  # the graph layer's segments recomputed 4 rows of the batch at a time
            env["RECOMPUTE_ROWS"] = mode.split(" ")[-2]
        r = json.loads(subprocess.check_output(args, env=env).decode().strip().splitlines()[-1])
        rows.append((name, mode, "lithe", r["hwm_kb"], r["hwm_kb"] - r["rss_loaded_kb"], r["step_s"], r["plan"]["total"],
                     r["backend_peak"]))
        print(name, mode, "lithe", r, flush=True)
        if m not in ("full", "last") or rc:
            continue
        t = json.loads(subprocess.check_output([py, os.path.join(HERE, "torch_step.py"), name, mode, str(batch),
                                                str(A.steps + 1)]).decode().strip().splitlines()[-1])
        rows.append((name, mode, "pytorch", t["hwm_kb"], t["hwm_kb"] - t["rss_before_kb"], t["step_s"], None, None))
        print(name, mode, "pytorch", t, flush=True)

wasm_rows = []
dist = os.path.join(A.wasm_dir, "lithe-simd.wasm")
if not A.no_wasm and os.path.exists(dist):
    node = os.path.join(HERE, "wasm_step.mjs")
    for rt, modes in (("lithe", ("full", "last", "lora", "lora+recompute")), ("tfjs", ("full", "last"))):
        for mode in modes:
            w = json.loads(subprocess.check_output(["node", node, rt, A.models, mode, "--steps", str(A.steps + 1), "--wasm",
                                                    dist, "--importers",
                                                    os.path.join(A.wasm_dir, "lithe-importers-simd.wasm")]
                                                   ).decode().strip().splitlines()[-1])
            wasm_rows.append(w)
            print("mlp wasm", w, flush=True)

MiB = 1024.0
lines = ["| model | mode | runtime | peak RSS (MiB) | step delta (MiB) | step (s) | plan (MiB) | backend peak (MiB) |",
         "|---|---|---|---:|---:|---:|---:|---:|"]
for n, mo, rt, hwm, d, st, plan, bp in rows:
    f = lambda v, s=MiB: "—" if v is None else f"{v / s:.1f}"  # noqa: E731
    lines.append(f"| {n} | {mo} | {rt} | {f(hwm)} | {f(d)} | {'—' if st is None else f'{st:.3f}'} | "
                 f"{f(plan, MiB * 1024)} | {f(bp, MiB * 1024)} |")
get = {(n, mo, rt): (hwm, d, st, bp) for n, mo, rt, hwm, d, st, plan, bp in rows}
for n in ("mlp", "mobilenet_v2"):
    lf, tf, ll, lo = (get[(n, "full", "lithe")], get[(n, "full", "pytorch")], get[(n, "last", "lithe")],
                      get[(n, "lora r8", "lithe")])
    lines.append(f"\n{n}: lithe full / PyTorch full peak = {lf[0] / tf[0]:.2f}x; lithe last-layer step "
                 f"{lf[2] / ll[2]:.1f}x faster than its full step")
    for mo in ("lora r8", "lora r8 + recompute", "lora r8 + recompute by 4 rows", "full + recompute"):
        if (n, mo, "lithe") in get:
            lo = get[(n, mo, "lithe")]
            lines.append(f"{n}: {mo} / full: peak RSS {lo[0] / lf[0]:.2f}x, step delta {lo[1] / lf[1]:.2f}x, backend "
                         f"peak {lo[3] / lf[3]:.2f}x; step {lf[2] / lo[2]:.1f}x faster")
if wasm_rows:
    lines += ["\nThe MLP at batch 64 in WebAssembly under Node (one thread):\n",
              "| runtime | mode | wasm memory after load (MiB) | wasm memory after the steps (MiB) | step peak (MiB) | step (s) |",
              "|---|---|---:|---:|---:|---:|"]
    for w in wasm_rows:
        pk = w.get("backend_peak", w.get("tensor_peak"))
        lines.append(f"| {w['runtime']} | {w['mode']} | {w['wasm_memory_loaded'] / MiB / 1024:.1f} | "
                     f"{w['wasm_memory'] / MiB / 1024:.1f} | {pk / MiB / 1024:.1f} | {w['step_s']:.3f} |")
    lines.append("\nstep peak: lithe's CPU backend in-use high-water mark (lithe_backend_memory: params, grads, optimizer "
                 "state, activations); tfjs: tf.profile's peakBytes (its tensors: the same things).")
open(os.path.join(HERE, "results.md"), "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
