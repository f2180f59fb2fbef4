"""Fine-tuning on a memory budget from Python (issue 26): freeze an imported graph by initializer
pattern, plan a step, and have an over-budget step refused with the figures."""
import io

import numpy
import pytest
import torch

import lithe


def _model(tmp_path):
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    path = tmp_path / "net.onnx"
    torch.onnx.export(net, torch.zeros(2, 16), str(path), input_names=["x"], output_names=["y"], opset_version=13,
                      dynamic_axes={"x": {0: "b"}, "y": {0: "b"}})
    return lithe.load(str(path))


def test_freeze_plan_budget(tmp_path):
    m = _model(tmp_path)
    assert m.freeze("0.*") == 2  # the first Linear's weight and bias (torch's names)
    assert m.is_frozen("0.weight") and not m.is_frozen("2.weight")
    with pytest.raises(lithe.LitheError):
        m.freeze("nothing*")
    x = numpy.random.default_rng(0).random((8, 16), dtype=numpy.float32)
    Y, backprop = m.begin_update(x)
    backprop(numpy.ones((8, 4), dtype=numpy.float32))
    assert m.grad_count() == 2  # the second Linear only
    opt = lithe.Adam(0.001)
    p = m.plan_train(x, batch=8, optimizer=opt)
    assert p["grads"] == (32 * 4 + 4) * 4 and p["opt_state"] == 3 * p["grads"]
    assert p["total"] == sum(p[k] for k in ("params", "grads", "opt_state", "activations", "workspace"))
    m.set_memory_budget(p["total"] // 4, opt)
    with pytest.raises(lithe.LitheError) as e:
        m.begin_update(x)
    assert "optimizer state" in str(e.value) and "activations" in str(e.value)
    m.set_memory_budget(0)
    m.begin_update(x)


def test_recompute_rows(tmp_path):
    """set_recompute(rows=r): a Conv / ReLU / pool body's backward r rows of the batch at a time
    (core/graph/graph_rows.c) gives the gradients of the plain step."""
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(8, 8, 3),
                              torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(8, 4))
    path = tmp_path / "cnn.onnx"
    torch.onnx.export(net, torch.zeros(2, 3, 10, 10), str(path), input_names=["x"], output_names=["y"],
                      opset_version=13, dynamic_axes={"x": {0: "b"}, "y": {0: "b"}})
    x = numpy.random.default_rng(1).random((8, 3, 10, 10), dtype=numpy.float32)
    dy = numpy.random.default_rng(2).random((8, 4), dtype=numpy.float32)
    grads = []
    for rows in (0, 3):
        m = lithe.load(str(path))
        if rows:
            with pytest.raises(ValueError):
                m.set_recompute(True, rows=-1)
            m.set_recompute(True, rows=rows)
        Y, backprop = m.begin_update(x)
        backprop(dy)
        node = m.walk()[0]  # the graph layer
        grads.append({n: numpy.from_dlpack(node.get_grad(n)).copy() for n in ("0.weight", "2.weight", "6.weight")})
    for n in grads[0]:
        numpy.testing.assert_allclose(grads[1][n], grads[0][n], rtol=1e-5, atol=1e-6)
