#!/usr/bin/python3
"""Golden values from the real Thinc 8.1.7 for tests/test_sparse.c: SparseLinear v1 and v2,
strings2arrays, remap_ids v1 and v2, and uniqued (around HashEmbed), forward and backprop, plus
each model's to_bytes so lithe can load Thinc's bytes and write them back identically.

Run with Debian's interpreter: /usr/bin/python3 tests/golden/gen_sparse_goldens.py OUT.txt
(ctest runs it as the `sparse` fixture). Strings travel as their UTF-8 bytes (int arrays) with
offsets; Thinc's bytes as uint8 arrays.
"""
import struct
import sys

import numpy

from golden_records import rec, write

try:
    import thinc
    from murmurhash.mrmr import hash_bytes, hash_unicode
    from thinc.api import HashEmbed, SparseLinear, chain, strings2arrays, uniqued
    from thinc.layers.remap_ids import remap_ids, remap_ids_v2
    from thinc.layers.sparselinear import SparseLinear_v2
except ImportError as e:
    sys.exit(f"gen_sparse_goldens.py: {e}; install Debian's python3-thinc and run with /usr/bin/python3")

if not thinc.__version__.startswith("8.1."):
    sys.exit(f"gen_sparse_goldens.py: expected Thinc 8.1.x, found {thinc.__version__}")

rng = numpy.random.RandomState(5)


def randf(*shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype("float32")


def rec_bytes(name, b):
    rec(name, numpy.frombuffer(b, dtype="uint8").astype("int64"))


# --- MurmurHash3_x86_32 of uint64 keys (SparseLinear's hash), via murmurhash's own C ---------
keys = numpy.concatenate([
    numpy.array([0, 1, 2, 255, 2**32 - 1, 2**32, 2**63, 2**64 - 1], dtype="uint64"),
    rng.randint(0, 2**63 - 1, size=24, dtype="int64").astype("uint64") * numpy.uint64(2) + numpy.uint64(1),
])
rec("mm_keys", keys.view("int64"))  # two's complement bits
for seed in (0, 1, 7):
    rec(f"mm_seed{seed}", numpy.array([hash_bytes(struct.pack("<Q", int(k)), seed) & 0xFFFFFFFF for k in keys],
                                      dtype="int64"))


# MurmurHash3_x86_32 of byte strings of every tail length (what strings2arrays hashes)
blob = bytes(range(1, 40)) + "é日🙂".encode("utf8")
rec("mm_blob", numpy.frombuffer(blob, dtype="uint8").astype("int64"))
for seed in (0, 1, 42):
    rec(f"mm_blob_seed{seed}", numpy.array([hash_bytes(blob[:n], seed) & 0xFFFFFFFF for n in range(len(blob) + 1)],
                                           dtype="int64"))

# --- SparseLinear v1 and v2 ------------------------------------------------------------------
def sparse_case(prefix, make, nO, length, lengths):
    model = make(nO=nO, length=length)
    model.initialize()
    N = int(sum(lengths))
    k = rng.randint(0, 2**62, size=N, dtype="int64").astype("uint64") * numpy.uint64(3)
    if N:
        k[0] = numpy.uint64(2**64 - 5)
    if N > 3:
        k[3] = k[1]  # a repeated key accumulates
    v = randf(N)
    lens = numpy.asarray(lengths, dtype="int32")
    W = randf(nO * length, scale=0.5)
    b = randf(nO, scale=0.5)
    model.set_param("W", W)
    model.set_param("b", b)
    Y, bp = model.begin_update((k, v, lens))
    dY = randf(*Y.shape)
    dX = bp(dY)
    assert dX[0] is k
    rec(f"{prefix}_keys", k.view("int64"))
    rec(f"{prefix}_values", v)
    rec(f"{prefix}_lengths", lens)
    rec(f"{prefix}_W", W)
    rec(f"{prefix}_b", b)
    rec(f"{prefix}_Y", Y)
    rec(f"{prefix}_dY", dY)
    rec(f"{prefix}_dW", model.get_grad("W"))
    rec(f"{prefix}_db", model.get_grad("b"))
    rec_bytes(f"{prefix}_bytes", model.to_bytes())


sparse_case("sl2", SparseLinear_v2, 3, 16, [3, 0, 2, 4])
sparse_case("sl1", SparseLinear, 3, 16, [3, 0, 2, 4])
sparse_case("sl2odd", SparseLinear_v2, 4, 37, [5, 1, 6])
sparse_case("sl1odd", SparseLinear, 4, 37, [5, 1, 6])  # length not a power of two: h & 36
sparse_case("sl2empty", SparseLinear_v2, 2, 8, [0, 0])
sparse_case("sl1len1", SparseLinear, 5, 1, [2, 3])  # one slot per class: every key hits W[class]
sparse_case("sl2len1", SparseLinear_v2, 5, 1, [2, 3])
sparse_case("sl2nO1", SparseLinear_v2, 1, 64, [4, 4, 0, 1])
# An empty batch (no rows): Thinc 8.1.7's backprop fails indexing d_scores[0, 0]; lithe gives zero grads.

# --- strings2arrays --------------------------------------------------------------------------
docs = [["hello", "world", "", "héllo", "naïve café", "日本語のテキスト", "a", "ab", "abc", "abcd", "abcde"],
        [],
        ["x" * 41, "🙂 emoji", "The", "the", "THE"]]
s2a = strings2arrays()
out, bp = s2a.begin_update(docs)
assert bp(out) == []
flat = [w for d in docs for w in d]
enc = [w.encode("utf8") for w in flat]
rec("s2a_bytes", numpy.frombuffer(b"".join(enc), dtype="uint8").astype("int64"))
rec("s2a_offsets", numpy.cumsum([0] + [len(e) for e in enc]).astype("int64"))
rec("s2a_doclens", numpy.array([len(d) for d in docs], dtype="int64"))
assert all(a.dtype == numpy.uint64 and a.shape == (len(d), 1) for a, d in zip(out, docs))
rec("s2a_hashes", numpy.concatenate([a.ravel() for a in out]).view("int64") if flat else numpy.zeros(0, "int64"))
rec("s2a_signed", numpy.array([hash_unicode(w) for w in flat], dtype="int64"))

# --- remap_ids v1 (strings -> int32) and v2 (ints with column) --------------------------------
table1 = {"cat": 3, "dog": 7, "": 1, "émile": 12, "fish": -2}
m1 = remap_ids(table1, default=5)
words = ["dog", "cow", "cat", "", "émile", "fish", "dogs"]
Y1, bp1 = m1.begin_update(words)
assert bp1(Y1) == []
wenc = [w.encode("utf8") for w in words]
rec("r1_bytes_in", numpy.frombuffer(b"".join(wenc), dtype="uint8").astype("int64"))
rec("r1_offsets", numpy.cumsum([0] + [len(e) for e in wenc]).astype("int64"))
tenc = [w.encode("utf8") for w in table1]
rec("r1_tbytes", numpy.frombuffer(b"".join(tenc), dtype="uint8").astype("int64"))
rec("r1_toffsets", numpy.cumsum([0] + [len(e) for e in tenc]).astype("int64"))
rec("r1_tvalues", numpy.array(list(table1.values()), dtype="int64"))
rec("r1_Y", Y1)
rec_bytes("r1_model_bytes", m1.to_bytes())

table2 = {10: 0, 20: 1, 2**40: 2, -3: 3, 7: 300}
m2 = remap_ids_v2(table2, default=-1, column=1)
X2 = numpy.array([[0, 10], [1, 7], [2, 99], [3, -3], [4, 2**40], [5, 10]], dtype="int64")
Y2, bp2 = m2.begin_update(X2)
dX2 = bp2(numpy.zeros(Y2.shape, dtype="float32"))
assert dX2.shape == Y2.shape
rec("r2_X", X2)
rec("r2_tkeys", numpy.array(list(table2.keys()), dtype="int64"))
rec("r2_tvalues", numpy.array(list(table2.values()), dtype="int64"))
rec("r2_Y", Y2)
rec_bytes("r2_model_bytes", m2.to_bytes())
m2n = remap_ids_v2(None)
rec_bytes("r2none_model_bytes", m2n.to_bytes())
m1e = remap_ids()
rec_bytes("r1empty_model_bytes", m1e.to_bytes())

# --- uniqued(HashEmbed(column=0)) with repeated ids -------------------------------------------
nO, nV = 4, 13
he = HashEmbed(nO, nV, seed=11, column=0)
u = uniqued(he, column=0)
Xu = numpy.array([[5, 0], [3, 1], [5, 2], [2**63 + 9, 3], [3, 4], [5, 5], [0, 6], [2**63 + 9, 7]], dtype="uint64")
u.initialize(X=Xu)
emb = he.layers[1]
E = randf(nV, nO, scale=0.5)
emb.set_param("E", E)
Yu, bpu = u.begin_update(Xu)
dYu = randf(*Yu.shape)
dXu = bpu(dYu)
rec("u_X", Xu.view("int64"))
rec("u_E", E)
rec("u_Y", Yu)
rec("u_dY", dYu)
rec("u_dE", emb.get_grad("E"))
rec("u_dX", numpy.asarray(dXu, dtype="float32"))
rec_bytes("u_model_bytes", u.to_bytes())
# a single row goes straight to the layer
Y1r = u.predict(Xu[:1])
rec("u_Y1", Y1r)

write("gen_sparse_goldens.py", "sparse_goldens.txt")
