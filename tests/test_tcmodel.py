# SPDX-License-Identifier: GPL-2.0
"""tcmodel, the TCMalloc model: its options and its gate on this host
(legacy mode: any kernel with rseq), its analysis on synthetic records with
known answers, and in the guest (rig) the gate in both modes on ops, with
operations deliberately not registered (the gate must see stale uses), and
the ops mode refused on baseline."""
import json
import os
import subprocess
import sys

import pytest

from conftest import TOP
from test_analysis import synthetic
from test_microbench import HEAD_KEYS, RUNNER

sys.path.insert(0, os.path.join(TOP, "analysis"))
import opbench_data  # noqa: E402
import opbench_plots  # noqa: E402
import opbench_report  # noqa: E402


@pytest.fixture(scope="module")
def tcmodel(tmp_path_factory):
    out = tmp_path_factory.mktemp("tcm")
    r = subprocess.run(["make", "-s", "-C", os.path.join(TOP, "microbench"),
                        "O=%s" % out, "USERCFLAGS=-Werror",
                        "%s/tcmodel" % out], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "warning" not in r.stderr, r.stderr
    return str(out / "tcmodel")


def records(stdout):
    return [json.loads(x) for x in stdout.splitlines() if x.strip()]


@pytest.mark.parametrize("args,msg", [
    (["pair"], "--mode legacy or --mode ops is required"),
    (["--mode", "v3", "pair"], "want legacy or ops"),
    (["--mode", "legacy", "nosuch"], "no cell 'nosuch'"),
    (["--mode", "legacy", "--no-ops", "pair"], "--no-ops is for --mode ops"),
    (["--mode", "legacy", "-l", "0", "pair"], "'0' is not a number >= 1"),
    (["--mode", "legacy"], "name the cells"),
    (["--mode", "ops", "--via", "bpf", "pair"], "--via 'bpf': want prctl or min"),
])
def test_bad_arguments_are_named(tcmodel, args, msg):
    r = subprocess.run([tcmodel] + args, capture_output=True, text=True)
    assert r.returncode == 2
    assert msg in r.stderr


def test_list(tcmodel):
    r = subprocess.run([tcmodel, "--list"], capture_output=True, text=True)
    names = [x.split()[0] for x in r.stdout.splitlines()]
    assert names == ["pair", "recovery", "syscall", "signal", "fence",
                     "migrate", "preempt", "getcpu", "remote"]


def host_has_rseq():
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    # rseq(NULL, 0, 0, 0): EINVAL when the syscall exists, ENOSYS otherwise
    libc.syscall(334, None, 0, 0, 0)
    return ctypes.get_errno() != 38


def test_legacy_gate_on_this_host(tcmodel):
    """The critical sections run on whatever kernel this is: every event
    that must invalidate the word makes exactly one recovery per
    iteration, and no cell sees a stale use."""
    if not host_has_rseq():
        pytest.skip("this host's kernel has no rseq")
    r = subprocess.run([tcmodel, "-q", "--mode", "legacy", "-l", "200",
                        "-s", "2", "-w", "0", "-c", "0", "-C", "0",
                        "pair,recovery,syscall,signal,fence"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    recs = [x for x in records(r.stdout) if x["kind"] == "tcm"]
    got = {(x["what"], x["sample"]): x for x in recs}
    assert len(got) == 10, got.keys()
    for (what, _), x in got.items():
        assert x["valid"] and x["stale"] == 0, x
        # opbench's head: a legacy area, no operation, its own variants
        assert HEAD_KEYS <= set(x), HEAD_KEYS - set(x)
        assert (x["bench"], x["reg"], x["nr_ops"], x["warmup"],
                x["period_us"], x["mode"]) == ("tcmodel", "legacy", 0, 0,
                                               331, "legacy"), x
        want = 0 if what in ("pair", "syscall") else 200
        assert x["events"] == want, x
        if what in ("recovery", "signal", "fence"):
            assert x["recoveries"] == 200, x
    # The same code in every cell: an event costs more than a pair.
    pair = got[("pair", 0)]["tsc_median"]
    assert got[("signal", 0)]["tsc_median"] > pair > 0


# The synthetic model: instructions per iteration, every boot alike.
TRUTH = {
    ("pair", "legacy"): 71, ("pair", "ops"): 71,
    ("recovery", "legacy"): 121, ("recovery", "ops"): 121,
    ("syscall", "legacy"): 309, ("syscall", "ops"): 309,
    ("signal", "legacy"): 3828, ("signal", "ops"): 3791,
    ("fence", "legacy"): 583, ("fence", "ops"): 602,
    ("preempt", "legacy"): 5650, ("preempt", "ops"): 5580,
    ("getcpu", "legacy"): 51, ("getcpu", "ops"): 25,
}


def write_tcmodel(d, bad=None):
    """tcmodel.json in every boot of a synthetic run: ops has both modes,
    baseline refuses ops. bad: (what, mode, flavour) whose sample 1 fails
    in the flavour's first boot; returns that boot."""
    bad_boot = None
    for b in sorted(os.listdir(d), key=lambda x: (len(x), x)):
        if not b.startswith("boot-"):
            continue
        boot, fl = int(b.split("-")[1]), b.split("-", 2)[2]
        if bad and bad_boot is None and fl == bad[2]:
            bad_boot = boot
        recs = [{"kind": "clock", "flavour": fl, "ticks_per_insn": 1.0,
                 "ns_per_tick": 1.0}]
        for (what, mode), v in sorted(TRUTH.items()):
            head = {"what": what, "mode": mode, "flavour": fl,
                    "kernel": "7.2.13-" + fl, "no_ops": False, "cpu": 1}
            if fl == "baseline" and mode == "ops" and what != "getcpu":
                recs.append(dict(head, kind="tcm-unsupported", errno=22,
                                 why="kernel without RSEQ operations"))
                continue
            ev = 1000 if what in ("recovery", "signal", "fence",
                                  "preempt") else 0
            for s in range(3):
                fail = (bad == (what, mode, fl) and boot == bad_boot
                        and s == 1)
                recs.append(dict(head, kind="tcm", sample=s, iterations=1000,
                                 timed=1000, clock="tsc",
                                 tsc_median=v + (boot % 2), tsc_p10=v,
                                 tsc_p90=v + 2, events=ev,
                                 recoveries=0 if fail else ev,
                                 stale=5 if fail else 0, slow=0, aborts=0,
                                 valid=not fail,
                                 why="stale use" if fail else ""))
        with open(os.path.join(d, b, "tcmodel.json"), "w") as f:
            for r in recs:
                f.write(json.dumps(r) + "\n")
    return bad_boot


def test_analysis_known_answers(tmp_path):
    d = synthetic(tmp_path)
    bad = write_tcmodel(d, bad=("fence", "legacy", "ops"))
    run = opbench_data.load(d)
    a = opbench_data.analyse(run)
    t = a["tcmalloc"]
    ev = {(e["what"], e["mode"], e["flavour"]): e for e in t["events"]}
    # Per event beyond the pair: exact, every boot's offset cancels.
    assert ev[("signal", "ops", "ops")]["cost"] == pytest.approx(3791 - 71)
    assert ev[("signal", "legacy", "ops")]["cost"] == pytest.approx(3828 - 71)
    assert ev[("preempt", "legacy", "baseline")]["cost"] == \
        pytest.approx(5650 - 71)
    assert ("signal", "ops", "baseline") not in ev
    modes = {(x["what"], x["flavour"]): x for x in t["modes"]}
    assert modes[("signal", "ops")]["diff"] == pytest.approx(-37)
    assert modes[("pair", "ops")]["diff"] == pytest.approx(0)
    g = {x["flavour"]: x for x in t["getcpu"]}
    assert g["ops"]["diff"] == pytest.approx(-26)
    # The failed gate drops the cell in every boot, and says so.
    assert ("fence", "legacy", "ops") not in ev
    assert [(x["what"], x["mode"], x["boot"]) for x in t["invalid"]] == \
        [("fence", "legacy", bad)]
    gates = {(x["what"], x["mode"], x["flavour"]): x for x in t["gates"]}
    assert gates[("fence", "legacy", "ops")]["valid"] is False
    assert gates[("signal", "ops", "ops")]["stale"] == 0
    text = opbench_report.render(a)
    assert "Legacy against operations: a TCMalloc model" in text
    assert "tcmodel fence legacy ops boot %d sample 1: stale use" % bad \
        in text
    assert "ops mode n/a here: kernel without RSEQ operations" in text
    assert max(len(x) for x in text.splitlines()) <= 72
    paths = opbench_plots.plot_all(a, str(tmp_path / "plots"))
    png = [p for p in paths if p.endswith("tcmalloc-events.png")]
    assert png and os.path.getsize(png[0]) > 1000


def test_analysis_without_model_records(tmp_path):
    a = opbench_data.analyse(opbench_data.load(synthetic(tmp_path)))
    assert a["tcmalloc"] is None


def guest(tcmodel_bin, flavour, image, out, script):
    """SCRIPT in a guest of FLAVOUR: its commands append their records to
    out.json and "name:status" lines to rc.txt."""
    os.makedirs(out, exist_ok=True)
    sh = "%s-run.sh" % out		# beside the boot directory, copied in
    with open(sh, "w") as f:
        f.write(script)
    r = subprocess.run([RUNNER, "--flavour", flavour, "--out", str(out),
                        "--accel", "icount", "--timeout", "900",
                        "--copy", tcmodel_bin, "--copy", sh, "--", "sh",
                        "./" + os.path.basename(sh)],
                       capture_output=True, text=True, timeout=1900)
    with open(os.path.join(out, "out.json")) as f:
        recs = records(f.read())
    with open(os.path.join(out, "rc.txt")) as f:
        rcs = f.read().split()
    return r, recs, rcs


@pytest.fixture(scope="module")
def guest_tcmodel(tmp_path_factory):
    """tcmodel as the guest gets it: built in the trixie build root."""
    out = str(tmp_path_factory.mktemp("tcmguest"))
    r = subprocess.run([os.path.join(TOP, "kernel-patch", "scripts",
                                     "buildroot.sh"), "run", "--bind", out,
                        "make", "-s", "-C", os.path.join(TOP, "microbench"),
                        "O=%s" % out, "USERCFLAGS=-Werror",
                        "%s/tcmodel" % out], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return os.path.join(out, "tcmodel")


CELLS = "pair,recovery,signal,fence,migrate,remote"
OPTS = "-q -l 100 -s 1 -w 0"


@pytest.mark.rig
def test_gate_in_the_guest(guest_tcmodel, flavours, image, tmp_path):
    """On ops both modes pass every gate; with the operation deliberately
    not registered every event is a stale use, and the gate fails. On
    baseline the legacy mode runs and the ops mode is refused by name."""
    def cmd(name, args):
        return ("./tcmodel %s %s >> out.json; echo %s:$? >> rc.txt"
                % (OPTS, args, name))
    script = "\n".join([
        cmd("legacy", "--mode legacy " + CELLS),
        cmd("ops", "--mode ops " + CELLS),
        cmd("noops", "--mode ops --no-ops " + CELLS),
        "echo 0 > /sys/devices/system/cpu/cpu1/online",
        cmd("preempt", "--mode ops -c 0 -p 20 preempt"),
        cmd("nopreempt", "--mode ops --no-ops -c 0 -p 20 preempt"),
        "echo 1 > /sys/devices/system/cpu/cpu1/online", "exit 0", ""])
    r, recs, rcs = guest(guest_tcmodel, "ops", image, tmp_path / "ops",
                         script)
    assert r.returncode == 0, r.stderr[-3000:]
    assert sorted(rcs) == ["legacy:0", "noops:1", "nopreempt:1", "ops:0",
                           "preempt:0"], rcs
    cells = [x for x in recs if x["kind"] == "tcm"]
    pos = [x for x in cells if not x["no_ops"]]
    neg = {x["what"]: x for x in cells if x["no_ops"]}
    assert {(x["what"], x["mode"]) for x in pos} == {
        (w, m) for w in CELLS.split(",") for m in ("legacy", "ops")} | {
        ("preempt", "ops")}
    for x in pos:
        assert x["valid"] and x["stale"] == 0, x
        assert x["recoveries"] >= x["events"], x
    # Not registered: the kernel never clears the word, and the events
    # that must invalidate it are caught as stale uses.
    for w in ("signal", "fence", "migrate", "remote", "preempt"):
        assert not neg[w]["valid"] and neg[w]["stale"] > 0, neg[w]
    assert neg["signal"]["stale"] == neg["signal"]["events"] == 100
    assert neg["pair"]["valid"] and neg["recovery"]["valid"]

    script = "\n".join([cmd("legacy", "--mode legacy pair,signal"),
                        cmd("ops", "--mode ops pair,signal"), "exit 0", ""])
    r, recs, rcs = guest(guest_tcmodel, "baseline", image,
                         tmp_path / "baseline", script)
    assert sorted(rcs) == ["legacy:0", "ops:0"], (rcs, r.stderr[-3000:])
    legacy = [x for x in recs if x["kind"] == "tcm"]
    assert {x["what"] for x in legacy} == {"pair", "signal"}
    assert all(x["valid"] and x["mode"] == "legacy" for x in legacy)
    un = [x for x in recs if x["kind"] == "tcm-unsupported"]
    assert {x["what"] for x in un} == {"pair", "signal"}
    assert all(x["why"] == "kernel without RSEQ operations" for x in un), un
