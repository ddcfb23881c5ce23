"""Fixed hostile cases for tests/fuzz/mutate.py: command lines (bad values, files that are
not files, writes that fail) and config probes (is each hardware key enforced?).

Each case is a function (runner, case_dir, work_dir) -> (class, what, why).
"""
import json
import os
import re


def _classify(cls, err, must_fail):
    """A case that must fail (a write to a full disk) and exits 0 is silent."""
    if must_fail and cls == "ok":
        return "silent"
    return cls


def _case(argv_fn, what, must_fail=False, stdout_full=False, names_file=None):
    def run(runner, d, work):
        argv = argv_fn(d, work)
        if stdout_full:
            with open("/dev/full", "w") as full:
                cls, rc, err = runner.run(argv, d, stdout=full)
        else:
            cls, rc, err = runner.run(argv, d)
        cls = _classify(cls, err, must_fail)
        if cls == "error" and names_file and names_file not in err:
            cls = "silent"  # failed, but without naming the file
            err = f"the error does not name {names_file}: " + err
        return cls, what, err
    return run


def cli_cases(root):
    ex = os.path.join(root, "examples", "matmul_tiled.s")
    lenet = os.path.join(root, "models", "zoo", "lenet5_fmnist.onnx")

    def prog(d, work):
        return os.path.join(work, "matmul_tiled.vtpu")

    c = []
    add = c.append
    for argv, what in [
        ([], "no arguments"), (["bogus"], "unknown subcommand"), (["run"], "run without a model"),
        (["compile", "--dtype"], "option without value"), (["sim", "x.vtpu", "--max-cycles", "abc"], "not a number"),
        (["sim", "x.vtpu", "--max-cycles", "-1"], "negative cycles"), (["run", "m", "--batch", "-1"], "negative batch"),
        (["run", "m", "--batch", "99999999999999999999"], "batch overflows"), (["--bogus"], "unknown flag"),
        (["compile", "/nonexistent.onnx"], "missing model"), (["compile", "/"], "directory as model"),
        (["compile", "/dev/null"], "empty model"), (["compile", "/dev/zero"], "endless model"),
        (["sim", "/dev/zero"], "endless program"), (["sim", "/dev/urandom"], "random program"),
        (["config", "check", "/dev/zero"], "endless config"), (["config", "check", "/"], "directory as config"),
        (["config", "check", "/nonexistent.yaml"], "missing config"), (["disasm", "/etc/passwd"], "text as program"),
        (["asm", "/dev/zero"], "endless assembly"), (["asm", "/"], "directory as assembly"),
        (["compile", lenet, "-c", "/"], "directory as -c"), (["compile", lenet, "--dtype", "fp64"], "bad dtype"),
        (["compile", lenet, "--emit-mlir", "llvm"], "bad stage"), (["compile", lenet, "--batch", "0", "-o", "x.vtpu"], "batch 0"),
        (["compile", lenet, "--batch", "1000000000", "-o", "x.vtpu"], "huge batch"),
        (["compile", lenet, "--calibrate", "image", "--dtype", "int8"], "calibrate without ="),
        (["compile", lenet, "--calibrate", "image=/nonexistent.npy", "--dtype", "int8"], "calibrate missing file"),
        (["compile", lenet, "--image-norm", "bogus", "--calibrate", "image=/dev/null", "--dtype", "int8"], "bad norm"),
        (["run", lenet, "--input", "image=/dev/null", "-q"], "empty input file"),
        (["run", lenet, "--input", "nope=/dev/null", "-q"], "unknown input"),
        (["run", lenet, "--seed", "18446744073709551615", "-q"], "largest seed"),
        (["compare", lenet, "--dtypes", "int8,,bf16"], "empty dtype"), (["compare", lenet, "--accuracy-images", "-5"], "negative images"),
    ]:
        add(_case(lambda d, w, a=argv: a, what))
    add(_case(lambda d, w: ["sim", prog(d, w), "--max-cycles", "0"], "zero cycle limit"))
    add(_case(lambda d, w: ["sim", prog(d, w), "-c", "tpu-v1"], "wrong config"))
    add(_case(lambda d, w: ["sim", prog(d, w), "--input", "A=/nonexistent.npy"], "missing input file"))
    add(_case(lambda d, w: ["sim", prog(d, w), "--output-dir", "/dev/null"], "output dir is a file", True, names_file="/dev/null"))
    # Writes that fail: a full disk (/dev/full), a directory, a path through a file.
    for flag in ["--report", "--trace"]:
        for target in ["/dev/full", "/", "/dev/null/x"]:
            add(_case(lambda d, w, f=flag, t=target: ["sim", prog(d, w), "-q", f, t], f"sim {flag} {target}", True, names_file=target))
    for flag in ["--report", "--csv", "--html", "--trace"]:
        for target in ["/dev/full", "/dev/null/x"]:
            add(_case(lambda d, w, f=flag, t=target: ["run", lenet, "-q", f, t], f"run {flag} {target}", True, names_file=target))
    add(_case(lambda d, w: ["run", lenet, "-q", "--output-dir", "/dev/full"], "run --output-dir /dev/full", True))
    add(_case(lambda d, w: ["compile", lenet, "-o", "/dev/full"], "compile -o /dev/full", True, names_file="/dev/full"))
    add(_case(lambda d, w: ["compile", lenet, "-o", "x.vtpu", "--emit-asm", "/dev/full"], "compile --emit-asm /dev/full", True,
              names_file="/dev/full"))
    add(_case(lambda d, w: ["asm", ex, "-o", "/dev/full"], "asm -o /dev/full", True, names_file="/dev/full"))
    for argv, what in [(lambda d, w: ["sim", prog(d, w)], "sim table"), (lambda d, w: ["run", lenet], "run table"),
                       (lambda d, w: ["disasm", prog(d, w)], "disasm"), (lambda d, w: ["config", "check", "tiny-8x8"], "config check"),
                       (lambda d, w: ["config", "list"], "config list"), (lambda d, w: ["models"], "models"),
                       (lambda d, w: ["compile", lenet, "-o", "x.vtpu", "--emit-mlir", "tosa"], "emit-mlir")]:
        add(_case(argv, what + " > /dev/full", True, stdout_full=True))
    return c


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


def _config(root, d, extra):
    """tiny-8x8 with some keys changed (a YAML file of its own name)."""
    text = open(os.path.join(root, "configs/presets/tiny-8x8.yaml")).read()
    text = re.sub(r"^name:.*$", "name: probe", text, flags=re.M)
    lines = text.rstrip("\n").split("\n")
    for key, value in extra.items():
        lines = _set_key(lines, key.split("."), value)
    return _write(os.path.join(d, "probe.yaml"), "\n".join(lines) + "\n")


def _set_key(lines, parts, value):
    """Sets a nested key of a block-style YAML file given as lines (adding it if missing)."""
    indent, start = 0, 0
    for depth, part in enumerate(parts):
        found = None
        for i in range(start, len(lines)):
            m = re.match(r"^( *)([\w.]+):", lines[i])
            if m and len(m.group(1)) == indent and m.group(2) == part:
                found = i
                break
            if m and len(m.group(1)) < indent and i > start:
                break
        last = depth == len(parts) - 1
        if found is None:
            ins = start if depth else len(lines)  # right after the parent's line
            lines.insert(ins, " " * indent + part + ":" + (f" {value}" if last else ""))
            found = ins
        elif last:
            lines[found] = " " * indent + part + f": {value}"
        start, indent = found + 1, indent + 2
    return lines


def _probe(root, extra, program_text, what, expect):
    """expect: 'error' (must be rejected), 'slower' (must cost cycles or be rejected)."""
    def run(runner, d, work):
        cfg = _config(root, d, extra)
        src = _write(os.path.join(d, "p.s"), program_text)
        cls, rc, err = runner.run(["asm", src, "-o", "p.vtpu", "-c", cfg], d)
        if cls == "ok":
            cls, rc, err = runner.run(["sim", "p.vtpu", "-q", "--report", "r.json"], d)
        if cls in ("internal", "crash", "hang"):
            return cls, what, err
        if expect == "error":
            return ("error" if cls == "error" else "silent"), what, err if cls == "error" else "accepted"
        if cls == "error":
            return "error", what, err
        base_cfg = os.path.join(root, "configs/presets/tiny-8x8.yaml")
        runner.run(["asm", src, "-o", "b.vtpu", "-c", base_cfg], d)
        runner.run(["sim", "b.vtpu", "-q", "--report", "b.json"], d)
        try:
            cyc = json.load(open(os.path.join(d, "r.json")))["totals"]["cycles"]
            base = json.load(open(os.path.join(d, "b.json")))["totals"]["cycles"]
        except Exception as e:
            return "silent", what, f"no report to compare: {e}"
        return ("ok" if cyc > base else "silent"), what, f"{cyc} cycles with the smaller memory, {base} without"
    return run


def _compile_probe(root, extra, what):
    """The compiler must refuse a config it cannot serve, or emit a program that runs."""
    def run(runner, d, work):
        cfg = _config(root, d, extra)
        lenet = os.path.join(root, "models/zoo/lenet5_fmnist.onnx")
        cls, rc, err = runner.run(["run", lenet, "-c", cfg, "--dtype", "int8", "-q"], d)
        if cls == "error" and ("deadlock" in err or "does not fit" in err and "field" in err or "bundle" in err):
            return "silent", what, "the compiler emitted a program the chip rejects: " + err
        return cls, what, err
    return run


def config_probes(root):
    many = "\n".join(["nop"] * 200) + "\nhalt\n"
    return [
        _probe(root, {"core.scalar.registers": 8}, "li r20, 1\nhalt\n", "registers: 8, program uses r20", "error"),
        _probe(root, {"core.scalar.sync_flags": 8}, "signal f20, 1\nwait f20, 1\nhalt\n", "sync_flags: 8, uses f20", "error"),
        _probe(root, {"core.scalar.registers": 64}, "halt\n", "registers: 64 (the ISA has 32)", "error"),
        _probe(root, {"core.scalar.sync_flags": 128}, "halt\n", "sync_flags: 128 (the ISA has 64)", "error"),
        _probe(root, {"core.mxu.count": 16}, "halt\n", "16 MXUs (the ISA addresses 8)", "error"),
        _probe(root, {"core.scalar.imem_bundles": 16}, many, "imem_bundles: 16, a 201-bundle program", "slower"),
        _compile_probe(root, {"core.mxu.weight_fifo_tiles": 1}, "weight_fifo_tiles: 1"),
        _compile_probe(root, {"core.mxu.count": 16}, "core.mxu.count: 16"),
        _compile_probe(root, {"core.mxu.count": 32}, "core.mxu.count: 32"),
    ]
