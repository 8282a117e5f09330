# SPDX-License-Identifier: GPL-2.0
"""tracing/: folding, flame graphs and bpftrace checks on canned input; in
the guest, a short perf trace of the ops kernel and the prime-count
validation of the bpftrace scripts.
"""
import importlib.util
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from conftest import TOP

TRACING = os.path.join(TOP, "tracing")
DATA = os.path.join(TOP, "tests", "data")
sys.path.insert(0, TRACING)
import flamegraph  # noqa: E402
import stackcollapse  # noqa: E402

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
    r, out = trace(tmp_path, "flame", "ops", "signal", "2048")
    assert r.returncode == 0, r.stderr[-3000:]
    with open(os.path.join(out, "ops-2048", "perf.folded")) as f:
        folded = f.read()
    walks = [l for l in folded.splitlines() if "rseq_ops_apply_[k]" in l]
    assert walks, folded[:2000]
    # Every walk is on a return to user space: after a system call
    # (exit_to_user_mode_loop) or after an interrupt that came from user
    # space, the timer's that preempted the thread (irqentry_exit, into
    # which the loop is inlined); and 2048 nodes are walked by the slow
    # path, never by the interrupts-off fast path.
    exits = ("exit_to_user_mode_loop_[k]", "irqentry_exit_[k]")
    for l in walks:
        frames_ = l.rsplit(" ", 1)[0].split(";")
        walk = frames_.index("rseq_ops_apply_[k]")
        assert frames_[walk - 1] == "__rseq_handle_slowpath_[k]", l
        assert any(e in frames_[:walk] for e in exits), l
        assert not frames_[0].endswith("_[k]"), l
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
    _, hists = check_trace.parse(os.path.join(out, "rseq_ops_lat",
                                              "rseq_ops_lat.bt.out"))
    with open(os.path.join(out, "rseq_ops_lat", "prime-signals.json")) as f:
        w = json.loads(f.read().strip().splitlines()[-1])
    assert w["signals"] == 1009 and w["resets_checked"] == 1, w
    assert sum(b[2] for b in hists[("ns", "primesig")]) >= w["signals"]
