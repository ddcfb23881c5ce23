"""Mutations of text inputs, assembly and YAML configs (tests/fuzz/mutate.py)."""
import re

NUMBERS = ["0", "-1", "1", "2", "3", "4294967295", "4294967296", "2147483647", "-2147483648", "9223372036854775807",
           "18446744073709551615", "1e308", "nan", "inf", "-inf", "0x7fffffff", "65536", "16777216", "0.5", "1.5"]
ASM_LINES = [
    "loop_forever: jmp loop_forever",
    "jmp 0",
    "li r5, 4294967295",
    "loop r5, 0",
    ".desc r1 bytes=4",
    ".desc f3 bytes=4",
    ".desc \"r2\" bytes=8",
    ".desc inf bytes=4",
    ".desc nan bytes=4",
    ".desc x bytes=4294967295 dim=[4294967295, 1, 1]",
    ".desc big bytes=64 dim=[4294967295, 64, 64]",
    ".desc wrap bytes=64 src_off=9223372036854775807",
    ".vparam p mult=[1] shift=[2] window=[2147483647, -2147483648] pool_stride=2147483647",
    ".tensor t role=output dtype=fp32 shape=[2147483647, 2147483647] addr=0",
    ".tensor ../escape role=output dtype=int8 shape=[1] addr=0",
    ".const c dtype=int8 shape=[1] addr=9223372036854775807 values=[1]",
    ".data addr=18446744073709551615 hex=\"00\"",
    ".data addr=9223372036854775807 hex=\"0011\"",
    ".tag \"\"",
    "wait f63, 1",
    "signal f63, 4294967295",
    "halt",
]


def mutate_asm(text, rng):
    lines = text.split("\n")
    k = rng.randrange(8)
    if k == 0 and lines:
        del lines[rng.randrange(len(lines))]
        what = "line deleted"
    elif k == 1 and lines:
        i = rng.randrange(len(lines))
        lines.insert(i, lines[i])
        what = "line duplicated"
    elif k == 2 and len(lines) > 1:
        i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
        what = "lines swapped"
    elif k in (3, 4):
        nums = [(i, m) for i, l in enumerate(lines) for m in re.finditer(r"(?<![\w.])-?\d+(?:\.\d+)?", l)]
        if not nums:
            return text, "unchanged"
        i, m = nums[rng.randrange(len(nums))]
        lines[i] = lines[i][:m.start()] + rng.choice(NUMBERS) + lines[i][m.end():]
        what = f"number on line {i + 1}"
    elif k == 5:
        lines.insert(rng.randrange(len(lines) + 1), rng.choice(ASM_LINES))
        what = "line inserted"
    elif k == 6 and lines:
        i = rng.randrange(len(lines))
        n = rng.randrange(len(lines[i]) + 1)
        lines[i] = lines[i][:n]
        what = "line truncated"
    else:
        b = bytearray(text.encode())
        if b:
            b[rng.randrange(len(b))] = rng.randrange(256)
        return b.decode("latin-1"), "byte changed"
    return "\n".join(lines), what


YAML_VALUES = NUMBERS + ["", "[]", "{}", "true", "null", "~", "[1, 2]", "abc", "1KiB", "1TiB", "64PiB", "-1MiB",
                         "1e400", "0x10", "\"8\"", "!!binary AAAA", "*anchor", "&a 1"]


def mutate_yaml(text, rng):
    lines = text.split("\n")
    kv = [i for i, l in enumerate(lines) if re.match(r"^\s*[\w.]+:\s*\S", l)]
    k = rng.randrange(7)
    if k <= 2 and kv:
        i = kv[rng.randrange(len(kv))]
        key = lines[i].split(":", 1)[0]
        lines[i] = f"{key}: {rng.choice(YAML_VALUES)}"
        what = f"value of{key}"
    elif k == 3 and lines:
        del lines[rng.randrange(len(lines))]
        what = "line deleted"
    elif k == 4 and lines:
        i = rng.randrange(len(lines))
        lines.insert(i, lines[i])
        what = "line duplicated"
    elif k == 5 and lines:
        i = rng.randrange(len(lines))
        lines[i] = " " * rng.randrange(5) + lines[i].lstrip()
        what = "indentation"
    else:
        b = bytearray(text.encode())
        if b:
            b[rng.randrange(len(b))] = rng.randrange(256)
        return b.decode("latin-1"), "byte changed"
    return "\n".join(lines), what
