"""Mutations of ONNX models, as a hostile user would make them (tests/fuzz/mutate.py).

Each mutator takes a parsed onnx.ModelProto (a fresh copy), a random.Random and the
directory the mutant will live in, changes the model in place and returns a short
description; byte-level mutators work on the serialized model instead.
"""
import os
import random

import numpy as np
from onnx import AttributeProto, ModelProto, TensorProto, helper

HUGE = [2**31 - 1, 2**31, 2**32, 2**40, 2**62, 2**63 - 1]
BAD_INTS = [0, -1, -2, -(2**31), 1, 2, 3, 7, 1000] + HUGE


def _pick(rng, seq):
    return seq[rng.randrange(len(seq))] if seq else None


def _nodes_with_attrs(m):
    return [n for n in m.graph.node if len(n.attribute)]


def attr_value(m, rng, _dir):
    nodes = _nodes_with_attrs(m)
    if not nodes:
        return None
    n = _pick(rng, nodes)
    a = _pick(rng, n.attribute)
    if a.type == AttributeProto.INTS:
        k = rng.randrange(5)
        if k == 0 and len(a.ints):
            a.ints[rng.randrange(len(a.ints))] = _pick(rng, BAD_INTS)
        elif k == 1:
            del a.ints[:]
        elif k == 2 and len(a.ints):
            del a.ints[-1]
        elif k == 3:
            a.ints.append(_pick(rng, BAD_INTS))
        else:
            for i in range(len(a.ints)):
                a.ints[i] = _pick(rng, BAD_INTS)
    elif a.type == AttributeProto.INT:
        a.i = _pick(rng, BAD_INTS)
    elif a.type == AttributeProto.FLOAT:
        a.f = _pick(rng, [float("nan"), float("inf"), -float("inf"), 0.0, -1.0, 1e38, -1e-38])
    elif a.type == AttributeProto.STRING:
        a.s = _pick(rng, [b"", b"SAME_LOWER", b"VALID", b"bogus", b"\x00\xff", b"A" * 300])
    elif a.type == AttributeProto.FLOATS and len(a.floats):
        a.floats[rng.randrange(len(a.floats))] = _pick(rng, [float("nan"), float("inf"), -1.0, 0.0])
    elif a.type == AttributeProto.TENSOR:
        _mutate_tensor(a.t, rng, _dir)
    return f"attribute {n.op_type}.{a.name} value"


def attr_type(m, rng, _dir):
    nodes = _nodes_with_attrs(m)
    if not nodes:
        return None
    n = _pick(rng, nodes)
    a = _pick(rng, n.attribute)
    t = _pick(rng, [AttributeProto.INT, AttributeProto.INTS, AttributeProto.FLOAT, AttributeProto.STRING,
                    AttributeProto.FLOATS, AttributeProto.UNDEFINED, AttributeProto.TENSOR])
    a.type = t
    if t == AttributeProto.FLOAT:
        a.f = 2.5
    if t == AttributeProto.STRING:
        a.s = b"3"
    return f"attribute {n.op_type}.{a.name} type -> {t}"


def attr_structure(m, rng, _dir):
    if not len(m.graph.node):
        return None
    n = _pick(rng, list(m.graph.node))
    k = rng.randrange(4)
    if k == 0 and len(n.attribute):
        a = _pick(rng, n.attribute)
        n.attribute.append(a)  # duplicated
        return f"attribute {n.op_type}.{a.name} duplicated"
    if k == 1 and len(n.attribute):
        a = _pick(rng, n.attribute)
        n.attribute.remove(a)
        return f"attribute {n.op_type}.{a.name} removed"
    name = _pick(rng, ["bogus", "axis", "axes", "strides", "dilations", "pads", "kernel_shape", "group", "alpha",
                       "keepdims", "perm", "to", "mode", "epsilon", "__internal"])
    if any(a.name == name for a in n.attribute):
        return None
    val = _pick(rng, [0, -1, 2, [0, 0], [1, 2, 3], 0.5, "x"])
    n.attribute.append(helper.make_attribute(name, val))
    return f"attribute {n.op_type}.{name} added"


def arity(m, rng, _dir):
    if not len(m.graph.node):
        return None
    n = _pick(rng, list(m.graph.node))
    k = rng.randrange(4)
    if k == 0 and len(n.input):
        del n.input[rng.randrange(len(n.input))]
        return f"{n.op_type}: an input removed"
    if k == 1:
        n.input.append(_pick(rng, list(n.input) + [""]) if len(n.input) else "")
        return f"{n.op_type}: an input added"
    if k == 2 and len(n.output):
        n.output.append(n.output[0] + "_extra")
        return f"{n.op_type}: an output added"
    if len(n.input):
        n.input[rng.randrange(len(n.input))] = ""
        return f"{n.op_type}: an input emptied"
    return None


def dims(m, rng, _dir):
    vis = list(m.graph.input) + list(m.graph.output)
    if not vis:
        return None
    v = _pick(rng, vis)
    if not v.type.HasField("tensor_type"):
        return None
    shp = v.type.tensor_type.shape
    k = rng.randrange(5)
    if k == 0 and len(shp.dim):
        d = _pick(rng, shp.dim)
        d.dim_value = _pick(rng, [0, -1, -5] + HUGE)
    elif k == 1:
        shp.dim.add().dim_value = _pick(rng, [1, 2, 3])
    elif k == 2 and len(shp.dim):
        del shp.dim[-1]
    elif k == 3 and len(shp.dim):
        d = _pick(rng, shp.dim)
        d.dim_param = _pick(rng, ["N", "", "batch"])
    else:
        v.type.tensor_type.ClearField("shape")
    return f"dims of '{v.name}'"


def _mutate_tensor(t, rng, dir_):
    k = rng.randrange(8)
    if k == 0 and len(t.dims):
        t.dims[rng.randrange(len(t.dims))] = _pick(rng, [-1, -3, 0] + HUGE)
    elif k == 1:
        if t.raw_data:
            t.raw_data = t.raw_data[: rng.randrange(len(t.raw_data) + 1)]
        else:
            t.raw_data = b"\x00" * rng.randrange(64)
    elif k == 2:
        t.raw_data = t.raw_data + b"\x01" * rng.randrange(1, 64)
    elif k == 3:
        t.data_type = _pick(rng, [0, 7, 8, 9, 10, 11, 12, 13, 16, 999])
    elif k == 4:
        _external(t, rng, dir_)
    elif k == 5 and t.data_type == TensorProto.FLOAT and t.raw_data:
        a = np.frombuffer(t.raw_data, dtype=np.float32).copy()
        if a.size:
            a[rng.randrange(a.size)] = _pick(rng, [np.nan, np.inf, -np.inf, 3e38])
            t.raw_data = a.tobytes()
    elif k == 6:
        t.ClearField("raw_data")
        t.float_data.extend([1.0] * rng.randrange(5))
    else:
        t.dims.append(_pick(rng, [2, 0, 2**33]))


def _external(t, rng, dir_):
    """Moves a tensor's data to external data, often hostile."""
    data = t.raw_data
    t.ClearField("raw_data")
    t.data_location = TensorProto.EXTERNAL
    del t.external_data[:]
    k = rng.randrange(9)
    loc, off, length = "weights.bin", None, None
    if k == 0:
        loc = "../../../../../../etc/passwd"
    elif k == 1:
        loc = "/etc/passwd"
    elif k == 2:
        loc, length = "/dev/urandom", str(2**40)
    elif k == 3:
        off = _pick(rng, ["abc", "-5", "1e3", "99999999999999999999", str(2**62)])
    elif k == 4:
        length = _pick(rng, ["abc", "-1", str(2**40), "0x10"])
    elif k == 5:
        loc = "missing.bin"
    elif k == 6:
        loc = "."
    elif k == 7:
        loc = "sub/../weights.bin"
    if loc == "weights.bin" or loc == "sub/../weights.bin":
        with open(os.path.join(dir_, "weights.bin"), "wb") as f:
            f.write(data)
        os.makedirs(os.path.join(dir_, "sub"), exist_ok=True)
    entries = [("location", loc)]
    if off is not None:
        entries.append(("offset", off))
    if length is not None:
        entries.append(("length", length))
    if rng.randrange(6) == 0:
        entries.append(("bogus_key", "1"))
    for key, value in entries:
        e = t.external_data.add()
        e.key, e.value = key, value


def initializer(m, rng, dir_):
    if not len(m.graph.initializer):
        return None
    t = _pick(rng, m.graph.initializer)
    _mutate_tensor(t, rng, dir_)
    return f"initializer '{t.name}'"


def external(m, rng, dir_):
    if not len(m.graph.initializer):
        return None
    t = _pick(rng, m.graph.initializer)
    _external(t, rng, dir_)
    return f"initializer '{t.name}' external: " + ",".join(f"{e.key}={e.value}" for e in t.external_data)


def opset(m, rng, _dir):
    k = rng.randrange(5)
    if k == 0 and len(m.opset_import):
        m.opset_import[0].version = _pick(rng, [0, 1, 5, 6, 18, 19, 99, -1, 2**40])
    elif k == 1:
        o = m.opset_import.add()
        o.domain, o.version = "", _pick(rng, [7, 13, 17])
    elif k == 2:
        del m.opset_import[:]
    elif k == 3 and len(m.graph.node):
        _pick(rng, list(m.graph.node)).domain = _pick(rng, ["com.microsoft", "ai.onnx.ml", "bogus"])
    else:
        m.ir_version = _pick(rng, [0, 1, 2, 3, 11, 99, -1])
    return "opset/ir_version"


def dtype(m, rng, _dir):
    vis = list(m.graph.input) + list(m.graph.output)
    if not vis:
        return None
    v = _pick(rng, vis)
    if not v.type.HasField("tensor_type"):
        return None
    v.type.tensor_type.elem_type = _pick(rng, [0, 2, 3, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 16, 999])
    return f"elem_type of '{v.name}'"


def structure(m, rng, _dir):
    g = m.graph
    k = rng.randrange(9)
    if k == 0 and len(g.node):
        n = _pick(rng, list(g.node))
        if len(n.input):
            n.input[rng.randrange(len(n.input))] = _pick(rng, ["nowhere", n.output[0] if len(n.output) else "x"])
            return f"{n.op_type}: input from nowhere or itself"
    if k == 1 and len(g.node) and len(g.node[0].output):
        g.node[0].output[0] = g.input[0].name if len(g.input) else "x"
        return "node output shadows a graph input"
    if k == 2 and len(g.output):
        del g.output[rng.randrange(len(g.output))]
        return "graph output removed"
    if k == 3 and len(g.output) and len(g.input):
        g.output[0].name = g.input[0].name
        return "graph output is a graph input"
    if k == 4 and len(g.initializer):
        del g.initializer[rng.randrange(len(g.initializer))]
        return "initializer removed"
    if k == 5 and len(g.node) > 1:
        nodes = list(g.node)
        rng.shuffle(nodes)
        del g.node[:]
        g.node.extend(nodes)
        return "nodes shuffled"
    if k == 6 and len(g.node):
        g.node.append(g.node[0])
        return "node duplicated"
    if k == 7 and len(g.initializer) > 0:
        g.initializer.append(g.initializer[0])
        return "initializer duplicated"
    if len(g.node):
        n = _pick(rng, list(g.node))
        n.op_type = _pick(rng, ["", "Bogus", "Loop", "If", "Conv", "MatMul", "Relu", "Identity"])
        return f"op type -> {n.op_type}"
    return None


def output_name(m, rng, dir_):
    """Graph output names that are paths: must never be written outside --output-dir."""
    g = m.graph
    if not len(g.output):
        return None
    o = _pick(rng, g.output)
    new = _pick(rng, ["../escape_rel", os.path.join(dir_, "escape_abs"), "", "a/b", ".", "..", "x\x00y", "n" * 300])
    old = o.name
    for n in g.node:
        for i, s in enumerate(n.output):
            if s == old:
                n.output[i] = new
        for i, s in enumerate(n.input):
            if s == old:
                n.input[i] = new
    o.name = new
    return f"output name {new!r}"


STRUCTURED = [attr_value, attr_value, attr_type, attr_structure, arity, dims, dims, initializer, external, opset,
              dtype, structure, output_name]


def mutate(seed_bytes, rng, dir_):
    """Returns (bytes, description) of one mutant of a serialized model."""
    k = rng.randrange(10)
    if k == 0:
        n = rng.randrange(len(seed_bytes) + 1)
        return seed_bytes[:n], f"truncated to {n} bytes"
    if k == 1:
        b = bytearray(seed_bytes)
        for _ in range(rng.randrange(1, 9)):
            i = rng.randrange(len(b))
            b[i] ^= 1 << rng.randrange(8)
        return bytes(b), "bit flips"
    m = ModelProto()
    m.ParseFromString(seed_bytes)
    for _ in range(8):
        fn = _pick(rng, STRUCTURED)
        what = fn(m, rng, dir_)
        if what:
            if rng.randrange(4) == 0:  # sometimes two at once
                fn2 = _pick(rng, STRUCTURED)
                w2 = fn2(m, rng, dir_)
                if w2:
                    what += "; " + w2
            return m.SerializeToString(), what
    return seed_bytes, "unchanged"
