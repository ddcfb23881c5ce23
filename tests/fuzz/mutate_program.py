"""Mutations of .vtpu program containers (tests/fuzz/mutate.py).

The container is parsed into its sections (layout in isa/include/vtpu/isa/program.h and
docs/isa.md), a field is changed, and the container is written back, so most mutants get
past the framing and exercise the loader's range checks and the simulator. `violations`
says which invariants a mutant breaks that the loader must reject (the "silent" oracle).
"""
import struct

U64 = 2**64
HUGE64 = [U64 - 1, U64 - 8, U64 - 4096, 2**63, 2**62, 2**40, 2**32 - 1, 2**32]
HUGE32 = [2**32 - 1, 2**31, 2**31 - 1, 2**24, 65536, 0]
DTYPE_BYTES = {0: 1, 1: 2, 2: 4, 3: 4, 4: 1, 5: 2}  # int8 bf16 int32 fp32 uint8 int16


class R:
    def __init__(self, b):
        self.b, self.p = b, 0

    def get(self, fmt):
        v = struct.unpack_from("<" + fmt, self.b, self.p)
        self.p += struct.calcsize("<" + fmt)
        return v[0] if len(v) == 1 else v

    def str(self):
        n = self.get("I")
        s = self.b[self.p:self.p + n]
        self.p += n
        return s

    def vec(self, fmt):
        n = self.get("I")
        return [self.get(fmt) for _ in range(n)]


def _str(s):
    return struct.pack("<I", len(s)) + s


def _vec(fmt, v):
    return struct.pack("<I", len(v)) + b"".join(struct.pack("<" + fmt, x) for x in v)


def parse(b):
    r = R(b)
    hdr = r.get("4sHHQII")
    sections = []
    for _ in range(hdr[5]):
        sid, size = r.get("IQ")
        sections.append([sid, b[r.p:r.p + size]])
        r.p += size
    p = {"hdr": list(hdr), "raw": sections}
    for sid, body in sections:
        s = R(body)
        if sid == 5:
            p["tensors"] = []
            for _ in range(s.get("I")):
                p["tensors"].append({"name": s.str(), "role": s.get("B"), "dtype": s.get("B"), "shape": s.vec("q"),
                                     "addr": s.get("Q"), "scale": s.get("d"), "zp": s.get("i"), "nhwc": s.get("B")})
        elif sid == 6:
            p["consts"] = []
            for _ in range(s.get("I")):
                p["consts"].append({"addr": s.get("Q"), "data": bytes(s.vec("B"))})
        elif sid == 3:
            p["descs"] = []
            for _ in range(s.get("I")):
                d = {"name": s.str(), "src": s.get("Q"), "dst": s.get("Q"), "bytes": s.get("I"), "dtype": s.get("B")}
                d["dims"] = [list(s.get("Iqq")) for _ in range(s.get("B"))]
                p["descs"].append(d)
    return p


def serialize(p):
    out = []
    for sid, body in p["raw"]:
        if sid == 5 and "tensors" in p:
            body = struct.pack("<I", len(p["tensors"])) + b"".join(
                _str(t["name"]) + struct.pack("<BB", t["role"], t["dtype"]) + _vec("q", t["shape"]) +
                struct.pack("<QdiB", t["addr"], t["scale"], t["zp"], t["nhwc"]) for t in p["tensors"])
        elif sid == 6 and "consts" in p:
            body = struct.pack("<I", len(p["consts"])) + b"".join(
                struct.pack("<Q", c["addr"]) + _vec("B", list(c["data"])) for c in p["consts"])
        elif sid == 3 and "descs" in p:
            body = struct.pack("<I", len(p["descs"])) + b"".join(
                _str(d["name"]) + struct.pack("<QQIBB", d["src"], d["dst"], d["bytes"], d["dtype"], len(d["dims"])) +
                b"".join(struct.pack("<Iqq", *dim) for dim in d["dims"]) for d in p["descs"])
        out.append(struct.pack("<IQ", sid, len(body)) + body)
    h = p["hdr"]
    return struct.pack("<4sHHQII", h[0], h[1], h[2], h[3], h[4], len(out)) + b"".join(out)


def tensor_bytes(t):
    n = DTYPE_BYTES.get(t["dtype"], 1)
    for d in t["shape"]:
        n *= d
    return n


def violations(p, hbm_bytes):
    """Invariants a valid container keeps; a mutant breaking one must be rejected."""
    v = []
    names = [t["name"] for t in p.get("tensors", [])]
    if len(set(names)) != len(names):
        v.append("duplicated tensor name")
    for t in p.get("tensors", []):
        if any(d < 0 for d in t["shape"]):
            v.append(f"tensor {t['name']!r}: negative dimension")
            continue
        n = tensor_bytes(t)
        if n >= U64:
            v.append(f"tensor {t['name']!r}: shape product overflows")
        elif t["addr"] + n > hbm_bytes:
            v.append(f"tensor {t['name']!r}: past HBM or wraps")
        # The rule of support/files.h (is_plain_file_name), which ONNX output names follow
        # too: NAME.npy must be one file name in the output directory ('.' gives '..npy').
        if len(t["name"]) + 4 > 255 or b"/" in t["name"] or b"\x00" in t["name"]:
            v.append(f"tensor {t['name']!r}: NAME.npy is not a file name")
    for c in p.get("consts", []):
        if c["addr"] + len(c["data"]) > hbm_bytes:
            v.append("constant past HBM or wraps")
    return v


def mutate(seed, rng, sandbox):
    """Returns (bytes, description)."""
    k = rng.randrange(12)
    if k == 0:
        n = rng.randrange(len(seed) + 1)
        return seed[:n], f"truncated to {n}"
    if k == 1:
        b = bytearray(seed)
        for _ in range(rng.randrange(1, 9)):
            i = rng.randrange(len(b))
            b[i] ^= 1 << rng.randrange(8)
        return bytes(b), "bit flips"
    p = parse(seed)
    ts, cs, ds = p.get("tensors", []), p.get("consts", []), p.get("descs", [])
    if k == 2 and ts:
        t = ts[rng.randrange(len(ts))]
        t["addr"] = rng.choice(HUGE64)
        return serialize(p), f"tensor {t['name']!r} addr {t['addr']:#x}"
    if k == 3 and ts:
        t = ts[rng.randrange(len(ts))]
        if t["shape"]:
            i = rng.randrange(len(t["shape"]))
            t["shape"][i] = rng.choice([2**31 - 1, 2**32, 2**40, 2**62, -1, -(2**62), 0])
        else:
            t["shape"] = [2**33, 2**33]
        return serialize(p), f"tensor {t['name']!r} shape {t['shape']}"
    if k == 4 and len(ts) > 1:
        ts[1]["name"] = ts[0]["name"]
        return serialize(p), "duplicated tensor name"
    if k == 5 and ts:
        t = ts[rng.randrange(len(ts))]
        t["name"] = rng.choice([b"../escape_rel", (sandbox + "/escape_abs").encode(), b"", b".", b"a/b", b"x\x00y"])
        t["role"] = 1
        return serialize(p), f"tensor name {t['name']!r}"
    if k == 6 and cs:
        c = cs[rng.randrange(len(cs))]
        c["addr"] = rng.choice(HUGE64)
        return serialize(p), f"constant addr {c['addr']:#x}"
    if k == 7 and ds:
        d = ds[rng.randrange(len(ds))]
        d[rng.choice(["src", "dst"])] = rng.choice(HUGE64)
        return serialize(p), f"descriptor {d['name']!r} offset"
    if k == 8 and ds:
        d = ds[rng.randrange(len(ds))]
        d["bytes"] = rng.choice(HUGE32)
        return serialize(p), f"descriptor {d['name']!r} bytes {d['bytes']}"
    if k == 9 and ds:
        d = ds[rng.randrange(len(ds))]
        if not d["dims"] or rng.randrange(2):
            d["dims"].append([1, 0, 0])
        dim = d["dims"][rng.randrange(len(d["dims"]))]
        dim[0] = rng.choice(HUGE32[:-1] + [2, 3])
        dim[rng.choice([1, 2])] = rng.choice([-(2**62), 2**62, -1, 2**31, 0])
        return serialize(p), f"descriptor {d['name']!r} dims {d['dims']}"
    if k == 10 and ds:
        d = ds[rng.randrange(len(ds))]
        d["name"] = rng.choice([b"r1", b"f2", b"r0", b"inf", b"nan", b"x", b"ub", b"1a", b"a b", b""])
        return serialize(p), f"descriptor name {d['name']!r}"
    if cs:
        c = cs[rng.randrange(len(cs))]
        c["data"] = c["data"] + b"\x00" * rng.choice([1, 4096, 2**20])
        return serialize(p), "constant grown"
    return seed, "unchanged"
