#!/usr/bin/python3
"""Golden values from the real Thinc 8.1 for tests/test_sequences.c: the transfer layers
(list2ragged, ragged2list, list2padded, padded2list, list2array), the with_* combinators, the
Ragged reductions and expand_window — outputs and gradients, computed by NumpyOps.

    /usr/bin/python3 tests/golden/gen_sequences_goldens.py OUT.txt

Values are written as records (see golden_records.py): a list of arrays NAME as NAME.n and
NAME.0, NAME.1, ... (a tuple also has NAME.tuple); a Ragged as NAME.data and NAME.lengths; a Padded as NAME.data,
NAME.size_at_t, NAME.lengths and NAME.indices.
"""
import sys

import numpy

from golden_records import rec, write

try:
    import thinc
    from thinc.api import (HashEmbed, Linear, Maxout, NumpyOps, Padded, Ragged, Relu, Softmax, chain,
                           expand_window, list2array, list2padded, list2ragged, padded2list, ragged2list,
                           reduce_first, reduce_last, reduce_max, reduce_mean, reduce_sum, with_array,
                           with_array2d, with_flatten, with_getitem, with_list, with_padded, with_ragged,
                           with_reshape)
    from thinc.layers.with_flatten_v2 import with_flatten_v2
except ImportError as e:
    sys.exit(f"gen_sequences_goldens.py: {e}; install Debian's python3-thinc and run with /usr/bin/python3")

if not thinc.__version__.startswith("8.1."):
    sys.exit(f"gen_sequences_goldens.py: expected Thinc 8.1.x, found {thinc.__version__}")

rng = numpy.random.RandomState(5)
ops = NumpyOps()


def randf(*shape):
    return rng.standard_normal(shape).astype("float32")


def rec_value(name, v):
    if isinstance(v, Ragged):
        rec(f"{name}.data", v.data)
        rec(f"{name}.lengths", v.lengths)
    elif isinstance(v, Padded):
        rec(f"{name}.data", v.data)
        rec(f"{name}.size_at_t", v.size_at_t)
        rec(f"{name}.lengths", v.lengths)
        rec(f"{name}.indices", v.indices)
    elif isinstance(v, (list, tuple)):
        rec(f"{name}.n", numpy.array(len(v)))
        if isinstance(v, tuple):
            rec(f"{name}.tuple", numpy.array(1))
        for i, x in enumerate(v):
            rec_value(f"{name}.{i}", x)
    else:
        rec(name, v)


def like(v):
    """A random gradient shaped like v."""
    if isinstance(v, Ragged):
        return Ragged(randf(*v.data.shape), v.lengths)
    if isinstance(v, Padded):
        return Padded(randf(*v.data.shape), v.size_at_t, v.lengths, v.indices)
    if isinstance(v, list):
        return [like(x) for x in v]
    if isinstance(v, tuple):
        return tuple(like(x) for x in v)
    return randf(*v.shape)


def case(name, model, X):
    """Forward (train) and backprop of model on X, recording X, Y, dY and dX."""
    Y, backprop = model.begin_update(X)
    dY = like(Y)
    dX = backprop(dY)
    rec_value(f"{name}.X", X)
    rec_value(f"{name}.Y", Y)
    rec_value(f"{name}.dY", dY)
    rec_value(f"{name}.dX", dX)
    return Y


def seqs(lengths, width):
    return [randf(n, width) for n in lengths]


def dense_params(name, layer):
    rec(f"{name}.W", layer.get_param("W"))
    rec(f"{name}.b", layer.get_param("b"))


# --- transfers ----------------------------------------------------------------------------
Xs = seqs([3, 1, 4, 4, 2], 3)  # ties: Padded orders equal lengths by the larger index first
case("list2ragged", list2ragged(), Xs)
case("ragged2list", ragged2list(), Ragged(ops.flatten(Xs), ops.asarray1i([3, 1, 4, 4, 2])))
case("list2padded", list2padded(), Xs)
case("padded2list", padded2list(), ops.list2padded(Xs))
case("list2array", list2array(), Xs)
case("list2ragged_empty_item", list2ragged(), seqs([2, 0, 3], 3))
case("list2padded_single", list2padded(), seqs([4], 3))

# --- with_* -------------------------------------------------------------------------------
def relu(nO, nI):
    layer = Relu(nO, nI)
    layer.initialize()
    layer.set_param("W", randf(nO, nI))
    layer.set_param("b", randf(nO))
    return layer


for pad in (0, 2):
    layer = relu(4, 3)
    dense_params(f"with_array_list_pad{pad}", layer)
    case(f"with_array_list_pad{pad}", with_array(layer, pad=pad), seqs([3, 0, 2], 3))
layer = relu(4, 3)
dense_params("with_array_ragged", layer)
case("with_array_ragged", with_array(layer), Ragged(randf(6, 3), ops.asarray1i([2, 4])))
layer = relu(4, 3)
dense_params("with_array2d_padded", layer)
case("with_array2d_padded", with_array2d(layer), ops.list2padded(seqs([3, 1, 2], 3)))
case("with_ragged_list", with_ragged(expand_window(1)), seqs([3, 1, 2], 2))
case("with_ragged_padded", with_ragged(expand_window(1)), ops.list2padded(seqs([3, 1, 2], 2)))
for kind, X in (("list", seqs([3, 1, 2], 3)), ("ragged", Ragged(randf(6, 3), ops.asarray1i([1, 5]))),
                ("array", randf(4, 2, 3))):
    layer = relu(4, 3)
    dense_params(f"with_padded_{kind}", layer)
    case(f"with_padded_{kind}", with_padded(with_array2d(layer)), X)  # NumpyOps gemm needs 2-d
for kind, X in (("ragged", Ragged(randf(6, 3), ops.asarray1i([4, 2]))), ("padded", ops.list2padded(seqs([2, 3], 3)))):
    layer = relu(2, 3)
    dense_params(f"with_list_{kind}", layer)
    case(f"with_list_{kind}", with_list(with_array(layer)), X)
layer = relu(2, 3)
dense_params("with_flatten_v2", layer)
nested = [seqs([2, 1], 3), [], seqs([3], 3)]
case("with_flatten_v2", with_flatten_v2(with_array(layer)), nested)
layer = relu(2, 3)
dense_params("with_flatten_v1", layer)
model = with_flatten(chain(list2array(), layer))
Y = model.predict(nested)  # Thinc 8.1.7's v1 backprop splits along the last axis: forward only
rec_value("with_flatten_v1.X", nested)
rec_value("with_flatten_v1.Y", Y)
layer = relu(2, 3)
dense_params("with_getitem", layer)
case("with_getitem", with_getitem(1, layer), (randf(2, 5), randf(4, 3), randf(1, 1)))
layer = Linear(2, 3)
layer.initialize()
layer.set_param("W", randf(2, 3))
layer.set_param("b", randf(2))
dense_params("with_reshape", layer)
X = randf(2, 4, 3)
rec_value("with_reshape.X", X)
rec_value("with_reshape.Y", with_reshape(layer).predict(X))  # its backprop is broken unless nO == nI

# --- reductions and windows ---------------------------------------------------------------
R = Ragged(randf(10, 3), ops.asarray1i([2, 3, 1, 4]))
for name, layer in (("reduce_sum", reduce_sum()), ("reduce_mean", reduce_mean()), ("reduce_max", reduce_max()),
                    ("reduce_first", reduce_first()), ("reduce_last", reduce_last())):
    case(name, layer, R)
R0 = Ragged(randf(5, 3), ops.asarray1i([2, 0, 3]))
case("reduce_sum_zero", reduce_sum(), R0)
case("reduce_mean_zero", reduce_mean(), R0)
Rtie = Ragged(numpy.array([[1, 2], [1, 5], [0, 5]], dtype="float32"), ops.asarray1i([3]))
case("reduce_max_tie", reduce_max(), Rtie)
for nW in (1, 2):
    case(f"expand_window{nW}_array", expand_window(nW), randf(5, 3))
    case(f"expand_window{nW}_ragged", expand_window(nW), Ragged(randf(8, 3), ops.asarray1i([3, 1, 4])))
case("expand_window1_ragged_zero", expand_window(1), Ragged(randf(4, 2), ops.asarray1i([0, 4, 0])))

# --- array_getitem: numpy indexing, as strings lithe parses ---------------------------------
from thinc.layers.array_getitem import array_getitem, floats_getitem, ints_getitem  # noqa: E402

GETITEM = [("col", "[:, 3]", (slice(None), 3)), ("rows_step", "[1::2]", (slice(1, None, 2),)),
           ("list", "[[0, 3, 1]]", ([0, 3, 1],)), ("last", "[-1]", (-1,)),
           ("reverse", "[::-1, 1:4]", (slice(None, None, -1), slice(1, 4))),
           ("list_cols", "[1:3, [4, 0]]", (slice(1, 3), [4, 0]))]
Xg = randf(4, 5)
for name, text, index in GETITEM:
    rec(f"getitem_{name}.index", numpy.frombuffer(text.encode(), dtype="uint8"))
    case(f"getitem_{name}", floats_getitem(index), Xg)
rec("getitem_dup.index", numpy.frombuffer(b"[[2, 2, 0]]", dtype="uint8"))
rec_value("getitem_dup.X", Xg)
rec_value("getitem_dup.Y", array_getitem(([2, 2, 0],)).predict(Xg))  # numpy's backprop keeps one of the two
ids = numpy.array([[1, 7, 3], [4, 5, 6]], dtype="int32")
rec_value("getitem_ints.X", ids)
rec_value("getitem_ints.Y", ints_getitem((slice(None), 2)).predict(ids))

# --- a spaCy-style tagger: lists of ids -> Ragged -> windows -> Maxout -> Softmax -> lists ---
tagger = chain(list2ragged(), with_array(HashEmbed(8, 50, seed=7)), expand_window(1),
               with_array(Maxout(6, nP=3, normalize=True)), with_array(Softmax(5)), ragged2list())
docs = [numpy.array(ids, dtype="uint64") for ids in ([5, 17, 3, 99], [2], [40, 41, 42], [7, 7])]
tagger.initialize(X=docs)
for node in tagger.walk():  # non-trivial weights everywhere (Softmax starts at zero)
    for p in node.param_names:
        if node.has_param(p):
            node.set_param(p, randf(*node.get_param(p).shape) * 0.5)
rec("tagger.bytes", numpy.frombuffer(tagger.to_bytes(), dtype="uint8"))
case("tagger", tagger, docs)

write("gen_sequences_goldens.py", "sequences_goldens.txt")
