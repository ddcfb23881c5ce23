#!/usr/bin/env python3
"""Re-stamps kept .vtpu reproducers (tests/fuzz/corpus/program/*/p.vtpu) with the fingerprint
of the config they name, bytes 8-15 of the file, when a config change (a new key, a new
default) has changed the presets' fingerprints. Without it `vtpu sim` refuses every kept
program for the fingerprint before reaching what the reproducer is about, and fuzz.replay
counts that as a clear error. Only a program refused for its fingerprint alone is touched,
and only those 8 bytes.

usage: /usr/bin/python3 tests/fuzz/restamp.py build/bin/vtpu tests/fuzz/corpus/program/*/p.vtpu
"""
import re
import struct
import subprocess
import sys

vtpu = sys.argv[1]
for path in sys.argv[2:]:
    r = subprocess.run([vtpu, "sim", path, "-q", "--max-cycles", "1"], capture_output=True, text=True, timeout=60)
    m = re.search(r"fingerprint 0x([0-9a-f]{16})\) but this run uses '[^']*' \(fingerprint 0x([0-9a-f]{16})\)", r.stderr)
    if not m:
        print(f"{path}: kept ({r.stderr.strip()[:120]})")
        continue
    old, new = int(m.group(1), 16), int(m.group(2), 16)
    b = bytearray(open(path, "rb").read())
    if struct.unpack_from("<Q", b, 8)[0] != old:
        sys.exit(f"{path}: bytes 8-15 are not the fingerprint the simulator reports; not touched")
    struct.pack_into("<Q", b, 8, new)
    open(path, "wb").write(bytes(b))
    print(f"{path}: 0x{old:016x} -> 0x{new:016x}")
