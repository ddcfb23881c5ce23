#!/usr/bin/python3
"""Useful MACs of each node of an ONNX model, from the ONNX graph alone (docs/reports.md,
"Useful MACs"): ONNX's own shape inference gives every tensor's shape, and the operator
definitions give the products. It shares no code with vtpu; tests/e2e/test_report_bounds.cpp
compares the compiler's per-layer counts with it.

  onnx_useful_macs.py MODEL.onnx    prints "node-name<TAB>macs" for every node with MACs

A symbolic leading dimension of a graph input is taken as batch 1 (a model compiled without
--batch).

Counted: MatMul and Gemm (output elements x the contracted length), Conv (per output
position, the kernel taps whose input position lies inside the image, x input channels per
group x output channels; taps on padding are not counted), LSTM and GRU (per time step and
direction, batch x gates x hidden x (input + hidden); with no initial_h or a constant one,
the first step's recurrent product is not counted: it is made at compile time). Everything else is 0 (pools,
element-wise ops, normalization, Gather: no products of the operator's definition).
"""
import sys

import onnx
from onnx import shape_inference


def dims(vi):
    return [d.dim_value for d in vi.type.tensor_type.shape.dim]


def attr(node, name, default):
    for a in node.attribute:
        if a.name == name:
            return onnx.helper.get_attribute_value(a)
    return default


def inside_taps(out_len, in_len, k, stride, pad_begin, dilation):
    """Sum over output positions of the kernel taps that read inside [0, in_len)."""
    total = 0
    for o in range(out_len):
        for t in range(k):
            i = o * stride - pad_begin + t * dilation
            if 0 <= i < in_len:
                total += 1
    return total


def conv_macs(node, shape):
    x, w, y = shape[node.input[0]], shape[node.input[1]], shape[node.output[0]]
    group = attr(node, "group", 1)
    spatial = len(x) - 2
    strides = attr(node, "strides", [1] * spatial)
    dil = attr(node, "dilations", [1] * spatial)
    pads = attr(node, "pads", [0] * (2 * spatial))
    if attr(node, "auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
        raise SystemExit(f"{node.name}: auto_pad is not counted by this script")
    taps = 1
    for d in range(spatial):
        taps *= inside_taps(y[2 + d], x[2 + d], w[2 + d], strides[d], pads[d], dil[d])
    return x[0] * taps * (x[1] // group) * y[1]


def matmul_macs(node, shape):
    a, y = shape[node.input[0]], shape[node.output[0]]
    if node.op_type == "Gemm":
        k = a[0] if attr(node, "transA", 0) else a[1]
    else:
        k = a[-1]
    n = 1
    for d in y:
        n *= d
    return n * k


def rnn_macs(node, shape, gates, constants):
    x, w = shape[node.input[0]], shape[node.input[1]]
    layout = attr(node, "layout", 0)
    steps, batch = (x[1], x[0]) if layout else (x[0], x[1])
    dirs, gh, inp = w
    hidden = gh // gates
    # With no initial_h (input 5), or a constant one, the first step's recurrent product is
    # a product with constants: made at compile time, not counted.
    h0_constant = len(node.input) <= 5 or node.input[5] == "" or node.input[5] in constants
    recurrent_steps = steps - 1 if h0_constant else steps
    return dirs * batch * gates * hidden * (steps * inp + recurrent_steps * hidden)


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    m = onnx.load(sys.argv[1])
    # A symbolic leading dimension of an input is the batch: 1, as a model compiles without
    # --batch (vtpu's importer does the same; the script shares no code with it).
    inits = {t.name for t in m.graph.initializer}
    for vi in m.graph.input:
        dims0 = vi.type.tensor_type.shape.dim
        if vi.name not in inits and len(dims0) and not dims0[0].HasField("dim_value"):
            dims0[0].dim_value = 1
    m = shape_inference.infer_shapes(m, strict_mode=True)
    shape = {vi.name: dims(vi) for vi in list(m.graph.value_info) + list(m.graph.input) + list(m.graph.output)}
    for t in m.graph.initializer:
        shape[t.name] = list(t.dims)
    constants = {t.name for t in m.graph.initializer}
    constants |= {o for n in m.graph.node if n.op_type == "Constant" for o in n.output}
    for node in m.graph.node:
        if node.op_type == "Conv":
            macs = conv_macs(node, shape)
        elif node.op_type in ("MatMul", "Gemm"):
            macs = matmul_macs(node, shape)
        elif node.op_type == "LSTM":
            macs = rnn_macs(node, shape, 4, constants)
        elif node.op_type == "GRU":
            macs = rnn_macs(node, shape, 3, constants)
        else:
            continue
        print(f"{node.name}\t{macs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
