# SPDX-License-Identifier: GPL-2.0
"""The instruction profiler (tracing/insnprof): its shadow call stack on
synthetic instruction streams (calls, returns, an interrupt in the middle,
an interrupt between a call and its target, a retpoline, a context switch),
its instruction decoder, the entry points it reads from System.map, and the
plugin built against qemu-plugin.h from Debian's qemu source package."""
import json
import os
import subprocess
import sys

import pytest

from conftest import TOP, manifest

# The walker's fixed part per call (entry, the sentinel, the user-access
# window, return), in instructions: 17.6 measured at ops' series v2
# (1880 per call at 64 operations, 29.10 per operation). A slope off by
# more than about 0.7 instruction per operation leaves this range.
FIXED_MAX = 64
sys.path.insert(0, os.path.join(TOP, "tracing"))
import insnprof  # noqa: E402

SRC = os.path.join(TOP, "tracing", "insnprof")
K = 0xffffffff81000000
ENTRY_IRQ = K + 0x230		# an external-interrupt stub
ENTRY_SYSCALL = K + 0x80	# entry_SYSCALL_64


@pytest.fixture(scope="module")
def shadow(tmp_path_factory):
    out = tmp_path_factory.mktemp("insnprof")
    r = subprocess.run(["make", "-s", "-C", SRC, "O=%s" % out,
                        "USERCFLAGS=-Werror", "%s/shadow-test" % out],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "warning" not in r.stderr, r.stderr
    entries = out / "entries.txt"
    entries.write_text("# stubs, 8 bytes apart\n%x %x 8\n" % (
        ENTRY_IRQ, ENTRY_IRQ + 8 * 4))
    return str(out / "shadow-test"), str(entries)


class Stream:
    """A synthetic instruction stream for one vCPU (0 unless given)."""

    def __init__(self):
        self.lines = []

    def insn(self, pc, kind="o", length=1, cpu=0):
        self.lines.append("%d %x %s %d" % (cpu, pc, kind, length))
        return pc + length

    def run(self, shadow):
        exe, entries = shadow
        r = subprocess.run([exe, entries], input="\n".join(self.lines) + "\n",
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        folded, counts = {}, {}
        self.entered = {}
        for line in r.stdout.splitlines():
            if line.startswith("# entered "):
                stack, n = line[len("# entered "):].rsplit(" ", 1)
                self.entered[stack] = int(n)
            elif line.startswith("counts "):
                kv = dict(x.split("=") for x in line.split()[1:])
                counts[int(kv.pop("cpu"))] = {k: int(v) for k, v in kv.items()}
            else:
                stack, n = line.rsplit(" ", 1)
                folded[stack] = int(n)
        return folded, counts


def h(*addrs):
    return ";".join("%x" % a for a in addrs)


def test_calls_and_returns(shadow):
    s = Stream()
    s.insn(0x900, "o")			# before the window: not counted
    s.insn(0x1000, "b", 7)
    s.insn(0x1007)
    s.insn(0x1008, "c", 5)		# call f
    s.insn(0x2000)
    s.insn(0x2001, "c", 5)		# f calls g
    s.insn(0x3000)
    s.insn(0x3001, "r")			# g returns
    s.insn(0x2006, "r")			# f returns
    s.insn(0x100d)
    s.insn(0x100e, "e", 7)
    s.insn(0x1015)			# after the window: not counted
    folded, counts = s.run(shadow)
    assert folded == {"window": 3, h(0x2000): 3, h(0x2000, 0x3000): 2}
    assert s.entered == {h(0x2000): 1, h(0x2000, 0x3000): 1}
    c = counts[0]
    assert c["insns"] == 8 and c["windows"] == 1
    assert c["calls"] == 2 and c["rets"] == 2 and c["ret_rewrites"] == 0
    assert c["depth"] == 0


def test_interrupt_in_the_middle(shadow):
    """An interrupt in user code: its instructions under its entry, and
    after the iret the interrupted function goes on and returns normally."""
    s = Stream()
    s.insn(0x1000, "b", 7)
    s.insn(0x1007, "c", 5)		# call f
    s.insn(0x2000)
    s.insn(ENTRY_IRQ)			# interrupt: stub
    s.insn(ENTRY_IRQ + 2)		# its jmp: not an entry (not 8-aligned)
    s.insn(K + 0x5000, "c", 5)		# the handler calls h
    s.insn(K + 0x6000, "r")
    s.insn(K + 0x5005, "i", 2)		# iretq
    s.insn(0x2001, "r")			# f returns
    s.insn(0x100c, "e", 7)
    folded, counts = s.run(shadow)
    assert folded == {"window": 1, h(0x2000): 2,
                      h(0x2000, ENTRY_IRQ): 4,
                      h(0x2000, ENTRY_IRQ, K + 0x6000): 1}
    c = counts[0]
    assert c["async_entries"] == 1 and c["irets"] == 1
    assert c["iret_unmatched"] == 0 and c["ret_rewrites"] == 0


def test_interrupt_between_call_and_target(shadow):
    """The interrupt arrives after the call, before its first instruction:
    the call is applied after the iret, at its target."""
    s = Stream()
    s.insn(0x1000, "b", 7)
    s.insn(0x1007, "c", 5)		# call f ...
    s.insn(ENTRY_IRQ + 8)		# ... interrupted first
    s.insn(ENTRY_IRQ + 10, "i", 2)
    s.insn(0x2000)			# f's first instruction
    s.insn(0x2001, "r")
    s.insn(0x100c, "e", 7)
    folded, counts = s.run(shadow)
    assert folded == {"window": 1, h(ENTRY_IRQ + 8): 2, h(0x2000): 2}
    assert counts[0]["calls"] == 1 and counts[0]["ret_rewrites"] == 0


def test_interrupt_right_after_iret(shadow):
    """A second interrupt taken as the first one's iret sets IF again: the
    iret has happened, so the second does not nest under the first."""
    s = Stream()
    s.insn(0x1000, "b", 7)
    s.insn(0x1007, "c", 5)		# call f
    s.insn(0x2000)
    s.insn(ENTRY_IRQ)			# first interrupt
    s.insn(K + 0x5000, "i", 2)		# its iretq ...
    s.insn(ENTRY_IRQ + 8)		# ... and at once a second one
    s.insn(K + 0x5000, "i", 2)
    s.insn(0x2001, "r")			# f returns
    s.insn(0x100c, "e", 7)
    folded, counts = s.run(shadow)
    assert folded == {"window": 1, h(0x2000): 2, h(0x2000, ENTRY_IRQ): 2,
                      h(0x2000, ENTRY_IRQ + 8): 2}
    c = counts[0]
    assert c["irets"] == 2 and c["iret_unmatched"] == 0
    assert c["ret_rewrites"] == 0 and c["depth"] == 0


def test_faulting_call_runs_again(shadow):
    """A call that faults (a page fault on the stack) runs again after the
    exception's iret: the first attempt makes no frame."""
    s = Stream()
    s.insn(0x1000, "b", 7)
    s.insn(0x1007, "c", 5)		# call f: faults
    s.insn(ENTRY_IRQ + 16)		# the exception's entry
    s.insn(K + 0x5000, "i", 2)		# iretq back to the call
    s.insn(0x1007, "c", 5)		# call f again
    s.insn(0x2000)
    s.insn(0x2001, "r")
    s.insn(0x100c, "e", 7)
    folded, counts = s.run(shadow)
    assert folded == {"window": 2, h(ENTRY_IRQ + 16): 2, h(0x2000): 2}
    c = counts[0]
    assert c["restarts"] == 1 and c["depth"] == 0 and c["calls"] == 1


def test_syscall_and_sysret(shadow):
    s = Stream()
    s.insn(0x1000, "b", 7)
    s.insn(0x1007, "s", 2)		# syscall
    s.insn(ENTRY_SYSCALL)
    s.insn(ENTRY_SYSCALL + 1, "c", 5)
    s.insn(K + 0x7000)
    s.insn(K + 0x7001, "r")
    s.insn(ENTRY_SYSCALL + 6, "y", 3)	# sysretq
    s.insn(0x1009)
    s.insn(0x100a, "e", 7)
    folded, counts = s.run(shadow)
    assert folded == {"window": 2, h(ENTRY_SYSCALL): 3,
                      h(ENTRY_SYSCALL, K + 0x7000): 2}
    assert counts[0]["syscalls"] == 1 and counts[0]["sysrets"] == 1
    assert counts[0]["depth"] == 0


def test_retpoline(shadow):
    """call thunk; the thunk calls its own label and rets into the real
    target: the target takes the thunk's place under the caller."""
    s = Stream()
    s.insn(0x1000, "b", 7)
    s.insn(0x1007, "c", 5)		# call __x86_indirect_thunk_rax
    s.insn(0x8000, "c", 5)		# call .Ldo_rop
    s.insn(0x8010)			# mov %rax, (%rsp)
    s.insn(0x8011, "r")			# ret -> F
    s.insn(0x9000)			# F
    s.insn(0x9001, "r")			# F returns to the caller
    s.insn(0x100c, "e", 7)
    folded, counts = s.run(shadow)
    # The thunk's inner call lands 11 bytes ahead: no function call, so
    # no level of its own.
    assert folded == {"window": 1, h(0x8000): 3, h(0x9000): 2}
    c = counts[0]
    assert c["ret_rewrites"] == 1 and c["local_calls"] == 1
    assert c["depth"] == 0


def test_return_stack_stuffing(shadow):
    """FILL_RETURN_BUFFER: calls to the next slot whose return addresses
    are dropped from the stack by hand; the function's later ret unwinds
    them, and they never add levels to the graph."""
    s = Stream()
    s.insn(0x1000, "b", 7)
    s.insn(0x1007, "c", 5)		# call switch_to_asm
    pc = 0x5000
    for _ in range(4):
        s.insn(pc, "c", 5)		# call 1f; int3; 1:
        pc += 6
    s.insn(pc, "o", 4)			# add $32, %rsp
    s.insn(pc + 4, "r")			# ret to the caller
    s.insn(0x100c, "e", 7)
    folded, counts = s.run(shadow)
    assert folded == {"window": 1, h(0x5000): 6}
    c = counts[0]
    assert c["local_calls"] == 4 and c["ret_unwinds"] == 4
    assert c["depth"] == 0


def test_context_switch(shadow):
    """Task A switches out inside a syscall; task B's frames were never
    seen. Its returns rewrite frames (counted), and its sysret leaves no
    kernel frame behind."""
    s = Stream()
    s.insn(0x1000, "b", 7)
    s.insn(0x1007, "s", 2)		# A: syscall
    s.insn(ENTRY_SYSCALL, "c", 5)	# A: call schedule
    s.insn(K + 0x9000, "c", 5)		# schedule calls __switch_to
    s.insn(K + 0xa000, "r")		# ret into B's frames: unknown
    s.insn(K + 0xb123)			# B somewhere in its syscall
    s.insn(K + 0xb124, "r")		# B returns further up: unknown
    s.insn(K + 0xc456, "y", 3)		# B: sysretq
    s.insn(0x4000)			# B in user space
    s.insn(0x4001, "e", 7)
    folded, counts = s.run(shadow)
    c = counts[0]
    assert c["ret_rewrites"] + c["ret_underflows"] >= 2, c
    assert c["depth"] == 0, c
    assert sum(folded.values()) == c["insns"] == 8
    # Every kernel instruction stays under the syscall's entry.
    for stack, n in folded.items():
        if stack != "window":
            assert stack.startswith(h(ENTRY_SYSCALL)), stack


def test_window_is_per_cpu(shadow):
    """Only the vCPU that executed the begin marker counts, until its own
    end marker."""
    s = Stream()
    s.insn(0x1000, "b", 7, cpu=0)
    s.insn(0x5000, "o", cpu=1)		# another vCPU: not counted
    s.insn(0x1007, "o", cpu=0)
    s.insn(0x5001, "e", 7, cpu=1)	# not cpu 0's end
    s.insn(0x1008, "o", cpu=0)
    s.insn(0x1009, "e", 7, cpu=0)
    s.insn(0x1010, "o", cpu=0)
    folded, counts = s.run(shadow)
    assert folded == {"window": 2}
    assert list(counts) == [0]


@pytest.mark.parametrize("hexbytes,kind", [
    ("e800000000", "call"), ("41ffd3", "call"), ("ff1500000000", "call"),
    ("ff2500000000", "other"), ("c3", "ret"), ("f3c3", "ret"),
    ("c20800", "ret"), ("48cf", "iret"), ("0f05", "syscall"),
    ("480f07", "sysret"), ("0f1f804245474e", "begin"),
    ("0f1f80454e4421", "end"), ("0f1f8000000000", "other"), ("90", "other"),
])
def test_decode(shadow, hexbytes, kind):
    r = subprocess.run([shadow[0], "--decode", hexbytes], capture_output=True,
                       text=True)
    assert r.stdout.strip() == kind


def test_entries_from_system_map(tmp_path):
    m = tmp_path / "System.map"
    m.write_text("\n".join([
        "ffffffff81000080 T entry_SYSCALL_64",
        "ffffffff81000230 T irq_entries_start",
        "ffffffff81000890 T spurious_entries_start",
        "ffffffff81000b90 T asm_exc_page_fault",
        "ffffffff81000c40 T asm_common_interrupt",
        "ffffffff81000d00 T asm_sysvec_apic_timer_interrupt", ""]))
    r = subprocess.run(["/usr/bin/python3", os.path.join(
        TOP, "tracing", "insnprof.py"), "entries", str(m)],
        capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    lines = [x for x in r.stdout.splitlines() if not x.startswith("#")]
    assert lines == ["ffffffff81000b90 ffffffff81000b91 1",
                     "ffffffff81000d00 ffffffff81000d01 1",
                     "ffffffff81000230 ffffffff81000b90 8"]


@pytest.mark.rig
def test_plugin_builds_against_debians_header(tmp_path):
    """qemu-plugin.h comes from Debian's qemu source package of the
    installed version, fetched by the build step make plugin-header into
    the cache and recorded in the manifest (a test never fetches); the
    plugin builds warning-free against it and declares the API version it
    was built for."""
    m = manifest()
    hdir = m.get("qemu_plugin_h")
    assert hdir, "no qemu_plugin_h in the manifest: make plugin-header"
    assert os.path.isfile(os.path.join(hdir, "qemu-plugin.h"))
    ver = subprocess.run(["dpkg-query", "-W", "-f=${source:Version}",
                          "qemu-system-x86"], capture_output=True,
                         text=True).stdout
    assert m.get("qemu_plugin_version") == ver, (m, ver)
    r = subprocess.run(["make", "-s", "-C", SRC, "O=%s" % tmp_path,
                        "USERCFLAGS=-Werror", "QEMU_PLUGIN_H=%s" % hdir,
                        "%s/insnprof.so" % tmp_path],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    nm = subprocess.run(["nm", "-D", "--defined-only",
                         str(tmp_path / "insnprof.so")],
                        capture_output=True, text=True).stdout
    assert "qemu_plugin_install" in nm and "qemu_plugin_version" in nm


def test_walks_are_those_that_happened():
    """Two samples of 30 yield round trips (2 walks each); in the second,
    one yield found no partner (no_event 1): 118 walks happened, not 120.
    A syscall sample declares none."""
    switch = {"loops": 30, "kept": 30, "walks_per_loop": 2}
    assert insnprof.walks_of([dict(switch, no_event=0),
                              dict(switch, no_event=1)]) == 118
    assert insnprof.walks_of([{"loops": 50, "kept": 50,
                               "walks_per_loop": 0}]) == 0


def test_opbench_marks_its_samples(opbench):
    """opbench --mark: the markers are NOPs on this host, every sample
    record carries the TSC ticks of its marked window, and warm-up samples
    (which no record would account for) are refused."""
    r = subprocess.run([opbench, "-q", "--mark", "-w", "0", "-n", "0", "-l",
                        "50", "-s", "2", "syscall"], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    recs = [json.loads(x) for x in r.stdout.splitlines()]
    marks = [x["mark_ticks"] for x in recs if x["kind"] == "sample"]
    assert len(marks) == 2 and all(m > 0 for m in marks)
    r = subprocess.run([opbench, "--mark", "syscall"], capture_output=True,
                       text=True)
    assert r.returncode == 2 and "--mark needs --warmup 0" in r.stderr


@pytest.fixture(scope="module")
def insn_profile(flavours, image, tmp_path_factory):
    """make flamegraph MODE=instructions, small: switch at 64 operations
    on ops against N = 0 on baseline; the profile's directory."""
    env = dict(os.environ, RESULTS_ROOT=str(tmp_path_factory.mktemp("insn")),
               LOOPS="30", SAMPLES="2", ACCEL="icount")
    r = subprocess.run([os.path.join(TOP, "tracing", "trace.sh"), "insn",
                        "ops", "switch", "64", "baseline", "0"],
                       capture_output=True, text=True, env=env, timeout=1200)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout.strip().splitlines()[-1]


def profile_check(out, d):
    with open(os.path.join(out, d, "check.txt")) as f:
        return dict(x.split("=", 1) for x in f.read().split())


@pytest.mark.rig
def test_instruction_flame_graph_in_the_guest(insn_profile):
    """The plugin's total over the marked samples equals icount's (the TSC
    opbench read) within 0.1 %; at 64 operations the walker is in the ops
    profile, entered once per walk at least; at N = 0 no profile has a
    walker frame, and the differential is drawn."""
    out = insn_profile
    ops, base = profile_check(out, "ops-64"), profile_check(out, "baseline-0")
    for c in (ops, base):
        assert int(c["windows"]) == int(c["samples"]) == 2, c
        assert abs(float(c["ratio"]) - 1) < 1e-3, c
    # The walks the run's records say happened: a yield that found no
    # partner to switch to walks not at all, and its sample stays valid.
    with open(os.path.join(out, "ops-64", "opbench.json")) as f:
        recs = [json.loads(x) for x in f if x.strip()]
    samples = [x for x in recs if x["kind"] == "sample"]
    assert len(samples) == 2 and all(x["valid"] for x in samples), samples
    walks = sum((x["kept"] - x["no_event"]) * x["walks_per_loop"]
                for x in samples)
    # No range on walks itself: 30 loops of 2 walks bound it from above,
    # and the gate from below (a valid sample has at least half its
    # iterations switching: "fewer than half the iterations" in
    # microbench/opbench.c), so it could not fail. The plugin's count
    # against it can.
    assert int(ops["walker_calls"]) >= int(ops["walks"]) == walks, ops
    assert int(base["walker_calls"]) == 0
    with open(os.path.join(out, "ops-64", "insn.folded")) as f:
        assert "rseq_ops_apply_[k]" in f.read()
    with open(os.path.join(out, "baseline-0", "insn.folded")) as f:
        assert "rseq_ops_apply" not in f.read()
    for svg in ("flame.svg", "diff.svg"):
        assert os.path.getsize(os.path.join(out, svg)) > 1000, svg
    with open(os.path.join(out, "table.txt")) as f:
        assert "rseq_ops_apply_[k]" in f.read()


@pytest.mark.rig
def test_profile_and_measured_slope_agree(insn_profile, quick_run):
    """Two independent figures of one walk: the quick run's slope per
    operation per walk (timed, a + b*N over N = 1 and 2048) and the
    walker's instructions per call at 64 operations, counted by the
    plugin. Under icount the walker's call is its fixed part plus 64
    slopes: the fixed part must come out small (a slope per loop, twice
    the right one, or a profile of another function would not). It may
    come out below zero: above 64 operations v3 applies chunks of 64 on
    the slow path, each with its own entry, so the slope between N = 1
    and 2048 carries a share of that (v3's operation is about 5
    instructions: a chunk's entry is worth more than half an operation
    each)."""
    import test_bench_pipeline
    slope, _ = test_bench_pipeline.per_op_per_walk(quick_run)
    per_call = float(profile_check(insn_profile, "ops-64")["walker_per_call"])
    fixed = per_call - 64 * slope
    assert -FIXED_MAX < fixed < FIXED_MAX, (per_call, slope, fixed)
