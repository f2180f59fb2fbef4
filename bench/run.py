"""The benchmark suite (bench/run.sh runs it with Debian's /usr/bin/python3): builds what it
needs, runs lithe (native, WASI, npm) and the peers one process at a time on this machine, and
writes a Markdown report (bench/results.md by default). bench/README.md says what each row is.

  bench/run.sh [--quick] [--only gemm,mlp,cnn,mobilenet,mnv3,seg,transformer,train,train-cnn,train-mnv2,train-transformer,int8]
               [--rounds N] [--threads 2] [--out FILE] [--max-s S] [--skip-build] [--webgpu]

--rounds N runs every runner once per round in a rotated order and judges each ratio by its
per-round values (bench/rounds.py): the median, min-max, and "met" when the lower quartile clears
the bar.
"""
import argparse
import datetime
import functools
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time

import numpy

from rounds import by_round, ratio_over_rounds

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
PY = "/usr/bin/python3"
GROUPS = ("gemm", "mlp", "cnn", "mobilenet", "mnv3", "seg", "transformer", "train", "train-cnn", "train-mnv2",
          "train-transformer", "int8")
GEMMS = [(1, 512, 784), (64, 512, 784), (256, 256, 256), (1024, 1024, 1024)]
WORKLOADS = ["mlp_b1", "mlp_b64", "cnn_b1", "cnn_b32", "mobilenet_v2_b1", "mobilenet_v3_small_b1", "lraspp_b1",
             "transformer_b1", "mlp_int8_b64", "mobilenet_v2_int8_b1"]
WL_GROUP = {"mlp_b1": "mlp", "mlp_b64": "mlp", "cnn_b1": "cnn", "cnn_b32": "cnn", "mobilenet_v2_b1": "mobilenet",
            "mobilenet_v3_small_b1": "mnv3", "lraspp_b1": "seg",  # issue 23's rows, each its own group
            "transformer_b1": "transformer", "mlp_int8_b64": "int8", "mobilenet_v2_int8_b1": "int8"}
WL_MODEL = {"mlp_b1": "mlp", "mlp_b64": "mlp", "cnn_b1": "cnn", "cnn_b32": "cnn", "mobilenet_v2_b1": "mobilenet_v2",
            "mobilenet_v3_small_b1": "mobilenet_v3_small", "lraspp_b1": "lraspp_mobilenet_v3_large",
            "transformer_b1": "transformer", "mlp_int8_b64": "mlp_qdq", "mobilenet_v2_int8_b1": "mobilenet_v2_qdq"}
# issue 24: mlp_int8_b64 is the MLP quantized to QDQ int8 by bench/qdq_model.py (from make_models.py's
# MLP); lithe and onnxruntime run the same mlp_qdq.onnx, and lithe's float32 mlp_b64 row is its other peer.
# mobilenet_v2_int8_b1: make_models.py's mobilenet_v2 quantized by the native `lithe quantize --calibrate` (static,
# per-channel; calibrated on its batch-1 input) and written back as QDQ ONNX (`lithe convert --to-onnx`): the
# same file for lithe and onnxruntime, lithe's float32 mobilenet_v2_b1 row its other peer
# the training workloads and their --only groups (make_models.py's TRAIN writes all but the MLP's files)
TRAIN_WLS = {"mlp_train_b64": "train", "cnn_train_b32": "train-cnn", "mobilenet_v2_train_b8": "train-mnv2",
             "transformer_train_b8": "train-transformer"}
TRAIN_MODEL = {"mlp_train_b64": "mlp", "cnn_train_b32": "cnn", "mobilenet_v2_train_b8": "mobilenet_v2",
               "transformer_train_b8": "transformer"}
# lithe's training rows (lithe bench --train --adam KIND; bench/runners/lithe_js.mjs writes the same)
TRAIN_ADAM = {"thinc": "Adam (Thinc defaults: grad_clip 1, averages)",
              "torch": "Adam as PyTorch's work (no clip, no averages, no L2)"}
# The single-core fp32 FMA peak, measured here by bench/gemm/peak.c (the GEMM table's 100 %);
# None until measured (the report then says so).
PEAK = {}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="a smoke test: 1 warm-up and 3 timed runs each, 1 round")
    p.add_argument("--only", default=",".join(GROUPS), help="comma-separated subset of " + ",".join(GROUPS))
    p.add_argument("--threads", type=int, action="append", default=[],
                   help="also run the runners that take a thread count with N threads (repeatable)")
    p.add_argument("--out", help="the report (default bench/results.md; build/bench/results-quick.md with --quick)")
    p.add_argument("--max-s", type=float, default=15.0,
                   help="cap per measurement: a slow runner stops timing after S seconds and >= 5 runs")
    p.add_argument("--rounds", type=int, default=1,
                   help="run every runner once per round, N rounds, in an order rotated each round; ratios are "
                   "the median of the per-round ratios, met when their lower quartile clears the bar")
    p.add_argument("--webgpu", action="store_true",
                   help="also run bench/runners/webgpu.mjs: lithe's WebGPU module beside tfjs-backend-webgpu and "
                   "onnxruntime-web's WebGPU EP in Chromium on one adapter (SwiftShader here: minutes; not in the "
                   "default run nor in --quick's CI smoke test unless asked for)")
    p.add_argument("--browser", action="store_true",
                   help="also run bench/runners/lithe_browser.mjs in Debian's Chromium (playwright-core): the npm "
                   "package's SIMD128 and relaxed-SIMD cores and, with --threads N, its threads module, beside "
                   "onnxruntime-web in the same browser (not in the default run nor in --quick's CI smoke test)")
    p.add_argument("--chromium", default="/usr/bin/chromium", help="the browser --browser runs")
    p.add_argument("--skip-build", action="store_true", help="use what is already built")
    p.add_argument("--build", default="build/default", help="the native build (CMake preset dir) of lithe")
    a = p.parse_args()
    a.only = [g for g in a.only.split(",") if g]
    for g in a.only:
        if g not in GROUPS:
            p.error(f"--only: unknown group {g} (groups: {', '.join(GROUPS)})")
    a.threads = sorted({1, *a.threads})
    if a.quick:
        a.rounds = 1  # a smoke test: one pass
    if a.rounds < 1:
        p.error("--rounds: at least 1")
    return a


A = parse_args()
WORK = os.path.join(ROOT, "build", "bench")
BIN = os.path.join(WORK, "bin")
# a --quick run never overwrites the committed results
OUT = os.path.abspath(A.out) if A.out else os.path.join(ROOT, "build/bench/results-quick.md" if A.quick else "bench/results.md")
LITHE = os.path.join(ROOT, A.build, "tools", "lithe", "lithe")
WASI = {"scalar": os.path.join(ROOT, "build", "bench-wasi-scalar", "tools", "lithe", "lithe.wasm"),
        "SIMD128": os.path.join(ROOT, "build", "wasi", "tools", "lithe", "lithe.wasm")}
JS_WASM = os.path.join(ROOT, "build", "wasm-simd", "bindings", "js", "lithe-simd.wasm")
# issue 29: the npm threads module (preset wasm-threads), run at --threads N > 1 beside onnxruntime-web's numThreads=N
JS_THREADS_WASM = os.path.join(ROOT, "build", "wasm-threads", "bindings", "js", "lithe-simd-threads.wasm")
# --browser (issue 29): the relaxed-SIMD core (preset wasm-relaxed) and each core's importer module
JS_IMPORTERS = os.path.join(ROOT, "build", "wasm-simd", "bindings", "js", "lithe-importers-simd.wasm")
JS_RELAXED = {"core": os.path.join(ROOT, "build", "wasm-relaxed", "bindings", "js", "lithe-relaxed-simd.wasm"),
              "importers": os.path.join(ROOT, "build", "wasm-relaxed", "bindings", "js",
                                        "lithe-importers-relaxed-simd.wasm")}
# the native CLI built with -DLITHE_XNNPACK=ON (where libxnnpack-dev is installed): inference rows only
XNN_BUILD = os.path.join("build", "bench-xnnpack")
XNN = os.path.join(ROOT, XNN_BUILD, "tools", "lithe", "lithe")
RESULTS, STEPS, FAILURES = [], [], []
ROUND = [1]  # the round being run (--rounds)


# glibc's malloc with its heap kept: no mmap per large block and no trim, so a runner's multi-MB
# temporaries are not unmapped and faulted in again every step. PyTorch's training step is bimodal by
# glibc's dynamic mmap threshold (bench/history.md, session 13: the CNN b32 step 7-9 ms in this mode,
# 20-25 ms in the other, within one process), so the training rows run PyTorch a third time in this mode:
# the peer at its best, what the PyTorch CPU tuning guides get with jemalloc / tcmalloc.
GLIBC_HEAP_KEPT = {"MALLOC_MMAP_THRESHOLD_": "1000000000", "MALLOC_TRIM_THRESHOLD_": "100000000000"}
GLIBC_HEAP_KEPT_KEYS = tuple(GLIBC_HEAP_KEPT)
GLIBC_HEAP_KEPT_LABEL = "glibc heap kept (MALLOC_MMAP_THRESHOLD_=1e9, MALLOC_TRIM_THRESHOLD_=1e11)"


def base_env(threads):
    """Every runner is forced to `threads` threads through every knob its libraries read."""
    env = dict(os.environ)
    for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "BLIS_NUM_THREADS", "MKL_NUM_THREADS", "LITHE_NUM_THREADS"):
        env[k] = str(threads)
    for k in ("OPENBLAS_CORETYPE", "BLIS_ARCH_TYPE") + GLIBC_HEAP_KEPT_KEYS:
        env.pop(k, None)
    env["NODE_PATH"] = ":".join(filter(None, [env.get("NODE_PATH"), "/usr/share/nodejs"]))
    return env


def has_avx512():
    """Whether this CPU runs AVX-512F: the forced SkylakeX / skx kernels of OpenBLAS and blis need it
    (on a CPU without it they stop with SIGILL, which is no measurement)."""
    try:
        with open("/proc/cpuinfo") as f:
            return any(line.startswith("flags") and " avx512f" in line for line in f)
    except OSError:
        return False


def forced_kernel_skipped(name, env):
    """True (and the row recorded as skipped, with the reason) when env forces an AVX-512 kernel on a
    CPU without AVX-512."""
    if ("OPENBLAS_CORETYPE" in env or "BLIS_ARCH_TYPE" in env) and not has_avx512():
        FAILURES.append(f"{name}: skipped: this CPU has no AVX-512, which the forced SkylakeX kernel needs")
        print(f"[bench] {name}: skipped (no AVX-512 on this CPU)", flush=True)
        return True
    return False


def step(name, cmd, env=None, timeout=1800, cwd=ROOT):
    """Runs one command, records its time, returns its stdout ('' on failure, recorded)."""
    t0 = time.time()
    if A.rounds > 1:
        name = f"{name} (round {ROUND[0]})"
    print(f"[bench] {name}", flush=True)
    try:
        r = subprocess.run(cmd, cwd=cwd, env=env or base_env(1), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=timeout)
        out, rc, err = r.stdout, r.returncode, r.stderr
    except subprocess.TimeoutExpired as e:
        out, rc, err = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or ""), -1, "timeout"
    STEPS.append((name, time.time() - t0))
    if rc != 0:
        msg = (err.strip().splitlines() or ["?"])[-1][:300]
        FAILURES.append(f"{name}: exit {rc}: {msg}")
        print(f"[bench]   failed: {msg}", flush=True)
    return out


def record(rec):
    """One measurement (or a runner's error / skip), tagged with the round that made it."""
    RESULTS.append(dict(rec, round=ROUND[0]))


def results_from(out):
    for line in out.splitlines():
        if line.startswith("RESULT "):
            rec = json.loads(line[7:])
            if ROUND[0] > 1 and ("error" in rec or "skipped" in rec):
                continue  # said once
            if "error" in rec:
                FAILURES.append(f"{rec['runner']} {rec['workload']}: {rec['error']}")
            if "skipped" in rec:
                FAILURES.append(f"{rec['runner']} {rec['workload']}: skipped: {rec['skipped']}")
            record(rec)


KV = re.compile(r"(\w+)=(\S+)")


def kv(out):
    d = {}
    for k, v in KV.findall(out):
        d[k] = v
    return d


def stats_of(d):
    return {k: float(d[k]) for k in ("median_ms", "min_ms", "max_ms", "mean_ms") if k in d} | \
        {k: int(d[k]) for k in ("runs", "warmup_runs") if k in d}


def timing_flags():
    return (["--quick"] if A.quick else []) + ["--max-s", str(A.max_s)]


def err_vs(path_y, path_ref):
    try:
        y, ref = numpy.load(path_y).astype(numpy.float64), numpy.load(path_ref).astype(numpy.float64)
        if y.shape != ref.shape:
            return {"err": None, "ref_max": None}
        return {"err": float(numpy.abs(y - ref).max()), "ref_max": float(numpy.abs(ref).max())}
    except (OSError, ValueError):
        return {"err": None, "ref_max": None}


# ---- building ----

def build():
    if A.skip_build:
        return
    env = base_env(1)
    if A.webgpu:  # lithe-webgpu.wasm (preset wasm-webgpu) and the models its runner predicts
        step("cmake --preset wasm-webgpu", ["cmake", "--preset", "wasm-webgpu"], env)
        step("build lithe-webgpu.wasm", ["cmake", "--build", "--preset", "wasm-webgpu", "--target", "lithe_js"], env)
    # native lithe: the CLI only (the `default` preset: Release, gcc; kernels chosen at run time)
    preset = os.path.basename(A.build)
    if not os.path.exists(os.path.join(ROOT, A.build, "build.ninja")):
        step(f"cmake --preset {preset}", ["cmake", "--preset", preset], env)
    # the command, and liblithe.so for make_models.py's export (lithe's Python package)
    step("build lithe (native)", ["cmake", "--build", A.build, "--target", "lithe_cli", "lithe", "-j2"], env)
    # WASI: the wasi preset (SIMD128) and the same without it (build/bench-wasi-scalar)
    if not os.path.exists(os.path.join(ROOT, "build/wasi/build.ninja")):
        step("cmake --preset wasi", ["cmake", "--preset", "wasi"], env)
    step("build lithe.wasm (WASI, SIMD128)", ["cmake", "--build", "build/wasi", "--target", "lithe_cli", "-j2"], env)
    if not os.path.exists(os.path.join(ROOT, "build/bench-wasi-scalar/build.ninja")):
        step("cmake wasi without SIMD", ["cmake", "--preset", "wasi", "-B", "build/bench-wasi-scalar",
                                         "-DCMAKE_C_FLAGS="], env)
    step("build lithe.wasm (WASI, scalar)", ["cmake", "--build", "build/bench-wasi-scalar", "--target", "lithe_cli",
                                             "-j2"], env)
    if any(g in A.only for g in ("mlp", "cnn", "mobilenet", "mnv3", "seg", "transformer")) and os.path.exists("/usr/include/xnnpack.h"):
        # the same CLI with XNNPACK's operators for the prepared ops where they measured faster (off by default)
        if not os.path.exists(os.path.join(ROOT, XNN_BUILD, "build.ninja")):
            step("cmake LITHE_XNNPACK=ON", ["cmake", "--preset", preset, "-B", XNN_BUILD, "-DLITHE_XNNPACK=ON",
                                               "-DLITHE_CUDA=OFF", "-DLITHE_VULKAN=OFF"], env)  # the CPU CLI only
        step("build lithe (native, LITHE_XNNPACK=ON)", ["cmake", "--build", XNN_BUILD, "--target", "lithe_cli", "-j2"], env)
    if any(g != "gemm" for g in A.only):
        # the npm package's SIMD build (Emscripten)
        if not os.path.exists(os.path.join(ROOT, "build/wasm-simd/build.ninja")):
            step("cmake --preset wasm-simd", ["cmake", "--preset", "wasm-simd"], env)
        step("build lithe-simd.wasm (npm)", ["cmake", "--build", "build/wasm-simd", "-j2"], env)
        if A.browser:  # issue 29: the relaxed-SIMD core, measured in Chromium
            if not os.path.exists(os.path.join(ROOT, "build/wasm-relaxed/build.ninja")):
                step("cmake --preset wasm-relaxed", ["cmake", "--preset", "wasm-relaxed"], env)
            step("build lithe-relaxed-simd.wasm (npm)", ["cmake", "--build", "build/wasm-relaxed", "-j2"], env)
        if any(t > 1 for t in A.threads):  # issue 29: the npm threads module
            if not os.path.exists(os.path.join(ROOT, "build/wasm-threads/build.ninja")):
                step("cmake --preset wasm-threads", ["cmake", "--preset", "wasm-threads"], env)
            step("build lithe-simd-threads.wasm (npm)", ["cmake", "--build", "build/wasm-threads", "-j2"], env)
        if not os.path.exists(os.path.join(BENCH, "node_modules/onnxruntime-node")):
            # onnxruntime-node's install script fetches optional CUDA files; its CPU binaries are in the package
            step("npm ci (bench)", ["npm", "ci", "--no-audit", "--no-fund"], dict(env, ONNXRUNTIME_NODE_INSTALL="skip"),
                 cwd=BENCH)
        # only the models the asked-for groups run (make_models.py merges models.json)
        models = sorted({WL_MODEL[wl] for wl in WORKLOADS if WL_GROUP[wl] in A.only} |
                        {TRAIN_MODEL[wl] for wl in train_wls(A.only)} | ({"mlp", "mobilenet_v2"} if "int8" in A.only else set()))
        # (the .lithe export goes through lithe's Python package, so through this build's liblithe.so)
        lib = os.path.join(ROOT, A.build, "liblithe.so")
        step("make_models.py", [PY, os.path.join(BENCH, "make_models.py"), WORK, "--only", ",".join(models)],
             dict(env, LITHE_LIBRARY=lib) if os.path.exists(lib) else env)
        if "int8" in A.only:
            step("qdq_model.py", [PY, os.path.join(BENCH, "qdq_model.py"), WORK], env)
            w = functools.partial(os.path.join, WORK)
            step("lithe quantize mobilenet_v2", [LITHE, "quantize", w("mobilenet_v2.onnx"), "--calibrate",
                                                 w("mobilenet_v2_b1_x.npy"), "--output", w("mobilenet_v2_int8.lithe")], env)
            step("lithe convert mobilenet_v2_qdq.onnx", [LITHE, "convert", w("mobilenet_v2_int8.lithe"), "--to-onnx",
                                                         w("mobilenet_v2_qdq.onnx")], env)
            for f in ("x", "ref"):
                shutil.copyfile(w(f"mobilenet_v2_b1_{f}.npy"), w(f"mobilenet_v2_int8_b1_{f}.npy"))
    if "gemm" in A.only:
        os.makedirs(BIN, exist_ok=True)
        flags = ["gcc", "-O2", "-std=c11", "-Wall", "-Wextra", "-I/usr/include/x86_64-linux-gnu/openblas-pthread"]
        step("build gemm_openblas", flags + [os.path.join(BENCH, "gemm/gemm_openblas.c"), "-o",
                                             os.path.join(BIN, "gemm_openblas"), "-lopenblas"], env)
        step("build gemm_xnnpack", flags + [os.path.join(BENCH, "gemm/gemm_xnnpack.c"), "-o",
                                            os.path.join(BIN, "gemm_xnnpack"), "-lXNNPACK", "-lpthreadpool", "-lm"], env)
        step("build peak", flags + [os.path.join(BENCH, "gemm/peak.c"), "-o", os.path.join(BIN, "peak")], env)


# ---- lithe ----

def lithe_cmd(kind):
    """The lithe command line for a kind: native, or WASI (scalar / SIMD128) under Node."""
    if kind == "native":
        return [LITHE]
    if kind == "xnnpack":
        return [XNN]
    return ["node", os.path.join(ROOT, "tools/lithe/run-wasi.mjs"), WASI[kind]]


def lithe_name(kind):
    return {"native": "lithe (native CLI)", "xnnpack": "lithe (native CLI, LITHE_XNNPACK=ON)",
            "scalar": "lithe (WASI, scalar wasm)", "SIMD128": "lithe (WASI, SIMD128 wasm)"}[kind]


def lithe_kinds(threads):
    kinds = ["native"] + (["scalar", "SIMD128"] if threads == 1 else [])
    return [k for k in kinds if k == "native" or os.path.exists(WASI[k])]


def lithe_gemm(kind, wl, threads):
    out = step(f"lithe gemm {kind} {wl} t{threads}", lithe_cmd(kind) + [
        "bench", "--gemm", wl, "--threads", str(threads)] + timing_flags(), base_env(threads))
    d = kv(out)
    if "median_ms" in d:
        record({"group": "gemm", "workload": wl, "runner": lithe_name(kind),
                "impl": "native" if kind == "native" else "wasm", "threads": threads,
                "config": f"gemm primitive, NT, threads={d.get('threads')}", **stats_of(d),
                "gflops": float(d["gflops"])})


def lithe_gemm_jobs(threads):
    return [(f"lithe gemm {kind} {m}x{n}x{k} t{threads}", functools.partial(lithe_gemm, kind, f"{m}x{n}x{k}", threads))
            for kind in lithe_kinds(threads) for (m, n, k) in GEMMS]


def lithe_infer(kind, wl, file, ref, how, threads):
    impl = "native" if kind in ("native", "xnnpack") else "wasm"
    y = os.path.join(WORK, f"out_{kind}_{threads}_{wl}_{file}.npy")
    if os.path.exists(y):
        os.remove(y)
    out = step(f"lithe {kind} {wl} {file} t{threads}", lithe_cmd(kind) + [
        "bench", os.path.join(WORK, file), "--input", os.path.join(WORK, f"{wl}_x.npy"), "--output", y,
        "--threads", str(threads)] + timing_flags(), base_env(threads))
    d = kv(out)
    if "median_ms" in d:
        record({"group": "infer", "workload": wl, "runner": lithe_name(kind), "impl": impl,
                "threads": threads, "config": f"{how}, threads={d.get('threads')}", **stats_of(d),
                **err_vs(y, os.path.join(WORK, ref)),
                "ref": "torch output, same ONNX file" if file.endswith(".onnx")
                else "softmax(torch logits), same weights"})


def train_files(wl):
    """(model file, input, labels or None, config) of a training workload (make_models.py writes them)."""
    if wl == "mlp_train_b64":
        return "mlp.lithe", "train_x.npy", "train_y.npy", "mlp.lithe, categorical cross-entropy"
    labels = None if wl.startswith("transformer") else f"{wl}_y.npy"
    return (f"{wl}.onnx", f"{wl}_x.npy", labels,
            f"graph layer (.onnx), {'categorical cross-entropy' if labels else 'L2 distance'}")


def lithe_train(kind, wl, adam, threads):
    file, x, labels, cfg = train_files(wl)
    out = step(f"lithe {kind} train {wl}{'' if adam == 'thinc' else ' (Adam as PyTorch)'} t{threads}",
               lithe_cmd(kind) + ["bench", os.path.join(WORK, file), "--train", "--adam", adam, "--input",
                                  os.path.join(WORK, x)] + (["--labels", os.path.join(WORK, labels)] if labels else [])
               + ["--threads", str(threads)] + timing_flags(), base_env(threads))
    d = kv(out)
    if "median_ms" in d:
        record({"group": "train", "workload": wl, "runner": lithe_name(kind),
                "impl": "native" if kind == "native" else "wasm", "threads": threads,
                "config": f"{cfg}, {TRAIN_ADAM[adam]}, threads={d.get('threads')}", **stats_of(d),
                "first_loss": float(d.get("first_cross_entropy", "nan"))})


def train_wls(groups):
    return [wl for wl, g in TRAIN_WLS.items() if g in groups]


def lithe_model_jobs(threads, groups):
    J = []
    # XNNPACK's operators serve 1-thread inference only (docs/performance.md): no row at 2 threads
    xnn = ["xnnpack"] if threads == 1 and os.path.exists(XNN) else []
    for kind in lithe_kinds(threads) + xnn:
        for wl in WORKLOADS:
            if WL_GROUP[wl] not in groups:
                continue
            files = [(f"{WL_MODEL[wl]}.onnx", f"{wl}_ref.npy", "graph layer (.onnx)")]
            if WL_MODEL[wl] == "mlp":
                files.append(("mlp.lithe", f"{wl}_softmax_ref.npy", "native layers (mlp.lithe)"))
            for file, ref, how in files:
                J.append((f"lithe {kind} {wl} {file} t{threads}",
                          functools.partial(lithe_infer, kind, wl, file, ref, how, threads)))
        if kind == "xnnpack":
            continue
        for wl in train_wls(groups):
            # WebAssembly trains the MLP and the CNN (what tfjs-wasm can be asked about), SIMD128 only
            # for the CNN; Thinc's Adam defaults (clipping, averages), and natively also Adam doing
            # torch.optim.Adam's work (no clipping, no averages, no L2): the PyTorch peer's like for like
            if kind != "native" and wl not in ("mlp_train_b64", "cnn_train_b32") or \
                    (kind == "scalar" and wl != "mlp_train_b64"):
                continue
            for adam in ("thinc", "torch") if kind == "native" else ("thinc",):
                J.append((f"lithe {kind} train {wl} {adam} t{threads}",
                          functools.partial(lithe_train, kind, wl, adam, threads)))
    if threads == 1 and os.path.exists(JS_WASM):
        wls = [wl for wl in WORKLOADS if WL_GROUP[wl] in groups]
        twls = [wl for wl in train_wls(groups) if wl in ("mlp_train_b64", "cnn_train_b32")]
        only = ",".join(g for g, on in (("infer", bool(wls)), ("train", bool(twls))) if on)
        if only:
            J.append(("lithe npm (SIMD128)", functools.partial(runner_json, "lithe npm (SIMD128)", [
                "node", os.path.join(BENCH, "runners/lithe_js.mjs"), "--dir", WORK, "--wasm", JS_WASM, "--only", only,
                "--workloads", ",".join(wls or ["mlp_b1"]), "--train-workloads", ",".join(twls or ["mlp_train_b64"])]
                + timing_flags(), base_env(1))))
    # issue 29: the npm threads module with N threads (N - 1 worker_threads), inference only
    if threads > 1 and os.path.exists(JS_THREADS_WASM):
        wls = [wl for wl in WORKLOADS if WL_GROUP[wl] in groups]
        if wls:
            name = f"lithe npm (SIMD128 threads) t{threads}"
            J.append((name, functools.partial(runner_json, name, [
                "node", os.path.join(BENCH, "runners/lithe_js.mjs"), "--dir", WORK, "--wasm", JS_THREADS_WASM,
                "--threads", str(threads), "--only", "infer", "--workloads", ",".join(wls)] + timing_flags(),
                base_env(threads))))
    J += browser_jobs(threads, groups)
    return J


def browser_jobs(threads, groups):
    """--browser: lithe_browser.mjs, one Chromium per variant and round (so that rounds rotate them with
    the other runners): at 1 thread the SIMD128 core, the relaxed-SIMD core and onnxruntime-web with
    numThreads=1; at N > 1 threads the threads module and onnxruntime-web with numThreads=N. The int8 QDQ
    workloads too: the relaxed-SIMD core's int8 GEMM (i32x4.relaxed_dot_i8x16_i7x16_add_s) against the
    SIMD128 one's is a row of its own (issue 24 item 6, issue 29 item 6)."""
    wls = [wl for wl in WORKLOADS if WL_GROUP[wl] in groups]
    if not A.browser or not wls or not os.path.exists(JS_WASM):
        return []
    variants = ["simd", "relaxed", "ort"] if threads == 1 else ["threads", "ort-threads"]
    if threads > 1 and not os.path.exists(JS_THREADS_WASM):
        variants.remove("threads")
    if threads == 1 and not os.path.exists(JS_RELAXED["core"]):
        variants.remove("relaxed")
    cmd = ["node", os.path.join(BENCH, "runners/lithe_browser.mjs"), "--dir", WORK, "--chromium", A.chromium,
           "--simd", JS_WASM, "--importers", JS_IMPORTERS, "--threads", str(threads),
           "--ort", os.path.join(BENCH, "node_modules/onnxruntime-web/dist"), "--workloads", ",".join(wls)]
    if os.path.exists(JS_RELAXED["core"]):
        cmd += ["--relaxed", JS_RELAXED["core"], "--relaxed-importers", JS_RELAXED["importers"]]
    if threads > 1 and os.path.exists(JS_THREADS_WASM):
        cmd += ["--threads-wasm", JS_THREADS_WASM]
    cmd += ["--quick"] if A.quick else ["--max-s", str(A.max_s)]
    return [(f"chromium {v} t{threads}", functools.partial(runner_json, f"chromium {v} t{threads}",
                                                           cmd + ["--variants", v], base_env(threads)))
            for v in variants]


def runner_json(name, cmd, env):
    """A runner that prints RESULT lines of JSON (the Node and Python runners)."""
    results_from(step(name, cmd, env))


# ---- peers ----

def run_peak():
    d = kv(step("peak FMA throughput", [os.path.join(BIN, "peak")]))
    for isa in ("avx512", "avx2"):
        if f"peak_{isa}_gflops" in d and float(d[f"peak_{isa}_gflops"]) > 0:
            PEAK[isa] = max(PEAK.get(isa, 0.0), float(d[f"peak_{isa}_gflops"]))


def peak():
    return max(PEAK.values()) if PEAK else None


def pct(gflops, threads=1):
    """Share of the measured peak of `threads` cores."""
    return f" ({gflops / (peak() * threads):.0%})" if peak() else ""


def peer_gemm(name, exe, extra_env, cfg, m, n, k, threads):
    wl = f"{m}x{n}x{k}"
    out = step(f"{exe} {wl} {cfg} t{threads}", [os.path.join(BIN, exe), str(m), str(n), str(k), str(threads)] +
               (["--quick"] if A.quick else []), base_env(threads) | extra_env)
    d = kv(out)
    if "median_ms" in d:
        if "kernel" in d:
            cfg = cfg.replace("auto-detected", f"auto-detected ({d['kernel']})")
        record({"group": "gemm", "workload": wl, "runner": name, "impl": "native", "threads": threads,
                "config": cfg, **stats_of(d), "gflops": float(d["gflops"]),
                "max_rel_err": float(d.get("max_rel_err", "nan"))})


def peer_gemm_jobs(threads):
    J = []
    for (m, n, k) in GEMMS:
        for name, exe, extra_env, cfg in (
                ("OpenBLAS 0.3.21", "gemm_openblas", {}, "cblas_sgemm NT, kernel auto-detected"),
                ("OpenBLAS 0.3.21", "gemm_openblas", {"OPENBLAS_CORETYPE": "SkylakeX"},
                 "cblas_sgemm NT, OPENBLAS_CORETYPE=SkylakeX"),
                ("XNNPACK (Debian 2022-02-16)", "gemm_xnnpack", {}, "fully_connected_nc_f32, weights packed at creation")):
            if not forced_kernel_skipped(f"{exe} {m}x{n}x{k} {cfg} t{threads}", extra_env):
                J.append((f"{exe} {m}x{n}x{k} {cfg} t{threads}",
                          functools.partial(peer_gemm, name, exe, extra_env, cfg, m, n, k, threads)))
    return J


def peer_model_jobs(threads, groups):
    J = []
    wls = [wl for wl in WORKLOADS if WL_GROUP[wl] in groups]
    twls = train_wls(groups)
    qwls = [wl for wl in wls if WL_GROUP[wl] == "int8"]  # the QDQ file: onnxruntime only (the others rebuild models)
    tf = timing_flags()
    env = base_env(threads)

    def add(name, cmd, extra=None):
        J.append((name, functools.partial(runner_json, name, cmd, env | (extra or {}))))
    if wls:
        for backend in ("node", "web"):
            add(f"onnxruntime-{backend} t{threads}", [
                "node", os.path.join(BENCH, "runners/ort.mjs"), "--backend", backend, "--dir", WORK, "--threads",
                str(threads), "--workloads", ",".join(wls)] + tf)
    wls = [wl for wl in wls if wl not in qwls]
    only = ",".join(g for g, on in (("infer", bool(wls)), ("train", bool(twls))) if on)
    if not only:
        return J
    tw = ["--train-workloads", ",".join(twls or ["mlp_train_b64"])]
    if threads == 1:
        # tfjs rebuilds the MLP and the CNN only (it says so for the others)
        add("tfjs wasm", ["node", os.path.join(BENCH, "runners/tfjs.mjs"), "--dir", WORK, "--only", only,
                          "--workloads", ",".join(wls or ["mlp_b1"]), "--train-workloads",
                          ",".join([wl for wl in twls if wl in ("mlp_train_b64", "cnn_train_b32")] or ["mlp_train_b64"])]
            + tf)
    for label, extra in (("", {}), ("OPENBLAS_CORETYPE=SkylakeX", {"OPENBLAS_CORETYPE": "SkylakeX"})):
        if forced_kernel_skipped(f"pytorch {label} t{threads}", extra):
            continue
        add(f"pytorch {label} t{threads}", [
            PY, os.path.join(BENCH, "runners/torch_bench.py"), "--dir", WORK, "--threads", str(threads), "--only", only,
            "--workloads", ",".join(wls or ["mlp_b1"]), "--label", label] + tw + tf, extra)
    if twls and threads == 1:
        extra = {"OPENBLAS_CORETYPE": "SkylakeX"} | GLIBC_HEAP_KEPT
        label = f"OPENBLAS_CORETYPE=SkylakeX, {GLIBC_HEAP_KEPT_LABEL}"
        if not forced_kernel_skipped(f"pytorch {label}", extra):
            add(f"pytorch {label}", [
                PY, os.path.join(BENCH, "runners/torch_bench.py"), "--dir", WORK, "--threads", "1", "--only", "train",
                "--workloads", "mlp_b1", "--label", label] + tw + tf, extra)
    mlp_wls = [wl for wl in wls if WL_MODEL[wl] == "mlp"]
    if threads == 1 and (mlp_wls or "mlp_train_b64" in twls):
        # blis 0.9's arch ids: 0 is skx (SkylakeX, AVX-512)
        for label, extra in (("", {}), ("BLIS_ARCH_TYPE=0 (skx)", {"BLIS_ARCH_TYPE": "0"})):
            if forced_kernel_skipped(f"thinc {label}", extra):
                continue
            add(f"thinc {label}", [
                PY, os.path.join(BENCH, "runners/thinc_bench.py"), "--dir", WORK, "--only",
                ",".join(g for g, on in (("infer", bool(mlp_wls)), ("train", "mlp_train_b64" in twls)) if on),
                "--workloads", ",".join(mlp_wls or ["mlp_b1"]), "--label", label] + tf, extra)
    return J


# ---- the report ----

def fmt(x):
    if x is None or x != x:
        return "n/a"
    if x >= 100:
        return f"{x:.0f}"
    if x >= 10:
        return f"{x:.1f}"
    if x >= 1:
        return f"{x:.2f}"
    return f"{x:.3f}"


def row_key(r):
    return (r["runner"], r["config"].split(", threads=")[0], r["threads"])


def row_name(key):
    runner, config, threads = key
    return f"{runner} — {config}, {threads} thr"


def cmd_out(cmd):
    try:
        return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return "?"


def machine():
    info = {}
    for line in cmd_out(["lscpu"]).splitlines():
        k, _, v = line.partition(":")
        info[k.strip()] = v.strip()
    flags = [f for f in ("avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16")
             if f in info.get("Flags", "").split()]
    mem = cmd_out(["sh", "-c", "free -g | awk '/Mem:/ {print $2}'"])
    load = open("/proc/loadavg").read().split()[:3] if os.path.exists("/proc/loadavg") else ["?"]
    return (f"{info.get('Model name', '?')} ({info.get('Vendor ID', '?')} family {info.get('CPU family', '?')} "
            f"model {info.get('Model', '?')}), {info.get('CPU(s)', '?')} CPUs, {info.get('Thread(s) per core', '?')} "
            f"thread/core, {mem} GiB RAM; SIMD: {' '.join(flags)}; kernel {platform.release()}; load average at the "
            f"end {' '.join(load)}")


def versions():
    v = {"node": cmd_out(["node", "--version"]), "python": cmd_out([PY, "--version"]),
         "gcc": cmd_out(["gcc", "-dumpfullversion"]), "clang": (cmd_out(["clang", "--version"]).splitlines() or ["?"])[0],
         "emscripten": (cmd_out(["emcc", "--version"]).splitlines() or ["?"])[0]}
    for pkg in ("onnxruntime-node", "onnxruntime-web", "@tensorflow/tfjs-core", "@tensorflow/tfjs-backend-wasm",
                "@tensorflow/tfjs-layers"):
        try:
            v[f"npm {pkg}"] = json.load(open(os.path.join(BENCH, "node_modules", pkg, "package.json")))["version"]
        except OSError:
            v[f"npm {pkg}"] = "not installed"
    for deb in ("python3-torch", "python3-torchvision", "python3-thinc", "python3-cython-blis", "libopenblas0-pthread",
                "libxnnpack0"):
        v[f"deb {deb}"] = cmd_out(["dpkg-query", "-W", "-f=${Version}", deb]) or "?"
    return v


def table(rows, cols, cell, header):
    lines = ["| " + " | ".join([header] + cols) + " |", "|" + "---|" * (len(cols) + 1)]
    for key in rows:
        lines.append("| " + " | ".join([row_name(key)] + [cell(key, c) for c in cols]) + " |")
    return lines


def report():
    # by: each measurement's median round (what the tables show); rounds: every round's record
    by, rounds = by_round({"key": (row_key(r), r["workload"], r["group"]), "rec": r} for r in RESULTS)
    commit = cmd_out(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"])
    dirty = cmd_out(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"])
    L = ["# lithe benchmark results", "",
         "Generated by `" + " ".join(["bench/run.sh"] + sys.argv[1:]) + "` (bench/README.md explains every row).", "",
         f"- Date (UTC): {datetime.datetime.utcnow():%Y-%m-%d %H:%M}; lithe commit {commit}"
         f"{' (with uncommitted changes)' if dirty else ''}; native build `{A.build}` (CMake preset "
         f"`{os.path.basename(A.build)}`: Release, gcc, kernels picked at run time).",
         f"- Machine: {machine()}.",
         "- The machine may be shared (the load average above includes this run's own processes): compare medians, "
         "look at min–max, and rerun before trusting a ratio near a bar.",
         "- Threads: every runner is forced to the row's thread count: `OMP_NUM_THREADS`, `OPENBLAS_NUM_THREADS`, "
         "`BLIS_NUM_THREADS`, `MKL_NUM_THREADS`, `LITHE_NUM_THREADS` in the environment, plus onnxruntime's `intraOpNumThreads` / "
         "`interOpNumThreads=1` (node) and `env.wasm.numThreads` (web), `torch.set_num_threads`, "
         "`openblas_set_num_threads`, XNNPACK without a thread pool, tfjs-wasm with its threaded binary switched off, "
         "and `lithe bench --threads N`.",
         "- Forced kernels: rows saying `OPENBLAS_CORETYPE=SkylakeX` ran with that variable (OpenBLAS's AVX-512 "
         "kernel; PyTorch's BLAS is Debian's OpenBLAS), rows saying `BLIS_ARCH_TYPE=0 (skx)` with blis forced to its "
         "SkylakeX kernels; other rows let the library detect the CPU.",
         f"- Protocol: one process per runner, one after another; {'--quick: 1 warm-up and 3 timed runs (a smoke test, not a measurement)' if A.quick else 'warm-up >= 5 runs and >= 1 s (V8 tiers wasm up to TurboFan), then >= 30 timed runs and >= 1.5 s (at most 2000)'}; "
         f"a measurement stops after {A.max_s:g} s once it has 5 runs (slow rows show fewer runs). Each run is timed "
         "alone; tables give the median and (min–max) in ms. Latency includes reading the output back to the host.",
         "- Same weights everywhere: bench/make_models.py exports each model once from fixed seeds (torch.onnx.export, "
         "opset 13); every runner reads the same input `.npy` and is checked against PyTorch's output (error tables).",
         ""]
    # GEMM
    gemm_rows = sorted({k for (k, wl, g) in by if g == "gemm"},
                       key=lambda k: (k[2], "WASI" in k[0], not k[0].startswith("lithe"), k))
    cols = [f"{m}x{n}x{k}" for (m, n, k) in GEMMS]
    if gemm_rows:
        L += ["## SGEMM: GFLOP/s at the median (% of the measured peak of the row's cores) and median ms (min–max)", "",
              "Peak: " + (", ".join(f"{isa.upper()} FMA {v:.1f} GFLOP/s" for isa, v in PEAK.items()) +
                          f" (bench/gemm/peak.c: 12 independent FMA chains, best of 25 short runs); 100 % = {peak():.1f}."
                          if PEAK else "not measured.") +
              " peers-measured.md's machine (AMD family 26, Zen 5) had 224 GFLOP/s with AVX-512; compare the CPU "
              "line above before comparing with its figures.", "",
              "C(M,N) = A(M,K) · B(N,K)ᵀ, the fully-connected layout (columns are MxNxK). lithe: `lithe bench --gemm` "
              "through the backend's gemm primitive (packing, if any, inside every call); OpenBLAS packs per call; "
              "XNNPACK packs the weights once, untimed.", ""]
        L += table(gemm_rows, cols, lambda key, c: (
            f"**{fmt(by[(key, c, 'gemm')]['gflops'])}**{pct(by[(key, c, 'gemm')]['gflops'], key[2])}; "
            f"{fmt(by[(key, c, 'gemm')]['median_ms'])} ({fmt(by[(key, c, 'gemm')]['min_ms'])}–"
            f"{fmt(by[(key, c, 'gemm')]['max_ms'])})" if (key, c, "gemm") in by else "n/a"), "runner — config")
        L.append("")
    # inference
    def impl_of(key):
        return next(r["impl"] for (k, w, g), r in by.items() if k == key)
    inf_rows = sorted({k for (k, wl, g) in by if g == "infer"},
                      key=lambda k: (k[2], impl_of(k) != "native", not k[0].startswith("lithe"), k[0], k[1]))
    inf_cols = [wl for wl in WORKLOADS if any((k, wl, "infer") in by for k in inf_rows)]
    if inf_rows:
        L += ["## Inference latency, ms: median (min–max)", ""]
        L += table(inf_rows, inf_cols, lambda key, c: (
            f"**{fmt(by[(key, c, 'infer')]['median_ms'])}** ({fmt(by[(key, c, 'infer')]['min_ms'])}–"
            f"{fmt(by[(key, c, 'infer')]['max_ms'])})" if (key, c, "infer") in by else "n/a"), "runner — config")
        L += ["", "n/a: not run by that runner (tfjs cannot load ONNX: only the MLP and the CNN are rebuilt in "
              "tfjs-layers; Thinc runs the MLP only; `mlp.lithe` rows exist for the MLP only).", ""]
        L += ["### Correctness: max |output − PyTorch| (relative to max |PyTorch|)", ""]

        def errcell(key, c):
            r = by.get((key, c, "infer"))
            if not r or r.get("err") is None:
                return "n/a"
            return f"{r['err']:.1e} ({r['err'] / max(r['ref_max'], 1e-30):.0e} rel)"
        L += table(inf_rows, inf_cols, errcell, "runner — config")
        L += ["", "Reference: PyTorch's output for the same input and weights (for `mlp.lithe` and Thinc, whose model "
              "ends in Softmax: softmax of PyTorch's logits).", ""]
    # training
    tr = [r for (k, wl, g), r in by.items() if g == "train"]  # with --rounds: each row's median round
    if tr:
        L += ["## Training steps, Adam", "",
              "mlp_train_b64: the MLP 784-512-512-10, batch 64, cross-entropy; cnn_train_b32: the LeNet-style CNN, "
              "batch 32, cross-entropy; mobilenet_v2_train_b8: torchvision's mobilenet_v2 (Conv + BatchNorm fused), "
              "batch 8, cross-entropy over its 1000 classes; transformer_train_b8: the encoder, batch 8 x 64 tokens, "
              "an L2 distance to a random target. One step = forward + loss + backward + optimizer update (+ reading "
              "the loss back). Same initial weights and batch everywhere (bench/make_models.py), so the first step's "
              "cross-entropy must agree with PyTorch's.", "",
              "| workload | runner | config | thr | median ms | min | max | runs | first-step cross-entropy |",
              "|---|---|---|---|---|---|---|---|---|"]
        for r in sorted(tr, key=lambda r: (list(TRAIN_WLS).index(r["workload"]), r["threads"],
                                           not r["runner"].startswith("lithe"), r["runner"], r["config"])):
            L.append(f"| {r['workload']} | {r['runner']} | {r['config']} | {r['threads']} | **{fmt(r['median_ms'])}** | "
                     f"{fmt(r['min_ms'])} | {fmt(r['max_ms'])} | {r['runs']} | {r.get('first_loss', float('nan')):.6f} |")
        L.append("")
    # ratios against the bars
    L += ratios(rounds)
    # details
    L += ["## Every measurement", ""] + ([f"{A.rounds} rounds: each measurement's median round (the tables above "
                                        "show it too), and every round's median in round order (spread = worst / best "
                                        "- 1)", ""] if A.rounds > 1 else []) + [
          "| group | workload | runner | config | thr | median ms | min | max | mean | runs | "
          "warm-up | extra |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for k, r in by.items():
        meds = [rounds[k][n]["median_ms"] for n in sorted(rounds[k])]
        if len(meds) > 1:
            r = dict(r, extra=(r.get("extra", "") + "; " if r.get("extra") else "") + "round medians " +
                     " / ".join(fmt(x) for x in meds) + f" (spread {max(meds) / min(meds) - 1:.0%})")
        extra = r.get("extra", "")
        if "gflops" in r:
            extra = f"{r['gflops']:.1f} GFLOP/s" + (f", max rel err {r['max_rel_err']:.1e}" if "max_rel_err" in r else "") + \
                (f"; {extra}" if extra else "")
        L.append(f"| {r['group']} | {r['workload']} | {r['runner']} | {r['config']} | {r['threads']} | "
                 f"{fmt(r['median_ms'])} | {fmt(r['min_ms'])} | {fmt(r['max_ms'])} | {fmt(r.get('mean_ms'))} | "
                 f"{r['runs']} | {r.get('warmup_runs', '')} | {extra} |")
    L += ["", "## Failures and skipped rows", ""]
    L += [f"- {f}" for f in FAILURES] or ["None."]
    L += ["", "## Steps (seconds)", "", "| step | s |", "|---|---|"]
    L += [f"| {n} | {t:.1f} |" for n, t in STEPS]
    L += [f"| **total** | {sum(t for _, t in STEPS):.0f} |", "", "## Versions", "", "| component | version |", "|---|---|"]
    L += [f"| {k} | {v} |" for k, v in versions().items()]
    wg = os.path.join(WORK, "webgpu.md")
    if A.webgpu and os.path.exists(wg):  # bench/runners/webgpu.mjs's section
        with open(wg) as f:
            L += ["", f.read()]
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT + ".tmp", "w") as f:
        f.write("\n".join(L) + "\n")
    os.replace(OUT + ".tmp", OUT)
    with open(os.path.join(WORK, "results.json"), "w") as f:
        json.dump(RESULTS, f, indent=0)
    print(f"[bench] wrote {OUT}")


def ratios(rounds):
    """peer / lithe for the issue's bars (> 1: lithe is faster), per round; rounds: key -> {round: record}."""
    def find(group, wl, runner, config_start, threads=1, prefix=False):
        for (key, w, g), per in rounds.items():
            if g == group and w == wl and (key[0].startswith(runner) if prefix else key[0] == runner) and \
                    key[1].startswith(config_start) and key[2] == threads and \
                    ("Chromium" in key[0]) == ("Chromium" in runner):  # (--browser's rows: their own ratios)
                return per
        return None

    def peer(group, wl, prefix, config_start=""):
        return find(group, wl, prefix, config_start, prefix=True)

    def ms(per):
        return {n: r["median_ms"] for n, r in per.items()}

    def gflops(per):
        return {n: r["gflops"] for n, r in per.items()}
    L = ["## Ratios against the issue's bars (single thread, and lithe's own 2-thread speed-up)", ""] + (
        ["**--quick: these are smoke-test timings (1 warm-up, 3 runs), not measurements; the ratios mean nothing.**",
         ""] if A.quick else []) + [
         "ratio = peer / lithe in each round (medians of that round), i.e. how many times faster lithe is (for GEMM: "
         "lithe GFLOP/s / peer GFLOP/s); the table gives the median of the per-round ratios, their min–max over the "
         f"rounds ({A.rounds} round{'s' if A.rounds > 1 else ''}; every runner ran once per round, in an order rotated "
         "each round) and their lower quartile, which must clear the bar for \"met\". lithe and peer: the medians "
         "over the rounds. The bars are issue 10's and issue 29's \"Done when\". Rows \"2 threads\" (with --threads 2): "
         "the peer is lithe's own 1-thread row of the same model.", "",
         "| workload | lithe row | peer row | lithe | peer | ratio (median) | min–max | lower quartile | bar | met |",
         "|---|---|---|---|---|---|---|---|---|---|"]
    n0 = len(L)

    def add(wl, lrow, prow, lvals, pvals, bar, unit):
        st = ratio_over_rounds(lvals, pvals, higher_is_better=unit == "GFLOP/s")
        if st:
            L.append(f"| {wl} | {lrow} | {prow} | {fmt(st['lithe'])} {unit} | {fmt(st['peer'])} {unit} | "
                     f"**{st['median']:.2f}×** | {st['min']:.2f}–{st['max']:.2f} | {st['q1']:.2f}× | ≥ {bar}× | "
                     f"{'yes' if st['q1'] >= bar else 'no'} |")
    for (m, n, k) in GEMMS:
        wl = f"{m}x{n}x{k}"
        lr = find("gemm", wl, "lithe (native CLI)", "gemm")
        for prefix, cfg, bar in (("OpenBLAS", "cblas_sgemm NT, OPENBLAS_CORETYPE=SkylakeX", 1.0),
                                 ("OpenBLAS", "cblas_sgemm NT, kernel auto-detected", None), ("XNNPACK", "", None)):
            pr = peer("gemm", wl, prefix, cfg)
            # the auto-detected OpenBLAS kernel: the peer where the CPU has no AVX-512 (no SkylakeX row)
            if prefix == "OpenBLAS" and bar is None and (has_avx512() or wl != "1x512x784" and wl != "64x512x784"):
                continue
            if lr and pr and (bar or wl in ("1x512x784", "64x512x784", "1024x1024x1024")):
                add(wl, "lithe native", f"{prefix} {cfg}", gflops(lr), gflops(pr), bar or 1.0, "GFLOP/s")
        if lr and wl == "1024x1024x1024" and peak():
            add(wl, "lithe native", f"85 % of the measured peak ({peak():.1f} GFLOP/s)", gflops(lr),
                {n: 0.85 * peak() for n in lr}, 1.0, "GFLOP/s")
    for wl in WORKLOADS:
        for lname, lcfg, short in (("lithe (native CLI)", "graph layer", "native .onnx"),
                                   ("lithe (native CLI)", "native layers", "native mlp.lithe"),
                                   ("lithe (native CLI, LITHE_XNNPACK=ON)", "graph layer", "native .onnx, XNNPACK")):
            lr = find("infer", wl, lname, lcfg)
            pr = peer("infer", wl, "onnxruntime-node")
            if lr and pr:
                add(wl, short, "onnxruntime-node", ms(lr), ms(pr), 2.0 if wl == "mlp_b1" else 1.0, "ms")
        for lprefix, lcfg, short in (("lithe 0.", "graph layer", "npm SIMD .onnx"),
                                     ("lithe 0.", "native layers", "npm SIMD mlp.lithe"),
                                     ("lithe (WASI, SIMD128", "graph layer", "WASI SIMD .onnx")):
            lr = find("infer", wl, lprefix, lcfg, prefix=True)
            for pprefix in ("onnxruntime-web", "tfjs"):
                pr = peer("infer", wl, pprefix)
                if lr and pr:
                    add(wl, short, pprefix, ms(lr), ms(pr), 1.3, "ms")
        # 2 threads: lithe's own 1-thread median / its 2-thread median (only in a run with --threads 2)
        for lcfg, short in (("graph layer", "native .onnx"), ("native layers", "native mlp.lithe")):
            l2 = find("infer", wl, "lithe (native CLI)", lcfg, threads=2)
            l1 = find("infer", wl, "lithe (native CLI)", lcfg)
            if wl in ("mlp_b64", "cnn_b32") and l1 and l2:
                add(wl, f"{short}, 2 threads", "itself, 1 thread", ms(l2), ms(l1), 1.7, "ms")
    # issue 24: the int8 MLP (QDQ) against lithe's own float32 MLP, same batch (the bar: this VNNI host's;
    # on an AVX2-only host gemm_q8 runs its vpmaddubsw kernel)
    lq, lf = find("infer", "mlp_int8_b64", "lithe (native CLI)", "graph layer"), find("infer", "mlp_b64", "lithe (native CLI)",
                                                                                   "graph layer")
    if lq and lf:
        add("mlp_int8_b64", "native .onnx, QDQ int8", "lithe native .onnx float32 (mlp_b64)", ms(lq), ms(lf), 2.0, "ms")
    # ... and in WebAssembly (bar 1.5: npm SIMD128 and WASI against their own float32 rows), and mobilenet_v2
    for qwl, fwl in (("mlp_int8_b64", "mlp_b64"), ("mobilenet_v2_int8_b1", "mobilenet_v2_b1")):
        for lprefix, short, bar in (("lithe (native CLI)", "native", 2.0), ("lithe 0.", "npm SIMD", 1.5),
                                    ("lithe (WASI, SIMD128", "WASI SIMD", 1.5)):
            if qwl == "mlp_int8_b64" and short == "native":
                continue  # (above)
            lq = find("infer", qwl, lprefix, "graph layer", prefix=short != "native")
            lf = find("infer", fwl, lprefix, "graph layer", prefix=short != "native")
            if lq and lf:
                add(qwl, f"{short} .onnx, QDQ int8", f"lithe {short} .onnx float32 ({fwl})", ms(lq), ms(lf), bar, "ms")
    # issue 29: the npm package against the WASI build of the same C (bar: within 5 %, i.e. WASI median /
    # npm median >= 0.95), and the npm threads module against onnxruntime-web at the same thread count
    def npm_row(wl, threads, threaded):
        return next((per for (key, w, g), per in rounds.items() if g == "infer" and w == wl
                     and key[0].startswith("lithe 0.") and ("threads" in key[0]) == threaded
                     and key[1].startswith("graph layer") and key[2] == threads and "Chromium" not in key[0]), None)
    for wl in WORKLOADS:
        ln, lw = npm_row(wl, 1, False), find("infer", wl, "lithe (WASI, SIMD128 wasm)", "graph layer")
        if ln and lw:
            add(wl, "npm SIMD .onnx", "WASI SIMD .onnx", ms(ln), ms(lw), 0.95, "ms")
        for th in sorted({key[2] for (key, w, g) in rounds if key[2] > 1}):
            lt = npm_row(wl, th, True)
            pt = next((per for (key, w, g), per in rounds.items() if g == "infer" and w == wl
                       and key[0].startswith("onnxruntime-web") and key[2] == th and "Chromium" not in key[0]), None)
            if lt and pt:
                add(wl, f"npm threads .onnx, {th} threads", f"onnxruntime-web, numThreads={th}", ms(lt), ms(pt), 1.3,
                    "ms")
    # --browser (issue 29): in Chromium, the npm package's cores against onnxruntime-web in the same browser
    # (bar 2.0, issue 29's; threads: 1.3 at the same thread count), and the relaxed-SIMD core against the
    # SIMD128 one (bar 1.0: the package picks it by feature detection, so it must not be slower)
    def chromium(wl, what, threads=1):
        return next((per for (key, w, g), per in rounds.items() if g == "infer" and w == wl and "Chromium" in key[0]
                     and key[0].startswith(what) and key[2] == threads), None)
    for wl in WORKLOADS:
        po = chromium(wl, "onnxruntime-web", 1)
        ls = next((per for (key, w, g), per in rounds.items() if g == "infer" and w == wl and
                   key[0].startswith("lithe 0.") and "SIMD128 wasm, Chromium" in key[0] and key[2] == 1), None)
        lx = next((per for (key, w, g), per in rounds.items() if g == "infer" and w == wl and
                   key[0].startswith("lithe 0.") and "relaxed SIMD wasm, Chromium" in key[0] and key[2] == 1), None)
        if ls and po:
            add(wl, "Chromium: npm SIMD128 .onnx", "Chromium: onnxruntime-web, numThreads=1", ms(ls), ms(po), 2.0, "ms")
        if lx and po:
            add(wl, "Chromium: npm relaxed SIMD .onnx", "Chromium: onnxruntime-web, numThreads=1", ms(lx), ms(po), 2.0,
                "ms")
        if lx and ls:
            add(wl, "Chromium: npm relaxed SIMD .onnx", "Chromium: npm SIMD128 .onnx", ms(lx), ms(ls), 1.0, "ms")
        for th in sorted({key[2] for (key, w, g) in rounds if key[2] > 1}):
            lt = next((per for (key, w, g), per in rounds.items() if g == "infer" and w == wl and
                       key[0].startswith("lithe 0.") and "threads wasm, Chromium" in key[0] and key[2] == th), None)
            pt = chromium(wl, "onnxruntime-web", th)
            if lt and pt:
                add(wl, f"Chromium: npm threads .onnx, {th} threads", f"Chromium: onnxruntime-web, numThreads={th}",
                    ms(lt), ms(pt), 1.3, "ms")
    # the training steps: lithe with Thinc's Adam defaults (more work than the peers' Adam: the
    # gradient norm's pass and the averages' stream), and with Adam doing the peers' work
    for wl, bar in (("mlp_train_b64", 1.8), ("cnn_train_b32", 3.0), ("mobilenet_v2_train_b8", 1.5),
                    ("transformer_train_b8", 1.5)):
        file, _, _, cfg = train_files(wl)
        for adam, short in (("thinc", "Thinc's Adam defaults"), ("torch", "Adam as PyTorch's work")):
            lr = find("train", wl, "lithe (native CLI)", f"{cfg}, {TRAIN_ADAM[adam]}")
            for pcfg, pshort in (("OPENBLAS_CORETYPE=SkylakeX", "PyTorch, OpenBLAS SkylakeX"),
                                 (GLIBC_HEAP_KEPT_LABEL, "PyTorch, OpenBLAS SkylakeX, glibc heap kept"),
                                 ("", "PyTorch, OpenBLAS auto-detected")):
                pr = next((per for (key, w, g), per in rounds.items() if g == "train" and w == wl and
                           key[0].startswith("PyTorch") and key[2] == 1 and
                           (key[1].endswith(pcfg) if pcfg else key[1].endswith("set_num_threads(1)"))), None)
                if lr and pr:
                    add(wl, f"native {file}, {short}", pshort, ms(lr), ms(pr), bar, "ms")
            lr = next((per for (key, w, g), per in rounds.items() if g == "train" and w == wl and
                       key[0].startswith("lithe 0.") and key[1].endswith(TRAIN_ADAM[adam])), None)
            pr = peer("train", wl, "tfjs")
            if lr and pr:
                add(wl, f"npm SIMD {file}, {short}", "tfjs wasm", ms(lr), ms(pr), 10.0, "ms")
    if len(L) == n0:
        return []
    return L + ["", "bench/README.md and the notes on issues 10 and 29 give the reason for each miss.", ""]


def run_webgpu():
    """lithe on WebGPU beside the WebGPU peers in Chromium (bench/runners/webgpu.mjs): its RESULT lines,
    and its Markdown section (WORK/webgpu.md) goes into the report."""
    wasm = os.path.join(ROOT, "build/wasm-webgpu/bindings/js/lithe-webgpu.wasm")
    out = step("webgpu: lithe / tfjs-backend-webgpu / onnxruntime-web WebGPU in Chromium",
               ["node", os.path.join(BENCH, "runners/webgpu.mjs"), "--dir", WORK, "--wasm", wasm,
                "--out", os.path.join(WORK, "webgpu.md"), "--max-s", str(A.max_s)] + (["--quick"] if A.quick else []),
               timeout=7200)
    for line in out.splitlines():
        if line.startswith("RESULT "):
            record(json.loads(line[7:]))


def jobs():
    """Every runner of a round, one process each, as (name, function) pairs in the listed order."""
    J = [("webgpu", run_webgpu)] if A.webgpu else []
    model_groups = [g for g in A.only if g != "gemm"]
    for threads in A.threads:
        if "gemm" in A.only:
            if threads == 1:
                J.append(("peak FMA throughput", run_peak))
            J += lithe_gemm_jobs(threads) + peer_gemm_jobs(threads)
        if model_groups:
            J += lithe_model_jobs(threads, model_groups) + peer_model_jobs(threads, model_groups)
    return J


def main():
    t0 = time.time()
    os.makedirs(WORK, exist_ok=True)
    build()
    J = jobs()
    for rnd in range(1, A.rounds + 1):
        ROUND[0] = rnd
        # every runner once per round, the order rotated by a 1/rounds turn each round, so no runner
        # always follows the same one or sits at the same point of a drifting host
        s = (rnd - 1) * len(J) // A.rounds
        for name, fn in J[s:] + J[:s]:
            fn()
    report()
    print(f"[bench] done in {time.time() - t0:.0f} s; {len(FAILURES)} failure(s)/skip(s)")
    # a runner that failed is in the report; the exit status says whether any did
    sys.exit(1 if any("skipped" not in f for f in FAILURES) else 0)


if __name__ == "__main__":
    main()
