# SPDX-License-Identifier: GPL-2.0
"""The latency step: how long a walk holds interrupts or preemption off,
and the kernel's own longest stretches while a list is walked, as
tracing/latency.sh records them (host tests on records and a walk trace of
the kernel's own format; the boots themselves run in make bench
PLAN=walker and make latency, on their own KCONFIG=latency kernels)."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import TOP

sys.path.insert(0, os.path.join(TOP, "analysis"))
import latency  # noqa: E402
import opbench_data  # noqa: E402
import opbench_io  # noqa: E402
import opbench_report  # noqa: E402
from opbench_io import ResultsError, walk_durations  # noqa: E402

NS = (0, 64, 65, 2048)


def records(flavour, us):
    """One flavour's records as guest-latency.sh writes them: N = 0 once,
    under the first layout; us(tracer, layout, n) the tracer's maximum."""
    out = []
    for tr in ("irqsoff", "preemptoff"):
        for lay in ("packed", "scattered"):
            for n in NS:
                if n == 0 and lay == "scattered":
                    continue
                out.append({"kind": "latency", "flavour": flavour,
                            "tracer": tr, "layout": lay, "nr_ops": n,
                            "loops": 200, "max_us": us(tr, lay, n),
                            "started_at": "start_%s" % tr,
                            "ended_at": "end_%s" % tr,
                            "opbench_status": 0})
    return out


def walk_records(flavour, tmp):
    """The walk records and their function_graph traces, in tmp: up to 64
    nodes the walk runs with interrupts off, beyond with preemption off;
    30 instructions a node, twice that one node per page."""
    out = []
    for lay in ("packed", "scattered"):
        for n in NS[1:]:
            f = "walk-%s-%d.txt" % (lay, n)
            ns_ = 500 + n * 30 * (2 if lay == "scattered" else 1)
            flags = "d..1." if n <= 64 else "...2."
            lines = [" 0)  %s | %s %8.3f us   |  rseq_ops_apply();" % (
                flags, "+" if ns_ > 10000 else " ", (ns_ + k) / 1000.0)
                for k in range(5)]
            (tmp / f).write_text("# tracer: function_graph\n" +
                                 "\n".join(lines) + "\n")
            out.append({"kind": "latency", "flavour": flavour,
                        "tracer": "walk", "layout": lay, "nr_ops": n,
                        "loops": 200, "trace": f, "opbench_status": 0})
    return out


def test_walks_read_from_the_kernels_format():
    """tests/data/latency/walk-fgraph.txt is an excerpt of the kernel's
    own output (function_graph on rseq_ops_apply, latency format) in an
    ops guest, lines of two traces put together: its header, a
    fast-path walk of 64 nodes with interrupts off, a context-switch
    banner, slow-path walks of 2048 with preemption off."""
    w = walk_durations(os.path.join(TOP, "tests", "data", "latency",
                                    "walk-fgraph.txt"))
    assert w == [[2518.0, "irqs"], [60049.0, "preempt"],
                 [60050.0, "preempt"], [60049.0, "preempt"],
                 [67440.0, "preempt"]]


def test_walk_line_not_understood_is_an_error(tmp_path):
    f = tmp_path / "walk-packed-64.txt"
    f.write_text(" 0)  d..1. |  2,518 us  |  rseq_ops_apply();\n")
    with pytest.raises(ResultsError, match="not understood"):
        walk_durations(str(f))
    with pytest.raises(ResultsError, match="missing"):
        walk_durations(str(tmp_path / "walk-packed-65.txt"))
    # The ring buffer overwrote entries: the longest walk may be gone.
    real = open(os.path.join(TOP, "tests", "data", "latency",
                             "walk-fgraph.txt")).read()
    assert "#210/210," in real
    f.write_text(real.replace("#210/210,", "#210/4096,"))
    with pytest.raises(ResultsError, match="kept 210 of 4096"):
        walk_durations(str(f))


def test_walk_rows_longest_in_each_context(tmp_path):
    """The walk rows: the longest walk with interrupts off and with only
    preemption off, in instructions under icount (function_graph's
    nanoseconds), microseconds in time."""
    d = tmp_path / "ops"
    d.mkdir()
    (d / "latency.json").write_text("".join(
        json.dumps(r) + "\n" for r in walk_records("ops", d)))
    (d / "vm.json").write_text(json.dumps({"accel": "icount"}))
    recs = opbench_io.latency_records(str(tmp_path))
    lat = latency.analyse(recs, None)
    rows = {(r["tracer"], r["layout"]): r for r in lat["rows"]}
    irqs, pre = rows[("walk irqs", "scattered")], rows[("walk preempt",
                                                         "scattered")]
    # 5 walks, the longest 4 instructions over the first.
    assert irqs["values"] == {64: 500 + 64 * 60 + 4}
    assert pre["values"] == {65: 500 + 65 * 60 + 4, 2048: 500 + 2048 * 60 + 4}
    assert pre["walks"] == {64: 0, 65: 5, 2048: 5}
    assert irqs["walks"] == {64: 5, 65: 0, 2048: 0}
    assert pre["median"][2048] == 500 + 2048 * 60 + 2
    assert irqs["resolution"] == 1
    # The same walks in time: microseconds, to the nanosecond.
    (d / "vm.json").write_text(json.dumps({"accel": "kvm"}))
    lat = latency.analyse(opbench_io.latency_records(str(tmp_path)), None)
    pre = next(r for r in lat["rows"] if r["tracer"] == "walk preempt"
               and r["layout"] == "packed")
    assert lat["unit"] == "us" and pre["resolution"] == 0.001
    assert pre["values"][2048] == pytest.approx((500 + 2048 * 30 + 4) / 1e3)


def walk(tr, lay, n):
    # Interrupts off up to 64 nodes, preemption off beyond: 30 ns a node.
    off = n if (tr == "irqsoff") == (n <= 64) else 0
    return 3 + (off * 30 * (2 if lay == "scattered" else 1)) // 1000


def test_icount_microseconds_are_thousands_of_instructions():
    lat = latency.analyse(records("ops", walk), "icount")
    assert lat["unit"] == "instructions" and lat["resolution"] == 1000
    assert lat["ns"] == list(NS)
    rows = {(r["tracer"], r["layout"]): r for r in lat["rows"]}
    assert set(rows) == {(t, lay) for t in ("irqsoff", "preemptoff")
                         for lay in ("packed", "scattered")}
    pre = rows[("preemptoff", "scattered")]["values"]
    assert pre[2048] == walk("preemptoff", "scattered", 2048) * 1000
    # N = 0 measured once (packed) and shown in both layouts.
    assert pre[0] == rows[("preemptoff", "packed")]["values"][0] == 3000
    assert rows[("irqsoff", "packed")]["where"][2048] == \
        ["start_irqsoff", "end_irqsoff"]


def test_time_stays_microseconds():
    lat = latency.analyse(records("ops", walk), "kvm")
    assert lat["unit"] == "us"
    assert lat["rows"][0]["values"][0] == 3


def test_failed_opbench_is_an_error():
    recs = records("ops", walk)
    recs[3]["opbench_status"] = 2
    with pytest.raises(ResultsError, match="opbench failed"):
        latency.analyse(recs, "icount")


def test_report_section_and_table(tmp_path):
    """A run with latency/<flavour>/latency.json gets the table in its
    report (within 72 columns), and make latency's table says the same."""
    run = tmp_path / "run"
    shutil.copytree(os.path.join(TOP, "tests", "data", "quick-run"), run)
    for fl in ("ops", "resident"):
        d = run / "latency" / fl
        d.mkdir(parents=True)
        (d / "latency.json").write_text("".join(
            json.dumps(r) + "\n" for r in records(fl, walk) +
            walk_records(fl, d)))
        (d / "vm.json").write_text(json.dumps({"accel": "icount"}))
    a = opbench_data.analyse(opbench_data.load(str(run)))
    text = opbench_report.render(a)
    sec = text[text.index("How long a walk"):]
    assert "resolution 1000 instructions" in " ".join(sec.split())
    lines = sec.splitlines()
    assert all(len(ln) <= 72 for ln in lines), sec
    ops_pre = next(ln for ln in lines if ln.startswith(
        "ops       preemptoff   scattered"))
    assert ops_pre.split()[-1] == "%d" % (walk("preemptoff", "scattered",
                                               2048) * 1000)
    ops_walk = next(ln for ln in lines if ln.startswith(
        "ops       walk preempt scattered"))
    # N = 0 has no walk, 64 walks with interrupts off.
    assert ops_walk.split()[-4:] == ["-", "-", "%d" % (500 + 65 * 60 + 4),
                                     "%d" % (500 + 2048 * 60 + 4)], ops_walk
    assert "ops walk preempt scattered N=2048: 5 walks, median %d" % (
        500 + 2048 * 60 + 2) in sec
    r = subprocess.run(["/usr/bin/python3",
                        os.path.join(TOP, "analysis", "latency_table.py"),
                        str(run / "latency")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert ops_pre in r.stdout


def test_bad_walk_trace_stays_in_its_section(tmp_path):
    """A walk trace missing, or holding no walk at N > 0: the latency
    section says why; the run's analysis and report go on."""
    run = tmp_path / "run"
    shutil.copytree(os.path.join(TOP, "tests", "data", "quick-run"), run)
    d = run / "latency" / "ops"
    d.mkdir(parents=True)
    recs = records("ops", walk) + walk_records("ops", d)
    (d / "latency.json").write_text("".join(json.dumps(r) + "\n"
                                            for r in recs))
    (d / "vm.json").write_text(json.dumps({"accel": "icount"}))
    (d / "walk-scattered-65.txt").unlink()
    a = opbench_data.analyse(opbench_data.load(str(run)))
    assert "walk-scattered-65.txt: missing" in a["latency"]["error"]
    text = opbench_report.render(a)
    sec = " ".join(text[text.index("How long a walk"):].split())
    assert "Not shown: latency:" in sec and "not affected" in sec
    assert a["groups"] and "switch" in text
    # A trace without a single walk (the filter never fired).
    (d / "walk-scattered-65.txt").write_text("# tracer: function_graph\n")
    a = opbench_data.analyse(opbench_data.load(str(run)))
    assert "no walk in walk-scattered-65.txt" in a["latency"]["error"]


@pytest.mark.parametrize("env, msg", [
    ({"NS": "0 x"}, "NS='0 x'"),
    ({"NS": "4096"}, "NS='4096'"),
    ({"LAYOUTS": "sparse"}, "LAYOUTS='sparse'"),
    ({"TRACERS": "wakeup"}, "TRACERS='wakeup'"),
    ({"SMP": "0"}, "SMP='0'"),
    ({"LATENCY_LOOPS": "many"}, "LATENCY_LOOPS='many'"),
])
def test_bad_input_refused_before_any_boot(tmp_path, env, msg):
    r = subprocess.run([os.path.join(TOP, "tracing", "latency.sh"),
                        str(tmp_path / "out"), "ops"],
                       env=dict(os.environ, ACCEL="icount", **env),
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and msg in r.stderr, r.stderr
    assert not (tmp_path / "out").exists()


def test_accelerator_and_clock_from_the_latency_boots():
    """The unit comes from the latency boots' own records: their vm.json
    (not the main run's), and under icount opbench's clock record must
    say a tick is an instruction."""
    recs = [dict(r, accel="icount", ticks_per_insn=[1.0])
            for r in records("ops", walk)]
    assert latency.analyse(recs, "kvm")["unit"] == "instructions"
    bad = [dict(r, ticks_per_insn=[0.37]) for r in recs]
    with pytest.raises(ResultsError, match="not 1"):
        latency.analyse(bad, None)
    mixed = recs[:3] + [dict(r, accel="tcg") for r in recs[3:]]
    with pytest.raises(ResultsError, match="different accelerators"):
        latency.analyse(mixed, None)


def test_unreadable_maximum_left_out():
    recs = records("ops", walk)
    recs[1]["max_us"] = None
    lat = latency.analyse(recs, "icount")
    row = next(r for r in lat["rows"] if r["tracer"] == recs[1]["tracer"]
               and r["layout"] == recs[1]["layout"])
    assert recs[1]["nr_ops"] not in row["values"]


def test_walk_in_task_context_is_its_own_row(tmp_path):
    """A walk with neither interrupts nor preemption off (depth 0 in the
    flags: v3's slow path) is neither an irqs-off nor a preempt-off
    stretch: its own context, "preemptible"."""
    f = tmp_path / "walk-packed-2048.txt"
    f.write_text("# tracer: function_graph\n"
                 " 0)  d..1. |   2.518 us    |  rseq_ops_apply();\n"
                 " 0)  ...1. |  60.049 us    |  rseq_ops_apply();\n"
                 " 0)  ..... | ! 160.500 us  |  rseq_ops_apply();\n")
    assert walk_durations(str(f)) == [[2518.0, "irqs"],
                                      [60049.0, "preempt"],
                                      [160500.0, "preemptible"]]
