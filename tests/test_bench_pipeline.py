# SPDX-License-Identifier: GPL-2.0
"""make bench, quick profile, end to end: boots, records, analysis, notebook.

Runs microbench/bench-all.sh (what `make bench` runs) with BENCH_PROFILE=quick
into a temporary results root, then checks what a reviewer would open: the
report, the plots, and the notebook executed headless on that run.
"""
import glob
import os
import subprocess

import pytest

from conftest import TOP
from test_analysis import run_notebook


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory, flavours, image):
    if "ops" not in flavours:
        pytest.skip("no ops flavour: kernel-patch/series is missing")
    root = tmp_path_factory.mktemp("results")
    env = dict(os.environ, BENCH_PROFILE="quick", RESULTS_ROOT=str(root))
    r = subprocess.run([os.path.join(TOP, "microbench", "bench-all.sh")],
                       cwd=TOP, env=env, capture_output=True, text=True,
                       timeout=1800)
    runs = glob.glob(str(root / "*-quick"))
    assert r.returncode == 0, r.stderr[-4000:]
    assert len(runs) == 1, r.stderr[-2000:]
    return runs[0], r.stderr


pytestmark = pytest.mark.rig


def test_progress_and_paths_printed(quick_run):
    d, err = quick_run
    for i in range(1, 7):
        assert "[%d/6]" % i in err
    assert "elapsed" in err and "left:" in err
    assert "report: %s/analysis/report.txt" % d in err
    tr = glob.glob(os.path.join(d, "tracing", "*-trace-flame-ops-signal-2048"))
    assert len(tr) == 1, err[-2000:]
    for f in ("flame.svg", "diff.svg", "commands.txt"):
        assert os.path.getsize(os.path.join(tr[0], f)) > 0, f
    lat = glob.glob(os.path.join(d, "tracing", "*-trace-bpf-ops-rseq_ops_lat-"
                                 "switch-2048", "ops", "rseq_ops_lat.bt.out"))
    assert len(lat) == 1
    with open(lat[0]) as f:
        assert "@ns[switch]:" in f.read()


def test_report_of_quick_run(quick_run):
    d, _ = quick_run
    with open(os.path.join(d, "analysis", "report.txt")) as f:
        text = f.read()
    assert max(len(l) for l in text.splitlines()) <= 72
    assert "instructions per loop" in text
    assert "Invalid cells: none" in text
    for bench in ("syscall", "switch", "signal", "migrate"):
        assert "\n%s: " % bench in text
    # Every flavour booted twice: the A/A noise floor exists.
    assert "noise floor unknown" not in text
    assert "ops against baseline, N=0" in text
    for p in ("overhead", "zero-ops", "per-op", "sweep-switch"):
        for ext in ("png", "svg"):
            f = os.path.join(d, "analysis", "plots", "%s.%s" % (p, ext))
            assert os.path.getsize(f) > 1000, f


def test_switch_walk_measured(quick_run):
    """2048 operations cost the switch benchmark; none cost the syscall."""
    import json
    d, _ = quick_run
    with open(os.path.join(d, "analysis", "analysis.json")) as f:
        a = json.load(f)
    g = {x["bench"]: x for x in a["groups"]}
    sw = {r["nr_ops"]: r for r in g["switch"]["vs_zero"]["ops"]}
    assert sw[2048]["verdict"] == "difference" and sw[2048]["diff"] > 0
    sc = {r["nr_ops"]: r for r in g["syscall"]["vs_zero"]["ops"]}
    assert sc[2048]["diff_ci"][0] <= 0.5 * sw[1]["diff"]


def test_notebook_on_quick_run(quick_run, tmp_path):
    d, _ = quick_run
    text, images = run_notebook(d, str(tmp_path / "nb.ipynb"))
    assert os.path.basename(d) in text
    assert len(images) >= 4
