# SPDX-License-Identifier: GPL-2.0
"""Interruption loses nothing: a run killed half-way is marked incomplete,
never taken unnamed, and never touches earlier runs; an analysis killed
half-way leaves no output and keeps the earlier one.

The host tests use the synthetic run (tests/data/make-synthetic-run.py);
the rig test interrupts a real quick run in its first boot.
"""
import glob
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from conftest import TOP, bench_env, default_signals
from test_analysis import ANALYZE, analyze, synthetic

sys.path.insert(0, os.path.join(TOP, "analysis"))
import opbench_data  # noqa: E402


def tree_hash(d):
    """Every file under d, names and contents."""
    h = hashlib.sha256()
    for root, dirs, files in sorted(os.walk(d)):
        dirs.sort()
        for f in sorted(files):
            p = os.path.join(root, f)
            h.update(os.path.relpath(p, d).encode() + b"\0")
            with open(p, "rb") as fh:
                h.update(fh.read())
    return h.hexdigest()


def test_newest_run_skips_incomplete(tmp_path):
    root = tmp_path / "results"
    root.mkdir()
    src = synthetic(tmp_path)
    old = root / "20261201T000000Z-quick"
    new = root / "20261202T000000Z-quick"
    shutil.copytree(src, old)
    shutil.copytree(src, new)
    (new / opbench_data.INCOMPLETE).write_text(
        "started=x\ninterrupted=SIGINT during the benchmarks, y\n")
    assert opbench_data.newest_run(str(root)) == str(old)
    (old / opbench_data.INCOMPLETE).write_text("started=x\n")
    with pytest.raises(opbench_data.ResultsError) as e:
        opbench_data.newest_run(str(root))
    assert "no complete benchmark run" in str(e.value)
    assert "20261201T000000Z-quick" in str(e.value)
    assert "20261202T000000Z-quick" in str(e.value)


def test_incomplete_run_named_is_reported_as_such(tmp_path):
    d = synthetic(tmp_path)
    with open(os.path.join(d, opbench_data.INCOMPLETE), "w") as f:
        f.write("started=x\ninterrupted=SIGTERM during the tracing, y\n")
    r = analyze(d, "-q")
    assert r.returncode == 0, r.stderr
    assert "is incomplete" in r.stderr
    with open(os.path.join(d, "analysis", "report.txt")) as f:
        text = f.read()
    assert "this run is INCOMPLETE (SIGTERM during the tracing, y)" in \
        " ".join(text.split())


SLOW_PLOTS = """
import os, runpy, sys, time
sys.path.insert(0, %(analysis)r)
import opbench_plots
def slow(*a, **k):
    open(%(ready)r, "w").close()
    time.sleep(120)
opbench_plots.plot_all = slow
sys.argv = [%(analyze)r] + sys.argv[1:]
runpy.run_path(%(analyze)r, run_name="__main__")
"""


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_killed_analysis_leaves_nothing(tmp_path, sig):
    """analyze.py --force killed while it writes: the earlier analysis is
    still in place, no half-written one and no temporary directory."""
    d = synthetic(tmp_path)
    r = analyze(d, "-q")
    assert r.returncode == 0, r.stderr
    before = tree_hash(d)
    ready = str(tmp_path / "ready")
    prog = SLOW_PLOTS % {"analysis": os.path.join(TOP, "analysis"),
                         "ready": ready, "analyze": ANALYZE}
    p = subprocess.Popen(["/usr/bin/python3", "-c", prog, d, "-q",
                          "--force"], stderr=subprocess.PIPE, text=True,
                         preexec_fn=default_signals)
    t = time.time()
    while not os.path.exists(ready):
        assert p.poll() is None, p.stderr.read()
        assert time.time() - t < 120, "the analysis never reached its plots"
        time.sleep(0.05)
    p.send_signal(sig)
    p.wait(timeout=60)
    assert p.returncode != 0
    assert tree_hash(d) == before
    assert not glob.glob(os.path.join(d, ".analysis-*"))
    assert not glob.glob(os.path.join(d, "analysis.old-*"))


@pytest.mark.rig
@pytest.mark.parametrize("group", [True, False], ids=[
    "SIGINT to the group", "SIGTERM to the script"])
def test_interrupted_bench_is_marked_and_harmless(tmp_path, flavours,
                                                 image, group):
    """make bench's stages (bench-run.sh, PLAN=quick) interrupted during
    the first boot, with SIGINT to the process group (what ^C does) or
    with SIGTERM to the script alone (what make passes on when it is
    killed): the run is marked incomplete with the signal and the stage
    at once, no guest is left running, an earlier complete run is
    untouched and stays the one newest_run takes."""
    root = tmp_path / "results"
    root.mkdir()
    earlier = root / "20000101T000000Z-quick"
    shutil.copytree(synthetic(tmp_path), earlier)
    before = tree_hash(earlier)
    env = bench_env(PLAN="quick", RESULTS_ROOT=str(root))
    log = open(tmp_path / "stderr.txt", "w+")
    p = subprocess.Popen([os.path.join(TOP, "microbench", "bench-run.sh")],
                         cwd=TOP, env=env, stdout=subprocess.DEVNULL,
                         stderr=log, start_new_session=True,
                         preexec_fn=default_signals)
    t = time.time()
    consoles = []
    while not consoles:
        assert p.poll() is None, open(tmp_path / "stderr.txt").read()[-3000:]
        assert time.time() - t < 600, "no boot started within 600 s"
        time.sleep(0.5)
        consoles = [c for c in glob.glob(str(root / "*" / "boot-1-*" /
                                              "console.log"))
                    if os.path.getsize(c) > 0]
    run = os.path.dirname(os.path.dirname(consoles[0]))
    sig = signal.SIGINT if group else signal.SIGTERM
    if group:
        os.killpg(p.pid, sig)
    else:
        p.send_signal(sig)
    p.wait(timeout=60)
    log.seek(0)
    err = log.read()
    assert p.returncode != 0, err[-3000:]
    with open(os.path.join(run, opbench_data.INCOMPLETE)) as f:
        marker = f.read()
    assert "started=" in marker
    assert "interrupted=%s during the benchmarks" % sig.name in marker, \
        marker
    assert "marked incomplete" in err, err[-3000:]
    left = subprocess.run(["pgrep", "-f", run], capture_output=True,
                          text=True).stdout.split()
    assert not left, "processes of the killed run still alive: %s" % left
    assert tree_hash(earlier) == before
    assert opbench_data.newest_run(str(root)) == str(earlier)
    assert sorted(os.listdir(root)) == sorted(
        [os.path.basename(run), earlier.name])
