#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""insnprof.py - the host side of the instruction profiler (tracing/insnprof).

    insnprof.py entries SYSTEM_MAP > entries.txt
        the interrupt and exception entry points the plugin needs: every
        asm_exc_* and asm_sysvec_* symbol, and the external-interrupt stubs
        (irq_entries_start, 8 bytes apart, and the spurious ones).
    insnprof.py analyse PROFILE OPBENCH_JSON --map SYSTEM_MAP
        [--binary OPBENCH] --dir DIR [--top K]
        the plugin's profile, symbolised once, into DIR:
          insn.folded  folded stacks with names (kernel frames end in _[k],
                       for flamegraph.py)
          check.txt    the plugin's total against the TSC's (opbench
                       --mark's mark_ticks), the walks, and
                       rseq_ops_apply's instructions per call and per walk
          table.txt    instructions per function (self, and inclusive) per
                       walk, and the plugin's counters
        check.txt is also printed.

Kernel addresses are named from System.map (the function containing the
address; boot the guest with nokaslr). User addresses are named from the
benchmark's own symbols: the plugin records where it saw the begin marker,
and the marker's offset in the binary gives the load base.
"""
import argparse
import bisect
import collections
import os
import re
import subprocess
import sys

KERNEL_BASE = 0xffff800000000000
MARK = bytes([0x0f, 0x1f, 0x80, 0x42, 0x45, 0x47, 0x4e])


class Symbols:
    """The function containing an address, within [lo, hi) when given."""

    def __init__(self, pairs, lo=None, hi=None):
        pairs = sorted(pairs)
        self.addr = [a for a, _ in pairs]
        self.name = [n for _, n in pairs]
        self.lo, self.hi = lo, hi

    def __call__(self, a):
        if (self.lo is not None and a < self.lo) or \
                (self.hi is not None and a >= self.hi):
            return None
        i = bisect.bisect_right(self.addr, a) - 1
        return self.name[i] if i >= 0 else None


def system_map(path):
    out = []
    with open(path) as f:
        for line in f:
            p = line.split()
            if len(p) >= 3 and p[1] in "TtWw":
                out.append((int(p[0], 16), p[2]))
    return out


def entries(path):
    syms = dict((n, a) for a, n in system_map(path))
    lines = ["# interrupt and exception entries of %s" % path]
    for n, a in sorted(syms.items(), key=lambda x: x[1]):
        if n.startswith(("asm_exc_", "asm_sysvec_")):
            lines.append("%x %x 1" % (a, a + 1))
    start = syms.get("irq_entries_start")
    spur = syms.get("spurious_entries_start")
    if start is None or spur is None:
        raise SystemExit("insnprof: %s has no irq_entries_start or "
                         "spurious_entries_start: not an x86-64 System.map"
                         % path)
    # The stubs are 8 bytes apart (IDT_ALIGN); the spurious ones follow
    # the external ones, up to the next symbol.
    end = min((a for a in syms.values() if a > spur), default=spur + 8 * 32)
    lines.append("%x %x 8" % (start, end))
    return "\n".join(lines) + "\n"


def binary_symbols(path, mark_pc):
    """The binary's functions at their load address, from the marker."""
    data = open(path, "rb").read()
    off = data.find(MARK)
    if off < 0 or mark_pc is None:
        return None
    secs = subprocess.run(["readelf", "-SW", path], capture_output=True,
                          text=True, check=True).stdout
    if data.find(MARK, off + 1) >= 0:
        return None	# two begin markers: the base would be a guess
    base, top, plt = None, 0, []
    for m in re.finditer(r"\]\s+(\S+)\s+(\S+)\s+([0-9a-f]+)\s+([0-9a-f]+)"
                         r"\s+([0-9a-f]+)", secs):
        addr, foff, size = (int(m.group(i), 16) for i in (3, 4, 5))
        if not addr:
            continue	# not loaded
        if m.group(2) == "PROGBITS" and base is None and \
                foff <= off < foff + size:
            base = mark_pc - (addr + off - foff)
        top = max(top, addr + size)
        if m.group(1).startswith(".plt"):
            plt.append((addr, addr + size))
    if base is None:
        return None
    nm = subprocess.run(["nm", "--defined-only", path], capture_output=True,
                        text=True, check=True).stdout
    pairs = []
    for line in nm.splitlines():
        p = line.split()
        if len(p) == 3 and p[1] in "TtWw":
            pairs.append((int(p[0], 16) + base, p[2]))
    # A call through the PLT runs the C library in the stub's frame (the
    # stub jumps): name it so, not after the symbol before the PLT.
    for lo, hi in plt:
        pairs += [(lo + base, "[libc via plt]"), (hi + base, "[after plt]")]
    # Outside the binary (the C library, the vDSO): no name of ours.
    return Symbols(pairs, base, base + top)


def read_profile(path, entered=None):
    """The profile's stacks [(frames, instructions)] and counters; with
    entered (a list), the times each stack's last frame was entered."""
    stacks, counts = [], []
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("# entered "):
                if entered is not None:
                    frames, n = line[len("# entered "):].rsplit(" ", 1)
                    entered.append((frames.split(";"), int(n)))
            elif line.startswith("# counts"):
                counts.append(dict(kv.split("=", 1)
                                   for kv in line.split()[2:]))
            elif line and not line.startswith("#"):
                frames, n = line.rsplit(" ", 1)
                stacks.append((frames.split(";"), int(n)))
    return stacks, counts


def namer(map_path, binary, counts):
    kmap = system_map(map_path)
    ends = [a for a, n in kmap if n in ("_etext", "_einittext")]
    # No kernel name past the kernel's text (BPF JIT, modules).
    ksyms = Symbols(kmap, None, max(ends) if ends else None)
    mark = next((int(c["mark"], 16) for c in counts
                 if int(c.get("windows", 0))), None)
    usyms = binary_symbols(binary, mark) if binary else None

    def name(x):
        if x == "window":
            return "window"
        a = int(x, 16)
        if a >= KERNEL_BASE:
            s = ksyms(a)
            if s is None and ends and a >= max(ends):
                # BPF JIT images and trampolines (the bpf design's
                # program), or modules: one frame, not one per address.
                return "[jit or module text]_[k]"
            return "%s_[k]" % (s or x)
        return (usyms(a) if usyms else None) or "[user]"
    return name


def fold(path, map_path, binary, entered=None):
    """Symbolised folded stacks; with entered (a Counter), the times each
    symbolised stack's last frame was entered."""
    ent = [] if entered is not None else None
    stacks, counts = read_profile(path, ent)
    name = namer(map_path, binary, counts)

    def named(frames):
        return ";".join(name(f) for f in (["window"] + [
            f for f in frames if f != "window"]))
    out = collections.Counter()
    for frames, n in stacks:
        out[named(frames)] += n
    for frames, n in ent or []:
        entered[named(frames)] += n
    return out, counts


def is_async(frame):
    """An interrupt or exception entry: what interrupted the frame below."""
    return frame.startswith(("asm_exc_", "asm_sysvec_", "irq_entries_start",
                             "spurious_entries_start"))


def function_cost(out, entered, func):
    """func's instructions (itself and its callees, not the interrupts that
    landed in it) and the times it was entered."""
    insns = 0
    for stack, n in out.items():
        frames = stack.split(";")
        if func not in frames:
            continue
        below = frames[frames.index(func) + 1:]
        if not any(is_async(f) for f in below):
            insns += n
    calls = sum(n for s, n in entered.items() if s.split(";")[-1] == func)
    return insns, calls


def table(out, counts, per, top=30):
    """Instructions per function, self and inclusive, per walk."""
    total = sum(out.values())
    what = "walk"
    if per <= 0:
        per, what = 1.0, "run (no walks)"	# syscall: totals
    self_c, incl = collections.Counter(), collections.Counter()
    for stack, n in out.items():
        frames = stack.split(";")
        self_c[frames[-1]] += n
        for f in set(frames):
            incl[f] += n
    lines = ["instructions in the windows: %d (%s window(s)); per %s: %.1f"
             % (total, "+".join(c["windows"] for c in counts
                                if int(c["windows"])), what, total / per)]
    lines.append("%12s %12s  %s" % ("self/" + what[:4], "incl/" + what[:4],
                                    "function"))
    for f, n in incl.most_common(top):
        lines.append("%12.1f %12.1f  %s" % (self_c[f] / per, n / per, f))
    for c in counts:
        if int(c.get("windows", 0)):
            lines.append("counters cpu %s: %s" % (c["cpu"], " ".join(
                "%s=%s" % kv for kv in c.items() if kv[0] not in ("cpu",))))
    return "\n".join(lines) + "\n"


def walks_of(samples):
    """The walks opbench's timed samples say happened: each kept iteration
    that showed the benchmark's event walks walks_per_loop times; one in
    which the yield found no partner to switch to (no_event) walks not at
    all, and the sample can still be valid."""
    return sum((r["kept"] - r.get("no_event", 0)) * r["walks_per_loop"]
               for r in samples)


def check(out, entered, counts, samples):
    """The plugin's total against the TSC's over the same windows (under
    icount with one vCPU they count the same instructions), and the walker's
    instructions per walk."""
    ticks = sum(r.get("mark_ticks", 0) for r in samples)
    walks = walks_of(samples)
    insns = sum(int(c["insns"]) for c in counts)
    windows = sum(int(c["windows"]) for c in counts)
    walker, calls = function_cost(out, entered, "rseq_ops_apply_[k]")
    still_open = sum(int(c.get("open", 0)) for c in counts)
    consistent = windows == len(samples) and not still_open and ticks > 0
    lines = ["consistent=%s" % ("yes" if consistent else "no"),
             "plugin_insns=%d" % insns, "windows=%d" % windows,
             "samples=%d" % len(samples), "tsc_ticks=%d" % ticks,
             "difference=%d" % (insns - ticks),
             "ratio=%.6f" % (insns / ticks if ticks else float("nan")),
             "walks=%d" % walks,
             "walker_insns=%d" % walker,
             "walker_calls=%d" % calls,
             "walker_per_call=%.3f" % (walker / calls if calls else 0),
             "walker_per_walk=%.3f" % (walker / walks if walks else 0)]
    for c in counts:
        if int(c.get("windows", 0)):
            lines.append("counters_cpu%s=%s" % (c["cpu"], ",".join(
                "%s:%s" % kv for kv in c.items()
                if kv[0] not in ("cpu", "mark"))))
    return "\n".join(lines) + "\n"


def analyse(profile, records, map_path, binary, outdir, top=30):
    """Symbolise the profile once and write insn.folded, check.txt and
    table.txt (per walk: opbench's own count, from the same records)."""
    import json
    entered = collections.Counter()
    out, counts = fold(profile, map_path, binary, entered)
    with open(records) as f:
        samples = [r for r in (json.loads(x) for x in f if x.strip())
                   if r.get("kind") == "sample"]
    with open(os.path.join(outdir, "insn.folded"), "w") as f:
        for s, n in sorted(out.items()):
            f.write("%s %d\n" % (s, n))
    text = check(out, entered, counts, samples)
    with open(os.path.join(outdir, "check.txt"), "w") as f:
        f.write(text)
    with open(os.path.join(outdir, "table.txt"), "w") as f:
        f.write(table(out, counts, walks_of(samples), top))
    return text


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    sub = ap.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("entries")
    e.add_argument("map")
    p = sub.add_parser("analyse")
    p.add_argument("profile")
    p.add_argument("records", help="opbench.json of the same boot")
    p.add_argument("--map", required=True)
    p.add_argument("--binary")
    p.add_argument("--dir", required=True, help="where the three files go")
    p.add_argument("--top", type=int, default=30)
    a = ap.parse_args()
    if a.cmd == "entries":
        sys.stdout.write(entries(a.map))
    else:
        sys.stdout.write(analyse(a.profile, a.records, a.map, a.binary,
                                 a.dir, a.top))


if __name__ == "__main__":
    main()
