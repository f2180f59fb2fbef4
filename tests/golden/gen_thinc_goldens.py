#!/usr/bin/python3
"""Golden values from the real Thinc 8.1 for tests/test_thinc_golden.c and tests/test_kernels.c.

Run with Debian's interpreter (python3-thinc, python3-numpy):

    /usr/bin/python3 tests/golden/gen_thinc_goldens.py OUT.txt

ctest runs it as a fixture before test_thinc_golden, writing into the build tree, so the goldens
always come from the Thinc installed on the machine, never from lithe. The output is text, one
record per array:

    <name> <f|d|i> <ndim> <dim0> ... <dimN-1>
    <values, space separated: f float32 as %.9g (round-trips), d float64 as %.17g, i integers>

Inputs (X, W, dY, labels, ...) are written too, so the C side feeds lithe exactly the arrays Thinc
saw. Every float array is float32 as Thinc computes it; scalars are 0-d arrays.
"""
import sys

import numpy

from golden_records import rec, write

try:
    import thinc
    from thinc.api import (
        Adam,
        CategoricalCrossentropy,
        Linear,
        NumpyOps,
        Relu,
        SGD,
        RAdam,
        Softmax_v2,
        chain,
        fix_random_seed,
    )
except ImportError as e:  # a clear message instead of a bare traceback
    sys.exit(f"gen_thinc_goldens.py: {e}; install Debian's python3-thinc and run with /usr/bin/python3")

if not thinc.__version__.startswith("8.1."):
    sys.exit(f"gen_thinc_goldens.py: expected Thinc 8.1.x, found {thinc.__version__}")

rng = numpy.random.RandomState(20261122)


def randf(*shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype("float32")


# --- Single layers: parameters set explicitly, forward (train and predict) and backprop ----------
def dense_case(prefix, model, nO, nI, B, *, has_backprop=True):
    X = randf(B, nI)
    W = randf(nO, nI, scale=0.5)
    b = randf(nO, scale=0.5)
    model.initialize()
    model.set_param("W", W)
    model.set_param("b", b)
    Y, backprop = model.begin_update(X)
    Yp = model.predict(X)
    rec(prefix + ".X", X)
    rec(prefix + ".W", W)
    rec(prefix + ".b", b)
    rec(prefix + ".Y", Y)
    rec(prefix + ".Ypredict", Yp)
    if has_backprop:
        dY = randf(B, nO)
        dX = backprop(dY)
        rec(prefix + ".dY", dY)
        rec(prefix + ".dX", dX)
        rec(prefix + ".dW", model.get_grad("W"))
        rec(prefix + ".db", model.get_grad("b"))


dense_case("linear", Linear(4, 5), 4, 5, 3)
dense_case("relu", Relu(6, 5), 6, 5, 7)
dense_case("softmax", Softmax_v2(4, 5), 4, 5, 3)
dense_case("softmax_t2", Softmax_v2(4, 5, temperature=2.0), 4, 5, 3)
dense_case("softmax_t05", Softmax_v2(4, 5, temperature=0.5), 4, 5, 3)
# normalize_outputs=False: predict returns the logits; training still normalises.
dense_case("softmax_unnorm", Softmax_v2(4, 5, normalize_outputs=False), 4, 5, 3, has_backprop=False)

# --- The dense catalogue: any tree, params set per node in walk order --------------------------
# Records <prefix>.X, .Y, .Ypredict, .dY, .dX, and for node i of model.walk() and each param p:
# <prefix>.<i>.<p> (set before the forward) and <prefix>.<i>.d<p> (the gradient after backprop).
def tree_case(prefix, model, X, *, wscale=1.0, has_backprop=True):
    model.initialize(X=X)
    for i, node in enumerate(model.walk()):
        for p in node.param_names:
            shape = node.get_param(p).shape
            v = randf(*shape, scale=wscale)
            if p == "G":  # LayerNorm's scale: keep it away from 0
                v = 1.0 + randf(*shape, scale=0.3)
            node.set_param(p, v)
            rec(f"{prefix}.{i}.{p}", v)
    Y, backprop = model.begin_update(X)
    Yp = model.predict(X)
    rec(prefix + ".X", X)
    rec(prefix + ".Y", Y)
    rec(prefix + ".Ypredict", Yp)
    if not has_backprop:
        return
    dY = randf(*Y.shape)
    dX = backprop(dY)
    rec(prefix + ".dY", dY)
    rec(prefix + ".dX", dX)
    for i, node in enumerate(model.walk()):
        for p in node.param_names:
            rec(f"{prefix}.{i}.d{p}", node.get_grad(p))


from thinc.api import (  # noqa: E402
    ClippedLinear, Dish, Gelu, HardSigmoid, HardSwish, HardSwishMobilenet, HardTanh, LayerNorm as LN,
    Logistic, Maxout, Mish, ReluK, Sigmoid, Swish, sigmoid_activation, softmax_activation,
)

Xd = randf(6, 5, scale=1.5)
tree_case("tree.mish", Mish(4, 5), Xd)
tree_case("tree.swish", Swish(4, 5), Xd)
tree_case("tree.gelu", Gelu(4, 5), Xd)
# Thinc 8.1.7's Dish backprop differentiates at the layer's input X instead of the pre-activation
# (it fails unless nI == nO, and is wrong then): lithe keeps the true gradient, checked by finite
# differences in test_layers, and compares only Dish's forward with Thinc.
tree_case("tree.dish", Dish(4, 5), Xd, has_backprop=False)
tree_case("tree.hardswish", HardSwish(4, 5), Xd)
tree_case("tree.hardswishmobilenet", HardSwishMobilenet(4, 5), Xd)
tree_case("tree.clipped_linear", ClippedLinear(4, 5, slope=1.5, offset=0.25, min_val=-0.5, max_val=2.0), Xd)
tree_case("tree.hard_sigmoid", HardSigmoid(4, 5), Xd)
tree_case("tree.hard_tanh", HardTanh(4, 5), Xd)
tree_case("tree.relu_k", ReluK(4, 5, k=2.5), Xd)
tree_case("tree.sigmoid", Sigmoid(4, 5), Xd)
tree_case("tree.maxout", Maxout(4, 5, nP=3), Xd)
tree_case("tree.maxout_norm", Maxout(4, 5, nP=2, normalize=True), Xd)
tree_case("tree.relu_norm", Relu(4, 5, normalize=True), Xd)
tree_case("tree.layernorm", LN(5), Xd)
tree_case("tree.logistic", Logistic(), Xd)
tree_case("tree.sigmoid_activation", sigmoid_activation(), Xd)
tree_case("tree.softmax_activation", softmax_activation(), Xd)

from thinc.api import add, clone, concatenate, noop, residual  # noqa: E402

tree_case("tree.concatenate", concatenate(Relu(3, 5), Mish(2, 5), Linear(1, 5)), Xd)
tree_case("tree.add", add(Linear(4, 5), Relu(4, 5)), Xd)
tree_case("tree.residual", residual(Relu(5, 5)), Xd)
tree_case("tree.noop", noop(), Xd)
tree_case("tree.clone", clone(Relu(5, 5), 3), Xd)
from thinc.api import MultiSoftmax, Softmax, map_list, tuplify  # noqa: E402

tree_case("tree.multisoftmax", MultiSoftmax((2, 3), 5), Xd)
tree_case("tree.softmax_v1", Softmax(3, 5), Xd)

# tuplify and map_list carry tuples and lists: their own records
tp = tuplify(Relu(3, 5), Linear(2, 5))
tp.initialize(X=Xd)
for i, node in enumerate(tp.walk()):
    for p in node.param_names:
        v = randf(*node.get_param(p).shape)
        node.set_param(p, v)
        rec(f"tuplify.{i}.{p}", v)
(Y0, Y1), bp_t = tp.begin_update(Xd)
dY0, dY1 = randf(*Y0.shape), randf(*Y1.shape)
rec("tuplify.X", Xd)
rec("tuplify.Y0", Y0)
rec("tuplify.Y1", Y1)
rec("tuplify.dY0", dY0)
rec("tuplify.dY1", dY1)
rec("tuplify.dX", bp_t((dY0, dY1)))
ml = map_list(Relu(3, 5))
Xs = [Xd[:2], Xd[2:]]
ml.initialize(X=Xs)
Wm, bm = randf(3, 5), randf(3)
ml.layers[0].set_param("W", Wm)
ml.layers[0].set_param("b", bm)
Ys, bp_m = ml.begin_update(Xs)
dYs = [randf(*Y.shape) for Y in Ys]
dXs = bp_m(dYs)
rec("map_list.W", Wm)
rec("map_list.b", bm)
for i in range(2):
    rec(f"map_list.X{i}", Xs[i])
    rec(f"map_list.Y{i}", Ys[i])
    rec(f"map_list.dY{i}", dYs[i])
    rec(f"map_list.dX{i}", dXs[i])
rec("map_list.dW", ml.layers[0].get_grad("W"))

tree_case("tree.nested", chain(concatenate(Relu(3, 5), Swish(3, 5)), residual(Maxout(6, 6, nP=2)), Softmax_v2(2, 6)), Xd)

# --- Embed and HashEmbed: lookups, bucket sums, dE ---------------------------------------------------
from thinc.api import Embed, HashEmbed  # noqa: E402


def embed_case(prefix, model, ids):
    model.initialize()
    node = model.layers[-1] if model.layers else model
    E = randf(*node.get_param("E").shape)
    node.set_param("E", E)
    Y, bp_e = model.begin_update(ids)
    dY = randf(*Y.shape)
    bp_e(dY)
    rec(prefix + ".ids", ids)
    rec(prefix + ".E", E)
    rec(prefix + ".Y", Y)
    rec(prefix + ".Ypredict", model.predict(ids))
    rec(prefix + ".dY", dY)
    rec(prefix + ".dE", node.get_grad("E"))


embed_case("embed", Embed(3, 10), numpy.array([3, 0, 9, 3, 3, 7], dtype="int32"))
embed_case("embed_col", Embed(3, 10, column=1),
           numpy.array([[5, 1], [2, 9], [0, 0], [8, 1]], dtype="int64"))
hash_ids_e = numpy.array([0, 1, 2**40 + 5, 17, 17, 2**64 - 1, 123456789], dtype="uint64")
embed_case("hashembed", HashEmbed(4, 13, seed=7), hash_ids_e)
embed_case("hashembed_col", HashEmbed(4, 11, seed=1, column=0),
           numpy.array([[10, 3], [4, 4], [99, 0]], dtype="uint64"))

# --- resizable + resize_model: a trained classifier gets a new class -----------------------------
from functools import partial  # noqa: E402

from thinc.api import resizable  # noqa: E402
from thinc.layers.resizable import resize_linear_weighted, resize_model  # noqa: E402

Xr = randf(6, 5)
rz = resizable(Softmax_v2(3, 5, normalize_outputs=False),
               resize_layer=partial(resize_linear_weighted, fill_defaults={"W": 0.5, "b": -1.0}))
rz.initialize()
rz.layers[0].set_param("W", randf(3, 5))
rz.layers[0].set_param("b", randf(3))
rec("resize.X", Xr)
rec("resize.W0", rz.layers[0].get_param("W"))
rec("resize.b0", rz.layers[0].get_param("b"))
rec("resize.logits0", rz.predict(Xr))
resize_model(rz, 4)
rec("resize.W1", rz.layers[0].get_param("W"))
rec("resize.b1", rz.layers[0].get_param("b"))
rec("resize.logits1", rz.predict(Xr))
# one training step on the new class too: CCE with int labels, Adam
labels_r = numpy.array([3, 0, 3, 1, 2, 3], dtype="int32")
Yr, bp_r = rz.begin_update(Xr)
d_r, _ = CategoricalCrossentropy()(Yr, labels_r)
bp_r(d_r)
opt_r = Adam(0.01)
rz.finish_update(opt_r)
rec("resize.labels", labels_r)
rec("resize.W2", rz.layers[0].get_param("W"))
rec("resize.b2", rz.layers[0].get_param("b"))

# --- Schedules: the first 40 values of each generator; an Adam whose learn_rate is scheduled ------
from thinc.api import (  # noqa: E402
    compounding, constant, constant_then, cyclic_triangular, decaying, slanted_triangular, warmup_linear,
)


def take(gen, n=40):
    return numpy.array([next(gen) for _ in range(n)], dtype="float64")


rec("sched.constant", take(constant(0.25)), exact64=True)
rec("sched.constant_then", take(constant_then(1.0, 3, decaying(0.5, 0.1))), exact64=True)
rec("sched.decaying", take(decaying(0.001, 1e-2, t=3)), exact64=True)
rec("sched.compounding_up", take(compounding(1.0, 10.0, 1.5)), exact64=True)
rec("sched.compounding_down", take(compounding(10.0, 1.0, 0.8)), exact64=True)
rec("sched.warmup_linear", take(warmup_linear(0.01, 5, 30)), exact64=True)
rec("sched.slanted_triangular", take(slanted_triangular(0.1, 50, cut_frac=0.2, ratio=16, t=1.0)), exact64=True)
rec("sched.cyclic_triangular", take(cyclic_triangular(0.001, 0.01, 7)), exact64=True)

W_s = randf(4, 3)
opt_s = Adam(learn_rate=warmup_linear(0.05, 2, 6), grad_clip=0.0, use_averages=False)
rec("optsched.W0", W_s)
Ws = W_s.copy().ravel()
for step in range(1, 6):
    G = randf(4, 3).ravel()
    rec(f"optsched.G{step}", G.reshape(4, 3))
    Ws, _ = opt_s((1, "W"), Ws, G.copy())
    rec(f"optsched.W{step}", Ws.reshape(4, 3))
    opt_s.step_schedules()

# --- A chain with shape inference, CCE, backprop and two Adam updates -----------------------------
fix_random_seed(7)
B, nI, nC = 8, 7, 3
model = chain(Relu(nO=6), Relu(nO=5), Softmax_v2())
X = randf(B, nI)
labels = rng.randint(0, nC, size=B).astype("int32")
Y1hot = numpy.eye(nC, dtype="float32")[labels]
model.initialize(X=X, Y=Y1hot)
layers = model.layers
# Softmax's default initialiser is zeros, which would zero every gradient below it: randomise W.
layers[2].set_param("W", randf(nC, 5, scale=0.5))
rec("chain.X", X)
rec("chain.labels", labels)
rec("chain.Y1hot", Y1hot)
for i, layer in enumerate(layers):
    rec(f"chain.{i}.dims", numpy.array([layer.get_dim("nO"), layer.get_dim("nI")], dtype="int64"))
    rec(f"chain.{i}.W0", layer.get_param("W"))
    rec(f"chain.{i}.b0", layer.get_param("b"))
W0s = [(layer.get_param("W").copy(), layer.get_param("b").copy()) for layer in layers]
loss_fn = CategoricalCrossentropy()


def chain_train(prefix, optimizer, steps, X):
    """`steps` updates of the chain on X from its initial weights, recorded under prefix."""
    for layer, (W0, b0) in zip(layers, W0s):
        layer.set_param("W", W0.copy())
        layer.set_param("b", b0.copy())
    for step in range(1, steps + 1):
        Y, backprop = model.begin_update(X)
        d, loss = loss_fn(Y, labels)
        dX = backprop(d)
        rec(f"{prefix}.step{step}.Y", Y)
        rec(f"{prefix}.step{step}.d", d)
        rec(f"{prefix}.step{step}.loss", numpy.array(loss, dtype="float32"))
        rec(f"{prefix}.step{step}.dX", dX)
        for i, layer in enumerate(layers):
            rec(f"{prefix}.step{step}.{i}.dW", layer.get_grad("W"))
            rec(f"{prefix}.step{step}.{i}.db", layer.get_grad("b"))
        model.finish_update(optimizer)
        for i, layer in enumerate(layers):
            rec(f"{prefix}.step{step}.{i}.W", layer.get_param("W"))
            rec(f"{prefix}.step{step}.{i}.b", layer.get_param("b"))
    rec(f"{prefix}.predict", model.predict(X))


chain_train("chain", Adam(), 2, X)
# Adam doing torch.optim.Adam(lr=1e-3)'s work (lithe bench --train --adam torch): no clipping, no
# averages, no L2; three updates from the same weights on 10 X, whose first layer's gradient norm
# (~4.5) the defaults' grad_clip 1.0 would scale down
rec("chaintorch.X", 10 * X)
chain_train("chaintorch", Adam(grad_clip=0.0, L2=0.0, use_averages=False), 3, 10 * X)


# --- Optimizers on one parameter: three steps, weights and averages after each ------------------
def opt_record(name, opt):
    rec(
        name + ".opts",
        numpy.array(
            [
                opt.learn_rate,
                opt.L2,
                opt.b1,
                opt.b2,
                opt.eps,
                opt.grad_clip,
                float(opt.L2_is_weight_decay),
                float(opt.averages is not None),
                float(opt.use_radam),
            ],
            dtype="float64",
        ),
        exact64=True,
    )


def opt_case(name, opt, grad_scale, steps=3):
    opt_record(name, opt)
    W = randf(3, 4)
    rec(name + ".W0", W)
    W = W.copy()
    key = (1, "W")
    for step in range(1, steps + 1):
        G = randf(3, 4, scale=grad_scale)
        rec(f"{name}.G{step}", G)
        W, G_after = opt(key, W, G.copy())
        rec(f"{name}.W{step}", W)
        rec(f"{name}.Gafter{step}", G_after)
        if opt.averages is not None:
            rec(f"{name}.avg{step}", opt.averages[key])


opt_case("adam_default", Adam(), 1.0)  # gradient norms ~3.5 > grad_clip 1.0: clipping is active
opt_case("adam_small", Adam(), 0.05)  # norms < 1.0: no clipping
opt_case("adam_wd", Adam(0.01, L2=0.01), 0.05)
opt_case("adam_l2grad", Adam(0.01, L2=0.01, L2_is_weight_decay=False), 0.05)
opt_case("adam_clip", Adam(0.01, grad_clip=0.1, beta1=0.8, beta2=0.99, eps=1e-6), 1.0)
opt_case("adam_noavg", Adam(0.01, grad_clip=0.0, L2=0.0, use_averages=False), 1.0)
opt_case("sgd", SGD(0.1), 1.0)
opt_case("sgd_l2grad", SGD(0.1, L2=0.01, L2_is_weight_decay=False, grad_clip=0.5), 1.0)
# RAdam: unrectified (SGD with momentum) for the first steps, rectified from N_sma >= 5 on
# eps large enough to move every step: a backend's fused Adam with the wrong epsilon fails here
opt_case("adam_eps", Adam(0.01, eps=0.1, grad_clip=0.0, beta1=0.8), 0.05)
opt_case("radam", RAdam(0.01), 1.0, steps=6)
opt_case("radam_b2", RAdam(0.01, beta2=0.9, L2=0.01), 0.5, steps=8)
# torch.optim.Adam(lr=1e-3)'s work in Thinc's Adam (lithe bench --adam torch), norms ~3.5: the
# defaults would clip, this must not
opt_case("adam_torch", Adam(grad_clip=0.0, L2=0.0, use_averages=False), 1.0)

# --- L2Distance and CosineDistance ----------------------------------------------------------------
from thinc.api import CosineDistance, L2Distance  # noqa: E402

Gd = randf(5, 4)
Td = randf(5, 4)
Td[3, :] = 0.0  # a zero target row, for ignore_zeros
rec("dist.guesses", Gd)
rec("dist.truths", Td)
for dname, fn in {
    "l2": L2Distance(),
    "l2_unnorm": L2Distance(normalize=False),
    "cos": CosineDistance(),
    "cos_unnorm": CosineDistance(normalize=False),
    "cos_ignore": CosineDistance(ignore_zeros=True),
}.items():
    d, loss = fn(Gd, Td)
    rec(f"dist.{dname}.d", d)
    rec(f"dist.{dname}.loss", numpy.array(loss, dtype="float32"))

# --- Kernels (NumpyOps, the ops behind Thinc's layers): tests/test_kernels.c ---------------------
ops = NumpyOps()
# Inputs spread over the interesting ranges, with the kinks and thresholds themselves included.
Xa = numpy.concatenate([
    randf(60, scale=3.0),
    numpy.array([0.0, 1.0, -1.0, 2.5, -2.5, 3.0, -3.0, 6.0, 19.5, 20.0, 21.0, 30.0, -19.0, -21.0,
                 -30.0, 1e-3, -1e-3, 0.5, -0.5, 4.0], dtype="float32"),
]).reshape(8, 10)
dYa = randf(8, 10)
rec("act.X", Xa)
rec("act.dY", dYa)
acts = {
    "relu": (lambda X: ops.relu(X), lambda dY, X, Y: ops.backprop_relu(dY, Y)),
    "sigmoid": (lambda X: ops.sigmoid(X), lambda dY, X, Y: ops.backprop_sigmoid(dY, Y)),
    "tanh": (lambda X: ops.xp.tanh(X), lambda dY, X, Y: dY * ops.dtanh(Y)),
    "swish": (lambda X: ops.swish(X), lambda dY, X, Y: ops.backprop_swish(dY, X, Y)),
    "gelu": (lambda X: ops.gelu(X), lambda dY, X, Y: ops.backprop_gelu(dY, X)),
    "mish": (lambda X: ops.mish(X), lambda dY, X, Y: ops.backprop_mish(dY, X)),
    "dish": (lambda X: ops.dish(X), lambda dY, X, Y: ops.backprop_dish(dY, X)),
    "hard_sigmoid": (lambda X: ops.hard_sigmoid(X), lambda dY, X, Y: ops.backprop_hard_sigmoid(dY, X)),
    "hard_tanh": (lambda X: ops.hard_tanh(X), lambda dY, X, Y: ops.backprop_hard_tanh(dY, X)),
    "hard_swish": (lambda X: ops.hard_swish(X), lambda dY, X, Y: ops.backprop_hard_swish(dY, X)),
    "hard_swish_mobilenet": (lambda X: ops.hard_swish_mobilenet(X),
                             lambda dY, X, Y: ops.backprop_hard_swish_mobilenet(dY, X)),
    "relu_k": (lambda X: ops.relu_k(X, n=6.0), lambda dY, X, Y: ops.backprop_relu_k(dY, X, n=6.0)),
    "clipped_linear": (
        lambda X: ops.clipped_linear(X, slope=1.5, offset=0.25, min_val=-0.5, max_val=2.0),
        lambda dY, X, Y: ops.backprop_clipped_linear(dY, X, slope=1.5, offset=0.25, min_val=-0.5,
                                                     max_val=2.0),
    ),
}
for aname, (fwd, bwd) in acts.items():
    Ya = fwd(Xa.copy())
    rec(f"act.{aname}.Y", Ya)
    rec(f"act.{aname}.dX", bwd(dYa.copy(), Xa.copy(), Ya.copy()))

# Maxout with ties (the first maximum wins, as argmax).
Xm = randf(3, 4, 5)
Xm[0, 0, 1] = Xm[0, 0, 3] = 10.0
Xm[1, 2, :] = 0.5
Ym, which = ops.maxout(Xm)
dYm = randf(3, 4)
rec("maxout.X", Xm)
rec("maxout.Y", Ym)
rec("maxout.which", which)
rec("maxout.dY", dYm)
rec("maxout.dX", ops.backprop_maxout(dYm, which, 5))

# Non-finite inputs (NaN, +-inf, -0) for tests/test_kernels.c's nonfinite checks: what NumpyOps
# gives for each, NaN included (relu(NaN) is NaN: cpu_relu zeroes only X <= 0). 3 rows of 37, so the
# specials land in SIMD bodies and tails alike; dY carries NaN and inf too.
with numpy.errstate(all="ignore"):
    specials = numpy.array([numpy.nan, numpy.inf, -numpy.inf, -0.0, 0.0], dtype="float32")
    Xn = randf(3, 37, scale=3.0)
    for r, cols in enumerate([(0, 5, 16, 17, 31, 36), (1, 2, 8, 15, 32, 33), (3, 4, 7, 23, 34, 35)]):
        for j, c in enumerate(cols):
            Xn[r, c] = specials[(r + j) % 5]
    dYn = randf(3, 37)
    dYn[0, 9] = numpy.nan
    dYn[1, 20] = numpy.inf
    dYn[2, 36] = numpy.nan
    rec("act_nf.X", Xn)
    rec("act_nf.dY", dYn)
    for aname, (fwd, bwd) in acts.items():
        Yn = fwd(Xn.copy())
        rec(f"act_nf.{aname}.Y", Yn)
        rec(f"act_nf.{aname}.dX", bwd(dYn.copy(), Xn.copy(), Yn.copy()))
    # Maxout (P = 2, 3: NumpyOps' unrolled argmax; P = 5: its loop) with NaN and inf candidates.
    for P in (2, 3, 5):
        Xmn = randf(4, 3, P)
        Xmn[0, 0, 0] = numpy.nan
        Xmn[0, 1, P - 1] = numpy.nan
        Xmn[1, 0, 1] = numpy.inf
        Xmn[1, 2, :] = numpy.nan
        Xmn[2, 1, 0] = -numpy.inf
        Xmn[3, 2, P // 2] = numpy.nan
        Xmn[0, 2, P // 2] = numpy.nan  # a middle NaN within the first 8 rows (the SIMD kernels' vector part)
        Ymn, whichn = ops.maxout(Xmn)
        rec(f"maxout_nf{P}.X", Xmn)
        rec(f"maxout_nf{P}.Y", Ymn)
        rec(f"maxout_nf{P}.which", whichn)
    # Softmax rows with NaN, +inf and -inf (NumpyOps.softmax: x - max, exp, / sum).
    Xs = randf(4, 7)
    Xs[0, 3] = numpy.nan
    Xs[1, 0] = numpy.inf
    Xs[2, 6] = -numpy.inf
    Xs[3, 2] = Xs[3, 5] = numpy.inf
    rec("softmax_nf.X", Xs)
    rec("softmax_nf.Y", ops.softmax(Xs))
    # reduce_max / reduce_mean / reduce_sum over two sequences with NaN and inf in them.
    Xr = randf(5, 4)
    Xr[0, 0] = numpy.nan
    Xr[2, 1] = numpy.nan
    Xr[1, 2] = numpy.inf
    Xr[4, 3] = -numpy.inf
    lr = numpy.array([3, 2], dtype="int32")
    rec("reduce_nf.X", Xr)
    rec("reduce_nf.lengths", lr)
    ymax, wmax = ops.reduce_max(Xr, lr)
    rec("reduce_nf.max", ymax)
    rec("reduce_nf.which", wmax)
    rec("reduce_nf.mean", ops.reduce_mean(Xr, lr))
    rec("reduce_nf.sum", ops.reduce_sum(Xr, lr))

# LayerNorm.v1 as a layer: G and b set, forward, backprop into dX, dG and db.
from thinc.api import LayerNorm  # noqa: E402

Xl = randf(5, 7, scale=2.0) + 1.5
ln = LayerNorm()
ln.initialize(X=Xl)
ln.set_param("G", randf(7) + 1.0)
ln.set_param("b", randf(7))
Yl, bp_ln = ln.begin_update(Xl)
dYl = randf(5, 7)
rec("layernorm.X", Xl)
rec("layernorm.G", ln.get_param("G"))
rec("layernorm.b", ln.get_param("b"))
rec("layernorm.Y", Yl)
rec("layernorm.dY", dYl)
rec("layernorm.dX", bp_ln(dYl))
rec("layernorm.dG", ln.get_grad("G"))
rec("layernorm.db", ln.get_grad("b"))

# NumpyOps.hash: four uint32 keys per uint64 id, for two seeds.
ids = numpy.concatenate([
    numpy.array([0, 1, 2, 255, 2**32 - 1, 2**32, 2**63, 2**64 - 1], dtype="uint64"),
    rng.randint(0, 2**63 - 1, size=8, dtype="int64").astype("uint64") * numpy.uint64(2) + numpy.uint64(1),
])
rec("hash.ids", ids)
for seed in (0, 1, 1234567):
    rec(f"hash.seed{seed}", ops.hash(ids, seed))

# --- CategoricalCrossentropy -------------------------------------------------------------------
Bc, C = 5, 4
logits = randf(Bc, C)
guesses = NumpyOps().softmax(logits)
cce_labels = numpy.array([0, 3, 1, 2, 2], dtype="int32")
rec("cce.guesses", guesses)
rec("cce.labels", cce_labels)
rec("cce.onehot", numpy.eye(C, dtype="float32")[cce_labels])
cases = {
    "int": (CategoricalCrossentropy(), cce_labels),
    "onehot": (CategoricalCrossentropy(), numpy.eye(C, dtype="float32")[cce_labels]),
    "unnorm": (CategoricalCrossentropy(normalize=False), cce_labels),
    "missing": (CategoricalCrossentropy(missing_value=2), cce_labels),
    "smooth": (CategoricalCrossentropy(label_smoothing=0.1), cce_labels),
}
for cname, (fn, truths) in cases.items():
    d, loss = fn(guesses, truths)
    rec(f"cce.{cname}.d", d)
    rec(f"cce.{cname}.loss", numpy.array(loss, dtype="float32"))

# string labels with names=, missing_value= and neg_prefix=; SequenceCategoricalCrossentropy
from thinc.api import SequenceCategoricalCrossentropy  # noqa: E402

names_c = ["a", "b", "c", "d"]
str_truths = ["b", "?", "!c", "d", "a"]
d, loss = CategoricalCrossentropy(names=names_c, missing_value="?", neg_prefix="!")(guesses, str_truths)
rec("cce.names.d", d)
rec("cce.names.loss", numpy.array(loss, dtype="float32"))
d, loss = CategoricalCrossentropy(names=names_c, label_smoothing=0.2, normalize=False)(guesses, ["c", "a", "a", "d", "b"])
rec("cce.names_smooth.d", d)
rec("cce.names_smooth.loss", numpy.array(loss, dtype="float32"))
seq_g = [NumpyOps().softmax(randf(3, 4)), NumpyOps().softmax(randf(2, 4))]
seq_t = [numpy.array([0, 3, 1], dtype="int32"), numpy.array([2, 2], dtype="int32")]
ds, loss = SequenceCategoricalCrossentropy()(seq_g, seq_t)
for i in range(2):
    rec(f"seqcce.g{i}", seq_g[i])
    rec(f"seqcce.t{i}", seq_t[i])
    rec(f"seqcce.d{i}", ds[i])
rec("seqcce.loss", numpy.array(loss, dtype="float32"))

# --- Thinc bytes: architectures saved by Thinc, predictions, ten Adam steps ---------------------
# For each: the bytes of the initialized model, an input, Thinc's predictions, and the bytes after
# ten Adam steps (L2Distance against fixed targets, dropout rate 0). tests/test_thinc_bytes.c
# builds the same trees with lithe's constructors.
from thinc.api import set_dropout_rate  # noqa: E402


def arch_case(name, model, X, *, resize=None):
    fix_random_seed(11)
    model.initialize(X=X)
    if resize is not None:
        resize(model)
    # parameters drawn here (Thinc's own init is numpy's RNG: lithe cannot reproduce it)
    for node in model.walk():
        for p in node.param_names:
            if node.has_param(p):
                v = randf(*node.get_param(p).shape, scale=0.5)
                if p == "G":
                    v = 1.0 + v * 0.2
                node.set_param(p, v)
    b0 = model.to_bytes()
    rec(f"bytes.{name}.b0", numpy.frombuffer(b0, dtype="uint8"))
    rec(f"bytes.{name}.X", X)
    Y = model.predict(X)
    rec(f"bytes.{name}.Y", Y)
    set_dropout_rate(model, 0.0)
    opt = Adam(0.01)
    T = randf(*Y.shape)
    rec(f"bytes.{name}.T", T)
    for _ in range(10):
        Yt, bp = model.begin_update(X)
        d, _ = L2Distance()(Yt, T)
        bp(d)
        model.finish_update(opt)
    rec(f"bytes.{name}.b10", numpy.frombuffer(model.to_bytes(), dtype="uint8"))


Xa6 = randf(7, 6)
arch_case("mlp", chain(chain(Relu(8, 6), Relu(5)), Softmax_v2(4)), Xa6)
arch_case("concat", chain(concatenate(Relu(3), Mish(2)), Softmax(3)), Xa6)
arch_case("residual", chain(residual(Relu(6, 6)), Linear(2)), Xa6)
arch_case("clone", chain(clone(Relu(6, 6), 3), Softmax_v2(3, normalize_outputs=False)), Xa6)
arch_case("maxout", chain(Maxout(6, nP=3, normalize=True, dropout=0.2), Maxout(5, nP=2), Softmax_v2(3)), Xa6)
arch_case("hashembed", chain(HashEmbed(5, 50, seed=3), Relu(4)),
          numpy.array([3, 99, 2**40, 7, 7, 12345, 0], dtype="uint64"))
arch_case("embed", chain(Embed(4, 20, column=1), Softmax_v2(3)),
          numpy.array([[1, 5], [2, 19], [0, 0], [3, 7], [4, 4], [9, 1], [8, 2]], dtype="int32"))
# (MultiSoftmax is left out here: Thinc 8.1.7's returns logits, see test_layers)
arch_case("nested_t2", chain(Relu(6), concatenate(residual(Relu(6, 6)), Linear(2)), Softmax_v2(3, temperature=2.0)),
          Xa6)
arch_case("resized", chain(Relu(5), resizable(Softmax_v2(3), resize_layer=partial(resize_linear_weighted))), Xa6,
          resize=lambda m: resize_model(m.layers[1], 4))
arch_case("add_ln", chain(add(Linear(4), Relu(4)), Gelu(3), LayerNorm()), Xa6)
arch_case("acts", chain(Swish(5), HardSwish(5), ClippedLinear(4, slope=2.0, offset=0.1, max_val=3.0), Mish(3),
                        Sigmoid(2)), Xa6)

# --- msgpack encodings (srsly, as Thinc writes) and .npy files (numpy.save) -----------------------
import io  # noqa: E402

import srsly  # noqa: E402

mp_values = [0, 127, 128, 255, 256, 65535, 65536, 2**32 - 1, 2**32, -1, -32, -33, -128, -129, -32768, -32769,
             -2**31, -2**31 - 1, 1.5, True, False, None, "a" * 31, "b" * 32, "c" * 256, b"x" * 255, b"y" * 256,
             list(range(16)), {"k": 1}, [], {}]
rec("msgpack.values", numpy.frombuffer(srsly.msgpack_dumps(mp_values), dtype="uint8"))

npy_arrays = {
    "f32": randf(3, 4),
    "i64": numpy.array([-5, 0, 2**40], dtype="int64"),
    "u8": numpy.arange(24, dtype="uint8").reshape(2, 3, 4),
    "scalar": numpy.array(2.5, dtype="float32"),
    "f16": randf(5).astype("float16"),
    "one": numpy.array([7], dtype="int32"),
    "empty": numpy.zeros((0, 3), dtype="float32"),
}
for nname, arr in npy_arrays.items():
    buf = io.BytesIO()
    numpy.save(buf, arr)
    rec(f"npy.{nname}.bytes", numpy.frombuffer(buf.getvalue(), dtype="uint8"))
    rec(f"npy.{nname}.values", arr.astype("float64").ravel(), exact64=True)

# --- L2Distance on any equal shapes (Thinc takes (B, T, N) sequences and 1-d arrays too), and the
# mean squared error in float64 (PyTorch's MSELoss / tfjs's meanSquaredError figure) --------------
for dname, shape in {"l2_3d": (3, 7, 4), "l2_1d": (6,)}.items():
    Gs, Ts = randf(*shape), randf(*shape)
    d, loss = L2Distance()(Gs, Ts)
    rec(f"dist.{dname}.guesses", Gs)
    rec(f"dist.{dname}.truths", Ts)
    rec(f"dist.{dname}.d", d)
    rec(f"dist.{dname}.loss", numpy.array(loss, dtype="float32"))
    rec(f"dist.{dname}.mse", numpy.array([((Gs.astype("float64") - Ts) ** 2).mean()]), exact64=True)

write("gen_thinc_goldens.py", "thinc_goldens.txt")
