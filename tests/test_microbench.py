# SPDX-License-Identifier: GPL-2.0
"""opbench: options, record format, registration helpers (host), and the
correctness gate in the guest (rig)."""
import json
import os
import re
import shutil
import subprocess

import pytest

import rigreport
from conftest import TOP

RUNNER = os.path.join(TOP, "vm-images", "guest-run")
# Every record of a cell starts with these (common.c's emit_rec_head()),
# tcmodel's too: the cell and every variant a sample depends on.
HEAD_KEYS = {"kind", "bench", "flavour", "kernel", "nr_ops", "op_type", "reg",
             "cpu", "layout", "waker_ops", "period_us", "warmup", "no_ops",
             "pad", "via"}
SAMPLE_KEYS = HEAD_KEYS | {
    "sample", "loops", "loop", "clock", "tsc_median", "tsc_p10", "tsc_p90",
    "tsc_mean", "tsc_trim", "counted", "outliers", "expect", "walked", "no_event",
    "partial", "partial_explained", "missed", "unexpected",
    "partner_violations", "better", "walks_per_loop", "valid", "why"}
GATE_KEYS = HEAD_KEYS | {
    "check", "resets_expected", "resets_seen", "valid", "detail"}


@pytest.fixture(scope="module")
def guest_opbench(tmp_path_factory):
    """opbench as the guest gets it: built in the trixie build root."""
    out = str(tmp_path_factory.mktemp("mbguest"))
    r = subprocess.run([os.path.join(TOP, "kernel-patch", "scripts", "buildroot.sh"), "run",
                        "--bind", out, "make", "-s", "-C",
                        os.path.join(TOP, "microbench"), "O=%s" % out,
                        "USERCFLAGS=-Werror"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return os.path.join(out, "opbench")


def run(opbench, *args):
    return subprocess.run([opbench, "-q"] + list(args), capture_output=True,
                          text=True, timeout=120)


def records(stdout):
    return [json.loads(l) for l in stdout.splitlines() if l.strip()]


def test_list_names_every_benchmark(opbench):
    r = run(opbench, "--list")
    assert r.returncode == 0
    names = [l.split()[0] for l in r.stdout.splitlines()]
    assert names == ["syscall", "switch", "preempt", "signal", "migrate",
                     "register"]


def test_list_gives_each_benchmarks_default_type(opbench):
    """The one place a benchmark's default operation type is stated."""
    rows = [l.split() for l in run(opbench, "--list").stdout.splitlines()]
    types = {r[0]: r[1] for r in rows}
    assert types == {"syscall": "null", "switch": "null", "preempt": "null",
                     "signal": "null", "migrate": "cpu", "register": "null"}


def test_register_says_what_it_cannot_do(opbench):
    """register: on a kernel without operations (this host's) an
    "unsupported" record that names the kernel at every N, status 0 and
    no sample; on a kernel with them, N = 2048 is the full list, refused
    by the kernel with ENOSPC (the walker run has that cell)."""
    r = run(opbench, "-n", "0,2048", "-l", "10", "-s", "1", "register")
    assert r.returncode == 0, r.stderr
    recs = [json.loads(x) for x in r.stdout.splitlines() if x.strip()]
    uns = {x["nr_ops"]: x for x in recs if x["kind"] == "unsupported"}
    assert 2048 in uns, recs
    if "kernel without RSEQ operations" in uns.get(0, {}).get("why", ""):
        assert uns[2048]["why"] == uns[0]["why"]
        assert not [x for x in recs if x["kind"] == "sample"]
    else:
        assert "list is full" in uns[2048]["why"]


@pytest.mark.parametrize("args,msg", [
    (["-n", "5000", "syscall"], "want numbers 0..2048"),
    (["-n", "1,x", "syscall"], "want numbers 0..2048"),
    (["-t", "reset3", "syscall"], "want reset4, reset8, null, cpu or mmcid"),
    (["-r", "v3", "syscall"], "want own, legacy or glibc"),
    (["-l", "0", "syscall"], "--loops '0' is not a number >= 1"),
    (["--pad", "65", "syscall"], "--pad 65: at most 64"),
    (["--via", "ebpf", "syscall"], "--via 'ebpf': want prctl, bpf or min"),
    (["nosuch"], "no benchmark 'nosuch'"),
    ([], "name one benchmark"),
])
def test_bad_arguments_are_named(opbench, args, msg):
    r = run(opbench, *args)
    assert r.returncode == 2
    assert msg in r.stderr


@pytest.mark.parametrize("bench", ["syscall", "switch", "signal", "preempt"])
def test_unpinnable_cpu_fails_by_name(opbench, bench):
    """A benchmark that cannot pin its threads stops with an error naming
    the CPU instead of measuring something else."""
    cpu = os.cpu_count() + 60
    r = run(opbench, "-n", "0", "-l", "10", "-s", "1", "-w", "0",
            "--cpu", str(cpu), bench)
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert "%s: cannot pin to CPU %d" % (bench, cpu) in r.stderr
    assert '"kind":"sample"' not in r.stdout.replace(" ", "")


def test_records_on_host(opbench):
    """N=0 measures anywhere; N=1 on a kernel without RSEQ operations gives
    a clean 'unsupported' record, not a crash."""
    r = run(opbench, "-n", "0,1", "-l", "100", "-s", "3", "-w", "0",
            "-f", "host", "syscall")
    assert r.returncode == 0, r.stderr
    recs = records(r.stdout)
    samples = [x for x in recs if x["kind"] == "sample"]
    assert len(samples) == 3
    for s in samples:
        assert SAMPLE_KEYS <= set(s), SAMPLE_KEYS - set(s)
        assert s["nr_ops"] == 0 and s["flavour"] == "host"
        assert s["loops"] == 100 and s["tsc_median"] > 0
        assert s["tsc_p10"] <= s["tsc_median"] <= s["tsc_p90"]
        # The mean of the middle eight tenths lies between their ends.
        assert s["tsc_p10"] <= s["tsc_trim"] <= s["tsc_p90"]
        assert s["counted"] == 100 and s["valid"] is True
    clock = [x for x in recs if x["kind"] == "clock"]
    assert len(clock) == 1 and clock[0]["ticks_per_insn"] > 0
    # The TSC's step: two reads in a row differ by at least one tick.
    assert clock[0]["tsc_step"] >= 1
    # The host's own kernel: 0 without rseq (before 6.3: no such entry)
    size = clock[0]["rseq_feature_size"]
    assert size == 0 or size >= 20, clock[0]
    assert [x["nr_ops"] for x in recs if x["kind"] == "order"] == [[0, 1]]
    gates = [x for x in recs if x["kind"] == "gate"]
    assert {g["check"] for g in gates} == {"no-walk-without-schedule",
                                           "walk-after-schedule"}
    for g in gates:
        assert GATE_KEYS <= set(g) and g["valid"] is True
    # Each gate says what it took: the attempt that held no switch, the
    # polls until the thread was switched out (sched_out()).
    detail = {g["check"]: g["detail"] for g in gates}
    assert re.fullmatch(r"1000 getppid without a context switch, "
                        r"attempt ([1-9]|1[0-9]|20) of 20",
                        detail["no-walk-without-schedule"]), detail
    m = re.fullmatch(r"switched out after (\d+) poll\(\) of 1 ms",
                     detail["walk-after-schedule"])
    assert m and 1 <= int(m.group(1)) <= 1000, detail
    for s in samples:
        # A getppid loop expects no walk: every switch is one no iteration
        # showed, and at N = 0 no word can be partial.
        assert s["partial"] == s["partial_explained"] == 0, s
        assert s["switches_unshown"] == round(s["switches_per_loop"] * 100), s
    if any(x["kind"] == "sample" and x["nr_ops"] == 1 for x in recs):
        pytest.skip("this host's kernel has RSEQ operations")
    unsup = [x for x in recs if x["kind"] == "unsupported"]
    assert len(unsup) == 1 and unsup[0]["nr_ops"] == 1
    assert HEAD_KEYS <= set(unsup[0]), HEAD_KEYS - set(unsup[0])
    for x in samples + gates + unsup:
        assert (x["warmup"], x["period_us"], x["waker_ops"], x["no_ops"],
                x["pad"], x["via"]) == (0, 331, False, False, 0, "prctl"), x


def test_via_min_says_what_the_kernel_lacks(opbench):
    """--via min (the handle ABI, PR_RSEQ_OPS): a kernel without it (this
    host's) gets an "unsupported" record naming the missing prctl at every
    N, N = 0 included (the thread asks the kernel whether it has the ABI
    before its first cell, as --via bpf opts in), recorded with via "min",
    and no sample."""
    r = run(opbench, "-n", "0,1", "-l", "20", "-s", "1", "-w", "0",
            "--via", "min", "syscall")
    assert r.returncode == 0, r.stderr
    recs = records(r.stdout)
    samples = [x for x in recs if x["kind"] == "sample"]
    unsup = [x for x in recs if x["kind"] == "unsupported"]
    if any(x["nr_ops"] == 1 for x in samples):
        pytest.skip("this host's kernel has PR_RSEQ_OPS")
    assert sorted(x["nr_ops"] for x in unsup) == [0, 1], recs
    for x in unsup:
        assert x["why"] == "kernel without PR_RSEQ_OPS (the handle ABI)"
        assert x["via"] == "min"
    assert samples == []


def test_seed_orders_the_cells(opbench):
    """--seed shuffles N, the same way for the same seed; 0 keeps it."""
    def order(*seed):
        r = run(opbench, "-n", "0,1,2,4,8,16", "-l", "1", "-s", "1", "-w",
                "0", *seed, "-r", "legacy", "syscall")
        return [x["nr_ops"] for x in records(r.stdout)
                if x["kind"] == "order"][0]
    assert order() == order("--seed", "0") == [0, 1, 2, 4, 8, 16]
    assert order("--seed", "7") == order("--seed", "7")
    assert sorted(order("--seed", "7")) == [0, 1, 2, 4, 8, 16]
    assert order("--seed", "7") != order("--seed", "8")


def test_switch_gate_says_which_yield_switched(opbench):
    """The switch gate yields until one switches (at most 20), then sleeps
    until one poll() switches (at most 1000), and says which one did, not
    a fixed sentence."""
    r = run(opbench, "-n", "0", "-l", "50", "-s", "1", "-w", "0", "switch")
    assert r.returncode == 0, r.stderr
    g = [x for x in records(r.stdout) if x["kind"] == "gate"]
    assert len(g) == 1 and g[0]["valid"] is True, g
    assert re.fullmatch(r"a sched_yield\(\) that switched, yield "
                        r"([1-9]|1[0-9]|20) of 20|no sched_yield\(\) of 20 "
                        r"switched; poll\(\) ([1-9][0-9]{0,2}|1000) of 1000 "
                        r"did", g[0]["detail"]), g


def test_preempt_records_its_attempts(opbench):
    """A preempt sample is taken again (three takes in all) when a wake-up
    fell in its closing reads: the record says how many takes it was."""
    r = run(opbench, "-n", "0", "-l", "20", "-s", "2", "-w", "0",
            "preempt")
    recs = records(r.stdout)
    if any(x["kind"] == "unsupported" for x in recs):
        pytest.skip("SCHED_FIFO refused here")
    gaps = [x for x in recs if x["kind"] == "gaps"]
    assert len(gaps) == 2, (r.stderr, recs)
    for x in gaps:
        assert x["attempts"] in (1, 2, 3), x
        # Only the last take is kept: a bracket that failed was the third.
        assert x["bracket_ok"] or x["attempts"] == 3, x
    g = [x for x in recs if x["kind"] == "gate"]
    retaken = sum(x["attempts"] > 1 for x in gaps)
    assert len(g) == 1 and g[0]["detail"].endswith(
        "retaken %d" % retaken), g


# emit_sample() on iterations given on the command line: expect, N, the
# sample's switches, then each iteration's bits (0x80: IT_SWITCHED). A
# switch of this thread while it judges would change the count it was
# given: it judges again (the last record is the one that counts). Its
# records go to a file: a reader waiting on a pipe, woken by each record,
# would preempt it every time.
SAMPLE_DRIVER = r"""
#undef main
#include <stdlib.h>
#include <string.h>
#include "opbench.h"

int main(int argc, char **argv)
{
	static const char *const names[] = { "none", "always", "switch" };
	struct bench_ctx ctx = { .bench = "synthetic", .type = OP_NULL,
				 .faults0 = -1 };
	long sw = atol(argv[3]), s0;
	struct iters it;

	ob_quiet = true;
	for (int e = 0; e < 3; e++)
		if (!strcmp(argv[1], names[e]))
			ctx.expect = e;
	ctx.nr_ops = atoi(argv[2]);
	ctx.loops = argc - 4;
	if (iters_alloc(&it, ctx.loops))
		return 1;
	it.full = 3;
	for (long i = 0; i < ctx.loops; i++) {
		it.dt[i] = 100 + i;
		it.bits[i] = strtol(argv[4 + i], NULL, 0);
	}
	while (nr_switches() < sw)
		sched_out(SCHED_OUT_MAX);
	for (int try = 0; try < 10; try++) {
		s0 = nr_switches();
		ctx.switches0 = s0 - sw;
		emit_sample(&ctx, 0, &it, "synthetic", 0);
		if (nr_switches() == s0)
			return 0;
	}
	return 3;
}
"""


@pytest.fixture(scope="module")
def sample_driver(tmp_path_factory):
    out = tmp_path_factory.mktemp("sampledrv")
    (out / "driver.c").write_text(SAMPLE_DRIVER)
    mb = os.path.join(TOP, "microbench")
    # opbench's own sources, as its Makefile expands them.
    r = subprocess.run(["make", "-s", "-C", mb, "O=%s" % out,
                        "--eval=print-srcs: ; @echo $(SRCS)", "print-srcs"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    srcs = [os.path.join(mb, x) for x in r.stdout.split()]
    r = subprocess.run(["gcc", "-O2", "-Wall", "-Wextra", "-Werror",
                        "-std=gnu11", "-Dmain=opbench_main", "-I", mb,
                        "-o", str(out / "driver"), str(out / "driver.c")]
                       + srcs + ["-lpthread"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return str(out / "driver")


@pytest.mark.parametrize("expect,sw,bits,valid,explained", [
    # A switch between the two stores (or loads) of the watched words: one
    # word rewritten, in an iteration that expects no walk, and a switch
    # no iteration showed to explain it: a disturbance, not a violation.
    ("none", 1, [1] + [0] * 9, True, 1),
    # The same partial iteration with no switch to explain it.
    ("none", 0, [1] + [0] * 9, False, 0),
    # One switch explains one iteration: the unexpected whole walk takes it.
    ("none", 1, [3, 2] + [0] * 8, False, 0),
    ("none", 2, [3, 2] + [0] * 8, True, 1),
    # switch: ten yields that switched and walked, then one iteration that
    # did not switch and shows one word; the ten switches are all shown.
    ("switch", 10, [0x83] * 10 + [2], False, 0),
    ("switch", 11, [0x83] * 10 + [2], True, 1),
    # The negative control's signature: every walk rewrites the first word
    # only. Where the iteration saw its switch, or where every iteration
    # walks, no switch explains it, however many there were.
    ("switch", 50, [0x81] * 10 + [0], False, 0),
    ("always", 20, [1] + [3] * 9, False, 0),
])
def test_partial_is_explained_only_by_unshown_switches(
        sample_driver, tmp_path, expect, sw, bits, valid, explained):
    """R11: a partial iteration is a violation unless a switch of the
    thread that no iteration showed accounts for it (rule 8 of
    analysis/preempt_gaps.py, in the guest's own terms)."""
    out = tmp_path / "out.json"
    with open(out, "w") as f:
        r = subprocess.run([sample_driver, expect, "4", str(sw)]
                           + [str(b) for b in bits], stdout=f,
                           stderr=subprocess.PIPE, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    x = [y for y in records(out.read_text()) if y["kind"] == "sample"][-1]
    assert SAMPLE_KEYS <= set(x), SAMPLE_KEYS - set(x)
    assert x["partial"] == sum(b & 3 in (1, 2) for b in bits), x
    assert (x["valid"], x["partial_explained"]) == (valid, explained), x
    assert x["switches_unshown"] == max(0, sw - sum(b >> 7 for b in bits)), x
    if not valid:
        assert "some watched words" in x["why"], x


def test_legacy_area_gets_no_operations(opbench):
    r = run(opbench, "-r", "legacy", "-n", "1", "-l", "10", "-s", "1",
            "syscall")
    assert r.returncode == 0, r.stderr
    recs = [x for x in records(r.stdout) if x["kind"] not in ("clock",
                                                               "pmu",
                                                               "order")]
    assert [x["kind"] for x in recs] == ["unsupported"]
    assert recs[0]["reg"] == "legacy"


def guest(opbench, flavour, image, tmp_path, *args, kconfig="default",
          benches=None, accel="tcg"):
    """opbench ARGS in a guest of FLAVOUR; with benches, one run per
    benchmark named (opbench takes one, or all), the worst status kept."""
    if benches:
        sh = "rc=0; " + "; ".join(
            "./opbench -q %s %s >> out.json || rc=$?" % (" ".join(args), b)
            for b in benches) + "; exit $rc"
    else:
        sh = "./opbench -q %s > out.json" % " ".join(args)
    # A void boot (a kernel problem before the command started) is booted
    # once more by guest-run itself, its files kept in void-1/, and counted
    # in vm.json and in make test's summary.
    r = subprocess.run(
        [RUNNER, "--flavour", flavour, "--kconfig", kconfig, "--out",
         str(tmp_path), "--accel", accel, "--timeout", "600",
         "--copy", opbench, "--", "sh", "-c", sh],
        capture_output=True, text=True, timeout=1400)
    recs = records((tmp_path / "out.json").read_text())
    return r, recs


@pytest.mark.rig
def test_gate_passes_on_ops(guest_opbench, flavours, image, tmp_path):
    # Under icount: the waker's timer runs on the guest's instruction
    # clock, so a host busy with other work cannot make it late (plain TCG
    # on a loaded host disturbs preempt's samples, by design).
    r, recs = guest(guest_opbench, "ops", image, tmp_path, "-n", "0,1",
                    "-l", "200", "-s", "2", "-w", "1", "all", accel="icount")
    assert r.returncode == 0, r.stderr + r.stdout
    gates = [x for x in recs if x["kind"] == "gate"]
    # syscall has two checks and register four: 2 x (4 + 2 + 4)
    assert len(gates) == 20
    bad = [g for g in gates if not g["valid"]]
    assert not bad, bad
    assert {s["bench"] for s in recs if s["kind"] == "sample"} == {
        "syscall", "switch", "signal", "migrate", "register"}
    assert {s["bench"] for s in recs if s["kind"] == "gaps"} == {"preempt"}
    assert all(s["valid"] for s in recs if s["kind"] == "sample")
    assert all(s["flavour"] == "ops" for s in recs)


@pytest.mark.rig
def test_gate_fails_without_registration(guest_opbench, flavours, image,
                                         tmp_path):
    r, recs = guest(guest_opbench, "ops", image, tmp_path, "--no-ops",
                    "-n", "1", "-l", "100", "-s", "1", "-w", "0", "all")
    assert r.returncode == 1, r.stderr + r.stdout
    recs_gates = [g for g in recs if g["kind"] == "gate"]
    # Ten checks at one N (as test_gate_passes_on_ops counts them), none
    # missing: a benchmark that dropped its gate fails here.
    assert len(recs_gates) == 10, recs_gates
    gates = {(g["bench"], g["check"]): g for g in recs_gates}
    assert len(gates) == 10 and all(g["no_ops"] for g in recs_gates), gates
    # Nothing registered: every check that expects a reset fails, having
    # seen none of the one it expected; the ones that expect none hold.
    for key in (("syscall", "no-walk-without-schedule"),
                ("register", "timed-node-pristine"),
                ("register", "unregistered-node-not-applied")):
        assert gates.pop(key)["valid"] is True, key
    assert not any(g["valid"] for g in gates.values()), gates
    walks = [g for g in gates.values() if g["check"].startswith("walk")]
    assert {g["bench"] for g in walks} >= {"syscall", "switch", "signal",
                                           "migrate", "preempt"}, walks
    for g in walks:
        # One operation per walk; preempt expects one walk per preemption
        # gap it saw.
        assert g["resets_seen"] == 0 and g["resets_expected"] >= 1, g
        if g["bench"] != "preempt":
            assert g["resets_expected"] == 1, g
    # The per-iteration gate says why, in every sample that expects walks.
    samples = [x for x in recs if x["kind"] == "sample"
               and x["bench"] in ("switch", "signal")]
    assert {x["bench"] for x in samples} == {"switch", "signal"}, samples
    for x in samples:
        assert x["valid"] is False, x
        assert x["why"] == "an expected walk did not happen", x


@pytest.mark.rig
def test_gate_fails_on_the_control(guest_opbench, image, tmp_path):
    """The negative control (our series plus a planted bug: only the first
    operation of a list is applied) must fail every gate that expects more
    than one reset, on the debug kernel it is built for."""
    r, recs = guest(guest_opbench, "control", image, tmp_path, "-n", "1,4",
                    "-l", "50", "-s", "1", "-w", "0", kconfig="debug",
                    benches=("switch", "signal"))
    assert r.returncode == 1, r.stderr + r.stdout
    gates = {(g["bench"], g["nr_ops"]): g for g in recs
             if g["kind"] == "gate"}
    assert set(gates) == {("switch", 1), ("switch", 4), ("signal", 1),
                          ("signal", 4)}, gates
    # One operation is still applied; four are not.
    assert gates[("switch", 1)]["valid"] and gates[("signal", 1)]["valid"]
    for b in ("switch", "signal"):
        g = gates[(b, 4)]
        assert g["valid"] is False, g
        assert (g["resets_expected"], g["resets_seen"]) == (4, 1), g
    # The per-iteration gate sees it in every sample: the first watched
    # word rewritten, the last not.
    samples = {(x["bench"], x["nr_ops"]): x for x in recs
               if x["kind"] == "sample"}
    # Whole, in a failure's captured output (an assertion's repr of a
    # record is cut short): what a rare failure needs to be read.
    for x in sorted(samples):
        print(json.dumps(samples[x], sort_keys=True))
    # None of those partial iterations is put down to a switch between
    # the two stores: signal walks in every iteration, and switch's
    # iterations saw the switch they walked after (R11).
    # A sample of switch whose yields did not switch (EEVDF keeps picking
    # the yielding thread while its partner is not eligible; with the
    # host's load, for a whole sample) showed no walk to judge: it is
    # reported, and the gate above still failed on what it saw.
    for b in ("switch", "signal"):
        assert samples[(b, 1)]["valid"] is True, samples[(b, 1)]
        bad = samples[(b, 4)]
        assert bad["valid"] is False, bad
        seen = round(bad["switches_per_loop"] * bad["loops"]) - \
            bad["switches_unshown"]
        if b == "switch" and seen <= 0:
            rigreport.event("no switch shown in a sample",
                            "gate on the control, switch N=4",
                            "%s of %d loops switched, none shown: %s" % (
                                round(bad["switches_per_loop"] *
                                      bad["loops"]), bad["loops"],
                                bad["why"]))
            continue
        assert bad["partial"] > 0, bad
        assert bad["partial"] > bad["partial_explained"], bad
        assert "some watched words" in bad["why"], bad
    assert samples[("signal", 4)]["partial_explained"] == 0
    with open(tmp_path / "kernel-provenance") as f:
        assert "flavour=control\n" in f.read()
    # And the analysis lists the cells as invalid, dropped.
    rdir = tmp_path / "results"
    boot = rdir / "boot-1-control"
    boot.mkdir(parents=True)
    shutil.copy(tmp_path / "out.json", boot / "opbench.json")
    for f in ("vm.json", "kernel-provenance"):
        shutil.copy(tmp_path / f, boot / f)
    a = subprocess.run(["/usr/bin/python3", os.path.join(
        TOP, "analysis", "analyze.py"), str(rdir), "-q"],
        capture_output=True, text=True)
    assert a.returncode == 0, a.stderr
    report = (rdir / "analysis" / "report.txt").read_text()
    assert "Invalid cells: a gate failed" in report
    for b in ("switch", "signal"):
        # opbench names the flavour from uname -r: 7.2.13-control-debug
        assert re.search(r"%s control\S* N=4 boot 1 \(1 samples\): .*some"
                         % b, report.replace("\n    ", " ")), report


@pytest.mark.rig
def test_syscall_resolves_one_instruction(guest_opbench, image, tmp_path):
    """The known answer: --pad 1 adds exactly one instruction per getppid
    round trip, and under icount every sample's median shows exactly that,
    whatever ticks fell into the loop."""
    r, recs = guest(guest_opbench, "baseline", image, tmp_path, "-n", "0",
                    "-l", "300", "-s", "4", "-w", "1", accel="icount",
                    benches=("syscall", "--pad 1 syscall"))
    assert r.returncode == 0, r.stderr + r.stdout
    med = {}
    for x in recs:
        if x["kind"] == "sample":
            med.setdefault(x["loop"], []).append(x["tsc_median"])
    assert len(med["getppid"]) == len(med["getppid+pad"]) == 4, med
    assert len(set(med["getppid"])) == 1, med
    assert [b - a for a, b in zip(med["getppid"], med["getppid+pad"])] == \
        [1] * 4, med
    clock = [x for x in recs if x["kind"] == "clock"]
    assert clock and all(abs(c["ticks_per_insn"] - 1) < 1e-6 for c in clock)


@pytest.mark.rig
def test_baseline_unsupported_not_crash(guest_opbench, image, tmp_path):
    r, recs = guest(guest_opbench, "baseline", image, tmp_path, "-n", "0,1",
                    "-l", "100", "-s", "1", "-w", "0", "syscall")
    assert r.returncode == 0, r.stderr + r.stdout
    kinds = [(x["kind"], x.get("nr_ops")) for x in recs]
    assert ("unsupported", 1) in kinds and ("sample", 0) in kinds
