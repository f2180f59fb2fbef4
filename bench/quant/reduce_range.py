#!/usr/bin/python3
"""A QDQ ONNX file's int8 weights moved to onnxruntime's reduce_range grid (codes in [-64, 64]): every
DequantizeLinear reading an int8 initializer gets round(q / 2) clipped to [-64, 64] and twice its
scale. For timing lithe's u8 x s8 convolution tile (backends/cpu/conv/qconv.h), which runs where the
weights' pairs fit vpmaddubsw's int16 (reduce_range weights always do); the model's accuracy moves
by the coarser grid (speed only).

    /usr/bin/python3 bench/quant/reduce_range.py IN_qdq.onnx OUT_qdq.onnx
"""
import sys

import numpy
import onnx
from onnx import numpy_helper


def main():
    m = onnx.load(sys.argv[1])
    inits = {t.name: t for t in m.graph.initializer}
    n = 0
    for node in m.graph.node:
        if node.op_type != "DequantizeLinear" or node.input[0] not in inits:
            continue
        q = numpy_helper.to_array(inits[node.input[0]])
        if q.dtype != numpy.int8:
            continue
        s = numpy_helper.to_array(inits[node.input[1]])
        q2 = numpy.clip(numpy.round(q.astype(numpy.float64) / 2), -64, 64).astype(numpy.int8)
        inits[node.input[0]].CopyFrom(numpy_helper.from_array(q2, node.input[0]))
        inits[node.input[1]].CopyFrom(numpy_helper.from_array((s * 2).astype(s.dtype), node.input[1]))
        n += 1
    onnx.save(m, sys.argv[2])
    print(f"reduce_range: {n} weights -> {sys.argv[2]}")


if __name__ == "__main__":
    main()
