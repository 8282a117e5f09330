# SPDX-License-Identifier: GPL-2.0
"""Known answers of a run with the RFC, the resident variant and the
preemption benchmark (tests/data/make-synthetic-run.py --plan walker):
the cross-checks of the preemption round trip (cross_checks.cross_checks),
ops against the RFC as posted (analyse's vs_rfc and slopes_vs_rfc, and
their report section), and the three designs (designs.analyse) read from
opbench_data's analysis and the run's walker-loops files, not a dict
built by hand. Host only.
"""
import os
import re
import subprocess
import sys

import pytest

from conftest import TOP

sys.path.insert(0, os.path.join(TOP, "analysis"))
import opbench_data  # noqa: E402
import opbench_report  # noqa: E402

DATA = os.path.join(TOP, "tests", "data")

# The plan's truth (make-synthetic-run.py's docstring): per operation per
# walk, switch's entry at N >= 1 and at N = 0, preemption's P-gap at 0.
WALK = {"ops": 45.2, "rfc": 60.0, "resident": 6.0}
SWITCH_ENTRY = {"ops": 4650.0, "rfc": 4700.0, "resident": 4600.0}
SWITCH_ZERO = {"baseline": 4456.0, "ops": 4455.0, "rfc": 4458.0,
               "resident": 4455.0}
PREEMPT_ZERO = {"ops": 3000.0, "rfc": 3004.0, "resident": 3000.0}
SCATTERED_EXTRA = 0.5


def switch(fl, n):
    return SWITCH_ZERO[fl] if n == 0 else SWITCH_ENTRY[fl] + 2 * WALK[fl] * n


def preempt(fl, n, extra=0.0):
    return PREEMPT_ZERO[fl] + (WALK[fl] + extra) * n


@pytest.fixture(scope="module")
def walker(tmp_path_factory):
    d = tmp_path_factory.mktemp("walker") / "20261204T000000Z-walker"
    subprocess.run(["/usr/bin/python3",
                    os.path.join(DATA, "make-synthetic-run.py"), str(d),
                    "--plan", "walker"], check=True)
    run = opbench_data.load(str(d))
    return run, opbench_data.analyse(run)


def group(a, bench):
    return next(g for g in a["groups"] if g["bench"] == bench)


def covers(c, want, key="diff", tol=0.0):
    """c's figure is the known answer: its interval holds it and the
    figure is within the interval's width of it."""
    lo, hi = c[key + "_ci"]
    return lo - tol <= want <= hi + tol and abs(c[key] - want) <= \
        max(hi - lo, 2 * tol)


def test_walker_run_is_clean(walker):
    run, a = walker
    assert a["flavours"] == ["baseline", "ops", "resident", "rfc"]
    assert a["boots_per_flavour"] == {"baseline": 3, "ops": 3, "rfc": 3,
                                      "resident": 3}
    assert a["invalid"] == [] and a["dropped"] == []
    assert {g["bench"] for g in a["groups"]} == {
        "syscall", "switch", "preempt", "preempt+scattered"}
    assert group(a, "preempt")["walks_per_loop"] == 1
    assert group(a, "switch")["walks_per_loop"] == 2


def test_cross_checks_known_answers(walker):
    """Preempt's slope per walk equals switch's (both 45.2); the waker
    with operations was not measured; the I-gap does not move with N;
    the walk added to a preemption is 45.2 x N packed and 45.7 x N
    scattered, at the largest N walked with interrupts off (64) and at
    the largest N (2048)."""
    run, a = walker
    cross = {c["kind"]: c for c in a["cross"]}
    r = cross["preempt-vs-switch"]
    assert r["ok"] is True and abs(r["value"] - 1.0) < 1e-3, r
    assert r["tolerance"] == 0.05
    assert abs(r["preempt"]["value"] - 45.2) < 0.01, r
    assert abs(r["switch"]["value"] - 45.2) < 0.01, r
    w = cross["waker-doubling"]
    assert w["value"] is None and w["ok"] is None
    assert w["plan"] == "preempt:waker-ops"
    i = cross["igap-spread"]
    assert i["ok"] is True and i["value"] < 0.01
    # baseline at N = 0, then ops, rfc and resident at five N each.
    assert i["cells"] == 16, i
    walks = {(c["nr_ops"], c["layout"]): c for c in a["cross"]
             if c["kind"] == "walk-stretch"}
    want = {(64, "packed"): 45.2 * 64, (2048, "packed"): 45.2 * 2048,
            (64, "scattered"): 45.7 * 64, (2048, "scattered"): 45.7 * 2048}
    assert set(walks) == set(want)
    for key, c in walks.items():
        lo, hi = c["ci"]
        assert lo - 0.5 <= want[key] <= hi + 0.5, (key, c)
        assert abs(c["value"] - want[key]) < 1.0, (key, c)
        assert c["irqs_off"] == (key[0] == 64)
    # Numbers and verdicts only: the sentences are the renderer's.
    assert not [k for c in a["cross"] for k in ("check", "detail")
                if k in c]


def test_cross_checks_in_the_report(walker):
    run, a = walker
    text = opbench_report.render(a)
    sec = text[text.index("Cross-checks of the preemption round trip"):]
    sec = sec[:sec.index("-" * 20)]
    flat = " ".join(sec.split())
    assert "1.000 (expected 1.00); agrees within 5%" in flat
    assert re.search(r"preempt 45\.2\d\d .* switch 45\.2\d\d", flat)
    assert "not measured in this run (plan default's preempt:waker-ops)" \
        in flat
    assert "I-gap median (a tick, no switch) across N and flavours: (max " \
        "- min) / min:" in flat and "over 16 cells" in flat
    m = re.search(r"at N=64, packed nodes, interrupts off: ([+-][0-9.]+) "
                  r"\[([+-][0-9.]+), ([+-][0-9.]+)\] instructions", flat)
    v, lo, hi = map(float, m.groups())
    assert abs(v - 45.2 * 64) < 1.0 and lo - 0.5 <= 45.2 * 64 <= hi + 0.5


@pytest.mark.parametrize("bench", ["switch", "preempt", "preempt+scattered"])
def test_ops_against_rfc_known_answers(walker, bench):
    """ops minus rfc, N by N, unpaired (other boots): switch -3 at N=0 and
    -50 - 29.6 N above; a preemption -4 - 14.8 N; every one a difference.
    Slopes: ops minus rfc -14.8 per operation per walk, ratio 45.2/60."""
    run, a = walker
    g = group(a, bench)
    extra = SCATTERED_EXTRA if bench == "preempt+scattered" else 0.0
    cost = (switch if bench == "switch" else
            lambda fl, n: preempt(fl, n, extra))
    rows = {c["nr_ops"]: c for c in g["vs_rfc"]}
    ns = [0, 1, 2, 8, 64, 2048] if bench == "switch" else [0, 1, 16, 64, 2048]
    assert sorted(rows) == ns
    for n, c in rows.items():
        want = cost("ops", n) - cost("rfc", n)
        assert covers(c, want, tol=0.5), (n, want, c)
        assert c["verdict"] == "difference", (n, c)
    s = g["slopes_vs_rfc"]
    walks = g["walks_per_loop"]
    assert abs(s["diff"] / walks - (WALK["ops"] - WALK["rfc"])) < 0.01, s
    assert abs(s["ratio"] - (WALK["ops"] + extra) / (WALK["rfc"] + extra)) \
        < 1e-3, s


def test_syscall_no_difference_against_rfc(walker):
    """syscall walks nothing: ops and rfc cost the same at every N."""
    run, a = walker
    g = group(a, "syscall")
    assert g["vs_rfc"] and all(c["verdict"] != "difference"
                               for c in g["vs_rfc"])
    for c in g["vs_rfc"]:
        assert c["diff_ci"][0] <= 0 <= c["diff_ci"][1], c


def test_report_rfc_section(walker):
    """The report's ops-against-RFC table of switch: each row's figure
    and interval, and the slope per operation per walk (divided by
    switch's two walks per loop: -14.80, not -29.60)."""
    run, a = walker
    text = opbench_report.render(a)
    sw = text[text.index("switch: yield round trip"):]
    sw = sw[:sw.index("-" * 20)]
    sec = sw[sw.index("ops against the RFC as posted (rfc), N by N "
                      "(instructions)"):]
    rows = {int(m.group(1)): tuple(float(x) for x in m.group(2, 3, 4))
            for m in re.finditer(r"^ +(\d+) +([+-][0-9.]+)  \[([+-][0-9.]+), "
                                 r"([+-][0-9.]+)\] +[0-9.]+ \*$", sec, re.M)}
    assert sorted(rows) == [0, 1, 2, 8, 64, 2048], sec
    for n, (v, lo, hi) in rows.items():
        want = switch("ops", n) - switch("rfc", n)
        assert lo - 0.5 <= want <= hi + 0.5 and abs(v - want) < 2.5, \
            (n, want, v)
    flat = " ".join(sec.split())
    assert "slope per operation per walk, ops minus rfc: -14.80 " \
        "[-14.80, -14.80] (ratio ops/rfc 0.753): Difference at 95% " \
        "confidence" in flat, flat


def test_designs_from_the_analysis(walker):
    """designs.analyse on opbench_data's analysis of the run: each
    design's slope per walk, the ratios to ops (designs.ANCHOR), the
    stretch a walk adds to a preemption, and the walker-loops files as
    bench-run.sh writes them."""
    run, a = walker
    d = a["designs"]
    assert d["flavours"] == ["ops", "resident", "rfc"]
    slopes = {(s["bench"], s["flavour"]): s for s in d["slopes"]}
    assert set(slopes) == {(b, fl) for b in ("switch", "preempt")
                           for fl in WALK}
    for (b, fl), s in slopes.items():
        assert abs(s["value"] - WALK[fl]) < 0.01, s
        assert s["n_max"] == 2048
    ratios = {(r["bench"], r["flavour"]): r["ratio"] for r in d["ratios"]}
    for b in ("switch", "preempt"):
        assert (b, "ops") not in ratios
        assert abs(ratios[(b, "resident")] - 6.0 / 45.2) < 0.01
        assert abs(ratios[(b, "rfc")] - 60.0 / 45.2) < 0.01
    stretch = {(s["layout"], s["flavour"], s["nr_ops"]): s["diff"]
               for s in d["stretch"]}
    assert len(stretch) == 12
    for (layout, fl, n), v in stretch.items():
        w = WALK[fl] + (SCATTERED_EXTRA if layout == "scattered" else 0)
        assert abs(v - w * n) < 2.0, (layout, fl, n, v)
    assert d["loops"]["ops"] == [{
        "function": "rseq_ops_apply", "head": "0x2", "end": "0x25",
        "insns": 11, "loads": 3, "cond_br": 2, "stac_clac": 2}]
    assert d["loops"]["rfc"][0]["function"] == "rseq_apply_ops_or_report"
    assert d["loops"]["resident"][0]["insns"] == 9
    assert not d["register"] and not d["breakeven"]
