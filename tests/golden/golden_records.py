"""The golden-record writer shared by the tests/golden/gen_*_goldens.py scripts (one per topic).

Each script calls rec() for every array and write() at the end. The file is text, one record per
array:

    <name> <f|d|i> <ndim> <dim0> ... <dimN-1>
    <values, space separated: f float32 as %.9g (round-trips), d float64 as %.17g, i integers>

tests/golden/golden.c reads it. Written to a temporary file and renamed, so a failed run never
leaves half a golden file behind.
"""
import os
import sys

import numpy

records = []


def rec(name, arr, *, exact64=False):
    arr = numpy.asarray(arr)
    if exact64:  # hyper-parameters: kept as the doubles Thinc holds
        kind = "d"
        vals = " ".join("%.17g" % float(v) for v in arr.ravel())
    elif arr.dtype.kind == "f":
        arr = arr.astype("float32")
        kind = "f"
        vals = " ".join("%.9g" % float(v) for v in arr.ravel())
    elif arr.dtype.kind in "iub":
        kind = "i"
        vals = " ".join(str(int(v)) for v in arr.ravel())
    else:
        raise TypeError(name)
    records.append(f"{name} {kind} {arr.ndim} {' '.join(str(d) for d in arr.shape)}".rstrip() + "\n" + vals + "\n")


def write(script, default_out):
    """Writes the records to argv[1] (or default_out), naming the Thinc that made them."""
    import thinc

    out = sys.argv[1] if len(sys.argv) > 1 else default_out
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        f.write(f"# Thinc {thinc.__version__}, numpy {numpy.__version__}: tests/golden/{script}\n")
        f.writelines(records)
    os.replace(tmp, out)
    print(f"wrote {len(records)} arrays from Thinc {thinc.__version__} to {out}")
