#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""walker_loops.py - the loops of a kernel function, from its disassembly.

What it is for: counting, from the code the compiler generated, the
instructions of an RSEQ operation walker's loop, to set beside the slope
measured under QEMU icount (instructions per operation per walk). The
count is static: every instruction between a loop's head and its back
edge, taken or not, so it bounds the per-node path from above; the
columns say how much of it is user-access fault handling.

    objdump -d --no-show-raw-insn (run by this script)
      -> walker_loops.py VMLINUX_OR_OBJECT FUNCTION...
      -> one line per loop, sorted by function and address

Example (ops, gcc 14):

    $ analysis/walker_loops.py vmlinux rseq_ops_apply
    function        loop                 insns  loads  cond-br  stac/clac
    rseq_ops_apply  +0x45..+0xaf            31      5        7          0

A loop is a backward jump (conditional or not) inside the function: its
head is the jump's target, its body every instruction from the head to the
jump. Nested loops are listed each on its own. "loads" counts mov/movz/movs
instructions reading memory through a register other than the stack and
segment-relative ones (so: user and kernel loads alike); "cond-br" counts
conditional jumps, including the fault checks that a compiler without asm
goto outputs adds after each unsafe_get_user().
"""
import argparse
import re
import subprocess
import sys

INSN_RE = re.compile(r"^\s*([0-9a-f]+):\s+(\S+)\s*(.*)$")
FUNC_RE = re.compile(r"^([0-9a-f]+) <([^>]+)>:$")
JUMP_RE = re.compile(r"^([0-9a-f]+) <([^>+]+)(?:\+0x([0-9a-f]+))?>")


def disassemble(path, func):
    """Instructions of FUNC in PATH as (addr, mnemonic, operands)."""
    try:
        r = subprocess.run(["objdump", "-d", "--no-show-raw-insn",
                            "--disassemble=" + func, path],
                           capture_output=True, text=True, check=False)
    except FileNotFoundError:
        sys.exit("walker_loops: objdump not found; install binutils")
    if r.returncode != 0:
        sys.exit("walker_loops: objdump failed on %s: %s" % (
            path, r.stderr.strip()))
    insns, start = [], None
    for line in r.stdout.splitlines():
        m = FUNC_RE.match(line)
        if m:
            if m.group(2) == func:
                start = int(m.group(1), 16)
            continue
        m = INSN_RE.match(line)
        if m and start is not None:
            insns.append((int(m.group(1), 16), m.group(2), m.group(3)))
    if not insns:
        sys.exit("walker_loops: no function '%s' in %s (inlined, or "
                 "another name?)" % (func, path))
    return start, insns


def is_load(mn, ops):
    if not mn.startswith("mov") or "(" not in ops:
        return False
    src = ops.split(",")[0]
    return "(" in src and "%rsp" not in src and "%gs" not in src


def loops(func, start, insns):
    addrs = [a for a, _, _ in insns]
    out = []
    for i, (a, mn, ops) in enumerate(insns):
        if not mn.startswith("j"):
            continue
        m = JUMP_RE.match(ops)
        if not m or m.group(2) != func:
            continue
        target = int(m.group(1), 16)
        if not addrs[0] <= target <= a:
            continue
        body = [x for x in insns if target <= x[0] <= a]
        out.append({
            "function": func, "head": target - start, "end": a - start,
            "insns": len(body),
            "loads": sum(is_load(b[1], b[2]) for b in body),
            "cond_br": sum(b[1].startswith("j") and b[1] != "jmp"
                           for b in body),
            "stac_clac": sum(b[1] in ("stac", "clac") for b in body),
        })
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("binary", help="vmlinux or an object file")
    ap.add_argument("function", nargs="+")
    a = ap.parse_args()
    rows = []
    for f in a.function:
        start, insns = disassemble(a.binary, f)
        found = loops(f, start, insns)
        if not found:
            print("walker_loops: %s has no backward jump" % f,
                  file=sys.stderr)
        rows += found
    w = max([len("function")] + [len(r["function"]) for r in rows])
    print("%-*s  %-19s  %5s  %5s  %7s  %9s" % (
        w, "function", "loop", "insns", "loads", "cond-br", "stac/clac"))
    for r in sorted(rows, key=lambda r: (r["function"], r["head"])):
        print("%-*s  %-19s  %5d  %5d  %7d  %9d" % (
            w, r["function"], "+%#x..+%#x" % (r["head"], r["end"]),
            r["insns"], r["loads"], r["cond_br"], r["stac_clac"]))
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main())
