#!/usr/bin/python3
"""Golden values from the real Thinc 8.1.7 for tests/test_recurrent.c: LSTM (depth 1 and 2, bi
False and True, unequal lengths with a length-1 sequence, non-zero HC0), bidirectional,
ParametricAttention (with a zero-length sequence), CauchySimilarity and siamese: outputs, Thinc's
gradients, and each model's to_bytes.

LSTM's gradient: Thinc 8.1.7's NumpyOps.backprop_lstm does not compute the gradient of its own
forward (it seeds the weight gradients with the weights, skips each sequence's first step and
takes dWh from the wrong step), so the reference gradient here is float64 torch autograd of a
re-implementation of Thinc's forward — asserted below to reproduce Thinc's forward outputs.

Run with Debian's interpreter: /usr/bin/python3 tests/golden/gen_recurrent_goldens.py OUT.txt
(ctest runs it as the `recurrent` fixture).
"""
import sys

import numpy

from golden_records import rec, write

try:
    import thinc
    import torch
    from thinc.api import LSTM, CauchySimilarity, ParametricAttention, Relu, siamese, NumpyOps
    from thinc.layers.bidirectional import bidirectional
    from thinc.types import Padded, Ragged
except ImportError as e:
    sys.exit(f"gen_recurrent_goldens.py: {e}; install Debian's python3-thinc / python3-torch, run /usr/bin/python3")

if not thinc.__version__.startswith("8.1."):
    sys.exit(f"gen_recurrent_goldens.py: expected Thinc 8.1.x, found {thinc.__version__}")

rng = numpy.random.RandomState(11)
ops = NumpyOps()


def randf(*shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype("float32")


def rec_bytes(name, b):
    rec(name, numpy.frombuffer(b, dtype="uint8").astype("int64"))


def torch_lstm(params, HC0, X, size_at_t, depth, dirs, H):
    """Thinc's LSTM forward in float64 torch: X packed (N, nI) time-major, gates (f, i, o, c) in
    blocks of H, HC0[0] the initial cell and HC0[1] the initial hidden state (Thinc's order)."""
    starts = numpy.concatenate([[0], numpy.cumsum(size_at_t)[:-1]]).astype(int)
    T = len(size_at_t)
    off = 0
    inp = X
    for i in range(depth):
        nIi = inp.shape[1]
        outs = []
        for d in range(dirs):
            Wx = params[off: off + 4 * H * nIi].reshape(4 * H, nIi); off += 4 * H * nIi
            bx = params[off: off + 4 * H]; off += 4 * H
            Wh = params[off: off + 4 * H * H].reshape(4 * H, H); off += 4 * H * H
            bh = params[off: off + 4 * H]; off += 4 * H
            c0, h0 = HC0[0, i, d], HC0[1, i, d]
            rows = [None] * int(sum(size_at_t))
            state = {}
            order = range(T) if d == 0 else reversed(range(T))
            for t in order:
                for b in range(size_at_t[t]):
                    h, c = state.get(b, (h0, c0))
                    a = inp[starts[t] + b] @ Wx.T + h @ Wh.T + bx + bh
                    f, ig, o = torch.sigmoid(a[:H]), torch.sigmoid(a[H:2 * H]), torch.sigmoid(a[2 * H:3 * H])
                    cc = torch.tanh(a[3 * H:])
                    c = f * c + ig * cc
                    h = torch.tanh(c) * o
                    state[b] = (h, c)
                    rows[starts[t] + b] = h
            outs.append(torch.stack(rows))
        inp = torch.cat(outs, dim=1)
    return inp


def packed(data, size_at_t):
    return numpy.concatenate([data[t, :s] for t, s in enumerate(size_at_t)])


def lstm_case(p, nO, nI, bi, depth, seq_lengths):
    model = LSTM(nO=nO, nI=nI, bi=bi, depth=depth)
    Xs = [randf(n, nI) for n in seq_lengths]
    Xp = ops.list2padded(Xs)
    model.initialize(X=Xp)
    # non-zero initial states and biases so the (cell, hidden) order and both biases matter
    HC0 = randf(*model.get_param("HC0").shape, scale=0.5)
    model.set_param("HC0", HC0)
    W = model.get_param("LSTM").copy()
    W += randf(*W.shape, scale=0.1)
    model.set_param("LSTM", W)
    Yp, bp = model.begin_update(Xp)
    dY = randf(*Yp.data.shape)
    for t, s in enumerate(Xp.size_at_t):
        dY[t, s:] = 0
    dXp = bp(Padded(dY.copy(), Xp.size_at_t, Xp.lengths, Xp.indices))
    rec(f"{p}_X", Xp.data)
    rec(f"{p}_size_at_t", Xp.size_at_t)
    rec(f"{p}_lengths", Xp.lengths)
    rec(f"{p}_indices", Xp.indices)
    rec(f"{p}_W", W)
    rec(f"{p}_HC0", HC0)
    rec(f"{p}_Y", Yp.data)
    rec(f"{p}_predict", model.predict(Xp).data)
    rec(f"{p}_dY", dY)
    rec(f"{p}_thinc_dX", dXp.data)  # NumpyOps' (inexact) gradients, kept for the record
    rec(f"{p}_thinc_dW", model.get_grad("LSTM"))
    # the float64 reference
    H = nO // (2 if bi else 1)
    tp = torch.tensor(W.astype("float64"), requires_grad=True)
    tX = torch.tensor(packed(Xp.data, Xp.size_at_t).astype("float64"), requires_grad=True)
    tY = torch_lstm(tp, torch.tensor(HC0.astype("float64")), tX, Xp.size_at_t, depth, 2 if bi else 1, H)
    Yref = tY.detach().numpy()
    assert numpy.allclose(Yref, packed(Yp.data, Xp.size_at_t), atol=2e-5), (p, numpy.abs(Yref - packed(Yp.data, Xp.size_at_t)).max())
    (tY * torch.tensor(packed(dY, Xp.size_at_t).astype("float64"))).sum().backward()
    dX = numpy.zeros(Xp.data.shape, dtype="float64")
    start = 0
    for t, s in enumerate(Xp.size_at_t):
        dX[t, :s] = tX.grad.numpy()[start:start + s]
        start += s
    rec(f"{p}_ref_dX", dX, exact64=True)
    rec(f"{p}_ref_dW", tp.grad.numpy(), exact64=True)
    # What NumpyOps.backprop_lstm gives instead, pinned so a fixed Thinc is noticed: its bh
    # blocks are exactly zero (it folds bh into bx and re-emits zeros), and a batch of one
    # length-1 sequence gets no input gradient at all (first steps are never back-propagated).
    tdW = model.get_grad("LSTM")
    off, nIi, dirs = 0, nI, 2 if bi else 1
    for _ in range(depth):
        for _ in range(dirs):
            off += 4 * H * nIi + 4 * H + 4 * H * H
            assert not tdW[off: off + 4 * H].any(), p
            off += 4 * H
        nIi = H * dirs
    if list(seq_lengths) == [1]:
        assert not dXp.data.any() and numpy.abs(dX).max() > 0, p
    rec_bytes(f"{p}_bytes", model.to_bytes())


lstm_case("l1", 4, 3, False, 1, [4, 2, 1, 4])
lstm_case("l2", 4, 3, False, 2, [3, 1, 5])
lstm_case("b1", 4, 3, True, 1, [4, 2, 1])
lstm_case("b2", 6, 2, True, 2, [1, 3, 2, 5])
lstm_case("one", 2, 3, True, 1, [1])

# --- bidirectional (Thinc's: no reversal, both children get dZ's first half) ------------------
l2r = LSTM(nO=2, nI=3)
bim = bidirectional(l2r)
Xs = [randf(n, 3) for n in (3, 1, 2)]
Xp = ops.list2padded(Xs)
bim.initialize(X=Xp)
for k, layer in enumerate(bim.layers):
    Wk = layer.get_param("LSTM") + randf(*layer.get_param("LSTM").shape, scale=0.1)
    layer.set_param("LSTM", Wk)
    rec(f"bi_W{k}", Wk)
Zp, bpz = bim.begin_update(Xp)
rec("bi_X", Xp.data)
rec("bi_size_at_t", Xp.size_at_t)
rec("bi_lengths", Xp.lengths)
rec("bi_indices", Xp.indices)
rec("bi_Z", Zp.data)
rec_bytes("bi_bytes", bim.to_bytes())

# --- ParametricAttention -----------------------------------------------------------------------
att = ParametricAttention(nO=4)
lengths = numpy.array([3, 0, 2, 1], dtype="int32")
X = randf(int(lengths.sum()), 4)
att.initialize(X=Ragged(X, lengths))
Q = randf(4)
att.set_param("Q", Q)
Yr, bpa = att.begin_update(Ragged(X, lengths))
dY = randf(*Yr.data.shape)
dXr = bpa(Ragged(dY, lengths))
for name, arr in dict(X=X, lengths=lengths, Q=Q, Y=Yr.data, dY=dY, dX=dXr.data, dQ=att.get_grad("Q")).items():
    rec(f"att_{name}", arr)
rec_bytes("att_bytes", att.to_bytes())

# --- CauchySimilarity ---------------------------------------------------------------------------
cs = CauchySimilarity(nI=4)
X1, X2 = randf(5, 4), randf(5, 4)
cs.initialize(X=(X1, X2))
Wc = numpy.abs(randf(4)) + 0.1
cs.set_param("W", Wc)
sim, bpc = cs.begin_update((X1, X2))
dsim = randf(5)
d1, d2 = bpc(dsim)
for name, arr in dict(X1=X1, X2=X2, W=Wc, sim=sim, dsim=dsim, dX1=d1, dX2=d2, dW=cs.get_grad("W")).items():
    rec(f"cs_{name}", arr)
rec_bytes("cs_bytes", cs.to_bytes())

# --- siamese(Relu, CauchySimilarity) -----------------------------------------------------------
sm = siamese(Relu(nO=3, nI=4), CauchySimilarity(nI=3))
A1, A2 = randf(6, 4), randf(6, 4)
sm.initialize(X=(A1, A2))
relu = sm.layers[0]
relu.set_param("W", randf(3, 4))
relu.set_param("b", randf(3, scale=0.1))
out, bps = sm.begin_update((A1, A2))
dout = randf(6)
g1, g2 = bps(dout)
for name, arr in dict(X1=A1, X2=A2, W=relu.get_param("W"), b=relu.get_param("b"), Y=out, dY=dout, dX1=g1, dX2=g2,
                      dW=relu.get_grad("W"), db=relu.get_grad("b"), dWc=sm.layers[1].get_grad("W")).items():
    rec(f"sm_{name}", arr)
rec_bytes("sm_bytes", sm.to_bytes())

write("gen_recurrent_goldens.py", "recurrent_goldens.txt")
