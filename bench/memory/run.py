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
A.add_argument("--only", choices=("mlp", "mobilenet_v2"),
               help="one model's rows (mobilenet_v2's take minutes); the other's come from its results_<model>.json")
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
for kind in ("int8", "f16"):  # the compact frozen bases (issue 26 item 2): LoRA on them, extra rows
    out = os.path.join(A.models, f"mlp_{kind}.lithe")
    if not os.path.exists(out):
        subprocess.check_call([os.path.join(A.build, "tools", "lithe", "lithe"), "convert", "--weights", kind,
                               os.path.join(A.models, "mlp.lithe"), out])
exe = os.path.join(A.models, "mem_step")
subprocess.check_call(["cc", "-O2", "-o", exe, os.path.join(HERE, "mem_step.c"), "-I", os.path.join(ROOT, "include"),
                       "-L", A.build, "-llithe", "-Wl,-rpath," + os.path.abspath(A.build)])

CASES = [("mlp", os.path.join(A.models, "mlp.lithe"), 64, "784", "softmax/*"),
         ("mobilenet_v2", mnv2, 16, "3,224,224", "classifier.*")]
rows = []
plan_rows = []
MODES = {"mlp": ("full", "last", "lora r8", "lora r8 + recompute", "lora r8 on int8 base", "lora r8 on f16 base"),
         "mobilenet_v2": ("full", "last", "lora r8", "lora r8 + recompute", "lora r8 + recompute by 4 rows",
                          "full + recompute")}
for name, path, batch, row, keep in CASES:
    if A.only and name != A.only:
        continue
    for mode in MODES[name]:
        m = mode.split(" ")[0]
        rc = "recompute" in mode
        model = path.replace(".lithe", "_" + mode.split(" ")[-2] + ".lithe") if mode.endswith(" base") else path
        args = [exe, model, m, str(batch), row, str(A.steps + 2), "1" if rc else "0"]
        env = dict(os.environ, FREEZE_KEEP=keep)
        env.pop("RECOMPUTE_ROWS", None)
        if mode.endswith(" rows"):  # the graph layer's segments recomputed 4 rows of the batch at a time
            env["RECOMPUTE_ROWS"] = mode.split(" ")[-2]
        r = json.loads(subprocess.check_output(args, env=env).decode().strip().splitlines()[-1])
        rows.append((name, mode, "lithe", r["hwm_kb"], r["rss_start_kb"], r["hwm_kb"] - r["rss_loaded_kb"], r["step_s"],
                     r["plan"]["total"], r["backend_peak"]))
        plan_rows.append((name, mode, r["plan"]))
        print(name, mode, "lithe", r, flush=True)
        if m not in ("full", "last") or rc or mode.endswith(" base"):
            continue
        t = json.loads(subprocess.check_output([py, os.path.join(HERE, "torch_step.py"), name, mode, str(batch),
                                                str(A.steps + 1)]).decode().strip().splitlines()[-1])
        rows.append((name, mode, "pytorch", t["hwm_kb"], t.get("rss_start_kb"), t["hwm_kb"] - t["rss_before_kb"], t["step_s"],
                     None, None))
        print(name, mode, "pytorch", t, flush=True)

wasm_rows = []
dist = os.path.join(A.wasm_dir, "lithe-simd.wasm")
if not A.no_wasm and os.path.exists(dist):
    node = os.path.join(HERE, "wasm_step.mjs")
    for rt, modes in (("lithe", ("full", "last", "lora", "lora+recompute", "lora-int8", "lora-f16")), ("tfjs", ("full", "last"))):
        for mode in modes:
            w = json.loads(subprocess.check_output(["node", node, rt, A.models, mode, "--steps", str(A.steps + 1), "--wasm",
                                                    dist, "--importers",
                                                    os.path.join(A.wasm_dir, "lithe-importers-simd.wasm")]
                                                   ).decode().strip().splitlines()[-1])
            wasm_rows.append(w)
            print("mlp wasm", w, flush=True)

# Each model's rows (and the WebAssembly rows) are kept in results_<model>.json beside results.md, so
# that one model can be run again (--only) and the table still shows every model's last run.
def keep(tag, data, ran):
    f = os.path.join(HERE, f"results_{tag}.json")
    if ran:
        json.dump(data, open(f, "w"), indent=0)
    return json.load(open(f)) if os.path.exists(f) else data


for n in ("mlp", "mobilenet_v2"):
    ran = not A.only or A.only == n
    kept = keep(n, {"rows": [r for r in rows if r[0] == n], "plans": [p for p in plan_rows if p[0] == n]}, ran)
    if not ran:
        rows += [tuple(r) for r in kept["rows"]]
        plan_rows += [tuple(p) for p in kept["plans"]]
wasm_rows = keep("wasm", wasm_rows, bool(wasm_rows))
rows.sort(key=lambda r: r[0] != "mlp")
MiB = 1024.0
lines = ["Columns: peak RSS = the process's VmHWM; baseline = its resident set before the model exists (lithe: "
         "libc, the loader, liblithe's pages touched at start, ~1.9 MiB; PyTorch: the interpreter and torch); "
         "**step memory = peak RSS - baseline** (the model's weights, what the step holds, the code pages it "
         "touches: what the verdict uses, bench/memory/accounting.md says why); step delta = peak RSS - the "
         "resident set after loading (lithe) / before the first step (PyTorch): it leaves out whatever the load "
         "touched (the mapped weights), so it flatters a frozen base; plan = lithe_model_plan_train's total; "
         "backend peak = the CPU backend's in-use high-water mark (natively the loaded weights are the "
         "mapped file's pages, not backend blocks; the GEMM's packing workspaces are not counted).\n",
         "| model | mode | runtime | peak RSS (MiB) | baseline (MiB) | step memory (MiB) | step delta (MiB) | step (s) | "
         "plan (MiB) | backend peak (MiB) |",
         "|---|---|---|---:|---:|---:|---:|---:|---:|---:|"]
f = lambda v, s=MiB: "—" if v is None else f"{v / s:.1f}"  # noqa: E731
for n, mo, rt, hwm, base, d, st, plan, bp in rows:
    sm = None if base is None else hwm - base
    lines.append(f"| {n} | {mo} | {rt} | {f(hwm)} | {f(base)} | {f(sm)} | {f(d)} | {'—' if st is None else f'{st:.3f}'} | "
                 f"{f(plan, MiB * 1024)} | {f(bp, MiB * 1024)} |")
get = {(n, mo, rt): (hwm, d, st, bp, None if base is None else hwm - base) for n, mo, rt, hwm, base, d, st, plan, bp in rows}
plans = {(n, mo): r for n, mo, r in plan_rows}
for n in ("mlp", "mobilenet_v2"):
    if (n, "full", "lithe") not in get:
        continue
    lf, tf, ll = get[(n, "full", "lithe")], get[(n, "full", "pytorch")], get[(n, "last", "lithe")]
    sm_ratio = f", step memory {lf[4] / tf[4]:.2f}x" if lf[4] and tf[4] else ""
    lines.append(f"\n{n}: lithe full / PyTorch full: peak RSS {lf[0] / tf[0]:.2f}x{sm_ratio}; lithe last-layer step "
                 f"{lf[2] / ll[2]:.1f}x faster than its full step")
    for mo in ("lora r8", "lora r8 + recompute", "lora r8 + recompute by 4 rows", "full + recompute", "lora r8 on int8 base",
               "lora r8 on f16 base"):
        if (n, mo, "lithe") in get:
            lo = get[(n, mo, "lithe")]
            lines.append(f"{n}: {mo} / full: step memory {lo[4] / lf[4]:.2f}x, peak RSS {lo[0] / lf[0]:.2f}x, step delta "
                         f"{lo[1] / lf[1]:.2f}x, backend peak {lo[3] / lf[3]:.2f}x; step {lf[2] / lo[2]:.1f}x faster")
    if (n, "lora r8") in plans:  # the floor: what a step must hold (the plan's own figures)
        pf, pl = plans[(n, "full")], plans[(n, "lora r8")]
        lines.append(f"{n}: floor of lora r8 / full (plan: params + grads + optimizer state + activations) = "
                     f"{pl['total'] / MiB / 1024:.2f} / {pf['total'] / MiB / 1024:.2f} MiB = {pl['total'] / pf['total']:.2f}x; "
                     f"the frozen float32 weights alone are {pf['params'] / pf['total']:.2f}x of full")
if wasm_rows:
    lines += ["\nThe MLP at batch 64 in WebAssembly under Node (one thread):\n",
              "| runtime | mode | wasm memory after load (MiB) | wasm memory after the steps (MiB) | step peak (MiB) | "
              "of which the model before the step (MiB) | step (s) |",
              "|---|---|---:|---:|---:|---:|---:|"]
    for w in wasm_rows:
        pk = w.get("backend_peak", w.get("tensor_peak"))
        lines.append(f"| {w['runtime']} | {w['mode']} | {w['wasm_memory_loaded'] / MiB / 1024:.1f} | "
                     f"{w['wasm_memory'] / MiB / 1024:.1f} | {pk / MiB / 1024:.1f} | "
                     f"{f(w.get('backend_loaded'), MiB * 1024)} | {w['step_s']:.3f} |")
    wget = {(w["runtime"], w["mode"]): w for w in wasm_rows}
    if ("lithe", "full") in wget:
        full = wget[("lithe", "full")]["backend_peak"]
        for mo in ("lora", "lora+recompute", "lora-int8", "lora-f16", "last"):
            if ("lithe", mo) in wget:
                lines.append(f"{'' if mo != 'lora' else chr(10)}mlp wasm: {mo} / full step peak = "
                             f"{wget[('lithe', mo)]['backend_peak'] / full:.2f}x")
    lines.append("\nstep peak: lithe's CPU backend in-use high-water mark (lithe_backend_memory: params, grads, optimizer "
                 "state, activations); tfjs: tf.profile's peakBytes (its tensors: the same things).")
open(os.path.join(HERE, "results.md"), "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
