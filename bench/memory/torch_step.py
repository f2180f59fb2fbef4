"""PyTorch 1.13 eager's side of bench/memory/run.py: one model x mode in a fresh process, the same
step as mem_step.c (forward at training, loss = sum(Y) / B so dY = 1/B, backward, Adam), with the
resident set before the model is made (after torch is imported), before the first step, and its
high-water mark after (VmRSS / VmHWM).

Usage: torch_step.py MODEL MODE BATCH STEPS   (MODEL: mlp | mobilenet_v2; MODE: full | last)"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import torch  # noqa: E402

import make_models  # noqa: E402


def status_kb(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return -1


def main():
    name, mode, batch, steps = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    torch.set_num_threads(int(os.environ.get("THREADS", "2")))
    rss_start = status_kb("VmRSS")  # the process's own baseline (the interpreter, torch): before the model exists
    m = make_models.build(name)
    m.eval()  # BatchNorm with its running statistics, as the exported (folded) graph lithe trains
    if mode == "last":
        last = m.fc3 if name == "mlp" else m.classifier[1]
        for p in m.parameters():
            p.requires_grad_(False)
        for p in last.parameters():
            p.requires_grad_(True)
    shape = (batch, 784) if name == "mlp" else (batch, 3, 224, 224)
    x = torch.rand(shape)
    opt = torch.optim.Adam([p for p in m.parameters() if p.requires_grad], lr=1e-3)
    rss0 = status_kb("VmRSS")
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        y = m(x)
        if name == "mlp":
            y = torch.softmax(y, -1)  # lithe's MLP ends in Softmax
        loss = y.sum() / batch
        opt.zero_grad(set_to_none=False)
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    print(json.dumps({"mode": mode, "batch": batch, "rss_start_kb": rss_start, "rss_before_kb": rss0, "hwm_kb": status_kb("VmHWM"),
                      "step1_s": times[0], "step_s": sum(times[1:]) / max(1, len(times) - 1)}))


main()
