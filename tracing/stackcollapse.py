#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""stackcollapse.py - fold `perf script` call graphs into one line per stack.

    perf script -i perf.data | stackcollapse.py [--comm NAME] > out.folded

Input, one sample (leaf frame first, as perf prints it):
    switch   231 [001]    12.345678:     250000 cpu-clock:
            ffffffff81454940 rseq_ops_apply+0x0 ([kernel.kallsyms])
            ffffffff810e1c2a syscall_exit_to_user_mode+0x9a ([kernel.kallsyms])
                7f4c2a0d1b47 __sched_yield+0x7 (/usr/lib/x86_64-linux-gnu/libc.so.6)

Output, root first, kernel frames tagged `_[k]` as in FlameGraph, sorted so
that two runs can be diffed:
    switch;__sched_yield;syscall_exit_to_user_mode_[k];rseq_ops_apply_[k] 1

A sample's weight is 1 (perf's period is the same for every cpu-clock
sample at a fixed frequency). Frames perf could not name are `[unknown]`.
"""
import argparse
import collections
import re
import sys

HEAD = re.compile(r"^(\S.*?)\s+(\d+)(?:/\d+)?\s+(?:\[\d+\]\s+)?[\d.]+:")
FRAME = re.compile(r"^\s+([0-9a-f]+)\s+(.*?)\s+\((.*)\)$")
OFFSET = re.compile(r"\+0x[0-9a-f]+$")


def frame_name(sym, dso):
    sym = OFFSET.sub("", sym) or "[unknown]"
    if sym == "[unknown]" and dso not in ("", "[unknown]"):
        sym = "[%s]" % dso.rsplit("/", 1)[-1]
    if dso.startswith("[kernel") or dso.startswith("[guest.kernel"):
        sym += "_[k]"
    return sym.replace(";", ":")


def fold(lines, comm=None):
    stacks = collections.Counter()
    name, frames = None, []

    def flush():
        if name is not None and (comm is None or name == comm):
            stacks[";".join([name] + frames[::-1])] += 1

    for line in lines:
        line = line.rstrip("\n")
        if not line.strip():
            flush()
            name, frames = None, []
            continue
        m = FRAME.match(line)
        if m and name is not None:
            frames.append(frame_name(m.group(2), m.group(3)))
            continue
        m = HEAD.match(line)
        if m:
            flush()
            name, frames = m.group(1).strip().replace(" ", "_"), []
    flush()
    return stacks


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("input", nargs="?", help="perf script output "
                    "(default stdin)")
    ap.add_argument("--comm", help="keep only samples of this command")
    args = ap.parse_args()
    f = open(args.input) if args.input else sys.stdin
    stacks = fold(f, args.comm)
    if not stacks:
        sys.exit("stackcollapse: no call-graph samples in the input; was "
                 "perf record run with -g?")
    for s in sorted(stacks):
        print("%s %d" % (s, stacks[s]))


if __name__ == "__main__":
    main()
