# SPDX-License-Identifier: GPL-2.0
"""analysis/designs.py: three designs of the walk (ops: v3, v2, rfc)
compared on synthetic cost models with known slopes; its report section
and plot; and the walker-loops files bench-run.sh writes."""
import os
import re
import sys

import numpy as np

from conftest import TOP

sys.path.insert(0, os.path.join(TOP, "analysis"))
import designs  # noqa: E402
import opbench_plots  # noqa: E402
import designs_report  # noqa: E402
import opbench_io  # noqa: E402
import report_core  # noqa: E402
import opbench_stats as st  # noqa: E402
from cross_checks import per_walk  # noqa: E402

NS = [0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048]
# Instructions per operation per walk, and the walks of one loop.
SLOPE = {"ops": 6.0, "v2": 29.0, "rfc": 44.0}
WALKS = {"switch": 2, "signal": 1, "preempt": 1}
BOOTS = 3


def cells(rng, base, slope, walks):
    """{N: {boot: [samples]}}: base + slope x walks x N, a boot shift and
    noise, as icount gives (a few instructions between boots)."""
    out = {}
    for n in NS:
        out[n] = {}
        for b in range(BOOTS):
            shift = (b - 1) * 2.0
            v = base + (slope * walks * n if n else -5) + shift
            out[n][b] = list(v + rng.normal(0, 0.5, 5))
    return out


def synthetic_analysis(tmp_path, with_loops=True):
    rng = np.random.default_rng(19)
    a = {"flavours": ["baseline", "ops", "v2", "rfc"], "groups": [],
         "dir": str(tmp_path), "unit": "instructions", "accel": "icount",
         "irqs_off_max": 64, "list_limit": 2048, "header": {"kernel": {}}}
    for bench, walks in WALKS.items():
        g = {"bench": bench, "op_type": "null", "walks_per_loop": walks,
             "cost": {}, "per_walk": {}, "per_walk_mean": {},
             "vs_reference": [], "vs_zero": {},
             "cells": [], "unsupported": []}
        for fl, slope in SLOPE.items():
            g["cost"][fl] = st.cost_model(cells(rng, 4000.0, slope, walks),
                                          key=(bench, fl))
            # As opbench_data.analyse records it beside the model.
            g["per_walk"][fl] = per_walk(g["cost"][fl], walks)
            g["vs_reference"].append({"flavour": fl, "nr_ops": 0,
                                      "diff": -5.0, "diff_ci": [-7, -3]})
        a["groups"].append(g)
    g = {"bench": "preempt+scattered", "op_type": "null",
         "walks_per_loop": 1, "cost": {}, "per_walk": {}, "vs_reference": [],
         "cells": [],
         "unsupported": [], "vs_zero": {
             fl: [{"nr_ops": n, "diff": SLOPE[fl] * n,
                   "diff_ci": [SLOPE[fl] * n - 1, SLOPE[fl] * n + 1]}
                  for n in (1, 64, 2048)] for fl in SLOPE}}
    a["groups"].append(g)
    reg = {"bench": "register", "op_type": "null", "walks_per_loop": 0,
           "cost": {}, "per_walk": {}, "vs_reference": [], "vs_zero": {}, "cells": [],
           "unsupported": [[fl, 2048] for fl in SLOPE]}
    for fl in SLOPE:
        for n in (0, 1, 64, 1024):
            reg["cells"].append({"flavour": fl, "nr_ops": n,
                                 "value": 900.0 + (2 if fl == "v2" else 0) * n,
                                 "ci": [899.0, 901.0]})
    a["groups"].append(reg)
    if with_loops:
        d = tmp_path / "walker-loops"
        d.mkdir()
        (d / "ops.txt").write_text(
            "function        loop                 insns  loads  cond-br  "
            "stac/clac\n"
            "rseq_ops_apply  +0x60..+0x9c            14      4        3  "
            "        0\n")
    # As opbench_io.load reads them, and analyse passes them on.
    a["walker_loops"] = opbench_io.walker_loops(str(tmp_path))
    return a


def test_slopes_and_ratio_recovered(tmp_path):
    """Each design's slope per walk comes back within its interval, and
    the ratio RFC / v3 is about 44 / 6."""
    d = designs.analyse(synthetic_analysis(tmp_path))
    assert d["flavours"] == ["ops", "v2", "rfc"]
    for s in d["slopes"]:
        lo, hi = s["ci"]
        assert lo - 0.05 <= SLOPE[s["flavour"]] <= hi + 0.05, s
        assert s["n_max"] == 2048
    r = next(r for r in d["ratios"] if r["bench"] == "switch"
             and r["flavour"] == "rfc")
    assert abs(r["ratio"] - 44.0 / 6.0) < 0.05, r
    assert r["ratio_ci"][0] <= 44.0 / 6.0 <= r["ratio_ci"][1] + 1e-3
    assert {(s["layout"], s["nr_ops"]) for s in d["stretch"]} == {
        ("scattered", 64), ("scattered", 2048)}
    assert d["loops"]["ops"][0]["insns"] == 14
    full = {r["flavour"]: r["full"] for r in d["register"]}
    assert full["ops"] == [2048]


def test_report_section_and_plot(tmp_path):
    """The section says the unit, the target's verdict from the interval,
    and fits 72 columns; the plot is written."""
    a = synthetic_analysis(tmp_path)
    d = designs.analyse(a)
    lines = designs_report.designs_lines(d, a)
    text = "\n".join(lines)
    assert "Instructions under QEMU icount, not time." in " ".join(lines)
    assert "Met (lowest bound" in " ".join(text.split())
    # The verdict is the analysis', the section only says it.
    assert d["target_verdict"]["assessed"] and d["target_verdict"]["met"]
    assert all(len(ln) <= report_core.WIDTH for ln in lines), text
    (tmp_path / "plots").mkdir()
    paths = opbench_plots.design_slopes(d, a, str(tmp_path / "plots"))
    assert any(p.endswith("design-slopes.png") for p in paths)
    assert all(os.path.getsize(p) > 1000 for p in paths)


def test_target_not_met_is_said(tmp_path):
    """A v3 slope only twice as cheap as the RFC's: NOT met."""
    old = SLOPE["ops"]
    SLOPE["ops"] = 22.0
    try:
        a = synthetic_analysis(tmp_path, with_loops=False)
    finally:
        SLOPE["ops"] = old
    d = designs.analyse(a)
    text = " ".join(" ".join(designs_report.designs_lines(d, a)).split())
    assert "NOT met" in text
    assert d["target_verdict"]["met"] is False


def test_needs_the_anchor_flavour(tmp_path):
    a = synthetic_analysis(tmp_path)
    a["flavours"] = ["baseline", "v2", "rfc"]
    assert designs.analyse(a) is None
    assert designs.ANCHOR == "ops"


def test_target_not_assessed_without_an_rfc_slope(tmp_path):
    """No RFC in the run: the target is not assessed, and said so."""
    a = synthetic_analysis(tmp_path, with_loops=False)
    a["flavours"] = ["baseline", "ops", "v2"]
    d = designs.analyse(a)
    text = " ".join(" ".join(designs_report.designs_lines(d, a)).split())
    assert "Not assessed: no RFC slope in this run." in text
    assert "Met" not in text
    assert d["target_verdict"] == {"assessed": False, "why": "no-rfc"}


def test_breakeven_in_walks(tmp_path):
    """What v3's registration costs more, over what each walk of one
    operation saves: rows against v2 and rfc, in walks."""
    a = synthetic_analysis(tmp_path, with_loops=False)
    for c in next(g for g in a["groups"] if g["bench"] == "register")["cells"]:
        if c["flavour"] == "ops":
            c["value"] += 460.0
    d = designs.analyse(a)
    rows = {(r["flavour"], r["nr_ops"]): r for r in d["breakeven"]}
    # v2 saves 29 - 6 = 23 a walk; v3 costs 460 - 2 x 1024 more at
    # N = 1024 than v2 (negative: never behind) and 460 at N = 0.
    assert abs(rows[("v2", 0)]["walks"] - 460.0 / 23.0) < 0.05
    assert abs(rows[("rfc", 0)]["walks"] - 460.0 / 38.0) < 0.05
    text = " ".join(" ".join(designs_report.designs_lines(d, a)).split())
    assert "When each design wins" in text
    assert rows[("v2", 1024)]["walks"] is None
    assert "vs v2 N=1024 -1588.0 a round trip; ops registers for less: " \
        "it wins from the first walk" in text
    # Walks that do not differ save nothing: no number of walks (it was
    # 2346876 walks of a saving of 0.0002 once, over a line's width).
    for g in a["groups"]:
        if g["bench"] == "switch":
            g["cost"]["v2"] = g["cost"]["ops"]
            g["per_walk"]["v2"] = g["per_walk"]["ops"]
    d = designs.analyse(a)
    row = next(r for r in d["breakeven"] if r["flavour"] == "v2"
               and r["nr_ops"] == 0)
    assert row["walks"] is None
    lines = designs_report.designs_lines(d, a)
    assert all(len(ln) <= report_core.WIDTH for ln in lines)
    assert "not resolved from 0: no number of walks pays it back" in \
        " ".join(" ".join(lines).split())


def test_designs_of_different_limits_are_fitted_on_the_n_they_share():
    """A design whose limit is lower (min stops at 64) is compared with
    ops over the N both measured: a step in ops' cost above 64 (its chunks,
    which min never runs) must not make min look cheaper per operation.
    A group whose flavours measured the same N gets no second fit."""
    import opbench_data
    rng = np.random.default_rng(3)
    gkey = ("switch", "null", "own")
    cells = {}
    for fl, top in (("ops", 2048), ("min", 64)):
        for n in NS:
            if n > top:
                continue
            chunks = 40.0 * (n // 64) if fl == "ops" and n > 64 else 0.0
            cells[gkey + (fl, n)] = {
                b: list(4000.0 + 5.0 * 2 * n + chunks + rng.normal(0, 0.3, 5))
                for b in range(BOOTS)}
    g = {"walks_per_loop": 2}
    opbench_data.common_models(g, cells, gkey, ["baseline", "ops", "min"],
                               {"extra": {}}, {})
    assert g["common_ns"] == [1, 2, 4, 8, 16, 32, 64]
    for fl in ("ops", "min"):
        assert abs(g["per_walk_common"][fl]["value"] - 5.0) < 0.05, fl
    # Over its own range ops' slope takes in the chunks.
    wide = st.cost_model({n: cells[gkey + ("ops", n)] for n in NS},
                         key=("ops",))
    assert per_walk(wide, 2)["value"] > 5.2
    same = {"walks_per_loop": 2}
    opbench_data.common_models(same, {k: v for k, v in cells.items()
                                      if k[3] == "min"} |
                               {k[:3] + ("ops",) + k[4:]: v
                                for k, v in cells.items() if k[3] == "min"},
                               gkey, ["ops", "min"], {"extra": {}}, {})
    assert "common_ns" not in same


def test_one_operation_beside_the_slope(tmp_path):
    """Every designs table says what one operation costs against none, per
    walk (N = 1 minus N = 0, from the run's vs_zero rows): the fixed part
    a one-operation user pays, beside the slope."""
    a = synthetic_analysis(tmp_path)
    for g in a["groups"]:
        if g["bench"] in WALKS:
            w = g["walks_per_loop"]
            g["vs_zero"] = {fl: [{"nr_ops": 1, "diff": (50.0 + s) * w,
                                  "diff_ci": [(49.0 + s) * w, (51.0 + s) * w]}]
                            for fl, s in SLOPE.items()}
    d = designs.analyse(a)
    one = {(s["bench"], s["flavour"]): s["n1"] for s in d["slopes"]}
    assert one[("switch", "ops")]["diff_per_walk"] == 56.0
    assert one[("switch", "rfc")]["diff_per_walk_ci"] == [93.0, 95.0]
    text = "\n".join(designs_report.designs_lines(d, a))
    assert "One operation against none" in text
    assert "  signal   v2             +79.00  [+78.00, +80.00]" in text, text


def test_what_each_design_adds_outside_the_walk(tmp_path):
    """The feature size each design's boots saw and what its kernel adds
    (kernel_size.py's counts), the reference first; a run with neither
    has no such table."""
    a = synthetic_analysis(tmp_path)
    d = designs.analyse(a)
    assert d["abi"] == []
    assert "Outside the walk" not in "\n".join(
        designs_report.designs_lines(d, a))
    lines = {"kernel": {"added": 1086, "removed": 27, "files": 9},
             "uapi": {"added": 63, "removed": 0, "files": 2}}
    a["rseq_feature_size"] = {"baseline": [33], "ops": [56], "v2": [56]}
    a["kernel_size"] = {"ops": {"bloat": {"functions": {"net": 6466},
                                          "data": {"net": 85}},
                                "lines": lines}}
    a["reference"] = "baseline"
    d = designs.analyse(a)
    assert [r["flavour"] for r in d["abi"]] == ["baseline", "ops", "v2", "rfc"]
    text = designs_report.designs_lines(d, a)
    assert all(len(ln) <= report_core.WIDTH for ln in text)
    head = next(i for i, ln in enumerate(text) if "feature" in ln)
    end = text.index("", head)
    rows = {ln.split()[0]: ln.split() for ln in text[head + 1:end]}
    assert rows["baseline"][1:] == ["33", "-", "-", "-", "-", "-"]
    assert rows["ops"][1:] == ["56", "+6466", "+85", "+1086/-27", "+63/-0", "-"]
    assert rows["rfc"][1] == "n/a"


def test_kernel_size_reads_bloat_o_meter_and_numstat():
    """analysis/kernel_size.py: the three blocks of bloat-o-meter -c, and
    git diff --numstat by area; an output without the three blocks is an
    error, not zeros."""
    import kernel_size
    out = kernel_size.parse_bloat(
        "add/remove: 15/0 grow/shrink: 11/2 up/down: 5070/-7 (5063)\n"
        "Function                                     old     new   delta\n"
        "rseq_ops_prctl                                 -    2063   +2063\n"
        "Total: Before=6871460, After=6876523, chg +0.07%\n"
        "add/remove: 0/0 grow/shrink: 2/0 up/down: 82/0 (82)\n"
        "Data                                         old     new   delta\n"
        "Total: Before=3245228, After=3245310, chg +0.00%\n"
        "add/remove: 0/0 grow/shrink: 0/0 up/down: 0/0 (0)\n"
        "RO Data                                      old     new   delta\n"
        "Total: Before=7980, After=7980, chg +0.00%\n")
    assert out["functions"] == {"added": 15, "removed": 0, "grown": 11,
                                "shrunk": 2, "up": 5070, "down": -7,
                                "net": 5063}
    assert out["data"]["net"] == 82 and out["rodata"]["net"] == 0
    try:
        kernel_size.parse_bloat("add/remove: 1/0 grow/shrink: 0/0 "
                                "up/down: 5/0 (5)\nFunction  old new delta\n")
        assert False, "accepted a partial output"
    except ValueError as e:
        assert "three categories" in str(e)
    n = kernel_size.parse_numstat(
        "10\t2\tkernel/rseq.c\n5\t0\tinclude/uapi/linux/rseq.h\n"
        "100\t0\tDocumentation/userspace-api/rseq.rst\n"
        "-\t-\ttools/testing/selftests/rseq/blob\n7\t1\tinclude/linux/rseq.h\n")
    assert n["kernel"] == {"added": 17, "removed": 3, "files": 2}
    assert n["uapi"]["added"] == 5 and n["docs"]["added"] == 100
    assert n["selftests"] == {"added": 0, "removed": 0, "files": 1}


def test_a_difference_at_n0_is_explained_or_flagged(tmp_path):
    """N = 0 against the unpatched kernel: an interval that excludes 0 is
    flagged (!) unless the flavour's declaration explains it
    (N0_EXPLAINED), and then the reason is printed; one that takes in 0
    is neither."""
    a = synthetic_analysis(tmp_path)
    for g in a["groups"]:
        for c in g["vs_reference"]:
            if g["bench"] == "signal":
                c["diff"], c["diff_ci"] = 0.5, [-1.0, 2.0]
    a["flavour_decls"] = {
        "ops": {"design": 1, "n0_explained":
                "switch: a load moved by the layout (a profile); "
                "preempt: the same"},
        "v2": {"design": 2}, "rfc": {"design": 3}}
    d = designs.analyse(a)
    z = {(x["bench"], x["flavour"]): x for x in d["zero"]}
    assert z[("switch", "ops")]["explained"].startswith("a load moved")
    assert not z[("signal", "ops")]["excludes_0"]
    text = designs_report.designs_lines(d, a)
    joined = "\n".join(text)
    assert "  switch   ops" in joined
    row = {tuple(ln.split()[:2]): ln for ln in text
           if ln.startswith("  ") and "[" in ln and ln.split()[0] in WALKS}
    assert row[("switch", "ops")].endswith("(*)")
    assert row[("switch", "v2")].endswith("(!)")
    assert not row[("signal", "v2")].endswith(")")
    assert "(*) switch ops: a load moved by the layout" in joined
    assert "no explanation on record" in " ".join(joined.split())
    assert all(len(ln) <= report_core.WIDTH for ln in text)


def test_an_exact_figure_is_not_printed_as_an_interval(tmp_path):
    """Under icount every boot may give the same figure: the section says
    "same in all boots", never a zero-width interval."""
    a = synthetic_analysis(tmp_path)
    for g in a["groups"]:
        for c in g["vs_reference"]:
            c["diff"], c["diff_ci"] = 0.0, [0.0, 0.0]
    text = "\n".join(designs_report.designs_lines(designs.analyse(a), a))
    assert "[+0.00, +0.00]" not in text
    assert re.search(r"^  signal   ops +\+0\.00  \[same in all boots\]$",
                     text, re.M), text
