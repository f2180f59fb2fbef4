"""The reference figures for bench/vulkan_bench.sh: PyTorch's fp32 GEMM (cuBLAS on CUDA) and the
same 784-512-512-10 Relu MLP training step (batch 128, Adam, cross-entropy), on CUDA when
torch sees a GPU, else on the CPU (labelled). Prints lines shaped like lithe_vulkan_bench's.
    python3 bench/vulkan/torch_ref.py [sizes, default 256,1024,4096] [steps, default 50] [--onnx cnn.onnx]
With --onnx it also times a small CNN's forward pass (batch 64, 1x28x28: Conv 32 3x3, ReLU, MaxPool 2,
Conv 64 3x3, ReLU, MaxPool 2, Linear 10) and exports that CNN to the file for lithe's benchmark
(bench/cuda/cuda_bench.sh), so both time the same network."""
import sys
import time

import torch

onnx_out = None
if "--onnx" in sys.argv:
    i = sys.argv.index("--onnx")
    onnx_out = sys.argv[i + 1]
    del sys.argv[i:i + 2]
sizes = [int(s) for s in (sys.argv[1] if len(sys.argv) > 1 else "256,1024,4096").split(",")]
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 50
dev = "cuda" if torch.cuda.is_available() else "cpu"
name = f"torch-{dev}" + (f" ({torch.cuda.get_device_name()})" if dev == "cuda" else "")
torch.backends.cuda.matmul.allow_tf32 = False  # fp32 as lithe computes it


def sync():
    if dev == "cuda":
        torch.cuda.synchronize()


for n in sizes:
    a, b = torch.rand(n, n, device=dev), torch.rand(n, n, device=dev)
    c = a @ b
    sync()
    t0 = time.perf_counter()
    c = a @ b
    sync()
    one = time.perf_counter() - t0
    reps = max(1, min(200, int(1.0 / max(one, 1e-6))))
    t0 = time.perf_counter()
    for _ in range(reps):
        c = a @ b
    sync()
    t = time.perf_counter() - t0
    print(f"{name} gemm n={n} {2 * n**3 * reps / t * 1e-9:.2f} GFLOP/s ({reps} reps, {t:.3f} s)")

model = torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512), torch.nn.ReLU(),
                            torch.nn.Linear(512, 10)).to(dev)
opt = torch.optim.Adam(model.parameters(), lr=0.001)
x, y = torch.rand(128, 784, device=dev) * 2 - 1, torch.arange(128, device=dev) % 10
for step in range(-2, steps):
    if step == 0:
        sync()
        t0 = time.perf_counter()
    opt.zero_grad()
    torch.nn.functional.cross_entropy(model(x), y).backward()
    opt.step()
sync()
t = time.perf_counter() - t0
print(f"{name} mlp batch=128 784-512-512-10 {steps / t:.1f} steps/s ({steps} steps, {t:.3f} s)")

if onnx_out:
    torch.manual_seed(0)
    cnn = torch.nn.Sequential(torch.nn.Conv2d(1, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                              torch.nn.Conv2d(32, 64, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                              torch.nn.Flatten(), torch.nn.Linear(64 * 7 * 7, 10)).eval()
    x = torch.rand(64, 1, 28, 28)
    # the batch axis dynamic: lithe's benchmark runs it at --batch N too (its ctest smokes, tiny)
    torch.onnx.export(cnn, x, onnx_out, opset_version=13, input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
    cnn, x = cnn.to(dev), x.to(dev)
    with torch.no_grad():
        for r in range(-2, steps):
            if r == 0:
                sync()
                t0 = time.perf_counter()
            cnn(x)
        sync()
    t = time.perf_counter() - t0
    print(f"{name} cnn batch=64 {steps / t:.1f} forward/s ({steps} passes, {t:.3f} s)")
