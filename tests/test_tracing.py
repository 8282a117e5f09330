# SPDX-License-Identifier: GPL-2.0
"""tracing/: folding, flame graphs and bpftrace checks on canned input; in
the guest, a short perf trace of the ops kernel and the prime-count
validation of the bpftrace scripts.
"""
import bisect
import importlib.util
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from conftest import TOP, kernel_dir

TRACING = os.path.join(TOP, "tracing")
DATA = os.path.join(TOP, "tests", "data")
sys.path.insert(0, TRACING)
sys.path.insert(0, os.path.join(TOP, "analysis"))
import flamegraph  # noqa: E402
import stackcollapse  # noqa: E402
import walker_loops  # noqa: E402

_spec = importlib.util.spec_from_file_location(
    "check_trace", os.path.join(TRACING, "check-trace.py"))
check_trace = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_trace)

SVG = "{http://www.w3.org/2000/svg}"


def test_fold_perf_script():
    with open(os.path.join(DATA, "perf-script-sample.txt")) as f:
        stacks = stackcollapse.fold(f)
    walk = ("signal;[libc.so.6];main;[libc.so.6];"
            "entry_SYSCALL_64_after_hwframe_[k];do_syscall_64_[k];"
            "exit_to_user_mode_loop_[k];arch_do_signal_or_restart_[k];"
            "__rseq_signal_deliver_[k];rseq_apply_ops_or_report_[k];"
            "rseq_ops_apply_[k]")
    assert stacks[walk] == 2          # two samples, offsets dropped
    assert stacks["switch;main;__sched_yield"] == 1
    assert sum(stacks.values()) == 4  # swapper included without --comm
    with open(os.path.join(DATA, "perf-script-sample.txt")) as f:
        only = stackcollapse.fold(f, comm="signal")
    assert set(only) == {walk}


def test_fold_rejects_no_callgraph(tmp_path):
    p = tmp_path / "flat.txt"
    p.write_text("")
    r = subprocess.run([os.path.join(TRACING, "stackcollapse.py"), str(p)],
                       capture_output=True, text=True)
    assert r.returncode != 0 and "-g" in r.stderr


def frames(svg):
    root = ET.fromstring(svg)
    out = {}
    for g in root.iter(SVG + "g"):
        title = g.find(SVG + "title").text
        rect = g.find(SVG + "rect")
        out[title.split(" (")[0]] = (float(rect.get("width")),
                                     rect.get("fill"), title)
    return out


def test_flamegraph_svg(tmp_path):
    stacks = {"a;b;c_[k]": 30, "a;b": 10, "a;rseq_ops_apply_[k]": 60}
    svg = flamegraph.render(flamegraph.build(stacks), "t", "s",
                            flamegraph.re.compile("rseq"), False)
    f = frames(svg)
    assert f["all"][0] == pytest.approx(flamegraph.WIDTH - 20)
    assert f["rseq_ops_apply_[k]"][0] == pytest.approx(
        0.6 * (flamegraph.WIDTH - 20))
    assert "60 samples, 60.00%" in f["rseq_ops_apply_[k]"][2]
    # Highlighted frames are magenta-ish: red and blue high, green low.
    r, g, b = map(int, f["rseq_ops_apply_[k]"][1][4:-1].split(","))
    assert r >= 200 and b >= 200 and g < 100
    # Same input, same bytes.
    assert svg == flamegraph.render(flamegraph.build(stacks), "t", "s",
                                    flamegraph.re.compile("rseq"), False)


def test_flamegraph_diff_colours_own_samples():
    ref = {"a;b": 50, "a;c": 50}
    new = {"a;b": 50, "a;c": 50, "a;c;walk": 100}
    f = frames(flamegraph.render(flamegraph.build(new, ref), "t", "", None,
                                 True))
    r, g, b = map(int, f["walk"][1][4:-1].split(","))
    assert r == 255 and g < 100       # grew from nothing: deep red
    r, g, b = map(int, f["b"][1][4:-1].split(","))
    assert b == 255 and r < 255       # 50% of samples to 25%: blue
    # "c" grew in total (its child) but its own share fell: blue, not red.
    r, g, b = map(int, f["c"][1][4:-1].split(","))
    assert b == 255 and r < 255


def test_bpftrace_output_parsed():
    scalars, hists = check_trace.parse(
        os.path.join(DATA, "bpftrace-sample.out"))
    assert scalars[("walks", "primesig")] == 1009
    assert sum(b[2] for b in hists[("ns", "primesig")]) == 1009


def test_validate_catches_a_wrong_count(tmp_path):
    d = tmp_path / "rseq_ops_lat"
    d.mkdir()
    (d / "rseq_ops_lat.bt.out").write_text(
        open(os.path.join(DATA, "bpftrace-sample.out")).read())
    (d / "prime-signals.json").write_text(
        '{"signals":1009,"nr_ops":7,"switches":0,"resets_checked":1}\n')
    assert check_trace.validate([str(d)])
    # Two switches, each possibly inside a raise(): 1009..1011 walks.
    (d / "prime-signals.json").write_text(
        '{"signals":1009,"nr_ops":7,"switches":2,"resets_checked":1}\n')
    assert check_trace.validate([str(d)])
    # Fewer walks than signals, with or without switches: wrong.
    (d / "prime-signals.json").write_text(
        '{"signals":1013,"nr_ops":7,"switches":0,"resets_checked":1}\n')
    assert not check_trace.validate([str(d)])
    (d / "prime-signals.json").write_text(
        '{"signals":1011,"nr_ops":7,"switches":2,"resets_checked":1}\n')
    assert not check_trace.validate([str(d)])


def test_validate_failed_calls_are_not_walks(tmp_path, capsys):
    """A call of the walker that faulted is repeated by the slow path for
    the same walk: rseq_ops_lat.bt keeps it in @failed, out of @walks and
    the histogram, and validate reports it beside the walks."""
    d = tmp_path / "rseq_ops_lat"
    d.mkdir()
    sample = open(os.path.join(DATA, "bpftrace-sample.out")).read()
    (d / "rseq_ops_lat.bt.out").write_text(
        sample.replace("\n\n@ns", "\n\n@failed[primesig, -14]: 3\n\n@ns"))
    (d / "prime-signals.json").write_text(
        '{"signals":1009,"nr_ops":7,"switches":0,"resets_checked":1}\n')
    scalars, _ = check_trace.parse(str(d / "rseq_ops_lat.bt.out"))
    assert scalars[("failed", "primesig, -14")] == 3
    assert check_trace.validate([str(d)])
    line = capsys.readouterr().out
    assert "counted 1009 walks" in line and "3 failed calls, not walks" in \
        line, line


def test_validate_nodes_of_walks_while_registering(tmp_path):
    """rseq_ops_rate.bt also counts the nodes applied: N per walk, exactly,
    unless the thread was switched out while its list was still being
    registered (a walk of fewer nodes); never more than N per walk."""
    d = tmp_path / "rseq_ops_rate"
    d.mkdir()

    def check(nodes, registering):
        (d / "rseq_ops_rate.bt.out").write_text(
            "@walks[primesig]: 1010\n@nodes[primesig]: %d\n" % nodes)
        (d / "prime-signals.json").write_text(json.dumps(
            {"signals": 1009, "nr_ops": 7, "switches": 1,
             "switches_registering": registering, "resets_checked": 1}))
        return check_trace.validate([str(d)])
    assert check(1010 * 7, 0)
    assert not check(1010 * 7 - 3, 0)
    assert check(1010 * 7 - 3, 1)
    assert not check(1010 * 7 + 1, 1)
    assert not check(1009 * 7 - 1, 1)


# The opcodes of x86-64's direct branches with a 32-bit displacement:
# call e8, jmp e9, jcc 0f 8x (branch_sites() looks for those with an
# 8-bit one, jmp eb and jcc 7x, only near the target).
REL32 = re.compile(rb"\xe8|\xe9|\x0f[\x80-\x8f]")


def code_sections(path):
    """The executable sections of an x86-64 ELF file: [(address, bytes)]."""
    with open(path, "rb") as f:
        eh = f.read(64)
        assert eh[:4] == b"\x7fELF" and eh[4:6] == b"\x02\x01" and \
            struct.unpack_from("<H", eh, 18)[0] == 62, \
            "%s: not an x86-64 ELF file" % path
        shoff, = struct.unpack_from("<Q", eh, 0x28)
        shentsize, shnum = struct.unpack_from("<HH", eh, 0x3a)
        f.seek(shoff)
        sh = f.read(shentsize * shnum)
        out = []
        for i in range(shnum):
            _, typ, flags, addr, off, size = struct.unpack_from(
                "<IIQQQQ", sh, i * shentsize)
            if typ == 1 and flags & 4 and size:   # PROGBITS, EXECINSTR
                f.seek(off)
                out.append((addr, f.read(size)))
    return out


def text_symbols(path):
    """Function symbols, sorted: [(address, size, name)] (nm -S)."""
    r = subprocess.run(["nm", "-S", "--defined-only", path],
                       capture_output=True, text=True)
    assert r.returncode == 0, "nm %s: %s" % (path, r.stderr.strip())
    syms = []
    for line in r.stdout.splitlines():
        f = line.split()
        if len(f) == 4 and f[2] in "tTwW":
            syms.append((int(f[0], 16), int(f[1], 16), f[3]))
        elif len(f) == 3 and f[1] in "tTwW":
            syms.append((int(f[0], 16), 0, f[2]))
    return sorted(syms)


def branch_sites(sections, target):
    """Addresses of the bytes that decode as a direct call or jump to
    TARGET, if they are an instruction there: [(address, 'call'|'jump')]."""
    out = []
    for base, code in sections:
        end = base + len(code)
        for m in REL32.finditer(code):
            p, n = m.start(), len(m.group())
            if p + n + 4 > len(code):
                continue
            rel, = struct.unpack_from("<i", code, p + n)
            if base + p + n + 4 + rel == target:
                out.append((base + p, "call" if m.group() == b"\xe8"
                            else "jump"))
        if base - 130 <= target < end + 130:
            for p in range(max(0, target - base - 130),
                           min(len(code) - 1, target - base + 128)):
                if (code[p] == 0xeb or 0x70 <= code[p] <= 0x7f) and \
                        base + p + 2 + struct.unpack_from(
                            "<b", code, p + 1)[0] == target:
                    out.append((base + p, "jump"))
    return out


def callers_of(path, func, depth=3):
    """The functions of PATH (vmlinux) that a stack unwound from FUNC can
    show right below it, by name: those holding a call of it (a call
    from an inlined parent is its host's; aliases of a host count
    alike) and, for those holding a jump to it (a tail call leaves no
    frame of its own), their callers in turn, DEPTH levels deep.
    Method: the symbol table (nm) gives the address of FUNC and the
    extent of every function; the executable sections are scanned for
    the encodings of a direct call or jump to that address; each hit is
    kept only if objdump's disassembly of its function has that
    instruction there (walker_loops.disassemble), which drops the bytes
    that merely look like one. Indirect calls are not seen: the kernel
    calls its rseq slow path directly."""
    syms = text_symbols(path)
    sections = code_sections(path)

    def callers(name, level, seen):
        starts = {a for a, _, n in syms if n == name}
        assert starts, "no function %s in %s's symbol table" % (name, path)
        found = set()
        for start in starts:
            for site, kind in branch_sites(sections, start):
                i = bisect.bisect_right(syms, (site, float("inf"), "")) - 1
                if i < 0:
                    continue
                # Every function whose extent holds the site (aliases),
                # else the nearest before it, as kallsyms names it.
                hosts = {n for a, sz, n in syms[:i + 1] if a <= site < a + sz}
                hosts = hosts or {syms[i][2]}
                for h in sorted(hosts - {name}):
                    _, insns = walker_loops.disassemble(path, h)
                    if not any(a == site and (mn.startswith(("call", "j")))
                               and walker_loops.JUMP_RE.match(ops)
                               and int(walker_loops.JUMP_RE.match(ops)
                                       .group(1), 16) == start
                               for a, mn, ops in insns):
                        continue
                    if kind == "call":
                        found.add(h)
                    elif level < depth and h not in seen:
                        found |= callers(h, level + 1, seen | {h})
        return found
    return callers(func, 0, {func})


def test_callers_of_a_function_from_the_binary(tmp_path):
    """callers_of() on a binary of known shape: a calls target through an
    inlined parent, b tail-calls it (a jump: c, b's caller, is the frame
    below), d and main never reach it directly."""
    src = tmp_path / "t.c"
    src.write_text(
        "#define NI __attribute__((noinline))\n"
        "NI void target(int *p) { __asm__ volatile(\"\" ::: \"memory\");"
        " *p += 1; }\n"
        "static inline __attribute__((always_inline)) void inl(int *p)"
        " { if (*p) target(p); }\n"
        "NI void a(int *p) { inl(p); p[1]++; }\n"
        "NI void b(int *p) { target(p); }\n"
        "NI void c(int *p) { b(p); p[2]++; }\n"
        "NI void d(int *p) { p[3]++; }\n"
        "int main(void) { static int x[4]; void (*volatile f[])(int *) ="
        " { a, c, d }; for (int i = 0; i < 3; i++) f[i](x); return 0; }\n")
    exe = tmp_path / "t"
    cc = shutil.which("gcc") or shutil.which("cc")
    assert cc, "no C compiler on this host: install gcc (scripts/deps.sh)"
    r = subprocess.run([cc, "-O2", "-o", str(exe), str(src)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    _, insns = walker_loops.disassemble(str(exe), "b")
    assert any(mn == "jmp" and "<target>" in ops for _, mn, ops in insns), \
        "gcc did not tail-call target from b: %s" % insns
    assert callers_of(str(exe), "target") == {"a", "c"}


def trace(tmp_path, *args):
    env = dict(os.environ, ACCEL="tcg", RESULTS_ROOT=str(tmp_path))
    r = subprocess.run([os.path.join(TRACING, "trace.sh")] + list(args),
                       cwd=TOP, env=env, capture_output=True, text=True,
                       timeout=1500)
    return r, r.stdout.strip().splitlines()[-1] if r.stdout.strip() else None


@pytest.mark.rig
def test_flame_graph_of_the_walk(flavours, image, tmp_path):
    """ops at 2048: the walk before the handler is on the exit path, on
    the rseq slow path (more than 64 nodes: interrupts on), where the
    cpu-clock timer can sample inside it."""
    # The functions that call the slow path, from the vmlinux the guest
    # boots (callers_of(): symbol table, code scan, objdump), not a list
    # of the exit paths known today.
    vmlinux = os.path.join(kernel_dir("ops"), "vmlinux")
    exits = callers_of(vmlinux, "__rseq_handle_slowpath")
    assert exits, "nothing in %s calls __rseq_handle_slowpath" % vmlinux
    r, out = trace(tmp_path, "flame", "ops", "signal", "2048")
    assert r.returncode == 0, r.stderr[-3000:]
    with open(os.path.join(out, "ops-2048", "perf.folded")) as f:
        folded = f.read()
    walks = [l for l in folded.splitlines() if "rseq_ops_apply_[k]" in l]
    assert walks, folded[:2000]
    # Every walk is on a return to user space: 2048 nodes are walked by
    # the slow path, never by the interrupts-off fast path, and the slow
    # path's frame sits on one of its callers in the vmlinux; below the
    # kernel's frames are the thread's own (frame 0 is the command's
    # name, stackcollapse.py): it entered the kernel from user space.
    for l in walks:
        frames_ = l.rsplit(" ", 1)[0].split(";")
        walk = frames_.index("rseq_ops_apply_[k]")
        assert frames_[walk - 1] == "__rseq_handle_slowpath_[k]", l
        caller = frames_[walk - 2]
        assert caller.endswith("_[k]") and caller[:-4] in exits, (
            "%s calls __rseq_handle_slowpath here, but %s has it called "
            "only from %s: %s" % (caller, vmlinux, ", ".join(sorted(exits)),
                                  l))
        kernel = [i for i, f in enumerate(frames_) if f.endswith("_[k]")]
        assert kernel[0] >= 2, "no user frame below the kernel's: %s" % l
        assert kernel == list(range(kernel[0], len(frames_))), \
            "a user frame above a kernel frame: %s" % l
    # Signal delivery no longer walks: the IDs may be stale there.
    assert not any("__rseq_signal_deliver_[k]" in l for l in walks)
    n_walk = sum(int(l.rsplit(" ", 1)[1]) for l in walks)
    n_all = sum(int(l.rsplit(" ", 1)[1]) for l in folded.splitlines())
    # 2048 operations per signal: the walk is most of the benchmark.
    assert n_walk > 0.3 * n_all, (n_walk, n_all)
    with open(os.path.join(out, "flame.svg")) as f:
        assert "rseq_ops_apply_[k]" in frames(f.read())
    with open(os.path.join(out, "commands.txt")) as f:
        cmds = f.read()
    assert "perf record -q -e cpu-clock" in cmds and "guest-run" in cmds


@pytest.mark.rig
def test_bpftrace_scripts_count_prime_walks(flavours, image, tmp_path):
    r, out = trace(tmp_path, "validate", "ops", "rseq_ops_lat.bt")
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    with open(os.path.join(out, "validate.txt")) as f:
        v = f.read()
    assert ": OK" in v and "MISMATCH" not in v
    scalars, hists = check_trace.parse(os.path.join(
        out, "rseq_ops_lat", "rseq_ops_lat.bt.out"))
    with open(os.path.join(out, "rseq_ops_lat", "prime-signals.json")) as f:
        w = json.loads(f.read().strip().splitlines()[-1])
    assert w["signals"] == 1009 and w["resets_checked"] == 1, w
    # validate requires primesig's histogram to hold one entry per walk,
    # and at least as many walks as signals: a bound on that total here
    # could not fail. It reads no other command's walks or failed calls:
    # nothing else in the guest registers operations, and the exit calls
    # rseq_ops_apply() only for a task that has them (has_ops).
    others = sorted({"@%s[%s]" % k for k in list(scalars) + list(hists)
                     if k[1].split(",")[0] != "primesig"})
    assert not others, "walker calls of tasks without operations: %s" % (
        ", ".join(others))
