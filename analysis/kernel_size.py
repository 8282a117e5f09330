#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""kernel_size.py - what a flavour adds to the kernel, counted at bench time.

Usage: kernel_size.py BLOAT_O_METER BASE_VMLINUX VMLINUX TREE BASE_REF [BASE]

Prints one JSON object: the bytes of functions, data and read-only data
the flavour's vmlinux has more than the reference's, as the kernel's own
scripts/bloat-o-meter -c counts them (symbols added, removed, grown,
shrunk, and the net change), and the source lines its tree adds and
removes against the pristine base (git diff --numstat BASE_REF HEAD in
TREE), by area: the kernel's code, its user API headers, the
documentation and the selftests. BASE names the flavour whose vmlinux
BASE_VMLINUX is, as the object records it. microbench/bench-run.sh keeps the object
as kernel-size/<flavour>.json, an artefact of the run (kind kernel-size);
analysis/designs.py shows it beside the walk.
"""
import json
import re
import subprocess
import sys

# bloat-o-meter -c prints three blocks, each after its counts line:
# "add/remove: 15/0 grow/shrink: 11/2 up/down: 5070/-7 (5063)" and a
# header naming the category (Function, Data, RO Data).
COUNTS_RE = re.compile(r"^add/remove: (\d+)/(\d+) grow/shrink: (\d+)/(\d+) "
                       r"up/down: (\d+)/(-?\d+) \((-?\d+)\)$")
CATEGORIES = {"Function": "functions", "Data": "data", "RO Data": "rodata"}


def parse_bloat(text):
    """{category: {"added", "removed", "grown", "shrunk", "up", "down",
    "net"}} from bloat-o-meter -c's output."""
    out, counts = {}, None
    for line in text.splitlines():
        m = COUNTS_RE.match(line.strip())
        if m:
            counts = [int(x) for x in m.groups()]
            continue
        head = re.split(r"\s{2,}", line.strip())[0]
        if counts is not None and head in CATEGORIES:
            out[CATEGORIES[head]] = dict(zip(
                ("added", "removed", "grown", "shrunk", "up", "down", "net"),
                counts))
            counts = None
    if set(out) != set(CATEGORIES.values()):
        raise ValueError("bloat-o-meter -c printed %s, not the three "
                         "categories %s" % (sorted(out),
                                            sorted(CATEGORIES.values())))
    return out


def area_of(path):
    if path.startswith("Documentation/"):
        return "docs"
    if path.startswith("tools/testing/"):
        return "selftests"
    if path.startswith("include/uapi/"):
        return "uapi"
    return "kernel"


def parse_numstat(text):
    """{area: {"added", "removed", "files"}} from git diff --numstat
    (a binary file's "-" counts as no line)."""
    out = {a: {"added": 0, "removed": 0, "files": 0}
           for a in ("kernel", "uapi", "docs", "selftests")}
    for line in text.splitlines():
        if not line.strip():
            continue
        add, rem, path = line.split("\t", 2)
        a = out[area_of(path)]
        a["added"] += int(add) if add.isdigit() else 0
        a["removed"] += int(rem) if rem.isdigit() else 0
        a["files"] += 1
    return out


def main(argv):
    if len(argv) not in (6, 7):
        sys.stderr.write(__doc__.split("\n\n")[1] + "\n")
        return 2
    bloat, base, vmlinux, tree, ref = argv[1:6]
    base_flavour = argv[6] if len(argv) == 7 else None
    r = subprocess.run([sys.executable, bloat, "-c", base, vmlinux],
                       capture_output=True, text=True)
    if r.returncode:
        sys.stderr.write("kernel_size.py: %s failed: %s\n" % (bloat, r.stderr))
        return 1
    sizes = parse_bloat(r.stdout)
    r = subprocess.run(["git", "-C", tree, "diff", "--numstat", ref, "HEAD"],
                       capture_output=True, text=True)
    if r.returncode:
        sys.stderr.write("kernel_size.py: git diff --numstat %s HEAD in %s "
                         "failed: %s\n" % (ref, tree, r.stderr))
        return 1
    print(json.dumps({"bloat": sizes, "lines": parse_numstat(r.stdout),
                      "base_ref": ref, "base": base_flavour}, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
