"""Training-step memory and speed, lithe against PyTorch 1.13 eager (issue 26), every figure from a
fresh process: bench/memory/mem_step (native lithe, the CPU backend) and torch_step.py
(/usr/bin/python3). Writes bench/memory/results.md (the table) and prints it.

  /usr/bin/python3 bench/memory/run.py [--build build/ci] [--models DIR] [--steps 3]

Models: the MLP (bench/make_models.py's mlp.lithe, native layers, batch 64) and mobilenet_v2
(export_mobilenet.py: the same module with a dynamic batch, ONNX, the graph layer, batch 16).
Modes: full (every param trains), last (everything frozen but the last layer), recompute (MLP:
its chain recomputes), lora (slot for lora26's adapters). Peak = VmHWM of the process (resident
set high-water mark); "step delta" = VmHWM minus the resident set after the model is loaded (lithe)
or after torch, the model and the input are made (PyTorch)."""
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
for name, path, batch, row, keep in CASES:
    for mode in ("full", "last", "recompute") if name == "mlp" else ("full", "last"):
        args = [exe, path, "full" if mode == "recompute" else mode, str(batch), row, str(A.steps + 2),
                "1" if mode == "recompute" else "0"]
        r = json.loads(subprocess.check_output(args, env=dict(os.environ, FREEZE_KEEP=keep)).decode().strip().splitlines()[-1])
        rows.append((name, mode, "lithe", r["hwm_kb"], r["hwm_kb"] - r["rss_loaded_kb"], r["step_s"], r["plan"]["total"],
                     r["backend_peak"]))
        print(name, mode, "lithe", r, flush=True)
        if mode == "recompute":
            continue
        t = json.loads(subprocess.check_output([py, os.path.join(HERE, "torch_step.py"), name, mode, str(batch),
                                                str(A.steps + 1)]).decode().strip().splitlines()[-1])
        rows.append((name, mode, "pytorch", t["hwm_kb"], t["hwm_kb"] - t["rss_before_kb"], t["step_s"], None, None))
        print(name, mode, "pytorch", t, flush=True)
    rows.append((name, "lora r8", "lithe", None, None, None, None, None))  # lora26's adapters: a slot

MiB = 1024.0
lines = ["| model | mode | runtime | peak RSS (MiB) | step delta (MiB) | step (s) | plan (MiB) | backend peak (MiB) |",
         "|---|---|---|---:|---:|---:|---:|---:|"]
for n, mo, rt, hwm, d, st, plan, bp in rows:
    f = lambda v, s=MiB: "—" if v is None else f"{v / s:.1f}"  # noqa: E731
    lines.append(f"| {n} | {mo} | {rt} | {f(hwm)} | {f(d)} | {'—' if st is None else f'{st:.3f}'} | "
                 f"{f(plan, MiB * 1024)} | {f(bp, MiB * 1024)} |")
get = {(n, mo, rt): (hwm, st) for n, mo, rt, hwm, d, st, plan, bp in rows}
for n in ("mlp", "mobilenet_v2"):
    lf, tf, ll = get[(n, "full", "lithe")], get[(n, "full", "pytorch")], get[(n, "last", "lithe")]
    lines.append(f"\n{n}: lithe full / PyTorch full peak = {lf[0] / tf[0]:.2f}x; lithe last-layer step "
                 f"{lf[1] / ll[1]:.1f}x faster than its full step")
open(os.path.join(HERE, "results.md"), "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
