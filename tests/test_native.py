# SPDX-License-Identifier: GPL-2.0
"""The native runner: the plan on this machine's own running kernel.

microbench/native-run.sh runs the guest's payload (guest-bench.sh, opbench,
tcmodel) here, one repetition in place of a boot; analysis/analyze.py reads
its run as it reads a guest run, in nanoseconds. scripts/host-state.sh
records what of the machine moves time, and says what to change. Nothing
here loads anything into this machine's kernel or takes a CPU offline.

The host tests build the programs with this machine's gcc; the rig test
runs `make bench RUNNER=native`'s stages (bench-run.sh), with the static
programs the build root makes.
"""
import glob
import json
import os
import platform
import re
import shutil
import subprocess
import sys

import pytest

import rigreport
from conftest import TOP, bench_env

sys.path.insert(0, os.path.join(TOP, "analysis"))
import opbench_data  # noqa: E402

RUNNER = os.path.join(TOP, "microbench", "native-run.sh")
PLAN = os.path.join(TOP, "microbench", "plan.py")
HOST_STATE = os.path.join(TOP, "scripts", "host-state.sh")
ANALYZE = os.path.join(TOP, "analysis", "analyze.py")
PY = "/usr/bin/python3"
DATA = os.path.join(TOP, "tests", "data")
# A plan small enough for a host test: N = 0 and one operation (which an
# unpatched kernel cannot run), three benchmarks, two repetitions a label.
TINY = {"SWEEP": "0,1", "LOOPS": "200", "SAMPLES": "3", "WARMUP": "1",
        "BENCHES": "syscall switch signal", "TYPES": "", "PERF_BENCH": "0",
        "REPS": "2", "SEED": "11"}


@pytest.fixture(scope="module")
def kit(tmp_path_factory):
    """A bin/ as native-run.sh wants it: the programs, built on this host
    warning-free, beside the runner's scripts."""
    out = tmp_path_factory.mktemp("bin")
    r = subprocess.run(["make", "-s", "-C", os.path.join(TOP, "microbench"),
                        "O=%s" % out, "USERCFLAGS=-Werror",
                        "%s/opbench" % out, "%s/tcmodel" % out],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    for f in (RUNNER, HOST_STATE,
              os.path.join(TOP, "microbench", "guest-bench.sh")):
        shutil.copy(f, out)
    with open(out / "benches.json", "w") as f:
        subprocess.run([str(out / "opbench"), "--list", "--json"], stdout=f,
                       check=True)
    return str(out)


def native(kit, out, **env):
    # bench_env() clears the plan's variables: the tiny plan goes on top,
    # its cells planned by microbench/plan.py as make bench and make kit
    # plan them.
    e = dict(bench_env(), BIN=kit, **dict(TINY, **env))
    # A plan it refuses leaves no cells: native-run.sh's own refusals are
    # what these tests check.
    cells = str(out).rstrip("/") + ".cells"
    rj = str(out).rstrip("/") + ".run.json"
    if os.path.exists(rj):
        os.unlink(rj)
    with open(cells, "w") as f:
        subprocess.run([PY, PLAN, "cells", "quick", "--benches",
                        os.path.join(kit, "benches.json"), "--run-json", rj],
                       env=e, stdout=f, stderr=subprocess.DEVNULL, text=True)
    e["PLAN_CELLS"] = cells
    e["PLAN_RUN_JSON"] = rj
    return subprocess.run(["sh", RUNNER, str(out)], env=e,
                          capture_output=True, text=True, timeout=600)


# Why a cell of a native run may be invalid on a correct kernel: the host's
# load (CI's, or a build beside it) kept the switch partner from running or
# disturbed preempt's samples. Timing on a shared host, not kernel behaviour.
DISTURBED = re.compile(r"fewer than half the iterations showed the expected "
                       r"event|only \d+ of \d+ samples undisturbed")


def disturbed_only(r, a, where):
    """analyze --strict's status on a native run: 0, or 3 when every
    invalid cell was invalid for the host's load only; those are counted
    in make test's summary and returned as (bench, flavour, N). Any other
    invalid cell (a gate that concluded: the kernel's behaviour) fails the
    test; a gate the host kept from concluding (PREEMPTED) is load."""
    if r.returncode == 0:
        return set()
    assert r.returncode == 3, r.stderr
    bad = [x for x in a["invalid"] if not all(
        DISTURBED.search(w) or PREEMPTED.search(w)
        for w in x["why"].split("; "))]
    assert not bad, bad
    for x in a["invalid"]:
        rigreport.event("native cell disturbed by the host's load", where,
                        "%s %s N=%s boot %s: %s" % (
                            x["bench"], x["flavour"], x["nr_ops"],
                            x["boot"], x["why"]))
    return {(x["bench"], x["flavour"], x["nr_ops"]) for x in a["invalid"]}


# A gate with no conclusion because the host kept preempting the thread
# (bench-syscall.c): the host's load, not the kernel's behaviour.
PREEMPTED = re.compile(r"preempted in all \d+ attempts")


def load_only(r, run):
    """native-run.sh's status 0, or 3 where every invalid record of the
    run is invalid for the host's load alone (DISTURBED samples,
    PREEMPTED gates); anything else fails the test."""
    if r.returncode == 0:
        return
    assert r.returncode == 3, r.stderr[-3000:]
    bad = []
    for path in glob.glob(os.path.join(str(run), "rep-*", "opbench.json")):
        with open(path) as f:
            for x in (json.loads(ln) for ln in f if ln.strip()):
                if x.get("valid") is not False:
                    continue
                why = x.get("detail") if x["kind"] == "gate" else x.get("why")
                if not (PREEMPTED.fullmatch(why or "") or
                        DISTURBED.search(why or "")):
                    bad.append(x)
    assert not bad, bad


def analyse(run):
    r = subprocess.run([PY, ANALYZE, str(run), "-q", "--strict"],
                       capture_output=True, text=True, timeout=600)
    with open(os.path.join(run, "analysis", "analysis.json")) as f:
        a = json.load(f)
    with open(os.path.join(run, "analysis", "report.txt")) as f:
        return r, a, f.read()


@pytest.fixture(scope="module")
def aa_run(kit, tmp_path_factory):
    """One A/A run of the running kernel, analysed."""
    run = tmp_path_factory.mktemp("runs") / "aa"
    r = native(kit, run, AA="1")
    assert r.returncode == 0, r.stderr[-3000:]
    return (run,) + analyse(str(run))


def test_repetitions_in_rounds(aa_run):
    """AA=1: each round holds both labels once, in an order drawn from the
    seed; each repetition has its records, its kernel and the host's
    state."""
    run = aa_run[0]
    reps = sorted(os.listdir(run))
    reps = [d for d in reps if d.startswith("rep-")]
    order = [d.split("-", 2)[2] for d in
             sorted(reps, key=lambda d: int(d.split("-")[1]))]
    assert len(order) == 4
    for i in (0, 2):
        assert sorted(order[i:i + 2]) == ["native", "native2"]
    for d in reps:
        p = os.path.join(run, d)
        for f in ("opbench.json", "native.json", "kernel-provenance",
                  "host-state", "guest-info.txt"):
            assert os.path.getsize(os.path.join(p, f)) > 0, (d, f)
        kp = dict(ln.split("=", 1) for ln in open(
            os.path.join(p, "kernel-provenance")).read().splitlines())
        assert kp["kernel_release"] == platform.release()
        assert kp["series_hash"] == "none"
    prov = open(os.path.join(run, "provenance")).read()
    assert "runner=native\n" in prov and "reference=native\n" in prov
    assert "host_governor=" in prov and "host_pmu=" in prov


def test_report_in_ns_with_the_host_state(aa_run):
    """The unit comes from the run's records (native: ns), the header
    gives the host's state and the PMU's, and nothing says QEMU."""
    _, r, a, text = aa_run
    disturbed_only(r, a, "native A/A run")
    assert a["accel"] == "native" and a["unit"] == "ns"
    assert a["reference"] == "native"
    assert a["flavours"] == ["native", "native2"]
    head = text.split("-" * 72)[0]
    assert "Units       ns: time on this machine's own CPU" in head
    assert "Host state" in head and "Runner      native" in head
    fields = [ln.split()[0] for ln in head.splitlines() if ln[:1].isalpha()]
    assert "QEMU" not in fields and "Image" not in fields
    assert "rep-*/opbench.json" in text
    pmu = os.path.isdir("/sys/bus/event_source/devices/cpu")
    assert ("PMU         none: perf_event_open(cycles)" in head) != pmu
    # A native run on a virtual machine says so (this project's own
    # machines are Firecracker guests).
    with open("/proc/cpuinfo") as f:
        vm = any(ln.startswith("flags") and "hypervisor" in ln.split()
                 for ln in f)
    assert ("Hypervisor  the CPU flags say hypervisor" in head) == vm, head
    # In time: the trimmed mean of a sample's iterations, and the ticks
    # converted by one rate for the whole run.
    assert a["metric"] == "tsc_trim" and a["tsc_step"], a["tsc_step"]
    assert len(a["clock_values"]["rate_source"]) == 1


def test_ops_cells_unsupported_not_failed(aa_run):
    """N = 1 on a kernel without operations: unsupported by its release,
    never an invalid cell, a failure or a zero."""
    _, _, a, text = aa_run
    assert not [x for x in a["invalid"] if x["nr_ops"] == 1]
    for g in a["groups"]:
        assert sorted(g["unsupported"]) == [["native", 1], ["native2", 1]]
        assert all(c["nr_ops"] == 0 for c in g["cells"])
    assert text.count("unsupported by %s" % platform.release()) == 6


def test_aa_comparison_made(aa_run):
    """The twin label is compared with the reference at N = 0 in every
    benchmark: an A/A comparison in ns."""
    _, _, a, _ = aa_run
    rows = [(m["bench"], m["flavour"], m["nr_ops"]) for m in a["mission"]]
    assert sorted(rows) == [(b, "native2", 0)
                            for b in ("signal", "switch", "syscall")]
    for m in a["mission"]:
        assert m["diff_ci"][0] < m["diff_ci"][1]


def test_no_pmu_columns_without_counters(aa_run):
    """Where there is no PMU the records say why and no counter appears:
    absent, not zero."""
    if os.path.isdir("/sys/bus/event_source/devices/cpu"):
        pytest.skip("this machine has a CPU PMU")
    run, _, a, text = aa_run
    recs = [json.loads(ln) for f in glob.glob(str(run / "rep-*" /
                                                  "opbench.json"))
            for ln in open(f)]
    pmu = [r for r in recs if r["kind"] == "pmu"]
    assert pmu and not any(r["available"] for r in pmu)
    assert not [k for r in recs for k in r if k.startswith("pmu_")]
    assert all(g["pmu"] is None for g in a["groups"])
    assert "PMU counters" not in text


def box_boot(tmp_path, name, series_hash="0123456789abcdef"):
    """A /boot of a test box running a package of make deb (flavour ops):
    the provenance under this machine's release."""
    box = tmp_path / name
    box.mkdir()
    (box / ("opbench-provenance-" + platform.release())).write_text(
        "flavour=ops\nkernel_release=%s\nseries_hash=%s\n"
        "config_hash=fedcba9876543210\n" % (platform.release(), series_hash))
    return str(box)


def merge_runs(out, *runs):
    return subprocess.run([PY, os.path.join(TOP, "analysis", "merge_runs.py"),
                           str(out)] + [str(x) for x in runs],
                          capture_output=True, text=True)


def set_boot(run, boot_id):
    """The repetitions of a run as if it ran in boot BOOT_ID (a test box
    reboots between sessions; this machine cannot)."""
    for nj in glob.glob(os.path.join(str(run), "rep-*", "native.json")):
        with open(nj) as f:
            d = json.load(f)
        d["boot_id"] = boot_id
        with open(nj, "w") as f:
            json.dump(d, f)


def test_box_sessions_merged_into_one_comparison(kit, tmp_path):
    """A test box runs one kernel a boot: twice the unpatched one, then
    twice a package of make deb (a BOOT_DIR stands for its /boot).
    merge_runs makes one run of them, every repetition renumbered in the
    order it ran, the k-th boot of each kernel paired as round k (not the
    rounds of an interleaved run, which this order would give wrongly),
    and the report compares the kernels; the inputs are not changed.
    Each repetition records its boot; here every session ran in this
    machine's one boot, so the sessions are given boots of their own."""
    plan = dict(BENCHES="syscall switch", SWEEP="0", REPS="1")
    box = box_boot(tmp_path, "box-boot")
    runs = []
    with open("/proc/sys/kernel/random/boot_id") as f:
        here = f.read().strip()
    for k, env in enumerate(({}, {}, {"BOOT_DIR": box}, {"BOOT_DIR": box})):
        runs.append(tmp_path / ("session-%d" % k))
        r = native(kit, runs[-1], SEED=str(20 + k), **dict(plan, **env))
        load_only(r, runs[-1])
        nj = glob.glob(os.path.join(str(runs[-1]), "rep-*", "native.json"))
        assert json.load(open(nj[0]))["boot_id"] == here
        set_boot(runs[-1], "boot-%d" % k)
    before = {str(p): sorted(os.listdir(p)) for p in runs}
    merged = tmp_path / "merged"
    r = merge_runs(merged, *runs)
    assert r.returncode == 0, r.stderr
    assert "4 repetitions of native (2), ops (2)" in r.stderr
    assert "the unit compared is the boot: native 2, ops 2" in r.stderr
    assert "fewer than 5 boots of native, ops" in r.stderr
    assert sorted(os.listdir(merged)) == [
        "boots.jsonl", "provenance", "rep-1-native", "rep-2-native",
        "rep-3-ops", "rep-4-ops", "run.json"]
    # Each session's index (native-run.sh writes one), and their union.
    for k, run in enumerate(runs):
        (e,) = [json.loads(l) for l in open(run / "boots.jsonl")]
        assert (e["boot"], e["round"], e["target"], e["seed"]) == \
            (1, 0, "native", 21 + k), e
        assert e["dir"] == os.path.basename(glob.glob(str(run / "rep-1-*"))[0])
        assert json.load(open(run / "run.json"))["runner"] == "native"
    idx = [json.loads(l) for l in open(merged / "boots.jsonl")]
    assert [(e["boot"], e["round"], e["flavour"], e["dir"], e["seed"])
            for e in idx] == [(1, 0, "native", "rep-1-native", 21),
                              (2, 1, "native", "rep-2-native", 22),
                              (3, 0, "ops", "rep-3-ops", 23),
                              (4, 1, "ops", "rep-4-ops", 24)]
    loaded = opbench_data.load(str(merged))
    assert loaded["index"]["flavour_decls"]["ops"]["fit_from"] == 2
    assert [b["target"] for b in loaded["boots"]] == ["native"] * 4
    prov = (merged / "provenance").read_text()
    assert "boot_order=native native ops ops\n" in prov
    assert "boot_rounds=0 1 0 1\n" in prov
    assert "boot_units=1 2 3 4\n" in prov
    assert "few_boots=native:2 ops:2\n" in prov
    assert "reference=native\n" in prov and "seed=20 21 22 23\n" in prov
    assert {str(p): sorted(os.listdir(p)) for p in runs} == before
    assert opbench_data.rounds_of(opbench_data.load(str(merged))) == \
        {1: 0, 2: 1, 3: 0, 4: 1}
    # Two sessions of a kernel in one boot are one value.
    set_boot(runs[1], "boot-0")
    one = tmp_path / "merged-one-boot"
    r = merge_runs(one, *runs)
    assert r.returncode == 0, r.stderr
    prov = (one / "provenance").read_text()
    assert "boot_rounds=0 0 0 1\n" in prov and "boot_units=1 1 3 4\n" in prov
    run = opbench_data.load(str(one))
    assert [(b["index"], b.get("reps")) for b in run["boots"]] == \
        [(1, [1, 2]), (3, [3]), (4, [4])]
    assert len(run["boots"][0]["records"]) == sum(
        len(opbench_data.load(str(x))["boots"][0]["records"])
        for x in runs[:2])
    set_boot(runs[1], "boot-1")
    r, a, text = analyse(str(merged))
    gone = disturbed_only(r, a, "native merge")
    assert a["unit"] == "ns" and a["reference"] == "native"
    rows = sorted((m["bench"], m["flavour"], m["nr_ops"])
                  for m in a["mission"])
    # A cell the host's load invalidated has no row to compare.
    want = [("switch", "ops", 0), ("syscall", "ops", 0)]
    for b in ("switch", "syscall"):
        if any(x == b for x, _, _ in gone):
            want.remove((b, "ops", 0))
    assert rows == want, (rows, gone)
    assert "merged from 4 runs" in " ".join(text.split())
    joined = " ".join(text.split())
    assert "4 repetitions in 4 boots" in joined
    assert "WARNING fewer than 5 boots of native (2), ops (2)" in joined


def test_merge_refusals(kit, tmp_path):
    """Runs of one kernel only, of different plans, a guest run, a run
    named twice, one label that is two kernels, an unfinished repetition
    or an existing OUT: refused, naming why, and nothing written."""
    a, b = tmp_path / "a", tmp_path / "b"
    # The runs are only material for the refusals: one whose cells this
    # host's load alone made invalid (status 3) is material too.
    for d, samples in ((a, "3"), (b, "2")):
        r = native(kit, d, BENCHES="syscall", SWEEP="0", REPS="1",
                   SAMPLES=samples)
        load_only(r, d)
    ops = []
    for k, h in enumerate(("0123456789abcdef", "1123456789abcdef")):
        ops.append(tmp_path / ("ops%d" % k))
        r = native(kit, ops[-1], BENCHES="syscall", SWEEP="0", REPS="1",
                   BOOT_DIR=box_boot(tmp_path, "boot%d" % k, h))
        load_only(r, ops[-1])
    r = merge_runs(tmp_path / "m1", a, a)
    assert r.returncode == 2 and "named twice" in r.stderr
    r = merge_runs(tmp_path / "m2", a, b)
    assert r.returncode == 2 and "differ in ops" in r.stderr
    r = merge_runs(tmp_path / "m3", a, os.path.join(DATA, "quick-run"))
    assert r.returncode == 2 and "not a native run" in r.stderr
    r = merge_runs(tmp_path / "m5", a, ops[0], ops[1])
    assert r.returncode == 2 and "label ops is two kernels" in r.stderr
    assert "differ in series_hash" in r.stderr
    r = merge_runs(tmp_path / "m6", ops[0], tmp_path / "a" / ".." / "a")
    assert r.returncode == 0, r.stderr
    rep, = glob.glob(str(a / "rep-1-*"))
    os.rename(os.path.join(rep, "opbench.json"),
              os.path.join(rep, "opbench.json.x"))
    r = merge_runs(tmp_path / "m7", a, ops[0])
    assert r.returncode == 2 and "has no opbench.json" in r.stderr
    (tmp_path / "m4").mkdir()
    (tmp_path / "m4" / "x").write_text("")
    r = merge_runs(tmp_path / "m4", a, ops[0])
    assert r.returncode == 2 and "not an empty directory" in r.stderr
    left = sorted(p for p in os.listdir(tmp_path) if p.startswith("m"))
    assert left == ["m4", "m6"], left


def test_counting_path_with_software_events(kit, tmp_path):
    """The timed pass runs without counters (opbench's default); the
    counting pass after it (PMU_PASS=software: software events in the
    group's places) exercises the reading, scaling, records and report,
    labelled as stand-ins. task_clock per loop is the loop's time; the
    switch benchmark switches out once per loop."""
    run = tmp_path / "sw"
    r = native(kit, run, PMU_PASS="software", REPS="1",
               BENCHES="syscall switch")
    assert r.returncode == 0, r.stderr[-3000:]
    assert "a counting pass (software, 2 sample(s) a cell)" in r.stderr
    rep, = glob.glob(str(run / "rep-1-*"))
    timed = [json.loads(l) for l in open(os.path.join(rep, "opbench.json"))]
    ps = [x for x in timed if x["kind"] == "pmu"]    # one a cell
    assert ps and all((p["pass"], p["available"]) == ("timed", False)
                      for p in ps), ps
    assert not any(k.startswith("pmu_") for x in timed for k in x)
    counted = [json.loads(l) for l in open(os.path.join(rep, "pmu",
                                                        "opbench.json"))]
    ps = [x for x in counted if x["kind"] == "pmu"]
    assert ps and all((p["pass"], p["available"], p["source"]) ==
                      ("count", True, "software") for p in ps), ps
    # The same cells, PMU_SAMPLES (2) samples each where the plan has 3.
    n_timed = len([x for x in timed if x["kind"] == "sample"])
    n_counted = len([x for x in counted if x["kind"] == "sample"])
    assert n_timed and 3 * n_counted == 2 * n_timed, (n_timed, n_counted)
    r, a, text = analyse(str(run))
    assert a["pmu"]["available"] and a["pmu"]["source"] == ["software"]
    assert a["pmu"]["pass"] == "count"
    assert "software stand-ins" in text
    assert "counted in a pass of their own" in " ".join(text.split())
    by = {g["bench"]: g for g in a["groups"]}
    sw = by["switch"]["pmu"]["cells"][0]
    assert sw["context_switches"] == pytest.approx(1.0, abs=0.05)
    sc = by["syscall"]["pmu"]["cells"][0]
    assert sc["context_switches"] < 0.05
    # The task clock counts the whole loop, the TSC only the round trip:
    # the same order of magnitude, the clock not below the trip.
    trip = next(c["value"] for c in by["syscall"]["cells"])
    assert trip * 0.8 < sc["task_clock"] < trip * 5


@pytest.mark.parametrize("env, msg", [
    ({"REPS": "0"}, "REPS=0: want at least 1"),
    ({"REPS": "x"}, "REPS='x'"),
    ({"AA": "2"}, "AA='2'"),
    ({"SEED": "0"}, "SEED='0'"),
    ({"CPU": "a"}, "CPU='a'"),
    ({"SWEEP": ""}, "SWEEP is unset"),
])
def test_bad_input_refused(kit, tmp_path, env, msg):
    r = native(kit, tmp_path / "r", **env)
    assert r.returncode == 2 and msg in r.stderr, r.stderr
    assert not glob.glob(str(tmp_path / "r" / "rep-*"))


def test_earlier_run_never_overwritten(kit, tmp_path):
    run = tmp_path / "r"
    (run / "rep-1-native").mkdir(parents=True)
    (run / "rep-1-native" / "opbench.json").write_text("keep\n")
    r = native(kit, run)
    assert r.returncode == 2 and "already holds a run" in r.stderr
    assert (run / "rep-1-native" / "opbench.json").read_text() == "keep\n"


def test_missing_programs_named(tmp_path):
    e = dict(bench_env(), BIN=str(tmp_path), **TINY)
    r = subprocess.run(["sh", RUNNER, str(tmp_path / "r")], env=e,
                       capture_output=True, text=True)
    assert r.returncode == 2 and "opbench is missing" in r.stderr


# host-state.sh on a fake sysfs and procfs -----------------------------------

def fake_root(tmp_path, governors, no_turbo="0", smt="1", isolated="",
              nohz="(null)", thp="[always] madvise never", pmu=True,
              clocksource="tsc", paranoid="2", hypervisor=False):
    files = {
        "proc/cpuinfo": "model name\t: Test Xeon\nflags\t\t: fpu tsc%s\n"
        % (" hypervisor" if hypervisor else ""),
        "proc/cmdline": "quiet\n",
        "proc/sys/kernel/perf_event_paranoid": paranoid + "\n",
        "proc/sys/kernel/randomize_va_space": "2\n",
        "sys/devices/system/cpu/online": "0-%d\n" % (len(governors) - 1),
        "sys/devices/system/cpu/smt/active": smt + "\n",
        "sys/devices/system/cpu/intel_pstate/no_turbo": no_turbo + "\n",
        "sys/devices/system/cpu/isolated": isolated + "\n",
        "sys/devices/system/cpu/nohz_full": nohz + "\n",
        "sys/kernel/mm/transparent_hugepage/enabled": thp + "\n",
        "sys/devices/system/clocksource/clocksource0/current_clocksource":
            clocksource + "\n",
        "sys/module/kvm/parameters/halt_poll_ns": "200000\n",
    }
    for i, g in enumerate(governors):
        files["sys/devices/system/cpu/cpu%d/cpufreq/scaling_governor" % i] = \
            g + "\n"
        files["sys/devices/system/cpu/cpu%d/cpufreq/scaling_driver" % i] = \
            "intel_pstate\n"
    for path, text in files.items():
        p = tmp_path / path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    if pmu:
        (tmp_path / "sys/bus/event_source/devices/cpu").mkdir(parents=True)
    return tmp_path


def host_state(root, *args):
    r = subprocess.run(["sh", HOST_STATE] + list(args),
                       env=dict(os.environ, SYSROOT=str(root)),
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_host_state_read_from_sysfs(tmp_path):
    root = fake_root(tmp_path, ["powersave", "powersave", "performance"],
                     isolated="2", nohz="2")
    kv = dict(ln.split("=", 1) for ln in host_state(root).splitlines())
    assert kv["host_cpu_model"] == "Test Xeon"
    assert kv["host_cpus_online"] == "0-2"
    assert kv["host_governor"] == "powersave,performance"
    assert kv["host_cpufreq_driver"] == "intel_pstate"
    assert kv["host_turbo"] == "on" and kv["host_smt"] == "on"
    assert kv["host_isolated"] == "2" and kv["host_nohz_full"] == "2"
    assert kv["host_thp"] == "always" and kv["host_pmu"] == "cpu"
    assert kv["host_kvm_halt_poll_ns"] == "200000"
    assert kv["host_perf_event_paranoid"] == "2"
    assert kv["host_hypervisor"] == "no"
    vm = fake_root(tmp_path / "vm", ["performance"], hypervisor=True)
    kv = dict(ln.split("=", 1) for ln in host_state(vm).splitlines())
    assert kv["host_hypervisor"] == "yes"
    assert "hypervisor: yes: this machine is a virtual machine" in \
        host_state(vm, "--advice")


def test_host_check_says_what_to_change(tmp_path):
    """A noisy machine: every setting that moves time gets its fix."""
    root = fake_root(tmp_path, ["powersave"] * 2, no_turbo="0", smt="1",
                     thp="[always] madvise never", pmu=False,
                     clocksource="hpet")
    adv = host_state(root, "--advice")
    assert "governor: powersave: set performance" in adv
    assert "turbo: on:" in adv and "no_turbo" in adv
    assert "smt: on:" in adv
    assert "isolated: none: " in adv and "isolcpus=" in adv
    assert "thp: always:" in adv
    assert "pmu: none:" in adv
    assert "clocksource: hpet:" in adv
    # A PMU with perf_event_paranoid 2: kernel counting needs 1 or root.
    root2 = fake_root(tmp_path / "p", ["performance"])
    assert "perf_event_paranoid 2: opbench counts kernel code too" in \
        host_state(root2, "--advice")


def test_host_check_quiet_machine_ok(tmp_path):
    """A machine set up for timing: every line says ok."""
    root = fake_root(tmp_path, ["performance"] * 4, no_turbo="1", smt="0",
                     isolated="2-3", nohz="2-3",
                     thp="always [madvise] never", paranoid="1")
    adv = host_state(root, "--advice").splitlines()
    bad = [ln for ln in adv if not (ln.endswith("ok") or ": ok " in ln
                                   or "ok (" in ln or "kvm" in ln)]
    assert not bad, bad


def test_host_state_without_files(tmp_path):
    """An empty root (a container without sysfs): every fact reads none,
    nothing fails."""
    kv = dict(ln.split("=", 1) for ln in host_state(tmp_path).splitlines())
    assert kv["host_governor"] == "none" and kv["host_pmu"] == "none"
    assert kv["host_turbo"] == "none" and kv["host_isolated"] == "none"


# make bench RUNNER=native's stages --------------------------------------------

@pytest.mark.rig
def test_bench_native_stage(tmp_path):
    """bench-run.sh RUNNER=native: the build root's static programs in the
    run's bin/ (a kit), repetitions of the running kernel, the analysis in
    ns; no kernel, image or tracing is needed or made."""
    env = dict(bench_env(), RUNNER="native", PLAN="quick",
               RESULTS_ROOT=str(tmp_path), BOOTS="2", SWEEP="0,1",
               LOOPS="200", SAMPLES="3", PERF_BENCH="0",
               BENCHES="syscall switch signal tcmalloc")
    r = subprocess.run([os.path.join(TOP, "microbench", "bench-run.sh")],
                       cwd=TOP, env=env, capture_output=True, text=True,
                       timeout=1800)
    assert r.returncode == 0, r.stderr[-4000:]
    run, = glob.glob(str(tmp_path / "*-quick-native"))
    assert not os.path.exists(os.path.join(run, "INCOMPLETE"))
    assert not os.path.exists(os.path.join(run, "tracing"))
    for p in ("opbench", "tcmodel", "native-run.sh", "guest-bench.sh",
              "host-state.sh", "plan.cells"):
        assert os.path.exists(os.path.join(run, "bin", p)), p
    f = subprocess.run(["file", os.path.join(run, "bin", "opbench")],
                       capture_output=True, text=True).stdout
    assert "statically linked" in f, f
    text = open(os.path.join(run, "analysis", "report.txt")).read()
    assert "Units       ns:" in text and "Runner      native" in text
    assert "unsupported by %s" % platform.release() in text
    prov = open(os.path.join(run, "provenance")).read()
    assert "plan=quick" in prov and "project_commit=" in prov


@pytest.mark.rig
def test_kit_runs_alone_and_reports(tmp_path):
    """make kit's tarball, unpacked into an empty directory with no project
    beside it and run with an empty environment, writes a results directory
    that make report analyses."""
    kit_tgz = tmp_path / "kit.tar.gz"
    # The cells are planned when the kit is made: two benchmarks that a
    # loaded host cannot disturb, at two N.
    r = subprocess.run(["make", "-s", "kit", "PLAN=quick", "KIT=%s" % kit_tgz,
                        "BENCHES=syscall signal", "SWEEP=0,1"],
                       cwd=TOP, capture_output=True, text=True, timeout=1800)
    assert r.returncode == 0, r.stderr[-3000:]
    box = tmp_path / "box"
    box.mkdir()
    subprocess.run(["tar", "-C", str(box), "-xzf", str(kit_tgz)], check=True)
    assert sorted(os.listdir(box)) == ["rseq-opbench-kit"]
    cells = (box / "rseq-opbench-kit" / "bin" / "plan.cells").read_text()
    assert cells == \
        "syscall syscall 0,1 default any\nsignal signal 0,1 default any\n"
    # One repetition a boot unless told (a boot is the unit compared),
    # and the boots of each kernel make merge wants.
    pe = (box / "rseq-opbench-kit" / "plan.env").read_text()
    assert ': "${REPS=1}"' in pe and "\nKIT_BOOTS=5\n" in pe, pe
    assert "over at least 5 boots" in " ".join(
        (box / "rseq-opbench-kit" / "README").read_text().split())
    env = {"PATH": "/usr/bin:/bin", "LOOPS": "200", "SAMPLES": "3",
           "REPS": "2", "PERF_BENCH": "0"}
    # Other cells at run time are refused, not silently ignored.
    other = box / "other"
    r = subprocess.run(["sh", "rseq-opbench-kit/run.sh", str(other)], cwd=box,
                       env=dict(env, BENCHES="syscall"), capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 2 and "BENCHES is planned into bin/plan.cells" \
        in r.stderr, r.stderr
    assert not other.exists() or not list(other.glob("rep-*"))
    res = box / "results"
    r = subprocess.run(["sh", "rseq-opbench-kit/run.sh", str(res)], cwd=box,
                       env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    prov = (res / "provenance").read_text()
    with open("/proc/sys/kernel/random/boot_id") as f:
        here = f.read().strip()
    for nj in glob.glob(str(res / "rep-*" / "native.json")):
        assert json.load(open(nj))["boot_id"] == here
    assert "plan=quick" in prov and "kit_plan=quick" in prov
    assert "runner=native" in prov
    r = subprocess.run(["make", "-s", "report", "RESULTS=%s" % res], cwd=TOP,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    text = (res / "analysis" / "report.txt").read_text()
    assert "Units       ns:" in text
    assert "unsupported by %s" % platform.release() in text


@pytest.mark.rig
def test_deb_holds_the_flavours_kernel(tmp_path, kit):
    """make deb FLAVOUR=ops: the package holds the very kernel the guests
    boot and its provenance (series hash) as /boot/opbench-provenance-*;
    the native runner, on a machine running it, labels its repetitions
    with the flavour and records the series hash (here a BOOT_DIR stands
    for the test box's /boot: nothing is installed)."""
    from conftest import kernel_dir
    debs = tmp_path / "debs"
    r = subprocess.run(["make", "-s", "deb", "FLAVOUR=ops",
                        "DEB_DIR=%s" % debs], cwd=TOP, capture_output=True,
                       text=True, timeout=3600)
    assert r.returncode == 0, r.stderr[-3000:]
    deb, = glob.glob(str(debs / "*.deb"))
    k = kernel_dir("ops")
    prov = dict(ln.split("=", 1) for ln in
                open(os.path.join(k, "provenance")).read().splitlines())
    rel = prov["kernel_release"]
    assert os.path.basename(deb).startswith("linux-image-%s_" % rel)
    assert prov["series_hash"][:12] in os.path.basename(deb)
    root = tmp_path / "root"
    subprocess.run(["dpkg-deb", "-x", deb, str(root)], check=True)
    boot = root / "boot"
    assert (boot / ("vmlinuz-" + rel)).read_bytes() == \
        open(os.path.join(k, "bzImage"), "rb").read()
    assert (boot / ("opbench-provenance-" + rel)).read_text() == \
        open(os.path.join(k, "provenance")).read()
    info = subprocess.run(["dpkg-deb", "-f", deb, "Package", "Version"],
                          capture_output=True, text=True).stdout
    assert "linux-image-%s" % rel in info
    # The test box runs that kernel: its /boot holds the provenance under
    # the running release.
    box = tmp_path / "box-boot"
    box.mkdir()
    shutil.copy(boot / ("opbench-provenance-" + rel),
                box / ("opbench-provenance-" + platform.release()))
    run = tmp_path / "run"
    r = native(kit, run, BOOT_DIR=str(box), REPS="1", BENCHES="syscall",
               SWEEP="0")
    assert r.returncode == 0, r.stderr[-3000:]
    assert "flavour ops built by rseq-opbench" in r.stderr
    rep, = glob.glob(str(run / "rep-1-ops"))
    kp = open(os.path.join(rep, "kernel-provenance")).read()
    assert "series_hash=%s\n" % prov["series_hash"] in kp
    assert "reference=ops\n" in (run / "provenance").read_text()


def _aa_verdicts(pool_boots, trials=400, seed=5):
    """How often a merged A/A (two labels of one kernel) is called
    different: sessions A B B A A B B A A B, each one boot of the box with
    three repetitions; a boot moves all its figures by a factor drawn
    with sd 4 %, the box drifts 1 % a session, a repetition's median
    0.3 %. Through the production path: merge_runs.boot_rounds gives each
    repetition its unit and round, opbench_io._pool_units pools a boot's
    repetitions (pool_boots) or not (the old pairing: the k-th repetition
    of each label as round k), opbench_data.compare_kernels compares."""
    import numpy as np
    import merge_runs
    import opbench_io
    rng = np.random.default_rng(seed)
    order = "ABBAABBAAB"
    calls = 0
    for _ in range(trials):
        reps, boots = [], []
        for s, label in enumerate(order):
            level = 1000.0 * (1 + rng.normal(0, 0.04)) * (1 + 0.01 * s)
            for _ in range(3):
                i = len(reps) + 1
                reps.append(("t%03d" % i, 0, i, label, "", "boot-%d" % s))
                boots.append({"index": i, "flavour": label, "tcmodel": None,
                              "tsc_lines": [], "records": list(
                                  level * (1 + rng.normal(0, 0.003))
                                  + rng.normal(0, 0.5, 5))})
        units, rounds, _ = merge_runs.boot_rounds(reps)
        if pool_boots:
            run = {"boots": opbench_io._pool_units(
                boots, " ".join(map(str, units))),
                "provenance": {"boot_order": " ".join(order[(i - 1) // 3]
                                                      for i in units),
                               "boot_rounds": " ".join(map(str, rounds))}}
        else:
            seen, old = {}, []
            for r in reps:
                old.append(seen.get(r[3], 0))
                seen[r[3]] = old[-1] + 1
            run = {"boots": boots, "provenance": {
                "boot_order": " ".join(r[3] for r in reps),
                "boot_rounds": " ".join(map(str, old))}}
        rnd = opbench_data.rounds_of(run)
        cell = {lab: {b["index"]: b["records"] for b in run["boots"]
                      if b["flavour"] == lab} for lab in "AB"}
        c = opbench_data.compare_kernels(False, rnd, cell["A"], cell["B"],
                                         ("aa",))
        calls += c["verdict"] == "difference"
    return calls / trials


def test_merged_aa_called_different_at_the_level():
    """A merged A/A of simulated test-box sessions, with a boot effect and
    a drift between sessions, is called different at most at the
    comparison's level (5 %; the bound below is 3 binomial sd above it for
    400 trials); pairing repetitions, as the merge did before it knew
    boots, calls the same A/A different far more often."""
    new = _aa_verdicts(True)
    old = _aa_verdicts(False)
    assert new <= 0.05 + 3 * (0.05 * 0.95 / 400) ** 0.5, new
    assert old > 0.2, old


def test_plasmode_rates_on_known_noise():
    """analysis/plasmode.rates on rounds of one kernel with a level of
    their own (each repetition's median moves by 2 %): the production
    comparison, paired by round, is called different at about its level;
    every sample pooled (the known-wrong rule) far more often; the
    smallest difference found is reported against the N = 0 figure."""
    import numpy as np
    import plasmode
    rng = np.random.default_rng(3)
    pairs = []
    for _ in range(40):
        level = 100.0 * (1 + rng.normal(0, 0.02))
        pairs.append(tuple(list(level * (1 + rng.normal(0, 0.02))
                                + rng.normal(0, 0.2, 6)) for _ in range(2)))
    r = plasmode.rates(pairs, 5, 1000, np.random.default_rng(4))
    assert r["rate"] <= 0.05 + 3 * (0.05 * 0.95 / 1000) ** 0.5, r
    assert r["welch_rate"] > 0.3, r
    assert 0 < r["detectable_pct"] < 20 and r["level"] == \
        pytest.approx(100, rel=0.05), r


def test_plasmode_of_a_native_aa_run(kit, tmp_path):
    """make aa's second step on a native A/A run (four rounds here, drawn
    two at a time): a table per benchmark at N = 0, written beside the
    run and never over an earlier one; a run that is not an A/A is
    refused by name."""
    import plasmode
    run = tmp_path / "aa"
    r = native(kit, run, AA="1", REPS="4", BENCHES="syscall signal")
    load_only(r, run)
    p = subprocess.run([PY, os.path.join(TOP, "analysis", "plasmode.py"),
                        str(run), "--k", "2", "--subsets", "50"],
                       capture_output=True, text=True, timeout=300)
    res = plasmode.pairs_of(opbench_data.load(str(run)))[0]
    if not res:
        # Both cells dropped for the host's load (load_only allowed it):
        # the refusal names it.
        assert p.returncode == 2 and "no benchmark at N = 0" in p.stderr
        rigreport.event("plasmode run without a valid cell", "native",
                        "every cell disturbed by the host's load")
        return
    assert p.returncode == 0, p.stderr
    for bench, pairs in res.items():
        # A round the host's load dropped a cell of leaves fewer pairs.
        want = (r"^%s +2 +%d +[0-9.]+  \[" if len(pairs) >= 3 else
                r"^%s +2 +%d  fewer than k \+ 1 rounds") % (bench, len(pairs))
        assert re.search(want, p.stdout, re.M), p.stdout
    assert (run / "aa" / "plasmode.txt").read_text() == p.stdout
    js = json.loads((run / "aa" / "plasmode.json").read_text())
    assert js["labels"] == ["native", "native2"] and js["unit"] == "ns"
    again = subprocess.run([PY, os.path.join(TOP, "analysis", "plasmode.py"),
                            str(run)], capture_output=True, text=True)
    assert again.returncode == 2 and "nothing is overwritten" in again.stderr
    # The same run, as if made without AA=1.
    one = tmp_path / "one"
    shutil.copytree(run, one, ignore=shutil.ignore_patterns("aa"))
    prov = (one / "provenance").read_text().replace("\naa=1\n", "\naa=0\n")
    (one / "provenance").write_text(prov)
    p = subprocess.run([PY, os.path.join(TOP, "analysis", "plasmode.py"),
                        str(one)], capture_output=True, text=True)
    assert p.returncode == 2 and "not an A/A run" in p.stderr, p.stderr
