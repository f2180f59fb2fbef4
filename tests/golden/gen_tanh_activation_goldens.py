"""Goldens of tanh_activation.v1 (tests/test_layer_list.c) from PyTorch 1.13: Y = torch.tanh(X) and
dX by autograd, in float64 from float32 inputs. Prints the arrays the test embeds."""
import torch

torch.manual_seed(0)
X = (torch.linspace(-3.0, 3.0, 12).reshape(3, 4) + 0.1 * torch.randn(3, 4)).float().double().requires_grad_(True)
dY = torch.linspace(-1.0, 1.5, 12).reshape(3, 4).float().double()
Y = torch.tanh(X)
Y.backward(dY)


def c_float(v):
    text = "%.9g" % v
    return text + (".0f" if "." not in text and "e" not in text else "f")


for name, t in (("X_in", X), ("dY_in", dY), ("Y_torch", Y), ("dX_torch", X.grad)):
    print(f"static const float {name}[12] = {{" + ", ".join(c_float(v) for v in t.detach().reshape(-1).tolist()) + "};")
