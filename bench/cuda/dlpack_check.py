"""The two CUDA cases of tests/python/test_python_package.py (test_cuda_tensor_dlpack_protocol,
test_torch_cuda_dlpack_zero_copy) for a GPU machine without Thinc: the MLP was exported, and its
prediction taken, by Thinc 8.1.7 on the machine that packed the folder (bench/cuda/gpu_carry.sh).
    LITHE_LIBRARY=.../liblithe.so python3 bench/cuda/dlpack_check.py FOLDER"""
import os
import sys

import numpy
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "shims", "python"))
import lithe  # noqa: E402

d = sys.argv[1]
X = numpy.load(os.path.join(d, "X.npy"))
lm = lithe.load(os.path.join(d, "m.lithe"))
expected = numpy.from_dlpack(lm.predict(X)).copy()
numpy.testing.assert_allclose(expected, numpy.load(os.path.join(d, "Y_thinc.npy")), rtol=1e-5, atol=1e-6)
lm.to("cuda")
Xd = lithe.tensor(X).to("cuda")  # inputs live where the model does
assert Xd.device == "cuda:0", Xd.device
y = lm.predict(Xd)
assert y.device == "cuda:0" and y.__dlpack_device__() == (2, 0)
again = lithe.tensor(y)  # kDLCUDA in: the same device memory, on the same backend
assert again.device == "cuda:0"
numpy.testing.assert_allclose(numpy.from_dlpack(again.to("cpu")), expected, rtol=1e-5, atol=1e-6)
print("PASS a lithe CUDA tensor speaks DLPack (kDLCUDA) and comes back without a copy; cuda = cpu = Thinc")
x = torch.randn(7, 6, device="cuda")
t = lithe.tensor(x)  # torch -> lithe: same device memory
assert t.device == "cuda:0" and t.__dlpack_device__() == (2, 0)
back = torch.from_dlpack(t)  # lithe -> torch
assert back.data_ptr() == x.data_ptr() and back.device == x.device
x.mul_(2.0)  # a write through torch shows through both views
torch.testing.assert_close(back, x)
lm2 = lithe.load(os.path.join(d, "m.lithe"))
lm2.to("cuda")
got = torch.from_dlpack(lm2.predict(torch.from_numpy(X).cuda()))
assert got.is_cuda
numpy.testing.assert_allclose(got.cpu().numpy(), expected, rtol=1e-5, atol=1e-6)
print("PASS torch CUDA tensors in and out without a copy; the model on the GPU predicts as on the CPU")
