# SPDX-License-Identifier: GPL-2.0
"""The BPF design of RSEQ operations (flavour bpf, microbench/bpf/): its
registration in opbench (--via bpf), its loader, and in the guest its
resets and the loader's refusal of a kernel without the hook (rig)."""
import json
import os
import subprocess

import pytest

from conftest import TOP
from test_microbench import HEAD_KEYS, records, run

BPF_RUN = os.path.join(TOP, "microbench", "bpf", "bpf-run.sh")


def test_via_bpf_on_a_kernel_without_the_hook(opbench):
    """--via bpf on this machine's kernel (no rseq_exit_bpf_hook): every
    cell, N = 0 too (the thread opts in there), is an "unsupported" record
    naming the missing hook, with status 0 and no sample."""
    r = run(opbench, "--via", "bpf", "-n", "0,1", "-l", "10", "-s", "1",
            "-w", "0", "switch")
    assert r.returncode == 0, r.stderr
    recs = records(r.stdout)
    uns = [x for x in recs if x["kind"] == "unsupported"]
    assert [x["nr_ops"] for x in uns] == [0, 1], recs
    for x in uns:
        assert HEAD_KEYS <= set(x) and x["via"] == "bpf"
        assert x["why"] == "kernel without rseq_exit_bpf_hook (not the bpf flavour)"
    assert not [x for x in recs if x["kind"] == "sample"]


@pytest.fixture(scope="module")
def loader(tmp_path_factory):
    """rseq-bpf-ops as the guest gets it: built in the cross build root."""
    out = str(tmp_path_factory.mktemp("bpfbin"))
    r = subprocess.run(["bash", "-c", '. scripts/common.sh && bpf_programs "$1"',
                        "bpf", out], cwd=TOP, capture_output=True, text=True,
                       timeout=900)
    assert r.returncode == 0, r.stderr
    return os.path.join(out, "rseq-bpf-ops")


def run_loader(loader, *args):
    """The loader in the cross build root, where trixie's libbpf is (the
    guest's; this host's may be older). It never loads anything here: each
    case stops before."""
    return subprocess.run(
        [os.path.join(TOP, "kernel-patch", "scripts", "buildroot.sh"), "run",
         "--bind", os.path.dirname(loader), "--", loader] + list(args),
        capture_output=True, text=True, timeout=120,
        env=dict(os.environ, BUILDROOT="cross"))


@pytest.mark.parametrize("args,msg", [
    ([], "no command; usage: rseq-bpf-ops load|unload|status [DIR] | probe"),
    (["attach"], "unknown command attach; usage:"),
    (["probe", "/x"], "too many arguments"),
    (["load", "/x", "/y"], "too many arguments"),
])
def test_loader_usage_is_named(loader, args, msg):
    """Bad usage stops before anything is read or loaded."""
    r = run_loader(loader, *args)
    assert r.returncode == 2 and msg in r.stderr, r.stderr


def test_loader_status_without_a_load(loader, tmp_path):
    """status of a directory with no pins says what to run."""
    r = run_loader(loader, "status", str(tmp_path / "none"))
    assert r.returncode == 2
    assert "nothing loaded" in r.stderr and "rseq-bpf-ops load first" in r.stderr


def guest_step(tmp_path, what, flavour):
    r = subprocess.run([BPF_RUN, what, flavour], capture_output=True,
                       text=True, timeout=1800,
                       env=dict(os.environ, RESULTS_ROOT=str(tmp_path)))
    out = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ""
    return r, out


@pytest.mark.rig
@pytest.mark.extra
def test_bpf_design_resets_after_a_switch_not_after_a_syscall(tmp_path):
    """On the bpf flavour the program loads and attaches; with --via bpf a
    switch resets every watched word and a system call that does not
    sleep resets none, at N = 1 and 64 (opbench's gates); the program's
    counters saw walks and stores, and no fault."""
    r, out = guest_step(tmp_path, "smoke", "bpf")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    txt = open(os.path.join(out, "smoke.txt")).read()
    assert "attached to rseq_exit_bpf_hook() of kernel 7." in txt, txt
    assert "rseq_exit_thread to sched_process_exit" in txt, txt
    recs = [json.loads(l) for l in open(os.path.join(out, "smoke.json"))
            if l.strip()]
    gates = {(g["bench"], g["nr_ops"], g["check"]): g
             for g in recs if g["kind"] == "gate"}
    for n in (1, 64):
        assert gates[("switch", n, "walk-after-switch")]["valid"], gates
        assert gates[("syscall", n, "no-walk-without-schedule")]["valid"], gates
        assert gates[("syscall", n, "walk-after-schedule")]["valid"], gates
    assert all(g["valid"] for g in gates.values()), gates
    samples = [x for x in recs if x["kind"] == "sample"]
    assert {(x["bench"], x["nr_ops"]) for x in samples} == {
        (b, n) for b in ("switch", "syscall", "signal") for n in (1, 64)}
    assert all(x["valid"] and x["via"] == "bpf" for x in samples)
    # the program skipped no store in any sample (a sample that it did
    # fails its gate)
    assert all(x["skipped_stores"] == 0 for x in samples), samples
    status = [l for l in txt.splitlines() if l.startswith("hooks ")]
    assert status, txt
    f = status[-1].split()
    counters = dict(zip(f[0::2], map(int, f[1::2])))
    assert counters["walks"] > 0 and counters["stores"] >= counters["walks"]
    assert counters["faults"] == 0, counters


@pytest.mark.rig
def test_loader_refuses_a_kernel_without_the_hook(tmp_path):
    """On the baseline kernel the loader refuses before loading anything,
    naming the missing function and the flavour to boot."""
    r, out = guest_step(tmp_path, "smoke", "baseline")
    assert r.returncode == 2, r.stdout[-3000:] + r.stderr[-3000:]
    txt = open(os.path.join(out, "smoke.txt")).read()
    assert "has no rseq_exit_bpf_hook() (not in its BTF): it is not the bpf flavour" in txt, txt
    assert "make kernel FLAVOUR=bpf" in txt and "status=2" in txt, txt
    assert not os.path.exists(os.path.join(out, "smoke.json"))


# The analysis of the bpf design (host).
import sys  # noqa: E402

sys.path.insert(0, os.path.join(TOP, "analysis"))
import bpf_design  # noqa: E402
import opbench_data  # noqa: E402
import opbench_io  # noqa: E402
import report_core  # noqa: E402


def test_facts_are_read_by_section(tmp_path):
    """bpf_design reads the newest facts.txt of a run, section by section,
    each with its result line; a run without one has none."""
    assert bpf_design.read_facts(str(tmp_path)) is None
    for stamp, text in (("20260101T000000Z", "== fault\nold\nresult: old\n"),
                        ("20260102T000000Z",
                         "== capabilities\nroot: exit 0: ok\nresult: 1 of 1\n"
                         "== fault\nalive\n\nresult: exit 0\n")):
        d = tmp_path / "bpf" / ("%s-bpf-facts-bpf" % stamp)
        d.mkdir(parents=True)
        (d / "facts.txt").write_text(text)
    f = bpf_design.read_facts(str(tmp_path))
    assert f["path"] == "bpf/20260102T000000Z-bpf-facts-bpf/facts.txt"
    assert f["sections"] == {
        "capabilities": {"lines": ["root: exit 0: ok"], "result": "1 of 1"},
        "fault": {"lines": ["alive"], "result": "exit 0"}}


def test_variant_boots_are_their_labels_in_the_same_round(tmp_path):
    """A bpf boot's bpf-zero.json becomes one boot per label, with the
    boot's index and variant_of; rounds_of puts them in its round."""
    d = tmp_path / "boot-3-bpf"
    d.mkdir()
    recs = [{"kind": "sample", "flavour": fl, "bench": "switch", "nr_ops": 0}
            for fl in ("bpf-unused", "bpf-noprog", "bpf-unused")]
    (d / "bpf-zero.json").write_text(
        "".join(json.dumps(r) + "\n" for r in recs))
    boot = {"index": 3, "flavour": "bpf", "records": [], "dir": d.name}
    vs = opbench_io._variant_boots(boot, str(d))
    assert [(v["flavour"], v["index"], v["variant_of"], len(v["records"]))
            for v in vs] == [("bpf-noprog", 3, "bpf", 1),
                             ("bpf-unused", 3, "bpf", 2)]
    run = {"provenance": {"boot_order": "ops baseline bpf bpf ops baseline"},
           "boots": [{"index": i, "flavour": f} for i, f in
                     enumerate("ops baseline bpf bpf ops baseline".split(),
                               1)] + vs}
    rounds = opbench_data.rounds_of(run)
    assert rounds == {1: 0, 2: 0, 3: 0, 4: 1, 5: 1, 6: 1}


@pytest.mark.parametrize("x,text", [(1.5, "1.50"), (35.93, "35.93"),
                                    (5.4e140, "5.4e+140")])
def test_ratios_stay_within_a_line(x, text):
    """An interval from too few boots can be astronomical: exponent form."""
    assert report_core.ratio(x) == text
    assert len(report_core.pct(x)) < 12


SYNTH = os.path.join(TOP, "tests", "data", "make-synthetic-run.py")


@pytest.fixture(scope="module")
def bpf_walker(tmp_path_factory):
    """A synthetic walker run with the bpf flavour and its bpf-zero.json
    (make-synthetic-run.py --with-bpf), analysed."""
    d = tmp_path_factory.mktemp("bpfwalker") / "20261205T000000Z-walker"
    subprocess.run([sys.executable, SYNTH, str(d), "--plan", "walker",
                    "--with-bpf"], check=True)
    return str(d), opbench_data.analyse(opbench_data.load(str(d)))


def test_bpf_design_known_answers(bpf_walker):
    """The bpf slope, its ratio to ops's, the 2048 walk and N = 0 of each
    variant come back as the generator wrote them."""
    _, a = bpf_walker
    b = a["bpf"]
    sl = {(s["bench"], s["flavour"]): s for s in b["slopes"]}
    for bench in ("switch", "preempt"):
        assert sl[(bench, "bpf")]["value"] == pytest.approx(107.0, abs=0.05)
        lo, hi = sl[(bench, "bpf")]["ci"]
        assert lo <= 107.0 <= hi
        r = [x for x in b["ratios"] if x["bench"] == bench][0]
        assert r["ratio"] == pytest.approx(107.0 / 45.2, rel=1e-3)
        assert sl[(bench, "bpf")]["walk_max"] == pytest.approx(
            107.0 * 2048, rel=1e-4)
    zero = {(z["bench"], z["flavour"]): z["diff"] for z in b["zero"]}
    # against baseline's 4456 (switch) and 3000 (preempt)
    for (bench, fl), want in {("switch", "bpf-unused"): 7.0,
                              ("switch", "bpf-noprog"): 93.0,
                              ("switch", "bpf"): 688.0,
                              ("preempt", "bpf-unused"): 6.0,
                              ("preempt", "bpf-noprog"): 12.0,
                              ("preempt", "bpf"): 276.0}.items():
        assert zero[(bench, fl)] == pytest.approx(want, abs=2.5), (bench, fl)
    assert b["facts"] is None


def test_bpf_design_in_the_report_and_the_letter(bpf_walker):
    """The report's "Why not BPF?" section and the cover letter's
    paragraph, with the run's figures; without facts, the report says the
    requirements were not measured."""
    d, a = bpf_walker
    import cover_perf
    import opbench_report
    text = opbench_report.render(a)
    sec = text.split("Why not BPF?", 1)[1].split("-" * 72, 1)[0]
    assert "bpf / ops 2.37" in sec
    assert "bpf-unused" in sec and "bpf-noprog" in sec
    assert "Requirements: not measured in this run" in sec
    letter = cover_perf.section(a)
    assert "Why not BPF?" in letter and "2.37" in letter
    assert "Measured on it" not in letter


def test_bpf_profile_read_from_the_run(tmp_path):
    """The instruction profile bench-run.sh takes (tracing/*-trace-insn-
    bpf-switch-64/): the hook's and the walker's rows per walk, and per
    operation; a run without it says how to take it."""
    assert "not taken in this run" in "\n".join(
        bpf_design._profile_lines(bpf_design.read_profile(str(tmp_path))))
    d = tmp_path / "tracing" / "20261205T000000Z-trace-insn-bpf-switch-64"
    for fl, rows in (("bpf", "         2.0       6400.0  rseq_exit_bpf_hook_[k]\n"
                      "      3200.0       6398.0  [jit or module text]_[k]\n"),
                     ("ops", "       320.0        320.0  rseq_ops_apply_[k]\n")):
        (d / ("%s-64" % fl)).mkdir(parents=True)
        (d / ("%s-64" % fl) / "table.txt").write_text(
            "instructions in the windows: 900 (3 window(s)); per walk: 9000.0\n"
            "   self/walk    incl/walk  function\n" + rows)
    p = bpf_design.read_profile(str(tmp_path))
    assert p["bpf"]["rows"]["rseq_exit_bpf_hook_[k]"] == (2.0, 6400.0)
    assert p["ops"]["per_walk"] == 9000.0
    text = "\n".join(bpf_design._profile_lines(p))
    assert "Below the hook: 100.0 per operation on bpf, 5.0 in ops' walker" in text
