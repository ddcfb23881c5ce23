#!/usr/bin/python3
"""Mutation runs of every input vtpu takes from strangers (issue 19): ONNX models, .vtpu
programs, assembly, YAML configs and command lines, each mutant run under a time and a
memory limit and classified as

  ok        exit 0 (and, for ONNX, onnxruntime agrees the model is valid and on its outputs)
  error     a clear error: exit 1 (bad input) or 2 (bad command line) with a message
  internal  exit 3 ("internal error")
  crash     killed by a signal, or a sanitizer report
  hang      still running at the time limit
  silent    accepted although it must not be: a model onnxruntime rejects, outputs that
            differ from onnxruntime's, a container breaking an invariant (wrapping addresses,
            duplicated names), a file written outside --output-dir, a config key not
            enforced, a failed write reported as success, a disassembly that does not
            assemble back to the same program

The aim is zero internal, crash, hang and silent. Heavy (minutes to an hour): it runs by
hand or with VTPU_MUTATE=1, never in CI by default. Needs Debian's python3-onnx and
python3-numpy (/usr/bin/python3) and onnxruntime-node (scripts/install-deps.sh).

usage: VTPU_MUTATE=1 /usr/bin/python3 tests/fuzz/mutate.py [--build build] [--count N]
           [--surfaces onnx,program,asm,yaml,cli] [--jobs 2] [--timeout 60] [--keep DIR]
"""
import argparse
import collections
import concurrent.futures
import json
import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import zlib

import numpy as np
from onnx import ModelProto, TensorProto

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mutate_onnx  # noqa: E402
import mutate_program  # noqa: E402
import mutate_text  # noqa: E402
from mutate_cli import cli_cases, config_probes  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CLASSES = ["ok", "error", "internal", "crash", "hang", "silent"]
SANITIZER_MARKS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:", "UndefinedBehaviorSanitizer")


class Runner:
    def __init__(self, args):
        self.vtpu = os.path.abspath(os.path.join(args.build, "bin", "vtpu"))
        self.timeout = args.timeout
        self.mem = args.mem_gb << 30
        # An AddressSanitizer build (the asan-ubsan preset) reserves terabytes of address space
        # for its shadow and cannot start under RLIMIT_AS: ASan's own RSS limit bounds it instead.
        with open(self.vtpu, "rb") as f:
            self.asan = b"libasan.so" in f.read(1 << 20)
        self.asan_options = "detect_leaks=1"
        if self.asan:
            self.asan_options += ":detect_stack_use_after_return=0:exitcode=86"
            if self.mem:
                self.asan_options += ":hard_rss_limit_mb=%d" % (self.mem >> 20)

    def _limits(self):
        os.setsid()
        if self.mem and not self.asan:
            resource.setrlimit(resource.RLIMIT_AS, (self.mem, self.mem))

    def run(self, argv, cwd, timeout=None, stdout=None):
        env = dict(os.environ, SYSTEMC_DISABLE_COPYRIGHT_MESSAGE="1", ASAN_OPTIONS=self.asan_options,
                   VTPU_MODEL_DIR=os.path.join(cwd, "zoo"))
        p = subprocess.Popen([self.vtpu] + argv, cwd=cwd, env=env, stdout=stdout or subprocess.PIPE,
                             stderr=subprocess.PIPE, preexec_fn=self._limits)
        try:
            out, err = p.communicate(timeout=timeout or self.timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
            return "hang", -1, ""
        err = err.decode("utf-8", "replace")
        if any(m in err for m in SANITIZER_MARKS) or p.returncode < 0:
            return "crash", p.returncode, err
        if p.returncode == 3:
            return "internal", 3, err
        if p.returncode in (1, 2):
            return "error", p.returncode, err
        if p.returncode == 0:
            return "ok", 0, err
        return "crash", p.returncode, err  # any other code: a sanitizer's or an abort


class Ort:
    """One onnxruntime-node process judging many models (tests/fuzz/ort_batch.js)."""

    def __init__(self):
        node_dir = os.environ.get("VTPU_NODE_DIR", os.path.expanduser("~/.cache/vtpu/node"))
        self.env = dict(os.environ, NODE_PATH=os.path.join(node_dir, "node_modules"))
        self.lock = threading.Lock()
        self.p = None

    def _start(self):
        self.p = subprocess.Popen(["node", os.path.join(ROOT, "tests", "fuzz", "ort_batch.js")], env=self.env,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)

    def judge(self, model, inputs, out_dir, timeout=60):
        with self.lock:
            if self.p is None or self.p.poll() is not None:
                self._start()
            self.p.stdin.write(json.dumps({"model": model, "inputs": inputs, "out_dir": out_dir}) + "\n")
            self.p.stdin.flush()
            box = {}
            t = threading.Thread(target=lambda: box.update(line=self.p.stdout.readline()))
            t.start()
            t.join(timeout)
            if t.is_alive() or not box.get("line"):
                self.p.kill()
                t.join()
                self.p = None
                return {"status": "reject", "stage": "crash-or-timeout"}
            return json.loads(box["line"])


NP_OF = {TensorProto.FLOAT: np.float32, TensorProto.INT64: np.int64, TensorProto.INT32: np.int32,
         TensorProto.INT8: np.int8, TensorProto.UINT8: np.uint8}


def make_inputs(model_bytes, d, rng):
    """Seeded inputs for every graph input that is not an initializer: {name: path}."""
    m = ModelProto()
    m.ParseFromString(model_bytes)
    inits = {t.name for t in m.graph.initializer}
    files = {}
    for k, v in enumerate(m.graph.input):
        if v.name in inits:
            continue
        tt = v.type.tensor_type
        dt = NP_OF.get(tt.elem_type)
        shape = [d_.dim_value if d_.HasField("dim_value") else 1 for d_ in tt.shape.dim]
        if dt is None or any(x < 0 or x > 4096 for x in shape) or int(np.prod(shape)) > 1 << 22:
            return None
        if dt == np.float32:
            a = rng.uniform(-1, 1, size=shape).astype(dt)
        else:
            a = rng.integers(0, 3, size=shape).astype(dt)
        path = os.path.join(d, f"in_{k}.npy")
        np.save(path, a)
        files[v.name] = path
    return files


def compare(vtpu_dir, ort_dir, out_names):
    """'' when vtpu's outputs equal onnxruntime's within the bf16 tolerance, else why."""
    for k, name in enumerate(out_names):
        want_p, got_p = os.path.join(ort_dir, f"out_{k}.npy"), os.path.join(vtpu_dir, name + ".npy")
        if not os.path.exists(want_p) or not os.path.exists(got_p):
            continue
        want, got = np.load(want_p).astype(np.float64), np.load(got_p).astype(np.float64)
        if want.size != got.size:
            return f"output {k}: {got.size} values, onnxruntime {want.size}"
        want, got = want.ravel(), got.ravel()
        if (np.isnan(want) != np.isnan(got)).any() or (np.isinf(want) != np.isinf(got)).any():
            return f"output {k}: NaN/Inf differ"
        fin = np.isfinite(want)
        if (np.sign(want[~fin & ~np.isnan(want)]) != np.sign(got[~fin & ~np.isnan(got)])).any():
            return f"output {k}: Inf signs differ"
        if fin.any():
            tol = 0.02 * np.abs(want[fin]).max() + 0.02  # bf16 (docs/compiler.md), as the conformance runner
            if (np.abs(want[fin] - got[fin]) > tol).any():
                return f"output {k}: differs beyond {tol:.3g}"
    return ""


def escaped(sandbox):
    """Files a mutant wrote outside its --output-dir: the escape markers mutators plant."""
    found = [p for p in (os.path.join(sandbox, "escape_rel.npy"), os.path.join(sandbox, "escape_abs.npy"),
                         os.path.join(os.path.dirname(sandbox), "escape_rel.npy")) if os.path.exists(p)]
    return found


# ---- surfaces ----

def onnx_seeds(args, work, runner):
    seeds = []
    bake = os.path.join(work, "baked")
    os.makedirs(bake, exist_ok=True)
    conf = os.path.join(args.build, "bin", "conformance_runner")
    subprocess.run([conf, "/usr/share/libonnx-testdata/data/node", os.path.join(ROOT, "tests/conformance/expected_pass.txt"),
                    "--bake", bake], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    seeds += [os.path.join(bake, f) for f in sorted(os.listdir(bake))]
    seeds.append(os.path.join(ROOT, "models/zoo/lenet5_fmnist.onnx"))
    zoo = os.path.join(work, "zoo")
    os.makedirs(zoo, exist_ok=True)
    runner.run(["compile", "lenet5", "-c", "tiny-16x16", "-o", os.path.join(work, "lenet5.vtpu")], work)
    seeds += [os.path.join(zoo, f) for f in os.listdir(zoo) if f.endswith(".onnx")]
    return [s for s in seeds if os.path.getsize(s) < 4 << 20]


def onnx_one(runner, ort, seed, rng, d):
    data, what = mutate_onnx.mutate(open(seed, "rb").read(), rng, d)
    model = os.path.join(d, "m.onnx")
    with open(model, "wb") as f:
        f.write(data)
    try:
        feedable = make_inputs(data, d, np.random.default_rng(rng.randrange(1 << 30)))
    except Exception:
        feedable = None
    if feedable is None:  # an input no .npy can feed: vtpu alone is judged
        for f in os.listdir(d):
            if f.startswith("in_") and f.endswith(".npy"):
                os.remove(os.path.join(d, f))
    cls, why = onnx_judge(runner, ort, d)
    return cls, what, why


# onnxruntime refusing a valid model it has no kernel for is no verdict on vtpu.
ORT_UNSUPPORTED = ("are not supported", "NOT_IMPLEMENTED", "Could not find an implementation", "not implemented")


def onnx_judge(runner, ort, d):
    """Runs d/m.onnx on vtpu (inputs d/in_K.npy) and on onnxruntime: (class, why)."""
    model = os.path.join(d, "m.onnx")
    data = open(model, "rb").read()
    inputs = {}
    try:
        m = ModelProto()
        m.ParseFromString(data)
        inits = {t.name for t in m.graph.initializer}
        for k, v in enumerate(m.graph.input):
            if v.name not in inits and os.path.exists(os.path.join(d, f"in_{k}.npy")):
                inputs[v.name] = os.path.join(d, f"in_{k}.npy")
        outs = [o.name for o in m.graph.output]
    except Exception:
        m, outs = None, []
    argv = ["run", model, "-c", "tpu-v4-core", "-q", "--output-dir", os.path.join(d, "out")]
    for name, path in inputs.items():
        argv += ["--input", f"{name}={path}"]
    cls, rc, err = runner.run(argv, d)
    if escaped(d):
        return "silent", "wrote outside --output-dir: " + ", ".join(escaped(d))
    if cls != "ok":
        return cls, err
    if m is None or not inputs and any(v.name not in {t.name for t in m.graph.initializer} for v in m.graph.input):
        return "ok", ""
    verdict = ort.judge(model, inputs, os.path.join(d, "ort"))
    if verdict["status"] != "ok":
        if any(u in verdict.get("error", "") for u in ORT_UNSUPPORTED):
            return "ok", "onnxruntime has no kernel for it: " + verdict["error"]
        if verdict.get("stage") == "crash-or-timeout":
            return "ok", "onnxruntime crashed or hung on it: no verdict"
        return "silent", "onnxruntime rejects: " + verdict.get("error", verdict.get("stage", ""))
    diff = compare(os.path.join(d, "out"), os.path.join(d, "ort"), outs)
    return ("silent", "differs from onnxruntime: " + diff) if diff else ("ok", "")


def program_seeds(args, work, runner):
    out = []
    for s in sorted(os.listdir(os.path.join(ROOT, "examples"))):
        if s.endswith(".s"):
            p = os.path.join(work, s[:-2] + ".vtpu")
            runner.run(["asm", os.path.join(ROOT, "examples", s), "-o", p], work)
            out.append(p)
    bake = os.path.join(work, "baked")
    picks = [f for f in sorted(os.listdir(bake))][:: max(1, len(os.listdir(bake)) // 24)] if os.path.isdir(bake) else []
    for f in picks:
        p = os.path.join(work, f[:-5] + ".vtpu")
        runner.run(["compile", os.path.join(bake, f), "-c", "tiny-16x16", "-o", p], work)
        out.append(p)
    out.append(os.path.join(work, "lenet5.vtpu"))
    return [p for p in out if os.path.exists(p)]


def program_one(runner, _ort, seed, rng, d):
    data, what = mutate_program.mutate(open(seed, "rb").read(), rng, d)
    with open(os.path.join(d, "p.vtpu"), "wb") as f:
        f.write(data)
    cls, why = program_judge(runner, None, d)
    return cls, what, why


def program_judge(runner, _ort, d):
    prog = os.path.join(d, "p.vtpu")
    data = open(prog, "rb").read()
    cls, rc, err = runner.run(["sim", prog, "-q", "--output-dir", os.path.join(d, "out")], d)
    if escaped(d):
        return "silent", "wrote outside --output-dir"
    if cls == "ok":
        try:
            bad = mutate_program.violations(mutate_program.parse(data), 64 << 30)
        except Exception:
            bad = []
        if bad:
            return "silent", "accepted: " + "; ".join(bad[:3])
    return cls, err


def asm_seeds(args, work, runner):
    good = [os.path.join(ROOT, "examples", f) for f in sorted(os.listdir(os.path.join(ROOT, "examples"))) if f.endswith(".s")]
    for prog in [os.path.join(work, "lenet5.vtpu")] + sorted(p for p in os.listdir(work) if p.endswith(".vtpu"))[:6]:
        lst = os.path.join(work, os.path.basename(prog)[:-5] + ".s")
        with open(lst, "wb") as f:
            runner.run(["disasm", os.path.join(work, prog)], work, stdout=f)
        if os.path.getsize(lst):
            good.append(lst)
    bad = [os.path.join(ROOT, "isa/tests/bad", f) for f in sorted(os.listdir(os.path.join(ROOT, "isa/tests/bad")))]
    return good * 4 + bad  # mostly valid programs, so mutants reach the simulator


def asm_one(runner, _ort, seed, rng, d):
    text, what = mutate_text.mutate_asm(open(seed, encoding="latin-1").read(), rng)
    with open(os.path.join(d, "m.s"), "w", encoding="latin-1") as f:
        f.write(text)
    cls, why = asm_judge(runner, None, d)
    return cls, what, why


def asm_judge(runner, _ort, d):
    src, prog = os.path.join(d, "m.s"), os.path.join(d, "m.vtpu")
    cls, rc, err = runner.run(["asm", src, "-o", prog, "-c", "tiny-8x8"], d)
    if cls != "ok":
        return cls, err
    # The disassembly must assemble back to the same program (writer and reader agree).
    back, prog2 = os.path.join(d, "back.s"), os.path.join(d, "back.vtpu")
    with open(back, "wb") as f:
        cls, rc, err = runner.run(["disasm", prog], d, stdout=f)
    if cls != "ok":
        return cls, "disasm: " + err
    cls, rc, err = runner.run(["asm", back, "-o", prog2], d)
    if cls == "error" or (cls == "ok" and open(prog, "rb").read() != open(prog2, "rb").read()):
        return "silent", "disassembly does not assemble back to the same program: " + err[:300]
    if cls != "ok":
        return cls, "re-asm: " + err
    cls, rc, err = runner.run(["sim", prog, "-q", "--output-dir", os.path.join(d, "out")], d)
    return cls, err


def yaml_seeds(args, work, runner):
    dirs = [os.path.join(ROOT, "configs/presets"), os.path.join(ROOT, "configs/tests/bad")]
    return [os.path.join(x, f) for x in dirs for f in sorted(os.listdir(x)) if f.endswith(".yaml")]


def yaml_one(runner, _ort, seed, rng, d):
    text, what = mutate_text.mutate_yaml(open(seed, encoding="latin-1").read(), rng)
    with open(os.path.join(d, "c.yaml"), "w", encoding="latin-1") as f:
        f.write(text)
    if rng.randrange(8) == 0:  # now and then the accepted config also runs a program end to end
        open(os.path.join(d, "run_program"), "w").close()
    cls, why = yaml_judge(runner, None, d)
    return cls, what, why


def yaml_judge(runner, _ort, d):
    cfg = os.path.join(d, "c.yaml")
    cls, rc, err = runner.run(["config", "check", cfg], d)
    if cls != "ok" or not os.path.exists(os.path.join(d, "run_program")):
        return cls, err
    prog = os.path.join(d, "p.vtpu")
    cls, rc, err = runner.run(["asm", os.path.join(ROOT, "examples", "matmul_tiled.s"), "-o", prog, "-c", cfg], d)
    if cls == "ok":
        cls, rc, err = runner.run(["sim", prog, "-q"], d)
    return cls, err


SURFACES = {
    "onnx": ("ONNX -> vtpu run", onnx_seeds, onnx_one, 2400),
    "program": (".vtpu -> vtpu sim", program_seeds, program_one, 1250),
    "asm": ("assembly -> asm -> sim", asm_seeds, asm_one, 1500),
    "yaml": ("YAML -> config check / sim", yaml_seeds, yaml_one, 1500),
}
JUDGES = {"onnx": onnx_judge, "program": program_judge, "asm": asm_judge, "yaml": yaml_judge}


def replay(args, runner, ort):
    """Judges kept mutants again (DIR/<surface>/<case>/, as --keep writes them and
    tests/fuzz/corpus holds them): the regression check of every reproducer."""
    counts = collections.defaultdict(collections.Counter)
    for surface in sorted(os.listdir(args.replay)):
        if surface not in JUDGES or surface not in args.surfaces.split(","):
            continue
        for case in sorted(os.listdir(os.path.join(args.replay, surface))):
            src = os.path.join(args.replay, surface, case)
            d = tempfile.mkdtemp(prefix="replay_")
            shutil.copytree(src, d, dirs_exist_ok=True, ignore=shutil.ignore_patterns("out", "ort", "escape_*"))
            cls, why = JUDGES[surface](runner, ort, d)
            shutil.rmtree(d, ignore_errors=True)
            counts[surface][cls] += 1
            if cls not in ("ok", "error") or args.verbose:
                print(f"{cls:8} {surface}/{case}: {why.strip().splitlines()[-1][:240] if why.strip() else ''}")
    for surface, c in counts.items():
        print(f"{surface}: " + ", ".join(f"{k} {c[k]}" for k in CLASSES))
    return 1 if any(c[k] for c in counts.values() for k in ("internal", "crash", "hang", "silent")) else 0


def run_surface(name, args, work, runner, ort, keep):
    title, seeds_fn, one, default_n = SURFACES[name]
    seeds = seeds_fn(args, work, runner)
    n = args.count or default_n
    counts = collections.Counter()
    examples = collections.defaultdict(list)
    rng0 = random.Random(args.seed * 1000003 + zlib.crc32(name.encode()))
    jobs = [(i, seeds[rng0.randrange(len(seeds))], rng0.randrange(1 << 62)) for i in range(n)]

    def task(job):
        i, seed, s = job
        d = tempfile.mkdtemp(prefix=f"{name}{i}_", dir=work)
        try:
            cls, what, err = one(runner, ort, seed, random.Random(s), d)
        except Exception as e:  # a mutator or oracle bug: report, do not count as vtpu's
            cls, what, err = "ok", f"driver error {e!r}", ""
        if cls in ("internal", "crash", "hang", "silent") and keep:
            dst = os.path.join(keep, name, f"{cls}_{i}")
            shutil.copytree(d, dst, dirs_exist_ok=True, ignore=shutil.ignore_patterns("out", "ort", "zoo", "escape_*"))
            with open(os.path.join(dst, "why.txt"), "w") as f:
                f.write(f"seed {seed}\nmutation {what}\n{err[-3000:]}\n")
        shutil.rmtree(d, ignore_errors=True)
        return cls, what, err, seed

    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for cls, what, err, seed in pool.map(task, jobs):
            counts[cls] += 1
            if cls in ("internal", "crash", "hang", "silent") and len(examples[cls]) < 400:
                examples[cls].append({"seed": os.path.basename(seed), "mutation": what,
                                      "why": err.strip().splitlines()[-1][:300] if err.strip() else ""})
    return title, n, counts, examples


def run_fixed(name, args, work, runner, cases):
    """Fixed cases (command lines, config probes): each returns a class itself."""
    counts = collections.Counter()
    examples = collections.defaultdict(list)
    for case in cases:
        d = tempfile.mkdtemp(prefix=name, dir=work)
        cls, what, why = case(runner, d, work)
        counts[cls] += 1
        if cls not in ("ok", "error"):
            examples[cls].append({"mutation": what, "why": why.strip().splitlines()[-1][:300] if why.strip() else ""})
        shutil.rmtree(d, ignore_errors=True)
    return len(cases), counts, examples


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--surfaces", default="onnx,program,asm,yaml,cli")
    ap.add_argument("--count", type=int, default=0, help="mutants per surface (default: the issue's counts)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=int, default=60)
    ap.add_argument("--mem-gb", type=int, default=8)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--keep", default="", help="copy every bad mutant (with why.txt) here")
    ap.add_argument("--json", default="", help="write the counts and examples here")
    ap.add_argument("--replay", default="", help="judge the kept mutants in DIR again instead of making new ones")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    runner, ort = Runner(args), Ort()
    if args.replay:
        return replay(args, runner, ort)
    if not os.environ.get("VTPU_MUTATE"):
        print("mutate.py: set VTPU_MUTATE=1 to run (minutes to an hour of CPU)")
        return 77
    work = tempfile.mkdtemp(prefix="vtpu-mutate-")
    report = {}
    rows = []
    for s in args.surfaces.split(","):
        if s in SURFACES:
            title, n, counts, ex = run_surface(s, args, work, runner, ort, args.keep)
        elif s == "cli":
            title = "command line"
            runner.run(["asm", os.path.join(ROOT, "examples", "matmul_tiled.s"), "-o",
                        os.path.join(work, "matmul_tiled.vtpu")], work)
            n, counts, ex = run_fixed("cli", args, work, runner, cli_cases(ROOT))
            n2, c2, ex2 = run_fixed("probe", args, work, runner, config_probes(ROOT))
            n += n2
            counts.update(c2)
            for k, v in ex2.items():
                ex[k] += v
        else:
            continue
        rows.append((title, n, counts))
        report[s] = {"mutants": n, "counts": dict(counts), "examples": ex}
        print(f"{title}: {n} mutants: " + ", ".join(f"{c} {counts[c]}" for c in CLASSES), flush=True)
    print("\n| surface | mutants | " + " | ".join(CLASSES) + " |")
    print("|---|---|" + "---|" * len(CLASSES))
    for title, n, counts in rows:
        print(f"| {title} | {n} | " + " | ".join(str(counts[c]) for c in CLASSES) + " |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    shutil.rmtree(work, ignore_errors=True)
    bad = sum(r[2][c] for r in rows for c in ("internal", "crash", "hang", "silent"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
